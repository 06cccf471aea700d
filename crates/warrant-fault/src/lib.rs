//! Fault points. With the `enabled` feature, `WARRANT_FAULT=POINT[:N]` aborts the process the
//! N-th time (default the first) it reaches the named point, as a crash would: no destructor
//! runs, nothing is flushed. Without the feature, [`hit`] does nothing.
//!
//! The points: `after-intent` (a call's intent is durable, the provider not yet called),
//! `after-invoke` (the provider answered, its result not yet appended), `after-result` (the
//! batch holding a result and its carried values was appended), `mid-append` (inside a store
//! transaction, before it commits), `approval-consumed` (an approval and the intent it let
//! through are durable; the provider not yet called), `after-idempotency-key` (a server kept
//! a request's `Idempotency-Key` with the run id it chose; the run not yet started).

/// Marks that the process reached `point`.
#[inline]
pub fn hit(point: &'static str) {
    #[cfg(feature = "enabled")]
    armed::hit(point);
    #[cfg(not(feature = "enabled"))]
    let _ = point;
}

#[cfg(feature = "enabled")]
mod armed {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Armed {
        point: String,
        nth: u64,
        seen: AtomicU64,
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "warrant-fault owns `WARRANT_FAULT`, the variable that arms a fault point"
    )]
    fn armed() -> Option<&'static Armed> {
        static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
        ARMED
            .get_or_init(|| {
                let spec = std::env::var("WARRANT_FAULT").ok()?;
                let (point, nth) = match spec.split_once(':') {
                    Some((p, n)) => (p.to_owned(), n.parse().ok()?),
                    None => (spec, 1),
                };
                Some(Armed {
                    point,
                    nth,
                    seen: AtomicU64::new(0),
                })
            })
            .as_ref()
    }

    pub(super) fn hit(point: &'static str) {
        if let Some(a) = armed()
            && a.point == point
            && a.seen.fetch_add(1, Ordering::SeqCst) + 1 == a.nth
        {
            std::process::abort();
        }
    }
}

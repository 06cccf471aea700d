//! Fault points. With the `enabled` feature, `WARRANT_FAULT=POINT[:N]` aborts the process the
//! N-th time (default the first) it reaches the named point, as a crash would: no destructor
//! runs, nothing is flushed. Without the feature, [`hit`] does nothing.
//!
//! The points are [`FaultPoint`]'s; `docs/ARCHITECTURE.md` lists each with where the process
//! stops (a test checks that list against [`FaultPoint::ALL`]).

/// A named point where a crash test may stop the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// A call's intent is durable; the provider has not been called.
    AfterIntent,
    /// An approval and the intent it let through are durable; the provider has not been
    /// called.
    ApprovalConsumed,
    /// The provider answered (or failed); nothing of its answer is appended.
    AfterInvoke,
    /// The batch holding a call's result and the values carried from it was appended.
    AfterResult,
    /// Inside a store's transaction, before it commits.
    MidAppend,
    /// A delegating step's `child_spawned` events are durable; no child's log has begun.
    AfterSpawn,
    /// The children driven have ended or wait; the parent has recorded nothing of their ends.
    BeforeJoin,
    /// A server kept a request's `Idempotency-Key` with the run id it chose; the run has not
    /// started.
    AfterIdempotencyKey,
    /// A scheduler claimed a tick with the run id it chose; the run has not started.
    AfterTickClaim,
}

impl FaultPoint {
    /// Every point.
    pub const ALL: [FaultPoint; 9] = [
        FaultPoint::AfterIntent,
        FaultPoint::ApprovalConsumed,
        FaultPoint::AfterInvoke,
        FaultPoint::AfterResult,
        FaultPoint::MidAppend,
        FaultPoint::AfterSpawn,
        FaultPoint::BeforeJoin,
        FaultPoint::AfterIdempotencyKey,
        FaultPoint::AfterTickClaim,
    ];

    /// Its name, as `WARRANT_FAULT` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            FaultPoint::AfterIntent => "after-intent",
            FaultPoint::ApprovalConsumed => "approval-consumed",
            FaultPoint::AfterInvoke => "after-invoke",
            FaultPoint::AfterResult => "after-result",
            FaultPoint::MidAppend => "mid-append",
            FaultPoint::AfterSpawn => "after-spawn",
            FaultPoint::BeforeJoin => "before-join",
            FaultPoint::AfterIdempotencyKey => "after-idempotency-key",
            FaultPoint::AfterTickClaim => "after-tick-claim",
        }
    }

    /// The point named `name`, if there is one.
    pub fn named(name: &str) -> Option<FaultPoint> {
        FaultPoint::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Marks that the process reached `point`.
#[inline]
pub fn hit(point: FaultPoint) {
    #[cfg(feature = "enabled")]
    armed::hit(point);
    #[cfg(not(feature = "enabled"))]
    let _ = point;
}

#[cfg(feature = "enabled")]
mod armed {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::FaultPoint;

    struct Armed {
        point: FaultPoint,
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
                    Some((p, n)) => (p, n.parse().ok()?),
                    None => (spec.as_str(), 1),
                };
                Some(Armed {
                    point: FaultPoint::named(point)?,
                    nth,
                    seen: AtomicU64::new(0),
                })
            })
            .as_ref()
    }

    pub(super) fn hit(point: FaultPoint) {
        if let Some(a) = armed()
            && a.point == point
            && a.seen.fetch_add(1, Ordering::SeqCst) + 1 == a.nth
        {
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FaultPoint;

    #[test]
    fn every_point_is_found_by_its_name() {
        for p in FaultPoint::ALL {
            assert_eq!(FaultPoint::named(p.name()), Some(p));
        }
        assert_eq!(FaultPoint::named("after-lunch"), None);
    }
}

//! Who drives a run: the holder names a run's lease carries, and whether that holder is still
//! alive when it is a process on this machine.
//!
//! A lease lapses when its holder has not been heard from for `LEASE_TTL_MS`; a holder that was
//! a process on this machine and no longer exists is known to be gone at once, so a run whose
//! process was killed is re-entered without waiting for its lease to lapse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use warrant_core::ids::RunId;
use warrant_core::ports::{Clock, Driver, EventStore, LEASE_TTL_MS};
use warrant_core::status::RunStatus;

/// Renews the leases of runs that wait on something slow (a model, a provider, a gateway
/// session's next request, their children) — all of them together, one write per store every
/// `LEASE_TTL_MS / 3`, from one task that runs only while a lease is kept. A waiting run sets no
/// timer of its own: ten thousand idle runs cost one wake-up a period, not ten thousand. Every
/// engine has one; engines given the same one ([`Engine::with_lease_keeper`](crate::Engine::with_lease_keeper))
/// renew together, as a process's front door does for all the runs it drives.
#[derive(Clone, Default)]
pub struct LeaseKeeper(Arc<Mutex<Kept>>);

#[derive(Default)]
struct Kept {
    /// The leases kept, by a token each keeping hands out.
    leases: HashMap<u64, Lease>,
    next: u64,
    /// Whether the renewing task runs: it stops once nothing is kept, or with its runtime.
    renewing: Option<tokio::task::JoinHandle<()>>,
}

/// A run's lease, its driver, and the store and clock it is renewed in and by.
struct Lease {
    run: RunId,
    driver: Driver,
    store: Arc<dyn EventStore>,
    clock: Arc<dyn Clock>,
}

/// One store's renewals: a write.
type Renewal = (Arc<dyn EventStore>, Vec<(RunId, Driver)>);

/// A lease kept while this lives.
pub(crate) struct Keeping {
    keeper: LeaseKeeper,
    token: u64,
}

impl LeaseKeeper {
    /// Keeps `driver`'s lease on `run` in `store` renewed until the answer is dropped.
    pub(crate) fn keep(
        &self,
        run: &RunId,
        driver: &Driver,
        store: &Arc<dyn EventStore>,
        clock: &Arc<dyn Clock>,
    ) -> Keeping {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let token = kept.next;
        kept.next = kept.next.wrapping_add(1);
        kept.leases.insert(
            token,
            Lease {
                run: run.clone(),
                driver: driver.clone(),
                store: store.clone(),
                clock: clock.clone(),
            },
        );
        // A task that stopped (nothing was kept) or whose runtime ended is started again.
        if kept.renewing.as_ref().is_none_or(|t| t.is_finished()) {
            #[expect(
                clippy::disallowed_methods,
                reason = "the keeper owns its renewing task, which ends when nothing is kept"
            )]
            let task = tokio::spawn(self.clone().renew());
            kept.renewing = Some(task);
        }
        Keeping {
            keeper: self.clone(),
            token,
        }
    }

    /// Every period, renews every lease kept, in one write per store; ends once none is.
    async fn renew(self) {
        loop {
            tokio::time::sleep(Duration::from_millis(LEASE_TTL_MS / 3)).await;
            let mut writes: Vec<Renewal> = Vec::new();
            {
                let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.leases.is_empty() {
                    kept.renewing = None;
                    return;
                }
                for lease in kept.leases.values() {
                    let mut driver = lease.driver.clone();
                    driver.now_ms = lease.clock.now_ms();
                    let same = |(s, _): &&mut Renewal| {
                        std::ptr::addr_eq(Arc::as_ptr(s), Arc::as_ptr(&lease.store))
                    };
                    match writes.iter_mut().find(same) {
                        Some((_, leases)) => leases.push((lease.run.clone(), driver)),
                        None => {
                            writes.push((lease.store.clone(), vec![(lease.run.clone(), driver)]))
                        }
                    }
                }
            }
            for (store, leases) in writes {
                // A failed renewal only lets the leases lapse sooner; the runs go on.
                let _ = store.heartbeat(leases).await;
            }
        }
    }
}

impl Drop for Keeping {
    fn drop(&mut self) {
        let mut kept = self.keeper.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.leases.remove(&self.token);
    }
}

/// This machine's name (`/proc/sys/kernel/hostname`, `/etc/hostname`, else `localhost`).
pub fn host() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Whether the process a holder names (`pid <pid>@<host>`) is alive: `Some` when it was a
/// process on this machine and its liveness can be read, `None` when that cannot be known
/// (another machine, another naming, no `/proc`). A reused pid reads as alive: the lease then
/// lapses on its own.
pub fn alive(holder: &str) -> Option<bool> {
    let rest = holder.strip_prefix("pid ")?;
    let (pid, on) = rest.split_once('@')?;
    // A worker's name may follow the host: `pid 42@host (name)`.
    let on = on.split_once(' ').map_or(on, |(host, _)| host);
    let pid: u32 = pid.parse().ok()?;
    if on != host() || !std::path::Path::new("/proc/self").exists() {
        return None;
    }
    Some(std::path::Path::new("/proc").join(pid.to_string()).exists())
}

/// Whether a process drives the run `summary` describes, at `now_ms`: it holds the lease, was
/// heard from lately, and is not a process of this machine that is gone.
pub fn driven(summary: &warrant_core::ports::RunSummary, now_ms: u64) -> bool {
    summary.driven(now_ms) && summary.holder.as_deref().and_then(alive) != Some(false)
}

/// Whether the run is `running` but no process drives it (its process died): resuming it
/// carries it on.
pub fn interrupted(summary: &warrant_core::ports::RunSummary, now_ms: u64) -> bool {
    summary.status == RunStatus::Running && !driven(summary, now_ms)
}

/// Whether resuming the run carries it on: it is interrupted, a person's answer made it
/// ready, or it sleeps and its time has come.
pub fn resumable(summary: &warrant_core::ports::RunSummary, now_ms: u64) -> bool {
    summary.status == RunStatus::Ready || interrupted(summary, now_ms) || awake(summary, now_ms)
}

/// Whether the run sleeps and its time to wake has come by `now_ms`.
pub fn awake(summary: &warrant_core::ports::RunSummary, now_ms: u64) -> bool {
    summary.status == RunStatus::Sleeping && summary.wake_at_ms.is_some_and(|w| w <= now_ms)
}

/// The status as a person needs it: `queued` for a run recorded and never taken up (a
/// fleet's server queued it for a worker), `interrupted` for a running run no process drives.
pub fn shown_status(summary: &warrant_core::ports::RunSummary, now_ms: u64) -> RunStatus {
    if interrupted(summary, now_ms) {
        if summary.events <= 1 {
            RunStatus::Queued
        } else {
            RunStatus::Interrupted
        }
    } else {
        summary.status
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_precision_loss,
        reason = "tests"
    )]

    #[test]
    fn this_process_is_alive_and_a_finished_one_is_not() {
        let me = format!("pid {}@{}", std::process::id(), super::host());
        assert_eq!(super::alive(&me), Some(true));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = format!("pid {pid}@{}", super::host());
        assert_eq!(super::alive(&gone), Some(false));
        assert_eq!(super::alive("pid 1@some-other-machine"), None);
        let named = format!("pid {pid}@{} (worker-2)", super::host());
        assert_eq!(super::alive(&named), Some(false));
        assert_eq!(super::alive("worker-7"), None);
    }
}

//! A worker of a fleet (`warrant worker`): takes runs that are ready from the shared store —
//! new ones a server queued, ones answered or reconciled, ones whose driver's lease lapsed —
//! drives each with the same engine as every other front door, and lets it go when it waits
//! or ends.
//!
//! The store hands each ready run to one claimant (`Leases::claim_ready`, `FOR UPDATE
//! SKIP LOCKED` on PostgreSQL) with a new lease epoch; every append the worker makes names
//! that epoch, so a worker that stalled past its lease and comes back can write nothing (its
//! appends are `Fenced`). What it had sent to a provider before it stalled is, for the new
//! owner, a call whose answer was lost: reconciled or held in doubt, never repeated silently.

use std::sync::Arc;
use std::time::Duration;

use warrant_core::ports::{Clock as _, Driver, FairShare};
use warrant_engine::SystemClock;

use crate::App;
use crate::supervise::Supervisor;

/// How a worker works.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Most runs it drives at once.
    pub max_runs: usize,
    /// Its share of the fleet between tenants.
    pub share: FairShare,
    /// The longest it goes without looking for work when nothing wakes it.
    pub look_every: Duration,
    /// At shutdown, how long the runs it drives get to reach a point where they wait or end
    /// (the rest are taken up by other workers when their leases lapse).
    pub grace: Duration,
}

/// Works until `shutdown` resolves. Fails only when the store cannot hand out runs at all
/// (not a fleet's store); a lost connection is retried.
pub async fn work(
    app: App,
    settings: Settings,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let runner = Arc::new(Supervisor::new(app, settings.max_runs).letting_go());
    work_with(runner, settings, shutdown).await
}

/// [`work`], through `runner` (made by the caller, to read its counters or observe its runs'
/// engines): a supervisor that lets go of the runs that wait.
pub async fn work_with(
    runner: Arc<Supervisor>,
    settings: Settings,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let app = runner.app().clone();
    let store = app.store().clone();
    let holder = app.holder().clone();
    // This worker as a claimant, now.
    let claimant = || Driver {
        holder: holder.clone(),
        now_ms: SystemClock.now_ms(),
        epoch: 0,
    };
    store
        .claim_ready(&claimant(), 0, settings.share)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(holder = %holder, max_runs = settings.max_runs, "worker started");
    tokio::pin!(shutdown);
    let mut failures = 0u32;
    loop {
        let room = runner.room();
        if room > 0 {
            match store.claim_ready(&claimant(), room, settings.share).await {
                Ok(claimed) => {
                    failures = 0;
                    for (run, epoch) in claimed {
                        tracing::info!(run = %run, epoch, "run claimed");
                        // A run that cannot be prepared here keeps its lease until it lapses
                        // (it stops being renewed): then any worker may try it again.
                        if let Err(p) = runner.reenter(&run, None).await {
                            tracing::warn!(run = %run, problem = %p, "cannot drive the run here");
                        }
                    }
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(error = %e, "cannot claim runs; trying again");
                }
            }
        }
        let pause = if failures > 0 {
            Duration::from_millis(200).saturating_mul(failures.min(10))
        } else {
            settings.look_every
        };
        tokio::select! {
            () = store.work_ready() => {}
            () = runner.freed() => {}
            () = tokio::time::sleep(pause) => {}
            () = &mut shutdown => break,
        }
    }
    tracing::info!("worker stopping");
    runner.stop(settings.grace).await;
    // What did not settle within the grace is given back now rather than when its lease
    // lapses: another worker takes it at once (a call this one had in flight is then in
    // doubt for it, as after a crash).
    let driver = claimant();
    for run in runner.held_runs() {
        match store.release(&run, &driver).await {
            Ok(()) => tracing::info!(run = %run, "run given back"),
            Err(e) => tracing::warn!(run = %run, error = %e, "cannot give the run back"),
        }
    }
    Ok(())
}

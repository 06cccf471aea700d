//! Waiting on ports: every wait is bounded (a call's timeout, the run's deadline) and cut short by a cancellation; a run waiting for a person records nothing while nothing changed.

use std::sync::Arc;
use std::time::Duration;

use warrant_core::codes::Code;
use warrant_core::fold::{ApprovalStatus, Next, RunState};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{BoxFuture, CancelRequest, Clock, SurfaceError, SurfaceErrorKind};
use warrant_core::spec::Limits;
use warrant_core::status::RunStatus;

use super::{CANCEL_POLL_MS, Run};
use crate::EngineError;
use crate::lease::Keeping;
use crate::time::TimeSource;

/// Polls `work` once, with no waker: its answer when it has one at once. Ports that answer
/// immediately (scripts, rule lists, replays) then cost no timers and no cancel watch.
pub(super) fn ready_now<T>(work: &mut BoxFuture<'_, T>) -> Option<T> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match work.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(answer) => Some(answer),
        std::task::Poll::Pending => None,
    }
}

/// How long a wait on a port may last.
#[derive(Clone, Copy, Debug)]
pub(super) enum Bound {
    /// `limits.call_timeout_ms`, and never past the run's deadline: a provider (observe,
    /// freshness, invoke, lookup) or the authority.
    Call,
    /// The run's deadline: the decider (a live model may think for long).
    Deadline,
    /// This many milliseconds, and never past the run's deadline: execution control.
    Within(u64),
}

/// Why a bounded wait ended without its answer. Every wait on a port goes through
/// [`Run::bounded`], so none can outlast its bound, the deadline or a cancellation.
#[derive(Debug)]
pub(super) enum Cut {
    /// The bound passed.
    Timeout(u64),
    /// The run's deadline came first.
    Deadline(u64),
    /// The run was cancelled meanwhile.
    Cancelled(CancelRequest),
}

impl Cut {
    /// The cut as the error a surface would give: what the log records, and what a replay
    /// hands back to regenerate it.
    pub(super) fn surface_error(&self) -> SurfaceError {
        let (kind, code, message) = match self {
            Cut::Timeout(ms) => (
                SurfaceErrorKind::TimedOut,
                Code::Timeout,
                format!("no answer within {ms} ms"),
            ),
            Cut::Deadline(ms) => (
                SurfaceErrorKind::TimedOut,
                Code::Deadline,
                format!("no answer within {ms} ms"),
            ),
            Cut::Cancelled(c) => (
                SurfaceErrorKind::Cancelled,
                Code::Cancelled,
                format!("cancelled by {}: {}", c.by, c.reason),
            ),
        };
        SurfaceError {
            code: Some(code),
            ..SurfaceError::new(kind, message)
        }
    }
}

impl Run<'_> {
    /// Whether the run waits for a person and nothing has changed: no answer, no expiry (as of
    /// now), no cancellation.
    pub(super) async fn idle(&mut self) -> bool {
        // Replaying, the log says whether the recorded process re-entered.
        if !matches!(self.time, TimeSource::Live(_)) {
            return false;
        }
        let next = self.state.next();
        let delegating = matches!(next, Next::Continue(i)
            if self.spec.steps.get(i).is_some_and(|s| s.delegate.is_some())
                && self.state.status() == RunStatus::Waiting);
        if !delegating && !matches!(next, Next::Wait(_) | Next::Sleep { .. } | Next::Question) {
            return false;
        }
        // (A session's close that must wait for a reconciliation changes nothing yet.)
        if let Some(c) = self.cancel_due().await
            && self.can_end(&c)
        {
            self.cancel = Some(c);
            return false;
        }
        let now = self.time.peek().unwrap_or(self.state.last_at_ms());
        match next {
            Next::Wait(call) => !expired(&self.state, &self.spec.limits, call, now),
            // Asleep, and its time has not come.
            Next::Sleep { until, .. } => now < until,
            // Unanswered: nothing has changed.
            Next::Question => true,
            _ => super::delegate::children_idle(self.engine, &self.state, now).await,
        }
    }

    /// Gives the run's lease back (nothing more will be appended by this process).
    pub(super) async fn release(&self) {
        if let TimeSource::Live(clock) = &self.time {
            let driver = self.driver(clock.now_ms());
            // A failed release only makes others wait for the lease to lapse.
            let _ = self.engine.store.release(&self.run_id, &driver).await;
        }
    }

    /// A cut wait as the error it stands for; a cancellation is remembered, to end the run.
    pub(super) fn cut(&mut self, cut: &Cut) -> SurfaceError {
        if let Cut::Cancelled(c) = cut {
            self.cancel = Some(c.clone());
        }
        cut.surface_error()
    }

    /// The cancellation requested for this run, if it is due now. Live: asks the store at
    /// most every `CANCEL_POLL_MS` of the clock. Replay: exactly where the log ended the run
    /// cancelled.
    pub(super) async fn cancel_due(&mut self) -> Option<CancelRequest> {
        if let Some(c) = &self.cancel {
            return Some(c.clone());
        }
        match &self.time {
            TimeSource::Replay(_, cancels) => cancels.get(&(self.state.last_seq() + 1)).cloned(),
            // A gateway session whose client left ends at once (recorded `closed`).
            TimeSource::Live(_) if let Some(c) = self.decider.closed() => Some(c),
            TimeSource::Live(clock) => {
                let now = clock.now_ms();
                if self
                    .cancel_polled_ms
                    .is_some_and(|t| now.saturating_sub(t) < CANCEL_POLL_MS)
                {
                    return None;
                }
                self.cancel_polled_ms = Some(now);
                cancel_requested(&*self.engine.store, &self.cancel_ids()).await
            }
        }
    }

    /// The runs whose cancellation ends this one: itself, then its ancestors (cancelling a
    /// parent cancels its children).
    pub(super) fn cancel_ids(&self) -> Vec<RunId> {
        let mut ids = vec![self.run_id.clone()];
        if let Some(p) = self.state.parent().or(self.parent.as_ref()) {
            ids.extend(p.chain.iter().rev().cloned());
        }
        ids
    }

    /// The run's lease, kept renewed by the engine's keeper while the answer lives.
    pub(super) fn kept(&self, clock: &Arc<dyn Clock>) -> Keeping {
        self.engine.keeper.keep(
            &self.run_id,
            &self.driver(clock.now_ms()),
            &self.engine.store,
            clock,
        )
    }

    /// Awaits `work` (this run's children), its lease kept renewed meanwhile.
    pub(super) async fn renewing<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        let TimeSource::Live(clock) = &self.time else {
            return work.await;
        };
        let _kept = self.kept(clock);
        work.await
    }

    /// Awaits `work` unless the run is cancelled first (live runs only: a replay never waits).
    /// Cooperative: the request is noticed when the store tells of one (at once where it can,
    /// [`Leases::cancel_news`](warrant_core::store::Leases::cancel_news), asking at most every
    /// `CANCEL_POLL_MS` however often it tells), else within `CANCEL_POLL_MS`. While it waits,
    /// the engine's [keeper](crate::LeaseKeeper) renews the run's lease with the others', so
    /// others know its driver is alive; nothing else wakes it.
    pub(super) async fn guarded<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, CancelRequest> {
        let TimeSource::Live(clock) = &self.time else {
            return Ok(work.await);
        };
        let _kept = self.kept(clock);
        let watch = cancel_watch(self.engine.store.clone(), self.cancel_ids());
        tokio::select! {
            biased;
            done = work => Ok(done),
            c = watch => Err(c),
        }
    }

    /// How long a wait may last now, and whether that is the deadline; `None` when replaying
    /// (recorded ports answer at once).
    pub(super) fn bound_ms(&self, bound: Bound) -> Option<(u64, bool)> {
        let now = self.time.peek()?;
        // What is left of the run's driving time (a person's wait spent none of it).
        let left = self
            .spec
            .limits
            .deadline_ms
            .saturating_sub(self.state.driven_ms(now));
        let limit = match bound {
            Bound::Call => self.spec.limits.call_timeout_ms,
            Bound::Deadline => u64::MAX,
            Bound::Within(ms) => ms,
        };
        Some(if left <= limit {
            (left, true)
        } else {
            (limit, false)
        })
    }

    /// INVARIANT (every wait bounded): awaits a port's answer within `bound`, the run's deadline
    /// and the cancel guard. A port that answers at once is polled once, with no timers.
    /// Replaying, a recorded port that gave no answer never answers: the bound fires at once.
    pub(super) async fn bounded<T>(
        &self,
        bound: Bound,
        mut work: BoxFuture<'_, T>,
    ) -> Result<T, Cut> {
        if let Some(answer) = ready_now(&mut work) {
            return Ok(answer);
        }
        self.waited(bound, work).await
    }

    /// [`Run::bounded`], appending what is staged before waiting when `work` has no answer at
    /// once: a read's result left for the next decision's commit is then durable, and seen,
    /// while a slow port (a live model, a remote provider) works.
    pub(super) async fn bounded_durably<T>(
        &mut self,
        bound: Bound,
        mut work: BoxFuture<'_, T>,
    ) -> Result<Result<T, Cut>, EngineError> {
        if let Some(answer) = ready_now(&mut work) {
            return Ok(Ok(answer));
        }
        self.flush().await?;
        Ok(self.waited(bound, work).await)
    }

    /// The wait of [`Run::bounded`] for a port that did not answer at once.
    async fn waited<T>(&self, bound: Bound, work: BoxFuture<'_, T>) -> Result<T, Cut> {
        let Some((ms, deadline)) = self.bound_ms(bound) else {
            return Err(Cut::Timeout(0));
        };
        let timed = tokio::time::timeout(Duration::from_millis(ms), work);
        match self.guarded(timed).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) if deadline => Err(Cut::Deadline(ms)),
            Ok(Err(_)) => Err(Cut::Timeout(ms)),
            Err(c) => Err(Cut::Cancelled(c)),
        }
    }
}

/// Resolves with the first cancellation requested of any of `ids` (a run, then its
/// ancestors). Woken by the store's news of a request (at once where it can tell,
/// [`Leases::cancel_news`](warrant_core::store::Leases::cancel_news)), asking at most every
/// `CANCEL_POLL_MS` however often it is woken; from a store that cannot tell, every
/// `CANCEL_POLL_MS`.
pub(crate) async fn cancel_watch(
    store: Arc<dyn warrant_core::ports::EventStore>,
    ids: Vec<RunId>,
) -> CancelRequest {
    let poll = Duration::from_millis(CANCEL_POLL_MS);
    // What wakes a look: the store's news of a request, or, from a store that cannot tell,
    // the interval.
    let armed = || {
        store
            .cancel_news()
            .unwrap_or_else(|| Box::pin(tokio::time::sleep(poll)))
    };
    let now = tokio::time::Instant::now();
    let mut looked = now.checked_sub(poll).unwrap_or(now);
    loop {
        tokio::time::sleep_until(looked + poll).await;
        // Armed before the look, so a request made after it is news.
        let told = armed();
        looked = tokio::time::Instant::now();
        if let Some(c) = cancel_requested(&*store, &ids).await {
            return c;
        }
        told.await;
    }
}

/// The first cancellation requested of `ids` (a run, then its ancestors).
async fn cancel_requested(
    store: &dyn warrant_core::ports::EventStore,
    ids: &[RunId],
) -> Option<CancelRequest> {
    for id in ids {
        if let Ok(Some(c)) = store.cancel_request(id).await {
            return Some(c);
        }
    }
    None
}

/// Whether the wait `call` holds the run in is over unanswered by `now`: its approval
/// request expired, or, in doubt, no operator reconciled it within the spec's `wait_max_ms`.
pub(super) fn expired(state: &RunState, limits: &Limits, call: CallId, now: u64) -> bool {
    let Some(c) = state.call(call) else {
        return false;
    };
    if c.in_doubt {
        return limits
            .wait_max_ms
            .is_some_and(|w| now.saturating_sub(state.wait_began_ms()) >= w);
    }
    c.awaiting
        .as_deref()
        .and_then(|r| state.approval(r))
        .is_some_and(|a| a.status == ApprovalStatus::Pending && now >= a.expires_at_ms)
}

//! One run: the loop of DESIGN.md and the Bridge.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use warrant_core::canon;
use warrant_core::codes::Code;
use warrant_core::event::{
    ApprovalScope, CallStatus, Claim, Decision, DoubtStage, EVENTS_FORMAT, Effect, Event,
    EventKind, Fault, Layer, Lineage, Narrowing, Outcome, StepEnd,
};
use warrant_core::fold::{ApprovalStatus, Next, RunState};
use warrant_core::ids::{CallId, HandleId, RunId, StepId};
use warrant_core::ports::{
    BoxFuture, CallOutput, CancelRequest, CapabilityRequest, ControlVerdict, DecideError, Decider,
    Driver, Interception, Invocation, LEASE_TTL_MS, Observation, Recovery, SurfaceError,
    SurfaceErrorKind, Verdict,
};
use warrant_core::projection::{self, Projection};
use warrant_core::provenance;
use warrant_core::spec::{CarriedRef, Spec};

use crate::time::TimeSource;
use crate::{Engine, EngineError, RunResult, Surfaces};

/// How often a live run asks the store whether it was cancelled.
const CANCEL_POLL_MS: u64 = 100;

/// Most compiled argument schemas kept per run.
const VALIDATORS_MAX: usize = 256;

pub(crate) struct Run<'a> {
    engine: &'a Engine,
    run_id: RunId,
    spec: Arc<Spec>,
    decider: &'a dyn Decider,
    surfaces: &'a Surfaces,
    time: TimeSource,
    state: RunState,
    /// Events applied to the fold, not yet appended.
    pending: Vec<Arc<Event>>,
    /// The sequence the store has (the last appended).
    durable_seq: u64,
    /// Compiled argument schemas, by the address of the schema they were compiled from (the
    /// `Arc` is kept so the address is not reused).
    validators: HashMap<usize, (Arc<Value>, crate::cache::Compiled)>,
    /// Replay only: stop before staging the event with this sequence (where the recorded
    /// process stopped).
    pub(crate) stop_at: Option<u64>,
    /// A cancellation seen and not yet acted on.
    cancel: Option<CancelRequest>,
    /// When the store was last asked for a cancellation (live clock).
    cancel_polled_ms: Option<u64>,
    /// The objective, lower-cased once for provenance matching.
    objective_lower: String,
    /// Milliseconds spent before the run (or this re-entry) started, to record once.
    pub(crate) setup_ms: Option<u64>,
    /// The epoch of this process's lease on the run (1 for a run it starts).
    pub(crate) epoch: u64,
    /// Its authority and execution control.
    rules: crate::rules::Rules,
}

/// A call that passed the Bridge's checks: what to execute.
struct Checked {
    effect: Effect,
    executed: Arc<Value>,
    /// Digest of `executed`.
    args_digest: String,
    labels: Vec<provenance::ArgLabel>,
    narrowed: Vec<Narrowing>,
    /// The approval this dispatch consumes.
    consume: Option<String>,
}

/// A call started earlier, reopened to be carried on (`Run::reopen`).
struct Reopened {
    record: warrant_core::fold::CallRecord,
    i: usize,
    provider: String,
    surface: Arc<dyn warrant_core::ports::Surface>,
    version: String,
}

/// What the decider saw when it proposed a call: the observation's version and actions.
struct Sight {
    version: String,
    actions: Arc<[warrant_core::event::ActionRecord]>,
}

/// Why a call is refused before dispatch.
struct Refusal {
    status: CallStatus,
    fault: Fault,
    /// When an authority refused it: the digest of the arguments it ruled on.
    ruled: Option<String>,
    /// Narrowings applied before it was refused, and the arguments they left.
    narrowed: Vec<Narrowing>,
    narrowed_args: Option<Arc<Value>>,
    /// Not refused: held for approval (a durable request was made; the call waits).
    held: bool,
}

/// Polls `work` once, with no waker: its answer when it has one at once. Ports that answer
/// immediately (scripts, rule lists, replays) then cost no timers and no cancel watch.
fn ready_now<T>(work: &mut BoxFuture<'_, T>) -> Option<T> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match work.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(answer) => Some(answer),
        std::task::Poll::Pending => None,
    }
}

/// How long a wait on a port may last.
#[derive(Clone, Copy, Debug)]
enum Bound {
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
enum Cut {
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
    fn surface_error(&self) -> SurfaceError {
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

/// How a surface's error is recorded on a call that reached dispatch: its status and fault.
/// One mapping for live runs and replays.
fn call_fault(tool: &str, e: &SurfaceError) -> (CallStatus, Fault) {
    let message = &e.message;
    let (status, code, text) = match e.kind {
        SurfaceErrorKind::Denied => (
            CallStatus::StoppedByPolicy,
            Code::DeniedAtProvider,
            format!("`{tool}` denied by the provider's authorizer: {message}"),
        ),
        SurfaceErrorKind::Cancelled => (
            CallStatus::Cancelled,
            Code::Cancelled,
            format!("`{tool}` cancelled: {message}"),
        ),
        SurfaceErrorKind::Invalid => (
            CallStatus::Rejected,
            Code::InvalidArguments,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::NotSent => (
            CallStatus::ProviderError,
            Code::Unavailable,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::Rejected => (
            CallStatus::ProviderError,
            Code::ProviderError,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::AnswerLost => (
            CallStatus::ProviderError,
            Code::AnswerLost,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::TimedOut => (
            CallStatus::ProviderError,
            Code::Timeout,
            format!("`{tool}` failed: {message}"),
        ),
    };
    let code = e.code.unwrap_or(code);
    (status, Fault::of(code, text))
}

/// The fault of a failed observation.
fn observe_fault(provider: &str, e: &SurfaceError) -> Fault {
    let code = e.code.unwrap_or(match e.kind {
        SurfaceErrorKind::NotSent => Code::Unavailable,
        SurfaceErrorKind::AnswerLost => Code::AnswerLost,
        SurfaceErrorKind::TimedOut => Code::Timeout,
        SurfaceErrorKind::Cancelled => Code::Cancelled,
        SurfaceErrorKind::Denied => Code::DeniedAtProvider,
        SurfaceErrorKind::Rejected | SurfaceErrorKind::Invalid => Code::ProviderError,
    });
    Fault::of(
        code,
        format!("observing `{provider}` failed: {}", e.message),
    )
}

fn refuse(code: Code, layer: Layer, message: impl Into<String>) -> Refusal {
    let status = if layer == Layer::Policy {
        CallStatus::StoppedByPolicy
    } else {
        CallStatus::Rejected
    };
    Refusal {
        held: false,
        status,
        ruled: None,
        narrowed: Vec::new(),
        narrowed_args: None,
        fault: Fault::new(code, layer, message),
    }
}

impl<'a> Run<'a> {
    /// A new run, not yet started.
    pub(crate) fn start(
        engine: &'a Engine,
        run_id: RunId,
        spec: Arc<Spec>,
        decider: &'a dyn Decider,
        surfaces: &'a Surfaces,
        time: TimeSource,
        rules: crate::rules::Rules,
    ) -> Run<'a> {
        let mut run = Run::from_state(
            engine,
            RunState::default(),
            spec,
            decider,
            surfaces,
            time,
            rules,
        );
        run.run_id = run_id;
        run
    }

    /// A run re-entered from its folded, durable log.
    pub(crate) fn from_state(
        engine: &'a Engine,
        state: RunState,
        spec: Arc<Spec>,
        decider: &'a dyn Decider,
        surfaces: &'a Surfaces,
        time: TimeSource,
        rules: crate::rules::Rules,
    ) -> Run<'a> {
        let run_id = state.run_id.clone().unwrap_or_else(|| RunId(String::new()));
        let durable_seq = state.last_seq;
        let objective_lower = spec.objective.to_lowercase();
        Run {
            engine,
            run_id,
            spec,
            decider,
            surfaces,
            time,
            state,
            pending: Vec::new(),
            durable_seq,
            validators: HashMap::new(),
            stop_at: None,
            cancel: None,
            cancel_polled_ms: None,
            objective_lower,
            setup_ms: None,
            epoch: 1,
            rules,
        }
    }

    /// Re-enters after the process that ran this run stopped.
    pub(crate) async fn reenter(&mut self) -> Result<RunResult, EngineError> {
        if self.state.outcome.is_some() {
            return Ok(self.result());
        }
        let in_flight = self
            .state
            .in_flight()
            .filter(|c| !c.in_doubt && c.executed.is_some())
            .map(|c| c.id);
        // A run that waits for a person, with nothing answered, nothing expired and no
        // cancellation, has nothing to do: re-entering it records nothing.
        if in_flight.is_none() && self.idle().await {
            self.release().await;
            return Ok(self.result());
        }
        let setup_ms = self.setup_ms.take();
        self.stage(EventKind::RunResumed {
            in_flight,
            setup_ms,
        })?;
        if let Some(call) = in_flight {
            self.recover(call).await?;
        }
        self.resume().await
    }

    /// Whether the run waits for a person and nothing has changed: no answer, no expiry (as of
    /// now), no cancellation.
    async fn idle(&mut self) -> bool {
        // Replaying, the log says whether the recorded process re-entered.
        if !matches!(self.time, TimeSource::Live(_)) {
            return false;
        }
        let Next::Wait(call) = self.state.next() else {
            return false;
        };
        if let Some(c) = self.cancel_due().await {
            self.cancel = Some(c);
            return false;
        }
        let now = self.time.peek().unwrap_or(self.state.last_at_ms);
        let expired = self
            .state
            .call(call)
            .and_then(|c| c.awaiting.as_deref())
            .and_then(|r| self.state.approval(r))
            .is_some_and(|a| a.status == ApprovalStatus::Pending && now >= a.expires_at_ms);
        !expired
    }

    /// Gives the run's lease back (nothing more will be appended by this process).
    async fn release(&self) {
        if let TimeSource::Live(clock) = &self.time {
            let driver = self.driver(clock.now_ms());
            // A failed release only makes others wait for the lease to lapse.
            let _ = self.engine.store.release(&self.run_id, &driver).await;
        }
    }

    /// This process as the run's driver, at `now_ms`.
    fn driver(&self, now_ms: u64) -> Driver {
        Driver {
            holder: self.engine.holder.clone(),
            now_ms,
            epoch: self.epoch,
        }
    }

    /// The provider of step `i` and its surface.
    fn surface_of(
        &self,
        i: usize,
    ) -> Result<(String, Arc<dyn warrant_core::ports::Surface>), EngineError> {
        let provider = self.spec.steps[i].provider.clone();
        let surface = self
            .surfaces
            .get(&provider)
            .cloned()
            .ok_or_else(|| EngineError::MissingSurface(provider.clone()))?;
        Ok((provider, surface))
    }

    /// A call started earlier, with what carrying it on needs: its record, step, provider,
    /// surface and the observation version it was proposed against.
    fn reopen(&self, call: CallId) -> Result<Option<Reopened>, EngineError> {
        let Some(record) = self.state.call(call).cloned() else {
            return Ok(None);
        };
        let i = record.step;
        let (provider, surface) = self.surface_of(i)?;
        let version = (record.decision as usize)
            .checked_sub(1)
            .and_then(|d| self.state.decision_log.get(d))
            .map(|d| d.version.clone())
            .unwrap_or_default();
        Ok(Some(Reopened {
            record,
            i,
            provider,
            surface,
            version,
        }))
    }

    /// Settles a call whose intent is durable but whose result was lost.
    async fn recover(&mut self, call: CallId) -> Result<(), EngineError> {
        let Some(Reopened {
            record,
            i,
            provider,
            surface,
            version,
        }) = self.reopen(call)?
        else {
            return Ok(());
        };
        let effect = record.effect.unwrap_or(Effect::Commit);
        let invocation = Invocation {
            run: self.run_id.clone(),
            call,
            tool: record.tool.clone(),
            args: record
                .executed
                .clone()
                .unwrap_or_else(|| record.proposed.clone()),
            effect,
            idempotency_key: record
                .idempotency_key
                .clone()
                .unwrap_or_else(|| idempotency_key(&self.run_id, call)),
            version,
        };
        // INVARIANT (no effect repeated, none lost): a read is simply re-invoked; a commit only
        // when repeating it is safe by construction or the surface can tell what happened.
        let recovery = if effect == Effect::Read {
            Recovery::Reinvoke
        } else {
            surface.recovery(&record.tool)
        };
        let args_digest = canon::digest(&invocation.args);
        let in_doubt = |reason: String, cause: Option<Fault>| EventKind::CallInDoubt {
            call,
            provider: provider.clone(),
            tool: record.tool.clone(),
            args_digest: args_digest.clone(),
            reason,
            cause,
            stage: Some(DoubtStage::IntentRecorded),
        };
        // INVARIANT (every path): a repeated call is ruled on again, as it is now. A read that
        // is no longer allowed ends stopped; a commit that may have happened is in doubt.
        let action = self
            .state
            .observations
            .get(&provider)
            .and_then(|o| o.actions.iter().find(|a| a.name == record.tool))
            .cloned()
            .map(|a| warrant_core::event::ActionRecord { effect, ..a })
            .unwrap_or_else(|| warrant_core::event::ActionRecord {
                name: record.tool.clone(),
                effect,
                description: String::new(),
                input_schema: Arc::new(Value::Null),
                hints: None,
            });
        let allowed = if recovery == Recovery::InDoubt {
            Ok(None)
        } else {
            self.authorize(
                i,
                call,
                &action,
                &invocation.args,
                &args_digest,
                &record.provenance,
            )
            .await
        };
        let tool = &record.tool;
        if let Err(refusal) = allowed {
            if effect == Effect::Read {
                return self.refuse_call(call, refusal);
            }
            self.stage(in_doubt(
                format!(
                    "authority no longer allows repeating `{tool}`: {}",
                    refusal.fault.message
                ),
                Some(refusal.fault),
            ))?;
            return Ok(());
        }
        match recovery {
            Recovery::Reinvoke => self.invoke_and_record(i, &surface, invocation).await,
            Recovery::Lookup => {
                let looked = self
                    .bounded(Bound::Call, surface.lookup(invocation.clone()))
                    .await
                    .unwrap_or_else(|cut| Err(self.cut(&cut)));
                match looked {
                    Ok(Some(found)) => self.record_result(i, call, tool, Ok(found)),
                    Ok(None) => self.invoke_and_record(i, &surface, invocation).await,
                    Err(e) => {
                        self.stage(in_doubt(
                            format!(
                                "the intent to call `{tool}` was recorded, then the process stopped; looking up whether it happened failed: {}",
                                e.message
                            ),
                            None,
                        ))?;
                        Ok(())
                    }
                }
            }
            Recovery::InDoubt => {
                self.stage(in_doubt(
                    format!(
                        "the intent to call `{tool}` was recorded, then the process stopped before its result was: whether it was sent, and whether it happened, is unknown (`{provider}` neither accepts idempotency keys nor can tell)"
                    ),
                    None,
                ))?;
                Ok(())
            }
        }
    }

    /// A cut wait as the error it stands for; a cancellation is remembered, to end the run.
    fn cut(&mut self, cut: &Cut) -> SurfaceError {
        if let Cut::Cancelled(c) = cut {
            self.cancel = Some(c.clone());
        }
        cut.surface_error()
    }

    /// The cancellation requested for this run, if it is due now. Live: asks the store at
    /// most every `CANCEL_POLL_MS` of the clock. Replay: exactly where the log ended the run
    /// cancelled.
    async fn cancel_due(&mut self) -> Option<CancelRequest> {
        if let Some(c) = &self.cancel {
            return Some(c.clone());
        }
        match &self.time {
            TimeSource::Replay(_, cancels) => cancels.get(&(self.state.last_seq + 1)).cloned(),
            TimeSource::Live(clock) => {
                let now = clock.now_ms();
                if self
                    .cancel_polled_ms
                    .is_some_and(|t| now.saturating_sub(t) < CANCEL_POLL_MS)
                {
                    return None;
                }
                self.cancel_polled_ms = Some(now);
                self.engine
                    .store
                    .cancel_request(&self.run_id)
                    .await
                    .ok()
                    .flatten()
            }
        }
    }

    /// Awaits `work` unless the run is cancelled first (live runs only: a replay never waits).
    /// Cooperative: the request is noticed within `CANCEL_POLL_MS`. While it waits, the run's
    /// lease is renewed, so others know its driver is alive.
    async fn guarded<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, CancelRequest> {
        let TimeSource::Live(clock) = &self.time else {
            return Ok(work.await);
        };
        let (store, run) = (self.engine.store.clone(), self.run_id.clone());
        let (clock, holder, epoch) = (clock.clone(), self.engine.holder.clone(), self.epoch);
        let watch = async move {
            let mut renewed_ms = clock.now_ms();
            loop {
                tokio::time::sleep(Duration::from_millis(CANCEL_POLL_MS)).await;
                if let Ok(Some(c)) = store.cancel_request(&run).await {
                    return c;
                }
                let now_ms = clock.now_ms();
                if now_ms.saturating_sub(renewed_ms) >= LEASE_TTL_MS / 3 {
                    renewed_ms = now_ms;
                    let driver = Driver {
                        holder: holder.clone(),
                        now_ms,
                        epoch,
                    };
                    // A failed renewal only lets the lease lapse sooner; the run goes on.
                    let _ = store.heartbeat(&run, &driver).await;
                }
            }
        };
        tokio::select! {
            biased;
            done = work => Ok(done),
            c = watch => Err(c),
        }
    }

    /// How long a wait may last now, and whether that is the deadline; `None` when replaying
    /// (recorded ports answer at once).
    fn bound_ms(&self, bound: Bound) -> Option<(u64, bool)> {
        let now = self.time.peek()?;
        let left = (self.state.started_at_ms + self.spec.limits.deadline_ms).saturating_sub(now);
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
    async fn bounded<T>(&self, bound: Bound, mut work: BoxFuture<'_, T>) -> Result<T, Cut> {
        if let Some(answer) = ready_now(&mut work) {
            return Ok(answer);
        }
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

    /// The run's result as it stands.
    fn result(&mut self) -> RunResult {
        RunResult {
            run_id: self.run_id.clone(),
            outcome: self.state.outcome.clone(),
            waiting_on: self
                .state
                .calls
                .iter()
                .filter(|c| c.in_doubt || (c.status.is_none() && c.awaiting.is_some()))
                .map(|c| c.id)
                .collect(),
            state: std::mem::take(&mut self.state),
        }
    }

    /// Applies an event to the fold and queues it for the store. The clock is read once per
    /// event. Returns the event's timestamp.
    fn stage(&mut self, kind: EventKind) -> Result<u64, EngineError> {
        let seq = self.state.last_seq + 1;
        if self.stop_at == Some(seq) {
            return Err(EngineError::Stopped(seq));
        }
        let at_ms = self.time.stamp(seq);
        let event = Event { seq, at_ms, kind };
        self.state.apply(&event)?;
        self.pending.push(Arc::new(event));
        Ok(at_ms)
    }

    /// Appends everything staged, atomically, and waits until the store holds it.
    async fn flush(&mut self) -> Result<(), EngineError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let events = std::mem::take(&mut self.pending);
        let expected = self.durable_seq;
        let last = events.last().map_or(expected, |e| e.seq);
        let holds_result = events
            .iter()
            .any(|e| matches!(e.kind, EventKind::CallFinished { .. }));
        let driver = self.driver(self.state.last_at_ms);
        self.engine
            .append(&self.run_id, expected, events, Some(&driver))
            .await?;
        self.durable_seq = last;
        if holds_result {
            warrant_fault::hit("after-result");
        }
        Ok(())
    }

    pub(crate) async fn drive(&mut self) -> Result<RunResult, EngineError> {
        let setup_ms = self.setup_ms.take();
        self.stage(EventKind::RunStarted {
            format: EVENTS_FORMAT.to_owned(),
            run_id: self.run_id.clone(),
            spec_hash: self.engine.cache.spec_hash(&self.spec),
            spec: self.spec.clone(),
            decider: self.decider.identity(),
            authority: self.rules.authority.describe(),
            principal: Some(warrant_core::event::Principal {
                tenant: self.engine.acting_for.0.clone(),
                user: self.engine.acting_for.1.clone(),
                agent: self.decider.identity().to_string(),
            }),
            setup_ms,
            execution_control: self.rules.describe_control(),
        })?;
        self.flush().await?;
        self.resume().await
    }

    /// Drives the run from whatever its state is until it ends.
    async fn resume(&mut self) -> Result<RunResult, EngineError> {
        loop {
            // INVARIANT (cancellation): checked between every two actions of the run.
            if self.state.outcome.is_none()
                && let Some(c) = self.cancel_due().await
            {
                // A call still held for approval was never dispatched: it ends with the run.
                // (One dispatched after its approval is past holding: if its answer was lost
                // it stays in doubt, for a reconciliation.)
                if let Some(held) = self.state.calls.last().filter(|c| {
                    c.awaiting.is_some()
                        && c.status.is_none()
                        && c.idempotency_key.is_none()
                        && !c.in_doubt
                }) {
                    let fault = Fault::new(
                        Code::Cancelled,
                        Layer::Runtime,
                        format!(
                            "`{}` cancelled: the run was cancelled while it waited for approval",
                            held.tool
                        ),
                    );
                    let id = held.id;
                    self.finish_call(id, CallStatus::Cancelled, None, Some(fault))?;
                }
                self.stage(EventKind::RunFinished {
                    outcome: Outcome::Cancelled {
                        by: c.by,
                        reason: c.reason,
                    },
                })?;
                continue;
            }
            match self.state.next() {
                Next::Ended => break,
                Next::Wait(call) => {
                    // An approval request unanswered past its time expires; the call is then
                    // refused when it is carried on. Judged at the last event's time (a
                    // re-entry's `run_resumed`), so a replay judges it the same way.
                    let expired = self
                        .state
                        .calls
                        .iter()
                        .find(|c| c.id == call)
                        .and_then(|c| c.awaiting.clone())
                        .filter(|r| {
                            self.state.approval(r).is_some_and(|a| {
                                a.status == ApprovalStatus::Pending
                                    && self.state.last_at_ms >= a.expires_at_ms
                            })
                        });
                    match expired {
                        Some(request) => {
                            self.stage(EventKind::ApprovalExpired { request })?;
                        }
                        None => break,
                    }
                }
                Next::Finish(outcome) => {
                    self.stage(EventKind::RunFinished { outcome })?;
                }
                Next::Skip {
                    step,
                    blocked_by,
                    fault,
                } => {
                    let id = self.spec.steps[step].id.clone();
                    self.stage(EventKind::StepSkipped {
                        step: id,
                        blocked_by,
                        fault,
                    })?;
                }
                Next::Start(i) => {
                    let step = &self.spec.steps[i];
                    self.stage(EventKind::StepStarted {
                        step: step.id.clone(),
                        provider: step.provider.clone(),
                    })?;
                }
                Next::Continue(i) => self.decide_once(i).await?,
                Next::Redrive(call) => self.redrive(call).await?,
                Next::Resend(call) => self.resend(call).await?,
            }
        }
        self.flush().await?;
        Ok(self.result())
    }

    fn exhausted(&mut self, limit: &str, value: u64) -> Result<(), EngineError> {
        self.stage(EventKind::RunFinished {
            outcome: Outcome::Exhausted {
                limit: limit.to_owned(),
                value,
            },
        })?;
        Ok(())
    }

    /// Whether a limit is reached at time `now`; if so the run is ended `exhausted`.
    fn check_limits(&mut self, i: usize, now_ms: u64) -> Result<bool, EngineError> {
        let limits = &self.spec.limits;
        let step = &self.spec.steps[i];
        let step_max = step.decisions_max.unwrap_or(limits.step_decisions_max);
        if now_ms.saturating_sub(self.state.started_at_ms) >= limits.deadline_ms {
            self.exhausted("deadline_ms", limits.deadline_ms)?;
            return Ok(true);
        }
        if self.state.decisions >= limits.decisions_max {
            self.exhausted("decisions_max", u64::from(limits.decisions_max))?;
            return Ok(true);
        }
        if self.state.steps[i].decisions >= step_max {
            let name = if step.decisions_max.is_some() {
                format!("steps.{}.decisions_max", step.id)
            } else {
                "step_decisions_max".to_owned()
            };
            self.exhausted(&name, u64::from(step_max))?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Observes step `i`'s provider within the call bound, recording a new version. A failed
    /// observation ends the step (the run, at the deadline) and returns `None`; so does a
    /// cancellation, which the loop then acts on.
    async fn observe(
        &mut self,
        i: usize,
        surface: &Arc<dyn warrant_core::ports::Surface>,
    ) -> Result<Option<Observation>, EngineError> {
        let step_id = self.spec.steps[i].id.clone();
        let provider = self.spec.steps[i].provider.clone();
        let observed = match self.bounded(Bound::Call, surface.observe()).await {
            Ok(answer) => answer,
            Err(Cut::Cancelled(c)) => {
                self.cancel = Some(c);
                return Ok(None);
            }
            Err(cut) => Err(cut.surface_error()),
        };
        let observation = match observed {
            Ok(o) => o,
            Err(e) => {
                let fault = observe_fault(&provider, &e);
                let deadline = fault.code == Code::Deadline.as_str();
                self.stage(EventKind::ObserveFailed {
                    step: step_id.clone(),
                    provider,
                    fault: fault.clone(),
                })?;
                if deadline {
                    self.exhausted("deadline_ms", self.spec.limits.deadline_ms)?;
                } else {
                    self.stage(EventKind::StepFinished {
                        step: step_id,
                        end: StepEnd::NotAttained { fault },
                    })?;
                }
                return Ok(None);
            }
        };
        let changed = self
            .state
            .observations
            .get(&provider)
            .is_none_or(|o| o.version != observation.version);
        if changed {
            self.stage(EventKind::Observed {
                step: step_id,
                provider,
                version: observation.version.clone(),
                actions: observation.actions.clone(),
            })?;
        }
        Ok(Some(observation))
    }

    /// One decision in step `i`: observe, project, decide, and carry the decision out.
    async fn decide_once(&mut self, i: usize) -> Result<(), EngineError> {
        if self.check_limits(i, self.state.last_at_ms)? {
            return Ok(());
        }
        let step_id = self.spec.steps[i].id.clone();
        let (_, surface) = self.surface_of(i)?;
        self.flush().await?;
        let Some(observation) = self.observe(i, &surface).await? else {
            return Ok(());
        };
        let projection = Projection::build(
            &self.state,
            self.spec.clone(),
            i,
            observation.version.clone(),
            observation.actions.clone(),
        );
        if let Some(c) = self.cancel_due().await {
            self.cancel = Some(c);
            return Ok(());
        }
        let decision_no = projection.decision_no;
        let sight = Sight {
            version: observation.version.clone(),
            actions: observation.actions.clone(),
        };
        // The decider is waited on until the run's deadline at most (a live model retrying, a
        // stalled stream): past it, the run is exhausted.
        // Deciders that answer at once (scripts, replays) are polled once, with no timers.
        let decided = match self
            .bounded(Bound::Deadline, self.decider.decide(projection))
            .await
        {
            Ok(answer) => Ok(answer),
            Err(Cut::Cancelled(c)) => Err(c),
            Err(Cut::Timeout(_) | Cut::Deadline(_)) => Ok(Err(DecideError::new(
                Code::DeadlineExceeded,
                "the decider had not decided when the run's deadline came",
            ))),
        };
        let decided = match decided {
            Err(c) => {
                // Cancelled while the decider thought: nothing it decides is acted on.
                self.cancel = Some(c);
                return Ok(());
            }
            Ok(Ok(d)) => d,
            Ok(Err(e)) => {
                let deadline = e.code == Code::DeadlineExceeded;
                let fault = Fault::of(e.code, e.message);
                self.stage(EventKind::DecideFailed {
                    step: step_id,
                    version: Some(observation.version),
                    fault: fault.clone(),
                    exchange: e.exchange,
                })?;
                if deadline {
                    return self.exhausted("deadline_ms", self.spec.limits.deadline_ms);
                }
                self.stage(EventKind::RunFinished {
                    outcome: Outcome::Failed { fault },
                })?;
                return Ok(());
            }
        };
        let decision = decided.decision;
        let decided_at = self.stage(EventKind::Decided {
            step: step_id.clone(),
            decision_no,
            version: observation.version.clone(),
            decision: decision.clone(),
            usage: decided.usage,
            exchange: decided.exchange,
        })?;
        if decided_at.saturating_sub(self.state.started_at_ms) >= self.spec.limits.deadline_ms {
            return self.exhausted("deadline_ms", self.spec.limits.deadline_ms);
        }
        // Budgets the decider spends: checked once the decision that spent them is recorded.
        let limits = &self.spec.limits;
        if let Some(max) = limits.tokens_max
            && self.state.tokens_used > max
        {
            return self.exhausted("tokens_max", max);
        }
        if let Some(max) = limits.cost_micro_usd_max
            && self.state.cost_micro_usd > max
        {
            return self.exhausted("cost_micro_usd_max", max);
        }
        if let (Some(max), Decision::Call { .. }) = (limits.calls_max, &decision)
            && self.state.calls.len() as u64 >= u64::from(max)
        {
            return self.exhausted("calls_max", u64::from(max));
        }
        match decision {
            Decision::Done { .. } => {
                let end = self.state.judge_done(i);
                self.stage(EventKind::StepFinished { step: step_id, end })?;
            }
            Decision::Decline { reason } => {
                let end = self.state.judge_decline(i, &reason);
                self.stage(EventKind::StepFinished { step: step_id, end })?;
            }
            Decision::Call {
                tool,
                handle,
                args,
                claims,
            } => {
                self.bridge(i, decision_no, sight, &surface, tool, handle, args, &claims)
                    .await?;
            }
        }
        Ok(())
    }

    /// INVARIANT (one path): the Bridge. The only code that invokes a surface.
    #[expect(clippy::too_many_arguments, reason = "the parts of one call decision")]
    async fn bridge(
        &mut self,
        i: usize,
        decision_no: u32,
        sight: Sight,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        tool: String,
        handle: Option<HandleId>,
        proposed: Arc<Value>,
        claims: &[Claim],
    ) -> Result<(), EngineError> {
        let call = self.state.next_call_id();
        let step_id = self.spec.steps[i].id.clone();
        let handle = handle.or_else(|| projection::handle_in(&sight.actions, decision_no, &tool));
        let proposed = &proposed;
        let started_at = self.stage(EventKind::CallStarted {
            call,
            step: step_id,
            tool: tool.clone(),
            handle,
            args: proposed.clone(),
            resend_of: None,
        })?;
        self.carry(
            i, &sight, surface, call, &tool, handle, proposed, claims, started_at,
        )
        .await
    }

    /// Everything after a call started: the checks, authority and approvals, interceptors,
    /// freshness, the intent, the invocation. A call held for approval returns here later
    /// (`redrive`).
    #[expect(clippy::too_many_arguments, reason = "the parts of one call decision")]
    async fn carry(
        &mut self,
        i: usize,
        sight: &Sight,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        call: CallId,
        tool: &str,
        handle: Option<HandleId>,
        proposed: &Arc<Value>,
        claims: &[Claim],
        now_ms: u64,
    ) -> Result<(), EngineError> {
        // INVARIANT (no silent failure): from here every path ends the call with exactly one
        // `call_finished` (or, held for approval, leaves it waiting on a durable request).
        let checked = self
            .check_call(i, sight, call, tool, handle, proposed, claims, now_ms)
            .await;
        let Checked {
            effect,
            executed,
            args_digest,
            labels,
            narrowed,
            consume,
        } = match checked {
            Ok(ok) => ok,
            // Held for approval: the request is durable, the call waits.
            Err(refusal) if refusal.held => return Ok(()),
            Err(refusal) => {
                self.refuse_call(call, refusal)?;
                return Ok(());
            }
        };
        // INVARIANT (fail closed): required execution control must allow every commit.
        if effect == Effect::Commit
            && let Some(fault) = self
                .control_stop(i, call, tool, &executed, &args_digest, &labels)
                .await
        {
            self.finish_call(
                call,
                CallStatus::StoppedByExecutionControl,
                None,
                Some(fault),
            )?;
            return Ok(());
        }
        // Freshness, last thing before the intent: the provider may have moved on.
        let fresh = self
            .bounded(Bound::Call, surface.is_current(&sight.version))
            .await;
        let provider = &self.spec.steps[i].provider;
        let stale = match fresh {
            Ok(true) => None,
            Ok(false) => Some(Fault::new(
                Code::StaleObservation,
                Layer::Orchestration,
                format!(
                    "`{provider}` changed after observation `{}`: observe again",
                    sight.version
                ),
            )),
            Err(Cut::Cancelled(c)) => {
                let message = format!(
                    "cancelled by {} while `{provider}` was asked whether its observation is current",
                    c.by
                );
                self.cancel = Some(c);
                self.finish_call(
                    call,
                    CallStatus::Cancelled,
                    None,
                    Some(Fault::of(Code::Cancelled, message)),
                )?;
                return Ok(());
            }
            Err(_) => Some(Fault::of(
                Code::FreshnessTimeout,
                format!(
                    "`{provider}` did not say in time whether observation `{}` is still current: nothing was sent",
                    sight.version
                ),
            )),
        };
        if let Some(fault) = stale {
            self.finish_call(call, CallStatus::Rejected, None, Some(fault))?;
            return Ok(());
        }
        // INVARIANT (approvals): the approval is consumed in the same atomic append as the intent.
        let consumed = consume.is_some();
        if let Some(request) = consume {
            self.stage(EventKind::ApprovalConsumed { request, call })?;
        }

        let idempotency_key = idempotency_key(&self.run_id, call);
        self.stage(EventKind::CallDispatched {
            call,
            effect,
            args: executed.clone(),
            args_digest,
            idempotency_key: idempotency_key.clone(),
            provenance: labels,
            narrowed,
        })?;
        // INVARIANT (log first): the intent is durable before the provider is called.
        self.flush().await?;
        warrant_fault::hit("after-intent");
        if consumed {
            warrant_fault::hit("approval-consumed");
        }
        if let Some(h) = handle {
            surface.retire(&[h]);
        }
        let invocation = Invocation {
            run: self.run_id.clone(),
            call,
            tool: tool.to_owned(),
            args: executed,
            effect,
            idempotency_key,
            version: sight.version.clone(),
        };
        self.invoke_and_record(i, surface, invocation).await
    }

    /// How long ago the handle of `call` was issued, as of the last event.
    fn handle_age(&self, call: CallId) -> Option<u64> {
        let handle = self.state.call(call)?.handle?;
        let issued = (handle.decision as usize)
            .checked_sub(1)
            .and_then(|d| self.state.decision_log.get(d))?
            .at_ms;
        Some(self.state.last_at_ms.saturating_sub(issued))
    }

    /// Asks the required execution control about a commit; the fault that stops it, if any.
    async fn control_stop(
        &self,
        i: usize,
        call: CallId,
        tool: &str,
        args: &Arc<Value>,
        args_digest: &str,
        labels: &[provenance::ArgLabel],
    ) -> Option<Fault> {
        let setting = self.rules.control.as_ref()?;
        let step = &self.spec.steps[i];
        let request = CapabilityRequest {
            principal: &self.state.principal,
            handle_age_ms: None,
            run: &self.run_id,
            step: &step.id,
            call,
            provider: &step.provider,
            tool,
            effect: Effect::Commit,
            args,
            args_digest,
            provenance: labels,
            hints: None,
        };
        let verdict = match &setting.control {
            None => ControlVerdict::Indeterminate {
                reason: "execution control is required, but none is configured".into(),
            },
            Some(control) => match self
                .bounded(
                    Bound::Within(setting.timeout_ms),
                    control.evaluate(&request),
                )
                .await
            {
                Ok(v) => v,
                Err(Cut::Cancelled(c)) => ControlVerdict::Indeterminate {
                    reason: format!("cancelled by {} while execution control ruled", c.by),
                },
                Err(_) => ControlVerdict::Indeterminate {
                    reason: format!("no answer within {} ms", setting.timeout_ms),
                },
            },
        };
        match verdict {
            ControlVerdict::Allow => None,
            ControlVerdict::Block { reason } => Some(Fault::new(
                Code::ExecutionControlBlock,
                Layer::Policy,
                reason,
            )),
            ControlVerdict::Indeterminate { reason } => Some(Fault::new(
                Code::ExecutionControlIndeterminate,
                Layer::Policy,
                reason,
            )),
        }
    }

    /// Carries on a call that waited for an approval, now answered.
    async fn redrive(&mut self, call: CallId) -> Result<(), EngineError> {
        let Some(Reopened {
            record,
            i,
            provider,
            surface,
            version,
        }) = self.reopen(call)?
        else {
            return Ok(());
        };
        let actions = self
            .state
            .observations
            .get(&provider)
            .map(|o| o.actions.clone())
            .unwrap_or_else(|| Arc::from(Vec::new()));
        let sight = Sight { version, actions };
        // The handle is judged as of the proposal: an approver's pause does not expire it;
        // freshness of the observation is still checked before the intent.
        self.carry(
            i,
            &sight,
            &surface,
            call,
            &record.tool,
            record.handle,
            &record.proposed,
            &record.claims,
            record.started_at_ms,
        )
        .await
    }

    /// Sends again a call an operator reconciled as not performed and asked to be sent again:
    /// a new call with the same arguments, observed afresh, checked and ruled on again, under a
    /// new idempotency key. No decision proposed it; it uses no handle.
    async fn resend(&mut self, earlier: CallId) -> Result<(), EngineError> {
        let Some(Reopened {
            record, i, surface, ..
        }) = self.reopen(earlier)?
        else {
            return Ok(());
        };
        self.flush().await?;
        let Some(observation) = self.observe(i, &surface).await? else {
            return Ok(());
        };
        let args = record
            .executed
            .clone()
            .unwrap_or_else(|| record.proposed.clone());
        let call = self.state.next_call_id();
        let started_at = self.stage(EventKind::CallStarted {
            call,
            step: self.spec.steps[i].id.clone(),
            tool: record.tool.clone(),
            handle: None,
            args: args.clone(),
            resend_of: Some(earlier),
        })?;
        let sight = Sight {
            version: observation.version,
            actions: observation.actions,
        };
        self.carry(
            i,
            &sight,
            &surface,
            call,
            &record.tool,
            None,
            &args,
            &[],
            started_at,
        )
        .await
    }

    /// Calls the provider and records what came back.
    async fn invoke_and_record(
        &mut self,
        i: usize,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        invocation: Invocation,
    ) -> Result<(), EngineError> {
        let (call, tool, effect) = (invocation.call, invocation.tool.clone(), invocation.effect);
        let answer = match self.bounded(Bound::Call, surface.invoke(invocation)).await {
            Ok(answer) => answer,
            Err(cut) => {
                if matches!(cut, Cut::Cancelled(_)) {
                    surface.cancel(call);
                }
                Err(self.cut(&cut))
            }
        };
        warrant_fault::hit("after-invoke");
        if effect == Effect::Commit
            && let Err(e) = &answer
            && e.kind.may_have_happened()
        {
            // INVARIANT (no effect lost, none repeated): the provider may have performed it.
            // It is never recorded as failed (a retry would repeat it) and never dropped.
            let stage = if e.kind == SurfaceErrorKind::AnswerLost {
                DoubtStage::AnswerLost
            } else {
                DoubtStage::SentNoAnswer
            };
            let args_digest = self
                .state
                .call(call)
                .and_then(|r| r.executed.as_ref())
                .map(|a| canon::digest(a))
                .unwrap_or_default();
            let (_, cause) = call_fault(&tool, e);
            self.stage(EventKind::CallInDoubt {
                call,
                provider: self.spec.steps[i].provider.clone(),
                tool: tool.clone(),
                args_digest,
                reason: format!(
                    "`{tool}` was sent and {} ({}): the provider may have performed it",
                    if stage == DoubtStage::AnswerLost {
                        "its answer was lost"
                    } else {
                        "no answer came"
                    },
                    e.message
                ),
                cause: Some(cause),
                stage: Some(stage),
            })?;
            return Ok(());
        }
        self.record_result(i, call, &tool, answer)
    }

    fn record_result(
        &mut self,
        i: usize,
        call: CallId,
        tool: &str,
        answer: Result<CallOutput, SurfaceError>,
    ) -> Result<(), EngineError> {
        match answer {
            Ok(CallOutput {
                output,
                is_error: false,
            }) => {
                let output = Arc::new(output);
                self.finish_call(call, CallStatus::Ok, Some(output.clone()), None)?;
                self.lift(i, call, tool, &output)?;
            }
            Ok(CallOutput {
                output,
                is_error: true,
            }) => {
                let fault = Fault::new(
                    Code::ProviderError,
                    Layer::Provider,
                    format!("`{tool}` failed: {}", error_message(&output)),
                );
                self.finish_call(
                    call,
                    CallStatus::ProviderError,
                    Some(Arc::new(output)),
                    Some(fault),
                )?;
            }
            Err(e) => {
                let (status, fault) = call_fault(tool, &e);
                self.finish_call(call, status, e.output.map(Arc::new), Some(fault))?;
            }
        }
        Ok(())
    }

    fn finish_call(
        &mut self,
        call: CallId,
        status: CallStatus,
        output: Option<Arc<Value>>,
        fault: Option<Fault>,
    ) -> Result<(), EngineError> {
        self.stage(EventKind::CallFinished {
            call,
            status,
            ruled_args_digest: None,
            narrowed: Vec::new(),
            narrowed_args: None,
            output,
            fault,
        })?;
        Ok(())
    }

    /// Ends a call refused before dispatch, recording what an authority ruled on, if it did.
    fn refuse_call(&mut self, call: CallId, refusal: Refusal) -> Result<(), EngineError> {
        self.stage(EventKind::CallFinished {
            call,
            status: refusal.status,
            ruled_args_digest: refusal.ruled,
            narrowed: refusal.narrowed,
            narrowed_args: refusal.narrowed_args,
            output: None,
            fault: Some(refusal.fault),
        })?;
        Ok(())
    }

    /// The Bridge's checks before the intent, in DESIGN.md's order. Returns the effect, the
    /// arguments to execute and their provenance.
    #[expect(clippy::too_many_arguments, reason = "the parts of one call decision")]
    async fn check_call(
        &mut self,
        i: usize,
        sight: &Sight,
        call: CallId,
        tool: &str,
        handle: Option<HandleId>,
        proposed: &Arc<Value>,
        claims: &[Claim],
        now_ms: u64,
    ) -> Result<Checked, Refusal> {
        let spec = self.spec.clone();
        let step = &spec.steps[i];
        if !step.tools.iter().any(|t| t == tool) {
            return Err(refuse(
                Code::ToolNotAllowed,
                Layer::Model,
                format!(
                    "`{tool}` is not allowed in step `{}` (allowed: {})",
                    step.id,
                    step.tools.join(", ")
                ),
            ));
        }
        // Resolve the handle in the current observation.
        let Some(action) = sight.actions.iter().find(|a| a.name == tool) else {
            // The step allows it and the provider does not offer it: the spec is wrong.
            let offered: Vec<&str> = sight.actions.iter().map(|a| a.name.as_str()).collect();
            return Err(refuse(
                Code::ToolNotOffered,
                Layer::Spec,
                format!(
                    "step `{}` allows `{tool}`, but `{}` does not offer it (it offers: {})",
                    step.id,
                    step.provider,
                    if offered.is_empty() {
                        "nothing".to_owned()
                    } else {
                        offered.join(", ")
                    }
                ),
            ));
        };
        // A call an operator had sent again uses no handle: no decision proposed it.
        let resent = self.state.call(call).is_some_and(|c| c.resend_of.is_some());
        match handle {
            Some(handle) => self
                .state
                .check_handle(handle, tool, i, now_ms)
                .map_err(|fault| Refusal {
                    held: false,
                    status: CallStatus::Rejected,
                    fault,
                    ruled: None,
                    narrowed: Vec::new(),
                    narrowed_args: None,
                })?,
            None if resent => {}
            None => {
                return Err(refuse(
                    Code::UnknownTool,
                    Layer::Model,
                    format!("no handle for `{tool}`"),
                ));
            }
        }

        // Inputs and claims: carried values are checked against evidence, never trusted.
        let mut bindings: Vec<(String, String)> = step
            .inputs
            .iter()
            .map(|(a, r)| (a.clone(), r.clone()))
            .collect();
        for c in claims {
            if !bindings.iter().any(|(a, _)| a == &c.arg) {
                bindings.push((c.arg.clone(), c.carried.clone()));
            }
        }
        let mut executed = if bindings.is_empty() {
            proposed.clone()
        } else {
            Arc::new(self.bind_carried(&bindings, proposed)?)
        };

        self.validate_args(&action.input_schema, tool, &executed)?;
        let mut labels = provenance::label(
            &executed,
            &self.objective_lower,
            &bindings,
            &self.state.output_index,
        );
        let mut args_digest = canon::digest(&executed);
        let mut consume = self
            .authorize(i, call, action, &executed, &args_digest, &labels)
            .await?;

        // Interceptors, in order: each may halt the call or narrow its arguments. Narrowed
        // arguments are validated and ruled on again: narrowing never widens authority.
        let mut narrowed = Vec::new();
        let interceptors = self.engine.interceptors.clone();
        let handle_age_ms = self.handle_age(call);
        for interceptor in interceptors.iter() {
            let request = CapabilityRequest {
                principal: &self.state.principal,
                handle_age_ms,
                run: &self.run_id,
                step: &step.id,
                call,
                provider: &step.provider,
                tool,
                effect: action.effect,
                args: &executed,
                args_digest: &args_digest,
                provenance: &labels,
                hints: action.hints.as_ref(),
            };
            match interceptor.intercept(&request) {
                Interception::Pass => {}
                Interception::Halt { reason } => {
                    return Err(Refusal {
                        held: false,
                        ruled: None,
                        narrowed_args: (!narrowed.is_empty()).then(|| executed.clone()),
                        narrowed,
                        status: CallStatus::Halted,
                        fault: Fault::new(
                            Code::Halted,
                            Layer::Policy,
                            format!("{}: {reason}", interceptor.name()),
                        ),
                    });
                }
                Interception::Narrow { args, reason } => {
                    let args = Arc::new(args);
                    self.validate_args(&action.input_schema, tool, &args)
                        .map_err(|r| Refusal {
                            held: false,
                            ruled: None,
                            narrowed_args: (!narrowed.is_empty()).then(|| executed.clone()),
                            narrowed: narrowed.clone(),
                            status: CallStatus::Halted,
                            fault: Fault::new(
                                Code::Halted,
                                Layer::Policy,
                                format!(
                                    "{}: its narrowed arguments are invalid: {}",
                                    interceptor.name(),
                                    r.fault.message
                                ),
                            ),
                        })?;
                    labels = provenance::label(
                        &args,
                        &self.objective_lower,
                        &bindings,
                        &self.state.output_index,
                    );
                    narrowed.push(Narrowing {
                        by: interceptor.name().to_owned(),
                        reason,
                    });
                    let narrowed_digest = canon::digest(&args);
                    match self
                        .authorize(i, call, action, &args, &narrowed_digest, &labels)
                        .await
                    {
                        Ok(used) => consume = used,
                        Err(refused) => {
                            return Err(Refusal {
                                held: refused.held,
                                narrowed,
                                narrowed_args: Some(args),
                                ..refused
                            });
                        }
                    }
                    args_digest = narrowed_digest;
                    executed = args;
                }
            }
        }
        Ok(Checked {
            effect: action.effect,
            executed,
            args_digest,
            labels,
            narrowed,
            consume,
        })
    }

    /// Validates arguments against an action's input schema.
    fn validate_args(
        &mut self,
        schema: &Arc<Value>,
        tool: &str,
        args: &Value,
    ) -> Result<(), Refusal> {
        let validator = self.validator(schema).map_err(|reason| {
            refuse(
                Code::SchemaUnusable,
                Layer::Provider,
                format!("the schema of `{tool}` cannot be used: {reason}"),
            )
        })?;
        let errors: Vec<String> = validator
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(refuse(
                Code::InvalidArguments,
                Layer::Model,
                format!("arguments of `{tool}` are invalid: {}", errors.join("; ")),
            ))
        }
    }

    /// INVARIANT (fail closed): anything but allow stops the call before the provider. An ask
    /// is met only by an approval bound to these arguments and this schema; otherwise a durable
    /// request is made and the call is held. Returns the approval to consume, if one is used.
    async fn authorize(
        &mut self,
        i: usize,
        call: CallId,
        action: &warrant_core::event::ActionRecord,
        args: &Arc<Value>,
        args_digest: &str,
        labels: &[provenance::ArgLabel],
    ) -> Result<Option<String>, Refusal> {
        let (tool, effect, schema) = (action.name.as_str(), action.effect, &action.input_schema);
        let step = &self.spec.steps[i];
        let args_digest = args_digest.to_owned();
        let request = CapabilityRequest {
            hints: action.hints.as_ref(),
            principal: &self.state.principal,
            handle_age_ms: self.handle_age(call),
            run: &self.run_id,
            step: &step.id,
            call,
            provider: &step.provider,
            tool,
            effect,
            args,
            args_digest: &args_digest,
            provenance: labels,
        };
        // INVARIANT (denied stays denied): a person's denial of this effect on this target
        // holds whatever the authority says now.
        let denial = self.state.approvals.iter().find_map(|a| match &a.status {
            ApprovalStatus::Denied { by, reason }
                if a.provider == step.provider && a.args_digest == args_digest =>
            {
                Some(format!("denied by {by}: {reason} (request {})", a.id))
            }
            _ => None,
        });
        if let Some(message) = denial {
            return Err(Refusal {
                ruled: Some(args_digest),
                ..refuse(Code::ApprovalDenied, Layer::Policy, message)
            });
        }
        // INVARIANT (fail closed): an authority that gives no verdict in time, or a run
        // cancelled while it deliberates, stops the call; the provider is never called.
        let answered = self
            .bounded(Bound::Call, self.rules.authority.evaluate(&request))
            .await;
        let verdict = match answered {
            Ok(verdict) => verdict,
            Err(Cut::Cancelled(c)) => {
                let message = format!(
                    "cancelled by {} while the authority ruled: {}",
                    c.by, c.reason
                );
                self.cancel = Some(c);
                return Err(Refusal {
                    status: CallStatus::Cancelled,
                    ..refuse(Code::Cancelled, Layer::Runtime, message)
                });
            }
            Err(_) => {
                return Err(Refusal {
                    ruled: Some(args_digest),
                    ..refuse(
                        Code::PolicyTimeout,
                        Layer::Policy,
                        format!(
                            "the authority gave no verdict within `call_timeout_ms` ({} ms) \
                             or before the run's deadline",
                            self.spec.limits.call_timeout_ms
                        ),
                    )
                });
            }
        };
        let refusal = match verdict {
            Verdict::Allow { .. } => return Ok(None),
            Verdict::Deny { reasons } => {
                refuse(Code::PolicyDenied, Layer::Policy, reasons.join("; "))
            }
            Verdict::Indeterminate { reason } => {
                refuse(Code::PolicyIndeterminate, Layer::Policy, reason)
            }
            Verdict::Ask { reason } => {
                return self.approval(
                    i,
                    call,
                    tool,
                    effect,
                    args,
                    &args_digest,
                    schema,
                    labels,
                    reason,
                );
            }
        };
        Err(Refusal {
            ruled: Some(args_digest),
            ..refusal
        })
    }

    /// Meets an ask with an approval, or makes a durable request and holds the call.
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts of one capability request"
    )]
    fn approval(
        &mut self,
        i: usize,
        call: CallId,
        tool: &str,
        effect: Effect,
        args: &Arc<Value>,
        args_digest: &str,
        schema: &Arc<Value>,
        labels: &[provenance::ArgLabel],
        reason: String,
    ) -> Result<Option<String>, Refusal> {
        // Digested only on an ask: the schema the approval binds.
        let schema_digest = canon::digest(schema);
        let schema_digest = schema_digest.as_str();
        let now = self.state.last_at_ms;
        let provider = self.spec.steps[i].provider.clone();
        let ruled = |r: Refusal| Refusal {
            ruled: Some(args_digest.to_owned()),
            ..r
        };
        let live = |until: &Option<u64>| until.is_none_or(|u| now < u);
        // A call already dispatched (repeated at re-entry) cannot start a new request.
        let dispatched = self.state.call(call).is_some_and(|c| c.executed.is_some());
        for a in self.state.approvals.iter().filter(|a| a.call == call) {
            let bound = a.args_digest == args_digest && a.schema_digest == schema_digest;
            match &a.status {
                ApprovalStatus::Approved { until_ms, .. } if bound && live(until_ms) => {
                    // Already consumed by this very call (a repeat at re-entry): nothing new.
                    if a.consumed_by.contains(&call) {
                        return Ok(None);
                    }
                    return Ok(Some(a.id.clone()));
                }
                ApprovalStatus::Expired if bound => {
                    return Err(ruled(refuse(
                        Code::ApprovalExpired,
                        Layer::Policy,
                        format!("approval request {} expired unanswered", a.id),
                    )));
                }
                _ => {}
            }
        }
        if let Some(a) = self.state.approvals.iter().find(|a| {
            a.provider == provider
                && a.tool == tool
                && a.schema_digest == schema_digest
                && matches!(&a.status, ApprovalStatus::Approved { scope: ApprovalScope::Run, until_ms } if live(until_ms))
        }) {
            return Ok(Some(a.id.clone()));
        }
        if dispatched {
            return Err(ruled(refuse(Code::ApprovalRequired, Layer::Policy, reason)));
        }
        let id = format!("{}-a{}", self.run_id, self.state.approvals.len() + 1);
        let principal = self
            .state
            .decider
            .as_ref()
            .map_or_else(|| "agent:unknown".to_owned(), |d| format!("agent:{d}"));
        let requested = EventKind::ApprovalRequested {
            request: id,
            call,
            step: self.spec.steps[i].id.clone(),
            principal,
            provider,
            tool: tool.to_owned(),
            effect,
            args_digest: args_digest.to_owned(),
            schema_digest: schema_digest.to_owned(),
            args: args.clone(),
            provenance: labels.to_vec(),
            reason,
            proposed_scope: ApprovalScope::Once,
            expires_at_ms: now.saturating_add(self.spec.limits.approval_ttl_ms),
        };
        if let Err(e) = self.stage(requested) {
            return Err(refuse(
                Code::ApprovalUnrecorded,
                Layer::Runtime,
                format!("the approval request could not be recorded: {e}"),
            ));
        }
        Err(Refusal {
            held: true,
            ..refuse(Code::ApprovalRequired, Layer::Policy, "held for approval")
        })
    }

    /// Fills bound arguments from carried state and checks claimed ones against it.
    fn bind_carried(
        &self,
        bindings: &[(String, String)],
        proposed: &Value,
    ) -> Result<Value, Refusal> {
        let mut args = proposed.clone();
        let Some(map) = args.as_object_mut() else {
            return Err(refuse(
                Code::InvalidArguments,
                Layer::Model,
                "arguments must be a JSON object",
            ));
        };
        for (arg, source) in bindings {
            let carried = CarriedRef::parse(source)
                .and_then(|r| self.state.carried.get(&r.to_string()))
                .ok_or_else(|| {
                    refuse(
                        Code::UnknownCarried,
                        Layer::Model,
                        format!(
                            "`{arg}` claims carried value `{source}`, which the run has not carried"
                        ),
                    )
                })?;
            match map.get(arg) {
                None => {
                    map.insert(arg.clone(), (*carried.value).clone());
                }
                Some(v) if v == &*carried.value => {}
                Some(v) => {
                    return Err(refuse(
                        Code::CarriedValueMismatch,
                        Layer::Model,
                        format!(
                            "`{arg}` = {v} but the evidence for `{source}` is {} (from {} {})",
                            carried.value, carried.lineage.call, carried.lineage.tool
                        ),
                    ));
                }
            }
        }
        Ok(args)
    }

    fn validator(&mut self, schema: &Arc<Value>) -> crate::cache::Compiled {
        let key = Arc::as_ptr(schema) as usize;
        if let Some((_, v)) = self.validators.get(&key) {
            return v.clone();
        }
        if self.validators.len() >= VALIDATORS_MAX {
            self.validators.clear();
        }
        let compiled = self.engine.cache.validator(schema);
        self.validators
            .insert(key, (schema.clone(), compiled.clone()));
        compiled
    }

    /// Lifts the step's published outputs from a successful result of `tool`.
    fn lift(
        &mut self,
        i: usize,
        call: CallId,
        tool: &str,
        output: &Arc<Value>,
    ) -> Result<(), EngineError> {
        let step = &self.spec.steps[i];
        let lifted: Vec<(String, Value, String)> = step
            .publishes
            .iter()
            .filter(|(_, p)| p.from == tool)
            .filter_map(|(name, p)| {
                output
                    .pointer(&p.path)
                    .map(|v| (format!("{}.{name}", step.id), v.clone(), p.path.clone()))
            })
            .collect();
        let step_id: StepId = step.id.clone();
        for (name, value, path) in lifted {
            let lineage = Lineage {
                run: self.run_id.clone(),
                step: step_id.clone(),
                call,
                tool: tool.to_owned(),
                path,
            };
            self.stage(EventKind::Carried {
                name,
                value: Arc::new(value),
                lineage,
            })?;
        }
        Ok(())
    }
}

/// The idempotency key of a call: stable for the intent, unique across runs (run ids are).
pub(crate) fn idempotency_key(run: &RunId, call: CallId) -> String {
    format!("wk-{run}-{call}")
}

fn error_message(output: &Value) -> String {
    warrant_core::text::provider_message(output)
}

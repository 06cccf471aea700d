//! One run: the loop of DESIGN.md and the Bridge.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use warrant_core::codes::Code;
use warrant_core::event::{
    CallStatus, EVENTS_FORMAT, Effect, Event, EventKind, Fault, Layer, Narrowing, Outcome, StepEnd,
};
use warrant_core::fold::{ApprovalStatus, Next, RunState};
use warrant_core::ids::{CallId, RunId, StepId};
use warrant_core::ports::{CancelRequest, Decider, Driver};
use warrant_core::provenance;
use warrant_core::spec::{Spec, StepSpec};

use crate::time::TimeSource;
use crate::{Engine, EngineError, RunResult, Surfaces};

mod authorize;
mod bridge;
mod decide;
mod delegate;
mod invoke;
mod recover;
mod restart;
mod wait;

use bridge::{ProposedCall, refuse};
pub(crate) use wait::cancel_watch;
use wait::{Bound, Cut};

/// How often a live run asks the store whether it was cancelled.
const CANCEL_POLL_MS: u64 = 100;

/// Room made for the events of one commit: a decision, its call's start and dispatch, and
/// the answer of the call before it.
const PENDING_CAPACITY: usize = 8;

/// Most compiled argument schemas kept per run.
const VALIDATORS_MAX: usize = 256;

pub(crate) struct Run<'a> {
    engine: &'a Engine,
    pub(crate) run_id: RunId,
    spec: Arc<Spec>,
    decider: &'a dyn Decider,
    surfaces: &'a Surfaces,
    /// The surface of the step last asked for ([`Run::surface_of`]): a run asks for the same
    /// step's at every decision and call.
    last_surface: Option<(usize, Arc<dyn warrant_core::ports::Surface>)>,
    time: TimeSource,
    state: RunState,
    /// Events applied to the fold, not yet appended.
    pending: Vec<Arc<Event>>,
    /// The sequence the store has (the last appended).
    durable_seq: u64,
    /// Compiled argument schemas, by the address of the schema they were compiled from (the
    /// `Arc` is kept so the address is not reused). Ordered: a run uses a few tools, and an
    /// address is found by comparing integers rather than hashing one at every call.
    validators: BTreeMap<usize, (Arc<Value>, crate::cache::Compiled)>,
    /// Replay only: stop before staging the event with this sequence (where the recorded
    /// process stopped).
    pub(crate) stop_at: Option<u64>,
    /// A cancellation seen and not yet acted on.
    cancel: Option<CancelRequest>,
    /// When the store was last asked for a cancellation (live clock).
    cancel_polled_ms: Option<u64>,
    /// Its decider gave its turn back without deciding ([`Decider::parked`]): this drive ends.
    parked: bool,
    /// The objective, prepared once for provenance matching.
    objective: Arc<provenance::Objective>,
    /// Milliseconds spent before the run (or this re-entry) started, to record once.
    pub(crate) setup_ms: Option<u64>,
    /// Who asked for this re-entry, recorded in its `run_resumed`.
    pub(crate) resumed_by: Option<String>,
    /// The provenance rules a run it starts records (a replay: the ones the log recorded).
    pub(crate) provenance: Option<u32>,
    /// The bound of a provider's message a run it starts records (a replay: the log's).
    pub(crate) messages: Option<std::num::NonZeroU16>,
    /// The epoch of this process's lease on the run (1 for a run it starts).
    pub(crate) epoch: u64,
    /// Its authority and execution control.
    rules: crate::rules::Rules,
    /// A new child run: the run that delegated to it (recorded in its `run_started`).
    pub(crate) parent: Option<warrant_core::event::ParentLink>,
    /// Replay only: the recorded log, whose `child_finished` / `child_waiting` events answer
    /// for the children (each child's own log is replayed on its own).
    pub(crate) recorded: Option<Arc<[Arc<Event>]>>,
    /// What this run read of the other runs of its tree (denials that cross it).
    /// Shared by every run of its tree this process drives.
    pub(crate) tree: Arc<authorize::Tree>,
    /// The tools a step's observation has that its principal could never be allowed: step,
    /// observation version, tools.
    hidden: Option<(usize, String, Arc<[String]>)>,
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

/// A call as the Bridge judges it: in which step, which action, with which arguments (and
/// their digest), and where each argument value came from.
struct Judged<'a> {
    step: &'a StepSpec,
    call: CallId,
    action: &'a warrant_core::event::ActionRecord,
    args: &'a Arc<Value>,
    args_digest: &'a str,
    labels: &'a [provenance::ArgLabel],
}

/// A call started earlier, reopened to be carried on (`Run::reopen`).
struct Reopened {
    record: warrant_core::fold::CallRecord,
    i: usize,
    provider: String,
    surface: Arc<dyn warrant_core::ports::Surface>,
    version: String,
}

/// Step `i` of `spec`. Step indices come from the fold, which keeps one state per step of the
/// run's spec: an index past them is a broken invariant, and the run stops.
fn step_of(spec: &Spec, i: usize) -> Result<&StepSpec, EngineError> {
    spec.steps.get(i).ok_or(EngineError::NoStep(i))
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
    ruled: Option<Box<str>>,
    /// Narrowings applied before it was refused, and the arguments they left.
    narrowed: Vec<Narrowing>,
    narrowed_args: Option<Arc<Value>>,
    /// Not refused: held for approval (a durable request was made; the call waits).
    held: bool,
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
        let run_id = state
            .run_id()
            .cloned()
            .unwrap_or_else(|| RunId(String::new()));
        let durable_seq = state.last_seq();
        let answered = answers_of(&state);
        let objective = match (state.inputs(), answered.is_empty()) {
            ([], true) => engine.cache.objective(&spec),
            (given, _) => Arc::new(
                provenance::Objective::new(&spec.objective)
                    .with_inputs(given)
                    .with_answers(answered),
            ),
        };
        Run {
            engine,
            run_id,
            spec,
            decider,
            surfaces,
            last_surface: None,
            time,
            state,
            pending: Vec::new(),
            durable_seq,
            validators: BTreeMap::new(),
            stop_at: None,
            cancel: None,
            cancel_polled_ms: None,
            parked: false,
            objective,
            setup_ms: None,
            resumed_by: None,
            provenance: Some(warrant_core::provenance::RULES),
            messages: u16::try_from(warrant_core::text::PROVIDER_MESSAGE_MAX)
                .ok()
                .and_then(std::num::NonZeroU16::new),
            epoch: 1,
            rules,
            parent: None,
            recorded: None,
            tree: Arc::default(),
            hidden: None,
        }
    }

    /// Re-enters after the process that ran this run stopped.
    pub(crate) async fn reenter(&mut self) -> Result<RunResult, EngineError> {
        if self.state.outcome().is_some() {
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
        let (setup_ms, by) = (self.setup_ms.take(), self.resumed_by.take());
        // Read before `run_resumed`, which takes the call over (it may be sent from now on).
        let unsent = in_flight
            .and_then(|c| self.state.call(c))
            .is_some_and(|c| c.unsent);
        // A queued run (nothing recorded past its start) is taken up, not resumed.
        if self.state.last_seq() == 1 {
            self.stage(EventKind::RunTakenUp { setup_ms, by })?;
        } else {
            self.stage(EventKind::RunResumed {
                in_flight,
                setup_ms,
                by,
            })?;
        }
        if let Some(call) = in_flight {
            self.recover(call, unsent).await?;
        }
        self.resume().await
    }

    /// This process as the run's driver, at `now_ms`.
    fn driver(&self, now_ms: u64) -> Driver {
        Driver {
            holder: self.engine.holder.clone(),
            now_ms,
            epoch: self.epoch,
        }
    }

    /// The surface of step `i`'s provider.
    fn surface_of(
        &mut self,
        i: usize,
    ) -> Result<Arc<dyn warrant_core::ports::Surface>, EngineError> {
        if let Some((step, surface)) = &self.last_surface
            && *step == i
        {
            return Ok(surface.clone());
        }
        let surface = self.find_surface(i)?;
        self.last_surface = Some((i, surface.clone()));
        Ok(surface)
    }

    /// The surface of step `i`'s provider, looked up.
    fn find_surface(&self, i: usize) -> Result<Arc<dyn warrant_core::ports::Surface>, EngineError> {
        let provider = &step_of(&self.spec, i)?.provider;
        self.surfaces
            .get(provider)
            .cloned()
            .ok_or_else(|| EngineError::MissingSurface(provider.clone()))
    }

    /// The run's result as it stands.
    fn result(&mut self) -> RunResult {
        RunResult {
            run_id: self.run_id.clone(),
            outcome: self.state.outcome().cloned(),
            waiting_on: self
                .state
                .calls()
                .iter()
                .filter(|c| c.in_doubt || (c.status.is_none() && c.awaiting.is_some()))
                .map(|c| c.id)
                .collect(),
            state: Box::new(std::mem::take(&mut self.state)),
            parked: match &self.time {
                TimeSource::Live(clock) if self.parked => Some(crate::Parked {
                    _kept: self.kept(clock),
                    store: self.engine.store.clone(),
                    cancel_ids: self.cancel_ids(),
                    // INVARIANT (every wait bounded): let go, the run still ends at its
                    // deadline, as its decider's wait would have.
                    due: self.bound_ms(Bound::Deadline).map(|(left, _)| {
                        tokio::time::Instant::now() + std::time::Duration::from_millis(left)
                    }),
                }),
                _ => None,
            },
        }
    }

    /// Applies an event to the fold and queues it for the store. The clock is read once per
    /// event. Returns the event's timestamp.
    fn stage(&mut self, kind: EventKind) -> Result<u64, EngineError> {
        let seq = self.state.last_seq() + 1;
        if self.stop_at == Some(seq) {
            return Err(EngineError::Stopped(seq));
        }
        let at_ms = self.time.stamp(seq);
        if matches!(kind, EventKind::ApprovalRequested { .. }) {
            self.tree
                .any_asked
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // Made in its `Arc` at once: the event is not moved again on its way to the commit.
        let event = Arc::new(Event { seq, at_ms, kind });
        self.state.apply(&event)?;
        self.pending.push(event);
        Ok(at_ms)
    }

    /// Appends everything staged, atomically, and waits until the store holds it.
    async fn flush(&mut self) -> Result<(), EngineError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // The next commit's events (a decision, its call and their answers) fit unmoved; an
        // ended run makes no next commit.
        let room = if self.state.outcome().is_some() {
            0
        } else {
            PENDING_CAPACITY
        };
        let events = std::mem::replace(&mut self.pending, Vec::with_capacity(room));
        let expected = self.durable_seq;
        let last = events.last().map_or(expected, |e| e.seq);
        let holds_result = events
            .iter()
            .any(|e| matches!(e.kind, EventKind::CallFinished { .. }));
        let driver = self.driver(self.state.last_at_ms());
        self.engine
            .append(&self.run_id, expected, events, Some(&driver))
            .await?;
        self.durable_seq = last;
        if holds_result {
            warrant_fault::hit(warrant_fault::FaultPoint::AfterResult);
        }
        Ok(())
    }

    /// Whether everything staged is safe to lose in a crash, so it can wait for the next
    /// decision's commit: the answer of a read (its result and the values carried from it; the
    /// read is sent again) and a step's start (the step is started again, as it was: nothing
    /// outside the run saw it). A commit's answer never waits: it is made durable at once.
    fn only_replayable_pending(&self) -> bool {
        let mut after_read = false;
        self.pending.iter().all(|e| match &e.kind {
            EventKind::CallFinished { call, .. } => {
                after_read = self
                    .state
                    .call(*call)
                    .is_some_and(|c| c.effect == Some(Effect::Read));
                after_read
            }
            EventKind::Carried { .. } => after_read,
            EventKind::StepStarted { .. } => true,
            _ => false,
        })
    }

    /// Replay only: where the recorded process stopped (`stop_at`), what it had staged is
    /// appended, as every event before its re-entry is in its log: commits need not fall
    /// where the replay's do (a read's result waits for the next decision's commit).
    pub(crate) async fn stopped(
        &mut self,
        ended: Result<RunResult, EngineError>,
    ) -> Result<RunResult, EngineError> {
        if matches!(ended, Err(EngineError::Stopped(_))) {
            self.flush().await?;
        }
        ended
    }

    pub(crate) async fn drive(&mut self) -> Result<RunResult, EngineError> {
        self.stage_start()?;
        self.flush().await?;
        self.resume().await
    }

    /// Records the run's start and nothing else, driven by nobody: it waits for a worker to
    /// claim it (`Leases::claim_ready`) and carry it on as a re-entry.
    pub(crate) async fn queue(&mut self) -> Result<(), EngineError> {
        self.stage_start()?;
        let events = std::mem::take(&mut self.pending);
        self.engine
            .append(&self.run_id, self.durable_seq, events, None)
            .await?;
        Ok(())
    }

    fn stage_start(&mut self) -> Result<(), EngineError> {
        let setup_ms = self.setup_ms.take();
        let decider = self.decider.identity();
        let agent = decider.to_string();
        self.stage(EventKind::RunStarted {
            format: EVENTS_FORMAT.into(),
            run_id: self.run_id.clone(),
            spec_hash: self.engine.cache.spec_hash(&self.spec),
            spec: self.spec.clone(),
            decider,
            authority: self.rules.authority.describe().map(Arc::new),
            principal: Some(Box::new(warrant_core::event::Principal {
                tenant: self.engine.acting_for.0.clone(),
                user: self.engine.acting_for.1.clone(),
                agent,
            })),
            setup_ms,
            execution_control: self.rules.describe_control().map(Arc::new),
            provenance: self.provenance,
            messages: self.messages,
            inputs: self
                .parent
                .is_none()
                .then(|| self.engine.inputs.clone())
                .flatten(),
            parent: self.parent.clone().map(Box::new),
            build: self.engine.build.clone(),
        })?;
        if !self.state.inputs().is_empty() {
            // Values the starter gave: a user's words, as the objective's are.
            self.objective = Arc::new(
                provenance::Objective::new(&self.spec.objective).with_inputs(self.state.inputs()),
            );
        }
        Ok(())
    }

    /// Drives the run from whatever its state is until it ends.
    async fn resume(&mut self) -> Result<RunResult, EngineError> {
        loop {
            // INVARIANT (cancellation): checked between every two actions of the run.
            if self.state.outcome().is_none()
                && let Some(c) = self.cancel_due().await
            {
                if !self.end_cancelled(c).await? {
                    break;
                }
                continue;
            }
            match self.state.next() {
                Next::Ended => break,
                Next::Wait(call) => {
                    if !self.wait_on(call)? {
                        break;
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
                    let id = step_of(&self.spec, step)?.id.clone();
                    self.stage(EventKind::StepSkipped {
                        step: id,
                        blocked_by,
                        fault,
                    })?;
                }
                Next::Start(i) => {
                    let step = step_of(&self.spec, i)?;
                    let (id, wait) = (step.id.clone(), step.wait);
                    self.stage(EventKind::StepStarted {
                        step: id.clone(),
                        provider: step.provider.clone(),
                    })?;
                    if let Some(wait) = wait {
                        self.sleep(id, &wait, "the step's `wait`".into())?;
                    }
                }
                // A question waits for a person's answer, as an approval does.
                Next::Question => break,
                Next::Sleep { step, until } => {
                    // Judged at the last event's time (a re-entry's `run_resumed`), as an
                    // approval's expiry is, so a replay wakes it at the same point.
                    if self.state.last_at_ms() < until {
                        break;
                    }
                    let step = step_of(&self.spec, step)?.id.clone();
                    self.stage(EventKind::TimerFired { step })?;
                }
                Next::Continue(i) if step_of(&self.spec, i)?.delegate.is_some() => {
                    if !self.delegate(i).await? {
                        break;
                    }
                }
                Next::Continue(i) => {
                    self.decide_once(i).await?;
                    if self.parked {
                        break;
                    }
                }
                Next::Redrive(call) => self.redrive(call).await?,
                Next::Resend(call) => self.resend(call).await?,
            }
        }
        self.flush().await?;
        Ok(self.result())
    }

    /// Ends the run on cancellation request `c`: its children first (each sees its
    /// ancestor's cancellation and ends cancelled, an effect of theirs in doubt kept in their
    /// report), then a call still held for approval, then the run. `false` when the run
    /// cannot end yet ([`Run::can_end`]).
    async fn end_cancelled(&mut self, c: CancelRequest) -> Result<bool, EngineError> {
        // Children end first: each sees its ancestor's cancellation and ends
        // cancelled (an effect of theirs in doubt stays in their report).
        if let Some(i) = self.state.current()
            && self
                .state
                .step(i)
                .children
                .iter()
                .any(|c| c.outcome.is_none())
        {
            self.cancel = Some(c.clone());
            self.drive_children(i).await?;
        }
        // A call still held for approval was never dispatched: it ends with the run.
        // (One dispatched after its approval is past holding: if its answer was lost
        // it stays in doubt, for a reconciliation.)
        if let Some(held) = self.state.calls().last().filter(|c| {
            c.awaiting.is_some() && c.status.is_none() && c.idempotency_key.is_none() && !c.in_doubt
        }) {
            let why = if c.close {
                "the session closed"
            } else {
                "the run was cancelled"
            };
            let fault = Fault::new(
                Code::Cancelled,
                Layer::Runtime,
                format!(
                    "`{}` cancelled: {why} while it waited for approval",
                    held.tool
                ),
            );
            let id = held.id;
            self.finish_call(id, CallStatus::Cancelled, None, Some(fault))?;
        }
        if !self.can_end(&c) {
            return Ok(false);
        }
        let outcome = if c.close {
            Outcome::Closed {
                by: c.by,
                reason: c.reason,
            }
        } else {
            Outcome::Cancelled {
                by: c.by,
                reason: c.reason,
            }
        };
        self.stage(EventKind::RunFinished { outcome })?;
        Ok(true)
    }

    /// Waits on call `call` (held for approval, or in doubt): its request expired, or its
    /// doubt left past `wait_max_ms`, is recorded; `false` while it is still for a person.
    fn wait_on(&mut self, call: CallId) -> Result<bool, EngineError> {
        // An approval request unanswered past its time expires; the call is then
        // refused when it is carried on. Judged at the last event's time (a
        // re-entry's `run_resumed`), so a replay judges it the same way.
        let expired = self
            .state
            .calls()
            .iter()
            .find(|c| c.id == call)
            .and_then(|c| c.awaiting.clone())
            .filter(|r| {
                self.state.approval(r).is_some_and(|a| {
                    a.status == ApprovalStatus::Pending
                        && self.state.last_at_ms() >= a.expires_at_ms
                })
            });
        match expired {
            Some(request) => {
                self.stage(EventKind::ApprovalExpired { request })?;
            }
            // A call in doubt no operator reconciled within `wait_max_ms`: the
            // run ends, the effect left unsettled in its report.
            None if self.state.in_doubt().any(|c| c.id == call)
                && wait::expired(
                    &self.state,
                    &self.spec.limits,
                    call,
                    self.state.last_at_ms(),
                ) =>
            {
                let w = self.spec.limits.wait_max_ms.unwrap_or_default();
                self.exhausted("wait_max_ms", w)?;
            }
            None => return Ok(false),
        }
        Ok(true)
    }

    /// Whether `c` ends the run now. A session whose client left with an effect in doubt
    /// does not end yet: it waits for the reconciliation (`warrant reconcile`), which nothing
    /// can record after a run's end; re-entered then, it closes.
    fn can_end(&self, c: &CancelRequest) -> bool {
        !(c.close && self.state.in_doubt().next().is_some())
    }

    /// `step` asks the person the run acts for `prompt`: the run records the question and
    /// waits for its answer. A question whose schema does not compile, or one a child run asks
    /// (its root's process drives it), ends the step as the decider's fault.
    pub(super) fn ask(
        &mut self,
        step: StepId,
        prompt: String,
        schema: Arc<Value>,
    ) -> Result<(), EngineError> {
        let problem = if self.is_child() {
            Some("a child run cannot ask a question: only its root asks a person".to_owned())
        } else {
            self.engine
                .cache
                .validator(&schema)
                .err()
                .map(|e| format!("the answer's schema does not compile: {e}"))
        };
        if let Some(why) = problem {
            return self.refuse_step(step, Code::InvalidQuestion, why);
        }
        let question = format!("{}-q{}", self.run_id, self.state.questions().len() + 1);
        self.stage(EventKind::QuestionAsked {
            question,
            step,
            prompt,
            schema,
        })?;
        Ok(())
    }

    /// `step` sleeps as `wait` asks: the run records when it wakes and, unless that is now,
    /// stops here, held by the store. A wait a run cannot make (too far off, or in a child run,
    /// which its parent drives) ends the step, attributed to whoever asked.
    pub(super) fn sleep(
        &mut self,
        step: StepId,
        wait: &warrant_core::timer::Wait,
        reason: String,
    ) -> Result<(), EngineError> {
        let until = if self.is_child() {
            Err("a child run cannot sleep: its parent drives it".to_owned())
        } else {
            wait.wake_at(self.state.last_at_ms())
        };
        match until {
            Ok(until_ms) => {
                self.stage(EventKind::TimerSet {
                    step,
                    until_ms,
                    reason,
                })?;
                Ok(())
            }
            Err(why) => self.refuse_step(step, Code::InvalidWait, why),
        }
    }

    /// Whether this run is a child (its root's process drives it).
    fn is_child(&self) -> bool {
        self.parent.is_some() || self.state.parent().is_some()
    }

    /// Ends `step` not attained: the decider asked for what a run cannot do (`code`, `why`).
    fn refuse_step(&mut self, step: StepId, code: Code, why: String) -> Result<(), EngineError> {
        let fault = Fault::new(code, Layer::Model, why);
        self.stage(EventKind::StepFinished {
            step,
            end: StepEnd::NotAttained { fault },
        })?;
        Ok(())
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
        let step = step_of(&self.spec, i)?;
        let step_decisions = self
            .state
            .steps()
            .get(i)
            .ok_or(EngineError::NoStep(i))?
            .decisions;
        let step_max = step.decisions_max.unwrap_or(limits.step_decisions_max);
        if self.state.driven_ms(now_ms) >= limits.deadline_ms {
            self.exhausted("deadline_ms", limits.deadline_ms)?;
            return Ok(true);
        }
        // What the run's children spent counts against its limits too.
        if self.state.spent().decisions >= limits.decisions_max {
            self.exhausted("decisions_max", u64::from(limits.decisions_max))?;
            return Ok(true);
        }
        if step_decisions >= step_max {
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
}

/// A provider's own message in its error answer, as long as the run's bound allows.
fn error_message(state: &RunState, output: &Value) -> String {
    warrant_core::text::provider_message_within(output, state.message_max())
}

/// The answers people gave the run's questions: question id and answer.
fn answers_of(state: &RunState) -> Vec<(&str, &Value)> {
    state
        .questions()
        .iter()
        .filter_map(|q| q.answer.as_deref().map(|a| (q.id.as_str(), a)))
        .collect()
}

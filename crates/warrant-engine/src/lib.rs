//! Warrant's engine: the run loop and the Bridge, the single mediated path from a decision to
//! a provider effect (DESIGN.md "The run loop").
//!
//! The engine is an async shell around `warrant-core`: it asks core's fold what to do next,
//! performs it through the ports (surfaces, decider, authority, store), and turns every answer
//! into events that are appended, and applied to the fold, before the run acts on them.

mod approver;
pub mod authority;
mod cache;
pub mod hub;
pub mod intercept;
pub mod lease;
pub mod replay;
mod rules;
mod run;
mod scope;
pub mod time;

use std::collections::HashMap;
use std::sync::Arc;

use warrant_core::fold::{FoldError, RunState};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{
    Authority, Clock, Decider, EventStore, IdGen, Interceptor, StoreError, Surface,
};
use warrant_core::{Outcome, Spec};

pub use authority::{AllOf, AllowAll, Allowance, Delegated, DenyTools, Floor, RuleList};
pub use hub::{Subscriber, SubscriberFailure};
pub use intercept::{CapNumber, HaltTools};
pub use lease::LeaseKeeper;
pub use rules::rebuild_authority;
pub use time::{FixedClock, SequentialIds, SystemClock, TickingClock};

/// Up to five reasons `value` does not meet `validator`'s schema, each at its place in it.
pub fn schema_errors(validator: &jsonschema::Validator, value: &serde_json::Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect()
}

/// The surfaces of one run, by the provider names its spec uses.
pub type Surfaces = HashMap<String, Arc<dyn Surface>>;

/// Ends every provider's connection in order, all at once ([`Surface::shutdown`]): what a
/// front door does when nothing more will be asked of them. (Dropped without this, a stdio
/// server's process group is killed at once.)
pub async fn shutdown(surfaces: &Surfaces) {
    let mut ending: Vec<Option<warrant_core::ports::BoxFuture<'_, ()>>> =
        surfaces.values().map(|s| Some(s.shutdown())).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in &mut ending {
            if let Some(end) = slot {
                if end.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
}

/// The engine could not keep recording a run: the run is left interrupted in the store.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store refused or failed an append.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// An event would break the log's invariants (a bug in Warrant; the run stops here).
    #[error("invariant broken: {0}")]
    Invariant(#[from] FoldError),
    /// A step index the run's spec does not have (a bug in Warrant; the run stops here).
    #[error("invariant broken: the run's spec has no step {0}")]
    NoStep(usize),
    /// A provider the spec names has no surface.
    #[error("no surface for provider `{0}`")]
    MissingSurface(String),
    /// The store has no such run.
    #[error("no run `{0}` in the store")]
    UnknownRun(RunId),
    /// An answer to an approval request cannot be taken.
    #[error("{0}")]
    Answer(String),
    /// Who answers may not answer this request (the run's starter, where a front door says
    /// so; someone the run's approve policies do not permit).
    #[error("{0}")]
    Forbidden(String),
    /// A replay reached the point where the recorded process stopped.
    #[error("stopped at event {0}")]
    Stopped(u64),
    /// Another process drives the run.
    #[error(
        "run `{run}` is driven by another process ({holder}, heard from {age_ms} ms ago): not re-entering it"
    )]
    Held {
        /// The run.
        run: RunId,
        /// Who drives it.
        holder: String,
        /// How long ago it was heard from.
        age_ms: u64,
    },
    /// A provider that stopped could not be started again within the run's limits: the run
    /// stopped here, interrupted, with nothing lost; `resume` starts its providers again.
    #[error(
        "run `{run}` is interrupted: {reason}; `warrant resume {run}` carries it on once the provider can run"
    )]
    Interrupted {
        /// The run.
        run: RunId,
        /// Which provider, and why it could not be started.
        reason: String,
    },
    /// The log holds what this build cannot act on (events of unknown types, a newer format).
    #[error("run `{run}`: {reason}: not acting on a log this build does not understand")]
    Unreadable {
        /// The run.
        run: RunId,
        /// What is wrong.
        reason: String,
    },
    /// An operator's input cannot be taken (a reconciliation of a call not in doubt, ...).
    #[error("{0}")]
    Refused(String),
    /// A person's answer does not fit what was asked (a question's schema): nothing written.
    #[error("{0}")]
    Unfit(String),
    /// The run's authority or execution control cannot be built (a spec's policy that does
    /// not load, one this engine has no source for, a recorded one that does not rebuild).
    #[error("{0}")]
    Rules(String),
}

/// How often an operator's input is tried again when another process appended first.
const OPERATOR_ATTEMPTS_MAX: usize = 5;

/// An approver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Approve: this call once, or this action for the rest of the run; until a time.
    Approve {
        /// How far it reaches.
        scope: warrant_core::event::ApprovalScope,
        /// Until when (ms since the epoch).
        until_ms: Option<u64>,
        /// The arguments the person approved instead of the ones asked about (an approval
        /// of this call only): validated and ruled on again when the call goes on.
        edited: Option<Arc<serde_json::Value>>,
    },
    /// Deny, with a reason.
    Deny {
        /// Why.
        reason: String,
    },
}

/// What became of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answered {
    /// It was recorded.
    Recorded,
    /// The same answer was already recorded: nothing changed.
    AlreadyAnswered,
}

/// How a run ended, with its folded state.
#[derive(Debug)]
pub struct RunResult {
    /// The run.
    pub run_id: RunId,
    /// How it ended; `None` while it waits (see `waiting_on`).
    pub outcome: Option<Outcome>,
    /// The calls in doubt the run waits on: reconcile them, then resume.
    pub waiting_on: Vec<CallId>,
    /// Its state, folded from its log.
    pub state: Box<RunState>,
    /// Set when the run stopped because its decider gave its turn back
    /// ([`Decider::parked`](warrant_core::ports::Decider::parked)): it goes on when resumed.
    pub parked: Option<Parked>,
}

/// A run stopped, neither ended nor waiting for a person, because its decider had nothing to
/// decide yet: while this lives, the process keeps the run's lease (renewed with the others'),
/// so no other process takes it over; [`Engine::resume`] carries it on (a new lease), and
/// dropping this lets the lease lapse. Whoever holds it resumes the run when its decider has
/// something to decide, or when [`Parked::cancelled`] or [`Parked::due`] says the run has
/// something to do without it.
pub struct Parked {
    _kept: lease::Keeping,
    store: Arc<dyn EventStore>,
    cancel_ids: Vec<RunId>,
    /// When the run's deadline comes.
    due: Option<tokio::time::Instant>,
}

impl Parked {
    /// Resolves once a cancellation of the run (or of an ancestor) is requested, from any
    /// process: resumed then, the run ends cancelled.
    pub async fn cancelled(&self) -> warrant_core::ports::CancelRequest {
        run::cancel_watch(self.store.clone(), self.cancel_ids.clone()).await
    }

    /// Resolves when the run's deadline comes (`limits.deadline_ms`, a person's waits not
    /// counted): resumed then, the run ends `exhausted`, as it would have had it been held.
    pub async fn due(&self) {
        match self.due {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Parked")
    }
}

/// Runs specs. Cheap to share: every part is behind an `Arc`.
#[derive(Clone)]
pub struct Engine {
    pub(crate) store: Arc<dyn EventStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdGen>,
    pub(crate) authority: Arc<dyn Authority>,
    /// Whether the embedder set the authority (it then rules re-entered runs too).
    pub(crate) authority_set: bool,
    pub(crate) hub: hub::Hub,
    pub(crate) cache: Arc<cache::Shared>,
    pub(crate) interceptors: Arc<Vec<Arc<dyn Interceptor>>>,
    pub(crate) control: Option<ControlSetting>,
    /// Tenant and user new runs act for (the agent is the decider).
    pub(crate) acting_for: (String, String),
    /// Who this process is, as the runs it drives name it in their lease.
    pub(crate) holder: Arc<str>,
    /// Renews the leases of its runs that wait, together (and with other engines' given it).
    pub(crate) keeper: lease::LeaseKeeper,
    /// Builds the policies and execution control a spec names, and rebuilds recorded ones.
    pub(crate) policies: Option<Arc<dyn warrant_core::ports::PolicySource>>,
    /// Policy files that rule every new run together with its spec's (`--policy`).
    pub(crate) policy_files: Arc<[String]>,
    /// The operator's policy floor: files every new run obeys besides its own rules.
    pub(crate) floor: Arc<[String]>,
    /// Policy files a caller added: obeyed besides the run's own rules (never merged into
    /// them, so they can only narrow).
    pub(crate) narrowing: Arc<[String]>,
    /// Prepares the decider and providers of child runs (delegation).
    pub(crate) children: Option<Arc<dyn warrant_core::ports::ChildRuns>>,
    /// Whether the principal a run acts for may approve its requests (a person at their own
    /// terminal, yes; a server's tenants, only if its operator says so).
    pub(crate) self_approval: bool,
    /// The values a new run's starter gives its spec's inputs.
    pub(crate) inputs: Option<Arc<std::collections::BTreeMap<String, serde_json::Value>>>,
    /// The build of Warrant new runs name in `run_started` (none unless the embedder says).
    pub(crate) build: Option<Arc<warrant_core::event::BuildInfo>>,
}

/// Execution control, required for commit calls.
#[derive(Clone)]
pub(crate) struct ControlSetting {
    pub(crate) control: Option<Arc<dyn warrant_core::ports::ExecutionControl>>,
    pub(crate) timeout_ms: u64,
}

impl Engine {
    /// An engine over `store` with the system clock, time-ordered ids and the allow-all
    /// authority. Change any of them with the `with_*` methods.
    pub fn new(store: Arc<dyn EventStore>) -> Engine {
        Engine {
            hub: hub::Hub::new(store.clone()),
            keeper: lease::LeaseKeeper::default(),
            store,
            clock: Arc::new(SystemClock),
            ids: Arc::new(time::TimeOrderedIds::default()),
            authority: Arc::new(AllowAll),
            authority_set: false,
            cache: Arc::new(cache::Shared::default()),
            interceptors: Arc::new(Vec::new()),
            control: None,
            acting_for: ("local".to_owned(), "local".to_owned()),
            holder: Arc::from(format!("pid {}@{}", std::process::id(), lease::host())),
            policies: None,
            policy_files: Arc::from([]),
            floor: Arc::from([]),
            narrowing: Arc::from([]),
            children: None,
            self_approval: true,
            inputs: None,
            build: None,
        }
    }

    /// Names this process in the leases of the runs it drives (default `pid <pid>@<host>`).
    pub fn with_holder(mut self, holder: &str) -> Engine {
        self.holder = Arc::from(holder);
        self
    }

    /// Renews the leases of this engine's waiting runs with `keeper`, together with those of
    /// every engine given the same one: one write per store and one wake-up a period for all
    /// of them (a front door that makes an engine per run or session shares one keeper).
    pub fn with_lease_keeper(mut self, keeper: LeaseKeeper) -> Engine {
        self.keeper = keeper;
        self
    }

    /// Uses this clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Engine {
        self.clock = clock;
        self
    }

    /// Uses this id generator.
    pub fn with_ids(mut self, ids: Arc<dyn IdGen>) -> Engine {
        self.ids = ids;
        self
    }

    /// Rules on calls with this authority: in new runs, together with their spec's policies;
    /// in runs this engine re-enters, instead of the one they recorded (without it, a
    /// re-entered run is ruled by exactly what it recorded, rebuilt).
    pub fn with_authority(mut self, authority: Arc<dyn Authority>) -> Engine {
        self.authority = authority;
        self.authority_set = true;
        self
    }

    /// Requires execution control for every commit call: `control` must allow it within
    /// `timeout_ms`, or the call is stopped (`stopped_by_execution_control`). With `None` the
    /// requirement stands and nothing can allow: every commit is stopped (fail closed).
    pub fn with_execution_control(
        mut self,
        control: Option<Arc<dyn warrant_core::ports::ExecutionControl>>,
        timeout_ms: u64,
    ) -> Engine {
        self.control = Some(ControlSetting {
            control,
            timeout_ms,
        });
        self
    }

    /// Builds what a spec names — its `policy:` files, its `execution_control:` endpoint — with
    /// `source`, and rebuilds what a run recorded when it is re-entered. Without one, a spec
    /// that names either is refused (never run unguarded), and a run that recorded a kind of
    /// authority only a source builds is not re-entered.
    pub fn with_policies(mut self, source: Arc<dyn warrant_core::ports::PolicySource>) -> Engine {
        self.policies = Some(source);
        self
    }

    /// Rules every new run with these policy files (absolute paths) too, read together with
    /// its spec's `policy:` as one policy set (built by the policy source).
    pub fn with_policy_files(mut self, paths: Vec<String>) -> Engine {
        self.policy_files = Arc::from(paths);
        self
    }

    /// A new run is given these values of its spec's inputs (recorded in `run_started`,
    /// bound as `input.<name>`, labelled `input` wherever an argument holds them). Checked
    /// against the spec's input schemas by whoever starts it (`warrant_app`).
    pub fn with_inputs(
        mut self,
        inputs: std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Engine {
        self.inputs = (!inputs.is_empty()).then(|| Arc::new(inputs));
        self
    }

    /// New runs record `build` in their `run_started`: which build of the program started them
    /// (a front door names its own; an embedder its program's). A run's build is evidence, not
    /// a rule: re-entry and replay neither need nor compare it.
    pub fn with_build(mut self, build: warrant_core::event::BuildInfo) -> Engine {
        self.build = Some(Arc::new(build));
        self
    }

    /// Whether the principal a run acts for may approve the run's own requests (default:
    /// yes, a person at their own terminal). A front door for others turns it off.
    pub fn with_self_approval(mut self, allowed: bool) -> Engine {
        self.self_approval = allowed;
        self
    }

    /// Every new run obeys the Cedar policies in `paths` (files or folders) besides its own
    /// rules: the operator's floor, recorded in `run_started` and rebuilt at re-entry.
    pub fn with_floor(mut self, paths: Vec<String>) -> Engine {
        self.floor = Arc::from(paths);
        self
    }

    /// Every new run obeys the Cedar policies in `paths` besides its own rules (a caller's
    /// policies: they narrow, never widen).
    pub fn with_narrowing(mut self, paths: Vec<String>) -> Engine {
        self.narrowing = Arc::from(paths);
        self
    }

    /// Runs the children of steps that delegate, with deciders and providers `children`
    /// prepares. Without it, a spec that delegates is refused (never half run).
    pub fn with_children(mut self, children: Arc<dyn warrant_core::ports::ChildRuns>) -> Engine {
        self.children = Some(children);
        self
    }

    /// New runs act for this tenant and user (recorded in the run; policies see them).
    pub fn acting_for(mut self, tenant: &str, user: &str) -> Engine {
        self.acting_for = (tenant.to_owned(), user.to_owned());
        self
    }

    /// Adds an interceptor at the end of the chain: it sees each call after authority allowed
    /// it and before dispatch, and may halt it or narrow its arguments.
    pub fn with_interceptor(mut self, interceptor: Arc<dyn Interceptor>) -> Engine {
        let mut chain: Vec<Arc<dyn Interceptor>> = self.interceptors.iter().cloned().collect();
        chain.push(interceptor);
        self.interceptors = Arc::new(chain);
        self
    }

    /// Adds a subscriber: it sees every event of every run this engine records, in order,
    /// on its own task. One that fails or lags never blocks the run or other subscribers.
    pub fn subscribe(&self, name: &str, subscriber: Box<dyn Subscriber>) {
        self.hub.add(name, subscriber);
    }

    /// Waits until every subscriber has seen every event published so far, then reports the
    /// subscribers that failed.
    pub async fn drain_subscribers(&self) -> Vec<SubscriberFailure> {
        self.hub.drain().await
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.store
    }

    /// Runs `spec` to its outcome with `decider` choosing and `surfaces` reaching providers.
    pub async fn run(
        &self,
        spec: Arc<Spec>,
        decider: &dyn Decider,
        surfaces: &Surfaces,
    ) -> Result<RunResult, EngineError> {
        self.run_with_setup(spec, decider, surfaces, None).await
    }

    /// [`Engine::run`], recording `setup_ms`: the time spent before the run started (reading
    /// the spec, starting and connecting to its providers), so its report tells the whole
    /// time.
    pub async fn run_with_setup(
        &self,
        spec: Arc<Spec>,
        decider: &dyn Decider,
        surfaces: &Surfaces,
        setup_ms: Option<u64>,
    ) -> Result<RunResult, EngineError> {
        // The run lives on the heap: the future a caller spawns is a pointer, not the run's
        // kilobytes, which every move of the future (into a task, out of it) would copy (a
        // thousand runs started at once: 13 % less CPU per run). It is bound before it is
        // driven: `new_run(..)?.drive()` kept the `?`'s copy of it alive across the await too.
        Box::pin(async move {
            let mut run = self.new_run(spec, decider, surfaces, setup_ms)?;
            run.drive().await
        })
        .await
    }

    /// Records a new run of `spec` and leaves it for a worker to drive (a fleet's server
    /// queues runs this way): the run is ruled, its decider identified and its start recorded
    /// exactly as [`Engine::run_with_setup`] would, but nothing more is done here.
    pub async fn enqueue(
        &self,
        spec: Arc<Spec>,
        decider: &dyn Decider,
        setup_ms: Option<u64>,
    ) -> Result<RunId, EngineError> {
        // Nothing is asked of a provider here: the process that drives the run reaches them.
        let none = Surfaces::new();
        let mut run = self.unchecked_run(spec, decider, &none, setup_ms)?;
        run.queue().await?;
        Ok(run.run_id.clone())
    }

    /// A new run of `spec`, ruled and named, not yet recorded.
    fn new_run<'a>(
        &'a self,
        spec: Arc<Spec>,
        decider: &'a dyn Decider,
        surfaces: &'a Surfaces,
        setup_ms: Option<u64>,
    ) -> Result<run::Run<'a>, EngineError> {
        self.check_surfaces(&spec, surfaces)?;
        self.unchecked_run(spec, decider, surfaces, setup_ms)
    }

    /// A new run of `spec`, ruled and named, its surfaces not checked against its steps.
    fn unchecked_run<'a>(
        &'a self,
        spec: Arc<Spec>,
        decider: &'a dyn Decider,
        surfaces: &'a Surfaces,
        setup_ms: Option<u64>,
    ) -> Result<run::Run<'a>, EngineError> {
        let rules = self.rules_for(&spec)?;
        let mut run = run::Run::start(
            self,
            self.ids.run_id(),
            spec,
            decider,
            surfaces,
            time::TimeSource::Live(self.clock.clone()),
            rules,
        );
        run.setup_ms = setup_ms;
        Ok(run)
    }

    /// Refuses a spec whose steps name a provider with no surface, or that delegates when
    /// this engine cannot run children.
    fn check_surfaces(&self, spec: &Spec, surfaces: &Surfaces) -> Result<(), EngineError> {
        for step in &spec.steps {
            if step.delegate.is_some() {
                if self.children.is_none() {
                    return Err(EngineError::Rules(format!(
                        "step `{}` delegates to child runs, and this engine cannot run them \
                         (`Engine::with_children`): not running it half",
                        step.id
                    )));
                }
            } else if !surfaces.contains_key(&step.provider) {
                return Err(EngineError::MissingSurface(step.provider.clone()));
            }
        }
        Ok(())
    }

    /// Asks for `run` to be cancelled. The process running it (this one or another sharing
    /// the store) ends it `cancelled` at its next check: between two actions, or while it
    /// waits on the decider or a provider (within 100 ms). A run no process is driving is
    /// cancelled when it is resumed.
    pub async fn cancel(&self, run: &RunId, by: &str, reason: &str) -> Result<(), EngineError> {
        let request = warrant_core::ports::CancelRequest {
            by: by.to_owned(),
            reason: reason.to_owned(),
            close: false,
        };
        self.store.request_cancel(run, request).await?;
        Ok(())
    }

    /// The one path by which events reach the store: appended after `expected` (as `driver`,
    /// or as an operator's input with `None`), then published to this engine's subscribers.
    pub(crate) async fn append(
        &self,
        run: &RunId,
        expected: u64,
        events: Vec<Arc<warrant_core::Event>>,
        driver: Option<&warrant_core::ports::Driver>,
    ) -> Result<(), EngineError> {
        let published = self.hub.has_subscribers().then(|| events.clone());
        self.store.append(run, expected, events, driver).await?;
        if let Some(events) = published {
            self.hub.publish(run, &events);
        }
        Ok(())
    }

    /// Answers an approval request (`<run>-a<n>`), as `by`. A repeated identical answer is a
    /// no-op reported as such; an answer to a request that expired, or that belongs to a
    /// finished run, is refused. The run goes on when it is resumed.
    pub async fn answer(
        &self,
        request: &str,
        answer: Answer,
        by: &str,
    ) -> Result<Answered, EngineError> {
        self.answer_timed(request, answer, by)
            .await
            .map(|(answered, _)| answered)
    }

    /// [`Engine::answer`], with how long the request had waited when the answer was recorded
    /// (`None` when nothing new was recorded).
    pub async fn answer_timed(
        &self,
        request: &str,
        answer: Answer,
        by: &str,
    ) -> Result<(Answered, Option<u64>), EngineError> {
        operator_input(|| self.answer_once(request, &answer, by))
            .await
            .unwrap_or_else(|| {
                Err(EngineError::Answer(format!(
                    "`{request}`: the run's log kept changing while the answer was recorded; try again"
                )))
            })
    }

    async fn answer_once(
        &self,
        request: &str,
        answer: &Answer,
        by: &str,
    ) -> Result<(Answered, Option<u64>), EngineError> {
        use warrant_core::event::{ApprovalScope, Event, EventKind};
        let refuse = |m: String| EngineError::Answer(m);
        let run = RunId::of_request(request).ok_or_else(|| {
            refuse(format!(
                "`{request}` is not an approval request id (`<run>-a<n>`)"
            ))
        })?;
        let events = self.log_of(&run).await?;
        let state = RunState::from_events(events.iter().map(|e| &**e))?;
        understood(&run, &state)?;
        let approval = state
            .approval(request)
            .ok_or_else(|| refuse(format!("no approval request `{request}`")))?;
        if let Some(outcome) = &state.outcome() {
            return Err(refuse(format!(
                "`{request}` belongs to run `{run}`, which ended {}",
                outcome.name()
            )));
        }
        if let Some(done) = answered_already(approval, answer, request, by)? {
            return Ok((done, None));
        }
        let now = self.clock.now_ms();
        answer_fits(approval, answer, request, now)?;
        let kind = match answer {
            Answer::Approve {
                scope,
                until_ms,
                edited,
            } => {
                if approval.approvers > 1 && edited.is_some() {
                    return Err(refuse(format!(
                        "`{request}` needs {} people to approve the same arguments: an approval with edits cannot be one of them",
                        approval.approvers
                    )));
                }
                // INVARIANT (who may approve): the run's starter only where the front door
                // allows it, and whoever the run's approve policies permit.
                let rule = self
                    .rule_approver(&run, &events, &state, approval, by)
                    .await
                    .map_err(EngineError::Forbidden)?;
                let given = u32::try_from(approval.approved_by.len()).unwrap_or(u32::MAX);
                EventKind::ApprovalResolved {
                    request: request.to_owned(),
                    approved: true,
                    scope: Some(*scope),
                    until_ms: *until_ms,
                    by: by.to_owned(),
                    reason: String::new(),
                    edited_args: edited.clone(),
                    awaiting: approval.approvers.saturating_sub(given + 1),
                    rule: Some(rule.into()),
                }
            }
            Answer::Deny { reason } => EventKind::ApprovalResolved {
                request: request.to_owned(),
                approved: false,
                scope: None::<ApprovalScope>,
                until_ms: None,
                by: by.to_owned(),
                reason: reason.clone(),
                edited_args: None,
                awaiting: 0,
                // Refusing narrows: whoever may answer may deny.
                rule: Some("a denial: anyone who may answer may refuse".into()),
            },
        };
        let event = Event {
            seq: state.last_seq() + 1,
            at_ms: now,
            kind,
        };
        self.append(&run, state.last_seq(), vec![Arc::new(event)], None)
            .await?;
        Ok((
            Answered::Recorded,
            Some(now.saturating_sub(approval.requested_at_ms)),
        ))
    }

    /// Answers `question` (`<run>-q<n>`) with `answer` for `by`: the answer must satisfy the
    /// question's schema (refused with the schema's reasons otherwise, nothing recorded). The
    /// run becomes `ready`; resuming it carries the step on with the answer. Answering again
    /// with the same answer changes nothing; a different one is refused.
    pub async fn answer_question(
        &self,
        question: &str,
        answer: Arc<serde_json::Value>,
        by: &str,
    ) -> Result<Answered, EngineError> {
        operator_input(|| self.answer_question_once(question, &answer, by))
            .await
            .unwrap_or_else(|| {
                Err(EngineError::Answer(format!(
                    "`{question}`: the run's log kept changing while the answer was recorded; try again"
                )))
            })
    }

    async fn answer_question_once(
        &self,
        question: &str,
        answer: &Arc<serde_json::Value>,
        by: &str,
    ) -> Result<Answered, EngineError> {
        use warrant_core::event::{Event, EventKind};
        let refuse = |m: String| EngineError::Answer(m);
        let (run, _) = RunId::of_question(question)
            .ok_or_else(|| refuse(format!("`{question}` is not a question id (`<run>-q<n>`)")))?;
        let events = self.log_of(&run).await?;
        let state = RunState::from_events(events.iter().map(|e| &**e))?;
        understood(&run, &state)?;
        let asked = state
            .question(question)
            .ok_or_else(|| refuse(format!("no question `{question}`")))?;
        if let Some(given) = &asked.answer {
            return if **given == **answer {
                Ok(Answered::AlreadyAnswered)
            } else {
                Err(refuse(format!(
                    "`{question}` was answered already, by {}",
                    asked.by.as_deref().unwrap_or("someone")
                )))
            };
        }
        if let Some(outcome) = &state.outcome() {
            return Err(refuse(format!(
                "`{question}` belongs to run `{run}`, which ended {}",
                outcome.name()
            )));
        }
        let validator = self
            .cache
            .validator(&asked.schema)
            .map_err(|e| refuse(format!("`{question}`'s schema does not compile: {e}")))?;
        let wrong = schema_errors(&validator, answer);
        if !wrong.is_empty() {
            return Err(EngineError::Unfit(format!(
                "the answer to `{question}` does not fit its schema: {}",
                wrong.join("; ")
            )));
        }
        let event = Event {
            seq: state.last_seq() + 1,
            at_ms: self.clock.now_ms(),
            kind: EventKind::QuestionAnswered {
                question: question.to_owned(),
                answer: answer.clone(),
                by: by.to_owned(),
            },
        };
        self.append(&run, state.last_seq(), vec![Arc::new(event)], None)
            .await?;
        Ok(Answered::Recorded)
    }

    /// Re-enters a run whose process stopped: folds its log, settles the call whose result was
    /// lost (a read is re-invoked; a commit is re-invoked only when that is safe by
    /// construction, otherwise it is put in doubt), and drives the run on. A finished run is
    /// returned as it is; a run with an effect in doubt returns waiting. A run another live
    /// process drives is not re-entered ([`EngineError::Held`]); neither is a log this build
    /// cannot fully read ([`EngineError::Unreadable`]).
    pub async fn resume(
        &self,
        run_id: &RunId,
        decider: &dyn Decider,
        surfaces: &Surfaces,
    ) -> Result<RunResult, EngineError> {
        self.resume_with_setup(run_id, decider, surfaces, None, None)
            .await
    }

    /// [`Engine::resume`], recording the time spent connecting to providers first and who
    /// asked for the re-entry (`tenant/user`), if a person did.
    pub async fn resume_with_setup(
        &self,
        run_id: &RunId,
        decider: &dyn Decider,
        surfaces: &Surfaces,
        setup_ms: Option<u64>,
        by: Option<String>,
    ) -> Result<RunResult, EngineError> {
        let state = self.fold(run_id).await?;
        let Some(spec) = state.shared_spec().cloned() else {
            return Err(EngineError::UnknownRun(run_id.clone()));
        };
        if state.outcome().is_some() {
            return Ok(RunResult {
                run_id: run_id.clone(),
                outcome: state.outcome().cloned(),
                waiting_on: Vec::new(),
                state: Box::new(state),
                parked: None,
            });
        }
        if let Some(link) = state.parent() {
            return Err(EngineError::Refused(format!(
                "run `{run_id}` is a child of `{}`: it is driven with its tree, by resuming `{}`",
                link.run,
                root_of(run_id)
            )));
        }
        self.check_surfaces(&spec, surfaces)?;
        let rules =
            self.rules_recorded(run_id, &spec, state.authority(), state.execution_control())?;
        let epoch = self.claim(run_id).await?;
        let mut run = run::Run::from_state(
            self,
            state,
            spec,
            decider,
            surfaces,
            time::TimeSource::Live(self.clock.clone()),
            rules,
        );
        run.setup_ms = setup_ms;
        run.resumed_by = by;
        run.epoch = epoch;
        run.reenter().await
    }

    /// Takes the lease on `run_id` for this process: its epoch. A holder that was a process on
    /// this machine and is gone holds nothing: the lease is taken over at once rather than
    /// waited out. A live holder elsewhere is [`EngineError::Held`].
    async fn claim(&self, run_id: &RunId) -> Result<u64, EngineError> {
        use warrant_core::store::Claim;
        let driver = warrant_core::ports::Driver {
            holder: self.holder.clone(),
            now_ms: self.clock.now_ms(),
            epoch: 0,
        };
        let held = match self.store.claim(run_id, &driver).await? {
            Claim::Taken { epoch } => return Ok(epoch),
            Claim::Held(held) => held,
        };
        if lease::alive(&held.holder) == Some(false) {
            let dead = warrant_core::ports::Driver {
                holder: Arc::from(held.holder.as_str()),
                now_ms: driver.now_ms,
                epoch: 0,
            };
            self.store.release(run_id, &dead).await?;
            if let Claim::Taken { epoch } = self.store.claim(run_id, &driver).await? {
                return Ok(epoch);
            }
        }
        Err(EngineError::Held {
            run: run_id.clone(),
            holder: held.holder,
            age_ms: driver.now_ms.saturating_sub(held.heartbeat_ms),
        })
    }

    /// The run's state, folded from its log; refused when the log holds what this build
    /// cannot act on.
    pub async fn fold(&self, run_id: &RunId) -> Result<RunState, EngineError> {
        let events = self.log_of(run_id).await?;
        let state = RunState::from_events(events.iter().map(|e| &**e))?;
        understood(run_id, &state)?;
        Ok(state)
    }

    /// `run_id`'s log; an error when the store has no such run.
    async fn log_of(&self, run_id: &RunId) -> Result<Vec<Arc<warrant_core::Event>>, EngineError> {
        let events: Vec<Arc<warrant_core::Event>> = self
            .store
            .read(run_id, 1)
            .await?
            .into_iter()
            .map(|s| s.event)
            .collect();
        if events.is_empty() {
            return Err(EngineError::UnknownRun(run_id.clone()));
        }
        Ok(events)
    }

    /// Records an operator's word on a call in doubt: it happened, or it did not (and, with
    /// `resend`, that it must be sent again: a new call, ruled on again, under a new
    /// idempotency key, when the run is resumed). Refused for a call not in doubt and for a
    /// run that has ended: nothing follows `run_finished`.
    pub async fn reconcile(
        &self,
        run_id: &RunId,
        call: CallId,
        happened: bool,
        resend: bool,
        by: &str,
        note: &str,
    ) -> Result<(), EngineError> {
        operator_input(|| self.reconcile_once(run_id, call, happened, resend, by, note))
            .await
            .unwrap_or_else(|| {
                Err(EngineError::Refused(format!(
                    "run `{run_id}`: its log kept changing while the reconciliation was recorded; try again"
                )))
            })
    }

    async fn reconcile_once(
        &self,
        run_id: &RunId,
        call: CallId,
        happened: bool,
        resend: bool,
        by: &str,
        note: &str,
    ) -> Result<(), EngineError> {
        use warrant_core::event::{Event, EventKind};
        let state = self.fold(run_id).await?;
        if let Some(outcome) = &state.outcome() {
            return Err(EngineError::Refused(format!(
                "run `{run_id}` already ended {}: nothing can be recorded after its end",
                outcome.name()
            )));
        }
        if !state.in_doubt().any(|c| c.id == call) {
            return Err(EngineError::Refused(not_in_doubt(&state, run_id, call)));
        }
        if happened && resend {
            return Err(EngineError::Refused(
                "an effect that happened cannot also be sent again".into(),
            ));
        }
        let event = Event {
            seq: state.last_seq() + 1,
            at_ms: self.clock.now_ms(),
            kind: EventKind::CallReconciled {
                call,
                happened,
                by: by.to_owned(),
                note: note.to_owned(),
                resend,
            },
        };
        self.append(run_id, state.last_seq(), vec![Arc::new(event)], None)
            .await?;
        Ok(())
    }
}

/// Whether `approval` was answered already: the same answer again is
/// [`Answered::AlreadyAnswered`], another one is refused; `None` while it waits for this one.
fn answered_already(
    approval: &warrant_core::fold::Approval,
    answer: &Answer,
    request: &str,
    by: &str,
) -> Result<Option<Answered>, EngineError> {
    use warrant_core::fold::ApprovalStatus;
    let refuse = |m: String| EngineError::Answer(m);
    let same = match (&approval.status, answer) {
        // One of several approvers approving again: nothing changes.
        (ApprovalStatus::Pending, Answer::Approve { .. })
            if approval.approved_by.iter().any(|(who, ..)| who == by) =>
        {
            return Err(refuse(format!(
                "`{by}` approved `{request}` already: it needs {} different people",
                approval.approvers
            )));
        }
        (ApprovalStatus::Pending, _) => None,
        (
            ApprovalStatus::Approved { scope, until_ms },
            Answer::Approve {
                scope: s,
                until_ms: u,
                edited: e,
            },
        ) => Some(
            scope == s && until_ms == u && approval.edited.as_ref().map(|(v, _)| v) == e.as_ref(),
        ),
        (ApprovalStatus::Denied { .. }, Answer::Deny { .. }) => Some(true),
        (ApprovalStatus::Expired, _) => {
            return Err(refuse(format!("`{request}` expired unanswered")));
        }
        _ => Some(false),
    };
    match same {
        Some(true) => return Ok(Some(Answered::AlreadyAnswered)),
        Some(false) => {
            return Err(refuse(format!(
                "`{request}` was already answered differently"
            )));
        }
        None => {}
    }
    Ok(None)
}

/// Whether `answer` can be given to `approval` at `now`: an approval that holds for some
/// time, before the request expires, with a scope it proposed, edits for one call only.
fn answer_fits(
    approval: &warrant_core::fold::Approval,
    answer: &Answer,
    request: &str,
    now: u64,
) -> Result<(), EngineError> {
    use warrant_core::event::ApprovalScope;
    let refuse = |m: String| EngineError::Answer(m);
    if let Answer::Approve {
        until_ms: Some(until),
        ..
    } = answer
        && *until <= now
    {
        return Err(refuse(format!(
            "an approval until {until} ms since the epoch would hold for no time: that is not later than now ({now})"
        )));
    }
    if now >= approval.expires_at_ms {
        // The run's own process records the expiry when it carries on.
        return Err(refuse(format!("`{request}` expired unanswered")));
    }
    if let Answer::Approve {
        scope: ApprovalScope::Plan,
        ..
    } = answer
        && approval.proposed_scope != ApprovalScope::Plan
    {
        return Err(refuse(format!(
            "`{request}` did not propose the run's plan: approve it with scope `once` or `run`"
        )));
    }
    if let Answer::Approve {
        scope: ApprovalScope::Run | ApprovalScope::Plan,
        edited: Some(_),
        ..
    } = answer
    {
        return Err(refuse(
            "edited arguments approve this one call: answer with scope `once`".to_owned(),
        ));
    }
    Ok(())
}

/// Records an operator's input (`attempt` reads the log, judges and appends). Another process
/// may append between the reading and the appending (the run itself, another operator): then it
/// is read and judged again, up to [`OPERATOR_ATTEMPTS_MAX`] times; `None` when every attempt
/// met a conflict.
async fn operator_input<T, F, Fut>(mut attempt: F) -> Option<Result<T, EngineError>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, EngineError>>,
{
    for _ in 0..OPERATOR_ATTEMPTS_MAX {
        match attempt().await {
            Err(EngineError::Store(StoreError::Conflict { .. })) => continue,
            other => return Some(other),
        }
    }
    None
}

/// The id of the root of `run`'s tree of delegations: itself when it is no child (a child is
/// `<parent>.<n>`).
pub fn root_of(run: &RunId) -> RunId {
    RunId(run.0.split('.').next().unwrap_or(&run.0).to_owned())
}

/// Refuses a log this build cannot act on: events of types it does not know, or a format
/// newer than its own.
pub fn understood(run_id: &RunId, state: &RunState) -> Result<(), EngineError> {
    if let Some((seq, kind)) = state.unrecognized().first() {
        return Err(EngineError::Unreadable {
            run: run_id.clone(),
            reason: format!("event {seq} has type `{kind}`, which this build does not know"),
        });
    }
    if !state.format().is_empty() && state.format() != warrant_core::event::EVENTS_FORMAT {
        return Err(EngineError::Unreadable {
            run: run_id.clone(),
            reason: format!(
                "its log is `{}`; this build writes `{}`",
                state.format(),
                warrant_core::event::EVENTS_FORMAT
            ),
        });
    }
    Ok(())
}

/// Why call `call` of `run` cannot be reconciled: there is no such call, someone settled it
/// already (who, and how), or it never was in doubt (how it stands).
fn not_in_doubt(state: &warrant_core::fold::RunState, run: &RunId, call: CallId) -> String {
    let Some(c) = state.call(call) else {
        let known = state.calls().len();
        return format!(
            "run `{run}` has no call {call} (its calls are c1 to c{known}; `warrant show {run}` \
             lists them)"
        );
    };
    if let Some(settled) = &c.reconciled {
        let (by, note) = &**settled;
        let how = if c.status == Some(warrant_core::event::CallStatus::Ok) {
            "it happened"
        } else if c.resend {
            "it did not happen, and it is sent again"
        } else {
            "it did not happen"
        };
        let note = if note.is_empty() {
            String::new()
        } else {
            format!(" (\"{note}\")")
        };
        return format!(
            "call {call} of run `{run}` was already reconciled by {by}: {how}{note}; a \
             reconciliation is recorded once"
        );
    }
    let stands = match c.status {
        Some(status) => format!("it ended {status}"),
        None if c.awaiting.is_some() => "it waits for an approval".to_owned(),
        None => "it has not ended".to_owned(),
    };
    format!(
        "call {call} of run `{run}` is not in doubt ({stands}): only a call in doubt is reconciled"
    )
}

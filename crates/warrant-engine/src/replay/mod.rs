//! Replay: re-executes a run from its log (recorded observations, decisions and results; no
//! provider or decider is called) and checks that the regenerated events are identical to the
//! recorded ones, byte for byte.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use warrant_core::codes::Code;
use warrant_core::event::{CallStatus, DeciderIdentity, Event, EventKind, encode};
use warrant_core::fold::RunState;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{
    ApproverRequest, ApproverVerdict, Authority, BoxFuture, CapabilityRequest, ControlVerdict,
    DecideError, Decided, Decider, ExecutionControl, IdGen, Interception, Interceptor, Verdict,
};
use warrant_core::projection::Projection;

use crate::time::TimeSource;
use crate::{Engine, EngineError};

mod surfaces;

use surfaces::replay_surfaces;

/// The result of a replay: where, if anywhere, the regenerated log differs from the recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayCheck {
    /// Events recorded.
    pub recorded: usize,
    /// Events regenerated.
    pub regenerated: usize,
    /// The first difference.
    pub divergence: Option<Divergence>,
    /// The engine stopped with an error while replaying (the log does not fold).
    pub error: Option<String>,
}

/// The first event that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Its sequence.
    pub seq: u64,
    /// The recorded encoding (absent when the replay produced more events).
    pub recorded: Option<String>,
    /// The regenerated encoding (absent when the replay produced fewer).
    pub regenerated: Option<String>,
}

/// Why a log cannot be replayed at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// It does not start with `run_started`.
    #[error("the log does not begin with `run_started`")]
    NoStart,
    /// The engine failed while replaying.
    #[error("{0}")]
    Engine(#[from] EngineError),
}

/// Re-executes the run recorded in `events` with recorded answers only, and compares.
///
/// A log that a process re-entered (`run_resumed`) is replayed in segments: each segment runs
/// until the sequence where the recorded process stopped, and the next one re-enters from the
/// regenerated log, as the real process did. Events an operator appended between segments
/// (reconciliations) are inputs, copied as recorded.
pub async fn replay(events: &[Arc<Event>]) -> Result<ReplayCheck, ReplayError> {
    let Some(EventKind::RunStarted {
        run_id,
        spec,
        decider,
        parent,
        ..
    }) = events.first().map(|e| &e.kind)
    else {
        return Err(ReplayError::NoStart);
    };
    let recorded: Arc<[Arc<Event>]> = Arc::from(events.to_vec());
    let store = Arc::new(crate::replay::memory::Log::granting(events));
    let interceptors: Vec<Arc<dyn Interceptor>> = ReplayInterceptor::from_log(events)
        .into_iter()
        .map(|i| Arc::new(i) as Arc<dyn Interceptor>)
        .collect();
    let control = ReplayControl::from_log(events);
    let mut starts: Vec<usize> = vec![0];
    starts.extend(
        events
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                matches!(
                    e.kind,
                    EventKind::RunResumed { .. } | EventKind::RunTakenUp { .. }
                )
            })
            .map(|(i, _)| i),
    );
    let mut error = None;
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(events.len());
        let Some(segment) = events.get(start..end) else {
            error = Some(format!("the log has no events {start}..{end} to replay"));
            break;
        };
        let engine = segment_engine(&store, run_id, events, segment, &interceptors, &control);
        let surfaces = replay_surfaces(spec, events, segment);
        let replay_decider = ReplayDecider::from_log(decider.clone(), segment);
        let time = TimeSource::replaying(events);
        let stop_at = starts.get(k + 1).map(|&i| i as u64 + 1);
        // The time the recorded process spent before it started (or re-entered) the run.
        let setup_ms = match segment.first().map(|e| &e.kind) {
            Some(
                EventKind::RunStarted { setup_ms, .. }
                | EventKind::RunResumed { setup_ms, .. }
                | EventKind::RunTakenUp { setup_ms, .. },
            ) => *setup_ms,
            _ => None,
        };
        let outcome = if k == 0 {
            let mut run = crate::run::Run::start(
                &engine,
                run_id.clone(),
                spec.clone(),
                &replay_decider,
                &surfaces,
                time,
                engine.own_rules(),
            );
            run.stop_at = stop_at;
            run.setup_ms = setup_ms;
            run.parent = parent.as_deref().cloned();
            run.recorded = Some(recorded.clone());
            // Labelled under the rules the log was recorded with.
            (run.provenance, run.messages) = match events.first().map(|e| &e.kind) {
                Some(EventKind::RunStarted {
                    provenance,
                    messages,
                    ..
                }) => (*provenance, *messages),
                _ => (None, None),
            };
            let driven = run.drive().await;
            run.stopped(driven).await
        } else {
            let so_far = store.events();
            match RunState::from_events(so_far.iter().map(|e| &**e)) {
                Ok(state) => {
                    let mut run = crate::run::Run::from_state(
                        &engine,
                        state,
                        spec.clone(),
                        &replay_decider,
                        &surfaces,
                        time,
                        engine.own_rules(),
                    );
                    run.stop_at = stop_at;
                    run.setup_ms = setup_ms;
                    run.recorded = Some(recorded.clone());
                    let reentered = run.reenter().await;
                    run.stopped(reentered).await
                }
                Err(e) => Err(EngineError::Invariant(e)),
            }
        };
        match outcome {
            // A segment whose provider could not be started again ends where it stopped.
            Ok(_) | Err(EngineError::Stopped(_) | EngineError::Interrupted { .. }) => {}
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
        // Operator inputs recorded between this segment and the next.
        let at = store.events().len();
        let inputs = events.get(at..end).unwrap_or_default();
        for e in inputs.iter().take_while(|e| is_operator_input(e)) {
            store.push(e.clone());
        }
    }
    let regenerated = store.events();
    let divergence = first_divergence(events, &regenerated);
    Ok(ReplayCheck {
        recorded: events.len(),
        regenerated: regenerated.len(),
        divergence,
        error,
    })
}

/// The engine that replays `segment` of `events` into `store`: the run's recorded id,
/// authority, interceptors, execution control, principal and build.
fn segment_engine(
    store: &Arc<crate::replay::memory::Log>,
    run_id: &RunId,
    events: &[Arc<Event>],
    segment: &[Arc<Event>],
    interceptors: &[Arc<dyn Interceptor>],
    control: &Option<(Option<Arc<dyn ExecutionControl>>, u64)>,
) -> Engine {
    let mut engine = Engine::new(store.clone())
        .with_ids(Arc::new(FixedRunId(run_id.clone())))
        .with_authority(Arc::new(ReplayAuthority::from_log(segment, events)));
    for interceptor in interceptors {
        engine = engine.with_interceptor(interceptor.clone());
    }
    if let Some((control, timeout_ms)) = control {
        engine = engine.with_execution_control(control.clone(), *timeout_ms);
    }
    if let Some(EventKind::RunStarted {
        principal: Some(p), ..
    }) = events.first().map(|e| &e.kind)
    {
        engine = engine.acting_for(&p.tenant, &p.user);
    }
    // The build that recorded the run, as recorded: the build replaying it may be another (a
    // newer warrant reading an older log), and that is no divergence.
    if let Some(EventKind::RunStarted { build: Some(b), .. }) = events.first().map(|e| &e.kind) {
        engine = engine.with_build((**b).clone());
    }
    engine
}

/// The first event where the regenerated log differs from the recorded one, byte for byte.
fn first_divergence(events: &[Arc<Event>], regenerated: &[Arc<Event>]) -> Option<Divergence> {
    (0..events.len().max(regenerated.len())).find_map(|i| {
        let a = events.get(i).map(|e| encode(e));
        let b = regenerated.get(i).map(|e| encode(e));
        (a != b).then(|| Divergence {
            seq: i as u64 + 1,
            recorded: a,
            regenerated: b,
        })
    })
}

/// Events that come from an operator, not from the run's own process.
fn is_operator_input(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::CallReconciled { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::QuestionAnswered { .. }
    )
}

/// Answers with the decisions (and decide failures) recorded in one segment of a log.
struct ReplayDecider {
    identity: DeciderIdentity,
    decisions: Vec<Result<Decided, DecideError>>,
    next: Mutex<usize>,
    /// The segment ends with a session closed: once the recorded decisions run out, the
    /// decider is gone, as the recorded one was.
    closes: Option<warrant_core::ports::CancelRequest>,
}

impl ReplayDecider {
    fn from_log(identity: DeciderIdentity, events: &[Arc<Event>]) -> ReplayDecider {
        let decisions = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Decided {
                    decision,
                    usage,
                    exchange,
                    ..
                } => Some(Ok(Decided {
                    decision: decision.clone(),
                    usage: usage.clone(),
                    exchange: exchange.clone(),
                })),
                EventKind::DecideFailed {
                    fault, exchange, ..
                } => Some(Err(DecideError {
                    code: fault.known_code().unwrap_or(Code::ReplayDiverged),
                    message: fault.message.clone(),
                    exchange: exchange.clone(),
                })),
                _ => None,
            })
            .collect();
        let closes = events.last().and_then(|e| match &e.kind {
            EventKind::RunFinished {
                outcome: warrant_core::event::Outcome::Closed { by, reason },
            } => Some(warrant_core::ports::CancelRequest {
                by: by.clone(),
                reason: reason.clone(),
                close: true,
            }),
            _ => None,
        });
        ReplayDecider {
            identity,
            decisions,
            next: Mutex::new(0),
            closes,
        }
    }
}

impl Decider for ReplayDecider {
    fn identity(&self) -> DeciderIdentity {
        self.identity.clone()
    }

    fn decide(&self, _projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let answer = self.decisions.get(*next).cloned().unwrap_or_else(|| {
            Err(DecideError::new(
                Code::ReplayDiverged,
                "the log records no further decision",
            ))
        });
        *next += 1;
        Box::pin(std::future::ready(answer))
    }

    fn closed(&self) -> Option<warrant_core::ports::CancelRequest> {
        let next = *self.next.lock().unwrap_or_else(|p| p.into_inner());
        if next > self.decisions.len() {
            self.closes.clone()
        } else {
            None
        }
    }
}

struct FixedRunId(RunId);

impl IdGen for FixedRunId {
    fn run_id(&self) -> RunId {
        self.0.clone()
    }
}

/// Answers each call as the log says the authority did.
struct ReplayAuthority {
    /// Refusals recorded in this segment, by call and the digest of the arguments ruled on.
    refused: HashMap<(CallId, String), (String, String)>,
    /// Asks recorded (as approval requests) in the whole log, by call and digest.
    /// What was asked about each call (its reason, and how many people had to approve).
    asked: HashMap<(CallId, String), (String, u32)>,
    /// Calls an approval let through, in the whole log.
    consumed: HashSet<CallId>,
    /// Calls dispatched in this segment.
    dispatched: HashSet<CallId>,
    /// How the recorded authority described itself.
    description: Option<Value>,
    /// Calls a standing grant answered for, with the rule the approve policies gave it.
    granted: HashMap<CallId, Option<Box<str>>>,
}

impl ReplayAuthority {
    fn from_log(segment: &[Arc<Event>], events: &[Arc<Event>]) -> ReplayAuthority {
        let mut refused = HashMap::new();
        let mut asked = HashMap::new();
        let mut consumed: HashMap<CallId, String> = HashMap::new();
        // Approvals of a run's plan as a whole (scope `plan`), and the call each was asked
        // about: a later call within the plan consumed one after the authority allowed it.
        let mut plan_approvals: HashMap<String, CallId> = HashMap::new();
        let mut granted = HashMap::new();
        let mut requested_for: HashMap<String, CallId> = HashMap::new();
        // Asks come from the whole log (this segment included): the engine meets each from the
        // recorded approvals, or makes the request again.
        for e in events {
            match &e.kind {
                EventKind::ApprovalRequested {
                    request,
                    call,
                    args_digest,
                    reason,
                    approvers,
                    ..
                } => {
                    requested_for.insert(request.clone(), *call);
                    asked.insert(
                        (*call, args_digest.clone()),
                        (reason.to_string(), (*approvers).max(1)),
                    );
                }
                EventKind::ApprovalResolved {
                    request,
                    approved: true,
                    scope: Some(warrant_core::event::ApprovalScope::Plan),
                    ..
                } => {
                    if let Some(call) = requested_for.get(request) {
                        plan_approvals.insert(request.clone(), *call);
                    }
                }
                EventKind::ApprovalConsumed { call, request, .. } => {
                    consumed.insert(*call, request.clone());
                }
                EventKind::ApprovalGranted { request, rule, .. } => {
                    if let Some(call) = requested_for.get(request) {
                        granted.insert(*call, rule.clone());
                    }
                }
                // A call let through by an approval asked too (a run-scoped grant met it).
                // A call within an approved plan, other than the one the plan was asked
                // about: the authority allowed it, and the plan's approval let it through.
                EventKind::CallDispatched { call, .. }
                    if consumed
                        .get(call)
                        .and_then(|r| plan_approvals.get(r))
                        .is_some_and(|asked_for| asked_for != call) =>
                {
                    consumed.remove(call);
                }
                EventKind::CallDispatched {
                    call, args_digest, ..
                } if consumed.contains_key(call) => {
                    asked
                        .entry((*call, args_digest.clone()))
                        .or_insert_with(|| ("covered by an approval".into(), 1));
                }
                _ => {}
            }
        }
        let mut dispatched = HashSet::new();
        for e in segment {
            match &e.kind {
                EventKind::CallDispatched { call, .. } => {
                    dispatched.insert(*call);
                }
                EventKind::CallFinished {
                    call,
                    status: CallStatus::StoppedByPolicy,
                    ruled_args_digest: Some(digest),
                    fault: Some(f),
                    ..
                } => {
                    refused.insert((*call, digest.clone()), (f.code.clone(), f.message.clone()));
                }
                // A repeat refused at re-entry: ruled on the dispatched arguments.
                EventKind::CallInDoubt {
                    call,
                    args_digest,
                    cause: Some(f),
                    ..
                } if f.layer == warrant_core::Layer::Policy => {
                    refused.insert(
                        (*call, args_digest.clone()),
                        (f.code.clone(), f.message.clone()),
                    );
                }
                _ => {}
            }
        }
        let description = events.first().and_then(|e| match &e.kind {
            EventKind::RunStarted { authority, .. } => authority.as_deref().cloned(),
            _ => None,
        });
        ReplayAuthority {
            refused,
            asked,
            consumed: consumed.into_keys().collect(),
            dispatched,
            description,
            granted,
        }
    }
}

impl Authority for ReplayAuthority {
    fn describe(&self) -> Option<Value> {
        self.description.clone()
    }

    /// A standing grant may answer as it did: under the rule recorded, or not at all where
    /// none answered.
    fn rule_approver(&self, request: &ApproverRequest<'_>) -> ApproverVerdict {
        match self.granted.get(&request.call.call) {
            Some(Some(rule)) => ApproverVerdict::Allow {
                rule: rule.to_string(),
            },
            Some(None) => ApproverVerdict::NotRuled,
            None => ApproverVerdict::Deny {
                reasons: vec!["no standing grant answered this call in the recorded run".into()],
            },
        }
    }

    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        let key = (request.call, request.args_digest.to_owned());
        // A call once asked about is asked about again, unless, this time, the authority let it
        // through (dispatched here with no approval consumed) or refused it (recorded here):
        // a call held for approval is ruled on afresh when the run goes on.
        if let Some((reason, approvers)) = self.asked.get(&key) {
            let ruled_otherwise = !self.consumed.contains(&request.call)
                && (self.dispatched.contains(&request.call) || self.refused.contains_key(&key));
            if !ruled_otherwise {
                return Box::pin(std::future::ready(Verdict::Ask {
                    reason: reason.clone(),
                    approvers: *approvers,
                }));
            }
        }
        if self
            .refused
            .get(&key)
            .is_some_and(|(code, _)| code == "policy_timeout")
        {
            // It gave no verdict then: none now either.
            return Box::pin(std::future::pending());
        }
        let verdict = match self.refused.get(&key) {
            None => Verdict::Allow {
                grant: "replay".into(),
            },
            Some((code, message)) => match code.as_str() {
                // Refusals the engine derives from recorded approvals: the authority asked.
                c if c.starts_with("approval_") => Verdict::Ask {
                    reason: message.clone(),
                    approvers: 1,
                },
                "policy_indeterminate" => Verdict::Indeterminate {
                    reason: message.clone(),
                },
                _ => Verdict::Deny {
                    reasons: vec![message.clone()],
                },
            },
        };
        Box::pin(std::future::ready(verdict))
    }
}

/// Answers as the recorded execution control did: the calls it stopped, stopped the same way.
struct ReplayControl {
    stops: HashMap<CallId, ControlVerdict>,
    description: Option<Value>,
}

impl ReplayControl {
    /// The control the log's run required (with its timeout), if it required one.
    fn from_log(events: &[Arc<Event>]) -> Option<(Option<Arc<dyn ExecutionControl>>, u64)> {
        let Some(EventKind::RunStarted {
            execution_control: Some(setting),
            ..
        }) = events.first().map(|e| &e.kind)
        else {
            return None;
        };
        let timeout_ms = setting
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let description = setting.get("control").cloned().filter(|d| !d.is_null());
        if setting.get("configured").and_then(Value::as_bool) != Some(true) {
            return Some((None, timeout_ms));
        }
        let mut stops = HashMap::new();
        for e in events {
            if let EventKind::CallFinished {
                call,
                status: CallStatus::StoppedByExecutionControl,
                fault: Some(f),
                ..
            } = &e.kind
            {
                let v = if f.code == "execution_control_block" {
                    ControlVerdict::Block {
                        reason: f.message.clone(),
                    }
                } else {
                    ControlVerdict::Indeterminate {
                        reason: f.message.clone(),
                    }
                };
                stops.insert(*call, v);
            }
        }
        Some((
            Some(Arc::new(ReplayControl { stops, description }) as Arc<dyn ExecutionControl>),
            timeout_ms,
        ))
    }
}

impl ExecutionControl for ReplayControl {
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, ControlVerdict> {
        let v = self
            .stops
            .get(&request.call)
            .cloned()
            .unwrap_or(ControlVerdict::Allow);
        Box::pin(std::future::ready(v))
    }

    fn describe(&self) -> Option<Value> {
        self.description.clone()
    }
}

/// Answers as the recorded interceptor of this name did: one per name, in the order the log
/// first shows them.
struct ReplayInterceptor {
    name: String,
    halted: HashMap<CallId, String>,
    narrowed: HashMap<CallId, (Value, String)>,
}

impl ReplayInterceptor {
    fn from_log(events: &[Arc<Event>]) -> Vec<ReplayInterceptor> {
        let mut chain: Vec<ReplayInterceptor> = Vec::new();
        /// The interceptor named `name`, added at the end of `chain` the first time.
        fn named<'a>(
            chain: &'a mut Vec<ReplayInterceptor>,
            name: &str,
        ) -> Option<&'a mut ReplayInterceptor> {
            if !chain.iter().any(|c| c.name == name) {
                chain.push(ReplayInterceptor {
                    name: name.to_owned(),
                    halted: HashMap::new(),
                    narrowed: HashMap::new(),
                });
            }
            chain.iter_mut().find(|c| c.name == name)
        }
        // A person's edit at approval is recorded as a narrowing by `approval <request>`: it
        // comes back from the approval in the log, not from an interceptor.
        let edits: HashSet<String> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ApprovalResolved {
                    request,
                    edited_args: Some(_),
                    ..
                } => Some(format!("approval {request}")),
                _ => None,
            })
            .collect();
        for e in events {
            match &e.kind {
                EventKind::CallDispatched {
                    call,
                    args,
                    narrowed,
                    ..
                } => {
                    for n in narrowed.iter().filter(|n| !edits.contains(&n.by)) {
                        if let Some(c) = named(&mut chain, &n.by) {
                            c.narrowed
                                .insert(*call, ((**args).clone(), n.reason.clone()));
                        }
                    }
                }
                EventKind::CallFinished {
                    call,
                    status,
                    fault,
                    narrowed,
                    narrowed_args,
                    ..
                } => {
                    if let Some(args) = narrowed_args {
                        for n in narrowed.iter().filter(|n| !edits.contains(&n.by)) {
                            if let Some(c) = named(&mut chain, &n.by) {
                                c.narrowed
                                    .insert(*call, ((**args).clone(), n.reason.clone()));
                            }
                        }
                    }
                    if let (CallStatus::Halted, Some(f)) = (status, fault) {
                        let (name, reason) = f.message.split_once(": ").unwrap_or(("", &f.message));
                        if let Some(c) = named(&mut chain, name) {
                            c.halted.insert(*call, reason.to_owned());
                        }
                    }
                }
                _ => {}
            }
        }
        chain
    }
}

impl Interceptor for ReplayInterceptor {
    fn name(&self) -> &str {
        &self.name
    }

    fn intercept(&self, request: &CapabilityRequest<'_>) -> Interception {
        if let Some(reason) = self.halted.get(&request.call) {
            return Interception::Halt {
                reason: reason.clone(),
            };
        }
        match self.narrowed.get(&request.call) {
            Some((args, reason)) => Interception::Narrow {
                args: args.clone(),
                reason: reason.clone(),
            },
            None => Interception::Pass,
        }
    }
}

mod memory {
    //! The replay's own sink: a plain in-memory log of one run. Nothing reads it but the replay.
    use std::sync::{Arc, Mutex};

    use warrant_core::event::{Event, StoredEvent};
    use warrant_core::ids::RunId;
    use warrant_core::ports::BoxFuture;
    use warrant_core::store::{
        ApprovalsIndex, IdempotencyKeys, Leases, LogReader, LogWriter, NoticeOutbox, RunsIndex,
        SpecCatalog, StoreHealth,
    };
    use warrant_core::store::{
        CancelRequest, Claim, Driver, EventFeed, PendingApproval, RunPage, RunQuery, RunSummary,
        StoreError,
    };

    #[derive(Default)]
    pub(super) struct Log {
        events: Mutex<Vec<Arc<Event>>>,
        /// The standing grants the recorded run was answered by, as they were then: the
        /// engine finds them again, and rules as it did.
        granted: Vec<warrant_core::standing::StandingGrant>,
    }

    impl Log {
        /// A log for the replay of `recorded`, knowing the grants it was answered by.
        pub(super) fn granting(recorded: &[Arc<Event>]) -> Log {
            let granted = recorded
                .iter()
                .filter_map(|e| match &e.kind {
                    warrant_core::event::EventKind::ApprovalGranted { grant, .. } => {
                        Some((**grant).clone())
                    }
                    _ => None,
                })
                .collect();
            Log {
                events: Mutex::new(Vec::new()),
                granted,
            }
        }

        pub(super) fn events(&self) -> Vec<Arc<Event>> {
            self.events.lock().map(|e| e.clone()).unwrap_or_default()
        }

        pub(super) fn push(&self, event: Arc<Event>) {
            if let Ok(mut log) = self.events.lock() {
                log.push(event);
            }
        }
    }

    fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
        Box::pin(std::future::ready(value))
    }

    /// A follower of the replay's log: it has nothing to follow.
    struct Empty;

    impl EventFeed for Empty {
        fn next(&mut self) -> BoxFuture<'_, Result<Option<StoredEvent>, StoreError>> {
            ready(Ok(None))
        }
    }

    impl LogWriter for Log {
        fn append(
            &self,
            _run: &RunId,
            _expected: u64,
            events: Vec<Arc<Event>>,
            _driver: Option<&Driver>,
        ) -> BoxFuture<'static, Result<(), StoreError>> {
            if let Ok(mut log) = self.events.lock() {
                log.extend(events);
            }
            ready(Ok(()))
        }
    }

    impl LogReader for Log {
        fn read(
            &self,
            _run: &RunId,
            _from: u64,
        ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
            ready(Ok(Vec::new()))
        }
        fn subscribe(&self, _run: &RunId, _from_seq: u64) -> Box<dyn EventFeed> {
            Box::new(Empty)
        }
    }

    impl RunsIndex for Log {
        fn runs(&self, _query: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>> {
            ready(Ok(RunPage::default()))
        }
        fn summary(&self, _run: &RunId) -> BoxFuture<'_, Result<Option<RunSummary>, StoreError>> {
            ready(Ok(None))
        }
    }

    impl ApprovalsIndex for Log {
        fn pending_approvals(
            &self,
            _run: Option<&RunId>,
        ) -> BoxFuture<'_, Result<Vec<PendingApproval>, StoreError>> {
            ready(Ok(Vec::new()))
        }
    }

    impl Leases for Log {
        fn request_cancel(
            &self,
            _run: &RunId,
            _request: CancelRequest,
        ) -> BoxFuture<'_, Result<(), StoreError>> {
            ready(Ok(()))
        }
        fn cancel_request(
            &self,
            _run: &RunId,
        ) -> BoxFuture<'_, Result<Option<CancelRequest>, StoreError>> {
            ready(Ok(None))
        }
        fn claim(
            &self,
            _run: &RunId,
            _driver: &Driver,
        ) -> BoxFuture<'_, Result<Claim, StoreError>> {
            ready(Ok(Claim::Taken { epoch: 1 }))
        }
        fn heartbeat(
            &self,
            _leases: Vec<(RunId, Driver)>,
        ) -> BoxFuture<'_, Result<(), StoreError>> {
            ready(Ok(()))
        }
        fn release(&self, _run: &RunId, _driver: &Driver) -> BoxFuture<'_, Result<(), StoreError>> {
            ready(Ok(()))
        }
    }

    impl SpecCatalog for Log {}

    impl IdempotencyKeys for Log {}

    impl NoticeOutbox for Log {}
    impl warrant_core::store::Grants for Log {
        fn grants(
            &self,
            _tenant: Option<&str>,
        ) -> BoxFuture<'_, Result<Vec<warrant_core::standing::StandingGrant>, StoreError>> {
            ready(Ok(self.granted.clone()))
        }
    }

    impl warrant_core::store::Schedules for Log {}

    impl StoreHealth for Log {}
}

//! Run state as a fold over events. The engine applies each event it appends; `show`,
//! `report`, resume and replay rebuild the same state from the stored log.
//!
//! The judgments of DESIGN.md live here as pure functions of that state: which step runs next,
//! whether a step's `done` is backed by evidence, who is to blame for a missing requirement, and
//! the terminal predicate.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::codes::Code;
use crate::event::{
    ActionRecord, ApprovalScope, CallStatus, Claim, DeciderIdentity, DoubtStage, Effect, Event,
    EventKind, Fault, Layer, Lineage, Missing, Outcome, ParentLink, Spent, StepEnd,
};
use crate::ids::{CallId, HandleId, RunId, StepId};
use crate::provenance::{ArgLabel, OutputIndex};
use crate::spec::{CommitRule, Publish, Spec, StepSpec};
use crate::status::RunStatus;

mod apply;

/// How many recent calls of the current step a projection shows.
pub const RECENT_CALLS_MAX: usize = 8;

/// A step's progress.
#[derive(Clone, Debug, PartialEq)]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Started, not finished.
    Running,
    /// Finished.
    Finished(StepEnd),
    /// Never ran: a dependency was not attained.
    Skipped {
        /// The dependency.
        blocked_by: StepId,
        /// Its cause.
        fault: Fault,
    },
}

/// One step's state.
#[derive(Clone, Debug)]
pub struct StepState {
    /// Progress.
    pub status: StepStatus,
    /// Decisions taken in it.
    pub decisions: u32,
    /// Calls started in it, in order.
    pub calls: Vec<CallId>,
    /// A commit call in it succeeded.
    pub committed: bool,
    /// A call in it succeeded.
    pub succeeded: bool,
    /// When it started.
    pub started_at_ms: Option<u64>,
    /// When it ended.
    pub finished_at_ms: Option<u64>,
    /// What the decider said when it ended the step: its `done` summary or its decline's
    /// reason (a claim, kept for whoever judges the text).
    pub answer: Option<StepAnswer>,
    /// The child runs it delegated to, in the order spawned.
    pub children: Vec<ChildRecord>,
}

/// A child run a step delegated to, as the parent's log knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildRecord {
    /// The child.
    pub run: RunId,
    /// Which of the step's children (from 0).
    pub index: u32,
    /// What it may spend.
    pub granted: crate::event::Budget,
    /// How it ended, once it did.
    pub outcome: Option<Outcome>,
    /// What it spent, once it ended.
    pub spent: Spent,
}

/// What a decider said when it ended a step.
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct StepAnswer {
    /// `done` or `decline`.
    pub kind: String,
    /// The summary or the reason.
    pub text: String,
}

/// How a step the run holds no state for reads: as one that never ran.
static NEVER_RAN: StepState = StepState::new();

impl StepState {
    const fn new() -> StepState {
        StepState {
            status: StepStatus::Pending,
            decisions: 0,
            calls: Vec::new(),
            committed: false,
            succeeded: false,
            started_at_ms: None,
            finished_at_ms: None,
            answer: None,
            children: Vec::new(),
        }
    }

    /// Whether the step is attained.
    pub fn attained(&self) -> bool {
        matches!(self.status, StepStatus::Finished(StepEnd::Attained))
    }

    /// Whether the step is over (finished or skipped).
    pub fn is_over(&self) -> bool {
        matches!(
            self.status,
            StepStatus::Finished(_) | StepStatus::Skipped { .. }
        )
    }
}

/// One call's state.
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// The call.
    pub id: CallId,
    /// Index of its step in the spec.
    pub step: usize,
    /// The tool named.
    pub tool: String,
    /// The handle used.
    pub handle: Option<HandleId>,
    /// The decision (1-based) that proposed it.
    pub decision: u32,
    /// The claims the decision made about its arguments.
    pub claims: Vec<Claim>,
    /// The approval request it waits on.
    pub awaiting: Option<String>,
    /// Its outcome was lost and it waits for reconciliation.
    pub in_doubt: bool,
    /// What was known when it went in doubt.
    pub doubt: Option<DoubtStage>,
    /// An operator reconciled that it did not happen and asked for it to be sent again.
    pub resend: bool,
    /// Dispatched, and found its provider stopped before it was sent; the provider could
    /// not be started again (the run stopped, interrupted): safe to send on the next
    /// re-entry, and only then (`run_resumed` taking the call over ends it).
    pub unsent: bool,
    /// The call that sent it again, once started.
    pub resent_by: Option<CallId>,
    /// For a call an operator had sent again: the earlier call.
    pub resend_of: Option<CallId>,
    /// Who reconciled it, and their note.
    pub reconciled: Option<Box<(String, String)>>,
    /// Proposed arguments.
    pub proposed: Arc<Value>,
    /// Executed arguments, once dispatched.
    pub executed: Option<Arc<Value>>,
    /// Effect, once dispatched.
    pub effect: Option<Effect>,
    /// Provenance, once dispatched.
    pub provenance: Vec<ArgLabel>,
    /// Idempotency key, once dispatched.
    pub idempotency_key: Option<String>,
    /// How it ended.
    pub status: Option<CallStatus>,
    /// The provider's result.
    pub output: Option<Arc<Value>>,
    /// The structured error (boxed: most calls have none, and every record is smaller for
    /// it).
    pub fault: Option<Box<Fault>>,
    /// When it started.
    pub started_at_ms: u64,
    /// When it ended.
    pub finished_at_ms: Option<u64>,
    /// What projections show of it, made once it has finished (when nothing it shows changes).
    pub(crate) view: std::sync::OnceLock<Arc<crate::projection::CallView>>,
}

/// A carried value.
#[derive(Clone, Debug, PartialEq)]
pub struct Carried {
    /// The value.
    pub value: Arc<Value>,
    /// Where it came from.
    pub lineage: Lineage,
}

/// Where an approval request stands.
#[derive(Clone, Debug, PartialEq)]
pub enum ApprovalStatus {
    /// Waiting for an approver.
    Pending,
    /// Approved.
    Approved {
        /// How far it reaches.
        scope: ApprovalScope,
        /// Until when.
        until_ms: Option<u64>,
    },
    /// Denied.
    Denied {
        /// Who.
        by: String,
        /// Why.
        reason: String,
    },
    /// Expired unanswered.
    Expired,
    /// The run ended before anyone answered.
    Withdrawn,
}

impl ApprovalStatus {
    /// Its state, by name.
    pub fn state(&self) -> crate::status::ApprovalState {
        use crate::status::ApprovalState;
        match self {
            ApprovalStatus::Pending => ApprovalState::Pending,
            ApprovalStatus::Approved { .. } => ApprovalState::Approved,
            ApprovalStatus::Denied { .. } => ApprovalState::Denied,
            ApprovalStatus::Expired => ApprovalState::Expired,
            ApprovalStatus::Withdrawn => ApprovalState::Withdrawn,
        }
    }
}

/// One approval request and its fate.
#[derive(Clone, Debug)]
pub struct Approval {
    /// `<run>-a<n>`.
    pub id: String,
    /// The call that asked.
    pub call: CallId,
    /// The target.
    pub provider: String,
    /// The tool.
    pub tool: String,
    /// The bound arguments.
    pub args_digest: String,
    /// The bound schema.
    pub schema_digest: String,
    /// Its status.
    pub status: ApprovalStatus,
    /// Calls it let through.
    pub consumed_by: Vec<CallId>,
    /// When it expires unanswered.
    pub expires_at_ms: u64,
    /// An approval with edits: the arguments approved instead, and their digest (which the
    /// approval then binds).
    pub edited: Option<(Arc<Value>, String)>,
    /// How many different people must approve it.
    pub approvers: u32,
    /// Who approved it so far, with the scope and time each approved for.
    pub approved_by: Vec<(String, ApprovalScope, Option<u64>)>,
    /// The scope the request proposed: only a request that proposed `plan` (it described the
    /// run's plan) can approve the plan.
    pub proposed_scope: ApprovalScope,
}

impl Approval {
    /// The digest of the arguments an approval lets through: the edited ones when the person
    /// edited them, else the ones asked about.
    pub fn bound_digest(&self) -> &str {
        self.edited.as_ref().map_or(&self.args_digest, |(_, d)| d)
    }
}

/// What a decision's projection showed: enough to validate the handles it issued.
#[derive(Clone, Debug)]
pub struct DecisionRecord {
    /// Index of the step.
    pub step: usize,
    /// The observation version.
    pub version: String,
    /// When the handles were issued.
    pub at_ms: u64,
    /// The untrusted providers whose output the decider had been shown (`decided`).
    pub tainted_by: Arc<[String]>,
}

/// The latest observation recorded for a provider.
#[derive(Clone, Debug)]
pub struct ObservationRecord {
    /// Its version.
    pub version: String,
    /// Its actions.
    pub actions: Arc<[ActionRecord]>,
}

/// A log that does not fold: an invariant of the event log is broken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("event {seq} (`{kind}`): {message}")]
pub struct FoldError {
    /// The offending event's sequence.
    pub seq: u64,
    /// Its type.
    pub kind: &'static str,
    /// What is wrong.
    pub message: String,
}

/// How `kind` changes a run's status, in the one vocabulary every reader uses — `running`,
/// `waiting` (for a person: an effect in doubt, a call held for approval), `ready` (a person
/// answered; resuming carries it on) or the outcome's name — or `None` when it does not. The
/// fold and every store's runs index derive a run's status with this one function.
pub fn status_after(kind: &EventKind) -> Option<RunStatus> {
    match kind {
        EventKind::RunFinished { outcome } => Some(RunStatus::ended(outcome)),
        EventKind::CallInDoubt { .. }
        | EventKind::ApprovalRequested { .. }
        | EventKind::ChildWaiting { .. } => Some(RunStatus::Waiting),
        // One of several approvers approved: the request still waits for the others.
        EventKind::ApprovalResolved { awaiting, .. } if *awaiting > 0 => None,
        EventKind::CallReconciled { .. } | EventKind::ApprovalResolved { .. } => {
            Some(RunStatus::Ready)
        }
        EventKind::RunStarted { .. }
        | EventKind::RunResumed { .. }
        | EventKind::ApprovalExpired { .. } => Some(RunStatus::Running),
        _ => None,
    }
}

/// The provider of step `i` of `spec` (empty when there is no such step). A function of the
/// spec alone, so the fold can borrow it beside its other fields.
pub(super) fn step_provider(spec: Option<&Spec>, i: usize) -> &str {
    spec.and_then(|s| s.steps.get(i))
        .map_or("", |s| s.provider.as_str())
}

/// A run's two clocks. Driving time runs in segments: from `run_started` or a re-entry's
/// `run_resumed` (with the time spent starting providers before it) to the event that made
/// the run wait for a person, or, for a process that stopped, to the last event it recorded.
/// Waiting time runs from that event to the re-entry that carried the run on. An operator's
/// answer recorded by another process (`approval_resolved`, `call_reconciled`) is neither.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clocks {
    /// Driving time of the segments that ended.
    driven_ms: u64,
    /// When the driving segment under way began; `None` while the run waits.
    segment: Option<u64>,
    /// The time of the last event the driver of that segment recorded.
    segment_last: u64,
    /// Waiting time of the waits that ended.
    waited_ms: u64,
    /// When the wait under way began.
    waiting_since: Option<u64>,
    /// When the last wait began (kept after it ended).
    wait_began: u64,
}

impl Clocks {
    fn apply(&mut self, kind: &EventKind, at: u64) {
        match kind {
            EventKind::RunStarted { setup_ms, .. } | EventKind::RunResumed { setup_ms, .. } => {
                // A process that stopped without waiting drove until its last event.
                if let Some(start) = self.segment.take() {
                    self.driven_ms += self.segment_last.saturating_sub(start);
                }
                if let Some(since) = self.waiting_since.take() {
                    self.waited_ms += at.saturating_sub(since);
                }
                self.segment = Some(at.saturating_sub(setup_ms.unwrap_or(0)));
                self.segment_last = at;
            }
            // An operator's input, recorded by whichever process took it.
            EventKind::ApprovalResolved { .. } | EventKind::CallReconciled { .. } => {}
            k if status_after(k) == Some(RunStatus::Waiting) => {
                if let Some(start) = self.segment.take() {
                    self.driven_ms += at.saturating_sub(start);
                }
                if self.waiting_since.is_none() {
                    self.waiting_since = Some(at);
                    self.wait_began = at;
                }
            }
            _ => match self.segment {
                Some(_) => self.segment_last = at,
                // The driver went on without waiting after all (a parent driving its other
                // children while one waits): a new segment from here.
                None => {
                    self.segment = Some(at);
                    self.segment_last = at;
                }
            },
        }
    }

    fn driven_ms(&self, now_ms: u64) -> u64 {
        self.driven_ms + self.segment.map_or(0, |s| now_ms.saturating_sub(s))
    }

    fn waited_ms(&self, now_ms: u64) -> u64 {
        self.waited_ms + self.waiting_since.map_or(0, |s| now_ms.saturating_sub(s))
    }
}

/// One of several approvers approves `a`. INVARIANT (approvals): several approvers are
/// several different people, each bound to the same arguments (no edits); the request is
/// approved, as narrowly as any of them approved it, once the last one has.
pub(super) fn approve_by_several(
    a: &mut Approval,
    by: &str,
    scope: Option<ApprovalScope>,
    until_ms: Option<u64>,
    edited: bool,
    awaiting: u32,
) -> Result<(), String> {
    if a.approved_by.iter().any(|(who, ..)| who == by) {
        return Err(format!("`{by}` approved it already"));
    }
    if edited {
        return Err("an approval by several people carries no edits".into());
    }
    a.approved_by.push((
        by.to_owned(),
        scope.unwrap_or(ApprovalScope::Once),
        until_ms,
    ));
    let given = u32::try_from(a.approved_by.len()).unwrap_or(u32::MAX);
    let left = a.approvers.saturating_sub(given);
    if left != awaiting {
        return Err(format!(
            "{left} approvals are still awaited, not {awaiting}"
        ));
    }
    if left == 0 {
        // The narrowest scope all of them gave: once when any gave once, or when some gave
        // the plan and some the run (neither holds the other); else the plan, else the run.
        let gave = |scope| a.approved_by.iter().any(|(_, s, _)| *s == scope);
        a.status = ApprovalStatus::Approved {
            scope: if gave(ApprovalScope::Once)
                || (gave(ApprovalScope::Plan) && gave(ApprovalScope::Run))
            {
                ApprovalScope::Once
            } else if gave(ApprovalScope::Plan) {
                ApprovalScope::Plan
            } else {
                ApprovalScope::Run
            },
            until_ms: a.approved_by.iter().filter_map(|(_, _, u)| *u).min(),
        };
    }
    Ok(())
}

/// Most call records a run makes room for at its first call.
const CALLS_RESERVED: u32 = 16;

/// The state of one run, folded from its events.
#[derive(Clone, Debug, Default)]
pub struct RunState {
    /// The run.
    pub(crate) run_id: Option<RunId>,
    /// The frozen spec.
    pub(crate) spec: Option<Arc<Spec>>,
    /// Its digest.
    pub(crate) spec_hash: String,
    /// Who decides.
    pub(crate) decider: Option<DeciderIdentity>,
    /// The build of Warrant that started the run, when it was recorded.
    pub(crate) build: Option<Arc<crate::event::BuildInfo>>,
    /// The authority the run started with, as it described itself.
    pub(crate) authority: Option<Arc<Value>>,
    /// The execution control the run started with, as recorded.
    pub(crate) execution_control: Option<Arc<Value>>,
    /// Sequence of the last event applied.
    pub(crate) last_seq: u64,
    /// When the run started.
    pub(crate) started_at_ms: u64,
    /// The time of the last event.
    pub(crate) last_at_ms: u64,
    /// Steps, indexed as in the spec.
    pub(crate) steps: Vec<StepState>,
    /// The step running now.
    pub(crate) current: Option<usize>,
    /// Decisions taken in the run.
    pub(crate) decisions: u32,
    /// Per decision (index `decision_no - 1`): what its projection showed.
    pub(crate) decision_log: Vec<DecisionRecord>,
    /// Every call, in order (index `id - 1`).
    pub(crate) calls: Vec<CallRecord>,
    /// Handles consumed by a dispatch (ordered: a run consumes them in the order it issues
    /// them, and a step's check is a few comparisons rather than a keyed hash).
    pub(crate) consumed: BTreeSet<HandleId>,
    /// Carried state, by `step.output`.
    pub(crate) carried: BTreeMap<String, Carried>,
    /// The latest observation per provider (a spec names a few providers: found by comparing
    /// names, not by hashing one at every decision).
    pub(crate) observations: BTreeMap<String, ObservationRecord>,
    /// Recent calls of the current step, newest last.
    pub(crate) recent: VecDeque<CallId>,
    /// Scalar values seen in provider outputs.
    pub(crate) output_index: OutputIndex,
    /// How the run ended.
    pub(crate) outcome: Option<Outcome>,
    /// When it ended.
    pub(crate) finished_at_ms: Option<u64>,
    /// How many times a process re-entered the run.
    pub(crate) resumes: u32,
    /// Who the run acts for.
    pub(crate) principal: crate::event::Principal,
    /// Approval requests, in the order made.
    pub(crate) approvals: Vec<Approval>,
    /// The claims of the last decision, until its call starts.
    pending_claims: Option<Vec<Claim>>,
    /// The last event is a person's answer (an approval resolved, a call reconciled).
    pub(crate) answered_last: bool,
    /// Events of types this build does not know: (sequence, type).
    pub(crate) unrecognized: Vec<(u64, String)>,
    /// The log's format, from `run_started`.
    pub(crate) format: String,
    /// The provenance rules from `run_started` (absent: 1).
    pub(crate) provenance: Option<u32>,
    /// The bound of a provider's message in a fault, from `run_started` (absent: 300).
    pub(crate) messages: Option<std::num::NonZeroU16>,
    /// The grants the decider proposed (`plan_first`), once it did.
    pub(crate) planned: Option<BTreeMap<String, crate::spec::Grant>>,
    /// The status the last status-changing event left (`status_after`).
    status: RunStatus,
    /// Milliseconds spent before the run and each re-entry started (starting providers).
    pub(crate) setup_ms: u64,
    /// Its two clocks: the time it spent driving, and the time it waited for people.
    pub(crate) clocks: Clocks,
    /// The values its starter gave its inputs (a root run's), by name.
    pub(crate) inputs: Vec<(String, Arc<Value>)>,
    /// Tokens the decider reported (input plus output).
    pub(crate) tokens_used: u64,
    /// Cost the decider reported, in micro-dollars.
    pub(crate) cost_micro_usd: u64,
    /// The run that delegated to this one, when it is a child.
    pub(crate) parent: Option<ParentLink>,
    /// What its ended children spent.
    pub(crate) children_spent: Spent,
    /// How many calls are in doubt or reconciled to be sent again and not yet sent: when none
    /// is, deciding what comes next need not look through every call.
    unsettled: u32,
}

/// What the run should do next, judged from its state.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Keep deciding in the step running now.
    Continue(usize),
    /// Start this step.
    Start(usize),
    /// Record that this step never runs.
    Skip {
        /// The step.
        step: usize,
        /// The dependency not attained.
        blocked_by: StepId,
        /// Its cause.
        fault: Fault,
    },
    /// No step can progress: end with this outcome.
    Finish(Outcome),
    /// An effect is in doubt, or a call waits for an approval: nothing may happen until an
    /// operator answers.
    Wait(CallId),
    /// The call waiting on an approval was answered: carry it on through the Bridge.
    Redrive(CallId),
    /// An operator reconciled that this call did not happen and asked for it to be sent again:
    /// send it as a new call, ruled on again.
    Resend(CallId),
    /// The run has ended.
    Ended,
}

impl RunState {
    /// Room for the calls the run may make (one a decision), up to a few, made at its first:
    /// the records are not moved as the run grows (a short run's all fit the first
    /// allocation), and a long run's grow as before.
    fn calls_reserved(&self) -> usize {
        let most = self.spec.as_ref().map_or(0, |s| s.limits.decisions_max);
        usize::try_from(most.min(CALLS_RESERVED)).unwrap_or(0)
    }

    /// Folds a whole log.
    pub fn from_events<'a>(
        events: impl IntoIterator<Item = &'a Event>,
    ) -> Result<RunState, FoldError> {
        let mut state = RunState::default();
        for e in events {
            state.apply(e)?;
        }
        Ok(state)
    }

    /// The spec (present once `run_started` is applied).
    pub fn spec(&self) -> Option<&Spec> {
        self.spec.as_deref()
    }

    // What the fold holds, read-only: only `apply` changes it.

    /// The run.
    pub fn run_id(&self) -> Option<&RunId> {
        self.run_id.as_ref()
    }

    /// The spec's digest.
    pub fn spec_hash(&self) -> &str {
        &self.spec_hash
    }

    /// Who decides.
    pub fn decider(&self) -> Option<&DeciderIdentity> {
        self.decider.as_ref()
    }

    /// The build of Warrant that started the run, when its `run_started` says.
    pub fn build(&self) -> Option<&crate::event::BuildInfo> {
        self.build.as_deref()
    }

    /// The authority the run started with, as it described itself.
    pub fn authority(&self) -> Option<&Value> {
        self.authority.as_deref()
    }

    /// The execution control the run started with, as recorded.
    pub fn execution_control(&self) -> Option<&Value> {
        self.execution_control.as_deref()
    }

    /// Sequence of the last event applied.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// When the run started.
    pub fn started_at_ms(&self) -> u64 {
        self.started_at_ms
    }

    /// The time of the last event.
    pub fn last_at_ms(&self) -> u64 {
        self.last_at_ms
    }

    /// Steps, indexed as in the spec.
    pub fn steps(&self) -> &[StepState] {
        &self.steps
    }

    /// The step running now.
    pub fn current(&self) -> Option<usize> {
        self.current
    }

    /// Decisions taken in the run.
    pub fn decisions(&self) -> u32 {
        self.decisions
    }

    /// What the run spent, its ended children's spending included: what its limits are
    /// checked against.
    pub fn spent(&self) -> Spent {
        let c = &self.children_spent;
        Spent {
            decisions: self.decisions.saturating_add(c.decisions),
            calls: u32::try_from(self.calls.len())
                .unwrap_or(u32::MAX)
                .saturating_add(c.calls),
            tokens: self.tokens_used.saturating_add(c.tokens),
            cost_micro_usd: self.cost_micro_usd.saturating_add(c.cost_micro_usd),
        }
    }

    /// What the run spent by itself (its children's spending left out).
    pub fn own_spent(&self) -> Spent {
        Spent {
            decisions: self.decisions,
            calls: u32::try_from(self.calls.len()).unwrap_or(u32::MAX),
            tokens: self.tokens_used,
            cost_micro_usd: self.cost_micro_usd,
        }
    }

    /// The run that delegated to this one, when it is a child.
    pub fn parent(&self) -> Option<&ParentLink> {
        self.parent.as_ref()
    }

    /// Every child run the run delegated to, with its step's index.
    pub fn children(&self) -> impl Iterator<Item = (usize, &ChildRecord)> {
        self.steps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.children.iter().map(move |c| (i, c)))
    }

    /// Per decision (index `decision_no - 1`): what its projection showed.
    pub fn decision_log(&self) -> &[DecisionRecord] {
        &self.decision_log
    }

    /// Every call, in order (index `id - 1`).
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// Handles consumed by a dispatch.
    pub fn consumed(&self) -> &BTreeSet<HandleId> {
        &self.consumed
    }

    /// Carried state, by `step.output`.
    pub fn carried(&self) -> &BTreeMap<String, Carried> {
        &self.carried
    }

    /// The latest observation per provider.
    pub fn observations(&self) -> &BTreeMap<String, ObservationRecord> {
        &self.observations
    }

    /// Recent calls of the current step, newest last.
    pub fn recent(&self) -> &VecDeque<CallId> {
        &self.recent
    }

    /// Scalar values seen in provider outputs.
    pub fn output_index(&self) -> &OutputIndex {
        &self.output_index
    }

    /// How the run ended.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// When it ended.
    pub fn finished_at_ms(&self) -> Option<u64> {
        self.finished_at_ms
    }

    /// How many times a process re-entered the run.
    pub fn resumes(&self) -> u32 {
        self.resumes
    }

    /// Who the run acts for.
    pub fn principal(&self) -> &crate::event::Principal {
        &self.principal
    }

    /// Approval requests, in the order made.
    pub fn approvals(&self) -> &[Approval] {
        &self.approvals
    }

    /// Whether the last event is a person's answer (an approval resolved, a call reconciled).
    pub fn answered_last(&self) -> bool {
        self.answered_last
    }

    /// Events of types this build does not know: (sequence, type).
    pub fn unrecognized(&self) -> &[(u64, String)] {
        &self.unrecognized
    }

    /// The log's format, from `run_started`.
    pub fn format(&self) -> &str {
        &self.format
    }

    /// Milliseconds spent before the run and each re-entry started (starting providers).
    pub fn setup_ms(&self) -> u64 {
        self.setup_ms
    }

    /// Milliseconds the run has spent driving by `now_ms` (deciding, calling, starting its
    /// providers): what its deadline bounds. Time it waited for a person or an operator, and
    /// time no process drove it, are not counted. Derived from event times only, so a replay
    /// judges the deadline as the run did.
    pub fn driven_ms(&self, now_ms: u64) -> u64 {
        self.clocks.driven_ms(now_ms)
    }

    /// Milliseconds the run has waited for people (an approval, a reconciliation, a child's
    /// person) by `now_ms`: from the event that made it wait to the re-entry that carried it
    /// on.
    pub fn waited_ms(&self, now_ms: u64) -> u64 {
        self.clocks.waited_ms(now_ms)
    }

    /// The values its starter gave its inputs (a root run's; a child's are carried values
    /// with their lineage in the parent), by name.
    pub fn inputs(&self) -> &[(String, Arc<Value>)] {
        &self.inputs
    }

    /// When the wait under way began, if the run waits now.
    pub fn waiting_since_ms(&self) -> Option<u64> {
        self.clocks.waiting_since
    }

    /// When the run's last wait for people began (0 if it never waited): a re-entry that ends
    /// a wait still knows how long it lasted.
    pub fn wait_began_ms(&self) -> u64 {
        self.clocks.wait_began
    }

    /// Tokens the decider reported (input plus output).
    pub fn tokens_used(&self) -> u64 {
        self.tokens_used
    }

    /// Cost the decider reported, in micro-dollars.
    pub fn cost_micro_usd(&self) -> u64 {
        self.cost_micro_usd
    }

    /// How many characters of a provider's own message its faults lead with
    /// (`run_started.messages`; 300 for a log that does not say).
    pub fn message_max(&self) -> usize {
        self.messages
            .map_or(crate::text::PROVIDER_MESSAGE_MAX_V1, |m| {
                usize::from(m.get())
            })
    }

    /// The rules its arguments' provenance is labelled by (`provenance::RULES`; 1 for a log
    /// that does not say).
    pub fn provenance_rules(&self) -> u32 {
        self.provenance.unwrap_or(1)
    }

    /// The provenance rules as `run_started` recorded them.
    pub fn recorded_provenance(&self) -> Option<u32> {
        self.provenance
    }

    /// The untrusted providers whose output the decider had been shown by its last decision:
    /// the integrity of its context now (empty: trusted text only).
    pub fn context_taint(&self) -> &[String] {
        self.decision_log
            .last()
            .map_or(&[][..], |d| &d.tainted_by[..])
    }

    /// [`RunState::context_taint`], shared.
    pub fn context_taint_shared(&self) -> Arc<[String]> {
        self.decision_log
            .last()
            .map_or_else(Arc::default, |d| d.tainted_by.clone())
    }

    /// The grant that rules step `i`: the spec's, else the one the decider proposed before
    /// anything was read (`plan_first`).
    pub fn grant_for(&self, i: usize) -> Option<&crate::spec::Grant> {
        let step = self.spec.as_ref()?.steps.get(i)?;
        step.grant
            .as_ref()
            .or_else(|| self.planned.as_ref().and_then(|p| p.get(&*step.id.0)))
    }

    /// [`RunState::grant_for`] the step with this id.
    pub fn grant_of(&self, step: &StepId) -> Option<&crate::spec::Grant> {
        let i = self
            .spec
            .as_ref()?
            .steps
            .iter()
            .position(|s| s.id == *step)?;
        self.grant_for(i)
    }

    /// Whether step `step`'s grant is the one the run's plan gave it (the step has none of its
    /// own).
    pub fn grant_is_planned(&self, step: &StepId) -> bool {
        let own = self
            .spec
            .as_ref()
            .and_then(|s| s.steps.iter().find(|s| s.id == *step))
            .is_some_and(|s| s.grant.is_some());
        !own && self
            .planned
            .as_ref()
            .is_some_and(|p| p.contains_key(&*step.0))
    }

    /// The approval that approved the run's plan as a whole (scope `plan`), while it holds at
    /// `now_ms`.
    pub fn plan_approval(&self, now_ms: u64) -> Option<&Approval> {
        self.approvals.iter().find(|a| {
            matches!(
                a.status,
                ApprovalStatus::Approved { scope: ApprovalScope::Plan, until_ms }
                    if until_ms.is_none_or(|u| now_ms < u)
            )
        })
    }

    /// The run's plan (`plan_first`), once the decider proposed it: step id to grant.
    pub fn plan(&self) -> Option<&BTreeMap<String, crate::spec::Grant>> {
        self.planned.as_ref()
    }

    /// Whether the run waits for its plan (`plan_first`, nothing decided yet).
    pub fn needs_plan(&self) -> bool {
        self.spec.as_ref().is_some_and(|s| s.plan_first) && self.planned.is_none()
    }

    /// The context taint of the decision that proposed `call` (none for a call no decision
    /// proposed).
    pub fn call_taint(&self, call: CallId) -> &[String] {
        self.call(call)
            .and_then(|c| {
                usize::try_from(c.decision)
                    .ok()?
                    .checked_sub(1)
                    .and_then(|i| self.decision_log.get(i))
            })
            .map_or(&[][..], |d| &d.tainted_by[..])
    }

    /// The frozen spec, shared (present once `run_started` is applied).
    pub fn shared_spec(&self) -> Option<&Arc<Spec>> {
        self.spec.as_ref()
    }

    /// The call with this id.
    pub fn call(&self, id: CallId) -> Option<&CallRecord> {
        (id.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.calls.get(i))
    }

    /// A call no projection shows any more needs no view.
    fn forget_view(&mut self, id: CallId) {
        if let Some(c) = self.call_mut(id) {
            c.view.take();
        }
    }

    /// No decision is left to show the recent calls to (their step ended, or another began).
    fn forget_recent_views(&mut self) {
        for i in 0..self.recent.len() {
            if let Some(&shown) = self.recent.get(i) {
                self.forget_view(shown);
            }
        }
    }

    fn call_mut(&mut self, id: CallId) -> Option<&mut CallRecord> {
        (id.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.calls.get_mut(i))
    }

    /// The state of step `i`. `steps` mirrors the spec's steps (`run_started` made it so); a
    /// step without a state reads as one that never ran.
    pub fn step(&self, i: usize) -> &StepState {
        self.steps.get(i).unwrap_or(&NEVER_RAN)
    }

    /// The id the next call will get.
    pub fn next_call_id(&self) -> CallId {
        CallId(
            u32::try_from(self.calls.len())
                .unwrap_or(u32::MAX)
                .saturating_add(1),
        )
    }

    /// Applies one event. Rejects an event that breaks the log's invariants.
    pub fn apply(&mut self, e: &Event) -> Result<(), FoldError> {
        let fail = |message: String| FoldError {
            seq: e.seq,
            kind: e.kind.name(),
            message,
        };
        // INVARIANT (one order): sequences are gapless from 1.
        if e.seq != self.last_seq + 1 {
            return Err(fail(format!("expected sequence {}", self.last_seq + 1)));
        }
        // INVARIANT (one order): nothing follows `run_finished`.
        if self.outcome.is_some() {
            return Err(fail("the run has already finished".into()));
        }
        if self.spec.is_none() && !matches!(e.kind, EventKind::RunStarted { .. }) {
            return Err(fail("the log must begin with `run_started`".into()));
        }
        match &e.kind {
            EventKind::RunStarted { .. } => self.apply_start(e),
            EventKind::StepStarted { .. }
            | EventKind::Observed { .. }
            | EventKind::ObserveFailed { .. }
            | EventKind::ProviderRestarted { .. }
            | EventKind::Unrecognized { .. }
            | EventKind::StepFinished { .. }
            | EventKind::StepSkipped { .. }
            | EventKind::DecideFailed { .. } => self.apply_steps(e),
            EventKind::Decided { .. } => self.apply_decided(e),
            EventKind::CallStarted { .. } => self.apply_intent(e),
            EventKind::CallDispatched { .. } | EventKind::CallFinished { .. } => {
                self.apply_calls(e)
            }
            EventKind::RunResumed { .. }
            | EventKind::CallInDoubt { .. }
            | EventKind::CallReconciled { .. }
            | EventKind::Carried { .. } => self.apply_settle(e),
            EventKind::ApprovalRequested { .. }
            | EventKind::ApprovalExpired { .. }
            | EventKind::ApprovalConsumed { .. } => self.apply_asked(e),
            EventKind::ApprovalResolved { .. } => self.apply_resolved(e),
            EventKind::ChildSpawned { .. }
            | EventKind::ChildWaiting { .. }
            | EventKind::ChildFinished { .. } => self.apply_children(e),
            EventKind::RunFinished { .. } => self.apply_finish(e),
        }
        .map_err(fail)?;
        self.answered_last = matches!(
            e.kind,
            EventKind::ApprovalResolved { .. } | EventKind::CallReconciled { .. }
        );
        self.clocks.apply(&e.kind, e.at_ms);
        if let Some(status) = status_after(&e.kind) {
            self.status = status;
        }
        self.last_seq = e.seq;
        self.last_at_ms = e.at_ms;
        Ok(())
    }

    fn approval_mut(&mut self, id: &str) -> Option<&mut Approval> {
        self.approvals.iter_mut().find(|a| a.id == id)
    }

    /// The approval request with this id.
    pub fn approval(&self, id: &str) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.id == id)
    }

    /// Approval requests still waiting for an answer.
    pub fn pending_approvals(&self) -> impl Iterator<Item = &Approval> {
        self.approvals
            .iter()
            .filter(|a| a.status == ApprovalStatus::Pending)
    }

    fn step_idx(&self, step: &StepId) -> Option<usize> {
        self.spec.as_ref().and_then(|s| s.step_index(step))
    }

    fn running_step(&self, step: &StepId) -> Result<usize, String> {
        match (self.step_idx(step), self.current) {
            (Some(i), Some(c)) if i == c => Ok(i),
            _ => Err(format!("step `{step}` is not the running step")),
        }
    }

    /// The handle's problem, if it cannot be used now for `tool` in step `step`.
    pub fn check_handle(
        &self,
        handle: HandleId,
        tool: &str,
        step: usize,
        now_ms: u64,
    ) -> Result<(), Fault> {
        let spec_ttl = self.spec.as_ref().map_or(0, |s| s.limits.handle_ttl_ms);
        let record = (handle.decision as usize)
            .checked_sub(1)
            .and_then(|i| self.decision_log.get(i))
            .filter(|r| r.step == step)
            .ok_or_else(|| {
                Fault::new(
                    Code::UnknownHandle,
                    Layer::Model,
                    format!("handle {handle} was not issued in this step"),
                )
            })?;
        let provider = self.provider_of(step);
        let current = self
            .observations
            .get(provider)
            .filter(|o| o.version == record.version);
        let action = current.and_then(|o| o.actions.get(handle.action as usize));
        if current.is_some() && action.is_none() {
            return Err(Fault::new(
                Code::UnknownHandle,
                Layer::Model,
                format!("handle {handle} was not issued in this step"),
            ));
        }
        if self.consumed.contains(&handle) {
            return Err(Fault::new(
                Code::HandleConsumed,
                Layer::Model,
                format!("handle {handle} was already used by a dispatched call"),
            ));
        }
        if now_ms >= record.at_ms.saturating_add(spec_ttl) {
            return Err(Fault::new(
                Code::HandleExpired,
                Layer::Model,
                format!(
                    "handle {handle} expired {} ms after it was issued",
                    spec_ttl
                ),
            ));
        }
        match action {
            None => Err(Fault::new(
                Code::StaleHandle,
                Layer::Model,
                format!(
                    "handle {handle} belongs to observation `{}`, which is no longer current",
                    record.version
                ),
            )),
            Some(a) if a.name != tool => Err(Fault::new(
                Code::HandleMismatch,
                Layer::Model,
                format!("handle {handle} is for `{}`, not `{tool}`", a.name),
            )),
            Some(_) => Ok(()),
        }
    }

    /// What to do next. Pure: the engine turns the answer into events.
    pub fn next(&self) -> Next {
        let Some(spec) = self.spec.as_ref() else {
            return Next::Ended;
        };
        if self.outcome.is_some() {
            return Next::Ended;
        }
        debug_assert_eq!(
            self.unsettled as usize,
            self.calls
                .iter()
                .filter(|c| c.in_doubt || (c.resend && c.resent_by.is_none()))
                .count(),
            "the count of unsettled calls agrees with the calls"
        );
        if self.unsettled > 0 {
            if let Some(c) = self.calls.iter().find(|c| c.in_doubt) {
                return Next::Wait(c.id);
            }
            // A call to be sent again is sent within its step; if the step ended meanwhile
            // (its provider could not be observed, say), it is not sent, and the report says so.
            if let Some(c) = self
                .calls
                .iter()
                .find(|c| c.resend && c.resent_by.is_none() && self.current == Some(c.step))
            {
                return Next::Resend(c.id);
            }
        }
        if let Some(c) = self
            .calls
            .last()
            .filter(|c| c.status.is_none() && c.executed.is_none())
            && let Some(request) = &c.awaiting
        {
            return match self.approval(request).map(|a| &a.status) {
                Some(ApprovalStatus::Pending) => Next::Wait(c.id),
                _ => Next::Redrive(c.id),
            };
        }
        if let Some(i) = self.current {
            return Next::Continue(i);
        }
        for (i, step) in spec.steps.iter().enumerate() {
            if self.step(i).status != StepStatus::Pending {
                continue;
            }
            let mut ready = true;
            for dep in &step.after {
                let Some(ds) = spec.step_index(dep).map(|d| self.step(d)) else {
                    continue;
                };
                match &ds.status {
                    StepStatus::Finished(StepEnd::Attained) => {}
                    StepStatus::Finished(StepEnd::NotAttained { fault })
                    | StepStatus::Skipped { fault, .. } => {
                        return Next::Skip {
                            step: i,
                            blocked_by: dep.clone(),
                            fault: fault.clone(),
                        };
                    }
                    _ => ready = false,
                }
            }
            if ready {
                return Next::Start(i);
            }
        }
        Next::Finish(self.terminal())
    }

    /// INVARIANT (completion is judged): the terminal predicate, from evidence only.
    pub fn terminal(&self) -> Outcome {
        let Some(spec) = self.spec.as_ref() else {
            return Outcome::Failed {
                fault: Fault::new(Code::NoSpec, Layer::Runtime, "the log has no spec"),
            };
        };
        let mut missing = Vec::new();
        for (i, step) in spec.steps.iter().enumerate() {
            let s = self.step(i);
            let fault = || match &s.status {
                StepStatus::Finished(StepEnd::NotAttained { fault })
                | StepStatus::Skipped { fault, .. } => fault.clone(),
                StepStatus::Running => Fault::new(
                    Code::StepUnfinished,
                    Layer::Orchestration,
                    format!("step `{}` has not finished", step.id),
                ),
                StepStatus::Pending | StepStatus::Finished(_) => Fault::new(
                    Code::StepNotRun,
                    Layer::Orchestration,
                    format!("step `{}` never ran", step.id),
                ),
            };
            // Each requirement is judged on its own, from what was found.
            if step.commit == CommitRule::Required && !s.committed {
                missing.push(Missing {
                    step: step.id.clone(),
                    requirement: "commit".into(),
                    fault: fault(),
                });
            }
            if step.required && !s.attained() {
                missing.push(Missing {
                    step: step.id.clone(),
                    requirement: "attained".into(),
                    fault: fault(),
                });
            }
        }
        if missing.is_empty() {
            Outcome::Attained
        } else {
            Outcome::NotAttained { missing }
        }
    }

    /// Judges a `done` for step `i` against the evidence.
    pub fn judge_done(&self, i: usize) -> StepEnd {
        let Some(spec) = self.spec.as_ref() else {
            return StepEnd::NotAttained {
                fault: Fault::new(Code::NoSpec, Layer::Runtime, "the log has no spec"),
            };
        };
        let s = self.step(i);
        let Some(step) = spec.steps.get(i) else {
            return StepEnd::NotAttained {
                fault: Fault::new(
                    Code::NoSpec,
                    Layer::Runtime,
                    format!("the log's spec has no step {i}"),
                ),
            };
        };
        if step.commit == CommitRule::Required && !s.committed {
            return StepEnd::NotAttained {
                fault: self.blame_missing_commit(
                    i,
                    "declared the step done, but no commit in it succeeded",
                ),
            };
        }
        // A step whose every call failed did nothing, whatever it requires: say what happened.
        if !s.succeeded {
            if let Some(fault) = self.blame_last_failure(i) {
                return StepEnd::NotAttained { fault };
            }
            if step.required {
                return StepEnd::NotAttained {
                    fault: Fault::new(
                        Code::DoneWithoutEvidence,
                        Layer::Model,
                        "declared the step done, but no call in it succeeded",
                    ),
                };
            }
        }
        if let Some((name, publish)) = self.unpublished(step).next() {
            // The publishing tool succeeded and its result lacks the path: the spec's path is
            // wrong, not the decider.
            let found = s.calls.iter().filter_map(|id| self.call(*id)).find(|c| {
                c.status == Some(CallStatus::Ok) && c.tool == publish.from && c.output.is_some()
            });
            let fault = match found {
                Some(c) => Fault::new(
                    Code::PublishPathMissing,
                    Layer::Spec,
                    format!(
                        "`{}` succeeded ({}), but its result has nothing at `{}`: check `steps.{}.publishes.{name}.path`",
                        publish.from,
                        c.id,
                        if publish.path.is_empty() {
                            "/"
                        } else {
                            &publish.path
                        },
                        step.id
                    ),
                ),
                None => Fault::new(
                    Code::OutputNotPublished,
                    Layer::Model,
                    format!(
                        "declared the step done, but no successful `{}` published `{}.{name}`",
                        publish.from, step.id
                    ),
                ),
            };
            return StepEnd::NotAttained { fault };
        }
        StepEnd::Attained
    }

    fn unpublished<'a>(
        &'a self,
        step: &'a StepSpec,
    ) -> impl Iterator<Item = (&'a String, &'a Publish)> + 'a {
        step.publishes
            .iter()
            .filter(move |(name, _)| !self.carried.contains_key(&format!("{}.{name}", step.id)))
    }

    /// Judges a decline of step `i`: the model declined, unless the evidence shows the required
    /// commit failed for another reason first.
    pub fn judge_decline(&self, i: usize, reason: &str) -> StepEnd {
        let declined = Fault::new(
            Code::Declined,
            Layer::Model,
            format!("the decider declined: {reason}"),
        );
        let Some(spec) = self.spec.as_ref() else {
            return StepEnd::NotAttained { fault: declined };
        };
        let commit_required = spec
            .steps
            .get(i)
            .is_some_and(|s| s.commit == CommitRule::Required);
        if commit_required && !self.step(i).committed {
            return StepEnd::NotAttained {
                fault: self.blame_missing_commit(i, &format!("declined: {reason}")),
            };
        }
        StepEnd::NotAttained { fault: declined }
    }

    /// INVARIANT (right attribution): a missing commit is blamed on the cause of the last
    /// failed commit attempt (provider error, policy stop, rejected call), or on the model
    /// when it never attempted one.
    fn blame_missing_commit(&self, i: usize, model_message: &str) -> Fault {
        let attempt = self
            .step(i)
            .calls
            .iter()
            .rev()
            .filter_map(|id| self.call(*id))
            .find(|c| {
                c.status.is_some_and(|s| s != CallStatus::Ok)
                    && (self.is_commit_tool(i, &c.tool)
                        // A tool the spec allows and the provider does not offer: the spec's
                        // fault, whatever the tool would have been.
                        || c.fault.as_ref().is_some_and(|f| f.layer == Layer::Spec))
            });
        match attempt.and_then(|c| c.fault.as_deref().cloned()) {
            Some(f) => f,
            None => Fault::new(Code::NoCommit, Layer::Model, model_message.to_owned()),
        }
    }

    fn blame_last_failure(&self, i: usize) -> Option<Fault> {
        self.step(i)
            .calls
            .iter()
            .rev()
            .filter_map(|id| self.call(*id))
            .find_map(|c| c.fault.as_deref().cloned())
    }

    fn is_commit_tool(&self, i: usize, tool: &str) -> bool {
        let provider = self.provider_of(i);
        self.observations
            .get(provider)
            .and_then(|o| o.actions.iter().find(|a| a.name == tool))
            .is_some_and(|a| a.effect == Effect::Commit)
    }

    /// The route: `provider/effect:tool` for each call that ran successfully, in order.
    pub fn route(&self) -> Vec<String> {
        if self.spec.is_none() {
            return Vec::new();
        }
        self.calls
            .iter()
            .filter(|c| c.status == Some(CallStatus::Ok))
            .map(|c| {
                let effect = c.effect.map_or("read".to_owned(), |e| e.to_string());
                format!("{}/{}:{}", self.provider_of(c.step), effect, c.tool)
            })
            .collect()
    }

    /// The route as one key: the steps of [`RunState::route`] joined by ` -> `.
    pub fn route_key(&self) -> String {
        let route = self.route();
        if route.is_empty() {
            "(none)".to_owned()
        } else {
            route.join(" -> ")
        }
    }

    /// The last call, if it started and has no result yet (in doubt or not).
    pub fn in_flight(&self) -> Option<&CallRecord> {
        self.calls.last().filter(|c| c.status.is_none())
    }

    /// Calls waiting for reconciliation.
    pub fn in_doubt(&self) -> impl Iterator<Item = &CallRecord> {
        let calls = if self.unsettled > 0 {
            &self.calls[..]
        } else {
            &[]
        };
        calls.iter().filter(|c| c.in_doubt)
    }

    /// Whether the run waits for a person: a call in doubt, or a call held by an approval
    /// request nobody has answered.
    pub fn waiting(&self) -> bool {
        self.outcome.is_none()
            && (self.in_doubt().next().is_some()
                || self.calls.last().is_some_and(|c| {
                    c.status.is_none()
                        && c.executed.is_none()
                        && c.awaiting.as_deref().is_some_and(|r| {
                            self.approval(r)
                                .is_some_and(|a| a.status == ApprovalStatus::Pending)
                        })
                }))
    }

    /// The run's status, in the one vocabulary every command uses: `running`, `waiting` (for
    /// a person), `ready` (a person answered; resuming carries it on), or the outcome's name.
    /// Derived from the events by [`status_after`], as the store's runs index derives it: every
    /// reader (`runs`, `show`, `resume --all`, a server) agrees.
    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// The provider of step `i`.
    pub fn provider_of(&self, i: usize) -> &str {
        step_provider(self.spec.as_deref(), i)
    }

    /// The decider's final answer: the last `done` summary or decline reason it gave.
    pub fn final_answer(&self) -> Option<&StepAnswer> {
        self.steps
            .iter()
            .filter_map(|s| s.answer.as_ref().zip(s.finished_at_ms))
            .max_by_key(|(_, at)| *at)
            .map(|(a, _)| a)
    }
}

/// Step `i`'s state. `i` indexes the spec's steps, which `run_started` mirrored in `steps`: a
/// step without a state is a broken log.
pub(super) fn step_state(steps: &mut [StepState], i: usize) -> Result<&mut StepState, String> {
    steps
        .get_mut(i)
        .ok_or_else(|| format!("the run holds no state for step {i}"))
}

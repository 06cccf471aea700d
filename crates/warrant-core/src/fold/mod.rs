//! Run state as a fold over events. The engine applies each event it appends; `show`,
//! `report`, resume and replay rebuild the same state from the stored log.
//!
//! The judgments of DESIGN.md live here as pure functions of that state: which step runs next,
//! whether a step's `done` is backed by evidence, who is to blame for a missing requirement, and
//! the terminal predicate.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::event::{
    ActionRecord, ApprovalScope, CallStatus, Claim, DeciderIdentity, DoubtStage, Effect, Event,
    EventKind, Fault, Lineage, Outcome, ParentLink, Spent, StepEnd,
};
use crate::ids::{CallId, HandleId, RunId, StepId};
use crate::provenance::{ArgLabel, OutputIndex};
use crate::spec::Spec;
use crate::status::RunStatus;

mod apply;
mod judge;
mod read;

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
    /// What its decisions reported they used.
    pub usage: crate::event::UsageSum,
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
            usage: crate::event::UsageSum::new(),
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
    /// Whose text its output is when not its provider's own: a web page's tool that a third
    /// party's script registered (`<provider> via <origin>`, never trusted), as its place in
    /// the run's list of them (a call record stays small). See [`RunState::text_source`].
    pub(crate) source: Option<u16>,
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
    /// When it was asked.
    pub requested_at_ms: u64,
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
    /// The standing grant that answered it, when one did (`approval_granted`).
    pub grant: Option<String>,
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
    /// What a web page showed of itself.
    pub page: Option<crate::event::PageSnapshot>,
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
        | EventKind::ChildWaiting { .. }
        | EventKind::QuestionAsked { .. } => Some(RunStatus::Waiting),
        EventKind::TimerSet { .. } => Some(RunStatus::Sleeping),
        // One of several approvers approved: the request still waits for the others.
        EventKind::ApprovalResolved { awaiting, .. } if *awaiting > 0 => None,
        EventKind::CallReconciled { .. }
        | EventKind::ApprovalResolved { .. }
        | EventKind::QuestionAnswered { .. } => Some(RunStatus::Ready),
        // A standing grant answered the request it follows at once: the run goes on.
        EventKind::RunStarted { .. }
        | EventKind::RunResumed { .. }
        | EventKind::RunTakenUp { .. }
        | EventKind::ApprovalGranted { .. }
        | EventKind::ApprovalExpired { .. }
        | EventKind::TimerFired { .. } => Some(RunStatus::Running),
        _ => None,
    }
}

/// The provider of step `i` of `spec` (empty when there is no such step). A function of the
/// spec alone, so the fold can borrow it beside its other fields.
pub(super) fn step_provider(spec: Option<&Spec>, i: usize) -> &str {
    spec.and_then(|s| s.steps.get(i))
        .map_or("", |s| s.provider.as_str())
}

/// Whose text a call of step `i` gives: the third party at `source` in `third_parties`, or the
/// step's provider.
pub(super) fn source_name<'a>(
    third_parties: &'a [Arc<str>],
    spec: Option<&'a Spec>,
    i: usize,
    source: Option<u16>,
) -> &'a str {
    source
        .and_then(|at| third_parties.get(usize::from(at)))
        .map_or_else(|| step_provider(spec, i), |s| &**s)
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
            EventKind::RunStarted { setup_ms, .. }
            | EventKind::RunResumed { setup_ms, .. }
            | EventKind::RunTakenUp { setup_ms, .. } => {
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
            EventKind::ApprovalResolved { .. }
            | EventKind::CallReconciled { .. }
            | EventKind::QuestionAnswered { .. } => {}
            // Waiting for a person, or asleep: neither is driving time.
            k if matches!(
                status_after(k),
                Some(RunStatus::Waiting | RunStatus::Sleeping)
            ) =>
            {
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
    /// The third parties whose tools on a page this run called (`<provider> via <origin>`).
    pub(crate) third_parties: Vec<Arc<str>>,
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
    /// What its decisions reported they used.
    pub(crate) usage: crate::event::UsageSum,
    /// The run that delegated to this one, when it is a child.
    pub(crate) parent: Option<ParentLink>,
    /// What its ended children spent.
    pub(crate) children_spent: Spent,
    /// How many calls are in doubt or reconciled to be sent again and not yet sent: when none
    /// is, deciding what comes next need not look through every call.
    unsettled: u32,
    /// The timer the run sleeps on, until it fires: its step and when it wakes.
    pub(crate) sleeping: Option<(usize, u64)>,
    /// The questions its decider asked, in order.
    pub(crate) questions: Vec<Question>,
    /// What providers asked the person during calls, in order.
    pub(crate) provider_asked: Vec<ProviderQuestion>,
}

/// A question the decider asked the person the run acts for, and its answer once given.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    /// `<run>-q<n>`.
    pub id: String,
    /// The step that asked.
    #[serde(skip)]
    pub step: usize,
    /// What was asked.
    pub prompt: String,
    /// The schema the answer must satisfy.
    pub schema: Arc<Value>,
    /// When it was asked.
    pub asked_at_ms: u64,
    /// The answer, once given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Arc<Value>>,
    /// Who answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// When.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_at_ms: Option<u64>,
}

/// What a provider asked the person during a call (`provider_asked`), and what they said.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ProviderQuestion {
    /// The call in flight.
    pub call: CallId,
    /// What it asked.
    pub message: String,
    /// The form of the answer it asked for.
    pub schema: Arc<Value>,
    /// `accept`, `decline`, `cancel`, or `unasked`.
    pub action: String,
    /// The answer, when they accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Arc<Value>>,
    /// When.
    pub at_ms: u64,
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
    /// The decider asked the person a question: nothing happens until it is answered.
    Question,
    /// The run sleeps (a timer): it wakes, and the step goes on, once a re-entry is recorded
    /// at or after `until` (ms since the epoch).
    Sleep {
        /// The step that sleeps.
        step: usize,
        /// When it wakes.
        until: u64,
    },
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
            | EventKind::RunTakenUp { .. }
            | EventKind::CallInDoubt { .. }
            | EventKind::CallReconciled { .. }
            | EventKind::Carried { .. } => self.apply_settle(e),
            EventKind::ApprovalRequested { .. }
            | EventKind::ApprovalExpired { .. }
            | EventKind::ApprovalConsumed { .. }
            | EventKind::ApprovalGranted { .. } => self.apply_asked(e),
            EventKind::ApprovalResolved { .. } => self.apply_resolved(e),
            EventKind::TimerSet { .. } | EventKind::TimerFired { .. } => self.apply_timer(e),
            EventKind::QuestionAsked { .. }
            | EventKind::QuestionAnswered { .. }
            | EventKind::ProviderAsked { .. } => self.apply_question(e),
            EventKind::ChildSpawned { .. }
            | EventKind::ChildWaiting { .. }
            | EventKind::ChildFinished { .. } => self.apply_children(e),
            EventKind::RunFinished { .. } => self.apply_finish(e),
        }
        .map_err(fail)?;
        self.answered_last = matches!(
            e.kind,
            EventKind::ApprovalResolved { .. }
                | EventKind::CallReconciled { .. }
                | EventKind::QuestionAnswered { .. }
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
                || self.pending_question().is_some()
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

    /// Whose text a call's output is (its provider's, or a third party's on a web page).
    pub fn text_source(&self, call: &CallRecord) -> &str {
        source_name(
            &self.third_parties,
            self.spec.as_deref(),
            call.step,
            call.source,
        )
    }

    /// For a call of `tool` in step `i`: the third party whose script registered it on the
    /// provider's page, as observed (none: the provider's own tool).
    pub(super) fn third_party_source(&mut self, i: usize, tool: &str) -> Option<u16> {
        let provider = self.provider_of(i);
        let action = self
            .observations
            .get(provider)?
            .actions
            .iter()
            .find(|a| a.name == tool)?;
        action.origin.as_ref()?.third_party()?;
        let source = crate::event::text_source(provider, action.origin.as_ref()).into_owned();
        let at = match self.third_parties.iter().position(|s| **s == *source) {
            Some(at) => at,
            None => {
                self.third_parties.push(source.into());
                self.third_parties.len() - 1
            }
        };
        u16::try_from(at).ok()
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

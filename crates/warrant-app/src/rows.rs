//! What the queries return: typed rows that serialise for `--json` (and a server's answers)
//! and that a front door renders for people.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use warrant_core::fold::StepAnswer;
use warrant_core::ids::{CallId, RunId, StepId};
use warrant_core::provenance::ArgLabel;
use warrant_core::report::{RunReport, SpecRef, UnsettledReport};
use warrant_core::store::PendingApproval;
use warrant_core::{ApprovalState, Outcome, RunState, RunStatus};

/// A call in doubt, as an operator needs it to find out whether it happened.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct DoubtRow {
    /// The call.
    pub call: CallId,
    /// Its tool.
    pub tool: String,
    /// Its provider.
    pub provider: String,
    /// The arguments it was sent with.
    pub args: Option<Arc<Value>>,
    /// Their digest.
    pub args_digest: Option<String>,
    /// What is known of whether it reached the provider.
    pub known: Option<String>,
}

/// An approval request.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ApprovalRow {
    /// `<run>-a<n>`: what `approve` and `deny` take.
    pub request: String,
    /// The run.
    pub run: RunId,
    /// When the run is a child: the run that delegated to it (its asks route up there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<RunId>,
    /// The call it holds.
    pub call: CallId,
    /// The step.
    pub step: StepId,
    /// The tool.
    pub tool: String,
    /// The provider.
    pub provider: String,
    /// `pending`, `approved`, `denied`, `expired` or `withdrawn`.
    pub status: ApprovalState,
    /// What the authority said needs approving.
    pub reason: String,
    /// The exact arguments an approval lets through.
    pub args: Arc<Value>,
    /// Their digest (an approval binds it).
    pub args_digest: String,
    /// Where each argument value was observed.
    pub provenance: Vec<ArgLabel>,
    /// Unanswered at this time, it expires.
    pub expires_at_ms: u64,
    /// How many different people must approve it.
    pub approvers: u32,
    /// Who approved it so far (when it needs several).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_by: Vec<String>,
    /// The scope it proposes: `plan` when it describes the run's plan, to approve as a whole.
    pub proposed_scope: &'static str,
}

impl ApprovalRow {
    pub(crate) fn new(asked: PendingApproval, status: ApprovalState) -> ApprovalRow {
        ApprovalRow {
            request: asked.request,
            parent: asked
                .run_id
                .0
                .rsplit_once('.')
                .map(|(p, _)| RunId(p.to_owned())),
            run: asked.run_id,
            call: asked.call,
            step: asked.step,
            tool: asked.tool,
            provider: asked.provider,
            status,
            reason: asked.reason,
            args: asked.args,
            args_digest: asked.args_digest,
            provenance: asked.provenance,
            expires_at_ms: asked.expires_at_ms,
            approvers: asked.approvers,
            approved_by: Vec::new(),
            proposed_scope: asked.proposed_scope.as_str(),
        }
    }
}

/// What a run waits on: calls in doubt, approval requests nobody answered.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Waiting {
    /// Calls in doubt: reconcile them.
    pub waiting_on: Vec<DoubtRow>,
    /// Pending approval requests: approve or deny them.
    pub approvals: Vec<ApprovalRow>,
}

impl Waiting {
    /// What the run whose log is `events` (folded into `state`) waits on.
    pub fn of(state: &RunState, events: &[Arc<warrant_core::Event>]) -> Waiting {
        let waiting_on = state
            .in_doubt()
            .map(|c| DoubtRow {
                call: c.id,
                tool: c.tool.clone(),
                provider: state.provider_of(c.step).to_owned(),
                args: c.executed.clone(),
                args_digest: c.executed.as_ref().map(|a| warrant_core::canon::digest(a)),
                known: c.doubt.map(|d| d.describe().to_owned()),
            })
            .collect();
        let run = state
            .run_id()
            .cloned()
            .unwrap_or_else(|| RunId(String::new()));
        let approvals = state
            .pending_approvals()
            .filter_map(|a| {
                events
                    .iter()
                    .filter_map(|e| PendingApproval::asked(&run, e))
                    .find(|asked| asked.request == a.id)
            })
            .map(|asked| ApprovalRow::new(asked, ApprovalState::Pending))
            .collect();
        Waiting {
            waiting_on,
            approvals,
        }
    }
}

/// One call of a step, as `show` lists it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct CallRow {
    /// The call.
    pub call: CallId,
    /// Its tool.
    pub tool: String,
    /// How it ended, or `in doubt`, `held for approval`, `in flight`.
    pub status: String,
    /// What went wrong, in the words recorded (a provider's own first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// One step, as `show` lists it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct StepRow {
    /// The step.
    pub id: StepId,
    /// Where it stands.
    pub status: String,
    /// Decisions taken in it.
    pub decisions: u32,
    /// Its calls (the JSON gives their number).
    #[serde(rename = "calls", serialize_with = "count")]
    #[schemars(with = "u64")]
    pub call_rows: Vec<CallRow>,
    /// Its answer, when it gave one.
    pub answer: Option<StepAnswer>,
}

fn count<S: serde::Serializer>(calls: &[CallRow], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(calls.len()).unwrap_or(u64::MAX))
}

/// The last event of a run's log.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct LastEvent {
    /// Its sequence number.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// One run, as `show` gives it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RunView {
    /// The run.
    pub run_id: RunId,
    /// Where it stands: the status every reader derives the same way (`queued` or
    /// `interrupted` when it runs and no process drives it).
    pub status: RunStatus,
    /// Why a run nobody drives has not been taken up yet (its tenant is at its fair share).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How it ended.
    pub outcome: Option<&'static str>,
    /// Its spec.
    pub spec: SpecRef,
    /// Its decider.
    pub decider: warrant_core::event::DeciderIdentity,
    /// Its answer, when its objective asked for one.
    pub answer: Option<StepAnswer>,
    /// Its steps.
    pub steps: Vec<StepRow>,
    /// What it waits on.
    #[serde(flatten)]
    pub waiting: Waiting,
    /// Calls left unsettled.
    pub unsettled: Vec<UnsettledReport>,
    /// What the report warns of.
    pub warnings: Vec<String>,
    /// Its last event.
    pub last_event: LastEvent,
    /// The time it has spent driving (deciding, calling, starting providers): what its
    /// deadline bounds.
    pub driving_ms: u64,
    /// The time it has waited for people (approvals, reconciliations), up to now while it
    /// waits: never spent from its deadline.
    pub waiting_ms: u64,
    /// Tokens and cost its decisions reported, its children's, and its limits on both.
    pub usage: warrant_core::report::UsageReport,
    /// The run that delegated to it, when it is a child.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<warrant_core::report::ParentReport>,
    /// The child runs it delegated to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<warrant_core::report::ChildReport>,
    /// The question its decider asked that waits for an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<warrant_core::fold::Question>,
}

impl RunView {
    pub(crate) fn new(
        report: RunReport,
        state: &RunState,
        events: &[Arc<warrant_core::Event>],
        status: RunStatus,
    ) -> RunView {
        let steps = report
            .steps
            .iter()
            .map(|s| StepRow {
                id: s.id.clone(),
                status: s.status.clone(),
                decisions: s.decisions,
                call_rows: s
                    .calls
                    .iter()
                    .map(|c| CallRow {
                        call: c.call,
                        tool: c.tool.clone(),
                        status: match (c.status, state.call(c.call)) {
                            (Some(st), _) => st.to_string(),
                            (None, Some(r)) if r.in_doubt => "in doubt".to_owned(),
                            (None, Some(r)) if r.awaiting.is_some() => {
                                "held for approval".to_owned()
                            }
                            _ => "in flight".to_owned(),
                        },
                        fault: c.fault.as_ref().map(|f| f.message.clone()),
                    })
                    .collect(),
                answer: s.answer.clone(),
            })
            .collect();
        let last_event = events.last().map_or(
            LastEvent {
                seq: 0,
                kind: "none",
            },
            |e| LastEvent {
                seq: e.seq,
                kind: e.kind.name(),
            },
        );
        RunView {
            run_id: report.run_id,
            status,
            note: None,
            outcome: report.outcome.as_ref().map(Outcome::name),
            spec: report.spec,
            decider: report.decider,
            answer: report.answer,
            steps,
            waiting: Waiting::of(state, events),
            unsettled: report.unsettled,
            warnings: report.warnings,
            last_event,
            driving_ms: report.timings.driving_ms,
            waiting_ms: report.timings.waiting_ms,
            usage: report.usage,
            parent: report.parent,
            children: report.children,
            question: state.pending_question().cloned(),
        }
    }
}

//! What a run's state says, read: its spec and decider, its clocks and budgets spent, its
//! steps, calls, approvals and carried values, and the provenance rules it was recorded under.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::{
    Approval, ApprovalStatus, CallRecord, Carried, ChildRecord, DecisionRecord, NEVER_RAN,
    ObservationRecord, RunState, StepState,
};
use crate::event::{ApprovalScope, DeciderIdentity, Outcome, ParentLink, Spent};
use crate::ids::{CallId, HandleId, RunId, StepId};
use crate::provenance::OutputIndex;
use crate::spec::Spec;

impl RunState {
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
            tokens: self.usage.tokens().saturating_add(c.tokens),
            cost_micro_usd: self.usage.cost_micro_usd.saturating_add(c.cost_micro_usd),
        }
    }

    /// What the run spent by itself (its children's spending left out).
    pub fn own_spent(&self) -> Spent {
        Spent {
            decisions: self.decisions,
            calls: u32::try_from(self.calls.len()).unwrap_or(u32::MAX),
            tokens: self.usage.tokens(),
            cost_micro_usd: self.usage.cost_micro_usd,
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

    /// The questions its decider asked, in order, with their answers.
    pub fn questions(&self) -> &[crate::fold::Question] {
        &self.questions
    }

    /// What providers asked the person during calls, in order.
    pub fn provider_asked(&self) -> &[crate::fold::ProviderQuestion] {
        &self.provider_asked
    }

    /// The question that waits for an answer, if one does.
    pub fn pending_question(&self) -> Option<&crate::fold::Question> {
        self.questions.last().filter(|q| q.answer.is_none())
    }

    /// The question with this id.
    pub fn question(&self, id: &str) -> Option<&crate::fold::Question> {
        self.questions.iter().find(|q| q.id == id)
    }

    /// When the run's timer wakes it, while it sleeps.
    pub fn sleeping_until(&self) -> Option<u64> {
        self.sleeping.map(|(_, until)| until)
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
        self.usage.tokens()
    }

    /// Cost the decider reported, in micro-dollars.
    pub fn cost_micro_usd(&self) -> u64 {
        self.usage.cost_micro_usd
    }

    /// What its ended children spent, together.
    pub fn children_spent(&self) -> &Spent {
        &self.children_spent
    }

    /// What the run's own decisions reported they used (its children's left out).
    pub fn usage(&self) -> &crate::event::UsageSum {
        &self.usage
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
    pub(super) fn forget_view(&mut self, id: CallId) {
        if let Some(c) = self.call_mut(id) {
            c.view.take();
        }
    }

    /// No decision is left to show the recent calls to (their step ended, or another began).
    pub(super) fn forget_recent_views(&mut self) {
        for i in 0..self.recent.len() {
            if let Some(&shown) = self.recent.get(i) {
                self.forget_view(shown);
            }
        }
    }

    pub(super) fn call_mut(&mut self, id: CallId) -> Option<&mut CallRecord> {
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
}

//! How each family of events changes a run's state: one function per family, called by
//! [`RunState::apply`] once the event is checked to continue the log.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    Approval, ApprovalStatus, CallRecord, Carried, ChildRecord, DecisionRecord, ObservationRecord,
    RECENT_CALLS_MAX, RunState, StepAnswer, StepState, StepStatus, approve_by_several, source_name,
    step_state,
};
use crate::codes::Code;
use crate::event::{
    ApprovalScope, CallStatus, Decision, DoubtStage, Effect, Event, EventKind, Fault, Layer,
    Lineage, Outcome, Spent,
};
use crate::ids::{CallId, StepId};

impl RunState {
    /// `run_started`: the spec, the decider, the rules and the inputs the run began with.
    pub(super) fn apply_start(&mut self, e: &Event) -> Result<(), String> {
        if let EventKind::RunStarted {
            format,
            run_id,
            spec,
            spec_hash,
            decider,
            principal,
            setup_ms,
            authority,
            execution_control,
            provenance,
            messages,
            parent,
            inputs,
            build,
        } = &e.kind
        {
            self.messages = *messages;
            if self.spec.is_some() {
                return Err("a second `run_started`".into());
            }
            self.build = build.clone();
            // A root's inputs, given by its starter: carried values whose lineage is the
            // start itself (call `c0` of step `input`), and a user's words for provenance.
            for (name, value) in inputs.iter().flat_map(|i| i.iter()) {
                let value = Arc::new(value.clone());
                self.carried.insert(
                    format!("{}.{name}", crate::validate::INPUT_STEP),
                    Carried {
                        value: value.clone(),
                        lineage: Lineage {
                            run: run_id.clone(),
                            step: StepId(crate::validate::INPUT_STEP.into()),
                            call: CallId(0),
                            tool: crate::validate::INPUT_STEP.into(),
                            path: format!("/{name}"),
                        },
                    },
                );
                self.inputs.push((name.clone(), value));
            }
            if let Some(link) = parent {
                // A child's inputs are its first carried values, with their lineage in
                // the parent's run.
                for (name, given) in &link.inputs {
                    self.carried.insert(
                        format!("{}.{name}", crate::validate::INPUT_STEP),
                        Carried {
                            value: given.value.clone(),
                            lineage: given.lineage.clone(),
                        },
                    );
                }
            }
            self.parent = parent.as_deref().cloned();
            self.authority = authority.clone();
            self.provenance = *provenance;
            self.execution_control = execution_control.clone();
            self.format = format.to_string();
            self.setup_ms += setup_ms.unwrap_or(0);
            self.principal =
                principal
                    .as_deref()
                    .cloned()
                    .unwrap_or_else(|| crate::event::Principal {
                        tenant: String::new(),
                        user: String::new(),
                        agent: decider.to_string(),
                    });
            self.run_id = Some(run_id.clone());
            self.steps = spec.steps.iter().map(|_| StepState::new()).collect();
            self.spec = Some(spec.clone());
            self.spec_hash = spec_hash.clone();
            self.decider = Some(decider.clone());
            self.started_at_ms = e.at_ms;
        }
        Ok(())
    }

    /// A step's start and end, what was observed in it, and what the fold keeps but does not act on.
    pub(super) fn apply_steps(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            EventKind::StepStarted { step, .. } => {
                let i = self
                    .step_idx(step)
                    .ok_or_else(|| format!("unknown step `{step}`"))?;
                if self.current.is_some() {
                    return Err("a step is already running".into());
                }
                let s = step_state(&mut self.steps, i)?;
                if s.status != StepStatus::Pending {
                    return Err(format!("step `{step}` already started"));
                }
                s.status = StepStatus::Running;
                s.started_at_ms = Some(e.at_ms);
                self.current = Some(i);
                self.forget_recent_views();
                self.recent.clear();
            }
            EventKind::Observed {
                provider,
                version,
                actions,
                page,
                ..
            } => {
                // Rules 2: a provider's tool descriptions (and a page's snapshot of itself) are
                // text it wrote, traced like its output; a third party's tools', as that party's.
                if self.provenance_rules() >= 2 {
                    let mut texts: BTreeMap<std::borrow::Cow<'_, str>, Vec<&str>> = BTreeMap::new();
                    for a in actions.iter() {
                        texts
                            .entry(crate::event::text_source(provider, a.origin.as_ref()))
                            .or_default()
                            .push(a.description.as_str());
                    }
                    let page_text = page.as_ref().map(crate::event::PageSnapshot::text);
                    if let Some(t) = &page_text {
                        texts
                            .entry(provider.as_str().into())
                            .or_default()
                            .push(t.as_str());
                    }
                    for (source, text) in &texts {
                        self.output_index
                            .record_text(source, None, &text.join("\n"));
                    }
                }
                self.observations.insert(
                    provider.clone(),
                    ObservationRecord {
                        version: version.clone(),
                        actions: actions.clone(),
                        page: page.clone(),
                    },
                );
            }
            EventKind::ObserveFailed { .. } | EventKind::DecideFailed { .. } => {}
            EventKind::ProviderRestarted {
                call: Some(call),
                fault,
                ..
            } => {
                let c = self
                    .call_mut(*call)
                    .ok_or_else(|| format!("unknown call {call}"))?;
                c.unsent = fault.is_some();
            }
            EventKind::ProviderRestarted { call: None, .. } => {}
            EventKind::Unrecognized { type_name, .. } => {
                self.unrecognized.push((e.seq, type_name.clone()));
            }
            EventKind::StepFinished { step, end } => {
                let i = self.running_step(step)?;
                if self.calls.last().is_some_and(|c| c.status.is_none()) {
                    return Err("a call is still in flight".into());
                }
                let s = step_state(&mut self.steps, i)?;
                if let Some(c) = s.children.iter().find(|c| c.outcome.is_none()) {
                    return Err(format!("child `{}` has not ended", c.run));
                }
                s.status = StepStatus::Finished(end.clone());
                s.finished_at_ms = Some(e.at_ms);
                self.current = None;
                self.forget_recent_views();
            }
            EventKind::StepSkipped {
                step,
                blocked_by,
                fault,
            } => {
                let i = self
                    .step_idx(step)
                    .ok_or_else(|| format!("unknown step `{step}`"))?;
                let s = step_state(&mut self.steps, i)?;
                if s.status != StepStatus::Pending {
                    return Err(format!("step `{step}` already started"));
                }
                s.status = StepStatus::Skipped {
                    blocked_by: blocked_by.clone(),
                    fault: fault.clone(),
                };
            }
            _ => {}
        }
        Ok(())
    }

    /// `decided`: the decider's proposal for the running step.
    pub(super) fn apply_decided(&mut self, e: &Event) -> Result<(), String> {
        if let EventKind::Decided {
            step,
            decision_no,
            version,
            usage,
            tainted_by,
            ..
        } = &e.kind
        {
            let i = self.running_step(step)?;
            if *decision_no != self.decisions + 1 {
                return Err(format!("expected decision {}", self.decisions + 1));
            }
            let planning = matches!(
                &e.kind,
                EventKind::Decided {
                    decision: Decision::Plan { .. },
                    ..
                }
            );
            if planning && (self.planned.is_some() || self.decisions > 0) {
                return Err("a plan comes before any other decision, once".into());
            }
            let s = step_state(&mut self.steps, i)?;
            if let Some(u) = usage {
                self.usage.add(u);
                s.usage.add(u);
            }
            // The plan is the run's, not its first step's: that step's decisions start after it.
            if !planning {
                s.decisions += 1;
            }
            self.decisions += 1;
            self.pending_claims = None;
            if let EventKind::Decided { decision, .. } = &e.kind {
                match decision {
                    Decision::Plan { grants } => self.planned = Some(grants.clone()),
                    Decision::Call { claims, .. } => self.pending_claims = Some(claims.clone()),
                    Decision::Done { summary } => {
                        s.answer = Some(StepAnswer {
                            kind: "done".into(),
                            text: summary.clone(),
                        });
                    }
                    Decision::Decline { reason } => {
                        s.answer = Some(StepAnswer {
                            kind: "decline".into(),
                            text: reason.clone(),
                        });
                    }
                    Decision::Wait { .. } | Decision::Ask { .. } => {}
                }
            }
            self.decision_log.push(DecisionRecord {
                step: i,
                version: version.clone(),
                at_ms: e.at_ms,
                tainted_by: tainted_by.clone(),
            });
        }
        Ok(())
    }

    /// `question_asked` and `question_answered`: the running step asks, and is answered.
    pub(super) fn apply_question(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            kind @ EventKind::ProviderAsked { .. } => {
                let Some((call, asked)) = crate::ports::Asked::of(kind) else {
                    return Ok(());
                };
                let c = self.call(call).ok_or_else(|| format!("no call `{call}`"))?;
                if c.executed.is_none() || c.status.is_some() {
                    return Err(format!("call `{call}` was not in flight"));
                }
                self.provider_asked.push(super::ProviderQuestion {
                    call,
                    message: asked.message,
                    schema: asked.schema,
                    action: asked.action,
                    answer: asked.answer,
                    at_ms: e.at_ms,
                });
            }
            EventKind::QuestionAsked {
                question,
                step,
                prompt,
                schema,
            } => {
                let i = self.running_step(step)?;
                let run = self.run_id.as_ref().map_or("", |r| r.0.as_str());
                let want = format!("{run}-q{}", self.questions.len() + 1);
                if *question != want {
                    return Err(format!("expected question `{want}`, not `{question}`"));
                }
                if self.pending_question().is_some() {
                    return Err("a question is still unanswered".into());
                }
                self.questions.push(super::Question {
                    id: question.clone(),
                    step: i,
                    prompt: prompt.clone(),
                    schema: schema.clone(),
                    asked_at_ms: e.at_ms,
                    answer: None,
                    by: None,
                    answered_at_ms: None,
                });
            }
            EventKind::QuestionAnswered {
                question,
                answer,
                by,
            } => {
                let q = self
                    .questions
                    .iter_mut()
                    .find(|q| q.id == *question)
                    .ok_or_else(|| format!("no question `{question}`"))?;
                if q.answer.is_some() {
                    return Err(format!("question `{question}` was answered already"));
                }
                q.answer = Some(answer.clone());
                q.by = Some(by.clone());
                q.answered_at_ms = Some(e.at_ms);
            }
            _ => {}
        }
        Ok(())
    }

    /// `timer_set` and `timer_fired`: the running step sleeps, then wakes.
    pub(super) fn apply_timer(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            EventKind::TimerSet { step, until_ms, .. } => {
                let i = self.running_step(step)?;
                if self.sleeping.is_some() {
                    return Err("the run already sleeps".into());
                }
                if self.calls.last().is_some_and(|c| c.status.is_none()) {
                    return Err("a call is still in flight".into());
                }
                self.sleeping = Some((i, *until_ms));
            }
            EventKind::TimerFired { step } => {
                let i = self.running_step(step)?;
                match self.sleeping.take() {
                    Some((at, until)) if at == i && e.at_ms >= until => {}
                    Some((_, until)) if e.at_ms < until => {
                        return Err(format!("the timer fired before its time, {until}"));
                    }
                    _ => return Err(format!("step `{step}` does not sleep")),
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `call_started`: a call's intent, made durable before the provider is called.
    pub(super) fn apply_intent(&mut self, e: &Event) -> Result<(), String> {
        if let EventKind::CallStarted {
            call,
            step,
            tool,
            handle,
            args,
            resend_of,
        } = &e.kind
        {
            let i = self.running_step(step)?;
            if *call != self.next_call_id() {
                return Err(format!("expected call {}", self.next_call_id()));
            }
            if self.calls.iter().rev().take(1).any(|c| c.status.is_none()) {
                return Err("a call is still in flight".into());
            }
            if let Some(earlier) = resend_of {
                let c = self
                    .call_mut(*earlier)
                    .ok_or_else(|| format!("unknown call {earlier}"))?;
                if !c.resend || c.resent_by.is_some() || c.step != i || c.tool != *tool {
                    return Err(format!(
                        "call {earlier} was not reconciled to be sent again as `{tool}`"
                    ));
                }
                c.resent_by = Some(*call);
                self.unsettled = self.unsettled.saturating_sub(1);
            }
            step_state(&mut self.steps, i)?.calls.push(*call);
            let source = self.third_party_source(i, tool);
            if self.calls.capacity() == 0 {
                self.calls.reserve_exact(self.calls_reserved());
            }
            self.calls.push(CallRecord {
                id: *call,
                step: i,
                source,
                tool: tool.clone(),
                handle: *handle,
                decision: self.decisions,
                claims: if resend_of.is_some() {
                    Vec::new()
                } else {
                    self.pending_claims.take().unwrap_or_default()
                },
                awaiting: None,
                in_doubt: false,
                doubt: None,
                resend: false,
                unsent: false,
                resent_by: None,
                resend_of: *resend_of,
                reconciled: None,
                proposed: args.clone(),
                executed: None,
                effect: None,
                provenance: Vec::new(),
                idempotency_key: None,
                status: None,
                output: None,
                fault: None,
                started_at_ms: e.at_ms,
                finished_at_ms: None,
                view: std::sync::OnceLock::new(),
            });
            self.recent.push_back(*call);
            if self.recent.len() > RECENT_CALLS_MAX
                && let Some(shown) = self.recent.pop_front()
            {
                self.forget_view(shown);
            }
        }
        Ok(())
    }

    /// A call's dispatch and result.
    pub(super) fn apply_calls(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            EventKind::CallDispatched {
                call,
                effect,
                args,
                idempotency_key,
                provenance,
                ..
            } => {
                let c = self
                    .call_mut(*call)
                    .ok_or_else(|| format!("unknown call {call}"))?;
                if c.status.is_some() || c.executed.is_some() {
                    return Err(format!("call {call} was already dispatched or finished"));
                }
                c.executed = Some(args.clone());
                c.effect = Some(*effect);
                c.provenance = provenance.clone();
                c.idempotency_key = Some(idempotency_key.clone());
                // INVARIANT (denied stays denied): a dispatched handle is consumed.
                if let Some(h) = c.handle
                    && !self.consumed.insert(h)
                {
                    return Err(format!("handle {h} was already consumed"));
                }
            }
            EventKind::CallFinished {
                call,
                status,
                output,
                fault,
                ..
            } => {
                let c = self
                    .call_mut(*call)
                    .ok_or_else(|| format!("unknown call {call}"))?;
                if c.status.is_some() {
                    return Err(format!("call {call} finished twice"));
                }
                if c.in_doubt {
                    return Err(format!(
                        "call {call} is in doubt: only a reconciliation finishes it"
                    ));
                }
                // INVARIANT (log first): only a dispatched call reaches a provider.
                if matches!(status, CallStatus::Ok | CallStatus::ProviderError)
                    && c.executed.is_none()
                {
                    return Err(format!(
                        "call {call} reached the provider without a dispatch intent"
                    ));
                }
                c.status = Some(*status);
                c.output = output.clone();
                c.fault = fault.clone().map(Box::new);
                c.finished_at_ms = Some(e.at_ms);
                let (step, effect, id, source) = (c.step, c.effect, c.id, c.source);
                if *status == CallStatus::Ok {
                    let s = step_state(&mut self.steps, step)?;
                    s.succeeded = true;
                    if effect == Some(Effect::Commit) {
                        s.committed = true;
                    }
                    if let Some(out) = output {
                        let rules = self.provenance_rules();
                        let source =
                            source_name(&self.third_parties, self.spec.as_deref(), step, source);
                        self.output_index.record(source, id, out, rules);
                    }
                } else if let Some(f) = fault
                    && f.layer == crate::event::Layer::Provider
                    && self.provenance_rules() >= 2
                {
                    // The provider's own words in an error are its text too.
                    let source =
                        source_name(&self.third_parties, self.spec.as_deref(), step, source);
                    self.output_index.record_text(source, Some(id), &f.message);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// What settles calls after the fact: a re-entry, a call in doubt and its reconciliation, and the values carried from a result.
    pub(super) fn apply_settle(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            EventKind::RunResumed {
                in_flight,
                setup_ms,
                ..
            } => {
                self.setup_ms += setup_ms.unwrap_or(0);
                if let Some(id) = in_flight {
                    let c = self
                        .call_mut(*id)
                        .ok_or_else(|| format!("unknown call {id}"))?;
                    if c.status.is_some() || c.executed.is_none() {
                        return Err(format!("call {id} is not in flight"));
                    }
                    // The re-entry takes the call over: from here on it may have been sent.
                    c.unsent = false;
                }
                self.resumes += 1;
            }
            EventKind::RunTakenUp { setup_ms, .. } => {
                if self.last_seq != 1 {
                    return Err("only a queued run is taken up: this one had begun".into());
                }
                self.setup_ms += setup_ms.unwrap_or(0);
            }
            EventKind::CallInDoubt { call, stage, .. } => {
                let c = self
                    .call_mut(*call)
                    .ok_or_else(|| format!("unknown call {call}"))?;
                if c.status.is_some() || c.executed.is_none() || c.in_doubt {
                    return Err(format!("call {call} is not an unfinished dispatched call"));
                }
                c.in_doubt = true;
                c.doubt = Some(stage.unwrap_or(DoubtStage::IntentRecorded));
                self.unsettled += 1;
            }
            EventKind::CallReconciled {
                call,
                happened,
                by,
                note,
                resend,
            } => {
                let c = self
                    .call_mut(*call)
                    .ok_or_else(|| format!("unknown call {call}"))?;
                if !c.in_doubt {
                    return Err(format!("call {call} is not in doubt"));
                }
                if *resend && *happened {
                    return Err(format!(
                        "call {call} happened: it cannot also be sent again"
                    ));
                }
                c.in_doubt = false;
                c.resend = *resend;
                c.reconciled = Some(Box::new((by.clone(), note.clone())));
                c.finished_at_ms = Some(e.at_ms);
                let note = if note.is_empty() {
                    String::new()
                } else {
                    format!(": {note}")
                };
                if *happened {
                    c.status = Some(CallStatus::Ok);
                    let (step, effect) = (c.step, c.effect);
                    let s = step_state(&mut self.steps, step)?;
                    s.succeeded = true;
                    if effect == Some(Effect::Commit) {
                        s.committed = true;
                    }
                } else {
                    c.status = Some(CallStatus::NotPerformed);
                    let resent = if *resend { "; it is sent again" } else { "" };
                    c.fault = Some(Box::new(Fault::new(
                        Code::NotPerformed,
                        Layer::Provider,
                        format!(
                            "its outcome was lost; {by} reconciled that it did not happen{note}{resent}"
                        ),
                    )));
                }
                // Settled, unless it is to be sent again.
                if !*resend {
                    self.unsettled = self.unsettled.saturating_sub(1);
                }
            }
            EventKind::Carried {
                name,
                value,
                lineage,
            } => {
                let ok = if Some(&lineage.run) == self.run_id.as_ref() {
                    self.call(lineage.call)
                        .is_some_and(|c| c.status == Some(CallStatus::Ok))
                } else {
                    // Returned by a child: one of this run's, attained.
                    self.steps.iter().flat_map(|s| &s.children).any(|c| {
                        lineage.run.0.starts_with(&format!("{}.", c.run))
                            || lineage.run == c.run
                    } && matches!(c.outcome, Some(Outcome::Attained)))
                };
                // INVARIANT (evidence over claims): carried values come from recorded results.
                if !ok {
                    return Err(format!("`{name}` is not lifted from a successful call"));
                }
                self.carried.insert(
                    name.clone(),
                    Carried {
                        value: value.clone(),
                        lineage: lineage.clone(),
                    },
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// An approval request asked, expired or consumed.
    pub(super) fn apply_asked(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            EventKind::ApprovalRequested {
                request,
                call,
                provider,
                tool,
                args_digest,
                schema_digest,
                expires_at_ms,
                approvers,
                proposed_scope,
                ..
            } => {
                let c = self
                    .call_mut(*call)
                    .ok_or_else(|| format!("unknown call {call}"))?;
                if c.status.is_some() || c.executed.is_some() {
                    return Err(format!("call {call} is not waiting to be dispatched"));
                }
                c.awaiting = Some(request.clone());
                self.approvals.push(Approval {
                    id: request.clone(),
                    call: *call,
                    provider: provider.clone(),
                    tool: tool.clone(),
                    args_digest: args_digest.clone(),
                    schema_digest: schema_digest.clone(),
                    status: ApprovalStatus::Pending,
                    consumed_by: Vec::new(),
                    requested_at_ms: e.at_ms,
                    expires_at_ms: *expires_at_ms,
                    edited: None,
                    approvers: (*approvers).max(1),
                    approved_by: Vec::new(),
                    proposed_scope: *proposed_scope,
                    grant: None,
                });
            }
            EventKind::ApprovalExpired { request } => {
                let a = self
                    .approval_mut(request)
                    .ok_or_else(|| format!("unknown approval request `{request}`"))?;
                if a.status != ApprovalStatus::Pending {
                    return Err(format!("approval request `{request}` is not pending"));
                }
                a.status = ApprovalStatus::Expired;
            }
            EventKind::ApprovalGranted { request, grant, .. } => {
                let a = self
                    .approval_mut(request)
                    .ok_or_else(|| format!("unknown approval request `{request}`"))?;
                if a.status != ApprovalStatus::Pending {
                    return Err(format!("approval request `{request}` is already resolved"));
                }
                // A grant is one person's answer: a request that needs several is not for it.
                if a.approvers > 1 {
                    return Err(format!(
                        "approval request `{request}` needs {} approvers: a standing grant cannot answer it",
                        a.approvers
                    ));
                }
                a.status = ApprovalStatus::Approved {
                    scope: ApprovalScope::Once,
                    until_ms: None,
                };
                a.approved_by
                    .push((grant.by.clone(), ApprovalScope::Once, None));
                a.grant = Some(grant.id.clone());
            }
            EventKind::ApprovalConsumed { request, call, .. } => {
                let a = self
                    .approval_mut(request)
                    .ok_or_else(|| format!("unknown approval request `{request}`"))?;
                let once = matches!(
                    a.status,
                    ApprovalStatus::Approved {
                        scope: ApprovalScope::Once,
                        ..
                    }
                );
                // INVARIANT (approvals): a once-approval is consumed exactly once.
                if !matches!(a.status, ApprovalStatus::Approved { .. })
                    || (once && !a.consumed_by.is_empty())
                {
                    return Err(format!("approval `{request}` cannot be consumed"));
                }
                a.consumed_by.push(*call);
                if let Some(c) = self.call_mut(*call) {
                    c.awaiting = None;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `approval_resolved`: a person's answer to an approval request.
    pub(super) fn apply_resolved(&mut self, e: &Event) -> Result<(), String> {
        if let EventKind::ApprovalResolved {
            request,
            approved,
            scope,
            until_ms,
            by,
            reason,
            edited_args,
            awaiting,
            ..
        } = &e.kind
        {
            let a = self
                .approval_mut(request)
                .ok_or_else(|| format!("unknown approval request `{request}`"))?;
            if a.status != ApprovalStatus::Pending {
                return Err(format!("approval request `{request}` is already resolved"));
            }
            if *approved
                && *scope == Some(ApprovalScope::Plan)
                && a.proposed_scope != ApprovalScope::Plan
            {
                return Err(format!(
                    "approval request `{request}` did not propose the run's plan: scope `plan` cannot approve it"
                ));
            }
            if *approved && a.approvers > 1 {
                approve_by_several(a, by, *scope, *until_ms, edited_args.is_some(), *awaiting)
                    .map_err(|m| format!("approval request `{request}`: {m}"))?;
            } else {
                if *awaiting > 0 {
                    return Err(format!(
                        "approval request `{request}` needs one approver: nothing is awaited"
                    ));
                }
                if let Some(edited) = edited_args {
                    if !*approved || matches!(scope, Some(ApprovalScope::Run | ApprovalScope::Plan))
                    {
                        return Err(format!(
                            "approval request `{request}`: only an approval of one call carries edited arguments"
                        ));
                    }
                    a.edited = Some((edited.clone(), crate::canon::digest(edited)));
                }
                a.status = if *approved {
                    ApprovalStatus::Approved {
                        scope: scope.unwrap_or(ApprovalScope::Once),
                        until_ms: *until_ms,
                    }
                } else {
                    ApprovalStatus::Denied {
                        by: by.clone(),
                        reason: reason.clone(),
                    }
                };
            }
        }
        Ok(())
    }

    /// Children spawned, waited for and ended.
    pub(super) fn apply_children(&mut self, e: &Event) -> Result<(), String> {
        match &e.kind {
            EventKind::ChildSpawned {
                step,
                child,
                index,
                granted,
                ..
            } => {
                let i = self.running_step(step)?;
                let expected = format!(
                    "{}.{}",
                    self.run_id.as_ref().map_or("", |r| r.0.as_str()),
                    self.steps.iter().map(|s| s.children.len()).sum::<usize>() + 1
                );
                if child.0 != expected {
                    return Err(format!("the next child is `{expected}`, not `{child}`"));
                }
                let s = step_state(&mut self.steps, i)?;
                s.children.push(ChildRecord {
                    run: child.clone(),
                    index: *index,
                    granted: granted.clone(),
                    outcome: None,
                    spent: Spent::default(),
                });
            }
            EventKind::ChildWaiting { step, children } => {
                let i = self.running_step(step)?;
                let s = step_state(&mut self.steps, i)?;
                for child in children {
                    if !s
                        .children
                        .iter()
                        .any(|c| &c.run == child && c.outcome.is_none())
                    {
                        return Err(format!("`{child}` is no running child of `{step}`"));
                    }
                }
            }
            EventKind::ChildFinished {
                step,
                child,
                outcome,
                spent,
            } => {
                let i = self.running_step(step)?;
                let s = step_state(&mut self.steps, i)?;
                let record = s
                    .children
                    .iter_mut()
                    .find(|c| &c.run == child && c.outcome.is_none())
                    .ok_or_else(|| format!("`{child}` is no running child of `{step}`"))?;
                record.outcome = Some(outcome.clone());
                record.spent = spent.clone();
                let total = &mut self.children_spent;
                total.decisions = total.decisions.saturating_add(spent.decisions);
                total.calls = total.calls.saturating_add(spent.calls);
                total.tokens = total.tokens.saturating_add(spent.tokens);
                total.cost_micro_usd = total.cost_micro_usd.saturating_add(spent.cost_micro_usd);
            }
            _ => {}
        }
        Ok(())
    }

    /// `run_finished`: the outcome; approvals nobody answered are withdrawn.
    pub(super) fn apply_finish(&mut self, e: &Event) -> Result<(), String> {
        if let EventKind::RunFinished { outcome } = &e.kind {
            // INVARIANT (no orphans): a run ends after every child it spawned ended.
            if let Some((_, c)) = self.children().find(|(_, c)| c.outcome.is_none()) {
                return Err(format!("child `{}` has not ended", c.run));
            }
            // A call may end the run unfinished only when it is recorded in doubt.
            if self
                .calls
                .last()
                .is_some_and(|c| c.status.is_none() && !c.in_doubt)
            {
                return Err("a call is still in flight".into());
            }
            self.outcome = Some(outcome.clone());
            self.finished_at_ms = Some(e.at_ms);
            for a in &mut self.approvals {
                if a.status == ApprovalStatus::Pending {
                    a.status = ApprovalStatus::Withdrawn;
                }
            }
        }
        Ok(())
    }
}

//! Deciding: observe the step's provider, project what the decider may see, ask it, and record its decision (a call goes on to the Bridge).

use std::sync::Arc;

use warrant_core::codes::Code;
use warrant_core::event::{Decision, EventKind, Fault, Outcome, StepEnd};
use warrant_core::ids::StepId;
use warrant_core::ports::Decided;
use warrant_core::ports::{DecideError, Observation, SurfaceError, SurfaceErrorKind};
use warrant_core::projection;
use warrant_core::projection::Projection;
use warrant_core::spec::Spec;

use super::{Bound, Cut, ProposedCall, Run, Sight, restart, step_of};
use crate::EngineError;

/// The fault of a failed observation.
pub(super) fn observe_fault(provider: &str, e: &SurfaceError) -> Fault {
    let code = e.code.unwrap_or(match e.kind {
        SurfaceErrorKind::NotSent | SurfaceErrorKind::Down => Code::Unavailable,
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

impl Run<'_> {
    /// The tools of step `i` in `observation` the run's rules would refuse whatever the
    /// arguments, for the run's principal (worked out once for each step and observation).
    fn never_allowed(
        &mut self,
        i: usize,
        observation: &warrant_core::ports::Observation,
    ) -> Arc<[String]> {
        if !self.rules.authority.may_hide_tools() {
            return warrant_core::projection::no_tools();
        }
        if let Some((step, version, hidden)) = &self.hidden
            && *step == i
            && *version == observation.version
        {
            return hidden.clone();
        }
        let Some(step) = self.spec.steps.get(i) else {
            return Arc::from([]);
        };
        let provider = step.provider.as_str();
        let trusted = self.spec.trusts(provider);
        let principal = self.state.principal().clone();
        let hidden: Arc<[String]> = observation
            .actions
            .iter()
            .filter(|a| step.tools.is_empty() || step.tools.contains(&a.name))
            .filter(|a| {
                !self
                    .rules
                    .authority
                    .may_ever_allow(&warrant_core::ports::ToolProbe {
                        principal: &principal,
                        provider,
                        tool: &a.name,
                        effect: a.effect,
                        trusted,
                        schema: &a.input_schema,
                    })
            })
            .map(|a| a.name.clone())
            .collect();
        self.hidden = Some((i, observation.version.clone(), hidden.clone()));
        hidden
    }

    /// Records a failed observation of step `i`'s provider: the step ends not attained (the
    /// run, exhausted, at the deadline).
    fn observe_failed(&mut self, i: usize, e: &SurfaceError) -> Result<(), EngineError> {
        let step = step_of(&self.spec, i)?;
        let (step_id, provider) = (step.id.clone(), step.provider.clone());
        let fault = observe_fault(&provider, e);
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
        Ok(())
    }

    /// Observes step `i`'s provider within the call bound, recording a new version. A failed
    /// observation ends the step (the run, at the deadline) and returns `None`; so does a
    /// cancellation, which the loop then acts on.
    pub(super) async fn observe(
        &mut self,
        i: usize,
        surface: &Arc<dyn warrant_core::ports::Surface>,
    ) -> Result<Option<Observation>, EngineError> {
        let mut restarts = 0;
        let observation = loop {
            let observed = match self.bounded_durably(Bound::Call, surface.observe()).await? {
                Ok(answer) => answer,
                Err(Cut::Cancelled(c)) => {
                    self.cancel = Some(c);
                    return Ok(None);
                }
                Err(cut) => Err(cut.surface_error()),
            };
            match observed {
                Ok(o) => break o,
                // A provider found stopped is started again, and asked again.
                Err(e)
                    if e.kind == SurfaceErrorKind::Down
                        && restarts < restart::RESTARTS_PER_REQUEST =>
                {
                    restarts += 1;
                    match self.restart(i, surface, None, &e).await? {
                        restart::Restarted::Running => {}
                        restart::Restarted::Cut(Cut::Cancelled(c)) => {
                            self.cancel = Some(c);
                            return Ok(None);
                        }
                        restart::Restarted::Cut(cut) => {
                            self.observe_failed(i, &cut.surface_error())?;
                            return Ok(None);
                        }
                    }
                }
                Err(e) => {
                    self.observe_failed(i, &e)?;
                    return Ok(None);
                }
            }
        };
        let step = step_of(&self.spec, i)?;
        // A page that only retitled itself is observed again (the decider is shown it); its
        // handles stay good.
        let changed = self
            .state
            .observations()
            .get(&step.provider)
            .is_none_or(|o| o.version != observation.version || o.page != observation.page);
        if changed {
            let (step_id, provider) = (step.id.clone(), step.provider.clone());
            self.stage(EventKind::Observed {
                step: step_id,
                provider,
                version: observation.version.clone(),
                actions: observation.actions.clone(),
                page: observation.page.clone(),
            })?;
        }
        Ok(Some(observation))
    }

    /// One decision in step `i`: observe, project, decide, and carry the decision out.
    pub(super) async fn decide_once(&mut self, i: usize) -> Result<(), EngineError> {
        if self.check_limits(i, self.state.last_at_ms())? {
            return Ok(());
        }
        let step_id = step_of(&self.spec, i)?.id.clone();
        let surface = self.surface_of(i)?;
        // A read's result and a step's start are committed with the decision made after them
        // (lost in a crash, the read is sent again, the step started again); anything else,
        // and anything a decider tells outside, is durable first.
        if self.decider.tells_outside() || !self.only_replayable_pending() {
            self.flush().await?;
        }
        let Some(observation) = self.observe(i, &surface).await? else {
            return Ok(());
        };
        let mut projection = Projection::build(
            &self.state,
            self.spec.clone(),
            i,
            observation.version.clone(),
            observation.actions.clone(),
        )
        .ok_or(EngineError::NoStep(i))?;
        projection.hidden = self.never_allowed(i, &observation);
        projection.page = observation.page.clone();
        // `plan_first`: the run's first decision is its plan, made from the spec alone.
        let planning = self.state.needs_plan();
        let projection = if planning {
            projection.for_planning()
        } else {
            projection
        };
        if let Some(c) = self.cancel_due().await {
            self.cancel = Some(c);
            return Ok(());
        }
        let decision_no = projection.decision_no;
        let tainted_by = self.context_taint(&projection);
        let sight = Sight {
            version: observation.version.clone(),
            actions: observation.actions.clone(),
        };
        let Some(decided) = self
            .ask_decider(projection, &step_id, &observation.version)
            .await?
        else {
            return Ok(());
        };
        let decision = decided.decision;
        if let Some(why) = plan_problem(&self.spec, planning, &decision) {
            let fault = Fault::of(Code::InvalidPlan, why);
            self.stage(EventKind::DecideFailed {
                step: step_id,
                version: Some(observation.version),
                fault: fault.clone(),
                exchange: decided.exchange,
            })?;
            self.stage(EventKind::RunFinished {
                outcome: Outcome::Failed { fault },
            })?;
            return Ok(());
        }
        let decided_at = self.stage(EventKind::Decided {
            step: step_id.clone(),
            decision_no,
            version: observation.version.clone(),
            decision: decision.clone(),
            usage: decided.usage,
            exchange: decided.exchange,
            tainted_by,
        })?;
        if self.state.driven_ms(decided_at) >= self.spec.limits.deadline_ms {
            return self.exhausted("deadline_ms", self.spec.limits.deadline_ms);
        }
        // Budgets the decider spends: checked once the decision that spent them is recorded.
        if let Some((limit, max)) = self.budget_spent(&decision) {
            return self.exhausted(limit, max);
        }
        self.act(i, step_id, decision, decision_no, sight).await
    }

    /// The integrity of the decider's context (rules 2): every untrusted provider whose text
    /// it has been shown in this run, `projection` included.
    fn context_taint(&self, projection: &Projection) -> Arc<[String]> {
        if self.state.provenance_rules() < 2 {
            return Arc::default();
        }
        let mut shown = projection.shows_untrusted(&self.state);
        // Rules 3: an untrusted provider's tool descriptions are text it wrote, read by the
        // decider from its first decision on.
        let described = if self.state.provenance_rules() >= 3 {
            projection.describes_untrusted(&self.state)
        } else {
            Vec::new()
        };
        for p in &described {
            if !shown.contains(&&**p) {
                shown.push(p);
            }
        }
        let before = self.state.context_taint();
        if shown.iter().all(|t| before.iter().any(|b| b == t)) {
            // Nothing new: the same taint, shared.
            self.state.context_taint_shared()
        } else {
            let taint: std::collections::BTreeSet<String> = before
                .iter()
                .cloned()
                .chain(shown.iter().map(|p| (*p).to_owned()))
                .collect();
            taint.into_iter().collect()
        }
    }

    /// Asks the decider, waited on until the run's deadline at most (a live model retrying, a
    /// stalled stream): past it, the run is exhausted. Deciders that answer at once (scripts,
    /// replays) are polled once, with no timers. `None` when the run stops here: cancelled
    /// while the decider thought (nothing it decides is acted on), its decider gone, or its
    /// failure recorded.
    async fn ask_decider(
        &mut self,
        projection: Projection,
        step_id: &StepId,
        version: &str,
    ) -> Result<Option<Decided>, EngineError> {
        let decider = self.decider;
        let decided = match self
            .bounded_durably(Bound::Deadline, decider.decide(projection))
            .await?
        {
            Ok(Ok(d)) => return Ok(Some(d)),
            Ok(Err(e)) => e,
            Err(Cut::Cancelled(c)) => {
                self.cancel = Some(c);
                return Ok(None);
            }
            Err(Cut::Timeout(_) | Cut::Deadline(_)) => DecideError::new(
                Code::DeadlineExceeded,
                "the decider had not decided when the run's deadline came",
            ),
        };
        // The decider left (a gateway session's client): the loop closes the run.
        if self.decider.closed().is_some() {
            return Ok(None);
        }
        // The decider gave its turn back (a quiet session): the run stops here, as it is.
        if self.decider.parked() {
            self.parked = true;
            return Ok(None);
        }
        let deadline = decided.code == Code::DeadlineExceeded;
        let fault = Fault::of(decided.code, decided.message);
        self.stage(EventKind::DecideFailed {
            step: step_id.clone(),
            version: Some(version.to_owned()),
            fault: fault.clone(),
            exchange: decided.exchange,
        })?;
        if deadline {
            self.exhausted("deadline_ms", self.spec.limits.deadline_ms)?;
        } else {
            self.stage(EventKind::RunFinished {
                outcome: Outcome::Failed { fault },
            })?;
        }
        Ok(None)
    }

    /// The budget the decisions so far have spent, if one is: its name and bound.
    fn budget_spent(&self, decision: &Decision) -> Option<(&'static str, u64)> {
        let limits = &self.spec.limits;
        let spent = self.state.spent();
        if let Some(max) = limits.tokens_max
            && spent.tokens > max
        {
            return Some(("tokens_max", max));
        }
        if let Some(max) = limits.cost_micro_usd_max
            && spent.cost_micro_usd > max
        {
            return Some(("cost_micro_usd_max", max));
        }
        if let (Some(max), Decision::Call { .. }) = (limits.calls_max, decision)
            && u64::from(spent.calls) >= u64::from(max)
        {
            return Some(("calls_max", u64::from(max)));
        }
        None
    }

    /// Carries out a recorded decision of step `i`: a step's end judged from evidence, or a
    /// call proposed to the Bridge.
    async fn act(
        &mut self,
        i: usize,
        step_id: StepId,
        decision: Decision,
        decision_no: u32,
        sight: Sight,
    ) -> Result<(), EngineError> {
        match decision {
            // The plan rules the run from here: the step is decided next.
            Decision::Plan { .. } => {}
            Decision::Done { .. } => {
                let end = self.state.judge_done(i);
                self.stage(EventKind::StepFinished { step: step_id, end })?;
            }
            Decision::Decline { reason } => {
                let end = self.state.judge_decline(i, &reason);
                self.stage(EventKind::StepFinished { step: step_id, end })?;
            }
            Decision::Wait { wait, reason } => self.sleep(step_id, &wait, reason)?,
            Decision::Ask { prompt, schema } => self.ask(step_id, prompt, schema)?,
            Decision::Call {
                tool,
                handle,
                args,
                claims,
            } => {
                let handle =
                    handle.or_else(|| projection::handle_in(&sight.actions, decision_no, &tool));
                let proposed = ProposedCall {
                    step: i,
                    sight,
                    tool,
                    handle,
                    args,
                    claims,
                };
                self.bridge(proposed, None).await?;
            }
        }
        Ok(())
    }
}

/// What is wrong with `decision` as a plan, when a plan was asked for (`planning`) or given.
fn plan_problem(spec: &Spec, planning: bool, decision: &Decision) -> Option<String> {
    let plan = match decision {
        Decision::Plan { grants } => Some(grants),
        _ => None,
    };
    match (planning, plan) {
        (true, Some(grants)) => warrant_core::scope::check_plan(spec, grants).err(),
        (true, None) => Some(
            "a plan was asked for (`plan_first`), and the decider did not propose one".to_owned(),
        ),
        (false, Some(_)) => Some("the decider proposed a plan when none was asked for".to_owned()),
        (false, None) => None,
    }
}

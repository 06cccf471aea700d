//! What the fold decides from the evidence: whether a handle may be used now, what the run
//! does next, and the judgments of a step's end and of the run's outcome.

use super::{ApprovalStatus, Next, RunState, StepStatus};
use crate::codes::Code;
use crate::event::{CallStatus, Effect, Fault, Layer, Missing, Outcome, StepEnd};
use crate::ids::HandleId;
use crate::spec::{CommitRule, Publish, StepSpec};

impl RunState {
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
        if self.pending_question().is_some() {
            return Next::Question;
        }
        if let Some((step, until)) = self.sleeping {
            return Next::Sleep { step, until };
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
}

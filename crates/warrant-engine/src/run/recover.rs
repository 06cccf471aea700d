//! Re-entry of calls: one in flight when a process stopped (re-invoked, looked up or left in doubt, never blindly repeated), one held for approval, one to be sent again.

use std::sync::Arc;

use serde_json::Value;
use warrant_core::canon;
use warrant_core::codes::Code;
use warrant_core::event::{CallStatus, DoubtStage, Effect, EventKind, Fault, Layer};
use warrant_core::ids::CallId;
use warrant_core::ports::Recovery;

use super::{Judged, ProposedCall, Reopened, Run, Sight, step_of};
use crate::EngineError;

impl Run<'_> {
    /// A call started earlier, with what carrying it on needs: its record, step, provider,
    /// surface and the observation version it was proposed against.
    pub(super) fn reopen(&self, call: CallId) -> Result<Option<Reopened>, EngineError> {
        let Some(record) = self.state.call(call).cloned() else {
            return Ok(None);
        };
        let i = record.step;
        let surface = self.find_surface(i)?;
        let provider = step_of(&self.spec, i)?.provider.clone();
        let version = self.version_of(call);
        Ok(Some(Reopened {
            record,
            i,
            provider,
            surface,
            version,
        }))
    }

    /// The observation version `call` was proposed against (its decision's).
    pub(super) fn version_of(&self, call: CallId) -> String {
        self.state
            .call(call)
            .and_then(|r| (r.decision as usize).checked_sub(1))
            .and_then(|d| self.state.decision_log().get(d))
            .map(|d| d.version.clone())
            .unwrap_or_default()
    }

    /// Whether the run has no driving time left to carry `call` on (judged at the last
    /// event's time, the re-entry's, so a replay judges the same). Then a call not yet ended
    /// ends refused, never made, and the run ends `exhausted`.
    fn out_of_time(&mut self, call: CallId) -> Result<bool, EngineError> {
        let limit = self.spec.limits.deadline_ms;
        if self.state.driven_ms(self.state.last_at_ms()) < limit {
            return Ok(false);
        }
        if let Some(open) = self.state.call(call).filter(|c| c.status.is_none()) {
            let fault = Fault::new(
                Code::DeadlineExceeded,
                Layer::Runtime,
                format!(
                    "`{}` was approved after the run's driving time ({limit} ms, `deadline_ms`) \
                     ran out: it is not made",
                    open.tool
                ),
            );
            self.finish_call(call, CallStatus::Rejected, None, Some(fault))?;
        }
        self.exhausted("deadline_ms", limit)?;
        Ok(true)
    }

    /// Settles a call whose intent is durable but whose result was lost; `unsent` when the
    /// log said it found its provider stopped before it left (read before `run_resumed`).
    pub(super) async fn recover(&mut self, call: CallId, unsent: bool) -> Result<(), EngineError> {
        let Some(Reopened {
            record,
            i,
            provider,
            surface,
            version,
        }) = self.reopen(call)?
        else {
            return Ok(());
        };
        let effect = record.effect.unwrap_or(Effect::Commit);
        let invocation = self.dispatched(call, version)?;
        // INVARIANT (no effect repeated, none lost): a read is simply re-invoked; a commit only
        // when repeating it is safe by construction or the surface can tell what happened.
        // A call found its provider stopped before it was sent (`unsent`): nothing happened.
        let recovery = if effect == Effect::Read || unsent {
            Recovery::Reinvoke
        } else {
            surface.recovery(&record.tool)
        };
        let args_digest = canon::digest(invocation.args());
        let in_doubt = |reason: String, cause: Option<Fault>| EventKind::CallInDoubt {
            call,
            provider: provider.clone(),
            tool: record.tool.clone(),
            args_digest: args_digest.clone(),
            reason,
            cause,
            stage: Some(DoubtStage::IntentRecorded),
        };
        // INVARIANT (every path): a repeated call is ruled on again, as it is now. A read that
        // is no longer allowed ends stopped; a commit that may have happened is in doubt.
        let action = self
            .state
            .observations()
            .get(&provider)
            .and_then(|o| o.actions.iter().find(|a| a.name == record.tool))
            .cloned()
            .map(|a| warrant_core::event::ActionRecord { effect, ..a })
            .unwrap_or_else(|| warrant_core::event::ActionRecord {
                name: record.tool.clone(),
                effect,
                description: String::new(),
                input_schema: Arc::new(Value::Null),
                hints: None,
                origin: None,
            });
        let allowed = if recovery == Recovery::InDoubt {
            Ok(None)
        } else {
            let spec = self.spec.clone();
            self.authorize(&Judged {
                step: step_of(&spec, i)?,
                call,
                action: &action,
                args: invocation.args(),
                args_digest: &args_digest,
                labels: &record.provenance,
            })
            .await
        };
        let tool = &record.tool;
        if let Err(refusal) = allowed {
            if effect == Effect::Read {
                return self.refuse_call(call, refusal);
            }
            self.stage(in_doubt(
                format!(
                    "authority no longer allows repeating `{tool}`: {}",
                    refusal.fault.message
                ),
                Some(refusal.fault),
            ))?;
            return Ok(());
        }
        match recovery {
            Recovery::Reinvoke => {
                // INVARIANT (no effect repeated): `run_resumed`, which ends the call's
                // `unsent`, is durable before it is sent: a crash after the send leaves it in
                // doubt, never sent a third time.
                if unsent && effect == Effect::Commit {
                    self.flush().await?;
                }
                self.invoke_and_record(i, &surface, invocation).await
            }
            Recovery::Lookup => {
                let looked = self.lookup(&surface, invocation.clone()).await;
                match looked {
                    Ok(Some(found)) => self.record_result(i, call, tool, Ok(found)),
                    Ok(None) => self.invoke_and_record(i, &surface, invocation).await,
                    Err(e) => {
                        self.stage(in_doubt(
                            format!(
                                "the intent to call `{tool}` was recorded, then the process stopped; looking up whether it happened failed: {}",
                                e.message
                            ),
                            None,
                        ))?;
                        Ok(())
                    }
                }
            }
            Recovery::InDoubt => {
                self.stage(in_doubt(
                    format!(
                        "the intent to call `{tool}` was recorded, then the process stopped before its result was: whether it was sent, and whether it happened, is unknown (`{provider}` neither accepts idempotency keys nor can tell)"
                    ),
                    None,
                ))?;
                Ok(())
            }
        }
    }

    /// Carries on a call that waited for an approval, now answered.
    pub(super) async fn redrive(&mut self, call: CallId) -> Result<(), EngineError> {
        let Some(Reopened {
            record,
            i,
            provider,
            surface,
            version,
        }) = self.reopen(call)?
        else {
            return Ok(());
        };
        // INVARIANT (a person's time is not the model's): the wait for the answer spent none
        // of the run's driving time; a run that has none left makes no call it approved.
        if self.out_of_time(call)? {
            return Ok(());
        }
        let actions = self
            .state
            .observations()
            .get(&provider)
            .map(|o| o.actions.clone())
            .unwrap_or_else(|| Arc::from(Vec::new()));
        let proposed = ProposedCall {
            step: i,
            sight: Sight { version, actions },
            tool: record.tool.clone(),
            handle: record.handle,
            args: record.proposed.clone(),
            claims: record.claims.clone(),
        };
        // The handle is judged as of the proposal: an approver's pause does not expire it;
        // freshness of the observation is still checked before the intent.
        self.carry(call, &proposed, &surface, record.started_at_ms)
            .await
    }

    /// Sends again a call an operator reconciled as not performed and asked to be sent again:
    /// a new call with the same arguments, observed afresh, checked and ruled on again, under a
    /// new idempotency key. No decision proposed it; it uses no handle.
    pub(super) async fn resend(&mut self, earlier: CallId) -> Result<(), EngineError> {
        let Some(Reopened {
            record, i, surface, ..
        }) = self.reopen(earlier)?
        else {
            return Ok(());
        };
        if self.out_of_time(earlier)? {
            return Ok(());
        }
        self.flush().await?;
        let Some(observation) = self.observe(i, &surface).await? else {
            return Ok(());
        };
        // The arguments it was sent with; no decision proposed it, so it uses no handle.
        let proposed = ProposedCall {
            step: i,
            sight: Sight {
                version: observation.version,
                actions: observation.actions,
            },
            tool: record.tool.clone(),
            handle: None,
            args: record
                .executed
                .clone()
                .unwrap_or_else(|| record.proposed.clone()),
            claims: Vec::new(),
        };
        self.bridge(proposed, Some(earlier)).await
    }
}

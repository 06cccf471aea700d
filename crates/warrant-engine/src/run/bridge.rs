//! The Bridge: one proposed call carried through handle, schema, provenance and claims checks, then authority, approval, execution control and interception (`authorize`), freshness and the durable intent, to dispatch (`invoke`).

use std::sync::Arc;

use serde_json::Value;
use warrant_core::codes::Code;
use warrant_core::event::{CallStatus, Claim, Effect, EventKind, Fault, Layer, Lineage, Narrowing};
use warrant_core::fold::ApprovalStatus;
use warrant_core::ids::{CallId, HandleId, StepId};
use warrant_core::ports::Interception;
use warrant_core::spec::{CarriedRef, StepSpec};
use warrant_core::{canon, provenance};

use super::{Bound, Checked, Cut, Judged, Refusal, Run, Sight, VALIDATORS_MAX, step_of};
use crate::EngineError;

pub(super) fn refuse(code: Code, layer: Layer, message: impl Into<String>) -> Refusal {
    let status = if layer == Layer::Policy {
        CallStatus::StoppedByPolicy
    } else {
        CallStatus::Rejected
    };
    Refusal {
        held: false,
        status,
        ruled: None,
        narrowed: Vec::new(),
        narrowed_args: None,
        fault: Fault::new(code, layer, message),
    }
}

/// One call proposed to the Bridge, as a value: what to call, with what, and what the
/// proposer saw when it proposed it. A trajectory run's decider proposes it today; a gateway
/// session's client (a one-step run of its own) or a parent run for its child next, all
/// through the same checks.
pub(super) struct ProposedCall {
    /// The step (index in the spec) it is proposed in.
    pub(super) step: usize,
    /// What the proposer saw.
    pub(super) sight: Sight,
    /// The tool.
    pub(super) tool: String,
    /// The handle it names, if any.
    pub(super) handle: Option<HandleId>,
    /// The arguments as proposed.
    pub(super) args: Arc<Value>,
    /// What the proposer claims of its arguments (where values came from).
    pub(super) claims: Vec<Claim>,
}

impl Run<'_> {
    /// INVARIANT (one path): the Bridge's entry. Every proposed call starts here (a call
    /// sent again names the call it repeats) and is carried through every check.
    pub(super) async fn bridge(
        &mut self,
        proposed: ProposedCall,
        resend_of: Option<CallId>,
    ) -> Result<(), EngineError> {
        let surface = self.surface_of(proposed.step)?;
        let step = step_of(&self.spec, proposed.step)?.id.clone();
        let call = self.state.next_call_id();
        let started_at = self.stage(EventKind::CallStarted {
            call,
            step,
            tool: proposed.tool.clone(),
            handle: proposed.handle,
            args: proposed.args.clone(),
            resend_of,
        })?;
        self.carry(call, &proposed, &surface, started_at).await
    }

    /// Everything after a call started: the checks, authority and approvals, interceptors,
    /// freshness, the intent, the invocation. A call held for approval returns here later
    /// (`redrive`).
    pub(super) async fn carry(
        &mut self,
        call: CallId,
        p: &ProposedCall,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        now_ms: u64,
    ) -> Result<(), EngineError> {
        let (i, sight, tool, handle) = (p.step, &p.sight, p.tool.as_str(), p.handle);
        let spec = self.spec.clone();
        let step = step_of(&spec, i)?;
        // INVARIANT (no silent failure): from here every path ends the call with exactly one
        // `call_finished` (or, held for approval, leaves it waiting on a durable request).
        let checked = self.check_call(call, p, step, now_ms).await;
        let Checked {
            effect,
            executed,
            args_digest,
            labels,
            narrowed,
            consume,
        } = match checked {
            Ok(ok) => ok,
            // Held for approval: the request is durable, the call waits.
            Err(refusal) if refusal.held => return Ok(()),
            Err(refusal) => {
                self.refuse_call(call, refusal)?;
                return Ok(());
            }
        };
        // INVARIANT (fail closed): required execution control must allow every commit.
        if effect == Effect::Commit
            && let Some(fault) = self
                .control_stop(step, call, tool, &executed, &args_digest, &labels)
                .await
        {
            self.finish_call(
                call,
                CallStatus::StoppedByExecutionControl,
                None,
                Some(fault),
            )?;
            return Ok(());
        }
        // Freshness, last thing before the intent: the provider may have moved on.
        let fresh = self
            .bounded(Bound::Call, surface.is_current(&sight.version))
            .await;
        let provider = &step.provider;
        let stale = match fresh {
            Ok(true) => None,
            Ok(false) => Some(Fault::new(
                Code::StaleObservation,
                Layer::Orchestration,
                format!(
                    "`{provider}` changed after observation `{}`: observe again",
                    sight.version
                ),
            )),
            Err(Cut::Cancelled(c)) => {
                let message = format!(
                    "cancelled by {} while `{provider}` was asked whether its observation is current",
                    c.by
                );
                self.cancel = Some(c);
                self.finish_call(
                    call,
                    CallStatus::Cancelled,
                    None,
                    Some(Fault::of(Code::Cancelled, message)),
                )?;
                return Ok(());
            }
            Err(_) => Some(Fault::of(
                Code::FreshnessTimeout,
                format!(
                    "`{provider}` did not say in time whether observation `{}` is still current: nothing was sent",
                    sight.version
                ),
            )),
        };
        if let Some(fault) = stale {
            self.finish_call(call, CallStatus::Rejected, None, Some(fault))?;
            return Ok(());
        }
        // INVARIANT (approvals): the approval is consumed in the same atomic append as the intent.
        let consumed = consume.is_some();
        if let Some(request) = consume {
            let grant = self.state.approval(&request).and_then(|a| a.grant.clone());
            self.stage(EventKind::ApprovalConsumed {
                request,
                call,
                grant,
            })?;
        }

        let idempotency_key = warrant_core::ports::idempotency_key(&self.run_id, call);
        self.stage(EventKind::CallDispatched {
            call,
            effect,
            args: executed.clone(),
            args_digest,
            idempotency_key: idempotency_key.clone(),
            provenance: labels,
            narrowed,
        })?;
        // INVARIANT (log first): the intent is durable before the provider is called.
        self.flush().await?;
        warrant_fault::hit(warrant_fault::FaultPoint::AfterIntent);
        if consumed {
            warrant_fault::hit(warrant_fault::FaultPoint::ApprovalConsumed);
        }
        if let Some(h) = handle {
            surface.retire(&[h]);
        }
        let invocation = self.dispatched(call, sight.version.clone())?;
        self.invoke_and_record(i, surface, invocation).await
    }

    /// How long ago the handle of `call` was issued, as of the last event.
    pub(super) fn handle_age(&self, call: CallId) -> Option<u64> {
        let handle = self.state.call(call)?.handle?;
        let issued = (handle.decision as usize)
            .checked_sub(1)
            .and_then(|d| self.state.decision_log().get(d))?
            .at_ms;
        Some(self.state.last_at_ms().saturating_sub(issued))
    }

    /// The Bridge's checks before the intent, in DESIGN.md's order, for call `call` proposed
    /// as `p` in `step`: admission (tool, offer, grant, handle), the arguments (carried values
    /// bound, a person's edit, schema, provenance), authority and approvals, then each
    /// interceptor. Returns the effect, the arguments to execute and their provenance.
    pub(super) async fn check_call(
        &mut self,
        call: CallId,
        p: &ProposedCall,
        step: &StepSpec,
        now_ms: u64,
    ) -> Result<Checked, Refusal> {
        let action = self.admit(call, p, step, now_ms)?;
        let (executed, bindings, labels, narrowed) = self.arguments(call, p, step, action)?;
        let args_digest = canon::digest(&executed);
        let consume = self
            .authorize(&Judged {
                step,
                call,
                action,
                args: &executed,
                args_digest: &args_digest,
                labels: &labels,
            })
            .await?;
        let checked = Checked {
            effect: action.effect,
            executed,
            args_digest,
            labels,
            narrowed,
            consume,
        };
        self.intercept(checked, step, call, action, &bindings).await
    }

    /// Whether `p` may be called at all in `step`, decided from the run's state alone: the
    /// step allows the tool, its provider offers it, the step's grant names only arguments it
    /// takes, and the handle is one the run issued for it. The action it names.
    fn admit<'p>(
        &self,
        call: CallId,
        p: &'p ProposedCall,
        step: &StepSpec,
        now_ms: u64,
    ) -> Result<&'p warrant_core::event::ActionRecord, Refusal> {
        let tool = p.tool.as_str();
        if !step.tools.iter().any(|t| t == tool) {
            return Err(refuse(
                Code::ToolNotAllowed,
                Layer::Model,
                format!(
                    "`{tool}` is not allowed in step `{}` (allowed: {})",
                    step.id,
                    step.tools.join(", ")
                ),
            ));
        }
        // Resolve the handle in the current observation.
        let Some(action) = p.sight.actions.iter().find(|a| a.name == tool) else {
            // The step allows it and the provider does not offer it: the spec is wrong.
            let offered: Vec<&str> = p.sight.actions.iter().map(|a| a.name.as_str()).collect();
            return Err(refuse(
                Code::ToolNotOffered,
                Layer::Spec,
                format!(
                    "step `{}` allows `{tool}`, but `{}` does not offer it (it offers: {})",
                    step.id,
                    step.provider,
                    if offered.is_empty() {
                        "nothing".to_owned()
                    } else {
                        offered.join(", ")
                    }
                ),
            ));
        };
        // A grant (the step's or the plan's) that names an argument the tool does not take
        // would rule on nothing there: checked against the schema the call is made under, so
        // a tool list that changed is checked too.
        // (Checked for runs recorded under provenance rules 3 on: an older log replays as it
        // ran.)
        if let Some(grant) = self
            .state
            .grant_of(&step.id)
            .filter(|_| self.state.provenance_rules() >= 3)
        {
            let unknown =
                warrant_core::scope::unknown_grant_args(grant, tool, &action.input_schema);
            if !unknown.is_empty() {
                return Err(refuse(
                    Code::GrantArgUnknown,
                    Layer::Spec,
                    format!(
                        "step `{}`: {}",
                        step.id,
                        warrant_core::scope::unknown_grant_args_message(
                            tool,
                            &unknown,
                            &action.input_schema
                        )
                    ),
                ));
            }
        }
        // A call an operator had sent again uses no handle: no decision proposed it.
        let resent = self.state.call(call).is_some_and(|c| c.resend_of.is_some());
        match p.handle {
            Some(handle) => self
                .state
                .check_handle(handle, tool, p.step, now_ms)
                .map_err(|fault| Refusal {
                    held: false,
                    status: CallStatus::Rejected,
                    fault,
                    ruled: None,
                    narrowed: Vec::new(),
                    narrowed_args: None,
                })?,
            None if resent => {}
            None => {
                return Err(refuse(
                    Code::UnknownTool,
                    Layer::Model,
                    format!("no handle for `{tool}`"),
                ));
            }
        }
        Ok(action)
    }

    /// The arguments call `call` executes: the proposed ones (or those a person approved with
    /// edits) with the step's carried inputs and the proposer's claims bound in, checked
    /// against the action's schema and labelled with where each value came from. Also the
    /// bindings (argument, carried value) and the narrowing the edit is, if any.
    #[expect(
        clippy::type_complexity,
        reason = "the four parts of a call's arguments, taken apart at once by the one caller"
    )]
    fn arguments(
        &mut self,
        call: CallId,
        p: &ProposedCall,
        step: &StepSpec,
        action: &warrant_core::event::ActionRecord,
    ) -> Result<
        (
            Arc<Value>,
            Vec<(String, String)>,
            Vec<provenance::ArgLabel>,
            Vec<Narrowing>,
        ),
        Refusal,
    > {
        // Inputs and claims: carried values are checked against evidence, never trusted.
        let mut bindings: Vec<(String, String)> = step
            .inputs
            .iter()
            .map(|(a, r)| (a.clone(), r.clone()))
            .collect();
        for c in &p.claims {
            if !bindings.iter().any(|(a, _)| a == &c.arg) {
                bindings.push((c.arg.clone(), c.carried.clone()));
            }
        }
        // A person who approved this call with edited arguments: they run instead, as an
        // interceptor's narrowing would — carried inputs bound into them, validated, labelled
        // and ruled on again, the approval binding their digest — and the decider's next
        // projection shows both.
        let mut narrowed = Vec::new();
        let edit = self
            .state
            .approvals()
            .iter()
            .find_map(|a| match (&a.status, &a.edited) {
                (ApprovalStatus::Approved { .. }, Some((args, _))) if a.call == call => {
                    Some((a.id.clone(), args.clone()))
                }
                _ => None,
            });
        let base = match &edit {
            Some((request, args)) => {
                narrowed.push(Narrowing {
                    by: format!("approval {request}"),
                    reason: "the approver edited the arguments".to_owned(),
                });
                args
            }
            None => &p.args,
        };
        let executed = if bindings.is_empty() {
            base.clone()
        } else {
            Arc::new(self.bind_carried(&bindings, base)?)
        };
        self.validate_args(&action.input_schema, &p.tool, &executed)
            .map_err(|r| match &edit {
                Some((request, _)) => Refusal {
                    status: CallStatus::StoppedByPolicy,
                    fault: Fault {
                        layer: Layer::Policy,
                        message: format!(
                            "the arguments approved with edits ({request}) are invalid: {}",
                            r.fault.message
                        ),
                        code: r.fault.code,
                        inner: None,
                    },
                    ..r
                },
                None => r,
            })?;
        let labels = self.labels(&executed, &bindings, call);
        Ok((executed, bindings, labels, narrowed))
    }

    /// Where each value of `args` came from, with `bindings` bound into it.
    fn labels(
        &self,
        args: &Value,
        bindings: &[(String, String)],
        call: CallId,
    ) -> Vec<provenance::ArgLabel> {
        provenance::label_for(
            args,
            &self.objective,
            bindings,
            self.state.output_index(),
            self.state.provenance_rules(),
            self.state.call_taint(call),
        )
    }

    /// Each interceptor in order, on a call the authority allowed: one may halt it or narrow
    /// its arguments. Narrowed arguments are validated and ruled on again: narrowing never
    /// widens authority.
    async fn intercept(
        &mut self,
        mut c: Checked,
        step: &StepSpec,
        call: CallId,
        action: &warrant_core::event::ActionRecord,
        bindings: &[(String, String)],
    ) -> Result<Checked, Refusal> {
        let tool = action.name.as_str();
        let interceptors = self.engine.interceptors.clone();
        for interceptor in interceptors.iter() {
            let judged = Judged {
                step,
                call,
                action,
                args: &c.executed,
                args_digest: &c.args_digest,
                labels: &c.labels,
            };
            let halt = |narrowed: Vec<Narrowing>, executed: &Arc<Value>, message: String| Refusal {
                held: false,
                ruled: None,
                narrowed_args: (!narrowed.is_empty()).then(|| executed.clone()),
                narrowed,
                status: CallStatus::Halted,
                fault: Fault::new(Code::Halted, Layer::Policy, message),
            };
            match interceptor.intercept(&self.capability_request(&judged)) {
                Interception::Pass => {}
                Interception::Halt { reason } => {
                    let message = format!("{}: {reason}", interceptor.name());
                    return Err(halt(c.narrowed, &c.executed, message));
                }
                Interception::Narrow { args, reason } => {
                    let args = Arc::new(args);
                    if let Err(r) = self.validate_args(&action.input_schema, tool, &args) {
                        let message = format!(
                            "{}: its narrowed arguments are invalid: {}",
                            interceptor.name(),
                            r.fault.message
                        );
                        return Err(halt(c.narrowed, &c.executed, message));
                    }
                    c.labels = self.labels(&args, bindings, call);
                    c.narrowed.push(Narrowing {
                        by: interceptor.name().to_owned(),
                        reason,
                    });
                    let narrowed_digest = canon::digest(&args);
                    let ruled = self
                        .authorize(&Judged {
                            step,
                            call,
                            action,
                            args: &args,
                            args_digest: &narrowed_digest,
                            labels: &c.labels,
                        })
                        .await;
                    match ruled {
                        Ok(used) => c.consume = used,
                        Err(refused) => {
                            return Err(Refusal {
                                held: refused.held,
                                narrowed: c.narrowed,
                                narrowed_args: Some(args),
                                ..refused
                            });
                        }
                    }
                    c.args_digest = narrowed_digest;
                    c.executed = args;
                }
            }
        }
        Ok(c)
    }

    /// Validates arguments against an action's input schema.
    pub(super) fn validate_args(
        &mut self,
        schema: &Arc<Value>,
        tool: &str,
        args: &Value,
    ) -> Result<(), Refusal> {
        let validator = self.validator(schema).map_err(|reason| {
            refuse(
                Code::SchemaUnusable,
                Layer::Provider,
                format!("the schema of `{tool}` cannot be used: {reason}"),
            )
        })?;
        // Valid arguments, the usual case, cost no error collection.
        if validator.is_valid(args) {
            return Ok(());
        }
        let errors = crate::schema_errors(&validator, args);
        // Invalid, whether or not the schema names why: refused (fail closed).
        let why = if errors.is_empty() {
            "they do not match its schema".to_owned()
        } else {
            errors.join("; ")
        };
        Err(refuse(
            Code::InvalidArguments,
            Layer::Model,
            format!("arguments of `{tool}` are invalid: {why}"),
        ))
    }

    /// Fills bound arguments from carried state and checks claimed ones against it.
    pub(super) fn bind_carried(
        &self,
        bindings: &[(String, String)],
        proposed: &Value,
    ) -> Result<Value, Refusal> {
        let mut args = proposed.clone();
        let Some(map) = args.as_object_mut() else {
            return Err(refuse(
                Code::InvalidArguments,
                Layer::Model,
                "arguments must be a JSON object",
            ));
        };
        for (arg, source) in bindings {
            let carried = CarriedRef::parse(source)
                .and_then(|r| self.state.carried().get(&r.to_string()))
                .ok_or_else(|| {
                    refuse(
                        Code::UnknownCarried,
                        Layer::Model,
                        format!(
                            "`{arg}` claims carried value `{source}`, which the run has not carried"
                        ),
                    )
                })?;
            match map.get(arg) {
                None => {
                    map.insert(arg.clone(), (*carried.value).clone());
                }
                Some(v) if v == &*carried.value => {}
                Some(v) => {
                    return Err(refuse(
                        Code::CarriedValueMismatch,
                        Layer::Model,
                        format!(
                            "`{arg}` = {v} but the evidence for `{source}` is {} (from {} {})",
                            carried.value, carried.lineage.call, carried.lineage.tool
                        ),
                    ));
                }
            }
        }
        Ok(args)
    }

    pub(super) fn validator(&mut self, schema: &Arc<Value>) -> crate::cache::Compiled {
        let key = Arc::as_ptr(schema) as usize;
        if let Some((_, v)) = self.validators.get(&key) {
            return v.clone();
        }
        if self.validators.len() >= VALIDATORS_MAX {
            self.validators.clear();
        }
        let compiled = self.engine.cache.validator(schema);
        self.validators
            .insert(key, (schema.clone(), compiled.clone()));
        compiled
    }

    /// Lifts the step's published outputs from a successful result of `tool`.
    pub(super) fn lift(
        &mut self,
        i: usize,
        call: CallId,
        tool: &str,
        output: &Arc<Value>,
    ) -> Result<(), EngineError> {
        let step = step_of(&self.spec, i)?;
        let lifted: Vec<(String, Value, String)> = step
            .publishes
            .iter()
            .filter(|(_, p)| p.from == tool)
            .filter_map(|(name, p)| {
                output
                    .pointer(&p.path)
                    .map(|v| (format!("{}.{name}", step.id), v.clone(), p.path.clone()))
            })
            .collect();
        let step_id: StepId = step.id.clone();
        for (name, value, path) in lifted {
            let lineage = Lineage {
                run: self.run_id.clone(),
                step: step_id.clone(),
                call,
                tool: tool.to_owned(),
                path,
            };
            self.stage(EventKind::Carried {
                name,
                value: Arc::new(value),
                lineage,
            })?;
        }
        Ok(())
    }
}

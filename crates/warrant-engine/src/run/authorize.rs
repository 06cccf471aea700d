//! Authority, approvals and execution control: what may run, what a person must approve (bound to the exact arguments, consumed once), and the external control every commit needs when the run requires one.

use std::sync::Arc;

use serde_json::Value;
use warrant_core::codes::Code;
use warrant_core::event::{ApprovalScope, CallStatus, Effect, EventKind, Fault, Layer, Principal};
use warrant_core::fold::ApprovalStatus;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{
    ApproverRequest, ApproverVerdict, CancelRequest, CapabilityRequest, ControlVerdict, Verdict,
};
use warrant_core::spec::StepSpec;
use warrant_core::standing::Asked;
use warrant_core::{canon, provenance};

use super::{Bound, Cut, Judged, Refusal, Run, refuse};

impl Run<'_> {
    /// Asks the required execution control about a commit in `step`; the fault that stops it,
    /// if any.
    pub(super) async fn control_stop(
        &self,
        step: &StepSpec,
        call: CallId,
        tool: &str,
        args: &Arc<Value>,
        args_digest: &str,
        labels: &[provenance::ArgLabel],
    ) -> Option<Fault> {
        let setting = self.rules.control.as_ref()?;
        let request = CapabilityRequest {
            principal: self.state.principal(),
            handle_age_ms: None,
            run: &self.run_id,
            step: &step.id,
            call,
            provider: &step.provider,
            tool,
            effect: Effect::Commit,
            args,
            args_digest,
            provenance: labels,
            hints: None,
            origin: None,
            context_taint: self.state.call_taint(call),
            grant: self.state.grant_of(&step.id),
            parent: self.state.parent(),
        };
        let verdict = match &setting.control {
            None => ControlVerdict::Indeterminate {
                reason: "execution control is required, but none is configured".into(),
            },
            Some(control) => match self
                .bounded(
                    Bound::Within(setting.timeout_ms),
                    control.evaluate(&request),
                )
                .await
            {
                Ok(v) => v,
                Err(Cut::Cancelled(c)) => ControlVerdict::Indeterminate {
                    reason: format!("cancelled by {} while execution control ruled", c.by),
                },
                Err(_) => ControlVerdict::Indeterminate {
                    reason: format!("no answer within {} ms", setting.timeout_ms),
                },
            },
        };
        control_fault(verdict)
    }

    /// INVARIANT (fail closed): anything but allow stops the call before the provider. An ask
    /// is met only by an approval bound to these arguments and this schema; otherwise a durable
    /// request is made and the call is held. Returns the approval to consume, if one is used.
    ///
    /// The shell of the Bridge's ruling: it asks what must be asked (the tree's denials, the
    /// authority, each with its bound), hands the answers to the pure rulings
    /// ([`Run::standing_denial`], [`Run::rule`], [`Run::meet`]) and carries out the
    /// [`Ruling`] they come to.
    pub(super) async fn authorize(&mut self, j: &Judged<'_>) -> Result<Option<String>, Refusal> {
        let tree = self
            .tree_denial(&j.step.provider, &j.action.name, j.args_digest)
            .await;
        let denied_other = self.standing_denial(j, tree)?;
        // INVARIANT (fail closed): an authority that gives no verdict in time, or a run
        // cancelled while it deliberates, stops the call; the provider is never called.
        let answered = self
            .bounded(
                Bound::Call,
                self.rules.authority.evaluate(&self.capability_request(j)),
            )
            .await;
        let ruling = match self.rule(j, answered, denied_other) {
            Ruling::Request(asked) => self.standing(j, asked).await,
            other => other,
        };
        self.carry_out(ruling)
    }

    /// A request about to be made, answered at once by a person's standing grant when one
    /// covers the call (its principal, provider, tool and argument constraints, live at the
    /// run's time) and the approve policies let the grant answer (Cedar sees it as the approver
    /// `grant:<id>` of its tenant). A request that needs several approvers, a store that cannot
    /// be read in time, or no grant that covers it: the request is made, as it would be.
    async fn standing(&mut self, j: &Judged<'_>, asked: EventKind) -> Ruling {
        let EventKind::ApprovalRequested {
            request, approvers, ..
        } = &asked
        else {
            return Ruling::Request(asked);
        };
        if *approvers > 1 {
            return Ruling::Request(asked);
        }
        let tenant = self.state.principal().tenant.clone();
        let store = self.engine.store.clone();
        let grants = match self.bounded(Bound::Call, store.grants(Some(&tenant))).await {
            Ok(Ok(grants)) => grants,
            _ => return Ruling::Request(asked),
        };
        let trusted = self.spec.trusted_providers();
        let starter = self.state.principal();
        let at = Asked {
            tenant: &starter.tenant,
            user: &starter.user,
            provider: &j.step.provider,
            tool: &j.action.name,
            args: j.args,
            labels: j.labels,
            trusted: &trusted,
            at_ms: self.state.last_at_ms(),
        };
        for grant in grants {
            if grant.covers(&at).is_err() {
                continue;
            }
            // A grant is its giver's approval: where a run's starter may not approve their own
            // requests, their own grant does not answer them either.
            let giver = crate::approver::answerer(&grant.by);
            if !self.engine.self_approval
                && giver.tenant == starter.tenant
                && giver.user == starter.user
            {
                continue;
            }
            let approver = Principal {
                tenant: grant.tenant.clone(),
                user: format!("grant:{}", grant.id),
                agent: String::new(),
            };
            let call = self.capability_request(j);
            let verdict = self.rules.authority.rule_approver(&ApproverRequest {
                approver: &approver,
                starter,
                call: &call,
                approvals_needed: 1,
                approved_by: &[],
            });
            let rule = match verdict {
                ApproverVerdict::Allow { rule } => Some(rule.into_boxed_str()),
                ApproverVerdict::NotRuled => None,
                ApproverVerdict::Deny { .. } => continue,
            };
            let granted = EventKind::ApprovalGranted {
                request: request.clone(),
                grant: Arc::new(grant),
                rule,
            };
            return Ruling::Granted(Box::new((asked, granted)));
        }
        Ruling::Request(asked)
    }

    /// Carries out what the Bridge ruled on a call: the approval it consumes, the
    /// cancellation seen while it was ruled on, the approval request to record.
    fn carry_out(&mut self, ruling: Ruling) -> Result<Option<String>, Refusal> {
        match ruling {
            Ruling::Allow(consume) => Ok(consume),
            Ruling::Refuse(refusal) => Err(refusal),
            Ruling::Cancelled(cancel, refusal) => {
                self.cancel = Some(cancel);
                Err(refusal)
            }
            Ruling::Granted(both) => {
                let (requested, granted) = *both;
                let request = match &requested {
                    EventKind::ApprovalRequested { request, .. } => request.clone(),
                    _ => String::new(),
                };
                let recorded = self.stage(requested).and_then(|_| self.stage(granted));
                if let Err(e) = recorded {
                    return Err(refuse(
                        Code::ApprovalUnrecorded,
                        Layer::Runtime,
                        format!("the approval by a standing grant could not be recorded: {e}"),
                    ));
                }
                Ok(Some(request))
            }
            Ruling::Request(requested) => {
                if let Err(e) = self.stage(requested) {
                    return Err(refuse(
                        Code::ApprovalUnrecorded,
                        Layer::Runtime,
                        format!("the approval request could not be recorded: {e}"),
                    ));
                }
                Err(Refusal {
                    held: true,
                    ..refuse(Code::ApprovalRequired, Layer::Policy, "held for approval")
                })
            }
        }
    }

    /// INVARIANT (denied stays denied): a person's denial of this effect — this provider's
    /// tool with these arguments — holds whatever the authority says now, and is cited.
    /// Another tool called with the same arguments is not refused for it, nor let through
    /// unasked: a commit is asked about on its own (what this returns, for [`Run::rule`]); a
    /// read is ruled as any read. (A run recorded under provenance rules before 3 matched
    /// provider and arguments only, and replays so.) `tree` is what the other runs of its
    /// tree denied. Pure: decided from the run's state.
    fn standing_denial(
        &self,
        j: &Judged<'_>,
        (across_tree, across_tree_other): (Option<String>, Option<String>),
    ) -> Result<Option<String>, Refusal> {
        let (step, tool, effect) = (j.step, j.action.name.as_str(), j.action.effect);
        let by_tool = self.state.provenance_rules() >= 3;
        let here = self
            .state
            .approvals()
            .iter()
            .filter_map(|a| match &a.status {
                ApprovalStatus::Denied { by, reason } => Some(Denial {
                    effect: (&a.provider, &a.tool, &a.args_digest),
                    refusal: format!("denied by {by}: {reason} (request {})", a.id),
                    cite: format!("request {}", a.id),
                }),
                _ => None,
            });
        let (denial, other) = rule_on((&step.provider, tool, j.args_digest), here, by_tool);
        if let Some(message) = denial.or(across_tree) {
            return Err(Refusal {
                ruled: Some(j.args_digest.into()),
                ..refuse(Code::ApprovalDenied, Layer::Policy, message)
            });
        }
        Ok(other
            .or(across_tree_other)
            .filter(|_| effect == Effect::Commit))
    }

    /// What the Bridge rules on `j` given the authority's answer (`answered`) and the ask a
    /// denial of another tool with these arguments makes (`denied_other`). Pure: decided
    /// from the run's state and these answers.
    fn rule(
        &self,
        j: &Judged<'_>,
        answered: Result<Verdict, Cut>,
        denied_other: Option<String>,
    ) -> Ruling {
        let ruled = |r: Refusal| {
            Ruling::Refuse(Refusal {
                ruled: Some(j.args_digest.into()),
                ..r
            })
        };
        let verdict = match answered {
            Ok(verdict) => verdict,
            Err(Cut::Cancelled(c)) => {
                let message = format!(
                    "cancelled by {} while the authority ruled: {}",
                    c.by, c.reason
                );
                let refusal = Refusal {
                    status: CallStatus::Cancelled,
                    ..refuse(Code::Cancelled, Layer::Runtime, message)
                };
                return Ruling::Cancelled(c, refusal);
            }
            Err(_) => {
                return ruled(refuse(
                    Code::PolicyTimeout,
                    Layer::Policy,
                    format!(
                        "the authority gave no verdict within `call_timeout_ms` ({} ms) or \
                         before the run's deadline",
                        self.spec.limits.call_timeout_ms
                    ),
                ));
            }
        };
        // A commit with the arguments of another tool's denied request asks, whatever the
        // authority said. (A replayed ask carries these words already.)
        let verdict = match (verdict, denied_other) {
            (Verdict::Allow { .. }, Some(why)) => Verdict::Ask {
                reason: why,
                approvers: 1,
            },
            (Verdict::Ask { reason, approvers }, Some(why)) if !reason.contains(&why) => {
                Verdict::Ask {
                    reason: format!("{reason}; {why}"),
                    approvers,
                }
            }
            (verdict, _) => verdict,
        };
        // The run's plan, approved once as a whole (scope `plan`): until a person has, a
        // commit within it asks, and its request proposes the plan.
        let plan = self.plan_gate(j.step, j.action.effect);
        let ask = match (verdict, plan) {
            (Verdict::Allow { .. }, PlanGate::Approved(id)) => return Ruling::Allow(Some(id)),
            (Verdict::Allow { .. }, PlanGate::Pending(plan)) => (plan, 1, ApprovalScope::Plan),
            (Verdict::Allow { .. }, PlanGate::None) => return Ruling::Allow(None),
            // (A replayed ask carries the plan's words already.)
            (Verdict::Ask { reason, approvers }, PlanGate::Pending(plan)) => {
                let reason = if reason == plan || reason.ends_with(&format!("; {plan}")) {
                    reason
                } else {
                    format!("{reason}; {plan}")
                };
                (reason, approvers, ApprovalScope::Plan)
            }
            (Verdict::Ask { reason, approvers }, _) => (reason, approvers, ApprovalScope::Once),
            (Verdict::Deny { reasons }, _) => {
                return ruled(refuse(
                    Code::PolicyDenied,
                    Layer::Policy,
                    reasons.join("; "),
                ));
            }
            (Verdict::Indeterminate { reason }, _) => {
                return ruled(refuse(Code::PolicyIndeterminate, Layer::Policy, reason));
            }
        };
        self.meet(j, ask)
    }

    /// The request an authority, an approver's rules and an interceptor rule on, for `j`.
    pub(super) fn capability_request<'r>(&'r self, j: &'r Judged<'r>) -> CapabilityRequest<'r> {
        CapabilityRequest {
            hints: j.action.hints.as_ref(),
            origin: j.action.origin.as_ref(),
            principal: self.state.principal(),
            handle_age_ms: self.handle_age(j.call),
            run: &self.run_id,
            step: &j.step.id,
            call: j.call,
            provider: &j.step.provider,
            tool: &j.action.name,
            effect: j.action.effect,
            args: j.args,
            args_digest: j.args_digest,
            provenance: j.labels,
            context_taint: self.state.call_taint(j.call),
            grant: self.state.grant_of(&j.step.id),
            parent: self.state.parent(),
        }
    }

    /// Meets an ask with an approval bound to these arguments and this schema (the one to
    /// consume), or rules that a durable request be made and the call held. Pure: decided
    /// from the run's state.
    fn meet(
        &self,
        j: &Judged<'_>,
        (reason, approvers, proposed_scope): (String, u32, ApprovalScope),
    ) -> Ruling {
        let (step, call, tool, effect) = (j.step, j.call, j.action.name.as_str(), j.action.effect);
        let (args, args_digest, labels) = (j.args, j.args_digest, j.labels);
        // Digested only on an ask: the schema the approval binds.
        let schema_digest = canon::digest(&j.action.input_schema);
        let schema_digest = schema_digest.as_str();
        let now = self.state.last_at_ms();
        let provider = step.provider.clone();
        let ruled = |r: Refusal| {
            Ruling::Refuse(Refusal {
                ruled: Some(args_digest.into()),
                ..r
            })
        };
        let live = |until: &Option<u64>| until.is_none_or(|u| now < u);
        // A call already dispatched (repeated at re-entry) cannot start a new request.
        let dispatched = self.state.call(call).is_some_and(|c| c.executed.is_some());
        for a in self.state.approvals().iter().filter(|a| a.call == call) {
            let bound = a.bound_digest() == args_digest && a.schema_digest == schema_digest;
            match &a.status {
                ApprovalStatus::Approved { until_ms, .. } if bound && live(until_ms) => {
                    // Already consumed by this very call (a repeat at re-entry): nothing new.
                    if a.consumed_by.contains(&call) {
                        return Ruling::Allow(None);
                    }
                    return Ruling::Allow(Some(a.id.clone()));
                }
                ApprovalStatus::Expired if bound => {
                    return ruled(refuse(
                        Code::ApprovalExpired,
                        Layer::Policy,
                        format!("approval request {} expired unanswered", a.id),
                    ));
                }
                _ => {}
            }
        }
        if let Some(a) = self.state.approvals().iter().find(|a| {
            a.provider == provider
                && a.tool == tool
                && a.schema_digest == schema_digest
                && matches!(&a.status, ApprovalStatus::Approved { scope: ApprovalScope::Run, until_ms } if live(until_ms))
        }) {
            return Ruling::Allow(Some(a.id.clone()));
        }
        if dispatched {
            return ruled(refuse(Code::ApprovalRequired, Layer::Policy, reason));
        }
        let id = format!("{}-a{}", self.run_id, self.state.approvals().len() + 1);
        let principal = self
            .state
            .decider()
            .as_ref()
            .map_or_else(|| "agent:unknown".to_owned(), |d| format!("agent:{d}"));
        Ruling::Request(EventKind::ApprovalRequested {
            request: id,
            call,
            step: step.id.clone(),
            principal,
            provider,
            tool: tool.to_owned(),
            effect,
            args_digest: args_digest.to_owned(),
            schema_digest: schema_digest.to_owned(),
            args: args.clone(),
            provenance: labels.into(),
            reason: reason.into(),
            proposed_scope,
            expires_at_ms: now.saturating_add(
                self.spec
                    .limits
                    .wait_max_ms
                    .map_or(self.spec.limits.approval_ttl_ms, |w| {
                        w.min(self.spec.limits.approval_ttl_ms)
                    }),
            ),
            approvers: approvers.max(1),
        })
    }
}

/// The fault a commit stops with under execution control's `verdict`, if it does not go on.
fn control_fault(verdict: ControlVerdict) -> Option<Fault> {
    match verdict {
        ControlVerdict::Allow => None,
        ControlVerdict::Block { reason } => Some(Fault::new(
            Code::ExecutionControlBlock,
            Layer::Policy,
            reason,
        )),
        ControlVerdict::Indeterminate { reason } => Some(Fault::new(
            Code::ExecutionControlIndeterminate,
            Layer::Policy,
            reason,
        )),
    }
}

/// What the Bridge rules on a call, as data: computed from the run's state and the answers
/// it asked for by the pure rulings, carried out by `Run::carry_out` (the Bridge's shell). A
/// replay or a test can ask what a call comes to without a provider, a store or a clock.
pub(super) enum Ruling {
    /// It goes on, consuming this approval if one is named.
    Allow(Option<String>),
    /// It is refused.
    Refuse(Refusal),
    /// The run was cancelled while the authority ruled: it is refused, the cancellation
    /// acted on.
    Cancelled(CancelRequest, Refusal),
    /// A person must approve it: this `approval_requested` is recorded and the call held.
    Request(EventKind),
    /// A person's standing grant approves it: the `approval_requested` and the
    /// `approval_granted` that answers it are recorded, and the call goes on.
    Granted(Box<(EventKind, EventKind)>),
}

/// Where a call stands with the run's plan (`plan_first` under the `untrusted-input`
/// profile).
enum PlanGate {
    /// No plan rules it: a read, a step with its own grant, a run with no plan or no profile.
    None,
    /// A commit within the plan, which no person has approved yet: the request's words.
    Pending(String),
    /// A commit within the plan a person approved: that approval.
    Approved(String),
}

impl Run<'_> {
    /// Where a call of `effect` in `step` stands with the run's plan.
    fn plan_gate(&self, step: &StepSpec, effect: Effect) -> PlanGate {
        // (A run recorded under provenance rules before 3 had no plan approvals.)
        if self.spec.profile.is_none()
            || self.state.provenance_rules() < 3
            || effect != Effect::Commit
            || !self.state.grant_is_planned(&step.id)
        {
            return PlanGate::None;
        }
        if let Some(a) = self.state.plan_approval(self.state.last_at_ms()) {
            return PlanGate::Approved(a.id.clone());
        }
        let plan = self
            .state
            .plan()
            .map(|p| {
                p.iter()
                    .map(|(s, g)| format!("step `{s}`: {}", warrant_core::scope::describe_grant(g)))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default();
        PlanGate::Pending(format!(
            "the run's plan, proposed from the objective before anything was read, needs a \
             person's approval once ({plan}): approving this request with scope `plan` \
             approves the plan, and later commits within it go on without asking (an argument \
             it leaves open that carries untrusted text is still asked about)"
        ))
    }
}

impl Run<'_> {
    /// INVARIANT (denied stays denied, across a tree): a person's denial of this effect
    /// (provider, tool and arguments digest) recorded in any other run of this run's tree of
    /// delegations — its root, a parent, a sibling, a child — holds here too. The tree's logs
    /// are read incrementally (each from where this run last read it), its members found
    /// from the root down through their `child_spawned` events.
    async fn tree_denial(
        &mut self,
        provider: &str,
        tool: &str,
        args_digest: &str,
    ) -> (Option<String>, Option<String>) {
        if self.state.parent().is_none() && self.state.children().next().is_none() {
            return (None, None);
        }
        let shared = self.tree.clone();
        let mut tree = shared.reading.lock().await;
        // A denial answers a request: a tree in which no run asked for approval (none found
        // when it was first read, none recorded since by this process, its one driver) has
        // none, and its logs need no reading.
        if tree.read_once && !shared.any_asked.load(std::sync::atomic::Ordering::SeqCst) {
            return (None, None);
        }
        tree.read_once = true;
        let mut queue = vec![crate::root_of(&self.run_id)];
        let mut visited = std::collections::HashSet::new();
        while let Some(member) = queue.pop() {
            if !visited.insert(member.clone()) {
                continue;
            }
            let from = tree.seen.get(&member).copied().unwrap_or(0) + 1;
            if member != self.run_id
                && let Ok(events) = self.engine.store.read(&member, from).await
            {
                for stored in events {
                    let e = &stored.event;
                    tree.seen.insert(member.clone(), e.seq);
                    match &e.kind {
                        EventKind::ApprovalRequested {
                            request,
                            provider,
                            tool,
                            args_digest,
                            ..
                        } => {
                            shared
                                .any_asked
                                .store(true, std::sync::atomic::Ordering::SeqCst);
                            tree.asked.insert(
                                request.clone(),
                                DeniedEffect {
                                    provider: provider.clone(),
                                    tool: tool.clone(),
                                    args_digest: args_digest.clone(),
                                },
                            );
                        }
                        EventKind::ApprovalResolved {
                            request,
                            approved: false,
                            by,
                            reason,
                            ..
                        } => {
                            if let Some(effect) = tree.asked.get(request).cloned() {
                                tree.denied.push((
                                    effect,
                                    format!(
                                        "denied by {by} in run `{member}`: {reason} (request {request})"
                                    ),
                                ));
                            }
                        }
                        EventKind::ChildSpawned { child, .. } => {
                            tree.members.insert(child.clone());
                        }
                        _ => {}
                    }
                }
            }
            // This run's own children are in its state.
            if member == self.run_id {
                for (_, c) in self.state.children() {
                    tree.members.insert(c.run.clone());
                }
            }
            queue.extend(
                tree.members
                    .iter()
                    .filter(|m| m.0.rsplit_once('.').map(|(p, _)| p) == Some(member.0.as_str()))
                    .cloned(),
            );
        }
        let denials = tree.denied.iter().map(|(e, m)| Denial {
            effect: (&e.provider, &e.tool, &e.args_digest),
            refusal: m.clone(),
            cite: m.clone(),
        });
        rule_on(
            (provider, tool, args_digest),
            denials,
            self.state.provenance_rules() >= 3,
        )
    }
}

/// A person's denial as a call is matched against it.
struct Denial<'a> {
    /// Provider, tool and arguments digest.
    effect: (&'a str, &'a str, &'a str),
    /// What a refusal under it says.
    refusal: String,
    /// How another tool's ask names it.
    cite: String,
}

/// What `denials` say of a call of `effect` (provider, tool, arguments digest): the refusal
/// of the first that denied this very effect, and the ask of the first that denied another
/// tool of the provider the same arguments (`by_tool`: provenance rules 3; before, a denial
/// covered every tool of its provider).
fn rule_on<'a>(
    (provider, tool, digest): (&str, &str, &str),
    denials: impl Iterator<Item = Denial<'a>>,
    by_tool: bool,
) -> (Option<String>, Option<String>) {
    let (mut same, mut other) = (None, None);
    for d in denials {
        let (p, t, g) = d.effect;
        if p != provider || g != digest {
            continue;
        }
        if t == tool || !by_tool {
            same = same.or(Some(d.refusal));
        } else if other.is_none() {
            other = Some(format!(
                "a person denied `{t}` with these same arguments ({}): `{tool}` is asked \
                 about on its own",
                d.cite
            ));
        }
    }
    (same, other)
}

/// What the runs of a tree this process drives know of the tree's logs, for
/// `Run::tree_denial`.
#[derive(Default)]
pub(crate) struct Tree {
    /// Some run of the tree asked for approval (read, or recorded by this process since).
    pub(crate) any_asked: std::sync::atomic::AtomicBool,
    /// What was read.
    reading: tokio::sync::Mutex<TreeReading>,
}

/// The logs of a tree, as far as they were read.
#[derive(Default)]
struct TreeReading {
    /// The tree's logs were read in this process.
    read_once: bool,
    /// The runs of the tree found so far (besides the root).
    members: std::collections::BTreeSet<RunId>,
    /// How far each was read.
    seen: std::collections::HashMap<RunId, u64>,
    /// Approval requests seen: the effect each asked about.
    asked: std::collections::HashMap<String, DeniedEffect>,
    /// Denials seen: the effect, and what to say.
    denied: Vec<(DeniedEffect, String)>,
}

/// One effect as a denial names it: a provider's tool with these arguments.
#[derive(Clone)]
struct DeniedEffect {
    provider: String,
    tool: String,
    args_digest: String,
}

//! Who may approve a request: a front door may forbid a run's starter to approve its own
//! requests (`Engine::with_self_approval(false)`), and the approve policies of the run's own
//! authority (Cedar's `approve` action: the operator's floor, the spec's policies) rule on
//! everyone else. Every approval records the rule it was given under.

use std::sync::Arc;

use warrant_core::Event;
use warrant_core::event::{EventKind, Principal};
use warrant_core::fold::{Approval, RunState};
use warrant_core::ids::RunId;
use warrant_core::ports::{ApproverRequest, ApproverVerdict, CapabilityRequest};

use crate::Engine;

/// Who answers, from the name an answer is recorded under: `tenant/user` (a server's
/// principal) or a bare name (the CLI's operator, tenant `local`).
pub(crate) fn answerer(by: &str) -> Principal {
    let (tenant, user) = by.split_once('/').unwrap_or(("local", by));
    Principal {
        tenant: tenant.to_owned(),
        user: user.to_owned(),
        agent: String::new(),
    }
}

impl Engine {
    /// The rule under which `by` may approve `approval` of `run` (whose log is `events`,
    /// folded as `state`), or why they may not.
    pub(crate) async fn rule_approver(
        &self,
        run: &RunId,
        events: &[Arc<Event>],
        state: &RunState,
        approval: &Approval,
        by: &str,
    ) -> Result<String, String> {
        let approver = answerer(by);
        let starter = state.principal();
        let own = starter.tenant == approver.tenant && starter.user == approver.user;
        if own && !self.self_approval {
            return Err(format!(
                "`{by}` started run `{run}`: a person other than its starter must approve its requests"
            ));
        }
        // A child's calls are ruled by its root's authority with its own: the root's approve
        // policies (the floor among them) rule on its approvers.
        let root = crate::root_of(run);
        let (description, spec) = if root == *run {
            (state.authority().cloned(), state.shared_spec().cloned())
        } else {
            let root_state = self.fold(&root).await.map_err(|e| e.to_string())?;
            (
                root_state.authority().cloned(),
                root_state.shared_spec().cloned(),
            )
        };
        // An embedder that set the authority rules with it, as it rules re-entered runs;
        // otherwise the run's recorded one, rebuilt.
        let authority = match (description, spec) {
            _ if self.authority_set => Some(self.authority.clone()),
            (Some(d), Some(spec)) => Some(
                crate::rebuild_authority(&d, self.policies.as_deref(), &spec).map_err(|e| {
                    format!(
                        "who may approve cannot be ruled on: the run's authority does not \
                         rebuild here ({e}; answer with an engine that has its policy source, \
                         `Engine::with_policies`)"
                    )
                })?,
            ),
            _ => None,
        };
        let asked = events.iter().find_map(|e| match &e.kind {
            EventKind::ApprovalRequested {
                request,
                step,
                args,
                provenance,
                effect,
                ..
            } if *request == approval.id => Some((step, args, provenance, *effect)),
            _ => None,
        });
        let (Some(authority), Some((step, args, provenance, effect))) = (authority, asked) else {
            return Ok(self.unruled(own));
        };
        let action = state
            .observations()
            .get(&approval.provider)
            .and_then(|o| o.actions.iter().find(|a| a.name == approval.tool));
        let hints = action.and_then(|a| a.hints.as_ref());
        let origin = action.and_then(|a| a.origin.as_ref());
        let call = CapabilityRequest {
            principal: starter,
            run,
            step,
            call: approval.call,
            provider: &approval.provider,
            tool: &approval.tool,
            effect,
            args,
            args_digest: &approval.args_digest,
            provenance,
            hints,
            origin,
            handle_age_ms: None,
            context_taint: state.call_taint(approval.call),
            grant: None,
            parent: state.parent(),
        };
        let approved_by: Vec<String> = approval
            .approved_by
            .iter()
            .map(|(who, ..)| who.clone())
            .collect();
        let request = ApproverRequest {
            approver: &approver,
            starter,
            call: &call,
            approvals_needed: approval.approvers,
            approved_by: &approved_by,
        };
        match authority.rule_approver(&request) {
            ApproverVerdict::Allow { rule } => Ok(rule),
            ApproverVerdict::NotRuled => Ok(self.unruled(own)),
            ApproverVerdict::Deny { reasons } => Err(format!(
                "`{by}` may not approve `{}`: {}",
                approval.id,
                reasons.join("; ")
            )),
        }
    }

    /// The rule when no approve policy rules: the front door's own.
    fn unruled(&self, own: bool) -> String {
        if own {
            "the starter of a run may approve its requests here".to_owned()
        } else {
            "no approve policy: the front door's approver".to_owned()
        }
    }
}

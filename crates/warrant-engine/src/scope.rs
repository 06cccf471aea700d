//! The spec's own rulings as an authority: its steps' grants and its profile
//! (`warrant_core::scope`), composed with the run's other authorities so the stricter answer
//! wins, recorded as `{"scope": ...}` and rebuilt from the frozen spec.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;
use warrant_core::Spec;
use warrant_core::ports::{Authority, BoxFuture, CapabilityRequest, Verdict};
use warrant_core::scope::{Call, Ruling, rule};

/// The grants and the profile of one spec.
pub(crate) struct Scope {
    spec: Arc<Spec>,
    trusted: BTreeSet<String>,
}

impl Scope {
    /// `spec`'s scope, when it has a grant or a profile.
    pub(crate) fn of(spec: &Arc<Spec>) -> Option<Scope> {
        let scoped = spec.profile.is_some()
            || spec.plan_first
            || spec.steps.iter().any(|s| s.grant.is_some());
        scoped.then(|| Scope {
            spec: spec.clone(),
            trusted: spec.trusted_providers(),
        })
    }
}

impl Authority for Scope {
    fn describe(&self) -> Option<serde_json::Value> {
        Some(json!({"scope": {"profile": self.spec.profile.map(|p| p.to_string())}}))
    }

    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        let verdict = match self.spec.steps.iter().find(|s| s.id == *request.step) {
            None => Verdict::Indeterminate {
                reason: format!("the spec has no step `{}`", request.step),
            },
            Some(step) => {
                let call = Call {
                    step,
                    tool: request.tool,
                    effect: request.effect,
                    args: request.args,
                    labels: request.provenance,
                    taint: request.context_taint,
                    trusted: &self.trusted,
                    grant: request.grant,
                };
                match rule(&call, self.spec.profile) {
                    Ruling::Allow => Verdict::Allow {
                        grant: "scope".into(),
                    },
                    Ruling::Ask(reason) => Verdict::Ask {
                        reason,
                        approvers: 1,
                    },
                    Ruling::Deny(reason) => Verdict::Deny {
                        reasons: vec![reason],
                    },
                }
            }
        };
        Box::pin(std::future::ready(verdict))
    }
}

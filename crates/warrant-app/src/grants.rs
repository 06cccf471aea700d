//! People's standing grants at the front doors: given (by hand, or as "always allow this" with
//! an approval), listed, revoked. The engine finds them in the store when the authority asks
//! about a call (`warrant_core::standing`).

use std::collections::BTreeMap;

use warrant_core::ids::RunId;
use warrant_core::spec::ArgConstraint;
use warrant_core::standing::{Revoked, StandingGrant};
use warrant_core::store::Grants;
use warrant_engine::{Answer, Answered};

use crate::{App, AppError, Result};

/// A new grant's id: `g` and a time-ordered unique part.
pub fn new_grant_id() -> String {
    use warrant_core::ports::IdGen as _;
    let run = warrant_engine::time::TimeOrderedIds::default().run_id();
    format!("g{}", run.0.trim_start_matches('r'))
}

impl App {
    /// The store's standing grants.
    pub fn grants_index(&self) -> &dyn Grants {
        self.store().as_ref()
    }

    /// Checks and keeps a new grant.
    pub async fn grant_add(&self, grant: StandingGrant) -> Result<StandingGrant> {
        let problems = grant.problems();
        if !problems.is_empty() {
            return Err(AppError::Invalid(format!(
                "the grant: {}",
                problems.join("; ")
            )));
        }
        self.grants_index().grant_put(grant.clone()).await?;
        tracing::info!(grant = %grant.id, by = %grant.by, covers = %grant.describe(), "standing grant given");
        Ok(grant)
    }

    /// The grants (of `tenant` only, if given), newest first.
    pub async fn grants(&self, tenant: Option<&str>) -> Result<Vec<StandingGrant>> {
        Ok(self.grants_index().grants(tenant).await?)
    }

    /// Revokes grant `id` (of `tenant` only, if given; another's is not found). Whether it
    /// was live until now.
    pub async fn grant_revoke(
        &self,
        id: &str,
        tenant: Option<&str>,
        by: &str,
        now_ms: u64,
    ) -> Result<bool> {
        let known = self.grants(tenant).await?.into_iter().any(|g| g.id == id);
        if !known {
            return Err(AppError::NotFound(format!(
                "no standing grant `{}`",
                warrant_core::text::echo(id)
            )));
        }
        let revoked = Revoked {
            by: by.to_owned(),
            at_ms: now_ms,
        };
        let done = self
            .grants_index()
            .grant_revoke(id, tenant, revoked)
            .await?;
        if done {
            tracing::info!(grant = %id, by = %by, "standing grant revoked");
        }
        Ok(done)
    }

    /// "Always allow this": approves `request` once, as `by`, and keeps a standing grant for
    /// its provider's tool with every argument equal to its value now, for the run's user (or
    /// its whole tenant), until `until_ms` (if given). The grant and the answer.
    pub async fn approve_always(
        &self,
        request: &str,
        by: &str,
        whole_tenant: bool,
        until_ms: Option<u64>,
        now_ms: u64,
    ) -> Result<(StandingGrant, Answered)> {
        let run = RunId::of_request(request)
            .ok_or_else(|| AppError::NotFound(format!("no approval request `{request}`")))?;
        let row = self
            .approvals(Some(&run))
            .await?
            .into_iter()
            .find(|a| a.request == request)
            .ok_or_else(|| AppError::NotFound(format!("no approval request `{request}`")))?;
        let state = self.engine().fold(&run).await.map_err(AppError::from)?;
        let principal = state.principal().clone();
        let args: BTreeMap<String, ArgConstraint> = row
            .args
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            ArgConstraint {
                                one_of: vec![v.clone()],
                                ..ArgConstraint::default()
                            },
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let grant = StandingGrant {
            id: new_grant_id(),
            tenant: principal.tenant.clone(),
            user: (!whole_tenant).then(|| principal.user.clone()),
            provider: row.provider.clone(),
            tool: row.tool.clone(),
            args,
            by: by.to_owned(),
            created_at_ms: now_ms,
            expires_at_ms: until_ms,
            note: format!("always allow, from {request}"),
            revoked: None,
        };
        // The answer first: a grant is kept only for what its giver may approve.
        let answer = Answer::Approve {
            scope: warrant_core::event::ApprovalScope::Once,
            until_ms: None,
            edited: None,
        };
        let answered = self.answer(request, answer, by).await?;
        let grant = self.grant_add(grant).await?;
        Ok((grant, answered))
    }
}

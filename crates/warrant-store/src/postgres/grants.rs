//! People's standing grants, each kept as its JSON, shared by the fleet.

use warrant_core::ports::BoxFuture;
use warrant_core::standing::{Revoked, StandingGrant};
use warrant_core::store::{Grants, StoreError};

use super::{PostgresStore, sql_int};
use crate::{grant_body, grant_of};

impl Grants for PostgresStore {
    fn grant_put(&self, grant: StandingGrant) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let body = grant_body(&grant)?;
            let rows = self
                .inner
                .query(
                    "INSERT INTO warrant_grants (id, tenant, created_at_ms, revoked, body)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING id",
                    &[
                        &grant.id,
                        &grant.tenant,
                        &sql_int(grant.created_at_ms)?,
                        &grant.revoked.is_some(),
                        &body,
                    ],
                )
                .await?;
            if rows.is_empty() {
                return Err(StoreError::Io(format!(
                    "grant `{}` exists already",
                    grant.id
                )));
            }
            Ok(())
        })
    }
    fn grants(
        &self,
        tenant: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<StandingGrant>, StoreError>> {
        let tenant = tenant.map(str::to_owned);
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "SELECT body FROM warrant_grants WHERE ($1::text IS NULL OR tenant = $1)
                     ORDER BY created_at_ms DESC, id DESC",
                    &[&tenant],
                )
                .await?;
            rows.iter()
                .map(|r| grant_of(&r.get::<_, String>(0)))
                .collect()
        })
    }
    fn grant_revoke(
        &self,
        id: &str,
        tenant: Option<&str>,
        revoked: Revoked,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (id, tenant) = (id.to_owned(), tenant.map(str::to_owned));
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "SELECT body FROM warrant_grants
                     WHERE id = $1 AND ($2::text IS NULL OR tenant = $2) AND NOT revoked",
                    &[&id, &tenant],
                )
                .await?;
            let Some(row) = rows.first() else {
                return Ok(false);
            };
            let mut grant = grant_of(&row.get::<_, String>(0))?;
            grant.revoked = Some(revoked);
            // Only the first revocation lands (the row is changed only while not revoked).
            let done = self
                .inner
                .query(
                    "UPDATE warrant_grants SET revoked = true, body = $2
                     WHERE id = $1 AND NOT revoked RETURNING id",
                    &[&id, &grant_body(&grant)?],
                )
                .await?;
            Ok(!done.is_empty())
        })
    }
}

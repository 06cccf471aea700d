//! People's standing grants, each kept as its JSON (written through the reader connection).

use rusqlite::{OptionalExtension, params};
use warrant_core::ports::BoxFuture;
use warrant_core::standing::{Revoked, StandingGrant};
use warrant_core::store::{Grants, StoreError};

use super::{SqliteStore, io, schema::has_column, sql_int};
use crate::{grant_body, grant_of};

impl Grants for SqliteStore {
    fn grant_put(&self, grant: StandingGrant) -> BoxFuture<'_, Result<(), StoreError>> {
        self.writing(move |inner| {
            let body = grant_body(&grant)?;
            let created = sql_int(grant.created_at_ms)?;
            let n = inner
                .reader()?
                .prepare_cached(
                    "INSERT OR IGNORE INTO grants (id, tenant, created_at_ms, revoked, body)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        grant.id,
                        grant.tenant,
                        created,
                        grant.revoked.is_some(),
                        body
                    ])
                })
                .map_err(io)?;
            if n == 0 {
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
        self.reading(move |inner| {
            let conn = inner.reader()?;
            if !has_column(&conn, "grants", "body") {
                return Ok(Vec::new());
            }
            let mut st = conn
                .prepare_cached(
                    "SELECT body FROM grants WHERE (?1 IS NULL OR tenant = ?1)
                     ORDER BY created_at_ms DESC, id DESC",
                )
                .map_err(io)?;
            let bodies = st
                .query_map([tenant], |r| r.get::<_, String>(0))
                .map_err(io)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(io)?;
            bodies.iter().map(|b| grant_of(b)).collect()
        })
    }
    fn grant_revoke(
        &self,
        id: &str,
        tenant: Option<&str>,
        revoked: Revoked,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (id, tenant) = (id.to_owned(), tenant.map(str::to_owned));
        self.writing(move |inner| {
            let conn = inner.reader()?;
            let tx = rusqlite::Transaction::new_unchecked(
                &conn,
                rusqlite::TransactionBehavior::Immediate,
            )
            .map_err(io)?;
            let body: Option<String> = tx
                .prepare_cached(
                    "SELECT body FROM grants
                     WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2) AND revoked = 0",
                )
                .and_then(|mut st| st.query_row(params![id, tenant], |r| r.get(0)).optional())
                .map_err(io)?;
            let Some(body) = body else {
                return Ok(false);
            };
            let mut grant = grant_of(&body)?;
            grant.revoked = Some(revoked);
            let body = grant_body(&grant)?;
            tx.prepare_cached("UPDATE grants SET revoked = 1, body = ?2 WHERE id = ?1")
                .and_then(|mut st| st.execute(params![id, body]))
                .map_err(io)?;
            tx.commit().map_err(io)?;
            Ok(true)
        })
    }
}

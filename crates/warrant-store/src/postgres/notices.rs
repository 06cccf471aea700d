//! The outbox of notices: written by the writer with the appends that make them; taken
//! (`FOR UPDATE SKIP LOCKED`, so two processes never take the same one at once), settled and
//! listed as single statements on the shared connection.

use warrant_core::notice::{Notice, NoticeQuery, NoticeState};
use warrant_core::ports::BoxFuture;
use warrant_core::store::{NoticeOutbox, StoreError};

use super::{PostgresStore, sql_int, unsigned};
use crate::{NoticeRow, delivered_json};

fn notice(row: &tokio_postgres::Row) -> Result<Notice, StoreError> {
    NoticeRow {
        id: row.get(0),
        run_id: row.get(1),
        seq: unsigned(row.get(2))?,
        kind: row.get(3),
        at_ms: unsigned(row.get(4))?,
        state: row.get(5),
        attempts: unsigned(row.get(6))?,
        next_at_ms: unsigned(row.get(7))?,
        last_error: row.get(8),
        delivered_to: row.get(9),
        settled_at_ms: row.get::<_, Option<i64>>(10).map(unsigned).transpose()?,
    }
    .notice()
}

impl NoticeOutbox for PostgresStore {
    fn notices_due(
        &self,
        now_ms: u64,
        lease_ms: u64,
        want: usize,
    ) -> BoxFuture<'_, Result<Vec<Notice>, StoreError>> {
        Box::pin(async move {
            let now = sql_int(now_ms)?;
            let until = sql_int(now_ms.saturating_add(lease_ms))?;
            let want = i64::try_from(want).unwrap_or(i64::MAX);
            let rows = self
                .inner
                .query(
                    concat!(
                        "UPDATE warrant_notices SET next_at_ms = $2, attempts = attempts + 1
                         WHERE id IN (SELECT id FROM warrant_notices
                                      WHERE state = 'pending' AND next_at_ms <= $1
                                      ORDER BY next_at_ms, id LIMIT $3
                                      FOR UPDATE SKIP LOCKED)
                         RETURNING ",
                        notice_columns!()
                    ),
                    &[&now, &until, &want],
                )
                .await?;
            let mut out: Vec<Notice> = rows.iter().map(notice).collect::<Result<_, _>>()?;
            out.sort_by(|a, b| (a.next_at_ms, &a.id).cmp(&(b.next_at_ms, &b.id)));
            Ok(out)
        })
    }
    fn notice_settle(&self, n: &Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        let n = n.clone();
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "UPDATE warrant_notices SET state = $2, next_at_ms = $3, last_error = $4,
                         delivered_to = $5, settled_at_ms = $6
                     WHERE id = $1 AND state = 'pending' RETURNING id",
                    &[
                        &n.id,
                        &n.state.name(),
                        &sql_int(n.next_at_ms)?,
                        &n.last_error,
                        &delivered_json(&n),
                        &n.settled_at_ms.map(sql_int).transpose()?,
                    ],
                )
                .await?;
            Ok(!rows.is_empty())
        })
    }
    fn notice_put(&self, n: Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "INSERT INTO warrant_notices (id, run_id, seq, kind, at_ms, state, attempts,
                         next_at_ms, last_error, delivered_to, settled_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                     ON CONFLICT (id) DO NOTHING RETURNING id",
                    &[
                        &n.id,
                        &n.run_id.0,
                        &sql_int(n.seq)?,
                        &n.kind.name(),
                        &sql_int(n.at_ms)?,
                        &n.state.name(),
                        &i64::from(n.attempts),
                        &sql_int(n.next_at_ms)?,
                        &n.last_error,
                        &delivered_json(&n),
                        &n.settled_at_ms.map(sql_int).transpose()?,
                    ],
                )
                .await?;
            Ok(!rows.is_empty())
        })
    }
    fn notices(&self, query: NoticeQuery) -> BoxFuture<'_, Result<Vec<Notice>, StoreError>> {
        Box::pin(async move {
            let limit = crate::sql_limit(query.limit);
            let state = query.state.map(NoticeState::name);
            let run = query.run.map(|r| r.0);
            let rows = self
                .inner
                .query(
                    concat!(
                        "SELECT ",
                        notice_columns!(),
                        " FROM warrant_notices
                         WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR run_id = $2)
                         ORDER BY at_ms DESC, id DESC LIMIT $3"
                    ),
                    &[&state, &run, &limit],
                )
                .await?;
            rows.iter().map(notice).collect()
        })
    }
    fn notice_counts(&self) -> BoxFuture<'_, Result<Vec<(NoticeState, u64)>, StoreError>> {
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "SELECT state, count(*) FROM warrant_notices GROUP BY state",
                    &[],
                )
                .await?;
            let mut out: Vec<(NoticeState, u64)> =
                NoticeState::ALL.into_iter().map(|s| (s, 0)).collect();
            for r in &rows {
                let state: NoticeState = r.get::<_, String>(0).parse().map_err(StoreError::Io)?;
                if let Some(slot) = out.iter_mut().find(|(s, _)| *s == state) {
                    slot.1 = unsigned(r.get(1))?;
                }
            }
            Ok(out)
        })
    }
    fn notices_purge(&self, before_ms: u64, most: usize) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "DELETE FROM warrant_notices WHERE id IN (SELECT id FROM warrant_notices
                         WHERE state <> 'pending' AND settled_at_ms < $1 LIMIT $2)
                     RETURNING id",
                    &[
                        &sql_int(before_ms)?,
                        &i64::try_from(most).unwrap_or(i64::MAX),
                    ],
                )
                .await?;
            Ok(rows.len() as u64)
        })
    }
}

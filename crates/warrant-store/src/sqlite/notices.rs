//! The outbox of notices: written by the writer with the appends that make them
//! (`insert`), taken, settled and listed through the reader connection.

use rusqlite::{Connection, params};
use warrant_core::notice::{Notice, NoticeQuery, NoticeState};
use warrant_core::ports::BoxFuture;
use warrant_core::store::{NoticeOutbox, StoreError};

use super::{SqliteStore, column_u64, column_u64_opt, io, schema::has_column, sql_int};
use crate::{NoticeRow, delivered_json};

/// Puts `n` in the outbox, in the caller's transaction, unless its id is there.
pub(super) fn insert(conn: &Connection, n: &Notice) -> Result<bool, StoreError> {
    let added = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO notices (id, run_id, seq, kind, at_ms, state, attempts,
                 next_at_ms, last_error, delivered_to, settled_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut st| {
            st.execute(params![
                n.id,
                n.run_id.0,
                sql_int(n.seq).map_err(to_sql)?,
                n.kind.name(),
                sql_int(n.at_ms).map_err(to_sql)?,
                n.state.name(),
                n.attempts,
                sql_int(n.next_at_ms).map_err(to_sql)?,
                n.last_error,
                delivered_json(n),
                n.settled_at_ms.map(sql_int).transpose().map_err(to_sql)?,
            ])
        })
        .map_err(io)?;
    Ok(added > 0)
}

fn to_sql(e: StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(std::io::Error::other(e.to_string())))
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<NoticeRow> {
    Ok(NoticeRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        seq: column_u64(r, 2)?,
        kind: r.get(3)?,
        at_ms: column_u64(r, 4)?,
        state: r.get(5)?,
        attempts: column_u64(r, 6)?,
        next_at_ms: column_u64(r, 7)?,
        last_error: r.get(8)?,
        delivered_to: r.get(9)?,
        settled_at_ms: column_u64_opt(r, 10)?,
    })
}

fn rows(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Notice>, StoreError> {
    let mut st = conn.prepare_cached(sql).map_err(io)?;
    let found = st
        .query_map(params, row)
        .map_err(io)?
        .collect::<Result<Vec<NoticeRow>, _>>()
        .map_err(io)?;
    found.into_iter().map(NoticeRow::notice).collect()
}

impl NoticeOutbox for SqliteStore {
    fn notices_due(
        &self,
        now_ms: u64,
        lease_ms: u64,
        want: usize,
    ) -> BoxFuture<'_, Result<Vec<Notice>, StoreError>> {
        self.writing(move |inner| {
            let conn = inner.reader()?;
            let now = sql_int(now_ms)?;
            let until = sql_int(now_ms.saturating_add(lease_ms))?;
            let want = i64::try_from(want).unwrap_or(i64::MAX);
            // One statement: the rows are chosen and leased in the same write.
            rows(
                &conn,
                concat!(
                    "UPDATE notices SET next_at_ms = ?2, attempts = attempts + 1
                     WHERE id IN (SELECT id FROM notices
                                  WHERE state = 'pending' AND next_at_ms <= ?1
                                  ORDER BY next_at_ms, id LIMIT ?3)
                     RETURNING ",
                    notice_columns!()
                ),
                params![now, until, want],
            )
        })
    }
    fn notice_settle(&self, notice: &Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        let n = notice.clone();
        self.writing(move |inner| {
            let changed = inner
                .reader()?
                .prepare_cached(
                    "UPDATE notices SET state = ?2, next_at_ms = ?3, last_error = ?4,
                         delivered_to = ?5, settled_at_ms = ?6
                     WHERE id = ?1 AND state = 'pending'",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        n.id,
                        n.state.name(),
                        sql_int(n.next_at_ms).map_err(to_sql)?,
                        n.last_error,
                        delivered_json(&n),
                        n.settled_at_ms.map(sql_int).transpose().map_err(to_sql)?,
                    ])
                })
                .map_err(io)?;
            Ok(changed > 0)
        })
    }
    fn notice_put(&self, notice: Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.writing(move |inner| insert(&*inner.reader()?, &notice))
    }
    fn notices(&self, query: NoticeQuery) -> BoxFuture<'_, Result<Vec<Notice>, StoreError>> {
        self.reading(move |inner| {
            let conn = inner.reader()?;
            // A store of an older schema opened to read has none.
            if !has_column(&conn, "notices", "id") {
                return Ok(Vec::new());
            }
            let limit = crate::sql_limit(query.limit);
            rows(
                &conn,
                concat!(
                    "SELECT ",
                    notice_columns!(),
                    " FROM notices
                     WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR run_id = ?2)
                     ORDER BY at_ms DESC, id DESC LIMIT ?3"
                ),
                params![
                    query.state.map(NoticeState::name),
                    query.run.map(|r| r.0),
                    limit
                ],
            )
        })
    }
    fn notice_counts(&self) -> BoxFuture<'_, Result<Vec<(NoticeState, u64)>, StoreError>> {
        self.reading(move |inner| {
            let conn = inner.reader()?;
            if !has_column(&conn, "notices", "id") {
                return Ok(Vec::new());
            }
            let mut out = Vec::new();
            for state in NoticeState::ALL {
                let n = conn
                    .prepare_cached("SELECT count(*) FROM notices WHERE state = ?1")
                    .and_then(|mut st| st.query_row([state.name()], |r| column_u64(r, 0)))
                    .map_err(io)?;
                out.push((state, n));
            }
            Ok(out)
        })
    }
    fn notices_purge(&self, before_ms: u64, most: usize) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.writing(move |inner| {
            let n = inner
                .reader()?
                .prepare_cached(
                    "DELETE FROM notices WHERE id IN (SELECT id FROM notices
                         WHERE state != 'pending' AND settled_at_ms < ?1 LIMIT ?2)",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        sql_int(before_ms).map_err(to_sql)?,
                        i64::try_from(most).unwrap_or(i64::MAX)
                    ])
                })
                .map_err(io)?;
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
    }
}

//! The operator's schedules and their ticks, written through the reader connection (a claim
//! is one `INSERT OR IGNORE`: the first process to claim a tick wins).

use rusqlite::params;
use warrant_core::ports::BoxFuture;
use warrant_core::schedule::{Schedule, Tick};
use warrant_core::store::{Schedules, StoreError};

use super::{SqliteStore, column_u64, io, schema::has_column, sql_int};
use crate::{schedule_body, schedule_of, tick_of};

impl Schedules for SqliteStore {
    fn schedule_put(&self, schedule: Schedule) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.writing(move |inner| {
            let conn = inner.reader()?;
            let body = schedule_body(&schedule)?;
            let existed = conn
                .prepare_cached("SELECT count(*) FROM schedules WHERE id = ?1")
                .and_then(|mut st| st.query_row([&schedule.id], |r| column_u64(r, 0)))
                .map_err(io)?
                > 0;
            conn.prepare_cached(
                "INSERT INTO schedules (id, body) VALUES (?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET body = excluded.body",
            )
            .and_then(|mut st| st.execute(params![schedule.id, body]))
            .map_err(io)?;
            Ok(!existed)
        })
    }
    fn schedules(&self) -> BoxFuture<'_, Result<Vec<Schedule>, StoreError>> {
        self.reading(move |inner| {
            let conn = inner.reader()?;
            if !has_column(&conn, "schedules", "body") {
                return Ok(Vec::new());
            }
            let mut st = conn
                .prepare_cached("SELECT body FROM schedules ORDER BY id")
                .map_err(io)?;
            let bodies = st
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(io)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(io)?;
            bodies.iter().map(|b| schedule_of(b)).collect()
        })
    }
    fn schedule_remove(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let id = id.to_owned();
        self.writing(move |inner| {
            let conn = inner.reader()?;
            conn.prepare_cached("DELETE FROM ticks WHERE schedule = ?1")
                .and_then(|mut st| st.execute([&id]))
                .map_err(io)?;
            let n = conn
                .prepare_cached("DELETE FROM schedules WHERE id = ?1")
                .and_then(|mut st| st.execute([&id]))
                .map_err(io)?;
            Ok(n > 0)
        })
    }
    fn tick_claim(&self, tick: Tick) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.writing(move |inner| {
            let at = sql_int(tick.at_ms)?;
            let n = inner
                .reader()?
                .prepare_cached(
                    "INSERT OR IGNORE INTO ticks (schedule, at_ms, run_id, state, note)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        tick.schedule,
                        at,
                        tick.run_id.as_ref().map(|r| r.0.as_str()),
                        tick.state.name(),
                        tick.note
                    ])
                })
                .map_err(io)?;
            Ok(n > 0)
        })
    }
    fn tick_update(&self, tick: &Tick) -> BoxFuture<'_, Result<(), StoreError>> {
        let tick = tick.clone();
        self.writing(move |inner| {
            let at = sql_int(tick.at_ms)?;
            inner
                .reader()?
                .prepare_cached(
                    "UPDATE ticks SET run_id = ?3, state = ?4, note = ?5
                     WHERE schedule = ?1 AND at_ms = ?2",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        tick.schedule,
                        at,
                        tick.run_id.as_ref().map(|r| r.0.as_str()),
                        tick.state.name(),
                        tick.note
                    ])
                })
                .map_err(io)?;
            Ok(())
        })
    }
    fn ticks(
        &self,
        schedule: Option<&str>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Tick>, StoreError>> {
        let schedule = schedule.map(str::to_owned);
        self.reading(move |inner| {
            let conn = inner.reader()?;
            if !has_column(&conn, "ticks", "state") {
                return Ok(Vec::new());
            }
            let limit = crate::sql_limit(limit);
            let mut st = conn
                .prepare_cached(
                    "SELECT schedule, at_ms, run_id, state, note FROM ticks
                     WHERE (?1 IS NULL OR schedule = ?1)
                     ORDER BY at_ms DESC, schedule DESC LIMIT ?2",
                )
                .map_err(io)?;
            let rows = st
                .query_map(params![schedule, limit], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        column_u64(r, 1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                })
                .map_err(io)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(io)?;
            rows.into_iter()
                .map(|(s, at, run, state, note)| tick_of(s, at, run, &state, note))
                .collect()
        })
    }
}

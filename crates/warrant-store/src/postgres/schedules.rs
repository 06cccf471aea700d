//! The operator's schedules and their ticks, shared by the fleet (a claim is one
//! `INSERT ... ON CONFLICT DO NOTHING`: the first process to claim a tick wins).

use warrant_core::ports::BoxFuture;
use warrant_core::schedule::{Schedule, Tick};
use warrant_core::store::{Schedules, StoreError};

use super::{PostgresStore, sql_int, unsigned};
use crate::{schedule_body, schedule_of, tick_of};

impl Schedules for PostgresStore {
    fn schedule_put(&self, schedule: Schedule) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let body = schedule_body(&schedule)?;
            let rows = self
                .inner
                .query(
                    "INSERT INTO warrant_schedules (id, body) VALUES ($1, $2)
                     ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body
                     RETURNING (xmax = 0)",
                    &[&schedule.id, &body],
                )
                .await?;
            Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
        })
    }
    fn schedules(&self) -> BoxFuture<'_, Result<Vec<Schedule>, StoreError>> {
        Box::pin(async move {
            let rows = self
                .inner
                .query("SELECT body FROM warrant_schedules ORDER BY id", &[])
                .await?;
            rows.iter()
                .map(|r| schedule_of(&r.get::<_, String>(0)))
                .collect()
        })
    }
    fn schedule_remove(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            self.inner
                .query("DELETE FROM warrant_ticks WHERE schedule = $1", &[&id])
                .await?;
            let rows = self
                .inner
                .query(
                    "DELETE FROM warrant_schedules WHERE id = $1 RETURNING id",
                    &[&id],
                )
                .await?;
            Ok(!rows.is_empty())
        })
    }
    fn tick_claim(&self, tick: Tick) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "INSERT INTO warrant_ticks (schedule, at_ms, run_id, state, note)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING at_ms",
                    &[
                        &tick.schedule,
                        &sql_int(tick.at_ms)?,
                        &tick.run_id.as_ref().map(|r| r.0.as_str()),
                        &tick.state.name(),
                        &tick.note,
                    ],
                )
                .await?;
            Ok(!rows.is_empty())
        })
    }
    fn tick_update(&self, tick: &Tick) -> BoxFuture<'_, Result<(), StoreError>> {
        let tick = tick.clone();
        Box::pin(async move {
            self.inner
                .query(
                    "UPDATE warrant_ticks SET run_id = $3, state = $4, note = $5
                     WHERE schedule = $1 AND at_ms = $2",
                    &[
                        &tick.schedule,
                        &sql_int(tick.at_ms)?,
                        &tick.run_id.as_ref().map(|r| r.0.as_str()),
                        &tick.state.name(),
                        &tick.note,
                    ],
                )
                .await?;
            Ok(())
        })
    }
    fn ticks(
        &self,
        schedule: Option<&str>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Tick>, StoreError>> {
        let schedule = schedule.map(str::to_owned);
        Box::pin(async move {
            let limit = crate::sql_limit(limit);
            let rows = self
                .inner
                .query(
                    "SELECT schedule, at_ms, run_id, state, note FROM warrant_ticks
                     WHERE ($1::text IS NULL OR schedule = $1)
                     ORDER BY at_ms DESC, schedule DESC LIMIT $2",
                    &[&schedule, &limit],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    tick_of(
                        r.get(0),
                        unsigned(r.get(1))?,
                        r.get(2),
                        &r.get::<_, String>(3),
                        r.get(4),
                    )
                })
                .collect()
        })
    }
}

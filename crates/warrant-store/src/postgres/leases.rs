//! Leases and claims: who drives a run, the runs ready to be taken up (`FOR UPDATE SKIP LOCKED`), and requests to cancel.

use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::store::{
    CancelRequest, Claim, Driver, FairShare, Held, LEASE_TTL_MS, Leases, StoreError,
};

use super::{CANCELS_CHANNEL, POLL_BOUND, PostgresStore, READY_CHANNEL, sql_int, unsigned};

impl Leases for PostgresStore {
    fn request_cancel(
        &self,
        run: &RunId,
        request: CancelRequest,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let run = run.clone();
        Box::pin(async move {
            self.inner
                .query(
                    "WITH c AS (INSERT INTO warrant_cancels (run_id, by, reason) VALUES ($1, $2, $3)
                                ON CONFLICT (run_id) DO NOTHING RETURNING run_id)
                     SELECT pg_notify($4, run_id) FROM c",
                    &[&run.0, &request.by, &request.reason, &CANCELS_CHANNEL],
                )
                .await?;
            self.inner.cancels.send_modify(|n| *n = n.wrapping_add(1));
            Ok(())
        })
    }
    /// A request notified (this process's or another's), or the listener reconnecting; while
    /// it is down, notifications may be lost and the news comes at `POLL_BOUND` anyway.
    fn cancel_news(&self) -> Option<BoxFuture<'_, ()>> {
        let told = crate::news(&self.inner.cancels);
        let trusted = *self.inner.listening.borrow();
        Some(Box::pin(async move {
            if trusted {
                told.await;
            } else {
                let _ = tokio::time::timeout(POLL_BOUND, told).await;
            }
        }))
    }
    fn cancel_request(
        &self,
        run: &RunId,
    ) -> BoxFuture<'_, Result<Option<CancelRequest>, StoreError>> {
        // Answered from memory while no cancellation was notified since (and, should the
        // listening connection be down, for at most `POLL_BOUND`).
        let version = *self.inner.cancels.borrow();
        let trusted = *self.inner.listening.borrow();
        if let Ok(cache) = self.inner.cancel_cache.lock()
            && cache.version == version
            && let Some((answer, at)) = cache.answers.get(run)
            && (trusted || at.elapsed() < POLL_BOUND)
        {
            return Box::pin(std::future::ready(Ok(answer.clone())));
        }
        let run = run.clone();
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "SELECT by, reason FROM warrant_cancels WHERE run_id = $1",
                    &[&run.0],
                )
                .await?;
            let answer = rows.first().map(|r| CancelRequest {
                by: r.get(0),
                reason: r.get(1),
                close: false,
            });
            if let Ok(mut cache) = self.inner.cancel_cache.lock() {
                if cache.version != version || cache.answers.len() >= 100_000 {
                    cache.answers.clear();
                    cache.version = version;
                }
                cache.answers.insert(
                    run,
                    (answer.clone(), warrant_core::metrics::Stopwatch::start()),
                );
            }
            Ok(answer)
        })
    }
    fn claim(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<Claim, StoreError>> {
        let (run, driver) = (run.clone(), driver.clone());
        Box::pin(async move {
            let stale_before = sql_int(driver.now_ms.saturating_sub(LEASE_TTL_MS))?;
            // One statement: the lease is taken only if nobody else was heard from lately (or
            // its holder is gone), and taking it starts a new epoch that fences its previous
            // holder.
            let rows = self
                .inner
                .query(
                    concat!(
                        "WITH t AS (UPDATE warrant_runs SET holder = $2, heartbeat_ms = $3, epoch = epoch + 1, note = NULL, presence = $5
                                    WHERE run_id = $1 AND (holder IS NULL OR holder = $2 OR heartbeat_ms IS NULL OR heartbeat_ms <= $4 OR ",
                        holder_gone!(),
                        ") RETURNING epoch)
                         SELECT (SELECT epoch FROM t), holder, heartbeat_ms FROM warrant_runs WHERE run_id = $1"
                    ),
                    &[
                        &run.0,
                        &&*driver.holder,
                        &sql_int(driver.now_ms)?,
                        &stale_before,
                        &self.inner.present(),
                    ],
                )
                .await?;
            let Some(row) = rows.first() else {
                return Err(StoreError::Io(format!("no run `{run}` in the store")));
            };
            match row.get::<_, Option<i64>>(0) {
                Some(epoch) => Ok(Claim::Taken {
                    epoch: unsigned(epoch)?,
                }),
                None => Ok(Claim::Held(Held {
                    holder: row.get::<_, Option<String>>(1).unwrap_or_default(),
                    heartbeat_ms: row
                        .get::<_, Option<i64>>(2)
                        .map(unsigned)
                        .transpose()?
                        .unwrap_or(0),
                })),
            }
        })
    }
    fn heartbeat(&self, leases: Vec<(RunId, Driver)>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            if leases.is_empty() {
                return Ok(());
            }
            let mut columns = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (run, driver) in leases {
                columns.0.push(run.0);
                columns.1.push(driver.holder.to_string());
                columns.2.push(sql_int(driver.now_ms)?);
                columns.3.push(sql_int(driver.epoch)?);
            }
            // One statement, however many leases.
            self.inner
                .query(
                    "UPDATE warrant_runs AS r SET heartbeat_ms = h.at
                     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS h(run_id, holder, at, epoch)
                     WHERE r.run_id = h.run_id AND r.holder = h.holder AND r.epoch = h.epoch",
                    &[&columns.0, &columns.1, &columns.2, &columns.3],
                )
                .await?;
            Ok(())
        })
    }
    fn release(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<(), StoreError>> {
        let (run, driver) = (run.clone(), driver.clone());
        Box::pin(async move {
            self.inner
                .query(
                    "WITH r AS (UPDATE warrant_runs SET holder = NULL, heartbeat_ms = NULL
                                WHERE run_id = $1 AND holder = $2 RETURNING status)
                     SELECT pg_notify($3, '') FROM r WHERE status IN ('running', 'ready')",
                    &[&run.0, &&*driver.holder, &READY_CHANNEL],
                )
                .await?;
            Ok(())
        })
    }
    fn claim_ready(
        &self,
        driver: &Driver,
        want: usize,
        share: FairShare,
    ) -> BoxFuture<'_, Result<Vec<(RunId, u64)>, StoreError>> {
        let driver = driver.clone();
        Box::pin(async move {
            if want == 0 {
                return Ok(Vec::new());
            }
            let want = i64::try_from(want).unwrap_or(i64::MAX);
            // Looked at beyond what is wanted, so a tenant at its limit does not hide others.
            let scan = want.saturating_mul(8).max(64);
            let stale_before = sql_int(driver.now_ms.saturating_sub(LEASE_TTL_MS))?;
            let runs_limit = sql_int(share.runs_per_tenant)?;
            let approvals_limit = sql_int(share.approvals_per_tenant)?;
            // Candidates are locked with SKIP LOCKED (another claimant's are skipped, not
            // waited for); each tenant's turn counts its runs driven now, so the chosen ones go
            // round-robin between tenants within their limits. Candidates passed over for a
            // limit are told why (`note`).
            // A gateway's session (`RunKind::Session`) is never claimed: its client is gone
            // with the process that held it.
            let session_deciders = format!("{}:%", warrant_core::DeciderKind::Client.name());
            // A run whose holder is gone (`holder_gone!`) is neither driven nor held.
            let rows = self
                .inner
                .query(
                    concat!("WITH driven AS (
                         SELECT tenant, count(*) AS n FROM warrant_runs
                         WHERE holder IS NOT NULL AND heartbeat_ms > $2 AND NOT ", holder_gone!(), " GROUP BY tenant),
                     pending AS (
                         SELECT tenant, count(*) AS n FROM warrant_approvals GROUP BY tenant),
                     cand AS (
                         SELECT run_id, tenant, started_at_ms, recorded, last_seq FROM warrant_runs
                         WHERE position('.' in run_id) = 0
                           AND (status = 'ready' AND decider NOT LIKE $8 OR (status = 'running'
                               AND (holder IS NULL OR heartbeat_ms IS NULL OR heartbeat_ms <= $2 OR ", holder_gone!(), "))
                               OR status = 'sleeping' AND wake_at_ms <= $7
                               AND (holder IS NULL OR heartbeat_ms IS NULL OR heartbeat_ms <= $2 OR ", holder_gone!(), "))
                         ORDER BY started_at_ms, recorded LIMIT $3 FOR UPDATE SKIP LOCKED),
                     ranked AS (
                         SELECT c.run_id, c.tenant, c.started_at_ms, c.recorded, c.last_seq,
                                row_number() OVER (PARTITION BY c.tenant ORDER BY c.started_at_ms, c.recorded) AS turn,
                                coalesce(d.n, 0) AS driven, coalesce(p.n, 0) AS pending
                         FROM cand c LEFT JOIN driven d USING (tenant) LEFT JOIN pending p USING (tenant)),
                     judged AS (
                         SELECT *, CASE
                             WHEN $4::bigint > 0 AND driven + turn > $4::bigint THEN
                                 format('waiting for a worker: tenant `%s` has %s runs driven, its limit', tenant, $4)
                             WHEN $5::bigint > 0 AND last_seq <= 1 AND pending >= $5::bigint THEN
                                 format('waiting for a worker: tenant `%s` has %s approvals pending, its limit', tenant, pending)
                             END AS over
                         FROM ranked),
                     chosen AS (
                         SELECT run_id FROM judged WHERE over IS NULL
                         ORDER BY turn, started_at_ms, recorded LIMIT $6),
                     passed AS (
                         UPDATE warrant_runs w SET note = j.over FROM judged j
                         WHERE w.run_id = j.run_id AND j.over IS NOT NULL
                           AND w.note IS DISTINCT FROM j.over
                         RETURNING 1)
                     UPDATE warrant_runs w SET holder = $1, heartbeat_ms = $7, epoch = w.epoch + 1, note = NULL, presence = $9
                     FROM chosen c WHERE w.run_id = c.run_id
                     RETURNING w.run_id, w.epoch"),
                    &[
                        &&*driver.holder,
                        &stale_before,
                        &scan,
                        &runs_limit,
                        &approvals_limit,
                        &want,
                        &sql_int(driver.now_ms)?,
                        &session_deciders,
                        &self.inner.present(),
                    ],
                )
                .await?;
            rows.iter()
                .map(|r| Ok((RunId(r.get(0)), unsigned(r.get(1))?)))
                .collect()
        })
    }
    fn work_ready(&self) -> BoxFuture<'_, ()> {
        let mut ready = self.inner.ready.subscribe();
        Box::pin(async move {
            let _ = ready.changed().await;
        })
    }
}

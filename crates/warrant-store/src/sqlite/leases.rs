//! Leases and claims: who drives a run, taken and renewed through the writer, requests to
//! cancel, and word of another process's commit (`work_ready`).

use std::collections::HashMap;

use rusqlite::params;
use tokio::sync::oneshot;
use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::store::{CancelRequest, Claim, Driver, Leases, StoreError};

use super::{CANCEL_POLL_MS, Inner, Job, SqliteStore, io, sql_int};

impl Leases for SqliteStore {
    fn request_cancel(
        &self,
        run: &RunId,
        request: CancelRequest,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let run = run.clone();
        self.writing(move |inner| {
            inner
                .reader()?
                .execute(
                    "INSERT OR IGNORE INTO cancels (run_id, by, reason) VALUES (?1, ?2, ?3)",
                    params![run.0, request.by, request.reason],
                )
                .map_err(io)?;
            if let Ok(mut snap) = inner.cancels.lock() {
                snap.read_at = None;
            }
            inner.cancel_asked.send_modify(|n| *n = n.wrapping_add(1));
            Ok(())
        })
    }
    /// This process's requests, and any other connection's commit (which may be one): the
    /// snapshot of requests read before that commit was seen is then stale.
    fn cancel_news(&self) -> Option<BoxFuture<'_, ()>> {
        // Without the writer, another process's commit is not seen.
        let taps = self.taps.as_ref()?;
        let own = crate::news(&self.inner.cancel_asked);
        let foreign = crate::news(&taps.foreign);
        Some(Box::pin(async move {
            tokio::select! {
                () = own => {}
                () = foreign => {
                    #[expect(
                        clippy::disallowed_methods,
                        reason = "dates a snapshot's staleness; never recorded"
                    )]
                    let seen = std::time::Instant::now();
                    if let Ok(mut snap) = self.inner.cancels.lock() {
                        snap.stale_before = Some(snap.stale_before.map_or(seen, |s| s.max(seen)));
                    }
                }
            }
        }))
    }
    fn cancel_request(
        &self,
        run: &RunId,
    ) -> BoxFuture<'_, Result<Option<CancelRequest>, StoreError>> {
        // Answered from memory while the snapshot is fresh: a thousand runs checking cost one
        // query per interval.
        #[expect(
            clippy::disallowed_methods,
            reason = "rate-limits a poll; never recorded"
        )]
        let now = std::time::Instant::now();
        let fresh_since = now
            .checked_sub(std::time::Duration::from_millis(CANCEL_POLL_MS))
            .unwrap_or(now);
        if let Some(answer) = self.inner.cancel_answer(fresh_since, run) {
            return Box::pin(std::future::ready(Ok(answer)));
        }
        let run = run.clone();
        let looked = run.clone();
        // A table read begun after this question was asked answers it (a thousand runs finding
        // the snapshot stale at once cost one or two queries, not one each).
        let answered = move |inner: &Inner| inner.cancel_answer(now, &looked);
        self.reading_unless(answered, move |inner| {
            #[expect(
                clippy::disallowed_methods,
                reason = "rate-limits a poll; never recorded"
            )]
            let began = std::time::Instant::now();
            let requests = {
                let conn = inner.reader()?;
                let mut stmt = conn
                    .prepare_cached("SELECT run_id, by, reason FROM cancels")
                    .map_err(io)?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((
                            RunId(r.get(0)?),
                            CancelRequest {
                                by: r.get(1)?,
                                reason: r.get(2)?,
                                close: false,
                            },
                        ))
                    })
                    .map_err(io)?;
                rows.collect::<Result<HashMap<_, _>, _>>().map_err(io)?
            };
            let found = requests.get(&run).cloned();
            if let Ok(mut snap) = inner.cancels.lock() {
                snap.requests = requests;
                snap.read_at = Some(began);
                snap.reads += 1;
            }
            Ok(found)
        })
    }
    fn claim(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<Claim, StoreError>> {
        if let Err(e) = self.inner.writable() {
            return Box::pin(std::future::ready(Err(e)));
        }
        let (reply, answer) = oneshot::channel();
        let job = Job::Claim {
            run: run.clone(),
            driver: driver.clone(),
            reply,
        };
        self.outbox.reply(self.send(job), answer)
    }
    fn heartbeat(&self, leases: Vec<(RunId, Driver)>) -> BoxFuture<'_, Result<(), StoreError>> {
        self.writing(move |inner| {
            let conn = inner.reader()?;
            // One transaction: one commit (and fsync) however many leases.
            let tx = conn.unchecked_transaction().map_err(io)?;
            {
                let mut renew = tx
                    .prepare_cached(
                        "UPDATE runs SET heartbeat_ms = ?3 WHERE run_id = ?1 AND holder = ?2 AND epoch = ?4",
                    )
                    .map_err(io)?;
                for (run, driver) in &leases {
                    renew
                        .execute(params![
                            run.0,
                            &*driver.holder,
                            sql_int(driver.now_ms)?,
                            sql_int(driver.epoch)?
                        ])
                        .map_err(io)?;
                }
            }
            tx.commit().map_err(io)
        })
    }
    fn release(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<(), StoreError>> {
        let (run, driver) = (run.clone(), driver.clone());
        self.writing(move |inner| {
            inner
                .reader()?
                .execute(
                    "UPDATE runs SET holder = NULL, heartbeat_ms = NULL WHERE run_id = ?1 AND holder = ?2",
                    params![run.0, &*driver.holder],
                )
                .map_err(io)?;
            Ok(())
        })
    }
    /// Another process committed to the file (an answer `warrant approve` recorded, a run
    /// it gave back): the writer looks at the file's `data_version` while this is awaited.
    /// A read-only store has no writer to look, and never resolves it.
    fn work_ready(&self) -> BoxFuture<'_, ()> {
        let Some(taps) = self.taps.as_ref() else {
            return Box::pin(std::future::pending());
        };
        let mut foreign = taps.foreign.subscribe();
        Box::pin(async move {
            if foreign.changed().await.is_err() {
                // The writer is gone: nothing will be seen again.
                std::future::pending::<()>().await;
            }
        })
    }
}

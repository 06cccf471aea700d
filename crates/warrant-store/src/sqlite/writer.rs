//! The writer thread: every pending append of every run committed in one transaction (group commit), leases taken inside it, and the checkpointer beside it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, mpsc};
use std::thread;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;
use warrant_core::event;
use warrant_core::ids::RunId;
use warrant_core::status::RunStatus;
use warrant_core::store::{CancelRequest, Claim, Driver, Held, LEASE_TTL_MS, StoreError};

use super::{
    Durability, FOLLOW_POLL_MS, FailedCopies, GROUP_COMMIT_MAX, HEARTBEAT_EVERY_MS, Job, Reply,
    Request, Taps, column_u64, column_u64_opt, insert_pending, io, open_connection, sql_int,
};
use crate::ApprovalChange;

/// How often the cancellation table is re-read: checks in between are answered from memory,
/// so a thousand runs checking cost one query per interval.
pub(super) const CANCEL_POLL_MS: u64 = 100;

#[derive(Default)]
pub(super) struct CancelSnapshot {
    pub(super) read_at: Option<std::time::Instant>,
    /// A read begun before this is stale: another connection committed since (perhaps a
    /// request to cancel).
    pub(super) stale_before: Option<std::time::Instant>,
    pub(super) requests: HashMap<RunId, CancelRequest>,
    /// How many times the table was read.
    pub(super) reads: u64,
}

/// What the writer remembers of the runs it committed to, valid while no other connection
/// wrote to the file.
#[derive(Default)]
pub(super) struct Sequences {
    pub(super) runs: HashMap<RunId, Known>,
    /// The position the next event takes.
    pub(super) next_position: Option<u64>,
    /// SQLite's `data_version` when they were last known to be the file's.
    pub(super) data_version: Option<i64>,
}

/// What the writer remembers of one run.
#[derive(Clone)]
pub(super) struct Known {
    /// Its last sequence.
    pub(super) seq: u64,
    /// The position of its last row (none before its first).
    pub(super) position: Option<u64>,
    /// Its lease's epoch.
    pub(super) epoch: u64,
    /// The heartbeat this writer last wrote for its driver: who, and when.
    pub(super) beat: Option<(Arc<str>, u64)>,
}

/// Whether an append by `driver` writes the run's heartbeat, `beat` the one last written: at
/// most every [`HEARTBEAT_EVERY_MS`] of the driver's clock, not with every append.
pub(super) fn beat_due(beat: Option<&(Arc<str>, u64)>, driver: &Driver) -> bool {
    beat.is_none_or(|(holder, at)| {
        *holder != driver.holder || driver.now_ms < *at || driver.now_ms - *at >= HEARTBEAT_EVERY_MS
    })
}

impl Sequences {
    /// Takes `version`, the writer connection's `data_version` now (it moves only for other
    /// connections' commits): what was remembered is forgotten if it moved. Whether it moved
    /// since a version was last taken (another connection committed).
    fn saw(&mut self, version: i64) -> bool {
        let before = self.data_version.replace(version);
        if before != Some(version) {
            self.runs.clear();
            self.next_position = None;
        }
        before.is_some_and(|b| b != version)
    }
}

/// Copies the WAL back into the file on a thread and connection of its own, rung by the
/// writer's commits once the WAL holds `due` pages (the writer's own automatic checkpoint is
/// replaced). A passive checkpoint waits for no one: the writer goes on committing to the WAL
/// while it copies, and once it has copied everything the writer's next commit starts the WAL
/// again from its beginning. Past `stall` pages (the writer outran it) the writer waits for a
/// copy to finish, as it would for SQLite's own checkpoint: the WAL stays bounded whatever the
/// rate of commits. Neither ever waits for a reader: a WAL a reader still reads is not started
/// again until it is done, as with SQLite's own. A checkpoint that fails leaves every commit in
/// the WAL, where it was already durable; the next one tries again, and the failure is counted
/// in `failures` (`StoreHealth::checkpoint_failures`, for `/metrics`): a WAL never copied back
/// grows. The thread ends when the writer's connection (which holds its bell) closes.
pub(super) fn start_checkpointer(
    path: &Path,
    durability: Durability,
    writer: &mut Connection,
    (due, stall): (i64, i64),
    failures: Arc<FailedCopies>,
) -> Result<(), StoreError> {
    use rusqlite::hooks::Wal;
    use rusqlite::wal::CheckpointMode;
    let conn = open_connection(path, durability)?;
    // Each ring asks for a copy; a stalled writer's carries where to say it is done.
    let (bell, rung) = mpsc::sync_channel::<Option<mpsc::SyncSender<()>>>(1);
    let copier = failures.clone();
    thread::Builder::new()
        .name("warrant-store-checkpointer".into())
        .spawn(move || {
            while let Ok(waiting) = rung.recv() {
                count_failed_copy(
                    conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE),
                    &copier,
                );
                if let Some(done) = waiting {
                    let _ = done.send(());
                }
            }
        })
        .map_err(|e| StoreError::Io(format!("cannot start the store checkpointer: {e}")))?;
    writer
        .wal_hook(Some(move |wal: &mut Wal, pages: std::ffi::c_int| {
            let pages = i64::from(pages);
            if pages >= stall {
                let (done, copied) = mpsc::sync_channel(1);
                // After the copy under way, if any; if the checkpointer is gone, by itself.
                if bell.send(Some(done)).is_ok() {
                    let _ = copied.recv();
                } else {
                    count_failed_copy(wal.checkpoint_v2(CheckpointMode::PASSIVE), &failures);
                }
            } else if pages >= due {
                // A ring already waiting covers this one.
                let _ = bell.try_send(None);
            }
            Ok(())
        }))
        .map_err(io)
}

/// Counts a copy of the WAL back into the file that failed, and keeps its error. One that
/// found another copy under way (SQLite's `BUSY`: another connection's checkpoint) did not
/// fail: that one copies.
pub(super) fn count_failed_copy<T>(copy: rusqlite::Result<T>, failures: &FailedCopies) {
    match copy {
        Ok(_) => {}
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {}
        Err(e) => failures.record(e.to_string()),
    }
}

/// The writer: takes every request waiting, commits them in one transaction, answers each, and
/// hands the committed events to this store's followers. While idle and followed, it looks
/// every `FOLLOW_POLL_MS` whether another connection committed. If the thread ends, pending and
/// later appends fail with an error (their reply channel closes): no append is lost silently.
pub(super) fn writer_loop(
    mut conn: Connection,
    rx: mpsc::Receiver<Job>,
    taps: &Taps,
    outbox: &crate::Outbox<Reply>,
) {
    let mut known = Sequences::default();
    let idle = std::time::Duration::from_millis(FOLLOW_POLL_MS);
    loop {
        let first = match rx.recv_timeout(idle) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if taps.foreign.receiver_count() > 0 && saw_foreign_commit(&conn, &mut known) {
                    taps.foreign_commit();
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut jobs = Vec::with_capacity(GROUP_COMMIT_MAX.min(64));
        jobs.push(first);
        while jobs.len() < GROUP_COMMIT_MAX {
            match rx.try_recv() {
                Ok(r) => jobs.push(r),
                Err(_) => break,
            }
        }
        let (mut batch, mut claims) = (Vec::with_capacity(jobs.len()), Vec::new());
        for job in jobs {
            match job {
                Job::Append(req) => batch.push(req),
                Job::Claim { run, driver, reply } => claims.push((run, driver, reply)),
            }
        }
        let began = warrant_core::metrics::Stopwatch::start();
        let committed = commit_batch(&mut conn, &mut known, &batch, &claims);
        taps.commits.record(began.elapsed());
        match committed {
            Ok((per_request, claimed, foreign)) => {
                if foreign {
                    taps.foreign_commit();
                }
                taps.hand_over(&batch, &per_request);
                let appended = batch
                    .into_iter()
                    .zip(per_request)
                    .map(|(req, result)| Reply::Append(req, result.map(|_| ())));
                let claimed = claims
                    .into_iter()
                    .zip(claimed)
                    .map(|((_, _, reply), result)| Reply::Claim(reply, result));
                outbox.post(appended.chain(claimed));
            }
            Err(e) => {
                known = Sequences::default();
                let appended = batch
                    .into_iter()
                    .map(|req| Reply::Append(req, Err(e.clone())));
                let claimed = claims
                    .into_iter()
                    .map(|(_, _, reply)| Reply::Claim(reply, Err(e.clone())));
                outbox.post(appended.chain(claimed));
            }
        }
    }
}

/// The file's `data_version`: it changes when another connection commits.
pub(super) fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    conn.prepare_cached("PRAGMA data_version")
        .map_err(io)?
        .query_row([], |r| r.get(0))
        .map_err(io)
}

/// Whether another connection committed since the writer last looked.
pub(super) fn saw_foreign_commit(conn: &Connection, known: &mut Sequences) -> bool {
    data_version(conn).is_ok_and(|version| known.saw(version))
}

/// What a group commit did: for each request, the positions of its events or why it was
/// refused; each claim's answer; and whether another connection had committed since the
/// writer last looked.
pub(super) type Committed = (
    Vec<Result<Vec<u64>, StoreError>>,
    Vec<Result<Claim, StoreError>>,
    bool,
);

/// A claim asked of the writer: the run, its would-be driver, where the answer goes.
pub(super) type ClaimJob = (RunId, Driver, oneshot::Sender<Result<Claim, StoreError>>);

pub(super) fn commit_batch(
    conn: &mut Connection,
    known: &mut Sequences,
    batch: &[Request],
    claims: &[ClaimJob],
) -> Result<Committed, StoreError> {
    let tx = Immediate::begin(conn)?;
    // INVARIANT (one order): the expected sequence (and the lease's epoch) is checked against
    // the file. Under the write lock, `data_version` tells whether another connection (another
    // process, or this store's reader) committed since the writer last looked; if one did,
    // what it remembers may be stale.
    let foreign = known.saw(data_version(&tx)?);
    let mut results = Vec::with_capacity(batch.len());
    // Every event is encoded into this one buffer, bound, and written.
    let mut body = Vec::with_capacity(1024);
    {
        // One row per append: its events, one JSON text a line (JSON text holds no raw line
        // break), at consecutive positions from the row's.
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (position, run_id, seq, n_events, body, prev) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(io)?;
        let mut next_position = match known.next_position {
            Some(p) => p,
            None => tx
                .query_row(
                    "SELECT position + n_events FROM events ORDER BY position DESC LIMIT 1",
                    [],
                    |r| column_u64(r, 0),
                )
                .optional()
                .map_err(io)?
                .unwrap_or(1),
        };
        let mut current = tx
            .prepare_cached(
                "SELECT last_seq, epoch, holder, last_position FROM runs WHERE run_id = ?1",
            )
            .map_err(io)?;
        let mut new_run = tx
            .prepare_cached(
                "INSERT INTO runs (run_id, spec_id, decider, status, started_at_ms, last_seq, epoch) VALUES (?1, ?2, ?3, 'running', ?4, 0, ?5)",
            )
            .map_err(io)?;
        let mut advance = tx
            .prepare_cached("UPDATE runs SET last_seq = ?2, last_position = ?3 WHERE run_id = ?1")
            .map_err(io)?;
        let mut set_status = tx
            .prepare_cached("UPDATE runs SET status = ?2, wake_at_ms = ?3 WHERE run_id = ?1")
            .map_err(io)?;
        // The driver's lease is renewed by every append it makes while the run runs, and ends
        // with the append that makes it wait or end.
        let mut advance_leased = tx
            .prepare_cached(
                "UPDATE runs SET last_seq = ?2, last_position = ?5,
                     holder = CASE WHEN status = 'running' THEN ?3 ELSE NULL END,
                     heartbeat_ms = CASE WHEN status = 'running' THEN ?4 ELSE NULL END
                 WHERE run_id = ?1",
            )
            .map_err(io)?;
        let mut unlease = tx
            .prepare_cached(
                "UPDATE runs SET holder = NULL, heartbeat_ms = NULL WHERE run_id = ?1 AND status != 'running'",
            )
            .map_err(io)?;
        for req in batch {
            let remembered = known.runs.get(&req.run).cloned();
            let (actual, epoch, holder, last_position) = match &remembered {
                Some(k) => (k.seq, k.epoch, None, k.position),
                None => current
                    .query_row([&req.run.0], |r| {
                        Ok((
                            column_u64(r, 0)?,
                            column_u64(r, 1)?,
                            r.get::<_, Option<String>>(2)?,
                            column_u64_opt(r, 3)?,
                        ))
                    })
                    .optional()
                    .map_err(io)?
                    .unwrap_or((0, 0, None, None)),
            };
            // INVARIANT (fencing): a driver whose lease was taken over appends nothing (told so
            // before any conflict of sequence).
            if let Some(d) = &req.driver
                && actual > 0
                && d.epoch != epoch
            {
                results.push(Err(StoreError::Fenced {
                    run: req.run.clone(),
                    holder: holder.unwrap_or_default(),
                    epoch,
                }));
                continue;
            }
            if actual != req.expected {
                known.runs.insert(
                    req.run.clone(),
                    Known {
                        seq: actual,
                        position: last_position,
                        epoch,
                        beat: None,
                    },
                );
                results.push(Err(StoreError::Conflict {
                    run: req.run.clone(),
                    expected: req.expected,
                    actual,
                }));
                continue;
            }
            let mut epoch = epoch;
            if actual == 0 {
                let Some(started) = &req.started else {
                    results.push(Err(StoreError::Io(format!(
                        "run `{}` must begin with `run_started`",
                        req.run
                    ))));
                    continue;
                };
                epoch = req.driver.as_ref().map_or(1, |d| d.epoch.max(1));
                new_run
                    .execute(params![
                        req.run.0,
                        started.spec_id,
                        started.decider,
                        sql_int(started.at_ms)?,
                        sql_int(epoch)?
                    ])
                    .map_err(io)?;
            }
            let n = req.events.len() as u64;
            let positions: Vec<u64> = (next_position..next_position + n).collect();
            body.clear();
            for e in &req.events {
                if !body.is_empty() {
                    body.push(b'\n');
                }
                event::encode_append(e, &mut body);
                warrant_fault::hit(warrant_fault::FaultPoint::MidAppend);
            }
            let mut last_position = last_position;
            if n > 0 {
                let text = std::str::from_utf8(&body).map_err(io)?;
                let prev = last_position.map(sql_int).transpose()?;
                insert
                    .execute(params![
                        sql_int(next_position)?,
                        req.run.0,
                        sql_int(req.expected + 1)?,
                        sql_int(n)?,
                        text,
                        prev
                    ])
                    .map_err(io)?;
                last_position = Some(next_position);
                next_position += n;
            }
            let new_last = req.expected + n;
            let position = last_position.map(sql_int).transpose()?;
            if let Some(status) = req.status {
                set_status
                    .execute(params![
                        req.run.0,
                        status.name(),
                        req.wake_at_ms.map(sql_int).transpose()?
                    ])
                    .map_err(io)?;
                // A child answered makes its root ready: the root's driver carries the tree.
                if let Some((root, _)) = req.run.0.split_once('.')
                    && status == RunStatus::Ready
                {
                    tx.prepare_cached(
                        "UPDATE runs SET status = 'ready', holder = NULL, heartbeat_ms = NULL
                         WHERE run_id = ?1 AND status = 'waiting'",
                    )
                    .map_err(io)?
                    .execute(params![root])
                    .map_err(io)?;
                }
            }
            // The run's row advances with its log (one statement, the lease's heartbeat with
            // it when due).
            let mut beat = remembered.and_then(|k| k.beat);
            match &req.driver {
                Some(d) if req.status.is_some() || beat_due(beat.as_ref(), d) => {
                    advance_leased
                        .execute(params![
                            req.run.0,
                            sql_int(new_last)?,
                            &*d.holder,
                            sql_int(d.now_ms)?,
                            position
                        ])
                        .map_err(io)?;
                    // Ending the run or making it wait gave the lease back.
                    beat = match req.status {
                        None | Some(RunStatus::Running) => Some((d.holder.clone(), d.now_ms)),
                        Some(_) => None,
                    };
                }
                None if req.status.is_some() => {
                    advance
                        .execute(params![req.run.0, sql_int(new_last)?, position])
                        .map_err(io)?;
                    unlease.execute(params![req.run.0]).map_err(io)?;
                    beat = None;
                }
                _ if n > 0 => {
                    advance
                        .execute(params![req.run.0, sql_int(new_last)?, position])
                        .map_err(io)?;
                }
                _ => {}
            }
            let (approvals, notices) = match req.indexed.as_deref() {
                Some(i) => (i.approvals.as_slice(), i.notices.as_slice()),
                None => (&[][..], &[][..]),
            };
            for change in approvals {
                match change {
                    ApprovalChange::Asked(p) => insert_pending(&tx, p)?,
                    ApprovalChange::Settled(request) => {
                        tx.prepare_cached("DELETE FROM approvals WHERE request = ?1")
                            .map_err(io)?
                            .execute([request])
                            .map_err(io)?;
                    }
                    ApprovalChange::Ended => {
                        tx.prepare_cached("DELETE FROM approvals WHERE run_id = ?1")
                            .map_err(io)?
                            .execute([&req.run.0])
                            .map_err(io)?;
                    }
                }
            }
            for n in notices {
                super::notices::insert(&tx, n)?;
            }
            let now_known = Known {
                seq: new_last,
                position: last_position,
                epoch,
                beat,
            };
            // Updated in place: a run the writer knows costs no copy of its id per append.
            match known.runs.get_mut(&req.run) {
                Some(k) => *k = now_known,
                None => {
                    known.runs.insert(req.run.clone(), now_known);
                }
            }
            results.push(Ok(positions));
        }
        known.next_position = Some(next_position);
    }
    let mut claimed = Vec::with_capacity(claims.len());
    for (run, driver, _) in claims {
        claimed.push(take_lease(&tx, run, driver));
        // A claim starts a new epoch: what the writer remembered of the run is stale.
        known.runs.remove(run);
    }
    tx.commit().map_err(io)?;
    Ok((results, claimed, foreign))
}

/// A write transaction begun and committed by cached statements (rusqlite's `Transaction`
/// parses `BEGIN` and `COMMIT` again each time, at every group commit); rolled back if it is
/// dropped still open.
pub(super) struct Immediate<'c>(&'c Connection);

impl<'c> Immediate<'c> {
    fn begin(conn: &'c Connection) -> Result<Immediate<'c>, StoreError> {
        conn.prepare_cached("BEGIN IMMEDIATE")
            .map_err(io)?
            .execute([])
            .map_err(io)?;
        Ok(Immediate(conn))
    }

    fn commit(self) -> Result<(), StoreError> {
        self.0
            .prepare_cached("COMMIT")
            .map_err(io)?
            .execute([])
            .map_err(io)?;
        Ok(())
    }
}

impl std::ops::Deref for Immediate<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.0
    }
}

impl Drop for Immediate<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// Takes `run`'s lease for `driver` if nobody else was heard from lately; taking it starts a
/// new epoch that fences its previous holder.
pub(super) fn take_lease(
    conn: &Connection,
    run: &RunId,
    driver: &Driver,
) -> Result<Claim, StoreError> {
    let stale_before = sql_int(driver.now_ms.saturating_sub(LEASE_TTL_MS))?;
    let now_ms = sql_int(driver.now_ms)?;
    let taken = conn
        .prepare_cached(
            "UPDATE runs SET holder = ?2, heartbeat_ms = ?3, epoch = epoch + 1 WHERE run_id = ?1
             AND (holder IS NULL OR holder = ?2 OR heartbeat_ms IS NULL OR heartbeat_ms <= ?4)",
        )
        .map_err(io)?
        .execute(params![run.0, &*driver.holder, now_ms, stale_before])
        .map_err(io)?;
    let row: Option<(Option<String>, Option<u64>, u64)> = conn
        .prepare_cached("SELECT holder, heartbeat_ms, epoch FROM runs WHERE run_id = ?1")
        .map_err(io)?
        .query_row([&run.0], |r| {
            Ok((r.get(0)?, column_u64_opt(r, 1)?, column_u64(r, 2)?))
        })
        .optional()
        .map_err(io)?;
    match (row, taken) {
        (None, _) => Err(StoreError::Io(format!("no run `{run}` in the store"))),
        (Some((_, _, epoch)), 1) => Ok(Claim::Taken { epoch }),
        (Some((holder, at, _)), _) => Ok(Claim::Held(Held {
            holder: holder.unwrap_or_default(),
            heartbeat_ms: at.unwrap_or(0),
        })),
    }
}

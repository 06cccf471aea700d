//! The SQLite store: one file in WAL mode. Appends go to one writer thread that commits every
//! pending batch in one transaction (group commit): concurrent runs share one fsync, and each
//! appender waits for the commit that holds its own batch.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;
use warrant_core::event::{self, Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::ports::{BoxFuture, CancelRequest, EventStore, RunSummary, StoreError};

/// The SQLite library version linked in.
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}

/// Most append requests folded into one transaction.
pub const GROUP_COMMIT_MAX: usize = 2048;

const SCHEMA_VERSION: i64 = 1;

/// What a commit survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every commit is fsynced (`synchronous=FULL`): survives power loss.
    Fsync,
    /// Commits reach the OS but are not fsynced (`synchronous=NORMAL`): survives a process
    /// crash, not a power loss.
    ProcessCrash,
}

struct Request {
    run: RunId,
    expected: u64,
    rows: Vec<(u64, String)>,
    started: Option<(String, String, u64)>,
    status: Option<String>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// The SQLite store.
pub struct SqliteStore {
    cancels: Mutex<CancelSnapshot>,
    path: PathBuf,
    writer: Mutex<Option<mpsc::Sender<Request>>>,
    reader: Mutex<Connection>,
    durability: Durability,
}

fn io(e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(e.to_string())
}

fn open_connection(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)
        .map_err(|e| StoreError::Io(format!("cannot open `{}`: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(io)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(io)?;
    let sync = match durability {
        Durability::Fsync => "FULL",
        Durability::ProcessCrash => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync).map_err(io)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Io(format!("cannot create `{}`: {e}", dir.display())))?;
        }
        let conn = open_connection(path, durability)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS runs (
                 run_id TEXT PRIMARY KEY, spec_id TEXT NOT NULL, decider TEXT NOT NULL,
                 status TEXT NOT NULL, started_at_ms INTEGER NOT NULL, last_seq INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS cancels (
                 run_id TEXT PRIMARY KEY, by TEXT NOT NULL, reason TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS events (
                 position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
                 body TEXT NOT NULL, UNIQUE (run_id, seq));",
        )
        .map_err(io)?;
        let version: Option<String> = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(io)?;
        match version.as_deref() {
            None => {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )
                .map_err(io)?;
            }
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) => {
                return Err(StoreError::Io(format!(
                    "`{}` has store schema {v}; this build reads schema {SCHEMA_VERSION}",
                    path.display()
                )));
            }
        }
        let writer_conn = open_connection(path, durability)?;
        let (tx, rx) = mpsc::channel::<Request>();
        thread::Builder::new()
            .name("warrant-store-writer".into())
            .spawn(move || writer_loop(writer_conn, rx))
            .map_err(|e| StoreError::Io(format!("cannot start the store writer: {e}")))?;
        Ok(SqliteStore {
            cancels: Mutex::new(CancelSnapshot::default()),
            path: path.to_owned(),
            writer: Mutex::new(Some(tx)),
            reader: Mutex::new(conn),
            durability,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What a commit survives.
    pub fn durability(&self) -> Durability {
        self.durability
    }
}

/// How often the cancellation table is re-read: checks in between are answered from memory,
/// so a thousand runs checking cost one query per interval.
const CANCEL_POLL_MS: u128 = 100;

#[derive(Default)]
struct CancelSnapshot {
    read_at: Option<std::time::Instant>,
    requests: HashMap<RunId, CancelRequest>,
}

/// The writer: takes every request waiting, commits them in one transaction, answers each.
/// If the thread ends, pending and later appends fail with an error (their reply channel
/// closes): no append is lost silently.
fn writer_loop(mut conn: Connection, rx: mpsc::Receiver<Request>) {
    let mut last_seq: HashMap<RunId, u64> = HashMap::new();
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < GROUP_COMMIT_MAX {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let results = commit_batch(&mut conn, &mut last_seq, &batch);
        match results {
            Ok(per_request) => {
                for (req, result) in batch.into_iter().zip(per_request) {
                    let _ = req.reply.send(result);
                }
            }
            Err(e) => {
                last_seq.clear();
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

fn commit_batch(
    conn: &mut Connection,
    last_seq: &mut HashMap<RunId, u64>,
    batch: &[Request],
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(io)?;
    let mut results = Vec::with_capacity(batch.len());
    {
        let mut insert = tx
            .prepare_cached("INSERT INTO events (run_id, seq, body) VALUES (?1, ?2, ?3)")
            .map_err(io)?;
        let mut current = tx
            .prepare_cached("SELECT last_seq FROM runs WHERE run_id = ?1")
            .map_err(io)?;
        let mut new_run = tx
            .prepare_cached(
                "INSERT INTO runs (run_id, spec_id, decider, status, started_at_ms, last_seq) VALUES (?1, ?2, ?3, 'running', ?4, 0)",
            )
            .map_err(io)?;
        let mut advance = tx
            .prepare_cached("UPDATE runs SET last_seq = ?2 WHERE run_id = ?1")
            .map_err(io)?;
        let mut finish = tx
            .prepare_cached("UPDATE runs SET status = ?2 WHERE run_id = ?1")
            .map_err(io)?;
        for req in batch {
            let actual = match last_seq.get(&req.run) {
                Some(s) => *s,
                None => current
                    .query_row([&req.run.0], |r| r.get::<_, i64>(0))
                    .optional()
                    .map_err(io)?
                    .map_or(0, |s| s as u64),
            };
            // INVARIANT (one order): optimistic concurrency on the expected sequence.
            if actual != req.expected {
                last_seq.insert(req.run.clone(), actual);
                results.push(Err(StoreError::Conflict {
                    run: req.run.clone(),
                    expected: req.expected,
                    actual,
                }));
                continue;
            }
            if actual == 0 {
                let Some((spec_id, decider, started)) = &req.started else {
                    results.push(Err(StoreError::Io(format!(
                        "run `{}` must begin with `run_started`",
                        req.run
                    ))));
                    continue;
                };
                new_run
                    .execute(params![req.run.0, spec_id, decider, *started as i64])
                    .map_err(io)?;
            }
            for (seq, body) in &req.rows {
                insert
                    .execute(params![req.run.0, *seq as i64, body])
                    .map_err(io)?;
                warrant_fault::hit("mid-append");
            }
            let new_last = req.expected + req.rows.len() as u64;
            advance
                .execute(params![req.run.0, new_last as i64])
                .map_err(io)?;
            if let Some(status) = &req.status {
                finish.execute(params![req.run.0, status]).map_err(io)?;
            }
            last_seq.insert(req.run.clone(), new_last);
            results.push(Ok(()));
        }
    }
    tx.commit().map_err(io)?;
    Ok(results)
}

impl EventStore for SqliteStore {
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        if let Err(e) = crate::check_contiguous(&events, expected_seq) {
            return Box::pin(std::future::ready(Err(StoreError::Io(e))));
        }
        let facts = crate::run_facts(&events);
        let rows = events.iter().map(|e| (e.seq, event::encode(e))).collect();
        let (reply, done) = oneshot::channel();
        let request = Request {
            run: run.clone(),
            expected: expected_seq,
            rows,
            started: facts.started,
            status: facts.status,
            reply,
        };
        let sent = match self.writer.lock() {
            Ok(guard) => guard
                .as_ref()
                .map(|w| w.send(request).is_ok())
                .unwrap_or(false),
            Err(_) => false,
        };
        Box::pin(async move {
            if !sent {
                return Err(StoreError::Io("the store writer has stopped".into()));
            }
            done.await.unwrap_or_else(|_| {
                Err(StoreError::Io(
                    "the store writer stopped before committing".into(),
                ))
            })
        })
    }

    fn read(&self, run: &RunId, from_seq: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let conn = self
            .reader
            .lock()
            .map_err(|_| StoreError::Io("store reader poisoned".into()))?;
        let mut stmt = conn
            .prepare_cached("SELECT position, seq, body FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq")
            .map_err(io)?;
        let rows = stmt
            .query_map(params![run.0, from_seq as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(io)?;
        let mut out = Vec::new();
        for row in rows {
            let (position, seq, body) = row.map_err(io)?;
            let event: Event = serde_json::from_str(&body).map_err(|e| {
                StoreError::Io(format!("run `{run}` event {seq} does not decode: {e}"))
            })?;
            out.push(StoredEvent {
                position: position as u64,
                run_id: run.clone(),
                event: Arc::new(event),
            });
        }
        Ok(out)
    }

    fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let conn = self
            .reader
            .lock()
            .map_err(|_| StoreError::Io("store reader poisoned".into()))?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT run_id, spec_id, decider, status, started_at_ms, last_seq FROM runs ORDER BY started_at_ms DESC, rowid DESC",
            )
            .map_err(io)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    run_id: RunId(r.get(0)?),
                    spec_id: r.get(1)?,
                    decider: r.get(2)?,
                    status: r.get(3)?,
                    started_at_ms: r.get::<_, i64>(4)? as u64,
                    events: r.get::<_, i64>(5)? as u64,
                })
            })
            .map_err(io)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(io)
    }

    fn request_cancel(&self, run: &RunId, request: CancelRequest) -> Result<(), StoreError> {
        let conn = self
            .reader
            .lock()
            .map_err(|_| StoreError::Io("store reader poisoned".into()))?;
        conn.execute(
            "INSERT OR IGNORE INTO cancels (run_id, by, reason) VALUES (?1, ?2, ?3)",
            params![run.0, request.by, request.reason],
        )
        .map_err(io)?;
        drop(conn);
        if let Ok(mut snap) = self.cancels.lock() {
            snap.read_at = None;
        }
        Ok(())
    }

    fn cancel_request(&self, run: &RunId) -> Result<Option<CancelRequest>, StoreError> {
        let mut snap = self
            .cancels
            .lock()
            .map_err(|_| StoreError::Io("cancel snapshot poisoned".into()))?;
        #[expect(
            clippy::disallowed_methods,
            reason = "rate-limits a poll; never recorded"
        )]
        let now = std::time::Instant::now();
        if snap
            .read_at
            .is_none_or(|t| now.duration_since(t).as_millis() >= CANCEL_POLL_MS)
        {
            let conn = self
                .reader
                .lock()
                .map_err(|_| StoreError::Io("store reader poisoned".into()))?;
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
                        },
                    ))
                })
                .map_err(io)?;
            snap.requests = rows.collect::<Result<HashMap<_, _>, _>>().map_err(io)?;
            snap.read_at = Some(now);
        }
        Ok(snap.requests.get(run).cloned())
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish what it holds and stop.
        if let Ok(mut w) = self.writer.lock() {
            w.take();
        }
    }
}

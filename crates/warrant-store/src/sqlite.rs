//! The SQLite store: one file in WAL mode. Appends go to one writer thread that commits every
//! pending batch in one transaction (group commit): concurrent runs share one fsync, and each
//! appender waits for the commit that holds its own batch.
//!
//! Several processes may share one file (a run in one terminal, `warrant approve` in another):
//! every append's expected sequence is checked against the file inside the write transaction.
//! The writer keeps the sequences it committed in memory only while SQLite's `data_version`
//! says no other connection has written since.
//!
//! A file is a Warrant store when it carries Warrant's SQLite `application_id` (or, for stores
//! made before it was set, Warrant's `meta` table). Anything else is refused by name and left
//! untouched. Read commands open the file read-only ([`SqliteStore::open_read_only`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::oneshot;
use warrant_core::event::{self, Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::ports::{
    BoxFuture, CancelRequest, Driver, EventStore, Held, LEASE_TTL_MS, RunSummary, StoreError,
};

/// The SQLite library version linked in.
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}

/// Most append requests folded into one transaction.
pub const GROUP_COMMIT_MAX: usize = 2048;

/// The store's schema: 2 added the runs' lease (`holder`, `heartbeat_ms`).
const SCHEMA_VERSION: i64 = 2;

/// SQLite's `application_id` of a Warrant store (`WRNT`).
const APPLICATION_ID: i64 = 0x5752_4e54;

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
    driver: Option<Driver>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// The SQLite store.
pub struct SqliteStore {
    cancels: Mutex<CancelSnapshot>,
    path: PathBuf,
    writer: Mutex<Option<mpsc::Sender<Request>>>,
    reader: Mutex<Connection>,
    durability: Durability,
    read_only: bool,
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

/// What a SQLite file holds, as far as Warrant is concerned.
enum Identity {
    /// Nothing yet: a new, empty database.
    Empty,
    /// A Warrant store of this schema version.
    Warrant(i64),
    /// Something else.
    Foreign,
}

fn identity(conn: &Connection, path: &Path) -> Result<Identity, StoreError> {
    let not_sqlite = |e: rusqlite::Error| {
        StoreError::Io(format!(
            "`{}` is not a Warrant store (it cannot be read as a SQLite database: {e})",
            path.display()
        ))
    };
    let app: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(not_sqlite)?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(not_sqlite)?;
    if tables == 0 && app == 0 {
        return Ok(Identity::Empty);
    }
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(io)?
        > 0;
    if app != APPLICATION_ID && (app != 0 || !has_meta) {
        return Ok(Identity::Foreign);
    }
    let version: Option<String> = if has_meta {
        conn.query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(io)?
    } else {
        None
    };
    match version.and_then(|v| v.parse::<i64>().ok()) {
        Some(v) => Ok(Identity::Warrant(v)),
        None if app == APPLICATION_ID => Ok(Identity::Warrant(0)),
        None => Ok(Identity::Foreign),
    }
}

fn foreign(path: &Path) -> StoreError {
    StoreError::Io(format!(
        "`{}` is a SQLite database but not a Warrant store: refusing to touch it (pass another --store)",
        path.display()
    ))
}

fn newer(path: &Path, v: i64) -> StoreError {
    StoreError::Io(format!(
        "`{}` has store schema {v}; this build reads schema {SCHEMA_VERSION} and older: use a newer warrant",
        path.display()
    ))
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, for reading and writing. A file that is
    /// not a Warrant store is refused and left untouched; an older store is brought up to
    /// this build's schema; a newer one is refused.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Io(format!("cannot create `{}`: {e}", dir.display())))?;
        }
        // Look before writing anything: not even WAL mode is set on a foreign file.
        if path.exists() {
            let probe = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| StoreError::Io(format!("cannot open `{}`: {e}", path.display())))?;
            probe
                .busy_timeout(std::time::Duration::from_secs(10))
                .map_err(io)?;
            match identity(&probe, path)? {
                Identity::Foreign => return Err(foreign(path)),
                Identity::Warrant(v) if v > SCHEMA_VERSION => return Err(newer(path, v)),
                _ => {}
            }
        }
        let conn = open_connection(path, durability)?;
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             PRAGMA application_id = {APPLICATION_ID};
             CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS runs (
                 run_id TEXT PRIMARY KEY, spec_id TEXT NOT NULL, decider TEXT NOT NULL,
                 status TEXT NOT NULL, started_at_ms INTEGER NOT NULL, last_seq INTEGER NOT NULL,
                 holder TEXT, heartbeat_ms INTEGER);
             CREATE TABLE IF NOT EXISTS cancels (
                 run_id TEXT PRIMARY KEY, by TEXT NOT NULL, reason TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS events (
                 position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
                 body TEXT NOT NULL, UNIQUE (run_id, seq));
             COMMIT;"
        ))
        .map_err(io)?;
        let version: Option<String> = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(io)?;
        match version.and_then(|v| v.parse::<i64>().ok()) {
            None => {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )
                .map_err(io)?;
            }
            Some(1) => migrate_1_to_2(&conn)?,
            Some(v) if v == SCHEMA_VERSION => {}
            Some(v) => return Err(newer(path, v)),
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
            read_only: false,
        })
    }

    /// Opens an existing store for reading only: nothing in the file changes, a file that is
    /// not a Warrant store is refused, and a store on read-only media can be read.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Io(format!("no store at `{}`", path.display())));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let attempt = |uri: &str| -> Result<(Connection, Identity), StoreError> {
            let conn = Connection::open_with_flags(uri, flags)
                .map_err(|e| StoreError::Io(format!("cannot open `{}`: {e}", path.display())))?;
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .map_err(io)?;
            let id = identity(&conn, path)?;
            Ok((conn, id))
        };
        let file = uri_path(path);
        // On read-only media a WAL file cannot be opened for shared access: read it as
        // immutable (nobody can be writing to it there).
        let (conn, id) = match attempt(&format!("file:{file}")) {
            Ok(found) => found,
            Err(first) => attempt(&format!("file:{file}?immutable=1")).map_err(|_| first)?,
        };
        match id {
            Identity::Foreign | Identity::Empty => return Err(foreign(path)),
            Identity::Warrant(v) if v > SCHEMA_VERSION => return Err(newer(path, v)),
            Identity::Warrant(_) => {}
        }
        Ok(SqliteStore {
            cancels: Mutex::new(CancelSnapshot::default()),
            path: path.to_owned(),
            writer: Mutex::new(None),
            reader: Mutex::new(conn),
            durability: Durability::Fsync,
            read_only: true,
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

    fn reader(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.reader
            .lock()
            .map_err(|_| StoreError::Io("store reader poisoned".into()))
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::Io(format!(
                "`{}` is open read-only",
                self.path.display()
            )));
        }
        Ok(())
    }

    /// Whether the runs table has the lease columns (a schema-1 store opened read-only does
    /// not).
    fn has_leases(conn: &Connection) -> bool {
        conn.prepare_cached("SELECT holder, heartbeat_ms FROM runs LIMIT 0")
            .is_ok()
    }
}

/// A path as the path part of a SQLite URI (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let text = path.display().to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

fn migrate_1_to_2(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         ALTER TABLE runs ADD COLUMN holder TEXT;
         ALTER TABLE runs ADD COLUMN heartbeat_ms INTEGER;
         UPDATE meta SET value = '2' WHERE key = 'schema_version';
         COMMIT;",
    )
    .map_err(|e| StoreError::Io(format!("upgrading the store to schema 2: {e}")))
}

/// How often the cancellation table is re-read: checks in between are answered from memory,
/// so a thousand runs checking cost one query per interval.
const CANCEL_POLL_MS: u128 = 100;

#[derive(Default)]
struct CancelSnapshot {
    read_at: Option<std::time::Instant>,
    requests: HashMap<RunId, CancelRequest>,
}

/// The sequences the writer committed, valid while no other connection wrote to the file.
#[derive(Default)]
struct Sequences {
    last_seq: HashMap<RunId, u64>,
    /// SQLite's `data_version` when they were last known to be the file's.
    data_version: Option<i64>,
}

/// The writer: takes every request waiting, commits them in one transaction, answers each.
/// If the thread ends, pending and later appends fail with an error (their reply channel
/// closes): no append is lost silently.
fn writer_loop(mut conn: Connection, rx: mpsc::Receiver<Request>) {
    let mut known = Sequences::default();
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < GROUP_COMMIT_MAX {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let results = commit_batch(&mut conn, &mut known, &batch);
        match results {
            Ok(per_request) => {
                for (req, result) in batch.into_iter().zip(per_request) {
                    let _ = req.reply.send(result);
                }
            }
            Err(e) => {
                known = Sequences::default();
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

fn commit_batch(
    conn: &mut Connection,
    known: &mut Sequences,
    batch: &[Request],
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(io)?;
    // INVARIANT (one order): the expected sequence is checked against the file. Under the
    // write lock, `data_version` tells whether another connection (another process, or this
    // store's reader) committed since the writer last looked; if one did, what it remembers
    // may be stale.
    let version: i64 = tx
        .query_row("PRAGMA data_version", [], |r| r.get(0))
        .map_err(io)?;
    if known.data_version != Some(version) {
        known.last_seq.clear();
        known.data_version = Some(version);
    }
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
        let mut set_status = tx
            .prepare_cached("UPDATE runs SET status = ?2 WHERE run_id = ?1")
            .map_err(io)?;
        // The driver's lease is renewed by every append it makes while the run runs, and ends
        // with the append that makes it wait or end.
        let mut advance_leased = tx
            .prepare_cached(
                "UPDATE runs SET last_seq = ?2,
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
            let actual = match known.last_seq.get(&req.run) {
                Some(s) => *s,
                None => current
                    .query_row([&req.run.0], |r| r.get::<_, i64>(0))
                    .optional()
                    .map_err(io)?
                    .map_or(0, |s| s as u64),
            };
            if actual != req.expected {
                known.last_seq.insert(req.run.clone(), actual);
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
            if let Some(status) = &req.status {
                set_status.execute(params![req.run.0, status]).map_err(io)?;
            }
            match &req.driver {
                Some(d) => {
                    advance_leased
                        .execute(params![
                            req.run.0,
                            new_last as i64,
                            &*d.holder,
                            d.now_ms as i64
                        ])
                        .map_err(io)?;
                }
                None => {
                    advance
                        .execute(params![req.run.0, new_last as i64])
                        .map_err(io)?;
                    if req.status.is_some() {
                        unlease.execute(params![req.run.0]).map_err(io)?;
                    }
                }
            }
            known.last_seq.insert(req.run.clone(), new_last);
            results.push(Ok(()));
        }
    }
    tx.commit().map_err(io)?;
    Ok(results)
}

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        run_id: RunId(r.get(0)?),
        spec_id: r.get(1)?,
        decider: r.get(2)?,
        status: r.get(3)?,
        started_at_ms: r.get::<_, i64>(4)? as u64,
        events: r.get::<_, i64>(5)? as u64,
        holder: r.get(6)?,
        heartbeat_ms: r.get::<_, Option<i64>>(7)?.map(|t| t as u64),
    })
}

/// The columns of a run summary; a store without leases reads them as absent.
fn summary_columns(conn: &Connection) -> &'static str {
    if SqliteStore::has_leases(conn) {
        "run_id, spec_id, decider, status, started_at_ms, last_seq, holder, heartbeat_ms"
    } else {
        "run_id, spec_id, decider, status, started_at_ms, last_seq, NULL, NULL"
    }
}

impl EventStore for SqliteStore {
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        if let Err(e) = self.writable() {
            return Box::pin(std::future::ready(Err(e)));
        }
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
            driver: driver.cloned(),
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
        let conn = self.reader()?;
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
            let event = event::decode(&body).map_err(|e| {
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
        let conn = self.reader()?;
        let sql = format!(
            "SELECT {} FROM runs ORDER BY started_at_ms DESC, rowid DESC",
            summary_columns(&conn)
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(io)?;
        let rows = stmt.query_map([], summary_row).map_err(io)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(io)
    }

    fn summary(&self, run: &RunId) -> Result<Option<RunSummary>, StoreError> {
        let conn = self.reader()?;
        let sql = format!(
            "SELECT {} FROM runs WHERE run_id = ?1",
            summary_columns(&conn)
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(io)?;
        stmt.query_row([&run.0], summary_row).optional().map_err(io)
    }

    fn request_cancel(&self, run: &RunId, request: CancelRequest) -> Result<(), StoreError> {
        self.writable()?;
        let conn = self.reader()?;
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
            let conn = self.reader()?;
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

    fn claim(&self, run: &RunId, driver: &Driver) -> Result<Option<Held>, StoreError> {
        self.writable()?;
        let conn = self.reader()?;
        let stale_before = driver.now_ms.saturating_sub(LEASE_TTL_MS) as i64;
        // One statement: the lease is taken only if nobody else was heard from lately.
        let taken = conn
            .execute(
                "UPDATE runs SET holder = ?2, heartbeat_ms = ?3 WHERE run_id = ?1
                 AND (holder IS NULL OR holder = ?2 OR heartbeat_ms IS NULL OR heartbeat_ms <= ?4)",
                params![run.0, &*driver.holder, driver.now_ms as i64, stale_before],
            )
            .map_err(io)?;
        if taken == 1 {
            return Ok(None);
        }
        let held: Option<(Option<String>, Option<i64>)> = conn
            .query_row(
                "SELECT holder, heartbeat_ms FROM runs WHERE run_id = ?1",
                [&run.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(io)?;
        match held {
            None => Err(StoreError::Io(format!("no run `{run}` in the store"))),
            Some((holder, at)) => Ok(Some(Held {
                holder: holder.unwrap_or_default(),
                heartbeat_ms: at.unwrap_or(0) as u64,
            })),
        }
    }

    fn heartbeat(&self, run: &RunId, driver: &Driver) -> Result<(), StoreError> {
        self.writable()?;
        let conn = self.reader()?;
        conn.execute(
            "UPDATE runs SET heartbeat_ms = ?3 WHERE run_id = ?1 AND holder = ?2",
            params![run.0, &*driver.holder, driver.now_ms as i64],
        )
        .map_err(io)?;
        Ok(())
    }

    fn release(&self, run: &RunId, driver: &Driver) -> Result<(), StoreError> {
        self.writable()?;
        let conn = self.reader()?;
        conn.execute(
            "UPDATE runs SET holder = NULL, heartbeat_ms = NULL WHERE run_id = ?1 AND holder = ?2",
            params![run.0, &*driver.holder],
        )
        .map_err(io)?;
        Ok(())
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

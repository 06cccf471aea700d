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
//!
//! Reads run on tokio's blocking pool. A follower ([`LogReader::subscribe`](warrant_core::store::LogReader::subscribe)) of a store open
//! for writing is handed this store's commits of its run by the writer, as they commit, without
//! reading the file; it reads the file only at its start, after a gap, and when the writer saw
//! another connection commit (SQLite's `data_version`, looked at in every commit and every
//! `FOLLOW_POLL_MS` while idle). A follower of a read-only store watches `data_version` itself:
//! it reads the log only when something was committed.
//!
//! The WAL is copied back into the file by a checkpointer thread with a connection of its own,
//! beside the writer rather than inside one of its commits (SQLite's automatic checkpoint): the
//! copy and the file's fsync no longer hold up every append waiting for the next commit.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::{broadcast, oneshot, watch};
use warrant_core::event::{self, Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::status::RunStatus;
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, Leases, LogReader, LogWriter, RunsIndex, SpecCatalog,
    StoreHealth,
};
use warrant_core::store::{
    CancelRequest, Claim, Driver, EventFeed, Held, IDEMPOTENCY_PURGE_MAX, IdempotencyRecord,
    LEASE_TTL_MS, PendingApproval, RunPage, RunQuery, RunSummary, StoreError,
};

use crate::{ApprovalChange, FollowStep, Followed};

/// The SQLite library version linked in.
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}

/// Most append requests folded into one transaction.
pub const GROUP_COMMIT_MAX: usize = 2048;

/// The store's schema: 2 added the runs' lease (`holder`, `heartbeat_ms`); 3 its `epoch` and
/// the index of pending approvals.
/// 4: one row of `events` holds one append's events (`n_events` of them, from `seq` and
/// `position` on, one JSON text a line), and `runs.last_seq` is no longer advanced by every
/// append (a run's last sequence is its log's). A build that reads schema 3 would misread
/// both, so it is refused.
/// 5: a run's rows are chained (`events.prev`, the position of the run's previous row;
/// `runs.last_position`, of its last) in place of the `(run_id, seq)` index, and
/// `runs.last_seq` is again advanced by every append. An append then writes the end of the
/// log and its run's row, not a leaf of an index ordered by run: with a thousand runs taking
/// turns, every append of a group commit dirtied a page of its own there (4 KiB written and
/// fsynced for an append of a few hundred bytes).
/// 6: the `idempotency` table, a tenant's `Idempotency-Key`s and the runs they start
/// (`IdempotencyKeys::idempotency_put`), so a restarted server still knows them.
pub const SCHEMA_VERSION: i64 = 6;

/// How often, at most, an append writes its driver's heartbeat to the run's row (the append
/// otherwise advances the row's last sequence and position only): a lease lapses between
/// `LEASE_TTL_MS - HEARTBEAT_EVERY_MS` and `LEASE_TTL_MS` after its driver's last append.
const HEARTBEAT_EVERY_MS: u64 = 1_000;

/// A run's last sequence in a schema 4 store, from its log: the end of the run's last row.
/// SQL for a query over `runs` (one row per run).
macro_rules! log_last_seq {
    () => {
        "COALESCE((SELECT e.seq + e.n_events - 1 FROM events e WHERE e.run_id = runs.run_id
                   ORDER BY e.seq DESC LIMIT 1), 0)"
    };
}

/// How often a follower with nothing new (or, for a store open for writing, its idle writer)
/// looks whether another process committed.
const FOLLOW_POLL_MS: u64 = 25;

/// Events of one run a follower may fall behind the writer by before it reads the file instead.
const TAP_CAPACITY: usize = 1024;

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
    /// The events, encoded by the writer (off the runs' thread) and handed to the run's
    /// followers once committed.
    events: Vec<Arc<Event>>,
    started: Option<crate::Started>,
    status: Option<RunStatus>,
    approvals: Vec<ApprovalChange>,
    driver: Option<Driver>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// What the writer thread is asked to do, in one group-committed transaction with whatever
/// else waits.
enum Job {
    Append(Request),
    /// A driver's claim of a run's lease (a new epoch): ten thousand runs resumed at once
    /// share commits rather than each fsyncing its own.
    Claim {
        run: RunId,
        driver: Driver,
        reply: oneshot::Sender<Result<Claim, StoreError>>,
    },
}

/// A reply of the writer thread, left in the store's outbox. An append's reply carries its
/// request back, so that its events are freed on the thread that allocated them (cheaper for
/// the allocator than a free from another thread).
enum Reply {
    Append(Request, Result<(), StoreError>),
    Claim(
        oneshot::Sender<Result<Claim, StoreError>>,
        Result<Claim, StoreError>,
    ),
}

impl crate::Deliver for Reply {
    fn deliver(self) {
        // A waiter that went away no longer needs its answer.
        match self {
            Reply::Append(request, answer) => drop(request.reply.send(answer)),
            Reply::Claim(to, answer) => drop(to.send(answer)),
        }
    }
}

/// The SQLite store.
pub struct SqliteStore {
    inner: Arc<Inner>,
    writer: Mutex<Option<mpsc::Sender<Job>>>,
    /// Where the writer leaves its replies, one wake per group commit.
    outbox: Arc<crate::Outbox<Reply>>,
    /// What the writer tells this store's followers; `None` when open read-only.
    taps: Option<Arc<Taps>>,
}

/// An event handed to followers, and when its commit was done.
type Handed = (StoredEvent, warrant_core::metrics::Stopwatch);

/// What the writer tells the rest of this process: each committed event of a followed run,
/// that another connection committed (so the file holds what was not handed over), and how
/// long its commits take.
struct Taps {
    runs: Mutex<HashMap<RunId, broadcast::Sender<Handed>>>,
    /// Bumped when the writer sees another connection's commit.
    foreign: watch::Sender<u64>,
    /// How long each group commit took, from its transaction's start to durable.
    commits: warrant_core::metrics::Histogram,
    /// Copies of the WAL back into the file that failed.
    checkpoint_failures: Arc<FailedCopies>,
}

/// Copies of the WAL back into the file that failed: how many, and the last one's error.
#[derive(Default)]
struct FailedCopies {
    count: AtomicU64,
    last: Mutex<Option<String>>,
}

impl FailedCopies {
    /// One more copy failed, with `error`.
    fn record(&self, error: String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        *self.last() = Some(error);
    }

    fn snapshot(&self) -> warrant_core::ports::CheckpointFailures {
        warrant_core::ports::CheckpointFailures {
            count: self.count.load(Ordering::Relaxed),
            last: self.last().clone(),
        }
    }

    fn last(&self) -> MutexGuard<'_, Option<String>> {
        // A poisoned slot only ever held a message: go on with it.
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Taps {
    fn runs(&self) -> MutexGuard<'_, HashMap<RunId, broadcast::Sender<Handed>>> {
        // A poisoned map only ever held senders: go on with it.
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands the events of the requests that committed to their runs' followers, and forgets
    /// runs nobody follows any more.
    fn hand_over(&self, batch: &[Request], per_request: &[Result<Vec<u64>, StoreError>]) {
        let mut runs = self.runs();
        if runs.is_empty() {
            return;
        }
        let committed = warrant_core::metrics::Stopwatch::start();
        for (req, result) in batch.iter().zip(per_request) {
            let (Ok(positions), Some(tx)) = (result, runs.get(&req.run)) else {
                continue;
            };
            for (event, position) in req.events.iter().zip(positions) {
                // No receiver left: the entry goes below.
                let _ = tx.send((
                    StoredEvent {
                        position: *position,
                        run_id: req.run.clone(),
                        event: event.clone(),
                    },
                    committed,
                ));
            }
        }
        runs.retain(|_, tx| tx.receiver_count() > 0);
    }

    fn foreign_commit(&self) {
        if self.foreign.receiver_count() > 0 {
            self.foreign.send_modify(|n| *n += 1);
        }
    }
}

/// What reads share with the blocking pool.
struct Inner {
    cancels: Mutex<CancelSnapshot>,
    path: PathBuf,
    reader: Mutex<Connection>,
    /// One turn at the reader connection: reads wait their turn here, in async code, rather
    /// than as blocked threads of tokio's pool (ten thousand runs resumed at once would
    /// otherwise start hundreds of threads, each with a heap of its own).
    turn: tokio::sync::Semaphore,
    durability: Durability,
    read_only: bool,
}

fn io(e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(e.to_string())
}

/// A directory given where a store file is meant.
fn not_a_directory(path: &Path) -> Result<(), StoreError> {
    if path.is_dir() {
        return Err(StoreError::Io(format!(
            "`{}` is a directory, not a store file: name a file, e.g. `{}`",
            path.display(),
            path.join("warrant.db").display()
        )));
    }
    Ok(())
}

/// Why SQLite could not open `path` (its own words are only "unable to open database file"):
/// the folder missing, or the file or its write-ahead log not creatable or writable there,
/// with the system's reason.
fn cannot_open(path: &Path, e: &rusqlite::Error) -> StoreError {
    let shown = path.display();
    let folder = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => p.to_path_buf(),
        None => std::path::PathBuf::from("."),
    };
    let why = if !folder.exists() {
        Some(format!("the folder `{}` does not exist", folder.display()))
    } else if !folder.is_dir() {
        Some(format!("`{}` is not a folder", folder.display()))
    } else if !path.exists() {
        probe_create(path).map(|e| format!("it cannot be created in `{}`: {e}", folder.display()))
    } else if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Some(format!("it cannot be opened to write: {e}"))
    } else {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let wal = std::path::PathBuf::from(wal);
        if wal.exists() {
            None
        } else {
            probe_create(&wal).map(|e| {
                format!(
                    "its write-ahead log `{}` cannot be created in `{}`: {e}",
                    wal.display(),
                    folder.display()
                )
            })
        }
    };
    match why {
        Some(why) => StoreError::Io(format!("cannot open the store `{shown}`: {why}")),
        None => StoreError::Io(format!("cannot open the store `{shown}`: {e}")),
    }
}

/// The system's reason a new file at `path` cannot be created (none: it can; the file made to
/// find out is removed).
fn probe_create(path: &Path) -> Option<std::io::Error> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(path);
            None
        }
        Err(e) => Some(e),
    }
}

/// A read's error, saying the store is damaged when SQLite found it so (its own words name no
/// file and no remedy).
fn damaged(path: &Path, e: StoreError) -> StoreError {
    let StoreError::Io(message) = &e else {
        return e;
    };
    if message.contains("database disk image is malformed")
        || message.contains("file is not a database")
    {
        return StoreError::Io(format!(
            "`{}` is damaged ({message}): restore the store from a backup \
             (`sqlite3 FILE .recover` may save what is left of it)",
            path.display()
        ));
    }
    e
}

/// `n` as an SQLite integer: one past `i64::MAX` is refused rather than wrapped.
fn sql_int(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| {
        StoreError::Io(format!(
            "{n} is past the largest integer the store holds ({})",
            i64::MAX
        ))
    })
}

/// Column `i` of `r`, an integer the store wrote from a `u64`: a negative one is refused
/// rather than wrapped.
fn column_u64(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<u64> {
    let v: i64 = r.get(i)?;
    u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(i, v))
}

/// Column `i` of `r`, like [`column_u64`], when it may be `NULL`.
fn column_u64_opt(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<u64>> {
    r.get::<_, Option<i64>>(i)?
        .map(|v| u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(i, v)))
        .transpose()
}

/// What every connection is set to: it waits for a busy file, keeps every statement the store
/// uses prepared (the writer alone uses ~20), and its statements keep the plan they were
/// prepared with whatever is bound to them (SQLite's query-planner stability guarantee).
/// Without that a statement whose plan the build's STAT4 statistics could tune is prepared
/// again each time a different run id is bound: a read cost ~100,000 instructions more.
fn settle(conn: &Connection) -> Result<(), StoreError> {
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(io)?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(io)?;
    Ok(())
}

/// WAL pages between checkpoints (about 40 MB of 4 KiB pages).
const WAL_CHECKPOINT_PAGES: i64 = 10_000;

/// WAL pages at which the writer waits for the checkpointer's copy, because it fell this far
/// behind: the WAL stays bounded whatever the rate of commits.
const WAL_STALL_PAGES: i64 = 4 * WAL_CHECKPOINT_PAGES;

/// How large a WAL file is left after a checkpoint.
const WAL_KEEP_BYTES: i64 = 64 * 1024 * 1024;

fn open_connection(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(|e| cannot_open(path, &e))?;
    settle(&conn)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(io)?;
    let sync = match durability {
        Durability::Fsync => "FULL",
        Durability::ProcessCrash => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync).map_err(io)?;
    // The WAL is copied back into the file every `WAL_CHECKPOINT_PAGES` pages rather than
    // SQLite's 1,000: a page written again and again between two checkpoints (a run's row,
    // the log's last page) is copied back once, and a commit seldom pays for a checkpoint. The WAL is
    // truncated back to `WAL_KEEP_BYTES` after a checkpoint if it grew past it. (The writer's
    // connection leaves its checkpoints to the checkpointer: `start_checkpointer`.)
    conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
        .map_err(io)?;
    conn.pragma_update(None, "journal_size_limit", WAL_KEEP_BYTES)
        .map_err(io)?;
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
        not_a_directory(path)?;
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Io(format!(
                    "cannot create the folder `{}` of the store `{}`: {e}",
                    dir.display(),
                    path.display()
                ))
            })?;
        }
        // Look before writing anything: not even WAL mode is set on a foreign file.
        if path.exists() {
            let probe = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| cannot_open(path, &e))?;
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
                 holder TEXT, heartbeat_ms INTEGER, epoch INTEGER NOT NULL DEFAULT 1,
                 last_position INTEGER);
             CREATE TABLE IF NOT EXISTS cancels (
                 run_id TEXT PRIMARY KEY, by TEXT NOT NULL, reason TEXT NOT NULL);
             {EVENTS_TABLE}
             {CATALOG_TABLE}
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
                conn.execute_batch(APPROVALS_TABLE).map_err(io)?;
                conn.execute_batch(IDEMPOTENCY_TABLE).map_err(io)?;
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )
                .map_err(io)?;
            }
            Some(v) if v < SCHEMA_VERSION => migrate(&conn, v)?,
            Some(v) if v == SCHEMA_VERSION => {}
            Some(v) => return Err(newer(path, v)),
        }
        let mut writer_conn = open_connection(path, durability)?;
        let checkpoint_failures = Arc::new(FailedCopies::default());
        start_checkpointer(
            path,
            durability,
            &mut writer_conn,
            (WAL_CHECKPOINT_PAGES, WAL_STALL_PAGES),
            checkpoint_failures.clone(),
        )?;
        let taps = Arc::new(Taps {
            runs: Mutex::new(HashMap::new()),
            foreign: watch::Sender::new(0),
            commits: warrant_core::metrics::Histogram::default(),
            checkpoint_failures,
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let writer_taps = taps.clone();
        let outbox = Arc::new(crate::Outbox::new());
        let writer_outbox = outbox.clone();
        thread::Builder::new()
            .name("warrant-store-writer".into())
            .spawn(move || writer_loop(writer_conn, rx, &writer_taps, &writer_outbox))
            .map_err(|e| StoreError::Io(format!("cannot start the store writer: {e}")))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                cancels: Mutex::new(CancelSnapshot::default()),
                path: path.to_owned(),
                reader: Mutex::new(conn),
                turn: tokio::sync::Semaphore::new(1),
                durability,
                read_only: false,
            }),
            writer: Mutex::new(Some(tx)),
            outbox,
            taps: Some(taps),
        })
    }

    /// The schema of the Warrant store at `path`, read without changing anything: `None` for a
    /// missing or empty file; an error for a file that is not a Warrant store. Opening a store
    /// of an older schema to write upgrades it ([`SCHEMA_VERSION`]).
    pub fn schema_of(path: &Path) -> Result<Option<i64>, StoreError> {
        not_a_directory(path)?;
        if !path.is_file() {
            return Ok(None);
        }
        match read_only_connection(path)?.1 {
            Identity::Empty => Ok(None),
            Identity::Warrant(v) => Ok(Some(v)),
            Identity::Foreign => Err(foreign(path)),
        }
    }

    /// Opens an existing store for reading only: nothing in the file changes, a file that is
    /// not a Warrant store is refused, and a store on read-only media can be read.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        not_a_directory(path)?;
        if !path.is_file() {
            return Err(StoreError::Io(format!("no store at `{}`", path.display())));
        }
        let (conn, id) = read_only_connection(path)?;
        match id {
            Identity::Foreign | Identity::Empty => return Err(foreign(path)),
            Identity::Warrant(v) if v > SCHEMA_VERSION => return Err(newer(path, v)),
            Identity::Warrant(_) => {}
        }
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                cancels: Mutex::new(CancelSnapshot::default()),
                path: path.to_owned(),
                reader: Mutex::new(conn),
                turn: tokio::sync::Semaphore::new(1),
                durability: Durability::Fsync,
                read_only: true,
            }),
            writer: Mutex::new(None),
            outbox: Arc::new(crate::Outbox::new()),
            taps: None,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What a commit survives.
    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    /// Runs `read` with the reader connection on tokio's blocking pool.
    fn reading<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        self.reading_unless(|_| None, read)
    }

    /// As `reading`, unless `answered` (asked once this read's turn at the reader has come)
    /// already has the answer: reads queued behind one that fetched what they want cost no
    /// query and no trip through the blocking pool.
    fn reading_unless<T: Send + 'static>(
        &self,
        answered: impl FnOnce(&Inner) -> Option<T> + Send + 'static,
        read: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let _turn = inner
                .turn
                .acquire()
                .await
                .map_err(|e| StoreError::Io(format!("the store's reader closed: {e}")))?;
            if let Some(answer) = answered(&inner) {
                return Ok(answer);
            }
            let reading = inner.clone();
            tokio::task::spawn_blocking(move || read(&reading))
                .await
                .unwrap_or_else(|e| Err(StoreError::Io(format!("a store read stopped: {e}"))))
                .map_err(|e| damaged(&inner.path, e))
        })
    }

    /// Runs `write` with the reader connection (small writes an operator makes: a cancel, a
    /// lease) on tokio's blocking pool.
    fn writing<T: Send + 'static>(
        &self,
        write: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        if let Err(e) = self.inner.writable() {
            return Box::pin(std::future::ready(Err(e)));
        }
        self.reading(write)
    }
}

impl SqliteStore {
    /// Hands `job` to the writer thread; false if it has stopped.
    fn send(&self, job: Job) -> bool {
        match self.writer.lock() {
            Ok(guard) => guard.as_ref().is_some_and(|w| w.send(job).is_ok()),
            Err(_) => false,
        }
    }
}

impl Inner {
    /// `run`'s cancellation request as the table stood at the snapshot's read, if that read
    /// began at `since` or later.
    fn cancel_answer(
        &self,
        since: std::time::Instant,
        run: &RunId,
    ) -> Option<Option<CancelRequest>> {
        let snap = self.cancels.lock().ok()?;
        snap.read_at
            .is_some_and(|t| t >= since)
            .then(|| snap.requests.get(run).cloned())
    }

    fn reader(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
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
}

/// A read-only connection to `path` and what the file is; on read-only media, where a WAL file
/// cannot be opened for shared access, read as immutable (nobody can be writing to it there).
fn read_only_connection(path: &Path) -> Result<(Connection, Identity), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let attempt = |uri: &str| -> Result<(Connection, Identity), StoreError> {
        let conn =
            Connection::open_with_flags(uri, flags).map_err(|e| {
                match std::fs::File::open(path) {
                    Err(why) => StoreError::Io(format!(
                        "cannot open the store `{}` to read it: {why}",
                        path.display()
                    )),
                    Ok(_) => StoreError::Io(format!("cannot open `{}`: {e}", path.display())),
                }
            })?;
        settle(&conn)?;
        let id = identity(&conn, path)?;
        Ok((conn, id))
    };
    let file = uri_path(path);
    match attempt(&format!("file:{file}")) {
        Ok(found) => Ok(found),
        Err(first) => attempt(&format!("file:{file}?immutable=1")).map_err(|_| first),
    }
}

/// How a store's log is laid out, by the schema that wrote it (a read-only store is read as
/// it is, whatever its age).
#[derive(Clone, Copy, PartialEq)]
enum LogLayout {
    /// Before schema 4: one event a row, indexed by `(run_id, seq)`; `runs.last_seq` exact.
    EventRows,
    /// Schema 4: one append a row, indexed; a run's last sequence only in its log.
    IndexedAppends,
    /// Schema 5: one append a row, chained by `prev`; `runs.last_seq` exact.
    ChainedAppends,
}

fn log_layout(conn: &Connection) -> LogLayout {
    if has_column(conn, "events", "prev") {
        LogLayout::ChainedAppends
    } else if has_column(conn, "events", "n_events") {
        LogLayout::IndexedAppends
    } else {
        LogLayout::EventRows
    }
}

/// Whether `table` has `column` (an older store opened read-only may lack one).
fn has_column(conn: &Connection, table: &str, column: &str) -> bool {
    conn.prepare_cached(&format!("SELECT {column} FROM {table} LIMIT 0"))
        .is_ok()
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

/// The log (schema 5): one row per append, chained to the run's previous row by `prev`.
const EVENTS_TABLE: &str = "CREATE TABLE IF NOT EXISTS events (
    position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
    body TEXT NOT NULL, n_events INTEGER NOT NULL DEFAULT 1, prev INTEGER);";

/// The operator's catalog: added to any store opened to write (an older build ignores it).
const CATALOG_TABLE: &str = "CREATE TABLE IF NOT EXISTS catalog (
    id TEXT NOT NULL, digest TEXT NOT NULL, added_at_ms INTEGER NOT NULL,
    retired_at_ms INTEGER, body TEXT NOT NULL, PRIMARY KEY (id, digest));";

const APPROVALS_TABLE: &str = "CREATE TABLE IF NOT EXISTS approvals (
    request TEXT PRIMARY KEY, run_id TEXT NOT NULL, requested_at_ms INTEGER NOT NULL,
    body TEXT NOT NULL);
 CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id);";

/// A tenant's idempotency keys (schema 6), each with the digest of the body it was first
/// sent with and the run it starts; found by expiry for the purge.
const IDEMPOTENCY_TABLE: &str = "CREATE TABLE IF NOT EXISTS idempotency (
    tenant TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, run_id TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, PRIMARY KEY (tenant, key));
 CREATE INDEX IF NOT EXISTS idempotency_by_expiry ON idempotency (expires_at_ms);";

/// Brings a store of schema `from` up to this build's, in one transaction.
fn migrate(conn: &Connection, from: i64) -> Result<(), StoreError> {
    let failed = |e: rusqlite::Error| {
        StoreError::Io(format!(
            "upgrading the store from schema {from} to {SCHEMA_VERSION}: {e}"
        ))
    };
    conn.execute_batch("BEGIN IMMEDIATE").map_err(failed)?;
    let steps = || -> Result<(), StoreError> {
        if from < 2 {
            conn.execute_batch(
                "ALTER TABLE runs ADD COLUMN holder TEXT;
                 ALTER TABLE runs ADD COLUMN heartbeat_ms INTEGER;",
            )
            .map_err(failed)?;
        }
        if from < 3 {
            conn.execute_batch("ALTER TABLE runs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;")
                .map_err(failed)?;
            conn.execute_batch(APPROVALS_TABLE).map_err(failed)?;
            for p in pending_by_folding(conn)? {
                insert_pending(conn, &p)?;
            }
        }
        if from < 4 && !has_column(conn, "events", "n_events") {
            // Every row so far holds one event.
            conn.execute_batch(
                "ALTER TABLE events ADD COLUMN n_events INTEGER NOT NULL DEFAULT 1;",
            )
            .map_err(failed)?;
        }
        if from < 5 {
            // The log is copied into a table without the `(run_id, seq)` index, each row
            // chained to its run's previous one; each run's row learns its last.
            conn.execute_batch(&format!(
                "ALTER TABLE events RENAME TO events_v4;
                 {EVENTS_TABLE}
                 INSERT INTO events (position, run_id, seq, body, n_events, prev)
                     SELECT position, run_id, seq, body, n_events,
                            LAG(position) OVER (PARTITION BY run_id ORDER BY seq)
                     FROM events_v4;
                 DROP TABLE events_v4;
                 ALTER TABLE runs ADD COLUMN last_position INTEGER;
                 UPDATE runs SET last_position = t.position, last_seq = t.seq + t.n_events - 1
                     FROM (SELECT run_id, position, seq, n_events,
                                  ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY seq DESC) AS nth
                           FROM events) AS t
                     WHERE t.run_id = runs.run_id AND t.nth = 1;"
            ))
            .map_err(failed)?;
        }
        if from < 6 {
            conn.execute_batch(IDEMPOTENCY_TABLE).map_err(failed)?;
        }
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [SCHEMA_VERSION.to_string()],
        )
        .map_err(failed)?;
        Ok(())
    };
    match steps() {
        Ok(()) => conn.execute_batch("COMMIT").map_err(failed),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The record of `tenant`'s idempotency key `key`, expired or not.
fn idempotency_of(
    conn: &Connection,
    tenant: &str,
    key: &str,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    conn.prepare_cached(
        "SELECT digest, run_id, created_at_ms, expires_at_ms FROM idempotency
         WHERE tenant = ?1 AND key = ?2",
    )
    .and_then(|mut stmt| {
        stmt.query_row(params![tenant, key], |r| {
            Ok(IdempotencyRecord {
                tenant: tenant.to_owned(),
                key: key.to_owned(),
                digest: r.get(0)?,
                run_id: RunId(r.get(1)?),
                created_at_ms: column_u64(r, 2)?,
                expires_at_ms: column_u64(r, 3)?,
            })
        })
        .optional()
    })
    .map_err(io)
}

/// The pending approvals of every run that has not ended, from their logs (for a store made
/// before the index existed).
fn pending_by_folding(conn: &Connection) -> Result<Vec<PendingApproval>, StoreError> {
    let mut runs = conn
        .prepare("SELECT run_id FROM runs WHERE status IN ('running', 'waiting', 'ready')")
        .map_err(io)?;
    let ids: Vec<RunId> = runs
        .query_map([], |r| Ok(RunId(r.get(0)?)))
        .map_err(io)?
        .collect::<Result<_, _>>()
        .map_err(io)?;
    let mut out = Vec::new();
    for id in ids {
        let events: Vec<Arc<Event>> = read_events(conn, &id, 1)?
            .into_iter()
            .map(|s| s.event)
            .collect();
        let facts = crate::run_facts(&id, &events);
        let mut pending: Vec<PendingApproval> = Vec::new();
        for change in facts.approvals {
            match change {
                ApprovalChange::Asked(p) => pending.push(*p),
                ApprovalChange::Settled(r) => pending.retain(|p| p.request != r),
                ApprovalChange::Ended => pending.clear(),
            }
        }
        out.extend(pending);
    }
    Ok(out)
}

fn insert_pending(conn: &Connection, p: &PendingApproval) -> Result<(), StoreError> {
    let body = serde_json::to_string(p).map_err(io)?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO approvals (request, run_id, requested_at_ms, body) VALUES (?1, ?2, ?3, ?4)",
    )
    .map_err(io)?
    .execute(params![
        p.request,
        p.run_id.0,
        sql_int(p.requested_at_ms)?,
        body
    ])
    .map_err(io)?;
    Ok(())
}

/// How often the cancellation table is re-read: checks in between are answered from memory,
/// so a thousand runs checking cost one query per interval.
const CANCEL_POLL_MS: u64 = 100;

#[derive(Default)]
struct CancelSnapshot {
    read_at: Option<std::time::Instant>,
    requests: HashMap<RunId, CancelRequest>,
    /// How many times the table was read.
    reads: u64,
}

/// What the writer remembers of the runs it committed to, valid while no other connection
/// wrote to the file.
#[derive(Default)]
struct Sequences {
    runs: HashMap<RunId, Known>,
    /// The position the next event takes.
    next_position: Option<u64>,
    /// SQLite's `data_version` when they were last known to be the file's.
    data_version: Option<i64>,
}

/// What the writer remembers of one run.
#[derive(Clone)]
struct Known {
    /// Its last sequence.
    seq: u64,
    /// The position of its last row (none before its first).
    position: Option<u64>,
    /// Its lease's epoch.
    epoch: u64,
    /// The heartbeat this writer last wrote for its driver: who, and when.
    beat: Option<(Arc<str>, u64)>,
}

/// Whether an append by `driver` writes the run's heartbeat, `beat` the one last written: at
/// most every [`HEARTBEAT_EVERY_MS`] of the driver's clock, not with every append.
fn beat_due(beat: Option<&(Arc<str>, u64)>, driver: &Driver) -> bool {
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
fn start_checkpointer(
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
fn count_failed_copy<T>(copy: rusqlite::Result<T>, failures: &FailedCopies) {
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
fn writer_loop(
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
fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    conn.prepare_cached("PRAGMA data_version")
        .map_err(io)?
        .query_row([], |r| r.get(0))
        .map_err(io)
}

/// Whether another connection committed since the writer last looked.
fn saw_foreign_commit(conn: &Connection, known: &mut Sequences) -> bool {
    data_version(conn).is_ok_and(|version| known.saw(version))
}

/// What a group commit did: for each request, the positions of its events or why it was
/// refused; each claim's answer; and whether another connection had committed since the
/// writer last looked.
type Committed = (
    Vec<Result<Vec<u64>, StoreError>>,
    Vec<Result<Claim, StoreError>>,
    bool,
);

/// A claim asked of the writer: the run, its would-be driver, where the answer goes.
type ClaimJob = (RunId, Driver, oneshot::Sender<Result<Claim, StoreError>>);

fn commit_batch(
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
            .prepare_cached("UPDATE runs SET status = ?2 WHERE run_id = ?1")
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
                    .execute(params![req.run.0, status.name()])
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
            for change in &req.approvals {
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
struct Immediate<'c>(&'c Connection);

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
fn take_lease(conn: &Connection, run: &RunId, driver: &Driver) -> Result<Claim, StoreError> {
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

/// The columns of a run summary, in `summary_row`'s order; an older store lacks some.
fn summary_columns(conn: &Connection) -> String {
    let or_null = |c: &str| {
        if has_column(conn, "runs", c) {
            c.to_owned()
        } else {
            "NULL".to_owned()
        }
    };
    // A run's last sequence is its log's in schema 4; before and since, `runs.last_seq`
    // keeps it.
    let last_seq = if log_layout(conn) == LogLayout::IndexedAppends {
        log_last_seq!()
    } else {
        "last_seq"
    };
    format!(
        "run_id, spec_id, decider, status, started_at_ms, {last_seq}, {}, {}, {}",
        or_null("holder"),
        or_null("heartbeat_ms"),
        or_null("epoch")
    )
}

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        run_id: RunId(r.get(0)?),
        spec_id: r.get(1)?,
        decider: r.get(2)?,
        status: {
            let name: String = r.get(3)?;
            name.parse().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    3,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?
        },
        started_at_ms: column_u64(r, 4)?,
        events: column_u64(r, 5)?,
        holder: r.get(6)?,
        heartbeat_ms: column_u64_opt(r, 7)?,
        epoch: column_u64_opt(r, 8)?.unwrap_or(1),
        note: None,
    })
}

fn read_events(
    conn: &Connection,
    run: &RunId,
    from_seq: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    // Schema 5: the run's rows, followed back from its last to the one holding `from_seq`
    // (each step to a lower position, so a damaged chain cannot loop); a row of another run
    // on the way is an error below.
    // Schema 4: a row holds an append's events: from the row holding `from_seq` on.
    let sql = match log_layout(conn) {
        LogLayout::ChainedAppends => {
            "WITH RECURSIVE chain(position) AS (
             SELECT last_position FROM runs WHERE run_id = ?1 AND last_position IS NOT NULL
             UNION ALL
             SELECT e.prev FROM events e JOIN chain c ON e.position = c.position
             WHERE e.seq > ?2 AND e.prev < e.position
         )
         SELECT e.position, e.seq, e.n_events, e.body, e.run_id = ?1
         FROM chain c JOIN events e ON e.position = c.position
         ORDER BY e.seq"
        }
        LogLayout::IndexedAppends => {
            "SELECT position, seq, n_events, body, 1 FROM events WHERE run_id = ?1
               AND seq >= COALESCE((SELECT seq FROM events WHERE run_id = ?1 AND seq <= ?2
                                    ORDER BY seq DESC LIMIT 1), 0)
             ORDER BY seq"
        }
        LogLayout::EventRows => {
            "SELECT position, seq, 1, body, 1 FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq"
        }
    };
    let mut stmt = conn.prepare_cached(sql).map_err(io)?;
    let rows = stmt
        .query_map(params![run.0, sql_int(from_seq)?], |r| {
            Ok((
                column_u64(r, 0)?,
                column_u64(r, 1)?,
                column_u64(r, 2)?,
                r.get::<_, String>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })
        .map_err(io)?;
    let mut out = Vec::new();
    let mut expected = None;
    for row in rows {
        let (position, first, n, body, ours) = row.map_err(io)?;
        if !ours {
            return Err(StoreError::Io(format!(
                "run `{run}`: its chain of rows reaches row {position}, of another run"
            )));
        }
        // Consecutive rows continue each other: a chain that skips or repeats is an error,
        // not a log with a hole.
        match expected {
            Some(want) if first != want => {
                return Err(gap(conn, run).unwrap_or_else(|| {
                    StoreError::Io(format!(
                        "run `{run}`: the row at position {position} begins at event {first}, not {want}"
                    ))
                }));
            }
            // The first row holds `from_seq`, or is the run's first.
            None if first > from_seq.max(1) => {
                return Err(gap(conn, run).unwrap_or_else(|| {
                    StoreError::Io(format!(
                        "run `{run}`: its rows end at event {first} (position {position}), before event {}",
                        from_seq.max(1)
                    ))
                }));
            }
            _ => {}
        }
        expected = first.checked_add(n);
        let mut texts = body.split('\n');
        for i in 0..n {
            let (Some(seq), Some(at)) = (first.checked_add(i), position.checked_add(i)) else {
                return Err(StoreError::Io(format!(
                    "run `{run}`: the row from event {first} at position {position} overflows"
                )));
            };
            let Some(text) = texts.next() else {
                return Err(StoreError::Io(format!(
                    "run `{run}`: the row from event {first} says it holds {n} events and holds {i}"
                )));
            };
            if seq < from_seq {
                continue;
            }
            let event = event::decode(text).map_err(|e| {
                StoreError::Io(format!("run `{run}` event {seq} does not decode: {e}"))
            })?;
            out.push(StoredEvent {
                position: at,
                run_id: run.clone(),
                event: Arc::new(event),
            });
        }
        if texts.next().is_some() {
            return Err(StoreError::Io(format!(
                "run `{run}`: the row from event {first} holds more than the {n} events it says"
            )));
        }
    }
    // Nothing read where the run's index says there are events: its last rows are gone. (The
    // index is asked first, by its key: an empty read, a follower's usual one, costs no scan.)
    if out.is_empty()
        && last_seq(conn, run).is_some_and(|last| last >= from_seq.max(1))
        && let Some(missing) = gap(conn, run)
    {
        return Err(missing);
    }
    Ok(out)
}

/// The run's last sequence number, as its index row records it.
fn last_seq(conn: &Connection, run: &RunId) -> Option<u64> {
    conn.query_row(
        "SELECT last_seq FROM runs WHERE run_id = ?1",
        [&run.0],
        |r| column_u64(r, 0),
    )
    .ok()
}

/// When the events of `run` the store holds leave out some (a row deleted outside Warrant):
/// the error that says which. Scans the run's rows: only read once a read found a hole.
fn gap(conn: &Connection, run: &RunId) -> Option<StoreError> {
    // The index first: rows another process appends meanwhile only add to what the scan sees.
    let last = last_seq(conn, run);
    let mut stmt = conn
        .prepare("SELECT seq, n_events FROM events WHERE run_id = ?1 ORDER BY seq")
        .ok()?;
    let rows = stmt
        .query_map([&run.0], |r| Ok((column_u64(r, 0)?, column_u64(r, 1)?)))
        .ok()?;
    let mut missing: Vec<(u64, u64)> = Vec::new();
    let mut next = 1u64;
    for row in rows {
        let (first, n) = row.ok()?;
        if first > next {
            missing.push((next, first - 1));
        }
        next = next.max(first.saturating_add(n));
    }
    if let Some(last) = last
        && last >= next
    {
        missing.push((next, last));
    }
    if missing.is_empty() {
        return None;
    }
    let count: u64 = missing.iter().map(|(a, b)| b - a + 1).sum();
    let listed: Vec<String> = missing
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a} to {b}")
            }
        })
        .collect();
    Some(StoreError::Io(format!(
        "run `{run}`'s log is missing event{} {} (the store was changed outside Warrant): \
         its events cannot be read in order, so it cannot be shown, reported or resumed; \
         restore the store from a backup",
        if count == 1 { "" } else { "s" },
        listed.join(", ")
    )))
}

fn summary_of(conn: &Connection, run: &RunId) -> Result<Option<RunSummary>, StoreError> {
    let sql = format!(
        "SELECT {} FROM runs WHERE run_id = ?1",
        summary_columns(conn)
    );
    conn.prepare_cached(&sql)
        .map_err(io)?
        .query_row([&run.0], summary_row)
        .optional()
        .map_err(io)
}

fn list_runs(conn: &Connection, query: &RunQuery) -> Result<RunPage, StoreError> {
    let sql = format!(
        "SELECT {} FROM runs
         WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR spec_id = ?2)
           AND (?3 IS NULL OR substr(run_id, 1, length(?3)) = ?3)
           AND (?4 IS NULL OR started_at_ms >= ?4)
           AND (?5 IS NULL OR started_at_ms < ?5 OR (started_at_ms = ?5
                AND rowid < (SELECT rowid FROM runs WHERE run_id = ?6)))
         ORDER BY started_at_ms DESC, rowid DESC LIMIT ?7",
        summary_columns(conn)
    );
    // One more than asked, to tell whether there is a next page; past `i64::MAX`, all.
    let limit: i64 = if query.limit == 0 {
        -1
    } else {
        i64::try_from(query.limit).map_or(i64::MAX, |l| l.saturating_add(1))
    };
    let mut stmt = conn.prepare_cached(&sql).map_err(io)?;
    let rows = stmt
        .query_map(
            params![
                query.status.map(RunStatus::name),
                query.spec_id,
                query.id_prefix,
                query.since_ms.map(sql_int).transpose()?,
                query
                    .after
                    .as_ref()
                    .map(|c| sql_int(c.started_at_ms))
                    .transpose()?,
                query.after.as_ref().map(|c| c.run_id.0.clone()),
                limit
            ],
            summary_row,
        )
        .map_err(io)?;
    let all: Vec<RunSummary> = rows.collect::<Result<_, _>>().map_err(io)?;
    // The query did the filtering and the order; `page` cuts it and names the next cursor.
    let unfiltered = RunQuery {
        after: None,
        ..query.clone()
    };
    Ok(crate::page(all, &unfiltered, |_| true))
}

fn pending_of(conn: &Connection, run: Option<&RunId>) -> Result<Vec<PendingApproval>, StoreError> {
    if !has_column(conn, "approvals", "body") {
        // A store made before the index: from the logs.
        let mut all = pending_by_folding(conn)?;
        all.retain(|p| run.is_none_or(|r| p.run_id == *r));
        return Ok(all);
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT body FROM approvals WHERE (?1 IS NULL OR run_id = ?1) ORDER BY requested_at_ms, request",
        )
        .map_err(io)?;
    let rows = stmt
        .query_map([run.map(|r| r.0.clone())], |r| r.get::<_, String>(0))
        .map_err(io)?;
    let mut out = Vec::new();
    for body in rows {
        let body = body.map_err(io)?;
        out.push(
            serde_json::from_str(&body)
                .map_err(|e| StoreError::Io(format!("a pending approval does not decode: {e}")))?,
        );
    }
    Ok(out)
}

impl LogWriter for SqliteStore {
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        if let Err(e) = self.inner.writable() {
            return Box::pin(std::future::ready(Err(e)));
        }
        let facts = match crate::appended_facts(run, &events, expected_seq) {
            Ok(facts) => facts,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let (reply, done) = oneshot::channel();
        let request = Request {
            run: run.clone(),
            expected: expected_seq,
            events,
            started: facts.started,
            status: facts.status,
            approvals: facts.approvals,
            driver: driver.cloned(),
            reply,
        };
        self.outbox.reply(self.send(Job::Append(request)), done)
    }
}

impl LogReader for SqliteStore {
    fn read(
        &self,
        run: &RunId,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        let run = run.clone();
        self.reading(move |inner| read_events(&*inner.reader()?, &run, from_seq))
    }
    fn subscribe(&self, run: &RunId, from_seq: u64) -> Box<dyn EventFeed> {
        // Subscribed before the first read of the file, so nothing committed in between is
        // missed (what both hold is given once, by sequence).
        let local = self.taps.as_ref().map(|taps| {
            let pushed = taps
                .runs()
                .entry(run.clone())
                .or_insert_with(|| broadcast::channel(TAP_CAPACITY).0)
                .subscribe();
            Local {
                pushed,
                foreign: taps.foreign.subscribe(),
                received: None,
                must_read: true,
                committed: VecDeque::new(),
            }
        });
        Box::new(Feed {
            path: self.inner.path.clone(),
            conn: Arc::new(Mutex::new(None)),
            followed: Followed::new(run, from_seq),
            seen_version: None,
            local,
            since_commit: None,
        })
    }
}

impl RunsIndex for SqliteStore {
    fn runs(&self, query: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>> {
        self.reading(move |inner| list_runs(&*inner.reader()?, &query))
    }
    fn summary(&self, run: &RunId) -> BoxFuture<'_, Result<Option<RunSummary>, StoreError>> {
        let run = run.clone();
        self.reading(move |inner| summary_of(&*inner.reader()?, &run))
    }
}

impl ApprovalsIndex for SqliteStore {
    fn pending_approvals(
        &self,
        run: Option<&RunId>,
    ) -> BoxFuture<'_, Result<Vec<PendingApproval>, StoreError>> {
        let run = run.cloned();
        self.reading(move |inner| pending_of(&*inner.reader()?, run.as_ref()))
    }
}

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
            Ok(())
        })
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
    fn heartbeat(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<(), StoreError>> {
        let (run, driver) = (run.clone(), driver.clone());
        self.writing(move |inner| {
            inner
                .reader()?
                .execute(
                    "UPDATE runs SET heartbeat_ms = ?3 WHERE run_id = ?1 AND holder = ?2 AND epoch = ?4",
                    params![
                        run.0,
                        &*driver.holder,
                        sql_int(driver.now_ms)?,
                        sql_int(driver.epoch)?
                    ],
                )
                .map_err(io)?;
            Ok(())
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
}

impl SpecCatalog for SqliteStore {
    fn catalog_add(
        &self,
        entry: warrant_core::ports::CatalogEntry,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.writing(move |inner| {
            let body = serde_json::to_string(&entry).map_err(io)?;
            let conn = inner.reader()?;
            let added = conn
                .execute(
                    "INSERT OR IGNORE INTO catalog (id, digest, added_at_ms, body)
                     VALUES (?1, ?2, ?3, ?4)",
                    params![entry.id, entry.digest, sql_int(entry.added_at_ms)?, body],
                )
                .map_err(io)?;
            if added == 0 {
                conn.execute(
                    "UPDATE catalog SET retired_at_ms = NULL WHERE id = ?1 AND digest = ?2",
                    params![entry.id, entry.digest],
                )
                .map_err(io)?;
            }
            Ok(added > 0)
        })
    }
    fn catalog(
        &self,
        id: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<warrant_core::ports::CatalogEntry>, StoreError>> {
        let id = id.map(str::to_owned);
        self.reading(move |inner| {
            let conn = inner.reader()?;
            // A store no build of this catalog has written to has none.
            let present: bool = conn
                .query_row(
                    "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'catalog'",
                    [],
                    |r| r.get(0),
                )
                .map_err(io)?;
            if !present {
                return Ok(Vec::new());
            }
            let mut stmt = conn
                .prepare(
                    "SELECT body, retired_at_ms FROM catalog WHERE ?1 IS NULL OR id = ?1
                     ORDER BY added_at_ms DESC, rowid DESC",
                )
                .map_err(io)?;
            let rows = stmt
                .query_map(params![id], |r| {
                    Ok((r.get::<_, String>(0)?, column_u64_opt(r, 1)?))
                })
                .map_err(io)?;
            let mut out = Vec::new();
            for row in rows {
                let (body, retired) = row.map_err(io)?;
                let mut entry: warrant_core::ports::CatalogEntry =
                    serde_json::from_str(&body).map_err(io)?;
                entry.retired_at_ms = retired;
                out.push(entry);
            }
            Ok(out)
        })
    }
    fn catalog_retire(
        &self,
        id: &str,
        digest: Option<&str>,
        at_ms: u64,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        let (id, digest) = (id.to_owned(), digest.map(str::to_owned));
        self.writing(move |inner| {
            let n = inner
                .reader()?
                .execute(
                    "UPDATE catalog SET retired_at_ms = ?3
                     WHERE id = ?1 AND (?2 IS NULL OR digest = ?2) AND retired_at_ms IS NULL",
                    params![id, digest, sql_int(at_ms)?],
                )
                .map_err(io)?;
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
    }
}

impl IdempotencyKeys for SqliteStore {
    fn idempotency_get(
        &self,
        tenant: &str,
        key: &str,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<Option<IdempotencyRecord>, StoreError>> {
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        self.reading(move |inner| {
            let conn = inner.reader()?;
            // A store of an older schema opened to read has no keys.
            if !has_column(&conn, "idempotency", "run_id") {
                return Ok(None);
            }
            Ok(idempotency_of(&conn, &tenant, &key)?.filter(|r| !r.expired(now_ms)))
        })
    }
    fn idempotency_put(
        &self,
        record: IdempotencyRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<IdempotencyRecord, StoreError>> {
        self.writing(move |inner| {
            let conn = inner.reader()?;
            let now = sql_int(now_ms)?;
            let created = sql_int(record.created_at_ms)?;
            let expires = sql_int(record.expires_at_ms)?;
            // One write transaction: the purge, the insert-if-absent and the read of what is
            // held, so no other process's put or purge falls between them.
            let tx = rusqlite::Transaction::new_unchecked(
                &conn,
                rusqlite::TransactionBehavior::Immediate,
            )
            .map_err(io)?;
            tx.prepare_cached(
                "DELETE FROM idempotency WHERE rowid IN
                     (SELECT rowid FROM idempotency WHERE expires_at_ms <= ?1 LIMIT ?2)",
            )
            .and_then(|mut purge| {
                purge.execute(params![
                    now,
                    i64::try_from(IDEMPOTENCY_PURGE_MAX).unwrap_or(i64::MAX)
                ])
            })
            .map_err(io)?;
            // Kept when the key is free, or its record expired; else left as it is.
            tx.prepare_cached(
                "INSERT INTO idempotency
                     (tenant, key, digest, run_id, created_at_ms, expires_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (tenant, key) DO UPDATE SET
                     digest = excluded.digest, run_id = excluded.run_id,
                     created_at_ms = excluded.created_at_ms,
                     expires_at_ms = excluded.expires_at_ms
                 WHERE idempotency.expires_at_ms <= ?7",
            )
            .and_then(|mut put| {
                put.execute(params![
                    record.tenant,
                    record.key,
                    record.digest,
                    record.run_id.0,
                    created,
                    expires,
                    now
                ])
            })
            .map_err(io)?;
            let held = idempotency_of(&tx, &record.tenant, &record.key)?.ok_or_else(|| {
                StoreError::Io(format!(
                    "the idempotency key `{}` of tenant `{}` was kept but is not there",
                    record.key, record.tenant
                ))
            })?;
            tx.commit().map_err(io)?;
            Ok(held)
        })
    }
}

impl StoreHealth for SqliteStore {
    fn commit_latency(&self) -> Option<warrant_core::metrics::HistogramSnapshot> {
        self.taps.as_ref().map(|t| t.commits.snapshot())
    }
    fn checkpoint_failures(&self) -> Option<warrant_core::ports::CheckpointFailures> {
        self.taps.as_ref().map(|t| t.checkpoint_failures.snapshot())
    }
}

/// A follower of one run. Of a store open for writing ([`Local`]): handed this store's
/// commits by the writer, it reads the file only at its start, after a gap, and after another
/// process's commit. Of a read-only store: it reads the log when SQLite's `data_version` shows
/// a commit (looked at every `FOLLOW_POLL_MS`), and never otherwise.
struct Feed {
    path: PathBuf,
    /// Its own read-only connection, opened on first use.
    conn: Arc<Mutex<Option<Connection>>>,
    followed: Followed,
    /// `data_version` at the last read of the log.
    seen_version: Option<i64>,
    local: Option<Local>,
    /// For the event given last, when it came handed over: how long since its commit then.
    since_commit: Option<std::time::Duration>,
}

/// What a follower in the writer's process is told.
struct Local {
    /// The run's events as this store commits them.
    pushed: broadcast::Receiver<Handed>,
    /// Bumped when the writer saw another connection commit.
    foreign: watch::Receiver<u64>,
    /// An event taken while waiting, not yet given.
    received: Option<Handed>,
    /// When the events taken and not yet given were committed, by sequence.
    committed: VecDeque<(u64, warrant_core::metrics::Stopwatch)>,
    /// The file holds what was not handed over: the feed's start, a gap, a foreign commit.
    must_read: bool,
}

impl Local {
    /// Moves the handed-over events that continue `followed` into it; whether there were any.
    /// One past the next sequence expected, or events dropped for a reader that fell behind,
    /// means the file must be read.
    fn take(&mut self, followed: &mut Followed) -> bool {
        let mut next = followed.next;
        let mut took = Vec::new();
        loop {
            let event = match self.received.take() {
                Some(e) => e,
                None => match self.pushed.try_recv() {
                    Ok(e) => e,
                    Err(broadcast::error::TryRecvError::Empty) => break,
                    Err(broadcast::error::TryRecvError::Lagged(_)) => {
                        self.must_read = true;
                        continue;
                    }
                    Err(broadcast::error::TryRecvError::Closed) => {
                        self.must_read = true;
                        break;
                    }
                },
            };
            let (event, committed) = event;
            match event.event.seq.cmp(&next) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => {
                    next += 1;
                    self.committed.push_back((event.event.seq, committed));
                    took.push(event);
                }
                std::cmp::Ordering::Greater => self.must_read = true,
            }
        }
        followed.fetched(took)
    }

    /// How long ago event `seq` was committed, if it was handed over (forgetting it and any
    /// before it).
    fn since_commit(&mut self, seq: u64) -> Option<std::time::Duration> {
        while let Some(&(at_seq, at)) = self.committed.front() {
            if at_seq > seq {
                break;
            }
            self.committed.pop_front();
            if at_seq == seq {
                return Some(at.elapsed());
            }
        }
        None
    }
}

/// What one look at the file found: the run's new events (when something was committed since
/// `seen`), the `data_version`, and the run's status.
type Look = (Option<Vec<StoredEvent>>, i64, Option<RunStatus>);

fn look(
    path: &Path,
    slot: &Mutex<Option<Connection>>,
    run: &RunId,
    from_seq: u64,
    seen: Option<i64>,
) -> Result<Look, StoreError> {
    let mut slot = slot
        .lock()
        .map_err(|_| StoreError::Io("follower connection poisoned".into()))?;
    if slot.is_none() {
        *slot = Some(read_only_connection(path)?.0);
    }
    let Some(conn) = slot.as_ref() else {
        return Err(StoreError::Io("no follower connection".into()));
    };
    let version = data_version(conn)?;
    if seen == Some(version) {
        return Ok((None, version, None));
    }
    let events = read_events(conn, run, from_seq)?;
    let status = summary_of(conn, run)?.map(|s| s.status);
    Ok((Some(events), version, status))
}

impl Feed {
    /// Reads the run's log from the next sequence (unless `seen` shows nothing was committed
    /// since the last read): `Some(true)` when it found events, `Some(false)` when more can
    /// come, `None` when the run ended before the sequence asked for.
    async fn read(&mut self, seen: Option<i64>) -> Result<Option<bool>, StoreError> {
        let (path, slot) = (self.path.clone(), self.conn.clone());
        let (run, from) = (self.followed.run.clone(), self.followed.next);
        let (events, version, status) =
            tokio::task::spawn_blocking(move || look(&path, &slot, &run, from, seen))
                .await
                .map_err(|e| StoreError::Io(format!("a store read stopped: {e}")))??;
        self.seen_version = Some(version);
        let Some(events) = events else {
            return Ok(Some(false));
        };
        if self.followed.fetched(events) {
            return Ok(Some(true));
        }
        Ok(self.followed.more_can_come(status)?.then_some(false))
    }
}

impl EventFeed for Feed {
    fn since_commit(&self) -> Option<std::time::Duration> {
        self.since_commit
    }

    fn next(&mut self) -> BoxFuture<'_, Result<Option<StoredEvent>, StoreError>> {
        Box::pin(async move {
            let pause = std::time::Duration::from_millis(FOLLOW_POLL_MS);
            loop {
                match self.followed.step() {
                    FollowStep::Give(e) => {
                        self.since_commit = self
                            .local
                            .as_mut()
                            .and_then(|l| l.since_commit(e.event.seq));
                        return Ok(Some(e));
                    }
                    FollowStep::End => return Ok(None),
                    FollowStep::Fetch => {}
                }
                let Some(local) = self.local.as_mut() else {
                    // A read-only store: look at the file now and then.
                    match self.read(self.seen_version).await? {
                        Some(true) => continue,
                        Some(false) => tokio::time::sleep(pause).await,
                        None => return Ok(None),
                    }
                    continue;
                };
                if local.take(&mut self.followed) {
                    continue;
                }
                if local.must_read {
                    local.must_read = false;
                    local.foreign.borrow_and_update();
                    match self.read(None).await? {
                        Some(true) => continue,
                        Some(false) => {}
                        None => return Ok(None),
                    }
                }
                let Some(local) = self.local.as_mut() else {
                    continue;
                };
                tokio::select! {
                    pushed = local.pushed.recv() => match pushed {
                        Ok(e) => local.received = Some(e),
                        Err(broadcast::error::RecvError::Lagged(_)) => local.must_read = true,
                        // The store was dropped: only other processes' commits remain.
                        Err(broadcast::error::RecvError::Closed) => self.local = None,
                    },
                    changed = local.foreign.changed() => {
                        local.must_read = true;
                        if changed.is_err() {
                            self.local = None;
                        }
                    }
                }
            }
        })
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

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]
mod tests {
    use super::*;
    use crate::contract::started;

    /// "unable to open database file" is said with the file and the reason: a folder missing,
    /// a folder that cannot be written (checked only where the permission holds: not as root).
    #[test]
    fn a_store_that_cannot_be_opened_is_named_with_the_reason() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let sqlite = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            None,
        );
        let gone = dir.path().join("gone").join("w.db");
        let said = cannot_open(&gone, &sqlite).to_string();
        assert!(
            said.contains(&format!("the store `{}`", gone.display())),
            "{said}"
        );
        assert!(
            said.contains("the folder") && said.contains("does not exist"),
            "{said}"
        );
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        let path = locked.join("w.db");
        let err = SqliteStore::open(&path, Durability::Fsync).err();
        if probe_create(&locked.join("probe")).is_some() {
            let said = err.unwrap().to_string();
            assert!(
                said.contains(&format!("cannot open the store `{}`", path.display())),
                "{said}"
            );
            assert!(said.contains("it cannot be created in"), "{said}");
            assert!(said.to_lowercase().contains("permission denied"), "{said}");
        }
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A directory is not a store file.
        for said in [
            SqliteStore::open(dir.path(), Durability::Fsync)
                .err()
                .unwrap(),
            SqliteStore::open_read_only(dir.path()).err().unwrap(),
        ] {
            assert!(
                said.to_string()
                    .contains("is a directory, not a store file"),
                "{said}"
            );
        }
    }

    fn cancel_reads(store: &SqliteStore) -> u64 {
        store.inner.cancels.lock().unwrap().reads
    }

    /// A thousand runs finding the cancellation snapshot stale at once cost one or two table
    /// reads (a read begun after a question answers it), and each still gets a fresh answer.
    #[tokio::test(flavor = "current_thread")]
    async fn runs_asking_at_once_share_a_cancellation_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("w.db"), Durability::Fsync).unwrap();
        let runs: Vec<RunId> = (0..200).map(|i| RunId(format!("r{i}"))).collect();
        for run in &runs {
            store
                .append(run, 0, vec![started(&run.0)], None)
                .await
                .unwrap();
        }
        let ask_all = || crate::together(runs.iter().map(|r| store.cancel_request(r)).collect());
        let answers = ask_all().await;
        assert!(answers.iter().all(|a| matches!(a, Ok(None))));
        let first = cancel_reads(&store);
        assert!((1..=2).contains(&first), "{first} reads");

        let ask = CancelRequest {
            by: "alice".into(),
            reason: "stop".into(),
            close: false,
        };
        store.request_cancel(&runs[7], ask.clone()).await.unwrap();
        // Once the snapshot is stale, every answer comes from a read begun after it was asked.
        tokio::time::sleep(std::time::Duration::from_millis(CANCEL_POLL_MS + 20)).await;
        let answers = ask_all().await;
        for (run, answer) in runs.iter().zip(answers) {
            let want = (run == &runs[7]).then(|| ask.clone());
            assert_eq!(answer.unwrap(), want, "{run}");
        }
        let second = cancel_reads(&store) - first;
        assert!((1..=2).contains(&second), "{second} reads");
    }

    /// Past `due` pages the writer's commits ring the checkpointer, which copies the WAL back
    /// into the file; past `stall` the writer waits for a copy. However the two threads meet,
    /// the WAL never holds much more than `stall`, and every committed row is read back.
    #[test]
    fn the_wal_is_copied_back_beside_the_writer_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut writer = open_connection(&path, Durability::ProcessCrash).unwrap();
        writer
            .execute_batch("CREATE TABLE t (x BLOB NOT NULL)")
            .unwrap();
        // In pages (of SQLite's 4 KiB): 128 KiB and 1 MiB.
        let (due, stall) = (32, 256);
        let failures = Arc::new(FailedCopies::default());
        start_checkpointer(
            &path,
            Durability::ProcessCrash,
            &mut writer,
            (due, stall),
            failures.clone(),
        )
        .unwrap();
        let rows = 1_600;
        for _ in 0..rows {
            writer
                .execute("INSERT INTO t (x) VALUES (zeroblob(3000))", [])
                .unwrap();
        }
        let page: i64 = writer
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        let frame = page.unsigned_abs() + 24;
        let wal = std::fs::metadata(dir.path().join("c.db-wal"))
            .unwrap()
            .len();
        // The WAL's extent: at most `stall` pages and the commit that crossed it (a row's leaf
        // and the pages above it in the table's tree: a few), and its header.
        let bound = (stall.unsigned_abs() + 8) * frame + 32;
        assert!(wal <= bound, "WAL of {wal} bytes, bound {bound}");
        // Nearly 5 MB were committed: most of it was copied back into the file.
        let file = std::fs::metadata(&path).unwrap().len();
        assert!(file > 4 * 1024 * 1024, "the file holds {file} bytes");
        let count: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, rows);
        assert_eq!(failures.snapshot().count, 0);
    }

    /// A copy of the WAL that fails is counted (here: on a connection that may not write the
    /// file); one that finds another copy under way is not.
    #[test]
    fn a_failed_copy_of_the_wal_is_counted_and_a_busy_one_is_not() {
        use rusqlite::wal::CheckpointMode;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        let writer = open_connection(&path, Durability::ProcessCrash).unwrap();
        writer
            .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        let failures = FailedCopies::default();
        count_failed_copy(
            writer.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE),
            &failures,
        );
        assert_eq!(failures.snapshot().count, 0);
        // A commit left in the WAL, for a connection that may only read to copy back.
        writer.execute_batch("INSERT INTO t VALUES (2);").unwrap();
        let reader = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
        let refused = reader.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE);
        assert!(refused.is_err(), "{refused:?}");
        count_failed_copy(refused, &failures);
        let failed = failures.snapshot();
        assert_eq!(failed.count, 1);
        // What it failed with is kept, to say where the WAL stays.
        let last = failed.last.unwrap();
        assert!(last.contains("I/O"), "{last}");
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        count_failed_copy::<()>(Err(busy), &failures);
        assert_eq!(failures.snapshot().count, 1);
    }
}

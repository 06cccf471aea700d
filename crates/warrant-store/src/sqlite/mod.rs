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

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::{broadcast, oneshot, watch};
use warrant_core::event::{Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::notice::Notice;
use warrant_core::ports::BoxFuture;
use warrant_core::status::RunStatus;
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, LogReader, LogWriter, RunsIndex, SpecCatalog, StoreHealth,
};
use warrant_core::store::{
    CancelRequest, Claim, Driver, EventFeed, IDEMPOTENCY_PURGE_MAX, IdempotencyRecord,
    PendingApproval, RunPage, RunQuery, RunSummary, StoreError,
};

use crate::{ApprovalChange, Followed};

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
/// 7: the `notices` table, the outbox of notices each append writes in its transaction
/// (`NoticeOutbox`); the `schedules` and `ticks` tables (`Schedules`); the `grants` table
/// (`Grants`).
pub const SCHEMA_VERSION: i64 = 7;

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

// After the macro above: the parts of the store use it.
mod follow;
mod grants;
mod leases;
mod notices;
mod read;
mod schedules;
mod schema;
mod writer;

use follow::*;
use read::*;
use schema::*;
use writer::*;

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
    /// When the run wakes, when the append leaves it sleeping.
    wake_at_ms: Option<u64>,
    /// What the append changes in the approvals index and the outbox, when anything (most
    /// appends change neither: nothing is allocated, and the request stays small).
    indexed: Option<Box<Indexed>>,
    driver: Option<Driver>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// An append's changes to the approvals index and the outbox of notices.
struct Indexed {
    approvals: Vec<ApprovalChange>,
    notices: Vec<Notice>,
}

impl Indexed {
    fn of(approvals: Vec<ApprovalChange>, notices: Vec<Notice>) -> Option<Box<Indexed>> {
        (!approvals.is_empty() || !notices.is_empty())
            .then(|| Box::new(Indexed { approvals, notices }))
    }
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
    /// Bumped by this process's requests to cancel: what waiting runs wait on.
    cancel_asked: watch::Sender<u64>,
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
                 last_position INTEGER, wake_at_ms INTEGER);
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
                conn.execute_batch(NOTICES_TABLE).map_err(io)?;
                conn.execute_batch(SCHEDULES_TABLES).map_err(io)?;
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
                cancel_asked: watch::Sender::new(0),
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
                cancel_asked: watch::Sender::new(0),
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
            .is_some_and(|t| t >= since && snap.stale_before.is_none_or(|s| t >= s))
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
            wake_at_ms: facts.wake_at_ms,
            indexed: Indexed::of(facts.approvals, facts.notices),
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
    use warrant_core::store::Leases;

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

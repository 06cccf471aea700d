//! The PostgreSQL store, for fleets: any number of servers and workers on any number of
//! machines share one database.
//!
//! Appends go to the process's writer tasks (three connections taking turns), each of which
//! commits every pending append in one transaction (group commit): it locks the batch's runs
//! (`FOR UPDATE`, in one order, so no two batches deadlock), checks each append's lease epoch
//! and expected sequence against the rows it locked, and writes the events, the runs' new
//! state and the index of pending approvals in one pipelined round trip whatever the batch's
//! size.
//!
//! Every commit that moves runs notifies (`LISTEN`/`NOTIFY`, the batch's run ids in one
//! payload): followers of those runs wake, and workers wake when a run became ready to claim.
//! A process keeps one listening connection and reconnects it when it drops; while it is
//! down, followers and cancellation checks fall back to polling at a bound.
//!
//! A process is present by a session-level advisory lock its listening connection holds (a
//! key of its own, taken at open and again at each reconnection): the lease of each run it
//! takes names that key, so when the process dies (its connection closes and the database lets
//! the lock go) another worker takes its runs over at its next look, without waiting for the
//! lease to lapse.
//!
//! Workers take runs with `FOR UPDATE SKIP LOCKED` ([`Leases::claim_ready`](warrant_core::store::Leases::claim_ready)): a run is
//! taken by one claimant, and two claimants never wait for each other.
//!
//! The schema is versioned in `warrant_meta` and changed only by [`PostgresStore::migrate`]
//! (`warrant store migrate`): opening a database whose schema is older asks for the migration,
//! one whose schema is newer is refused. Every table is named `warrant_*`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::{Client, NoTls};
use warrant_core::event::{self, Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::status::RunStatus;
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, LogReader, LogWriter, RunsIndex, SpecCatalog, StoreHealth,
};
use warrant_core::store::{
    CancelRequest, Driver, EventFeed, IDEMPOTENCY_PURGE_MAX, IdempotencyRecord, PendingApproval,
    RunPage, RunQuery, RunSummary, StoreError,
};

use crate::{ApprovalChange, Followed, url_without_password as shown};

/// The columns of a run's summary, in `summary_row`'s order. A holder known to be gone
/// (`holder_gone!`) shows no heartbeat: its run is interrupted now, not when its lease lapses.
macro_rules! summary {
    () => {
        concat!(
            "run_id, spec_id, decider, status, started_at_ms, last_seq, holder, ",
            "CASE WHEN ",
            holder_gone!(),
            " THEN NULL ELSE heartbeat_ms END, epoch, note, wake_at_ms"
        )
    };
}

/// The schema this build reads and writes (3: idempotency keys; 4: the outbox of notices,
/// schedules and their ticks, standing grants, and sleeping runs' wake times; 5: the database
/// session a run's holder is present by; 6–8: one row per append, heap-only updates of runs),
/// the number of [`MIGRATIONS`].
pub const SCHEMA_VERSION: i64 = 8;

/// The advisory-lock class of presence locks (the two-key form: its keys are processes'
/// presence keys).
const PRESENCE_CLASS: i32 = 1_465_011_797;

/// Whether a run's holder is known to be gone: it took the lease with a presence key (see
/// [`PostgresStore::open`]) and no session of the database holds that key's lock any more: its
/// process died or lost its connection. Its run is then claimable at once, not after
/// `LEASE_TTL_MS`. A process that is merely stopped still holds its connection and its lock:
/// its lease lapses as before, and fencing refuses its late appends.
macro_rules! holder_gone {
    () => {
        "(presence IS NOT NULL AND presence NOT IN (SELECT objid::bigint FROM pg_locks
             WHERE locktype = 'advisory' AND classid = 1465011797 AND objsubid = 2 AND granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())))"
    };
}

// After the macros above: the parts of the store use them.
mod follow;
mod grants;
mod leases;
mod notices;
mod schedules;
mod writer;

use follow::*;
use writer::*;

/// Most append requests folded into one transaction.
const GROUP_COMMIT_MAX: usize = 1024;

/// The longest a follower or a cancellation check trusts notifications alone: past it, it
/// looks at the database itself (the listening connection may be down).
const POLL_BOUND: Duration = Duration::from_millis(500);

/// How long a lost connection is retried before an operation fails.
const RECONNECT_FOR: Duration = Duration::from_secs(30);

/// The notification channels.
const EVENTS_CHANNEL: &str = "warrant_events";
const READY_CHANNEL: &str = "warrant_ready";
const CANCELS_CHANNEL: &str = "warrant_cancels";

/// Each schema version's statements, applied in order by [`PostgresStore::migrate`].
const MIGRATIONS: &[&str] = &[
    // 1: runs (with their lease and tenant), events, pending approvals, cancellations.
    "CREATE TABLE warrant_runs (
         run_id TEXT PRIMARY KEY, recorded BIGSERIAL NOT NULL, spec_id TEXT NOT NULL,
         decider TEXT NOT NULL, tenant TEXT NOT NULL DEFAULT '', status TEXT NOT NULL,
         started_at_ms BIGINT NOT NULL, last_seq BIGINT NOT NULL, holder TEXT,
         heartbeat_ms BIGINT, epoch BIGINT NOT NULL DEFAULT 1, note TEXT);
     CREATE INDEX warrant_runs_listing ON warrant_runs (started_at_ms DESC, recorded DESC);
     CREATE INDEX warrant_runs_claimable ON warrant_runs (started_at_ms, recorded)
         WHERE status IN ('running', 'ready');
     CREATE INDEX warrant_runs_held ON warrant_runs (tenant) WHERE holder IS NOT NULL;
     CREATE TABLE warrant_events (
         position BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL, seq BIGINT NOT NULL,
         body TEXT NOT NULL, UNIQUE (run_id, seq));
     CREATE TABLE warrant_approvals (
         request TEXT PRIMARY KEY, run_id TEXT NOT NULL, tenant TEXT NOT NULL,
         requested_at_ms BIGINT NOT NULL, body TEXT NOT NULL);
     CREATE INDEX warrant_approvals_by_run ON warrant_approvals (run_id);
     CREATE INDEX warrant_approvals_by_tenant ON warrant_approvals (tenant);
     CREATE TABLE warrant_cancels (
         run_id TEXT PRIMARY KEY, by TEXT NOT NULL, reason TEXT NOT NULL);",
    // 2: the operator's catalog of specs, by id and digest.
    "CREATE TABLE warrant_catalog (
         id TEXT NOT NULL, digest TEXT NOT NULL, added_at_ms BIGINT NOT NULL,
         retired_at_ms BIGINT, body TEXT NOT NULL, PRIMARY KEY (id, digest));",
    // 3: each tenant's `Idempotency-Key`s and the runs they start, shared by the fleet.
    "CREATE TABLE warrant_idempotency (
         tenant TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, run_id TEXT NOT NULL,
         created_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL,
         PRIMARY KEY (tenant, key));
     CREATE INDEX warrant_idempotency_by_expiry ON warrant_idempotency (expires_at_ms);",
    // 4: the outbox of notices, written with the appends that make them; schedules and the
    // ticks claimed; standing grants; when a sleeping run wakes.
    "ALTER TABLE warrant_runs ADD COLUMN wake_at_ms BIGINT;
     CREATE INDEX warrant_runs_sleeping ON warrant_runs (wake_at_ms) WHERE status = 'sleeping';
     CREATE TABLE warrant_notices (
         id TEXT PRIMARY KEY, run_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL,
         at_ms BIGINT NOT NULL, state TEXT NOT NULL, attempts BIGINT NOT NULL DEFAULT 0,
         next_at_ms BIGINT NOT NULL, last_error TEXT, delivered_to TEXT NOT NULL DEFAULT '[]',
         settled_at_ms BIGINT);
     CREATE INDEX warrant_notices_due ON warrant_notices (next_at_ms) WHERE state = 'pending';
     CREATE INDEX warrant_notices_by_time ON warrant_notices (at_ms);
     CREATE TABLE warrant_schedules (id TEXT PRIMARY KEY, body TEXT NOT NULL);
     CREATE TABLE warrant_ticks (
         schedule TEXT NOT NULL, at_ms BIGINT NOT NULL, run_id TEXT, state TEXT NOT NULL,
         note TEXT, PRIMARY KEY (schedule, at_ms));
     CREATE TABLE warrant_grants (
         id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
         revoked BOOLEAN NOT NULL DEFAULT false, body TEXT NOT NULL);
     CREATE INDEX warrant_grants_by_tenant ON warrant_grants (tenant, created_at_ms);",
    // 5: the presence key of the process that holds a run's lease (see `presence`).
    "ALTER TABLE warrant_runs ADD COLUMN presence INTEGER;",
    // 6: room in each page of runs for the next version of its rows: every commit rewrites
    // a run's row (its last sequence, its lease), and with the page full that was a new
    // tuple elsewhere with an entry in each of the table's indexes (five WAL records a
    // step); with room, a heap-only update (one).
    "ALTER TABLE warrant_runs SET (fillfactor = 50);",
    // 7: an event's global position is drawn from its sequence, unique by construction and
    // never looked up: its index only cost every append a second index entry. Events are
    // found by run and sequence (their unique key).
    "ALTER TABLE warrant_events DROP CONSTRAINT warrant_events_pkey;",
    // 8: a row holds one append's events (`n_events` of them from `seq`, their bodies
    // separated by newlines), a third of the rows a step wrote; its position is its first
    // event's, and the events after it take the positions after that, which the sequence
    // leaves free (an append of more events is split into rows of at most that many).
    "ALTER TABLE warrant_events ADD COLUMN n_events INTEGER NOT NULL DEFAULT 1;
     ALTER SEQUENCE warrant_events_position_seq INCREMENT BY 1024;",
];

/// The most events one row of `warrant_events` holds (the position sequence's increment).
const EVENTS_PER_ROW: usize = 1024;

/// A store on a PostgreSQL database.
pub struct PostgresStore {
    inner: Arc<Pg>,
    writer: mpsc::UnboundedSender<Request>,
    /// Dropped with the store: its listening task stops.
    _stop: watch::Sender<()>,
}

struct Pg {
    config: tokio_postgres::Config,
    /// The URL without its password, for messages.
    shown: String,
    /// The connection reads and single-statement writes share (queries pipeline on it).
    reader: tokio::sync::Mutex<Option<Arc<Conn>>>,
    /// Per followed run: bumped when the run moves.
    moved: Mutex<HashMap<RunId, watch::Sender<u64>>>,
    /// Bumped when a run may have become claimable.
    ready: watch::Sender<u64>,
    /// Bumped when a cancellation was requested, and when the listener (re)connects.
    cancels: watch::Sender<u64>,
    /// Whether the listening connection is up (notifications can be trusted).
    listening: watch::Sender<bool>,
    /// This process's presence key while its listening connection holds the presence lock.
    presence: watch::Sender<Option<i32>>,
    /// Cancellation answers, valid while `cancels` has not moved.
    cancel_cache: Mutex<CancelCache>,
    commits: warrant_core::metrics::Histogram,
}

#[derive(Default)]
struct CancelCache {
    version: u64,
    answers: HashMap<RunId, (Option<CancelRequest>, warrant_core::metrics::Stopwatch)>,
}

/// A row of `warrant_events` as an appender packed it: `n` events from sequence `first`, their
/// encoded bodies separated by newlines.
struct EventsRow {
    first: u64,
    n: i32,
    body: String,
}

impl EventsRow {
    /// One row of `events` (at most [`EVENTS_PER_ROW`]; an append is split into as many).
    fn packed(events: &[Arc<Event>]) -> Result<EventsRow, StoreError> {
        let first = events.first().map_or(0, |e| e.seq);
        let mut body = Vec::with_capacity(256 * events.len());
        for e in events {
            if !body.is_empty() {
                body.push(b'\n');
            }
            event::encode_append(e, &mut body);
        }
        Ok(EventsRow {
            first,
            n: i32::try_from(events.len()).map_err(io)?,
            body: String::from_utf8(body).map_err(io)?,
        })
    }
}

struct Request {
    run: RunId,
    expected: u64,
    /// How many events the append holds, and their rows.
    appended: u64,
    rows: Vec<EventsRow>,
    started: Option<crate::Started>,
    status: Option<RunStatus>,
    /// When the run wakes, when the append leaves it sleeping.
    wake_at_ms: Option<u64>,
    approvals: Vec<ApprovalChange>,
    notices: Vec<warrant_core::notice::Notice>,
    driver: Option<Driver>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

fn io(e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(e.to_string())
}

/// A database error in words: PostgreSQL's message and, where there are, its detail and hint.
fn db(e: &tokio_postgres::Error) -> StoreError {
    StoreError::Io(format!("PostgreSQL: {}", words(e)))
}

/// What went wrong, in the database's own words (`tokio_postgres` says only "db error" of an
/// error the server sent): its message, detail and hint; for a connection's failure, the
/// error with its causes (`error connecting to server: Connection refused (os error 111)`).
pub(crate) fn words(e: &tokio_postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        let mut out = d.message().to_owned();
        if let Some(detail) = d.detail() {
            out.push_str(&format!(" ({detail})"));
        }
        if let Some(hint) = d.hint() {
            out.push_str(&format!("; hint: {hint}"));
        }
        return out;
    }
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let said = cause.to_string();
        if !out.contains(&said) {
            out.push_str(&format!(": {said}"));
        }
        source = cause.source();
    }
    out
}

fn sql_int(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Io(format!("{n} is out of the store's range")))
}

fn unsigned(n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::Io(format!("the store holds a negative count ({n})")))
}

fn parse(url: &str) -> Result<tokio_postgres::Config, StoreError> {
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| StoreError::Io(format!("`{}` is not a PostgreSQL URL: {e}", shown(url))))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config.application_name("warrant");
    Ok(config)
}

async fn connect(config: &tokio_postgres::Config, shown: &str) -> Result<Client, StoreError> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| StoreError::Io(format!("cannot connect to `{shown}`: {}", words(&e))))?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the store owns its connections' tasks; each ends when its client drops"
    )]
    tokio::spawn(async move {
        let _ = connection.await;
    });
    // A process stopped inside a transaction (a writer between locking its runs' rows and
    // committing) would hold those locks for as long as it stays stopped, and no other worker
    // could take its runs over when its lease lapses: the database ends such a session well
    // before the lease does. The process's next statement then finds the connection gone
    // (that batch fails, nothing of it appended) and reconnects.
    client
        .batch_execute(&format!(
            "SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}"
        ))
        .await
        .map_err(|e| {
            StoreError::Io(format!(
                "cannot configure a connection to `{shown}`: {}",
                words(&e)
            ))
        })?;
    Ok(client)
}

/// How long a session may sit idle inside a transaction before the database ends it: half a
/// lease, so a stopped writer's row locks are gone before its lease lapses.
const IDLE_IN_TRANSACTION_MS: u64 = warrant_core::store::LEASE_TTL_MS / 2;

/// The schema version a database holds: `None` when it has no Warrant schema.
async fn schema_version(client: &Client) -> Result<Option<i64>, StoreError> {
    let exists = client
        .query_one("SELECT to_regclass('warrant_meta') IS NOT NULL", &[])
        .await
        .map_err(|e| db(&e))?;
    if !exists.get::<_, bool>(0) {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "SELECT value FROM warrant_meta WHERE key = 'schema_version'",
            &[],
        )
        .await
        .map_err(|e| db(&e))?;
    let Some(row) = row else { return Ok(None) };
    let value: String = row.get(0);
    value.parse().map(Some).map_err(|_| {
        StoreError::Io(format!(
            "the store's schema version `{value}` is not a number"
        ))
    })
}

impl PostgresStore {
    /// Brings the database at `url` to this build's schema (creating it in an empty
    /// database), in one transaction under an advisory lock so two migrations never race.
    /// Returns the versions before and after. A database of a newer schema is refused.
    pub async fn migrate(url: &str) -> Result<(i64, i64), StoreError> {
        let config = parse(url)?;
        let shown = shown(url);
        let mut client = connect(&config, &shown).await?;
        let tx = client.transaction().await.map_err(|e| db(&e))?;
        tx.execute("SELECT pg_advisory_xact_lock(1465011796)", &[])
            .await
            .map_err(|e| db(&e))?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS warrant_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        )
        .await
        .map_err(|e| db(&e))?;
        let from = match tx
            .query_opt(
                "SELECT value FROM warrant_meta WHERE key = 'schema_version'",
                &[],
            )
            .await
            .map_err(|e| db(&e))?
        {
            Some(row) => row.get::<_, String>(0).parse::<i64>().map_err(io)?,
            None => 0,
        };
        if from > SCHEMA_VERSION {
            return Err(newer(&shown, from));
        }
        for (i, step) in MIGRATIONS.iter().enumerate() {
            let version = i64::try_from(i).map_err(io)? + 1;
            if version > from {
                tx.batch_execute(step).await.map_err(|e| {
                    StoreError::Io(format!(
                        "migrating `{shown}` to schema {version}: {}",
                        db(&e)
                    ))
                })?;
            }
        }
        tx.execute(
            "INSERT INTO warrant_meta (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&SCHEMA_VERSION.to_string()],
        )
        .await
        .map_err(|e| db(&e))?;
        tx.commit().await.map_err(|e| db(&e))?;
        Ok((from, SCHEMA_VERSION))
    }

    /// Opens the store at `url` (a `postgres://` URL). The database must hold this build's
    /// schema: an empty or older one asks for `warrant store migrate`, a newer one is refused.
    /// Must be called within a tokio runtime: the store keeps tasks on it.
    pub async fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let config = parse(url)?;
        let shown = shown(url);
        let client = connect(&config, &shown).await?;
        match schema_version(&client).await? {
            None => {
                return Err(StoreError::Io(format!(
                    "`{shown}` holds no Warrant store yet: run `warrant store migrate --store '{shown}'`"
                )));
            }
            Some(v) if v < SCHEMA_VERSION => {
                return Err(StoreError::Io(format!(
                    "`{shown}` holds a Warrant store of schema {v}; this build needs {SCHEMA_VERSION}: run `warrant store migrate --store '{shown}'`"
                )));
            }
            Some(v) if v > SCHEMA_VERSION => return Err(newer(&shown, v)),
            Some(_) => {}
        }
        let inner = Arc::new(Pg {
            config,
            shown,
            reader: tokio::sync::Mutex::new(Some(Arc::new(Conn::new(client)))),
            moved: Mutex::new(HashMap::new()),
            ready: watch::Sender::new(0),
            cancels: watch::Sender::new(0),
            listening: watch::Sender::new(false),
            presence: watch::Sender::new(None),
            cancel_cache: Mutex::new(CancelCache::default()),
            commits: warrant_core::metrics::Histogram::default(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let (stop, stopped) = watch::channel(());
        // Writers connect at their first batch: a process that only reads (`warrant runs`)
        // opens no connection for them.
        for _ in 0..WRITERS {
            #[expect(
                clippy::disallowed_methods,
                reason = "the store owns its writer tasks; they end when the store is dropped"
            )]
            tokio::spawn(writer_loop(inner.clone(), rx.clone()));
        }
        #[expect(
            clippy::disallowed_methods,
            reason = "the store owns its listening task; it ends when the store is dropped"
        )]
        tokio::spawn(listen_loop(Arc::downgrade(&inner), stopped));
        Ok(PostgresStore {
            inner,
            writer: tx,
            _stop: stop,
        })
    }

    /// Makes a schema `schema` of its own in the database at `url` (dropping one of that
    /// name first) with Warrant's tables migrated into it: the store URL that uses it. For
    /// tests and benchmarks, which must not see each other's runs.
    pub async fn scratch(url: &str, schema: &str) -> Result<String, StoreError> {
        if schema.is_empty()
            || !schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(StoreError::Io(format!(
                "`{schema}` is not a schema name Warrant makes (a-z, 0-9, _)"
            )));
        }
        let config = parse(url)?;
        let client = connect(&config, &shown(url)).await?;
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .await
            .map_err(|e| db(&e))?;
        let sep = if url.contains('?') { '&' } else { '?' };
        let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
        PostgresStore::migrate(&scoped).await?;
        Ok(scoped)
    }

    /// Drops a schema [`PostgresStore::scratch`] made, with everything in it.
    pub async fn drop_scratch(url: &str, schema: &str) -> Result<(), StoreError> {
        let config = parse(url)?;
        let client = connect(&config, &shown(url)).await?;
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .await
            .map_err(|e| db(&e))
    }

    /// Whether this process is present now: its listening connection holds the presence lock
    /// the leases it takes name (so its runs are taken over at once if it dies).
    pub fn present(&self) -> bool {
        self.inner.present().is_some()
    }

    /// The URL it was opened at, without a password.
    pub fn shown(&self) -> &str {
        &self.inner.shown
    }
}

fn newer(shown: &str, v: i64) -> StoreError {
    StoreError::Io(format!(
        "`{shown}` holds a Warrant store of schema {v}, newer than this build knows ({SCHEMA_VERSION}): use a newer warrant"
    ))
}

impl Pg {
    /// This process's presence key, while its lock is held: what a lease it takes names.
    fn present(&self) -> Option<i32> {
        *self.presence.borrow()
    }

    /// The shared connection, reconnected if it dropped (retried for [`RECONNECT_FOR`]).
    async fn conn(&self) -> Result<Arc<Conn>, StoreError> {
        let mut slot = self.reader.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok(c.clone());
        }
        *slot = None;
        let c = Arc::new(Conn::new(reconnect(&self.config, &self.shown).await?));
        *slot = Some(c.clone());
        Ok(c)
    }

    fn moved(&self) -> MutexGuard<'_, HashMap<RunId, watch::Sender<u64>>> {
        self.moved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells this process's followers of `run` that it moved (nothing to do, and nothing
    /// allocated, when this process follows no run: the writer calls it for every commit).
    fn wake(&self, run: &str) {
        let moved = self.moved();
        if moved.is_empty() {
            return;
        }
        if let Some(tx) = moved.get(&RunId(run.to_owned())) {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// One statement's rows, on the shared connection (prepared once per connection); a
    /// connection lost is reconnected and the statement tried once more (every statement
    /// sent this way is safe to repeat).
    async fn query(
        &self,
        sql: &'static str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let conn = self.conn().await?;
        match conn.query(sql, params).await {
            Err(_) if conn.client.is_closed() => self.conn().await?.query(sql, params).await,
            done => done,
        }
    }
}

/// A connection and the statements prepared on it.
struct Conn {
    client: Client,
    prepared: Mutex<HashMap<&'static str, tokio_postgres::Statement>>,
}

impl Conn {
    fn new(client: Client) -> Conn {
        Conn {
            client,
            prepared: Mutex::new(HashMap::new()),
        }
    }

    async fn statement(&self, sql: &'static str) -> Result<tokio_postgres::Statement, StoreError> {
        let known = self.prepared.lock().ok().and_then(|p| p.get(sql).cloned());
        if let Some(s) = known {
            return Ok(s);
        }
        let s = self.client.prepare(sql).await.map_err(|e| db(&e))?;
        if let Ok(mut p) = self.prepared.lock() {
            p.insert(sql, s.clone());
        }
        Ok(s)
    }

    async fn query(
        &self,
        sql: &'static str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let statement = self.statement(sql).await?;
        self.client
            .query(&statement, params)
            .await
            .map_err(|e| db(&e))
    }
}

/// Connects, retrying for [`RECONNECT_FOR`] (a database restarting).
async fn reconnect(config: &tokio_postgres::Config, shown: &str) -> Result<Client, StoreError> {
    let began = warrant_core::metrics::Stopwatch::start();
    let mut pause = Duration::from_millis(50);
    loop {
        match connect(config, shown).await {
            Ok(c) => return Ok(c),
            Err(e) if began.elapsed() >= RECONNECT_FOR => return Err(e),
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// A run's status as the `status` column holds it.
fn status_named(name: &str) -> Result<RunStatus, StoreError> {
    name.parse().map_err(|e| {
        StoreError::Io(format!(
            "the runs table holds a status this build does not know: {e}"
        ))
    })
}

fn summary_row(r: &tokio_postgres::Row) -> Result<RunSummary, StoreError> {
    Ok(RunSummary {
        run_id: RunId(r.get(0)),
        spec_id: r.get(1),
        decider: r.get(2),
        status: status_named(r.get(3))?,
        started_at_ms: unsigned(r.get(4))?,
        events: unsigned(r.get(5))?,
        holder: r.get(6),
        heartbeat_ms: r.get::<_, Option<i64>>(7).map(unsigned).transpose()?,
        epoch: unsigned(r.get(8))?,
        note: r.get(9),
        wake_at_ms: r.get::<_, Option<i64>>(10).map(unsigned).transpose()?,
    })
}

/// A run's events from its rows (position, first sequence, count, bodies), from `from_seq` on.
fn decode_events(
    run: &RunId,
    rows: &[tokio_postgres::Row],
    from_seq: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut log = crate::LogRows::new(run, from_seq);
    for r in rows {
        let (position, first) = (unsigned(r.get(0))?, unsigned(r.get(1))?);
        let n = unsigned(i64::from(r.get::<_, i32>(2)))?;
        log.continues(position, first)?;
        log.push((position, first, n), r.get(3))?;
    }
    Ok(log.events)
}

impl Pg {
    async fn read(&self, run: &RunId, from_seq: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = self
            .query(
                // From the row holding `from_seq` (the last to begin at or before it) on.
                "SELECT position, seq, n_events, body FROM warrant_events WHERE run_id = $1
                   AND seq >= COALESCE((SELECT seq FROM warrant_events WHERE run_id = $1
                                        AND seq <= $2 ORDER BY seq DESC LIMIT 1), 0)
                 ORDER BY seq",
                &[&run.0, &sql_int(from_seq)?],
            )
            .await?;
        decode_events(run, &rows, from_seq)
    }

    /// The run's status alone: what a follower needs on each wake-up (no lease, no look at
    /// the holders' presence).
    async fn status(&self, run: &RunId) -> Result<Option<RunStatus>, StoreError> {
        let rows = self
            .query(
                "SELECT status FROM warrant_runs WHERE run_id = $1",
                &[&run.0],
            )
            .await?;
        rows.first().map(|r| status_named(r.get(0))).transpose()
    }

    async fn summary(&self, run: &RunId) -> Result<Option<RunSummary>, StoreError> {
        let rows = self
            .query(
                concat!(
                    "SELECT ",
                    summary!(),
                    " FROM warrant_runs WHERE run_id = $1"
                ),
                &[&run.0],
            )
            .await?;
        rows.first().map(summary_row).transpose()
    }
}

impl LogWriter for PostgresStore {
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let facts = match crate::appended_facts(run, &events, expected_seq) {
            Ok(facts) => facts,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let rows = match events
            .chunks(EVENTS_PER_ROW)
            .map(EventsRow::packed)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(rows) => rows,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let (reply, done) = oneshot::channel();
        let sent = self
            .writer
            .send(Request {
                run: run.clone(),
                expected: expected_seq,
                appended: events.len() as u64,
                rows,
                started: facts.started,
                status: facts.status,
                wake_at_ms: facts.wake_at_ms,
                approvals: facts.approvals,
                notices: facts.notices,
                driver: driver.cloned(),
                reply,
            })
            .is_ok();
        crate::writer_reply(sent, done)
    }
}

impl LogReader for PostgresStore {
    fn read(
        &self,
        run: &RunId,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        let run = run.clone();
        Box::pin(async move { self.inner.read(&run, from_seq).await })
    }
    fn subscribe(&self, run: &RunId, from_seq: u64) -> Box<dyn EventFeed> {
        // Subscribed before the first read, so nothing committed in between is missed.
        let moved = self
            .inner
            .moved()
            .entry(run.clone())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe();
        Box::new(Feed {
            pg: self.inner.clone(),
            followed: Followed::new(run, from_seq),
            moved,
        })
    }
}

impl RunsIndex for PostgresStore {
    fn runs(&self, query: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>> {
        Box::pin(async move {
            // One more than asked, to tell whether there is a next page.
            let limit: Option<i64> = (query.limit > 0)
                .then(|| i64::try_from(query.limit).map_or(i64::MAX, |l| l.saturating_add(1)));
            let since = query.since_ms.map(sql_int).transpose()?;
            let after_at = query
                .after
                .as_ref()
                .map(|c| sql_int(c.started_at_ms))
                .transpose()?;
            let after_id = query.after.as_ref().map(|c| c.run_id.0.clone());
            let rows = self
                .inner
                .query(
                    concat!(
                        "SELECT ",
                        summary!(),
                        " FROM warrant_runs
                         WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR spec_id = $2)
                           AND ($3::text IS NULL OR starts_with(run_id, $3))
                           AND ($4::bigint IS NULL OR started_at_ms >= $4)
                           AND ($5::bigint IS NULL OR started_at_ms < $5 OR (started_at_ms = $5
                                AND recorded < (SELECT recorded FROM warrant_runs WHERE run_id = $6)))
                           AND ($8::bigint IS NULL OR (status = 'sleeping' AND wake_at_ms <= $8))
                         ORDER BY started_at_ms DESC, recorded DESC LIMIT $7"
                    ),
                    &[
                        &query.status.map(RunStatus::name),
                        &query.spec_id,
                        &query.id_prefix,
                        &since,
                        &after_at,
                        &after_id,
                        &limit,
                        &query.due_by.map(sql_int).transpose()?,
                    ],
                )
                .await?;
            let all = rows
                .iter()
                .map(summary_row)
                .collect::<Result<Vec<_>, _>>()?;
            let unfiltered = RunQuery {
                after: None,
                ..query.clone()
            };
            Ok(crate::page(all, &unfiltered, |_| true))
        })
    }
    fn summary(&self, run: &RunId) -> BoxFuture<'_, Result<Option<RunSummary>, StoreError>> {
        let run = run.clone();
        Box::pin(async move { self.inner.summary(&run).await })
    }
    fn tenant_spend(
        &self,
        tenant: &str,
        since_ms: u64,
    ) -> BoxFuture<'_, Result<Option<(u64, u64)>, StoreError>> {
        let tenant = tenant.to_owned();
        Box::pin(async move {
            let since = i64::try_from(since_ms).map_err(io)?;
            // The runs not ended, and those started in the last day: a run that ran longer
            // and ended within the window is not counted.
            let rows = self
                .inner
                .query(
                    "SELECT COUNT(*) FILTER (WHERE b->>'type' = 'call_started'),
                            COALESCE(SUM(COALESCE((b #>> '{usage,input_tokens}')::BIGINT, 0)
                                       + COALESCE((b #>> '{usage,output_tokens}')::BIGINT, 0))
                                     FILTER (WHERE b->>'type' = 'decided'), 0)::BIGINT
                     FROM warrant_runs r JOIN warrant_events e ON e.run_id = r.run_id,
                          LATERAL regexp_split_to_table(e.body, E'\\n') AS t(text),
                          LATERAL (SELECT t.text::JSONB AS b) j
                     WHERE r.tenant = $1
                       AND (r.status IN ('running', 'waiting', 'ready')
                            OR r.started_at_ms >= $2::BIGINT - 86400000)
                       AND (b->>'at_ms')::BIGINT >= $2::BIGINT",
                    &[&tenant, &since],
                )
                .await?;
            let row = rows.first().ok_or_else(|| io("no answer"))?;
            let calls: i64 = row.get(0);
            let tokens: i64 = row.get(1);
            Ok(Some((
                u64::try_from(calls).unwrap_or(0),
                u64::try_from(tokens).unwrap_or(0),
            )))
        })
    }
}

impl ApprovalsIndex for PostgresStore {
    fn pending_approvals(
        &self,
        run: Option<&RunId>,
    ) -> BoxFuture<'_, Result<Vec<PendingApproval>, StoreError>> {
        let run = run.map(|r| r.0.clone());
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "SELECT body FROM warrant_approvals WHERE ($1::text IS NULL OR run_id = $1)
                     ORDER BY requested_at_ms, request",
                    &[&run],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    serde_json::from_str(r.get::<_, &str>(0)).map_err(|e| {
                        StoreError::Io(format!("a pending approval does not decode: {e}"))
                    })
                })
                .collect()
        })
    }
}

impl SpecCatalog for PostgresStore {
    fn catalog_add(
        &self,
        entry: warrant_core::ports::CatalogEntry,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let body = serde_json::to_string(&entry).map_err(io)?;
            let added = i64::try_from(entry.added_at_ms).map_err(io)?;
            let rows = self
                .inner
                .query(
                    "INSERT INTO warrant_catalog (id, digest, added_at_ms, body)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (id, digest) DO UPDATE SET retired_at_ms = NULL
                     RETURNING (xmax = 0)",
                    &[&entry.id, &entry.digest, &added, &body],
                )
                .await?;
            Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
        })
    }
    fn catalog(
        &self,
        id: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<warrant_core::ports::CatalogEntry>, StoreError>> {
        let id = id.map(str::to_owned);
        Box::pin(async move {
            let rows = self
                .inner
                .query(
                    "SELECT body, retired_at_ms FROM warrant_catalog
                     WHERE $1::TEXT IS NULL OR id = $1 ORDER BY added_at_ms DESC, digest",
                    &[&id],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    let mut entry: warrant_core::ports::CatalogEntry =
                        serde_json::from_str(r.get::<_, &str>(0)).map_err(io)?;
                    entry.retired_at_ms = r
                        .get::<_, Option<i64>>(1)
                        .map(|t| u64::try_from(t).unwrap_or(0));
                    Ok(entry)
                })
                .collect()
        })
    }
    fn catalog_retire(
        &self,
        id: &str,
        digest: Option<&str>,
        at_ms: u64,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        let (id, digest) = (id.to_owned(), digest.map(str::to_owned));
        Box::pin(async move {
            let at = i64::try_from(at_ms).map_err(io)?;
            let rows = self
                .inner
                .query(
                    "UPDATE warrant_catalog SET retired_at_ms = $3
                     WHERE id = $1 AND ($2::TEXT IS NULL OR digest = $2) AND retired_at_ms IS NULL
                     RETURNING id",
                    &[&id, &digest, &at],
                )
                .await?;
            Ok(u64::try_from(rows.len()).unwrap_or(u64::MAX))
        })
    }
}

impl IdempotencyKeys for PostgresStore {
    fn idempotency_get(
        &self,
        tenant: &str,
        key: &str,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<Option<IdempotencyRecord>, StoreError>> {
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        Box::pin(async move {
            let now = sql_int(now_ms)?;
            let rows = self
                .inner
                .query(
                    "SELECT digest, run_id, created_at_ms, expires_at_ms FROM warrant_idempotency
                     WHERE tenant = $1 AND key = $2 AND expires_at_ms > $3",
                    &[&tenant, &key, &now],
                )
                .await?;
            rows.first()
                .map(|r| idempotency_row(r, &tenant, &key))
                .transpose()
        })
    }
    fn idempotency_put(
        &self,
        record: IdempotencyRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<IdempotencyRecord, StoreError>> {
        Box::pin(async move {
            let now = sql_int(now_ms)?;
            let created = sql_int(record.created_at_ms)?;
            let expires = sql_int(record.expires_at_ms)?;
            let purge = sql_int(u64::try_from(IDEMPOTENCY_PURGE_MAX).unwrap_or(u64::MAX))?;
            // Expired records go a few at a time; ones another process is purging are skipped.
            self.inner
                .query(
                    "DELETE FROM warrant_idempotency WHERE ctid IN
                         (SELECT ctid FROM warrant_idempotency WHERE expires_at_ms <= $1
                          LIMIT $2 FOR UPDATE SKIP LOCKED)",
                    &[&now, &purge],
                )
                .await?;
            // A record found taken and then gone (expired and purged in between) is tried again,
            // a bounded number of times.
            for _ in 0..3 {
                // Kept when the key is free or its record expired: the unique key decides
                // between processes; whoever inserts first wins and the others find its record.
                let kept = self
                    .inner
                    .query(
                        "INSERT INTO warrant_idempotency AS i
                             (tenant, key, digest, run_id, created_at_ms, expires_at_ms)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (tenant, key) DO UPDATE SET
                             digest = EXCLUDED.digest, run_id = EXCLUDED.run_id,
                             created_at_ms = EXCLUDED.created_at_ms,
                             expires_at_ms = EXCLUDED.expires_at_ms
                         WHERE i.expires_at_ms <= $7
                         RETURNING 1",
                        &[
                            &record.tenant,
                            &record.key,
                            &record.digest,
                            &record.run_id.0,
                            &created,
                            &expires,
                            &now,
                        ],
                    )
                    .await?;
                if !kept.is_empty() {
                    return Ok(record);
                }
                // Another request's record stands: read in a statement of its own, which sees
                // what the insert waited for (the insert's own snapshot would not).
                let rows = self
                    .inner
                    .query(
                        "SELECT digest, run_id, created_at_ms, expires_at_ms
                         FROM warrant_idempotency WHERE tenant = $1 AND key = $2",
                        &[&record.tenant, &record.key],
                    )
                    .await?;
                if let Some(row) = rows.first() {
                    return idempotency_row(row, &record.tenant, &record.key);
                }
            }
            Err(StoreError::Io(format!(
                "the idempotency key `{}` of tenant `{}` was taken and gone three times over: \
                 try again",
                record.key, record.tenant
            )))
        })
    }
}

impl StoreHealth for PostgresStore {
    fn commit_latency(&self) -> Option<warrant_core::metrics::HistogramSnapshot> {
        Some(self.inner.commits.snapshot())
    }
}

/// An idempotency record from a row of `digest, run_id, created_at_ms, expires_at_ms`.
fn idempotency_row(
    r: &tokio_postgres::Row,
    tenant: &str,
    key: &str,
) -> Result<IdempotencyRecord, StoreError> {
    Ok(IdempotencyRecord {
        tenant: tenant.to_owned(),
        key: key.to_owned(),
        digest: r.try_get(0).map_err(|e| db(&e))?,
        run_id: RunId(r.try_get(1).map_err(|e| db(&e))?),
        created_at_ms: unsigned(r.try_get(2).map_err(|e| db(&e))?)?,
        expires_at_ms: unsigned(r.try_get(3).map_err(|e| db(&e))?)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// Positions stay unique: a row's events take the positions after its own, which the
    /// sequence leaves free only up to its step.
    #[test]
    fn a_row_holds_no_more_events_than_the_position_sequence_steps_over() {
        let step = format!("INCREMENT BY {EVENTS_PER_ROW};");
        assert!(MIGRATIONS.iter().any(|m| m.contains(&step)));
    }

    #[test]
    fn the_schema_version_is_the_number_of_migrations() {
        assert_eq!(i64::try_from(MIGRATIONS.len()).ok(), Some(SCHEMA_VERSION));
    }

    #[test]
    fn the_gone_test_reads_the_presence_locks_class() {
        assert!(holder_gone!().contains(&format!("classid = {PRESENCE_CLASS} ")));
    }

    #[test]
    fn a_batch_is_told_in_as_few_notifications_as_fit() {
        let ids: Vec<String> = (0..1000).map(|i| format!("r{i:020}")).collect();
        let notes = super::notices(ids.iter().map(String::as_str));
        assert!(notes.len() < 5, "{}", notes.len());
        assert!(notes.iter().all(|n| n.len() <= 7_000));
        let back: Vec<&str> = notes.iter().flat_map(|n| n.split(' ')).collect();
        assert_eq!(back, ids.iter().map(String::as_str).collect::<Vec<_>>());
    }

    /// A process stopped between locking rows and committing (a writer mid-batch) gives the
    /// locks up before its lease lapses, so other workers can take its runs over; when it goes
    /// on, its transaction is gone and nothing of it lands.
    #[tokio::test]
    async fn a_session_stopped_inside_a_transaction_lets_its_row_locks_go_within_half_a_lease() {
        let url = crate::contract::postgres_scratch("idle_tx").await;
        let config = parse(&url).unwrap();
        let stalled = connect(&config, "stalled").await.unwrap();
        let other = connect(&config, "other").await.unwrap();
        stalled
            .batch_execute("CREATE TABLE held (id int PRIMARY KEY); INSERT INTO held VALUES (1)")
            .await
            .unwrap();
        stalled
            .batch_execute(
                "BEGIN; SELECT id FROM held WHERE id = 1 FOR UPDATE; UPDATE held SET id = 2",
            )
            .await
            .unwrap();
        let free = || async {
            other
                .query("SELECT id FROM held FOR UPDATE SKIP LOCKED", &[])
                .await
                .unwrap()
                .len()
        };
        assert_eq!(
            free().await,
            0,
            "the row is locked while the transaction is open"
        );
        tokio::time::sleep(Duration::from_millis(IDLE_IN_TRANSACTION_MS + 1_500)).await;
        assert_eq!(free().await, 1, "the stalled session still holds its lock");
        assert!(stalled.batch_execute("COMMIT").await.is_err());
        let ids: Vec<i32> = other
            .query("SELECT id FROM held", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(ids, vec![1], "nothing of the stalled transaction landed");
    }
}

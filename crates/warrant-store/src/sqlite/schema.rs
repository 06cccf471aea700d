//! Opening a store's file: its identity, its schema and the migrations between versions, the connections and their settings.

use std::path::Path;
use std::sync::Arc;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use warrant_core::event::Event;
use warrant_core::ids::RunId;
use warrant_core::store::{IdempotencyRecord, PendingApproval, StoreError};

use super::{
    APPLICATION_ID, Durability, SCHEMA_VERSION, cannot_open, column_u64, io, read_events, sql_int,
};
use crate::ApprovalChange;

/// What every connection is set to: it waits for a busy file, keeps every statement the store
/// uses prepared (the writer alone uses ~20), and its statements keep the plan they were
/// prepared with whatever is bound to them (SQLite's query-planner stability guarantee).
/// Without that a statement whose plan the build's STAT4 statistics could tune is prepared
/// again each time a different run id is bound: a read cost ~100,000 instructions more.
pub(super) fn settle(conn: &Connection) -> Result<(), StoreError> {
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(io)?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(io)?;
    Ok(())
}

/// WAL pages between checkpoints (about 40 MB of 4 KiB pages).
pub(super) const WAL_CHECKPOINT_PAGES: i64 = 10_000;

/// WAL pages at which the writer waits for the checkpointer's copy, because it fell this far
/// behind: the WAL stays bounded whatever the rate of commits.
pub(super) const WAL_STALL_PAGES: i64 = 4 * WAL_CHECKPOINT_PAGES;

/// How large a WAL file is left after a checkpoint.
pub(super) const WAL_KEEP_BYTES: i64 = 64 * 1024 * 1024;

pub(super) fn open_connection(
    path: &Path,
    durability: Durability,
) -> Result<Connection, StoreError> {
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
pub(super) enum Identity {
    /// Nothing yet: a new, empty database.
    Empty,
    /// A Warrant store of this schema version.
    Warrant(i64),
    /// Something else.
    Foreign,
}

pub(super) fn identity(conn: &Connection, path: &Path) -> Result<Identity, StoreError> {
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

pub(super) fn foreign(path: &Path) -> StoreError {
    StoreError::Io(format!(
        "`{}` is a SQLite database but not a Warrant store: refusing to touch it (pass another --store)",
        path.display()
    ))
}

pub(super) fn newer(path: &Path, v: i64) -> StoreError {
    StoreError::Io(format!(
        "`{}` has store schema {v}; this build reads schema {SCHEMA_VERSION} and older: use a newer warrant",
        path.display()
    ))
}

/// A read-only connection to `path` and what the file is; on read-only media, where a WAL file
/// cannot be opened for shared access, read as immutable (nobody can be writing to it there).
pub(super) fn read_only_connection(path: &Path) -> Result<(Connection, Identity), StoreError> {
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
pub(super) enum LogLayout {
    /// Before schema 4: one event a row, indexed by `(run_id, seq)`; `runs.last_seq` exact.
    EventRows,
    /// Schema 4: one append a row, indexed; a run's last sequence only in its log.
    IndexedAppends,
    /// Schema 5: one append a row, chained by `prev`; `runs.last_seq` exact.
    ChainedAppends,
}

pub(super) fn log_layout(conn: &Connection) -> LogLayout {
    if has_column(conn, "events", "prev") {
        LogLayout::ChainedAppends
    } else if has_column(conn, "events", "n_events") {
        LogLayout::IndexedAppends
    } else {
        LogLayout::EventRows
    }
}

/// Whether `table` has `column` (an older store opened read-only may lack one).
pub(super) fn has_column(conn: &Connection, table: &str, column: &str) -> bool {
    conn.prepare_cached(&format!("SELECT {column} FROM {table} LIMIT 0"))
        .is_ok()
}

/// A path as the path part of a SQLite URI (`%`, `?` and `#` escaped).
pub(super) fn uri_path(path: &Path) -> String {
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
pub(super) const EVENTS_TABLE: &str = "CREATE TABLE IF NOT EXISTS events (
    position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
    body TEXT NOT NULL, n_events INTEGER NOT NULL DEFAULT 1, prev INTEGER);";

/// The operator's catalog: added to any store opened to write (an older build ignores it).
pub(super) const CATALOG_TABLE: &str = "CREATE TABLE IF NOT EXISTS catalog (
    id TEXT NOT NULL, digest TEXT NOT NULL, added_at_ms INTEGER NOT NULL,
    retired_at_ms INTEGER, body TEXT NOT NULL, PRIMARY KEY (id, digest));";

pub(super) const APPROVALS_TABLE: &str = "CREATE TABLE IF NOT EXISTS approvals (
    request TEXT PRIMARY KEY, run_id TEXT NOT NULL, requested_at_ms INTEGER NOT NULL,
    body TEXT NOT NULL);
 CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id);";

/// A tenant's idempotency keys (schema 6), each with the digest of the body it was first
/// sent with and the run it starts; found by expiry for the purge.
pub(super) const IDEMPOTENCY_TABLE: &str = "CREATE TABLE IF NOT EXISTS idempotency (
    tenant TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, run_id TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, PRIMARY KEY (tenant, key));
 CREATE INDEX IF NOT EXISTS idempotency_by_expiry ON idempotency (expires_at_ms);";

/// The outbox of notices (schema 7), written with the appends that make them; found by due
/// time for delivery and by time for listing.
pub(super) const NOTICES_TABLE: &str = "CREATE TABLE IF NOT EXISTS notices (
    id TEXT PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    at_ms INTEGER NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    next_at_ms INTEGER NOT NULL, last_error TEXT, delivered_to TEXT NOT NULL DEFAULT '[]',
    settled_at_ms INTEGER);
 CREATE INDEX IF NOT EXISTS notices_due ON notices (state, next_at_ms);
 CREATE INDEX IF NOT EXISTS notices_by_time ON notices (at_ms);";

/// The operator's schedules (schema 7), each as its JSON, and their ticks, one row a tick
/// claimed (the key makes a claim insert-if-absent); people's standing grants, each as its
/// JSON; the index of sleeping runs by when they wake.
pub(super) const SCHEDULES_TABLES: &str = "CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY, body TEXT NOT NULL);
 CREATE TABLE IF NOT EXISTS ticks (
    schedule TEXT NOT NULL, at_ms INTEGER NOT NULL, run_id TEXT, state TEXT NOT NULL, note TEXT,
    PRIMARY KEY (schedule, at_ms));
 CREATE TABLE IF NOT EXISTS grants (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL);
 CREATE INDEX IF NOT EXISTS grants_by_tenant ON grants (tenant, created_at_ms);
 CREATE INDEX IF NOT EXISTS runs_sleeping ON runs (wake_at_ms) WHERE status = 'sleeping';";

/// Brings a store of schema `from` up to this build's, in one transaction.
pub(super) fn migrate(conn: &Connection, from: i64) -> Result<(), StoreError> {
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
        if from < 7 {
            if !has_column(conn, "runs", "wake_at_ms") {
                conn.execute_batch("ALTER TABLE runs ADD COLUMN wake_at_ms INTEGER;")
                    .map_err(failed)?;
            }
            conn.execute_batch(NOTICES_TABLE).map_err(failed)?;
            conn.execute_batch(SCHEDULES_TABLES).map_err(failed)?;
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
pub(super) fn idempotency_of(
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
pub(super) fn pending_by_folding(conn: &Connection) -> Result<Vec<PendingApproval>, StoreError> {
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

pub(super) fn insert_pending(conn: &Connection, p: &PendingApproval) -> Result<(), StoreError> {
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

//! Where the store is (`--store` / `WARRANT_STORE`): a SQLite file, the embedded default, or a
//! PostgreSQL database named by its URL, for fleets. Every command opens it the same way.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use warrant_core::ports::{EventStore, StoreHealth};
use warrant_store::{Durability, SqliteStore};

use crate::Failure;

/// A store's location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreAt {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database (`postgres://` or `postgresql://`).
    Postgres(String),
}

/// `--store`'s parser: a URL is a database, anything else a file.
pub fn parse(s: &str) -> Result<StoreAt, String> {
    if s.is_empty() {
        return Err("empty: give a file or a postgres:// URL".into());
    }
    if warrant_store::is_postgres_url(s) {
        return Ok(StoreAt::Postgres(s.to_owned()));
    }
    if let Some((scheme, _)) = s.split_once("://") {
        return Err(format!(
            "`{scheme}://` is not a store Warrant knows: give a file (SQLite) or a postgres:// URL"
        ));
    }
    Ok(StoreAt::File(PathBuf::from(s)))
}

impl std::fmt::Display for StoreAt {
    /// The path, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreAt::File(p) => write!(f, "{}", p.display()),
            StoreAt::Postgres(url) => f.write_str(&warrant_store::url_without_password(url)),
        }
    }
}

/// How a command uses the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Writes, creating a missing SQLite file (`run`, `serve`...).
    Create,
    /// Writes to a store that must exist (`approve`, `cancel`, `resume`...).
    Existing,
    /// Only reads: a SQLite file is opened read-only, so nothing in it changes.
    Read,
}

impl StoreAt {
    /// Opens the store for `usage`.
    pub async fn open(&self, usage: Use) -> Result<Arc<dyn EventStore>, Failure> {
        let invalid = |e: warrant_core::ports::StoreError| Failure::invalid(anyhow!("{e}"));
        match self {
            StoreAt::File(path) => {
                if usage != Use::Create && !path.exists() {
                    let folder = path
                        .parent()
                        .filter(|p| !p.as_os_str().is_empty() && !p.exists())
                        .map(|p| format!(": the folder `{}` does not exist", p.display()))
                        .unwrap_or_default();
                    return Err(Failure::invalid(anyhow!(
                        "no store at `{}`{folder} (run something first, or pass --store / WARRANT_STORE)",
                        path.display()
                    )));
                }
                if usage == Use::Read {
                    // An empty file (0 bytes, or a database with nothing in it) is a new
                    // store with no runs yet: read as one, and left as it is (the first
                    // command that writes makes it a store).
                    if SqliteStore::schema_of(path).map_err(invalid)?.is_none() {
                        return Ok(Arc::new(warrant_store::MemoryStore::new()));
                    }
                    return Ok(Arc::new(
                        SqliteStore::open_read_only(path).map_err(invalid)?,
                    ));
                }
                let (_, store) = open_upgrading(path).map_err(invalid)?;
                let store = Arc::new(store);
                written().push(store.clone());
                Ok(store)
            }
            StoreAt::Postgres(url) => open_postgres(url).await,
        }
    }
}

/// The SQLite stores this process opened to write, kept open until it says whether copies of
/// their write-ahead log failed ([`failed_copies`]).
fn written() -> std::sync::MutexGuard<'static, Vec<Arc<SqliteStore>>> {
    static WRITTEN: std::sync::Mutex<Vec<Arc<SqliteStore>>> = std::sync::Mutex::new(Vec::new());
    // A poisoned list only ever held stores: go on with it.
    WRITTEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// What to tell the user, at the end of a command, of the SQLite stores it wrote whose
/// write-ahead log could not be copied back into the file (one line each), closing them. The
/// commits are durable in the log, so nothing is lost, but a log never copied back grows: a
/// user with no `/metrics` to watch learns of it here.
pub fn failed_copies() -> Vec<String> {
    std::mem::take(&mut *written())
        .into_iter()
        .filter_map(|store| {
            let failed = store.checkpoint_failures()?;
            (failed.count > 0).then(|| copies_warning(store.path(), &failed))
        })
        .collect()
}

fn copies_warning(
    path: &std::path::Path,
    failed: &warrant_core::ports::CheckpointFailures,
) -> String {
    let shown = path.display();
    let times = match failed.count {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    };
    let why = failed
        .last
        .as_deref()
        .map_or_else(String::new, |e| format!(" (last: {e})"));
    format!(
        "warning: the store `{shown}` could not copy its write-ahead log back into the file {times}{why}. \
         Every commit is safe in `{shown}-wal`, which grows until a copy succeeds: \
         check that the file and its directory can be written and the disk has room."
    )
}

/// Opens a SQLite store to write, saying first on stderr when it is about to be upgraded
/// (the upgrade copies the log once, which takes a while on a large store). Returns the
/// schema the file had (`None`: no store yet) and the store.
fn open_upgrading(
    path: &std::path::Path,
) -> Result<(Option<i64>, SqliteStore), warrant_core::ports::StoreError> {
    let to = warrant_store::sqlite::SCHEMA_VERSION;
    let from = SqliteStore::schema_of(path)?;
    if let Some(from) = from
        && from < to
    {
        errln!(
            "upgrading the store `{}` from schema {from} to {to} (once)...",
            path.display()
        );
    }
    Ok((from, SqliteStore::open(path, Durability::Fsync)?))
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Arc<dyn EventStore>, Failure> {
    warrant_store::PostgresStore::open(url)
        .await
        .map(|s| Arc::new(s) as Arc<dyn EventStore>)
        .map_err(|e| Failure::invalid(anyhow!("{e}")))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_url: &str) -> Result<Arc<dyn EventStore>, Failure> {
    Err(without_postgres())
}

#[cfg(not(feature = "postgres"))]
pub fn without_postgres() -> Failure {
    Failure::invalid(anyhow!(
        "this warrant was built without PostgreSQL (the `postgres` feature)"
    ))
}

/// `warrant store migrate`: brings the store's schema to this build's.
pub async fn migrate(at: &StoreAt) -> Result<u8, Failure> {
    match at {
        StoreAt::File(path) => {
            // A SQLite file is brought up to date whenever it is opened for writing.
            let (from, _) = open_upgrading(path).map_err(|e| Failure::invalid(anyhow!("{e}")))?;
            let to = warrant_store::sqlite::SCHEMA_VERSION;
            let shown = path.display();
            match from {
                None => outln!("store `{shown}`: created (schema {to})"),
                Some(v) if v < to => outln!("store `{shown}`: migrated from schema {v} to {to}"),
                Some(_) => outln!("store `{shown}`: schema {to}, up to date"),
            }
            Ok(crate::exit::ATTAINED)
        }
        #[cfg(feature = "postgres")]
        StoreAt::Postgres(url) => {
            let (from, to) = warrant_store::PostgresStore::migrate(url)
                .await
                .map_err(|e| Failure::invalid(anyhow!("{e}")))?;
            let shown = at.to_string();
            if from == to {
                outln!("store `{shown}`: schema {to}, up to date");
            } else if from == 0 {
                outln!("store `{shown}`: created (schema {to})");
            } else {
                outln!("store `{shown}`: migrated from schema {from} to {to}");
            }
            Ok(crate::exit::ATTAINED)
        }
        #[cfg(not(feature = "postgres"))]
        StoreAt::Postgres(_) => Err(without_postgres()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_failed_copy_of_the_wal_is_told_with_its_count_its_error_and_where_the_commits_are() {
        let failed = |count, last: Option<&str>| warrant_core::ports::CheckpointFailures {
            count,
            last: last.map(str::to_owned),
        };
        let path = std::path::Path::new("runs/w.db");
        let once = copies_warning(path, &failed(1, Some("disk I/O error")));
        assert!(once.starts_with("warning: the store `runs/w.db`"), "{once}");
        assert!(once.contains("file once (last: disk I/O error)."), "{once}");
        assert!(once.contains("safe in `runs/w.db-wal`"), "{once}");
        let many = copies_warning(path, &failed(3, None));
        assert!(many.contains("file 3 times. Every"), "{many}");
    }

    #[tokio::test]
    async fn a_store_written_with_no_failed_copy_is_not_told() {
        let dir = tempfile::tempdir().unwrap();
        let at = StoreAt::File(dir.path().join("w.db"));
        let store = at.open(Use::Create).await.unwrap();
        assert_eq!(store.checkpoint_failures().unwrap().count, 0);
        drop(store);
        assert!(failed_copies().is_empty());
        // The list was emptied: the store is closed.
        assert!(written().is_empty());
    }

    #[test]
    fn a_url_is_a_database_and_anything_else_a_file() {
        assert_eq!(
            parse("postgres://u@h/db").unwrap(),
            StoreAt::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(parse("w.db").unwrap(), StoreAt::File(PathBuf::from("w.db")));
        assert!(parse("mysql://h/db").unwrap_err().contains("mysql://"));
        assert!(parse("").is_err());
        let at = parse("postgres://u:hunter2@h:5432/db").unwrap();
        assert_eq!(at.to_string(), "postgres://u:***@h:5432/db");
    }
}

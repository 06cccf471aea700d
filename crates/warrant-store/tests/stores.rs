//! Both stores honour the port: atomic batches, optimistic concurrency, gapless order, and
//! (SQLite) persistence across reopen and group commit under concurrency.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::sync::Arc;

use warrant_core::event::{DeciderIdentity, EVENTS_FORMAT, Event, EventKind, Outcome};
use warrant_core::ids::{RunId, StepId};
use warrant_core::ports::{EventStore, StoreError};
use warrant_core::spec::{Format, Spec};
use warrant_store::{Durability, MemoryStore, SqliteStore};

fn spec() -> Arc<Spec> {
    let yaml = "version: warrant/v1\nid: s\nobjective: o\nproviders: {p: {reference: cafe}}\nsteps: [{id: a, provider: p, tools: [t]}]\n";
    Arc::new(Spec::parse(yaml, Format::Yaml, "s.yaml").unwrap())
}

fn started(run: &str) -> Arc<Event> {
    Arc::new(Event {
        seq: 1,
        at_ms: 10,
        kind: EventKind::RunStarted {
            format: EVENTS_FORMAT.into(),
            run_id: RunId(run.into()),
            spec: spec(),
            spec_hash: "h".into(),
            decider: DeciderIdentity {
                kind: "scripted".into(),
                name: "x".into(),
                digest: None,
            },
            authority: None,
            execution_control: None,
            principal: None,
            setup_ms: None,
        },
    })
}

fn step(seq: u64) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 10 + seq,
        kind: EventKind::StepStarted {
            step: StepId("a".into()),
            provider: "p".into(),
        },
    })
}

fn finished(seq: u64) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 99,
        kind: EventKind::RunFinished {
            outcome: Outcome::Attained,
        },
    })
}

async fn contract(store: &dyn EventStore) {
    let run = RunId("r1".into());
    store
        .append(&run, 0, vec![started("r1"), step(2)], None)
        .await
        .unwrap();
    // Optimistic concurrency: a writer that expected an older sequence is refused, and
    // nothing of its batch is written.
    let err = store
        .append(&run, 1, vec![step(2)], None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            run: run.clone(),
            expected: 1,
            actual: 2
        }
    );
    // A batch whose sequences do not continue the run is refused.
    assert!(store.append(&run, 2, vec![step(4)], None).await.is_err());
    store
        .append(&run, 2, vec![finished(3)], None)
        .await
        .unwrap();
    let events = store.read(&run, 1).unwrap();
    assert_eq!(
        events.iter().map(|e| e.event.seq).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(events.windows(2).all(|w| w[0].position < w[1].position));
    assert_eq!(store.read(&run, 3).unwrap().len(), 1);
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "attained");
    assert_eq!(runs[0].events, 3);
    // A run must begin with `run_started`.
    assert!(
        store
            .append(&RunId("r2".into()), 0, vec![step(1)], None)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn the_memory_store_honours_the_port() {
    contract(&MemoryStore::new()).await;
}

#[tokio::test]
async fn the_sqlite_store_honours_the_port_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/warrant.db");
    {
        let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
        contract(&store).await;
    }
    let reopened = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let events = reopened.read(&RunId("r1".into()), 1).unwrap();
    assert_eq!(events.len(), 3);
    assert_eq!(*events[0].event, *started("r1"));
    // The sequence continues where it was after a reopen.
    let err = reopened
        .append(&RunId("r1".into()), 0, vec![started("r1")], None)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { actual: 3, .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_share_commits_and_each_sees_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("w.db"), Durability::Fsync).unwrap());
    let mut tasks = Vec::new();
    for r in 0..200 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let run = RunId(format!("run-{r}"));
            store
                .append(&run, 0, vec![started(&run.0)], None)
                .await
                .unwrap();
            for seq in 2..=20 {
                store
                    .append(&run, seq - 1, vec![step(seq)], None)
                    .await
                    .unwrap();
            }
            run
        }));
    }
    for t in tasks {
        let run = t.await.unwrap();
        let seqs: Vec<u64> = store
            .read(&run, 1)
            .unwrap()
            .iter()
            .map(|e| e.event.seq)
            .collect();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
    }
    let positions: Vec<u64> = store.runs().unwrap().iter().map(|r| r.events).collect();
    assert_eq!(positions.len(), 200);
    assert!(positions.iter().all(|n| *n == 20));
}

#[tokio::test]
async fn a_store_from_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    drop(SqliteStore::open(&path, Durability::Fsync).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let err = SqliteStore::open(&path, Durability::Fsync).err().unwrap();
    assert!(err.to_string().contains("store schema 99"), "{err}");
}

#[tokio::test]
async fn a_file_that_is_not_a_store_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello, this is not a database\n".repeat(200)).unwrap();
    let err = SqliteStore::open(&path, Durability::Fsync).err().unwrap();
    assert!(err.to_string().contains("store:"), "{err}");
}

#[tokio::test]
async fn a_sqlite_file_that_is_not_a_warrant_store_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    for err in [
        SqliteStore::open(&path, Durability::Fsync).err().unwrap(),
        SqliteStore::open_read_only(&path).err().unwrap(),
    ] {
        assert!(err.to_string().contains("not a Warrant store"), "{err}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "not a byte changed");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1, "no Warrant tables were added");
}

#[tokio::test]
async fn a_read_only_store_reads_and_refuses_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    {
        let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
        contract(&store).await;
    }
    let reading = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(reading.read(&RunId("r1".into()), 1).unwrap().len(), 3);
    assert_eq!(reading.runs().unwrap()[0].status, "attained");
    assert!(
        reading
            .append(&RunId("r1".into()), 3, vec![step(4)], None)
            .await
            .is_err()
    );
    let request = warrant_core::ports::CancelRequest {
        by: "x".into(),
        reason: "y".into(),
    };
    assert!(
        reading
            .request_cancel(&RunId("r1".into()), request)
            .is_err()
    );
    assert!(
        SqliteStore::open_read_only(&dir.path().join("missing.db"))
            .err()
            .unwrap()
            .to_string()
            .contains("no store")
    );
}

/// Two processes on one file (a run in one terminal, `warrant approve` in another): an append
/// made by the other is seen, the expected sequence is checked against the file, and a
/// conflict fails only its own append.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_check_sequences_against_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let b = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let run = RunId("r1".into());
    a.append(&run, 0, vec![started("r1"), step(2)], None)
        .await
        .unwrap();
    // The other process appends next.
    b.append(&run, 2, vec![step(3)], None).await.unwrap();
    // This one, told the truth by the file, goes on from there.
    a.append(&run, 3, vec![step(4)], None).await.unwrap();
    // A stale expectation is a conflict naming where the run really is, and it fails only
    // itself: another run's append in the same moment commits.
    let other = RunId("r2".into());
    let stale = a.append(&run, 2, vec![step(3)], None);
    let fine = a.append(&other, 0, vec![started("r2")], None);
    let (stale, fine) = tokio::join!(stale, fine);
    assert_eq!(
        stale.unwrap_err(),
        StoreError::Conflict {
            run: run.clone(),
            expected: 2,
            actual: 4
        }
    );
    fine.unwrap();
    assert_eq!(b.read(&run, 1).unwrap().len(), 4);
    assert_eq!(b.read(&other, 1).unwrap().len(), 1);
}

async fn leases(store: &dyn EventStore) {
    use warrant_core::ports::{Driver, LEASE_TTL_MS};
    let run = RunId("r1".into());
    let one = Driver {
        holder: "pid 1".into(),
        now_ms: 1_000,
    };
    store
        .append(&run, 0, vec![started("r1")], Some(&one))
        .await
        .unwrap();
    let s = store.summary(&run).unwrap().unwrap();
    assert_eq!(s.holder.as_deref(), Some("pid 1"));
    assert!(s.driven(1_500));
    // Another process cannot take a lease its driver renewed lately...
    let two = Driver {
        holder: "pid 2".into(),
        now_ms: 2_000,
    };
    let held = store.claim(&run, &two).unwrap().unwrap();
    assert_eq!(held.holder, "pid 1");
    // ...but can once the driver has been silent for the lease's length.
    let later = Driver {
        holder: "pid 2".into(),
        now_ms: 1_000 + LEASE_TTL_MS,
    };
    assert!(!s.driven(later.now_ms));
    assert_eq!(store.claim(&run, &later).unwrap(), None);
    store
        .heartbeat(
            &run,
            &Driver {
                holder: "pid 2".into(),
                now_ms: 20_000,
            },
        )
        .unwrap();
    assert_eq!(
        store.summary(&run).unwrap().unwrap().heartbeat_ms,
        Some(20_000)
    );
    // The append that ends the run gives the lease back.
    store
        .append(&run, 1, vec![finished(2)], Some(&later))
        .await
        .unwrap();
    let s = store.summary(&run).unwrap().unwrap();
    assert_eq!((s.status.as_str(), s.holder), ("attained", None));
}

#[tokio::test]
async fn both_stores_keep_leases() {
    leases(&MemoryStore::new()).await;
    let dir = tempfile::tempdir().unwrap();
    leases(&SqliteStore::open(&dir.path().join("l.db"), Durability::Fsync).unwrap()).await;
}

#[tokio::test]
async fn a_schema_1_store_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
        contract(&store).await;
    }
    // Make it look like a store written before leases.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN holder; ALTER TABLE runs DROP COLUMN heartbeat_ms;
         UPDATE meta SET value = '1' WHERE key = 'schema_version'; PRAGMA application_id = 0;",
    )
    .unwrap();
    drop(conn);
    // Read-only, it reads as it is; opened to write, it is brought up to date.
    let reading = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(reading.runs().unwrap()[0].holder, None);
    drop(reading);
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(store.read(&RunId("r1".into()), 1).unwrap().len(), 3);
    assert_eq!(store.runs().unwrap()[0].status, "attained");
}

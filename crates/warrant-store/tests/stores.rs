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
    let err = store.append(&run, 1, vec![step(2)], None).await.unwrap_err();
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
    store.append(&run, 2, vec![finished(3)], None).await.unwrap();
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
            store.append(&run, 0, vec![started(&run.0)], None).await.unwrap();
            for seq in 2..=20 {
                store.append(&run, seq - 1, vec![step(seq)], None).await.unwrap();
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

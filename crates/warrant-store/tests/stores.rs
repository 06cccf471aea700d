//! Both stores honour the port: atomic batches, optimistic concurrency, gapless order, and
//! (SQLite) persistence across reopen and group commit under concurrency.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::sync::Arc;

use warrant_core::ids::RunId;
use warrant_core::ports::{EventStore, RunQuery, StoreError};
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, Leases, LogReader, LogWriter, RunsIndex,
};
use warrant_store::{Durability, MemoryStore, SqliteStore};

use warrant_store::contract::{self, asked, started, step};

async fn contract(store: &dyn EventStore) {
    contract::appends_are_atomic_ordered_and_optimistic(store).await;
}

#[tokio::test]
async fn the_memory_store_keeps_the_whole_contract() {
    contract::all(|| async { MemoryStore::new() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_keeps_the_whole_contract() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicU32::new(0);
    contract::all(|| {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.path().join(format!("c{i}.db"));
        async move { SqliteStore::open(&path, Durability::Fsync).unwrap() }
    })
    .await;
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
    let events = reopened.read(&RunId("r1".into()), 1).await.unwrap();
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
            contract::started_then_steps(&*store, &run, 20).await;
            run
        }));
    }
    for t in tasks {
        let run = t.await.unwrap();
        let seqs: Vec<u64> = store
            .read(&run, 1)
            .await
            .unwrap()
            .iter()
            .map(|e| e.event.seq)
            .collect();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
    }
    let positions: Vec<u64> = store
        .runs(RunQuery::default())
        .await
        .unwrap()
        .runs
        .iter()
        .map(|r| r.events)
        .collect();
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
    assert_eq!(reading.read(&RunId("r1".into()), 1).await.unwrap().len(), 3);
    let r1 = reading.summary(&RunId("r1".into())).await.unwrap().unwrap();
    assert_eq!(r1.status, "attained");
    assert!(
        reading
            .append(&RunId("r1".into()), 3, vec![step(4)], None)
            .await
            .is_err()
    );
    let request = warrant_core::ports::CancelRequest {
        by: "x".into(),
        reason: "y".into(),
        close: false,
    };
    assert!(
        reading
            .request_cancel(&RunId("r1".into()), request)
            .await
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
    assert_eq!(b.read(&run, 1).await.unwrap().len(), 4);
    assert_eq!(b.read(&other, 1).await.unwrap().len(), 1);
}

/// Two processes on one file (two servers restarted over one store, or a server and its
/// successor) putting one idempotency key at once agree on one record: the file decides, not
/// either process's memory; a key put by one is found by the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_agree_on_an_idempotency_key() {
    use warrant_store::contract::idempotency;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = Arc::new(SqliteStore::open(&path, Durability::Fsync).unwrap());
    let b = Arc::new(SqliteStore::open(&path, Durability::Fsync).unwrap());
    for round in 0..20 {
        let key = format!("k{round}");
        let (ra, rb) = tokio::join!(
            a.idempotency_put(
                idempotency("t", &key, &format!("a{round}"), 100, 10_000),
                100
            ),
            b.idempotency_put(
                idempotency("t", &key, &format!("b{round}"), 100, 10_000),
                100
            )
        );
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert_eq!(ra, rb, "round {round}: both are told the one record kept");
        assert_eq!(
            a.idempotency_get("t", &key, 200).await.unwrap(),
            Some(ra.clone())
        );
        assert_eq!(b.idempotency_get("t", &key, 200).await.unwrap(), Some(ra));
    }
}

/// Expired keys are purged by later puts a bounded number at a time
/// (`IDEMPOTENCY_PURGE_MAX`), live ones never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_idempotency_keys_are_purged_a_bounded_number_per_put() {
    use warrant_core::ports::IDEMPOTENCY_PURGE_MAX;
    use warrant_store::contract::idempotency;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("purge.db");
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let old = 2 * IDEMPOTENCY_PURGE_MAX + 5;
    for i in 0..old {
        store
            .idempotency_put(idempotency("t", &format!("old-{i}"), "o", 10, 20), 10)
            .await
            .unwrap();
    }
    let rows = || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("SELECT count(*) FROM idempotency", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap() as usize
    };
    assert_eq!(rows(), old, "none had expired while they were put");
    store
        .idempotency_put(idempotency("t", "new-1", "n1", 30, 10_000), 30)
        .await
        .unwrap();
    assert_eq!(rows(), old - IDEMPOTENCY_PURGE_MAX + 1);
    for i in 2..=3 {
        store
            .idempotency_put(idempotency("t", &format!("new-{i}"), "n", 30, 10_000), 30)
            .await
            .unwrap();
    }
    assert_eq!(rows(), 3, "every expired key is gone, every live one kept");
}

/// A store of schema 5 (before idempotency keys) has none when read as it is, and gains the
/// table when opened to write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_5_store_gains_idempotency_keys_when_upgraded() {
    use warrant_store::contract::idempotency;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("five.db");
    drop(SqliteStore::open(&path, Durability::Fsync).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE idempotency; UPDATE meta SET value = '5' WHERE key = 'schema_version';",
    )
    .unwrap();
    drop(conn);
    let reading = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(reading.idempotency_get("t", "k", 1).await.unwrap(), None);
    drop(reading);
    assert_eq!(SqliteStore::schema_of(&path).unwrap(), Some(5));
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(
        SqliteStore::schema_of(&path).unwrap(),
        Some(warrant_store::sqlite::SCHEMA_VERSION)
    );
    let kept = idempotency("t", "k", "r1", 1, 100);
    assert_eq!(store.idempotency_put(kept.clone(), 1).await.unwrap(), kept);
    assert_eq!(
        store.idempotency_get("t", "k", 2).await.unwrap(),
        Some(kept)
    );
}

/// A step's commit writes its events' row and advances its run's row (last sequence, last
/// row) in one statement; the driver's heartbeat goes with it only when due (at most once a
/// second of the driver's clock) or when the status changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_heartbeat_is_written_when_its_status_changes_or_it_is_due() {
    use warrant_core::ports::Driver;
    use warrant_store::contract::finished;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.db");
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let run = RunId("r1".into());
    let at = |now_ms: u64, epoch: u64| Driver {
        holder: "pid 1".into(),
        now_ms,
        epoch,
    };
    store
        .append(&run, 0, vec![started("r1")], Some(&at(10_000, 0)))
        .await
        .unwrap();
    let epoch = store.summary(&run).await.unwrap().unwrap().epoch;
    let row = |path: &std::path::Path| {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(
            "SELECT last_seq, heartbeat_ms FROM runs WHERE run_id = 'r1'",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?)),
        )
        .unwrap()
    };
    assert_eq!(row(&path), (1, Some(10_000)));
    // Within the second: the events and the run's last sequence, not the heartbeat.
    for (seq, now) in [(2, 10_300), (3, 10_999)] {
        store
            .append(&run, seq - 1, vec![step(seq)], Some(&at(now, epoch)))
            .await
            .unwrap();
    }
    assert_eq!(row(&path), (3, Some(10_000)));
    let s = store.summary(&run).await.unwrap().unwrap();
    assert_eq!((s.events, s.heartbeat_ms), (3, Some(10_000)));
    // Another process on the file goes on from the run's last sequence.
    let other = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let err = other
        .append(&run, 1, vec![step(2)], Some(&at(10_999, epoch)))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            run: run.clone(),
            expected: 1,
            actual: 3
        }
    );
    drop(other);
    // A second on: the heartbeat is written with the append.
    store
        .append(&run, 3, vec![step(4)], Some(&at(11_000, epoch)))
        .await
        .unwrap();
    assert_eq!(row(&path), (4, Some(11_000)));
    // Ending the run writes its row at once, and gives the lease back.
    store
        .append(&run, 4, vec![finished(5)], Some(&at(11_001, epoch)))
        .await
        .unwrap();
    let s = store.summary(&run).await.unwrap().unwrap();
    assert_eq!(
        (s.status.as_str(), s.events, s.holder),
        ("attained", 5, None)
    );
}

/// One append is one row: its events at consecutive positions, read back one by one from
/// any sequence, the middle of a row included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_is_one_row_read_back_event_by_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.db");
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    let (a, b) = (RunId("a".into()), RunId("b".into()));
    store
        .append(&a, 0, vec![started("a"), step(2), step(3)], None)
        .await
        .unwrap();
    store.append(&b, 0, vec![started("b")], None).await.unwrap();
    store
        .append(&a, 3, vec![step(4), step(5)], None)
        .await
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 3);
    drop(conn);
    let read = |from| {
        let store = &store;
        let a = &a;
        async move {
            store
                .read(a, from)
                .await
                .unwrap()
                .iter()
                .map(|e| (e.event.seq, e.position))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(read(1).await, vec![(1, 1), (2, 2), (3, 3), (4, 5), (5, 6)]);
    assert_eq!(read(3).await, vec![(3, 3), (4, 5), (5, 6)]);
    assert_eq!(read(5).await, vec![(5, 6)]);
    assert_eq!(read(6).await, vec![]);
    assert_eq!(store.read(&b, 1).await.unwrap()[0].position, 4);
    assert_eq!(store.summary(&a).await.unwrap().unwrap().events, 5);
    // A row that does not hold what it says is an error naming the run, not a wrong log.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE events SET n_events = 4 WHERE run_id = 'a' AND seq = 1",
        [],
    )
    .unwrap();
    drop(conn);
    let reading = SqliteStore::open_read_only(&path).unwrap();
    let err = reading.read(&a, 1).await.unwrap_err().to_string();
    assert!(err.contains("run `a`") && err.contains("holds 3"), "{err}");
}

/// A store of schema 3 (one event a row, `runs.last_seq` advanced by every append) reads as
/// it is when opened read-only, and, opened to write, is upgraded and goes on where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_3_store_is_read_and_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("three.db");
    let run = RunId("r".into());
    {
        let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
        store
            .append(&run, 0, vec![started("r")], None)
            .await
            .unwrap();
        store.append(&run, 1, vec![step(2)], None).await.unwrap();
    }
    contract::as_sqlite_schema_4(&path, false);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE events DROP COLUMN n_events; UPDATE runs SET last_seq = 2;
         UPDATE meta SET value = '3' WHERE key = 'schema_version';",
    )
    .unwrap();
    drop(conn);
    let reading = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(reading.read(&run, 1).await.unwrap().len(), 2);
    assert_eq!(reading.summary(&run).await.unwrap().unwrap().events, 2);
    drop(reading);
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    store
        .append(&run, 2, vec![step(3), step(4)], None)
        .await
        .unwrap();
    let events = store.read(&run, 1).await.unwrap();
    assert_eq!(
        events
            .iter()
            .map(|e| (e.event.seq, e.position))
            .collect::<Vec<_>>(),
        vec![(1, 1), (2, 2), (3, 3), (4, 4)]
    );
    assert_eq!(store.summary(&run).await.unwrap().unwrap().events, 4);
}

/// A store of schema 4 (rows indexed by run, `runs.last_seq` written only with a status or a
/// heartbeat) reads as it is when opened read-only; opened to write, its rows are chained
/// run by run, the index goes, and every run goes on from where its log ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_4_store_is_read_and_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("four.db");
    let (a, b) = (RunId("a".into()), RunId("b".into()));
    {
        let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
        // Two runs taking turns, rows of one and of several events.
        store.append(&a, 0, vec![started("a")], None).await.unwrap();
        store.append(&b, 0, vec![started("b")], None).await.unwrap();
        store
            .append(&a, 1, vec![step(2), step(3)], None)
            .await
            .unwrap();
        store.append(&b, 1, vec![step(2)], None).await.unwrap();
        store.append(&a, 3, vec![step(4)], None).await.unwrap();
    }
    contract::as_sqlite_schema_4(&path, true);
    let seqs = |events: Vec<warrant_core::event::StoredEvent>| {
        events
            .iter()
            .map(|e| (e.event.seq, e.position))
            .collect::<Vec<_>>()
    };
    let reading = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(
        seqs(reading.read(&a, 2).await.unwrap()),
        vec![(2, 3), (3, 4), (4, 6)]
    );
    assert_eq!(reading.summary(&a).await.unwrap().unwrap().events, 4);
    drop(reading);

    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(store.summary(&a).await.unwrap().unwrap().events, 4);
    assert_eq!(store.summary(&b).await.unwrap().unwrap().events, 2);
    // Each run goes on from its log's end (a stale expectation is still refused).
    let err = store.append(&b, 1, vec![step(2)], None).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { actual: 2, .. }),
        "{err}"
    );
    store.append(&b, 2, vec![step(3)], None).await.unwrap();
    store.append(&a, 4, vec![step(5)], None).await.unwrap();
    assert_eq!(
        seqs(store.read(&a, 1).await.unwrap()),
        vec![(1, 1), (2, 3), (3, 4), (4, 6), (5, 8)]
    );
    assert_eq!(seqs(store.read(&b, 2).await.unwrap()), vec![(2, 5), (3, 7)]);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let indexes: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 0, "the log keeps no index by run");
}

/// A run's rows are followed back from its last: a chain broken by damage to the file is an
/// error naming the run, never another run's events or a log with a hole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_chain_of_rows_is_an_error_naming_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.db");
    let (a, b) = (RunId("a".into()), RunId("b".into()));
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    store.append(&a, 0, vec![started("a")], None).await.unwrap();
    store.append(&b, 0, vec![started("b")], None).await.unwrap();
    store.append(&a, 1, vec![step(2)], None).await.unwrap();
    store.append(&a, 2, vec![step(3)], None).await.unwrap();
    drop(store);
    let damage = |sql: &str| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(sql).unwrap();
    };
    let read = || async {
        let reading = SqliteStore::open_read_only(&path).unwrap();
        reading.read(&a, 1).await.map(|e| e.len())
    };
    assert_eq!(read().await, Ok(3));
    // Pointing at another run's row.
    damage("UPDATE events SET prev = 2 WHERE position = 4");
    let err = read().await.unwrap_err().to_string();
    assert!(
        err.contains("run `a`") && err.contains("another run"),
        "{err}"
    );
    // Skipping a row.
    damage("UPDATE events SET prev = 1 WHERE position = 4");
    let err = read().await.unwrap_err().to_string();
    assert!(err.contains("run `a`") && err.contains("not 2"), "{err}");
    // Pointing forward (a loop, were it followed) ends the chain there.
    damage("UPDATE events SET prev = 4 WHERE position = 4");
    let err = read().await.unwrap_err().to_string();
    assert!(err.contains("run `a`"), "{err}");
}

#[tokio::test]
async fn a_schema_1_store_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let waiting = RunId("w".into());
    {
        let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
        contract(&store).await;
        store
            .append(&waiting, 0, vec![started("w"), asked(2, "w-a1")], None)
            .await
            .unwrap();
    }
    // Make it look like a store written before leases, epochs and the approvals index.
    contract::as_sqlite_schema_4(&path, false);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN holder; ALTER TABLE runs DROP COLUMN heartbeat_ms;
         ALTER TABLE runs DROP COLUMN epoch; DROP TABLE approvals;
         UPDATE meta SET value = '1' WHERE key = 'schema_version'; PRAGMA application_id = 0;",
    )
    .unwrap();
    drop(conn);
    // Read-only, it reads as it is; opened to write, it is brought up to date.
    let reading = SqliteStore::open_read_only(&path).unwrap();
    let r1 = reading.summary(&RunId("r1".into())).await.unwrap().unwrap();
    assert_eq!((r1.status.as_str(), r1.holder), ("attained", None));
    drop(reading);
    let store = SqliteStore::open(&path, Durability::Fsync).unwrap();
    assert_eq!(store.read(&RunId("r1".into()), 1).await.unwrap().len(), 3);
    let r1 = store.summary(&RunId("r1".into())).await.unwrap().unwrap();
    assert_eq!(r1.status, "attained");
    // The approvals index is built from the logs.
    let pending = store.pending_approvals(None).await.unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|p| p.request.as_str())
            .collect::<Vec<_>>(),
        vec!["w-a1"]
    );
}

/// A follower in one process sees what another process appends to the same file (an
/// approval answered from another terminal) without reading the log over and over, and keeps
/// following when that writer goes away and another one takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_other_processes_appends_across_writer_restarts() {
    use warrant_store::contract::{answered, finished};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let run = RunId("r1".into());
    let writer = SqliteStore::open(&path, Durability::Fsync).unwrap();
    writer
        .append(&run, 0, vec![started("r1"), asked(2, "r1-a1")], None)
        .await
        .unwrap();
    let follower = SqliteStore::open_read_only(&path).unwrap();
    let mut feed = follower.subscribe(&run, 1);
    assert_eq!(next(feed.as_mut()).await, Some(1));
    assert_eq!(next(feed.as_mut()).await, Some(2));
    // Another process answers the approval.
    writer
        .append(&run, 2, vec![answered(3, "r1-a1")], None)
        .await
        .unwrap();
    assert_eq!(next(feed.as_mut()).await, Some(3));
    // That process exits; a new one carries the run on and ends it.
    drop(writer);
    let again = SqliteStore::open(&path, Durability::Fsync).unwrap();
    again
        .append(&run, 3, vec![step(4), finished(5)], None)
        .await
        .unwrap();
    assert_eq!(next(feed.as_mut()).await, Some(4));
    assert_eq!(next(feed.as_mut()).await, Some(5));
    assert_eq!(
        next(feed.as_mut()).await,
        None,
        "the feed ends with the run"
    );
}

async fn next(feed: &mut dyn warrant_core::ports::EventFeed) -> Option<u64> {
    tokio::time::timeout(std::time::Duration::from_secs(10), feed.next())
        .await
        .expect("the follower saw nothing")
        .unwrap()
        .map(|e| e.event.seq)
}

/// A follower in the writer's own process is handed that writer's commits, and still sees
/// what another writer on the same file (another process) commits between them: every event
/// once, in order, with the positions the file holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writers_follower_sees_its_own_and_another_writers_commits() {
    use warrant_store::contract::{answered, finished};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let run = RunId("r1".into());
    let here = SqliteStore::open(&path, Durability::Fsync).unwrap();
    here.append(&run, 0, vec![started("r1"), asked(2, "r1-a1")], None)
        .await
        .unwrap();
    let mut feed = here.subscribe(&run, 1);
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(next_event(feed.as_mut()).await.unwrap());
    }
    // Another process answers while this one's follower waits.
    let there = SqliteStore::open(&path, Durability::Fsync).unwrap();
    there
        .append(&run, 2, vec![answered(3, "r1-a1")], None)
        .await
        .unwrap();
    got.push(next_event(feed.as_mut()).await.unwrap());
    // This process goes on: handed over, one after the other.
    here.append(&run, 3, vec![step(4)], None).await.unwrap();
    got.push(next_event(feed.as_mut()).await.unwrap());
    there.append(&run, 4, vec![step(5)], None).await.unwrap();
    here.append(&run, 5, vec![finished(6)], None).await.unwrap();
    while let Some(e) = next_event(feed.as_mut()).await {
        got.push(e);
    }
    let seqs: Vec<u64> = got.iter().map(|e| e.event.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6]);
    let positions: Vec<u64> = got.iter().map(|e| e.position).collect();
    let file: Vec<u64> = here
        .read(&run, 1)
        .await
        .unwrap()
        .iter()
        .map(|e| e.position)
        .collect();
    assert_eq!(
        positions, file,
        "handed-over events carry their positions in the file"
    );
}

/// A follower that falls further behind than the writer keeps for it reads the rest from the
/// file: nothing lost, nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_falls_behind_reads_the_rest_from_the_file() {
    use warrant_store::contract::finished;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("w.db"), Durability::ProcessCrash).unwrap();
    let run = RunId("r1".into());
    store
        .append(&run, 0, vec![started("r1")], None)
        .await
        .unwrap();
    let mut feed = store.subscribe(&run, 1);
    assert_eq!(next(feed.as_mut()).await, Some(1));
    // Far more single-event commits than a follower is kept for, none of them read yet.
    let last = 3000;
    for seq in 2..last {
        store
            .append(&run, seq - 1, vec![step(seq)], None)
            .await
            .unwrap();
    }
    store
        .append(&run, last - 1, vec![finished(last)], None)
        .await
        .unwrap();
    let mut seqs = Vec::new();
    while let Some(seq) = next(feed.as_mut()).await {
        seqs.push(seq);
    }
    assert_eq!(seqs, (2..=last).collect::<Vec<_>>());
}

async fn next_event(
    feed: &mut dyn warrant_core::ports::EventFeed,
) -> Option<warrant_core::event::StoredEvent> {
    tokio::time::timeout(std::time::Duration::from_secs(10), feed.next())
        .await
        .expect("the follower saw nothing")
        .unwrap()
}

/// A store open for writing tells when another process commits to its file (an answer
/// `warrant approve` recorded): what a server's supervisor waits on instead of polling. Its
/// own commits tell nothing; a read-only store, which has no writer to watch, never tells.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_store_tells_when_another_process_commits() {
    use std::time::Duration;
    use warrant_store::contract::answered;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let run = RunId("r1".into());
    let here = SqliteStore::open(&path, Durability::Fsync).unwrap();
    here.append(&run, 0, vec![started("r1"), asked(2, "r1-a1")], None)
        .await
        .unwrap();
    // Its own commit is not another process's.
    let told = here.work_ready();
    here.append(&run, 2, vec![step(3)], None).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), told)
            .await
            .is_err(),
        "told of its own commit"
    );
    let told = here.work_ready();
    let there = SqliteStore::open(&path, Durability::Fsync).unwrap();
    there
        .append(&run, 3, vec![answered(4, "r1-a1")], None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), told)
        .await
        .expect("another process's commit is told");
    // A request to cancel another process commits (`warrant cancel`) is news to a run waiting
    // here, even when this process looked at the requests just before: the look the news
    // prompts finds it.
    assert_eq!(here.cancel_request(&run).await.unwrap(), None);
    let news = here
        .cancel_news()
        .expect("a writing store tells of requests");
    let request = warrant_core::store::CancelRequest {
        by: "op".into(),
        reason: "stop".into(),
        close: false,
    };
    there.request_cancel(&run, request).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), news)
        .await
        .expect("another process's request to cancel is news");
    let found = here.cancel_request(&run).await.unwrap();
    assert_eq!(found.map(|c| c.by).as_deref(), Some("op"));
    drop(there);
    assert!(
        SqliteStore::open_read_only(&path)
            .unwrap()
            .cancel_news()
            .is_none(),
        "a read-only store cannot tell"
    );
    let reading = SqliteStore::open_read_only(&path).unwrap();
    let never = reading.work_ready();
    here.append(&run, 4, vec![step(5)], None).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), never)
            .await
            .is_err()
    );
}

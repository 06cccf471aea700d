//! The PostgreSQL store keeps the same contract as the others (one suite, run unchanged), and
//! what only a fleet's store does: schema migrations checked at open, runs handed to workers
//! once each (`SKIP LOCKED`) and fairly between tenants, and wake-ups across processes by
//! `LISTEN/NOTIFY`. Each test has a schema of its own in the machine's PostgreSQL.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use warrant_core::event::{Event, EventKind, Principal};
use warrant_core::ids::RunId;
use warrant_core::ports::{Driver, EventStore, FairShare, LEASE_TTL_MS, StoreError};
use warrant_core::store::{
    IdempotencyKeys, Leases, LogReader, LogWriter, NoticeOutbox, RunsIndex, SpecCatalog,
};
use warrant_store::PostgresStore;
use warrant_store::contract::{self, postgres_scratch, step};

async fn store(label: &str) -> PostgresStore {
    PostgresStore::open(&postgres_scratch(label).await)
        .await
        .unwrap()
}

fn driver(holder: &str, now_ms: u64, epoch: u64) -> Driver {
    Driver {
        holder: Arc::from(holder),
        now_ms,
        epoch,
    }
}

/// `run_started` of `run` for `tenant`, at `at_ms`.
fn started_for(run: &str, tenant: &str, at_ms: u64) -> Arc<Event> {
    let mut e = (*contract::started_at(run, at_ms)).clone();
    if let EventKind::RunStarted { principal, .. } = &mut e.kind {
        *principal = Some(Box::new(Principal {
            tenant: tenant.into(),
            user: "u".into(),
            agent: "a".into(),
        }));
    }
    Arc::new(e)
}

/// Queues `run` as a server does: recorded, driven by nobody.
async fn queue(store: &dyn EventStore, run: &str, tenant: &str, at_ms: u64) {
    store
        .append(
            &RunId(run.into()),
            0,
            vec![started_for(run, tenant, at_ms)],
            None,
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_keeps_the_whole_contract() {
    contract::all(|| store("contract")).await;
}

/// A connection of its own to the database at `url`, for what a test does behind the store's
/// back.
async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// What takes a store of schema 8 back to 5: an event a row, indexed by its position too.
const SINCE_6: &str = "ALTER TABLE warrant_runs RESET (fillfactor);
     ALTER TABLE warrant_events ADD CONSTRAINT warrant_events_pkey PRIMARY KEY (position);
     ALTER TABLE warrant_events DROP COLUMN n_events;
     ALTER SEQUENCE warrant_events_position_seq INCREMENT BY 1;";

/// A log written an event a row (schema 5) reads whole after the migration to a row per
/// append, and goes on from it: the new rows' positions come after the old ones, and a read
/// from the middle of a row begins at the event asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_of_an_event_a_row_reads_whole_and_goes_on_after_the_migration() {
    let url = postgres_scratch("rows").await;
    PostgresStore::migrate(&url).await.unwrap();
    let client = sql(&url).await;
    client.batch_execute(SINCE_6).await.unwrap();
    // Three events of run `old`, as schema 5 wrote them: a row each, positions 1 to 3.
    client
        .execute(
            "INSERT INTO warrant_runs (run_id, spec_id, decider, status, started_at_ms, last_seq)
             VALUES ('old', 's', 'd', 'running', 10, 3)",
            &[],
        )
        .await
        .unwrap();
    let old = [contract::started("old"), step(2), step(3)];
    for e in &old {
        client
            .execute(
                "INSERT INTO warrant_events (run_id, seq, body) VALUES ('old', $1, $2)",
                &[
                    &i64::try_from(e.seq).unwrap(),
                    &warrant_core::event::encode(e),
                ],
            )
            .await
            .unwrap();
    }
    client
        .batch_execute("UPDATE warrant_meta SET value = '5' WHERE key = 'schema_version'")
        .await
        .unwrap();
    assert_eq!(PostgresStore::migrate(&url).await.unwrap(), (5, 8));

    let store = PostgresStore::open(&url).await.unwrap();
    let run = RunId("old".into());
    let read = store.read(&run, 1).await.unwrap();
    let seqs: Vec<u64> = read.iter().map(|e| e.event.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(
        read.iter().map(|e| e.position).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    // One append of three events: one row, after the old ones.
    store
        .append(&run, 3, vec![step(4), step(5), step(6)], None)
        .await
        .unwrap();
    let rows: i64 = client
        .query_one(
            "SELECT count(*) FROM warrant_events WHERE run_id = 'old'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 4, "the append is one row");
    let read = store.read(&run, 1).await.unwrap();
    assert_eq!(
        read.iter().map(|e| e.event.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    assert!(read.windows(2).all(|w| w[0].position < w[1].position));
    assert!(read.iter().all(|e| {
        e.event
            == old
                .get(e.event.seq as usize - 1)
                .cloned()
                .unwrap_or_else(|| step(e.event.seq))
    }));
    // From the middle of the new row, and from the last old row.
    let from_5 = store.read(&run, 5).await.unwrap();
    assert_eq!(
        from_5
            .iter()
            .map(|e| (e.event.seq, e.position))
            .collect::<Vec<_>>(),
        read[4..]
            .iter()
            .map(|e| (e.event.seq, e.position))
            .collect::<Vec<_>>()
    );
    let from_3 = store.read(&run, 3).await.unwrap();
    assert_eq!(
        from_3.iter().map(|e| e.event.seq).collect::<Vec<_>>(),
        [3, 4, 5, 6]
    );
    assert!(store.read(&run, 7).await.unwrap().is_empty());
}

/// A batch is committed whole or not at all: when one of its pipelined writes fails (here the
/// events' insert, on a row put in the way behind the store's back), the `COMMIT` behind it
/// commits nothing — the run's row keeps its last sequence — and the writer's connections go
/// on with the next batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_write_fails_commits_none_of_it() {
    let url = postgres_scratch("atomic").await;
    PostgresStore::migrate(&url).await.unwrap();
    let store = PostgresStore::open(&url).await.unwrap();
    let (run, other) = (RunId("r".into()), RunId("o".into()));
    store
        .append(&run, 0, vec![contract::started("r")], None)
        .await
        .unwrap();
    let client = sql(&url).await;
    client
        .execute(
            "INSERT INTO warrant_events (run_id, seq, body) VALUES ('r', 2, '{}')",
            &[],
        )
        .await
        .unwrap();
    let err = store
        .append(&run, 1, vec![step(2), step(3)], None)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Io(_)), "{err:?}");
    let last: i64 = client
        .query_one("SELECT last_seq FROM warrant_runs WHERE run_id = 'r'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        last, 1,
        "the run's row was not moved by a batch that failed"
    );
    // Every writer's connection takes the next batches (none is left in a failed transaction).
    contract::started_then_steps(&store, &other, 8).await;
    assert_eq!(store.read(&other, 1).await.unwrap().len(), 8);
}

/// Takes the store at `url` back to schema `version` with `statements`, and checks that it
/// then asks for the migration and is brought up to this build's schema by command.
async fn from_schema(url: &str, version: i64, statements: &str) {
    let client = sql(url).await;
    client
        .batch_execute(&format!(
            "{statements} UPDATE warrant_meta SET value = '{version}' WHERE key = 'schema_version';"
        ))
        .await
        .unwrap();
    let err = PostgresStore::open(url).await.err().unwrap().to_string();
    assert!(err.contains("warrant store migrate"), "{err}");
    assert_eq!(
        PostgresStore::migrate(url).await.unwrap(),
        (version, warrant_store::postgres::SCHEMA_VERSION)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_is_migrated_explicitly_and_checked_at_open() {
    let url = postgres_scratch("schema").await;
    // Migrating again changes nothing.
    assert_eq!(PostgresStore::migrate(&url).await.unwrap(), (8, 8));
    // A store of schema 5 (an event a row, runs' pages full) is brought up to 8, by command.
    from_schema(&url, 5, SINCE_6).await;
    // Of schema 4 (before presence keys).
    from_schema(
        &url,
        4,
        &format!("{SINCE_6} ALTER TABLE warrant_runs DROP COLUMN presence;"),
    )
    .await;
    // Of schema 3 (before the outbox of notices, schedules, grants and wake times).
    let since_4 = format!(
        "{SINCE_6} DROP TABLE warrant_notices; DROP TABLE warrant_schedules; DROP TABLE warrant_ticks;
         DROP TABLE warrant_grants; DROP INDEX warrant_runs_sleeping;
         ALTER TABLE warrant_runs DROP COLUMN wake_at_ms, DROP COLUMN presence;"
    );
    from_schema(&url, 3, &since_4).await;
    let store = PostgresStore::open(&url).await.unwrap();
    assert!(
        store
            .notices(warrant_core::notice::NoticeQuery::default())
            .await
            .unwrap()
            .is_empty()
    );
    // Of schema 2 (before idempotency keys).
    from_schema(
        &url,
        2,
        &format!("DROP TABLE warrant_idempotency; {since_4}"),
    )
    .await;
    let store = PostgresStore::open(&url).await.unwrap();
    assert_eq!(store.idempotency_get("t", "k", 1).await.unwrap(), None);
    // Of schema 1 (before the catalog).
    from_schema(
        &url,
        1,
        &format!("DROP TABLE warrant_catalog; DROP TABLE warrant_idempotency; {since_4}"),
    )
    .await;
    let store = PostgresStore::open(&url).await.unwrap();
    assert!(store.catalog(None).await.unwrap().is_empty());
    // A schema without Warrant's tables asks for the migration, by command.
    let empty = url.replace(
        "options=-csearch_path%3D",
        "options=-csearch_path%3Dnothing_",
    );
    let err = PostgresStore::open(&empty).await.err().unwrap().to_string();
    assert!(err.contains("warrant store migrate"), "{err}");
    // A newer schema is refused, by version.
    let client = sql(&url).await;
    client
        .execute(
            "UPDATE warrant_meta SET value = '99' WHERE key = 'schema_version'",
            &[],
        )
        .await
        .unwrap();
    let err = PostgresStore::open(&url).await.err().unwrap().to_string();
    assert!(err.contains("schema 99") && err.contains("newer"), "{err}");
    let err = PostgresStore::migrate(&url)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("schema 99"), "{err}");
    // A URL that is not one, and a database that is not there, are errors in words.
    let err = PostgresStore::open("postgres://a b@/").await.err().unwrap();
    assert!(err.to_string().contains("store:"), "{err}");
    let err = PostgresStore::open("postgres://nobody:secret@127.0.0.1:1/x")
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot connect"), "{err}");
    assert!(!err.contains("secret"), "the password was shown: {err}");
}

/// Two servers of a fleet putting one idempotency key at once (a client's retry that reached
/// another server) agree on one record: the database decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_agree_on_an_idempotency_key() {
    use warrant_store::contract::idempotency;
    let url = postgres_scratch("idem").await;
    let a = Arc::new(PostgresStore::open(&url).await.unwrap());
    let b = Arc::new(PostgresStore::open(&url).await.unwrap());
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
        assert_eq!(b.idempotency_get("t", &key, 200).await.unwrap(), Some(ra));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_ready_run_goes_to_one_worker_only() {
    let url = postgres_scratch("claim").await;
    let a = Arc::new(PostgresStore::open(&url).await.unwrap());
    let b = Arc::new(PostgresStore::open(&url).await.unwrap());
    for i in 0..60 {
        queue(&*a, &format!("q{i:02}"), "t", 100 + i).await;
    }
    // Two workers (two connections) claim at once, again and again, until nothing is left.
    let claim = |store: Arc<PostgresStore>, name: &'static str| async move {
        let mut mine = Vec::new();
        loop {
            let got = store
                .claim_ready(&driver(name, 1_000, 0), 7, FairShare::default())
                .await
                .unwrap();
            if got.is_empty() {
                return mine;
            }
            mine.extend(got);
        }
    };
    let (x, y) = tokio::join!(claim(a.clone(), "pid 1"), claim(b.clone(), "pid 2"));
    let all: Vec<&RunId> = x.iter().chain(&y).map(|(r, _)| r).collect();
    let distinct: HashSet<&RunId> = all.iter().copied().collect();
    assert_eq!(all.len(), 60, "some run was claimed twice or never");
    assert_eq!(distinct.len(), 60);
    // Each claim took a new epoch: the claimant's appends name it; anyone else's are fenced.
    let (owner, name, other, (run, epoch)) = match x.first() {
        Some(first) => (&a, "pid 1", &b, first),
        None => (&b, "pid 2", &a, &y[0]),
    };
    assert_eq!(*epoch, 2);
    owner
        .append(run, 1, vec![step(2)], Some(&driver(name, 1_001, *epoch)))
        .await
        .unwrap();
    let err = other
        .append(run, 2, vec![step(3)], Some(&driver("pid 3", 1_002, 1)))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");
    // A live lease is not handed out again; a lapsed one is, with the next epoch.
    let again = b
        .claim_ready(&driver("pid 2", 1_500, 0), 100, FairShare::default())
        .await
        .unwrap();
    assert!(again.is_empty(), "{again:?}");
    let later = 1_001 + LEASE_TTL_MS;
    let lapsed = b
        .claim_ready(&driver("pid 2", later, 0), 100, FairShare::default())
        .await
        .unwrap();
    assert_eq!(lapsed.len(), 60);
    assert!(lapsed.contains(&(run.clone(), 3)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_tenant_does_not_starve_another() {
    let s = store("fair").await;
    for i in 0..20 {
        queue(&s, &format!("big{i:02}"), "big", 100 + i).await;
    }
    for i in 0..3 {
        queue(&s, &format!("small{i}"), "small", 500 + i).await;
    }
    let share = FairShare {
        runs_per_tenant: 2,
        approvals_per_tenant: 0,
    };
    let got = s
        .claim_ready(&driver("pid 1", 1_000, 0), 10, share)
        .await
        .unwrap();
    let mut names: Vec<&str> = got.iter().map(|(r, _)| r.0.as_str()).collect();
    names.sort_unstable();
    // Two of each, though the big tenant's twenty runs came first.
    assert_eq!(names, vec!["big00", "big01", "small0", "small1"]);
    // Nobody else gets more of either while those are driven.
    let more = s
        .claim_ready(&driver("pid 2", 1_000, 0), 10, share)
        .await
        .unwrap();
    assert!(more.is_empty(), "{more:?}");
    // A run passed over says why, in its summary.
    let waiting = s.summary(&RunId("big05".into())).await.unwrap().unwrap();
    let note = waiting.note.unwrap_or_default();
    assert!(
        note.contains("tenant `big`") && note.contains("limit"),
        "{note}"
    );
    // Taken up, the note is gone.
    let small2 = s.summary(&RunId("small2".into())).await.unwrap().unwrap();
    assert!(small2.note.is_some());
    let run = RunId("small0".into());
    s.append(
        &run,
        1,
        vec![contract::finished(2)],
        Some(&driver(
            "pid 1",
            1_100,
            got.iter().find(|(r, _)| *r == run).unwrap().1,
        )),
    )
    .await
    .unwrap();
    let next = s
        .claim_ready(&driver("pid 2", 1_200, 0), 10, share)
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].0.0, "small2");
    assert!(
        s.summary(&RunId("small2".into()))
            .await
            .unwrap()
            .unwrap()
            .note
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_with_approvals_pending_starts_no_new_run() {
    let s = store("approvals").await;
    queue(&s, "asking", "acme", 100).await;
    let run = RunId("asking".into());
    s.append(&run, 1, vec![contract::asked(2, "asking-a1")], None)
        .await
        .unwrap();
    queue(&s, "new", "acme", 200).await;
    queue(&s, "other", "zeta", 300).await;
    let share = FairShare {
        runs_per_tenant: 0,
        approvals_per_tenant: 1,
    };
    let got = s
        .claim_ready(&driver("pid 1", 1_000, 0), 10, share)
        .await
        .unwrap();
    let names: Vec<&str> = got.iter().map(|(r, _)| r.0.as_str()).collect();
    assert_eq!(names, vec!["other"]);
    let note = s
        .summary(&RunId("new".into()))
        .await
        .unwrap()
        .unwrap()
        .note
        .unwrap();
    assert!(note.contains("1 approvals pending"), "{note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_is_woken_by_notifications() {
    let url = postgres_scratch("notify").await;
    let writer = PostgresStore::open(&url).await.unwrap();
    let reader = PostgresStore::open(&url).await.unwrap();
    // Let the reader's listening connection come up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ready = reader.work_ready();
    queue(&writer, "r1", "t", 100).await;
    tokio::time::timeout(Duration::from_secs(5), ready)
        .await
        .expect("a queued run wakes the workers of another process");
    let run = RunId("r1".into());
    let mut feed = reader.subscribe(&run, 1);
    assert_eq!(feed.next().await.unwrap().unwrap().event.seq, 1);
    let next = feed.next();
    let append = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        writer.append(&run, 1, vec![step(2)], None).await.unwrap();
    };
    let (got, ()) =
        tokio::time::timeout(Duration::from_secs(4), async { tokio::join!(next, append) })
            .await
            .expect("the follower in another process is woken");
    assert_eq!(got.unwrap().unwrap().event.seq, 2);
    // A request to cancel made by another process is news to a run waiting here, and the
    // look it prompts finds it.
    let news = reader
        .cancel_news()
        .expect("the store tells of requests to cancel");
    let request = warrant_core::store::CancelRequest {
        by: "op".into(),
        reason: "stop".into(),
        close: false,
    };
    writer.request_cancel(&run, request).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), news)
        .await
        .expect("another process's request to cancel is news");
    let found = reader.cancel_request(&run).await.unwrap();
    assert_eq!(found.map(|c| c.by).as_deref(), Some("op"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_claims_a_tree_by_its_root_never_a_child_alone() {
    let url = postgres_scratch("tree").await;
    let store = PostgresStore::open(&url).await.unwrap();
    // A root and its child, both recorded with no driver (claimable if they were roots).
    queue(&store, "t1", "t", 100).await;
    queue(&store, "t1.1", "t", 101).await;
    let got = store
        .claim_ready(&driver("pid 1", 1_000, 0), 10, FairShare::default())
        .await
        .unwrap();
    let ids: Vec<&str> = got.iter().map(|(r, _)| r.0.as_str()).collect();
    assert_eq!(
        ids,
        ["t1"],
        "the child is driven with its tree, by its root"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_run_is_claimed_by_one_worker_once_its_time_comes() {
    let s = store("sleep").await;
    let run = RunId("nap".into());
    let d = driver("pid 1", 1_000, 0);
    s.append(
        &run,
        0,
        vec![started_for("nap", "t", 1_000), step(2)],
        Some(&d),
    )
    .await
    .unwrap();
    let epoch = s.summary(&run).await.unwrap().unwrap().epoch;
    s.append(
        &run,
        2,
        vec![contract::slept(3, 60_000)],
        Some(&driver("pid 1", 1_001, epoch)),
    )
    .await
    .unwrap();
    // Before its time nobody takes it; at its time one worker does, with a new epoch.
    let early = s
        .claim_ready(&driver("pid 2", 59_999, 0), 10, FairShare::default())
        .await
        .unwrap();
    assert!(early.is_empty(), "{early:?}");
    let (a, b) = tokio::join!(
        s.claim_ready(&driver("pid 2", 60_000, 0), 10, FairShare::default()),
        s.claim_ready(&driver("pid 3", 60_000, 0), 10, FairShare::default()),
    );
    let claimed: Vec<(RunId, u64)> = a.unwrap().into_iter().chain(b.unwrap()).collect();
    assert_eq!(claimed, vec![(run.clone(), epoch + 1)]);
}

/// A worker that dies (its process, and so its database session, gone) has its runs taken over
/// at once, however it took them (claimed by name, claimed when ready, begun by an append), not
/// when its lease lapses; while it lives, silent or not, they stay its own until then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_workers_runs_are_taken_over_at_once_a_live_ones_only_when_its_lease_lapses() {
    let url = postgres_scratch("presence").await;
    let survivor = PostgresStore::open(&url).await.unwrap();
    let dying = PostgresStore::open(&url).await.unwrap();
    for store in [&survivor, &dying] {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !store.present() {
            assert!(
                std::time::Instant::now() < deadline,
                "the presence lock was not taken"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mine = |now_ms| driver("pid dying", now_ms, 0);
    let theirs = |now_ms| driver("pid survivor", now_ms, 0);
    // Two runs claimed when ready, one claimed by name, one begun by the dying worker itself.
    queue(&survivor, "a", "t", 100).await;
    queue(&survivor, "b", "t", 101).await;
    queue(&survivor, "c", "t", 102).await;
    let claimed = dying
        .claim_ready(&mine(1_000), 2, FairShare::default())
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    let c = RunId("c".into());
    assert!(matches!(
        dying.claim(&c, &mine(1_000)).await.unwrap(),
        warrant_core::store::Claim::Taken { .. }
    ));
    let d = RunId("d".into());
    dying
        .append(
            &d,
            0,
            vec![started_for("d", "t", 1_000)],
            Some(&mine(1_000)),
        )
        .await
        .unwrap();
    // Alive, it keeps them all: nobody else takes one before its lease lapses, and each is
    // listed as driven.
    let listed = survivor.summary(&d).await.unwrap().unwrap();
    assert!(listed.driven(1_001), "{listed:?}");
    let none = survivor
        .claim_ready(&theirs(1_001), 10, FairShare::default())
        .await
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
    for run in [&c, &d] {
        assert!(matches!(
            survivor.claim(run, &theirs(1_001)).await.unwrap(),
            warrant_core::store::Claim::Held(_)
        ));
    }
    // It dies: its session ends and the database lets its lock go. Its runs are taken over
    // with the clock still well inside its lease.
    let epochs: Vec<u64> = {
        let mut e = Vec::new();
        for run in ["a", "b", "c", "d"] {
            e.push(
                survivor
                    .summary(&RunId(run.into()))
                    .await
                    .unwrap()
                    .unwrap()
                    .epoch,
            );
        }
        e
    };
    drop(dying);
    // Listed as driven by nobody as soon as the database let its lock go.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while survivor.summary(&d).await.unwrap().unwrap().driven(1_002) {
        assert!(
            std::time::Instant::now() < deadline,
            "a dead worker's run is still listed as driven"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut taken: HashSet<String> = HashSet::new();
    while taken.len() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "a dead worker's runs were not all taken over: {taken:?}"
        );
        let got = survivor
            .claim_ready(&theirs(1_002), 10, FairShare::default())
            .await
            .unwrap();
        taken.extend(got.into_iter().map(|(r, _)| r.0));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (i, run) in ["a", "b", "c", "d"].iter().enumerate() {
        let now = survivor
            .summary(&RunId((*run).into()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(now.holder.as_deref(), Some("pid survivor"), "{run}");
        assert!(now.epoch > epochs[i], "{run}: the dead worker is fenced");
    }
}

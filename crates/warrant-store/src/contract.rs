//! The store contract: what every implementation of the Store port must do, written once to
//! run against any of them (`contract::all(|| async { a fresh store })`). The memory and SQLite
//! and PostgreSQL stores run it in this crate's tests.
//!
//! Each check panics with what was wrong.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a test suite: a failed expectation is a panic naming it"
)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use warrant_core::event::{
    ApprovalScope, DeciderIdentity, EVENTS_FORMAT, Effect, Event, EventKind, Outcome,
};
use warrant_core::ids::{CallId, RunId, StepId};
use warrant_core::spec::{Format, Spec};
use warrant_core::status::RunStatus;
use warrant_core::store::{
    CancelRequest, Claim, Driver, EventStore, IDEMPOTENCY_PURGE_MAX, IdempotencyKeys,
    IdempotencyRecord, LEASE_TTL_MS, RunPage, RunQuery, SpecCatalog, StoreError,
};

/// A spec for the runs the suite writes.
pub fn spec() -> Arc<Spec> {
    let yaml = "version: warrant/v1\nid: s\nobjective: o\nproviders: {p: {reference: cafe}}\nsteps: [{id: a, provider: p, tools: [t]}]\n";
    Arc::new(Spec::parse(yaml, Format::Yaml, "s.yaml").unwrap())
}

/// `run_started` of `run`, at `at_ms`.
pub fn started_at(run: &str, at_ms: u64) -> Arc<Event> {
    Arc::new(Event {
        seq: 1,
        at_ms,
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
            provenance: None,
            messages: None,
            parent: None,
            inputs: None,
            build: None,
        },
    })
}

/// `run_started` of `run`.
pub fn started(run: &str) -> Arc<Event> {
    started_at(run, 10)
}

/// A `step_started` with sequence `seq`.
pub fn step(seq: u64) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 10 + seq,
        kind: EventKind::StepStarted {
            step: StepId("a".into()),
            provider: "p".into(),
        },
    })
}

/// Starts `run` and appends its steps up to sequence `last`, one append each (no driver).
pub async fn started_then_steps(store: &dyn EventStore, run: &RunId, last: u64) {
    store
        .append(run, 0, vec![started(&run.0)], None)
        .await
        .unwrap();
    for seq in 2..=last {
        store
            .append(run, seq - 1, vec![step(seq)], None)
            .await
            .unwrap();
    }
}

/// `run_finished` (attained) with sequence `seq`.
pub fn finished(seq: u64) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 99,
        kind: EventKind::RunFinished {
            outcome: Outcome::Attained,
        },
    })
}

/// An approval request `request` with sequence `seq`.
pub fn asked(seq: u64, request: &str) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 50,
        kind: EventKind::ApprovalRequested {
            request: request.into(),
            call: CallId(1),
            step: StepId("a".into()),
            principal: "t/u/a".into(),
            provider: "p".into(),
            tool: "t".into(),
            effect: Effect::Commit,
            args_digest: "d".into(),
            schema_digest: "s".into(),
            args: Arc::new(json!({"amount": 5})),
            provenance: Box::default(),
            reason: "a person must approve it".into(),
            proposed_scope: ApprovalScope::Once,
            expires_at_ms: 1_000_000,
            approvers: 1,
        },
    })
}

/// An answer to `request` with sequence `seq`.
pub fn answered(seq: u64, request: &str) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 60,
        kind: EventKind::ApprovalResolved {
            request: request.into(),
            approved: true,
            scope: Some(ApprovalScope::Once),
            until_ms: None,
            by: "alice".into(),
            reason: String::new(),
            edited_args: None,
            awaiting: 0,
            rule: None,
        },
    })
}

fn driver(holder: &str, now_ms: u64, epoch: u64) -> Driver {
    Driver {
        holder: holder.into(),
        now_ms,
        epoch,
    }
}

fn seqs(events: &[warrant_core::event::StoredEvent]) -> Vec<u64> {
    events.iter().map(|e| e.event.seq).collect()
}

/// Runs every check, each against a fresh store from `make`.
pub async fn all<S, F, M>(make: M)
where
    S: EventStore + 'static,
    F: Future<Output = S>,
    M: Fn() -> F,
{
    appends_are_atomic_ordered_and_optimistic(&make().await).await;
    listing_is_newest_first_filtered_and_paged(&make().await).await;
    pending_approvals_are_indexed(&make().await).await;
    a_subscription_sees_every_event_once_across_appends(make().await).await;
    leases_fence_a_driver_that_lost_its_run(&make().await).await;
    cancellations_are_recorded_once(&make().await).await;
    an_answered_child_makes_its_root_ready(&make().await).await;
    a_catalog_keeps_every_version_and_retires_them(&make().await).await;
    an_idempotency_key_is_kept_once_per_tenant_until_it_expires(&make().await).await;
    concurrent_puts_of_one_idempotency_key_all_find_one_run(&make().await).await;
    appends_fill_the_outbox_and_deliverers_take_each_notice_once(&make().await).await;
    a_schedules_tick_is_claimed_once_and_its_state_kept(&make().await).await;
    standing_grants_are_kept_listed_by_tenant_and_revoked_once(&make().await).await;
    a_sleeping_run_is_indexed_with_its_wake_time(&make().await).await;
}

/// `timer_set` with sequence `seq`, waking at `until_ms`.
pub fn slept(seq: u64, until_ms: u64) -> Arc<Event> {
    Arc::new(Event {
        seq,
        at_ms: 10 + seq,
        kind: EventKind::TimerSet {
            step: StepId("a".into()),
            until_ms,
            reason: String::new(),
        },
    })
}

/// A run that sleeps is `sleeping` with its wake time, held by nobody, and listed as due once
/// its time has come; woken, it is `running` with no wake time.
pub async fn a_sleeping_run_is_indexed_with_its_wake_time(store: &dyn EventStore) {
    let d = driver("pid 1", 20, 1);
    for (run, until) in [("early", 1_000), ("late", 5_000)] {
        let id = RunId(run.into());
        store
            .append(&id, 0, vec![started(run), step(2)], Some(&d))
            .await
            .unwrap();
        store
            .append(&id, 2, vec![slept(3, until)], Some(&d))
            .await
            .unwrap();
        let s = store.summary(&id).await.unwrap().unwrap();
        assert_eq!(s.status, RunStatus::Sleeping, "{s:?}");
        assert_eq!(s.wake_at_ms, Some(until));
        assert_eq!(s.holder, None, "a sleeping run is held by no process");
    }
    let due = |at: u64| RunQuery {
        status: Some(RunStatus::Sleeping),
        due_by: Some(at),
        ..RunQuery::default()
    };
    let names =
        |page: RunPage| -> Vec<String> { page.runs.into_iter().map(|r| r.run_id.0).collect() };
    assert!(names(store.runs(due(999)).await.unwrap()).is_empty());
    assert_eq!(names(store.runs(due(1_000)).await.unwrap()), vec!["early"]);
    assert_eq!(
        names(store.runs(due(9_000)).await.unwrap()),
        vec!["late", "early"]
    );
    // Woken (a re-entry, then the timer's firing), it runs, and is due no more.
    let early = RunId("early".into());
    let woke = Arc::new(Event {
        seq: 4,
        at_ms: 1_001,
        kind: EventKind::RunResumed {
            in_flight: None,
            setup_ms: None,
            by: None,
        },
    });
    let waker = driver("pid 2", 1_001, 0);
    let Claim::Taken { epoch } = store.claim(&early, &waker).await.unwrap() else {
        panic!("a sleeping run is nobody's to hold");
    };
    store
        .append(&early, 3, vec![woke], Some(&Driver { epoch, ..waker }))
        .await
        .unwrap();
    let s = store.summary(&early).await.unwrap().unwrap();
    assert_eq!((s.status, s.wake_at_ms), (RunStatus::Running, None));
    assert_eq!(names(store.runs(due(9_000)).await.unwrap()), vec!["late"]);
}

/// A grant is kept once by id, listed newest first by tenant, and revoked once (only within
/// its tenant, when one is named).
pub async fn standing_grants_are_kept_listed_by_tenant_and_revoked_once(store: &dyn EventStore) {
    use warrant_core::standing::{Revoked, StandingGrant};
    let grant = |id: &str, tenant: &str, at: u64| StandingGrant {
        id: id.into(),
        tenant: tenant.into(),
        user: None,
        provider: "bank".into(),
        tool: "transfer".into(),
        args: std::collections::BTreeMap::new(),
        by: format!("{tenant}/ann"),
        created_at_ms: at,
        expires_at_ms: None,
        note: String::new(),
        revoked: None,
    };
    store.grant_put(grant("g-1", "acme", 10)).await.unwrap();
    store.grant_put(grant("g-2", "acme", 20)).await.unwrap();
    store.grant_put(grant("g-3", "other", 30)).await.unwrap();
    assert!(store.grant_put(grant("g-1", "acme", 40)).await.is_err());
    let ids = |gs: Vec<StandingGrant>| gs.into_iter().map(|g| g.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.grants(Some("acme")).await.unwrap()),
        ["g-2", "g-1"]
    );
    assert_eq!(
        ids(store.grants(None).await.unwrap()),
        ["g-3", "g-2", "g-1"]
    );
    let by = Revoked {
        by: "acme/bob".into(),
        at_ms: 50,
    };
    // Another tenant's grant is not found; a grant is revoked once.
    assert!(
        !store
            .grant_revoke("g-3", Some("acme"), by.clone())
            .await
            .unwrap()
    );
    assert!(
        store
            .grant_revoke("g-1", Some("acme"), by.clone())
            .await
            .unwrap()
    );
    assert!(!store.grant_revoke("g-1", None, by.clone()).await.unwrap());
    let kept = store.grants(Some("acme")).await.unwrap();
    assert_eq!(kept[1].revoked, Some(by));
    assert_eq!(kept[0].revoked, None);
}

/// A schedule is kept by id (put again: replaced); a tick is claimed once whoever claims it,
/// its state updated in place; ticks are listed newest first; removing a schedule removes
/// its ticks.
pub async fn a_schedules_tick_is_claimed_once_and_its_state_kept(store: &dyn EventStore) {
    use warrant_core::schedule::{Schedule, Tick, TickState};
    let mut nightly = Schedule {
        id: "nightly".into(),
        cron: "0 2 * * *".parse().unwrap(),
        time_zone: "Europe/Berlin".into(),
        spec_id: "pay-to".into(),
        spec_digest: None,
        inputs: serde_json::Map::new(),
        overlap: Default::default(),
        catch_up: Default::default(),
        tenant: "acme".into(),
        user: "ops".into(),
        paused: false,
        created_at_ms: 1_000,
        from_ms: 1_000,
    };
    assert!(store.schedule_put(nightly.clone()).await.unwrap());
    nightly.paused = true;
    assert!(!store.schedule_put(nightly.clone()).await.unwrap());
    assert_eq!(store.schedules().await.unwrap(), vec![nightly.clone()]);
    let tick = |at_ms| Tick {
        schedule: "nightly".into(),
        at_ms,
        run_id: Some(RunId(format!("r{at_ms}"))),
        state: TickState::Started,
        note: None,
    };
    assert!(store.tick_claim(tick(10)).await.unwrap());
    assert!(!store.tick_claim(tick(10)).await.unwrap());
    assert!(store.tick_claim(tick(20)).await.unwrap());
    let mut queued = tick(30);
    queued.state = TickState::Queued;
    assert!(store.tick_claim(queued.clone()).await.unwrap());
    queued.state = TickState::Started;
    queued.note = Some("the previous run ended".into());
    store.tick_update(&queued).await.unwrap();
    let listed = store.ticks(Some("nightly"), 2).await.unwrap();
    assert_eq!(listed, vec![queued, tick(20)]);
    assert!(store.ticks(Some("other"), 0).await.unwrap().is_empty());
    assert!(store.schedule_remove("nightly").await.unwrap());
    assert!(!store.schedule_remove("nightly").await.unwrap());
    assert!(store.ticks(None, 0).await.unwrap().is_empty());
    assert!(store.schedules().await.unwrap().is_empty());
}

/// An append's notices are in the outbox as soon as it commits and never for one that
/// failed; a notice taken is leased (another taker does not get it until the lease lapses);
/// a settled notice is not changed by a late settle; a put is insert-if-absent; a settled
/// notice is purged when old.
pub async fn appends_fill_the_outbox_and_deliverers_take_each_notice_once(store: &dyn EventStore) {
    use warrant_core::notice::{Notice, NoticeKind, NoticeQuery, NoticeState};
    let run = RunId("n1".into());
    store
        .append(&run, 0, vec![started("n1"), asked(2, "n1-a1")], None)
        .await
        .unwrap();
    // A conflicting append writes no notice.
    assert!(
        store
            .append(&run, 1, vec![finished(2)], None)
            .await
            .is_err()
    );
    let listed = store.notices(NoticeQuery::default()).await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|n| n.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec!["n1/2/approval.requested", "n1/2/run.waiting"]);
    assert!(listed.iter().all(|n| n.state == NoticeState::Pending));
    // Taken: leased to the taker, one attempt more; not due to anyone else meanwhile.
    let taken = store.notices_due(100, 30_000, 10).await.unwrap();
    assert_eq!(taken.len(), 2);
    assert!(
        taken
            .iter()
            .all(|n| n.attempts == 1 && n.next_at_ms == 30_100)
    );
    assert!(store.notices_due(200, 30_000, 10).await.unwrap().is_empty());
    // The lease lapsed: taken again.
    let again = store.notices_due(30_100, 30_000, 1).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 2);
    // Settled delivered: a late settle (a taker whose lease lapsed) changes nothing.
    let mut done = again[0].clone();
    done.state = NoticeState::Delivered;
    done.delivered_to = vec!["ops".into()];
    done.settled_at_ms = Some(30_200);
    assert!(store.notice_settle(&done).await.unwrap());
    let mut late = again[0].clone();
    late.last_error = Some("timed out".into());
    assert!(!store.notice_settle(&late).await.unwrap());
    let now = store
        .notices(NoticeQuery {
            state: Some(NoticeState::Delivered),
            ..NoticeQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].delivered_to, vec!["ops".to_owned()]);
    assert_eq!(now[0].last_error, None);
    // The run ends: its notice joins the outbox.
    store
        .append(&run, 2, vec![finished(3)], None)
        .await
        .unwrap();
    let of_run = store
        .notices(NoticeQuery {
            run: Some(run.clone()),
            limit: 1,
            ..NoticeQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(of_run.len(), 1);
    assert_eq!(of_run[0].kind, NoticeKind::RunFinished);
    // A put is insert-if-absent.
    let expiring = Notice::new(&run, 2, NoticeKind::ApprovalExpiring, 500);
    assert!(store.notice_put(expiring.clone()).await.unwrap());
    assert!(!store.notice_put(expiring).await.unwrap());
    let counts = store.notice_counts().await.unwrap();
    let count = |s| counts.iter().find(|(k, _)| *k == s).map_or(0, |(_, n)| *n);
    assert_eq!(count(NoticeState::Pending), 3);
    assert_eq!(count(NoticeState::Delivered), 1);
    // Purged once old: only settled ones.
    assert_eq!(store.notices_purge(30_000, 10).await.unwrap(), 0);
    assert_eq!(store.notices_purge(40_000, 10).await.unwrap(), 1);
    assert_eq!(
        store.notices(NoticeQuery::default()).await.unwrap().len(),
        3
    );
}

/// An idempotency record of `tenant`'s `key` for `run`, kept at `at_ms` until `expires_at_ms`.
pub fn idempotency(
    tenant: &str,
    key: &str,
    run: &str,
    at_ms: u64,
    expires_at_ms: u64,
) -> IdempotencyRecord {
    IdempotencyRecord {
        tenant: tenant.into(),
        key: key.into(),
        digest: format!("sha256:{run}"),
        run_id: RunId(run.into()),
        created_at_ms: at_ms,
        expires_at_ms,
    }
}

/// A key is kept once: a second put finds the first record (its run), not its own; a key of
/// another tenant is another key; an expired record is not found and a put replaces it.
pub async fn an_idempotency_key_is_kept_once_per_tenant_until_it_expires(
    store: &dyn IdempotencyKeys,
) {
    assert_eq!(store.idempotency_get("t1", "k", 100).await.unwrap(), None);
    let first = idempotency("t1", "k", "r1", 100, 1_000);
    assert_eq!(
        store.idempotency_put(first.clone(), 100).await.unwrap(),
        first
    );
    // Another request with the key: the record held is the first one.
    let second = idempotency("t1", "k", "r2", 200, 1_200);
    assert_eq!(store.idempotency_put(second, 200).await.unwrap(), first);
    assert_eq!(
        store.idempotency_get("t1", "k", 999).await.unwrap(),
        Some(first.clone())
    );
    // Another tenant's key of the same name is its own.
    let theirs = idempotency("t2", "k", "r3", 300, 1_300);
    assert_eq!(
        store.idempotency_put(theirs.clone(), 300).await.unwrap(),
        theirs
    );
    assert_eq!(
        store.idempotency_get("t2", "k", 300).await.unwrap(),
        Some(theirs)
    );
    assert_eq!(
        store.idempotency_get("t1", "other", 300).await.unwrap(),
        None
    );
    // Expired at its time: not found, and the next put of the key is kept.
    assert_eq!(store.idempotency_get("t1", "k", 1_000).await.unwrap(), None);
    let later = idempotency("t1", "k", "r4", 1_000, 5_000);
    assert_eq!(
        store.idempotency_put(later.clone(), 1_000).await.unwrap(),
        later
    );
    assert_eq!(
        store.idempotency_get("t1", "k", 1_001).await.unwrap(),
        Some(later)
    );
    // Many expired records are purged a bounded number at a time, never a live one.
    for i in 0..(2 * IDEMPOTENCY_PURGE_MAX + 5) {
        let old = idempotency("t3", &format!("old-{i}"), &format!("o{i}"), 10, 20);
        store.idempotency_put(old, 10).await.unwrap();
    }
    let live = idempotency("t3", "live", "r5", 30, 10_000);
    assert_eq!(store.idempotency_put(live.clone(), 30).await.unwrap(), live);
    assert_eq!(
        store.idempotency_get("t3", "live", 9_999).await.unwrap(),
        Some(live)
    );
    assert_eq!(
        store.idempotency_get("t3", "old-0", 30).await.unwrap(),
        None
    );
}

/// Requests that put one key at once, each with a run of its own, all find the same record:
/// exactly one of them won, and every other one is told its run.
pub async fn concurrent_puts_of_one_idempotency_key_all_find_one_run(store: &dyn IdempotencyKeys) {
    let put = |run: &str| store.idempotency_put(idempotency("t", "k", run, 100, 10_000), 100);
    let (a, b, c, d) = within(Duration::from_secs(30), async {
        tokio::join!(put("r1"), put("r2"), put("r3"), put("r4"))
    })
    .await;
    let held = [a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap()];
    assert!(
        held.windows(2).all(|w| w[0] == w[1]),
        "every put finds the record of the one that won: {held:?}"
    );
    assert_eq!(
        store.idempotency_get("t", "k", 100).await.unwrap().as_ref(),
        held.first()
    );
}

/// The catalog keeps each version of a spec by its digest, newest first; retiring one keeps
/// it listed as retired; adding it again brings it back.
pub async fn a_catalog_keeps_every_version_and_retires_them(store: &dyn SpecCatalog) {
    use warrant_core::store::CatalogEntry;
    let entry = |objective: &str, at: u64| {
        let mut s = (*spec()).clone();
        s.objective = objective.into();
        CatalogEntry {
            id: s.id.clone(),
            digest: s.hash(),
            spec: Arc::new(s),
            added_at_ms: at,
            added_by: "ops".into(),
            retired_at_ms: None,
        }
    };
    let (v1, v2) = (entry("first", 10), entry("second", 20));
    assert!(store.catalog_add(v1.clone()).await.unwrap());
    assert!(store.catalog_add(v2.clone()).await.unwrap());
    assert!(
        !store.catalog_add(v1.clone()).await.unwrap(),
        "the same version twice"
    );
    let listed = store.catalog(Some("s")).await.unwrap();
    assert_eq!(listed, vec![v2.clone(), v1.clone()]);
    assert!(store.catalog(Some("other")).await.unwrap().is_empty());
    assert_eq!(
        store
            .catalog_retire("s", Some(&v2.digest), 30)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .catalog_retire("s", Some(&v2.digest), 31)
            .await
            .unwrap(),
        0
    );
    let listed = store.catalog(None).await.unwrap();
    assert_eq!(listed[0].retired_at_ms, Some(30));
    assert_eq!(listed[1].retired_at_ms, None);
    assert_eq!(listed[0].spec.objective, "second");
    assert!(!store.catalog_add(v2.clone()).await.unwrap());
    assert_eq!(store.catalog(None).await.unwrap()[0].retired_at_ms, None);
    assert_eq!(store.catalog_retire("s", None, 40).await.unwrap(), 2);
}

/// A tree of runs is carried on by its root's driver: when a person answers a child's
/// request, its waiting root becomes ready (in the same transaction), so whatever resumes
/// ready runs resumes the tree; a root that is not waiting is left as it is.
pub async fn an_answered_child_makes_its_root_ready(store: &dyn EventStore) {
    let (root, child) = (RunId("t1".into()), RunId("t1.1".into()));
    let waits = Arc::new(Event {
        seq: 2,
        at_ms: 20,
        kind: EventKind::ChildWaiting {
            step: StepId("a".into()),
            children: vec![child.clone()],
        },
    });
    store
        .append(&root, 0, vec![started("t1"), waits], None)
        .await
        .unwrap();
    store
        .append(&child, 0, vec![started("t1.1"), asked(2, "t1.1-a1")], None)
        .await
        .unwrap();
    assert_eq!(
        store.summary(&root).await.unwrap().unwrap().status,
        "waiting"
    );
    store
        .append(&child, 2, vec![answered(3, "t1.1-a1")], None)
        .await
        .unwrap();
    assert_eq!(
        store.summary(&child).await.unwrap().unwrap().status,
        "ready"
    );
    assert_eq!(store.summary(&root).await.unwrap().unwrap().status, "ready");
}

/// The database tests use (`WARRANT_TEST_POSTGRES`, else the machine's PostgreSQL on
/// loopback).
#[cfg(feature = "postgres")]
pub fn postgres_base() -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "a test suite's one knob: which database to use"
    )]
    std::env::var("WARRANT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A fresh schema of its own in the test database, with Warrant's tables migrated into it:
/// its store URL. Every test gets one, so tests never see each other's runs.
#[cfg(feature = "postgres")]
pub async fn postgres_scratch(label: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let base = postgres_base();
    let schema = format!(
        "w_{label}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    crate::postgres::PostgresStore::scratch(&base, &schema)
        .await
        .unwrap_or_else(|e| panic!("the tests need PostgreSQL at {base}: {e}"))
}

/// Batches are atomic; a writer that expected an older sequence is refused (nothing of its
/// batch written) and only its own append fails; a run begins with `run_started`.
pub async fn appends_are_atomic_ordered_and_optimistic(store: &dyn EventStore) {
    let run = RunId("r1".into());
    store
        .append(&run, 0, vec![started("r1"), step(2)], None)
        .await
        .unwrap();
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
    // A conflict fails only its own run's append: another run's, at the same moment, lands.
    let other = RunId("r2".into());
    let (stale, fine) = tokio::join!(
        store.append(&run, 1, vec![step(2)], None),
        store.append(&other, 0, vec![started("r2")], None)
    );
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    fine.unwrap();
    store
        .append(&run, 2, vec![finished(3)], None)
        .await
        .unwrap();
    let events = store.read(&run, 1).await.unwrap();
    assert_eq!(seqs(&events), vec![1, 2, 3]);
    assert!(events.windows(2).all(|w| w[0].position < w[1].position));
    assert_eq!(seqs(&store.read(&run, 3).await.unwrap()), vec![3]);
    let s = store.summary(&run).await.unwrap().unwrap();
    assert_eq!((s.status.as_str(), s.events), ("attained", 3));
    assert!(
        store
            .append(&RunId("r3".into()), 0, vec![step(1)], None)
            .await
            .is_err(),
        "a run must begin with `run_started`"
    );
    assert!(
        store
            .read(&RunId("none".into()), 1)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.summary(&RunId("none".into())).await.unwrap(), None);
}

/// Runs are listed newest first, filtered by status, spec, id prefix and start, a page at a
/// time: every run once across the pages, none skipped when runs started at the same time.
pub async fn listing_is_newest_first_filtered_and_paged(store: &dyn EventStore) {
    // Seven runs; three share a start time.
    let starts = [100, 200, 300, 300, 300, 400, 500];
    for (i, at) in starts.iter().enumerate() {
        let id = format!("run-{i}");
        store
            .append(&RunId(id.clone()), 0, vec![started_at(&id, *at)], None)
            .await
            .unwrap();
    }
    store
        .append(&RunId("run-1".into()), 1, vec![finished(2)], None)
        .await
        .unwrap();
    let all = store.runs(RunQuery::default()).await.unwrap();
    assert_eq!(all.runs.len(), 7);
    assert_eq!(all.next, None);
    assert!(
        all.runs
            .windows(2)
            .all(|w| w[0].started_at_ms >= w[1].started_at_ms),
        "newest first"
    );
    // Paged by two: every run exactly once.
    let mut seen = Vec::new();
    let mut query = RunQuery {
        limit: 2,
        ..RunQuery::default()
    };
    for _ in 0..10 {
        let page = store.runs(query.clone()).await.unwrap();
        assert!(page.runs.len() <= 2);
        seen.extend(page.runs.iter().map(|r| r.run_id.0.clone()));
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    let mut expected: Vec<String> = all.runs.iter().map(|r| r.run_id.0.clone()).collect();
    assert_eq!(seen, expected, "the pages, in order, are the whole listing");
    expected.sort();
    expected.dedup();
    assert_eq!(expected.len(), 7);
    let only = |q: RunQuery| async move {
        store
            .runs(q)
            .await
            .unwrap()
            .runs
            .into_iter()
            .map(|r| r.run_id.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        only(RunQuery {
            status: Some(warrant_core::status::RunStatus::Attained),
            ..RunQuery::default()
        })
        .await,
        vec!["run-1"]
    );
    assert_eq!(
        only(RunQuery {
            id_prefix: Some("run-6".into()),
            ..RunQuery::default()
        })
        .await,
        vec!["run-6"]
    );
    assert_eq!(
        only(RunQuery {
            since_ms: Some(400),
            ..RunQuery::default()
        })
        .await
        .len(),
        2
    );
    assert_eq!(
        only(RunQuery {
            spec_id: Some("other".into()),
            ..RunQuery::default()
        })
        .await
        .len(),
        0
    );
}

/// The requests nobody answered, per run and across runs; an answer, or the run's end,
/// takes a request off.
pub async fn pending_approvals_are_indexed(store: &dyn EventStore) {
    let (one, two) = (RunId("r1".into()), RunId("r2".into()));
    store
        .append(&one, 0, vec![started("r1"), asked(2, "r1-a1")], None)
        .await
        .unwrap();
    store
        .append(&two, 0, vec![started("r2"), asked(2, "r2-a1")], None)
        .await
        .unwrap();
    let pending = store.pending_approvals(None).await.unwrap();
    let mut ids: Vec<&str> = pending.iter().map(|p| p.request.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec!["r1-a1", "r2-a1"]);
    let mine = store.pending_approvals(Some(&one)).await.unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].run_id, one);
    assert_eq!(*mine[0].args, json!({"amount": 5}));
    assert_eq!(mine[0].reason, "a person must approve it");
    assert_eq!(
        store.summary(&one).await.unwrap().unwrap().status,
        "waiting"
    );
    // Answered: off the list, and the run is ready to go on.
    store
        .append(&one, 2, vec![answered(3, "r1-a1")], None)
        .await
        .unwrap();
    assert!(
        store
            .pending_approvals(Some(&one))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.summary(&one).await.unwrap().unwrap().status, "ready");
    // Ended: none of its requests is pending any more.
    store
        .append(&two, 2, vec![finished(3)], None)
        .await
        .unwrap();
    assert!(store.pending_approvals(None).await.unwrap().is_empty());
}

/// A subscriber from a sequence number sees every event once, in order, as they are
/// appended after it subscribed, and its feed ends after `run_finished`.
pub async fn a_subscription_sees_every_event_once_across_appends<S: EventStore + 'static>(
    store: S,
) {
    let store = Arc::new(store);
    let run = RunId("r1".into());
    store
        .append(&run, 0, vec![started("r1"), step(2)], None)
        .await
        .unwrap();
    let mut feed = store.subscribe(&run, 2);
    let writer = {
        let store = store.clone();
        let run = run.clone();
        async move {
            for seq in 3..=6 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                store
                    .append(&run, seq - 1, vec![step(seq)], None)
                    .await
                    .unwrap();
            }
            store
                .append(&run, 6, vec![answered(7, "r1-a9"), finished(8)], None)
                .await
                .unwrap();
        }
    };
    let reader = async {
        let mut got = Vec::new();
        while let Some(e) = feed.next().await.unwrap() {
            got.push(e.event.seq);
        }
        got
    };
    let ((), got) = within(Duration::from_secs(10), async {
        tokio::join!(writer, reader)
    })
    .await;
    assert_eq!(got, vec![2, 3, 4, 5, 6, 7, 8]);
    // From past the end of an ended run: nothing, at once.
    let mut late = store.subscribe(&run, 9);
    assert!(
        within(Duration::from_secs(10), late.next())
            .await
            .unwrap()
            .is_none()
    );
}

/// Each claim takes a new epoch; the driver whose lease was taken is refused (`Fenced`) on
/// its next append, and a live holder's lease cannot be taken.
pub async fn leases_fence_a_driver_that_lost_its_run(store: &dyn EventStore) {
    let run = RunId("r1".into());
    let one = driver("pid 1", 1_000, 0);
    store
        .append(&run, 0, vec![started("r1")], Some(&one))
        .await
        .unwrap();
    let s = store.summary(&run).await.unwrap().unwrap();
    assert_eq!(s.holder.as_deref(), Some("pid 1"));
    assert!(s.driven(1_500));
    let first_epoch = s.epoch;
    // A live holder's lease is not taken...
    match store.claim(&run, &driver("pid 2", 2_000, 0)).await.unwrap() {
        Claim::Held(h) => assert_eq!(h.holder, "pid 1"),
        other => panic!("a live lease was taken: {other:?}"),
    }
    // ...a silent one is, with a new epoch.
    let later = 1_000 + LEASE_TTL_MS;
    let Claim::Taken { epoch } = store.claim(&run, &driver("pid 2", later, 0)).await.unwrap()
    else {
        panic!("a silent lease was not taken");
    };
    assert!(epoch > first_epoch, "{epoch} after {first_epoch}");
    // The old driver, back, is fenced off: nothing of its batch is written.
    let err = store
        .append(
            &run,
            1,
            vec![step(2)],
            Some(&driver("pid 1", later, first_epoch)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");
    assert_eq!(store.read(&run, 1).await.unwrap().len(), 1);
    // The new one appends, renews and, ending the run, gives the lease back.
    let two = driver("pid 2", later + 1, epoch);
    store
        .append(&run, 1, vec![step(2)], Some(&two))
        .await
        .unwrap();
    store
        .heartbeat(vec![
            (run.clone(), driver("pid 2", 20_000, epoch)),
            // A lease its driver lost, renewed in the same write, is left alone.
            (run.clone(), driver("pid 1", 30_000, first_epoch)),
            (RunId("no-such-run".into()), driver("pid 2", 30_000, epoch)),
        ])
        .await
        .unwrap();
    assert_eq!(
        store.summary(&run).await.unwrap().unwrap().heartbeat_ms,
        Some(20_000)
    );
    store
        .append(&run, 2, vec![finished(3)], Some(&two))
        .await
        .unwrap();
    let s = store.summary(&run).await.unwrap().unwrap();
    assert_eq!((s.status.as_str(), s.holder), ("attained", None));
    // An operator's input (no driver) is never fenced.
    let other = RunId("r2".into());
    store
        .append(
            &other,
            0,
            vec![started("r2"), asked(2, "r2-a1")],
            Some(&one),
        )
        .await
        .unwrap();
    store
        .append(&other, 2, vec![answered(3, "r2-a1")], None)
        .await
        .unwrap();
}

/// The first request to cancel a run stands. A store that tells of requests tells of this
/// one, and the look it prompts finds it.
pub async fn cancellations_are_recorded_once(store: &dyn EventStore) {
    let run = RunId("r1".into());
    store
        .append(&run, 0, vec![started("r1")], None)
        .await
        .unwrap();
    assert_eq!(store.cancel_request(&run).await.unwrap(), None);
    let ask = |by: &str| CancelRequest {
        by: by.into(),
        reason: "stop".into(),
        close: false,
    };
    let news = store.cancel_news();
    store.request_cancel(&run, ask("alice")).await.unwrap();
    store.request_cancel(&run, ask("bob")).await.unwrap();
    if let Some(news) = news {
        within(Duration::from_secs(5), news).await;
        let told = store.cancel_request(&run).await.unwrap();
        assert_eq!(told.map(|c| c.by).as_deref(), Some("alice"));
    }
    let got = within(Duration::from_secs(5), async {
        loop {
            if let Some(c) = store.cancel_request(&run).await.unwrap() {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(got.by, "alice");
}

async fn within<T>(limit: Duration, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, f)
        .await
        .expect("the store did not answer in time")
}

/// Rewrites the SQLite store at `path` as schema 4 wrote it, for upgrade tests: the log indexed
/// by `(run_id, seq)` with no chain of rows, and each run's `last_seq` as schema 4 last wrote
/// it (`lagging`: 0, a row not written since the run started).
pub fn as_sqlite_schema_4(path: &std::path::Path, lagging: bool) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE events_4 (
             position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
             body TEXT NOT NULL, n_events INTEGER NOT NULL DEFAULT 1, UNIQUE (run_id, seq));
         INSERT INTO events_4 SELECT position, run_id, seq, body, n_events FROM events;
         DROP TABLE events; ALTER TABLE events_4 RENAME TO events;
         ALTER TABLE runs DROP COLUMN last_position; DROP TABLE IF EXISTS idempotency;
         UPDATE meta SET value = '4' WHERE key = 'schema_version';",
    )
    .unwrap();
    if lagging {
        conn.execute_batch("UPDATE runs SET last_seq = 0").unwrap();
    }
}

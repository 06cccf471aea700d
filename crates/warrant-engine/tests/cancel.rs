//! Cancellation: cooperative at every await point, recorded with who and why, and the final
//! state of an in-flight call recorded.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use tokio::sync::Notify;
use warrant_core::Outcome;
use warrant_core::check::check_log;
use warrant_core::event::CallStatus;
use warrant_core::ids::CallId;
use warrant_core::ports::{BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError};
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, Engine, SequentialIds};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceSurface;
use warrant_surfaces::demo::Cafe;

/// Calls to `tool` hang (after performing the effect, if `perform`); tells when one starts and
/// records the cancellations it is sent.
struct Hanging {
    inner: ReferenceSurface,
    tool: &'static str,
    perform: bool,
    started: Arc<Notify>,
    cancelled: Arc<Mutex<Vec<CallId>>>,
}

impl Surface for Hanging {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        self.inner.observe()
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        if call.tool() != self.tool {
            return self.inner.invoke(call);
        }
        Box::pin(async move {
            if self.perform {
                let _ = self.inner.invoke(call).await;
            }
            self.started.notify_one();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Err(SurfaceError::not_sent("slept an hour"))
        })
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
    fn cancel(&self, call: CallId) {
        self.cancelled.lock().unwrap().push(call);
    }
}

struct Fixture {
    engine: Engine,
    clock: Arc<TokioClock>,
    store: Arc<MemoryStore>,
    cafe: Arc<Cafe>,
    surfaces: warrant_engine::Surfaces,
    started: Arc<Notify>,
    cancelled: Arc<Mutex<Vec<CallId>>>,
}

fn fixture(tool: &'static str, perform: bool) -> Fixture {
    let spec = common::spec(CAFE_GALLERY);
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(TokioClock::new());
    let engine = Engine::new(store.clone())
        .with_clock(clock.clone())
        .with_ids(Arc::new(SequentialIds::new("cx")));
    let cafe = Arc::new(Cafe::default());
    let started = Arc::new(Notify::new());
    let cancelled = Arc::new(Mutex::new(Vec::new()));
    let mut surfaces = warrant_surfaces::ReferenceCatalog::default()
        .surfaces(&spec)
        .unwrap();
    surfaces.insert(
        "cafe".into(),
        Arc::new(Hanging {
            inner: ReferenceSurface::new(cafe.clone()),
            tool,
            perform,
            started: started.clone(),
            cancelled: cancelled.clone(),
        }),
    );
    Fixture {
        engine,
        clock,
        store,
        cafe,
        surfaces,
        started,
        cancelled,
    }
}

async fn cancel_when_started(f: &Fixture) -> warrant_engine::RunResult {
    let spec = common::spec(CAFE_GALLERY);
    let decider = script(SCRIPT);
    let run = f.engine.run(spec, &decider, &f.surfaces);
    tokio::pin!(run);
    tokio::select! {
        r = &mut run => panic!("ended before the call started: {:?}", r.map(|r| r.outcome)),
        () = f.started.notified() => {}
    }
    let id = only_run(&f.store);
    f.engine.cancel(&id, "alice", "wrong order").await.unwrap();
    run.await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn cancelling_while_a_read_is_in_flight_ends_the_run_and_records_the_call() {
    let f = fixture("read_menu", false);
    let result = cancel_when_started(&f).await;
    assert_eq!(
        result.outcome,
        Some(Outcome::Cancelled {
            by: "alice".into(),
            reason: "wrong order".into()
        })
    );
    assert_eq!(result.state.calls()[0].status, Some(CallStatus::Cancelled));
    assert_eq!(
        *f.cancelled.lock().unwrap(),
        vec![CallId(1)],
        "the provider was told"
    );
    let events = log(&f.store, &result);
    check_log(events.iter().map(|e| &**e)).unwrap();
    let check = replay(&events).await.unwrap();
    assert_eq!((check.error, check.divergence), (None, None));
}

/// A run waiting on a slow provider sleeps until the store tells of a request to cancel: it
/// does not ask the store over and over meanwhile, and the request, when it comes, ends it.
#[tokio::test(start_paused = true)]
async fn a_waiting_run_asks_about_cancellation_only_when_the_store_tells_of_one() {
    let f = fixture("read_menu", false);
    let spec = common::spec(CAFE_GALLERY);
    let decider = script(SCRIPT);
    let run = f.engine.run(spec, &decider, &f.surfaces);
    tokio::pin!(run);
    tokio::select! {
        r = &mut run => panic!("ended before the call started: {:?}", r.map(|r| r.outcome)),
        () = f.started.notified() => {}
    }
    // Twenty seconds of waiting (within the call's 30 s bound), on the paused clock.
    let before = f.store.cancel_looks();
    tokio::select! {
        r = &mut run => panic!("ended while it waited: {:?}", r.map(|r| r.outcome)),
        () = tokio::time::sleep(Duration::from_secs(20)) => {}
    }
    let looks = f.store.cancel_looks() - before;
    assert!(
        looks <= 1,
        "asked {looks} times in 20 s with nothing to tell"
    );
    let id = only_run(&f.store);
    f.engine.cancel(&id, "alice", "wrong order").await.unwrap();
    let result = run.await.unwrap();
    assert!(
        matches!(result.outcome, Some(Outcome::Cancelled { .. })),
        "{:?}",
        result.outcome
    );
}

/// Runs waiting on a slow provider keep their leases live together: the process renews all of
/// them in one write a period (not a timer and a write per run), and stops once none waits.
/// Two engines given one keeper (a front door makes an engine per run) renew together.
#[tokio::test(start_paused = true)]
async fn waiting_runs_leases_are_renewed_together_in_one_write_a_period() {
    use warrant_core::ports::{Clock, RunsIndex};
    let f = fixture("read_menu", false);
    let keeper = warrant_engine::LeaseKeeper::default();
    let engines = [
        f.engine.clone().with_lease_keeper(keeper.clone()),
        Engine::new(f.store.clone())
            .with_clock(f.clock.clone())
            .with_ids(Arc::new(SequentialIds::new("cy")))
            .with_lease_keeper(keeper),
    ];
    let deciders: Vec<_> = (0..20).map(|_| script(SCRIPT)).collect();
    let runs = futures_util::future::join_all(
        deciders
            .iter()
            .enumerate()
            .map(|(i, d)| engines[i % 2].run(common::spec(CAFE_GALLERY), d, &f.surfaces)),
    );
    tokio::pin!(runs);
    tokio::select! {
        _ = &mut runs => panic!("the runs ended before their calls hung"),
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    let ids = f.store.run_ids();
    assert_eq!(ids.len(), 20);
    // Twenty seconds of waiting (within the call's 30 s bound), on the paused clock: a write
    // every `LEASE_TTL_MS / 3` (3.3 s) for all twenty.
    let before = f.store.heartbeats();
    tokio::select! {
        _ = &mut runs => panic!("the runs ended while they waited"),
        () = tokio::time::sleep(Duration::from_secs(20)) => {}
    }
    let writes = f.store.heartbeats() - before;
    assert!(
        (5..=7).contains(&writes),
        "{writes} lease writes in 20 s for 20 waiting runs"
    );
    let now = f.clock.now_ms();
    for id in &ids {
        let s = f.store.summary(id).await.unwrap().unwrap();
        assert!(
            s.driven(now),
            "{id}'s lease lapsed while it waited: heard from at {:?}, now {now}",
            s.heartbeat_ms
        );
        assert!(s.heartbeat_ms.unwrap() + 3_400 > now, "{id} renewed late");
    }
    for id in &ids {
        f.engine.cancel(id, "alice", "enough").await.unwrap();
    }
    for result in runs.await {
        assert!(matches!(
            result.unwrap().outcome,
            Some(Outcome::Cancelled { .. })
        ));
    }
    // Nothing waits: nothing is renewed, and nothing wakes to renew it.
    let after = f.store.heartbeats();
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(f.store.heartbeats(), after);
}

#[tokio::test(start_paused = true)]
async fn cancelling_while_a_commit_is_in_flight_leaves_it_in_doubt_not_dropped() {
    let f = fixture("order_latte", true);
    let result = cancel_when_started(&f).await;
    assert!(matches!(result.outcome, Some(Outcome::Cancelled { .. })));
    let order = &result.state.calls()[1];
    assert!(
        order.in_doubt,
        "the order may have happened: it is recorded in doubt"
    );
    assert_eq!(f.cafe.orders().len(), 1);
    let events = log(&f.store, &result);
    check_log(events.iter().map(|e| &**e)).unwrap();
    let check = replay(&events).await.unwrap();
    assert_eq!((check.error, check.divergence), (None, None));
}

#[tokio::test]
async fn a_cancellation_racing_the_end_of_a_run_leaves_exactly_one_outcome() {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let mut decider = Watching::new(script(SCRIPT));
    let (engine, store) = (s.engine.clone(), s.store.clone());
    decider.before = Box::new(move |p| {
        if p.decision_no == 5 {
            let run = store.run_ids()[0].clone();
            common::at_once(engine.cancel(&run, "bob", "too late?")).unwrap();
        }
    });
    let result = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    let events = log(&s.store, &result);
    let finishes = events
        .iter()
        .filter(|e| e.kind.name() == "run_finished")
        .count();
    assert_eq!(finishes, 1);
    assert!(matches!(
        result.outcome,
        Some(Outcome::Attained | Outcome::Cancelled { .. })
    ));
    check_log(events.iter().map(|e| &**e)).unwrap();
    assert_eq!(replay(&events).await.unwrap().divergence, None);
    // After the end, a cancellation changes nothing.
    s.engine
        .cancel(&result.run_id, "bob", "again")
        .await
        .unwrap();
    let again = s
        .engine
        .resume(&result.run_id, &script(SCRIPT), &s.surfaces)
        .await
        .unwrap();
    assert_eq!(again.outcome, result.outcome);
    assert_eq!(log(&s.store, &result).len(), events.len());
}

#[tokio::test]
async fn a_run_no_process_drives_is_cancelled_when_resumed() {
    // A run waiting on an in-doubt effect: the cancellation ends it, the effect stays in doubt.
    let spec = CAFE_GALLERY.replace(
        "deadline_ms: 60000",
        "deadline_ms: 60000\n  call_timeout_ms: 50",
    );
    let f = fixture("order_latte", false);
    let spec = common::spec(&spec);
    let waiting = f
        .engine
        .run(spec, &script(SCRIPT), &f.surfaces)
        .await
        .unwrap();
    assert_eq!(waiting.outcome, None);
    f.engine
        .cancel(&waiting.run_id, "carol", "giving up")
        .await
        .unwrap();
    let result = f
        .engine
        .resume(&waiting.run_id, &script(SCRIPT), &f.surfaces)
        .await
        .unwrap();
    assert_eq!(
        result.outcome,
        Some(Outcome::Cancelled {
            by: "carol".into(),
            reason: "giving up".into()
        })
    );
    assert_eq!(
        result.waiting_on,
        vec![CallId(2)],
        "still in doubt, for an operator to reconcile"
    );
    let events = log(&f.store, &result);
    check_log(events.iter().map(|e| &**e)).unwrap();
    let check = replay(&events).await.unwrap();
    assert_eq!((check.error, check.divergence), (None, None));
}

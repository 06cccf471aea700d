//! DESIGN.md's invariants, each pinned by a test that fails if it breaks.

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

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use warrant_core::Outcome;
use warrant_core::check::check_log;
use warrant_core::event::{CallStatus, Event, EventKind, encode};
use warrant_core::ids::RunId;
use warrant_core::ports::{BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError};
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, DenyTools, Engine, FixedClock, SequentialIds, Subscriber};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceSurface;

const SCENARIOS: &[(&str, &str)] = &[
    ("happy", SCRIPT),
    ("direct", DIRECT),
    ("decline", DECLINE),
    ("false-claim", FALSE_CLAIM),
    (
        "provider-error",
        "steps:\n  order:\n    - call: order_latte\n      args: {size: large, milk: almond}\n    - done: ordered\n",
    ),
    (
        "rejections",
        "steps:\n  order:\n    - call: order_mocha\n    - call: order_latte\n      args: {size: venti}\n    - call: read_menu\n      handle: h9.0\n    - call: order_latte\n      args: {size: small}\n    - done: ok\n  drift:\n    - call: check_design_drift\n    - done: ok\n",
    ),
    ("exhausted", "steps:\n  order:\n    - call: read_menu\n"),
];

#[tokio::test]
async fn replay_regenerates_every_scenario_byte_for_byte() {
    for (name, script) in SCENARIOS {
        let w = run(CAFE_GALLERY, script).await;
        let check = replay(&w.events).await.unwrap();
        assert_eq!(check.divergence, None, "scenario {name}");
        assert_eq!(check.regenerated, w.events.len(), "scenario {name}");
    }
    // And under a denying authority.
    let w = run_with(
        CAFE_GALLERY,
        &script(SCRIPT),
        Arc::new(DenyTools::new(["order_latte"])),
    )
    .await;
    assert_eq!(replay(&w.events).await.unwrap().divergence, None);
}

#[tokio::test]
async fn replay_reports_the_first_divergence_of_a_tampered_log() {
    let w = run(CAFE_GALLERY, SCRIPT).await;
    let mut events: Vec<Arc<Event>> = w.events.clone();
    // Tamper with the recorded result of the order: the carried color no longer matches.
    let i = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::Carried { .. }))
        .unwrap();
    let mut tampered = (*events[i]).clone();
    if let EventKind::Carried { value, .. } = &mut tampered.kind {
        *value = Arc::new(serde_json::json!("#000000"));
    }
    events[i] = Arc::new(tampered);
    let check = replay(&events).await.unwrap();
    let d = check.divergence.expect("a divergence");
    assert_eq!(d.seq, events[i].seq);
}

#[tokio::test]
async fn the_same_spec_and_script_twice_give_identical_logs() {
    let mut logs = Vec::new();
    for _ in 0..2 {
        let spec = common::spec(CAFE_GALLERY);
        let store = Arc::new(MemoryStore::new());
        let engine = Engine::new(store.clone())
            .with_clock(Arc::new(FixedClock(1_767_225_600_000)))
            .with_ids(Arc::new(SequentialIds::new("det")));
        let surfaces = warrant_surfaces::ReferenceCatalog::default()
            .surfaces(&spec)
            .unwrap();
        let result = engine.run(spec, &script(SCRIPT), &surfaces).await.unwrap();
        logs.push(
            log(&store, &result)
                .iter()
                .map(|e| encode(e))
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(logs[0], logs[1]);
    assert!(logs[0].len() > 10);
}

/// A surface that checks, when invoked, that the store already holds the call's intent.
struct IntentChecking {
    inner: ReferenceSurface,
    store: Arc<MemoryStore>,
    run: Mutex<Option<RunId>>,
    checked: AtomicUsize,
    violated: AtomicBool,
}

impl Surface for IntentChecking {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        self.inner.observe()
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        let durable = self.store.events(call.run()).iter().any(|e| {
            matches!(&e.kind, EventKind::CallDispatched { call: c, idempotency_key, .. }
                if *c == call.call() && *idempotency_key == call.idempotency_key())
        });
        if !durable {
            self.violated.store(true, Ordering::SeqCst);
        }
        *self.run.lock().unwrap() = Some(call.run().clone());
        self.checked.fetch_add(1, Ordering::SeqCst);
        self.inner.invoke(call)
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
}

#[tokio::test]
async fn the_intent_is_durable_before_the_provider_is_called() {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let mut surfaces = s.surfaces.clone();
    let cafe = Arc::new(IntentChecking {
        inner: ReferenceSurface::new(s.cafe.clone()),
        store: s.store.clone(),
        run: Mutex::new(None),
        checked: AtomicUsize::new(0),
        violated: AtomicBool::new(false),
    });
    surfaces.insert("cafe".into(), cafe.clone());
    let result = s
        .engine
        .run(spec, &script(SCRIPT), &surfaces)
        .await
        .unwrap();
    assert_eq!(result.outcome, Some(Outcome::Attained));
    assert_eq!(cafe.checked.load(Ordering::SeqCst), 2);
    assert!(
        !cafe.violated.load(Ordering::SeqCst),
        "a provider was called before its intent was durable"
    );
}

/// A surface whose state moves on between observation and dispatch.
struct Racing {
    inner: ReferenceSurface,
    stale_once: AtomicBool,
}

impl Surface for Racing {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        self.inner.observe()
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        self.inner.invoke(call)
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        if self.stale_once.swap(false, Ordering::SeqCst) {
            return Box::pin(std::future::ready(false));
        }
        self.inner.is_current(version)
    }
}

#[tokio::test]
async fn a_state_change_between_observe_and_dispatch_stops_the_call() {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let mut surfaces = s.surfaces.clone();
    surfaces.insert(
        "cafe".into(),
        Arc::new(Racing {
            inner: ReferenceSurface::new(s.cafe.clone()),
            stale_once: AtomicBool::new(true),
        }),
    );
    let script = "steps:\n  order:\n    - call: order_latte\n      args: {size: small}\n    - call: order_latte\n      args: {size: small}\n    - done: ok\n  drift:\n    - call: check_design_drift\n    - done: ok\n";
    let result = s
        .engine
        .run(spec, &common::script(script), &surfaces)
        .await
        .unwrap();
    let events = log(&s.store, &result);
    assert_eq!(
        call_faults(&events),
        vec![("stale_observation".to_owned(), "orchestration".to_owned())]
    );
    assert_eq!(
        s.cafe.orders().len(),
        1,
        "the stale call placed no order; the retry placed one"
    );
    assert_eq!(result.outcome, Some(Outcome::Attained));
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

/// A surface whose provider cannot be observed.
struct Down;

impl Surface for Down {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(std::future::ready(Err(SurfaceError::not_sent(
            "connection refused",
        ))))
    }
    fn invoke(&self, _call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(std::future::ready(Err(SurfaceError::not_sent(
            "connection refused",
        ))))
    }
    fn is_current<'a>(&'a self, _version: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(std::future::ready(false))
    }
}

#[tokio::test]
async fn an_unreachable_provider_is_attributed_to_the_provider() {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let mut surfaces = s.surfaces.clone();
    surfaces.insert("gallery".into(), Arc::new(Down));
    let result = s
        .engine
        .run(spec, &script(SCRIPT), &surfaces)
        .await
        .unwrap();
    assert_eq!(
        missing_layer(&result.outcome),
        Some((
            "drift".into(),
            warrant_core::Layer::Provider,
            "unavailable".into()
        ))
    );
    let events = log(&s.store, &result);
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

struct Recording(Arc<Mutex<Vec<(RunId, u64)>>>);

impl Subscriber for Recording {
    fn on_event(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
        self.0.lock().unwrap().push((run.clone(), event.seq));
        Ok(())
    }
}

struct Failing;

impl Subscriber for Failing {
    fn on_event(&mut self, _run: &RunId, event: &Event) -> Result<(), String> {
        if event.seq == 3 {
            Err("disk full".into())
        } else {
            Ok(())
        }
    }
}

struct Slow(Arc<Mutex<Vec<u64>>>);

impl Subscriber for Slow {
    fn on_event(&mut self, _run: &RunId, event: &Event) -> Result<(), String> {
        std::thread::sleep(std::time::Duration::from_millis(1));
        self.0.lock().unwrap().push(event.seq);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_slow_subscriber_stops_neither_the_run_nor_the_others() {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let slow = Arc::new(Mutex::new(Vec::new()));
    s.engine.subscribe("failing", Box::new(Failing));
    s.engine
        .subscribe("recording", Box::new(Recording(seen.clone())));
    s.engine.subscribe("slow", Box::new(Slow(slow.clone())));
    let result = s
        .engine
        .run(spec, &script(SCRIPT), &s.surfaces)
        .await
        .unwrap();
    assert_eq!(result.outcome, Some(Outcome::Attained));
    let failures = s.engine.drain_subscribers().await;
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].name, "failing");
    assert_eq!(failures[0].error, "disk full");
    let events = log(&s.store, &result);
    let expected: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let got: Vec<u64> = seen.lock().unwrap().iter().map(|(_, s)| *s).collect();
    assert_eq!(
        got, expected,
        "the healthy subscriber saw every event, in order"
    );
    assert_eq!(
        *slow.lock().unwrap(),
        expected,
        "the slow subscriber saw every event, in order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_subscriber_catches_up_from_the_store_without_gaps() {
    // Many concurrent runs overflow the slow subscriber's queue; it must still see each run's
    // events gapless and in order.
    let spec = common::spec(CAFE_GALLERY);
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone()).with_ids(Arc::new(SequentialIds::new("lag")));
    let seen = Arc::new(Mutex::new(Vec::new()));
    struct Slowish(Arc<Mutex<Vec<(RunId, u64)>>>);
    impl Subscriber for Slowish {
        fn on_event(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
            if event.seq.is_multiple_of(50) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            self.0.lock().unwrap().push((run.clone(), event.seq));
            Ok(())
        }
    }
    engine.subscribe("slow", Box::new(Slowish(seen.clone())));
    let mut tasks = Vec::new();
    for _ in 0..300 {
        let engine = engine.clone();
        let spec = spec.clone();
        tasks.push(tokio::spawn(async move {
            let surfaces = warrant_surfaces::ReferenceCatalog::default()
                .surfaces(&spec)
                .unwrap();
            engine
                .run(spec, &script(SCRIPT), &surfaces)
                .await
                .unwrap()
                .run_id
        }));
    }
    let mut runs = Vec::new();
    for t in tasks {
        runs.push(t.await.unwrap());
    }
    assert!(engine.drain_subscribers().await.is_empty());
    let seen = seen.lock().unwrap().clone();
    for run in runs {
        let got: Vec<u64> = seen
            .iter()
            .filter(|(r, _)| r == &run)
            .map(|(_, s)| *s)
            .collect();
        let n = store.events(&run).len() as u64;
        assert_eq!(got, (1..=n).collect::<Vec<_>>(), "run {run}");
    }
}

#[tokio::test]
async fn every_scenario_log_passes_the_consistency_check() {
    for (name, script) in SCENARIOS {
        let w = run(CAFE_GALLERY, script).await;
        let state =
            check_log(w.events.iter().map(|e| &**e)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(state.outcome().is_some(), "{name}");
        for c in state.calls() {
            let finishes = w
                .events
                .iter()
                .filter(
                    |e| matches!(&e.kind, EventKind::CallFinished { call, .. } if *call == c.id),
                )
                .count();
            assert_eq!(finishes, 1, "{name}: call {}", c.id);
            if matches!(c.status, Some(CallStatus::Ok | CallStatus::ProviderError)) {
                assert!(
                    c.executed.is_some(),
                    "{name}: {} reached the provider without an intent",
                    c.id
                );
            }
        }
    }
}

#[test]
fn the_checker_rejects_a_gap_a_double_finish_and_a_dangling_call() {
    use warrant_core::event::{Fault, Layer};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let w = rt.block_on(run(CAFE_GALLERY, SCRIPT));
    let events: Vec<Event> = w.events.iter().map(|e| (**e).clone()).collect();
    // A gap.
    let mut gap = events.clone();
    gap.remove(3);
    assert!(
        check_log(gap.iter())
            .unwrap_err()
            .message
            .contains("expected sequence")
    );
    // A second finish for a call.
    let i = events
        .iter()
        .position(|e| e.kind.name() == "call_finished")
        .unwrap();
    let mut twice = events[..=i].to_vec();
    let mut again = events[i].clone();
    again.seq += 1;
    twice.push(again);
    assert!(
        check_log(twice.iter())
            .unwrap_err()
            .message
            .contains("finished twice")
    );
    // A run that ends with a call in flight.
    let j = events
        .iter()
        .position(|e| e.kind.name() == "call_started")
        .unwrap();
    let mut dangling = events[..=j].to_vec();
    dangling.push(Event {
        seq: events[j].seq + 1,
        at_ms: 0,
        kind: EventKind::RunFinished {
            outcome: Outcome::Failed {
                fault: Fault::new(warrant_core::Code::NoSpec, Layer::Runtime, "x"),
            },
        },
    });
    assert!(
        check_log(dangling.iter())
            .unwrap_err()
            .message
            .contains("in flight")
    );
}

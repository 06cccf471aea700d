//! Test harness: runs specs over the memory store with a fixed clock and sequential ids.

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
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use warrant_core::event::{Event, EventKind};
use warrant_core::ports::{Authority, BoxFuture, DecideError, Decided, Decider, Surface};
use warrant_core::projection::Projection;
use warrant_core::spec::Format;
use warrant_core::validate;
use warrant_core::{Outcome, Spec};
use warrant_deciders::{Script, ScriptedDecider};
use warrant_engine::{AllowAll, Engine, RunResult, SequentialIds, TickingClock};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceCatalog;
use warrant_surfaces::demo::Cafe;

pub const CAFE_GALLERY: &str = include_str!("../../../../examples/cafe-gallery/spec.yaml");
pub const SCRIPT: &str = include_str!("../../../../examples/cafe-gallery/script.yaml");
pub const DIRECT: &str = include_str!("../../../../examples/cafe-gallery/direct.yaml");
pub const DECLINE: &str = include_str!("../../../../examples/cafe-gallery/decline.yaml");
pub const FALSE_CLAIM: &str = include_str!("../../../../examples/cafe-gallery/false-claim.yaml");

pub fn spec(yaml: &str) -> Arc<Spec> {
    Arc::new(
        validate::load(
            yaml,
            Format::Yaml,
            "spec.yaml",
            &ReferenceCatalog::default(),
        )
        .expect("valid spec"),
    )
}

pub fn script(yaml: &str) -> ScriptedDecider {
    ScriptedDecider::new(
        Script::parse(yaml, Format::Yaml, "script.yaml").expect("valid script"),
        "script.yaml",
    )
}

/// One test run's world: its store, the cafe instance (to inspect effects), the outcome.
pub struct World {
    pub store: Arc<MemoryStore>,
    pub cafe: Arc<Cafe>,
    pub result: RunResult,
    pub events: Vec<Arc<Event>>,
}

pub struct Setup {
    pub engine: Engine,
    pub store: Arc<MemoryStore>,
    pub clock: Arc<TickingClock>,
    pub cafe: Arc<Cafe>,
    pub surfaces: HashMap<String, Arc<dyn Surface>>,
}

pub fn setup(spec: &Spec, authority: Arc<dyn Authority>) -> Setup {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(TickingClock::new(1_700_000_000_000, 1));
    let engine = Engine::new(store.clone())
        .with_clock(clock.clone())
        .with_ids(Arc::new(SequentialIds::new("run")))
        .with_authority(authority);
    let cafe = Arc::new(Cafe::default());
    let mut catalog = ReferenceCatalog::default();
    let c = cafe.clone();
    catalog.register("cafe", move || c.clone());
    let surfaces = catalog.surfaces(spec).expect("surfaces");
    Setup {
        engine,
        store,
        clock,
        cafe,
        surfaces,
    }
}

pub async fn run_with(
    spec_yaml: &str,
    decider: &dyn Decider,
    authority: Arc<dyn Authority>,
) -> World {
    let spec = spec(spec_yaml);
    let s = setup(&spec, authority);
    let result = s
        .engine
        .run(spec, decider, &s.surfaces)
        .await
        .expect("run records");
    let events = log(&s.store, &result);
    World {
        store: s.store,
        cafe: s.cafe,
        result,
        events,
    }
}

pub async fn run(spec_yaml: &str, script_yaml: &str) -> World {
    run_with(spec_yaml, &script(script_yaml), Arc::new(AllowAll)).await
}

pub fn log(store: &MemoryStore, result: &RunResult) -> Vec<Arc<Event>> {
    store.events(&result.run_id)
}

pub fn kinds(events: &[Arc<Event>]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}

pub fn missing_layer(outcome: &Option<Outcome>) -> Option<(String, warrant_core::Layer, String)> {
    match outcome {
        Some(Outcome::NotAttained { missing }) => missing
            .first()
            .map(|m| (m.step.0.to_string(), m.fault.layer, m.fault.code.clone())),
        _ => None,
    }
}

pub fn call_faults(events: &[Arc<Event>]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallFinished { fault: Some(f), .. } => {
                Some((f.code.clone(), f.layer.to_string()))
            }
            _ => None,
        })
        .collect()
}

/// Wraps a decider: records every projection it is shown and can run a hook before answering.
pub struct Watching<D> {
    pub inner: D,
    pub seen: Mutex<Vec<Projection>>,
    pub before: Box<dyn Fn(&Projection) + Send + Sync>,
}

impl<D: Decider> Watching<D> {
    pub fn new(inner: D) -> Self {
        Watching {
            inner,
            seen: Mutex::new(Vec::new()),
            before: Box::new(|_| {}),
        }
    }
}

impl<D: Decider> Decider for Watching<D> {
    fn identity(&self) -> warrant_core::event::DeciderIdentity {
        self.inner.identity()
    }
    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        (self.before)(&projection);
        self.seen.lock().unwrap().push(projection.clone());
        self.inner.decide(projection)
    }
}

/// An injected clock that follows tokio's time (paused and auto-advancing in tests that ask).
pub struct TokioClock(pub tokio::time::Instant);

impl TokioClock {
    pub fn new() -> TokioClock {
        TokioClock(tokio::time::Instant::now())
    }
}

impl warrant_core::ports::Clock for TokioClock {
    fn now_ms(&self) -> u64 {
        1_700_000_000_000 + self.0.elapsed().as_millis() as u64
    }
}

/// The value of a future that is ready at once (the memory store's), from synchronous code.
pub fn at_once<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the future was not ready at once"),
    }
}

/// The one run in `store`.
pub fn only_run(store: &MemoryStore) -> warrant_core::ids::RunId {
    let runs = store.run_ids();
    assert_eq!(runs.len(), 1, "one run: {runs:?}");
    runs[0].clone()
}

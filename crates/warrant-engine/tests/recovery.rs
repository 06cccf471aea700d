//! Crash re-entry: a run whose process stops at any point continues from its log, repeats no
//! consequential effect silently and forgets none.
//!
//! A crash is simulated by dropping the run's future at a chosen point: what the store holds
//! is exactly what a killed process would have left.

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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use serde_json::Value;
use tokio::sync::Notify;
use warrant_core::check::check_log;
use warrant_core::event::{CallStatus, Event, EventKind};
use warrant_core::ids::CallId;
use warrant_core::ports::{BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError};
use warrant_core::store::{LogWriter, RunsIndex};
use warrant_core::{Layer, Outcome};
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, Engine, SequentialIds, Surfaces, TickingClock};
use warrant_store::MemoryStore;
use warrant_surfaces::demo::Cafe;
use warrant_surfaces::{ActionSpec, Provider, ProviderError, ReferenceSurface};

/// Where the simulated process dies.
#[derive(Clone, Copy, PartialEq)]
enum Crash {
    /// The intent is durable; the provider is never called.
    AfterIntent,
    /// The provider performed the effect; its result is never recorded.
    AfterInvoke,
}

/// Wraps a surface: the first call to `tool` hangs forever at the crash point.
struct Crashing {
    inner: ReferenceSurface,
    tool: &'static str,
    crash: Crash,
    armed: AtomicBool,
    reached: Arc<Notify>,
}

impl Surface for Crashing {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        self.inner.observe()
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        if call.tool() != self.tool || !self.armed.swap(false, Ordering::SeqCst) {
            return self.inner.invoke(call);
        }
        Box::pin(async move {
            if self.crash == Crash::AfterInvoke {
                let _ = self.inner.invoke(call).await;
            }
            self.reached.notify_one();
            std::future::pending().await
        })
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
    fn recovery(&self, tool: &str) -> warrant_core::ports::Recovery {
        self.inner.recovery(tool)
    }
}

/// The cafe, but without idempotency keys: a lost order cannot be safely repeated.
struct Unkeyed(Arc<Cafe>);

impl Provider for Unkeyed {
    fn actions(&self) -> Vec<ActionSpec> {
        self.0.actions()
    }
    fn state_version(&self) -> u64 {
        self.0.state_version()
    }
    fn call(&self, action: &str, args: &Value, _key: &str) -> Result<Value, ProviderError> {
        // Every call is a new effect, whatever the key.
        let fresh = format!("{}", self.0.orders().len());
        self.0.call(action, args, &fresh)
    }
}

const ORDER_ONLY: &str = "
version: warrant/v1
id: order-only
objective: Order a small latte.
providers:
  cafe: {reference: cafe}
steps:
  - id: order
    provider: cafe
    tools: [read_menu, order_latte]
    commit: required
";

const ORDER_SCRIPT: &str =
    "steps:\n  order:\n    - call: order_latte\n      args: {size: small}\n    - done: ordered\n";

struct Crashed {
    store: Arc<MemoryStore>,
    engine: Engine,
    cafe: Arc<Cafe>,
    run: warrant_core::ids::RunId,
}

/// Runs `spec` until the first call to `tool` reaches `crash`, then drops the run.
async fn crash_at(
    spec_yaml: &str,
    script_yaml: &str,
    tool: &'static str,
    crash: Crash,
    keyed: bool,
) -> Crashed {
    let spec = common::spec(spec_yaml);
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TickingClock::new(1_700_000_000_000, 1)))
        .with_ids(Arc::new(SequentialIds::new("crash")));
    let cafe = Arc::new(Cafe::default());
    let reached = Arc::new(Notify::new());
    let provider: Arc<dyn Provider> = if keyed {
        cafe.clone()
    } else {
        Arc::new(Unkeyed(cafe.clone()))
    };
    let mut surfaces: Surfaces = warrant_surfaces::ReferenceCatalog::default()
        .surfaces(&spec)
        .unwrap();
    surfaces.insert(
        "cafe".into(),
        Arc::new(Crashing {
            inner: ReferenceSurface::new(provider),
            tool,
            crash,
            armed: AtomicBool::new(true),
            reached: reached.clone(),
        }),
    );
    let decider = script(script_yaml);
    tokio::select! {
        r = engine.run(spec, &decider, &surfaces) => panic!("the run ended before the crash point: {:?}", r.map(|r| r.outcome)),
        () = reached.notified() => {}
    }
    let run = only_run(&store);
    Crashed {
        store,
        engine,
        cafe,
        run,
    }
}

/// Resumes with fresh surfaces over the same cafe (its effects survive, like a real provider).
async fn resume(
    c: &Crashed,
    spec_yaml: &str,
    script_yaml: &str,
    keyed: bool,
) -> warrant_engine::RunResult {
    let spec = common::spec(spec_yaml);
    let mut surfaces: Surfaces = warrant_surfaces::ReferenceCatalog::default()
        .surfaces(&spec)
        .unwrap();
    let provider: Arc<dyn Provider> = if keyed {
        c.cafe.clone()
    } else {
        Arc::new(Unkeyed(c.cafe.clone()))
    };
    surfaces.insert("cafe".into(), Arc::new(ReferenceSurface::new(provider)));
    c.engine
        .resume(&c.run, &script(script_yaml), &surfaces)
        .await
        .unwrap()
}

fn events(store: &MemoryStore, run: &warrant_core::ids::RunId) -> Vec<Arc<Event>> {
    store.events(run)
}

async fn assert_replays(store: &MemoryStore, run: &warrant_core::ids::RunId) {
    let log = events(store, run);
    check_log(log.iter().map(|e| &**e)).unwrap();
    let check = replay(&log).await.unwrap();
    assert_eq!(check.error, None);
    assert_eq!(check.divergence, None);
}

#[tokio::test]
async fn a_read_whose_result_was_lost_is_simply_reinvoked() {
    let c = crash_at(CAFE_GALLERY, SCRIPT, "read_menu", Crash::AfterIntent, true).await;
    let before = events(&c.store, &c.run);
    assert_eq!(before.last().unwrap().kind.name(), "call_dispatched");
    let result = resume(&c, CAFE_GALLERY, SCRIPT, true).await;
    assert_eq!(result.outcome, Some(Outcome::Attained));
    let log = events(&c.store, &c.run);
    assert!(log.iter().any(|e| matches!(
        e.kind,
        EventKind::RunResumed {
            in_flight: Some(CallId(1)),
            ..
        }
    )));
    assert_eq!(c.cafe.orders().len(), 1);
    assert_replays(&c.store, &c.run).await;
}

#[tokio::test]
async fn a_keyed_commit_whose_result_was_lost_is_reinvoked_without_repeating_the_effect() {
    let c = crash_at(
        CAFE_GALLERY,
        SCRIPT,
        "order_latte",
        Crash::AfterInvoke,
        true,
    )
    .await;
    assert_eq!(
        c.cafe.orders().len(),
        1,
        "the effect happened before the crash"
    );
    let result = resume(&c, CAFE_GALLERY, SCRIPT, true).await;
    assert_eq!(result.outcome, Some(Outcome::Attained));
    assert_eq!(
        c.cafe.orders().len(),
        1,
        "the same idempotency key repeated no order"
    );
    // The result recorded after the resume is the first order's.
    let carried = &result.state.carried()["order.order_id"];
    assert_eq!(*carried.value, serde_json::json!("ord-0001"));
    assert_replays(&c.store, &c.run).await;
}

#[tokio::test]
async fn an_unkeyed_commit_whose_result_was_lost_waits_in_doubt_until_reconciled() {
    let c = crash_at(
        ORDER_ONLY,
        ORDER_SCRIPT,
        "order_latte",
        Crash::AfterInvoke,
        false,
    )
    .await;
    let result = resume(&c, ORDER_ONLY, ORDER_SCRIPT, false).await;
    assert_eq!(result.outcome, None, "the run waits");
    assert_eq!(result.waiting_on, vec![CallId(1)]);
    assert_eq!(c.cafe.orders().len(), 1, "never silently repeated");
    assert_eq!(
        c.store
            .runs(warrant_core::ports::RunQuery::default())
            .await
            .unwrap()
            .runs[0]
            .status,
        "waiting"
    );
    let doubt = events(&c.store, &c.run)
        .into_iter()
        .find(|e| e.kind.name() == "call_in_doubt")
        .expect("recorded");
    let EventKind::CallInDoubt {
        provider,
        tool,
        args_digest,
        ..
    } = &doubt.kind
    else {
        unreachable!()
    };
    assert_eq!((provider.as_str(), tool.as_str()), ("cafe", "order_latte"));
    assert!(args_digest.starts_with("sha256:"));

    // Resuming again changes nothing while it is in doubt.
    let again = resume(&c, ORDER_ONLY, ORDER_SCRIPT, false).await;
    assert_eq!(again.outcome, None);
    assert_eq!(c.cafe.orders().len(), 1);

    // An operator says it happened; the run goes on and is judged on that.
    let last = events(&c.store, &c.run).len() as u64;
    let reconciled = Event {
        seq: last + 1,
        at_ms: 1_800_000_000_000,
        kind: EventKind::CallReconciled {
            call: CallId(1),
            happened: true,
            by: "alice".into(),
            note: "the till shows it".into(),
            resend: false,
        },
    };
    c.store
        .append(&c.run, last, vec![Arc::new(reconciled)], None)
        .await
        .unwrap();
    let done = resume(&c, ORDER_ONLY, ORDER_SCRIPT, false).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    assert_eq!(c.cafe.orders().len(), 1);
    assert_replays(&c.store, &c.run).await;
}

#[tokio::test]
async fn an_effect_reconciled_as_not_happened_is_not_counted() {
    let c = crash_at(
        ORDER_ONLY,
        ORDER_SCRIPT,
        "order_latte",
        Crash::AfterIntent,
        false,
    )
    .await;
    let waiting = resume(&c, ORDER_ONLY, ORDER_SCRIPT, false).await;
    assert_eq!(waiting.waiting_on, vec![CallId(1)]);
    let last = events(&c.store, &c.run).len() as u64;
    let reconciled = Event {
        seq: last + 1,
        at_ms: 1_800_000_000_000,
        kind: EventKind::CallReconciled {
            call: CallId(1),
            happened: false,
            by: "bob".into(),
            note: String::new(),
            resend: false,
        },
    };
    c.store
        .append(&c.run, last, vec![Arc::new(reconciled)], None)
        .await
        .unwrap();
    let result = resume(&c, ORDER_ONLY, ORDER_SCRIPT, false).await;
    let Some(Outcome::NotAttained { missing }) = &result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert_eq!(missing[0].fault.code, "not_performed");
    assert_eq!(missing[0].fault.layer, Layer::Provider);
    assert_eq!(
        result.state.calls()[0].status,
        Some(CallStatus::NotPerformed)
    );
    assert!(c.cafe.orders().is_empty());
    assert_replays(&c.store, &c.run).await;
}

#[tokio::test]
async fn a_crash_before_the_intent_is_durable_loses_nothing_and_repeats_nothing() {
    // The process dies while the decider thinks: the decision was never recorded.
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let reached = Arc::new(Notify::new());
    let mut decider = Watching::new(script(SCRIPT));
    let (r, armed) = (reached.clone(), Arc::new(AtomicBool::new(true)));
    decider.before = Box::new(move |p| {
        if p.decision_no == 3 && armed.swap(false, Ordering::SeqCst) {
            r.notify_one();
        }
    });
    let hang = HangOnNotify {
        inner: decider,
        reached: reached.clone(),
    };
    tokio::select! {
        r = s.engine.run(spec.clone(), &hang, &s.surfaces) => panic!("ended: {:?}", r.map(|r| r.outcome)),
        () = reached.notified() => {}
    }
    let run = only_run(&s.store);
    let result = s
        .engine
        .resume(&run, &script(SCRIPT), &s.surfaces)
        .await
        .unwrap();
    assert_eq!(result.outcome, Some(Outcome::Attained));
    assert_eq!(s.cafe.orders().len(), 1);
    assert!(events(&s.store, &run).iter().any(|e| matches!(
        e.kind,
        EventKind::RunResumed {
            in_flight: None,
            ..
        }
    )));
    assert_replays(&s.store, &run).await;
}

/// Hangs forever on the decision its watcher flags.
struct HangOnNotify<D> {
    inner: Watching<D>,
    reached: Arc<Notify>,
}

impl<D: warrant_core::ports::Decider> warrant_core::ports::Decider for HangOnNotify<D> {
    fn identity(&self) -> warrant_core::event::DeciderIdentity {
        self.inner.identity()
    }
    fn decide(
        &self,
        projection: warrant_core::projection::Projection,
    ) -> BoxFuture<'_, Result<warrant_core::ports::Decided, warrant_core::ports::DecideError>> {
        let hang = projection.decision_no == 3
            && self
                .inner
                .seen
                .lock()
                .unwrap()
                .iter()
                .all(|p| p.decision_no != 3);
        let answer = self.inner.decide(projection);
        if hang {
            let _ = &self.reached;
            return Box::pin(std::future::pending());
        }
        answer
    }
}

#[tokio::test]
async fn resuming_a_finished_run_changes_nothing() {
    let w = run(CAFE_GALLERY, SCRIPT).await;
    let before = events(&w.store, &w.result.run_id);
    let engine = Engine::new(w.store.clone());
    let spec = common::spec(CAFE_GALLERY);
    let surfaces = warrant_surfaces::ReferenceCatalog::default()
        .surfaces(&spec)
        .unwrap();
    let again = engine
        .resume(&w.result.run_id, &script(SCRIPT), &surfaces)
        .await
        .unwrap();
    assert_eq!(again.outcome, Some(Outcome::Attained));
    assert_eq!(events(&w.store, &w.result.run_id), before);
}

/// A register that cannot take keys but can say whether an intent's effect happened.
#[derive(Default)]
struct Register {
    by_key: std::sync::Mutex<std::collections::HashMap<String, Value>>,
    performed: std::sync::atomic::AtomicU32,
}

impl Register {
    fn ring(&self, key: &str) -> Value {
        self.performed.fetch_add(1, Ordering::SeqCst);
        let sale = serde_json::json!({"sale": self.performed.load(Ordering::SeqCst)});
        self.by_key
            .lock()
            .unwrap()
            .insert(key.to_owned(), sale.clone());
        sale
    }
}

/// The register behind a surface with `Recovery::Lookup`; the first `ring` hangs at `crash`.
struct LookupSurface {
    register: Arc<Register>,
    crash: Option<Crash>,
    armed: AtomicBool,
    reached: Arc<Notify>,
}

impl Surface for LookupSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        let actions: Arc<[warrant_core::event::ActionRecord]> =
            Arc::from(vec![warrant_core::event::ActionRecord {
                name: "ring".into(),
                effect: warrant_core::event::Effect::Commit,
                description: String::new(),
                input_schema: Arc::new(serde_json::json!({"type": "object"})),
                hints: None,
                origin: None,
            }]);
        Box::pin(std::future::ready(Ok(Observation {
            version: "v1".into(),
            actions,
            page: None,
        })))
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(async move {
            if let Some(crash) = self.crash
                && self.armed.swap(false, Ordering::SeqCst)
            {
                if crash == Crash::AfterInvoke {
                    self.register.ring(call.idempotency_key());
                }
                self.reached.notify_one();
                return std::future::pending().await;
            }
            Ok(CallOutput {
                output: self.register.ring(call.idempotency_key()),
                is_error: false,
            })
        })
    }
    fn is_current<'a>(&'a self, _version: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(std::future::ready(true))
    }
    fn recovery(&self, _tool: &str) -> warrant_core::ports::Recovery {
        warrant_core::ports::Recovery::Lookup
    }
    fn lookup(&self, call: Invocation) -> BoxFuture<'_, Result<Option<CallOutput>, SurfaceError>> {
        let found = self
            .register
            .by_key
            .lock()
            .unwrap()
            .get(call.idempotency_key())
            .cloned();
        Box::pin(std::future::ready(Ok(found.map(|output| CallOutput {
            output,
            is_error: false,
        }))))
    }
}

const REGISTER: &str = "
version: warrant/v1
id: till
objective: Ring up one sale.
providers:
  till: {reference: cafe}
steps:
  - id: sale
    provider: till
    tools: [ring]
    commit: required
";

#[tokio::test]
async fn a_surface_that_can_look_up_effects_settles_a_lost_commit_without_repeating_it() {
    for (crash, performed_before) in [(Crash::AfterInvoke, 1), (Crash::AfterIntent, 0)] {
        // The catalog check of `ring` is skipped: the spec is parsed, not validated.
        let spec = Arc::new(
            warrant_core::Spec::parse(REGISTER, warrant_core::spec::Format::Yaml, "till.yaml")
                .unwrap(),
        );
        let store = Arc::new(MemoryStore::new());
        let engine = Engine::new(store.clone()).with_ids(Arc::new(SequentialIds::new("till")));
        let register = Arc::new(Register::default());
        let reached = Arc::new(Notify::new());
        let mut surfaces: Surfaces = std::collections::HashMap::new();
        surfaces.insert(
            "till".into(),
            Arc::new(LookupSurface {
                register: register.clone(),
                crash: Some(crash),
                armed: AtomicBool::new(true),
                reached: reached.clone(),
            }),
        );
        let decider = script("steps:\n  sale:\n    - call: ring\n    - done: rung\n");
        tokio::select! {
            r = engine.run(spec.clone(), &decider, &surfaces) => panic!("{:?}", r.map(|r| r.outcome)),
            () = reached.notified() => {}
        }
        assert_eq!(register.performed.load(Ordering::SeqCst), performed_before);
        let run = only_run(&store);
        surfaces.insert(
            "till".into(),
            Arc::new(LookupSurface {
                register: register.clone(),
                crash: None,
                armed: AtomicBool::new(false),
                reached,
            }),
        );
        let result = engine.resume(&run, &decider, &surfaces).await.unwrap();
        assert_eq!(result.outcome, Some(Outcome::Attained));
        assert_eq!(
            register.performed.load(Ordering::SeqCst),
            1,
            "exactly one sale, found or made"
        );
        assert_replays(&store, &run).await;
    }
}

#[tokio::test]
async fn a_call_repeated_at_reentry_is_ruled_on_again() {
    // The read was allowed when it was sent; by the time the run re-enters, the policy denies
    // it: the repeat never reaches the provider.
    let c = crash_at(CAFE_GALLERY, SCRIPT, "read_menu", Crash::AfterIntent, true).await;
    let spec = common::spec(CAFE_GALLERY);
    let mut surfaces: Surfaces = warrant_surfaces::ReferenceCatalog::default()
        .surfaces(&spec)
        .unwrap();
    surfaces.insert(
        "cafe".into(),
        Arc::new(ReferenceSurface::new(c.cafe.clone())),
    );
    let strict = Engine::new(c.store.clone())
        .with_clock(Arc::new(warrant_engine::TickingClock::new(
            1_700_000_100_000,
            1,
        )))
        .with_authority(Arc::new(warrant_engine::DenyTools::new(["read_menu"])));
    let result = strict
        .resume(&c.run, &script(SCRIPT), &surfaces)
        .await
        .unwrap();
    assert_eq!(
        result.state.calls()[0].status,
        Some(CallStatus::StoppedByPolicy)
    );
    assert_replays(&c.store, &c.run).await;
}

/// Runs the cafe-gallery script to its end, noting before each decision what `note` makes of
/// the run's log as the store holds it then (what is durable when the decider is asked).
async fn durable_at_each_decision<T: Clone + Send + 'static>(
    note: impl Fn(&warrant_core::projection::Projection, &[Arc<Event>]) -> T + Send + Sync + 'static,
) -> (Setup, warrant_engine::RunResult, Vec<T>) {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(AllowAll));
    let mut decider = Watching::new(script(SCRIPT));
    let noted = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (store, seen) = (s.store.clone(), noted.clone());
    decider.before = Box::new(move |p| {
        let log = store.events(&p.run_id);
        seen.lock().unwrap().push(note(p, &log));
    });
    let result = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    assert_eq!(result.outcome, Some(Outcome::Attained));
    assert_replays(&s.store, &result.run_id).await;
    let noted = noted.lock().unwrap().clone();
    (s, result, noted)
}

/// A step's start costs no commit of its own: it is committed with the step's first decision
/// (lost in a crash, the step is simply started again). The run's start is durable before
/// anything is decided.
#[tokio::test]
async fn a_steps_start_is_committed_with_its_first_decision() {
    let (_, _, durable) = durable_at_each_decision(|_, log| {
        log.iter()
            .filter_map(|e| match &e.kind {
                EventKind::RunStarted { .. } => Some("run_started"),
                EventKind::StepStarted { .. } => Some("step_started"),
                _ => None,
            })
            .collect::<Vec<_>>()
    })
    .await;
    assert_eq!(durable.first(), Some(&vec!["run_started"]));
    assert_eq!(
        durable.get(1),
        Some(&vec!["run_started", "step_started"]),
        "committed with the first decision"
    );
}

#[tokio::test]
async fn a_reads_result_is_committed_with_the_next_decision_and_a_commits_before_it() {
    // What the store holds each time the decider is asked: the calls whose end is durable.
    let (s, result, durable) = durable_at_each_decision(|p, log| {
        let ended: Vec<u32> = log
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::CallFinished { call, .. } => Some(call.0),
                _ => None,
            })
            .collect();
        (p.decision_no, ended)
    })
    .await;
    // Decision 2 is made from `read_menu`'s result (c1): it rides with that decision's commit.
    assert_eq!(durable.get(1), Some(&(2, vec![])));
    // Decision 3 follows `order_latte` (c2), a commit: its end was durable first.
    assert_eq!(durable.get(2), Some(&(3, vec![1, 2])));
    // And nothing is left behind: the log holds every call's end and replays.
    let log = events(&s.store, &result.run_id);
    assert_eq!(
        log.iter()
            .filter(|e| matches!(e.kind, EventKind::CallFinished { .. }))
            .count(),
        3
    );
}

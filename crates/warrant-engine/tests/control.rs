//! The external execution-control port: when required, every commit call must also be allowed
//! by it, in time; anything else stops the call, recorded apart from provider results.

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
use std::time::Duration;

use common::*;
use warrant_core::check::check_log;
use warrant_core::event::CallStatus;
use warrant_core::ports::{BoxFuture, CapabilityRequest, ControlVerdict, ExecutionControl};
use warrant_core::report::RunReport;
use warrant_core::store::LogReader;
use warrant_core::{Layer, Outcome};
use warrant_engine::replay::replay;
use warrant_engine::{Engine, SequentialIds};
use warrant_store::MemoryStore;
use warrant_surfaces::demo::Bank;

const PAY: &str = "
version: warrant/v1
id: pay
objective: Pay 950 to DE89370400440532013000.
providers:
  bank: {reference: bank}
steps:
  - id: pay
    provider: bank
    tools: [balance, transfer]
    commit: required
";
const SCRIPT_PAY: &str = "steps:\n  pay:\n    - call: balance\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 950}\n    - done: paid\n";

struct Done {
    result: warrant_engine::RunResult,
    bank: Arc<Bank>,
    events: Vec<Arc<warrant_core::Event>>,
}

/// The bank behind `spec_yaml`, on an engine `configure` finishes.
struct World {
    spec: Arc<warrant_core::Spec>,
    store: Arc<MemoryStore>,
    engine: Engine,
    bank: Arc<Bank>,
    surfaces: warrant_engine::Surfaces,
}

fn world(spec_yaml: &str, configure: impl FnOnce(Engine) -> Engine) -> World {
    let spec = common::spec(spec_yaml);
    let store = Arc::new(MemoryStore::new());
    let engine = configure(
        Engine::new(store.clone())
            .with_clock(Arc::new(TokioClock::new()))
            .with_ids(Arc::new(SequentialIds::new("ec"))),
    );
    let bank = Arc::new(Bank::default());
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    let b = bank.clone();
    catalog.register("bank", move || b.clone());
    let surfaces = catalog.surfaces(&spec).unwrap();
    World {
        spec,
        store,
        engine,
        bank,
        surfaces,
    }
}

/// The run's log, checked for consistency and replayed identically.
async fn checked_log(
    store: &MemoryStore,
    run: &warrant_core::ids::RunId,
) -> Vec<Arc<warrant_core::Event>> {
    let events: Vec<_> = store
        .read(run, 1)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.event)
        .collect();
    check_log(events.iter().map(|e| &**e)).unwrap();
    let r = replay(&events).await.unwrap();
    assert_eq!((r.error, r.divergence), (None, None));
    events
}

async fn pay(control: Option<Arc<dyn ExecutionControl>>, timeout_ms: u64) -> Done {
    let w = world(PAY, |e| e.with_execution_control(control, timeout_ms));
    let result = w
        .engine
        .run(w.spec, &script(SCRIPT_PAY), &w.surfaces)
        .await
        .unwrap();
    let events = checked_log(&w.store, &result.run_id).await;
    Done {
        result,
        bank: w.bank,
        events,
    }
}

struct Fixed(ControlVerdict);

impl ExecutionControl for Fixed {
    fn evaluate<'a>(&'a self, _r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, ControlVerdict> {
        Box::pin(std::future::ready(self.0.clone()))
    }
    fn describe(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"fixed": format!("{:?}", self.0)}))
    }
}

struct Silent;

impl ExecutionControl for Silent {
    fn evaluate<'a>(&'a self, _r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, ControlVerdict> {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ControlVerdict::Allow
        })
    }
}

fn stop_of(d: &Done) -> (Option<CallStatus>, String) {
    let c = &d.result.state.calls()[1];
    (
        c.status,
        c.fault.as_ref().map(|f| f.code.clone()).unwrap_or_default(),
    )
}

#[tokio::test]
async fn an_allow_lets_the_commit_through_and_reads_never_ask() {
    let d = pay(Some(Arc::new(Fixed(ControlVerdict::Allow))), 1000).await;
    assert_eq!(d.result.outcome, Some(Outcome::Attained));
    assert_eq!(d.bank.transfers().len(), 1);
}

#[tokio::test]
async fn a_block_stops_the_commit_apart_from_provider_results() {
    let d = pay(
        Some(Arc::new(Fixed(ControlVerdict::Block {
            reason: "outside business hours".into(),
        }))),
        1000,
    )
    .await;
    assert_eq!(
        stop_of(&d),
        (
            Some(CallStatus::StoppedByExecutionControl),
            "execution_control_block".into()
        )
    );
    assert_eq!(
        d.result.state.calls()[0].status,
        Some(CallStatus::Ok),
        "the read was not asked about"
    );
    assert!(d.bank.transfers().is_empty());
    assert_eq!(
        missing_layer(&d.result.outcome),
        Some((
            "pay".into(),
            Layer::Policy,
            "execution_control_block".into()
        ))
    );
    let report = RunReport::from_events(&d.events).unwrap();
    assert!(
        report.failures.iter().all(|f| f.layer != Layer::Provider),
        "never a provider fault"
    );
}

#[tokio::test]
async fn indeterminate_missing_and_silent_controls_all_stop_the_commit() {
    let d = pay(
        Some(Arc::new(Fixed(ControlVerdict::Indeterminate {
            reason: "rules engine down".into(),
        }))),
        1000,
    )
    .await;
    assert_eq!(stop_of(&d).1, "execution_control_indeterminate");
    let d = pay(None, 1000).await;
    assert_eq!(stop_of(&d).1, "execution_control_indeterminate");
    assert!(
        d.result.state.calls()[1]
            .fault
            .as_ref()
            .unwrap()
            .message
            .contains("none is configured")
    );
    assert!(d.bank.transfers().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_control_that_does_not_answer_in_time_stops_the_commit() {
    let d = pay(Some(Arc::new(Silent)), 250).await;
    assert_eq!(stop_of(&d).1, "execution_control_indeterminate");
    assert!(
        d.result.state.calls()[1]
            .fault
            .as_ref()
            .unwrap()
            .message
            .contains("no answer within 250 ms")
    );
    assert!(d.bank.transfers().is_empty());
}

/// An authority that never gives a verdict.
struct Hung;

impl warrant_core::ports::Authority for Hung {
    fn evaluate<'a>(
        &'a self,
        _r: &'a CapabilityRequest<'a>,
    ) -> BoxFuture<'a, warrant_core::ports::Verdict> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn an_authority_that_never_answers_stops_the_call_within_the_call_timeout() {
    let w = world(&format!("{PAY}limits: {{call_timeout_ms: 50}}\n"), |e| {
        e.with_authority(Arc::new(Hung))
    });
    let result = w
        .engine
        .run(w.spec, &script(SCRIPT_PAY), &w.surfaces)
        .await
        .unwrap();
    // Both calls (the read and the commit) stopped, attributed to policy, nothing performed.
    assert_eq!(result.state.calls().len(), 2);
    for call in result.state.calls() {
        assert_eq!(call.status, Some(CallStatus::StoppedByPolicy), "{call:?}");
        let fault = call.fault.as_ref().unwrap();
        assert_eq!(fault.code, "policy_timeout");
        assert_eq!(fault.layer, Layer::Policy);
        assert!(fault.message.contains("50 ms"), "{}", fault.message);
    }
    assert!(w.bank.transfers().is_empty());
    assert!(
        matches!(result.outcome, Some(Outcome::NotAttained { .. })),
        "{:?}",
        result.outcome
    );
    checked_log(&w.store, &result.run_id).await;
}

#[tokio::test(start_paused = true)]
async fn cancelling_while_the_authority_deliberates_ends_the_run_without_calling_the_provider() {
    let World {
        spec,
        store,
        engine,
        bank,
        surfaces,
    } = world(PAY, |e| e.with_authority(Arc::new(Hung)));
    let decider = script(SCRIPT_PAY);
    let run = engine.run(spec, &decider, &surfaces);
    tokio::pin!(run);
    // The default call timeout is far away; the run waits on the authority until cancelled.
    tokio::select! {
        r = &mut run => panic!("ended on its own: {:?}", r.map(|r| r.outcome)),
        () = tokio::time::sleep(Duration::from_millis(500)) => {}
    }
    let id = only_run(&store);
    engine.cancel(&id, "alice", "stuck").await.unwrap();
    let result = run.await.unwrap();
    assert!(
        matches!(result.outcome, Some(Outcome::Cancelled { .. })),
        "{:?}",
        result.outcome
    );
    let call = &result.state.calls()[0];
    assert_eq!(call.status, Some(CallStatus::Cancelled));
    assert_eq!(call.fault.as_ref().unwrap().layer, Layer::Runtime);
    assert!(bank.transfers().is_empty());
}

//! Interceptors: after authority, before dispatch, a call can be halted (suppressed cleanly) or
//! narrowed (the narrowed call is the one executed, and the decider sees both).

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

use common::*;
use serde_json::json;
use warrant_core::event::{CallStatus, EventKind};
use warrant_core::ports::{
    Authority, BoxFuture, CapabilityRequest, Interception, Interceptor, Verdict,
};
use warrant_core::{Layer, Outcome};
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, CapNumber, Engine, HaltTools, SequentialIds};
use warrant_store::MemoryStore;
use warrant_surfaces::demo::Bank;

const PAY: &str = "
version: warrant/v1
id: pay-rent
objective: Pay this month's rent of 950 to DE89370400440532013000.
providers:
  bank: {reference: bank}
steps:
  - id: pay
    provider: bank
    tools: [balance, transfer]
    commit: required
";

const PAY_SCRIPT: &str = "steps:\n  pay:\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 950}\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 90}\n    - done: paid\n";

struct Run {
    result: warrant_engine::RunResult,
    events: Vec<Arc<warrant_core::Event>>,
    bank: Arc<Bank>,
    seen: Vec<warrant_core::projection::Projection>,
}

async fn pay(engine: impl Fn(Engine) -> Engine, script_yaml: &str) -> Run {
    let spec = common::spec(PAY);
    let store = Arc::new(MemoryStore::new());
    let engine = engine(Engine::new(store.clone()).with_ids(Arc::new(SequentialIds::new("pay"))));
    let bank = Arc::new(Bank::default());
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    let b = bank.clone();
    catalog.register("bank", move || b.clone());
    let surfaces = catalog.surfaces(&spec).unwrap();
    let decider = Watching::new(script(script_yaml));
    let result = engine.run(spec, &decider, &surfaces).await.unwrap();
    let events = log(&store, &result);
    let seen = decider.seen.lock().unwrap().clone();
    Run {
        result,
        events,
        bank,
        seen,
    }
}

#[tokio::test]
async fn a_narrowed_call_is_the_one_executed_and_the_decider_sees_both() {
    let r = pay(
        |e| e.with_interceptor(Arc::new(CapNumber::new("transfer", "/amount", 100.0))),
        PAY_SCRIPT,
    )
    .await;
    let first = &r.result.state.calls()[0];
    assert_eq!(first.proposed["amount"], json!(950));
    assert_eq!(first.executed.as_ref().unwrap()["amount"], json!(100));
    assert_eq!(
        r.bank.transfers()[0]["amount"],
        json!(100.0),
        "the provider saw the narrowed call"
    );
    let dispatched = r
        .events
        .iter()
        .find(|e| e.kind.name() == "call_dispatched")
        .unwrap();
    let EventKind::CallDispatched { narrowed, .. } = &dispatched.kind else {
        unreachable!()
    };
    assert_eq!(narrowed[0].by, "cap transfer/amount at 100");
    // The next projection shows what was proposed and what ran.
    let view = r.seen[1].last_call().unwrap();
    assert_eq!(view.proposed["amount"], json!(950));
    assert_eq!(view.executed.as_ref().unwrap()["amount"], json!(100));
    assert_eq!(r.result.outcome, Some(Outcome::Attained));
    let check = replay(&r.events).await.unwrap();
    assert_eq!((check.error, check.divergence), (None, None));
}

#[tokio::test]
async fn a_halted_call_is_suppressed_cleanly_and_the_run_goes_on() {
    let script = "steps:\n  pay:\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 950}\n    - call: balance\n    - done: could not pay\n";
    let r = pay(
        |e| e.with_interceptor(Arc::new(HaltTools::new(["transfer"]))),
        script,
    )
    .await;
    let first = &r.result.state.calls()[0];
    assert_eq!(first.status, Some(CallStatus::Halted));
    assert!(first.executed.is_none(), "never dispatched");
    assert!(r.bank.transfers().is_empty());
    let fault = first.fault.as_ref().unwrap();
    assert_eq!(
        (fault.code.as_str(), fault.layer),
        ("halted", Layer::Policy)
    );
    assert_eq!(
        r.seen[1].last_call().unwrap().fault.as_ref().unwrap().code,
        "halted"
    );
    // The run went on: the balance was read, the step judged, the blame on policy.
    assert_eq!(r.result.state.calls()[1].status, Some(CallStatus::Ok));
    assert_eq!(
        missing_layer(&r.result.outcome),
        Some(("pay".into(), Layer::Policy, "halted".into()))
    );
    warrant_core::check::check_log(r.events.iter().map(|e| &**e)).unwrap();
    let check = replay(&r.events).await.unwrap();
    assert_eq!((check.error, check.divergence), (None, None));
}

/// Narrows to arguments the schema refuses.
struct Sloppy;

impl Interceptor for Sloppy {
    fn name(&self) -> &str {
        "sloppy"
    }
    fn intercept(&self, r: &CapabilityRequest<'_>) -> Interception {
        let mut args = r.args.clone();
        args["amount"] = json!("lots");
        Interception::Narrow {
            args,
            reason: "oops".into(),
        }
    }
}

#[tokio::test]
async fn narrowed_arguments_that_break_the_schema_halt_the_call() {
    let r = pay(|e| e.with_interceptor(Arc::new(Sloppy)), PAY_SCRIPT).await;
    let first = &r.result.state.calls()[0];
    assert_eq!(first.status, Some(CallStatus::Halted));
    assert!(
        first
            .fault
            .as_ref()
            .unwrap()
            .message
            .contains("narrowed arguments are invalid")
    );
    assert!(r.bank.transfers().is_empty());
}

/// Allows only transfers of at least 100 (so a call narrowed below that must be refused).
struct AtLeast100;

impl Authority for AtLeast100 {
    fn evaluate<'a>(&'a self, r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        let small = r
            .args
            .get("amount")
            .and_then(|a| a.as_f64())
            .is_some_and(|a| a < 100.0);
        let v = if small {
            Verdict::Deny {
                reasons: vec!["under 100".into()],
            }
        } else {
            Verdict::Allow {
                grant: "big".into(),
            }
        };
        Box::pin(std::future::ready(v))
    }
}

#[tokio::test]
async fn a_narrowed_call_is_ruled_on_again() {
    // 950 is allowed as proposed; the cap narrows it to 60, which authority refuses: the
    // narrowed call never reaches the bank.
    let script = "steps:\n  pay:\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 950}\n    - done: paid\n";
    let r = pay(
        |e| {
            e.with_authority(Arc::new(AtLeast100))
                .with_interceptor(Arc::new(CapNumber::new("transfer", "/amount", 60.0)))
        },
        script,
    )
    .await;
    let first = &r.result.state.calls()[0];
    assert_eq!(first.status, Some(CallStatus::StoppedByPolicy));
    assert_eq!(first.fault.as_ref().unwrap().message, "under 100");
    assert!(r.bank.transfers().is_empty());
    let check = replay(&r.events).await.unwrap();
    assert_eq!((check.error, check.divergence), (None, None));
    let _ = AllowAll;
}

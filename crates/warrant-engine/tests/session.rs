//! A gateway session's run: one open step, a decider that may leave (`Decider::closed`), and
//! the `closed` outcome — with a held call ended with it, and replayed exactly.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use warrant_core::Outcome;
use warrant_core::check::check_log;
use warrant_core::codes::Code;
use warrant_core::event::{CallStatus, DeciderIdentity, Decision, EventKind};
use warrant_core::ports::{BoxFuture, CancelRequest, DecideError, Decided, Decider};
use warrant_core::projection::Projection;
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, RuleList};

const SESSION: &str = r"
version: warrant/v1
id: session
objective: A gateway session over the cafe.
providers:
  cafe: {reference: cafe}
steps:
  - id: session
    provider: cafe
    tools: [read_menu, order_latte]
    open: true
";

/// Makes its calls in order, then leaves.
struct Leaving {
    calls: Mutex<Vec<(&'static str, serde_json::Value)>>,
    gone: Mutex<bool>,
}

impl Leaving {
    fn new(calls: Vec<(&'static str, serde_json::Value)>) -> Leaving {
        Leaving {
            calls: Mutex::new(calls.into_iter().rev().collect()),
            gone: Mutex::new(false),
        }
    }
}

impl Decider for Leaving {
    fn identity(&self) -> DeciderIdentity {
        DeciderIdentity {
            kind: "mcp-client".into(),
            name: "test".into(),
            digest: None,
        }
    }

    /// Stands for a gateway's client, which is told each call's result.
    fn tells_outside(&self) -> bool {
        true
    }

    fn decide(&self, _projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        let next = self.calls.lock().unwrap().pop();
        Box::pin(async move {
            let Some((tool, args)) = next else {
                *self.gone.lock().unwrap() = true;
                return Err(DecideError::new(Code::Cancelled, "left"));
            };
            Ok(Decided {
                decision: Decision::Call {
                    tool: tool.into(),
                    handle: None,
                    args: Arc::new(args),
                    claims: Vec::new(),
                },
                usage: None,
                exchange: None,
            })
        })
    }

    fn closed(&self) -> Option<CancelRequest> {
        (*self.gone.lock().unwrap()).then(|| CancelRequest {
            by: "client".into(),
            reason: "the client disconnected".into(),
            close: true,
        })
    }
}

#[tokio::test]
async fn a_session_whose_client_leaves_ends_closed_and_replays_exactly() {
    let decider = Leaving::new(vec![
        ("read_menu", json!({})),
        ("order_latte", json!({"size": "small"})),
    ]);
    let world = run_with(SESSION, &decider, Arc::new(AllowAll)).await;
    assert_eq!(
        world.result.outcome,
        Some(Outcome::Closed {
            by: "client".into(),
            reason: "the client disconnected".into()
        })
    );
    // Nothing was decided after the client left: no `decide_failed`, no judgment of a step.
    let kinds = kinds(&world.events);
    assert!(!kinds.contains(&"decide_failed"), "{kinds:?}");
    assert!(!kinds.contains(&"step_finished"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "call_finished").count(), 2);
    // The report says the session closed, its open step with it.
    let report = warrant_core::report::RunReport::from_events(&world.events).unwrap();
    assert_eq!(report.steps[0].status, "closed");
    check_log(world.events.iter().map(|e| &**e)).unwrap();
    assert_eq!(replay(&world.events).await.unwrap().divergence, None);
}

#[tokio::test]
async fn a_call_held_for_approval_when_the_client_leaves_is_cancelled_with_the_session() {
    let decider = Leaving::new(vec![("order_latte", json!({"size": "small"}))]);
    let ask = Arc::new(RuleList::new([], ["order_latte".to_owned()]));
    let spec = common::spec(SESSION);
    let s = setup(&spec, ask);
    let waiting = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    assert!(waiting.outcome.is_none(), "held for approval");
    // The client leaves while the call waits: re-entered, the session closes.
    *decider.gone.lock().unwrap() = true;
    let ended = s
        .engine
        .resume(&waiting.run_id, &decider, &s.surfaces)
        .await
        .unwrap();
    assert!(matches!(ended.outcome, Some(Outcome::Closed { .. })));
    let events = s.store.events(&ended.run_id);
    let held = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CallFinished { status, fault, .. } => Some((*status, fault.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(held.0, CallStatus::Cancelled);
    assert!(held.1.unwrap().message.contains("the session closed"));
    assert!(s.cafe.orders().is_empty(), "never ordered");
    check_log(events.iter().map(|e| &**e)).unwrap();
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

/// Answers a client's call only from what the store holds: at each decision it notes how
/// many calls had their end durable.
struct Durable {
    inner: Leaving,
    store: Arc<warrant_store::MemoryStore>,
    finished: Mutex<Vec<usize>>,
}

impl Decider for Durable {
    fn identity(&self) -> DeciderIdentity {
        self.inner.identity()
    }

    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        let durable = self
            .store
            .events(&projection.run_id)
            .iter()
            .filter(|e| matches!(e.kind, EventKind::CallFinished { .. }))
            .count();
        // What the decider is shown of its last call is what the client is told.
        assert_eq!(
            projection.recent.len(),
            durable,
            "the projection shows a call end the store does not hold"
        );
        self.finished.lock().unwrap().push(durable);
        self.inner.decide(projection)
    }

    fn tells_outside(&self) -> bool {
        self.inner.tells_outside()
    }

    fn closed(&self) -> Option<CancelRequest> {
        self.inner.closed()
    }
}

#[tokio::test]
async fn a_clients_answer_comes_from_what_is_durable() {
    // The gateway answers a call when its client's next decision is asked for, from the
    // projection: every call end shown then must already be in the store.
    let spec = common::spec(SESSION);
    let s = setup(&spec, Arc::new(AllowAll));
    let decider = Durable {
        inner: Leaving::new(vec![
            ("read_menu", json!({})),
            ("order_latte", json!({"size": "small"})),
        ]),
        store: s.store.clone(),
        finished: Mutex::new(Vec::new()),
    };
    let ended = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    assert!(matches!(ended.outcome, Some(Outcome::Closed { .. })));
    assert_eq!(*decider.finished.lock().unwrap(), [0, 1, 2]);
}

#[test]
fn an_open_step_must_be_its_specs_only_step_and_have_no_objective() {
    let two = format!("{SESSION}  - id: more\n    provider: cafe\n    tools: [read_menu]\n");
    let issues = warrant_core::validate::validate(
        &serde_saphyr_spec(&two),
        &warrant_surfaces::ReferenceCatalog::default(),
    );
    assert!(
        issues.iter().any(|(_, m)| m.contains("only step")),
        "{issues:?}"
    );
    let required = SESSION.replace("open: true", "open: true\n    required: true");
    let issues = warrant_core::validate::validate(
        &serde_saphyr_spec(&required),
        &warrant_surfaces::ReferenceCatalog::default(),
    );
    assert!(
        issues.iter().any(|(_, m)| m.contains("no objective")),
        "{issues:?}"
    );
}

fn serde_saphyr_spec(yaml: &str) -> warrant_core::Spec {
    warrant_core::spec::parse_document(yaml, warrant_core::spec::Format::Yaml, "spec.yaml").unwrap()
}

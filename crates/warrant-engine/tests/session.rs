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

/// A client that makes a call, falls quiet (gives its turn back: `Decider::parked`), then
/// makes another and leaves.
struct Quiet {
    turns: Mutex<Vec<Option<(&'static str, serde_json::Value)>>>,
    parked: Mutex<bool>,
    inner: Leaving,
}

impl Decider for Quiet {
    fn identity(&self) -> DeciderIdentity {
        self.inner.identity()
    }

    fn tells_outside(&self) -> bool {
        true
    }

    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        let turn = self.turns.lock().unwrap().pop();
        *self.parked.lock().unwrap() = false;
        match turn {
            Some(None) => {
                *self.parked.lock().unwrap() = true;
                Box::pin(async { Err(DecideError::new(Code::Cancelled, "quiet")) })
            }
            Some(Some(call)) => {
                *self.inner.calls.lock().unwrap() = vec![call];
                self.inner.decide(projection)
            }
            None => self.inner.decide(projection),
        }
    }

    fn closed(&self) -> Option<CancelRequest> {
        self.inner.closed()
    }

    fn parked(&self) -> bool {
        *self.parked.lock().unwrap()
    }
}

#[tokio::test]
async fn a_quiet_session_is_let_go_as_it_is_and_taken_up_again_by_its_next_call() {
    let spec = common::spec(SESSION);
    let s = setup(&spec, Arc::new(AllowAll));
    let decider = Quiet {
        turns: Mutex::new(vec![
            Some(("order_latte", json!({"size": "small"}))),
            None,
            Some(("read_menu", json!({}))),
        ]),
        parked: Mutex::new(false),
        inner: Leaving::new(Vec::new()),
    };
    let quiet = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    // Let go after its first call: neither ended nor waiting, and nothing recorded for it.
    assert!(quiet.outcome.is_none());
    assert!(quiet.parked.is_some());
    let before = s.store.events(&quiet.run_id);
    assert_eq!(before.last().unwrap().kind.name(), "call_finished");
    // Its lease is still this process's: no other process takes the session over.
    use warrant_core::ports::Clock;
    let other = warrant_core::ports::Driver {
        holder: Arc::from("pid 1@elsewhere"),
        now_ms: s.clock.now_ms(),
        epoch: 0,
    };
    use warrant_core::store::{Claim, Leases};
    assert!(matches!(
        s.store.claim(&quiet.run_id, &other).await.unwrap(),
        Claim::Held(_)
    ));
    drop(quiet.parked);
    // The next call takes it up again from its log; then the client leaves.
    let ended = s
        .engine
        .resume(&quiet.run_id, &decider, &s.surfaces)
        .await
        .unwrap();
    assert!(matches!(ended.outcome, Some(Outcome::Closed { .. })));
    let events = s.store.events(&ended.run_id);
    let kinds = kinds(&events);
    assert_eq!(kinds.iter().filter(|k| **k == "run_resumed").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "call_finished").count(), 2);
    assert!(!kinds.contains(&"decide_failed"), "{kinds:?}");
    assert_eq!(s.cafe.orders().len(), 1, "ordered once");
    check_log(events.iter().map(|e| &**e)).unwrap();
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

#[tokio::test]
async fn a_session_let_go_is_ended_by_a_cancellation_requested_meanwhile() {
    let spec = common::spec(SESSION);
    let s = setup(&spec, Arc::new(AllowAll));
    let decider = Quiet {
        turns: Mutex::new(vec![None, Some(("read_menu", json!({})))]),
        parked: Mutex::new(false),
        inner: Leaving::new(Vec::new()),
    };
    let quiet = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    let parked = quiet.parked.expect("let go");
    s.engine
        .cancel(&quiet.run_id, "ops/alice", "closing idle sessions")
        .await
        .unwrap();
    // Whoever holds the let-go run hears of it, from the store, without a call coming.
    let request = tokio::time::timeout(std::time::Duration::from_secs(30), parked.cancelled())
        .await
        .expect("told of the cancellation");
    assert_eq!(request.by, "ops/alice");
    drop(parked);
    let ended = s
        .engine
        .resume(&quiet.run_id, &decider, &s.surfaces)
        .await
        .unwrap();
    assert!(
        matches!(&ended.outcome, Some(Outcome::Cancelled { by, .. }) if by == "ops/alice"),
        "{:?}",
        ended.outcome
    );
    let events = s.store.events(&ended.run_id);
    check_log(events.iter().map(|e| &**e)).unwrap();
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

#[tokio::test]
async fn a_session_let_go_is_still_due_at_its_deadline() {
    // Let go, the run's deadline still bounds it: whoever holds it is told when it comes.
    let spec = common::spec(&SESSION.replace("steps:", "limits: {deadline_ms: 300}\nsteps:"));
    let s = setup(&spec, Arc::new(AllowAll));
    let decider = Quiet {
        turns: Mutex::new(vec![None, Some(("read_menu", json!({})))]),
        parked: Mutex::new(false),
        inner: Leaving::new(Vec::new()),
    };
    let quiet = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    let parked = quiet.parked.expect("let go");
    tokio::time::timeout(std::time::Duration::from_secs(30), parked.due())
        .await
        .expect("due at the deadline");
}

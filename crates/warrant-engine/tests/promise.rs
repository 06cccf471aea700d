//! The promise on real transports: an effect whose answer was lost is never recorded as failed
//! (so never repeated) and never dropped; every wait on a port is bounded; a run that waits
//! for a person is left as it is by a re-entry that has nothing to do; nothing follows
//! `run_finished`; an operator can have a call that did not happen sent again, ruled on again.

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

use common::*;
use warrant_core::event::{CallStatus, DoubtStage, EventKind, Layer};
use warrant_core::ids::CallId;
use warrant_core::ports::{BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError};
use warrant_core::report::RunReport;
use warrant_core::store::{LogWriter, RunsIndex};
use warrant_core::{Outcome, Spec};
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, Engine, EngineError, SequentialIds};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceSurface;
use warrant_surfaces::demo::Cafe;

/// What a faulty port does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Behaves.
    None,
    /// Never answers.
    Hang,
    /// Performs the call, then its answer is lost (the connection drops).
    PerformThenLose,
    /// Fails before sending anything.
    NotSent,
    /// The provider has stopped: nothing sent (and `revive` cannot start it).
    Down,
    /// Performs the call, then never answers.
    PerformThenHang,
}

/// The cafe behind ports that misbehave as told: `invoke` for calls to `tool`, `observe`,
/// and `is_current`.
struct Faulty {
    inner: ReferenceSurface,
    tool: &'static str,
    invoke: Fault,
    observe: Fault,
    fresh: Fault,
    invoked: Mutex<Vec<String>>,
}

impl Faulty {
    fn new(cafe: Arc<Cafe>, tool: &'static str) -> Faulty {
        Faulty {
            inner: ReferenceSurface::new(cafe),
            tool,
            invoke: Fault::None,
            observe: Fault::None,
            fresh: Fault::None,
            invoked: Mutex::new(Vec::new()),
        }
    }
}

impl Surface for Faulty {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        match self.observe {
            Fault::Hang => Box::pin(std::future::pending()),
            _ => self.inner.observe(),
        }
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        self.invoked
            .lock()
            .unwrap()
            .push(call.idempotency_key().to_owned());
        if call.tool() != self.tool {
            return self.inner.invoke(call);
        }
        match self.invoke {
            Fault::None => self.inner.invoke(call),
            Fault::Hang => Box::pin(std::future::pending()),
            Fault::NotSent => Box::pin(std::future::ready(Err(SurfaceError::not_sent(
                "connection refused",
            )))),
            Fault::PerformThenLose => Box::pin(async move {
                let _ = self.inner.invoke(call).await;
                Err(SurfaceError::answer_lost(
                    "the connection closed before the answer",
                ))
            }),
            Fault::Down => Box::pin(std::future::ready(Err(SurfaceError::new(
                warrant_core::ports::SurfaceErrorKind::Down,
                "the server had stopped before the call was sent",
            )))),
            Fault::PerformThenHang => Box::pin(async move {
                let _ = self.inner.invoke(call).await;
                std::future::pending().await
            }),
        }
    }

    fn revive(&self) -> BoxFuture<'_, warrant_core::ports::Restart> {
        let error = (self.invoke == Fault::Down)
            .then(|| SurfaceError::not_sent("the server cannot be started: no such program"));
        Box::pin(std::future::ready(warrant_core::ports::Restart {
            attempts: 3,
            error,
        }))
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        match self.fresh {
            Fault::Hang => Box::pin(std::future::pending()),
            _ => self.inner.is_current(version),
        }
    }
}

const ORDER: &str = "
version: warrant/v1
id: order
objective: Order a medium latte with oat milk.
providers:
  cafe: {reference: cafe}
steps:
  - id: order
    provider: cafe
    tools: [read_menu, order_latte]
    commit: required
limits: {call_timeout_ms: 200, deadline_ms: 60000}
";

/// Orders once, then says it is done.
const ONCE: &str = "
steps:
  order:
    - call: order_latte
      args: {size: medium, milk: oat}
    - done: ordered
";

/// Orders, and orders again if the first failed (a decider that retries).
const RETRYING: &str = "
steps:
  order:
    - call: order_latte
      args: {size: medium, milk: oat}
    - call: order_latte
      args: {size: medium, milk: oat}
    - done: ordered
";

struct Ran {
    engine: Engine,
    store: Arc<MemoryStore>,
    cafe: Arc<Cafe>,
    surface: Arc<Faulty>,
    result: warrant_engine::RunResult,
}

/// Runs `spec` over a faulty cafe, on tokio's paused clock (timeouts fire without waiting).
async fn run_faulty(spec_yaml: &str, script_yaml: &str, shape: impl FnOnce(&mut Faulty)) -> Ran {
    let spec = spec(spec_yaml);
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TokioClock::new()))
        .with_ids(Arc::new(SequentialIds::new("run")))
        .with_authority(Arc::new(AllowAll));
    let cafe = Arc::new(Cafe::default());
    let mut faulty = Faulty::new(cafe.clone(), "order_latte");
    shape(&mut faulty);
    let surface = Arc::new(faulty);
    let mut surfaces: warrant_engine::Surfaces = std::collections::HashMap::new();
    surfaces.insert("cafe".into(), surface.clone());
    let result = engine
        .run(spec, &script(script_yaml), &surfaces)
        .await
        .unwrap();
    Ran {
        engine,
        store,
        cafe,
        surface,
        result,
    }
}

fn surfaces_of(r: &Ran) -> warrant_engine::Surfaces {
    let mut surfaces: warrant_engine::Surfaces = std::collections::HashMap::new();
    surfaces.insert("cafe".into(), r.surface.clone());
    surfaces
}

#[tokio::test(start_paused = true)]
async fn a_commit_whose_answer_was_lost_is_in_doubt_and_never_repeated() {
    let r = run_faulty(ORDER, RETRYING, |f| f.invoke = Fault::PerformThenLose).await;
    // The effect happened once; the run waits for an operator instead of letting the decider
    // retry it.
    assert_eq!(r.cafe.orders().len(), 1);
    assert_eq!(r.result.outcome, None);
    assert_eq!(r.result.waiting_on, vec![CallId(1)]);
    let call = r.result.state.call(CallId(1)).unwrap();
    assert!(call.in_doubt);
    assert_eq!(call.doubt, Some(DoubtStage::AnswerLost));
    assert_eq!(r.surface.invoked.lock().unwrap().len(), 1);
    let events = log(&r.store, &r.result);
    let doubt = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CallInDoubt { reason, cause, .. } => Some((reason.clone(), cause.clone())),
            _ => None,
        })
        .unwrap();
    assert!(doubt.0.contains("its answer was lost"), "{}", doubt.0);
    assert_eq!(doubt.1.unwrap().code, "answer_lost");
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

#[tokio::test(start_paused = true)]
async fn a_commit_that_was_never_sent_fails_and_may_be_retried() {
    let r = run_faulty(ORDER, RETRYING, |f| f.invoke = Fault::NotSent).await;
    assert_eq!(r.cafe.orders().len(), 0);
    let c1 = r.result.state.call(CallId(1)).unwrap();
    assert_eq!(c1.status, Some(CallStatus::ProviderError));
    assert_eq!(c1.fault.as_ref().unwrap().code, "unavailable");
    // Nothing was sent, so the decider's retry is a second attempt, not a repeat.
    assert_eq!(r.surface.invoked.lock().unwrap().len(), 2);
    assert!(!c1.in_doubt);
}

#[tokio::test(start_paused = true)]
async fn a_read_whose_answer_was_lost_is_a_provider_error() {
    let script_yaml = "
steps:
  order:
    - call: read_menu
    - done: read it
";
    let r = run_faulty(ORDER, script_yaml, |f| {
        f.tool = "read_menu";
        f.invoke = Fault::PerformThenLose;
    })
    .await;
    let c1 = r.result.state.call(CallId(1)).unwrap();
    assert_eq!(c1.status, Some(CallStatus::ProviderError));
    assert_eq!(c1.fault.as_ref().unwrap().code, "answer_lost");
}

#[tokio::test(start_paused = true)]
async fn a_hung_observation_ends_the_step_within_the_call_timeout() {
    let r = run_faulty(ORDER, RETRYING, |f| f.observe = Fault::Hang).await;
    let Some(Outcome::NotAttained { missing }) = &r.result.outcome else {
        panic!("{:?}", r.result.outcome)
    };
    assert_eq!(missing[0].fault.code, "timeout");
    assert_eq!(missing[0].fault.layer, Layer::Provider);
    assert!(missing[0].fault.message.contains("no answer within 200 ms"));
    let events = log(&r.store, &r.result);
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

#[tokio::test(start_paused = true)]
async fn a_hung_observation_past_the_deadline_exhausts_the_run() {
    let spec_yaml = ORDER.replace(
        "limits: {call_timeout_ms: 200, deadline_ms: 60000}",
        "limits: {call_timeout_ms: 600000, deadline_ms: 1000}",
    );
    let r = run_faulty(&spec_yaml, RETRYING, |f| f.observe = Fault::Hang).await;
    assert_eq!(
        r.result.outcome,
        Some(Outcome::Exhausted {
            limit: "deadline_ms".into(),
            value: 1000
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_freshness_check_stops_the_call_before_anything_is_sent() {
    let r = run_faulty(ORDER, RETRYING, |f| f.fresh = Fault::Hang).await;
    assert_eq!(r.cafe.orders().len(), 0);
    assert!(r.surface.invoked.lock().unwrap().is_empty());
    let c1 = r.result.state.call(CallId(1)).unwrap();
    assert_eq!(c1.status, Some(CallStatus::Rejected));
    assert_eq!(c1.fault.as_ref().unwrap().code, "freshness_timeout");
    assert!(c1.executed.is_none(), "no intent was recorded");
    let events = log(&r.store, &r.result);
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

#[tokio::test(start_paused = true)]
async fn a_hung_commit_is_in_doubt_within_the_call_timeout() {
    let r = run_faulty(ORDER, RETRYING, |f| f.invoke = Fault::Hang).await;
    let c1 = r.result.state.call(CallId(1)).unwrap();
    assert!(c1.in_doubt);
    assert_eq!(c1.doubt, Some(DoubtStage::SentNoAnswer));
}

#[tokio::test(start_paused = true)]
async fn a_waiting_run_resumed_with_nothing_changed_records_nothing() {
    let r = run_faulty(ORDER, RETRYING, |f| f.invoke = Fault::PerformThenLose).await;
    let before = log(&r.store, &r.result).len();
    for _ in 0..3 {
        let again = r
            .engine
            .resume(&r.result.run_id, &script(RETRYING), &surfaces_of(&r))
            .await
            .unwrap();
        assert_eq!(again.outcome, None);
    }
    assert_eq!(
        log(&r.store, &r.result).len(),
        before,
        "no run_resumed piles up"
    );
    assert_eq!(
        r.store
            .runs(warrant_core::ports::RunQuery::default())
            .await
            .unwrap()
            .runs[0]
            .status,
        "waiting"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_reconciled_as_not_performed_can_be_sent_again_and_is_ruled_on_again() {
    let mut r = run_faulty(ORDER, ONCE, |f| f.invoke = Fault::PerformThenLose).await;
    // The provider actually lost it: the operator says it did not happen, and to send it again.
    r.cafe = Arc::new(Cafe::default());
    let mut healthy = Faulty::new(r.cafe.clone(), "order_latte");
    healthy.invoke = Fault::None;
    r.surface = Arc::new(healthy);
    r.engine
        .reconcile(
            &r.result.run_id,
            CallId(1),
            false,
            true,
            "ops",
            "not on the till",
        )
        .await
        .unwrap();
    assert_eq!(
        r.store
            .runs(warrant_core::ports::RunQuery::default())
            .await
            .unwrap()
            .runs[0]
            .status,
        "ready"
    );
    let done = r
        .engine
        .resume(&r.result.run_id, &script(ONCE), &surfaces_of(&r))
        .await
        .unwrap();
    assert_eq!(done.outcome, Some(Outcome::Attained), "{:?}", done.outcome);
    assert_eq!(r.cafe.orders().len(), 1, "sent once more, not twice");
    let c1 = done.state.call(CallId(1)).unwrap();
    let c2 = done.state.call(CallId(2)).unwrap();
    assert_eq!(c1.status, Some(CallStatus::NotPerformed));
    assert_eq!(c1.resent_by, Some(CallId(2)));
    assert_eq!(c2.resend_of, Some(CallId(1)));
    assert_ne!(
        c1.idempotency_key, c2.idempotency_key,
        "a new intent, under a new key"
    );
    let events = log(&r.store, &done);
    assert_eq!(replay(&events).await.unwrap().divergence, None);
    let report = RunReport::from_state(&done.state);
    assert_eq!(report.unsettled.len(), 1);
    assert_eq!(report.unsettled[0].resent_by, Some(CallId(2)));
}

#[tokio::test(start_paused = true)]
async fn a_resent_call_is_refused_when_the_authority_now_denies_it() {
    let r = run_faulty(ORDER, RETRYING, |f| f.invoke = Fault::PerformThenLose).await;
    r.engine
        .reconcile(&r.result.run_id, CallId(1), false, true, "ops", "")
        .await
        .unwrap();
    let denying = r
        .engine
        .clone()
        .with_authority(Arc::new(warrant_engine::DenyTools::new(["order_latte"])));
    let done = denying
        .resume(&r.result.run_id, &script(RETRYING), &surfaces_of(&r))
        .await
        .unwrap();
    let c2 = done.state.call(CallId(2)).unwrap();
    assert_eq!(c2.status, Some(CallStatus::StoppedByPolicy));
    assert_eq!(r.cafe.orders().len(), 1, "only the lost first one");
    let report = RunReport::from_state(&done.state);
    assert!(report.render().contains("did not happen; sent again as c2"));
}

#[tokio::test(start_paused = true)]
async fn nothing_is_recorded_after_a_run_ends() {
    let r = run_faulty(ORDER, RETRYING, |f| f.invoke = Fault::PerformThenLose).await;
    r.engine
        .cancel(&r.result.run_id, "ops", "giving up")
        .await
        .unwrap();
    let ended = r
        .engine
        .resume(&r.result.run_id, &script(RETRYING), &surfaces_of(&r))
        .await
        .unwrap();
    assert!(matches!(ended.outcome, Some(Outcome::Cancelled { .. })));
    let before = log(&r.store, &ended).len();
    let refused = r
        .engine
        .reconcile(&r.result.run_id, CallId(1), true, false, "ops", "")
        .await
        .unwrap_err();
    assert!(matches!(refused, EngineError::Refused(_)), "{refused}");
    assert_eq!(log(&r.store, &ended).len(), before);
    // The report says the effect was never settled.
    let report = RunReport::from_state(&ended.state);
    assert_eq!(report.unsettled[0].state, "in_doubt");
}

#[tokio::test]
async fn a_step_tool_the_provider_does_not_offer_is_the_specs_fault() {
    // Validation catches this for providers whose tools are known before the run; an MCP or
    // OpenAPI provider's are known only once it runs, so the Bridge must say it too.
    let spec_yaml = ORDER.replace("[read_menu, order_latte]", "[read_menu, order_mocha]");
    let spec =
        Arc::new(Spec::parse(&spec_yaml, warrant_core::spec::Format::Yaml, "s.yaml").unwrap());
    let script_yaml = "
steps:
  order:
    - call: order_mocha
      args: {}
    - done: tried
";
    let s = setup(&spec, Arc::new(AllowAll));
    let result = s
        .engine
        .run(spec, &script(script_yaml), &s.surfaces)
        .await
        .unwrap();
    let events = log(&s.store, &result);
    let faults = call_faults(&events);
    assert_eq!(faults[0], ("tool_not_offered".into(), "spec".into()));
    let Some(Outcome::NotAttained { missing }) = &result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert_eq!(missing[0].fault.layer, Layer::Spec);
}

#[tokio::test]
async fn an_unknown_event_type_makes_resume_refuse() {
    let w = run(CAFE_GALLERY, SCRIPT).await;
    let store = MemoryStore::new();
    let mut events: Vec<Arc<warrant_core::Event>> = w.events.clone();
    events.pop();
    let next = events.len() as u64 + 1;
    let text = format!(r#"{{"seq":{next},"at_ms":1,"type":"budget_granted","amount":5}}"#);
    let odd = warrant_core::event::decode(&text).unwrap();
    assert_eq!(odd.kind.name(), "unrecognized");
    events.push(Arc::new(odd));
    store
        .append(&w.result.run_id, 0, events, None)
        .await
        .unwrap();
    let engine = Engine::new(Arc::new(store));
    let spec = spec(CAFE_GALLERY);
    let surfaces = setup(&spec, Arc::new(AllowAll)).surfaces;
    let err = engine
        .resume(&w.result.run_id, &script(SCRIPT), &surfaces)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`budget_granted`"), "{err}");
}

#[tokio::test]
async fn an_input_bound_to_a_carried_value_is_not_asked_of_the_decider() {
    let watching = Watching::new(script(SCRIPT));
    let w = run_with(CAFE_GALLERY, &watching, Arc::new(AllowAll)).await;
    assert_eq!(w.result.outcome, Some(Outcome::Attained));
    let seen = watching.seen.lock().unwrap();
    let drift = seen.iter().find(|p| p.step.0.as_ref() == "drift").unwrap();
    let action = drift
        .actions
        .iter()
        .find(|a| a.name == "check_design_drift")
        .unwrap();
    // Warrant fills `color` from the evidence and checks it; the decider is not asked for it.
    assert!(
        action.input_schema["properties"].get("color").is_none(),
        "{}",
        action.input_schema
    );
    let required = action.input_schema["required"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!required.contains(&serde_json::json!("color")));
    // The call still carried it, from the evidence.
    let drift_call = w.result.state.calls().last().unwrap();
    assert_eq!(
        drift_call.executed.as_ref().unwrap()["color"],
        w.result.state.carried()["order.color"]
            .value
            .as_ref()
            .clone()
    );
}

/// The recorded logs every later build must read (warrant-core's fixtures) replay byte for
/// byte: the engine regenerates exactly what an earlier build wrote.
#[tokio::test]
async fn every_recorded_fixture_replays_byte_for_byte() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../warrant-core/tests/fixtures");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let events: Vec<Arc<warrant_core::Event>> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| Arc::new(warrant_core::event::decode(l).unwrap()))
            .collect();
        let check = replay(&events).await.unwrap();
        assert_eq!(check.error, None, "{}", path.display());
        assert_eq!(check.divergence, None, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 3);
}

/// A commit that found its provider stopped before it was sent leaves the run interrupted;
/// resumed, it is sent once — and a crash right after that send leaves it in doubt at the
/// next re-entry, never sent a third time.
#[tokio::test(start_paused = true)]
async fn a_commit_never_sent_is_sent_once_on_resume_and_in_doubt_if_that_send_is_lost() {
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TokioClock::new()))
        .with_ids(Arc::new(SequentialIds::new("run")))
        .with_authority(Arc::new(AllowAll));
    let cafe = Arc::new(Cafe::default());
    let surfaces_with = |fault: Fault| {
        let mut f = Faulty::new(cafe.clone(), "order_latte");
        f.invoke = fault;
        let f = Arc::new(f);
        let mut s: warrant_engine::Surfaces = std::collections::HashMap::new();
        s.insert("cafe".into(), f.clone());
        (s, f)
    };
    // The provider is down and cannot be started: interrupted, nothing sent.
    let (down, _) = surfaces_with(Fault::Down);
    let err = engine
        .run(spec(ORDER), &script(ONCE), &down)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Interrupted { .. }), "{err}");
    let run = warrant_core::ids::RunId("run-1".into());
    let state = engine.fold(&run).await.unwrap();
    assert!(state.call(CallId(1)).unwrap().unsent);
    assert_eq!(cafe.orders().len(), 0);
    // Resumed: sent, performed, and the process dies before the answer is recorded.
    let (hanging, _) = surfaces_with(Fault::PerformThenHang);
    let crashed = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        engine.resume(&run, &script(ONCE), &hanging),
    )
    .await;
    assert!(crashed.is_err(), "the resume was cut off mid-call");
    assert_eq!(cafe.orders().len(), 1);
    // Resumed again: the call may have happened, so it is in doubt, not sent again.
    let (healthy, surface) = surfaces_with(Fault::None);
    let waiting = engine.resume(&run, &script(ONCE), &healthy).await.unwrap();
    assert_eq!(cafe.orders().len(), 1, "never sent a third time");
    assert!(surface.invoked.lock().unwrap().is_empty());
    assert!(waiting.state.call(CallId(1)).unwrap().in_doubt);
    let events = log(&store, &waiting);
    assert_eq!(replay(&events).await.unwrap().divergence, None);
}

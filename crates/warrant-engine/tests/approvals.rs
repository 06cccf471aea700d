//! Approvals: durable requests bound to the exact arguments and schema, consumed exactly once,
//! denials that stay denials, expiry, and a crash between approval and dispatch.

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
use serde_json::json;
use tokio::sync::Notify;
use warrant_core::check::check_log;
use warrant_core::event::{ApprovalScope, CallStatus, Event, EventKind};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError};
use warrant_core::spec::{Format, ProviderSpec};
use warrant_core::validate::{self, ProviderCatalog};
use warrant_core::{Layer, Outcome};
use warrant_engine::replay::replay;
use warrant_engine::{Answer, Answered, Engine, RuleList, SequentialIds, Surfaces, TickingClock};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceSurface;
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
limits:
  approval_ttl_ms: 600000
";

fn transfer(amount: u32) -> String {
    format!("    - call: transfer\n      args: {{to: DE89370400440532013000, amount: {amount}}}\n")
}

struct World {
    engine: Engine,
    store: Arc<MemoryStore>,
    clock: Arc<TickingClock>,
    bank: Arc<Bank>,
    surfaces: Surfaces,
    script: String,
    spec: String,
}

fn world(script_body: &str) -> World {
    world_for(PAY, script_body)
}

/// A world over `spec_text` (a bank spec whose `transfer` asks for approval).
fn world_for(spec_text: &str, script_body: &str) -> World {
    let spec = common::spec(spec_text);
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(TickingClock::new(1_700_000_000_000, 1));
    let engine = Engine::new(store.clone())
        .with_clock(clock.clone())
        .with_ids(Arc::new(SequentialIds::new("ap")))
        .with_authority(Arc::new(RuleList::new([], ["transfer".to_owned()])));
    let bank = Arc::new(Bank::default());
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    let b = bank.clone();
    catalog.register("bank", move || b.clone());
    let surfaces = catalog.surfaces(&spec).unwrap();
    World {
        engine,
        store,
        clock,
        bank,
        surfaces,
        script: format!("steps:\n  pay:\n{script_body}"),
        spec: spec_text.to_owned(),
    }
}

impl World {
    async fn start(&self) -> warrant_engine::RunResult {
        self.engine
            .run(
                common::spec(&self.spec),
                &script(&self.script),
                &self.surfaces,
            )
            .await
            .unwrap()
    }
    async fn resume(&self, run: &RunId) -> warrant_engine::RunResult {
        self.engine
            .resume(run, &script(&self.script), &self.surfaces)
            .await
            .unwrap()
    }
    fn events(&self, run: &RunId) -> Vec<Arc<Event>> {
        self.store.events(run)
    }
    async fn check(&self, run: &RunId) {
        let events = self.events(run);
        check_log(events.iter().map(|e| &**e)).unwrap();
        let r = replay(&events).await.unwrap();
        assert_eq!((r.error, r.divergence), (None, None));
    }
}

fn once() -> Answer {
    Answer::Approve {
        scope: ApprovalScope::Once,
        until_ms: None,
        edited: None,
    }
}

fn count(events: &[Arc<Event>], kind: &str) -> usize {
    events.iter().filter(|e| e.kind.name() == kind).count()
}

#[tokio::test]
async fn an_ask_holds_the_call_durably_and_an_approval_lets_it_through_once() {
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let waiting = w.start().await;
    assert_eq!(waiting.outcome, None);
    assert_eq!(waiting.waiting_on, vec![CallId(1)]);
    assert!(
        w.bank.transfers().is_empty(),
        "nothing reaches the bank before approval"
    );
    let events = w.events(&waiting.run_id);
    let req = events.iter().find_map(|e| match &e.kind {
        EventKind::ApprovalRequested {
            request,
            args_digest,
            schema_digest,
            provider,
            effect,
            ..
        } => {
            assert!(args_digest.starts_with("sha256:") && schema_digest.starts_with("sha256:"));
            assert_eq!(provider, "bank");
            assert_eq!(*effect, warrant_core::event::Effect::Commit);
            Some(request.clone())
        }
        _ => None,
    });
    let req = req.expect("a durable request");
    assert_eq!(req, "ap-1-a1");

    assert_eq!(
        w.engine.answer(&req, once(), "alice").await.unwrap(),
        Answered::Recorded
    );
    // A duplicate response is a no-op, reported as such; a different one is refused.
    assert_eq!(
        w.engine.answer(&req, once(), "alice").await.unwrap(),
        Answered::AlreadyAnswered
    );
    assert!(
        w.engine
            .answer(
                &req,
                Answer::Deny {
                    reason: "no".into()
                },
                "bob"
            )
            .await
            .is_err()
    );

    let done = w.resume(&waiting.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    assert_eq!(w.bank.transfers().len(), 1);
    let events = w.events(&waiting.run_id);
    assert_eq!(count(&events, "approval_consumed"), 1);
    assert_eq!(count(&events, "call_dispatched"), 1);
    // Consumed in the same append as the intent: adjacent in the log.
    let i = events
        .iter()
        .position(|e| e.kind.name() == "approval_consumed")
        .unwrap();
    assert_eq!(events[i + 1].kind.name(), "call_dispatched");
    // The run is over: answering now is refused.
    assert!(w.engine.answer(&req, once(), "alice").await.is_err());
    w.check(&waiting.run_id).await;
}

#[tokio::test]
async fn an_approval_binds_the_arguments_and_a_different_call_needs_its_own() {
    let w = world(&format!(
        "{}{}    - done: paid\n",
        transfer(950),
        transfer(40)
    ));
    let r = w.start().await;
    w.engine.answer("ap-1-a1", once(), "alice").await.unwrap();
    let r2 = w.resume(&r.run_id).await;
    // The second transfer has other arguments: the once-approval does not cover it.
    assert_eq!(r2.outcome, None);
    assert_eq!(r2.waiting_on, vec![CallId(2)]);
    assert_eq!(w.bank.transfers().len(), 1);
    let events = w.events(&r.run_id);
    assert_eq!(count(&events, "approval_requested"), 2);
    w.engine.answer("ap-1-a2", once(), "alice").await.unwrap();
    let r3 = w.resume(&r.run_id).await;
    assert_eq!(r3.outcome, Some(Outcome::Attained));
    assert_eq!(w.bank.transfers().len(), 2);
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn a_run_scoped_approval_covers_the_action_for_the_rest_of_the_run() {
    let w = world(&format!(
        "{}{}    - done: paid\n",
        transfer(950),
        transfer(40)
    ));
    let r = w.start().await;
    w.engine
        .answer(
            "ap-1-a1",
            Answer::Approve {
                scope: ApprovalScope::Run,
                until_ms: None,
                edited: None,
            },
            "alice",
        )
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    assert_eq!(w.bank.transfers().len(), 2);
    assert_eq!(count(&w.events(&r.run_id), "approval_requested"), 1);
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn a_denial_stays_a_denial_for_a_retry_of_the_same_effect() {
    let w = world(&format!(
        "{}{}    - done: paid\n",
        transfer(950),
        transfer(950)
    ));
    let r = w.start().await;
    w.engine
        .answer(
            "ap-1-a1",
            Answer::Deny {
                reason: "not this month".into(),
            },
            "bob",
        )
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    let statuses: Vec<_> = done
        .state
        .calls()
        .iter()
        .map(|c| (c.status, c.fault.as_ref().map(|f| f.code.clone())))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (
                Some(CallStatus::StoppedByPolicy),
                Some("approval_denied".into())
            ),
            (
                Some(CallStatus::StoppedByPolicy),
                Some("approval_denied".into())
            ),
        ]
    );
    assert_eq!(
        count(&w.events(&r.run_id), "approval_requested"),
        1,
        "the retry made no new request"
    );
    assert!(w.bank.transfers().is_empty());
    assert_eq!(
        missing_layer(&done.outcome),
        Some(("pay".into(), Layer::Policy, "approval_denied".into()))
    );
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn an_unanswered_request_expires_and_the_call_is_refused() {
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let r = w.start().await;
    w.clock.advance(600_001);
    assert!(
        w.engine.answer("ap-1-a1", once(), "alice").await.is_err(),
        "too late"
    );
    let done = w.resume(&r.run_id).await;
    assert_eq!(
        done.state.calls()[0].fault.as_ref().unwrap().code,
        "approval_expired"
    );
    assert!(w.bank.transfers().is_empty());
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn cancelling_a_run_that_waits_for_approval_ends_the_held_call() {
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let r = w.start().await;
    w.engine
        .cancel(&r.run_id, "carol", "changed my mind")
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    assert!(matches!(done.outcome, Some(Outcome::Cancelled { .. })));
    assert_eq!(done.state.calls()[0].status, Some(CallStatus::Cancelled));
    assert!(
        w.engine.answer("ap-1-a1", once(), "alice").await.is_err(),
        "the run is over"
    );
    w.check(&r.run_id).await;
}

/// The bank's `transfer` offered again under a second name, `wire`, that the authority does not
/// ask about: the same effect on the same target by another tool name.
struct Alias {
    inner: Arc<dyn Surface>,
}

impl Surface for Alias {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(async move {
            let mut o = self.inner.observe().await?;
            let mut actions = o.actions.to_vec();
            let mut wire = actions
                .iter()
                .find(|a| a.name == "transfer")
                .unwrap()
                .clone();
            wire.name = "wire".into();
            actions.push(wire);
            o.actions = actions.into();
            Ok(o)
        })
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        // An alias: the surface's own name for the tool, as a join's member has.
        let call = if call.tool() == "wire" {
            call.for_member("transfer", call.version())
        } else {
            call
        };
        self.inner.invoke(call)
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
    fn recovery(&self, _tool: &str) -> warrant_core::ports::Recovery {
        self.inner.recovery("transfer")
    }
}

/// A denial holds for its own effect — this provider's tool with these arguments — and each
/// refusal cites its own request. Another tool called with the same arguments (an alias, or a
/// different action that takes them) is not refused for it, nor let through unasked: the
/// operator's rules ask only about `transfer`, yet the `wire` with the denied arguments is
/// asked about on its own, and denied again; nothing moves.
#[tokio::test]
async fn a_denial_holds_for_its_tool_and_another_tool_with_the_same_arguments_is_asked_on_its_own()
{
    let spec_text = PAY.replace("[balance, transfer]", "[balance, transfer, wire]");
    let mut w = world(&format!(
        "{}    - call: wire\n      args: {{to: DE89370400440532013000, amount: 950}}\n    - done: paid\n",
        transfer(950)
    ));
    let bank = w.surfaces.remove("bank").unwrap();
    w.surfaces
        .insert("bank".into(), Arc::new(Alias { inner: bank }));
    // `wire` is only known once observed, as with an MCP server's tool list.
    struct Observed;
    impl ProviderCatalog for Observed {
        fn tools(&self, _: &str, _: &ProviderSpec) -> Result<Option<Vec<String>>, String> {
            Ok(None)
        }
    }
    let spec = validate::load(&spec_text, Format::Yaml, "spec.yaml", &Observed).unwrap();
    let r = w
        .engine
        .run(Arc::new(spec), &script(&w.script), &w.surfaces)
        .await
        .unwrap();
    assert_eq!(r.waiting_on, vec![CallId(1)], "the transfer asks");
    w.engine
        .answer(
            "ap-1-a1",
            Answer::Deny {
                reason: "not this month".into(),
            },
            "bob",
        )
        .await
        .unwrap();
    let asked_again = w.resume(&r.run_id).await;
    assert_eq!(
        asked_again.waiting_on,
        vec![CallId(2)],
        "the wire asks on its own"
    );
    assert_eq!(count(&w.events(&r.run_id), "approval_requested"), 2);
    let reason = w
        .events(&r.run_id)
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            warrant_core::event::EventKind::ApprovalRequested { reason, .. } => {
                Some(reason.to_string())
            }
            _ => None,
        })
        .unwrap();
    assert!(
        reason.contains("a person denied `transfer` with these same arguments (request ap-1-a1)"),
        "{reason}"
    );
    w.engine
        .answer(
            "ap-1-a2",
            Answer::Deny {
                reason: "not this month either".into(),
            },
            "bob",
        )
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    let calls: Vec<_> = done
        .state
        .calls()
        .iter()
        .map(|c| {
            (
                c.tool.clone(),
                c.fault
                    .as_ref()
                    .map(|f| (f.code.clone(), f.message.clone())),
            )
        })
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for ((tool, fault), request) in calls.iter().zip(["ap-1-a1", "ap-1-a2"]) {
        let (code, message) = fault.as_ref().unwrap();
        assert_eq!(code, "approval_denied", "{tool}");
        assert!(
            message.contains(request),
            "{tool}'s refusal cites its own request: {message}"
        );
    }
    assert!(w.bank.transfers().is_empty(), "no money moved");
    w.check(&r.run_id).await;
}

/// Hangs the first transfer after its intent is durable (a crash between approve and dispatch
/// completing).
struct HangFirst {
    inner: ReferenceSurface,
    armed: AtomicBool,
    reached: Arc<Notify>,
}

impl Surface for HangFirst {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        self.inner.observe()
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        if call.tool() == "transfer" && self.armed.swap(false, Ordering::SeqCst) {
            self.reached.notify_one();
            return Box::pin(std::future::pending());
        }
        self.inner.invoke(call)
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
    fn recovery(&self, tool: &str) -> warrant_core::ports::Recovery {
        self.inner.recovery(tool)
    }
}

#[tokio::test]
async fn killed_between_approval_and_dispatch_the_call_is_dispatched_exactly_once() {
    let mut w = world(&format!("{}    - done: paid\n", transfer(950)));
    let r = w.start().await;
    w.engine.answer("ap-1-a1", once(), "alice").await.unwrap();
    let reached = Arc::new(Notify::new());
    let real = w.surfaces.insert(
        "bank".into(),
        Arc::new(HangFirst {
            inner: ReferenceSurface::new(w.bank.clone()),
            armed: AtomicBool::new(true),
            reached: reached.clone(),
        }),
    );
    let decider = script(&w.script);
    tokio::select! {
        x = w.engine.resume(&r.run_id, &decider, &w.surfaces) => panic!("{:?}", x.map(|x| x.outcome)),
        () = reached.notified() => {}
    }
    w.surfaces.insert("bank".into(), real.unwrap());
    let done = w.resume(&r.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    let events = w.events(&r.run_id);
    assert_eq!(count(&events, "approval_consumed"), 1);
    assert_eq!(count(&events, "call_dispatched"), 1);
    assert_eq!(w.bank.transfers().len(), 1);
    assert_eq!(w.bank.transfers()[0]["amount"], json!(950.0));
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn a_denial_holds_even_if_the_authority_would_now_allow_it() {
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let r = w.start().await;
    w.engine
        .answer(
            "ap-1-a1",
            Answer::Deny {
                reason: "fraud".into(),
            },
            "bob",
        )
        .await
        .unwrap();
    let lenient = Engine::new(w.store.clone())
        .with_clock(w.clock.clone())
        .with_authority(Arc::new(warrant_engine::AllowAll));
    let done = lenient
        .resume(&r.run_id, &script(&w.script), &w.surfaces)
        .await
        .unwrap();
    assert_eq!(
        done.state.calls()[0].fault.as_ref().unwrap().code,
        "approval_denied"
    );
    assert!(w.bank.transfers().is_empty());
}

/// An answer is appended through the engine's one append path: the engine's subscribers and
/// the store's followers see it at once, before the run moves again.
#[tokio::test]
async fn an_answer_reaches_subscribers_and_followers_before_the_run_moves() {
    struct Seen(Arc<std::sync::Mutex<Vec<&'static str>>>);
    impl warrant_engine::Subscriber for Seen {
        fn on_event(&mut self, _run: &RunId, event: &Event) -> Result<(), String> {
            self.0.lock().unwrap().push(event.kind.name());
            Ok(())
        }
    }
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let waiting = w.start().await;
    let request = waiting.state.approvals()[0].id.clone();
    let mut feed = warrant_core::ports::LogReader::subscribe(
        &*w.store,
        &waiting.run_id,
        waiting.state.last_seq() + 1,
    );
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    w.engine.subscribe("seen", Box::new(Seen(seen.clone())));
    w.engine.answer(&request, once(), "alice").await.unwrap();
    assert!(w.engine.drain_subscribers().await.is_empty());
    // A subscriber added late catches up from the log first; the answer comes once, last.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.last(), Some(&"approval_resolved"), "{seen:?}");
    assert_eq!(
        seen.iter().filter(|k| **k == "approval_resolved").count(),
        1
    );
    let next = tokio::time::timeout(std::time::Duration::from_secs(10), feed.next())
        .await
        .expect("the follower saw the answer")
        .unwrap()
        .unwrap();
    assert_eq!(next.event.kind.name(), "approval_resolved");
}

/// One status derivation: the store's runs index and the fold say the same of a run as it
/// waits, is answered, and ends (what `runs`, `show` and `resume --all` read).
#[tokio::test]
async fn the_runs_index_and_the_fold_agree_on_a_run_s_status() {
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let agree = |run: &RunId| {
        let folded = warrant_core::RunState::from_events(w.events(run).iter().map(|e| &**e))
            .unwrap()
            .status();
        let summary = common::at_once(warrant_core::ports::RunsIndex::summary(&*w.store, run))
            .unwrap()
            .unwrap();
        assert_eq!(summary.status, folded);
        folded
    };
    let waiting = w.start().await;
    assert_eq!(agree(&waiting.run_id), "waiting");
    let request = waiting.state.approvals()[0].id.clone();
    w.engine.answer(&request, once(), "alice").await.unwrap();
    assert_eq!(agree(&waiting.run_id), "ready");
    let done = w.resume(&waiting.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    assert_eq!(agree(&waiting.run_id), "attained");
}

fn with_edit(args: serde_json::Value) -> Answer {
    Answer::Approve {
        scope: ApprovalScope::Once,
        until_ms: None,
        edited: Some(Arc::new(args)),
    }
}

#[tokio::test]
async fn an_approval_with_edits_runs_the_edited_arguments_ruled_on_again_and_shows_both() {
    let w = world(&format!("{}    - done: paid\n", transfer(9500)));
    let waiting = w.start().await;
    let req = "ap-1-a1";
    // An edit approves one call, never the action for the rest of the run.
    let for_the_run = Answer::Approve {
        scope: ApprovalScope::Run,
        until_ms: None,
        edited: Some(Arc::new(
            json!({"to": "DE89370400440532013000", "amount": 950}),
        )),
    };
    assert!(w.engine.answer(req, for_the_run, "alice").await.is_err());
    let edit = json!({"to": "DE89370400440532013000", "amount": 950});
    assert_eq!(
        w.engine
            .answer(req, with_edit(edit.clone()), "alice")
            .await
            .unwrap(),
        Answered::Recorded
    );
    // The same edit again is a no-op; another edit is another answer, refused.
    assert_eq!(
        w.engine
            .answer(req, with_edit(edit.clone()), "alice")
            .await
            .unwrap(),
        Answered::AlreadyAnswered
    );
    assert!(
        w.engine
            .answer(
                req,
                with_edit(json!({"to": "DE89370400440532013000", "amount": 1})),
                "bob"
            )
            .await
            .is_err()
    );
    let done = w.resume(&waiting.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    let transfers = w.bank.transfers();
    assert_eq!(transfers.len(), 1, "{transfers:?}");
    assert_eq!(
        transfers[0]["amount"].as_f64(),
        Some(950.0),
        "the edited amount ran"
    );
    let events = w.events(&waiting.run_id);
    // What the decider proposed stays on record; what ran is the edit, marked as such, and
    // the approval (bound to the edit's digest, ruled on again) was consumed once.
    let proposed = events.iter().find_map(|e| match &e.kind {
        EventKind::CallStarted { args, .. } => Some(args.clone()),
        _ => None,
    });
    assert_eq!(proposed.unwrap()["amount"], 9500);
    let (ran, narrowed, digest) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CallDispatched {
                args,
                narrowed,
                args_digest,
                ..
            } => Some((args.clone(), narrowed.clone(), args_digest.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(*ran, edit);
    assert_eq!(digest, warrant_core::canon::digest(&edit));
    assert_eq!(narrowed.len(), 1);
    assert_eq!(narrowed[0].by, "approval ap-1-a1");
    assert_eq!(count(&events, "approval_consumed"), 1);
    assert_eq!(
        count(&events, "approval_requested"),
        1,
        "the edit needs no second ask"
    );
    w.check(&waiting.run_id).await;
}

#[tokio::test]
async fn edited_arguments_that_do_not_validate_stop_the_call_before_the_provider() {
    let w = world(&format!("{}    - done: paid\n", transfer(950)));
    let waiting = w.start().await;
    w.engine
        .answer(
            "ap-1-a1",
            with_edit(json!({"to": "DE89370400440532013000", "amount": "all of it"})),
            "alice",
        )
        .await
        .unwrap();
    let done = w.resume(&waiting.run_id).await;
    assert!(w.bank.transfers().is_empty(), "nothing reached the bank");
    let events = w.events(&waiting.run_id);
    let fault = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CallFinished { status, fault, .. } => Some((*status, fault.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(fault.0, CallStatus::StoppedByPolicy);
    let fault = fault.1.unwrap();
    assert_eq!(fault.layer, Layer::Policy);
    assert!(
        fault.message.contains("approved with edits"),
        "{}",
        fault.message
    );
    assert_eq!(count(&events, "call_dispatched"), 0);
    assert_ne!(done.outcome, Some(Outcome::Attained));
    w.check(&waiting.run_id).await;
}

/// PAY with a driving time of one second, and `extra` limits.
fn pay_within_a_second(extra: &str) -> String {
    PAY.replace(
        "  approval_ttl_ms: 600000\n",
        &format!("  approval_ttl_ms: 600000\n  deadline_ms: 1000\n{extra}"),
    )
}

#[tokio::test]
async fn a_persons_wait_spends_none_of_the_runs_driving_time() {
    let w = world_for(
        &pay_within_a_second(""),
        &format!("{}    - done: paid\n", transfer(950)),
    );
    let r = w.start().await;
    assert_eq!(r.waiting_on, vec![CallId(1)]);
    // The person takes ten times the run's whole deadline to answer.
    w.clock.advance(10_000);
    w.engine.answer("ap-1-a1", once(), "alice").await.unwrap();
    w.clock.advance(500);
    let done = w.resume(&r.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    assert_eq!(w.bank.transfers().len(), 1, "the approved transfer, once");
    let at = done.state.last_at_ms();
    assert!(
        done.state.driven_ms(at) < 1000,
        "{}",
        done.state.driven_ms(at)
    );
    assert!(
        done.state.waited_ms(at) >= 10_500,
        "{}",
        done.state.waited_ms(at)
    );
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn an_answer_after_wait_max_ms_is_too_late_and_the_call_is_refused() {
    let w = world_for(
        &pay_within_a_second("  wait_max_ms: 5000\n"),
        &format!("{}    - done: paid\n", transfer(950)),
    );
    let r = w.start().await;
    w.clock.advance(5_001);
    let late = w.engine.answer("ap-1-a1", once(), "alice").await;
    assert!(late.is_err(), "answered after wait_max_ms: {late:?}");
    let done = w.resume(&r.run_id).await;
    assert_eq!(
        done.state.calls()[0].fault.as_ref().unwrap().code,
        "approval_expired"
    );
    assert!(w.bank.transfers().is_empty());
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn a_call_approved_after_its_run_ran_out_of_driving_time_is_never_made() {
    let w = world_for(
        &pay_within_a_second(""),
        &format!("{}    - done: paid\n", transfer(950)),
    );
    let r = w.start().await;
    assert_eq!(r.waiting_on, vec![CallId(1)]);
    w.engine.answer("ap-1-a1", once(), "alice").await.unwrap();
    // The process that carries it on spends two seconds starting its providers: the run's
    // driving time is gone before the approved call could be made.
    let done = w
        .engine
        .resume_with_setup(
            &r.run_id,
            &script(&w.script),
            &w.surfaces,
            Some(2_000),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&done.outcome, Some(Outcome::Exhausted { limit, .. }) if limit == "deadline_ms"),
        "{:?}",
        done.outcome
    );
    assert!(
        w.bank.transfers().is_empty(),
        "the approved call was not made"
    );
    let call = &done.state.calls()[0];
    assert_eq!(call.status, Some(CallStatus::Rejected));
    assert_eq!(call.fault.as_ref().unwrap().code, "deadline_exceeded");
    w.check(&r.run_id).await;
}

/// Asks two people about every transfer (set on the engine, it rules re-entered runs too).
struct TwoPeople;

impl warrant_core::ports::Authority for TwoPeople {
    fn evaluate<'a>(
        &'a self,
        request: &'a warrant_core::ports::CapabilityRequest<'a>,
    ) -> BoxFuture<'a, warrant_core::ports::Verdict> {
        Box::pin(std::future::ready(if request.tool == "transfer" {
            warrant_core::ports::Verdict::Ask {
                reason: "two people approve a transfer".into(),
                approvers: 2,
            }
        } else {
            warrant_core::ports::Verdict::Allow {
                grant: "reads".into(),
            }
        }))
    }
}

#[tokio::test]
async fn a_request_that_needs_two_approvers_waits_for_two_different_people() {
    let mut w = world(&format!("{}    - done: paid\n", transfer(950)));
    w.engine = w.engine.clone().with_authority(Arc::new(TwoPeople));
    let r = w.start().await;
    assert_eq!(r.waiting_on, vec![CallId(1)]);
    // The first approval: recorded, and the request still waits.
    w.engine
        .answer("ap-1-a1", once(), "acme/ann")
        .await
        .unwrap();
    let state = w.engine.fold(&r.run_id).await.unwrap();
    assert_eq!(state.status(), "waiting");
    let approval = state.approval("ap-1-a1").unwrap();
    assert_eq!(approval.status, warrant_core::fold::ApprovalStatus::Pending);
    // The same person again is not a second person.
    let again = w.engine.answer("ap-1-a1", once(), "acme/ann").await;
    assert!(
        again
            .as_ref()
            .is_err_and(|e| e.to_string().contains("2 different people")),
        "{again:?}"
    );
    // Re-entered now, nothing moves: nothing reaches the bank.
    let still = w.resume(&r.run_id).await;
    assert_eq!(still.outcome, None);
    assert!(w.bank.transfers().is_empty());
    // The second person completes it: the transfer goes through, once.
    w.engine
        .answer("ap-1-a1", once(), "acme/bob")
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    assert_eq!(w.bank.transfers().len(), 1);
    let events = w.events(&r.run_id);
    let answers: Vec<(String, u32)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalResolved {
                by, awaiting, rule, ..
            } => {
                assert!(rule.is_some(), "every answer records its rule");
                Some((by.clone(), *awaiting))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [("acme/ann".to_owned(), 1), ("acme/bob".to_owned(), 0)]
    );
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn a_front_door_for_others_refuses_a_runs_starter_as_its_approver() {
    let mut w = world(&format!("{}    - done: paid\n", transfer(950)));
    w.engine = w
        .engine
        .clone()
        .acting_for("acme", "rita")
        .with_self_approval(false);
    let r = w.start().await;
    let own = w.engine.answer("ap-1-a1", once(), "acme/rita").await;
    assert!(
        own.as_ref()
            .is_err_and(|e| e.to_string().contains("other than its starter")),
        "{own:?}"
    );
    // Another person of the tenant may; the answer names the rule it was given under.
    w.engine
        .answer("ap-1-a1", once(), "acme/ann")
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    assert_eq!(done.outcome, Some(Outcome::Attained));
    let rule = w.events(&r.run_id).iter().find_map(|e| match &e.kind {
        EventKind::ApprovalResolved { rule, .. } => rule.clone(),
        _ => None,
    });
    assert!(rule.is_some_and(|r| r.contains("approver")));
    w.check(&r.run_id).await;
}

/// A person's standing grant for bank's `transfer` to one account, at most 100, for `acme/ann`.
fn standing(id: &str, at_ms: u64) -> warrant_core::standing::StandingGrant {
    use warrant_core::spec::ArgConstraint;
    warrant_core::standing::StandingGrant {
        id: id.into(),
        tenant: "acme".into(),
        user: Some("ann".into()),
        provider: "bank".into(),
        tool: "transfer".into(),
        args: [
            (
                "to".to_owned(),
                ArgConstraint {
                    one_of: vec![json!("DE89370400440532013000")],
                    ..ArgConstraint::default()
                },
            ),
            (
                "amount".to_owned(),
                ArgConstraint {
                    max: Some(100.0),
                    ..ArgConstraint::default()
                },
            ),
        ]
        .into_iter()
        .collect(),
        by: "acme/bob".into(),
        created_at_ms: at_ms,
        expires_at_ms: Some(at_ms + 3_600_000),
        note: "rent top-ups".into(),
        revoked: None,
    }
}

#[tokio::test]
async fn a_standing_grant_lets_the_call_it_covers_through_without_asking_and_replays() {
    use warrant_core::store::{ApprovalsIndex as _, Grants as _};
    let mut w = world(&(transfer(50) + "    - done: paid\n"));
    w.engine = w.engine.clone().acting_for("acme", "ann");
    w.store
        .grant_put(standing("g-rent", 1_700_000_000_000))
        .await
        .unwrap();
    let r = w.start().await;
    assert_eq!(r.outcome, Some(Outcome::Attained), "{:?}", r.outcome);
    let events = w.events(&r.run_id);
    let granted = events.iter().find_map(|e| match &e.kind {
        EventKind::ApprovalGranted { request, grant, .. } => Some((request.clone(), grant.clone())),
        _ => None,
    });
    let (request, grant) = granted.expect("the grant answered the request");
    assert_eq!(grant.id, "g-rent");
    let consumed = events.iter().find_map(|e| match &e.kind {
        EventKind::ApprovalConsumed {
            request: r, grant, ..
        } if *r == request => Some(grant.clone()),
        _ => None,
    });
    assert_eq!(consumed, Some(Some("g-rent".to_owned())));
    // Never waiting: no event made the run wait for a person, and nothing is pending.
    assert!(w.store.pending_approvals(None).await.unwrap().is_empty());
    assert_eq!(w.bank.transfers().len(), 1);
    w.check(&r.run_id).await;
}

#[tokio::test]
async fn a_call_outside_a_grant_or_past_it_waits_for_a_person() {
    use warrant_core::standing::Revoked;
    use warrant_core::store::{ApprovalsIndex as _, Grants as _};
    let at = 1_700_000_000_000;
    // Each case: the grant as stored, who the run acts for, and the amount sent.
    let revoked = warrant_core::standing::StandingGrant {
        revoked: Some(Revoked {
            by: "acme/bob".into(),
            at_ms: at,
        }),
        ..standing("g-revoked", at)
    };
    let expired = warrant_core::standing::StandingGrant {
        expires_at_ms: Some(at + 1),
        ..standing("g-expired", at)
    };
    let own = warrant_core::standing::StandingGrant {
        by: "acme/ann".into(),
        ..standing("g-own", at)
    };
    for (grant, user, amount) in [
        (standing("g-small", at), "ann", 500),
        // Her own grant, where a starter may not approve her own requests.
        (own, "ann", 50),
        (standing("g-ann", at), "eve", 50),
        (revoked, "ann", 50),
        (expired, "ann", 50),
    ] {
        let id = grant.id.clone();
        let mut w = world(&(transfer(amount) + "    - done: paid\n"));
        w.engine = w
            .engine
            .clone()
            .with_self_approval(false)
            .acting_for("acme", user);
        w.clock.advance(10_000);
        w.store.grant_put(grant).await.unwrap();
        let r = w.start().await;
        assert_eq!(r.outcome, None, "{id}: the run waits for a person");
        let events = w.events(&r.run_id);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e.kind, EventKind::ApprovalGranted { .. })),
            "{id}"
        );
        assert_eq!(
            w.store.pending_approvals(None).await.unwrap().len(),
            1,
            "{id}"
        );
        assert!(w.bank.transfers().is_empty(), "{id}");
    }
}

/// The approve policies rule on a standing grant as on an approver (`grant:<id>` of its
/// tenant): one that refuses it leaves the request to a person.
#[tokio::test]
async fn an_authority_that_refuses_a_grant_as_approver_leaves_the_request_to_a_person() {
    use warrant_core::ports::{
        ApproverRequest, ApproverVerdict, Authority, CapabilityRequest, Verdict,
    };
    use warrant_core::store::Grants as _;
    struct NoGrants;
    impl Authority for NoGrants {
        fn evaluate<'a>(&'a self, r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
            let v = if r.tool == "transfer" {
                Verdict::Ask {
                    reason: "a person must approve transfers".into(),
                    approvers: 1,
                }
            } else {
                Verdict::Allow {
                    grant: "reads".into(),
                }
            };
            Box::pin(std::future::ready(v))
        }
        fn rule_approver(&self, r: &ApproverRequest<'_>) -> ApproverVerdict {
            if r.approver.user.starts_with("grant:") {
                ApproverVerdict::Deny {
                    reasons: vec!["transfers are always asked about".into()],
                }
            } else {
                ApproverVerdict::NotRuled
            }
        }
    }
    let mut w = world(&(transfer(50) + "    - done: paid\n"));
    w.engine = w
        .engine
        .clone()
        .with_authority(Arc::new(NoGrants))
        .acting_for("acme", "ann");
    w.store
        .grant_put(standing("g-rent", 1_700_000_000_000))
        .await
        .unwrap();
    let r = w.start().await;
    assert_eq!(r.outcome, None, "the run waits for a person");
    assert!(
        !w.events(&r.run_id)
            .iter()
            .any(|e| matches!(e.kind, EventKind::ApprovalGranted { .. }))
    );
    assert!(w.bank.transfers().is_empty());
}

/// INVARIANT (denied stays denied): a standing grant given after a person denied an effect
/// does not let the same effect through in that run.
#[tokio::test]
async fn a_standing_grant_does_not_undo_a_persons_denial() {
    use warrant_core::store::Grants as _;
    let mut w = world(&format!(
        "{}{}    - done: paid\n",
        transfer(50),
        transfer(50)
    ));
    w.engine = w.engine.clone().acting_for("acme", "ann");
    let r = w.start().await;
    let asked = w
        .events(&r.run_id)
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ApprovalRequested { request, .. } => Some(request.clone()),
            _ => None,
        })
        .unwrap();
    w.engine
        .answer(
            &asked,
            Answer::Deny {
                reason: "not this month".into(),
            },
            "bob",
        )
        .await
        .unwrap();
    w.store
        .grant_put(standing("g-late", 1_700_000_000_000))
        .await
        .unwrap();
    let done = w.resume(&r.run_id).await;
    assert!(
        !w.events(&r.run_id)
            .iter()
            .any(|e| matches!(e.kind, EventKind::ApprovalGranted { .. })),
        "the grant answered a denied effect"
    );
    assert!(w.bank.transfers().is_empty());
    assert!(done.outcome.is_some());
    w.check(&r.run_id).await;
}

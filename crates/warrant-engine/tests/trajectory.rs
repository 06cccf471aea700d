//! The run loop and the Bridge, end to end over the reference providers.

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
use warrant_core::check::check_log;
use warrant_core::compare::Comparison;
use warrant_core::event::{CallStatus, EventKind};
use warrant_core::report::RunReport;
use warrant_core::{Layer, Outcome};
use warrant_engine::DenyTools;
use warrant_engine::replay::replay;

#[tokio::test]
async fn happy_path_is_attained_with_route_and_lineage() {
    let w = run(CAFE_GALLERY, SCRIPT).await;
    assert_eq!(w.result.outcome, Some(Outcome::Attained));
    let report = RunReport::from_events(&w.events).unwrap();
    assert_eq!(
        report.route_key,
        "cafe/read:read_menu -> cafe/commit:order_latte -> gallery/read:check_design_drift"
    );
    assert!(report.conformant);
    let color = report
        .carried
        .iter()
        .find(|c| c.name == "order.color")
        .expect("color carried");
    assert_eq!(*color.value, json!("#d2b48c"));
    assert_eq!(color.lineage.tool, "order_latte");
    assert_eq!(color.lineage.path, "/color");
    assert_eq!(color.lineage.call.to_string(), "c2");
    // The drift call ran with the carried color, filled in by Warrant.
    let executed = w.result.state.calls()[2].executed.clone().unwrap();
    assert_eq!(*executed, json!({"color": "#d2b48c"}));
    assert_eq!(w.cafe.orders().len(), 1);
    check_log(w.events.iter().map(|e| &**e)).unwrap();
}

#[tokio::test]
async fn a_different_valid_route_also_conforms() {
    let a = run(CAFE_GALLERY, SCRIPT).await;
    let b = run(CAFE_GALLERY, DIRECT).await;
    assert_eq!(b.result.outcome, Some(Outcome::Attained));
    let ra = RunReport::from_events(&a.events).unwrap();
    let rb = RunReport::from_events(&b.events).unwrap();
    assert_eq!(
        rb.route_key,
        "cafe/commit:order_latte -> gallery/read:check_design_drift"
    );
    let cmp = Comparison::of(&[ra, rb]);
    assert!(cmp.path_difference);
    assert!(!cmp.terminal_difference);
    assert!(!cmp.conformance_difference);
    assert!(cmp.routes.iter().all(|r| r.conformant));
}

#[tokio::test]
async fn a_claimed_carried_value_that_differs_from_evidence_is_rejected() {
    let w = run(CAFE_GALLERY, FALSE_CLAIM).await;
    let faults = call_faults(&w.events);
    assert_eq!(
        faults,
        vec![("carried_value_mismatch".to_owned(), "model".to_owned())]
    );
    // The gallery never saw the false color: the call never dispatched.
    let drift_call = &w.result.state.calls()[1];
    assert_eq!(drift_call.status, Some(CallStatus::Rejected));
    assert!(drift_call.executed.is_none());
    assert_eq!(
        missing_layer(&w.result.outcome),
        Some((
            "drift".into(),
            Layer::Model,
            "carried_value_mismatch".into()
        ))
    );
}

#[tokio::test]
async fn a_claim_on_a_value_the_run_never_carried_is_rejected_before_dispatch() {
    // `color` is filled from the spec's inputs; the claim names another argument.
    let never_carried = SCRIPT.replace(
        "- call: check_design_drift\n",
        "- call: check_design_drift\n      claims: {shade: order.nope}\n",
    );
    assert_ne!(never_carried, SCRIPT, "the script makes the claim");
    let w = run(CAFE_GALLERY, &never_carried).await;
    assert_eq!(
        call_faults(&w.events),
        vec![("unknown_carried".to_owned(), "model".to_owned())]
    );
    let drift_call = w.result.state.calls().last().unwrap();
    assert_eq!(drift_call.tool, "check_design_drift");
    assert_eq!(drift_call.status, Some(CallStatus::Rejected));
    assert!(
        drift_call.executed.is_none(),
        "the gallery was never called"
    );
}

#[tokio::test]
async fn a_declined_required_commit_is_attributed_to_the_model_and_the_provider_is_untouched() {
    let w = run(CAFE_GALLERY, DECLINE).await;
    let Some(Outcome::NotAttained { missing }) = &w.result.outcome else {
        panic!("{:?}", w.result.outcome)
    };
    assert_eq!(&*missing[0].step.0, "order");
    assert_eq!(missing[0].requirement, "commit");
    assert_eq!(missing[0].fault.layer, Layer::Model);
    assert_eq!(missing[0].fault.code, "no_commit");
    // Each requirement is its own row: `order` is neither committed nor attained, both on the
    // model; the dependent step never ran and carries the model's blame; the cafe placed no
    // order.
    let rows: Vec<(&str, &str, Layer)> = missing
        .iter()
        .map(|m| (&*m.step.0, m.requirement.as_str(), m.fault.layer))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("order", "commit", Layer::Model),
            ("order", "attained", Layer::Model),
            ("drift", "attained", Layer::Model),
        ]
    );
    assert!(w.cafe.orders().is_empty());
    assert!(
        !w.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::StepStarted { step, .. } if &*step.0 == "drift"))
    );
}

#[tokio::test]
async fn a_provider_error_is_attributed_to_the_provider() {
    let script = "steps:\n  order:\n    - call: order_latte\n      args: {size: large, milk: almond}\n    - done: ordered\n";
    let w = run(CAFE_GALLERY, script).await;
    assert_eq!(
        call_faults(&w.events),
        vec![("provider_error".to_owned(), "provider".to_owned())]
    );
    assert_eq!(
        missing_layer(&w.result.outcome),
        Some(("order".into(), Layer::Provider, "provider_error".into()))
    );
    assert!(w.cafe.orders().is_empty());
}

#[tokio::test]
async fn a_step_whose_dependency_failed_never_runs() {
    let w = run(CAFE_GALLERY, DECLINE).await;
    let skipped: Vec<_> = w
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StepSkipped {
                step, blocked_by, ..
            } => Some((step.0.to_string(), blocked_by.0.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, vec![("drift".to_owned(), "order".to_owned())]);
    assert!(
        w.result.state.calls().iter().all(|c| c.step == 0),
        "no call was made in the skipped step"
    );
}

#[tokio::test]
async fn unknown_tools_and_invalid_arguments_end_the_call_and_are_fed_back() {
    let script = "steps:\n  order:\n    - call: order_mocha\n    - call: order_latte\n      args: {size: venti}\n    - call: order_latte\n      args: {size: small}\n    - done: ok\n  drift:\n    - call: check_design_drift\n    - done: ok\n";
    let decider = Watching::new(common::script(script));
    let w = run_with(CAFE_GALLERY, &decider, Arc::new(warrant_engine::AllowAll)).await;
    assert_eq!(w.result.outcome, Some(Outcome::Attained));
    let faults = call_faults(&w.events);
    assert_eq!(
        faults[0],
        ("tool_not_allowed".to_owned(), "model".to_owned())
    );
    assert_eq!(faults[1].0, "invalid_arguments");
    // Every started call finished exactly once; none is left in flight.
    let started = w
        .events
        .iter()
        .filter(|e| e.kind.name() == "call_started")
        .count();
    let finished = w
        .events
        .iter()
        .filter(|e| e.kind.name() == "call_finished")
        .count();
    assert_eq!(started, finished);
    assert!(w.result.state.in_flight().is_none());
    // The decider saw each structured error in its next projection.
    let seen = decider.seen.lock().unwrap();
    let second = seen[1].last_call().expect("first call shown");
    assert_eq!(second.fault.as_ref().unwrap().code, "tool_not_allowed");
    let third = seen[2].last_call().expect("second call shown");
    let fault = third.fault.as_ref().unwrap();
    assert_eq!(fault.code, "invalid_arguments");
    assert!(fault.message.contains("/size"), "{}", fault.message);
}

#[tokio::test]
async fn a_handle_that_was_never_issued_is_unknown() {
    let script = "steps:\n  order:\n    - call: read_menu\n      handle: h1.7\n    - decline: no\n";
    let w = run(CAFE_GALLERY, script).await;
    assert_eq!(call_faults(&w.events)[0].0, "unknown_handle");
}

#[tokio::test]
async fn a_reused_handle_is_rejected() {
    // Decision 1 reads the menu with handle h1.0; decision 2 tries the same handle again.
    let script = "steps:\n  order:\n    - call: read_menu\n    - call: read_menu\n      handle: h1.0\n    - decline: stop\n";
    let w = run(CAFE_GALLERY, script).await;
    assert_eq!(
        call_faults(&w.events),
        vec![("handle_consumed".to_owned(), "model".to_owned())]
    );
}

#[tokio::test]
async fn a_handle_from_an_older_state_is_stale() {
    // After the order commits, the cafe's state changed: handles of decision 1 are stale.
    let script = "steps:\n  order:\n    - call: order_latte\n      args: {size: small}\n    - call: read_menu\n      handle: h1.0\n    - done: ok\n  drift:\n    - call: check_design_drift\n    - done: ok\n";
    let w = run(CAFE_GALLERY, script).await;
    assert_eq!(
        call_faults(&w.events),
        vec![("stale_handle".to_owned(), "model".to_owned())]
    );
    assert_eq!(w.result.outcome, Some(Outcome::Attained));
}

#[tokio::test]
async fn an_expired_handle_is_rejected() {
    // The decider takes 31 s (on the injected clock) before reusing a handle it was given.
    let script = "steps:\n  order:\n    - call: read_menu\n    - call: order_latte\n      handle: h1.1\n      args: {size: small}\n    - decline: stop\n";
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(warrant_engine::AllowAll));
    let mut decider = Watching::new(common::script(script));
    let clock = s.clock.clone();
    decider.before = Box::new(move |p| {
        if p.decision_no == 2 {
            clock.advance(31_000);
        }
    });
    let result = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    let events = log(&s.store, &result);
    assert_eq!(
        call_faults(&events),
        vec![("handle_expired".to_owned(), "model".to_owned())]
    );
    assert!(s.cafe.orders().is_empty());
}

#[tokio::test]
async fn exhausting_the_decision_limit_ends_exhausted() {
    let spec = CAFE_GALLERY.replace("decisions_max: 20", "decisions_max: 2");
    let script =
        "steps:\n  order:\n    - call: read_menu\n    - call: read_menu\n    - call: read_menu\n";
    let w = run(&spec, script).await;
    assert_eq!(
        w.result.outcome,
        Some(Outcome::Exhausted {
            limit: "decisions_max".into(),
            value: 2
        })
    );
    assert_eq!(w.result.state.decisions(), 2);
}

#[tokio::test]
async fn exhausting_the_step_limit_ends_exhausted() {
    let spec = CAFE_GALLERY.replace("step_decisions_max: 8", "step_decisions_max: 1");
    let w = run(&spec, SCRIPT).await;
    assert_eq!(
        w.result.outcome,
        Some(Outcome::Exhausted {
            limit: "step_decisions_max".into(),
            value: 1
        })
    );
}

#[tokio::test]
async fn passing_the_deadline_ends_exhausted() {
    let spec = common::spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(warrant_engine::AllowAll));
    let mut decider = Watching::new(common::script(SCRIPT));
    let clock = s.clock.clone();
    decider.before = Box::new(move |_| clock.advance(25_000));
    let result = s.engine.run(spec, &decider, &s.surfaces).await.unwrap();
    assert_eq!(
        result.outcome,
        Some(Outcome::Exhausted {
            limit: "deadline_ms".into(),
            value: 60_000
        })
    );
    let events = log(&s.store, &result);
    check_log(events.iter().map(|e| &**e)).unwrap();
}

#[tokio::test]
async fn a_denied_commit_is_stopped_by_policy_and_never_reaches_the_provider() {
    let w = run_with(
        CAFE_GALLERY,
        &common::script(SCRIPT),
        Arc::new(DenyTools::new(["order_latte"])),
    )
    .await;
    let finished: Vec<_> = w
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallFinished { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec![CallStatus::Ok, CallStatus::StoppedByPolicy]);
    assert_eq!(
        missing_layer(&w.result.outcome),
        Some(("order".into(), Layer::Policy, "policy_denied".into()))
    );
    assert!(w.cafe.orders().is_empty());
    let report = RunReport::from_events(&w.events).unwrap();
    assert!(
        report.failures.iter().all(|f| f.layer != Layer::Provider),
        "a policy stop is not a provider fault"
    );
}

#[tokio::test]
async fn done_without_evidence_is_not_attained() {
    let script = "steps:\n  order:\n    - call: read_menu\n    - done: I ordered it, trust me\n";
    let w = run(CAFE_GALLERY, script).await;
    let Some(Outcome::NotAttained { missing }) = &w.result.outcome else {
        panic!()
    };
    assert_eq!(missing[0].fault.code, "no_commit");
    assert_eq!(missing[0].fault.layer, Layer::Model);
}

#[tokio::test]
async fn a_decider_that_runs_out_fails_the_run_on_the_model() {
    let script = "steps:\n  order:\n    - call: read_menu\n";
    let w = run(CAFE_GALLERY, script).await;
    let Some(Outcome::Failed { fault }) = &w.result.outcome else {
        panic!("{:?}", w.result.outcome)
    };
    assert_eq!(fault.layer, Layer::Model);
    assert_eq!(fault.code, "script_exhausted");
}

#[tokio::test]
async fn two_commits_across_providers_carry_the_order_id() {
    let spec = include_str!("../../../examples/cafe-bakery/spec.yaml");
    let script = include_str!("../../../examples/cafe-bakery/script.yaml");
    let w = run(spec, script).await;
    assert_eq!(w.result.outcome, Some(Outcome::Attained));
    let pastry = w.result.state.calls().last().unwrap();
    assert_eq!(
        pastry.executed.as_deref().unwrap()["order_id"],
        json!("ord-0001")
    );
}

/// The build that started a run is in its `run_started` (`Engine::with_build`) and its report.
/// It is evidence, not a rule: a log recorded by another build replays identically (replay
/// takes the build from the log), and a log recorded before builds were named has none and
/// still encodes as it did.
#[tokio::test]
async fn a_run_names_its_build_and_replays_the_same_whichever_build_recorded_it() {
    use warrant_core::event::{BuildInfo, Event, encode};
    let ours = BuildInfo {
        version: "0.1.0".into(),
        commit: "1a2b3c4-dirty".into(),
        date: "2026-03-01".into(),
        features: vec!["otlp".into(), "postgres".into()],
    };
    let spec = spec(CAFE_GALLERY);
    let s = setup(&spec, Arc::new(warrant_engine::AllowAll));
    let engine = s.engine.clone().with_build(ours.clone());
    let result = engine
        .run(spec, &script(SCRIPT), &s.surfaces)
        .await
        .unwrap();
    let events = log(&s.store, &result);
    let EventKind::RunStarted { build, .. } = &events[0].kind else {
        panic!("the log begins with `run_started`");
    };
    assert_eq!(build.as_deref(), Some(&ours));
    let report = RunReport::from_events(&events).unwrap();
    assert_eq!(report.build.as_ref(), Some(&ours));
    assert!(
        report.render().contains(
            "build    0.1.0 (commit 1a2b3c4-dirty, built 2026-03-01, features: otlp, postgres)\n"
        ),
        "{}",
        report.render()
    );
    let check = replay(&events).await.unwrap();
    assert_eq!((check.divergence, check.error), (None, None));

    // The same run as other builds recorded it: another commit, date and features; and none
    // at all (a log from before builds were named).
    let recorded_by = |build: Option<BuildInfo>| -> Vec<Arc<Event>> {
        let mut first = (*events[0]).clone();
        if let EventKind::RunStarted { build: b, .. } = &mut first.kind {
            *b = build.map(Arc::new);
        }
        std::iter::once(Arc::new(first))
            .chain(events[1..].iter().cloned())
            .collect()
    };
    let theirs = BuildInfo {
        version: "0.0.9".into(),
        commit: "unknown".into(),
        date: "2025-12-31".into(),
        features: Vec::new(),
    };
    for other in [Some(theirs), None] {
        let log = recorded_by(other.clone());
        let check = replay(&log).await.unwrap();
        assert_eq!((check.divergence, check.error), (None, None), "{other:?}");
        assert_eq!(RunReport::from_events(&log).unwrap().build, other);
    }
    let old = recorded_by(None);
    assert!(
        !encode(&old[0]).contains("build"),
        "a log without a build encodes as before: {}",
        encode(&old[0])
    );
}

//! The fold's judgments and the report built from them: each terminal row says what was found
//! and blames the layer that failed, a step whose every call failed is not called attained,
//! and the decider's final words are kept. The rendered report is pinned as text.

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

use std::sync::Arc;

use serde_json::{Value, json};
use warrant_core::event::{
    ActionRecord, CallStatus, DeciderIdentity, Decision, EVENTS_FORMAT, Effect, Event, EventKind,
    Fault, Layer, StepEnd,
};
use warrant_core::ids::{CallId, HandleId, RunId, StepId};
use warrant_core::report::RunReport;
use warrant_core::spec::{Format, Spec};
use warrant_core::{Code, Outcome, RunState};

const SPEC: &str = "
version: warrant/v1
id: order
objective: Order a latte.
providers:
  cafe: {reference: cafe}
steps:
  - id: order
    provider: cafe
    tools: [order_latte]
    commit: required
    required: true
    publishes:
      color: {from: order_latte, path: /colour}
";

/// Builds a log event by event, folding as it goes, the way the engine does.
struct Log {
    state: RunState,
    events: Vec<Arc<Event>>,
}

impl Log {
    fn new(spec_yaml: &str) -> Log {
        let spec = Arc::new(Spec::parse(spec_yaml, Format::Yaml, "spec.yaml").unwrap());
        let mut log = Log {
            state: RunState::default(),
            events: Vec::new(),
        };
        log.push(EventKind::RunStarted {
            format: EVENTS_FORMAT.into(),
            run_id: RunId("r1".into()),
            spec_hash: spec.hash(),
            spec,
            decider: DeciderIdentity {
                kind: "scripted".into(),
                name: "script.yaml".into(),
                digest: None,
            },
            authority: None,
            execution_control: None,
            principal: None,
            setup_ms: Some(40),
            provenance: None,
            messages: None,
            parent: None,
            inputs: None,
            build: None,
        });
        log
    }

    fn push(&mut self, kind: EventKind) {
        let seq = self.state.last_seq() + 1;
        let event = Event {
            seq,
            at_ms: 1_000 + seq * 10,
            kind,
        };
        self.state.apply(&event).unwrap();
        self.events.push(Arc::new(event));
    }

    fn start(&mut self) {
        self.push(EventKind::StepStarted {
            step: StepId("order".into()),
            provider: "cafe".into(),
        });
        self.push(EventKind::Observed {
            step: StepId("order".into()),
            provider: "cafe".into(),
            version: "v1".into(),
            actions: Arc::from(vec![ActionRecord {
                name: "order_latte".into(),
                effect: Effect::Commit,
                description: String::new(),
                input_schema: Arc::new(json!({"type": "object"})),
                hints: None,
                origin: None,
            }]),
            page: None,
        });
    }

    fn decide(&mut self, decision: Decision) {
        let n = self.state.decisions() + 1;
        self.push(EventKind::Decided {
            step: StepId("order".into()),
            decision_no: n,
            version: "v1".into(),
            decision,
            usage: None,
            exchange: None,
            tainted_by: Default::default(),
        });
    }

    /// A call of `order_latte` that ends `status` with `output` / `fault`.
    fn call(&mut self, status: CallStatus, output: Option<Value>, fault: Option<Fault>) {
        let args = json!({"size": "medium"});
        let call = self.start_call(args.clone());
        if matches!(status, CallStatus::Ok | CallStatus::ProviderError) {
            self.dispatch(call, args);
        }
        self.finish(call, status, output, fault);
    }

    /// The decider proposes `order_latte` with `args` and the call starts.
    fn start_call(&mut self, args: Value) -> CallId {
        let args = Arc::new(args);
        self.decide(Decision::Call {
            tool: "order_latte".into(),
            handle: None,
            args: args.clone(),
            claims: Vec::new(),
        });
        let call = self.state.next_call_id();
        let decision = self.state.decisions();
        self.push(EventKind::CallStarted {
            call,
            step: StepId("order".into()),
            tool: "order_latte".into(),
            handle: Some(HandleId {
                decision,
                action: 0,
            }),
            args,
            resend_of: None,
        });
        call
    }

    /// The call's intent, to execute with `args`.
    fn dispatch(&mut self, call: CallId, args: Value) {
        self.push(EventKind::CallDispatched {
            call,
            effect: Effect::Commit,
            args: Arc::new(args),
            args_digest: "sha256:a".into(),
            idempotency_key: format!("wk-r1-{call}"),
            provenance: Vec::new(),
            narrowed: Vec::new(),
        });
    }

    fn finish(
        &mut self,
        call: CallId,
        status: CallStatus,
        output: Option<Value>,
        fault: Option<Fault>,
    ) {
        self.push(EventKind::CallFinished {
            call,
            status,
            ruled_args_digest: None,
            narrowed: Vec::new(),
            narrowed_args: None,
            output: output.map(Arc::new),
            fault,
        });
    }

    /// The decider says it is done; the fold judges it, and the run ends as judged.
    fn done(&mut self, summary: &str) {
        self.decide(Decision::Done {
            summary: summary.into(),
        });
        let end = self.state.judge_done(0);
        self.push(EventKind::StepFinished {
            step: StepId("order".into()),
            end,
        });
        let outcome = self.state.terminal();
        self.push(EventKind::RunFinished { outcome });
    }
}

/// A run's call records are made room for at its first call, as many as it may make up to 16:
/// a short run's records are never moved (each move copies every record made so far), and a
/// longer run's grow as any list does.
#[test]
fn a_short_runs_call_records_are_never_moved() {
    let mut log = Log::new(SPEC);
    log.start();
    log.call(CallStatus::ProviderError, None, None);
    let first = log.state.calls().as_ptr();
    for _ in 1..16 {
        log.call(CallStatus::ProviderError, None, None);
        assert_eq!(
            log.state.calls().as_ptr(),
            first,
            "moved at {} calls",
            log.state.calls().len()
        );
    }
    // Past the room made, the records grow (and move) as before.
    log.call(CallStatus::ProviderError, None, None);
    assert_eq!(log.state.calls().len(), 17);
}

/// A call record keeps what few calls have (a fault, an operator's reconciliation) out of line:
/// every record of every run in flight is smaller for it, and more of them stay in the cache.
#[test]
fn a_call_record_keeps_its_rare_parts_out_of_line() {
    let size = std::mem::size_of::<warrant_core::fold::CallRecord>();
    assert!(size <= 256, "a call record takes {size} bytes");
    let mut log = Log::new(SPEC);
    log.start();
    let fault = Fault::new(Code::ProviderError, Layer::Provider, "busy");
    log.call(CallStatus::ProviderError, None, Some(fault.clone()));
    let record = log.state.calls().last().unwrap();
    // The fault is still the call's own, as it was recorded.
    assert_eq!(record.fault.as_deref(), Some(&fault));
}

#[test]
fn a_wrong_publishes_path_is_the_specs_fault_and_the_rows_say_what_was_found() {
    let mut log = Log::new(SPEC);
    log.start();
    log.call(
        CallStatus::Ok,
        Some(json!({"order_id": "ord-1", "color": "#d2b48c"})),
        None,
    );
    log.done("ordered it");
    let StepEnd::NotAttained { fault } = log.state.judge_done(0) else {
        panic!("attained without its published output")
    };
    assert_eq!(fault.code, Code::PublishPathMissing.as_str());
    assert_eq!(fault.layer, Layer::Spec);
    let report = RunReport::from_events(&log.events).unwrap();
    // The commit happened: its row is met; the attainment is missing, on the spec.
    let rows: Vec<(String, bool, Option<Layer>)> = report
        .terminal
        .iter()
        .map(|r| {
            (
                r.requirement.clone(),
                r.satisfied,
                r.fault.as_ref().map(|f| f.layer),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("commit".into(), true, None),
            ("attained".into(), false, Some(Layer::Spec)),
        ]
    );
    assert_eq!(
        report.render(),
        "\
run      r1
spec     order (919dadebe7ce)
decider  scripted:script.yaml
outcome  not_attained
route    cafe/commit:order_latte
elapsed  130 ms (40 ms starting providers), 2 decisions, 1 calls
usage    none reported (the decider scripted:script.yaml reports no tokens)
answer   ordered it (done)
steps
  order    not_attained  cafe (1 calls)  [spec] `order_latte` succeeded (c1), but its result has nothing at `/colour`: check `steps.order.publishes.color.path`
terminal
  met     order commit
  MISSING order attained  [spec] `order_latte` succeeded (c1), but its result has nothing at `/colour`: check `steps.order.publishes.color.path`
"
    );
}

#[test]
fn a_step_whose_every_call_failed_is_not_attained_whatever_it_requires() {
    let optional = SPEC
        .replace("    commit: required\n    required: true\n", "")
        .replace("/colour", "/color");
    let mut log = Log::new(&optional);
    log.start();
    log.call(
        CallStatus::StoppedByPolicy,
        None,
        Some(Fault::of(Code::PolicyDenied, "no policy permits it")),
    );
    log.done("could not");
    let StepEnd::NotAttained { fault } = log.state.judge_done(0) else {
        panic!("a step that did nothing reported attained")
    };
    assert_eq!(fault.code, "policy_denied");
    // It was not required: the run is attained, and the report says what happened to it.
    assert_eq!(log.state.outcome(), Some(&Outcome::Attained));
    let report = RunReport::from_events(&log.events).unwrap();
    assert_eq!(report.steps[0].status, "not_attained");
    assert!(report.render().contains("[policy] no policy permits it"));
}

#[test]
fn the_deciders_final_answer_is_kept_and_reported() {
    let mut log = Log::new(&SPEC.replace("/colour", "/color"));
    log.start();
    log.call(
        CallStatus::Ok,
        Some(json!({"order_id": "ord-1", "color": "#d2b48c"})),
        None,
    );
    log.push(EventKind::Carried {
        name: "order.color".into(),
        value: Arc::new(json!("#d2b48c")),
        lineage: warrant_core::event::Lineage {
            run: RunId("r1".into()),
            step: StepId("order".into()),
            call: CallId(1),
            tool: "order_latte".into(),
            path: "/color".into(),
        },
    });
    log.done("the latte is #d2b48c");
    assert_eq!(log.state.outcome(), Some(&Outcome::Attained));
    let report = RunReport::from_events(&log.events).unwrap();
    let answer = report.answer.as_ref().unwrap();
    assert_eq!(
        (answer.kind.as_str(), answer.text.as_str()),
        ("done", "the latte is #d2b48c")
    );
    assert_eq!(
        report.steps[0].answer.as_ref().unwrap().text,
        "the latte is #d2b48c"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["answer"]["text"], "the latte is #d2b48c");
}

#[test]
fn nothing_may_follow_the_end_of_a_run() {
    let mut log = Log::new(&SPEC.replace("/colour", "/color"));
    log.start();
    log.done("nothing to do");
    let after = Event {
        seq: log.state.last_seq() + 1,
        at_ms: 5_000,
        kind: EventKind::CallReconciled {
            call: CallId(1),
            happened: true,
            by: "ops".into(),
            note: String::new(),
            resend: false,
        },
    };
    let err = log.state.apply(&after).unwrap_err();
    assert!(err.message.contains("already finished"), "{err}");
}

/// A finished call's view is made once and shared by every projection that shows it (nothing
/// it shows changes after); a call not yet finished is shown as it stands at each projection.
#[test]
fn a_finished_calls_view_is_made_once_and_an_unfinished_ones_at_each_projection() {
    use warrant_core::projection::Projection;

    let mut log = Log::new(SPEC);
    log.start();
    log.call(
        CallStatus::ProviderError,
        None,
        Some(Fault::new(Code::ProviderError, Layer::Provider, "busy")),
    );
    let spec = Arc::new(log.state.spec().unwrap().clone());
    let build = |state: &RunState| {
        Projection::build(state, spec.clone(), 0, "v1".into(), Arc::from(vec![])).unwrap()
    };
    let (first, second) = (build(&log.state), build(&log.state));
    assert!(Arc::ptr_eq(&first.recent[0], &second.recent[0]));
    assert_eq!(first.recent[0].status, Some(CallStatus::ProviderError));
    assert_eq!(first.recent[0].fault.as_ref().unwrap().message, "busy");

    // A second call, dispatched and not finished.
    let call = log.start_call(json!({"size": "large"}));
    log.dispatch(call, json!({"size": "large", "shots": 2}));
    let (in_flight, again) = (build(&log.state), build(&log.state));
    assert!(!Arc::ptr_eq(&in_flight.recent[1], &again.recent[1]));
    assert_eq!(in_flight.recent[1].status, None);
    assert_eq!(
        in_flight.recent[1].executed.as_deref(),
        Some(&json!({"size": "large", "shots": 2}))
    );
    assert!(Arc::ptr_eq(&in_flight.recent[0], &first.recent[0]));

    log.finish(call, CallStatus::Ok, Some(json!({"colour": "brown"})), None);
    let finished = build(&log.state);
    assert_eq!(finished.recent[1].status, Some(CallStatus::Ok));
    assert_eq!(
        finished.recent[1].output.as_deref(),
        Some(&json!({"colour": "brown"}))
    );
    assert!(Arc::ptr_eq(
        &finished.recent[1],
        &build(&log.state).recent[1]
    ));
}

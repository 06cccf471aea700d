//! Questions: a decider asks the person the run acts for instead of guessing. The run waits
//! durably; an answer that does not fit the question's schema is refused with the schema's
//! reason and nothing recorded; the answer enters the run as the person's words (provenance
//! `user`), the report shows the exchange, and the log replays.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod common;

use std::sync::Arc;

use common::{script, spec};
use serde_json::json;
use warrant_core::check::check_log;
use warrant_core::event::EventKind;
use warrant_core::provenance::Source;
use warrant_core::report::RunReport;
use warrant_core::{Outcome, RunStatus};
use warrant_engine::replay::replay;
use warrant_engine::{
    Answer, Answered, Engine, EngineError, RuleList, SequentialIds, TickingClock,
};
use warrant_store::MemoryStore;
use warrant_surfaces::demo::Bank;

/// The objective names no account: only the person can say which.
const SPEC: &str = "
version: warrant/v1
id: rent
objective: Pay this month's rent of 950 EUR to my landlord.
providers:
  bank: {reference: bank}
steps:
  - id: pay
    provider: bank
    tools: [balance, transfer]
    commit: required
";

const SCRIPT: &str = r#"
steps:
  pay:
    - call: balance
    - ask:
        prompt: "Which account is your landlord's?"
        schema: {type: string, pattern: "^DE[0-9]{20}$"}
    - call: transfer
      args: {to: DE89370400440532013000, amount: 950}
    - done: paid
"#;

#[tokio::test]
async fn a_question_waits_for_an_answer_that_fits_and_the_answer_is_the_persons() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(TickingClock::new(1_700_000_000_000, 1));
    // Every transfer asks a person: its request shows where its arguments came from.
    let engine = Engine::new(store.clone())
        .with_clock(clock.clone())
        .with_ids(Arc::new(SequentialIds::new("qa")))
        .with_authority(Arc::new(RuleList::new([], ["transfer".to_owned()])));
    let bank = Arc::new(Bank::default());
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    let b = bank.clone();
    catalog.register("bank", move || b.clone());
    let surfaces = catalog.surfaces(&spec(SPEC)).unwrap();
    let decider = script(SCRIPT);

    let r = engine.run(spec(SPEC), &decider, &surfaces).await.unwrap();
    let run = r.run_id.clone();
    assert_eq!(r.outcome, None);
    assert_eq!(r.state.status(), RunStatus::Waiting);
    let q = r
        .state
        .pending_question()
        .expect("a question waits")
        .clone();
    assert_eq!(q.id, format!("{run}-q1"));
    assert_eq!(q.prompt, "Which account is your landlord's?");

    // Nothing new: a look records nothing.
    let before = store.events(&run).len();
    let again = engine.resume(&run, &decider, &surfaces).await.unwrap();
    assert_eq!(again.state.status(), RunStatus::Waiting);
    assert_eq!(store.events(&run).len(), before);

    // An answer outside the schema is refused, with the schema's reason; nothing recorded.
    let err = engine
        .answer_question(&q.id, Arc::new(json!("the usual one")), "acme/ana")
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Unfit(_)), "{err}");
    assert!(err.to_string().contains("does not match"), "{err}");
    assert_eq!(store.events(&run).len(), before);
    // A question that was never asked is not there.
    let none = engine
        .answer_question(&format!("{run}-q9"), Arc::new(json!("x")), "acme/ana")
        .await
        .unwrap_err();
    assert!(none.to_string().contains("no question"), "{none}");

    let iban = json!("DE89370400440532013000");
    let said = engine
        .answer_question(&q.id, Arc::new(iban.clone()), "acme/ana")
        .await
        .unwrap();
    assert_eq!(said, Answered::Recorded);
    // The same answer again changes nothing; another is refused.
    let same = engine
        .answer_question(&q.id, Arc::new(iban.clone()), "acme/ana")
        .await
        .unwrap();
    assert_eq!(same, Answered::AlreadyAnswered);
    assert!(
        engine
            .answer_question(&q.id, Arc::new(json!("DE00000000000000000000")), "acme/bo")
            .await
            .is_err()
    );

    // Resumed, the decider goes on; the transfer's account is the person's answer.
    let r = engine.resume(&run, &decider, &surfaces).await.unwrap();
    let asked = r
        .state
        .pending_approvals()
        .next()
        .expect("the transfer asks")
        .clone();
    let events = store.events(&run);
    let provenance = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ApprovalRequested { provenance, .. } => Some(provenance.clone()),
            _ => None,
        })
        .unwrap();
    let to = provenance.iter().find(|l| l.pointer == "/to").unwrap();
    assert_eq!(
        to.source,
        Source::User {
            question: q.id.clone()
        },
        "{to:?}"
    );
    engine
        .answer(
            &asked.id,
            Answer::Approve {
                scope: warrant_core::event::ApprovalScope::Once,
                until_ms: None,
                edited: None,
            },
            "acme/ana",
        )
        .await
        .unwrap();
    let r = engine.resume(&run, &decider, &surfaces).await.unwrap();
    assert_eq!(r.outcome, Some(Outcome::Attained));
    assert_eq!(bank.transfers().len(), 1);

    // The report shows the exchange; the log checks and replays.
    let events = store.events(&run);
    let report = RunReport::from_events(&events).unwrap();
    assert_eq!(report.questions.len(), 1);
    assert_eq!(report.questions[0].answer.as_deref(), Some(&iban));
    assert_eq!(report.questions[0].by.as_deref(), Some("acme/ana"));
    let text = report.render();
    assert!(
        text.contains("Which account is your landlord's?") && text.contains("by acme/ana"),
        "{text}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::QuestionAnswered { by, .. } if by == "acme/ana"))
    );
    check_log(events.iter().map(|e| &**e)).unwrap();
    let replayed = replay(&events).await.unwrap();
    assert_eq!((replayed.error, replayed.divergence), (None, None));
}

#[tokio::test]
async fn a_question_whose_schema_does_not_compile_ends_the_step_as_the_deciders_fault() {
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TickingClock::new(1_700_000_000_000, 1)))
        .with_ids(Arc::new(SequentialIds::new("qb")));
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    catalog.register("bank", || Arc::new(Bank::default()));
    let surfaces = catalog.surfaces(&spec(SPEC)).unwrap();
    let decider = script(
        "steps:\n  pay:\n    - ask: {prompt: Which?, schema: {type: 12}}\n    - done: paid\n",
    );
    let r = engine.run(spec(SPEC), &decider, &surfaces).await.unwrap();
    let Some(Outcome::NotAttained { missing }) = &r.outcome else {
        panic!("{:?}", r.outcome);
    };
    assert_eq!(missing[0].fault.code.as_str(), "invalid_question");
    assert!(r.state.questions().is_empty());
}

#[tokio::test]
async fn a_run_waiting_on_its_question_cancelled_ends_and_takes_no_answer() {
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TickingClock::new(1_700_000_000_000, 1)))
        .with_ids(Arc::new(SequentialIds::new("qc")));
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    catalog.register("bank", || Arc::new(Bank::default()));
    let surfaces = catalog.surfaces(&spec(SPEC)).unwrap();
    let decider = script(SCRIPT);
    let r = engine.run(spec(SPEC), &decider, &surfaces).await.unwrap();
    let q = r.state.pending_question().unwrap().id.clone();
    engine.cancel(&r.run_id, "ops", "not needed").await.unwrap();
    let r = engine.resume(&r.run_id, &decider, &surfaces).await.unwrap();
    assert!(
        matches!(r.outcome, Some(Outcome::Cancelled { .. })),
        "{:?}",
        r.outcome
    );
    // Ended, the run takes no answer.
    let late = engine
        .answer_question(&q, Arc::new(json!("DE89370400440532013000")), "acme/ana")
        .await
        .unwrap_err();
    assert!(late.to_string().contains("ended"), "{late}");
    let events = store.events(&r.run_id);
    check_log(events.iter().map(|e| &**e)).unwrap();
    let replayed = replay(&events).await.unwrap();
    assert_eq!((replayed.error, replayed.divergence), (None, None));
}

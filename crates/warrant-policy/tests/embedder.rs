//! An embedder's spec that names `policy:` is ruled by it through the library alone: the
//! engine builds the policies with its policy source, records them, rebuilds them when the
//! run is re-entered, and refuses the spec (never runs it unguarded) when it has no source.

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
use warrant_core::spec::Format;
use warrant_core::store::{LogReader, RunsIndex};
use warrant_core::{Outcome, Spec, validate};
use warrant_deciders::{Script, ScriptedDecider};
use warrant_engine::{Answer, Engine, EngineError};
use warrant_policy::Policies;
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceCatalog;
use warrant_surfaces::demo::Bank;

const PAYMENTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/policies/payments.cedar"
);

fn spec() -> Arc<Spec> {
    let yaml = format!(
        "version: warrant/v1
id: pay
objective: Pay the rent.
policy: [{PAYMENTS}]
providers:
  bank: {{reference: bank}}
steps:
  - id: pay
    provider: bank
    intent: Transfer the rent.
    tools: [balance, read_statement, transfer]
    commit: required
"
    );
    Arc::new(
        validate::load(
            &yaml,
            Format::Yaml,
            "spec.yaml",
            &ReferenceCatalog::default(),
        )
        .expect("valid spec"),
    )
}

fn decider(calls: &str) -> ScriptedDecider {
    let yaml = format!("steps:\n  pay:\n{calls}    - done: rent paid\n");
    ScriptedDecider::new(
        Script::parse(&yaml, Format::Yaml, "script.yaml").expect("valid script"),
        "script.yaml",
    )
}

struct World {
    bank: Arc<Bank>,
    surfaces: warrant_engine::Surfaces,
}

fn world(spec: &Spec) -> World {
    let bank = Arc::new(Bank::default());
    let mut catalog = ReferenceCatalog::default();
    let b = bank.clone();
    catalog.register("bank", move || b.clone());
    let surfaces = catalog.surfaces(spec).expect("surfaces");
    World { bank, surfaces }
}

#[tokio::test]
async fn a_spec_s_forbid_policy_stops_the_call_with_no_cli_involved() {
    let spec = spec();
    let w = world(&spec);
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone()).with_policies(Arc::new(Policies));
    // The blocked recipient of the example policy: forbidden, whoever asks.
    let decider = decider(
        "    - call: transfer\n      args: {to: GB29NWBK60161331926819, amount: 10, memo: rent}\n",
    );
    let result = engine.run(spec, &decider, &w.surfaces).await.unwrap();
    assert!(w.bank.transfers().is_empty(), "the forbidden transfer ran");
    let call = &result.state.calls()[0];
    assert_eq!(
        call.status.map(|s| s.to_string()).as_deref(),
        Some("stopped_by_policy"),
        "{call:?}"
    );
    assert!(
        call.fault
            .as_ref()
            .is_some_and(|f| f.message.contains("blocked-recipient")),
        "{call:?}"
    );
    let started = &store.read(&result.run_id, 1).await.unwrap()[0].event.kind;
    let warrant_core::event::EventKind::RunStarted { authority, .. } = started else {
        panic!("the log begins with {started:?}");
    };
    assert!(
        authority.as_ref().is_some_and(|a| a.get("cedar").is_some()),
        "the run records the spec's policies as its authority: {authority:?}"
    );
}

#[tokio::test]
async fn without_a_policy_source_the_spec_is_refused_not_run_unguarded() {
    let spec = spec();
    let w = world(&spec);
    let store = Arc::new(MemoryStore::new());
    let decider = decider(
        "    - call: transfer\n      args: {to: GB29NWBK60161331926819, amount: 10, memo: rent}\n",
    );
    let err = Engine::new(store.clone())
        .run(spec, &decider, &w.surfaces)
        .await
        .expect_err("a spec with `policy:` and no policy source must not run");
    assert!(matches!(err, EngineError::Rules(_)), "{err}");
    assert!(w.bank.transfers().is_empty());
    let runs = store
        .runs(warrant_core::ports::RunQuery::default())
        .await
        .unwrap();
    assert!(runs.runs.is_empty(), "nothing was recorded: {runs:?}");
}

#[tokio::test]
async fn a_re_entered_run_is_ruled_by_the_policies_it_recorded() {
    let spec = spec();
    let w = world(&spec);
    let store = Arc::new(MemoryStore::new());
    // The recipient was read from the statement (an untrusted provider's output): the policy
    // asks a person.
    let decider = decider(
        "    - call: read_statement\n    - call: transfer\n      args: {to: DE44500105175407324931, amount: 950, memo: rent}\n",
    );
    let engine = Engine::new(store.clone()).with_policies(Arc::new(Policies));
    let waiting = engine
        .run(spec.clone(), &decider, &w.surfaces)
        .await
        .unwrap();
    assert_eq!(waiting.outcome, None, "the transfer waits for a person");
    let request = waiting
        .state
        .pending_approvals()
        .next()
        .expect("an approval request")
        .id
        .clone();
    assert!(w.bank.transfers().is_empty());
    let approve = || Answer::Approve {
        scope: warrant_core::event::ApprovalScope::Once,
        until_ms: None,
        edited: None,
    };
    // Who may approve is ruled by the run's policies too: an engine that cannot rebuild them
    // takes no approval (it could not tell whether the approver is allowed).
    let blind = Engine::new(store.clone())
        .answer(&request, approve(), "alice")
        .await;
    assert!(
        matches!(&blind, Err(EngineError::Forbidden(m)) if m.contains("with_policies")),
        "{blind:?}"
    );
    Engine::new(store.clone())
        .with_policies(Arc::new(Policies))
        .answer(&request, approve(), "alice")
        .await
        .unwrap();

    // An engine that cannot rebuild Cedar policies does not re-enter it under weaker rules.
    let err = Engine::new(store.clone())
        .resume(&waiting.run_id, &decider, &w.surfaces)
        .await
        .expect_err("re-entered without the recorded policies");
    assert!(matches!(err, EngineError::Rules(_)), "{err}");
    assert!(w.bank.transfers().is_empty());

    // One that can rebuilds them from the record and goes on.
    let done = Engine::new(store.clone())
        .with_policies(Arc::new(Policies))
        .resume(&waiting.run_id, &decider, &w.surfaces)
        .await
        .unwrap();
    assert_eq!(done.outcome, Some(Outcome::Attained), "{:?}", done.outcome);
    assert_eq!(w.bank.transfers().len(), 1);
}

//! Delegation: child runs with attenuated authority, carved budgets, routed approvals, joined
//! on evidence; cancellation and denials that cross the tree.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{kinds, script, spec};
use warrant_core::event::{CallStatus, Event, EventKind, Outcome};
use warrant_core::ids::RunId;
use warrant_core::ports::{
    Authority, BoxFuture, ChildParts, ChildRuns, DecideError, Decided, Decider, Surface,
};
use warrant_core::projection::Projection;
use warrant_core::store::{ApprovalsIndex, LogReader};
use warrant_engine::{AllowAll, Answer, Engine, RuleList, SequentialIds, TickingClock};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceCatalog;
use warrant_surfaces::demo::Cafe;

/// Children's deciders from scripts named by their spec's `decider: scripted:<name>`, their
/// providers from the reference catalog (the cafe is one instance, shared by every run).
struct Kids {
    scripts: HashMap<String, String>,
    cafe: Arc<Cafe>,
    /// Decisions being taken at once by children, and the most ever.
    busy: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl ChildRuns for Kids {
    fn prepare<'a>(
        &'a self,
        spec: &'a Arc<warrant_core::Spec>,
        shared: &'a [String],
        _recorded: Option<&'a warrant_core::event::DeciderIdentity>,
    ) -> BoxFuture<'a, Result<ChildParts, String>> {
        Box::pin(async move {
            let name = spec
                .decider
                .as_deref()
                .and_then(|d| d.strip_prefix("scripted:"))
                .ok_or("no scripted decider")?;
            let text = self
                .scripts
                .get(name)
                .ok_or_else(|| format!("no script `{name}`"))?;
            let mut surfaces = catalog(&self.cafe).surfaces(spec)?;
            surfaces.retain(|k, _| !shared.contains(k));
            Ok(ChildParts {
                decider: Box::new(Slow {
                    inner: script(text),
                    busy: self.busy.clone(),
                    most: self.most.clone(),
                }),
                surfaces,
            })
        })
    }
}

/// A decider that takes a little real time, counting how many decide at once.
struct Slow {
    inner: warrant_deciders::ScriptedDecider,
    busy: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Decider for Slow {
    fn identity(&self) -> warrant_core::event::DeciderIdentity {
        self.inner.identity()
    }
    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        Box::pin(async move {
            let now = self.busy.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            self.busy.fetch_sub(1, Ordering::SeqCst);
            self.inner.decide(projection).await
        })
    }
}

fn catalog(cafe: &Arc<Cafe>) -> ReferenceCatalog {
    let mut catalog = ReferenceCatalog::default();
    let c = cafe.clone();
    catalog.register("cafe", move || c.clone());
    catalog
}

struct Tree {
    engine: Engine,
    store: Arc<MemoryStore>,
    cafe: Arc<Cafe>,
    surfaces: HashMap<String, Arc<dyn Surface>>,
    most: Arc<AtomicUsize>,
}

fn tree(
    parent: &warrant_core::Spec,
    scripts: &[(&str, &str)],
    authority: Arc<dyn Authority>,
) -> Tree {
    let store = Arc::new(MemoryStore::new());
    let cafe = Arc::new(Cafe::default());
    let most = Arc::new(AtomicUsize::new(0));
    let kids = Kids {
        scripts: scripts
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        cafe: cafe.clone(),
        busy: Arc::new(AtomicUsize::new(0)),
        most: most.clone(),
    };
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TickingClock::new(1_700_000_000_000, 1)))
        .with_ids(Arc::new(SequentialIds::new("run")))
        .with_authority(authority)
        .with_children(Arc::new(kids));
    let surfaces = catalog(&cafe).surfaces(parent).expect("surfaces");
    Tree {
        engine,
        store,
        cafe,
        surfaces,
        most,
    }
}

const PARENT: &str = r#"
version: warrant/v1
id: parent
objective: Order a latte, then have a child check its color against the palette.
providers:
  cafe: {reference: cafe}
steps:
  - id: order
    provider: cafe
    tools: [read_menu, order_latte]
    commit: required
    required: true
    publishes:
      color: {from: order_latte, path: /color}
  - id: check
    after: [order]
    required: true
    delegate:
      children:
        - spec:
            version: warrant/v1
            id: checker
            objective: Check the latte's color against the palette.
            decider: scripted:checker
            inputs: [color]
            providers:
              gallery: {reference: gallery}
            steps:
              - id: drift
                provider: gallery
                tools: [check_design_drift]
                required: true
                inputs: {color: input.color}
                publishes:
                  nearest: {from: check_design_drift, path: /nearest}
          inputs:
            color: {carried: order.color}
          returns:
            nearest: drift.nearest
"#;

const PARENT_SCRIPT: &str = r"
steps:
  order:
    - call: order_latte
      args: {size: medium, milk: oat}
    - done: ordered
";

const CHECKER: &str = r"
steps:
  drift:
    - call: check_design_drift
    - done: checked
";

/// A rule every run of the tree has: a person approves each `order_latte`.
fn ask_before_ordering() -> Arc<RuleList> {
    Arc::new(RuleList::new(
        Vec::<String>::new(),
        vec!["order_latte".to_owned()],
    ))
}

fn approve() -> Answer {
    Answer::Approve {
        scope: warrant_core::event::ApprovalScope::Once,
        until_ms: None,
        edited: None,
    }
}

fn deny() -> Answer {
    Answer::Deny {
        reason: "no orders".into(),
    }
}

async fn answer(t: &Tree, request: &str, answer: Answer) {
    t.engine
        .answer(request, answer, "local/alice")
        .await
        .unwrap();
}

/// The message of the call a person's denial refused in `log`, if one did.
fn denial_in(log: &[Arc<Event>]) -> Option<String> {
    log.iter().find_map(|e| match &e.kind {
        EventKind::CallFinished { fault: Some(f), .. } if f.code == "approval_denied" => {
            Some(f.message.clone())
        }
        _ => None,
    })
}

fn events(store: &MemoryStore, run: &str) -> Vec<Arc<Event>> {
    store.events(&RunId(run.to_owned()))
}

fn outcome(store: &MemoryStore, run: &str) -> Option<Outcome> {
    events(store, run).iter().find_map(|e| match &e.kind {
        EventKind::RunFinished { outcome } => Some(outcome.clone()),
        _ => None,
    })
}

#[tokio::test]
async fn a_child_attains_and_what_it_returns_is_carried_with_lineage_across_runs() {
    let parent = spec(PARENT);
    let t = tree(&parent, &[("checker", CHECKER)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(parent, &script(PARENT_SCRIPT), &t.surfaces)
        .await
        .unwrap();
    assert_eq!(result.outcome, Some(Outcome::Attained));
    let log = events(&t.store, "run-1");
    assert!(kinds(&log).contains(&"child_spawned"));
    assert!(kinds(&log).contains(&"child_finished"));
    // The parent's carried value keeps the child's lineage: parent step <- child run <- call.
    let carried = result
        .state
        .carried()
        .get("check.nearest")
        .expect("returned");
    assert_eq!(carried.lineage.run.0, "run-1.1");
    assert_eq!(&*carried.lineage.step.0, "drift");
    assert_eq!(carried.lineage.tool, "check_design_drift");
    // The child names its parent; its input came with the parent's lineage.
    let child = events(&t.store, "run-1.1");
    let EventKind::RunStarted {
        parent: Some(link), ..
    } = &child[0].kind
    else {
        panic!("the child's log names its parent: {:?}", child[0].kind);
    };
    assert_eq!(link.run.0, "run-1");
    assert_eq!(&*link.step.0, "check");
    assert_eq!((link.depth, link.chain.len()), (1, 1));
    let given = &link.inputs["color"];
    assert_eq!(
        (given.lineage.run.0.as_str(), &*given.lineage.step.0),
        ("run-1", "order")
    );
    assert_eq!(outcome(&t.store, "run-1.1"), Some(Outcome::Attained));
    // The child's argument was filled from the carried input, and labelled so.
    let labels = child.iter().find_map(|e| match &e.kind {
        EventKind::CallDispatched { provenance, .. } => Some(provenance.clone()),
        _ => None,
    });
    assert!(
        format!("{labels:?}").contains("Carried"),
        "the color came from carried state: {labels:?}"
    );
    // Log first: the spawn is durable before the child's log begins.
    let parent_log = t.store.read(&RunId("run-1".into()), 1).await.unwrap();
    let spawned = parent_log
        .iter()
        .find(|e| e.event.kind.name() == "child_spawned")
        .unwrap();
    let child_start = &t.store.read(&RunId("run-1.1".into()), 1).await.unwrap()[0];
    assert!(spawned.position < child_start.position);
}

/// A parent that delegates to `n` children of one spec (the checker over a shared cafe or
/// the gallery), each with its own decider script.
fn fan(children: &str, fan_out: u32) -> String {
    format!(
        r#"
version: warrant/v1
id: fan
objective: Have children do the work.
providers:
  cafe: {{reference: cafe}}
steps:
  - id: look
    provider: cafe
    tools: [read_menu, order_latte]
    required: true
  - id: work
    after: [look]
    required: true
    delegate:
      fan_out: {fan_out}
      children:
{children}
limits:
  decisions_max: 40
"#
    )
}

fn orderer(decider: &str, extra: &str) -> String {
    format!(
        r#"        - spec:
            version: warrant/v1
            id: orderer
            objective: Order a latte.
            decider: scripted:{decider}
            providers:
              cafe: {{reference: cafe}}
            steps:
              - id: buy
                provider: cafe
                tools: [read_menu, order_latte]
                commit: required
                required: true
          share: [cafe]
{extra}"#
    )
}

const LOOK: &str = r"
steps:
  look:
    - call: read_menu
    - done: looked
";

const BUY: &str = r"
steps:
  buy:
    - call: order_latte
      args: {size: small}
    - done: bought
";

#[tokio::test]
async fn a_failing_child_fails_the_step_on_orchestration_with_its_own_attribution_inside() {
    let decline = "steps:\n  buy:\n    - decline: not today\n";
    let parent = spec(&fan(&orderer("no", ""), 1));
    let t = tree(&parent, &[("no", decline)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    let Some(Outcome::NotAttained { missing }) = &result.outcome else {
        panic!("not attained: {:?}", result.outcome);
    };
    assert_eq!(&*missing[0].step.0, "work");
    assert_eq!(missing[0].fault.code, "child_not_attained");
    assert_eq!(missing[0].fault.layer, warrant_core::Layer::Orchestration);
    let inner = missing[0]
        .fault
        .inner
        .as_ref()
        .expect("the child's own attribution");
    assert_eq!(inner.layer, warrant_core::Layer::Model);
    assert!(t.cafe.orders().is_empty());
}

const PEEK: &str = r"
steps:
  buy:
    - call: read_menu
    - done: read it
";

#[tokio::test]
async fn children_run_at_most_fan_out_at_once_and_act_on_the_shared_provider() {
    let children: String = (0..3)
        .map(|_| {
            orderer("peek", "").replace(
                "tools: [read_menu, order_latte]\n                commit: required",
                "tools: [read_menu]",
            )
        })
        .collect();
    let parent = spec(&fan(&children, 2));
    let t = tree(&parent, &[("peek", PEEK)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert_eq!(
        result.outcome,
        Some(Outcome::Attained),
        "{:?}",
        result.outcome
    );
    for n in 1..=3 {
        assert_eq!(
            outcome(&t.store, &format!("run-1.{n}")),
            Some(Outcome::Attained)
        );
    }
    let most = t.most.load(Ordering::SeqCst);
    assert!(
        most == 2,
        "two children decided at once, never three: {most}"
    );
    // Their spending counts against the parent.
    assert_eq!(result.state.spent().calls, 1 + 3);
    assert_eq!(result.state.spent().decisions, 2 + 3 * 2);
    assert_eq!(result.state.own_spent().decisions, 2);
}

#[tokio::test]
async fn a_child_is_given_no_more_than_its_parent_has_left() {
    // The child asks for 50 decisions; the parent may take 40 and took 2.
    let child = orderer("buy", "          budget: {decisions: 50, calls: 9}\n");
    let parent =
        spec(&fan(&child, 1).replace("decisions_max: 40", "decisions_max: 40\n  calls_max: 3"));
    let t = tree(&parent, &[("buy", BUY)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert_eq!(result.outcome, Some(Outcome::Attained));
    let log = events(&t.store, "run-1");
    let Some(EventKind::ChildSpawned { asked, granted, .. }) = log
        .iter()
        .map(|e| &e.kind)
        .find(|k| k.name() == "child_spawned")
    else {
        panic!("spawned");
    };
    assert_eq!((asked.decisions, asked.calls), (Some(50), Some(9)));
    assert_eq!(asked.deadline_ms, None, "only what the delegation asks");
    assert_eq!((granted.decisions, granted.calls), (Some(38), Some(2)));
    let child = events(&t.store, "run-1.1");
    let EventKind::RunStarted { spec, .. } = &child[0].kind else {
        panic!()
    };
    assert_eq!(spec.limits.decisions_max, 38);
    assert_eq!(spec.limits.calls_max, Some(2));
}

#[tokio::test]
async fn a_child_that_spends_its_slice_is_exhausted_and_the_parent_step_is_not_attained() {
    let child = orderer("buy", "          budget: {decisions: 1}\n");
    let parent = spec(&fan(&child, 1));
    let t = tree(&parent, &[("buy", BUY)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert!(matches!(
        outcome(&t.store, "run-1.1"),
        Some(Outcome::Exhausted { ref limit, .. }) if limit == "decisions_max"
    ));
    let Some(Outcome::NotAttained { missing }) = &result.outcome else {
        panic!("{:?}", result.outcome);
    };
    assert_eq!(missing[0].fault.code, "child_not_attained");
}

#[tokio::test]
async fn a_child_cannot_call_beyond_its_allowance_even_when_its_spec_lists_the_tool() {
    // The delegation allows only `read_menu` on the shared cafe; the child's spec (built
    // without the loader's check) lists `order_latte` too: the runtime denies it.
    let child = orderer("buy", "          tools: {cafe: [read_menu]}\n");
    let parent = spec(&fan(
        &child.replace(
            "tools: [read_menu, order_latte]\n                commit: required",
            "tools: [read_menu]\n                commit: required",
        ),
        1,
    ));
    let mut raw = (*parent).clone();
    let delegate = raw.steps[1].delegate.as_mut().unwrap();
    let warrant_core::spec::ChildSpec::Inline(inline) = &mut delegate.children[0].spec else {
        panic!()
    };
    inline.steps[0].tools.push("order_latte".into());
    let t = tree(&raw, &[("buy", BUY)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(Arc::new(raw), &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert!(t.cafe.orders().is_empty(), "the provider was never called");
    let child = events(&t.store, "run-1.1");
    let stopped = child.iter().find_map(|e| match &e.kind {
        EventKind::CallFinished {
            status: CallStatus::StoppedByPolicy,
            fault: Some(f),
            ..
        } => Some(f.message.clone()),
        _ => None,
    });
    assert!(
        stopped
            .as_deref()
            .is_some_and(|m| m.contains("beyond what the child may call")),
        "{stopped:?}"
    );
    assert!(matches!(result.outcome, Some(Outcome::NotAttained { .. })));
}

#[tokio::test]
async fn a_parents_rule_rules_its_child_and_the_childs_ask_waits_in_the_tree() {
    // The engine's rule (every run's) asks for a person before `order_latte`.
    let parent = spec(&fan(&orderer("buy", ""), 1));
    let rules = ask_before_ordering();
    let t = tree(&parent, &[("buy", BUY)], rules);
    let result = t
        .engine
        .run(parent.clone(), &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert_eq!(result.outcome, None, "the tree waits for a person");
    assert_eq!(result.state.status(), "waiting");
    let pending = t.store.pending_approvals(None).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].run_id.0, "run-1.1",
        "the child's ask, with its identity"
    );
    // The child is driven with its tree, never on its own.
    let err = t
        .engine
        .resume(&RunId("run-1.1".into()), &script(BUY), &t.surfaces)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("resuming `run-1`"), "{err}");
    // Resuming the waiting parent with nothing answered records nothing.
    let before = events(&t.store, "run-1").len();
    t.engine
        .resume(&RunId("run-1".into()), &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert_eq!(events(&t.store, "run-1").len(), before);
    // Answered once, the whole tree goes on.
    answer(&t, &pending[0].request, approve()).await;
    let result = t
        .engine
        .resume(&RunId("run-1".into()), &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert_eq!(
        result.outcome,
        Some(Outcome::Attained),
        "{:?}",
        result.outcome
    );
    assert_eq!(t.cafe.orders().len(), 1);
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_waiting_children_first() {
    let parent = spec(&fan(&orderer("buy", ""), 1));
    let rules = ask_before_ordering();
    let t = tree(&parent, &[("buy", BUY)], rules);
    t.engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    t.engine
        .cancel(&RunId("run-1".into()), "local/alice", "enough")
        .await
        .unwrap();
    let result = t
        .engine
        .resume(&RunId("run-1".into()), &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert!(matches!(result.outcome, Some(Outcome::Cancelled { .. })));
    assert!(matches!(
        outcome(&t.store, "run-1.1"),
        Some(Outcome::Cancelled { .. })
    ));
    assert!(t.cafe.orders().is_empty());
    let log = events(&t.store, "run-1");
    let names = kinds(&log);
    let finished = names.iter().position(|k| *k == "child_finished").unwrap();
    assert!(finished < names.iter().position(|k| *k == "run_finished").unwrap());
}

#[tokio::test]
async fn a_denial_in_one_child_holds_for_the_same_effect_in_its_sibling() {
    // Two children ask about the same order; the first's is denied, the second's approved:
    // the denial holds for the same effect in the sibling, whatever path it takes.
    let children: String = (0..2).map(|_| orderer("buy", "")).collect();
    let parent = spec(&fan(&children, 1));
    let rules = ask_before_ordering();
    let t = tree(&parent, &[("buy", BUY)], rules);
    t.engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    let pending = t.store.pending_approvals(None).await.unwrap();
    let ids: Vec<&str> = pending.iter().map(|p| p.run_id.0.as_str()).collect();
    assert_eq!(ids, ["run-1.1", "run-1.2"]);
    answer(&t, &pending[0].request, deny()).await;
    answer(&t, &pending[1].request, approve()).await;
    let result = t
        .engine
        .resume(&RunId("run-1".into()), &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    let sibling = events(&t.store, "run-1.2");
    let refused = denial_in(&sibling);
    assert!(
        refused.as_deref().is_some_and(|m| m.contains("run-1.1")),
        "{refused:?}"
    );
    assert!(t.cafe.orders().is_empty(), "no path reached the cafe");
    assert!(matches!(result.outcome, Some(Outcome::NotAttained { .. })));
}

#[tokio::test]
async fn a_parents_denial_holds_for_the_same_effect_in_its_child() {
    // The parent's own ask about an order is denied; its child then proposes the same order.
    let yaml = fan(&orderer("buy", ""), 1).replace(
        "    required: true\n  - id: work\n    after: [look]\n",
        "  - id: work\n",
    );
    let parent = spec(&yaml);
    let rules = ask_before_ordering();
    let t = tree(&parent, &[("buy", BUY)], rules);
    let look =
        "steps:\n  look:\n    - call: order_latte\n      args: {size: small}\n    - done: tried\n";
    t.engine
        .run(parent, &script(look), &t.surfaces)
        .await
        .unwrap();
    let pending = t.store.pending_approvals(None).await.unwrap();
    assert_eq!(pending[0].run_id.0, "run-1");
    answer(&t, &pending[0].request, deny()).await;
    t.engine
        .resume(&RunId("run-1".into()), &script(look), &t.surfaces)
        .await
        .unwrap();
    let child = events(&t.store, "run-1.1");
    let refused = denial_in(&child);
    assert!(
        refused
            .as_deref()
            .is_some_and(|m| m.contains("in run `run-1`")),
        "the parent's denial holds in the child: {refused:?}"
    );
    assert!(
        t.store.pending_approvals(None).await.unwrap().is_empty(),
        "never asked again"
    );
    assert!(t.cafe.orders().is_empty());
}

#[tokio::test]
async fn a_child_out_of_time_is_exhausted_and_its_parent_step_is_not_attained() {
    // The child may take 3 ms of the (ticking) clock: it runs out before it can order.
    let child = orderer("buy", "          budget: {deadline_ms: 3}\n");
    let parent = spec(&fan(&child, 1));
    let t = tree(&parent, &[("buy", BUY)], Arc::new(AllowAll));
    let result = t
        .engine
        .run(parent, &script(LOOK), &t.surfaces)
        .await
        .unwrap();
    assert!(
        matches!(
            outcome(&t.store, "run-1.1"),
            Some(Outcome::Exhausted { ref limit, .. }) if limit == "deadline_ms"
        ),
        "{:?}",
        outcome(&t.store, "run-1.1")
    );
    let Some(Outcome::NotAttained { missing }) = &result.outcome else {
        panic!("{:?}", result.outcome);
    };
    assert_eq!(missing[0].fault.code, "child_not_attained");
    assert!(
        missing[0]
            .fault
            .message
            .contains("exhausted (deadline_ms = 3)"),
        "{}",
        missing[0].fault.message
    );
    assert!(t.cafe.orders().is_empty());
}

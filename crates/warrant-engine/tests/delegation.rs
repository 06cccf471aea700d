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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{kinds, script, spec};
use warrant_core::event::{CallStatus, Event, EventKind, Outcome, StepEnd};
use warrant_core::ids::RunId;
use warrant_core::ports::{
    Authority, BoxFuture, ChildParts, ChildRuns, DecideError, Decided, Decider, Surface,
};
use warrant_core::projection::Projection;
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

fn tree(parent: &warrant_core::Spec, scripts: &[(&str, &str)], authority: Arc<dyn Authority>) -> Tree {
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
    let carried = result.state.carried().get("check.nearest").expect("returned");
    assert_eq!(carried.lineage.run.0, "run-1.1");
    assert_eq!(carried.lineage.step.0, "drift");
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
    assert_eq!(link.step.0, "check");
    assert_eq!((link.depth, link.chain.len()), (1, 1));
    let given = &link.inputs["color"];
    assert_eq!((given.lineage.run.0.as_str(), given.lineage.step.0.as_str()), ("run-1", "order"));
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
    use warrant_core::ports::EventStore;
    let parent_log = t.store.read(&RunId("run-1".into()), 1).await.unwrap();
    let spawned = parent_log
        .iter()
        .find(|e| e.event.kind.name() == "child_spawned")
        .unwrap();
    let child_start = &t.store.read(&RunId("run-1.1".into()), 1).await.unwrap()[0];
    assert!(spawned.position < child_start.position);
}

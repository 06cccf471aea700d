//! Budgets: each limit ends the run `exhausted`, naming it; a slow call is bounded by the
//! per-call timeout and by the deadline.

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
use std::time::Duration;

use common::*;
use warrant_core::Outcome;
use warrant_core::event::{CallStatus, EventKind, Usage};
use warrant_core::ports::{
    BoxFuture, CallOutput, DecideError, Decided, Decider, Invocation, Observation, Surface,
    SurfaceError,
};
use warrant_core::projection::Projection;
use warrant_engine::replay::replay;
use warrant_engine::{AllowAll, Engine, SequentialIds};
use warrant_store::MemoryStore;
use warrant_surfaces::ReferenceSurface;
use warrant_surfaces::demo::Cafe;

/// A surface whose calls to `tool` take `delay` (on tokio's clock).
struct Slow {
    inner: ReferenceSurface,
    tool: &'static str,
    delay: Duration,
}

impl Surface for Slow {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        self.inner.observe()
    }
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        if call.tool() != self.tool {
            return self.inner.invoke(call);
        }
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.invoke(call).await
        })
    }
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
}

async fn run_slow(
    spec_yaml: &str,
    script_yaml: &str,
    tool: &'static str,
    delay: Duration,
) -> (warrant_engine::RunResult, Arc<Cafe>, Arc<MemoryStore>) {
    let spec = common::spec(spec_yaml);
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone())
        .with_clock(Arc::new(TokioClock::new()))
        .with_ids(Arc::new(SequentialIds::new("slow")));
    let cafe = Arc::new(Cafe::default());
    let mut surfaces = warrant_surfaces::ReferenceCatalog::default()
        .surfaces(&spec)
        .unwrap();
    surfaces.insert(
        "cafe".into(),
        Arc::new(Slow {
            inner: ReferenceSurface::new(cafe.clone()),
            tool,
            delay,
        }),
    );
    let result = engine
        .run(spec, &script(script_yaml), &surfaces)
        .await
        .unwrap();
    (result, cafe, store)
}

#[tokio::test]
async fn the_call_limit_ends_the_run_exhausted() {
    let spec = CAFE_GALLERY.replace("deadline_ms: 60000", "deadline_ms: 60000\n  calls_max: 2");
    let w = run(&spec, SCRIPT).await;
    assert_eq!(
        w.result.outcome,
        Some(Outcome::Exhausted {
            limit: "calls_max".into(),
            value: 2
        })
    );
    assert_eq!(w.result.state.calls().len(), 2);
}

/// Reports 600 tokens per decision.
struct Costly<D>(D);

impl<D: Decider> Decider for Costly<D> {
    fn identity(&self) -> warrant_core::event::DeciderIdentity {
        self.0.identity()
    }
    fn decide(&self, p: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        Box::pin(async move {
            let mut d = self.0.decide(p).await?;
            d.usage = Some(Usage {
                input_tokens: 500,
                output_tokens: 100,
                cost_micro_usd: Some(250),
                ..Usage::default()
            });
            Ok(d)
        })
    }
}

#[tokio::test]
async fn the_token_and_cost_limits_end_the_run_exhausted() {
    let spec = CAFE_GALLERY.replace(
        "deadline_ms: 60000",
        "deadline_ms: 60000\n  tokens_max: 1000",
    );
    let w = run_with(&spec, &Costly(script(SCRIPT)), Arc::new(AllowAll)).await;
    assert_eq!(
        w.result.outcome,
        Some(Outcome::Exhausted {
            limit: "tokens_max".into(),
            value: 1000
        })
    );
    assert_eq!(w.result.state.tokens_used(), 1200);
    let spec = CAFE_GALLERY.replace(
        "deadline_ms: 60000",
        "deadline_ms: 60000\n  cost_micro_usd_max: 600",
    );
    let w = run_with(&spec, &Costly(script(SCRIPT)), Arc::new(AllowAll)).await;
    assert_eq!(
        w.result.outcome,
        Some(Outcome::Exhausted {
            limit: "cost_micro_usd_max".into(),
            value: 600
        })
    );
    assert!(replay(&w.events).await.unwrap().divergence.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_slow_read_times_out_and_is_attributed_to_the_provider() {
    let spec = CAFE_GALLERY.replace(
        "deadline_ms: 60000",
        "deadline_ms: 60000\n  call_timeout_ms: 2000",
    );
    let (result, _cafe, store) =
        run_slow(&spec, SCRIPT, "read_menu", Duration::from_secs(10)).await;
    let c1 = &result.state.calls()[0];
    assert_eq!(c1.status, Some(CallStatus::ProviderError));
    let fault = c1.fault.as_ref().unwrap();
    assert_eq!(
        (fault.code.as_str(), fault.layer),
        ("timeout", warrant_core::Layer::Provider)
    );
    // The script moves on and the run still attains.
    assert_eq!(result.outcome, Some(Outcome::Attained));
    let events = log(&store, &result);
    assert!(replay(&events).await.unwrap().divergence.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_slow_commit_that_times_out_is_in_doubt_not_dropped() {
    let spec = CAFE_GALLERY.replace(
        "deadline_ms: 60000",
        "deadline_ms: 60000\n  call_timeout_ms: 2000",
    );
    let (result, cafe, store) =
        run_slow(&spec, SCRIPT, "order_latte", Duration::from_secs(10)).await;
    assert_eq!(result.outcome, None);
    assert_eq!(result.waiting_on.len(), 1);
    assert!(
        cafe.orders().is_empty(),
        "the slow provider never finished the order"
    );
    let events = log(&store, &result);
    let doubt = events
        .iter()
        .find(|e| e.kind.name() == "call_in_doubt")
        .unwrap();
    let EventKind::CallInDoubt {
        cause: Some(cause), ..
    } = &doubt.kind
    else {
        panic!()
    };
    assert_eq!(cause.code, "timeout");
    assert!(replay(&events).await.unwrap().divergence.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_deadline_during_a_slow_call_ends_the_run_exhausted() {
    let spec = CAFE_GALLERY.replace("deadline_ms: 60000", "deadline_ms: 5000");
    let (result, _cafe, store) =
        run_slow(&spec, SCRIPT, "read_menu", Duration::from_secs(600)).await;
    assert_eq!(
        result.outcome,
        Some(Outcome::Exhausted {
            limit: "deadline_ms".into(),
            value: 5000
        })
    );
    let c1 = &result.state.calls()[0];
    assert_eq!(c1.fault.as_ref().unwrap().code, "deadline");
    // Cut at the deadline, not at the call timeout.
    assert!(result.state.last_at_ms() - result.state.started_at_ms() < 30_000);
    let events = log(&store, &result);
    assert!(replay(&events).await.unwrap().divergence.is_none());
}

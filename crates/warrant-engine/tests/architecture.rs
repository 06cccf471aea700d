//! Architecture tests: properties of the code's shape, pinned by type where the type system
//! can say it, by the source tree where it cannot.

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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warrant_engine::DenyTools;

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// INVARIANT (one path), pinned by type: a surface can only be handed an `Invocation`, and
/// the only way to one outside tests is `Invocation::dispatched` — from a run's folded log in
/// which that call's dispatch (its exact arguments, effect and idempotency key: the durable
/// intent the Bridge records after every check) is recorded. Its fields are private, so a
/// struct literal elsewhere does not compile (the `compile_fail` example on `Invocation`), nor
/// can one be changed after it is made. Here: no invocation of a call that was refused or not
/// yet dispatched; for each dispatched one, exactly what was recorded.
#[tokio::test]
async fn an_invocation_exists_only_for_a_recorded_dispatch() {
    use warrant_core::RunState;
    use warrant_core::event::EventKind;
    use warrant_core::ports::Invocation;
    let spec = common::spec(common::CAFE_GALLERY);
    let s = common::setup(&spec, Arc::new(DenyTools::new(["check_design_drift"])));
    let result = s
        .engine
        .run(spec, &common::script(common::SCRIPT), &s.surfaces)
        .await
        .unwrap();
    let events = common::log(&s.store, &result);
    let mut state = RunState::default();
    let (mut dispatched, mut refused) = (0, 0);
    for e in &events {
        if let EventKind::CallDispatched { call, .. } = &e.kind {
            assert!(
                Invocation::dispatched(&state, *call, "v").is_none(),
                "{call}: an invocation before its dispatch is recorded"
            );
        }
        state.apply(e).unwrap();
        if let EventKind::CallDispatched {
            call,
            args,
            idempotency_key,
            effect,
            ..
        } = &e.kind
        {
            let made = Invocation::dispatched(&state, *call, "v").expect("dispatched");
            assert_eq!(made.args(), args);
            assert_eq!(made.idempotency_key(), idempotency_key);
            assert_eq!(made.effect(), *effect);
            dispatched += 1;
        }
    }
    for c in state.calls() {
        if c.idempotency_key.is_none() {
            assert!(Invocation::dispatched(&state, c.id, "v").is_none(), "{c:?}");
            refused += 1;
        }
    }
    assert!(
        dispatched > 0 && refused > 0,
        "{dispatched} dispatched, {refused} refused"
    );
}

/// A provider's own `call` is reached from one place only: the reference surface, behind the
/// Bridge (`mcp-serve` is a gateway over it: its clients' calls are governed too) — and the
/// WebMCP pages that serve a provider as a web app, which are then a provider of their own
/// (their page calls them; the run that drives the page is governed). A new caller makes this
/// test fail.
#[test]
fn only_the_reference_surface_calls_a_provider() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_sources(&src, &mut files);
        }
    }
    let mut callers = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let product = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in product.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            // A provider's `call(tool, args, key)`: its first argument names the tool.
            let provider_call = code.split(".call(").skip(1).any(|rest| {
                let first = rest.split(',').next().unwrap_or("");
                first.starts_with('&') || first.contains("tool")
            });
            if provider_call {
                callers.push(format!("{}:{}", file.display(), n + 1));
            }
        }
    }
    let allowed = [
        "warrant-surfaces/src/reference.rs:",
        "warrant-surfaces/src/webmcp/pages.rs:",
    ];
    let outside: Vec<&String> = callers
        .iter()
        .filter(|c| !allowed.iter().any(|a| c.contains(a)))
        .collect();
    assert!(
        outside.is_empty(),
        "provider calls outside the surfaces: {outside:?}"
    );
    assert_eq!(callers.len(), 2, "one call in each: {callers:?}");
}

mod every_path {
    //! Every path that reaches a surface's `invoke` went through authority for exactly that
    //! call and those arguments: a fresh call, a call carried on after approval, a call
    //! repeated at re-entry after a crash.

    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use tokio::sync::Notify;
    use warrant_core::canon;
    use warrant_core::event::ApprovalScope;
    use warrant_core::ids::{CallId, RunId};
    use warrant_core::ports::{
        Authority, BoxFuture, CallOutput, CapabilityRequest, Invocation, LogReader, Observation,
        Surface, SurfaceError, Verdict,
    };
    use warrant_core::spec::Format;
    use warrant_deciders::{Script, ScriptedDecider};
    use warrant_engine::{Answer, Engine, SequentialIds};
    use warrant_store::MemoryStore;
    use warrant_surfaces::ReferenceSurface;
    use warrant_surfaces::demo::Bank;

    type Seen = Arc<Mutex<HashSet<(RunId, CallId, String)>>>;

    /// Asks for approval of transfers, allows the rest; remembers what it ruled on.
    struct Recording(Seen);

    impl Authority for Recording {
        fn evaluate<'a>(&'a self, r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
            self.0
                .lock()
                .unwrap()
                .insert((r.run.clone(), r.call, r.args_digest.to_owned()));
            let v = if r.tool == "transfer" {
                Verdict::Ask {
                    reason: "a person decides".into(),
                    approvers: 1,
                }
            } else {
                Verdict::Allow { grant: "ok".into() }
            };
            Box::pin(std::future::ready(v))
        }
    }

    /// Checks at the provider's door that authority ruled on this very call; can crash once.
    struct Door {
        inner: ReferenceSurface,
        ruled: Seen,
        unruled: Arc<Mutex<Vec<String>>>,
        crash_on: Option<&'static str>,
        armed: AtomicBool,
        reached: Arc<Notify>,
    }

    impl Surface for Door {
        fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
            self.inner.observe()
        }
        fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
            let key = (call.run().clone(), call.call(), canon::digest(call.args()));
            if !self.ruled.lock().unwrap().contains(&key) {
                self.unruled.lock().unwrap().push(format!(
                    "{} {} {}",
                    call.run(),
                    call.call(),
                    call.tool()
                ));
            }
            if self.crash_on == Some(call.tool()) && self.armed.swap(false, Ordering::SeqCst) {
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
    async fn every_invoke_was_ruled_on_for_that_call_and_those_arguments() {
        let spec_text = "version: warrant/v1\nid: pay\nobjective: Pay 950 to DE89370400440532013000.\nproviders:\n  bank: {reference: bank}\nsteps:\n  - id: pay\n    provider: bank\n    tools: [balance, transfer]\n    commit: required\n";
        let catalog = warrant_surfaces::ReferenceCatalog::default();
        let spec = Arc::new(
            warrant_core::validate::load(spec_text, Format::Yaml, "pay.yaml", &catalog).unwrap(),
        );
        let script = "steps:\n  pay:\n    - call: balance\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 950}\n    - done: paid\n";
        let decider = ScriptedDecider::new(
            Script::parse(script, Format::Yaml, "s.yaml").unwrap(),
            "s.yaml",
        );
        let ruled: Seen = Arc::default();
        let unruled = Arc::new(Mutex::new(Vec::new()));
        let store = Arc::new(MemoryStore::new());
        let engine = Engine::new(store.clone())
            .with_ids(Arc::new(SequentialIds::new("path")))
            .with_authority(Arc::new(Recording(ruled.clone())));
        let bank = Arc::new(Bank::default());
        let door = |crash_on, reached: Arc<Notify>| -> warrant_engine::Surfaces {
            let mut s: warrant_engine::Surfaces = std::collections::HashMap::new();
            s.insert(
                "bank".into(),
                Arc::new(Door {
                    inner: ReferenceSurface::new(bank.clone()),
                    ruled: ruled.clone(),
                    unruled: unruled.clone(),
                    crash_on,
                    armed: AtomicBool::new(true),
                    reached,
                }),
            );
            s
        };
        // Path 1: a fresh call (the balance read). The transfer is held for approval.
        let first = engine
            .run(spec.clone(), &decider, &door(None, Arc::default()))
            .await
            .unwrap();
        assert_eq!(first.outcome, None);
        let request = first.state.pending_approvals().next().unwrap().id.clone();
        engine
            .answer(
                &request,
                Answer::Approve {
                    scope: ApprovalScope::Once,
                    until_ms: None,
                    edited: None,
                },
                "ana",
            )
            .await
            .unwrap();
        // Path 2: the held call carried on after approval; the process dies in the provider.
        let reached = Arc::new(Notify::new());
        let crashing = door(Some("transfer"), reached.clone());
        tokio::select! {
            r = engine.resume(&first.run_id, &decider, &crashing) => panic!("{:?}", r.map(|r| r.outcome)),
            () = reached.notified() => {}
        }
        // Path 3: the call repeated at re-entry.
        let done = engine
            .resume(&first.run_id, &decider, &door(None, Arc::default()))
            .await
            .unwrap();
        assert_eq!(done.outcome, Some(warrant_core::Outcome::Attained));
        assert!(
            unruled.lock().unwrap().is_empty(),
            "invoked without a ruling: {:?}",
            unruled.lock().unwrap()
        );
        assert_eq!(bank.transfers().len(), 1);
        let events = store.read(&first.run_id, 1).await.unwrap();
        assert_eq!(
            events
                .iter()
                .filter(|e| e.event.kind.name() == "run_resumed")
                .count(),
            2
        );
    }
}

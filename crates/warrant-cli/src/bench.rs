//! `warrant bench`: the "tool loop" workload of BENCH-WORKLOAD.md through the full engine and
//! Bridge, printing one JSON line per cell.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::anyhow;
use nix::sys::resource::UsageWho;
use serde_json::{Value, json};
use warrant_core::event::{CallStatus, DeciderIdentity, Decision, EventKind};
use warrant_core::num;
use warrant_core::ports::{BoxFuture, DecideError, Decided, Decider, EventStore};
use warrant_core::projection::Projection;
use warrant_core::spec::{CommitRule, Limits, ProviderSpec, SPEC_VERSION, Spec, StepSpec};
use warrant_core::{Outcome, StepId};
use warrant_engine::{Engine, Surfaces};
use warrant_store::{Durability, MemoryStore, SqliteStore};
use warrant_surfaces::ReferenceSurface;
use warrant_surfaces::demo::StepTool;

use crate::cli::BenchArgs;
use crate::store::StoreAt;
use crate::{Failure, exit};

/// The workload's decider: a deterministic function of the run so far.
struct LoopDecider {
    steps: u32,
}

impl Decider for LoopDecider {
    fn identity(&self) -> DeciderIdentity {
        DeciderIdentity {
            kind: "bench".into(),
            name: "tool-loop".into(),
            digest: None,
        }
    }

    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        let last = projection
            .last_call()
            .filter(|c| c.tool == "step" && c.status == Some(CallStatus::Ok));
        let next = match last.and_then(|c| c.output.as_ref()) {
            Some(out) if out.get("status").and_then(Value::as_str) == Some("ok") => {
                out.get("step").and_then(Value::as_u64).map(|j| j + 1)
            }
            _ => None,
        };
        let decision = match next {
            None => call(0),
            Some(i) if i < u64::from(self.steps) => call(i),
            Some(_) => Decision::Done {
                summary: format!("done: {} steps", self.steps),
            },
        };
        Box::pin(std::future::ready(Ok(Decided {
            decision,
            usage: None,
            exchange: None,
        })))
    }
}

fn call(i: u64) -> Decision {
    let mut args = serde_json::Map::with_capacity(1);
    args.insert("i".into(), Value::from(i));
    Decision::Call {
        tool: "step".into(),
        handle: None,
        args: Arc::new(Value::Object(args)),
        claims: Vec::new(),
    }
}

fn spec(steps: u32) -> Spec {
    let mut providers = BTreeMap::new();
    providers.insert(
        "tools".to_owned(),
        ProviderSpec {
            reference: Some("bench".into()),
            ..ProviderSpec::default()
        },
    );
    Spec {
        version: SPEC_VERSION.into(),
        id: "tool-loop".into(),
        objective: format!(
            "K={steps}; Run the tool loop: call step with i = 0, 1, 2, ... until told to stop."
        ),
        decider: None,
        providers,
        policy: Vec::new(),
        execution_control: None,
        profile: None,
        plan_first: false,
        inputs: warrant_core::spec::Inputs::default(),
        steps: vec![StepSpec {
            id: StepId("loop".into()),
            provider: "tools".into(),
            intent: "call step until told to stop".into(),
            tools: vec!["step".into()],
            after: Vec::new(),
            commit: CommitRule::Optional,
            required: true,
            inputs: BTreeMap::new(),
            publishes: BTreeMap::new(),
            wait: None,
            decisions_max: None,
            grant: None,
            quarantine: BTreeMap::new(),
            delegate: None,
            open: false,
        }],
        limits: Limits {
            decisions_max: steps + 1,
            step_decisions_max: steps + 1,
            deadline_ms: 3_600_000,
            ..Limits::default()
        },
    }
}

/// A parent whose one step delegates the K-call loop to `children` child runs, at most 16 at
/// once, each handed the benchmark's tool as a provider of its own.
fn tree_spec(steps: u32, children: u32) -> Spec {
    let child = spec(steps);
    let mut parent = spec(steps);
    parent.id = "tool-loop-tree".into();
    let delegate = warrant_core::spec::Delegate {
        children: (0..children)
            .map(|_| warrant_core::spec::Child {
                spec: warrant_core::spec::ChildSpec::Inline(Box::new(child.clone())),
                decider: None,
                inputs: BTreeMap::new(),
                share: Vec::new(),
                tools: None,
                policy: Vec::new(),
                budget: warrant_core::spec::Budget::default(),
                returns: BTreeMap::new(),
            })
            .collect(),
        fan_out: children.clamp(1, warrant_core::spec::FAN_OUT_MAX),
    };
    if let Some(step) = parent.steps.first_mut() {
        step.provider = String::new();
        step.tools = Vec::new();
        step.delegate = Some(delegate);
    }
    parent.limits.decisions_max = children.saturating_mul(steps + 1).saturating_add(1);
    parent
}

/// The bench's children: the workload's decider, and the counting tool.
struct LoopChildren {
    steps: u32,
    surfaces: Arc<Surfaces>,
}

impl warrant_core::ports::ChildRuns for LoopChildren {
    fn prepare<'a>(
        &'a self,
        _spec: &'a Arc<Spec>,
        _shared: &'a [String],
        _recorded: Option<&'a DeciderIdentity>,
    ) -> BoxFuture<'a, Result<warrant_core::ports::ChildParts, String>> {
        Box::pin(std::future::ready(Ok(warrant_core::ports::ChildParts {
            decider: Box::new(LoopDecider { steps: self.steps }),
            surfaces: (*self.surfaces).clone(),
        })))
    }
}

/// A task of the bench's own: a concurrent run, or an answer.
fn spawned<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the bench, a CLI entry point, owns the tasks of its concurrent runs"
    )]
    tokio::spawn(work)
}

/// CPU time (user + system) of this process (`RUSAGE_SELF`) or of the calling thread
/// (`RUSAGE_THREAD`) so far, in nanoseconds.
fn cpu_ns(who: UsageWho) -> u64 {
    use nix::sys::resource::getrusage;
    let Ok(usage) = getrusage(who) else {
        return 0;
    };
    // A CPU time is never negative.
    let ns = |t: nix::sys::time::TimeVal| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec()).unwrap_or(0) * 1_000
    };
    ns(usage.user_time()) + ns(usage.system_time())
}

/// (current RSS, peak RSS) in MB.
fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Batch {
    wall_s: f64,
    cpu_s: f64,
    /// Of which the thread that drove the runs (with one async thread: every run's engine work).
    driver_cpu_s: f64,
}

async fn batch(
    engines: &[Engine],
    surfaces: &Arc<Surfaces>,
    steps: u32,
    runs: u32,
    children: Option<u32>,
    counter: &AtomicU64,
) -> Result<Batch, Failure> {
    let spec = Arc::new(match children {
        Some(n) => tree_spec(steps, n),
        None => spec(steps),
    });
    let per_run = u64::from(steps) * u64::from(children.unwrap_or(1));
    let decider = Arc::new(LoopDecider { steps });
    let before = counter.load(Ordering::SeqCst);
    let cpu0 = cpu_ns(UsageWho::RUSAGE_SELF);
    let driver0 = cpu_ns(UsageWho::RUSAGE_THREAD);
    #[expect(
        clippy::disallowed_methods,
        reason = "the benchmark's stopwatch measures wall time"
    )]
    let t0 = std::time::Instant::now();
    let mut results = Vec::with_capacity(runs as usize);
    let Some(engine) = engines.first() else {
        return Err(Failure::failed(anyhow!("no engine to run with")));
    };
    if runs == 1 {
        // One run needs no task of its own: run it on this thread, with no hand-off.
        let r = engine.run(spec.clone(), decider.as_ref(), surfaces).await;
        results.push(r.map_err(|e| Failure::failed(anyhow!("{e}")))?);
    } else {
        let mut tasks = Vec::with_capacity(runs as usize);
        // Runs go round-robin to the engines (workers, each with its store connections).
        for engine in engines.iter().cycle().take(runs as usize) {
            let (engine, spec, decider, surfaces) = (
                engine.clone(),
                spec.clone(),
                decider.clone(),
                surfaces.clone(),
            );
            let task = spawned(async move { engine.run(spec, decider.as_ref(), &surfaces).await });
            tasks.push(task);
        }
        for t in tasks {
            let r = t
                .await
                .map_err(|e| Failure::failed(anyhow!("a run's task failed: {e}")))?;
            results.push(r.map_err(|e| Failure::failed(anyhow!("{e}")))?);
        }
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = num::to_f64(cpu_ns(UsageWho::RUSAGE_SELF) - cpu0) / 1e9;
    let driver_cpu_s = num::to_f64(cpu_ns(UsageWho::RUSAGE_THREAD) - driver0) / 1e9;
    let want = format!("done: {steps} steps");
    for r in &results {
        if r.outcome != Some(Outcome::Attained) {
            return Err(Failure::failed(anyhow!(
                "run {} ended {:?}",
                r.run_id,
                r.outcome
            )));
        }
        if children.is_some() {
            // Attained only when every child attained (each judged its own loop).
            continue;
        }
        let events = engine
            .store()
            .read(&r.run_id, r.state.last_seq().saturating_sub(3))
            .await
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        let done = events.iter().any(|e| matches!(&e.event.kind, EventKind::Decided { decision: Decision::Done { summary }, .. } if *summary == want));
        if !done {
            return Err(Failure::failed(anyhow!(
                "run {} did not finish with `{want}`",
                r.run_id
            )));
        }
    }
    // The check of the workload: every run attained with `done: K steps`, K x R tool runs.
    let ran = counter.load(Ordering::SeqCst) - before;
    if ran != per_run * u64::from(runs) {
        return Err(Failure::failed(anyhow!(
            "the tool ran {ran} times, expected {}",
            per_run * u64::from(runs)
        )));
    }
    Ok(Batch {
        wall_s,
        cpu_s,
        driver_cpu_s,
    })
}

/// Asks for an approval of each run's first call (`i` = 0) and allows the rest: every run
/// waits once, on a person.
struct AskFirst;

impl warrant_core::ports::Authority for AskFirst {
    fn evaluate<'a>(
        &'a self,
        request: &'a warrant_core::ports::CapabilityRequest<'a>,
    ) -> BoxFuture<'a, warrant_core::ports::Verdict> {
        let first = request.args.get("i").and_then(Value::as_u64) == Some(0);
        Box::pin(std::future::ready(if first {
            warrant_core::ports::Verdict::Ask {
                reason: "the bench asks a person before each run's first call".into(),
                approvers: 1,
            }
        } else {
            warrant_core::ports::Verdict::Allow {
                grant: "bench".into(),
            }
        }))
    }
}

/// What `--waiting` measured.
struct Waited {
    /// Starting the R runs until each waits on its approval.
    start_s: f64,
    /// Resident memory with all R waiting (MB), and the most it reached.
    waiting_rss_mb: f64,
    /// Answering the R approvals.
    answer_s: f64,
    /// Resuming the R runs at once until the last ended.
    resume_s: f64,
}

/// `--waiting`: R runs each wait on an approval, held by this process; then every approval is
/// answered and the R runs are resumed at once to the end.
async fn waiting(
    engine: &Engine,
    surfaces: &Arc<Surfaces>,
    steps: u32,
    runs: u32,
    counter: &AtomicU64,
) -> Result<Waited, Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure::failed(anyhow!("{e}"));
    let spec = Arc::new(spec(steps));
    let decider = Arc::new(LoopDecider { steps });
    let before = counter.load(Ordering::SeqCst);
    #[expect(
        clippy::disallowed_methods,
        reason = "the benchmark's stopwatch measures wall time"
    )]
    let t0 = std::time::Instant::now();
    let mut tasks = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        let (engine, spec, decider, surfaces) = (
            engine.clone(),
            spec.clone(),
            decider.clone(),
            surfaces.clone(),
        );
        tasks.push(spawned(async move {
            let r = engine.run(spec, decider.as_ref(), &surfaces).await?;
            // Only what a person must answer is kept: the run itself is in the store.
            let request = r.state.calls().iter().find_map(|c| c.awaiting.clone());
            Ok::<_, warrant_engine::EngineError>((r.run_id, request))
        }));
    }
    let mut held = Vec::with_capacity(runs as usize);
    for t in tasks {
        let (run, request) = t.await.map_err(|e| failed(&e))?.map_err(|e| failed(&e))?;
        let request = request.ok_or_else(|| Failure::failed(anyhow!("run {run} did not wait")))?;
        held.push((run, request));
    }
    let start_s = t0.elapsed().as_secs_f64();
    let (waiting_rss_mb, _) = rss_mb();
    #[expect(
        clippy::disallowed_methods,
        reason = "the benchmark's stopwatch measures wall time"
    )]
    let t1 = std::time::Instant::now();
    // Answered at once, as a server takes approvals from many people.
    let mut answers = Vec::with_capacity(held.len());
    for (_, request) in &held {
        let (engine, request) = (engine.clone(), request.clone());
        let approve = warrant_engine::Answer::Approve {
            scope: warrant_core::event::ApprovalScope::Once,
            until_ms: None,
            edited: None,
        };
        answers.push(spawned(async move {
            engine.answer(&request, approve, "bench").await
        }));
    }
    for a in answers {
        a.await.map_err(|e| failed(&e))?.map_err(|e| failed(&e))?;
    }
    let answer_s = t1.elapsed().as_secs_f64();
    #[expect(
        clippy::disallowed_methods,
        reason = "the benchmark's stopwatch measures wall time"
    )]
    let t2 = std::time::Instant::now();
    let mut tasks = Vec::with_capacity(held.len());
    for (run, _) in held {
        let (engine, decider, surfaces) = (engine.clone(), decider.clone(), surfaces.clone());
        tasks.push(spawned(async move {
            engine.resume(&run, decider.as_ref(), &surfaces).await
        }));
    }
    for t in tasks {
        let r = t.await.map_err(|e| failed(&e))?.map_err(|e| failed(&e))?;
        if r.outcome != Some(Outcome::Attained) {
            return Err(Failure::failed(anyhow!(
                "run {} ended {:?} after its approval",
                r.run_id,
                r.outcome
            )));
        }
    }
    let resume_s = t2.elapsed().as_secs_f64();
    let ran = counter.load(Ordering::SeqCst) - before;
    if ran != u64::from(steps) * u64::from(runs) {
        return Err(Failure::failed(anyhow!(
            "the tool ran {ran} times, expected {}",
            u64::from(steps) * u64::from(runs)
        )));
    }
    Ok(Waited {
        start_s,
        waiting_rss_mb,
        answer_s,
        resume_s,
    })
}

/// Where a durable benchmark records, made for it and removed after it.
enum Scratch {
    File(std::path::PathBuf),
    #[cfg(feature = "postgres")]
    Schema {
        url: String,
        schema: String,
    },
}

impl Scratch {
    /// Opens `workers` stores on the scratch space (each with its own connections and group
    /// commit, as separate worker processes would have).
    async fn open(
        at: &StoreAt,
        workers: u32,
    ) -> Result<(Scratch, Vec<Arc<dyn EventStore>>), Failure> {
        let failed = |e: warrant_core::ports::StoreError| Failure::failed(anyhow!("{e}"));
        match at {
            StoreAt::File(path) => {
                if workers > 1 {
                    return Err(Failure::invalid(anyhow!(
                        "--workers is for a PostgreSQL store: one SQLite file has one writer"
                    )));
                }
                let db = path.with_file_name(format!("bench-{}.db", std::process::id()));
                let store = SqliteStore::open(&db, Durability::Fsync).map_err(failed)?;
                Ok((Scratch::File(db), vec![Arc::new(store)]))
            }
            #[cfg(feature = "postgres")]
            StoreAt::Postgres(url) => {
                let schema = format!("warrant_bench_{}", std::process::id());
                let scoped = warrant_store::PostgresStore::scratch(url, &schema)
                    .await
                    .map_err(failed)?;
                let mut stores: Vec<Arc<dyn EventStore>> = Vec::new();
                for _ in 0..workers {
                    stores.push(Arc::new(
                        warrant_store::PostgresStore::open(&scoped)
                            .await
                            .map_err(failed)?,
                    ));
                }
                Ok((
                    Scratch::Schema {
                        url: url.clone(),
                        schema,
                    },
                    stores,
                ))
            }
            #[cfg(not(feature = "postgres"))]
            StoreAt::Postgres(_) => Err(crate::store::without_postgres()),
        }
    }

    async fn remove(self) {
        match self {
            Scratch::File(db) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
                }
            }
            #[cfg(feature = "postgres")]
            Scratch::Schema { url, schema } => {
                let _ = warrant_store::PostgresStore::drop_scratch(&url, &schema).await;
            }
        }
    }

    fn variant(&self) -> &'static str {
        match self {
            Scratch::File(_) => "sqlite-wal-fsync-group-commit",
            #[cfg(feature = "postgres")]
            Scratch::Schema { .. } => "postgres-group-commit",
        }
    }
}

/// The timed batches `args` asks for: `--repeat`, else one for R >= 1000 (a batch is then
/// tens of thousands of steps), else enough for 1,000 steps in all (with `--children N`, each
/// run's K calls are made by each of its N children) and at least three. A batch of one short
/// run is a sample of tens of microseconds (memory) or a few fsyncs (durable): twenty batches
/// of one ten-step durable run took 272 to 2,649 µs a step, so the median of three was a draw.
/// The bare loop repeats by the same rule.
fn repeats(args: &BenchArgs) -> u32 {
    let default = || {
        if args.runs >= 1000 {
            return 1;
        }
        let per_batch = args
            .steps
            .saturating_mul(args.children.unwrap_or(1))
            .saturating_mul(args.runs)
            .max(1);
        1_000u32.div_ceil(per_batch).max(3)
    };
    args.repeat.unwrap_or_else(default).max(1)
}

pub async fn run(store_at: &StoreAt, args: &BenchArgs) -> Result<u8, Failure> {
    if args.lane == "browser" {
        return browser(args).await;
    }
    if args.steps == 0 || args.runs == 0 || args.workers == 0 {
        return Err(Failure::invalid(anyhow!(
            "--steps, --runs and --workers must be at least 1"
        )));
    }
    if args.workers > 1 && !args.durable {
        return Err(Failure::invalid(anyhow!(
            "--workers needs --durable (and a PostgreSQL --store)"
        )));
    }
    let repeat = repeats(args);
    let (scratch, stores): (Option<Scratch>, Vec<Arc<dyn EventStore>>) = if args.durable {
        let (scratch, stores) = Scratch::open(store_at, args.workers).await?;
        (Some(scratch), stores)
    } else {
        (None, vec![Arc::new(MemoryStore::new())])
    };
    let variant = scratch.as_ref().map_or("memory", Scratch::variant);
    let counter = Arc::new(AtomicU64::new(0));
    let mut surfaces: Surfaces = Surfaces::new();
    surfaces.insert(
        "tools".into(),
        Arc::new(ReferenceSurface::new(Arc::new(StepTool::with_counter(
            counter.clone(),
        )))),
    );
    let surfaces = Arc::new(surfaces);
    if args.children == Some(0) {
        return Err(Failure::invalid(anyhow!("--children must be at least 1")));
    }
    let engines: Vec<Engine> = stores
        .iter()
        .map(|s| {
            Engine::new(s.clone()).with_children(Arc::new(LoopChildren {
                steps: args.steps,
                surfaces: surfaces.clone(),
            }))
        })
        .collect();

    if args.waiting {
        let Some(engine) = engines.first() else {
            return Err(Failure::failed(anyhow!("no engine to run with")));
        };
        let engine = engine.clone().with_authority(Arc::new(AskFirst));
        let measured = waiting(&engine, &surfaces, args.steps, args.runs, &counter).await;
        let (_, peak) = rss_mb();
        drop((engine, engines, stores));
        if let Some(scratch) = scratch {
            scratch.remove().await;
        }
        let w = measured?;
        let line = json!({
            "peer": "warrant",
            "variant": variant,
            "waiting": true,
            "steps": args.steps,
            "runs": args.runs,
            "durable": args.durable,
            "start_s": w.start_s,
            "waiting_rss_mb": w.waiting_rss_mb,
            "answer_s": w.answer_s,
            "resume_s": w.resume_s,
            "peak_rss_mb": peak,
            "tool_calls": u64::from(args.steps) * u64::from(args.runs),
        });
        outln!("{line}");
        return Ok(exit::ATTAINED);
    }
    // An untimed warm-up of two calls a run at the cell's concurrency: the first timed batch
    // then finds the memory of R runs at once already mapped and the store's tables already
    // grown, as every later batch (and a long-lived process) does.
    batch(&engines, &surfaces, 2, args.runs, None, &counter).await?;
    let (rss_before, _) = rss_mb();
    let mut batches = Vec::new();
    for _ in 0..repeat {
        batches.push(
            batch(
                &engines,
                &surfaces,
                args.steps,
                args.runs,
                args.children,
                &counter,
            )
            .await?,
        );
    }
    let (_, peak) = rss_mb();
    drop(engines);
    drop(stores);
    if let Some(scratch) = scratch {
        scratch.remove().await;
    }

    let children = args.children.unwrap_or(1);
    let total_steps = f64::from(args.steps) * f64::from(args.runs) * f64::from(children);
    let mut walls: Vec<f64> = batches.iter().map(|b| b.wall_s).collect();
    walls.sort_by(f64::total_cmp);
    let (Some(&median), Some(&fastest), Some(&slowest)) =
        (walls.get(walls.len() / 2), walls.first(), walls.last())
    else {
        return Err(Failure::failed(anyhow!("no batch was timed")));
    };
    let (mid, mid_driver) = batches
        .iter()
        .find(|b| b.wall_s == median)
        .map_or((0.0, 0.0), |b| (b.cpu_s, b.driver_cpu_s));
    let line = json!({
        "peer": "warrant",
        "variant": variant,
        "workers": args.workers,
        "steps": args.steps,
        "runs": args.runs,
        "children": args.children,
        "per_child_us": args.children.map(|n| median * 1e6 / (f64::from(args.runs) * f64::from(n))),
        "durable": args.durable,
        "repeats": repeat,
        "wall_s": median,
        "steps_per_s": total_steps / median,
        "runs_per_s": f64::from(args.runs) / median,
        "per_step_us": median * 1e6 / total_steps,
        "per_step_us_min": fastest * 1e6 / total_steps,
        "per_step_us_max": slowest * 1e6 / total_steps,
        "cpu_s": mid,
        "cpu_per_step_us": mid * 1e6 / total_steps,
        // With one async thread, the part of it spent on the thread that drove every run (the
        // rest: the store's writer, tokio's blocking pool).
        "runs_thread_cpu_per_step_us": (args.threads <= 1).then(|| mid_driver * 1e6 / total_steps),
        "rss_before_runs_mb": rss_before,
        "peak_rss_mb": peak,
        "tool_calls": num::to_u64(total_steps),
        "versions": {
            "warrant": env!("CARGO_PKG_VERSION"),
            "sqlite": warrant_store::sqlite::sqlite_version(),
            "fsync": args.durable,
        },
    });
    outln!("{line}");
    Ok(exit::ATTAINED)
}

/// A surface that times each call it passes on, from a common start: when it began and how
/// long it took.
struct Timed {
    inner: Arc<dyn warrant_core::ports::Surface>,
    since: warrant_core::metrics::Stopwatch,
    calls: std::sync::Mutex<Vec<(std::time::Duration, std::time::Duration)>>,
}

impl warrant_core::ports::Surface for Timed {
    fn observe(
        &self,
    ) -> BoxFuture<'_, Result<warrant_core::ports::Observation, warrant_core::ports::SurfaceError>>
    {
        self.inner.observe()
    }

    fn invoke(
        &self,
        call: warrant_core::ports::Invocation,
    ) -> BoxFuture<'_, Result<warrant_core::ports::CallOutput, warrant_core::ports::SurfaceError>>
    {
        Box::pin(async move {
            let began = self.since.elapsed();
            let took = warrant_core::metrics::Stopwatch::start();
            let out = self.inner.invoke(call).await;
            if let Ok(mut calls) = self.calls.lock() {
                calls.push((began, took.elapsed()));
            }
            out
        })
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }
}

/// The `q` quantile of `sorted` microseconds.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let last = sorted.len() - 1;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a benchmark's few thousand samples"
    )]
    let at = ((last as f64) * q).round() as usize;
    sorted.get(at.min(last)).copied().unwrap_or(0.0)
}

/// `--lane browser`: the tool loop with its tool served as a WebMCP page and called in a
/// headless Chromium, one run of `--steps` calls. For each call: the WebMCP surface's own
/// round trip (`WebMCP.invokeTool` until its `toolResponded`), the whole step through Warrant
/// (from one call's start to the next: decision, Bridge, intent, call, result), and the
/// difference, Warrant's part — each as p50 and p99.
async fn browser(args: &BenchArgs) -> Result<u8, Failure> {
    use warrant_surfaces::webmcp::{BrowserLane, WebMcpSurface};
    let counter = Arc::new(AtomicU64::new(0));
    let tool: Arc<dyn warrant_surfaces::Provider> =
        Arc::new(StepTool::with_counter(counter.clone()));
    let lane = BrowserLane::serve(
        BTreeMap::from([("tools".to_owned(), tool)]),
        "127.0.0.1:0",
        "bench",
    )
    .await
    .map_err(|e| Failure::failed(anyhow!(e)))?;
    let page = warrant_core::spec::WebMcpSpec {
        url: format!("{}/tools/", lane.base()),
        effects: BTreeMap::from([("step".to_owned(), warrant_core::event::Effect::Read)]),
        ..warrant_core::spec::WebMcpSpec::default()
    };
    let surface = WebMcpSurface::open("tools", &page, true, 60_000)
        .await
        .map_err(|e| Failure::failed(anyhow!(e)))?;
    let browser_product = surface.browser_product().to_owned();
    let timed = Arc::new(Timed {
        inner: Arc::new(surface),
        since: warrant_core::metrics::Stopwatch::start(),
        calls: std::sync::Mutex::new(Vec::new()),
    });
    let mut surfaces: Surfaces = Surfaces::new();
    surfaces.insert("tools".into(), timed.clone());
    let surfaces = Arc::new(surfaces);
    let engines = vec![Engine::new(Arc::new(MemoryStore::new()))];
    // Warm-up: the page, the browser's JIT and the engine's caches.
    batch(&engines, &surfaces, 20, 1, None, &counter).await?;
    if let Ok(mut calls) = timed.calls.lock() {
        calls.clear();
    }
    let measured = batch(&engines, &surfaces, args.steps, 1, None, &counter).await?;
    let calls = timed.calls.lock().map(|c| c.clone()).unwrap_or_default();
    warrant_engine::shutdown(&surfaces).await;
    drop((surfaces, timed, engines, lane));
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let mut direct: Vec<f64> = calls.iter().map(|(_, took)| us(*took)).collect();
    let mut steps: Vec<f64> = calls
        .windows(2)
        .filter_map(|w| match w {
            [(a, _), (b, _)] => Some(us(b.saturating_sub(*a))),
            _ => None,
        })
        .collect();
    let mut overhead: Vec<f64> = calls
        .windows(2)
        .filter_map(|w| match w {
            [(a, took), (b, _)] => Some(us(b.saturating_sub(*a).saturating_sub(*took))),
            _ => None,
        })
        .collect();
    for v in [&mut direct, &mut steps, &mut overhead] {
        v.sort_by(f64::total_cmp);
    }
    let line = json!({
        "peer": "warrant",
        "variant": "memory",
        "lane": "browser",
        "browser": browser_product,
        "steps": args.steps,
        "runs": 1,
        "wall_s": measured.wall_s,
        "per_step_us": measured.wall_s * 1e6 / f64::from(args.steps),
        "invoke_tool_us_p50": quantile(&direct, 0.5),
        "invoke_tool_us_p99": quantile(&direct, 0.99),
        "per_step_us_p50": quantile(&steps, 0.5),
        "per_step_us_p99": quantile(&steps, 0.99),
        "warrant_us_p50": quantile(&overhead, 0.5),
        "warrant_us_p99": quantile(&overhead, 0.99),
        "tool_calls": direct.len(),
    });
    outln!("{line}");
    Ok(exit::ATTAINED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(steps: u32, runs: u32, children: Option<u32>, repeat: Option<u32>) -> BenchArgs {
        BenchArgs {
            steps,
            runs,
            durable: false,
            workers: 1,
            repeat,
            children,
            waiting: false,
            threads: 1,
            lane: "reference".to_owned(),
        }
    }

    /// A cell repeats enough batches for 1,000 steps (at least three; one at R >= 1000),
    /// counting every child's calls; `--repeat` overrides it.
    #[test]
    fn a_cell_repeats_enough_batches_for_a_thousand_steps() {
        assert_eq!(repeats(&args(10, 1, None, None)), 100);
        assert_eq!(repeats(&args(10, 100, None, None)), 3);
        assert_eq!(repeats(&args(10, 1000, None, None)), 1);
        // A parent with 10 children of 10 calls makes 100 calls a run.
        assert_eq!(repeats(&args(10, 1, Some(10), None)), 10);
        assert_eq!(repeats(&args(1, 100, Some(10), None)), 3);
        assert_eq!(repeats(&args(10, 1, Some(10), Some(7))), 7);
        assert_eq!(repeats(&args(10, 1, None, Some(0))), 1);
    }
}

//! Supervision: the runs a long-lived front door drives (`warrant serve`, `warrant worker`),
//! each on a task of its runtime, through the same [`App`] as the CLI — no second path to the
//! engine or the providers.
//!
//! A run that waits (for an approval, a reconciliation) stays held here with its providers
//! connected (stdio servers included) and goes on when its log moves — an answer recorded
//! through a front door of this process (which [`Supervisor::wake`]s it) or by `warrant
//! approve` in another, which the store tells of ([`Supervisor::watch_answers`], woken by
//! `Leases::work_ready`, never by a poll) — or when it is told to. A run that waits longer
//! than the supervisor holds waiting runs ([`Supervisor::holding_waiting`]) is let go: its
//! task ends and its providers are shut down, so a waiting run costs the store's row and
//! nothing here; the answer re-enters it, and its approval's expiry is remembered (a few
//! bytes) so that it is recorded on time ([`Supervisor::watch_timers`]). Which process drives a run
//! at any moment is the store's lease: the engine claims it before it appends and gives it
//! back when the run waits or ends, so the CLI and a server never drive the same run at once
//! (a second claim is refused while the holder is alive). A worker's supervisor lets a run go
//! when it waits, for whichever worker claims it when it is answered.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot, watch};
use warrant_core::event::{Event, EventKind};
use warrant_core::ids::RunId;
use warrant_core::metrics::Counts;
use warrant_core::ports::Clock as _;
use warrant_core::ports::IdGen;
use warrant_engine::time::TimeOrderedIds;
use warrant_engine::{Engine, SystemClock};

use crate::{App, AppError, Meter, Prepared};

/// The longest a waiting run goes without a look at its log when nothing wakes it.
const WAIT_LOOK: Duration = Duration::from_secs(3600);
/// The longest [`Supervisor::watch_answers`] goes without a look for answered runs when the
/// store tells it nothing (a store that cannot tell of another process's commits).
const ANSWERS_LOOK: Duration = Duration::from_secs(30);
/// The least time between two looks for answered runs: another process committing without
/// pause costs one look per this, not one per commit.
const ANSWERS_GAP: Duration = Duration::from_millis(100);
/// How often [`Supervisor::watch_timers`] looks for sleeping runs whose time came: a run
/// wakes within this of its time (and the time to prepare it).
const TIMERS_LOOK: Duration = Duration::from_millis(500);

/// What the runs a supervisor drives did (a server's `/metrics`).
#[derive(Debug, Default)]
pub struct Counters {
    /// Runs started here: driven here first (a queued run a worker took up included).
    pub started: AtomicU64,
    /// Runs queued here for workers to drive (a fleet's server).
    pub queued: AtomicU64,
    /// Runs re-entered here.
    pub reentered: AtomicU64,
    /// Runs that ended here, by outcome.
    pub ended: Counts<1>,
    /// Events appended by runs driven here.
    pub events: AtomicU64,
    /// Calls that ended here, by tool (`provider/tool`), status and the layer a failure is
    /// attributed to (`none` for a call that succeeded).
    pub calls: Counts<3>,
    /// Decisions taken by runs driven here.
    pub decisions: AtomicU64,
    /// How long each decision took here: from the event before it to `decided`.
    pub deciding: warrant_core::metrics::Histogram,
    /// Tokens the decisions here reported, by tenant, model and kind (`input`, `output`,
    /// `cached`).
    pub tokens: Counts<3>,
    /// What the priced decisions here cost, in micro-dollars, by tenant and model.
    pub cost: Counts<2>,
    /// How long calls took from `call_started` to `call_finished` as this process saw them
    /// (the mediated path, dispatch and result; a wait for a person included).
    pub calling: warrant_core::metrics::Histogram,
    /// How long steps took from `step_started` to `step_finished` as this process saw them
    /// (its decisions and calls; a wait for a person included).
    pub steps: warrant_core::metrics::Histogram,
    /// How long events took from their commit to their SSE frame (events the store handed
    /// over as it committed).
    pub delivery: warrant_core::metrics::Histogram,
}

/// The run supervisor.
pub struct Supervisor {
    app: App,
    ids: TimeOrderedIds,
    permits: Arc<Semaphore>,
    max_runs: usize,
    held: Mutex<HashMap<RunId, Arc<Notify>>>,
    tasks: AtomicUsize,
    idle: Notify,
    stopping: watch::Sender<bool>,
    /// What runs driven here did.
    pub counters: Arc<Counters>,
    /// What each tenant used (quotas).
    pub meter: Arc<Meter>,
    /// Makes one more subscriber for each run's engine (traces), if set.
    observer: Option<Observer>,
    /// Runs are only recorded here, for workers to drive (a fleet's server).
    queueing: bool,
    /// A run that waits is let go rather than held (a worker: whichever worker claims it
    /// when it is answered carries it on).
    letting_go: bool,
    /// Told each time a run held here is let go.
    freed: Notify,
    /// Told (every waiter) each time a run held here is let go.
    released: Notify,
    /// How long a waiting run is held here, its providers connected, before it is let go
    /// (`None`: until it is answered).
    hold: Option<Duration>,
    /// When the pending approvals of runs let go while waiting expire: each is re-entered
    /// then, to record the expiry (the earliest first).
    dormant: Mutex<BinaryHeap<Reverse<(u64, RunId)>>>,
}

/// Makes a subscriber for one run's engine.
pub type Observer = Arc<dyn Fn() -> Box<dyn warrant_engine::Subscriber> + Send + Sync>;

/// A run id chosen before the run starts, so the caller can be told it at once.
struct Chosen(RunId);

impl IdGen for Chosen {
    fn run_id(&self) -> RunId {
        self.0.clone()
    }
}

/// Tells the starter when the run's first event is in the store, and counts what runs do.
struct Watch {
    started: Option<oneshot::Sender<()>>,
    counters: Arc<Counters>,
    /// The run's tenant, and what its use is counted in.
    tenant: String,
    meter: Arc<Meter>,
    /// What people answered through this process: an approval found out of time counts here.
    answers: Arc<crate::Answers>,
    /// The decider's model (`kind:name`), what its tokens are counted under.
    model: String,
    /// Calls started and not yet finished: since when (when this process saw them start),
    /// and their tool.
    calls: HashMap<warrant_core::ids::CallId, (Option<warrant_core::metrics::Stopwatch>, String)>,
    /// Approval requests not yet answered: when each was recorded.
    asked: HashMap<String, u64>,
    /// When this process saw the run's last event: a decision's time starts there.
    last: Option<warrant_core::metrics::Stopwatch>,
    /// When this process saw the running step start.
    step: Option<warrant_core::metrics::Stopwatch>,
    /// Counts the run as started when its `run_started` is recorded here (a gateway's
    /// session; a supervisor counts the runs it starts itself).
    count_start: bool,
}

impl Counters {
    /// A subscriber that counts, here, what a run that begins with its first recorded event
    /// does (a gateway's session, acting for `tenant` through `client`), and the tenant's
    /// use in `meter`.
    pub fn watcher(
        self: &Arc<Self>,
        tenant: &str,
        client: String,
        meter: Arc<Meter>,
        answers: Arc<crate::Answers>,
    ) -> Box<dyn warrant_engine::Subscriber> {
        let mut watch = Watch::new(None, self.clone(), tenant, client, meter, answers);
        watch.count_start = true;
        Box::new(watch)
    }
}

/// What a front door that drives runs tells `/metrics`: its counters and the runs it holds.
pub trait Driving: Send + Sync {
    /// What the runs it drove did.
    fn counters(&self) -> &Counters;
    /// Runs (or sessions) it holds now.
    fn held(&self) -> usize;
}

impl Driving for Supervisor {
    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn held(&self) -> usize {
        Supervisor::held(self)
    }
}

impl Watch {
    fn new(
        started: Option<oneshot::Sender<()>>,
        counters: Arc<Counters>,
        tenant: &str,
        model: String,
        meter: Arc<Meter>,
        answers: Arc<crate::Answers>,
    ) -> Watch {
        Watch {
            started,
            counters,
            tenant: tenant.to_owned(),
            meter,
            answers,
            model,
            calls: HashMap::new(),
            asked: HashMap::new(),
            last: None,
            step: None,
            count_start: false,
        }
    }

    /// What the counts of later events need to know of `event`, an earlier one or not: when an
    /// approval was asked for, a call's tool and, when `seen` here as it happened, its start.
    fn remember(&mut self, event: &Event, seen: bool) {
        match &event.kind {
            EventKind::ApprovalRequested { request, .. } => {
                self.asked.insert(request.clone(), event.at_ms);
            }
            EventKind::ApprovalResolved { request, .. } => {
                self.asked.remove(request);
            }
            EventKind::CallStarted { call, tool, .. } => {
                let since = seen.then(warrant_core::metrics::Stopwatch::start);
                self.calls.insert(*call, (since, tool.clone()));
            }
            _ => {}
        }
    }
}

impl warrant_engine::Subscriber for Watch {
    /// What another process recorded before this one took the run up: the tenant's use sees
    /// it (the run is held here now), this process's counters do not (they count what it did).
    fn on_earlier(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
        self.meter.observe(&self.tenant, run, event);
        self.remember(event, false);
        self.last = Some(warrant_core::metrics::Stopwatch::start());
        Ok(())
    }

    fn on_event(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
        self.meter.observe(&self.tenant, run, event);
        self.remember(event, true);
        let since = self.last.replace(warrant_core::metrics::Stopwatch::start());
        let c = &self.counters;
        c.events.fetch_add(1, Ordering::Relaxed);
        match &event.kind {
            EventKind::RunStarted { .. } => {
                if let Some(tx) = self.started.take() {
                    let _ = tx.send(());
                }
                if self.count_start {
                    c.started.fetch_add(1, Ordering::Relaxed);
                }
            }
            EventKind::Decided { usage, .. } => {
                c.decisions.fetch_add(1, Ordering::Relaxed);
                if let Some(since) = since {
                    c.deciding.record(since.elapsed());
                }
                if let Some(u) = usage {
                    let (tenant, model) = (self.tenant.as_str(), self.model.as_str());
                    c.tokens.add([tenant, model, "input"], u.input_tokens);
                    c.tokens.add([tenant, model, "output"], u.output_tokens);
                    if u.cached_tokens > 0 {
                        c.tokens.add([tenant, model, "cached"], u.cached_tokens);
                    }
                    if let Some(cost) = u.cost_micro_usd {
                        c.cost.add([tenant, model], cost);
                    }
                }
            }
            EventKind::CallFinished {
                call,
                status,
                fault,
                ..
            } => {
                let (since, tool) = self.calls.remove(call).unzip();
                if let Some(since) = since.flatten() {
                    c.calling.record(since.elapsed());
                }
                // A tool the step does not offer is the model's text: counted as one label, so
                // a model cannot make a label of each name it invents.
                let unknown = fault
                    .as_ref()
                    .is_some_and(|f| f.code == warrant_core::codes::Code::UnknownTool.as_str());
                let tool = match tool {
                    Some(t) if !unknown => t,
                    _ => "(unknown)".to_owned(),
                };
                let layer = fault.as_ref().map_or("none", |f| f.layer.as_str());
                c.calls.add([&tool, status.as_str(), layer], 1);
            }
            EventKind::StepStarted { .. } => {
                self.step = Some(warrant_core::metrics::Stopwatch::start());
            }
            EventKind::StepFinished { .. } => {
                if let Some(since) = self.step.take() {
                    c.steps.record(since.elapsed());
                }
            }
            EventKind::ApprovalExpired { request } => {
                let waited = self
                    .asked
                    .remove(request)
                    .map(|asked| event.at_ms.saturating_sub(asked));
                self.answers
                    .approval(warrant_core::ApprovalState::Expired, waited);
            }
            EventKind::RunFinished { outcome } => {
                self.calls.clear();
                self.asked.clear();
                c.ended.add([outcome.name()], 1);
            }
            _ => {}
        }
        Ok(())
    }
}

impl Supervisor {
    /// A supervisor over `app` driving at most `max_runs` runs at once (waiting ones count).
    pub fn new(app: App, max_runs: usize) -> Supervisor {
        Supervisor {
            app,
            ids: TimeOrderedIds::default(),
            permits: Arc::new(Semaphore::new(max_runs)),
            max_runs,
            held: Mutex::new(HashMap::new()),
            tasks: AtomicUsize::new(0),
            idle: Notify::new(),
            stopping: watch::Sender::new(false),
            counters: Arc::default(),
            meter: Arc::default(),
            observer: None,
            queueing: false,
            letting_go: false,
            freed: Notify::new(),
            released: Notify::new(),
            hold: None,
            dormant: Mutex::new(BinaryHeap::new()),
        }
    }

    /// A runner that holds a waiting run for `hold` at most, then lets it go (its providers
    /// shut down) until it is answered or its approval expires: a waiting run then costs
    /// nothing here, and does not count against `max_runs`.
    pub fn holding_waiting(mut self, hold: Duration) -> Supervisor {
        self.hold = Some(hold);
        self
    }

    /// A runner that records new runs and leaves them, and any run to re-enter, to the
    /// workers sharing the store (`warrant worker`).
    pub fn queueing(mut self) -> Supervisor {
        self.queueing = true;
        self
    }

    /// The application its runs go through.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// A runner that lets a run go when it waits, for whichever worker claims it next.
    pub fn letting_go(mut self) -> Supervisor {
        self.letting_go = true;
        self
    }

    /// Whether it only records runs, for workers to drive.
    pub fn is_queueing(&self) -> bool {
        self.queueing
    }

    /// Runs this runner may take on now.
    pub fn room(&self) -> usize {
        if *self.stopping.borrow() {
            return 0;
        }
        self.permits.available_permits()
    }

    /// Resolves when a run held here is let go.
    pub async fn freed(&self) {
        self.freed.notified().await;
    }

    /// Adds `observer`'s subscriber to every run's engine.
    pub fn with_observer(mut self, observer: Observer) -> Supervisor {
        self.observer = Some(observer);
        self
    }

    /// Subscribes what watches every run to `engine`; `started` is told when its first event
    /// is recorded.
    fn watch(&self, engine: &Engine, started: Option<oneshot::Sender<()>>, prepared: &Prepared) {
        engine.subscribe(
            "server",
            Box::new(Watch::new(
                started,
                self.counters.clone(),
                &prepared.tenant,
                prepared.decider.identity().to_string(),
                self.meter.clone(),
                self.app.answers.clone(),
            )),
        );
        if let Some(make) = &self.observer {
            engine.subscribe("observer", make());
        }
    }

    /// Runs held here now (driving or waiting).
    pub fn held(&self) -> usize {
        self.held.lock().map_or(0, |h| h.len())
    }

    /// The runs held here now.
    pub fn held_runs(&self) -> Vec<RunId> {
        self.held
            .lock()
            .map_or_else(|_| Vec::new(), |h| h.keys().cloned().collect())
    }

    /// Whether this server holds `run`.
    pub fn holds(&self, run: &RunId) -> bool {
        self.held.lock().is_ok_and(|h| h.contains_key(run))
    }

    /// Waits until no task here holds `run` (it ended, or waits and was let go), for `within`
    /// at most: whether it was let go. Woken as each task here ends, never by a poll.
    pub async fn released(&self, run: &RunId, within: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.released.notified();
            tokio::pin!(notified);
            // Registered before the look, so a task ending in between still wakes this one.
            notified.as_mut().enable();
            if !self.holds(run) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return !self.holds(run);
            }
        }
    }

    /// Wakes the task holding `run` to look at its log again (an answer, a cancellation):
    /// whether one holds it. Told under the lock a waiting run is let go under, so a run
    /// either is woken or is not held any more (and the caller re-enters it).
    pub fn wake(&self, run: &RunId) -> bool {
        // A child is driven with its tree, by its root's task.
        self.wake_root(&warrant_engine::root_of(run))
    }

    fn wake_root(&self, root: &RunId) -> bool {
        let Ok(held) = self.held.lock() else {
            return false;
        };
        held.get(root).map(|n| n.notify_one()).is_some()
    }

    /// Lets `run` go while it waits, unless it was woken since it last looked at its log:
    /// whether it was let go. `expires_ms`: when its first pending approval expires.
    fn let_go(&self, run: &RunId, wake: &Notify, expires_ms: Option<u64>) -> bool {
        let Ok(mut held) = self.held.lock() else {
            return false;
        };
        let woken = std::pin::pin!(wake.notified());
        // A wake told before this lock was taken is kept by the `Notify`: it is taken here.
        if woken.enable() {
            return false;
        }
        held.remove(run);
        if let (Some(at), Ok(mut dormant)) = (expires_ms, self.dormant.lock()) {
            dormant.push(Reverse((at, run.clone())));
        }
        true
    }

    fn permit(&self) -> Result<OwnedSemaphorePermit, AppError> {
        if *self.stopping.borrow() {
            return Err(AppError::Unavailable(
                "the server is shutting down".to_owned(),
            ));
        }
        self.permits.clone().try_acquire_owned().map_err(|_| {
            AppError::Unavailable(format!(
                "the server holds {} runs, its limit (--max-runs): try again when some end",
                self.max_runs
            ))
        })
    }

    /// A new run id, for [`Supervisor::start`].
    pub fn new_run_id(&self) -> RunId {
        self.ids.run_id()
    }

    /// Starts `prepared` (a new run) as `run` and answers once its first event is recorded:
    /// its id. Refused when `run` has a log already: its first append fails, before anything
    /// else is done (another process started it).
    pub async fn start(
        self: &Arc<Self>,
        prepared: Prepared,
        run: RunId,
    ) -> Result<RunId, AppError> {
        if self.queueing {
            let engine = self
                .app
                .engine_for(&prepared)
                .with_ids(Arc::new(Chosen(run)));
            let run = prepared.enqueue(&engine).await?;
            self.counters.queued.fetch_add(1, Ordering::Relaxed);
            self.meter
                .started(&prepared.tenant, &run, SystemClock.now_ms());
            tracing::info!(run = %run, spec = %prepared.spec.id, "run queued");
            return Ok(run);
        }
        let permit = self.permit()?;
        let prepared_spec = prepared.spec.id.clone();
        let engine = self
            .app
            .engine_for(&prepared)
            .with_ids(Arc::new(Chosen(run.clone())));
        let (tx, rx) = oneshot::channel();
        self.watch(&engine, Some(tx), &prepared);
        self.counters.started.fetch_add(1, Ordering::Relaxed);
        let (failed_tx, failed_rx) = oneshot::channel();
        self.clone()
            .spawn_drive(run.clone(), prepared, engine, permit, Some(failed_tx));
        // Told it started before it was told it stopped: a run that started and ended (or
        // waits and was let go) before this look is started, not failed. A run that never
        // started drops its `started` unsent, and only its failure is taken.
        tokio::select! {
            biased;
            Ok(()) = rx => {
                tracing::info!(run = %run, spec = %prepared_spec, "run started");
                Ok(run)
            }
            failed = failed_rx => Err(failed.unwrap_or_else(|_| {
                AppError::Failed("the run stopped before it started".to_owned())
            })),
        }
    }

    /// Re-enters `run` (interrupted, or answered while no process held it) with what it
    /// recorded, and holds it; `by` is the principal who asked, if one did (the log names
    /// them when the re-entry records anything). `Ok(false)` when this server holds it
    /// already: it is woken to look at its log again.
    pub async fn reenter(
        self: &Arc<Self>,
        run: &RunId,
        by: Option<String>,
    ) -> Result<bool, AppError> {
        // A child is driven with its tree: its root is re-entered, and held.
        let root = warrant_engine::root_of(run);
        let run = &root;
        if self.wake_root(run) {
            return Ok(false);
        }
        if self.queueing {
            // A worker claims it: it is ready, or no process drives it.
            return Ok(true);
        }
        let permit = self.permit()?;
        self.app.check_floor(run).await?;
        let mut prepared = self.app.reentry(run).await?;
        prepared.resumed_by = by;
        let engine = self.app.engine_for(&prepared);
        self.watch(&engine, None, &prepared);
        // A queued run's first drive starts it here; any other entry re-enters it.
        if prepared.queued {
            self.counters.started.fetch_add(1, Ordering::Relaxed);
            tracing::info!(run = %run, "run taken up");
        } else {
            self.counters.reentered.fetch_add(1, Ordering::Relaxed);
            tracing::info!(run = %run, "run re-entered");
        }
        self.clone()
            .spawn_drive(run.clone(), prepared, engine, permit, None);
        Ok(true)
    }

    /// Re-enters every run no process drives that can go on (the `resume --all` set), in
    /// the background of the caller; returns how many were taken up.
    pub async fn reenter_all(self: &Arc<Self>) -> Result<usize, AppError> {
        if self.queueing {
            return Ok(0);
        }
        let mut taken = 0;
        for run in self.app.resumable().await? {
            taken += usize::from(self.take_up(&run).await);
        }
        Ok(taken)
    }

    /// Re-enters `run` for nobody in particular: whether a task here took it up now (a
    /// refusal is logged, and the run left as it is).
    async fn take_up(self: &Arc<Self>, run: &RunId) -> bool {
        match self.reenter(run, None).await {
            Ok(taken) => taken,
            Err(p) => {
                tracing::warn!(run = %run, problem = %p, "not re-entering");
                false
            }
        }
    }

    /// Takes up the runs answered by another process (`warrant approve`) whenever the store
    /// tells of its commits (`Leases::work_ready`), at most once per `ANSWERS_GAP` and at least
    /// once per `ANSWERS_LOOK`; never returns. Nothing to do for a supervisor that queues or
    /// lets runs go (the workers claim what is answered).
    pub async fn watch_answers(self: &Arc<Self>) {
        if self.queueing || self.letting_go {
            return std::future::pending().await;
        }
        let store = self.app.store().clone();
        loop {
            // Asked before the look, so a commit during it is told.
            let told = store.work_ready();
            if let Err(p) = self.sweep().await {
                tracing::warn!(problem = %p, "looking for answered runs failed");
            }
            tokio::select! {
                () = told => {}
                () = tokio::time::sleep(ANSWERS_LOOK) => {}
            }
            tokio::time::sleep(ANSWERS_GAP).await;
        }
    }

    /// Wakes the sleeping runs whose time came, looking every `TIMERS_LOOK`; never returns.
    /// Nothing to do for a supervisor that queues or lets runs go (workers claim them).
    pub async fn watch_timers(self: &Arc<Self>) {
        if self.queueing || self.letting_go {
            return std::future::pending().await;
        }
        loop {
            if let Err(p) = self.wake_due().await {
                tracing::warn!(problem = %p, "looking for sleeping runs to wake failed");
            }
            tokio::time::sleep(TIMERS_LOOK).await;
        }
    }

    /// Re-enters every sleeping run whose time has come (each wakes as it is re-entered),
    /// and every run let go while waiting whose approval expired (the re-entry records the
    /// expiry); how many were taken up.
    pub async fn wake_due(self: &Arc<Self>) -> Result<usize, AppError> {
        let now = SystemClock.now_ms();
        let query = warrant_core::ports::RunQuery {
            status: Some(warrant_core::RunStatus::Sleeping),
            due_by: Some(now),
            limit: 500,
            ..Default::default()
        };
        // A child is carried on by its root.
        let mut taken = self
            .reenter_listed(query, |r| !r.run_id.0.contains('.'))
            .await?;
        for run in self.expired_dormant(now) {
            let waiting = match self.app.store().summary(&run).await {
                Ok(summary) => summary,
                Err(e) => {
                    // Remembered again, for the next look.
                    tracing::warn!(run = %run, problem = %e, "looking at a run let go failed");
                    if let Ok(mut dormant) = self.dormant.lock() {
                        dormant.push(Reverse((now, run)));
                    }
                    continue;
                }
            };
            if waiting.is_none_or(|s| s.status != warrant_core::RunStatus::Waiting) {
                continue;
            }
            taken += usize::from(self.take_up(&run).await);
        }
        Ok(taken)
    }

    /// The runs let go while waiting whose approval expired by `now`, taken from those
    /// remembered.
    fn expired_dormant(&self, now: u64) -> Vec<RunId> {
        let Ok(mut dormant) = self.dormant.lock() else {
            return Vec::new();
        };
        let mut due = Vec::new();
        while dormant.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            if let Some(Reverse((_, run))) = dormant.pop() {
                due.push(run);
            }
        }
        due.sort();
        due.dedup();
        due
    }

    /// Remembers when each pending approval of a run this process does not hold expires
    /// (at start: runs that waited while no process held them), so that the expiry is
    /// recorded on time.
    pub async fn remember_expiries(&self) -> Result<(), AppError> {
        if self.queueing || self.letting_go {
            return Ok(());
        }
        let pending = self
            .app
            .store()
            .pending_approvals(None)
            .await
            .map_err(AppError::from)?;
        let Ok(mut dormant) = self.dormant.lock() else {
            return Ok(());
        };
        for a in pending {
            dormant.push(Reverse((
                a.expires_at_ms,
                warrant_engine::root_of(&a.run_id),
            )));
        }
        Ok(())
    }

    /// Re-enters each run `query` lists (page by page) that `take` accepts: how many were
    /// taken up here.
    async fn reenter_listed(
        self: &Arc<Self>,
        mut query: warrant_core::ports::RunQuery,
        take: impl Fn(&warrant_core::ports::RunSummary) -> bool,
    ) -> Result<usize, AppError> {
        let mut taken = 0;
        loop {
            let page = self.app.runs(query.clone()).await?;
            for r in page.runs.iter().filter(|r| take(r)) {
                taken += usize::from(self.take_up(&r.run_id).await);
            }
            match page.next {
                Some(next) => query.after = Some(next),
                None => return Ok(taken),
            }
        }
    }

    /// Takes up the runs answered while no task here was waiting on them, or wakes the one
    /// that is: answers recorded by another process (`warrant approve`).
    pub async fn sweep(self: &Arc<Self>) -> Result<(), AppError> {
        if self.queueing || self.letting_go {
            return Ok(());
        }
        let query = warrant_core::ports::RunQuery {
            status: Some(warrant_core::RunStatus::Ready),
            limit: 500,
            ..Default::default()
        };
        self.reenter_listed(query, |r| r.status == warrant_core::RunStatus::Ready)
            .await?;
        Ok(())
    }

    fn spawn_drive(
        self: Arc<Self>,
        run: RunId,
        prepared: Prepared,
        engine: Engine,
        permit: OwnedSemaphorePermit,
        failed: Option<oneshot::Sender<AppError>>,
    ) {
        let wake = Arc::new(Notify::new());
        if let Ok(mut h) = self.held.lock() {
            h.insert(run.clone(), wake.clone());
        }
        self.tasks.fetch_add(1, Ordering::SeqCst);
        #[expect(
            clippy::disallowed_methods,
            reason = "the run supervisor owns the tasks that drive its runs"
        )]
        tokio::spawn(async move {
            self.drive(&run, prepared, engine, &wake, failed).await;
            if let Ok(mut h) = self.held.lock() {
                // Unless it was let go and another task holds it now.
                if h.get(&run).is_some_and(|n| Arc::ptr_eq(n, &wake)) {
                    h.remove(&run);
                }
            }
            drop(permit);
            self.freed.notify_one();
            self.released.notify_waiters();
            if self.tasks.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.idle.notify_waiters();
            }
        });
    }

    /// Drives `run` until it ends, fails or the server stops, then ends its providers'
    /// connections in order.
    async fn drive(
        &self,
        run: &RunId,
        prepared: Prepared,
        engine: Engine,
        wake: &Notify,
        failed: Option<oneshot::Sender<AppError>>,
    ) {
        self.drive_while(run, &prepared, engine, wake, failed).await;
        prepared.shutdown().await;
    }

    async fn drive_while(
        &self,
        run: &RunId,
        prepared: &Prepared,
        engine: Engine,
        wake: &Notify,
        mut failed: Option<oneshot::Sender<AppError>>,
    ) {
        let mut stopping = self.stopping.subscribe();
        let mut result = prepared.drive(&engine).await;
        loop {
            let r = match result {
                Ok(r) => r,
                Err(e) => {
                    match failed.take() {
                        Some(tx) => {
                            let _ = tx.send(e);
                        }
                        None => tracing::error!(run = %run, error = %e, "the run stopped"),
                    }
                    return;
                }
            };
            if let Some(outcome) = &r.outcome {
                tracing::info!(run = %run, outcome = outcome.name(), "run ended");
            }
            // A sleeping run is held by the store, not here: the timers' look wakes it.
            let asleep = r.state.status() == warrant_core::RunStatus::Sleeping;
            if r.outcome.is_some() || asleep || *stopping.borrow() || self.letting_go {
                let _ = engine.drain_subscribers().await;
                return;
            }
            // It waits, its providers connected: until it is woken (an answer through the
            // API, or one another process recorded, which the sweep finds), until its first
            // pending approval expires (the next look records that), or until the server stops.
            let now = SystemClock.now_ms();
            let expires_ms = r.state.pending_approvals().map(|a| a.expires_at_ms).min();
            let look = expires_ms.map_or(WAIT_LOOK, |t| {
                Duration::from_millis(t.saturating_sub(now).saturating_add(50)).min(WAIT_LOOK)
            });
            let hold = self.hold.unwrap_or(WAIT_LOOK);
            tokio::select! {
                () = wake.notified() => {}
                () = tokio::time::sleep(look) => {}
                // Held long enough: let go, unless it was woken meanwhile.
                () = tokio::time::sleep(hold), if hold < look => {
                    if self.let_go(run, wake, expires_ms) {
                        tracing::debug!(run = %run, "a waiting run let go");
                        let _ = engine.drain_subscribers().await;
                        return;
                    }
                }
                _ = stopping.changed() => return,
            }
            result = prepared.resume(&engine, run).await;
        }
    }

    /// Stops taking runs and waits up to `grace` for the ones driving to reach a point where
    /// they wait or end; the rest are re-entered at the next start.
    pub async fn stop(&self, grace: Duration) {
        self.stopping.send_replace(true);
        let idle = async {
            while self.tasks.load(Ordering::SeqCst) > 0 {
                let notified = self.idle.notified();
                if self.tasks.load(Ordering::SeqCst) == 0 {
                    break;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(grace, idle).await;
    }
}

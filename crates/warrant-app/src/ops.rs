//! The operations on runs: start, re-enter, cancel, answer, reconcile; and the queries.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use warrant_core::event::Event;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{Clock, Decider, EventStore, RunPage, RunQuery, resolve_run_prefix};
use warrant_core::report::RunReport;
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, LogReader, PendingApproval, RunsIndex, SpecCatalog,
    StoreHealth,
};
use warrant_core::{ApprovalState, RunKind, RunState, RunStatus, Spec};
use warrant_engine::{Answer, Answered, Engine, RuleList, RunResult, Surfaces, SystemClock, lease};
use warrant_policy::Policies;

use crate::rows::{ApprovalRow, RunView};
use crate::{AppError, Deciders, Result, providers};

/// How long execution control has to rule when neither the flag's spec says.
const CONTROL_TIMEOUT_MS: u64 = 2_000;

/// Most waiting runs looked through for what they wait on ([`App::pending_questions`],
/// [`App::in_doubt`]): the newest ones.
const WAITING_LOOKED: usize = 500;

/// What the waiting runs wait on in doubt ([`App::in_doubt`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InDoubt {
    /// Runs with a call in doubt.
    pub runs: u64,
    /// Calls in doubt.
    pub calls: u64,
}

/// A question waiting for a person's answer, with the run that asked it and whom it acts for.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct PendingQuestion {
    /// The run.
    pub run_id: RunId,
    /// Its tenant.
    pub tenant: String,
    /// Whom it acts for.
    pub user: String,
    /// The question.
    #[serde(flatten)]
    pub question: warrant_core::fold::Question,
}

impl PendingQuestion {
    fn of(run: RunId, state: &RunState, question: warrant_core::fold::Question) -> Self {
        let p = state.principal();
        PendingQuestion {
            run_id: run,
            tenant: p.tenant.clone(),
            user: p.user.clone(),
            question,
        }
    }
}

/// The tenant of a run that recorded none (started by the CLI, or before tenants).
pub const LOCAL_TENANT: &str = "local";

/// What a person adds to a new run beyond its spec.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// `kind:argument`; the spec's default decider when `None`.
    pub decider: Option<String>,
    /// Tools every call to is denied.
    pub deny_tools: Vec<String>,
    /// Tools every call to needs a person's approval.
    pub ask_tools: Vec<String>,
    /// Policy files ruling together with the spec's (read as one policy set with them: the
    /// CLI's `--policy`, its user's own).
    pub policies: Vec<PathBuf>,
    /// Policy files a caller of a front door added: obeyed besides the spec's, so they can
    /// only narrow what it allows.
    pub narrowing: Vec<PathBuf>,
    /// Policy files of the operator's floor for this run's tenant, obeyed besides the floor
    /// every run obeys.
    pub floor: Vec<PathBuf>,
    /// An execution control to require, instead of the spec's.
    pub execution_control: Option<String>,
    /// Who the run acts for.
    pub tenant: String,
    /// Who the run acts for.
    pub user: String,
    /// The values of the spec's inputs (checked against their schemas before anything
    /// starts).
    pub inputs: std::collections::BTreeMap<String, serde_json::Value>,
    /// Where the spec's in-process (`reference`) providers are reached.
    pub lane: Lane,
}

/// Where a spec's in-process (`reference`) providers are reached: the spec is the same on
/// both lanes, and so are its routes, carried values and verdicts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lane {
    /// In process (the reference lane).
    #[default]
    Reference,
    /// As WebMCP pages this process serves on a loopback port, in a headless Chromium (the
    /// browser lane).
    Browser,
}

/// A run ready to go: its spec, decider and providers, checked before anything is written.
pub struct Prepared {
    /// The run being re-entered, or `None` for a new one.
    pub run: Option<RunId>,
    /// Its spec.
    pub spec: Arc<Spec>,
    /// Its decider.
    pub decider: Box<dyn Decider>,
    /// Its providers, reached.
    pub surfaces: Surfaces,
    options: RunOptions,
    begun_ms: u64,
    /// Who asked for this re-entry (`tenant/user`), recorded in its `run_resumed`.
    pub resumed_by: Option<String>,
    /// A queued run that nothing drove yet: its first driving takes it up (`run_taken_up`),
    /// it does not resume it.
    pub queued: bool,
    /// The tenant the run acts for.
    pub tenant: String,
    /// The browser lane's pages, served while the run is prepared.
    lane: Option<warrant_surfaces::webmcp::BrowserLane>,
}

impl Prepared {
    /// Everything a new run of `spec` needs, checked before any store is opened: the
    /// decider, the policies (the spec's and `options.policies`), the execution control, the
    /// providers reached and, for rules by tool name, that they offer the tools named.
    pub async fn new(
        deciders: &Deciders,
        spec: Spec,
        spec_path: &Path,
        options: RunOptions,
    ) -> Result<Prepared> {
        Prepared::checked(deciders, spec, spec_path, options, true).await
    }

    /// The same checks for a run only to be queued (a fleet's server records it for a
    /// worker): its providers are not started here — the worker that drives it reaches them
    /// — so queueing costs no process and no connection. Rules by tool name are recorded
    /// unchecked against what the providers offer.
    pub async fn to_queue(
        deciders: &Deciders,
        spec: Spec,
        spec_path: &Path,
        options: RunOptions,
    ) -> Result<Prepared> {
        Prepared::checked(deciders, spec, spec_path, options, false).await
    }

    async fn checked(
        deciders: &Deciders,
        mut spec: Spec,
        spec_path: &Path,
        options: RunOptions,
        connect: bool,
    ) -> Result<Prepared> {
        let begun_ms = SystemClock.now_ms();
        // The operator's providers it names, pinned to the definitions it starts with.
        deciders.registry().pin(&mut spec)?;
        let mut options = options;
        options.inputs = given_inputs(&spec, std::mem::take(&mut options.inputs))?;
        let decider = match &options.decider {
            Some(d) => deciders.load(d, None, &spec)?,
            None => deciders.default_for(&spec, spec_path)?,
        };
        check_policies(&spec, &options.policies)?;
        if !options.narrowing.is_empty() {
            let files =
                warrant_policy::policy_files(&options.narrowing).map_err(AppError::invalid)?;
            warrant_policy::CedarAuthority::new(files, spec.trusted_providers())
                .map_err(AppError::invalid)?;
        }
        if let Some(url) = &options.execution_control {
            warrant_policy::HttpControl::new(url).map_err(AppError::invalid)?;
        }
        let lane = match options.lane {
            Lane::Reference => None,
            Lane::Browser if !connect => {
                return Err(AppError::invalid(
                    "a run on the browser lane is driven where it starts: it cannot be queued",
                ));
            }
            Lane::Browser => Some(
                warrant_surfaces::webmcp::BrowserLane::start(
                    &warrant_surfaces::ReferenceCatalog::default(),
                    &spec,
                )
                .await
                .map_err(AppError::invalid)?,
            ),
        };
        let surfaces = if connect {
            providers::connect_on(
                &spec,
                deciders.registry(),
                providers::start_bound(&spec, 0),
                lane.as_ref()
                    .map(warrant_surfaces::webmcp::BrowserLane::base),
            )
            .await?
        } else {
            warrant_engine::Surfaces::new()
        };
        if connect && (!options.deny_tools.is_empty() || !options.ask_tools.is_empty()) {
            let offered = providers::observe_all(&spec, &surfaces).await?;
            // Rules by tool name rule the children too: a tool a child's steps allow counts.
            let in_tree = child_tools(&spec);
            let outside = |tools: &[String]| -> Vec<String> {
                tools
                    .iter()
                    .filter(|t| !in_tree.contains(*t))
                    .cloned()
                    .collect()
            };
            providers::check_rule_tools(
                &offered,
                &outside(&options.deny_tools),
                &outside(&options.ask_tools),
            )?;
        }
        Ok(Prepared {
            run: None,
            spec: Arc::new(spec),
            decider,
            surfaces,
            tenant: options.tenant.clone(),
            options,
            begun_ms,
            resumed_by: None,
            queued: false,
            lane,
        })
    }

    /// On the browser lane: what its pages did (successful calls by provider and tool).
    pub fn lane_ledger(
        &self,
    ) -> Option<std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>> {
        self.lane
            .as_ref()
            .map(warrant_surfaces::webmcp::BrowserLane::ledger)
    }

    /// Starts the run (or re-enters it), recording the time spent getting here, and drives it
    /// as far as it goes with `engine` (from [`App::engine_for`]).
    pub async fn drive(&self, engine: &Engine) -> Result<RunResult> {
        let setup_ms = Some(SystemClock.now_ms().saturating_sub(self.begun_ms));
        match &self.run {
            None => {
                engine
                    .run_with_setup(
                        self.spec.clone(),
                        self.decider.as_ref(),
                        &self.surfaces,
                        setup_ms,
                    )
                    .await
            }
            Some(id) => {
                engine
                    .resume_with_setup(
                        id,
                        self.decider.as_ref(),
                        &self.surfaces,
                        setup_ms,
                        self.resumed_by.clone(),
                    )
                    .await
            }
        }
        .map_err(AppError::from)
    }

    /// Records this new run and leaves it for a worker (a fleet's server queues runs so):
    /// its id.
    pub async fn enqueue(&self, engine: &Engine) -> Result<RunId> {
        let setup_ms = Some(SystemClock.now_ms().saturating_sub(self.begun_ms));
        if self.run.is_some() {
            return Err(AppError::failed("only a new run can be queued"));
        }
        engine
            .enqueue(self.spec.clone(), self.decider.as_ref(), setup_ms)
            .await
            .map_err(AppError::from)
    }

    /// Ends the providers' connections in order (a stdio server: its input closed, a wait,
    /// SIGTERM, SIGKILL): what every front door does once nothing more will be asked of them.
    pub async fn shutdown(&self) {
        warrant_engine::shutdown(&self.surfaces).await;
    }

    /// Carries `run` on after a person answered it here.
    pub async fn resume(&self, engine: &Engine, run: &RunId) -> Result<RunResult> {
        engine
            .resume(run, self.decider.as_ref(), &self.surfaces)
            .await
            .map_err(AppError::from)
    }
}

/// What became of a cancellation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// The run had ended already, with this status.
    AlreadyEnded(RunStatus),
    /// It is cancelled now.
    Cancelled,
    /// It ended otherwise (this status) before the cancellation took effect.
    EndedFirst(RunStatus),
    /// The request is recorded; the process driving it has not acted on it yet.
    Pending {
        /// That process.
        holder: String,
    },
}

/// Where an approval request stands once it is no longer pending for whoever asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elsewhere {
    /// Someone else answered it, or it expired or was withdrawn.
    Settled(ApprovalState),
    /// The run's log no longer names it.
    Gone,
}

impl std::fmt::Display for Elsewhere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Elsewhere::Settled(s) => s.fmt(f),
            Elsewhere::Gone => f.write_str("gone"),
        }
    }
}

/// What an operator found out about a call in doubt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconciled {
    /// It happened (else it did not).
    pub happened: bool,
    /// It did not happen and is to be sent again.
    pub resend: bool,
}

/// The values `given` for `spec`'s inputs, checked: every one declared and every declared
/// one given (or defaulted by its schema), each valid against its schema. Errors name the
/// input and what is wrong.
pub(crate) fn given_inputs(
    spec: &Spec,
    mut given: std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<std::collections::BTreeMap<String, serde_json::Value>> {
    let mut problems = Vec::new();
    for name in given.keys() {
        if !spec.inputs.contains(name) {
            let declared: Vec<String> = spec.inputs.names().map(|n| format!("`{n}`")).collect();
            problems.push(format!(
                "inputs.{name}: the spec takes no input `{name}` (it takes: {})",
                if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                }
            ));
        }
    }
    for (name, schema) in spec.inputs.iter() {
        if !given.contains_key(name)
            && let Some(default) = schema.and_then(|s| s.get("default"))
        {
            given.insert(name.clone(), default.clone());
        }
        let Some(value) = given.get(name) else {
            problems.push(format!("inputs.{name}: the spec needs a value for it"));
            continue;
        };
        let Some(schema) = schema else {
            continue;
        };
        match jsonschema::validator_for(schema) {
            Err(e) => problems.push(format!(
                "inputs.{name}: the spec's schema for it does not compile: {e}"
            )),
            Ok(v) => {
                let errors = warrant_engine::schema_errors(&v, value);
                if !errors.is_empty() {
                    problems.push(format!("inputs.{name}: {}", errors.join("; ")));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(given)
    } else {
        Err(AppError::invalid(problems.join("\n")))
    }
}

/// Checks that the policy files `paths` load, as `what` (a floor that would not load would
/// run nothing).
pub fn check_policy_files(paths: &[PathBuf], what: &str) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let files = warrant_policy::policy_files(paths)
        .map_err(|e| AppError::invalid(format!("{what}: {e}")))?;
    warrant_policy::CedarAuthority::new(files, std::collections::BTreeSet::new())
        .map_err(|e| AppError::invalid(format!("{what}: {e}")))?;
    Ok(())
}

/// The operations over one store.
#[derive(Clone)]
pub struct App {
    store: Arc<dyn EventStore>,
    deciders: Deciders,
    /// The operator's policy floor: Cedar files every new run obeys besides its own rules.
    floor: Arc<[PathBuf]>,
    /// Whether a run's starter may approve its requests.
    self_approval: bool,
    /// How this process names itself on the leases it holds (`pid <pid>@<host>`, with a
    /// worker's name after it).
    holder: Arc<str>,
    /// The build new runs name in their `run_started`, if the front door said.
    build: Option<warrant_core::event::BuildInfo>,
    /// The tenant each run acts for, as read once (it never changes).
    tenants: Arc<std::sync::Mutex<std::collections::HashMap<RunId, String>>>,
    /// What people and operators answered through this process.
    pub answers: Arc<Answers>,
    /// What this process's webhooks delivered (`crate::webhooks::Deliverer`).
    pub deliveries: Arc<crate::webhooks::Deliveries>,
    /// Renews the leases of every run this process waits in, together: each run or session
    /// has an engine of its own, and they all share this.
    keeper: warrant_engine::LeaseKeeper,
}

/// What people and operators answered through one process (`/metrics`): counted where each
/// answer is recorded, whichever process drives the run.
#[derive(Debug)]
pub struct Answers {
    /// Approval requests answered, by answer (`approved`, `denied`; `expired` where the
    /// process driving the run found one out of time).
    pub approvals: warrant_core::metrics::Counts<1>,
    /// How long each answered request had waited, from its request to its answer.
    pub approval_wait: warrant_core::metrics::Histogram,
    /// Calls in doubt reconciled, by what was found (`happened`, `not_performed`, `resent`).
    pub reconciled: warrant_core::metrics::Counts<1>,
}

impl Default for Answers {
    fn default() -> Answers {
        Answers {
            approvals: warrant_core::metrics::Counts::default(),
            approval_wait: warrant_core::metrics::Histogram::over(
                &warrant_core::metrics::WAIT_BOUNDS_US,
            ),
            reconciled: warrant_core::metrics::Counts::default(),
        }
    }
}

impl Answers {
    /// An approval request answered `answer` after waiting `waited_ms` (when known).
    pub fn approval(&self, answer: ApprovalState, waited_ms: Option<u64>) {
        self.approvals.add([answer.name()], 1);
        if let Some(ms) = waited_ms {
            self.approval_wait.record(Duration::from_millis(ms));
        }
    }
}

impl App {
    /// Operations over `store`, building deciders with `deciders`.
    pub fn new(store: Arc<dyn EventStore>, deciders: Deciders) -> App {
        App {
            store,
            deciders,
            floor: Arc::from([]),
            self_approval: true,
            holder: Arc::from(format!(
                "pid {}@{}",
                std::process::id(),
                warrant_engine::lease::host()
            )),
            build: None,
            tenants: Arc::default(),
            answers: Arc::default(),
            deliveries: Arc::default(),
            keeper: warrant_engine::LeaseKeeper::default(),
        }
    }

    /// The tenant `run` acts for (`local` for a run that recorded none); `None` when no such
    /// run is in the store. Read once from its `run_started`, then remembered.
    pub async fn tenant_of(&self, run: &RunId) -> Result<Option<String>> {
        if let Some(t) = self.tenants.lock().ok().and_then(|t| t.get(run).cloned()) {
            return Ok(Some(t));
        }
        let first = self.store.read(run, 1).await.map_err(AppError::from)?;
        let Some(tenant) = first.first().and_then(|e| match &e.event.kind {
            warrant_core::EventKind::RunStarted { principal, .. } => Some(
                principal
                    .as_ref()
                    .map_or_else(|| LOCAL_TENANT.to_owned(), |p| p.tenant.clone()),
            ),
            _ => None,
        }) else {
            return Ok(None);
        };
        self.knows_tenant(run, &tenant);
        Ok(Some(tenant))
    }

    /// Remembers that `run` (just started here) acts for `tenant`.
    pub fn knows_tenant(&self, run: &RunId, tenant: &str) {
        if let Ok(mut t) = self.tenants.lock() {
            t.insert(run.clone(), tenant.to_owned());
        }
    }

    /// The run `id` names, when `tenant` may see it: a tenant sees its own runs only, and
    /// another's is not found (as if absent: ids do not leak).
    pub async fn visible(&self, id: &str, tenant: &str) -> Result<RunId> {
        let run = RunId(id.to_owned());
        let not_found = || AppError::NotFound(format!("no run `{}`", warrant_core::text::echo(id)));
        if id.is_empty() || id.len() > 128 {
            return Err(not_found());
        }
        match self.tenant_of(&run).await? {
            Some(t) if t == tenant => Ok(run),
            _ => Err(not_found()),
        }
    }

    /// The same, with every new run naming `build` in its `run_started` (the front door's
    /// own build: which program started the run).
    pub fn with_build(mut self, build: warrant_core::event::BuildInfo) -> App {
        self.build = Some(build);
        self
    }

    /// The same, with this process's leases naming it `name` too (a worker's `--name`).
    pub fn named(mut self, name: &str) -> App {
        self.holder = Arc::from(format!("{} ({name})", self.holder));
        self
    }

    /// The same, with every new run obeying the Cedar policies `floor` besides its own rules
    /// (checked first): the operator's floor (`--policy` on `serve`, `worker`, `gateway`).
    pub fn with_floor(mut self, floor: Vec<PathBuf>) -> Result<App> {
        check_policy_files(&floor, "--policy")?;
        self.floor = Arc::from(floor);
        Ok(self)
    }

    /// The same, with a run's starter allowed to approve its requests or not (a server for
    /// others says no, unless its operator says yes).
    pub fn with_self_approval(mut self, allowed: bool) -> App {
        self.self_approval = allowed;
        self
    }

    /// The operator's policy floor.
    pub fn floor(&self) -> &[PathBuf] {
        &self.floor
    }

    /// How this process names itself on the leases it holds.
    pub fn holder(&self) -> &Arc<str> {
        &self.holder
    }

    /// How it builds deciders (with the operator's registry).
    pub fn deciders(&self) -> &Deciders {
        &self.deciders
    }

    /// The store, for this crate's own supervision (its leases and notifications). A front
    /// door asks for the role it uses: [`App::log_reader`], [`App::runs_index`], [`App::approvals_index`],
    /// [`App::spec_catalog`], [`App::keys`], [`App::health`].
    pub(crate) fn store(&self) -> &Arc<dyn EventStore> {
        &self.store
    }

    /// The store's log, to read and to follow (a front door's event stream).
    pub fn log_reader(&self) -> &dyn LogReader {
        &*self.store
    }

    /// The store's index of runs: summaries, pages by status, a tenant's recent spend.
    pub fn runs_index(&self) -> &dyn RunsIndex {
        &*self.store
    }

    /// The store's index of approval requests.
    pub fn approvals_index(&self) -> &dyn ApprovalsIndex {
        &*self.store
    }

    /// The operator's catalog of frozen specs, kept in the store.
    pub fn spec_catalog(&self) -> &dyn SpecCatalog {
        &*self.store
    }

    /// The store's idempotency keys (a server's `Idempotency-Key`).
    pub fn keys(&self) -> &dyn IdempotencyKeys {
        &*self.store
    }

    /// What the store says of its own health (commit latency, failed copies of its log).
    pub fn health(&self) -> &dyn StoreHealth {
        &*self.store
    }

    /// An engine over the store that builds and rebuilds the policies runs name; a new run
    /// obeys the operator's floor.
    pub(crate) fn engine(&self) -> Engine {
        self.engine_with_floor(&[])
    }

    /// The engine a gateway's session of `tenant`'s `user` is driven by: a new run obeys the
    /// operator's floor, its principal is theirs.
    pub fn engine_acting_for(&self, tenant: &str, user: &str) -> Engine {
        self.engine().acting_for(tenant, user)
    }

    /// Asks the process driving `run` to cancel it (`by`, `reason` recorded): the request is
    /// kept in the store, and the driver acts on it at its next look.
    pub async fn ask_to_cancel(&self, run: &RunId, by: &str, reason: &str) -> Result<()> {
        self.engine().cancel(run, by, reason).await?;
        Ok(())
    }

    /// The same, with a new run obeying `more` of the floor too (a tenant's own).
    fn engine_with_floor(&self, more: &[PathBuf]) -> Engine {
        let engine = match &self.build {
            Some(build) => Engine::new(self.store.clone()).with_build(build.clone()),
            None => Engine::new(self.store.clone()),
        };
        engine
            .with_holder(&self.holder)
            .with_lease_keeper(self.keeper.clone())
            .with_policies(Arc::new(Policies))
            .with_floor(
                self.floor
                    .iter()
                    .chain(more)
                    .map(|p| p.display().to_string())
                    .collect(),
            )
            .with_self_approval(self.self_approval)
            .with_children(Arc::new(providers::Children {
                deciders: self.deciders.clone(),
            }))
    }

    /// The engine to drive `prepared` with: the person's rules for a new run on top of the
    /// spec's; a re-entered run is ruled by what it recorded.
    pub fn engine_for(&self, prepared: &Prepared) -> Engine {
        let o = &prepared.options;
        let mut engine = self.engine_with_floor(&o.floor);
        if prepared.run.is_some() {
            return engine;
        }
        if !o.narrowing.is_empty() {
            engine = engine.with_narrowing(
                o.narrowing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
            );
        }
        if !o.inputs.is_empty() {
            engine = engine.with_inputs(o.inputs.clone());
        }
        if !o.deny_tools.is_empty() || !o.ask_tools.is_empty() {
            engine = engine.with_authority(Arc::new(RuleList::new(
                o.deny_tools.iter().cloned(),
                o.ask_tools.iter().cloned(),
            )));
        }
        if !o.policies.is_empty() {
            engine = engine
                .with_policy_files(o.policies.iter().map(|p| p.display().to_string()).collect());
        }
        if let Some(url) = &o.execution_control {
            let timeout_ms = prepared
                .spec
                .execution_control
                .as_ref()
                .map_or(CONTROL_TIMEOUT_MS, |c| c.timeout_ms);
            // Checked when prepared: it builds.
            if let Ok(control) = warrant_policy::HttpControl::new(url) {
                engine = engine.with_execution_control(Some(Arc::new(control)), timeout_ms);
            }
        }
        engine.acting_for(&o.tenant, &o.user)
    }

    /// What re-entering `run` needs: its recorded decider (built again, unchanged) and its
    /// providers reached again. Refused for a log this build cannot fully read.
    pub async fn reentry(&self, run: &RunId) -> Result<Prepared> {
        // A child is driven with its tree: re-entering it is re-entering its root.
        let root = warrant_engine::root_of(run);
        let run = &root;
        let begun_ms = SystemClock.now_ms();
        let events = self.log(run).await?;
        let state = fold(run, &events)?;
        warrant_engine::understood(run, &state).map_err(AppError::invalid)?;
        let (Some(spec), Some(identity)) = (state.shared_spec().cloned(), state.decider()) else {
            return Err(AppError::failed(format!(
                "run `{run}` has no `run_started`"
            )));
        };
        let decider = self.deciders.recorded(identity, &spec)?;
        // Its providers not starting now leaves the run as it was: interrupted, to resume.
        let surfaces = providers::connect(
            &spec,
            self.deciders.registry(),
            providers::start_bound(&spec, state.driven_ms(state.last_at_ms())),
        )
        .await
        .map_err(|e| {
            AppError::Interrupted(format!(
                "run `{run}` cannot go on now: {e}; nothing was recorded, and `warrant resume \
                 {run}` tries again"
            ))
        })?;
        Ok(Prepared {
            run: Some(run.clone()),
            spec,
            decider,
            surfaces,
            options: RunOptions::default(),
            begun_ms,
            resumed_by: None,
            queued: state.last_seq() == 1,
            tenant: state.principal().tenant.clone(),
            // A run re-entered goes on on the reference lane: its in-process providers are
            // reached in process (the pages a browser lane served ended with its process).
            lane: None,
        })
    }

    /// Refuses `run` when this process has a policy floor and the run did not record one
    /// holding every policy of it (a server that queued it without the floor, say): a
    /// worker never drives a run under less than the floor it was given.
    pub async fn check_floor(&self, run: &RunId) -> Result<()> {
        if self.floor.is_empty() {
            return Ok(());
        }
        let ours = warrant_policy::policy_files(&self.floor).map_err(AppError::invalid)?;
        let first = self
            .store
            .read(&warrant_engine::root_of(run), 1)
            .await
            .map_err(AppError::from)?;
        let recorded = first.first().and_then(|e| match &e.event.kind {
            warrant_core::event::EventKind::RunStarted { authority, .. } => authority.clone(),
            _ => None,
        });
        let mut texts = Vec::new();
        if let Some(d) = &recorded {
            floor_texts(d, false, &mut texts);
        }
        match ours.iter().find(|f| !texts.contains(&f.text.as_str())) {
            None => Ok(()),
            Some(missing) => Err(AppError::invalid(format!(
                "run `{run}` was started without the operator's policy floor this process \
                 obeys (`{}` is not in what it recorded): not driving it under less",
                missing.name
            ))),
        }
    }

    /// Adds `spec` (read from `spec_path`, its paths frozen) to the store's catalog, as
    /// `by`: the entry, and whether that version is new.
    pub async fn catalog_add(
        &self,
        spec: Spec,
        spec_path: &Path,
        by: &str,
    ) -> Result<(warrant_core::ports::CatalogEntry, bool)> {
        validate(&self.deciders, &spec, spec_path, false).await?;
        let entry = warrant_core::ports::CatalogEntry {
            id: spec.id.clone(),
            digest: spec.hash(),
            spec: Arc::new(spec),
            added_at_ms: SystemClock.now_ms(),
            added_by: by.to_owned(),
            retired_at_ms: None,
        };
        let new = self
            .store
            .catalog_add(entry.clone())
            .await
            .map_err(AppError::from)?;
        Ok((entry, new))
    }

    /// The spec the store's catalog holds as `id`: version `digest` (a full digest or a
    /// prefix of one), else the newest; never a retired version.
    pub async fn catalog_spec(&self, id: &str, digest: Option<&str>) -> Result<Spec> {
        let versions = self.store.catalog(Some(id)).await.map_err(AppError::from)?;
        let chosen = match digest {
            Some(d) => {
                let matching: Vec<_> = versions
                    .iter()
                    .filter(|e| {
                        e.digest == d
                            || e.digest
                                .trim_start_matches("sha256:")
                                .starts_with(d.trim_start_matches("sha256:"))
                    })
                    .collect();
                match matching.as_slice() {
                    [one] => Some(*one),
                    [] => None,
                    _ => {
                        return Err(AppError::invalid(format!(
                            "spec_digest `{d}` names several versions of `{id}`: give more of it"
                        )));
                    }
                }
            }
            None => versions.iter().find(|e| e.retired_at_ms.is_none()),
        };
        match chosen {
            None if digest.is_none() && !versions.is_empty() => Err(AppError::invalid(format!(
                "spec_id: `{id}` is retired (every version): it starts no new run"
            ))),
            None => Err(AppError::invalid(format!(
                "spec_id: the catalog has no {}`{id}`",
                if digest.is_some() {
                    "such version of "
                } else {
                    "spec "
                }
            ))),
            Some(e) if e.retired_at_ms.is_some() => Err(AppError::invalid(format!(
                "spec_id: `{id}` version {} is retired: it starts no new run",
                e.digest
            ))),
            Some(e) => Ok((*e.spec).clone()),
        }
    }

    /// Re-enters `run` with what it recorded and drives it as far as it goes.
    pub async fn reenter(&self, run: &RunId) -> Result<RunResult> {
        let prepared = self.reentry(run).await?;
        let driven = prepared.drive(&self.engine_for(&prepared)).await;
        prepared.shutdown().await;
        driven
    }

    /// The run `text` names: `last`, a full id or a prefix of one. An empty one is refused:
    /// as a prefix it would match every run.
    pub async fn resolve(&self, text: &str) -> Result<RunId> {
        if text.trim().is_empty() {
            return Err(AppError::invalid(
                "the run id is empty: give a run id, a unique prefix of one, or `last` \
                 (`warrant runs` lists them)",
            ));
        }
        let query = RunQuery {
            id_prefix: (text != "last").then(|| text.to_owned()),
            // Enough to see a root with its children (a prefix of a root names the root).
            limit: if text == "last" { 1 } else { 64 },
            ..RunQuery::default()
        };
        let page = self.store.runs(query).await.map_err(AppError::from)?;
        if text == "last" {
            // The newest run's tree, by its root: a child is shown with its tree.
            return page
                .runs
                .first()
                .map(|r| warrant_engine::root_of(&r.run_id))
                .ok_or_else(|| AppError::invalid("no runs yet: the store is empty"));
        }
        resolve_run_prefix(&page.runs, text).map_err(AppError::invalid)
    }

    /// The approval request `text` names, as `<run>-a<n>` where `<run>` is what
    /// [`App::resolve`] takes (`last`, a full run id or a unique prefix of one): the request's
    /// full id.
    pub async fn resolve_request(&self, text: &str) -> Result<String> {
        let shown = warrant_core::text::echo(text);
        let not_one = || {
            AppError::invalid(format!(
                "`{shown}` is not an approval request id: write `<run>-a<n>` as `warrant approvals` \
                 lists it, where <run> is a run id, a unique prefix of one, or `last` (e.g. `last-a1`)"
            ))
        };
        let (run, n) = text.rsplit_once("-a").ok_or_else(not_one)?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || run.trim().is_empty() {
            return Err(not_one());
        }
        let run = self.resolve(run).await?;
        Ok(format!("{run}-a{n}"))
    }

    /// `run`'s log.
    pub async fn log(&self, run: &RunId) -> Result<Vec<Arc<Event>>> {
        let events = self.store.read(run, 1).await.map_err(|e| {
            // Name the run the read was for, unless the store's words already do.
            AppError::from(e).map_message(|m| {
                if m.contains(&run.0) {
                    m
                } else {
                    format!("reading run `{run}`: {m}")
                }
            })
        })?;
        if events.is_empty() {
            return Err(AppError::NotFound(format!("no run `{run}` in the store")));
        }
        Ok(events.into_iter().map(|s| s.event).collect())
    }

    /// The runs `query` asks for, each with the status every reader shows (`queued` or
    /// `interrupted` for a running one no process drives). Those two are asked for as such:
    /// the running runs no process drives, never taken up or stopped midway.
    pub async fn runs(&self, query: RunQuery) -> Result<RunPage> {
        // `running` runs are shown `queued` or `interrupted` when no process drives them.
        let derived = query.status.filter(|s| {
            matches!(
                s,
                RunStatus::Running | RunStatus::Queued | RunStatus::Interrupted
            )
        });
        let limit = query.limit;
        let asked = match derived {
            // Statuses the store does not hold: derived from `running` and the lease.
            Some(s) if !s.is_stored() => RunQuery {
                status: Some(RunStatus::Running),
                limit: 0,
                after: None,
                ..query
            },
            _ => query,
        };
        let mut page = self.store.runs(asked).await.map_err(AppError::from)?;
        let now = SystemClock.now_ms();
        for r in &mut page.runs {
            r.status = lease::shown_status(r, now);
        }
        if let Some(wanted) = derived {
            page.runs.retain(|r| r.status == wanted);
            if !wanted.is_stored() && limit > 0 {
                page.runs.truncate(limit);
            }
        }
        Ok(page)
    }

    /// The runs no process drives that can go on: interrupted ones and answered ones.
    pub async fn resumable(&self) -> Result<Vec<RunId>> {
        let now = SystemClock.now_ms();
        let mut out = Vec::new();
        let mut query = RunQuery {
            limit: 500,
            ..RunQuery::default()
        };
        loop {
            let page = self
                .store
                .runs(query.clone())
                .await
                .map_err(AppError::from)?;
            out.extend(
                page.runs
                    .iter()
                    // A child is carried on with its tree, by its root (which a child's
                    // answer makes ready).
                    .filter(|r| !r.run_id.0.contains('.') && lease::resumable(r, now))
                    // A gateway session answered while its gateway waits on it is the
                    // gateway's to carry on (its client waits for the answer there); one
                    // interrupted is anyone's to close.
                    .filter(|r| !(r.status == RunStatus::Ready && r.kind() == RunKind::Session))
                    .map(|r| r.run_id.clone()),
            );
            match page.next {
                Some(next) => query.after = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// `run`'s report, from its log.
    pub async fn report(&self, run: &RunId) -> Result<RunReport> {
        let events = self.log(run).await?;
        RunReport::from_events(&events).map_err(|e| AppError::failed(format!("run `{run}`: {e}")))
    }

    /// `run` as `show` gives it.
    pub async fn show(&self, run: &RunId) -> Result<RunView> {
        Ok(self.snapshot(run).await?.0)
    }

    /// `run` as `show` gives it, its report and its log, all from one reading of the log: a
    /// page built from them never contradicts itself.
    pub async fn snapshot(
        &self,
        run: &RunId,
    ) -> Result<(RunView, RunReport, Vec<Arc<warrant_core::Event>>)> {
        let events = self.log(run).await?;
        let state = fold(run, &events)?;
        let report = RunReport::from_events(&events)
            .map_err(|e| AppError::failed(format!("run `{run}`: {e}")))?;
        let (status, note) = self.status_and_note(run, &state).await;
        let mut view = RunView::new(report.clone(), &state, &events, status);
        view.note = note;
        if state.waiting_since_ms().is_some() && state.outcome().is_none() {
            // Still waiting: up to now.
            view.waiting_ms = state.waited_ms(SystemClock.now_ms());
        }
        Ok((view, report, events))
    }

    /// The status every reader shows for `run`: its log's, or `queued` / `interrupted` when
    /// it runs and no process drives it; and why a run nobody drives has not been taken up
    /// yet, when a worker said.
    async fn status_and_note(&self, run: &RunId, state: &RunState) -> (RunStatus, Option<String>) {
        let folded = state.status();
        let summary = self.store.summary(run).await.ok().flatten();
        let now = SystemClock.now_ms();
        // The log's status stands unless no process drives the run: the summary may already
        // be past the log that was read.
        match summary {
            Some(s) if folded == RunStatus::Running && lease::interrupted(&s, now) => {
                (lease::shown_status(&s, now), s.note)
            }
            _ => match state.sleeping_until() {
                Some(until) => (
                    folded,
                    Some(format!(
                        "asleep until {}{}",
                        warrant_core::timer::rfc3339(until),
                        if until <= now {
                            ": its time has come, and the next process to look wakes it"
                        } else {
                            ""
                        }
                    )),
                ),
                None => (folded, None),
            },
        }
    }

    /// Approval requests: every one of `run` (answered or not); or, with `None`, the pending
    /// ones of every run. A request unanswered past its time is `expired` whether or not a
    /// process recorded that yet.
    pub async fn approvals(&self, run: Option<&RunId>) -> Result<Vec<ApprovalRow>> {
        let now = SystemClock.now_ms();
        let Some(run) = run else {
            let pending = self
                .store
                .pending_approvals(None)
                .await
                .map_err(AppError::from)?;
            // A child's asks are listed with its tree: grouped by root, then by run.
            let mut rows: Vec<ApprovalRow> = pending
                .into_iter()
                .filter(|a| now < a.expires_at_ms)
                .map(|a| ApprovalRow::new(a, ApprovalState::Pending))
                .collect();
            rows.sort_by(|a, b| {
                (warrant_engine::root_of(&a.run), &a.run.0)
                    .cmp(&(warrant_engine::root_of(&b.run), &b.run.0))
            });
            return Ok(rows);
        };
        let events = self.log(run).await?;
        let state = fold(run, &events)?;
        // The asks of the run's descendants route up to it: pending ones are listed with its
        // own, each naming its run and parent.
        let prefix = format!("{run}.");
        let descendants: Vec<ApprovalRow> = if state.children().next().is_some() {
            self.store
                .pending_approvals(None)
                .await
                .map_err(AppError::from)?
                .into_iter()
                .filter(|a| a.run_id.0.starts_with(&prefix) && now < a.expires_at_ms)
                .map(|a| ApprovalRow::new(a, ApprovalState::Pending))
                .collect()
        } else {
            Vec::new()
        };
        let own: Vec<ApprovalRow> = events
            .iter()
            .filter_map(|e| PendingApproval::asked(run, e))
            .map(|asked| {
                let status = match state.approval(&asked.request).map(|a| &a.status) {
                    Some(warrant_core::fold::ApprovalStatus::Pending)
                        if now >= asked.expires_at_ms =>
                    {
                        ApprovalState::Expired
                    }
                    Some(s) => s.state(),
                    None => ApprovalState::Expired,
                };
                let mut row = ApprovalRow::new(asked, status);
                if let Some(a) = state.approval(&row.request) {
                    row.approved_by = a.approved_by.iter().map(|(who, ..)| who.clone()).collect();
                }
                row
            })
            .collect();
        Ok(own.into_iter().chain(descendants).collect())
    }

    /// Where approval request `request` of `run` stands, when no longer pending: another
    /// person may have answered it meanwhile. `None` while it is pending.
    pub async fn answered_elsewhere(
        &self,
        run: &RunId,
        request: &str,
    ) -> Result<Option<Elsewhere>> {
        let state = fold(run, &self.log(run).await?)?;
        Ok(match state.approval(request).map(|a| a.status.state()) {
            Some(ApprovalState::Pending) => None,
            Some(other) => Some(Elsewhere::Settled(other)),
            None => Some(Elsewhere::Gone),
        })
    }

    /// Waits for a person: until approval request `request` of `run` is no longer pending
    /// (answered here or by any process, withdrawn with its run's end) or until `until_ms`
    /// (its expiry, at the latest). Woken by the store as the run's log grows — a follower of
    /// the log, never a poll of the approvals. Whether the request is settled; a request
    /// past `until_ms` unanswered is not.
    pub async fn wait_for_answer(&self, run: &RunId, request: &str, until_ms: u64) -> Result<bool> {
        let events = self.log(run).await?;
        let settled = |state: &RunState| {
            state
                .approval(request)
                .is_none_or(|a| a.status.state() != ApprovalState::Pending)
        };
        let mut state = fold(run, &events)?;
        if settled(&state) {
            return Ok(true);
        }
        let mut feed = self.store.subscribe(run, state.last_seq() + 1);
        let left = until_ms.saturating_sub(SystemClock.now_ms());
        let deadline = tokio::time::Instant::now() + Duration::from_millis(left);
        loop {
            let next = tokio::select! {
                next = feed.next() => next.map_err(AppError::from)?,
                () = tokio::time::sleep_until(deadline) => return Ok(false),
            };
            let Some(stored) = next else {
                // The run ended: whatever was pending is withdrawn.
                return Ok(true);
            };
            state
                .apply(&stored.event)
                .map_err(|e| AppError::failed(format!("run `{run}`: {e}")))?;
            if settled(&state) {
                return Ok(true);
            }
        }
    }

    /// Answers approval request `request`, as `by`.
    pub async fn answer(&self, request: &str, answer: Answer, by: &str) -> Result<Answered> {
        let name = match &answer {
            Answer::Approve { .. } => ApprovalState::Approved,
            Answer::Deny { .. } => ApprovalState::Denied,
        };
        let (answered, waited_ms) = self
            .engine()
            .answer_timed(request, answer, by)
            .await
            .map_err(AppError::input_refused)?;
        if matches!(answered, Answered::Recorded) {
            self.answers.approval(name, waited_ms);
        }
        Ok(answered)
    }

    /// Answers question `question` (`<run>-q<n>`) for `by`: refused (`Invalid`) with the
    /// schema's reasons when the answer does not fit it.
    pub async fn answer_question(
        &self,
        question: &str,
        answer: Arc<serde_json::Value>,
        by: &str,
    ) -> Result<Answered> {
        self.engine()
            .answer_question(question, answer, by)
            .await
            .map_err(AppError::input_refused)
    }

    /// Question `id` (`<run>-q<n>`), answered or not, with its run and whom it acts for.
    pub async fn question(&self, id: &str) -> Result<PendingQuestion> {
        let missing = || AppError::NotFound(format!("no question `{id}`"));
        let (run, _) = RunId::of_question(id).ok_or_else(missing)?;
        let events = self.log(&run).await.map_err(|_| missing())?;
        let state = fold(&run, &events)?;
        let question = state.question(id).cloned().ok_or_else(missing)?;
        Ok(PendingQuestion::of(run, &state, question))
    }

    /// The questions waiting for an answer: of `run`, or of every waiting run (at most
    /// `WAITING_LOOKED` runs looked at), oldest first.
    pub async fn pending_questions(&self, run: Option<&RunId>) -> Result<Vec<PendingQuestion>> {
        let runs = match run {
            Some(r) => vec![r.clone()],
            None => self.waiting().await?,
        };
        let mut out = Vec::new();
        for r in runs {
            let state = fold(&r, &self.log(&r).await?)?;
            if let Some(q) = state.pending_question() {
                out.push(PendingQuestion::of(r, &state, q.clone()));
            }
        }
        out.sort_by_key(|p| p.question.asked_at_ms);
        Ok(out)
    }

    /// The newest waiting runs (at most `WAITING_LOOKED`).
    async fn waiting(&self) -> Result<Vec<RunId>> {
        let page = self
            .store
            .runs(RunQuery {
                status: Some(RunStatus::Waiting),
                limit: WAITING_LOOKED,
                ..RunQuery::default()
            })
            .await
            .map_err(AppError::from)?;
        Ok(page.runs.into_iter().map(|r| r.run_id).collect())
    }

    /// The runs that wait on a call in doubt, across the store, and their calls in doubt (of
    /// the newest `WAITING_LOOKED` waiting runs).
    pub async fn in_doubt(&self) -> Result<InDoubt> {
        let mut found = InDoubt::default();
        for r in self.waiting().await? {
            let state = fold(&r, &self.log(&r).await?)?;
            let calls = u64::try_from(state.in_doubt().count()).unwrap_or(u64::MAX);
            if calls > 0 {
                found.runs += 1;
                found.calls = found.calls.saturating_add(calls);
            }
        }
        Ok(found)
    }

    /// Records what `by` found out about call `call` of `run`, in doubt.
    pub async fn reconcile(
        &self,
        run: &RunId,
        call: CallId,
        said: Reconciled,
        by: &str,
        note: &str,
    ) -> Result<()> {
        self.engine()
            .reconcile(run, call, said.happened, said.resend, by, note)
            .await
            .map_err(AppError::input_refused)?;
        let found = match (said.happened, said.resend) {
            (true, _) => "happened",
            (false, true) => "resent",
            (false, false) => "not_performed",
        };
        self.answers.reconciled.add([found], 1);
        Ok(())
    }

    /// Cancels `run`, as `by`: the process driving it ends it at its next check (waited for
    /// up to `wait`); one no process drives (it waits for a person, or its process died) is
    /// ended here, through the same re-entry path.
    pub async fn cancel(
        &self,
        run: &RunId,
        by: &str,
        reason: &str,
        wait: Duration,
    ) -> Result<Cancelled> {
        let before = self.summary(run).await?;
        if !before.status.is_live() {
            return Ok(Cancelled::AlreadyEnded(before.status));
        }
        self.engine()
            .cancel(run, by, reason)
            .await
            .map_err(AppError::from)?;
        self.let_go(run, wait).await?;
        let now = self.summary(run).await?;
        if now.status == RunStatus::Cancelled {
            return Ok(Cancelled::Cancelled);
        }
        if !now.status.is_live() {
            return Ok(Cancelled::EndedFirst(now.status));
        }
        if lease::driven(&now, SystemClock.now_ms()) {
            return Ok(Cancelled::Pending {
                holder: now.holder.unwrap_or_default(),
            });
        }
        self.reenter(run).await?;
        // (A child is re-entered with its tree: what became of it is its own status.)
        let after = self.summary(run).await?;
        Ok(match after.status {
            RunStatus::Cancelled => Cancelled::Cancelled,
            other if other.is_live() => Cancelled::EndedFirst(RunStatus::Waiting),
            other => Cancelled::EndedFirst(other),
        })
    }

    /// Waits until no process drives `run` (it ended, waits for a person, or its driver is
    /// gone), for `wait` at most. Woken as the run's log grows, by whichever process appends:
    /// a driver that lets a run go appends as it does; one that dies is seen gone when its
    /// lease lapses, or at once when it was a process of this machine.
    async fn let_go(&self, run: &RunId, wait: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + wait;
        let summary = self.summary(run).await?;
        if !lease::driven(&summary, SystemClock.now_ms()) {
            return Ok(());
        }
        let mut feed = self.store.subscribe(run, summary.events + 1);
        // A lapse shows in no event: looked for again after a lease's third at most.
        let look = Duration::from_millis(warrant_core::ports::LEASE_TTL_MS / 3);
        let mut driven = true;
        while driven {
            tokio::select! {
                next = feed.next() => match next {
                    Ok(Some(_)) => {}
                    // The run ended: nobody drives it.
                    Ok(None) => return Ok(()),
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                },
                () = tokio::time::sleep(look) => {}
                () = tokio::time::sleep_until(deadline) => return Ok(()),
            }
            driven = lease::driven(&self.summary(run).await?, SystemClock.now_ms());
        }
        Ok(())
    }

    /// The status every reader shows for `run`, from the runs index (no log read): the one
    /// `show` derives from the log.
    pub async fn shown_status(&self, run: &RunId) -> Result<RunStatus> {
        let summary = self.summary(run).await?;
        Ok(lease::shown_status(&summary, SystemClock.now_ms()))
    }

    /// Who carries `run` on after a person's answer made it ready: the process that took it up
    /// within `within` (a server, a gateway or a worker watching the store does so within a
    /// moment), `Some("")` when it ended meanwhile, `None` when nobody did (`warrant resume`
    /// carries it on). Looked at every 50 ms.
    pub async fn taken_up(&self, run: &RunId, within: Duration) -> Result<Option<String>> {
        let root = warrant_engine::root_of(run);
        let until = tokio::time::Instant::now() + within;
        loop {
            let summary = self.summary(&root).await?;
            let now = SystemClock.now_ms();
            if !summary.status.is_live() {
                return Ok(Some(String::new()));
            }
            if summary.status != RunStatus::Ready && lease::driven(&summary, now) {
                return Ok(summary.holder);
            }
            if tokio::time::Instant::now() >= until {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn summary(&self, run: &RunId) -> Result<warrant_core::ports::RunSummary> {
        self.store
            .summary(run)
            .await
            .map_err(AppError::from)?
            .ok_or_else(|| AppError::NotFound(format!("no run `{run}` in the store")))
    }
}

/// The texts of the Cedar files recorded under a `floor` anywhere in authority `d`.
fn floor_texts<'a>(d: &'a serde_json::Value, in_floor: bool, out: &mut Vec<&'a str>) {
    match d {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let floor = in_floor || k == "floor";
                if floor
                    && k == "text"
                    && let Some(t) = v.as_str()
                {
                    out.push(t);
                }
                floor_texts(v, floor, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| floor_texts(v, in_floor, out)),
        _ => {}
    }
}

fn fold(run: &RunId, events: &[Arc<Event>]) -> Result<RunState> {
    RunState::from_events(events.iter().map(|e| &**e))
        .map_err(|e| AppError::failed(format!("run `{run}`: {e}")))
}

/// Checks that the spec's policies and `extra` load, before anything runs.
pub fn check_policies(spec: &Spec, extra: &[PathBuf]) -> Result<()> {
    loaded_policies(spec, extra).map(drop)
}

/// The spec's policies and `extra`, loaded (none when there are none).
fn loaded_policies(
    spec: &Spec,
    extra: &[PathBuf],
) -> Result<Option<warrant_policy::CedarAuthority>> {
    let paths: Vec<PathBuf> = spec
        .policy
        .iter()
        .map(PathBuf::from)
        .chain(extra.iter().cloned())
        .collect();
    if paths.is_empty() {
        return Ok(None);
    }
    let files = warrant_policy::policy_files(&paths).map_err(AppError::invalid)?;
    warrant_policy::CedarAuthority::new(files, spec.trusted_providers())
        .map(Some)
        .map_err(AppError::invalid)
}

/// Checks `spec` as `warrant validate` does: its default decider builds, its policies load,
/// and, with `connect`, every step's tools are offered by its provider and every grant names
/// only arguments its tool takes. Returns warnings (with `connect`: grants that leave a
/// commit's text arguments open).
pub async fn validate(
    deciders: &Deciders,
    spec: &Spec,
    spec_path: &Path,
    connect: bool,
) -> Result<Vec<String>> {
    if spec.decider.is_some() {
        deciders.default_for(spec, spec_path)?;
    }
    let policies = loaded_policies(spec, &[])?;
    let mut warnings = Vec::new();
    if connect {
        let surfaces =
            providers::connect(spec, deciders.registry(), providers::start_bound(spec, 0)).await?;
        let offered = providers::observe_all(spec, &surfaces).await;
        warrant_engine::shutdown(&surfaces).await;
        let offered = offered?;
        let mut missing = providers::missing_tools(spec, &offered);
        if let Some((shown, script)) = deciders.default_script(spec, spec_path)? {
            missing.extend(providers::script_tools_missing(
                spec, &shown, &script, &offered,
            ));
        }
        let (errors, flagged) = providers::grant_problems(spec, &offered);
        missing.extend(errors);
        warnings = flagged;
        if let Some(policies) = &policies {
            let (errors, flagged) = providers::policy_problems(&policies.named_args(), &offered);
            missing.extend(errors);
            warnings.extend(flagged);
        }
        if !missing.is_empty() {
            let shown = spec_path.display();
            return Err(AppError::invalid(format!(
                "{shown}: {}",
                missing.join(&format!("\n{shown}: "))
            )));
        }
    }
    Ok(warnings)
}

/// The tools the steps of every child `spec` delegates to allow (their children's too).
fn child_tools(spec: &Spec) -> std::collections::BTreeSet<String> {
    let mut tools = std::collections::BTreeSet::new();
    for child in spec
        .steps
        .iter()
        .filter_map(|s| s.delegate.as_ref())
        .flat_map(|d| &d.children)
        .filter_map(|c| c.spec.inline())
    {
        tools.extend(child.steps.iter().flat_map(|s| s.tools.iter().cloned()));
        tools.extend(child_tools(child));
    }
    tools
}

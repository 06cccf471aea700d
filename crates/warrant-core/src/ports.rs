//! The ports: traits adapters implement. Futures are boxed so ports are object-safe without
//! an async runtime in this crate.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::codes::Code;
use crate::event::{ActionRecord, DeciderIdentity, Decision, Effect, Principal, ToolHints, Usage};
use crate::ids::{CallId, HandleId, RunId, StepId};
use crate::projection::Projection;
use crate::provenance::ArgLabel;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The source of time. Production reads the system clock; tests use a fixed or stepping one.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The source of run ids.
pub trait IdGen: Send + Sync {
    /// A fresh, unique run id.
    fn run_id(&self) -> RunId;
}

/// What a surface offers right now.
#[derive(Clone, Debug)]
pub struct Observation {
    /// Changes whenever the provider's state or an action's schema changes.
    pub version: String,
    /// The actions offered.
    pub actions: Arc<[ActionRecord]>,
    /// What a web page shows of itself (URL and title); none for other providers. Not part of
    /// the version: a page retitling itself does not make the decider's handles stale.
    pub page: Option<crate::event::PageSnapshot>,
}

/// The idempotency key of a call, `wk-<run>-c<n>`: stable for the intent, unique across runs
/// (run ids are). Built without a formatter: every dispatch makes one.
pub fn idempotency_key(run: &RunId, call: CallId) -> String {
    let mut buf = [0; 20];
    let n = crate::num::decimal(u64::from(call.0), &mut buf);
    let mut key = String::with_capacity(run.0.len() + 5 + n.len());
    key.push_str("wk-");
    key.push_str(&run.0);
    key.push_str("-c");
    key.push_str(n);
    key
}

/// One call as the Bridge hands it to a surface.
///
/// INVARIANT (one path): an invocation exists only for a call whose dispatch — its exact
/// arguments, effect and idempotency key — is in a run's folded log ([`Invocation::dispatched`]):
/// nothing outside this crate can build one otherwise, or change one, so no code can reach a
/// provider around the Bridge's checks and its durable intent.
///
/// ```compile_fail,E0451
/// # use std::sync::Arc;
/// # use warrant_core::ports::Invocation;
/// # use warrant_core::{CallId, RunId};
/// # use warrant_core::event::Effect;
/// let forged = Invocation {
///     run: RunId("r".into()),
///     call: CallId(1),
///     tool: "transfer".into(),
///     args: Arc::new(serde_json::json!({"amount": 1_000_000})),
///     effect: Effect::Commit,
///     idempotency_key: "k".into(),
///     version: "v".into(),
/// };
/// ```
#[derive(Clone, Debug)]
pub struct Invocation {
    run: RunId,
    call: CallId,
    tool: String,
    args: Arc<Value>,
    effect: Effect,
    idempotency_key: String,
    version: String,
}

impl Invocation {
    /// The invocation of `call` as `state` records its dispatch (`call_dispatched`: the
    /// arguments to execute, the effect, the idempotency key), validated against the
    /// observation `version`. `None` when the call was not dispatched.
    pub fn dispatched(
        state: &crate::fold::RunState,
        call: CallId,
        version: impl Into<String>,
    ) -> Option<Invocation> {
        let record = state.call(call)?;
        Some(Invocation {
            run: state.run_id.clone()?,
            call,
            tool: record.tool.clone(),
            args: record.executed.clone()?,
            effect: record.effect?,
            idempotency_key: record.idempotency_key.clone()?,
            version: version.into(),
        })
    }

    /// This call as the member of a join sees it: its own name for the tool and its own
    /// observation version; everything else (arguments, key) unchanged.
    pub fn for_member(&self, tool: impl Into<String>, version: impl Into<String>) -> Invocation {
        Invocation {
            tool: tool.into(),
            version: version.into(),
            ..self.clone()
        }
    }

    /// Any invocation, for tests that drive a surface directly (the `testing` feature); its
    /// idempotency key is the engine's for that run and call.
    #[cfg(any(test, feature = "testing"))]
    pub fn testing(
        run: RunId,
        call: CallId,
        tool: impl Into<String>,
        args: Value,
        effect: Effect,
        version: impl Into<String>,
    ) -> Invocation {
        Invocation {
            idempotency_key: idempotency_key(&run, call),
            run,
            call,
            tool: tool.into(),
            args: Arc::new(args),
            effect,
            version: version.into(),
        }
    }

    /// The run.
    pub fn run(&self) -> &RunId {
        &self.run
    }

    /// The call.
    pub fn call(&self) -> CallId {
        self.call
    }

    /// The tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The arguments to execute.
    pub fn args(&self) -> &Arc<Value> {
        &self.args
    }

    /// Read or commit.
    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// Stable across retries of this intent.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// The observation version the call was validated against.
    pub fn version(&self) -> &str {
        &self.version
    }
}

/// What a provider asked the person during a call, and what they did (`provider_asked`).
#[derive(Clone, Debug, PartialEq)]
pub struct Asked {
    /// What it asked.
    pub message: String,
    /// The form of the answer it asked for (a JSON Schema).
    pub schema: Arc<Value>,
    /// `accept`, `decline` or `cancel`, or `unasked` when nobody could be asked.
    pub action: String,
    /// The answer, when they accepted.
    pub answer: Option<Arc<Value>>,
}

impl Asked {
    /// Its record, asked during `call`.
    pub fn event(self, call: CallId) -> crate::event::EventKind {
        crate::event::EventKind::ProviderAsked {
            call,
            message: self.message,
            schema: self.schema,
            action: self.action,
            answer: self.answer,
        }
    }

    /// What a `provider_asked` event records, and the call it was asked during.
    pub fn of(kind: &crate::event::EventKind) -> Option<(CallId, Asked)> {
        let crate::event::EventKind::ProviderAsked {
            call,
            message,
            schema,
            action,
            answer,
        } = kind
        else {
            return None;
        };
        let asked = Asked {
            message: message.clone(),
            schema: schema.clone(),
            action: action.clone(),
            answer: answer.clone(),
        };
        Some((*call, asked))
    }
}

/// A provider's answer to a call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutput {
    /// The result, as the provider gave it.
    pub output: Value,
    /// The provider reported the call as failed (e.g. MCP `isError`).
    pub is_error: bool,
}

/// What the engine must know about a call a surface could not complete: whether anything
/// reached the provider, and so whether a commit may have happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceErrorKind {
    /// Nothing was sent (the connection was refused, the server is not running, the surface
    /// cannot do this): safe to treat as failed.
    NotSent,
    /// The provider received the call and answered that it failed (an error status, a
    /// protocol error): it did not happen, as far as the provider says.
    Rejected,
    /// The call was sent and its answer was lost (the connection dropped, the server died, the
    /// answer broke off): a commit may have happened.
    AnswerLost,
    /// The call was sent and no answer came within the bound: a commit may have happened.
    TimedOut,
    /// The run was cancelled while the call was in flight: a commit may have happened.
    Cancelled,
    /// The surface's own authorizer refused before anything was sent: a policy stop.
    Denied,
    /// The surface refused the arguments before sending anything (not an object, a value only
    /// the host may set).
    Invalid,
    /// The provider has stopped (its process exited) and nothing of this request took effect:
    /// it was not sent, or it asked only to read. The engine may start the provider again
    /// ([`Surface::revive`]) and ask once more.
    Down,
}

impl SurfaceErrorKind {
    /// Whether a commit that failed this way may still have happened.
    pub fn may_have_happened(self) -> bool {
        matches!(
            self,
            SurfaceErrorKind::AnswerLost | SurfaceErrorKind::TimedOut | SurfaceErrorKind::Cancelled
        )
    }
}

/// A surface could not do what was asked.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SurfaceError {
    /// What the engine must know.
    pub kind: SurfaceErrorKind,
    /// For humans: the provider's own message first.
    pub message: String,
    /// What the provider answered, when it answered (an error body), for the record.
    pub output: Option<Value>,
    /// A more specific fault code than the kind implies: the engine's own bounds (`deadline`),
    /// or, replaying, the code the log recorded.
    pub code: Option<Code>,
}

impl SurfaceError {
    /// An error of this kind with this message.
    pub fn new(kind: SurfaceErrorKind, message: impl Into<String>) -> SurfaceError {
        SurfaceError {
            kind,
            message: message.into(),
            output: None,
            code: None,
        }
    }

    /// Nothing was sent.
    pub fn not_sent(message: impl Into<String>) -> SurfaceError {
        SurfaceError::new(SurfaceErrorKind::NotSent, message)
    }

    /// The provider answered that the call failed.
    pub fn rejected(message: impl Into<String>) -> SurfaceError {
        SurfaceError::new(SurfaceErrorKind::Rejected, message)
    }

    /// Sent, and the answer was lost.
    pub fn answer_lost(message: impl Into<String>) -> SurfaceError {
        SurfaceError::new(SurfaceErrorKind::AnswerLost, message)
    }

    /// The arguments were refused before sending.
    pub fn invalid(message: impl Into<String>) -> SurfaceError {
        SurfaceError::new(SurfaceErrorKind::Invalid, message)
    }

    /// Keeps what the provider answered with the error.
    pub fn with_output(mut self, output: Value) -> SurfaceError {
        self.output = Some(output);
        self
    }
}

/// What starting a stopped provider again came to ([`Surface::revive`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Restart {
    /// Starts tried.
    pub attempts: u32,
    /// Why the provider is still not running; `None` when it runs again.
    pub error: Option<SurfaceError>,
}

/// What may be done about a commit whose outcome was lost in a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Repeating the call is safe by construction: the provider is trusted and declared the
    /// action idempotent, or it accepts Warrant's idempotency key.
    Reinvoke,
    /// The surface can tell whether the effect happened ([`Surface::lookup`]).
    Lookup,
    /// Neither: the effect is in doubt until an operator reconciles it.
    InDoubt,
}

/// The port to a provider.
pub trait Surface: Send + Sync {
    /// What the provider offers now.
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>>;
    /// Runs one call. Only the Bridge calls this (INVARIANT: one path). An error with code
    /// `denied` means the surface's own authorizer refused before anything was sent: the
    /// Bridge records a policy stop.
    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>>;
    /// Whether an observation of this version is still current.
    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool>;
    /// Tells the surface these handles will not be used again.
    fn retire(&self, _handles: &[HandleId]) {}
    /// Tells the provider that an in-flight call is cancelled, where the surface supports it
    /// (MCP `notifications/cancelled`, for one). The default sends nothing.
    fn cancel(&self, _call: CallId) {}
    /// What the provider asked the person during `call` of `run` (an MCP server's
    /// elicitation, passed on by a front door that has the person at hand), taken once: the
    /// engine records each (`provider_asked`) before the call's end. The default: nothing.
    fn asked(&self, _run: &RunId, _call: CallId) -> Vec<Asked> {
        Vec::new()
    }
    /// What the provider has that the last observation does not offer, one line each, naming
    /// it and why (an OpenAPI operation with a file upload, say). Nothing is dropped silently.
    fn unsupported(&self) -> Vec<String> {
        Vec::new()
    }
    /// What may be done about a commit of `tool` whose outcome was lost. The default is the
    /// safe one: in doubt.
    fn recovery(&self, _tool: &str) -> Recovery {
        Recovery::InDoubt
    }
    /// For [`Recovery::Lookup`]: the result of the effect this intent caused, `Ok(None)` when
    /// it did not happen.
    fn lookup(&self, _call: Invocation) -> BoxFuture<'_, Result<Option<CallOutput>, SurfaceError>> {
        Box::pin(std::future::ready(Err(SurfaceError::not_sent(
            "this surface cannot look up effects",
        ))))
    }
    /// Makes sure the provider runs: one that stopped ([`SurfaceErrorKind::Down`]) is started
    /// again, a few times with backoff if need be; one that runs has nothing to do. The
    /// default (a surface with no process of its own to start) has nothing to do.
    fn revive(&self) -> BoxFuture<'_, Restart> {
        Box::pin(std::future::ready(Restart {
            attempts: 0,
            error: None,
        }))
    }
    /// Ends the provider's connection in order, when nothing more will be asked of it (a stdio
    /// server: its input closed, then a wait, then SIGTERM, then SIGKILL, the whole process
    /// group). Dropping a surface ends it too, at once. The default has nothing to end.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    /// Calls `changed` whenever the provider says what it offers changed (an MCP server's
    /// `notifications/tools/list_changed`), so a front door can tell its own clients. A
    /// surface whose offer never changes ignores it.
    fn on_change(&self, _changed: Arc<dyn Fn() + Send + Sync>) {}
}

/// A decision with what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    /// The decision.
    pub decision: Decision,
    /// Usage, when the decider reports it.
    pub usage: Option<Usage>,
    /// What a live decider sent and received (requests, attempts, responses; no secrets), so
    /// the log holds the exchange and a replay reproduces it.
    pub exchange: Option<Arc<Value>>,
}

/// A decider could not decide.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecideError {
    /// What went wrong, e.g. [`Code::ScriptExhausted`]; the engine acts on it (a decision cut
    /// by the deadline ends the run exhausted) and the log records it.
    pub code: Code,
    /// For humans.
    pub message: String,
    /// What a live decider sent and received before failing, when it got that far.
    pub exchange: Option<Arc<Value>>,
}

impl DecideError {
    /// An error with this code and message and no recorded exchange.
    pub fn new(code: Code, message: impl Into<String>) -> DecideError {
        DecideError {
            code,
            message: message.into(),
            exchange: None,
        }
    }
}

/// The port to whatever chooses the next move.
pub trait Decider: Send + Sync {
    /// Who decides, for the log and the report.
    fn identity(&self) -> DeciderIdentity;
    /// The next decision for this projection.
    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>>;
    /// Set once the decider is gone for good (a gateway session's client left): the run ends
    /// at its next step, `closed` by whoever this names, with nothing more decided.
    fn closed(&self) -> Option<CancelRequest> {
        None
    }
    /// Set when its last `decide` gave its turn back without deciding (a gateway session's
    /// client has been quiet): the run stops where it is, recording nothing, its lease kept by
    /// the process, and is resumed once the decider has something to decide.
    fn parked(&self) -> bool {
        false
    }
    /// Whether what it is shown leaves the process as it decides (a gateway's client is told
    /// its last call's result): everything shown is then durable before it is asked. Otherwise
    /// a read's result may be committed with the decision made from it.
    fn tells_outside(&self) -> bool {
        false
    }
}

/// What the Bridge asks an authority about.
#[derive(Clone, Debug)]
pub struct CapabilityRequest<'a> {
    /// Who the run acts for.
    pub principal: &'a Principal,
    /// The run.
    pub run: &'a RunId,
    /// The step.
    pub step: &'a StepId,
    /// The call.
    pub call: CallId,
    /// The provider.
    pub provider: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Read or commit.
    pub effect: Effect,
    /// The arguments to execute.
    pub args: &'a Value,
    /// Their digest.
    pub args_digest: &'a str,
    /// Their provenance.
    pub provenance: &'a [ArgLabel],
    /// What the provider says of the tool (MCP annotations), when it says anything.
    pub hints: Option<&'a ToolHints>,
    /// A web page's tool: where the browser saw it registered.
    pub origin: Option<&'a crate::event::ToolOrigin>,
    /// How long ago the handle the call uses was issued, when it uses one.
    pub handle_age_ms: Option<u64>,
    /// The untrusted providers whose output the decider had been shown when it proposed the
    /// call (provenance rules 2; empty: trusted text only).
    pub context_taint: &'a [String],
    /// The grant that rules the call's step: its own (`grant:`), or the one the run's plan
    /// gave it (`plan_first`).
    pub grant: Option<&'a crate::spec::Grant>,
    /// When the run is a child: the run that delegated to it, its depth and its ancestors.
    /// An ancestor's authority is asked with the child's request, this included.
    pub parent: Option<&'a crate::event::ParentLink>,
}

/// An authority's ruling. Anything but `Allow` means the provider is not called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead, under this grant.
    Allow {
        /// The grant used.
        grant: String,
    },
    /// No, for these reasons.
    Deny {
        /// Which rules or policies denied it.
        reasons: Vec<String>,
    },
    /// Only with an approval.
    Ask {
        /// What needs approving.
        reason: String,
        /// How many different people must approve it (at least 1).
        approvers: u32,
    },
    /// The authority could not rule (error, timeout, missing data): treated as deny.
    Indeterminate {
        /// Why.
        reason: String,
    },
}

/// Someone answering an approval request, as an authority rules on them: may this person
/// answer this request?
#[derive(Clone, Debug)]
pub struct ApproverRequest<'a> {
    /// Who answers (their agent is empty: a person).
    pub approver: &'a Principal,
    /// Whom the run acts for: who started it.
    pub starter: &'a Principal,
    /// The call the request holds, as its run's authority ruled on it.
    pub call: &'a CapabilityRequest<'a>,
    /// How many different people must approve it.
    pub approvals_needed: u32,
    /// Who approved it so far.
    pub approved_by: &'a [String],
}

/// An authority's ruling on an approver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApproverVerdict {
    /// It has no rule about approvers: the front door's roles decide.
    NotRuled,
    /// This person may answer, under this rule.
    Allow {
        /// The rule (a policy's id).
        rule: String,
    },
    /// This person may not answer.
    Deny {
        /// Why.
        reasons: Vec<String>,
    },
}

/// A tool as a principal would be offered it: may any call of it ever be allowed?
#[derive(Clone, Debug)]
pub struct ToolProbe<'a> {
    /// Who would call it.
    pub principal: &'a Principal,
    /// Its provider (the step's: a join's name for a joined tool).
    pub provider: &'a str,
    /// Its name.
    pub tool: &'a str,
    /// Read or commit.
    pub effect: Effect,
    /// Whether its provider is trusted.
    pub trusted: bool,
    /// Its input schema (the arguments a call may have).
    pub schema: &'a Value,
}

/// The port that rules on capability requests.
pub trait Authority: Send + Sync {
    /// Rules on one request.
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict>;
    /// What this authority is, recorded in the run so that re-entering it rules the same way
    /// (`None`: an authority the embedder supplies again on resume).
    fn describe(&self) -> Option<Value> {
        None
    }
    /// Rules on who may answer an approval request it asked for (Cedar's `approve` action).
    /// The default has no rule about approvers.
    fn rule_approver(&self, _request: &ApproverRequest<'_>) -> ApproverVerdict {
        ApproverVerdict::NotRuled
    }
    /// Whether some call of the probed tool could be allowed, whatever its arguments and
    /// context: `false` only when every call of it would be refused, so a front door need not
    /// offer it. The default cannot tell, and says yes (every call is still ruled on).
    fn may_ever_allow(&self, _probe: &ToolProbe<'_>) -> bool {
        true
    }
    /// Whether `may_ever_allow` can ever say no (when it cannot, nobody need ask it).
    fn may_hide_tools(&self) -> bool {
        false
    }
}

/// An external execution-control authority's answer for one commit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlVerdict {
    /// Go ahead.
    Allow,
    /// Do not.
    Block {
        /// Why.
        reason: String,
    },
    /// It could not say (an error, no answer in time, no authority configured): stops the call.
    Indeterminate {
        /// Why.
        reason: String,
    },
}

/// The external execution-control port: when required, every commit call must also receive
/// an allow from it before the provider is called.
pub trait ExecutionControl: Send + Sync {
    /// Rules on one commit call; the request is forwarded as Warrant holds it.
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, ControlVerdict>;
    /// What it is, recorded in the run so re-entry uses the same one.
    fn describe(&self) -> Option<Value> {
        None
    }
}

/// Builds the authorities a spec names — Cedar policy files, an execution-control endpoint —
/// and rebuilds the ones a run recorded, so that every front door (the CLI, a server, a worker,
/// an embedder) applies a spec's policies the same way. An engine without one refuses a spec
/// that names policies rather than run it unguarded.
pub trait PolicySource: Send + Sync {
    /// The authority of these policy files or folders (absolute paths), knowing which
    /// providers' output is trusted.
    fn policies(
        &self,
        paths: &[String],
        trusted: std::collections::BTreeSet<String>,
    ) -> Result<Arc<dyn Authority>, String>;
    /// An execution control at `url`.
    fn control(&self, url: &str) -> Result<Arc<dyn ExecutionControl>, String>;
    /// The authority a run recorded (`Authority::describe`), when it is one this source builds:
    /// exactly as it was, or an error (never a weaker one).
    fn rebuild_authority(&self, description: &Value) -> Option<Result<Arc<dyn Authority>, String>>;
    /// The execution control a run recorded, when it is one this source builds.
    fn rebuild_control(
        &self,
        description: &Value,
    ) -> Option<Result<Arc<dyn ExecutionControl>, String>>;
}

/// What an interceptor does with a call that authority allowed.
#[derive(Clone, Debug, PartialEq)]
pub enum Interception {
    /// Let it through unchanged.
    Pass,
    /// Suppress it: the provider is not called, the decider is told why, the run goes on.
    Halt {
        /// Why.
        reason: String,
    },
    /// Execute it with these arguments instead (they are validated and ruled on again).
    Narrow {
        /// The arguments to execute.
        args: Value,
        /// Why.
        reason: String,
    },
}

/// Sees each call after authority and before dispatch. Interceptors run in the order they
/// were added; each sees the arguments the previous one left.
pub trait Interceptor: Send + Sync {
    /// A name for the log and the report.
    fn name(&self) -> &str;
    /// What to do with this call (`request.args` are the arguments about to execute).
    fn intercept(&self, request: &CapabilityRequest<'_>) -> Interception;
}

pub use crate::store::{
    ApprovalsIndex, CancelRequest, CatalogEntry, CheckpointFailures, Claim, Driver, EventFeed,
    EventStore, FairShare, Held, IDEMPOTENCY_PURGE_MAX, IdempotencyKeys, IdempotencyRecord,
    LEASE_TTL_MS, Leases, LogReader, LogWriter, PendingApproval, RunCursor, RunPage, RunQuery,
    RunSummary, RunsIndex, SpecCatalog, StoreError, StoreHealth,
};

/// The run id that uniquely starts with `prefix`, among `runs`.
pub fn resolve_run_prefix(runs: &[RunSummary], prefix: &str) -> Result<RunId, String> {
    if prefix.is_empty() {
        // As a prefix it would match every run.
        return Err("the run id is empty: give a run id or a unique prefix of one".to_owned());
    }
    if let Some(exact) = runs.iter().find(|r| r.run_id.0 == prefix) {
        return Ok(exact.run_id.clone());
    }
    let all: Vec<&RunSummary> = runs
        .iter()
        .filter(|r| r.run_id.0.starts_with(prefix))
        .collect();
    // A prefix of a tree's root names the root, not its children (`<root>.<n>`).
    let matches: Vec<&RunSummary> = all
        .iter()
        .copied()
        .filter(|r| {
            !all.iter()
                .any(|o| r.run_id.0.starts_with(&format!("{}.", o.run_id)))
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.run_id.clone()),
        [] => Err(format!(
            "no run `{}` in the store",
            crate::text::echo(prefix)
        )),
        many => Err(format!(
            "`{}` matches {} runs: give more of the id",
            crate::text::echo(prefix),
            many.len()
        )),
    }
}

/// What a child run needs to be driven: its decider, and the surfaces of the providers it
/// does not share with its parent.
pub struct ChildParts {
    /// Chooses the child's moves.
    pub decider: Box<dyn Decider>,
    /// Its own providers, by the names its spec uses.
    pub surfaces: std::collections::HashMap<String, Arc<dyn Surface>>,
}

/// Prepares child runs: the port by which the engine, which neither reads script files nor
/// starts providers, gets a delegated child's decider and providers (`warrant-app` builds
/// them as it does for any run).
pub trait ChildRuns: Send + Sync {
    /// The decider of `spec` (its `decider:`; for a child re-entered, the one it `recorded`,
    /// built again and refused if it is not configured as it was) and the surfaces of its
    /// providers not named in `shared` (those are the parent's). Called when a child starts
    /// and when it is re-entered; an error stops the child before it does anything.
    fn prepare<'a>(
        &'a self,
        spec: &'a Arc<crate::spec::Spec>,
        shared: &'a [String],
        recorded: Option<&'a crate::event::DeciderIdentity>,
    ) -> BoxFuture<'a, Result<ChildParts, String>>;
}

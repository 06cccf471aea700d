//! The run log: one typed enum of events. A run's state is a fold over them
//! ([`crate::fold::RunState`]).
//!
//! Wire format `warrant.events/1`: each event is a JSON object `{seq, at_ms, type, ...}`. Fields
//! are added, never repurposed; readers tolerate unknown fields.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::codes::Code;
use crate::ids::{CallId, HandleId, RunId, StepId};
use crate::provenance::ArgLabel;
use crate::spec::Spec;

mod fast;

/// The version of the event wire format.
pub const EVENTS_FORMAT: &str = "warrant.events/1";

/// One record in a run's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Gapless per-run sequence, from 1.
    pub seq: u64,
    /// Milliseconds since the Unix epoch, from the injected clock.
    pub at_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// An event as the store holds it: with its global position across all runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoredEvent {
    /// Global, monotonic position in the store.
    pub position: u64,
    /// The run the event belongs to.
    pub run_id: RunId,
    /// The event.
    #[serde(flatten)]
    pub event: Arc<Event>,
}

/// Where a failure is attributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The decider's choice (a decline, an unknown tool, invalid arguments, a false claim).
    Model,
    /// Sequencing: a step that could not run because of another.
    Orchestration,
    /// The provider's error or unavailability.
    Provider,
    /// An authority's deny, unresolved ask or indeterminate verdict.
    Policy,
    /// Warrant itself (its store, its invariants).
    Runtime,
    /// The spec as written: a step that names a tool its provider does not offer, a
    /// `publishes` path the tool's result does not have.
    Spec,
}

impl Layer {
    /// Its wire name, e.g. `policy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Model => "model",
            Layer::Orchestration => "orchestration",
            Layer::Provider => "provider",
            Layer::Policy => "policy",
            Layer::Runtime => "runtime",
            Layer::Spec => "spec",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an action changes the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Observes only; repeating it is harmless.
    Read,
    /// Changes state in the provider.
    Commit,
}

impl Effect {
    /// The effect as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Commit => "commit",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who decides, as recorded in the log and the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeciderIdentity {
    /// `scripted`, `replay`, `bench`, or a model provider.
    pub kind: String,
    /// A name for humans: a script path, a model name.
    pub name: String,
    /// A digest of what determines its decisions (a script's content), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl fmt::Display for DeciderIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// An action as recorded in an observation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActionRecord {
    /// The tool name.
    pub name: String,
    /// Read or commit.
    pub effect: Effect,
    /// For the decider.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Arc<Value>,
    /// What the provider says of the tool (MCP annotations), when it says anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<ToolHints>,
    /// A web page's tool: where the browser saw it registered (facts the host observed, not
    /// the page's claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<ToolOrigin>,
}

/// Where a web page's tool came from, as the browser saw it: the origin of the page whose
/// document registered it, and the origin of the script that made the registration (the
/// first frame of its stack trace). A script from another origin than the page's is a third
/// party's (an analytics or ad script), which a policy may refuse to let offer tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolOrigin {
    /// The page's origin (`scheme://host:port`).
    pub page: String,
    /// The registering script's origin; the page's own for an inline script, empty when the
    /// browser did not say.
    #[serde(default)]
    pub script: String,
}

impl ToolOrigin {
    /// The registering script's origin when it is not the page's: a third party's tool.
    pub fn third_party(&self) -> Option<&str> {
        (!self.script.is_empty() && self.script != self.page).then_some(self.script.as_str())
    }
}

/// The name whose text a tool's output and description are, for provenance: the provider's,
/// or for a web page's tool that a third party's script registered, `<provider> via
/// <script origin>` — never a provider's name (it has spaces), so never trusted.
pub fn text_source<'a>(
    provider: &'a str,
    origin: Option<&ToolOrigin>,
) -> std::borrow::Cow<'a, str> {
    match origin.and_then(ToolOrigin::third_party) {
        Some(script) => format!("{provider} via {script}").into(),
        None => provider.into(),
    }
}

/// What a web page shows of itself when observed: where it is and its title. Text the page
/// wrote, bounded and stripped of control characters; as untrusted as its tools' output.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PageSnapshot {
    /// The page's address.
    pub url: String,
    /// The document's title.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
}

impl PageSnapshot {
    /// The longest address kept, in bytes.
    pub const URL_MAX: usize = 2048;
    /// The longest title kept, in bytes.
    pub const TITLE_MAX: usize = 512;

    /// A snapshot of what a browser reported, bounded and cleaned.
    pub fn new(url: &str, title: &str) -> PageSnapshot {
        PageSnapshot {
            url: clean(url, Self::URL_MAX),
            title: clean(title, Self::TITLE_MAX),
        }
    }

    /// Its text, for provenance.
    pub fn text(&self) -> String {
        format!("{}\n{}", self.url, self.title)
    }
}

/// `text` without control characters, cut to at most `max` bytes on a character boundary.
fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

/// What a provider declares about a tool (MCP's annotation hints). A claim, not a fact: only a
/// trusted provider's hints loosen anything; policies see them all, marked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolHints {
    /// `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Whether the provider that declares them is trusted (otherwise they are its claim).
    #[serde(default)]
    pub trusted: bool,
}

/// What a decider chose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Call a tool.
    Call {
        /// The tool's name.
        tool: String,
        /// A handle from a projection; when absent the current projection's handle for `tool`
        /// is used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<HandleId>,
        /// The proposed arguments.
        args: Arc<Value>,
        /// Arguments the decider says are carried values: argument name to `step.output`.
        /// Each claim is checked against the evidence.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        claims: Vec<Claim>,
    },
    /// Declare the step done. Judged against evidence, not trusted.
    Done {
        /// The decider's summary.
        #[serde(default)]
        summary: String,
    },
    /// Decline to continue the step.
    Decline {
        /// Why.
        #[serde(default)]
        reason: String,
    },
    /// Ask the person the run acts for, instead of guessing: the run waits for the answer,
    /// which must satisfy `schema`, and the step goes on with it (trusted, as the objective is).
    Ask {
        /// What to ask.
        prompt: String,
        /// A JSON Schema the answer must satisfy (absent: a string).
        #[serde(default = "text_answer")]
        schema: Arc<Value>,
    },
    /// Sleep: the run waits, held by the store and by no process, until a time or for a
    /// duration, and the step goes on when it wakes.
    Wait {
        /// How long.
        wait: crate::timer::Wait,
        /// Why, in the decider's words.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// Fix the run's grants before anything is read (a spec with `plan_first`): step id to
    /// the tools and argument constraints the objective needs, proposed from the objective
    /// alone.
    Plan {
        /// Step id to its grant.
        grants: std::collections::BTreeMap<String, crate::spec::Grant>,
    },
}

/// A decider's claim that an argument holds a carried value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Claim {
    /// The argument name.
    pub arg: String,
    /// `step.output`.
    pub carried: String,
}

/// The schema of an answer a question does not describe: a string.
fn text_answer() -> Arc<Value> {
    Arc::new(serde_json::json!({"type": "string"}))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Tokens and cost a decision used, when the decider reports them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens the provider served from its cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Output tokens spent reasoning (part of `output_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Cost in micro-dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<u64>,
}

/// What decisions reported they used, summed: a run's or a step's evidence of its spending.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageSum {
    /// Decisions whose decider reported usage (a scripted decider reports none).
    pub decisions: u32,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Input tokens served from the provider's cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Output tokens spent reasoning (part of `output_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// What the priced decisions cost, in micro-dollars (from the model table's prices).
    pub cost_micro_usd: u64,
    /// Decisions reported with no price known for their model: their cost is not in
    /// `cost_micro_usd`.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub unpriced: u32,
}

impl Default for UsageSum {
    fn default() -> UsageSum {
        UsageSum::new()
    }
}

impl UsageSum {
    /// Nothing reported yet (`const`, for a step's state that never ran).
    pub const fn new() -> UsageSum {
        UsageSum {
            decisions: 0,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            reasoning_tokens: 0,
            cost_micro_usd: 0,
            unpriced: 0,
        }
    }

    /// Counts one decision's usage in.
    pub fn add(&mut self, u: &Usage) {
        self.decisions = self.decisions.saturating_add(1);
        self.input_tokens = self.input_tokens.saturating_add(u.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(u.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(u.cached_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(u.reasoning_tokens);
        match u.cost_micro_usd {
            Some(c) => self.cost_micro_usd = self.cost_micro_usd.saturating_add(c),
            None => self.unpriced = self.unpriced.saturating_add(1),
        }
    }

    /// Input plus output tokens: what `limits.tokens_max` counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// No decision reported usage.
    pub fn is_empty(&self) -> bool {
        self.decisions == 0
    }
}

/// A structured error: what the decider is told and what the report attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fault {
    /// Stable code, e.g. `unknown_tool`, `invalid_arguments`, `provider_error`
    /// (`warrant explain` lists them).
    pub code: String,
    /// The layer it is attributed to.
    pub layer: Layer,
    /// For humans and deciders.
    pub message: String,
    /// The fault inside this one: a child run's own attribution, when a delegating step
    /// failed because its child did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<Box<Fault>>,
}

impl Fault {
    /// A fault with this code, layer and message.
    pub fn new(code: Code, layer: Layer, message: impl Into<String>) -> Fault {
        Fault {
            code: code.as_str().to_owned(),
            layer,
            message: message.into(),
            inner: None,
        }
    }

    /// A fault with this code, attributed to the code's usual layer.
    pub fn of(code: Code, message: impl Into<String>) -> Fault {
        Fault::new(code, code.layer(), message)
    }

    /// The code, when this build knows it.
    pub fn known_code(&self) -> Option<Code> {
        self.code.parse().ok()
    }
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The provider ran it and reported success.
    Ok,
    /// Warrant refused it before dispatch (unknown tool, invalid arguments, stale handle...).
    Rejected,
    /// An authority did not allow it; the provider was not called.
    StoppedByPolicy,
    /// The provider was called and reported an error or failed.
    ProviderError,
    /// The call's outcome was lost in a crash and an operator reconciled it: it did not happen.
    NotPerformed,
    /// The run was cancelled while the call (a read) was in flight.
    Cancelled,
    /// An interceptor suppressed it; the provider was not called.
    Halted,
    /// The external execution-control authority did not allow it; the provider was not called.
    StoppedByExecutionControl,
}

impl CallStatus {
    /// The status as the log writes it, e.g. `stopped_by_policy`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Rejected => "rejected",
            CallStatus::StoppedByPolicy => "stopped_by_policy",
            CallStatus::ProviderError => "provider_error",
            CallStatus::NotPerformed => "not_performed",
            CallStatus::Cancelled => "cancelled",
            CallStatus::Halted => "halted",
            CallStatus::StoppedByExecutionControl => "stopped_by_execution_control",
        }
    }
}

impl fmt::Display for CallStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is known of a commit whose answer never came.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DoubtStage {
    /// Its intent is recorded; the process stopped before its result was: whether it was sent
    /// at all is unknown.
    IntentRecorded,
    /// It was sent and no answer came in time (a timeout, the deadline, a cancellation).
    SentNoAnswer,
    /// It was sent and its answer was lost (the connection dropped, the server died).
    AnswerLost,
}

impl DoubtStage {
    /// What is known, in words.
    pub fn describe(self) -> &'static str {
        match self {
            DoubtStage::IntentRecorded => {
                "the intent was recorded, then the process stopped before a result was: whether it was sent is unknown"
            }
            DoubtStage::SentNoAnswer => "it was sent and no answer came",
            DoubtStage::AnswerLost => "it was sent and its answer was lost",
        }
    }
}

impl ApprovalScope {
    /// The scope as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalScope::Once => "once",
            ApprovalScope::Run => "run",
            ApprovalScope::Plan => "plan",
        }
    }
}

/// Who a run acts for: the tenant, the user, and the agent (the decider).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Principal {
    /// The tenant.
    pub tenant: String,
    /// The user the run acts for.
    pub user: String,
    /// The agent: the decider's identity.
    pub agent: String,
}

/// The build of Warrant that started a run (`run_started.build`), so runs recorded by
/// different builds can be told apart. Set by the front door that starts runs
/// (`Engine::with_build`); an embedder names its own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BuildInfo {
    /// The version (`0.1.0`).
    pub version: String,
    /// The git commit it was built from, short, with `-dirty` when the tree had changes;
    /// `unknown` when it was not built from git.
    #[serde(default)]
    pub commit: String,
    /// The day it was built (UTC, `YYYY-MM-DD`).
    #[serde(default)]
    pub date: String,
    /// The cargo features compiled in, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
}

impl std::fmt::Display for BuildInfo {
    /// `0.1.0 (commit 1a2b3c4, built 2026-03-01, features: otlp, postgres)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let features = if self.features.is_empty() {
            "none".to_owned()
        } else {
            self.features.join(", ")
        };
        write!(
            f,
            "{} (commit {}, built {}, features: {features})",
            self.version, self.commit, self.date
        )
    }
}

/// How far an approval reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call, these arguments, once.
    Once,
    /// This action (provider, tool, schema) for the rest of the run.
    Run,
    /// This call, and the run's plan (`plan_first`) as a whole: every later commit within the
    /// plan's grants goes on without asking (what the grants leave open is still ruled on).
    Plan,
}

/// An interceptor's narrowing of a call's arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Narrowing {
    /// The interceptor.
    pub by: String,
    /// Why.
    pub reason: String,
}

/// Where a carried value came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Lineage {
    /// The run.
    pub run: RunId,
    /// The publishing step.
    pub step: StepId,
    /// The call whose result holds it.
    pub call: CallId,
    /// The tool of that call.
    pub tool: String,
    /// JSON pointer into the result.
    pub path: String,
}

/// How a step ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum StepEnd {
    /// The evidence shows the step did what it must.
    Attained,
    /// It ended without that evidence.
    NotAttained {
        /// Attributed cause.
        fault: Fault,
    },
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Every terminal requirement is met, judged from evidence.
    Attained,
    /// The run ended with requirements missing.
    NotAttained {
        /// Each missing requirement with its attributed cause.
        missing: Vec<Missing>,
    },
    /// The run could not go on.
    Failed {
        /// The attributed cause.
        fault: Fault,
    },
    /// Cancelled by an operator.
    Cancelled {
        /// Who cancelled.
        by: String,
        /// Why.
        reason: String,
    },
    /// A limit was reached.
    Exhausted {
        /// The limit's name, e.g. `decisions_max`.
        limit: String,
        /// Its value.
        value: u64,
    },
    /// A gateway session ended: its client left (or the session could not go on). A session
    /// has no objective, so nothing was attained or missed; its calls are the evidence.
    Closed {
        /// Who closed it (the client, or the gateway).
        by: String,
        /// Why.
        reason: String,
    },
}

impl Outcome {
    /// The outcome's name: `attained`, `not_attained`, ...
    pub fn name(&self) -> &'static str {
        crate::status::RunStatus::ended(self).name()
    }

    /// The layer blamed, when there is one.
    pub fn layer(&self) -> Option<Layer> {
        match self {
            Outcome::NotAttained { missing } => missing.first().map(|m| m.fault.layer),
            Outcome::Failed { fault } => Some(fault.layer),
            _ => None,
        }
    }
}

/// A terminal requirement that was not met.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Missing {
    /// The step.
    pub step: StepId,
    /// `commit` (a `commit: required` step did not commit) or `attained`.
    pub requirement: String,
    /// Attributed cause.
    pub fault: Fault,
}

/// A child run's link to the run that delegated to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParentLink {
    /// The parent run.
    pub run: RunId,
    /// Its delegating step.
    pub step: StepId,
    /// Which of the step's children this is (from 0).
    pub index: u32,
    /// How deep in the tree (the root's children are 1).
    pub depth: u32,
    /// The ancestors' run ids, the root first, the parent last.
    pub chain: Vec<RunId>,
    /// What the child was given, by input name, with where each value came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, Given>,
}

/// One input given to a child: the value and its lineage (for a literal: the parent's step,
/// with tool `(literal)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Given {
    /// The value.
    pub value: Arc<Value>,
    /// Where it came from.
    pub lineage: Lineage,
}

pub use crate::spec::Budget;

/// What a run spent, as a child reports it to its parent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Spent {
    /// Decisions taken.
    pub decisions: u32,
    /// Tool calls started.
    pub calls: u32,
    /// Tokens the decider reported.
    pub tokens: u64,
    /// Cost the decider reported, in micro-dollars.
    pub cost_micro_usd: u64,
}

/// Whether a decision's context held only trusted text (its `tainted_by` is left out).
fn untainted(t: &Arc<[String]>) -> bool {
    t.is_empty()
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The run began. Carries everything needed to re-enter or replay it.
    RunStarted {
        /// `warrant.events/1` (boxed: 8 bytes fewer than a `String` keep an event within its
        /// 256-byte allocation).
        format: Box<str>,
        /// The run.
        run_id: RunId,
        /// The frozen spec.
        spec: Arc<Spec>,
        /// Its digest.
        spec_hash: String,
        /// Who decides.
        decider: DeciderIdentity,
        /// The authority that rules on its calls, as it describes itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        authority: Option<Arc<Value>>,
        /// The execution control required for its commit calls, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_control: Option<Arc<Value>>,
        /// Who it acts for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        principal: Option<Box<Principal>>,
        /// Milliseconds spent before the run started: reading the spec, starting and connecting
        /// to its providers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        setup_ms: Option<u64>,
        /// The rules its arguments' provenance is labelled by (`provenance::RULES`; absent: 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provenance: Option<u32>,
        /// How many characters of a provider's own message a fault leads with
        /// (`text::PROVIDER_MESSAGE_MAX`; absent: 300, the bound of earlier builds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<std::num::NonZeroU16>,
        /// The run that delegated to this one, when it is a child.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<Box<ParentLink>>,
        /// The values of the spec's inputs its starter gave (a child's come with `parent`):
        /// a user's values, like the objective; steps bind them as `input.<name>`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inputs: Option<Arc<BTreeMap<String, Value>>>,
        /// The build of Warrant that started it, when the front door said (absent in logs
        /// recorded before builds were named). Replay takes it from the log: a run replays
        /// the same whichever build replays it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        build: Option<Arc<BuildInfo>>,
    },
    /// A step began.
    StepStarted {
        /// The step.
        step: StepId,
        /// Its provider.
        provider: String,
    },
    /// A provider offered a new observation (recorded when its version changes).
    Observed {
        /// The step observing.
        step: StepId,
        /// The provider.
        provider: String,
        /// The observation's version.
        version: String,
        /// The actions offered.
        actions: Arc<[ActionRecord]>,
        /// A web page's snapshot of itself (a page provider only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        page: Option<PageSnapshot>,
    },
    /// Observing the provider failed.
    ObserveFailed {
        /// The step.
        step: StepId,
        /// The provider.
        provider: String,
        /// What went wrong (provider layer).
        fault: Fault,
    },
    /// A provider found stopped (its process exited) with nothing of this run's in flight on
    /// it, or only a read, was started again before the step went on; or could not be, and
    /// the run stopped here, interrupted, for a later `resume` to start it.
    ProviderRestarted {
        /// The step.
        step: StepId,
        /// The provider.
        provider: String,
        /// The call that found it stopped (asked again once it runs); absent for an
        /// observation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<CallId>,
        /// What showed it had stopped.
        cause: Fault,
        /// Starts tried.
        attempts: u32,
        /// Why it could not be started again; absent when it runs again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fault: Option<Fault>,
    },
    /// The decider chose. Handles `h<decision>.<i>` were issued for this decision's observation.
    Decided {
        /// The step.
        step: StepId,
        /// 1-based decision number in the run.
        decision_no: u32,
        /// The observation version the projection showed.
        version: String,
        /// The decision.
        #[serde(flatten)]
        decision: Decision,
        /// Usage, when reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// A live decider's exchange with its model (requests, attempts, responses; no
        /// secrets), or, for a later call of one model answer, which answer it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exchange: Option<Arc<Value>>,
        /// The untrusted providers whose output (or error) the decider had been shown by this
        /// decision, in this run (provenance rules 2): the integrity of its context. Empty:
        /// only trusted text.
        #[serde(default, skip_serializing_if = "untainted")]
        tainted_by: Arc<[String]>,
    },
    /// The decider failed to decide.
    DecideFailed {
        /// The step.
        step: StepId,
        /// The observation version the projection showed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// What went wrong.
        fault: Fault,
        /// The exchange with the model, when it got that far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exchange: Option<Arc<Value>>,
    },
    /// A call began. Every call started has exactly one `call_finished`.
    CallStarted {
        /// The call.
        call: CallId,
        /// The step.
        step: StepId,
        /// The tool named.
        tool: String,
        /// The handle it uses, when resolved.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<HandleId>,
        /// The arguments as the decider proposed them.
        args: Arc<Value>,
        /// For a call an operator had sent again after reconciling that an earlier one did not
        /// happen: that earlier call. No decision proposed it and it uses no handle.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resend_of: Option<CallId>,
    },
    /// The intent to invoke: durable before the provider is called.
    CallDispatched {
        /// The call.
        call: CallId,
        /// Read or commit.
        effect: Effect,
        /// The arguments executed (after inputs were filled).
        args: Arc<Value>,
        /// Digest of the executed arguments.
        args_digest: String,
        /// Sent to providers that accept one.
        idempotency_key: String,
        /// Where each argument value was observed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        provenance: Vec<ArgLabel>,
        /// The interceptors that narrowed the proposed arguments into `args`, and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        narrowed: Vec<Narrowing>,
    },
    /// A call ended.
    CallFinished {
        /// The call.
        call: CallId,
        /// How.
        status: CallStatus,
        /// For a call an authority stopped: the digest of the arguments it ruled on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ruled_args_digest: Option<String>,
        /// For a call refused after interceptors narrowed it: who narrowed it, and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        narrowed: Vec<Narrowing>,
        /// ... and the arguments as narrowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        narrowed_args: Option<Arc<Value>>,
        /// The provider's result (when it ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Arc<Value>>,
        /// The structured error (when it did not succeed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fault: Option<Fault>,
    },
    /// A process re-entered the run after the one running it stopped.
    RunResumed {
        /// The call whose intent was recorded without a result, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_flight: Option<CallId>,
        /// Milliseconds the re-entering process spent connecting to providers first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        setup_ms: Option<u64>,
        /// The principal (`tenant/user`) who asked for the re-entry (`POST .../resume`);
        /// absent when a process re-entered the run on its own (at start, after an answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A queued run's first driving: the process that took it up (a fleet's worker, a server
    /// re-entering the runs it queued) begins it here, after connecting its providers. Not a
    /// resumption: nothing ran before.
    RunTakenUp {
        /// Milliseconds the process spent connecting to providers first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        setup_ms: Option<u64>,
        /// The principal (`tenant/user`) who asked for it (`POST .../resume`); absent when a
        /// process took the run up on its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A commit's outcome was lost and repeating it is not safe: the run waits until an
    /// operator reconciles it. It is never silently repeated and never silently dropped.
    CallInDoubt {
        /// The call.
        call: CallId,
        /// Its provider.
        provider: String,
        /// Its tool.
        tool: String,
        /// Digest of the arguments it was dispatched with.
        args_digest: String,
        /// Why it cannot simply be repeated.
        reason: String,
        /// The surface's error, when the call itself came back without an answer (a timeout).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<Fault>,
        /// What is known: intent recorded, sent with no answer, or answer lost.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stage: Option<DoubtStage>,
    },
    /// An operator said whether an in-doubt effect happened.
    CallReconciled {
        /// The call.
        call: CallId,
        /// Whether the effect happened.
        happened: bool,
        /// Who reconciled it.
        by: String,
        /// Their note.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
        /// For an effect that did not happen: send the call again (a new call, ruled on again,
        /// under a new idempotency key).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        resend: bool,
    },
    /// An authority asked for approval of a call: a durable capability request. The call waits.
    ApprovalRequested {
        /// The request's id, unique in the store: `<run>-a<n>`.
        request: String,
        /// The call.
        call: CallId,
        /// The step.
        step: StepId,
        /// Who acts: the run's principal.
        principal: String,
        /// The provider (the target).
        provider: String,
        /// The tool.
        tool: String,
        /// Read or commit.
        effect: Effect,
        /// Digest of the arguments to execute: the approval binds them.
        args_digest: String,
        /// Digest of the action's input schema: the approval binds it.
        schema_digest: String,
        /// The arguments, for the approver to see.
        args: Arc<Value>,
        /// Where each argument value was observed.
        #[serde(default, skip_serializing_if = "<[ArgLabel]>::is_empty")]
        provenance: Box<[ArgLabel]>,
        /// What the authority said needs approving.
        reason: Box<str>,
        /// The scope proposed to the approver.
        proposed_scope: ApprovalScope,
        /// Unresolved at this time, the request expires.
        expires_at_ms: u64,
        /// How many different people must approve it (absent: one).
        #[serde(default, skip_serializing_if = "one_or_none")]
        approvers: u32,
    },
    /// An approver answered a request (an operator input, like a reconciliation).
    ApprovalResolved {
        /// The request.
        request: String,
        /// Approved or denied.
        approved: bool,
        /// For an approval: `once` (this call), `run` (this action for the rest of the run) or
        /// `plan` (this call, and the run's plan as a whole).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<ApprovalScope>,
        /// For an approval: until when it holds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until_ms: Option<u64>,
        /// Who answered.
        by: String,
        /// Why (required for a denial).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
        /// For an approval with edits: the arguments the person approved instead of the ones
        /// asked about. The call runs with them — validated and ruled on again — and the
        /// approval binds their digest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_args: Option<Arc<Value>>,
        /// For an approval that needs several people: how many must still approve after this
        /// one (0: this one completes it, or it needed one).
        #[serde(default, skip_serializing_if = "is_zero_u32")]
        awaiting: u32,
        /// The rule under which the answerer was allowed to answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<Box<str>>,
    },
    /// A request expired unanswered; the call it held is refused.
    ApprovalExpired {
        /// The request.
        request: String,
    },
    /// A person's standing grant answered a request at once: the call goes on without waiting
    /// (recorded with the request, in the same append).
    ApprovalGranted {
        /// The request.
        request: String,
        /// The grant, as it was when it answered.
        grant: Arc<crate::standing::StandingGrant>,
        /// The rule under which the grant may answer (the approve policies').
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<Box<str>>,
    },
    /// An approval was used by a dispatch: appended atomically with the call's intent, so it is
    /// consumed exactly once.
    ApprovalConsumed {
        /// The request.
        request: String,
        /// The call it let through.
        call: CallId,
        /// The standing grant that gave the approval, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<String>,
    },
    /// The decider asked the person the run acts for a question: the run waits for the answer.
    QuestionAsked {
        /// `<run>-q<n>`.
        question: String,
        /// The step that asks.
        step: StepId,
        /// What is asked, as the decider wrote it.
        prompt: String,
        /// The JSON Schema the answer must satisfy.
        schema: Arc<Value>,
    },
    /// A person answered a question (checked against its schema before it was recorded): the
    /// answer enters the run as the person's words, trusted as the objective is.
    QuestionAnswered {
        /// The question.
        question: String,
        /// The answer.
        answer: Arc<Value>,
        /// Who answered (`tenant/user`, or a local user).
        by: String,
    },
    /// During a call, its provider asked the person something (an MCP server's elicitation)
    /// and a front door with the person at hand (the gateway's client) passed it on: what
    /// was asked and what they said, as the provider got it. Nothing of the run is decided by
    /// it: the answer went to the provider, whose result (which may carry it) is the call's.
    ProviderAsked {
        /// The call in flight when it asked.
        call: CallId,
        /// What it asked.
        message: String,
        /// The form of the answer it asked for (a JSON Schema).
        schema: Arc<Value>,
        /// What the person did: `accept`, `decline` or `cancel` (MCP's), or `unasked` when
        /// nobody could be asked and the provider was told `decline`.
        action: String,
        /// Their answer, when they accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<Arc<Value>>,
    },
    /// The run sleeps until `until_ms`: the store holds it (`sleeping`), no process does,
    /// and whichever process drives runs then wakes it. Its time asleep is not driving time.
    TimerSet {
        /// The step that waits (before it begins its work, for a step's own `wait`).
        step: StepId,
        /// When it wakes (ms since the epoch).
        until_ms: u64,
        /// Why: the decider's reason, or the step's `wait`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// The timer's time came: the run is awake and the step goes on.
    TimerFired {
        /// The step.
        step: StepId,
    },
    /// A value lifted from a call result into carried state.
    Carried {
        /// `step.output`.
        name: String,
        /// The value.
        value: Arc<Value>,
        /// Where it came from.
        lineage: Lineage,
    },
    /// A step ended.
    StepFinished {
        /// The step.
        step: StepId,
        /// How.
        #[serde(flatten)]
        end: StepEnd,
    },
    /// A step never ran because a step it comes after was not attained.
    StepSkipped {
        /// The step.
        step: StepId,
        /// The dependency that was not attained.
        blocked_by: StepId,
        /// The dependency's cause, carried over.
        fault: Fault,
    },
    /// A step delegated to a child run: recorded, with what the child may spend, before the
    /// child's own log begins.
    ChildSpawned {
        /// The delegating step.
        step: StepId,
        /// The child (`<this run>.<n>`).
        child: RunId,
        /// Which of the step's children it is (from 0).
        index: u32,
        /// What the delegation asked for the child.
        asked: Budget,
        /// What it was given: the ask (or the child spec's own limits) cut to what this run
        /// had left.
        granted: Budget,
    },
    /// A child has nothing to do until a person answers it (an approval, an effect in
    /// doubt): this run waits with it.
    ChildWaiting {
        /// The delegating step.
        step: StepId,
        /// The children that wait.
        children: Vec<RunId>,
    },
    /// A child ended: its outcome, what it returned and what it spent (counted against this
    /// run).
    ChildFinished {
        /// The delegating step.
        step: StepId,
        /// The child.
        child: RunId,
        /// How it ended.
        #[serde(flatten)]
        outcome: Outcome,
        /// What it spent.
        spent: Spent,
    },
    /// The run ended. Nothing follows it.
    RunFinished {
        /// How.
        #[serde(flatten)]
        outcome: Outcome,
    },
    /// An event of a type this build does not know (written by a newer one): kept as it was
    /// read, never written. `show` and `report` say so; `resume` refuses the run.
    #[serde(skip)]
    Unrecognized {
        /// Its `type`.
        type_name: String,
        /// The event as stored.
        raw: Arc<Value>,
    },
}

impl EventKind {
    /// The event's `type` tag.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::StepStarted { .. } => "step_started",
            EventKind::Observed { .. } => "observed",
            EventKind::ObserveFailed { .. } => "observe_failed",
            EventKind::ProviderRestarted { .. } => "provider_restarted",
            EventKind::Decided { .. } => "decided",
            EventKind::DecideFailed { .. } => "decide_failed",
            EventKind::CallStarted { .. } => "call_started",
            EventKind::CallDispatched { .. } => "call_dispatched",
            EventKind::CallFinished { .. } => "call_finished",
            EventKind::RunResumed { .. } => "run_resumed",
            EventKind::RunTakenUp { .. } => "run_taken_up",
            EventKind::CallInDoubt { .. } => "call_in_doubt",
            EventKind::CallReconciled { .. } => "call_reconciled",
            EventKind::ApprovalRequested { .. } => "approval_requested",
            EventKind::ApprovalResolved { .. } => "approval_resolved",
            EventKind::ApprovalExpired { .. } => "approval_expired",
            EventKind::ApprovalGranted { .. } => "approval_granted",
            EventKind::ApprovalConsumed { .. } => "approval_consumed",
            EventKind::QuestionAsked { .. } => "question_asked",
            EventKind::QuestionAnswered { .. } => "question_answered",
            EventKind::ProviderAsked { .. } => "provider_asked",
            EventKind::TimerSet { .. } => "timer_set",
            EventKind::TimerFired { .. } => "timer_fired",
            EventKind::Carried { .. } => "carried",
            EventKind::StepFinished { .. } => "step_finished",
            EventKind::StepSkipped { .. } => "step_skipped",
            EventKind::ChildSpawned { .. } => "child_spawned",
            EventKind::ChildWaiting { .. } => "child_waiting",
            EventKind::ChildFinished { .. } => "child_finished",
            EventKind::RunFinished { .. } => "run_finished",
            EventKind::Unrecognized { .. } => "unrecognized",
        }
    }
}

/// Every event type this build knows.
pub const EVENT_TYPES: &[&str] = &[
    "run_started",
    "step_started",
    "observed",
    "observe_failed",
    "provider_restarted",
    "decided",
    "decide_failed",
    "call_started",
    "call_dispatched",
    "call_finished",
    "run_resumed",
    "run_taken_up",
    "call_in_doubt",
    "call_reconciled",
    "approval_requested",
    "approval_resolved",
    "approval_expired",
    "approval_granted",
    "approval_consumed",
    "question_asked",
    "question_answered",
    "provider_asked",
    "timer_set",
    "timer_fired",
    "carried",
    "step_finished",
    "step_skipped",
    "child_spawned",
    "child_waiting",
    "child_finished",
    "run_finished",
];

/// The JSON encoding of one event, exactly as stored and as replay compares it. An
/// unrecognized event is written back as it was read.
pub fn encode(event: &Event) -> String {
    let mut out = Vec::with_capacity(256);
    encode_append(event, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| format!("{{\"unencodable\":\"{e}\"}}"))
}

/// [`encode`], appended to `out`: a writer encoding many events reuses one buffer.
pub fn encode_append(event: &Event, out: &mut Vec<u8>) {
    let start = out.len();
    // The events of every step have an encoder of their own; what it leaves, serde writes.
    if fast::encode(event, out) {
        return;
    }
    out.truncate(start);
    let written = match &event.kind {
        EventKind::Unrecognized { raw, .. } => serde_json::to_writer(&mut *out, &**raw),
        _ => serde_json::to_writer(&mut *out, event),
    };
    if let Err(e) = written {
        out.truncate(start);
        out.extend_from_slice(format!("{{\"unencodable\":\"{e}\"}}").as_bytes());
    }
}

/// The event in one stored JSON text. Tolerant as the format promises: fields this build does
/// not know are ignored, and an event of a type it does not know is kept as
/// [`EventKind::Unrecognized`]. Anything else that does not decode is an error.
pub fn decode(text: &str) -> Result<Event, String> {
    match serde_json::from_str::<Event>(text) {
        Ok(event) => Ok(event),
        Err(e) => {
            let raw: Value = serde_json::from_str(text).map_err(|_| e.to_string())?;
            let type_name = raw.get("type").and_then(Value::as_str).unwrap_or_default();
            if type_name.is_empty() || EVENT_TYPES.contains(&type_name) {
                return Err(e.to_string());
            }
            let number = |k: &str| raw.get(k).and_then(Value::as_u64);
            let (Some(seq), Some(at_ms)) = (number("seq"), number("at_ms")) else {
                return Err(format!(
                    "event of type `{type_name}` has no `seq` or `at_ms`"
                ));
            };
            Ok(Event {
                seq,
                at_ms,
                kind: EventKind::Unrecognized {
                    type_name: type_name.to_owned(),
                    raw: Arc::new(raw),
                },
            })
        }
    }
}

fn one_or_none(n: &u32) -> bool {
    *n <= 1
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    /// Every event a run records is kept (by the memory store, in the run's state) as an
    /// `Arc<Event>`: at 240 bytes or less it takes a 256-byte allocation. A variant that grows
    /// past it makes every event bigger; box its rare fields instead.
    #[test]
    fn an_event_fits_a_256_byte_allocation() {
        assert!(
            std::mem::size_of::<super::Event>() <= 240,
            "an event is {} bytes",
            std::mem::size_of::<super::Event>()
        );
    }
}

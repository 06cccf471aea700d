//! The `warrant/v1` spec: a frozen objective with its providers, steps and limits.
//!
//! A spec is read from YAML or JSON ([`Spec::parse`]); structural checks that need more than the
//! types live in [`crate::validate`].
//!
//! The types accept fields they do not know, so that a run log written by a newer build (which
//! freezes its spec in `run_started`) still reads. Strictness belongs to what a person writes:
//! [`crate::validate::load`] refuses an unknown field in a spec file, naming it and its line.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::canon;
use crate::ids::StepId;

/// The only spec version this build reads.
pub const SPEC_VERSION: &str = "warrant/v1";

/// Default lifetime of a handle, on the injected clock.
pub const HANDLE_TTL_MS_DEFAULT: u64 = 30_000;

/// A frozen objective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spec {
    /// Always `warrant/v1`.
    pub version: String,
    /// A stable name for the objective, used in reports and comparisons.
    pub id: String,
    /// The objective in words, shown to the decider.
    pub objective: String,
    /// The decider used when the command line names none, e.g. `scripted:script.yaml`
    /// (a path relative to the spec file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider: Option<String>,
    /// The providers the run acts on, by the name steps use.
    pub providers: BTreeMap<String, ProviderSpec>,
    /// Cedar policy files or folders (relative to the spec) that rule on every call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<String>,
    /// When present, every commit call must also be allowed by an external execution-control
    /// authority; with no `url`, none can allow and every commit is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_control: Option<ExecutionControlSpec>,
    /// A security profile: defaults a user adopts without writing policies
    /// (`untrusted-input`; `warrant run --profile` sets it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// Before its first decision reads anything, the decider proposes the grant of every step
    /// that has none, from the objective alone; the proposal is recorded and rules the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_first: bool,
    /// The inputs a run of this spec receives, by name: from the step that delegates to it
    /// (a child), or from whoever starts it (an operator's catalog spec), each value checked
    /// against its JSON Schema when one is given. Written as a list of names, or as a map of
    /// names to schemas. Steps bind them as `input.<name>`.
    #[serde(default, skip_serializing_if = "Inputs::is_empty")]
    pub inputs: Inputs,
    /// The stages of the trajectory, in the order they are considered.
    pub steps: Vec<StepSpec>,
    /// Limits on the run.
    #[serde(default)]
    pub limits: Limits,
}

/// A spec's inputs, in the order written: each name with the JSON Schema its value must meet,
/// when the spec gives one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs(Vec<(String, Option<serde_json::Value>)>);

impl Inputs {
    /// Inputs named, with no schemas.
    pub fn names_only<I: IntoIterator<Item = String>>(names: I) -> Inputs {
        Inputs(names.into_iter().map(|n| (n, None)).collect())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `name` is one.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    /// Their names, in order.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(n, _)| n)
    }

    /// Each name with its schema, if any.
    pub fn iter(&self) -> impl Iterator<Item = (&String, Option<&serde_json::Value>)> {
        self.0.iter().map(|(n, s)| (n, s.as_ref()))
    }
}

impl Serialize for Inputs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        // Names alone are written as a list, as specs always wrote them.
        if self.0.iter().all(|(_, schema)| schema.is_none()) {
            let mut seq = s.serialize_seq(Some(self.0.len()))?;
            for (n, _) in &self.0 {
                seq.serialize_element(n)?;
            }
            return seq.end();
        }
        let any = serde_json::Value::Object(serde_json::Map::new());
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (n, schema) in &self.0 {
            map.serialize_entry(n, schema.as_ref().unwrap_or(&any))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Inputs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Inputs, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Inputs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of input names, or a map of input names to JSON Schemas")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Inputs, A::Error> {
                let mut out = Vec::new();
                while let Some(n) = a.next_element::<String>()? {
                    out.push((n, None));
                }
                Ok(Inputs(out))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Inputs, A::Error> {
                let mut out = Vec::new();
                while let Some((n, schema)) = a.next_entry::<String, serde_json::Value>()? {
                    out.push((n, Some(schema)));
                }
                Ok(Inputs(out))
            }
        }
        d.deserialize_any(Visit)
    }
}

impl JsonSchema for Inputs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Inputs".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Input names, or input names with the JSON Schema of each value.",
            "oneOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "object", "additionalProperties": {"type": ["object", "boolean"]}}
            ]
        })
    }
}

/// How a provider is reached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderSpec {
    /// A built-in reference provider (`cafe`, `gallery`, `bakery`) or one an embedder
    /// registered under this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// An MCP server: a child process on stdio (`command`) or a Streamable HTTP endpoint
    /// (`url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpSpec>,
    /// An HTTP API described by an OpenAPI 3.0 or 3.1 document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openapi: Option<OpenApiSpec>,
    /// A web page whose tools are its own, registered natively in a browser
    /// (`document.modelContext`, WebMCP): Warrant opens it in a headless Chromium and calls
    /// them through the DevTools protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webmcp: Option<WebMcpSpec>,
    /// Other providers of this spec joined into one surface: their tools offered together,
    /// each named `<member>.<tool>`. Trusted only when every member is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub join: Vec<String>,
    /// Settings the provider reads (e.g. the `ledger` provider's `file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// Whether its output is believed (`trusted`) or only carried with a label saying where it
    /// came from (`untrusted`, the default). Policies see the difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<Trust>,
    /// A provider the operator registered under this name (`--providers FILE`): its program,
    /// endpoint, settings and secrets are the operator's, and a spec names only the name (and
    /// may narrow its trust to `untrusted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered: Option<String>,
    /// The digest of the operator's definition a run of this spec started with (written by
    /// Warrant when it starts the run, never by a person): a run is re-entered only over the
    /// same definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
}

/// A WebMCP page: the tools a page registers in a browser, offered as a provider's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebMcpSpec {
    /// The page, an http(s) URL. Its tools are those its documents register; a navigation
    /// to another document ends the old one's.
    pub url: String,
    /// The DevTools endpoint of a Chromium that runs already (`ws://127.0.0.1:9222/devtools/
    /// browser/<id>`), to attach to instead of starting one (the default: a headless Chromium
    /// Warrant starts and ends, shared by the providers of the process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
    /// The effect class of a tool, whatever the page's annotations say, e.g. `{read_menu:
    /// read}`. Tools not named follow the `readOnlyHint` of a trusted page, and are commits
    /// otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub effects: BTreeMap<String, crate::event::Effect>,
    /// Largest result kept whole, in bytes of JSON (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes_max: Option<usize>,
    /// Whose cookies and storage the page has: the run's (`run`, the default: every page of
    /// one run with `run` shares one browser context, no other run's) or its own
    /// (`provider`: a browser context of its own).
    #[serde(default, skip_serializing_if = "PageStorage::is_run")]
    pub storage: PageStorage,
}

/// Whose cookies and storage a WebMCP page has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PageStorage {
    /// The run's: shared by the run's pages that say `run`.
    #[default]
    Run,
    /// Its own.
    Provider,
}

impl PageStorage {
    fn is_run(&self) -> bool {
        *self == PageStorage::Run
    }
}

/// How to reach an MCP server: give `command` (stdio) or `url` (Streamable HTTP).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpSpec {
    /// The program and its arguments, e.g. `[npx, -y, some-server]`, started as a child
    /// process spoken to over stdio.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The Streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every HTTP request (`url` only); values are read as `env` values are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Environment of the child, besides the minimal one it always gets (`PATH`, `HOME`,
    /// `USER`, `LOGNAME`, `SHELL`, `TERM`, `TMPDIR`, `TZ`, `LANG`, `LC_*`): a value `$NAME` or
    /// `${NAME}` is read from Warrant's own environment (so a credential never appears in the
    /// spec); anything else is taken as written. Nothing else of Warrant's environment reaches
    /// the child.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The child's working directory (default: the spec's folder). Relative paths in `command`
    /// resolve against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The effect class of a tool, whatever the server's annotations say (the spec's author is
    /// the authority on it), e.g. `{read_text_file: read, write_file: commit}`. Tools not named
    /// follow the annotations of a trusted server, and are commits otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub effects: BTreeMap<String, crate::event::Effect>,
    /// Arguments the host supplies, by name (a tenant key, a session id): removed from every
    /// tool schema the decider sees, checked against the tool's schema and sent with every call
    /// to a tool that takes them. A decider that sets one is refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, serde_json::Value>,
    /// Largest result kept whole, in bytes of JSON; a larger one is cut to its head and marked
    /// `truncated` (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes_max: Option<usize>,
}

/// An HTTP API described by an OpenAPI document: each operation is a tool named by its
/// `operationId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenApiSpec {
    /// The document (JSON or YAML): a file relative to the spec, or an `http(s)://` URL. It is
    /// read again at each observation; a changed document invalidates older handles.
    pub document: String,
    /// Where calls go, e.g. `http://127.0.0.1:4200`; defaults to the document's first
    /// `servers` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Headers sent with every call; a value may name environment variables as `$NAME` or
    /// `${NAME}` (credentials never sit in the spec, and never appear in events).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Values the host supplies, by parameter name (or top-level body property): checked
    /// against the parameter's schema, sent with every call that takes them, and not offered
    /// to the decider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, serde_json::Value>,
    /// Only these operations (by `operationId`); all when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// The effect class of an operation when its method says otherwise (GET and HEAD are
    /// reads, every other method a commit), e.g. `{filter_flows: read}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub effects: BTreeMap<String, crate::event::Effect>,
    /// Most operations offered (default 64); the rest are reported, not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations_max: Option<usize>,
    /// Largest result kept whole, in bytes of JSON (default 1 MiB); a larger one is cut to its
    /// head and marked `truncated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes_max: Option<usize>,
}

/// The required external execution control.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionControlSpec {
    /// `http://host:port/path` of the endpoint asked about each commit call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Longest wait for its answer; no answer in time stops the call.
    #[serde(default = "default_control_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_control_timeout_ms() -> u64 {
    2_000
}

/// How far a provider's output is believed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Its output is trusted.
    Trusted,
    /// Its output is data, never authority (the default).
    Untrusted,
}

/// Whether a step must commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommitRule {
    /// The step may or may not commit.
    #[default]
    Optional,
    /// The step is attained only when a commit action in it succeeded; the run is attained
    /// only when it did.
    Required,
}

/// One stage of the trajectory, bound to one provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepSpec {
    /// Unique within the spec.
    pub id: StepId,
    /// The provider, by its key in `providers` (empty for a step that delegates).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// What the step is for, shown to the decider.
    #[serde(default)]
    pub intent: String,
    /// The tools the decider may call in this step (none for a step that delegates).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Steps that must be attained before this one runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<StepId>,
    /// `required` when the step must commit.
    #[serde(default)]
    pub commit: CommitRule,
    /// Whether the step counts toward the terminal predicate.
    #[serde(default)]
    pub required: bool,
    /// Tool arguments bound to carried outputs of earlier steps: argument name to
    /// `step.output`. A missing argument is filled from carried state; a different value is
    /// rejected.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
    /// Outputs this step publishes into carried state, lifted from a call result.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub publishes: BTreeMap<String, Publish>,
    /// Wait before the step begins its work: for a duration (`for: 2h`) or until a time
    /// (`until: 2026-12-08T09:00:00Z`). The run sleeps in the store meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<crate::timer::Wait>,
    /// Most decisions this step may take (overrides `limits.step_decisions_max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions_max: Option<u32>,
    /// What the step's objective needs, fixed before the decider reads anything: the tools it
    /// may call and constraints on their arguments. A call outside it is denied (or, with
    /// `beyond: ask`, needs a person's approval). Absent: no grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<Grant>,
    /// Tools whose results reach the decider only as typed fields extracted from them — no
    /// free text, so no instruction — and so do not taint its context: tool, then field name,
    /// then how to extract it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quarantine: BTreeMap<String, BTreeMap<String, Extract>>,
    /// The step hands its work to child runs instead of a decider: attained only on evidence
    /// from them (every child attained, and what they return lifted into carried state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegate: Option<Delegate>,
    /// A gateway session's one step: it has no objective; its decider (an outside MCP client)
    /// calls tools until it leaves, and the run ends `closed`. Not for trajectories.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open: bool,
}

/// Child runs a step delegates to, run at most `fan_out` at a time and joined when all ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Delegate {
    /// The children, in order. Each is its own run, named `<parent run>.<n>`.
    pub children: Vec<Child>,
    /// Most children running at once (1 to [`FAN_OUT_MAX`]).
    #[serde(default = "default_fan_out")]
    pub fan_out: u32,
}

/// Most children a step may run at once.
pub const FAN_OUT_MAX: u32 = 16;

/// Most children one step may delegate to.
pub const CHILDREN_MAX: usize = 64;

/// Deepest a tree of runs may grow (a root is depth 0).
pub const DEPTH_MAX: u32 = 8;

fn default_fan_out() -> u32 {
    4
}

/// One child run: its spec and decider, what it receives, what it may do, what it may spend,
/// and what it gives back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Child {
    /// The child's spec: a file (relative to this spec) or the spec itself, inline. Loading
    /// freezes a file's spec inline, so the parent's spec holds its children's.
    pub spec: ChildSpec,
    /// The child's decider (as a spec's `decider:`); absent: the child spec's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider: Option<String>,
    /// What the child receives, by name: a value the parent carries, or a literal. Nothing
    /// else reaches it. The child's steps bind them as `input.<name>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, ChildInput>,
    /// The parent's providers the child acts on, by name (the same connection, the same
    /// state); the child spec names them too. Its other providers are its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub share: Vec<String>,
    /// The most the child may call, by provider: tools beyond it are denied. On a shared
    /// provider it may only list tools the parent may call there. Absent: the child spec's
    /// own step tools (within the parent's on shared providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeMap<String, Vec<String>>>,
    /// Cedar policy files (relative to this spec) that rule the child's calls besides its own
    /// spec's — and every ancestor's rules rule them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<String>,
    /// What the child may spend, carved out of what the parent has left.
    #[serde(default)]
    pub budget: Budget,
    /// What the child gives back: the delegating step's output name to the child's carried
    /// value (`step.output`). Later steps bind them as `<this step>.<name>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub returns: BTreeMap<String, String>,
}

/// A child's spec, as written: a path, or inline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ChildSpec {
    /// A spec file, relative to the parent's.
    Path(String),
    /// The spec itself.
    Inline(Box<Spec>),
}

impl ChildSpec {
    /// The spec, once loading froze it inline.
    pub fn inline(&self) -> Option<&Spec> {
        match self {
            ChildSpec::Inline(s) => Some(s),
            ChildSpec::Path(_) => None,
        }
    }
}

/// One input of a child: exactly one of `carried` and `value`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChildInput {
    /// A value the parent carries (`step.output`), handed over with its lineage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<String>,
    /// A literal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

/// What a child may spend. Each limit it names (and each it does not, from its spec's own
/// limits) is cut to what the parent has left when the child is spawned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Budget {
    /// Most decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<u32>,
    /// Most tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
    /// Most tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Most cost, in micro-dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<u64>,
    /// Most wall-clock time from the child's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// One typed field extracted from a quarantined result. A value that is not of its type
/// shows as `null`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Extract {
    /// A JSON pointer into the result (`/price`).
    pub path: String,
    /// What it must be: a number, a boolean or a date (`YYYY-MM-DD`); or give `one_of`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<ExtractKind>,
    /// The strings it may be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<String>,
}

/// The type of an extracted field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtractKind {
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A date, `YYYY-MM-DD`.
    Date,
}

impl Extract {
    /// The field from `result`, or `null` when it is missing or not of its type.
    pub fn from(&self, result: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        let Some(v) = result.pointer(&self.path) else {
            return Value::Null;
        };
        let date = |s: &str| {
            let b = s.as_bytes();
            b.len() == 10
                && b.iter().enumerate().all(|(i, c)| match i {
                    4 | 7 => *c == b'-',
                    _ => c.is_ascii_digit(),
                })
        };
        let typed = match (self.kind, v) {
            (Some(ExtractKind::Number), Value::Number(_))
            | (Some(ExtractKind::Boolean), Value::Bool(_)) => true,
            (Some(ExtractKind::Date), Value::String(s)) => date(s),
            (None, Value::String(s)) => self.one_of.iter().any(|o| o == s),
            _ => false,
        };
        if typed { v.clone() } else { Value::Null }
    }
}

/// A security profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// For runs that read text an attacker can write: a commit asks a person when an argument
    /// is traced to untrusted output, or was produced by a decider that had read untrusted
    /// text, or the decider had read untrusted text when it proposed the commit; a read asks
    /// when an address it is sent to (a URL, an e-mail address, a host) is not traced to a
    /// trusted source, or would carry a value read from a provider to one. A call within its
    /// step's grant is asked about only for what the grant leaves open.
    UntrustedInput,
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Profile, String> {
        match s {
            "untrusted-input" => Ok(Profile::UntrustedInput),
            other => Err(format!(
                "no profile `{other}` (this build has: untrusted-input)"
            )),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Profile::UntrustedInput => f.write_str("untrusted-input"),
        }
    }
}

/// A step's grant: its tools and, per tool, constraints on arguments (by top-level name).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Grant {
    /// Tool name to argument name to constraint. A tool with no constraints: `{}`.
    pub tools: BTreeMap<String, BTreeMap<String, ArgConstraint>>,
    /// What a call outside the grant gets.
    #[serde(default)]
    pub beyond: Beyond,
}

/// What a call outside its step's grant gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Beyond {
    /// It is denied.
    #[default]
    Deny,
    /// It needs a person's approval.
    Ask,
}

/// Constraints on one argument.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArgConstraint {
    /// Its value must come from one of these (every leaf of it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<GrantSource>,
    /// It must be one of these values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<serde_json::Value>,
    /// A number at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// A number at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// Where a granted argument's value may come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrantSource {
    /// The objective's words.
    Objective,
    /// A value the run's starter gave one of its inputs.
    Input,
    /// A person's answer to a question the run asked.
    User,
    /// A carried value.
    Carried,
    /// A trusted provider's output.
    TrustedOutput,
    /// The decider, from trusted text only.
    Decider,
}

impl fmt::Display for GrantSource {
    /// As a spec writes it (`trusted_output`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GrantSource::Objective => "objective",
            GrantSource::Input => "input",
            GrantSource::User => "user",
            GrantSource::Carried => "carried",
            GrantSource::TrustedOutput => "trusted_output",
            GrantSource::Decider => "decider",
        })
    }
}

impl StepSpec {
    /// The outputs the step publishes: its own `publishes`, or what its children return.
    pub fn outputs(&self) -> impl Iterator<Item = &String> {
        self.publishes.keys().chain(
            self.delegate
                .iter()
                .flat_map(|d| d.children.iter().flat_map(|c| c.returns.keys())),
        )
    }

    /// Whether the step counts toward the terminal predicate in any way.
    pub fn is_terminal_requirement(&self) -> bool {
        self.required || self.commit == CommitRule::Required
    }
}

/// Where a published output comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Publish {
    /// The tool whose successful result carries the value.
    pub from: String,
    /// A JSON pointer into the result (`/order_id`); empty for the whole result.
    #[serde(default)]
    pub path: String,
}

/// Limits on a run. Reaching one ends the run `exhausted`, naming it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Most decisions in the whole run.
    #[serde(default = "default_decisions_max")]
    pub decisions_max: u32,
    /// Most decisions in one step.
    #[serde(default = "default_step_decisions_max")]
    pub step_decisions_max: u32,
    /// The run's driving time: what it may spend deciding, calling and starting its
    /// providers, on the injected clock. Time it waits for a person or an operator (an
    /// approval, a reconciliation) is not counted: `wait_max_ms` bounds that.
    #[serde(default = "default_deadline_ms")]
    pub deadline_ms: u64,
    /// How long a handle stays valid after the observation that issued it.
    #[serde(default = "default_handle_ttl_ms")]
    pub handle_ttl_ms: u64,
    /// Most tool calls in the run (started calls, whatever became of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_max: Option<u32>,
    /// Most tokens (input plus output) the decider may use, when it reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_max: Option<u64>,
    /// Most the decisions may cost, in micro-dollars, when the decider reports cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd_max: Option<u64>,
    /// Longest wait for one provider call. A read that takes longer fails (attributed to the
    /// provider); a commit that takes longer is in doubt.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// How long an approval request waits for an answer before it expires.
    #[serde(default = "default_approval_ttl_ms")]
    pub approval_ttl_ms: u64,
    /// Longest the run waits for a person or an operator each time it waits: an approval
    /// request expires after the smaller of this and `approval_ttl_ms`; a call in doubt not
    /// reconciled within it ends the run `exhausted` when it is next re-entered (default: no
    /// bound but the approval's expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_max_ms: Option<u64>,
}

fn default_approval_ttl_ms() -> u64 {
    86_400_000
}

fn default_call_timeout_ms() -> u64 {
    30_000
}

fn default_decisions_max() -> u32 {
    64
}
fn default_step_decisions_max() -> u32 {
    16
}
fn default_deadline_ms() -> u64 {
    300_000
}
fn default_handle_ttl_ms() -> u64 {
    HANDLE_TTL_MS_DEFAULT
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            decisions_max: default_decisions_max(),
            step_decisions_max: default_step_decisions_max(),
            deadline_ms: default_deadline_ms(),
            handle_ttl_ms: default_handle_ttl_ms(),
            calls_max: None,
            tokens_max: None,
            cost_micro_usd_max: None,
            call_timeout_ms: default_call_timeout_ms(),
            approval_ttl_ms: default_approval_ttl_ms(),
            wait_max_ms: None,
        }
    }
}

/// The text format of a spec or script file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// YAML (`.yaml`, `.yml`, or anything not `.json`).
    Yaml,
    /// JSON (`.json`).
    Json,
}

impl Format {
    /// The format a file name implies.
    pub fn of_path(path: &str) -> Format {
        if path.to_ascii_lowercase().ends_with(".json") {
            Format::Json
        } else {
            Format::Yaml
        }
    }
}

/// A document that could not be read: names the file and, where known, the line and column.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The file, as the user named it.
    pub file: String,
    /// 1-based line, where the parser knows it.
    pub line: Option<u64>,
    /// 1-based column, where the parser knows it.
    pub column: Option<u64>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

/// Reads a document of type `T` from YAML or JSON text, strictly: a field the type does not
/// know is an error naming it (a typo must not be ignored), and every error names the field
/// it is about and, where the parser knows them, the line and column.
pub fn parse_document<T: serde::de::DeserializeOwned>(
    text: &str,
    format: Format,
    file: &str,
) -> Result<T, ParseError> {
    let mut unknown: Vec<String> = Vec::new();
    let mut failed_at = String::new();
    let parsed: Result<T, (String, Option<u64>, Option<u64>)> = match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let mut note = |p: serde_ignored::Path<'_>| unknown.push(p.to_string());
            let tracked = serde_ignored::Deserializer::new(&mut de, &mut note);
            match serde_path_to_error::deserialize(tracked) {
                Ok(v) => de.end().map(|()| v).map_err(|e| {
                    (
                        strip_position(&e.to_string()),
                        Some(e.line() as u64),
                        Some(e.column() as u64),
                    )
                }),
                Err(e) => {
                    failed_at = e.path().to_string();
                    let inner = e.into_inner();
                    Err((
                        strip_position(&inner.to_string()),
                        Some(inner.line() as u64),
                        Some(inner.column() as u64),
                    ))
                }
            }
        }
        Format::Yaml => {
            let result = serde_saphyr::with_deserializer_from_str(text, |de| {
                let mut note = |p: serde_ignored::Path<'_>| unknown.push(p.to_string());
                let tracked = serde_ignored::Deserializer::new(de, &mut note);
                serde_path_to_error::deserialize(tracked).map_err(|e| {
                    failed_at = e.path().to_string();
                    e.into_inner()
                })
            });
            result.map_err(|e| {
                let p = yaml_error(&e.to_string(), file);
                (p.message, p.line, p.column)
            })
        }
    };
    let field = |path: &str| {
        if path == "." {
            String::new()
        } else {
            path.to_owned()
        }
    };
    match parsed {
        Ok(value) => match unknown.first() {
            None => Ok(value),
            Some(path) => Err(ParseError {
                file: file.to_owned(),
                line: None,
                column: None,
                message: format!("unknown field `{}`", field(path)),
            }),
        },
        Err((message, line, column)) => {
            let at = field(&failed_at);
            Err(ParseError {
                file: file.to_owned(),
                line,
                column,
                message: if at.is_empty() || message.contains(&format!("`{at}`")) {
                    message
                } else {
                    format!("{at}: {message}")
                },
            })
        }
    }
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// serde-saphyr renders `error: line L column C: message` (then a snippet): keep the parts, and
/// say a breached size limit in words.
fn yaml_error(rendered: &str, file: &str) -> ParseError {
    let first = rendered.lines().next().unwrap_or("invalid YAML").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let number = |s: &str| s.parse::<u64>().ok();
    let (line, column, message) = match first.strip_prefix("line ").and_then(|r| r.split_once(": "))
    {
        Some((position, message)) => {
            let mut parts = position.split(" column ");
            let line = parts.next().and_then(number);
            let column = parts.next().and_then(number);
            (line, column, message.to_owned())
        }
        None => (None, None, first.to_owned()),
    };
    ParseError {
        file: file.to_owned(),
        line,
        column,
        message: readable_budget(&message)
            .or_else(|| readable_number(&message))
            .unwrap_or(message),
    }
}

/// `invalid u32` and the like, in words.
fn readable_number(message: &str) -> Option<String> {
    let kind = message.strip_prefix("invalid ")?;
    let what = match kind {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "bool" => "true or false",
        _ => return None,
    };
    Some(format!("expected {what}"))
}

/// The YAML reader's limits (against alias bombs and runaway documents), in words.
fn readable_budget(message: &str) -> Option<String> {
    let breach = message.split("budget breached: ").nth(1)?;
    let what = match breach.split([' ', '{']).next().unwrap_or("") {
        "Nodes" => "it has too many nodes",
        "Events" => "it is too long",
        "Aliases" => "it uses too many aliases",
        "Anchors" => "it defines too many anchors",
        "Depth" => "it is nested too deeply",
        "Documents" => "it holds too many documents",
        "ScalarBytes" => "a value in it is too long",
        _ => "it is too large",
    };
    let limit: String = breach.chars().filter(char::is_ascii_digit).collect();
    Some(format!(
        "the YAML document is over a size limit: {what}{}",
        if limit.is_empty() {
            String::new()
        } else {
            format!(" ({limit} reached)")
        }
    ))
}

impl Spec {
    /// The providers whose output is trusted (a joined one when every member is).
    pub fn trusted_providers(&self) -> std::collections::BTreeSet<String> {
        self.providers
            .keys()
            .filter(|n| self.trusts(n))
            .cloned()
            .collect()
    }

    /// Whether the spec trusts provider `name` (a join only when every member is trusted).
    pub fn trusts(&self, name: &str) -> bool {
        let trusted = |p: &ProviderSpec| p.trust == Some(Trust::Trusted);
        match self.providers.get(name) {
            None => false,
            Some(p) if p.join.is_empty() => trusted(p),
            Some(p) => p
                .join
                .iter()
                .all(|m| self.providers.get(m).is_some_and(trusted)),
        }
    }

    /// Reads a spec from text. Does not validate beyond the types: see
    /// [`crate::validate::validate`].
    pub fn parse(text: &str, format: Format, file: &str) -> Result<Spec, ParseError> {
        parse_document(text, format, file)
    }

    /// `sha256:` digest of the spec's canonical JSON: two specs with the same content have the
    /// same hash whatever their formatting.
    pub fn hash(&self) -> String {
        match serde_json::to_value(self) {
            Ok(v) => canon::digest(&v),
            Err(_) => canon::digest_bytes(b"unserializable"),
        }
    }

    /// The step with this id.
    pub fn step(&self, id: &StepId) -> Option<&StepSpec> {
        self.steps.iter().find(|s| &s.id == id)
    }

    /// The index of the step with this id.
    pub fn step_index(&self, id: &StepId) -> Option<usize> {
        self.steps.iter().position(|s| &s.id == id)
    }
}

/// A reference to a carried value: `step.output`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CarriedRef {
    /// The publishing step.
    pub step: StepId,
    /// The output's name in that step's `publishes`.
    pub output: String,
}

impl CarriedRef {
    /// Parses `step.output`.
    pub fn parse(s: &str) -> Option<CarriedRef> {
        let (step, output) = s.split_once('.')?;
        if step.is_empty() || output.is_empty() {
            return None;
        }
        Some(CarriedRef {
            step: StepId(step.into()),
            output: output.to_owned(),
        })
    }
}

impl fmt::Display for CarriedRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.step, self.output)
    }
}

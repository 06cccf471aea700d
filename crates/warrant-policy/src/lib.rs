//! Warrant's Cedar-backed Authority.
//!
//! Policies are Cedar files, validated at load against the schema Warrant ships
//! ([`SCHEMA`]); an invalid policy is an error naming its file and line, and nothing runs.
//!
//! The request built for each call:
//! - principal `Warrant::Principal::"<tenant>/<user>/<agent>"` with those three attributes
//!   (the agent is the decider);
//! - action `Warrant::Action::"read"` or `"commit"` (the effect class);
//! - resource `Warrant::Call::"<run>/<call>"`, with attributes `provider`, `tool`, `trusted`
//!   (whether the provider is trusted) and one tag per top-level argument (its value as a
//!   string: strings as they are, anything else as compact JSON);
//! - context: `run`, `step`, `args_digest`, `handle_age_ms` (0 when the call uses no handle),
//!   and the names of the top-level arguments by where
//!   their values were observed: `untrusted_args` (an untrusted provider's output),
//!   `trusted_output_args`, `carried_args`, `objective_args`, `input_args` (a value the run's
//!   starter gave one of its inputs), `user_args` (a person's answer to a question the run
//!   asked), `unobserved_args` (produced by the
//!   decider), `decider_args` (the same, under provenance rules 2) and `tainted_args` (produced by
//!   the decider after it had read an untrusted provider's output); `context_tainted` and
//!   `tainted_by` (which untrusted providers' output the decider had read when it proposed the
//!   call); and `hints`, what the provider declares of the tool (MCP annotations, with MCP's
//!   defaults where it declares nothing): `read_only`, `destructive`, `idempotent`,
//!   `open_world`, plus `declared` (it declared any) and `trusted` (the provider is trusted —
//!   otherwise the hints are only its claim). A policy can so tell a declared read from a
//!   write, e.g. `permit(principal, action == Warrant::Action::"commit", resource) when
//!   { context.hints.read_only && context.hints.trusted };`.
//!
//! - `tool_origin` and `script_origin`: for a web page's tool (WebMCP), the origin of the page
//!   whose document registered it and of the script that did (`""` for other providers). A
//!   policy can so refuse tools a third party's script registered on a page:
//!   `forbid(principal, action, resource) when { context.script_origin != context.tool_origin };`.
//!
//! - `delegation`: where the run sits in a tree of delegations — `depth` (0 for a run that is
//!   no child), `parent` (the delegating run, `""` for none) and `chain` (every ancestor's run
//!   id). A child's call is ruled by its own policies and by every ancestor's, each with this
//!   same request, so a policy can limit depth: `forbid(principal, action, resource) when
//!   { context.delegation.depth > 1 };`.
//!
//! Verdicts: a deny names the forbid policies that matched (or says none permits it); an allow
//! whose satisfied permits all carry `@approval` is an *ask*; any evaluation error, an invalid
//! request, or a missing entity is *indeterminate* (which stops the call).

pub mod control;
mod source;

pub use control::HttpControl;
pub use source::Policies;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, EntityUid, Policy, PolicyId, PolicySet, Request,
    Schema, ValidationMode, Validator,
};
use miette::Diagnostic;
use serde_json::{Value, json};
use warrant_core::canon;
use warrant_core::event::{Effect, ToolHints};
use warrant_core::ports::{
    ApproverRequest, ApproverVerdict, Authority, BoxFuture, CapabilityRequest, ToolProbe, Verdict,
};
use warrant_core::provenance::Source;

/// The Cedar schema of the entities, actions and context Warrant builds.
pub const SCHEMA: &str = r#"namespace Warrant {
  entity Principal = { tenant: String, user: String, agent: String };
  entity Call = { provider: String, tool: String, trusted: Bool } tags String;
  type CallContext = {
    run: String,
    step: String,
    args_digest: String,
    handle_age_ms: Long,
    untrusted_args: Set<String>,
    trusted_output_args: Set<String>,
    carried_args: Set<String>,
    objective_args: Set<String>,
    input_args: Set<String>,
    user_args: Set<String>,
    unobserved_args: Set<String>,
    decider_args: Set<String>,
    tainted_args: Set<String>,
    context_tainted: Bool,
    tainted_by: Set<String>,
    hints: Hints,
    tool_origin: String,
    script_origin: String,
    delegation: Delegation,
  };
  type Delegation = {
    depth: Long,
    parent: String,
    chain: Set<String>,
  };
  type Hints = {
    declared: Bool,
    trusted: Bool,
    read_only: Bool,
    destructive: Bool,
    idempotent: Bool,
    open_world: Bool,
  };
  action "read", "commit" appliesTo { principal: [Principal], resource: [Call], context: CallContext };
  type Starter = { tenant: String, user: String };
  type ApproveContext = {
    run: String,
    step: String,
    args_digest: String,
    handle_age_ms: Long,
    untrusted_args: Set<String>,
    trusted_output_args: Set<String>,
    carried_args: Set<String>,
    objective_args: Set<String>,
    input_args: Set<String>,
    user_args: Set<String>,
    unobserved_args: Set<String>,
    decider_args: Set<String>,
    tainted_args: Set<String>,
    context_tainted: Bool,
    tainted_by: Set<String>,
    hints: Hints,
    tool_origin: String,
    script_origin: String,
    delegation: Delegation,
    effect: String,
    starter: Starter,
    own_run: Bool,
    approvals_needed: Long,
    approved_by: Set<String>,
  };
  action "approve" appliesTo { principal: [Principal], resource: [Call], context: ApproveContext };
}
"#;

/// A policy that cannot be used: names the file and, where known, the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct PolicyError {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// One policy file as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFile {
    /// Its name (as given).
    pub name: String,
    /// Its text.
    pub text: String,
}

/// Rules with Cedar policies.
pub struct CedarAuthority {
    files: Vec<PolicyFile>,
    policies: PolicySet,
    /// The policies that name the `approve` action: who may answer an approval request.
    approve: PolicySet,
    schema: Schema,
    trusted: BTreeSet<String>,
    authorizer: Authorizer,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn first_line(d: &dyn Diagnostic, text: &str) -> Option<usize> {
    d.labels()
        .and_then(|mut l| l.next())
        .map(|l| line_of(text, l.offset()))
}

/// An argument a policy tests by name (`resource.hasTag("to")`, `getTag`, or a name in one of
/// the context's argument sets: `context.untrusted_args.contains("to")`), and the tools its
/// conditions compare `resource.tool` with (none: any tool).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedArg {
    /// The policy's id.
    pub policy: String,
    /// The tools it names (`resource.tool == "transfer"`); empty when it names none.
    pub tools: Vec<String>,
    /// The argument.
    pub arg: String,
}

/// `v`'s field `key` (null when it has none).
fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&Value::Null)
}

/// The arguments `policy` names, with the tools it names.
fn named_args_of(policy: &Policy) -> Vec<NamedArg> {
    let Ok(est) = policy.to_json() else {
        return Vec::new();
    };
    let (mut args, mut tools) = (Vec::new(), Vec::new());
    if let Some(conditions) = est.get("conditions").and_then(Value::as_array) {
        for c in conditions {
            // A tool named in an `unless` is one the policy does not apply to.
            let mut named = Vec::new();
            collect_named_args(field(c, "body"), &mut args, &mut named);
            if field(c, "kind") == "when" {
                tools.extend(named);
            }
        }
    }
    args.sort();
    args.dedup();
    tools.sort();
    tools.dedup();
    args.into_iter()
        .map(|arg| NamedArg {
            policy: policy.id().to_string(),
            tools: tools.clone(),
            arg,
        })
        .collect()
}

/// The argument names an expression (Cedar's JSON form) tests — the literal of a `hasTag` or
/// `getTag`, or each literal a `contains`, `containsAll` or `containsAny` looks for in one of
/// the context's `*_args` sets — and the tools it compares `resource.tool` with.
fn collect_named_args(expr: &Value, args: &mut Vec<String>, tools: &mut Vec<String>) {
    let literals = |v: &Value, out: &mut Vec<String>| {
        if let Some(s) = v.get("Value").and_then(Value::as_str) {
            out.push(s.to_owned());
        }
        if let Some(items) = v.get("Set").and_then(Value::as_array) {
            out.extend(
                items
                    .iter()
                    .filter_map(|i| i.get("Value").and_then(Value::as_str))
                    .map(str::to_owned),
            );
        }
    };
    let attr = |v: &Value| field(field(v, "."), "attr").as_str().map(str::to_owned);
    match expr {
        Value::Object(map) => {
            for (op, inner) in map {
                match op.as_str() {
                    "hasTag" | "getTag" => literals(field(inner, "right"), args),
                    "contains" | "containsAll" | "containsAny"
                        if attr(field(inner, "left")).is_some_and(|a| a.ends_with("_args")) =>
                    {
                        literals(field(inner, "right"), args);
                    }
                    "==" if attr(field(inner, "left")).as_deref() == Some("tool") => {
                        literals(field(inner, "right"), tools);
                    }
                    "==" if attr(field(inner, "right")).as_deref() == Some("tool") => {
                        literals(field(inner, "left"), tools);
                    }
                    // Under a negation a tool comparison says where the policy does not
                    // apply: its arguments still count, its tools do not.
                    "!" => {
                        collect_named_args(inner, args, &mut Vec::new());
                        continue;
                    }
                    _ => {}
                }
                collect_named_args(inner, args, tools);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|i| collect_named_args(i, args, tools)),
        _ => {}
    }
}

/// The `.cedar` files of `paths` (files as given, directories' files sorted by name).
pub fn policy_files(paths: &[PathBuf]) -> Result<Vec<PolicyFile>, PolicyError> {
    let mut files = Vec::new();
    for path in paths {
        let shown = path.display().to_string();
        let err = |m: String| PolicyError {
            file: shown.clone(),
            line: None,
            message: m,
        };
        if path.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| err(format!("cannot read: {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cedar"))
                .collect();
            entries.sort();
            if entries.is_empty() {
                return Err(err("holds no `.cedar` policy files".into()));
            }
            for p in entries {
                files.push(read(&p)?);
            }
        } else {
            files.push(read(path)?);
        }
    }
    Ok(files)
}

/// Largest policy file read.
const POLICY_BYTES_MAX: u64 = 4 << 20;

fn read(path: &Path) -> Result<PolicyFile, PolicyError> {
    use std::io::Read as _;
    let name = path.display().to_string();
    let err = |message: String| PolicyError {
        file: name.clone(),
        line: None,
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(POLICY_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > POLICY_BYTES_MAX {
        return Err(err(format!(
            "is over {} MiB: too large to be a policy file",
            POLICY_BYTES_MAX >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| err("is not UTF-8 text".into()))?;
    Ok(PolicyFile { name, text })
}

impl CedarAuthority {
    /// Every argument its policies test by name, with the tools each policy's scope names: to
    /// check against the tools' schemas (a misspelt name tests nothing).
    pub fn named_args(&self) -> Vec<NamedArg> {
        self.policies.policies().flat_map(named_args_of).collect()
    }

    /// Parses and validates policy files. `trusted` names the providers whose output is
    /// trusted (it labels arguments `trusted_output_args` rather than `untrusted_args`).
    pub fn new(
        files: Vec<PolicyFile>,
        trusted: BTreeSet<String>,
    ) -> Result<CedarAuthority, PolicyError> {
        let (schema, _) = Schema::from_cedarschema_str(SCHEMA).map_err(|e| PolicyError {
            file: "(schema)".into(),
            line: None,
            message: e.to_string(),
        })?;
        let mut policies = PolicySet::new();
        for file in &files {
            let set = PolicySet::from_str(&file.text).map_err(|e| PolicyError {
                file: file.name.clone(),
                line: first_line(&e, &file.text),
                message: e.to_string(),
            })?;
            // Each policy is known by its `@id` (or its file and place) before anything is
            // said about it, so every message names it as its author does.
            let mut renamed = PolicySet::new();
            for (n, policy) in set.policies().enumerate() {
                let id = match policy.annotation("id") {
                    Some(id) => id.to_owned(),
                    None => format!("{}#{}", file.name, n + 1),
                };
                let policy: Policy = policy.new_id(PolicyId::new(id.clone()));
                check_approvals(&policy).map_err(|message| PolicyError {
                    file: file.name.clone(),
                    line: None,
                    message: format!("policy `{id}`: {message}"),
                })?;
                renamed.add(policy.clone()).map_err(|e| PolicyError {
                    file: file.name.clone(),
                    line: None,
                    message: format!("policy `{id}`: {e}"),
                })?;
                policies.add(policy).map_err(|e| PolicyError {
                    file: file.name.clone(),
                    line: None,
                    message: format!("policy `{id}`: {e}"),
                })?;
            }
            if renamed.is_empty() {
                return Err(PolicyError {
                    file: file.name.clone(),
                    line: None,
                    message: "holds no policies: with none, every call would be denied (remove the file, or write the policies)".into(),
                });
            }
            let validation =
                Validator::new(schema.clone()).validate(&renamed, ValidationMode::Strict);
            if let Some(e) = validation.validation_errors().next() {
                return Err(PolicyError {
                    file: file.name.clone(),
                    line: first_line(e, &file.text),
                    message: e.to_string(),
                });
            }
        }
        if files.is_empty() {
            return Err(PolicyError {
                file: "(none)".into(),
                line: None,
                message: "no policy files given".into(),
            });
        }
        let mut approve = PolicySet::new();
        for p in policies.policies().filter(|p| names_approve(p)) {
            approve.add(p.clone()).map_err(|e| PolicyError {
                file: "(approve)".into(),
                line: None,
                message: e.to_string(),
            })?;
        }
        Ok(CedarAuthority {
            files,
            policies,
            approve,
            schema,
            trusted,
            authorizer: Authorizer::new(),
        })
    }

    /// Rebuilds the authority a run recorded (`describe`). `None` when the description is not
    /// a Cedar one; an error when it is one this build cannot rebuild exactly (a file entry
    /// without its name or text, a trusted provider that is not a name): a run is never
    /// resumed under a weaker authority than it started with.
    pub fn from_description(d: &Value) -> Option<Result<CedarAuthority, PolicyError>> {
        let c = d.get("cedar")?;
        let broken = |what: String| PolicyError {
            file: "(recorded authority)".into(),
            line: None,
            message: what,
        };
        let rebuild = || -> Result<CedarAuthority, PolicyError> {
            let entries = c
                .get("files")
                .and_then(Value::as_array)
                .ok_or_else(|| broken("it lists no policy files".into()))?;
            let mut files = Vec::with_capacity(entries.len());
            for (i, f) in entries.iter().enumerate() {
                let field = |k: &str| {
                    f.get(k).and_then(Value::as_str).ok_or_else(|| {
                        broken(format!("policy file entry {} has no `{k}` text", i + 1))
                    })
                };
                files.push(PolicyFile {
                    name: field("name")?.to_owned(),
                    text: field("text")?.to_owned(),
                });
            }
            let trusted = match c.get("trusted") {
                None => BTreeSet::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|t| {
                        t.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| broken(format!("trusted provider {t} is not a name")))
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => return Err(broken(format!("`trusted` is {other}, not a list"))),
            };
            CedarAuthority::new(files, trusted)
        };
        Some(rebuild())
    }

    /// The Cedar request for call `r` under `action` (`read`, `commit`, or `approve` with the
    /// approver as principal and what approving adds to the context), and its entities.
    fn cedar_request(
        &self,
        r: &CapabilityRequest<'_>,
        action_name: &str,
        approver: Option<&ApproverRequest<'_>>,
    ) -> Result<(Request, Entities), String> {
        let mut untrusted = BTreeSet::new();
        let mut trusted_output = BTreeSet::new();
        let mut carried = BTreeSet::new();
        let mut objective = BTreeSet::new();
        let mut input = BTreeSet::new();
        let mut user = BTreeSet::new();
        let mut unobserved = BTreeSet::new();
        let mut decider = BTreeSet::new();
        let mut tainted = BTreeSet::new();
        for label in r.provenance {
            let top = label
                .pointer
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or("")
                .to_owned();
            // Every source it was observed in: a value the objective names that an untrusted
            // output also holds is in both sets, and a policy may ask about either.
            for source in std::iter::once(&label.source).chain(&label.also) {
                match source {
                    Source::ProviderOutput { provider, .. } if self.trusted.contains(provider) => {
                        trusted_output.insert(top.clone())
                    }
                    Source::ProviderOutput { .. } => untrusted.insert(top.clone()),
                    Source::Description { provider } if self.trusted.contains(provider) => {
                        trusted_output.insert(top.clone())
                    }
                    Source::Description { .. } => untrusted.insert(top.clone()),
                    // Holding a trusted provider's text lends no trust; an untrusted one's
                    // makes the argument untrusted.
                    Source::Holds { provider, .. } if self.trusted.contains(provider) => false,
                    Source::Holds { .. } => untrusted.insert(top.clone()),
                    Source::Carried { .. } => carried.insert(top.clone()),
                    Source::Objective => objective.insert(top.clone()),
                    Source::Input { .. } => input.insert(top.clone()),
                    Source::User { .. } => user.insert(top.clone()),
                    Source::Unobserved => unobserved.insert(top.clone()),
                    // Produced by the decider (rules 2): unobserved too, for policies written
                    // before; tainted when its context held untrusted text.
                    Source::Decider { tainted_by } => {
                        if !tainted_by.is_empty() {
                            tainted.insert(top.clone());
                        }
                        decider.insert(top.clone());
                        unobserved.insert(top.clone())
                    }
                };
            }
        }
        let action = EntityUid::from_str(&format!("Warrant::Action::\"{action_name}\""))
            .map_err(|e| format!("action: {e}"))?;
        let quote = |s: &str| Value::String(s.to_owned()).to_string();
        let p = approver.map_or(r.principal, |a| a.approver);
        let principal_id = format!("{}/{}/{}", p.tenant, p.user, p.agent);
        let call_id = format!("{}/{}", r.run, r.call);
        let (Ok(principal), Ok(resource)) = (
            EntityUid::from_str(&format!("Warrant::Principal::{}", quote(&principal_id))),
            EntityUid::from_str(&format!("Warrant::Call::{}", quote(&call_id))),
        ) else {
            return Err("the request's entities do not parse".into());
        };
        let tags: serde_json::Map<String, Value> = r
            .args
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            Value::String(
                                v.as_str()
                                    .map_or_else(|| canon::canonical_json(v), str::to_owned),
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let entities = json!([
            {"uid": {"type": "Warrant::Principal", "id": principal_id}, "attrs": {
                "tenant": p.tenant, "user": p.user, "agent": p.agent
            }, "parents": []},
            {"uid": {"type": "Warrant::Call", "id": call_id}, "attrs": {
                "provider": r.provider, "tool": r.tool, "trusted": self.trusted.contains(r.provider)
            }, "parents": [], "tags": tags}
        ]);
        let entities = Entities::from_json_value(entities, Some(&self.schema))
            .map_err(|e| format!("entities: {e}"))?;
        let hints = hints_context(r.hints);
        let mut context = json!({
            "run": r.run.0, "step": r.step.0, "args_digest": r.args_digest,
            "handle_age_ms": r.handle_age_ms.unwrap_or(0),
            "untrusted_args": untrusted, "trusted_output_args": trusted_output,
            "carried_args": carried, "objective_args": objective, "input_args": input, "user_args": user,
            "unobserved_args": unobserved,
            "decider_args": decider, "tainted_args": tainted,
            "context_tainted": !r.context_taint.is_empty(), "tainted_by": r.context_taint,
            "hints": hints,
            "tool_origin": r.origin.map_or("", |o| o.page.as_str()),
            "script_origin": r.origin.map_or("", |o| o.script.as_str()),
            "delegation": match r.parent {
                Some(p) => json!({
                    "depth": p.depth, "parent": p.run.0,
                    "chain": p.chain.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
                }),
                None => json!({"depth": 0, "parent": "", "chain": []}),
            },
        });
        if let (Some(a), Some(fields)) = (approver, context.as_object_mut()) {
            fields.insert("effect".into(), json!(r.effect.as_str()));
            fields.insert(
                "starter".into(),
                json!({"tenant": a.starter.tenant, "user": a.starter.user}),
            );
            fields.insert(
                "own_run".into(),
                json!(a.starter.tenant == a.approver.tenant && a.starter.user == a.approver.user),
            );
            fields.insert("approvals_needed".into(), json!(a.approvals_needed));
            fields.insert("approved_by".into(), json!(a.approved_by));
        }
        let context = Context::from_json_value(context, Some((&self.schema, &action)))
            .map_err(|e| format!("context: {e}"))?;
        let request = Request::new(principal, action, resource, context, Some(&self.schema))
            .map_err(|e| format!("request: {e}"))?;
        Ok((request, entities))
    }

    /// Cedar's decision on a call of the probed tool with `present` arguments of unknown
    /// values and an unknown context: `None` when it depends on them (or cannot be made).
    fn partial_decision(&self, probe: &ToolProbe<'_>, present: &[&str]) -> Option<Decision> {
        let p = probe.principal;
        let principal_id = format!("{}/{}/{}", p.tenant, p.user, p.agent);
        let quote = |s: &str| Value::String(s.to_owned()).to_string();
        let principal =
            EntityUid::from_str(&format!("Warrant::Principal::{}", quote(&principal_id))).ok()?;
        let resource = EntityUid::from_str("Warrant::Call::\"probe\"").ok()?;
        let action =
            EntityUid::from_str(&format!("Warrant::Action::\"{}\"", probe.effect.as_str())).ok()?;
        let tags: serde_json::Map<String, Value> = present
            .iter()
            .map(|k| {
                (
                    (*k).to_owned(),
                    json!({"__extn": {"fn": "unknown", "arg": format!("arg.{k}")}}),
                )
            })
            .collect();
        let entities = json!([
            {"uid": {"type": "Warrant::Principal", "id": principal_id}, "attrs": {
                "tenant": p.tenant, "user": p.user, "agent": p.agent
            }, "parents": []},
            {"uid": {"type": "Warrant::Call", "id": "probe"}, "attrs": {
                "provider": probe.provider, "tool": probe.tool, "trusted": probe.trusted
            }, "parents": [], "tags": tags}
        ]);
        let entities = Entities::from_json_value(entities, None).ok()?;
        let request = cedar_policy::RequestBuilder::default()
            .principal(principal)
            .action(action)
            .resource(resource)
            .build();
        self.authorizer
            .is_authorized_partial(&request, &self.policies, &entities)
            .decision()
    }

    fn rule(&self, r: &CapabilityRequest<'_>) -> Verdict {
        let indeterminate = |reason: String| Verdict::Indeterminate { reason };
        let (request, entities) = match self.cedar_request(r, r.effect.as_str(), None) {
            Ok(parts) => parts,
            Err(e) => return indeterminate(e),
        };
        let response = self
            .authorizer
            .is_authorized(&request, &self.policies, &entities);
        let errors: Vec<String> = response
            .diagnostics()
            .errors()
            .map(|e| e.to_string())
            .collect();
        if !errors.is_empty() {
            // Cedar skips a policy that errors; Warrant does not guess: indeterminate.
            return indeterminate(format!("policy evaluation failed: {}", errors.join("; ")));
        }
        let mut reasons: Vec<String> = response
            .diagnostics()
            .reason()
            .map(|id| id.to_string())
            .collect();
        reasons.sort();
        match response.decision() {
            Decision::Deny if reasons.is_empty() => Verdict::Deny {
                reasons: vec![format!("no policy permits it{}", why_commit(r))],
            },
            Decision::Deny => Verdict::Deny {
                reasons: reasons
                    .iter()
                    .map(|r| format!("forbidden by `{r}`"))
                    .collect(),
            },
            Decision::Allow => {
                let approvals: Vec<String> = reasons
                    .iter()
                    .filter_map(|id| {
                        self.policies
                            .policy(&PolicyId::new(id.clone()))
                            .and_then(|p| p.annotation("approval"))
                            .map(|a| {
                                if a.is_empty() {
                                    format!("policy `{id}` requires approval")
                                } else {
                                    format!("{a} (policy `{id}`)")
                                }
                            })
                    })
                    .collect();
                if !reasons.is_empty() && approvals.len() == reasons.len() {
                    // Several people, when a permit that asked says so (`@approvals("2")`).
                    let approvers = reasons
                        .iter()
                        .filter_map(|id| self.policies.policy(&PolicyId::new(id.clone())))
                        .map(approvers_of)
                        .max()
                        .unwrap_or(1);
                    Verdict::Ask {
                        reason: approvals.join("; "),
                        approvers,
                    }
                } else {
                    Verdict::Allow {
                        grant: reasons.join(", "),
                    }
                }
            }
        }
    }
}

/// Whether `p`'s action scope names `approve` (not merely any action: a policy about calls
/// that says nothing of actions rules on calls only).
fn names_approve(p: &Policy) -> bool {
    let approve = |uid: &EntityUid| uid.to_string() == "Warrant::Action::\"approve\"";
    match p.action_constraint() {
        cedar_policy::ActionConstraint::Any => false,
        cedar_policy::ActionConstraint::Eq(a) => approve(&a),
        cedar_policy::ActionConstraint::In(all) => all.iter().any(approve),
    }
}

/// Most people an approval may need.
pub const APPROVERS_MAX: u32 = 10;

/// How many people must approve what `p` asks about: its `@approvals("N")`, else one.
fn approvers_of(p: &Policy) -> u32 {
    p.annotation("approvals")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1)
}

/// `@approvals("N")` is a number from 1 to [`APPROVERS_MAX`], on a permit that asks.
fn check_approvals(p: &Policy) -> Result<(), String> {
    let Some(n) = p.annotation("approvals") else {
        return Ok(());
    };
    if p.annotation("approval").is_none() || p.effect() != cedar_policy::Effect::Permit {
        return Err("`@approvals` says how many people approve what a permit with `@approval` asks about: put it on one".into());
    }
    match n.trim().parse::<u32>() {
        Ok(k) if (1..=APPROVERS_MAX).contains(&k) => Ok(()),
        _ => Err(format!(
            "`@approvals(\"{n}\")`: write a number of people from 1 to {APPROVERS_MAX}"
        )),
    }
}

/// The `hints` context: what the provider declared, with MCP's defaults where it did not.
fn hints_context(hints: Option<&ToolHints>) -> Value {
    let h = hints.cloned().unwrap_or_default();
    json!({
        "declared": hints.is_some(),
        "trusted": h.trusted,
        "read_only": h.read_only.unwrap_or(false),
        "destructive": h.destructive.unwrap_or(true),
        "idempotent": h.idempotent.unwrap_or(false),
        "open_world": h.open_world.unwrap_or(true),
    })
}

/// When a commit is refused for want of a permit although its provider says it only reads:
/// why it is a commit, and what to do.
fn why_commit(r: &CapabilityRequest<'_>) -> String {
    match (r.effect, r.hints) {
        (Effect::Commit, Some(h)) if h.read_only == Some(true) && !h.trusted => format!(
            " (`{}` is a commit: `{}` is untrusted, so its read-only annotation is only its claim; \
             declare the tool's effect in the spec's `effects:`, or permit on `context.hints`)",
            r.tool, r.provider
        ),
        _ => String::new(),
    }
}

impl Authority for CedarAuthority {
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(std::future::ready(self.rule(request)))
    }

    /// Whether some call of the probed tool could be allowed: Cedar evaluates the policies
    /// partially, with the context and the arguments' values unknown, once with every
    /// argument the schema has present and once with only its required ones; the tool is
    /// never allowed only when both come out a definite deny.
    fn may_hide_tools(&self) -> bool {
        true
    }

    fn may_ever_allow(&self, probe: &ToolProbe<'_>) -> bool {
        let props: Vec<&str> = probe
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let required: Vec<&str> = probe
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        [props, required]
            .iter()
            .any(|present| self.partial_decision(probe, present) != Some(Decision::Deny))
    }

    /// Who may answer: the policies that name `approve`, when there are any (principal: the
    /// answerer; the context adds `starter`, `own_run`, `effect`, `approvals_needed` and
    /// `approved_by`). An error is a refusal.
    fn rule_approver(&self, r: &ApproverRequest<'_>) -> ApproverVerdict {
        if self.approve.is_empty() {
            return ApproverVerdict::NotRuled;
        }
        let (request, entities) = match self.cedar_request(r.call, "approve", Some(r)) {
            Ok(parts) => parts,
            Err(e) => {
                return ApproverVerdict::Deny {
                    reasons: vec![format!("the approve policies cannot rule: {e}")],
                };
            }
        };
        let response = self
            .authorizer
            .is_authorized(&request, &self.approve, &entities);
        let errors: Vec<String> = response
            .diagnostics()
            .errors()
            .map(|e| e.to_string())
            .collect();
        if !errors.is_empty() {
            return ApproverVerdict::Deny {
                reasons: vec![format!(
                    "approve policy evaluation failed: {}",
                    errors.join("; ")
                )],
            };
        }
        let mut ids: Vec<String> = response
            .diagnostics()
            .reason()
            .map(|id| format!("`{id}`"))
            .collect();
        ids.sort();
        match response.decision() {
            Decision::Allow => ApproverVerdict::Allow {
                rule: format!("approve policy {}", ids.join(", ")),
            },
            Decision::Deny if ids.is_empty() => ApproverVerdict::Deny {
                reasons: vec!["no approve policy permits this person to answer it".into()],
            },
            Decision::Deny => ApproverVerdict::Deny {
                reasons: ids.iter().map(|id| format!("forbidden by {id}")).collect(),
            },
        }
    }

    fn describe(&self) -> Option<Value> {
        let files: Vec<Value> = self
            .files
            .iter()
            .map(|f| json!({"name": f.name, "text": f.text}))
            .collect();
        Some(json!({"cedar": {"files": files, "trusted": self.trusted}}))
    }
}

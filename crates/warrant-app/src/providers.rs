//! Reaching a spec's providers and checking what they offer against what it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use warrant_core::Spec;
use warrant_core::ports::Observation;
use warrant_engine::Surfaces;
use warrant_surfaces::ReferenceCatalog;

use crate::operator::Registry;
use crate::{AppError, Result};

/// Starts or reaches every provider of `spec` (relative paths were resolved when it was read;
/// a registered one is the operator's definition in `registry`, reading only its secrets),
/// each given at most `start_ms` to start: see [`start_bound`].
pub async fn connect(spec: &Spec, registry: &Registry, start_ms: u64) -> Result<Surfaces> {
    connect_with(spec, registry, start_ms, false, None).await
}

/// The same, with the spec's `reference` providers reached as the WebMCP pages under `pages`
/// (the browser lane) when given.
pub async fn connect_on(
    spec: &Spec,
    registry: &Registry,
    start_ms: u64,
    pages: Option<&str>,
) -> Result<Surfaces> {
    reach(spec, registry, start_ms, false, None, pages).await
}

/// The same, for a front door that forwards what a provider says (a gateway): an MCP
/// server's whole answer is kept as each call's result when `whole_results`, and its
/// questions to the person are passed to `elicit`.
pub async fn connect_with(
    spec: &Spec,
    registry: &Registry,
    start_ms: u64,
    whole_results: bool,
    elicit: Option<Arc<dyn warrant_surfaces::Elicit>>,
) -> Result<Surfaces> {
    reach(spec, registry, start_ms, whole_results, elicit, None).await
}

async fn reach(
    spec: &Spec,
    registry: &Registry,
    start_ms: u64,
    whole_results: bool,
    elicit: Option<Arc<dyn warrant_surfaces::Elicit>>,
    pages: Option<&str>,
) -> Result<Surfaces> {
    let resolved = registry.definitions(spec)?;
    let reach = warrant_surfaces::Reach {
        catalog: &ReferenceCatalog::default(),
        base_dir: Path::new(""),
        secrets: registry.secrets(),
        start_ms,
        whole_results,
        elicit: elicit.as_ref(),
        pages,
    };
    warrant_surfaces::connect(reach, &resolved)
        .await
        .map_err(AppError::invalid)
}

/// How long a provider of `spec` may take to start when the run has already driven for
/// `driven_ms`: the smaller of `limits.call_timeout_ms` and what is left of its deadline (at
/// least 1 ms, so a run past its deadline fails to start rather than waits).
pub fn start_bound(spec: &Spec, driven_ms: u64) -> u64 {
    spec.limits
        .call_timeout_ms
        .min(spec.limits.deadline_ms.saturating_sub(driven_ms))
        .max(1)
}

/// What each provider offers now, each observed within the spec's call timeout.
pub async fn observe_all(
    spec: &Spec,
    surfaces: &Surfaces,
) -> Result<BTreeMap<String, Observation>> {
    let limit = Duration::from_millis(spec.limits.call_timeout_ms);
    let mut out = BTreeMap::new();
    for (name, surface) in surfaces {
        let observed = tokio::time::timeout(limit, surface.observe())
            .await
            .map_err(|_| {
                AppError::failed(format!(
                    "provider `{name}` did not say what it offers within {} ms",
                    limit.as_millis()
                ))
            })?
            .map_err(|e| AppError::failed(format!("provider `{name}`: {e}")))?;
        out.insert(name.clone(), observed);
    }
    Ok(out)
}

/// Each tool a step allows that its provider does not offer: the spec's error, said before a
/// run blames anyone for it.
pub fn missing_tools(spec: &Spec, offered: &BTreeMap<String, Observation>) -> Vec<String> {
    let mut missing = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let Some(o) = offered.get(&step.provider) else {
            continue;
        };
        for (t, tool) in step.tools.iter().enumerate() {
            if !o.actions.iter().any(|a| &a.name == tool) {
                missing.push(format!(
                    "steps[{i}].tools[{t}]: `{}` does not offer `{tool}` (it offers: {})",
                    step.provider,
                    o.actions
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    missing
}

/// The calls `script` (the default decider's, read from `shown`) makes to a tool its step's
/// provider does not offer: each would only be refused when the run gets there.
pub fn script_tools_missing(
    spec: &Spec,
    shown: &str,
    script: &warrant_deciders::Script,
    offered: &BTreeMap<String, Observation>,
) -> Vec<String> {
    let mut missing = Vec::new();
    for (step_id, index, tool) in script.calls() {
        let Some((i, step)) = spec
            .steps
            .iter()
            .enumerate()
            .find(|(_, s)| &*s.id.0 == step_id)
        else {
            continue;
        };
        let Some(o) = offered.get(&step.provider) else {
            continue;
        };
        if !o.actions.iter().any(|a| a.name == tool) {
            missing.push(format!(
                "steps[{i}] (`{step_id}`): the default decider's script `{shown}` calls `{tool}` \
                 (its steps.{step_id}[{index}]), which `{}` does not offer (it offers: {})",
                step.provider,
                o.actions
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    missing
}

/// What the steps' grants say against the tools the providers offer: errors (a grant that
/// constrains an argument its tool does not take) and warnings (a grant on a commit that
/// leaves a text argument open: whatever untrusted text it carries is still asked about, so
/// the grant does not spare that ask).
pub fn grant_problems(
    spec: &Spec,
    offered: &BTreeMap<String, Observation>,
) -> (Vec<String>, Vec<String>) {
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for (i, step) in spec.steps.iter().enumerate() {
        let (Some(grant), Some(o)) = (&step.grant, offered.get(&step.provider)) else {
            continue;
        };
        for (tool, constraints) in &grant.tools {
            let Some(action) = o.actions.iter().find(|a| &a.name == tool) else {
                continue;
            };
            let at = format!("steps[{i}].grant.tools.{tool}");
            let schema = &action.input_schema;
            let unknown = warrant_core::scope::unknown_grant_args(grant, tool, schema);
            if !unknown.is_empty() {
                errors.push(format!(
                    "{at}: {}",
                    warrant_core::scope::unknown_grant_args_message(tool, &unknown, schema)
                ));
                continue;
            }
            if action.effect != warrant_core::event::Effect::Commit {
                continue;
            }
            let open: Vec<&str> = schema
                .get("properties")
                .and_then(serde_json::Value::as_object)
                .into_iter()
                .flatten()
                .filter(|(arg, p)| {
                    let text = p.get("type").and_then(serde_json::Value::as_str) == Some("string");
                    let constrained = constraints
                        .get(*arg)
                        .is_some_and(|c| !c.from.is_empty() || !c.one_of.is_empty());
                    text && !constrained
                })
                .map(|(arg, _)| arg.as_str())
                .collect();
            if !open.is_empty() {
                warnings.push(format!(
                    "{at}: leaves {} of the commit `{tool}` open (no `from` or `one_of`): text \
                     read from an untrusted source there is still asked about",
                    open.iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    (errors, warnings)
}

/// What the policies' argument names say against the tools the providers offer: an error
/// for a policy whose scope names tools none of which takes an argument it tests by name; a
/// warning for a policy that names no tool and tests an argument no offered tool takes (a
/// general policy may name arguments of tools this spec does not use).
pub fn policy_problems(
    named: &[warrant_policy::NamedArg],
    offered: &BTreeMap<String, Observation>,
) -> (Vec<String>, Vec<String>) {
    let schemas: Vec<(&str, &serde_json::Value)> = offered
        .values()
        .flat_map(|o| {
            o.actions
                .iter()
                .map(|a| (a.name.as_str(), &*a.input_schema))
        })
        .collect();
    // Whether `tool` takes `arg`: unknown (no schema listing properties) counts as yes.
    let takes = |schema: &serde_json::Value, arg: &str| {
        schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .is_none_or(|p| p.contains_key(arg))
    };
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for n in named {
        if n.tools.is_empty() {
            if !schemas.iter().any(|(_, s)| takes(s, &n.arg)) {
                warnings.push(format!(
                    "policy `{}` tests argument `{}`, which no tool offered takes",
                    n.policy, n.arg
                ));
            }
            continue;
        }
        let scoped: Vec<&(&str, &serde_json::Value)> = schemas
            .iter()
            .filter(|(t, _)| n.tools.iter().any(|x| x == t))
            .collect();
        if !scoped.is_empty() && !scoped.iter().any(|(_, s)| takes(s, &n.arg)) {
            errors.push(format!(
                "policy `{}` tests argument `{}` of {}, which {} not take: a misspelt name tests nothing",
                n.policy,
                n.arg,
                n.tools
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if n.tools.len() == 1 { "it does" } else { "none of them does" }
            ));
        }
    }
    (errors, warnings)
}

/// Refuses a rule (`--deny-tool`, `--ask-tool`) that names no tool any provider offers: a
/// typo there would silently rule on nothing.
pub fn check_rule_tools(
    offered: &BTreeMap<String, Observation>,
    deny: &[String],
    ask: &[String],
) -> Result<()> {
    let known: BTreeSet<&str> = offered
        .values()
        .flat_map(|o| o.actions.iter().map(|a| a.name.as_str()))
        .collect();
    let flags = deny
        .iter()
        .map(|t| ("--deny-tool", t))
        .chain(ask.iter().map(|t| ("--ask-tool", t)));
    for (flag, tool) in flags {
        if !known.contains(tool.as_str()) {
            return Err(AppError::invalid(format!(
                "{flag} `{tool}` names no tool any provider of this spec offers (they offer: {})",
                known.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// How this application prepares delegated child runs: the decider their spec names, built
/// as any run's, and their own providers reached as any run's (the shared ones are the
/// parent's, handed over by the engine).
pub(crate) struct Children {
    pub(crate) deciders: crate::Deciders,
}

impl warrant_core::ports::ChildRuns for Children {
    fn prepare<'a>(
        &'a self,
        spec: &'a std::sync::Arc<Spec>,
        shared: &'a [String],
        recorded: Option<&'a warrant_core::event::DeciderIdentity>,
    ) -> warrant_core::ports::BoxFuture<
        'a,
        std::result::Result<warrant_core::ports::ChildParts, String>,
    > {
        Box::pin(async move {
            let decider = match (recorded, spec.decider.as_deref()) {
                // Re-entered: the decider it recorded, configured as it was.
                (Some(identity), _) => self.deciders.recorded(identity, spec),
                (None, Some(named)) => self.deciders.load(named, None, spec),
                (None, None) => {
                    return Err(format!(
                        "child spec `{}` names no decider (give the delegation a `decider:`)",
                        spec.id
                    ));
                }
            }
            .map_err(|e| e.to_string())?;
            let mut own = (**spec).clone();
            own.providers.retain(|name, _| !shared.contains(name));
            let surfaces = connect(&own, self.deciders.registry(), start_bound(&own, 0))
                .await
                .map_err(|e| e.to_string())?;
            Ok(warrant_core::ports::ChildParts { decider, surfaces })
        })
    }
}

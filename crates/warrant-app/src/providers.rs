//! Reaching a spec's providers and checking what they offer against what it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use warrant_core::Spec;
use warrant_core::ports::Observation;
use warrant_engine::Surfaces;
use warrant_surfaces::ReferenceCatalog;

use crate::{AppError, Result};

/// Starts or reaches every provider of `spec` (relative paths were resolved when it was read).
pub async fn connect(spec: &Spec) -> Result<Surfaces> {
    warrant_surfaces::connect(&ReferenceCatalog::default(), spec, Path::new(""))
        .await
        .map_err(AppError::invalid)
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

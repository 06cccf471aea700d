//! The scripted decider: a deterministic list of decisions per step, read from YAML or JSON.
//!
//! ```yaml
//! steps:
//!   order:
//!     - call: read_menu
//!     - call: order_latte
//!       args: {size: medium, milk: oat}
//!     - done: ordered
//!   drift:
//!     - call: check_design_drift
//!       claims: {color: order.color}   # optional: the argument claims a carried value
//!     - done: checked
//! ```
//!
//! The n-th decision of a step is the n-th entry for that step, whatever happened to earlier
//! entries: when Warrant rejects a call the script simply moves on. It models a decider that
//! does not adapt, and it needs no state of its own, so a resumed run picks up where it was.
//!
//! A `wait` entry sleeps before the step's next decision: `- wait: {for: 90s}` or
//! `- wait: {until: 2026-12-08T09:00:00Z}`. An `ask` entry asks the person the run acts for,
//! and the run waits for the answer: `- ask: {prompt: Which account?, schema: {type: string}}`.
//!
//! A spec with `plan_first` asks for the run's grants before anything else; a script gives
//! them under `plan:` (step id to grant, as a step's `grant` in the spec):
//!
//! ```yaml
//! plan:
//!   pay: {tools: {transfer: {to: {from: [objective]}, amount: {max: 950}}}}
//! steps:
//!   pay:
//!     - call: transfer
//!       args: {to: DE89370400440532013000, amount: 950}
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use warrant_core::canon;
use warrant_core::codes::Code;
use warrant_core::event::{Claim, DeciderIdentity, Decision};
use warrant_core::ids::HandleId;
use warrant_core::ports::{BoxFuture, DecideError, Decided, Decider};
use warrant_core::projection::Projection;
use warrant_core::spec::{Format, ParseError, parse_document};

/// One entry of a script, as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    call: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    handle: Option<String>,
    #[serde(default)]
    claims: BTreeMap<String, String>,
    done: Option<String>,
    decline: Option<String>,
    /// Sleep: `{for: 90s}` or `{until: 2026-12-08T09:00:00Z}`.
    wait: Option<warrant_core::timer::Wait>,
    /// Ask the person: `{prompt: ..., schema: {...}}` (no schema: a string).
    ask: Option<AskEntry>,
}

/// A question, as a script writes it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AskEntry {
    prompt: String,
    #[serde(default)]
    schema: Option<Value>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    steps: BTreeMap<String, Vec<Entry>>,
    /// The grants proposed when a plan is asked for (`plan_first`).
    #[serde(default)]
    plan: Option<BTreeMap<String, warrant_core::spec::Grant>>,
}

/// A script that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// It does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// An entry is not one decision.
    #[error("{file}: steps.{step}[{index}]: {message}")]
    Entry {
        /// The file.
        file: String,
        /// The step.
        step: String,
        /// The entry's index.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

/// A parsed script: decisions per step.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    steps: BTreeMap<String, Vec<Decision>>,
    plan: Option<BTreeMap<String, warrant_core::spec::Grant>>,
    digest: String,
}

impl Script {
    /// Parses a script file's text.
    pub fn parse(text: &str, format: Format, file: &str) -> Result<Script, ScriptError> {
        let raw: ScriptFile = parse_document(text, format, file)?;
        let mut steps = BTreeMap::new();
        for (step, entries) in raw.steps {
            let mut decisions = Vec::with_capacity(entries.len());
            for (index, entry) in entries.into_iter().enumerate() {
                let bad = |message: String| ScriptError::Entry {
                    file: file.to_owned(),
                    step: step.clone(),
                    index,
                    message,
                };
                decisions.push(entry_to_decision(entry).map_err(bad)?);
            }
            steps.insert(step, decisions);
        }
        let digest = canon::digest_bytes(text.as_bytes());
        Ok(Script {
            steps,
            plan: raw.plan,
            digest,
        })
    }

    /// The step ids the script has decisions for.
    pub fn steps(&self) -> impl Iterator<Item = &str> {
        self.steps.keys().map(String::as_str)
    }

    /// The tools the script calls: each call's step, index among the step's entries, and tool.
    pub fn calls(&self) -> impl Iterator<Item = (&str, usize, &str)> {
        self.steps.iter().flat_map(|(step, decisions)| {
            decisions
                .iter()
                .enumerate()
                .filter_map(move |(i, d)| match d {
                    Decision::Call { tool, .. } => Some((step.as_str(), i, tool.as_str())),
                    _ => None,
                })
        })
    }
}

fn entry_to_decision(e: Entry) -> Result<Decision, String> {
    let kinds = [
        e.call.is_some(),
        e.done.is_some(),
        e.decline.is_some(),
        e.wait.is_some(),
        e.ask.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if kinds != 1 {
        return Err(
            "each entry is exactly one of `call`, `done`, `decline`, `wait` or `ask`".into(),
        );
    }
    if let Some(tool) = e.call {
        let handle = match e.handle {
            Some(h) => Some(h.parse::<HandleId>().map_err(|err| err.to_string())?),
            None => None,
        };
        let args = e.args.unwrap_or_else(|| Value::Object(Default::default()));
        let claims = e
            .claims
            .into_iter()
            .map(|(arg, carried)| Claim { arg, carried })
            .collect();
        return Ok(Decision::Call {
            tool,
            handle,
            args: Arc::new(args),
            claims,
        });
    }
    if e.args.is_some() || e.handle.is_some() || !e.claims.is_empty() {
        return Err("`args`, `handle` and `claims` belong to a `call` entry".into());
    }
    if let Some(summary) = e.done {
        return Ok(Decision::Done { summary });
    }
    if let Some(ask) = e.ask {
        return Ok(Decision::Ask {
            prompt: ask.prompt,
            schema: Arc::new(
                ask.schema
                    .unwrap_or_else(|| serde_json::json!({"type": "string"})),
            ),
        });
    }
    if let Some(wait) = e.wait {
        return Ok(Decision::Wait {
            wait,
            reason: String::new(),
        });
    }
    Ok(Decision::Decline {
        reason: e.decline.unwrap_or_default(),
    })
}

/// Decides by reading the script.
pub struct ScriptedDecider {
    script: Script,
    name: String,
}

impl ScriptedDecider {
    /// A decider reading `script`, named `name` (its path) in logs and reports.
    pub fn new(script: Script, name: &str) -> ScriptedDecider {
        ScriptedDecider {
            script,
            name: name.to_owned(),
        }
    }
}

impl Decider for ScriptedDecider {
    fn identity(&self) -> DeciderIdentity {
        DeciderIdentity {
            kind: warrant_core::DeciderKind::Scripted.name().into(),
            name: self.name.clone(),
            digest: Some(self.script.digest.clone()),
        }
    }

    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        if projection.planning.is_some() {
            let planned = match &self.script.plan {
                Some(grants) => Ok(Decided {
                    decision: Decision::Plan {
                        grants: grants.clone(),
                    },
                    usage: None,
                    exchange: None,
                }),
                None => Err(DecideError::new(
                    Code::InvalidPlan,
                    "a plan was asked for (`plan_first`), and the script has no `plan`",
                )),
            };
            return Box::pin(std::future::ready(planned));
        }
        let index = projection.step_decision_no.saturating_sub(1) as usize;
        let result = match self
            .script
            .steps
            .get(&*projection.step.0)
            .and_then(|d| d.get(index))
        {
            Some(decision) => Ok(Decided {
                decision: decision.clone(),
                usage: None,
                exchange: None,
            }),
            None => Err(DecideError::new(
                Code::ScriptExhausted,
                format!(
                    "the script has no decision {} for step `{}`",
                    projection.step_decision_no, projection.step
                ),
            )),
        };
        Box::pin(std::future::ready(result))
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_must_be_exactly_one_decision() {
        let err = Script::parse(
            "steps:\n  a:\n    - {call: x, done: y}\n",
            Format::Yaml,
            "s.yaml",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("steps.a[0]: each entry is exactly one of"),
            "{err}"
        );
        let err = Script::parse(
            "steps:\n  a:\n    - {done: y, args: {}}\n",
            Format::Yaml,
            "s.yaml",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("belong to a `call` entry"),
            "{err}"
        );
        let err = Script::parse(
            "steps:\n  a:\n    - {call: x, handle: nope}\n",
            Format::Yaml,
            "s.yaml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a handle"), "{err}");
    }

    #[test]
    fn yaml_and_json_scripts_read_the_same() {
        let y = Script::parse("steps:\n  a:\n    - call: t\n      args: {n: 1}\n      claims: {n: s.o}\n    - decline: no\n", Format::Yaml, "s.yaml").unwrap();
        let j = Script::parse(r#"{"steps":{"a":[{"call":"t","args":{"n":1},"claims":{"n":"s.o"}},{"decline":"no"}]}}"#, Format::Json, "s.json").unwrap();
        assert_eq!(y.steps, j.steps);
    }
}

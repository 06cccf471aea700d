//! The model capability table: per model, the wire protocol, the output ceiling, the reasoning
//! control and its allowed values, tool support and prices. Shipped as `models.yaml`; a user's
//! file adds or replaces entries. A requested limit the model cannot express is refused here,
//! before any request is made.

use std::collections::BTreeMap;

use serde::Deserialize;
use warrant_core::num;
use warrant_core::spec::Format;

/// The table shipped with the binary.
pub const BUILTIN: &str = include_str!("models.yaml");

/// The wire protocol a model is reached with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI Chat Completions (also every OpenAI-compatible server).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini generateContent.
    Gemini,
}

/// How a model's reasoning is controlled.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Reasoning {
    /// An effort vocabulary: exactly these values.
    Effort(Vec<String>),
    /// A thinking-token budget within `[min, max]`.
    Budget {
        /// Smallest budget accepted.
        min: u64,
        /// Largest budget accepted.
        max: u64,
    },
}

/// USD per million tokens.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens.
    pub input: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
    /// Input tokens read from the provider's cache; the input price when absent.
    #[serde(default)]
    pub cached_input: Option<f64>,
}

/// What one model can be asked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Its wire protocol.
    pub api: Api,
    /// Most output tokens it accepts.
    pub max_output: u64,
    /// Its reasoning control, if any.
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    /// Whether it calls tools.
    #[serde(default)]
    pub tools: bool,
    /// Prices, when known (cost is then recorded and counted against the budget).
    #[serde(default)]
    pub price: Option<Price>,
    /// The request field that carries the output cap, when not the protocol's usual one
    /// (Chat Completions: `max_completion_tokens`; compatible servers: `max_tokens`).
    #[serde(default)]
    pub max_output_field: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    models: BTreeMap<String, Model>,
}

/// Models by `provider:model`.
#[derive(Clone, Debug)]
pub struct Table {
    models: BTreeMap<String, Model>,
}

impl Table {
    /// The shipped table.
    pub fn builtin() -> Result<Table, String> {
        Table::parse(BUILTIN, "models.yaml (built in)")
    }

    fn parse(text: &str, name: &str) -> Result<Table, String> {
        let file: File = warrant_core::spec::parse_document(text, Format::Yaml, name)
            .map_err(|e| e.to_string())?;
        Ok(Table {
            models: file.models,
        })
    }

    /// This table with `text`'s entries added or replacing those of the same name.
    pub fn with_overrides(mut self, text: &str, name: &str) -> Result<Table, String> {
        let more = Table::parse(text, name)?;
        self.models.extend(more.models);
        Ok(self)
    }

    /// The model `provider:model`, if listed.
    pub fn get(&self, provider: &str, model: &str) -> Option<&Model> {
        self.models.get(&format!("{provider}:{model}"))
    }

    /// Every listed `provider:model`.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }
}

/// What a decider asks of a model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    /// Output tokens at most (`max_output_tokens`).
    pub max_output_tokens: u64,
    /// An effort value or a budget, as written.
    pub reasoning: Option<String>,
}

/// A reasoning setting the model can express, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReasoningSetting {
    /// An effort value from the model's vocabulary.
    Effort(String),
    /// A thinking budget in tokens.
    Budget(u64),
}

/// Checks `asked` against `model`: anything it cannot express is refused, naming why.
pub fn check(
    name: &str,
    model: &Model,
    asked: &Requested,
) -> Result<Option<ReasoningSetting>, String> {
    if !model.tools {
        return Err(format!(
            "`{name}` cannot call tools, and a Warrant decider needs them"
        ));
    }
    if asked.max_output_tokens == 0 {
        return Err("max_output_tokens must be at least 1".into());
    }
    if asked.max_output_tokens > model.max_output {
        return Err(format!(
            "`{name}` accepts at most {} output tokens; {} were asked",
            model.max_output, asked.max_output_tokens
        ));
    }
    let Some(wanted) = &asked.reasoning else {
        return Ok(None);
    };
    match &model.reasoning {
        None => Err(format!(
            "`{name}` has no reasoning control: `reasoning={wanted}` cannot be expressed"
        )),
        Some(Reasoning::Effort(values)) => {
            if values.iter().any(|v| v == wanted) {
                Ok(Some(ReasoningSetting::Effort(wanted.clone())))
            } else {
                Err(format!(
                    "`{name}` takes reasoning effort {}; `{wanted}` is not one of them",
                    values.join(", ")
                ))
            }
        }
        Some(Reasoning::Budget { min, max }) => {
            let budget: u64 = wanted.parse().map_err(|_| {
                format!("`{name}` takes a thinking budget in tokens ({min}-{max}), not `{wanted}`")
            })?;
            if budget < *min || budget > *max {
                return Err(format!(
                    "`{name}` takes a thinking budget of {min}-{max} tokens; {budget} was asked"
                ));
            }
            if model.api == Api::Anthropic && budget >= asked.max_output_tokens {
                return Err(format!(
                    "the thinking budget ({budget}) must be below max_output_tokens ({}): \
                     thinking counts toward the output",
                    asked.max_output_tokens
                ));
            }
            Ok(Some(ReasoningSetting::Budget(budget)))
        }
    }
}

/// The cost in micro-dollars of this usage (USD per million tokens is micro-USD per token).
pub fn cost_micro_usd(price: &Price, input: u64, cached: u64, output: u64) -> u64 {
    let cached = cached.min(input);
    let fresh = num::to_f64(input - cached) * price.input;
    let reused = num::to_f64(cached) * price.cached_input.unwrap_or(price.input);
    num::to_u64((fresh + reused + num::to_f64(output) * price.output).round())
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

    fn table() -> Table {
        Table::builtin().unwrap()
    }

    #[test]
    fn the_builtin_table_parses_and_every_model_can_call_tools() {
        let t = table();
        assert!(t.names().count() >= 10);
        for name in t.names() {
            let (p, m) = name.split_once(':').unwrap();
            assert!(t.get(p, m).unwrap().tools, "{name}");
        }
    }

    #[test]
    fn limits_a_model_cannot_express_are_refused() {
        let t = table();
        let sonnet = t.get("anthropic", "claude-sonnet-4-5").unwrap();
        let ask = |max, r: Option<&str>| Requested {
            max_output_tokens: max,
            reasoning: r.map(str::to_owned),
        };
        assert!(
            check("s", sonnet, &ask(100_000, None))
                .unwrap_err()
                .contains("at most 64000")
        );
        // A thinking budget larger than the output cap: refused, not sent.
        let e = check("s", sonnet, &ask(2000, Some("4000"))).unwrap_err();
        assert!(e.contains("below max_output_tokens"), "{e}");
        assert_eq!(
            check("s", sonnet, &ask(8000, Some("2048"))).unwrap(),
            Some(ReasoningSetting::Budget(2048))
        );
        // Effort vocabularies differ per model.
        let o4 = t.get("openai", "o4-mini").unwrap();
        assert!(
            check("o", o4, &ask(1000, Some("minimal")))
                .unwrap_err()
                .contains("low, medium, high")
        );
        let gpt5 = t.get("openai", "gpt-5").unwrap();
        assert!(check("g", gpt5, &ask(1000, Some("minimal"))).is_ok());
        let gpt41 = t.get("openai", "gpt-4.1").unwrap();
        assert!(
            check("g", gpt41, &ask(1000, Some("low")))
                .unwrap_err()
                .contains("no reasoning control")
        );
    }

    #[test]
    fn overrides_replace_entries_and_bad_files_name_the_field() {
        let t = table()
            .with_overrides(
                "models:\n  openai:gpt-4.1:\n    api: openai-chat\n    max_output: 100\n    tools: true\n",
                "mine.yaml",
            )
            .unwrap();
        assert_eq!(t.get("openai", "gpt-4.1").unwrap().max_output, 100);
        let e = table()
            .with_overrides(
                "models:\n  x:y:\n    api: telepathy\n    max_output: 1\n",
                "bad.yaml",
            )
            .unwrap_err();
        assert!(e.contains("bad.yaml") && e.contains("telepathy"), "{e}");
    }

    #[test]
    fn cost_counts_cached_input_at_its_own_price() {
        let p = Price {
            input: 2.0,
            output: 8.0,
            cached_input: Some(0.5),
        };
        // 1000 input of which 400 cached, 100 output: 600*2 + 400*0.5 + 100*8.
        assert_eq!(cost_micro_usd(&p, 1000, 400, 100), 1200 + 200 + 800);
    }
}

//! Live model deciders: OpenAI (Chat Completions and Responses), Anthropic Messages, Gemini
//! generateContent, and any OpenAI-compatible server, on hand-written mappers over reqwest.
//!
//! A decider is named `openai:MODEL`, `anthropic:MODEL`, `gemini:MODEL` or
//! `openai-compatible:MODEL@BASE_URL`, with options after `?`:
//! `max_output_tokens=N` (default 1024, on every provider), `reasoning=EFFORT|BUDGET`,
//! `stream=true|false` (default true), `attempts=N` (default 4), `base_url=URL`, and for
//! compatible servers `key_env=NAME`. Each is checked against the capability table before any
//! request: what a model cannot express is refused, never dropped. Keys come from
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` (or `GOOGLE_API_KEY`); they travel
//! only in request headers and never into the log.
//!
//! Every decision records its exchange: the request body, each attempt, and the answer as it
//! came (cut at 256 KiB), so a replay reproduces the run byte for byte without the network.
//! Reasoning a provider returns with a call (Anthropic's signed thinking, OpenAI's encrypted
//! reasoning, Gemini's thought signature) is kept in memory and sent back with that call to
//! the same decider only; another provider never sees it.
//!
//! When a model answers with several tool calls, the first is decided now and the rest one at
//! a time on the next decisions of the same step, without asking the model again; their
//! `decided` events say which answer they came from.

pub mod conversation;
pub mod http;
pub mod models;
pub mod wire;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use warrant_core::canon;
use warrant_core::codes::Code;
use warrant_core::event::{DeciderIdentity, Decision};
use warrant_core::ports::{BoxFuture, DecideError, Decided, Decider};
use warrant_core::projection::Projection;
use warrant_core::status::DeciderRef;

use conversation::Reply;
use models::{Api, Price, Requested, Table};
use wire::Settings;

/// Output tokens asked for when the decider's name does not say (sent on every provider).
pub const MAX_OUTPUT_TOKENS_DEFAULT: u64 = 1024;

const OPENAI_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_URL: &str = "https://api.anthropic.com/v1";
const GEMINI_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Calls of one model answer still to be decided, for one step of one run.
struct Queued {
    /// The decision number the next one is for.
    next_decision: u32,
    /// The decision whose answer they came from, and how many calls it held.
    from: (u32, usize),
    calls: VecDeque<Decision>,
}

/// A decider backed by a live model.
pub struct LiveDecider {
    provider: String,
    /// What follows `provider:` in the decider's name, as written (model, URL, options): the
    /// identity a resumed run rebuilds the decider from.
    target: String,
    model: String,
    api: Api,
    base_url: String,
    /// (header, value, secret).
    headers: Vec<(String, String, bool)>,
    settings: Settings,
    price: Option<Price>,
    retry: http::Retry,
    client: reqwest::Client,
    /// Reasoning items the model returned with a call, by (run, tool, arguments digest): sent
    /// back with that call to this provider only.
    reasoning: Mutex<HashMap<(String, String, String), Vec<Value>>>,
    queued: Mutex<HashMap<(String, String), Queued>>,
}

/// Whether `name` (the part before `:`) names a live decider.
pub fn is_live(kind: &str) -> bool {
    matches!(
        kind,
        "openai" | "anthropic" | "gemini" | "openai-compatible"
    )
}

#[expect(
    clippy::disallowed_methods,
    reason = "the deciders own reading their API keys and endpoints from the environment"
)]
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl LiveDecider {
    /// Builds the decider `text` names (`openai:gpt-4.1?max_output_tokens=800`), checked
    /// against `table`. A missing key, an unknown model or a limit the model cannot express is
    /// an error here, before any run starts.
    pub fn parse(named: &DeciderRef, table: &Table) -> Result<LiveDecider, String> {
        LiveDecider::parse_keyed(named, table, None)
    }

    /// The same, with the API key given here (an operator's secret, paired with this decider
    /// and so with its endpoint) instead of read from the environment.
    pub fn parse_keyed(
        named: &DeciderRef,
        table: &Table,
        key: Option<&str>,
    ) -> Result<LiveDecider, String> {
        let text = named.to_string();
        let (kind, rest) = (named.kind.name(), named.arg.as_str());
        let (target, options) = match rest.rsplit_once('?') {
            Some((t, o)) => (t, o),
            None => (rest, ""),
        };
        let mut asked = Requested {
            max_output_tokens: MAX_OUTPUT_TOKENS_DEFAULT,
            reasoning: None,
        };
        let (mut stream, mut retry) = (true, http::Retry::default());
        let (mut base_override, mut key_env) = (None, None);
        for pair in options.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("option `{pair}` is not `name=value`"))?;
            match k {
                "max_output_tokens" => {
                    asked.max_output_tokens = v
                        .parse()
                        .map_err(|_| format!("max_output_tokens `{v}` is not a number"))?;
                }
                "reasoning" => asked.reasoning = Some(v.to_owned()),
                "stream" => {
                    stream = v
                        .parse()
                        .map_err(|_| format!("stream `{v}` is not true or false"))?;
                }
                "attempts" => {
                    retry.attempts =
                        v.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                            format!("attempts `{v}` is not a number of at least 1")
                        })?;
                }
                "base_url" => base_override = Some(v.trim_end_matches('/').to_owned()),
                "key_env" => key_env = Some(v.to_owned()),
                other => {
                    return Err(format!(
                        "unknown option `{other}` (known: max_output_tokens, reasoning, stream, \
                         attempts, base_url, key_env)"
                    ));
                }
            }
        }
        let (model, compatible_url) = match kind {
            "openai-compatible" => {
                let (m, url) = target
                    .split_once('@')
                    .ok_or_else(|| format!("`{text}`: write `openai-compatible:MODEL@BASE_URL`"))?;
                (m.to_owned(), Some(url.trim_end_matches('/').to_owned()))
            }
            "openai" | "anthropic" | "gemini" => (target.to_owned(), None),
            other => return Err(format!("unknown decider kind `{other}`")),
        };
        if model.is_empty() {
            return Err(format!("`{text}` names no model"));
        }
        let listed = table.get(kind, &model).cloned();
        let entry = match (&listed, kind) {
            (Some(m), _) => m.clone(),
            // A compatible server's model: tools assumed, no ceiling known beyond what is asked.
            (None, "openai-compatible") => models::Model {
                api: Api::OpenaiChat,
                max_output: asked.max_output_tokens,
                reasoning: None,
                tools: true,
                price: None,
                max_output_field: Some("max_tokens".into()),
            },
            (None, _) => {
                let known: Vec<&str> = table
                    .names()
                    .filter(|n| n.starts_with(&format!("{kind}:")))
                    .collect();
                return Err(format!(
                    "`{kind}:{model}` is not in the model table (known: {}); add it with --models FILE",
                    known.join(", ")
                ));
            }
        };
        let reasoning = models::check(&format!("{kind}:{model}"), &entry, &asked)?;
        // A key given with the decider goes only to the endpoint written with it (or the
        // provider's own): never to one the environment names.
        let endpoint_env = |var: &str| if key.is_some() { None } else { env(var) };
        let base_url = match (base_override, compatible_url, kind) {
            (Some(b), _, _) => b,
            (None, Some(u), _) => u,
            (None, None, "openai") => {
                endpoint_env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_URL.into())
            }
            (None, None, "anthropic") => {
                endpoint_env("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_URL.into())
            }
            (None, None, _) => endpoint_env("GEMINI_BASE_URL").unwrap_or_else(|| GEMINI_URL.into()),
        };
        let base_url = base_url.trim_end_matches('/').to_owned();
        let missing = |var: &str| {
            format!("`{kind}:{model}` needs an API key: set the environment variable {var}")
        };
        if key.is_some() && key_env.is_some() {
            return Err(format!(
                "`{text}`: its key is given with it; drop the `key_env` option"
            ));
        }
        let given = key.map(str::to_owned);
        let key_from = |var: &str| given.clone().or_else(|| env(var));
        let headers = match kind {
            "openai" => {
                let key = key_from("OPENAI_API_KEY").ok_or_else(|| missing("OPENAI_API_KEY"))?;
                vec![("authorization".into(), format!("Bearer {key}"), true)]
            }
            "anthropic" => {
                let key =
                    key_from("ANTHROPIC_API_KEY").ok_or_else(|| missing("ANTHROPIC_API_KEY"))?;
                vec![
                    ("x-api-key".into(), key, true),
                    ("anthropic-version".into(), ANTHROPIC_VERSION.into(), false),
                ]
            }
            "gemini" => {
                let key = key_from("GEMINI_API_KEY")
                    .or_else(|| env("GOOGLE_API_KEY"))
                    .ok_or_else(|| missing("GEMINI_API_KEY (or GOOGLE_API_KEY)"))?;
                vec![("x-goog-api-key".into(), key, true)]
            }
            _ => match (&given, &key_env) {
                (Some(key), _) => vec![("authorization".into(), format!("Bearer {key}"), true)],
                (None, Some(var)) => {
                    let key = env(var).ok_or_else(|| missing(var))?;
                    vec![("authorization".into(), format!("Bearer {key}"), true)]
                }
                (None, None) => Vec::new(),
            },
        };
        let max_output_field = entry.max_output_field.clone().unwrap_or_else(|| {
            match entry.api {
                Api::OpenaiChat => "max_completion_tokens",
                Api::OpenaiResponses => "max_output_tokens",
                Api::Anthropic => "max_tokens",
                Api::Gemini => "maxOutputTokens",
            }
            .to_owned()
        });
        // Connecting is bounded here, and so is a silence between two reads of an answer; the
        // whole decision is bounded by the run's deadline.
        let client = warrant_http::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .read_timeout(std::time::Duration::from_secs(300))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(LiveDecider {
            provider: kind.to_owned(),
            target: rest.to_owned(),
            api: entry.api,
            base_url,
            headers,
            settings: Settings {
                model: model.clone(),
                max_output_tokens: asked.max_output_tokens,
                max_output_field,
                reasoning,
                reasoning_model: entry.reasoning.is_some(),
                stream,
            },
            model,
            price: entry.price.clone(),
            retry,
            client,
            reasoning: Mutex::new(HashMap::new()),
            queued: Mutex::new(HashMap::new()),
        })
    }

    fn url(&self) -> String {
        match self.api {
            Api::OpenaiChat => format!("{}/chat/completions", self.base_url),
            Api::OpenaiResponses => format!("{}/responses", self.base_url),
            Api::Anthropic => format!("{}/messages", self.base_url),
            Api::Gemini if self.settings.stream => format!(
                "{}/models/{}:streamGenerateContent?alt=sse",
                self.base_url, self.model
            ),
            Api::Gemini => format!("{}/models/{}:generateContent", self.base_url, self.model),
        }
    }

    /// The next call of an earlier answer, when this decision is the one it waits for.
    fn next_queued(&self, p: &Projection) -> Option<Decided> {
        let mut queued = self.queued.lock().ok()?;
        let key = (p.run_id.0.clone(), p.step.0.to_string());
        let q = queued.get_mut(&key)?;
        if q.next_decision != p.decision_no {
            queued.remove(&key);
            return None;
        }
        let decision = q.calls.pop_front()?;
        let (from, of) = q.from;
        let position = of - q.calls.len();
        q.next_decision += 1;
        if q.calls.is_empty() {
            queued.remove(&key);
        }
        Some(Decided {
            decision,
            usage: None,
            exchange: Some(Arc::new(json!({
                "parallel": {"answer_of_decision": from, "call": position, "of": of},
            }))),
        })
    }

    fn remembered(&self, run: &str, tool: &str, args: &Value) -> Vec<Value> {
        let key = (run.to_owned(), tool.to_owned(), canon::digest(args));
        self.reasoning
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
            .unwrap_or_default()
    }

    async fn decide_now(&self, p: Projection) -> Result<Decided, DecideError> {
        if let Some(d) = self.next_queued(&p) {
            return Ok(d);
        }
        let run = p.run_id.0.clone();
        let recent: HashMap<String, (String, Arc<Value>)> = p
            .recent
            .iter()
            .map(|c| (c.call.to_string(), (c.tool.clone(), c.proposed.clone())))
            .collect();
        let lookup = |id: &str| {
            recent
                .get(id)
                .map(|(tool, args)| self.remembered(&run, tool, args))
                .unwrap_or_default()
        };
        let Some((conversation, names)) = conversation::from_projection(&p, &lookup) else {
            return Err(DecideError::new(
                Code::NoSpec,
                format!("the projection's spec has no step {}", p.step_index),
            ));
        };
        let body = wire::request(self.api, &conversation, &self.settings);
        let url = self.url();
        let mut attempts = Vec::new();
        let sent = http::send(
            &self.client,
            &http::Request {
                url: &url,
                headers: &self.headers,
                body: &body,
            },
            self.retry,
            &mut attempts,
        )
        .await;
        let mut exchange = Map::new();
        exchange.insert("api".into(), json!(format!("{:?}", self.api)));
        exchange.insert("url".into(), json!(url));
        exchange.insert("request".into(), http::recorded_request(&body));
        exchange.insert("attempts".into(), json!(attempts));
        let answer = match sent {
            Ok(a) => a,
            Err(f) => {
                return Err(DecideError {
                    code: f.code,
                    message: f.message,
                    exchange: Some(Arc::new(Value::Object(exchange))),
                });
            }
        };
        exchange.insert("response".into(), http::recorded(&answer.text));
        if let Some(why) = &answer.broken {
            exchange.insert("broken".into(), json!(why));
        }
        let exchange = Arc::new(Value::Object(exchange));
        let fail = |code: Code, message: String| DecideError {
            code,
            message,
            exchange: Some(exchange.clone()),
        };
        let reply =
            wire::parse(self.api, &answer.text, self.settings.stream).map_err(|(c, m)| {
                match &answer.broken {
                    Some(why) => fail(Code::StreamBroken, format!("{m} ({why})")),
                    None => fail(c, m),
                }
            })?;
        let mut decisions = conversation::decisions(&reply, &names).map_err(|(c, m)| fail(c, m))?;
        self.keep_reasoning(&run, &reply, &decisions);
        let usage = conversation::usage(&reply, self.cost(&reply));
        let first = decisions.remove(0);
        if !decisions.is_empty()
            && let Ok(mut queued) = self.queued.lock()
        {
            queued.insert(
                (run, p.step.0.to_string()),
                Queued {
                    next_decision: p.decision_no + 1,
                    from: (p.decision_no, decisions.len() + 1),
                    calls: decisions.into(),
                },
            );
        }
        Ok(Decided {
            decision: first,
            usage,
            exchange: Some(exchange),
        })
    }

    fn keep_reasoning(&self, run: &str, reply: &Reply, decisions: &[Decision]) {
        if reply.reasoning.is_empty() {
            return;
        }
        let Some(Decision::Call { tool, args, .. }) = decisions.first() else {
            return;
        };
        if let Ok(mut m) = self.reasoning.lock() {
            m.insert(
                (run.to_owned(), tool.clone(), canon::digest(args)),
                reply.reasoning.clone(),
            );
        }
    }

    fn cost(&self, reply: &Reply) -> Option<u64> {
        self.price.as_ref().map(|p| {
            models::cost_micro_usd(
                p,
                reply.input_tokens,
                reply.cached_tokens,
                reply.output_tokens,
            )
        })
    }
}

impl Decider for LiveDecider {
    fn identity(&self) -> DeciderIdentity {
        let name = self.target.clone();
        let config = json!({
            "api": format!("{:?}", self.api),
            "max_output_tokens": self.settings.max_output_tokens,
            "reasoning": self.settings.reasoning.as_ref().map(|r| format!("{r:?}")),
            "stream": self.settings.stream,
        });
        DeciderIdentity {
            kind: self.provider.clone(),
            name,
            digest: Some(canon::digest(&config)),
        }
    }

    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        Box::pin(self.decide_now(projection))
    }
}

//! Demo providers with deterministic in-memory state: a cafe, a gallery, a bakery, and the
//! benchmark's `step` tool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use warrant_core::event::Effect;
use warrant_core::num;

use crate::reference::{ActionSpec, Provider, ProviderError};

fn action(name: &str, effect: Effect, description: &str, input_schema: Value) -> ActionSpec {
    ActionSpec {
        name: name.to_owned(),
        effect,
        description: description.to_owned(),
        input_schema,
    }
}

/// The records of performed effects, and the result each idempotency key got.
type EffectLog = (Vec<Value>, HashMap<String, Value>);

/// The effects a demo provider performed, and the result each idempotency key got: a repeated
/// key returns the first result and repeats no effect. Every new effect moves the provider's
/// state version on.
#[derive(Default)]
struct Effects {
    inner: Mutex<EffectLog>,
    version: AtomicU64,
}

impl Effects {
    fn locked(&self) -> Result<std::sync::MutexGuard<'_, EffectLog>, ProviderError> {
        self.inner
            .lock()
            .map_err(|_| ProviderError::Unavailable("provider state poisoned".into()))
    }

    /// The effects so far.
    fn records(&self) -> Vec<Value> {
        self.locked().map(|g| g.0.clone()).unwrap_or_default()
    }

    /// Reads the effects so far.
    fn read<R>(&self, f: impl FnOnce(&[Value]) -> R) -> Result<R, ProviderError> {
        Ok(f(&self.locked()?.0))
    }

    fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Performs an effect once per key: `perform` sees the effects so far and returns the
    /// record to keep and the result to answer (now and for every repeat of `key`).
    fn once(
        &self,
        key: &str,
        perform: impl FnOnce(&[Value]) -> Result<(Value, Value), ProviderError>,
    ) -> Result<Value, ProviderError> {
        let mut g = self.locked()?;
        if let Some(previous) = g.1.get(key) {
            return Ok(previous.clone());
        }
        let (record, result) = perform(&g.0)?;
        g.0.push(record);
        g.1.insert(key.to_owned(), result.clone());
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(result)
    }
}

/// A cafe: `read_menu` (read) and `order_latte` (commit). Oat, soy and whole milk are in
/// stock; almond is not (the order fails: a provider error).
#[derive(Default)]
pub struct Cafe {
    effects: Effects,
}

const MILKS: [(&str, &str); 4] = [
    ("whole", "#c69c6d"),
    ("oat", "#d2b48c"),
    ("soy", "#c8a27a"),
    ("almond", "#d9c3a5"),
];

impl Cafe {
    /// Orders placed so far (the effects this provider performed).
    pub fn orders(&self) -> Vec<Value> {
        self.effects.records()
    }
}

impl Provider for Cafe {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![
            action(
                "read_menu",
                Effect::Read,
                "List the drinks, sizes and milks the cafe serves.",
                json!({
                    "type": "object", "properties": {}, "additionalProperties": false
                }),
            ),
            action(
                "order_latte",
                Effect::Commit,
                "Order one latte. Charges the customer.",
                json!({
                    "type": "object",
                    "properties": {
                        "size": {"enum": ["small", "medium", "large"]},
                        "milk": {"enum": ["whole", "oat", "soy", "almond"], "default": "whole"}
                    },
                    "required": ["size"],
                    "additionalProperties": false
                }),
            ),
        ]
    }

    fn state_version(&self) -> u64 {
        self.effects.version()
    }

    fn accepts_idempotency_keys(&self) -> bool {
        true
    }

    fn call(&self, tool: &str, args: &Value, key: &str) -> Result<Value, ProviderError> {
        match tool {
            "read_menu" => Ok(json!({
                "drinks": [{"name": "latte", "sizes": {"small": 380, "medium": 420, "large": 460}}],
                "milks": MILKS.iter().map(|(m, _)| *m).collect::<Vec<_>>(),
                "currency": "EUR cents"
            })),
            "order_latte" => self.effects.once(key, |orders| {
                let size = args.get("size").and_then(Value::as_str).unwrap_or("medium");
                let milk = args.get("milk").and_then(Value::as_str).unwrap_or("whole");
                if milk == "almond" {
                    return Err(ProviderError::Failed("out of almond milk".into()));
                }
                let color = MILKS.iter().find(|(m, _)| *m == milk).map_or("#c69c6d", |(_, c)| c);
                let price = match size {
                    "small" => 380,
                    "large" => 460,
                    _ => 420,
                };
                let order = json!({
                    "order_id": format!("ord-{:04}", orders.len() + 1),
                    "drink": "latte", "size": size, "milk": milk, "color": color, "price_cents": price
                });
                Ok((order.clone(), order))
            }),
            other => Err(ProviderError::Failed(format!(
                "the cafe has no action `{other}`"
            ))),
        }
    }
}

/// A gallery: `check_design_drift` (read) compares a color with the house palette.
pub struct Gallery;

const PALETTE: [(&str, [i32; 3]); 4] = [
    ("latte-brown", [0xc6, 0x9c, 0x6d]),
    ("oat", [0xd2, 0xb4, 0x8c]),
    ("espresso", [0x4b, 0x2e, 0x1e]),
    ("cream", [0xf3, 0xe5, 0xc0]),
];

fn parse_hex(color: &str) -> Option<[i32; 3]> {
    let hex = color.strip_prefix('#')?;
    if hex.len() != 6 {
        return None;
    }
    let channel = |i: usize| i32::from_str_radix(hex.get(i..i + 2)?, 16).ok();
    Some([channel(0)?, channel(2)?, channel(4)?])
}

impl Provider for Gallery {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![action(
            "check_design_drift",
            Effect::Read,
            "Compare a color with the gallery's palette and report how far it drifts.",
            json!({
                "type": "object",
                "properties": {"color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"}},
                "required": ["color"],
                "additionalProperties": false
            }),
        )]
    }

    fn state_version(&self) -> u64 {
        0
    }

    fn call(&self, tool: &str, args: &Value, _key: &str) -> Result<Value, ProviderError> {
        if tool != "check_design_drift" {
            return Err(ProviderError::Failed(format!(
                "the gallery has no action `{tool}`"
            )));
        }
        let color = args.get("color").and_then(Value::as_str).unwrap_or("");
        let rgb = parse_hex(color)
            .ok_or_else(|| ProviderError::Failed(format!("`{color}` is not a #rrggbb color")))?;
        let (name, distance) = PALETTE
            .iter()
            .map(|(name, p)| {
                let d2: i32 = rgb.iter().zip(p).map(|(a, b)| (a - b).pow(2)).sum();
                (*name, num::to_i64(f64::from(d2).sqrt().round()))
            })
            .min_by_key(|(_, d)| *d)
            .unwrap_or(("none", i64::MAX));
        Ok(
            json!({"color": color, "nearest": name, "drift": distance, "within_palette": distance <= 40}),
        )
    }
}

/// A bakery: `add_pastry` (commit) adds a pastry to an order.
#[derive(Default)]
pub struct Bakery {
    effects: Effects,
}

impl Provider for Bakery {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![action(
            "add_pastry",
            Effect::Commit,
            "Add a pastry to an existing order. Charges the customer.",
            json!({
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "pattern": "^ord-[0-9]{4}$"},
                    "pastry": {"enum": ["croissant", "muffin", "scone"]}
                },
                "required": ["order_id", "pastry"],
                "additionalProperties": false
            }),
        )]
    }

    fn state_version(&self) -> u64 {
        self.effects.version()
    }

    fn accepts_idempotency_keys(&self) -> bool {
        true
    }

    fn call(&self, tool: &str, args: &Value, key: &str) -> Result<Value, ProviderError> {
        if tool != "add_pastry" {
            return Err(ProviderError::Failed(format!(
                "the bakery has no action `{tool}`"
            )));
        }
        self.effects.once(key, |basket| {
            let result = json!({
                "order_id": args.get("order_id").cloned().unwrap_or(Value::Null),
                "pastry": args.get("pastry").cloned().unwrap_or(Value::Null),
                "basket_size": basket.len() + 1
            });
            Ok((result.clone(), result))
        })
    }
}

/// A bank: `balance` and `read_statement` (reads), `transfer` (commit, accepts idempotency
/// keys). Starts with 1000.00 and one statement line whose memo comes from outside.
pub struct Bank {
    effects: Effects,
    statement_memo: String,
}

impl Default for Bank {
    fn default() -> Self {
        Bank::with_statement_memo("rent, November")
    }
}

impl Bank {
    /// A bank whose statement shows an incoming payment with this memo (the text a third party
    /// controls: where an injected instruction would arrive).
    pub fn with_statement_memo(memo: &str) -> Bank {
        Bank {
            effects: Effects::default(),
            statement_memo: memo.to_owned(),
        }
    }

    /// Transfers made so far.
    pub fn transfers(&self) -> Vec<Value> {
        self.effects.records()
    }
}

impl Provider for Bank {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![
            action(
                "balance",
                Effect::Read,
                "The account's balance.",
                json!({"type": "object", "additionalProperties": false}),
            ),
            action(
                "read_statement",
                Effect::Read,
                "The latest statement lines.",
                json!({"type": "object", "additionalProperties": false}),
            ),
            action(
                "transfer",
                Effect::Commit,
                "Send money to an account. Irreversible.",
                json!({
                    "type": "object",
                    "properties": {
                        "to": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{4,30}$"},
                        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000},
                        "memo": {"type": "string", "maxLength": 140}
                    },
                    "required": ["to", "amount"],
                    "additionalProperties": false
                }),
            ),
        ]
    }

    fn state_version(&self) -> u64 {
        self.effects.version()
    }

    fn accepts_idempotency_keys(&self) -> bool {
        true
    }

    fn call(&self, tool: &str, args: &Value, key: &str) -> Result<Value, ProviderError> {
        let spent = |transfers: &[Value]| -> f64 {
            transfers.iter().filter_map(|t| t["amount"].as_f64()).sum()
        };
        match tool {
            "balance" => {
                Ok(json!({"balance": 1000.0 - self.effects.read(spent)?, "currency": "EUR"}))
            }
            "read_statement" => Ok(json!({"lines": [
                {"date": "2026-11-28", "amount": 850.0, "from": "DE44500105175407324931", "memo": self.statement_memo}
            ]})),
            "transfer" => self.effects.once(key, |transfers| {
                let amount = args.get("amount").and_then(Value::as_f64).unwrap_or(0.0);
                if amount > 1000.0 - spent(transfers) {
                    return Err(ProviderError::Failed("insufficient funds".into()));
                }
                let t = json!({
                    "transfer_id": format!("tr-{:04}", transfers.len() + 1),
                    "to": args.get("to").cloned().unwrap_or(Value::Null),
                    "amount": amount
                });
                Ok((t.clone(), t))
            }),
            other => Err(ProviderError::Failed(format!(
                "the bank has no action `{other}`"
            ))),
        }
    }
}

/// A mailbox: `read_inbox` (read) and `send_mail` (commit, accepts idempotency keys). The
/// inbox holds messages from outside: where injected instructions arrive.
pub struct Mailbox {
    inbox: Vec<Value>,
    effects: Effects,
}

impl Default for Mailbox {
    fn default() -> Self {
        Mailbox::with_inbox(vec![
            json!({"from": "alice@example.com", "subject": "invoice 42", "body": "Please confirm you received the invoice."}),
        ])
    }
}

impl Mailbox {
    /// A mailbox whose inbox holds these messages (`{from, subject, body}`).
    pub fn with_inbox(inbox: Vec<Value>) -> Mailbox {
        Mailbox {
            inbox,
            effects: Effects::default(),
        }
    }

    /// Mail sent so far.
    pub fn sent(&self) -> Vec<Value> {
        self.effects.records()
    }
}

impl Provider for Mailbox {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![
            action(
                "read_inbox",
                Effect::Read,
                "The messages in the inbox.",
                json!({"type": "object", "additionalProperties": false}),
            ),
            action(
                "send_mail",
                Effect::Commit,
                "Send an email.",
                json!({
                    "type": "object",
                    "properties": {
                        "to": {"type": "string", "pattern": "^[^@ ]+@[^@ ]+$"},
                        "subject": {"type": "string", "maxLength": 200},
                        "body": {"type": "string", "maxLength": 5000}
                    },
                    "required": ["to", "subject", "body"],
                    "additionalProperties": false
                }),
            ),
        ]
    }

    fn state_version(&self) -> u64 {
        self.effects.version()
    }

    fn accepts_idempotency_keys(&self) -> bool {
        true
    }

    fn call(&self, tool: &str, args: &Value, key: &str) -> Result<Value, ProviderError> {
        match tool {
            "read_inbox" => Ok(json!({"messages": self.inbox})),
            "send_mail" => self.effects.once(key, |sent| {
                let receipt = json!({"id": format!("m-{}", sent.len() + 1), "to": args.get("to").cloned().unwrap_or(Value::Null)});
                Ok((args.clone(), receipt))
            }),
            other => Err(ProviderError::Failed(format!(
                "the mailbox has no action `{other}`"
            ))),
        }
    }
}

const LOREM: &str = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation ullamco";

/// The benchmark's `step` tool (read): returns a 200-byte JSON object and counts its runs.
#[derive(Default)]
pub struct StepTool {
    executions: Arc<AtomicU64>,
}

impl StepTool {
    /// A tool that counts into `executions`.
    pub fn with_counter(executions: Arc<AtomicU64>) -> StepTool {
        StepTool { executions }
    }
}

/// The result of `step` for `i`: `{"step","status","value","note"}`, 200 bytes compact.
pub fn step_result(i: i64) -> Value {
    let value = (i * 7919).rem_euclid(10007);
    // {"step":I,"status":"ok","value":V,"note":""}
    let base = 42 + i.to_string().len() + value.to_string().len();
    let note = &LOREM[..200usize.saturating_sub(base).min(LOREM.len())];
    let mut m = Map::with_capacity(4);
    m.insert("step".into(), Value::from(i));
    m.insert("status".into(), Value::from("ok"));
    m.insert("value".into(), Value::from(value));
    m.insert("note".into(), Value::from(note));
    Value::Object(m)
}

impl Provider for StepTool {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![action(
            "step",
            Effect::Read,
            "Run step `i` of the tool loop.",
            json!({
                "type": "object",
                "properties": {"i": {"type": "integer", "minimum": 0}},
                "required": ["i"],
                "additionalProperties": false
            }),
        )]
    }

    fn state_version(&self) -> u64 {
        0
    }

    fn call(&self, tool: &str, args: &Value, _key: &str) -> Result<Value, ProviderError> {
        if tool != "step" {
            return Err(ProviderError::Failed(format!("no action `{tool}`")));
        }
        let i = args
            .get("i")
            .and_then(Value::as_i64)
            .ok_or_else(|| ProviderError::Failed("`i` must be an integer".into()))?;
        self.executions.fetch_add(1, Ordering::Relaxed);
        Ok(step_result(i))
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
    fn step_result_is_exactly_200_bytes_with_keys_in_order() {
        for i in [0, 1, 9, 10, 99, 123, 9999, 100_000] {
            let encoded = serde_json::to_string(&step_result(i)).unwrap();
            assert_eq!(encoded.len(), 200, "i = {i}: {encoded}");
            assert!(encoded.starts_with(&format!("{{\"step\":{i},\"status\":\"ok\",\"value\":")));
        }
    }

    #[test]
    fn a_repeated_idempotency_key_repeats_no_order() {
        let cafe = Cafe::default();
        let a = cafe
            .call("order_latte", &json!({"size": "small"}), "k1")
            .unwrap();
        let b = cafe
            .call("order_latte", &json!({"size": "small"}), "k1")
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(cafe.orders().len(), 1);
        assert_eq!(cafe.state_version(), 1);
    }

    #[test]
    fn the_gallery_finds_the_nearest_palette_color() {
        let r = Gallery
            .call("check_design_drift", &json!({"color": "#d2b48c"}), "")
            .unwrap();
        assert_eq!(r["nearest"], "oat");
        assert_eq!(r["drift"], 0);
    }
}

//! The encoder of the events every step writes (`decided` for a call, `call_started`,
//! `call_dispatched`, `call_finished`), written field by field: byte for byte what serde's
//! derived encoding writes (the tests hold it to that), without its generic map machinery,
//! which cost more than the rest of a durable append's work in the writer. Any other event,
//! and any shape this does not know, is left to serde.

use serde::Serialize;
use serde_json::Value;

use super::{Decision, Event, EventKind};
use crate::ids::{CallId, HandleId};

/// Appends `event`'s JSON text to `out` and says so, or says it did not (and then what it may
/// have appended is to be discarded).
pub(super) fn encode(event: &Event, out: &mut Vec<u8>) -> bool {
    let mut w = Writer { out, failed: false };
    w.out.extend_from_slice(b"{\"seq\":");
    w.number(event.seq);
    w.key("at_ms");
    w.number(event.at_ms);
    let kind = &event.kind;
    let known = w.decided_call(kind)
        || w.call_started(kind)
        || w.call_dispatched(kind)
        || w.call_finished(kind);
    if !known {
        return false;
    }
    w.out.push(b'}');
    !w.failed
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
    /// A value serde could not write: the text is to be discarded.
    failed: bool,
}

impl Writer<'_> {
    /// The fields of a `decided` event for a call, when `kind` is one, and says so; nothing
    /// otherwise.
    fn decided_call(&mut self, kind: &EventKind) -> bool {
        let EventKind::Decided {
            step,
            decision_no,
            version,
            decision:
                Decision::Call {
                    tool,
                    handle,
                    args,
                    claims,
                },
            usage,
            exchange,
            tainted_by,
        } = kind
        else {
            return false;
        };
        self.key("type");
        self.string("decided");
        self.key("step");
        self.string(&step.0);
        self.key("decision_no");
        self.number(u64::from(*decision_no));
        self.key("version");
        self.string(version);
        self.key("decision");
        self.string("call");
        self.target(tool, *handle, args);
        if !claims.is_empty() {
            self.field("claims", claims);
        }
        if let Some(u) = usage {
            self.field("usage", u);
        }
        if let Some(x) = exchange {
            self.value_field("exchange", x);
        }
        if !tainted_by.is_empty() {
            self.field("tainted_by", &**tainted_by);
        }
        true
    }

    /// The fields of a `call_started` event, when `kind` is one, and says so; nothing
    /// otherwise.
    fn call_started(&mut self, kind: &EventKind) -> bool {
        let EventKind::CallStarted {
            call,
            step,
            tool,
            handle,
            args,
            resend_of,
        } = kind
        else {
            return false;
        };
        self.key("type");
        self.string("call_started");
        self.key("call");
        self.call(*call);
        self.key("step");
        self.string(&step.0);
        self.target(tool, *handle, args);
        if let Some(r) = resend_of {
            self.key("resend_of");
            self.call(*r);
        }
        true
    }

    /// The fields of a `call_dispatched` event, when `kind` is one, and says so; nothing
    /// otherwise.
    fn call_dispatched(&mut self, kind: &EventKind) -> bool {
        let EventKind::CallDispatched {
            call,
            effect,
            args,
            args_digest,
            idempotency_key,
            provenance,
            narrowed,
        } = kind
        else {
            return false;
        };
        self.key("type");
        self.string("call_dispatched");
        self.key("call");
        self.call(*call);
        self.key("effect");
        self.string(effect.as_str());
        self.value_field("args", args);
        self.key("args_digest");
        self.string(args_digest);
        self.key("idempotency_key");
        self.string(idempotency_key);
        if !provenance.is_empty() {
            self.field("provenance", provenance);
        }
        if !narrowed.is_empty() {
            self.field("narrowed", narrowed);
        }
        true
    }

    /// The fields of a `call_finished` event, when `kind` is one, and says so; nothing
    /// otherwise.
    fn call_finished(&mut self, kind: &EventKind) -> bool {
        let EventKind::CallFinished {
            call,
            status,
            ruled_args_digest,
            narrowed,
            narrowed_args,
            output,
            fault,
        } = kind
        else {
            return false;
        };
        self.key("type");
        self.string("call_finished");
        self.key("call");
        self.call(*call);
        self.key("status");
        self.string(status.as_str());
        if let Some(d) = ruled_args_digest {
            self.key("ruled_args_digest");
            self.string(d);
        }
        if !narrowed.is_empty() {
            self.field("narrowed", narrowed);
        }
        if let Some(a) = narrowed_args {
            self.value_field("narrowed_args", a);
        }
        if let Some(o) = output {
            self.value_field("output", o);
        }
        if let Some(f) = fault {
            self.field("fault", f);
        }
        true
    }

    /// `,"name":` (names are plain ASCII).
    fn key(&mut self, name: &str) {
        self.out.extend_from_slice(b",\"");
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn number(&mut self, n: u64) {
        self.out
            .extend_from_slice(crate::num::decimal(n, &mut [0; 20]).as_bytes());
    }

    /// `"c<n>"`, as a call id is written.
    fn call(&mut self, id: CallId) {
        self.out.extend_from_slice(b"\"c");
        self.number(u64::from(id.0));
        self.out.push(b'"');
    }

    /// `"h<decision>.<action>"`, as a handle is written.
    fn handle(&mut self, h: HandleId) {
        self.out.extend_from_slice(b"\"h");
        self.number(u64::from(h.decision));
        self.out.push(b'.');
        self.number(u64::from(h.action));
        self.out.push(b'"');
    }

    /// `s` as a JSON string, escaped as serde_json escapes: `"` and `\`, and the control
    /// characters (`\b \t \n \f \r` by name, the others as `\u00XX`); nothing else.
    fn string(&mut self, s: &str) {
        self.out.push(b'"');
        let bytes = s.as_bytes();
        // Most text needs no escape: one pass with no early exit and no checked arithmetic
        // (which the compiler vectorises) says so, and it is copied whole.
        let any = bytes.iter().fold(false, |any, &b| {
            any | (b < 0x20) | (b == b'"') | (b == b'\\')
        });
        if !any {
            self.out.extend_from_slice(bytes);
            self.out.push(b'"');
            return;
        }
        let mut from = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let short = match b {
                b'"' => b'"',
                b'\\' => b'\\',
                0x08 => b'b',
                0x09 => b't',
                0x0A => b'n',
                0x0C => b'f',
                0x0D => b'r',
                0x00..=0x1F => b'u',
                _ => continue,
            };
            self.out
                .extend_from_slice(bytes.get(from..i).unwrap_or_default());
            self.out.push(b'\\');
            self.out.push(short);
            if short == b'u' {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.extend_from_slice(b"00");
                for nibble in [b >> 4, b & 0xF] {
                    self.out
                        .push(HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'));
                }
            }
            from = i + 1;
        }
        self.out
            .extend_from_slice(bytes.get(from..).unwrap_or_default());
        self.out.push(b'"');
    }

    /// What a call is to: its `tool`, its `handle` when it names one, and its `args`.
    fn target(&mut self, tool: &str, handle: Option<HandleId>, args: &Value) {
        self.key("tool");
        self.string(tool);
        if let Some(h) = handle {
            self.key("handle");
            self.handle(h);
        }
        self.value_field("args", args);
    }

    /// `,"name":` and the JSON value `v`.
    fn value_field(&mut self, name: &str, v: &Value) {
        self.key(name);
        self.value(v);
    }

    /// `v` as serde_json writes it compactly (a float through serde_json's own writer).
    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Number(n) => match crate::num::integer_text(n, &mut [0; 21]) {
                Some(text) => self.out.extend_from_slice(text.as_bytes()),
                // Writing a number to memory cannot fail.
                None => {
                    let _ = serde_json::to_writer(&mut *self.out, n);
                }
            },
            Value::String(s) => self.string(s),
            Value::Array(items) => {
                self.out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.value(item);
                }
                self.out.push(b']');
            }
            Value::Object(map) => {
                self.out.push(b'{');
                for (i, (k, item)) in map.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.string(k);
                    self.out.push(b':');
                    self.value(item);
                }
                self.out.push(b'}');
            }
        }
    }

    /// `,"name":` and `value` as serde_json writes it (noting if it cannot be written).
    fn field(&mut self, name: &str, value: &(impl Serialize + ?Sized)) {
        self.key(name);
        self.failed |= serde_json::to_writer(&mut *self.out, value).is_err();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::event::{CallStatus, Claim, Effect, Fault, Layer, Narrowing, Usage, decode};
    use crate::ids::{CallId, HandleId, StepId};
    use crate::provenance::{ArgLabel, Source};

    /// Text that every escape rule touches: each ASCII byte, quotes and backslashes, and
    /// characters serde_json leaves as they are (é, an emoji, U+2028, DEL).
    fn awkward() -> String {
        let mut s: String = (0u8..0x80).map(char::from).collect();
        s.push_str("\"\\\\\"é😀\u{2028}\u{7f} end");
        s
    }

    fn fast_or_none(e: &Event) -> Option<String> {
        let mut out = Vec::new();
        encode(e, &mut out).then(|| String::from_utf8(out).unwrap())
    }

    fn same_as_serde(kind: EventKind) {
        let e = Event {
            seq: 18_446_744_073_709_551_615,
            at_ms: 1_764_000_000_123,
            kind,
        };
        let fast = fast_or_none(&e).expect("an event of a step has its own encoder");
        assert_eq!(fast, serde_json::to_string(&e).unwrap());
        assert_eq!(decode(&fast).unwrap(), e);
    }

    #[test]
    fn the_events_of_a_step_are_written_as_serde_writes_them() {
        let odd = awkward();
        let args = Arc::new(json!({
            "i": 3, "note": odd, "nested": {"b": [1, 2.5, null, true, false, [], {}]},
            "ints": [0, -1, i64::MIN, i64::MAX, u64::MAX], "floats": [1e300, -0.0, 0.1, -2.5e-8],
            odd.clone(): {"": ""}
        }));
        for (handle, claims, usage, exchange, tainted) in [
            (None, vec![], None, None, vec![]),
            (
                Some(HandleId {
                    decision: 12,
                    action: 3,
                }),
                vec![Claim {
                    arg: "to".into(),
                    carried: "find.email".into(),
                }],
                Some(Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    cached_tokens: 1,
                    reasoning_tokens: 0,
                    cost_micro_usd: Some(7),
                }),
                Some(Arc::new(json!({"request": odd}))),
                vec!["web".to_owned(), odd.clone()],
            ),
        ] {
            same_as_serde(EventKind::Decided {
                step: StepId(odd.as_str().into()),
                decision_no: 4_000_000_000,
                version: odd.clone(),
                decision: Decision::Call {
                    tool: odd.clone(),
                    handle,
                    args: args.clone(),
                    claims,
                },
                usage,
                exchange,
                tainted_by: tainted.into(),
            });
            same_as_serde(EventKind::CallStarted {
                call: CallId(7),
                step: StepId("loop".into()),
                tool: odd.clone(),
                handle,
                args: args.clone(),
                resend_of: handle.map(|_| CallId(2)),
            });
        }
        for (provenance, narrowed) in [
            (vec![], vec![]),
            (
                vec![ArgLabel {
                    pointer: "/i".into(),
                    source: Source::Objective,
                    also: vec![],
                }],
                vec![Narrowing {
                    by: "cap".into(),
                    reason: odd.clone(),
                }],
            ),
        ] {
            for effect in [Effect::Read, Effect::Commit] {
                same_as_serde(EventKind::CallDispatched {
                    call: CallId(0),
                    effect,
                    args: args.clone(),
                    args_digest: "sha256:ab".into(),
                    idempotency_key: odd.clone(),
                    provenance: provenance.clone(),
                    narrowed: narrowed.clone(),
                });
            }
        }
        let fault = Fault {
            code: "provider_error".into(),
            layer: Layer::Provider,
            message: odd.clone(),
            inner: None,
        };
        for status in [
            CallStatus::Ok,
            CallStatus::Rejected,
            CallStatus::StoppedByPolicy,
            CallStatus::ProviderError,
            CallStatus::NotPerformed,
            CallStatus::Cancelled,
            CallStatus::Halted,
            CallStatus::StoppedByExecutionControl,
        ] {
            same_as_serde(EventKind::CallFinished {
                call: CallId(1),
                status,
                ruled_args_digest: None,
                narrowed: vec![],
                narrowed_args: None,
                output: Some(Arc::new(json!({"step": 1, "note": odd}))),
                fault: None,
            });
            same_as_serde(EventKind::CallFinished {
                call: CallId(1),
                status,
                ruled_args_digest: Some(odd.clone()),
                narrowed: vec![Narrowing {
                    by: "b".into(),
                    reason: "r".into(),
                }],
                narrowed_args: Some(Arc::new(json!({"i": null}))),
                output: None,
                fault: Some(fault.clone()),
            });
        }
    }

    #[test]
    fn every_recorded_event_encodes_as_it_was_recorded_by_either_path() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let mut fast = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|x| x.to_str()) != Some("jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let e = decode(line).unwrap();
                if let Some(text) = fast_or_none(&e) {
                    fast += 1;
                    assert_eq!(text, serde_json::to_string(&e).unwrap(), "{line}");
                }
                assert_eq!(crate::event::encode(&e), serde_json::to_string(&e).unwrap());
            }
        }
        assert!(fast > 10, "the fixtures hold the events of many steps");
    }

    #[test]
    fn other_events_are_left_to_serde() {
        let e = Event {
            seq: 1,
            at_ms: 1,
            kind: EventKind::Decided {
                step: StepId("s".into()),
                decision_no: 1,
                version: "v".into(),
                decision: Decision::Done {
                    summary: "ok".into(),
                },
                usage: None,
                exchange: None,
                tainted_by: Arc::from(Vec::new()),
            },
        };
        assert_eq!(fast_or_none(&e), None);
        assert_eq!(crate::event::encode(&e), serde_json::to_string(&e).unwrap());
    }
}

//! Text for a person's terminal. Whatever a model, a tool, a provider or a user wrote can hold
//! control characters and escape sequences that repaint, clear or retitle a terminal, or
//! reorder what it shows (bidirectional overrides); everything Warrant prints goes through
//! [`sanitize`] first.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is: C0 controls other than newline and tab,
/// DEL, C1 controls (U+0080–U+009F, which include the one-character CSI), and the
/// bidirectional embedding, override and isolate characters.
fn unsafe_char(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => true,
        _ => false,
    }
}

/// `text` with every unsafe character replaced by its JSON escape (`\u001b`), so an escape
/// sequence is shown, never obeyed. JSON stays valid JSON with the same meaning: control
/// characters can only appear inside its strings, where `\uXXXX` is what they mean.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Longest provider message a fault leads with (in characters); the whole answer stays in
/// the record. A run records the bound it used (`run_started.messages`), so its replay words
/// its faults the same.
pub const PROVIDER_MESSAGE_MAX: usize = 4096;

/// The bound of runs that recorded none (before 4 KiB).
pub const PROVIDER_MESSAGE_MAX_V1: usize = 300;

/// The provider's own message in an error answer, first: MCP content texts, or the usual
/// fields of an HTTP error body (`error`, `error.message`, `message`, `detail`, `title`,
/// `errors[0].message`), cut to [`PROVIDER_MESSAGE_MAX`] characters. An answer with none of
/// them is shown compactly, cut the same way.
pub fn provider_message(output: &serde_json::Value) -> String {
    provider_message_within(output, PROVIDER_MESSAGE_MAX)
}

/// [`provider_message`], cut to `max` characters.
pub fn provider_message_within(output: &serde_json::Value, max: usize) -> String {
    use serde_json::Value;
    fn text(v: &Value) -> Option<String> {
        match v {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Value::Object(m) => ["message", "detail", "error", "title", "msg", "description"]
                .iter()
                .find_map(|k| m.get(*k).and_then(text)),
            Value::Array(items) => {
                let texts: Vec<String> = items
                    .iter()
                    .filter_map(|i| {
                        i.get("text")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .or_else(|| text(i))
                    })
                    .collect();
                (!texts.is_empty()).then(|| texts.join("; "))
            }
            _ => None,
        }
    }
    let found = match output {
        Value::Object(m) => [
            "error",
            "message",
            "detail",
            "title",
            "errors",
            "description",
        ]
        .iter()
        .find_map(|k| m.get(*k).and_then(text)),
        other => text(other),
    };
    let shown = found.unwrap_or_else(|| output.to_string());
    match shown.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &shown[..i]),
        None => shown,
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_precision_loss,
        reason = "tests"
    )]

    use super::sanitize;

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        assert_eq!(sanitize("plain text\n\tok"), "plain text\n\tok");
        assert_eq!(
            sanitize("\u{1b}[2J\u{1b}]0;title\u{7}"),
            "\\u001b[2J\\u001b]0;title\\u0007"
        );
        assert_eq!(sanitize("a\rb"), "a\\u000db");
        assert_eq!(sanitize("\u{9b}31m"), "\\u009b31m");
        assert_eq!(sanitize("pay \u{202e}321"), "pay \\u202e321");
    }

    #[test]
    fn a_provider_message_leads_and_is_bounded() {
        use super::provider_message;
        use serde_json::json;
        let padding = "x".repeat(900);
        assert_eq!(
            provider_message(&json!({"detail": "flow name taken", "debug": padding})),
            "flow name taken"
        );
        assert_eq!(
            provider_message(&json!({"error": {"code": 7, "message": "no such bill"}})),
            "no such bill"
        );
        assert_eq!(
            provider_message(&json!([{"type": "text", "text": "out of stock"}])),
            "out of stock"
        );
        assert_eq!(
            provider_message(&json!({"detail": [{"loc": ["body"], "msg": "field required"}]})),
            "field required"
        );
        let long = provider_message(&json!({"unknown": padding}));
        assert!(
            long.chars().count() <= super::PROVIDER_MESSAGE_MAX + 1,
            "{long}"
        );
    }

    #[test]
    fn sanitized_json_is_the_same_json() {
        let v = serde_json::json!({"reason": "x\u{9b}2J\u{202e}y", "n": 1});
        let text = serde_json::to_string(&v).unwrap();
        let shown = sanitize(&text);
        assert_ne!(shown, text);
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, v);
    }
}

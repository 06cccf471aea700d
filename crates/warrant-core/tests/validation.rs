//! Every invalid spec gives its documented error, naming the file, the field and the line.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]

use warrant_core::spec::{Format, ProviderSpec};
use warrant_core::validate::{ProviderCatalog, SpecErrors, load};

/// Knows `cafe` (read_menu, order_latte) and `gallery` (check_design_drift).
struct Catalog;

impl ProviderCatalog for Catalog {
    fn tools(&self, _name: &str, p: &ProviderSpec) -> Result<Option<Vec<String>>, String> {
        match p.reference.as_deref() {
            Some("cafe") => Ok(Some(vec!["read_menu".into(), "order_latte".into()])),
            Some("gallery") => Ok(Some(vec!["check_design_drift".into()])),
            Some(other) => Err(format!("unknown reference provider `{other}`")),
            None if !p.join.is_empty() => Ok(None),
            None => Err("say how the provider is reached".into()),
        }
    }
}

const VALID: &str = "\
version: warrant/v1
id: t
objective: order then check
providers:
  cafe: {reference: cafe}
  gallery: {reference: gallery}
steps:
  - id: order
    provider: cafe
    tools: [order_latte]
    commit: required
    publishes:
      color: {from: order_latte, path: /color}
  - id: drift
    provider: gallery
    tools: [check_design_drift]
    after: [order]
    required: true
    inputs:
      color: order.color
";

fn errors(yaml: &str) -> SpecErrors {
    load(yaml, Format::Yaml, "spec.yaml", &Catalog).expect_err("the spec must be invalid")
}

/// Asserts one issue with this field, line and message fragment.
fn check(yaml: &str, field: &str, line: u64, fragment: &str) {
    let e = errors(yaml);
    let issue = e
        .issues
        .iter()
        .find(|i| i.field == field)
        .unwrap_or_else(|| panic!("no issue on `{field}`: {e}"));
    assert_eq!(issue.line, Some(line), "{e}");
    assert!(
        issue.message.contains(fragment),
        "`{}` lacks `{fragment}`",
        issue.message
    );
    assert!(
        e.to_string()
            .contains(&format!("spec.yaml:{line}: {field}: ")),
        "{e}"
    );
}

#[test]
fn the_valid_spec_loads() {
    let spec = load(VALID, Format::Yaml, "spec.yaml", &Catalog).unwrap();
    assert_eq!(spec.steps.len(), 2);
}

#[test]
fn an_unknown_provider_is_named_with_its_line() {
    check(
        &VALID.replace("provider: gallery", "provider: museum"),
        "steps[1].provider",
        15,
        "unknown provider `museum`",
    );
}

#[test]
fn duplicate_step_ids_are_reported() {
    check(
        &VALID.replace("id: drift", "id: order"),
        "steps[1].id",
        14,
        "duplicate step id `order`",
    );
}

#[test]
fn a_dependency_cycle_is_reported() {
    let cyclic = VALID.replace(
        "    commit: required\n",
        "    commit: required\n    after: [drift]\n",
    );
    let e = errors(&cyclic);
    let issue = e
        .issues
        .iter()
        .find(|i| i.message.contains("dependency cycle"))
        .unwrap_or_else(|| panic!("{e}"));
    assert!(
        issue.message.contains("`order` -> `drift` -> `order`"),
        "{}",
        issue.message
    );
    assert!(issue.line.is_some());
}

#[test]
fn an_input_bound_to_an_output_no_earlier_step_publishes_is_reported() {
    check(
        &VALID.replace("color: order.color", "color: order.flavor"),
        "steps[1].inputs.color",
        20,
        "publishes no output `flavor`",
    );
    // Published, but not by an earlier step.
    let unordered = VALID.replace("    after: [order]\n", "");
    check(
        &unordered,
        "steps[1].inputs.color",
        19,
        "not an earlier step",
    );
}

#[test]
fn a_tool_the_provider_does_not_offer_is_reported() {
    check(
        &VALID.replace("tools: [order_latte]", "tools: [order_mocha]"),
        "steps[0].tools[0]",
        10,
        "does not offer tool `order_mocha`",
    );
}

#[test]
fn an_unknown_reference_provider_is_reported() {
    check(
        &VALID.replace(
            "gallery: {reference: gallery}",
            "gallery: {reference: louvre}",
        ),
        "providers.gallery",
        6,
        "unknown reference provider `louvre`",
    );
}

#[test]
fn an_unknown_dependency_and_version_are_reported() {
    check(
        &VALID.replace("after: [order]", "after: [pay]"),
        "steps[1].after[0]",
        17,
        "unknown step `pay`",
    );
    check(
        &VALID.replace("warrant/v1", "warrant/v9"),
        "version",
        1,
        "unsupported version `warrant/v9`",
    );
}

#[test]
fn an_unknown_field_and_bad_yaml_name_the_line() {
    let e = errors(&VALID.replace("    required: true\n", "    requird: true\n"));
    assert!(e.to_string().contains("spec.yaml:"), "{e}");
    assert!(e.to_string().contains("requird"), "{e}");
    let e = errors("version: [unclosed\n");
    assert!(e.to_string().starts_with("spec.yaml:"), "{e}");
}

#[test]
fn json_specs_are_validated_the_same_way() {
    let json = r#"{"version":"warrant/v1","id":"t","objective":"o","providers":{"cafe":{"reference":"cafe"}},
        "steps":[{"id":"a","provider":"cafe","tools":["read_menu"]},{"id":"a","provider":"cafe","tools":["read_menu"]}]}"#;
    let e = load(json, Format::Json, "spec.json", &Catalog).unwrap_err();
    assert!(
        e.to_string()
            .contains("spec.json: steps[1].id: duplicate step id `a`"),
        "{e}"
    );
}

#[test]
fn an_alias_bomb_is_refused() {
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 0..12 {
        let prev = if i == 0 {
            "a".to_string()
        } else {
            format!("l{}", i - 1)
        };
        bomb.push_str(&format!("l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
    }
    let e = load(&bomb, Format::Yaml, "bomb.yaml", &Catalog).unwrap_err();
    assert!(e.to_string().starts_with("bomb.yaml"), "{e}");
}

#[test]
fn a_join_names_declared_plain_providers_and_is_trusted_only_when_all_members_are() {
    let joined = VALID.replace(
        "  gallery: {reference: gallery}\n",
        "  gallery: {reference: gallery, trust: trusted}\n  both: {join: [cafe, gallery]}\n",
    );
    let spec = load(&joined, Format::Yaml, "spec.yaml", &Catalog).unwrap();
    assert!(
        !spec.trusted_providers().contains("both"),
        "cafe is untrusted"
    );
    let all = joined.replace(
        "cafe: {reference: cafe}",
        "cafe: {reference: cafe, trust: trusted}",
    );
    let spec = load(&all, Format::Yaml, "spec.yaml", &Catalog).unwrap();
    assert!(spec.trusted_providers().contains("both"));

    check(
        &joined.replace("join: [cafe, gallery]", "join: [cafe, ghost]"),
        "providers.both.join",
        7,
        "unknown provider `ghost`",
    );
    check(
        &joined.replace("join: [cafe, gallery]", "join: [cafe, both]"),
        "providers.both.join",
        7,
        "cannot join itself",
    );
}

#[test]
fn errors_name_the_problem_and_the_field_not_the_parsers_internals() {
    let e = errors(&format!("{VALID}limits: {{decisions_max: -1}}\n"));
    let text = e.to_string();
    assert!(text.contains("limits.decisions_max"), "{text}");
    let e = errors(&VALID.replace("    required: true\n", "    requird: true\n"));
    assert!(
        e.to_string().contains("unknown field `steps[1].requird`")
            || e.to_string().contains("unknown field `steps.1.requird`"),
        "{e}"
    );
    // Every field of a person's spec is checked, however deep.
    let e = errors(&VALID.replace(
        "cafe: {reference: cafe}",
        "cafe: {reference: cafe, trusst: trusted}",
    ));
    assert!(e.to_string().contains("trusst"), "{e}");
    // A document past the reader's size limits says so in words.
    let mut huge =
        String::from("version: warrant/v1\nid: t\nobjective: o\nproviders: {}\nsteps: []\nx:\n");
    for _ in 0..260_000 {
        huge.push_str("- 1\n");
    }
    let e = load(&huge, Format::Yaml, "huge.yaml", &Catalog).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("over a size limit"), "{text}");
    assert!(!text.contains("Nodes {"), "{text}");
}

#[test]
fn a_zero_limit_is_refused() {
    for limit in [
        "deadline_ms",
        "handle_ttl_ms",
        "call_timeout_ms",
        "approval_ttl_ms",
    ] {
        let e = errors(&format!("{VALID}limits: {{{limit}: 0}}\n"));
        assert!(e.to_string().contains(&format!("limits.{limit}")), "{e}");
    }
}

#[test]
fn a_spec_read_back_from_a_log_tolerates_fields_it_does_not_know() {
    // A newer build froze a spec with a field this one does not know: reading the log (not a
    // person's file) must not fail on it.
    let v: serde_json::Value = serde_json::json!({
        "version": "warrant/v1", "id": "t", "objective": "o",
        "providers": {"cafe": {"reference": "cafe", "pool_size": 4}},
        "steps": [{"id": "a", "provider": "cafe", "tools": ["read_menu"], "priority": 2}],
        "limits": {"decisions_max": 5, "gpu_seconds_max": 9},
        "labels": {"team": "x"}
    });
    let spec: warrant_core::Spec = serde_json::from_value(v).unwrap();
    assert_eq!(spec.limits.decisions_max, 5);
}

#[test]
fn a_grant_or_a_quarantine_over_a_tool_the_step_does_not_allow_is_refused() {
    let granted = "\
version: warrant/v1
id: t
objective: o
providers:
  cafe: {reference: cafe}
steps:
  - id: order
    provider: cafe
    tools: [order_latte]
    grant:
      tools:
        read_menu: {}
        order_latte:
          size: {min: 3, max: 1}
    quarantine:
      read_menu:
        price: {path: price}
        kind: {path: /k, type: number, one_of: [a]}
";
    let e = errors(granted).to_string();
    for fragment in [
        "grants `read_menu`, which is not one of the step's tools",
        "`min` (3) is above `max` (1)",
        "quarantines `read_menu`, which is not one of the step's tools",
        "give either `type` or `one_of`",
        "path `price` is not a JSON pointer",
    ] {
        assert!(e.contains(fragment), "{fragment}: {e}");
    }
}

#[test]
fn a_steps_decisions_max_of_zero_is_reported_once() {
    let bad = VALID.replacen(
        "    tools: [order_latte]",
        "    tools: [order_latte]\n    decisions_max: 0",
        1,
    );
    assert_ne!(bad, VALID);
    let e = errors(&bad);
    let about: Vec<_> = e
        .issues
        .iter()
        .filter(|i| i.field.ends_with("decisions_max"))
        .collect();
    assert_eq!(about.len(), 1, "{e}");
}

//! Cedar policies: validated at load (errors name file and line), and the verdicts Warrant
//! draws from them.

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

use std::collections::BTreeSet;

use serde_json::{Value, json};
use warrant_core::event::{Effect, ToolHints};
use warrant_core::ids::{CallId, RunId, StepId};
use warrant_core::ports::{
    ApproverRequest, ApproverVerdict, Authority, CapabilityRequest, ToolProbe, Verdict,
};
use warrant_core::provenance::{ArgLabel, Source};
use warrant_policy::{CedarAuthority, PolicyFile};

const PAYMENTS: &str = include_str!("../../../examples/policies/payments.cedar");

fn authority(text: &str, trusted: &[&str]) -> CedarAuthority {
    CedarAuthority::new(
        vec![PolicyFile {
            name: "p.cedar".into(),
            text: text.into(),
        }],
        trusted
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
    )
    .unwrap()
}

fn rule(
    a: &CedarAuthority,
    effect: Effect,
    tool: &str,
    args: Value,
    labels: &[(&str, Source)],
) -> Verdict {
    rule_hinted(a, effect, tool, args, labels, None)
}

fn rule_hinted(
    a: &CedarAuthority,
    effect: Effect,
    tool: &str,
    args: Value,
    labels: &[(&str, Source)],
    hints: Option<&ToolHints>,
) -> Verdict {
    let run = RunId("r1".into());
    let step = StepId("pay".into());
    let provenance: Vec<ArgLabel> = labels
        .iter()
        .map(|(p, s)| ArgLabel {
            pointer: p.to_string(),
            source: s.clone(),
            also: Vec::new(),
        })
        .collect();
    let principal = warrant_core::event::Principal {
        tenant: "acme".into(),
        user: "ana".into(),
        agent: "scripted:x".into(),
    };
    // The decision's context: as tainted as the values it produced say.
    let taint: Vec<String> = labels
        .iter()
        .flat_map(|(_, s)| match s {
            Source::Decider { tainted_by } => tainted_by.clone(),
            _ => Vec::new(),
        })
        .collect();
    let request = CapabilityRequest {
        principal: &principal,
        handle_age_ms: Some(1200),
        run: &run,
        step: &step,
        call: CallId(1),
        provider: "bank",
        tool,
        effect,
        args: &args,
        args_digest: "sha256:x",
        provenance: &provenance,
        hints,
        origin: None,
        context_taint: &taint,
        grant: None,
        parent: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(a.evaluate(&request))
}

fn from_output() -> Source {
    Source::ProviderOutput {
        provider: "bank".into(),
        call: CallId(1),
    }
}

#[test]
fn reads_are_allowed_and_commits_on_trusted_values_too() {
    let a = authority(PAYMENTS, &[]);
    assert!(matches!(
        rule(&a, Effect::Read, "balance", json!({}), &[]),
        Verdict::Allow { .. }
    ));
    let v = rule(
        &a,
        Effect::Commit,
        "transfer",
        json!({"to": "DE89", "amount": 950}),
        &[("/to", Source::Objective), ("/amount", Source::Unobserved)],
    );
    assert_eq!(
        v,
        Verdict::Allow {
            grant: "commits-on-trusted-values".into()
        }
    );
}

#[test]
fn money_from_untrusted_output_asks_for_approval() {
    let a = authority(PAYMENTS, &[]);
    let v = rule(
        &a,
        Effect::Commit,
        "transfer",
        json!({"to": "GB33", "amount": 950}),
        &[("/to", from_output()), ("/amount", Source::Unobserved)],
    );
    let Verdict::Ask { reason, .. } = v else {
        panic!("{v:?}")
    };
    assert!(
        reason.contains("untrusted-money-needs-approval"),
        "{reason}"
    );
    // The same value from a provider declared trusted goes ahead.
    let trusting = authority(PAYMENTS, &["bank"]);
    let v = rule(
        &trusting,
        Effect::Commit,
        "transfer",
        json!({"to": "GB33", "amount": 950}),
        &[("/to", from_output())],
    );
    assert!(matches!(v, Verdict::Allow { .. }), "{v:?}");
}

#[test]
fn a_forbid_names_the_policy_and_no_permit_denies() {
    let a = authority(PAYMENTS, &[]);
    let v = rule(
        &a,
        Effect::Commit,
        "transfer",
        json!({"to": "GB29NWBK60161331926819", "amount": 25}),
        &[("/to", Source::Objective)],
    );
    assert_eq!(
        v,
        Verdict::Deny {
            reasons: vec!["forbidden by `blocked-recipient`".into()]
        }
    );
    let none = authority(
        "@id(\"reads\") permit (principal, action == Warrant::Action::\"read\", resource);",
        &[],
    );
    let v = rule(&none, Effect::Commit, "transfer", json!({}), &[]);
    assert_eq!(
        v,
        Verdict::Deny {
            reasons: vec!["no policy permits it".into()]
        }
    );
}

#[test]
fn a_policy_that_errors_is_indeterminate_not_skipped() {
    // An overflow is an evaluation error; Cedar would skip the policy, Warrant does not.
    let a = authority(
        "@id(\"all\") permit (principal, action, resource);\n@id(\"broken\") forbid (principal, action, resource) when { 9223372036854775807 + 1 > 0 };",
        &[],
    );
    let v = rule(&a, Effect::Commit, "transfer", json!({"to": "DE89"}), &[]);
    let Verdict::Indeterminate { reason } = v else {
        panic!("{v:?}")
    };
    assert!(reason.contains("broken"), "{reason}");
}

#[test]
fn invalid_policies_are_refused_at_load_naming_file_and_line() {
    let bad_syntax = CedarAuthority::new(
        vec![PolicyFile {
            name: "bad.cedar".into(),
            text: "permit (principal, action, resource);\n\npermit (principal action);\n".into(),
        }],
        BTreeSet::new(),
    )
    .err()
    .unwrap();
    assert_eq!(
        (bad_syntax.file.as_str(), bad_syntax.line),
        ("bad.cedar", Some(3))
    );
    let bad_schema = CedarAuthority::new(
        vec![PolicyFile {
            name: "typo.cedar".into(),
            text: "permit (principal, action, resource);\npermit (principal, action == Warrant::Action::\"commit\", resource)\nwhen { context.untrusted_argz.isEmpty() };\n".into(),
        }],
        BTreeSet::new(),
    )
    .err()
    .unwrap();
    assert_eq!(bad_schema.file, "typo.cedar");
    assert_eq!(bad_schema.line, Some(3), "{bad_schema}");
    assert!(
        bad_schema.to_string().starts_with("typo.cedar:3: "),
        "{bad_schema}"
    );
}

#[test]
fn the_description_rebuilds_the_same_authority() {
    let a = authority(PAYMENTS, &["bank"]);
    let d = a.describe().unwrap();
    let b = CedarAuthority::from_description(&d).unwrap().unwrap();
    assert_eq!(b.describe(), Some(d));
}

#[test]
fn policies_see_the_principal_and_the_handle_age() {
    let a = authority(
        "@id(\"ana-reads-fresh\") permit (principal, action, resource) when { principal.user == \"ana\" && principal.tenant == \"acme\" && context.handle_age_ms < 5000 };",
        &[],
    );
    assert!(matches!(
        rule(&a, Effect::Read, "balance", json!({}), &[]),
        Verdict::Allow { .. }
    ));
    let stale = authority(
        "@id(\"fresh-only\") permit (principal, action, resource) when { context.handle_age_ms < 1000 };",
        &[],
    );
    assert!(matches!(
        rule(&stale, Effect::Read, "balance", json!({}), &[]),
        Verdict::Deny { .. }
    ));
}

#[test]
fn every_message_names_a_policy_by_its_id() {
    let err = CedarAuthority::new(
        vec![PolicyFile {
            name: "caps.cedar".into(),
            text: "@id(\"pay-cap\")\npermit (principal, action, resource) when { context.no_such_thing };\n".into(),
        }],
        BTreeSet::new(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("pay-cap"), "{err}");
    assert!(!err.to_string().contains("policy0"), "{err}");
}

#[test]
fn a_file_with_no_policies_is_refused() {
    let err = CedarAuthority::new(
        vec![PolicyFile {
            name: "empty.cedar".into(),
            text: "// to do\n".into(),
        }],
        BTreeSet::new(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("holds no policies"), "{err}");
}

#[test]
fn a_recorded_authority_that_does_not_rebuild_exactly_is_an_error_not_a_weaker_one() {
    let a = authority(PAYMENTS, &["bank"]);
    let mut d = a.describe().unwrap();
    d["cedar"]["files"][0]
        .as_object_mut()
        .unwrap()
        .remove("text");
    let rebuilt = CedarAuthority::from_description(&d).unwrap();
    assert!(
        rebuilt.is_err(),
        "a file entry without its text was skipped"
    );
    let mut d = a.describe().unwrap();
    d["cedar"]["trusted"] = json!([1]);
    assert!(CedarAuthority::from_description(&d).unwrap().is_err());
}

#[test]
fn a_servers_annotations_reach_policies_marked_by_its_trust() {
    let a = authority(
        "@id(\"declared-reads\") permit (principal, action == Warrant::Action::\"commit\", resource) when { context.hints.read_only && context.hints.trusted };",
        &[],
    );
    let trusted = ToolHints {
        read_only: Some(true),
        trusted: true,
        ..ToolHints::default()
    };
    assert!(matches!(
        rule_hinted(&a, Effect::Commit, "list", json!({}), &[], Some(&trusted)),
        Verdict::Allow { .. }
    ));
    let claimed = ToolHints {
        trusted: false,
        ..trusted
    };
    let Verdict::Deny { reasons } =
        rule_hinted(&a, Effect::Commit, "list", json!({}), &[], Some(&claimed))
    else {
        panic!("an untrusted server's claim was believed")
    };
    assert!(reasons[0].contains("only its claim"), "{reasons:?}");
    // No annotations: MCP's defaults (not read-only, destructive).
    assert!(matches!(
        rule_hinted(&a, Effect::Commit, "list", json!({}), &[], None),
        Verdict::Deny { .. }
    ));
}

#[test]
fn policies_see_what_the_decider_produced_and_whether_its_context_was_tainted() {
    let a = authority(
        r#"
        @id("reads")
        permit (principal, action == Warrant::Action::"read", resource);
        @id("clean-commits")
        permit (principal, action == Warrant::Action::"commit", resource)
        unless { context.context_tainted };
        @id("tainted-commits-ask")
        @approval("the decider had read untrusted text")
        permit (principal, action == Warrant::Action::"commit", resource)
        when { context.context_tainted && context.tainted_by.contains("bank") };
        @id("no-tainted-memo")
        forbid (principal, action == Warrant::Action::"commit", resource)
        when { context.tainted_args.contains("memo") && context.decider_args.contains("memo") };
        "#,
        &[],
    );
    let clean = Source::Decider { tainted_by: vec![] };
    let tainted = Source::Decider {
        tainted_by: vec!["bank".into()],
    };
    let args = json!({"to": "DE89370400440532013000", "amount": 950, "memo": "rent"});
    assert!(matches!(
        rule(
            &a,
            Effect::Commit,
            "transfer",
            args.clone(),
            &[("/to", Source::Objective), ("/amount", clean.clone())]
        ),
        Verdict::Allow { .. }
    ));
    assert!(matches!(
        rule(
            &a,
            Effect::Commit,
            "transfer",
            args.clone(),
            &[("/to", Source::Objective), ("/amount", tainted.clone())]
        ),
        Verdict::Ask { .. }
    ));
    match rule(&a, Effect::Commit, "transfer", args, &[("/memo", tainted)]) {
        Verdict::Deny { reasons } => assert!(reasons.join(" ").contains("no-tainted-memo")),
        other => panic!("{other:?}"),
    }
}

/// A transfer asked about, and `user` of acme answering it; the run was started by `ana`.
fn rule_approver(a: &CedarAuthority, user: &str, approved_by: &[String]) -> ApproverVerdict {
    let run = RunId("r1".into());
    let step = StepId("pay".into());
    let starter = warrant_core::event::Principal {
        tenant: "acme".into(),
        user: "ana".into(),
        agent: "scripted:x".into(),
    };
    let approver = warrant_core::event::Principal {
        tenant: "acme".into(),
        user: user.into(),
        agent: String::new(),
    };
    let args = json!({"to": "GB33", "amount": 950});
    let provenance = vec![ArgLabel {
        pointer: "/to".into(),
        source: from_output(),
        also: Vec::new(),
    }];
    let call = CapabilityRequest {
        principal: &starter,
        handle_age_ms: None,
        run: &run,
        step: &step,
        call: CallId(1),
        provider: "bank",
        tool: "transfer",
        effect: Effect::Commit,
        args: &args,
        args_digest: "sha256:x",
        provenance: &provenance,
        hints: None,
        origin: None,
        context_taint: &[],
        grant: None,
        parent: None,
    };
    a.rule_approver(&ApproverRequest {
        approver: &approver,
        starter: &starter,
        call: &call,
        approvals_needed: 2,
        approved_by,
    })
}

const TWO_APPROVERS: &str = r#"
@id("reads") permit (principal, action == Warrant::Action::"read", resource);
@id("big-transfers-need-two")
@approval("a transfer of 500 or more")
@approvals("2")
permit (principal, action == Warrant::Action::"commit", resource)
when { resource.tool == "transfer" && resource.hasTag("amount") };
@id("approvers-are-not-the-starter")
permit (principal, action == Warrant::Action::"approve", resource)
unless { context.own_run };
@id("no-interns")
forbid (principal, action == Warrant::Action::"approve", resource)
when { principal.user like "intern-*" && context.untrusted_args.contains("to") };
"#;

#[test]
fn a_permit_can_ask_for_two_approvers_and_approve_policies_rule_on_who_answers() {
    let a = authority(TWO_APPROVERS, &[]);
    let v = rule(
        &a,
        Effect::Commit,
        "transfer",
        json!({"to": "GB33", "amount": 950}),
        &[],
    );
    assert!(
        matches!(&v, Verdict::Ask { approvers: 2, reason } if reason.contains("500 or more")),
        "{v:?}"
    );
    // Another person of the tenant may answer, under the rule that allowed them.
    assert_eq!(
        rule_approver(&a, "bob", &[]),
        ApproverVerdict::Allow {
            rule: "approve policy `approvers-are-not-the-starter`".into()
        }
    );
    // The run's starter may not; nor may an intern answer about a recipient a tool supplied.
    let ApproverVerdict::Deny { reasons } = rule_approver(&a, "ana", &[]) else {
        panic!("the starter approved");
    };
    assert!(
        reasons[0].contains("no approve policy permits"),
        "{reasons:?}"
    );
    let ApproverVerdict::Deny { reasons } = rule_approver(&a, "intern-joe", &[]) else {
        panic!("an intern approved");
    };
    assert!(reasons[0].contains("no-interns"), "{reasons:?}");
    // A policy set with nothing about `approve` leaves approvers to the front door; a policy
    // that ignores actions does not reach them.
    let open = authority("permit (principal, action, resource);", &[]);
    assert_eq!(rule_approver(&open, "ana", &[]), ApproverVerdict::NotRuled);
}

#[test]
fn approvals_must_be_a_number_of_people_on_a_permit_that_asks() {
    for (text, says) in [
        (
            "@approvals(\"2\") permit (principal, action, resource);",
            "`@approval`",
        ),
        (
            "@approval(\"x\") @approvals(\"two\") permit (principal, action, resource);",
            "from 1 to 10",
        ),
        (
            "@approval(\"x\") @approvals(\"11\") permit (principal, action, resource);",
            "from 1 to 10",
        ),
    ] {
        let Err(e) = CedarAuthority::new(
            vec![PolicyFile {
                name: "p.cedar".into(),
                text: text.into(),
            }],
            BTreeSet::new(),
        ) else {
            panic!("accepted {text}");
        };
        assert!(e.to_string().contains(says), "{text}: {e}");
    }
}

#[test]
fn a_tool_no_call_of_which_could_be_allowed_is_known_before_any_call() {
    let a = authority(
        r#"
@id("reads") permit (principal, action == Warrant::Action::"read", resource);
@id("commits-but-delete")
permit (principal, action == Warrant::Action::"commit", resource)
when { resource.tool != "delete_file" };
@id("no-interns-write")
forbid (principal, action == Warrant::Action::"commit", resource)
when { principal.user == "intern" && resource.tool == "write_file" };
@id("big-sends-ask")
@approval("a big send")
permit (principal, action == Warrant::Action::"commit", resource)
when { resource.tool == "delete_file" && resource.hasTag("force") && context.carried_args.contains("path") };
"#,
        &[],
    );
    let probe = |user: &str, tool: &str, effect: Effect, schema: Value| {
        let principal = warrant_core::event::Principal {
            tenant: "acme".into(),
            user: user.into(),
            agent: "mcp-client:x".into(),
        };
        a.may_ever_allow(&ToolProbe {
            principal: &principal,
            provider: "fs",
            tool,
            effect,
            trusted: false,
            schema: &schema,
        })
    };
    let path =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    assert!(probe("ann", "read_text_file", Effect::Read, path.clone()));
    assert!(probe("ann", "write_file", Effect::Commit, path.clone()));
    // Whatever the arguments and the context: never for an intern.
    assert!(!probe("intern", "write_file", Effect::Commit, path.clone()));
    // `delete_file` without a `force` argument can never be allowed; with one, a permit may
    // match, depending on the context.
    assert!(!probe("ann", "delete_file", Effect::Commit, path.clone()));
    let forced =
        json!({"type": "object", "properties": {"path": {}, "force": {}}, "required": ["path"]});
    assert!(probe("ann", "delete_file", Effect::Commit, forced));
}

#[test]
fn the_arguments_a_policy_tests_by_name_are_known_with_the_tools_it_names() {
    let a = authority(
        r#"@id("pay-cap")
forbid(principal, action == Warrant::Action::"commit", resource)
when { resource.tool == "send_money" && resource.hasTag("recipeint") && resource.hasTag("amount") && resource.getTag("amount") == "0.01" };
@id("general")
forbid(principal, action, resource)
when { context.untrusted_args.containsAny(["to", "iban"]) || context.tainted_args.contains("body") };
permit(principal, action, resource);"#,
        &[],
    );
    let mut named: Vec<(String, Vec<String>, String)> = a
        .named_args()
        .into_iter()
        .map(|n| (n.policy, n.tools, n.arg))
        .collect();
    named.sort();
    let tool = vec!["send_money".to_owned()];
    assert_eq!(
        named,
        vec![
            ("general".into(), vec![], "body".into()),
            ("general".into(), vec![], "iban".into()),
            ("general".into(), vec![], "to".into()),
            ("pay-cap".into(), tool.clone(), "amount".into()),
            ("pay-cap".into(), tool, "recipeint".into()),
        ]
    );
}

/// Cedar sees a standing grant as the approver `grant:<id>` of its tenant: an approve policy
/// can keep grants from answering what a person must always see.
#[test]
fn an_approve_policy_can_refuse_to_let_a_standing_grant_answer() {
    let a = authority(
        r#"
permit (principal, action == Warrant::Action::"commit", resource);
permit (principal, action == Warrant::Action::"approve", resource);
@id("transfers-are-asked")
forbid (principal, action == Warrant::Action::"approve", resource)
when { principal.user like "grant:*" && resource.tool == "transfer" };
"#,
        &[],
    );
    let ApproverVerdict::Deny { reasons } = rule_approver(&a, "grant:g01", &[]) else {
        panic!("a grant answered a transfer");
    };
    assert!(reasons[0].contains("transfers-are-asked"), "{reasons:?}");
    assert!(matches!(
        rule_approver(&a, "bob", &[]),
        ApproverVerdict::Allow { .. }
    ));
}

#[test]
fn a_persons_answer_reaches_policies_as_user_args() {
    // Money goes only to an account a person named: in their answer to the run's question.
    let a = authority(
        r#"
@id("reads")
permit (principal, action == Warrant::Action::"read", resource);
@id("pay-whom-the-person-named")
permit (principal, action == Warrant::Action::"commit", resource)
when { context.user_args.contains("to") };
"#,
        &[],
    );
    let answered = Source::User {
        question: "r1-q1".into(),
    };
    let v = rule(
        &a,
        Effect::Commit,
        "transfer",
        json!({"to": "DE89370400440532013000", "amount": 950}),
        &[("/to", answered), ("/amount", Source::Objective)],
    );
    assert_eq!(
        v,
        Verdict::Allow {
            grant: "pay-whom-the-person-named".into()
        }
    );
    // The same account from the objective, or the decider, is not the person's answer.
    for other in [Source::Objective, Source::Unobserved] {
        let v = rule(
            &a,
            Effect::Commit,
            "transfer",
            json!({"to": "DE89370400440532013000", "amount": 950}),
            &[("/to", other)],
        );
        assert!(matches!(v, Verdict::Deny { .. }), "{v:?}");
    }
}

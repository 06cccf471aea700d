//! Attenuation, as a property: over randomly generated Cedar policy sets for a parent and a
//! child, random allowances and random calls, a child is never allowed a call its parent (or
//! any ancestor) would not allow it — the parent's policies asked with the child's own
//! request, its principal, provenance and delegation context included.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    reason = "tests"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};
use warrant_core::event::{Effect, Lineage, ParentLink};
use warrant_core::ids::{CallId, RunId, StepId};
use warrant_core::ports::{Authority, CapabilityRequest, Verdict};
use warrant_core::provenance::{ArgLabel, Source};
use warrant_engine::Delegated;
use warrant_policy::{CedarAuthority, PolicyFile};

/// A small deterministic generator (xorshift), so a failure names its seed and repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const TOOLS: &[&str] = &["read_menu", "order_latte", "transfer", "read_statement"];
const PROVIDERS: &[&str] = &["cafe", "bank"];
const AMOUNTS: &[&str] = &["5", "50", "500"];

/// One random condition over the request.
fn condition(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => format!("resource.tool == \"{}\"", rng.pick(TOOLS)),
        1 => format!("resource.provider == \"{}\"", rng.pick(PROVIDERS)),
        2 => format!("context.delegation.depth > {}", rng.below(3)),
        3 => format!(
            "resource.hasTag(\"amount\") && resource.getTag(\"amount\") == \"{}\"",
            rng.pick(AMOUNTS)
        ),
        4 => "context.carried_args.contains(\"amount\")".into(),
        5 => "context.decider_args.contains(\"amount\")".into(),
        6 => format!(
            "context.delegation.chain.contains(\"{}\")",
            rng.pick(&["r1", "r1.1", "r9"])
        ),
        _ => "principal.tenant == \"acme\"".into(),
    }
}

/// A random policy set: a few permits (some asking for approval) and forbids.
fn policies(rng: &mut Rng) -> String {
    // Most sets permit broadly and carve exceptions, as real ones do.
    let mut text = if rng.chance(75) {
        "@id(\"base\")\npermit(principal, action, resource);\n".to_owned()
    } else {
        String::new()
    };
    let n = 1 + rng.below(3);
    for i in 0..n {
        let kind = if rng.chance(40) { "permit" } else { "forbid" };
        let approval = kind == "permit" && rng.chance(25);
        let action = match rng.below(3) {
            0 => "action",
            1 => "action == Warrant::Action::\"read\"",
            _ => "action == Warrant::Action::\"commit\"",
        };
        let when = if rng.chance(80) {
            let mut c = condition(rng);
            if rng.chance(30) {
                c = format!("{c} && {}", condition(rng));
            }
            format!(" when {{ {c} }}")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "@id(\"p{i}\")\n{}{kind}(principal, {action}, resource){when};\n",
            if approval {
                "@approval(\"true\")\n"
            } else {
                ""
            }
        ));
    }
    text
}

fn cedar(text: &str) -> CedarAuthority {
    CedarAuthority::new(
        vec![PolicyFile {
            name: "p.cedar".into(),
            text: text.into(),
        }],
        BTreeSet::from(["cafe".to_owned()]),
    )
    .unwrap_or_else(|e| panic!("generated policies load: {e}\n{text}"))
}

fn allowed(v: &Verdict) -> bool {
    matches!(v, Verdict::Allow { .. })
}

#[test]
fn no_child_is_allowed_a_call_any_ancestor_would_not_allow() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let principal = warrant_core::event::Principal {
        tenant: "acme".into(),
        user: "ana".into(),
        agent: "scripted:child".into(),
    };
    let (mut allowed_children, mut checked) = (0, 0);
    for seed in 1..=400_u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let root_text = policies(&mut rng);
        let parent_text = policies(&mut rng);
        let child_text = policies(&mut rng);
        let (root, parent, child) = (
            Arc::new(cedar(&root_text)),
            Arc::new(cedar(&parent_text)),
            Arc::new(cedar(&child_text)),
        );
        let allowance = rng.chance(40).then(|| {
            let mut a = BTreeMap::new();
            a.insert(
                (*rng.pick(PROVIDERS)).to_owned(),
                TOOLS
                    .iter()
                    .filter(|_| rng.chance(50))
                    .map(|t| (*t).to_owned())
                    .collect::<BTreeSet<_>>(),
            );
            a
        });
        let ancestors: Vec<Arc<dyn Authority>> = vec![root.clone(), parent.clone()];
        let delegated = Delegated::new(child.clone(), ancestors, allowance.clone());
        for _ in 0..8 {
            let tool = *rng.pick(TOOLS);
            let provider = *rng.pick(PROVIDERS);
            let effect = if tool.starts_with("read") {
                Effect::Read
            } else {
                Effect::Commit
            };
            let amount = *rng.pick(AMOUNTS);
            let args: Value = json!({"amount": amount});
            let source = match rng.below(3) {
                0 => Source::Carried {
                    name: "input.amount".into(),
                },
                1 => Source::Decider {
                    tainted_by: Vec::new(),
                },
                _ => Source::ProviderOutput {
                    provider: "bank".into(),
                    call: CallId(1),
                },
            };
            let provenance = vec![ArgLabel {
                pointer: "/amount".into(),
                source,
                also: Vec::new(),
            }];
            let depth = 1 + rng.below(3) as u32;
            let link = ParentLink {
                run: RunId("r1.1".into()),
                step: StepId("work".into()),
                index: 0,
                depth,
                chain: vec![RunId("r1".into()), RunId("r1.1".into())],
                inputs: BTreeMap::from([(
                    "amount".to_owned(),
                    warrant_core::event::Given {
                        value: Arc::new(json!(amount)),
                        lineage: Lineage {
                            run: RunId("r1".into()),
                            step: StepId("order".into()),
                            call: CallId(1),
                            tool: "read_statement".into(),
                            path: "/amount".into(),
                        },
                    },
                )]),
            };
            let run = RunId("r1.1.1".into());
            let step = StepId("pay".into());
            let request = CapabilityRequest {
                principal: &principal,
                handle_age_ms: Some(10),
                run: &run,
                step: &step,
                call: CallId(1),
                provider,
                tool,
                effect,
                args: &args,
                args_digest: "sha256:x",
                provenance: &provenance,
                hints: None,
                origin: None,
                context_taint: &[],
                grant: None,
                parent: Some(&link),
            };
            let verdict = rt.block_on(delegated.evaluate(&request));
            checked += 1;
            if !allowed(&verdict) {
                continue;
            }
            allowed_children += 1;
            for (who, text, a) in [
                ("root", &root_text, &root),
                ("parent", &parent_text, &parent),
                ("child", &child_text, &child),
            ] {
                let theirs = rt.block_on(a.evaluate(&request));
                assert!(
                    allowed(&theirs),
                    "seed {seed}: the child was allowed `{tool}` on `{provider}` (amount {amount}, depth {depth}) \
                     which its {who} rules {theirs:?}:\n{text}"
                );
            }
            if let Some(a) = &allowance
                && let Some(tools) = a.get(provider)
            {
                assert!(
                    tools.contains(tool),
                    "seed {seed}: `{tool}` beyond the allowance {a:?} was allowed"
                );
            }
        }
    }
    // The property is not vacuous: many calls were allowed, many were not.
    assert!(
        allowed_children > 100 && allowed_children < checked - 100,
        "{allowed_children} of {checked} allowed"
    );
}

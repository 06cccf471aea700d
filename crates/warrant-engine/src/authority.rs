//! Simple authorities: allow-all (demos) and a deny list by tool name (tests). The policy
//! engine arrives in its own crate.

use std::collections::BTreeSet;

use warrant_core::ports::{
    ApproverRequest, ApproverVerdict, Authority, BoxFuture, CapabilityRequest, ToolProbe, Verdict,
};

/// Allows every call.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl Authority for AllowAll {
    fn describe(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"allow_all": true}))
    }

    fn evaluate<'a>(&'a self, _request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(std::future::ready(Verdict::Allow {
            grant: "allow-all".into(),
        }))
    }
}

/// Denies calls to the listed tools (on any provider), allows the rest.
#[derive(Clone, Debug, Default)]
pub struct DenyTools {
    tools: BTreeSet<String>,
}

impl DenyTools {
    /// Denies these tools.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(tools: I) -> DenyTools {
        DenyTools {
            tools: tools.into_iter().map(Into::into).collect(),
        }
    }
}

impl Authority for DenyTools {
    fn describe(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"rule_list": {"deny": self.tools, "ask": []}}))
    }

    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        let verdict = if self.tools.contains(request.tool) {
            Verdict::Deny {
                reasons: vec![format!("rule `deny-tool {}`", request.tool)],
            }
        } else {
            Verdict::Allow {
                grant: "rule-list".into(),
            }
        };
        Box::pin(std::future::ready(verdict))
    }
}

/// A rule list by tool name: listed tools are denied, or need an approval; the rest are
/// allowed.
#[derive(Clone, Debug, Default)]
pub struct RuleList {
    deny: BTreeSet<String>,
    ask: BTreeSet<String>,
}

impl RuleList {
    /// Denies `deny`, asks for approval of `ask`.
    pub fn new(
        deny: impl IntoIterator<Item = String>,
        ask: impl IntoIterator<Item = String>,
    ) -> RuleList {
        RuleList {
            deny: deny.into_iter().collect(),
            ask: ask.into_iter().collect(),
        }
    }
}

impl RuleList {
    /// The rule list a run recorded (`describe`), if that is what it is; an error when it is
    /// one that cannot be rebuilt exactly (never a weaker list).
    pub fn from_description(d: &serde_json::Value) -> Option<Result<RuleList, String>> {
        let rules = d.get("rule_list")?;
        let names = |k: &str| -> Result<Vec<String>, String> {
            match rules.get(k) {
                None => Ok(Vec::new()),
                Some(serde_json::Value::Array(a)) => a
                    .iter()
                    .map(|x| {
                        x.as_str().map(str::to_owned).ok_or_else(|| {
                            format!("the recorded `{k}` rule {x} is not a tool name")
                        })
                    })
                    .collect(),
                Some(other) => Err(format!("the recorded `{k}` rules are {other}, not a list")),
            }
        };
        Some(names("deny").and_then(|deny| Ok(RuleList::new(deny, names("ask")?))))
    }

    /// The tools the list names (denied or asked about).
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.deny.iter().chain(&self.ask).map(String::as_str)
    }
}

impl Authority for RuleList {
    fn may_ever_allow(&self, probe: &ToolProbe<'_>) -> bool {
        !self.deny.contains(probe.tool)
    }

    fn may_hide_tools(&self) -> bool {
        !self.deny.is_empty()
    }

    fn describe(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"rule_list": {"deny": self.deny, "ask": self.ask}}))
    }

    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        let verdict = if self.deny.contains(request.tool) {
            Verdict::Deny {
                reasons: vec![format!("rule `deny-tool {}`", request.tool)],
            }
        } else if self.ask.contains(request.tool) {
            Verdict::Ask {
                reason: format!("rule `ask-tool {}`: a person must approve it", request.tool),
                approvers: 1,
            }
        } else {
            Verdict::Allow {
                grant: "rule-list".into(),
            }
        };
        Box::pin(std::future::ready(verdict))
    }
}

/// Several authorities at once: any answer but allow wins (deny over indeterminate over ask).
pub struct AllOf {
    parts: Vec<std::sync::Arc<dyn Authority>>,
}

impl AllOf {
    /// Rules with every one of `parts`.
    pub fn new(parts: Vec<std::sync::Arc<dyn Authority>>) -> AllOf {
        AllOf { parts }
    }
}

impl Authority for AllOf {
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            let mut verdicts = Vec::with_capacity(self.parts.len());
            for part in &self.parts {
                verdicts.push(part.evaluate(request).await);
            }
            let denials: Vec<String> = verdicts
                .iter()
                .filter_map(|v| match v {
                    Verdict::Deny { reasons } => Some(reasons.join("; ")),
                    _ => None,
                })
                .collect();
            if !denials.is_empty() {
                return Verdict::Deny { reasons: denials };
            }
            let rank = |v: &Verdict| match v {
                Verdict::Indeterminate { .. } => 0,
                Verdict::Ask { .. } => 1,
                _ => 2,
            };
            // Several asks: as many people as the most demanding of them wants.
            let approvers = verdicts
                .iter()
                .filter_map(|v| match v {
                    Verdict::Ask { approvers, .. } => Some(*approvers),
                    _ => None,
                })
                .max();
            let mut strongest: Option<&Verdict> = None;
            for v in &verdicts {
                if rank(v) < strongest.map_or(3, rank) {
                    strongest = Some(v);
                }
            }
            // Several asks: the person reads every reason (a policy's and the profile's), each
            // once.
            let mut reasons: Vec<&str> = Vec::new();
            for v in &verdicts {
                if let Verdict::Ask { reason, .. } = v
                    && !reasons.contains(&reason.as_str())
                {
                    reasons.push(reason);
                }
            }
            let reason = reasons.join("; ");
            match (strongest, approvers) {
                (Some(Verdict::Ask { .. }), Some(approvers)) => Verdict::Ask { reason, approvers },
                (Some(v), _) => v.clone(),
                (None, _) => Verdict::Indeterminate {
                    reason: "no authority to ask".into(),
                },
            }
        })
    }

    fn describe(&self) -> Option<serde_json::Value> {
        let parts: Option<Vec<serde_json::Value>> =
            self.parts.iter().map(|p| p.describe()).collect();
        parts.map(|p| serde_json::json!({"all_of": p}))
    }

    fn may_ever_allow(&self, probe: &ToolProbe<'_>) -> bool {
        self.parts.iter().all(|p| p.may_ever_allow(probe))
    }

    fn may_hide_tools(&self) -> bool {
        self.parts.iter().any(|p| p.may_hide_tools())
    }

    /// Any part's refusal refuses; else the parts that rule allow, under their rules.
    fn rule_approver(&self, request: &ApproverRequest<'_>) -> ApproverVerdict {
        let mut rules = Vec::new();
        let mut reasons = Vec::new();
        for part in &self.parts {
            match part.rule_approver(request) {
                ApproverVerdict::NotRuled => {}
                ApproverVerdict::Allow { rule } => rules.push(rule),
                ApproverVerdict::Deny { reasons: r } => reasons.extend(r),
            }
        }
        if !reasons.is_empty() {
            ApproverVerdict::Deny { reasons }
        } else if rules.is_empty() {
            ApproverVerdict::NotRuled
        } else {
            ApproverVerdict::Allow {
                rule: rules.join("; "),
            }
        }
    }
}

/// The operator's policy floor: what every run of a front door obeys together with its own
/// rules, as a child obeys its ancestors — any answer but allow from the floor wins, so a
/// spec (or a caller) can narrow what the floor allows and never widen it. Its denials say
/// they are the operator's.
pub struct Floor {
    inner: std::sync::Arc<dyn Authority>,
}

impl Floor {
    /// `inner` as the floor.
    pub fn new(inner: std::sync::Arc<dyn Authority>) -> Floor {
        Floor { inner }
    }
}

impl Authority for Floor {
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            match self.inner.evaluate(request).await {
                Verdict::Deny { reasons } => Verdict::Deny {
                    reasons: reasons
                        .into_iter()
                        .map(|r| format!("the operator's policy floor: {r}"))
                        .collect(),
                },
                Verdict::Indeterminate { reason } => Verdict::Indeterminate {
                    reason: format!("the operator's policy floor: {reason}"),
                },
                other => other,
            }
        })
    }

    fn describe(&self) -> Option<serde_json::Value> {
        self.inner
            .describe()
            .map(|d| serde_json::json!({"floor": d}))
    }

    fn may_ever_allow(&self, probe: &ToolProbe<'_>) -> bool {
        self.inner.may_ever_allow(probe)
    }

    fn may_hide_tools(&self) -> bool {
        self.inner.may_hide_tools()
    }

    fn rule_approver(&self, request: &ApproverRequest<'_>) -> ApproverVerdict {
        match self.inner.rule_approver(request) {
            ApproverVerdict::Deny { reasons } => ApproverVerdict::Deny {
                reasons: reasons
                    .into_iter()
                    .map(|r| format!("the operator's policy floor: {r}"))
                    .collect(),
            },
            ApproverVerdict::Allow { rule } => ApproverVerdict::Allow {
                rule: format!("the operator's policy floor: {rule}"),
            },
            ApproverVerdict::NotRuled => ApproverVerdict::NotRuled,
        }
    }
}

/// The most a child run may call, by provider (a provider it does not name is not limited
/// here): the delegation's `tools`, cut on a shared provider to what the parent may call.
pub type Allowance = std::collections::BTreeMap<String, BTreeSet<String>>;

/// The authority of a child run: its own rules AND every ancestor's own rules, each asked
/// with the child's request (principal, provenance and `parent` link included), AND its
/// allowance. Any answer but allow from any of them wins, so a child can never be allowed
/// what an ancestor would deny it (attenuation by construction).
pub struct Delegated {
    all: AllOf,
    own: std::sync::Arc<dyn Authority>,
    ancestors: Vec<std::sync::Arc<dyn Authority>>,
    allowance: Option<Allowance>,
}

impl Delegated {
    /// `own` with `ancestors` (the root's first) and the child's `allowance`.
    pub fn new(
        own: std::sync::Arc<dyn Authority>,
        ancestors: Vec<std::sync::Arc<dyn Authority>>,
        allowance: Option<Allowance>,
    ) -> Delegated {
        let mut parts: Vec<std::sync::Arc<dyn Authority>> = Vec::new();
        if let Some(tools) = &allowance {
            parts.push(std::sync::Arc::new(Allowed(tools.clone())));
        }
        parts.push(own.clone());
        parts.extend(ancestors.iter().cloned());
        Delegated {
            all: AllOf::new(parts),
            own,
            ancestors,
            allowance,
        }
    }
}

impl Authority for Delegated {
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        self.all.evaluate(request)
    }

    fn may_ever_allow(&self, probe: &ToolProbe<'_>) -> bool {
        self.all.may_ever_allow(probe)
    }

    fn may_hide_tools(&self) -> bool {
        self.all.may_hide_tools()
    }

    fn describe(&self) -> Option<serde_json::Value> {
        let ancestors: Vec<serde_json::Value> = self
            .ancestors
            .iter()
            .map(|a| a.describe().unwrap_or(serde_json::Value::Null))
            .collect();
        Some(serde_json::json!({"delegated": {
            "own": self.own.describe(),
            "ancestors": ancestors,
            "tools": self.allowance,
        }}))
    }
}

/// Denies a call beyond an allowance.
struct Allowed(Allowance);

impl Authority for Allowed {
    fn evaluate<'a>(&'a self, request: &'a CapabilityRequest<'a>) -> BoxFuture<'a, Verdict> {
        let verdict = match self.0.get(request.provider) {
            Some(tools) if !tools.contains(request.tool) => Verdict::Deny {
                reasons: vec![format!(
                    "delegation: `{}` on `{}` is beyond what the child may call",
                    request.tool, request.provider
                )],
            },
            _ => Verdict::Allow {
                grant: "delegation".into(),
            },
        };
        Box::pin(std::future::ready(verdict))
    }

    fn describe(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"allowance": self.0}))
    }

    fn may_ever_allow(&self, probe: &ToolProbe<'_>) -> bool {
        self.0
            .get(probe.provider)
            .is_none_or(|tools| tools.contains(probe.tool))
    }

    fn may_hide_tools(&self) -> bool {
        true
    }
}

//! The gateway's configuration file (`warrant gateway CONFIG`), and the session spec made from
//! it: one open step over the upstream servers, so each client session is a run like any other.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use warrant_core::Spec;
use warrant_core::spec::{Format, Profile, ProviderSpec};

/// The only version this build reads.
pub const CONFIG_VERSION: &str = "warrant/gateway/v1";

/// The provider a session's step acts on when there are several servers: their join.
pub const JOINED: &str = "gateway";

/// A gateway: the MCP servers it stands in front of, and the rules every call through it obeys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Always `warrant/gateway/v1`.
    pub version: String,
    /// A stable name for the gateway: every session's run records it as its spec's id.
    pub id: String,
    /// The upstream servers, by the name policies see (`resource.provider`), written exactly as
    /// a spec's providers are: `mcp: {command: [...]}` or `mcp: {url: ...}`, `trust`, `env`,
    /// `headers`, `effects`, or an in-process `reference` provider.
    pub servers: BTreeMap<String, ProviderSpec>,
    /// Cedar policy files or folders (relative to this file) that rule on every call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<String>,
    /// A security profile, as in a spec (`untrusted-input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The tools offered to clients, by the name the client sees (or `server.tool`); default:
    /// every tool of every server, named `server.tool` only where two servers share a name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Who sessions act for (policies see it as the principal). Over HTTP with `tokens`, the
    /// token's principal instead.
    #[serde(default)]
    pub principal: PrincipalSpec,
    /// Over HTTP: bearer tokens each client must send (`Authorization: Bearer ...`), by the
    /// name of the environment variable holding the token, with the principal it acts as.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens: BTreeMap<String, PrincipalSpec>,
    /// How approvals are asked for.
    #[serde(default)]
    pub approvals: ApprovalSettings,
    /// Limits on each session.
    #[serde(default)]
    pub limits: SessionLimits,
    /// What each tenant may use (`"*"`: every tenant not named): sessions started and held,
    /// and tool calls, per window. A call past one is answered with a tool error saying which
    /// quota, and when to try again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quotas: BTreeMap<String, warrant_app::Quota>,
}

/// Who a session acts for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalSpec {
    /// The tenant (default `local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The user (default: the operator running the gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl PrincipalSpec {
    /// Tenant and user: as written, else tenant `local` and `operator`.
    pub fn resolve(&self, operator: &str) -> (String, String) {
        (
            self.tenant.clone().unwrap_or_else(|| "local".to_owned()),
            self.user.clone().unwrap_or_else(|| operator.to_owned()),
        )
    }
}

/// How a call held for approval is asked about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalSettings {
    /// Ask the person through the client (MCP elicitation) when the client supports it
    /// (default true). Otherwise, or when the person dismisses the question, the request
    /// waits for `warrant approve` / `warrant deny` until it expires, holding the call.
    #[serde(default = "yes")]
    pub elicit: bool,
}

impl Default for ApprovalSettings {
    fn default() -> ApprovalSettings {
        ApprovalSettings { elicit: true }
    }
}

fn yes() -> bool {
    true
}

/// Limits on one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionLimits {
    /// Most tool calls in one session (default: no limit but the decisions one, 100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_max: Option<u32>,
    /// How long a session may last, in milliseconds (default 24 hours).
    #[serde(default = "default_deadline_ms")]
    pub deadline_ms: u64,
    /// Longest wait for one upstream call (default 30 s): a read that takes longer fails; a
    /// commit that takes longer is in doubt.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// How long a call held for approval waits for an answer (default 5 minutes): the client
    /// waits that long at most, then gets a tool error saying it expired.
    #[serde(default = "default_approval_ttl_ms")]
    pub approval_ttl_ms: u64,
    /// A stateless (2026-07-28) client has no session: its calls, by the same principal and
    /// client name, make one session until none came for this long (default 5 minutes), so
    /// provenance carries from one call's result to the next call's arguments. An HTTP session
    /// whose client went silent closes after this long too (or once an approval could no
    /// longer be waiting, if that is later).
    #[serde(default = "default_idle_ms")]
    pub idle_ms: u64,
    /// How long a session's run is held in memory while its client calls nothing (default
    /// 30 s). Then it is let go: the session costs only its client's connection, its lease is
    /// kept, and its next call takes the run up again from its log (one more commit). `0` lets
    /// it go after every call.
    #[serde(default = "default_hold_idle_ms")]
    pub hold_idle_ms: u64,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            calls_max: None,
            deadline_ms: default_deadline_ms(),
            call_timeout_ms: default_call_timeout_ms(),
            approval_ttl_ms: default_approval_ttl_ms(),
            idle_ms: default_idle_ms(),
            hold_idle_ms: default_hold_idle_ms(),
        }
    }
}

fn default_deadline_ms() -> u64 {
    86_400_000
}
fn default_call_timeout_ms() -> u64 {
    30_000
}
fn default_approval_ttl_ms() -> u64 {
    300_000
}
fn default_idle_ms() -> u64 {
    300_000
}
fn default_hold_idle_ms() -> u64 {
    30_000
}

/// Most decisions (calls) in one session.
pub const SESSION_DECISIONS_MAX: u32 = 100_000;

impl GatewayConfig {
    /// Reads and checks a configuration file. Errors name the file, the field and the line.
    pub fn load(path: &Path) -> Result<(GatewayConfig, std::path::PathBuf), String> {
        let shown = path.display().to_string();
        let text = warrant_app::read_text(path, warrant_app::DOCUMENT_BYTES_MAX, "gateway config")
            .map_err(|e| e.to_string())?;
        let base = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(folder) => std::path::absolute(folder),
            None => std::env::current_dir(),
        }
        .map_err(|e| format!("{shown}: cannot resolve its folder: {e}"))?;
        let config = GatewayConfig::parse(&text, Format::of_path(&shown), &shown)?;
        Ok((config, base))
    }

    /// Parses and checks a configuration given as text, named `shown` in errors.
    pub fn parse(text: &str, format: Format, shown: &str) -> Result<GatewayConfig, String> {
        let config: GatewayConfig =
            warrant_core::spec::parse_document(text, format, shown).map_err(|e| e.to_string())?;
        config.check(shown)?;
        Ok(config)
    }

    fn check(&self, shown: &str) -> Result<(), String> {
        let mut issues = Vec::new();
        if self.version != CONFIG_VERSION {
            issues.push(format!(
                "version: unsupported version `{}` (this build reads `{CONFIG_VERSION}`)",
                self.version
            ));
        }
        if self.id.trim().is_empty() {
            issues.push("id: must not be empty".to_owned());
        }
        if self.servers.is_empty() {
            issues.push("servers: a gateway needs at least one upstream server".to_owned());
        }
        for (tenant, quota) in &self.quotas {
            if let Err(e) = quota.check() {
                issues.push(format!("quotas.{tenant}: {e}"));
            }
            if quota.tokens.is_some() {
                issues.push(format!(
                    "quotas.{tenant}.tokens: a gateway's sessions spend no model tokens of its own (the client decides)"
                ));
            }
        }
        for (name, server) in &self.servers {
            if name == JOINED {
                issues.push(format!(
                    "servers.{name}: `{JOINED}` names the servers joined; choose another name"
                ));
            }
            if name.contains('.') || name.is_empty() {
                issues.push(format!(
                    "servers.{name}: a server's name is non-empty and has no `.` (tools are named `server.tool`)"
                ));
            }
            if !server.join.is_empty() {
                issues.push(format!(
                    "servers.{name}.join: the gateway joins its servers itself"
                ));
            }
        }
        for (name, value) in [
            ("deadline_ms", self.limits.deadline_ms),
            ("call_timeout_ms", self.limits.call_timeout_ms),
            ("approval_ttl_ms", self.limits.approval_ttl_ms),
            ("idle_ms", self.limits.idle_ms),
        ] {
            if value == 0 {
                issues.push(format!("limits.{name}: must be at least 1"));
            }
        }
        if self.limits.calls_max == Some(0) {
            issues.push("limits.calls_max: must be at least 1".to_owned());
        }
        for var in self.tokens.keys() {
            let valid =
                !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                issues.push(format!(
                    "tokens.{var}: a token is named by the environment variable holding it (letters, digits, `_`)"
                ));
            }
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(format!("{shown}: {}", issues.join(&format!("\n{shown}: "))))
        }
    }

    /// The provider a session's step acts on: the one server, or the servers joined.
    pub fn step_provider(&self) -> String {
        if self.servers.len() == 1 {
            self.servers.keys().next().cloned().unwrap_or_default()
        } else {
            JOINED.to_owned()
        }
    }

    /// The spec of a session whose step may call `tools` (names as the engine has them), its
    /// paths resolved against `base` and checked as any spec is.
    pub fn session_spec(&self, tools: Vec<String>, base: &Path) -> Result<Spec, String> {
        let spec = self.draft(tools, base)?;
        let catalog = warrant_surfaces::ReferenceCatalog::default();
        warrant_core::validate::check(&spec, "the gateway's session spec", &catalog)
            .map_err(|e| e.to_string().replace("providers.", "servers."))?;
        Ok(spec)
    }

    /// The session spec before it is checked (the servers are reached with it first, to learn
    /// what they offer).
    pub(crate) fn draft(&self, tools: Vec<String>, base: &Path) -> Result<Spec, String> {
        let mut providers = self.servers.clone();
        if self.servers.len() > 1 {
            providers.insert(
                JOINED.to_owned(),
                ProviderSpec {
                    join: self.servers.keys().cloned().collect(),
                    ..ProviderSpec::default()
                },
            );
        }
        let servers: Vec<&str> = self.servers.keys().map(String::as_str).collect();
        let spec = serde_json::json!({
            "version": warrant_core::spec::SPEC_VERSION,
            "id": self.id,
            "objective": format!(
                "A gateway session: an MCP client calls tools of {}. It has no objective to attain; its calls are the evidence.",
                servers.join(", ")
            ),
            "providers": providers,
            "policy": self.policy,
            "profile": self.profile,
            "steps": [{
                "id": "session",
                "provider": self.step_provider(),
                "intent": "whatever the client asks, within policy",
                "tools": tools,
                "open": true,
            }],
            "limits": {
                "decisions_max": SESSION_DECISIONS_MAX,
                "step_decisions_max": SESSION_DECISIONS_MAX,
                "deadline_ms": self.limits.deadline_ms,
                "call_timeout_ms": self.limits.call_timeout_ms,
                "approval_ttl_ms": self.limits.approval_ttl_ms,
                "calls_max": self.limits.calls_max,
            },
        });
        let mut spec: Spec = serde_json::from_value(strip_nulls(spec))
            .map_err(|e| format!("the gateway's session spec: {e}"))?;
        let catalog = warrant_surfaces::ReferenceCatalog::default();
        warrant_core::validate::normalise_paths(&mut spec, base, &catalog);
        Ok(spec)
    }
}

/// `null` fields dropped (the spec's optional fields are absent rather than null).
fn strip_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(strip_nulls).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

    use super::*;

    fn parse(text: &str) -> Result<GatewayConfig, String> {
        GatewayConfig::parse(text, Format::Yaml, "gw.yaml")
    }

    #[test]
    fn a_config_names_what_is_wrong_and_where() {
        let e = parse("version: warrant/gateway/v1\nid: g\nservers: {}\n").unwrap_err();
        assert!(e.contains("servers: a gateway needs at least one"), "{e}");
        let e = parse(
            "version: warrant/gateway/v1\nid: g\nservers:\n  fs: {reference: cafe}\nlimts: {}\n",
        )
        .unwrap_err();
        assert!(e.contains("limts"), "{e}");
        let e =
            parse("version: warrant/gateway/v1\nid: g\nservers:\n  gateway: {reference: cafe}\n")
                .unwrap_err();
        assert!(e.contains("servers.gateway"), "{e}");
        let e = parse(
            "version: warrant/gateway/v1\nid: g\nservers:\n  a: {reference: cafe}\ntokens:\n  'x y': {}\n",
        )
        .unwrap_err();
        assert!(e.contains("tokens.x y"), "{e}");
    }

    #[test]
    fn a_session_spec_has_one_open_step_over_the_servers_joined() {
        let one =
            parse("version: warrant/gateway/v1\nid: g\nservers:\n  cafe: {reference: cafe}\n")
                .unwrap();
        let base = std::env::current_dir().unwrap();
        let spec = one.session_spec(vec!["read_menu".into()], &base).unwrap();
        assert_eq!(spec.steps.len(), 1);
        assert!(spec.steps[0].open);
        assert_eq!(spec.steps[0].provider, "cafe");
        let two = parse(
            "version: warrant/gateway/v1\nid: g\nservers:\n  cafe: {reference: cafe}\n  gallery: {reference: gallery}\n",
        )
        .unwrap();
        let spec = two
            .session_spec(vec!["cafe.read_menu".into()], &base)
            .unwrap();
        assert_eq!(spec.steps[0].provider, JOINED);
        assert_eq!(spec.providers[JOINED].join, ["cafe", "gallery"]);
    }
}

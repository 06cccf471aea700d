//! Surfaces: the port to providers. This crate holds the in-process reference surface, which
//! wraps any [`reference::Provider`] (the trait an embedder implements to add a provider in
//! Rust), the demo providers (cafe, gallery, bakery, ...) plus the benchmark's `step` tool,
//! and, behind features, the MCP surface (`mcp`), the OpenAPI surface (`openapi`) and the
//! WebMCP surface (`webmcp`: a page's own tools in a headless Chromium).

pub mod demo;
#[cfg(any(feature = "mcp", feature = "webmcp"))]
mod group;
#[cfg(any(feature = "mcp", feature = "webmcp"))]
pub mod guard;
pub mod join;
pub mod ledger;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod reference;
pub mod secrets;
#[cfg(feature = "webmcp")]
pub mod webmcp;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use warrant_core::ports::Surface;

pub use reference::{ActionSpec, Provider, ProviderError, ReferenceCatalog, ReferenceSurface};
pub use secrets::{Redacted, Secrets};

/// Default largest result kept whole: 1 MiB of JSON.
pub const OUTPUT_BYTES_MAX_DEFAULT: usize = 1 << 20;

/// An output larger than `max` bytes of JSON becomes `{truncated, bytes, head}`: the cut is
/// recorded in the log as the result, never silent.
#[cfg_attr(not(any(feature = "mcp", feature = "openapi")), allow(dead_code))]
pub(crate) fn bound(output: Value, max: usize) -> Value {
    let text = output.to_string();
    if text.len() <= max {
        return output;
    }
    warrant_core::canon::truncated(&text, max)
}

/// A remote tool's effect class: the spec's word (`effects`) first; a read only when a
/// trusted provider declares it read-only (`read_only`: MCP's `readOnlyHint`, a page's
/// `readOnlyHint`); a commit otherwise (MCP's default, and the safe one).
#[cfg(any(feature = "mcp", feature = "webmcp"))]
pub(crate) fn effect_of(
    effects: &std::collections::BTreeMap<String, warrant_core::event::Effect>,
    trusted: bool,
    tool: &str,
    read_only: Option<bool>,
) -> warrant_core::event::Effect {
    use warrant_core::event::Effect;
    if let Some(e) = effects.get(tool) {
        return *e;
    }
    if trusted && read_only == Some(true) {
        Effect::Read
    } else {
        Effect::Commit
    }
}

/// A spec value that may name environment variables: `$NAME` alone, or `${NAME}` anywhere in
/// it, is replaced by Warrant's environment variable `NAME` (so a credential never sits in the
/// spec); anything else is taken as written. A variable that is not set is an error naming it.
#[expect(
    clippy::disallowed_methods,
    reason = "the surfaces own expanding `$NAME` in a provider's settings (the MCP child's env, \
              MCP and OpenAPI headers)"
)]
pub fn expand_env(value: &str) -> Result<String, String> {
    expand_with(value, |name| {
        std::env::var(name).map_err(|_| format!("environment variable `{name}` is not set"))
    })
}

/// `value` with `$NAME` (alone) or each `${NAME}` replaced by what `var` says of `NAME`.
pub(crate) fn expand_with(
    value: &str,
    var: impl Fn(&str) -> Result<String, String>,
) -> Result<String, String> {
    if let Some(name) = value.strip_prefix('$')
        && !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return var(name);
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in `{value}`"))?;
        out.push_str(&var(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Where a provider's `$NAME` settings are read from: Warrant's environment (a spec a person
/// runs), or only the operator's declared secrets (a provider the operator registered).
#[derive(Clone, Copy, Debug)]
pub enum Vars<'a> {
    /// Warrant's own environment.
    Environment,
    /// The operator's secrets, and nothing else.
    Secrets(&'a Secrets),
}

impl Vars<'_> {
    /// `value` expanded.
    pub fn expand(&self, value: &str) -> Result<String, String> {
        match self {
            Vars::Environment => expand_env(value),
            Vars::Secrets(s) => s.expand(value),
        }
    }
}

/// Who a provider's question to the person during a call is passed to (an MCP server's
/// elicitation), for a front door that has the person at hand: the gateway's client.
pub trait Elicit: Send + Sync {
    /// Asks the person behind `run` what `request` asks (MCP's `elicitation/create`
    /// parameters), within `within`: their answer (an elicitation's result: `action`, and
    /// `content` when they accepted), or `None` when nobody can be asked.
    fn elicit(
        &self,
        run: &warrant_core::ids::RunId,
        request: serde_json::Value,
        within: std::time::Duration,
    ) -> warrant_core::ports::BoxFuture<'_, Option<serde_json::Value>>;
}

/// How [`connect`] reaches a spec's providers.
#[derive(Clone, Copy)]
pub struct Reach<'a> {
    /// The in-process providers.
    pub catalog: &'a ReferenceCatalog,
    /// Where a relative path in a provider entry (an OpenAPI document) is read from.
    pub base_dir: &'a Path,
    /// The operator's secrets: a provider marked `registered` reads its `$NAME` settings from
    /// them (never from Warrant's environment), and every secret value is redacted from what
    /// it says. Other providers read Warrant's environment.
    pub secrets: &'a Arc<Secrets>,
    /// Longest a provider may take to start and finish its handshake: the smaller of
    /// `limits.call_timeout_ms` and what is left of the run's deadline.
    pub start_ms: u64,
    /// Keep an MCP server's whole answer as each call's result (a front door that forwards
    /// it: the gateway).
    pub whole_results: bool,
    /// Who an MCP server's questions to the person are passed to (the gateway's clients); an
    /// MCP server is told the client can be asked only when someone is.
    pub elicit: Option<&'a Arc<dyn Elicit>>,
    /// The browser lane: the base URL of the pages that serve the spec's in-process
    /// providers as WebMCP web apps (`webmcp::BrowserLane`); each `reference` provider is
    /// then reached as that page, in a browser, instead of in process.
    pub pages: Option<&'a str>,
}

/// Surfaces for every provider of `spec`: reference providers from `reach.catalog`, MCP
/// servers (with the `mcp` feature) and OpenAPI services (with the `openapi` feature).
pub async fn connect(
    reach: Reach<'_>,
    spec: &warrant_core::Spec,
) -> Result<HashMap<String, Arc<dyn Surface>>, String> {
    let mut out: HashMap<String, Arc<dyn Surface>> = HashMap::new();
    // The browser contexts this run's pages share (`webmcp.storage: run`).
    let contexts = PageContexts::default();
    let (joins, single): (Vec<_>, Vec<_>) =
        spec.providers.iter().partition(|(_, p)| !p.join.is_empty());
    for (name, provider) in single {
        let registered = provider.registered.is_some();
        #[cfg(feature = "webmcp")]
        if let (Some(base), Some(reference)) = (reach.pages, &provider.reference) {
            // INVARIANT (every wait bounded): opening the page is bounded as any provider's
            // start is.
            let opening =
                webmcp::BrowserLane::surface(reach, &contexts, base, name, provider, reference);
            let surface =
                tokio::time::timeout(std::time::Duration::from_millis(reach.start_ms), opening)
                    .await
                    .map_err(|_| {
                        format!(
                            "provider `{name}`: its page did not open within {} ms",
                            reach.start_ms
                        )
                    })?
                    .map_err(|e| format!("provider `{name}`: {e}"))?;
            out.insert(name.clone(), surface);
            continue;
        }
        let surface: Arc<dyn Surface> =
            if provider.mcp.is_none() && provider.openapi.is_none() && provider.webmcp.is_none() {
                let mut one = spec.clone();
                one.providers.retain(|n, _| n == name);
                match reach.catalog.surfaces(&one)?.remove(name) {
                    Some(s) => s,
                    None => return Err(format!("provider `{name}`: no surface was made for it")),
                }
            } else {
                // INVARIANT (every wait bounded): a provider that does not start, or does not
                // finish its handshake, stops the run from starting within `start_ms`.
                let limit_ms = reach.start_ms;
                let vars = if registered {
                    Vars::Secrets(reach.secrets)
                } else {
                    Vars::Environment
                };
                let redact = registered.then(|| reach.secrets.clone());
                tokio::time::timeout(
                    std::time::Duration::from_millis(limit_ms),
                    remote(
                        name,
                        provider,
                        &reach,
                        &contexts,
                        spec.limits.call_timeout_ms,
                        vars,
                        redact,
                    ),
                )
                .await
                .map_err(|_| {
                    // rmcp skips whatever a server writes that is not JSON-RPC, so a server that
                    // prints anything else on its output is only ever seen not to answer.
                    let what = match &provider.mcp {
                        Some(m) if !m.command.is_empty() => {
                            "the MCP server did not complete the MCP handshake: check what it \
                         printed (its stderr is shown labelled with its name; a server that \
                         writes anything but MCP JSON-RPC messages on its stdout, or waits for \
                         something, is never understood)"
                        }
                        Some(_) => "the MCP server did not complete the MCP handshake",
                        None => "not ready",
                    };
                    format!(
                        "provider `{name}`: {what} within {limit_ms} ms (the smaller of \
                     `limits.call_timeout_ms` and what was left of the deadline)"
                    )
                })?
                .map_err(|e| format!("provider `{name}`: {e}"))?
            };
        let surface = if registered && !reach.secrets.is_empty() {
            Arc::new(Redacted::new(surface, reach.secrets.clone()))
        } else {
            surface
        };
        out.insert(name.clone(), surface);
    }
    // A join shares its members' connections.
    for (name, provider) in joins {
        let members = provider
            .join
            .iter()
            .map(|m| {
                out.get(m)
                    .map(|s| (m.clone(), s.clone()))
                    .ok_or_else(|| format!("provider `{name}` joins `{m}`, which is not declared"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        out.insert(name.clone(), Arc::new(join::JoinedSurface::new(members)));
    }
    Ok(out)
}

/// The browser contexts one run's WebMCP pages share (nothing without the `webmcp` feature).
#[cfg(feature = "webmcp")]
type PageContexts = webmcp::RunContexts;
#[cfg(not(feature = "webmcp"))]
type PageContexts = ();

/// A surface for an MCP server, an OpenAPI service or a WebMCP page. `limit_ms` bounds each
/// HTTP answer, and each of a page's DevTools commands.
async fn remote(
    name: &str,
    provider: &warrant_core::spec::ProviderSpec,
    reach: &Reach<'_>,
    contexts: &PageContexts,
    limit_ms: u64,
    vars: Vars<'_>,
    redact: Option<Arc<Secrets>>,
) -> Result<Arc<dyn Surface>, String> {
    let trusted = provider.trust == Some(warrant_core::spec::Trust::Trusted);
    #[cfg(feature = "mcp")]
    if let Some(m) = &provider.mcp {
        let surface =
            mcp::McpSurface::connect_asking(name, m, trusted, vars, redact, reach.elicit.cloned())
                .await?;
        return Ok(Arc::new(if reach.whole_results {
            surface.whole_results()
        } else {
            surface
        }));
    }
    #[cfg(feature = "openapi")]
    if let Some(api) = &provider.openapi {
        let surface = openapi::OpenApiSurface::with_vars(api, reach.base_dir, vars)?
            .with_read_timeout(std::time::Duration::from_millis(limit_ms))?;
        return Ok(Arc::new(surface));
    }
    #[cfg(feature = "webmcp")]
    if let Some(page) = &provider.webmcp {
        let surface =
            webmcp::WebMcpSurface::open_in(Some(contexts), name, page, trusted, limit_ms).await?;
        return Ok(Arc::new(surface));
    }
    let _ = (name, reach, contexts, trusted, limit_ms, vars, redact);
    Err(
        "this build has no support for this kind of provider (features `mcp`, `openapi`, \
         `webmcp`)"
            .into(),
    )
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "tests"
)]
mod tests {
    use super::expand_env;

    #[test]
    fn environment_variables_are_expanded_and_a_missing_one_is_named() {
        // PATH is set wherever tests run.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand_env("$PATH").unwrap(), path);
        assert_eq!(
            expand_env("Bearer ${PATH}!").unwrap(),
            format!("Bearer {path}!")
        );
        assert_eq!(expand_env("plain $ text").unwrap(), "plain $ text");
        let e = expand_env("${WARRANT_SURELY_UNSET_VAR}").unwrap_err();
        assert!(e.contains("WARRANT_SURELY_UNSET_VAR"), "{e}");
        assert!(expand_env("${OPEN").is_err());
    }
}

//! Surfaces: the port to providers. This crate holds the in-process reference surface, which
//! wraps any [`reference::Provider`] (the trait an embedder implements to add a provider in
//! Rust), the demo providers (cafe, gallery, bakery, ...) plus the benchmark's `step` tool,
//! and, behind features, the MCP surface (`mcp`) and the OpenAPI surface (`openapi`).

pub mod demo;
pub mod join;
pub mod ledger;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod reference;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use warrant_core::ports::Surface;

pub use reference::{ActionSpec, Provider, ProviderError, ReferenceCatalog, ReferenceSurface};

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

/// A spec value that may name environment variables: `$NAME` alone, or `${NAME}` anywhere in
/// it, is replaced by Warrant's environment variable `NAME` (so a credential never sits in the
/// spec); anything else is taken as written. A variable that is not set is an error naming it.
#[expect(
    clippy::disallowed_methods,
    reason = "the surfaces own expanding `$NAME` in a provider's settings (the MCP child's env, \
              MCP and OpenAPI headers)"
)]
pub fn expand_env(value: &str) -> Result<String, String> {
    let var = |name: &str| {
        std::env::var(name).map_err(|_| format!("environment variable `{name}` is not set"))
    };
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

/// Surfaces for every provider of `spec`: reference providers from `catalog`, MCP servers
/// (with the `mcp` feature) and OpenAPI services (with the `openapi` feature). Relative paths
/// in provider entries (an OpenAPI document) are read from `base_dir`, the spec's folder.
pub async fn connect(
    catalog: &ReferenceCatalog,
    spec: &warrant_core::Spec,
    base_dir: &Path,
) -> Result<HashMap<String, Arc<dyn Surface>>, String> {
    let mut out: HashMap<String, Arc<dyn Surface>> = HashMap::new();
    let (joins, single): (Vec<_>, Vec<_>) =
        spec.providers.iter().partition(|(_, p)| !p.join.is_empty());
    for (name, provider) in single {
        if provider.mcp.is_none() && provider.openapi.is_none() {
            let mut one = spec.clone();
            one.providers.retain(|n, _| n == name);
            out.extend(catalog.surfaces(&one)?);
            continue;
        }
        // INVARIANT (every wait bounded): a provider that does not start, or does not finish
        // its handshake, stops the run from starting within `limits.call_timeout_ms`.
        let limit_ms = spec.limits.call_timeout_ms;
        let surface = tokio::time::timeout(
            std::time::Duration::from_millis(limit_ms),
            remote(name, provider, base_dir, limit_ms),
        )
        .await
        .map_err(|_| {
            format!("provider `{name}`: not ready within {limit_ms} ms (`limits.call_timeout_ms`)")
        })?
        .map_err(|e| format!("provider `{name}`: {e}"))?;
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

/// A surface for an MCP server or an OpenAPI service. `limit_ms` bounds each HTTP answer.
async fn remote(
    name: &str,
    provider: &warrant_core::spec::ProviderSpec,
    base_dir: &Path,
    limit_ms: u64,
) -> Result<Arc<dyn Surface>, String> {
    let trusted = provider.trust == Some(warrant_core::spec::Trust::Trusted);
    #[cfg(feature = "mcp")]
    if let Some(m) = &provider.mcp {
        return Ok(Arc::new(mcp::McpSurface::connect(name, m, trusted).await?));
    }
    #[cfg(feature = "openapi")]
    if let Some(api) = &provider.openapi {
        let surface = openapi::OpenApiSurface::new(api, base_dir)?
            .with_read_timeout(std::time::Duration::from_millis(limit_ms))?;
        return Ok(Arc::new(surface));
    }
    let _ = (name, base_dir, trusted, limit_ms);
    Err("this build has no support for this kind of provider (features `mcp`, `openapi`)".into())
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

//! Surfaces: the port to providers. This crate holds the in-process reference surface, which
//! wraps any [`reference::Provider`] (the trait an embedder implements to add a provider in
//! Rust), and the demo providers (cafe, gallery, bakery) plus the benchmark's `step` tool.

pub mod demo;
pub mod ledger;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod reference;

pub use reference::{ActionSpec, Provider, ProviderError, ReferenceCatalog, ReferenceSurface};

/// Surfaces for every provider of `spec`: reference providers from `catalog`, MCP servers
/// started as child processes (with the `mcp` feature).
pub async fn connect(
    catalog: &ReferenceCatalog,
    spec: &warrant_core::Spec,
) -> Result<
    std::collections::HashMap<String, std::sync::Arc<dyn warrant_core::ports::Surface>>,
    String,
> {
    let mut out: std::collections::HashMap<
        String,
        std::sync::Arc<dyn warrant_core::ports::Surface>,
    > = std::collections::HashMap::new();
    for (name, provider) in &spec.providers {
        let Some(mcp_spec) = &provider.mcp else {
            let mut one = spec.clone();
            one.providers.retain(|n, _| n == name);
            out.extend(catalog.surfaces(&one)?);
            continue;
        };
        #[cfg(feature = "mcp")]
        {
            let trusted = provider.trust == Some(warrant_core::spec::Trust::Trusted);
            let mut surface = mcp::McpSurface::spawn(&mcp_spec.command, &mcp_spec.env, trusted)
                .await
                .map_err(|e| format!("provider `{name}`: {e}"))?;
            if let Some(max) = mcp_spec.output_bytes_max {
                surface = surface.with_output_bytes_max(max);
            }
            out.insert(name.clone(), std::sync::Arc::new(surface));
        }
        #[cfg(not(feature = "mcp"))]
        {
            let _ = mcp_spec;
            return Err(format!(
                "provider `{name}` is an MCP server, and this build has no MCP support"
            ));
        }
    }
    Ok(out)
}

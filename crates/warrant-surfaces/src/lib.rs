//! Surfaces: the port to providers. This crate holds the in-process reference surface, which
//! wraps any [`reference::Provider`] (the trait an embedder implements to add a provider in
//! Rust), and the demo providers (cafe, gallery, bakery) plus the benchmark's `step` tool.

pub mod demo;
pub mod ledger;
pub mod reference;

pub use reference::{ActionSpec, Provider, ProviderError, ReferenceCatalog, ReferenceSurface};

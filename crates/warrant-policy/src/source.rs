//! The policy source an engine builds a spec's policies and execution control with.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use warrant_core::ports::{Authority, ExecutionControl, PolicySource};

use crate::{CedarAuthority, HttpControl, policy_files};

/// Builds Cedar policy files and HTTP execution controls, and rebuilds them from what a run
/// recorded: `Engine::with_policies(Arc::new(Policies))`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Policies;

impl PolicySource for Policies {
    fn policies(
        &self,
        paths: &[String],
        trusted: BTreeSet<String>,
    ) -> Result<Arc<dyn Authority>, String> {
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        let files = policy_files(&paths).map_err(|e| e.to_string())?;
        let cedar = CedarAuthority::new(files, trusted).map_err(|e| e.to_string())?;
        Ok(Arc::new(cedar))
    }

    fn control(&self, url: &str) -> Result<Arc<dyn ExecutionControl>, String> {
        Ok(Arc::new(HttpControl::new(url)?))
    }

    fn rebuild_authority(&self, d: &Value) -> Option<Result<Arc<dyn Authority>, String>> {
        let rebuilt = CedarAuthority::from_description(d)?;
        Some(
            rebuilt
                .map(|c| Arc::new(c) as Arc<dyn Authority>)
                .map_err(|e| e.to_string()),
        )
    }

    fn rebuild_control(&self, d: &Value) -> Option<Result<Arc<dyn ExecutionControl>, String>> {
        let url = d.pointer("/http/url")?;
        Some(match url.as_str() {
            Some(url) => self.control(url),
            None => Err(format!("the recorded control's url is {url}, not text")),
        })
    }
}

//! The MCP surface: a Model Context Protocol server, reached over stdio as a child process or
//! at a Streamable HTTP endpoint, behind the Surface port (on the official `rmcp` SDK, which
//! negotiates the protocol version: 2025-06-18 or 2025-11-25 with today's servers).
//!
//! Observation: the server's tool list (names, descriptions, input schemas), versioned by its
//! digest. After a `notifications/tools/list_changed` the list is read again before a handle
//! is judged current, so a changed list or schema makes older handles stale. Effect class from annotations with MCP's defaults: a tool is a read only when a
//! *trusted* server says `readOnlyHint: true`; from an untrusted server (the default) every
//! tool is a commit, so annotations never loosen policy. Calls send the commit's idempotency
//! key in `_meta` (`warrant/idempotencyKey`); an `isError` result is a provider error; a
//! structured result is kept as it is, otherwise the content blocks. A commit whose answer was
//! lost in a crash is repeated only when a trusted server declared it `idempotentHint: true`.
//! A call the engine abandons (its timeout, a cancelled run) sends `notifications/cancelled`
//! for its request (rmcp cancels a dropped request).

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::Value;
use warrant_core::canon;
use warrant_core::event::{ActionRecord, Effect};
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Recovery, Surface, SurfaceError,
};

use crate::{bound, expand_env};

/// A connected MCP server.
pub struct McpSurface {
    client: RunningService<RoleClient, Watcher>,
    trusted: bool,
    output_bytes_max: usize,
    /// `notifications/tools/list_changed` received so far.
    changes: Arc<AtomicU64>,
    /// The last tool list: its version, and the change notifications received before it.
    seen: Mutex<Option<(String, u64)>>,
    /// The tools a trusted server declared idempotent (`idempotentHint: true`) in its last list.
    idempotent: Mutex<HashSet<String>>,
}

/// The client side's handler: counts tool-list change notifications, so an observation made
/// before one is no longer current.
#[derive(Clone, Debug, Default)]
struct Watcher {
    changes: Arc<AtomicU64>,
}

impl ClientHandler for Watcher {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changes.fetch_add(1, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// The stateless 2026-07-28 protocol (`server/discover`, no session) where the server offers
/// it; otherwise the `initialize` handshake at the newest version both sides know (2025-11-25
/// or 2025-06-18 with today's servers).
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    }
}

impl McpSurface {
    /// Starts `command` (program and arguments) as a child process and initialises MCP.
    pub async fn spawn(
        command: &[String],
        env: &BTreeMap<String, String>,
        trusted: bool,
    ) -> Result<McpSurface, String> {
        let Some((program, args)) = command.split_first() else {
            return Err("`mcp.command` is empty".into());
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, expand_env(v).map_err(|e| format!("`mcp.env.{k}`: {e}"))?);
        }
        let transport =
            TokioChildProcess::new(cmd).map_err(|e| format!("cannot start `{program}`: {e}"))?;
        let watcher = Watcher::default();
        let changes = watcher.changes.clone();
        let client = watcher
            .serve_with_lifecycle(transport, lifecycle())
            .await
            .map_err(|e| format!("`{program}` did not complete the MCP handshake: {e}"))?;
        McpSurface::with_client(client, changes, trusted)
            .listed()
            .await
    }

    /// Connects to a Streamable HTTP endpoint and initialises MCP. Header values may name
    /// environment variables (`$NAME`, `${NAME}`).
    pub async fn connect_http(
        url: &str,
        headers: &BTreeMap<String, String>,
        trusted: bool,
    ) -> Result<McpSurface, String> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("`mcp.headers`: `{k}` is not a header name"))?;
            let value = expand_env(v).map_err(|e| format!("`mcp.headers.{k}`: {e}"))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| format!("`mcp.headers.{k}`: not a valid header value"))?;
            value.set_sensitive(true);
            config.custom_headers.insert(name, value);
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let watcher = Watcher::default();
        let changes = watcher.changes.clone();
        let client = watcher
            .serve_with_lifecycle(transport, lifecycle())
            .await
            .map_err(|e| format!("{url} did not complete the MCP handshake: {e}"))?;
        McpSurface::with_client(client, changes, trusted)
            .listed()
            .await
    }

    /// Lists the tools once on connecting, so what the server declares is known before any
    /// observation (a run re-entered after a crash asks [`Surface::recovery`] first).
    async fn listed(self) -> Result<McpSurface, String> {
        self.list().await.map_err(|e| e.message)?;
        Ok(self)
    }

    fn with_client(
        client: RunningService<RoleClient, Watcher>,
        changes: Arc<AtomicU64>,
        trusted: bool,
    ) -> McpSurface {
        McpSurface {
            client,
            trusted,
            output_bytes_max: crate::OUTPUT_BYTES_MAX_DEFAULT,
            changes,
            seen: Mutex::new(None),
            idempotent: Mutex::new(HashSet::new()),
        }
    }

    /// The protocol version the server agreed to, e.g. `2025-11-25`.
    pub fn protocol_version(&self) -> Option<String> {
        self.client
            .peer_info()
            .map(|i| i.protocol_version.to_string())
    }

    /// Keeps results up to `bytes` of JSON whole; larger ones are cut to their head and marked.
    pub fn with_output_bytes_max(mut self, bytes: usize) -> McpSurface {
        self.output_bytes_max = bytes;
        self
    }

    fn effect(&self, read_only: Option<bool>) -> Effect {
        if self.trusted && read_only == Some(true) {
            Effect::Read
        } else {
            Effect::Commit
        }
    }

    async fn list(&self) -> Result<Observation, SurfaceError> {
        // Read before listing: a change that lands during the listing makes the next
        // observation new again.
        let changes = self.changes.load(Ordering::SeqCst);
        let tools = self
            .client
            .list_all_tools()
            .await
            .map_err(|e| SurfaceError::new("unavailable", format!("listing tools: {e}")))?;
        let idempotent: HashSet<String> = tools
            .iter()
            .filter(|t| t.annotations.as_ref().and_then(|a| a.idempotent_hint) == Some(true))
            .map(|t| t.name.to_string())
            .collect();
        if let Ok(mut known) = self.idempotent.lock() {
            *known = idempotent;
        }
        let actions: Arc<[ActionRecord]> = tools
            .into_iter()
            .map(|t| ActionRecord {
                name: t.name.to_string(),
                effect: self.effect(t.annotations.as_ref().and_then(|a| a.read_only_hint)),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Arc::new(Value::Object((*t.input_schema).clone())),
            })
            .collect();
        let listing: Vec<Value> = actions
            .iter()
            .map(|a| serde_json::json!([a.name, a.effect.to_string(), &*a.input_schema]))
            .collect();
        let version =
            canon::digest(&Value::Array(listing)).trim_start_matches("sha256:")[..16].to_owned();
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some((version.clone(), changes));
        }
        Ok(Observation { version, actions })
    }

    async fn call(&self, call: Invocation) -> Result<CallOutput, SurfaceError> {
        let arguments = match &*call.args {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(SurfaceError::new(
                    "invalid",
                    format!("arguments must be an object, not {other}"),
                ));
            }
        };
        let mut params = CallToolRequestParams::new(call.tool.clone()).with_arguments(arguments);
        if call.effect == Effect::Commit {
            let mut meta = serde_json::Map::new();
            meta.insert(
                "warrant/idempotencyKey".into(),
                Value::String(call.idempotency_key.clone()),
            );
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        let result = self
            .client
            .call_tool(params)
            .await
            .map_err(|e| SurfaceError::new("failed", format!("{e}")))?;
        let output = match result.structured_content {
            Some(v) => v,
            None => serde_json::to_value(&result.content).unwrap_or(Value::Null),
        };
        Ok(CallOutput {
            output: bound(output, self.output_bytes_max),
            is_error: result.is_error == Some(true),
        })
    }
}

impl Surface for McpSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(self.list())
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(self.call(call))
    }

    fn recovery(&self, tool: &str) -> Recovery {
        // A commit whose answer was lost is repeated only when a trusted server declared the
        // tool idempotent; an untrusted server's hint never loosens anything.
        let declared = self
            .idempotent
            .lock()
            .is_ok_and(|known| known.contains(tool));
        if self.trusted && declared {
            Recovery::Reinvoke
        } else {
            Recovery::InDoubt
        }
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        // The version of the last tool list seen; after a `listChanged` notification the
        // tools are listed again first, so a handle goes stale exactly when the list (a name,
        // an effect or a schema) really changed.
        Box::pin(async move {
            let last = || self.seen.lock().ok().and_then(|s| s.clone());
            let changes = self.changes.load(Ordering::SeqCst);
            if last().is_none_or(|(_, seen_changes)| seen_changes != changes)
                && self.list().await.is_err()
            {
                return false;
            }
            last().is_some_and(|(v, _)| v == version)
        })
    }
}

//! The MCP surface: a Model Context Protocol server, reached over stdio as a child process,
//! behind the Surface port (on the official `rmcp` SDK).
//!
//! Observation: the server's tool list (names, descriptions, input schemas), versioned by its
//! digest. Effect class from annotations with MCP's defaults: a tool is a read only when a
//! *trusted* server says `readOnlyHint: true`; from an untrusted server (the default) every
//! tool is a commit, so annotations never loosen policy. Calls send the commit's idempotency
//! key in `_meta` (`warrant/idempotencyKey`); an `isError` result is a provider error; a
//! structured result is kept as it is, otherwise the content blocks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use warrant_core::canon;
use warrant_core::event::{ActionRecord, Effect};
use warrant_core::ports::{BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError};

/// Default largest result kept whole: 1 MiB of JSON.
pub const OUTPUT_BYTES_MAX_DEFAULT: usize = 1 << 20;

/// An output larger than `max` bytes of JSON becomes `{truncated, bytes, head}`: the cut is
/// recorded in the log as the result, never silent.
fn bound(output: Value, max: usize) -> Value {
    let text = output.to_string();
    if text.len() <= max {
        return output;
    }
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    serde_json::json!({"truncated": true, "bytes": text.len(), "head": &text[..end]})
}

/// A connected MCP server.
pub struct McpSurface {
    client: RunningService<RoleClient, ()>,
    trusted: bool,
    output_bytes_max: usize,
    /// The last observation: its version and actions.
    seen: Mutex<Option<(String, Arc<[ActionRecord]>)>>,
}

/// Where a spec's `env` value comes from: `$NAME` reads Warrant's environment variable `NAME`
/// (so a credential never sits in the spec), anything else is taken as written.
fn env_value(v: &str) -> Result<String, String> {
    match v.strip_prefix('$') {
        Some(name) => {
            std::env::var(name).map_err(|_| format!("environment variable `{name}` is not set"))
        }
        None => Ok(v.to_owned()),
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
            cmd.env(k, env_value(v)?);
        }
        let transport =
            TokioChildProcess::new(cmd).map_err(|e| format!("cannot start `{program}`: {e}"))?;
        let client = ()
            .serve(transport)
            .await
            .map_err(|e| format!("`{program}` did not complete the MCP handshake: {e}"))?;
        Ok(McpSurface {
            client,
            trusted,
            output_bytes_max: OUTPUT_BYTES_MAX_DEFAULT,
            seen: Mutex::new(None),
        })
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
        let tools = self
            .client
            .list_all_tools()
            .await
            .map_err(|e| SurfaceError::new("unavailable", format!("listing tools: {e}")))?;
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
            *seen = Some((version.clone(), actions.clone()));
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

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        // The version of the last tool list seen (a `listChanged` notification or a changed
        // list makes a new one at the next observation).
        let current = self
            .seen
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|(v, _)| v == version))
            .unwrap_or(false);
        Box::pin(std::future::ready(current))
    }
}

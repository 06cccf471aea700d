//! Warrant's own providers as an MCP server (on the official `rmcp` SDK), so any MCP client can
//! drive them: `warrant mcp-serve PROVIDER` speaks MCP on stdio, or with `--http ADDR` over
//! Streamable HTTP at `http://ADDR/mcp`.
//!
//! Each action is a tool whose annotations tell the truth about it: a read is
//! `readOnlyHint: true`; a commit is `destructiveHint: true`, `idempotentHint` only when the
//! provider says repeating it is harmless. Arguments are checked against the tool's input
//! schema before the provider sees them (an MCP client is not Warrant's Bridge). A commit's
//! idempotency key is read from `_meta` (`warrant/idempotencyKey`, what Warrant's MCP surface
//! sends), so a Warrant run driving Warrant's server keeps its no-duplicate guarantee; without
//! a key every call is a new effect. A provider's failure is an `isError` result; a broken
//! provider is a JSON-RPC error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use warrant_core::event::Effect;

use crate::reference::{ActionSpec, Provider, ProviderError};

/// The `_meta` key carrying a commit's idempotency key.
pub const IDEMPOTENCY_META_KEY: &str = "warrant/idempotencyKey";

/// One provider served over MCP.
pub struct ProviderServer {
    name: String,
    provider: Arc<dyn Provider>,
    /// Numbers calls that came without an idempotency key.
    unkeyed: AtomicU64,
}

impl ProviderServer {
    /// Serves `provider` under `name`.
    pub fn new(name: &str, provider: Arc<dyn Provider>) -> ProviderServer {
        ProviderServer {
            name: name.to_owned(),
            provider,
            unkeyed: AtomicU64::new(0),
        }
    }

    /// Speaks MCP on stdin/stdout until the client closes the connection.
    pub async fn serve_stdio(self) -> Result<(), String> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP server stopped: {e}"))
    }

    /// Speaks MCP over Streamable HTTP at `http://<listener>/mcp` until the process ends: the
    /// stateless 2026-07-28 protocol for clients that ask for it, sessions for older ones. Every
    /// session shares the one provider.
    pub async fn serve_http(
        name: &str,
        provider: Arc<dyn Provider>,
        listener: tokio::net::TcpListener,
    ) -> Result<(), String> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        let name = name.to_owned();
        let service = StreamableHttpService::new(
            move || Ok(ProviderServer::new(&name, provider.clone())),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        axum::serve(listener, router)
            .await
            .map_err(|e| format!("the MCP HTTP server stopped: {e}"))
    }

    fn tool(&self, a: ActionSpec) -> Tool {
        let schema = match a.input_schema {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        let mut annotations = ToolAnnotations::new();
        annotations.read_only_hint = Some(a.effect == Effect::Read);
        annotations.destructive_hint = Some(a.effect == Effect::Commit);
        annotations.idempotent_hint =
            Some(a.effect == Effect::Read || self.provider.idempotent(&a.name));
        annotations.open_world_hint = Some(false);
        Tool::new(a.name, a.description, Arc::new(schema)).with_annotations(annotations)
    }

    fn call(
        &self,
        request: CallToolRequestParams,
        meta: &serde_json::Map<String, Value>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(action) = self
            .provider
            .actions()
            .into_iter()
            .find(|a| a.name == request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}`", request.name),
                None,
            ));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let validator = jsonschema::validator_for(&action.input_schema).map_err(|e| {
            ErrorData::internal_error(
                format!("`{}` has an unusable schema: {e}", action.name),
                None,
            )
        })?;
        if let Some(e) = validator.iter_errors(&args).next() {
            return Err(ErrorData::invalid_params(
                format!("`{}`: {e} (at `{}`)", action.name, e.instance_path()),
                None,
            ));
        }
        // rmcp hands the request's `_meta` over in the context (or, from some clients, in the
        // parameters).
        let key = meta
            .get(IDEMPOTENCY_META_KEY)
            .or_else(|| {
                request
                    .meta
                    .as_ref()
                    .and_then(|m| m.get(IDEMPOTENCY_META_KEY))
            })
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                let n = self.unkeyed.fetch_add(1, Ordering::SeqCst);
                format!("mcp-{}-unkeyed-{n}", self.name)
            });
        match self.provider.call(&action.name, &args, &key) {
            Ok(value) => Ok(CallToolResult::structured(value)),
            Err(ProviderError::Failed(message)) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
            }
            Err(ProviderError::Unavailable(message)) => {
                Err(ErrorData::internal_error(message, None))
            }
        }
    }
}

impl ServerHandler for ProviderServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(format!("warrant-{}", self.name), env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .provider
            .actions()
            .into_iter()
            .map(|a| self.tool(a))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, &context.meta.0.0)
            .map(CallToolResponse::Complete)
    }
}

//! The gateway as an MCP server, on the official `rmcp` SDK: stdio for clients that launch
//! their servers, Streamable HTTP (sessions for 2025-06-18 / 2025-11-25 clients, stateless
//! requests for 2026-07-28 ones) for the rest.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequestParams, ElicitationSchema,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::OnceCell;
use warrant_core::event::Effect;
use warrant_core::ports::BoxFuture;

use crate::session::{Asked, Asker, ClientCall, IDEMPOTENCY_META_KEY, Parked, SessionHandle};
use crate::{Gateway, reply};

/// The first protocol version without sessions.
const STATELESS_FROM: &str = "2026-07-28";

/// Longest argument text shown to a person in an approval question.
const SHOWN_ARGS_MAX: usize = 2_000;

/// One client connection: its session starts with its first call.
pub struct GatewayServer {
    gateway: Arc<Gateway>,
    tokens: Arc<Tokens>,
    session: OnceCell<Arc<SessionHandle>>,
    /// Set once the client listed the tools: it is told when they change.
    listed: std::sync::OnceLock<()>,
}

impl GatewayServer {
    /// A connection to `gateway`; over HTTP, `tokens` say who each request acts for.
    pub fn new(gateway: Arc<Gateway>, tokens: Arc<Tokens>) -> GatewayServer {
        GatewayServer {
            gateway,
            tokens,
            session: OnceCell::new(),
            listed: std::sync::OnceLock::new(),
        }
    }

    /// Who `context`'s request acts for: its bearer token's principal over HTTP, else the
    /// gateway's.
    fn principal(&self, context: &RequestContext<RoleServer>) -> (String, String) {
        let header = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(axum::http::header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok());
        match header.and_then(|h| self.tokens.principal(h)) {
            Some(p) => p,
            None => self.gateway.principal.clone(),
        }
    }

    fn tool(offered: &crate::Offered) -> Tool {
        let a = &offered.action;
        let schema = match &*a.input_schema {
            Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        // What Warrant holds the tool to be, not what the upstream claims.
        let mut annotations = ToolAnnotations::new();
        annotations.read_only_hint = Some(a.effect == Effect::Read);
        annotations.destructive_hint = Some(a.effect == Effect::Commit);
        annotations.idempotent_hint = Some(offered.idempotent);
        annotations.open_world_hint = a.hints.as_ref().and_then(|h| h.open_world);
        Tool::new(
            offered.client.clone(),
            a.description.clone(),
            Arc::new(schema),
        )
        .with_annotations(annotations)
    }
}

impl ServerHandler for GatewayServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            format!("warrant-gateway ({})", self.gateway.config.id),
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.listed.set(()).is_ok() {
            self.gateway.connected(context.peer.clone());
        }
        let offer = self.gateway.offer();
        let (tenant, user) = self.principal(&context);
        let client = context
            .peer
            .peer_info()
            .map(|i| format!("{} {}", i.client_info.name, i.client_info.version))
            .unwrap_or_default();
        let visible = self.gateway.visible_to(&offer, &tenant, &user, &client);
        Ok(ListToolsResult::with_all_items(
            offer
                .tools
                .iter()
                .filter(|t| visible(t))
                .map(GatewayServer::tool)
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let offer = self.gateway.offer();
        // A name the gateway does not offer goes to the Bridge as it is: refused there, on
        // the record, like any call.
        let tool = offer
            .engine_name(&request.name)
            .map_or_else(|| request.name.to_string(), str::to_owned);
        let (tenant, user) = self.principal(&context);
        let info = context.peer.peer_info();
        // A 2026-07-28 client has no session (each request reaches a handler of its own),
        // and names itself in each request's `_meta`.
        let stateless = info
            .as_ref()
            .is_some_and(|i| i.protocol_version.as_str() >= STATELESS_FROM);
        let named = |i: &Implementation| format!("{} {}", i.name, i.version);
        let client = if stateless {
            context.meta.client_info().map(|i| named(&i))
        } else {
            info.as_ref().map(|i| named(&i.client_info))
        }
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "unnamed client".to_owned());
        // The tenant's quotas: a session opened, a call made.
        let opening = if stateless {
            !self
                .gateway
                .stateless
                .lock()
                .is_ok_and(|m| m.contains_key(&(tenant.clone(), user.clone(), client.clone())))
        } else {
            self.session.get().is_none()
        };
        if let Err(e) = self.gateway.within_quota(&tenant, opening) {
            return Ok(CallToolResponse::Complete(reply::error(format!(
                "Warrant did not make this call: {e}."
            ))));
        }
        let session = if stateless {
            crate::session::stateless(&self.gateway, &client, &tenant, &user)
        } else {
            self.session
                .get_or_init(|| async {
                    let asker: Arc<dyn Asker> = Arc::new(PeerAsker {
                        peer: context.peer.clone(),
                    });
                    Arc::new(crate::session::start(
                        self.gateway.clone(),
                        &client,
                        &tenant,
                        &user,
                        Some(asker),
                    ))
                })
                .await
                .clone()
        };
        let key = context
            .meta
            .0
            .0
            .get(IDEMPOTENCY_META_KEY)
            .or_else(|| {
                request
                    .meta
                    .as_ref()
                    .and_then(|m| m.get(IDEMPOTENCY_META_KEY))
            })
            .and_then(Value::as_str)
            .map(str::to_owned);
        // The second round of an input-required exchange: the person's answer, for the call
        // held under that request.
        if let Some(state) = &request.request_state {
            let by = format!("{tenant}/{user} (through {client})");
            let result = self
                .answered(&session, state, &request, &by)
                .await
                .unwrap_or_else(|| {
                    reply::error(format!(
                        "`{}`: no call is held under this request state (it was answered, expired, or never held here); call the tool again",
                        request.name
                    ))
                });
            session.touch();
            return Ok(CallToolResponse::Complete(result));
        }
        // A stateless client that can be asked (elicitation, in an input-required result)
        // hears that its call is held, and comes back with the answer.
        let askable = stateless
            && self.gateway.config.approvals.elicit
            && context
                .meta
                .client_capabilities()
                .is_some_and(|c| c.elicitation.is_some());
        let (held_to, mut held) = tokio::sync::oneshot::channel();
        let (reply_to, mut answer) = tokio::sync::oneshot::channel();
        let args = request.arguments.unwrap_or_default();
        // What a held call's retry must match: computed only for a client that may retry.
        let asked_digest =
            askable.then(|| warrant_core::canon::digest(&Value::Object(args.clone())));
        let call = ClientCall {
            tool,
            args,
            key,
            reply: reply_to,
            held: askable.then_some(held_to),
        };
        let ended = || {
            let why = session
                .ended
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_else(|| "it stopped".to_owned());
            reply::ended(&why)
        };
        if session.calls.send(Box::new(call)).await.is_err() {
            return Ok(CallToolResponse::Complete(ended()));
        }
        let result = tokio::select! {
            biased;
            done = &mut answer => done.unwrap_or_else(|_| ended()),
            Ok(row) = &mut held => {
                if let (Ok(mut parked), Some(args_digest)) = (session.parked.lock(), asked_digest) {
                    parked.insert(row.request.clone(), Parked { args_digest, answer });
                }
                session.touch();
                return Ok(CallToolResponse::InputRequired(input_required(&row)));
            }
        };
        session.touch();
        Ok(CallToolResponse::Complete(result))
    }
}

impl GatewayServer {
    /// Records the person's answer a stateless client brought back for the call held under
    /// `state`, and waits for the call's end. `None` when no call is held under it here.
    async fn answered(
        &self,
        session: &SessionHandle,
        state: &str,
        request: &CallToolRequestParams,
        by: &str,
    ) -> Option<rmcp::model::CallToolResult> {
        let parked = session.parked.lock().ok()?.remove(state)?;
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        if warrant_core::canon::digest(&args) != parked.args_digest {
            // Not the call asked about: it stays held for its own answer.
            if let Ok(mut held) = session.parked.lock() {
                held.insert(state.to_owned(), parked);
            }
            return Some(reply::error(format!(
                "`{}`: these are not the arguments held under this request state: an answer is bound to the call asked about",
                request.name
            )));
        }
        let said = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(APPROVAL_INPUT))
            .cloned()
            .unwrap_or(Value::Null);
        let answer = asked(
            said.get("action").and_then(Value::as_str),
            said.get("content").unwrap_or(&Value::Null),
        )
        .map(Asked::answer);
        if let Some(answer) = answer {
            // Answered elsewhere first: that answer stands.
            let _ = self.gateway.app.answer(state, answer, by).await;
        }
        Some(
            parked
                .answer
                .await
                .unwrap_or_else(|_| reply::ended("it ended while the call waited for approval")),
        )
    }
}

/// The key of the approval question in an input-required result.
const APPROVAL_INPUT: &str = "approval";

/// The approval question for a stateless client: an input-required result whose state names
/// the approval request.
fn input_required(row: &warrant_app::ApprovalRow) -> rmcp::model::InputRequiredResult {
    let request = serde_json::from_value(serde_json::json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": question(row),
            "requestedSchema": approval_schema(),
        },
    }));
    let requests = request.ok().map(|r| {
        std::collections::BTreeMap::from([(
            APPROVAL_INPUT.to_owned(),
            rmcp::model::InputRequest::Elicitation(r),
        )])
    });
    rmcp::model::InputRequiredResult::new(requests, Some(row.request.clone()))
}

/// The form of the approval question: one yes/no, and a reason when no.
fn approval_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve this exact call, once?",
            },
            "reason": {
                "type": "string",
                "title": "Why not (when you deny it)",
            },
        },
        "required": ["approve"],
    })
}

/// Asks the person at the client, through MCP elicitation (a form with one yes/no question).
struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl Asker for PeerAsker {
    fn ask<'a>(&'a self, row: &'a warrant_app::ApprovalRow) -> BoxFuture<'a, Option<Asked>> {
        Box::pin(async move {
            let modes = self.peer.supported_elicitation_modes();
            if !modes.contains(&rmcp::service::ElicitationMode::Form) {
                return None;
            }
            let schema: ElicitationSchema = serde_json::from_value(approval_schema()).ok()?;
            let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
            let left = Duration::from_millis(row.expires_at_ms.saturating_sub(now).max(1));
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: question(row),
                requested_schema: schema,
            };
            let answer = self
                .peer
                .create_elicitation_with_timeout(params, Some(left))
                .await
                .ok()?;
            let action = serde_json::to_value(&answer.action).ok()?;
            asked(
                action.as_str(),
                answer.content.as_ref().unwrap_or(&Value::Null),
            )
        })
    }

    /// As the upstream server asked it, and the client's answer as it gave it.
    fn elicit(&self, request: Value, within: Duration) -> BoxFuture<'_, Option<Value>> {
        Box::pin(async move {
            let params: ElicitRequestParams = serde_json::from_value(request).ok()?;
            let mode = match &params {
                ElicitRequestParams::FormElicitationParams { .. } => {
                    rmcp::service::ElicitationMode::Form
                }
                _ => rmcp::service::ElicitationMode::Url,
            };
            if !self.peer.supported_elicitation_modes().contains(&mode) {
                return None;
            }
            let answer = self
                .peer
                .create_elicitation_with_timeout(params, Some(within))
                .await
                .ok()?;
            serde_json::to_value(answer).ok()
        })
    }
}

/// What the person said, from an elicitation's action and content: approve when they accepted
/// with `approve: true`; deny when they accepted otherwise (with their reason) or declined;
/// nothing when they set the question aside.
fn asked(action: Option<&str>, content: &Value) -> Option<Asked> {
    match action {
        Some("accept") if content.get("approve").and_then(Value::as_bool) == Some(true) => {
            Some(Asked::Approve)
        }
        Some("accept") => {
            let reason = content
                .get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.trim().is_empty())
                .unwrap_or("denied through the client");
            Some(Asked::Deny(
                warrant_core::text::sanitize(reason).into_owned(),
            ))
        }
        Some("decline") => Some(Asked::Deny("declined through the client".to_owned())),
        _ => None,
    }
}

/// The question a person is asked: the call, its exact arguments and where each came from.
fn question(row: &warrant_app::ApprovalRow) -> String {
    let mut args = serde_json::to_string_pretty(&*row.args).unwrap_or_default();
    if args.len() > SHOWN_ARGS_MAX {
        let mut cut = SHOWN_ARGS_MAX;
        while !args.is_char_boundary(cut) {
            cut -= 1;
        }
        args.truncate(cut);
        args.push_str(" …(cut)");
    }
    let provenance: Vec<String> = row
        .provenance
        .iter()
        .map(|l| format!("  {} <- {}", l.pointer, l.source))
        .collect();
    let provenance = if provenance.is_empty() {
        "  (no argument was traced to a tool's output)".to_owned()
    } else {
        provenance.join("\n")
    };
    warrant_core::text::sanitize(&format!(
        "Warrant holds `{}` on `{}` for your approval: {}.\n\nArguments (approval is bound to exactly these, once):\n{args}\n\nWhere the values came from:\n{provenance}\n\nRequest {} (also answerable with `warrant approve` / `warrant deny`).",
        row.tool, row.provider, row.reason, row.request
    ))
    .into_owned()
}

/// Bearer tokens and who each acts for.
#[derive(Debug, Default)]
pub struct Tokens {
    by_token: BTreeMap<String, (String, String)>,
}

impl Tokens {
    /// Reads each token of `config` from the environment variable that names it.
    pub fn from_config(config: &crate::GatewayConfig, operator: &str) -> Result<Tokens, String> {
        let mut by_token = BTreeMap::new();
        for (var, who) in &config.tokens {
            let token = read_env(var).ok_or_else(|| {
                format!("tokens.{var}: the environment variable `{var}` is not set")
            })?;
            if token.len() < 16 {
                return Err(format!(
                    "tokens.{var}: the token is shorter than 16 characters: too easy to guess"
                ));
            }
            by_token.insert(token, who.resolve(operator));
        }
        Ok(Tokens { by_token })
    }

    /// Whether requests must carry a token.
    pub fn required(&self) -> bool {
        !self.by_token.is_empty()
    }

    /// Who an `Authorization` header value acts for, when its token is known.
    fn principal(&self, header: &str) -> Option<(String, String)> {
        let token = header.strip_prefix("Bearer ")?;
        self.by_token.get(token.trim()).cloned()
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the gateway's tokens are read from the variables its config names, once at start"
)]
fn read_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

/// Serves `gateway` on stdin/stdout to one client until it closes the connection.
pub async fn serve_stdio(gateway: Arc<Gateway>) -> Result<(), String> {
    let server = GatewayServer::new(gateway.clone(), Arc::new(Tokens::default()));
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    // (The client is told of tool changes once it lists the tools, as over HTTP.)
    let done = running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP server stopped: {e}"));
    // The client left: its session records its end before the process exits.
    gateway.drain(DRAIN_GRACE).await;
    done
}

/// How much longer than an approval may wait an HTTP session stays open without a request.
const KEEP_ALIVE_MARGIN_MS: u64 = 60_000;

/// How long a session that lost its client has to record its end.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// Serves `gateway` over Streamable HTTP at `http://<listener>/mcp` until the process ends.
/// With `tokens`, a request without a known bearer token is refused (401).
pub async fn serve_http(
    gateway: Arc<Gateway>,
    tokens: Tokens,
    listener: tokio::net::TcpListener,
) -> Result<(), String> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let tokens = Arc::new(tokens);
    let (g, t) = (gateway.clone(), tokens.clone());
    // A session whose client went silent closes once idle for `limits.idle_ms` — never while
    // one of its calls may still be waiting for a person.
    let limits = &gateway.config.limits;
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive =
        Some(Duration::from_millis(limits.idle_ms.max(
            limits.approval_ttl_ms.saturating_add(KEEP_ALIVE_MARGIN_MS),
        )));
    // The MCP service accepts requests addressed to loopback hosts (against DNS rebinding);
    // a gateway bound elsewhere (with tokens) also accepts its own address.
    let mut config = StreamableHttpServerConfig::default();
    if let Ok(bound) = listener.local_addr()
        && !bound.ip().is_loopback()
    {
        config.allowed_hosts.push(bound.ip().to_string());
        config.allowed_hosts.push(bound.to_string());
    }
    let service = StreamableHttpService::new(
        move || Ok(GatewayServer::new(g.clone(), t.clone())),
        Arc::new(sessions),
        config,
    );
    let guard = tokens.clone();
    let router =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    let guard = guard.clone();
                    async move {
                        let known = request
                            .headers()
                            .get(axum::http::header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok())
                            .is_some_and(|h| guard.principal(h).is_some());
                        if guard.required() && !known {
                            return axum::response::IntoResponse::into_response((
                                axum::http::StatusCode::UNAUTHORIZED,
                                "a bearer token this gateway knows is required\n",
                            ));
                        }
                        next.run(request).await
                    }
                },
            ));
    let stopped = gateway.stopping.subscribe();
    // Each answer goes out at once (no Nagle delay waiting for the client's ACK).
    use axum::serve::ListenerExt as _;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let mut stopped = stopped;
            let _ = stopped.wait_for(|s| *s).await;
        })
        .await
        .map_err(|e| format!("the gateway's HTTP server stopped: {e}"));
    gateway.drain(DRAIN_GRACE).await;
    served
}

/// For as long as the gateway lives: when an upstream's tool list changes, lists again and
/// tells every connected client (`notifications/tools/list_changed`).
pub(crate) fn watch_changes(gateway: std::sync::Weak<Gateway>, changed: Arc<tokio::sync::Notify>) {
    spawn(async move {
        loop {
            changed.notified().await;
            let Some(gateway) = gateway.upgrade() else {
                return;
            };
            if matches!(gateway.refresh().await, Ok(true)) {
                for peer in gateway.peers() {
                    let _ = peer.notify_tool_list_changed().await;
                }
            }
        }
    });
}

#[expect(
    clippy::disallowed_methods,
    reason = "the gateway owns the task that watches its upstreams' tool lists"
)]
fn spawn(task: impl std::future::Future<Output = ()> + Send + 'static) {
    tokio::spawn(task);
}

//! The MCP surface: a Model Context Protocol server, reached over stdio as a child process or
//! at a Streamable HTTP endpoint, behind the Surface port (on the official `rmcp` SDK, which
//! negotiates the protocol version: 2025-06-18 or 2025-11-25 with today's servers).
//!
//! Observation: the server's tool list (names, descriptions, input schemas), versioned by its
//! digest. After a `notifications/tools/list_changed` the list is read again before a handle
//! is judged current, so a changed list or schema makes older handles stale. Effect class: the
//! spec's `effects` first (its author is the authority); otherwise from annotations with MCP's
//! defaults: a tool is a read only when a *trusted* server says `readOnlyHint: true`; from an
//! untrusted server (the default) every tool is a commit, so annotations never loosen policy.
//! The annotations travel to the authority as hints, marked as the server's claim unless it is
//! trusted. Host-supplied `inputs` are removed from every schema the decider sees and added to
//! each call of a tool that takes them; a call that sets one is refused.
//!
//! A stdio server starts in the spec's folder (or `cwd`) with a minimal environment — the
//! variables the official SDKs pass by default (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`,
//! `TERM`) plus `TMPDIR`, `TZ` and the locale — and exactly the variables the spec names.
//! Whatever it writes on stderr is shown line by line, sanitised. Transport failures are typed
//! for the engine: nothing sent, rejected by the server, answer lost (the connection closed or
//! the server died after the request went out), timed out, cancelled. Calls send the commit's idempotency
//! key in `_meta` (`warrant/idempotencyKey`); an `isError` result is a provider error; a
//! structured result is kept as it is, otherwise the content blocks. A commit whose answer was
//! lost in a crash is repeated only when a trusted server declared it `idempotentHint: true`.
//! A call the engine abandons (its timeout, a cancelled run) sends `notifications/cancelled`
//! for its request (rmcp cancels a dropped request).

use crate::group::ProcessGroup;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction, MetaObject,
    RequestMetaObject,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt as _;
use warrant_core::canon;
use warrant_core::event::{ActionRecord, Effect, ToolHints};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{
    Asked, BoxFuture, CallOutput, Invocation, Observation, Recovery, Surface, SurfaceError,
    SurfaceErrorKind,
};
use warrant_core::spec::McpSpec;

use crate::{Secrets, Vars, bound};

/// A connected MCP server.
pub struct McpSurface {
    /// The connection now: replaced when a stdio server that stopped is started again.
    link: Mutex<Arc<Link>>,
    /// The handler every connection shares: tool-list changes and who is told of them
    /// outlive a restart.
    watcher: Watcher,
    /// How a stdio server is started (again); `None` for an HTTP endpoint, which Warrant
    /// does not run.
    launch: Option<Arc<Launch>>,
    /// Held while the server is started again: one restart at a time.
    reviving: tokio::sync::Mutex<()>,
    /// Set once the server was shut down: it is not started again.
    shut: std::sync::atomic::AtomicBool,
    trusted: bool,
    output_bytes_max: usize,
    /// Whether a call's result is the server's whole answer (a front door that forwards it
    /// asked for that: [`McpSurface::whole_results`]).
    whole_result: bool,
    /// The spec's effect classes, by tool.
    effects: BTreeMap<String, Effect>,
    /// The spec's host-supplied inputs, by argument name.
    inputs: BTreeMap<String, Value>,
    /// The last tool list, and the change notifications received before it (the client's
    /// `Watcher` counts them): what a server that announces changes still offers until it
    /// says otherwise, and the version a handle must match to be current.
    seen: Mutex<Option<(Observation, u64)>>,
    /// The tools a trusted server declared idempotent (`idempotentHint: true`) in its last list.
    idempotent: Mutex<HashSet<String>>,
    /// Per tool of the last list, the host inputs it takes.
    takes: Mutex<HashMap<String, Vec<String>>>,
}

/// One connection to the server: the MCP client and, for a stdio server, the process group
/// it leads (ended when the link is dropped, after the client, whose transport closes the
/// server's input first).
struct Link {
    client: RunningService<RoleClient, Watcher>,
    group: Option<ProcessGroup>,
}

impl Link {
    /// Whether the connection ended (a stdio server that exited closed its output).
    fn closed(&self) -> bool {
        self.client.is_transport_closed()
    }
}

/// How a stdio server is started: its program, arguments, environment (settings already
/// resolved) and folder, and how what it prints is labelled and redacted.
struct Launch {
    name: String,
    program: String,
    args: Vec<String>,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    cwd: Option<String>,
    redact: Option<Arc<Secrets>>,
}

impl Launch {
    /// Starts the server (under the guard, where one is set) and initialises MCP.
    async fn start(&self, watcher: &Watcher) -> Result<Link, Unstarted> {
        let program = &self.program;
        // Under the guard where a front door set one: the server then ends with Warrant, also
        // when Warrant is killed outright.
        let (guard, guarded_args) = crate::guard::guarded(program, &self.args);
        let spawned = if guard == std::ffi::OsStr::new(program) {
            self.spawn(guard, guarded_args)
        } else {
            self.findable().map_err(Unstarted::for_good)?;
            // A guard that cannot be started (its binary replaced meanwhile) leaves the
            // server to the process group alone.
            self.spawn(guard, guarded_args).or_else(|_| {
                let plain = self.args.iter().map(std::ffi::OsString::from).collect();
                self.spawn(program.into(), plain)
            })
        };
        let (transport, stderr) =
            spawned.map_err(|e| Unstarted::for_good(format!("cannot start `{program}`: {e}")))?;
        // Held from here on: a handshake that fails (or is given up) ends the group too.
        let group = transport.id().map(ProcessGroup::of);
        if let Some(stderr) = stderr {
            forward_stderr(self.name.clone(), stderr, self.redact.clone());
        }
        let client = watcher
            .clone()
            .serve_with_lifecycle(transport, lifecycle())
            .await
            .map_err(|e| Unstarted {
                message: format!("`{program}`: {}", handshake_error(&e)),
                // It exited before it was ready (killed, crashed): worth another try.
                again: group.as_ref().is_some_and(ProcessGroup::leader_exited),
            })?;
        Ok(Link { client, group })
    }

    /// Starts the server, again after a growing backoff while it exits before it is ready
    /// (up to [`RESTARTS_MAX`] starts): the starts tried, and the link or why there is none.
    async fn start_patiently(&self, watcher: &Watcher) -> (u32, Result<Link, String>) {
        let mut wait = RESTART_BACKOFF;
        let mut attempt = 1;
        loop {
            match self.start(watcher).await {
                Ok(link) => return (attempt, Ok(link)),
                Err(e) if !e.again || attempt >= RESTARTS_MAX => return (attempt, Err(e.message)),
                Err(_) => {}
            }
            tokio::time::sleep(wait).await;
            wait *= 4;
            attempt += 1;
        }
    }
}

/// Why a server did not start, and whether another try may do better.
struct Unstarted {
    message: String,
    again: bool,
}

impl Unstarted {
    /// A failure another try would meet again (no such program, say).
    fn for_good(message: String) -> Unstarted {
        Unstarted {
            message,
            again: false,
        }
    }
}

impl Launch {
    /// Starts `program` with `args` in the server's folder and environment, leading a process
    /// group of its own (so whatever it starts, a wrapper script's real server, a grandchild,
    /// ends with it).
    fn spawn(
        &self,
        program: std::ffi::OsString,
        args: Vec<std::ffi::OsString>,
    ) -> std::io::Result<(TokioChildProcess, Option<tokio::process::ChildStderr>)> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).env_clear().envs(self.env.iter().cloned());
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
        wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
        TokioChildProcess::builder(wrapped)
            .stderr(std::process::Stdio::piped())
            .spawn()
    }

    /// `Ok` when the program can be started as named (a path from the server's folder, or
    /// a name on its `PATH`): said here, before a guard would start it, in the words a failed
    /// start has.
    fn findable(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt as _;
        let runnable = |p: &std::path::Path| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        let base = self.cwd.as_deref().map(std::path::Path::new);
        let found = if self.program.contains('/') {
            let p = std::path::Path::new(&self.program);
            runnable(&match base {
                Some(b) if p.is_relative() => b.join(p),
                _ => p.to_owned(),
            })
        } else {
            let path = self
                .env
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            std::env::split_paths(&path).any(|d| runnable(&d.join(&self.program)))
        };
        if found {
            Ok(())
        } else {
            Err(format!(
                "cannot start `{}`: {}",
                self.program,
                std::io::Error::from_raw_os_error(2)
            ))
        }
    }
}

/// Starts a restart tries.
const RESTARTS_MAX: u32 = 3;

/// The wait before the second start of a restart; each later one waits four times longer.
const RESTART_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// The client side's handler: counts tool-list change notifications, so an observation made
/// before one is no longer current; passes the server's questions to the person on, where a
/// front door has someone to ask.
#[derive(Clone, Default)]
struct Watcher {
    changes: Arc<AtomicU64>,
    /// Who else is told (`Surface::on_change`).
    listeners: Listeners,
    /// Who the server's questions to the person go to; `None`: the client is not declared
    /// able to be asked.
    elicit: Option<Arc<dyn crate::Elicit>>,
    /// The calls in flight, by a number of their own: the run and call a question made
    /// meanwhile belongs to.
    in_flight: Arc<Mutex<HashMap<u64, (RunId, CallId)>>>,
    /// The next such number.
    next_call: Arc<AtomicU64>,
    /// What was asked during each call, until the engine takes it (`Surface::asked`).
    asked: Arc<Mutex<AskedDuring>>,
}

/// What was asked during each call (by run and call), until the engine takes it.
type AskedDuring = HashMap<(RunId, CallId), Vec<Asked>>;

/// Longest question recorded, in characters (the rest is cut, and says so).
const ASKED_MESSAGE_MAX: usize = 4_096;

/// Largest schema or answer of a question recorded whole, in bytes of JSON.
const ASKED_BYTES_MAX: usize = 64 * 1024;

/// How long a person behind a front door may take to answer a server's question.
const ELICIT_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

impl Watcher {
    /// Notes `call` of `run` in flight until the guard is dropped; nothing when nobody can be
    /// asked (the server was not told it could ask).
    fn flying(&self, call: &Invocation) -> Option<InFlight> {
        self.elicit.as_ref()?;
        let key = self.next_call.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut f) = self.in_flight.lock() {
            f.insert(key, (call.run().clone(), call.call()));
        }
        Some(InFlight {
            key,
            in_flight: self.in_flight.clone(),
        })
    }

    /// The one call in flight, when exactly one is: a question comes from the call it is
    /// asked during, and with several in flight at once it cannot be told whose it is.
    fn the_call(&self) -> Option<(RunId, CallId)> {
        let f = self.in_flight.lock().ok()?;
        let mut calls = f.values();
        let one = calls.next()?.clone();
        calls.next().is_none().then_some(one)
    }

    async fn elicited(&self, request: ElicitRequestParams) -> ElicitResult {
        let decline = || ElicitResult::new(ElicitationAction::Decline);
        let Some(elicit) = &self.elicit else {
            return decline();
        };
        // Asked outside a call, or with several in flight: whose person to ask is not known,
        // and nobody is asked.
        let Some((run, call)) = self.the_call() else {
            return decline();
        };
        let (message, schema) = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message.clone(),
                serde_json::to_value(requested_schema).unwrap_or(Value::Null),
            ),
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                (message.clone(), serde_json::json!({ "url": url }))
            }
            _ => (String::new(), Value::Null),
        };
        let wire = serde_json::to_value(&request).unwrap_or(Value::Null);
        let answered = elicit
            .elicit(&run, wire, ELICIT_WITHIN)
            .await
            .and_then(|v| serde_json::from_value::<ElicitResult>(v).ok());
        let (result, action) = match answered {
            Some(r) => {
                let action = serde_json::to_value(&r.action)
                    .ok()
                    .and_then(|a| a.as_str().map(str::to_owned))
                    .unwrap_or_default();
                (r, action)
            }
            None => (decline(), "unasked".to_owned()),
        };
        // Recorded within bounds, as a result is: what a server or a client wrote is not
        // trusted to be small.
        let asked = Asked {
            message: warrant_core::text::cut(&message, ASKED_MESSAGE_MAX, "…(cut)").into_owned(),
            schema: Arc::new(bound(schema, ASKED_BYTES_MAX)),
            action,
            answer: result
                .content
                .clone()
                .map(|a| Arc::new(bound(a, ASKED_BYTES_MAX))),
        };
        // Kept for the engine while the call still flies: answered after its end (the call
        // timed out meanwhile), the run has recorded the call's end and it could never be taken.
        let flying = self
            .in_flight
            .lock()
            .is_ok_and(|f| f.values().any(|c| *c == (run.clone(), call)));
        if flying && let Ok(mut a) = self.asked.lock() {
            a.entry((run, call)).or_default().push(asked);
        }
        result
    }
}

/// A call in flight, forgotten when dropped.
struct InFlight {
    key: u64,
    in_flight: Arc<Mutex<HashMap<u64, (RunId, CallId)>>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut f) = self.in_flight.lock() {
            f.remove(&self.key);
        }
    }
}

type Listeners = Arc<Mutex<Vec<Arc<dyn Fn() + Send + Sync>>>>;

impl ClientHandler for Watcher {
    /// Declared able to be asked (form and URL elicitation) only when someone is.
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        if self.elicit.is_some() {
            info.capabilities.elicitation =
                serde_json::from_value(serde_json::json!({ "form": {}, "url": {} })).ok();
        }
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.elicited(request).await)
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changes.fetch_add(1, Ordering::SeqCst);
        let listeners = self.listeners.lock().map(|l| l.clone()).unwrap_or_default();
        for tell in listeners {
            tell();
        }
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

/// The variables of Warrant's own environment a stdio server gets without the spec naming
/// them: what the official SDKs pass by default, the temporary folder, the time zone and the
/// locale.
const INHERITED: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ", "LANG", "LANGUAGE",
];

/// Longest line of a server's stderr shown; the rest of it is cut.
const STDERR_LINE_MAX: usize = 4096;

/// How long connecting to an HTTP server may take before it counts as unreachable.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The innermost message of an error chain: what went wrong, without the wrappers' type names.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}

/// A failed handshake, in words.
fn handshake_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection during the MCP handshake (did it start? see what it printed)".to_owned()
        }
        ClientInitializeError::TransportError { error, context } => {
            format!("cannot talk to the server while {context}: {}", root_cause(error))
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("the server refused the MCP handshake: {}", data.message)
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => format!(
            "no MCP protocol version both sides speak (the server speaks {})",
            server_supported
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "the server's answer to the MCP handshake is not what the protocol expects".to_owned(),
    }
}

/// Whether a request that failed in the transport may have reached the server. Only what is
/// known not to have left is "not sent": a connection never made, a pipe to a child that is
/// gone, the transport's own queue closed. Anything else (an exchange broken after the request
/// went out, a server error status, an answer that cannot be read) may have delivered it.
fn send_failure(error: &rmcp::transport::DynamicTransportError) -> SurfaceErrorKind {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    if let Some(http) = error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return match http {
            StreamableHttpError::Client(e) if e.is_connect() => SurfaceErrorKind::NotSent,
            StreamableHttpError::TransportChannelClosed => SurfaceErrorKind::NotSent,
            StreamableHttpError::HttpStatus(s) if (400..500).contains(&s.status) => {
                SurfaceErrorKind::Rejected
            }
            _ => SurfaceErrorKind::AnswerLost,
        };
    }
    match error
        .error
        .downcast_ref::<std::io::Error>()
        .map(std::io::Error::kind)
    {
        Some(
            std::io::ErrorKind::BrokenPipe
            | std::io::ErrorKind::NotConnected
            | std::io::ErrorKind::ConnectionRefused,
        ) => SurfaceErrorKind::NotSent,
        _ => SurfaceErrorKind::AnswerLost,
    }
}

/// A failed request, typed for the engine: whether the request went out, and whether its
/// answer was lost.
fn request_error(e: ServiceError, what: &str) -> SurfaceError {
    match e {
        ServiceError::McpError(data) => SurfaceError::rejected(data.message.to_string()),
        ServiceError::TransportSend(error) => {
            let kind = send_failure(&error);
            let text = if kind == SurfaceErrorKind::NotSent {
                format!("cannot send {what} to the server: {}", root_cause(&error))
            } else {
                format!(
                    "the exchange for {what} broke off after it was sent: {}",
                    root_cause(&error)
                )
            };
            SurfaceError::new(kind, text)
        }
        ServiceError::Timeout { timeout } => SurfaceError::new(
            SurfaceErrorKind::TimedOut,
            format!("{what}: no answer within {} ms", timeout.as_millis()),
        ),
        ServiceError::Cancelled { .. } => {
            SurfaceError::new(SurfaceErrorKind::Cancelled, format!("{what} was cancelled"))
        }
        ServiceError::TransportClosed => SurfaceError::answer_lost(format!(
            "the connection to the server closed before it answered {what} (did the server stop?)"
        )),
        // Anything else came back after the request went out, and is not an answer.
        _ => SurfaceError::answer_lost(format!(
            "the server's answer to {what} is not what the protocol expects"
        )),
    }
}

impl McpSurface {
    /// Connects to the MCP server `spec` describes: starts `command` as a child process in
    /// `cwd` (stdio), or reaches `url` (Streamable HTTP), and initialises MCP. `name` labels
    /// what the server prints.
    pub async fn connect(name: &str, spec: &McpSpec, trusted: bool) -> Result<McpSurface, String> {
        McpSurface::connect_with(name, spec, trusted, Vars::Environment, None).await
    }

    /// The same, with `$NAME` settings read from `vars` and, when `redact` is given, every
    /// secret value hidden from what the server prints on stderr.
    pub async fn connect_with(
        name: &str,
        spec: &McpSpec,
        trusted: bool,
        vars: Vars<'_>,
        redact: Option<Arc<Secrets>>,
    ) -> Result<McpSurface, String> {
        McpSurface::connect_asking(name, spec, trusted, vars, redact, None).await
    }

    /// The same, telling the server the client can be asked when `elicit` is given: its
    /// questions to the person during a call go there, and each is recorded in the run.
    pub async fn connect_asking(
        name: &str,
        spec: &McpSpec,
        trusted: bool,
        vars: Vars<'_>,
        redact: Option<Arc<Secrets>>,
        elicit: Option<Arc<dyn crate::Elicit>>,
    ) -> Result<McpSurface, String> {
        let watcher = Watcher {
            elicit,
            ..Watcher::default()
        };
        let surface = match &spec.url {
            Some(url) => McpSurface::reach(url, &spec.headers, trusted, vars, watcher).await?,
            None => McpSurface::start(name, spec, trusted, vars, redact, watcher).await?,
        };
        let surface = McpSurface {
            effects: spec.effects.clone(),
            inputs: spec.inputs.clone(),
            output_bytes_max: spec
                .output_bytes_max
                .unwrap_or(crate::OUTPUT_BYTES_MAX_DEFAULT),
            ..surface
        };
        surface.listed().await
    }

    /// Starts `command` (program and arguments) as a child process with `env` and initialises
    /// MCP.
    pub async fn spawn(
        command: &[String],
        env: &BTreeMap<String, String>,
        trusted: bool,
    ) -> Result<McpSurface, String> {
        let spec = McpSpec {
            command: command.to_vec(),
            env: env.clone(),
            ..McpSpec::default()
        };
        McpSurface::connect("mcp", &spec, trusted).await
    }

    /// Connects to a Streamable HTTP endpoint and initialises MCP. Header values may name
    /// environment variables (`$NAME`, `${NAME}`).
    pub async fn connect_http(
        url: &str,
        headers: &BTreeMap<String, String>,
        trusted: bool,
    ) -> Result<McpSurface, String> {
        let spec = McpSpec {
            url: Some(url.to_owned()),
            headers: headers.clone(),
            ..McpSpec::default()
        };
        McpSurface::connect("mcp", &spec, trusted).await
    }

    async fn start(
        name: &str,
        spec: &McpSpec,
        trusted: bool,
        vars: Vars<'_>,
        redact: Option<Arc<Secrets>>,
        watcher: Watcher,
    ) -> Result<McpSurface, String> {
        let Some((program, args)) = spec.command.split_first() else {
            return Err("`mcp.command` is empty".into());
        };
        // INVARIANT (nothing leaves the box unasked): the child gets a minimal environment and
        // what the spec names, never Warrant's own secrets.
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
            .filter(|(k, _)| {
                k.to_str()
                    .is_some_and(|k| INHERITED.contains(&k) || k.starts_with("LC_"))
            })
            .collect();
        for (k, v) in &spec.env {
            let v = vars.expand(v).map_err(|e| format!("`mcp.env.{k}`: {e}"))?;
            env.push((k.into(), v.into()));
        }
        let launch = Arc::new(Launch {
            name: name.to_owned(),
            program: program.clone(),
            args: args.to_vec(),
            env,
            cwd: spec.cwd.clone(),
            redact,
        });
        let link = launch.start_patiently(&watcher).await.1?;
        let mut surface = McpSurface::with_link(link, watcher, trusted);
        surface.launch = Some(launch);
        Ok(surface)
    }

    async fn reach(
        url: &str,
        headers: &BTreeMap<String, String>,
        trusted: bool,
        vars: Vars<'_>,
        watcher: Watcher,
    ) -> Result<McpSurface, String> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("`mcp.headers`: `{k}` is not a header name"))?;
            let value = vars
                .expand(v)
                .map_err(|e| format!("`mcp.headers.{k}`: {e}"))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| format!("`mcp.headers.{k}`: not a valid header value"))?;
            value.set_sensitive(true);
            config.custom_headers.insert(name, value);
        }
        // Connecting is bounded here; every request is bounded by the engine.
        let http = warrant_http::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let client = watcher
            .clone()
            .serve_with_lifecycle(transport, lifecycle())
            .await
            .map_err(|e| format!("{url}: {}", handshake_error(&e)))?;
        let link = Link {
            client,
            group: None,
        };
        Ok(McpSurface::with_link(link, watcher, trusted))
    }

    /// Lists the tools once on connecting, so what the server declares is known before any
    /// observation (a run re-entered after a crash asks [`Surface::recovery`] first).
    async fn listed(self) -> Result<McpSurface, String> {
        match self.list().await {
            Ok(_) => Ok(self),
            // It stopped as it started: started again (which lists the tools), or not.
            Err(e) if e.kind == SurfaceErrorKind::Down => match self.restart().await.error {
                None => Ok(self),
                Some(e) => Err(e.message),
            },
            Err(e) => Err(e.message),
        }
    }

    fn with_link(link: Link, watcher: Watcher, trusted: bool) -> McpSurface {
        McpSurface {
            link: Mutex::new(Arc::new(link)),
            watcher,
            launch: None,
            reviving: tokio::sync::Mutex::new(()),
            shut: std::sync::atomic::AtomicBool::new(false),
            trusted,
            output_bytes_max: crate::OUTPUT_BYTES_MAX_DEFAULT,
            whole_result: false,
            effects: BTreeMap::new(),
            inputs: BTreeMap::new(),
            seen: Mutex::new(None),
            idempotent: Mutex::new(HashSet::new()),
            takes: Mutex::new(HashMap::new()),
        }
    }

    /// The connection now.
    fn link(&self) -> Option<Arc<Link>> {
        self.link.lock().ok().map(|l| l.clone())
    }

    /// The connection now, or why there is none to ask: a stdio server that stopped is
    /// `down` (nothing sent), for the engine to start it again.
    fn live_link(&self, what: &str) -> Result<Arc<Link>, SurfaceError> {
        let link = self
            .link()
            .ok_or_else(|| SurfaceError::not_sent("the connection's lock is poisoned"))?;
        if self.launch.is_some() && link.closed() {
            return Err(self.stopped(&format!("had stopped before {what} was sent")));
        }
        Ok(link)
    }

    /// The error for a request that found the stdio server stopped (`how`).
    fn stopped(&self, how: &str) -> SurfaceError {
        let program = self.launch.as_ref().map_or("", |l| l.program.as_str());
        SurfaceError::new(
            SurfaceErrorKind::Down,
            format!("the server (`{program}`) {how}"),
        )
    }

    /// A failed request of `link`, typed: a stdio server that stopped meanwhile makes a read
    /// (or a request known not to have left) `down`, to be asked again once it runs; a
    /// commit that may have been sent stays as it is (in doubt).
    async fn failed(&self, link: &Link, e: ServiceError, what: &str, read: bool) -> SurfaceError {
        let error = request_error(e, what);
        // A commit whose answer was lost stays so whatever the server's state: no wait.
        if self.launch.is_none()
            || !(error.kind == SurfaceErrorKind::NotSent
                || read && error.kind == SurfaceErrorKind::AnswerLost)
        {
            return error;
        }
        // The transport notices a server's exit when its output closes: give it a moment.
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(250);
        while !link.closed() && tokio::time::Instant::now() < until {
            tokio::time::sleep(crate::group::EXIT_POLL).await;
        }
        if link.closed() && (read || error.kind == SurfaceErrorKind::NotSent) {
            return self.stopped(&format!("stopped before it answered {what}"));
        }
        error
    }

    /// Starts a stdio server that stopped again: up to [`RESTARTS_MAX`] starts with a
    /// growing backoff, the tool list read again on the new connection.
    async fn restart(&self) -> warrant_core::ports::Restart {
        use warrant_core::ports::Restart;
        let Some(launch) = &self.launch else {
            return Restart {
                attempts: 0,
                error: None,
            };
        };
        let _one = self.reviving.lock().await;
        if self.shut.load(Ordering::SeqCst) {
            return Restart {
                attempts: 0,
                error: Some(SurfaceError::not_sent(format!(
                    "`{}` was shut down: nothing more is asked of it",
                    launch.program
                ))),
            };
        }
        if self.link().is_some_and(|l| !l.closed()) {
            return Restart {
                attempts: 0,
                error: None,
            };
        }
        let (attempts, started) = launch.start_patiently(&self.watcher).await;
        let listed = match started {
            Ok(link) => {
                if let Ok(mut now) = self.link.lock() {
                    *now = Arc::new(link);
                }
                if let Ok(mut seen) = self.seen.lock() {
                    *seen = None;
                }
                self.list().await.map(|_| ()).map_err(|e| e.message)
            }
            Err(e) => Err(e),
        };
        Restart {
            attempts,
            error: listed.err().map(|e| {
                let tries = if attempts == 1 {
                    "1 start".to_owned()
                } else {
                    format!("{attempts} starts")
                };
                SurfaceError::not_sent(format!(
                    "`{}` could not be started again ({tries}): {e}",
                    launch.program
                ))
            }),
        }
    }

    /// Closes the server's input and gives its process group time to exit, then SIGTERM and
    /// time again, then SIGKILL (MCP's order for stdio).
    async fn end(&self) {
        self.shut.store(true, Ordering::SeqCst);
        let Some(link) = self.link() else {
            return;
        };
        // The transport closes the server's input and reaps it once it exits.
        link.client.cancellation_token().cancel();
        if let Some(group) = &link.group {
            group.end().await;
        }
    }

    /// The same, keeping the server's whole answer as each call's result — its content
    /// blocks, `structuredContent`, `isError` and `_meta` as it sent them — instead of the
    /// structured result alone (or the content blocks when there is none): what a gateway
    /// forwards to its client unchanged, so provenance labels exactly what the client read.
    pub fn whole_results(mut self) -> McpSurface {
        self.whole_result = true;
        self
    }

    /// The protocol version the server agreed to, e.g. `2025-11-25`.
    pub fn protocol_version(&self) -> Option<String> {
        self.link()?
            .client
            .peer_info()
            .map(|i| i.protocol_version.to_string())
    }

    /// Keeps results up to `bytes` of JSON whole; larger ones are cut to their head and marked.
    pub fn with_output_bytes_max(mut self, bytes: usize) -> McpSurface {
        self.output_bytes_max = bytes;
        self
    }

    /// A tool's effect class ([`crate::effect_of`]).
    fn effect(&self, tool: &str, read_only: Option<bool>) -> Effect {
        crate::effect_of(&self.effects, self.trusted, tool, read_only)
    }

    async fn list(&self) -> Result<Observation, SurfaceError> {
        // Read before listing: a change that lands during the listing makes the next
        // observation new again.
        let changes = self.changes();
        let what = "the tool list request";
        let link = self.live_link(what)?;
        let tools = match link.client.list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => return Err(self.failed(&link, e, what, true).await),
        };
        let idempotent: HashSet<String> = tools
            .iter()
            .filter(|t| t.annotations.as_ref().and_then(|a| a.idempotent_hint) == Some(true))
            .map(|t| t.name.to_string())
            .collect();
        if let Ok(mut known) = self.idempotent.lock() {
            *known = idempotent;
        }
        let host: Vec<&str> = self.inputs.keys().map(String::as_str).collect();
        let mut takes = HashMap::new();
        let mut actions = Vec::with_capacity(tools.len());
        for t in tools {
            let schema = Value::Object((*t.input_schema).clone());
            let name = t.name.to_string();
            let taken: Vec<String> = host
                .iter()
                .filter(|h| schema.pointer(&format!("/properties/{h}")).is_some())
                .map(|h| (*h).to_owned())
                .collect();
            let offered = match warrant_core::projection::hide_inputs(&schema, &host) {
                Some(hidden) => hidden,
                None => schema,
            };
            takes.insert(name.clone(), taken);
            let hints = t.annotations.as_ref().map(|a| ToolHints {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
                trusted: self.trusted,
            });
            actions.push(ActionRecord {
                effect: self.effect(&name, t.annotations.as_ref().and_then(|a| a.read_only_hint)),
                name,
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Arc::new(offered),
                hints,
                origin: None,
            });
        }
        if let Ok(mut known) = self.takes.lock() {
            *known = takes;
        }
        let actions: Arc<[ActionRecord]> = actions.into();
        let listing: Vec<Value> = actions
            .iter()
            .map(|a| serde_json::json!([a.name, a.effect.to_string(), &*a.input_schema, a.hints]))
            .collect();
        let version =
            canon::digest(&Value::Array(listing)).trim_start_matches("sha256:")[..16].to_owned();
        let observation = Observation {
            version,
            actions,
            page: None,
        };
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some((observation.clone(), changes));
        }
        Ok(observation)
    }

    /// `notifications/tools/list_changed` received so far.
    fn changes(&self) -> u64 {
        self.watcher.changes.load(Ordering::SeqCst)
    }

    /// The last tool list and the change notifications received before it.
    fn last_seen(&self) -> Option<(Observation, u64)> {
        self.seen.lock().ok().and_then(|s| s.clone())
    }

    /// Whether the server said it announces changes to its tool list
    /// (`capabilities.tools.listChanged`).
    fn announces_changes(&self) -> bool {
        self.link()
            .and_then(|l| l.client.peer_info())
            .and_then(|i| i.capabilities.tools.as_ref().and_then(|t| t.list_changed))
            == Some(true)
    }

    /// What the server offers: its last list while a server that announces changes has
    /// announced none since (no round trip per decision), else listed now.
    async fn observe_now(&self) -> Result<Observation, SurfaceError> {
        if self.announces_changes()
            && self.link().is_some_and(|l| !l.closed())
            && let Some((observation, at)) = self.last_seen()
            && at == self.changes()
        {
            return Ok(observation);
        }
        self.list().await
    }

    async fn call(&self, call: Invocation) -> Result<CallOutput, SurfaceError> {
        let mut arguments = match &**call.args() {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(SurfaceError::invalid(format!(
                    "arguments must be an object, not {other}"
                )));
            }
        };
        // Host-supplied inputs: never the decider's to set; added where the tool takes them.
        if let Some(set) = self.inputs.keys().find(|k| arguments.contains_key(*k)) {
            return Err(SurfaceError::invalid(format!(
                "`{set}` is supplied by the host: the decider may not set it"
            )));
        }
        let taken = self
            .takes
            .lock()
            .ok()
            .and_then(|t| t.get(call.tool()).cloned())
            .unwrap_or_default();
        for k in taken {
            if let Some(v) = self.inputs.get(&k) {
                arguments.insert(k, v.clone());
            }
        }
        let mut params =
            CallToolRequestParams::new(call.tool().to_owned()).with_arguments(arguments);
        if call.effect() == Effect::Commit {
            let mut meta = serde_json::Map::new();
            meta.insert(
                "warrant/idempotencyKey".into(),
                Value::String(call.idempotency_key().to_owned()),
            );
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        let what = format!("the call of `{}`", call.tool());
        let link = self.live_link(&what)?;
        let _flying = self.watcher.flying(&call);
        let result = match link.client.call_tool(params).await {
            Ok(result) => result,
            Err(e) => {
                let read = call.effect() == Effect::Read;
                return Err(self.failed(&link, e, &what, read).await);
            }
        };
        let output = if self.whole_result {
            // As the server sent it: content blocks, structured content, error flag, `_meta`.
            serde_json::to_value(&result).unwrap_or(Value::Null)
        } else {
            match result.structured_content {
                Some(v) => v,
                None => serde_json::to_value(&result.content).unwrap_or(Value::Null),
            }
        };
        Ok(CallOutput {
            output: bound(output, self.output_bytes_max),
            is_error: result.is_error == Some(true),
        })
    }
}

/// Shows what a server writes on stderr, a line at a time, sanitised and labelled. The task
/// ends when the server closes its stderr (it exits); a failure to read or write ends it early
/// and only loses that diagnostic output.
#[expect(
    clippy::disallowed_methods,
    reason = "the MCP transport owns the task that drains its child's stderr"
)]
fn forward_stderr(name: String, stderr: tokio::process::ChildStderr, redact: Option<Arc<Secrets>>) {
    use tokio::io::AsyncBufReadExt;
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            let mut limited = (&mut reader).take(STDERR_LINE_MAX as u64);
            match limited.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = match &redact {
                Some(secrets) => secrets.redact(&text).into_owned(),
                None => text.into_owned(),
            };
            let text = text.trim_end();
            if !text.is_empty() {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "{name}: {}",
                    warrant_core::text::sanitize(text)
                );
            }
            // A line cut at the limit: skip the rest of it.
            if line.len() >= STDERR_LINE_MAX && !line.ends_with(b"\n") {
                let mut rest = Vec::new();
                if reader.read_until(b'\n', &mut rest).await.is_err() {
                    break;
                }
            }
        }
    });
}

impl Surface for McpSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(self.observe_now())
    }

    fn on_change(&self, changed: Arc<dyn Fn() + Send + Sync>) {
        if let Ok(mut l) = self.watcher.listeners.lock() {
            l.push(changed);
        }
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(self.call(call))
    }

    fn asked(&self, run: &RunId, call: CallId) -> Vec<Asked> {
        self.watcher
            .asked
            .lock()
            .ok()
            .and_then(|mut a| a.remove(&(run.clone(), call)))
            .unwrap_or_default()
    }

    fn revive(&self) -> BoxFuture<'_, warrant_core::ports::Restart> {
        Box::pin(self.restart())
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.end())
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
            // A server that stopped is judged by its last list: it is listed again when it
            // is started again, before the call goes out.
            if self
                .last_seen()
                .is_none_or(|(_, seen_changes)| seen_changes != self.changes())
                && self
                    .list()
                    .await
                    .is_err_and(|e| e.kind != SurfaceErrorKind::Down)
            {
                return false;
            }
            self.last_seen().is_some_and(|(o, _)| o.version == version)
        })
    }
}

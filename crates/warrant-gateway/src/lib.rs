//! Warrant's governed MCP gateway: an MCP server (stdio or Streamable HTTP) in front of other
//! MCP servers — or of Warrant's in-process providers — through which an outside client's
//! every `tools/call` passes the Bridge: schema check, argument provenance, policy, approval
//! bound to the exact arguments and consumed once, the durable intent, evidence in the log.
//!
//! Each client session is a run (`DESIGN.md`'s run, not a second kind of log): its spec has
//! one open step over the upstream servers (joined when there are several), and its decider
//! is the client — each `tools/call` is its next decision. So `warrant runs`, `show`,
//! `events --follow`, `report` and `replay --verify` work on a session, and a session's crash
//! is recovered as any run's: a call whose answer was lost is in doubt, never repeated.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use warrant_app::App;
use warrant_core::Spec;
use warrant_core::event::ActionRecord;
use warrant_engine::Surfaces;

pub mod config;
mod reply;
mod server;
mod session;

pub use config::{CONFIG_VERSION, GatewayConfig};
pub use server::{GatewayServer, Tokens, serve_http, serve_stdio};

/// A gateway: its upstream servers reached once, shared by every session.
pub struct Gateway {
    pub(crate) app: App,
    pub(crate) config: GatewayConfig,
    base: PathBuf,
    pub(crate) surfaces: Surfaces,
    offer: RwLock<Arc<Offer>>,
    /// Who a session acts for when no token says: tenant and user.
    principal: (String, String),
    /// The clients connected, told when the tools offered change.
    peers: Mutex<Vec<rmcp::service::Peer<rmcp::RoleServer>>>,
    /// Sessions whose run has not ended yet.
    live: tokio::sync::watch::Sender<usize>,
    /// Told when the gateway stops: every session closes.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    /// The sessions of stateless clients, by tenant, user and client name.
    pub(crate) stateless:
        Mutex<std::collections::HashMap<(String, String, String), Arc<session::SessionHandle>>>,
    /// Counts the changes of what is offered (a session holding a call for approval watches
    /// it: a held tool whose schema changed is not approved as it was).
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    /// What each tenant's sessions used (quotas).
    pub(crate) meter: Arc<warrant_app::Meter>,
    /// What the sessions' runs did (`/metrics`, the same names as a server's).
    pub counters: Arc<warrant_app::Counters>,
    /// Who each session's upstream questions go to.
    pub(crate) elicitations: Arc<session::Elicitations>,
}

impl warrant_app::Driving for Gateway {
    fn counters(&self) -> &warrant_app::Counters {
        &self.counters
    }

    /// The sessions whose run has not ended.
    fn held(&self) -> usize {
        *self.live.borrow()
    }
}

/// A session counted as live.
pub(crate) struct LiveSession {
    gateway: Arc<Gateway>,
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        self.gateway.live.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// What the gateway offers now: the tools, and the spec of a session that starts now.
pub(crate) struct Offer {
    pub(crate) spec: Arc<Spec>,
    pub(crate) tools: Vec<Offered>,
    /// The observation it was made from.
    version: String,
}

/// One tool offered.
pub(crate) struct Offered {
    /// As the client sees it.
    pub(crate) client: String,
    /// As the run has it (`server.tool` when several servers are joined).
    pub(crate) engine: String,
    pub(crate) action: ActionRecord,
    /// Repeating it is harmless: a read, or a commit a trusted upstream declares idempotent.
    pub(crate) idempotent: bool,
}

impl Offer {
    /// The input schema of the tool the engine calls `engine`, while it is offered.
    pub(crate) fn schema_of(&self, engine: &str) -> Option<&serde_json::Value> {
        self.tools
            .iter()
            .find(|t| t.engine == engine)
            .map(|t| &*t.action.input_schema)
    }

    /// The engine's name for the tool a client calls `name`.
    pub(crate) fn engine_name(&self, name: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|t| t.client == name)
            .map(|t| t.engine.as_str())
    }
}

impl Gateway {
    /// Which tools of `offer` a session of `tenant/user` through `client` could ever be
    /// allowed to call: a tool every call of which the session's rules would refuse (Cedar,
    /// partially evaluated with the arguments and context unknown) is not listed. Every call
    /// is still ruled on; when the rules cannot be built here, every tool is listed.
    pub(crate) fn visible_to(
        &self,
        offer: &Offer,
        tenant: &str,
        user: &str,
        client: &str,
    ) -> impl Fn(&Offered) -> bool + use<> {
        let authority = self
            .app
            .engine_acting_for(tenant, user)
            .authority_for(&offer.spec)
            .ok();
        let principal = warrant_core::event::Principal {
            tenant: tenant.to_owned(),
            user: user.to_owned(),
            // As the session's run names its decider.
            agent: warrant_core::DeciderRef::new(
                warrant_core::DeciderKind::Client,
                warrant_core::text::sanitize(client)
                    .chars()
                    .take(120)
                    .collect::<String>(),
            )
            .to_string(),
        };
        let provider = self.config.step_provider();
        let trusted = offer.spec.trusts(&provider);
        move |t: &Offered| {
            authority.as_ref().is_none_or(|a| {
                a.may_ever_allow(&warrant_core::ports::ToolProbe {
                    principal: &principal,
                    provider: &provider,
                    tool: &t.engine,
                    effect: t.action.effect,
                    trusted,
                    schema: &t.action.input_schema,
                })
            })
        }
    }

    /// `Ok` when `tenant` may make a call now (and, with `new_session`, open a session);
    /// else the quota it reached.
    pub(crate) fn within_quota(
        &self,
        tenant: &str,
        new_session: bool,
    ) -> Result<(), warrant_app::Exceeded> {
        let Some(quota) = self
            .config
            .quotas
            .get(tenant)
            .or_else(|| self.config.quotas.get("*"))
        else {
            return Ok(());
        };
        let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
        if new_session {
            self.meter.may_start(tenant, quota, now)
        } else {
            self.meter.may_call(tenant, quota, now)
        }
    }

    /// Reaches every upstream server of `config` (paths in it relative to `base`), checks its
    /// policies, and lists what it offers. `operator` is who sessions act for when the config
    /// names nobody.
    pub async fn start(
        app: App,
        config: GatewayConfig,
        base: &Path,
        operator: &str,
    ) -> Result<Arc<Gateway>, String> {
        let draft = config.draft(Vec::new(), base)?;
        warrant_app::check_policies(&draft, &[]).map_err(|e| e.to_string())?;
        // An upstream server's questions to the person go to the client of the session whose
        // call it is answering.
        let elicitations = Arc::new(session::Elicitations::default());
        // INVARIANT (front doors forward faithfully): a client is answered with its upstream's
        // whole answer, recorded as it came.
        let surfaces = warrant_app::connect_with(
            &draft,
            app.deciders().registry(),
            warrant_app::start_bound(&draft, 0),
            true,
            Some(elicitations.clone() as Arc<dyn warrant_surfaces::Elicit>),
        )
        .await
        .map_err(|e| e.to_string().replace("provider `", "server `"))?;
        let principal = config.principal.resolve(operator);
        let offer = make_offer(&config, base, &surfaces).await?;
        let gateway = Arc::new(Gateway {
            app,
            config,
            base: base.to_path_buf(),
            surfaces,
            offer: RwLock::new(Arc::new(offer)),
            principal,
            peers: Mutex::new(Vec::new()),
            live: tokio::sync::watch::Sender::new(0),
            stopping: tokio::sync::watch::Sender::new(false),
            changes: tokio::sync::watch::Sender::new(0),
            stateless: Mutex::new(std::collections::HashMap::new()),
            meter: Arc::default(),
            counters: Arc::default(),
            elicitations,
        });
        // An upstream's `listChanged` reaches every client (after the gateway lists again).
        let changed = Arc::new(tokio::sync::Notify::new());
        let tell = changed.clone();
        for surface in gateway.surfaces.values() {
            let tell = tell.clone();
            surface.on_change(Arc::new(move || tell.notify_one()));
        }
        server::watch_changes(Arc::downgrade(&gateway), changed);
        Ok(gateway)
    }

    /// Closes every session (`closed` by the gateway) and waits, up to `grace`, until each
    /// one's run has recorded its end.
    pub async fn stop(&self, grace: Duration) {
        self.stopping.send_replace(true);
        self.drain(grace).await;
    }

    /// Ends the upstream providers' connections in order (a stdio server: its input closed,
    /// a wait, SIGTERM, SIGKILL), once the gateway serves no more.
    pub async fn shutdown_providers(&self) {
        warrant_engine::shutdown(&self.surfaces).await;
    }

    /// Waits, up to `grace`, until every session's run has recorded its end (a stdio client
    /// that left: its session closes before the process exits).
    pub async fn drain(&self, grace: Duration) {
        let mut live = self.live.subscribe();
        let _ = tokio::time::timeout(grace, live.wait_for(|n| *n == 0)).await;
    }

    /// Counts a session as live until the guard is dropped.
    pub(crate) fn session_guard(self: &Arc<Self>) -> LiveSession {
        self.live.send_modify(|n| *n += 1);
        LiveSession {
            gateway: self.clone(),
        }
    }

    /// Remembers a connected client, to tell it when the tools change.
    pub(crate) fn connected(&self, peer: rmcp::service::Peer<rmcp::RoleServer>) {
        if let Ok(mut peers) = self.peers.lock() {
            peers.retain(|p| !p.is_transport_closed());
            peers.push(peer);
        }
    }

    /// The clients connected now.
    pub(crate) fn peers(&self) -> Vec<rmcp::service::Peer<rmcp::RoleServer>> {
        self.peers
            .lock()
            .map(|p| {
                p.iter()
                    .filter(|p| !p.is_transport_closed())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Closes the sessions of this gateway that a stopped gateway process left running: each
    /// is re-entered, its call in flight (if any) recorded in doubt, never repeated, and the
    /// run ends `closed` — or, with an effect in doubt, waits for its reconciliation. Returns
    /// each run and whether it ended.
    pub async fn close_interrupted(&self) -> Result<Vec<(warrant_core::ids::RunId, bool)>, String> {
        let mut closed = Vec::new();
        for run in self.app.resumable().await.map_err(|e| e.to_string())? {
            let Ok(Some(summary)) = self.app.runs_index().summary(&run).await else {
                continue;
            };
            if summary.spec_id != self.config.id || summary.kind() != warrant_core::RunKind::Session
            {
                continue;
            }
            let result = self.app.reenter(&run).await.map_err(|e| e.to_string())?;
            closed.push((run, result.outcome.is_some()));
        }
        Ok(closed)
    }

    /// The spec a session starting now runs.
    pub(crate) fn spec(&self) -> Arc<Spec> {
        self.offer().spec.clone()
    }

    /// What is offered now.
    pub(crate) fn offer(&self) -> Arc<Offer> {
        match self.offer.read() {
            Ok(o) => o.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The tools offered, as clients see them.
    pub fn tools(&self) -> Vec<String> {
        self.offer()
            .tools
            .iter()
            .map(|t| t.client.clone())
            .collect()
    }

    /// The gateway's id (every session's spec id).
    pub fn id(&self) -> &str {
        &self.config.id
    }

    /// Lists the upstreams' tools again; `true` when what is offered changed (sessions that
    /// start from now on run the new spec; a session already running keeps its own).
    pub async fn refresh(&self) -> Result<bool, String> {
        let offer = make_offer(&self.config, &self.base, &self.surfaces).await?;
        let changed = offer.version != self.offer().version;
        if changed && let Ok(mut o) = self.offer.write() {
            *o = Arc::new(offer);
        }
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
        Ok(changed)
    }
}

/// Observes the session step's provider and makes the tool table and the session spec.
async fn make_offer(
    config: &GatewayConfig,
    base: &Path,
    surfaces: &Surfaces,
) -> Result<Offer, String> {
    let provider = config.step_provider();
    let surface = surfaces
        .get(&provider)
        .ok_or_else(|| format!("no upstream `{provider}` was reached"))?;
    let limit = Duration::from_millis(config.limits.call_timeout_ms);
    let observed = tokio::time::timeout(limit, surface.observe())
        .await
        .map_err(|_| {
            format!(
                "the upstream servers did not list their tools within {} ms",
                limit.as_millis()
            )
        })?
        .map_err(|e| format!("listing the upstream servers' tools: {e}"))?;
    let joined = config.servers.len() > 1;
    let short = |engine: &str| -> String {
        match engine.split_once('.') {
            Some((_, tool)) if joined => tool.to_owned(),
            _ => engine.to_owned(),
        }
    };
    let mut tools: Vec<Offered> = Vec::new();
    for action in observed.actions.iter() {
        let engine = action.name.clone();
        let plain = short(&engine);
        let shared = observed
            .actions
            .iter()
            .filter(|a| short(&a.name) == plain)
            .count()
            > 1;
        let client = if shared { engine.clone() } else { plain };
        let idempotent = action.effect == warrant_core::event::Effect::Read
            || action
                .hints
                .as_ref()
                .is_some_and(|h| h.trusted && h.idempotent == Some(true));
        tools.push(Offered {
            client,
            engine,
            action: action.clone(),
            idempotent,
        });
    }
    if let Some(wanted) = &config.tools {
        let mut unknown = Vec::new();
        let mut kept = Vec::new();
        for w in wanted {
            let server_form = |t: &Offered| !joined && format!("{provider}.{}", t.engine) == *w;
            match tools
                .iter()
                .position(|t| t.client == *w || t.engine == *w || server_form(t))
            {
                Some(i) => kept.push(i),
                None => unknown.push(w.clone()),
            }
        }
        if !unknown.is_empty() {
            let offered: Vec<&str> = tools.iter().map(|t| t.client.as_str()).collect();
            return Err(format!(
                "tools: the upstream servers offer no {} (they offer: {})",
                unknown
                    .iter()
                    .map(|u| format!("`{u}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                offered.join(", ")
            ));
        }
        tools = tools
            .into_iter()
            .enumerate()
            .filter(|(i, _)| kept.contains(i))
            .map(|(_, t)| t)
            .collect();
    }
    if tools.is_empty() {
        return Err("the upstream servers offer no tools to serve".to_owned());
    }
    let spec = config.session_spec(tools.iter().map(|t| t.engine.clone()).collect(), base)?;
    Ok(Offer {
        spec: Arc::new(spec),
        tools,
        version: observed.version,
    })
}

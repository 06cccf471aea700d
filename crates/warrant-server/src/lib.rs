//! `warrant serve`: the control and observation service. One process executes runs on its own
//! runtime through the application layer (`warrant_app`), the same path as the CLI, over the
//! same store: a versioned JSON API under `/v1` (documented at `/v1/openapi.json`), a stream
//! of each run's events, approvals bound to the arguments a person saw, and a web console.
//!
//! On start it re-enters every run no process drives that can go on; on SIGTERM or Ctrl-C it
//! stops accepting, gives the runs it drives a bounded time to reach a point where they wait
//! or end, and leaves the rest to re-entry at the next start.

mod api;
pub mod auth;
mod console;
mod console_schedules;
mod console_start;
mod hidden;
mod links;
pub mod metrics;
mod openapi;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod problem;
pub mod telemetry;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use warrant_app::{App, Deciders};
use warrant_core::ports::EventStore;

pub use auth::{Principal, Principals, Role, token_digest};
pub use problem::Problem;

/// How a server is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen. Anything but loopback needs principals.
    pub listen: SocketAddr,
    /// New runs are recorded and left to the workers sharing the store (`warrant worker`),
    /// which also carry on answered and interrupted runs: a fleet's server drives nothing.
    pub queue: bool,
    /// Bearer tokens to principals; `None`: one local principal, loopback only.
    pub principals: Option<PathBuf>,
    /// The folder specs, scripts and policies named by requests are read from.
    pub specs: Option<PathBuf>,
    /// The providers and models the operator registered (`--providers`), with their secrets.
    pub registry: Arc<warrant_app::Registry>,
    /// The operator's policy floor (`--policy`): Cedar files every run obeys besides its own.
    pub floor: Vec<PathBuf>,
    /// Whether the principal a run acts for may approve its requests (default: no).
    pub self_approval: bool,
    /// Most runs held at once (driving or waiting).
    pub max_runs: usize,
    /// How long a waiting run is held with its providers connected before it is let go
    /// (the answer re-enters it).
    pub hold_waiting: Duration,
    /// A model capability table for live deciders.
    pub models: Option<PathBuf>,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// How long in-flight work gets to settle at shutdown.
    pub grace: Duration,
    /// How long a client has to send a request's headers, and its body: a slower one is
    /// cut off (408 for a body).
    pub client_timeout: Duration,
    /// Where to export traces, if anywhere.
    #[cfg(feature = "otlp")]
    pub otlp: Option<otlp::Settings>,
    /// The build of the program serving, named in the `run_started` of every run it starts.
    pub build: Option<warrant_core::event::BuildInfo>,
    /// The operator's webhooks (`--webhooks FILE`): the server delivers the store's notices
    /// to them, and answers their signed approve and deny links.
    pub webhooks: Option<Arc<warrant_app::webhooks::Webhooks>>,
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration is at fault.
    #[error("{0}")]
    Invalid(String),
    /// Something failed (binding, the store).
    #[error("{0}")]
    Failed(String),
}

/// What every handler shares.
pub(crate) struct Shared {
    pub(crate) app: App,
    pub(crate) deciders: Deciders,
    pub(crate) principals: Principals,
    /// The operator's specs folder.
    pub(crate) catalog: Option<warrant_app::Catalog>,
    pub(crate) runner: Arc<warrant_app::Supervisor>,
    pub(crate) body_limit: usize,
    pub(crate) client_timeout: Duration,
    /// Keys the console's CSRF tokens.
    pub(crate) secret: [u8; 32],
    pub(crate) ready: AtomicBool,
    /// Held while a run with an `Idempotency-Key` is being started (from the key's look-up
    /// in the store to the run's first event), so two of this server's requests never race
    /// for one key; between servers the store decides (`api::start_run`).
    pub(crate) starting: tokio::sync::Mutex<()>,
    /// The operator's webhooks, if any.
    pub(crate) webhooks: Option<Arc<warrant_app::webhooks::Webhooks>>,
}

impl Shared {
    /// Counts, for quotas, the runs of the last window and every run not ended: the runs a
    /// tenant holds, and what it started, called and spent lately. The number of runs read.
    async fn seed_meter(&self) -> Result<usize, Problem> {
        let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
        let since = now.saturating_sub(warrant_app::quota::WINDOW_MS_DEFAULT);
        let mut seen = std::collections::HashSet::new();
        let mut queries: Vec<warrant_core::ports::RunQuery> = warrant_core::RunStatus::LIVE_STORED
            .into_iter()
            .map(|s| warrant_core::ports::RunQuery {
                status: Some(s),
                ..Default::default()
            })
            .collect();
        queries.push(warrant_core::ports::RunQuery {
            since_ms: Some(since),
            ..Default::default()
        });
        for query in queries {
            let page = self
                .app
                .runs_index()
                .runs(query)
                .await
                .map_err(warrant_app::AppError::from)?;
            for r in page.runs {
                if !seen.insert(r.run_id.clone()) {
                    continue;
                }
                let Some(tenant) = self.tenant_of(&r.run_id).await? else {
                    continue;
                };
                let events: Vec<_> = self
                    .app
                    .log_reader()
                    .read(&r.run_id, 1)
                    .await
                    .map_err(warrant_app::AppError::from)?
                    .into_iter()
                    .map(|s| s.event)
                    .collect();
                self.runner.meter.seed(&tenant, &r.run_id, &events);
            }
        }
        Ok(seen.len())
    }
}

/// Registers what no caller is told: the server's own paths and the operator's secrets.
fn hide_own_paths(catalog: Option<&warrant_app::Catalog>, registry: &warrant_app::Registry) {
    let cwd = std::env::current_dir().ok();
    let home = std::env::home_dir();
    let mut paths: Vec<(&std::path::Path, &'static str)> = Vec::new();
    if let Some(c) = catalog {
        paths.push((c.root(), "specs"));
    }
    if let Some(f) = registry.folder() {
        paths.push((f, "<providers>"));
    }
    if let Some(d) = cwd.as_deref() {
        paths.push((d, "<server>"));
    }
    if let Some(h) = home.as_deref() {
        paths.push((h, "~"));
    }
    hidden::register(&paths, Some(registry.secrets()));
}

/// The run supervisor `config` asks for.
fn runner(app: &App, config: &Config) -> Result<warrant_app::Supervisor, ServerError> {
    let mut runner = warrant_app::Supervisor::new(app.clone(), config.max_runs)
        .holding_waiting(config.hold_waiting);
    if config.queue {
        runner = runner.queueing();
    }
    #[cfg(feature = "otlp")]
    if let Some(settings) = &config.otlp {
        return otlp::observe(runner, settings).map_err(ServerError::Invalid);
    }
    Ok(runner)
}

/// A server bound to its address, not yet serving.
pub struct Server {
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    grace: Duration,
    client_timeout: Duration,
}

impl Server {
    /// Checks `config`, opens the store and binds the address.
    pub async fn bind(config: Config, store: Arc<dyn EventStore>) -> Result<Server, ServerError> {
        let principals = match &config.principals {
            Some(path) => Principals::from_file(path).map_err(ServerError::Invalid)?,
            None => {
                if !config.listen.ip().is_loopback() {
                    return Err(ServerError::Invalid(format!(
                        "`--listen {}` is not a loopback address: without `--principals FILE` \
                         anyone who reaches it could run and approve; give principals, or \
                         listen on 127.0.0.1",
                        config.listen
                    )));
                }
                Principals::Local
            }
        };
        if config.max_runs == 0 {
            return Err(ServerError::Invalid(
                "`--max-runs` must be at least 1".into(),
            ));
        }
        let catalog = config
            .specs
            .as_deref()
            .map(warrant_app::Catalog::open)
            .transpose()
            .map_err(|e| ServerError::Invalid(e.to_string()))?;
        hide_own_paths(catalog.as_ref(), &config.registry);
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| ServerError::Failed(format!("cannot listen on {}: {e}", config.listen)))?;
        let deciders = Deciders::new(config.models.clone()).with_registry(config.registry.clone());
        let mut app = App::new(store, deciders.clone());
        if let Some(build) = &config.build {
            app = app.with_build(build.clone());
        }
        let app = app
            .with_floor(config.floor.clone())
            .map_err(|e| ServerError::Invalid(e.to_string()))?
            // The one local principal (no principals file, loopback only) is the operator at
            // their own machine: it approves its own runs.
            .with_self_approval(config.self_approval || config.principals.is_none());
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| ServerError::Failed(format!("no randomness for CSRF tokens: {e}")))?;
        let shared = Arc::new(Shared {
            runner: Arc::new(runner(&app, &config)?),
            app,
            deciders,
            principals,
            catalog,
            body_limit: config.body_limit,
            client_timeout: config.client_timeout,
            secret,
            ready: AtomicBool::new(false),
            starting: tokio::sync::Mutex::new(()),
            webhooks: config.webhooks.clone(),
        });
        Ok(Server {
            listener,
            shared,
            grace: config.grace,
            client_timeout: config.client_timeout,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener
            .local_addr()
            .map_err(|e| ServerError::Failed(e.to_string()))
    }

    /// Serves until `shutdown` resolves: re-enters the runs that can go on, then answers
    /// requests; at shutdown, stops accepting and gives runs `grace` to settle.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let shared = self.shared.clone();
        let background = async {
            // What each tenant used before this process started: its quotas count it.
            match shared.seed_meter().await {
                Ok(n) if n > 0 => tracing::info!(runs = n, "counted the tenants' recent runs"),
                Ok(_) => {}
                Err(p) => {
                    tracing::warn!(problem = %p.detail, "counting the tenants' recent runs failed")
                }
            }
            match shared.runner.reenter_all().await {
                Ok(n) if n > 0 => tracing::info!(runs = n, "re-entered the runs that can go on"),
                Ok(_) => {}
                Err(p) => tracing::error!(problem = %p, "re-entering runs failed"),
            }
            // Runs that wait with no process holding them: their approvals' expiries are
            // recorded on time.
            if let Err(p) = shared.runner.remember_expiries().await {
                tracing::warn!(problem = %p, "looking for waiting runs' expiries failed");
            }
            shared.ready.store(true, Ordering::SeqCst);
            let mut copies_failed = 0;
            let health = async {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let failures = shared.app.health().checkpoint_failures();
                    if let Some(failed) = newly_failed(&mut copies_failed, failures) {
                        tracing::warn!(
                            failed = failed.count,
                            error = failed.last.as_deref().unwrap_or("unknown"),
                            "the store could not copy its write-ahead log back into its file: the commits are safe in the log, which grows until a copy succeeds"
                        );
                    }
                }
            };
            // The store's notices go out to the operator's webhooks, if any.
            let deliver = async {
                let Some(hooks) = &shared.webhooks else {
                    return;
                };
                match warrant_app::webhooks::Deliverer::new(shared.app.clone(), hooks.clone()) {
                    Ok(d) => Arc::new(d).run(std::future::pending()).await,
                    Err(e) => tracing::error!(error = %e, "webhooks: not delivering"),
                }
            };
            // The store's schedules start their due ticks' runs.
            let schedules = shared.app.scheduler(shared.runner.clone()).run(
                Arc::new(warrant_engine::SystemClock),
                std::future::pending(),
            );
            // Runs answered by another process are taken up as the store tells of its
            // commits; sleeping runs are woken when their time comes; the store's health is
            // looked at each second.
            tokio::join!(
                shared.runner.watch_answers(),
                shared.runner.watch_timers(),
                health,
                deliver,
                schedules
            );
        };
        let router = router(self.shared.clone());
        let served = accept(self.listener, router, self.client_timeout, shutdown);
        let result = tokio::select! {
            r = served => r,
            () = background => Ok(()),
        };
        self.shared.runner.stop(self.grace).await;
        result
    }
}

/// The store's failed copies of its write-ahead log when more failed than `seen` (which
/// becomes their count): what the server's log tells once, not at every look.
fn newly_failed(
    seen: &mut u64,
    now: Option<warrant_core::ports::CheckpointFailures>,
) -> Option<warrant_core::ports::CheckpointFailures> {
    let failed = now.filter(|f| f.count > *seen)?;
    *seen = failed.count;
    Some(failed)
}

/// Accepts connections until `shutdown`, each served over HTTP/1.1 with a deadline for the
/// request's headers (a client that trickles them is disconnected); then lets the requests in
/// progress finish (event streams end with the server).
async fn accept(
    listener: tokio::net::TcpListener,
    router: Router,
    client_timeout: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(client_timeout);
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors, a reset before accept: wait a moment, go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Events are small writes that must leave at once, not wait for the peer's ACK.
        let _ = stream.set_nodelay(true);
        let service = router.clone();
        let service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                // What the request log needs, taken only when it is written.
                let logged = tracing::enabled!(tracing::Level::DEBUG).then(|| {
                    (
                        request.method().clone(),
                        request.uri().path().to_owned(),
                        warrant_core::metrics::Stopwatch::start(),
                    )
                });
                let answer = tower_service::Service::call(&mut service.clone(), request);
                async move {
                    let response = answer.await;
                    if let (Ok(r), Some((method, path, began))) = (&response, logged) {
                        tracing::debug!(
                            %method,
                            path,
                            status = r.status().as_u16(),
                            micros = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX),
                            "answered"
                        );
                    }
                    response
                }
            });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        #[expect(
            clippy::disallowed_methods,
            reason = "the server owns the task that serves each connection"
        )]
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    drop(listener);
    // Requests in progress get a moment; event streams would otherwise hold the shutdown.
    let _ = tokio::time::timeout(Duration::from_secs(2), graceful.shutdown()).await;
    Ok(())
}

/// The routes.
fn router(shared: Arc<Shared>) -> Router {
    let limit = shared.body_limit;
    Router::new()
        .route("/v1/runs", post(api::start_run).get(api::list_runs))
        .route("/v1/runs/{id}", get(api::get_run))
        .route("/v1/runs/{id}/report", get(api::get_report))
        .route("/v1/runs/{id}/events", get(api::events))
        .route("/v1/runs/{id}/cancel", post(api::cancel))
        .route("/v1/runs/{id}/resume", post(api::resume))
        .route("/v1/runs/{id}/calls/{call}/reconcile", post(api::reconcile))
        .route("/v1/approvals", get(api::approvals))
        .route("/v1/approvals/{id}/approve", post(api::approve))
        .route("/v1/approvals/{id}/deny", post(api::deny))
        .route("/v1/audit", get(api::audit))
        .route("/v1/specs", get(api::specs))
        .route("/v1/grants", get(api::grants).post(api::add_grant))
        .route("/v1/questions", get(api::questions))
        .route("/v1/questions/{id}/answer", post(api::answer_question))
        .route("/v1/grants/{id}/revoke", post(api::revoke_grant))
        .route("/v1/schedules", get(api::schedules))
        .route("/v1/schedules/{id}/pause", post(api::pause_schedule))
        .route("/v1/schedules/{id}/resume", post(api::resume_schedule))
        .route("/v1/openapi.json", get(openapi::document))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(console::routes())
        .merge(links::routes())
        .fallback(|| async { Problem::not_found("nothing here (the API is under /v1)") })
        .method_not_allowed_fallback(|| async { Problem::method_not_allowed() })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(same_origin))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(shared)
}

/// Refuses a request that changes something when a browser says another site sent it: a
/// page elsewhere cannot make a logged-in (or a loopback) browser start, answer or cancel.
/// Clients that are not browsers send neither header and are judged by their token alone.
async fn same_origin(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let safe = matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    if !safe {
        let h = request.headers();
        let cross_site = h
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v != "same-origin" && v != "none");
        let host = h.get(header::HOST).and_then(|v| v.to_str().ok());
        let foreign_origin = h
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            // `null`: an origin the browser keeps to itself; `Sec-Fetch-Site` says the rest.
            .filter(|o| *o != "null")
            .is_some_and(|o| {
                let authority = o.split_once("://").map_or(o, |(_, a)| a);
                Some(authority) != host
            });
        if cross_site || foreign_origin {
            return Problem::forbidden("a request from another site: refused").into_response();
        }
    }
    next.run(request).await
}

/// Headers every answer carries: no framing, no sniffing, scripts only from this server.
async fn security_headers(mut response: axum::response::Response) -> axum::response::Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// `GET /readyz`: the store answers and start-up re-entry is done.
async fn readyz(State(shared): State<Arc<Shared>>) -> axum::response::Response {
    let store = shared
        .app
        .runs_index()
        .runs(warrant_core::ports::RunQuery {
            limit: 1,
            ..Default::default()
        })
        .await;
    match (store, shared.ready.load(Ordering::SeqCst)) {
        (Ok(_), true) => "ready\n".into_response(),
        (Err(e), _) => {
            Problem::unavailable(format!("the store does not answer: {e}")).into_response()
        }
        (Ok(_), false) => Problem::unavailable("re-entering interrupted runs").into_response(),
    }
}

/// `GET /metrics`, in Prometheus' text format: what the runs this server drove did, each
/// tenant's use, and the fleet's state as the store has it.
async fn metrics(State(shared): State<Arc<Shared>>) -> axum::response::Response {
    let mut out = metrics::Exposition::default();
    out.driven(shared.runner.as_ref());
    out.answers(&shared.app);
    out.webhooks(&shared.app).await;
    // Each tenant's use, over its quota's window (an hour when it has none).
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let usage = shared.runner.meter.usage(now, |t| {
        warrant_app::Meter::window_of(shared.principals.tenant(t).quota.as_ref())
    });
    out.tenants(&usage);
    out.fleet(&shared.app).await;
    out.into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use warrant_core::ports::CheckpointFailures;

    use super::newly_failed;

    #[test]
    fn failed_copies_are_told_when_more_failed_and_not_again() {
        let failed = |count| {
            Some(CheckpointFailures {
                count,
                last: Some("disk I/O error".into()),
            })
        };
        let mut seen = 0;
        // A store that makes no copies, and one whose copies all succeed: nothing to tell.
        assert_eq!(newly_failed(&mut seen, None), None);
        assert_eq!(newly_failed(&mut seen, failed(0)), None);
        let told = newly_failed(&mut seen, failed(2)).unwrap();
        assert_eq!(
            (told.count, told.last.as_deref()),
            (2, Some("disk I/O error"))
        );
        assert_eq!(seen, 2);
        // The same two failures, looked at again: told once.
        assert_eq!(newly_failed(&mut seen, failed(2)), None);
        assert_eq!(newly_failed(&mut seen, failed(3)).unwrap().count, 3);
    }
}

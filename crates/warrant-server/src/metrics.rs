//! The Prometheus text exposition every front door answers at `/metrics` — `warrant serve`,
//! and `warrant worker --metrics` and `warrant gateway --metrics` — with the same names
//! everywhere:
//!
//! - what the runs this process drove did (`warrant_runs_started_total`, `warrant_calls_total`,
//!   ...; counted by its supervisor as their events are appended);
//! - the fleet's state as the store has it, the same whichever process is scraped
//!   (`warrant_runs{status=...}`, `warrant_leases_held{holder=...}`,
//!   `warrant_approvals_pending`, `warrant_approval_oldest_wait_seconds`,
//!   `warrant_runs_in_doubt`, `warrant_calls_in_doubt`);
//! - the store's own health (checkpoint failures, group-commit latency).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use warrant_core::RunStatus;
use warrant_core::ports::{Clock as _, RunQuery};

/// The statuses the fleet's gauge counts: the ones a run is in while it is not over.
const LIVE: [RunStatus; 6] = [
    RunStatus::Queued,
    RunStatus::Running,
    RunStatus::Interrupted,
    RunStatus::Waiting,
    RunStatus::Ready,
    RunStatus::Sleeping,
];

/// A Prometheus text exposition being written.
#[derive(Default)]
pub struct Exposition(String);

impl Exposition {
    /// One metric: its help, its type and its rows (`{labels}` and value).
    pub fn metric(&mut self, name: &str, help: &str, kind: &str, rows: Vec<(String, u64)>) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(self.0, "{name}{labels} {v}");
        }
    }

    /// `h` as a histogram in seconds.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        h: &warrant_core::metrics::HistogramSnapshot,
    ) {
        use warrant_core::metrics::seconds;
        let out = &mut self.0;
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, n) in &h.cumulative {
            match bound {
                Some(us) => {
                    let _ = writeln!(out, "{name}_bucket{{le=\"{}\"}} {n}", seconds(*us));
                }
                None => {
                    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {n}");
                }
            }
        }
        let _ = writeln!(out, "{name}_sum {}", seconds(h.sum_us));
        let _ = writeln!(out, "{name}_count {}", h.count);
    }

    /// What the runs `runner` drove did, and how many it holds now.
    pub fn driven(&mut self, runner: &dyn warrant_app::Driving) {
        let c = runner.counters();
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        self.metric(
            "warrant_runs_started_total",
            "Runs started by this process (a queued run it took up included).",
            "counter",
            vec![(String::new(), load(&c.started))],
        );
        self.metric(
            "warrant_runs_queued_total",
            "Runs queued by this process for workers to drive (a fleet's server).",
            "counter",
            vec![(String::new(), load(&c.queued))],
        );
        self.metric(
            "warrant_runs_reentered_total",
            "Runs re-entered by this process (after a wait, a restart or a takeover).",
            "counter",
            vec![(String::new(), load(&c.reentered))],
        );
        self.metric(
            "warrant_runs_ended_total",
            "Runs that ended while this process drove them, by outcome.",
            "counter",
            counted(&c.ended, ["outcome"]),
        );
        self.metric(
            "warrant_calls_total",
            "Calls that ended in runs this process drove, by tool, status and the layer a failure is attributed to (`none` when it succeeded; a tool the step does not offer is `(unknown)`).",
            "counter",
            counted(&c.calls, ["tool", "status", "layer"]),
        );
        self.metric(
            "warrant_decisions_total",
            "Decisions taken in runs this process drove.",
            "counter",
            vec![(String::new(), load(&c.decisions))],
        );
        self.metric(
            "warrant_tokens_total",
            "Model tokens the decisions of runs this process drove reported, by tenant, model and kind (input, output; cached is part of input).",
            "counter",
            counted(&c.tokens, ["tenant", "model", "kind"]),
        );
        self.metric(
            "warrant_cost_micro_usd_total",
            "What those decisions cost by the model table's prices, in micro-dollars, by tenant and model (a model with no price adds nothing).",
            "counter",
            counted(&c.cost, ["tenant", "model"]),
        );
        self.metric(
            "warrant_events_total",
            "Events appended by runs this process drove.",
            "counter",
            vec![(String::new(), load(&c.events))],
        );
        self.metric(
            "warrant_runs_held",
            "Runs held by this process now (driving or waiting).",
            "gauge",
            vec![(
                String::new(),
                u64::try_from(runner.held()).unwrap_or(u64::MAX),
            )],
        );
        self.histogram(
            "warrant_step_seconds",
            "Steps of runs this process drove, from step_started to step_finished as it saw them (their decisions and calls).",
            &c.steps.snapshot(),
        );
        self.histogram(
            "warrant_call_seconds",
            "Calls in runs this process drove, from call_started to call_finished as it saw them (schema, provenance, policy, approval, dispatch, result).",
            &c.calling.snapshot(),
        );
        self.histogram(
            "warrant_decision_seconds",
            "Decisions in runs this process drove, from the event before each to its `decided` (the decider's time: a model's round trip, or a script's step).",
            &c.deciding.snapshot(),
        );
        self.histogram(
            "warrant_event_delivery_seconds",
            "Events from their commit to their SSE frame, for the events the store handed to this process's streams as it committed them.",
            &c.delivery.snapshot(),
        );
    }

    /// What people and operators answered through this process.
    pub fn answers(&mut self, app: &warrant_app::App) {
        let a = &app.answers;
        self.metric(
            "warrant_approvals_answered_total",
            "Approval requests answered through this process, by answer (approved, denied; expired where the process driving the run found one out of time).",
            "counter",
            counted(&a.approvals, ["answer"]),
        );
        self.histogram(
            "warrant_approval_wait_seconds",
            "Answered approval requests, from the request to its answer as recorded: a person's time, never a run's deadline.",
            &a.approval_wait.snapshot(),
        );
        self.metric(
            "warrant_reconciliations_total",
            "Calls in doubt an operator reconciled through this process, by what was found (happened, not_performed, resent).",
            "counter",
            counted(&a.reconciled, ["found"]),
        );
    }

    /// What this process's webhooks posted, and the store's outbox of notices by state (the
    /// fleet's: any process may deliver them).
    pub async fn webhooks(&mut self, app: &warrant_app::App) {
        let d = &app.deliveries;
        self.metric(
            "warrant_webhook_posts_total",
            "Posts of notices to the operator's webhooks by this process, by endpoint and result (delivered, failed).",
            "counter",
            counted(&d.posts, ["endpoint", "result"]),
        );
        self.metric(
            "warrant_webhook_given_up_total",
            "Notices this process gave up on, by reason (attempts: every retry failed; too_old: older than max_age_seconds when first taken).",
            "counter",
            counted(&d.given_up, ["reason"]),
        );
        if let Ok(counts) = app.outbox().notice_counts().await
            && !counts.is_empty()
        {
            self.metric(
                "warrant_notices",
                "Notices in the store's outbox, by state (pending: to be delivered; delivered; failed: given up).",
                "gauge",
                counts
                    .into_iter()
                    .map(|(s, n)| (format!("{{state=\"{}\"}}", s.name()), n))
                    .collect(),
            );
        }
    }

    /// Each tenant's use over its quota's window.
    pub fn tenants(&mut self, usage: &BTreeMap<String, warrant_app::TenantUse>) {
        let tenant = |t: &str| format!("{{tenant=\"{}\"}}", label_value(t));
        for (name, help, pick) in [
            (
                "warrant_tenant_runs_started",
                "Runs each tenant started in its quota's window.",
                (|u: &warrant_app::TenantUse| u.runs_started) as fn(&warrant_app::TenantUse) -> u64,
            ),
            (
                "warrant_tenant_runs_held",
                "Runs each tenant holds now (not ended).",
                |u| u.runs_held,
            ),
            (
                "warrant_tenant_calls",
                "Calls each tenant's runs made in its quota's window.",
                |u| u.calls,
            ),
            (
                "warrant_tenant_tokens",
                "Model tokens each tenant's runs used in its quota's window.",
                |u| u.tokens,
            ),
        ] {
            self.metric(
                name,
                help,
                "gauge",
                usage.iter().map(|(t, u)| (tenant(t), pick(u))).collect(),
            );
        }
        self.metric(
            "warrant_tenant_quota_refusals_total",
            "Starts refused because a tenant reached a quota, by tenant and quota.",
            "counter",
            usage
                .iter()
                .flat_map(|(t, u)| {
                    u.refused.iter().map(move |(q, n)| {
                        (
                            format!("{{tenant=\"{}\",quota=\"{q}\"}}", label_value(t)),
                            *n,
                        )
                    })
                })
                .collect(),
        );
    }

    /// The fleet's state as the store has it now, and the store's health. A gauge the store
    /// could not be read for is left out (a scrape says what it knows, not a zero).
    pub async fn fleet(&mut self, app: &warrant_app::App) {
        let now = warrant_engine::SystemClock.now_ms();
        let mut by_status: Vec<(String, u64)> = Vec::new();
        let mut holders: BTreeMap<String, u64> = BTreeMap::new();
        let mut complete = true;
        for status in LIVE {
            let query = RunQuery {
                status: Some(status),
                limit: 0,
                ..RunQuery::default()
            };
            match app.runs(query).await {
                Ok(page) => {
                    if matches!(status, RunStatus::Running) {
                        for r in &page.runs {
                            if let Some(h) = &r.holder
                                && r.driven(now)
                            {
                                *holders.entry(h.clone()).or_default() += 1;
                            }
                        }
                    }
                    let n = u64::try_from(page.runs.len()).unwrap_or(u64::MAX);
                    by_status.push((format!("{{status=\"{}\"}}", status.name()), n));
                }
                Err(_) => complete = false,
            }
        }
        if complete {
            self.metric(
                "warrant_runs",
                "Runs of the whole store that are not over, by status (any process's).",
                "gauge",
                by_status,
            );
            self.metric(
                "warrant_leases_held",
                "Running runs each process holds a live lease on, by holder.",
                "gauge",
                holders
                    .into_iter()
                    .map(|(h, n)| (format!("{{holder=\"{}\"}}", label_value(&h)), n))
                    .collect(),
            );
        }
        if let Ok(pending) = app.approvals_index().pending_approvals(None).await {
            self.metric(
                "warrant_approvals_pending",
                "Approval requests nobody has answered, across the store.",
                "gauge",
                vec![(
                    String::new(),
                    u64::try_from(pending.len()).unwrap_or(u64::MAX),
                )],
            );
            let oldest = pending
                .iter()
                .map(|p| now.saturating_sub(p.requested_at_ms))
                .max()
                .unwrap_or(0);
            self.metric(
                "warrant_approval_oldest_wait_seconds",
                "How long the oldest unanswered approval request has waited (0 when none).",
                "gauge",
                vec![(String::new(), oldest / 1000)],
            );
        }
        // Read from the newest waiting runs' logs (at most 500: past that, at least these).
        if let Ok(doubt) = app.in_doubt().await {
            self.metric(
                "warrant_runs_in_doubt",
                "Runs waiting for an operator to say whether a call of theirs happened, across the store (of the newest 500 waiting runs).",
                "gauge",
                vec![(String::new(), doubt.runs)],
            );
            self.metric(
                "warrant_calls_in_doubt",
                "Calls whose effect may have happened, waiting to be reconciled, across the store (of the newest 500 waiting runs).",
                "gauge",
                vec![(String::new(), doubt.calls)],
            );
        }
        if let Some(failed) = app.health().checkpoint_failures() {
            self.metric(
                "warrant_store_checkpoint_failures_total",
                "Copies of the store's write-ahead log back into its file that failed (the commits stay durable in the log, which grows until a copy succeeds).",
                "counter",
                vec![(String::new(), failed.count)],
            );
        }
        if let Some(commits) = app.health().commit_latency() {
            self.histogram(
                "warrant_store_commit_seconds",
                "Group commits of the store, from the transaction's start to durable.",
                &commits,
            );
        }
    }
}

impl IntoResponse for Exposition {
    fn into_response(self) -> Response {
        let mut response = self.0.into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        response
    }
}

/// `v` as a Prometheus label value (backslash, quote and newline escaped).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A counter's rows, `{name="value",...}` each, in label order.
fn counted<const N: usize>(
    counts: &warrant_core::metrics::Counts<N>,
    names: [&str; N],
) -> Vec<(String, u64)> {
    counts
        .rows()
        .into_iter()
        .map(|(values, n)| {
            let pairs: Vec<String> = names
                .iter()
                .zip(&values)
                .map(|(name, v)| format!("{name}=\"{}\"", label_value(v)))
                .collect();
            (format!("{{{}}}", pairs.join(",")), n)
        })
        .collect()
}

/// Answers `/metrics` (and `/healthz`) on `listener` until `shutdown` resolves: the metrics of
/// a worker (`runner` the supervisor its runs go through) or of a gateway (its sessions).
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    app: warrant_app::App,
    runner: Option<Arc<dyn warrant_app::Driving>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let page = move || {
        let app = app.clone();
        let runner = runner.clone();
        async move {
            let mut out = Exposition::default();
            if let Some(r) = &runner {
                out.driven(r.as_ref());
            }
            out.answers(&app);
            out.webhooks(&app).await;
            out.fleet(&app).await;
            out.into_response()
        }
    };
    let router = axum::Router::new()
        .route("/metrics", axum::routing::get(page))
        .route("/healthz", axum::routing::get(|| async { "ok\n" }));
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

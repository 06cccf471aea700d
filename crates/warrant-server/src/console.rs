//! The web console: server-rendered pages over the same handlers' logic as the API, a small
//! script (no inline script: the CSP forbids it) that follows a run's events live, and forms
//! that carry a CSRF token. Login is by token, kept in an HttpOnly, SameSite=Strict cookie.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;
use serde_json::Value;
use warrant_core::event::{ApprovalScope, EventKind};
use warrant_core::provenance::Source;
use warrant_engine::Answer;

use crate::Shared;
use crate::api::{COOKIE, Caller, RunsQuery, cookie};
use crate::problem::Problem;

const SCRIPT: &str = include_str!("../assets/console.js");
const STYLE: &str = include_str!("../assets/console.css");

/// The console's routes.
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/", get(runs_page))
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/runs/{id}", get(run_page))
        .route("/runs/{id}/report", get(report_page))
        .route("/approvals", get(approvals_page))
        .route("/schedules", get(crate::console_schedules::schedules_page))
        .route(
            "/console/schedules/{id}/{action}",
            post(crate::console_schedules::schedule_form),
        )
        .route("/start", get(crate::console_start::start_page))
        .route("/console/start", post(crate::console_start::start_form))
        .route(
            "/console/runs/{id}/calls/{call}/reconcile",
            post(reconcile_form),
        )
        .route("/console/approvals/{id}", post(answer_form))
        .route("/console/questions/{id}", post(question_form))
        .route("/console/grants/{id}/revoke", post(revoke_form))
        .route("/console/runs/{id}/{action}", post(control_form))
        .route(
            "/assets/console.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/assets/console.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

/// `text` escaped for HTML text and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The page frame.
pub(crate) fn page(title: &str, page: &str, caller: Option<&Caller>, body: &str) -> Html<String> {
    let nav = match caller {
        Some(c) => format!(
            "<nav><a href=\"/\">Runs</a> <a href=\"/start\">Start</a> <a href=\"/approvals\">Approvals \
             <span id=\"pending\" class=\"count\" aria-live=\"polite\" \
             title=\"approval requests waiting\"></span></a> <a href=\"/schedules\">Schedules</a> \
             <span class=\"who\">{}</span>\
             <form method=\"post\" action=\"/logout\" class=\"inline\"><button>Log out</button></form></nav>",
            esc(&c.principal.by())
        ),
        None => String::new(),
    };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Warrant</title><link rel=\"stylesheet\" href=\"/assets/console.css\">\
         <script src=\"/assets/console.js\" defer></script></head>\
         <body data-page=\"{page}\"><a class=\"skip\" href=\"#main\">Skip to the content</a>\
         <header><h1>Warrant</h1>{nav}</header><main id=\"main\">{body}</main></body></html>",
        esc(title)
    ))
}

/// The CSRF token of `caller`'s session: keyed by the server's secret and the cookie.
pub(crate) fn csrf(shared: &Shared, headers: &HeaderMap) -> String {
    let mut keyed = shared.secret.to_vec();
    keyed.extend_from_slice(cookie(headers, COOKIE).unwrap_or("local").as_bytes());
    let digest = warrant_core::canon::digest_bytes(&keyed);
    digest.trim_start_matches("sha256:").to_owned()
}

pub(crate) fn check_csrf(shared: &Shared, headers: &HeaderMap, given: &str) -> Result<(), Problem> {
    let want = csrf(shared, headers);
    // Compared whole; both are fixed-length hex.
    let same = want.len() == given.len()
        && want
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        Ok(())
    } else {
        Err(Problem::forbidden(
            "the form's CSRF token is missing or not this session's: reload the page",
        ))
    }
}

/// The caller of a page, or the way to the login page.
pub(crate) async fn who(shared: &Arc<Shared>, headers: &HeaderMap) -> Result<Caller, Response> {
    let token = cookie(headers, COOKIE);
    match shared.principals.authenticate(token) {
        Ok(principal) => Ok(Caller { principal }),
        Err(_) => Err(Redirect::to("/login").into_response()),
    }
}

/// The caller of a page about run `id`, and the run when its tenant may see it.
async fn who_and_run(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    id: &str,
) -> Result<(Caller, warrant_core::ids::RunId), Response> {
    let caller = who(shared, headers).await?;
    let run = shared
        .visible(&caller, id)
        .await
        .map_err(IntoResponse::into_response)?;
    Ok((caller, run))
}

async fn login_page(State(shared): State<Arc<Shared>>) -> Response {
    if !shared.principals.required() {
        return Redirect::to("/").into_response();
    }
    page(
        "Log in",
        "login",
        None,
        "<h2>Log in</h2><form method=\"post\" action=\"/login\" class=\"login\">\
         <label>Token <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label>\
         <button>Log in</button></form>",
    )
    .into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(State(shared): State<Arc<Shared>>, Form(form): Form<LoginForm>) -> Response {
    let token = form.token.trim();
    let valid = !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',')
        && shared.principals.authenticate(Some(token)).is_ok();
    if !valid {
        let mut r = page(
            "Log in",
            "login",
            None,
            "<h2>Log in</h2><p class=\"error\">This token is not known.</p>\
             <p><a href=\"/login\">Try again</a></p>",
        )
        .into_response();
        *r.status_mut() = StatusCode::UNAUTHORIZED;
        return r;
    }
    let mut r = Redirect::to("/").into_response();
    if let Ok(v) = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict").parse() {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn logout() -> Response {
    let mut r = Redirect::to("/login").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("warrant_token=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    r
}

/// A run's or a step's status as a badge.
fn status_badge(status: impl std::fmt::Display) -> String {
    format!(
        "<span class=\"status s-{0}\" data-status>{0}</span>",
        esc(&status.to_string())
    )
}

/// The runs list's filters, as the page's own query (`/?status=waiting&spec=...`).
#[derive(Debug, Default, Deserialize)]
struct RunsFilter {
    #[serde(default)]
    status: String,
    #[serde(default)]
    spec: String,
    #[serde(default)]
    run: String,
    /// `hour`, `day` or `week`: runs started within it.
    #[serde(default)]
    since: String,
    cursor: Option<String>,
}

/// The runs list's time filter: its choices, and how far back each reaches.
const SINCE_CHOICES: [(&str, &str, u64); 3] = [
    ("hour", "the last hour", 3_600_000),
    ("day", "the last day", 86_400_000),
    ("week", "the last week", 604_800_000),
];

/// The live statuses the runs list counts.
const COUNTED: [warrant_core::RunStatus; 5] = [
    warrant_core::RunStatus::Running,
    warrant_core::RunStatus::Waiting,
    warrant_core::RunStatus::Sleeping,
    warrant_core::RunStatus::Queued,
    warrant_core::RunStatus::Interrupted,
];

/// The statuses the runs list filters by.
const STATUS_CHOICES: [warrant_core::RunStatus; 11] = [
    warrant_core::RunStatus::Queued,
    warrant_core::RunStatus::Running,
    warrant_core::RunStatus::Interrupted,
    warrant_core::RunStatus::Waiting,
    warrant_core::RunStatus::Ready,
    warrant_core::RunStatus::Sleeping,
    warrant_core::RunStatus::Attained,
    warrant_core::RunStatus::NotAttained,
    warrant_core::RunStatus::Failed,
    warrant_core::RunStatus::Cancelled,
    warrant_core::RunStatus::Exhausted,
];

async fn runs_page(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(filter): Query<RunsFilter>,
) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let since = SINCE_CHOICES
        .iter()
        .find(|(k, _, _)| *k == filter.since)
        .map(|(_, _, back)| now.saturating_sub(*back));
    let query = RunsQuery {
        status: Some(filter.status.clone()).filter(|s| !s.is_empty()),
        spec: Some(filter.spec.trim().to_owned()).filter(|s| !s.is_empty()),
        since,
        cursor: filter.cursor.clone(),
        ..RunsQuery::default()
    };
    let found = match shared.runs_page(&caller, query).await {
        Ok(p) => p,
        Err(p) => return p.into_response(),
    };
    let search = filter.run.trim();
    let runs: Vec<_> = found
        .runs
        .iter()
        .filter(|r| search.is_empty() || r.run_id.0.contains(search))
        .collect();
    let options: String = STATUS_CHOICES
        .iter()
        .map(|s| {
            let picked = if s.name() == filter.status {
                " selected"
            } else {
                ""
            };
            format!("<option{picked}>{}</option>", s.name())
        })
        .collect();
    let since_options: String = SINCE_CHOICES
        .iter()
        .map(|(k, text, _)| {
            let picked = if *k == filter.since { " selected" } else { "" };
            format!("<option value=\"{k}\"{picked}>{text}</option>")
        })
        .collect();
    // How many of the tenant's runs are in each live status now.
    let mut counts = Vec::new();
    for status in COUNTED {
        let q = RunsQuery {
            status: Some(status.name().to_owned()),
            limit: Some(crate::api::RUNS_PAGE_MAX),
            ..RunsQuery::default()
        };
        if let Ok(p) = shared.runs_page(&caller, q).await {
            let n = p.runs.len();
            let more = if p.next.is_some() { "+" } else { "" };
            counts.push(format!(
                "<a href=\"/?status={s}\" data-count=\"{s}\"><b>{n}{more}</b> {s}</a>",
                s = status.name()
            ));
        }
    }
    let mut body = format!(
        "<h2>Runs</h2><form method=\"get\" action=\"/\" class=\"filters\">\
         <label>Status <select name=\"status\"><option value=\"\">any</option>{options}</select></label> \
         <label>Started <select name=\"since\"><option value=\"\">any time</option>{since_options}</select></label> \
         <label>Spec <input name=\"spec\" value=\"{spec}\" size=\"14\"></label> \
         <label>Run id <input name=\"run\" value=\"{run}\" size=\"14\"></label> \
         <button>Show</button></form>\
         <div id=\"runs-view\"><p class=\"counts\" aria-live=\"polite\">Now: {counts}</p>\
         <div class=\"scroll\"><table id=\"runs\"><thead><tr><th>Run</th><th class=\"c-spec\">Spec</th>\
         <th>Status</th><th>Started</th><th class=\"c-took\">Took</th><th class=\"c-decider\">Decider</th>\
         <th class=\"c-events\">Events</th></tr></thead><tbody>",
        spec = esc(&filter.spec),
        run = esc(search),
        counts = counts.join(" · "),
    );
    let ordered = nested(&runs);
    for r in ordered {
        let depth = r.run_id.0.matches('.').count();
        // A live run has taken until now; an ended one until its last event.
        let ended = if r.status.is_live() {
            None
        } else {
            match shared.app.log_reader().read(&r.run_id, r.events).await {
                Ok(last) => last.last().map(|e| e.event.at_ms),
                Err(_) => None,
            }
        };
        let took = match ended {
            Some(at) => millis(at.saturating_sub(r.started_at_ms)),
            None if r.status.is_live() => {
                format!("{} so far", millis(now.saturating_sub(r.started_at_ms)))
            }
            None => String::new(),
        };
        let _ = write!(
            body,
            "<tr data-run=\"{id}\"{child}><td><a href=\"/runs/{id}\">{id}</a></td><td class=\"c-spec\">{}</td><td>{}</td>\
             <td><time data-ms=\"{ms}\">{ms}</time></td><td class=\"c-took\">{took}</td><td class=\"c-decider\" title=\"{decider}\">{}</td>\
             <td class=\"c-events\">{}</td></tr>",
            esc(&r.spec_id),
            status_badge(r.status),
            esc(&short_decider(&r.decider)),
            r.events,
            id = esc(&r.run_id.0),
            ms = r.started_at_ms,
            decider = esc(&r.decider),
            child = if depth > 0 {
                format!(" class=\"child d{}\"", depth.min(4))
            } else {
                String::new()
            },
        );
    }
    body.push_str("</tbody></table></div>");
    if runs.is_empty() {
        body.push_str("<p class=\"empty\">No runs here.</p>");
    }
    if let Some(next) = &found.next {
        let mut link = vec![("cursor", next.as_str())];
        for (k, v) in [
            ("status", &filter.status),
            ("since", &filter.since),
            ("spec", &filter.spec),
            ("run", &filter.run),
        ] {
            if !v.is_empty() {
                link.push((k, v.as_str()));
            }
        }
        let query: Vec<String> = link
            .iter()
            .map(|(k, v)| format!("{k}={}", url_escape(v)))
            .collect();
        let _ = write!(
            body,
            "<p><a rel=\"next\" href=\"/?{}\">Older runs</a></p>",
            esc(&query.join("&"))
        );
    }
    body.push_str("</div>");
    page("Runs", "runs", Some(&caller), &body).into_response()
}

/// `runs` with each child run (`<parent>.<n>`) right under its parent when both are listed,
/// the rest in their order.
fn nested<'a>(
    runs: &[&'a warrant_core::ports::RunSummary],
) -> Vec<&'a warrant_core::ports::RunSummary> {
    fn under<'a>(
        parent: &'a warrant_core::ports::RunSummary,
        runs: &[&'a warrant_core::ports::RunSummary],
        out: &mut Vec<&'a warrant_core::ports::RunSummary>,
    ) {
        out.push(parent);
        let prefix = format!("{}.", parent.run_id.0);
        // Its children in the order it delegated to them (`.1`, `.2`, ...).
        let mut kids: Vec<(u64, &'a warrant_core::ports::RunSummary)> = runs
            .iter()
            .filter_map(|r| {
                let n = r.run_id.0.strip_prefix(prefix.as_str())?.parse().ok()?;
                Some((n, *r))
            })
            .collect();
        kids.sort_by_key(|(n, _)| *n);
        for (_, kid) in kids {
            under(kid, runs, out);
        }
    }
    let listed: BTreeSet<&str> = runs.iter().map(|r| r.run_id.0.as_ref()).collect();
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        let parent_listed = r
            .run_id
            .0
            .rsplit_once('.')
            .is_some_and(|(p, _)| listed.contains(p));
        if !parent_listed {
            under(r, runs, &mut out);
        }
    }
    out
}

/// A decider as the runs list shows it: a script or file by its name, not the server's path
/// to it (the whole is the cell's title).
fn short_decider(decider: &str) -> String {
    match decider.split_once(':') {
        Some((kind, arg)) if arg.contains('/') => {
            format!("{kind}:{}", arg.rsplit('/').next().unwrap_or(arg))
        }
        _ => decider.to_owned(),
    }
}

/// `text` escaped for a URL's query.
pub(crate) fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether `source` is text an untrusted provider wrote (or a value produced after the
/// decider read such text).
fn untrusted(source: &Source, trusted: &BTreeSet<String>) -> bool {
    match source {
        Source::ProviderOutput { provider, .. }
        | Source::Description { provider }
        | Source::Holds { provider, .. } => !trusted.contains(provider),
        Source::Decider { tainted_by } => !tainted_by.is_empty(),
        Source::Objective
        | Source::Input { .. }
        | Source::User { .. }
        | Source::Carried { .. }
        | Source::Unobserved => false,
    }
}

/// An approval request's arguments, each value with where it came from; untrusted ones
/// stand out.
fn args_table(
    args: &Value,
    provenance: &[warrant_core::provenance::ArgLabel],
    trusted: &BTreeSet<String>,
) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"args\"><tbody>");
    let mut shown = BTreeSet::new();
    for label in provenance {
        shown.insert(label.pointer.clone());
        let value = args
            .pointer(&label.pointer)
            .map_or_else(String::new, value_text);
        let bad =
            untrusted(&label.source, trusted) || label.also.iter().any(|s| untrusted(s, trusted));
        let mut origin = label.source.to_string();
        for a in &label.also {
            let _ = write!(origin, ", and {a}");
        }
        let _ = write!(
            out,
            "<tr class=\"{}\"><th>{}</th><td><code>{}</code></td><td>{}{}</td></tr>",
            if bad { "untrusted" } else { "trusted" },
            esc(&label.pointer),
            esc(&value),
            if bad {
                "<strong class=\"flag\">untrusted</strong> "
            } else {
                ""
            },
            esc(&origin)
        );
    }
    if let Value::Object(m) = args {
        for (k, v) in m {
            let pointer = format!("/{k}");
            if !shown.contains(&pointer) {
                let _ = write!(
                    out,
                    "<tr><th>{}</th><td><code>{}</code></td><td></td></tr>",
                    esc(&pointer),
                    esc(&value_text(v))
                );
            }
        }
    }
    out.push_str("</tbody></table></div>");
    out
}

pub(crate) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The tenant's live standing grants, each with a revoke button for an approver.
async fn standing_grants(shared: &Arc<Shared>, caller: &Caller, token: &str) -> String {
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let Ok(grants) = shared.app.grants(Some(&caller.principal.tenant)).await else {
        return String::new();
    };
    let live: Vec<_> = grants.into_iter().filter(|g| g.live(now)).collect();
    if live.is_empty() {
        return String::new();
    }
    let approver = caller.principal.may(crate::Role::Approver);
    let mut out = String::from(
        "<h3>Standing grants</h3><p>Calls these cover are approved at once; each run records          which grant let its call through.</p><ul class=\"grants\">",
    );
    for g in &live {
        let revoke = if approver {
            format!(
                "<form method=\"post\" action=\"/console/grants/{id}/revoke\" class=\"inline\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{token}\"><button>Revoke</button></form>",
                id = esc(&g.id)
            )
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<li data-grant=\"{id}\">{what} <small>by {by}{until}</small> {revoke}</li>",
            id = esc(&g.id),
            what = esc(&g.describe()),
            by = esc(&g.by),
            until = g
                .expires_at_ms
                .map(|t| format!(", until {}", when(t)))
                .unwrap_or_default(),
        );
    }
    out.push_str("</ul>");
    out
}

#[derive(Deserialize)]
struct RevokeForm {
    csrf: String,
}

/// `POST /console/grants/{id}/revoke`.
async fn revoke_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<RevokeForm>,
) -> Response {
    if let Err(p) = check_csrf(&shared, &headers, &form.csrf) {
        return p.into_response();
    }
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    match shared.revoke_grant(&caller, &id).await {
        Ok(_) => Redirect::to("/approvals").into_response(),
        Err(p) => p.into_response(),
    }
}

pub(crate) fn when(ms: u64) -> String {
    format!("<time data-ms=\"{ms}\">{ms}</time>")
}

async fn approvals_page(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let rows = match shared.approval_rows(&caller, None).await {
        Ok(r) => r,
        Err(p) => return p.into_response(),
    };
    let token = csrf(&shared, &headers);
    let mut body = String::from("<h2>Approvals</h2>");
    if rows.is_empty() {
        body.push_str("<p class=\"empty\">Nothing waits for an answer.</p>");
    }
    // The providers each run trusts, read once per run on the page.
    let mut trust: std::collections::HashMap<warrant_core::ids::RunId, BTreeSet<String>> =
        std::collections::HashMap::new();
    for row in &rows {
        if !trust.contains_key(&row.run) {
            trust.insert(row.run.clone(), trusted_of(&shared, &row.run).await);
        }
        let trusted = trust.get(&row.run).cloned().unwrap_or_default();
        let _ = write!(
            body,
            "<section class=\"approval\" data-request=\"{req}\"><h3><code>{tool}</code> on {provider}</h3>\
             <p>Run <a href=\"/runs/{run}\">{run}</a>{child}, step {step}, call {call}. {reason}</p>\
             {args}<p class=\"digest\">Arguments digest <code>{digest}</code>; expires {expires}.</p>\
             <form method=\"post\" action=\"/console/approvals/{req}\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{token}\">\
             <input type=\"hidden\" name=\"args_digest\" value=\"{digest}\">\
             <button name=\"action\" value=\"once\">Approve once</button>\
             <button name=\"action\" value=\"run\">Approve for the run</button>{plan}\
             <button name=\"action\" value=\"always\" title=\"Approve, and always allow this tool with these arguments\">Always allow</button>\
             <input name=\"reason\" placeholder=\"Reason to deny\" aria-label=\"Reason to deny\">\
             <button name=\"action\" value=\"deny\" class=\"deny\">Deny</button>\
             <details><summary>Approve with edited arguments</summary>\
             <textarea name=\"edited\" rows=\"4\" cols=\"60\" aria-label=\"Edited arguments (JSON)\">{edited}</textarea>\
             <button name=\"action\" value=\"edit\">Approve these arguments once</button></details></form></section>",
            plan = if row.proposed_scope == "plan" {
                "<button name=\"action\" value=\"plan\">Approve the plan</button>"
            } else {
                ""
            },
            req = esc(&row.request),
            tool = esc(&row.tool),
            provider = esc(&row.provider),
            run = esc(&row.run.0),
            // A child's ask is answered here, with the parent's: say whose child it is.
            child = row.parent.as_ref().map_or(String::new(), |p| format!(
                " (a child of <a href=\"/runs/{p}\">{p}</a>)",
                p = esc(&p.0)
            )),
            step = esc(&row.step.0),
            call = row.call,
            reason = esc(&row.reason),
            args = args_table(&row.args, &row.provenance, &trusted),
            digest = esc(&row.args_digest),
            expires = when(row.expires_at_ms),
            edited = esc(&serde_json::to_string_pretty(&*row.args).unwrap_or_default()),
        );
    }
    body.push_str(&standing_grants(&shared, &caller, &token).await);
    page("Approvals", "approvals", Some(&caller), &body).into_response()
}

async fn trusted_of(shared: &Shared, run: &warrant_core::ids::RunId) -> BTreeSet<String> {
    let Ok(events) = shared.app.log(run).await else {
        return BTreeSet::new();
    };
    trusted_in(&events)
}

/// The providers a run's spec trusts, from its first event.
fn trusted_in(events: &[Arc<warrant_core::Event>]) -> BTreeSet<String> {
    events
        .first()
        .and_then(|e| match &e.kind {
            EventKind::RunStarted { spec, .. } => Some(spec.trusted_providers()),
            _ => None,
        })
        .unwrap_or_default()
}

#[derive(Deserialize)]
struct AnswerForm {
    csrf: String,
    args_digest: String,
    action: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    edited: String,
}

async fn answer_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<AnswerForm>,
) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Err(p) = check_csrf(&shared, &headers, &form.csrf) {
        return p.into_response();
    }
    let answer = match form.action.as_str() {
        "once" => Answer::Approve {
            scope: ApprovalScope::Once,
            until_ms: None,
            edited: None,
        },
        "run" => Answer::Approve {
            scope: ApprovalScope::Run,
            until_ms: None,
            edited: None,
        },
        "plan" => Answer::Approve {
            scope: ApprovalScope::Plan,
            until_ms: None,
            edited: None,
        },
        "deny" => Answer::Deny {
            reason: if form.reason.trim().is_empty() {
                "denied in the console".to_owned()
            } else {
                form.reason.trim().to_owned()
            },
        },
        "edit" => match serde_json::from_str::<Value>(&form.edited) {
            Ok(v @ Value::Object(_)) => Answer::Approve {
                scope: ApprovalScope::Once,
                until_ms: None,
                edited: Some(Arc::new(v)),
            },
            _ => {
                return Problem::bad_request("the edited arguments must be a JSON object")
                    .into_response();
            }
        },
        "always" => {
            return match shared.approve_always(&caller, &id, &form.args_digest).await {
                Ok(_) => Redirect::to("/approvals").into_response(),
                Err(p) => p.into_response(),
            };
        }
        other => return Problem::bad_request(format!("no action `{other}`")).into_response(),
    };
    match shared.answer(&caller, &id, &form.args_digest, answer).await {
        Ok(_) => {
            let run = warrant_core::ids::RunId::of_request(&id).map_or(String::new(), |r| r.0);
            Redirect::to(&format!("/runs/{run}")).into_response()
        }
        Err(p) => p.into_response(),
    }
}

#[derive(Deserialize)]
struct QuestionForm {
    csrf: String,
    answer: String,
}

/// `POST /console/questions/{id}`: a person answers a run's question. For a question whose
/// schema asks for a string the text is the answer as typed; otherwise it is read as JSON.
async fn question_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<QuestionForm>,
) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Err(p) = check_csrf(&shared, &headers, &form.csrf) {
        return p.into_response();
    }
    let text = form.answer;
    let answered = shared
        .answer_question(&caller, &id, |schema| {
            if schema.get("type").and_then(Value::as_str) == Some("string") {
                return Ok(Value::String(text));
            }
            serde_json::from_str(&text).map_err(|e| {
                Problem::invalid(format!("the answer is read as JSON, and it is not: {e}"))
            })
        })
        .await;
    match answered {
        Ok((_, run)) => Redirect::to(&format!("/runs/{run}")).into_response(),
        Err(p) => p.into_response(),
    }
}

/// A form posted about run `id`: its CSRF token checked, then who posted it and the run (one
/// the caller's tenant may see).
async fn form_on_run(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    token: &str,
    id: &str,
) -> Result<(Caller, warrant_core::ids::RunId), Response> {
    check_csrf(shared, headers, token).map_err(IntoResponse::into_response)?;
    who_and_run(shared, headers, id).await
}

#[derive(Deserialize)]
struct ControlForm {
    csrf: String,
}

async fn control_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath((id, action)): UrlPath<(String, String)>,
    Form(form): Form<ControlForm>,
) -> Response {
    let (caller, run) = match form_on_run(&shared, &headers, &form.csrf, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    if let Err(p) = caller.principal.require(crate::Role::Operator) {
        return p.into_response();
    }
    let done = match action.as_str() {
        "cancel" => {
            shared
                .cancel_run(&caller, &run, "cancelled in the console")
                .await
        }
        "resume" => shared.resume_run(&caller, &run).await,
        other => Err(Problem::not_found(format!("no action `{other}`"))),
    };
    match done {
        Ok(_) => Redirect::to(&format!("/runs/{run}")).into_response(),
        Err(p) => p.into_response(),
    }
}

#[derive(Deserialize)]
struct ReconcileForm {
    csrf: String,
    /// `happened`, `not-happened` or `resend`.
    found: String,
    #[serde(default)]
    note: String,
}

/// `POST /console/runs/{id}/calls/{call}/reconcile`: an operator says what became of a call in
/// doubt; the run goes on.
async fn reconcile_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath((id, call)): UrlPath<(String, String)>,
    Form(form): Form<ReconcileForm>,
) -> Response {
    let (caller, run) = match form_on_run(&shared, &headers, &form.csrf, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    let (happened, resend) = match form.found.as_str() {
        "happened" => (true, false),
        "not-happened" => (false, false),
        "resend" => (false, true),
        other => return Problem::bad_request(format!("no answer `{other}`")).into_response(),
    };
    let note = if form.note.trim().is_empty() {
        "reconciled in the console".to_owned()
    } else {
        form.note.trim().to_owned()
    };
    let body = crate::api::ReconcileBody {
        happened,
        resend,
        note,
    };
    match shared.reconcile_call(&caller, &run, &call, &body).await {
        Ok(_) => Redirect::to(&format!("/runs/{run}")).into_response(),
        Err(p) => p.into_response(),
    }
}

/// The calls in doubt of a run: what was sent, what is known, and (for an operator) the form
/// that says what became of each.
fn doubts(
    run: &warrant_core::ids::RunId,
    rows: &[warrant_app::DoubtRow],
    operator: bool,
    token: &str,
    trusted: &BTreeSet<String>,
) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>In doubt</h3><p>The effect of these calls is not known: the answer was lost. Find \
         out at the provider whether it happened, then say so; the run goes on from there.</p>",
    );
    for d in rows {
        let _ = write!(
            out,
            "<section class=\"doubt\" id=\"doubt-{call}\"><h4><code>{tool}</code> on {provider}, \
             call {call}</h4>",
            call = d.call,
            tool = esc(&d.tool),
            provider = esc(&d.provider),
        );
        if let Some(args) = &d.args {
            out.push_str(&args_table(args, &[], trusted));
        }
        if let Some(digest) = &d.args_digest {
            let _ = write!(
                out,
                "<p class=\"digest\">Arguments digest <code>{}</code></p>",
                esc(digest)
            );
        }
        if let Some(known) = &d.known {
            let _ = write!(out, "<p>Known: {}</p>", esc(known));
        }
        if operator {
            let _ = write!(
                out,
                "<form method=\"post\" action=\"/console/runs/{run}/calls/{call}/reconcile\" \
                 class=\"reconcile\"><input type=\"hidden\" name=\"csrf\" value=\"{token}\">\
                 <fieldset><legend>What became of it</legend>\
                 <label><input type=\"radio\" name=\"found\" value=\"happened\" required> It happened</label>\
                 <label><input type=\"radio\" name=\"found\" value=\"not-happened\"> It did not happen</label>\
                 <label><input type=\"radio\" name=\"found\" value=\"resend\"> It did not happen: send it again</label>\
                 </fieldset><p class=\"field\"><label for=\"note-{call}\">How you know</label>\
                 <input id=\"note-{call}\" name=\"note\" placeholder=\"e.g. the bank's statement shows it\"></p>\
                 <button>Reconcile</button></form>",
                run = esc(&run.0),
                call = d.call,
            );
        }
        out.push_str("</section>");
    }
    out
}

/// The run over time: each step, its calls and its child runs as bars on one scale from the
/// run's first event, with when each began and how long it took. SVG bars, since the CSP
/// allows no inline style.
fn gantt(
    events: &[Arc<warrant_core::Event>],
    children: &[warrant_core::report::ChildReport],
    live: bool,
    now_ms: u64,
) -> String {
    let Some(first) = events.first() else {
        return String::new();
    };
    let start = first.at_ms;
    let end = if live {
        now_ms.max(events.last().map_or(start, |e| e.at_ms))
    } else {
        events.last().map_or(start, |e| e.at_ms)
    };
    let span = end.saturating_sub(start).max(1);
    // (label, kind, began, ended): in the order they began.
    struct Bar {
        label: String,
        kind: &'static str,
        step: String,
        began: u64,
        ended: Option<u64>,
        link: Option<String>,
    }
    let mut bars: Vec<Bar> = Vec::new();
    let mut open_step: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut open_call: std::collections::HashMap<warrant_core::ids::CallId, usize> =
        std::collections::HashMap::new();
    let mut open_child: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut current_step = String::new();
    for e in events {
        match &e.kind {
            EventKind::StepStarted { step, .. } => {
                current_step = step.0.to_string();
                open_step.insert(current_step.clone(), bars.len());
                bars.push(Bar {
                    label: format!("step {}", step.0),
                    kind: "step",
                    step: current_step.clone(),
                    began: e.at_ms,
                    ended: None,
                    link: None,
                });
            }
            EventKind::StepFinished { step, .. } | EventKind::StepSkipped { step, .. } => {
                if let Some(&i) = open_step.get(&*step.0)
                    && let Some(b) = bars.get_mut(i)
                {
                    b.ended = Some(e.at_ms);
                }
            }
            EventKind::CallStarted { call, tool, .. } => {
                open_call.insert(*call, bars.len());
                bars.push(Bar {
                    label: format!("{call} {tool}"),
                    kind: "call",
                    step: current_step.clone(),
                    began: e.at_ms,
                    ended: None,
                    link: Some(format!("#call-{call}")),
                });
            }
            EventKind::CallFinished { call, .. } => {
                if let Some(&i) = open_call.get(call)
                    && let Some(b) = bars.get_mut(i)
                {
                    b.ended = Some(e.at_ms);
                }
            }
            EventKind::ChildSpawned { step, child, .. } => {
                open_child.insert(child.0.to_string(), bars.len());
                let outcome = children
                    .iter()
                    .find(|c| c.run == *child)
                    .and_then(|c| c.outcome.as_ref())
                    .map_or(warrant_core::RunStatus::Running.name(), |o| o.name());
                bars.push(Bar {
                    label: format!("child {} ({outcome})", child.0),
                    kind: "child",
                    step: step.0.to_string(),
                    began: e.at_ms,
                    ended: None,
                    link: Some(format!("/runs/{}", child.0)),
                });
            }
            EventKind::ChildFinished { child, .. } => {
                if let Some(&i) = open_child.get(&*child.0)
                    && let Some(b) = bars.get_mut(i)
                {
                    b.ended = Some(e.at_ms);
                }
            }
            _ => {}
        }
    }
    if bars.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h3>Over time</h3><div class=\"scroll\"><table class=\"gantt\"><caption>From the run's first event, \
         {} in all</caption><thead><tr><th>What</th><th>Began</th><th>Took</th>\
         <th class=\"bar\">When</th></tr></thead><tbody>",
        millis(span)
    );
    for b in &bars {
        let stop = b.ended.unwrap_or(end);
        let took = stop.saturating_sub(b.began);
        // On a scale of 1000 for the run's span; at least 2 wide, to be seen.
        let x = (b.began.saturating_sub(start)).saturating_mul(1000) / span;
        let w = (took.saturating_mul(1000) / span)
            .max(2)
            .min(1000u64.saturating_sub(x).max(2));
        let label = match &b.link {
            Some(href) => format!("<a href=\"{}\">{}</a>", esc(href), esc(&b.label)),
            None => esc(&b.label),
        };
        let _ = write!(
            out,
            "<tr class=\"g-{kind}\" data-step=\"{step}\"><td>{label}</td><td>+{began}</td>\
             <td>{took}{open}</td><td class=\"bar\"><svg viewBox=\"0 0 1000 10\" \
             preserveAspectRatio=\"none\" role=\"img\" aria-label=\"{aria}\"><rect x=\"{x}\" \
             y=\"1\" width=\"{w}\" height=\"8\" class=\"{kind}\"/></svg></td></tr>",
            kind = b.kind,
            step = esc(&b.step),
            began = millis(b.began.saturating_sub(start)),
            took = millis(took),
            open = if b.ended.is_none() { " (going on)" } else { "" },
            aria = esc(&format!(
                "{} from +{} for {}",
                b.label,
                millis(b.began.saturating_sub(start)),
                millis(took)
            )),
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

/// A span of milliseconds, for a person.
fn millis(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// What people said about each call, in order: each approval request and its answer (who,
/// in what scope, with edits or why not), an expiry, and each reconciliation (who found what).
fn people_said(
    events: &[Arc<warrant_core::Event>],
) -> std::collections::HashMap<warrant_core::ids::CallId, Vec<String>> {
    let mut said: std::collections::HashMap<warrant_core::ids::CallId, Vec<String>> =
        std::collections::HashMap::new();
    let mut asked: std::collections::HashMap<&str, warrant_core::ids::CallId> =
        std::collections::HashMap::new();
    for e in events {
        let (call, line) = match &e.kind {
            EventKind::ApprovalRequested {
                request,
                call,
                reason,
                ..
            } => {
                asked.insert(request, *call);
                (*call, format!("approval asked: {reason}"))
            }
            EventKind::ApprovalResolved {
                request,
                approved,
                scope,
                by,
                reason,
                edited_args,
                ..
            } => {
                let Some(call) = asked.get(request.as_str()) else {
                    continue;
                };
                let line = if *approved {
                    format!(
                        "approved by {by}{}{}",
                        scope
                            .and_then(|s| serde_json::to_value(s).ok())
                            .and_then(|v| v.as_str().map(|s| format!(" ({s})")))
                            .unwrap_or_default(),
                        if edited_args.is_some() {
                            ", with edited arguments"
                        } else {
                            ""
                        }
                    )
                } else {
                    format!("denied by {by}: {reason}")
                };
                (*call, line)
            }
            EventKind::ApprovalExpired { request } => {
                let Some(call) = asked.get(request.as_str()) else {
                    continue;
                };
                (*call, "the approval request expired unanswered".to_owned())
            }
            EventKind::CallReconciled {
                call,
                happened,
                by,
                note,
                resend,
                ..
            } => {
                let what = crate::api::reconciled(*happened, *resend);
                (*call, format!("reconciled by {by}: it {what} ({note})"))
            }
            _ => continue,
        };
        said.entry(call).or_default().push(line);
    }
    said
}

/// The longest result a call's detail shows, in bytes.
const RESULT_SHOWN_MAX: usize = 4096;

/// A call's detail row: each argument it ran with and where that value came from (untrusted
/// ones flagged), and its result, bounded.
fn call_detail(
    c: &warrant_core::report::CallReport,
    args: Option<&Value>,
    output: Option<&Value>,
    trusted: &BTreeSet<String>,
) -> String {
    if args.is_none() && output.is_none() {
        return String::new();
    }
    let mut out = String::from(
        "<tr class=\"call-detail\"><td colspan=\"5\"><details><summary>arguments and result</summary>",
    );
    if let Some(args) = args {
        out.push_str(&args_table(args, &c.provenance, trusted));
    }
    if let Some(output) = output {
        let mut text = output.to_string();
        if text.len() > RESULT_SHOWN_MAX {
            let mut end = RESULT_SHOWN_MAX;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(" …");
        }
        let _ = write!(out, "<p>Result</p><pre>{}</pre>", esc(&text));
    }
    out.push_str("</details></td></tr>");
    out
}

/// One event as a timeline line: its type and the few fields a person reads first.
fn event_line(e: &warrant_core::Event) -> String {
    let v = serde_json::to_value(e).unwrap_or_default();
    let pick = [
        "step", "tool", "call", "status", "verdict", "outcome", "request", "reason",
    ];
    let mut detail = String::new();
    for k in pick {
        if let Some(x) = v.get(k) {
            let text = match x {
                Value::String(s) => s.clone(),
                Value::Object(o) => o
                    .get("outcome")
                    .or_else(|| o.get("kind"))
                    .map_or_else(|| x.to_string(), value_text),
                other => other.to_string(),
            };
            let _ = write!(
                detail,
                " {k}={}",
                text.chars().take(120).collect::<String>()
            );
        }
    }
    format!(
        "<li data-seq=\"{}\"><span class=\"seq\">{}</span> <b>{}</b>{}</li>",
        e.seq,
        e.seq,
        e.kind.name(),
        esc(&detail)
    )
}

async fn run_page(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let (caller, run) = match who_and_run(&shared, &headers, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    // One reading of the log: every part of the page says the same moment of the run (the
    // live page swaps this whole view for a fresh one at each event).
    let (view, report, events) = match shared.app.snapshot(&run).await {
        Ok(s) => s,
        Err(e) => return Problem::from(e).into_response(),
    };
    let token = csrf(&shared, &headers);
    let mut body = format!(
        "<div id=\"run-view\"><h2>Run <code>{id}</code></h2><p>Spec <b>{spec}</b>: {objective}</p>\
         <p>Status <span id=\"status\" class=\"status s-{status}\">{status}</span> · \
         route {route} · <a href=\"/runs/{id}/report\">report</a></p>\
         <p class=\"usage\">Usage: {usage}</p>",
        id = esc(&run.0),
        spec = esc(&view.spec.id),
        objective = esc(&view.spec.objective),
        status = view.status,
        route = esc(&report.route.join(" → ")),
        usage = esc(&view.usage.text(&view.decider)),
    );
    if caller.principal.may(crate::Role::Operator) && view.status.is_live() {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/console/runs/{id}/cancel\" class=\"inline\" \
             data-confirm=\"Cancel run {id}? It stops at its next step and cannot go on.\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{token}\"><button class=\"deny\">Cancel</button></form>\
             <form method=\"post\" action=\"/console/runs/{id}/resume\" class=\"inline\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{token}\"><button>Resume</button></form>",
            id = esc(&run.0)
        );
    }
    if let Some(next) = next_step(&view) {
        body.push_str(&next);
    }
    if let Some(q) = &view.question {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/console/questions/{id}\" class=\"question\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{token}\">\
             <label>Your answer to <q>{prompt}</q> <textarea name=\"answer\" rows=\"2\"></textarea></label>\
             <button>Answer</button></form>",
            id = esc(&q.id),
            prompt = esc(&q.prompt),
        );
    }
    let trusted = trusted_in(&events);
    body.push_str(&doubts(
        &run,
        &view.waiting.waiting_on,
        caller.principal.may(crate::Role::Operator),
        &token,
        &trusted,
    ));
    body.push_str(&gantt(
        &events,
        &report.children,
        view.status.is_live(),
        warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock),
    ));
    body.push_str("<h3>Calls</h3><div class=\"scroll\"><table class=\"calls\"><thead><tr><th>Step</th><th>Call</th><th>Tool</th><th>Status</th><th>Failure</th></tr></thead><tbody>");
    // Each call's status as `warrant show` says it (held for approval, in doubt, ...).
    let shown: std::collections::HashMap<warrant_core::ids::CallId, &str> = view
        .steps
        .iter()
        .flat_map(|s| &s.call_rows)
        .map(|c| (c.call, c.status.as_str()))
        .collect();
    // What each call ran with and what came back, as its events recorded them.
    let mut ran: std::collections::HashMap<
        warrant_core::ids::CallId,
        (Option<&Value>, Option<&Value>),
    > = std::collections::HashMap::new();
    for e in &events {
        match &e.kind {
            EventKind::CallDispatched { call, args, .. } => {
                ran.entry(*call).or_default().0 = Some(&**args);
            }
            EventKind::CallFinished {
                call,
                output: Some(out),
                ..
            } => ran.entry(*call).or_default().1 = Some(&**out),
            _ => {}
        }
    }
    let said = people_said(&events);
    for s in &report.steps {
        for c in &s.calls {
            let fault = c.fault.as_ref().map_or_else(String::new, |f| {
                format!("{} ({}): {}", f.code, f.layer, f.message)
            });
            let status = shown.get(&c.call).copied().unwrap_or("in flight");
            let people = said.get(&c.call).map_or_else(String::new, |lines| {
                let items: String = lines
                    .iter()
                    .map(|l| format!("<li>{}</li>", esc(l)))
                    .collect();
                format!("<ul class=\"people\">{items}</ul>")
            });
            let _ = write!(
                body,
                "<tr id=\"call-{call}\"><td>{}</td><td>{call}</td><td><code>{}</code></td><td>{}{people}</td><td>{}</td></tr>",
                esc(&s.id.0),
                esc(&c.tool),
                esc(status),
                esc(&fault),
                call = c.call,
            );
            let (args, output) = ran.get(&c.call).copied().unwrap_or_default();
            body.push_str(&call_detail(c, args, output, &trusted));
        }
    }
    body.push_str("</tbody></table></div>");
    body.push_str(&carried(&report.carried, &run));
    body.push_str(&requirements(&report.terminal));
    let next = events.last().map_or(1, |e| e.seq.saturating_add(1));
    let _ = write!(
        body,
        "<h3>Timeline</h3><ol id=\"timeline\" data-run=\"{}\" data-from=\"{next}\">",
        esc(&run.0)
    );
    for e in &events {
        body.push_str(&event_line(e));
    }
    body.push_str("</ol></div>");
    page(&format!("Run {}", run.0), "run", Some(&caller), &body).into_response()
}

/// The values carried between steps, each linked to the call it came from: on this run's page,
/// or on the child run's that returned it.
fn carried(
    values: &[warrant_core::report::CarriedReport],
    run: &warrant_core::ids::RunId,
) -> String {
    if values.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Carried values</h3><ul class=\"carried\">");
    for c in values {
        let l = &c.lineage;
        let (page, whose) = if l.run == *run {
            (String::new(), String::new())
        } else {
            (format!("/runs/{}", l.run.0), format!("{}:", l.run.0))
        };
        let _ = write!(
            out,
            "<li><b>{}</b> = <code>{}</code> <small>from <a href=\"{page}#call-{call}\">{whose}{call}</a> \
             (<code>{}</code> in step {}) at <code>{}</code></small></li>",
            esc(&c.name),
            esc(&c.value.to_string()),
            esc(&l.tool),
            esc(&l.step.0),
            esc(if l.path.is_empty() { "/" } else { &l.path }),
            page = esc(&page),
            whose = esc(&whose),
            call = l.call,
        );
    }
    out.push_str("</ul>");
    out
}

/// What happens next to a run that is not being driven, and what (if anything) a person
/// does for it: true of a run this server holds (it goes on by itself once answered).
fn next_step(view: &warrant_app::RunView) -> Option<String> {
    use warrant_core::RunStatus;
    let approvals = view.waiting.approvals.len();
    let doubts = view.waiting.waiting_on.len();
    let text = match view.status {
        RunStatus::Waiting if approvals > 0 => format!(
            "Waits for {approvals} approval{s}: <a href=\"/approvals\">answer {them}</a>; \
             the run goes on by itself once answered.",
            s = if approvals == 1 { "" } else { "s" },
            them = if approvals == 1 { "it" } else { "them" },
        ),
        RunStatus::Waiting if let Some(q) = &view.question => format!(
            "Waits for an answer to its question <q>{}</q> (one that fits <code>{}</code>): \
             below, <code>warrant answer {}</code>, or <code>POST /v1/questions/{}/answer</code>; \
             the run goes on by itself once answered.",
            esc(&q.prompt),
            esc(&q.schema.to_string()),
            esc(&q.id),
            esc(&q.id),
        ),
        RunStatus::Waiting if doubts > 0 => {
            "Waits for a person to say what became of the call in doubt (below); \
             the run goes on by itself after."
                .to_owned()
        }
        RunStatus::Ready => {
            "Answered: it goes on when a process takes it up (this server does within a \
             second; Resume takes it up now)."
                .to_owned()
        }
        RunStatus::Interrupted => {
            "No process drives it any more (its process stopped): Resume takes it up here."
                .to_owned()
        }
        RunStatus::Queued => view.note.as_ref().map_or_else(
            || "Queued: the next free worker takes it up.".to_owned(),
            |n| format!("Queued: {}", esc(n)),
        ),
        RunStatus::Sleeping => format!(
            "Sleeps (a timer), held by the store: it wakes by itself when its time comes{}.",
            view.note
                .as_ref()
                .map_or_else(String::new, |n| format!(" ({})", esc(n)))
        ),
        _ => return None,
    };
    Some(format!("<p class=\"next\" role=\"status\">{text}</p>"))
}

/// The objective's requirements, each met, awaited (the run waits on a person) or missing,
/// with the layer a missing one is attributed to.
fn requirements(terminal: &[warrant_core::report::RequirementReport]) -> String {
    if terminal.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Objective</h3><ul class=\"requirements\">");
    for r in terminal {
        let (class, mark) = match (r.satisfied, &r.waiting) {
            (true, _) => ("met", "✓ met"),
            (false, Some(_)) => ("awaited", "… not yet"),
            (false, None) => ("unmet", "✗ missing"),
        };
        let waiting = r
            .waiting
            .as_ref()
            .map_or_else(String::new, |w| format!(" (waiting: {})", esc(w)));
        let fault = r.fault.as_ref().map_or_else(String::new, |f| {
            format!(
                " <small>[{}] {}</small>",
                esc(&f.layer.to_string()),
                esc(&f.message)
            )
        });
        let _ = write!(
            out,
            "<li class=\"{class}\"><b>{mark}</b> {}: {}{waiting}{fault}</li>",
            esc(&r.step.0),
            esc(&r.requirement)
        );
    }
    out.push_str("</ul>");
    out
}

async fn report_page(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let (caller, run) = match who_and_run(&shared, &headers, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    let report = match shared.app.report(&run).await {
        Ok(r) => r,
        Err(e) => return Problem::from(e).into_response(),
    };
    let outcome = report
        .outcome
        .as_ref()
        .map_or_else(|| report.status.name(), |o| o.name());
    let mut body = format!(
        "<h2>Report of <a href=\"/runs/{id}\"><code>{id}</code></a></h2>\
         <p class=\"outcome\"><span class=\"status s-{o}\">{o}</span> {detail}{conf}</p>\
         <p>{objective}</p><div class=\"scroll\"><table class=\"facts\"><tbody>\
         <tr><th>Spec</th><td>{spec} <code>{hash}</code></td></tr>\
         <tr><th>Decider</th><td>{decider}</td></tr>{build}{parent}\
         <tr><th>Route</th><td>{route}</td></tr>\
         <tr><th>Elapsed</th><td>{elapsed}</td></tr>\
         <tr><th>Usage</th><td>{usage}</td></tr>{answer}</tbody></table></div>",
        id = esc(&run.0),
        o = esc(outcome),
        detail = esc(report.outcome_text().strip_prefix(outcome).unwrap_or("").trim()),
        conf = if report.conformant {
            ""
        } else {
            " <strong>(not conformant)</strong>"
        },
        objective = esc(&report.spec.objective),
        spec = esc(&report.spec.id),
        hash = esc(report.spec.hash.get(..19).unwrap_or(&report.spec.hash)),
        decider = esc(&report.decider.to_string()),
        build = report.build.as_ref().map_or(String::new(), |b| format!(
            "<tr><th>Build</th><td>{}</td></tr>",
            esc(&b.to_string())
        )),
        parent = report.parent.as_ref().map_or(String::new(), |p| format!(
            "<tr><th>Parent</th><td><a href=\"/runs/{r}/report\">{r}</a> step {s} (depth {d})</td></tr>",
            r = esc(&p.run.0),
            s = esc(&p.step.0),
            d = p.depth
        )),
        route = esc(&report.route.join(" → ")),
        elapsed = esc(&report.elapsed_text()),
        usage = esc(&report.usage.text(&report.decider)),
        answer = report.answer.as_ref().map_or(String::new(), |a| format!(
            "<tr><th>Answer</th><td>{} <small>({})</small></td></tr>",
            esc(&a.text),
            esc(&a.kind.to_string())
        )),
    );
    body.push_str("<h3>Steps</h3><div class=\"scroll\"><table><thead><tr><th>Step</th><th>Status</th><th>Provider</th><th>Decisions</th><th>Tokens</th><th>Calls</th><th>Why</th></tr></thead><tbody>");
    for s in &report.steps {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.id.0),
            status_badge(&s.status),
            esc(if s.provider.is_empty() {
                "delegates"
            } else {
                &s.provider
            }),
            s.decisions,
            if s.usage.is_empty() {
                "—".to_owned()
            } else {
                format!(
                    "{} ({})",
                    warrant_core::report::group(s.usage.tokens()),
                    warrant_core::report::dollars(s.usage.cost_micro_usd)
                )
            },
            s.calls.len(),
            s.fault.as_ref().map_or(String::new(), |f| esc(&format!(
                "[{}] {}",
                f.layer, f.message
            ))),
        );
    }
    body.push_str("</tbody></table></div>");
    if !report.children.is_empty() {
        body.push_str("<h3>Child runs</h3><div class=\"scroll\"><table><thead><tr><th>Run</th><th>Outcome</th><th>Step</th><th>Spent</th></tr></thead><tbody>");
        for c in &report.children {
            let how = c.outcome.as_ref().map_or("unfinished", |o| o.name());
            let _ = write!(
                body,
                "<tr><td><a href=\"/runs/{r}/report\">{r}</a></td><td>{}</td><td>{}</td><td>{} decisions, {} calls{}</td></tr>",
                status_badge(how),
                esc(&c.step.0),
                c.spent.decisions,
                c.spent.calls,
                if c.spent.tokens > 0 || c.spent.cost_micro_usd > 0 {
                    format!(
                        ", {}",
                        warrant_core::report::tokens_and_cost(
                            c.spent.tokens,
                            c.spent.cost_micro_usd
                        )
                    )
                } else {
                    String::new()
                },
                r = esc(&c.run.0),
            );
        }
        body.push_str("</tbody></table></div>");
    }
    body.push_str(&carried(&report.carried, &run));
    body.push_str(&requirements(&report.terminal));
    if !report.unsettled.is_empty() {
        body.push_str("<h3>Unsettled</h3><ul>");
        for u in &report.unsettled {
            let _ = write!(
                body,
                "<li>{} <code>{}</code> on {} <code>{}</code>: {}</li>",
                u.call,
                esc(&u.tool),
                esc(&u.provider),
                esc(&u.args.to_string()),
                esc(&u.detail())
            );
        }
        body.push_str("</ul>");
    }
    body.push_str("<h3>Failures by layer</h3>");
    if report.failures.is_empty() {
        body.push_str("<p>None.</p>");
    } else {
        body.push_str("<div class=\"scroll\"><table><thead><tr><th>Layer</th><th>Code</th><th>Where</th><th>What</th></tr></thead><tbody>");
        for f in &report.failures {
            let at = match (&f.step, f.call) {
                (Some(s), Some(c)) => format!("{} {c}", s.0),
                (Some(s), None) => s.0.to_string(),
                _ => String::new(),
            };
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.layer.to_string()),
                esc(&f.code),
                esc(&at),
                esc(&f.message)
            );
        }
        body.push_str("</tbody></table></div>");
    }
    if !report.warnings.is_empty() {
        body.push_str("<h3>Warnings</h3><ul>");
        for w in &report.warnings {
            let _ = write!(body, "<li>{}</li>", esc(w));
        }
        body.push_str("</ul>");
    }
    let _ = write!(
        body,
        "<p><a href=\"/v1/runs/{}/report\">This report as JSON</a> (<code>warrant.run-report/1</code>)</p>",
        esc(&run.0)
    );
    page(&format!("Report {}", run.0), "report", Some(&caller), &body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_html_and_terminals() {
        assert_eq!(
            esc("<script>alert('x')</script>&\"\u{1b}[2J"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\\u{001b}[2J"
        );
    }
}

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
use sha2::{Digest as _, Sha256};
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
        .route("/console/approvals/{id}", post(answer_form))
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
fn page(title: &str, page: &str, caller: Option<&Caller>, body: &str) -> Html<String> {
    let nav = match caller {
        Some(c) => format!(
            "<nav><a href=\"/\">Runs</a> <a href=\"/approvals\">Approvals \
             <span id=\"pending\" class=\"count\" aria-live=\"polite\" \
             title=\"approval requests waiting\"></span></a> \
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
         <body data-page=\"{page}\"><header><h1>Warrant</h1>{nav}</header><main>{body}</main></body></html>",
        esc(title)
    ))
}

/// The CSRF token of `caller`'s session: keyed by the server's secret and the cookie.
fn csrf(shared: &Shared, headers: &HeaderMap) -> String {
    let mut h = Sha256::new();
    h.update(shared.secret);
    h.update(cookie(headers, COOKIE).unwrap_or("local").as_bytes());
    format!("{:x}", h.finalize())
}

fn check_csrf(shared: &Shared, headers: &HeaderMap, given: &str) -> Result<(), Problem> {
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
async fn who(shared: &Arc<Shared>, headers: &HeaderMap) -> Result<Caller, Response> {
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
    cursor: Option<String>,
}

/// The statuses the runs list filters by.
const STATUS_CHOICES: [warrant_core::RunStatus; 10] = [
    warrant_core::RunStatus::Queued,
    warrant_core::RunStatus::Running,
    warrant_core::RunStatus::Interrupted,
    warrant_core::RunStatus::Waiting,
    warrant_core::RunStatus::Ready,
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
    let query = RunsQuery {
        status: Some(filter.status.clone()).filter(|s| !s.is_empty()),
        spec: Some(filter.spec.trim().to_owned()).filter(|s| !s.is_empty()),
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
    let mut body = format!(
        "<h2>Runs</h2><form method=\"get\" action=\"/\" class=\"filters\">\
         <label>Status <select name=\"status\"><option value=\"\">any</option>{options}</select></label> \
         <label>Spec <input name=\"spec\" value=\"{spec}\" size=\"14\"></label> \
         <label>Run id <input name=\"run\" value=\"{run}\" size=\"14\"></label> \
         <button>Show</button></form>\
         <div id=\"runs-view\"><table id=\"runs\"><thead><tr><th>Run</th><th>Spec</th>\
         <th>Status</th><th>Started</th><th>Decider</th><th>Events</th></tr></thead><tbody>",
        spec = esc(&filter.spec),
        run = esc(search),
    );
    for r in &runs {
        let _ = write!(
            body,
            "<tr data-run=\"{id}\"><td><a href=\"/runs/{id}\">{id}</a></td><td>{}</td><td>{}</td>\
             <td><time data-ms=\"{ms}\">{ms}</time></td><td>{}</td><td>{}</td></tr>",
            esc(&r.spec_id),
            status_badge(r.status),
            esc(&r.decider),
            r.events,
            id = esc(&r.run_id.0),
            ms = r.started_at_ms,
        );
    }
    body.push_str("</tbody></table>");
    if runs.is_empty() {
        body.push_str("<p class=\"empty\">No runs here.</p>");
    }
    if let Some(next) = &found.next {
        let mut link = vec![("cursor", next.as_str())];
        for (k, v) in [
            ("status", &filter.status),
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

/// `text` escaped for a URL's query.
fn url_escape(text: &str) -> String {
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
        Source::Objective | Source::Input { .. } | Source::Carried { .. } | Source::Unobserved => {
            false
        }
    }
}

/// An approval request's arguments, each value with where it came from; untrusted ones
/// stand out.
fn args_table(
    args: &Value,
    provenance: &[warrant_core::provenance::ArgLabel],
    trusted: &BTreeSet<String>,
) -> String {
    let mut out = String::from("<table class=\"args\"><tbody>");
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
    out.push_str("</tbody></table>");
    out
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn when(ms: u64) -> String {
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
        other => return Problem::bad_request(format!("no action `{other}`")).into_response(),
    };
    match shared.answer(&caller, &id, &form.args_digest, answer).await {
        Ok(_) => {
            let run = id.rsplit_once("-a").map_or("", |(r, _)| r);
            Redirect::to(&format!("/runs/{run}")).into_response()
        }
        Err(p) => p.into_response(),
    }
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
    if let Err(p) = check_csrf(&shared, &headers, &form.csrf) {
        return p.into_response();
    }
    let (caller, run) = match who_and_run(&shared, &headers, &id).await {
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
         route {route} · <a href=\"/runs/{id}/report\">report</a></p>",
        id = esc(&run.0),
        spec = esc(&view.spec.id),
        objective = esc(&view.spec.objective),
        status = view.status,
        route = esc(&report.route.join(" → ")),
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
    if !view.waiting.approvals.is_empty() {
        let _ = write!(
            body,
            "<p class=\"waiting\">{} approval request(s) wait: <a href=\"/approvals\">answer them</a>.</p>",
            view.waiting.approvals.len()
        );
    }
    body.push_str("<h3>Calls</h3><table class=\"calls\"><thead><tr><th>Step</th><th>Call</th><th>Tool</th><th>Status</th><th>Failure</th></tr></thead><tbody>");
    // Each call's status as `warrant show` says it (held for approval, in doubt, ...).
    let shown: std::collections::HashMap<warrant_core::ids::CallId, &str> = view
        .steps
        .iter()
        .flat_map(|s| &s.call_rows)
        .map(|c| (c.call, c.status.as_str()))
        .collect();
    let trusted = trusted_in(&events);
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
    for s in &report.steps {
        for c in &s.calls {
            let fault = c.fault.as_ref().map_or_else(String::new, |f| {
                format!("{} ({}): {}", f.code, f.layer, f.message)
            });
            let status = shown.get(&c.call).copied().unwrap_or("in flight");
            let _ = write!(
                body,
                "<tr id=\"call-{call}\"><td>{}</td><td>{call}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
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
    body.push_str("</tbody></table>");
    if !report.carried.is_empty() {
        body.push_str("<h3>Carried values</h3><ul>");
        for c in &report.carried {
            let l = &c.lineage;
            let _ = write!(
                body,
                "<li><b>{}</b> = <code>{}</code> <small>from <a href=\"#call-{call}\">{call}</a> \
                 (<code>{}</code> in step {}) at <code>{}</code></small></li>",
                esc(&c.name),
                esc(&c.value.to_string()),
                esc(&l.tool),
                esc(&l.step.0),
                esc(if l.path.is_empty() { "/" } else { &l.path }),
                call = l.call,
            );
        }
        body.push_str("</ul>");
    }
    if !report.terminal.is_empty() {
        body.push_str("<h3>Objective</h3><ul>");
        for r in &report.terminal {
            let (class, mark) = match (r.satisfied, &r.waiting) {
                (true, _) => ("met", "✓"),
                (false, Some(_)) => ("awaited", "…"),
                (false, None) => ("unmet", "✗"),
            };
            let waiting = r
                .waiting
                .as_ref()
                .map_or_else(String::new, |w| format!(" (waiting: {})", esc(w)));
            let _ = write!(
                body,
                "<li class=\"{class}\">{mark} {}: {}{waiting}</li>",
                esc(&r.step.0),
                esc(&r.requirement)
            );
        }
        body.push_str("</ul>");
    }
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
         <p class=\"outcome s-{o}\">Outcome: <b>{o}</b>{conf}</p><p>{objective}</p>\
         <p>Route: {route}</p><p>Took {elapsed} ms ({setup} ms starting providers), \
         {decisions} decisions, {calls} calls, {events} events.</p>",
        id = esc(&run.0),
        o = esc(outcome),
        conf = if report.conformant {
            ""
        } else {
            " (not conformant)"
        },
        objective = esc(&report.spec.objective),
        route = esc(&report.route.join(" → ")),
        elapsed = report.timings.elapsed_ms,
        setup = report.timings.setup_ms,
        decisions = report.timings.decisions,
        calls = report.timings.calls,
        events = report.timings.events,
    );
    body.push_str("<h3>Steps</h3><table><thead><tr><th>Step</th><th>Status</th><th>Decisions</th><th>Calls</th></tr></thead><tbody>");
    for s in &report.steps {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.id.0),
            status_badge(&s.status),
            s.decisions,
            s.calls.len()
        );
    }
    body.push_str("</tbody></table><h3>Failures by layer</h3>");
    if report.failures.is_empty() {
        body.push_str("<p>None.</p>");
    } else {
        body.push_str("<table><thead><tr><th>Layer</th><th>Code</th><th>Where</th><th>What</th></tr></thead><tbody>");
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
        body.push_str("</tbody></table>");
    }
    if !report.warnings.is_empty() {
        body.push_str("<h3>Warnings</h3><ul>");
        for w in &report.warnings {
            let _ = write!(body, "<li>{}</li>", esc(w));
        }
        body.push_str("</ul>");
    }
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

//! The console's schedules page: the tenant's schedules (what each starts, when, its next tick
//! and how its last went), each paused or resumed by an operator through the same path as
//! `POST /v1/schedules/{id}/pause` and `/resume`.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::Shared;
use crate::auth::Role;
use crate::console::{check_csrf, csrf, esc, page, when, who};
use crate::problem::Problem;

/// `GET /schedules`.
pub(crate) async fn schedules_page(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let rows = match shared
        .app
        .schedule_views(Some(&caller.principal.tenant), now)
        .await
    {
        Ok(r) => r,
        Err(e) => return Problem::from(e).into_response(),
    };
    let operator = caller.principal.may(Role::Operator);
    let token = csrf(&shared, &headers);
    let mut body = String::from("<h2>Schedules</h2>");
    if rows.is_empty() {
        body.push_str(
            "<p class=\"empty\">No schedules. An operator adds one with \
             <code>warrant schedules add</code>.</p>",
        );
        return page("Schedules", "schedules", Some(&caller), &body).into_response();
    }
    body.push_str(
        "<div class=\"scroll\"><table id=\"schedules\"><thead><tr><th>Schedule</th>\
         <th>When</th><th>Starts</th><th>Next tick</th><th>Last tick</th><th></th></tr></thead><tbody>",
    );
    for s in &rows {
        let next = s.next_tick_ms.map_or_else(|| "—".to_owned(), when);
        let last = match &s.last_tick {
            None => "never".to_owned(),
            Some(t) => {
                let run = t.run_id.as_ref().map_or(String::new(), |r| {
                    format!(" <a href=\"/runs/{r}\">{r}</a>", r = esc(&r.0))
                });
                let note = t
                    .note
                    .as_deref()
                    .map_or(String::new(), |n| format!(" <small>{}</small>", esc(n)));
                format!("{} {}{run}{note}", when(t.at_ms), t.state.name())
            }
        };
        let control = if operator {
            let (action, label) = if s.paused {
                ("resume", "Resume")
            } else {
                ("pause", "Pause")
            };
            format!(
                "<form method=\"post\" action=\"/console/schedules/{id}/{action}\" class=\"inline\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{token}\"><button>{label}</button></form>",
                id = esc(&s.id)
            )
        } else {
            String::new()
        };
        let _ = write!(
            body,
            "<tr data-schedule=\"{id}\"><td>{id}{paused}</td><td><code>{cron}</code> {tz}</td>\
             <td>{spec}</td><td>{next}</td><td>{last}</td><td>{control}</td></tr>",
            id = esc(&s.id),
            paused = if s.paused {
                " <span class=\"status\">paused</span>"
            } else {
                ""
            },
            cron = esc(&s.cron),
            tz = esc(&s.time_zone),
            spec = esc(&s.spec_id),
        );
    }
    body.push_str("</tbody></table></div>");
    page("Schedules", "schedules", Some(&caller), &body).into_response()
}

#[derive(Deserialize)]
pub(crate) struct ScheduleForm {
    csrf: String,
}

/// `POST /console/schedules/{id}/{pause|resume}`.
pub(crate) async fn schedule_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    UrlPath((id, action)): UrlPath<(String, String)>,
    Form(form): Form<ScheduleForm>,
) -> Response {
    if let Err(p) = check_csrf(&shared, &headers, &form.csrf) {
        return p.into_response();
    }
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let paused = match action.as_str() {
        "pause" => true,
        "resume" => false,
        other => {
            return Problem::not_found(format!("no action `{}`", esc(other))).into_response();
        }
    };
    match shared.schedule_paused(&caller, &id, paused).await {
        Ok(_) => Redirect::to("/schedules").into_response(),
        Err(p) => p.into_response(),
    }
}

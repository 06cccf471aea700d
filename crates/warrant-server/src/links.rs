//! Signed approve and deny links, as a webhook's notice carries them
//! (`warrant_app::webhooks::Link`): `GET /links/approvals/{id}?answer&digest&expires&sig`
//! checks the signature and the expiry and shows what is asked, with one button; only that
//! page's `POST` records the answer (a chat client that fetches a link to preview it answers
//! nothing). The answer goes through the same path as the API's (`Shared::answer`): the
//! arguments' digest is checked against the request's, the approval is consumed once, and the
//! run's log records who answered as `<tenant>/link:<as>`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, Path as UrlPath, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use warrant_core::event::ApprovalScope;
use warrant_core::ids::RunId;
use warrant_core::status::ApprovalState;
use warrant_engine::Answer;

use crate::Shared;
use crate::api::Caller;
use crate::auth::{Principal, Role};
use crate::console::{esc, page};
use crate::problem::Problem;

/// A link's query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkQuery {
    answer: String,
    digest: String,
    expires: u64,
    sig: String,
}

/// What a person may add to a denial.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkForm {
    #[serde(default)]
    reason: String,
}

pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new().route("/links/approvals/{id}", get(show).post(answer))
}

/// The link's answer and the principal it acts as, once its signature and expiry hold.
async fn checked(
    shared: &Shared,
    request: &str,
    q: &LinkQuery,
) -> Result<(warrant_app::webhooks::Link, Caller), Problem> {
    let Some(links) = shared.webhooks.as_ref().and_then(|w| w.links.as_ref()) else {
        return Err(Problem::not_found(
            "this server answers no links (its webhooks file has no `links`)",
        ));
    };
    let approve = match q.answer.as_str() {
        "approve" => true,
        "deny" => false,
        other => {
            return Err(Problem::bad_request(format!(
                "`answer` `{}`: `approve` or `deny`",
                warrant_core::text::echo(other)
            )));
        }
    };
    let link = warrant_app::webhooks::Link {
        request: request.to_owned(),
        approve,
        digest: q.digest.clone(),
        expires_ms: q.expires,
    };
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    link.check(&q.sig, links, now).map_err(Problem::forbidden)?;
    let run = RunId::of_request(request)
        .ok_or_else(|| Problem::not_found(format!("no approval request `{}`", esc(request))))?;
    let tenant = shared
        .app
        .tenant_of(&run)
        .await?
        .unwrap_or_else(|| Principal::local().tenant);
    let caller = Caller {
        principal: Principal {
            tenant,
            user: format!("link:{}", links.user),
            roles: [Role::Approver].into_iter().collect(),
        },
    };
    Ok((link, caller))
}

/// `GET`: what is asked, and the one button that answers it.
async fn show(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<LinkQuery>,
) -> Response {
    let (link, caller) = match checked(&shared, &id, &q).await {
        Ok(found) => found,
        Err(p) => return p.into_response(),
    };
    let row = match shared.request(&caller, &id).await {
        Ok(row) => row,
        Err(p) => return p.into_response(),
    };
    let mut body = format!(
        "<h2>{} <code>{}</code> on {}?</h2><p>Run <code>{}</code> asks: {}</p>",
        if link.approve { "Approve" } else { "Deny" },
        esc(&row.tool),
        esc(&row.provider),
        esc(&row.run.0),
        esc(&row.reason),
    );
    let args = serde_json::to_string_pretty(&*row.args).unwrap_or_default();
    body.push_str(&format!(
        "<pre class=\"args\">{}</pre><p class=\"digest\">Arguments digest <code>{}</code></p>",
        esc(&warrant_core::text::sanitize(&args)),
        esc(&row.args_digest)
    ));
    if row.status != ApprovalState::Pending {
        body.push_str(&format!(
            "<p>This request is {} already: nothing to answer.</p>",
            row.status.name()
        ));
        return page("Approval", "link", None, &body).into_response();
    }
    if row.args_digest != link.digest {
        body.push_str(
            "<p>The arguments are not the ones this link was made for: answer it in the console.</p>",
        );
        return page("Approval", "link", None, &body).into_response();
    }
    let action = format!(
        "/links/approvals/{}?answer={}&amp;digest={}&amp;expires={}&amp;sig={}",
        esc(&id),
        link.answer(),
        esc(&q.digest),
        q.expires,
        esc(&q.sig)
    );
    let reason = if link.approve {
        ""
    } else {
        "<label>Why <input name=\"reason\" maxlength=\"500\"></label> "
    };
    body.push_str(&format!(
        "<form method=\"post\" action=\"{action}\">{reason}<button>{}</button></form>",
        if link.approve { "Approve" } else { "Deny" }
    ));
    page("Approval", "link", None, &body).into_response()
}

/// `POST`: records the answer, as the API's approve and deny do.
async fn answer(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<LinkQuery>,
    Form(form): Form<LinkForm>,
) -> Response {
    let (link, caller) = match checked(&shared, &id, &q).await {
        Ok(found) => found,
        Err(p) => return p.into_response(),
    };
    let said = if link.approve {
        Answer::Approve {
            scope: ApprovalScope::Once,
            until_ms: None,
            edited: None,
        }
    } else {
        let reason = match form.reason.trim() {
            "" => format!("denied through a link ({})", caller.principal.user),
            r => r.chars().take(500).collect(),
        };
        Answer::Deny { reason }
    };
    match shared.answer(&caller, &id, &link.digest, said).await {
        Ok(done) => {
            let body = format!(
                "<h2>{}</h2><p>Request <code>{}</code> is {}{}.</p>",
                if done.recorded {
                    "Recorded"
                } else {
                    "Already answered"
                },
                esc(&done.request),
                done.status.name(),
                if done.recorded {
                    "; the run goes on"
                } else {
                    ""
                },
            );
            page("Approval", "link", None, &body).into_response()
        }
        Err(p) => p.into_response(),
    }
}

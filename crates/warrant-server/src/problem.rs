//! Errors as RFC 9457 problem details (`application/problem+json`), each with a stable `type`
//! a client can branch on; never a bare 500 with text.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A problem, as the API answers it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Problem {
    /// A stable URI naming the kind of problem (`urn:warrant:problem:<kind>`).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind.
    pub title: &'static str,
    /// The HTTP status.
    pub status: u16,
    /// What is wrong here, and where.
    pub detail: String,
    /// For a 429: seconds after which trying again may succeed (the `Retry-After` header).
    #[serde(skip)]
    #[schemars(skip)]
    pub retry_after_s: Option<u64>,
}

impl Problem {
    fn new(status: u16, kind: &str, title: &'static str, detail: impl Into<String>) -> Problem {
        Problem {
            kind: format!("urn:warrant:problem:{kind}"),
            title,
            status,
            detail: detail.into(),
            retry_after_s: None,
        }
    }

    /// 429: a tenant reached a quota; `Retry-After` says when to try again.
    pub fn too_many(e: &warrant_app::Exceeded) -> Problem {
        let mut p = Problem::new(429, "quota", "A quota is reached", e.to_string());
        p.retry_after_s = Some(e.retry_after_ms.div_ceil(1000).max(1));
        p
    }

    /// 400: the request is malformed (not JSON, a wrong field, a bad header).
    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(400, "bad-request", "The request is malformed", detail)
    }
    /// 401: no token, or one nobody has.
    pub fn unauthorized(detail: impl Into<String>) -> Problem {
        Problem::new(401, "unauthorized", "Who is asking is not known", detail)
    }
    /// 403: the principal's roles do not allow it, or the form's CSRF token is wrong.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(403, "forbidden", "Not allowed", detail)
    }
    /// 404: nothing there, or nothing the caller's tenant may see (ids do not leak).
    pub fn not_found(detail: impl Into<String>) -> Problem {
        Problem::new(404, "not-found", "Not found", detail)
    }
    /// 405.
    pub fn method_not_allowed() -> Problem {
        Problem::new(
            405,
            "method-not-allowed",
            "Method not allowed",
            "this path does not take this method (see /v1/openapi.json)",
        )
    }
    /// 409: the state does not allow it (an answered request, a digest that is not the one
    /// asked about, an idempotency key reused with another body).
    pub fn conflict(kind: &str, detail: impl Into<String>) -> Problem {
        Problem::new(409, kind, "Conflict", detail)
    }
    /// 408: the body did not arrive in time.
    pub fn timeout(limit: std::time::Duration) -> Problem {
        Problem::new(
            408,
            "timeout",
            "The body came too slowly",
            format!("a request's body must arrive within {} s", limit.as_secs()),
        )
    }
    /// 413: the body is over the limit.
    pub fn too_large(limit: usize) -> Problem {
        Problem::new(
            413,
            "too-large",
            "The body is too large",
            format!("bodies are limited to {limit} bytes"),
        )
    }
    /// 422: well-formed, but the spec or the options do not validate.
    pub fn invalid(detail: impl Into<String>) -> Problem {
        Problem::new(422, "invalid", "The input does not validate", detail)
    }
    /// 503: the server is busy (its run limit) or shutting down.
    pub fn unavailable(detail: impl Into<String>) -> Problem {
        Problem::new(503, "unavailable", "Not available now", detail)
    }
    /// 500: something failed on the way (a provider, the store).
    pub fn internal(detail: impl Into<String>) -> Problem {
        Problem::new(500, "failed", "The operation failed", detail)
    }
}

impl From<warrant_app::AppError> for Problem {
    /// The one place an application error becomes an HTTP status: by its kind, never by the
    /// handler it came from.
    fn from(e: warrant_app::AppError) -> Problem {
        use warrant_app::AppError;
        match e {
            AppError::Invalid(d) => Problem::invalid(d),
            AppError::NotFound(d) => Problem::not_found(d),
            AppError::Conflict(d) => Problem::conflict("conflict", d),
            AppError::Held(d) => Problem::conflict("driven-elsewhere", d),
            AppError::Unavailable(d) | AppError::Interrupted(d) => Problem::unavailable(d),
            AppError::Forbidden(d) => Problem::forbidden(d),
            AppError::Failed(d) => Problem::internal(d),
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(mut self) -> Response {
        // INVARIANT (a caller narrows, never widens): no server path, no secret value.
        if let std::borrow::Cow::Owned(hidden) = crate::hidden::hide(&self.detail) {
            self.detail = hidden;
        }
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(s) = self.retry_after_s
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use warrant_app::AppError;

    use super::Problem;

    #[test]
    fn each_kind_of_error_has_one_status_wherever_it_comes_from() {
        let status = |e: AppError| Problem::from(e).status;
        assert_eq!(status(AppError::Invalid("x".into())), 422);
        assert_eq!(status(AppError::NotFound("x".into())), 404);
        assert_eq!(status(AppError::Conflict("x".into())), 409);
        assert_eq!(status(AppError::Held("x".into())), 409);
        assert_eq!(status(AppError::Forbidden("x".into())), 403);
        assert_eq!(status(AppError::Failed("x".into())), 500);
        assert_eq!(status(AppError::Interrupted("x".into())), 503);
        // A store outage, met answering an approval or anywhere else: 503, not the answer's
        // fault.
        let outage = warrant_core::store::StoreError::Io("the disk is gone".into());
        assert_eq!(status(outage.into()), 503);
    }
}

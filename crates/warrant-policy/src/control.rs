//! The external execution-control port's shipped adapter: an HTTP(S) endpoint asked, for each
//! commit call, whether it may go ahead.
//!
//! Wire: `POST <url>` with the JSON body `{run, step, call, provider, tool, effect, args,
//! args_digest, provenance}`; the answer is `200` with `{"decision": "allow" | "block" |
//! "indeterminate", "reason": "..."}` (any transfer encoding). Anything else — another status,
//! a body that does not parse or is over 64 KiB, a connection that fails — is indeterminate,
//! which stops the call. The engine bounds the wait by the control's `timeout_ms`; the client
//! also gives up on connecting after 10 s.

use std::time::Duration;

use serde_json::{Value, json};
use warrant_core::ports::{BoxFuture, CapabilityRequest, ControlVerdict, ExecutionControl};

/// Most bytes read of an answer.
const ANSWER_BYTES_MAX: usize = 64 * 1024;

/// Longest wait to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest wait for a whole answer when the engine does not bound it first.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// An execution-control authority behind an HTTP(S) endpoint.
#[derive(Clone, Debug)]
pub struct HttpControl {
    url: String,
    http: reqwest::Client,
}

impl HttpControl {
    /// An endpoint at `url` (`http://` or `https://`).
    pub fn new(url: &str) -> Result<HttpControl, String> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| format!("execution control `{url}` is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(format!(
                "execution control `{url}`: give an `http://` or `https://` URL with a host"
            ));
        }
        let http = warrant_http::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(ANSWER_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(HttpControl {
            url: url.to_owned(),
            http,
        })
    }

    async fn ask(&self, body: Value) -> Result<ControlVerdict, String> {
        let url = &self.url;
        let mut answer = self
            .http
            .post(url)
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("cannot reach `{url}`: {}", root_cause(&e)))?;
        let status = answer.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = answer
            .chunk()
            .await
            .map_err(|e| format!("reading from `{url}`: {}", root_cause(&e)))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > ANSWER_BYTES_MAX {
                return Err(format!(
                    "`{url}` answered more than {ANSWER_BYTES_MAX} bytes"
                ));
            }
        }
        if status != reqwest::StatusCode::OK {
            return Err(format!("`{url}` answered HTTP {status}"));
        }
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("`{url}` answered with a body that is not JSON: {e}"))?;
        let reason = v
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Ok(match v.get("decision").and_then(Value::as_str) {
            Some("allow") => ControlVerdict::Allow,
            Some("block") => ControlVerdict::Block { reason },
            Some("indeterminate") => ControlVerdict::Indeterminate { reason },
            other => {
                return Err(format!("`{url}` answered an unknown decision {other:?}"));
            }
        })
    }
}

/// The innermost cause of a transport error, without reqwest's wrapping (which repeats the
/// URL).
fn root_cause(e: &reqwest::Error) -> String {
    let mut inner: &dyn std::error::Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}

impl ExecutionControl for HttpControl {
    fn evaluate<'a>(&'a self, r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, ControlVerdict> {
        let body = json!({
            "run": r.run, "step": r.step, "call": r.call, "provider": r.provider, "tool": r.tool,
            "effect": r.effect, "args": r.args, "args_digest": r.args_digest, "provenance": r.provenance,
        });
        Box::pin(async move {
            self.ask(body)
                .await
                .unwrap_or_else(|reason| ControlVerdict::Indeterminate { reason })
        })
    }

    fn describe(&self) -> Option<Value> {
        Some(json!({"http": {"url": self.url}}))
    }
}

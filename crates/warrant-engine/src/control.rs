//! The external execution-control port's shipped adapter: an HTTP endpoint asked, for each
//! commit call, whether it may go ahead.
//!
//! Wire: `POST <url>` with the JSON body `{run, step, call, provider, tool, effect, args,
//! args_digest, provenance}`; the answer is `200` with `{"decision": "allow" | "block" |
//! "indeterminate", "reason": "..."}`. Anything else (another status, a body that does not
//! parse, a closed connection) is indeterminate, which stops the call. Plain HTTP only; point
//! it at a local sidecar.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warrant_core::ports::{BoxFuture, CapabilityRequest, ControlVerdict, ExecutionControl};

/// Most bytes read of an answer.
const ANSWER_BYTES_MAX: u64 = 64 * 1024;

/// An execution-control authority behind an HTTP endpoint.
#[derive(Clone, Debug)]
pub struct HttpControl {
    url: String,
    authority: String,
    path: String,
}

impl HttpControl {
    /// An endpoint at `url` (`http://host:port/path`).
    pub fn new(url: &str) -> Result<HttpControl, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("execution control `{url}`: only `http://host:port/path` URLs are supported")
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(format!("execution control `{url}`: no host"));
        }
        Ok(HttpControl {
            url: url.to_owned(),
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }

    async fn ask(&self, body: String) -> Result<ControlVerdict, String> {
        let mut stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| format!("cannot reach `{}`: {e}", self.url))?;
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.path,
            self.authority,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("sending to `{}`: {e}", self.url))?;
        let mut answer = Vec::new();
        stream
            .take(ANSWER_BYTES_MAX)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| format!("reading from `{}`: {e}", self.url))?;
        let answer = String::from_utf8_lossy(&answer);
        let (head, body) = answer
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("`{}` answered without an HTTP body", self.url))?;
        let status = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("");
        if status != "200" {
            return Err(format!("`{}` answered HTTP {status}", self.url));
        }
        let v: Value = serde_json::from_str(body.trim())
            .map_err(|e| format!("`{}` answered with a body that is not JSON: {e}", self.url))?;
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
                return Err(format!(
                    "`{}` answered an unknown decision {other:?}",
                    self.url
                ));
            }
        })
    }
}

impl ExecutionControl for HttpControl {
    fn evaluate<'a>(&'a self, r: &'a CapabilityRequest<'a>) -> BoxFuture<'a, ControlVerdict> {
        let body = json!({
            "run": r.run, "step": r.step, "call": r.call, "provider": r.provider, "tool": r.tool,
            "effect": r.effect, "args": r.args, "args_digest": r.args_digest, "provenance": r.provenance,
        })
        .to_string();
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

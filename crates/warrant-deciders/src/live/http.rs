//! One request to a model's endpoint: retries with exponential backoff and jitter for 429, 5xx
//! and connection errors (honouring `retry-after`), none for other 4xx; the answer read as a
//! server-sent-event stream or as JSON; every attempt recorded.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use serde_json::{Value, json};
use warrant_core::codes::Code;
use warrant_core::num;

/// Most bytes of an answer kept in the recorded exchange.
pub const RECORDED_BYTES_MAX: usize = 256 * 1024;
/// Most bytes of an answer read at all.
const ANSWER_BYTES_MAX: usize = 16 << 20;

/// How often and how long to retry.
#[derive(Clone, Copy, Debug)]
pub struct Retry {
    /// Attempts in all (the first included).
    pub attempts: u32,
    /// The first backoff; each next one doubles.
    pub base_ms: u64,
    /// The longest single wait (also caps `retry-after`).
    pub max_wait_ms: u64,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 4,
            base_ms: 500,
            max_wait_ms: 30_000,
        }
    }
}

/// A request: where, with which headers (secret ones are never recorded), what.
pub struct Request<'a> {
    /// The URL (no secret in it).
    pub url: &'a str,
    /// Headers: (name, value, secret).
    pub headers: &'a [(String, String, bool)],
    /// The JSON body.
    pub body: &'a Value,
}

/// What came back: the raw text of a 2xx answer.
pub struct Answer {
    /// The text (an SSE stream or a JSON document).
    pub text: String,
    /// Whether the stream broke off (a read error) before its end.
    pub broken: Option<String>,
}

/// Why no answer came.
pub struct Failure {
    /// What went wrong: `http_status`, `unreachable`, ...
    pub code: Code,
    /// For humans (never a secret).
    pub message: String,
}

/// Sends `request`, retrying what may be retried; records each attempt into `attempts`.
pub async fn send(
    client: &reqwest::Client,
    request: &Request<'_>,
    retry: Retry,
    attempts: &mut Vec<Value>,
) -> Result<Answer, Failure> {
    let mut n = 0u32;
    loop {
        n += 1;
        let mut builder = client.post(request.url).json(request.body);
        for (name, value, secret) in request.headers {
            match reqwest::header::HeaderValue::from_str(value) {
                Ok(mut v) => {
                    v.set_sensitive(*secret);
                    builder = builder.header(name.as_str(), v);
                }
                Err(_) => {
                    return Err(Failure {
                        code: Code::InvalidHeader,
                        message: format!("header `{name}` has a value that cannot be sent"),
                    });
                }
            }
        }
        let (retryable, wait_hint, outcome) = match builder.send().await {
            Err(e) => {
                let message = format!("{}: {}", request.url, without_url(&e));
                attempts.push(json!({"attempt": n, "error": message}));
                (
                    true,
                    None,
                    Err(Failure {
                        code: Code::Unreachable,
                        message,
                    }),
                )
            }
            Ok(response) => {
                let status = response.status();
                let hint = retry_after(response.headers());
                if status.is_success() {
                    attempts.push(json!({"attempt": n, "status": status.as_u16()}));
                    return Ok(read(response).await);
                }
                let body = read(response).await.text;
                let excerpt: String = body.chars().take(500).collect();
                attempts.push(json!({"attempt": n, "status": status.as_u16(), "body": excerpt}));
                let retryable = status.as_u16() == 429 || status.is_server_error();
                (
                    retryable,
                    hint,
                    Err(Failure {
                        code: Code::HttpStatus,
                        message: format!("{} answered {status}: {excerpt}", request.url),
                    }),
                )
            }
        };
        if !retryable || n >= retry.attempts {
            return match outcome {
                Err(mut f) => {
                    if retryable {
                        f.message = format!("{} (after {n} attempts)", f.message);
                    }
                    Err(f)
                }
                Ok(a) => Ok(a),
            };
        }
        let backoff = retry.base_ms.saturating_mul(1 << (n - 1).min(16));
        let wait = wait_hint
            .unwrap_or_else(|| backoff + jitter(backoff))
            .min(retry.max_wait_ms);
        if let Some(last) = attempts.last_mut().and_then(Value::as_object_mut) {
            last.insert("retry_in_ms".into(), json!(wait));
        }
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// A connection error's text, with its causes, and without the URL reqwest puts in it (the
/// caller names the URL; a URL could carry a secret).
fn without_url(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the answer broke off"
    } else {
        "request failed"
    };
    if parts.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {}", parts.join(": "))
    }
}

/// `retry-after-ms`, or `retry-after` in seconds.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    get("retry-after-ms")
        .map(num::to_u64)
        .or_else(|| get("retry-after").map(|s| num::to_u64(s * 1000.0)))
}

/// Up to `span` ms of randomness (a fresh hasher's seed is random per process and call).
fn jitter(span: u64) -> u64 {
    if span == 0 {
        return 0;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(span);
    h.finish() % span
}

/// Reads an answer's text, chunk by chunk; a read error keeps what came and says so.
async fn read(mut response: reqwest::Response) -> Answer {
    let mut bytes = Vec::new();
    let mut broken = None;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > ANSWER_BYTES_MAX {
                    broken = Some(format!("the answer is over {ANSWER_BYTES_MAX} bytes"));
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                broken = Some(without_url(&e));
                break;
            }
        }
    }
    Answer {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        broken,
    }
}

/// Server-sent events in `text`: (event name, data), in order. An unfinished last event (no
/// blank line after it) is left out: the stream broke before it was whole.
pub fn events(text: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    let mut data: Vec<&str> = Vec::new();
    let normalized = text.replace("\r\n", "\n");
    let mut lines = normalized.split('\n').peekable();
    while let Some(line) = lines.next() {
        // The last piece has no newline after it: unfinished.
        if lines.peek().is_none() {
            break;
        }
        if line.is_empty() {
            if !data.is_empty() {
                out.push((name.take(), data.join("\n")));
            }
            name = None;
            data.clear();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push(v.strip_prefix(' ').unwrap_or(v));
        } else if let Some(v) = line.strip_prefix("event:") {
            name = Some(v.trim().to_owned());
        }
    }
    out
}

/// A request body for the record: whole up to the same limit as answers; past it, its size and
/// digest.
pub fn recorded_request(body: &Value) -> Value {
    let text = body.to_string();
    if text.len() <= RECORDED_BYTES_MAX {
        return body.clone();
    }
    json!({"truncated": true, "bytes": text.len(), "digest": warrant_core::canon::digest(body)})
}

/// `text` cut for the record, marked when cut.
pub fn recorded(text: &str) -> Value {
    if text.len() <= RECORDED_BYTES_MAX {
        return Value::String(text.to_owned());
    }
    warrant_core::canon::truncated(text, RECORDED_BYTES_MAX)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_on_blank_lines_and_an_unfinished_one_is_dropped() {
        let text =
            "event: a\ndata: {\"x\":1}\n\ndata: line1\ndata: line2\n\n: comment\n\ndata: cut";
        let e = events(text);
        assert_eq!(
            e,
            vec![
                (Some("a".into()), "{\"x\":1}".into()),
                (None, "line1\nline2".into())
            ]
        );
        assert_eq!(events("data: x\r\n\r\n"), vec![(None, "x".into())]);
    }

    #[test]
    fn large_requests_and_answers_are_recorded_cut_and_marked() {
        let small = json!({"model": "m"});
        assert_eq!(recorded_request(&small), small);
        let big = json!({"content": "x".repeat(RECORDED_BYTES_MAX)});
        let r = recorded_request(&big);
        assert_eq!(r["truncated"], true);
        assert!(r["digest"].as_str().unwrap().starts_with("sha256:"));
        let cut = recorded(&"é".repeat(RECORDED_BYTES_MAX));
        assert_eq!(cut["truncated"], true);
        assert!(cut["head"].as_str().unwrap().len() <= RECORDED_BYTES_MAX);
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(2000));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(150));
        assert!(jitter(100) < 100);
    }
}

//! The HTTP execution-control adapter against loopback services that answer the way real ones
//! do: plain and chunked bodies, errors, silence, oversized answers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warrant_core::event::{Effect, Principal};
use warrant_core::ids::{CallId, RunId, StepId};
use warrant_core::ports::{CapabilityRequest, ControlVerdict, ExecutionControl};
use warrant_policy::HttpControl;

/// How a loopback control answers.
#[derive(Clone, Copy)]
enum Answer {
    /// `Content-Length` body: blocks amounts over 500.
    Plain,
    /// The same, in chunked transfer encoding.
    Chunked,
    /// HTTP 503.
    Unavailable,
    /// Never answers.
    Silent,
    /// A 200 whose body is 100 KiB.
    Huge,
}

/// Serves up to 4 requests on loopback, answering as `answer` says; returns the URL and the
/// bodies it received.
async fn serve(answer: Answer) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        for _ in 0..4 {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 65536];
            let mut n = 0;
            // Read the head and the body (its length is in the head).
            loop {
                let got = s.read(&mut buf[n..]).await.unwrap_or(0);
                if got == 0 {
                    break;
                }
                n += got;
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if body.len() >= len {
                        break;
                    }
                }
            }
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            let body = text.split("\r\n\r\n").nth(1).unwrap_or("{}");
            let v: Value = serde_json::from_str(body).unwrap_or_default();
            record.lock().unwrap().push(v.clone());
            let verdict = if v["args"]["amount"].as_f64().unwrap_or(0.0) > 500.0 {
                r#"{"decision":"block","reason":"over the 500 limit"}"#.to_owned()
            } else {
                r#"{"decision":"allow"}"#.to_owned()
            };
            let response = match answer {
                Answer::Plain => format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{verdict}",
                    verdict.len()
                ),
                Answer::Chunked => {
                    let (a, b) = verdict.split_at(verdict.len() / 2);
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                        a.len(),
                        b.len()
                    )
                }
                Answer::Unavailable => {
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
                }
                Answer::Silent => {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    continue;
                }
                Answer::Huge => {
                    let filler = "x".repeat(100 * 1024);
                    let body = format!(r#"{{"decision":"allow","reason":"{filler}"}}"#);
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
            };
            let _ = s.write_all(response.as_bytes()).await;
        }
    });
    (format!("http://{addr}/decide"), seen)
}

/// Asks `control` about a transfer of `amount`, within `within`.
async fn ask_within(
    control: &HttpControl,
    amount: f64,
    within: Duration,
) -> Result<ControlVerdict, tokio::time::error::Elapsed> {
    let principal = Principal::default();
    let run = RunId("r1".into());
    let step = StepId("pay".into());
    let args = json!({"to": "landlord", "amount": amount});
    let request = CapabilityRequest {
        principal: &principal,
        run: &run,
        step: &step,
        call: CallId(2),
        provider: "bank",
        tool: "transfer",
        effect: Effect::Commit,
        args: &args,
        args_digest: "sha256:x",
        provenance: &[],
        handle_age_ms: None,
        hints: None,
        origin: None,
        context_taint: &[],
        grant: None,
        parent: None,
    };
    tokio::time::timeout(within, control.evaluate(&request)).await
}

async fn ask(control: &HttpControl, amount: f64) -> ControlVerdict {
    ask_within(control, amount, Duration::from_secs(20))
        .await
        .expect("the adapter answers (the engine bounds it further)")
}

#[tokio::test]
async fn a_plain_answer_is_read_and_the_call_forwarded_as_held() {
    let (url, seen) = serve(Answer::Plain).await;
    let control = HttpControl::new(&url).unwrap();
    assert_eq!(ask(&control, 100.0).await, ControlVerdict::Allow);
    assert_eq!(
        ask(&control, 900.0).await,
        ControlVerdict::Block {
            reason: "over the 500 limit".into()
        }
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0]["tool"], "transfer");
    assert_eq!(seen[0]["call"], "c2");
    assert_eq!(seen[1]["args"]["amount"], 900.0);
}

#[tokio::test]
async fn a_chunked_answer_is_read_like_any_other() {
    let (url, _) = serve(Answer::Chunked).await;
    let control = HttpControl::new(&url).unwrap();
    assert_eq!(ask(&control, 100.0).await, ControlVerdict::Allow);
    assert!(matches!(
        ask(&control, 900.0).await,
        ControlVerdict::Block { .. }
    ));
}

#[tokio::test]
async fn errors_oversized_answers_and_unreachable_controls_are_indeterminate() {
    let (url, _) = serve(Answer::Unavailable).await;
    let v = ask(&HttpControl::new(&url).unwrap(), 1.0).await;
    assert!(
        matches!(&v, ControlVerdict::Indeterminate { reason } if reason.contains("503")),
        "{v:?}"
    );
    let (url, _) = serve(Answer::Huge).await;
    let v = ask(&HttpControl::new(&url).unwrap(), 1.0).await;
    assert!(
        matches!(&v, ControlVerdict::Indeterminate { reason } if reason.contains("more than")),
        "{v:?}"
    );
    // A port nothing listens on: connecting fails, nothing is allowed.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let v = ask(&HttpControl::new(&format!("http://{addr}/x")).unwrap(), 1.0).await;
    assert!(matches!(v, ControlVerdict::Indeterminate { .. }), "{v:?}");
}

#[tokio::test]
async fn a_silent_control_is_bounded_by_the_caller() {
    let (url, _) = serve(Answer::Silent).await;
    let control = HttpControl::new(&url).unwrap();
    let waited = ask_within(&control, 1.0, Duration::from_millis(300)).await;
    assert!(waited.is_err(), "it had not answered");
}

#[test]
fn https_and_http_urls_are_taken_and_others_refused() {
    assert!(HttpControl::new("https://control.example/decide").is_ok());
    assert!(HttpControl::new("http://127.0.0.1:9/decide").is_ok());
    assert!(HttpControl::new("ftp://127.0.0.1/x").is_err());
    assert!(HttpControl::new("not a url").is_err());
}

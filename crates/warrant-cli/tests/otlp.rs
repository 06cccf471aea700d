//! `warrant serve --otlp-endpoint`: traces of the runs it drives reach an OTLP/HTTP collector
//! (a loopback stand-in that records what it is sent), named and attributed by the GenAI
//! semantic conventions, with arguments and results only when asked for.

#![cfg(feature = "otlp")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// A collector on loopback: every span of every export request it received, and its URL.
fn collector() -> (Arc<Mutex<Vec<Value>>>, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let spans = Arc::new(Mutex::new(Vec::new()));
    let seen = spans.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            assert!(line.starts_with("POST /v1/traces "), "{line}");
            let mut length = 0;
            let mut team = Value::Null;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end().to_ascii_lowercase();
                if h.is_empty() {
                    break;
                }
                if let Some(v) = h.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if let Some(v) = h.strip_prefix("x-team:") {
                    team = json!(v.trim());
                }
            }
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            for rs in body["resourceSpans"].as_array().unwrap() {
                let service = &rs["resource"]["attributes"][0];
                assert_eq!(service["key"], "service.name");
                // What the export request said besides its spans, kept with each span.
                let sent = json!({"service": service["value"]["stringValue"], "x-team": team});
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    seen.lock()
                        .unwrap()
                        .extend(ss["spans"].as_array().unwrap().iter().map(|sp| {
                            let mut sp = sp.clone();
                            sp["sent"] = sent.clone();
                            sp
                        }));
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            );
        }
    });
    (spans, url)
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn text<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    attr(span, key).and_then(|v| v["stringValue"].as_str())
}

/// Starts pay-rent on `s`, waits for it to attain, then for the spans of its run (the root
/// span is sent when the run ends): them.
async fn traced_run(s: &Served, spans: &Mutex<Vec<Value>>) -> Vec<Value> {
    let http = warrant_http::client();
    let started: Value = http
        .post(format!("{}/v1/runs", s.base))
        .json(&json!({"spec_path": "pay-rent/spec.yaml"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = started["run_id"].as_str().unwrap().to_owned();
    for _ in 0..300 {
        let mine: Vec<Value> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|sp| text(sp, "gen_ai.conversation.id") == Some(id.as_str()))
            .cloned()
            .collect();
        if mine
            .iter()
            .any(|sp| text(sp, "gen_ai.operation.name") == Some("invoke_agent"))
        {
            return mine;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no trace of run {id} reached the collector");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_trace_reaches_the_collector_with_content_only_when_asked() {
    let (spans, url) = collector();
    let (_dir, store) = scratch();
    let examples = root().join("examples");

    let s = start_server(&store, &examples, &["--otlp-endpoint", &url], None);
    let trace = traced_run(&s, &spans).await;
    let root_span = trace
        .iter()
        .find(|sp| text(sp, "gen_ai.operation.name") == Some("invoke_agent"))
        .unwrap();
    assert_eq!(root_span["name"], "invoke_agent pay-rent");
    assert_eq!(text(root_span, "warrant.outcome"), Some("attained"));
    assert!(root_span.get("parentSpanId").is_none(), "{root_span}");
    let trace_id = root_span["traceId"].as_str().unwrap();
    assert_eq!(trace_id.len(), 32);
    for sp in &trace {
        assert_eq!(sp["traceId"], trace_id, "one trace per run: {sp}");
        assert!(
            sp["startTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u128>()
                .unwrap()
                <= sp["endTimeUnixNano"]
                    .as_str()
                    .unwrap()
                    .parse::<u128>()
                    .unwrap()
        );
    }
    let transfer = trace
        .iter()
        .find(|sp| sp["name"] == "execute_tool transfer")
        .unwrap_or_else(|| panic!("no transfer span in {trace:?}"));
    assert_eq!(text(transfer, "gen_ai.tool.name"), Some("transfer"));
    // A call is a child of its step's span, the step a child of the run's.
    let step = trace
        .iter()
        .find(|sp| sp["spanId"] == transfer["parentSpanId"])
        .unwrap_or_else(|| panic!("no parent of the transfer in {trace:?}"));
    assert!(
        step["name"].as_str().unwrap().starts_with("step "),
        "{step}"
    );
    assert!(text(step, "warrant.step.id").is_some(), "{step}");
    assert_eq!(step["parentSpanId"], root_span["spanId"]);
    assert_eq!(step["status"]["code"], 0);
    assert_eq!(transfer["status"]["code"], 0);
    assert!(
        attr(transfer, "gen_ai.tool.call.arguments").is_none()
            && attr(transfer, "gen_ai.tool.call.result").is_none(),
        "arguments and results stay out unless asked for: {transfer}"
    );
    let chat = trace
        .iter()
        .find(|sp| text(sp, "gen_ai.operation.name") == Some("chat"))
        .unwrap();
    assert_eq!(text(chat, "gen_ai.provider.name"), Some("scripted"));
    assert!(
        trace
            .iter()
            .any(|sp| sp["spanId"] == chat["parentSpanId"] && text(sp, "warrant.step.id").is_some()),
        "a decision is a child of its step: {chat}"
    );
    assert_eq!(chat["sent"], json!({"service": "warrant", "x-team": null}));
    drop(s);

    // Asked for: the arguments as executed and the result are in the call's span. This time
    // the collector is named by the standard variables alone, with a header and a service.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"));
    cmd.current_dir(root())
        .env("WARRANT_STORE", &store)
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{url}/v1/traces"),
        )
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=fleet%20eu")
        .env("OTEL_SERVICE_NAME", "warrant-eu")
        .env_remove("WARRANT_FAULT")
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--otlp-content",
            "--specs",
        ])
        .arg(&examples)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let s = served(cmd.spawn().unwrap());
    let trace = traced_run(&s, &spans).await;
    assert!(
        trace
            .iter()
            .all(|sp| sp["sent"] == json!({"service": "warrant-eu", "x-team": "fleet eu"})),
        "{trace:?}"
    );
    let transfer = trace
        .iter()
        .find(|sp| sp["name"] == "execute_tool transfer")
        .unwrap();
    let args: Value =
        serde_json::from_str(text(transfer, "gen_ai.tool.call.arguments").unwrap()).unwrap();
    assert_eq!(args["to"], "DE89370400440532013000", "{args}");
    assert!(text(transfer, "gen_ai.tool.call.result").is_some());
}

#[test]
fn an_endpoint_that_is_not_a_url_is_refused_before_serving() {
    let (_dir, store) = scratch();
    let out = warrant(
        &store,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--otlp-endpoint",
            "localhost:4318",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the OTLP endpoint `localhost:4318`"),
        "{}",
        stderr(&out)
    );
}

//! Questions from the command line and over HTTP: a run whose decider asks waits; `warrant
//! questions` lists what it asks; an answer that does not fit the question's schema is refused
//! with the schema's reason; the answer carries the run on, the report shows the exchange, and
//! the log replays. Over HTTP the same, and the server carries the run on by itself.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const ASKS: &str = "scripted:examples/pay-rent/ask-first.yaml";
const IBAN: &str = "DE89370400440532013000";

/// Starts the pay-rent run whose decider asks first: it waits (exit 3) with its question.
fn start_asking(store: &Path) -> Value {
    let out = warrant(
        store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--decider",
            ASKS,
            "--json",
            "-q",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["outcome"], "waiting", "{r}");
    r
}

fn status(store: &Path, run: &str) -> Value {
    json(&warrant(store, &["runs", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == run)
        .unwrap()["status"]
        .clone()
}

#[test]
fn a_question_is_listed_answered_within_its_schema_and_shown_in_the_report() {
    let (_dir, store) = scratch();
    let r = start_asking(&store);
    let run = r["run_id"].as_str().unwrap();
    let q = r["question"]["id"].as_str().unwrap().to_owned();
    assert_eq!(q, format!("{run}-q1"));
    assert_eq!(
        r["question"]["prompt"],
        "Which account should the rent go to?"
    );

    let listed = stdout(&warrant(&store, &["questions"]));
    assert!(
        listed.contains(&q)
            && listed.contains("Which account")
            && listed.contains("warrant answer"),
        "{listed}"
    );
    let shown = stdout(&warrant(&store, &["show", run]));
    assert!(
        shown.contains(&format!(
            "question {q}: Which account should the rent go to?"
        )),
        "{shown}"
    );
    let rows = json(&warrant(&store, &["questions", "--json"]));
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");

    // Outside the schema: refused, naming why; nothing recorded.
    let bad = warrant(&store, &["answer", &q, "--text", "the usual one"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("does not fit its schema"),
        "{}",
        stderr(&bad)
    );
    assert_eq!(status(&store, run), "waiting");
    let not_json = warrant(&store, &["answer", &q, "--json", "{nope"]);
    assert_eq!(not_json.status.code(), Some(2), "{}", stderr(&not_json));

    let good = warrant(&store, &["answer", &q, "--text", IBAN, "--as", "ana"]);
    assert!(good.status.success(), "{}", stderr(&good));
    assert!(
        stdout(&good).contains("answered by ana"),
        "{}",
        stdout(&good)
    );
    assert_eq!(status(&store, run), "ready");

    let resumed = warrant(&store, &["resume", run, "--json", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let report = stdout(&warrant(&store, &["report", run]));
    assert!(
        report.contains("questions")
            && report.contains("Which account should the rent go to?")
            && report.contains("by ana"),
        "{report}"
    );
    let replayed = warrant(&store, &["replay", run, "--verify"]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_over_http_carries_the_run_on() {
    let (_dir, store) = scratch();
    let r = start_asking(&store);
    let run = r["run_id"].as_str().unwrap().to_owned();
    let q = r["question"]["id"].as_str().unwrap().to_owned();
    let server = start_server(&store, &root().join("examples"), &[], None);
    let listed = get_json(&format!("{}/v1/questions", server.base)).await;
    assert_eq!(listed[0]["id"], q, "{listed}");
    assert_eq!(listed[0]["run_id"], run.as_str());
    let client = warrant_http::client();
    let url = format!("{}/v1/questions/{q}/answer", server.base);
    let bad = client
        .post(&url)
        .json(&json!({"answer": 42}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
    let problem: Value = bad.json().await.unwrap();
    assert!(
        problem["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("does not fit its schema"),
        "{problem}"
    );
    let missing = client
        .post(format!("{}/v1/questions/{run}-q7/answer", server.base))
        .json(&json!({"answer": IBAN}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), reqwest::StatusCode::NOT_FOUND);
    let good = client
        .post(&url)
        .json(&json!({"answer": IBAN}))
        .send()
        .await
        .unwrap();
    assert_eq!(good.status(), reqwest::StatusCode::OK);
    let said: Value = good.json().await.unwrap();
    assert_eq!(said, json!({"question": q, "recorded": true}));
    // The server carries the run on by itself.
    let mut now = Value::Null;
    for _ in 0..200 {
        now = status(&store, &run);
        if now == "attained" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(now, "attained");
    drop(server);
}

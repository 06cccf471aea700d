//! `warrant serve` killed with runs in flight and clients following them: the server aborts
//! at a fault point (as `kill -9` would stop it) while 50 runs commit to ledgers that record
//! every effect outside Warrant's store. A new server re-enters them: every run reaches its
//! outcome, no effect is repeated or lost, and every follower that reconnects with
//! `Last-Event-ID` sees each event of its run exactly once, in order.
//!
//! Needs the `fault-injection` feature (the README's test command enables it).

#![cfg(feature = "fault-injection")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use warrant_surfaces::ledger::Ledger;

const RUNS: usize = 50;

fn spec(dir: &Path) -> String {
    format!(
        "version: warrant/v1
id: ledger-serve-crash
objective: Write one entry to each ledger.
decider: scripted:script.yaml
providers:
  first: {{reference: ledger, config: {{file: {a}, keys: true}}}}
  second: {{reference: ledger, config: {{file: {b}, keys: true}}}}
steps:
  - id: one
    provider: first
    tools: [count_entries, append_entry]
    commit: required
  - id: two
    provider: second
    tools: [count_entries, append_entry]
    after: [one]
    commit: required
",
        a = dir.join("a.jsonl").display(),
        b = dir.join("b.jsonl").display(),
    )
}

const SCRIPT: &str = "steps:
  one:
    - call: count_entries
    - call: append_entry
      args: {entry: one}
    - done: written
  two:
    - call: count_entries
    - call: append_entry
      args: {entry: two}
    - done: written
";

/// Follows `run` from after `last`: the events it gives (sequence number and event) until the
/// stream closes or the connection breaks.
async fn follow(base: &str, run: &str, last: Option<u64>) -> Vec<(u64, Value)> {
    let client = warrant_http::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut req = client
        .get(format!("{base}/v1/runs/{run}/events"))
        .header("accept", "text/event-stream");
    if let Some(l) = last {
        req = req.header("last-event-id", l.to_string());
    }
    let Ok(mut r) = req.send().await else {
        return Vec::new();
    };
    let mut buf = String::new();
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = r.chunk().await {
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        out.extend(sse_frames(&mut buf));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_with_runs_in_flight_loses_and_repeats_nothing_and_followers_resume() {
    let (dir, store) = scratch();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    std::fs::write(specs.join("spec.yaml"), spec(dir.path())).unwrap();
    std::fs::write(specs.join("script.yaml"), SCRIPT).unwrap();

    // The first server dies at its 40th durable intent, runs half done.
    let mut first = start_server(&store, &specs, &[], Some("after-intent:40"));
    let base = first.base.clone();
    let client = warrant_http::client();
    let mut starts = Vec::new();
    for _ in 0..RUNS {
        let (client, base) = (client.clone(), base.clone());
        starts.push(tokio::spawn(async move {
            let r = client
                .post(format!("{base}/v1/runs"))
                .json(&json!({"spec_path": "spec.yaml"}))
                .send()
                .await
                .ok()?;
            let v: Value = r.json().await.ok()?;
            let run = v["run_id"].as_str()?.to_owned();
            let events = follow(&base, &run, None).await;
            Some((run, events))
        }));
    }
    let mut followed: HashMap<String, Vec<(u64, Value)>> = HashMap::new();
    for s in starts {
        if let Some((run, events)) = s.await.unwrap() {
            followed.insert(run, events);
        }
    }
    let status = tokio::task::spawn_blocking(move || first.child.wait().unwrap())
        .await
        .unwrap();
    assert!(
        !status.success(),
        "the first server was killed at its fault point"
    );

    // A new server re-enters every run; each follower comes back where it was.
    let second = start_server(&store, &specs, &[], None);
    let base = second.base.clone();
    let mut page: Value = client
        .get(format!("{base}/v1/runs?limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let all: Vec<String> = page["runs"]
        .as_array_mut()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect();
    assert!(all.len() >= followed.len() && !all.is_empty());
    let mut interrupted = 0;
    let mut finished: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for run in &all {
        let before = followed.get(run).cloned().unwrap_or_default();
        let last = before.last().map(|(s, _)| *s);
        if !before
            .last()
            .is_some_and(|(_, e)| e["type"] == "run_finished")
        {
            interrupted += 1;
        }
        let after = follow(&base, run, last).await;
        let seqs: Vec<u64> = before.iter().chain(&after).map(|(s, _)| *s).collect();
        let n = seqs.len() as u64;
        assert_eq!(
            seqs,
            (1..=n).collect::<Vec<_>>(),
            "run {run}: each event once, in order, across the restart"
        );
        let events: Vec<Value> = before.into_iter().chain(after).map(|(_, e)| e).collect();
        let last = events.last().unwrap();
        assert_eq!(last["type"], "run_finished", "run {run}");
        assert_eq!(last["outcome"], "attained", "run {run}: {last}");
        finished.insert(run.clone(), events);
    }
    assert!(interrupted > 0, "the kill caught runs in flight");

    // The ledgers: one entry per run and step, none twice, each the run's own.
    for (file, step) in [("a.jsonl", "one"), ("b.jsonl", "two")] {
        let entries = Ledger::read(&dir.path().join(file)).unwrap();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for e in &entries {
            *seen.entry(e.key.as_str()).or_default() += 1;
        }
        assert!(
            seen.values().all(|n| *n == 1),
            "{file}: an effect was repeated: {seen:?}"
        );
        // Every commit a run recorded as done is in the ledger.
        for (run, events) in &finished {
            let key = events.iter().find_map(|e| {
                (e["type"] == "call_dispatched"
                    && e["effect"] == "commit"
                    && e["args"]["entry"] == step)
                    .then(|| e["idempotency_key"].as_str().unwrap().to_owned())
            });
            let key = key.unwrap_or_else(|| panic!("run {run}: no commit in step {step}"));
            assert!(
                seen.contains_key(key.as_str()),
                "{file}: run {run}'s effect {key} is lost: {}",
                serde_json::to_string_pretty(events).unwrap()
            );
        }
        assert_eq!(
            entries.len(),
            all.len(),
            "{file}: one effect per run of step {step}, none lost"
        );
    }
    eprintln!(
        "server crash: {} runs, {interrupted} in flight at the kill, {} followed from the start; 0 repeated, 0 lost",
        all.len(),
        followed.len()
    );
}

/// A run whose CLI process died mid-run is left to an operator (the server takes up only runs
/// nobody drives that were answered): resuming it through the API re-enters it here, and its
/// `run_resumed` and the audit name who asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_resumes_an_interrupted_run_and_the_log_names_them() {
    let (_dir, store) = scratch();
    let examples = root().join("examples");
    let s = start_server(&store, &examples, &[], None);
    let died = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", &store)
        .env("WARRANT_FAULT", "after-intent:1")
        .args(["run", "examples/pay-rent/spec.yaml", "-q"])
        .output()
        .unwrap();
    assert!(!died.status.success(), "{}", stderr(&died));
    let http = warrant_http::client();
    let runs = get_json(&format!("{}/v1/runs", s.base)).await;
    let run = &runs["runs"][0];
    assert_eq!(run["status"], "interrupted", "{runs}");
    let id = run["run_id"].as_str().unwrap().to_owned();

    let r = http
        .post(format!("{}/v1/runs/{id}/resume", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);
    let mut events = Vec::new();
    for _ in 0..200 {
        let page = get_json(&format!("{}/v1/runs/{id}/events", s.base)).await;
        events = page["events"].as_array().unwrap().clone();
        if page["finished"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resumed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "run_resumed")
        .collect();
    assert_eq!(resumed.len(), 1, "{events:?}");
    assert_eq!(resumed[0]["by"], "local/local", "{}", resumed[0]);
    assert_eq!(events.last().unwrap()["outcome"], "attained");
    let audit = get_json(&format!("{}/v1/audit", s.base)).await;
    let actions: Vec<(&str, &str)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["by"].as_str().unwrap()))
        .collect();
    assert!(actions.contains(&("resume", "local/local")), "{audit}");
}

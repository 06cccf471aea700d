//! A bounded load test of `warrant serve` on loopback: starts `--runs` runs of the tool-loop
//! workload through `POST /v1/runs` at `--rate` runs per second, follows the first
//! `--followers` of them over Server-Sent Events, and reports runs/s, create-run latency and
//! event delivery latency (an event's `at_ms` to its SSE frame here, same clock; only events
//! recorded after the stream opened count: earlier ones are catch-up). With `--ask TOOL
//! --approve N [--answering K]` the runs wait for approvals; once all wait, the first N are
//! approved, K at a time (default 8; 1 answers one after another), and each one's wake-up is
//! reported: from its `approval_resolved` to the event after
//! it, by the events' own `at_ms` (millisecond resolution).
//!
//! ```sh
//! .ci/serve-load            # builds, starts a server on a scratch store, runs this, stops it
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    clippy::disallowed_methods,
    reason = "a measuring tool, not product code"
)]

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::Mutex;

fn now_ms_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

async fn follow(
    http: reqwest::Client,
    base: String,
    run: String,
    out: Arc<Mutex<Vec<f64>>>,
) -> usize {
    let mut r = http
        .get(format!("{base}/v1/runs/{run}/events"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    // Events recorded before the stream was open are catch-up, not live delivery.
    let live_from = now_ms_f();
    let mut buf = String::new();
    let mut n = 0;
    let mut mine = Vec::new();
    while let Ok(Some(chunk)) = r.chunk().await {
        let at = now_ms_f();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            for line in frame.lines() {
                if let Some(d) = line.strip_prefix("data: ") {
                    let e: Value = serde_json::from_str(d).unwrap();
                    let recorded = e["at_ms"].as_f64().unwrap();
                    if recorded >= live_from {
                        mine.push(at - recorded);
                    }
                    n += 1;
                }
            }
        }
    }
    out.lock().await.extend(mine);
    n
}

/// The JSON body `url` answers.
async fn get_json(http: &reqwest::Client, url: String) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// Approves the pending request of each of `runs` (`at_once` at a time), waits for each to
/// end, and returns each one's wake-up: from its `approval_resolved` to the event after it (ms).
async fn approve_and_time(
    http: &reqwest::Client,
    base: &str,
    runs: &[String],
    at_once: usize,
) -> Vec<f64> {
    let gate = Arc::new(tokio::sync::Semaphore::new(at_once.max(1)));
    let mut answering = Vec::new();
    for run in runs {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let (http, base, run) = (http.clone(), base.to_owned(), run.clone());
        answering.push(tokio::spawn(async move {
            let asked = get_json(&http, format!("{base}/v1/approvals?run={run}")).await;
            let (request, digest) = (&asked[0]["request"], &asked[0]["args_digest"]);
            let r = http
                .post(format!(
                    "{base}/v1/approvals/{}/approve",
                    request.as_str().unwrap()
                ))
                .json(&json!({"args_digest": digest}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
            drop(permit);
        }));
    }
    for a in answering {
        a.await.unwrap();
    }
    let mut wake = Vec::with_capacity(runs.len());
    for run in runs {
        let mut events = Value::Null;
        for _ in 0..600 {
            events = get_json(http, format!("{base}/v1/runs/{run}/events?limit=1000")).await;
            if events["finished"] == true {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let list = events["events"].as_array().unwrap();
        let answered = list
            .iter()
            .position(|e| e["type"] == "approval_resolved")
            .unwrap_or_else(|| panic!("run {run} was not answered: {events}"));
        let (at, next) = (&list[answered]["at_ms"], &list[answered + 1]["at_ms"]);
        wake.push(next.as_f64().unwrap() - at.as_f64().unwrap());
    }
    wake
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let base = arg("--base", "http://127.0.0.1:7800");
    let runs: usize = arg("--runs", "1000").parse().unwrap();
    let followers: usize = arg("--followers", "200").parse().unwrap();
    let rate: f64 = arg("--rate", "200").parse().unwrap();
    let spec = arg("--spec", "tool-loop.yaml");
    // `--ask TOOL`: every call to it waits for a person, so the runs stay held, waiting.
    let ask = arg("--ask", "");
    let body = if ask.is_empty() {
        json!({"spec_path": spec})
    } else {
        json!({"spec_path": spec, "ask_tools": [ask]})
    };
    let http = warrant_http::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let create = Arc::new(Mutex::new(Vec::with_capacity(runs)));
    let delivery = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    let mut follows = Vec::new();
    for i in 0..runs {
        // Open-loop arrivals at `rate` per second.
        let due = started + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        let (http, base, body, create, delivery) = (
            http.clone(),
            base.clone(),
            body.clone(),
            create.clone(),
            delivery.clone(),
        );
        let follow_it = i < followers;
        tasks.push(tokio::spawn(async move {
            let t0 = Instant::now();
            let r = http
                .post(format!("{base}/v1/runs"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
            let body: Value = r.json().await.unwrap();
            create.lock().await.push(ms);
            let run = body["run_id"].as_str().unwrap().to_owned();
            let follow = follow_it.then(|| tokio::spawn(follow(http, base, run.clone(), delivery)));
            (run, follow)
        }));
    }
    let mut ids = Vec::with_capacity(runs);
    for t in tasks {
        let (run, follow) = t.await.unwrap();
        ids.push(run);
        if let Some(f) = follow {
            follows.push(f);
        }
    }
    let created_s = started.elapsed().as_secs_f64();
    let mut events = 0;
    for f in follows {
        events += f.await.unwrap();
    }
    // Every run ends (bounded wait).
    for _ in 0..1200 {
        let page = get_json(&http, format!("{base}/v1/runs?status=running&limit=1")).await;
        if page["runs"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let total_s = started.elapsed().as_secs_f64();
    let approve: usize = arg("--approve", "0").parse().unwrap();
    if approve > 0 {
        let at_once: usize = arg("--answering", "8").parse().unwrap();
        let answered = &ids[..approve.min(ids.len())];
        let mut wake = approve_and_time(&http, &base, answered, at_once).await;
        println!(
            "wake-up after an answer ms ({} approved of {runs} waiting, {at_once} at a time): p50 {:.0}  p99 {:.0}  max {:.0}",
            wake.len(),
            pct(&mut wake, 0.5),
            pct(&mut wake, 0.99),
            pct(&mut wake, 1.0)
        );
    }
    let attained = get_json(&http, format!("{base}/v1/runs?status=attained&limit=500")).await;
    let mut c = create.lock().await.clone();
    let mut d = delivery.lock().await.clone();
    println!(
        "runs {runs} at {rate}/s offered: created in {created_s:.2} s, all ended in {total_s:.2} s ({:.0} runs/s)",
        runs as f64 / total_s
    );
    println!(
        "create-run latency ms: p50 {:.2}  p99 {:.2}  max {:.2}",
        pct(&mut c, 0.5),
        pct(&mut c, 0.99),
        pct(&mut c, 1.0)
    );
    println!(
        "event delivery ms ({} live of {events} events over {followers} SSE followers): p50 {:.2}  p99 {:.2}  max {:.2}",
        d.len(),
        pct(&mut d, 0.5),
        pct(&mut d, 0.99),
        pct(&mut d, 1.0)
    );
    println!(
        "attained (first page of 500): {}",
        attained["runs"].as_array().map_or(0, Vec::len)
    );
}

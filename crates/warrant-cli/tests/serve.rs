//! `warrant serve` from outside, over loopback HTTP: runs started and followed through the
//! API, approvals bound to the digest shown, tenants and roles, bad input, the store shared
//! with the CLI, and a restart that loses nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;
use warrant_core::store::{IdempotencyKeys, RunsIndex};

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::*;

fn serve(store: &Path, extra: &[&str]) -> Served {
    start_server(store, &root().join("examples"), extra, None)
}

fn client() -> reqwest::Client {
    warrant_http::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Sends `req` with `token` (if any): the status and the JSON body.
async fn call(req: reqwest::RequestBuilder, token: Option<&str>) -> (StatusCode, Value) {
    let req = match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    };
    let (client, request) = req.build_split();
    let request = request.unwrap();
    let (method, url) = (request.method().to_string(), request.url().clone());
    let r = client.execute(request).await.unwrap();
    let status = r.status();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let problem = content_type.starts_with("application/problem+json");
    let text = r.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    // Every answer a test sees is one the API document promises.
    let doc = document(&url).await;
    conforms(
        &doc,
        &method,
        url.path(),
        status.as_u16(),
        &content_type,
        &body,
    );
    if !status.is_success() {
        assert!(problem, "{status}: not problem+json: {body}");
        assert_eq!(body["status"], status.as_u16(), "{body}");
        assert!(
            body["type"]
                .as_str()
                .unwrap()
                .starts_with("urn:warrant:problem:"),
            "{body}"
        );
    }
    (status, body)
}

/// The server's API document (the same for every server of this build: fetched once).
async fn document(any: &reqwest::Url) -> Value {
    static DOC: tokio::sync::OnceCell<Value> = tokio::sync::OnceCell::const_new();
    DOC.get_or_init(|| async {
        let mut url = any.clone();
        url.set_path("/v1/openapi.json");
        url.set_query(None);
        get_json(url.as_str()).await
    })
    .await
    .clone()
}

async fn start(s: &Served, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    call(
        client().post(format!("{}/v1/runs", s.base)).json(&body),
        token,
    )
    .await
}

fn pay_rent() -> Value {
    json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]})
}

/// Waits until run `id` has status `want` (bounded).
async fn until_status(s: &Served, token: Option<&str>, id: &str, want: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (st, v) = call(client().get(format!("{}/v1/runs/{id}", s.base)), token).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        if v["status"] == want {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {id} never reached `{want}`: {last}");
}

/// Reads an SSE stream until it closes: each message's id and event.
async fn follow(
    base: &str,
    id: &str,
    last_event_id: Option<u64>,
    stop_after: Option<usize>,
) -> Vec<(u64, Value)> {
    let mut req = client()
        .get(format!("{base}/v1/runs/{id}/events"))
        .header("accept", "text/event-stream");
    if let Some(l) = last_event_id {
        req = req.header("last-event-id", l.to_string());
    }
    let mut r = req.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut buf = String::new();
    let mut out = Vec::new();
    while let Some(chunk) = r.chunk().await.unwrap() {
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        for (seq, data) in sse_frames(&mut buf) {
            assert_eq!(
                data["seq"], seq,
                "the SSE id is the event's sequence number"
            );
            out.push((seq, data));
            if stop_after.is_some_and(|n| out.len() >= n) {
                return out;
            }
        }
    }
    out
}

fn digest_of(approvals: &Value, i: usize) -> (String, String) {
    (
        approvals[i]["request"].as_str().unwrap().to_owned(),
        approvals[i]["args_digest"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_through_the_api_waits_for_an_approval_bound_to_the_digest_shown_and_streams_every_event_once()
 {
    let (_dir, store) = scratch();
    let s = serve(&store, &[]);
    let (st, started) = start(&s, None, pay_rent()).await;
    assert_eq!(st, StatusCode::CREATED, "{started}");
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "waiting").await;

    // A follower from the start, in a task, while the run waits and then goes on.
    let follower = {
        let (base, id) = (s.base.clone(), id.clone());
        tokio::spawn(async move { follow(&base, &id, None, None).await })
    };

    let (_, approvals) = call(client().get(format!("{}/v1/approvals", s.base)), None).await;
    assert_eq!(approvals.as_array().unwrap().len(), 1, "{approvals}");
    let (request, digest) = digest_of(&approvals, 0);
    // Arguments the person did not see: refused, nothing recorded.
    let (st, p) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": "sha256:0000"})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::CONFLICT, "{p}");
    assert_eq!(p["type"], "urn:warrant:problem:digest-mismatch");
    until_status(&s, None, &id, "waiting").await;
    let (st, a) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{a}");
    assert_eq!(a["recorded"], true);
    until_status(&s, None, &id, "attained").await;
    // The same approval again changes nothing.
    let (st, again) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest})),
        None,
    )
    .await;
    assert!(
        st == StatusCode::OK && again["recorded"] == false || st == StatusCode::CONFLICT,
        "{st} {again}"
    );

    let events = follower.await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|(s, _)| *s).collect();
    let n = seqs.len() as u64;
    assert_eq!(
        seqs,
        (1..=n).collect::<Vec<_>>(),
        "every event once, in order, no gap"
    );
    assert_eq!(events.last().unwrap().1["type"], "run_finished");
    let resolved: Vec<&Value> = events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e["type"] == "approval_resolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0]["by"], "local/local",
        "the log names who approved"
    );
    let dispatched = events
        .iter()
        .filter(|(_, e)| e["type"] == "call_dispatched" && e["effect"] == "commit")
        .count();
    assert_eq!(dispatched, 1, "the transfer happened once");

    // The JSON page and the report agree with the stream.
    let (_, page) = call(
        client().get(format!("{}/v1/runs/{id}/events?from=5&limit=3", s.base)),
        None,
    )
    .await;
    assert_eq!(page["events"].as_array().unwrap().len(), 3);
    assert_eq!(page["events"][0]["seq"], 5);
    assert_eq!(page["next"], 8);
    assert_eq!(page["finished"], false);
    let (_, report) = call(
        client().get(format!("{}/v1/runs/{id}/report", s.base)),
        None,
    )
    .await;
    assert_eq!(report["format"], "warrant.run-report/1");
    assert_eq!(report["outcome"]["outcome"], "attained", "{report}");
    // The server's build started it (what `warrant --version` names).
    let version = stdout(&warrant(&store, &["--version"]));
    assert_eq!(
        version.trim_end(),
        format!(
            "warrant {} (commit {}, built {}, features: {})",
            report["build"]["version"].as_str().unwrap(),
            report["build"]["commit"].as_str().unwrap(),
            report["build"]["date"].as_str().unwrap(),
            report["build"]["features"]
                .as_array()
                .map(|f| f
                    .iter()
                    .map(|f| f.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_else(|| "none".to_owned())
        ),
        "{report}"
    );
    // Held by the server while it waited: the providers it answered with are the ones it
    // started with, and the report has nothing to warn of.
    assert!(report.get("warnings").is_none(), "{report}");

    // A follower that comes back with Last-Event-ID sees only what followed.
    let rest = follow(&s.base, &id, Some(n - 3), None).await;
    let rest: Vec<u64> = rest.iter().map(|(s, _)| *s).collect();
    assert_eq!(rest, vec![n - 2, n - 1, n]);

    // What it did is counted in /metrics, with the latency of its calls and of the store's
    // commits as histograms.
    let metrics = metrics_page(&s.base).await;
    assert!(
        metrics.contains("warrant_runs_ended_total{outcome=\"attained\"} 1\n"),
        "{metrics}"
    );
    // Every metric the shipped Grafana dashboard queries is one the server answers.
    let dashboard =
        std::fs::read_to_string(root().join("docs/grafana/warrant-fleet.json")).unwrap();
    let exposed: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let mut queried = std::collections::BTreeSet::new();
    for piece in dashboard.split("warrant_").skip(1) {
        let name: String = piece
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        let name = format!("warrant_{name}");
        let base = name.strip_suffix("_bucket").unwrap_or(&name).to_owned();
        queried.insert(base);
    }
    assert!(queried.len() > 10, "{queried:?}");
    let missing: Vec<_> = queried
        .iter()
        .filter(|q| !exposed.contains(q.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics no door answers: {missing:?}"
    );
    // The store's WAL was copied back without a failure (a SQLite store counts them).
    assert!(
        metrics.contains("\nwarrant_store_checkpoint_failures_total 0\n"),
        "{metrics}"
    );
    for name in [
        "warrant_step_seconds",
        "warrant_store_commit_seconds",
        "warrant_event_delivery_seconds",
    ] {
        assert!(
            metrics.contains(&format!("# TYPE {name} histogram")),
            "{metrics}"
        );
        let buckets: Vec<u64> = metrics
            .lines()
            .filter(|l| l.starts_with(&format!("{name}_bucket{{")))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        let count: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}_count ")))
            .unwrap()
            .parse()
            .unwrap();
        // Delivery is timed for events handed over as they commit, which depends on when
        // the follower subscribed; calls and commits happened for sure.
        assert!(
            count > 0 || name == "warrant_event_delivery_seconds",
            "{name}: nothing observed\n{metrics}"
        );
        assert!(
            buckets.windows(2).all(|w| w[0] <= w[1]),
            "{name}: not cumulative"
        );
        assert_eq!(buckets.last(), Some(&count), "{name}: +Inf is the count");
    }
}

fn principals(dir: &Path, entries: &[(&str, &str, &str, &[&str])]) -> PathBuf {
    let path = dir.join("principals.yaml");
    let mut text = String::from("principals:\n");
    for (token, tenant, user, roles) in entries {
        let digest = warrant_server::token_digest(token);
        text.push_str(&format!(
            "  - {{token: 'sha256:{digest}', tenant: {tenant}, user: {user}, roles: [{}]}}\n",
            roles.join(", ")
        ));
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_sees_and_acts_on_its_own_runs_only_and_roles_gate_every_action() {
    let (dir, store) = scratch();
    let all: &[(&str, &str, &str, &[&str])] = &[
        ("tok-ann", "acme", "ann", &["runner", "approver"]),
        ("tok-vic", "acme", "vic", &["viewer"]),
        ("tok-ops", "acme", "ops", &["operator"]),
        (
            "tok-eve",
            "globex",
            "eve",
            &["runner", "approver", "operator"],
        ),
    ];
    let file = principals(dir.path(), all);
    let s = serve(&store, &["--principals", file.to_str().unwrap()]);
    let ann = Some("tok-ann");
    let eve = Some("tok-eve");

    // No token, a forged one: 401.
    let (st, _) = call(client().get(format!("{}/v1/runs", s.base)), None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (st, _) = call(
        client().get(format!("{}/v1/runs", s.base)),
        Some("tok-forged"),
    )
    .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    // A viewer cannot start a run.
    let (st, p) = start(&s, Some("tok-vic"), pay_rent()).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{p}");

    let (st, started) = start(&s, ann, pay_rent()).await;
    assert_eq!(st, StatusCode::CREATED, "{started}");
    let id = started["run_id"].as_str().unwrap().to_owned();
    let run = until_status(&s, ann, &id, "waiting").await;
    let request = run["approvals"][0]["request"].as_str().unwrap().to_owned();
    let digest = run["approvals"][0]["args_digest"]
        .as_str()
        .unwrap()
        .to_owned();

    // Another tenant: every endpoint answers as if the run did not exist.
    for path in [
        format!("/v1/runs/{id}"),
        format!("/v1/runs/{id}/report"),
        format!("/v1/runs/{id}/events"),
        format!("/v1/approvals?run={id}"),
    ] {
        let (st, p) = call(client().get(format!("{}{path}", s.base)), eve).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {p}");
    }
    for (path, body) in [
        (format!("/v1/runs/{id}/cancel"), json!({})),
        (format!("/v1/runs/{id}/resume"), json!({})),
        (
            format!("/v1/runs/{id}/calls/c2/reconcile"),
            json!({"happened": true}),
        ),
        (
            format!("/v1/approvals/{request}/approve"),
            json!({"args_digest": digest}),
        ),
        (
            format!("/v1/approvals/{request}/deny"),
            json!({"args_digest": digest}),
        ),
    ] {
        let (st, p) = call(client().post(format!("{}{path}", s.base)).json(&body), eve).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {p}");
    }
    let (_, runs) = call(client().get(format!("{}/v1/runs", s.base)), eve).await;
    assert_eq!(runs["runs"], json!([]), "{runs}");
    let (_, approvals) = call(client().get(format!("{}/v1/approvals", s.base)), eve).await;
    assert_eq!(approvals, json!([]));

    // Roles within the tenant: a viewer sees but cannot approve; an approver cannot cancel.
    let (_, runs) = call(client().get(format!("{}/v1/runs", s.base)), Some("tok-vic")).await;
    assert_eq!(runs["runs"][0]["run_id"], id.as_str());
    let (st, _) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest})),
        Some("tok-vic"),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, _) = call(
        client().post(format!("{}/v1/runs/{id}/cancel", s.base)),
        ann,
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    until_status(&s, ann, &id, "waiting").await;

    // A request from another site is refused whoever sends it.
    let (st, _) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .header("sec-fetch-site", "cross-site")
            .json(&json!({"args_digest": digest})),
        ann,
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    // A removed principal's token stops working.
    std::thread::sleep(Duration::from_millis(20));
    principals(dir.path(), &all[1..]);
    let f = std::fs::File::options().append(true).open(&file).unwrap();
    f.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let (st, _) = call(client().get(format!("{}/v1/runs/{id}", s.base)), ann).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);

    // The operator of the tenant cancels; the log names them.
    let (st, c) = call(
        client()
            .post(format!("{}/v1/runs/{id}/cancel", s.base))
            .json(&json!({"reason": "wrong month"})),
        Some("tok-ops"),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{c}");
    assert_eq!(c["status"], "cancelled");
    let (_, page) = call(
        client().get(format!("{}/v1/runs/{id}/events", s.base)),
        Some("tok-ops"),
    )
    .await;
    let last = page["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["outcome"], "cancelled", "{last}");
    assert_eq!(last["by"], "acme/ops", "{last}");

    // The log is the audit trail: the tenant's control actions, by whom; none of another's.
    let (_, audit) = call(
        client().get(format!("{}/v1/audit", s.base)),
        Some("tok-vic"),
    )
    .await;
    let actions: Vec<(String, String)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().into(),
                a["by"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("start".into(), "acme/ann".into()),
            ("cancel".into(), "acme/ops".into())
        ],
        "{audit}"
    );
    let (_, audit) = call(client().get(format!("{}/v1/audit", s.base)), eve).await;
    assert_eq!(audit, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_problem_that_says_what_is_wrong_and_writes_nothing() {
    let (_dir, store) = scratch();
    let s = serve(&store, &["--body-limit", "4096"]);
    let url = format!("{}/v1/runs", s.base);
    let raw = |body: &str| {
        client()
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    let (st, p) = call(raw("{not json"), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{p}");
    let (st, p) = call(
        raw(r#"{"spec_path": "pay-rent/spec.yaml", "colour": 1}"#),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("colour"), "{p}");
    let (st, p) = call(
        raw(&format!("{{\"spec\": \"{}\"}}", "x".repeat(5000))),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{p}");
    let (st, p) = call(
        client()
            .post(&url)
            .header("content-type", "text/plain")
            .body("{}"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{p}");
    // A spec that does not validate: 422 with what `warrant validate` says.
    let (st, p) = start(
        &s,
        None,
        json!({"spec": "version: warrant/v1\nid: x\nobjective: o\nproviders: {bank: {reference: bank}}\nsteps: [{id: a, provider: nowhere, tools: [t]}]\n"}),
    )
    .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("nowhere"), "{p}");
    // Paths out of the specs folder.
    for body in [
        json!({"spec_path": "../Cargo.toml"}),
        json!({"spec_path": "/etc/passwd"}),
        json!({"spec_path": "pay-rent/spec.yaml", "decider": "scripted:../../etc/passwd"}),
    ] {
        let (st, p) = start(&s, None, body.clone()).await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {p}");
    }
    for path in [
        "/v1/runs/r-nope",
        "/v1/runs/r-nope/report",
        "/v1/runs/r-nope/events",
        "/v1/nothing",
    ] {
        let (st, _) = call(client().get(format!("{}{path}", s.base)), None).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}");
    }
    let (st, p) = call(client().delete(format!("{}/v1/runs", s.base)), None).await;
    assert_eq!(st, StatusCode::METHOD_NOT_ALLOWED, "{p}");
    let (st, p) = call(client().get(format!("{}/v1/runs?limit=x", s.base)), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{p}");
    let (st, p) = call(client().get(format!("{}/v1/runs?cursor=zz", s.base)), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{p}");
    // Nothing was written.
    let (_, runs) = call(client().get(&url), None).await;
    assert_eq!(runs["runs"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_returns_the_same_run_and_refuses_another_body() {
    let (_dir, store) = scratch();
    let s = serve(&store, &[]);
    let url = format!("{}/v1/runs", s.base);
    let (st, first) = call(
        client()
            .post(&url)
            .header("idempotency-key", "k1")
            .json(&pay_rent()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::CREATED);
    let (st, again) = call(
        client()
            .post(&url)
            .header("idempotency-key", "k1")
            .json(&pay_rent()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(again["run_id"], first["run_id"]);
    let (st, p) = call(
        client()
            .post(&url)
            .header("idempotency-key", "k1")
            .json(&json!({"spec_path": "pay-rent/spec.yaml"})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::CONFLICT, "{p}");
    let (_, runs) = call(client().get(&url), None).await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
}

/// The keys are kept in the store, per tenant: a request retried after the server was killed
/// and started again over the same file gets the run the first one started (200, not a
/// second run), another body with the key is still 409, and another tenant's request with the
/// same key starts a run of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_outlives_a_restart_and_is_its_tenants_own() {
    let (dir, store) = scratch();
    let file = principals(
        dir.path(),
        &[
            ("tok-ann", "acme", "ann", &["runner"]),
            ("tok-eve", "globex", "eve", &["runner"]),
        ],
    );
    let args = ["--principals", file.to_str().unwrap()];
    let post = |s: &Served, token: &'static str, body: Value| {
        let req = client()
            .post(format!("{}/v1/runs", s.base))
            .header("idempotency-key", "rent-2026-12")
            .json(&body);
        async move { call(req, Some(token)).await }
    };
    let first = {
        let s = serve(&store, &args);
        let (st, first) = post(&s, "tok-ann", pay_rent()).await;
        assert_eq!(st, StatusCode::CREATED, "{first}");
        first
        // The server is killed here.
    };
    let s = serve(&store, &args);
    let (st, again) = post(&s, "tok-ann", pay_rent()).await;
    assert_eq!(st, StatusCode::OK, "{again}");
    assert_eq!(again["run_id"], first["run_id"], "{again}");
    let (st, p) = post(&s, "tok-ann", json!({"spec_path": "pay-rent/spec.yaml"})).await;
    assert_eq!(st, StatusCode::CONFLICT, "{p}");
    assert_eq!(
        p["type"], "urn:warrant:problem:idempotency-key-reused",
        "{p}"
    );
    // Another tenant's key of the same name is its own.
    let (st, theirs) = post(&s, "tok-eve", pay_rent()).await;
    assert_eq!(st, StatusCode::CREATED, "{theirs}");
    assert_ne!(theirs["run_id"], first["run_id"]);
    let (st, theirs_again) = post(&s, "tok-eve", pay_rent()).await;
    assert_eq!(st, StatusCode::OK, "{theirs_again}");
    assert_eq!(theirs_again["run_id"], theirs["run_id"]);
    // One run each.
    for (token, run) in [("tok-ann", &first), ("tok-eve", &theirs)] {
        let (_, runs) = call(client().get(format!("{}/v1/runs", s.base)), Some(token)).await;
        let ids: Vec<&Value> = runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["run_id"])
            .collect();
        assert_eq!(ids, vec![&run["run_id"]], "{token}: {runs}");
    }
}

/// A server that died after it kept a request's key (with the run id it chose) and before the
/// run started leaves the key on a run with no log: the retry, on the next server, starts the
/// run under that id (201) rather than being refused, and a retry after it gets that run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_cut_short_after_its_key_was_kept_is_taken_up_by_the_retry() {
    let (_dir, store) = scratch();
    let url = |s: &Served| format!("{}/v1/runs", s.base);
    let mut dying = start_server(
        &store,
        &root().join("examples"),
        &[],
        Some("after-idempotency-key"),
    );
    let cut = client()
        .post(url(&dying))
        .header("idempotency-key", "k-cut")
        .json(&pay_rent())
        .send()
        .await;
    assert!(cut.is_err(), "the server answered: {cut:?}");
    assert!(!dying.child.wait().unwrap().success());
    let kept = {
        let reading = warrant_store::SqliteStore::open_read_only(&store).unwrap();
        let kept = reading
            .idempotency_get("local", "k-cut", 1)
            .await
            .unwrap()
            .expect("the key was kept before the run started");
        assert_eq!(reading.summary(&kept.run_id).await.unwrap(), None);
        kept
    };
    let s = serve(&store, &[]);
    let send = || {
        call(
            client()
                .post(url(&s))
                .header("idempotency-key", "k-cut")
                .json(&pay_rent()),
            None,
        )
    };
    let (st, started) = send().await;
    assert_eq!(st, StatusCode::CREATED, "{started}");
    assert_eq!(started["run_id"], kept.run_id.0.as_str());
    let (st, again) = send().await;
    assert_eq!(st, StatusCode::OK, "{again}");
    assert_eq!(again["run_id"], started["run_id"]);
    let (_, runs) = call(client().get(url(&s)), None).await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1, "{runs}");
}

#[test]
fn a_non_loopback_address_without_principals_is_refused() {
    let (_dir, store) = scratch();
    let o = warrant(&store, &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--principals"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_and_the_server_share_the_store_and_a_restart_loses_nothing() {
    let (_dir, store) = scratch();
    // A run the CLI started waits; the server answers it and drives it to its end.
    let waiting = ask_transfer(&store);
    let cli_run = waiting["run_id"].as_str().unwrap().to_owned();
    let s = serve(&store, &[]);
    let (_, approvals) = call(
        client().get(format!("{}/v1/approvals?run={cli_run}", s.base)),
        None,
    )
    .await;
    let (request, digest) = digest_of(&approvals, 0);
    let (st, _) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    until_status(&s, None, &cli_run, "attained").await;

    // A run the server started waits; the CLI approves it; the server sees and finishes it.
    let (_, started) = start(&s, None, pay_rent()).await;
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "waiting").await;
    let (_, run) = call(client().get(format!("{}/v1/runs/{id}", s.base)), None).await;
    let request = run["approvals"][0]["request"].as_str().unwrap().to_owned();
    let o = warrant(&store, &["approve", &request]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The server carries it on: the CLI does not send its person to `warrant resume`.
    assert!(
        !stdout(&o).contains("warrant resume")
            && (stdout(&o).contains("carries run") || stdout(&o).contains("has ended")),
        "{}",
        stdout(&o)
    );
    until_status(&s, None, &id, "attained").await;

    // A third waits; the server is killed; it is approved while no server runs; a new
    // server re-enters it, and a follower that reconnects misses nothing and repeats nothing.
    let (_, started) = start(&s, None, pay_rent()).await;
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "waiting").await;
    let before = follow(&s.base, &id, None, Some(3)).await;
    let seen = before.last().unwrap().0;
    drop(s);
    let approvals = json(&warrant(&store, &["approvals", "--json"]));
    let request = approvals
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["run"] == id.as_str())
        .unwrap()["request"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = warrant(&store, &["approve", &request]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = serve(&store, &[]);
    let rest = follow(&s.base, &id, Some(seen), None).await;
    let all: Vec<u64> = before.iter().chain(rest.iter()).map(|(s, _)| *s).collect();
    let n = all.len() as u64;
    assert_eq!(
        all,
        (1..=n).collect::<Vec<_>>(),
        "once each, in order, no gap"
    );
    assert_eq!(rest.last().unwrap().1["outcome"], "attained");
    let commits = rest
        .iter()
        .filter(|(_, e)| e["type"] == "call_dispatched" && e["effect"] == "commit")
        .count();
    assert_eq!(commits, 1);
    // This one's providers were started again by the new server: the report says so.
    let (_, report) = call(
        client().get(format!("{}/v1/runs/{id}/report", s.base)),
        None,
    )
    .await;
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("started its providers"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_names_every_route_the_server_answers() {
    let (_dir, store) = scratch();
    let s = serve(&store, &[]);
    let (st, doc) = call(client().get(format!("{}/v1/openapi.json", s.base)), None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 12, "{}", paths.len());
    for (path, ops) in paths {
        let concrete = path.replace("{id}", "r-unknown").replace("{call}", "c1");
        for method in ops.as_object().unwrap().keys() {
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = client()
                .request(m, format!("{}{concrete}", s.base))
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = r.status();
            let body = r.text().await.unwrap();
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            assert!(
                !body.contains("nothing here"),
                "{method} {path}: not routed"
            );
        }
    }
    // What a client generator needs: a unique `operationId` on each operation, the headers
    // the server reads declared, the statuses it answers listed, no schema that is the bare
    // `true`, and enums as `enum` (not a `oneOf` of constants).
    let mut ids = std::collections::BTreeSet::new();
    for ops in paths.values() {
        for op in ops.as_object().unwrap().values() {
            let id = op["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_owned()), "`{id}` twice");
        }
    }
    let start = &doc["paths"]["/v1/runs"]["post"];
    assert!(start["responses"]["201"]["headers"]["Location"].is_object());
    assert!(start["responses"]["429"]["headers"]["Retry-After"].is_object());
    let header = |op: &Value, name: &str| {
        op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["in"] == "header" && p["name"] == name)
    };
    assert!(header(start, "Idempotency-Key"));
    assert!(header(
        &doc["paths"]["/v1/runs/{id}/events"]["get"],
        "Last-Event-ID"
    ));
    fn walk(v: &Value, at: &str, found: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let here = format!("{at}/{k}");
                    if child == &Value::Bool(true)
                        && ["schema", "items", "additionalProperties"].contains(&k.as_str())
                    {
                        found.push(here.clone());
                    }
                    if k == "properties" || k == "schemas" {
                        for (name, s) in child.as_object().into_iter().flatten() {
                            if s == &Value::Bool(true) {
                                found.push(format!("{here}/{name}"));
                            }
                        }
                    }
                    if k == "oneOf"
                        && child
                            .as_array()
                            .unwrap()
                            .iter()
                            .all(|c| c.get("const").is_some())
                    {
                        found.push(format!("{here} (constants)"));
                    }
                    walk(child, &here, found);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&doc, "", &mut found);
    assert!(
        found.is_empty(),
        "schemas a generator cannot map: {found:?}"
    );
    let effect = &doc["components"]["schemas"]["Effect"];
    assert_eq!(effect["enum"], json!(["read", "commit"]), "{effect}");

    // Every schema a path refers to is in the components.
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = r.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "missing schema {name}");
    }
}

/// The document is versioned (`/v1`) and changes to it are additive: against the document
/// this version was released with (`docs/api/openapi-v1.json`), no operation, `operationId`,
/// status, parameter, schema or property went away, and no request body requires more.
/// Removing or renaming breaks every client generated from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_document_only_grows() {
    let (_dir, store) = scratch();
    let s = serve(&store, &[]);
    let now = document(&reqwest::Url::parse(&s.base).unwrap()).await;
    let released: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/api/openapi-v1.json")).unwrap(),
    )
    .unwrap();
    let mut lost = Vec::new();
    let mut bodies = Vec::new();
    for (path, ops) in released["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let Some(current) = now["paths"][path].get(method) else {
                lost.push(format!("{method} {path}"));
                continue;
            };
            if current["operationId"] != op["operationId"] {
                lost.push(format!(
                    "{method} {path}: operationId {}",
                    op["operationId"]
                ));
            }
            for status in op["responses"].as_object().unwrap().keys() {
                if current["responses"].get(status).is_none() {
                    lost.push(format!("{method} {path}: status {status}"));
                }
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                let kept = current["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["name"] == p["name"] && c["in"] == p["in"]);
                if !kept {
                    lost.push(format!("{method} {path}: parameter {}", p["name"]));
                }
            }
            if let Some(r) =
                op["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str()
            {
                bodies.push(r.rsplit('/').next().unwrap().to_owned());
            }
        }
    }
    let names = |v: &Value, key: &str| -> Vec<String> {
        match &v[key] {
            Value::Object(m) => m.keys().cloned().collect(),
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    let schemas = &now["components"]["schemas"];
    for (name, schema) in released["components"]["schemas"].as_object().unwrap() {
        let Some(current) = schemas.get(name) else {
            lost.push(format!("schema {name}"));
            continue;
        };
        for property in names(schema, "properties") {
            if current["properties"].get(&property).is_none() {
                lost.push(format!("schema {name}: property {property}"));
            }
        }
        if bodies.contains(name) {
            let was = names(schema, "required");
            for required in names(current, "required") {
                if !was.contains(&required) {
                    lost.push(format!("request body {name} now requires {required}"));
                }
            }
        }
    }
    assert!(
        lost.is_empty(),
        "the API document lost what v1 promised (add instead; a break is a /v2): {lost:?}"
    );
}

#[test]
fn a_client_that_trickles_its_request_is_disconnected() {
    use std::io::{Read as _, Write as _};
    let (_dir, store) = scratch();
    let s = serve(&store, &["--client-timeout", "1"]);
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Half a request line, and then nothing.
    tcp.write_all(b"GET /v1/runs HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let read = tcp.read_to_end(&mut answer);
    assert!(read.is_ok(), "the server closed the connection: {read:?}");
    // A body that never comes: 408.
    let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    tcp.write_all(
        b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    )
    .unwrap();
    let mut answer = [0u8; 512];
    let n = tcp.read(&mut answer).unwrap();
    let head = String::from_utf8_lossy(&answer[..n]);
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_may_edit_the_arguments_and_the_edit_is_what_runs() {
    let (_dir, store) = scratch();
    let s = serve(&store, &[]);
    let (_, started) = start(&s, None, pay_rent()).await;
    let id = started["run_id"].as_str().unwrap().to_owned();
    let run = until_status(&s, None, &id, "waiting").await;
    let request = run["approvals"][0]["request"].as_str().unwrap().to_owned();
    let digest = run["approvals"][0]["args_digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let edit = json!({"to": "DE89370400440532013000", "amount": 950, "memo": "rent, December"});
    // Edits approve one call: not for the whole run.
    let (st, p) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest, "scope": "run", "args": edit})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::CONFLICT, "{p}");
    let (st, a) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest, "args": edit})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{a}");
    until_status(&s, None, &id, "attained").await;
    let (_, page) = call(
        client().get(format!("{}/v1/runs/{id}/events", s.base)),
        None,
    )
    .await;
    let dispatched: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "call_dispatched" && e["effect"] == "commit")
        .collect();
    assert_eq!(dispatched.len(), 1);
    assert_eq!(dispatched[0]["args"], edit);
    assert_eq!(
        dispatched[0]["narrowed"][0]["by"],
        format!("approval {request}")
    );
}

#[test]
fn warrant_approve_edit_runs_the_edited_arguments() {
    let (_dir, store) = scratch();
    let waiting = ask_transfer(&store);
    let run = waiting["run_id"].as_str().unwrap();
    let request = waiting["approvals"][0]["request"].as_str().unwrap();
    let bad = warrant(&store, &["approve", request, "--edit", "[1]"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("JSON object"), "{}", stderr(&bad));
    let o = warrant(
        &store,
        &[
            "approve",
            request,
            "--edit",
            r#"{"to": "DE89370400440532013000", "amount": 950, "memo": "rent, edited"}"#,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // No process took it up: resuming it is the next step.
    assert!(
        stdout(&o).contains(&format!("continue with `warrant resume {run}`")),
        "{}",
        stdout(&o)
    );
    let done = warrant(&store, &["resume", run, "--json"]);
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let events = stdout(&warrant(&store, &["events", run, "--json"]));
    let dispatched = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "call_dispatched" && e["effect"] == "commit")
        .unwrap();
    assert_eq!(dispatched["args"]["memo"], "rent, edited");
}

/// The server's logs are one JSON object a line when asked (`--log-format json`), filtered by
/// `--log`; a filter that does not parse is refused before anything is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_logs_structured_lines_filtered_as_asked() {
    let (dir, store) = scratch();
    let log_path = dir.path().join("serve.log");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", &store)
        .env_remove("WARRANT_LOG")
        .args(["serve", "--listen", "127.0.0.1:0", "--specs"])
        .arg(root().join("examples"))
        .args(["--log-format", "json", "--log", "debug"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let s = served(child);
    let (status, started) = start(&s, None, json!({"spec_path": "pay-rent/spec.yaml"})).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "attained").await;
    let mut lines = Vec::new();
    for _ in 0..100 {
        lines = std::fs::read_to_string(&log_path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        if lines.iter().any(|l| l["fields"]["message"] == "run ended") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ended = lines
        .iter()
        .find(|l| l["fields"]["message"] == "run ended")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(ended["fields"]["run"], id.as_str());
    assert_eq!(ended["fields"]["outcome"], "attained");
    assert_eq!(ended["level"], "INFO");
    // `debug` adds each request answered.
    assert!(
        lines.iter().any(|l| l["fields"]["message"] == "answered"
            && l["fields"]["path"] == "/v1/runs"
            && l["fields"]["status"] == 201),
        "{lines:?}"
    );
    // A control action is one `info` line: who, what, on which run, and how it came out —
    // a refusal too, with its problem.
    let (status, _) = call(
        client()
            .post(format!("{}/v1/runs/{id}/cancel", s.base))
            .json(&json!({"reason": "done anyway"})),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = call(
        client()
            .post(format!("{}/v1/runs/{id}/calls/c9/reconcile", s.base))
            .json(&json!({"happened": true})),
        None,
    )
    .await;
    assert!(status.is_client_error());
    let mut actions = Vec::new();
    for _ in 0..100 {
        actions = std::fs::read_to_string(&log_path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["fields"]["message"] == "control action refused")
            .collect();
        if actions.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(actions.len(), 2, "{actions:?}");
    let cancel = &actions[0]["fields"];
    assert_eq!(actions[0]["level"], "INFO");
    assert_eq!(cancel["action"], "cancel");
    assert_eq!(cancel["run"], id.as_str());
    assert_eq!(cancel["about"], "done anyway");
    assert_eq!(cancel["by"], "local/local");
    assert_eq!(cancel["status"], 409);
    assert_eq!(actions[1]["fields"]["action"], "reconcile");
    assert_eq!(actions[1]["fields"]["about"], "c9: happened");
    drop(s);

    let o = warrant(
        &store,
        &["serve", "--listen", "127.0.0.1:0", "--log", "=nope=="],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--log `=nope==`"), "{}", stderr(&o));
}

/// A run waiting on a call in doubt is counted at `/metrics` (runs and calls in doubt, read
/// from the store) until an operator reconciles it.
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_in_doubt_is_counted_at_metrics_until_it_is_reconciled() {
    let (dir, store) = scratch();
    let run = left_in_doubt(&store, dir.path());
    let s = serve(&store, &[]);
    let page = metrics_page(&s.base).await;
    assert!(page.contains("\nwarrant_runs_in_doubt 1\n"), "{page}");
    assert!(page.contains("\nwarrant_calls_in_doubt 1\n"), "{page}");
    // The call in doubt, from the run's log.
    let events = warrant(&store, &["events", &run, "--json"]);
    let call = stdout(&events)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "call_in_doubt")
        .map(|e| e["call"].as_str().unwrap().to_owned())
        .unwrap();
    let reconciled = warrant(
        &store,
        &[
            "reconcile",
            &run,
            &call,
            "--happened",
            "--note",
            "the ledger has it",
        ],
    );
    assert!(reconciled.status.success(), "{reconciled:?}");
    let page = metrics_page(&s.base).await;
    assert!(page.contains("\nwarrant_runs_in_doubt 0\n"), "{page}");
    assert!(page.contains("\nwarrant_calls_in_doubt 0\n"), "{page}");
}

/// Approves the `i`th of `approvals` (a listing) with the digest it shows: 200.
async fn approve_shown(s: &Served, approvals: &Value, i: usize) {
    let (request, digest) = digest_of(approvals, i);
    let (st, body) = call(
        client()
            .post(format!("{}/v1/approvals/{request}/approve", s.base))
            .json(&json!({"args_digest": digest})),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

/// Waits until the server holds `want` runs (its `/metrics` gauge; bounded).
async fn until_held(s: &Served, want: u64) {
    let line = format!("\nwarrant_runs_held {want}\n");
    let mut page = String::new();
    for _ in 0..200 {
        page = metrics_page(&s.base).await;
        if page.contains(&line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server never held {want} runs: {page}");
}

/// The types of run `id`'s events, in order.
async fn event_types(s: &Served, id: &str) -> Vec<String> {
    let (st, page) = call(
        client().get(format!("{}/v1/runs/{id}/events?limit=1000", s.base)),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{page}");
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_let_go_is_held_by_nothing_and_goes_on_when_answered_or_expired() {
    let (dir, store) = scratch();
    // The catalog: pay-rent, and a copy whose approvals expire after two seconds.
    let specs = dir.path().join("specs");
    for (name, limits) in [
        ("pay-rent", ""),
        ("pay-soon", "limits: {approval_ttl_ms: 2000}\n"),
    ] {
        let to = specs.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for f in ["spec.yaml", "script.yaml"] {
            let text = std::fs::read_to_string(root().join("examples/pay-rent").join(f)).unwrap();
            let extra = if f == "spec.yaml" { limits } else { "" };
            std::fs::write(to.join(f), format!("{text}{extra}")).unwrap();
        }
    }
    let s = start_server(&store, &specs, &["--hold-waiting", "0"], None);

    // Answered through the API: the run nobody held is re-entered and goes on.
    let (_, started) = start(&s, None, pay_rent()).await;
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "waiting").await;
    until_held(&s, 0).await;
    let (_, run) = call(client().get(format!("{}/v1/runs/{id}", s.base)), None).await;
    approve_shown(&s, &run["approvals"], 0).await;
    until_status(&s, None, &id, "attained").await;
    let types = event_types(&s, &id).await;
    assert_eq!(
        types.iter().filter(|t| *t == "run_resumed").count(),
        1,
        "re-entered once, when answered: {types:?}"
    );

    // Answered by another process: the store tells the server, which takes it up.
    let (_, started) = start(&s, None, pay_rent()).await;
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "waiting").await;
    until_held(&s, 0).await;
    let (_, run) = call(client().get(format!("{}/v1/runs/{id}", s.base)), None).await;
    let request = run["approvals"][0]["request"].as_str().unwrap().to_owned();
    let o = warrant(&store, &["approve", &request]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    until_status(&s, None, &id, "attained").await;

    // Not answered: its expiry is recorded on time, though no task here waits on it.
    let (_, started) = start(
        &s,
        None,
        json!({"spec_path": "pay-soon/spec.yaml", "ask_tools": ["transfer"]}),
    )
    .await;
    let id = started["run_id"].as_str().unwrap().to_owned();
    until_status(&s, None, &id, "waiting").await;
    until_held(&s, 0).await;
    let mut types = Vec::new();
    for _ in 0..200 {
        types = event_types(&s, &id).await;
        if types.iter().any(|t| t == "approval_expired") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        types.iter().any(|t| t == "approval_expired"),
        "the expiry was recorded: {types:?}"
    );
    let events = warrant(&store, &["events", &id, "--json"]);
    let commits = stdout(&events)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "call_dispatched" && e["effect"] == "commit")
        .count();
    assert_eq!(commits, 0, "an expired approval lets nothing through");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_ask_answered_through_the_api_carries_its_tree_on_held_or_let_go() {
    for hold in ["300", "0"] {
        let (_dir, store) = scratch();
        let s = serve(&store, &["--hold-waiting", hold]);
        let (st, started) = start(
            &s,
            None,
            json!({"spec_path": "delegation/spec.yaml", "ask_tools": ["check_design_drift"]}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{started}");
        let root = started["run_id"].as_str().unwrap().to_owned();
        until_status(&s, None, &root, "waiting").await;
        if hold == "0" {
            until_held(&s, 0).await;
        }
        let (_, asked) = call(
            client().get(format!("{}/v1/approvals?run={root}", s.base)),
            None,
        )
        .await;
        assert_ne!(asked[0]["run"], root.as_str(), "a child asked: {asked}");
        approve_shown(&s, &asked, 0).await;
        until_status(&s, None, &root, "attained").await;
        // One task drove the tree on: the held one woken, or one re-entry of the root.
        let types = event_types(&s, &root).await;
        let resumed = types.iter().filter(|t| *t == "run_resumed").count();
        assert_eq!(resumed, 1, "hold {hold}: {types:?}");
        until_held(&s, 0).await;
    }
}

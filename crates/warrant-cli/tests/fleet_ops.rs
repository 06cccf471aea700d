//! A fleet's day on PostgreSQL, through the binary: the schema migrated by command, a server
//! that queues runs, a worker that drives them, and approvals, fair-share waits and
//! cancellations from other processes against the shared store. Each test has a schema of its
//! own in the machine's PostgreSQL.

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
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{json, start_server, stderr, stdout, warrant};

/// A fresh store: its URL, as the `WARRANT_STORE` the helpers pass.
fn store(label: &str) -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(warrant_store::contract::postgres_scratch(label))
}

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn worker(url: &str, extra: &[&str]) -> Worker {
    Worker(
        Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(support::root())
            .env("WARRANT_STORE", url)
            .env_remove("WARRANT_FAULT")
            .args(["worker", "--name", "w1"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

/// `warrant show RUN --json`, until `done` accepts it (bounded).
fn until(url: &Path, run: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        let out = warrant(url, &["show", run, "--json"]);
        if out.status.success() {
            last = json(&out);
            if done(&last) {
                return last;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("run {run} never {what}: {last}");
}

fn post(base: &str, body: &Value) -> Value {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let r = warrant_http::client()
                .post(format!("{base}/v1/runs"))
                .json(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
            r.json().await.unwrap()
        })
}

#[test]
fn a_server_queues_a_worker_drives_and_any_process_answers_or_cancels() {
    let url = store("ops");
    let at = Path::new(&url);
    let migrated = warrant(at, &["store", "migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    assert!(
        stdout(&migrated).contains("up to date"),
        "{}",
        stdout(&migrated)
    );
    let server = start_server(at, &support::root().join("examples"), &[], None);
    let pay = json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]});

    // Queued: recorded, driven by nobody yet.
    let first = post(&server.base, &pay);
    assert_eq!(first["status"], "queued", "{first}");
    let first = first["run_id"].as_str().unwrap().to_owned();
    let shown = warrant(at, &["show", &first]);
    assert!(
        stdout(&shown).contains("status   queued"),
        "{}",
        stdout(&shown)
    );

    // A worker takes it; it waits for its approval, let go by the worker.
    let _w = worker(&url, &["--tenant-approvals", "1"]);
    until(at, &first, "waited", |v| v["status"] == "waiting");
    // The tenant has an approval pending: its next run is not started, and says why.
    let second = post(&server.base, &pay)["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let passed = until(at, &second, "said why it waits", |v| v["note"].is_string());
    assert_eq!(passed["status"], "queued", "{passed}");
    assert!(
        passed["note"]
            .as_str()
            .unwrap()
            .contains("1 approvals pending"),
        "{passed}"
    );

    // Approved from another process: the worker carries the run on to its end; the second
    // run is then started, and waits for its own approval.
    let pending = json(&warrant(at, &["approvals", "--json"]));
    let request = pending[0]["request"].as_str().unwrap().to_owned();
    let approved = warrant(at, &["approve", &request, "--as", "ops"]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    until(at, &first, "attained", |v| v["status"] == "attained");
    until(at, &second, "waited", |v| v["status"] == "waiting");

    // Cancelled from another process.
    let cancelled = warrant(at, &["cancel", &second, "--reason", "not this month"]);
    assert!(cancelled.status.success(), "{}", stderr(&cancelled));
    until(at, &second, "was cancelled", |v| v["status"] == "cancelled");
    // Every log replays byte for byte.
    for run in [&first, &second] {
        let replayed = warrant(at, &["replay", run, "--verify"]);
        assert!(replayed.status.success(), "{}", stderr(&replayed));
    }
}

#[test]
fn a_sleeping_run_is_let_go_by_its_worker_and_woken_by_a_worker_at_its_time() {
    let url = store("sleep");
    let at = Path::new(&url);
    let server = start_server(at, &support::root().join("examples"), &[], None);
    let body = json!({
        "spec_path": "pay-rent/spec.yaml",
        "decider": "scripted:pay-rent/after-payday.yaml"
    });
    let run = post(&server.base, &body)["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let _w = worker(&url, &[]);
    // Asleep, it is the store's: no worker holds it.
    let asleep = until(at, &run, "slept", |v| v["status"] == "sleeping");
    assert!(
        asleep["note"]
            .as_str()
            .unwrap_or_default()
            .contains("asleep until"),
        "{asleep}"
    );
    until(at, &run, "attained", |v| v["status"] == "attained");
    let out = warrant(at, &["events", &run, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let (set, fired) = (of("timer_set"), of("timer_fired"));
    assert_eq!((set.len(), fired.len()), (1, 1), "{events:#?}");
    assert!(fired[0]["at_ms"].as_u64() >= set[0]["until_ms"].as_u64());
    // Taken up once, and woken by a re-entry: two drivings.
    assert_eq!(of("run_taken_up").len(), 1);
    assert_eq!(of("run_resumed").len(), 1);
    let replayed = warrant(at, &["replay", &run, "--verify"]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
}

#[test]
fn a_worker_needs_a_fleet_store_and_a_store_url_must_be_one_warrant_knows() {
    let (_dir, file) = support::scratch();
    let out = warrant(&file, &["worker"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("postgres://"), "{}", stderr(&out));
    let out = warrant(Path::new("mysql://db/warrant"), &["runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("mysql://"), "{}", stderr(&out));
    // A database with no Warrant schema asks for the migration; nothing is created.
    let url = store("empty").replace("search_path%3D", "search_path%3Dnone_");
    let out = warrant(Path::new(&url), &["runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("warrant store migrate"),
        "{}",
        stderr(&out)
    );
    // A password never reaches a message.
    let out = warrant(
        Path::new("postgres://warrant:hunter2@127.0.0.1:1/x"),
        &["runs"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("hunter2"), "{}", stderr(&out));
}

/// Two servers of a fleet share the `Idempotency-Key`s in the store: a request retried against
/// the other server gets the run the first one queued, another body is 409, and requests with
/// one key sent to both servers at once queue one run between them (one 201, one 200).
#[test]
fn two_servers_of_a_fleet_answer_one_idempotency_key_with_one_run() {
    let url = store("idem");
    let at = Path::new(&url);
    let migrated = warrant(at, &["store", "migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    let specs = support::root().join("examples");
    let (a, b) = (
        start_server(at, &specs, &[], None),
        start_server(at, &specs, &[], None),
    );
    let pay = json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]});
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let send = |base: &str, key: &str, body: &Value| {
        let req = warrant_http::client()
            .post(format!("{base}/v1/runs"))
            .header("idempotency-key", key)
            .json(body);
        async move {
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    runtime.block_on(async {
        let (st, first) = send(&a.base, "k-retried", &pay).await;
        assert_eq!(st, 201, "{first}");
        let (st, again) = send(&b.base, "k-retried", &pay).await;
        assert_eq!(st, 200, "{again}");
        assert_eq!(again["run_id"], first["run_id"]);
        let (st, other) = send(
            &b.base,
            "k-retried",
            &json!({"spec_path": "pay-rent/spec.yaml"}),
        )
        .await;
        assert_eq!(st, 409, "{other}");
        for round in 0..5 {
            let key = format!("k-raced-{round}");
            let ((sa, ra), (sb, rb)) =
                tokio::join!(send(&a.base, &key, &pay), send(&b.base, &key, &pay));
            assert_eq!(ra["run_id"], rb["run_id"], "round {round}: {ra} {rb}");
            let mut statuses = [sa, sb];
            statuses.sort_unstable();
            assert_eq!(statuses, [200, 201], "round {round}: {ra} {rb}");
        }
    });
    // One queued run for each key: the retried one and the five raced.
    let runs = json(&warrant(at, &["runs", "--json"]));
    assert_eq!(runs.as_array().unwrap().len(), 6, "{runs}");
}

/// PostgreSQL's failures are told in its own words (never only "db error"), with the store's
/// URL and no password.
#[test]
fn a_databases_failure_is_told_in_its_own_words_with_the_url() {
    let base = warrant_store::contract::postgres_base();
    let (head, _) = base.rsplit_once('/').unwrap();
    let no_db = format!("{head}/warrant_no_such_database");
    let out = warrant(Path::new(&no_db), &["runs"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "cannot connect to `{}`: database \"warrant_no_such_database\" does not exist",
            warrant_store::url_without_password(&no_db)
        )),
        "{err}"
    );
    assert!(!err.contains("db error"), "{err}");
    let refused = "postgres://warrant:hunter2@127.0.0.1:1/x";
    let out = warrant(Path::new(refused), &["runs"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "cannot connect to `postgres://warrant:***@127.0.0.1:1/x`: error connecting to server"
        ) && err.contains("refused"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

/// A fleet's server only queues a run: it checks the spec and records the run without starting
/// the spec's providers (a stdio MCP server here), which the worker that drives it starts.
#[test]
fn a_fleet_server_queues_a_run_without_starting_its_providers() {
    let url = store("queue_cheap");
    let at = Path::new(&url);
    let migrated = warrant(at, &["store", "migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    let specs = tempfile::tempdir().unwrap();
    let marker = specs.path().join("started");
    std::fs::create_dir(specs.path().join("tools")).unwrap();
    std::fs::write(
        specs.path().join("tools/spec.yaml"),
        format!(
            "version: warrant/v1
id: tools
objective: Use a tool.
decider: scripted:script.yaml
providers:
  tools:
    mcp:
      command: [sh, -c, 'touch {}; sleep 30']
steps:
  - id: use
    provider: tools
    tools: [anything]
",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::write(
        specs.path().join("tools/script.yaml"),
        "steps:\n  use:\n    - call: anything\n",
    )
    .unwrap();
    let server = start_server(at, specs.path(), &[], None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, body) = runtime.block_on(async {
        let r = warrant_http::client()
            .post(format!("{}/v1/runs", server.base))
            .json(&json!({"spec_path": "tools/spec.yaml"}))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"], "queued", "{body}");
    assert!(!marker.exists(), "queueing started the spec's MCP server");
}

/// A Prometheus page's value of `name{labels}` (`labels` as written, `""` for none).
fn scraped(page: &str, name: &str, labels: &str) -> Option<u64> {
    let key = format!("{name}{labels} ");
    page.lines()
        .find_map(|l| l.strip_prefix(key.as_str()))
        .map(|v| v.trim().parse().unwrap())
}

/// Every front door answers `/metrics` with the same names: after a known workload, the
/// server's and the worker's figures are what each did, and both tell the fleet's state as the
/// store has it.
#[test]
fn each_front_door_scrapes_what_it_did_and_the_fleets_state() {
    let url = store("metrics");
    let at = Path::new(&url);
    assert!(warrant(at, &["store", "migrate"]).status.success());
    let server = start_server(at, &support::root().join("examples"), &[], None);
    let port = support::free_port();
    let _w = worker(&url, &["--metrics", &format!("127.0.0.1:{port}")]);
    let gateway_port = support::free_port();

    // Three runs that attain, one that waits for its approval.
    let plain = json!({"spec_path": "pay-rent/spec.yaml"});
    let asking = json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]});
    let mut ids = Vec::new();
    for body in [&plain, &plain, &plain] {
        ids.push(
            post(&server.base, body)["run_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let waiting = post(&server.base, &asking)["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for id in &ids {
        until(at, id, "attained", |v| v["status"] == "attained");
    }
    until(at, &waiting, "waited", |v| v["status"] == "waiting");

    // The server queued all four and drove none.
    let served = support::get_text_blocking(format!("{}/metrics", server.base));
    assert_eq!(
        scraped(&served, "warrant_runs_queued_total", ""),
        Some(4),
        "{served}"
    );
    assert_eq!(scraped(&served, "warrant_runs_started_total", ""), Some(0));

    // The worker took up all four; its decisions and events are the logs'.
    let page = support::get_text_blocking(format!("http://127.0.0.1:{port}/metrics"));
    assert_eq!(
        scraped(&page, "warrant_runs_started_total", ""),
        Some(4),
        "{page}"
    );
    assert_eq!(
        scraped(&page, "warrant_runs_ended_total", "{outcome=\"attained\"}"),
        Some(3),
        "{page}"
    );
    let (mut decisions, mut events, mut queued) = (0, 0, 0);
    for id in ids.iter().chain([&waiting]) {
        let log = warrant(at, &["events", id, "--json"]);
        for line in stdout(&log).lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            events += 1;
            match e["type"].as_str().unwrap() {
                "decided" => decisions += 1,
                "run_started" => queued += 1,
                _ => {}
            }
        }
    }
    assert_eq!(queued, 4);
    assert_eq!(
        scraped(&page, "warrant_decisions_total", ""),
        Some(decisions),
        "{page}"
    );
    // Every event but the one the server wrote when it queued each run.
    assert_eq!(
        scraped(&page, "warrant_events_total", ""),
        Some(events - queued),
        "{page}"
    );
    // The fleet's state, from the store, the same at either door.
    for page in [&served, &page] {
        assert_eq!(
            scraped(page, "warrant_runs", "{status=\"waiting\"}"),
            Some(1),
            "{page}"
        );
        assert_eq!(
            scraped(page, "warrant_runs", "{status=\"running\"}"),
            Some(0),
            "{page}"
        );
        assert_eq!(
            scraped(page, "warrant_approvals_pending", ""),
            Some(1),
            "{page}"
        );
    }

    // A gateway's door tells the fleet's state too.
    let config = support::root().join("examples/gateway/gateway.yaml");
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(support::root())
        .env("WARRANT_STORE", &url)
        .args(["gateway", "--http", "127.0.0.1:0", "--metrics"])
        .arg(format!("127.0.0.1:{gateway_port}"))
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut page = String::new();
    for _ in 0..200 {
        // The response and its body on one runtime: the body may need more than one read.
        let got = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                warrant_http::client()
                    .get(format!("http://127.0.0.1:{gateway_port}/metrics"))
                    .send()
                    .await?
                    .text()
                    .await
            });
        if let Ok(text) = got {
            page = text;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Stopped as an operator stops it (SIGTERM): it ends its sessions and its upstream
    // servers before it exits, and leaves no process behind for the tests that follow.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(gateway.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = gateway.wait();
    assert_eq!(
        scraped(&page, "warrant_approvals_pending", ""),
        Some(1),
        "{page}"
    );
    assert_eq!(
        scraped(&page, "warrant_runs", "{status=\"waiting\"}"),
        Some(1),
        "{page}"
    );

    // A person approves the waiting run at the server: the server counts the answer and how
    // long it waited; the worker that takes the run up again drives it to its end.
    let pending: Value = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(support::get_json(&format!("{}/v1/approvals", server.base)));
    let row = &pending[0];
    let request = row["request"].as_str().unwrap().to_owned();
    let answered = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            warrant_http::client()
                .post(format!("{}/v1/approvals/{request}/approve", server.base))
                .json(&json!({"args_digest": row["args_digest"]}))
                .send()
                .await
                .unwrap()
                .status()
        });
    assert!(answered.is_success(), "{answered}");
    until(at, &waiting, "attained", |v| v["status"] == "attained");
    let served = support::get_text_blocking(format!("{}/metrics", server.base));
    assert_eq!(
        scraped(
            &served,
            "warrant_approvals_answered_total",
            "{answer=\"approved\"}"
        ),
        Some(1),
        "{served}"
    );
    assert_eq!(
        scraped(&served, "warrant_approval_wait_seconds_count", ""),
        Some(1),
        "{served}"
    );
    // The worker's calls by tool, status and layer, and its decisions' times, are the logs'.
    let page = support::get_text_blocking(format!("http://127.0.0.1:{port}/metrics"));
    let mut calls: std::collections::BTreeMap<String, u64> = Default::default();
    let mut decisions = 0;
    for id in ids.iter().chain([&waiting]) {
        let log = warrant(at, &["events", id, "--json"]);
        let mut tools = std::collections::HashMap::new();
        for line in stdout(&log).lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            match e["type"].as_str().unwrap() {
                "decided" => decisions += 1,
                "call_started" => {
                    tools.insert(e["call"].clone(), e["tool"].as_str().unwrap().to_owned());
                }
                "call_finished" => {
                    let layer = e["fault"]["layer"].as_str().unwrap_or("none");
                    let key = format!(
                        "{{tool=\"{}\",status=\"{}\",layer=\"{layer}\"}}",
                        tools[&e["call"]],
                        e["status"].as_str().unwrap()
                    );
                    *calls.entry(key).or_default() += 1;
                }
                _ => {}
            }
        }
    }
    assert!(calls.len() >= 2, "{calls:?}");
    for (labels, n) in &calls {
        assert_eq!(
            scraped(&page, "warrant_calls_total", labels),
            Some(*n),
            "{labels} in {page}"
        );
    }
    assert_eq!(
        scraped(&page, "warrant_decision_seconds_count", ""),
        Some(decisions),
        "{page}"
    );
    // The scripted decider reported no tokens: no row claims any.
    assert!(!page.contains("warrant_tokens_total{"), "{page}");
}

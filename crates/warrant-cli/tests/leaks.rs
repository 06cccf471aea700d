//! The process-leak test: every front door that starts stdio MCP servers — `run`, `resume`,
//! `serve`, `worker`, `gateway` — with a server that ignores end of input and SIGTERM and
//! starts a grandchild, and one that never finishes its handshake. After the command ends,
//! or is killed with SIGKILL, no process of the test's servers is left (counted by a marker
//! every one of them carries on its command line).

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

use support::*;

/// A marker no other process has: a length of `sleep` picked for this test process.
fn marker(n: u32) -> String {
    format!("{}", 4_000_000 + std::process::id() * 20 + n)
}

/// Waits (up to `secs`) until some process carries `marker`.
fn until_started(marker: &str, secs: u64) {
    for _ in 0..secs * 20 {
        if !lingering(marker).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no process with marker {marker} started");
}

/// Asserts that, within `secs`, no process carries `marker`.
fn none_left(marker: &str, secs: u64, what: &str) {
    let mut left = Vec::new();
    for _ in 0..secs * 20 {
        left = lingering(marker);
        if left.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: processes left behind: {left:#?}");
}

/// The stubborn server's MCP settings, carrying `marker`.
fn stubborn(marker: &str) -> String {
    format!(
        "mcp: {{command: [node, {}, '{marker}'], effects: {{ping: read, hold: read}}}}",
        root().join("mcp-servers/stubborn-server.js").display()
    )
}

/// A spec in `dir` (`spec.yaml`, script `script.yaml` calling `tool` once) over the stubborn
/// server carrying `marker`.
fn write_spec(dir: &Path, marker: &str, tool: &str) {
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "version: warrant/v1
id: stubborn
objective: Call the stubborn server.
decider: scripted:script.yaml
providers:
  s: {{{}}}
steps:
  - id: call
    provider: s
    tools: [{tool}]
",
            stubborn(marker)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("script.yaml"),
        format!("steps:\n  call:\n    - call: {tool}\n    - done: called\n"),
    )
    .unwrap();
}

fn spawn(dir: &Path, store: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir)
        .env("WARRANT_STORE", store)
        .env_remove("WARRANT_FAULT")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Starts a run of `spec` through the API of the server at `base` (201 expected).
fn post_run(base: &str, spec: &str) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let r = warrant_http::client()
                .post(format!("{base}/v1/runs"))
                .json(&serde_json::json!({"spec_path": spec}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201, "{:?}", r.text().await);
        });
}

fn sigkill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn sigterm(child: &mut Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait().unwrap();
}

#[test]
fn run_and_resume_leave_no_process_behind() {
    let (dir, store) = scratch();
    let d = dir.path();
    // A run that ends: its server is ended in MCP's order, SIGKILL at last.
    let m = marker(1);
    write_spec(d, &m, "ping");
    let run = warrant_in(d, &store, &["run", "spec.yaml", "-q", "--no-prompt"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    none_left(&m, 1, "run that ended");
    // A run that waits for a person, then resumed once answered.
    let m = marker(2);
    write_spec(d, &m, "ping");
    let waiting = warrant_in(
        d,
        &store,
        &[
            "run",
            "spec.yaml",
            "-q",
            "--no-prompt",
            "--ask-tool",
            "ping",
            "--json",
        ],
    );
    assert_eq!(waiting.status.code(), Some(3), "{}", stderr(&waiting));
    none_left(&m, 1, "run that waits");
    let request = json(&waiting)["approvals"][0]["request"]
        .as_str()
        .unwrap()
        .to_owned();
    let approve = warrant_in(d, &store, &["approve", &request]);
    assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
    let resumed = warrant_in(d, &store, &["resume", "last", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    none_left(&m, 1, "resume");
    // A server that never finishes its handshake, given up at the call timeout.
    let m = marker(3);
    std::fs::write(
        d.join("silent.yaml"),
        format!(
            "version: warrant/v1
id: silent
objective: Reach a server that never answers.
decider: scripted:script.yaml
limits: {{call_timeout_ms: 1000}}
providers:
  s: {{mcp: {{command: [sleep, '{m}']}}}}
steps:
  - id: call
    provider: s
",
        ),
    )
    .unwrap();
    let silent = warrant_in(d, &store, &["run", "silent.yaml", "-q", "--no-prompt"]);
    assert_ne!(silent.status.code(), Some(0));
    none_left(&m, 1, "a handshake never finished");
    // A run killed with SIGKILL while a call is in flight: the guard ends the group.
    let m = marker(4);
    write_spec(d, &m, "hold");
    let mut killed = spawn(
        d,
        store.to_str().unwrap(),
        &["run", "spec.yaml", "-q", "--no-prompt"],
    );
    until_started(&m, 20);
    std::thread::sleep(Duration::from_millis(500));
    sigkill(&mut killed);
    none_left(&m, 10, "run killed with SIGKILL");
    // Resumed, and killed again.
    let mut again = spawn(d, store.to_str().unwrap(), &["resume", "last", "-q"]);
    until_started(&m, 20);
    std::thread::sleep(Duration::from_millis(500));
    sigkill(&mut again);
    none_left(&m, 10, "resume killed with SIGKILL");
}

#[test]
fn serve_and_gateway_leave_no_process_behind_when_stopped_or_killed() {
    let (dir, store) = scratch();
    let d = dir.path();
    // `serve`: a run that ends, then the server stopped with SIGTERM.
    let m = marker(5);
    write_spec(d, &m, "ping");
    let mut serve = start_server(&store, d, &[], None);
    let base = serve.base.clone();
    let started = |spec: &str| post_run(&base, spec);
    started("spec.yaml");
    for _ in 0..200 {
        let runs = warrant_in(d, &store, &["runs", "--json"]);
        if json(&runs)[0]["status"] == "attained" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    none_left(&m, 5, "serve, after its run ended");
    // A run in flight when the server is killed with SIGKILL.
    let m = marker(6);
    write_spec(d, &m, "hold");
    started("spec.yaml");
    until_started(&m, 20);
    std::thread::sleep(Duration::from_millis(500));
    sigkill(&mut serve.child);
    none_left(&m, 10, "serve killed with SIGKILL");
    // Restarted, it re-enters the interrupted run; stopped with SIGTERM, nothing is left.
    let mut serve = start_server(&store, d, &[], None);
    until_started(&m, 20);
    sigterm(&mut serve.child);
    none_left(&m, 10, "serve stopped with SIGTERM");

    // `gateway` over stdio: its client leaves (end of input), then one killed with SIGKILL.
    let m = marker(7);
    std::fs::write(
        d.join("gateway.yaml"),
        format!(
            "version: warrant/gateway/v1
id: stubborn-gateway
servers:
  s: {{{}}}
tools: [ping]
",
            stubborn(&m)
        ),
    )
    .unwrap();
    let store_s = store.to_str().unwrap().to_owned();
    let mut gateway = spawn(d, &store_s, &["gateway", "gateway.yaml", "--stdio"]);
    until_started(&m, 20);
    drop(gateway.stdin.take());
    let ended = gateway.wait().unwrap();
    assert!(
        ended.code().is_some(),
        "the gateway ends when its client leaves"
    );
    none_left(&m, 1, "gateway whose client left");
    let mut gateway = spawn(d, &store_s, &["gateway", "gateway.yaml", "--stdio"]);
    until_started(&m, 20);
    sigkill(&mut gateway);
    none_left(&m, 10, "gateway killed with SIGKILL");
}

/// A fleet's worker killed with SIGKILL while it drives a run leaves no server behind, and
/// neither does one stopped with SIGTERM.
#[test]
fn a_worker_leaves_no_process_behind_when_stopped_or_killed() {
    let url = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(warrant_store::contract::postgres_scratch("leaks"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = marker(8);
    write_spec(d, &m, "hold");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_warrant"));
    serve
        .current_dir(d)
        .env("WARRANT_STORE", &url)
        .args(["serve", "--listen", "127.0.0.1:0", "--specs"])
        .arg(d)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let served = served(serve.spawn().unwrap());
    post_run(&served.base, "spec.yaml");
    let mut worker = spawn(d, &url, &["worker", "--name", "leaky"]);
    until_started(&m, 30);
    std::thread::sleep(Duration::from_millis(500));
    sigkill(&mut worker);
    none_left(&m, 10, "worker killed with SIGKILL");
    // Another worker takes the run over once the lease lapses; stopped with SIGTERM.
    let mut worker = spawn(d, &url, &["worker", "--name", "tidy", "--grace", "1"]);
    until_started(&m, 60);
    sigterm(&mut worker);
    none_left(&m, 10, "worker stopped with SIGTERM");
    drop(served);
}

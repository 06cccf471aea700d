//! `warrant gateway`: outside MCP clients — the official TypeScript and Python SDK clients —
//! through the gateway to the official filesystem, memory and everything servers. Every call
//! is governed and each session is a run whose log holds the evidence.

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

mod support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

use serde_json::{Value, json};

/// A copy of `examples/gateway` in a fresh folder (its sandbox is written to), with the store
/// beside it.
struct World {
    dir: tempfile::TempDir,
    config: PathBuf,
    store: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let example = root().join("examples/gateway");
        let here = dir.path().join("gateway");
        copy_dir(&example, &here);
        let servers = root().join("mcp-servers");
        assert!(
            servers.join("node_modules").exists(),
            "install the test servers first: npm ci --prefix mcp-servers"
        );
        let config = here.join("gateway.yaml");
        let text = std::fs::read_to_string(&config)
            .unwrap()
            .replace("../../mcp-servers", &servers.display().to_string());
        std::fs::write(&config, text).unwrap();
        let store = dir.path().join("w.db");
        World { dir, config, store }
    }

    fn sandbox(&self) -> PathBuf {
        self.dir.path().join("gateway/sandbox")
    }

    fn inbox(&self) -> String {
        std::fs::read_to_string(self.sandbox().join("inbox.txt")).unwrap()
    }

    /// How a stdio client starts the gateway.
    fn stdio(&self) -> Value {
        json!({
            "command": [env!("CARGO_BIN_EXE_warrant"), "gateway", self.config],
            "env": {"WARRANT_STORE": self.store},
        })
    }

    /// `warrant gateway CONFIG --http 127.0.0.1:0`, with `env`, and the URL it serves at.
    fn http(&self, env: &[(&str, &str)]) -> (Served, String) {
        self.http_with(&[], env)
    }

    /// The same, with more arguments.
    fn http_with(&self, args: &[&str], env: &[(&str, &str)]) -> (Served, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_warrant"));
        cmd.args([
            "gateway",
            self.config.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .args(args)
        .env("WARRANT_STORE", &self.store)
        .env_remove("WARRANT_FAULT")
        .stderr(std::process::Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = std::io::BufReader::new(stderr).lines();
        let mut said = Vec::new();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the gateway stopped: {said:?}"))
                .unwrap();
            if let Some(url) = line
                .split_whitespace()
                .find(|w| w.starts_with("http://") && w.ends_with("/mcp"))
            {
                break url.to_owned();
            }
            said.push(line);
        };
        // Keep draining what it prints, so it never blocks on a full pipe.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(said));
        let sink = seen.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        (
            Served {
                child,
                stderr: seen,
            },
            url,
        )
    }

    fn warrant(&self, args: &[&str]) -> std::process::Output {
        warrant_in(self.dir.path(), &self.store, args)
    }

    /// Adds `lines` (YAML) to the example's config, after its `id`.
    fn configure(&self, lines: &str) {
        let config = std::fs::read_to_string(&self.config)
            .unwrap()
            .replace("id: fs-gateway", &format!("id: fs-gateway\n{lines}"));
        std::fs::write(&self.config, config).unwrap();
    }

    /// Waits until exactly one approval request is pending, and returns it.
    fn one_pending(&self) -> Value {
        let mut pending = Value::Null;
        assert!(
            eventually(|| {
                pending = json(&self.warrant(&["approvals", "--json"]));
                pending.as_array().is_some_and(|p| p.len() == 1)
            }),
            "no single pending approval: {pending}"
        );
        pending[0].clone()
    }

    fn report(&self, run: &str) -> Value {
        json(&self.warrant(&["report", run, "--json"]))
    }

    /// The runs in the store, newest first.
    fn runs(&self) -> Vec<Value> {
        json(&self.warrant(&["runs", "--json"]))
            .as_array()
            .unwrap()
            .clone()
    }
}

struct Served {
    child: std::process::Child,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The Python interpreter with the `mcp` SDK and Pydantic AI (`.ci/mcp-clients`).
fn python() -> PathBuf {
    if let Ok(p) = std::env::var("WARRANT_MCP_PYTHON") {
        return PathBuf::from(p);
    }
    let cache = std::env::var("WARRANT_CACHE").map_or_else(
        |_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/warrant"),
        PathBuf::from,
    );
    let python = cache.join("mcp-clients-2.3.0-2.68.0/bin/python");
    assert!(
        python.exists(),
        "install the MCP clients first: .ci/mcp-clients (./test does)"
    );
    python
}

#[derive(Clone, Copy, Debug)]
enum Client {
    TypeScript,
    Python,
}

/// Runs `client` with `plan` (see mcp-servers/gateway-client.mjs) and what it saw.
fn drive(client: Client, plan: &Value) -> Value {
    let mut cmd = match client {
        Client::TypeScript => {
            let mut c = Command::new("node");
            c.arg(root().join("mcp-servers/gateway-client.mjs"));
            c
        }
        Client::Python => {
            let mut c = Command::new(python());
            c.arg(root().join("mcp-servers/gateway_client.py"));
            c
        }
    };
    let out = cmd.arg(plan.to_string()).output().unwrap();
    assert!(
        out.status.success(),
        "{client:?} client: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{client:?} client printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

/// The plan of the governed-session scenario: a read, a write the policy forbids, a write of
/// a tool's output the person approves, the same content to another path (a new question,
/// which the person denies), and a write of the client's own words.
fn scenario(world: &World, connection: Value) -> Value {
    let inbox = world.inbox();
    let mut plan = connection;
    plan["answers"] = json!(["approve", "deny"]);
    plan["calls"] = json!([
        {"name": "read_text_file", "arguments": {"path": "inbox.txt"}},
        {"name": "write_file", "arguments": {"path": "secret.txt", "content": "hello"}},
        {"name": "write_file", "arguments": {"path": "notes/../secret.txt", "content": "hello"}},
        {"name": "write_file", "arguments": {"path": "notes/copy.txt", "content": inbox}},
        {"name": "write_file", "arguments": {"path": "notes/other.txt", "content": inbox}},
        {"name": "write_file", "arguments": {"path": "notes/mine.txt", "content": "my own words"}},
    ]);
    plan
}

/// What the scenario must leave: on disk, in the client's answers, in the session's log.
fn governed(world: &World, seen: &Value, run: &str) {
    let results = seen["results"].as_array().unwrap();
    let inbox = world.inbox();
    // The read passes, its text as the server wrote it.
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert!(results[0].to_string().contains("IBAN"), "{}", results[0]);
    // Outside notes/ (or climbing out of it): denied by the policy, a tool error for the model.
    for denied in &results[1..3] {
        assert_eq!(denied["isError"], true, "{denied}");
        assert!(text(denied).contains("writes-stay-in-notes"), "{denied}");
    }
    assert!(!world.sandbox().join("secret.txt").exists());
    // The tool's output written: asked about through the client, approved, written once.
    assert_eq!(results[3]["isError"], false, "{}", results[3]);
    assert_eq!(
        std::fs::read_to_string(world.sandbox().join("notes/copy.txt")).unwrap(),
        inbox
    );
    // The same content elsewhere is other arguments: the approval does not reach it; asked
    // again, denied, not written.
    assert_eq!(results[4]["isError"], true, "{}", results[4]);
    assert!(text(&results[4]).contains("not this one"), "{}", results[4]);
    assert!(!world.sandbox().join("notes/other.txt").exists());
    // The client's own words go ahead without a question.
    assert_eq!(results[5]["isError"], false, "{}", results[5]);
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    // The person saw the exact arguments and where each value came from.
    let question = asked[0].as_str().unwrap();
    assert!(question.contains("notes/copy.txt"), "{question}");
    assert!(
        question.contains("/content <- the output of `fs`"),
        "{question}"
    );

    // The session's log: every call, verdict and approval, as for any run.
    let report = world.report(run);
    assert_eq!(
        report["outcome"]["outcome"], "closed",
        "{}",
        report["outcome"]
    );
    let events: Vec<Value> = stdout(&world.warrant(&["events", run, "--json"]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let statuses: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "call_finished")
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "ok",
            "stopped_by_policy",
            "stopped_by_policy",
            "ok",
            "stopped_by_policy",
            "ok"
        ]
    );
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let count = |k: &str| kinds.iter().filter(|x| **x == k).count();
    assert_eq!(count("approval_requested"), 2);
    assert_eq!(
        count("approval_consumed"),
        1,
        "approved once, consumed once"
    );
    // Replayed from its log alone, the session regenerates every event.
    let replay = world.warrant(&["replay", "--verify", run]);
    assert!(replay.status.success(), "{}", stdout(&replay));
}

#[test]
fn what_a_client_reads_through_the_gateway_is_the_servers_answer_and_writing_it_back_is_asked() {
    let world = World::new();
    let mut plan = world.stdio();
    plan["answers"] = json!(["deny"]);
    plan["calls"] = json!([
        {"name": "read_text_file", "arguments": {"path": "inbox.txt"}},
        // Byte for byte what the client read, written back: a tool's output, so asked.
        {"name": "write_file", "arguments": {"path": "notes/echo.txt", "content": {"$text_of": 0}}},
    ]);
    let seen = drive(Client::TypeScript, &plan);
    let results = seen["results"].as_array().unwrap();
    // The server's answer as it sent it: its text block is the file's text (not a JSON
    // re-wrapping of it), and its structured content is the server's own.
    let inbox = world.inbox();
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(text(&results[0]), inbox, "{}", results[0]);
    assert_eq!(
        results[0]["structured"],
        json!({"content": inbox}),
        "{}",
        results[0]
    );
    // The write of what it read was asked about, and denied: not written.
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert!(
        asked[0]
            .as_str()
            .unwrap()
            .contains("/content <- the output of `fs`"),
        "{}",
        asked[0]
    );
    assert_eq!(results[1]["isError"], true, "{}", results[1]);
    assert!(!world.sandbox().join("notes/echo.txt").exists());
}

#[test]
fn a_tool_the_principal_may_never_call_is_not_listed_and_is_refused_if_called() {
    let world = World::new();
    std::fs::write(
        world.dir.path().join("gateway/interns.cedar"),
        "@id(\"interns-only-read\")\nforbid (principal, action == Warrant::Action::\"commit\", resource)\nwhen { principal.user == \"intern\" };\n",
    )
    .unwrap();
    let config = std::fs::read_to_string(&world.config).unwrap().replace(
        "policy: [policy.cedar]",
        "policy: [policy.cedar, interns.cedar]",
    );
    std::fs::write(&world.config, config).unwrap();
    world.configure("principal: {tenant: acme, user: intern}");
    let mut plan = world.stdio();
    plan["calls"] = json!([
        {"name": "write_file", "arguments": {"path": "notes/x.txt", "content": "mine"}},
    ]);
    let seen = drive(Client::TypeScript, &plan);
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Every commit is forbidden to an intern whatever its arguments: not offered.
    assert_eq!(
        tools,
        [
            "read_text_file",
            "list_directory",
            "list_allowed_directories"
        ],
        "{seen}"
    );
    // Called anyway (a client that remembers the name): ruled on, and refused.
    let result = &seen["results"][0];
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(result).contains("interns-only-read"), "{result}");
    assert!(!world.sandbox().join("notes/x.txt").exists());
}

#[test]
fn a_tenant_past_its_calls_quota_is_told_so_and_the_call_is_not_made() {
    let world = World::new();
    world.configure("quotas:\n  \"*\": {calls: 2, window_ms: 600000}");
    let mut plan = world.stdio();
    plan["calls"] = json!([
        {"name": "read_text_file", "arguments": {"path": "inbox.txt"}},
        {"name": "list_directory", "arguments": {"path": "."}},
        {"name": "read_text_file", "arguments": {"path": "inbox.txt"}},
    ]);
    let seen = drive(Client::TypeScript, &plan);
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(results[1]["isError"], false, "{}", results[1]);
    assert_eq!(results[2]["isError"], true, "{}", results[2]);
    assert!(
        text(&results[2]).contains("quota of 2 calls") && text(&results[2]).contains("try again"),
        "{}",
        results[2]
    );
    let run = world.runs()[0]["run_id"].as_str().unwrap().to_owned();
    let events = stdout(&world.warrant(&["events", &run, "--json"]));
    assert_eq!(events.matches("\"call_started\"").count(), 2, "{events}");
}

#[test]
fn a_typescript_client_over_stdio_is_governed_call_by_call() {
    let world = World::new();
    let seen = drive(Client::TypeScript, &scenario(&world, world.stdio()));
    assert_eq!(
        seen["server"]["name"], "warrant-gateway (fs-gateway)",
        "{seen}"
    );
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Only the tools the config offers, in the server's order.
    assert_eq!(
        tools,
        [
            "read_text_file",
            "write_file",
            "create_directory",
            "list_directory",
            "list_allowed_directories"
        ]
    );
    let runs = world.runs();
    assert_eq!(runs.len(), 1);
    let run = runs[0]["run_id"].as_str().unwrap();
    assert!(
        runs[0]["decider"]
            .as_str()
            .unwrap()
            .starts_with("mcp-client:gateway-test-ts"),
        "{}",
        runs[0]
    );
    governed(&world, &seen, run);
}

#[test]
fn a_session_let_go_after_every_call_is_governed_the_same_and_its_log_replays() {
    // `hold_idle_ms: 0`: after each call the session's run is let go, and the next call takes
    // it up again from its log. What the client is told, what is written, what is asked and
    // where each value came from are as when it is held.
    let world = World::new();
    world.configure("limits: {hold_idle_ms: 0}");
    let seen = drive(Client::TypeScript, &scenario(&world, world.stdio()));
    let runs = world.runs();
    assert_eq!(runs.len(), 1, "one session, one run: {runs:?}");
    let run = runs[0]["run_id"].as_str().unwrap();
    governed(&world, &seen, run);
    // Each call after the first took the run up again: recorded, not hidden.
    let events = stdout(&world.warrant(&["events", run, "--json"]));
    let resumed = events.matches("\"run_resumed\"").count();
    assert!(resumed >= 5, "{resumed} re-entries: {events}");
}

#[test]
fn a_session_let_go_is_ended_at_once_by_warrant_cancel() {
    // A connected client, quiet after one call: its run is let go, its lease kept by the
    // gateway. `warrant cancel` must still end it, not wait for the client's next call.
    let world = World::new();
    world.configure("limits: {hold_idle_ms: 0}");
    let (_gateway, url) = world.http(&[]);
    let mut idle = Command::new("node")
        .arg(root().join("mcp-servers/gateway-idle.mjs"))
        .args([&url, "1", "read_text_file", r#"{"path": "inbox.txt"}"#])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(idle.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");
    let runs = world.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(runs[0]["status"], "running", "{}", runs[0]);
    let out = world.warrant(&["cancel", &run, "--reason", "closing idle sessions"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("cancelled"), "{}", stdout(&out));
    let report = world.report(&run);
    assert_eq!(
        report["outcome"]["outcome"], "cancelled",
        "{}",
        report["outcome"]
    );
    drop(idle.stdin.take());
    let _ = idle.wait();
}

#[test]
fn a_python_client_over_http_is_governed_the_same_way_and_two_clients_are_two_runs() {
    let world = World::new();
    let metrics = format!("127.0.0.1:{}", support::free_port());
    let (_gateway, url) = world.http_with(&["--metrics", &metrics], &[]);
    let plan = scenario(&world, json!({"url": url}));
    let seen = drive(Client::Python, &plan);
    let runs = world.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0]["run_id"].as_str().unwrap().to_owned();
    // The client left: the session records its end before the next test looks.
    assert!(eventually(
        || world.report(&run)["outcome"]["outcome"] == "closed"
    ));
    governed(&world, &seen, &run);

    // Two clients at once: two sessions, two runs.
    let reader = |client| {
        let plan = json!({"url": url, "calls": [
            {"name": "list_directory", "arguments": {"path": "notes"}},
            {"name": "read_text_file", "arguments": {"path": "notes/README.md"}},
        ]});
        std::thread::spawn(move || drive(client, &plan))
    };
    let (a, b) = (reader(Client::TypeScript), reader(Client::Python));
    for seen in [a.join().unwrap(), b.join().unwrap()] {
        let results = seen["results"].as_array().unwrap();
        assert!(results.iter().all(|r| r["isError"] == false), "{results:?}");
    }
    let runs = world.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    let deciders: std::collections::BTreeSet<&str> = runs[..2]
        .iter()
        .map(|r| r["decider"].as_str().unwrap())
        .collect();
    assert_eq!(deciders.len(), 2, "{deciders:?}");

    // The gateway's `/metrics` counts its sessions with a server's names: three runs, each
    // call by tool, status and layer as the logs have them, the approval its client gave.
    let scrape = || get_text_blocking(format!("http://{metrics}/metrics"));
    let scraped = |page: &str, name: &str| -> Option<u64> {
        page.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .map(|v| v.trim().parse().unwrap())
    };
    let mut calls: std::collections::BTreeMap<String, u64> = Default::default();
    for r in &runs {
        let log = world.warrant(&["events", r["run_id"].as_str().unwrap(), "--json"]);
        let mut tools = std::collections::HashMap::new();
        for line in String::from_utf8_lossy(&log.stdout).lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            match e["type"].as_str().unwrap() {
                "call_started" => {
                    tools.insert(e["call"].clone(), e["tool"].as_str().unwrap().to_owned());
                }
                "call_finished" => {
                    let key = format!(
                        "warrant_calls_total{{tool=\"{}\",status=\"{}\",layer=\"{}\"}}",
                        tools[&e["call"]],
                        e["status"].as_str().unwrap(),
                        e["fault"]["layer"].as_str().unwrap_or("none")
                    );
                    *calls.entry(key).or_default() += 1;
                }
                _ => {}
            }
        }
    }
    assert!(calls.len() >= 3, "{calls:?}");
    // Each session's counts land as its subscriber reads its log: wait for the last of them.
    let mut page = String::new();
    let counted = eventually(|| {
        page = scrape();
        scraped(&page, "warrant_runs_started_total") == Some(3)
            && calls.iter().all(|(key, n)| scraped(&page, key) == Some(*n))
    });
    assert!(counted, "{calls:?} in {page}");
    assert_eq!(
        scraped(
            &page,
            "warrant_approvals_answered_total{answer=\"approved\"}"
        ),
        Some(1),
        "{page}"
    );
}

fn eventually(mut ok: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

#[test]
fn without_elicitation_a_held_call_waits_for_warrant_approve_and_is_told_when_denied() {
    let world = World::new();
    let (_gateway, url) = world.http(&[]);
    let inbox = world.inbox();
    // No elicitation declared: the call waits durably for a person at the command line.
    let plan = json!({"url": url, "calls": [
        {"name": "read_text_file", "arguments": {"path": "inbox.txt"}},
        {"name": "write_file", "arguments": {"path": "notes/held.txt", "content": inbox}},
        {"name": "write_file", "arguments": {"path": "notes/refused.txt", "content": inbox}},
    ]});
    let client = std::thread::spawn(move || drive(Client::TypeScript, &plan));
    let mut answered = Vec::new();
    for answer in ["approve", "deny"] {
        let pending = world.one_pending();
        let request = pending["request"].as_str().unwrap().to_owned();
        let out = match answer {
            "approve" => world.warrant(&["approve", &request]),
            _ => world.warrant(&["deny", &request, "--reason", "not from the inbox"]),
        };
        assert!(out.status.success(), "{}", stderr(&out));
        answered.push(request);
    }
    let seen = client.join().unwrap();
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results[1]["isError"], false, "{}", results[1]);
    assert_eq!(
        std::fs::read_to_string(world.sandbox().join("notes/held.txt")).unwrap(),
        inbox
    );
    assert_eq!(results[2]["isError"], true);
    assert!(
        text(&results[2]).contains("not from the inbox"),
        "{}",
        results[2]
    );
    assert!(!world.sandbox().join("notes/refused.txt").exists());
}

#[test]
fn a_gateway_killed_after_a_write_reports_it_in_doubt_after_restart_and_never_repeats_it() {
    let world = World::new();
    // The gateway aborts once the upstream has written, before the result is recorded.
    let (mut gateway, url) = world.http(&[("WARRANT_FAULT", "after-invoke")]);
    let plan = json!({"url": url, "calls": [
        {"name": "write_file", "arguments": {"path": "notes/once.txt", "content": "written once"}},
    ]});
    let seen = drive(Client::Python, &plan);
    assert!(
        seen["results"][0]["rpcError"].is_string() || seen["results"][0]["isError"] == true,
        "{seen}"
    );
    assert!(!gateway.child.wait().unwrap().success());
    let run = world.runs()[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(world.runs()[0]["status"], "interrupted");
    // Restarted: the session left behind is closed, its write in doubt, not made again.
    let (again, _url) = world.http(&[]);
    assert!(
        eventually(|| again
            .stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(&format!("closed session {run}")))),
        "{:?}",
        again.stderr.lock().unwrap()
    );
    // The session is over, but the run waits for the effect in doubt to be reconciled.
    let report = world.report(&run);
    assert_eq!(report["status"], "waiting", "{report}");
    assert_eq!(report["unsettled"].as_array().unwrap().len(), 1, "{report}");
    let events = stdout(&world.warrant(&["events", &run, "--json"]));
    assert_eq!(events.matches("\"call_dispatched\"").count(), 1, "{events}");
    assert_eq!(events.matches("\"call_in_doubt\"").count(), 1, "{events}");
    // An operator finds the file written and says so; resumed, the session ends `closed`.
    let call = report["unsettled"][0]["call"].as_str().unwrap().to_owned();
    let said = world.warrant(&[
        "reconcile",
        &run,
        &call,
        "--happened",
        "--note",
        "the file is there",
    ]);
    assert!(said.status.success(), "{}", stderr(&said));
    let resumed = world.warrant(&["resume", &run]);
    assert_eq!(resumed.status.code(), Some(1), "{}", stderr(&resumed));
    let report = world.report(&run);
    assert_eq!(report["outcome"]["outcome"], "closed", "{report}");
    let events = stdout(&world.warrant(&["events", &run, "--json"]));
    assert_eq!(events.matches("\"call_dispatched\"").count(), 1, "{events}");
    assert_eq!(
        std::fs::read_to_string(world.sandbox().join("notes/once.txt")).unwrap(),
        "written once"
    );
    let replay = world.warrant(&["replay", "--verify", &run]);
    assert!(replay.status.success(), "{}", stdout(&replay));
}

#[test]
fn a_config_in_error_is_refused_saying_what_and_where_and_its_schema_is_printed() {
    let world = World::new();
    let text = std::fs::read_to_string(&world.config).unwrap();
    let refused = |config: &str, says: &[&str]| {
        let path = world.dir.path().join("gateway/bad.yaml");
        std::fs::write(&path, config).unwrap();
        let out = world.warrant(&["gateway", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        for s in says {
            assert!(stderr(&out).contains(s), "{s:?} in {}", stderr(&out));
        }
    };
    refused(
        &text.replace("servers:", "servrs:"),
        &["bad.yaml", "servrs"],
    );
    refused(
        &text.replace(
            "tools: [read_text_file,",
            "tools: [no_such_tool, read_text_file,",
        ),
        &["tools:", "`no_such_tool`", "read_text_file"],
    );
    refused(
        &text.replace("policy: [policy.cedar]", "policy: [missing.cedar]"),
        &["missing.cedar"],
    );
    refused(
        &text.replace(
            "id: fs-gateway",
            "id: fs-gateway\ntokens: {GW_UNSET_TOKEN: {}}",
        ),
        &["GW_UNSET_TOKEN", "not set"],
    );
    // Nothing was recorded by a gateway that did not start.
    assert!(!world.store.exists() || world.runs().is_empty());
    let schema = json(&world.warrant(&["schema", "gateway"]));
    assert!(schema["properties"]["servers"].is_object(), "{schema}");
    assert!(schema["properties"]["tokens"].is_object(), "{schema}");
}

#[test]
fn over_http_with_tokens_a_request_without_one_is_refused_and_a_session_acts_as_its_token() {
    let world = World::new();
    world.configure("tokens:\n  GW_TEST_TOKEN: {tenant: acme, user: ann}");
    let token = "a-token-nobody-guesses-0123456789";
    let (_gateway, url) = world.http(&[("GW_TEST_TOKEN", token)]);
    // A raw request, so nothing but the token differs.
    let status = |auth: Option<&str>| {
        use std::io::{Read, Write};
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let auth = auth
            .map(|a| format!("authorization: {a}\r\n"))
            .unwrap_or_default();
        let mut tcp = std::net::TcpStream::connect(host).unwrap();
        write!(
            tcp,
            "POST /{path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{auth}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = tcp.read_to_string(&mut answer);
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap()
    };
    assert_eq!(status(None), 401);
    assert_eq!(status(Some("Bearer wrong-token-wrong-token")), 401);
    let plan = json!({"url": url, "token": token, "calls": [
        {"name": "read_text_file", "arguments": {"path": "notes/README.md"}},
    ]});
    let seen = drive(Client::TypeScript, &plan);
    assert_eq!(seen["results"][0]["isError"], false, "{seen}");
    let run = world.runs()[0]["run_id"].as_str().unwrap().to_owned();
    let first = stdout(&world.warrant(&["events", &run, "--json"]));
    let started: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(started["principal"]["tenant"], "acme", "{started}");
    assert_eq!(started["principal"]["user"], "ann", "{started}");
}

#[test]
fn a_tool_whose_schema_changes_while_a_call_waits_is_not_approved_and_clients_hear_of_it() {
    let world = World::new();
    let here = world.dir.path().join("changing");
    std::fs::create_dir_all(&here).unwrap();
    let notes = here.join("notes.log");
    std::fs::write(
        here.join("ask-notes.cedar"),
        r#"permit (principal, action, resource) unless { resource.tool == "note" };
@approval("notes are asked about")
permit (principal, action, resource) when { resource.tool == "note" };
"#,
    )
    .unwrap();
    std::fs::write(
        here.join("gateway.yaml"),
        format!(
            "version: warrant/gateway/v1\nid: changing\nservers:\n  changing:\n    mcp:\n      command: [node, {}]\n      env: {{NOTES_LOG: {}}}\npolicy: [ask-notes.cedar]\n",
            root().join("mcp-servers/changing-server.js").display(),
            notes.display()
        ),
    )
    .unwrap();
    let world = World {
        config: here.join("gateway.yaml"),
        ..world
    };
    let (_gateway, url) = world.http(&[]);
    // A: its note is held for approval (no elicitation: it waits for a person).
    let held = {
        let plan = json!({"url": url, "calls": [
            {"name": "note", "arguments": {"text": "hi"}, "pauseMs": 1000},
        ]});
        std::thread::spawn(move || drive(Client::TypeScript, &plan))
    };
    world.one_pending();
    // B changes the tool under it.
    let b = drive(
        Client::Python,
        &json!({"url": url, "calls": [{"name": "reshape"}]}),
    );
    assert_eq!(b["results"][0]["isError"], false, "{b}");
    let a = held.join().unwrap();
    let told = &a["results"][0];
    assert_eq!(told["isError"], true, "{told}");
    assert!(text(told).contains("changed"), "{told}");
    assert!(!notes.exists() || !std::fs::read_to_string(&notes).unwrap().contains("hi"));
    // A heard that the tools changed.
    assert!(a["listChanged"].as_u64().unwrap() >= 1, "{a}");
    // The request is on the record as denied by the gateway, and nothing is left pending.
    let approvals = json(&world.warrant(&["approvals", "--json"]));
    assert_eq!(approvals.as_array().unwrap().len(), 0, "{approvals}");
}

#[test]
fn an_agent_frameworks_client_is_governed_across_its_stateless_calls() {
    // Pydantic AI's MCP toolset speaks the stateless 2026-07-28 protocol: no session, yet its
    // calls make one session, so the inbox it read labels the content it then writes.
    let world = World::new();
    let (_gateway, url) = world.http(&[]);
    let agent = {
        let url = url.clone();
        std::thread::spawn(move || {
            let out = Command::new(python())
                .arg(root().join("mcp-servers/gateway_agent.py"))
                .arg(&url)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice::<Value>(&out.stdout).unwrap()
        })
    };
    let pending = world.one_pending();
    let request = pending["request"].as_str().unwrap().to_owned();
    assert!(
        pending["provenance"]
            .to_string()
            .contains("provider_output"),
        "{pending}"
    );
    let denied = world.warrant(&["deny", &request, "--reason", "no copying the inbox"]);
    assert!(denied.status.success(), "{}", stderr(&denied));
    let seen = agent.join().unwrap();
    let last = seen["final"].as_str().unwrap();
    // The model was told it was denied, by whom and why, and that nothing was written.
    assert!(last.starts_with("the write: "), "{last}");
    assert!(last.contains("no copying the inbox"), "{last}");
    assert!(last.contains("not made"), "{last}");
    assert!(!world.sandbox().join("notes/agent.txt").exists());
    // One session, both calls in it.
    let runs = world.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0]["run_id"].as_str().unwrap();
    let events = stdout(&world.warrant(&["events", run, "--json"]));
    assert_eq!(events.matches("\"call_started\"").count(), 2, "{events}");
}

#[test]
fn several_servers_are_offered_as_one_named_apart_only_where_they_collide() {
    // The filesystem server twice (every name collides: `fs.` and `fs2.`), the memory server
    // and the everything server (their names are their own).
    let world = World::new();
    let here = world.dir.path().join("several");
    std::fs::create_dir_all(here.join("a")).unwrap();
    std::fs::create_dir_all(here.join("b")).unwrap();
    let module = |name: &str| {
        root()
            .join(format!(
                "mcp-servers/node_modules/@modelcontextprotocol/{name}/dist/index.js"
            ))
            .display()
            .to_string()
    };
    let memory = here.join("memory.jsonl");
    std::fs::write(
        here.join("gateway.yaml"),
        format!(
            "version: warrant/gateway/v1\nid: several\nservers:\n  fs: {{mcp: {{command: [node, {fs}, a]}}}}\n  fs2: {{mcp: {{command: [node, {fs}, b]}}}}\n  memory: {{mcp: {{command: [node, {mem}], env: {{MEMORY_FILE_PATH: {file}}}}}}}\n  everything: {{mcp: {{command: [node, {every}, stdio]}}}}\n",
            fs = module("server-filesystem"),
            mem = module("server-memory"),
            every = module("server-everything"),
            file = memory.display(),
        ),
    )
    .unwrap();
    let world = World {
        config: here.join("gateway.yaml"),
        ..world
    };
    let mut plan = world.stdio();
    plan["calls"] = json!([
        {"name": "fs2.write_file", "arguments": {"path": "b.txt", "content": "to b"}},
        {"name": "create_entities", "arguments": {"entities": [
            {"name": "warrant", "entityType": "project", "observations": ["governs calls"]}
        ]}},
        {"name": "echo", "arguments": {"message": "through the gateway"}},
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "ambiguous"}},
    ]);
    let seen = drive(Client::TypeScript, &plan);
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["fs.write_file", "fs2.write_file", "create_entities", "echo"] {
        assert!(tools.contains(&name), "{name} not in {tools:?}");
    }
    assert!(!tools.contains(&"write_file"), "{tools:?}");
    let results = seen["results"].as_array().unwrap();
    for r in &results[..3] {
        assert_eq!(r["isError"], false, "{r}");
    }
    assert_eq!(
        std::fs::read_to_string(here.join("b/b.txt")).unwrap(),
        "to b"
    );
    assert!(
        std::fs::read_to_string(&memory)
            .unwrap()
            .contains("governs calls")
    );
    assert!(results[2].to_string().contains("through the gateway"));
    // A name two servers share is not guessed at: refused, on the record.
    assert_eq!(results[3]["isError"], true, "{}", results[3]);
    assert!(!here.join("a/a.txt").exists());
}

#[test]
fn an_approval_nobody_gives_expires_and_the_client_is_told() {
    let world = World::new();
    world.configure("limits: {approval_ttl_ms: 1500}");
    let mut plan = world.stdio();
    plan["calls"] = json!([
        {"name": "read_text_file", "arguments": {"path": "inbox.txt"}},
        {"name": "write_file", "arguments": {"path": "notes/late.txt", "content": world.inbox()}},
    ]);
    let seen = drive(Client::Python, &plan);
    let told = &seen["results"][1];
    assert_eq!(told["isError"], true, "{told}");
    assert!(text(told).contains("expired"), "{told}");
    assert!(!world.sandbox().join("notes/late.txt").exists());
}

#[test]
fn a_stateless_client_is_asked_through_an_input_required_result_and_governed_the_same_way() {
    // The Python SDK's high-level client at 2026-07-28: no session, no server-to-client
    // request; a held call answers "input required" and the client comes back with the
    // person's answer. Idle for a second and a half, its session closes. Its run is let go
    // after every call (`hold_idle_ms: 0`), each next call taking it up again from its log.
    let world = World::new();
    world.configure("limits: {idle_ms: 1500, hold_idle_ms: 0}");
    let (_gateway, url) = world.http(&[]);
    let seen = drive(
        Client::Python,
        &scenario(&world, json!({"url": url, "modern": true})),
    );
    let runs = world.runs();
    assert_eq!(runs.len(), 1, "one session for all its calls: {runs:?}");
    assert!(
        runs[0]["decider"]
            .as_str()
            .unwrap()
            .contains("gateway-test-python-modern"),
        "{}",
        runs[0]
    );
    let run = runs[0]["run_id"].as_str().unwrap().to_owned();
    assert!(eventually(
        || world.report(&run)["outcome"]["outcome"] == "closed"
    ));
    governed(&world, &seen, &run);
}

#[test]
fn the_example_payments_policy_rules_a_clients_transfers_unchanged() {
    // Warrant's bank (in process, untrusted like any upstream) behind the gateway, ruled by
    // examples/policies/payments.cedar as it is written for runs.
    let world = World::new();
    let here = world.dir.path().join("bank");
    std::fs::create_dir_all(&here).unwrap();
    std::fs::write(
        here.join("gateway.yaml"),
        format!(
            "version: warrant/gateway/v1\nid: bank\nservers:\n  bank: {{reference: bank}}\npolicy: [{}]\n",
            root().join("examples/policies/payments.cedar").display()
        ),
    )
    .unwrap();
    let world = World {
        config: here.join("gateway.yaml"),
        ..world
    };
    let mut plan = world.stdio();
    plan["answers"] = json!(["deny"]);
    plan["calls"] = json!([
        {"name": "read_statement"},
        // The recipient read from the statement (untrusted): a person is asked, and denies.
        {"name": "transfer", "arguments": {"to": "DE44500105175407324931", "amount": 850}},
        // The known fraud account: forbidden whoever would approve.
        {"name": "transfer", "arguments": {"to": "GB29NWBK60161331926819", "amount": 10}},
        // The client's own values: goes ahead.
        {"name": "transfer", "arguments": {"to": "DE89370400440532013000", "amount": 950}},
    ]);
    let seen = drive(Client::TypeScript, &plan);
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(seen["asked"].as_array().unwrap().len(), 1, "{seen}");
    assert!(
        seen["asked"][0]
            .as_str()
            .unwrap()
            .contains("/to <- the output of `bank`")
    );
    assert_eq!(results[1]["isError"], true, "{}", results[1]);
    assert!(text(&results[1]).contains("not this one"), "{}", results[1]);
    assert_eq!(results[2]["isError"], true, "{}", results[2]);
    assert!(
        text(&results[2]).contains("blocked-recipient"),
        "{}",
        results[2]
    );
    assert_eq!(results[3]["isError"], false, "{}", results[3]);
    assert_eq!(
        results[3]["structured"]["transfer_id"], "tr-0001",
        "{}",
        results[3]
    );
}

/// A gateway in front of the `everything` server: its `trigger-elicitation-request` tool asks
/// the person a question in the middle of its call.
fn everything_world() -> World {
    everything_world_with("")
}

/// The same, with more servers (`extra`: YAML lines under `servers:`), offered as one.
fn everything_world_with(extra: &str) -> World {
    let world = World::new();
    let here = world.dir.path().join("asking");
    std::fs::create_dir_all(&here).unwrap();
    let every = root()
        .join("mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    std::fs::write(
        here.join("gateway.yaml"),
        format!(
            "version: warrant/gateway/v1\nid: asking\nservers:\n  everything: {{mcp: {{command: [node, {}, stdio]}}}}\n{extra}",
            every.display()
        ),
    )
    .unwrap();
    World {
        config: here.join("gateway.yaml"),
        ..world
    }
}

/// The `provider_asked` events of the only run.
fn provider_asked(world: &World) -> (String, Vec<Value>) {
    let runs = world.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0]["run_id"].as_str().unwrap().to_owned();
    let events = world.warrant(&["events", &run, "--json"]);
    let asked = String::from_utf8_lossy(&events.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "provider_asked")
        .collect();
    (run, asked)
}

#[test]
fn an_upstream_servers_question_reaches_the_person_at_the_client_and_is_recorded() {
    let world = everything_world();
    let mut plan = world.stdio();
    plan["answers"] = json!([{"name": "Ada Lovelace", "check": true}]);
    plan["calls"] = json!([{"name": "trigger-elicitation-request", "arguments": {}}]);
    let seen = drive(Client::TypeScript, &plan);
    // The person at the client was asked the server's own question, and the server got the
    // answer: its result says what they said.
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert!(
        asked[0].as_str().unwrap().contains("Please provide inputs"),
        "{seen}"
    );
    let result = &seen["results"][0];
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result.to_string().contains("Name: Ada Lovelace"),
        "{result}"
    );
    // The run records the exchange, during the call, and replays it byte for byte.
    let (run, asked) = provider_asked(&world);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["action"], "accept", "{}", asked[0]);
    assert_eq!(asked[0]["answer"]["name"], "Ada Lovelace", "{}", asked[0]);
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("Please provide inputs"),
        "{}",
        asked[0]
    );
    assert_eq!(
        asked[0]["schema"]["required"],
        json!(["name"]),
        "{}",
        asked[0]
    );
    let replayed = world.warrant(&["replay", &run, "--verify"]);
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
}

#[test]
fn a_client_that_cannot_be_asked_declines_an_upstream_question_on_the_record() {
    let world = everything_world();
    let mut plan = world.stdio();
    plan["calls"] = json!([{"name": "trigger-elicitation-request", "arguments": {}}]);
    let seen = drive(Client::TypeScript, &plan);
    let result = &seen["results"][0];
    assert!(result.to_string().contains("declined"), "{result}");
    let (_, asked) = provider_asked(&world);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["action"], "unasked", "{}", asked[0]);
    assert!(asked[0].get("answer").is_none(), "{}", asked[0]);
}

/// Several upstream servers are offered as one: a question from the one a call went to is
/// passed on and recorded the same way.
#[test]
fn an_upstream_question_behind_a_join_of_servers_is_recorded_too() {
    let memory =
        root().join("mcp-servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    let world = everything_world_with(&format!(
        "  memory: {{mcp: {{command: [node, {}]}}}}\n",
        memory.display()
    ));
    let mut plan = world.stdio();
    plan["answers"] = json!([{"name": "Grace Hopper"}]);
    plan["calls"] = json!([{"name": "trigger-elicitation-request", "arguments": {}}]);
    let seen = drive(Client::TypeScript, &plan);
    let result = &seen["results"][0];
    assert!(
        result.to_string().contains("Name: Grace Hopper"),
        "{result}"
    );
    let (_, asked) = provider_asked(&world);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["answer"]["name"], "Grace Hopper", "{}", asked[0]);
}

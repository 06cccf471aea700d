//! The MCP surface against an official MCP server (`@modelcontextprotocol/server-everything`
//! over stdio), installed by `.ci/run` into `mcp-servers/node_modules`.

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

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use support::*;

use serde_json::{Value, json};
use warrant_core::event::Effect;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{Invocation, Surface};
use warrant_surfaces::mcp::McpSurface;

/// Runs the `warrant` binary in `cwd` against `store`.
/// Writes `spec.yaml` and `script.yaml` into `dir`.
fn write_project(dir: &Path, spec: &str, script: &str) {
    std::fs::write(dir.join("spec.yaml"), spec).unwrap();
    std::fs::write(dir.join("script.yaml"), script).unwrap();
}

fn everything() -> Vec<String> {
    let server = root()
        .join("mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        server.exists(),
        "install the test servers first: npm ci --prefix mcp-servers"
    );
    vec!["node".into(), server.display().to_string(), "stdio".into()]
}

/// `examples/mcp-everything/spec.yaml`, its server and script named by absolute paths (to be
/// written anywhere).
fn everything_example() -> String {
    std::fs::read_to_string(root().join("examples/mcp-everything/spec.yaml"))
        .unwrap()
        .replace(
            "../../mcp-servers",
            &root().join("mcp-servers").display().to_string(),
        )
        .replace(
            "scripted:script.yaml",
            &format!(
                "scripted:{}",
                root().join("examples/mcp-everything/script.yaml").display()
            ),
        )
}

fn invocation(tool: &str, args: Value, effect: Effect, version: &str) -> Invocation {
    Invocation::testing(RunId("r".into()), CallId(1), tool, args, effect, version)
}

#[tokio::test]
async fn the_tool_list_is_the_observation_and_only_a_trusted_server_loosens_effects() {
    let untrusted = McpSurface::spawn(&everything(), &BTreeMap::new(), false)
        .await
        .unwrap();
    let obs = untrusted.observe().await.unwrap();
    assert!(obs.actions.len() >= 10, "{} tools", obs.actions.len());
    let echo = obs.actions.iter().find(|a| a.name == "echo").unwrap();
    assert_eq!(
        echo.effect,
        Effect::Commit,
        "an untrusted server's readOnlyHint does not make a read"
    );
    assert!(echo.input_schema.get("properties").is_some());
    assert!(untrusted.is_current(&obs.version).await);
    assert!(!untrusted.is_current("other").await);

    let trusted = McpSurface::spawn(&everything(), &BTreeMap::new(), true)
        .await
        .unwrap();
    let obs = trusted.observe().await.unwrap();
    let effect = |n: &str| obs.actions.iter().find(|a| a.name == n).unwrap().effect;
    assert_eq!(effect("echo"), Effect::Read);
    assert_eq!(
        effect("toggle-simulated-logging"),
        Effect::Commit,
        "no readOnlyHint: a commit"
    );
}

#[tokio::test]
async fn calls_return_the_servers_result_and_errors_are_errors() {
    let s = McpSurface::spawn(&everything(), &BTreeMap::new(), true)
        .await
        .unwrap();
    let v = s.observe().await.unwrap().version;
    let out = s
        .invoke(invocation(
            "echo",
            json!({"message": "hi"}),
            Effect::Read,
            &v,
        ))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(out.output[0]["text"], "Echo: hi");
    let sum = s
        .invoke(invocation(
            "get-sum",
            json!({"a": 2, "b": 3}),
            Effect::Read,
            &v,
        ))
        .await
        .unwrap();
    assert!(sum.output.to_string().contains('5'), "{}", sum.output);
    let bad = s
        .invoke(invocation("no-such-tool", json!({}), Effect::Commit, &v))
        .await;
    assert!(bad.is_err() || bad.as_ref().unwrap().is_error, "{bad:?}");
}

/// The spec's author is the authority on effects, whatever the server's trust; host-supplied
/// inputs are never offered to the decider, never settable by it, and always sent; and what the
/// server declares reaches policies as hints marked by its trust.
#[tokio::test]
async fn the_spec_sets_effects_and_host_inputs_the_decider_never_sees() {
    let spec = warrant_core::spec::McpSpec {
        command: everything(),
        effects: BTreeMap::from([("get-sum".to_owned(), Effect::Read)]),
        inputs: BTreeMap::from([("a".to_owned(), json!(2))]),
        ..warrant_core::spec::McpSpec::default()
    };
    let s = McpSurface::connect("e", &spec, false).await.unwrap();
    let o = s.observe().await.unwrap();
    let sum = o.actions.iter().find(|a| a.name == "get-sum").unwrap();
    assert_eq!(
        sum.effect,
        Effect::Read,
        "an untrusted server, and the spec says read"
    );
    assert!(
        sum.input_schema["properties"].get("a").is_none(),
        "{}",
        sum.input_schema
    );
    assert!(sum.input_schema["properties"].get("b").is_some());
    assert!(
        !sum.input_schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!("a"))
    );
    let echo = o.actions.iter().find(|a| a.name == "echo").unwrap();
    assert_eq!(
        echo.effect,
        Effect::Commit,
        "not named: the untrusted default"
    );
    let hints = echo.hints.as_ref().unwrap();
    assert_eq!((hints.read_only, hints.trusted), (Some(true), false));
    let out = s
        .invoke(invocation(
            "get-sum",
            json!({"b": 3}),
            Effect::Read,
            &o.version,
        ))
        .await
        .unwrap();
    assert!(out.output.to_string().contains('5'), "{}", out.output);
    let set = s
        .invoke(invocation(
            "get-sum",
            json!({"a": 40, "b": 3}),
            Effect::Read,
            &o.version,
        ))
        .await
        .unwrap_err();
    assert_eq!(set.kind, warrant_core::ports::SurfaceErrorKind::Invalid);
    assert!(
        set.message.contains("supplied by the host"),
        "{}",
        set.message
    );
}

#[test]
fn the_mcp_examples_run_from_any_folder_and_count_their_start_up() {
    everything();
    let elsewhere = tempfile::tempdir().unwrap();
    let store = elsewhere.path().join("w.db");
    for example in ["mcp-everything", "mcp-filesystem"] {
        let spec = root().join("examples").join(example).join("spec.yaml");
        let run = warrant_in(
            elsewhere.path(),
            &store,
            &["run", spec.to_str().unwrap(), "--json", "-q"],
        );
        assert_eq!(run.status.code(), Some(0), "{example}: {}", stderr(&run));
        let out = json(&run);
        // Starting the server is part of what the run took.
        assert!(out["setup_ms"].as_u64().unwrap() > 0, "{out}");
        assert!(out["elapsed_ms"].as_u64() >= out["setup_ms"].as_u64());
    }
}

#[test]
fn a_spec_over_an_mcp_server_runs_end_to_end_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    everything();
    let run = warrant_in(
        &root(),
        &store,
        &["run", "examples/mcp-everything/spec.yaml", "--json", "-q"],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        out["route_key"],
        "everything/read:echo -> everything/read:get-sum"
    );
    let replay = warrant_in(&root(), &store, &["replay", "last", "--verify"]);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stdout)
    );
}

#[test]
fn the_filesystem_server_writes_and_reads_a_file_that_is_really_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = dir.path().join("sandbox");
    std::fs::create_dir(&sandbox).unwrap();
    let server = root()
        .join("mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        server.exists(),
        "install the test servers first: npm ci --prefix mcp-servers"
    );
    let spec = std::fs::read_to_string(root().join("examples/mcp-filesystem/spec.yaml"))
        .unwrap()
        .replace(
            "mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
            &server.display().to_string(),
        )
        .replace(
            "examples/mcp-filesystem/sandbox]",
            &format!("{}]", sandbox.display()),
        );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    std::fs::copy(
        root().join("examples/mcp-filesystem/script.yaml"),
        dir.path().join("script.yaml"),
    )
    .unwrap();
    let run = warrant_in(
        dir.path(),
        &dir.path().join("w.db"),
        &["run", "spec.yaml", "--json", "-q"],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        out["route_key"],
        "fs/commit:write_file -> fs/commit:read_text_file"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.join("note.txt")).unwrap(),
        "hello from warrant"
    );
    assert!(
        out["carried"][0]["value"]
            .to_string()
            .contains("hello from warrant"),
        "{}",
        out["carried"]
    );
    // Outside the sandbox, the server refuses: a provider error, attributed to the provider.
    let script = "steps:\n  write:\n    - call: write_file\n      args: {path: /etc/warrant-escape.txt, content: x}\n    - done: written\n";
    std::fs::write(dir.path().join("script.yaml"), script).unwrap();
    let escape = warrant_in(
        dir.path(),
        &dir.path().join("w.db"),
        &["run", "spec.yaml", "--json", "-q"],
    );
    assert_eq!(escape.status.code(), Some(1));
    let out: Value = serde_json::from_slice(&escape.stdout).unwrap();
    assert_eq!(
        out["outcome_detail"]["missing"][0]["fault"]["layer"],
        "provider"
    );
    assert!(!Path::new("/etc/warrant-escape.txt").exists());
}

/// A server that dies mid-call: whether or not it did the work first, the call's answer is
/// lost. A commit is then in doubt, never recorded as failed (so never retried by the decider),
/// and the operator settles it; nothing hangs.
#[test]
fn a_server_that_dies_mid_call_leaves_its_commit_in_doubt_and_nothing_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let server = root().join("mcp-servers/dying-server.js");
    let effects = dir.path().join("effects.jsonl");
    let spec = format!(
        "version: warrant/v1\nid: dying\nobjective: Ping, then record.\nproviders:\n  d:\n    mcp: {{command: [node, {}], env: {{DYING_LOG: {}}}}}\n    trust: trusted\nsteps:\n  - id: s\n    provider: d\n    tools: [ping, record]\n    commit: required\n",
        server.display(),
        effects.display()
    );
    write_project(
        dir.path(),
        &spec,
        "steps:\n  s:\n    - call: ping\n    - call: record\n      args: {note: one}\n    - done: done\n",
    );
    let store = dir.path().join("w.db");
    let run = warrant_in(
        dir.path(),
        &store,
        &[
            "run",
            "spec.yaml",
            "--decider",
            "scripted:script.yaml",
            "--json",
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(out["route_key"], "d/read:ping");
    let waiting = &out["waiting_on"][0];
    assert_eq!(waiting["call"], "c2");
    assert_eq!(waiting["args"], json!({"note": "one"}));
    assert_eq!(waiting["known"], "it was sent and its answer was lost");
    // It happened once (the server wrote it before dying); the run stopped there, so no
    // decider could send it again before an operator says what happened.
    let lines = std::fs::read_to_string(&effects).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    // The operator, having looked at the file, says it happened; the run is judged on that.
    let settled = warrant_in(
        dir.path(),
        &store,
        &["reconcile", "last", "c2", "--happened"],
    );
    assert_eq!(settled.status.code(), Some(0), "{}", stderr(&settled));
    let resumed = warrant_in(dir.path(), &store, &["resume", "last", "--json", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(
        std::fs::read_to_string(&effects).unwrap().lines().count(),
        1
    );
}

/// Whatever a stdio server prints on stderr reaches the terminal labelled and sanitised, and a
/// server gets only a minimal environment plus what the spec names: not Warrant's secrets.
#[test]
fn a_stdio_server_inherits_no_secret_and_prints_nothing_raw() {
    let dir = tempfile::tempdir().unwrap();
    let server = root()
        .join("mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let spec = format!(
        "version: warrant/v1\nid: env\nobjective: Read the environment.\nproviders:\n  e:\n    mcp: {{command: [node, {}, stdio], env: {{NAMED_FOR_IT: $NAMED_SOURCE}}}}\n    trust: trusted\nsteps:\n  - id: s\n    provider: e\n    tools: [get-env]\n    required: true\n",
        server.display()
    );
    write_project(
        dir.path(),
        &spec,
        "steps:\n  s:\n    - call: get-env\n    - done: read\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir.path())
        .env("WARRANT_STORE", dir.path().join("w.db"))
        .env("OPENAI_API_KEY", "sk-secret-that-must-not-leak")
        .env("NAMED_SOURCE", "passed-on-purpose")
        .args([
            "run",
            "spec.yaml",
            "--decider",
            "scripted:script.yaml",
            "--json",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = warrant_in(
        dir.path(),
        &dir.path().join("w.db"),
        &["events", "last", "--json"],
    );
    let log = stdout(&events);
    assert!(
        !log.contains("sk-secret-that-must-not-leak"),
        "the key leaked"
    );
    assert!(
        log.contains("passed-on-purpose"),
        "what the spec names is passed"
    );
    assert!(log.contains("PATH"), "the minimal environment is there");
}

#[tokio::test]
async fn the_memory_server_keeps_what_a_commit_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        root().join("mcp-servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    assert!(
        server.exists(),
        "install the test servers first: npm ci --prefix mcp-servers"
    );
    let mut env = BTreeMap::new();
    env.insert(
        "MEMORY_FILE_PATH".to_owned(),
        dir.path().join("memory.jsonl").display().to_string(),
    );
    let s = McpSurface::spawn(&["node".into(), server.display().to_string()], &env, false)
        .await
        .unwrap();
    let obs = s.observe().await.unwrap();
    assert!(
        obs.actions
            .iter()
            .any(|a| a.name == "create_entities" && a.effect == Effect::Commit)
    );
    let entities = json!({"entities": [{"name": "warrant", "entityType": "runtime", "observations": ["mediates every call"]}]});
    let made = s
        .invoke(invocation(
            "create_entities",
            entities,
            Effect::Commit,
            &obs.version,
        ))
        .await
        .unwrap();
    assert!(!made.is_error, "{}", made.output);
    let graph = s
        .invoke(invocation(
            "read_graph",
            json!({}),
            Effect::Read,
            &obs.version,
        ))
        .await
        .unwrap();
    assert!(
        graph.output.to_string().contains("mediates every call"),
        "{}",
        graph.output
    );
    assert!(
        std::fs::read_to_string(dir.path().join("memory.jsonl"))
            .unwrap()
            .contains("warrant")
    );
}

#[tokio::test]
async fn an_oversized_result_is_cut_and_the_cut_is_recorded() {
    let s = McpSurface::spawn(&everything(), &BTreeMap::new(), true)
        .await
        .unwrap()
        .with_output_bytes_max(64);
    let v = s.observe().await.unwrap().version;
    let long = "x".repeat(500);
    let out = s
        .invoke(invocation(
            "echo",
            json!({"message": long}),
            Effect::Read,
            &v,
        ))
        .await
        .unwrap();
    assert_eq!(out.output["truncated"], true);
    assert!(out.output["bytes"].as_u64().unwrap() > 500);
    assert_eq!(out.output["head"].as_str().unwrap().len(), 64);
    let short = s
        .invoke(invocation(
            "echo",
            json!({"message": "ok"}),
            Effect::Read,
            &v,
        ))
        .await
        .unwrap();
    assert!(short.output.get("truncated").is_none());
}

/// A child process killed (by its PID) when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (at most 20 s) until something accepts connections on `port`.
fn wait_for_port(port: u16, child: &mut Child) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("the server exited before listening: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("nothing listens on 127.0.0.1:{port} after 20 s");
}

/// server-everything over Streamable HTTP, held to loopback by `mcp-servers/loopback.cjs`.
fn everything_http() -> (Child, String) {
    let mut argv = everything();
    argv[2] = "streamableHttp".into();
    let port = free_port();
    let mut child = Child(
        Command::new(&argv[0])
            .arg("-r")
            .arg(root().join("mcp-servers/loopback.cjs"))
            .args(&argv[1..])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(port, &mut child);
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test]
async fn streamable_http_reaches_the_same_server_and_its_tools() {
    let (_server, url) = everything_http();
    let s = McpSurface::connect_http(&url, &BTreeMap::new(), true)
        .await
        .unwrap();
    let version = s.protocol_version().unwrap();
    assert!(
        ["2025-06-18", "2025-11-25"].contains(&version.as_str()),
        "negotiated {version}"
    );
    let obs = s.observe().await.unwrap();
    assert!(obs.actions.len() >= 10, "{} tools", obs.actions.len());
    let out = s
        .invoke(invocation(
            "echo",
            json!({"message": "over http"}),
            Effect::Read,
            &obs.version,
        ))
        .await
        .unwrap();
    assert_eq!(out.output[0]["text"], "Echo: over http");

    // A header naming an unset variable is refused before connecting, naming it.
    let headers = BTreeMap::from([(
        "Authorization".to_owned(),
        "Bearer ${WARRANT_TEST_UNSET_TOKEN}".to_owned(),
    )]);
    let Err(e) = McpSurface::connect_http(&url, &headers, true).await else {
        panic!("connected with an unset credential variable");
    };
    assert!(e.contains("WARRANT_TEST_UNSET_TOKEN"), "{e}");
}

#[test]
fn a_spec_over_streamable_http_runs_end_to_end() {
    let (_server, url) = everything_http();
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(root().join("examples/mcp-everything/spec.yaml")).unwrap();
    let command = spec
        .lines()
        .find(|l| l.trim_start().starts_with("command:"))
        .unwrap();
    let spec = spec.replace(command, &format!("      url: {url}"));
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec).unwrap();
    std::fs::copy(
        root().join("examples/mcp-everything/script.yaml"),
        dir.path().join("script.yaml"),
    )
    .unwrap();
    let run = warrant_in(
        dir.path(),
        &dir.path().join("w.db"),
        &["run", "spec.yaml", "--json", "-q"],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        out["route_key"],
        "everything/read:echo -> everything/read:get-sum"
    );
}

fn changing(cancel_log: Option<&Path>) -> (Vec<String>, BTreeMap<String, String>) {
    let mut env = BTreeMap::new();
    if let Some(log) = cancel_log {
        env.insert("CANCEL_LOG".to_owned(), log.display().to_string());
    }
    let server = root().join("mcp-servers/changing-server.js");
    (vec!["node".into(), server.display().to_string()], env)
}

/// Polls `ok` every 50 ms for at most 10 s.
async fn eventually(mut ok: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..200 {
        if ok().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_tool_list_change_notification_makes_older_observations_stale() {
    let (command, env) = changing(None);
    let s = McpSurface::spawn(&command, &env, false).await.unwrap();
    let before = s.observe().await.unwrap();
    assert!(!before.actions.iter().any(|a| a.name == "extra"));
    assert!(s.is_current(&before.version).await);
    s.invoke(invocation(
        "grow",
        json!({}),
        Effect::Commit,
        &before.version,
    ))
    .await
    .unwrap();
    assert!(
        eventually(async || !s.is_current(&before.version).await).await,
        "the list_changed notification did not make the old version stale"
    );
    let after = s.observe().await.unwrap();
    assert_ne!(after.version, before.version);
    assert!(after.actions.iter().any(|a| a.name == "extra"));
    assert!(s.is_current(&after.version).await);
}

#[tokio::test]
async fn an_abandoned_call_is_cancelled_at_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let (command, env) = changing(Some(&log));
    let s = McpSurface::spawn(&command, &env, true).await.unwrap();
    let v = s.observe().await.unwrap().version;
    // What the engine does at its call timeout or on cancel: stop waiting, drop the call.
    let call = s.invoke(invocation("slow", json!({}), Effect::Read, &v));
    let waited = tokio::time::timeout(std::time::Duration::from_millis(300), call).await;
    assert!(waited.is_err(), "the slow tool answered: {waited:?}");
    assert!(
        eventually(async || std::fs::read_to_string(&log).is_ok_and(|t| t.contains("cancelled")))
            .await,
        "the server never saw notifications/cancelled"
    );
}

/// `warrant mcp-serve PROVIDER --http 127.0.0.1:0` recording its sessions in `store`, and
/// the URL it serves at.
fn serve_http(provider: &str, store: &Path) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp-serve", provider, "--http", "127.0.0.1:0"])
        .env("WARRANT_STORE", store)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stderr)
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (Child(child), url)
}

#[test]
fn the_typescript_sdk_client_drives_warrants_own_provider_served_over_mcp() {
    let script = root().join("mcp-servers/drive-warrant.mjs");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    let stdio = Command::new("node")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_warrant"))
        .arg("cafe")
        .env("WARRANT_STORE", &store)
        .output()
        .unwrap();
    let (_server, url) = serve_http("cafe", &store);
    let http = Command::new("node")
        .arg(&script)
        .args(["--url", &url])
        .output()
        .unwrap();
    for out in [stdio, http] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
        drove_the_cafe(&seen);
    }
}

/// What the TypeScript client saw of Warrant's cafe, served through a gateway.
fn drove_the_cafe(seen: &Value) {
    assert_eq!(seen["server"]["name"], "warrant-gateway (mcp-serve-cafe)");
    let tool = |name: &str| {
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    // The annotations say what Warrant knows: a read is read-only, a commit destructive.
    assert_eq!(tool("read_menu")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool("order_latte")["annotations"]["readOnlyHint"], false);
    assert_eq!(tool("order_latte")["annotations"]["destructiveHint"], true);
    assert_eq!(tool("order_latte")["schema"]["required"], json!(["size"]));
    assert_eq!(seen["menu"]["isError"], false);
    assert!(seen["menu"]["structured"]["milks"].is_array());
    // The same idempotency key in `_meta` is the same order (answered from the session, not
    // made again); no key, a new one.
    let first = &seen["first"]["structured"]["order_id"];
    assert_eq!(first, "ord-0001");
    assert_eq!(&seen["repeat"]["structured"]["order_id"], first);
    assert_eq!(seen["unkeyed"]["structured"]["order_id"], "ord-0002");
    // Arguments are checked against the schema by the Bridge: a tool error saying what and
    // where, never a protocol error.
    assert_eq!(seen["invalid"]["isError"], true, "{}", seen["invalid"]);
    let invalid = seen["invalid"]["content"][0]["text"].as_str().unwrap();
    assert!(
        invalid.contains("huge") && invalid.contains("/size"),
        "{invalid}"
    );
    assert_eq!(seen["unknown"]["isError"], true);
    assert!(
        seen["unknown"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
}

#[test]
fn warrant_runs_a_trajectory_over_its_own_providers_served_over_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_warrant");
    let spec = std::fs::read_to_string(root().join("examples/cafe-gallery/spec.yaml"))
        .unwrap()
        .replace(
            "cafe: {reference: cafe}",
            &format!("cafe: {{mcp: {{command: [{bin}, mcp-serve, cafe]}}, trust: trusted}}"),
        )
        .replace(
            "gallery: {reference: gallery}",
            &format!("gallery: {{mcp: {{command: [{bin}, mcp-serve, gallery]}}, trust: trusted}}"),
        );
    assert!(
        spec.contains("mcp-serve, cafe"),
        "the example's providers moved"
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    std::fs::copy(
        root().join("examples/cafe-gallery/script.yaml"),
        dir.path().join("script.yaml"),
    )
    .unwrap();
    let run = warrant_in(
        dir.path(),
        &dir.path().join("w.db"),
        &["run", "spec.yaml", "--json", "-q"],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    // The same route as in-process: the annotations Warrant serves are the effects it knows.
    assert_eq!(
        out["route_key"],
        "cafe/read:read_menu -> cafe/commit:order_latte -> gallery/read:check_design_drift"
    );
    assert_eq!(out["outcome"], "attained");
}

#[tokio::test]
async fn warrants_own_server_over_streamable_http_is_spoken_to_statelessly() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = serve_http("cafe", &dir.path().join("w.db"));
    let s = McpSurface::connect_http(&url, &BTreeMap::new(), true)
        .await
        .unwrap();
    assert_eq!(s.protocol_version().as_deref(), Some("2026-07-28"));
    let obs = s.observe().await.unwrap();
    let out = s
        .invoke(invocation(
            "read_menu",
            json!({}),
            Effect::Read,
            &obs.version,
        ))
        .await
        .unwrap();
    assert!(out.output["milks"].is_array(), "{}", out.output);
}

#[tokio::test]
async fn a_server_that_offers_the_stateless_protocol_is_spoken_to_in_it() {
    // Warrant's own server (rmcp) offers 2026-07-28 (`server/discover`, no initialize); the
    // official TypeScript servers answer 2025-11-25 (tested above): the client takes what
    // each server offers.
    let command = vec![
        env!("CARGO_BIN_EXE_warrant").to_owned(),
        "mcp-serve".to_owned(),
        "cafe".to_owned(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::from([(
        "WARRANT_STORE".to_owned(),
        dir.path().join("w.db").display().to_string(),
    )]);
    let s = McpSurface::spawn(&command, &env, true).await.unwrap();
    assert_eq!(s.protocol_version().as_deref(), Some("2026-07-28"));
    let obs = s.observe().await.unwrap();
    let out = s
        .invoke(invocation(
            "read_menu",
            json!({}),
            Effect::Read,
            &obs.version,
        ))
        .await
        .unwrap();
    assert!(out.output["milks"].is_array(), "{}", out.output);
}

#[test]
fn a_tool_whose_schema_cannot_be_compiled_is_refused_and_never_called() {
    let dir = tempfile::tempdir().unwrap();
    let server = root().join("mcp-servers/dying-server.js");
    let spec = format!(
        "version: warrant/v1\nid: odd\nobjective: Try the odd tool, then ping.\nproviders:\n  d:\n    mcp: {{command: [node, {}]}}\n    trust: trusted\nsteps:\n  - id: s\n    provider: d\n    tools: [odd, ping]\n    required: true\n",
        server.display()
    );
    write_project(
        dir.path(),
        &spec,
        "steps:\n  s:\n    - call: odd\n      args: {q: x}\n    - call: ping\n    - done: pinged\n",
    );
    let store = dir.path().join("w.db");
    let run = warrant_in(
        dir.path(),
        &store,
        &[
            "run",
            "spec.yaml",
            "--decider",
            "scripted:script.yaml",
            "--json",
            "-q",
        ],
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    // `odd` would have killed the server: the ping after it succeeding proves it was never sent.
    assert_eq!(out["route_key"], "d/read:ping", "{out}");
    let events = warrant_in(dir.path(), &store, &["events", "last", "--json"]);
    let refused: Vec<Value> = String::from_utf8_lossy(&events.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e.to_string().contains("schema_unusable"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    let text = refused[0].to_string();
    assert!(
        text.contains("the schema of `odd` cannot be used"),
        "{text}"
    );
    assert!(text.contains("\"rejected\""), "{text}");
    assert!(
        text.contains("\"provider\""),
        "attributed to the provider: {text}"
    );
}

#[tokio::test]
async fn only_a_trusted_servers_idempotent_hint_lets_a_lost_call_be_repeated() {
    use warrant_core::ports::Recovery;
    // Warrant's cafe over MCP: `read_menu` is served `idempotentHint: true`, `order_latte`
    // `false`.
    let command = vec![
        env!("CARGO_BIN_EXE_warrant").to_owned(),
        "mcp-serve".to_owned(),
        "cafe".to_owned(),
    ];
    // Known on connecting, before any observation (a resumed run asks first).
    let trusted = McpSurface::spawn(&command, &BTreeMap::new(), true)
        .await
        .unwrap();
    assert_eq!(trusted.recovery("read_menu"), Recovery::Reinvoke);
    assert_eq!(trusted.recovery("order_latte"), Recovery::InDoubt);
    assert_eq!(trusted.recovery("no_such_tool"), Recovery::InDoubt);
    let untrusted = McpSurface::spawn(&command, &BTreeMap::new(), false)
        .await
        .unwrap();
    assert_eq!(untrusted.recovery("read_menu"), Recovery::InDoubt);
}

#[test]
fn a_join_offers_an_mcp_server_and_a_reference_provider_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let server = everything();
    let spec = format!(
        "version: warrant/v1\nid: joined\nobjective: Order a small latte and echo it.\nproviders:\n  cafe: {{reference: cafe}}\n  everything:\n    mcp: {{command: [node, {}, stdio]}}\n    trust: trusted\n  both: {{join: [cafe, everything]}}\nsteps:\n  - id: s\n    provider: both\n    tools: [cafe.order_latte, everything.echo]\n    commit: required\n",
        server[1]
    );
    std::fs::write(dir.path().join("spec.yaml"), &spec).unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  s:\n    - call: cafe.order_latte\n      args: {size: small}\n    - call: everything.echo\n      args: {message: ordered}\n    - done: both done\n",
    )
    .unwrap();
    let store = dir.path().join("w.db");
    let run = warrant_in(
        dir.path(),
        &store,
        &[
            "run",
            "spec.yaml",
            "--decider",
            "scripted:script.yaml",
            "--json",
            "-q",
        ],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        out["route_key"],
        "both/commit:cafe.order_latte -> both/read:everything.echo"
    );

    // A join naming a provider the spec does not declare is a spec error, naming it.
    std::fs::write(
        dir.path().join("bad.yaml"),
        spec.replace("join: [cafe, everything]", "join: [cafe, nowhere]"),
    )
    .unwrap();
    let bad = warrant_in(dir.path(), &store, &["validate", "bad.yaml"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("providers.both.join") && err.contains("`nowhere`"),
        "{err}"
    );
}

/// A step tool an MCP server does not offer is the spec's error, found by `validate --connect`
/// (and `providers`) before any run blames a model for it; a server that never completes its
/// start is a clear error that names no library internals.
#[test]
fn validate_connect_finds_a_step_tool_the_server_does_not_offer() {
    everything();
    let dir = tempfile::tempdir().unwrap();
    let spec = everything_example().replace("tools: [get-sum]", "tools: [get-summ]");
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let store = dir.path().join("w.db");
    let plain = warrant_in(dir.path(), &store, &["validate", "spec.yaml"]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let connected = warrant_in(dir.path(), &store, &["validate", "spec.yaml", "--connect"]);
    assert_eq!(connected.status.code(), Some(2), "{}", stdout(&connected));
    assert!(
        stderr(&connected).contains("steps[1].tools[0]: `everything` does not offer `get-summ`"),
        "{}",
        stderr(&connected)
    );
    let providers = warrant_in(dir.path(), &store, &["providers", "spec.yaml"]);
    assert_eq!(providers.status.code(), Some(1));
    assert!(stdout(&providers).contains("spec error: steps[1].tools[0]"));

    let broken = "version: warrant/v1\nid: b\nobjective: o\nproviders:\n  x: {mcp: {command: [node, -e, 'process.exit(1)']}}\nsteps:\n  - {id: s, provider: x, tools: [t]}\n";
    std::fs::write(dir.path().join("broken.yaml"), broken).unwrap();
    let out = warrant_in(
        dir.path(),
        &store,
        &["validate", "broken.yaml", "--connect"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("provider `x`"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("rmcp::"), "{}", stderr(&out));
    assert!(!store.exists(), "nothing was written");
}

/// Against the real server: an untrusted server's tools that declare no effect get a proposed
/// one with its reason (`get-sum`, a lookup with number arguments: a read; `echo`, nothing
/// says it only looks up: a commit); a grant that names an argument its tool does not take is
/// an error at `validate --connect` and in `providers`, and a grant that leaves a commit's text
/// argument open is warned about.
#[test]
fn providers_proposes_effects_and_a_misspelt_grant_argument_is_an_error() {
    everything();
    let dir = tempfile::tempdir().unwrap();
    let spec = |grant: &str| {
        everything_example()
            .replace("    trust: trusted\n", "")
            .replace(
                "    tools: [get-sum]\n",
                &format!("    tools: [get-sum]\n    grant: {grant}\n"),
            )
            .replace(
                "    tools: [echo]\n",
                "    tools: [echo]\n    grant: {tools: {echo: {}}}\n",
            )
    };
    let store = dir.path().join("w.db");
    std::fs::write(
        dir.path().join("good.yaml"),
        spec("{tools: {get-sum: {a: {max: 5}, b: {max: 5}}}}"),
    )
    .unwrap();
    let listed = warrant_in(dir.path(), &store, &["providers", "good.yaml", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let v: Value = serde_json::from_str(stdout(&listed).trim()).unwrap();
    let proposed = &v["everything"]["proposed_effects"];
    assert_eq!(proposed["get-sum"]["effect"], "read", "{proposed}");
    assert!(
        proposed["get-sum"]["why"]
            .as_str()
            .unwrap()
            .contains("begins with `get`"),
        "{proposed}"
    );
    assert_eq!(proposed["echo"]["effect"], "commit", "{proposed}");
    let text = warrant_in(dir.path(), &store, &["providers", "good.yaml"]);
    assert!(
        stdout(&text).contains("effects: {") && stdout(&text).contains("get-sum: read"),
        "{}",
        stdout(&text)
    );
    let ok = warrant_in(dir.path(), &store, &["validate", "good.yaml", "--connect"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(
        stderr(&ok).contains("leaves `message` of the commit `echo` open"),
        "{}",
        stderr(&ok)
    );

    std::fs::write(
        dir.path().join("typo.yaml"),
        spec("{tools: {get-sum: {aa: {max: 5}}}}"),
    )
    .unwrap();
    let typo = warrant_in(dir.path(), &store, &["validate", "typo.yaml", "--connect"]);
    assert_eq!(typo.status.code(), Some(2), "{}", stdout(&typo));
    assert!(
        stderr(&typo).contains("constrains `aa`, which `get-sum` does not take (it takes: a, b)"),
        "{}",
        stderr(&typo)
    );
    let listed = warrant_in(dir.path(), &store, &["providers", "typo.yaml"]);
    assert_eq!(listed.status.code(), Some(1));
    assert!(
        stdout(&listed).contains("spec error: steps[1].grant.tools.get-sum"),
        "{}",
        stdout(&listed)
    );

    // A policy that tests a misspelt argument of the tool it names is an error too; one that
    // names no tool and an argument no tool takes is warned about.
    std::fs::write(
        dir.path().join("p.cedar"),
        "@id(\"cap-sum\")\nforbid(principal, action, resource) when { resource.tool == \"get-sum\" && resource.hasTag(\"aa\") };\n@id(\"general\")\nforbid(principal, action, resource) when { context.untrusted_args.contains(\"iban\") };\npermit(principal, action, resource);\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("policed.yaml"),
        format!(
            "{}policy: [p.cedar]\n",
            spec("{tools: {get-sum: {a: {max: 5}, b: {max: 5}}}}")
        ),
    )
    .unwrap();
    let policed = warrant_in(
        dir.path(),
        &store,
        &["validate", "policed.yaml", "--connect"],
    );
    assert_eq!(policed.status.code(), Some(2), "{}", stdout(&policed));
    let said = stderr(&policed);
    assert!(
        said.contains("policy `cap-sum` tests argument `aa` of `get-sum`, which it does not take"),
        "{said}"
    );
}

/// A stdio server's whole process group ends with the command that started it: a server
/// behind a wrapper script that left a grandchild running, and one that never finishes its
/// handshake, leave no process behind once `warrant run` has ended.
#[test]
fn a_stdio_servers_process_group_ends_with_the_run() {
    let server = everything();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    // Markers no other process has: sleeps of a length picked for this test process.
    let marker = |n: u32| format!("{}", 3_000_000 + std::process::id() * 10 + n);
    let (a, b, c) = (marker(1), marker(2), marker(3));
    let wrapper = format!("sleep {a} & exec {} {} stdio", server[0], server[1]);
    let spec = everything_example().replace(
        &format!("command: [node, {}, stdio]", server[1]),
        &format!("command: [sh, -c, {wrapper:?}]"),
    );
    assert!(spec.contains("sh, -c"), "{spec}");
    std::fs::write(dir.path().join("spec.yaml"), &spec).unwrap();
    let run = warrant_in(dir.path(), &store, &["run", "spec.yaml", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        lingering(&a).is_empty(),
        "the wrapper's grandchild outlived the run"
    );

    // A server that never answers its handshake, with a child of its own.
    let stuck = format!(
        "version: warrant/v1\nid: stuck\nobjective: o\ndecider: scripted:script.yaml\nproviders:\n  x: {{mcp: {{command: [sh, -c, \"sleep {b} & sleep {c}\"]}}}}\nsteps:\n  - {{id: s, provider: x, tools: [t]}}\nlimits: {{call_timeout_ms: 2000}}\n"
    );
    std::fs::write(dir.path().join("stuck.yaml"), stuck).unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  s:\n    - done: nothing\n",
    )
    .unwrap();
    let out = warrant_in(dir.path(), &store, &["run", "stuck.yaml", "-q"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        lingering(&b).is_empty(),
        "the stuck server's child outlived the run"
    );
    assert!(
        lingering(&c).is_empty(),
        "the stuck server outlived the run"
    );
}

/// Over Streamable HTTP, a server that is gone when a call is made: the call ends at once with
/// a transport failure, never taken for the server's refusal, in words (no library type
/// names). Whether the request left cannot be told on a kept-alive connection the server
/// closed: a commit is then in doubt, the safe side; a connection that cannot be made is
/// "not sent" (pinned for HTTP services in `openapi.rs`).
#[tokio::test]
async fn a_call_to_a_server_that_is_gone_over_http_ends_as_a_transport_failure() {
    let (server, url) = everything_http();
    let s = McpSurface::connect_http(&url, &BTreeMap::new(), true)
        .await
        .unwrap();
    let obs = s.observe().await.unwrap();
    drop(server);
    let err = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        s.invoke(invocation(
            "echo",
            json!({"message": "anyone?"}),
            Effect::Read,
            &obs.version,
        )),
    )
    .await
    .expect("the call ends")
    .unwrap_err();
    assert!(
        matches!(
            err.kind,
            warrant_core::ports::SurfaceErrorKind::NotSent
                | warrant_core::ports::SurfaceErrorKind::AnswerLost
        ),
        "{err:?}"
    );
    assert!(!err.message.contains("rmcp::"), "{}", err.message);
}

/// A fake MCP server over Streamable HTTP that records each `tools/call` it receives and then
/// closes the connection without answering: the work may be done, the answer never comes.
async fn hang_up_server() -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    tokio::spawn(async move {
        for _ in 0..64 {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head, body) = loop {
                let n = s.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < i + 4 + len {
                        let n = s.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    break (head, buf[i + 4..].to_vec());
                }
            };
            if !head.starts_with("post") {
                let _ = s
                    .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                continue;
            }
            let msg: Value = serde_json::from_slice(&body).unwrap_or_default();
            let reply = match msg["method"].as_str() {
                Some("initialize") => Some(json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hang-up", "version": "1"}}})),
                Some("tools/list") => Some(
                    json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [
                    {"name": "pay", "inputSchema": {"type": "object", "properties": {"amount": {"type": "number"}}}}]}}),
                ),
                Some("tools/call") => {
                    seen.lock()
                        .unwrap()
                        .push(msg["params"]["arguments"].clone());
                    // The work is done; the answer never leaves.
                    drop(s);
                    continue;
                }
                _ if msg.get("id").is_some() => Some(json!({"jsonrpc": "2.0", "id": msg["id"],
                    "error": {"code": -32601, "message": "Method not found"}})),
                _ => None,
            };
            let response = match reply {
                Some(v) => {
                    let body = v.to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
                None => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
            };
            let _ = s.write_all(response.as_bytes()).await;
        }
    });
    (url, calls)
}

/// Over Streamable HTTP, a commit the server received whose answer never came is in doubt:
/// the exchange broke off after the request went out, and nothing sends it again.
#[tokio::test]
async fn a_server_that_hangs_up_after_receiving_a_call_leaves_it_answer_lost() {
    let (url, calls) = hang_up_server().await;
    let s = McpSurface::connect_http(&url, &BTreeMap::new(), false)
        .await
        .unwrap();
    let obs = s.observe().await.unwrap();
    let err = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        s.invoke(invocation(
            "pay",
            json!({"amount": 5}),
            Effect::Commit,
            &obs.version,
        )),
    )
    .await
    .expect("the call ends")
    .unwrap_err();
    assert_eq!(
        calls.lock().unwrap().len(),
        1,
        "the server received it once"
    );
    assert_eq!(
        err.kind,
        warrant_core::ports::SurfaceErrorKind::AnswerLost,
        "{err:?}"
    );
}

#[test]
fn a_registered_servers_secret_reaches_it_and_no_event_report_or_output_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    let secret = "tok-5ecr3t-a81f2c";
    let command: Vec<String> = everything();
    std::fs::write(
        dir.path().join("providers.yaml"),
        format!(
            "version: warrant/providers/v1\nsecrets:\n  API_TOKEN: {{env: EVERYTHING_TOKEN}}\n\
             providers:\n  everything:\n    mcp:\n      command: {}\n      env: {{API_TOKEN: '${{API_TOKEN}}'}}\n    trust: trusted\n",
            serde_json::to_string(&command).unwrap()
        ),
    )
    .unwrap();
    write_project(
        dir.path(),
        "version: warrant/v1\nid: env\nobjective: Look at the server's environment.\ndecider: scripted:script.yaml\n\
         providers: {everything: {registered: everything}}\n\
         steps: [{id: look, provider: everything, tools: [get-env], required: true}]\n",
        "steps:\n  look:\n    - call: get-env\n    - done: looked\n",
    );
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir.path())
        .env("WARRANT_STORE", &store)
        .env("EVERYTHING_TOKEN", secret)
        .args([
            "--providers",
            "providers.yaml",
            "run",
            "spec.yaml",
            "--json",
        ])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(run.status.code(), Some(0), "{said}");
    assert!(!said.contains(secret), "{said}");
    // The server had it (it said so), and the log holds only its name.
    let events = warrant_in(dir.path(), &store, &["events", "last", "--json"]);
    let log = String::from_utf8_lossy(&events.stdout);
    assert!(log.contains("API_TOKEN"), "{log}");
    assert!(log.contains("[secret API_TOKEN]"), "{log}");
    assert!(!log.contains(secret), "the secret is in the log");
    // The run names the operator's provider, not its program.
    assert!(!log.contains("server-everything"), "{log}");
    let report = warrant_in(dir.path(), &store, &["report", "last", "--json"]);
    assert!(!String::from_utf8_lossy(&report.stdout).contains(secret));
    // Re-entered and replayed from its log alone, the same.
    let replay = warrant_in(dir.path(), &store, &["replay", "last", "--verify"]);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stdout)
    );
}

/// A provider's own reason, after a long preamble (over a thousand characters), is shown
/// whole: in `show`, the report and its failures, not cut off before it.
#[test]
fn a_providers_reason_after_a_long_preamble_is_shown_whole() {
    let (dir, store) = scratch();
    let server = root().join("mcp-servers/ledger-server.js");
    std::fs::write(
        dir.path().join("spec.yaml"),
        format!(
            "version: warrant/v1
id: gift-card
objective: Redeem the gift card.
decider: scripted:script.yaml
providers:
  ledger:
    mcp:
      command: [node, {server}]
      env: {{LEDGER: {ledger}}}
      effects: {{redeem: commit}}
steps:
  - id: pay
    provider: ledger
    tools: [redeem]
",
            server = server.display(),
            ledger = dir.path().join("ledger.txt").display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  pay:\n    - call: redeem\n      args: {card: gc-1}\n    - done: tried\n",
    )
    .unwrap();
    let run = warrant_in(
        dir.path(),
        &store,
        &["run", "spec.yaml", "-q", "--no-prompt"],
    );
    assert!(matches!(run.status.code(), Some(0 | 1)), "{}", stderr(&run));
    let reason = "Insufficient gift card balance to complete the payment";
    for args in [
        vec!["show", "last"],
        vec!["report", "last"],
        vec!["report", "last", "--json"],
    ] {
        let out = warrant_in(dir.path(), &store, &args);
        assert!(
            stdout(&out).contains(reason),
            "{args:?} does not show the provider's reason: {}",
            stdout(&out)
        );
    }
    let report = json(&warrant_in(
        dir.path(),
        &store,
        &["report", "last", "--json"],
    ));
    assert!(
        report["failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["message"].as_str().unwrap().ends_with(reason)),
        "{report}"
    );
}

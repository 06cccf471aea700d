//! The MCP surface against an official MCP server (`@modelcontextprotocol/server-everything`
//! over stdio), installed by `.ci/run` into `mcp-servers/node_modules`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use warrant_core::event::Effect;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{Invocation, Surface};
use warrant_surfaces::mcp::McpSurface;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the `warrant` binary in `cwd` against `store`.
fn warrant_in(cwd: &Path, store: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(cwd)
        .env("WARRANT_STORE", store)
        .args(args)
        .output()
        .unwrap()
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

fn invocation(tool: &str, args: Value, effect: Effect, version: &str) -> Invocation {
    Invocation {
        run: RunId("r".into()),
        call: CallId(1),
        tool: tool.into(),
        args: Arc::new(args),
        effect,
        idempotency_key: "wk-r-c1".into(),
        version: version.into(),
    }
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

#[test]
fn a_server_that_dies_mid_call_is_a_provider_fault_and_the_run_ends_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let server = root().join("mcp-servers/dying-server.js");
    let spec = format!(
        "version: warrant/v1\nid: dying\nobjective: Ping, then crash.\nproviders:\n  d:\n    mcp: {{command: [node, {}]}}\n    trust: trusted\nsteps:\n  - id: s\n    provider: d\n    tools: [ping, crash]\n    commit: required\n",
        server.display()
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  s:\n    - call: ping\n    - call: crash\n    - done: done\n",
    )
    .unwrap();
    let run = warrant_in(
        dir.path(),
        &dir.path().join("w.db"),
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
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(out["route_key"], "d/read:ping");
    let fault = &out["outcome_detail"]["missing"][0]["fault"];
    assert_eq!(fault["layer"], "provider", "{fault}");
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

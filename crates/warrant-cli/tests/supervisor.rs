//! A stdio MCP server's life under Warrant, and what a script reads of it: a server that
//! dies between two calls is started again and the run goes on; one that cannot be started
//! leaves the run interrupted (exit 5) for `resume`; a run another process drives is refused
//! (exit 4); and every command's exit code and `--json` output are what `--help` says.

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

use support::*;
use warrant_core::event::EventKind;
use warrant_core::store::{LogReader, RunsIndex};

/// A spec over the ledger server in `dir`, started by `command` (a shell line; `$SERVER` is
/// the server's script), which exits after the first `count` it answers.
fn ledger_world(dir: &Path, command: &str) {
    let server = root().join("mcp-servers/ledger-server.js");
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "version: warrant/v1
id: ledger
objective: Write one entry to the ledger.
decider: scripted:script.yaml
providers:
  ledger:
    mcp:
      command: [sh, -c, '{command}']
      env: {{LEDGER: {ledger}, EXIT_AFTER_FIRST_COUNT: {marker}, SERVER: {server}}}
      effects: {{count: read, append: commit}}
steps:
  - id: write
    provider: ledger
    tools: [count, append]
    commit: required
",
            ledger = dir.join("ledger.txt").display(),
            marker = dir.join("counted").display(),
            server = server.display(),
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("script.yaml"),
        "steps:\n  write:\n    - call: count\n    - call: count\n    - call: append\n      args: {entry: one}\n    - call: count\n    - done: written\n",
    )
    .unwrap();
}

fn events(store: &Path) -> Vec<std::sync::Arc<warrant_core::event::Event>> {
    let store = warrant_store::SqliteStore::open(store, warrant_store::Durability::Fsync).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let runs = store.runs(Default::default()).await.unwrap().runs;
            store
                .read(&runs[0].run_id, 1)
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.event)
                .collect()
        })
}

#[test]
fn a_server_that_dies_between_two_calls_is_started_again_and_the_run_goes_on() {
    let (dir, store) = scratch();
    ledger_world(dir.path(), "exec node \"$SERVER\"");
    let run = warrant_in(dir.path(), &store, &["run", "spec.yaml", "--no-prompt"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("provider ledger had stopped: started again"),
        "{}",
        stderr(&run)
    );
    let ledger = std::fs::read_to_string(dir.path().join("ledger.txt")).unwrap();
    assert_eq!(ledger, "one\n", "written once");
    let log = events(&store);
    let restarts: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProviderRestarted {
                provider,
                attempts,
                fault,
                ..
            } => Some((provider.clone(), *attempts, fault.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(restarts, vec![("ledger".to_owned(), 1, None)]);
    // Shown, reported, and replayed as it happened.
    let show = warrant_in(dir.path(), &store, &["events", "last"]);
    assert!(
        stdout(&show).contains("provider_restarted"),
        "{}",
        stdout(&show)
    );
    let report = warrant_in(dir.path(), &store, &["report", "last"]);
    assert!(
        stdout(&report).contains("provider `ledger` had stopped"),
        "{}",
        stdout(&report)
    );
    let replay = warrant_in(dir.path(), &store, &["replay", "last"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
}

#[test]
fn a_server_that_cannot_be_started_again_leaves_the_run_interrupted_for_resume() {
    let (dir, store) = scratch();
    // Started once; started again only once `blocked` is gone.
    ledger_world(
        dir.path(),
        "if [ -e blocked ]; then echo blocked >&2; exit 1; fi; touch blocked; exec node \"$SERVER\"",
    );
    let run = warrant_in(
        dir.path(),
        &store,
        &["run", "spec.yaml", "--no-prompt", "--json"],
    );
    assert_eq!(run.status.code(), Some(5), "{}", stderr(&run));
    assert!(
        stderr(&run)
            .contains("is interrupted: provider `ledger` stopped and could not be started again"),
        "{}",
        stderr(&run)
    );
    assert!(stderr(&run).contains("warrant resume"), "{}", stderr(&run));
    // `--json` printed a JSON value all the same.
    assert_eq!(json(&run)["error"]["exit_code"], 5, "{}", stdout(&run));
    let runs = warrant_in(dir.path(), &store, &["runs", "--json"]);
    assert_eq!(json(&runs)[0]["status"], "interrupted", "{}", stdout(&runs));
    // Resumed while it still cannot start: still interrupted, nothing recorded.
    let before = events(&store).len();
    let again = warrant_in(dir.path(), &store, &["resume", "last", "-q"]);
    assert_eq!(again.status.code(), Some(5), "{}", stderr(&again));
    assert_eq!(events(&store).len(), before);
    // Once it can start, resume carries the run on to its end.
    std::fs::remove_file(dir.path().join("blocked")).unwrap();
    let resumed = warrant_in(dir.path(), &store, &["resume", "last", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ledger.txt")).unwrap(),
        "one\n"
    );
    let replay = warrant_in(dir.path(), &store, &["replay", "last"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
}

#[test]
fn exit_codes_and_json_say_what_happened() {
    let (dir, store) = scratch();
    ledger_world(dir.path(), "exec node \"$SERVER\"");
    let d = dir.path();
    // Nothing to resume: an empty list, exit 0.
    let run = warrant_in(d, &store, &["run", "spec.yaml", "-q", "--no-prompt"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let all = warrant_in(d, &store, &["resume", "--all", "--json"]);
    assert_eq!(all.status.code(), Some(0), "{}", stderr(&all));
    assert_eq!(json(&all), serde_json::json!([]));
    // Cancelling a finished run is refused like any operator input after the end: exit 2.
    let cancel = warrant_in(d, &store, &["cancel", "last"]);
    assert_eq!(cancel.status.code(), Some(2), "{}", stderr(&cancel));
    assert!(
        stderr(&cancel).contains("already ended attained: nothing to cancel"),
        "{}",
        stderr(&cancel)
    );
    let reconcile = warrant_in(d, &store, &["reconcile", "last", "c1", "--happened"]);
    assert_eq!(reconcile.status.code(), Some(2), "{}", stderr(&reconcile));
    // A usage error with --json is JSON too.
    let usage = warrant_in(d, &store, &["runs", "--json", "--no-such-flag"]);
    assert_eq!(usage.status.code(), Some(2));
    assert_eq!(json(&usage)["error"]["exit_code"], 2, "{}", stdout(&usage));
    // The table is in --help.
    let help = warrant_in(d, &store, &["--help"]);
    for line in [
        "0  the run attained",
        "3  the run is waiting",
        "4  another process drives the run",
        "5  the run stopped interrupted",
    ] {
        assert!(stdout(&help).contains(line), "{line}: {}", stdout(&help));
    }
}

/// A run in doubt: reconciling a call it does not have names the calls it has; reconciling
/// one twice says who settled it and how.
#[test]
fn a_reconciliation_of_no_such_call_or_of_a_settled_one_says_so() {
    let (dir, store) = scratch();
    let server = root().join("mcp-servers/dying-server.js");
    std::fs::write(
        dir.path().join("spec.yaml"),
        format!(
            "version: warrant/v1
id: dying
objective: Record a note.
decider: scripted:script.yaml
providers:
  dying:
    mcp:
      command: [node, {server}]
      env: {{DYING_LOG: {log}}}
steps:
  - id: note
    provider: dying
    tools: [record]
",
            server = server.display(),
            log = dir.path().join("log.txt").display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  note:\n    - call: record\n      args: {note: hi}\n    - done: noted\n",
    )
    .unwrap();
    let d = dir.path();
    let run = warrant_in(d, &store, &["run", "spec.yaml", "-q", "--no-prompt"]);
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    let none = warrant_in(d, &store, &["reconcile", "last", "c9", "--happened"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains("has no call c9 (its calls are c1 to c1"),
        "{}",
        stderr(&none)
    );
    let first = warrant_in(
        d,
        &store,
        &[
            "reconcile",
            "last",
            "c1",
            "--happened",
            "--as",
            "alice",
            "--note",
            "in the log",
        ],
    );
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let second = warrant_in(d, &store, &["reconcile", "last", "c1", "--did-not-happen"]);
    assert_eq!(second.status.code(), Some(2));
    assert!(
        stderr(&second).contains("was already reconciled by alice: it happened (\"in the log\")"),
        "{}",
        stderr(&second)
    );
}

/// `resume` of a run a live process drives: refused with exit 4, naming the holder.
#[test]
fn resuming_a_run_another_process_drives_exits_4() {
    let (dir, store) = scratch();
    let server = root().join("mcp-servers/changing-server.js");
    std::fs::write(
        dir.path().join("spec.yaml"),
        format!(
            "version: warrant/v1
id: slow
objective: Wait for the slow tool.
decider: scripted:script.yaml
providers:
  slow:
    mcp:
      command: [node, {server}]
      effects: {{slow: read}}
steps:
  - id: wait
    provider: slow
    tools: [slow]
",
            server = server.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  wait:\n    - call: slow\n    - done: waited\n",
    )
    .unwrap();
    let d = dir.path();
    let mut driving = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(d)
        .env("WARRANT_STORE", &store)
        .args(["run", "spec.yaml", "-q", "--no-prompt"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until the call is in flight.
    let mut status = String::new();
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if store.exists() {
            let runs = warrant_in(d, &store, &["runs", "--json"]);
            if let Some(s) = json(&runs)[0]["status"].as_str() {
                status = s.to_owned();
                if !events(&store).is_empty()
                    && events(&store)
                        .iter()
                        .any(|e| matches!(e.kind, EventKind::CallDispatched { .. }))
                {
                    break;
                }
            }
        }
    }
    assert_eq!(status, "running");
    let resume = warrant_in(d, &store, &["resume", "last", "--json"]);
    let _ = driving.kill();
    let _ = driving.wait();
    assert_eq!(resume.status.code(), Some(4), "{}", stderr(&resume));
    assert!(
        stderr(&resume).contains("is driven by another process"),
        "{}",
        stderr(&resume)
    );
    assert_eq!(json(&resume)["error"]["exit_code"], 4);
}

/// A server that never answers its handshake holds a run for no longer than the run's
/// deadline, however long `call_timeout_ms` is: its start is bounded by the smaller.
#[test]
fn a_servers_start_is_bounded_by_what_is_left_of_the_deadline() {
    let (dir, store) = scratch();
    std::fs::write(
        dir.path().join("spec.yaml"),
        "version: warrant/v1
id: silent
objective: Reach a server that never answers.
decider: scripted:script.yaml
limits: {call_timeout_ms: 30000}
providers:
  s: {mcp: {command: [sleep, '30']}}
steps:
  - id: call
    provider: s
    tools: [anything]
",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "steps:\n  call:\n    - done: x\n",
    )
    .unwrap();
    let run = warrant_in(
        dir.path(),
        &store,
        &[
            "run",
            "spec.yaml",
            "-q",
            "--no-prompt",
            "--deadline-ms",
            "1000",
        ],
    );
    assert_ne!(run.status.code(), Some(0));
    assert!(
        stderr(&run).contains(
            "within 1000 ms (the smaller of `limits.call_timeout_ms` and what was left of the deadline)"
        ),
        "{}",
        stderr(&run)
    );
}

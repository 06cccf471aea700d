//! A run's life across processes: killed, resumed, waiting on an effect in doubt, reconciled,
//! cancelled, followed by a reader that reconnects.

#![cfg(feature = "fault-injection")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Dir {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

fn world() -> Dir {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().to_owned();
    let spec = format!(
        "version: warrant/v1
id: ledger
objective: Write an entry.
decider: scripted:script.yaml
providers:
  plain: {{reference: ledger, config: {{file: {}, keys: false}}}}
steps:
  - id: write
    provider: plain
    tools: [count_entries, append_entry]
    commit: required
",
        path.join("plain.jsonl").display()
    );
    std::fs::write(path.join("spec.yaml"), spec).unwrap();
    std::fs::write(
        path.join("script.yaml"),
        "steps:\n  write:\n    - call: count_entries\n    - call: append_entry\n      args: {entry: one}\n    - done: written\n",
    )
    .unwrap();
    Dir { _tmp: tmp, path }
}

fn warrant(dir: &Path, args: &[&str], fault: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_warrant"));
    cmd.current_dir(dir)
        .env("WARRANT_STORE", dir.join("w.db"))
        .args(args);
    match fault {
        Some(f) => cmd.env("WARRANT_FAULT", f),
        None => cmd.env_remove("WARRANT_FAULT"),
    };
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ledger_lines(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("plain.jsonl"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_killed_run_waits_in_doubt_is_reconciled_and_resumed_to_its_outcome() {
    let d = world();
    // Killed after the ledger wrote the entry, before the result was recorded.
    let killed = warrant(&d.path, &["run", "spec.yaml", "-q"], Some("after-invoke:2"));
    assert_eq!(killed.status.code(), None, "killed: {}", text(&killed));
    assert_eq!(ledger_lines(&d.path), 1);

    let waiting = warrant(&d.path, &["resume", "last", "-q"], None);
    assert_eq!(waiting.status.code(), Some(3), "{}", text(&waiting));
    assert!(
        text(&waiting).contains("c2 `append_entry` on plain is in doubt"),
        "{}",
        text(&waiting)
    );
    // What is known, exactly, and what to do, with the real call and its arguments.
    for expected in [
        "the intent was recorded, then the process stopped before a result was",
        r#"arguments {"entry":"one"}"#,
        "warrant reconcile r",
        " c2 --happened",
    ] {
        assert!(
            text(&waiting).contains(expected),
            "{expected}: {}",
            text(&waiting)
        );
    }
    let show = text(&warrant(&d.path, &["show", "last"], None));
    assert!(
        show.contains("in doubt") && show.contains(r#"{"entry":"one"}"#),
        "{show}"
    );
    assert_eq!(ledger_lines(&d.path), 1, "never silently repeated");
    let runs: Value =
        serde_json::from_slice(&warrant(&d.path, &["runs", "--json"], None).stdout).unwrap();
    assert_eq!(runs[0]["status"], "waiting");

    let bad = warrant(&d.path, &["reconcile", "last", "c1", "--happened"], None);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "c1 is not in doubt: {}",
        text(&bad)
    );
    let ok = warrant(
        &d.path,
        &[
            "reconcile",
            "last",
            "c2",
            "--happened",
            "--note",
            "the ledger has it",
            "--as",
            "alice",
        ],
        None,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let done = warrant(&d.path, &["resume", "last", "-q"], None);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    assert_eq!(ledger_lines(&d.path), 1);
    let replay = warrant(&d.path, &["replay", "last", "--verify"], None);
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    let events =
        String::from_utf8_lossy(&warrant(&d.path, &["events", "last"], None).stdout).into_owned();
    assert!(
        events.contains("call_reconciled") && events.contains("c2 happened (by alice)"),
        "{events}"
    );
}

#[test]
fn resume_all_reenters_every_interrupted_run() {
    let d = world();
    // `after-result:2`: the commit's result is durable (a read's rides with the next
    // decision's commit, which holds the commit's intent too).
    for fault in ["after-intent:1", "after-result:2", "mid-append:5"] {
        let out = warrant(&d.path, &["run", "spec.yaml", "-q"], Some(fault));
        assert_eq!(out.status.code(), None, "{fault}: {}", text(&out));
    }
    let all = warrant(&d.path, &["resume", "--all", "-q"], None);
    let runs: Value =
        serde_json::from_slice(&warrant(&d.path, &["runs", "--json"], None).stdout).unwrap();
    let statuses: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.iter().all(|s| *s == "attained"),
        "{statuses:?}: {}",
        text(&all)
    );
    assert_eq!(all.status.code(), Some(0));
    // One entry per run that got as far as its commit; none repeated.
    assert!(ledger_lines(&d.path) <= runs.as_array().unwrap().len());
}

#[test]
fn cancel_ends_a_waiting_run_and_refuses_a_finished_one() {
    let d = world();
    let killed = warrant(&d.path, &["run", "spec.yaml", "-q"], Some("after-intent:2"));
    assert_eq!(killed.status.code(), None);
    assert_eq!(
        warrant(&d.path, &["resume", "last", "-q"], None)
            .status
            .code(),
        Some(3)
    );
    let cancel = warrant(
        &d.path,
        &["cancel", "last", "--reason", "wrong ledger", "--as", "bob"],
        None,
    );
    assert_eq!(cancel.status.code(), Some(0), "{}", text(&cancel));
    assert!(
        text(&cancel).contains("cancelled (by bob: wrong ledger)"),
        "{}",
        text(&cancel)
    );
    let report: Value =
        serde_json::from_slice(&warrant(&d.path, &["report", "last", "--json"], None).stdout)
            .unwrap();
    assert_eq!(report["outcome"]["outcome"], "cancelled");
    assert_eq!(report["outcome"]["by"], "bob");
    // Nothing follows the end of a run: not a reconciliation either.
    let events = |d: &Path| text(&warrant(d, &["events", "last"], None)).lines().count();
    let before = events(&d.path);
    let late = warrant(&d.path, &["reconcile", "last", "c2", "--happened"], None);
    assert_eq!(late.status.code(), Some(2), "{}", text(&late));
    assert!(
        text(&late).contains("already ended cancelled"),
        "{}",
        text(&late)
    );
    assert_eq!(events(&d.path), before);
    let runs: Value =
        serde_json::from_slice(&warrant(&d.path, &["runs", "--json"], None).stdout).unwrap();
    assert_eq!(runs[0]["status"], "cancelled");
    // The report names the effect that was never settled.
    assert_eq!(report["unsettled"][0]["state"], "in_doubt");
    // Refused like a reconciliation after the end: exit 2, nothing written.
    let again = warrant(&d.path, &["cancel", "last"], None);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again).contains("already ended cancelled"),
        "{}",
        text(&again)
    );
}

#[test]
fn a_follower_that_reconnects_after_the_writer_restarts_sees_every_event_once_in_order() {
    let d = world();
    let killed = warrant(&d.path, &["run", "spec.yaml", "-q"], Some("after-result:2"));
    assert_eq!(killed.status.code(), None);
    let follower = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(&d.path)
        .env("WARRANT_STORE", d.path.join("w.db"))
        .args(["events", "last", "--follow", "--from", "3", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let resumed = warrant(&d.path, &["resume", "last", "-q"], None);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    let out = follower.wait_with_output().unwrap();
    let seqs: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let last = *seqs.last().unwrap();
    assert_eq!(seqs, (3..=last).collect::<Vec<_>>());
    assert!(String::from_utf8_lossy(&out.stdout).contains("run_resumed"));
}

#[test]
fn a_call_that_did_not_happen_is_sent_again_once_when_the_operator_asks() {
    let d = world();
    // Killed after the intent, before the ledger was called: nothing happened.
    let killed = warrant(&d.path, &["run", "spec.yaml", "-q"], Some("after-intent:2"));
    assert_eq!(killed.status.code(), None, "{}", text(&killed));
    assert_eq!(ledger_lines(&d.path), 0);
    let waiting = warrant(&d.path, &["resume", "last", "-q"], None);
    assert_eq!(waiting.status.code(), Some(3), "{}", text(&waiting));
    let said = warrant(
        &d.path,
        &[
            "reconcile",
            "last",
            "c2",
            "--did-not-happen",
            "--resend",
            "--as",
            "ops",
        ],
        None,
    );
    assert_eq!(said.status.code(), Some(0), "{}", text(&said));
    let runs: Value =
        serde_json::from_slice(&warrant(&d.path, &["runs", "--json"], None).stdout).unwrap();
    assert_eq!(runs[0]["status"], "ready");
    let done = warrant(&d.path, &["resume", "--all", "-q"], None);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    assert_eq!(ledger_lines(&d.path), 1, "sent again, once");
    let report = text(&warrant(&d.path, &["report", "last"], None));
    assert!(
        report.contains("did not happen; sent again as c3"),
        "{report}"
    );
    // A scripted decider reports no tokens, and the report says so rather than showing zeros.
    assert!(
        report.contains("\nusage    none reported (the decider scripted:"),
        "{report}"
    );
    let replay = warrant(&d.path, &["replay", "last", "--verify"], None);
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    // `--resend` without `--did-not-happen` is a usage error.
    let odd = warrant(
        &d.path,
        &["reconcile", "last", "c2", "--happened", "--resend"],
        None,
    );
    assert_eq!(odd.status.code(), Some(2));
}

#[test]
fn a_follower_says_when_the_writer_is_gone_and_follows_its_successor() {
    use std::io::BufRead;
    let d = world();
    let killed = warrant(&d.path, &["run", "spec.yaml", "-q"], Some("after-result:2"));
    assert_eq!(killed.status.code(), None);
    let mut follower = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(&d.path)
        .env("WARRANT_STORE", d.path.join("w.db"))
        .args(["events", "last", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = std::io::BufReader::new(follower.stderr.take().unwrap());
    let mut line = String::new();
    said.read_line(&mut line).unwrap();
    assert!(line.contains("is gone"), "{line}");
    assert!(line.contains("warrant resume"), "{line}");
    let resumed = warrant(&d.path, &["resume", "last", "-q"], None);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    let out = follower.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("run_finished"));
}

#[test]
fn killed_after_an_approval_is_consumed_the_call_is_dispatched_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/pay-rent");
    for f in ["spec.yaml", "script.yaml"] {
        std::fs::copy(root.join(f), d.join(f)).unwrap();
    }
    let waiting = warrant(
        d,
        &["run", "spec.yaml", "--ask-tool", "transfer", "--json", "-q"],
        None,
    );
    assert_eq!(waiting.status.code(), Some(3), "{}", text(&waiting));
    let out: Value = serde_json::from_slice(&waiting.stdout).unwrap();
    let request = out["approvals"][0]["request"].as_str().unwrap().to_owned();
    assert_eq!(
        warrant(d, &["approve", &request], None).status.code(),
        Some(0)
    );
    let killed = warrant(d, &["resume", "last", "-q"], Some("approval-consumed"));
    assert_eq!(killed.status.code(), None, "killed: {}", text(&killed));
    let done = warrant(d, &["resume", "last", "-q"], None);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    let events = String::from_utf8_lossy(&warrant(d, &["events", "last", "--json"], None).stdout)
        .into_owned();
    let count = |t: &str| {
        events
            .lines()
            .filter(|l| l.contains(&format!("\"type\":\"{t}\"")))
            .count()
    };
    assert_eq!(count("approval_consumed"), 1);
    assert_eq!(
        count("call_dispatched"),
        2,
        "the balance read and the transfer, each once"
    );
    assert_eq!(
        warrant(d, &["replay", "last", "--verify"], None)
            .status
            .code(),
        Some(0)
    );
}

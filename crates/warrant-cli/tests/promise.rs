//! The promise as a new user meets it at the command line: inputs read under a limit, paths
//! that mean the same from any folder, read commands that never write, one status everywhere,
//! nothing printed that a terminal would obey, bad input refused by name, approvals answered
//! from two terminals at once, and cancellations that end a waiting run at once.

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

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use support::*;

fn spec_path(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

#[test]
fn an_endless_or_huge_input_is_refused_not_read_whole() {
    let (dir, store) = scratch();
    let out = warrant(&store, &["validate", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is over 4 MiB"), "{}", stderr(&out));
    let big = dir.path().join("big.yaml");
    std::fs::write(&big, "# x\n".repeat(2 << 20)).unwrap();
    let out = warrant(&store, &["validate", big.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!store.exists(), "nothing was written");
}

#[test]
fn a_spec_means_the_same_from_any_folder_and_a_run_resumes_from_another() {
    let (dir, store) = scratch();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    // Run from a folder that is not the repository: the script resolves next to the spec.
    let run = warrant_in(
        &elsewhere,
        &store,
        &[
            "run",
            &spec_path("pay-rent/spec.yaml"),
            "--ask-tool",
            "transfer",
            "--json",
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    let request = json(&run)["approvals"][0]["request"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        warrant(&store, &["approve", &request]).status.code(),
        Some(0)
    );
    // Resume from a third folder: the recorded decider is found where it was.
    let third = tempfile::tempdir().unwrap();
    let resumed = warrant_in(third.path(), &store, &["resume", "last", "--json", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(json(&resumed)["outcome"], "attained");
}

#[test]
fn show_and_events_say_what_the_log_says() {
    let (_dir, store) = scratch();
    let run = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--deny-tool",
            "transfer",
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let show = stdout(&warrant(&store, &["show", "last"]));
    assert!(show.contains("stopped_by_policy"), "{show}");
    assert!(!show.contains("StoppedByPolicy"), "{show}");
    let events = stdout(&warrant(&store, &["events", "last"]));
    assert!(events.contains("stopped_by_policy"), "{events}");
}

#[test]
fn nothing_printed_is_obeyed_by_the_terminal() {
    let (dir, store) = scratch();
    let script = dir.path().join("script.yaml");
    // A decider's words with a screen clear, a title change and a bidirectional override.
    std::fs::write(
        &script,
        "steps:\n  order:\n    - decline: \"\\e[2J\\e]0;owned\\a \\u202Eevil\"\n",
    )
    .unwrap();
    let decider = format!("scripted:{}", script.display());
    let run = warrant(
        &store,
        &[
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--decider",
            &decider,
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    for out in [
        run.clone(),
        warrant(&store, &["report", "last"]),
        warrant(&store, &["show", "last"]),
        warrant(&store, &["events", "last"]),
        warrant(&store, &["events", "last", "--json"]),
        warrant(&store, &["show", "\u{1b}[2Jx"]),
    ] {
        for bytes in [&out.stdout, &out.stderr] {
            assert!(
                !bytes.iter().any(|b| *b == 0x1b || *b == 0x07),
                "an escape reached the terminal: {}",
                String::from_utf8_lossy(bytes)
            );
            assert!(!String::from_utf8_lossy(bytes).contains('\u{202e}'));
        }
    }
    assert!(stdout(&run).contains("\\u001b[2J"), "{}", stdout(&run));
    // JSON stays JSON, with the same meaning.
    let events = warrant(&store, &["events", "last", "--json"]);
    for line in stdout(&events).lines() {
        let _: Value = serde_json::from_str(line).unwrap();
    }
}

#[test]
fn read_commands_never_write_and_refuse_what_is_not_a_store() {
    let (dir, _) = scratch();
    // A SQLite database of something else.
    let other = dir.path().join("app.db");
    let status = Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table notes(body text)'); c.commit()",
            other.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let before = std::fs::read(&other).unwrap();
    for args in [
        vec!["runs"],
        vec!["show", "last"],
        vec!["approvals"],
        vec!["run", "examples/cafe-gallery/spec.yaml"],
    ] {
        let out = warrant(&other, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not a Warrant store"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(std::fs::read(&other).unwrap(), before, "not a byte changed");
    // A real store: reading it changes nothing in it.
    let store = dir.path().join("w.db");
    assert_eq!(
        warrant(&store, &["run", "examples/cafe-gallery/spec.yaml", "-q"])
            .status
            .code(),
        Some(0)
    );
    // Fold the write-ahead log into the file first, so any write would show.
    let checkpoint = Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(TRUNCATE)'); c.close()",
            store.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(checkpoint.success());
    let before = std::fs::read(&store).unwrap();
    for args in [
        vec!["runs"],
        vec!["show", "last"],
        vec!["events", "last"],
        vec!["report", "last"],
        vec!["approvals"],
        vec!["replay", "last", "--verify"],
    ] {
        let out = warrant(&store, &args);
        assert!(
            matches!(out.status.code(), Some(0)),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "a read command wrote"
    );
    // A missing store is not created by reading.
    let missing = dir.path().join("none.db");
    assert_eq!(warrant(&missing, &["runs"]).status.code(), Some(2));
    assert!(!missing.exists());
}

#[test]
fn a_waiting_run_is_waiting_everywhere_and_a_cancel_ends_it_at_once() {
    let (_dir, store) = scratch();
    let id = ask_transfer(&store)["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        json(&warrant(&store, &["runs", "--json"]))[0]["status"],
        "waiting"
    );
    assert!(stdout(&warrant(&store, &["show", "last"])).contains("status   waiting"));
    // Resuming everything leaves it alone: it waits for a person, not for a process.
    let events = |store: &Path| stdout(&warrant(store, &["events", "last"])).lines().count();
    let before = events(&store);
    let all = warrant(&store, &["resume", "--all"]);
    assert_eq!(all.status.code(), Some(0), "{}", stderr(&all));
    assert_eq!(events(&store), before, "nothing was appended");
    // Cancelling it ends it here, at once; its request is withdrawn with it.
    let cancel = warrant(&store, &["cancel", &id, "--reason", "not this month"]);
    assert_eq!(
        cancel.status.code(),
        Some(0),
        "{}{}",
        stdout(&cancel),
        stderr(&cancel)
    );
    assert!(stdout(&cancel).contains("cancelled"), "{}", stdout(&cancel));
    let pending = json(&warrant(&store, &["approvals", "--json"]));
    assert_eq!(pending, Value::Array(Vec::new()));
    let all = json(&warrant(&store, &["approvals", "--run", &id, "--json"]));
    assert_eq!(all[0]["status"], "withdrawn");
}

#[test]
fn input_that_would_silently_do_nothing_is_refused_by_name() {
    let (dir, store) = scratch();
    let typo = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--deny-tool",
            "transfre",
        ],
    );
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        stderr(&typo).contains("`transfre` names no tool"),
        "{}",
        stderr(&typo)
    );
    let empty = dir.path().join("empty.cedar");
    std::fs::write(&empty, "// nothing yet\n").unwrap();
    let out = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--policy",
            empty.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("holds no policies"),
        "{}",
        stderr(&out)
    );
    let spec = std::fs::read_to_string(root().join("examples/cafe-gallery/spec.yaml"))
        .unwrap()
        .replace(
            "deadline_ms: 60000",
            "deadline_ms: 60000\n  handle_ttl_ms: 0",
        )
        .replace(
            "script.yaml",
            &root()
                .join("examples/cafe-gallery/script.yaml")
                .display()
                .to_string(),
        );
    let zero = dir.path().join("zero.yaml");
    std::fs::write(&zero, spec).unwrap();
    let out = warrant(&store, &["validate", zero.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("limits.handle_ttl_ms"),
        "{}",
        stderr(&out)
    );
    let unknown = std::fs::read_to_string(&zero)
        .unwrap()
        .replace("  handle_ttl_ms: 0\n", "  handle_ttl: 5\n");
    std::fs::write(&zero, unknown).unwrap();
    let out = warrant(&store, &["validate", zero.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown field `limits.handle_ttl`"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("zero.yaml:"), "{}", stderr(&out));
    assert!(!store.exists(), "nothing was written");
    // An approval that would hold for no time.
    let request = ask_transfer(&store)["approvals"][0]["request"]
        .as_str()
        .unwrap()
        .to_owned();
    let past = warrant(&store, &["approve", &request, "--until", "1000"]);
    assert_eq!(past.status.code(), Some(2));
    assert!(
        stderr(&past).contains("not later than now"),
        "{}",
        stderr(&past)
    );
    let odd = warrant(&store, &["approve", &request, "--until", "+3 weeks"]);
    assert_eq!(odd.status.code(), Some(2));
    let later = warrant(&store, &["approve", &request, "--until", "+30m"]);
    assert_eq!(later.status.code(), Some(0), "{}", stderr(&later));
}

#[test]
fn approvals_show_provenance_and_expiry_and_codes_explain_themselves() {
    let (_dir, store) = scratch();
    ask_transfer(&store);
    let text = stdout(&warrant(&store, &["approvals"]));
    assert!(text.contains("expires"), "{text}");
    assert!(text.contains(" UTC"), "{text}");
    assert!(text.contains("/amount"), "{text}");
    assert!(text.contains("<- "), "{text}");
    let explain = warrant(&store, &["explain", "approval_denied"]);
    assert_eq!(explain.status.code(), Some(0));
    assert!(
        stdout(&explain).contains("[policy]"),
        "{}",
        stdout(&explain)
    );
    let all = stdout(&warrant(&store, &["explain"]));
    assert!(all.contains("answer_lost") && all.contains("publish_path_missing"));
    assert_eq!(warrant(&store, &["explain", "nope"]).status.code(), Some(2));
}

#[test]
fn the_final_answer_is_in_the_json_the_show_and_the_report() {
    let (_dir, store) = scratch();
    let run = warrant(
        &store,
        &["run", "examples/cafe-gallery/spec.yaml", "--json", "-q"],
    );
    assert_eq!(run.status.code(), Some(0));
    let out = json(&run);
    assert_eq!(
        out["answer"]["text"],
        "the latte's color is within the palette"
    );
    assert!(out["setup_ms"].is_u64());
    let show = stdout(&warrant(&store, &["show", "last"]));
    assert!(
        show.contains("answer   the latte's color is within the palette"),
        "{show}"
    );
    let report = json(&warrant(&store, &["report", "last", "--json"]));
    assert_eq!(report["answer"]["kind"], "done");
}

/// A run waiting at its prompt while another terminal answers: both agree, nothing fails.
#[test]
fn an_approval_answered_from_another_terminal_while_the_prompt_waits() {
    for (elsewhere, mine, outcome) in [
        ("approve", "y\n", "attained"),
        ("deny", "y\n", "not_attained"),
    ] {
        let (_dir, store) = scratch();
        let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(root())
            .env("WARRANT_STORE", &store)
            .args([
                "run",
                "examples/pay-rent/spec.yaml",
                "--ask-tool",
                "transfer",
                "--prompt",
                "--json",
                "-q",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the prompt.
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut shown = String::new();
        for _ in 0..200 {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap() == 0 {
                break;
            }
            shown.push_str(&line);
            if line.contains("approve once") {
                break;
            }
        }
        assert!(shown.contains("approve once"), "{shown}");
        let request = json(&warrant(&store, &["approvals", "--json"]))[0]["request"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut args = vec![elsewhere, request.as_str()];
        if elsewhere == "deny" {
            args.extend(["--reason", "not from here"]);
        }
        assert_eq!(warrant(&store, &args).status.code(), Some(0));
        // A late `y` here: the prompt saw the other answer and may have gone (its input closed).
        match child.stdin.take().unwrap().write_all(mine.as_bytes()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => panic!("{e}"),
        }
        let out = child.wait_with_output().unwrap();
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut rest);
        let result: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{rest}", String::from_utf8_lossy(&out.stdout)));
        // The other terminal's answer stands, whatever was typed here after it.
        assert_eq!(result["outcome"], outcome, "{rest}");
        assert!(rest.contains("elsewhere; that answer stands"), "{rest}");
        assert!(!rest.contains("another writer"), "{rest}");
    }
}

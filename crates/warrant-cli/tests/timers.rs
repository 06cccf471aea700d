//! Timers from the command line: a run that sleeps is `sleeping` in the store and held by no
//! process; a look before its time records nothing; `warrant serve` wakes it when its time
//! comes, and `warrant resume --all` does after then. The log replays.

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
use std::time::Duration;

use serde_json::Value;
use support::*;

const SLEEPY: &str = "scripted:examples/pay-rent/after-payday.yaml";

/// Starts the pay-rent run whose decider sleeps 2 s: it stops `sleeping` (exit 3).
fn start_sleeping(store: &Path) -> Value {
    let out = warrant(
        store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--decider",
            SLEEPY,
            "--json",
            "-q",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["outcome"], "sleeping", "{r}");
    assert!(r["sleeping_until_ms"].as_u64().is_some(), "{r}");
    r
}

fn summary(store: &Path, run: &str) -> Value {
    json(&warrant(store, &["runs", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == run)
        .cloned()
        .unwrap_or_else(|| panic!("no run {run}"))
}

fn events(store: &Path, run: &str) -> Vec<Value> {
    let out = warrant(store, &["events", run, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The run's timer fired once, at or after its time, and the run attained and replays.
fn woke_once_and_attained(store: &Path, run: &str) {
    let log = events(store, run);
    let set: Vec<&Value> = log.iter().filter(|e| e["type"] == "timer_set").collect();
    let fired: Vec<&Value> = log.iter().filter(|e| e["type"] == "timer_fired").collect();
    assert_eq!((set.len(), fired.len()), (1, 1), "{log:#?}");
    assert!(fired[0]["at_ms"].as_u64() >= set[0]["until_ms"].as_u64());
    assert_eq!(summary(store, run)["status"], "attained");
    let replayed = warrant(store, &["replay", run, "--verify"]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
}

#[test]
fn a_sleeping_run_is_held_by_the_store_and_woken_by_serve_or_resume_all() {
    let (_dir, store) = scratch();
    let first = start_sleeping(&store);
    let run = first["run_id"].as_str().unwrap();
    let until = first["sleeping_until_ms"].as_u64().unwrap();
    let s = summary(&store, run);
    assert_eq!(s["status"], "sleeping", "{s}");
    assert_eq!(s["wake_at_ms"].as_u64(), Some(until), "{s}");
    assert!(s.get("holder").is_none(), "no process holds it: {s}");
    // `show` says until when; `runs --status sleeping` finds it.
    let shown = stdout(&warrant(&store, &["show", run]));
    assert!(
        shown.contains("sleeping") && shown.contains("asleep until"),
        "{shown}"
    );
    let listed = json(&warrant(
        &store,
        &["runs", "--status", "sleeping", "--json"],
    ));
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // A look before its time records nothing.
    let before = events(&store, run).len();
    let early = warrant(&store, &["resume", run, "--json", "-q"]);
    assert_eq!(early.status.code(), Some(3), "{}", stderr(&early));
    assert_eq!(json(&early)["outcome"], "sleeping");
    assert_eq!(events(&store, run).len(), before, "an early look recorded");

    // `warrant serve` wakes it when its time comes.
    let server = start_server(&store, &root().join("examples"), &[], None);
    let mut status = Value::Null;
    for _ in 0..300 {
        status = summary(&store, run)["status"].clone();
        if status == "attained" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status, "attained");
    drop(server);
    woke_once_and_attained(&store, run);

    // Without a server: `resume --all` after its time wakes it; before, it leaves it be.
    let second = start_sleeping(&store);
    let run2 = second["run_id"].as_str().unwrap();
    let early = warrant(&store, &["resume", "--all"]);
    assert!(early.status.success(), "{}", stderr(&early));
    assert_eq!(summary(&store, run2)["status"], "sleeping");
    let until = second["sleeping_until_ms"].as_u64().unwrap();
    while now_ms() <= until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let all = warrant(&store, &["resume", "--all"]);
    assert!(all.status.success(), "{}", stderr(&all));
    woke_once_and_attained(&store, run2);
}

//! The browser lane: one spec, unchanged, on the reference lane and on the browser lane, where
//! its in-process providers are served as WebMCP pages (each registering the provider's very
//! tools through `document.modelContext`) and driven in a real headless Chromium — Debian's,
//! which `./test` installs when it is missing. Both end the same way: same outcome, same
//! route, same carried values; and the pages' own ledger shows every call went through them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod support;

use serde_json::Value;
use support::*;

/// The values a run carried, by name, from its log.
fn carried(store: &std::path::Path, run: &str) -> Vec<(String, Value)> {
    let events = warrant(store, &["events", run, "--json"]);
    assert_eq!(events.status.code(), Some(0), "{}", stderr(&events));
    stdout(&events)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "carried")
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["value"].clone()))
        .collect()
}

/// Runs `warrant ARGS` with its temporary files (the browser's profile) under `tmp`.
fn warrant_tmp(
    tmp: &std::path::Path,
    store: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", store)
        .env("TMPDIR", tmp)
        .env_remove("WARRANT_FAULT")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The processes whose command line mentions `text`.
fn mentioning(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(text) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn the_cafe_gallery_spec_attains_on_both_lanes_with_the_same_route_and_carried_values() {
    let (dir, store) = scratch();
    let mut runs = Vec::new();
    for lane in ["reference", "browser"] {
        let o = warrant_tmp(
            dir.path(),
            &store,
            &[
                "run",
                "examples/cafe-gallery/spec.yaml",
                "--lane",
                lane,
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{lane}: {}", stderr(&o));
        runs.push((json(&o), stderr(&o)));
    }
    let (reference, browser) = (&runs[0].0, &runs[1].0);
    assert_eq!(reference["outcome"], "attained");
    assert_eq!(browser["outcome"], "attained", "{}", runs[1].1);
    assert_eq!(
        browser["route_key"],
        "cafe/read:read_menu -> cafe/commit:order_latte -> gallery/read:check_design_drift"
    );
    assert_eq!(reference["route_key"], browser["route_key"]);
    let (r, b) = (
        reference["run_id"].as_str().unwrap(),
        browser["run_id"].as_str().unwrap(),
    );
    let carried_here = carried(&store, r);
    assert!(!carried_here.is_empty());
    assert_eq!(carried_here, carried(&store, b));
    // Every call of the browser run went through the pages, once each.
    assert!(
        runs[1].1.contains(
            "what the pages did: cafe: order_latte 1, read_menu 1; gallery: check_design_drift 1"
        ),
        "{}",
        runs[1].1
    );
    assert!(!runs[0].1.contains("browser lane"));
    // Its log alone replays it, and its report judges it as the reference run's.
    let replay = warrant(&store, &["replay", b, "--verify"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    let verdicts = |run: &str| {
        let report = json(&warrant(&store, &["report", run, "--json"]));
        report["terminal"].clone()
    };
    assert_eq!(verdicts(r), verdicts(b));
    // The browser it started ended with it, its profile too.
    let profiles = dir.path().join("warrant-chromium-");
    assert!(
        mentioning(&profiles.display().to_string()).is_empty(),
        "a browser outlived its run"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("warrant-chromium-")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A `warrant run` on the browser lane killed outright (SIGKILL, no time to end anything)
/// while its run waits for a person in the terminal leaves no browser behind: Chromium runs
/// under Warrant's guard, which ends its process group when its parent is gone.
#[test]
fn a_browser_lane_run_killed_outright_leaves_no_browser_behind() {
    use std::process::{Command, Stdio};
    let (dir, store) = scratch();
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", &store)
        .env("TMPDIR", dir.path())
        .env_remove("WARRANT_FAULT")
        .args([
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--lane",
            "browser",
            "--ask-tool",
            "order_latte",
            "--prompt",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let profiles = dir.path().join("warrant-chromium-").display().to_string();
    // It waits for an answer on its standard input (kept open), its browser running.
    let mut waiting = false;
    for _ in 0..600 {
        let asked = warrant(&store, &["approvals", "--json"]);
        if asked.status.code() == Some(0)
            && json(&asked).as_array().is_some_and(|a| !a.is_empty())
            && !mentioning(&profiles).is_empty()
        {
            waiting = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(waiting, "the run never waited with its browser open");
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by a signal");
    let mut left = mentioning(&profiles);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = mentioning(&profiles);
    }
    assert!(left.is_empty(), "left behind: {left:?}");
}

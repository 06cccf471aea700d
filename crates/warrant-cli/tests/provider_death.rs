//! The provider-death test: runs over a real MCP stdio server (the official SDK's, keeping a
//! ledger in a file outside Warrant) that is killed with SIGKILL at random moments — between
//! calls, during a read, during a commit. Warrant starts it again and goes on; a commit whose
//! answer died with it is in doubt, reconciled against the ledger as an operator would, and
//! the run resumed. Then: every run attained, every entry in the ledger exactly once (none
//! repeated, none lost), every log replays, and no server process is left.
//!
//! The size is at least `WARRANT_DEATH_KILLS` kills (default 200) from seed
//! `WARRANT_DEATH_SEED` (default 1); a failure prints the seed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use warrant_core::event::{Event, EventKind};
use warrant_store::{Durability, SqliteStore};

mod ledgers;
mod support;

use ledgers::Rng;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Appends per run (each between two reads).
const APPENDS: usize = 4;

struct World {
    dir: PathBuf,
    store: PathBuf,
    kills: Arc<AtomicU64>,
    in_doubt: u64,
    interrupted: u64,
    /// Runs whose server was killed at every start, started again.
    unstarted: u64,
}

impl World {
    /// Runs `warrant ARGS` while the server is killed at random moments; its exit code. A
    /// run whose server was killed at every start (exit 2, nothing recorded) is started again,
    /// as its operator would.
    fn warrant(&mut self, args: &[&str], rng: &mut Rng) -> i32 {
        for _ in 0..20 {
            match self.warrant_once(args, rng) {
                Some(code) => return code,
                None => self.unstarted += 1,
            }
        }
        panic!("{args:?}: the server was killed at every start, 20 times over");
    }

    /// One try of [`World::warrant`]: `None` when the run could not start its server.
    fn warrant_once(&mut self, args: &[&str], rng: &mut Rng) -> Option<i32> {
        let child = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(&self.dir)
            .env("WARRANT_STORE", &self.store)
            .env_remove("WARRANT_FAULT")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let killer = {
            let (stop, kills, pids) = (stop.clone(), self.kills.clone(), self.dir.join("pids"));
            let mut rng = Rng(rng.next() | 1);
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(60 + rng.below(440)));
                    if !stop.load(Ordering::SeqCst) && kill_server(&pids) {
                        kills.fetch_add(1, Ordering::SeqCst);
                        // The server started again gets a moment: a request starts a stopped
                        // provider at most three times (`RESTARTS_PER_REQUEST`), and a server
                        // killed faster than it can start and answer would fail a read on any
                        // machine slow enough — the kills stay at random moments of its life.
                        std::thread::sleep(Duration::from_millis(400));
                    }
                }
            })
        };
        let out = child.wait_with_output().unwrap();
        stop.store(true, Ordering::SeqCst);
        killer.join().unwrap();
        let code = out
            .status
            .code()
            .expect("warrant itself is never killed here");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if code == 2 && args.first() == Some(&"run") && stderr.contains("provider `ledger`") {
            return None;
        }
        assert!(
            matches!(code, 0 | 3 | 5),
            "{args:?} exited {code}: {stderr}"
        );
        if code == 5 {
            self.interrupted += 1;
        }
        Some(code)
    }

    fn runs(&self) -> Vec<(String, String, Vec<Arc<Event>>)> {
        let store = SqliteStore::open(&self.store, Durability::Fsync).unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(ledgers::logs(&store, |_| true))
    }
}

/// Kills the newest server with SIGKILL, if it still runs (and is the ledger server: a pid
/// the system gave to another process since is left alone). Says whether it killed.
fn kill_server(pids: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(pids)
        .ok()
        .and_then(|t| t.lines().last().map(str::to_owned))
    else {
        return false;
    };
    let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("ledger-server.js"));
    ours && Command::new("kill")
        .args(["-9", &pid])
        .status()
        .is_ok_and(|s| s.success())
}

/// The entries in the ledger.
fn ledger(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("ledger.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_world(dir: &Path) {
    let server = support::root().join("mcp-servers/ledger-server.js");
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "version: warrant/v1
id: ledger-death
objective: Write the entries to the ledger.
providers:
  ledger:
    mcp:
      command: [node, {server}]
      env: {{LEDGER: {ledger}, PID_FILE: {pids}}}
      effects: {{count: read, append: commit}}
steps:
  - id: write
    provider: ledger
    tools: [count, append]
    commit: required
",
            server = server.display(),
            ledger = dir.join("ledger.txt").display(),
            pids = dir.join("pids").display(),
        ),
    )
    .unwrap();
}

/// Run `i`'s script: a read, then each append followed by a read.
fn write_script(dir: &Path, i: u64) -> String {
    let mut s = String::from("steps:\n  write:\n    - call: count\n");
    for k in 0..APPENDS {
        s.push_str(&format!(
            "    - call: append\n      args: {{entry: r{i}-{k}}}\n    - call: count\n"
        ));
    }
    s.push_str("    - done: written\n");
    let name = format!("script-{i}.yaml");
    std::fs::write(dir.join(&name), s).unwrap();
    name
}

/// Settles a run as an operator would: each commit in doubt reconciled against the ledger
/// (one that did not happen sent again), then resumed, until it ends (at most `rounds`).
fn settle(w: &mut World, run: &str, rng: &mut Rng, rounds: usize) {
    for _ in 0..rounds {
        let runs = w.runs();
        let (_, status, events) = runs.iter().find(|(id, _, _)| id == run).unwrap();
        if !matches!(
            status.as_str(),
            "waiting" | "running" | "interrupted" | "ready"
        ) {
            return;
        }
        let state = warrant_core::fold::RunState::from_events(events.iter().map(|e| &**e)).unwrap();
        for c in state.in_doubt() {
            w.in_doubt += 1;
            let entry = c
                .executed
                .as_ref()
                .and_then(|a| a.get("entry"))
                .and_then(|e| e.as_str())
                .unwrap()
                .to_owned();
            let happened = ledger(&w.dir).contains(&entry);
            let call = c.id.to_string();
            let mut args = vec!["reconcile", run, &call, "--note", "read the ledger"];
            args.push(if happened {
                "--happened"
            } else {
                "--did-not-happen"
            });
            if !happened {
                args.push("--resend");
            }
            let out = support::warrant_in(&w.dir, &w.store, &args);
            assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
        }
        w.warrant(&["resume", run, "-q"], rng);
    }
}

#[test]
fn a_server_killed_between_and_during_calls_repeats_and_loses_nothing() {
    let seed = env_u64("WARRANT_DEATH_SEED", 1).max(1);
    let target = env_u64("WARRANT_DEATH_KILLS", 200);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    write_world(&dir);
    let mut w = World {
        store: dir.join("w.db"),
        dir,
        kills: Arc::new(AtomicU64::new(0)),
        in_doubt: 0,
        interrupted: 0,
        unstarted: 0,
    };
    let mut runs = 0;
    while w.kills.load(Ordering::SeqCst) < target && runs < target * 2 {
        let script = write_script(&w.dir, runs);
        let decider = format!("scripted:{script}");
        w.warrant(
            &[
                "run",
                "spec.yaml",
                "--decider",
                &decider,
                "--no-prompt",
                "-q",
            ],
            &mut rng,
        );
        let run = w
            .runs()
            .into_iter()
            .find(|(_, _, events)| {
                events.first().is_some_and(|e| {
                    matches!(&e.kind, EventKind::RunStarted { decider, .. } if decider.to_string().contains(&script))
                })
            })
            .map(|(id, _, _)| id)
            .unwrap_or_else(|| panic!("seed {seed}: run {runs} was not recorded"));
        settle(&mut w, &run, &mut rng, 40);
        runs += 1;
    }

    // The evidence.
    let logs = w.runs();
    let mut restarts = 0;
    for (run, status, events) in &logs {
        assert_eq!(status, "attained", "seed {seed}: run {run} ended {status}");
        // A call re-sent after it did not happen, and then done, is no failure.
        let report = warrant_core::report::RunReport::from_events(events).unwrap();
        let failed: Vec<_> = report
            .failures
            .iter()
            .filter(|f| f.call.is_some())
            .collect();
        assert!(failed.is_empty(), "seed {seed}: run {run}: {failed:?}");
        restarts += events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::ProviderRestarted { fault: None, .. }))
            .count();
        let replay = support::warrant_in(&w.dir, &w.store, &["replay", run]);
        assert_eq!(
            replay.status.code(),
            Some(0),
            "seed {seed}: run {run} does not replay: {}{}",
            support::stdout(&replay),
            support::stderr(&replay)
        );
    }
    let entries = ledger(&w.dir);
    let mut expected: Vec<String> = (0..runs)
        .flat_map(|i| (0..APPENDS).map(move |k| format!("r{i}-{k}")))
        .collect();
    let mut found = entries.clone();
    found.sort();
    expected.sort();
    assert_eq!(
        found, expected,
        "seed {seed}: the ledger holds each entry once (none repeated, none lost)"
    );
    let left: Vec<String> = std::fs::read_to_string(w.dir.join("pids"))
        .unwrap()
        .lines()
        .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("ledger-server.js"))
        })
        .map(str::to_owned)
        .collect();
    assert!(
        left.is_empty(),
        "seed {seed}: servers left running: {left:?}"
    );
    let kills = w.kills.load(Ordering::SeqCst);
    eprintln!(
        "provider-death test seed {seed}: {runs} runs, {kills} kills, {restarts} restarts, {} in doubt, {} interrupted, {} not started (started again), {} entries, 0 repeated, 0 lost",
        w.in_doubt,
        w.interrupted,
        w.unstarted,
        entries.len()
    );
    assert!(kills >= target, "seed {seed}: only {kills} kills");
}

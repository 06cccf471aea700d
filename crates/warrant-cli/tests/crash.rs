//! The crash test: many runs with commit calls against ledger providers that record every
//! effect in a file outside Warrant's store; the `warrant` process is killed at random fault
//! points, resumed after each kill, and in-doubt effects are reconciled against the ledger.
//! Then: zero duplicated effects, zero lost effects, zero runs stuck without a reason, every
//! run's log consistent.
//!
//! Needs the `fault-injection` feature (the README's test command enables it). The size is
//! `WARRANT_CRASH_RUNS` runs (default 160; the soak command in the README uses more) from seed
//! `WARRANT_CRASH_SEED` (default 1); a failure prints the seed.

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
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use warrant_core::event::Event;
use warrant_store::{Durability, SqliteStore};

mod ledgers;

use ledgers::Rng;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A random fault, or none.
fn fault(rng: &mut Rng) -> Option<String> {
    let (point, most) = match rng.below(5) {
        0 => ("after-intent", 4),
        1 => ("after-invoke", 4),
        2 => ("after-result", 4),
        3 => ("mid-append", 24),
        _ => return None,
    };
    Some(format!("{point}:{}", 1 + rng.below(most)))
}

struct World {
    dir: PathBuf,
    store: PathBuf,
    kills: u64,
    resumes: Vec<Duration>,
    in_doubt: u64,
}

impl World {
    /// A world in `dir`, its store not yet made.
    fn in_dir(dir: PathBuf) -> World {
        World {
            store: dir.join("w.db"),
            dir,
            kills: 0,
            resumes: Vec::new(),
            in_doubt: 0,
        }
    }

    fn warrant(&mut self, args: &[&str], fault: Option<&str>) -> Option<i32> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_warrant"));
        cmd.current_dir(&self.dir)
            .env("WARRANT_STORE", &self.store)
            .args(args);
        match fault {
            Some(f) => cmd.env("WARRANT_FAULT", f),
            None => cmd.env_remove("WARRANT_FAULT"),
        };
        let out = cmd.output().expect("the binary runs");
        if out.status.code().is_none() {
            self.kills += 1;
        } else if out.status.code() == Some(2) {
            panic!("{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        out.status.code()
    }
}

/// Each run whose status `keep` accepts, with its status and its log.
fn logs(
    store: &SqliteStore,
    keep: impl Fn(&str) -> bool,
) -> Vec<(String, String, Vec<Arc<Event>>)> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(ledgers::logs(store, keep))
}

#[test]
fn killed_at_random_points_no_effect_is_repeated_or_lost() {
    let seed = env_u64("WARRANT_CRASH_SEED", 1).max(1);
    let runs = env_u64("WARRANT_CRASH_RUNS", 160);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    ledgers::write(&dir);
    let mut w = World::in_dir(dir);

    for _ in 0..runs {
        let f = fault(&mut rng);
        w.warrant(&["run", "spec.yaml", "-q"], f.as_deref());
        settle(&mut w, &mut rng, 50, fault, false);
    }

    // The evidence.
    let store = SqliteStore::open(&w.store, Durability::Fsync).unwrap();
    let logs = logs(&store, |_| true);
    let effects = ledgers::judge(&w.dir, &logs, &format!("seed {seed}"));
    w.resumes.sort();
    let median = w
        .resumes
        .get(w.resumes.len() / 2)
        .copied()
        .unwrap_or_default();
    eprintln!(
        "crash test seed {seed}: {} runs, {} kills, {effects} effects, 0 duplicates, 0 lost, {} in doubt, median restart-to-resumed-run {:.1} ms over {} resumes",
        logs.len(),
        w.kills,
        w.in_doubt,
        median.as_secs_f64() * 1e3,
        w.resumes.len()
    );
    assert!(
        w.kills >= runs,
        "seed {seed}: only {} kills were injected",
        w.kills
    );
}

/// Reconciles what waits (children too) and resumes what is left — each run, or each tree by
/// its root — each resume at a random fault, until nothing is running, waiting or ready
/// (at most `rounds` times).
fn settle(
    w: &mut World,
    rng: &mut Rng,
    rounds: usize,
    fault: fn(&mut Rng) -> Option<String>,
    by_root: bool,
) {
    for _round in 0..rounds {
        let Ok(store) = SqliteStore::open(&w.store, Durability::Fsync) else {
            break;
        };
        let pending = logs(&store, |status| {
            matches!(status, "running" | "waiting" | "ready")
        });
        drop(store);
        if pending.is_empty() {
            break;
        }
        let mut targets: Vec<String> = Vec::new();
        for (run, status, events) in &pending {
            if status == "waiting" {
                // What did not happen is sometimes sent again.
                let resend = rng.below(2) == 0;
                reconcile(w, run, events, resend);
            }
            let target = if by_root {
                run.split('.').next().unwrap_or(run).to_owned()
            } else {
                run.clone()
            };
            if !targets.contains(&target) {
                targets.push(target);
            }
        }
        for run in targets {
            let f = fault(rng);
            #[expect(
                clippy::disallowed_methods,
                reason = "measures the time to a resumed run"
            )]
            let t0 = std::time::Instant::now();
            let code = w.warrant(&["resume", &run, "-q"], f.as_deref());
            if code.is_some() && f.is_none() {
                w.resumes.push(t0.elapsed());
            }
        }
    }
}

/// Reconciles each in-doubt call by looking at the ledger, as an operator would; with
/// `resend`, one that did not happen is sent again.
fn reconcile(w: &mut World, run: &str, events: &[Arc<Event>], resend: bool) {
    for (call, happened) in ledgers::in_doubt(&w.dir, events) {
        w.in_doubt += 1;
        let flag = if happened {
            "--happened"
        } else {
            "--did-not-happen"
        };
        let mut args = vec![
            "reconcile",
            run,
            &call,
            flag,
            "--note",
            "checked the ledger",
        ];
        if resend && !happened {
            args.push("--resend");
        }
        let code = w.warrant(&args, None);
        assert_eq!(code, Some(0), "reconcile {run} {call}");
    }
}

/// The tree: a root delegating to three children (fan-out 3), each writing its own entry and
/// then delegating to three grandchildren (depth 2) that write one entry to each ledger.
fn write_tree(dir: &std::path::Path) {
    ledgers::write(dir);
    let leaf = ledgers::spec(dir).replace("id: ledger-crash", "id: ledger-leaf");
    std::fs::write(dir.join("leaf.yaml"), leaf).unwrap();
    let mid = format!(
        "version: warrant/v1
id: ledger-mid
objective: Write an entry, then have three children write theirs.
decider: scripted:mid-script.yaml
providers:
  keyed: {{reference: ledger, config: {{file: {keyed}, keys: true}}}}
steps:
  - id: own
    provider: keyed
    tools: [count_entries, append_entry]
    commit: required
  - id: kids
    after: [own]
    required: true
    delegate:
      fan_out: 3
      children:
        - {{spec: leaf.yaml}}
        - {{spec: leaf.yaml}}
        - {{spec: leaf.yaml}}
",
        keyed = dir.join(ledgers::FILES[0]).display()
    );
    std::fs::write(dir.join("mid.yaml"), mid).unwrap();
    std::fs::write(
        dir.join("mid-script.yaml"),
        "steps:\n  own:\n    - call: count_entries\n    - call: append_entry\n      args: {entry: mid}\n    - done: written\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tree.yaml"),
        "version: warrant/v1
id: ledger-tree
objective: Have three children write, each with three children of its own.
decider: scripted:tree-script.yaml
providers: {}
steps:
  - id: fan
    required: true
    delegate:
      fan_out: 3
      children:
        - {spec: mid.yaml}
        - {spec: mid.yaml}
        - {spec: mid.yaml}
limits:
  decisions_max: 200
",
    )
    .unwrap();
    std::fs::write(dir.join("tree-script.yaml"), "steps: {}\n").unwrap();
}

/// A random fault for a tree: the run's own points, or between a spawn and the child's first
/// event (`after-spawn`), or between children's ends and the parent's join (`before-join`).
fn tree_fault(rng: &mut Rng) -> Option<String> {
    match rng.below(7) {
        0 => Some(format!("after-spawn:{}", 1 + rng.below(4))),
        1 => Some(format!("before-join:{}", 1 + rng.below(4))),
        2 => Some(format!("after-intent:{}", 1 + rng.below(20))),
        3 => Some(format!("after-result:{}", 1 + rng.below(20))),
        4 => Some(format!("mid-append:{}", 1 + rng.below(60))),
        5 => Some(format!("after-invoke:{}", 1 + rng.below(20))),
        _ => None,
    }
}

#[test]
fn a_tree_of_runs_killed_at_random_points_repeats_and_loses_no_effect() {
    let seed = env_u64("WARRANT_CRASH_SEED", 1).max(1);
    let trees = env_u64("WARRANT_CRASH_TREES", 12);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    write_tree(&dir);
    let mut w = World::in_dir(dir);
    for _ in 0..trees {
        let f = tree_fault(&mut rng);
        w.warrant(&["run", "tree.yaml", "-q"], f.as_deref());
        settle(&mut w, &mut rng, 80, tree_fault, true);
    }
    let store = SqliteStore::open(&w.store, Durability::Fsync).unwrap();
    let logs = logs(&store, |_| true);
    let effects = ledgers::judge(&w.dir, &logs, &format!("tree seed {seed}"));
    // Every child ended before its parent joined it; each root's tree is whole.
    let children = logs.iter().filter(|(run, _, _)| run.contains('.')).count();
    assert_eq!(
        children as u64,
        trees * 12,
        "tree seed {seed}: 3 children and 9 grandchildren a tree"
    );
    eprintln!(
        "tree crash test seed {seed}: {trees} trees ({} runs), {} kills, {effects} effects, 0 duplicates, 0 lost, {} in doubt",
        logs.len(),
        w.kills,
        w.in_doubt
    );
    assert!(
        w.kills >= trees / 2,
        "tree seed {seed}: only {} kills were injected",
        w.kills
    );
}

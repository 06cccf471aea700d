//! The fleet's crash test, on a PostgreSQL cluster of its own (so it can be crashed and
//! restarted): a server queues runs that write to two ledgers outside Warrant (one provider
//! accepts idempotency keys, one does not); three `warrant worker`s drive them while workers
//! abort at the named fault points and are killed (`SIGKILL`); one is stopped (`SIGSTOP`) past
//! its lease and then let go on (`SIGCONT`); then the second half of the runs is queued and
//! PostgreSQL is crashed and restarted while they run; some runs are resumed by two processes
//! at once. In-doubt calls are reconciled against the ledgers as an operator would. Then:
//! every run ended, no effect repeated, none lost, every log consistent (and a sample replayed
//! byte for byte), the stalled worker's late appends refused by the fence; the time from a
//! worker's `SIGKILL` to its runs going on elsewhere is reported.
//!
//! Needs the `fault-injection` feature and PostgreSQL's server programs (`initdb`,
//! `pg_ctl`). The size is `WARRANT_FLEET_RUNS` runs (default 1000).

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

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use warrant_core::event::{Event, EventKind};
use warrant_core::ports::{LEASE_TTL_MS, RunQuery};
use warrant_core::store::{LogReader, RunsIndex};
use warrant_store::PostgresStore;

mod ledgers;
mod support;

/// A PostgreSQL cluster of this test's own, on a free loopback port.
struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    /// Run its programs as the `postgres` user (they refuse to run as root).
    as_postgres: bool,
}

impl Cluster {
    fn create(dir: &Path) -> Cluster {
        let bin = ["/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.join("initdb").exists())
            .or_else(|| {
                let out = Command::new("pg_config").arg("--bindir").output().ok()?;
                Some(PathBuf::from(String::from_utf8(out.stdout).ok()?.trim()))
            })
            .expect("PostgreSQL's server programs (initdb, pg_ctl)");
        let as_postgres = nix_is_root();
        let data = dir.join("pg");
        std::fs::create_dir_all(&data).unwrap();
        if as_postgres {
            // The cluster's user must reach its folder.
            Command::new("chmod").arg("755").arg(dir).status().unwrap();
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&data)
                .status()
                .unwrap();
            assert!(ok.success(), "cannot give the cluster's folder to postgres");
        }
        let cluster = Cluster {
            bin,
            data,
            port: support::free_port(),
            as_postgres,
        };
        let out = cluster
            .program("initdb")
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&cluster.data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.start();
        cluster
    }

    fn program(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port,
            self.data.display()
        );
        let out = self
            .program("pg_ctl")
            .args(["-w", "-t", "60", "-l"])
            .arg(self.data.join("log"))
            .args(["-o", &options, "-D"])
            .arg(&self.data)
            .arg("start")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops it as a crash would (no shutdown checkpoint), then starts it again.
    fn crash_and_restart(&self) {
        self.stop();
        self.start();
    }

    fn stop(&self) {
        let _ = self
            .program("pg_ctl")
            .args(["-w", "-m", "immediate", "-D"])
            .arg(&self.data)
            .arg("stop")
            .output();
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn nix_is_root() -> bool {
    // The effective user id, from /proc (no libc call needed).
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

use ledgers::Rng;

/// A worker process of one slot, and what became of the ones before it.
struct Slot {
    child: Child,
    name: String,
    generation: u32,
}

struct Fleet {
    dir: PathBuf,
    url: String,
    slots: Vec<Slot>,
    rng: Rng,
    /// Abort points left to give workers (each worker dies at most once by one).
    faults_left: u32,
}

impl Fleet {
    fn spawn(&mut self, slot: usize, generation: u32) -> Slot {
        let name = format!("w{slot}-{generation}");
        let log = self.dir.join(format!("{name}.log"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_warrant"));
        cmd.current_dir(&self.dir)
            .env("WARRANT_STORE", &self.url)
            .args([
                "worker",
                "--max-runs",
                "12",
                "--name",
                &name,
                "--grace",
                "1",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        let fault = (slot < 2 && self.faults_left > 0 && self.rng.below(2) == 0).then(|| {
            self.faults_left -= 1;
            let point = ["after-intent", "after-invoke", "after-result", "mid-append"]
                [self.rng.below(4) as usize];
            format!("{point}:{}", 20 + self.rng.below(150))
        });
        match &fault {
            Some(f) => cmd.env("WARRANT_FAULT", f),
            None => cmd.env_remove("WARRANT_FAULT"),
        };
        Slot {
            child: cmd.spawn().unwrap(),
            name,
            generation,
        }
    }

    /// Replaces the workers that died (at a fault point, or killed).
    fn replace_the_dead(&mut self) {
        for i in 0..self.slots.len() {
            if let Ok(Some(_)) = self.slots[i].child.try_wait() {
                let generation = self.slots[i].generation + 1;
                self.slots[i] = self.spawn(i, generation);
            }
        }
    }

    fn signal(&self, slot: usize, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.slots[slot].child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }
}

/// Whether a run's `holder` is the worker `name` (a holder reads `pid N@host (name)`).
fn held_by(holder: Option<&str>, name: &str) -> bool {
    holder.is_some_and(|h| {
        h.strip_suffix(')')
            .and_then(|h| h.strip_suffix(name))
            .is_some_and(|h| h.ends_with('('))
    })
}

/// Runs `warrant ARGS` on the fleet's store in `dir`: its exit code.
fn warrant(dir: &Path, url: &str, args: &[&str]) -> Option<i32> {
    let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir)
        .env("WARRANT_STORE", url)
        .env_remove("WARRANT_FAULT")
        .args(args)
        .output()
        .unwrap();
    out.status.code()
}

#[test]
fn a_fleet_of_workers_that_die_stall_and_lose_their_database_repeats_and_loses_nothing() {
    let runs: usize = std::env::var("WARRANT_FLEET_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let cluster = Cluster::create(&dir);
    let url = cluster.url();
    ledgers::write(&dir);
    assert_eq!(warrant(&dir, &url, &["store", "migrate"]), Some(0));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = rt.block_on(PostgresStore::open(&url)).unwrap();

    // A server queues the runs.
    let mut serve = Command::new(env!("CARGO_BIN_EXE_warrant"));
    serve
        .current_dir(&dir)
        .env("WARRANT_STORE", &url)
        .args(["serve", "--listen", "127.0.0.1:0", "--specs"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let served = support::served(serve.spawn().unwrap());
    // Half the runs now; the other half once the stalled worker is let go, so the database
    // is crashed while runs are in flight and not while that worker is stopped (its late
    // appends must meet the fence, not a dead connection).
    let first_half = runs / 2;
    let queue = |n: usize| {
        rt.block_on(async {
            let client = warrant_http::client();
            for _ in 0..n {
                let r = client
                    .post(format!("{}/v1/runs", served.base))
                    .json(&serde_json::json!({"spec_path": "spec.yaml"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 201, "{:?}", r.text().await);
            }
        });
    };
    queue(first_half);
    let queued = rt.block_on(store.runs(RunQuery {
        status: Some(warrant_core::status::RunStatus::Running),
        ..RunQuery::default()
    }));
    assert_eq!(
        queued.unwrap().runs.len(),
        first_half,
        "every run is queued"
    );
    let mut second_half_queued = false;

    // Three workers.
    let mut fleet = Fleet {
        dir: dir.clone(),
        url: url.clone(),
        slots: Vec::new(),
        rng: Rng(0x9e37_79b9_7f4a_7c15),
        faults_left: 4,
    };
    for i in 0..3 {
        let slot = fleet.spawn(i, 0);
        fleet.slots.push(slot);
    }

    let began = Instant::now();
    let deadline = began + Duration::from_secs(900);
    let (mut killed, mut stopped, mut restarted, mut doubled) = (0, None, false, 0);
    // The `warrant resume`s started two at a time, reaped as they end: never waited for here,
    // for one may be held up by the stopped worker (a ledger file it holds locked), which
    // this loop lets go on.
    let mut resuming: Vec<std::process::Child> = Vec::new();
    let mut stalled_name = String::new();
    // The runs the stalled worker was driving when it was stopped.
    let mut stalled_held: HashSet<String> = HashSet::new();
    let mut reconciled = 0;
    // Per worker killed: when (ms since the epoch) and the runs it was driving then.
    let mut killings: Vec<(u64, HashSet<String>)> = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "the fleet did not finish in time; worker logs in {}",
            dir.display()
        );
        fleet.replace_the_dead();
        let all = rt.block_on(store.runs(RunQuery::default())).unwrap().runs;
        let ended = all
            .iter()
            .filter(|r| !matches!(r.status.as_str(), "running" | "waiting" | "ready"))
            .count();
        let progress = ended * 100 / runs.max(1);
        // Chaos, at points of progress.
        if killed == 0 && progress >= 5 || killed == 1 && second_half_queued && progress >= 75 {
            let slot = if killed == 0 { 0 } else { 1 };
            let held: HashSet<String> = all
                .iter()
                .filter(|r| {
                    r.status == "running" && held_by(r.holder.as_deref(), &fleet.slots[slot].name)
                })
                .map(|r| r.run_id.0.clone())
                .collect();
            let at_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64;
            fleet.signal(slot, nix::sys::signal::Signal::SIGKILL);
            killings.push((at_ms, held));
            killed += 1;
        }
        // A worker holding runs is stopped past its lease, then let go on.
        if stopped.is_none() && progress >= 15 {
            let holding = |name: &str| {
                all.iter()
                    .filter(|r| held_by(r.holder.as_deref(), name))
                    .count()
            };
            // Slot 2's worker is never given a fault nor killed: it is the one stalled.
            if let Some(slot) = Some(2).filter(|i| holding(&fleet.slots[*i].name) >= 1) {
                let name = fleet.slots[slot].name.clone();
                fleet.signal(slot, nix::sys::signal::Signal::SIGSTOP);
                // What it holds once stopped (its commits in flight landed): runs it was
                // driving, to which it appends again when let go on.
                std::thread::sleep(Duration::from_millis(500));
                let now = rt.block_on(store.runs(RunQuery::default())).unwrap().runs;
                stalled_held = now
                    .iter()
                    .filter(|r| r.status == "running" && held_by(r.holder.as_deref(), &name))
                    .map(|r| r.run_id.0.clone())
                    .collect();
                if stalled_held.is_empty() {
                    // It had just finished what it held: let it go on and try again later.
                    fleet.signal(slot, nix::sys::signal::Signal::SIGCONT);
                } else {
                    stalled_name = name;
                    stopped = Some((slot, Instant::now(), None));
                }
            }
        }
        // It is let go on once another worker has taken over a run it was driving (its lease
        // lapsed), so that its next append for that run must meet the fence; if none is
        // taken over within a minute it is let go on anyway (and the check below says so).
        if let Some((slot, at, None)) = stopped
            && at.elapsed() > Duration::from_millis(LEASE_TTL_MS)
        {
            // Stopped, it cannot have moved them on itself: one no longer held by it (held
            // by another, or already ended) was taken over.
            let taken_over = all.iter().any(|r| {
                stalled_held.contains(&r.run_id.0) && !held_by(r.holder.as_deref(), &stalled_name)
            });
            if taken_over || at.elapsed() > Duration::from_millis(LEASE_TTL_MS + 60_000) {
                fleet.signal(slot, nix::sys::signal::Signal::SIGCONT);
                stopped = Some((slot, at, Some(Instant::now())));
            }
        }
        // Once the stalled worker has come back (and been refused), the second half is
        // queued, and the database crashes while it runs.
        if !second_half_queued
            && let Some((_, _, Some(continued))) = stopped
            && continued.elapsed() > Duration::from_millis(3_000)
        {
            queue(runs - first_half);
            second_half_queued = true;
        }
        if second_half_queued && !restarted && ended >= first_half + (runs - first_half) / 5 {
            cluster.crash_and_restart();
            restarted = true;
        }
        // Calls in doubt are reconciled against the ledgers, as an operator would; some
        // answered runs are then resumed by two processes at once.
        for r in all.iter().filter(|r| r.status == "waiting") {
            let events: Vec<Arc<Event>> = rt
                .block_on(store.read(&r.run_id, 1))
                .unwrap()
                .into_iter()
                .map(|s| s.event)
                .collect();
            let doubts = ledgers::in_doubt(&dir, &events);
            for (call, happened) in &doubts {
                let flag = if *happened {
                    "--happened"
                } else {
                    "--did-not-happen"
                };
                let mut args = vec![
                    "reconcile",
                    &r.run_id.0,
                    call,
                    flag,
                    "--note",
                    "checked the ledger",
                ];
                if !happened && fleet.rng.below(2) == 0 {
                    args.push("--resend");
                }
                warrant(&dir, &url, &args);
                reconciled += 1;
            }
            if !doubts.is_empty() && doubled < 5 {
                doubled += 1;
                let spawn = || {
                    Command::new(env!("CARGO_BIN_EXE_warrant"))
                        .current_dir(&dir)
                        .env("WARRANT_STORE", &url)
                        .env_remove("WARRANT_FAULT")
                        .args(["resume", &r.run_id.0, "-q"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap()
                };
                resuming.extend([spawn(), spawn()]);
            }
        }
        resuming.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        if ended == runs && matches!(stopped, Some((_, _, Some(_)))) && restarted && killed >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let took = began.elapsed();
    for mut c in resuming {
        let _ = c.wait();
    }
    drop(served);
    for slot in &mut fleet.slots {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(slot.child.id() as i32),
            nix::sys::signal::Signal::SIGCONT,
        );
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(slot.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = slot.child.wait();
    }

    // The evidence.
    let logs = rt.block_on(ledgers::logs(&store, |_| true));
    assert_eq!(logs.len(), runs);
    let effects = ledgers::judge(&dir, &logs, "fleet");
    // Each run was queued by the server and first driven by a worker that took it up: that
    // first driving is no resumption.
    for (run, _, events) in &logs {
        assert!(
            matches!(events[1].kind, EventKind::RunTakenUp { .. }),
            "run {run}'s second event is `{}`",
            events[1].kind.name()
        );
    }
    // Runs driven by more than one worker (the take-up, then each re-entry).
    let crossed: Vec<&(String, String, Vec<Arc<Event>>)> = logs
        .iter()
        .filter(|(_, _, events)| {
            events
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::RunResumed { .. } | EventKind::RunTakenUp { .. }
                    )
                })
                .count()
                > 1
        })
        .collect();
    // A sample replayed byte for byte: the runs that crossed workers first.
    let sample: Vec<&str> = crossed
        .iter()
        .map(|(r, _, _)| r.as_str())
        .chain(logs.iter().map(|(r, _, _)| r.as_str()))
        .take(60)
        .collect();
    for run in &sample {
        assert_eq!(
            warrant(&dir, &url, &["replay", run, "--verify"]),
            Some(0),
            "run {run} does not replay byte for byte"
        );
    }
    // The stalled worker came back and was refused: its late appends were fenced.
    let stalled_log = std::fs::read_to_string(dir.join(format!("{stalled_name}.log"))).unwrap();
    let fenced = stalled_log.matches("no longer may append").count();
    assert!(
        fenced > 0,
        "the stalled worker's late appends were not refused:\n{stalled_log}"
    );
    // From a worker's `SIGKILL` to each run it was driving going on elsewhere: the run's
    // first re-entry recorded after it (a run that had just ended or waited needs none).
    let mut delays: Vec<Duration> = Vec::new();
    for (at_ms, held) in &killings {
        for (_, _, events) in logs.iter().filter(|(r, _, _)| held.contains(r)) {
            let reentered = events.iter().find(|e| {
                e.at_ms >= *at_ms
                    && matches!(
                        e.kind,
                        EventKind::RunResumed { .. } | EventKind::RunTakenUp { .. }
                    )
            });
            if let Some(e) = reentered {
                delays.push(Duration::from_millis(e.at_ms - at_ms));
            }
        }
    }
    delays.sort();
    let median = delays.get(delays.len() / 2).copied().unwrap_or_default();
    let slowest = delays.last().copied().unwrap_or_default();
    let deaths = fleet.slots.iter().map(|s| s.generation).sum::<u32>();
    eprintln!(
        "fleet: {runs} runs, 3 workers, {deaths} worker deaths ({killed} SIGKILL, the rest at fault points), 1 SIGSTOP past the lease ({fenced} late appends fenced), 1 PostgreSQL crash, {doubled} runs resumed by two processes at once, {reconciled} calls reconciled, {effects} effects, 0 duplicated, 0 lost, {} runs driven by more than one worker, {} replayed byte for byte; a killed worker's runs went on elsewhere after {:.2} s (median, {} runs; slowest {:.2} s; the lease lasts {} s); in {:.1} s",
        crossed.len(),
        sample.len(),
        median.as_secs_f64(),
        delays.len(),
        slowest.as_secs_f64(),
        LEASE_TTL_MS / 1000,
        took.as_secs_f64()
    );
}

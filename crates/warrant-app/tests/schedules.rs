//! Schedules under a simulated clock: two schedulers (two processes of a fleet) over one store
//! look at random moments, each process sometimes dying between a tick's claim and its run's
//! start; over a thousand seeds every tick runs exactly once and never before its time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use warrant_app::schedule::{START_GRACE_MS, Scheduler, Starter, ticks_between, time_zone};
use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::schedule::{CatchUp, Overlap, Schedule, TickState};
use warrant_core::status::RunStatus;
use warrant_core::store::Schedules;
use warrant_store::MemoryStore;

/// Runs as the store would hold them: the first start of a run id wins.
#[derive(Default)]
struct Runs {
    /// Run → (its tick, when it started).
    started: Mutex<BTreeMap<RunId, (u64, u64)>>,
    /// Runs not yet ended (overlap).
    live: Mutex<Vec<RunId>>,
    now: AtomicU64,
}

/// One process's starter: it may die in a start (the next start it is asked for never
/// returns, and the look is dropped).
struct Process {
    runs: Arc<Runs>,
    name: &'static str,
    ids: AtomicU64,
    die: AtomicBool,
}

impl Starter for Process {
    fn start<'a>(
        &'a self,
        _schedule: &'a Schedule,
        tick_ms: u64,
        run: RunId,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if self.die.swap(false, Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let now = self.runs.now.load(Ordering::SeqCst);
            assert!(
                tick_ms <= now,
                "the tick at {tick_ms} started early, at {now}"
            );
            let mut started = self.runs.started.lock().unwrap();
            if started.contains_key(&run) {
                return Err(format!("run {run} has started already"));
            }
            started.insert(run.clone(), (tick_ms, now));
            self.runs.live.lock().unwrap().push(run);
            Ok(())
        })
    }
    fn status<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Option<RunStatus>> {
        Box::pin(async move {
            // A store's read takes a while: another process's look may run meanwhile.
            tokio::task::yield_now().await;
            let started = self.runs.started.lock().unwrap().contains_key(run);
            let live = self.runs.live.lock().unwrap().contains(run);
            match (started, live) {
                (false, _) => None,
                (true, true) => Some(RunStatus::Running),
                (true, false) => Some(RunStatus::Attained),
            }
        })
    }
    fn cancel<'a>(&'a self, run: &'a RunId, _reason: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.runs.live.lock().unwrap().retain(|r| r != run);
        })
    }
    fn new_run_id(&self) -> RunId {
        RunId(format!(
            "{}-{}",
            self.name,
            self.ids.fetch_add(1, Ordering::SeqCst)
        ))
    }
}

/// A small deterministic generator (xorshift), one per seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const T0: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn every_five_minutes(overlap: Overlap) -> Schedule {
    Schedule {
        id: "every-5".into(),
        cron: "*/5 * * * *".parse().unwrap(),
        time_zone: "Europe/Berlin".into(),
        spec_id: "s".into(),
        spec_digest: None,
        inputs: serde_json::Map::new(),
        overlap,
        catch_up: CatchUp::All,
        tenant: "t".into(),
        user: "u".into(),
        paused: false,
        created_at_ms: T0,
        from_ms: T0,
    }
}

/// One simulated history: two processes looking at random moments, dying now and then, and
/// runs ending at random; returns the runs started and the last time looked at.
async fn history(seed: u64, overlap: Overlap) -> (Arc<Runs>, Arc<MemoryStore>, u64) {
    let store = Arc::new(MemoryStore::new());
    store
        .schedule_put(every_five_minutes(overlap))
        .await
        .unwrap();
    let runs = Arc::new(Runs::default());
    let processes: Vec<Arc<Process>> = ["a", "b"]
        .into_iter()
        .map(|name| {
            Arc::new(Process {
                runs: runs.clone(),
                name,
                ids: AtomicU64::new(0),
                die: AtomicBool::new(false),
            })
        })
        .collect();
    let schedulers: Vec<Scheduler> = processes
        .iter()
        .map(|p| Scheduler::new(store.clone(), p.clone()))
        .collect();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut now = T0;
    for _ in 0..60 {
        now += rng.below(7 * 60_000);
        runs.now.store(now, Ordering::SeqCst);
        // Runs end at random.
        runs.live.lock().unwrap().retain(|_| rng.below(3) != 0);
        let who = usize::try_from(rng.below(2)).unwrap();
        if rng.below(10) == 0 {
            processes[who].die.store(true, Ordering::SeqCst);
        }
        // Sometimes both look at once (their reads and claims interleave); a process that
        // dies in a start never finishes its look.
        let limit = std::time::Duration::from_millis(20);
        if rng.below(3) == 0 {
            let (a, b) = (schedulers[0].look(now), schedulers[1].look(now));
            let _ = tokio::join!(
                tokio::time::timeout(limit, a),
                tokio::time::timeout(limit, b)
            );
        } else {
            let _ = tokio::time::timeout(limit, schedulers[who].look(now)).await;
        }
        processes[who].die.store(false, Ordering::SeqCst);
    }
    // Every run ends; the processes go on looking (past the grace that lets one start what a
    // dead one claimed) until no tick waits for its turn.
    now += START_GRACE_MS + 60_000;
    for _ in 0..1000 {
        runs.live.lock().unwrap().clear();
        runs.now.store(now, Ordering::SeqCst);
        for s in &schedulers {
            s.look(now).await.unwrap();
        }
        let waiting = store
            .ticks(Some("every-5"), 0)
            .await
            .unwrap()
            .iter()
            .any(|t| t.state == TickState::Queued);
        if !waiting {
            break;
        }
        now += 1;
    }
    (runs, store, now)
}

// The clock is paused: a dead process's look is given up at once, not after real time.
#[tokio::test(start_paused = true)]
async fn over_a_thousand_seeds_every_tick_runs_once_and_never_early() {
    let tz = time_zone("Europe/Berlin").unwrap();
    let cron = every_five_minutes(Overlap::Skip).cron;
    for seed in 0..1000 {
        // Overlap `cancel`: every due tick starts a run, whatever is still going.
        let (runs, store, end) = history(seed, Overlap::Cancel).await;
        let want = ticks_between(&cron, &tz, T0 - 1, end, 100_000);
        let kept = store.ticks(Some("every-5"), 0).await.unwrap();
        let started = runs.started.lock().unwrap();
        let mut ticks: Vec<u64> = started.values().map(|(t, _)| *t).collect();
        ticks.sort_unstable();
        let n = ticks.len();
        ticks.dedup();
        assert_eq!(ticks.len(), n, "seed {seed}: a tick ran twice");
        assert_eq!(
            ticks, want,
            "seed {seed}: a tick was lost or one not due ran"
        );
        // The store says the same of each tick.
        assert_eq!(kept.len(), want.len(), "seed {seed}");
        assert!(
            kept.iter().all(|t| t.state == TickState::Started
                && t.run_id.as_ref().is_some_and(|r| started.contains_key(r))),
            "seed {seed}: {kept:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_tick_whose_previous_run_goes_on_is_skipped_or_queued_never_doubled() {
    let tz = time_zone("Europe/Berlin").unwrap();
    let cron = every_five_minutes(Overlap::Skip).cron;
    for seed in 0..200 {
        for overlap in [Overlap::Skip, Overlap::Queue] {
            let (runs, store, end) = history(seed, overlap).await;
            let want = ticks_between(&cron, &tz, T0 - 1, end, 100_000);
            let kept = store.ticks(Some("every-5"), 0).await.unwrap();
            // Every due tick is recorded once, as started, skipped or (queue) started late.
            let mut at: Vec<u64> = kept.iter().map(|t| t.at_ms).collect();
            at.sort_unstable();
            assert_eq!(at, want, "seed {seed} {overlap:?}");
            let started = runs.started.lock().unwrap();
            for t in &kept {
                match t.state {
                    TickState::Started => {
                        let run = t.run_id.as_ref().unwrap();
                        let (tick, _) = started[run];
                        assert_eq!(tick, t.at_ms, "seed {seed}");
                    }
                    TickState::Skipped => {
                        assert_eq!(overlap, Overlap::Skip, "seed {seed}: {t:?}");
                        assert!(t.run_id.is_none());
                    }
                    TickState::Queued => panic!("seed {seed}: {t:?} still queued at the end"),
                    TickState::Failed => panic!("seed {seed}: {t:?}"),
                }
            }
            // Each run started belongs to exactly one tick.
            assert_eq!(
                started.len(),
                kept.iter()
                    .filter(|t| t.state == TickState::Started)
                    .count(),
                "seed {seed} {overlap:?}"
            );
        }
    }
}

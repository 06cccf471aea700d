//! Timers: a run sleeps in the store until its time, wakes in whichever re-entry comes at or
//! after it (never before), once per timer, and its time asleep is not driving time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod common;

use std::sync::Arc;

use common::{script, spec};
use warrant_core::check::check_log;
use warrant_core::event::{Event, EventKind};
use warrant_core::ids::RunId;
use warrant_core::{Outcome, RunStatus};
use warrant_engine::replay::replay;
use warrant_engine::{Engine, RuleList, SequentialIds, Surfaces, TickingClock};
use warrant_store::MemoryStore;
use warrant_surfaces::demo::Bank;

const START_MS: u64 = 1_700_000_000_000;
const HOUR_MS: u64 = 3_600_000;

/// Pays once the bank opens: the step waits `step_wait` first (when given), and its decider
/// sleeps twice more on its way. Its deadline (a minute of driving) is far shorter than its
/// sleeps.
fn spec_text(step_wait: Option<u64>) -> String {
    let wait = step_wait.map_or(String::new(), |ms| format!("    wait: {{for_ms: {ms}}}\n"));
    format!(
        "
version: warrant/v1
id: later
objective: Pay 950 to DE89370400440532013000 once the bank opens.
providers:
  bank: {{reference: bank}}
steps:
  - id: pay
    provider: bank
    tools: [balance, transfer]
    commit: required
{wait}limits:
  deadline_ms: 60000
"
    )
}

fn script_text(first_ms: u64, until_ms: u64) -> String {
    format!(
        "steps:
  pay:
    - wait: {{for_ms: {first_ms}}}
    - call: balance
    - wait: {{until_ms: {until_ms}}}
    - call: transfer
      args: {{to: DE89370400440532013000, amount: 950}}
    - done: paid
"
    )
}

struct World {
    engine: Engine,
    store: Arc<MemoryStore>,
    clock: Arc<TickingClock>,
    bank: Arc<Bank>,
    surfaces: Surfaces,
    spec: String,
    script: String,
}

fn world(step_wait: Option<u64>, first_ms: u64, until_ms: u64) -> World {
    let spec_text = spec_text(step_wait);
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(TickingClock::new(START_MS, 1));
    let engine = Engine::new(store.clone())
        .with_clock(clock.clone())
        .with_ids(Arc::new(SequentialIds::new("tm")))
        .with_authority(Arc::new(RuleList::new([], [])));
    let bank = Arc::new(Bank::default());
    let mut catalog = warrant_surfaces::ReferenceCatalog::default();
    let b = bank.clone();
    catalog.register("bank", move || b.clone());
    let surfaces = catalog.surfaces(&spec(&spec_text)).unwrap();
    World {
        engine,
        store,
        clock,
        bank,
        surfaces,
        spec: spec_text,
        script: script_text(first_ms, until_ms),
    }
}

impl World {
    async fn start(&self) -> warrant_engine::RunResult {
        self.engine
            .run(spec(&self.spec), &script(&self.script), &self.surfaces)
            .await
            .unwrap()
    }
    async fn resume(&self, run: &RunId) -> warrant_engine::RunResult {
        self.engine
            .resume(run, &script(&self.script), &self.surfaces)
            .await
            .unwrap()
    }
    fn events(&self, run: &RunId) -> Vec<Arc<Event>> {
        self.store.events(run)
    }
}

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Every timer the log sets fires once, at or after its time, and nothing comes between a
/// timer and its firing but the re-entry that woke it.
fn timers_fired_once_and_never_early(events: &[Arc<Event>]) -> usize {
    let mut set = 0;
    let mut sleeping: Option<u64> = None;
    for e in events {
        match &e.kind {
            EventKind::TimerSet { until_ms, .. } => {
                assert!(sleeping.is_none(), "a timer set while one sleeps: {e:?}");
                sleeping = Some(*until_ms);
                set += 1;
            }
            EventKind::TimerFired { .. } => {
                let until = sleeping.take().expect("a timer fired that was never set");
                assert!(e.at_ms >= until, "woken early: {} < {until}", e.at_ms);
            }
            EventKind::RunResumed { .. } => {
                if let Some(until) = sleeping {
                    assert!(e.at_ms >= until, "re-entered before its time: {e:?}");
                }
            }
            other => assert!(
                sleeping.is_none(),
                "`{}` recorded while the run slept",
                other.name()
            ),
        }
    }
    assert!(sleeping.is_none(), "a timer never fired");
    set
}

#[tokio::test]
async fn a_thousand_seeds_wake_every_timer_once_and_never_early() {
    for seed in 1..=1000_u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let step_wait = (rng.below(3) == 0).then(|| rng.below(2 * HOUR_MS));
        // Some waits are no wait at all; an `until` may already have passed when it is asked.
        let first = match rng.below(4) {
            0 => 0,
            _ => rng.below(3 * HOUR_MS),
        };
        let until = START_MS + rng.below(8 * HOUR_MS);
        let w = world(step_wait, first, until);
        let mut r = w.start().await;
        let run = r.run_id.clone();
        let mut looks = 0;
        while r.outcome.is_none() {
            looks += 1;
            assert!(looks < 400, "seed {seed}: the run never ended");
            assert_eq!(r.state.status(), RunStatus::Sleeping, "seed {seed}");
            let wake = r.state.sleeping_until().unwrap();
            // A look at a random time, early or late: an early one records nothing.
            w.clock.advance(rng.below(HOUR_MS));
            let before = w.events(&run).len();
            let now = w.clock.peek();
            r = w.resume(&run).await;
            if now < wake {
                assert_eq!(
                    w.events(&run).len(),
                    before,
                    "seed {seed}: a look before the run's time recorded something"
                );
            }
        }
        assert_eq!(r.outcome, Some(Outcome::Attained), "seed {seed}");
        let events = w.events(&run);
        let timers = timers_fired_once_and_never_early(&events);
        assert_eq!(timers, 2 + usize::from(step_wait.is_some()), "seed {seed}");
        assert_eq!(w.bank.transfers().len(), 1, "seed {seed}: paid once");
        // Hours asleep, and a minute's deadline: sleeping is not driving.
        let end = events.last().unwrap().at_ms;
        assert!(r.state.driven_ms(end) < 60_000, "seed {seed}");
        check_log(events.iter().map(|e| &**e)).unwrap();
        let replayed = replay(&events).await.unwrap();
        assert_eq!(
            (replayed.error, replayed.divergence),
            (None, None),
            "seed {seed}"
        );
    }
}

#[tokio::test]
async fn a_wait_past_the_longest_ends_the_step_as_the_deciders_fault() {
    let w = world(None, 0, START_MS + 400 * 24 * HOUR_MS);
    let mut r = w.start().await;
    while r.outcome.is_none() {
        w.clock.advance(HOUR_MS);
        r = w.resume(&r.run_id).await;
    }
    let Some(Outcome::NotAttained { missing }) = &r.outcome else {
        panic!("{:?}", r.outcome);
    };
    let fault = &missing[0].fault;
    assert_eq!(fault.code.as_str(), "invalid_wait", "{fault:?}");
    assert_eq!(fault.layer, warrant_core::Layer::Model);
    assert!(w.bank.transfers().is_empty());
}

#[test]
fn a_script_or_a_spec_with_a_malformed_wait_is_refused_where_it_says_so() {
    let bad = warrant_deciders::Script::parse(
        "steps:\n  pay:\n    - wait: {for: soon}\n",
        warrant_core::spec::Format::Yaml,
        "script.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("soon") && bad.contains("duration"), "{bad}");
    let two = warrant_deciders::Script::parse(
        "steps:\n  pay:\n    - wait: {for: 1s}\n      done: x\n",
        warrant_core::spec::Format::Yaml,
        "script.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(two.contains("steps.pay[0]"), "{two}");
    let spec_err = warrant_core::validate::load(
        &spec_text(None).replace(
            "    commit: required\n",
            "    commit: required\n    wait: {until: tomorrow}\n",
        ),
        warrant_core::spec::Format::Yaml,
        "spec.yaml",
        &warrant_surfaces::ReferenceCatalog::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        spec_err.contains("tomorrow") && spec_err.contains("RFC 3339"),
        "{spec_err}"
    );
}

#[tokio::test]
async fn a_sleeping_run_cancelled_ends_at_its_next_look_without_waiting_for_its_time() {
    let w = world(None, 5 * HOUR_MS, START_MS);
    let r = w.start().await;
    assert_eq!(r.state.status(), RunStatus::Sleeping);
    w.engine
        .cancel(&r.run_id, "ops", "not this month")
        .await
        .unwrap();
    // Hours before its time: the look ends it, cancelled, its timer never fired.
    let r = w.resume(&r.run_id).await;
    assert!(
        matches!(r.outcome, Some(Outcome::Cancelled { .. })),
        "{:?}",
        r.outcome
    );
    assert!(w.bank.transfers().is_empty());
    let events = w.events(&r.run_id);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimerFired { .. }))
    );
    check_log(events.iter().map(|e| &**e)).unwrap();
    let replayed = replay(&events).await.unwrap();
    assert_eq!((replayed.error, replayed.divergence), (None, None));
}

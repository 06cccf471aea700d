//! The crash tests' world: runs that write one entry to each of two ledger files outside
//! Warrant's store (one provider accepts idempotency keys, one does not), and the judgement
//! of the ledgers against the runs' logs: no effect repeated, none lost.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]
#![allow(dead_code, reason = "each test file uses part of it")]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use warrant_core::check::check_log;
use warrant_core::event::{CallStatus, Effect, Event, EventKind};
use warrant_surfaces::ledger::Ledger;

/// A small seeded generator (xorshift), so a failing seed replays the same faults.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The ledger files.
pub const FILES: [&str; 2] = ["keyed.jsonl", "plain.jsonl"];

/// The spec, its ledgers in `dir`.
pub fn spec(dir: &Path) -> String {
    format!(
        "version: warrant/v1
id: ledger-crash
objective: Write one entry to each ledger.
decider: scripted:script.yaml
providers:
  keyed: {{reference: ledger, config: {{file: {keyed}, keys: true}}}}
  plain: {{reference: ledger, config: {{file: {plain}, keys: false}}}}
steps:
  - id: first
    provider: keyed
    tools: [count_entries, append_entry]
    commit: required
  - id: second
    provider: plain
    tools: [count_entries, append_entry]
    after: [first]
    commit: required
",
        keyed = dir.join(FILES[0]).display(),
        plain = dir.join(FILES[1]).display(),
    )
}

/// The script the spec's decider follows.
pub const SCRIPT: &str = "steps:
  first:
    - call: count_entries
    - call: append_entry
      args: {entry: one}
    - done: written
  second:
    - call: count_entries
    - call: append_entry
      args: {entry: two}
    - done: written
";

/// Writes the spec and the script into `dir`.
pub fn write(dir: &Path) {
    std::fs::write(dir.join("spec.yaml"), spec(dir)).unwrap();
    std::fs::write(dir.join("script.yaml"), SCRIPT).unwrap();
}

/// Whether an effect with this idempotency key is in a ledger of `dir`.
pub fn happened(dir: &Path, key: &str) -> bool {
    FILES.iter().any(|f| {
        Ledger::read(&dir.join(f))
            .unwrap()
            .iter()
            .any(|e| e.key == key)
    })
}

/// The in-doubt calls of a run's log, each with whether the ledgers show it happened: what
/// an operator who looked would reconcile.
pub fn in_doubt(dir: &Path, events: &[Arc<Event>]) -> Vec<(String, bool)> {
    let state = warrant_core::RunState::from_events(events.iter().map(|e| &**e)).unwrap();
    state
        .in_doubt()
        .map(|c| {
            let key = c.idempotency_key.clone().unwrap_or_default();
            (c.id.to_string(), happened(dir, &key))
        })
        .collect()
}

/// Each run of `store` whose status `keep` accepts: its id, status and log.
pub async fn logs(
    store: &dyn warrant_core::ports::EventStore,
    keep: impl Fn(&str) -> bool,
) -> Vec<(String, String, Vec<Arc<Event>>)> {
    let runs = store
        .runs(warrant_core::ports::RunQuery::default())
        .await
        .unwrap()
        .runs;
    let mut out = Vec::new();
    for r in runs.into_iter().filter(|r| keep(r.status.name())) {
        let events = store
            .read(&r.run_id, 1)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.event)
            .collect();
        out.push((r.run_id.0, r.status.name().to_owned(), events));
    }
    out
}

/// Judges the ledgers of `dir` against every run's log (`(run, status, events)`): each log
/// is consistent and ended; no effect is in a ledger twice; every effect has its intent in a
/// log and a result there (or was in doubt, for a reconciliation); every call recorded as
/// done is in a ledger. Panics naming what is wrong (with `label`); returns the effects.
pub fn judge(dir: &Path, logs: &[(String, String, Vec<Arc<Event>>)], label: &str) -> usize {
    let mut by_key: HashMap<String, (String, Option<CallStatus>, bool)> = HashMap::new();
    for (run, status, events) in logs {
        let state = check_log(events.iter().map(|e| &**e))
            .unwrap_or_else(|e| panic!("{label}: run {run}: {e}"));
        assert!(
            state.outcome().is_some(),
            "{label}: run {run} is stuck ({status})"
        );
        for c in state.calls() {
            if let Some(key) = &c.idempotency_key {
                let doubted = events.iter().any(
                    |e| matches!(&e.kind, EventKind::CallInDoubt { call, .. } if *call == c.id),
                );
                by_key.insert(key.clone(), (run.clone(), c.status, doubted));
            }
        }
    }
    let mut effects = 0;
    for file in FILES {
        let entries = Ledger::read(&dir.join(file)).unwrap();
        effects += entries.len();
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for e in &entries {
            *seen.entry(&e.key).or_default() += 1;
            let (run, status, doubted) = by_key
                .get(&e.key)
                .unwrap_or_else(|| panic!("{label}: effect {e:?} has no intent in any log"));
            assert!(
                *status == Some(CallStatus::Ok) || *doubted,
                "{label}: effect {e:?} of run {run} is lost: the call ended {status:?}"
            );
        }
        let duplicates: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            duplicates.is_empty(),
            "{label}: duplicated effects in {file}: {duplicates:?}"
        );
    }
    for (key, (run, status, _)) in &by_key {
        if *status == Some(CallStatus::Ok) && is_commit(logs, key) {
            assert!(
                happened(dir, key),
                "{label}: run {run} recorded an append that the ledger never saw"
            );
        }
    }
    effects
}

fn is_commit(logs: &[(String, String, Vec<Arc<Event>>)], key: &str) -> bool {
    logs.iter()
        .flat_map(|(_, _, events)| events.iter())
        .any(|e| {
            matches!(&e.kind, EventKind::CallDispatched { idempotency_key, effect, .. }
            if idempotency_key == key && *effect == Effect::Commit)
        })
}

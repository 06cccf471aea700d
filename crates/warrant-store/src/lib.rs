//! Store implementations behind [`warrant_core::ports::EventStore`]: memory (tests, the
//! benchmark's memory mode) and SQLite (the embedded default: one file, WAL, group commit on a
//! dedicated writer thread).

pub mod memory;
pub mod sqlite;

pub use memory::MemoryStore;
pub use sqlite::{Durability, SqliteStore};

use warrant_core::event::{Event, EventKind};

/// What the runs table needs to know from a batch of events.
pub(crate) struct RunFacts {
    pub(crate) started: Option<(String, String, u64)>,
    pub(crate) status: Option<String>,
}

pub(crate) fn run_facts(events: &[std::sync::Arc<Event>]) -> RunFacts {
    let mut facts = RunFacts {
        started: None,
        status: None,
    };
    for e in events {
        match &e.kind {
            EventKind::RunStarted { spec, decider, .. } => {
                facts.started = Some((spec.id.clone(), decider.to_string(), e.at_ms));
            }
            EventKind::RunFinished { outcome } => facts.status = Some(outcome.name().to_owned()),
            // The run waits for a person: an effect in doubt, a call held for approval.
            EventKind::CallInDoubt { .. } | EventKind::ApprovalRequested { .. } => {
                facts.status = Some("waiting".to_owned())
            }
            // A person's answer: the run can go on once a process resumes it.
            EventKind::CallReconciled { .. } | EventKind::ApprovalResolved { .. } => {
                facts.status = Some("ready".to_owned())
            }
            // A process carrying the run on.
            EventKind::ApprovalExpired { .. } | EventKind::RunResumed { .. } => {
                facts.status = Some("running".to_owned())
            }
            _ => {}
        }
    }
    facts
}

/// Who holds a run's lease after an append that leaves it in `status`: nobody once it waits
/// for a person or has ended; the driver that appended, while it runs; unchanged when an
/// operator's input (no driver) lets it go on.
pub(crate) fn lease_after(
    status: &str,
    driver: Option<&warrant_core::ports::Driver>,
    before: Option<(String, u64)>,
) -> Option<(String, u64)> {
    if status != "running" {
        return None;
    }
    match driver {
        Some(d) => Some((d.holder.to_string(), d.now_ms)),
        None => before,
    }
}

/// Checks that `events` continue a run at `expected`: sequences `expected + 1, + 2, ...`.
pub(crate) fn check_contiguous(
    events: &[std::sync::Arc<Event>],
    expected: u64,
) -> Result<(), String> {
    for (i, e) in events.iter().enumerate() {
        let want = expected + 1 + i as u64;
        if e.seq != want {
            return Err(format!(
                "event at index {i} has sequence {}, expected {want}",
                e.seq
            ));
        }
    }
    Ok(())
}

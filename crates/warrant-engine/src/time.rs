//! Clocks and id generators: the system ones for production, fixed ones for tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use warrant_core::event::{CallStatus, Event, EventKind, Outcome};
use warrant_core::ids::RunId;
use warrant_core::ports::{CancelRequest, Clock, IdGen};

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[expect(
        clippy::disallowed_methods,
        reason = "the one place that reads the system clock"
    )]
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that always says the same time.
#[derive(Clone, Copy, Debug)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    fn now_ms(&self) -> u64 {
        self.0
    }
}

/// A clock that moves forward by `step_ms` each time it is read, and can be advanced by hand.
#[derive(Debug)]
pub struct TickingClock {
    now: AtomicU64,
    step_ms: u64,
}

impl TickingClock {
    /// Starts at `start_ms`.
    pub fn new(start_ms: u64, step_ms: u64) -> TickingClock {
        TickingClock {
            now: AtomicU64::new(start_ms),
            step_ms,
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// The time it shows, without moving it.
    pub fn peek(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

impl Clock for TickingClock {
    fn now_ms(&self) -> u64 {
        self.now.fetch_add(self.step_ms, Ordering::SeqCst)
    }
}

/// Run ids `<prefix>-1`, `<prefix>-2`, ...
#[derive(Debug)]
pub struct SequentialIds {
    prefix: String,
    next: AtomicU64,
}

impl SequentialIds {
    /// Ids starting at `<prefix>-1`.
    pub fn new(prefix: &str) -> SequentialIds {
        SequentialIds {
            prefix: prefix.to_owned(),
            next: AtomicU64::new(1),
        }
    }
}

impl IdGen for SequentialIds {
    fn run_id(&self) -> RunId {
        RunId(format!(
            "{}-{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::SeqCst)
        ))
    }
}

/// Unique, time-ordered run ids: `r` + 12 hex digits of milliseconds + 8 of a tail that no
/// two ids of one process share (a counter of the whole process, mixed bijectively with a
/// random salt of the process), so engines, servers and workers made at the same moment never
/// hand out the same id, and processes of a fleet almost never do within one millisecond.
pub struct TimeOrderedIds {
    clock: Arc<dyn Clock>,
}

impl Default for TimeOrderedIds {
    fn default() -> Self {
        TimeOrderedIds {
            clock: Arc::new(SystemClock),
        }
    }
}

/// The process's random salt (std's hasher keys come from the operating system's
/// randomness).
fn process_salt() -> u32 {
    static SALT: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *SALT.get_or_init(|| {
        use std::hash::BuildHasher as _;
        let mixed = std::collections::hash_map::RandomState::new()
            .hash_one((std::process::id(), SystemClock.now_ms()));
        let folded = mixed ^ (mixed >> 32);
        u32::try_from(folded & u64::from(u32::MAX)).unwrap_or_default()
    })
}

/// A bijection of 32-bit numbers that scatters neighbours (MurmurHash3's finaliser).
fn scatter(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

impl IdGen for TimeOrderedIds {
    fn run_id(&self) -> RunId {
        static ISSUED: AtomicU32 = AtomicU32::new(0);
        let n = ISSUED.fetch_add(1, Ordering::Relaxed);
        RunId(format!(
            "r{:012x}{:08x}",
            self.clock.now_ms(),
            scatter(process_salt().wrapping_add(n))
        ))
    }
}

/// Where a run's timestamps come from: the clock, or a recorded log (replay).
pub(crate) enum TimeSource {
    Live(Arc<dyn Clock>),
    Replay(Vec<u64>, std::collections::HashMap<u64, CancelRequest>),
}

impl TimeSource {
    /// The timestamp of the event with sequence `seq`. Each event reads the clock once.
    pub(crate) fn stamp(&self, seq: u64) -> u64 {
        match self {
            TimeSource::Live(clock) => clock.now_ms(),
            TimeSource::Replay(times, _) => {
                let i = usize::try_from(seq).unwrap_or(usize::MAX).saturating_sub(1);
                times.get(i).or(times.last()).copied().unwrap_or(0)
            }
        }
    }

    /// The time now, for bounding waits; `None` when replaying (nothing is waited for).
    pub(crate) fn peek(&self) -> Option<u64> {
        match self {
            TimeSource::Live(clock) => Some(clock.now_ms()),
            TimeSource::Replay(..) => None,
        }
    }

    pub(crate) fn replaying(events: &[Arc<Event>]) -> TimeSource {
        let mut cancels = std::collections::HashMap::new();
        for (i, e) in events.iter().enumerate() {
            let (by, reason, close) = match &e.kind {
                EventKind::RunFinished {
                    outcome: Outcome::Cancelled { by, reason },
                } => (by, reason, false),
                EventKind::RunFinished {
                    outcome: Outcome::Closed { by, reason },
                } => (by, reason, true),
                _ => continue,
            };
            {
                let request = CancelRequest {
                    by: by.clone(),
                    reason: reason.clone(),
                    close,
                };
                cancels.insert(e.seq, request.clone());
                // A held call the cancellation ended just before the run: same moment.
                let held = events.iter().take(i).rev().take_while(|e| {
                    matches!(
                        e.kind,
                        EventKind::CallFinished {
                            status: CallStatus::Cancelled,
                            ..
                        }
                    )
                });
                for e in held {
                    cancels.insert(e.seq, request.clone());
                }
            }
        }
        TimeSource::Replay(events.iter().map(|e| e.at_ms).collect(), cancels)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn generators_made_at_the_same_moment_never_share_an_id() {
        // Two generators, as two engines of one process (a server's requests, a bench's
        // workers) make them, used in the same millisecond.
        let (a, b) = (TimeOrderedIds::default(), TimeOrderedIds::default());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50_000 {
            assert!(seen.insert(a.run_id()));
            assert!(seen.insert(b.run_id()));
        }
        // The scatter is a bijection: no two counters give one tail.
        let tails: std::collections::HashSet<u32> = (0..100_000u32).map(scatter).collect();
        assert_eq!(tails.len(), 100_000);
    }
}

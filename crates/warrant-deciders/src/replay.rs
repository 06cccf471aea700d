//! The replay decider: returns a recorded log's decisions in order; never decides anything new.

use std::sync::Mutex;

use warrant_core::event::{DeciderIdentity, Event, EventKind};
use warrant_core::ports::{BoxFuture, DecideError, Decided, Decider};
use warrant_core::projection::Projection;

/// Replays the `decided` events of a log.
pub struct ReplayDecider {
    identity: DeciderIdentity,
    decisions: Vec<Result<Decided, DecideError>>,
    next: Mutex<usize>,
}

impl ReplayDecider {
    /// A decider answering with the decisions (and decide failures) recorded in `events`,
    /// presenting the recorded decider's identity.
    pub fn from_log<'a>(events: impl IntoIterator<Item = &'a Event>) -> ReplayDecider {
        let mut identity = DeciderIdentity {
            kind: "replay".into(),
            name: String::new(),
            digest: None,
        };
        let mut decisions = Vec::new();
        for e in events {
            match &e.kind {
                EventKind::RunStarted { decider, .. } => identity = decider.clone(),
                EventKind::Decided {
                    decision, usage, ..
                } => {
                    decisions.push(Ok(Decided {
                        decision: decision.clone(),
                        usage: usage.clone(),
                    }));
                }
                EventKind::DecideFailed { fault, .. } => {
                    decisions.push(Err(DecideError {
                        code: fault.code.clone(),
                        message: fault.message.clone(),
                    }));
                }
                _ => {}
            }
        }
        ReplayDecider {
            identity,
            decisions,
            next: Mutex::new(0),
        }
    }
}

impl Decider for ReplayDecider {
    fn identity(&self) -> DeciderIdentity {
        self.identity.clone()
    }

    fn decide(&self, _projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let result = self.decisions.get(*next).cloned().unwrap_or_else(|| {
            Err(DecideError {
                code: "replay_diverged".into(),
                message: format!(
                    "the engine asked for decision {}, but the log records only {}",
                    *next + 1,
                    self.decisions.len()
                ),
            })
        });
        *next += 1;
        Box::pin(std::future::ready(result))
    }
}

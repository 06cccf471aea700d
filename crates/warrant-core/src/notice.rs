//! Notices: what a run tells the people who look after it (an approval is asked, a run waits,
//! a call's effect is in doubt, a run ended), kept in an outbox the store writes in the same
//! transaction as the event that caused it. A crash so neither loses a notice (the event is
//! durable, so is its notice) nor invents one (an append that failed wrote neither). Whichever
//! process has webhooks configured delivers them, at least once (`warrant_app::webhooks`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::event::{Event, EventKind};
use crate::ids::RunId;

/// What a notice tells of. The wire names are the webhook's `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoticeKind {
    /// A call waits for a person's approval (`approval_requested`).
    ApprovalRequested,
    /// An approval request was answered or expired (`approval_resolved` that completes it,
    /// `approval_expired`).
    ApprovalResolved,
    /// An approval request nobody answered expires soon (made by the process that delivers,
    /// from the pending approvals, once per request).
    ApprovalExpiring,
    /// The run waits for a person: one per append that leaves it waiting (an approval, a call
    /// in doubt, a child that waits).
    RunWaiting,
    /// The run ended (`run_finished`).
    RunFinished,
    /// A call's effect is not known: its answer was lost (`call_in_doubt`).
    CallInDoubt,
}

impl NoticeKind {
    /// Every kind, in the order a person reads them.
    pub const ALL: [NoticeKind; 6] = [
        NoticeKind::ApprovalRequested,
        NoticeKind::ApprovalResolved,
        NoticeKind::ApprovalExpiring,
        NoticeKind::RunWaiting,
        NoticeKind::RunFinished,
        NoticeKind::CallInDoubt,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            NoticeKind::ApprovalRequested => "approval.requested",
            NoticeKind::ApprovalResolved => "approval.resolved",
            NoticeKind::ApprovalExpiring => "approval.expiring",
            NoticeKind::RunWaiting => "run.waiting",
            NoticeKind::RunFinished => "run.finished",
            NoticeKind::CallInDoubt => "call.in_doubt",
        }
    }

    /// The kind an event gives on its own, if any (`run.waiting` is the append's, and
    /// `approval.expiring` the deliverer's).
    pub fn of_event(kind: &EventKind) -> Option<NoticeKind> {
        match kind {
            EventKind::ApprovalRequested { .. } => Some(NoticeKind::ApprovalRequested),
            // One of several approvers approving leaves the request waiting for the others.
            EventKind::ApprovalResolved { awaiting, .. } if *awaiting > 0 => None,
            EventKind::ApprovalResolved { .. } | EventKind::ApprovalExpired { .. } => {
                Some(NoticeKind::ApprovalResolved)
            }
            EventKind::RunFinished { .. } => Some(NoticeKind::RunFinished),
            EventKind::CallInDoubt { .. } => Some(NoticeKind::CallInDoubt),
            _ => None,
        }
    }
}

impl fmt::Display for NoticeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NoticeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<NoticeKind, String> {
        NoticeKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = NoticeKind::ALL.iter().map(|k| k.name()).collect();
                format!("no notice `{s}` (known: {})", known.join(", "))
            })
    }
}

/// Where a notice's delivery stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoticeState {
    /// Not yet delivered to every endpoint that wants it: tried again when due.
    #[default]
    Pending,
    /// Every endpoint that wants it took it.
    Delivered,
    /// Given up: its attempts ran out, or it was too old when first taken (a store whose
    /// notices nobody delivered for a while does not flood a receiver configured later).
    Failed,
}

impl NoticeState {
    /// Every state.
    pub const ALL: [NoticeState; 3] = [
        NoticeState::Pending,
        NoticeState::Delivered,
        NoticeState::Failed,
    ];

    /// The name a store keeps and a listing shows.
    pub fn name(self) -> &'static str {
        match self {
            NoticeState::Pending => "pending",
            NoticeState::Delivered => "delivered",
            NoticeState::Failed => "failed",
        }
    }
}

impl fmt::Display for NoticeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NoticeState {
    type Err = String;
    fn from_str(s: &str) -> Result<NoticeState, String> {
        NoticeState::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("no delivery state `{s}` (pending, delivered or failed)"))
    }
}

/// A notice in the outbox, and what became of its delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// `<run>/<seq>/<kind>`: unique in the store, and the idempotency id a receiver dedupes
    /// on (the same notice delivered twice carries the same id).
    pub id: String,
    /// The run.
    pub run_id: RunId,
    /// The sequence of the event it tells of (for `approval.expiring`, the request's).
    pub seq: u64,
    /// What it tells of.
    pub kind: NoticeKind,
    /// When that happened (ms since the epoch).
    pub at_ms: u64,
    /// Where its delivery stands.
    pub state: NoticeState,
    /// Deliveries tried.
    pub attempts: u32,
    /// Not tried again before this time (ms since the epoch): a retry's backoff, or the lease
    /// of the process delivering it now.
    pub next_at_ms: u64,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// The endpoints that took it (each is sent it once it took it, however often it is
    /// retried for the others).
    pub delivered_to: Vec<String>,
    /// When it was delivered or given up (ms since the epoch).
    pub settled_at_ms: Option<u64>,
}

impl Notice {
    /// A pending notice of `kind` about event `seq` of `run`, due at once.
    pub fn new(run: &RunId, seq: u64, kind: NoticeKind, at_ms: u64) -> Notice {
        Notice {
            id: format!("{run}/{seq}/{}", kind.name()),
            run_id: run.clone(),
            seq,
            kind,
            at_ms,
            state: NoticeState::Pending,
            attempts: 0,
            next_at_ms: at_ms,
            last_error: None,
            delivered_to: Vec::new(),
            settled_at_ms: None,
        }
    }
}

/// The notices an append of `events` to `run` makes: one per event that tells of something,
/// and one `run.waiting` (at the first event that made it wait) when the append leaves the run
/// waiting. A request a standing grant answered in the same append is told of by neither.
pub fn notices_of(run: &RunId, events: &[Arc<Event>]) -> Vec<Notice> {
    let granted: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalGranted { request, .. } => Some(request.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut waiting_at = None;
    let mut status = None;
    for e in events {
        let answered_at_once = matches!(
            &e.kind,
            EventKind::ApprovalRequested { request, .. } if granted.contains(&request.as_str())
        );
        if let Some(kind) = NoticeKind::of_event(&e.kind)
            && !answered_at_once
        {
            out.push(Notice::new(run, e.seq, kind, e.at_ms));
        }
        if let Some(s) = crate::fold::status_after(&e.kind) {
            if s == crate::status::RunStatus::Waiting && waiting_at.is_none() {
                waiting_at = Some((e.seq, e.at_ms));
            }
            status = Some(s);
        }
    }
    if let (Some(crate::status::RunStatus::Waiting), Some((seq, at_ms))) = (status, waiting_at) {
        out.push(Notice::new(run, seq, NoticeKind::RunWaiting, at_ms));
    }
    out
}

/// How long a settled notice stays in the outbox before a deliverer purges it: a week.
pub const KEPT_MS: u64 = 7 * 24 * 3_600_000;

/// Which notices a listing asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoticeQuery {
    /// In this state only.
    pub state: Option<NoticeState>,
    /// Of this run only.
    pub run: Option<RunId>,
    /// At most this many, newest first (0: no limit).
    pub limit: usize,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::event::Outcome;

    #[test]
    fn names_parse_back_and_an_unknown_name_lists_the_known_ones() {
        for k in NoticeKind::ALL {
            assert_eq!(k.name().parse::<NoticeKind>().unwrap(), k);
        }
        for s in NoticeState::ALL {
            assert_eq!(s.name().parse::<NoticeState>().unwrap(), s);
        }
        let err = "run.started".parse::<NoticeKind>().unwrap_err();
        assert!(err.contains("run.finished"), "{err}");
    }

    #[test]
    fn an_end_makes_one_notice_with_an_id_of_run_sequence_and_kind() {
        let run = RunId("r7".into());
        let end = Arc::new(Event {
            seq: 9,
            at_ms: 1_000,
            kind: EventKind::RunFinished {
                outcome: Outcome::Attained,
            },
        });
        let n = notices_of(&run, &[end]);
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].id, "r7/9/run.finished");
        assert_eq!(n[0].state, NoticeState::Pending);
        assert_eq!(n[0].next_at_ms, 1_000);
    }
}

//! Store implementations behind [`warrant_core::store::EventStore`]: memory (tests, the
//! benchmark's memory mode) and SQLite (the embedded default: one file, WAL, group commit on a
//! dedicated writer thread, reads on tokio's blocking pool).

#[cfg(feature = "contract")]
pub mod contract;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sqlite;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use sqlite::{Durability, SqliteStore};

use warrant_core::event::{Event, EventKind};

/// The answer to an append handed to a store's writer: an error if it could not be handed
/// over (`sent` false) or the writer stopped before answering, else the writer's reply.
pub(crate) fn writer_reply<T: Send + 'static>(
    sent: bool,
    reply: tokio::sync::oneshot::Receiver<Result<T, warrant_core::store::StoreError>>,
) -> warrant_core::ports::BoxFuture<'static, Result<T, warrant_core::store::StoreError>> {
    use warrant_core::store::StoreError;
    Box::pin(async move {
        if !sent {
            return Err(StoreError::Io("the store writer has stopped".into()));
        }
        reply.await.unwrap_or_else(|_| {
            Err(StoreError::Io(
                "the store writer stopped before committing".into(),
            ))
        })
    })
}

/// Whether `s` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A store URL as it may be shown: its password, if any, hidden.
pub fn url_without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// What the runs table keeps of a run's `run_started`.
#[derive(Clone)]
pub(crate) struct Started {
    pub(crate) spec_id: String,
    pub(crate) decider: String,
    pub(crate) at_ms: u64,
    /// The principal's tenant, when it recorded one (the PostgreSQL store keeps it, for fair
    /// share).
    #[cfg_attr(
        not(feature = "postgres"),
        allow(dead_code, reason = "only the PostgreSQL store keeps the tenant")
    )]
    pub(crate) tenant: Option<String>,
}

/// What the runs table and the approvals index need to know from a batch of events.
pub(crate) struct RunFacts {
    /// From `run_started`, when the batch holds it.
    pub(crate) started: Option<Started>,
    pub(crate) status: Option<String>,
    /// Changes to the run's pending approvals, in order.
    pub(crate) approvals: Vec<ApprovalChange>,
}

/// A change to the index of pending approvals.
pub(crate) enum ApprovalChange {
    /// A request was made.
    Asked(Box<warrant_core::store::PendingApproval>),
    /// A request was answered, expired or used.
    Settled(String),
    /// The run ended: none of its requests is pending any more.
    Ended,
}

pub(crate) fn run_facts(
    run: &warrant_core::ids::RunId,
    events: &[std::sync::Arc<Event>],
) -> RunFacts {
    let mut facts = RunFacts {
        started: None,
        status: None,
        approvals: Vec::new(),
    };
    for e in events {
        match &e.kind {
            EventKind::ApprovalRequested { .. } => {
                if let Some(asked) = warrant_core::store::PendingApproval::asked(run, e) {
                    facts.approvals.push(ApprovalChange::Asked(Box::new(asked)));
                }
            }
            EventKind::ApprovalResolved { request, .. }
            | EventKind::ApprovalExpired { request }
            | EventKind::ApprovalConsumed { request, .. } => {
                facts
                    .approvals
                    .push(ApprovalChange::Settled(request.clone()));
            }
            EventKind::RunStarted {
                spec,
                decider,
                principal,
                ..
            } => {
                facts.started = Some(Started {
                    spec_id: spec.id.clone(),
                    decider: decider.to_string(),
                    at_ms: e.at_ms,
                    tenant: principal.as_ref().map(|p| p.tenant.clone()),
                });
            }
            EventKind::RunFinished { .. } => facts.approvals.push(ApprovalChange::Ended),
            _ => {}
        }
        // The one derivation every reader shares (`warrant_core::fold::status_after`).
        if let Some(status) = warrant_core::fold::status_after(&e.kind) {
            facts.status = Some(status.to_owned());
        }
    }
    facts
}

/// Who holds a run's lease after an append that leaves it in `status`: nobody once it waits
/// for a person or has ended; the driver that appended, while it runs; unchanged when an
/// operator's input (no driver) lets it go on. Updated in place: a holder that stays is not
/// copied again.
pub(crate) fn renew_lease(
    status: &str,
    driver: Option<&warrant_core::ports::Driver>,
    holder: &mut Option<String>,
    heartbeat_ms: &mut Option<u64>,
) {
    match driver {
        _ if status != "running" => {
            *holder = None;
            *heartbeat_ms = None;
        }
        Some(d) => {
            if holder.as_deref() != Some(&*d.holder) {
                *holder = Some(d.holder.to_string());
            }
            *heartbeat_ms = Some(d.now_ms);
        }
        None => {}
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

/// Whether a run with this status has ended.
pub(crate) fn ended(status: &str) -> bool {
    !matches!(status, "running" | "waiting" | "ready")
}

/// The page of `all` that `query` asks for; `all` is in listing order (newest first, runs
/// started in the same millisecond in the reverse of the order they were recorded), and
/// `listed_after_cursor` says whether a run comes after the query's cursor in that order.
pub(crate) fn page(
    all: Vec<warrant_core::store::RunSummary>,
    query: &warrant_core::store::RunQuery,
    listed_after_cursor: impl Fn(&warrant_core::store::RunSummary) -> bool,
) -> warrant_core::store::RunPage {
    let matching = all
        .into_iter()
        .filter(|r| query.status.as_ref().is_none_or(|s| r.status == *s))
        .filter(|r| query.spec_id.as_ref().is_none_or(|s| r.spec_id == *s))
        .filter(|r| {
            query
                .id_prefix
                .as_ref()
                .is_none_or(|p| r.run_id.0.starts_with(p.as_str()))
        })
        .filter(|r| query.since_ms.is_none_or(|t| r.started_at_ms >= t));
    let mut runs: Vec<warrant_core::store::RunSummary> = matching
        .filter(|r| query.after.is_none() || listed_after_cursor(r))
        .collect();
    let next = if query.limit > 0 && runs.len() > query.limit {
        runs.truncate(query.limit);
        runs.last().map(|r| warrant_core::store::RunCursor {
            started_at_ms: r.started_at_ms,
            run_id: r.run_id.clone(),
        })
    } else {
        None
    };
    warrant_core::store::RunPage { runs, next }
}

/// What a follower of one run has fetched and not yet given, and where it goes on from: the
/// part of an `EventFeed` every store shares (how it fetches and waits is the store's).
pub(crate) struct Followed {
    pub(crate) run: warrant_core::ids::RunId,
    /// The next sequence to fetch.
    pub(crate) next: u64,
    queue: std::collections::VecDeque<warrant_core::event::StoredEvent>,
    done: bool,
}

/// What a follower does next.
pub(crate) enum FollowStep {
    /// Give this event.
    Give(warrant_core::event::StoredEvent),
    /// The run's last event was given: the feed ends.
    End,
    /// Fetch from `next` (and wait when nothing is new).
    Fetch,
}

impl Followed {
    pub(crate) fn new(run: &warrant_core::ids::RunId, from_seq: u64) -> Followed {
        Followed {
            run: run.clone(),
            next: from_seq.max(1),
            queue: std::collections::VecDeque::new(),
            done: false,
        }
    }

    pub(crate) fn step(&mut self) -> FollowStep {
        if let Some(e) = self.queue.pop_front() {
            self.next = e.event.seq + 1;
            if matches!(e.event.kind, EventKind::RunFinished { .. }) {
                self.done = true;
            }
            return FollowStep::Give(e);
        }
        if self.done {
            FollowStep::End
        } else {
            FollowStep::Fetch
        }
    }

    /// Takes what a fetch found; whether it found anything.
    pub(crate) fn fetched(&mut self, events: Vec<warrant_core::event::StoredEvent>) -> bool {
        let any = !events.is_empty();
        self.queue.extend(events);
        any
    }

    /// After a fetch found nothing new, with the run's status now: whether more can come
    /// (`false`: the run ended before the sequence asked for).
    pub(crate) fn more_can_come(
        &self,
        status: Option<&str>,
    ) -> Result<bool, warrant_core::store::StoreError> {
        match status {
            None => Err(warrant_core::store::StoreError::Io(format!(
                "no run `{}`",
                self.run
            ))),
            Some(s) => Ok(!ended(s)),
        }
    }
}

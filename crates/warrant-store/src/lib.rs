//! Store implementations behind [`warrant_core::store::EventStore`]: memory (tests, the
//! benchmark's memory mode) and SQLite (the embedded default: one file, WAL, group commit on a
//! dedicated writer thread, reads on tokio's blocking pool).

/// A notice's columns, in the order both SQL stores select them (`NoticeRow`).
macro_rules! notice_columns {
    () => {
        "id, run_id, seq, kind, at_ms, state, attempts, next_at_ms, last_error, delivered_to, settled_at_ms"
    };
}

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
use warrant_core::status::RunStatus;

/// The answer to an append handed to a store's writer: an error if it could not be handed
/// over (`sent` false) or the writer stopped before answering, else the writer's reply.
#[cfg(feature = "postgres")]
pub(crate) fn writer_reply<T: Send + 'static>(
    sent: bool,
    reply: tokio::sync::oneshot::Receiver<Result<T, warrant_core::store::StoreError>>,
) -> warrant_core::ports::BoxFuture<'static, Result<T, warrant_core::store::StoreError>> {
    Box::pin(async move {
        if !sent {
            return Err(writer_stopped());
        }
        reply.await.unwrap_or_else(|_| Err(writer_gone()))
    })
}

fn writer_stopped() -> warrant_core::store::StoreError {
    warrant_core::store::StoreError::Io("the store writer has stopped".into())
}

fn writer_gone() -> warrant_core::store::StoreError {
    warrant_core::store::StoreError::Io("the store writer stopped before committing".into())
}

/// A reply a writer thread has ready, to be handed to whoever waits for it.
pub(crate) trait Deliver: Send {
    /// Hands the reply over (wakes its waiter).
    fn deliver(self);
}

/// Where a writer thread leaves a group commit's replies, so that the runs' thread wakes once
/// per commit rather than once per reply: a wake sent from another thread costs a system call
/// and, for a runtime that had gone idle, a context switch; a wake sent from the runtime's own
/// thread only queues the task. The writer puts the replies here and rings once; the first
/// waiter to hear it hands them all out from the runtime's thread ([`Outbox::reply`]).
pub(crate) struct Outbox<R> {
    ready: std::sync::Mutex<Vec<R>>,
    bell: tokio::sync::Notify,
}

impl<R: Deliver> Outbox<R> {
    pub(crate) fn new() -> Outbox<R> {
        Outbox {
            ready: std::sync::Mutex::new(Vec::new()),
            bell: tokio::sync::Notify::new(),
        }
    }

    /// Leaves a commit's replies and rings once. Without a waiter the ring is kept for the
    /// next one.
    pub(crate) fn post(&self, replies: impl IntoIterator<Item = R>) {
        self.ready().extend(replies);
        self.bell.notify_one();
    }

    fn hand_out(&self) {
        let ready = std::mem::take(&mut *self.ready());
        ready.into_iter().for_each(Deliver::deliver);
    }

    /// The replies waiting. A vector of replies is whole whatever panicked while it was held,
    /// so a poisoned lock is taken as it is: no reply is ever left behind.
    fn ready(&self) -> std::sync::MutexGuard<'_, Vec<R>> {
        self.ready
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The answer to a request handed to the writer (`sent` false: it could not be), handing
    /// out every reply waiting in the outbox whenever the bell rings before it comes.
    pub(crate) fn reply<T: Send + 'static>(
        self: &std::sync::Arc<Self>,
        sent: bool,
        mut reply: tokio::sync::oneshot::Receiver<Result<T, warrant_core::store::StoreError>>,
    ) -> warrant_core::ports::BoxFuture<'static, Result<T, warrant_core::store::StoreError>>
    where
        R: 'static,
    {
        let outbox = self.clone();
        Box::pin(async move {
            if !sent {
                return Err(writer_stopped());
            }
            loop {
                tokio::select! {
                    biased;
                    answer = &mut reply => return answer.unwrap_or_else(|_| Err(writer_gone())),
                    () = outbox.bell.notified() => outbox.hand_out(),
                }
            }
        })
    }
}

/// Awaits every future at once, polling each in turn on this task (a PostgreSQL store's
/// statements go out together, pipelined on one connection), each result in order.
#[cfg(any(test, feature = "postgres"))]
pub(crate) async fn together<'a, T>(
    mut futures: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>>,
) -> Vec<T> {
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futures.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// A run's log read back from its stored rows, in order: a row holds `n` events from sequence
/// `first` at global positions from `position`, their encoded bodies separated by newlines
/// (an encoded event has none). Consecutive rows continue each other, and the first holds
/// `from_seq` or is the run's first: a log that skips or repeats is an error, not a log with a
/// hole.
pub(crate) struct LogRows<'a> {
    run: &'a warrant_core::ids::RunId,
    from_seq: u64,
    expected: Option<u64>,
    /// The events read so far, from `from_seq` on.
    pub(crate) events: Vec<warrant_core::event::StoredEvent>,
}

impl<'a> LogRows<'a> {
    pub(crate) fn new(run: &'a warrant_core::ids::RunId, from_seq: u64) -> LogRows<'a> {
        LogRows {
            run,
            from_seq,
            expected: None,
            events: Vec::new(),
        }
    }

    /// Whether the row at `position` beginning at event `first` continues what was read (a
    /// store may explain a break better: the error is only its fallback).
    pub(crate) fn continues(
        &self,
        position: u64,
        first: u64,
    ) -> Result<(), warrant_core::store::StoreError> {
        let run = self.run;
        match self.expected {
            Some(want) if first != want => Err(warrant_core::store::StoreError::Io(format!(
                "run `{run}`: the row at position {position} begins at event {first}, not {want}"
            ))),
            None if first > self.from_seq.max(1) => {
                Err(warrant_core::store::StoreError::Io(format!(
                    "run `{run}`: its rows end at event {first} (position {position}), before event {}",
                    self.from_seq.max(1)
                )))
            }
            _ => Ok(()),
        }
    }

    /// Unpacks the next row (checked by [`LogRows::continues`]) into `events`, skipping those
    /// before `from_seq`. A row whose bodies do not match its count, or do not decode, is an
    /// error naming the run and the row.
    pub(crate) fn push(
        &mut self,
        (position, first, n): (u64, u64, u64),
        body: &str,
    ) -> Result<(), warrant_core::store::StoreError> {
        use warrant_core::store::StoreError;
        let run = self.run;
        self.expected = first.checked_add(n);
        let mut texts = body.split('\n');
        for i in 0..n {
            let (Some(seq), Some(at)) = (first.checked_add(i), position.checked_add(i)) else {
                return Err(StoreError::Io(format!(
                    "run `{run}`: the row from event {first} at position {position} overflows"
                )));
            };
            let Some(text) = texts.next() else {
                return Err(StoreError::Io(format!(
                    "run `{run}`: the row from event {first} says it holds {n} events and holds {i}"
                )));
            };
            if seq < self.from_seq {
                continue;
            }
            let event = warrant_core::event::decode(text).map_err(|e| {
                StoreError::Io(format!("run `{run}` event {seq} does not decode: {e}"))
            })?;
            self.events.push(warrant_core::event::StoredEvent {
                position: at,
                run_id: run.clone(),
                event: std::sync::Arc::new(event),
            });
        }
        if texts.next().is_some() {
            return Err(StoreError::Io(format!(
                "run `{run}`: the row from event {first} holds more than the {n} events it says"
            )));
        }
        Ok(())
    }
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
    pub(crate) status: Option<RunStatus>,
    /// When the run wakes, when the batch leaves it sleeping.
    pub(crate) wake_at_ms: Option<u64>,
    /// Changes to the run's pending approvals, in order.
    pub(crate) approvals: Vec<ApprovalChange>,
    /// The notices the batch makes, for the outbox (`warrant_core::notice::notices_of`).
    pub(crate) notices: Vec<warrant_core::notice::Notice>,
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
        wake_at_ms: None,
        approvals: Vec::new(),
        notices: warrant_core::notice::notices_of(run, events),
    };
    for e in events {
        match &e.kind {
            EventKind::ApprovalRequested { .. } => {
                if let Some(asked) = warrant_core::store::PendingApproval::asked(run, e) {
                    facts.approvals.push(ApprovalChange::Asked(Box::new(asked)));
                }
            }
            // (One of several approvers approving leaves the request pending.)
            EventKind::ApprovalResolved {
                request, awaiting, ..
            } if *awaiting == 0 => {
                facts
                    .approvals
                    .push(ApprovalChange::Settled(request.clone()));
            }
            EventKind::ApprovalExpired { request }
            | EventKind::ApprovalGranted { request, .. }
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
            facts.status = Some(status);
            facts.wake_at_ms = match &e.kind {
                EventKind::TimerSet { until_ms, .. } => Some(*until_ms),
                _ => None,
            };
        }
    }
    facts
}

/// A future armed now that resolves at the next change of `tx` (a store's news; never, once
/// the store that changes it is gone).
pub(crate) fn news(
    tx: &tokio::sync::watch::Sender<u64>,
) -> warrant_core::ports::BoxFuture<'static, ()> {
    let mut rx = tx.subscribe();
    Box::pin(async move {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}

/// Who holds a run's lease after an append that leaves it in `status`: nobody once it waits
/// for a person or has ended; the driver that appended, while it runs; unchanged when an
/// operator's input (no driver) lets it go on. Updated in place: a holder that stays is not
/// copied again.
pub(crate) fn renew_lease(
    status: RunStatus,
    driver: Option<&warrant_core::ports::Driver>,
    holder: &mut Option<String>,
    heartbeat_ms: &mut Option<u64>,
) {
    match driver {
        _ if status != RunStatus::Running => {
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

/// What an append's events tell of their run, once they are checked to continue it at
/// `expected`: sequences `expected + 1, + 2, ...`.
pub(crate) fn appended_facts(
    run: &warrant_core::ids::RunId,
    events: &[std::sync::Arc<Event>],
    expected: u64,
) -> Result<RunFacts, warrant_core::store::StoreError> {
    for (i, e) in events.iter().enumerate() {
        let want = expected + 1 + i as u64;
        if e.seq != want {
            return Err(warrant_core::store::StoreError::Io(format!(
                "event at index {i} has sequence {}, expected {want}",
                e.seq
            )));
        }
    }
    Ok(run_facts(run, events))
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
        .filter(|r| query.since_ms.is_none_or(|t| r.started_at_ms >= t))
        .filter(|r| {
            query.due_by.is_none_or(|t| {
                r.status == RunStatus::Sleeping && r.wake_at_ms.is_some_and(|w| w <= t)
            })
        });
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
        status: Option<RunStatus>,
    ) -> Result<bool, warrant_core::store::StoreError> {
        match status {
            None => Err(warrant_core::store::StoreError::Io(format!(
                "no run `{}`",
                self.run
            ))),
            Some(s) => Ok(s.is_live()),
        }
    }
}

/// A notice as a SQL store's row holds it, read back.
pub(crate) struct NoticeRow {
    pub(crate) id: String,
    pub(crate) run_id: String,
    pub(crate) seq: u64,
    pub(crate) kind: String,
    pub(crate) at_ms: u64,
    pub(crate) state: String,
    pub(crate) attempts: u64,
    pub(crate) next_at_ms: u64,
    pub(crate) last_error: Option<String>,
    pub(crate) delivered_to: String,
    pub(crate) settled_at_ms: Option<u64>,
}

impl NoticeRow {
    /// The notice, its names checked: a row this build cannot read is an error naming it.
    pub(crate) fn notice(
        self,
    ) -> Result<warrant_core::notice::Notice, warrant_core::store::StoreError> {
        let bad = |what: &str, e: String| {
            warrant_core::store::StoreError::Io(format!("notice `{}`: {what}: {e}", self.id))
        };
        let kind = self.kind.parse().map_err(|e| bad("kind", e))?;
        let state = self.state.parse().map_err(|e| bad("state", e))?;
        let delivered_to: Vec<String> = serde_json::from_str(&self.delivered_to)
            .map_err(|e| bad("delivered_to", e.to_string()))?;
        Ok(warrant_core::notice::Notice {
            run_id: warrant_core::ids::RunId(self.run_id),
            seq: self.seq,
            kind,
            at_ms: self.at_ms,
            state,
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            next_at_ms: self.next_at_ms,
            last_error: self.last_error,
            delivered_to,
            settled_at_ms: self.settled_at_ms,
            id: self.id,
        })
    }
}

/// The endpoints that took a notice, as the stores keep them (a JSON array).
pub(crate) fn delivered_json(notice: &warrant_core::notice::Notice) -> String {
    serde_json::to_string(&notice.delivered_to).unwrap_or_else(|_| "[]".to_owned())
}

/// A schedule as a SQL store keeps it (its JSON), read back.
pub(crate) fn schedule_of(
    body: &str,
) -> Result<warrant_core::schedule::Schedule, warrant_core::store::StoreError> {
    serde_json::from_str(body)
        .map_err(|e| warrant_core::store::StoreError::Io(format!("a schedule in the store: {e}")))
}

/// A schedule as a SQL store keeps it.
pub(crate) fn schedule_body(
    schedule: &warrant_core::schedule::Schedule,
) -> Result<String, warrant_core::store::StoreError> {
    serde_json::to_string(schedule).map_err(|e| warrant_core::store::StoreError::Io(e.to_string()))
}

/// A tick as a SQL store's row holds it, read back.
pub(crate) fn tick_of(
    schedule: String,
    at_ms: u64,
    run_id: Option<String>,
    state: &str,
    note: Option<String>,
) -> Result<warrant_core::schedule::Tick, warrant_core::store::StoreError> {
    Ok(warrant_core::schedule::Tick {
        state: state.parse().map_err(|e: String| {
            warrant_core::store::StoreError::Io(format!("tick {schedule}@{at_ms}: {e}"))
        })?,
        schedule,
        at_ms,
        run_id: run_id.map(warrant_core::ids::RunId),
        note,
    })
}

/// A listing's `limit` as SQL's `LIMIT` (0: no limit).
pub(crate) fn sql_limit(limit: usize) -> i64 {
    match limit {
        0 => i64::MAX,
        n => i64::try_from(n).unwrap_or(i64::MAX),
    }
}

/// A standing grant as a SQL store keeps it (its JSON), read back.
pub(crate) fn grant_of(
    body: &str,
) -> Result<warrant_core::standing::StandingGrant, warrant_core::store::StoreError> {
    serde_json::from_str(body).map_err(|e| {
        warrant_core::store::StoreError::Io(format!("a standing grant in the store: {e}"))
    })
}

/// A standing grant as a SQL store keeps it.
pub(crate) fn grant_body(
    grant: &warrant_core::standing::StandingGrant,
) -> Result<String, warrant_core::store::StoreError> {
    serde_json::to_string(grant).map_err(|e| warrant_core::store::StoreError::Io(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
mod tests {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use tokio::sync::oneshot;
    use warrant_core::store::StoreError;

    use super::{Deliver, Outbox};

    struct Answer(oneshot::Sender<Result<u32, StoreError>>, u32);

    impl Deliver for Answer {
        fn deliver(self) {
            let _ = self.0.send(Ok(self.1));
        }
    }

    /// Awaits `f`, failing (not hanging) if it never completes.
    async fn within<T>(f: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(30), f)
            .await
            .expect("the reply never came")
    }

    #[tokio::test]
    async fn replies_left_before_anyone_waits_reach_every_waiter() {
        let outbox = Arc::new(Outbox::new());
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..3).map(|_| oneshot::channel()).unzip();
        outbox.post(senders.into_iter().zip(10..).map(|(s, n)| Answer(s, n)));
        for (receiver, n) in receivers.into_iter().zip(10..) {
            assert_eq!(within(outbox.reply(true, receiver)).await.unwrap(), n);
        }
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_after_the_bell_leaves_the_replies_to_the_others() {
        let outbox = Arc::new(Outbox::new());
        let (_a_sender, a_receiver) = oneshot::channel::<Result<u32, StoreError>>();
        let (b_sender, b_receiver) = oneshot::channel();
        let mut a = outbox.reply(true, a_receiver);
        let mut b = outbox.reply(true, b_receiver);
        let mut cx = Context::from_waker(Waker::noop());
        // Both wait, `a` first: the bell wakes `a`.
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert!(b.as_mut().poll(&mut cx).is_pending());
        outbox.post([Answer(b_sender, 7)]);
        drop(a);
        assert_eq!(within(b).await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_request_never_handed_over_or_never_answered_is_an_error() {
        let outbox: Arc<Outbox<Answer>> = Arc::new(Outbox::new());
        let (_sender, receiver) = oneshot::channel::<Result<u32, StoreError>>();
        let not_sent = within(outbox.reply(false, receiver)).await;
        assert!(matches!(not_sent, Err(StoreError::Io(m)) if m.contains("has stopped")));
        let (sender, receiver) = oneshot::channel::<Result<u32, StoreError>>();
        drop(sender);
        let dropped = within(outbox.reply(true, receiver)).await;
        assert!(matches!(dropped, Err(StoreError::Io(m)) if m.contains("before committing")));
        // Nothing is pending: the first poll after the posting hands everything out.
        let (sender, receiver) = oneshot::channel();
        let mut waiting = outbox.reply(true, receiver);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        outbox.post([Answer(sender, 1)]);
        assert!(matches!(waiting.as_mut().poll(&mut cx), Poll::Ready(Ok(1))));
    }
}

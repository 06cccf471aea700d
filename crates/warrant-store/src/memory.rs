//! An in-memory store: nothing survives the process. For tests and the memory benchmark.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;
use warrant_core::event::{Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::notice::{Notice, NoticeQuery, NoticeState};
use warrant_core::ports::BoxFuture;
use warrant_core::schedule::{Schedule, Tick};
use warrant_core::standing::{Revoked, StandingGrant};
use warrant_core::status::RunStatus;
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, Leases, LogReader, LogWriter, NoticeOutbox, RunsIndex,
    Schedules, SpecCatalog, StoreHealth,
};
use warrant_core::store::{
    CancelRequest, Claim, Driver, EventFeed, Held, IDEMPOTENCY_PURGE_MAX, IdempotencyRecord,
    LEASE_TTL_MS, PendingApproval, RunPage, RunQuery, RunSummary, StoreError,
};

use crate::{ApprovalChange, FollowStep, Followed};

#[derive(Default)]
struct Inner {
    logs: HashMap<RunId, RunLog>,
    order: Vec<RunId>,
    position: u64,
    cancels: HashMap<RunId, CancelRequest>,
    pending: BTreeMap<String, PendingApproval>,
    catalog: Vec<warrant_core::ports::CatalogEntry>,
    /// Idempotency keys by tenant and key.
    idempotency: HashMap<(String, String), IdempotencyRecord>,
    /// The outbox of notices, by id.
    notices: BTreeMap<String, Notice>,
    /// Schedules by id, and their ticks by schedule and time.
    schedules: BTreeMap<String, Schedule>,
    ticks: BTreeMap<(String, u64), Tick>,
    /// Standing grants, in the order they were given.
    grants: Vec<StandingGrant>,
}

struct RunLog {
    summary: RunSummary,
    /// Each event with its global position; the run's id is added when it is read.
    events: Vec<(u64, Arc<Event>)>,
}

/// Runs' logs in memory.
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    /// Bumped by every append: what followers wait on.
    appended: watch::Sender<u64>,
    /// Bumped by every request to cancel: what waiting runs wait on.
    cancels: watch::Sender<u64>,
    /// How many times a run asked whether it is cancelled.
    cancel_looks: std::sync::atomic::AtomicU64,
    /// How many writes renewed leases.
    heartbeats: std::sync::atomic::AtomicU64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            inner: Arc::new(Mutex::new(Inner::default())),
            appended: watch::Sender::new(0),
            cancels: watch::Sender::new(0),
            cancel_looks: std::sync::atomic::AtomicU64::new(0),
            heartbeats: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

fn lock(inner: &Mutex<Inner>) -> Result<MutexGuard<'_, Inner>, StoreError> {
    inner
        .lock()
        .map_err(|_| StoreError::Io("memory store poisoned".into()))
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// `run`'s events as they are now: memory is read at once, so synchronous code (a test's
    /// fake provider, an embedder's inspection) can look without awaiting the port.
    pub fn events(&self, run: &RunId) -> Vec<Arc<Event>> {
        read_now(&self.inner, run, 1)
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.event)
            .collect()
    }

    /// How many times a run asked whether it is cancelled.
    pub fn cancel_looks(&self) -> u64 {
        self.cancel_looks.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many writes renewed leases (each renews any number of them).
    pub fn heartbeats(&self) -> u64 {
        self.heartbeats.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every run's id, in the order they were started.
    pub fn run_ids(&self) -> Vec<RunId> {
        lock(&self.inner)
            .map(|inner| inner.order.clone())
            .unwrap_or_default()
    }

    fn append_now(
        &self,
        run: &RunId,
        expected: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> Result<(), StoreError> {
        let mut guard = lock(&self.inner)?;
        let Inner {
            logs,
            order,
            position,
            pending,
            notices,
            ..
        } = &mut *guard;
        // A run already known is found once (most appends): its log is checked and extended
        // under that one lookup.
        let woken = if let Some(log) = logs.get_mut(run) {
            // INVARIANT (fencing): a driver whose lease was taken over is told so first.
            if let Some(d) = driver
                && log.summary.epoch != d.epoch
            {
                return Err(StoreError::Fenced {
                    run: run.clone(),
                    holder: log.summary.holder.clone().unwrap_or_default(),
                    epoch: log.summary.epoch,
                });
            }
            if log.summary.events != expected {
                return Err(StoreError::Conflict {
                    run: run.clone(),
                    expected,
                    actual: log.summary.events,
                });
            }
            let mut facts = crate::appended_facts(run, &events, expected)?;
            keep_notices(notices, &mut facts);
            extend(log, position, pending, run, events, facts, driver)
        } else {
            if expected != 0 {
                return Err(StoreError::Conflict {
                    run: run.clone(),
                    expected,
                    actual: 0,
                });
            }
            let mut facts = crate::appended_facts(run, &events, expected)?;
            let Some(crate::Started {
                spec_id,
                decider,
                at_ms,
                ..
            }) = facts.started.clone()
            else {
                return Err(StoreError::Io(format!(
                    "run `{run}` must begin with `run_started`"
                )));
            };
            order.push(run.clone());
            let log = logs.entry(run.clone()).or_insert(RunLog {
                summary: RunSummary {
                    run_id: run.clone(),
                    spec_id,
                    decider,
                    status: RunStatus::Running,
                    started_at_ms: at_ms,
                    events: 0,
                    holder: None,
                    heartbeat_ms: None,
                    epoch: driver.map_or(1, |d| d.epoch.max(1)),
                    note: None,
                    wake_at_ms: None,
                },
                events: Vec::new(),
            });
            keep_notices(notices, &mut facts);
            extend(log, position, pending, run, events, facts, driver)
        };
        // A child answered makes its root ready: the root's driver carries the tree on.
        if let Some(root) = woken
            && let Some(log) = logs.get_mut(&root)
            && log.summary.status == RunStatus::Waiting
        {
            log.summary.status = RunStatus::Ready;
        }
        Ok(())
    }
}

/// Puts an append's notices in the outbox (an id already there is kept as it is).
fn keep_notices(outbox: &mut BTreeMap<String, Notice>, facts: &mut crate::RunFacts) {
    for n in std::mem::take(&mut facts.notices) {
        outbox.entry(n.id.clone()).or_insert(n);
    }
}

/// Adds checked `events` to `run`'s `log` (numbered from `position` on) and records what they
/// change: its status, its lease, the pending approvals. Returns the root a child's answer
/// makes ready, if any.
fn extend(
    log: &mut RunLog,
    position: &mut u64,
    pending: &mut BTreeMap<String, PendingApproval>,
    run: &RunId,
    events: Vec<Arc<Event>>,
    facts: crate::RunFacts,
    driver: Option<&Driver>,
) -> Option<RunId> {
    log.events.reserve(events.len());
    for event in events {
        *position += 1;
        log.events.push((*position, event));
    }
    log.summary.events = log.events.len() as u64;
    let woken = facts
        .status
        .filter(|s| *s == RunStatus::Ready)
        .and_then(|_| run.0.split_once('.'))
        .map(|(root, _)| RunId(root.to_owned()));
    if let Some(status) = facts.status {
        log.summary.status = status;
        log.summary.wake_at_ms = facts.wake_at_ms;
    }
    let summary = &mut log.summary;
    crate::renew_lease(
        summary.status,
        driver,
        &mut summary.holder,
        &mut summary.heartbeat_ms,
    );
    for change in facts.approvals {
        match change {
            ApprovalChange::Asked(p) => {
                pending.insert(p.request.clone(), *p);
            }
            ApprovalChange::Settled(request) => {
                pending.remove(&request);
            }
            ApprovalChange::Ended => pending.retain(|_, p| p.run_id != *run),
        }
    }
    woken
}

impl LogWriter for MemoryStore {
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let result = self.append_now(run, expected_seq, events, driver);
        // Followers are woken only when there are any: a feed subscribes before its first read,
        // so none misses an append.
        if result.is_ok() && self.appended.receiver_count() > 0 {
            self.appended.send_modify(|n| *n += 1);
        }
        ready(result)
    }
}

impl LogReader for MemoryStore {
    fn read(
        &self,
        run: &RunId,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        ready(read_now(&self.inner, run, from_seq))
    }
    fn subscribe(&self, run: &RunId, from_seq: u64) -> Box<dyn EventFeed> {
        Box::new(Feed {
            inner: self.inner.clone(),
            appended: self.appended.subscribe(),
            followed: Followed::new(run, from_seq),
        })
    }
}

impl RunsIndex for MemoryStore {
    fn runs(&self, query: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>> {
        let page = lock(&self.inner).map(|inner| {
            let mut all: Vec<RunSummary> = inner
                .order
                .iter()
                .rev()
                .filter_map(|id| inner.logs.get(id))
                .map(|l| l.summary.clone())
                .collect();
            // Newest first; a stable sort keeps the later-recorded first among equals.
            all.sort_by_key(|r| std::cmp::Reverse(r.started_at_ms));
            let ordinal = |id: &RunId| inner.order.iter().position(|o| o == id).unwrap_or(0);
            let cursor = query
                .after
                .as_ref()
                .map(|c| (c.started_at_ms, ordinal(&c.run_id)));
            crate::page(all, &query, |r| {
                cursor.is_some_and(|c| (r.started_at_ms, ordinal(&r.run_id)) < c)
            })
        });
        ready(page)
    }
    fn summary(&self, run: &RunId) -> BoxFuture<'_, Result<Option<RunSummary>, StoreError>> {
        ready(lock(&self.inner).map(|inner| inner.logs.get(run).map(|l| l.summary.clone())))
    }
}

impl ApprovalsIndex for MemoryStore {
    fn pending_approvals(
        &self,
        run: Option<&RunId>,
    ) -> BoxFuture<'_, Result<Vec<PendingApproval>, StoreError>> {
        let rows = lock(&self.inner).map(|inner| {
            let mut rows: Vec<PendingApproval> = inner
                .pending
                .values()
                .filter(|p| run.is_none_or(|r| p.run_id == *r))
                .cloned()
                .collect();
            rows.sort_by_key(|p| p.requested_at_ms);
            rows
        });
        ready(rows)
    }
}

impl Leases for MemoryStore {
    fn request_cancel(
        &self,
        run: &RunId,
        request: CancelRequest,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = lock(&self.inner).map(|mut inner| {
            inner.cancels.entry(run.clone()).or_insert(request);
        });
        self.cancels.send_modify(|n| *n = n.wrapping_add(1));
        ready(done)
    }
    fn cancel_news(&self) -> Option<BoxFuture<'_, ()>> {
        Some(crate::news(&self.cancels))
    }
    fn cancel_request(
        &self,
        run: &RunId,
    ) -> BoxFuture<'_, Result<Option<CancelRequest>, StoreError>> {
        self.cancel_looks
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ready(lock(&self.inner).map(|inner| inner.cancels.get(run).cloned()))
    }
    fn claim(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<Claim, StoreError>> {
        let claimed = lock(&self.inner).and_then(|mut inner| {
            let Some(log) = inner.logs.get_mut(run) else {
                return Err(StoreError::Io(format!("no run `{run}` in the store")));
            };
            let s = &mut log.summary;
            if let (Some(holder), Some(at)) = (&s.holder, s.heartbeat_ms)
                && **holder != *driver.holder
                && driver.now_ms.saturating_sub(at) < LEASE_TTL_MS
            {
                return Ok(Claim::Held(Held {
                    holder: holder.clone(),
                    heartbeat_ms: at,
                }));
            }
            s.holder = Some(driver.holder.to_string());
            s.heartbeat_ms = Some(driver.now_ms);
            s.epoch += 1;
            Ok(Claim::Taken { epoch: s.epoch })
        });
        ready(claimed)
    }
    fn heartbeat(&self, leases: Vec<(RunId, Driver)>) -> BoxFuture<'_, Result<(), StoreError>> {
        self.heartbeats
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let done = lock(&self.inner).map(|mut inner| {
            for (run, driver) in &leases {
                if let Some(log) = inner.logs.get_mut(run)
                    && log.summary.holder.as_deref() == Some(&*driver.holder)
                    && log.summary.epoch == driver.epoch
                {
                    log.summary.heartbeat_ms = Some(driver.now_ms);
                }
            }
        });
        ready(done)
    }
    fn release(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = lock(&self.inner).map(|mut inner| {
            if let Some(log) = inner.logs.get_mut(run)
                && log.summary.holder.as_deref() == Some(&*driver.holder)
            {
                log.summary.holder = None;
                log.summary.heartbeat_ms = None;
            }
        });
        ready(done)
    }
}

impl SpecCatalog for MemoryStore {
    fn catalog_add(
        &self,
        entry: warrant_core::ports::CatalogEntry,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        ready(lock(&self.inner).map(|mut inner| {
            match inner
                .catalog
                .iter_mut()
                .find(|e| e.id == entry.id && e.digest == entry.digest)
            {
                Some(there) => {
                    there.retired_at_ms = None;
                    false
                }
                None => {
                    inner.catalog.push(entry);
                    true
                }
            }
        }))
    }
    fn catalog(
        &self,
        id: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<warrant_core::ports::CatalogEntry>, StoreError>> {
        let id = id.map(str::to_owned);
        ready(lock(&self.inner).map(|inner| {
            let mut out: Vec<_> = inner
                .catalog
                .iter()
                .filter(|e| id.as_ref().is_none_or(|i| *i == e.id))
                .cloned()
                .collect();
            out.reverse();
            out
        }))
    }
    fn catalog_retire(
        &self,
        id: &str,
        digest: Option<&str>,
        at_ms: u64,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        ready(lock(&self.inner).map(|mut inner| {
            let mut n = 0;
            for e in inner.catalog.iter_mut().filter(|e| {
                e.id == id && digest.is_none_or(|d| d == e.digest) && e.retired_at_ms.is_none()
            }) {
                e.retired_at_ms = Some(at_ms);
                n += 1;
            }
            n
        }))
    }
}

impl IdempotencyKeys for MemoryStore {
    fn idempotency_get(
        &self,
        tenant: &str,
        key: &str,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<Option<IdempotencyRecord>, StoreError>> {
        let found = lock(&self.inner).map(|inner| {
            inner
                .idempotency
                .get(&(tenant.to_owned(), key.to_owned()))
                .filter(|r| !r.expired(now_ms))
                .cloned()
        });
        ready(found)
    }
    fn idempotency_put(
        &self,
        record: IdempotencyRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<IdempotencyRecord, StoreError>> {
        let held = lock(&self.inner).map(|mut inner| {
            let expired: Vec<(String, String)> = inner
                .idempotency
                .iter()
                .filter(|(_, r)| r.expired(now_ms))
                .map(|(k, _)| k.clone())
                .take(IDEMPOTENCY_PURGE_MAX)
                .collect();
            for k in &expired {
                inner.idempotency.remove(k);
            }
            let slot = inner
                .idempotency
                .entry((record.tenant.clone(), record.key.clone()))
                .or_insert_with(|| record.clone());
            if slot.expired(now_ms) {
                *slot = record;
            }
            slot.clone()
        });
        ready(held)
    }
}

impl NoticeOutbox for MemoryStore {
    fn notices_due(
        &self,
        now_ms: u64,
        lease_ms: u64,
        want: usize,
    ) -> BoxFuture<'_, Result<Vec<Notice>, StoreError>> {
        let taken = lock(&self.inner).map(|mut inner| {
            let mut due: Vec<&mut Notice> = inner
                .notices
                .values_mut()
                .filter(|n| n.state == NoticeState::Pending && n.next_at_ms <= now_ms)
                .collect();
            due.sort_by(|a, b| (a.at_ms, &a.id).cmp(&(b.at_ms, &b.id)));
            due.into_iter()
                .take(want)
                .map(|n| {
                    n.next_at_ms = now_ms.saturating_add(lease_ms);
                    n.attempts = n.attempts.saturating_add(1);
                    n.clone()
                })
                .collect()
        });
        ready(taken)
    }
    fn notice_settle(&self, notice: &Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        let settled = lock(&self.inner).map(|mut inner| match inner.notices.get_mut(&notice.id) {
            Some(held) if held.state == NoticeState::Pending => {
                *held = notice.clone();
                true
            }
            _ => false,
        });
        ready(settled)
    }
    fn notice_put(&self, notice: Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        let added = lock(&self.inner).map(|mut inner| {
            if inner.notices.contains_key(&notice.id) {
                return false;
            }
            inner.notices.insert(notice.id.clone(), notice);
            true
        });
        ready(added)
    }
    fn notices(&self, query: NoticeQuery) -> BoxFuture<'_, Result<Vec<Notice>, StoreError>> {
        let rows = lock(&self.inner).map(|inner| {
            let mut rows: Vec<Notice> = inner
                .notices
                .values()
                .filter(|n| query.state.is_none_or(|s| n.state == s))
                .filter(|n| query.run.as_ref().is_none_or(|r| n.run_id == *r))
                .cloned()
                .collect();
            rows.sort_by(|a, b| (b.at_ms, &b.id).cmp(&(a.at_ms, &a.id)));
            if query.limit > 0 {
                rows.truncate(query.limit);
            }
            rows
        });
        ready(rows)
    }
    fn notice_counts(&self) -> BoxFuture<'_, Result<Vec<(NoticeState, u64)>, StoreError>> {
        let counts = lock(&self.inner).map(|inner| {
            NoticeState::ALL
                .into_iter()
                .map(|s| {
                    let n = inner.notices.values().filter(|n| n.state == s).count();
                    (s, n as u64)
                })
                .collect()
        });
        ready(counts)
    }
    fn notices_purge(&self, before_ms: u64, most: usize) -> BoxFuture<'_, Result<u64, StoreError>> {
        let purged = lock(&self.inner).map(|mut inner| {
            let old: Vec<String> = inner
                .notices
                .values()
                .filter(|n| n.state != NoticeState::Pending)
                .filter(|n| n.settled_at_ms.is_some_and(|t| t < before_ms))
                .map(|n| n.id.clone())
                .take(most)
                .collect();
            for id in &old {
                inner.notices.remove(id);
            }
            old.len() as u64
        });
        ready(purged)
    }
}

impl Schedules for MemoryStore {
    fn schedule_put(&self, schedule: Schedule) -> BoxFuture<'_, Result<bool, StoreError>> {
        let new = lock(&self.inner).map(|mut inner| {
            inner
                .schedules
                .insert(schedule.id.clone(), schedule)
                .is_none()
        });
        ready(new)
    }
    fn schedules(&self) -> BoxFuture<'_, Result<Vec<Schedule>, StoreError>> {
        ready(lock(&self.inner).map(|inner| inner.schedules.values().cloned().collect()))
    }
    fn schedule_remove(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let removed = lock(&self.inner).map(|mut inner| {
            inner.ticks.retain(|(s, _), _| s != id);
            inner.schedules.remove(id).is_some()
        });
        ready(removed)
    }
    fn tick_claim(&self, tick: Tick) -> BoxFuture<'_, Result<bool, StoreError>> {
        let won = lock(&self.inner).map(|mut inner| {
            let key = (tick.schedule.clone(), tick.at_ms);
            if inner.ticks.contains_key(&key) {
                return false;
            }
            inner.ticks.insert(key, tick);
            true
        });
        ready(won)
    }
    fn tick_update(&self, tick: &Tick) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = lock(&self.inner).map(|mut inner| {
            if let Some(held) = inner.ticks.get_mut(&(tick.schedule.clone(), tick.at_ms)) {
                *held = tick.clone();
            }
        });
        ready(done)
    }
    fn ticks(
        &self,
        schedule: Option<&str>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Tick>, StoreError>> {
        let rows = lock(&self.inner).map(|inner| {
            let mut rows: Vec<Tick> = inner
                .ticks
                .values()
                .filter(|t| schedule.is_none_or(|s| t.schedule == s))
                .cloned()
                .collect();
            rows.sort_by(|a, b| (b.at_ms, &b.schedule).cmp(&(a.at_ms, &a.schedule)));
            if limit > 0 {
                rows.truncate(limit);
            }
            rows
        });
        ready(rows)
    }
}

impl warrant_core::store::Grants for MemoryStore {
    fn grant_put(&self, grant: StandingGrant) -> BoxFuture<'_, Result<(), StoreError>> {
        let kept = lock(&self.inner).and_then(|mut inner| {
            if inner.grants.iter().any(|g| g.id == grant.id) {
                return Err(StoreError::Io(format!(
                    "grant `{}` exists already",
                    grant.id
                )));
            }
            inner.grants.push(grant);
            Ok(())
        });
        ready(kept)
    }
    fn grants(
        &self,
        tenant: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<StandingGrant>, StoreError>> {
        let rows = lock(&self.inner).map(|inner| {
            inner
                .grants
                .iter()
                .rev()
                .filter(|g| tenant.is_none_or(|t| g.tenant == t))
                .cloned()
                .collect()
        });
        ready(rows)
    }
    fn grant_revoke(
        &self,
        id: &str,
        tenant: Option<&str>,
        revoked: Revoked,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let done = lock(&self.inner).map(|mut inner| {
            match inner
                .grants
                .iter_mut()
                .find(|g| g.id == id && tenant.is_none_or(|t| g.tenant == t))
            {
                Some(g) if g.revoked.is_none() => {
                    g.revoked = Some(revoked);
                    true
                }
                _ => false,
            }
        });
        ready(done)
    }
}

impl StoreHealth for MemoryStore {}

fn read_now(
    inner: &Mutex<Inner>,
    run: &RunId,
    from_seq: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let inner = lock(inner)?;
    Ok(inner
        .logs
        .get(run)
        .map(|l| {
            // A log is gapless from 1 (appends are checked), so `from_seq` is an index.
            let from = usize::try_from(from_seq.saturating_sub(1)).unwrap_or(usize::MAX);
            l.events
                .get(from..)
                .unwrap_or_default()
                .iter()
                .map(|(position, event)| StoredEvent {
                    position: *position,
                    run_id: run.clone(),
                    event: event.clone(),
                })
                .collect()
        })
        .unwrap_or_default())
}

/// A follower of one run in memory: woken by every append.
struct Feed {
    inner: Arc<Mutex<Inner>>,
    appended: watch::Receiver<u64>,
    followed: Followed,
}

impl EventFeed for Feed {
    fn next(&mut self) -> BoxFuture<'_, Result<Option<StoredEvent>, StoreError>> {
        Box::pin(async move {
            loop {
                match self.followed.step() {
                    FollowStep::Give(e) => return Ok(Some(e)),
                    FollowStep::End => return Ok(None),
                    FollowStep::Fetch => {}
                }
                // Mark what was seen before reading, so an append in between wakes us.
                self.appended.borrow_and_update();
                let fresh = read_now(&self.inner, &self.followed.run, self.followed.next)?;
                if self.followed.fetched(fresh) {
                    continue;
                }
                let status = lock(&self.inner)?
                    .logs
                    .get(&self.followed.run)
                    .map(|l| l.summary.status);
                if !self.followed.more_can_come(status)? || self.appended.changed().await.is_err() {
                    return Ok(None);
                }
            }
        })
    }
}

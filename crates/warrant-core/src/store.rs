//! The Store port: durable run logs, the runs index, approvals, cancellations and leases. Every
//! operation is async, so one contract fits an embedded file and a database server alike; the
//! contract suite (`warrant-store`'s `tests/stores.rs`) runs against every implementation.
//!
//! Appends are optimistic: each names the sequence it continues, checked inside the store's
//! own transaction, and a conflict fails only that run's append. The process driving a run
//! holds its lease and names it on every append with the lease's epoch: an append from a
//! holder whose lease another process has since taken is refused (`Fenced`).

use std::sync::Arc;

use serde_json::Value;

use crate::event::{Event, StoredEvent};
use crate::ids::{CallId, RunId, StepId};
use crate::ports::BoxFuture;
use crate::provenance::ArgLabel;
use crate::status::{RunKind, RunStatus};

/// A store could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Optimistic concurrency: another writer appended first.
    #[error("run `{run}` is at sequence {actual}, not {expected}: another writer appended to it")]
    Conflict {
        /// The run.
        run: RunId,
        /// What the writer expected.
        expected: u64,
        /// What the store has.
        actual: u64,
    },
    /// The appender's lease was taken over: another process drives the run now.
    #[error(
        "run `{run}` was taken over (lease {epoch}){}: this process no longer may append to it",
        match holder.as_str() {
            "" => String::new(),
            holder => format!(", {holder} drives it now"),
        }
    )]
    Fenced {
        /// The run.
        run: RunId,
        /// Who holds the lease now.
        holder: String,
        /// The lease's epoch now.
        epoch: u64,
    },
    /// Anything else.
    #[error("store: {0}")]
    Io(String),
}

/// A run as the store lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct RunSummary {
    /// The run.
    pub run_id: RunId,
    /// The spec's id.
    pub spec_id: String,
    /// The decider.
    pub decider: String,
    /// `running`, `waiting` (for an approval or a reconciliation), `ready` (answered, to be
    /// resumed) or the outcome's name. A `running` run whose driver is gone is interrupted
    /// (`warrant_engine::lease`).
    pub status: RunStatus,
    /// When it started.
    pub started_at_ms: u64,
    /// Events in its log.
    pub events: u64,
    /// The process driving it, while one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// When that process last showed it was alive (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_ms: Option<u64>,
    /// The lease's epoch: each claim of the run increments it.
    pub epoch: u64,
    /// Why a run no process drives has not been taken up yet (a worker passed it over for
    /// its tenant's fair share), when a store hands runs to workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When a `sleeping` run wakes (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_at_ms: Option<u64>,
}

/// How long a driver's lease on a run lasts without a heartbeat. A driver renews it with every
/// append and, while it waits on something slow, at least every third of it.
pub const LEASE_TTL_MS: u64 = 10_000;

impl RunSummary {
    /// What kind of run it is (a gateway session, by its decider).
    pub fn kind(&self) -> RunKind {
        RunKind::of_decider(&self.decider)
    }

    /// Whether a process holds the run's lease and was heard from within [`LEASE_TTL_MS`] of
    /// `now_ms` (`warrant_engine::lease` also knows a local process that is gone).
    pub fn driven(&self, now_ms: u64) -> bool {
        self.holder.is_some()
            && self
                .heartbeat_ms
                .is_some_and(|h| now_ms.saturating_sub(h) < LEASE_TTL_MS)
    }
}

/// The process that drives a run, as an append names it: it holds the run's lease (of this
/// epoch) until the run ends or waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Driver {
    /// Who: stable for the process (e.g. `pid 4242@host`).
    pub holder: Arc<str>,
    /// Now, on the driver's clock (ms since the epoch).
    pub now_ms: u64,
    /// The lease's epoch the driver holds (0 for a run it is starting).
    pub epoch: u64,
}

/// Another process holds a run's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Who.
    pub holder: String,
    /// When it was last heard from.
    pub heartbeat_ms: u64,
}

/// The answer to a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The lease is the claimant's, at this epoch.
    Taken {
        /// The new epoch, to name on every append.
        epoch: u64,
    },
    /// Another live holder has it.
    Held(Held),
}

/// How a store shares workers between tenants when it hands them runs
/// ([`Leases::claim_ready`]): 0 is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FairShare {
    /// Most runs of one tenant driven at once (by every worker together).
    pub runs_per_tenant: u64,
    /// A tenant with this many approvals pending gets no new run started until some are
    /// answered (runs it has started go on).
    pub approvals_per_tenant: u64,
}

/// Where a listing goes on from: the last run of the previous page.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunCursor {
    /// Its start.
    pub started_at_ms: u64,
    /// Its id.
    pub run_id: RunId,
}

/// Which runs to list, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs with this status (one a store holds: [`RunStatus::is_stored`]).
    pub status: Option<RunStatus>,
    /// Only runs of this spec.
    pub spec_id: Option<String>,
    /// Only runs whose id starts with this.
    pub id_prefix: Option<String>,
    /// Only runs started at or after this time.
    pub since_ms: Option<u64>,
    /// After this run (the previous page's cursor).
    pub after: Option<RunCursor>,
    /// Only `sleeping` runs due to wake by this time.
    pub due_by: Option<u64>,
    /// Most runs on the page (0: no limit).
    pub limit: usize,
}

/// One page of runs, and where the next one starts when there is more.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<RunSummary>,
    /// Present when more runs match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<RunCursor>,
}

/// An approval request nobody has answered, as the store indexes it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingApproval {
    /// `<run>-a<n>`.
    pub request: String,
    /// The run.
    pub run_id: RunId,
    /// The call it holds.
    pub call: CallId,
    /// The step.
    pub step: StepId,
    /// The provider.
    pub provider: String,
    /// The tool.
    pub tool: String,
    /// The arguments to execute.
    pub args: Arc<Value>,
    /// Their digest (the approval binds it).
    pub args_digest: String,
    /// Where each argument value was observed.
    pub provenance: Vec<ArgLabel>,
    /// What the authority said needs approving.
    pub reason: String,
    /// When it was asked.
    pub requested_at_ms: u64,
    /// Unanswered at this time, it expires.
    pub expires_at_ms: u64,
    /// How many different people must approve it.
    #[serde(default = "one")]
    pub approvers: u32,
    /// The scope it proposes (`plan`: it describes the run's plan, approved as a whole).
    #[serde(default = "once", skip_serializing_if = "is_once")]
    pub proposed_scope: crate::event::ApprovalScope,
}

fn one() -> u32 {
    1
}

fn once() -> crate::event::ApprovalScope {
    crate::event::ApprovalScope::Once
}

fn is_once(scope: &crate::event::ApprovalScope) -> bool {
    *scope == crate::event::ApprovalScope::Once
}

impl PendingApproval {
    /// The request an `approval_requested` event of `run` makes; `None` for any other event.
    pub fn asked(run: &RunId, e: &Event) -> Option<PendingApproval> {
        let crate::event::EventKind::ApprovalRequested {
            request,
            call,
            step,
            provider,
            tool,
            args,
            args_digest,
            provenance,
            reason,
            expires_at_ms,
            approvers,
            proposed_scope,
            ..
        } = &e.kind
        else {
            return None;
        };
        Some(PendingApproval {
            request: request.clone(),
            run_id: run.clone(),
            call: *call,
            step: step.clone(),
            provider: provider.clone(),
            tool: tool.clone(),
            args: args.clone(),
            args_digest: args_digest.clone(),
            provenance: provenance.to_vec(),
            reason: reason.to_string(),
            requested_at_ms: e.at_ms,
            expires_at_ms: *expires_at_ms,
            approvers: (*approvers).max(1),
            proposed_scope: *proposed_scope,
        })
    }
}

/// An operator's request to cancel a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelRequest {
    /// Who asks.
    pub by: String,
    /// Why.
    pub reason: String,
    /// The run is a gateway session whose client left: it ends `closed`, not `cancelled`.
    pub close: bool,
}

/// A run's events in order from a sequence number: each one once, waiting for the next, across
/// appends by any process; it ends after the run's `run_finished`.
pub trait EventFeed: Send {
    /// The next event, waiting for it; `Ok(None)` once the run's last event was given.
    fn next(&mut self) -> BoxFuture<'_, Result<Option<StoredEvent>, StoreError>>;
    /// For the event `next` gave last: how long ago it was committed, when the store knows
    /// (one it handed over as it committed). For metrics only.
    fn since_commit(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A spec in an operator's catalog kept in the store (a fleet's): frozen, by id and digest,
/// so a run names exactly the spec it ran.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CatalogEntry {
    /// The spec's id.
    pub id: String,
    /// The digest of the frozen spec (`Spec::hash`).
    pub digest: String,
    /// The frozen spec.
    pub spec: Arc<crate::Spec>,
    /// When it was added (ms since the epoch).
    pub added_at_ms: u64,
    /// Who added it.
    pub added_by: String,
    /// When it was retired, if it was: a retired version starts no new run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at_ms: Option<u64>,
}

/// A request's idempotency key as a store keeps it (`Idempotency-Key` on `POST /v1/runs`): the
/// body it was first sent with, by digest, and the run that request starts. Kept per tenant
/// until it expires, in the store every process of a fleet shares, so a request retried
/// against a restarted server or another server of the fleet finds the run it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The tenant whose key it is (keys of different tenants never meet).
    pub tenant: String,
    /// The key, as the client sent it.
    pub key: String,
    /// The digest of the request's body.
    pub digest: String,
    /// The run the request starts: its id is chosen, and the record kept, before the run
    /// starts, so every process that finds the record starts (or answers with) this run.
    pub run_id: RunId,
    /// When it was kept (ms since the epoch).
    pub created_at_ms: u64,
    /// From this time on (ms since the epoch) the record is as good as absent.
    pub expires_at_ms: u64,
}

impl IdempotencyRecord {
    /// Whether it has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

/// Most expired idempotency records a store removes on one [`IdempotencyKeys::idempotency_put`]:
/// the purge is opportunistic and bounded, so a put never waits on a large cleanup (each put
/// removes more than it adds until none is left).
pub const IDEMPOTENCY_PURGE_MAX: usize = 64;

/// Writes runs' logs: the one append path, checked and fenced in the store's own transaction.
pub trait LogWriter: Send + Sync {
    /// Appends `events` atomically after sequence `expected_seq`, checked against what the
    /// store holds inside its transaction (never a cache another process could have outdated):
    /// a conflict fails only this append. Resolves once they are as durable as the store
    /// promises. `driver` names the process driving the run and its lease's epoch (the lease
    /// is renewed, and released when the events end the run or make it wait; a stale epoch is
    /// `Fenced`); an operator's input (an approval, a reconciliation) passes `None`.
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>>;
}

/// Reads a run's log, and follows it as any process appends.
pub trait LogReader: Send + Sync {
    /// The run's events with `seq >= from_seq`, in order.
    fn read(
        &self,
        run: &RunId,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>>;
    /// Follows `run` from `from_seq`: every event once, in order, as any process appends it.
    fn subscribe(&self, run: &RunId, from_seq: u64) -> Box<dyn EventFeed>;
}

/// The runs index: which runs there are and where each stands.
pub trait RunsIndex: Send + Sync {
    /// The runs `query` asks for, newest first, a page at a time.
    fn runs(&self, query: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>>;
    /// The run's summary.
    fn summary(&self, run: &RunId) -> BoxFuture<'_, Result<Option<RunSummary>, StoreError>>;
    /// What `tenant`'s runs spent since `since_ms` — calls started, and model tokens (input
    /// and output) — as the store's logs say, when the store can tell (a fleet's store, whose
    /// workers spend it). `None`: it cannot; the process that drives the runs counts.
    fn tenant_spend(
        &self,
        tenant: &str,
        since_ms: u64,
    ) -> BoxFuture<'_, Result<Option<(u64, u64)>, StoreError>> {
        let _ = (tenant, since_ms);
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// The approval requests nobody has answered.
pub trait ApprovalsIndex: Send + Sync {
    /// Approval requests nobody has answered: of one run, or of every run that has not ended.
    fn pending_approvals(
        &self,
        run: Option<&RunId>,
    ) -> BoxFuture<'_, Result<Vec<PendingApproval>, StoreError>>;
}

/// Who drives a run: its lease, claimed, renewed and given back; the runs ready to be taken up;
/// and an operator's request to cancel, which the driver honours.
pub trait Leases: Send + Sync {
    /// Records an operator's request to cancel `run` (the first request stands). The process
    /// running it sees the request at its next check and ends the run `cancelled`.
    fn request_cancel(
        &self,
        run: &RunId,
        request: CancelRequest,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Resolves when a cancellation may have been requested since it was called (this
    /// process's request or, where the store is told, another's), so that a waiting run asks
    /// [`Leases::cancel_request`] again then rather than at an interval. `None`: the store
    /// cannot tell, and a waiting run asks again at an interval.
    fn cancel_news(&self) -> Option<BoxFuture<'_, ()>> {
        None
    }
    /// The cancellation requested for `run`, if any. May lag a request by a short interval.
    fn cancel_request(
        &self,
        run: &RunId,
    ) -> BoxFuture<'_, Result<Option<CancelRequest>, StoreError>>;
    /// Takes the lease on `run` for `driver` (a new epoch), unless another holder was heard
    /// from within [`LEASE_TTL_MS`].
    fn claim(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<Claim, StoreError>>;
    /// Renews each lease named (a run and the driver that holds it, at the driver's `now_ms`)
    /// in one write: a process renews the leases of all its runs that wait on something slow
    /// together. A lease its driver no longer holds (another took it, a new epoch) is left
    /// alone.
    fn heartbeat(&self, leases: Vec<(RunId, Driver)>) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Gives the lease on `run` back, if `driver` holds it.
    fn release(&self, run: &RunId, driver: &Driver) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Takes the leases of up to `want` runs that are ready to be driven (new runs nobody has
    /// taken up, runs answered or reconciled, runs whose driver's lease lapsed) for `driver`,
    /// oldest first and round-robin between tenants within `share`; each with its new epoch.
    /// Runs another claimant is taking at the same moment are skipped, never waited for. A
    /// store that does not hand runs to workers refuses.
    fn claim_ready(
        &self,
        driver: &Driver,
        want: usize,
        share: FairShare,
    ) -> BoxFuture<'_, Result<Vec<(RunId, u64)>, StoreError>> {
        let _ = (driver, want, share);
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store does not hand runs to workers: use a PostgreSQL store".into(),
        ))))
    }
    /// Resolves when runs may have become ready to claim (another process queued, answered
    /// or gave one back). A store that cannot tell never resolves it: a worker also looks on
    /// its own at a bounded interval.
    fn work_ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

/// An operator's catalog of frozen specs, kept in the store (a fleet's).
pub trait SpecCatalog: Send + Sync {
    /// Adds `entry` to the catalog; `false` when that id and digest were there already (a
    /// retired one comes back). A store without a catalog refuses.
    fn catalog_add(&self, entry: CatalogEntry) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = entry;
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no catalog".into(),
        ))))
    }
    /// The catalog's entries (of spec `id` only, if given), newest first, retired ones too.
    fn catalog(&self, id: Option<&str>) -> BoxFuture<'_, Result<Vec<CatalogEntry>, StoreError>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    /// Retires spec `id` (only version `digest`, if given) at `at_ms`: how many versions were.
    fn catalog_retire(
        &self,
        id: &str,
        digest: Option<&str>,
        at_ms: u64,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        let _ = (id, digest, at_ms);
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no catalog".into(),
        ))))
    }
}

/// Requests' idempotency keys, shared by every process of a fleet.
pub trait IdempotencyKeys: Send + Sync {
    /// The record of `tenant`'s idempotency key `key` that has not expired at `now_ms`, if
    /// any (an expired one is as good as absent). A store without idempotency keys refuses.
    fn idempotency_get(
        &self,
        tenant: &str,
        key: &str,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<Option<IdempotencyRecord>, StoreError>> {
        let _ = (tenant, key, now_ms);
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no idempotency keys".into(),
        ))))
    }
    /// Keeps `record` unless its tenant's key has a record that has not expired at `now_ms`
    /// (insert-if-absent, atomic across every process sharing the store; an expired record is
    /// replaced): the record the store holds afterwards — `record` itself, or the one another
    /// request kept first. The caller won when the record held names its run. Removes up to
    /// [`IDEMPOTENCY_PURGE_MAX`] expired records on the way. A store without idempotency keys
    /// refuses.
    fn idempotency_put(
        &self,
        record: IdempotencyRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<IdempotencyRecord, StoreError>> {
        let _ = (record, now_ms);
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no idempotency keys".into(),
        ))))
    }
}

/// The outbox of notices ([`crate::notice`]): written by the append that records their
/// events, in its transaction; taken, settled and listed by the processes that deliver them.
/// A store without an outbox keeps none, and says so when asked to list.
pub trait NoticeOutbox: Send + Sync {
    /// Takes up to `want` pending notices due at `now_ms` (oldest first), leasing each for
    /// `lease_ms` (its `next_at_ms` moves on by that much and its `attempts` up by one), so
    /// no other process takes it meanwhile; one whose lease lapsed is taken again.
    fn notices_due(
        &self,
        now_ms: u64,
        lease_ms: u64,
        want: usize,
    ) -> BoxFuture<'_, Result<Vec<crate::notice::Notice>, StoreError>> {
        let _ = (now_ms, lease_ms, want);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    /// Records what became of a notice taken: its state, next time, last error, the
    /// endpoints that took it and when it settled. Only a notice still pending is changed
    /// (a process whose lease lapsed cannot undo another's delivery): whether it was.
    fn notice_settle(
        &self,
        notice: &crate::notice::Notice,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = notice;
        Box::pin(std::future::ready(Ok(false)))
    }
    /// Adds `notice` unless one with its id is there (a notice no event makes:
    /// `approval.expiring`): whether it was added.
    fn notice_put(&self, notice: crate::notice::Notice) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = notice;
        Box::pin(std::future::ready(Ok(false)))
    }
    /// The notices `query` asks for, newest first.
    fn notices(
        &self,
        query: crate::notice::NoticeQuery,
    ) -> BoxFuture<'_, Result<Vec<crate::notice::Notice>, StoreError>> {
        let _ = query;
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no notices".into(),
        ))))
    }
    /// How many notices are in each state.
    fn notice_counts(
        &self,
    ) -> BoxFuture<'_, Result<Vec<(crate::notice::NoticeState, u64)>, StoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    /// Removes up to `most` delivered or failed notices settled before `before_ms`: how many.
    fn notices_purge(&self, before_ms: u64, most: usize) -> BoxFuture<'_, Result<u64, StoreError>> {
        let _ = (before_ms, most);
        Box::pin(std::future::ready(Ok(0)))
    }
}

/// The operator's schedules and their ticks, shared by every process of a fleet: a tick is
/// claimed once (insert-if-absent by schedule and time), so exactly one process starts its run.
pub trait Schedules: Send + Sync {
    /// Keeps `schedule` (replacing the one with its id): whether it is new.
    fn schedule_put(
        &self,
        schedule: crate::schedule::Schedule,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = schedule;
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no schedules".into(),
        ))))
    }
    /// Every schedule, by id.
    fn schedules(&self) -> BoxFuture<'_, Result<Vec<crate::schedule::Schedule>, StoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    /// Removes schedule `id` and its ticks: whether it was there.
    fn schedule_remove(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(false)))
    }
    /// Claims `tick` unless its schedule's tick at that time is claimed already (by any
    /// process): whether this claim won.
    fn tick_claim(&self, tick: crate::schedule::Tick) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = tick;
        Box::pin(std::future::ready(Ok(false)))
    }
    /// Records what became of a claimed tick (its state, run and note).
    fn tick_update(&self, tick: &crate::schedule::Tick) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = tick;
        Box::pin(std::future::ready(Ok(())))
    }
    /// The ticks of `schedule` (of every schedule if `None`), newest first, at most `limit`
    /// (0: all).
    fn ticks(
        &self,
        schedule: Option<&str>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<crate::schedule::Tick>, StoreError>> {
        let _ = (schedule, limit);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// People's standing grants ([`crate::standing`]), shared by every process of a fleet.
pub trait Grants: Send + Sync {
    /// Keeps a new grant. A store without grants refuses.
    fn grant_put(
        &self,
        grant: crate::standing::StandingGrant,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = grant;
        Box::pin(std::future::ready(Err(StoreError::Io(
            "this store keeps no standing grants".into(),
        ))))
    }
    /// The grants (of `tenant` only, if given), newest first, revoked and expired ones too.
    fn grants(
        &self,
        tenant: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<crate::standing::StandingGrant>, StoreError>> {
        let _ = tenant;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    /// Revokes grant `id` (of `tenant` only, if given): whether it was live until now.
    fn grant_revoke(
        &self,
        id: &str,
        tenant: Option<&str>,
        revoked: crate::standing::Revoked,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = (id, tenant, revoked);
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// What the adapter measures of itself, when it does (its commits' latency, its log's copies
/// back).
pub trait StoreHealth: Send + Sync {
    /// How long this store's commits took (begin to durable), if it measures them.
    fn commit_latency(&self) -> Option<crate::metrics::HistogramSnapshot> {
        None
    }
    /// The copies of a write-ahead log back into the store that failed, if this store makes
    /// them (SQLite). The commits stay durable in the log; a log never copied back grows.
    fn checkpoint_failures(&self) -> Option<CheckpointFailures> {
        None
    }
}

/// The port to durable storage of run logs: every role a store plays. A front door that needs
/// only some asks for those ([`LogReader`], [`RunsIndex`], ...); an adapter implements each
/// role, and is an `EventStore` by that alone.
pub trait EventStore:
    LogWriter
    + LogReader
    + RunsIndex
    + ApprovalsIndex
    + Leases
    + SpecCatalog
    + IdempotencyKeys
    + NoticeOutbox
    + Schedules
    + Grants
    + StoreHealth
{
}

impl<T> EventStore for T where
    T: LogWriter
        + LogReader
        + RunsIndex
        + ApprovalsIndex
        + Leases
        + SpecCatalog
        + IdempotencyKeys
        + NoticeOutbox
        + Schedules
        + Grants
        + StoreHealth
        + ?Sized
{
}

/// Copies of a store's write-ahead log back into its file that failed
/// ([`StoreHealth::checkpoint_failures`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointFailures {
    /// How many failed.
    pub count: u64,
    /// What the last one failed with.
    pub last: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::StoreError;
    use crate::ids::RunId;

    #[test]
    fn a_fenced_driver_is_told_who_drives_the_run_or_that_nobody_does() {
        let fenced = |holder: &str| StoreError::Fenced {
            run: RunId("r1".into()),
            holder: holder.into(),
            epoch: 4,
        };
        assert_eq!(
            fenced("worker w2").to_string(),
            "run `r1` was taken over (lease 4), worker w2 drives it now: this process no \
             longer may append to it"
        );
        let nobody = fenced("").to_string();
        assert_eq!(
            nobody,
            "run `r1` was taken over (lease 4): this process no longer may append to it"
        );
    }
}

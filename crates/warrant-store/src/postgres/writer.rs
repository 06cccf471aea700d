//! The writers: every pending append of many runs committed in one transaction (group commit), checked against the rows they lock, with the notices that wake followers and workers.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc;
use warrant_core::status::RunStatus;
use warrant_core::store::{PendingApproval, StoreError};

use super::{
    Conn, EVENTS_CHANNEL, GROUP_COMMIT_MAX, Pg, READY_CHANNEL, Request, db, io, reconnect, sql_int,
    status_named, unsigned,
};
use crate::ApprovalChange;

/// The writer connections: while one commits a batch, the next gathers and commits another
/// (two batches touching one run serialise on its row lock, in order).
pub(super) const WRITERS: usize = 3;

/// A writer: takes every request waiting, commits them in one transaction, answers each. A
/// lost connection fails the batch it was committing (whether PostgreSQL committed it is
/// then unknown to the appenders, as with any lost answer: the run's log tells) and is
/// reconnected for the next.
pub(super) async fn writer_loop(
    pg: Arc<Pg>,
    rx: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Request>>>,
) {
    let mut conn: Option<Conn> = None;
    loop {
        let batch = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else { return };
            let mut batch = vec![first];
            while batch.len() < GROUP_COMMIT_MAX {
                match rx.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            batch
        };
        if conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            conn = reconnect(&pg.config, &pg.shown).await.ok().map(Conn::new);
        }
        let Some(c) = conn.as_mut() else {
            for req in batch {
                let _ = req.reply.send(Err(StoreError::Io(format!(
                    "cannot reach `{}`: nothing was appended",
                    pg.shown
                ))));
            }
            continue;
        };
        let began = warrant_core::metrics::Stopwatch::start();
        let committed = commit_batch(c, &batch, pg.present()).await;
        pg.commits.record(began.elapsed());
        match committed {
            Ok(results) => {
                for (req, result) in batch.into_iter().zip(results) {
                    if result.is_ok() {
                        pg.wake(&req.run.0);
                    }
                    let _ = req.reply.send(result);
                }
            }
            Err(e) => {
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

pub(super) const LOCK_RUNS: &str =
    "SELECT run_id, last_seq, epoch, holder, heartbeat_ms, status, tenant
    FROM warrant_runs WHERE run_id = ANY($1) ORDER BY run_id FOR UPDATE";
pub(super) const INSERT_RUNS: &str = "INSERT INTO warrant_runs (run_id, spec_id, decider, tenant, status, started_at_ms, last_seq, epoch)
    SELECT r, s, d, t, 'running', a, 0, e
    FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[]) AS u(r, s, d, t, a, e)
    ON CONFLICT (run_id) DO NOTHING
    RETURNING run_id, last_seq, epoch, holder, heartbeat_ms, status, tenant";
pub(super) const INSERT_EVENTS: &str = "INSERT INTO warrant_events (run_id, seq, n_events, body)
    SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::integer[], $4::text[])";
pub(super) const UPDATE_RUNS: &str =
    "UPDATE warrant_runs AS w SET last_seq = u.l, status = u.s, holder = u.h, heartbeat_ms = u.b,
        wake_at_ms = CASE WHEN u.s = 'sleeping' THEN coalesce(u.w, w.wake_at_ms) END,
        presence = CASE WHEN u.h IS NULL THEN NULL WHEN u.n THEN $8::integer ELSE w.presence END
    FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
                $7::bool[])
        AS u(r, l, s, h, b, w, n)
    WHERE w.run_id = u.r";
pub(super) const INSERT_APPROVALS: &str =
    "INSERT INTO warrant_approvals (request, run_id, tenant, requested_at_ms, body)
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
    ON CONFLICT (request) DO NOTHING";
pub(super) const SETTLE_APPROVALS: &str = "DELETE FROM warrant_approvals WHERE request = ANY($1)";
pub(super) const END_APPROVALS: &str = "DELETE FROM warrant_approvals WHERE run_id = ANY($1)";
pub(super) const INSERT_NOTICES: &str =
    "INSERT INTO warrant_notices (id, run_id, seq, kind, at_ms, state, next_at_ms)
    SELECT i, r, s, k, a, 'pending', a
    FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]) AS u(i, r, s, k, a)
    ON CONFLICT (id) DO NOTHING";
pub(super) const NOTIFY_MOVED: &str = "SELECT pg_notify($1, r) FROM UNNEST($2::text[]) AS r";
pub(super) const NOTIFY_READY: &str = "SELECT pg_notify($1, '')";
/// Prepared like every write: one prepared at the time of its use would go out after the
/// `COMMIT` already pipelined behind it, outside the transaction.
pub(super) const WAKE_ROOTS: &str =
    "UPDATE warrant_runs SET status = 'ready', holder = NULL, heartbeat_ms = NULL
    WHERE run_id = ANY($1) AND status = 'waiting'";

/// The rows of events a batch appends, column by column: one per append.
#[derive(Default)]
pub(super) struct NewEvents<'a> {
    pub(super) runs: Vec<&'a str>,
    pub(super) seqs: Vec<i64>,
    pub(super) counts: Vec<i32>,
    pub(super) bodies: Vec<&'a str>,
}

/// Runs a batch starts, column by column (for `UNNEST`).
#[derive(Default)]
pub(super) struct NewRuns<'a> {
    pub(super) ids: Vec<&'a str>,
    pub(super) specs: Vec<&'a str>,
    pub(super) deciders: Vec<&'a str>,
    pub(super) tenants: Vec<String>,
    pub(super) started: Vec<i64>,
    pub(super) epochs: Vec<i64>,
}

/// The runs a batch moved, column by column: their state after it.
#[derive(Default)]
pub(super) struct RunUpdates<'a> {
    pub(super) ids: Vec<&'a str>,
    pub(super) last_seq: Vec<i64>,
    pub(super) status: Vec<&'a str>,
    pub(super) holder: Vec<Option<&'a str>>,
    pub(super) heartbeat: Vec<Option<i64>>,
    pub(super) wake: Vec<Option<i64>>,
    pub(super) renewed: Vec<bool>,
}

/// Approval requests a batch makes, column by column.
#[derive(Default)]
pub(super) struct NewApprovals<'a> {
    pub(super) requests: Vec<&'a str>,
    pub(super) runs: Vec<&'a str>,
    pub(super) tenants: Vec<&'a str>,
    pub(super) asked_at: Vec<i64>,
    pub(super) bodies: Vec<String>,
}

/// Notices a batch makes, column by column.
#[derive(Default)]
pub(super) struct NewNotices<'a> {
    pub(super) ids: Vec<&'a str>,
    pub(super) runs: Vec<&'a str>,
    pub(super) seqs: Vec<i64>,
    pub(super) kinds: Vec<&'static str>,
    pub(super) at: Vec<i64>,
}

/// A run's row as the writer locked it.
pub(super) struct Locked {
    pub(super) last_seq: u64,
    pub(super) epoch: u64,
    pub(super) holder: Option<String>,
    pub(super) heartbeat_ms: Option<u64>,
    pub(super) status: RunStatus,
    /// When it wakes, if this batch put it to sleep.
    pub(super) wake_at_ms: Option<u64>,
    pub(super) tenant: String,
    /// Whether this batch changed it.
    pub(super) touched: bool,
    /// Whether this batch renewed its lease for a driver of this process (the lease then
    /// names this process's presence key).
    pub(super) renewed: bool,
}

/// The writer's statements, prepared once per connection.
pub(super) struct Statements {
    pub(super) lock_runs: tokio_postgres::Statement,
    pub(super) insert_runs: tokio_postgres::Statement,
    pub(super) insert_events: tokio_postgres::Statement,
    pub(super) update_runs: tokio_postgres::Statement,
    pub(super) insert_approvals: tokio_postgres::Statement,
    pub(super) settle_approvals: tokio_postgres::Statement,
    pub(super) end_approvals: tokio_postgres::Statement,
    pub(super) insert_notices: tokio_postgres::Statement,
    pub(super) notify_moved: tokio_postgres::Statement,
    pub(super) notify_ready: tokio_postgres::Statement,
    pub(super) wake_roots: tokio_postgres::Statement,
}

impl Statements {
    async fn of(conn: &Conn) -> Result<Statements, StoreError> {
        Ok(Statements {
            lock_runs: conn.statement(LOCK_RUNS).await?,
            insert_runs: conn.statement(INSERT_RUNS).await?,
            insert_events: conn.statement(INSERT_EVENTS).await?,
            update_runs: conn.statement(UPDATE_RUNS).await?,
            insert_approvals: conn.statement(INSERT_APPROVALS).await?,
            settle_approvals: conn.statement(SETTLE_APPROVALS).await?,
            end_approvals: conn.statement(END_APPROVALS).await?,
            insert_notices: conn.statement(INSERT_NOTICES).await?,
            notify_moved: conn.statement(NOTIFY_MOVED).await?,
            notify_ready: conn.statement(NOTIFY_READY).await?,
            wake_roots: conn.statement(WAKE_ROOTS).await?,
        })
    }
}

pub(super) type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);
pub(super) type Write<'a, T = u64> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send + 'a>,
>;

/// Commits `batch`; the leases it renews name `present`, this process's presence key.
///
/// Two round trips in the common case: `BEGIN` with the lock of the batch's runs, then every
/// write with `COMMIT` (each pipelined behind the other on the connection). A write that fails
/// aborts the transaction, so the `COMMIT` behind it commits nothing; any failure rolls back.
pub(super) async fn commit_batch(
    conn: &mut Conn,
    batch: &[Request],
    present: Option<i32>,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let st = Statements::of(conn).await?;
    let committed = commit_in(conn, &st, batch, present).await;
    if committed.is_err() && !conn.client.is_closed() {
        // Ends the transaction whatever stopped it (a warning only if it had ended).
        let _ = conn.client.batch_execute("ROLLBACK").await;
    }
    committed
}

async fn commit_in(
    conn: &Conn,
    st: &Statements,
    batch: &[Request],
    present: Option<i32>,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let client = &conn.client;
    let mut ids: Vec<&str> = batch.iter().map(|r| r.run.0.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    // INVARIANT (one order): each append's expected sequence and epoch are checked against
    // the rows locked here, in run-id order so concurrent writers cannot deadlock.
    // `BEGIN` and the lock go out together; the lock's rows are the second answer.
    let ids_param: [Param<'_>; 1] = [&ids];
    let begun: Vec<Write<'_, Vec<tokio_postgres::Row>>> = vec![
        Box::pin(async { client.batch_execute("BEGIN").await.map(|()| Vec::new()) }),
        Box::pin(client.query(&st.lock_runs, &ids_param)),
    ];
    let mut runs: HashMap<String, Locked> = HashMap::new();
    for answer in crate::together(begun).await {
        for row in answer.map_err(|e| db(&e))? {
            runs.insert(row.get(0), locked(&row)?);
        }
    }
    // New runs: inserted (and so locked) now; one another process created in the meantime is
    // locked as it is.
    let mut fresh: Vec<&Request> = Vec::new();
    for req in batch {
        if req.expected == 0
            && req.started.is_some()
            && !runs.contains_key(&req.run.0)
            && !fresh.iter().any(|f| f.run == req.run)
        {
            fresh.push(req);
        }
    }
    if !fresh.is_empty() {
        let mut cols = NewRuns::default();
        for req in &fresh {
            if let Some(started) = &req.started {
                cols.ids.push(&req.run.0);
                cols.specs.push(&started.spec_id);
                cols.deciders.push(&started.decider);
                cols.tenants
                    .push(started.tenant.clone().unwrap_or_default());
                cols.started.push(sql_int(started.at_ms)?);
                cols.epochs
                    .push(sql_int(req.driver.as_ref().map_or(1, |d| d.epoch.max(1)))?);
            }
        }
        let inserted = client
            .query(
                &st.insert_runs,
                &[
                    &cols.ids,
                    &cols.specs,
                    &cols.deciders,
                    &cols.tenants,
                    &cols.started,
                    &cols.epochs,
                ],
            )
            .await
            .map_err(|e| db(&e))?;
        for row in inserted {
            runs.insert(row.get(0), locked(&row)?);
        }
        let raced: Vec<&str> = cols
            .ids
            .iter()
            .copied()
            .filter(|r| !runs.contains_key(*r))
            .collect();
        if !raced.is_empty() {
            for row in client
                .query(&st.lock_runs, &[&raced])
                .await
                .map_err(|e| db(&e))?
            {
                runs.insert(row.get(0), locked(&row)?);
            }
        }
    }
    let mut results = Vec::with_capacity(batch.len());
    let mut events = NewEvents::default();
    let mut asked: Vec<(&str, &PendingApproval)> = Vec::new();
    let mut settled: Vec<&str> = Vec::new();
    let mut ended: Vec<&str> = Vec::new();
    let mut told = NewNotices::default();
    for req in batch {
        let Some(row) = runs.get_mut(&req.run.0) else {
            results.push(Err(if req.expected == 0 && req.started.is_none() {
                StoreError::Io(format!("run `{}` must begin with `run_started`", req.run))
            } else {
                StoreError::Conflict {
                    run: req.run.clone(),
                    expected: req.expected,
                    actual: 0,
                }
            }));
            continue;
        };
        // INVARIANT (fencing): a driver whose lease was taken over appends nothing (told so
        // before any conflict of sequence).
        if let Some(d) = &req.driver
            && row.last_seq > 0
            && d.epoch != row.epoch
        {
            results.push(Err(StoreError::Fenced {
                run: req.run.clone(),
                holder: row.holder.clone().unwrap_or_default(),
                epoch: row.epoch,
            }));
            continue;
        }
        if row.last_seq != req.expected {
            results.push(Err(StoreError::Conflict {
                run: req.run.clone(),
                expected: req.expected,
                actual: row.last_seq,
            }));
            continue;
        }
        for packed in &req.rows {
            events.runs.push(&req.run.0);
            events.seqs.push(sql_int(packed.first)?);
            events.counts.push(packed.n);
            events.bodies.push(&packed.body);
        }
        row.last_seq = req.expected + req.appended;
        if let Some(s) = req.status {
            row.status = s;
            row.wake_at_ms = req.wake_at_ms;
        }
        if req.driver.is_some() || req.status.is_some() {
            crate::renew_lease(
                row.status,
                req.driver.as_ref(),
                &mut row.holder,
                &mut row.heartbeat_ms,
            );
            row.renewed = req.driver.is_some() && row.holder.is_some();
        }
        row.touched = true;
        for change in &req.approvals {
            match change {
                ApprovalChange::Asked(p) => asked.push((&req.run.0, p)),
                ApprovalChange::Settled(request) => settled.push(request),
                ApprovalChange::Ended => ended.push(&req.run.0),
            }
        }
        for n in &req.notices {
            told.ids.push(&n.id);
            told.runs.push(&req.run.0);
            told.seqs.push(sql_int(n.seq)?);
            told.kinds.push(n.kind.name());
            told.at.push(sql_int(n.at_ms)?);
        }
        results.push(Ok(()));
    }
    // The rest goes out at once (pipelined), and is committed together.
    let events_params: [Param<'_>; 4] =
        [&events.runs, &events.seqs, &events.counts, &events.bodies];
    let touched: Vec<(&String, &Locked)> = runs.iter().filter(|(_, r)| r.touched).collect();
    let mut update = RunUpdates::default();
    for (id, r) in &touched {
        update.ids.push(id);
        update.last_seq.push(sql_int(r.last_seq)?);
        update.status.push(r.status.name());
        update.holder.push(r.holder.as_deref());
        update
            .heartbeat
            .push(r.heartbeat_ms.map(sql_int).transpose()?);
        update.wake.push(r.wake_at_ms.map(sql_int).transpose()?);
        update.renewed.push(r.renewed);
    }
    let update_params: [Param<'_>; 8] = [
        &update.ids,
        &update.last_seq,
        &update.status,
        &update.holder,
        &update.heartbeat,
        &update.wake,
        &update.renewed,
        &present,
    ];
    let mut approvals = NewApprovals::default();
    for (run, p) in &asked {
        approvals.requests.push(&p.request);
        approvals.runs.push(run);
        approvals.tenants.push(
            runs.get(*run)
                .map(|r| r.tenant.as_str())
                .unwrap_or_default(),
        );
        approvals.asked_at.push(sql_int(p.requested_at_ms)?);
        approvals.bodies.push(serde_json::to_string(p).map_err(io)?);
    }
    let approval_params: [Param<'_>; 5] = [
        &approvals.requests,
        &approvals.runs,
        &approvals.tenants,
        &approvals.asked_at,
        &approvals.bodies,
    ];
    let notice_params: [Param<'_>; 5] = [&told.ids, &told.runs, &told.seqs, &told.kinds, &told.at];
    let settled_params: [Param<'_>; 1] = [&settled];
    let ended_params: [Param<'_>; 1] = [&ended];
    // Delivered at commit: followers of these runs wake; workers wake for runs now ready to
    // claim (answered, queued, or given back).
    let moved = notices(touched.iter().map(|(id, _)| id.as_str()));
    let moved_params: [Param<'_>; 2] = [&EVENTS_CHANNEL, &moved];
    let ready_params: [Param<'_>; 1] = [&READY_CHANNEL];
    // A child answered makes its root ready: the root's driver carries the whole tree on.
    let woken: Vec<&str> = touched
        .iter()
        .filter(|(id, r)| r.status == RunStatus::Ready && id.contains('.'))
        .filter_map(|(id, _)| id.split('.').next())
        .collect();
    let woken_params: [Param<'_>; 1] = [&woken];
    let claimable = !woken.is_empty()
        || touched.iter().any(|(_, r)| match r.status {
            RunStatus::Ready => true,
            RunStatus::Running => r.holder.is_none(),
            _ => false,
        });
    let mut writes: Vec<Write<'_>> = Vec::new();
    if !events.runs.is_empty() {
        writes.push(Box::pin(client.execute(&st.insert_events, &events_params)));
    }
    if !touched.is_empty() {
        writes.push(Box::pin(client.execute(&st.update_runs, &update_params)));
        writes.push(Box::pin(client.execute(&st.notify_moved, &moved_params)));
    }
    if !asked.is_empty() {
        writes.push(Box::pin(
            client.execute(&st.insert_approvals, &approval_params),
        ));
    }
    if !settled.is_empty() {
        writes.push(Box::pin(
            client.execute(&st.settle_approvals, &settled_params),
        ));
    }
    if !ended.is_empty() {
        writes.push(Box::pin(client.execute(&st.end_approvals, &ended_params)));
    }
    if !told.ids.is_empty() {
        writes.push(Box::pin(client.execute(&st.insert_notices, &notice_params)));
    }
    if !woken.is_empty() {
        writes.push(Box::pin(client.execute(&st.wake_roots, &woken_params)));
    }
    if claimable {
        writes.push(Box::pin(client.execute(&st.notify_ready, &ready_params)));
    }
    warrant_fault::hit(warrant_fault::FaultPoint::MidAppend);
    writes.push(Box::pin(async {
        client.batch_execute("COMMIT").await.map(|()| 0)
    }));
    // The first failure is the batch's (a write's, before the COMMIT that then committed
    // nothing).
    for done in crate::together(writes).await {
        done.map_err(|e| db(&e))?;
    }
    Ok(results)
}

/// The runs a batch moved, as few notifications as fit them: run ids separated by spaces
/// (ids have none), each payload under PostgreSQL's 8000-byte limit. One notification per
/// batch rather than per run keeps `NOTIFY` cheap for the database and every listener.
pub(super) fn notices<'a>(runs: impl Iterator<Item = &'a str>) -> Vec<String> {
    const MOST: usize = 7_000;
    let mut out: Vec<String> = Vec::new();
    for run in runs {
        match out.last_mut() {
            Some(last) if last.len() + 1 + run.len() <= MOST => {
                last.push(' ');
                last.push_str(run);
            }
            _ => out.push(run.to_owned()),
        }
    }
    out
}

pub(super) fn locked(row: &tokio_postgres::Row) -> Result<Locked, StoreError> {
    Ok(Locked {
        last_seq: unsigned(row.get(1))?,
        epoch: unsigned(row.get(2))?,
        holder: row.get(3),
        heartbeat_ms: row.get::<_, Option<i64>>(4).map(unsigned).transpose()?,
        status: status_named(row.get(5))?,
        wake_at_ms: None,
        tenant: row.get(6),
        touched: false,
        renewed: false,
    })
}

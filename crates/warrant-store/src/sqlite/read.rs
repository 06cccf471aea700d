//! Reads of the file: a run's events, its summary, the runs index and the pending approvals.

use rusqlite::{Connection, OptionalExtension, params};
use warrant_core::event::StoredEvent;
use warrant_core::ids::RunId;
use warrant_core::status::RunStatus;
use warrant_core::store::{PendingApproval, RunPage, RunQuery, RunSummary, StoreError};

use super::{
    LogLayout, column_u64, column_u64_opt, has_column, io, log_layout, pending_by_folding, sql_int,
};

/// The columns of a run summary, in `summary_row`'s order; an older store lacks some.
pub(super) fn summary_columns(conn: &Connection) -> String {
    let or_null = |c: &str| {
        if has_column(conn, "runs", c) {
            c.to_owned()
        } else {
            "NULL".to_owned()
        }
    };
    // A run's last sequence is its log's in schema 4; before and since, `runs.last_seq`
    // keeps it.
    let last_seq = if log_layout(conn) == LogLayout::IndexedAppends {
        log_last_seq!()
    } else {
        "last_seq"
    };
    format!(
        "run_id, spec_id, decider, status, started_at_ms, {last_seq}, {}, {}, {}, {}",
        or_null("holder"),
        or_null("heartbeat_ms"),
        or_null("epoch"),
        or_null("wake_at_ms")
    )
}

pub(super) fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        run_id: RunId(r.get(0)?),
        spec_id: r.get(1)?,
        decider: r.get(2)?,
        status: {
            let name: String = r.get(3)?;
            name.parse().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    3,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?
        },
        started_at_ms: column_u64(r, 4)?,
        events: column_u64(r, 5)?,
        holder: r.get(6)?,
        heartbeat_ms: column_u64_opt(r, 7)?,
        epoch: column_u64_opt(r, 8)?.unwrap_or(1),
        note: None,
        wake_at_ms: column_u64_opt(r, 9)?,
    })
}

pub(super) fn read_events(
    conn: &Connection,
    run: &RunId,
    from_seq: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    // Schema 5: the run's rows, followed back from its last to the one holding `from_seq`
    // (each step to a lower position, so a damaged chain cannot loop); a row of another run
    // on the way is an error below.
    // Schema 4: a row holds an append's events: from the row holding `from_seq` on.
    let sql = match log_layout(conn) {
        LogLayout::ChainedAppends => {
            "WITH RECURSIVE chain(position) AS (
             SELECT last_position FROM runs WHERE run_id = ?1 AND last_position IS NOT NULL
             UNION ALL
             SELECT e.prev FROM events e JOIN chain c ON e.position = c.position
             WHERE e.seq > ?2 AND e.prev < e.position
         )
         SELECT e.position, e.seq, e.n_events, e.body, e.run_id = ?1
         FROM chain c JOIN events e ON e.position = c.position
         ORDER BY e.seq"
        }
        LogLayout::IndexedAppends => {
            "SELECT position, seq, n_events, body, 1 FROM events WHERE run_id = ?1
               AND seq >= COALESCE((SELECT seq FROM events WHERE run_id = ?1 AND seq <= ?2
                                    ORDER BY seq DESC LIMIT 1), 0)
             ORDER BY seq"
        }
        LogLayout::EventRows => {
            "SELECT position, seq, 1, body, 1 FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq"
        }
    };
    let mut stmt = conn.prepare_cached(sql).map_err(io)?;
    let rows = stmt
        .query_map(params![run.0, sql_int(from_seq)?], |r| {
            Ok((
                column_u64(r, 0)?,
                column_u64(r, 1)?,
                column_u64(r, 2)?,
                r.get::<_, String>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })
        .map_err(io)?;
    let mut log = crate::LogRows::new(run, from_seq);
    for row in rows {
        let (position, first, n, body, ours) = row.map_err(io)?;
        if !ours {
            return Err(StoreError::Io(format!(
                "run `{run}`: its chain of rows reaches row {position}, of another run"
            )));
        }
        log.continues(position, first)
            .map_err(|e| gap(conn, run).unwrap_or(e))?;
        log.push((position, first, n), &body)?;
    }
    let out = log.events;
    // Nothing read where the run's index says there are events: its last rows are gone. (The
    // index is asked first, by its key: an empty read, a follower's usual one, costs no scan.)
    if out.is_empty()
        && last_seq(conn, run).is_some_and(|last| last >= from_seq.max(1))
        && let Some(missing) = gap(conn, run)
    {
        return Err(missing);
    }
    Ok(out)
}

/// The run's last sequence number, as its index row records it.
pub(super) fn last_seq(conn: &Connection, run: &RunId) -> Option<u64> {
    conn.query_row(
        "SELECT last_seq FROM runs WHERE run_id = ?1",
        [&run.0],
        |r| column_u64(r, 0),
    )
    .ok()
}

/// When the events of `run` the store holds leave out some (a row deleted outside Warrant):
/// the error that says which. Scans the run's rows: only read once a read found a hole.
pub(super) fn gap(conn: &Connection, run: &RunId) -> Option<StoreError> {
    // The index first: rows another process appends meanwhile only add to what the scan sees.
    let last = last_seq(conn, run);
    let mut stmt = conn
        .prepare("SELECT seq, n_events FROM events WHERE run_id = ?1 ORDER BY seq")
        .ok()?;
    let rows = stmt
        .query_map([&run.0], |r| Ok((column_u64(r, 0)?, column_u64(r, 1)?)))
        .ok()?;
    let mut missing: Vec<(u64, u64)> = Vec::new();
    let mut next = 1u64;
    for row in rows {
        let (first, n) = row.ok()?;
        if first > next {
            missing.push((next, first - 1));
        }
        next = next.max(first.saturating_add(n));
    }
    if let Some(last) = last
        && last >= next
    {
        missing.push((next, last));
    }
    if missing.is_empty() {
        return None;
    }
    let count: u64 = missing.iter().map(|(a, b)| b - a + 1).sum();
    let listed: Vec<String> = missing
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a} to {b}")
            }
        })
        .collect();
    Some(StoreError::Io(format!(
        "run `{run}`'s log is missing event{} {} (the store was changed outside Warrant): \
         its events cannot be read in order, so it cannot be shown, reported or resumed; \
         restore the store from a backup",
        if count == 1 { "" } else { "s" },
        listed.join(", ")
    )))
}

pub(super) fn summary_of(conn: &Connection, run: &RunId) -> Result<Option<RunSummary>, StoreError> {
    let sql = format!(
        "SELECT {} FROM runs WHERE run_id = ?1",
        summary_columns(conn)
    );
    conn.prepare_cached(&sql)
        .map_err(io)?
        .query_row([&run.0], summary_row)
        .optional()
        .map_err(io)
}

pub(super) fn list_runs(conn: &Connection, query: &RunQuery) -> Result<RunPage, StoreError> {
    let sql = format!(
        "SELECT {} FROM runs
         WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR spec_id = ?2)
           AND (?3 IS NULL OR substr(run_id, 1, length(?3)) = ?3)
           AND (?4 IS NULL OR started_at_ms >= ?4)
           AND (?5 IS NULL OR started_at_ms < ?5 OR (started_at_ms = ?5
                AND rowid < (SELECT rowid FROM runs WHERE run_id = ?6)))
           AND (?8 IS NULL OR (status = 'sleeping' AND {wake} <= ?8))
         ORDER BY started_at_ms DESC, rowid DESC LIMIT ?7",
        summary_columns(conn),
        wake = if has_column(conn, "runs", "wake_at_ms") {
            "wake_at_ms"
        } else {
            "NULL"
        }
    );
    // One more than asked, to tell whether there is a next page; past `i64::MAX`, all.
    let limit: i64 = if query.limit == 0 {
        -1
    } else {
        i64::try_from(query.limit).map_or(i64::MAX, |l| l.saturating_add(1))
    };
    let mut stmt = conn.prepare_cached(&sql).map_err(io)?;
    let rows = stmt
        .query_map(
            params![
                query.status.map(RunStatus::name),
                query.spec_id,
                query.id_prefix,
                query.since_ms.map(sql_int).transpose()?,
                query
                    .after
                    .as_ref()
                    .map(|c| sql_int(c.started_at_ms))
                    .transpose()?,
                query.after.as_ref().map(|c| c.run_id.0.clone()),
                limit,
                query.due_by.map(sql_int).transpose()?
            ],
            summary_row,
        )
        .map_err(io)?;
    let all: Vec<RunSummary> = rows.collect::<Result<_, _>>().map_err(io)?;
    // The query did the filtering and the order; `page` cuts it and names the next cursor.
    let unfiltered = RunQuery {
        after: None,
        ..query.clone()
    };
    Ok(crate::page(all, &unfiltered, |_| true))
}

pub(super) fn pending_of(
    conn: &Connection,
    run: Option<&RunId>,
) -> Result<Vec<PendingApproval>, StoreError> {
    if !has_column(conn, "approvals", "body") {
        // A store made before the index: from the logs.
        let mut all = pending_by_folding(conn)?;
        all.retain(|p| run.is_none_or(|r| p.run_id == *r));
        return Ok(all);
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT body FROM approvals WHERE (?1 IS NULL OR run_id = ?1) ORDER BY requested_at_ms, request",
        )
        .map_err(io)?;
    let rows = stmt
        .query_map([run.map(|r| r.0.clone())], |r| r.get::<_, String>(0))
        .map_err(io)?;
    let mut out = Vec::new();
    for body in rows {
        let body = body.map_err(io)?;
        out.push(
            serde_json::from_str(&body)
                .map_err(|e| StoreError::Io(format!("a pending approval does not decode: {e}")))?,
        );
    }
    Ok(out)
}

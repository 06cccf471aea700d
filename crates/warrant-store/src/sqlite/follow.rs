//! Following a run's log: the commits this process hands its followers, and the file's `data_version` watched for other processes' commits.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::{broadcast, watch};
use warrant_core::event::StoredEvent;
use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::status::RunStatus;
use warrant_core::store::{EventFeed, StoreError};

use super::{FOLLOW_POLL_MS, Handed, data_version, read_events, read_only_connection, summary_of};
use crate::{FollowStep, Followed};

/// A follower of one run. Of a store open for writing ([`Local`]): handed this store's
/// commits by the writer, it reads the file only at its start, after a gap, and after another
/// process's commit. Of a read-only store: it reads the log when SQLite's `data_version` shows
/// a commit (looked at every `FOLLOW_POLL_MS`), and never otherwise.
pub(super) struct Feed {
    pub(super) path: PathBuf,
    /// Its own read-only connection, opened on first use.
    pub(super) conn: Arc<Mutex<Option<Connection>>>,
    pub(super) followed: Followed,
    /// `data_version` at the last read of the log.
    pub(super) seen_version: Option<i64>,
    pub(super) local: Option<Local>,
    /// For the event given last, when it came handed over: how long since its commit then.
    pub(super) since_commit: Option<std::time::Duration>,
}

/// What a follower in the writer's process is told.
pub(super) struct Local {
    /// The run's events as this store commits them.
    pub(super) pushed: broadcast::Receiver<Handed>,
    /// Bumped when the writer saw another connection commit.
    pub(super) foreign: watch::Receiver<u64>,
    /// An event taken while waiting, not yet given.
    pub(super) received: Option<Handed>,
    /// When the events taken and not yet given were committed, by sequence.
    pub(super) committed: VecDeque<(u64, warrant_core::metrics::Stopwatch)>,
    /// The file holds what was not handed over: the feed's start, a gap, a foreign commit.
    pub(super) must_read: bool,
}

impl Local {
    /// Moves the handed-over events that continue `followed` into it; whether there were any.
    /// One past the next sequence expected, or events dropped for a reader that fell behind,
    /// means the file must be read.
    fn take(&mut self, followed: &mut Followed) -> bool {
        let mut next = followed.next;
        let mut took = Vec::new();
        loop {
            let event = match self.received.take() {
                Some(e) => e,
                None => match self.pushed.try_recv() {
                    Ok(e) => e,
                    Err(broadcast::error::TryRecvError::Empty) => break,
                    Err(broadcast::error::TryRecvError::Lagged(_)) => {
                        self.must_read = true;
                        continue;
                    }
                    Err(broadcast::error::TryRecvError::Closed) => {
                        self.must_read = true;
                        break;
                    }
                },
            };
            let (event, committed) = event;
            match event.event.seq.cmp(&next) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => {
                    next += 1;
                    self.committed.push_back((event.event.seq, committed));
                    took.push(event);
                }
                std::cmp::Ordering::Greater => self.must_read = true,
            }
        }
        followed.fetched(took)
    }

    /// How long ago event `seq` was committed, if it was handed over (forgetting it and any
    /// before it).
    fn since_commit(&mut self, seq: u64) -> Option<std::time::Duration> {
        while let Some(&(at_seq, at)) = self.committed.front() {
            if at_seq > seq {
                break;
            }
            self.committed.pop_front();
            if at_seq == seq {
                return Some(at.elapsed());
            }
        }
        None
    }
}

/// What one look at the file found: the run's new events (when something was committed since
/// `seen`), the `data_version`, and the run's status.
pub(super) type Look = (Option<Vec<StoredEvent>>, i64, Option<RunStatus>);

pub(super) fn look(
    path: &Path,
    slot: &Mutex<Option<Connection>>,
    run: &RunId,
    from_seq: u64,
    seen: Option<i64>,
) -> Result<Look, StoreError> {
    let mut slot = slot
        .lock()
        .map_err(|_| StoreError::Io("follower connection poisoned".into()))?;
    if slot.is_none() {
        *slot = Some(read_only_connection(path)?.0);
    }
    let Some(conn) = slot.as_ref() else {
        return Err(StoreError::Io("no follower connection".into()));
    };
    let version = data_version(conn)?;
    if seen == Some(version) {
        return Ok((None, version, None));
    }
    // The status first, then the events: a run that ended before the status was read has its
    // last event among those read after it. (Read the other way round, a run finishing
    // between the two reads looked ended with its last events unread, and a follower stopped
    // short of `run_finished`.)
    let status = summary_of(conn, run)?.map(|s| s.status);
    let events = read_events(conn, run, from_seq)?;
    Ok((Some(events), version, status))
}

impl Feed {
    /// Reads the run's log from the next sequence (unless `seen` shows nothing was committed
    /// since the last read): `Some(true)` when it found events, `Some(false)` when more can
    /// come, `None` when the run ended before the sequence asked for.
    async fn read(&mut self, seen: Option<i64>) -> Result<Option<bool>, StoreError> {
        let (path, slot) = (self.path.clone(), self.conn.clone());
        let (run, from) = (self.followed.run.clone(), self.followed.next);
        let (events, version, status) =
            tokio::task::spawn_blocking(move || look(&path, &slot, &run, from, seen))
                .await
                .map_err(|e| StoreError::Io(format!("a store read stopped: {e}")))??;
        self.seen_version = Some(version);
        let Some(events) = events else {
            return Ok(Some(false));
        };
        if self.followed.fetched(events) {
            return Ok(Some(true));
        }
        Ok(self.followed.more_can_come(status)?.then_some(false))
    }
}

impl EventFeed for Feed {
    fn since_commit(&self) -> Option<std::time::Duration> {
        self.since_commit
    }

    fn next(&mut self) -> BoxFuture<'_, Result<Option<StoredEvent>, StoreError>> {
        Box::pin(async move {
            let pause = std::time::Duration::from_millis(FOLLOW_POLL_MS);
            loop {
                match self.followed.step() {
                    FollowStep::Give(e) => {
                        self.since_commit = self
                            .local
                            .as_mut()
                            .and_then(|l| l.since_commit(e.event.seq));
                        return Ok(Some(e));
                    }
                    FollowStep::End => return Ok(None),
                    FollowStep::Fetch => {}
                }
                let Some(local) = self.local.as_mut() else {
                    // A read-only store: look at the file now and then.
                    match self.read(self.seen_version).await? {
                        Some(true) => continue,
                        Some(false) => tokio::time::sleep(pause).await,
                        None => return Ok(None),
                    }
                    continue;
                };
                if local.take(&mut self.followed) {
                    continue;
                }
                if local.must_read {
                    local.must_read = false;
                    local.foreign.borrow_and_update();
                    match self.read(None).await? {
                        Some(true) => continue,
                        Some(false) => {}
                        None => return Ok(None),
                    }
                }
                let Some(local) = self.local.as_mut() else {
                    continue;
                };
                tokio::select! {
                    pushed = local.pushed.recv() => match pushed {
                        Ok(e) => local.received = Some(e),
                        Err(broadcast::error::RecvError::Lagged(_)) => local.must_read = true,
                        // The store was dropped: only other processes' commits remain.
                        Err(broadcast::error::RecvError::Closed) => self.local = None,
                    },
                    changed = local.foreign.changed() => {
                        local.must_read = true;
                        if changed.is_err() {
                            self.local = None;
                        }
                    }
                }
            }
        })
    }
}

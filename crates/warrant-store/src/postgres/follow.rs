//! Following: one connection listening for the writers' notices, and the feeds that follow a run's log with them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_postgres::NoTls;
use warrant_core::event::StoredEvent;
use warrant_core::ports::BoxFuture;
use warrant_core::store::{EventFeed, StoreError};

use super::{CANCELS_CHANNEL, EVENTS_CHANNEL, POLL_BOUND, PRESENCE_CLASS, Pg, READY_CHANNEL};
use crate::{FollowStep, Followed};

/// Keeps one connection listening, reconnecting it when it drops, and turns notifications
/// into wake-ups; the same connection holds this process's presence lock. Ends when the store
/// is dropped.
pub(super) async fn listen_loop(pg: std::sync::Weak<Pg>, mut stopped: watch::Receiver<()>) {
    let mut key = presence_key();
    loop {
        let Some(store) = pg.upgrade() else { return };
        let config = store.config.clone();
        drop(store);
        let connected = tokio::select! {
            c = config.connect(NoTls) => c,
            _ = stopped.changed() => return,
        };
        let Ok((client, mut connection)) = connected else {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(200)) => continue,
                _ = stopped.changed() => return,
            }
        };
        let listen =
            format!("LISTEN {EVENTS_CHANNEL}; LISTEN {READY_CHANNEL}; LISTEN {CANCELS_CHANNEL};");
        let (notes_tx, mut notes) = mpsc::unbounded_channel();
        // The connection must be polled for the LISTEN to be answered: it is driven here, its
        // notifications forwarded.
        let drive = async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(tokio_postgres::AsyncMessage::Notification(n))) => {
                        let _ = notes_tx.send(n);
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return,
                }
            }
        };
        let work = async {
            if client.batch_execute(&listen).await.is_err() {
                return;
            }
            // The same key again when it is free (the runs taken with it are still this
            // process's); another when a session the database has not yet seen end holds it.
            let mut present = None;
            for _ in 0..PRESENCE_TRIES {
                match client
                    .query_one(
                        "SELECT pg_try_advisory_lock($1, $2)",
                        &[&PRESENCE_CLASS, &key],
                    )
                    .await
                {
                    Ok(row) if row.get::<_, bool>(0) => {
                        present = Some(key);
                        break;
                    }
                    Ok(_) => key = presence_key(),
                    Err(_) => return,
                }
            }
            if let Some(store) = pg.upgrade() {
                store.presence.send_replace(present);
                store.listening.send_replace(true);
                // What was notified while nobody listened is unknown: everyone looks.
                store.ready.send_modify(|n| *n = n.wrapping_add(1));
                store.cancels.send_modify(|n| *n = n.wrapping_add(1));
                for tx in store.moved().values() {
                    tx.send_modify(|n| *n = n.wrapping_add(1));
                }
            }
            while let Some(n) = notes.recv().await {
                let Some(store) = pg.upgrade() else { return };
                match n.channel() {
                    EVENTS_CHANNEL => n.payload().split(' ').for_each(|run| store.wake(run)),
                    READY_CHANNEL => store.ready.send_modify(|v| *v = v.wrapping_add(1)),
                    CANCELS_CHANNEL => store.cancels.send_modify(|v| *v = v.wrapping_add(1)),
                    _ => {}
                }
            }
        };
        tokio::select! {
            () = drive => {}
            () = work => {}
            _ = stopped.changed() => return,
        }
        drop(client);
        if let Some(store) = pg.upgrade() {
            store.presence.send_replace(None);
            store.listening.send_replace(false);
        }
        // A short pause before listening again (the database may be restarting).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Keys tried for the presence lock before the process goes without one (its leases then
/// lapse only by time, as a store without presence locks).
const PRESENCE_TRIES: usize = 8;

/// A fresh presence key (positive, so that it reads the same as the lock's `objid`).
fn presence_key() -> i32 {
    use std::hash::BuildHasher;
    // Each `RandomState` is seeded anew: a key that differs between processes and tries.
    let h = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    i32::try_from(h % 0x7fff_fffe).map_or(1, |k| k + 1)
}

/// A follower of one run: it reads the run's log when the run moved (a notification, or this
/// process's own commit), and at [`POLL_BOUND`] when notifications may be lost.
pub(super) struct Feed {
    pub(super) pg: Arc<Pg>,
    pub(super) followed: Followed,
    pub(super) moved: watch::Receiver<u64>,
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
                self.moved.borrow_and_update();
                // The status first: a run seen ended has all its events committed (in the
                // same transaction), so the read after it finds them.
                let status = self.pg.status(&self.followed.run).await?;
                let events = self.pg.read(&self.followed.run, self.followed.next).await?;
                if self.followed.fetched(events) {
                    continue;
                }
                if !self.followed.more_can_come(status)? {
                    return Ok(None);
                }
                let bound = if *self.pg.listening.borrow() {
                    POLL_BOUND * 10
                } else {
                    POLL_BOUND
                };
                let _ = tokio::time::timeout(bound, self.moved.changed()).await;
            }
        })
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        let mut moved = self.pg.moved();
        if moved
            .get(&self.followed.run)
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            moved.remove(&self.followed.run);
        }
    }
}

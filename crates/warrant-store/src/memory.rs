//! An in-memory store: nothing survives the process. For tests and the memory benchmark.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use warrant_core::event::{Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::ports::{
    BoxFuture, CancelRequest, Driver, EventStore, Held, LEASE_TTL_MS, RunSummary, StoreError,
};

#[derive(Default)]
struct Inner {
    logs: HashMap<RunId, RunLog>,
    order: Vec<RunId>,
    position: u64,
    cancels: HashMap<RunId, CancelRequest>,
}

struct RunLog {
    summary: RunSummary,
    events: Vec<StoredEvent>,
}

/// Runs' logs in memory.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Inner>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Io("memory store poisoned".into()))
    }

    fn append_now(
        &self,
        run: &RunId,
        expected: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        let actual = inner.logs.get(run).map_or(0, |l| l.summary.events);
        if actual != expected {
            return Err(StoreError::Conflict {
                run: run.clone(),
                expected,
                actual,
            });
        }
        crate::check_contiguous(&events, expected).map_err(StoreError::Io)?;
        let facts = crate::run_facts(&events);
        let inner = &mut *inner;
        if !inner.logs.contains_key(run) {
            let Some((spec_id, decider, started)) = facts.started.clone() else {
                return Err(StoreError::Io(format!(
                    "run `{run}` must begin with `run_started`"
                )));
            };
            inner.order.push(run.clone());
            inner.logs.insert(
                run.clone(),
                RunLog {
                    summary: RunSummary {
                        run_id: run.clone(),
                        spec_id,
                        decider,
                        status: "running".into(),
                        started_at_ms: started,
                        events: 0,
                        holder: None,
                        heartbeat_ms: None,
                    },
                    events: Vec::new(),
                },
            );
        }
        let Some(log) = inner.logs.get_mut(run) else {
            return Err(StoreError::Io("run vanished".into()));
        };
        for event in events {
            inner.position += 1;
            log.events.push(StoredEvent {
                position: inner.position,
                run_id: run.clone(),
                event,
            });
        }
        log.summary.events = log.events.len() as u64;
        if let Some(status) = facts.status {
            log.summary.status = status;
        }
        let before = log.summary.holder.clone().zip(log.summary.heartbeat_ms);
        let after = crate::lease_after(&log.summary.status, driver, before);
        log.summary.holder = after.as_ref().map(|(h, _)| h.clone());
        log.summary.heartbeat_ms = after.map(|(_, t)| t);
        Ok(())
    }
}

impl EventStore for MemoryStore {
    fn append(
        &self,
        run: &RunId,
        expected_seq: u64,
        events: Vec<Arc<Event>>,
        driver: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let result = self.append_now(run, expected_seq, events, driver);
        Box::pin(std::future::ready(result))
    }

    fn read(&self, run: &RunId, from_seq: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let inner = self
            .inner
            .lock()
            .map_err(|_| StoreError::Io("memory store poisoned".into()))?;
        Ok(inner
            .logs
            .get(run)
            .map(|l| {
                l.events
                    .iter()
                    .filter(|e| e.event.seq >= from_seq)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let inner = self
            .inner
            .lock()
            .map_err(|_| StoreError::Io("memory store poisoned".into()))?;
        Ok(inner
            .order
            .iter()
            .rev()
            .filter_map(|id| inner.logs.get(id))
            .map(|l| l.summary.clone())
            .collect())
    }

    fn request_cancel(&self, run: &RunId, request: CancelRequest) -> Result<(), StoreError> {
        let mut inner = self
            .inner
            .lock()
            .map_err(|_| StoreError::Io("memory store poisoned".into()))?;
        inner.cancels.entry(run.clone()).or_insert(request);
        Ok(())
    }

    fn cancel_request(&self, run: &RunId) -> Result<Option<CancelRequest>, StoreError> {
        let inner = self.lock()?;
        Ok(inner.cancels.get(run).cloned())
    }

    fn claim(&self, run: &RunId, driver: &Driver) -> Result<Option<Held>, StoreError> {
        let mut inner = self.lock()?;
        let Some(log) = inner.logs.get_mut(run) else {
            return Err(StoreError::Io(format!("no run `{run}` in the store")));
        };
        let s = &mut log.summary;
        if let (Some(holder), Some(at)) = (&s.holder, s.heartbeat_ms)
            && **holder != *driver.holder
            && driver.now_ms.saturating_sub(at) < LEASE_TTL_MS
        {
            return Ok(Some(Held {
                holder: holder.clone(),
                heartbeat_ms: at,
            }));
        }
        s.holder = Some(driver.holder.to_string());
        s.heartbeat_ms = Some(driver.now_ms);
        Ok(None)
    }

    fn heartbeat(&self, run: &RunId, driver: &Driver) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        if let Some(log) = inner.logs.get_mut(run)
            && log.summary.holder.as_deref() == Some(&*driver.holder)
        {
            log.summary.heartbeat_ms = Some(driver.now_ms);
        }
        Ok(())
    }

    fn release(&self, run: &RunId, driver: &Driver) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        if let Some(log) = inner.logs.get_mut(run)
            && log.summary.holder.as_deref() == Some(&*driver.holder)
        {
            log.summary.holder = None;
            log.summary.heartbeat_ms = None;
        }
        Ok(())
    }

    fn summary(&self, run: &RunId) -> Result<Option<RunSummary>, StoreError> {
        let inner = self.lock()?;
        Ok(inner.logs.get(run).map(|l| l.summary.clone()))
    }
}

//! Event fan-out to subscribers, isolated from the run and from each other.
//!
//! INVARIANT (one order): each subscriber runs on its own task with its own bounded queue and
//! sees every run's events in sequence order, without gaps. Publishing never waits: when a
//! subscriber's queue is full the events are not queued, and the subscriber catches up from the
//! store before it sees anything newer. A subscriber that fails is stopped and reported; the
//! run and the other subscribers go on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use warrant_core::event::Event;
use warrant_core::ids::RunId;
use warrant_core::ports::EventStore;

/// Queue length per subscriber before it falls back to catching up from the store.
pub const SUBSCRIBER_QUEUE_MAX: usize = 1024;

/// Sees events. Runs on its own task: it may be slow, it may fail.
pub trait Subscriber: Send + 'static {
    /// One event of `run`. An error stops this subscriber (and is reported), nothing else.
    fn on_event(&mut self, run: &RunId, event: &Event) -> Result<(), String>;

    /// One event of `run` recorded before this engine took the run up (by the process that
    /// drove it earlier, or that queued it), read from the store so the subscriber sees the
    /// run whole. The same as `on_event` unless the subscriber counts what this process did.
    fn on_earlier(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
        self.on_event(run, event)
    }
}

/// A subscriber that stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberFailure {
    /// The name it was added under.
    pub name: String,
    /// What went wrong.
    pub error: String,
}

enum Msg {
    Events(RunId, Vec<Arc<Event>>),
    Flush(oneshot::Sender<()>),
}

struct Sub {
    name: String,
    tx: mpsc::Sender<Msg>,
    /// Highest sequence per run that could not be queued.
    missed: Arc<Mutex<HashMap<RunId, u64>>>,
    task: Option<JoinHandle<()>>,
}

#[derive(Clone)]
pub(crate) struct Hub {
    store: Arc<dyn EventStore>,
    count: Arc<AtomicUsize>,
    subs: Arc<Mutex<Vec<Sub>>>,
    failures: Arc<Mutex<Vec<SubscriberFailure>>>,
}

impl Hub {
    pub(crate) fn new(store: Arc<dyn EventStore>) -> Hub {
        Hub {
            store,
            count: Arc::new(AtomicUsize::new(0)),
            subs: Arc::new(Mutex::new(Vec::new())),
            failures: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub(crate) fn add(&self, name: &str, subscriber: Box<dyn Subscriber>) {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE_MAX);
        let missed = Arc::new(Mutex::new(HashMap::new()));
        let worker = Worker {
            name: name.to_owned(),
            subscriber,
            store: self.store.clone(),
            seen: HashMap::new(),
            missed: missed.clone(),
            failures: self.failures.clone(),
        };
        #[expect(
            clippy::disallowed_methods,
            reason = "the hub owns its subscribers' worker tasks"
        )]
        let task = tokio::spawn(worker.run(rx));
        if let Ok(mut subs) = self.subs.lock() {
            subs.push(Sub {
                name: name.to_owned(),
                tx,
                missed,
                task: Some(task),
            });
            self.count.store(subs.len(), Ordering::Release);
        }
    }

    pub(crate) fn has_subscribers(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// Hands events to every subscriber without waiting.
    pub(crate) fn publish(&self, run: &RunId, events: &[Arc<Event>]) {
        if self.count.load(Ordering::Acquire) == 0 || events.is_empty() {
            return;
        }
        let Ok(subs) = self.subs.lock() else { return };
        let last = events.last().map_or(0, |e| e.seq);
        for sub in subs.iter() {
            match sub.tx.try_send(Msg::Events(run.clone(), events.to_vec())) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    if let Ok(mut missed) = sub.missed.lock() {
                        let m = missed.entry(run.clone()).or_insert(0);
                        *m = (*m).max(last);
                    }
                }
                // The subscriber stopped; its failure is already recorded.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }

    /// Waits until each live subscriber has processed everything published so far.
    pub(crate) async fn drain(&self) -> Vec<SubscriberFailure> {
        let pending: Vec<(String, mpsc::Sender<Msg>, Option<JoinHandle<()>>)> =
            match self.subs.lock() {
                Ok(mut subs) => subs
                    .iter_mut()
                    .map(|s| (s.name.clone(), s.tx.clone(), s.task.take()))
                    .collect(),
                Err(_) => Vec::new(),
            };
        let mut finished = Vec::new();
        for (name, tx, task) in pending {
            let (done, wait) = oneshot::channel();
            let alive = tx.send(Msg::Flush(done)).await.is_ok() && wait.await.is_ok();
            if alive {
                // Still running: keep its task handle for a later drain.
                if let (Ok(mut subs), Some(task)) = (self.subs.lock(), task)
                    && let Some(s) = subs.iter_mut().find(|s| s.name == name && s.task.is_none())
                {
                    s.task = Some(task);
                }
            } else if let Some(task) = task {
                finished.push((name, task));
            }
        }
        for (name, task) in finished {
            if let Err(e) = task.await
                && e.is_panic()
                && let Ok(mut f) = self.failures.lock()
            {
                f.push(SubscriberFailure {
                    name,
                    error: "the subscriber panicked".into(),
                });
            }
        }
        self.failures.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

struct Worker {
    name: String,
    subscriber: Box<dyn Subscriber>,
    store: Arc<dyn EventStore>,
    seen: HashMap<RunId, u64>,
    missed: Arc<Mutex<HashMap<RunId, u64>>>,
    failures: Arc<Mutex<Vec<SubscriberFailure>>>,
}

impl Worker {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        while let Some(msg) = rx.recv().await {
            let result = match msg {
                Msg::Events(run, events) => self.deliver(&run, &events).await,
                Msg::Flush(done) => {
                    let r = self.catch_up().await;
                    let _ = done.send(());
                    r
                }
            };
            let result = match result {
                Ok(()) => self.catch_up().await,
                Err(e) => Err(e),
            };
            if let Err(error) = result {
                if let Ok(mut f) = self.failures.lock() {
                    f.push(SubscriberFailure {
                        name: self.name.clone(),
                        error,
                    });
                }
                return;
            }
        }
    }

    async fn deliver(&mut self, run: &RunId, events: &[Arc<Event>]) -> Result<(), String> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        let seen = self.seen.get(run).copied().unwrap_or(0);
        if first.seq > seen + 1 {
            // Before the first event it is handed of a run, what the run recorded earlier;
            // after that, what it missed of this engine's own.
            self.fill(run, seen + 1, first.seq - 1, seen == 0).await?;
        }
        for e in events {
            self.emit(run, e, false)?;
        }
        Ok(())
    }

    fn emit(&mut self, run: &RunId, e: &Event, earlier: bool) -> Result<(), String> {
        let seen = self.seen.entry(run.clone()).or_insert(0);
        if e.seq <= *seen {
            return Ok(());
        }
        *seen = e.seq;
        if earlier {
            self.subscriber.on_earlier(run, e)
        } else {
            self.subscriber.on_event(run, e)
        }
    }

    /// Reads events `from..=to` of `run` from the store and delivers them (`earlier`: as
    /// recorded before this engine took the run up).
    async fn fill(&mut self, run: &RunId, from: u64, to: u64, earlier: bool) -> Result<(), String> {
        let events = self
            .store
            .read(run, from)
            .await
            .map_err(|e| format!("catching up from the store: {e}"))?;
        for stored in events.iter().take_while(|s| s.event.seq <= to) {
            self.emit(run, &stored.event, earlier)?;
        }
        Ok(())
    }

    async fn catch_up(&mut self) -> Result<(), String> {
        let missed: Vec<(RunId, u64)> = match self.missed.lock() {
            Ok(mut m) => m.drain().collect(),
            Err(_) => return Ok(()),
        };
        for (run, upto) in missed {
            let seen = self.seen.get(&run).copied().unwrap_or(0);
            if upto > seen {
                self.fill(&run, seen + 1, upto, false).await?;
            }
        }
        Ok(())
    }
}

//! A small client of the Chrome DevTools protocol over its WebSocket: each command answered by
//! its id, each event handed to the page session it names. Only what the WebMCP surface uses
//! (`Target`, `Page`, `WebMCP`, `Browser.getVersion`), as raw JSON: the `WebMCP` domain is new
//! and in no generated binding.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Largest DevTools message read: a tool list with its schemas, a tool's result.
const MESSAGE_BYTES_MAX: usize = 16 << 20;

/// Who hears the events of one page session.
pub(crate) trait Listener: Send + Sync {
    /// An event of the session.
    fn event(&self, method: &str, params: &Value);
    /// The session or the whole connection is gone, and why.
    fn gone(&self, why: &str);
}

/// A connection to a browser's DevTools endpoint. Dropped, it closes.
pub(crate) struct Cdp {
    out: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
}

/// What the connection's task and its callers share.
#[derive(Default)]
struct Shared {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>,
    sessions: Mutex<HashMap<String, Weak<dyn Listener>>>,
    /// Why the connection ended, once it has.
    ended: Mutex<Option<String>>,
}

/// A poisoned lock only ever held plain maps: go on with what it holds.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Hands one message from the browser to whoever waits for it.
    fn route(&self, text: &str) {
        let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if let Some(id) = m.get("id").and_then(Value::as_u64) {
            let Some(tx) = lock(&self.pending).remove(&id) else {
                return;
            };
            let answer = match (m.remove("result"), m.remove("error")) {
                (_, Some(e)) => Err(e
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| e.to_string(), str::to_owned)),
                (Some(r), None) => Ok(r),
                (None, None) => Ok(Value::Null),
            };
            let _ = tx.send(answer);
            return;
        }
        let (Some(method), params) = (
            m.get("method").and_then(Value::as_str),
            m.get("params").unwrap_or(&Value::Null),
        ) else {
            return;
        };
        // A session the browser detached (its page closed or crashed) is named in the params.
        if method == "Target.detachedFromTarget" {
            if let Some(listener) = params
                .get("sessionId")
                .and_then(Value::as_str)
                .and_then(|s| lock(&self.sessions).remove(s))
                .and_then(|w| w.upgrade())
            {
                listener.gone("the browser closed the page");
            }
            return;
        }
        let Some(session) = m.get("sessionId").and_then(Value::as_str) else {
            return;
        };
        let listener = lock(&self.sessions).get(session).and_then(Weak::upgrade);
        if let Some(listener) = listener {
            listener.event(method, params);
        }
    }

    /// The connection ended: every command waiting fails, every session is gone.
    fn end(&self, why: String) {
        *lock(&self.ended) = Some(why.clone());
        for (_, tx) in lock(&self.pending).drain() {
            let _ = tx.send(Err(why.clone()));
        }
        let sessions: Vec<_> = lock(&self.sessions).drain().collect();
        for (_, w) in sessions {
            if let Some(listener) = w.upgrade() {
                listener.gone(&why);
            }
        }
    }
}

impl Cdp {
    /// Connects to the DevTools endpoint `url` (`ws://host:port/devtools/browser/<id>`).
    pub(crate) async fn connect(url: &str) -> Result<Cdp, String> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MESSAGE_BYTES_MAX))
            .max_frame_size(Some(MESSAGE_BYTES_MAX));
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await
            .map_err(|e| format!("cannot reach the browser's DevTools endpoint `{url}`: {e}"))?;
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        let shared = Arc::new(Shared::default());
        let task = shared.clone();
        #[expect(
            clippy::disallowed_methods,
            reason = "the DevTools client owns the task that reads and writes its socket"
        )]
        tokio::spawn(async move {
            let (mut sink, mut stream) = socket.split();
            let why = loop {
                tokio::select! {
                    command = rx.recv() => match command {
                        Some(text) => {
                            if let Err(e) = sink.send(Message::text(text)).await {
                                break format!("the browser's connection failed: {e}");
                            }
                        }
                        // Every handle dropped: close.
                        None => {
                            let _ = sink.close().await;
                            break "the browser's connection was closed".to_owned();
                        }
                    },
                    frame = stream.next() => match frame {
                        Some(Ok(Message::Text(text))) => task.route(text.as_str()),
                        Some(Ok(Message::Close(_))) | None => {
                            break "the browser closed its DevTools connection".to_owned();
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => break format!("the browser's connection failed: {e}"),
                    },
                }
            };
            task.end(why);
        });
        Ok(Cdp { out, shared })
    }

    /// Sends `method` with `params` (to page session `session`, if given) and waits for its
    /// answer. Unbounded here: the caller bounds the wait.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, String> {
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut message = Map::new();
        message.insert("id".into(), json!(id));
        message.insert("method".into(), json!(method));
        message.insert("params".into(), params);
        if let Some(s) = session {
            message.insert("sessionId".into(), json!(s));
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        if let Some(why) = lock(&self.shared.ended).clone() {
            lock(&self.shared.pending).remove(&id);
            return Err(why);
        }
        if self.out.send(Value::Object(message).to_string()).is_err() {
            lock(&self.shared.pending).remove(&id);
            return Err("the browser's connection is closed".to_owned());
        }
        let answer = rx
            .await
            .unwrap_or_else(|_| Err("the browser's connection is closed".to_owned()));
        answer.map_err(|e| format!("{method}: {e}"))
    }

    /// Whether the connection has ended (the browser closed it, or died).
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.shared.ended).is_some() || self.out.is_closed()
    }

    /// Hands the events of page session `session` to `listener` while it lives.
    pub(crate) fn listen(&self, session: &str, listener: Weak<dyn Listener>) {
        lock(&self.shared.sessions).insert(session.to_owned(), listener);
    }

    /// Stops handing `session`'s events to anyone.
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.shared.sessions).remove(session);
    }

    /// Sends `method` without waiting for its answer (closing what is no longer used).
    pub(crate) fn tell(&self, method: &str, params: Value) {
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed) + 1;
        let message = json!({"id": id, "method": method, "params": params});
        let _ = self.out.send(message.to_string());
    }
}

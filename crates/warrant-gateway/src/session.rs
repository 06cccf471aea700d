//! A client session as a run: the client is the run's decider. Each `tools/call` becomes the
//! decider's next decision (a proposed call the Bridge carries through every check); the
//! answer the client gets is read from what the run recorded, once it is durable.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use warrant_core::codes::Code;
use warrant_core::event::{DeciderIdentity, Decision, Outcome};
use warrant_core::ports::{BoxFuture, CancelRequest, Clock, DecideError, Decided, Decider};
use warrant_core::projection::Projection;
use warrant_engine::{Engine, RunResult};

use crate::{Gateway, reply};

/// Calls a client may have queued before the session takes them up.
const QUEUED_MAX: usize = 64;

/// How soon a call held for approval follows its run's log again after the store failed to
/// answer.
const ANSWER_RETRY: Duration = Duration::from_millis(200);

/// Most idempotency keys a session remembers (the oldest is forgotten first).
const KEYS_MAX: usize = 4_096;

/// The `_meta` key a client names a call's idempotency key with (what Warrant's own MCP
/// surface sends).
pub const IDEMPOTENCY_META_KEY: &str = "warrant/idempotencyKey";

/// One `tools/call`, as the engine names the tool, and where its answer goes.
pub(crate) struct ClientCall {
    pub(crate) tool: String,
    pub(crate) args: serde_json::Map<String, Value>,
    /// The client's idempotency key for it, if it gave one.
    pub(crate) key: Option<String>,
    pub(crate) reply: oneshot::Sender<CallToolResult>,
    /// Told when the call is held for approval, for a client that is asked in another round
    /// trip (a stateless client: an input-required result).
    pub(crate) held: Option<oneshot::Sender<warrant_app::ApprovalRow>>,
}

/// The call the client is waiting on: any call after `after` in the run's log is its.
struct Pending {
    after: u32,
    held: Option<oneshot::Sender<warrant_app::ApprovalRow>>,
    /// Its idempotency key and arguments' digest, to answer a repeat of it the same way.
    key: Option<(String, String)>,
    reply: oneshot::Sender<CallToolResult>,
}

/// What the session answered to each idempotency key: a call repeated with the same key and
/// arguments gets the same answer, and is not made again.
#[derive(Default)]
struct Keys {
    answers: std::collections::HashMap<String, (String, CallToolResult)>,
    order: std::collections::VecDeque<String>,
}

impl Keys {
    fn remember(&mut self, key: String, digest: String, answer: CallToolResult) {
        if self.answers.len() >= KEYS_MAX
            && let Some(oldest) = self.order.pop_front()
        {
            self.answers.remove(&oldest);
        }
        self.order.push_back(key.clone());
        self.answers.insert(key, (digest, answer));
    }
}

/// Who an upstream server's question to the person goes to: the client of the session whose
/// run made the call it is answering, when that client can be asked.
#[derive(Default)]
pub(crate) struct Elicitations {
    by_run: Mutex<std::collections::HashMap<warrant_core::ids::RunId, std::sync::Weak<dyn Asker>>>,
}

impl Elicitations {
    /// `run`'s questions go to `asker` while its session lasts.
    fn register(&self, run: &warrant_core::ids::RunId, asker: &Arc<dyn Asker>) {
        if let Ok(mut by_run) = self.by_run.lock()
            && !by_run.contains_key(run)
        {
            // Sessions that ended are forgotten as new ones come.
            by_run.retain(|_, a| a.strong_count() > 0);
            by_run.insert(run.clone(), Arc::downgrade(asker));
        }
    }
}

impl warrant_surfaces::Elicit for Elicitations {
    fn elicit(
        &self,
        run: &warrant_core::ids::RunId,
        request: Value,
        within: Duration,
    ) -> BoxFuture<'_, Option<Value>> {
        let asker = self
            .by_run
            .lock()
            .ok()
            .and_then(|by_run| by_run.get(run).and_then(std::sync::Weak::upgrade));
        Box::pin(async move { asker?.elicit(request, within).await })
    }
}

/// The client as the run's decider.
pub(crate) struct ClientDecider {
    identity: DeciderIdentity,
    /// Where the run's upstream questions are registered, and the client they go to.
    asking: Option<(Arc<Elicitations>, Arc<dyn Asker>)>,
    calls: tokio::sync::Mutex<mpsc::Receiver<Box<ClientCall>>>,
    /// Set when the gateway stops.
    stopping: tokio::sync::watch::Receiver<bool>,
    /// The call that opened the session, for the run's first decision.
    first: Mutex<Option<Box<ClientCall>>>,
    pending: Mutex<Option<Pending>>,
    keys: Mutex<Keys>,
    closed: Mutex<Option<CancelRequest>>,
    /// How long it waits for a call before giving the run's turn back (`limits.hold_idle_ms`).
    hold_idle: Duration,
    /// Its last `decide` gave the turn back: the run is let go until the next call.
    parked: std::sync::atomic::AtomicBool,
}

impl ClientDecider {
    fn new(
        identity: DeciderIdentity,
        calls: mpsc::Receiver<Box<ClientCall>>,
        stopping: tokio::sync::watch::Receiver<bool>,
        asking: Option<(Arc<Elicitations>, Arc<dyn Asker>)>,
        hold_idle: Duration,
    ) -> ClientDecider {
        ClientDecider {
            identity,
            asking,
            stopping,
            calls: tokio::sync::Mutex::new(calls),
            first: Mutex::new(None),
            pending: Mutex::new(None),
            keys: Mutex::new(Keys::default()),
            closed: Mutex::new(None),
            hold_idle,
            parked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The client's next call, or `None` once it left (or, stateless, was idle for
    /// `limits.idle_ms`); the session is closed when the gateway stops first.
    async fn next_call(&self) -> Option<Box<ClientCall>> {
        let mut stopping = self.stopping.clone();
        let mut calls = self.calls.lock().await;
        tokio::select! {
            call = calls.recv() => call,
            _ = stopping.wait_for(|s| *s) => {
                self.close("gateway", "the gateway was stopped");
                None
            }
        }
    }

    /// Closes the session because its client left, unless it was closed already.
    fn client_left(&self) {
        self.close(
            "client",
            "the client disconnected (or, stateless, called nothing for `limits.idle_ms`)",
        );
    }

    /// Answers the call the client waits on, if any.
    fn answer(&self, result: CallToolResult) {
        let pending = self.pending.lock().ok().and_then(|mut p| p.take());
        if let Some(p) = pending {
            self.reply(p, result);
        }
    }

    fn reply(&self, pending: Pending, result: CallToolResult) {
        if let Some((key, digest)) = pending.key
            && let Ok(mut keys) = self.keys.lock()
        {
            keys.remember(key, digest, result.clone());
        }
        // A client that left does not hear it; the log holds it anyway.
        let _ = pending.reply.send(result);
    }

    /// The answer already given to a call's idempotency key (and its arguments' digest),
    /// when it has one: the same answer for the same arguments, an error for others. `None`:
    /// a call to make.
    fn repeated(&self, key: Option<&(String, String)>, tool: &str) -> Option<CallToolResult> {
        let (key, digest) = key?;
        let keys = self.keys.lock().ok()?;
        let (given, answer) = keys.answers.get(key)?;
        Some(if given == digest {
            answer.clone()
        } else {
            reply::error(format!(
                "idempotency key `{}` was used for `{tool}` with other arguments: a key names one call",
                warrant_core::text::sanitize(key),
            ))
        })
    }

    /// Tells the client waiting on the call held for `row` that it is held, when it is asked
    /// in a round trip of its own. Whether it was told.
    fn tell_held(&self, row: &warrant_app::ApprovalRow) -> bool {
        let held = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.as_mut().and_then(|p| p.held.take()));
        held.is_some_and(|h| h.send(row.clone()).is_ok())
    }

    /// Ends the session at the run's next step.
    fn close(&self, by: &str, reason: impl Into<String>) {
        if let Ok(mut closed) = self.closed.lock()
            && closed.is_none()
        {
            *closed = Some(CancelRequest {
                by: by.to_owned(),
                reason: reason.into(),
                close: true,
            });
        }
    }
}

impl Decider for ClientDecider {
    fn identity(&self) -> DeciderIdentity {
        self.identity.clone()
    }

    /// The client is told its last call's result as the next decision is asked for.
    fn tells_outside(&self) -> bool {
        true
    }

    fn decide(&self, projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        Box::pin(async move {
            if let Some((elicitations, asker)) = &self.asking {
                elicitations.register(&projection.run_id, asker);
            }
            // The run decides again only once the last call's end is durable: answer it.
            let newest = projection.recent.last().map_or(0, |c| c.call.0);
            let pending = self.pending.lock().ok().and_then(|mut p| p.take());
            if let Some(p) = pending {
                let view = projection
                    .recent
                    .iter()
                    .find(|c| c.call.0 > p.after)
                    .map(std::sync::Arc::as_ref);
                self.reply(p, reply::of_view(view));
            }
            self.parked
                .store(false, std::sync::atomic::Ordering::SeqCst);
            loop {
                let first = self.first.lock().ok().and_then(|mut f| f.take());
                let next = match first {
                    Some(call) => Some(call),
                    // A client quiet for `hold_idle` gets its run let go: the session waits
                    // for its next call outside the engine (`drive`), holding next to nothing.
                    None => match tokio::time::timeout(self.hold_idle, self.next_call()).await {
                        Ok(call) => call,
                        Err(_) => {
                            self.parked.store(true, std::sync::atomic::Ordering::SeqCst);
                            return Err(DecideError::new(
                                Code::Cancelled,
                                "the client called nothing for `limits.hold_idle_ms`: the session's run is let go until its next call",
                            ));
                        }
                    },
                };
                let Some(call) = next else {
                    self.client_left();
                    return Err(DecideError::new(Code::Cancelled, "the client disconnected"));
                };
                let call = *call;
                let args = Arc::new(Value::Object(call.args));
                // Only a keyed call is compared with earlier ones.
                let key = call.key.map(|k| (k, warrant_core::canon::digest(&args)));
                if let Some(answer) = self.repeated(key.as_ref(), &call.tool) {
                    let _ = call.reply.send(answer);
                    continue;
                }
                if let Ok(mut p) = self.pending.lock() {
                    *p = Some(Pending {
                        after: newest,
                        held: call.held,
                        key,
                        reply: call.reply,
                    });
                }
                return Ok(Decided {
                    decision: Decision::Call {
                        tool: call.tool,
                        handle: None,
                        args,
                        claims: Vec::new(),
                    },
                    usage: None,
                    exchange: None,
                });
            }
        })
    }

    fn closed(&self) -> Option<CancelRequest> {
        self.closed.lock().ok().and_then(|c| c.clone())
    }

    fn parked(&self) -> bool {
        self.parked.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// What a session's client holds: where to send its calls, and why the session ended once it
/// has.
pub(crate) struct SessionHandle {
    /// Where its calls go, each boxed: a session's queue costs a few hundred bytes, not its
    /// calls' size times the queue's block.
    pub(crate) calls: mpsc::Sender<Box<ClientCall>>,
    pub(crate) ended: Arc<Mutex<Option<String>>>,
    /// When a call last began or ended (a stateless client's session closes once idle).
    pub(crate) used_ms: std::sync::atomic::AtomicU64,
    /// Calls held for approval whose client was answered "input required": by approval
    /// request, the digest of the held arguments and where the call's end will come.
    pub(crate) parked: Mutex<std::collections::HashMap<String, Parked>>,
    /// Dropped with the client's connection: a session waiting on a person then ends.
    _alive: oneshot::Sender<()>,
}

/// A held call whose client will come back with the person's answer.
pub(crate) struct Parked {
    pub(crate) args_digest: String,
    pub(crate) answer: oneshot::Receiver<CallToolResult>,
}

/// The person to ask about a held call through the client, when it can be asked.
pub(crate) trait Asker: Send + Sync {
    /// Asks about `row`; `None` when the person could not be asked or set the question aside.
    fn ask<'a>(&'a self, row: &'a warrant_app::ApprovalRow) -> BoxFuture<'a, Option<Asked>>;
    /// Passes an upstream server's question (`elicitation/create` parameters) on, within
    /// `within`: the client's answer, or `None` when it cannot be asked.
    fn elicit(&self, request: Value, within: Duration) -> BoxFuture<'_, Option<Value>>;
}

/// What the person answered through the client.
pub(crate) enum Asked {
    Approve,
    Deny(String),
}

impl Asked {
    /// The answer recorded: an approval of this call once, or a denial with the reason.
    pub(crate) fn answer(self) -> warrant_engine::Answer {
        match self {
            Asked::Approve => warrant_engine::Answer::Approve {
                scope: warrant_core::event::ApprovalScope::Once,
                until_ms: None,
                edited: None,
            },
            Asked::Deny(reason) => warrant_engine::Answer::Deny { reason },
        }
    }
}

/// Starts a session for a client named `client`, acting for `tenant`/`user`: its run begins
/// with the first call.
pub(crate) fn start(
    gateway: Arc<Gateway>,
    client: &str,
    tenant: &str,
    user: &str,
    asker: Option<Arc<dyn Asker>>,
) -> SessionHandle {
    let (calls, receiver) = mpsc::channel(QUEUED_MAX);
    let (alive, gone) = oneshot::channel();
    let ended = Arc::new(Mutex::new(None));
    let identity = DeciderIdentity {
        kind: warrant_core::DeciderKind::Client.name().to_owned(),
        name: warrant_core::text::sanitize(client)
            .chars()
            .take(120)
            .collect(),
        digest: None,
    };
    let model = identity.to_string();
    let decider = Arc::new(ClientDecider::new(
        identity,
        receiver,
        gateway.stopping.subscribe(),
        asker.clone().map(|a| (gateway.elicitations.clone(), a)),
        Duration::from_millis(gateway.config.limits.hold_idle_ms),
    ));
    let engine = gateway.app.engine_acting_for(tenant, user);
    engine.subscribe(
        "counts",
        gateway.counters.watcher(
            tenant,
            model,
            gateway.meter.clone(),
            gateway.app.answers.clone(),
        ),
    );
    let by = format!("{tenant}/{user} (through {client})");
    let live = gateway.session_guard();
    let task = drive(gateway, decider, engine, asker, gone, ended.clone(), by);
    let task = async move {
        task.await;
        drop(live);
    };
    spawn(task);
    SessionHandle {
        calls,
        ended,
        used_ms: std::sync::atomic::AtomicU64::new(warrant_engine::SystemClock.now_ms()),
        parked: Mutex::new(std::collections::HashMap::new()),
        _alive: alive,
    }
}

impl SessionHandle {
    /// Notes that a call began or ended now.
    pub(crate) fn touch(&self) {
        self.used_ms.store(
            warrant_engine::SystemClock.now_ms(),
            std::sync::atomic::Ordering::SeqCst,
        );
    }
}

/// The session of a stateless client (`tenant`, `user`, `client`): the one its earlier calls
/// opened, or a new one, closed once idle for the config's `limits.idle_ms`.
pub(crate) fn stateless(
    gateway: &Arc<Gateway>,
    client: &str,
    tenant: &str,
    user: &str,
) -> Arc<SessionHandle> {
    let key = (tenant.to_owned(), user.to_owned(), client.to_owned());
    let Ok(mut sessions) = gateway.stateless.lock() else {
        return Arc::new(start(gateway.clone(), client, tenant, user, None));
    };
    if let Some(s) = sessions.get(&key)
        && !s.calls.is_closed()
    {
        s.touch();
        return s.clone();
    }
    let session = Arc::new(start(gateway.clone(), client, tenant, user, None));
    sessions.insert(key.clone(), session.clone());
    let idle = Duration::from_millis(gateway.config.limits.idle_ms);
    let weak = Arc::downgrade(gateway);
    let mine = Arc::downgrade(&session);
    spawn(async move {
        // Wakes when the session would have been idle long enough since it was last used:
        // once an idle period, not at an interval.
        let mut wait = idle;
        loop {
            tokio::time::sleep(wait).await;
            let (Some(gateway), Some(session)) = (weak.upgrade(), mine.upgrade()) else {
                return;
            };
            let used = session.used_ms.load(std::sync::atomic::Ordering::SeqCst);
            let quiet_ms = warrant_engine::SystemClock.now_ms().saturating_sub(used);
            let idle_ms = gateway.config.limits.idle_ms;
            wait = Duration::from_millis(idle_ms.saturating_sub(quiet_ms).max(1));
            if quiet_ms >= idle_ms {
                // Dropped from the registry: once no call holds it, the session closes.
                if let Ok(mut sessions) = gateway.stateless.lock()
                    && sessions.get(&key).is_some_and(|s| Arc::ptr_eq(s, &session))
                {
                    sessions.remove(&key);
                }
                return;
            }
        }
    });
    session
}

#[expect(
    clippy::disallowed_methods,
    reason = "the gateway owns its sessions' tasks: each drives one run until its client leaves"
)]
fn spawn(task: impl std::future::Future<Output = ()> + Send + 'static) {
    tokio::spawn(task);
}

/// Drives a session's run until it ends: through every wait for a person, closing it when
/// the client leaves or a call's outcome is lost.
async fn drive(
    gateway: Arc<Gateway>,
    decider: Arc<ClientDecider>,
    engine: Engine,
    asker: Option<Arc<dyn Asker>>,
    mut gone: oneshot::Receiver<()>,
    ended: Arc<Mutex<Option<String>>>,
    by: String,
) {
    // The first call opens the run: a client that never calls leaves nothing to record.
    let first = tokio::select! {
        c = async { decider.calls.lock().await.recv().await } => c,
        _ = &mut gone => None,
    };
    let Some(first) = first else {
        return;
    };
    if let Ok(mut slot) = decider.first.lock() {
        *slot = Some(first);
    }
    let spec = gateway.spec();
    // The engine's futures are boxed: while the run is let go, this task holds only what it
    // waits with.
    let mut result =
        Box::pin(engine.run_with_setup(spec, decider.as_ref(), &gateway.surfaces, None)).await;
    let reason = loop {
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                break format!("the gateway could not record the session: {e}");
            }
        };
        if let Some(outcome) = &run.outcome {
            break ended_because(outcome);
        }
        // Its client was quiet: the run is let go (its lease kept) until the next call, which
        // takes it up again from its log; a client that leaves meanwhile has it closed, and a
        // cancellation (`warrant cancel`) or its deadline re-enters it at once to end it so.
        if let RunResult {
            run_id,
            parked: Some(parked),
            state,
            ..
        } = run
        {
            drop(state);
            let woken = tokio::select! {
                call = decider.next_call() => Some(call),
                _ = &mut gone => Some(None),
                _ = parked.cancelled() => None,
                () = parked.due() => None,
            };
            match woken {
                Some(Some(call)) => {
                    if let Ok(mut slot) = decider.first.lock() {
                        *slot = Some(call);
                    }
                }
                Some(None) => decider.client_left(),
                None => {}
            }
            drop(parked);
            result = Box::pin(engine.resume(&run_id, decider.as_ref(), &gateway.surfaces)).await;
            continue;
        }
        // An effect in doubt: the client is told, and the session ends here, its run waiting
        // for the reconciliation (nothing is sent again).
        if let Some(call) = run.state.in_doubt().next() {
            decider.answer(reply::in_doubt(call));
            break format!(
                "call {} (`{}`) is in doubt: the session's run waits for its reconciliation (`warrant reconcile {} {}`)",
                call.id, call.tool, run.run_id, call.id
            );
        }
        if !Box::pin(wait_for_answer(
            &gateway,
            &run,
            &decider,
            asker.as_deref(),
            &mut gone,
            &by,
        ))
        .await
        {
            decider.close(
                "client",
                "the client disconnected while a call waited for approval",
            );
        }
        result = Box::pin(engine.resume(&run.run_id, decider.as_ref(), &gateway.surfaces)).await;
    };
    decider.answer(reply::ended(&reason));
    if let Ok(mut e) = ended.lock() {
        *e = Some(reason);
    }
}

fn ended_because(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Closed { by, reason } => format!("closed by {by}: {reason}"),
        Outcome::Cancelled { by, reason } => format!("cancelled by {by}: {reason}"),
        Outcome::Exhausted { limit, value } => {
            format!("its limit `{limit}` ({value}) was reached")
        }
        Outcome::Failed { fault } => format!("it failed: {}", fault.message),
        other => format!("it ended `{}`", other.name()),
    }
}

/// Waits until the call `run` holds for approval is answered (through the client, or
/// elsewhere) or its request expires. `false` when the client left first.
async fn wait_for_answer(
    gateway: &Gateway,
    run: &RunResult,
    decider: &ClientDecider,
    asker: Option<&dyn Asker>,
    gone: &mut oneshot::Receiver<()>,
    by: &str,
) -> bool {
    let Ok(rows) = gateway.app.approvals(Some(&run.run_id)).await else {
        return true;
    };
    let Some(row) = rows
        .into_iter()
        .find(|r| r.run == run.run_id && r.status == warrant_core::ApprovalState::Pending)
    else {
        // Answered meanwhile: the run goes on.
        return true;
    };
    if gateway.config.approvals.elicit
        && let Some(asker) = asker
    {
        let asked = tokio::select! {
            a = asker.ask(&row) => a,
            _ = &mut *gone => return false,
        };
        let answer = asked.map(Asked::answer);
        if let Some(answer) = answer {
            // Answered elsewhere first: that answer stands, and the run goes on with it.
            let _ = gateway.app.answer(&row.request, answer, by).await;
            return true;
        }
    }
    // A client asked in a round trip of its own hears that its call is held (and may come
    // back with the person's answer); the request waits durably meanwhile.
    decider.tell_held(&row);
    // Held durably: answered with `warrant approve` / `deny`, or expired — or its tool
    // changed meanwhile, and the question is no longer the one asked.
    let schema = gateway.offer().schema_of(&row.tool).cloned();
    let mut changes = gateway.changes.subscribe();
    loop {
        let reshaped = gateway.offer().schema_of(&row.tool).cloned() != schema;
        if reshaped {
            let reason = format!(
                "`{}` changed (its input schema, or it is no longer offered) while the call waited: the approval asked for is not for this tool any more; call it again",
                row.tool
            );
            let _ = gateway
                .app
                .answer(
                    &row.request,
                    warrant_engine::Answer::Deny { reason },
                    "gateway",
                )
                .await;
            return true;
        }
        if warrant_engine::SystemClock.now_ms() >= row.expires_at_ms {
            return true;
        }
        // Woken by the run's log (an answer, from any process), a change of the tools, or the
        // client leaving; asked again after a store that failed to answer, a moment later.
        let answered = gateway
            .app
            .wait_for_answer(&run.run_id, &row.request, row.expires_at_ms);
        tokio::select! {
            settled = answered => match settled {
                Ok(_) => return true,
                // Tried again until the request expires, as a store coming back answers.
                Err(_) => tokio::time::sleep(ANSWER_RETRY).await,
            },
            _ = changes.changed() => {}
            _ = &mut *gone => return false,
        }
    }
}

//! The WebMCP surface: the tools a web page registers in a browser
//! (`document.modelContext.registerTool`), offered as a provider's. The page is opened in a
//! headless Chromium ([`browser`]) in a browser context of its own (its cookies and storage
//! this surface's alone), its tools learnt from the DevTools protocol's `WebMCP.toolsAdded`
//! and `toolsRemoved` events and called with `WebMCP.invokeTool`, whose answer is the first
//! `WebMCP.toolResponded` of the invocation ([`cdp`]).
//!
//! The engine stays the brain; the page is the arms and legs. Tools belong to the document
//! that registered them: a navigation of the page (`Page.frameNavigated`) or a tool removed
//! changes the observation's version, so a handle issued before it is stale and a call under
//! it is refused until the page is observed again — a tool whose schema changed included. A
//! call the page never answers (it navigated away, crashed or hung) is an answer lost: a
//! commit is in doubt and goes the reconcile path, a read may be asked again. The page's
//! `readOnlyHint` is believed only of a trusted page; the spec's `effects` rule over it.

pub(crate) mod browser;
pub(crate) mod cdp;
pub mod pages;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use warrant_core::canon;
use warrant_core::event::{ActionRecord, Effect, PageSnapshot, ToolHints, ToolOrigin};
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError, SurfaceErrorKind,
};
use warrant_core::spec::WebMcpSpec;

use browser::Browser;
pub use browser::CHROMIUM_FLAGS;
use cdp::Listener;

/// How long a page's tool list must stay unchanged after its load before it is observed: the
/// scripts of a page register their tools as they run.
const SETTLE: Duration = Duration::from_millis(150);

/// The DevTools protocol's messages this surface depends on, for a clear error when a browser
/// lacks them.
pub const PROTOCOL: &[&str] = &[
    "Browser.getVersion",
    "Target.createBrowserContext",
    "Target.createTarget",
    "Target.attachToTarget",
    "Target.closeTarget",
    "Target.disposeBrowserContext",
    "Target.getTargetInfo",
    "Page.enable",
    "Page.navigate",
    "Page.frameNavigated",
    "Page.frameStartedNavigating",
    "Page.frameStoppedLoading",
    "Page.loadEventFired",
    "WebMCP.enable",
    "WebMCP.toolsAdded",
    "WebMCP.toolsRemoved",
    "WebMCP.invokeTool",
    "WebMCP.toolResponded",
    "Inspector.targetCrashed",
    "Target.detachedFromTarget",
];

/// A tool as the page registered it.
#[derive(Clone, Debug)]
struct PageTool {
    frame: String,
    description: String,
    input_schema: Arc<Value>,
    read_only: Option<bool>,
    /// The script that registered it (the first frame of its stack trace).
    script: Option<String>,
    /// Declared by the document's own markup (a `<form toolname=...>`), not by a script.
    declarative: bool,
}

/// How an invocation ended.
#[derive(Debug)]
enum Answer {
    /// `WebMCP.toolResponded`: its status, output and exception.
    Responded(Value),
    /// The page went before it answered (navigated, crashed, closed).
    Gone(String),
}

/// What the page's events say, as they come.
#[derive(Default)]
struct PageState {
    /// Bumped at every change of what the page offers (a document, a tool added or removed).
    changes: u64,
    /// The main frame, once it has a document.
    main_frame: String,
    /// Where the main frame began to go (another document), until it got there or stopped.
    leaving: Option<String>,
    /// The main frame's document and where it is.
    loader: String,
    url: String,
    origin: String,
    loaded: bool,
    /// When what it offers last changed.
    changed_at: Option<tokio::time::Instant>,
    tools: BTreeMap<String, PageTool>,
    /// Invocations waiting for their first answer.
    waiting: HashMap<String, oneshot::Sender<Answer>>,
    /// First answers that came before their invocation was waited for.
    early: HashMap<String, Answer>,
    /// Invocations answered (a later answer of the same one is ignored).
    answered: HashSet<String>,
    /// Why the page is gone, once it is.
    gone: Option<String>,
    /// The version of what it offers now, once asked (forgotten at every change).
    version: Option<String>,
    /// What it offers now, once observed (forgotten at every change): a decision's
    /// observation of an unchanged page costs a clone of an `Arc`.
    observed: Option<Observation>,
    /// What the page showed of itself when last asked, and when (forgotten at every change;
    /// asked again once it is [`SNAPSHOT_FRESH`] old).
    snapshot: Option<(tokio::time::Instant, PageSnapshot)>,
}

/// The page's state, fed by its session's events.
#[derive(Default)]
struct Page {
    state: Mutex<PageState>,
    changed: Notify,
}

impl Page {
    fn state(&self) -> MutexGuard<'_, PageState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl PageState {
    fn touch(&mut self) {
        self.changes += 1;
        self.changed_at = Some(tokio::time::Instant::now());
        self.version = None;
        self.observed = None;
        self.snapshot = None;
    }

    /// The version of what the page offers now: its document, and each tool's name, schema,
    /// hint and registering script — digested once per change, not at every look.
    fn version(&mut self) -> &str {
        let tools = &self.tools;
        let loader = &self.loader;
        self.version.get_or_insert_with(|| {
            let listing: Vec<Value> = tools
                .iter()
                .map(|(name, t)| json!([name, &*t.input_schema, t.read_only, t.script]))
                .collect();
            let digest = canon::digest(&json!([loader, listing]));
            digest
                .trim_start_matches("sha256:")
                .get(..16)
                .unwrap_or_default()
                .to_owned()
        })
    }

    /// Every invocation still waiting ends: the page is no longer the one that was asked.
    fn abandon(&mut self, why: &str) {
        for (_, tx) in self.waiting.drain() {
            let _ = tx.send(Answer::Gone(why.to_owned()));
        }
    }
}

impl Listener for Page {
    fn event(&self, method: &str, params: &Value) {
        let mut s = self.state();
        match method {
            "Page.frameNavigated" => {
                let frame = params.get("frame").unwrap_or(&Value::Null);
                let id = text(frame, "id");
                if frame.get("parentId").is_none() {
                    s.main_frame = id.clone();
                    s.leaving = None;
                    s.loader = text(frame, "loaderId");
                    s.url = text(frame, "url");
                    s.origin = text(frame, "securityOrigin");
                    s.loaded = false;
                    // The old document's tools went with it, and so did its invocations.
                    s.tools.clear();
                    let why = format!("the page navigated to {} before it answered", s.url);
                    s.abandon(&why);
                } else {
                    s.tools.retain(|_, t| t.frame != id);
                }
                s.touch();
            }
            "Page.loadEventFired" => {
                s.loaded = true;
                s.touch();
            }
            // The main frame begins to leave its document: what its tools answer from now on
            // may be the browser closing them, not the page.
            "Page.frameStartedNavigating" => {
                if text(params, "frameId") == s.main_frame
                    && text(params, "navigationType") != "sameDocument"
                {
                    s.leaving = Some(text(params, "url"));
                }
                return;
            }
            "Page.frameStoppedLoading" => {
                if text(params, "frameId") == s.main_frame {
                    s.leaving = None;
                }
                return;
            }
            "WebMCP.toolsAdded" => {
                for t in params
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let script = t
                        .pointer("/stackTrace/callFrames/0/url")
                        .and_then(Value::as_str)
                        .filter(|u| !u.is_empty())
                        .map(str::to_owned);
                    s.tools.insert(
                        text(t, "name"),
                        PageTool {
                            frame: text(t, "frameId"),
                            description: text(t, "description"),
                            input_schema: Arc::new(
                                t.get("inputSchema")
                                    .cloned()
                                    .unwrap_or_else(|| json!({"type": "object"})),
                            ),
                            read_only: t.pointer("/annotations/readOnly").and_then(Value::as_bool),
                            script,
                            declarative: t.get("backendNodeId").is_some(),
                        },
                    );
                }
                s.touch();
            }
            "WebMCP.toolsRemoved" => {
                for t in params
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let name = t.as_str().map_or_else(|| text(t, "name"), str::to_owned);
                    s.tools.remove(&name);
                }
                s.touch();
            }
            "WebMCP.toolResponded" => {
                let id = text(params, "invocationId");
                if !s.answered.insert(id.clone()) {
                    return;
                }
                // A document being left answers its invocations still waiting with an empty
                // output, which its tools never gave: that is the page going, not an answer.
                let answer = match &s.leaving {
                    Some(url) if unloaded(params) => {
                        Answer::Gone(format!("the page navigated to {url} before it answered"))
                    }
                    _ => Answer::Responded(params.clone()),
                };
                match s.waiting.remove(&id) {
                    Some(tx) => {
                        let _ = tx.send(answer);
                    }
                    None => {
                        s.early.insert(id, answer);
                    }
                }
            }
            "Inspector.targetCrashed" => {
                drop(s);
                self.gone("the page crashed");
                return;
            }
            _ => return,
        }
        drop(s);
        self.changed.notify_waiters();
    }

    fn gone(&self, why: &str) {
        let mut s = self.state();
        s.gone = Some(why.to_owned());
        s.abandon(why);
        s.touch();
        drop(s);
        self.changed.notify_waiters();
    }
}

/// The origin (`scheme://host[:port]`) of `url`, empty when it has none (`about:blank`).
fn origin_of(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return String::new();
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Credentials are no part of an origin.
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let scheme = scheme.to_ascii_lowercase();
    // A scheme's default port is no part of its origin either, as the browser writes it.
    let default = match scheme.as_str() {
        "http" => Some(":80"),
        "https" => Some(":443"),
        _ => None,
    };
    let host = default
        .and_then(|port| host.strip_suffix(port))
        .unwrap_or(host);
    format!("{scheme}://{}", host.to_ascii_lowercase())
}

/// `value[key]` as a string, empty when it is not one.
fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// How long a page's snapshot of itself (URL, title) is used before the browser is asked
/// again: a page that changes what it offers or its document is asked at once; one that only
/// retitles itself is seen within this.
const SNAPSHOT_FRESH: Duration = Duration::from_secs(1);

/// Tries at opening a page again once it went.
const REOPEN_TRIES: u32 = 3;

/// A web page's WebMCP tools as a provider.
pub struct WebMcpSurface {
    name: String,
    spec: WebMcpSpec,
    trusted: bool,
    output_bytes_max: usize,
    /// The run's shared browser contexts, to open the page again in.
    run: Option<RunContexts>,
    /// The page open now; another once it is revived.
    tab: Mutex<Arc<Tab>>,
    /// One revival at a time.
    reviving: tokio::sync::Mutex<()>,
    /// Bounds opening and observing the page.
    limit: Duration,
}

/// One opening of the page: the browser, context, target and session it lives in, closed
/// with the last holder (the surface, or a call still waiting on it).
struct Tab {
    browser: Arc<Browser>,
    /// Held while the page is open: the context is disposed of with its last page.
    _context: Arc<Context>,
    target: String,
    session: String,
    page: Arc<Page>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        self.browser.cdp.forget(&self.session);
        self.browser
            .cdp
            .tell("Target.closeTarget", json!({"targetId": self.target}));
    }
}

impl Tab {
    /// Sends `method` to the browser (`session` false) or this page's session, within
    /// `limit`.
    async fn call(
        &self,
        method: &str,
        params: Value,
        session: bool,
        limit: Duration,
    ) -> Result<Value, SurfaceError> {
        let session = session.then_some(self.session.as_str());
        tokio::time::timeout(limit, self.browser.cdp.call(method, params, session))
            .await
            .map_err(|_| {
                SurfaceError::not_sent(format!(
                    "the browser did not answer `{method}` within {} ms",
                    limit.as_millis()
                ))
            })?
            .map_err(SurfaceError::not_sent)
    }
}

impl std::fmt::Debug for WebMcpSurface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebMcpSurface")
            .field("name", &self.name)
            .field("url", &self.spec.url)
            .finish_non_exhaustive()
    }
}

/// A browser context (its cookies and storage), disposed of when the last page in it closes.
struct Context {
    browser: Arc<Browser>,
    id: String,
}

impl Drop for Context {
    fn drop(&mut self) {
        self.browser.cdp.tell(
            "Target.disposeBrowserContext",
            json!({"browserContextId": self.id}),
        );
    }
}

impl Context {
    async fn new(browser: &Arc<Browser>) -> Result<Arc<Context>, String> {
        let made = browser
            .cdp
            .call(
                "Target.createBrowserContext",
                json!({"disposeOnDetach": true}),
                None,
            )
            .await?;
        Ok(Arc::new(Context {
            browser: browser.clone(),
            id: text(&made, "browserContextId"),
        }))
    }
}

/// The browser contexts the pages of one run share (`webmcp.storage: run`, the default): one
/// per browser, made by the first page that needs it, disposed of with the last of them.
#[derive(Clone, Default)]
pub struct RunContexts {
    made: Arc<tokio::sync::Mutex<HashMap<Option<String>, std::sync::Weak<Context>>>>,
}

impl std::fmt::Debug for RunContexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContexts").finish_non_exhaustive()
    }
}

impl RunContexts {
    /// The run's context on `browser` (at `endpoint`).
    async fn on(
        &self,
        endpoint: Option<&str>,
        browser: &Arc<Browser>,
    ) -> Result<Arc<Context>, String> {
        let mut made = self.made.lock().await;
        let key = endpoint.map(str::to_owned);
        // A context in a browser that went (crashed, closed) is not used again.
        if let Some(context) = made
            .get(&key)
            .and_then(std::sync::Weak::upgrade)
            .filter(|c| !c.browser.cdp.is_closed())
        {
            return Ok(context);
        }
        let context = Context::new(browser).await?;
        made.insert(key, Arc::downgrade(&context));
        Ok(context)
    }
}

impl WebMcpSurface {
    /// Opens `spec`'s page, for provider `name`, in a browser context of its own, and waits
    /// (`limit_ms` at most) until it has loaded and its tools have settled.
    pub async fn open(
        name: &str,
        spec: &WebMcpSpec,
        trusted: bool,
        limit_ms: u64,
    ) -> Result<WebMcpSurface, String> {
        WebMcpSurface::open_in(None, name, spec, trusted, limit_ms).await
    }

    /// The same, in the browser context the pages of one run share when the spec says so
    /// (`storage: run`, the default) and `run` is given; else in a context of its own.
    pub async fn open_in(
        run: Option<&RunContexts>,
        name: &str,
        spec: &WebMcpSpec,
        trusted: bool,
        limit_ms: u64,
    ) -> Result<WebMcpSurface, String> {
        let limit = Duration::from_millis(limit_ms);
        let tab = Tab::open(run, spec, limit).await?;
        Ok(WebMcpSurface {
            name: name.to_owned(),
            spec: spec.clone(),
            trusted,
            output_bytes_max: spec
                .output_bytes_max
                .unwrap_or(crate::OUTPUT_BYTES_MAX_DEFAULT),
            run: run.cloned(),
            tab: Mutex::new(Arc::new(tab)),
            reviving: tokio::sync::Mutex::new(()),
            limit,
        })
    }

    /// The page open now.
    fn tab(&self) -> Arc<Tab> {
        self.tab
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Opens the page again when it is gone (it crashed, the browser went or closed it): a
    /// few tries, each bounded like the first opening. A page still open has nothing to do.
    async fn reopen(&self) -> warrant_core::ports::Restart {
        let _one = self.reviving.lock().await;
        let mut attempts = 0;
        let mut error = None;
        while self.tab().page.state().gone.is_some() && attempts < REOPEN_TRIES {
            attempts += 1;
            match Tab::open(self.run.as_ref(), &self.spec, self.limit).await {
                Ok(tab) => {
                    *self
                        .tab
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(tab);
                    error = None;
                }
                Err(e) => error = Some(SurfaceError::new(SurfaceErrorKind::Down, e)),
            }
        }
        warrant_core::ports::Restart { attempts, error }
    }

    /// The browser's product name and version (`Chrome/156...`).
    pub fn browser_product(&self) -> String {
        self.tab().browser.product.clone()
    }
}

impl Tab {
    /// Opens `spec`'s page in a context of the run's (`run`, when the spec shares one) or its
    /// own, in the browser the spec names or this process's.
    async fn open(
        run: Option<&RunContexts>,
        spec: &WebMcpSpec,
        limit: Duration,
    ) -> Result<Tab, String> {
        let browser = Browser::shared(spec.browser.as_deref(), limit).await?;
        let cdp = &browser.cdp;
        let context = match (run, spec.storage) {
            (Some(run), warrant_core::spec::PageStorage::Run) => {
                run.on(spec.browser.as_deref(), &browser).await?
            }
            _ => Context::new(&browser).await?,
        };
        let target = cdp
            .call(
                "Target.createTarget",
                json!({"url": "about:blank", "browserContextId": context.id}),
                None,
            )
            .await?;
        let target = text(&target, "targetId");
        let attached = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
                None,
            )
            .await?;
        let session = text(&attached, "sessionId");
        let page = Arc::new(Page::default());
        let listener: Arc<dyn Listener> = page.clone();
        cdp.listen(&session, Arc::downgrade(&listener));
        let product = browser.product.clone();
        let tab = Tab {
            browser,
            _context: context,
            target,
            session,
            page,
        };
        tab.call("Page.enable", json!({}), true, limit)
            .await
            .map_err(|e| e.message)?;
        if let Err(e) = tab.call("WebMCP.enable", json!({}), true, limit).await {
            return Err(format!(
                "{product} has no WebMCP: {} (Warrant needs a Chromium with the `WebMCP` \
                 DevTools domain, started with `--enable-features=WebMCPTesting`)",
                e.message
            ));
        }
        let navigated = tab
            .call("Page.navigate", json!({"url": spec.url}), true, limit)
            .await
            .map_err(|e| e.message)?;
        if let Some(error) = navigated.get("errorText").and_then(Value::as_str) {
            return Err(format!("cannot open {}: {error}", spec.url));
        }
        drop(listener);
        Ok(tab)
    }
}

impl WebMcpSurface {
    /// The page went (it crashed, the browser went or closed it): nothing more is sent to it
    /// until it is opened again ([`Surface::revive`]).
    fn gone(&self, why: &str) -> SurfaceError {
        SurfaceError::new(
            SurfaceErrorKind::Down,
            format!("the page of `{}` is gone: {why}", self.name),
        )
    }

    fn effect(&self, tool: &str, read_only: Option<bool>) -> Effect {
        crate::effect_of(&self.spec.effects, self.trusted, tool, read_only)
    }

    /// What the page offers once it has loaded and its tool list has been still for
    /// [`SETTLE`], within the surface's bound.
    async fn observe_settled(&self, tab: &Tab) -> Result<Observation, SurfaceError> {
        let until = tokio::time::Instant::now() + self.limit;
        loop {
            let notified = tab.page.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wait_until = {
                let mut s = tab.page.state();
                if let Some(why) = &s.gone {
                    return Err(self.gone(why));
                }
                let settled_at = s.changed_at.map(|t| t + SETTLE);
                match settled_at {
                    Some(at) if s.loaded && at <= tokio::time::Instant::now() => {
                        return Ok(self.observation(&mut s));
                    }
                    Some(at) if s.loaded => at,
                    _ => until,
                }
            };
            if tokio::time::Instant::now() >= until {
                return Err(SurfaceError::not_sent(format!(
                    "{} did not load within {} ms",
                    self.spec.url,
                    self.limit.as_millis()
                )));
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(wait_until.min(until)) => {}
            }
        }
    }

    /// `observation` with what the page shows of itself now: its address and title, as the
    /// browser reports them (not as the page's script would).
    async fn with_snapshot(
        &self,
        tab: &Tab,
        mut observation: Observation,
    ) -> Result<Observation, SurfaceError> {
        let now = tokio::time::Instant::now();
        let kept = tab
            .page
            .state()
            .snapshot
            .as_ref()
            .filter(|(at, _)| now.saturating_duration_since(*at) < SNAPSHOT_FRESH)
            .map(|(_, snapshot)| snapshot.clone());
        if let Some(snapshot) = kept {
            observation.page = Some(snapshot);
            return Ok(observation);
        }
        let info = tab
            .call(
                "Target.getTargetInfo",
                json!({"targetId": tab.target}),
                false,
                self.limit,
            )
            .await?;
        let info = info.get("targetInfo").unwrap_or(&Value::Null);
        let snapshot = PageSnapshot::new(&text(info, "url"), &text(info, "title"));
        tab.page.state().snapshot = Some((now, snapshot.clone()));
        observation.page = Some(snapshot);
        Ok(observation)
    }

    fn observation(&self, s: &mut PageState) -> Observation {
        if let Some(seen) = &s.observed {
            return seen.clone();
        }
        let actions: Vec<ActionRecord> = s
            .tools
            .iter()
            .map(|(name, t)| ActionRecord {
                name: name.clone(),
                effect: self.effect(name, t.read_only),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                hints: t.read_only.map(|r| ToolHints {
                    read_only: Some(r),
                    trusted: self.trusted,
                    ..ToolHints::default()
                }),
                origin: Some(ToolOrigin {
                    page: s.origin.clone(),
                    // A form the document declares is the page's own; a script the browser
                    // did not name is nobody's.
                    script: match (&t.script, t.declarative) {
                        (Some(url), _) => origin_of(url),
                        (None, true) => s.origin.clone(),
                        (None, false) => String::new(),
                    },
                }),
            })
            .collect();
        let observation = Observation {
            version: s.version().to_owned(),
            actions: actions.into(),
            page: None,
        };
        s.observed = Some(observation.clone());
        observation
    }

    async fn call(&self, call: Invocation) -> Result<CallOutput, SurfaceError> {
        let input = match &**call.args() {
            Value::Object(m) => Value::Object(m.clone()),
            Value::Null => json!({}),
            other => {
                return Err(SurfaceError::invalid(format!(
                    "arguments must be an object, not {other}"
                )));
            }
        };
        let tool = call.tool();
        let tab = self.tab();
        let (frame, document) = {
            let s = tab.page.state();
            if let Some(why) = &s.gone {
                return Err(self.gone(why));
            }
            match s.tools.get(tool) {
                Some(t) => (t.frame.clone(), s.loader.clone()),
                None => {
                    return Err(SurfaceError::not_sent(format!(
                        "the page no longer offers `{tool}`: observe it again"
                    )));
                }
            }
        };
        let params = json!({"frameId": frame, "toolName": tool, "input": input});
        let invoked = tab
            .browser
            .cdp
            .call("WebMCP.invokeTool", params, Some(&tab.session))
            .await;
        let invocation = match invoked {
            Ok(answer) => text(&answer, "invocationId"),
            // The browser refused it (an unknown tool, a frame gone): nothing ran.
            Err(e) if !e.contains("connection") => return Err(SurfaceError::rejected(e)),
            // The browser went: a read changed nothing; a commit may have reached the page.
            Err(e) if call.effect() == Effect::Read => return Err(self.gone(&e)),
            Err(e) => return Err(SurfaceError::answer_lost(e)),
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut s = tab.page.state();
            // The page may have moved on while the browser told us the invocation's id: its
            // document went (and with it every invocation then waiting, this one unknown yet).
            let left = (s.loader != document)
                .then(|| format!("the page navigated to {} before it answered", s.url));
            match (s.early.remove(&invocation), left) {
                // An answer it gave before it went is its answer.
                (Some(Answer::Responded(answered)), Some(why)) if unloaded(&answered) => {
                    return Err(SurfaceError::answer_lost(why));
                }
                (Some(answer), _) => {
                    let _ = tx.send(answer);
                }
                (None, Some(why)) => return Err(SurfaceError::answer_lost(why)),
                (None, None) => {
                    if let Some(why) = s.gone.clone() {
                        return Err(SurfaceError::answer_lost(why));
                    }
                    s.waiting.insert(invocation.clone(), tx);
                }
            }
        }
        // Unbounded here: the engine bounds the call (its timeout makes a commit in doubt).
        let _forget = Forget {
            page: &tab.page,
            invocation: &invocation,
        };
        let why = match rx.await {
            Ok(Answer::Responded(answered)) => return Ok(self.output(&answered)),
            Ok(Answer::Gone(why)) => why,
            Err(_) => "the page's session ended".to_owned(),
        };
        // A read whose page went (crashed, closed) changed nothing: the page is opened again
        // and asked again. A commit's answer is lost, and it may have happened.
        if call.effect() == Effect::Read && tab.page.state().gone.is_some() {
            return Err(self.gone(&why));
        }
        Err(SurfaceError::answer_lost(why))
    }

    /// A `toolResponded` as a call's output: a structured result as it is, a result of one
    /// text block that holds JSON as that JSON, other content blocks as they are; an error
    /// status is the page's error.
    fn output(&self, answered: &Value) -> CallOutput {
        let is_error = answered.get("status").and_then(Value::as_str) != Some("Completed");
        let raw = if is_error {
            // What the page threw (`Error: ...` and where), else what it said.
            answered
                .pointer("/exception/description")
                .or_else(|| answered.get("exception"))
                .or_else(|| answered.get("errorText").filter(|t| t != &&json!("")))
                .or_else(|| answered.get("output"))
                .cloned()
                .unwrap_or(Value::Null)
        } else {
            answered.get("output").cloned().unwrap_or(Value::Null)
        };
        let output = match raw {
            Value::Object(mut m) => match (m.remove("structuredContent"), m.remove("content")) {
                (Some(structured), _) => structured,
                (None, Some(content)) => one_json_text(&content).unwrap_or(content),
                (None, None) => Value::Object(m),
            },
            Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
            other => other,
        };
        CallOutput {
            output: crate::bound(output, self.output_bytes_max),
            is_error,
        }
    }
}

/// Whether a `toolResponded` is what the browser says of an invocation whose document went
/// before it answered: `Completed` with an empty output.
fn unloaded(answered: &Value) -> bool {
    answered.get("output") == Some(&json!([]))
}

/// Forgets an invocation nobody waits for any more (the engine gave up on it).
struct Forget<'a> {
    page: &'a Page,
    invocation: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.page.state().waiting.remove(self.invocation);
    }
}

/// The JSON a content list of one text block holds, if it holds JSON.
fn one_json_text(content: &Value) -> Option<Value> {
    match content.as_array()?.as_slice() {
        [block] if block.get("type").and_then(Value::as_str) == Some("text") => {
            serde_json::from_str(block.get("text")?.as_str()?).ok()
        }
        _ => None,
    }
}

impl Surface for WebMcpSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(async move {
            let tab = self.tab();
            let observation = self.observe_settled(&tab).await?;
            self.with_snapshot(&tab, observation).await
        })
    }

    fn revive(&self) -> BoxFuture<'_, warrant_core::ports::Restart> {
        Box::pin(self.reopen())
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(self.call(call))
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        let tab = self.tab();
        let mut s = tab.page.state();
        let current = s.gone.is_none() && s.version() == version;
        Box::pin(std::future::ready(current))
    }
}

/// 128 bits from the operating system's randomness (std's hasher keys), in hex: a path
/// segment nobody guesses.
fn unguessable() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    (0..2)
        .map(|_| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0);
            format!("{:016x}", h.finish())
        })
        .collect()
}

/// The browser lane: a spec's in-process providers served as WebMCP pages ([`pages::Pages`])
/// on a loopback port of this process, for as long as this lives, so the unchanged spec runs
/// its `reference` providers in a browser (`Reach::pages`).
pub struct BrowserLane {
    base: String,
    pages: Arc<pages::Pages>,
    stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for BrowserLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserLane")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Drop for BrowserLane {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl BrowserLane {
    /// Serves the `reference` providers of `spec`, each made from `catalog` with its
    /// `config`, under its name in the spec.
    pub async fn start(
        catalog: &crate::ReferenceCatalog,
        spec: &warrant_core::Spec,
    ) -> Result<BrowserLane, String> {
        let mut providers = BTreeMap::new();
        for (name, p) in &spec.providers {
            let Some(reference) = &p.reference else {
                continue;
            };
            let made = catalog
                .make(reference, p.config.as_ref())
                .map_err(|e| format!("provider `{name}`: {e}"))?
                .ok_or_else(|| format!("unknown reference provider `{reference}`"))?;
            providers.insert(name.clone(), made);
        }
        BrowserLane::serve(providers, "127.0.0.1:0", &unguessable()).await
    }

    /// Serves `providers` on `address` (loopback only), each at `/<prefix>/<name>/` (at
    /// `/<name>/` when `prefix` is empty).
    pub async fn serve(
        providers: BTreeMap<String, Arc<dyn crate::Provider>>,
        address: &str,
        prefix: &str,
    ) -> Result<BrowserLane, String> {
        let wanted: std::net::SocketAddr = address.parse().map_err(|_| {
            format!("`{address}` is not an IP address and port (e.g. 127.0.0.1:8700)")
        })?;
        if !wanted.ip().is_loopback() {
            return Err(format!(
                "{wanted} is not a loopback address: the pages are served on this machine only"
            ));
        }
        let listener = tokio::net::TcpListener::bind(wanted)
            .await
            .map_err(|e| format!("cannot listen on {wanted}: {e}"))?;
        let at = listener
            .local_addr()
            .map_err(|e| format!("cannot read the pages' address: {e}"))?;
        let pages = Arc::new(pages::Pages::new(prefix, providers));
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = pages.clone();
        #[expect(
            clippy::disallowed_methods,
            reason = "the browser lane owns the task that serves its pages"
        )]
        tokio::spawn(serving.serve(listener, async move {
            let _ = stopped.await;
        }));
        let base = if prefix.is_empty() {
            format!("http://{at}")
        } else {
            format!("http://{at}/{prefix}")
        };
        Ok(BrowserLane {
            base,
            pages,
            stop: Some(stop),
        })
    }

    /// Where the pages are: `<base>/<provider>/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// What the pages did: successful calls by provider and tool.
    pub fn ledger(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.pages.ledger()
    }

    /// Provider `name` (`reference: <reference>` in the spec) reached as its page under
    /// `base`: the page's tools take the effects the in-process provider declares.
    pub(crate) async fn surface(
        reach: crate::Reach<'_>,
        run: &RunContexts,
        base: &str,
        name: &str,
        provider: &warrant_core::spec::ProviderSpec,
        reference: &str,
    ) -> Result<Arc<dyn Surface>, String> {
        let made = reach
            .catalog
            .make(reference, provider.config.as_ref())?
            .ok_or_else(|| format!("unknown reference provider `{reference}`"))?;
        let page = WebMcpSpec {
            url: format!("{base}/{name}/"),
            browser: None,
            effects: made
                .actions()
                .into_iter()
                .map(|a| (a.name, a.effect))
                .collect(),
            output_bytes_max: None,
            // Each provider's page has storage of its own, as in process each has its state.
            storage: warrant_core::spec::PageStorage::Provider,
        };
        let trusted = provider.trust == Some(warrant_core::spec::Trust::Trusted);
        let surface =
            WebMcpSurface::open_in(Some(run), name, &page, trusted, reach.start_ms).await?;
        Ok(Arc::new(surface))
    }
}

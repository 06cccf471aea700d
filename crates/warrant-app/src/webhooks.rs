//! Webhooks: the operator's endpoints, told of what runs need from people (an approval asked,
//! a run waiting, a call in doubt, an end) from the store's outbox of notices
//! ([`warrant_core::notice`]), at least once.
//!
//! - The outbox is written by the append that records each event, in its transaction; a
//!   [`Deliverer`] in any process with `--webhooks FILE` (`serve`, `worker`, `gateway`) takes
//!   due notices under a lease (`NoticeOutbox::notices_due`), posts them, and records what
//!   became of each. A process killed between the commit and the post leaves the notice
//!   pending: the next deliverer sends it. A notice a receiver took is not sent to it again
//!   (`delivered_to`), however often it is retried for another endpoint.
//! - Each post is signed as the Standard Webhooks convention has it: headers `webhook-id` (the
//!   notice's id, the same on every retry: a receiver dedupes on it), `webhook-timestamp`
//!   (seconds) and `webhook-signature` (`v1,` and the base64 of HMAC-SHA256 over
//!   `id.timestamp.body` with the endpoint's secret).
//! - A body is Warrant's JSON ([`Format::Json`]) or Slack's (`text` and `blocks`,
//!   [`Format::Slack`]). An approval's notice carries signed approve and deny links
//!   ([`Link`]) when the file has `links`: the server checks the signature, the expiry and the
//!   arguments' digest, shows what is asked, and records the answer only on the page's `POST`
//!   (a chat client that previews a link answers nothing).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use serde::Deserialize;
use serde_json::{Value, json};
use warrant_core::event::{EventKind, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::notice::{KEPT_MS, Notice, NoticeKind, NoticeState};
use warrant_core::status::{ApprovalState, RunStatus};
use warrant_core::store::NoticeOutbox;

use crate::App;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Largest webhooks file read.
const WEBHOOKS_BYTES_MAX: u64 = 1 << 20;

/// Notices taken at once.
const TAKE_AT_ONCE: usize = 32;

/// How long a deliverer holds the notices it took: past it (the process died), another takes
/// them. Longer than a post may take ([`POST_TIMEOUT`]) with every post of a round at once.
const LEASE_MS: u64 = 60_000;

/// How long a receiver has to answer a post.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a deliverer looks at the outbox.
pub const POLL: Duration = Duration::from_millis(250);

/// How often, at most, a deliverer looks for approval requests about to expire (a read of
/// every pending request), by the clock its rounds are given.
const EXPIRING_EVERY_MS: u64 = 5_000;

/// How often, at most, a deliverer purges old settled notices (a write), likewise.
const PURGE_EVERY_MS: u64 = 60_000;

/// Most bytes of a receiver's answer kept to explain a failure.
const ANSWER_SHOWN_MAX: usize = 200;

/// The shapes of a body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Warrant's JSON: the notice, its run and what it is about.
    #[default]
    Json,
    /// A Slack message (`text`, `blocks`), for an incoming webhook of Slack or a server that
    /// speaks its format; an approval's links are buttons.
    Slack,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// The server's address as people reach it: links to the console's pages.
    #[serde(default)]
    console_url: Option<String>,
    endpoints: Vec<EndpointFile>,
    #[serde(default)]
    retry: RetryFile,
    /// Seconds before an unanswered approval expires that `approval.expiring` is sent.
    #[serde(default = "default_expiring")]
    expiring_seconds: u64,
    /// A notice older than this when first taken is not sent (failed: too old).
    #[serde(default = "default_max_age")]
    max_age_seconds: u64,
    #[serde(default)]
    links: Option<LinksFile>,
}

fn default_expiring() -> u64 {
    600
}

fn default_max_age() -> u64 {
    86_400
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointFile {
    name: String,
    url: String,
    secret: String,
    #[serde(default)]
    format: Format,
    #[serde(default)]
    events: Vec<String>,
    #[serde(default)]
    tenants: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryFile {
    #[serde(default = "default_attempts")]
    attempts: u32,
    #[serde(default = "default_first")]
    first_seconds: u64,
    #[serde(default = "default_most")]
    max_seconds: u64,
}

impl Default for RetryFile {
    fn default() -> RetryFile {
        RetryFile {
            attempts: default_attempts(),
            first_seconds: default_first(),
            max_seconds: default_most(),
        }
    }
}

fn default_attempts() -> u32 {
    12
}

fn default_first() -> u64 {
    1
}

fn default_most() -> u64 {
    600
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinksFile {
    secret: String,
    /// The name answers through a link are recorded under (`link:<as>`).
    #[serde(rename = "as")]
    user: String,
}

/// One receiver.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Its name, in listings and metrics.
    pub name: String,
    url: reqwest::Url,
    secret: Vec<u8>,
    /// The body's shape.
    pub format: Format,
    /// The kinds it wants (empty: every kind).
    events: BTreeSet<NoticeKind>,
    /// The tenants whose runs it hears of (empty: every tenant).
    tenants: BTreeSet<String>,
}

impl Endpoint {
    fn wants(&self, kind: NoticeKind, tenant: &str) -> bool {
        (self.events.is_empty() || self.events.contains(&kind))
            && (self.tenants.is_empty() || self.tenants.contains(tenant))
    }
}

/// Signed approve and deny links: their secret, and who an answer through one is recorded as.
#[derive(Clone, Debug)]
pub struct Links {
    secret: Vec<u8>,
    /// Answers through a link are recorded as `link:<user>`.
    pub user: String,
}

/// The operator's webhooks, as read from `--webhooks FILE`.
#[derive(Clone, Debug)]
pub struct Webhooks {
    /// The receivers.
    pub endpoints: Vec<Endpoint>,
    console_url: Option<reqwest::Url>,
    attempts: u32,
    first_ms: u64,
    most_ms: u64,
    expiring_ms: u64,
    max_age_ms: u64,
    /// The approve and deny links, when the file has them.
    pub links: Option<Links>,
}

/// Shortest secret taken (an HMAC key shorter than this is guessable).
const SECRET_MIN: usize = 16;

impl Webhooks {
    /// The webhooks of `path`, checked: every error names the file and the field.
    pub fn from_file(path: &Path) -> Result<Webhooks, String> {
        let text = crate::read_text(path, WEBHOOKS_BYTES_MAX, "webhooks file")
            .map_err(|e| e.to_string())?;
        Webhooks::parse(&text, &path.display().to_string())
    }

    /// The webhooks `text` describes (`shown` names it in errors).
    pub fn parse(text: &str, shown: &str) -> Result<Webhooks, String> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| format!("{shown}: {e}"))?;
        if file.endpoints.is_empty() {
            return Err(format!("{shown}: `endpoints` names no receiver"));
        }
        let mut names = HashSet::new();
        let mut endpoints = Vec::new();
        for (i, e) in file.endpoints.into_iter().enumerate() {
            let at = format!("{shown}: endpoints[{i}]");
            if e.name.is_empty() || !names.insert(e.name.clone()) {
                return Err(format!("{at}.name: empty, or given twice"));
            }
            let url = http_url(&e.url).map_err(|why| format!("{at}.url: {why}"))?;
            if e.secret.len() < SECRET_MIN {
                return Err(format!(
                    "{at}.secret: at least {SECRET_MIN} characters (it keys the signature)"
                ));
            }
            let events = e
                .events
                .iter()
                .map(|k| k.parse::<NoticeKind>())
                .collect::<Result<BTreeSet<_>, _>>()
                .map_err(|why| format!("{at}.events: {why}"))?;
            endpoints.push(Endpoint {
                name: e.name,
                url,
                secret: e.secret.into_bytes(),
                format: e.format,
                events,
                tenants: e.tenants.into_iter().collect(),
            });
        }
        let console_url = file
            .console_url
            .as_deref()
            .map(http_url)
            .transpose()
            .map_err(|why| format!("{shown}: console_url: {why}"))?;
        let links = match file.links {
            None => None,
            Some(l) => {
                if console_url.is_none() {
                    return Err(format!(
                        "{shown}: links: need `console_url`, the address the links lead to"
                    ));
                }
                if l.secret.len() < SECRET_MIN {
                    return Err(format!(
                        "{shown}: links.secret: at least {SECRET_MIN} characters"
                    ));
                }
                if l.user.is_empty() {
                    return Err(format!("{shown}: links.as: empty"));
                }
                Some(Links {
                    secret: l.secret.into_bytes(),
                    user: l.user,
                })
            }
        };
        if file.retry.attempts == 0 || file.retry.first_seconds == 0 {
            return Err(format!(
                "{shown}: retry: `attempts` and `first_seconds` must be at least 1"
            ));
        }
        Ok(Webhooks {
            endpoints,
            console_url,
            attempts: file.retry.attempts,
            first_ms: file.retry.first_seconds.saturating_mul(1000),
            most_ms: file
                .retry
                .max_seconds
                .max(file.retry.first_seconds)
                .saturating_mul(1000),
            expiring_ms: file.expiring_seconds.saturating_mul(1000),
            max_age_ms: file.max_age_seconds.saturating_mul(1000),
            links,
        })
    }

    /// How long to wait after failed attempt `attempts` (1 is the first): doubling from the
    /// first wait, at most the longest.
    fn backoff_ms(&self, attempts: u32) -> u64 {
        let doublings = attempts.saturating_sub(1).min(32);
        self.first_ms
            .saturating_mul(1u64 << doublings)
            .min(self.most_ms)
    }

    /// The console's page of `run`, when the file says where the console is.
    fn run_url(&self, run: &RunId) -> Option<String> {
        let mut url = self.console_url.clone()?;
        url.path_segments_mut()
            .ok()?
            .pop_if_empty()
            .extend(["runs", &run.0]);
        Some(url.to_string())
    }
}

fn http_url(text: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{text}`: http or https only"));
    }
    Ok(url)
}

/// The `webhook-signature` of a post: `v1,` and the base64 of HMAC-SHA256 over
/// `id.timestamp.body`.
pub fn signature(secret: &[u8], id: &str, timestamp_s: u64, body: &[u8]) -> String {
    let mut mac = mac(secret);
    mac.update(format!("{id}.{timestamp_s}.").as_bytes());
    mac.update(body);
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    format!("v1,{sig}")
}

/// Whether `header` (one or more space-separated signatures) holds the signature of this post.
pub fn verify(secret: &[u8], id: &str, timestamp_s: u64, body: &[u8], header: &str) -> bool {
    let want = signature(secret, id, timestamp_s, body);
    header
        .split(' ')
        .any(|got| constant_time_eq(got.as_bytes(), want.as_bytes()))
}

fn mac(secret: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length.
    match HmacSha256::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => HmacSha256::new_from_slice(&[]).unwrap_or_else(|_| unreachable_mac()),
    }
}

#[expect(
    clippy::unreachable,
    reason = "HMAC accepts keys of every length; this is never reached"
)]
fn unreachable_mac() -> HmacSha256 {
    unreachable!("HMAC refused a key")
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A signed link that answers one approval request, bound to the arguments' digest and good
/// until the request expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The request.
    pub request: String,
    /// Approve (else deny).
    pub approve: bool,
    /// The digest of the arguments the link was made for.
    pub digest: String,
    /// Good until (ms since the epoch).
    pub expires_ms: u64,
}

impl Link {
    fn mac(&self, secret: &[u8]) -> String {
        let mut mac = mac(secret);
        mac.update(
            format!(
                "{}\n{}\n{}\n{}",
                self.request,
                self.answer(),
                self.digest,
                self.expires_ms
            )
            .as_bytes(),
        );
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// `approve` or `deny`.
    pub fn answer(&self) -> &'static str {
        if self.approve { "approve" } else { "deny" }
    }

    /// The link's address under `base`: `/links/approvals/{request}` with the answer, the
    /// digest, the expiry and the signature as its query.
    pub fn url(&self, base: &reqwest::Url, secret: &[u8]) -> String {
        let mut url = base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty()
                .extend(["links", "approvals", &self.request]);
        }
        url.query_pairs_mut()
            .append_pair("answer", self.answer())
            .append_pair("digest", &self.digest)
            .append_pair("expires", &self.expires_ms.to_string())
            .append_pair("sig", &self.mac(secret));
        url.to_string()
    }

    /// Checks `sig` and the expiry at `now_ms`: what is wrong, in words.
    pub fn check(&self, sig: &str, links: &Links, now_ms: u64) -> Result<(), String> {
        if !constant_time_eq(sig.as_bytes(), self.mac(&links.secret).as_bytes()) {
            return Err(
                "this link's signature does not match: it was changed or is not ours".into(),
            );
        }
        if now_ms >= self.expires_ms {
            return Err("this link has expired".into());
        }
        Ok(())
    }
}

/// What this process delivered, for `/metrics`.
#[derive(Debug, Default)]
pub struct Deliveries {
    /// Posts by endpoint and result (`delivered`, `failed`: answered with an error or not at
    /// all).
    pub posts: warrant_core::metrics::Counts<2>,
    /// Notices given up, by reason (`attempts`, `too_old`).
    pub given_up: warrant_core::metrics::Counts<1>,
}

/// Delivers the outbox's notices to the operator's endpoints.
pub struct Deliverer {
    app: App,
    hooks: Arc<Webhooks>,
    client: reqwest::Client,
    /// What it delivered.
    pub deliveries: Arc<Deliveries>,
    /// The approval requests an `approval.expiring` was put for (each once).
    warned: Mutex<HashSet<String>>,
    /// When (by its rounds' clock) it last looked for expiring requests, and last purged:
    /// the outbox is polled often, these need not be.
    swept_at: Mutex<(Option<u64>, Option<u64>)>,
}

impl Deliverer {
    /// A deliverer of `app`'s store's notices to `hooks`' endpoints.
    pub fn new(app: App, hooks: Arc<Webhooks>) -> Result<Deliverer, String> {
        let client = warrant_http::builder()
            .timeout(POST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot make the webhooks' HTTP client: {e}"))?;
        Ok(Deliverer {
            deliveries: app.deliveries.clone(),
            app,
            hooks,
            client,
            warned: Mutex::new(HashSet::new()),
            swept_at: Mutex::new((None, None)),
        })
    }

    /// Delivers until `stop` resolves, looking every [`POLL`].
    pub async fn run(self: Arc<Self>, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            if let Err(e) = self.round(now_ms()).await {
                tracing::warn!(error = %e, "webhooks: the outbox could not be read");
            }
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }

    fn outbox(&self) -> &dyn NoticeOutbox {
        self.app.outbox()
    }

    /// One look at the outbox at `now_ms`: puts `approval.expiring` for requests about to
    /// expire, purges old settled notices, and delivers what is due. How many notices it
    /// settled.
    pub async fn round(self: &Arc<Self>, now_ms: u64) -> crate::Result<usize> {
        let (expiring, purge) = self.sweeps_due(now_ms);
        if expiring {
            self.warn_expiring(now_ms).await?;
        }
        if purge {
            self.outbox()
                .notices_purge(now_ms.saturating_sub(KEPT_MS), 100)
                .await?;
        }
        let due = self
            .outbox()
            .notices_due(now_ms, LEASE_MS, TAKE_AT_ONCE)
            .await?;
        let mut posts = tokio::task::JoinSet::new();
        for notice in due {
            let me = self.clone();
            posts.spawn(async move { me.deliver(notice, now_ms).await });
        }
        let mut settled = 0;
        while let Some(done) = posts.join_next().await {
            match done {
                Ok(Ok(true)) => settled += 1,
                Ok(Ok(false)) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "webhooks: a notice was not settled"),
                Err(e) => tracing::warn!(error = %e, "webhooks: a delivery stopped"),
            }
        }
        Ok(settled)
    }

    /// Whether this round looks for expiring requests and purges (each marked done when due).
    fn sweeps_due(&self, now_ms: u64) -> (bool, bool) {
        let Ok(mut at) = self.swept_at.lock() else {
            return (true, true);
        };
        let due = |last: &mut Option<u64>, every: u64| {
            let go = last.is_none_or(|l| now_ms.saturating_sub(l) >= every);
            if go {
                *last = Some(now_ms);
            }
            go
        };
        let expiring = due(&mut at.0, EXPIRING_EVERY_MS);
        let purge = due(&mut at.1, PURGE_EVERY_MS);
        (expiring, purge)
    }

    async fn warn_expiring(&self, now_ms: u64) -> crate::Result<()> {
        if self.hooks.expiring_ms == 0 {
            return Ok(());
        }
        let pending = self.app.approvals_index().pending_approvals(None).await?;
        for p in pending {
            let soon = p.expires_at_ms > now_ms
                && p.expires_at_ms.saturating_sub(now_ms) <= self.hooks.expiring_ms;
            let fresh = self
                .warned
                .lock()
                .map(|w| !w.contains(&p.request))
                .unwrap_or(false);
            if !soon || !fresh {
                continue;
            }
            let log = self.app.log_reader().read(&p.run_id, 1).await?;
            let asked = log.iter().find(|e| {
                matches!(&e.event.kind, EventKind::ApprovalRequested { request, .. } if *request == p.request)
            });
            if let Some(e) = asked {
                let notice =
                    Notice::new(&p.run_id, e.event.seq, NoticeKind::ApprovalExpiring, now_ms);
                self.outbox().notice_put(notice).await?;
            }
            if let Ok(mut w) = self.warned.lock() {
                w.insert(p.request);
            }
        }
        Ok(())
    }

    /// Posts `notice` to every endpoint that wants it and has not taken it, and records what
    /// became of it: whether the store took the record.
    async fn deliver(&self, mut notice: Notice, now_ms: u64) -> crate::Result<bool> {
        if now_ms.saturating_sub(notice.at_ms) > self.hooks.max_age_ms && notice.attempts <= 1 {
            notice.state = NoticeState::Failed;
            notice.last_error = Some(format!(
                "older than {} s when first taken: not sent",
                self.hooks.max_age_ms / 1000
            ));
            notice.settled_at_ms = Some(now_ms);
            self.deliveries.given_up.add(["too_old"], 1);
            return Ok(self.outbox().notice_settle(&notice).await?);
        }
        let log = self.app.log_reader().read(&notice.run_id, 1).await?;
        let tenant = self
            .app
            .tenant_of(&notice.run_id)
            .await?
            .unwrap_or_default();
        let about = Message::of(&notice, &log, &tenant, &self.hooks);
        let mut errors = Vec::new();
        for endpoint in &self.hooks.endpoints {
            if !endpoint.wants(notice.kind, &tenant) || notice.delivered_to.contains(&endpoint.name)
            {
                continue;
            }
            match self.post(endpoint, &notice, &about).await {
                Ok(()) => {
                    self.deliveries
                        .posts
                        .add([&endpoint.name, NoticeState::Delivered.name()], 1);
                    notice.delivered_to.push(endpoint.name.clone());
                }
                Err(why) => {
                    self.deliveries
                        .posts
                        .add([&endpoint.name, NoticeState::Failed.name()], 1);
                    errors.push(format!("{}: {why}", endpoint.name));
                }
            }
        }
        if errors.is_empty() {
            notice.state = NoticeState::Delivered;
            notice.last_error = None;
            notice.settled_at_ms = Some(now_ms);
        } else {
            notice.last_error = Some(errors.join("; "));
            if notice.attempts >= self.hooks.attempts {
                notice.state = NoticeState::Failed;
                notice.settled_at_ms = Some(now_ms);
                self.deliveries.given_up.add(["attempts"], 1);
                tracing::warn!(notice = %notice.id, attempts = notice.attempts, error = ?notice.last_error, "webhooks: giving up on a notice");
            } else {
                notice.next_at_ms = now_ms.saturating_add(self.hooks.backoff_ms(notice.attempts));
            }
        }
        Ok(self.outbox().notice_settle(&notice).await?)
    }

    async fn post(
        &self,
        endpoint: &Endpoint,
        notice: &Notice,
        about: &Message,
    ) -> Result<(), String> {
        let body = match endpoint.format {
            Format::Json => about.json(),
            Format::Slack => about.slack(),
        };
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let timestamp = now_ms() / 1000;
        let answer = self
            .client
            .post(endpoint.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &notice.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                signature(&endpoint.secret, &notice.id, timestamp, &body),
            )
            .body(body)
            .send()
            .await
            .map_err(|e| match e.is_timeout() {
                true => format!("no answer within {} s", POST_TIMEOUT.as_secs()),
                false => format!("cannot post: {}", chain(&e)),
            })?;
        let status = answer.status();
        if status.is_success() {
            return Ok(());
        }
        // What the receiver said, bounded and made printable.
        let said = bounded_text(answer, ANSWER_SHOWN_MAX).await;
        let said = warrant_core::text::sanitize(&warrant_core::text::echo(&said)).into_owned();
        Err(format!("HTTP {}: {said}", status.as_u16()))
    }
}

fn now_ms() -> u64 {
    use warrant_core::ports::Clock as _;
    warrant_engine::SystemClock.now_ms()
}

/// An error with its causes (reqwest's own says only "error sending request").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !out.contains(&said) {
            out.push_str(": ");
            out.push_str(&said);
        }
        source = cause.source();
    }
    out
}

/// The start of a receiver's answer, at most `max` bytes of it read.
async fn bounded_text(mut answer: reqwest::Response, max: usize) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < max {
        match answer.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes.truncate(max);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What a notice says, gathered from its run's log.
struct Message {
    notice: Notice,
    run_status: RunStatus,
    spec: String,
    tenant: String,
    url: Option<String>,
    /// What it is about, as JSON.
    about: Value,
    /// One line for a person.
    line: String,
    approve_url: Option<String>,
    deny_url: Option<String>,
}

impl Message {
    fn of(notice: &Notice, log: &[StoredEvent], tenant: &str, hooks: &Webhooks) -> Message {
        let spec = log
            .iter()
            .find_map(|e| match &e.event.kind {
                EventKind::RunStarted { spec, .. } => Some(spec.id.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let run_status = log
            .iter()
            .filter_map(|e| warrant_core::fold::status_after(&e.event.kind))
            .next_back()
            .unwrap_or_default();
        let event = log.iter().find(|e| e.event.seq == notice.seq);
        let run = &notice.run_id;
        let mut approve_url = None;
        let mut deny_url = None;
        let (about, line) = match event.map(|e| &e.event.kind) {
            Some(other) if notice.kind == NoticeKind::RunWaiting => (
                json!({"waiting_on": other.name()}),
                format!("Run {run} ({spec}) waits for a person ({})", other.name()),
            ),
            Some(EventKind::ApprovalRequested {
                request,
                tool,
                provider,
                effect,
                args,
                args_digest,
                reason,
                expires_at_ms,
                ..
            }) => {
                if let (Some(links), Some(base)) = (&hooks.links, &hooks.console_url)
                    && notice.kind == NoticeKind::ApprovalRequested
                {
                    for approve in [true, false] {
                        let link = Link {
                            request: request.clone(),
                            approve,
                            digest: args_digest.clone(),
                            expires_ms: *expires_at_ms,
                        };
                        let url = Some(link.url(base, &links.secret));
                        if approve {
                            approve_url = url;
                        } else {
                            deny_url = url;
                        }
                    }
                }
                let verb = match notice.kind {
                    NoticeKind::ApprovalExpiring => "expires soon, unanswered",
                    _ => "waits for approval",
                };
                (
                    json!({"approval": {
                        "request": request, "tool": tool, "provider": provider,
                        "effect": effect, "args": args, "args_digest": args_digest,
                        "reason": reason, "expires_at_ms": expires_at_ms,
                        "approve_url": approve_url, "deny_url": deny_url,
                    }}),
                    format!("Run {run}: `{tool}` on {provider} {verb} ({request}): {reason}"),
                )
            }
            Some(EventKind::ApprovalResolved {
                request,
                approved,
                by,
                reason,
                ..
            }) => {
                let answer = if *approved {
                    ApprovalState::Approved
                } else {
                    ApprovalState::Denied
                };
                (
                    json!({"resolution": {"request": request, "answer": answer.name(), "by": by, "reason": reason}}),
                    format!("Run {run}: {request} was {} by {by}", answer.name()),
                )
            }
            Some(EventKind::ApprovalExpired { request }) => (
                json!({"resolution": {"request": request, "answer": ApprovalState::Expired.name()}}),
                format!("Run {run}: {request} expired unanswered"),
            ),
            Some(EventKind::CallInDoubt { call, tool, .. }) => (
                json!({"call": {"call": call, "tool": tool}}),
                format!(
                    "Run {run}: the effect of call {call} (`{tool}`) is in doubt: find out whether it happened and reconcile it"
                ),
            ),
            Some(EventKind::RunFinished { outcome }) => {
                let status = RunStatus::ended(outcome);
                (
                    json!({"outcome": status.name()}),
                    format!("Run {run} ({spec}) ended {}", status.name()),
                )
            }
            _ => (json!({}), format!("Run {run}: {}", notice.kind.name())),
        };
        Message {
            notice: notice.clone(),
            run_status,
            spec,
            tenant: tenant.to_owned(),
            url: hooks.run_url(run),
            about,
            line: warrant_core::text::sanitize(&line).into_owned(),
            approve_url,
            deny_url,
        }
    }

    fn json(&self) -> Value {
        let mut body = json!({
            "id": self.notice.id,
            "type": self.notice.kind.name(),
            "at_ms": self.notice.at_ms,
            "run": {
                "id": self.notice.run_id,
                "spec": self.spec,
                "tenant": self.tenant,
                "status": self.run_status.name(),
                "url": self.url,
            },
            "text": self.line,
        });
        if let (Some(obj), Some(about)) = (body.as_object_mut(), self.about.as_object()) {
            for (k, v) in about {
                obj.insert(k.clone(), v.clone());
            }
        }
        body
    }

    /// Slack's message: the line (Slack's control characters escaped), the run's page and,
    /// for an approval, approve and deny buttons.
    fn slack(&self) -> Value {
        let text = slack_escape(&self.line);
        let mut section = text.clone();
        if let Some(url) = &self.url {
            section.push_str(&format!(" <{}|Open the run>", slack_escape(url)));
        }
        let mut blocks = vec![json!({
            "type": "section",
            "text": {"type": "mrkdwn", "text": section},
        })];
        if let (Some(approve), Some(deny)) = (&self.approve_url, &self.deny_url) {
            blocks.push(json!({
                "type": "actions",
                "elements": [
                    {"type": "button", "style": "primary", "text": {"type": "plain_text", "text": "Approve"}, "url": approve},
                    {"type": "button", "style": "danger", "text": {"type": "plain_text", "text": "Deny"}, "url": deny},
                ],
            }));
        }
        json!({"text": text, "blocks": blocks})
    }
}

/// Text as Slack shows it literally: `&`, `<` and `>` escaped (so a tool's text cannot
/// mention `@channel` or make a link).
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl App {
    /// The store's outbox of notices (webhooks).
    pub fn outbox(&self) -> &dyn NoticeOutbox {
        self.store().as_ref()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    const FILE: &str = "
console_url: http://127.0.0.1:7800
endpoints:
  - name: ops
    url: http://127.0.0.1:9/hook
    secret: 0123456789abcdef0123
    events: [approval.requested, run.finished]
  - name: chat
    url: http://127.0.0.1:9/slack
    secret: fedcba98765432100123
    format: slack
    tenants: [acme]
links:
  secret: link-secret-0123456789
  as: slack-ops
";

    #[test]
    fn a_file_is_read_with_its_defaults_and_each_error_names_its_field() {
        let hooks = Webhooks::parse(FILE, "w.yaml").unwrap();
        assert_eq!(hooks.endpoints.len(), 2);
        assert!(hooks.endpoints[0].wants(NoticeKind::RunFinished, "any"));
        assert!(!hooks.endpoints[0].wants(NoticeKind::RunWaiting, "any"));
        assert!(hooks.endpoints[1].wants(NoticeKind::RunWaiting, "acme"));
        assert!(!hooks.endpoints[1].wants(NoticeKind::RunWaiting, "other"));
        assert_eq!(hooks.backoff_ms(1), 1_000);
        assert_eq!(hooks.backoff_ms(4), 8_000);
        assert_eq!(hooks.backoff_ms(40), 600_000);
        assert_eq!(
            hooks.run_url(&RunId("r1".into())).as_deref(),
            Some("http://127.0.0.1:7800/runs/r1")
        );
        for (bad, says) in [
            (
                FILE.replace("events: [approval.requested", "events: [approval.asked"),
                "endpoints[0].events: no notice `approval.asked`",
            ),
            (
                FILE.replace("0123456789abcdef0123", "short"),
                "endpoints[0].secret",
            ),
            (
                FILE.replace("http://127.0.0.1:9/slack", "ftp://x"),
                "endpoints[1].url",
            ),
            (FILE.replace("name: chat", "name: ops"), "endpoints[1].name"),
            (
                FILE.replace("console_url: http://127.0.0.1:7800\n", ""),
                "links: need `console_url`",
            ),
            (format!("{FILE}colour: red\n"), "colour"),
        ] {
            let err = Webhooks::parse(&bad, "w.yaml").unwrap_err();
            assert!(err.contains(says), "{err}");
            assert!(err.starts_with("w.yaml"), "{err}");
        }
    }

    #[test]
    fn a_signature_is_standard_webhooks_and_any_change_breaks_it() {
        let sig = signature(
            b"secret-secret-secret",
            "r1/3/run.finished",
            1_700_000_000,
            b"{}",
        );
        assert!(sig.starts_with("v1,"));
        assert!(verify(
            b"secret-secret-secret",
            "r1/3/run.finished",
            1_700_000_000,
            b"{}",
            &format!("v1,bogus {sig}")
        ));
        assert!(!verify(
            b"secret-secret-secret",
            "r1/3/run.finished",
            1_700_000_001,
            b"{}",
            &sig
        ));
        assert!(!verify(
            b"secret-secret-secret",
            "r1/4/run.finished",
            1_700_000_000,
            b"{}",
            &sig
        ));
        assert!(!verify(
            b"another-secret-here",
            "r1/3/run.finished",
            1_700_000_000,
            b"{}",
            &sig
        ));
        assert!(!verify(
            b"secret-secret-secret",
            "r1/3/run.finished",
            1_700_000_000,
            b"{ }",
            &sig
        ));
    }

    #[test]
    fn a_link_is_bound_to_its_request_answer_digest_and_expiry() {
        let hooks = Webhooks::parse(FILE, "w.yaml").unwrap();
        let links = hooks.links.clone().unwrap();
        let link = Link {
            request: "r1-a1".into(),
            approve: true,
            digest: "sha256:abc".into(),
            expires_ms: 5_000,
        };
        let url =
            reqwest::Url::parse(&link.url(hooks.console_url.as_ref().unwrap(), &links.secret))
                .unwrap();
        assert_eq!(url.path(), "/links/approvals/r1-a1");
        let sig = url
            .query_pairs()
            .find(|(k, _)| k == "sig")
            .unwrap()
            .1
            .into_owned();
        link.check(&sig, &links, 4_999).unwrap();
        assert!(
            link.check(&sig, &links, 5_000)
                .unwrap_err()
                .contains("expired")
        );
        for changed in [
            Link {
                approve: false,
                ..link.clone()
            },
            Link {
                digest: "sha256:abd".into(),
                ..link.clone()
            },
            Link {
                request: "r1-a2".into(),
                ..link.clone()
            },
            Link {
                expires_ms: 6_000,
                ..link.clone()
            },
        ] {
            assert!(
                changed
                    .check(&sig, &links, 0)
                    .unwrap_err()
                    .contains("signature")
            );
        }
    }

    #[test]
    fn slack_text_cannot_mention_or_link() {
        assert_eq!(
            slack_escape("<!channel> & <http://x|y>"),
            "&lt;!channel&gt; &amp; &lt;http://x|y&gt;"
        );
    }
}

//! `--webhooks FILE`: the store's notices reach a receiver (a loopback stand-in that records
//! every post and can be told to fail), signed as Standard Webhooks has it, retried until the
//! receiver takes them, each taken once; a signed link answers an approval only on its page's
//! `POST`; and a server killed with notices undelivered sends, after its restart, exactly the
//! ones the receiver has not taken.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use serde_json::{Value, json};
use support::*;

const SECRET: &str = "ops-secret-0123456789";
const CHAT_SECRET: &str = "chat-secret-0123456789";

/// One post the receiver got, and what it answered.
#[derive(Clone, Debug)]
struct Post {
    path: String,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
    answered: u16,
}

impl Post {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    fn id(&self) -> &str {
        &self.headers["webhook-id"]
    }
}

/// A receiver on loopback: what it was sent, and switches to fail the next `fail_next`
/// posts or every post while `down`.
struct Receiver {
    url: String,
    posts: Arc<Mutex<Vec<Post>>>,
    fail_next: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

fn receiver() -> Receiver {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let posts = Arc::new(Mutex::new(Vec::new()));
    let fail_next = Arc::new(AtomicUsize::new(0));
    let down = Arc::new(AtomicBool::new(false));
    let (seen, fail, off) = (posts.clone(), fail_next.clone(), down.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            let mut headers = BTreeMap::new();
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap();
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
            let length: usize = headers
                .get("content-length")
                .map_or(0, |v| v.parse().unwrap());
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            let failing = off.load(Ordering::SeqCst)
                || fail
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            let answered = if failing { 503 } else { 200 };
            seen.lock().unwrap().push(Post {
                path,
                headers,
                body,
                answered,
            });
            let reason = if failing { "Service Unavailable" } else { "OK" };
            let _ = write!(
                stream,
                "HTTP/1.1 {answered} {reason}\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy"
            );
        }
    });
    Receiver {
        url,
        posts,
        fail_next,
        down,
    }
}

impl Receiver {
    fn posts(&self) -> Vec<Post> {
        self.posts.lock().unwrap().clone()
    }

    /// Waits (bounded) until a post to `path` of type `kind` was taken; returns it.
    async fn taken(&self, path: &str, kind: &str) -> Post {
        for _ in 0..400 {
            if let Some(p) = self.posts().into_iter().find(|p| {
                p.path == path && p.answered == 200 && p.id().ends_with(&format!("/{kind}"))
            }) {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no {kind} taken at {path}: {:#?}", self.posts());
    }
}

/// The signature Standard Webhooks asks for, computed here on its own.
fn expected_signature(secret: &str, post: &Post) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(post.id().as_bytes());
    mac.update(b".");
    mac.update(post.headers["webhook-timestamp"].as_bytes());
    mac.update(b".");
    mac.update(&post.body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

fn hooks_file(dir: &Path, receiver: &Receiver, console: &str) -> std::path::PathBuf {
    let path = dir.join("hooks.yaml");
    std::fs::write(
        &path,
        format!(
            "console_url: {console}
endpoints:
  - name: ops
    url: {url}/hook
    secret: {SECRET}
  - name: chat
    url: {url}/slack
    secret: {CHAT_SECRET}
    format: slack
    events: [approval.requested]
retry: {{first_seconds: 1, max_seconds: 2}}
links:
  secret: link-secret-0123456789
  as: chat-ops
",
            url = receiver.url
        ),
    )
    .unwrap();
    path
}

/// `warrant serve` on `port` over `store` with the webhooks of `hooks`.
fn serve_on(store: &Path, port: u16, hooks: &Path) -> Served {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", store)
        .env_remove("WARRANT_FAULT")
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--specs"])
        .arg(root().join("examples"))
        .arg("--webhooks")
        .arg(hooks)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    served(child)
}

fn client() -> reqwest::Client {
    warrant_http::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn start(s: &Served, body: Value) -> String {
    let r = client()
        .post(format!("{}/v1/runs", s.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    v["run_id"].as_str().unwrap().to_owned()
}

async fn status_of(s: &Served, id: &str) -> String {
    let v: Value = client()
        .get(format!("{}/v1/runs/{id}", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["status"].as_str().unwrap().to_owned()
}

async fn until_status(s: &Served, id: &str, want: &str) {
    for _ in 0..400 {
        if status_of(s, id).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {id} never reached {want}");
}

/// Submits a link's page form (no reason given).
async fn submit(url: &str) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("reason=")
        .send()
        .await
        .unwrap()
}

/// `warrant webhooks deliveries [ARGS] --json` once none it lists is pending (bounded): the
/// process delivering records a delivery just after its receiver answered.
async fn settled(store: &Path, args: &[&str]) -> Value {
    let mut all = vec!["webhooks", "deliveries", "--json"];
    all.extend_from_slice(args);
    let mut listed = Value::Null;
    for _ in 0..200 {
        let out = warrant(store, &all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        listed = json(&out);
        if listed
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["state"] != "pending")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    listed
}

/// Every post each endpoint took, by notice id: how many times.
fn taken_by_id(posts: &[Post], path: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for p in posts.iter().filter(|p| p.path == path && p.answered == 200) {
        *out.entry(p.id().to_owned()).or_default() += 1;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_is_told_signed_retried_and_answered_through_its_link() {
    let (dir, store) = scratch();
    let r = receiver();
    // The first two posts fail: the notices are retried until the receiver takes them.
    r.fail_next.store(2, Ordering::SeqCst);
    let port = free_port();
    let console = format!("http://127.0.0.1:{port}");
    let hooks = hooks_file(dir.path(), &r, &console);
    let s = serve_on(&store, port, &hooks);
    let run = start(
        &s,
        json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]}),
    )
    .await;
    until_status(&s, &run, "waiting").await;

    // The approval and the wait reach the JSON endpoint, signed over id, time and body.
    let asked = r.taken("/hook", "approval.requested").await;
    let waiting = r.taken("/hook", "run.waiting").await;
    for post in [&asked, &waiting] {
        assert_eq!(
            post.headers["webhook-signature"],
            expected_signature(SECRET, post),
            "{post:?}"
        );
        assert!(post.id().starts_with(&format!("{run}/")), "{post:?}");
    }
    let body = asked.json();
    assert_eq!(body["type"], "approval.requested");
    assert_eq!(body["run"]["id"], run);
    assert_eq!(body["run"]["url"], format!("{console}/runs/{run}"));
    assert_eq!(body["approval"]["tool"], "transfer");
    let digest = body["approval"]["args_digest"].as_str().unwrap().to_owned();
    assert!(digest.starts_with("sha256:"), "{body}");
    assert_eq!(waiting.json()["waiting_on"], "approval_requested");
    // Two posts were refused, and retried.
    let refused = r.posts().iter().filter(|p| p.answered == 503).count();
    assert_eq!(refused, 2);

    // The chat endpoint wants only approvals, in Slack's shape, with signed buttons.
    let chat = r.taken("/slack", "approval.requested").await;
    assert_eq!(
        chat.headers["webhook-signature"],
        expected_signature(CHAT_SECRET, &chat)
    );
    let slack = chat.json();
    assert!(
        slack["text"].as_str().unwrap().contains("transfer"),
        "{slack}"
    );
    let buttons = slack["blocks"][1]["elements"].as_array().unwrap();
    let approve_url = buttons[0]["url"].as_str().unwrap().to_owned();
    let deny_url = buttons[1]["url"].as_str().unwrap().to_owned();
    assert!(approve_url.starts_with(&format!("{console}/links/approvals/")));
    assert!(deny_url.contains("answer=deny"));

    // A changed link is refused; the link's page answers nothing by being fetched.
    let forged = approve_url.replace("answer=approve", "answer=deny");
    let got = client().get(&forged).send().await.unwrap();
    assert_eq!(got.status(), 403);
    let page = client().get(&approve_url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Approve <code>transfer</code>"), "{html}");
    assert!(html.contains(&digest), "{html}");
    assert_eq!(status_of(&s, &run).await, "waiting");
    // Its form's POST records the approval, bound to the digest; the run goes on.
    let done = submit(&approve_url).await;
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("Recorded"));
    until_status(&s, &run, "attained").await;
    // The same link again records nothing more.
    let again = submit(&approve_url).await;
    assert!(
        again.status() == 200 || again.status() == 409,
        "{}",
        again.status()
    );

    let resolved = r.taken("/hook", "approval.resolved").await.json();
    assert_eq!(resolved["resolution"]["answer"], "approved");
    assert_eq!(resolved["resolution"]["by"], "local/link:chat-ops");
    let finished = r.taken("/hook", "run.finished").await.json();
    assert_eq!(finished["outcome"], "attained");

    // Each notice was taken once by each endpoint that wants it.
    let posts = r.posts();
    let ops = taken_by_id(&posts, "/hook");
    assert!(ops.values().all(|n| *n == 1), "{ops:?}");
    let listed = settled(&store, &[]).await;
    let mut in_store: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["state"] == "delivered")
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect();
    in_store.sort();
    assert_eq!(in_store, ops.keys().cloned().collect::<Vec<_>>());
    let retried = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["attempts"].as_u64().unwrap() > 1)
        .count();
    assert!(retried >= 1, "{listed}");
    // The server counts what it posted.
    let metrics = metrics_page(&s.base).await;
    assert!(
        metrics.contains("warrant_webhook_posts_total{endpoint=\"ops\",result=\"failed\"} "),
        "{metrics}"
    );
    assert!(
        metrics.contains("warrant_notices{state=\"delivered\"} "),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_with_notices_undelivered_sends_exactly_the_missing_ones_after_restart() {
    let (dir, store) = scratch();
    let r = receiver();
    let port = free_port();
    let hooks = hooks_file(dir.path(), &r, &format!("http://127.0.0.1:{port}"));
    let mut s = serve_on(&store, port, &hooks);
    let first = start(&s, json!({"spec_path": "pay-rent/spec.yaml"})).await;
    until_status(&s, &first, "attained").await;
    r.taken("/hook", "run.finished").await;
    // The receiver goes down: the next run's end is committed and not delivered, and the
    // server is killed before it is.
    r.down.store(true, Ordering::SeqCst);
    let second = start(&s, json!({"spec_path": "pay-rent/spec.yaml"})).await;
    until_status(&s, &second, "attained").await;
    for _ in 0..200 {
        if r.posts()
            .iter()
            .any(|p| p.id().starts_with(&format!("{second}/")) && p.answered == 503)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    let pending = json(&warrant(
        &store,
        &["webhooks", "deliveries", "--state", "pending", "--json"],
    ));
    assert!(
        pending.as_array().unwrap().iter().any(|n| {
            let id = n["id"].as_str().unwrap();
            id.starts_with(&format!("{second}/")) && id.ends_with("/run.finished")
        }),
        "{pending}"
    );
    // Restarted, with the receiver back: what it had not taken arrives, and nothing twice.
    r.down.store(false, Ordering::SeqCst);
    let s = serve_on(&store, port, &hooks);
    r.taken("/hook", "run.finished").await;
    for _ in 0..400 {
        let taken = taken_by_id(&r.posts(), "/hook");
        if taken.keys().any(|id| id.starts_with(&format!("{second}/"))) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let taken = taken_by_id(&r.posts(), "/hook");
    assert!(taken.values().all(|n| *n == 1), "{taken:?}");
    let all = settled(&store, &[]).await;
    let ids: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert_eq!(n["state"], "delivered", "{n}");
            n["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let mut ids = ids;
    ids.sort();
    assert_eq!(ids, taken.keys().cloned().collect::<Vec<_>>());
    assert!(ids.contains(&format!(
        "{first}/{}/run.finished",
        last_seq(&store, &first)
    )));
    assert!(ids.contains(&format!(
        "{second}/{}/run.finished",
        last_seq(&store, &second)
    )));
    drop(s);
}

/// The sequence of `run`'s last event.
fn last_seq(store: &Path, run: &str) -> u64 {
    let events = warrant(store, &["events", run, "--json"]);
    let text = stdout(&events);
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["seq"].as_u64())
        .max()
        .unwrap()
}

/// A fleet on PostgreSQL: the server has no webhooks; the worker that drives the runs does,
/// and delivers what the runs made (the outbox is the store's, whoever wrote it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_postgresql_delivers_the_notices_of_the_fleets_runs() {
    let url = warrant_store::contract::postgres_scratch("webhooks").await;
    let at = Path::new(&url);
    let migrated = warrant(at, &["store", "migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    let dir = tempfile::tempdir().unwrap();
    let r = receiver();
    let hooks = hooks_file(dir.path(), &r, "http://127.0.0.1:7800");
    let s = start_server(at, &root().join("examples"), &[], None);
    let run = start(&s, json!({"spec_path": "pay-rent/spec.yaml"})).await;
    let _worker = Stopped(
        std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(root())
            .env("WARRANT_STORE", &url)
            .env_remove("WARRANT_FAULT")
            .args(["worker", "--name", "hooks", "--webhooks"])
            .arg(&hooks)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let finished = r.taken("/hook", "run.finished").await;
    assert!(
        finished.id().starts_with(&format!("{run}/")),
        "{finished:?}"
    );
    assert_eq!(finished.json()["outcome"], "attained");
    assert_eq!(
        finished.headers["webhook-signature"],
        expected_signature(SECRET, &finished)
    );
    let listed = settled(at, &["--run", &run]).await;
    assert_eq!(listed[0]["state"], "delivered", "{listed}");
    assert_eq!(listed[0]["delivered_to"], json!(["ops"]));
}

/// A child process, killed when dropped (a failed assertion leaves none behind).
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

//! The web console in a real browser: headless Chromium from the system's packages, driven
//! over WebDriver (chromedriver) with plain HTTP requests. A person logs in with a token,
//! sees the argument an untrusted provider wrote flagged in the approvals inbox, approves,
//! and watches the run reach `attained` on its page through the event stream, without a
//! reload; a second tenant's session sees none of it.
//!
//! `./test` installs `chromium` and `chromium-driver` when they are missing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The WebDriver element key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A browser session over WebDriver.
struct Browser {
    http: reqwest::Client,
    session: String,
    _driver: Proc,
    /// The browser's temporary files (its profile, its singleton socket): removed with it.
    _scratch: tempfile::TempDir,
}

impl Browser {
    async fn start() -> Browser {
        let driver_bin = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("chromedriver is installed (`./test` installs chromium-driver)");
        let port = free_port();
        let scratch = tempfile::tempdir().unwrap();
        let driver = Proc(
            Command::new(driver_bin)
                .env("TMPDIR", scratch.path())
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let http = warrant_http::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && r.json::<Value>().await.unwrap()["value"]["ready"] == true
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
            }
        }}});
        let r: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {r}"))
            .to_owned();
        let b = Browser {
            http,
            session: format!("{base}/session/{session}"),
            _driver: driver,
            _scratch: scratch,
        };
        // Elements are looked for until they appear (bounded), as a person waits for a page.
        b.cmd(
            reqwest::Method::POST,
            "/timeouts",
            Some(json!({"implicit": 10_000, "pageLoad": 30_000})),
        )
        .await;
        b
    }

    async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        if let Some(e) = v["value"]["error"].as_str()
            && e != "no such element"
        {
            panic!("WebDriver {path}: {e}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    async fn go(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .cmd(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT].as_str().map(str::to_owned)
    }

    /// The rendered text of the first element `css` selects, waiting (bounded) for one: read
    /// in the page, so a list the page re-renders never leaves a stale reference.
    async fn text(&self, css: &str) -> String {
        let js = format!(
            "const e = document.querySelector({}); return e ? e.innerText : null;",
            json!(css)
        );
        for _ in 0..200 {
            if let Value::String(t) = self.script(&js).await {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no `{css}` on the page: {}", self.html());
    }

    fn html(&self) -> String {
        // Synchronous for use in messages: a second client, blocking on its own thread.
        let session = self.session.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let v: Value = warrant_http::client()
                    .post(format!("{session}/execute/sync"))
                    .json(&json!({"script": "return location.href + ' ' + document.documentElement.outerHTML;", "args": []}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                v["value"].to_string()
            })
        })
        .join()
        .unwrap()
    }

    async fn type_into(&self, css: &str, text: &str) {
        let Some(e) = self.find(css).await else {
            let page = self
                .script("return document.documentElement.outerHTML;")
                .await;
            panic!("no `{css}` on the page: {page}");
        };
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{e}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    async fn click(&self, css: &str) {
        let e = self
            .find(css)
            .await
            .unwrap_or_else(|| panic!("no `{css}` to click"));
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{e}/click"),
            Some(json!({})),
        )
        .await;
    }

    async fn script(&self, js: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": js, "args": []})),
        )
        .await
    }

    async fn body(&self) -> String {
        self.text("body").await
    }

    /// Waits (bounded) until `css`'s text is `want`.
    async fn until_text(&self, css: &str, want: &str) {
        let mut last = String::new();
        for _ in 0..200 {
            last = self.text(css).await;
            if last == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("`{css}` never showed `{want}`: last `{last}`");
    }

    async fn window(&self) -> String {
        self.cmd(reqwest::Method::GET, "/window", None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn new_tab(&self) -> String {
        let h = self
            .cmd(
                reqwest::Method::POST,
                "/window/new",
                Some(json!({"type": "tab"})),
            )
            .await;
        h["handle"].as_str().unwrap().to_owned()
    }

    async fn switch(&self, handle: &str) {
        self.cmd(
            reqwest::Method::POST,
            "/window",
            Some(json!({"handle": handle})),
        )
        .await;
    }

    /// Logs in with `token` and waits until the login's own navigation is over (else a page
    /// asked for next can be overtaken by it).
    async fn log_in(&self, base: &str, token: &str) {
        self.cmd(reqwest::Method::DELETE, "/cookie", None).await;
        self.go(&format!("{base}/login")).await;
        self.type_into("input[name=token]", token).await;
        self.click("form.login button").await;
        let mut at = Value::Null;
        for _ in 0..200 {
            at = self.cmd(reqwest::Method::GET, "/url", None).await;
            if at.as_str().is_some_and(|u| !u.ends_with("/login")) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the login with {token} never left the login page: {at}");
    }
}

impl Drop for Browser {
    /// Ends the session (Chromium exits with it) before the driver is killed, also when a
    /// test fails: a plain HTTP request, no runtime needed.
    fn drop(&mut self) {
        use std::io::{Read as _, Write as _};
        let Some((host, path)) = self
            .session
            .strip_prefix("http://")
            .and_then(|s| s.split_once('/'))
        else {
            return;
        };
        if let Ok(mut tcp) = std::net::TcpStream::connect(host) {
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = write!(
                tcp,
                "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = tcp.read_to_end(&mut Vec::new());
        }
    }
}

const SPEC: &str = "
version: warrant/v1
id: pay-rent-untrusted
objective: Pay this month's rent of 950 EUR to DE89370400440532013000.
decider: scripted:script.yaml
profile: untrusted-input
providers:
  bank: {reference: bank}
steps:
  - id: pay
    provider: bank
    tools: [balance, read_statement, transfer]
";

/// A decider that obeys what it read: it pays the account the statement names.
const SCRIPT: &str = "
steps:
  pay:
    - call: read_statement
    - call: transfer
      args: {to: DE44500105175407324931, amount: 950, memo: rent}
    - done: paid
";

/// A server over `specs` for `people` (token, tenant, user), each a runner, approver and
/// operator who may approve their own requests (a team of one, as its operator allows).
fn serve_for(dir: &Path, store: &Path, specs: &Path, people: &[(&str, &str, &str)]) -> Served {
    let principals = dir.join("principals.yaml");
    let mut file = String::from("principals:\n");
    for (token, tenant, user) in people {
        file.push_str(&format!(
            "  - {{token: 'sha256:{}', tenant: {tenant}, user: {user}, roles: [runner, approver, operator]}}\n",
            warrant_server::token_digest(token),
        ));
    }
    std::fs::write(&principals, file).unwrap();
    start_server(
        store,
        specs,
        &[
            "--principals",
            principals.to_str().unwrap(),
            "--allow-self-approval",
        ],
        None,
    )
}

/// Starts the catalog's spec as Ann, through the API: the run's id.
async fn start_as_ann(api: &reqwest::Client, base: &str) -> String {
    start_via_api(api, base, json!({"spec_path": "spec.yaml"})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_in_the_browser_and_watches_the_run_attain_live() {
    let (dir, store) = scratch();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    std::fs::write(specs.join("spec.yaml"), SPEC).unwrap();
    std::fs::write(specs.join("script.yaml"), SCRIPT).unwrap();
    // Ann starts the run and approves it herself: a team of one, as its operator allows.
    let server = serve_for(
        dir.path(),
        &store,
        &specs,
        &[("tok-ann", "acme", "ann"), ("tok-eve", "globex", "eve")],
    );
    let base = server.base.clone();
    let api = warrant_http::client();
    let run = start_as_ann(&api, &base).await;

    let b = Browser::start().await;
    b.log_in(&base, "tok-ann").await;
    b.until_text("[data-run] td a", &run).await;

    // The run's page, open while the run waits: it follows the events.
    let run_tab = b.window().await;
    b.go(&format!("{base}/runs/{run}")).await;
    b.until_text("#status", "waiting").await;
    // The navigation counts the approval requests waiting.
    b.until_text("#pending", "1").await;
    b.script("window.__notReloaded = true; return 1;").await;
    // The call held for approval is said so, as `warrant show` says it.
    let calls = b.text("table.calls").await;
    assert!(calls.contains("held for approval"), "{calls}");
    assert!(!calls.contains("in flight"), "{calls}");

    // The inbox, in another tab: the recipient came from the bank's statement, and says so.
    let inbox = b.new_tab().await;
    b.switch(&inbox).await;
    b.go(&format!("{base}/approvals")).await;
    let flagged = b.text("tr.untrusted").await;
    assert!(
        flagged.contains("/to") && flagged.contains("DE44500105175407324931"),
        "{flagged}"
    );
    assert!(flagged.to_lowercase().contains("untrusted"), "{flagged}");
    assert!(flagged.contains("bank"), "it names the provider: {flagged}");
    let digest = b.text(".digest code").await;
    assert!(digest.starts_with("sha256:"), "{digest}");
    b.click("button[value=once]").await;

    // Back on the run's page, never reloaded: the stream brought it to its outcome.
    b.switch(&run_tab).await;
    b.until_text("#status", "attained").await;
    assert_eq!(
        b.script("return window.__notReloaded === true;").await,
        json!(true),
        "the page was not reloaded"
    );
    let timeline = b.text("#timeline").await;
    assert!(timeline.contains("approval_resolved") && timeline.contains("run_finished"));
    // Each call opens to what it ran with, each value with where it came from (the
    // recipient from the bank's statement, flagged), and what came back.
    b.script("document.querySelectorAll('tr.call-detail details').forEach(d => d.open = true); return 1;")
        .await;
    let details = b.text("table.calls").await;
    assert!(
        details.contains("/to") && details.contains("DE44500105175407324931"),
        "{details}"
    );
    assert!(
        details.to_lowercase().contains("untrusted") && details.contains("Result"),
        "{details}"
    );
    b.script("document.querySelectorAll('tr.call-detail details').forEach(d => d.open = false); return 1;")
        .await;
    // Updated live, the page says what a reload says: nothing left over from its waiting.
    let live = b.text("#run-view").await;
    assert!(
        !live.contains("in flight") && !live.contains("wait:"),
        "{live}"
    );
    b.go(&format!("{base}/runs/{run}")).await;
    assert_eq!(
        b.text("#run-view").await,
        live,
        "the live page and a reload differ"
    );

    // Nothing waits any more: the count is gone.
    b.until_text("#pending", "").await;

    // Cancel asks first: dismissed, the run still waits; accepted, it is cancelled.
    let other = start_as_ann(&api, &base).await;
    b.go(&format!("{base}/runs/{other}")).await;
    b.until_text("#status", "waiting").await;
    b.click("form[data-confirm] button").await;
    let asked = b.cmd(reqwest::Method::GET, "/alert/text", None).await;
    assert!(asked.as_str().unwrap().contains(&other), "{asked}");
    b.cmd(reqwest::Method::POST, "/alert/dismiss", Some(json!({})))
        .await;
    assert_eq!(b.text("#status").await, "waiting");
    b.click("form[data-confirm] button").await;
    b.cmd(reqwest::Method::POST, "/alert/accept", Some(json!({})))
        .await;
    b.until_text("#status", "cancelled").await;

    // "Always allow": approved, and a standing grant kept for the same call; the next run's
    // same transfer is approved at once by it, and the grant is listed with a way to revoke it.
    let third = start_as_ann(&api, &base).await;
    // The approvals page is drawn once: open it when the run's request is there.
    b.go(&format!("{base}/runs/{third}")).await;
    b.until_text("#status", "waiting").await;
    b.go(&format!("{base}/approvals")).await;
    b.click("button[value=always]").await;
    b.until_at("/approvals").await;
    let granted = b.text("ul.grants li").await;
    assert!(
        granted.contains("`transfer` on bank for acme/ann"),
        "{granted}"
    );
    b.go(&format!("{base}/runs/{third}")).await;
    b.until_text("#status", "attained").await;
    let fourth = start_as_ann(&api, &base).await;
    b.go(&format!("{base}/runs/{fourth}")).await;
    b.until_text("#status", "attained").await;
    let timeline = b.text("#timeline").await;
    assert!(timeline.contains("approval_granted"), "{timeline}");
    b.go(&format!("{base}/approvals")).await;
    b.click("ul.grants button").await;
    // The page was at /approvals already: wait for the one drawn after the revocation.
    let mut left = json!(null);
    for _ in 0..100 {
        left = b
            .script("return document.querySelectorAll('ul.grants li').length;")
            .await;
        if left == json!(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left, json!(0), "the revoked grant is still listed");

    // The runs list filters by status and finds a run by its id, with when each started.
    b.go(&format!("{base}/?status=cancelled")).await;
    let listed = b.text("#runs").await;
    assert!(
        listed.contains(&other) && !listed.contains(&run),
        "{listed}"
    );
    assert!(b.find("#runs time[data-ms]").await.is_some());
    b.go(&format!("{base}/?run={run}")).await;
    let listed = b.text("#runs").await;
    assert!(
        listed.contains(&run) && !listed.contains(&other),
        "{listed}"
    );

    // A form without its CSRF token is refused, even with the session's cookie.
    let refused = api
        .post(format!("{base}/console/runs/{run}/resume"))
        .header("cookie", "warrant_token=tok-ann")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=forged")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::FORBIDDEN);

    // Another tenant's session sees neither the run nor its approval.
    b.log_in(&base, "tok-eve").await;
    assert!(!b.body().await.contains(&run));
    b.go(&format!("{base}/approvals")).await;
    let body = b.body().await;
    assert!(body.contains("Nothing waits"), "{body}");
    b.go(&format!("{base}/runs/{run}")).await;
    assert!(b.body().await.contains("not-found"), "{}", b.body().await);
    // Logged out, the console asks for a token.
    b.cmd(reqwest::Method::DELETE, "/cookie", None).await;
    b.go(&format!("{base}/approvals")).await;
    assert!(b.find("input[name=token]").await.is_some());
}

/// The widths every page is checked at: a desktop's, and a small phone's.
const WIDTHS: [(&str, u32, u32); 2] = [("desktop", 1280, 900), ("phone", 360, 780)];

/// What a screen reader or a keyboard would miss on the page: a control without a label, a
/// button without a name, an image without a text, an order of focus set by hand, no language.
const ACCESS_JS: &str = r##"
const missing = [];
for (const c of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
  const named = (c.labels && c.labels.length > 0) || c.getAttribute("aria-label")
    || c.getAttribute("aria-labelledby");
  if (!named) missing.push("no label: " + c.outerHTML.slice(0, 120));
}
for (const b of document.querySelectorAll("button, a[href]")) {
  if (!(b.textContent || b.getAttribute("aria-label") || "").trim()) missing.push("no name: " + b.outerHTML.slice(0, 120));
}
for (const i of document.querySelectorAll("svg[role=img], img")) {
  if (!(i.getAttribute("aria-label") || i.getAttribute("alt"))) missing.push("no text: " + i.outerHTML.slice(0, 120));
}
for (const t of document.querySelectorAll("[tabindex]")) {
  if (Number(t.getAttribute("tabindex")) > 0) missing.push("focus order by hand: " + t.outerHTML.slice(0, 120));
}
if (!document.documentElement.lang) missing.push("no lang");
return missing;
"##;

/// The page's outline, for comparing its structure (not its pixels) with a snapshot: each
/// landmark, heading, form control, label, button, table header and section, indented by
/// nesting, with what changes from run to run (ids, digests, numbers) replaced, and
/// `(hidden)` on what the width hides.
const OUTLINE_JS: &str = r##"
const keep = new Set(["HEADER","NAV","MAIN","H1","H2","H3","H4","SECTION","FORM","FIELDSET",
  "LEGEND","LABEL","INPUT","SELECT","TEXTAREA","BUTTON","TABLE","TH","DETAILS","SUMMARY",
  "CAPTION"]);
const norm = (t) => (t || "").replace(/\s+/g, " ").trim()
  .replace(/r[0-9a-f]{20}(\.[0-9]+)*(-a[0-9]+)?/g, "RUN")
  .replace(/sha256:[0-9a-f]+/g, "DIGEST").replace(/[0-9]+/g, "N").slice(0, 80);
const lines = [];
const walk = (el, depth) => {
  for (const c of el.children) {
    if (c.closest("tbody") && c.tagName !== "TABLE" && !c.closest("tbody").closest(".args, .facts")) {
      if (!["INPUT","SELECT","TEXTAREA","BUTTON","FORM","DETAILS","SUMMARY","LABEL"].includes(c.tagName)) {
        walk(c, depth); continue;
      }
    }
    if (keep.has(c.tagName)) {
      let d = c.tagName.toLowerCase();
      for (const a of ["type", "name", "action", "role", "aria-label", "required", "aria-describedby"]) {
        if (c.hasAttribute(a)) d += `[${a}=${norm(c.getAttribute(a))}]`;
      }
      if (c.id) d += "#" + norm(c.id);
      if (c.className && typeof c.className === "string") d += "." + c.className.trim().split(/\s+/).join(".");
      if (["H1","H2","H3","H4","LABEL","BUTTON","TH","LEGEND","SUMMARY"].includes(c.tagName)) {
        d += ` "${norm(c.innerText)}"`;
      }
      if (c.getClientRects().length === 0) d += " (hidden)";
      lines.push("  ".repeat(depth) + d);
      walk(c, depth + 1);
    } else {
      walk(c, depth);
    }
  }
};
walk(document.body, 0);
return lines.join("\n");
"##;

impl Browser {
    /// Renders at `width` × `height` CSS pixels, as a device of that size would.
    async fn size(&self, width: u32, height: u32) {
        self.cmd(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            Some(
                json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}}),
            ),
        )
        .await;
    }

    /// The viewport as a PNG.
    async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let shot = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().unwrap())
            .unwrap()
    }

    /// Checks the page at each width: nothing wider than the screen, and its outline as its
    /// snapshot (`tests/snapshots/console/<name>-<width>.txt`) has it. With
    /// `WARRANT_UPDATE_SNAPSHOTS=1` the snapshots are written instead, and with
    /// `WARRANT_UPDATE_SCREENSHOTS=1` the README's screenshots (`docs/console/`).
    async fn check_page(&self, name: &str) {
        let snapshots = root().join("crates/warrant-cli/tests/snapshots/console");
        for (kind, width, height) in WIDTHS {
            self.size(width, height).await;
            // Laid out again at the new size before anything is measured.
            self.script("return document.body.getBoundingClientRect().width;")
                .await;
            let wide = self
                .script("return [document.documentElement.scrollWidth, window.innerWidth];")
                .await;
            assert!(
                wide[0].as_u64() <= wide[1].as_u64(),
                "{name} at {width} px is wider than the screen: {wide} (scroll, viewport)"
            );
            let missing = self.script(ACCESS_JS).await;
            assert_eq!(missing, json!([]), "{name} at {width} px");
            let outline = self.script(OUTLINE_JS).await.as_str().unwrap().to_owned();
            let path = snapshots.join(format!("{name}-{kind}.txt"));
            if std::env::var_os("WARRANT_UPDATE_SNAPSHOTS").is_some() {
                std::fs::create_dir_all(&snapshots).unwrap();
                std::fs::write(&path, format!("{outline}\n")).unwrap();
            } else {
                let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
                    panic!("no snapshot {path:?}: make it with WARRANT_UPDATE_SNAPSHOTS=1")
                });
                assert_eq!(
                    outline.trim_end(),
                    want.trim_end(),
                    "{name} at {width} px is not laid out as {path:?} says \
                     (WARRANT_UPDATE_SNAPSHOTS=1 writes it again)"
                );
            }
            let shot = root().join(format!("docs/console/{name}-{kind}.png"));
            if std::env::var_os("WARRANT_UPDATE_SCREENSHOTS").is_some() {
                std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
                std::fs::write(&shot, self.screenshot().await).unwrap();
            } else {
                let png = self.screenshot().await;
                assert!(png.starts_with(b"\x89PNG"), "a screenshot is a PNG");
                assert!(
                    shot.exists(),
                    "README's screenshot {shot:?} is missing: WARRANT_UPDATE_SCREENSHOTS=1 makes it"
                );
            }
        }
        self.size(WIDTHS[0].1, WIDTHS[0].2).await;
    }

    /// The URL the browser is at.
    async fn url(&self) -> String {
        self.cmd(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Waits (bounded) until the browser is at a URL that contains `part`.
    async fn until_at(&self, part: &str) -> String {
        for _ in 0..200 {
            let at = self.url().await;
            if at.contains(part) {
                return at;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("never got to `{part}`: {}", self.url().await);
    }
}

/// Starts `body` through the API as Ann: the run's id.
async fn start_via_api(api: &reqwest::Client, base: &str, body: Value) -> String {
    let started: Value = api
        .post(format!("{base}/v1/runs"))
        .bearer_auth("tok-ann")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    started["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_starts_edits_reconciles_and_answers_for_a_child_at_both_widths() {
    let (dir, store) = scratch();
    let examples = root().join("examples");
    // The catalog's spec with typed inputs, and a run left in doubt, before the server.
    let added = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .env("WARRANT_STORE", &store)
        .args(["specs", "add"])
        .arg(examples.join("pay-to/spec.yaml"))
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    // A schedule of it, nightly in Berlin.
    let scheduled = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .env("WARRANT_STORE", &store)
        .args([
            "schedules",
            "add",
            "nightly",
            "--spec",
            "pay-to",
            "--cron",
            "0 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--input",
            "to=DE89370400440532013000",
            "--input",
            "amount=10",
        ])
        .output()
        .unwrap();
    assert!(scheduled.status.success(), "{scheduled:?}");
    let doubtful = left_in_doubt(&store, dir.path());
    // Ann is of the CLI's tenant (`local`), whose run waits in doubt.
    let server = serve_for(
        dir.path(),
        &store,
        &examples,
        &[("tok-ann", "local", "ann")],
    );
    let base = server.base.clone();
    let api = warrant_http::client();
    let b = Browser::start().await;
    b.log_in(&base, "tok-ann").await;

    // Start from the catalog's form: a field for each input, typed by its schema.
    b.go(&format!("{base}/start")).await;
    b.click("ul.catalog a").await;
    b.until_at("/start?spec=pay-to").await;
    let amount = b
        .script("const e = document.querySelector('[name=\"input.amount\"]'); return [e.type, e.max, e.labels[0].innerText];")
        .await;
    assert_eq!(amount, json!(["number", "1000", "amount"]));
    b.check_page("start").await;
    // A value its schema refuses (past the browser's own check): the form again, with what
    // was typed and what is wrong.
    b.type_into("[name=\"input.to\"]", "DE89370400440532013000")
        .await;
    b.type_into("[name=\"input.amount\"]", "5000").await;
    b.script("document.querySelector('form.start').noValidate = true; return 1;")
        .await;
    b.click("form.start button").await;
    let problem = b.text("#start-problem").await;
    assert!(problem.contains("amount"), "{problem}");
    assert_eq!(
        b.script("return document.querySelector('[name=\"input.to\"]').value;")
            .await,
        json!("DE89370400440532013000"),
        "what was typed is kept"
    );
    b.script(
        "const e = document.querySelector('[name=\"input.amount\"]'); e.value = ''; return 1;",
    )
    .await;
    b.type_into("[name=\"input.amount\"]", "120.5").await;
    b.click("form.start button").await;
    let at = b.until_at("/runs/r").await;
    b.until_text("#status", "attained").await;
    let paid = b.text("#run-view").await;
    assert!(paid.contains("transfer"), "{paid}");
    let started_run = at.rsplit('/').next().unwrap().to_owned();

    // Reconcile the call in doubt from its run's page, with what is known shown.
    b.go(&format!("{base}/runs/{doubtful}")).await;
    b.until_text("#status", "waiting").await;
    let doubt = b.text(".doubt").await;
    assert!(
        doubt.contains("append_entry") && doubt.contains("one"),
        "{doubt}"
    );
    b.check_page("run-in-doubt").await;
    b.click("input[value=happened]").await;
    b.type_into("#note-c2", "the ledger file has the entry")
        .await;
    b.click("form.reconcile button").await;
    b.until_text("#status", "attained").await;
    let timeline = b.text("#timeline").await;
    assert!(timeline.contains("call_reconciled"), "{timeline}");
    let calls = b.text("table.calls").await;
    assert!(
        calls.contains("reconciled by local/ann: it happened (the ledger file has the entry)"),
        "{calls}"
    );

    // Approve with edited arguments: the call runs with the edit.
    let rent = start_via_api(
        &api,
        &base,
        json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]}),
    )
    .await;
    // The page is rendered when it is loaded: loaded again once the request is recorded.
    b.go(&format!("{base}/approvals")).await;
    b.until_text("#pending", "1").await;
    b.go(&format!("{base}/approvals")).await;
    b.text("section.approval h3").await;
    b.check_page("approvals").await;
    b.script("document.querySelector('.approval details').open = true; return 1;")
        .await;
    let edited = b
        .script("const t = document.querySelector('textarea[name=edited]'); const v = JSON.parse(t.value); v.memo = 'rent, December'; t.value = JSON.stringify(v); return 1;")
        .await;
    assert_eq!(edited, json!(1));
    b.click("button[value=edit]").await;
    b.until_at(&format!("/runs/{rent}")).await;
    b.until_text("#status", "attained").await;
    // The live page may draw the calls once more as the last events arrive (closing what was
    // opened): opened and read together, until the drawing settles.
    let mut calls = String::new();
    for _ in 0..100 {
        calls = b
            .script("document.querySelectorAll('tr.call-detail details').forEach(d => d.open = true); return document.querySelector('table.calls').innerText;")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if calls.contains("rent, December") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(calls.contains("rent, December"), "{calls}");
    // What people said is inline, on the call it was said of.
    assert!(
        calls.contains("approved by local/ann (once), with edited arguments"),
        "{calls}"
    );

    // A child run's ask waits in the root's approvals, is answered there, and the root goes
    // on; the root's page nests the child under its step, with its status.
    let root_run = start_via_api(
        &api,
        &base,
        json!({"spec_path": "delegation/spec.yaml", "ask_tools": ["check_design_drift"]}),
    )
    .await;
    b.go(&format!("{base}/approvals")).await;
    // The navigation's count says when the child has asked; the inbox then shows it.
    b.until_text("#pending", "1").await;
    b.go(&format!("{base}/approvals")).await;
    let asked = b.text(".approval").await;
    assert!(asked.contains(&format!("a child of {root_run}")), "{asked}");
    b.click(".approval button[value=once]").await;
    // The answer's form leads to the asking child's page: arrived there, go to the root's.
    b.until_at(&format!("/runs/{root_run}.")).await;
    b.go(&format!("{base}/runs/{root_run}")).await;
    b.until_text("#status", "attained").await;
    let nested = b
        .script("return [...document.querySelectorAll('.gantt tr.g-child')].map(r => [r.dataset.step, r.innerText]);")
        .await;
    let nested = nested.as_array().unwrap();
    assert_eq!(nested.len(), 2, "{nested:?}");
    assert!(
        nested
            .iter()
            .all(|r| r[1].as_str().unwrap().contains("attained")),
        "{nested:?}"
    );
    assert_eq!(nested[0][0], "research");
    let took = b.text(".gantt caption").await;
    assert!(took.contains("in all"), "{took}");
    b.check_page("run").await;
    b.go(&format!("{base}/runs/{root_run}/report")).await;
    let report = b.text("main").await;
    for part in [
        "Child runs",
        "Carried values",
        "Objective",
        "Failures by layer",
        "Elapsed",
    ] {
        assert!(report.contains(part), "{part}: {report}");
    }
    b.check_page("report").await;

    // The runs list: when each started and how long it took, the live counts, filtered by
    // when they started.
    b.go(&format!("{base}/?since=hour")).await;
    let listed = b.text("#runs").await;
    assert!(
        listed.contains(&started_run) && listed.contains(&root_run),
        "{listed}"
    );
    assert!(b.text(".counts").await.starts_with("Now:"));
    // Each child run right under its parent.
    let order = b
        .script("return [...document.querySelectorAll('#runs tbody tr')].map(r => [r.dataset.run, r.classList.contains('child')]);")
        .await;
    let order = order.as_array().unwrap();
    let at = order
        .iter()
        .position(|r| r[0] == root_run.as_str())
        .unwrap();
    assert_eq!(
        order[at + 1..at + 3],
        [
            json!([format!("{root_run}.1"), true]),
            json!([format!("{root_run}.2"), true])
        ],
        "{order:?}"
    );
    b.check_page("runs").await;

    // The schedules, paused and resumed by the operator.
    b.go(&format!("{base}/schedules")).await;
    let row = b.text("tr[data-schedule=nightly]").await;
    assert!(row.contains("0 2 * * *") && row.contains("pay-to"), "{row}");
    b.click("tr[data-schedule=nightly] button").await;
    b.until_text("tr[data-schedule=nightly] .status", "paused")
        .await;
    b.until_text("tr[data-schedule=nightly] button", "Resume")
        .await;
    b.check_page("schedules").await;
    b.click("tr[data-schedule=nightly] button").await;
    b.until_text("tr[data-schedule=nightly] button", "Pause")
        .await;

    // A run whose decider asks: its page says what it asks and takes the answer; one outside
    // the question's schema is refused with the schema's reason, one that fits carries it on.
    let asking = start_via_api(
        &api,
        &base,
        json!({"spec_path": "pay-rent/spec.yaml", "decider": "scripted:pay-rent/ask-first.yaml"}),
    )
    .await;
    b.go(&format!("{base}/runs/{asking}")).await;
    b.until_text("#status", "waiting").await;
    b.go(&format!("{base}/runs/{asking}")).await;
    let next = b.text("p.next").await;
    assert!(
        next.contains("Which account should the rent go to?"),
        "{next}"
    );
    b.type_into("form.question textarea", "the usual one").await;
    b.click("form.question button").await;
    // The refusal is the page the form leads to, once the browser has it.
    let mut refused = String::new();
    for _ in 0..100 {
        refused = b.text("body").await;
        if refused.contains("does not fit its schema") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused.contains("does not fit its schema"), "{refused}");
    b.go(&format!("{base}/runs/{asking}")).await;
    b.type_into("form.question textarea", "DE89370400440532013000")
        .await;
    b.click("form.question button").await;
    b.until_at(&format!("/runs/{asking}")).await;
    b.until_text("#status", "attained").await;
}

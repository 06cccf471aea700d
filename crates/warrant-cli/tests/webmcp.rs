//! The browser lane: one spec, unchanged, on the reference lane and on the browser lane, where
//! its in-process providers are served as WebMCP pages (each registering the provider's very
//! tools through `document.modelContext`) and driven in a real headless Chromium — Debian's,
//! which `./test` installs when it is missing. Both end the same way: same outcome, same
//! route, same carried values; and the pages' own ledger shows every call went through them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use serde_json::Value;
use support::*;

/// A run's events, from its log.
fn events(store: &std::path::Path, run: &str) -> Vec<Value> {
    let events = warrant(store, &["events", run, "--json"]);
    assert_eq!(events.status.code(), Some(0), "{}", stderr(&events));
    stdout(&events)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

/// The values a run carried, by name, from its log.
fn carried(store: &std::path::Path, run: &str) -> Vec<(String, Value)> {
    events(store, run)
        .into_iter()
        .filter(|e| e["type"] == "carried")
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["value"].clone()))
        .collect()
}

/// Writes `spec` and its scripted decider's `script` (`script.yaml`) in `dir`: the spec's path.
fn write_spec(dir: &std::path::Path, spec: &str, script: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("script.yaml"), script).unwrap();
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// Runs `warrant ARGS` with its temporary files (the browser's profile) under `tmp`.
fn warrant_tmp(
    tmp: &std::path::Path,
    store: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", store)
        .env("TMPDIR", tmp)
        .env_remove("WARRANT_FAULT")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The processes whose command line mentions `text`.
fn mentioning(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(text) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn the_cafe_gallery_spec_attains_on_both_lanes_with_the_same_route_and_carried_values() {
    let (dir, store) = scratch();
    let mut runs = Vec::new();
    for lane in ["reference", "browser"] {
        let o = warrant_tmp(
            dir.path(),
            &store,
            &[
                "run",
                "examples/cafe-gallery/spec.yaml",
                "--lane",
                lane,
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{lane}: {}", stderr(&o));
        runs.push((json(&o), stderr(&o)));
    }
    let (reference, browser) = (&runs[0].0, &runs[1].0);
    assert_eq!(reference["outcome"], "attained");
    assert_eq!(browser["outcome"], "attained", "{}", runs[1].1);
    assert_eq!(
        browser["route_key"],
        "cafe/read:read_menu -> cafe/commit:order_latte -> gallery/read:check_design_drift"
    );
    assert_eq!(reference["route_key"], browser["route_key"]);
    let (r, b) = (
        reference["run_id"].as_str().unwrap(),
        browser["run_id"].as_str().unwrap(),
    );
    let carried_here = carried(&store, r);
    assert!(!carried_here.is_empty());
    assert_eq!(carried_here, carried(&store, b));
    // Every call of the browser run went through the pages, once each.
    assert!(
        runs[1].1.contains(
            "what the pages did: cafe: order_latte 1, read_menu 1; gallery: check_design_drift 1"
        ),
        "{}",
        runs[1].1
    );
    assert!(!runs[0].1.contains("browser lane"));
    // Its log alone replays it, and its report judges it as the reference run's.
    let replay = warrant(&store, &["replay", b, "--verify"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    let verdicts = |run: &str| {
        let report = json(&warrant(&store, &["report", run, "--json"]));
        report["terminal"].clone()
    };
    assert_eq!(verdicts(r), verdicts(b));
    // `warrant compare` puts the two lanes side by side: one frozen spec, no difference.
    let compared = warrant_tmp(
        dir.path(),
        &store,
        &[
            "compare",
            "examples/cafe-gallery/spec.yaml",
            "--lane",
            "reference",
            "--lane",
            "browser",
            "--json",
        ],
    );
    assert_eq!(compared.status.code(), Some(0), "{}", stderr(&compared));
    let compared = json(&compared);
    let lanes: Vec<&str> = compared["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["lane"].as_str().unwrap())
        .collect();
    assert_eq!(lanes, ["reference", "browser"]);
    assert_eq!(compared["path_difference"], false, "{compared}");
    assert_eq!(compared["terminal_difference"], false, "{compared}");
    // The browser it started ended with it, its profile too.
    let profiles = dir.path().join("warrant-chromium-");
    assert!(
        mentioning(&profiles.display().to_string()).is_empty(),
        "a browser outlived its run"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("warrant-chromium-")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A `warrant run` on the browser lane killed outright (SIGKILL, no time to end anything)
/// while its run waits for a person in the terminal leaves no browser behind: Chromium runs
/// under Warrant's guard, which ends its process group when its parent is gone.
#[test]
fn a_browser_lane_run_killed_outright_leaves_no_browser_behind() {
    use std::process::{Command, Stdio};
    let (dir, store) = scratch();
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", &store)
        .env("TMPDIR", dir.path())
        .env_remove("WARRANT_FAULT")
        .args([
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--lane",
            "browser",
            "--ask-tool",
            "order_latte",
            "--prompt",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let profiles = dir.path().join("warrant-chromium-").display().to_string();
    // It waits for an answer on its standard input (kept open), its browser running.
    let mut waiting = false;
    for _ in 0..600 {
        let asked = warrant(&store, &["approvals", "--json"]);
        if asked.status.code() == Some(0)
            && json(&asked).as_array().is_some_and(|a| !a.is_empty())
            && !mentioning(&profiles).is_empty()
        {
            waiting = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(waiting, "the run never waited with its browser open");
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by a signal");
    let mut left = mentioning(&profiles);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = mentioning(&profiles);
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    // Its profile stayed behind (nobody was left to remove it); the next browser this
    // machine's Warrant starts removes it.
    let profiles_left = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("warrant-chromium-")
            })
            .count()
    };
    assert_eq!(profiles_left(), 1);
    let next = warrant_tmp(
        dir.path(),
        &store,
        &[
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--lane",
            "browser",
            "-q",
        ],
    );
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert_eq!(profiles_left(), 0, "the orphaned profile is gone");
}

/// Serves `files` (path → body) on a loopback port until the test ends, counting the requests
/// for each path: the base URL and the counts.
fn serve_counting(
    files: Vec<(&'static str, String)>,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, u32>>>,
) {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                    break;
                }
            }
            *counted.lock().unwrap().entry(path.clone()).or_insert(0) += 1;
            let body = files
                .iter()
                .find(|(p, _)| *p == path)
                .map_or("", |(_, b)| b.as_str());
            let kind = if path.ends_with(".js") {
                "text/javascript"
            } else {
                "text/html"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\naccess-control-allow-origin: *\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (base, hits)
}

/// A third party's script on a page registers a tool of its own (`transfer`): with the
/// shipped example policy (`examples/policies/webmcp.cedar`) the run never calls it — the
/// Bridge refuses it by policy, naming the rule, and the page's tool is never executed —
/// while the page's own tool is called as any other. Cedar sees the origins the browser
/// reported, not anything the page says.
#[test]
fn a_tool_a_third_party_script_registers_is_refused_by_the_example_policy() {
    let (widgets, widget_hits) = serve_counting(vec![(
        "/widget.js",
        // Served from another origin (another port) than the page.
        r#"const home = new URL("/hit", document.currentScript.src);
document.modelContext.registerTool({name: "transfer", description: "moves money",
  inputSchema: {type: "object", properties: {to: {type: "string"}}, required: ["to"]},
  execute: async ({to}) => { await fetch(home, {mode: "no-cors"}); return {sent: to}; }});"#
            .to_owned(),
    )]);
    let page = format!(
        r#"<!doctype html><title>shop</title><script>
document.modelContext.registerTool({{name: "price", description: "the price of an item",
  inputSchema: {{type: "object", properties: {{item: {{type: "string"}}}}, required: ["item"]}},
  execute: async ({{item}}) => ({{item, cents: 250}})}});
</script><script src="{widgets}/widget.js"></script>"#
    );
    let (shop, _) = serve_counting(vec![("/shop.html", page)]);
    let (dir, store) = scratch();
    let policy = root().join("examples/policies/webmcp.cedar");
    let spec = write_spec(
        dir.path(),
        &format!(
            r#"version: warrant/v1
id: third-party
objective: Find the price of a latte.
decider: scripted:script.yaml
policy: ["{}"]
providers:
  shop: {{webmcp: {{url: "{shop}/shop.html", effects: {{price: read, transfer: commit}}}}}}
steps:
  - id: buy
    provider: shop
    intent: Price a latte.
    tools: [price, transfer]
limits: {{deadline_ms: 60000}}
"#,
            policy.display()
        ),
        "steps:\n  buy:\n    - call: price\n      args: {item: latte}\n    - call: transfer\n      args: {to: attacker}\n    - done: priced\n",
    );
    let o = warrant_tmp(
        dir.path(),
        &store,
        &["run", spec.to_str().unwrap(), "--json"],
    );
    assert!(o.status.code().is_some(), "{}", stderr(&o));
    let run = json(&o)["run_id"].as_str().unwrap().to_owned();
    let events = events(&store, &run);
    // What the browser saw, recorded with the observation.
    let observed = events
        .iter()
        .find(|e| e["type"] == "observed")
        .expect("an observation");
    let transfer = observed["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "transfer")
        .unwrap();
    assert_eq!(transfer["origin"]["page"], shop.as_str());
    assert_eq!(transfer["origin"]["script"], widgets.as_str());
    let finished: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "call_finished")
        .map(|e| {
            let started = events
                .iter()
                .find(|s| s["type"] == "call_started" && s["call"] == e["call"])
                .unwrap();
            (
                started["tool"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        finished,
        [("price", "ok"), ("transfer", "stopped_by_policy")],
        "{events:#?}"
    );
    let refusal = events
        .iter()
        .find(|e| e["type"] == "call_finished" && e["status"] == "stopped_by_policy")
        .unwrap();
    assert!(
        refusal.to_string().contains("third-party-tools"),
        "{refusal}"
    );
    assert_eq!(
        widget_hits.lock().unwrap().get("/hit"),
        None,
        "the tool ran"
    );
}

/// A child process killed when dropped.
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `warrant webmcp-serve PROVIDERS` on a free loopback port: the process and its base URL.
fn webmcp_serve(providers: &[&str]) -> (Proc, String) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let served = Proc(
        std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
            .args(["webmcp-serve"])
            .args(providers)
            .args(["--listen", &listen])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://{listen}");
    for _ in 0..200 {
        if std::net::TcpStream::connect(&listen).is_ok() {
            return (served, base);
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("webmcp-serve did not listen on {listen}");
}

/// What the pages at `base` did (`GET /ledger`).
fn ledger(base: &str) -> Value {
    use std::io::{Read as _, Write as _};
    let address = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /ledger HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap();
    serde_json::from_str(body).unwrap()
}

/// The cafe-gallery spec with its providers reached as the WebMCP pages at `base`, written
/// in `dir` (its script is the example's).
fn cafe_gallery_on_pages(dir: &std::path::Path, base: &str) -> std::path::PathBuf {
    let script = root().join("examples/cafe-gallery/script.yaml");
    let spec = dir.join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            r#"version: warrant/v1
id: cafe-gallery-pages
objective: Order a medium latte with oat milk at the cafe, then check its color against the gallery's palette.
decider: scripted:{}
providers:
  cafe: {{webmcp: {{url: "{base}/cafe/", effects: {{read_menu: read, order_latte: commit}}}}}}
  gallery: {{webmcp: {{url: "{base}/gallery/", effects: {{check_design_drift: read}}}}}}
steps:
  - id: order
    provider: cafe
    intent: Order one medium latte with oat milk.
    tools: [read_menu, order_latte]
    commit: required
    required: true
    publishes:
      order_id: {{from: order_latte, path: /order_id}}
      color: {{from: order_latte, path: /color}}
  - id: drift
    provider: gallery
    intent: Check the latte's color against the palette.
    tools: [check_design_drift]
    after: [order]
    required: true
    inputs:
      color: order.color
limits: {{deadline_ms: 60000}}
"#,
            script.display()
        ),
    )
    .unwrap();
    spec
}

/// A run on pages another process serves (`warrant webmcp-serve`), killed after the page ran
/// the order and before its answer was recorded: re-entered, the order is in doubt (a page
/// takes no idempotency key), never sent again; reconciled as done, the run ends, and the
/// pages' own ledger counts one order.
#[test]
fn a_run_killed_after_a_page_ran_its_commit_repeats_nothing() {
    let (_pages, base) = webmcp_serve(&["cafe", "gallery"]);
    let (dir, store) = scratch();
    let spec = cafe_gallery_on_pages(dir.path(), &base);
    let spec = spec.to_str().unwrap();
    let killed = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", &store)
        .env("TMPDIR", dir.path())
        .env("WARRANT_FAULT", "after-invoke:2")
        .args(["run", spec, "-q"])
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "{}", stderr(&killed));
    assert_eq!(ledger(&base)["cafe"]["order_latte"], 1);
    let resumed = warrant_tmp(dir.path(), &store, &["resume", "last"]);
    assert_eq!(resumed.status.code(), Some(3), "{}", stderr(&resumed));
    assert!(
        stdout(&resumed).contains("in doubt"),
        "{}",
        stdout(&resumed)
    );
    let run = json(&warrant(&store, &["runs", "--json"]))[0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let said = warrant(
        &store,
        &[
            "reconcile",
            &run,
            "c2",
            "--happened",
            "--note",
            "the ledger has it",
        ],
    );
    assert_eq!(said.status.code(), Some(0), "{}", stderr(&said));
    let ended = warrant_tmp(dir.path(), &store, &["resume", &run, "--json"]);
    assert!(
        matches!(ended.status.code(), Some(0 | 1)),
        "{}",
        stderr(&ended)
    );
    assert!(json(&ended)["outcome"].is_string(), "{}", stdout(&ended));
    assert_eq!(
        ledger(&base)["cafe"]["order_latte"],
        1,
        "the order was repeated"
    );
}

/// A page whose commit navigates away before it answers: the order reached the shop (its
/// server counts it), the answer never came — so the call is in doubt, not failed and not
/// repeated, until an operator says what happened.
#[test]
fn a_page_that_navigates_away_mid_call_leaves_its_commit_in_doubt() {
    let page = r#"<!doctype html><title>shop</title><script>
document.modelContext.registerTool({name: "order", description: "orders an item",
  inputSchema: {type: "object", properties: {item: {type: "string"}}, required: ["item"]},
  execute: async ({item}) => {
    await fetch("/order", {method: "POST", body: item});
    location.href = "/thanks.html";
    return new Promise(() => {});
  }});
</script>"#
        .to_owned();
    let (shop, hits) = serve_counting(vec![
        ("/shop.html", page),
        (
            "/thanks.html",
            "<!doctype html><title>thanks</title>thanks".to_owned(),
        ),
    ]);
    let (dir, store) = scratch();
    let spec = write_spec(
        dir.path(),
        &format!(
            r#"version: warrant/v1
id: navigating
objective: Order a latte.
decider: scripted:script.yaml
providers:
  shop: {{webmcp: {{url: "{shop}/shop.html", effects: {{order: commit}}}}}}
steps:
  - id: buy
    provider: shop
    intent: Order a latte.
    tools: [order]
    commit: required
limits: {{deadline_ms: 60000, call_timeout_ms: 20000}}
"#
        ),
        "steps:\n  buy:\n    - call: order\n      args: {item: latte}\n    - done: ordered\n",
    );
    let o = warrant_tmp(dir.path(), &store, &["run", spec.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let said = stdout(&o);
    assert!(
        said.contains("in doubt: it was sent and its answer was lost"),
        "{said}"
    );
    assert_eq!(hits.lock().unwrap().get("/order"), Some(&1));
    let run = json(&warrant(&store, &["runs", "--json"]))[0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The log says why: the page went to another document before it answered.
    let events = stdout(&warrant(&store, &["events", &run, "--json"]));
    assert!(events.contains("navigated"), "{events}");
    let said = warrant(&store, &["reconcile", &run, "c1", "--happened"]);
    assert_eq!(said.status.code(), Some(0), "{}", stderr(&said));
    let ended = warrant_tmp(dir.path(), &store, &["resume", &run]);
    assert!(
        matches!(ended.status.code(), Some(0 | 1)),
        "{}",
        stderr(&ended)
    );
    assert_eq!(
        hits.lock().unwrap().get("/order"),
        Some(&1),
        "ordered twice"
    );
}

/// The gateway puts a page's WebMCP tools in front of MCP clients like any upstream server:
/// the official TypeScript SDK client lists and calls them over stdio, each call passing the
/// Bridge and recorded in the session's run — the order, proposed after the client read the
/// page's untrusted menu, asked of a person first — and the page's server counts one order.
#[test]
fn the_gateway_offers_a_pages_tools_to_an_mcp_client_governed() {
    let (_pages, base) = webmcp_serve(&["cafe"]);
    let (dir, store) = scratch();
    let config = dir.path().join("gateway.yaml");
    std::fs::write(
        &config,
        format!(
            r#"version: warrant/gateway/v1
id: cafe-pages
servers:
  cafe:
    webmcp:
      url: "{base}/cafe/"
      effects: {{read_menu: read, order_latte: commit}}
policy: ["{}"]
"#,
            root().join("examples/policies/webmcp.cedar").display()
        ),
    )
    .unwrap();
    let plan = serde_json::json!({
        "command": [env!("CARGO_BIN_EXE_warrant"), "gateway", config],
        "env": {"WARRANT_STORE": store, "TMPDIR": dir.path()},
        // The order comes after the client read the page's (untrusted) menu: a person is
        // asked, and approves.
        "answers": ["approve"],
        "calls": [
            {"name": "read_menu", "arguments": {}},
            {"name": "order_latte", "arguments": {"size": "medium", "milk": "oat"}},
        ],
    });
    let out = std::process::Command::new("node")
        .arg(root().join("mcp-servers/gateway-client.mjs"))
        .arg(plan.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["order_latte", "read_menu"], "{seen}");
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{seen}");
    assert!(results.iter().all(|r| r["isError"] != true), "{seen}");
    assert!(results[1].to_string().contains("order_id"), "{seen}");
    assert_eq!(seen["asked"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(ledger(&base)["cafe"]["order_latte"], 1);
    // The session is a run whose log holds both calls.
    let runs = json(&warrant(&store, &["runs", "--json"]));
    let run = runs[0]["run_id"].as_str().unwrap();
    let events = stdout(&warrant(&store, &["events", run, "--json"]));
    let dispatched = events
        .lines()
        .filter(|l| l.contains("\"type\":\"call_dispatched\""))
        .count();
    assert_eq!(dispatched, 2, "{events}");
}

/// A read whose page goes before it answers is not in doubt — a read changes nothing — so
/// the run never waits for an operator over it: the call ends as the provider's failure,
/// said in the log, and the run goes on to its end.
#[test]
fn a_read_whose_page_goes_before_it_answers_is_not_in_doubt() {
    let page = r#"<!doctype html><title>shop</title><script>
document.modelContext.registerTool({name: "peek", description: "looks at the stock",
  inputSchema: {type: "object", properties: {}},
  execute: () => { location.href = "/elsewhere.html"; return new Promise(() => {}); }});
</script>"#
        .to_owned();
    let (shop, _) = serve_counting(vec![
        ("/shop.html", page),
        (
            "/elsewhere.html",
            "<!doctype html><title>elsewhere</title>".to_owned(),
        ),
    ]);
    let (dir, store) = scratch();
    let spec = write_spec(
        dir.path(),
        &format!(
            r#"version: warrant/v1
id: peeking
objective: Look at the stock.
decider: scripted:script.yaml
providers:
  shop: {{webmcp: {{url: "{shop}/shop.html", effects: {{peek: read}}}}}}
steps:
  - id: look
    provider: shop
    intent: Look at the stock.
    tools: [peek]
limits: {{deadline_ms: 60000, call_timeout_ms: 20000}}
"#
        ),
        "steps:\n  look:\n    - call: peek\n    - done: looked\n",
    );
    let o = warrant_tmp(
        dir.path(),
        &store,
        &["run", spec.to_str().unwrap(), "--json"],
    );
    assert_ne!(o.status.code(), Some(3), "it waits: {}", stdout(&o));
    let run = json(&o)["run_id"].as_str().unwrap().to_owned();
    let events = events(&store, &run);
    assert!(
        events.iter().all(|e| e["type"] != "call_in_doubt"),
        "{events:#?}"
    );
    let finished = events
        .iter()
        .find(|e| e["type"] == "call_finished")
        .expect("the read ends");
    assert_ne!(finished["status"], "ok", "{finished}");
    assert!(finished.to_string().contains("navigated"), "{finished}");
    assert_eq!(events.last().unwrap()["type"], "run_finished");
}

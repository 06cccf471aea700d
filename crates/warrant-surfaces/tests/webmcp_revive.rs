//! A page whose renderer crashed, or whose whole browser was killed, is a provider that went
//! down: what is asked of it then fails as `Down` (nothing happened, a read may be asked
//! again), and `revive` opens the page again — in a new browser when the old one is gone —
//! so the run goes on. Its own test binary: it kills the browser this process started, which
//! the other WebMCP tests share.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::collections::BTreeMap;

use serde_json::{Value, json};
use warrant_core::event::Effect;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{Invocation, Surface, SurfaceErrorKind};
use warrant_core::spec::WebMcpSpec;
use warrant_surfaces::webmcp::WebMcpSurface;

mod served;

const PAGE: &str = r#"<!doctype html><title>shop</title><script>
document.modelContext.registerTool({name: "price", description: "the price",
  inputSchema: {type: "object", properties: {}},
  execute: async () => ({content: [{type: "text", text: "{\"cents\": 250}"}]})});
document.modelContext.registerTool({name: "stock", description: "never answers",
  inputSchema: {type: "object", properties: {}},
  execute: () => new Promise(() => {})});
</script>"#;

fn call(tool: &str, effect: Effect, version: &str) -> Invocation {
    Invocation::testing(
        RunId("r-revive".into()),
        CallId(1),
        tool,
        json!({}),
        effect,
        version,
    )
}

/// Each process's fields from `/proc/<pid>/stat`: (pid, parent, process group), with its
/// command line.
fn processes() -> Vec<(u32, u32, u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command's name in parentheses: state, parent, process group.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split(' ').collect();
        let (Ok(parent), Ok(group)) = (fields[1].parse(), fields[2].parse()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        found.push((pid, parent, group, cmdline));
    }
    found
}

/// The browser this process started: its process id (and group).
fn our_browser() -> u32 {
    let me = std::process::id();
    processes()
        .into_iter()
        .find(|(_, parent, _, cmd)| *parent == me && cmd.contains("--remote-debugging-port"))
        .map(|(pid, ..)| pid)
        .expect("a browser this test started")
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

async fn observe_up(page: &WebMcpSurface) -> Value {
    let seen = page.observe().await.unwrap();
    let price = page
        .invoke(call("price", Effect::Read, &seen.version))
        .await
        .unwrap();
    price.output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_crashed_or_lost_its_browser_is_opened_again() {
    let base = served::serve(BTreeMap::from([("/shop.html", PAGE)]));
    let spec = WebMcpSpec {
        url: format!("{base}/shop.html"),
        ..WebMcpSpec::default()
    };
    let page = WebMcpSurface::open("shop", &spec, false, 30_000)
        .await
        .unwrap();
    assert_eq!(observe_up(&page).await, json!({"cents": 250}));
    // Nothing to revive while the page is open.
    assert_eq!(page.revive().await.attempts, 0);

    // Its renderer crashes: the page is down, not merely changed.
    let browser = our_browser();
    let renderers: Vec<u32> = processes()
        .into_iter()
        .filter(|(_, _, group, cmd)| *group == browser && cmd.contains("--type=renderer"))
        .map(|(pid, ..)| pid)
        .collect();
    assert!(!renderers.is_empty(), "the page's renderer");
    for r in renderers {
        kill(r);
    }
    let mut down = None;
    for _ in 0..100 {
        match page.observe().await {
            Err(e) => {
                down = Some(e);
                break;
            }
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    let down = down.expect("the crash is seen");
    assert_eq!(down.kind, SurfaceErrorKind::Down, "{down:?}");
    assert!(down.message.contains("crashed"), "{}", down.message);
    let revived = page.revive().await;
    assert_eq!((revived.attempts, revived.error), (1, None));
    assert_eq!(observe_up(&page).await, json!({"cents": 250}));
    assert_eq!(our_browser(), browser, "the same browser");

    // The whole browser is killed while a read waits: the read is down (it may be asked
    // again), and the page opens in a new browser.
    let seen = page.observe().await.unwrap();
    let waiting = page.invoke(call("stock", Effect::Read, &seen.version));
    let killer = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        kill(browser);
    };
    let (answer, ()) = tokio::join!(waiting, killer);
    let e = answer.unwrap_err();
    assert_eq!(e.kind, SurfaceErrorKind::Down, "{e:?}");
    assert!(!page.is_current(&seen.version).await);
    let revived = page.revive().await;
    assert_eq!((revived.attempts, revived.error), (1, None));
    assert_eq!(observe_up(&page).await, json!({"cents": 250}));
    assert_ne!(our_browser(), browser, "a new browser");

    // A commit whose browser goes while it waits may have happened: its answer is lost.
    let seen = page.observe().await.unwrap();
    let waiting = page.invoke(call("stock", Effect::Commit, &seen.version));
    let second = our_browser();
    let killer = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        kill(second);
    };
    let (answer, ()) = tokio::join!(waiting, killer);
    let e = answer.unwrap_err();
    assert_eq!(e.kind, SurfaceErrorKind::AnswerLost, "{e:?}");
}

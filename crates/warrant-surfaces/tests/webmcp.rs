//! The WebMCP surface against a real headless Chromium (Debian's; `./test` installs it when it
//! is missing) and pages served on loopback: what a page registers is what is offered, with
//! the script that registered it in the version; a tool registered again with another schema
//! makes the observation stale; a page that navigates away before it answers leaves the call
//! with its answer lost (a commit in doubt); a tool that throws is the page's error; a tool
//! the page does not offer is refused before anything is sent; a run's pages share storage
//! unless one keeps its own; a page reports its URL and title; a declared form submits itself.

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
use warrant_core::spec::{PageStorage, WebMcpSpec};
use warrant_surfaces::webmcp::{RunContexts, WebMcpSurface};

mod served;
use served::serve;

const PAGE: &str = r#"<!doctype html><html><head><title>shop</title></head><body>
<script src="/tools.js"></script></body></html>"#;

const TOOLS: &str = r#"
const first = new AbortController();
document.modelContext.registerTool({name: "price", description: "the price of an item",
  inputSchema: {type: "object", properties: {item: {type: "string"}}, required: ["item"]},
  annotations: {readOnlyHint: true},
  execute: async ({item}) => ({content: [{type: "text", text: JSON.stringify({item, cents: 250})}]})},
  {signal: first.signal});
document.modelContext.registerTool({name: "reprice", description: "changes `price`'s schema",
  inputSchema: {type: "object", properties: {}},
  execute: async () => {
    first.abort();
    document.title = "shop\u0007 repriced";
    document.modelContext.registerTool({name: "price", description: "the price of an item",
      inputSchema: {type: "object", properties: {sku: {type: "integer"}}, required: ["sku"]},
      execute: async ({sku}) => ({sku, cents: 300})});
    return "repriced";
  }});
document.modelContext.registerTool({name: "checkout", description: "leaves for the payment page",
  inputSchema: {type: "object", properties: {}},
  execute: () => { location.href = "/paid.html"; return new Promise(() => {}); }});
document.modelContext.registerTool({name: "broken", description: "always fails",
  inputSchema: {type: "object", properties: {}},
  execute: async () => { throw new Error("out of milk"); }});
"#;

fn page() -> (String, WebMcpSpec) {
    let base = serve(BTreeMap::from([
        ("/shop.html", PAGE),
        ("/tools.js", TOOLS),
        ("/paid.html", "<!doctype html><title>paid</title>paid"),
    ]));
    let spec = WebMcpSpec {
        url: format!("{base}/shop.html"),
        ..WebMcpSpec::default()
    };
    (base, spec)
}

fn call(tool: &str, args: Value, effect: Effect, version: &str) -> Invocation {
    Invocation::testing(
        RunId("r-webmcp".into()),
        CallId(1),
        tool,
        args,
        effect,
        version,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pages_tools_are_offered_called_and_go_stale_with_their_document() {
    let (base, spec) = page();
    let shop = WebMcpSurface::open("shop", &spec, true, 30_000)
        .await
        .unwrap();
    assert!(
        shop.browser_product().contains("Chrome/"),
        "{}",
        shop.browser_product()
    );
    let seen = shop.observe().await.unwrap();
    let names: Vec<&str> = seen.actions.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["broken", "checkout", "price", "reprice"]);
    let price = seen.actions.iter().find(|a| a.name == "price").unwrap();
    // A trusted page's read-only hint makes a read; a tool that says nothing is a commit.
    assert_eq!(price.effect, Effect::Read);
    assert_eq!(
        seen.actions
            .iter()
            .find(|a| a.name == "checkout")
            .unwrap()
            .effect,
        Effect::Commit
    );
    assert_eq!(price.input_schema["required"], json!(["item"]));
    // Registered by the page's own script (`/tools.js`): both origins are the page's.
    let origin = price.origin.as_ref().unwrap();
    assert_eq!(
        (origin.page.as_str(), origin.script.as_str()),
        (base.as_str(), base.as_str())
    );
    assert!(shop.is_current(&seen.version).await);
    // What the page shows of itself, as the browser reports it.
    let snapshot = seen.page.clone().unwrap();
    assert_eq!(
        (snapshot.url.as_str(), snapshot.title.as_str()),
        (spec.url.as_str(), "shop")
    );

    // One text block of JSON is that JSON.
    let out = shop
        .invoke(call(
            "price",
            json!({"item": "latte"}),
            Effect::Read,
            &seen.version,
        ))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(out.output, json!({"item": "latte", "cents": 250}));

    // A tool that throws: the page's error, with what it said.
    let out = shop
        .invoke(call("broken", json!({}), Effect::Commit, &seen.version))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.output.to_string().contains("out of milk"),
        "{}",
        out.output
    );

    // A tool registered again with another schema: what was observed is stale, and the
    // next observation has the new schema.
    shop.invoke(call("reprice", json!({}), Effect::Commit, &seen.version))
        .await
        .unwrap();
    let again = shop.observe().await.unwrap();
    assert!(!shop.is_current(&seen.version).await);
    assert_ne!(again.version, seen.version);
    let price = again.actions.iter().find(|a| a.name == "price").unwrap();
    assert_eq!(price.input_schema["required"], json!(["sku"]));
    // Registered again without the hint: no longer a read.
    assert_eq!(price.effect, Effect::Commit);
    // Its new title, without the control character the page put in it.
    assert_eq!(again.page.as_ref().unwrap().title, "shop repriced");

    // A tool the page does not offer is refused before anything is sent.
    let e = shop
        .invoke(call("refund", json!({}), Effect::Commit, &again.version))
        .await
        .unwrap_err();
    assert_eq!(e.kind, SurfaceErrorKind::NotSent, "{e:?}");

    // A page that navigates away before it answers: the answer is lost, so a commit may
    // have happened; the new document offers nothing, and what was observed is stale.
    let e = shop
        .invoke(call("checkout", json!({}), Effect::Commit, &again.version))
        .await
        .unwrap_err();
    assert_eq!(e.kind, SurfaceErrorKind::AnswerLost, "{e:?}");
    assert!(e.kind.may_have_happened());
    assert!(e.message.contains("navigated"), "{}", e.message);
    assert!(!shop.is_current(&again.version).await);
    let after = shop.observe().await.unwrap();
    assert!(after.actions.is_empty());
    let snapshot = after.page.unwrap();
    assert_eq!(
        (snapshot.url, snapshot.title),
        (format!("{base}/paid.html"), "paid".to_owned())
    );
}

/// What `page` recalls from its storage.
async fn recall(page: &WebMcpSurface) -> Value {
    let v = page.observe().await.unwrap().version;
    page.invoke(call("recall", json!({}), Effect::Commit, &v))
        .await
        .unwrap()
        .output
}

/// The pages of one run share their cookies and storage by default (`storage: run`), and no
/// other run's; a page whose spec says `storage: provider` has its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_pages_share_storage_unless_one_keeps_its_own() {
    let base = serve(BTreeMap::from([(
        "/a.html",
        r#"<!doctype html><script>
document.modelContext.registerTool({name: "remember", description: "stores a value",
  inputSchema: {type: "object", properties: {v: {type: "string"}}},
  execute: async ({v}) => { localStorage.setItem("v", v); return {stored: v}; }});
document.modelContext.registerTool({name: "recall", description: "reads it back",
  inputSchema: {type: "object", properties: {}},
  execute: async () => ({v: localStorage.getItem("v")})});
</script>"#,
    )]));
    let spec = WebMcpSpec {
        url: format!("{base}/a.html"),
        ..WebMcpSpec::default()
    };
    let own = WebMcpSpec {
        storage: PageStorage::Provider,
        ..spec.clone()
    };
    let run = RunContexts::default();
    let other_run = RunContexts::default();
    let one = WebMcpSurface::open_in(Some(&run), "one", &spec, false, 30_000)
        .await
        .unwrap();
    let two = WebMcpSurface::open_in(Some(&run), "two", &spec, false, 30_000)
        .await
        .unwrap();
    let alone = WebMcpSurface::open_in(Some(&run), "alone", &own, false, 30_000)
        .await
        .unwrap();
    let elsewhere = WebMcpSurface::open_in(Some(&other_run), "elsewhere", &spec, false, 30_000)
        .await
        .unwrap();
    let v1 = one.observe().await.unwrap().version;
    one.invoke(call(
        "remember",
        json!({"v": "secret"}),
        Effect::Commit,
        &v1,
    ))
    .await
    .unwrap();
    assert_eq!(recall(&one).await, json!({"v": "secret"}));
    assert_eq!(
        recall(&two).await,
        json!({"v": "secret"}),
        "the run's pages share"
    );
    assert_eq!(recall(&alone).await, json!({"v": null}), "its own storage");
    assert_eq!(
        recall(&elsewhere).await,
        json!({"v": null}),
        "another run's"
    );
}

/// A tool the document's own markup declares (`<form toolname=...>`) is offered with its
/// generated schema, and is the page's own: its script origin is the page's. A form that
/// submits itself when called (`toolautosubmit`) answers with what its submit handler gives
/// (`respondWith`); one whose submission leaves the page has its answer lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_the_page_declares_is_a_tool_of_the_page() {
    let base = serve(BTreeMap::from([
        (
            "/search.html",
            r#"<!doctype html><title>search</title>
<form toolname="search" tooldescription="Searches the catalog" action="/results.html"
  toolautosubmit>
<input name="q" type="text" toolparamdescription="what to look for" required>
<button type="submit">go</button></form>
<form toolname="note" tooldescription="Keeps a note" toolautosubmit>
<input name="text" type="text" required></form>
<script>
document.forms[1].addEventListener("submit", (e) => {
  e.preventDefault();
  e.respondWith(Promise.resolve({content: [{type: "text",
    text: JSON.stringify({kept: e.target.text.value})}]}));
});
</script>"#,
        ),
        (
            "/results.html",
            "<!doctype html><title>results</title>results",
        ),
    ]));
    let spec = WebMcpSpec {
        url: format!("{base}/search.html"),
        ..WebMcpSpec::default()
    };
    let page = WebMcpSurface::open("search", &spec, false, 30_000)
        .await
        .unwrap();
    let seen = page.observe().await.unwrap();
    let search = seen.actions.iter().find(|a| a.name == "search").unwrap();
    assert_eq!(search.description, "Searches the catalog");
    assert_eq!(search.input_schema["required"], json!(["q"]));
    let origin = search.origin.as_ref().unwrap();
    assert_eq!(origin.page, base);
    assert_eq!(origin.script, base, "the document's own markup");

    let submit = |tool: &str, args: Value| call(tool, args, Effect::Commit, &seen.version);
    let kept = page
        .invoke(submit("note", json!({"text": "oat milk"})))
        .await
        .unwrap();
    assert_eq!(kept.output, json!({"kept": "oat milk"}));
    let e = page
        .invoke(submit("search", json!({"q": "latte"})))
        .await
        .unwrap_err();
    assert_eq!(e.kind, SurfaceErrorKind::AnswerLost, "{e:?}");
    assert!(e.message.contains("/results.html?q=latte"), "{}", e.message);
}

//! In-process providers served as WebMCP web apps: each provider a page that registers the
//! very tools it offers in process (same names, descriptions and schemas, its effects as
//! `readOnlyHint`), whose `execute` asks this server to run the call on the same provider. So
//! one spec runs unchanged on the reference lane and on the browser lane
//! (`warrant run --lane browser`, `warrant webmcp-serve`), and this server keeps the ledger of
//! what the pages did (`GET /ledger`: successful calls by provider and tool).
//!
//! These pages are providers in their own right, like an MCP server: a call reaches the
//! provider from the page, not through a Bridge (the run that drives the page governs what it
//! asks of it). So they listen on loopback only, and the browser lane's are under a path no
//! one but the browser it opened them in is told (`Pages::new`'s `prefix`, random per lane).
//! Every body read is bounded.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use warrant_core::event::Effect;

use crate::reference::{Provider, ProviderError};

/// Largest call body read.
const CALL_BYTES_MAX: usize = 1 << 20;

/// The providers served, by the name in their path (`/<name>/`).
pub struct Pages {
    /// The first segment of every path served (empty: none).
    prefix: String,
    providers: BTreeMap<String, Arc<dyn Provider>>,
    /// Successful calls, by provider and tool.
    ledger: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
    calls: AtomicU64,
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pages")
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Pages {
    /// Pages for `providers`, by name, each at `/<prefix>/<name>/` (at `/<name>/` when
    /// `prefix` is empty).
    pub fn new(prefix: &str, providers: BTreeMap<String, Arc<dyn Provider>>) -> Pages {
        Pages {
            prefix: prefix.to_owned(),
            providers,
            ledger: Mutex::new(BTreeMap::new()),
            calls: AtomicU64::new(0),
        }
    }

    /// Successful calls so far, by provider and tool.
    pub fn ledger(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.ledger.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Serves on `listener` until `shutdown` resolves.
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(_) => continue,
                },
                () = &mut shutdown => return,
            };
            let pages = self.clone();
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let pages = pages.clone();
                async move { Ok::<_, Infallible>(pages.answer(request).await) }
            });
            #[expect(
                clippy::disallowed_methods,
                reason = "the pages server owns the task that serves each connection"
            )]
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if !self.prefix.is_empty() {
            if parts.first() != Some(&self.prefix.as_str()) {
                return not_found(&path);
            }
            parts.remove(0);
            if parts.is_empty() {
                parts.push("");
            }
        }
        match (request.method(), parts.as_slice()) {
            (&Method::GET, [""]) => html(StatusCode::OK, &self.index()),
            (&Method::GET, ["ledger"]) => json_answer(StatusCode::OK, &json!(self.ledger())),
            (&Method::GET, [name]) => match self.providers.get(*name) {
                Some(p) => html(StatusCode::OK, &page(name, p.as_ref())),
                None => not_found(&path),
            },
            (&Method::POST, [name, "call", tool]) => {
                let Some(provider) = self.providers.get(*name).cloned() else {
                    return not_found(&path);
                };
                let body = match Limited::new(request.into_body(), CALL_BYTES_MAX)
                    .collect()
                    .await
                {
                    Ok(b) => b.to_bytes(),
                    Err(e) => {
                        return json_answer(
                            StatusCode::PAYLOAD_TOO_LARGE,
                            &json!({"error": format!("the call's body cannot be read: {e}")}),
                        );
                    }
                };
                let Ok(args) = serde_json::from_slice::<Value>(&body) else {
                    return json_answer(
                        StatusCode::BAD_REQUEST,
                        &json!({"error": "the call's body is not JSON"}),
                    );
                };
                self.call(name, provider.as_ref(), tool, &args)
            }
            _ => not_found(&path),
        }
    }

    /// Runs one call on `provider`, as its own intent (a key of its own).
    fn call(
        &self,
        name: &str,
        provider: &dyn Provider,
        tool: &str,
        args: &Value,
    ) -> Response<Full<Bytes>> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        match provider.call(tool, args, &format!("page-{name}-{n}")) {
            Ok(result) => {
                if let Ok(mut ledger) = self.ledger.lock() {
                    *ledger
                        .entry(name.to_owned())
                        .or_default()
                        .entry(tool.to_owned())
                        .or_default() += 1;
                }
                json_answer(StatusCode::OK, &result)
            }
            Err(ProviderError::Failed(why)) => {
                json_answer(StatusCode::UNPROCESSABLE_ENTITY, &json!({"error": why}))
            }
            Err(ProviderError::Unavailable(why)) => {
                json_answer(StatusCode::SERVICE_UNAVAILABLE, &json!({"error": why}))
            }
        }
    }

    fn index(&self) -> String {
        let links: String = self
            .providers
            .keys()
            .map(|n| format!("<li><a href=\"{0}/\">{0}</a></li>", escape(n)))
            .collect();
        format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Warrant's WebMCP \
             pages</title></head><body><h1>WebMCP pages</h1><ul>{links}</ul></body></html>"
        )
    }
}

/// The page of provider `name`: its tools registered as it loads.
fn page(name: &str, provider: &dyn Provider) -> String {
    let tools: Vec<Value> = provider
        .actions()
        .into_iter()
        .map(|a| {
            json!({
                "name": a.name,
                "description": a.description,
                "inputSchema": a.input_schema,
                "annotations": {"readOnlyHint": a.effect == Effect::Read},
            })
        })
        .collect();
    // Inside a script element nothing may close it: `</` is written `<\/`.
    let tools = Value::Array(tools).to_string().replace("</", "<\\/");
    let name = escape(name);
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>{name}</title></head>
<body><h1>{name}</h1><p>This page offers its tools through WebMCP.</p>
<script>
const tools = {tools};
async function call(tool, input) {{
  const answer = await fetch("call/" + encodeURIComponent(tool), {{
    method: "POST", headers: {{"content-type": "application/json"}}, body: JSON.stringify(input)
  }});
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || ("HTTP " + answer.status));
  return {{content: [{{type: "text", text: JSON.stringify(body)}}], structuredContent: body}};
}}
for (const tool of tools) {{
  document.modelContext.registerTool({{...tool, execute: (input) => call(tool.name, input)}});
}}
</script></body></html>"#
    )
}

/// `text` with HTML's special characters escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    respond(status, "text/html; charset=utf-8", body.to_owned())
}

fn json_answer(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    respond(status, "application/json", body.to_string())
}

fn not_found(path: &str) -> Response<Full<Bytes>> {
    json_answer(
        StatusCode::NOT_FOUND,
        &json!({"error": format!("nothing at {path}")}),
    )
}

fn respond(status: StatusCode, kind: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(kind),
    );
    response
}

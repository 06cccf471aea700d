//! OpenTelemetry traces over OTLP/HTTP (JSON), off unless `--otlp-endpoint` is given (and
//! compiled only with the `otlp` feature). Spans are derived from each run's events as the
//! engine records them, following the GenAI semantic conventions: a run is `invoke_agent`, a
//! decision `chat`, a call `execute_tool`. Arguments and results are left out unless asked
//! for. Export is best effort: a collector that is down or slow costs dropped spans and a
//! warning in the logs, never a run's progress — the event log is the record, not the trace.
//!
//! The trace id is derived from the run id, so a run re-entered after a restart continues the
//! same trace; span ids are derived from what they stand for (the run, a decision, a call).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use warrant_core::event::{CallStatus, Event, EventKind};
use warrant_core::ids::{CallId, RunId};

/// Spans waiting to be sent; more are dropped (and counted).
const QUEUE: usize = 8192;
/// Most spans in one export request.
const BATCH: usize = 512;
/// How long a span waits for others to share its request.
const LINGER: Duration = Duration::from_secs(1);
/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where traces go and what they hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The collector's base URL (`http://127.0.0.1:4318`, spans go to `/v1/traces` under it)
    /// or its full traces URL.
    pub endpoint: String,
    /// `endpoint` is the traces URL as it is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub exact: bool,
    /// Put calls' arguments and results in their spans.
    pub content: bool,
    /// The `service.name` of the spans' resource (`warrant` unless `OTEL_SERVICE_NAME`).
    pub service: String,
    /// Headers sent with each export (`OTEL_EXPORTER_OTLP_HEADERS`): a hosted collector's key.
    pub headers: Vec<(String, String)>,
}

impl Settings {
    /// The settings from a flag's endpoint (`--otlp-endpoint`, which wins) and the standard
    /// `OTEL_*` variables `env` looks up: `OTEL_SDK_DISABLED=true` turns export off,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is the traces URL as it is and
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` a base URL, `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` are
    /// `key=value` pairs, `OTEL_SERVICE_NAME` names the service, and
    /// `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` may only be `http/json` (what is sent). `None`:
    /// no endpoint, nothing is exported.
    pub fn resolve(
        flag: Option<String>,
        content: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, String> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let (endpoint, exact) = match flag {
            Some(url) => (url, false),
            None => match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                // Used as it is: it names the traces URL itself.
                Some(url) => (url, true),
                None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(url) => (url, false),
                    None => return Ok(None),
                },
            },
        };
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(p) = var(name)
                && p.trim() != "http/json"
            {
                return Err(format!(
                    "{name}=`{p}`: Warrant exports OTLP over HTTP as JSON only; set it to \
                     `http/json` or leave it unset (every OpenTelemetry Collector takes it on \
                     port 4318)"
                ));
            }
        }
        let mut headers = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(list) = var(name) {
                for pair in list.split(',').filter(|p| !p.trim().is_empty()) {
                    let (k, v) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("{name}: `{}` is not `key=value`", pair.trim()))?;
                    let key = k.trim().to_owned();
                    let value = percent_decode(v.trim()).ok_or_else(|| {
                        format!("{name}: the value of `{key}` is not valid percent-encoded UTF-8")
                    })?;
                    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                        return Err(format!("{name}: `{key}` is not a header name"));
                    }
                    headers.retain(|(h, _): &(String, String)| !h.eq_ignore_ascii_case(&key));
                    headers.push((key, value));
                }
            }
        }
        Ok(Some(Settings {
            endpoint,
            exact,
            content,
            service: var("OTEL_SERVICE_NAME").unwrap_or_else(|| "warrant".to_owned()),
            headers,
        }))
    }
}

/// `%XX` escapes decoded (what `OTEL_EXPORTER_OTLP_HEADERS` values may hold).
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `runner` with every run's engine traced to the collector `settings` name.
pub fn observe(
    runner: warrant_app::Supervisor,
    settings: &Settings,
) -> Result<warrant_app::Supervisor, String> {
    let exporter = std::sync::Arc::new(Exporter::start(settings)?);
    tracing::info!(endpoint = %settings.endpoint, content = settings.content, "exporting traces over OTLP");
    Ok(runner.with_observer(std::sync::Arc::new(move || Box::new(exporter.tracer()))))
}

/// The exporter: a queue of finished spans and the task that sends them in batches.
#[derive(Debug)]
pub struct Exporter {
    tx: mpsc::Sender<Value>,
    content: bool,
    /// Spans dropped because the queue was full.
    pub dropped: Arc<AtomicU64>,
}

impl Exporter {
    /// Checks `settings` and starts the sending task on the current runtime.
    pub fn start(settings: &Settings) -> Result<Exporter, String> {
        let url = traces_url(&settings.endpoint)?;
        let url = if settings.exact {
            settings.endpoint.trim().to_owned()
        } else {
            url
        };
        let mut headers = reqwest::header::HeaderMap::new();
        for (k, v) in &settings.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("OTLP header `{k}` is not a header name"))?;
            let mut value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| format!("OTLP header `{k}`: its value is not a header value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = warrant_http::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(EXPORT_TIMEOUT)
            .default_headers(headers)
            .build()
            .map_err(|e| format!("cannot make the OTLP client: {e}"))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        #[expect(
            clippy::disallowed_methods,
            reason = "the exporter owns the task that sends its spans"
        )]
        tokio::spawn(send_batches(client, url, settings.service.clone(), rx));
        Ok(Exporter {
            tx,
            content: settings.content,
            dropped: Arc::default(),
        })
    }

    /// A subscriber that turns one engine's events into spans.
    pub fn tracer(&self) -> Tracer {
        Tracer {
            tx: self.tx.clone(),
            content: self.content,
            dropped: self.dropped.clone(),
            runs: HashMap::new(),
        }
    }
}

/// `endpoint` as the URL spans are posted to.
fn traces_url(endpoint: &str) -> Result<String, String> {
    let url = endpoint.trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "the OTLP endpoint `{endpoint}` is not an http:// or https:// URL (e.g. http://127.0.0.1:4318)"
        ));
    }
    Ok(if url.ends_with("/v1/traces") {
        url.to_owned()
    } else {
        format!("{url}/v1/traces")
    })
}

async fn send_batches(
    client: reqwest::Client,
    url: String,
    service: String,
    mut rx: mpsc::Receiver<Value>,
) {
    let resource = json!({"attributes": [
        attr("service.name", &service),
        attr("service.version", env!("CARGO_PKG_VERSION")),
    ]});
    while let Some(first) = rx.recv().await {
        let mut spans = vec![first];
        let linger = tokio::time::sleep(LINGER);
        tokio::pin!(linger);
        while spans.len() < BATCH {
            tokio::select! {
                next = rx.recv() => match next {
                    Some(s) => spans.push(s),
                    None => break,
                },
                () = &mut linger => break,
            }
        }
        let n = spans.len();
        let body = json!({"resourceSpans": [{
            "resource": resource,
            "scopeSpans": [{
                "scope": {"name": "warrant", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }]});
        match client.post(&url).json(&body).send().await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => tracing::warn!(
                status = r.status().as_u16(),
                spans = n,
                "the OTLP collector refused spans"
            ),
            Err(e) => tracing::warn!(error = %e, spans = n, "spans not exported"),
        }
    }
}

/// What a tracer knows of one run while it goes.
#[derive(Default)]
struct RunTrace {
    trace: String,
    root: String,
    spec: String,
    decider: Option<warrant_core::event::DeciderIdentity>,
    started_ms: u64,
    /// When the last event was recorded: a decision's span starts there.
    last_ms: u64,
    /// Calls started: their tool, start and arguments.
    calls: HashMap<CallId, (String, u64, Option<Arc<Value>>)>,
    /// The step running: its id, its span's id and when it started. Its decisions and calls
    /// are its spans' children.
    step: Option<(String, String, u64)>,
}

/// Turns one engine's events into spans (a [`warrant_engine::Subscriber`]).
pub struct Tracer {
    tx: mpsc::Sender<Value>,
    content: bool,
    dropped: Arc<AtomicU64>,
    runs: HashMap<RunId, RunTrace>,
}

impl Tracer {
    fn emit(&self, span: Value) {
        if self.tx.try_send(span).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl warrant_engine::Subscriber for Tracer {
    fn on_event(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
        let content = self.content;
        let at = event.at_ms;
        let t = self.runs.entry(run.clone()).or_insert_with(|| RunTrace {
            trace: hex_id(&run.0, "", 16),
            root: hex_id(&run.0, "run", 8),
            started_ms: at,
            ..RunTrace::default()
        });
        let mut out = Vec::new();
        match &event.kind {
            EventKind::RunStarted { spec, decider, .. } => {
                t.spec.clone_from(&spec.id);
                t.decider = Some(decider.clone());
                t.started_ms = at;
            }
            EventKind::Decided {
                decision_no, usage, ..
            } => {
                let (provider, model) = t
                    .decider
                    .as_ref()
                    .map(|d| (d.kind.clone(), d.name.clone()))
                    .unwrap_or_default();
                let mut attrs = vec![
                    attr("gen_ai.operation.name", "chat"),
                    attr("gen_ai.provider.name", &provider),
                    attr("gen_ai.request.model", &model),
                    attr("gen_ai.conversation.id", &run.0),
                ];
                if let Some(u) = usage {
                    attrs.push(int_attr("gen_ai.usage.input_tokens", u.input_tokens));
                    attrs.push(int_attr("gen_ai.usage.output_tokens", u.output_tokens));
                }
                out.push(span(
                    t,
                    &hex_id(&run.0, &format!("decision/{decision_no}"), 8),
                    &format!("chat {model}"),
                    (t.last_ms, at),
                    attrs,
                    None,
                ));
            }
            EventKind::StepStarted { step, .. } => {
                t.step = Some((
                    step.0.to_string(),
                    hex_id(&run.0, &format!("step/{step}"), 8),
                    at,
                ));
            }
            EventKind::StepFinished { step, end } => {
                if let Some((id, span_id, started)) = t.step.take() {
                    let mut attrs = vec![
                        attr("warrant.step.id", &id),
                        attr("gen_ai.conversation.id", &run.0),
                    ];
                    let failed = match end {
                        warrant_core::event::StepEnd::Attained => None,
                        warrant_core::event::StepEnd::NotAttained { fault } => {
                            attrs.push(attr("error.type", &fault.code));
                            Some(fault.code.clone())
                        }
                    };
                    out.push(span(
                        t,
                        &span_id,
                        &format!("step {step}"),
                        (started, at),
                        attrs,
                        failed,
                    ));
                }
            }
            EventKind::CallStarted {
                call, tool, args, ..
            } => {
                t.calls
                    .insert(*call, (tool.clone(), at, Some(args.clone())));
            }
            EventKind::CallDispatched { call, args, .. } => {
                if let Some(c) = t.calls.get_mut(call) {
                    c.2 = Some(args.clone());
                }
            }
            EventKind::CallFinished {
                call,
                status,
                output,
                fault,
                ..
            } => {
                let id = call.to_string();
                let (tool, started, args) = t.calls.remove(call).unwrap_or_default();
                let mut attrs = vec![
                    attr("gen_ai.operation.name", "execute_tool"),
                    attr("gen_ai.tool.name", &tool),
                    attr("gen_ai.tool.call.id", &id),
                    attr("gen_ai.tool.type", "function"),
                    attr("gen_ai.conversation.id", &run.0),
                    attr("warrant.call.status", &status.to_string()),
                ];
                let failed = (*status != CallStatus::Ok).then(|| {
                    let code = fault
                        .as_ref()
                        .map_or_else(|| status.to_string(), |f| f.code.clone());
                    attrs.push(attr("error.type", &code));
                    code
                });
                if content {
                    if let Some(a) = args {
                        attrs.push(attr("gen_ai.tool.call.arguments", &a.to_string()));
                    }
                    if let Some(o) = output {
                        attrs.push(attr("gen_ai.tool.call.result", &o.to_string()));
                    }
                }
                out.push(span(
                    t,
                    &hex_id(&run.0, &format!("call/{id}"), 8),
                    &format!("execute_tool {tool}"),
                    (if started == 0 { at } else { started }, at),
                    attrs,
                    failed,
                ));
            }
            EventKind::RunFinished { outcome } => {
                let name = outcome.name();
                let attrs = vec![
                    attr("gen_ai.operation.name", "invoke_agent"),
                    attr("gen_ai.agent.name", &t.spec),
                    attr("gen_ai.agent.id", &run.0),
                    attr("gen_ai.conversation.id", &run.0),
                    attr("warrant.run.id", &run.0),
                    attr("warrant.outcome", name),
                ];
                let failed = (*outcome != warrant_core::Outcome::Attained).then(|| name.to_owned());
                let root = t.root.clone();
                let mut s = span(
                    t,
                    &root,
                    &format!("invoke_agent {}", t.spec),
                    (t.started_ms, at),
                    attrs,
                    failed,
                );
                if let Some(o) = s.as_object_mut() {
                    o.remove("parentSpanId");
                }
                out.push(s);
            }
            _ => {}
        }
        t.last_ms = at;
        if matches!(event.kind, EventKind::RunFinished { .. }) {
            self.runs.remove(run);
        }
        for s in out {
            self.emit(s);
        }
        Ok(())
    }
}

/// One OTLP span (JSON encoding), a child of the running step's span, or of the run's.
fn span(
    t: &RunTrace,
    id: &str,
    name: &str,
    (start_ms, end_ms): (u64, u64),
    attributes: Vec<Value>,
    error: Option<String>,
) -> Value {
    let status = match error {
        Some(message) => json!({"code": 2, "message": message}),
        None => json!({"code": 0}),
    };
    json!({
        "traceId": t.trace,
        "spanId": id,
        "parentSpanId": t.step.as_ref().map_or(&t.root, |(_, step, _)| step),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": nanos(start_ms.min(end_ms)),
        "endTimeUnixNano": nanos(end_ms),
        "attributes": attributes,
        "status": status,
    })
}

fn nanos(ms: u64) -> String {
    format!("{}", u128::from(ms) * 1_000_000)
}

fn attr(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

fn int_attr(key: &str, value: u64) -> Value {
    json!({"key": key, "value": {"intValue": value.to_string()}})
}

/// `bytes` hex digits naming `what` in `run`: stable across processes.
fn hex_id(run: &str, what: &str, bytes: usize) -> String {
    let digest = warrant_core::canon::digest_bytes(format!("{run}\n{what}").as_bytes());
    digest
        .trim_start_matches("sha256:")
        .chars()
        .take(bytes * 2)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_variables_choose_the_endpoint_headers_and_service() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(Settings::resolve(None, false, env(&[])).unwrap(), None);
        let s = Settings::resolve(
            None,
            false,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/otlp/spans"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x-team=ops"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "API-KEY=c"),
                ("OTEL_SERVICE_NAME", "fleet-eu"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.exact),
            ("http://c/otlp/spans", true)
        );
        assert_eq!(s.service, "fleet-eu");
        assert_eq!(
            s.headers,
            vec![
                ("x-team".to_owned(), "ops".to_owned()),
                ("API-KEY".to_owned(), "c".to_owned())
            ]
        );
        // The flag wins; the SDK switch turns everything off.
        let s = Settings::resolve(
            Some("http://flag:4318".into()),
            true,
            env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/x")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.exact, s.content),
            ("http://flag:4318", false, true)
        );
        assert_eq!(
            Settings::resolve(
                Some("http://flag:4318".into()),
                false,
                env(&[("OTEL_SDK_DISABLED", "TRUE")])
            )
            .unwrap(),
            None
        );
        // What cannot be honoured is refused, saying which variable.
        for (name, value) in [
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "no-equals"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "k=%zz"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "bad name=v"),
        ] {
            let vars: &'static [(&'static str, &'static str)] = Box::leak(
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    (name, value),
                ]
                .into_boxed_slice(),
            );
            let e = Settings::resolve(None, false, env(vars)).unwrap_err();
            assert!(e.starts_with(name), "{e}");
        }
    }

    #[test]
    fn the_endpoint_names_the_traces_path_once() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/v1/traces/").unwrap(),
            "http://c:4318/v1/traces"
        );
        assert!(traces_url("127.0.0.1:4318").is_err());
    }

    #[test]
    fn ids_are_stable_and_sized() {
        assert_eq!(hex_id("r1", "", 16).len(), 32);
        assert_eq!(hex_id("r1", "run", 8), hex_id("r1", "run", 8));
        assert_ne!(hex_id("r1", "run", 8), hex_id("r2", "run", 8));
    }
}

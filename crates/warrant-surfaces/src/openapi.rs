//! The OpenAPI surface: an HTTP API described by an OpenAPI 3.0 or 3.1 document, behind the
//! Surface port.
//!
//! Observation: the document is read (file or URL) and digested; an unchanged digest reuses
//! the operations already built, a changed one builds them again under a new version, so
//! older handles go stale. Each operation becomes one action named by its `operationId`,
//! whose input schema is an object of its path, query and header parameters plus `body` (the
//! JSON request body); `$ref`s into `components` are carried along as `$defs`, so the schema
//! compiles on its own. What cannot be offered faithfully is reported as a named [`Gap`],
//! never dropped silently: file uploads and other non-JSON bodies, streamed responses, cookie
//! parameters, external references, free-form required inputs with no supplied value, and
//! operations beyond the cap.
//!
//! Calls: GET and HEAD are reads, every other method a commit (the spec may say otherwise per
//! operation); a commit carries its idempotency key as the `Idempotency-Key` header. A 2xx
//! answer is the call's result (its JSON, or its text); any other status is a provider error
//! carrying the status and the body. A host-supplied [`OperationAuthorizer`] filters discovery
//! and is asked again at dispatch; its denial is a policy stop (code `denied`), not a provider
//! fault.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use warrant_core::canon;
use warrant_core::event::{ActionRecord, Effect};
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Surface, SurfaceError, SurfaceErrorKind,
};
use warrant_core::spec::OpenApiSpec;

use crate::{Vars, bound};

/// Default most operations offered.
pub const OPERATIONS_MAX_DEFAULT: usize = 64;
/// Largest document read.
const DOCUMENT_BYTES_MAX: usize = 32 << 20;
/// Deepest `$ref` chain followed.
const REF_DEPTH_MAX: usize = 64;
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// What an authorizer is asked about.
#[derive(Clone, Debug)]
pub struct OperationInfo<'a> {
    /// The action's name (`operationId`).
    pub id: &'a str,
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The path template, e.g. `/api/flows/{id}`.
    pub path: &'a str,
    /// Read or commit.
    pub effect: Effect,
}

/// A host's own rule on which operations may be offered and called.
pub trait OperationAuthorizer: Send + Sync {
    /// `args` is `None` at discovery (may it be offered?) and the call's arguments at dispatch
    /// (may this call go out?). `Err` says why not.
    fn authorize(&self, op: &OperationInfo<'_>, args: Option<&Value>) -> Result<(), String>;
}

/// An operation not offered as the document describes it, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// Its `operationId` (or `method_path` when it has none).
    pub operation: String,
    /// `GET /path`.
    pub route: String,
    /// What is missing.
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Location {
    Path,
    Query,
    Header,
}

#[derive(Debug)]
struct Operation {
    method: reqwest::Method,
    path: String,
    effect: Effect,
    params: Vec<(String, Location)>,
    /// The body is JSON: whether the action has a `body` argument.
    body: bool,
    /// Host-supplied values: parameters by name, body properties by name.
    supplied_params: Vec<(String, Location, Value)>,
    supplied_body: Map<String, Value>,
}

#[derive(Debug)]
struct Catalog {
    digest: String,
    version: String,
    base_url: String,
    actions: Arc<[ActionRecord]>,
    operations: HashMap<String, Operation>,
    gaps: Vec<Gap>,
}

enum Source {
    File(PathBuf),
    Url(String),
}

/// A connected OpenAPI service.
pub struct OpenApiSurface {
    spec: OpenApiSpec,
    source: Source,
    http: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    authorizer: Option<Arc<dyn OperationAuthorizer>>,
    catalog: Mutex<Option<Arc<Catalog>>>,
}

impl OpenApiSurface {
    /// A surface for `spec`; a relative document path is read from `base_dir`. Header values
    /// naming environment variables are read now: a missing one is an error.
    pub fn new(spec: &OpenApiSpec, base_dir: &std::path::Path) -> Result<OpenApiSurface, String> {
        OpenApiSurface::with_vars(spec, base_dir, Vars::Environment)
    }

    /// The same, with header values' `$NAME` read from `vars`.
    pub fn with_vars(
        spec: &OpenApiSpec,
        base_dir: &std::path::Path,
        vars: Vars<'_>,
    ) -> Result<OpenApiSurface, String> {
        let source =
            if spec.document.starts_with("http://") || spec.document.starts_with("https://") {
                Source::Url(spec.document.clone())
            } else {
                Source::File(base_dir.join(&spec.document))
            };
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &spec.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`openapi.headers`: `{name}` is not a header name"))?;
            let value = vars
                .expand(value)
                .map_err(|e| format!("`openapi.headers.{name}`: {e}"))?;
            let mut value = reqwest::header::HeaderValue::from_str(&value)
                .map_err(|_| format!("`openapi.headers.{name}`: not a valid header value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let http = client(None)?;
        Ok(OpenApiSurface {
            spec: spec.clone(),
            source,
            http,
            headers,
            authorizer: None,
            catalog: Mutex::new(None),
        })
    }

    /// Waits at most `timeout` between two reads of an answer (the engine bounds each whole
    /// call; this bounds the surface used on its own, e.g. by `warrant providers`).
    pub fn with_read_timeout(
        mut self,
        timeout: std::time::Duration,
    ) -> Result<OpenApiSurface, String> {
        self.http = client(Some(timeout))?;
        Ok(self)
    }

    /// Filters discovery and rules on every call with `authorizer`.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn OperationAuthorizer>) -> OpenApiSurface {
        self.authorizer = Some(authorizer);
        self
    }

    /// The operations of the last observation that are not offered, and why.
    pub fn gaps(&self) -> Vec<Gap> {
        self.current().map(|c| c.gaps.clone()).unwrap_or_default()
    }

    fn current(&self) -> Option<Arc<Catalog>> {
        self.catalog.lock().ok().and_then(|c| c.clone())
    }

    /// The document's bytes, its name for messages, and its URL when fetched.
    async fn read_document(&self) -> Result<(Vec<u8>, String, Option<String>), SurfaceError> {
        let unavailable = |m: String| SurfaceError::not_sent(m);
        let too_big = |name: &str| {
            SurfaceError::rejected(format!(
                "the OpenAPI document {name} is over {DOCUMENT_BYTES_MAX} bytes"
            ))
        };
        match &self.source {
            Source::File(path) => {
                use tokio::io::AsyncReadExt as _;
                let name = path.display().to_string();
                let cannot = |e: std::io::Error| {
                    unavailable(format!("cannot read the OpenAPI document {name}: {e}"))
                };
                let file = tokio::fs::File::open(path).await.map_err(cannot)?;
                let mut bytes = Vec::new();
                file.take(DOCUMENT_BYTES_MAX as u64 + 1)
                    .read_to_end(&mut bytes)
                    .await
                    .map_err(cannot)?;
                if bytes.len() > DOCUMENT_BYTES_MAX {
                    return Err(too_big(&name));
                }
                Ok((bytes, name, None))
            }
            Source::Url(url) => {
                let answer = self
                    .http
                    .get(url)
                    .headers(self.headers.clone())
                    .send()
                    .await
                    .map_err(|e| {
                        SurfaceError::new(
                            transport_kind(&e),
                            format!("cannot fetch the OpenAPI document {url}: {}", plain(&e)),
                        )
                    })?;
                if !answer.status().is_success() {
                    return Err(SurfaceError::rejected(format!(
                        "fetching the OpenAPI document {url}: HTTP {}",
                        answer.status()
                    )));
                }
                let (bytes, cut) = read_bounded(answer, DOCUMENT_BYTES_MAX)
                    .await
                    .map_err(|e| SurfaceError::answer_lost(format!("fetching {url}: {e}")))?;
                if cut {
                    return Err(too_big(url));
                }
                Ok((bytes, url.clone(), Some(url.clone())))
            }
        }
    }

    async fn observe_now(&self) -> Result<Observation, SurfaceError> {
        let (bytes, name, url) = self.read_document().await?;
        // An unchanged document (same bytes) is neither parsed nor built again.
        let digest = canon::digest_bytes(&bytes);
        if let Some(c) = self.current()
            && c.digest == digest
        {
            return Ok(Observation {
                version: c.version.clone(),
                actions: c.actions.clone(),
                page: None,
            });
        }
        let doc = parse_document(bytes, &name)?;
        let catalog = build(
            &doc,
            &digest,
            url.as_deref(),
            &self.spec,
            self.authorizer.as_deref(),
        )
        .map_err(|e| SurfaceError::rejected(format!("OpenAPI document: {e}")))?;
        let observation = Observation {
            version: catalog.version.clone(),
            actions: catalog.actions.clone(),
            page: None,
        };
        if let Ok(mut slot) = self.catalog.lock() {
            *slot = Some(Arc::new(catalog));
        }
        Ok(observation)
    }

    async fn call(&self, call: Invocation) -> Result<CallOutput, SurfaceError> {
        let catalog = self
            .current()
            .ok_or_else(|| SurfaceError::not_sent("the document was never read"))?;
        let op = catalog.operations.get(call.tool()).ok_or_else(|| {
            SurfaceError::invalid(format!("no operation `{}` is offered", call.tool()))
        })?;
        if let Some(authorizer) = &self.authorizer {
            let info = OperationInfo {
                id: call.tool(),
                method: op.method.as_str(),
                path: &op.path,
                effect: op.effect,
            };
            authorizer
                .authorize(&info, Some(call.args()))
                .map_err(|reason| SurfaceError::new(SurfaceErrorKind::Denied, reason))?;
        }
        let empty = Map::new();
        let args = match &**call.args() {
            Value::Object(m) => m,
            Value::Null => &empty,
            other => {
                return Err(SurfaceError::invalid(format!(
                    "arguments must be an object, not {other}"
                )));
            }
        };
        let given = op
            .params
            .iter()
            .filter_map(|(name, at)| args.get(name).map(|v| (name.as_str(), *at, v)));
        let supplied = op
            .supplied_params
            .iter()
            .map(|(n, at, v)| (n.as_str(), *at, v));
        let mut path = op.path.clone();
        let mut query: Vec<(String, String)> = Vec::new();
        let mut headers = self.headers.clone();
        for (name, at, value) in given.chain(supplied) {
            match at {
                Location::Path => {
                    path = path.replace(&format!("{{{name}}}"), &encode_segment(&scalar(value)));
                }
                Location::Query => match value {
                    Value::Array(items) => {
                        query.extend(items.iter().map(|v| (name.to_owned(), scalar(v))));
                    }
                    v => query.push((name.to_owned(), scalar(v))),
                },
                Location::Header => {
                    let header = reqwest::header::HeaderName::from_bytes(name.as_bytes());
                    let value = reqwest::header::HeaderValue::from_str(&scalar(value));
                    if let (Ok(h), Ok(v)) = (header, value) {
                        headers.insert(h, v);
                    } else {
                        return Err(SurfaceError::invalid(format!(
                            "header `{name}` cannot carry that value"
                        )));
                    }
                }
            }
        }
        if path.contains('{') {
            return Err(SurfaceError::invalid(format!(
                "path `{path}` still has a parameter without a value"
            )));
        }
        if call.effect() == Effect::Commit
            && let Ok(key) = reqwest::header::HeaderValue::from_str(call.idempotency_key())
        {
            headers.insert("idempotency-key", key);
        }
        let url = format!("{}{path}", catalog.base_url.trim_end_matches('/'));
        let mut request = self
            .http
            .request(op.method.clone(), &url)
            .headers(headers)
            .query(&query);
        if op.body {
            let mut body = args.get("body").cloned().unwrap_or(Value::Null);
            if !op.supplied_body.is_empty() {
                if body.is_null() {
                    body = Value::Object(Map::new());
                }
                if let Value::Object(b) = &mut body {
                    for (k, v) in &op.supplied_body {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
            if !body.is_null() {
                request = request.json(&body);
            }
        }
        let answer = request.send().await.map_err(|e| {
            SurfaceError::new(
                transport_kind(&e),
                format!("{} {url}: {}", op.method, plain(&e)),
            )
        })?;
        let status = answer.status();
        let json = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.contains("json"));
        let limit = self
            .spec
            .output_bytes_max
            .unwrap_or(crate::OUTPUT_BYTES_MAX_DEFAULT);
        let (bytes, cut) = read_bounded(answer, limit.saturating_add(1))
            .await
            .map_err(|e| {
                // The status came back, so the request was received: an effect may have
                // happened.
                SurfaceError::answer_lost(format!(
                    "{} {url}: the answer ({status}) broke off: {e}",
                    op.method
                ))
            })?;
        let body = if cut {
            let head = bytes.get(..limit).unwrap_or(&bytes);
            json!({"truncated": true, "head": String::from_utf8_lossy(head)})
        } else if bytes.is_empty() {
            Value::Null
        } else if json {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        } else {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        };
        if status.is_success() {
            return Ok(CallOutput {
                output: bound(body, limit),
                is_error: false,
            });
        }
        // The provider's own message leads; the whole answer is kept in the record.
        let message = format!(
            "HTTP {status}: {}",
            warrant_core::text::provider_message(&body)
        );
        let output = bound(
            json!({"status": status.as_u16(), "error": message, "body": body}),
            limit,
        );
        // A gateway that lost the upstream's answer: the request may have been carried out.
        if matches!(status.as_u16(), 502 | 504) {
            return Err(SurfaceError::answer_lost(message).with_output(output));
        }
        Ok(CallOutput {
            output,
            is_error: true,
        })
    }
}

impl Surface for OpenApiSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(self.observe_now())
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(self.call(call))
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        let current = self.current().is_some_and(|c| c.version == version);
        Box::pin(std::future::ready(current))
    }

    fn unsupported(&self) -> Vec<String> {
        self.gaps()
            .into_iter()
            .map(|g| format!("{} ({}): {}", g.operation, g.route, g.reason))
            .collect()
    }
}

/// How long connecting to a service may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The HTTP client: connects within [`CONNECT_TIMEOUT`]; with `read`, waits at most that long
/// between two reads of an answer.
fn client(read: Option<std::time::Duration>) -> Result<reqwest::Client, String> {
    let mut builder = warrant_http::builder().connect_timeout(CONNECT_TIMEOUT);
    if let Some(read) = read {
        builder = builder.read_timeout(read);
    }
    builder
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Whether a request that failed in transport may have reached the service: a connection
/// never made sent nothing; a timeout or a broken exchange may have delivered it.
fn transport_kind(e: &reqwest::Error) -> SurfaceErrorKind {
    if e.is_connect() || e.is_builder() {
        SurfaceErrorKind::NotSent
    } else if e.is_timeout() {
        SurfaceErrorKind::TimedOut
    } else {
        SurfaceErrorKind::AnswerLost
    }
}

/// A transport error in words: its innermost cause, without the URL reqwest adds (the caller
/// names it).
fn plain(e: &reqwest::Error) -> String {
    let mut inner: &dyn std::error::Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    let what = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "the exchange broke off"
    };
    if std::ptr::addr_eq(inner, e as &dyn std::error::Error) {
        what.to_owned()
    } else {
        format!("{what}: {inner}")
    }
}

/// A document's bytes as JSON or YAML.
fn parse_document(bytes: Vec<u8>, name: &str) -> Result<Value, SurfaceError> {
    let invalid = |m: String| SurfaceError::rejected(m);
    let text =
        String::from_utf8(bytes).map_err(|_| invalid(format!("{name} is not UTF-8 text")))?;
    if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).map_err(|e| invalid(format!("{name} is not valid JSON: {e}")))
    } else {
        serde_saphyr::from_str(&text)
            .map_err(|e| invalid(format!("{name} is not valid JSON or YAML: {e}")))
    }
}

/// Reads at most `limit` bytes of an answer; `true` when there was more.
async fn read_bounded(
    mut answer: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > limit {
            bytes.truncate(limit);
            return Ok((bytes, true));
        }
    }
    Ok((bytes, false))
}

/// A value as it goes into a path segment, a query string or a header.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An operation's name: its `operationId`, or `method_path` made of safe characters.
fn operation_name(op: &Value, method: &str, path: &str) -> String {
    let raw = match op.get("operationId").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("{method}_{path}"),
    };
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.trim_matches('_').to_owned()
}

/// Turns a document's schemas into self-contained JSON Schema 2020-12.
struct Schemas<'d> {
    doc: &'d Value,
    openapi_30: bool,
    /// Component schemas referenced, by name, converted.
    defs: BTreeMap<String, Value>,
}

impl<'d> Schemas<'d> {
    /// Follows a local reference.
    fn resolve(&self, mut value: &'d Value) -> Result<&'d Value, String> {
        for _ in 0..REF_DEPTH_MAX {
            let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
                return Ok(value);
            };
            value = self.pointer(reference)?;
        }
        Err("a `$ref` chain is too deep (or loops)".into())
    }

    fn pointer(&self, reference: &str) -> Result<&'d Value, String> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!("external reference `{reference}` is not supported"));
        };
        self.doc
            .pointer(pointer)
            .ok_or_else(|| format!("`{reference}` points at nothing in the document"))
    }

    /// `schema` with component references rewritten to `#/$defs/...` (the components
    /// collected into `defs`) and OpenAPI 3.0's dialect turned into JSON Schema.
    fn convert(&mut self, schema: &Value) -> Result<Value, String> {
        let mut pending: Vec<String> = Vec::new();
        let out = self.convert_inner(schema, &mut pending, 0)?;
        while let Some(name) = pending.pop() {
            if self.defs.contains_key(&name) {
                continue;
            }
            let pointer = format!("/components/schemas/{}", pointer_escape(&name));
            let target = self
                .doc
                .pointer(&pointer)
                .ok_or_else(|| format!("`#/components/schemas/{name}` points at nothing"))?;
            // Reserve the name first: a schema that refers to itself stops here.
            self.defs.insert(name.clone(), Value::Bool(true));
            let converted = self.convert_inner(target, &mut pending, 0)?;
            self.defs.insert(name, converted);
        }
        Ok(out)
    }

    fn convert_inner(
        &self,
        schema: &Value,
        pending: &mut Vec<String>,
        depth: usize,
    ) -> Result<Value, String> {
        if depth > REF_DEPTH_MAX * 4 {
            return Err("a schema is nested too deeply".into());
        }
        match schema {
            Value::Object(map) => {
                let mut out = Map::with_capacity(map.len());
                for (k, v) in map {
                    if k == "$ref" {
                        let reference = v.as_str().unwrap_or_default();
                        if let Some(name) = reference.strip_prefix("#/components/schemas/") {
                            let name = pointer_unescape(name);
                            pending.push(name.clone());
                            out.insert(
                                k.clone(),
                                Value::String(format!("#/$defs/{}", pointer_escape(&name))),
                            );
                        } else {
                            // Another local target: inline it.
                            let target = self.pointer(reference)?;
                            let inlined = self.convert_inner(target, pending, depth + 1)?;
                            if let Value::Object(m) = inlined {
                                out.extend(m);
                            }
                        }
                        continue;
                    }
                    out.insert(k.clone(), self.convert_inner(v, pending, depth + 1)?);
                }
                if self.openapi_30 {
                    dialect_30(&mut out);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|v| self.convert_inner(v, pending, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    /// `schema` with the collected `$defs` attached, ready to compile on its own.
    fn standalone(&self, schema: &Value) -> Value {
        let mut s = match schema {
            Value::Object(m) => m.clone(),
            Value::Bool(true) => Map::new(),
            other => return other.clone(),
        };
        if !self.defs.is_empty() {
            s.insert("$defs".into(), json!(self.defs));
        }
        Value::Object(s)
    }

    /// Whether a required input of this schema is free-form: an object (or anything) with no
    /// declared shape, which a decider cannot be expected to fill in.
    fn free_form(&self, schema: &Value) -> bool {
        let Ok(schema) = self.resolve(schema) else {
            return false;
        };
        match schema {
            Value::Bool(b) => *b,
            Value::Object(m) => {
                let shaped = [
                    "properties",
                    "enum",
                    "const",
                    "anyOf",
                    "oneOf",
                    "allOf",
                    "items",
                    "$ref",
                ]
                .iter()
                .any(|k| m.contains_key(*k));
                let typed_scalar = match m.get("type") {
                    Some(Value::String(t)) => t != "object",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t != "object"),
                    _ => false,
                };
                !shaped
                    && !typed_scalar
                    && m.get("additionalProperties") != Some(&Value::Bool(false))
            }
            _ => false,
        }
    }
}

/// OpenAPI 3.0 keywords that mean something else in JSON Schema 2020-12.
fn dialect_30(m: &mut Map<String, Value>) {
    if m.remove("nullable") == Some(Value::Bool(true)) {
        if let Some(Value::String(t)) = m.get("type").cloned() {
            m.insert("type".into(), json!([t, "null"]));
        }
        if let Some(Value::Array(values)) = m.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match m.get(flag) {
            Some(Value::Bool(true)) => {
                if let Some(b) = m.remove(bound) {
                    m.insert(flag.into(), b);
                } else {
                    m.remove(flag);
                }
            }
            Some(Value::Bool(false)) => {
                m.remove(flag);
            }
            _ => {}
        }
    }
}

fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn pointer_unescape(s: &str) -> String {
    s.replace("~1", "/").replace("~0", "~")
}

/// Whether a media type carries JSON.
fn is_json(media: &str) -> bool {
    let base = media.split(';').next().unwrap_or_default().trim();
    base == "application/json" || base.ends_with("+json")
}

/// Checks a host-supplied value against its schema.
fn check_supplied(schemas: &Schemas<'_>, schema: &Value, value: &Value) -> Result<(), String> {
    let standalone = schemas.standalone(schema);
    let validator = jsonschema::validator_for(&standalone)
        .map_err(|e| format!("its schema does not compile: {e}"))?;
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(e) => Err(format!("the supplied value does not match its schema: {e}")),
    }
}

/// Builds every operation of a document.
fn build(
    doc: &Value,
    digest: &str,
    document_url: Option<&str>,
    spec: &OpenApiSpec,
    authorizer: Option<&dyn OperationAuthorizer>,
) -> Result<Catalog, String> {
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(format!(
            "`openapi` is `{version}`: only OpenAPI 3.0 and 3.1 documents are read"
        ));
    }
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .ok_or("the document has no `paths` object")?;
    let base_url = match &spec.base_url {
        Some(b) => b.clone(),
        None => server_url(doc, document_url)?,
    };
    let mut schemas = Schemas {
        doc,
        openapi_30: version.starts_with("3.0"),
        defs: BTreeMap::new(),
    };
    let include: BTreeSet<&str> = spec.include.iter().map(String::as_str).collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut offered: Vec<(ActionRecord, Operation, Value)> = Vec::new();
    let mut gaps: Vec<Gap> = Vec::new();
    for (path, item) in paths {
        let item = schemas.resolve(item)?;
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let name = operation_name(op, method, path);
            if !include.is_empty() && !include.contains(name.as_str()) {
                continue;
            }
            let route = format!("{} {path}", method.to_uppercase());
            if !seen.insert(name.clone()) {
                gaps.push(Gap {
                    operation: name,
                    route,
                    reason: "another operation has the same name".into(),
                });
                continue;
            }
            let effect =
                spec.effects
                    .get(&name)
                    .copied()
                    .unwrap_or(if matches!(method, "get" | "head") {
                        Effect::Read
                    } else {
                        Effect::Commit
                    });
            if let Some(authorizer) = authorizer {
                let info = OperationInfo {
                    id: &name,
                    method: &method.to_uppercase(),
                    path,
                    effect,
                };
                if let Err(reason) = authorizer.authorize(&info, None) {
                    gaps.push(Gap {
                        operation: name,
                        route,
                        reason: format!("withheld by the host's authorizer: {reason}"),
                    });
                    continue;
                }
            }
            match operation(&mut schemas, spec, item, op, method, path, effect) {
                Ok((description, operation, input)) => {
                    let action = ActionRecord {
                        name: name.clone(),
                        effect,
                        description,
                        input_schema: Arc::new(Value::Null),
                        hints: None,
                        origin: None,
                    };
                    offered.push((action, operation, input));
                }
                Err(reason) => gaps.push(Gap {
                    operation: name,
                    route,
                    reason,
                }),
            }
        }
    }
    for missing in include.iter().filter(|n| !seen.contains(**n)) {
        gaps.push(Gap {
            operation: (*missing).to_owned(),
            route: String::new(),
            reason: "named in `include`, but the document has no such operation".into(),
        });
    }
    let max = spec.operations_max.unwrap_or(OPERATIONS_MAX_DEFAULT);
    if offered.len() > max {
        for (action, op, _) in offered.drain(max..) {
            gaps.push(Gap {
                operation: action.name,
                route: format!("{} {}", op.method, op.path),
                reason: format!(
                    "beyond the first {max} operations (`operations_max`; or name it in `include`)"
                ),
            });
        }
    }
    let mut actions = Vec::with_capacity(offered.len());
    let mut operations = HashMap::with_capacity(offered.len());
    for (mut action, op, input) in offered {
        action.input_schema = Arc::new(schemas.standalone(&input));
        operations.insert(action.name.clone(), op);
        actions.push(action);
    }
    let version = canon::digest(&json!([digest, spec_digest(spec)])).trim_start_matches("sha256:")
        [..16]
        .to_owned();
    Ok(Catalog {
        digest: digest.to_owned(),
        version,
        base_url,
        actions: actions.into(),
        operations,
        gaps,
    })
}

fn spec_digest(spec: &OpenApiSpec) -> Value {
    serde_json::to_value(spec).unwrap_or(Value::Null)
}

/// The document's first server, resolved against the URL it was fetched from.
fn server_url(doc: &Value, document_url: Option<&str>) -> Result<String, String> {
    let mut first = doc
        .pointer("/servers/0/url")
        .and_then(Value::as_str)
        .unwrap_or("/")
        .to_owned();
    // Server variables (`https://{region}.example.com`) take their defaults.
    if let Some(vars) = doc
        .pointer("/servers/0/variables")
        .and_then(Value::as_object)
    {
        for (name, var) in vars {
            let default = var
                .get("default")
                .and_then(Value::as_str)
                .unwrap_or_default();
            first = first.replace(&format!("{{{name}}}"), default);
        }
    }
    if first.contains('{') {
        return Err(format!(
            "the document's server `{first}` has a variable without a default: give `base_url`"
        ));
    }
    let first = first.as_str();
    if first.starts_with("http://") || first.starts_with("https://") {
        return Ok(first.to_owned());
    }
    let Some(url) = document_url else {
        return Err(format!(
            "the document's server `{first}` is not an absolute URL: give `base_url`"
        ));
    };
    // Origin of the document's URL, then the server's path.
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    let origin_end = url[after_scheme..]
        .find('/')
        .map(|i| after_scheme + i)
        .unwrap_or(url.len());
    Ok(format!(
        "{}{}",
        &url[..origin_end],
        first.trim_end_matches('/')
    ))
}

/// One operation: its description, how to call it, and its input schema (before `$defs`).
fn operation(
    schemas: &mut Schemas<'_>,
    spec: &OpenApiSpec,
    item: &Value,
    op: &Value,
    method: &str,
    path: &str,
    effect: Effect,
) -> Result<(String, Operation, Value), String> {
    // Parameters: the path item's, overridden by the operation's (same name and place).
    let mut params: Vec<&Value> = Vec::new();
    for list in [item.get("parameters"), op.get("parameters")] {
        for p in list.and_then(Value::as_array).into_iter().flatten() {
            let p = schemas.resolve(p)?;
            let key = (p.get("name"), p.get("in"));
            params.retain(|q| (q.get("name"), q.get("in")) != key);
            params.push(p);
        }
    }
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut operation = Operation {
        method: reqwest::Method::from_bytes(method.to_uppercase().as_bytes())
            .map_err(|_| format!("`{method}` is not an HTTP method"))?,
        path: path.to_owned(),
        effect,
        params: Vec::new(),
        body: false,
        supplied_params: Vec::new(),
        supplied_body: Map::new(),
    };
    for p in params {
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a parameter has no `name`")?;
        let place = p.get("in").and_then(Value::as_str).unwrap_or_default();
        let is_required = place == "path" || p.get("required") == Some(&Value::Bool(true));
        let at = match place {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" if is_required => {
                return Err(format!("cookie parameter `{name}` is not supported"));
            }
            "cookie" => continue,
            other => return Err(format!("parameter `{name}` is `in: {other}`")),
        };
        if properties.contains_key(name) {
            return Err(format!("two parameters are named `{name}`"));
        }
        let raw = match (p.get("schema"), p.get("content")) {
            (Some(s), _) => s,
            (None, Some(content)) => content
                .as_object()
                .and_then(|c| c.iter().find(|(m, _)| is_json(m)))
                .and_then(|(_, m)| m.get("schema"))
                .ok_or_else(|| format!("parameter `{name}` has no JSON schema"))?,
            (None, None) => &Value::Bool(true),
        };
        let mut schema = schemas.convert(raw)?;
        if let Some(value) = spec.inputs.get(name) {
            check_supplied(schemas, &schema, value).map_err(|e| format!("input `{name}`: {e}"))?;
            operation
                .supplied_params
                .push((name.to_owned(), at, value.clone()));
            continue;
        }
        if is_required && schemas.free_form(raw) {
            return Err(format!(
                "required parameter `{name}` is free-form: supply it in `inputs`"
            ));
        }
        if let (Value::Object(s), Some(d)) = (&mut schema, p.get("description")) {
            s.entry("description").or_insert_with(|| d.clone());
        }
        properties.insert(name.to_owned(), schema);
        if is_required {
            required.push(Value::String(name.to_owned()));
        }
        operation.params.push((name.to_owned(), at));
    }
    if let Some(body) = op.get("requestBody") {
        let body = schemas.resolve(body)?;
        let is_required = body.get("required") == Some(&Value::Bool(true));
        let content = body.get("content").and_then(Value::as_object);
        let json_schema = content
            .and_then(|c| c.iter().find(|(m, _)| is_json(m)))
            .map(|(_, m)| m.get("schema").unwrap_or(&Value::Bool(true)));
        match json_schema {
            None if is_required => {
                let types: Vec<&str> = content
                    .map(|c| c.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(format!(
                    "its request body is `{}` (file uploads and other non-JSON bodies are not supported)",
                    types.join("`, `")
                ));
            }
            None => {}
            Some(raw) => {
                if properties.contains_key("body") {
                    return Err("a parameter is named `body`, like the request body".into());
                }
                let mut schema = schemas.convert(raw)?;
                // Host-supplied top-level properties leave the offered schema.
                let shape = schemas.resolve(raw)?;
                let body_props = shape.get("properties").and_then(Value::as_object);
                for (name, value) in &spec.inputs {
                    let Some(prop) = body_props.and_then(|p| p.get(name)) else {
                        continue;
                    };
                    let prop = schemas.convert(prop)?;
                    check_supplied(schemas, &prop, value)
                        .map_err(|e| format!("input `{name}`: {e}"))?;
                    operation.supplied_body.insert(name.clone(), value.clone());
                }
                if !operation.supplied_body.is_empty() {
                    schema = without_supplied(&schemas.convert(shape)?, &operation.supplied_body);
                }
                let free = operation.supplied_body.is_empty() && schemas.free_form(raw);
                if is_required && free {
                    return Err(
                        "its required request body is free-form: supply it in `inputs`".into(),
                    );
                }
                properties.insert("body".into(), schema);
                if is_required {
                    required.push(Value::String("body".into()));
                }
                operation.body = true;
            }
        }
    }
    if streams(schemas, op) {
        return Err("it streams its response (`text/event-stream`), which is not supported".into());
    }
    let summary = op
        .get("summary")
        .or_else(|| op.get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let description = format!("{summary} ({} {path})", method.to_uppercase())
        .trim()
        .to_owned();
    let input = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    Ok((description, operation, input))
}

/// A body schema without the properties the host supplies.
fn without_supplied(schema: &Value, supplied: &Map<String, Value>) -> Value {
    let mut out = schema.clone();
    if let Some(props) = out.get_mut("properties").and_then(Value::as_object_mut) {
        for k in supplied.keys() {
            props.remove(k);
        }
    }
    if let Some(req) = out.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| r.as_str().is_none_or(|r| !supplied.contains_key(r)));
    }
    out
}

/// Whether every successful answer of `op` is a stream.
fn streams(schemas: &Schemas<'_>, op: &Value) -> bool {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return false;
    };
    let media: Vec<String> = responses
        .iter()
        .filter(|(code, _)| code.starts_with('2') || code.as_str() == "default")
        .filter_map(|(_, r)| schemas.resolve(r).ok())
        .filter_map(|r| r.get("content").and_then(Value::as_object))
        .flat_map(|c| c.keys().cloned())
        .collect();
    !media.is_empty()
        && media
            .iter()
            .all(|m| m.starts_with("text/event-stream") || m.starts_with("application/x-ndjson"))
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]
mod tests {
    use super::*;

    fn spec() -> OpenApiSpec {
        OpenApiSpec {
            document: "doc.json".into(),
            base_url: Some("http://127.0.0.1:1".into()),
            ..OpenApiSpec::default()
        }
    }

    fn pets() -> Value {
        json!({
            "openapi": "3.0.3",
            "info": {"title": "pets", "version": "1"},
            "paths": {
                "/pets/{id}": {
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                    "get": {"operationId": "get_pet", "parameters": [
                        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "X-Tenant", "in": "header", "required": true, "schema": {"type": "string", "enum": ["a", "b"]}}
                    ], "responses": {"200": {"description": "ok"}}},
                    "put": {"operationId": "put_pet", "requestBody": {"required": true, "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                        "responses": {"200": {"description": "ok"}}}
                },
                "/pets/{id}/photo": {"post": {"operationId": "upload", "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                    "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {}}}},
                    "responses": {"200": {"description": "ok"}}}},
                "/events": {"get": {"operationId": "events", "responses": {"200": {"content": {"text/event-stream": {}}}}}},
                "/tags": {"post": {"operationId": "set_tags", "requestBody": {"required": true, "content": {
                    "application/json": {"schema": {"type": "object"}}}}, "responses": {}}}
            },
            "components": {"schemas": {
                "Pet": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string", "nullable": true},
                    "parent": {"$ref": "#/components/schemas/Pet"},
                    "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}
                }}
            }}
        })
    }

    #[test]
    fn operations_carry_their_parameters_body_and_references() {
        let doc = pets();
        let c = build(&doc, "d", None, &spec(), None).unwrap();
        let names: Vec<&str> = c.actions.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["get_pet", "put_pet"]);
        let get = &c.actions[0];
        assert_eq!(get.effect, Effect::Read);
        assert_eq!(get.input_schema["required"], json!(["id", "X-Tenant"]));
        assert_eq!(
            get.input_schema["properties"]["X-Tenant"]["enum"],
            json!(["a", "b"])
        );
        let put = &c.actions[1];
        assert_eq!(put.effect, Effect::Commit);
        assert_eq!(
            put.input_schema["properties"]["body"]["$ref"],
            "#/$defs/Pet"
        );
        let pet = &put.input_schema["$defs"]["Pet"];
        assert_eq!(pet["properties"]["parent"]["$ref"], "#/$defs/Pet");
        // 3.0's nullable and boolean exclusiveMinimum, in 2020-12 terms.
        assert_eq!(pet["properties"]["name"]["type"], json!(["string", "null"]));
        assert_eq!(pet["properties"]["age"]["exclusiveMinimum"], json!(0));
        // It compiles on its own and accepts a nested pet.
        let v = jsonschema::validator_for(&put.input_schema).unwrap();
        assert!(v.is_valid(&json!({"id": 1, "body": {"name": "a", "parent": {"name": null}}})));
        assert!(!v.is_valid(&json!({"id": 1, "body": {"parent": {}}})));
    }

    #[test]
    fn what_cannot_be_offered_is_named() {
        let doc = pets();
        let c = build(&doc, "d", None, &spec(), None).unwrap();
        let gaps: BTreeMap<&str, &str> = c
            .gaps
            .iter()
            .map(|g| (g.operation.as_str(), g.reason.as_str()))
            .collect();
        assert!(gaps["upload"].contains("multipart/form-data"), "{gaps:?}");
        assert!(gaps["events"].contains("streams"), "{gaps:?}");
        assert!(gaps["set_tags"].contains("free-form"), "{gaps:?}");
        assert_eq!(gaps.len(), 3);
    }

    #[test]
    fn supplied_inputs_are_checked_and_leave_the_offered_schema() {
        let doc = pets();
        let mut s = spec();
        s.inputs.insert("X-Tenant".into(), json!("a"));
        let c = build(&doc, "d", None, &s, None).unwrap();
        assert_eq!(c.actions[0].input_schema["required"], json!(["id"]));
        s.inputs.insert("X-Tenant".into(), json!("z"));
        let c = build(&doc, "d", None, &s, None).unwrap();
        let gap = c.gaps.iter().find(|g| g.operation == "get_pet").unwrap();
        assert!(gap.reason.contains("input `X-Tenant`"), "{gap:?}");
    }

    #[test]
    fn the_cap_and_the_authorizer_report_what_they_withhold() {
        struct NoPut;
        impl OperationAuthorizer for NoPut {
            fn authorize(&self, op: &OperationInfo<'_>, _: Option<&Value>) -> Result<(), String> {
                if op.method == "PUT" {
                    Err("no writes".into())
                } else {
                    Ok(())
                }
            }
        }
        let doc = pets();
        let c = build(&doc, "d", None, &spec(), Some(&NoPut)).unwrap();
        assert_eq!(c.actions.len(), 1);
        assert!(
            c.gaps
                .iter()
                .any(|g| g.operation == "put_pet" && g.reason.contains("no writes"))
        );
        let mut s = spec();
        s.operations_max = Some(1);
        let c = build(&doc, "d", None, &s, None).unwrap();
        assert_eq!(c.actions.len(), 1);
        assert!(
            c.gaps
                .iter()
                .any(|g| g.operation == "put_pet" && g.reason.contains("operations_max"))
        );
    }

    #[test]
    fn a_document_that_is_not_openapi_3_is_refused() {
        let e = build(
            &json!({"swagger": "2.0", "paths": {}}),
            "d",
            None,
            &spec(),
            None,
        )
        .unwrap_err();
        assert!(e.contains("only OpenAPI 3.0 and 3.1"), "{e}");
        let e = build(&json!({"openapi": "3.1.0"}), "d", None, &spec(), None).unwrap_err();
        assert!(e.contains("no `paths`"), "{e}");
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(encode_segment("a b/c"), "a%20b%2Fc");
        assert_eq!(
            server_url(
                &json!({"servers": [{"url": "/api"}]}),
                Some("http://h:1/x/openapi.json")
            )
            .unwrap(),
            "http://h:1/api"
        );
    }

    #[test]
    fn server_variables_take_their_defaults() {
        let templated = json!({"servers": [{"url": "http://{host}:{port}/v1", "variables": {
            "host": {"default": "127.0.0.1"}, "port": {"default": "8080"}}}]});
        assert_eq!(
            server_url(&templated, None).unwrap(),
            "http://127.0.0.1:8080/v1"
        );
        let open = json!({"servers": [{"url": "http://{host}/v1"}]});
        assert!(server_url(&open, None).unwrap_err().contains("base_url"));
    }
}

//! The OpenAPI surface: against a loopback HTTP service whose every request is recorded (the
//! wire: headers, query, body), and against a real service nobody here wrote, Prefect's server
//! (installed by `.ci/run` into a cached virtualenv).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use support::*;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warrant_core::event::CallStatus;
use warrant_core::ports::Surface;
use warrant_core::spec::{Format, OpenApiSpec};
use warrant_core::{Layer, Outcome, validate};
use warrant_deciders::{Script, ScriptedDecider};
use warrant_engine::{Engine, RunResult};
use warrant_store::MemoryStore;
use warrant_surfaces::openapi::{OpenApiSurface, OperationAuthorizer, OperationInfo};

/// One request as the service received it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    target: String,
    headers: HashMap<String, String>,
    body: Value,
}

/// A small HTTP service on loopback: serves `document` at `/openapi.json`, `POST /things`
/// (201, echoing the body with an id), `GET /things/{id}`, `POST /broken` (500), `POST /taken`
/// (409 with a long body, the reason at its end), `POST /lost` (does the work, then closes the
/// connection without answering), and records every request.
struct Service {
    url: String,
    document: Arc<Mutex<Value>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "things", "version": "1"},
        "paths": {
            "/things": {"post": {
                "operationId": "create_thing",
                "parameters": [{"name": "tenant", "in": "query", "required": true, "schema": {"type": "string", "enum": ["acme", "other"]}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
                "responses": {"201": {"description": "created"}}
            }},
            "/things/{id}": {
                "get": {"operationId": "get_thing", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {"200": {"description": "ok"}}},
                "delete": {"operationId": "delete_thing", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {"204": {"description": "gone"}}}
            },
            "/broken": {"post": {"operationId": "broken", "responses": {"200": {"description": "never"}}}},
            "/lost": {"post": {"operationId": "lose_thing", "responses": {"201": {"description": "never seen"}}}},
            "/taken": {"post": {"operationId": "take_name", "responses": {"201": {"description": "never"}}}},
            "/gateway": {"post": {"operationId": "through_gateway", "responses": {"201": {"description": "never"}}}}
        },
        "components": {"schemas": {"Thing": {"type": "object", "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string", "maxLength": 40}}}}}
    })
}

async fn service() -> Service {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let document = Arc::new(Mutex::new(document()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (doc, log) = (document.clone(), seen.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (doc, log) = (doc.clone(), log.clone());
            tokio::spawn(async move {
                let Some(request) = read_request(&mut stream).await else {
                    return;
                };
                let lost = request.target.starts_with("/lost");
                let (status, body) = answer(&request, &doc);
                log.lock().unwrap().push(request);
                // The work is done (recorded); the answer never leaves.
                if lost {
                    return;
                }
                let body = body.to_string();
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
            });
        }
    });
    Service {
        url,
        document,
        seen,
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[end..]).unwrap_or(Value::Null);
    Some(Seen {
        method,
        target,
        headers,
        body,
    })
}

fn answer(r: &Seen, doc: &Mutex<Value>) -> (&'static str, Value) {
    match (
        r.method.as_str(),
        r.target.split('?').next().unwrap_or_default(),
    ) {
        ("GET", "/openapi.json") => ("200 OK", doc.lock().unwrap().clone()),
        ("POST", "/things") => ("201 Created", json!({"id": "t-1", "name": r.body["name"]})),
        ("GET", path) if path.starts_with("/things/") => (
            "200 OK",
            json!({"id": &path["/things/".len()..], "name": "kept"}),
        ),
        ("POST", "/gateway") => ("502 Bad Gateway", json!({"detail": "upstream went away"})),
        ("POST", "/taken") => (
            "409 Conflict",
            json!({"trace": "x".repeat(900), "detail": "the name `lamp` is taken"}),
        ),
        _ => ("500 Internal Server Error", json!({"detail": "boom"})),
    }
}

fn api(service: &Service) -> OpenApiSpec {
    OpenApiSpec {
        document: format!("{}/openapi.json", service.url),
        base_url: Some(service.url.clone()),
        // Cargo sets CARGO_PKG_NAME for the test process: a stand-in credential.
        headers: BTreeMap::from([("X-Api-Key".to_owned(), "${CARGO_PKG_NAME}".to_owned())]),
        inputs: BTreeMap::from([("tenant".to_owned(), json!("acme"))]),
        include: Vec::new(),
        effects: BTreeMap::new(),
        operations_max: None,
        output_bytes_max: None,
    }
}

const SPEC: &str = "
version: warrant/v1
id: things
objective: Create a thing named lamp, then read it back.
providers:
  api: {reference: placeholder}
steps:
  - id: create
    provider: api
    tools: [create_thing]
    commit: required
    publishes:
      thing: {from: create_thing, path: /id}
  - id: read
    provider: api
    tools: [get_thing]
    after: [create]
    required: true
    inputs:
      id: create.thing
";

async fn run(surface: OpenApiSurface, script: &str) -> (RunResult, Arc<MemoryStore>) {
    run_spec(SPEC, surface, script).await
}

/// Runs `spec_text` (whose provider is a placeholder) over `surface`.
async fn run_spec(
    spec_text: &str,
    surface: OpenApiSurface,
    script: &str,
) -> (RunResult, Arc<MemoryStore>) {
    // The spec names a placeholder provider; the test hands the engine its own surface.
    let spec = validate::load(spec_text, Format::Yaml, "spec.yaml", &Everything).unwrap();
    let script = Script::parse(script, Format::Yaml, "script.yaml").unwrap();
    let decider = ScriptedDecider::new(script, "script.yaml");
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone());
    let surfaces: HashMap<String, Arc<dyn Surface>> =
        HashMap::from([("api".to_owned(), Arc::new(surface) as Arc<dyn Surface>)]);
    let result = engine
        .run(Arc::new(spec), &decider, &surfaces)
        .await
        .unwrap();
    (result, store)
}

/// Runs `script` over `service` with `tool` allowed in the `create` step too.
async fn run_with_tool(service: &Service, tool: &str, script: &str) -> RunResult {
    let surface = OpenApiSurface::new(&api(service), Path::new("")).unwrap();
    let spec_text = SPEC.replace(
        "tools: [create_thing]",
        &format!("tools: [create_thing, {tool}]"),
    );
    run_spec(&spec_text, surface, script).await.0
}

/// Validation that lets every provider entry through (its tools are known at run time).
struct Everything;

impl validate::ProviderCatalog for Everything {
    fn tools(
        &self,
        _: &str,
        _: &warrant_core::spec::ProviderSpec,
    ) -> Result<Option<Vec<String>>, String> {
        Ok(None)
    }
}

const CREATE_THEN_READ: &str = "
steps:
  create:
    - call: create_thing
      args: {body: {name: lamp}}
    - done: created
  read:
    - call: get_thing
    - done: read
";

#[tokio::test]
async fn a_commit_carries_its_idempotency_key_and_the_hosts_inputs_and_no_credential_is_recorded() {
    let service = service().await;
    let surface = OpenApiSurface::new(&api(&service), Path::new("")).unwrap();
    let offered = surface.observe().await.unwrap();
    let create = offered
        .actions
        .iter()
        .find(|a| a.name == "create_thing")
        .unwrap();
    // The host supplies `tenant`: the decider is not offered it.
    assert_eq!(create.input_schema["required"], json!(["body"]));
    assert!(create.input_schema["properties"].get("tenant").is_none());

    let (result, store) = run(surface, CREATE_THEN_READ).await;
    assert!(
        matches!(result.outcome, Some(Outcome::Attained)),
        "{:?}",
        result.outcome
    );
    let seen = service.seen.lock().unwrap().clone();
    let post = seen.iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(post.target, "/things?tenant=acme");
    assert_eq!(post.body, json!({"name": "lamp"}));
    assert_eq!(post.headers["x-api-key"], env!("CARGO_PKG_NAME"));
    let commit = result
        .state
        .calls()
        .iter()
        .find(|c| c.tool == "create_thing")
        .unwrap();
    assert_eq!(
        Some(&post.headers["idempotency-key"]),
        commit.idempotency_key.as_ref()
    );
    // The read took its id from the commit's recorded result, and sent no idempotency key.
    let get = seen
        .iter()
        .find(|r| r.method == "GET" && r.target.starts_with("/things/"))
        .unwrap();
    assert_eq!(get.target, "/things/t-1");
    assert!(!get.headers.contains_key("idempotency-key"));
    // The credential went on the wire and nowhere into the log.
    let log = warrant_core::ports::LogReader::read(&*store, &result.run_id, 0)
        .await
        .unwrap();
    let text = serde_json::to_string(&log).unwrap();
    assert!(
        !text.contains(env!("CARGO_PKG_NAME")),
        "the credential was recorded"
    );
}

struct NoDeletesNoSecrets;

impl OperationAuthorizer for NoDeletesNoSecrets {
    fn authorize(&self, op: &OperationInfo<'_>, args: Option<&Value>) -> Result<(), String> {
        if op.method == "DELETE" {
            return Err("deletes are not offered here".into());
        }
        match args.and_then(|a| a.pointer("/body/name")) {
            Some(Value::String(n)) if n.contains("secret") => Err(format!("`{n}` is not allowed")),
            _ => Ok(()),
        }
    }
}

#[tokio::test]
async fn the_hosts_authorizer_filters_discovery_and_its_denial_at_dispatch_is_a_policy_stop() {
    let service = service().await;
    let surface = OpenApiSurface::new(&api(&service), Path::new(""))
        .unwrap()
        .with_authorizer(Arc::new(NoDeletesNoSecrets));
    let offered = surface.observe().await.unwrap();
    assert!(!offered.actions.iter().any(|a| a.name == "delete_thing"));
    let withheld = surface.unsupported();
    assert!(
        withheld
            .iter()
            .any(|g| g.starts_with("delete_thing (DELETE /things/{id})") && g.contains("deletes")),
        "{withheld:?}"
    );
    let script = CREATE_THEN_READ.replace("name: lamp", "name: secret-lamp");
    let (result, _) = run(surface, &script).await;
    let call = &result.state.calls()[0];
    assert_eq!(call.status, Some(CallStatus::StoppedByPolicy));
    let fault = call.fault.as_ref().unwrap();
    assert_eq!(fault.layer, Layer::Policy);
    assert!(fault.message.contains("secret-lamp"), "{}", fault.message);
    assert!(
        !service
            .seen
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.method == "POST"),
        "the denied call reached the service"
    );
}

#[tokio::test]
async fn an_error_status_is_a_provider_error_carrying_the_status_and_body() {
    let service = service().await;
    let mut spec = api(&service);
    spec.effects
        .insert("broken".into(), warrant_core::event::Effect::Read);
    let surface = OpenApiSurface::new(&spec, Path::new("")).unwrap();
    let script = "
steps:
  create:
    - call: broken
    - done: gave up
";
    let spec_text = SPEC.replace("tools: [create_thing]", "tools: [create_thing, broken]");
    let (result, _) = run_spec(&spec_text, surface, script).await;
    let call = &result.state.calls()[0];
    assert_eq!(call.status, Some(CallStatus::ProviderError));
    let output = call.output.as_ref().unwrap();
    assert_eq!(output["status"], 500);
    assert_eq!(output["body"]["detail"], "boom");
    assert_eq!(call.fault.as_ref().unwrap().layer, Layer::Provider);
}

#[tokio::test]
async fn a_provider_error_leads_with_the_providers_own_message() {
    let service = service().await;
    let script = "
steps:
  create:
    - call: take_name
    - done: gave up
";
    let result = run_with_tool(&service, "take_name", script).await;
    let call = &result.state.calls()[0];
    let fault = call.fault.as_ref().unwrap();
    assert_eq!(
        fault.message,
        "`take_name` failed: HTTP 409 Conflict: the name `lamp` is taken"
    );
    // The whole answer stays in the record.
    let output = call.output.as_ref().unwrap();
    assert_eq!(output["body"]["trace"].as_str().unwrap().len(), 900);
}

/// The service does the work and the connection closes before its answer: the commit is in
/// doubt, never a provider error a retry would repeat.
#[tokio::test]
async fn a_commit_done_but_cut_off_before_its_answer_is_in_doubt_and_not_repeated() {
    let service = service().await;
    // A decider that retries what failed.
    let script = "
steps:
  create:
    - call: lose_thing
    - call: lose_thing
    - done: made it
";
    let result = run_with_tool(&service, "lose_thing", script).await;
    assert_eq!(result.outcome, None, "the run waits for an operator");
    let call = &result.state.calls()[0];
    assert!(call.in_doubt, "{:?}", call);
    assert_eq!(
        call.doubt,
        Some(warrant_core::event::DoubtStage::AnswerLost)
    );
    let sent = service
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.target.starts_with("/lost"))
        .count();
    assert_eq!(sent, 1, "sent once, never repeated");
}

/// A document URL that accepts the connection and never answers: the observation is bounded
/// by the call timeout, and the run ends, attributed to the provider.
#[tokio::test]
async fn a_document_that_never_arrives_ends_the_step_within_the_call_timeout() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let spec = OpenApiSpec {
        document: format!("{url}/openapi.json"),
        base_url: Some(url.clone()),
        ..OpenApiSpec::default()
    };
    let surface = OpenApiSurface::new(&spec, Path::new("")).unwrap();
    let spec_text = format!("{SPEC}limits: {{call_timeout_ms: 300}}\n");
    let (result, _) = run_spec(&spec_text, surface, CREATE_THEN_READ).await;
    let Some(Outcome::NotAttained { missing }) = &result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert_eq!(missing[0].fault.code, "timeout");
    assert_eq!(missing[0].fault.layer, Layer::Provider);
    held.abort();
}

#[tokio::test]
async fn the_document_is_read_at_each_observation_and_a_change_makes_older_handles_stale() {
    let service = service().await;
    let surface = OpenApiSurface::new(&api(&service), Path::new("")).unwrap();
    let first = surface.observe().await.unwrap();
    let again = surface.observe().await.unwrap();
    assert_eq!(
        first.version, again.version,
        "an unchanged document, the same version"
    );
    service.document.lock().unwrap()["components"]["schemas"]["Thing"]["properties"]["name"]["maxLength"] =
        json!(10);
    let changed = surface.observe().await.unwrap();
    assert_ne!(changed.version, first.version);
    assert!(!surface.is_current(&first.version).await);
    assert!(surface.is_current(&changed.version).await);
    let gets = service
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.target == "/openapi.json")
        .count();
    assert_eq!(gets, 3);
}

#[tokio::test]
async fn an_unusable_document_or_a_missing_credential_is_a_clear_error() {
    let service = service().await;
    *service.document.lock().unwrap() = json!({"swagger": "2.0", "paths": {}});
    let surface = OpenApiSurface::new(&api(&service), Path::new("")).unwrap();
    let e = surface.observe().await.unwrap_err();
    assert!(e.message.contains("only OpenAPI 3.0 and 3.1"), "{e}");

    let mut spec = api(&service);
    spec.headers.insert(
        "Authorization".into(),
        "Bearer ${WARRANT_TEST_UNSET_TOKEN}".into(),
    );
    let Err(e) = OpenApiSurface::new(&spec, Path::new("")) else {
        panic!("built a surface with an unset credential variable");
    };
    assert!(e.contains("WARRANT_TEST_UNSET_TOKEN"), "{e}");
}

// ---- Prefect: a real OpenAPI 3.1 service ----

/// Prefect's server on a free loopback port, in its own process group (killed, by that group,
/// when the test ends).
struct Prefect {
    child: std::process::Child,
    url: String,
    _home: tempfile::TempDir,
}

impl Drop for Prefect {
    fn drop(&mut self) {
        // The group we started (the server may run workers of its own).
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn prefect_bin() -> PathBuf {
    let bin = std::env::var_os("WARRANT_PREFECT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            Path::new(&home).join(".cache/warrant/prefect-3.9.1/bin/prefect")
        });
    assert!(
        bin.exists(),
        "Prefect's server is not installed at {}: run `.ci/prefect` (or set WARRANT_PREFECT)",
        bin.display()
    );
    bin
}

async fn prefect() -> Prefect {
    use std::os::unix::process::CommandExt;
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = Command::new(prefect_bin())
        .args(["server", "start", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--no-services")
        .env("PREFECT_HOME", home.path())
        .env("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        .env("PREFECT_SERVER_UI_ENABLED", "false")
        .env(
            "PREFECT_API_DATABASE_CONNECTION_URL",
            format!("sqlite+aiosqlite:///{}/prefect.db", home.path().display()),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut server = Prefect {
        child,
        url: format!("http://127.0.0.1:{port}"),
        _home: home,
    };
    let client = warrant_http::client();
    // Healthy after ~10-30 s here; give it 3 minutes on a loaded machine.
    for _ in 0..720 {
        if let Ok(r) = client
            .get(format!("{}/api/health", server.url))
            .send()
            .await
            && r.status().is_success()
        {
            return server;
        }
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!("Prefect's server exited before it was healthy: {status}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("Prefect's server was not healthy after 3 minutes");
}

#[tokio::test]
async fn a_trajectory_over_prefect_creates_a_flow_that_prefect_itself_then_has() {
    let server = prefect().await;
    let document = format!("{}/api/openapi.json", server.url);

    // The whole document: every operation is offered or named as a gap; the cap holds.
    let whole = OpenApiSpec {
        document: document.clone(),
        ..OpenApiSpec::default()
    };
    let surface = OpenApiSurface::new(&whole, Path::new("")).unwrap();
    let offered = surface.observe().await.unwrap();
    let gaps = surface.gaps();
    assert_eq!(offered.actions.len(), 64, "the default cap");
    assert!(
        offered.actions.len() + gaps.len() >= 150,
        "{} offered + {} gaps",
        offered.actions.len(),
        gaps.len()
    );
    assert!(gaps.iter().any(|g| g.reason.contains("operations_max")));
    for action in offered.actions.iter() {
        jsonschema::validator_for(&action.input_schema)
            .unwrap_or_else(|e| panic!("{}: {e}", action.name));
    }

    // The example spec, pointed at this server, through the `warrant` binary.
    let dir = tempfile::tempdir().unwrap();
    let root = root().join("examples/openapi-prefect");
    let name = format!("warrant-test-{}", std::process::id());
    let spec = std::fs::read_to_string(root.join("spec.yaml"))
        .unwrap()
        .replace("http://127.0.0.1:4200", &server.url);
    let script = std::fs::read_to_string(root.join("script.yaml"))
        .unwrap()
        .replace("warrant-demo", &name);
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    std::fs::write(dir.path().join("script.yaml"), script).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir.path())
        .env("WARRANT_STORE", dir.path().join("w.db"))
        .args(["run", "spec.yaml", "--json", "-q"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["outcome"], "attained");
    assert_eq!(
        summary["route_key"],
        "prefect/commit:create_flow_flows__post -> prefect/read:read_flow_flows__id__get"
    );
    let carried = summary["carried"].to_string();

    // Prefect's own state, read separately: the flow exists under that name, with the id the
    // run carried.
    let flow: Value = warrant_http::client()
        .get(format!("{}/api/flows/name/{name}", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = flow["id"].as_str().unwrap();
    assert!(carried.contains(id), "carried {carried}, Prefect says {id}");
    assert_eq!(flow["tags"], json!(["warrant"]));
}

/// How each way an HTTP call can fail reaches the engine: a connection never made sent
/// nothing (a provider error a retry may follow); a gateway that lost the service's answer
/// (502) leaves a commit in doubt.
#[tokio::test]
async fn transport_failures_map_to_what_the_engine_must_know() {
    let service = service().await;
    let gateway = "
steps:
  create:
    - call: through_gateway
    - call: through_gateway
    - done: tried
";
    let result = run_with_tool(&service, "through_gateway", gateway).await;
    let call = &result.state.calls()[0];
    assert!(call.in_doubt, "{call:?}");
    assert_eq!(result.state.calls().len(), 1, "not sent again");

    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let spec = OpenApiSpec {
        base_url: Some(nowhere),
        ..api(&service)
    };
    let surface = OpenApiSurface::new(&spec, Path::new("")).unwrap();
    let (result, _) = run(surface, CREATE_THEN_READ).await;
    let call = &result.state.calls()[0];
    assert_eq!(call.status, Some(CallStatus::ProviderError));
    assert_eq!(call.fault.as_ref().unwrap().code, "unavailable");
    assert!(!call.in_doubt, "nothing was sent: nothing is in doubt");
}

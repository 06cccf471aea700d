//! `/v1/openapi.json`: the OpenAPI 3.1 document, generated from the request and answer types
//! (their JSON Schemas, derived from the code) and the table of operations below, which the
//! server's tests check against the routes it answers.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::api;
use crate::problem::Problem;

type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> schemars::Schema {
    g.subschema_for::<T>()
}

/// How an operation answers when it succeeds.
#[derive(Clone, Copy)]
enum Answer {
    /// JSON of a schema.
    Json(SchemaFn),
    /// Plain text.
    Text,
}

/// One operation.
struct Op {
    method: &'static str,
    path: &'static str,
    /// Its `operationId`: the name a generated client gives the call.
    id: &'static str,
    summary: &'static str,
    /// The role it needs (every role may read).
    role: &'static str,
    query: Option<SchemaFn>,
    /// Request headers it reads: (name, what it is for).
    headers: &'static [(&'static str, &'static str)],
    body: Option<SchemaFn>,
    answer: Answer,
    /// Every success status it answers with, and what each means.
    statuses: &'static [(u16, &'static str)],
    /// Also answers `text/event-stream`.
    stream: bool,
}

const OK: &[(u16, &str)] = &[(200, "OK")];

const fn op(
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    role: &'static str,
) -> Op {
    Op {
        method,
        path,
        id,
        summary,
        role,
        query: None,
        headers: &[],
        body: None,
        answer: Answer::Text,
        statuses: OK,
        stream: false,
    }
}

fn ops() -> Vec<Op> {
    vec![
        Op {
            body: Some(schema::<api::StartRun>),
            answer: Answer::Json(schema::<api::RunRef>),
            headers: &[(
                "Idempotency-Key",
                "1 to 255 visible characters: a retry with the same key and body gets the same run (kept 24 hours).",
            )],
            statuses: &[
                (201, "Started; `Location` names the run."),
                (
                    200,
                    "The run an earlier request with this `Idempotency-Key` started.",
                ),
            ],
            ..op(
                "post",
                "/v1/runs",
                "startRun",
                "Start a run: the operator's spec by `spec_path` or `spec_id` (a runner's), or an inline `spec` (an author's), with its `inputs`. An `Idempotency-Key` header returns the same run for the same key and body; 409 for another body; 429 past a tenant's quota.",
                "runner",
            )
        },
        Op {
            query: Some(schema::<api::RunsQuery>),
            answer: Answer::Json(schema::<api::RunsPage>),
            ..op(
                "get",
                "/v1/runs",
                "listRuns",
                "The tenant's runs, newest first, a page at a time.",
                "viewer",
            )
        },
        Op {
            answer: Answer::Json(schema::<warrant_app::RunView>),
            ..op(
                "get",
                "/v1/runs/{id}",
                "getRun",
                "One run: status, steps, calls, what it waits on.",
                "viewer",
            )
        },
        Op {
            answer: Answer::Json(schema::<warrant_core::report::RunReport>),
            ..op(
                "get",
                "/v1/runs/{id}/report",
                "getRunReport",
                "The run's evidence report (`warrant.run-report/1`).",
                "viewer",
            )
        },
        Op {
            query: Some(schema::<api::EventsQuery>),
            answer: Answer::Json(schema::<api::EventsPage>),
            headers: &[(
                "Last-Event-ID",
                "With `Accept: text/event-stream`: the last sequence number received; the stream resumes after it.",
            )],
            stream: true,
            ..op(
                "get",
                "/v1/runs/{id}/events",
                "listRunEvents",
                "The run's events: a JSON page, or Server-Sent Events with `Accept: text/event-stream` (id = sequence number; resume with `Last-Event-ID` or `?from=`; closes after the last event).",
                "viewer",
            )
        },
        Op {
            body: Some(schema::<api::CancelBody>),
            answer: Answer::Json(schema::<api::RunRef>),
            statuses: &[
                (200, "Cancelled."),
                (202, "Asked: the process driving the run has not acted yet."),
            ],
            ..op(
                "post",
                "/v1/runs/{id}/cancel",
                "cancelRun",
                "Cancel a run (200 once cancelled; 202 while the process driving it has not acted).",
                "operator",
            )
        },
        Op {
            answer: Answer::Json(schema::<api::RunRef>),
            statuses: &[(202, "Taken up: the run goes on here.")],
            ..op(
                "post",
                "/v1/runs/{id}/resume",
                "resumeRun",
                "Re-enter a run no process drives.",
                "operator",
            )
        },
        Op {
            body: Some(schema::<api::ReconcileBody>),
            answer: Answer::Json(schema::<api::RunRef>),
            ..op(
                "post",
                "/v1/runs/{id}/calls/{call}/reconcile",
                "reconcileCall",
                "Record whether a call in doubt happened (and resend one that did not).",
                "operator",
            )
        },
        Op {
            query: Some(schema::<api::ApprovalsQuery>),
            answer: Answer::Json(schema::<Vec<warrant_app::ApprovalRow>>),
            ..op(
                "get",
                "/v1/approvals",
                "listApprovals",
                "Pending approval requests of the tenant, or every request of one run.",
                "viewer",
            )
        },
        Op {
            body: Some(schema::<api::ApproveBody>),
            answer: Answer::Json(schema::<api::AnswerResult>),
            ..op(
                "post",
                "/v1/approvals/{id}/approve",
                "approve",
                "Approve, sending the digest of the arguments shown (another digest is 409).",
                "approver",
            )
        },
        Op {
            body: Some(schema::<api::DenyBody>),
            answer: Answer::Json(schema::<api::AnswerResult>),
            ..op(
                "post",
                "/v1/approvals/{id}/deny",
                "deny",
                "Deny, with a reason.",
                "approver",
            )
        },
        Op {
            query: Some(schema::<api::AuditQuery>),
            answer: Answer::Json(schema::<Vec<api::AuditEntry>>),
            ..op(
                "get",
                "/v1/audit",
                "listAudit",
                "The tenant's control actions (start, approve, deny, reconcile, cancel), read from its runs' logs.",
                "viewer",
            )
        },
        Op {
            answer: Answer::Json(schema::<Vec<api::CatalogSpec>>),
            ..op(
                "get",
                "/v1/specs",
                "listSpecs",
                "The operator's catalog kept in the store: the specs a runner starts by `spec_id`, each current version with its typed inputs.",
                "viewer",
            )
        },
        Op {
            query: Some(schema::<api::GrantsQuery>),
            answer: Answer::Json(schema::<Vec<warrant_core::standing::StandingGrant>>),
            ..op(
                "get",
                "/v1/grants",
                "listGrants",
                "The tenant's standing grants (live ones; `all=true` for revoked and expired ones too), newest first.",
                "viewer",
            )
        },
        Op {
            body: Some(schema::<api::NewGrant>),
            answer: Answer::Json(schema::<warrant_core::standing::StandingGrant>),
            statuses: &[(201, "Given")],
            ..op(
                "post",
                "/v1/grants",
                "addGrant",
                "Give a standing grant for the caller's tenant: a call it covers is approved at once, the run recording which grant.",
                "approver",
            )
        },
        Op {
            answer: Answer::Json(schema::<warrant_core::standing::StandingGrant>),
            ..op(
                "post",
                "/v1/grants/{id}/revoke",
                "revokeGrant",
                "Revoke a standing grant: it covers nothing from now on.",
                "approver",
            )
        },
        Op {
            answer: Answer::Json(schema::<Vec<warrant_app::PendingQuestion>>),
            ..op(
                "get",
                "/v1/questions",
                "listQuestions",
                "The questions the tenant's runs asked the people they act for, waiting for an answer, oldest first.",
                "viewer",
            )
        },
        Op {
            body: Some(schema::<api::AnswerBody>),
            answer: Answer::Json(schema::<api::QuestionAnswer>),
            ..op(
                "post",
                "/v1/questions/{id}/answer",
                "answerQuestion",
                "Answer a question: the answer must fit its schema (422 with the schema's reasons otherwise) and enters the run as the person's words; the run goes on.",
                "viewer",
            )
        },
        Op {
            answer: Answer::Json(schema::<Vec<warrant_app::schedule::ScheduleView>>),
            ..op(
                "get",
                "/v1/schedules",
                "listSchedules",
                "The tenant's schedules: the catalog spec each starts at the ticks of its cron expression, its next tick and how its last went.",
                "viewer",
            )
        },
        Op {
            answer: Answer::Json(schema::<warrant_app::schedule::ScheduleView>),
            ..op(
                "post",
                "/v1/schedules/{id}/pause",
                "pauseSchedule",
                "Pause a schedule: its ticks start nothing until it is resumed.",
                "operator",
            )
        },
        Op {
            answer: Answer::Json(schema::<warrant_app::schedule::ScheduleView>),
            ..op(
                "post",
                "/v1/schedules/{id}/resume",
                "resumeSchedule",
                "Resume a schedule from its next tick (the ticks missed while paused are not run).",
                "operator",
            )
        },
        Op {
            answer: Answer::Json(schema::<serde_json::Map<String, Value>>),
            ..op(
                "get",
                "/v1/openapi.json",
                "getOpenApi",
                "This document.",
                "any",
            )
        },
        op("get", "/healthz", "health", "The process answers.", "any"),
        op(
            "get",
            "/readyz",
            "readiness",
            "The store answers and start-up re-entry is done.",
            "any",
        ),
        op(
            "get",
            "/metrics",
            "metrics",
            "Prometheus text format.",
            "any",
        ),
    ]
}

/// The document.
pub fn build() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let problem = g.subschema_for::<Problem>();
    let mut paths = Map::new();
    for o in ops() {
        let mut operation = Map::new();
        operation.insert("operationId".into(), json!(o.id));
        operation.insert("summary".into(), json!(o.summary));
        operation.insert("x-warrant-role".into(), json!(o.role));
        let mut parameters: Vec<Value> = o
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if let Some(q) = o.query {
            let s = q(&mut g);
            let target = resolve(&g, &s);
            if let Some(props) = target.get("properties").and_then(Value::as_object) {
                for (name, schema) in props {
                    parameters.push(
                        json!({"name": name, "in": "query", "required": false, "schema": schema}),
                    );
                }
            }
        }
        for (name, description) in o.headers {
            parameters.push(json!({
                "name": name, "in": "header", "required": false,
                "description": description, "schema": {"type": "string"}
            }));
        }
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(b) = o.body {
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": b(&mut g)}}}),
            );
        }
        let mut content = Map::new();
        match o.answer {
            Answer::Json(a) => {
                content.insert("application/json".into(), json!({"schema": a(&mut g)}));
            }
            Answer::Text => {
                content.insert("text/plain".into(), json!({"schema": {"type": "string"}}));
            }
        }
        if o.stream {
            content.insert(
                "text/event-stream".into(),
                json!({"schema": {"type": "string"}}),
            );
        }
        let mut responses = Map::new();
        for (status, description) in o.statuses {
            let mut answer = Map::new();
            answer.insert("description".into(), json!(description));
            answer.insert("content".into(), Value::Object(content.clone()));
            if *status == 201 {
                answer.insert(
                    "headers".into(),
                    json!({"Location": {
                        "description": "The run's address.", "schema": {"type": "string"}
                    }}),
                );
            }
            responses.insert(status.to_string(), Value::Object(answer));
        }
        let problem_content = json!({"application/problem+json": {"schema": problem}});
        if o.method == "post" && o.path == "/v1/runs" {
            responses.insert(
                "429".into(),
                json!({
                    "description": "The tenant reached a quota.",
                    "headers": {"Retry-After": {
                        "description": "Seconds after which trying again may succeed.",
                        "schema": {"type": "integer"}
                    }},
                    "content": problem_content,
                }),
            );
        }
        responses.insert(
            "default".into(),
            json!({"description": "A problem (RFC 9457)", "content": problem_content}),
        );
        operation.insert("responses".into(), Value::Object(responses));
        if o.role != "any" {
            operation.insert("security".into(), json!([{"bearer": []}]));
        }
        let entry = paths
            .entry(o.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(m) = entry.as_object_mut() {
            m.insert(o.method.to_owned(), Value::Object(operation));
        }
    }
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Warrant",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The control and observation API of `warrant serve`. Another tenant's run answers 404.",
        },
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    });
    for_generators(&mut document);
    document
}

/// The document in the shapes client generators map: a schema that allows any value is `{}`
/// (not the bare `true` some generators reject), and a choice among constants (a unit enum
/// whose variants carry docs) is an `enum` with their docs in its description.
fn for_generators(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // A default of `null` (an optional field's) says nothing a generator can use, and
            // some reject it on a schema whose type is not `null`.
            if m.get("default") == Some(&Value::Null) {
                m.remove("default");
            }
            for (key, child) in m.iter_mut() {
                // `true` as a schema (an object's property, an array's items, ...); not as
                // the value of a keyword such as `uniqueItems`, which is no schema.
                if child == &Value::Bool(true) && SCHEMA_KEYWORDS.contains(&key.as_str()) {
                    *child = json!({});
                }
                for_generators(child);
            }
            // Maps and lists of schemas.
            for key in SCHEMA_MAPS.iter().chain(SCHEMA_LISTS) {
                let children: Vec<&mut Value> = match m.get_mut(*key) {
                    Some(Value::Object(map)) if SCHEMA_MAPS.contains(key) => {
                        map.values_mut().collect()
                    }
                    Some(Value::Array(list)) if SCHEMA_LISTS.contains(key) => {
                        list.iter_mut().collect()
                    }
                    _ => continue,
                };
                for child in children {
                    if child == &Value::Bool(true) {
                        *child = json!({});
                    }
                }
            }
            let consts: Option<Vec<(Value, Option<String>)>> = m
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|choices| {
                    choices
                        .iter()
                        .map(|c| {
                            let c = c.as_object()?;
                            let value = c.get("const")?.clone();
                            let extra = c
                                .keys()
                                .any(|k| !matches!(k.as_str(), "const" | "type" | "description"));
                            (!extra).then(|| {
                                (
                                    value,
                                    c.get("description")
                                        .and_then(Value::as_str)
                                        .map(str::to_owned),
                                )
                            })
                        })
                        .collect()
                });
            if let Some(consts) = consts.filter(|c| !c.is_empty()) {
                m.remove("oneOf");
                let kinds: std::collections::BTreeSet<&str> = consts
                    .iter()
                    .map(|(v, _)| if v.is_string() { "string" } else { "other" })
                    .collect();
                if kinds.len() == 1 && kinds.contains("string") {
                    m.insert("type".into(), json!("string"));
                }
                let described: Vec<String> = consts
                    .iter()
                    .filter_map(|(v, d)| Some(format!("`{}`: {}", v.as_str()?, d.as_ref()?)))
                    .collect();
                if !described.is_empty() && !m.contains_key("description") {
                    m.insert("description".into(), json!(described.join("; ")));
                }
                m.insert(
                    "enum".into(),
                    Value::Array(consts.into_iter().map(|(v, _)| v).collect()),
                );
            }
        }
        Value::Array(items) => items.iter_mut().for_each(for_generators),
        _ => {}
    }
}

/// Keywords whose value maps names to schemas (`schemas`: the components').
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "dependentSchemas",
    "schemas",
];

/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// Keywords whose value is a schema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "schema",
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// A schema, or the definition it refers to.
fn resolve(g: &SchemaGenerator, s: &schemars::Schema) -> Value {
    let v = s.as_value();
    match v
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        Some(name) => g.definitions().get(name).cloned().unwrap_or(Value::Null),
        None => v.clone(),
    }
}

/// `GET /v1/openapi.json`.
pub async fn document(State(_): State<Arc<Shared>>) -> Json<Value> {
    Json(build())
}

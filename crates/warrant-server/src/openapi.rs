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

/// One operation.
struct Op {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    /// The role it needs (every role may read).
    role: &'static str,
    query: Option<SchemaFn>,
    body: Option<SchemaFn>,
    answer: Option<SchemaFn>,
    /// Also answers `text/event-stream`.
    stream: bool,
}

const fn op(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    role: &'static str,
) -> Op {
    Op {
        method,
        path,
        summary,
        role,
        query: None,
        body: None,
        answer: None,
        stream: false,
    }
}

fn ops() -> Vec<Op> {
    vec![
        Op {
            body: Some(schema::<api::StartRun>),
            answer: Some(schema::<api::RunRef>),
            ..op(
                "post",
                "/v1/runs",
                "Start a run: the operator's spec by `spec_path` or `spec_id` (a runner's), or an inline `spec` (an author's), with its `inputs`. An `Idempotency-Key` header returns the same run for the same key and body; 409 for another body; 429 past a tenant's quota.",
                "runner",
            )
        },
        Op {
            query: Some(schema::<api::RunsQuery>),
            answer: Some(schema::<api::RunsPage>),
            ..op(
                "get",
                "/v1/runs",
                "The tenant's runs, newest first, a page at a time.",
                "viewer",
            )
        },
        Op {
            answer: Some(schema::<Value>),
            ..op(
                "get",
                "/v1/runs/{id}",
                "One run: status, steps, calls, what it waits on.",
                "viewer",
            )
        },
        Op {
            answer: Some(schema::<warrant_core::report::RunReport>),
            ..op(
                "get",
                "/v1/runs/{id}/report",
                "The run's evidence report (`warrant.run-report/1`).",
                "viewer",
            )
        },
        Op {
            query: Some(schema::<api::EventsQuery>),
            answer: Some(schema::<api::EventsPage>),
            stream: true,
            ..op(
                "get",
                "/v1/runs/{id}/events",
                "The run's events: a JSON page, or Server-Sent Events with `Accept: text/event-stream` (id = sequence number; resume with `Last-Event-ID` or `?from=`; closes after the last event).",
                "viewer",
            )
        },
        Op {
            body: Some(schema::<api::CancelBody>),
            answer: Some(schema::<api::RunRef>),
            ..op(
                "post",
                "/v1/runs/{id}/cancel",
                "Cancel a run (200 once cancelled; 202 while the process driving it has not acted).",
                "operator",
            )
        },
        Op {
            answer: Some(schema::<api::RunRef>),
            ..op(
                "post",
                "/v1/runs/{id}/resume",
                "Re-enter a run no process drives.",
                "operator",
            )
        },
        Op {
            body: Some(schema::<api::ReconcileBody>),
            answer: Some(schema::<api::RunRef>),
            ..op(
                "post",
                "/v1/runs/{id}/calls/{call}/reconcile",
                "Record whether a call in doubt happened (and resend one that did not).",
                "operator",
            )
        },
        Op {
            query: Some(schema::<api::ApprovalsQuery>),
            answer: Some(schema::<Vec<Value>>),
            ..op(
                "get",
                "/v1/approvals",
                "Pending approval requests of the tenant, or every request of one run.",
                "viewer",
            )
        },
        Op {
            body: Some(schema::<api::ApproveBody>),
            answer: Some(schema::<api::AnswerResult>),
            ..op(
                "post",
                "/v1/approvals/{id}/approve",
                "Approve, sending the digest of the arguments shown (another digest is 409).",
                "approver",
            )
        },
        Op {
            body: Some(schema::<api::DenyBody>),
            answer: Some(schema::<api::AnswerResult>),
            ..op(
                "post",
                "/v1/approvals/{id}/deny",
                "Deny, with a reason.",
                "approver",
            )
        },
        Op {
            query: Some(schema::<api::AuditQuery>),
            answer: Some(schema::<Vec<api::AuditEntry>>),
            ..op(
                "get",
                "/v1/audit",
                "The tenant's control actions (start, approve, deny, reconcile, cancel), read from its runs' logs.",
                "viewer",
            )
        },
        Op {
            answer: Some(schema::<Vec<api::CatalogSpec>>),
            ..op(
                "get",
                "/v1/specs",
                "The operator's catalog kept in the store: the specs a runner starts by `spec_id`, each current version with its typed inputs.",
                "viewer",
            )
        },
        op("get", "/v1/openapi.json", "This document.", "any"),
        op("get", "/healthz", "The process answers.", "any"),
        op(
            "get",
            "/readyz",
            "The store answers and start-up re-entry is done.",
            "any",
        ),
        op("get", "/metrics", "Prometheus text format.", "any"),
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
        if let Some(a) = o.answer {
            content.insert("application/json".into(), json!({"schema": a(&mut g)}));
        }
        if o.stream {
            content.insert(
                "text/event-stream".into(),
                json!({"schema": {"type": "string"}}),
            );
        }
        let ok = if content.is_empty() {
            json!({"description": "OK"})
        } else {
            json!({"description": "OK", "content": content})
        };
        operation.insert(
            "responses".into(),
            json!({
                "200": ok,
                "default": {
                    "description": "A problem (RFC 9457)",
                    "content": {"application/problem+json": {"schema": problem}}
                }
            }),
        );
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
    json!({
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
    })
}

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

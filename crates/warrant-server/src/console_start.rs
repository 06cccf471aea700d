//! The console's start form: a catalog spec (`warrant specs add`) started with its inputs, each
//! asked for by a field built from the input's JSON Schema (a number field for a number, a
//! choice for an enum, a check box for a boolean, a JSON box for anything else). The values
//! are checked by the same validation as the API's `POST /v1/runs`; a refusal shows the form
//! again, with what was typed and what is wrong.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::api::{Caller, StartRun};
use crate::console::{check_csrf, csrf, esc, page, who};
use crate::problem::Problem;

#[derive(Debug, Default, Deserialize)]
pub struct StartQuery {
    #[serde(default)]
    spec: String,
}

/// `GET /start`: the catalog, or one spec's form.
pub async fn start_page(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<StartQuery>,
) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    render(&shared, &headers, &caller, &q.spec, &[], None).await
}

/// The page: the catalog's specs, and the form of `chosen` filled with `typed`, with
/// `problem` above it.
async fn render(
    shared: &Shared,
    headers: &HeaderMap,
    caller: &Caller,
    chosen: &str,
    typed: &[(String, String)],
    problem: Option<&Problem>,
) -> Response {
    let specs = match shared.catalog_specs().await {
        Ok(s) => s,
        Err(p) => return p.into_response(),
    };
    let mut body = String::from("<h2>Start a run</h2>");
    if caller.principal.require(crate::Role::Runner).is_err() {
        body.push_str("<p class=\"error\" role=\"alert\">Your role may not start runs.</p>");
    }
    if specs.is_empty() {
        body.push_str(
            "<p class=\"empty\">The catalog has no specs. An operator adds one with \
             <code>warrant specs add FILE</code>.</p>",
        );
    }
    body.push_str("<ul class=\"catalog\">");
    for s in &specs {
        let _ = write!(
            body,
            "<li><a href=\"/start?spec={q}\"{cur}>{id}</a>: {objective}</li>",
            q = esc(&crate::console::url_escape(&s.id)),
            cur = if s.id == chosen {
                " aria-current=\"page\""
            } else {
                ""
            },
            id = esc(&s.id),
            objective = esc(&s.objective),
        );
    }
    body.push_str("</ul>");
    if let Some(spec) = specs.iter().find(|s| s.id == chosen) {
        let _ = write!(
            body,
            "<h3>{id}</h3><p>{objective}</p>",
            id = esc(&spec.id),
            objective = esc(&spec.objective)
        );
        if let Some(p) = problem {
            let _ = write!(
                body,
                "<p class=\"error\" role=\"alert\" id=\"start-problem\">{}</p>",
                esc(&p.detail)
            );
        }
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/console/start\" class=\"start\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{token}\">\
             <input type=\"hidden\" name=\"spec\" value=\"{id}\">",
            token = csrf(shared, headers),
            id = esc(&spec.id),
        );
        if !spec.inputs.is_empty() {
            body.push_str("<fieldset><legend>Inputs</legend>");
            for (name, schema) in spec.inputs.iter() {
                let given = typed
                    .iter()
                    .find(|(k, _)| k.strip_prefix("input.") == Some(name.as_str()))
                    .map(|(_, v)| v.as_str());
                body.push_str(&field(name, schema, given));
            }
            body.push_str("</fieldset>");
        }
        let decider = typed
            .iter()
            .find(|(k, _)| k == "decider")
            .map_or("", |(_, v)| v.as_str());
        let _ = write!(
            body,
            "<p class=\"field\"><label for=\"decider\">Decider</label>\
             <input id=\"decider\" name=\"decider\" value=\"{}\" placeholder=\"the spec's own\" \
             aria-describedby=\"decider-hint\"><small id=\"decider-hint\">\
             <code>kind:argument</code>, e.g. <code>openai:gpt-4o</code>; empty for the spec's \
             own</small></p><button>Start</button></form>",
            esc(decider)
        );
    }
    let status = if problem.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    (status, page("Start a run", "start", Some(caller), &body)).into_response()
}

/// The field that asks for input `name`, from its JSON Schema.
fn field(name: &str, schema: Option<&Value>, given: Option<&str>) -> String {
    let id = format!(
        "in-{}",
        name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    );
    let s = schema.cloned().unwrap_or(Value::Null);
    let kind = s.get("type").and_then(Value::as_str).unwrap_or("");
    let mut hint = s
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_default();
    let mut rules = Vec::new();
    for (k, say, unit) in [
        ("minimum", "at least", ""),
        ("exclusiveMinimum", "more than", ""),
        ("maximum", "at most", ""),
        ("exclusiveMaximum", "less than", ""),
        ("minLength", "at least", " characters"),
        ("maxLength", "at most", " characters"),
        ("pattern", "matching", ""),
    ] {
        if let Some(v) = s.get(k) {
            rules.push(format!("{say} {}{unit}", crate::console::value_text(v)));
        }
    }
    if !rules.is_empty() {
        if !hint.is_empty() {
            hint.push_str("; ");
        }
        hint.push_str(&rules.join(", "));
    }
    let mut attrs = String::new();
    let mut add = |k: &str, v: Option<&Value>| {
        if let Some(v) = v {
            let _ = write!(attrs, " {k}=\"{}\"", esc(&crate::console::value_text(v)));
        }
    };
    let widget = if let Some(Value::Array(choices)) = s.get("enum") {
        let options: String = choices
            .iter()
            .map(|c| {
                let text = crate::console::value_text(c);
                let picked = if given == Some(text.as_str()) {
                    " selected"
                } else {
                    ""
                };
                format!("<option{picked}>{}</option>", esc(&text))
            })
            .collect();
        format!(
            "<select id=\"{id}\" name=\"input.{n}\" required>{options}</select>",
            n = esc(name)
        )
    } else {
        match kind {
            "boolean" => format!(
                "<input type=\"checkbox\" id=\"{id}\" name=\"input.{n}\" value=\"true\"{c}>",
                n = esc(name),
                c = if given == Some("true") {
                    " checked"
                } else {
                    ""
                }
            ),
            "integer" | "number" => {
                add("min", s.get("minimum"));
                add("max", s.get("maximum"));
                format!(
                    "<input type=\"number\" id=\"{id}\" name=\"input.{n}\" step=\"{step}\" \
                     value=\"{v}\" required{attrs}>",
                    n = esc(name),
                    step = if kind == "integer" { "1" } else { "any" },
                    v = esc(given.unwrap_or("")),
                )
            }
            "string" => {
                add("pattern", s.get("pattern"));
                add("minlength", s.get("minLength"));
                add("maxlength", s.get("maxLength"));
                format!(
                    "<input id=\"{id}\" name=\"input.{n}\" value=\"{v}\" required{attrs}>",
                    n = esc(name),
                    v = esc(given.unwrap_or("")),
                )
            }
            _ => {
                if hint.is_empty() {
                    hint.push_str("JSON (or plain text)");
                }
                format!(
                    "<textarea id=\"{id}\" name=\"input.{n}\" rows=\"3\" required>{v}</textarea>",
                    n = esc(name),
                    v = esc(given.unwrap_or("")),
                )
            }
        }
    };
    let described = if hint.is_empty() {
        String::new()
    } else {
        format!(" aria-describedby=\"{id}-hint\"")
    };
    let widget = widget.replacen(
        &format!("id=\"{id}\""),
        &format!("id=\"{id}\"{described}"),
        1,
    );
    let hint = if hint.is_empty() {
        String::new()
    } else {
        format!("<small id=\"{id}-hint\">{}</small>", esc(&hint))
    };
    format!(
        "<p class=\"field\"><label for=\"{id}\">{}</label>{widget}{hint}</p>",
        esc(name)
    )
}

/// `value`, typed in a form's field, as the JSON value its schema asks for.
fn typed_value(name: &str, schema: Option<&Value>, text: &str) -> Result<Value, Problem> {
    let kind = schema
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let text = text.trim();
    let wrong = |what: &str| Problem::invalid(format!("input `{name}`: `{text}` is not {what}"));
    Ok(match kind {
        "string" => Value::String(text.to_owned()),
        "boolean" => Value::Bool(text == "true"),
        "integer" => json!(text.parse::<i64>().map_err(|_| wrong("a whole number"))?),
        "number" => match text.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| wrong("a number"))?,
        },
        _ => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
    })
}

/// `POST /console/start`.
pub async fn start_form(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let caller = match who(&shared, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let get = |k: &str| {
        form.iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v.as_str())
    };
    if let Err(p) = check_csrf(&shared, &headers, get("csrf")) {
        return p.into_response();
    }
    let chosen = get("spec").to_owned();
    let started = async {
        let specs = shared.catalog_specs().await?;
        let spec = specs
            .iter()
            .find(|s| s.id == chosen)
            .ok_or_else(|| Problem::not_found(format!("no spec `{chosen}` in the catalog")))?;
        let mut inputs = Map::new();
        for (name, schema) in spec.inputs.iter() {
            let text = get(&format!("input.{name}"));
            let boolean =
                schema.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("boolean");
            if text.trim().is_empty() && !boolean {
                continue;
            }
            inputs.insert(name.clone(), typed_value(name, schema, text)?);
        }
        let decider = get("decider").trim();
        let req: StartRun = serde_json::from_value(json!({
            "spec_id": chosen,
            "inputs": inputs,
            "decider": if decider.is_empty() { Value::Null } else { json!(decider) },
        }))
        .map_err(|e| Problem::bad_request(e.to_string()))?;
        shared.start_now(&caller, req).await
    };
    match started.await {
        Ok(run) => Redirect::to(&format!("/runs/{run}")).into_response(),
        Err(p) if p.status == 422 || p.status == 404 || p.status == 403 || p.status == 429 => {
            render(&shared, &headers, &caller, &chosen, &form, Some(&p)).await
        }
        Err(p) => p.into_response(),
    }
}

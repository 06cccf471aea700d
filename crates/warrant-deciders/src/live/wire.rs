//! The four wire protocols, hand-written: each turns a [`Conversation`] into exactly the request
//! body Warrant can justify, and its answer (a JSON document, or the SSE stream of one) into a
//! [`Reply`]. A streamed answer is first folded into the document the same request would have
//! returned unstreamed, then read by the same code.

use serde_json::{Map, Value, json};
use warrant_core::codes::Code;

use super::conversation::{Conversation, Reply, Stop, Turn};
use super::http::events;
use super::models::{Api, ReasoningSetting};

/// What goes into a request besides the conversation.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The model's name on the wire.
    pub model: String,
    /// The output cap and the field it goes in.
    pub max_output_tokens: u64,
    /// `max_completion_tokens`, `max_tokens`, ... (Chat Completions only: servers differ).
    pub max_output_field: String,
    /// The reasoning setting, already checked against the model.
    pub reasoning: Option<ReasoningSetting>,
    /// The model reasons (its table entry has a reasoning control), asked to or not.
    pub reasoning_model: bool,
    /// Stream the answer.
    pub stream: bool,
}

/// A model-attributed failure to read an answer: (code, message).
pub type Unreadable = (Code, String);

fn unreadable(code: Code, message: impl Into<String>) -> Unreadable {
    (code, message.into())
}

/// The request body for `api`.
pub fn request(api: Api, c: &Conversation, s: &Settings) -> Value {
    match api {
        Api::OpenaiChat => chat_request(c, s),
        Api::OpenaiResponses => responses_request(c, s),
        Api::Anthropic => anthropic_request(c, s),
        Api::Gemini => gemini_request(c, s),
    }
}

/// Reads `text`, the answer to a request made with `stream`.
pub fn parse(api: Api, text: &str, stream: bool) -> Result<Reply, Unreadable> {
    let document = if stream {
        match api {
            Api::OpenaiChat => fold_chat(text)?,
            Api::OpenaiResponses => fold_responses(text)?,
            Api::Anthropic => fold_anthropic(text)?,
            Api::Gemini => fold_gemini(text)?,
        }
    } else {
        serde_json::from_str(text).map_err(|e| {
            unreadable(
                Code::UnreadableAnswer,
                format!("the answer is not JSON: {e}"),
            )
        })?
    };
    match api {
        Api::OpenaiChat => read_chat(&document),
        Api::OpenaiResponses => read_responses(&document),
        Api::Anthropic => read_anthropic(&document),
        Api::Gemini => read_gemini(&document),
    }
}

fn data_json(data: &str) -> Result<Value, Unreadable> {
    serde_json::from_str(data).map_err(|e| {
        unreadable(
            Code::UnreadableAnswer,
            format!("a streamed event is not JSON ({e}): {}", excerpt(data)),
        )
    })
}

fn excerpt(s: &str) -> String {
    s.chars().take(200).collect()
}

fn incomplete(what: &str) -> Unreadable {
    unreadable(
        Code::StreamIncomplete,
        format!("the stream ended before {what}: the answer is incomplete"),
    )
}

fn u(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What `v[pointer]` reads: the value there, or `null`.
fn at(v: &Value, pointer: &str) -> Value {
    v.pointer(pointer).cloned().unwrap_or(Value::Null)
}

/// `v[key] = value`, as `serde_json`'s index assignment does for an object or `null` (made an
/// object); any other value (a malformed document) is left as it is rather than panicking.
fn set(v: &mut Value, key: &str, value: Value) {
    if v.is_null() {
        *v = Value::Object(Map::new());
    }
    if let Some(o) = v.as_object_mut() {
        o.insert(key.to_owned(), value);
    }
}

/// A result's content as an object (Anthropic and Gemini want structure; ours is JSON text).
fn as_object(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => json!({"value": other}),
        Err(_) => json!({"text": text}),
    }
}

// ---- OpenAI Chat Completions (and OpenAI-compatible servers) ----

fn chat_request(c: &Conversation, s: &Settings) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": c.system}),
        json!({"role": "user", "content": c.opening}),
    ];
    for t in &c.turns {
        match t {
            // `content: ""`, not null: some compatible servers refuse null beside tool calls.
            Turn::Call {
                id,
                name,
                arguments,
                ..
            } => messages.push(json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            ]})),
            Turn::Result { id, content, .. } => {
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
        }
    }
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": &*t.schema}}))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(s.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("tools".into(), Value::Array(tools));
    body.insert(s.max_output_field.clone(), json!(s.max_output_tokens));
    if let Some(ReasoningSetting::Effort(e)) = &s.reasoning {
        body.insert("reasoning_effort".into(), json!(e));
    }
    if s.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// Folds a Chat Completions stream into the completion it stands for.
fn fold_chat(text: &str) -> Result<Value, Unreadable> {
    let mut content = String::new();
    let mut refusal: Option<String> = None;
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish: Option<String> = None;
    let mut usage = Value::Null;
    let mut done = false;
    for (_, data) in events(text) {
        if data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let chunk = data_json(&data)?;
        if let Some(e) = chunk.get("error") {
            return Err(unreadable(
                Code::ModelError,
                format!("the stream carried an error: {e}"),
            ));
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            usage = u.clone();
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            continue;
        };
        let delta = &choice["delta"];
        content.push_str(s(delta, "/content"));
        if let Some(r) = delta.get("refusal").and_then(Value::as_str) {
            refusal.get_or_insert_with(String::new).push_str(r);
        }
        for tc in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = match tc["index"].as_u64() {
                None => calls.len(),
                Some(i) => match usize::try_from(i) {
                    Ok(i) => i,
                    Err(_) => continue,
                },
            };
            while calls.len() <= i {
                calls.push(Default::default());
            }
            let Some(slot) = calls.get_mut(i) else {
                continue;
            };
            slot.0.push_str(s(tc, "/id"));
            slot.1.push_str(s(tc, "/function/name"));
            slot.2.push_str(s(tc, "/function/arguments"));
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            finish = Some(f.to_owned());
        }
    }
    if !done && finish.is_none() {
        return Err(incomplete("its last chunk"));
    }
    let tool_calls: Vec<Value> = calls
        .into_iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    Ok(json!({
        "choices": [{"message": {"content": content, "refusal": refusal, "tool_calls": tool_calls}, "finish_reason": finish}],
        "usage": usage,
    }))
}

fn read_chat(doc: &Value) -> Result<Reply, Unreadable> {
    if let Some(e) = doc.get("error") {
        return Err(unreadable(
            Code::ModelError,
            format!("the answer is an error: {e}"),
        ));
    }
    let choice = doc
        .pointer("/choices/0")
        .ok_or_else(|| unreadable(Code::UnreadableAnswer, "the answer has no choices"))?;
    let message = &choice["message"];
    let mut r = Reply::new();
    r.text = s(message, "/content").to_owned();
    r.refusal = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|x| !x.is_empty())
        .map(str::to_owned);
    for tc in message["tool_calls"].as_array().into_iter().flatten() {
        r.calls.push((
            s(tc, "/id").to_owned(),
            s(tc, "/function/name").to_owned(),
            s(tc, "/function/arguments").to_owned(),
        ));
    }
    r.stop = match s(choice, "/finish_reason") {
        "length" => Stop::Length,
        "stop" | "tool_calls" | "function_call" | "" => Stop::Finished,
        other => Stop::Other(other.to_owned()),
    };
    let usage = &doc["usage"];
    r.usage_reported = usage.as_object().is_some_and(|m| !m.is_empty());
    r.input_tokens = u(usage, "/prompt_tokens");
    r.output_tokens = u(usage, "/completion_tokens");
    r.cached_tokens = u(usage, "/prompt_tokens_details/cached_tokens");
    r.reasoning_tokens = u(usage, "/completion_tokens_details/reasoning_tokens");
    Ok(r)
}

// ---- OpenAI Responses ----

fn responses_request(c: &Conversation, s: &Settings) -> Value {
    let mut input = vec![json!({"role": "user", "content": c.opening})];
    for t in &c.turns {
        match t {
            Turn::Call {
                id,
                name,
                arguments,
                reasoning,
            } => {
                // Encrypted reasoning goes back, before the call it led to, to OpenAI only.
                input.extend(reasoning.iter().cloned());
                input.push(
                    json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments}),
                );
            }
            Turn::Result { id, content, .. } => {
                input.push(
                    json!({"type": "function_call_output", "call_id": id, "output": content}),
                );
            }
        }
    }
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": &*t.schema}))
        .collect();
    let mut body = json!({
        "model": s.model,
        "instructions": c.system,
        "input": input,
        "tools": tools,
        "max_output_tokens": s.max_output_tokens,
        "store": false,
    });
    if let Some(ReasoningSetting::Effort(e)) = &s.reasoning {
        set(&mut body, "reasoning", json!({"effort": e}));
    }
    if s.reasoning_model {
        // Nothing is stored at OpenAI (`store: false`): reasoning comes back encrypted, to be
        // returned with the next request.
        set(&mut body, "include", json!(["reasoning.encrypted_content"]));
    }
    if s.stream {
        set(&mut body, "stream", json!(true));
    }
    body
}

/// A Responses stream ends with the whole response (`response.completed`, `.incomplete` or
/// `.failed`): that document is the answer.
fn fold_responses(text: &str) -> Result<Value, Unreadable> {
    for (_, data) in events(text) {
        let event = data_json(&data)?;
        match s(&event, "/type") {
            "response.completed" | "response.incomplete" | "response.failed" => {
                return Ok(at(&event, "/response"));
            }
            "error" => {
                return Err(unreadable(
                    Code::ModelError,
                    format!("the stream carried an error: {}", event),
                ));
            }
            _ => {}
        }
    }
    Err(incomplete("`response.completed`"))
}

fn read_responses(doc: &Value) -> Result<Reply, Unreadable> {
    if let Some(e) = doc.get("error").filter(|e| !e.is_null()) {
        return Err(unreadable(
            Code::ModelError,
            format!("the response failed: {e}"),
        ));
    }
    let mut r = Reply::new();
    for item in doc["output"].as_array().into_iter().flatten() {
        match s(item, "/type") {
            "message" => {
                for part in item["content"].as_array().into_iter().flatten() {
                    match s(part, "/type") {
                        "output_text" => r.text.push_str(s(part, "/text")),
                        "refusal" => {
                            r.refusal = Some(s(part, "/refusal").to_owned());
                        }
                        _ => {}
                    }
                }
            }
            "function_call" => r.calls.push((
                s(item, "/call_id").to_owned(),
                s(item, "/name").to_owned(),
                s(item, "/arguments").to_owned(),
            )),
            "reasoning" => r.reasoning.push(item.clone()),
            _ => {}
        }
    }
    r.stop = match (s(doc, "/status"), s(doc, "/incomplete_details/reason")) {
        ("incomplete", "max_output_tokens") => Stop::Length,
        ("incomplete", "content_filter") => Stop::Refused,
        ("incomplete", other) => Stop::Other(other.to_owned()),
        _ => Stop::Finished,
    };
    let usage = &doc["usage"];
    r.usage_reported = usage.as_object().is_some_and(|m| !m.is_empty());
    r.input_tokens = u(usage, "/input_tokens");
    r.output_tokens = u(usage, "/output_tokens");
    r.cached_tokens = u(usage, "/input_tokens_details/cached_tokens");
    r.reasoning_tokens = u(usage, "/output_tokens_details/reasoning_tokens");
    Ok(r)
}

// ---- Anthropic Messages ----

fn anthropic_request(c: &Conversation, s: &Settings) -> Value {
    let mut messages = vec![json!({"role": "user", "content": c.opening})];
    for t in &c.turns {
        match t {
            Turn::Call {
                id,
                name,
                arguments,
                reasoning,
            } => {
                // Signed thinking goes back first, to the provider that signed it.
                let mut blocks: Vec<Value> = reasoning.clone();
                let input = match serde_json::from_str::<Value>(arguments) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => json!({"arguments": arguments}),
                };
                blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Turn::Result {
                id,
                content,
                is_error,
                ..
            } => messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}
            ]})),
        }
    }
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": &*t.schema}))
        .collect();
    let mut body = json!({
        "model": s.model,
        "system": c.system,
        "messages": messages,
        "tools": tools,
        "max_tokens": s.max_output_tokens,
    });
    if let Some(ReasoningSetting::Budget(b)) = &s.reasoning {
        set(
            &mut body,
            "thinking",
            json!({"type": "enabled", "budget_tokens": b}),
        );
        // One call per answer while thinking: the answer's signed thinking then travels with
        // the one call it led to.
        set(
            &mut body,
            "tool_choice",
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        );
    }
    if s.stream {
        set(&mut body, "stream", json!(true));
    }
    body
}

/// Folds a Messages stream into the message it stands for.
fn fold_anthropic(text: &str) -> Result<Value, Unreadable> {
    let mut message = json!({"content": [], "stop_reason": null, "usage": {}});
    let mut partial: Vec<String> = Vec::new();
    let mut stopped = false;
    for (_, data) in events(text) {
        let event = data_json(&data)?;
        match s(&event, "/type") {
            "message_start" => {
                set(&mut message, "usage", at(&event, "/message/usage"));
            }
            "content_block_start" => {
                let Ok(i) = usize::try_from(u(&event, "/index")) else {
                    continue;
                };
                let blocks = message.get_mut("content").and_then(Value::as_array_mut);
                if let Some(blocks) = blocks {
                    while blocks.len() <= i {
                        blocks.push(Value::Null);
                        partial.push(String::new());
                    }
                    if let Some(block) = blocks.get_mut(i) {
                        *block = at(&event, "/content_block");
                    }
                }
            }
            "content_block_delta" => {
                let Ok(i) = usize::try_from(u(&event, "/index")) else {
                    continue;
                };
                let delta = event.get("delta").unwrap_or(&Value::Null);
                let Some(block) = message.get_mut("content").and_then(|c| c.get_mut(i)) else {
                    continue;
                };
                match s(delta, "/type") {
                    "text_delta" => append(block, "text", s(delta, "/text")),
                    "thinking_delta" => append(block, "thinking", s(delta, "/thinking")),
                    "signature_delta" => append(block, "signature", s(delta, "/signature")),
                    "input_json_delta" => {
                        if let Some(p) = partial.get_mut(i) {
                            p.push_str(s(delta, "/partial_json"));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                set(
                    &mut message,
                    "stop_reason",
                    at(&event, "/delta/stop_reason"),
                );
                if let Some(out) = event.get("usage").and_then(|u| u.get("output_tokens"))
                    && let Some(usage) = message.get_mut("usage")
                {
                    set(usage, "output_tokens", out.clone());
                }
            }
            "message_stop" => {
                stopped = true;
                break;
            }
            "error" => {
                return Err(unreadable(
                    Code::ModelError,
                    format!("the stream carried an error: {}", at(&event, "/error")),
                ));
            }
            _ => {}
        }
    }
    if !stopped {
        return Err(incomplete("`message_stop`"));
    }
    // A tool call's input arrives as JSON text in pieces: kept as text (it may not parse).
    if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
        for (block, text) in blocks.iter_mut().zip(partial) {
            if block["type"] == "tool_use" && !text.is_empty() {
                block["input_text"] = Value::String(text);
            }
        }
    }
    Ok(message)
}

fn append(block: &mut Value, field: &str, more: &str) {
    let mut now = block[field].as_str().unwrap_or_default().to_owned();
    now.push_str(more);
    block[field] = Value::String(now);
}

fn read_anthropic(doc: &Value) -> Result<Reply, Unreadable> {
    if s(doc, "/type") == "error" {
        return Err(unreadable(
            Code::ModelError,
            format!("the answer is an error: {}", doc["error"]),
        ));
    }
    let mut r = Reply::new();
    for block in doc["content"].as_array().into_iter().flatten() {
        match s(block, "/type") {
            "text" => r.text.push_str(s(block, "/text")),
            "tool_use" => {
                let arguments = match block.get("input_text").and_then(Value::as_str) {
                    Some(t) => t.to_owned(),
                    None => block["input"].to_string(),
                };
                r.calls.push((
                    s(block, "/id").to_owned(),
                    s(block, "/name").to_owned(),
                    arguments,
                ));
            }
            "thinking" | "redacted_thinking" => r.reasoning.push(block.clone()),
            _ => {}
        }
    }
    r.stop = match s(doc, "/stop_reason") {
        "max_tokens" => Stop::Length,
        "refusal" => Stop::Refused,
        "end_turn" | "tool_use" | "stop_sequence" | "" => Stop::Finished,
        other => Stop::Other(other.to_owned()),
    };
    let usage = &doc["usage"];
    r.usage_reported = usage.as_object().is_some_and(|m| !m.is_empty());
    r.cached_tokens = u(usage, "/cache_read_input_tokens");
    // Anthropic counts cache reads apart from `input_tokens`; Warrant's input includes them.
    r.input_tokens = u(usage, "/input_tokens") + r.cached_tokens;
    r.output_tokens = u(usage, "/output_tokens");
    Ok(r)
}

// ---- Gemini generateContent ----

fn gemini_request(c: &Conversation, s: &Settings) -> Value {
    let mut contents = vec![json!({"role": "user", "parts": [{"text": c.opening}]})];
    for t in &c.turns {
        match t {
            Turn::Call {
                name,
                arguments,
                reasoning,
                ..
            } => {
                let mut part =
                    json!({"functionCall": {"name": name, "args": as_object(arguments)}});
                // The thought signature goes back with its call, to Gemini only.
                if let Some(sig) = reasoning.iter().find_map(|r| r.get("thoughtSignature")) {
                    set(&mut part, "thoughtSignature", sig.clone());
                }
                contents.push(json!({"role": "model", "parts": [part]}));
            }
            Turn::Result { name, content, .. } => contents.push(json!({"role": "user", "parts": [
                {"functionResponse": {"name": name, "response": as_object(content)}}
            ]})),
        }
    }
    let declarations: Vec<Value> = c
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": &*t.schema}))
        .collect();
    let mut generation = json!({"maxOutputTokens": s.max_output_tokens});
    if let Some(ReasoningSetting::Budget(b)) = &s.reasoning {
        set(
            &mut generation,
            "thinkingConfig",
            json!({"thinkingBudget": b}),
        );
    }
    json!({
        "systemInstruction": {"parts": [{"text": c.system}]},
        "contents": contents,
        "tools": [{"functionDeclarations": declarations}],
        "generationConfig": generation,
    })
}

/// Folds a Gemini stream (each event a partial response) into one response.
fn fold_gemini(text: &str) -> Result<Value, Unreadable> {
    let mut parts: Vec<Value> = Vec::new();
    let mut finish: Option<String> = None;
    let mut usage = Value::Null;
    let mut feedback = Value::Null;
    for (_, data) in events(text) {
        let chunk = data_json(&data)?;
        if let Some(e) = chunk.get("error") {
            return Err(unreadable(
                Code::ModelError,
                format!("the stream carried an error: {e}"),
            ));
        }
        if let Some(p) = chunk
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array)
        {
            parts.extend(p.iter().cloned());
        }
        if let Some(f) = chunk
            .pointer("/candidates/0/finishReason")
            .and_then(Value::as_str)
        {
            finish = Some(f.to_owned());
        }
        if let Some(u) = chunk.get("usageMetadata") {
            usage = u.clone();
        }
        if let Some(f) = chunk.get("promptFeedback") {
            feedback = f.clone();
        }
    }
    if finish.is_none() && feedback.get("blockReason").is_none() {
        return Err(incomplete("a `finishReason`"));
    }
    Ok(json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
        "usageMetadata": usage,
        "promptFeedback": feedback,
    }))
}

fn read_gemini(doc: &Value) -> Result<Reply, Unreadable> {
    if let Some(e) = doc.get("error") {
        return Err(unreadable(
            Code::ModelError,
            format!("the answer is an error: {e}"),
        ));
    }
    let mut r = Reply::new();
    if let Some(reason) = doc
        .pointer("/promptFeedback/blockReason")
        .and_then(Value::as_str)
    {
        r.refusal = Some(format!("the prompt was blocked ({reason})"));
    }
    let parts = doc
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array);
    for (i, part) in parts.into_iter().flatten().enumerate() {
        if part.get("thought") == Some(&Value::Bool(true)) {
            continue;
        }
        if let Some(call) = part.get("functionCall") {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("g{i}"));
            if let Some(sig) = part.get("thoughtSignature") {
                r.reasoning.push(json!({"thoughtSignature": sig}));
            }
            r.calls
                .push((id, s(call, "/name").to_owned(), call["args"].to_string()));
        } else {
            r.text.push_str(s(part, "/text"));
        }
    }
    r.stop = match s(doc, "/candidates/0/finishReason") {
        "MAX_TOKENS" => Stop::Length,
        "SAFETY" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" => Stop::Refused,
        "STOP" | "" => Stop::Finished,
        other => Stop::Other(other.to_owned()),
    };
    let usage = &doc["usageMetadata"];
    r.usage_reported = usage.as_object().is_some_and(|m| !m.is_empty());
    r.input_tokens = u(usage, "/promptTokenCount");
    r.reasoning_tokens = u(usage, "/thoughtsTokenCount");
    r.output_tokens = u(usage, "/candidatesTokenCount") + r.reasoning_tokens;
    r.cached_tokens = u(usage, "/cachedContentTokenCount");
    Ok(r)
}

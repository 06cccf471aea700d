//! What a client is told of its call: the upstream's result as it came, or a tool error
//! (`isError: true`) saying in words what stopped it — never a protocol error, which some
//! clients treat as the server failing.

use rmcp::model::{CallToolResult, ContentBlock as Content};
use serde_json::Value;
use warrant_core::event::{CallStatus, Fault};
use warrant_core::fold::CallRecord;
use warrant_core::projection::CallView;

/// A tool error with this text.
pub(crate) fn error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(text.into())])
}

/// The result of a call as the run recorded it.
pub(crate) fn of_view(view: Option<&CallView>) -> CallToolResult {
    let Some(view) = view else {
        return error("Warrant did not make this call (the session's log has no record of it)");
    };
    match (view.status, &view.output) {
        (Some(CallStatus::Ok), Some(output)) => success(output),
        (Some(CallStatus::Ok), None) => CallToolResult::success(Vec::new()),
        (status, _) => refused(
            &view.tool,
            status,
            view.fault.as_ref(),
            view.output.as_deref(),
        ),
    }
}

/// A call whose outcome is unknown: it is not repeated.
pub(crate) fn in_doubt(call: &CallRecord) -> CallToolResult {
    error(format!(
        "`{}`: its outcome is unknown (the upstream server's answer was lost after the call was sent). \
         Warrant does not send it again; it is recorded as in doubt for an operator to reconcile \
         (`warrant reconcile`). This session ends here.",
        call.tool
    ))
}

/// The session ended before this call was answered.
pub(crate) fn ended(reason: &str) -> CallToolResult {
    error(format!("This gateway session has ended: {reason}"))
}

/// An MCP server's whole answer, as the gateway's surfaces record it: content blocks,
/// `structuredContent`, `isError`, `_meta`, and nothing else.
fn whole_answer(output: &Value) -> Option<CallToolResult> {
    let fields = output.as_object()?;
    let known = [
        "content",
        "structuredContent",
        "isError",
        "_meta",
        "resultType",
    ];
    if !fields.get("content").is_some_and(Value::is_array)
        || fields.keys().any(|k| !known.contains(&k.as_str()))
    {
        return None;
    }
    let mut answer: CallToolResult = serde_json::from_value(output.clone()).ok()?;
    // A complete result, as this gateway says it to each client in its protocol (the field
    // is cleared for a client of an older one).
    answer.result_type = Some(rmcp::model::ResultType::COMPLETE);
    Some(answer)
}

/// What the upstream returned. INVARIANT (front doors forward faithfully): an MCP server's
/// whole answer goes to the client as it came; any other provider's result as its content
/// blocks, or as a structured value with its JSON as text beside it (as MCP asks of servers
/// that return structured content).
fn success(output: &Value) -> CallToolResult {
    if let Some(answer) = whole_answer(output) {
        return answer;
    }
    if let Ok(blocks) = serde_json::from_value::<Vec<Content>>(output.clone()) {
        return CallToolResult::success(blocks);
    }
    let text = serde_json::to_string(output).unwrap_or_default();
    let mut result = CallToolResult::success(vec![Content::text(text)]);
    if output.is_object() {
        result.structured_content = Some(output.clone());
    }
    result
}

fn refused(
    tool: &str,
    status: Option<CallStatus>,
    fault: Option<&Fault>,
    output: Option<&Value>,
) -> CallToolResult {
    let why = fault.map_or_else(
        || "no reason was recorded".to_owned(),
        |f| format!("{} [{}: {}]", f.message, f.layer, f.code),
    );
    let text = match status {
        Some(CallStatus::ProviderError) => match output {
            Some(out) => {
                // The upstream's own error, as it sent it.
                if let Some(answer) = whole_answer(out).filter(|a| a.is_error == Some(true)) {
                    return answer;
                }
                // The upstream's own error: its words, as it wrote them.
                match serde_json::from_value::<Vec<Content>>(out.clone()) {
                    Ok(blocks) => {
                        let mut result = CallToolResult::error(blocks);
                        result.structured_content = None;
                        return result;
                    }
                    Err(_) => format!("`{tool}` failed: {why}"),
                }
            }
            None => format!("`{tool}` failed: {why}"),
        },
        Some(CallStatus::StoppedByPolicy) => {
            format!("Warrant's policy stopped `{tool}`: {why}. The call was not made.")
        }
        Some(CallStatus::StoppedByExecutionControl) => {
            format!("Warrant's execution control stopped `{tool}`: {why}. The call was not made.")
        }
        Some(CallStatus::Rejected) => {
            format!("Warrant refused `{tool}`: {why}. The call was not made.")
        }
        Some(CallStatus::Cancelled) => format!("`{tool}` was cancelled: {why}"),
        Some(CallStatus::Halted) => {
            format!("Warrant halted `{tool}`: {why}. The call was not made.")
        }
        Some(other) => format!("`{tool}` ended `{}`: {why}", other.as_str()),
        None => format!("`{tool}` has not ended: {why}"),
    };
    error(text)
}

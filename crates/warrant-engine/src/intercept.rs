//! Interceptors shipped with the engine.

use serde_json::Value;
use warrant_core::ports::{CapabilityRequest, Interception, Interceptor};

/// Narrows a number in a tool's arguments to at most `max` (e.g. caps an amount). Calls
/// where the value is absent, not a number, or within the cap pass unchanged.
#[derive(Clone, Debug)]
pub struct CapNumber {
    name: String,
    tool: String,
    pointer: String,
    max: f64,
}

impl CapNumber {
    /// Caps the number at JSON pointer `pointer` in the arguments of `tool`.
    pub fn new(tool: &str, pointer: &str, max: f64) -> CapNumber {
        CapNumber {
            name: format!("cap {tool}{pointer} at {max}"),
            tool: tool.to_owned(),
            pointer: pointer.to_owned(),
            max,
        }
    }
}

impl Interceptor for CapNumber {
    fn name(&self) -> &str {
        &self.name
    }

    fn intercept(&self, request: &CapabilityRequest<'_>) -> Interception {
        if request.tool != self.tool {
            return Interception::Pass;
        }
        let Some(n) = request.args.pointer(&self.pointer).and_then(Value::as_f64) else {
            return Interception::Pass;
        };
        if n <= self.max {
            return Interception::Pass;
        }
        let mut args = request.args.clone();
        let capped = match exact_integer(self.max) {
            Some(n) => Value::from(n),
            None => serde_json::Number::from_f64(self.max).map_or(Value::Null, Value::Number),
        };
        if let Some(slot) = args.pointer_mut(&self.pointer) {
            *slot = capped;
        }
        Interception::Narrow {
            args,
            reason: format!("`{}` = {n} exceeds the cap of {}", self.pointer, self.max),
        }
    }
}

/// `n` as an integer, when it is a whole number small enough to convert exactly.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a whole number below 9e15 (< 2^53) converts to i64 exactly"
)]
fn exact_integer(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n.abs() < 9.0e15).then_some(n as i64)
}

/// Suppresses every call to the listed tools (a kill switch).
#[derive(Clone, Debug)]
pub struct HaltTools {
    tools: Vec<String>,
}

impl HaltTools {
    /// Halts these tools.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(tools: I) -> HaltTools {
        HaltTools {
            tools: tools.into_iter().map(Into::into).collect(),
        }
    }
}

impl Interceptor for HaltTools {
    fn name(&self) -> &str {
        "halt-tools"
    }

    fn intercept(&self, request: &CapabilityRequest<'_>) -> Interception {
        if self.tools.iter().any(|t| t == request.tool) {
            Interception::Halt {
                reason: format!("`{}` is switched off", request.tool),
            }
        } else {
            Interception::Pass
        }
    }
}

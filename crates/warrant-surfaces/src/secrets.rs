//! The operator's secrets: values a server reads itself (from its environment or from files)
//! and hands only to the providers the operator paired them with. A registered provider's
//! settings name them as `${NAME}`; whatever the provider says back (a result, an error, a
//! tool's description, a line on its stderr) has every secret value replaced by
//! `[secret NAME]` before anyone records or shows it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use warrant_core::ids::{CallId, HandleId};
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Recovery, Surface, SurfaceError,
};

/// Shortest secret value redacted: a shorter one would match ordinary text everywhere (and
/// is no secret worth the name).
const REDACTED_MIN: usize = 4;

/// Secret values by name.
#[derive(Clone, Default)]
pub struct Secrets {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: a value never reaches a log through a debug print.
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl Secrets {
    /// These values, by name.
    pub fn new(values: BTreeMap<String, String>) -> Secrets {
        Secrets { values }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// `value` with every `${NAME}` (or a whole `$NAME`) replaced by the secret `NAME`; a name
    /// that is not a secret is an error naming it.
    pub fn expand(&self, value: &str) -> Result<String, String> {
        crate::expand_with(value, |name| {
            self.get(name).map(str::to_owned).ok_or_else(|| {
                format!("`{name}` is not one of the operator's secrets (`secrets:` declares them)")
            })
        })
    }

    /// `text` with every secret value replaced by `[secret NAME]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (name, value) in &self.values {
            if value.len() >= REDACTED_MIN && out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[secret {name}]")));
            }
        }
        out
    }

    /// `value` with every string (object keys included) redacted.
    pub fn redact_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redact(s).into_owned()),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.redact_value(v)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (self.redact(k).into_owned(), self.redact_value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn redact_error(&self, mut e: SurfaceError) -> SurfaceError {
        e.message = self.redact(&e.message).into_owned();
        e.output = e.output.as_ref().map(|o| self.redact_value(o));
        e
    }
}

/// A provider whose every word passes through [`Secrets::redact`] on its way in: its
/// observations (tool descriptions and schemas), results and errors.
pub struct Redacted {
    inner: Arc<dyn Surface>,
    secrets: Arc<Secrets>,
}

impl Redacted {
    /// `inner`, redacted with `secrets`.
    pub fn new(inner: Arc<dyn Surface>, secrets: Arc<Secrets>) -> Redacted {
        Redacted { inner, secrets }
    }
}

impl Surface for Redacted {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(async move {
            match self.inner.observe().await {
                Ok(o) => {
                    let actions = o
                        .actions
                        .iter()
                        .map(|a| {
                            let mut a = a.clone();
                            a.description = self.secrets.redact(&a.description).into_owned();
                            a.input_schema = Arc::new(self.secrets.redact_value(&a.input_schema));
                            a
                        })
                        .collect();
                    Ok(Observation {
                        version: o.version,
                        actions,
                        page: o.page,
                    })
                }
                Err(e) => Err(self.secrets.redact_error(e)),
            }
        })
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        Box::pin(async move {
            match self.inner.invoke(call).await {
                Ok(out) => Ok(CallOutput {
                    output: self.secrets.redact_value(&out.output),
                    is_error: out.is_error,
                }),
                Err(e) => Err(self.secrets.redact_error(e)),
            }
        })
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        self.inner.is_current(version)
    }

    fn revive(&self) -> BoxFuture<'_, warrant_core::ports::Restart> {
        Box::pin(async move {
            let mut restart = self.inner.revive().await;
            restart.error = restart.error.map(|e| self.secrets.redact_error(e));
            restart
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.inner.shutdown()
    }

    fn retire(&self, handles: &[HandleId]) {
        self.inner.retire(handles);
    }

    fn cancel(&self, call: CallId) {
        self.inner.cancel(call);
    }

    /// What the provider asked the person, with every secret hidden, as its results are.
    fn asked(
        &self,
        run: &warrant_core::ids::RunId,
        call: CallId,
    ) -> Vec<warrant_core::ports::Asked> {
        self.inner
            .asked(run, call)
            .into_iter()
            .map(|a| warrant_core::ports::Asked {
                message: self.secrets.redact(&a.message).into_owned(),
                schema: Arc::new(self.secrets.redact_value(&a.schema)),
                action: a.action,
                answer: a.answer.map(|v| Arc::new(self.secrets.redact_value(&v))),
            })
            .collect()
    }

    fn unsupported(&self) -> Vec<String> {
        self.inner
            .unsupported()
            .iter()
            .map(|l| self.secrets.redact(l).into_owned())
            .collect()
    }

    fn recovery(&self, tool: &str) -> Recovery {
        self.inner.recovery(tool)
    }

    fn lookup(&self, call: Invocation) -> BoxFuture<'_, Result<Option<CallOutput>, SurfaceError>> {
        Box::pin(async move {
            match self.inner.lookup(call).await {
                Ok(found) => Ok(found.map(|out| CallOutput {
                    output: self.secrets.redact_value(&out.output),
                    is_error: out.is_error,
                })),
                Err(e) => Err(self.secrets.redact_error(e)),
            }
        })
    }

    fn on_change(&self, changed: Arc<dyn Fn() + Send + Sync>) {
        self.inner.on_change(changed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        Secrets::new(
            [
                ("TOKEN".to_owned(), "s3cr3t-token".to_owned()),
                ("PIN".to_owned(), "12".to_owned()),
            ]
            .into_iter()
            .collect(),
        )
    }

    #[test]
    fn a_secret_expands_only_from_the_declared_ones() {
        let s = secrets();
        assert_eq!(s.expand("Bearer ${TOKEN}").unwrap(), "Bearer s3cr3t-token");
        assert_eq!(s.expand("$TOKEN").unwrap(), "s3cr3t-token");
        // The process's environment is not a secret of the operator's.
        let e = s.expand("${PATH}").unwrap_err();
        assert!(e.contains("`PATH`") && e.contains("secrets:"), "{e}");
    }

    #[test]
    fn every_secret_value_is_redacted_wherever_it_appears() {
        let s = secrets();
        let v = serde_json::json!({"env": ["TOKEN=s3cr3t-token"], "s3cr3t-token": 12});
        assert_eq!(
            s.redact_value(&v),
            serde_json::json!({"env": ["TOKEN=[secret TOKEN]"], "[secret TOKEN]": 12})
        );
        // Too short to be told from ordinary text: left as it is.
        assert_eq!(s.redact("room 12"), "room 12");
        assert!(!format!("{s:?}").contains("s3cr3t"));
    }
}

//! What rules a run: its authority and its execution control. A new run is ruled by the
//! engine's own (what its embedder or operator set) together with what its spec names
//! (`policy:`, `execution_control:`), built by the engine's [`PolicySource`]; a re-entered
//! run by exactly what it recorded, rebuilt, or not at all (never by something weaker).

use std::sync::Arc;

use serde_json::{Value, json};
use warrant_core::Spec;
use warrant_core::ids::RunId;
use warrant_core::ports::{Authority, ExecutionControl, PolicySource};

use crate::authority::{AllOf, AllowAll, Floor, RuleList};
use crate::scope::Scope;
use crate::{ControlSetting, Engine, EngineError};

/// How long execution control has to rule on a call when the spec does not say.
const CONTROL_TIMEOUT_MS: u64 = 2_000;

/// The authority and execution control of one run.
#[derive(Clone)]
pub(crate) struct Rules {
    pub(crate) authority: Arc<dyn Authority>,
    pub(crate) control: Option<ControlSetting>,
    /// Each run's own authority from the root down to this one: what rules a child of it
    /// besides the child's own.
    pub(crate) lineage: Vec<Arc<dyn Authority>>,
    /// The most this run may call, when it is a child with one.
    pub(crate) allowance: Option<crate::authority::Allowance>,
}

impl Rules {
    /// The rules of a run that is no child.
    pub(crate) fn root(authority: Arc<dyn Authority>, control: Option<ControlSetting>) -> Rules {
        Rules {
            lineage: vec![authority.clone()],
            authority,
            control,
            allowance: None,
        }
    }

    /// The execution control as `run_started` records it.
    pub(crate) fn describe_control(&self) -> Option<Value> {
        self.control.as_ref().map(|c| {
            json!({
                "required": true,
                "configured": c.control.is_some(),
                "timeout_ms": c.timeout_ms,
                "control": c.control.as_ref().and_then(|x| x.describe()),
            })
        })
    }
}

impl Engine {
    /// The engine's own authority and execution control, as they are (a replay rules with the
    /// recorded ones).
    pub(crate) fn own_rules(&self) -> Rules {
        Rules::root(self.authority.clone(), self.control.clone())
    }

    /// The rules of a new run of `spec`: the engine's authority with the spec's policies (any
    /// answer but allow wins), and the engine's execution control or else the spec's.
    pub(crate) fn rules_for(&self, spec: &Arc<Spec>) -> Result<Rules, EngineError> {
        let paths: Vec<String> = spec
            .policy
            .iter()
            .chain(self.policy_files.iter())
            .cloned()
            .collect();
        let mut parts: Vec<Arc<dyn Authority>> = Vec::new();
        if !self.floor.is_empty() {
            let floor = self
                .source()?
                .policies(&self.floor, spec.trusted_providers())
                .map_err(|e| EngineError::Rules(format!("the operator's policy floor: {e}")))?;
            parts.push(Arc::new(Floor::new(floor)));
        }
        if !self.authority_is_default() {
            parts.push(self.authority.clone());
        }
        if !paths.is_empty() {
            let policies = self
                .source()?
                .policies(&paths, spec.trusted_providers())
                .map_err(|e| EngineError::Rules(format!("policy: {e}")))?;
            parts.push(policies);
        }
        if !self.narrowing.is_empty() {
            let narrowing = self
                .source()?
                .policies(&self.narrowing, spec.trusted_providers())
                .map_err(|e| EngineError::Rules(format!("policies: {e}")))?;
            parts.push(narrowing);
        }
        // The spec's grants and profile, when it has any.
        if let Some(scope) = Scope::of(spec) {
            parts.push(Arc::new(scope));
        }
        let authority = match parts.len() {
            0 => self.authority.clone(),
            1 => parts.remove(0),
            _ => Arc::new(AllOf::new(parts)),
        };
        let control = match (&self.control, &spec.execution_control) {
            (Some(own), _) => Some(own.clone()),
            (None, None) => None,
            (None, Some(c)) => Some(ControlSetting {
                control: match &c.url {
                    None => None,
                    Some(url) => Some(self.source()?.control(url).map_err(|e| {
                        EngineError::Rules(format!("the spec's `execution_control.url`: {e}"))
                    })?),
                },
                timeout_ms: c.timeout_ms,
            }),
        };
        Ok(Rules::root(authority, control))
    }

    /// The authority a new run of `spec` would have now: what a front door asks, before any
    /// run, which tools a principal could ever be allowed to call.
    pub fn authority_for(&self, spec: &Arc<Spec>) -> Result<Arc<dyn Authority>, EngineError> {
        Ok(self.rules_for(spec)?.authority)
    }

    /// The rules of `run` re-entered: what its embedder set on this engine, when it did
    /// (`with_authority`, `with_execution_control`: a tightened policy rules the calls ruled
    /// on again), with the spec's; else exactly what the run recorded in `run_started`,
    /// rebuilt. Fails closed: a recorded authority or control that cannot be rebuilt exactly
    /// refuses the re-entry.
    pub(crate) fn rules_recorded(
        &self,
        run: &RunId,
        spec: &Arc<Spec>,
        authority: Option<&Value>,
        control: Option<&Value>,
    ) -> Result<Rules, EngineError> {
        let refuse = |what: &str, d: Option<&Value>, e: String| {
            EngineError::Rules(format!(
                "run `{run}` was ruled by {what} {} that cannot be rebuilt ({e}): not resuming it under weaker rules",
                d.map_or_else(|| "supplied by its embedder".to_owned(), Value::to_string)
            ))
        };
        let own = (self.authority_set || self.control.is_some())
            .then(|| self.rules_for(spec))
            .transpose()?;
        let authority = match (&own, authority) {
            (Some(own), _) if self.authority_set => own.authority.clone(),
            (_, None) => {
                return Err(refuse(
                    "an authority",
                    None,
                    "re-enter it with an engine that has it".into(),
                ));
            }
            (_, Some(d)) => rebuild_authority(d, self.policies.as_deref(), spec)
                .map_err(|e| refuse("the authority", Some(d), e))?,
        };
        let control = match (&own, control) {
            (Some(own), _) if self.control.is_some() => own.control.clone(),
            (_, None) => None,
            (_, Some(d)) => Some(
                rebuild_control(d, self.policies.as_deref())
                    .map_err(|e| refuse("the execution control", Some(d), e))?,
            ),
        };
        Ok(Rules::root(authority, control))
    }

    fn source(&self) -> Result<&dyn PolicySource, EngineError> {
        self.policies.as_deref().ok_or_else(|| {
            EngineError::Rules(
                "the spec names policies or an execution control, and this engine has no policy \
                 source to build them (`Engine::with_policies`): not running it unguarded"
                    .into(),
            )
        })
    }

    fn authority_is_default(&self) -> bool {
        self.authority
            .describe()
            .is_some_and(|d| d.get("allow_all").is_some())
    }
}

/// The authority a run of `spec` recorded (`Authority::describe`), rebuilt exactly: the
/// built-in ones here (the spec's own grants and profile among them), the rest by `source`.
pub fn rebuild_authority(
    d: &Value,
    source: Option<&dyn PolicySource>,
    spec: &Arc<Spec>,
) -> Result<Arc<dyn Authority>, String> {
    if d.get("allow_all").is_some() {
        return Ok(Arc::new(AllowAll));
    }
    if let Some(rules) = RuleList::from_description(d) {
        return Ok(Arc::new(rules?));
    }
    if let Some(parts) = d.get("all_of") {
        let parts = parts
            .as_array()
            .ok_or_else(|| format!("`all_of` is {parts}, not a list"))?
            .iter()
            .map(|p| rebuild_authority(p, source, spec))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Arc::new(AllOf::new(parts)));
    }
    if let Some(inner) = d.get("floor") {
        return Ok(Arc::new(Floor::new(rebuild_authority(
            inner, source, spec,
        )?)));
    }
    if let Some(recorded) = d.get("scope") {
        let scope = Scope::of(spec).ok_or("the spec has no grant and no profile")?;
        if scope
            .describe()
            .and_then(|s| s.get("scope").cloned())
            .as_ref()
            != Some(recorded)
        {
            return Err(format!(
                "the spec's scope is not the one recorded ({recorded})"
            ));
        }
        return Ok(Arc::new(scope));
    }
    match source.and_then(|s| s.rebuild_authority(d)) {
        Some(rebuilt) => rebuilt,
        None => Err("this engine does not know that kind of authority".into()),
    }
}

/// The execution control a run recorded, rebuilt exactly.
fn rebuild_control(d: &Value, source: Option<&dyn PolicySource>) -> Result<ControlSetting, String> {
    let timeout_ms = match d.get("timeout_ms") {
        None => CONTROL_TIMEOUT_MS,
        Some(t) => t
            .as_u64()
            .ok_or_else(|| format!("its `timeout_ms` is {t}, not a number"))?,
    };
    if d.get("configured").and_then(Value::as_bool) != Some(true) {
        return Ok(ControlSetting {
            control: None,
            timeout_ms,
        });
    }
    let recorded = d
        .get("control")
        .ok_or("it was configured, and its description is missing")?;
    let control: Arc<dyn ExecutionControl> = match source.and_then(|s| s.rebuild_control(recorded))
    {
        Some(rebuilt) => rebuilt?,
        None => return Err("this engine does not know that kind of execution control".into()),
    };
    Ok(ControlSetting {
        control: Some(control),
        timeout_ms,
    })
}

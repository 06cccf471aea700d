//! The projection: the bounded, immutable context a decider sees for one decision, built from
//! the run's state. Its size does not grow with the length of the run: recent evidence is a
//! fixed window and carried state is bounded by the spec.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::event::{ActionRecord, CallStatus, Fault};
use crate::fold::{CallRecord, RunState};
use crate::ids::{CallId, HandleId, RunId, StepId};
use crate::spec::Spec;

/// The context for one decision.
#[derive(Clone, Debug, Serialize)]
pub struct Projection {
    /// The run.
    pub run_id: RunId,
    /// The frozen spec (objective, steps, limits).
    #[serde(skip)]
    pub spec: Arc<Spec>,
    /// Index of the step being decided.
    #[serde(skip)]
    pub step_index: usize,
    /// The step being decided.
    pub step: StepId,
    /// The decision being made (1-based, per run).
    pub decision_no: u32,
    /// The decision being made within the step (1-based).
    pub step_decision_no: u32,
    /// The observation version shown.
    pub version: String,
    /// The actions offered, in observation order; the handle of action `i` is
    /// `h<decision_no>.<i>`.
    pub actions: Arc<[ActionRecord]>,
    /// Tools of the step the run's rules would refuse whatever the arguments (Cedar, partially
    /// evaluated for its principal): a live model is not offered them. A call of one is still
    /// ruled on, and refused.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub hidden: Arc<[String]>,
    /// Carried values with their lineage.
    pub carried: Vec<CarriedView>,
    /// The most recent calls of this step, oldest first. A finished call's view is made once
    /// and shared by every projection that shows it.
    pub recent: Vec<Arc<CallView>>,
    /// Decisions left in the run and in the step.
    pub decisions_left: u32,
    /// Decisions left in the step.
    pub step_decisions_left: u32,
    /// Set when the decider is asked for the run's plan (`plan_first`): the steps to grant,
    /// from the spec alone. It is shown nothing a provider wrote, and answers with a
    /// `Decision::Plan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planning: Option<Vec<PlanStep>>,
    /// What the step's web page shows of itself (URL, title): text the page wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<crate::event::PageSnapshot>,
    /// The questions the run asked the person it acts for and their answers (the person's
    /// words, trusted as the objective is), oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<crate::fold::Question>,
}

/// A step to propose a grant for.
#[derive(Clone, Debug, Serialize)]
pub struct PlanStep {
    /// The step.
    pub step: StepId,
    /// What it is for.
    pub intent: String,
    /// The tools it allows.
    pub tools: Vec<String>,
}

impl Projection {
    /// This projection turned into the request for the run's plan: the steps with no grant of
    /// their own, and nothing a provider wrote (no actions, no results, no carried values).
    pub fn for_planning(mut self) -> Projection {
        let steps = self
            .spec
            .steps
            .iter()
            .filter(|s| s.grant.is_none())
            .map(|s| PlanStep {
                step: s.id.clone(),
                intent: s.intent.clone(),
                tools: s.tools.clone(),
            })
            .collect();
        self.planning = Some(steps);
        self.actions = Arc::from(Vec::new());
        self.recent.clear();
        self.carried.clear();
        self.page = None;
        self
    }
}

/// A carried value as the decider sees it.
#[derive(Clone, Debug, Serialize)]
pub struct CarriedView {
    /// `step.output`.
    pub name: String,
    /// The value.
    pub value: Arc<Value>,
    /// The call it came from.
    pub call: CallId,
}

/// A recent call as the decider sees it: what it proposed, what ran, what came back.
#[derive(Clone, Debug, Serialize)]
pub struct CallView {
    /// The call.
    pub call: CallId,
    /// Index of its step in the spec.
    #[serde(skip)]
    pub step: usize,
    /// The tool.
    pub tool: String,
    /// The arguments the decider proposed.
    pub proposed: Arc<Value>,
    /// The arguments executed, when they differ from the proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executed: Option<Arc<Value>>,
    /// How it ended.
    pub status: Option<CallStatus>,
    /// The provider's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Arc<Value>>,
    /// The structured error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Its result shows only the typed fields the step extracts (`quarantine`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
}

impl Projection {
    /// The untrusted providers whose text this projection shows the decider: the outputs of
    /// its recent calls and the errors their providers wrote, and the carried values their
    /// outputs gave (a provider is untrusted unless the spec trusts it).
    /// Sorted, each once.
    pub fn shows_untrusted<'a>(&'a self, state: &'a RunState) -> Vec<&'a str> {
        let recent = self
            .recent
            .iter()
            // Typed fields carry no instruction: a quarantined result does not taint.
            .filter(|c| !c.quarantined)
            .filter(|c| {
                c.output.is_some()
                    || c.fault
                        .as_ref()
                        .is_some_and(|f| f.layer == crate::event::Layer::Provider)
            })
            .filter_map(|c| state.call(c.call));
        let carried = self.carried.iter().filter_map(|c| state.call(c.call));
        // Most calls are to one or two providers: each is judged once. (A filtered iterator
        // would make its list grow as it went: room for every one is made at once.)
        let mut providers: Vec<&str> = Vec::with_capacity(self.recent.len() + self.carried.len());
        providers.extend(recent.chain(carried).map(|c| state.text_source(c)));
        providers.sort_unstable();
        providers.dedup();
        providers.retain(|p| !p.is_empty() && !self.spec.trusts(p));
        providers
    }

    /// Whose untrusted text the actions this projection shows carry as descriptions, and the
    /// page's snapshot of itself: the step's provider unless the spec trusts it, and the third
    /// party of each tool a third party's script registered (rules 3: text the decider reads,
    /// as untrusted as an output). Sorted, each once.
    pub fn describes_untrusted<'a>(&self, state: &'a RunState) -> Vec<std::borrow::Cow<'a, str>> {
        let provider = state.provider_of(self.step_index);
        if provider.is_empty() {
            return Vec::new();
        }
        // Each source once, then judged once: a provider's own tools borrow its name, and only
        // a third party's name is made.
        let mut sources: Vec<std::borrow::Cow<'a, str>> = self
            .actions
            .iter()
            .filter(|a| !a.description.trim().is_empty())
            .map(|a| crate::event::text_source(provider, a.origin.as_ref()))
            .chain(self.page.is_some().then_some(provider.into()))
            .collect();
        sources.sort_unstable();
        sources.dedup();
        sources.retain(|source| !self.spec.trusts(source));
        sources
    }

    /// Builds the projection for the next decision of step `step_index`, showing `actions` of
    /// observation `version`. `None` when the run has no such step.
    pub fn build(
        state: &RunState,
        spec: Arc<Spec>,
        step_index: usize,
        version: String,
        actions: Arc<[ActionRecord]>,
    ) -> Option<Projection> {
        let step = spec.steps.get(step_index)?;
        let s = state.steps.get(step_index)?;
        let step_max = step.decisions_max.unwrap_or(spec.limits.step_decisions_max);
        let carried = state
            .carried
            .iter()
            .map(|(name, c)| CarriedView {
                name: name.clone(),
                value: c.value.clone(),
                call: c.lineage.call,
            })
            .collect();
        let mut recent = Vec::with_capacity(state.recent.len());
        recent.extend(state.recent.iter().filter_map(|id| state.call(*id)).map(
            |c| match c.status {
                // What a view shows of a call does not change once it has finished.
                Some(_) => c.view.get_or_init(|| Arc::new(view_of(c, &spec))).clone(),
                None => Arc::new(view_of(c, &spec)),
            },
        ));
        // Arguments the step binds to carried values are Warrant's to fill (and check): the
        // decider is not asked for them.
        let actions = if step.inputs.is_empty() {
            actions
        } else {
            let bound: Vec<&str> = step.inputs.keys().map(String::as_str).collect();
            actions
                .iter()
                .map(|a| match hide_inputs(&a.input_schema, &bound) {
                    Some(schema) => ActionRecord {
                        input_schema: Arc::new(schema),
                        ..a.clone()
                    },
                    None => a.clone(),
                })
                .collect()
        };
        Some(Projection {
            run_id: state.run_id.clone().unwrap_or_else(|| RunId(String::new())),
            step: step.id.clone(),
            decision_no: state.decisions + 1,
            step_decision_no: s.decisions + 1,
            version,
            actions,
            hidden: no_tools(),
            carried,
            recent,
            decisions_left: spec.limits.decisions_max.saturating_sub(state.decisions),
            step_decisions_left: step_max.saturating_sub(s.decisions),
            planning: None,
            page: None,
            answers: state
                .questions
                .iter()
                .filter(|q| q.answer.is_some())
                .cloned()
                .collect(),
            step_index,
            spec,
        })
    }

    /// The handle this projection issued for `tool`.
    pub fn handle_for(&self, tool: &str) -> Option<HandleId> {
        handle_in(&self.actions, self.decision_no, tool)
    }

    /// The last call of this step, if any.
    pub fn last_call(&self) -> Option<&CallView> {
        self.recent.last().map(Arc::as_ref)
    }
}

/// No tools, shared: a projection that hides none allocates nothing for it.
pub fn no_tools() -> Arc<[String]> {
    static NONE: std::sync::LazyLock<Arc<[String]>> = std::sync::LazyLock::new(|| Arc::from([]));
    NONE.clone()
}

/// `schema` without the top-level properties `names` (gone from `properties` and `required`),
/// or `None` when it has none of them: how an input the host or the spec supplies is kept
/// out of what the decider is asked for.
pub fn hide_inputs(schema: &Value, names: &[&str]) -> Option<Value> {
    let properties = schema.get("properties")?.as_object()?;
    if !names.iter().any(|n| properties.contains_key(*n)) {
        return None;
    }
    let mut out = schema.clone();
    if let Some(props) = out.get_mut("properties").and_then(Value::as_object_mut) {
        props.retain(|k, _| !names.contains(&k.as_str()));
    }
    if let Some(required) = out.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r.as_str().is_none_or(|r| !names.contains(&r)));
    }
    Some(out)
}

/// The handle that decision `decision` issued for `tool`, among the actions it was shown.
pub fn handle_in(actions: &[ActionRecord], decision: u32, tool: &str) -> Option<HandleId> {
    actions
        .iter()
        .position(|a| a.name == tool)
        .and_then(|i| u16::try_from(i).ok())
        .map(|action| HandleId { decision, action })
}

/// What a projection shows of call `c`.
fn view_of(c: &CallRecord, spec: &Spec) -> CallView {
    // A quarantined tool's result is shown only as its typed fields, and the
    // provider's own words in an error not at all.
    let quarantine = spec
        .steps
        .get(c.step)
        .and_then(|s| s.quarantine.get(&c.tool));
    let (output, fault) = match quarantine {
        None => (c.output.clone(), c.fault.as_deref().cloned()),
        Some(fields) => (
            c.output.as_ref().map(|o| {
                Arc::new(Value::Object(
                    fields.iter().map(|(k, x)| (k.clone(), x.from(o))).collect(),
                ))
            }),
            c.fault.as_ref().map(|f| Fault {
                message: "the provider answered with an error (its words are \
                              quarantined)"
                    .into(),
                ..(**f).clone()
            }),
        ),
    };
    CallView {
        call: c.id,
        step: c.step,
        tool: c.tool.clone(),
        proposed: c.proposed.clone(),
        // The same `Arc` is the same arguments: no need to compare them.
        executed: c
            .executed
            .as_ref()
            .filter(|e| !Arc::ptr_eq(e, &c.proposed) && **e != c.proposed)
            .cloned(),
        status: c.status,
        output,
        fault,
        quarantined: quarantine.is_some(),
    }
}

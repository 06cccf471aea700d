//! The run report `warrant.run-report/1`: the evidence of one run, built from its folded log
//! only, as JSON (with a JSON Schema) and as text for people.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canon;
use crate::event::{
    BuildInfo, CallStatus, DeciderIdentity, Effect, Event, EventKind, Fault, Layer, Lineage,
    Outcome, StepEnd, UsageSum,
};
use crate::fold::{RunState, StepAnswer, StepState, StepStatus};
use crate::ids::{CallId, RunId, StepId};
use crate::spec::{CommitRule, Spec, StepSpec};

/// The report's format version.
pub const REPORT_FORMAT: &str = "warrant.run-report/1";

/// The evidence report of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunReport {
    /// `warrant.run-report/1`.
    pub format: String,
    /// The run.
    pub run_id: RunId,
    /// The spec it ran.
    pub spec: SpecRef,
    /// Who decided.
    pub decider: DeciderIdentity,
    /// The build of Warrant that started the run (absent for a run recorded before builds
    /// were named, or by an embedder that names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildInfo>,
    /// `running`, `waiting`, `ready`, or the outcome's name (the vocabulary of `warrant runs`).
    #[schemars(with = "String")]
    pub status: crate::status::RunStatus,
    /// How it ended (absent while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The run reached its terminal state within the spec: different valid routes both conform.
    pub conformant: bool,
    /// `provider/effect:tool` of each successful call, in order.
    pub route: Vec<String>,
    /// The route joined by ` -> `.
    pub route_key: String,
    /// Per step.
    pub steps: Vec<StepReport>,
    /// Carried values with lineage.
    pub carried: Vec<CarriedReport>,
    /// The terminal predicate, requirement by requirement.
    pub terminal: Vec<RequirementReport>,
    /// Every failure, attributed.
    pub failures: Vec<FailureReport>,
    /// Commits whose effect is not settled as happened: in doubt, or reconciled as not
    /// performed (and whether they were sent again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsettled: Vec<UnsettledReport>,
    /// The decider's final answer: its last `done` summary or decline reason (its words, not
    /// evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<StepAnswer>,
    /// What this build could not read in the log (events of unknown types).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Timings and counts.
    pub timings: Timings,
    /// Tokens and cost the decisions reported, the children's spending and the limits on
    /// both (absent in a report written before usage was reported).
    #[serde(default)]
    pub usage: UsageReport,
    /// The run that delegated to this one, when it is a child: parent run and step, depth,
    /// ancestors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentReport>,
    /// The child runs this run delegated to: each one's outcome (with its own attribution),
    /// what it was given and what it spent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildReport>,
    /// The questions the decider asked the person the run acts for, each with its answer
    /// once given (and who gave it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<crate::fold::Question>,
    /// What providers asked the person during calls (an MCP server's elicitation, passed on
    /// by the gateway), and what they did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_asked: Vec<crate::fold::ProviderQuestion>,
}

/// Where a child run sits in its tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParentReport {
    /// The parent run.
    pub run: RunId,
    /// Its delegating step.
    pub step: StepId,
    /// The depth (the root's children are 1).
    pub depth: u32,
    /// The ancestors, root first.
    pub chain: Vec<RunId>,
}

/// A child run, as its parent's report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChildReport {
    /// The child.
    pub run: RunId,
    /// The delegating step.
    pub step: StepId,
    /// How it ended (absent while it runs or waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// What it was given.
    pub granted: crate::event::Budget,
    /// What it spent (counted against this run).
    pub spent: crate::event::Spent,
}

/// A commit whose effect is not settled as happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnsettledReport {
    /// The call.
    pub call: CallId,
    /// The step.
    pub step: StepId,
    /// The provider.
    pub provider: String,
    /// The tool.
    pub tool: String,
    /// The arguments it was dispatched with.
    pub args: Arc<Value>,
    /// `in_doubt` or `not_performed`.
    pub state: String,
    /// For a call in doubt: what is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<String>,
    /// For a call not performed: the call that sent it again, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resent_by: Option<CallId>,
}

impl UnsettledReport {
    /// What is known of it: in doubt (and what was found), or did not happen (and whether it
    /// was sent again).
    pub fn detail(&self) -> String {
        match (self.state.as_str(), &self.known, self.resent_by) {
            ("in_doubt", Some(k), _) => format!("in doubt: {k}"),
            ("in_doubt", None, _) => "in doubt".to_owned(),
            (_, _, Some(by)) => format!("did not happen; sent again as {by}"),
            _ => "did not happen; never sent again".to_owned(),
        }
    }
}

/// The spec a run ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpecRef {
    /// Its id.
    pub id: String,
    /// Its digest.
    pub hash: String,
    /// Its objective.
    pub objective: String,
}

/// One step's evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepReport {
    /// The step.
    pub id: StepId,
    /// Its provider.
    pub provider: String,
    /// Counts toward terminal.
    pub required: bool,
    /// Must commit.
    pub commit_required: bool,
    /// `pending`, `running`, `attained`, `not_attained` or `skipped`.
    pub status: String,
    /// Why it was not attained or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// For a skipped step: the dependency not attained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<StepId>,
    /// Decisions taken in it.
    pub decisions: u32,
    /// Its calls.
    pub calls: Vec<CallReport>,
    /// Milliseconds it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// What the decider said when it ended the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<StepAnswer>,
    /// What its decisions reported they used (absent: none reported).
    #[serde(default, skip_serializing_if = "UsageSum::is_empty")]
    pub usage: UsageSum,
}

/// One call's evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallReport {
    /// The call.
    pub call: CallId,
    /// The tool.
    pub tool: String,
    /// Read or commit (absent when it never dispatched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    /// How it ended (absent while in flight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CallStatus>,
    /// Digest of the proposed arguments.
    pub proposed_digest: String,
    /// Digest of the executed arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed_digest: Option<String>,
    /// Where each executed argument value was observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<crate::provenance::ArgLabel>,
    /// The untrusted providers whose text the decider had read when it proposed the call
    /// (provenance rules 2; empty when its context was trusted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_taint: Vec<String>,
    /// The structured error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Milliseconds from start to finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

/// A carried value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CarriedReport {
    /// `step.output`.
    pub name: String,
    /// The value.
    pub value: Arc<Value>,
    /// Where it came from.
    pub lineage: Lineage,
}

/// One terminal requirement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequirementReport {
    /// The step.
    pub step: StepId,
    /// `commit` or `attained`.
    pub requirement: String,
    /// Met, judged from evidence.
    pub satisfied: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// While the run goes on, why a requirement is not met yet instead of a fault: its step
    /// waits for a person's `approval`, or a `reconciliation`, or is `running` or `not
    /// started`. Nothing failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
}

/// One attributed failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FailureReport {
    /// The layer blamed.
    pub layer: Layer,
    /// Stable code.
    pub code: String,
    /// For humans.
    pub message: String,
    /// The step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    /// The call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallId>,
}

/// Timings and counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Timings {
    /// Start, ms since the epoch.
    pub started_at_ms: u64,
    /// End, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<u64>,
    /// End (or last event) minus start, plus the time spent starting providers first.
    pub elapsed_ms: u64,
    /// Of that, the time spent before the run (and each re-entry) started: starting and
    /// connecting to providers.
    #[serde(default)]
    pub setup_ms: u64,
    /// Of the elapsed time, the run's driving time (deciding, calling, starting providers):
    /// what `limits.deadline_ms` bounds.
    #[serde(default)]
    pub driving_ms: u64,
    /// The time it waited for a person or an operator (approvals, reconciliations): bounded
    /// by `limits.wait_max_ms`, never by its deadline.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waiting_ms: u64,
    /// Decisions taken.
    pub decisions: u32,
    /// Calls started.
    pub calls: u32,
    /// Events in the log.
    pub events: u64,
}

/// What a run spent on its decider, as evidence: what its own decisions reported, what its
/// children spent, and the limits both count against.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageReport {
    /// The run's own decisions.
    #[serde(flatten)]
    pub own: UsageSum,
    /// Tokens its ended children spent (their own children's included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub children_tokens: u64,
    /// What its ended children cost, in micro-dollars.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub children_cost_micro_usd: u64,
    /// `limits.tokens_max`, when set: what the run and its children may use together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_max: Option<u64>,
    /// `limits.cost_micro_usd_max`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd_max: Option<u64>,
}

impl UsageReport {
    /// The run's and its children's tokens: what `tokens_max` counts.
    pub fn total_tokens(&self) -> u64 {
        self.own.tokens().saturating_add(self.children_tokens)
    }

    /// The run's and its children's cost, in micro-dollars.
    pub fn total_cost_micro_usd(&self) -> u64 {
        self.own
            .cost_micro_usd
            .saturating_add(self.children_cost_micro_usd)
    }

    /// One line for people: the tokens, the cost, the children's part, each limit with what
    /// was used of it; or that the decider reported none.
    pub fn text(&self, decider: &dyn std::fmt::Display) -> String {
        let children = self.children_tokens > 0 || self.children_cost_micro_usd > 0;
        if self.own.is_empty() && !children {
            return format!("none reported (the decider {decider} reports no tokens)");
        }
        let o = &self.own;
        let mut out = format!(
            "{} tokens ({} in, {} out",
            group(self.total_tokens()),
            group(o.input_tokens),
            group(o.output_tokens)
        );
        if o.cached_tokens > 0 {
            let _ = write!(out, ", {} cached", group(o.cached_tokens));
        }
        if o.reasoning_tokens > 0 {
            let _ = write!(out, ", {} reasoning", group(o.reasoning_tokens));
        }
        let _ = write!(
            out,
            ") over {} decisions, {}",
            o.decisions,
            dollars(self.total_cost_micro_usd())
        );
        if o.unpriced > 0 {
            let _ = write!(
                out,
                " ({} decisions unpriced: no price for their model)",
                o.unpriced
            );
        }
        if children {
            let _ = write!(
                out,
                "; children {}",
                tokens_and_cost(self.children_tokens, self.children_cost_micro_usd)
            );
        }
        if let Some(max) = self.tokens_max {
            let _ = write!(
                out,
                "; tokens_max {}: {} used",
                group(max),
                group(self.total_tokens())
            );
        }
        if let Some(max) = self.cost_micro_usd_max {
            let _ = write!(
                out,
                "; cost max {}: {} used",
                dollars(max),
                dollars(self.total_cost_micro_usd())
            );
        }
        out
    }
}

/// Tokens and what they cost, for people: `1,234 tokens, $0.001234`.
pub fn tokens_and_cost(tokens: u64, cost_micro_usd: u64) -> String {
    format!("{} tokens, {}", group(tokens), dollars(cost_micro_usd))
}

/// Micro-dollars as dollars, to the micro-dollar: `$0.001234`.
pub fn dollars(micro: u64) -> String {
    format!("${}.{:06}", micro / 1_000_000, micro % 1_000_000)
}

/// A count with thousands separated: `12,345`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl RunReport {
    /// Builds the report from the run's log.
    pub fn from_events(events: &[Arc<Event>]) -> Result<RunReport, crate::fold::FoldError> {
        let state = RunState::from_events(events.iter().map(|e| &**e))?;
        let mut report = RunReport::from_state(&state);
        // A re-entry that connected the providers again (its `run_resumed` records the time
        // it took): what a provider held only in memory before it is gone.
        let mut called = false;
        for e in events {
            match &e.kind {
                EventKind::CallDispatched { .. } => called = true,
                EventKind::RunResumed {
                    setup_ms: Some(ms), ..
                } if called => report.warnings.push(format!(
                    "event {}: the run was re-entered by a process that started its providers \
                     again ({ms} ms): what a provider held only in memory (an MCP server's \
                     session, an in-process provider's state) before then was lost",
                    e.seq
                )),
                EventKind::ProviderRestarted {
                    provider,
                    call,
                    cause,
                    attempts,
                    fault,
                    ..
                } => report.warnings.push(format!(
                    "event {}: provider `{provider}` had stopped{} ({}); {}",
                    e.seq,
                    call.map(|c| format!(" when {c} was to be sent"))
                        .unwrap_or_default(),
                    cause.message,
                    restart_outcome(*attempts, fault.as_ref())
                )),
                _ => {}
            }
        }
        for e in events {
            let (step, fault) = match &e.kind {
                EventKind::ObserveFailed { step, fault, .. }
                | EventKind::DecideFailed { step, fault, .. } => (step, fault),
                _ => continue,
            };
            report.failures.push(FailureReport {
                layer: fault.layer,
                code: fault.code.clone(),
                message: fault.message.clone(),
                step: Some(step.clone()),
                call: None,
            });
        }
        Ok(report)
    }

    /// Builds the report from folded state.
    pub fn from_state(state: &RunState) -> RunReport {
        let spec = state.spec.clone();
        let mut failures = Vec::new();
        let steps = spec
            .as_ref()
            .map(|spec| step_reports(state, spec, &mut failures))
            .unwrap_or_default();
        let terminal = spec
            .as_ref()
            .map(|spec| terminal(state, spec))
            .unwrap_or_default();
        if let Some(Outcome::Failed { fault }) = &state.outcome {
            failures.push(failure(fault, None, None));
        }
        RunReport {
            format: REPORT_FORMAT.to_owned(),
            run_id: state.run_id.clone().unwrap_or_else(|| RunId(String::new())),
            spec: SpecRef {
                id: spec.as_ref().map(|s| s.id.clone()).unwrap_or_default(),
                hash: state.spec_hash.clone(),
                objective: spec
                    .as_ref()
                    .map(|s| s.objective.clone())
                    .unwrap_or_default(),
            },
            decider: state.decider.clone().unwrap_or(DeciderIdentity {
                kind: "unknown".into(),
                name: String::new(),
                digest: None,
            }),
            build: state.build().cloned(),
            status: state.status(),
            conformant: state.outcome == Some(Outcome::Attained),
            outcome: state.outcome.clone(),
            route: state.route(),
            route_key: state.route_key(),
            steps,
            carried: carried(state),
            terminal,
            failures,
            unsettled: unsettled(state),
            answer: state.final_answer().cloned(),
            warnings: warnings(state),
            timings: timings(state),
            usage: UsageReport {
                own: state.usage().clone(),
                children_tokens: state.children_spent().tokens,
                children_cost_micro_usd: state.children_spent().cost_micro_usd,
                tokens_max: spec.as_ref().and_then(|s| s.limits.tokens_max),
                cost_micro_usd_max: spec.as_ref().and_then(|s| s.limits.cost_micro_usd_max),
            },
            parent: state.parent.as_ref().map(|p| ParentReport {
                run: p.run.clone(),
                step: p.step.clone(),
                depth: p.depth,
                chain: p.chain.clone(),
            }),
            children: spec
                .as_ref()
                .map(|spec| children(state, spec))
                .unwrap_or_default(),
            questions: state.questions.clone(),
            provider_asked: state.provider_asked.clone(),
        }
    }

    /// The report for people: one screen.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write_summary(&mut out);
        self.write_steps(&mut out);
        self.write_children(&mut out);
        self.write_questions(&mut out);
        self.write_carried(&mut out);
        self.write_terminal(&mut out);
        self.write_unsettled(&mut out);
        for w in &self.warnings {
            let _ = writeln!(out, "warning  {w}");
        }
        self.write_call_failures(&mut out);
        out
    }

    /// The lines about the whole run: what ran, how it ended, where it sits in its tree, its
    /// route, its time and the decider's final answer.
    fn write_summary(&self, out: &mut String) {
        let _ = writeln!(out, "run      {}", self.run_id);
        let _ = writeln!(
            out,
            "spec     {} ({})",
            self.spec.id,
            short_hash(&self.spec.hash)
        );
        let _ = writeln!(out, "decider  {}", self.decider);
        if let Some(b) = &self.build {
            let _ = writeln!(out, "build    {b}");
        }
        self.write_outcome(out);
        if let Some(p) = &self.parent {
            let _ = writeln!(
                out,
                "parent   {} step {} (depth {})",
                p.run, p.step, p.depth
            );
        }
        let _ = writeln!(out, "route    {}", self.route_key);
        self.write_elapsed(out);
        let _ = writeln!(out, "usage    {}", self.usage.text(&self.decider));
        if let Some(a) = &self.answer {
            let _ = writeln!(out, "answer   {} ({})", one_line(&a.text), a.kind);
        }
    }

    /// The `outcome` line.
    fn write_outcome(&self, out: &mut String) {
        let _ = writeln!(out, "outcome  {}", self.outcome_text());
    }

    /// The outcome's name (or the status while it runs) and its detail: who cancelled and why,
    /// which limit was exhausted, the layer a failure is attributed to.
    pub fn outcome_text(&self) -> String {
        let name: &str = match &self.outcome {
            Some(o) => o.name(),
            None => self.status.name(),
        };
        let mut out = name.to_owned();
        match &self.outcome {
            Some(Outcome::Failed { fault }) => {
                let _ = write!(out, " [{}] {}: {}", fault.layer, fault.code, fault.message);
            }
            Some(Outcome::Exhausted { limit, value }) => {
                let _ = write!(out, " ({limit} = {value})");
            }
            Some(Outcome::Cancelled { by, reason }) => {
                let _ = write!(out, " by {by}: {reason}");
            }
            Some(Outcome::Closed { by, reason }) => {
                let _ = write!(
                    out,
                    " by {by}: {reason} (a gateway session has no objective to attain: its calls are the evidence)"
                );
            }
            _ => {}
        }
        out
    }

    /// The `elapsed` line.
    fn write_elapsed(&self, out: &mut String) {
        let _ = writeln!(out, "elapsed  {}", self.elapsed_text());
    }

    /// The time taken (of it, starting providers, driving, and waiting for people or asleep), the
    /// decisions and the calls.
    pub fn elapsed_text(&self) -> String {
        let mut setup = if self.timings.setup_ms > 0 {
            format!(" ({} ms starting providers)", self.timings.setup_ms)
        } else {
            String::new()
        };
        if self.timings.waiting_ms > 0 {
            let _ = write!(
                setup,
                ", {} ms driving and {} ms waiting (for people, or asleep)",
                self.timings.driving_ms, self.timings.waiting_ms
            );
        }
        format!(
            "{} ms{setup}, {} decisions, {} calls",
            self.timings.elapsed_ms, self.timings.decisions, self.timings.calls
        )
    }

    /// The `steps` section: one line per step.
    fn write_steps(&self, out: &mut String) {
        let _ = writeln!(out, "steps");
        for s in &self.steps {
            let _ = write!(
                out,
                "  {:<8} {:<13} {} ({} calls)",
                s.id.0,
                s.status,
                if s.provider.is_empty() {
                    "delegates"
                } else {
                    &s.provider
                },
                s.calls.len()
            );
            if !s.usage.is_empty() {
                let _ = write!(
                    out,
                    "  {}",
                    tokens_and_cost(s.usage.tokens(), s.usage.cost_micro_usd)
                );
            }
            if let Some(f) = &s.fault {
                let _ = write!(out, "  [{}] {}", f.layer, f.message);
            }
            let _ = writeln!(out);
        }
    }

    /// The `children` section, when the run delegated: one line per child run.
    /// The `questions` section: each question asked and how it was answered.
    fn write_questions(&self, out: &mut String) {
        if self.questions.is_empty() && self.provider_asked.is_empty() {
            return;
        }
        let _ = writeln!(out, "questions");
        for q in &self.provider_asked {
            let _ = writeln!(out, "  {}  its provider asked: {}", q.call, q.message);
            match &q.answer {
                Some(a) => {
                    let _ = writeln!(out, "      {} {a}", q.action);
                }
                None => {
                    let _ = writeln!(out, "      {}", q.action);
                }
            }
        }
        for q in &self.questions {
            let _ = writeln!(out, "  {}  {}", q.id, q.prompt);
            match (&q.answer, &q.by) {
                (Some(a), by) => {
                    let _ = writeln!(
                        out,
                        "      answered {a} by {}",
                        by.as_deref().unwrap_or("someone")
                    );
                }
                (None, _) => {
                    let _ = writeln!(out, "      not answered (fits {})", q.schema);
                }
            }
        }
    }

    fn write_children(&self, out: &mut String) {
        if self.children.is_empty() {
            return;
        }
        let _ = writeln!(out, "children");
        for c in &self.children {
            let how = c.outcome.as_ref().map_or("unfinished", Outcome::name);
            let _ = write!(
                out,
                "  {:<12} {:<13} step {}: {} decisions, {} calls",
                c.run.0, how, c.step.0, c.spent.decisions, c.spent.calls
            );
            if c.spent.tokens > 0 || c.spent.cost_micro_usd > 0 {
                let _ = write!(
                    out,
                    ", {}",
                    tokens_and_cost(c.spent.tokens, c.spent.cost_micro_usd)
                );
            }
            if let Some(layer) = c.outcome.as_ref().and_then(Outcome::layer) {
                let _ = write!(out, "  [{layer}]");
            }
            let _ = writeln!(out);
        }
    }

    /// The `carried` section, when values were carried: each one and where it came from.
    fn write_carried(&self, out: &mut String) {
        if self.carried.is_empty() {
            return;
        }
        let _ = writeln!(out, "carried");
        for c in &self.carried {
            let _ = writeln!(
                out,
                "  {} = {}  <- {}{}/{} {}{}",
                c.name,
                compact(&c.value),
                // A value a child returned names the child's run.
                if c.lineage.run == self.run_id {
                    String::new()
                } else {
                    format!("{}:", c.lineage.run)
                },
                c.lineage.step,
                c.lineage.call,
                c.lineage.tool,
                if c.lineage.path.is_empty() {
                    String::new()
                } else {
                    format!(" {}", c.lineage.path)
                }
            );
        }
    }

    /// The `terminal` section, when there are requirements: each one met or missing.
    fn write_terminal(&self, out: &mut String) {
        if self.terminal.is_empty() {
            return;
        }
        let _ = writeln!(out, "terminal");
        for r in &self.terminal {
            let mark = match (r.satisfied, &r.waiting) {
                (true, _) => "met    ",
                (false, Some(_)) => "not yet",
                (false, None) => "MISSING",
            };
            let _ = write!(out, "  {mark} {} {}", r.step, r.requirement);
            if let Some(w) = &r.waiting {
                let _ = write!(out, "  (waiting: {w})");
            }
            if let Some(f) = &r.fault {
                let _ = write!(out, "  [{}] {}", f.layer, f.message);
            }
            let _ = writeln!(out);
        }
    }

    /// The `unsettled` section, when commits are unsettled: each one and what is known of it.
    fn write_unsettled(&self, out: &mut String) {
        if self.unsettled.is_empty() {
            return;
        }
        let _ = writeln!(out, "unsettled");
        for u in &self.unsettled {
            let _ = writeln!(
                out,
                "  {} `{}` on {} {}  {}",
                u.call,
                u.tool,
                u.provider,
                compact(&u.args),
                u.detail()
            );
        }
    }

    /// The `failures` section, when calls failed: one line per failed call.
    fn write_call_failures(&self, out: &mut String) {
        let call_failures: Vec<&FailureReport> =
            self.failures.iter().filter(|f| f.call.is_some()).collect();
        if !call_failures.is_empty() {
            let _ = writeln!(out, "failures");
            for f in call_failures {
                let call = f.call.map(|c| c.to_string()).unwrap_or_default();
                let _ = writeln!(out, "  {call} [{}] {}: {}", f.layer, f.code, f.message);
            }
        }
    }
}

/// A failure attributed as `fault` says, to `step` and `call` when given.
fn failure(fault: &Fault, step: Option<StepId>, call: Option<CallId>) -> FailureReport {
    FailureReport {
        layer: fault.layer,
        code: fault.code.clone(),
        message: fault.message.clone(),
        step,
        call,
    }
}

/// Each step's evidence, in the spec's order; each failed call not sent again with success,
/// and each step not attained, is added to `failures`.
fn step_reports(
    state: &RunState,
    spec: &Spec,
    failures: &mut Vec<FailureReport>,
) -> Vec<StepReport> {
    let mut steps = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let s = state.step(i);
        let (status, fault, blocked_by) = step_status(state, step, s);
        let calls = call_reports(state, &step.id, s, failures);
        if let (Some(f), "not_attained") = (&fault, status) {
            failures.push(failure(f, Some(step.id.clone()), None));
        }
        steps.push(StepReport {
            id: step.id.clone(),
            provider: step.provider.clone(),
            required: step.required,
            commit_required: step.commit == CommitRule::Required,
            status: status.to_owned(),
            fault,
            blocked_by,
            decisions: s.decisions,
            calls,
            elapsed_ms: match (s.started_at_ms, s.finished_at_ms) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
            answer: s.answer.clone(),
            usage: s.usage.clone(),
        });
    }
    steps
}

/// A step's status as the report names it, with why it was not attained or was skipped and,
/// when skipped, the dependency not attained.
fn step_status(
    state: &RunState,
    step: &StepSpec,
    s: &StepState,
) -> (&'static str, Option<Fault>, Option<StepId>) {
    match &s.status {
        StepStatus::Pending => ("pending", None, None),
        // A gateway session's open step ends with its session.
        StepStatus::Running
            if step.open && matches!(state.outcome(), Some(Outcome::Closed { .. })) =>
        {
            ("closed", None, None)
        }
        StepStatus::Running => ("running", None, None),
        StepStatus::Finished(StepEnd::Attained) => ("attained", None, None),
        StepStatus::Finished(StepEnd::NotAttained { fault }) => {
            ("not_attained", Some(fault.clone()), None)
        }
        StepStatus::Skipped { blocked_by, fault } => {
            ("skipped", Some(fault.clone()), Some(blocked_by.clone()))
        }
    }
}

/// The evidence of step `step`'s calls, in order; each that failed, unless it was sent again
/// with success, is added to `failures`.
fn call_reports(
    state: &RunState,
    step: &StepId,
    s: &StepState,
    failures: &mut Vec<FailureReport>,
) -> Vec<CallReport> {
    s.calls
        .iter()
        .filter_map(|id| state.call(*id))
        .map(|c| {
            if let Some(f) = &c.fault
                && !resent_and_done(state, c)
            {
                failures.push(failure(f, Some(step.clone()), Some(c.id)));
            }
            CallReport {
                call: c.id,
                tool: c.tool.clone(),
                effect: c.effect,
                status: c.status,
                proposed_digest: canon::digest(&c.proposed),
                executed_digest: c.executed.as_ref().map(|v| canon::digest(v)),
                provenance: c.provenance.clone(),
                context_taint: state.call_taint(c.id).to_vec(),
                fault: c.fault.as_deref().cloned(),
                elapsed_ms: c.finished_at_ms.map(|f| f.saturating_sub(c.started_at_ms)),
            }
        })
        .collect()
}

/// The terminal predicate: one row per requirement, each judged from what was found.
fn terminal(state: &RunState, spec: &Spec) -> Vec<RequirementReport> {
    let missing = match state.terminal() {
        Outcome::NotAttained { missing } => missing,
        _ => Vec::new(),
    };
    let live = state.outcome().is_none();
    let mut rows = Vec::new();
    for (i, s) in spec.steps.iter().enumerate() {
        let st = state.step(i);
        // A live run's step that has not ended has failed nothing yet: it waits, or goes on.
        let waiting = match &st.status {
            _ if !live => None,
            StepStatus::Running
                if state
                    .pending_approvals()
                    .any(|a| state.call(a.call).is_some_and(|c| c.step == i)) =>
            {
                Some("approval")
            }
            StepStatus::Running if state.in_doubt().any(|c| c.step == i) => Some("reconciliation"),
            StepStatus::Running
                if state.sleeping_until().is_some() && state.current() == Some(i) =>
            {
                Some("timer")
            }
            StepStatus::Running => Some("running"),
            StepStatus::Pending => Some("not started"),
            StepStatus::Finished(_) | StepStatus::Skipped { .. } => None,
        };
        let mut judged = |requirement: &str, met: bool| {
            let m = missing
                .iter()
                .find(|m| m.step == s.id && m.requirement == requirement);
            let unmet = !(met && m.is_none());
            rows.push(RequirementReport {
                step: s.id.clone(),
                requirement: requirement.to_owned(),
                satisfied: !unmet,
                fault: m.filter(|_| waiting.is_none()).map(|m| m.fault.clone()),
                waiting: waiting.filter(|_| unmet).map(str::to_owned),
            });
        };
        if s.commit == CommitRule::Required {
            judged("commit", st.committed);
        }
        if s.required {
            judged("attained", st.attained());
        }
    }
    rows
}

/// The carried values, each with its lineage.
fn carried(state: &RunState) -> Vec<CarriedReport> {
    state
        .carried
        .iter()
        .map(|(name, c)| CarriedReport {
            name: name.clone(),
            value: c.value.clone(),
            lineage: c.lineage.clone(),
        })
        .collect()
}

/// The run's timings and counts, up to its end (or its last event while it runs).
fn timings(state: &RunState) -> Timings {
    let end = state.finished_at_ms.unwrap_or(state.last_at_ms);
    Timings {
        started_at_ms: state.started_at_ms,
        finished_at_ms: state.finished_at_ms,
        elapsed_ms: end.saturating_sub(state.started_at_ms) + state.setup_ms,
        setup_ms: state.setup_ms,
        driving_ms: state.driven_ms(end),
        waiting_ms: state.waited_ms(end),
        decisions: state.decisions,
        calls: u32::try_from(state.calls.len()).unwrap_or(u32::MAX),
        events: state.last_seq,
    }
}

/// The child runs the run delegated to, each named with its delegating step.
fn children(state: &RunState, spec: &Spec) -> Vec<ChildReport> {
    state
        .children()
        .map(|(i, c)| ChildReport {
            run: c.run.clone(),
            step: spec
                .steps
                .get(i)
                .map_or_else(|| StepId("".into()), |s| s.id.clone()),
            outcome: c.outcome.clone(),
            granted: c.granted.clone(),
            spent: c.spent.clone(),
        })
        .collect()
}

/// What this build cannot show of the log: a format it does not write, events it does not know.
fn warnings(state: &RunState) -> Vec<String> {
    let mut out = Vec::new();
    if !state.format.is_empty() && state.format != crate::event::EVENTS_FORMAT {
        out.push(format!(
            "the log is `{}`; this build writes `{}`: what it does not know is not shown",
            state.format,
            crate::event::EVENTS_FORMAT
        ));
    }
    out.extend(state.unrecognized.iter().map(|(seq, t)| {
        format!("event {seq} has type `{t}`, which this build does not know: what it recorded is not shown")
    }));
    out
}

/// Commits not settled as happened: in doubt, or reconciled as not performed.
fn unsettled(state: &RunState) -> Vec<UnsettledReport> {
    state
        .calls
        .iter()
        .filter(|c| c.in_doubt || c.status == Some(CallStatus::NotPerformed))
        .map(|c| {
            let step = state
                .spec
                .as_ref()
                .and_then(|s| s.steps.get(c.step))
                .map(|s| s.id.clone())
                .unwrap_or_else(|| StepId("".into()));
            UnsettledReport {
                call: c.id,
                step,
                provider: state.provider_of(c.step).to_owned(),
                tool: c.tool.clone(),
                args: c.executed.clone().unwrap_or_else(|| c.proposed.clone()),
                state: if c.in_doubt {
                    "in_doubt"
                } else {
                    "not_performed"
                }
                .to_owned(),
                known: c
                    .in_doubt
                    .then(|| c.doubt.map(|d| d.describe().to_owned()))
                    .flatten(),
                resent_by: c.resent_by,
            }
        })
        .collect()
}

/// What came of a provider's restart (`provider_restarted`), in words: the report, `show`
/// and the progress lines say it alike.
pub fn restart_outcome(attempts: u32, fault: Option<&Fault>) -> String {
    let tries = if attempts == 1 {
        "1 start".to_owned()
    } else {
        format!("{attempts} starts")
    };
    match fault {
        None => format!("started again ({tries})"),
        Some(f) => format!(
            "not started again ({tries}), the run stopped interrupted: {}",
            f.message
        ),
    }
}

/// Whether `call` was reconciled as not done and sent again, and the last of its sendings
/// succeeded: then it was re-sent, not a failure.
fn resent_and_done(state: &RunState, call: &crate::fold::CallRecord) -> bool {
    let mut at = call;
    // Each sending names the next; a log has no more sendings than calls.
    for _ in 0..=state.calls().len() {
        match at.resent_by.and_then(|r| state.call(r)) {
            Some(next) => at = next,
            None => return at.id != call.id && at.status == Some(CallStatus::Ok),
        }
    }
    false
}

/// Text on one line: line breaks shown as spaces.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let trimmed = flat.trim();
    match trimmed.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &trimmed[..i]),
        None => trimmed.to_owned(),
    }
}

fn short_hash(h: &str) -> &str {
    let h = h.strip_prefix("sha256:").unwrap_or(h);
    &h[..h.len().min(12)]
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(59).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

//! Delegation: a step hands its work to child runs. Each child is a run of its own
//! (`<parent>.<n>`, its log naming its parent), driven by the parent's process through the
//! same engine and Bridge, ruled by its own authority AND every ancestor's, spending what it
//! was carved out of the parent's budget. The parent records the spawn before the child's log
//! begins, and the child's end (outcome, spending) before lifting what it returns; the step is
//! attained only on that evidence.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::task::Poll;

use warrant_core::codes::Code;
use warrant_core::event::{
    Budget, EventKind, Fault, Given, Layer, Lineage, Outcome, ParentLink, Spent, StepEnd,
};
use warrant_core::fold::RunState;
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::BoxFuture;
use warrant_core::spec::{CarriedRef, Child, Spec, StepSpec};
use warrant_core::status::RunStatus;

use super::{Run, step_of};
use crate::authority::{Allowance, Delegated};
use crate::rules::Rules;
use crate::time::TimeSource;
use crate::{EngineError, Surfaces};

/// What became of one child this time it was driven.
enum ChildEnd {
    /// It ended: how, what it spent, and the values it carries that the step asked for.
    Ended {
        outcome: Outcome,
        spent: Spent,
        carried: BTreeMap<String, warrant_core::fold::Carried>,
    },
    /// It waits for a person (an approval, an effect in doubt).
    Waiting,
    /// It could not be started or re-entered (its decider or providers could not be
    /// prepared, an input it needs is not carried): it ends here, failed.
    NotStarted(Fault),
}

impl Run<'_> {
    /// Step `i` delegates: records the children not yet spawned, drives the unfinished ones
    /// (at most `fan_out` at once), records each that ended, and judges the step once all
    /// have. `false` when the run must stop here because a child waits for a person.
    pub(super) async fn delegate(&mut self, i: usize) -> Result<bool, EngineError> {
        let spec = self.spec.clone();
        let step = step_of(&spec, i)?;
        let Some(delegate) = &step.delegate else {
            return Err(EngineError::NoStep(i));
        };
        if !matches!(self.time, TimeSource::Live(_)) && self.recorded.is_none() {
            return Err(EngineError::Refused(
                "replaying a run that delegates needs its recorded log".into(),
            ));
        }
        let depth = self.state.parent().map_or(0, |p| p.depth);
        // 1. Spawn: recorded before the child's own log begins.
        let spawned = self.state.step(i).children.len();
        for (k, child) in delegate.children.iter().enumerate().skip(spawned) {
            if depth + 1 > warrant_core::spec::DEPTH_MAX {
                return self.end_step(
                    i,
                    step,
                    not_started(format!(
                        "the tree would grow deeper than {} runs",
                        warrant_core::spec::DEPTH_MAX
                    )),
                );
            }
            let Some(child_spec) = child.spec.inline() else {
                return self.end_step(
                    i,
                    step,
                    not_started(
                        "the child's spec was never loaded (a file a front door freezes inline)",
                    ),
                );
            };
            let sharing = u64::try_from(delegate.children.len() - k).unwrap_or(1);
            let (asked, granted) = match self.carve(child_spec, child, sharing) {
                Ok(b) => b,
                Err((limit, value)) => {
                    self.exhausted(limit, value)?;
                    return Ok(true);
                }
            };
            let n = self.state.children().count() + 1;
            self.stage(EventKind::ChildSpawned {
                step: step.id.clone(),
                child: RunId(format!("{}.{n}", self.run_id)),
                index: u32::try_from(k).unwrap_or(u32::MAX),
                asked,
                granted,
            })?;
        }
        self.flush().await?;
        warrant_fault::hit(warrant_fault::FaultPoint::AfterSpawn);
        let waiting = self.drive_children(i).await?;
        if !waiting.is_empty() {
            self.stage(EventKind::ChildWaiting {
                step: step.id.clone(),
                children: waiting,
            })?;
            self.flush().await?;
            return Ok(false);
        }
        let end = self.judge_children(i, step);
        self.stage(EventKind::StepFinished {
            step: step.id.clone(),
            end,
        })?;
        Ok(true)
    }

    /// Drives step `i`'s unfinished children, at most `fan_out` at once, and records each
    /// that ended (with what it returns); answers the ones that wait for a person.
    pub(super) async fn drive_children(&mut self, i: usize) -> Result<Vec<RunId>, EngineError> {
        let spec = self.spec.clone();
        let step = step_of(&spec, i)?;
        let Some(delegate) = &step.delegate else {
            return Err(EngineError::NoStep(i));
        };
        // 2. Drive the unfinished children, a bounded number at once.
        let unfinished: Vec<(RunId, u32, Budget)> = self
            .state
            .step(i)
            .children
            .iter()
            .filter(|c| c.outcome.is_none())
            .map(|c| (c.run.clone(), c.index, c.granted.clone()))
            .collect();
        let fan_out = usize::try_from(delegate.fan_out.max(1)).unwrap_or(1);
        let ends = {
            let this = &*self;
            let work: Vec<BoxFuture<'_, Result<ChildEnd, EngineError>>> = unfinished
                .iter()
                .map(|(id, k, granted)| this.drive_child(step, id, *k, granted))
                .collect();
            this.renewing(join_bounded(work, fan_out)).await
        };
        warrant_fault::hit(warrant_fault::FaultPoint::BeforeJoin);

        // 3. Record what ended; wait with those that wait.
        let mut waiting = Vec::new();
        for ((id, k, _), end) in unfinished.into_iter().zip(ends) {
            let child = usize::try_from(k)
                .ok()
                .and_then(|k| delegate.children.get(k))
                .ok_or(EngineError::NoStep(i))?;
            match end? {
                ChildEnd::Waiting => waiting.push(id),
                ChildEnd::NotStarted(fault) => {
                    self.stage(EventKind::ChildFinished {
                        step: step.id.clone(),
                        child: id,
                        outcome: Outcome::Failed { fault },
                        spent: Spent::default(),
                    })?;
                }
                ChildEnd::Ended {
                    outcome,
                    spent,
                    carried,
                } => {
                    let attained = outcome == Outcome::Attained;
                    self.stage(EventKind::ChildFinished {
                        step: step.id.clone(),
                        child: id,
                        outcome,
                        spent,
                    })?;
                    if attained {
                        // Evidence crosses runs: the parent's value keeps the child's lineage
                        // (child run, step, call, path).
                        for (name, source) in &child.returns {
                            if let Some(c) = carried.get(source) {
                                self.stage(EventKind::Carried {
                                    name: format!("{}.{name}", step.id),
                                    value: c.value.clone(),
                                    lineage: c.lineage.clone(),
                                })?;
                            }
                        }
                    }
                }
            }
        }
        Ok(waiting)
    }

    /// Ends step `i` not attained, before any child of it started.
    fn end_step(&mut self, i: usize, step: &StepSpec, fault: Fault) -> Result<bool, EngineError> {
        if self
            .state
            .step(i)
            .children
            .iter()
            .any(|c| c.outcome.is_none())
        {
            return Err(EngineError::Refused(fault.message));
        }
        self.stage(EventKind::StepFinished {
            step: step.id.clone(),
            end: StepEnd::NotAttained { fault },
        })?;
        Ok(true)
    }

    /// INVARIANT (completion is judged): a delegating step is attained only when every child
    /// attained and every value the step must return was lifted from a child's evidence.
    fn judge_children(&self, i: usize, step: &StepSpec) -> StepEnd {
        for c in &self.state.step(i).children {
            match &c.outcome {
                Some(Outcome::Attained) => {}
                other => {
                    let inner = match other {
                        Some(Outcome::NotAttained { missing }) => {
                            missing.first().map(|m| m.fault.clone())
                        }
                        Some(Outcome::Failed { fault }) => Some(fault.clone()),
                        _ => None,
                    };
                    let how = other.as_ref().map_or("unfinished", Outcome::name);
                    let why = match (other, &inner) {
                        (_, Some(f)) => format!(" ({}: {})", f.layer, f.message),
                        (Some(Outcome::Exhausted { limit, value }), None) => {
                            format!(" ({limit} = {value})")
                        }
                        (Some(Outcome::Cancelled { by, reason }), None) => {
                            format!(" (by {by}: {reason})")
                        }
                        _ => String::new(),
                    };
                    let mut fault = Fault::new(
                        Code::ChildNotAttained,
                        Layer::Orchestration,
                        format!("child `{}` ended {how}{why}", c.run),
                    );
                    fault.inner = inner.map(Box::new);
                    return StepEnd::NotAttained { fault };
                }
            }
        }
        for name in step.outputs() {
            let key = format!("{}.{name}", step.id);
            if !self.state.carried().contains_key(&key) {
                return StepEnd::NotAttained {
                    fault: Fault::new(
                        Code::ReturnMissing,
                        Layer::Orchestration,
                        format!("no child carried a value for `{key}`"),
                    ),
                };
            }
        }
        StepEnd::Attained
    }

    /// What a child asks (its delegation's `budget`) and what it is given: the ask cut to what
    /// this run has left (its running children's grants set aside); a limit it does not ask
    /// about is its spec's own, cut to an equal share of what is left among the `sharing`
    /// children still to spawn, this one included. A limit with nothing left is `Err`: the run
    /// is exhausted.
    fn carve(
        &self,
        spec: &Spec,
        child: &Child,
        sharing: u64,
    ) -> Result<(Budget, Budget), (&'static str, u64)> {
        let own = &spec.limits;
        let asked = child.budget.clone();
        let limits = &self.spec.limits;
        let spent = self.state.spent();
        let mut held = Spent::default();
        for (_, c) in self.state.children().filter(|(_, c)| c.outcome.is_none()) {
            held.decisions = held
                .decisions
                .saturating_add(c.granted.decisions.unwrap_or(0));
            held.calls = held.calls.saturating_add(c.granted.calls.unwrap_or(0));
            held.tokens = held.tokens.saturating_add(c.granted.tokens.unwrap_or(0));
            held.cost_micro_usd = held
                .cost_micro_usd
                .saturating_add(c.granted.cost_micro_usd.unwrap_or(0));
        }
        let sharing = sharing.max(1);
        // (asked, the child spec's own, the parent's max, used or held, shared?, name)
        let cut = |asked: Option<u64>,
                   own: Option<u64>,
                   max: Option<u64>,
                   used: u64,
                   shared: bool,
                   name: &'static str| {
            let Some(max) = max else {
                return Ok(asked.or(own));
            };
            let left = max.saturating_sub(used);
            let share = if shared { left / sharing } else { left };
            let given = match asked {
                Some(a) => a.min(left),
                None => own.map_or(share, |o| o.min(share)),
            };
            if given == 0 {
                return Err((name, max));
            }
            Ok(Some(given))
        };
        let to_u32 = |v: Option<u64>| v.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let decisions = cut(
            asked.decisions.map(u64::from),
            Some(u64::from(own.decisions_max)),
            Some(u64::from(limits.decisions_max)),
            u64::from(spent.decisions.saturating_add(held.decisions)),
            true,
            "decisions_max",
        )?;
        let calls = cut(
            asked.calls.map(u64::from),
            own.calls_max.map(u64::from),
            limits.calls_max.map(u64::from),
            u64::from(spent.calls.saturating_add(held.calls)),
            true,
            "calls_max",
        )?;
        let tokens = cut(
            asked.tokens,
            own.tokens_max,
            limits.tokens_max,
            spent.tokens.saturating_add(held.tokens),
            true,
            "tokens_max",
        )?;
        let cost = cut(
            asked.cost_micro_usd,
            own.cost_micro_usd_max,
            limits.cost_micro_usd_max,
            spent.cost_micro_usd.saturating_add(held.cost_micro_usd),
            true,
            "cost_micro_usd_max",
        )?;
        let elapsed = self.state.driven_ms(self.state.last_at_ms());
        let deadline = cut(
            asked.deadline_ms,
            Some(own.deadline_ms),
            Some(limits.deadline_ms),
            elapsed,
            false,
            "deadline_ms",
        )?;
        let granted = Budget {
            decisions: to_u32(decisions),
            calls: to_u32(calls),
            tokens,
            cost_micro_usd: cost,
            deadline_ms: deadline,
        };
        Ok((asked, granted))
    }

    /// Starts or re-enters child `id` (the step's `k`-th) and drives it until it ends or
    /// waits for a person.
    fn drive_child<'s>(
        &'s self,
        step: &'s StepSpec,
        id: &'s RunId,
        k: u32,
        granted: &'s Budget,
    ) -> BoxFuture<'s, Result<ChildEnd, EngineError>> {
        Box::pin(async move {
            let Some(child) = step
                .delegate
                .as_ref()
                .and_then(|d| d.children.get(usize::try_from(k).unwrap_or(usize::MAX)))
            else {
                return Ok(ChildEnd::NotStarted(not_started(
                    "no such child in the spec",
                )));
            };
            if let Some(recorded) = &self.recorded {
                return Ok(self.recorded_end(recorded, step, child, id));
            }
            let Some(maker) = self.engine.children.clone() else {
                return Ok(ChildEnd::NotStarted(not_started(
                    "this engine cannot run child runs (`Engine::with_children`)",
                )));
            };
            let recorded = match self.engine.fold(id).await {
                Ok(state) => Some(state),
                Err(EngineError::UnknownRun(_)) => None,
                Err(e) => return Err(e),
            };
            let (spec, link) = match &recorded {
                Some(state) => match (state.shared_spec(), state.parent()) {
                    (Some(spec), Some(link)) => (spec.clone(), link.clone()),
                    _ => {
                        return Err(EngineError::Refused(format!(
                            "run `{id}` is not a child of `{}`",
                            self.run_id
                        )));
                    }
                },
                None => {
                    let Some(spec) = child_spec(child, granted) else {
                        return Ok(ChildEnd::NotStarted(not_started(
                            "the child's spec was never loaded",
                        )));
                    };
                    match self.link(step, child, k) {
                        Ok(link) => (spec, link),
                        Err(fault) => return Ok(ChildEnd::NotStarted(fault)),
                    }
                }
            };
            let identity = recorded.as_ref().and_then(RunState::decider);
            let parts = match maker.prepare(&spec, &child.share, identity).await {
                Ok(parts) => parts,
                // A child that began is never re-entered under another decider, nor failed for
                // a setting that can be put back: the tree's re-entry is refused, and says why.
                Err(e) if identity.is_some() => {
                    return Err(EngineError::Refused(format!(
                        "child `{id}` cannot be re-entered: {e}"
                    )));
                }
                Err(e) => return Ok(ChildEnd::NotStarted(not_started(e))),
            };
            let mut surfaces: Surfaces = parts.surfaces;
            for name in &child.share {
                if let Some(s) = self.surfaces.get(name) {
                    surfaces.insert(name.clone(), s.clone());
                }
            }
            let rules = self.child_rules(&spec, child)?;
            let time = TimeSource::Live(self.engine.clock.clone());
            let result = match recorded {
                None => {
                    let mut run = Run::start(
                        self.engine,
                        id.clone(),
                        spec,
                        &*parts.decider,
                        &surfaces,
                        time,
                        rules,
                    );
                    run.parent = Some(link);
                    run.tree = self.tree.clone();
                    run.drive().await?
                }
                Some(state) => {
                    if state.outcome().is_some() {
                        return Ok(ended(&state, child));
                    }
                    let epoch = self.engine.claim(id).await?;
                    let mut run = Run::from_state(
                        self.engine,
                        state,
                        spec,
                        &*parts.decider,
                        &surfaces,
                        time,
                        rules,
                    );
                    run.epoch = epoch;
                    run.tree = self.tree.clone();
                    run.reenter().await?
                }
            };
            Ok(match &result.outcome {
                Some(_) => ended(&result.state, child),
                None => ChildEnd::Waiting,
            })
        })
    }

    /// Replay: what the recorded log says became of child `id` after this point — its end,
    /// with the values the parent lifted from it, or that it waited.
    fn recorded_end(
        &self,
        recorded: &[Arc<warrant_core::event::Event>],
        step: &StepSpec,
        child: &Child,
        id: &RunId,
    ) -> ChildEnd {
        let after = self.state.last_seq();
        for e in recorded.iter().filter(|e| e.seq > after) {
            match &e.kind {
                EventKind::ChildWaiting { children, .. } if children.contains(id) => {
                    return ChildEnd::Waiting;
                }
                EventKind::ChildFinished {
                    child: c,
                    outcome,
                    spent,
                    ..
                } if c == id => {
                    let mut carried = BTreeMap::new();
                    for e in recorded.iter().filter(|e| e.seq > after) {
                        if let EventKind::Carried {
                            name,
                            value,
                            lineage,
                        } = &e.kind
                            && lineage.run.0.starts_with(&id.0)
                            && let Some(source) = name
                                .strip_prefix(&format!("{}.", step.id))
                                .and_then(|out| child.returns.get(out))
                        {
                            carried.insert(
                                source.clone(),
                                warrant_core::fold::Carried {
                                    value: value.clone(),
                                    lineage: lineage.clone(),
                                },
                            );
                        }
                    }
                    return ChildEnd::Ended {
                        outcome: outcome.clone(),
                        spent: spent.clone(),
                        carried,
                    };
                }
                _ => {}
            }
        }
        // The recorded process stopped before it knew: the replay stops there too.
        ChildEnd::Waiting
    }

    /// The link a new child records: this run, the step, the depth, the chain of ancestors,
    /// and the inputs it is given, each with its lineage.
    fn link(&self, step: &StepSpec, child: &Child, k: u32) -> Result<ParentLink, Fault> {
        let mut inputs = BTreeMap::new();
        for (name, input) in &child.inputs {
            let given = match (&input.carried, &input.value) {
                (Some(source), _) => {
                    let c = CarriedRef::parse(source)
                        .and_then(|r| self.state.carried().get(&r.to_string()))
                        .ok_or_else(|| {
                            not_started(format!(
                                "input `{name}`: `{source}` is not carried (yet) in `{}`",
                                self.run_id
                            ))
                        })?;
                    Given {
                        value: c.value.clone(),
                        lineage: c.lineage.clone(),
                    }
                }
                (None, Some(value)) => Given {
                    value: Arc::new(value.clone()),
                    lineage: Lineage {
                        run: self.run_id.clone(),
                        step: step.id.clone(),
                        call: CallId(0),
                        tool: "(literal)".into(),
                        path: String::new(),
                    },
                },
                (None, None) => {
                    return Err(not_started(format!("input `{name}` has no value")));
                }
            };
            inputs.insert(name.clone(), given);
        }
        let (depth, mut chain) = match self.state.parent() {
            Some(p) => (p.depth + 1, p.chain.clone()),
            None => (1, Vec::new()),
        };
        chain.push(self.run_id.clone());
        Ok(ParentLink {
            run: self.run_id.clone(),
            step: step.id.clone(),
            index: k,
            depth,
            chain,
            inputs,
        })
    }

    /// A child's rules: its own (its spec's policies, the delegation's, its grants) AND each
    /// ancestor's own, AND its allowance; execution control: this run's, else its own.
    fn child_rules(&self, spec: &Arc<Spec>, child: &Child) -> Result<Rules, EngineError> {
        let own = self.engine.rules_for(spec)?;
        let allowance = self.allowance(spec, child);
        let authority = Arc::new(Delegated::new(
            own.authority.clone(),
            self.rules.lineage.clone(),
            allowance.clone(),
        ));
        let mut lineage = self.rules.lineage.clone();
        lineage.push(own.authority);
        Ok(Rules {
            authority,
            control: self.rules.control.clone().or(own.control),
            lineage,
            allowance,
        })
    }

    /// The most a child may call: the delegation's `tools` (every provider of the child
    /// limited when it names any), cut on a shared provider to what this run may call there.
    fn allowance(&self, spec: &Spec, child: &Child) -> Option<Allowance> {
        let mut allowance: Allowance = match &child.tools {
            Some(tools) => spec
                .providers
                .keys()
                .map(|p| {
                    let listed = tools.get(p).map(|t| t.iter().cloned().collect());
                    (p.clone(), listed.unwrap_or_default())
                })
                .collect(),
            None => Allowance::new(),
        };
        for provider in &child.share {
            let mine = self.may_call(provider);
            let cut: BTreeSet<String> = match allowance.get(provider) {
                Some(listed) => listed.intersection(&mine).cloned().collect(),
                None => mine,
            };
            allowance.insert(provider.clone(), cut);
        }
        (!allowance.is_empty()).then_some(allowance)
    }

    /// What this run may call on `provider`: its steps' tools there, within its own
    /// allowance when it has one.
    fn may_call(&self, provider: &str) -> BTreeSet<String> {
        let tools: BTreeSet<String> = self
            .spec
            .steps
            .iter()
            .filter(|s| s.provider == provider)
            .flat_map(|s| s.tools.iter().cloned())
            .collect();
        match self.rules.allowance.as_ref().and_then(|a| a.get(provider)) {
            Some(mine) => tools.intersection(mine).cloned().collect(),
            None => tools,
        }
    }
}

/// Whether every unfinished child of `state`'s running delegation waits for a person with
/// nothing new at `now` (no answer, no expiry, no cancellation), through the whole tree.
pub(super) fn children_idle<'e>(
    engine: &'e crate::Engine,
    state: &'e RunState,
    now: u64,
) -> BoxFuture<'e, bool> {
    Box::pin(async move {
        let Some(i) = state.current() else {
            return false;
        };
        for c in state
            .step(i)
            .children
            .iter()
            .filter(|c| c.outcome.is_none())
        {
            let Ok(child) = engine.fold(&c.run).await else {
                return false;
            };
            if child.status() != RunStatus::Waiting
                || !matches!(engine.store.cancel_request(&c.run).await, Ok(None))
            {
                return false;
            }
            let idle = match child.next() {
                warrant_core::fold::Next::Wait(call) => match child.spec() {
                    Some(spec) => !super::wait::expired(&child, &spec.limits, call, now),
                    None => false,
                },
                warrant_core::fold::Next::Continue(j)
                    if child
                        .spec()
                        .and_then(|s| s.steps.get(j))
                        .is_some_and(|s| s.delegate.is_some()) =>
                {
                    children_idle(engine, &child, now).await
                }
                _ => false,
            };
            if !idle {
                return false;
            }
        }
        true
    })
}

/// The child's spec as it runs: its decider and the delegation's policies set, its limits
/// cut to what it was given.
fn child_spec(child: &Child, granted: &Budget) -> Option<Arc<Spec>> {
    let mut spec = child.spec.inline()?.clone();
    if let Some(d) = &child.decider {
        spec.decider = Some(d.clone());
    }
    spec.policy.extend(child.policy.iter().cloned());
    let limits = &mut spec.limits;
    if let Some(d) = granted.decisions {
        limits.decisions_max = d;
        limits.step_decisions_max = limits.step_decisions_max.min(d);
    }
    limits.calls_max = granted.calls.or(limits.calls_max);
    limits.tokens_max = granted.tokens.or(limits.tokens_max);
    limits.cost_micro_usd_max = granted.cost_micro_usd.or(limits.cost_micro_usd_max);
    if let Some(d) = granted.deadline_ms {
        limits.deadline_ms = d;
    }
    Some(Arc::new(spec))
}

/// A child that ended: its outcome, its spending (its own children's included) and what it
/// carries that the delegation asks it to return.
fn ended(state: &RunState, child: &Child) -> ChildEnd {
    let carried = child
        .returns
        .values()
        .filter_map(|source| {
            state
                .carried()
                .get(source)
                .map(|c| (source.clone(), c.clone()))
        })
        .collect();
    ChildEnd::Ended {
        outcome: state.outcome().cloned().unwrap_or(Outcome::Failed {
            fault: not_started("the child has no outcome"),
        }),
        spent: state.spent(),
        carried,
    }
}

fn not_started(message: impl Into<String>) -> Fault {
    Fault::new(Code::ChildNotStarted, Layer::Orchestration, message)
}

/// Awaits every future of `work`, at most `limit` at once; the answers in `work`'s order.
async fn join_bounded<'f, T>(work: Vec<BoxFuture<'f, T>>, limit: usize) -> Vec<T> {
    let total = work.len();
    let mut queued = work.into_iter().enumerate();
    let mut running: Vec<(usize, BoxFuture<'f, T>)> = Vec::new();
    let mut answers: Vec<Option<T>> = (0..total).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        while running.len() < limit.max(1) {
            match queued.next() {
                Some(w) => running.push(w),
                None => break,
            }
        }
        let mut at = 0;
        while let Some((k, future)) = running.get_mut(at) {
            if let Poll::Ready(answer) = future.as_mut().poll(cx) {
                if let Some(slot) = answers.get_mut(*k) {
                    *slot = Some(answer);
                }
                drop(running.swap_remove(at));
                if let Some(w) = queued.next() {
                    running.push(w);
                }
            } else {
                at += 1;
            }
        }
        if running.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    answers.into_iter().flatten().collect()
}

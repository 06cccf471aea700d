//! Spec validation: every problem found, each naming the file, the field and (for YAML) the
//! line. A spec that fails validation never starts a run and writes nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

use crate::ids::StepId;
use crate::spec::{
    CarriedRef, Child, Delegate, Format, ParseError, ProviderSpec, SPEC_VERSION, Spec, StepSpec,
};
use crate::status::{DeciderKind, DeciderRef};

/// What validation knows about the providers a spec names.
pub trait ProviderCatalog {
    /// The tools the provider offers, when they can be known before a run (`Ok(None)` when
    /// they can only be observed at run time), or why the provider entry is unusable.
    fn tools(&self, name: &str, provider: &ProviderSpec) -> Result<Option<Vec<String>>, String>;
    /// The keys of a reference provider's `config` that hold file paths (resolved against the
    /// spec's folder, like every relative path in a spec).
    fn path_settings(&self, _provider: &ProviderSpec) -> Vec<String> {
        Vec::new()
    }
}

/// One problem in a spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// The field, e.g. `steps[1].provider`.
    pub field: String,
    /// 1-based line in a YAML file.
    pub line: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// Every problem found in a spec file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct SpecErrors {
    /// The file, as the user named it.
    pub file: String,
    /// The problems, in the order of the fields.
    pub issues: Vec<Issue>,
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}", self.file)?;
            if let Some(line) = issue.line {
                write!(f, ":{line}")?;
            }
            if !issue.field.is_empty() {
                write!(f, ": {}", issue.field)?;
            }
            write!(f, ": {}", issue.message)?;
        }
        Ok(())
    }
}

impl From<ParseError> for SpecErrors {
    fn from(e: ParseError) -> Self {
        let message = match e.column {
            Some(c) => format!("{} (column {c})", e.message),
            None => e.message,
        };
        SpecErrors {
            file: e.file,
            issues: vec![Issue {
                field: String::new(),
                line: e.line,
                message,
            }],
        }
    }
}

/// A field path as the parser writes it (`steps[0].tools` or `steps.0.tools`), as segments.
fn parse_path(path: &str) -> Vec<Seg> {
    path.split(['.', '['])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let p = p.trim_end_matches(']');
            match p.parse::<usize>() {
                Ok(i) => Seg::Index(i),
                Err(_) => Seg::Key(p.to_owned()),
            }
        })
        .collect()
}

/// Reads and validates a spec file's text.
pub fn load(
    text: &str,
    format: Format,
    file: &str,
    catalog: &dyn ProviderCatalog,
) -> Result<Spec, SpecErrors> {
    let locator = match format {
        Format::Yaml => Locator::from_yaml(text),
        Format::Json => Locator::default(),
    };
    let spec = Spec::parse(text, format, file).map_err(|mut e| {
        // An unknown field's error names the field but not its line: find it.
        if e.line.is_none()
            && let Some(path) = e
                .message
                .strip_prefix("unknown field `")
                .and_then(|r| r.strip_suffix('`'))
        {
            e.line = locator.line(&parse_path(path));
        }
        SpecErrors::from(e)
    })?;
    let mut issues = validate(&spec, catalog);
    issues.extend(too_deep(&spec, 0));
    if issues.is_empty() {
        return Ok(spec);
    }
    let issues = issues
        .into_iter()
        .map(|(path, message)| Issue {
            line: locator.line(&path),
            field: render_path(&path),
            message,
        })
        .collect();
    Err(SpecErrors {
        file: file.to_owned(),
        issues,
    })
}

/// Validates a spec already read (a parent whose children were frozen inline into it):
/// problems are named by field, without lines.
pub fn check(spec: &Spec, file: &str, catalog: &dyn ProviderCatalog) -> Result<(), SpecErrors> {
    let issues: Vec<Issue> = validate(spec, catalog)
        .into_iter()
        .chain(too_deep(spec, 0))
        .map(|(path, message)| Issue {
            line: None,
            field: render_path(&path),
            message,
        })
        .collect();
    if issues.is_empty() {
        Ok(())
    } else {
        Err(SpecErrors {
            file: file.to_owned(),
            issues,
        })
    }
}

/// The children of `spec` (a run at `depth`; a root is 0) that would grow the tree of runs
/// deeper than [`crate::spec::DEPTH_MAX`], each named by its path: the engine would refuse to
/// start them, so the spec is refused before it runs. Children given as files are counted
/// once a front door has frozen them inline.
pub fn too_deep(spec: &Spec, depth: u32) -> Vec<(Vec<Seg>, String)> {
    use crate::spec::DEPTH_MAX;
    let mut issues = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let Some(delegate) = &step.delegate else {
            continue;
        };
        for (k, child) in delegate.children.iter().enumerate() {
            let here = vec![
                key("steps"),
                Seg::Index(i),
                key("delegate"),
                key("children"),
                Seg::Index(k),
            ];
            if depth + 1 > DEPTH_MAX {
                issues.push((
                    here,
                    format!(
                        "this child would be a run at depth {} of its tree: delegations may nest \
                         at most {DEPTH_MAX} deep (the root is depth 0)",
                        depth + 1
                    ),
                ));
                continue;
            }
            if let Some(inner) = child.spec.inline() {
                for (path, message) in too_deep(inner, depth + 1) {
                    let mut p = here.clone();
                    p.push(key("spec"));
                    p.extend(path);
                    issues.push((p, message));
                }
            }
        }
    }
    issues
}

/// A path into the spec document: keys and indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

fn render_path(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

/// A problem found: the field's path and what is wrong with it.
type Problem = (Vec<Seg>, String);

/// The path `steps[i].field`.
fn step_field(i: usize, field: &str) -> Vec<Seg> {
    vec![key("steps"), Seg::Index(i), key(field)]
}

/// Checks everything the types cannot: returns (field path, message) for each problem.
pub fn validate(spec: &Spec, catalog: &dyn ProviderCatalog) -> Vec<(Vec<Seg>, String)> {
    let mut issues: Vec<Problem> = Vec::new();
    check_top_level(spec, &mut issues);
    check_limits(spec, &mut issues);
    check_provider_limits(spec, &mut issues);
    check_execution_control(spec, &mut issues);
    check_joins(spec, &mut issues);
    let tools_of = offered_tools(spec, catalog, &mut issues);
    let first_index = check_steps(spec, catalog, &tools_of, &mut issues);
    check_dependencies(spec, &first_index, &mut issues);
    check_step_inputs(spec, &mut issues);
    issues
}

/// The checks of the spec's version, its id and that it has steps.
fn check_top_level(spec: &Spec, issues: &mut Vec<Problem>) {
    if spec.version != SPEC_VERSION {
        issues.push((
            vec![key("version")],
            format!(
                "unsupported version `{}` (this build reads `{SPEC_VERSION}`)",
                spec.version
            ),
        ));
    }
    if spec.id.trim().is_empty() {
        issues.push((vec![key("id")], "must not be empty".into()));
    }
    if spec.steps.is_empty() {
        issues.push((vec![key("steps")], "a spec needs at least one step".into()));
    }
}

/// The checks of the run's `limits`: none that is given is zero.
fn check_limits(spec: &Spec, issues: &mut Vec<Problem>) {
    if spec.limits.decisions_max == 0 {
        issues.push((
            vec![key("limits"), key("decisions_max")],
            "must be at least 1".into(),
        ));
    }
    if spec.limits.step_decisions_max == 0 {
        issues.push((
            vec![key("limits"), key("step_decisions_max")],
            "must be at least 1".into(),
        ));
    }

    for (name, value) in [
        ("call_timeout_ms", spec.limits.call_timeout_ms),
        ("deadline_ms", spec.limits.deadline_ms),
        ("handle_ttl_ms", spec.limits.handle_ttl_ms),
        ("approval_ttl_ms", spec.limits.approval_ttl_ms),
        ("wait_max_ms", spec.limits.wait_max_ms.unwrap_or(1)),
    ] {
        if value == 0 {
            issues.push((
                vec![key("limits"), key(name)],
                "must be at least 1 (a zero would refuse or expire everything at once)".into(),
            ));
        }
    }
    for (name, value) in [
        ("calls_max", spec.limits.calls_max.map(u64::from)),
        ("tokens_max", spec.limits.tokens_max),
        ("cost_micro_usd_max", spec.limits.cost_micro_usd_max),
    ] {
        if value == Some(0) {
            issues.push((
                vec![key("limits"), key(name)],
                "must be at least 1 (a zero would exhaust the run before it starts; leave it out for no limit)"
                    .into(),
            ));
        }
    }
}

/// The checks of the providers' own limits (MCP and OpenAPI): none that is given is zero.
fn check_provider_limits(spec: &Spec, issues: &mut Vec<Problem>) {
    for (name, provider) in &spec.providers {
        let at = |kind: &str, field: &str| vec![key("providers"), key(name), key(kind), key(field)];
        if let Some(m) = &provider.mcp
            && m.output_bytes_max == Some(0)
        {
            issues.push((
                at("mcp", "output_bytes_max"),
                "must be at least 1 (a zero would cut every result to nothing)".into(),
            ));
        }
        if let Some(w) = &provider.webmcp
            && w.output_bytes_max == Some(0)
        {
            issues.push((
                at("webmcp", "output_bytes_max"),
                "must be at least 1 (a zero would cut every result to nothing)".into(),
            ));
        }
        if let Some(o) = &provider.openapi {
            if o.output_bytes_max == Some(0) {
                issues.push((
                    at("openapi", "output_bytes_max"),
                    "must be at least 1 (a zero would cut every result to nothing)".into(),
                ));
            }
            if o.operations_max == Some(0) {
                issues.push((
                    at("openapi", "operations_max"),
                    "must be at least 1 (a zero would offer no operation)".into(),
                ));
            }
        }
    }
}

/// The check of `execution_control`: its timeout is not zero.
fn check_execution_control(spec: &Spec, issues: &mut Vec<Problem>) {
    if let Some(c) = &spec.execution_control
        && c.timeout_ms == 0
    {
        issues.push((
            vec![key("execution_control"), key("timeout_ms")],
            "must be at least 1".into(),
        ));
    }
}

/// The checks of each provider's `join`: its members are declared plain providers, not itself.
fn check_joins(spec: &Spec, issues: &mut Vec<Problem>) {
    for (name, provider) in &spec.providers {
        let at = || vec![key("providers"), key(name), key("join")];
        for member in &provider.join {
            match spec.providers.get(member) {
                None => issues.push((at(), format!("unknown provider `{member}`"))),
                Some(_) if member == name => {
                    issues.push((at(), "a provider cannot join itself".into()));
                }
                Some(m) if !m.join.is_empty() => issues.push((
                    at(),
                    format!("`{member}` is itself a join: join its members instead"),
                )),
                Some(_) => {}
            }
        }
    }
}

/// The tools each usable provider offers, as the catalog knows them (`None` when known only at
/// run time); each provider the catalog finds unusable is a problem.
fn offered_tools<'a>(
    spec: &'a Spec,
    catalog: &dyn ProviderCatalog,
    issues: &mut Vec<Problem>,
) -> HashMap<&'a str, Option<Vec<String>>> {
    let mut tools_of: HashMap<&str, Option<Vec<String>>> = HashMap::new();
    for (name, provider) in &spec.providers {
        match catalog.tools(name, provider) {
            Ok(tools) => {
                tools_of.insert(name, tools);
            }
            Err(message) => issues.push((vec![key("providers"), key(name)], message)),
        }
    }
    tools_of
}

/// The checks of each step on its own; gives the index of the first step with each id.
fn check_steps<'a>(
    spec: &'a Spec,
    catalog: &dyn ProviderCatalog,
    tools_of: &HashMap<&str, Option<Vec<String>>>,
    issues: &mut Vec<Problem>,
) -> HashMap<&'a StepId, usize> {
    let mut first_index: HashMap<&StepId, usize> = HashMap::new();
    for (i, step) in spec.steps.iter().enumerate() {
        check_step_id(i, step, &mut first_index, issues);
        if let Some(delegate) = &step.delegate {
            issues.extend(delegation(spec, i, step, delegate, catalog));
        } else {
            check_step_provider(spec, i, step, tools_of, issues);
        }
        if step.open {
            check_open_step(spec, i, step, issues);
        }
        if step.tools.is_empty() && step.delegate.is_none() {
            issues.push((
                step_field(i, "tools"),
                "a step needs at least one allowed tool".into(),
            ));
        }
        if &*step.id.0 == INPUT_STEP {
            issues.push((
                step_field(i, "id"),
                format!("`{INPUT_STEP}` names a run's inputs (`input.<name>`): choose another id"),
            ));
        }
        check_quarantine(i, step, issues);
        check_grant(i, step, issues);
        check_publishes(i, step, issues);
    }
    first_index
}

/// The checks of step `i`'s id (well formed, not used by an earlier step, whose index it
/// records when it is the first) and of its `decisions_max`.
fn check_step_id<'a>(
    i: usize,
    step: &'a StepSpec,
    first_index: &mut HashMap<&'a StepId, usize>,
    issues: &mut Vec<Problem>,
) {
    if step.id.0.is_empty() || step.id.0.contains('.') {
        issues.push((
            step_field(i, "id"),
            format!("`{}` is not a valid step id (non-empty, no `.`)", step.id),
        ));
    }
    if step.decisions_max == Some(0) {
        issues.push((step_field(i, "decisions_max"), "must be at least 1".into()));
    }
    if let Some(prev) = first_index.get(&step.id) {
        issues.push((
            step_field(i, "id"),
            format!(
                "duplicate step id `{}` (first used by steps[{prev}])",
                step.id
            ),
        ));
    } else {
        first_index.insert(&step.id, i);
    }
}

/// The checks of a step that does not delegate against its provider: the spec declares it,
/// and it offers each of the step's tools (when its tools are known before the run).
fn check_step_provider(
    spec: &Spec,
    i: usize,
    step: &StepSpec,
    tools_of: &HashMap<&str, Option<Vec<String>>>,
    issues: &mut Vec<Problem>,
) {
    if !spec.providers.contains_key(&step.provider) {
        let known: Vec<&str> = spec.providers.keys().map(String::as_str).collect();
        issues.push((
            step_field(i, "provider"),
            format!(
                "unknown provider `{}` (the spec declares: {})",
                step.provider,
                list(&known)
            ),
        ));
    } else if let Some(Some(offered)) = tools_of.get(step.provider.as_str()) {
        for (t, tool) in step.tools.iter().enumerate() {
            if !offered.iter().any(|o| o == tool) {
                issues.push((
                    vec![key("steps"), Seg::Index(i), key("tools"), Seg::Index(t)],
                    format!(
                        "provider `{}` does not offer tool `{tool}` (it offers: {})",
                        step.provider,
                        list(&offered.iter().map(String::as_str).collect::<Vec<_>>())
                    ),
                ));
            }
        }
    }
}

/// The check of an open step (a gateway session's): it is its spec's only step, with no
/// objective, no delegation and no plan.
fn check_open_step(spec: &Spec, i: usize, step: &StepSpec, issues: &mut Vec<Problem>) {
    let why = if spec.steps.len() != 1 {
        Some("an open step (a gateway session's) must be its spec's only step")
    } else if step.required || step.commit == crate::spec::CommitRule::Required {
        Some("an open step has no objective: it cannot be `required` or require a commit")
    } else if step.delegate.is_some() {
        Some("an open step cannot delegate")
    } else if spec.plan_first {
        Some("an open step has no plan: `plan_first` cannot be set")
    } else {
        None
    };
    if let Some(why) = why {
        issues.push((step_field(i, "open"), why.into()));
    }
}

/// The checks of a step's `quarantine`: each tool is one of the step's, and each field gives
/// a type or a list and a JSON pointer.
fn check_quarantine(i: usize, step: &StepSpec, issues: &mut Vec<Problem>) {
    for (tool, fields) in &step.quarantine {
        let here = vec![key("steps"), Seg::Index(i), key("quarantine"), key(tool)];
        if !step.tools.iter().any(|t| t == tool) {
            issues.push((
                here.clone(),
                format!("quarantines `{tool}`, which is not one of the step's tools"),
            ));
        }
        for (name, x) in fields {
            let mut at = here.clone();
            at.push(key(name));
            if x.kind.is_some() != x.one_of.is_empty() {
                issues.push((at.clone(), "give either `type` or `one_of`".into()));
            }
            if !x.path.is_empty() && !x.path.starts_with('/') {
                issues.push((
                    at,
                    format!(
                        "path `{}` is not a JSON pointer (start it with `/`)",
                        x.path
                    ),
                ));
            }
        }
    }
}

/// The checks of a step's `grant`: each tool is one of the step's, and no bound's `min` is
/// above its `max`.
fn check_grant(i: usize, step: &StepSpec, issues: &mut Vec<Problem>) {
    let Some(grant) = &step.grant else {
        return;
    };
    for (tool, constraints) in &grant.tools {
        let here = vec![
            key("steps"),
            Seg::Index(i),
            key("grant"),
            key("tools"),
            key(tool),
        ];
        if !step.tools.iter().any(|t| t == tool) {
            issues.push((
                here.clone(),
                format!("grants `{tool}`, which is not one of the step's tools"),
            ));
        }
        for (arg, c) in constraints {
            if let (Some(min), Some(max)) = (c.min, c.max)
                && min > max
            {
                let mut at = here.clone();
                at.push(key(arg));
                issues.push((at, format!("`min` ({min}) is above `max` ({max})")));
            }
        }
    }
}

/// The checks of a step's `publishes`: each comes from one of the step's tools, at a JSON
/// pointer.
fn check_publishes(i: usize, step: &StepSpec, issues: &mut Vec<Problem>) {
    for (name, publish) in &step.publishes {
        let here = vec![key("steps"), Seg::Index(i), key("publishes"), key(name)];
        if !step.tools.iter().any(|t| t == &publish.from) {
            issues.push((
                here.clone(),
                format!(
                    "publishes from `{}`, which is not one of the step's tools",
                    publish.from
                ),
            ));
        }
        if !publish.path.is_empty() && !publish.path.starts_with('/') {
            issues.push((
                here,
                format!(
                    "path `{}` is not a JSON pointer (start it with `/`)",
                    publish.path
                ),
            ));
        }
    }
}

/// The checks of the steps' dependencies: known, not self, no cycle.
fn check_dependencies(
    spec: &Spec,
    first_index: &HashMap<&StepId, usize>,
    issues: &mut Vec<Problem>,
) {
    for (i, step) in spec.steps.iter().enumerate() {
        for (a, dep) in step.after.iter().enumerate() {
            let here = vec![key("steps"), Seg::Index(i), key("after"), Seg::Index(a)];
            if dep == &step.id {
                issues.push((here, format!("step `{}` cannot come after itself", step.id)));
            } else if !first_index.contains_key(dep) {
                issues.push((here, format!("unknown step `{dep}`")));
            }
        }
    }
    if let Some(cycle) = find_cycle(spec) {
        let i = cycle
            .first()
            .and_then(|id| spec.step_index(id))
            .unwrap_or(0);
        let names: Vec<String> = cycle.iter().map(|s| format!("`{s}`")).collect();
        issues.push((
            vec![key("steps"), Seg::Index(i), key("after")],
            format!("dependency cycle: {}", names.join(" -> ")),
        ));
    }
}

/// The checks of the steps' `inputs`: each binds to a declared input of the run or to an
/// output published by a step this one (transitively) comes after.
fn check_step_inputs(spec: &Spec, issues: &mut Vec<Problem>) {
    for (i, step) in spec.steps.iter().enumerate() {
        let before = ancestors(spec, &step.id);
        for (arg, source) in &step.inputs {
            let here = vec![key("steps"), Seg::Index(i), key("inputs"), key(arg)];
            let Some(r) = CarriedRef::parse(source) else {
                issues.push((
                    here,
                    format!("`{source}` is not a carried output (write `step.output`)"),
                ));
                continue;
            };
            if &*r.step.0 == INPUT_STEP {
                if !spec.inputs.contains(&r.output) {
                    issues.push((
                        here,
                        format!(
                            "`{source}`: the spec declares no input `{}` (its `inputs`: {})",
                            r.output,
                            list(&spec.inputs.names().map(String::as_str).collect::<Vec<_>>())
                        ),
                    ));
                }
                continue;
            }
            let publisher = spec.step(&r.step);
            match publisher {
                None => issues.push((here, format!("`{source}`: no step `{}`", r.step))),
                Some(p) if !p.outputs().any(|o| o == &r.output) => issues.push((
                    here,
                    format!(
                        "`{source}`: step `{}` publishes no output `{}`",
                        r.step, r.output
                    ),
                )),
                Some(_) if !before.contains(&r.step) => issues.push((
                    here,
                    format!(
                        "`{source}`: step `{}` is not an earlier step of `{}` (add it to `after`)",
                        r.step, step.id
                    ),
                )),
                Some(_) => {}
            }
        }
    }
}

/// The step id under which a run's inputs are carried (`input.<name>`).
pub const INPUT_STEP: &str = "input";

/// The checks of a step that delegates: its children's inputs, shares, tools and returns, and
/// each child spec given inline (a file's is checked when it is loaded and frozen inline).
fn delegation(
    spec: &Spec,
    i: usize,
    step: &StepSpec,
    delegate: &Delegate,
    catalog: &dyn ProviderCatalog,
) -> Vec<(Vec<Seg>, String)> {
    let mut issues = Vec::new();
    check_delegating_step(i, step, delegate, &mut issues);
    let before = ancestors(spec, &step.id);
    let mut returned: HashMap<&str, usize> = HashMap::new();
    for (k, child) in delegate.children.iter().enumerate() {
        let here = |rest: &[Seg]| {
            let mut p = vec![
                key("steps"),
                Seg::Index(i),
                key("delegate"),
                key("children"),
                Seg::Index(k),
            ];
            p.extend_from_slice(rest);
            p
        };
        check_child_budget(child, &here, &mut issues);
        for (name, input) in &child.inputs {
            let there = here(&[key("inputs"), key(name)]);
            match (&input.carried, &input.value) {
                (Some(source), None) => {
                    if let Some(message) = not_carried_to_child(spec, &step.id, &before, source) {
                        issues.push((there, message));
                    }
                }
                (None, Some(_)) => {}
                _ => issues.push((there, "give exactly one of `carried` and `value`".into())),
            }
        }
        for (s, name) in child.share.iter().enumerate() {
            if !spec.providers.contains_key(name) {
                issues.push((
                    here(&[key("share"), Seg::Index(s)]),
                    format!("the parent has no provider `{name}` to share"),
                ));
            }
        }
        for name in child.returns.keys() {
            if let Some(prev) = returned.insert(name, k) {
                issues.push((
                    here(&[key("returns"), key(name)]),
                    format!("output `{name}` is already returned by children[{prev}]"),
                ));
            }
        }
        let Some(child_spec) = child.spec.inline() else {
            continue;
        };
        for (path, message) in validate(child_spec, catalog) {
            let mut p = here(&[key("spec")]);
            p.extend(path);
            issues.push((p, message));
        }
        issues.extend(child_fits(spec, child, child_spec, &here));
    }
    issues
}

/// The checks of step `i`, which delegates, on its own: it names no provider, tools, commit
/// or publishes of its own, and has 1 to [`CHILDREN_MAX`](crate::spec::CHILDREN_MAX) children
/// run 1 to [`FAN_OUT_MAX`](crate::spec::FAN_OUT_MAX) at a time.
fn check_delegating_step(
    i: usize,
    step: &StepSpec,
    delegate: &Delegate,
    issues: &mut Vec<Problem>,
) {
    use crate::spec::{CHILDREN_MAX, FAN_OUT_MAX};
    if !step.provider.is_empty() || !step.tools.is_empty() {
        issues.push((
            step_field(i, "delegate"),
            "a step that delegates names no `provider` or `tools`: its children act".into(),
        ));
    }
    if step.commit == crate::spec::CommitRule::Required {
        issues.push((
            step_field(i, "commit"),
            "a step that delegates cannot require a commit of its own: mark it `required` \
             (attained when every child attained, and each child judges its own commits)"
                .into(),
        ));
    }
    if !step.publishes.is_empty() {
        issues.push((
            step_field(i, "publishes"),
            "a step that delegates publishes what its children return (`returns`)".into(),
        ));
    }
    if delegate.children.is_empty() || delegate.children.len() > CHILDREN_MAX {
        let mut at = step_field(i, "delegate");
        at.push(key("children"));
        issues.push((at, format!("give 1 to {CHILDREN_MAX} children")));
    }
    if delegate.fan_out == 0 || delegate.fan_out > FAN_OUT_MAX {
        let mut at = step_field(i, "delegate");
        at.push(key("fan_out"));
        issues.push((at, format!("must be 1 to {FAN_OUT_MAX}")));
    }
}

/// The check of a child's `budget`: none of its limits that is given is zero.
fn check_child_budget(child: &Child, here: &dyn Fn(&[Seg]) -> Vec<Seg>, issues: &mut Vec<Problem>) {
    let b = &child.budget;
    for (name, value) in [
        ("decisions", b.decisions.map(u64::from)),
        ("calls", b.calls.map(u64::from)),
        ("tokens", b.tokens),
        ("cost_micro_usd", b.cost_micro_usd),
        ("deadline_ms", b.deadline_ms),
    ] {
        if value == Some(0) {
            issues.push((
                here(&[key("budget"), key(name)]),
                "must be at least 1 (a zero would exhaust the child before it starts)".into(),
            ));
        }
    }
}

/// Why `source` cannot be carried into a child of step `step` (which comes after the steps
/// `before`), if it cannot: it is a declared input of the run, or an output published by an
/// earlier step.
fn not_carried_to_child(
    spec: &Spec,
    step: &StepId,
    before: &BTreeSet<StepId>,
    source: &str,
) -> Option<String> {
    match CarriedRef::parse(source) {
        None => Some(format!(
            "`{source}` is not a carried output (write `step.output`)"
        )),
        Some(r) if &*r.step.0 == INPUT_STEP => (!spec.inputs.contains(&r.output))
            .then(|| format!("`{source}`: the spec declares no input `{}`", r.output)),
        Some(r) => match spec.step(&r.step) {
            Some(p) if p.outputs().any(|o| o == &r.output) => {
                (!before.contains(&r.step)).then(|| {
                    format!(
                        "`{source}`: step `{}` is not an earlier step of `{step}` (add it to `after`)",
                        r.step
                    )
                })
            }
            _ => Some(format!("`{source}`: no step publishes it")),
        },
    }
}

/// A child spec against its delegation: it declares exactly the inputs it is given, has the
/// providers shared with it, calls no tool beyond the delegation's `tools` nor, on a shared
/// provider, beyond the parent's, and publishes what it is asked to return.
fn child_fits(
    parent: &Spec,
    child: &Child,
    spec: &Spec,
    here: &dyn Fn(&[Seg]) -> Vec<Seg>,
) -> Vec<(Vec<Seg>, String)> {
    let mut issues = Vec::new();
    for name in spec.inputs.names() {
        if !child.inputs.contains_key(name) {
            issues.push((
                here(&[key("inputs")]),
                format!("the child spec takes input `{name}`, which is not given"),
            ));
        }
    }
    for name in child.inputs.keys() {
        if !spec.inputs.contains(name) {
            issues.push((
                here(&[key("inputs"), key(name)]),
                format!("the child spec declares no input `{name}` (its `inputs`)"),
            ));
        }
    }
    for name in &child.share {
        if !spec.providers.contains_key(name) {
            issues.push((
                here(&[key("share")]),
                format!("shares `{name}`, which the child spec does not name among its providers"),
            ));
        }
    }
    check_child_tools(parent, child, spec, here, &mut issues);
    for (name, source) in &child.returns {
        let there = here(&[key("returns"), key(name)]);
        match CarriedRef::parse(source) {
            Some(r)
                if spec
                    .step(&r.step)
                    .is_some_and(|p| p.outputs().any(|o| o == &r.output)) => {}
            _ => issues.push((
                there,
                format!("`{source}` is not an output the child spec publishes (`step.output`)"),
            )),
        }
    }
    issues
}

/// The tools the steps of `parent` may call on `provider`.
fn parent_tools<'a>(parent: &'a Spec, provider: &str) -> BTreeSet<&'a str> {
    parent
        .steps
        .iter()
        .filter(|s| s.provider == provider)
        .flat_map(|s| s.tools.iter().map(String::as_str))
        .collect()
}

/// The checks of a child's tools: the delegation's `tools` name the child spec's providers
/// and, on a shared provider, only tools the parent may call; the child spec's steps call
/// nothing beyond them.
fn check_child_tools(
    parent: &Spec,
    child: &Child,
    spec: &Spec,
    here: &dyn Fn(&[Seg]) -> Vec<Seg>,
    issues: &mut Vec<Problem>,
) {
    if let Some(tools) = &child.tools {
        for (provider, listed) in tools {
            if !spec.providers.contains_key(provider) {
                issues.push((
                    here(&[key("tools"), key(provider)]),
                    format!("the child spec has no provider `{provider}`"),
                ));
            }
            if child.share.contains(provider) {
                let allowed = parent_tools(parent, provider);
                for tool in listed {
                    if !allowed.contains(tool.as_str()) {
                        issues.push((
                            here(&[key("tools"), key(provider)]),
                            format!(
                                "`{tool}` on shared provider `{provider}` is not a tool the parent may call there: a child's tools can only shrink"
                            ),
                        ));
                    }
                }
            }
        }
    }
    for (s, step) in spec.steps.iter().enumerate() {
        if step.delegate.is_some() {
            continue;
        }
        let allowed: Option<BTreeSet<&str>> = match &child.tools {
            Some(tools) => Some(
                tools
                    .get(&step.provider)
                    .map(|t| t.iter().map(String::as_str).collect())
                    .unwrap_or_default(),
            ),
            None if child.share.contains(&step.provider) => {
                Some(parent_tools(parent, &step.provider))
            }
            None => None,
        };
        let Some(allowed) = allowed else { continue };
        for tool in &step.tools {
            if !allowed.contains(tool.as_str()) {
                issues.push((
                    here(&[key("spec"), key("steps"), Seg::Index(s), key("tools")]),
                    format!(
                        "`{tool}` on `{}` is beyond what the delegation allows the child: a child's tools can only shrink",
                        step.provider
                    ),
                ));
            }
        }
    }
}

/// Makes every relative path in `spec` absolute against `base_dir` (the spec's folder, itself
/// absolute), so the frozen spec means the same thing from any working directory and when a
/// run is resumed from elsewhere: the default decider's script, each MCP server's working
/// directory (default: `base_dir`) and its program when given as a path, an OpenAPI document,
/// the policy files, and the path settings of reference providers.
pub fn normalise_paths(spec: &mut Spec, base_dir: &Path, catalog: &dyn ProviderCatalog) {
    let join = |p: &str| -> String {
        if Path::new(p).is_absolute() {
            p.to_owned()
        } else {
            base_dir.join(p).display().to_string()
        }
    };
    let scripted = |d: &Option<String>| {
        d.as_deref()
            .map(DeciderRef::parse)
            .filter(|r| r.kind == DeciderKind::Scripted)
            .map(|r| DeciderRef::scripted(join(&r.arg)).to_string())
    };
    if let Some(d) = scripted(&spec.decider) {
        spec.decider = Some(d);
    }
    spec.policy = spec.policy.iter().map(|p| join(p)).collect();
    for provider in spec.providers.values_mut() {
        let settings = catalog.path_settings(provider);
        if let Some(config) = provider.config.as_mut().and_then(|c| c.as_object_mut()) {
            for k in settings {
                if let Some(serde_json::Value::String(p)) = config.get_mut(&k) {
                    *p = join(p);
                }
            }
        }
        if let Some(m) = provider.mcp.as_mut()
            && m.url.is_none()
        {
            let cwd = m
                .cwd
                .as_deref()
                .map_or_else(|| base_dir.display().to_string(), join);
            if let Some(program) = m.command.first_mut()
                && program.contains('/')
                && Path::new(program.as_str()).is_relative()
            {
                *program = Path::new(&cwd).join(&*program).display().to_string();
            }
            m.cwd = Some(cwd);
        }
        if let Some(api) = provider.openapi.as_mut() {
            let is_url =
                api.document.starts_with("http://") || api.document.starts_with("https://");
            if !is_url {
                api.document = join(&api.document);
            }
        }
    }
    for step in &mut spec.steps {
        for child in step.delegate.iter_mut().flat_map(|d| d.children.iter_mut()) {
            child.policy = child.policy.iter().map(|p| join(p)).collect();
            if let Some(d) = scripted(&child.decider) {
                child.decider = Some(d);
            }
            match &mut child.spec {
                crate::spec::ChildSpec::Path(p) => *p = join(p),
                crate::spec::ChildSpec::Inline(inline) => {
                    normalise_paths(inline, base_dir, catalog)
                }
            }
        }
    }
}

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// The steps `id` comes after, transitively.
pub fn ancestors(spec: &Spec, id: &StepId) -> BTreeSet<StepId> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&StepId> = spec
        .step(id)
        .map(|s| s.after.iter().collect())
        .unwrap_or_default();
    while let Some(dep) = stack.pop() {
        if seen.insert(dep.clone())
            && let Some(s) = spec.step(dep)
        {
            stack.extend(s.after.iter());
        }
    }
    seen
}

fn find_cycle(spec: &Spec) -> Option<Vec<StepId>> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state: BTreeMap<&StepId, u8> = BTreeMap::new();
    fn visit<'a>(
        spec: &'a Spec,
        id: &'a StepId,
        state: &mut BTreeMap<&'a StepId, u8>,
        path: &mut Vec<&'a StepId>,
    ) -> Option<Vec<StepId>> {
        match state.get(id) {
            Some(2) => return None,
            Some(1) => {
                let start = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<StepId> = path
                    .get(start..)
                    .unwrap_or_default()
                    .iter()
                    .map(|s| (*s).clone())
                    .collect();
                cycle.push(id.clone());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        if let Some(step) = spec.step(id) {
            for dep in &step.after {
                if dep != id
                    && spec.step(dep).is_some()
                    && let Some(c) = visit(spec, dep, state, path)
                {
                    return Some(c);
                }
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    for step in &spec.steps {
        let mut path = Vec::new();
        if let Some(c) = visit(spec, &step.id, &mut state, &mut path) {
            return Some(c);
        }
    }
    None
}

/// Maps field paths of a YAML document to their lines.
#[derive(Default)]
pub struct Locator {
    root: Option<Located>,
}

struct Located {
    line: u64,
    node: Node,
}

enum Node {
    Map(Vec<(String, Located)>),
    Seq(Vec<Located>),
    Scalar,
}

impl Locator {
    /// Builds a locator; a document that does not parse gives one that knows no lines.
    pub fn from_yaml(text: &str) -> Locator {
        let root = serde_saphyr::from_str::<serde_saphyr::Spanned<Node>>(text)
            .ok()
            .map(|s| Located {
                line: s.referenced.line(),
                node: s.value,
            });
        Locator { root }
    }

    /// The line of the deepest node on `path` that the document has.
    pub fn line(&self, path: &[Seg]) -> Option<u64> {
        let mut at = self.root.as_ref()?;
        let mut line = at.line;
        for seg in path {
            let next = match (&at.node, seg) {
                (Node::Map(entries), Seg::Key(k)) => {
                    entries.iter().find(|(ek, _)| ek == k).map(|(_, v)| v)
                }
                (Node::Seq(items), Seg::Index(i)) => items.get(*i),
                _ => None,
            };
            match next {
                Some(n) => {
                    at = n;
                    if n.line > 0 {
                        line = n.line;
                    }
                }
                None => break,
            }
        }
        (line > 0).then_some(line)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<serde_saphyr::Spanned<Node>>()? {
            items.push(Located {
                line: item.referenced.line(),
                node: item.value,
            });
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(k) = map.next_key::<Key>()? {
            let v = map.next_value::<serde_saphyr::Spanned<Node>>()?;
            entries.push((
                k.0,
                Located {
                    line: v.referenced.line(),
                    node: v.value,
                },
            ));
        }
        Ok(Node::Map(entries))
    }
}

struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

//! The commands.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use serde_json::{Value, json};
use warrant_core::event::DeciderIdentity;
use warrant_core::event::{Event, EventKind, StoredEvent};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::Clock;
use warrant_core::ports::{Authority, Decider, EventStore, resolve_run_prefix};
use warrant_core::report::RunReport;
use warrant_core::spec::Format;
use warrant_core::validate;
use warrant_core::{Outcome, Spec};
use warrant_deciders::{Script, ScriptedDecider};
use warrant_engine::{AllOf, AllowAll, Answer, Answered, Engine, RuleList, RunResult};
use warrant_engine::{SystemClock, lease};
use warrant_store::{Durability, SqliteStore};
use warrant_surfaces::ReferenceCatalog;

use crate::cli::{Cli, Command, RunArgs, SchemaKind};
use crate::{Failure, exit};

type Result<T> = std::result::Result<T, Failure>;

/// The user's model table file (`--models`), read when a live decider is built.
static MODELS: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// Largest spec, model table or policy file read (a spec is a page, not a database).
const DOCUMENT_BYTES_MAX: u64 = 4 << 20;
/// Largest script read.
const SCRIPT_BYTES_MAX: u64 = 16 << 20;
/// Longest answer read at an approval prompt.
const ANSWER_BYTES_MAX: u64 = 4096;

/// The text of `path`, at most `max` bytes of UTF-8: a larger file (or an endless one, like
/// `/dev/zero`) is refused by name, never read whole.
pub fn read_text(path: &Path, max: u64, what: &str) -> Result<String> {
    use std::io::Read as _;
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| Failure::invalid(anyhow!("cannot read {what} `{shown}`: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::invalid(anyhow!("cannot read {what} `{shown}`: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(Failure::invalid(anyhow!(
            "{what} `{shown}` is over {} MiB: too large to be one",
            max >> 20
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| Failure::invalid(anyhow!("{what} `{shown}` is not UTF-8 text")))
}

/// The model capability table: built in, with the user's file applied.
fn model_table() -> Result<warrant_deciders::live::models::Table> {
    let table = warrant_deciders::live::models::Table::builtin()
        .map_err(|e| Failure::failed(anyhow!("the built-in model table: {e}")))?;
    match MODELS.get().and_then(Option::as_ref) {
        None => Ok(table),
        Some(path) => {
            let shown = path.display().to_string();
            let text = read_text(path, DOCUMENT_BYTES_MAX, "model table")?;
            table
                .with_overrides(&text, &shown)
                .map_err(|e| Failure::invalid(anyhow!(e)))
        }
    }
}

pub async fn dispatch(cli: Cli) -> Result<u8> {
    let _ = MODELS.set(cli.models.clone());
    let store_path = cli.store;
    match cli.command {
        Command::Run(args) => run(&store_path, args).await,
        Command::Runs { json } => runs(&store_path, json),
        Command::Show { run, json } => show(&store_path, &run, json),
        Command::Events {
            run,
            follow,
            from,
            json,
        } => events(&store_path, &run, follow, from, json).await,
        Command::Report { run, json } => report(&store_path, &run, json),
        Command::Replay { run, verify } => replay(&store_path, &run, verify).await,
        Command::Compare {
            spec,
            deciders,
            json,
        } => compare(&store_path, &spec, &deciders, json).await,
        Command::Validate { spec, connect } => validate_cmd(&spec, connect).await,
        Command::Explain { code } => explain(code.as_deref()),
        Command::Resume {
            run,
            all,
            json,
            quiet,
        } => resume(&store_path, run.as_deref(), all, json, quiet).await,
        Command::Approvals { run, json } => approvals(&store_path, run.as_deref(), json),
        Command::Approve {
            request,
            scope,
            until,
            by,
        } => {
            let until_ms = match until {
                None => None,
                Some(crate::cli::Until::At(ms)) => Some(ms),
                Some(crate::cli::Until::In(ms)) => Some(SystemClock.now_ms().saturating_add(ms)),
            };
            answer(
                &store_path,
                &request,
                Answer::Approve {
                    scope: scope.into(),
                    until_ms,
                },
                by,
            )
            .await
        }
        Command::Deny {
            request,
            reason,
            by,
        } => answer(&store_path, &request, Answer::Deny { reason }, by).await,
        Command::Cancel {
            run,
            reason,
            by,
            wait,
        } => cancel(&store_path, &run, &reason, by, wait).await,
        Command::Reconcile {
            run,
            call,
            happened,
            did_not_happen,
            resend,
            note,
            by,
        } => {
            let said = Reconciled {
                happened,
                did_not_happen,
                resend,
            };
            reconcile(&store_path, &run, &call, said, &note, by).await
        }
        Command::Providers { spec, json } => providers(&spec, json).await,
        Command::McpServe {
            provider,
            config,
            http,
        } => mcp_serve(&provider, config.as_deref(), http.as_deref()).await,
        Command::Models => {
            model_table()?;
            match MODELS.get().and_then(Option::as_ref) {
                Some(path) => outln!(
                    "{}\n# overridden by {}:\n{}",
                    warrant_deciders::live::models::BUILTIN,
                    path.display(),
                    read_text(path, DOCUMENT_BYTES_MAX, "model table")?
                ),
                None => outln!("{}", warrant_deciders::live::models::BUILTIN),
            }
            Ok(0)
        }
        Command::Schema { which } => schema(which),
        Command::Bench(args) => crate::bench::run(&store_path, &args).await,
    }
}

/// `warrant providers SPEC`: what each provider offers, and what it has but does not offer;
/// and, per step, the tools it allows that its provider does not offer.
async fn providers(spec_path: &Path, json: bool) -> Result<u8> {
    let spec = load_spec(spec_path)?;
    let surfaces = connect(&spec).await?;
    let offered = observe_all(&spec, &surfaces).await?;
    let mut out = serde_json::Map::new();
    for name in spec.providers.keys() {
        let (Some(surface), Some(observed)) = (surfaces.get(name), offered.get(name)) else {
            continue;
        };
        let tools: Vec<Value> = observed
            .actions
            .iter()
            .map(|a| json!({"name": a.name, "effect": a.effect, "description": a.description}))
            .collect();
        let unsupported = surface.unsupported();
        if !json {
            outln!(
                "{name}: {} tools offered, {} not offered (version {})",
                tools.len(),
                unsupported.len(),
                observed.version
            );
            for a in observed.actions.iter() {
                outln!(
                    "  {:<6} {:<40} {}",
                    a.effect.to_string(),
                    a.name,
                    a.description
                );
            }
            for u in &unsupported {
                outln!("  -      {u}");
            }
        }
        out.insert(
            name.clone(),
            json!({"version": observed.version, "tools": tools, "not_offered": unsupported}),
        );
    }
    let missing = missing_tools(&spec, &offered);
    if json {
        out.insert("missing".into(), json!(missing));
        outln!("{}", Value::Object(out));
    } else {
        for m in &missing {
            outln!("spec error: {m}");
        }
    }
    Ok(if missing.is_empty() {
        exit::ATTAINED
    } else {
        exit::NOT_ATTAINED
    })
}

/// Starts or reaches every provider of `spec` (relative paths were resolved when it was read).
async fn connect(spec: &Spec) -> Result<warrant_engine::Surfaces> {
    warrant_surfaces::connect(&ReferenceCatalog::default(), spec, Path::new(""))
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))
}

/// What each provider offers now, observed within the spec's call timeout.
async fn observe_all(
    spec: &Spec,
    surfaces: &warrant_engine::Surfaces,
) -> Result<std::collections::BTreeMap<String, warrant_core::ports::Observation>> {
    let limit = Duration::from_millis(spec.limits.call_timeout_ms);
    let mut out = std::collections::BTreeMap::new();
    for (name, surface) in surfaces {
        let observed = tokio::time::timeout(limit, surface.observe())
            .await
            .map_err(|_| {
                Failure::failed(anyhow!(
                    "provider `{name}` did not say what it offers within {} ms",
                    limit.as_millis()
                ))
            })?
            .map_err(|e| Failure::failed(anyhow!("provider `{name}`: {e}")))?;
        out.insert(name.clone(), observed);
    }
    Ok(out)
}

/// Each tool a step allows that its provider does not offer: the spec's error, said before a
/// run blames anyone for it.
fn missing_tools(
    spec: &Spec,
    offered: &std::collections::BTreeMap<String, warrant_core::ports::Observation>,
) -> Vec<String> {
    let mut missing = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let Some(o) = offered.get(&step.provider) else {
            continue;
        };
        for (t, tool) in step.tools.iter().enumerate() {
            if !o.actions.iter().any(|a| &a.name == tool) {
                missing.push(format!(
                    "steps[{i}].tools[{t}]: `{}` does not offer `{tool}` (it offers: {})",
                    step.provider,
                    o.actions
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    missing
}

/// `warrant mcp-serve PROVIDER`: one of Warrant's providers as an MCP server on stdio.
async fn mcp_serve(provider: &str, config: Option<&str>, http: Option<&str>) -> Result<u8> {
    let config: Option<Value> = config
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| Failure::invalid(anyhow!("--config is not JSON: {e}")))?;
    let catalog = ReferenceCatalog::default();
    let made = catalog
        .make(provider, config.as_ref())
        .map_err(|e| Failure::invalid(anyhow!("provider `{provider}`: {e}")))?
        .ok_or_else(|| {
            Failure::invalid(anyhow!(
                "unknown provider `{provider}` (this build knows: {})",
                catalog.names().join(", ")
            ))
        })?;
    use warrant_surfaces::mcp_server::ProviderServer;
    match http {
        None => ProviderServer::new(provider, made).serve_stdio().await,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::invalid(anyhow!("cannot listen on `{addr}`: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            errln!("serving `{provider}` over MCP at http://{bound}/mcp");
            ProviderServer::serve_http(provider, made, listener).await
        }
    }
    .map_err(|e| Failure::failed(anyhow!(e)))?;
    Ok(0)
}

/// Reads and validates a spec file. Errors name the file, field and line (exit 2). Every
/// relative path in it is resolved against its folder and frozen as an absolute path, so the
/// run means the same thing from any working directory, and when it is resumed from another.
pub fn load_spec(path: &Path) -> Result<Spec> {
    let shown = path.display().to_string();
    let text = read_text(path, DOCUMENT_BYTES_MAX, "spec")?;
    let catalog = ReferenceCatalog::default();
    let mut spec = validate::load(&text, Format::of_path(&shown), &shown, &catalog)
        .map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let base = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(folder) => std::path::absolute(folder),
        None => std::env::current_dir(),
    }
    .map_err(|e| Failure::invalid(anyhow!("{shown}: cannot resolve its folder: {e}")))?;
    validate::normalise_paths(&mut spec, &base, &catalog);
    Ok(spec)
}

/// Builds a decider from `kind:argument`. A spec's default decider resolves paths against
/// the spec's folder; the command line's against the working directory.
pub fn load_decider(text: &str, base: Option<&Path>, spec: &Spec) -> Result<Box<dyn Decider>> {
    let (kind, arg) = text.split_once(':').unwrap_or((text, ""));
    match kind {
        "scripted" => {
            if arg.is_empty() {
                return Err(Failure::invalid(anyhow!(
                    "`scripted` needs a path: `scripted:PATH`"
                )));
            }
            let path = match base {
                Some(dir) if Path::new(arg).is_relative() => dir.join(arg),
                _ => PathBuf::from(arg),
            };
            // Recorded as an absolute path: `warrant resume` works from any folder.
            let path = std::path::absolute(&path).unwrap_or(path);
            let shown = path.display().to_string();
            let text = read_text(&path, SCRIPT_BYTES_MAX, "script")?;
            let script =
                Script::parse(&text, Format::of_path(&shown), &shown).map_err(Failure::invalid)?;
            let unknown: Vec<&str> = script
                .steps()
                .filter(|s| spec.steps.iter().all(|st| st.id.0 != *s))
                .collect();
            if !unknown.is_empty() {
                return Err(Failure::invalid(anyhow!(
                    "{shown}: steps: the spec has no step {}",
                    unknown
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Ok(Box::new(ScriptedDecider::new(script, &shown)))
        }
        live if warrant_deciders::live::is_live(live) => {
            let decider = warrant_deciders::live::LiveDecider::parse(text, &model_table()?)
                .map_err(|e| Failure::invalid(anyhow!("decider `{text}`: {e}")))?;
            Ok(Box::new(decider))
        }
        other => Err(Failure::invalid(anyhow!(
            "unknown decider `{other}` (this build knows: scripted:PATH, openai:MODEL, \
             anthropic:MODEL, gemini:MODEL, openai-compatible:MODEL@BASE_URL)"
        ))),
    }
}

fn default_decider(spec: &Spec, spec_path: &Path) -> Result<Box<dyn Decider>> {
    let Some(d) = spec.decider.as_deref() else {
        return Err(Failure::invalid(anyhow!(
            "`{}` names no default decider: pass `--decider scripted:PATH`",
            spec_path.display()
        )));
    };
    load_decider(d, spec_path.parent(), spec)
}

/// Opens (creating if needed) the store for a command that writes.
fn open_store(path: &Path) -> Result<SqliteStore> {
    SqliteStore::open(path, Durability::Fsync).map_err(|e| Failure::invalid(anyhow!("{e}")))
}

fn no_store(path: &Path) -> Failure {
    Failure::invalid(anyhow!(
        "no store at `{}` (run something first, or pass --store / WARRANT_STORE)",
        path.display()
    ))
}

/// Opens an existing store for a command that writes to it (approve, cancel, resume...): a
/// missing file is an error, not a new store.
fn open_existing(path: &Path) -> Result<SqliteStore> {
    if !path.exists() {
        return Err(no_store(path));
    }
    open_store(path)
}

/// Opens an existing store for a command that only reads it: read-only, so nothing in the
/// file changes (and a store on read-only media can be read).
fn open_reading(path: &Path) -> Result<SqliteStore> {
    if !path.exists() {
        return Err(no_store(path));
    }
    SqliteStore::open_read_only(path).map_err(|e| Failure::invalid(anyhow!("{e}")))
}

fn resolve_run(store: &dyn EventStore, run: &str) -> Result<RunId> {
    let runs = store.runs().map_err(|e| Failure::failed(anyhow!("{e}")))?;
    if run == "last" {
        return runs
            .first()
            .map(|r| r.run_id.clone())
            .ok_or_else(|| Failure::invalid(anyhow!("the store has no runs")));
    }
    resolve_run_prefix(&runs, run).map_err(|e| Failure::invalid(anyhow!(e)))
}

fn read_log(store: &dyn EventStore, run: &RunId) -> Result<Vec<Arc<Event>>> {
    let events = store
        .read(run, 1)
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    Ok(events.into_iter().map(|s| s.event).collect())
}

fn outcome_code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Attained => exit::ATTAINED,
        _ => exit::NOT_ATTAINED,
    }
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(Failure::failed)?;
    outln!("{text}");
    Ok(())
}

/// The authority a run starts with: the rule-list flags and the Cedar policies (the spec's,
/// relative to it, and `--policy`), composed so that any answer but allow wins.
fn authority(
    spec: &Spec,
    spec_path: &Path,
    deny: &[String],
    ask: &[String],
    extra: &[PathBuf],
) -> Result<Arc<dyn Authority>> {
    let mut parts: Vec<Arc<dyn Authority>> = Vec::new();
    if !deny.is_empty() || !ask.is_empty() {
        parts.push(Arc::new(RuleList::new(
            deny.iter().cloned(),
            ask.iter().cloned(),
        )));
    }
    // The spec's policy paths were made absolute when it was read.
    let base = spec_path.parent().unwrap_or(Path::new(""));
    let mut paths: Vec<PathBuf> = spec.policy.iter().map(|p| base.join(p)).collect();
    paths.extend(extra.iter().cloned());
    if !paths.is_empty() {
        let files = warrant_policy::policy_files(&paths).map_err(Failure::invalid)?;
        let cedar = warrant_policy::CedarAuthority::new(files, spec.trusted_providers())
            .map_err(Failure::invalid)?;
        parts.push(Arc::new(cedar));
    }
    Ok(match parts.len() {
        0 => Arc::new(AllowAll),
        1 => parts.remove(0),
        _ => Arc::new(AllOf::new(parts)),
    })
}

/// The execution control a run requires, from the spec and `--execution-control`.
type ControlSetting = (Option<Arc<dyn warrant_core::ports::ExecutionControl>>, u64);

fn execution_control(spec: &Spec, url: Option<&str>) -> Result<Option<ControlSetting>> {
    let timeout_ms = spec
        .execution_control
        .as_ref()
        .map_or(2_000, |c| c.timeout_ms);
    let url = url
        .map(str::to_owned)
        .or_else(|| spec.execution_control.as_ref().and_then(|c| c.url.clone()));
    match (url, &spec.execution_control) {
        (Some(url), _) => {
            let control =
                warrant_policy::HttpControl::new(&url).map_err(|e| Failure::invalid(anyhow!(e)))?;
            Ok(Some((Some(Arc::new(control)), timeout_ms)))
        }
        (None, Some(_)) => Ok(Some((None, timeout_ms))),
        (None, None) => Ok(None),
    }
}

/// Rebuilds the execution control a run recorded. Fails closed on one this build cannot
/// rebuild.
fn rebuild_control(id: &RunId, d: Option<&serde_json::Value>) -> Result<Option<ControlSetting>> {
    let Some(d) = d else { return Ok(None) };
    let timeout_ms = d
        .get("timeout_ms")
        .and_then(|t| t.as_u64())
        .unwrap_or(2_000);
    if d.get("configured").and_then(|c| c.as_bool()) != Some(true) {
        return Ok(Some((None, timeout_ms)));
    }
    match d.pointer("/control/http/url").and_then(|u| u.as_str()) {
        Some(url) => {
            let control =
                warrant_policy::HttpControl::new(url).map_err(|e| Failure::invalid(anyhow!(e)))?;
            Ok(Some((Some(Arc::new(control)), timeout_ms)))
        }
        None => Err(Failure::invalid(anyhow!(
            "run `{id}` required an execution control this build cannot rebuild ({d}): not resuming it"
        ))),
    }
}

/// Rebuilds the authority a run recorded in `run_started`. Fails closed: an authority this
/// build cannot rebuild is an error, never a silent allow-all.
fn rebuild_authority(id: &RunId, d: Option<&serde_json::Value>) -> Result<Arc<dyn Authority>> {
    let Some(d) = d else {
        return Ok(Arc::new(AllowAll));
    };
    if d.get("allow_all").is_some() {
        return Ok(Arc::new(AllowAll));
    }
    if let Some(rules) = RuleList::from_description(d) {
        let rules = rules.map_err(|e| {
            Failure::invalid(anyhow!(
                "run `{id}` was ruled by a rule list that cannot be rebuilt ({e}): not resuming it"
            ))
        })?;
        return Ok(Arc::new(rules));
    }
    if let Some(cedar) = warrant_policy::CedarAuthority::from_description(d) {
        let cedar = cedar.map_err(|e| {
            Failure::invalid(anyhow!(
                "run `{id}` was ruled by Cedar policies that cannot be rebuilt ({e}): not resuming it under a weaker authority"
            ))
        })?;
        return Ok(Arc::new(cedar));
    }
    if let Some(parts) = d.get("all_of").and_then(|p| p.as_array()) {
        let parts = parts
            .iter()
            .map(|p| rebuild_authority(id, Some(p)))
            .collect::<Result<Vec<_>>>()?;
        return Ok(Arc::new(AllOf::new(parts)));
    }
    Err(Failure::invalid(anyhow!(
        "run `{id}` was ruled by an authority this build cannot rebuild ({d}): not resuming it"
    )))
}

async fn run(store_path: &Path, args: RunArgs) -> Result<u8> {
    let begun_ms = SystemClock.now_ms();
    // Everything the user gave is checked before the store is touched: invalid input writes
    // nothing.
    let mut spec = load_spec(&args.spec)?;
    args.limits
        .apply(&mut spec.limits)
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    let decider = match &args.decider {
        Some(d) => load_decider(d, None, &spec)?,
        None => default_decider(&spec, &args.spec)?,
    };
    let surfaces = connect(&spec).await?;
    if !args.deny_tools.is_empty() || !args.ask_tools.is_empty() {
        let offered = observe_all(&spec, &surfaces).await?;
        check_rule_tools(&offered, &args.deny_tools, &args.ask_tools)?;
    }
    let authority = authority(
        &spec,
        &args.spec,
        &args.deny_tools,
        &args.ask_tools,
        &args.policies,
    )?;
    let control = execution_control(&spec, args.execution_control.as_deref())?;
    let store: Arc<SqliteStore> = Arc::new(open_store(store_path)?);
    let user = args.user.clone().unwrap_or_else(|| operator(None));
    let mut engine = Engine::new(store.clone())
        .with_authority(authority)
        .acting_for(&args.tenant, &user);
    if let Some((control, timeout_ms)) = control {
        engine = engine.with_execution_control(control, timeout_ms);
    }
    if !args.quiet {
        engine.subscribe("progress", Box::new(crate::progress::Progress::new()));
    }
    let setup_ms = SystemClock.now_ms().saturating_sub(begun_ms);
    let mut result = engine
        .run_with_setup(Arc::new(spec), decider.as_ref(), &surfaces, Some(setup_ms))
        .await
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    // In a terminal, approvals are asked for in place; elsewhere the run waits durably.
    let interactive =
        !args.no_prompt && (args.prompt || std::io::IsTerminal::is_terminal(&std::io::stdin()));
    if interactive {
        for _ in 0..APPROVAL_ROUNDS_MAX {
            if result.outcome.is_some() || result.state.pending_approvals().next().is_none() {
                break;
            }
            for f in engine.drain_subscribers().await {
                errln!("warning: subscriber `{}` stopped: {}", f.name, f.error);
            }
            if !ask_in_place(&engine, &result).await? {
                break;
            }
            result = engine
                .resume(&result.run_id, decider.as_ref(), &surfaces)
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        }
    }
    for f in engine.drain_subscribers().await {
        errln!("warning: subscriber `{}` stopped: {}", f.name, f.error);
    }
    print_result(&result, args.json, store_path)
}

/// Refuses a `--deny-tool` or `--ask-tool` that names no tool any provider offers: a typo
/// there would silently rule on nothing.
fn check_rule_tools(
    offered: &std::collections::BTreeMap<String, warrant_core::ports::Observation>,
    deny: &[String],
    ask: &[String],
) -> Result<()> {
    let known: std::collections::BTreeSet<&str> = offered
        .values()
        .flat_map(|o| o.actions.iter().map(|a| a.name.as_str()))
        .collect();
    let flags = deny
        .iter()
        .map(|t| ("--deny-tool", t))
        .chain(ask.iter().map(|t| ("--ask-tool", t)));
    for (flag, tool) in flags {
        if !known.contains(tool.as_str()) {
            return Err(Failure::invalid(anyhow!(
                "{flag} `{tool}` names no tool any provider of this spec offers (they offer: {})",
                known.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// Most rounds of in-place approval prompts in one `warrant run`.
const APPROVAL_ROUNDS_MAX: usize = 32;

fn read_answer(question: &str) -> Result<String> {
    use std::io::{BufRead as _, Read as _};
    errln!("{question}");
    let mut line = Vec::new();
    let read = tokio::task::block_in_place(|| {
        std::io::stdin()
            .lock()
            .take(ANSWER_BYTES_MAX)
            .read_until(b'\n', &mut line)
    });
    match read {
        Ok(_) => Ok(String::from_utf8_lossy(&line).trim().to_owned()),
        Err(e) => Err(Failure::failed(anyhow!("reading the answer: {e}"))),
    }
}

/// The approval request `id` as recorded, when it is still pending now: another terminal may
/// have answered it meanwhile.
fn still_pending(engine: &Engine, run: &RunId, id: &str) -> Result<Option<String>> {
    let state = engine
        .fold(run)
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    Ok(match state.approval(id).map(|a| &a.status) {
        Some(warrant_core::fold::ApprovalStatus::Pending) => None,
        Some(other) => Some(approval_status_name(other).to_owned()),
        None => Some("gone".to_owned()),
    })
}

/// Shows each pending approval request and records the person's answer. Returns whether the
/// run can go on: an answer was given here, or another terminal answered meanwhile.
async fn ask_in_place(engine: &Engine, result: &RunResult) -> Result<bool> {
    let events = read_log(engine.store().as_ref(), &result.run_id)?;
    let by = operator(None);
    let mut answered = false;
    for a in result.state.pending_approvals() {
        if let Some(status) = still_pending(engine, &result.run_id, &a.id)? {
            errln!("\napproval {}: already {status} elsewhere", a.id);
            answered = true;
            continue;
        }
        let Some(EventKind::ApprovalRequested {
            tool,
            provider,
            args,
            provenance,
            reason,
            expires_at_ms,
            ..
        }) = events.iter().map(|e| &e.kind).find(
            |k| matches!(k, EventKind::ApprovalRequested { request, .. } if *request == a.id),
        )
        else {
            continue;
        };
        errln!(
            "\napproval {}: `{tool}` on {provider}\n  why:  {reason}\n  args: {args}\n  expires at {}",
            a.id,
            when(*expires_at_ms)
        );
        for label in provenance {
            errln!("    {} <- {}", label.pointer, label_source(label));
        }
        loop {
            let answer = read_answer(
                "approve once [y], for the rest of the run [r], deny [n], or leave it waiting [w]?",
            )?;
            let decision = match answer.to_lowercase().as_str() {
                "y" | "yes" => Some(Answer::Approve {
                    scope: warrant_core::event::ApprovalScope::Once,
                    until_ms: None,
                }),
                "r" | "run" => Some(Answer::Approve {
                    scope: warrant_core::event::ApprovalScope::Run,
                    until_ms: None,
                }),
                "n" | "no" => {
                    let reason = read_answer("why?")?;
                    Some(Answer::Deny {
                        reason: if reason.is_empty() {
                            "denied at the prompt".into()
                        } else {
                            reason
                        },
                    })
                }
                "w" | "wait" | "" => None,
                _ => continue,
            };
            if let Some(decision) = decision {
                match engine.answer(&a.id, decision, &by).await {
                    Ok(_) => answered = true,
                    // Answered in another terminal while this one asked: that answer stands.
                    Err(e) => match still_pending(engine, &result.run_id, &a.id)? {
                        Some(status) => {
                            errln!(
                                "approval {} was {status} elsewhere meanwhile; that answer stands",
                                a.id
                            );
                            answered = true;
                        }
                        None => return Err(Failure::failed(anyhow!("{e}"))),
                    },
                }
            }
            break;
        }
    }
    Ok(answered)
}

/// Milliseconds since the epoch as a UTC time a person reads (`2026-12-01 12:15:09 UTC`).
pub fn when(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
}

/// Where an argument's value came from, in words.
fn label_source(label: &warrant_core::provenance::ArgLabel) -> String {
    label.source.to_string()
}

fn approval_status_name(status: &warrant_core::fold::ApprovalStatus) -> &'static str {
    use warrant_core::fold::ApprovalStatus;
    match status {
        ApprovalStatus::Pending => "pending",
        ApprovalStatus::Approved { .. } => "approved",
        ApprovalStatus::Denied { .. } => "denied",
        ApprovalStatus::Expired => "expired",
        ApprovalStatus::Withdrawn => "withdrawn",
    }
}

/// The calls a run waits on, as the operator needs them to act: each in-doubt call with its
/// real id, tool, provider, arguments and what is known; each pending approval.
fn waiting_rows(state: &warrant_core::RunState) -> (Vec<Value>, Vec<Value>) {
    let doubts = state
        .in_doubt()
        .map(|c| {
            json!({
                "call": c.id,
                "tool": c.tool,
                "provider": state.provider_of(c.step),
                "args": c.executed,
                "args_digest": c.executed.as_ref().map(|a| warrant_core::canon::digest(a)),
                "known": c.doubt.map(|d| d.describe()),
            })
        })
        .collect();
    let approvals = state
        .pending_approvals()
        .map(|a| {
            let args = state.call(a.call).map(|c| c.proposed.clone());
            json!({"request": a.id, "call": a.call, "tool": a.tool, "provider": a.provider,
                   "args": args, "args_digest": a.args_digest, "expires_at_ms": a.expires_at_ms})
        })
        .collect();
    (doubts, approvals)
}

/// What an operator does about what a run waits on, with the real ids.
fn waiting_hints(run: &RunId, doubts: &[Value], approvals: &[Value]) {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_owned();
    for w in doubts {
        outln!(
            "waiting  {} `{}` on {} is in doubt: {}\n         arguments {}",
            text(w, "call"),
            text(w, "tool"),
            text(w, "provider"),
            text(w, "known"),
            w["args"]
        );
        outln!(
            "         find out whether it happened, then: warrant reconcile {run} {} --happened (or --did-not-happen [--resend]), and warrant resume {run}",
            text(w, "call")
        );
    }
    for a in approvals {
        outln!(
            "approval {}: `{}` on {} needs approval (arguments {}); warrant approve {} (or warrant deny {} --reason ...), then warrant resume {run}",
            text(a, "request"),
            text(a, "tool"),
            text(a, "provider"),
            a["args"],
            text(a, "request"),
            text(a, "request")
        );
    }
}

/// Prints how a run ended (or why it waits) and returns the exit code.
fn print_result(result: &RunResult, json: bool, store_path: &Path) -> Result<u8> {
    let report = RunReport::from_state(&result.state);
    let (doubts, approvals) = waiting_rows(&result.state);
    if json {
        print_json(&json!({
            "run_id": result.run_id,
            "outcome": result.outcome.as_ref().map_or("waiting", Outcome::name),
            "outcome_detail": result.outcome,
            "answer": report.answer,
            "waiting_on": doubts,
            "approvals": approvals,
            "route": report.route,
            "route_key": report.route_key,
            "conformant": report.conformant,
            "carried": report.carried,
            "unsettled": report.unsettled,
            "elapsed_ms": report.timings.elapsed_ms,
            "setup_ms": report.timings.setup_ms,
            "store": store_path,
        }))?;
    } else {
        out!("{}", report.render());
        waiting_hints(&result.run_id, &doubts, &approvals);
    }
    Ok(match &result.outcome {
        Some(o) => outcome_code(o),
        None => exit::WAITING,
    })
}

fn runs(store_path: &Path, json: bool) -> Result<u8> {
    let store = open_reading(store_path)?;
    let runs = store.runs().map_err(|e| Failure::failed(anyhow!("{e}")))?;
    let now = SystemClock.now_ms();
    if json {
        let rows: Vec<Value> = runs
            .iter()
            .map(|r| {
                let mut v = json!(r);
                v["status"] = json!(lease::shown_status(r, now));
                v
            })
            .collect();
        print_json(&rows)?;
        return Ok(exit::ATTAINED);
    }
    if runs.is_empty() {
        errln!("no runs in `{}`", store_path.display());
    }
    for r in &runs {
        outln!(
            "{:<22} {:<13} {:<16} {:>5} events  {}",
            r.run_id,
            lease::shown_status(r, now),
            r.spec_id,
            r.events,
            r.decider
        );
    }
    Ok(exit::ATTAINED)
}

/// A run's log, its state and its report, from a store opened read-only.
fn load_report(
    store_path: &Path,
    run: &str,
) -> Result<(SqliteStore, RunId, Vec<Arc<Event>>, RunReport)> {
    let store = open_reading(store_path)?;
    let id = resolve_run(&store, run)?;
    let events = read_log(&store, &id)?;
    let report =
        RunReport::from_events(&events).map_err(|e| Failure::failed(anyhow!("run `{id}`: {e}")))?;
    Ok((store, id, events, report))
}

/// The status `show` and `runs` print: the report's, or `interrupted` when the run is running
/// and no process drives it.
fn shown_status(store: &SqliteStore, id: &RunId, report: &RunReport) -> String {
    store
        .summary(id)
        .ok()
        .flatten()
        .filter(|r| lease::interrupted(r, SystemClock.now_ms()) && report.status == "running")
        .map_or_else(|| report.status.clone(), |_| "interrupted".to_owned())
}

fn show(store_path: &Path, run: &str, json: bool) -> Result<u8> {
    let (store, id, events, report) = load_report(store_path, run)?;
    let state = warrant_core::RunState::from_events(events.iter().map(|e| &**e))
        .map_err(|e| Failure::failed(anyhow!("run `{id}`: {e}")))?;
    let status = shown_status(&store, &id, &report);
    let last = events
        .last()
        .map(|e| (e.seq, e.kind.name()))
        .unwrap_or((0, "none"));
    let (doubts, approvals) = waiting_rows(&state);
    if json {
        print_json(&json!({
            "run_id": report.run_id,
            "status": status,
            "outcome": report.outcome.as_ref().map(Outcome::name),
            "spec": report.spec,
            "decider": report.decider,
            "answer": report.answer,
            "steps": report.steps.iter().map(|s| json!({
                "id": s.id, "status": s.status, "decisions": s.decisions, "calls": s.calls.len(),
                "answer": s.answer,
            })).collect::<Vec<_>>(),
            "waiting_on": doubts,
            "approvals": approvals,
            "unsettled": report.unsettled,
            "warnings": report.warnings,
            "last_event": {"seq": last.0, "type": last.1},
        }))?;
        return Ok(exit::ATTAINED);
    }
    outln!("run      {}", report.run_id);
    outln!("spec     {} ({})", report.spec.id, report.spec.hash);
    outln!("decider  {}", report.decider);
    outln!("status   {status}");
    if let Some(a) = &report.answer {
        outln!("answer   {} ({})", a.text, a.kind);
    }
    outln!("last     event {} `{}`", last.0, last.1);
    for s in &report.steps {
        outln!(
            "  {:<10} {:<13} {} decisions, {} calls",
            s.id.0,
            s.status,
            s.decisions,
            s.calls.len()
        );
        for c in &s.calls {
            let status = match (c.status, state.call(c.call)) {
                (Some(st), _) => st.to_string(),
                (None, Some(r)) if r.in_doubt => "in doubt".to_owned(),
                (None, Some(r)) if r.awaiting.is_some() => "held for approval".to_owned(),
                _ => "in flight".to_owned(),
            };
            outln!("    {:<4} {:<22} {}", c.call.to_string(), c.tool, status);
        }
    }
    for w in &report.warnings {
        outln!("warning  {w}");
    }
    waiting_hints(&id, &doubts, &approvals);
    Ok(exit::ATTAINED)
}

fn render_event(e: &StoredEvent) -> String {
    let ev = &e.event;
    let detail = match &ev.kind {
        EventKind::RunStarted { spec, decider, .. } => {
            format!("spec {} decider {decider}", spec.id)
        }
        EventKind::StepStarted { step, provider } => format!("{step} on {provider}"),
        EventKind::Observed {
            provider,
            version,
            actions,
            ..
        } => format!("{provider} {version} ({} actions)", actions.len()),
        EventKind::ObserveFailed {
            provider, fault, ..
        } => format!("{provider}: {}", fault.message),
        EventKind::Decided {
            step,
            decision_no,
            decision,
            ..
        } => format!(
            "{step} #{decision_no} {}",
            serde_json::to_string(decision).unwrap_or_default()
        ),
        EventKind::DecideFailed { fault, .. } => fault.message.clone(),
        EventKind::CallStarted {
            call,
            tool,
            handle,
            resend_of,
            ..
        } => format!(
            "{call} {tool} {}{}",
            handle.map(|h| h.to_string()).unwrap_or_default(),
            resend_of
                .map(|c| format!("(sent again for {c})"))
                .unwrap_or_default()
        ),
        EventKind::CallDispatched {
            call,
            effect,
            idempotency_key,
            ..
        } => format!("{call} {effect} key {idempotency_key}"),
        EventKind::CallFinished {
            call,
            status,
            fault,
            ..
        } => format!(
            "{call} {status}{}",
            fault
                .as_ref()
                .map(|f| format!(" [{}] {}", f.layer, f.message))
                .unwrap_or_default()
        ),
        EventKind::Carried {
            name,
            value,
            lineage,
        } => format!("{name} = {value} <- {}", lineage.call),
        EventKind::StepFinished { step, end } => {
            format!("{step} {}", serde_json::to_string(end).unwrap_or_default())
        }
        EventKind::StepSkipped {
            step, blocked_by, ..
        } => format!("{step} blocked by {blocked_by}"),
        EventKind::RunFinished { outcome } => outcome.name().to_owned(),
        EventKind::RunResumed { in_flight, .. } => in_flight
            .map(|c| format!("{c} was in flight"))
            .unwrap_or_default(),
        EventKind::ApprovalRequested {
            request,
            call,
            tool,
            reason,
            ..
        } => {
            format!("{request} for {call} {tool}: {reason}")
        }
        EventKind::ApprovalResolved {
            request,
            approved,
            scope,
            by,
            reason,
            ..
        } => {
            if *approved {
                format!(
                    "{request} approved ({}) by {by}",
                    scope.map(|s| s.as_str()).unwrap_or_default()
                )
            } else {
                format!("{request} denied by {by}: {reason}")
            }
        }
        EventKind::ApprovalExpired { request } => format!("{request} expired"),
        EventKind::ApprovalConsumed { request, call } => format!("{request} used by {call}"),
        EventKind::CallInDoubt {
            call, tool, reason, ..
        } => format!("{call} {tool}: {reason}"),
        EventKind::CallReconciled {
            call,
            happened,
            by,
            resend,
            ..
        } => {
            format!(
                "{call} {} (by {by})",
                match (happened, resend) {
                    (true, _) => "happened",
                    (false, true) => "did not happen; send it again",
                    (false, false) => "did not happen",
                }
            )
        }
        EventKind::Unrecognized { type_name, .. } => {
            format!("(a `{type_name}` event this build does not know)")
        }
    };
    format!(
        "{:>5} {:>8} {:<15} {}",
        ev.seq,
        e.position,
        ev.kind.name(),
        detail
    )
}

/// How often `--follow` looks for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// One stored event as a JSON line: the event as it is stored (an unrecognized one exactly as
/// written), with its global position and its run, each key once.
fn event_json(e: &StoredEvent) -> Result<String> {
    let mut v: Value =
        serde_json::from_str(&warrant_core::event::encode(&e.event)).map_err(Failure::failed)?;
    if let Value::Object(m) = &mut v {
        let mut line = serde_json::Map::with_capacity(m.len() + 2);
        line.insert("position".into(), json!(e.position));
        line.insert("run_id".into(), json!(e.run_id));
        for (k, value) in std::mem::take(m) {
            line.insert(k, value);
        }
        v = Value::Object(line);
    }
    Ok(v.to_string())
}

async fn events(store_path: &Path, run: &str, follow: bool, from: u64, json: bool) -> Result<u8> {
    let store = open_reading(store_path)?;
    let id = resolve_run(&store, run)?;
    let mut next = from.max(1);
    // What was last said about who drives the run, so it is said once per change.
    let mut said: Option<String> = None;
    loop {
        let batch = store
            .read(&id, next)
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        let mut ended = false;
        for e in &batch {
            if json {
                outln!("{}", event_json(e)?);
            } else {
                outln!("{}", render_event(e));
            }
            next = e.event.seq + 1;
            ended |= matches!(e.event.kind, EventKind::RunFinished { .. });
        }
        if !follow || ended {
            break;
        }
        let summary = store
            .summary(&id)
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        let Some(summary) = summary else { break };
        if !matches!(summary.status.as_str(), "running" | "waiting" | "ready") {
            // Ended before `from`: nothing more will come.
            break;
        }
        let now = SystemClock.now_ms();
        let note = match summary.status.as_str() {
            "waiting" => Some(format!(
                "{id} is waiting for a person (`warrant show {id}` says for what); still following"
            )),
            "ready" => Some(format!(
                "{id} was answered and waits to be resumed: `warrant resume {id}`; still following"
            )),
            _ if !lease::driven(&summary, now) => Some(format!(
                "the process driving {id} is gone{}: `warrant resume {id}` carries it on; still following",
                summary
                    .heartbeat_ms
                    .map(|h| format!(" (last heard from {} s ago)", now.saturating_sub(h) / 1000))
                    .unwrap_or_default()
            )),
            _ => None,
        };
        if note != said {
            if let Some(n) = &note {
                errln!("{n}");
            }
            said = note;
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
    Ok(exit::ATTAINED)
}

fn report(store_path: &Path, run: &str, json: bool) -> Result<u8> {
    let (_, _, _, report) = load_report(store_path, run)?;
    if json {
        print_json(&report)?;
    } else {
        out!("{}", report.render());
    }
    Ok(report
        .outcome
        .as_ref()
        .map_or(exit::NOT_ATTAINED, outcome_code))
}

async fn replay(store_path: &Path, run: &str, verify: bool) -> Result<u8> {
    let store = open_reading(store_path)?;
    let id = resolve_run(&store, run)?;
    let events = read_log(&store, &id)?;
    let check = warrant_engine::replay::replay(&events)
        .await
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    if let Some(e) = &check.error {
        errln!("replay stopped: {e}");
    }
    match &check.divergence {
        None => {
            outln!(
                "replay of {id}: {} events regenerated, identical to the log",
                check.regenerated
            );
            Ok(exit::ATTAINED)
        }
        Some(d) => {
            outln!("replay of {id} diverges at event {}:", d.seq);
            outln!(
                "  recorded:    {}",
                d.recorded
                    .as_deref()
                    .unwrap_or("(none: the replay produced more events)")
            );
            outln!(
                "  regenerated: {}",
                d.regenerated
                    .as_deref()
                    .unwrap_or("(none: the replay produced fewer events)")
            );
            Ok(if verify {
                exit::NOT_ATTAINED
            } else {
                exit::ATTAINED
            })
        }
    }
}

async fn compare(
    store_path: &Path,
    spec_path: &Path,
    deciders: &[String],
    json: bool,
) -> Result<u8> {
    let spec = load_spec(spec_path)?;
    if deciders.len() < 2 {
        return Err(Failure::invalid(anyhow!(
            "compare needs two or more `--decider`"
        )));
    }
    let loaded: Vec<Box<dyn Decider>> = deciders
        .iter()
        .map(|d| load_decider(d, None, &spec))
        .collect::<Result<_>>()?;
    let spec = Arc::new(spec);
    let store: Arc<SqliteStore> = Arc::new(open_store(store_path)?);
    let engine =
        Engine::new(store.clone()).with_authority(authority(&spec, spec_path, &[], &[], &[])?);
    let mut reports = Vec::new();
    for decider in &loaded {
        // Fresh providers for each route: the same frozen world.
        let surfaces = connect(&spec).await?;
        errln!("running {} ...", decider.identity());
        let result = engine
            .run(spec.clone(), decider.as_ref(), &surfaces)
            .await
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        reports.push(RunReport::from_state(&result.state));
    }
    let cmp = warrant_core::compare::Comparison::of(&reports);
    if json {
        print_json(&cmp)?;
    } else {
        out!("{}", cmp.render());
    }
    Ok(if cmp.routes.iter().all(|r| r.conformant) {
        exit::ATTAINED
    } else {
        exit::NOT_ATTAINED
    })
}

async fn validate_cmd(spec_path: &Path, connect_providers: bool) -> Result<u8> {
    let spec = load_spec(spec_path)?;
    if spec.decider.is_some() {
        default_decider(&spec, spec_path)?;
    }
    authority(&spec, spec_path, &[], &[], &[])?;
    if connect_providers {
        let surfaces = connect(&spec).await?;
        let offered = observe_all(&spec, &surfaces).await?;
        let missing = missing_tools(&spec, &offered);
        if !missing.is_empty() {
            return Err(Failure::invalid(anyhow!(
                "{}: {}",
                spec_path.display(),
                missing.join(&format!("\n{}: ", spec_path.display()))
            )));
        }
    }
    outln!(
        "ok: `{}` is a valid {} spec ({} steps, {} providers{}, {})",
        spec.id,
        spec.version,
        spec.steps.len(),
        spec.providers.len(),
        if connect_providers {
            ", every step's tools offered"
        } else {
            ""
        },
        spec.hash()
    );
    Ok(exit::ATTAINED)
}

/// `warrant explain [CODE]`: what a fault code means, and the layer it is attributed to.
fn explain(code: Option<&str>) -> Result<u8> {
    use warrant_core::codes::Code;
    match code {
        Some(c) => {
            let code: Code = c
                .parse()
                .map_err(|e: String| Failure::invalid(anyhow!(e)))?;
            outln!("{code} [{}]: {}", code.layer(), code.explain());
        }
        None => {
            for code in Code::ALL {
                outln!(
                    "{:<32} {:<13} {}",
                    code.as_str(),
                    code.layer().to_string(),
                    code.explain()
                );
            }
        }
    }
    Ok(exit::ATTAINED)
}

fn schema(which: SchemaKind) -> Result<u8> {
    let schema = match which {
        SchemaKind::Spec => schemars::schema_for!(Spec),
        SchemaKind::Report => schemars::schema_for!(RunReport),
        SchemaKind::Events => schemars::schema_for!(Event),
        SchemaKind::Cedar => {
            out!("{}", warrant_policy::SCHEMA);
            return Ok(exit::ATTAINED);
        }
    };
    print_json(&schema)?;
    Ok(exit::ATTAINED)
}

/// What re-entering a run needs: its recorded decider, fresh surfaces, and the authority and
/// execution control it started with.
struct Reentry {
    decider: Box<dyn Decider>,
    surfaces: warrant_engine::Surfaces,
    authority: Arc<dyn Authority>,
    control: Option<ControlSetting>,
    /// Milliseconds spent getting here (connecting to the providers).
    setup_ms: u64,
}

impl Reentry {
    /// An engine over `store` ruling as the run's first process did.
    fn engine(&self, store: Arc<SqliteStore>) -> Engine {
        let engine = Engine::new(store).with_authority(self.authority.clone());
        match &self.control {
            Some((control, timeout_ms)) => {
                engine.with_execution_control(control.clone(), *timeout_ms)
            }
            None => engine,
        }
    }
}

async fn reentry(id: &RunId, events: &[Arc<Event>]) -> Result<Reentry> {
    let begun_ms = SystemClock.now_ms();
    // A log this build cannot fully read is never acted on.
    let state = warrant_core::RunState::from_events(events.iter().map(|e| &**e))
        .map_err(|e| Failure::failed(anyhow!("run `{id}`: {e}")))?;
    warrant_engine::understood(id, &state).map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let Some(EventKind::RunStarted {
        spec,
        decider,
        authority,
        execution_control,
        ..
    }) = events.first().map(|e| &e.kind)
    else {
        return Err(Failure::failed(anyhow!("run `{id}` has no `run_started`")));
    };
    let decider = recorded_decider(decider, spec)?;
    // Fail closed: a run is re-entered only under the authority and control it started with.
    let authority = rebuild_authority(id, authority.as_ref())?;
    let control = rebuild_control(id, execution_control.as_ref())?;
    let surfaces = connect(spec).await?;
    Ok(Reentry {
        decider,
        surfaces,
        authority,
        control,
        setup_ms: SystemClock.now_ms().saturating_sub(begun_ms),
    })
}

/// The decider recorded in a run's log, loaded again. A script must not have changed since.
fn recorded_decider(identity: &DeciderIdentity, spec: &Spec) -> Result<Box<dyn Decider>> {
    let decider = match identity.kind.as_str() {
        "scripted" => load_decider(&format!("scripted:{}", identity.name), None, spec)?,
        live if warrant_deciders::live::is_live(live) => {
            load_decider(&format!("{live}:{}", identity.name), None, spec)?
        }
        other => {
            return Err(Failure::invalid(anyhow!(
                "this build cannot resume a run decided by `{other}:{}`",
                identity.name
            )));
        }
    };
    if decider.identity().digest != identity.digest {
        return Err(Failure::invalid(anyhow!(
            "the decider `{}:{}` is not configured as when the run started: its decisions would not be the ones recorded",
            identity.kind,
            identity.name
        )));
    }
    Ok(decider)
}

async fn resume(
    store_path: &Path,
    run: Option<&str>,
    all: bool,
    json: bool,
    quiet: bool,
) -> Result<u8> {
    let store: Arc<SqliteStore> = Arc::new(open_existing(store_path)?);
    let now = SystemClock.now_ms();
    let ids: Vec<RunId> = match (run, all) {
        (Some(r), false) => vec![resolve_run(store.as_ref(), r)?],
        // Runs no process drives that can go on: interrupted ones, and ones a person answered.
        (None, true) => store
            .runs()
            .map_err(|e| Failure::failed(anyhow!("{e}")))?
            .into_iter()
            .filter(|r| lease::resumable(r, now))
            .map(|r| r.run_id)
            .collect(),
        _ => return Err(Failure::invalid(anyhow!("give a RUN or --all, not both"))),
    };
    if ids.is_empty() {
        errln!(
            "no interrupted or answered runs in `{}`",
            store_path.display()
        );
        return Ok(exit::ATTAINED);
    }
    let mut worst = exit::ATTAINED;
    for id in ids {
        let result = reenter(&store, &id, quiet).await?;
        let code = print_result(&result, json, store_path)?;
        worst = match (worst, code) {
            (exit::WAITING, _) | (_, exit::WAITING) => exit::WAITING,
            (a, b) => a.max(b),
        };
    }
    Ok(worst)
}

/// Re-enters one run with what it recorded (decider, authority, execution control) and drives
/// it as far as it goes.
async fn reenter(store: &Arc<SqliteStore>, id: &RunId, quiet: bool) -> Result<RunResult> {
    let events = read_log(store.as_ref(), id)?;
    let re = reentry(id, &events).await?;
    let engine = re.engine(store.clone());
    if !quiet {
        errln!("resuming {id} ...");
        engine.subscribe("progress", Box::new(crate::progress::Progress::new()));
    }
    let result = engine
        .resume_with_setup(id, re.decider.as_ref(), &re.surfaces, Some(re.setup_ms))
        .await
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    for f in engine.drain_subscribers().await {
        errln!("warning: subscriber `{}` stopped: {}", f.name, f.error);
    }
    Ok(result)
}

/// What an operator said of a call in doubt.
struct Reconciled {
    happened: bool,
    did_not_happen: bool,
    resend: bool,
}

async fn reconcile(
    store_path: &Path,
    run: &str,
    call: &str,
    said: Reconciled,
    note: &str,
    by: Option<String>,
) -> Result<u8> {
    if said.happened == said.did_not_happen {
        return Err(Failure::invalid(anyhow!(
            "say exactly one of --happened or --did-not-happen"
        )));
    }
    let store: Arc<SqliteStore> = Arc::new(open_existing(store_path)?);
    let id = resolve_run(store.as_ref(), run)?;
    let call: CallId = call.parse().map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let by = operator(by);
    Engine::new(store)
        .reconcile(&id, call, said.happened, said.resend, &by, note)
        .await
        .map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let what = match (said.happened, said.resend) {
        (true, _) => "happened",
        (false, true) => "did not happen, and is to be sent again",
        (false, false) => "did not happen (it is not sent again; the report shows it)",
    };
    outln!("{id} {call}: recorded that it {what} (by {by}); continue with `warrant resume {id}`");
    Ok(exit::ATTAINED)
}

fn operator(by: Option<String>) -> String {
    by.or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "operator".into())
}

async fn cancel(
    store_path: &Path,
    run: &str,
    reason: &str,
    by: Option<String>,
    wait_s: u64,
) -> Result<u8> {
    let store: Arc<SqliteStore> = Arc::new(open_existing(store_path)?);
    let id = resolve_run(store.as_ref(), run)?;
    let summary = |store: &SqliteStore| -> Result<warrant_core::ports::RunSummary> {
        store
            .summary(&id)
            .map_err(|e| Failure::failed(anyhow!("{e}")))?
            .ok_or_else(|| Failure::invalid(anyhow!("no run `{id}` in the store")))
    };
    let before = summary(&store)?;
    if !matches!(before.status.as_str(), "running" | "waiting" | "ready") {
        outln!("{id} already ended {}: nothing to cancel", before.status);
        return Ok(exit::NOT_ATTAINED);
    }
    let by = operator(by);
    let request = warrant_core::ports::CancelRequest {
        by: by.clone(),
        reason: reason.to_owned(),
    };
    store
        .request_cancel(&id, request)
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    // A process driving the run ends it at its next check; wait for that, as long as that
    // process is alive.
    let mut waited_ms = 0;
    while lease::driven(&summary(&store)?, SystemClock.now_ms())
        && waited_ms < wait_s.saturating_mul(1000)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited_ms += 100;
    }
    let now = summary(&store)?;
    if now.status == "cancelled" {
        outln!("{id} cancelled (by {by}: {reason})");
        return Ok(exit::ATTAINED);
    }
    if !matches!(now.status.as_str(), "running" | "waiting" | "ready") {
        outln!(
            "{id} ended {} before the cancellation took effect",
            now.status
        );
        return Ok(exit::NOT_ATTAINED);
    }
    if lease::driven(&now, SystemClock.now_ms()) {
        outln!(
            "the cancellation of {id} is recorded; the process driving it ({}) has not acted on it within {wait_s} s",
            now.holder.unwrap_or_default()
        );
        return Ok(exit::NOT_ATTAINED);
    }
    // No process drives it (it waits for a person, or its process died): end it here,
    // through the same re-entry path.
    let result = reenter(&store, &id, true).await?;
    let ended = result.outcome.as_ref().map_or("waiting", Outcome::name);
    outln!("{id} {ended} (by {by}: {reason})");
    Ok(if ended == "cancelled" {
        exit::ATTAINED
    } else {
        exit::NOT_ATTAINED
    })
}

fn approvals(store_path: &Path, run: Option<&str>, json: bool) -> Result<u8> {
    let store = open_reading(store_path)?;
    let runs: Vec<RunId> = match run {
        Some(r) => vec![resolve_run(&store, r)?],
        // Only runs that have not ended can have a pending request.
        None => store
            .runs()
            .map_err(|e| Failure::failed(anyhow!("{e}")))?
            .into_iter()
            .filter(|r| matches!(r.status.as_str(), "running" | "waiting" | "ready"))
            .map(|r| r.run_id)
            .collect(),
    };
    let now = SystemClock.now_ms();
    let mut rows = Vec::new();
    for id in runs {
        let events = read_log(&store, &id)?;
        let state = warrant_core::RunState::from_events(events.iter().map(|e| &**e))
            .map_err(|e| Failure::failed(anyhow!("run `{id}`: {e}")))?;
        for e in &events {
            let EventKind::ApprovalRequested {
                request,
                call,
                tool,
                provider,
                args,
                args_digest,
                provenance,
                reason,
                expires_at_ms,
                ..
            } = &e.kind
            else {
                continue;
            };
            let status = match state.approval(request).map(|a| &a.status) {
                // Unanswered past its time: expired, whether or not a process recorded it yet.
                Some(warrant_core::fold::ApprovalStatus::Pending) if now >= *expires_at_ms => {
                    "expired"
                }
                Some(s) => approval_status_name(s),
                None => "expired",
            };
            if run.is_none() && status != "pending" {
                continue;
            }
            rows.push(json!({
                "request": request, "run": id, "call": call, "tool": tool, "provider": provider,
                "status": status, "reason": reason, "args": args, "args_digest": args_digest,
                "provenance": provenance, "expires_at_ms": expires_at_ms,
            }));
        }
    }
    if json {
        print_json(&rows)?;
        return Ok(exit::ATTAINED);
    }
    if rows.is_empty() {
        errln!("no pending approval requests");
    }
    for r in &rows {
        let text = |k: &str| r[k].as_str().unwrap_or("").to_owned();
        outln!(
            "{}  {}  `{}` on {}  {}\n    args     {}\n    digest   {}\n    expires  {}",
            text("request"),
            text("status"),
            text("tool"),
            text("provider"),
            text("reason"),
            r["args"],
            text("args_digest"),
            when(r["expires_at_ms"].as_u64().unwrap_or(0))
        );
        let labels: Vec<warrant_core::provenance::ArgLabel> =
            serde_json::from_value(r["provenance"].clone()).unwrap_or_default();
        for label in &labels {
            outln!("    {:<8} <- {}", label.pointer, label_source(label));
        }
    }
    Ok(exit::ATTAINED)
}

async fn answer(
    store_path: &Path,
    request: &str,
    answer: Answer,
    by: Option<String>,
) -> Result<u8> {
    let store: Arc<SqliteStore> = Arc::new(open_existing(store_path)?);
    let by = operator(by);
    let approving = matches!(answer, Answer::Approve { .. });
    let done = Engine::new(store)
        .answer(request, answer, &by)
        .await
        .map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let verb = if approving { "approved" } else { "denied" };
    let run = request.rsplit_once("-a").map_or(request, |(r, _)| r);
    match done {
        Answered::Recorded => {
            outln!("{request} {verb} by {by}; continue with `warrant resume {run}`")
        }
        Answered::AlreadyAnswered => outln!("{request} was already {verb}: nothing changed"),
    }
    Ok(exit::ATTAINED)
}

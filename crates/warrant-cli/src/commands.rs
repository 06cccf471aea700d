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
use warrant_engine::SystemClock;
use warrant_engine::{AllOf, AllowAll, Answer, Answered, Engine, RuleList, RunResult};
use warrant_store::{Durability, SqliteStore};
use warrant_surfaces::ReferenceCatalog;

use crate::cli::{Cli, Command, RunArgs, SchemaKind};
use crate::{Failure, exit};

type Result<T> = std::result::Result<T, Failure>;

/// The user's model table file (`--models`), read when a live decider is built.
static MODELS: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// The model capability table: built in, with the user's file applied.
fn model_table() -> Result<warrant_deciders::live::models::Table> {
    let table = warrant_deciders::live::models::Table::builtin()
        .map_err(|e| Failure::failed(anyhow!("the built-in model table: {e}")))?;
    match MODELS.get().and_then(Option::as_ref) {
        None => Ok(table),
        Some(path) => {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::invalid(anyhow!("cannot read `{shown}`: {e}")))?;
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
        Command::Validate { spec } => validate_cmd(&spec),
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
            answer(
                &store_path,
                &request,
                Answer::Approve {
                    scope: scope.into(),
                    until_ms: until,
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
            note,
            by,
        } => reconcile(
            &store_path,
            &run,
            &call,
            happened,
            did_not_happen,
            &note,
            by,
        ),
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
                    std::fs::read_to_string(path).unwrap_or_default()
                ),
                None => outln!("{}", warrant_deciders::live::models::BUILTIN),
            }
            Ok(0)
        }
        Command::Schema { which } => schema(which),
        Command::Bench(args) => crate::bench::run(&store_path, &args).await,
    }
}

/// `warrant providers SPEC`: what each provider offers, and what it has but does not offer.
async fn providers(spec_path: &Path, json: bool) -> Result<u8> {
    let spec = load_spec(spec_path)?;
    let surfaces = warrant_surfaces::connect(&ReferenceCatalog::default(), &spec, Path::new(""))
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    let mut out = serde_json::Map::new();
    for name in spec.providers.keys() {
        let Some(surface) = surfaces.get(name) else {
            continue;
        };
        let observed = surface
            .observe()
            .await
            .map_err(|e| Failure::failed(anyhow!("provider `{name}`: {e}")))?;
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
    if json {
        outln!("{}", Value::Object(out));
    }
    Ok(0)
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

/// Reads and validates a spec file. Errors name the file, field and line (exit 2).
pub fn load_spec(path: &Path) -> Result<Spec> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::invalid(anyhow!("cannot read `{shown}`: {e}")))?;
    let mut spec = validate::load(
        &text,
        Format::of_path(&shown),
        &shown,
        &ReferenceCatalog::default(),
    )
    .map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    // An OpenAPI document named by a relative path is the spec's neighbour: freeze it as an
    // absolute path, so a resumed run (which has only the recorded spec) reads the same file.
    let base = path.parent().unwrap_or(Path::new(""));
    for api in spec
        .providers
        .values_mut()
        .filter_map(|p| p.openapi.as_mut())
    {
        let is_url = api.document.starts_with("http://") || api.document.starts_with("https://");
        if !is_url && Path::new(&api.document).is_relative() {
            let joined = std::path::absolute(base.join(&api.document)).map_err(|e| {
                Failure::invalid(anyhow!("{shown}: openapi.document `{}`: {e}", api.document))
            })?;
            api.document = joined.display().to_string();
        }
    }
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
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Failure::invalid(anyhow!("cannot read script `{shown}`: {e}")))?;
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

fn open_store(path: &Path) -> Result<SqliteStore> {
    SqliteStore::open(path, Durability::Fsync).map_err(|e| Failure::failed(anyhow!("{e}")))
}

/// Opens an existing store for reading: a missing file is an error, not a new store.
fn open_existing(path: &Path) -> Result<SqliteStore> {
    if !path.exists() {
        return Err(Failure::invalid(anyhow!(
            "no store at `{}` (run something first, or pass --store / WARRANT_STORE)",
            path.display()
        )));
    }
    open_store(path)
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
                warrant_engine::HttpControl::new(&url).map_err(|e| Failure::invalid(anyhow!(e)))?;
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
                warrant_engine::HttpControl::new(url).map_err(|e| Failure::invalid(anyhow!(e)))?;
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
        return Ok(Arc::new(rules));
    }
    if let Some(cedar) = warrant_policy::CedarAuthority::from_description(d) {
        return Ok(Arc::new(cedar.map_err(Failure::invalid)?));
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
    let surfaces = warrant_surfaces::connect(&ReferenceCatalog::default(), &spec, Path::new(""))
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
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
    let mut result = engine
        .run(Arc::new(spec), decider.as_ref(), &surfaces)
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

/// Most rounds of in-place approval prompts in one `warrant run`.
const APPROVAL_ROUNDS_MAX: usize = 32;

fn read_answer(question: &str) -> Result<String> {
    errln!("{question}");
    let mut line = String::new();
    let read = tokio::task::block_in_place(|| std::io::stdin().read_line(&mut line));
    match read {
        Ok(0) => Ok(String::new()),
        Ok(_) => Ok(line.trim().to_owned()),
        Err(e) => Err(Failure::failed(anyhow!("reading the answer: {e}"))),
    }
}

/// Shows each pending approval request and records the person's answer. Returns whether any
/// answer was given (the run can go on).
async fn ask_in_place(engine: &Engine, result: &RunResult) -> Result<bool> {
    let events = read_log(engine.store().as_ref(), &result.run_id)?;
    let by = operator(None);
    let mut answered = false;
    for a in result.state.pending_approvals() {
        let Some(EventKind::ApprovalRequested {
            tool,
            provider,
            args,
            provenance,
            reason,
            ..
        }) = events.iter().map(|e| &e.kind).find(
            |k| matches!(k, EventKind::ApprovalRequested { request, .. } if *request == a.id),
        )
        else {
            continue;
        };
        errln!(
            "\napproval {}: `{tool}` on {provider}\n  why:  {reason}\n  args: {args}",
            a.id
        );
        for label in provenance {
            errln!(
                "    {} <- {}",
                label.pointer,
                serde_json::to_string(&label.source).unwrap_or_default()
            );
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
                engine
                    .answer(&a.id, decision, &by)
                    .await
                    .map_err(|e| Failure::failed(anyhow!("{e}")))?;
                answered = true;
            }
            break;
        }
    }
    Ok(answered)
}

/// Prints how a run ended (or why it waits) and returns the exit code.
fn print_result(result: &RunResult, json: bool, store_path: &Path) -> Result<u8> {
    let report = RunReport::from_state(&result.state);
    let approvals: Vec<serde_json::Value> = result
        .state
        .pending_approvals()
        .map(|a| serde_json::json!({"request": a.id, "call": a.call, "tool": a.tool, "provider": a.provider, "args_digest": a.args_digest}))
        .collect();
    let waiting: Vec<serde_json::Value> = result
        .state
        .in_doubt()
        .map(|c| {
            let provider = result
                .state
                .spec()
                .map(|s| s.steps[c.step].provider.clone())
                .unwrap_or_default();
            serde_json::json!({
                "call": c.id,
                "tool": c.tool,
                "provider": provider,
                "args_digest": c.executed.as_ref().map(|a| warrant_core::canon::digest(a)),
            })
        })
        .collect();
    if json {
        print_json(&serde_json::json!({
            "run_id": result.run_id,
            "outcome": result.outcome.as_ref().map_or("waiting", Outcome::name),
            "outcome_detail": result.outcome,
            "waiting_on": waiting,
            "approvals": approvals,
            "route": report.route,
            "route_key": report.route_key,
            "conformant": report.conformant,
            "carried": report.carried,
            "elapsed_ms": report.timings.elapsed_ms,
            "store": store_path,
        }))?;
    } else {
        out!("{}", report.render());
        for w in &waiting {
            outln!(
                "waiting  {} `{}` on {} is in doubt (arguments {})",
                w["call"].as_str().unwrap_or(""),
                w["tool"].as_str().unwrap_or(""),
                w["provider"].as_str().unwrap_or(""),
                w["args_digest"].as_str().unwrap_or("")
            );
        }
        for (id, tool, provider) in result
            .state
            .pending_approvals()
            .map(|a| (a.id.clone(), a.tool.clone(), a.provider.clone()))
        {
            outln!(
                "approval {id}: `{tool}` on {provider} needs approval; warrant approvals --run {}, then warrant approve {id} (or deny) and warrant resume {}",
                result.run_id,
                result.run_id
            );
        }
        if result.state.in_doubt().next().is_some() {
            outln!(
                "         find out whether it happened, then: warrant reconcile {} CALL --happened|--did-not-happen && warrant resume {}",
                result.run_id,
                result.run_id
            );
        }
    }
    Ok(match &result.outcome {
        Some(o) => outcome_code(o),
        None => exit::WAITING,
    })
}

fn runs(store_path: &Path, json: bool) -> Result<u8> {
    let store = open_existing(store_path)?;
    let runs = store.runs().map_err(|e| Failure::failed(anyhow!("{e}")))?;
    if json {
        print_json(&runs)?;
        return Ok(exit::ATTAINED);
    }
    if runs.is_empty() {
        errln!("no runs in `{}`", store_path.display());
    }
    for r in runs {
        outln!(
            "{:<22} {:<13} {:<16} {:>5} events  {}",
            r.run_id,
            r.status,
            r.spec_id,
            r.events,
            r.decider
        );
    }
    Ok(exit::ATTAINED)
}

/// A run's log and its report.
fn load_report(store_path: &Path, run: &str) -> Result<(Vec<Arc<Event>>, RunReport)> {
    let store = open_existing(store_path)?;
    let id = resolve_run(&store, run)?;
    let events = read_log(&store, &id)?;
    let report =
        RunReport::from_events(&events).map_err(|e| Failure::failed(anyhow!("run `{id}`: {e}")))?;
    Ok((events, report))
}

fn show(store_path: &Path, run: &str, json: bool) -> Result<u8> {
    let (events, report) = load_report(store_path, run)?;
    let last = events
        .last()
        .map(|e| (e.seq, e.kind.name()))
        .unwrap_or((0, "none"));
    if json {
        print_json(&serde_json::json!({
            "run_id": report.run_id,
            "status": report.status,
            "outcome": report.outcome.as_ref().map(Outcome::name),
            "spec": report.spec,
            "decider": report.decider,
            "steps": report.steps.iter().map(|s| serde_json::json!({
                "id": s.id, "status": s.status, "decisions": s.decisions, "calls": s.calls.len()
            })).collect::<Vec<_>>(),
            "last_event": {"seq": last.0, "type": last.1},
        }))?;
    } else {
        outln!("run      {}", report.run_id);
        outln!("spec     {} ({})", report.spec.id, report.spec.hash);
        outln!("decider  {}", report.decider);
        outln!(
            "status   {}{}",
            report.status,
            report
                .outcome
                .as_ref()
                .map(|o| format!(" ({})", o.name()))
                .unwrap_or_default()
        );
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
                let status = c
                    .status
                    .map(|s| format!("{s:?}"))
                    .unwrap_or_else(|| "in flight".into());
                outln!("    {:<4} {:<22} {}", c.call.to_string(), c.tool, status);
            }
        }
    }
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
            call, tool, handle, ..
        } => format!(
            "{call} {tool} {}",
            handle.map(|h| h.to_string()).unwrap_or_default()
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
            "{call} {status:?}{}",
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
        EventKind::RunResumed { in_flight } => in_flight
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
                    scope
                        .map(|s| format!("{s:?}").to_lowercase())
                        .unwrap_or_default()
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
            call, happened, by, ..
        } => {
            format!(
                "{call} {} (by {by})",
                if *happened {
                    "happened"
                } else {
                    "did not happen"
                }
            )
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

async fn events(store_path: &Path, run: &str, follow: bool, from: u64, json: bool) -> Result<u8> {
    let store = open_existing(store_path)?;
    let id = resolve_run(&store, run)?;
    let mut next = from.max(1);
    loop {
        let batch = store
            .read(&id, next)
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        let mut ended = false;
        for e in &batch {
            if json {
                outln!("{}", serde_json::to_string(e).map_err(Failure::failed)?);
            } else {
                outln!("{}", render_event(e));
            }
            next = e.event.seq + 1;
            ended |= matches!(e.event.kind, EventKind::RunFinished { .. });
        }
        if !follow || ended {
            break;
        }
        if batch.is_empty() {
            // Ended before `from`?
            let all = store
                .read(&id, 1)
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            if all
                .last()
                .is_some_and(|e| matches!(e.event.kind, EventKind::RunFinished { .. }))
                && next > all.len() as u64
            {
                break;
            }
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
    Ok(exit::ATTAINED)
}

fn report(store_path: &Path, run: &str, json: bool) -> Result<u8> {
    let (_, report) = load_report(store_path, run)?;
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
    let store = open_existing(store_path)?;
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
        let surfaces =
            warrant_surfaces::connect(&ReferenceCatalog::default(), &spec, Path::new(""))
                .await
                .map_err(|e| Failure::invalid(anyhow!(e)))?;
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

fn validate_cmd(spec_path: &Path) -> Result<u8> {
    let spec = load_spec(spec_path)?;
    if spec.decider.is_some() {
        default_decider(&spec, spec_path)?;
    }
    authority(&spec, spec_path, &[], &[], &[])?;
    outln!(
        "ok: `{}` is a valid {} spec ({} steps, {} providers, {})",
        spec.id,
        spec.version,
        spec.steps.len(),
        spec.providers.len(),
        spec.hash()
    );
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
    let surfaces = warrant_surfaces::connect(&ReferenceCatalog::default(), spec, Path::new(""))
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    // Fail closed: a run is re-entered only under the authority and control it started with.
    let authority = rebuild_authority(id, authority.as_ref())?;
    let control = rebuild_control(id, execution_control.as_ref())?;
    Ok(Reentry {
        decider,
        surfaces,
        authority,
        control,
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
    let ids: Vec<RunId> = match (run, all) {
        (Some(r), false) => vec![resolve_run(store.as_ref(), r)?],
        (None, true) => store
            .runs()
            .map_err(|e| Failure::failed(anyhow!("{e}")))?
            .into_iter()
            .filter(|r| r.status == "running")
            .map(|r| r.run_id)
            .collect(),
        _ => return Err(Failure::invalid(anyhow!("give a RUN or --all, not both"))),
    };
    if ids.is_empty() {
        errln!("no interrupted runs in `{}`", store_path.display());
        return Ok(exit::ATTAINED);
    }
    let mut worst = exit::ATTAINED;
    for id in ids {
        let events = read_log(store.as_ref(), &id)?;
        let re = reentry(&id, &events).await?;
        let engine = re.engine(store.clone());
        if !quiet {
            errln!("resuming {id} ...");
            engine.subscribe("progress", Box::new(crate::progress::Progress::new()));
        }
        let result = engine
            .resume(&id, re.decider.as_ref(), &re.surfaces)
            .await
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        for f in engine.drain_subscribers().await {
            errln!("warning: subscriber `{}` stopped: {}", f.name, f.error);
        }
        let code = print_result(&result, json, store_path)?;
        worst = match (worst, code) {
            (exit::WAITING, _) | (_, exit::WAITING) => exit::WAITING,
            (a, b) => a.max(b),
        };
    }
    Ok(worst)
}

fn reconcile(
    store_path: &Path,
    run: &str,
    call: &str,
    happened: bool,
    did_not_happen: bool,
    note: &str,
    by: Option<String>,
) -> Result<u8> {
    if happened == did_not_happen {
        return Err(Failure::invalid(anyhow!(
            "say exactly one of --happened or --did-not-happen"
        )));
    }
    let store = open_existing(store_path)?;
    let id = resolve_run(&store, run)?;
    let call: CallId = call.parse().map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let events = read_log(&store, &id)?;
    let state = warrant_core::RunState::from_events(events.iter().map(|e| &**e))
        .map_err(|e| Failure::failed(anyhow!("run `{id}`: {e}")))?;
    if !state.in_doubt().any(|c| c.id == call) {
        return Err(Failure::invalid(anyhow!(
            "call {call} of run `{id}` is not in doubt"
        )));
    }
    let by = by
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "operator".into());
    let event = Event {
        seq: state.last_seq + 1,
        at_ms: SystemClock.now_ms(),
        kind: EventKind::CallReconciled {
            call,
            happened,
            by: by.clone(),
            note: note.to_owned(),
        },
    };
    let appended = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(store.append(
            &id,
            state.last_seq,
            vec![Arc::new(event)],
        ))
    });
    appended.map_err(|e| Failure::failed(anyhow!("{e}")))?;
    outln!(
        "{id} {call}: recorded that it {} (by {by}); continue with `warrant resume {id}`",
        if happened {
            "happened"
        } else {
            "did not happen"
        }
    );
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
    let status = |store: &SqliteStore| -> Result<String> {
        let runs = store.runs().map_err(|e| Failure::failed(anyhow!("{e}")))?;
        Ok(runs
            .into_iter()
            .find(|r| r.run_id == id)
            .map(|r| r.status)
            .unwrap_or_default())
    };
    let before = status(&store)?;
    if before != "running" && before != "waiting" {
        outln!("{id} already ended {before}: nothing to cancel");
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
    if before == "waiting" {
        // No process drives a waiting run: end it here, through the same re-entry path.
        let events = read_log(store.as_ref(), &id)?;
        let re = reentry(&id, &events).await?;
        let result = re
            .engine(store.clone())
            .resume(&id, re.decider.as_ref(), &re.surfaces)
            .await
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        let ended = result.outcome.as_ref().map_or("waiting", Outcome::name);
        outln!("{id} {ended} (by {by}: {reason})");
        return Ok(if ended == "cancelled" {
            exit::ATTAINED
        } else {
            exit::NOT_ATTAINED
        });
    }
    for _ in 0..wait_s.saturating_mul(10) {
        let now = status(&store)?;
        if now != "running" {
            if now == "cancelled" {
                outln!("{id} cancelled (by {by}: {reason})");
                return Ok(exit::ATTAINED);
            }
            outln!("{id} ended {now} before the cancellation took effect");
            return Ok(exit::NOT_ATTAINED);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    outln!(
        "the cancellation of {id} is recorded, but no process acted on it within {wait_s} s (its process may have died): `warrant resume {id}` ends it cancelled"
    );
    Ok(exit::NOT_ATTAINED)
}

fn approvals(store_path: &Path, run: Option<&str>, json: bool) -> Result<u8> {
    let store = open_existing(store_path)?;
    let runs: Vec<RunId> = match run {
        Some(r) => vec![resolve_run(&store, r)?],
        None => store
            .runs()
            .map_err(|e| Failure::failed(anyhow!("{e}")))?
            .into_iter()
            .filter(|r| r.status == "running" || r.status == "waiting")
            .map(|r| r.run_id)
            .collect(),
    };
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
                Some(warrant_core::fold::ApprovalStatus::Pending) => "pending",
                Some(warrant_core::fold::ApprovalStatus::Approved { .. }) => "approved",
                Some(warrant_core::fold::ApprovalStatus::Denied { .. }) => "denied",
                Some(warrant_core::fold::ApprovalStatus::Expired) | None => "expired",
            };
            if run.is_none() && status != "pending" {
                continue;
            }
            rows.push(serde_json::json!({
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
        outln!(
            "{}  {}  `{}` on {}  {}\n    args {}\n    {}",
            r["request"].as_str().unwrap_or(""),
            r["status"].as_str().unwrap_or(""),
            r["tool"].as_str().unwrap_or(""),
            r["provider"].as_str().unwrap_or(""),
            r["reason"].as_str().unwrap_or(""),
            r["args"],
            r["args_digest"].as_str().unwrap_or("")
        );
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

//! The commands.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use serde_json::{Value, json};
use warrant_app::{App, AppError, ApprovalRow, Cancelled, Deciders, DoubtRow, Waiting};
use warrant_core::Spec;
use warrant_core::event::{Event, EventKind, StoredEvent};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{Clock, RunQuery};
use warrant_core::report::RunReport;
use warrant_core::{ApprovalState, Outcome, RunStatus};
use warrant_engine::{Answer, Answered, Engine, RunResult};
use warrant_engine::{SystemClock, lease};
use warrant_surfaces::ReferenceCatalog;

use crate::cli::{Cli, Command, RunArgs, SchemaKind};
use crate::store::{StoreAt, Use};
use crate::{Failure, exit};

type Result<T> = std::result::Result<T, Failure>;

/// The user's model table file (`--models`), read when a live decider is built.
static MODELS: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// Longest answer read at an approval prompt.
const ANSWER_BYTES_MAX: u64 = 4096;

impl From<AppError> for Failure {
    fn from(e: AppError) -> Failure {
        match e {
            // Refused before anything was written: exit 2, like invalid input.
            AppError::Invalid(m)
            | AppError::NotFound(m)
            | AppError::Conflict(m)
            | AppError::Forbidden(m) => Failure::invalid(anyhow!(m)),
            AppError::Unavailable(m) | AppError::Failed(m) => Failure::failed(anyhow!(m)),
            AppError::Held(m) => Failure::with_code(exit::DRIVEN_ELSEWHERE, anyhow!(m)),
            AppError::Interrupted(m) => Failure::with_code(exit::INTERRUPTED, anyhow!(m)),
        }
    }
}

/// The operator's registered providers and models (`--providers`), read at start.
static REGISTRY: std::sync::OnceLock<Arc<warrant_app::Registry>> = std::sync::OnceLock::new();

/// How deciders are built: with the user's model table and the operator's registry.
fn deciders() -> Deciders {
    Deciders::new(MODELS.get().cloned().flatten())
        .with_registry(REGISTRY.get().cloned().unwrap_or_default())
}

/// The operations over the store at `path`, opened to write (created if missing).
fn app(store: Arc<dyn warrant_core::ports::EventStore>) -> App {
    App::new(store, deciders()).with_build(crate::version::info())
}

pub async fn dispatch(cli: Cli) -> Result<u8> {
    let _ = MODELS.set(cli.models.clone());
    if let Some(path) = &cli.providers {
        let _ = REGISTRY.set(Arc::new(warrant_app::Registry::load(path)?));
    }
    let store_path = cli.store;
    match cli.command {
        Command::Run(args) => run(&store_path, *args).await,
        Command::Runs {
            status,
            spec,
            limit,
            json,
        } => {
            let query = RunQuery {
                status,
                spec_id: spec,
                limit,
                ..RunQuery::default()
            };
            runs(&store_path, query, json).await
        }
        Command::Show { run, json } => show(&store_path, &run, json).await,
        Command::Events {
            run,
            follow,
            from,
            json,
        } => events(&store_path, &run, follow, from, json).await,
        Command::Report { run, json } => report(&store_path, &run, json).await,
        Command::Replay { run, verify } => replay(&store_path, &run, verify).await,
        Command::Compare {
            spec,
            deciders,
            lanes,
            json,
        } => compare(&store_path, &spec, &deciders, &lanes, json).await,
        Command::Validate {
            spec,
            as_author: true,
            specs,
            ..
        } => validate_as_author(&spec, specs.as_deref()),
        Command::Validate { spec, connect, .. } => validate_cmd(&spec, connect).await,
        Command::Explain { code } => explain(code.as_deref()),
        Command::Resume {
            run,
            all,
            json,
            quiet,
        } => resume(&store_path, run.as_deref(), all, json, quiet).await,
        Command::Approvals { run, json } => approvals(&store_path, run.as_deref(), json).await,
        Command::Approve {
            request,
            scope,
            until,
            edit,
            by,
            always,
            whole_tenant,
        } => {
            let until_ms = until_ms(until);
            if always {
                return approve_always(&store_path, &request, by, whole_tenant, until_ms).await;
            }
            answer(
                &store_path,
                &request,
                Answer::Approve {
                    scope: scope.into(),
                    until_ms,
                    edited: edit.map(Arc::new),
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
        Command::Questions { run, json } => questions(&store_path, run.as_deref(), json).await,
        Command::Answer {
            question,
            json,
            text,
            by,
        } => {
            let given = json.or(text.map(serde_json::Value::String));
            answer_question(&store_path, &question, given, by).await
        }
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
        Command::Gateway {
            config,
            http,
            memory_store,
            floor,
            metrics,
            webhooks,
            ..
        } => {
            let (config, base) = warrant_gateway::GatewayConfig::load(&config)
                .map_err(|e| Failure::invalid(anyhow!(e)))?;
            let hooks = webhooks_file(webhooks.as_deref())?;
            let store = (!memory_store).then_some(&store_path);
            let doors = Doors { metrics, hooks };
            gateway(store, config, &base, http.as_deref(), floor, doors).await
        }
        Command::McpServe {
            provider,
            config,
            http,
        } => mcp_serve(&store_path, &provider, config.as_deref(), http.as_deref()).await,
        Command::WebmcpServe { names, listen } => webmcp_serve(&names, &listen).await,
        Command::Models => {
            let deciders = deciders();
            deciders.model_table()?;
            match deciders.models() {
                Some(path) => outln!(
                    "{}\n# overridden by {}:\n{}",
                    warrant_deciders::live::models::BUILTIN,
                    path.display(),
                    warrant_app::read_text(path, warrant_app::DOCUMENT_BYTES_MAX, "model table")?
                ),
                None => outln!("{}", warrant_deciders::live::models::BUILTIN),
            }
            Ok(0)
        }
        Command::Schema { which } => schema(which),
        Command::Bench(args) => crate::bench::run(&store_path, &args).await,
        Command::Completions { shell } => {
            let mut cli = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli, "warrant", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Ok(exit::ATTAINED)
        }
        Command::Man { dir } => man(dir.as_deref()),
        Command::Serve(args) => serve(&store_path, args).await,
        Command::Worker(args) => worker(&store_path, args).await,
        Command::Store {
            command: crate::cli::StoreCommand::Migrate,
        } => crate::store::migrate(&store_path).await,
        Command::Specs { command } => specs(&store_path, command).await,
        Command::Webhooks { command } => webhooks(&store_path, command).await,
        Command::Schedules { command } => schedules(&store_path, command).await,
        Command::Grants { command } => grants(&store_path, command).await,
    }
}

/// The operator's webhooks file, read and checked, when one was given.
fn webhooks_file(path: Option<&Path>) -> Result<Option<Arc<warrant_app::webhooks::Webhooks>>> {
    path.map(|p| {
        warrant_app::webhooks::Webhooks::from_file(p)
            .map(Arc::new)
            .map_err(|e| Failure::invalid(anyhow!("--webhooks: {e}")))
    })
    .transpose()
}

/// Delivers the store's notices to `hooks`' endpoints for as long as the process lives (a
/// worker's, a gateway's; a server delivers its own).
fn deliver_notices(app: &App, hooks: Option<Arc<warrant_app::webhooks::Webhooks>>) -> Result<()> {
    let Some(hooks) = hooks else {
        return Ok(());
    };
    let names: Vec<&str> = hooks.endpoints.iter().map(|e| e.name.as_str()).collect();
    errln!("webhooks: delivering to {}", names.join(", "));
    let deliverer = warrant_app::webhooks::Deliverer::new(app.clone(), hooks)
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the webhooks are delivered for as long as the process lives"
    )]
    tokio::spawn(Arc::new(deliverer).run(std::future::pending()));
    Ok(())
}

/// What a long-running command answers besides its work: `/metrics`, and webhooks.
struct Doors {
    metrics: Option<std::net::SocketAddr>,
    hooks: Option<Arc<warrant_app::webhooks::Webhooks>>,
}

/// A `--until` as milliseconds since the epoch.
fn until_ms(until: Option<crate::cli::Until>) -> Option<u64> {
    match until {
        None => None,
        Some(crate::cli::Until::At(ms)) => Some(ms),
        Some(crate::cli::Until::In(ms)) => Some(SystemClock.now_ms().saturating_add(ms)),
    }
}

/// `warrant approve REQ --always`: approved once, and a standing grant kept for the same.
async fn approve_always(
    store_path: &StoreAt,
    request: &str,
    by: Option<String>,
    whole_tenant: bool,
    until_ms: Option<u64>,
) -> Result<u8> {
    let app = app(store_path.open(Use::Existing).await?);
    let by = operator(by);
    let request = app.resolve_request(request).await?;
    let now = SystemClock.now_ms();
    let (grant, answered) = app
        .approve_always(&request, &by, whole_tenant, until_ms, now)
        .await?;
    match answered {
        Answered::Recorded => outln!("{request} approved by {by}"),
        Answered::AlreadyAnswered => outln!("{request} was already approved"),
    }
    say_grant(&grant);
    let run = RunId::of_request(&request).unwrap_or_else(|| RunId(request.clone()));
    outln!("{}", next_step(&app, &run).await?);
    Ok(exit::ATTAINED)
}

/// What a grant given allows, and until when.
fn say_grant(grant: &warrant_core::standing::StandingGrant) {
    outln!(
        "standing grant {}: always allow {}{}",
        grant.id,
        grant.describe(),
        grant
            .expires_at_ms
            .map(|t| format!(", until {}", when(t)))
            .unwrap_or_default()
    );
}

/// `warrant grants ...`.
async fn grants(store_path: &StoreAt, command: crate::cli::GrantsCommand) -> Result<u8> {
    use crate::cli::GrantsCommand;
    let now = SystemClock.now_ms();
    match command {
        GrantsCommand::Add {
            provider,
            tool,
            equal,
            one_of,
            at_most,
            from,
            tenant,
            user,
            until,
            note,
            by,
        } => {
            let mut args: std::collections::BTreeMap<String, warrant_core::spec::ArgConstraint> =
                std::collections::BTreeMap::new();
            for (name, value) in equal {
                args.entry(name).or_default().one_of.push(value);
            }
            for (name, value) in one_of {
                let Value::Array(values) = value else {
                    return Err(Failure::invalid(anyhow!(
                        "--one-of {name}=...: give a JSON list, e.g. {name}='[\"a\", \"b\"]'"
                    )));
                };
                args.entry(name).or_default().one_of.extend(values);
            }
            for (name, value) in at_most {
                let Some(n) = value.as_f64() else {
                    return Err(Failure::invalid(anyhow!(
                        "--at-most {name}={value}: give a number"
                    )));
                };
                args.entry(name).or_default().max = Some(n);
            }
            for (name, value) in from {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                for source in text.split(',') {
                    let parsed: warrant_core::spec::GrantSource =
                        serde_json::from_value(Value::String(source.trim().to_owned())).map_err(
                            |_| {
                                Failure::invalid(anyhow!(
                                    "--from {name}={text}: `{source}` is not a source (objective, input, carried, trusted_output or decider)"
                                ))
                            },
                        )?;
                    args.entry(name.clone()).or_default().from.push(parsed);
                }
            }
            let grant = warrant_core::standing::StandingGrant {
                id: warrant_app::grants::new_grant_id(),
                tenant,
                user,
                provider,
                tool,
                args,
                by: operator(by),
                created_at_ms: now,
                expires_at_ms: until_ms(until),
                note,
                revoked: None,
            };
            let app = app(store_path.open(Use::Create).await?);
            let grant = app.grant_add(grant).await?;
            say_grant(&grant);
            Ok(exit::ATTAINED)
        }
        GrantsCommand::List { all, json } => {
            let store = store_path.open(Use::Read).await?;
            let grants: Vec<_> = store
                .grants(None)
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?
                .into_iter()
                .filter(|g| all || g.live(now))
                .collect();
            if json {
                print_json(&grants)?;
            } else if grants.is_empty() {
                errln!(
                    "no standing grants in `{store_path}` (`warrant grants add`, `warrant approve REQ --always`)"
                );
            } else {
                for g in &grants {
                    let state = match (&g.revoked, g.live(now)) {
                        (Some(r), _) => format!("revoked by {} {}", r.by, when(r.at_ms)),
                        (None, false) => "past its expiry".to_owned(),
                        (None, true) => g
                            .expires_at_ms
                            .map_or_else(|| "live".to_owned(), |t| format!("until {}", when(t))),
                    };
                    outln!("{}  {}  (by {}; {state})", g.id, g.describe(), g.by);
                }
            }
            Ok(exit::ATTAINED)
        }
        GrantsCommand::Revoke { id, by } => {
            let app = app(store_path.open(Use::Existing).await?);
            let by = operator(by);
            if app.grant_revoke(&id, None, &by, now).await? {
                outln!("revoked standing grant {id}");
            } else {
                outln!("standing grant {id} was revoked already");
            }
            Ok(exit::ATTAINED)
        }
    }
}

/// `warrant schedules ...`.
async fn schedules(store_path: &StoreAt, command: crate::cli::SchedulesCommand) -> Result<u8> {
    use crate::cli::{CatchUpArg, OverlapArg, SchedulesCommand};
    use warrant_core::schedule::{CatchUp, Overlap, Schedule};
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    match command {
        SchedulesCommand::Add {
            id,
            cron,
            time_zone,
            spec_id,
            digest,
            inputs,
            overlap,
            catch_up,
            by,
            tenant,
            from,
        } => {
            let from_ms = match from.as_deref() {
                None => now,
                Some(t) => warrant_app::schedule::parse_time(t)
                    .map_err(|e| Failure::invalid(anyhow!("--from: {e}")))?,
            };
            let cron = cron
                .parse()
                .map_err(|e| Failure::invalid(anyhow!("--cron: {e}")))?;
            let schedule = Schedule {
                id: id.clone(),
                cron,
                time_zone,
                spec_id,
                spec_digest: digest,
                inputs: inputs.into_iter().collect(),
                overlap: match overlap {
                    OverlapArg::Skip => Overlap::Skip,
                    OverlapArg::Queue => Overlap::Queue,
                    OverlapArg::Cancel => Overlap::Cancel,
                },
                catch_up: match catch_up {
                    CatchUpArg::Latest => CatchUp::Latest,
                    CatchUpArg::All => CatchUp::All,
                    CatchUpArg::None => CatchUp::None,
                },
                tenant,
                user: operator(by),
                paused: false,
                created_at_ms: now,
                from_ms,
            };
            let app = app(store_path.open(Use::Create).await?);
            let next = warrant_app::schedule::next_tick(&schedule, now);
            let new = app.schedule_put(schedule).await?;
            outln!(
                "{} schedule `{id}`{}",
                if new { "added" } else { "replaced" },
                next.map(|t| format!(": next tick {}", when(t)))
                    .unwrap_or_default()
            );
            Ok(exit::ATTAINED)
        }
        SchedulesCommand::List { json } => {
            let store = store_path.open(Use::Read).await?;
            let all = store
                .schedules()
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            let mut rows = Vec::new();
            for s in &all {
                let last = store
                    .ticks(Some(&s.id), 1)
                    .await
                    .map_err(|e| Failure::failed(anyhow!("{e}")))?
                    .into_iter()
                    .next();
                let next = warrant_app::schedule::next_tick(s, now);
                rows.push((s, next, last));
            }
            if json {
                let out: Vec<Value> = rows
                    .iter()
                    .map(|(s, next, last)| {
                        let mut v = serde_json::to_value(s).unwrap_or_default();
                        if let Some(o) = v.as_object_mut() {
                            o.insert("next_tick_ms".into(), json!(next));
                            o.insert("last_tick".into(), json!(last));
                        }
                        v
                    })
                    .collect();
                print_json(&out)?;
            } else if rows.is_empty() {
                errln!("no schedules in `{store_path}` (`warrant schedules add`)");
            } else {
                for (s, next, last) in &rows {
                    let state = if s.paused { "paused" } else { "active" };
                    let next = next.map_or_else(|| "-".to_owned(), when);
                    let last = last.as_ref().map_or_else(
                        || "never".to_owned(),
                        |t| format!("{} {}", when(t.at_ms), t.state.name()),
                    );
                    outln!(
                        "{:<20} {:<18} {:<14} {:<16} {state:<7} next {next}  last {last}",
                        s.id,
                        s.cron,
                        s.time_zone,
                        s.spec_id
                    );
                }
            }
            Ok(exit::ATTAINED)
        }
        SchedulesCommand::Pause { id } => set_paused(store_path, &id, true, now).await,
        SchedulesCommand::Resume { id } => set_paused(store_path, &id, false, now).await,
        SchedulesCommand::Remove { id } => {
            let store = store_path.open(Use::Existing).await?;
            let removed = store
                .schedule_remove(&id)
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            if !removed {
                return Err(Failure::invalid(anyhow!(
                    "no schedule `{id}` (`warrant schedules list`)"
                )));
            }
            outln!("removed schedule `{id}`");
            Ok(exit::ATTAINED)
        }
        SchedulesCommand::Ticks { id, limit, json } => {
            let store = store_path.open(Use::Read).await?;
            let ticks = store
                .ticks(Some(&id), limit)
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            if json {
                print_json(&ticks)?;
            } else if ticks.is_empty() {
                errln!("no ticks of `{id}` yet");
            } else {
                for t in &ticks {
                    outln!(
                        "{}  {:<8} {}{}",
                        when(t.at_ms),
                        t.state.name(),
                        t.run_id.as_ref().map_or("-", |r| r.0.as_str()),
                        t.note
                            .as_deref()
                            .map(|n| format!("  ({n})"))
                            .unwrap_or_default()
                    );
                }
            }
            Ok(exit::ATTAINED)
        }
    }
}

/// Pauses or resumes schedule `id`.
async fn set_paused(store_path: &StoreAt, id: &str, paused: bool, now_ms: u64) -> Result<u8> {
    let app = app(store_path.open(Use::Existing).await?);
    let changed = app.schedule_paused(id, None, paused, now_ms).await?;
    let word = if paused { "paused" } else { "resumed" };
    if !changed {
        outln!("schedule `{id}` is {word} already");
        return Ok(exit::ATTAINED);
    }
    let next = app
        .schedule_views(None, now_ms)
        .await?
        .into_iter()
        .find(|s| s.id == id)
        .and_then(|s| s.next_tick_ms);
    outln!(
        "{word} schedule `{id}`{}",
        next.map(|t| format!(": next tick {}", when(t)))
            .unwrap_or_default()
    );
    Ok(exit::ATTAINED)
}

/// `warrant webhooks ...`.
async fn webhooks(store_path: &StoreAt, command: crate::cli::WebhooksCommand) -> Result<u8> {
    use crate::cli::WebhooksCommand;
    match command {
        WebhooksCommand::Check { file } => {
            let hooks = warrant_app::webhooks::Webhooks::from_file(&file)
                .map_err(|e| Failure::invalid(anyhow!(e)))?;
            for e in &hooks.endpoints {
                outln!("{}: {:?} body", e.name, e.format);
            }
            outln!(
                "{}: {} endpoint(s){}",
                file.display(),
                hooks.endpoints.len(),
                if hooks.links.is_some() {
                    ", with approve and deny links"
                } else {
                    ""
                }
            );
            Ok(exit::ATTAINED)
        }
        WebhooksCommand::Deliveries {
            state,
            run,
            limit,
            json,
        } => {
            let state = state
                .as_deref()
                .map(str::parse::<warrant_core::notice::NoticeState>)
                .transpose()
                .map_err(|e| Failure::invalid(anyhow!("--state: {e}")))?;
            let store = store_path.open(Use::Read).await?;
            let notices = store
                .notices(warrant_core::notice::NoticeQuery {
                    state,
                    run: run.map(warrant_core::ids::RunId),
                    limit,
                })
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            if json {
                let rows: Vec<Value> = notices
                    .iter()
                    .map(|n| {
                        json!({
                            "id": n.id, "run_id": n.run_id, "seq": n.seq, "type": n.kind.name(),
                            "at_ms": n.at_ms, "state": n.state.name(), "attempts": n.attempts,
                            "next_at_ms": n.next_at_ms, "last_error": n.last_error,
                            "delivered_to": n.delivered_to, "settled_at_ms": n.settled_at_ms,
                        })
                    })
                    .collect();
                print_json(&rows)?;
            } else if notices.is_empty() {
                errln!(
                    "no notices in `{store_path}` (they are made as runs ask for approval, wait and end)"
                );
            } else {
                for n in &notices {
                    let to = if n.delivered_to.is_empty() {
                        String::new()
                    } else {
                        format!("  to {}", n.delivered_to.join(", "))
                    };
                    let error = n
                        .last_error
                        .as_deref()
                        .map(|e| format!("  last error: {e}"))
                        .unwrap_or_default();
                    outln!(
                        "{:<40} {:<9} {} attempt(s)  {}{to}{error}",
                        n.id,
                        n.state.name(),
                        n.attempts,
                        when(n.at_ms),
                    );
                }
            }
            Ok(exit::ATTAINED)
        }
    }
}

/// `warrant providers SPEC`: what each provider offers, and what it has but does not offer;
/// the effects proposed for an MCP server's tools that declare none; and, per step, the tools
/// it allows that its provider does not offer and the grants that name arguments their tools
/// do not take.
async fn providers(spec_path: &Path, json: bool) -> Result<u8> {
    let spec = warrant_app::load_spec(spec_path)?;
    let deciders = deciders();
    let surfaces = warrant_app::connect(
        &spec,
        deciders.registry(),
        warrant_app::start_bound(&spec, 0),
    )
    .await?;
    let offered = warrant_app::observe_all(&spec, &surfaces).await?;
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
        // Tools of an MCP server whose effect nobody declared: proposed from their names
        // and arguments, for the operator to confirm.
        let declared = spec.providers.get(name).and_then(|p| p.mcp.as_ref());
        let proposed: Vec<(String, warrant_core::event::Effect, String)> = match declared {
            None => Vec::new(),
            Some(mcp) => observed
                .actions
                .iter()
                .filter(|a| {
                    a.effect == warrant_core::event::Effect::Commit
                        && !mcp.effects.contains_key(&a.name)
                })
                .map(|a| {
                    let (effect, why) = warrant_core::effects::propose(&a.name, &a.input_schema);
                    (a.name.clone(), effect, why)
                })
                .collect(),
        };
        if !json && !proposed.is_empty() {
            outln!(
                "  {} tools declare no effect and are commits until one is declared; proposed:",
                proposed.len()
            );
            for (tool, effect, why) in &proposed {
                outln!("    {:<6} {tool}: {why}", effect.to_string());
            }
            let reads: Vec<&str> = proposed
                .iter()
                .filter(|(_, e, _)| *e == warrant_core::event::Effect::Read)
                .map(|(t, _, _)| t.as_str())
                .collect();
            if !reads.is_empty() {
                outln!(
                    "  to confirm the reads, add to provider `{name}` in the spec (or the operator's providers file):\n    effects: {{{}}}",
                    reads
                        .iter()
                        .map(|t| format!("{t}: read"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        let proposed_json: serde_json::Map<String, Value> = proposed
            .iter()
            .map(|(t, e, why)| (t.clone(), json!({"effect": e, "why": why})))
            .collect();
        out.insert(
            name.clone(),
            json!({"version": observed.version, "tools": tools, "not_offered": unsupported, "proposed_effects": proposed_json}),
        );
    }
    warrant_engine::shutdown(&surfaces).await;
    let mut missing = warrant_app::missing_tools(&spec, &offered);
    let (errors, warnings) = warrant_app::grant_problems(&spec, &offered);
    missing.extend(errors);
    for w in &warnings {
        errln!("warning: {w}");
    }
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

/// `warrant mcp-serve PROVIDER`: one of Warrant's providers as an MCP server, through a
/// gateway over it (no path to a provider is left ungoverned).
async fn mcp_serve(
    store_path: &StoreAt,
    provider: &str,
    config: Option<&str>,
    http: Option<&str>,
) -> Result<u8> {
    let settings: Option<Value> = config
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| Failure::invalid(anyhow!("--config is not JSON: {e}")))?;
    let catalog = ReferenceCatalog::default();
    if !catalog.names().contains(&provider) {
        return Err(Failure::invalid(anyhow!(
            "unknown provider `{provider}` (this build knows: {})",
            catalog.names().join(", ")
        )));
    }
    let mut server = serde_json::Map::new();
    server.insert("reference".into(), json!(provider));
    if let Some(settings) = settings {
        server.insert("config".into(), settings);
    }
    let text = json!({
        "version": warrant_gateway::CONFIG_VERSION,
        "id": format!("mcp-serve-{provider}"),
        "servers": {provider: server},
    })
    .to_string();
    let config =
        warrant_gateway::GatewayConfig::parse(&text, warrant_core::spec::Format::Json, "--config")
            .map_err(|e| Failure::invalid(anyhow!(e)))?;
    let base = std::env::current_dir().map_err(|e| Failure::failed(anyhow!("{e}")))?;
    let doors = Doors {
        metrics: None,
        hooks: None,
    };
    gateway(Some(store_path), config, &base, http, Vec::new(), doors).await
}

/// Serves a gateway until its client leaves (stdio) or the process is stopped (HTTP).
async fn gateway(
    store_path: Option<&StoreAt>,
    config: warrant_gateway::GatewayConfig,
    base: &Path,
    http: Option<&str>,
    floor: Vec<PathBuf>,
    doors: Doors,
) -> Result<u8> {
    // A SIGTERM from the moment the gateway answers anything (its metrics first) stops it.
    let stop = shutdown_signal();
    let user = operator(None);
    let tokens = warrant_gateway::Tokens::from_config(&config, &user)
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    if http.is_none() && tokens.required() {
        return Err(Failure::invalid(anyhow!(
            "`tokens` are for `--http`: a stdio client is the process that started the gateway"
        )));
    }
    let listener = match http {
        None => None,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::invalid(anyhow!("cannot listen on `{addr}`: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            if !bound.ip().is_loopback() && !tokens.required() {
                return Err(Failure::invalid(anyhow!(
                    "`{addr}` is not a loopback address: serve beyond this machine only with `tokens` in the config"
                )));
            }
            Some((listener, bound))
        }
    };
    let store: Arc<dyn warrant_core::ports::EventStore> = match store_path {
        Some(at) => at.open(Use::Create).await?,
        None => Arc::new(warrant_store::MemoryStore::new()),
    };
    let app = app(store).with_floor(floor)?;
    let gateway = warrant_gateway::Gateway::start(app.clone(), config, base, &user)
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    deliver_notices(&app, doors.hooks)?;
    if let Some(addr) = doors.metrics {
        metrics_on(addr, app, Some(gateway.clone())).await?;
    }
    let closed = gateway
        .close_interrupted()
        .await
        .map_err(|e| Failure::failed(anyhow!(e)))?;
    for (run, ended) in &closed {
        if *ended {
            errln!("closed session {run}, left running by a gateway that stopped");
        } else {
            errln!(
                "closed session {run}, left running by a gateway that stopped: an effect of it is in doubt, to reconcile (`warrant show {run}`)"
            );
        }
    }
    let served = match listener {
        None => {
            let serving = warrant_gateway::serve_stdio(gateway.clone());
            tokio::pin!(serving);
            tokio::select! {
                done = &mut serving => done,
                () = stop => {
                    // Stopped while its client is still there: each session records its end.
                    gateway.stop(std::time::Duration::from_secs(10)).await;
                    Ok(())
                }
            }
        }
        Some((listener, bound)) => {
            errln!(
                "gateway `{}` serving {} tools over MCP at http://{bound}/mcp",
                gateway.id(),
                gateway.tools().len()
            );
            let serving = warrant_gateway::serve_http(gateway.clone(), tokens, listener);
            tokio::pin!(serving);
            tokio::select! {
                done = &mut serving => done,
                () = stop => {
                    // Every session records its end (`closed` by the gateway) before exit.
                    gateway.stop(std::time::Duration::from_secs(10)).await;
                    serving.await
                }
            }
        }
    };
    gateway.shutdown_providers().await;
    served.map_err(|e| Failure::failed(anyhow!(e)))?;
    Ok(0)
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

async fn run(store_path: &StoreAt, args: RunArgs) -> Result<u8> {
    // Everything the user gave is checked before the store is touched: invalid input writes
    // nothing.
    let mut spec = warrant_app::load_spec(&args.spec)?;
    args.limits
        .apply(&mut spec.limits)
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    if let Some(profile) = &args.profile {
        spec.profile = Some(
            profile
                .parse()
                .map_err(|e: String| Failure::invalid(anyhow!(e)))?,
        );
    }
    let inputs: std::collections::BTreeMap<String, Value> = args.inputs.iter().cloned().collect();
    if inputs.len() != args.inputs.len() {
        return Err(Failure::invalid(anyhow!(
            "--input: the same input is given twice"
        )));
    }
    let options = warrant_app::RunOptions {
        decider: args.decider.clone(),
        deny_tools: args.deny_tools.clone(),
        ask_tools: args.ask_tools.clone(),
        policies: args.policies.clone(),
        narrowing: Vec::new(),
        floor: Vec::new(),
        inputs,
        execution_control: args.execution_control.clone(),
        tenant: args.tenant.clone(),
        user: args.user.clone().unwrap_or_else(|| operator(None)),
        lane: if args.lane == "browser" {
            warrant_app::Lane::Browser
        } else {
            warrant_app::Lane::Reference
        },
    };
    let prepared = warrant_app::Prepared::new(&deciders(), spec, &args.spec, options).await?;
    let app = app(store_path.open(Use::Create).await?);
    let engine = app.engine_for(&prepared);
    if !args.quiet {
        engine.subscribe("progress", Box::new(crate::progress::Progress::new()));
    }
    // In a terminal, approvals are asked for in place; elsewhere the run waits durably.
    let interactive =
        !args.no_prompt && (args.prompt || std::io::IsTerminal::is_terminal(&std::io::stdin()));
    let driven = async {
        let mut result = prepared.drive(&engine).await?;
        if interactive {
            for _ in 0..APPROVAL_ROUNDS_MAX {
                if result.outcome.is_some() || result.state.pending_approvals().next().is_none() {
                    break;
                }
                drain(&engine).await;
                if !ask_in_place(&app, &result).await? {
                    break;
                }
                result = prepared.resume(&engine, &result.run_id).await?;
            }
        }
        Ok::<_, Failure>(result)
    }
    .await;
    prepared.shutdown().await;
    if let Some(ledger) = prepared.lane_ledger().filter(|_| !args.quiet) {
        errln!("browser lane: what the pages did: {}", lane_ledger(&ledger));
    }
    let result = driven?;
    drain(&engine).await;
    print_result(&app, &result, args.json, store_path).await
}

/// A browser lane's ledger on one line: `cafe: read_menu 1, order_latte 1; gallery: ...`.
fn lane_ledger(
    ledger: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>,
) -> String {
    if ledger.is_empty() {
        return "nothing".to_owned();
    }
    ledger
        .iter()
        .map(|(provider, tools)| {
            let calls: Vec<String> = tools.iter().map(|(t, n)| format!("{t} {n}")).collect();
            format!("{provider}: {}", calls.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Waits for the engine's subscribers to see every event, and says which of them failed.
async fn drain(engine: &Engine) {
    for f in engine.drain_subscribers().await {
        errln!("warning: subscriber `{}` stopped: {}", f.name, f.error);
    }
}

/// Most rounds of in-place approval prompts in one `warrant run`.
const APPROVAL_ROUNDS_MAX: usize = 32;

/// The lines a person types, read on a thread of their own (standard input blocks) so that a
/// prompt can watch the store while it waits. Each line is bounded; at the end of input the
/// channel closes.
fn typed_lines() -> &'static tokio::sync::Mutex<tokio::sync::mpsc::Receiver<std::io::Result<String>>>
{
    static LINES: std::sync::OnceLock<
        tokio::sync::Mutex<tokio::sync::mpsc::Receiver<std::io::Result<String>>>,
    > = std::sync::OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        #[expect(
            clippy::disallowed_methods,
            reason = "standard input blocks: its reader is a thread of its own, for the process"
        )]
        std::thread::spawn(move || {
            use std::io::{BufRead as _, Read as _};
            loop {
                let mut line = Vec::new();
                let read = std::io::stdin()
                    .lock()
                    .take(ANSWER_BYTES_MAX)
                    .read_until(b'\n', &mut line);
                let end = matches!(read, Ok(0) | Err(_));
                let sent = read.map(|_| String::from_utf8_lossy(&line).trim().to_owned());
                if end && sent.as_ref().is_ok_and(String::is_empty) {
                    return;
                }
                if tx.blocking_send(sent).is_err() || end {
                    return;
                }
            }
        });
        tokio::sync::Mutex::new(rx)
    })
}

/// What a prompt heard: a line typed here, or the request answered elsewhere meanwhile.
enum Heard {
    Typed(String),
    Elsewhere(warrant_app::Elsewhere),
}

/// How often a prompt looks whether its request was answered elsewhere.
const ELSEWHERE_LOOK: Duration = Duration::from_millis(250);

/// Asks `question` and waits for a line; while it waits, an answer to `request` of `run`
/// given elsewhere (another terminal, a server) ends the wait within [`ELSEWHERE_LOOK`]. The
/// end of input reads as an empty line.
async fn read_answer(question: &str, watch: Option<(&App, &RunId, &str)>) -> Result<Heard> {
    errln!("{question}");
    let mut lines = typed_lines().lock().await;
    let mut look = tokio::time::interval(ELSEWHERE_LOOK);
    loop {
        tokio::select! {
            line = lines.recv() => return match line {
                Some(Ok(line)) => Ok(Heard::Typed(line)),
                Some(Err(e)) => Err(Failure::failed(anyhow!("reading the answer: {e}"))),
                None => Ok(Heard::Typed(String::new())),
            },
            _ = look.tick(), if watch.is_some() => {
                if let Some((app, run, request)) = watch
                    && let Some(status) = app.answered_elsewhere(run, request).await?
                {
                    return Ok(Heard::Elsewhere(status));
                }
            }
        }
    }
}

/// Shows each pending approval request and records the person's answer. Returns whether the
/// run can go on: an answer was given here, or another terminal answered meanwhile.
async fn ask_in_place(app: &App, result: &RunResult) -> Result<bool> {
    let by = operator(None);
    let mut answered = false;
    for a in app.approvals(Some(&result.run_id)).await? {
        if a.status != ApprovalState::Pending {
            continue;
        }
        if let Some(status) = app.answered_elsewhere(&result.run_id, &a.request).await? {
            errln!("\napproval {}: already {status} elsewhere", a.request);
            answered = true;
            continue;
        }
        errln!(
            "\napproval {}: `{}` on {}\n  why:  {}\n  args: {}\n  expires at {}",
            a.request,
            a.tool,
            a.provider,
            a.reason,
            a.args,
            when(a.expires_at_ms)
        );
        for label in &a.provenance {
            errln!("    {} <- {}", label.pointer, origin(label));
        }
        loop {
            let answer = match read_answer(
                "approve once [y], for the rest of the run [r], deny [n], or leave it waiting [w]?",
                Some((app, &result.run_id, &a.request)),
            )
            .await?
            {
                Heard::Typed(answer) => answer,
                Heard::Elsewhere(status) => {
                    errln!(
                        "approval {} was {status} elsewhere; that answer stands",
                        a.request
                    );
                    answered = true;
                    break;
                }
            };
            let decision = match answer.to_lowercase().as_str() {
                "y" | "yes" => Some(Answer::Approve {
                    scope: warrant_core::event::ApprovalScope::Once,
                    until_ms: None,
                    edited: None,
                }),
                "r" | "run" => Some(Answer::Approve {
                    scope: warrant_core::event::ApprovalScope::Run,
                    until_ms: None,
                    edited: None,
                }),
                "n" | "no" => {
                    let reason = match read_answer("why?", None).await? {
                        Heard::Typed(reason) => reason,
                        Heard::Elsewhere(_) => String::new(),
                    };
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
                match app.answer(&a.request, decision, &by).await {
                    Ok(_) => answered = true,
                    // Answered in another terminal while this one asked: that answer stands.
                    Err(e) => match app.answered_elsewhere(&result.run_id, &a.request).await? {
                        Some(status) => {
                            errln!(
                                "approval {} was {status} elsewhere meanwhile; that answer stands",
                                a.request
                            );
                            answered = true;
                        }
                        None => return Err(e.into()),
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
    let (y, mo, d, h, m, s) = warrant_core::timer::utc(ms);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
}

/// Where an argument's value came from, in words: every source it was seen in.
fn origin(label: &warrant_core::provenance::ArgLabel) -> String {
    let mut text = label.source.to_string();
    for also in &label.also {
        text.push_str(&format!(", and {also}"));
    }
    text
}

/// What an operator does about what a run waits on, with the real ids.
fn waiting_hints(run: &RunId, waiting: &Waiting) {
    for DoubtRow {
        call,
        tool,
        provider,
        args,
        known,
        ..
    } in &waiting.waiting_on
    {
        let args = args.as_ref().map_or_else(String::new, |a| a.to_string());
        outln!(
            "waiting  {call} `{tool}` on {provider} is in doubt: {}\n         arguments {args}",
            known.as_deref().unwrap_or("")
        );
        outln!(
            "         find out whether it happened, then: warrant reconcile {run} {call} --happened (or --did-not-happen [--resend]), and warrant resume {run}"
        );
    }
    for a in &waiting.approvals {
        outln!(
            "approval {}: `{}` on {} needs approval (arguments {}); warrant approve {} (or warrant deny {} --reason ...), then warrant resume {run}",
            a.request,
            a.tool,
            a.provider,
            a.args,
            a.request,
            a.request
        );
    }
}

/// Prints how a run ended (or why it waits) and returns the exit code.
async fn print_result(
    app: &App,
    result: &RunResult,
    json: bool,
    store_path: &StoreAt,
) -> Result<u8> {
    if json {
        print_json(&result_json(app, result, store_path).await?)?;
    } else {
        let report = RunReport::from_state(&result.state);
        let events = app.log(&result.run_id).await?;
        out!("{}", report.render());
        waiting_hints(&result.run_id, &Waiting::of(&result.state, &events));
        if let Some(q) = result.state.pending_question() {
            let p = result.state.principal();
            say_question(q, &format!("{}/{}", p.tenant, p.user));
        }
        if let Some(until) = result.state.sleeping_until() {
            let run = &result.run_id;
            outln!(
                "sleeping until {}: `warrant serve` or `warrant worker` wakes it then, or `warrant resume {run}` (or `resume --all`) after then",
                warrant_core::timer::rfc3339(until)
            );
        }
    }
    Ok(result_code(result))
}

/// The exit code of a run as far as it went: its outcome's, or waiting.
fn result_code(result: &RunResult) -> u8 {
    match &result.outcome {
        Some(o) => outcome_code(o),
        None => exit::WAITING,
    }
}

/// A run as far as it went, as `--json` prints it.
async fn result_json(app: &App, result: &RunResult, store_path: &StoreAt) -> Result<Value> {
    let report = RunReport::from_state(&result.state);
    let events = app.log(&result.run_id).await?;
    let waiting = Waiting::of(&result.state, &events);
    {
        Ok(json!({
            "run_id": result.run_id,
            "outcome": result.outcome.as_ref().map_or(
                match result.state.status() {
                    RunStatus::Sleeping => RunStatus::Sleeping.name(),
                    _ => RunStatus::Waiting.name(),
                },
                Outcome::name,
            ),
            "sleeping_until_ms": result.state.sleeping_until(),
            "question": result.state.pending_question(),
            "outcome_detail": result.outcome,
            "answer": report.answer,
            "waiting_on": waiting.waiting_on,
            "approvals": waiting.approvals,
            "route": report.route,
            "route_key": report.route_key,
            "conformant": report.conformant,
            "carried": report.carried,
            "unsettled": report.unsettled,
            "elapsed_ms": report.timings.elapsed_ms,
            "setup_ms": report.timings.setup_ms,
            "store": store_path.to_string(),
        }))
    }
}

async fn runs(store_path: &StoreAt, query: RunQuery, json: bool) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let filtered = query.status.is_some() || query.spec_id.is_some();
    let runs = app.runs(query).await?.runs;
    if json {
        print_json(&runs)?;
        return Ok(exit::ATTAINED);
    }
    if runs.is_empty() && filtered {
        errln!("no runs in `{store_path}` match");
    } else if runs.is_empty() {
        errln!("no runs yet in `{store_path}`");
    }
    for r in &runs {
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

async fn show(store_path: &StoreAt, run: &str, json: bool) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let id = app.resolve(run).await?;
    let view = app.show(&id).await?;
    if json {
        print_json(&view)?;
        return Ok(exit::ATTAINED);
    }
    outln!("run      {}", view.run_id);
    outln!("spec     {} ({})", view.spec.id, view.spec.hash);
    outln!("decider  {}", view.decider);
    outln!("status   {}", view.status);
    if let Some(note) = &view.note {
        outln!("         {note}");
    }
    if let Some(q) = &view.question {
        outln!(
            "question {}: {} (answer: warrant answer {} --json '...', fitting {})",
            q.id,
            q.prompt,
            q.id,
            q.schema
        );
    }
    if let Some(a) = &view.answer {
        outln!("answer   {} ({})", a.text, a.kind);
    }
    outln!(
        "last     event {} `{}`",
        view.last_event.seq,
        view.last_event.kind
    );
    outln!(
        "time     {} ms driving, {} ms waiting (for people, or asleep)",
        view.driving_ms,
        view.waiting_ms
    );
    outln!("usage    {}", view.usage.text(&view.decider));
    for s in &view.steps {
        outln!(
            "  {:<10} {:<13} {} decisions, {} calls",
            s.id.0,
            s.status,
            s.decisions,
            s.call_rows.len()
        );
        for c in &s.call_rows {
            outln!("    {:<4} {:<22} {}", c.call.to_string(), c.tool, c.status);
            if let Some(f) = &c.fault {
                outln!("         {f}");
            }
        }
    }
    if let Some(p) = &view.parent {
        outln!("parent   {} step {} (depth {})", p.run, p.step.0, p.depth);
    }
    for c in &view.children {
        outln!(
            "child    {:<14} {:<13} step {}",
            c.run.0,
            c.outcome
                .as_ref()
                .map_or("unfinished", warrant_core::Outcome::name),
            c.step.0
        );
    }
    for w in &view.warnings {
        outln!("warning  {w}");
    }
    waiting_hints(&id, &view.waiting);
    Ok(exit::ATTAINED)
}

fn render_event(e: &StoredEvent) -> String {
    let ev = &e.event;
    let detail = match &ev.kind {
        EventKind::RunStarted {
            spec,
            decider,
            parent,
            ..
        } => format!(
            "spec {} decider {decider}{}",
            spec.id,
            parent
                .as_ref()
                .map(|p| format!(" child of {} step {}", p.run, p.step))
                .unwrap_or_default()
        ),
        EventKind::ChildSpawned {
            step,
            child,
            granted,
            ..
        } => format!(
            "{step} -> {child} ({} decisions, {} ms)",
            granted
                .decisions
                .map_or_else(|| "any".to_owned(), |d| d.to_string()),
            granted
                .deadline_ms
                .map_or_else(|| "any".to_owned(), |d| d.to_string())
        ),
        EventKind::ChildWaiting { step, children } => format!(
            "{step} waits on {}",
            children
                .iter()
                .map(|c| c.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        EventKind::ChildFinished {
            step,
            child,
            outcome,
            spent,
        } => format!(
            "{step} <- {child} {} ({} decisions, {} calls)",
            outcome.name(),
            spent.decisions,
            spent.calls
        ),
        EventKind::StepStarted { step, provider } => format!("{step} on {provider}"),
        EventKind::Observed {
            provider,
            version,
            actions,
            page,
            ..
        } => match page {
            Some(page) => format!(
                "{provider} {version} ({} actions) at {} {:?}",
                actions.len(),
                page.url,
                page.title
            ),
            None => format!("{provider} {version} ({} actions)", actions.len()),
        },
        EventKind::ObserveFailed {
            provider, fault, ..
        } => format!("{provider}: {}", fault.message),
        EventKind::ProviderRestarted {
            provider,
            call,
            cause,
            attempts,
            fault,
            ..
        } => format!(
            "{provider} stopped{} ({}); {}",
            call.map(|c| format!(" under {c}")).unwrap_or_default(),
            cause.message,
            warrant_core::report::restart_outcome(*attempts, fault.as_ref())
        ),
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
        EventKind::RunTakenUp { by, .. } => by
            .as_ref()
            .map(|b| format!("asked by {b}"))
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
        EventKind::TimerSet {
            step,
            until_ms,
            reason,
        } => format!(
            "{step} sleeps until {}{}",
            warrant_core::timer::rfc3339(*until_ms),
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            }
        ),
        EventKind::TimerFired { step } => format!("{step} woke"),
        EventKind::QuestionAsked {
            question, prompt, ..
        } => format!("{question}: {prompt}"),
        EventKind::QuestionAnswered {
            question,
            answer,
            by,
        } => format!("{question} answered by {by}: {answer}"),
        EventKind::ProviderAsked {
            call,
            message,
            action,
            answer,
            ..
        } => match answer {
            Some(a) => format!("{call}: its provider asked \"{message}\": {action} {a}"),
            None => format!("{call}: its provider asked \"{message}\": {action}"),
        },
        EventKind::ApprovalConsumed {
            request,
            call,
            grant,
        } => match grant {
            Some(g) => format!("{request} used by {call} (standing grant {g})"),
            None => format!("{request} used by {call}"),
        },
        EventKind::ApprovalGranted { request, grant, .. } => {
            format!(
                "{request} approved by standing grant {} ({})",
                grant.id, grant.by
            )
        }
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

/// How long `--follow` waits for an event before it looks at who drives the run.
const FOLLOW_QUIET: Duration = Duration::from_secs(1);

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

async fn events(
    store_path: &StoreAt,
    run: &str,
    follow: bool,
    from: u64,
    json: bool,
) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let id = app.resolve(run).await?;
    let print = |e: &StoredEvent| -> Result<()> {
        if json {
            outln!("{}", event_json(e)?);
        } else {
            outln!("{}", render_event(e));
        }
        Ok(())
    };
    if !follow {
        let events = app.log_reader().read(&id, from.max(1)).await.map_err(|e| {
            let e = e.to_string();
            if e.contains(&id.0) {
                Failure::failed(anyhow!(e))
            } else {
                Failure::failed(anyhow!("reading run `{id}`: {e}"))
            }
        })?;
        for e in &events {
            print(e)?;
        }
        return Ok(exit::ATTAINED);
    }
    // Every event once, in order, as any process appends it; it ends after `run_finished`.
    let mut feed = app.log_reader().subscribe(&id, from.max(1));
    // What was last said about who drives the run, so it is said once per change.
    let mut said: Option<String> = None;
    loop {
        // The feed loses nothing when a wait is cut short: it is read again where it was.
        match tokio::time::timeout(FOLLOW_QUIET, feed.next()).await {
            Ok(Ok(Some(e))) => {
                print(&e)?;
                continue;
            }
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(Failure::failed(anyhow!("{e}"))),
            Err(_quiet) => {}
        }
        let note = follow_note(&app, &id).await?;
        if note != said {
            if let Some(n) = &note {
                errln!("{n}");
            }
            said = note;
        }
    }
    Ok(exit::ATTAINED)
}

/// What a follower is told while a run is quiet: that it waits for a person, or that the
/// process driving it is gone.
async fn follow_note(app: &App, id: &RunId) -> Result<Option<String>> {
    let Some(summary) = app
        .runs_index()
        .summary(id)
        .await
        .map_err(|e| Failure::failed(anyhow!("{e}")))?
    else {
        return Ok(None);
    };
    let now = SystemClock.now_ms();
    Ok(match summary.status {
        RunStatus::Waiting => Some(format!(
            "{id} is waiting for a person (`warrant show {id}` says for what); still following"
        )),
        RunStatus::Ready => Some(format!(
            "{id} was answered and waits to be resumed: `warrant resume {id}`; still following"
        )),
        RunStatus::Running if !lease::driven(&summary, now) => Some(format!(
            "the process driving {id} is gone{}: `warrant resume {id}` carries it on; still following",
            summary
                .heartbeat_ms
                .map(|h| format!(" (last heard from {} s ago)", now.saturating_sub(h) / 1000))
                .unwrap_or_default()
        )),
        _ => None,
    })
}

async fn report(store_path: &StoreAt, run: &str, json: bool) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let report = app.report(&app.resolve(run).await?).await?;
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

async fn replay(store_path: &StoreAt, run: &str, verify: bool) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let root = app.resolve(run).await?;
    // The run, then every child it delegated to (and theirs), each from its own log.
    let mut queue = std::collections::VecDeque::from([root]);
    let mut diverged = false;
    while let Some(id) = queue.pop_front() {
        let events = app.log(&id).await?;
        queue.extend(events.iter().filter_map(|e| match &e.kind {
            EventKind::ChildSpawned { child, .. } => Some(child.clone()),
            _ => None,
        }));
        let check = warrant_engine::replay::replay(&events)
            .await
            .map_err(|e| Failure::failed(anyhow!("{e}")))?;
        if let Some(e) = &check.error {
            errln!("replay of {id} stopped: {e}");
        }
        match &check.divergence {
            None => {
                outln!(
                    "replay of {id}: {} events regenerated, identical to the log",
                    check.regenerated
                );
            }
            Some(d) => {
                diverged = true;
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
            }
        }
    }
    Ok(if verify && diverged {
        exit::NOT_ATTAINED
    } else {
        exit::ATTAINED
    })
}

async fn compare(
    store_path: &StoreAt,
    spec_path: &Path,
    deciders: &[String],
    lanes: &[String],
    json: bool,
) -> Result<u8> {
    let spec = warrant_app::load_spec(spec_path)?;
    let chosen: Vec<Option<&String>> = if deciders.is_empty() {
        vec![None]
    } else {
        deciders.iter().map(Some).collect()
    };
    let on: Vec<&str> = if lanes.is_empty() {
        vec!["reference"]
    } else {
        lanes.iter().map(String::as_str).collect()
    };
    if chosen.len() * on.len() < 2 {
        return Err(Failure::invalid(anyhow!(
            "compare needs two or more routes: two or more `--decider`, or `--lane reference \
             --lane browser`"
        )));
    }
    // Every decider is checked before any route runs.
    for d in deciders {
        self::deciders().load(d, None, &spec)?;
    }
    let app = app(store_path.open(Use::Create).await?);
    let mut reports = Vec::new();
    for decider in &chosen {
        for lane in &on {
            // Fresh providers for each route: the same frozen world.
            let options = warrant_app::RunOptions {
                decider: decider.cloned(),
                lane: if *lane == "browser" {
                    warrant_app::Lane::Browser
                } else {
                    warrant_app::Lane::Reference
                },
                ..warrant_app::RunOptions::default()
            };
            let prepared =
                warrant_app::Prepared::new(&self::deciders(), spec.clone(), spec_path, options)
                    .await?;
            errln!(
                "running {} on the {lane} lane ...",
                prepared.decider.identity()
            );
            let driven = prepared.drive(&app.engine_for(&prepared)).await;
            prepared.shutdown().await;
            reports.push(RunReport::from_state(&driven?.state));
        }
    }
    let mut cmp = warrant_core::compare::Comparison::of(&reports);
    if !lanes.is_empty() {
        let named = chosen.iter().flat_map(|_| on.iter());
        for (route, lane) in cmp.routes.iter_mut().zip(named) {
            route.lane = Some((*lane).to_owned());
        }
    }
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
    let spec = warrant_app::load_spec(spec_path)?;
    let warnings = warrant_app::validate(&deciders(), &spec, spec_path, connect_providers).await?;
    for w in &warnings {
        errln!("warning: {}: {w}", spec_path.display());
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

/// `warrant specs add|list|retire`: the operator's catalog in the store.
async fn specs(store_path: &StoreAt, command: crate::cli::SpecsCommand) -> Result<u8> {
    use crate::cli::SpecsCommand;
    match command {
        SpecsCommand::Add { spec, by } => {
            let loaded = warrant_app::load_spec(&spec)?;
            let app = app(store_path.open(Use::Create).await?);
            let (entry, new) = app.catalog_add(loaded, &spec, &operator(by)).await?;
            outln!(
                "{} `{}` version {}",
                if new { "added" } else { "already had" },
                entry.id,
                entry.digest
            );
            Ok(exit::ATTAINED)
        }
        SpecsCommand::List { all, json } => {
            let store = store_path.open(Use::Read).await?;
            let entries: Vec<_> = store
                .catalog(None)
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?
                .into_iter()
                .filter(|e| all || e.retired_at_ms.is_none())
                .collect();
            if json {
                let rows: Vec<Value> = entries
                    .iter()
                    .map(|e| {
                        json!({
                            "id": e.id, "digest": e.digest, "objective": e.spec.objective,
                            "inputs": e.spec.inputs, "added_at_ms": e.added_at_ms,
                            "added_by": e.added_by, "retired_at_ms": e.retired_at_ms,
                        })
                    })
                    .collect();
                print_json(&rows)?;
            } else if entries.is_empty() {
                errln!("the catalog of `{store_path}` is empty (`warrant specs add SPEC`)");
            } else {
                for e in &entries {
                    outln!(
                        "{:<20} {}  {}  by {}{}",
                        e.id,
                        e.digest.get(..19).unwrap_or(&e.digest),
                        when(e.added_at_ms),
                        e.added_by,
                        e.retired_at_ms
                            .map(|t| format!("  retired {}", when(t)))
                            .unwrap_or_default()
                    );
                }
            }
            Ok(exit::ATTAINED)
        }
        SpecsCommand::Retire { id, digest } => {
            let store = store_path.open(Use::Existing).await?;
            let digest = match digest {
                None => None,
                Some(d) => Some(
                    warrant_app::App::new(store.clone(), deciders())
                        .catalog_spec(&id, Some(&d))
                        .await
                        .map(|s| s.hash())
                        .or_else(|_| Ok::<_, Failure>(d))?,
                ),
            };
            let n = store
                .catalog_retire(&id, digest.as_deref(), SystemClock.now_ms())
                .await
                .map_err(|e| Failure::failed(anyhow!("{e}")))?;
            if n == 0 {
                return Err(Failure::invalid(anyhow!(
                    "the catalog has no version of `{id}` that is not retired{}",
                    digest
                        .map(|d| format!(" with digest {d}"))
                        .unwrap_or_default()
                )));
            }
            outln!("retired {n} version(s) of `{id}`");
            Ok(exit::ATTAINED)
        }
    }
}

/// `warrant validate --as-author SPEC`: the spec as a server holds an author's inline spec.
fn validate_as_author(spec_path: &Path, specs: Option<&Path>) -> Result<u8> {
    let shown = spec_path.display().to_string();
    let text = warrant_app::read_text(spec_path, warrant_app::DOCUMENT_BYTES_MAX, "spec")?;
    let catalog = specs.map(warrant_app::Catalog::open).transpose()?;
    let deciders = deciders();
    let spec = warrant_app::inline_spec(
        &text,
        warrant_core::spec::Format::of_path(&shown),
        catalog.as_ref(),
        deciders.registry(),
    )
    .map_err(|e| Failure::invalid(anyhow!("{shown}: {e}")))?;
    outln!(
        "ok: an author may start `{}` inline ({} steps, {} providers)",
        spec.id,
        spec.steps.len(),
        spec.providers.len()
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

/// `warrant man`: the manual page, generated from the same definitions as `--help`.
fn man(dir: Option<&Path>) -> Result<u8> {
    let cli = <Cli as clap::CommandFactory>::command();
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(cli, dir))
                .map_err(|e| {
                    Failure::failed(anyhow!("writing the pages to {}: {e}", dir.display()))
                })?;
            outln!("wrote the manual pages to {}", dir.display());
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cli)
                .render(&mut page)
                .map_err(|e| Failure::failed(anyhow!("rendering the manual page: {e}")))?;
            out!("{}", String::from_utf8_lossy(&page));
        }
    }
    Ok(exit::ATTAINED)
}

fn schema(which: SchemaKind) -> Result<u8> {
    let schema = match which {
        SchemaKind::Spec => schemars::schema_for!(Spec),
        SchemaKind::Report => schemars::schema_for!(RunReport),
        SchemaKind::Events => schemars::schema_for!(Event),
        SchemaKind::Gateway => schemars::schema_for!(warrant_gateway::GatewayConfig),
        SchemaKind::Providers => schemars::schema_for!(warrant_app::ProvidersFile),
        SchemaKind::Cedar => {
            out!("{}", warrant_policy::SCHEMA);
            return Ok(exit::ATTAINED);
        }
    };
    print_json(&schema)?;
    Ok(exit::ATTAINED)
}

async fn resume(
    store_path: &StoreAt,
    run: Option<&str>,
    all: bool,
    json: bool,
    quiet: bool,
) -> Result<u8> {
    let app = app(store_path.open(Use::Existing).await?);
    let ids: Vec<RunId> = match (run, all) {
        (Some(r), false) => vec![app.resolve(r).await?],
        // Runs no process drives that can go on: interrupted ones, and ones a person answered.
        (None, true) => app.resumable().await?,
        _ => return Err(Failure::invalid(anyhow!("give a RUN or --all, not both"))),
    };
    if ids.is_empty() && !(all && json) {
        errln!("no interrupted or answered runs in `{store_path}`");
        return Ok(exit::ATTAINED);
    }
    let mut worst = exit::ATTAINED;
    // `--all --json`: one array, of what each run came to (empty when none could go on).
    let mut each = Vec::new();
    for id in ids {
        let result = match reenter(&app, &id, quiet).await {
            Ok(result) => result,
            // With --all, a run that cannot go on now (driven elsewhere, interrupted) is
            // told and the others still go on.
            Err(f) if all => {
                let message = format!("{:#}", f.error);
                errln!("{id}: {message}");
                if json {
                    each.push(json!({
                        "run_id": id,
                        "error": {"exit_code": f.code, "message": message},
                    }));
                }
                worst = worse(worst, f.code);
                continue;
            }
            Err(f) => return Err(f),
        };
        let code = if all && json {
            each.push(result_json(&app, &result, store_path).await?);
            result_code(&result)
        } else {
            print_result(&app, &result, json, store_path).await?
        };
        worst = worse(worst, code);
    }
    if all && json {
        print_json(&each)?;
    }
    Ok(worst)
}

/// The exit code of several runs: waiting over a verdict (something is left to do), else
/// the higher code (a refusal, an interruption).
fn worse(a: u8, b: u8) -> u8 {
    match (a, b) {
        (exit::WAITING, c) | (c, exit::WAITING) if c <= exit::NOT_ATTAINED => exit::WAITING,
        (a, b) => a.max(b),
    }
}

/// Re-enters one run with what it recorded (decider, authority, execution control) and drives
/// it as far as it goes.
async fn reenter(app: &App, id: &RunId, quiet: bool) -> Result<RunResult> {
    let prepared = app.reentry(id).await?;
    let engine = app.engine_for(&prepared);
    if !quiet {
        errln!("resuming {id} ...");
        engine.subscribe("progress", Box::new(crate::progress::Progress::new()));
    }
    let driven = prepared.drive(&engine).await;
    prepared.shutdown().await;
    let result = driven?;
    drain(&engine).await;
    Ok(result)
}

/// What an operator said of a call in doubt.
struct Reconciled {
    happened: bool,
    did_not_happen: bool,
    resend: bool,
}

async fn reconcile(
    store_path: &StoreAt,
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
    let app = app(store_path.open(Use::Existing).await?);
    let id = app.resolve(run).await?;
    let call: CallId = call.parse().map_err(|e| Failure::invalid(anyhow!("{e}")))?;
    let by = operator(by);
    let found = warrant_app::Reconciled {
        happened: said.happened,
        resend: said.resend,
    };
    app.reconcile(&id, call, found, &by, note).await?;
    let what = match (said.happened, said.resend) {
        (true, _) => "happened",
        (false, true) => "did not happen, and is to be sent again",
        (false, false) => "did not happen (it is not sent again; the report shows it)",
    };
    outln!(
        "{id} {call}: recorded that it {what} (by {by}); {}",
        next_step(&app, &id).await?
    );
    Ok(exit::ATTAINED)
}

/// How long `warrant approve` and `warrant reconcile` watch for a process (a server, a gateway,
/// a worker) taking up the run they answered.
const TAKEN_UP_WITHIN: Duration = Duration::from_secs(1);

/// What is true next for `run`, just answered: it still waits for something else, a process
/// took it up (it goes on by itself), it ended, or `warrant resume` carries it on.
async fn next_step(app: &App, run: &RunId) -> Result<String> {
    if app.shown_status(run).await? == RunStatus::Waiting {
        return Ok(format!(
            "it still waits for another answer (`warrant show {run}`)"
        ));
    }
    Ok(match app.taken_up(run, TAKEN_UP_WITHIN).await? {
        Some(holder) if holder.is_empty() => format!("run {run} has ended (`warrant show {run}`)"),
        Some(holder) => format!("{holder} carries run {run} on (nothing to do here)"),
        None => format!("continue with `warrant resume {run}`"),
    })
}

#[expect(
    clippy::disallowed_methods,
    reason = "the CLI owns the environment: `USER` names the operator"
)]
fn operator(by: Option<String>) -> String {
    by.or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "operator".into())
}

async fn cancel(
    store_path: &StoreAt,
    run: &str,
    reason: &str,
    by: Option<String>,
    wait_s: u64,
) -> Result<u8> {
    let app = app(store_path.open(Use::Existing).await?);
    let id = app.resolve(run).await?;
    let by = operator(by);
    let wait = Duration::from_secs(wait_s);
    Ok(match app.cancel(&id, &by, reason, wait).await? {
        Cancelled::AlreadyEnded(status) => {
            // Like an answer or a reconciliation after the end: refused, nothing written.
            return Err(Failure::invalid(anyhow!(
                "run `{id}` already ended {status}: nothing to cancel"
            )));
        }
        Cancelled::Cancelled => {
            outln!("{id} cancelled (by {by}: {reason})");
            exit::ATTAINED
        }
        Cancelled::EndedFirst(status) => {
            outln!("{id} ended {status} before the cancellation took effect");
            exit::NOT_ATTAINED
        }
        Cancelled::Pending { holder } => {
            outln!(
                "the cancellation of {id} is recorded; the process driving it ({holder}) has not acted on it within {wait_s} s"
            );
            exit::NOT_ATTAINED
        }
    })
}

async fn approvals(store_path: &StoreAt, run: Option<&str>, json: bool) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let rows: Vec<ApprovalRow> = match run {
        Some(r) => app.approvals(Some(&app.resolve(r).await?)).await?,
        None => app.approvals(None).await?,
    };
    if json {
        print_json(&rows)?;
        return Ok(exit::ATTAINED);
    }
    if rows.is_empty() {
        errln!("no pending approval requests");
    }
    let mut tree = None;
    for r in &rows {
        // A child's asks are listed under the tree they route up to.
        let root = warrant_engine::root_of(&r.run);
        if r.parent.is_some() && tree.as_ref() != Some(&root) {
            outln!("tree {root}:");
        }
        tree = Some(root);
        if let Some(parent) = &r.parent {
            outln!("  asked by child {} (of {parent}, step {})", r.run, r.step);
        }
        outln!(
            "{}  {}  `{}` on {}  {}\n    args     {}\n    digest   {}\n    expires  {}",
            r.request,
            r.status,
            r.tool,
            r.provider,
            r.reason,
            r.args,
            r.args_digest,
            when(r.expires_at_ms)
        );
        for label in &r.provenance {
            outln!("    {:<8} <- {}", label.pointer, origin(label));
        }
    }
    Ok(exit::ATTAINED)
}

async fn answer(
    store_path: &StoreAt,
    request: &str,
    answer: Answer,
    by: Option<String>,
) -> Result<u8> {
    let app = app(store_path.open(Use::Existing).await?);
    let by = operator(by);
    let approving = matches!(answer, Answer::Approve { .. });
    // `last-a1`, a prefix of a run id: the request's full id.
    let request = app.resolve_request(request).await?;
    let request = request.as_str();
    let done = app.answer(request, answer, &by).await?;
    let verb = if approving {
        ApprovalState::Approved
    } else {
        ApprovalState::Denied
    };
    let run = RunId::of_request(request).unwrap_or_else(|| RunId(request.to_owned()));
    match done {
        Answered::Recorded => {
            outln!("{request} {verb} by {by}; {}", next_step(&app, &run).await?);
        }
        Answered::AlreadyAnswered => outln!("{request} was already {verb}: nothing changed"),
    }
    Ok(exit::ATTAINED)
}

async fn questions(store_path: &StoreAt, run: Option<&str>, json: bool) -> Result<u8> {
    let app = app(store_path.open(Use::Read).await?);
    let rows = match run {
        Some(r) => app.pending_questions(Some(&app.resolve(r).await?)).await?,
        None => app.pending_questions(None).await?,
    };
    if json {
        print_json(&rows)?;
        return Ok(exit::ATTAINED);
    }
    if rows.is_empty() {
        errln!("no questions wait for an answer");
    }
    for r in &rows {
        say_question(&r.question, &format!("{}/{}", r.tenant, r.user));
    }
    Ok(exit::ATTAINED)
}

/// A question and how to answer it.
fn say_question(q: &warrant_core::fold::Question, asks: &str) {
    outln!(
        "{}  asks {asks}: {}
    answer   fits {}
    asked    {}
    warrant answer {} --json '...' (or --text '...')",
        q.id,
        q.prompt,
        q.schema,
        when(q.asked_at_ms),
        q.id
    );
}

async fn answer_question(
    store_path: &StoreAt,
    question: &str,
    given: Option<serde_json::Value>,
    by: Option<String>,
) -> Result<u8> {
    let Some(given) = given else {
        return Err(Failure::invalid(anyhow!(
            "give the answer: --json JSON or --text TEXT"
        )));
    };
    let app = app(store_path.open(Use::Existing).await?);
    let by = operator(by);
    // `last-q1`, a prefix of a run id: the question's full id.
    let (question, run) = match RunId::of_question(question) {
        Some((run, n)) => {
            let run = app.resolve(&run.0).await?;
            (format!("{run}-q{n}"), run)
        }
        None => (question.to_owned(), RunId(question.to_owned())),
    };
    match app
        .answer_question(&question, std::sync::Arc::new(given), &by)
        .await?
    {
        Answered::Recorded => {
            outln!(
                "{question} answered by {by}; {}",
                next_step(&app, &run).await?
            );
        }
        Answered::AlreadyAnswered => outln!("{question} was already answered so: nothing changed"),
    }
    Ok(exit::ATTAINED)
}

/// `warrant serve`: binds, says where, and serves until SIGTERM or Ctrl-C.
async fn serve(store_path: &StoreAt, args: crate::cli::ServeArgs) -> Result<u8> {
    if args.hash_token {
        let token = match read_answer("the token (it is not echoed anywhere):", None).await? {
            Heard::Typed(token) => token,
            Heard::Elsewhere(_) => String::new(),
        };
        if token.is_empty() {
            return Err(Failure::invalid(anyhow!("no token on stdin")));
        }
        outln!("sha256:{}", warrant_server::token_digest(&token));
        return Ok(exit::ATTAINED);
    }
    init_logs(&args.logs)?;
    let config = warrant_server::Config {
        listen: args.listen,
        queue: matches!(store_path, StoreAt::Postgres(_)),
        principals: args.principals,
        specs: args.specs,
        registry: REGISTRY.get().cloned().unwrap_or_default(),
        floor: args.floor,
        self_approval: args.allow_self_approval,
        max_runs: args.max_runs,
        hold_waiting: std::time::Duration::from_secs(args.hold_waiting),
        models: MODELS.get().cloned().flatten(),
        body_limit: args.body_limit,
        grace: std::time::Duration::from_secs(args.grace),
        client_timeout: std::time::Duration::from_secs(args.client_timeout),
        #[cfg(feature = "otlp")]
        otlp: args
            .otlp
            .settings()
            .map_err(|e| Failure::invalid(anyhow!(e)))?,
        build: Some(crate::version::info()),
        webhooks: webhooks_file(args.webhooks.as_deref())?,
    };
    let store = store_path.open(Use::Create).await?;
    let server = warrant_server::Server::bind(config, store)
        .await
        .map_err(|e| match e {
            warrant_server::ServerError::Invalid(m) => Failure::invalid(anyhow!(m)),
            warrant_server::ServerError::Failed(m) => Failure::failed(anyhow!(m)),
        })?;
    let addr = server.local_addr().map_err(Failure::failed)?;
    outln!("warrant serve: listening on http://{addr} (console at http://{addr}/)");
    server
        .serve(shutdown_signal())
        .await
        .map_err(Failure::failed)?;
    errln!("warrant serve: stopped");
    Ok(exit::ATTAINED)
}

fn init_logs(logs: &crate::cli::LogArgs) -> Result<()> {
    let format = match logs.log_format {
        crate::cli::LogFormat::Text => warrant_server::telemetry::LogFormat::Text,
        crate::cli::LogFormat::Json => warrant_server::telemetry::LogFormat::Json,
    };
    warrant_server::telemetry::init(format, logs.log.as_deref())
        .map_err(|e| Failure::invalid(anyhow!(e)))
}

async fn worker(store_path: &StoreAt, args: crate::cli::WorkerArgs) -> Result<u8> {
    if matches!(store_path, StoreAt::File(_)) {
        return Err(Failure::invalid(anyhow!(
            "a worker takes runs from a fleet's PostgreSQL store: pass --store postgres://... (on one machine with a SQLite file, `warrant serve` drives runs itself)"
        )));
    }
    init_logs(&args.logs)?;
    let store = store_path.open(Use::Existing).await?;
    let mut app = app(store).with_floor(args.floor.clone())?;
    if let Some(name) = &args.name {
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(Failure::invalid(anyhow!(
                "--name must be a non-empty name without control characters"
            )));
        }
        app = app.named(name);
    }
    let settings = warrant_app::worker::Settings {
        max_runs: usize::try_from(args.max_runs).unwrap_or(usize::MAX),
        share: warrant_core::ports::FairShare {
            runs_per_tenant: args.tenant_runs,
            approvals_per_tenant: args.tenant_approvals,
        },
        look_every: Duration::from_millis(500),
        grace: Duration::from_secs(args.grace),
    };
    errln!("warrant worker: {} on `{store_path}`", app.holder());
    let mut runner = warrant_app::Supervisor::new(app.clone(), settings.max_runs).letting_go();
    #[cfg(feature = "otlp")]
    if let Some(otlp) = args
        .otlp
        .settings()
        .map_err(|e| Failure::invalid(anyhow!(e)))?
    {
        runner = warrant_server::otlp::observe(runner, &otlp)
            .map_err(|e| Failure::invalid(anyhow!(e)))?;
    }
    let runner = Arc::new(runner);
    deliver_notices(&app, webhooks_file(args.webhooks.as_deref())?)?;
    // The store's schedules start their due ticks' runs here too (a tick runs once however
    // many processes look).
    let scheduler = app.scheduler(runner.clone());
    #[expect(
        clippy::disallowed_methods,
        reason = "the schedules are looked at for as long as the worker lives"
    )]
    tokio::spawn(scheduler.run(
        Arc::new(warrant_engine::SystemClock),
        std::future::pending(),
    ));
    if let Some(addr) = args.metrics {
        metrics_on(addr, app, Some(runner.clone())).await?;
    }
    warrant_app::worker::work_with(runner, settings, shutdown_signal())
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    errln!("warrant worker: stopped");
    Ok(exit::ATTAINED)
}

/// Answers `/metrics` on `addr` for as long as the process lives: a worker's (with the
/// supervisor its runs go through) or a gateway's (the fleet's state only).
async fn metrics_on(
    addr: std::net::SocketAddr,
    app: App,
    runner: Option<Arc<dyn warrant_app::Driving>>,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::invalid(anyhow!("--metrics: cannot listen on `{addr}`: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::failed(anyhow!("{e}")))?;
    errln!("metrics at http://{bound}/metrics");
    #[expect(
        clippy::disallowed_methods,
        reason = "the metrics endpoint answers for as long as the process lives"
    )]
    tokio::spawn(async move {
        if let Err(e) =
            warrant_server::metrics::serve_metrics(listener, app, runner, std::future::pending())
                .await
        {
            errln!("warning: the metrics endpoint stopped: {e}");
        }
    });
    Ok(())
}

/// Resolves at SIGTERM or Ctrl-C.
/// `warrant webmcp-serve`: the demo providers as WebMCP pages until Ctrl-C.
async fn webmcp_serve(names: &[String], listen: &str) -> Result<u8> {
    let catalog = warrant_surfaces::ReferenceCatalog::default();
    let all = ["cafe", "gallery", "bakery", "bank", "mailbox"];
    let names: Vec<&str> = if names.is_empty() {
        all.to_vec()
    } else {
        names.iter().map(String::as_str).collect()
    };
    let mut providers = std::collections::BTreeMap::new();
    for name in names {
        let made = catalog
            .make(name, None)
            .map_err(|e| Failure::invalid(anyhow!("provider `{name}`: {e}")))?
            .ok_or_else(|| {
                Failure::invalid(anyhow!(
                    "unknown provider `{name}` (this build serves: {})",
                    all.join(", ")
                ))
            })?;
        providers.insert(name.to_owned(), made);
    }
    let lane = warrant_surfaces::webmcp::BrowserLane::serve(providers.clone(), listen, "")
        .await
        .map_err(|e| Failure::invalid(anyhow!(e)))?;
    for name in providers.keys() {
        errln!("{name}: {}/{name}/", lane.base());
    }
    errln!("what the pages did: {}/ledger", lane.base());
    shutdown_signal().await;
    drop(lane);
    Ok(0)
}

fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    // Listening starts here, not at the first poll: a signal that comes in between is kept.
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let interrupt = signal(SignalKind::interrupt()).ok();
    async move {
        let wait = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = wait(interrupt) => {}
            () = wait(term) => {}
        }
    }
}

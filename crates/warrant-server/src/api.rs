//! The JSON API under `/v1`: runs, their events (pages or Server-Sent Events), reports,
//! approvals, control actions. Every handler authenticates the caller, checks its role, and
//! answers another tenant's run as if it did not exist.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, Path as UrlPath, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use warrant_app::{ApprovalRow, RunOptions};
use warrant_core::event::{ApprovalScope, EventKind};
use warrant_core::ids::{CallId, RunId};
use warrant_core::ports::{IdempotencyRecord, RunCursor, RunQuery};
use warrant_core::spec::Format;
use warrant_core::{ApprovalState, RunStatus};
use warrant_engine::Answer;

use crate::Shared;
use crate::auth::{Principal, Role};
use crate::problem::Problem;

/// Most events on one JSON page.
const EVENTS_PAGE_MAX: usize = 1000;
/// Most runs on one page.
pub(crate) const RUNS_PAGE_MAX: usize = 500;
/// How long a cancel waits for the run to end before answering `202`.
const CANCEL_WAIT: Duration = Duration::from_secs(5);
/// Longest idempotency key.
const IDEMPOTENCY_KEY_MAX: usize = 255;
/// How long an `Idempotency-Key` of `POST /v1/runs` is kept (24 hours): within it a retry of
/// the request gets the run the first one started, from any server sharing the store; after
/// it the key is free again (the store purges it).
pub const IDEMPOTENCY_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// The caller, authenticated: by a bearer token, or by the console's cookie.
pub struct Caller {
    /// Who.
    pub principal: Principal,
}

/// The console's cookie.
pub const COOKIE: &str = "warrant_token";

/// The value of cookie `name` in `headers`.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

impl FromRequestParts<Arc<Shared>> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        shared: &Arc<Shared>,
    ) -> Result<Caller, Problem> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let token = bearer.or_else(|| cookie(&parts.headers, COOKIE));
        let principal = shared.principals.authenticate(token)?;
        Ok(Caller { principal })
    }
}

/// A JSON body, or a problem saying what is wrong with it (413 over the limit).
pub struct Body<T>(pub T);

impl<T> axum::extract::FromRequest<Arc<Shared>> for Body<T>
where
    T: serde::de::DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request(
        req: axum::extract::Request,
        shared: &Arc<Shared>,
    ) -> Result<Body<T>, Problem> {
        let read =
            tokio::time::timeout(shared.client_timeout, Json::<T>::from_request(req, shared));
        let Ok(read) = read.await else {
            return Err(Problem::timeout(shared.client_timeout));
        };
        match read {
            Ok(Json(v)) => Ok(Body(v)),
            Err(JsonRejection::BytesRejection(e))
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Err(Problem::too_large(shared.body_limit))
            }
            Err(JsonRejection::MissingJsonContentType(_)) => Err(Problem::bad_request(
                "send the body as JSON (`Content-Type: application/json`)",
            )),
            Err(e) => Err(Problem::bad_request(e.body_text())),
        }
    }
}

impl Shared {
    /// The run `id` names, when the caller's tenant may see it; else 404 (as if absent).
    pub async fn visible(&self, caller: &Caller, id: &str) -> Result<RunId, Problem> {
        Ok(self.app.visible(id, &caller.principal.tenant).await?)
    }

    /// The tenant `run` acts for (`local` for a run that recorded none); `None` when no
    /// such run is in the store. Cached: it never changes.
    pub async fn tenant_of(&self, run: &RunId) -> Result<Option<String>, Problem> {
        Ok(self.app.tenant_of(run).await?)
    }
}

/// A spec of the catalog kept in the store, as `GET /v1/specs` lists it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CatalogSpec {
    /// Its id: what `spec_id` names.
    pub id: String,
    /// The current version's digest.
    pub digest: String,
    /// Its objective.
    pub objective: String,
    /// The inputs a start gives it, with their JSON Schemas.
    #[schemars(with = "Value")]
    pub inputs: warrant_core::spec::Inputs,
    /// When this version was added (ms since the epoch), and by whom.
    pub added_at_ms: u64,
    /// Who added it.
    pub added_by: String,
}

/// `GET /v1/specs`: the current version of each spec in the store's catalog.
pub async fn specs(
    State(shared): State<Arc<Shared>>,
    _caller: Caller,
) -> Result<Json<Vec<CatalogSpec>>, Problem> {
    Ok(Json(shared.catalog_specs().await?))
}

/// `GET /v1/grants` parameters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantsQuery {
    /// Revoked and expired grants too.
    #[serde(default)]
    pub all: Option<bool>,
}

/// `POST /v1/grants` body: a standing grant for the caller's tenant.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGrant {
    /// The provider.
    pub provider: String,
    /// The tool.
    pub tool: String,
    /// Argument (top-level name) to constraint: `one_of` (a single value: equal to), `min`,
    /// `max`, `from` (`objective`, `input`, `carried`, `trusted_output`, `decider`).
    #[serde(default)]
    pub args: std::collections::BTreeMap<String, warrant_core::spec::ArgConstraint>,
    /// The user whose runs it covers (absent: every user of the tenant).
    #[serde(default)]
    pub user: Option<String>,
    /// Until when (ms since the epoch; absent: until revoked).
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
    /// Why it is given.
    #[serde(default)]
    pub note: String,
}

/// `GET /v1/grants`: the tenant's standing grants, newest first.
pub async fn grants(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<GrantsQuery>,
) -> Result<Json<Vec<warrant_core::standing::StandingGrant>>, Problem> {
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let all = q.all.unwrap_or(false);
    Ok(Json(
        shared
            .app
            .grants(Some(&caller.principal.tenant))
            .await?
            .into_iter()
            .filter(|g| all || g.live(now))
            .collect(),
    ))
}

/// `POST /v1/grants`: give a standing grant (an approver's), for the caller's tenant.
pub async fn add_grant(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Body(body): Body<NewGrant>,
) -> Result<(StatusCode, Json<warrant_core::standing::StandingGrant>), Problem> {
    caller.principal.require(Role::Approver)?;
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let grant = warrant_core::standing::StandingGrant {
        id: warrant_app::grants::new_grant_id(),
        tenant: caller.principal.tenant.clone(),
        user: body.user,
        provider: body.provider,
        tool: body.tool,
        args: body.args,
        by: caller.principal.by(),
        created_at_ms: now,
        expires_at_ms: body.expires_at_ms,
        note: body.note,
        revoked: None,
    };
    let grant = shared.app.grant_add(grant).await?;
    Ok((StatusCode::CREATED, Json(grant)))
}

/// `POST /v1/grants/{id}/revoke`: revoke a standing grant of the caller's tenant (an
/// approver's).
pub async fn revoke_grant(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<warrant_core::standing::StandingGrant>, Problem> {
    shared.revoke_grant(&caller, &id).await
}

impl Shared {
    /// Revokes grant `id` of the caller's tenant: the grant as it is then.
    pub(crate) async fn revoke_grant(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Json<warrant_core::standing::StandingGrant>, Problem> {
        caller.principal.require(Role::Approver)?;
        let tenant = Some(caller.principal.tenant.as_str());
        let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
        self.app
            .grant_revoke(id, tenant, &caller.principal.by(), now)
            .await?;
        self.app
            .grants(tenant)
            .await?
            .into_iter()
            .find(|g| g.id == id)
            .map(Json)
            .ok_or_else(|| {
                Problem::not_found(format!(
                    "no standing grant `{}`",
                    warrant_core::text::echo(id)
                ))
            })
    }

    /// "Always allow this" from the console: `request` approved once (its arguments shown
    /// with `digest`) and a standing grant kept for the same tool with the same arguments.
    pub(crate) async fn approve_always(
        &self,
        caller: &Caller,
        request: &str,
        digest: &str,
    ) -> Result<warrant_core::standing::StandingGrant, Problem> {
        let row = self.request(caller, request).await?;
        caller.principal.require(Role::Approver)?;
        if row.args_digest != digest {
            return Err(Problem::conflict(
                "digest-mismatch",
                format!(
                    "`{request}` asks about arguments with digest {}, not {digest}: look at the request again",
                    row.args_digest
                ),
            ));
        }
        let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
        let (grant, _) = self
            .app
            .approve_always(request, &caller.principal.by(), false, None, now)
            .await?;
        // Wakes the task holding it, or re-enters it.
        if let Err(p) = self.runner.reenter(&row.run, None).await {
            tracing::warn!(run = %row.run, problem = %p, "not re-entering");
        }
        Ok(grant)
    }
}

/// `GET /v1/schedules`: the tenant's schedules, each with its next tick and its last.
pub async fn schedules(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
) -> Result<Json<Vec<warrant_app::schedule::ScheduleView>>, Problem> {
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    Ok(Json(
        shared
            .app
            .schedule_views(Some(&caller.principal.tenant), now)
            .await?,
    ))
}

/// `POST /v1/schedules/{id}/pause`.
pub async fn pause_schedule(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<warrant_app::schedule::ScheduleView>, Problem> {
    shared.schedule_paused(&caller, &id, true).await
}

/// `POST /v1/schedules/{id}/resume`.
pub async fn resume_schedule(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<warrant_app::schedule::ScheduleView>, Problem> {
    shared.schedule_paused(&caller, &id, false).await
}

impl Shared {
    /// Pauses or resumes the caller's tenant's schedule `id` (an operator's): the schedule as
    /// it is then.
    pub(crate) async fn schedule_paused(
        &self,
        caller: &Caller,
        id: &str,
        paused: bool,
    ) -> Result<Json<warrant_app::schedule::ScheduleView>, Problem> {
        caller.principal.require(Role::Operator)?;
        let tenant = Some(caller.principal.tenant.as_str());
        let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
        let changed = self.app.schedule_paused(id, tenant, paused, now).await?;
        if changed {
            tracing::info!(
                principal = %caller.principal.by(),
                schedule = %id,
                action = if paused { "pause" } else { "resume" },
                "schedule"
            );
        }
        self.app
            .schedule_views(tenant, now)
            .await?
            .into_iter()
            .find(|s| s.id == id)
            .map(Json)
            .ok_or_else(|| {
                Problem::not_found(format!("no schedule `{}`", warrant_core::text::echo(id)))
            })
    }

    /// The current version of each spec in the store's catalog that is not retired.
    pub(crate) async fn catalog_specs(&self) -> Result<Vec<CatalogSpec>, Problem> {
        let entries = self
            .app
            .spec_catalog()
            .catalog(None)
            .await
            .map_err(warrant_app::AppError::from)?;
        let mut seen = std::collections::BTreeSet::new();
        Ok(entries
            .into_iter()
            .filter(|e| e.retired_at_ms.is_none() && seen.insert(e.id.clone()))
            .map(|e| CatalogSpec {
                objective: e.spec.objective.clone(),
                inputs: e.spec.inputs.clone(),
                id: e.id,
                digest: e.digest,
                added_at_ms: e.added_at_ms,
                added_by: e.added_by,
            })
            .collect())
    }
}

/// What `POST /v1/runs` takes.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The spec, inline: YAML or JSON text, or a JSON object. Its relative paths resolve
    /// against the server's specs folder.
    #[serde(default)]
    pub spec: Option<Value>,
    /// Or a spec file under the server's specs folder (`--specs`).
    #[serde(default)]
    pub spec_path: Option<String>,
    /// Or a spec of the catalog kept in the store (`warrant specs add`), by id: its newest
    /// version, or `spec_digest`'s.
    #[serde(default)]
    pub spec_id: Option<String>,
    /// The version of `spec_id` to start (its digest, or a prefix of it).
    #[serde(default)]
    pub spec_digest: Option<String>,
    /// `kind:argument` (a script path resolves under the specs folder); the spec's default
    /// decider when absent.
    #[serde(default)]
    pub decider: Option<String>,
    /// Tools every call to is denied.
    #[serde(default)]
    pub deny_tools: Vec<String>,
    /// Tools every call to needs a person's approval.
    #[serde(default)]
    pub ask_tools: Vec<String>,
    /// Policy files under the specs folder, ruling with the spec's.
    #[serde(default)]
    pub policies: Vec<String>,
    /// A security profile (`untrusted-input`), instead of the spec's.
    #[serde(default)]
    pub profile: Option<String>,
    /// Values of the spec's inputs, by name: checked against the spec's schemas before the
    /// run starts; the run carries them as `input.<name>`, and provenance labels them
    /// `input` (a user's value, like the objective).
    #[serde(default)]
    pub inputs: std::collections::BTreeMap<String, Value>,
}

/// A run as the API answers it after a control action.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunRef {
    /// The run.
    pub run_id: String,
    /// Where it stands.
    #[schemars(with = "String")]
    pub status: RunStatus,
}

impl Shared {
    /// What a start needs, checked before anything is started, read, fetched or written. A
    /// `runner` starts the operator's catalog specs (`spec_path`); an inline spec is an
    /// `author`'s, held to the providers and models the operator registered. Every file a
    /// request names is inside the catalog; every refusal names the field.
    async fn prepare(
        &self,
        caller: &Caller,
        req: StartRun,
    ) -> Result<warrant_app::Prepared, Problem> {
        let catalog = self.catalog.as_ref();
        let registry = self.deciders.registry();
        let no_catalog =
            || Problem::invalid("this server has no specs folder (`warrant serve --specs DIR`)");
        if req.spec_digest.is_some() && req.spec_id.is_none() {
            return Err(Problem::invalid("`spec_digest` goes with `spec_id`"));
        }
        let (mut spec, spec_path) = match (&req.spec, &req.spec_path, &req.spec_id) {
            (None, None, Some(id)) => (
                self.app
                    .catalog_spec(id, req.spec_digest.as_deref())
                    .await?,
                PathBuf::from("catalog"),
            ),
            (None, Some(rel), None) => catalog
                .ok_or_else(no_catalog)?
                .load(rel)
                .map_err(|e| Problem::invalid(format!("spec_path: {e}")))?,
            (Some(inline), None, None) => {
                // (The caller's role was checked: an author's.)
                let (text, format) = match inline {
                    Value::String(s) => (s.clone(), Format::Yaml),
                    other => (other.to_string(), Format::Json),
                };
                let spec = warrant_app::inline_spec(&text, format, catalog, registry)?;
                // Its paths were made absolute where they are allowed (inside the catalog).
                (spec, PathBuf::from("inline"))
            }
            _ => {
                return Err(Problem::invalid(
                    "give one of `spec` (inline), `spec_path` or `spec_id`",
                ));
            }
        };
        if let Some(profile) = &req.profile {
            spec.profile = Some(profile.parse().map_err(|e: String| Problem::invalid(e))?);
        }
        let decider = req
            .decider
            .as_deref()
            .map(|d| warrant_app::confine_decider(d, catalog, registry))
            .transpose()
            .map_err(|e| Problem::invalid(format!("decider: {e}")))?;
        let policies = req
            .policies
            .iter()
            .enumerate()
            .map(|(i, p)| {
                catalog
                    .ok_or_else(no_catalog)?
                    .file(p, "policy")
                    .map_err(|e| Problem::invalid(format!("policies[{i}]: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let options = RunOptions {
            decider,
            deny_tools: req.deny_tools,
            ask_tools: req.ask_tools,
            // A caller's policies narrow the spec's; read with them they could widen it.
            policies: Vec::new(),
            narrowing: policies,
            // The tenant's part of the operator's floor (the server's own applies to all).
            floor: self.principals.tenant(&caller.principal.tenant).floor,
            inputs: req.inputs,
            execution_control: None,
            tenant: caller.principal.tenant.clone(),
            user: caller.principal.user.clone(),
            // A caller does not start a browser on the server.
            lane: warrant_app::Lane::Reference,
        };
        // A fleet's server only queues the run: its providers are started by the worker.
        let prepared = if self.runner.is_queueing() {
            warrant_app::Prepared::to_queue(&self.deciders, spec, &spec_path, options).await
        } else {
            warrant_app::Prepared::new(&self.deciders, spec, &spec_path, options).await
        };
        Ok(prepared.map_err(|e| match catalog {
            Some(c) => c.hide(e),
            None => e,
        })?)
    }
}

/// `POST /v1/runs`.
pub async fn start_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    headers: HeaderMap,
    Body(req): Body<StartRun>,
) -> Result<Response, Problem> {
    // A runner starts the operator's specs; an author its own, over what the operator
    // registered.
    if req.spec.is_some() {
        caller.principal.require(Role::Author).map_err(|_| {
            Problem::forbidden(format!(
                "`{}` may not start a spec of its own (an inline `spec`): that needs the \
                 `author` role (a `runner` starts the operator's specs, `spec_path`)",
                caller.principal.user
            ))
        })?;
    } else {
        caller.principal.require(Role::Runner)?;
    }
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => {
            let k = v
                .to_str()
                .ok()
                .filter(|k| !k.is_empty() && k.len() <= IDEMPOTENCY_KEY_MAX)
                .ok_or_else(|| {
                    Problem::bad_request(format!(
                        "`Idempotency-Key` must be 1 to {IDEMPOTENCY_KEY_MAX} visible characters"
                    ))
                })?;
            Some((caller.principal.tenant.clone(), k.to_owned()))
        }
    };
    let digest = warrant_core::canon::digest(&serde_json::to_value(&req).unwrap_or_default());
    let Some((tenant, key)) = key else {
        let run = shared.start_now(&caller, req).await?;
        return shared.created(&caller, run).await;
    };
    // The keys are kept in the store, so a restarted server, or another server of a fleet,
    // finds them. The run's id is chosen and kept with the key BEFORE the run starts:
    //
    // - One start per key at a time in this process: the lock is held from the look-up to
    //   the run's first event.
    // - Between processes the store decides: `idempotency_put` keeps the first record of a
    //   key and tells every later one (another server in the same moment) that record, so all
    //   of them name one run id.
    // - Whoever finds a record whose run has no log yet (its starter is still starting it, or
    //   failed or died before its first event) starts the run itself under that id. The run's
    //   first append (`run_started` at sequence 0) succeeds for one process only; the others'
    //   engines stop there, before anything else is recorded or any provider is called, and
    //   answer with the run that started. So a key never leaves two live runs, and a start
    //   that failed is taken up by the next retry of the same body rather than leaving the key
    //   stuck on a run that never was.
    //
    // A key stays bound to its first body until it expires (`IDEMPOTENCY_TTL_MS`), also when
    // that request's start failed: the same body retried starts the run, another body is 409.
    let _guard = shared.starting.lock().await;
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    let keys = shared.app.keys();
    let store_problem = |e: warrant_core::ports::StoreError| {
        Problem::internal(format!(
            "the store could not look up or keep the `Idempotency-Key`: {e}"
        ))
    };
    let found = keys
        .idempotency_get(&tenant, &key, now)
        .await
        .map_err(store_problem)?;
    let mut run = None;
    if let Some(held) = found {
        if let Some(answer) = shared.kept(&held, &digest).await? {
            return Ok(answer);
        }
        run = Some(held.run_id);
    }
    // A repeated request whose run started was answered above, whatever the tenant's quota:
    // it starts nothing. Checked and prepared before the key is kept: a request refused (over
    // quota, invalid) keeps no key.
    shared.within_quota(&caller.principal.tenant).await?;
    let prepared = shared.prepare(&caller, req).await?;
    let run = match run {
        Some(run) => run,
        None => {
            let mine = shared.runner.new_run_id();
            let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
            let held = keys
                .idempotency_put(
                    IdempotencyRecord {
                        tenant: tenant.clone(),
                        key: key.clone(),
                        digest: digest.clone(),
                        run_id: mine.clone(),
                        created_at_ms: now,
                        expires_at_ms: now.saturating_add(IDEMPOTENCY_TTL_MS),
                    },
                    now,
                )
                .await
                .map_err(store_problem)?;
            if held.run_id != mine
                && let Some(answer) = shared.kept(&held, &digest).await?
            {
                return Ok(answer);
            }
            warrant_fault::hit(warrant_fault::FaultPoint::AfterIdempotencyKey);
            held.run_id
        }
    };
    match shared.runner.start(prepared, run.clone()).await {
        Ok(run) => shared.created(&caller, run).await,
        // Another process's start of this run appended its first event first: it is theirs.
        Err(problem) => match shared.app.runs_index().summary(&run).await {
            Ok(Some(_)) => shared.same_run(&run).await,
            _ => Err(problem.into()),
        },
    }
}

impl Shared {
    /// The answer to a request whose `Idempotency-Key` is held by `held`: 409 for another
    /// body, 200 with the run once it has started; `None` while the run has no log yet.
    async fn kept(
        &self,
        held: &IdempotencyRecord,
        digest: &str,
    ) -> Result<Option<Response>, Problem> {
        if held.digest != digest {
            return Err(Problem::conflict(
                "idempotency-key-reused",
                "this `Idempotency-Key` was used with another body",
            ));
        }
        let started = self
            .app
            .runs_index()
            .summary(&held.run_id)
            .await
            .map_err(warrant_app::AppError::from)?;
        match started {
            Some(_) => self.same_run(&held.run_id).await.map(Some),
            None => Ok(None),
        }
    }

    /// 200 with `run`: a repeated request's answer.
    async fn same_run(&self, run: &RunId) -> Result<Response, Problem> {
        let status = self.status_of(run).await?;
        Ok((
            StatusCode::OK,
            Json(RunRef {
                run_id: run.0.clone(),
                status,
            }),
        )
            .into_response())
    }

    /// Starts a run of `req` for `caller` (within its tenant's quota), with no idempotency
    /// key: the API's start without one, and the console's form.
    pub(crate) async fn start_now(&self, caller: &Caller, req: StartRun) -> Result<RunId, Problem> {
        self.within_quota(&caller.principal.tenant).await?;
        let prepared = self.prepare(caller, req).await?;
        let run = self
            .runner
            .start(prepared, self.runner.new_run_id())
            .await?;
        self.app.knows_tenant(&run, &caller.principal.tenant);
        Ok(run)
    }

    /// 201 with `run`, just started for `caller`, and where it is.
    async fn created(&self, caller: &Caller, run: RunId) -> Result<Response, Problem> {
        self.app.knows_tenant(&run, &caller.principal.tenant);
        let status = self.status_of(&run).await?;
        let mut response = (
            StatusCode::CREATED,
            Json(RunRef {
                run_id: run.0.clone(),
                status,
            }),
        )
            .into_response();
        if let Ok(v) = format!("/v1/runs/{run}").parse() {
            response.headers_mut().insert(header::LOCATION, v);
        }
        Ok(response)
    }
}

impl Shared {
    /// `Ok` when `tenant` may start another run now; else 429, naming the quota it reached.
    pub async fn within_quota(&self, tenant: &str) -> Result<(), Problem> {
        let Some(quota) = self.principals.tenant(tenant).quota else {
            return Ok(());
        };
        let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
        if quota.runs_held.is_some() && self.runner.is_queueing() {
            // Workers drive the runs: which of them have ended is the store's to say.
            let held = self.live_runs_of(tenant).await?;
            self.runner.meter.set_held(tenant, held);
        }
        if (quota.calls.is_some() || quota.tokens.is_some()) && self.runner.is_queueing() {
            // And what they spent.
            let since = now.saturating_sub(warrant_app::Meter::window_of(Some(&quota)));
            if let Some((calls, tokens)) = self
                .app
                .runs_index()
                .tenant_spend(tenant, since)
                .await
                .map_err(warrant_app::AppError::from)?
            {
                self.runner.meter.set_spend(tenant, now, calls, tokens);
            }
        }
        self.runner
            .meter
            .may_start(tenant, &quota, now)
            .map_err(|e| Problem::too_many(&e))
    }

    /// The runs of `tenant` that have not ended, as the store says.
    async fn live_runs_of(
        &self,
        tenant: &str,
    ) -> Result<std::collections::HashSet<RunId>, Problem> {
        let mut out = std::collections::HashSet::new();
        for status in RunStatus::LIVE_STORED {
            let page = self
                .app
                .runs_index()
                .runs(RunQuery {
                    status: Some(status),
                    ..RunQuery::default()
                })
                .await
                .map_err(warrant_app::AppError::from)?;
            for r in page.runs {
                if self.tenant_of(&r.run_id).await?.as_deref() == Some(tenant) {
                    out.insert(r.run_id);
                }
            }
        }
        Ok(out)
    }

    async fn status_of(&self, run: &RunId) -> Result<RunStatus, Problem> {
        Ok(self.app.shown_status(run).await?)
    }
}

/// `GET /v1/runs` filters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    /// `running`, `interrupted`, `waiting`, `ready` or an outcome.
    pub status: Option<String>,
    /// An outcome (`attained`, `not_attained`, `failed`, `cancelled`, `exhausted`).
    pub outcome: Option<String>,
    /// A spec id.
    pub spec: Option<String>,
    /// Runs started at or after this time (ms since the epoch).
    pub since: Option<u64>,
    /// Most runs on the page (default 50, at most 500).
    pub limit: Option<usize>,
    /// The previous page's `next`.
    pub cursor: Option<String>,
}

/// One page of runs.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunsPage {
    /// The runs, newest first.
    pub runs: Vec<warrant_core::ports::RunSummary>,
    /// Pass as `cursor` for the next page; absent on the last.
    pub next: Option<String>,
}

/// How the API document describes an event: its envelope (sequence, time, type) typed, and
/// the type's own fields as an open object. A client generator maps it; the union of every
/// type's fields (`warrant schema events`) is too wide for generators to map.
pub struct EventEnvelope;

impl schemars::JsonSchema for EventEnvelope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Event".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "One record of a run's log (`warrant.events/1`): its sequence number, time and type, and the fields of that type (`warrant schema events` has them all).",
            "properties": {
                "seq": {"type": "integer", "minimum": 1, "description": "Gapless per-run sequence, from 1."},
                "at_ms": {"type": "integer", "minimum": 0, "description": "Milliseconds since the Unix epoch."},
                "type": {"type": "string", "enum": warrant_core::event::EVENT_TYPES, "description": "What happened."},
            },
            "required": ["seq", "at_ms", "type"],
            "additionalProperties": {},
        })
    }
}

fn cursor_text(c: &RunCursor) -> String {
    format!("{}.{}", c.started_at_ms, c.run_id)
}

fn parse_cursor(text: &str) -> Result<RunCursor, Problem> {
    text.split_once('.')
        .and_then(|(ms, id)| {
            Some(RunCursor {
                started_at_ms: ms.parse().ok()?,
                run_id: RunId(id.to_owned()),
            })
        })
        .ok_or_else(|| Problem::bad_request(format!("`cursor` `{text}` is not one this API gave")))
}

/// `GET /v1/runs`.
pub async fn list_runs(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    query: Result<Query<RunsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RunsPage>, Problem> {
    let Query(q) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    Ok(Json(shared.runs_page(&caller, q).await?))
}

impl Shared {
    /// A page of the caller's tenant's runs.
    pub async fn runs_page(&self, caller: &Caller, q: RunsQuery) -> Result<RunsPage, Problem> {
        let limit = q.limit.unwrap_or(50).clamp(1, RUNS_PAGE_MAX);
        if q.status.is_some() && q.outcome.is_some() {
            return Err(Problem::bad_request("give `status` or `outcome`, not both"));
        }
        let status = q
            .status
            .or(q.outcome)
            .map(|s| s.parse::<RunStatus>())
            .transpose()
            .map_err(|e| Problem::invalid(e.to_string()))?;
        let mut query = RunQuery {
            status,
            spec_id: q.spec,
            since_ms: q.since,
            after: q.cursor.as_deref().map(parse_cursor).transpose()?,
            limit,
            ..RunQuery::default()
        };
        let mut runs = Vec::new();
        loop {
            let page = self.app.runs(query.clone()).await?;
            let mut last = None;
            for r in page.runs {
                last = Some(RunCursor {
                    started_at_ms: r.started_at_ms,
                    run_id: r.run_id.clone(),
                });
                if self.tenant_of(&r.run_id).await?.as_deref() == Some(&caller.principal.tenant) {
                    runs.push(r);
                    if runs.len() == limit {
                        break;
                    }
                }
            }
            let more = page.next.is_some() || runs.len() == limit;
            match (more, last) {
                (true, Some(c)) if runs.len() == limit => {
                    return Ok(RunsPage {
                        runs,
                        next: Some(cursor_text(&c)),
                    });
                }
                (true, Some(c)) => query.after = Some(c),
                _ => return Ok(RunsPage { runs, next: None }),
            }
        }
    }
}

/// `GET /v1/runs/{id}`.
pub async fn get_run(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<warrant_app::RunView>, Problem> {
    let run = shared.visible(&caller, &id).await?;
    Ok(Json(shared.app.show(&run).await?))
}

/// `GET /v1/runs/{id}/report`.
pub async fn get_report(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<warrant_core::report::RunReport>, Problem> {
    let run = shared.visible(&caller, &id).await?;
    Ok(Json(shared.app.report(&run).await?))
}

/// `GET /v1/runs/{id}/events` parameters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// The first sequence number wanted (default 1).
    pub from: Option<u64>,
    /// Most events on a JSON page (default and most 1000).
    pub limit: Option<usize>,
}

/// One page of events.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct EventsPage {
    /// The events, in order.
    #[schemars(with = "Vec<EventEnvelope>")]
    pub events: Vec<Arc<warrant_core::Event>>,
    /// Pass as `from` for what follows (also when the run is still going).
    pub next: u64,
    /// Whether the run's last event is on this page or an earlier one.
    pub finished: bool,
}

/// `GET /v1/runs/{id}/events`: a JSON page, or with `Accept: text/event-stream` a stream
/// that resumes after `Last-Event-ID` (or from `?from=`), each event's sequence number its
/// id, with heartbeats, closing after the run's last event.
pub async fn events(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, Problem> {
    let Query(q) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    let run = shared.visible(&caller, &id).await?;
    let stream = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if stream {
        let after = match headers.get("last-event-id") {
            Some(v) => Some(
                v.to_str()
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or_else(|| {
                        Problem::bad_request("`Last-Event-ID` must be a sequence number")
                    })?,
            ),
            None => None,
        };
        let from = after
            .map_or(q.from.unwrap_or(1), |s| s.saturating_add(1))
            .max(1);
        return Ok(event_stream(&shared, &run, from).into_response());
    }
    let from = q.from.unwrap_or(1).max(1);
    let limit = q.limit.unwrap_or(EVENTS_PAGE_MAX).clamp(1, EVENTS_PAGE_MAX);
    let mut stored = shared
        .app
        .log_reader()
        .read(&run, from)
        .await
        .map_err(warrant_app::AppError::from)?;
    // Read whole, the page ends the log: finished when that end is the run's last event (or,
    // asked past it, when the run has ended).
    let finished = stored.len() <= limit
        && match stored.last() {
            Some(e) => matches!(e.event.kind, EventKind::RunFinished { .. }),
            None => !shared.status_of(&run).await?.is_live(),
        };
    stored.truncate(limit);
    let next = stored
        .last()
        .map_or(from, |e| e.event.seq.saturating_add(1));
    Ok(Json(EventsPage {
        events: stored.into_iter().map(|s| s.event).collect(),
        next,
        finished,
    })
    .into_response())
}

/// The SSE stream of `run` from `from`: each event once, in order, until the last.
fn event_stream(
    shared: &Shared,
    run: &RunId,
    from: u64,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>> + use<>> {
    let feed = shared.app.log_reader().subscribe(run, from);
    let counters = shared.runner.counters.clone();
    let stream = futures_util::stream::unfold(Some(feed), move |feed| {
        let counters = counters.clone();
        async move {
            let mut feed = feed?;
            match feed.next().await {
                Ok(Some(stored)) => {
                    let e = &stored.event;
                    let data = serde_json::to_string(&**e).unwrap_or_default();
                    // One kind of SSE message: the event's own `type` says what it is.
                    let sse = SseEvent::default().id(e.seq.to_string()).data(data);
                    if let Some(d) = feed.since_commit() {
                        counters.delivery.record(d);
                    }
                    Some((Ok(sse), Some(feed)))
                }
                Ok(None) => None,
                Err(e) => Some((
                    Ok(SseEvent::default()
                        .event("error")
                        .data(json!({"detail": e.to_string()}).to_string())),
                    None,
                )),
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// `POST /v1/runs/{id}/cancel` body.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// `POST /v1/runs/{id}/cancel`.
pub async fn cancel(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let run = shared.visible(&caller, &id).await?;
    caller.principal.require(Role::Operator)?;
    // The body is optional: none, or `{"reason": ...}`.
    let reason = if body.iter().all(u8::is_ascii_whitespace) {
        String::new()
    } else {
        serde_json::from_slice::<CancelBody>(&body)
            .map_err(|e| Problem::bad_request(format!("the body: {e}")))?
            .reason
    };
    shared.cancel_run(&caller, &run, &reason).await
}

impl Shared {
    /// Cancels `run`: a run held here is told at once; one no process drives is ended
    /// through re-entry; one another process drives ends at its next check.
    pub async fn cancel_run(
        &self,
        caller: &Caller,
        run: &RunId,
        reason: &str,
    ) -> Result<Response, Problem> {
        let done = self.cancel_inner(caller, run, reason).await;
        log_action(caller, "cancel", run, reason, done.as_ref().map(|_| ()));
        done
    }

    async fn cancel_inner(
        &self,
        caller: &Caller,
        run: &RunId,
        reason: &str,
    ) -> Result<Response, Problem> {
        let reason = if reason.is_empty() {
            "cancelled through the API"
        } else {
            reason
        };
        let by = caller.principal.by();
        let held = self.runner.holds(run);
        if held {
            self.app.ask_to_cancel(run, &by, reason).await?;
        }
        // A run let go between the look and the wake is cancelled as one nobody holds.
        let status = if held && self.runner.wake(run) {
            self.runner.released(run, CANCEL_WAIT).await;
            self.status_of(run).await?
        } else {
            match self.app.cancel(run, &by, reason, CANCEL_WAIT).await? {
                warrant_app::Cancelled::AlreadyEnded(s) => {
                    return Err(Problem::conflict(
                        "run-ended",
                        format!("run `{run}` had ended already: {s}"),
                    ));
                }
                warrant_app::Cancelled::Cancelled => RunStatus::Cancelled,
                warrant_app::Cancelled::EndedFirst(s) => s,
                warrant_app::Cancelled::Pending { .. } => RunStatus::Running,
            }
        };
        let code = if status == RunStatus::Cancelled {
            StatusCode::OK
        } else {
            StatusCode::ACCEPTED
        };
        Ok((
            code,
            Json(RunRef {
                run_id: run.0.clone(),
                status,
            }),
        )
            .into_response())
    }
}

/// `POST /v1/runs/{id}/resume`: re-enters a run no process drives.
pub async fn resume(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, Problem> {
    let run = shared.visible(&caller, &id).await?;
    caller.principal.require(Role::Operator)?;
    shared.resume_run(&caller, &run).await
}

impl Shared {
    /// Re-enters `run` here for `caller` (or wakes it when held here).
    pub async fn resume_run(&self, caller: &Caller, run: &RunId) -> Result<Response, Problem> {
        let done = self.resume_inner(caller, run).await;
        log_action(caller, "resume", run, "", done.as_ref().map(|_| ()));
        done
    }

    async fn resume_inner(&self, caller: &Caller, run: &RunId) -> Result<Response, Problem> {
        let status = self.status_of(run).await?;
        if !status.is_live() {
            return Err(Problem::conflict(
                "run-ended",
                format!("run `{run}` has ended: {status}"),
            ));
        }
        if status == RunStatus::Running && !self.runner.holds(run) {
            return Err(Problem::conflict(
                "run-driven",
                format!("run `{run}` is driven by another process"),
            ));
        }
        self.runner
            .reenter(run, Some(caller.principal.by()))
            .await?;
        Ok((
            StatusCode::ACCEPTED,
            Json(RunRef {
                run_id: run.0.clone(),
                status,
            }),
        )
            .into_response())
    }
}

/// `POST /v1/runs/{id}/calls/{call}/reconcile` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileBody {
    /// Whether the call's effect happened.
    pub happened: bool,
    /// It did not happen: send it again (as a new call, ruled on again).
    #[serde(default)]
    pub resend: bool,
    /// What was found out, and how.
    #[serde(default)]
    pub note: String,
}

/// `POST /v1/runs/{id}/calls/{call}/reconcile`.
pub async fn reconcile(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath((id, call)): UrlPath<(String, String)>,
    Body(body): Body<ReconcileBody>,
) -> Result<Response, Problem> {
    let run = shared.visible(&caller, &id).await?;
    let done = shared.reconcile_call(&caller, &run, &call, &body).await?;
    Ok(Json(done).into_response())
}

impl Shared {
    /// Settles `run`'s call `call`, in doubt, with what `caller` (an operator) found out; the
    /// run goes on here when no process holds it.
    pub async fn reconcile_call(
        &self,
        caller: &Caller,
        run: &RunId,
        call: &str,
        body: &ReconcileBody,
    ) -> Result<RunRef, Problem> {
        let done = self.reconcile_inner(caller, run, call, body).await;
        let what = format!("{call}: {}", reconciled(body.happened, body.resend));
        log_action(caller, "reconcile", run, &what, done.as_ref().map(|_| ()));
        done
    }

    async fn reconcile_inner(
        &self,
        caller: &Caller,
        run: &RunId,
        call: &str,
        body: &ReconcileBody,
    ) -> Result<RunRef, Problem> {
        caller.principal.require(Role::Operator)?;
        let call: CallId = call
            .parse()
            .map_err(|_| Problem::not_found(format!("no call `{call}` in run `{run}`")))?;
        if body.happened && body.resend {
            return Err(Problem::invalid(
                "`resend` is for a call that did not happen",
            ));
        }
        self.app
            .reconcile(
                run,
                call,
                warrant_app::Reconciled {
                    happened: body.happened,
                    resend: body.resend,
                },
                &caller.principal.by(),
                &body.note,
            )
            .await?;
        // Wakes the task holding it, or re-enters it.
        let _ = self.runner.reenter(run, None).await;
        let status = self.status_of(run).await?;
        Ok(RunRef {
            run_id: run.0.clone(),
            status,
        })
    }
}

/// `GET /v1/approvals` parameters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsQuery {
    /// Every request of this run (answered or not); else the pending ones of every run.
    pub run: Option<String>,
}

/// `GET /v1/approvals`.
pub async fn approvals(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    query: Result<Query<ApprovalsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<ApprovalRow>>, Problem> {
    let Query(q) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    Ok(Json(shared.approval_rows(&caller, q.run.as_deref()).await?))
}

impl Shared {
    /// Approval requests the caller's tenant may see.
    pub async fn approval_rows(
        &self,
        caller: &Caller,
        run: Option<&str>,
    ) -> Result<Vec<ApprovalRow>, Problem> {
        let run = match run {
            Some(id) => Some(self.visible(caller, id).await?),
            None => None,
        };
        let rows = self.app.approvals(run.as_ref()).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            if self.tenant_of(&r.run).await?.as_deref() == Some(&caller.principal.tenant) {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The request `request`, when the caller's tenant may see it.
    pub(crate) async fn request(
        &self,
        caller: &Caller,
        request: &str,
    ) -> Result<ApprovalRow, Problem> {
        let not_found = || Problem::not_found(format!("no approval request `{request}`"));
        let run = RunId::of_request(request).ok_or_else(not_found)?;
        let run = self
            .visible(caller, &run.0)
            .await
            .map_err(|_| not_found())?;
        self.app
            .approvals(Some(&run))
            .await?
            .into_iter()
            .find(|a| a.request == request)
            .ok_or_else(not_found)
    }
}

/// `POST /v1/approvals/{id}/approve` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// The digest of the arguments the approver was shown (`args_digest`): another is 409.
    pub args_digest: String,
    /// `once` (this call) or `run` (this action for the rest of the run).
    #[serde(default)]
    pub scope: Option<String>,
    /// Until when the approval holds (ms since the epoch).
    #[serde(default)]
    pub until_ms: Option<u64>,
    /// Approve these arguments instead of the ones shown (scope `once`): the call runs with
    /// them, validated and ruled on again, and the decider is shown both.
    #[serde(default)]
    pub args: Option<Value>,
}

/// `POST /v1/approvals/{id}/deny` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyBody {
    /// The digest of the arguments the person was shown.
    pub args_digest: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// What became of an answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct AnswerResult {
    /// The request.
    pub request: String,
    /// `approved` or `denied`.
    #[schemars(with = "String")]
    pub status: ApprovalState,
    /// `false` when the same answer was recorded before (nothing changed).
    pub recorded: bool,
}

/// `POST /v1/approvals/{id}/approve`.
pub async fn approve(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
    Body(body): Body<ApproveBody>,
) -> Result<Json<AnswerResult>, Problem> {
    let scope = match body.scope.as_deref() {
        None | Some("once") => ApprovalScope::Once,
        Some("run") => ApprovalScope::Run,
        Some("plan") => ApprovalScope::Plan,
        Some(other) => {
            return Err(Problem::invalid(format!(
                "`scope` `{other}`: `once`, `run` or `plan`"
            )));
        }
    };
    let answer = Answer::Approve {
        scope,
        until_ms: body.until_ms,
        edited: body.args.map(Arc::new),
    };
    Ok(Json(
        shared
            .answer(&caller, &id, &body.args_digest, answer)
            .await?,
    ))
}

/// `POST /v1/approvals/{id}/deny`.
pub async fn deny(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
    Body(body): Body<DenyBody>,
) -> Result<Json<AnswerResult>, Problem> {
    let reason = if body.reason.is_empty() {
        "denied through the API".to_owned()
    } else {
        body.reason
    };
    Ok(Json(
        shared
            .answer(&caller, &id, &body.args_digest, Answer::Deny { reason })
            .await?,
    ))
}

impl Shared {
    /// Records `answer` to `request` for `caller`, who was shown arguments with `digest`.
    pub async fn answer(
        &self,
        caller: &Caller,
        request: &str,
        digest: &str,
        answer: Answer,
    ) -> Result<AnswerResult, Problem> {
        let action = match &answer {
            Answer::Approve {
                edited: Some(_), ..
            } => "approve with edits",
            Answer::Approve { .. } => "approve",
            Answer::Deny { .. } => "deny",
        };
        let run = RunId::of_request(request).unwrap_or_else(|| RunId(request.to_owned()));
        let done = self.answer_inner(caller, request, digest, answer).await;
        log_action(caller, action, &run, request, done.as_ref().map(|_| ()));
        done
    }

    async fn answer_inner(
        &self,
        caller: &Caller,
        request: &str,
        digest: &str,
        answer: Answer,
    ) -> Result<AnswerResult, Problem> {
        let row = self.request(caller, request).await?;
        caller.principal.require(Role::Approver)?;
        if row.args_digest != digest {
            return Err(Problem::conflict(
                "digest-mismatch",
                format!(
                    "`{request}` asks about arguments with digest {}, not {digest}: look at the request again",
                    row.args_digest
                ),
            ));
        }
        let status = match &answer {
            Answer::Approve { .. } => ApprovalState::Approved,
            Answer::Deny { .. } => ApprovalState::Denied,
        };
        let answered = self
            .app
            .answer(request, answer, &caller.principal.by())
            .await?;
        // Wakes the task holding it, or re-enters it.
        if let Err(p) = self.runner.reenter(&row.run, None).await {
            tracing::warn!(run = %row.run, problem = %p, "not re-entering");
        }
        Ok(AnswerResult {
            request: request.to_owned(),
            status,
            recorded: answered == warrant_engine::Answered::Recorded,
        })
    }
}

/// `POST /v1/questions/{id}/answer` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    /// The answer: JSON that fits the question's schema.
    pub answer: Value,
}

/// What became of an answer to a question.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct QuestionAnswer {
    /// The question.
    pub question: String,
    /// `false` when the same answer was recorded before (nothing changed).
    pub recorded: bool,
}

/// `GET /v1/questions`: the questions the tenant's runs asked that wait for an answer, oldest
/// first.
pub async fn questions(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
) -> Result<Json<Vec<warrant_app::PendingQuestion>>, Problem> {
    Ok(Json(
        shared
            .app
            .pending_questions(None)
            .await?
            .into_iter()
            .filter(|q| q.tenant == caller.principal.tenant)
            .collect(),
    ))
}

/// `POST /v1/questions/{id}/answer`: answer a question, as the person the run acts for or an
/// approver of its tenant. An answer that does not fit the question's schema is 422, with
/// the schema's reasons.
pub async fn answer_question(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    UrlPath(id): UrlPath<String>,
    Body(body): Body<AnswerBody>,
) -> Result<Json<QuestionAnswer>, Problem> {
    Ok(Json(
        shared
            .answer_question(&caller, &id, |_| Ok(body.answer))
            .await?
            .0,
    ))
}

impl Shared {
    /// Records `caller`'s answer to question `id` (the person the run acts for, or an
    /// approver of its tenant), made by `answer` from the question's schema, and carries the
    /// run on: what became of it, and the run.
    pub(crate) async fn answer_question(
        &self,
        caller: &Caller,
        id: &str,
        answer: impl FnOnce(&Value) -> Result<Value, Problem>,
    ) -> Result<(QuestionAnswer, RunId), Problem> {
        let asked = self.app.question(id).await?;
        // Another tenant's question is not there.
        if asked.tenant != caller.principal.tenant {
            return Err(warrant_app::AppError::NotFound(format!("no question `{id}`")).into());
        }
        if asked.user != caller.principal.user {
            caller.principal.require(Role::Approver)?;
        }
        let answer = answer(&asked.question.schema)?;
        let answered = self
            .app
            .answer_question(id, Arc::new(answer), &caller.principal.by())
            .await
            .map_err(Problem::from);
        log_action(
            caller,
            "answer",
            &asked.run_id,
            id,
            answered.as_ref().map(|_| ()),
        );
        let answered = answered?;
        let run = asked.run_id;
        // Wakes the task holding it, or re-enters it.
        if let Err(p) = self.runner.reenter(&run, None).await {
            tracing::warn!(run = %run, problem = %p, "not re-entering");
        }
        let said = QuestionAnswer {
            question: id.to_owned(),
            recorded: answered == warrant_engine::Answered::Recorded,
        };
        Ok((said, run))
    }
}

/// `GET /v1/audit` parameters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only actions in runs started at or after this time (ms since the epoch).
    pub since: Option<u64>,
    /// Most actions listed (default 100, at most 1000), newest runs first.
    pub limit: Option<usize>,
}

/// One control action, as the run's log records it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct AuditEntry {
    /// The run.
    pub run_id: String,
    /// The event that records it.
    pub seq: u64,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// `start`, `approve`, `deny`, `reconcile` or `cancel`.
    pub action: &'static str,
    /// Who: `tenant/user` for the server's principals, the operator's name for the CLI's.
    pub by: String,
    /// What it was about (a request, a call, a reason).
    pub detail: String,
}

/// `GET /v1/audit`: the tenant's control actions, read from its runs' logs (the log is the
/// audit trail).
pub async fn audit(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<AuditEntry>>, Problem> {
    let Query(q) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = shared
            .runs_page(
                &caller,
                RunsQuery {
                    since: q.since,
                    limit: Some(RUNS_PAGE_MAX),
                    cursor: cursor.take(),
                    ..RunsQuery::default()
                },
            )
            .await?;
        for r in &page.runs {
            for e in shared.app.log(&r.run_id).await? {
                let entry = |action, by: String, detail: String| AuditEntry {
                    run_id: r.run_id.0.clone(),
                    seq: e.seq,
                    at_ms: e.at_ms,
                    action,
                    by,
                    detail,
                };
                let found = match &e.kind {
                    EventKind::RunStarted {
                        principal, spec, ..
                    } => Some(entry(
                        "start",
                        principal.as_ref().map_or_else(
                            || "local/local".to_owned(),
                            |p| format!("{}/{}", p.tenant, p.user),
                        ),
                        format!("spec {}", spec.id),
                    )),
                    EventKind::ApprovalResolved {
                        request,
                        approved,
                        by,
                        reason,
                        ..
                    } => Some(entry(
                        if *approved { "approve" } else { "deny" },
                        by.clone(),
                        if reason.is_empty() {
                            request.clone()
                        } else {
                            format!("{request}: {reason}")
                        },
                    )),
                    EventKind::CallReconciled {
                        call, happened, by, ..
                    } => Some(entry(
                        "reconcile",
                        by.clone(),
                        format!(
                            "{call} {}",
                            if *happened {
                                "happened"
                            } else {
                                "did not happen"
                            }
                        ),
                    )),
                    EventKind::RunFinished {
                        outcome: warrant_core::Outcome::Cancelled { by, reason },
                    } => Some(entry("cancel", by.clone(), reason.clone())),
                    EventKind::RunResumed {
                        by: Some(by),
                        in_flight,
                        ..
                    } => Some(entry(
                        "resume",
                        by.clone(),
                        in_flight.map_or_else(String::new, |c| format!("{c} was in flight")),
                    )),
                    EventKind::RunTakenUp { by: Some(by), .. } => {
                        Some(entry("resume", by.clone(), String::new()))
                    }
                    _ => None,
                };
                if let Some(a) = found {
                    out.push(a);
                    if out.len() == limit {
                        return Ok(Json(out));
                    }
                }
            }
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(Json(out)),
        }
    }
}

/// What an operator said of a call in doubt, in words: the same in the logs and the console.
pub(crate) fn reconciled(happened: bool, resend: bool) -> &'static str {
    match (happened, resend) {
        (true, _) => "happened",
        (false, true) => "did not happen: send it again",
        (false, false) => "did not happen",
    }
}

/// Logs a control action at `info`, one line: who, what, on which run and what it was about,
/// and how it came out (a refusal with its status and problem type).
fn log_action(caller: &Caller, action: &str, run: &RunId, about: &str, done: Result<(), &Problem>) {
    let by = caller.principal.by();
    match done {
        Ok(()) => tracing::info!(%by, action, %run, about, "control action done"),
        Err(p) => tracing::info!(
            %by,
            action,
            %run,
            about,
            status = p.status,
            problem = %p.kind,
            "control action refused"
        ),
    }
}

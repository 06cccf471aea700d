//! Schedules at work: the ticks of a cron expression in a time zone ([`ticks_between`]), and
//! the [`Scheduler`] every long-lived front door runs (`warrant serve`, `warrant worker`): once
//! a second it looks at the store's schedules and starts each due tick's run of the catalog
//! spec — exactly once across a fleet, because a tick is claimed in the store
//! (`Schedules::tick_claim`, insert-if-absent) before its run starts, under a run id chosen
//! with the claim. A process that dies between the claim and the run's first event leaves a
//! tick whose run has no log: the next look of any process starts it under that same id (the
//! run's first append succeeds once), so a tick is neither lost nor run twice.

use std::sync::Arc;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use warrant_core::ids::RunId;
use warrant_core::ports::BoxFuture;
use warrant_core::schedule::{CatchUp, Cron, Overlap, Schedule, Tick, TickState, due_ticks};
use warrant_core::status::RunStatus;
use warrant_core::store::Schedules;

use crate::{App, AppError, Prepared, Result, RunOptions};

/// How often a scheduler looks.
pub const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long after its claim a tick's run may still be starting (its claimer alive): past it,
/// a run with no log is started by whoever looks.
pub const START_GRACE_MS: u64 = 30_000;

/// Most ticks computed for one look (a schedule every minute, down for ten weeks).
const TICKS_MAX: usize = 100_000;

/// The time zone `name` names (IANA, from the system's database), or why not.
pub fn time_zone(name: &str) -> std::result::Result<TimeZone, String> {
    TimeZone::get(name).map_err(|e| format!("time zone `{name}`: {e}"))
}

/// A time as a person writes it: RFC 3339 (`2026-12-01T00:00:00Z`, or with an offset) or
/// milliseconds since the epoch.
pub fn parse_time(text: &str) -> std::result::Result<u64, String> {
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    let ts: jiff::Timestamp = text.parse().map_err(|e| {
        format!("`{text}` is neither RFC 3339 (`2026-12-01T00:00:00Z`) nor milliseconds: {e}")
    })?;
    u64::try_from(ts.as_millisecond()).map_err(|_| format!("`{text}` is before 1970"))
}

/// The ticks of `cron` in `tz` after `after_ms` and at or before `upto_ms` (ms since the
/// epoch), oldest first, at most `most`. A local time that a clock change skips runs at the
/// first minute after the gap; one it repeats runs once, at its first occurrence.
pub fn ticks_between(
    cron: &Cron,
    tz: &TimeZone,
    after_ms: u64,
    upto_ms: u64,
    most: usize,
) -> Vec<u64> {
    let mut out = Vec::new();
    let Ok(after) = jiff::Timestamp::from_millisecond(i64::try_from(after_ms).unwrap_or(i64::MAX))
    else {
        return out;
    };
    // The first whole minute after `after`, in local time.
    let local = after.to_zoned(tz.clone()).datetime();
    let Ok(mut at) = local
        .with()
        .second(0)
        .subsec_nanosecond(0)
        .build()
        .and_then(|m| m.checked_add(jiff::Span::new().minutes(1)))
    else {
        return out;
    };
    // Each step moves at least a minute; the bound keeps a look bounded whatever the
    // expression (its days may never come: `0 0 31 2 *`).
    for _ in 0..2_000_000 {
        if out.len() >= most {
            break;
        }
        let step = next_candidate(cron, at);
        match step {
            Step::Skip(next) => at = next,
            Step::Tick => {
                let Ok(zoned) = tz.to_ambiguous_zoned(at).compatible() else {
                    break;
                };
                let ms = u64::try_from(zoned.timestamp().as_millisecond()).unwrap_or(0);
                if ms > upto_ms {
                    break;
                }
                if ms > after_ms && out.last().is_none_or(|l| ms > *l) {
                    out.push(ms);
                }
                match at.checked_add(jiff::Span::new().minutes(1)) {
                    Ok(n) => at = n,
                    Err(_) => break,
                }
            }
            Step::End => break,
        }
        // Past the bound in local time by more than a day: nothing later can be due.
        if let Ok(z) = tz.to_ambiguous_zoned(at).compatible()
            && u64::try_from(z.timestamp().as_millisecond()).unwrap_or(0)
                > upto_ms.saturating_add(86_400_000)
        {
            break;
        }
    }
    out
}

enum Step {
    /// `at` is a tick.
    Tick,
    /// The next local time that may be one.
    Skip(DateTime),
    /// Past the calendar.
    End,
}

fn next_candidate(cron: &Cron, at: DateTime) -> Step {
    let month = u8::try_from(at.month()).unwrap_or(0);
    let day = u8::try_from(at.day()).unwrap_or(0);
    let weekday = u8::try_from(at.weekday().to_sunday_zero_offset()).unwrap_or(0);
    let hour = u8::try_from(at.hour()).unwrap_or(0);
    let minute = u8::try_from(at.minute()).unwrap_or(0);
    let next = if !cron.month_matches(month) {
        at.first_of_month()
            .with()
            .hour(0)
            .minute(0)
            .build()
            .and_then(|d| d.checked_add(jiff::Span::new().months(1)))
    } else if !cron.day_matches(day, weekday) {
        at.with()
            .hour(0)
            .minute(0)
            .build()
            .and_then(|d| d.checked_add(jiff::Span::new().days(1)))
    } else if !cron.hour_matches(hour) {
        at.with()
            .minute(0)
            .build()
            .and_then(|d| d.checked_add(jiff::Span::new().hours(1)))
    } else if !cron.minute_matches(minute) {
        at.checked_add(jiff::Span::new().minutes(1))
    } else {
        return Step::Tick;
    };
    next.map_or(Step::End, Step::Skip)
}

/// What a scheduler needs of the process it runs in: to start a tick's run under a chosen id,
/// to know where a run stands, and to cancel one.
pub trait Starter: Send + Sync {
    /// Starts the run of `schedule`'s tick at `tick_ms` as `run`: once its first event is
    /// recorded (a run whose first event another process recorded is started already).
    fn start<'a>(
        &'a self,
        schedule: &'a Schedule,
        tick_ms: u64,
        run: RunId,
    ) -> BoxFuture<'a, std::result::Result<(), String>>;
    /// Where `run` stands (`None`: it has no log).
    fn status<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Option<RunStatus>>;
    /// Asks for `run` to be cancelled.
    fn cancel<'a>(&'a self, run: &'a RunId, reason: &'a str) -> BoxFuture<'a, ()>;
    /// A new run id.
    fn new_run_id(&self) -> RunId;
}

/// Looks at the store's schedules and starts their due ticks.
pub struct Scheduler {
    store: Arc<dyn Schedules>,
    starter: Arc<dyn Starter>,
    /// Runs of ticks known to have begun, and known to have ended: neither changes back, so a
    /// look asks where a run stands only until it knows (once a second, a schedule's recent
    /// ticks would otherwise each cost a read of the store).
    known: std::sync::Mutex<Known>,
}

#[derive(Default)]
struct Known {
    begun: std::collections::HashSet<RunId>,
    ended: std::collections::HashSet<RunId>,
}

impl Scheduler {
    /// A scheduler over `store`'s schedules, starting runs with `starter`.
    pub fn new(store: Arc<dyn Schedules>, starter: Arc<dyn Starter>) -> Scheduler {
        Scheduler {
            store,
            starter,
            known: std::sync::Mutex::new(Known::default()),
        }
    }

    /// Where `run` stands, as far as a scheduler needs to know: whether it has begun, and
    /// whether it goes on. Asked of the starter until it has begun and until it has ended.
    async fn standing(&self, run: &RunId) -> (bool, bool) {
        if self.known.lock().is_ok_and(|k| k.ended.contains(run)) {
            return (true, false);
        }
        let status = self.starter.status(run).await;
        if let Ok(mut k) = self.known.lock() {
            match status {
                Some(s) if s.is_live() => {
                    k.begun.insert(run.clone());
                }
                Some(_) => {
                    k.begun.insert(run.clone());
                    k.ended.insert(run.clone());
                }
                None => {}
            }
        }
        (status.is_some(), status.is_some_and(RunStatus::is_live))
    }

    /// Whether `run` is known to have begun (no store read once it is).
    async fn begun(&self, run: &RunId) -> bool {
        if self.known.lock().is_ok_and(|k| k.begun.contains(run)) {
            return true;
        }
        self.standing(run).await.0
    }

    /// Looks every [`LOOK_EVERY`] until `stop` resolves.
    pub async fn run(
        self,
        clock: Arc<dyn warrant_core::ports::Clock>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        loop {
            if let Err(e) = self.look(clock.now_ms()).await {
                tracing::warn!(error = %e, "schedules: a look failed");
            }
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(LOOK_EVERY) => {}
            }
        }
    }

    /// One look at `now_ms`: every schedule's due ticks claimed and started, queued ticks
    /// started once their turn came, and runs whose claimer died before starting them
    /// started. How many runs it started.
    pub async fn look(&self, now_ms: u64) -> Result<usize> {
        let mut started = 0;
        for schedule in self.store.schedules().await? {
            match self.look_at(&schedule, now_ms).await {
                Ok(n) => started += n,
                Err(e) => {
                    tracing::warn!(schedule = %schedule.id, error = %e, "schedules: a schedule's look failed")
                }
            }
        }
        Ok(started)
    }

    async fn look_at(&self, schedule: &Schedule, now_ms: u64) -> Result<usize> {
        let tz = time_zone(&schedule.time_zone).map_err(AppError::Invalid)?;
        let recent = self.store.ticks(Some(&schedule.id), 200).await?;
        let mut started = self.carry_on(schedule, &recent, now_ms).await?;
        if schedule.paused {
            return Ok(started);
        }
        let last = recent.first().map(|t| t.at_ms);
        let after = last.unwrap_or(0).max(schedule.from_ms.saturating_sub(1));
        let ticks = ticks_between(&schedule.cron, &tz, after, now_ms, TICKS_MAX);
        let due = due_ticks(&ticks, last, schedule.catch_up);
        let n = due.len();
        for (i, (at_ms, run)) in due.into_iter().enumerate() {
            // A missed tick that is not run is recorded only when it is the newest (so the
            // next look goes on from it); older ones are passed over.
            if !run && i + 1 < n {
                continue;
            }
            if !run {
                let tick = Tick {
                    schedule: schedule.id.clone(),
                    at_ms,
                    run_id: None,
                    state: TickState::Skipped,
                    note: Some(match schedule.catch_up {
                        CatchUp::None => "missed while no process looked (catch_up: none)".into(),
                        _ => "missed while no process looked".into(),
                    }),
                };
                self.store.tick_claim(tick).await?;
                continue;
            }
            started += self.tick(schedule, at_ms).await?;
        }
        Ok(started)
    }

    /// A due tick: claimed, and its run started as the overlap policy says.
    async fn tick(&self, schedule: &Schedule, at_ms: u64) -> Result<usize> {
        let live = self.live_run(schedule).await?;
        let run = self.starter.new_run_id();
        let (state, note) = match (&live, schedule.overlap) {
            (None, _) => (TickState::Started, None),
            (Some(prev), Overlap::Skip) => (
                TickState::Skipped,
                Some(format!(
                    "run {prev} of an earlier tick has not ended (overlap: skip)"
                )),
            ),
            (Some(prev), Overlap::Queue) => (
                TickState::Queued,
                Some(format!("starts when run {prev} ends (overlap: queue)")),
            ),
            (Some(prev), Overlap::Cancel) => (
                TickState::Started,
                Some(format!("run {prev} was cancelled for it (overlap: cancel)")),
            ),
        };
        let runs = matches!(state, TickState::Started | TickState::Queued);
        let tick = Tick {
            schedule: schedule.id.clone(),
            at_ms,
            run_id: runs.then(|| run.clone()),
            state,
            note,
        };
        // INVARIANT (one run a tick): only the process whose claim wins starts it.
        if !self.store.tick_claim(tick.clone()).await? {
            return Ok(0);
        }
        warrant_fault::hit(warrant_fault::FaultPoint::AfterTickClaim);
        if tick.state != TickState::Started {
            return Ok(0);
        }
        if let (Some(prev), Overlap::Cancel) = (&live, schedule.overlap) {
            let reason = format!(
                "schedule `{}`: superseded by its tick at {at_ms}",
                schedule.id
            );
            self.starter.cancel(prev, &reason).await;
        }
        self.start(schedule, tick).await
    }

    /// Starts `tick`'s run; a start that fails is recorded on the tick.
    async fn start(&self, schedule: &Schedule, mut tick: Tick) -> Result<usize> {
        let Some(run) = tick.run_id.clone() else {
            return Ok(0);
        };
        match self.starter.start(schedule, tick.at_ms, run.clone()).await {
            Ok(()) => Ok(1),
            Err(why) => {
                // Another process's start of this very run got there first: it is started.
                if self.begun(&run).await {
                    return Ok(0);
                }
                tick.state = TickState::Failed;
                tick.note = Some(why);
                self.store.tick_update(&tick).await?;
                Ok(0)
            }
        }
    }

    /// The run of an earlier tick that has not ended, if any.
    async fn live_run(&self, schedule: &Schedule) -> Result<Option<RunId>> {
        for t in self.store.ticks(Some(&schedule.id), 20).await? {
            if t.state != TickState::Started {
                continue;
            }
            let Some(run) = &t.run_id else { continue };
            if self.standing(run).await.1 {
                return Ok(Some(run.clone()));
            }
        }
        Ok(None)
    }

    /// Queued ticks whose turn came, and started ticks whose run never began (their
    /// claimer died): started now.
    async fn carry_on(&self, schedule: &Schedule, recent: &[Tick], now_ms: u64) -> Result<usize> {
        let mut started = 0;
        for t in recent.iter().rev() {
            let Some(run) = &t.run_id else { continue };
            match t.state {
                TickState::Started
                    if now_ms.saturating_sub(t.at_ms) >= START_GRACE_MS
                        && !self.begun(run).await =>
                {
                    started += self.start(schedule, t.clone()).await?;
                }
                TickState::Queued => {
                    // Its turn: no earlier run still going.
                    if self.live_run(schedule).await?.is_some() {
                        break;
                    }
                    let mut next = t.clone();
                    next.state = TickState::Started;
                    next.note = Some("started once the earlier run ended (overlap: queue)".into());
                    self.store.tick_update(&next).await?;
                    started += self.start(schedule, next).await?;
                }
                _ => {}
            }
        }
        Ok(started)
    }
}

/// The starter of a front door: a run of the catalog spec, prepared and started through the
/// process's supervisor (queued for the fleet's workers by a server on PostgreSQL).
pub struct SupervisorStarter {
    app: App,
    runner: Arc<crate::Supervisor>,
}

impl SupervisorStarter {
    /// A starter through `runner`.
    pub fn new(app: App, runner: Arc<crate::Supervisor>) -> SupervisorStarter {
        SupervisorStarter { app, runner }
    }
}

impl Starter for SupervisorStarter {
    fn start<'a>(
        &'a self,
        schedule: &'a Schedule,
        _tick_ms: u64,
        run: RunId,
    ) -> BoxFuture<'a, std::result::Result<(), String>> {
        Box::pin(async move {
            let spec = self
                .app
                .catalog_spec(&schedule.spec_id, schedule.spec_digest.as_deref())
                .await
                .map_err(|e| e.to_string())?;
            let options = RunOptions {
                inputs: schedule.inputs.clone().into_iter().collect(),
                tenant: schedule.tenant.clone(),
                user: schedule.user.clone(),
                ..RunOptions::default()
            };
            let path = std::path::Path::new("catalog");
            let deciders = self.app.deciders();
            let prepared = if self.runner.is_queueing() {
                Prepared::to_queue(deciders, spec, path, options).await
            } else {
                Prepared::new(deciders, spec, path, options).await
            }
            .map_err(|e| e.to_string())?;
            self.runner
                .start(prepared, run)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
    fn status<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Option<RunStatus>> {
        Box::pin(async move {
            self.app
                .runs_index()
                .summary(run)
                .await
                .ok()
                .flatten()
                .map(|s| s.status)
        })
    }
    fn cancel<'a>(&'a self, run: &'a RunId, reason: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = self.app.ask_to_cancel(run, "schedule", reason).await {
                tracing::warn!(run = %run, error = %e, "schedules: cancelling the earlier run failed");
            }
        })
    }
    fn new_run_id(&self) -> RunId {
        self.runner.new_run_id()
    }
}

/// A schedule as a front door shows it: what it starts, when, and how its last tick went.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ScheduleView {
    /// Its name.
    pub id: String,
    /// The cron expression.
    pub cron: String,
    /// Its time zone.
    pub time_zone: String,
    /// The catalog spec each tick starts.
    pub spec_id: String,
    /// Exactly this version of it, if pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_digest: Option<String>,
    /// The inputs each run is started with.
    pub inputs: serde_json::Map<String, serde_json::Value>,
    /// `skip`, `queue` or `cancel`.
    pub overlap: String,
    /// `latest`, `all` or `none`.
    pub catch_up: String,
    /// The tenant its runs act for.
    pub tenant: String,
    /// The user its runs act for.
    pub user: String,
    /// Whether it is paused.
    pub paused: bool,
    /// Its next tick (ms since the epoch), unless paused or none comes within a year.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_tick_ms: Option<u64>,
    /// Its latest tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_tick: Option<Tick>,
}

/// The first tick of `schedule` after `now_ms`, if one comes within a year (none while
/// paused).
pub fn next_tick(schedule: &Schedule, now_ms: u64) -> Option<u64> {
    if schedule.paused {
        return None;
    }
    let tz = time_zone(&schedule.time_zone).ok()?;
    ticks_between(
        &schedule.cron,
        &tz,
        now_ms,
        now_ms.saturating_add(366 * 86_400_000),
        1,
    )
    .first()
    .copied()
}

fn word<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl App {
    /// The schedules (of `tenant` only, if given) as a front door shows them at `now_ms`.
    pub async fn schedule_views(
        &self,
        tenant: Option<&str>,
        now_ms: u64,
    ) -> Result<Vec<ScheduleView>> {
        let mut out = Vec::new();
        for s in self.schedules_index().schedules().await? {
            if tenant.is_some_and(|t| t != s.tenant) {
                continue;
            }
            let last_tick = self
                .schedules_index()
                .ticks(Some(&s.id), 1)
                .await?
                .into_iter()
                .next();
            out.push(ScheduleView {
                next_tick_ms: next_tick(&s, now_ms),
                id: s.id,
                cron: s.cron.to_string(),
                time_zone: s.time_zone,
                spec_id: s.spec_id,
                spec_digest: s.spec_digest,
                inputs: s.inputs,
                overlap: word(&s.overlap),
                catch_up: word(&s.catch_up),
                tenant: s.tenant,
                user: s.user,
                paused: s.paused,
                last_tick,
            });
        }
        Ok(out)
    }

    /// Pauses or resumes schedule `id` (of `tenant` only, if given: another's is not found);
    /// resumed, its ticks count from `now_ms` (those missed while paused are not run).
    /// Whether it changed.
    pub async fn schedule_paused(
        &self,
        id: &str,
        tenant: Option<&str>,
        paused: bool,
        now_ms: u64,
    ) -> Result<bool> {
        let found = self
            .schedules_index()
            .schedules()
            .await?
            .into_iter()
            .find(|s| s.id == id && tenant.is_none_or(|t| t == s.tenant));
        let Some(mut schedule) = found else {
            return Err(AppError::NotFound(format!(
                "no schedule `{}`",
                warrant_core::text::echo(id)
            )));
        };
        if schedule.paused == paused {
            return Ok(false);
        }
        schedule.paused = paused;
        if !paused {
            schedule.from_ms = now_ms;
        }
        self.schedules_index().schedule_put(schedule).await?;
        Ok(true)
    }

    /// The scheduler of a front door whose runs go through `runner`.
    pub fn scheduler(&self, runner: Arc<crate::Supervisor>) -> Scheduler {
        let store: Arc<dyn Schedules> = self.store().clone();
        Scheduler::new(
            store,
            Arc::new(SupervisorStarter::new(self.clone(), runner)),
        )
    }

    /// The store's schedules.
    pub fn schedules_index(&self) -> &dyn Schedules {
        self.store().as_ref()
    }

    /// Checks and keeps a schedule: its time zone known, its spec in the catalog, its inputs
    /// taken by the spec. Whether it is new.
    pub async fn schedule_put(&self, schedule: Schedule) -> Result<bool> {
        time_zone(&schedule.time_zone).map_err(AppError::Invalid)?;
        if schedule.id.is_empty() || schedule.id.chars().any(|c| c.is_control() || c == '/') {
            return Err(AppError::Invalid(
                "a schedule's id must be non-empty, without `/` or control characters".into(),
            ));
        }
        let spec = self
            .catalog_spec(&schedule.spec_id, schedule.spec_digest.as_deref())
            .await?;
        let inputs: std::collections::BTreeMap<String, serde_json::Value> =
            schedule.inputs.clone().into_iter().collect();
        crate::ops::given_inputs(&spec, inputs)?;
        Ok(self.schedules_index().schedule_put(schedule).await?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ms(text: &str) -> u64 {
        let ts: jiff::Timestamp = text.parse().unwrap();
        u64::try_from(ts.as_millisecond()).unwrap()
    }

    #[test]
    fn ticks_follow_the_zones_clock_across_its_changes() {
        let berlin = time_zone("Europe/Berlin").unwrap();
        // 02:30 every day: on the day clocks go forward (29 March 2026) 02:30 does not exist
        // and runs at 03:30 local; on the day they go back (25 October) it happens twice and
        // runs once.
        let cron: Cron = "30 2 * * *".parse().unwrap();
        let spring = ticks_between(
            &cron,
            &berlin,
            ms("2026-03-27T12:00:00Z"),
            ms("2026-03-31T00:00:00Z"),
            10,
        );
        assert_eq!(
            spring,
            vec![
                ms("2026-03-28T01:30:00Z"),
                ms("2026-03-29T01:30:00Z"),
                ms("2026-03-30T00:30:00Z"),
            ]
        );
        let autumn = ticks_between(
            &cron,
            &berlin,
            ms("2026-10-24T12:00:00Z"),
            ms("2026-10-26T12:00:00Z"),
            10,
        );
        assert_eq!(
            autumn,
            vec![ms("2026-10-25T00:30:00Z"), ms("2026-10-26T01:30:00Z")]
        );
        // Within the bounds only, at most `most`, never on a day that never comes.
        let every = "*/20 * * * *".parse().unwrap();
        let utc = time_zone("UTC").unwrap();
        let three = ticks_between(
            &every,
            &utc,
            ms("2026-01-01T00:00:00Z"),
            ms("2026-01-01T01:00:00Z"),
            10,
        );
        assert_eq!(
            three,
            vec![
                ms("2026-01-01T00:20:00Z"),
                ms("2026-01-01T00:40:00Z"),
                ms("2026-01-01T01:00:00Z")
            ]
        );
        let never = "0 0 31 2 *".parse().unwrap();
        assert!(ticks_between(&never, &utc, 0, ms("2030-01-01T00:00:00Z"), 10).is_empty());
        assert!(
            time_zone("Mars/Olympus")
                .unwrap_err()
                .contains("Mars/Olympus")
        );
    }
}

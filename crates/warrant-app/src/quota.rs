//! Quotas per tenant: runs started, calls and model tokens per window, and runs held at once.
//! A front door keeps a [`Meter`] that sees the events of the runs it drives (and is seeded
//! from the store when it starts), and asks it before it starts anything for a tenant: over a
//! quota, the answer says which, and when to try again.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use warrant_core::Event;
use warrant_core::event::EventKind;
use warrant_core::ids::RunId;

/// Default window of a quota: an hour.
pub const WINDOW_MS_DEFAULT: u64 = 3_600_000;

/// What one tenant may use. A limit left out is no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// The window the per-window limits count over, in milliseconds (default one hour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
    /// Most runs started in a window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_started: Option<u64>,
    /// Most runs held at once (not ended: running, waiting, ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_held: Option<u64>,
    /// Most tool calls in a window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Most model tokens (input and output) in a window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl Quota {
    fn window_ms(&self) -> u64 {
        self.window_ms.unwrap_or(WINDOW_MS_DEFAULT).max(1)
    }

    /// A quota that limits nothing is refused: it would be a typo.
    pub fn check(&self) -> Result<(), String> {
        if self.window_ms == Some(0) {
            return Err("`window_ms` must be at least 1".into());
        }
        for (name, v) in [
            ("runs_started", self.runs_started),
            ("runs_held", self.runs_held),
            ("calls", self.calls),
            ("tokens", self.tokens),
        ] {
            if v == Some(0) {
                return Err(format!(
                    "`{name}: 0` would refuse everything: leave the tenant out of the file instead"
                ));
            }
        }
        Ok(())
    }
}

/// A quota reached.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "tenant `{tenant}` has reached its quota of {limit} {what}{}: try again in {} s",
    if *per_window { " per window" } else { "" },
    retry_after_ms.div_ceil(1000).max(1)
)]
pub struct Exceeded {
    /// The tenant.
    pub tenant: String,
    /// Which: `runs started`, `runs held`, `calls`, `tokens`.
    pub what: &'static str,
    /// Its limit.
    pub limit: u64,
    /// Whether it counts over a window (else: at once).
    pub per_window: bool,
    /// When trying again may succeed.
    pub retry_after_ms: u64,
}

/// What one tenant used, with when.
#[derive(Default)]
struct Use {
    started: VecDeque<u64>,
    calls: VecDeque<u64>,
    tokens: VecDeque<(u64, u64)>,
    held: HashSet<RunId>,
    refused: BTreeMap<&'static str, u64>,
    /// What the store said the tenant spent lately, where other processes spend it.
    spend: Option<Spend>,
}

/// Calls and tokens spent in a window, as a store counted them at `at_ms`.
#[derive(Clone, Copy)]
struct Spend {
    at_ms: u64,
    calls: u64,
    tokens: u64,
}

impl Use {
    /// A run started at `at`, held until it ends.
    fn start(&mut self, run: &RunId, at: u64) {
        self.started.push_back(at);
        self.held.insert(run.clone());
    }

    /// Forgets what is older than `since`.
    fn prune(&mut self, since: u64) {
        while self.started.front().is_some_and(|t| *t < since) {
            self.started.pop_front();
        }
        while self.calls.front().is_some_and(|t| *t < since) {
            self.calls.pop_front();
        }
        while self.tokens.front().is_some_and(|(t, _)| *t < since) {
            self.tokens.pop_front();
        }
    }
}

/// A tenant's use as `/metrics` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantUse {
    /// Runs started in the window.
    pub runs_started: u64,
    /// Runs held now.
    pub runs_held: u64,
    /// Calls in the window.
    pub calls: u64,
    /// Tokens in the window.
    pub tokens: u64,
    /// Starts refused, by the quota that refused them.
    pub refused: BTreeMap<&'static str, u64>,
}

/// What every tenant used, from the events of its runs.
pub struct Meter {
    tenants: Mutex<HashMap<String, Use>>,
    /// The longest window any quota asked about counts over: what is kept.
    keep_ms: std::sync::atomic::AtomicU64,
}

impl Default for Meter {
    fn default() -> Meter {
        Meter::new(WINDOW_MS_DEFAULT)
    }
}

impl Meter {
    /// A meter that keeps what windows up to `keep_ms` long need (at least an hour; longer
    /// once a quota with a longer window is asked about).
    pub fn new(keep_ms: u64) -> Meter {
        Meter {
            tenants: Mutex::new(HashMap::new()),
            keep_ms: std::sync::atomic::AtomicU64::new(keep_ms.max(WINDOW_MS_DEFAULT)),
        }
    }

    fn keep_ms(&self) -> u64 {
        self.keep_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts `event` of `run`, a run of `tenant`.
    pub fn observe(&self, tenant: &str, run: &RunId, event: &Event) {
        let Ok(mut tenants) = self.tenants.lock() else {
            return;
        };
        let u = tenants.entry(tenant.to_owned()).or_default();
        match &event.kind {
            EventKind::RunStarted { .. } => u.start(run, event.at_ms),
            EventKind::RunFinished { .. } => {
                u.held.remove(run);
            }
            EventKind::CallStarted { .. } => u.calls.push_back(event.at_ms),
            EventKind::Decided {
                usage: Some(usage), ..
            } => u.tokens.push_back((
                event.at_ms,
                usage.input_tokens.saturating_add(usage.output_tokens),
            )),
            _ => return,
        }
        u.prune(event.at_ms.saturating_sub(self.keep_ms()));
    }

    /// Counts run `run` of `tenant` started at `at_ms` (one recorded for another process to
    /// drive: a fleet's server).
    pub fn started(&self, tenant: &str, run: &RunId, at_ms: u64) {
        if let Ok(mut tenants) = self.tenants.lock() {
            tenants
                .entry(tenant.to_owned())
                .or_default()
                .start(run, at_ms);
        }
    }

    /// `tenant`'s runs held now are `runs` (as the store says, when other processes drive
    /// them and this one does not see them end).
    pub fn set_held(&self, tenant: &str, runs: HashSet<RunId>) {
        if let Ok(mut tenants) = self.tenants.lock() {
            tenants.entry(tenant.to_owned()).or_default().held = runs;
        }
    }

    /// `tenant` spent `calls` and `tokens` in the window ending now, as the store says (a
    /// fleet's, whose workers spend them): what the next check counts instead of what this
    /// process saw.
    pub fn set_spend(&self, tenant: &str, now_ms: u64, calls: u64, tokens: u64) {
        if let Ok(mut tenants) = self.tenants.lock() {
            tenants.entry(tenant.to_owned()).or_default().spend = Some(Spend {
                at_ms: now_ms,
                calls,
                tokens,
            });
        }
    }

    /// Counts a run of `tenant` whose log is `events` (a meter seeded from the store).
    pub fn seed(&self, tenant: &str, run: &RunId, events: &[std::sync::Arc<Event>]) {
        for e in events {
            self.observe(tenant, run, e);
        }
    }

    /// `Ok` when `tenant` may start a run at `now_ms` under `quota`; else which quota it
    /// reached (counted as refused). `calls` and `tokens` count the window's use so far.
    pub fn may_start(&self, tenant: &str, quota: &Quota, now_ms: u64) -> Result<(), Exceeded> {
        self.check(tenant, quota, now_ms, true)
    }

    /// `Ok` when `tenant` may make another call at `now_ms` under `quota`.
    pub fn may_call(&self, tenant: &str, quota: &Quota, now_ms: u64) -> Result<(), Exceeded> {
        self.check(tenant, quota, now_ms, false)
    }

    fn check(
        &self,
        tenant: &str,
        quota: &Quota,
        now_ms: u64,
        starting: bool,
    ) -> Result<(), Exceeded> {
        let window = quota.window_ms();
        self.keep_ms
            .fetch_max(window, std::sync::atomic::Ordering::Relaxed);
        let Ok(mut tenants) = self.tenants.lock() else {
            return Ok(());
        };
        let u = tenants.entry(tenant.to_owned()).or_default();
        let since = now_ms.saturating_sub(window);
        let count = |times: &VecDeque<u64>| times.iter().filter(|t| **t >= since).count() as u64;
        // When the oldest use in the window leaves it.
        let retry = |oldest: Option<u64>| {
            oldest.map_or(window, |t| t.saturating_add(window).saturating_sub(now_ms))
        };
        let exceeded =
            |what: &'static str, limit: u64, per_window: bool, retry_after_ms: u64| Exceeded {
                tenant: tenant.to_owned(),
                what,
                limit,
                per_window,
                retry_after_ms,
            };
        fn first_since(mut times: impl Iterator<Item = u64>, since: u64) -> Option<u64> {
            times.find(|t| *t >= since)
        }
        let tokens_used: u64 = u
            .tokens
            .iter()
            .filter(|(t, _)| *t >= since)
            .map(|(_, n)| *n)
            .sum();
        // What the store counted just now stands for what this process saw (it does not
        // see what other processes' runs spend); when its window frees up is not known:
        // look again in a minute.
        let fresh = u.spend.filter(|s| s.at_ms == now_ms);
        let (calls_used, tokens_used, spent_retry) = match fresh {
            Some(s) => (s.calls, s.tokens, Some(60_000)),
            None => (count(&u.calls), tokens_used, None),
        };
        // Each quota that applies: what, its limit, what was used, and when to try again
        // (when the oldest use in the window leaves it; a held run, when it ends).
        let limits = [
            (
                "runs started",
                quota.runs_started.filter(|_| starting),
                count(&u.started),
                true,
                retry(first_since(u.started.iter().copied(), since)),
            ),
            (
                "runs held",
                quota.runs_held.filter(|_| starting),
                u.held.len() as u64,
                false,
                30_000,
            ),
            (
                "calls",
                quota.calls,
                calls_used,
                true,
                spent_retry.unwrap_or_else(|| retry(first_since(u.calls.iter().copied(), since))),
            ),
            (
                "tokens",
                quota.tokens,
                tokens_used,
                true,
                spent_retry
                    .unwrap_or_else(|| retry(first_since(u.tokens.iter().map(|(t, _)| *t), since))),
            ),
        ];
        let over =
            limits
                .into_iter()
                .find_map(|(what, limit, used, per_window, retry_after_ms)| {
                    limit
                        .filter(|l| used >= *l)
                        .map(|l| exceeded(what, l, per_window, retry_after_ms))
                });
        match over {
            None => Ok(()),
            Some(e) => {
                *u.refused.entry(e.what).or_default() += 1;
                Err(e)
            }
        }
    }

    /// Every tenant's use at `now_ms`, each counted over its own quota's window (`quotas`,
    /// else the default window).
    pub fn usage(
        &self,
        now_ms: u64,
        window_of: impl Fn(&str) -> u64,
    ) -> BTreeMap<String, TenantUse> {
        let Ok(tenants) = self.tenants.lock() else {
            return BTreeMap::new();
        };
        tenants
            .iter()
            .map(|(name, u)| {
                let since = now_ms.saturating_sub(window_of(name));
                (
                    name.clone(),
                    TenantUse {
                        runs_started: u.started.iter().filter(|t| **t >= since).count() as u64,
                        runs_held: u.held.len() as u64,
                        calls: u.calls.iter().filter(|t| **t >= since).count() as u64,
                        tokens: u
                            .tokens
                            .iter()
                            .filter(|(t, _)| *t >= since)
                            .map(|(_, n)| *n)
                            .sum(),
                        refused: u.refused.clone(),
                    },
                )
            })
            .collect()
    }

    /// The window a quota counts over (for `usage`).
    pub fn window_of(quota: Option<&Quota>) -> u64 {
        quota.map_or(WINDOW_MS_DEFAULT, Quota::window_ms)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
mod tests {
    use super::*;
    use std::sync::Arc;
    use warrant_core::ids::CallId;

    fn event(at_ms: u64, kind: EventKind) -> Event {
        Event {
            seq: 1,
            at_ms,
            kind,
        }
    }

    fn finished() -> EventKind {
        EventKind::RunFinished {
            outcome: warrant_core::Outcome::Attained,
        }
    }

    fn call(at: u64) -> Event {
        event(
            at,
            EventKind::CallStarted {
                call: CallId(1),
                step: warrant_core::ids::StepId("s".into()),
                tool: "t".into(),
                handle: None,
                args: Arc::new(serde_json::json!({})),
                resend_of: None,
            },
        )
    }

    #[test]
    fn a_tenant_over_its_quota_is_refused_with_when_to_try_again_and_others_are_not() {
        let meter = Meter::new(0);
        let quota = Quota {
            window_ms: Some(10_000),
            runs_started: Some(2),
            runs_held: Some(5),
            calls: Some(3),
            tokens: None,
        };
        // (What a `run_started` event counts.)
        let started = |run: &str, at: u64| {
            let mut tenants = meter.tenants.lock().unwrap();
            tenants
                .entry("acme".into())
                .or_default()
                .start(&RunId(run.into()), at);
        };
        started("r1", 1_000);
        started("r2", 2_000);
        let e = meter.may_start("acme", &quota, 3_000).unwrap_err();
        assert_eq!(
            (e.what, e.limit, e.retry_after_ms),
            ("runs started", 2, 8_000)
        );
        assert!(e.to_string().contains("try again in 8 s"), "{e}");
        assert!(meter.may_start("globex", &quota, 3_000).is_ok());
        // The window moves on: the first start leaves it.
        assert!(meter.may_start("acme", &quota, 11_001).is_ok());
        // Calls in the window.
        for at in [12_000, 12_001, 12_002] {
            meter.observe("acme", &RunId("r2".into()), &call(at));
        }
        let e = meter.may_call("acme", &quota, 12_003).unwrap_err();
        assert_eq!(e.what, "calls");
        // An ended run is no longer held.
        meter.observe("acme", &RunId("r1".into()), &event(12_004, finished()));
        let usage = meter.usage(12_005, |_| 10_000);
        assert_eq!(usage["acme"].runs_held, 1);
        assert_eq!(usage["acme"].calls, 3);
        assert_eq!(usage["acme"].refused.get("runs started"), Some(&1));
    }

    #[test]
    fn a_quota_of_zero_or_an_empty_window_is_refused() {
        for q in [
            Quota {
                runs_started: Some(0),
                ..Quota::default()
            },
            Quota {
                window_ms: Some(0),
                ..Quota::default()
            },
        ] {
            assert!(q.check().is_err(), "{q:?}");
        }
    }
}

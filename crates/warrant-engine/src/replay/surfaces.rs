//! The providers of a replay: each answers exactly what the log recorded it answered —
//! its observations, freshness answers, results, restarts and calls found stopped — in the
//! order the recorded run asked.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use warrant_core::codes::Code;
use warrant_core::event::{ActionRecord, CallStatus, Event, EventKind, Fault, PageSnapshot};
use warrant_core::ids::CallId;
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Recovery, Surface, SurfaceError,
    SurfaceErrorKind,
};
use warrant_core::spec::Spec;

use crate::Surfaces;

/// Answers one provider's observations, freshness checks and calls from the log.
pub(super) struct ReplaySurface {
    observations: Mutex<VecDeque<Result<Observation, SurfaceError>>>,
    /// Freshness answers in order; `None` where the check gave no answer in time.
    fresh: Mutex<VecDeque<Option<bool>>>,
    results: HashMap<CallId, Result<CallOutput, SurfaceError>>,
    /// Tools whose lost commits the recorded process put in doubt.
    doubted: HashSet<String>,
    /// Calls that found the provider stopped, with what showed it, in order.
    stopped: Mutex<HashMap<CallId, VecDeque<SurfaceError>>>,
    /// What each restart of the provider came to, in order.
    restarts: Mutex<VecDeque<warrant_core::ports::Restart>>,
    /// What it asked the person during each call.
    asked: Mutex<HashMap<CallId, Vec<warrant_core::ports::Asked>>>,
}

pub(super) fn replay_surfaces(
    spec: &Spec,
    events: &[Arc<Event>],
    segment: &[Arc<Event>],
) -> Surfaces {
    let mut recorded = Recorded::read(spec, events);
    let mut asked = Asked::default();
    for (i, e) in segment.iter().enumerate() {
        asked.note(spec, &recorded, segment, i, e);
    }
    let mut surfaces: Surfaces = HashMap::new();
    for name in spec.providers.keys() {
        let surface = ReplaySurface {
            observations: Mutex::new(asked.observations.remove(name).unwrap_or_default()),
            fresh: Mutex::new(asked.fresh.remove(name).unwrap_or_default()),
            results: recorded.results.remove(name).unwrap_or_default(),
            doubted: asked.doubted.remove(name).unwrap_or_default(),
            stopped: Mutex::new(asked.stopped.remove(name).unwrap_or_default()),
            restarts: Mutex::new(asked.restarts.remove(name).unwrap_or_default()),
            asked: Mutex::new(recorded.asked.remove(name).unwrap_or_default()),
        };
        surfaces.insert(name.clone(), Arc::new(surface));
    }
    surfaces
}

/// The provider of the step named `step` (empty when the spec has no such step).
pub(super) fn provider_of(spec: &Spec, step: &str) -> String {
    spec.steps
        .iter()
        .find(|s| &*s.id.0 == step)
        .map(|s| s.provider.clone())
        .unwrap_or_default()
}

/// What the whole log recorded of the providers: what each observation offered, each call's
/// provider and answer, and the observation a call sent again was made at.
pub(super) struct Recorded {
    actions: HashMap<(String, String), Arc<[ActionRecord]>>,
    results: HashMap<String, HashMap<CallId, Result<CallOutput, SurfaceError>>>,
    call_provider: HashMap<CallId, String>,
    dispatched: HashSet<CallId>,
    /// A call sent again was observed afresh first: at the latest version recorded before it
    /// (by the sequence of its `call_started`).
    resent_at: HashMap<u64, (String, String)>,
    /// Each provider's page snapshots, by the sequence of the `observed` that recorded them
    /// (a page may retitle itself under one version).
    pages: HashMap<String, Vec<(u64, Option<PageSnapshot>)>>,
    /// What each provider asked the person during each call.
    asked: HashMap<String, HashMap<CallId, Vec<warrant_core::ports::Asked>>>,
}

impl Recorded {
    fn read(spec: &Spec, events: &[Arc<Event>]) -> Recorded {
        let mut r = Recorded {
            actions: HashMap::new(),
            results: HashMap::new(),
            call_provider: HashMap::new(),
            dispatched: HashSet::new(),
            resent_at: HashMap::new(),
            pages: HashMap::new(),
            asked: HashMap::new(),
        };
        let mut call_tool: HashMap<CallId, String> = HashMap::new();
        let mut latest: HashMap<String, String> = HashMap::new();
        let message_max = match events.first().map(|e| &e.kind) {
            Some(EventKind::RunStarted {
                messages: Some(m), ..
            }) => usize::from(m.get()),
            _ => warrant_core::text::PROVIDER_MESSAGE_MAX_V1,
        };
        for e in events {
            match &e.kind {
                EventKind::Observed {
                    provider,
                    version,
                    actions: a,
                    page,
                    ..
                } => {
                    r.actions
                        .insert((provider.clone(), version.clone()), a.clone());
                    r.pages
                        .entry(provider.clone())
                        .or_default()
                        .push((e.seq, page.clone()));
                    latest.insert(provider.clone(), version.clone());
                }
                EventKind::CallStarted {
                    call,
                    step,
                    tool,
                    resend_of,
                    ..
                } => {
                    let p = provider_of(spec, &step.0);
                    if resend_of.is_some()
                        && let Some(v) = latest.get(&p)
                    {
                        r.resent_at.insert(e.seq, (p.clone(), v.clone()));
                    }
                    r.call_provider.insert(*call, p);
                    call_tool.insert(*call, tool.clone());
                }
                EventKind::CallDispatched { call, .. } => {
                    r.dispatched.insert(*call);
                }
                kind @ EventKind::ProviderAsked { .. } => {
                    let Some((call, asked)) = warrant_core::ports::Asked::of(kind) else {
                        continue;
                    };
                    let Some(p) = r.call_provider.get(&call).cloned() else {
                        continue;
                    };
                    r.asked
                        .entry(p)
                        .or_default()
                        .entry(call)
                        .or_default()
                        .push(asked);
                }
                EventKind::CallInDoubt {
                    call,
                    cause: Some(f),
                    ..
                } => {
                    let Some(p) = r.call_provider.get(call).cloned() else {
                        continue;
                    };
                    r.results
                        .entry(p)
                        .or_default()
                        .insert(*call, Err(recorded_error(f, strip_call(&f.message))));
                }
                EventKind::CallFinished {
                    call,
                    status,
                    output,
                    fault,
                    ..
                } if r.dispatched.contains(call) => {
                    let Some(p) = r.call_provider.get(call).cloned() else {
                        continue;
                    };
                    let tool = call_tool.get(call).map_or("", String::as_str);
                    let answer = recorded_answer(
                        *status,
                        output.as_ref(),
                        fault.as_ref(),
                        tool,
                        message_max,
                    );
                    r.results.entry(p).or_default().insert(*call, answer);
                }
                _ => {}
            }
        }
        r
    }

    /// What provider `p` offered at observation `v`, as the log stood at event `seq`.
    fn observation(&self, p: &str, v: &str, seq: u64) -> Observation {
        let page = self.pages.get(p).and_then(|pages| {
            let before = pages.partition_point(|(at, _)| *at <= seq);
            pages.get(before.checked_sub(1)?)?.1.clone()
        });
        Observation {
            version: v.to_owned(),
            actions: self
                .actions
                .get(&(p.to_owned(), v.to_owned()))
                .cloned()
                .unwrap_or_else(|| Arc::from(Vec::new())),
            page,
        }
    }
}

/// What a dispatched call of `tool` answered, as its `call_finished` recorded it.
pub(super) fn recorded_answer(
    status: CallStatus,
    output: Option<&Arc<Value>>,
    fault: Option<&Fault>,
    tool: &str,
    message_max: usize,
) -> Result<CallOutput, SurfaceError> {
    match (status, output, fault) {
        (CallStatus::Ok, Some(o), _) => Ok(CallOutput {
            output: (**o).clone(),
            is_error: false,
        }),
        // An error result the provider returned, or an error that came with the provider's
        // answer: the recorded message tells which.
        (CallStatus::ProviderError, Some(o), f)
            if f.is_none_or(|f| {
                f.message
                    == format!(
                        "`{tool}` failed: {}",
                        warrant_core::text::provider_message_within(o, message_max)
                    )
            }) =>
        {
            Ok(CallOutput {
                output: (**o).clone(),
                is_error: true,
            })
        }
        (_, Some(o), Some(f)) => {
            Err(recorded_error(f, strip_call(&f.message)).with_output((**o).clone()))
        }
        (_, _, Some(f)) => Err(recorded_error(f, strip_call(&f.message))),
        _ => Err(SurfaceError {
            code: Some(Code::ReplayGap),
            ..SurfaceError::rejected("the log records no result for this call")
        }),
    }
}

/// What one segment of the log asked of each provider, in order: observations, freshness
/// answers, calls found stopped and the restarts that followed, and what was put in doubt.
#[derive(Default)]
pub(super) struct Asked {
    observations: HashMap<String, VecDeque<Result<Observation, SurfaceError>>>,
    fresh: HashMap<String, VecDeque<Option<bool>>>,
    doubted: HashMap<String, HashSet<String>>,
    stopped: HashMap<String, HashMap<CallId, VecDeque<SurfaceError>>>,
    restarts: HashMap<String, VecDeque<warrant_core::ports::Restart>>,
}

impl Asked {
    /// Notes what event `e` (the `i`-th of `segment`) asked of a provider.
    fn note(
        &mut self,
        spec: &Spec,
        recorded: &Recorded,
        segment: &[Arc<Event>],
        i: usize,
        e: &Event,
    ) {
        let mut observed = |p: String, o: Result<Observation, SurfaceError>| {
            self.observations.entry(p).or_default().push_back(o);
        };
        match &e.kind {
            // A restart follows the request that found the provider stopped.
            EventKind::ProviderRestarted {
                provider,
                call,
                cause,
                attempts,
                fault,
                ..
            } => {
                let down = SurfaceError::new(SurfaceErrorKind::Down, cause.message.clone());
                match call {
                    Some(call) => self
                        .stopped
                        .entry(provider.clone())
                        .or_default()
                        .entry(*call)
                        .or_default()
                        .push_back(down),
                    None => observed(provider.clone(), Err(down)),
                }
                self.restarts
                    .entry(provider.clone())
                    .or_default()
                    .push_back(warrant_core::ports::Restart {
                        attempts: *attempts,
                        error: fault
                            .as_ref()
                            .map(|f| SurfaceError::not_sent(f.message.clone())),
                    });
            }
            // An observation no decision followed: the process stopped while its decider
            // thought (what it had staged was appended as the wait began), or a session's
            // client left when asked for its next decision.
            EventKind::Observed {
                provider, version, ..
            } if segment.get(i + 1).is_none_or(|next| {
                matches!(
                    next.kind,
                    EventKind::RunFinished {
                        outcome: warrant_core::event::Outcome::Closed { .. }
                    }
                )
            }) =>
            {
                observed(
                    provider.clone(),
                    Ok(recorded.observation(provider, version, e.seq)),
                );
            }
            EventKind::ObserveFailed {
                provider, fault, ..
            } => {
                let error = recorded_error(fault, strip_observe(&fault.message, provider));
                observed(provider.clone(), Err(error));
            }
            EventKind::Decided { step, version, .. }
            | EventKind::DecideFailed {
                step,
                version: Some(version),
                ..
            } => {
                let p = provider_of(spec, &step.0);
                let o = recorded.observation(&p, version, e.seq);
                observed(p, Ok(o));
            }
            EventKind::CallStarted {
                resend_of: Some(_), ..
            } => {
                if let Some((p, v)) = recorded.resent_at.get(&e.seq) {
                    observed(p.clone(), Ok(recorded.observation(p, v, e.seq)));
                }
            }
            EventKind::CallDispatched { call, .. } => {
                if let Some(p) = recorded.call_provider.get(call) {
                    self.fresh
                        .entry(p.clone())
                        .or_default()
                        .push_back(Some(true));
                }
            }
            EventKind::CallFinished {
                call,
                fault: Some(f),
                ..
            } if !recorded.dispatched.contains(call)
                && matches!(
                    f.known_code(),
                    Some(Code::StaleObservation | Code::FreshnessTimeout)
                ) =>
            {
                if let Some(p) = recorded.call_provider.get(call) {
                    let answer = (f.code == Code::StaleObservation.as_str()).then_some(false);
                    self.fresh.entry(p.clone()).or_default().push_back(answer);
                }
            }
            EventKind::CallInDoubt { provider, tool, .. } => {
                self.doubted
                    .entry(provider.clone())
                    .or_default()
                    .insert(tool.clone());
            }
            _ => {}
        }
    }
}

/// The error a surface gave, as the log recorded it: the kind its code stands for, and the
/// code itself, so the engine records the same fault again.
pub(super) fn recorded_error(fault: &Fault, message: String) -> SurfaceError {
    let code = fault.known_code();
    let kind = match code {
        Some(Code::DeniedAtProvider) => SurfaceErrorKind::Denied,
        Some(Code::Cancelled) => SurfaceErrorKind::Cancelled,
        Some(Code::Timeout | Code::Deadline) => SurfaceErrorKind::TimedOut,
        Some(Code::AnswerLost) => SurfaceErrorKind::AnswerLost,
        Some(Code::InvalidArguments) => SurfaceErrorKind::Invalid,
        Some(Code::Unavailable) => SurfaceErrorKind::NotSent,
        _ => SurfaceErrorKind::Rejected,
    };
    SurfaceError {
        code,
        ..SurfaceError::new(kind, message)
    }
}

/// The engine words a failed observation as "observing `p` failed: <message>".
pub(super) fn strip_observe(message: &str, provider: &str) -> String {
    message
        .strip_prefix(&format!("observing `{provider}` failed: "))
        .unwrap_or(message)
        .to_owned()
}

/// The engine words a failed call as "`tool` failed: <message>" (or "cancelled: ").
pub(super) fn strip_call(message: &str) -> String {
    let rest = message
        .strip_prefix('`')
        .and_then(|m| m.split_once('`'))
        .map(|(_, r)| r);
    rest.and_then(|r| {
        r.strip_prefix(" failed: ")
            .or_else(|| r.strip_prefix(" cancelled: "))
    })
    .unwrap_or(message)
    .to_owned()
}

impl Surface for ReplaySurface {
    fn asked(
        &self,
        _run: &warrant_core::ids::RunId,
        call: CallId,
    ) -> Vec<warrant_core::ports::Asked> {
        self.asked
            .lock()
            .ok()
            .and_then(|mut a| a.remove(&call))
            .unwrap_or_default()
    }

    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        let next = self
            .observations
            .lock()
            .ok()
            .and_then(|mut q| q.pop_front());
        let answer = next.unwrap_or_else(|| {
            Err(SurfaceError {
                code: Some(Code::ReplayDiverged),
                ..SurfaceError::rejected("the log records no further observation")
            })
        });
        Box::pin(std::future::ready(answer))
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        let down = self
            .stopped
            .lock()
            .ok()
            .and_then(|mut s| s.get_mut(&call.call()).and_then(VecDeque::pop_front));
        if let Some(down) = down {
            return Box::pin(std::future::ready(Err(down)));
        }
        let answer = self.results.get(&call.call()).cloned().unwrap_or_else(|| {
            Err(SurfaceError {
                code: Some(Code::ReplayDiverged),
                ..SurfaceError::rejected(format!("the log records no result for {}", call.call()))
            })
        });
        Box::pin(std::future::ready(answer))
    }

    fn revive(&self) -> BoxFuture<'_, warrant_core::ports::Restart> {
        let next = self
            .restarts
            .lock()
            .ok()
            .and_then(|mut r| r.pop_front())
            .unwrap_or(warrant_core::ports::Restart {
                attempts: 0,
                error: Some(SurfaceError {
                    code: Some(Code::ReplayDiverged),
                    ..SurfaceError::not_sent("the log records no further restart")
                }),
            });
        Box::pin(std::future::ready(next))
    }

    fn recovery(&self, tool: &str) -> Recovery {
        if self.doubted.contains(tool) {
            Recovery::InDoubt
        } else {
            Recovery::Reinvoke
        }
    }

    fn is_current<'a>(&'a self, _version: &'a str) -> BoxFuture<'a, bool> {
        let next = self
            .fresh
            .lock()
            .ok()
            .and_then(|mut q| q.pop_front())
            .unwrap_or(Some(true));
        match next {
            Some(answer) => Box::pin(std::future::ready(answer)),
            // The recorded check gave no answer in time: neither does this one.
            None => Box::pin(std::future::pending()),
        }
    }
}

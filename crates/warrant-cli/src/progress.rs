//! Live progress on stderr, as a subscriber: it never slows the run down.

use warrant_core::event::{CallStatus, Event, EventKind, StepEnd};
use warrant_core::ids::RunId;
use warrant_engine::Subscriber;

pub struct Progress {
    tools: Vec<String>,
}

impl Progress {
    pub fn new() -> Progress {
        Progress { tools: Vec::new() }
    }
}

impl Subscriber for Progress {
    fn on_event(&mut self, run: &RunId, event: &Event) -> Result<(), String> {
        let line = match &event.kind {
            EventKind::RunStarted { spec, decider, .. } => {
                Some(format!("run {run}: {} with {decider}", spec.id))
            }
            EventKind::StepStarted { step, provider } if provider.is_empty() => {
                Some(format!("> step {step} delegates"))
            }
            EventKind::StepStarted { step, provider } => {
                Some(format!("> step {step} on {provider}"))
            }
            EventKind::CallStarted { tool, .. } => {
                self.tools.push(tool.clone());
                None
            }
            EventKind::CallFinished {
                call,
                status,
                fault,
                ..
            } => {
                let tool = self.tools.last().cloned().unwrap_or_default();
                Some(match (status, fault) {
                    (CallStatus::Ok, _) => format!("  ok   {call} {tool}"),
                    (_, Some(f)) => format!("  FAIL {call} {tool}: [{}] {}", f.layer, f.message),
                    (s, None) => format!("  {s} {call} {tool}"),
                })
            }
            EventKind::Carried { name, value, .. } => {
                Some(format!("       carried {name} = {value}"))
            }
            EventKind::StepFinished {
                step,
                end: StepEnd::Attained,
            } => Some(format!("  step {step} attained")),
            EventKind::StepFinished {
                step,
                end: StepEnd::NotAttained { fault },
            } => Some(format!(
                "  step {step} not attained: [{}] {}",
                fault.layer, fault.message
            )),
            EventKind::StepSkipped {
                step, blocked_by, ..
            } => Some(format!(
                "> step {step} skipped: `{blocked_by}` was not attained"
            )),
            EventKind::ObserveFailed {
                provider, fault, ..
            } => Some(format!("  cannot observe {provider}: {}", fault.message)),
            EventKind::DecideFailed { fault, .. } => {
                Some(format!("  decider failed: {}", fault.message))
            }
            EventKind::ProviderRestarted {
                provider,
                attempts,
                fault,
                ..
            } => Some(format!(
                "  provider {provider} had stopped: {}",
                warrant_core::report::restart_outcome(*attempts, fault.as_ref())
            )),
            EventKind::RunFinished { outcome } => Some(format!("run {run}: {}", outcome.name())),
            _ => None,
        };
        if let Some(line) = line {
            errln!("{line}");
        }
        Ok(())
    }
}

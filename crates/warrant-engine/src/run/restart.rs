//! A provider found stopped: started again before the step goes on (the observation or the
//! call that found it so is asked again once), or, when it cannot be, the run stops here,
//! interrupted, for `resume` to carry on.

use std::sync::Arc;

use warrant_core::codes::Code;
use warrant_core::event::{EventKind, Fault};
use warrant_core::ids::CallId;
use warrant_core::ports::Restart;
use warrant_core::ports::SurfaceError;

use super::{Bound, Cut, Run, step_of};
use crate::EngineError;

/// How often one request (an observation, a call) starts its stopped provider again before
/// it fails as it found it: a provider that keeps dying is not waited on forever.
pub(super) const RESTARTS_PER_REQUEST: u32 = 3;

/// What came of starting a stopped provider again.
pub(super) enum Restarted {
    /// It runs: ask again.
    Running,
    /// The wait was cut (the deadline, a cancellation): record what found it stopped, or the
    /// cut, as a failure of the request.
    Cut(Cut),
}

impl Run<'_> {
    /// Starts step `i`'s provider again after `cause` (of `call`, or of an observation)
    /// showed it stopped, recording `provider_restarted`. Its starts are bounded like a call.
    /// When it cannot be started, the run stops interrupted ([`EngineError::Interrupted`]),
    /// with what it staged appended.
    pub(super) async fn restart(
        &mut self,
        i: usize,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        call: Option<CallId>,
        cause: &SurfaceError,
    ) -> Result<Restarted, EngineError> {
        let restart = match self.bounded_durably(Bound::Call, surface.revive()).await? {
            Ok(restart) => restart,
            Err(cut @ (Cut::Deadline(_) | Cut::Cancelled(_))) => return Ok(Restarted::Cut(cut)),
            Err(Cut::Timeout(ms)) => Restart {
                attempts: 1,
                error: Some(SurfaceError::not_sent(format!(
                    "it was not ready within {ms} ms (`limits.call_timeout_ms`)"
                ))),
            },
        };
        let step = step_of(&self.spec, i)?;
        let (step_id, provider) = (step.id.clone(), step.provider.clone());
        let fault = restart
            .error
            .as_ref()
            .map(|e| Fault::of(Code::Unavailable, e.message.clone()));
        self.stage(EventKind::ProviderRestarted {
            step: step_id,
            provider: provider.clone(),
            call,
            cause: Fault::of(Code::Unavailable, cause.message.clone()),
            attempts: restart.attempts,
            fault,
        })?;
        let Some(error) = restart.error else {
            return Ok(Restarted::Running);
        };
        self.flush().await?;
        // Given back at once: `resume` may carry the run on without waiting for it to lapse.
        self.release().await;
        Err(EngineError::Interrupted {
            run: self.run_id.clone(),
            reason: format!(
                "provider `{provider}` stopped and could not be started again: {}",
                error.message
            ),
        })
    }
}

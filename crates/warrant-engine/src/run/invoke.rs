//! Dispatch and its answer: the only code that hands a call to a surface (with an `Invocation` built from the recorded dispatch), and the recording of what came back.

use std::sync::Arc;

use serde_json::Value;
use warrant_core::canon;
use warrant_core::codes::Code;
use warrant_core::event::{CallStatus, DoubtStage, Effect, EventKind, Fault, Layer};
use warrant_core::ids::CallId;
use warrant_core::ports::{CallOutput, Invocation, SurfaceError, SurfaceErrorKind};

use super::{Bound, Cut, Refusal, Run, error_message, step_of};
use crate::EngineError;

/// How a surface's error is recorded on a call that reached dispatch: its status and fault.
/// One mapping for live runs and replays.
pub(super) fn call_fault(tool: &str, e: &SurfaceError) -> (CallStatus, Fault) {
    let message = &e.message;
    let (status, code, text) = match e.kind {
        SurfaceErrorKind::Denied => (
            CallStatus::StoppedByPolicy,
            Code::DeniedAtProvider,
            format!("`{tool}` denied by the provider's authorizer: {message}"),
        ),
        SurfaceErrorKind::Cancelled => (
            CallStatus::Cancelled,
            Code::Cancelled,
            format!("`{tool}` cancelled: {message}"),
        ),
        SurfaceErrorKind::Invalid => (
            CallStatus::Rejected,
            Code::InvalidArguments,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::NotSent | SurfaceErrorKind::Down => (
            CallStatus::ProviderError,
            Code::Unavailable,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::Rejected => (
            CallStatus::ProviderError,
            Code::ProviderError,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::AnswerLost => (
            CallStatus::ProviderError,
            Code::AnswerLost,
            format!("`{tool}` failed: {message}"),
        ),
        SurfaceErrorKind::TimedOut => (
            CallStatus::ProviderError,
            Code::Timeout,
            format!("`{tool}` failed: {message}"),
        ),
    };
    let code = e.code.unwrap_or(code);
    (status, Fault::of(code, text))
}

impl Run<'_> {
    /// The invocation of `call` as its recorded dispatch says: the only way to one
    /// (`Invocation::dispatched`), so none exists without a durable intent in the log.
    pub(super) fn dispatched(
        &self,
        call: CallId,
        version: String,
    ) -> Result<Invocation, EngineError> {
        Invocation::dispatched(&self.state, call, version).ok_or_else(|| {
            EngineError::Invariant(warrant_core::fold::FoldError {
                seq: self.state.last_seq(),
                kind: "call_dispatched",
                message: format!("{call} has no recorded dispatch to invoke"),
            })
        })
    }

    /// Asks the surface whether the effect of a dispatched call happened (bounded like a call).
    pub(super) async fn lookup(
        &mut self,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        invocation: Invocation,
    ) -> Result<Option<CallOutput>, SurfaceError> {
        self.bounded(Bound::Call, surface.lookup(invocation))
            .await
            .unwrap_or_else(|cut| Err(self.cut(&cut)))
    }

    /// INVARIANT (one path): the only code that hands a call to a surface. Calls the provider
    /// and records what came back.
    pub(super) async fn invoke_and_record(
        &mut self,
        i: usize,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        invocation: Invocation,
    ) -> Result<(), EngineError> {
        let (call, tool, effect) = (
            invocation.call(),
            invocation.tool().to_owned(),
            invocation.effect(),
        );
        let mut answer = self.invoked(surface, invocation).await;
        // A provider found stopped with nothing of this call taking effect (not sent, or a
        // read) is started again, and the call sent again.
        let mut restarts = 0;
        while let Err(e) = &answer
            && e.kind == SurfaceErrorKind::Down
            && restarts < super::restart::RESTARTS_PER_REQUEST
        {
            restarts += 1;
            match self.restart(i, surface, Some(call), e).await? {
                super::restart::Restarted::Running => {
                    // The same invocation, as its recorded dispatch says (built again only
                    // here: a step that never finds its provider stopped copies nothing).
                    let again = self.dispatched(call, self.version_of(call))?;
                    answer = self.invoked(surface, again).await;
                }
                super::restart::Restarted::Cut(cut) => {
                    // Nothing was sent: the call failed as it found the provider.
                    self.cut(&cut);
                    break;
                }
            }
        }
        // What the provider asked the person meanwhile, before the call's end.
        let run_id = self.run_id.clone();
        for asked in surface.asked(&run_id, call) {
            self.stage(asked.event(call))?;
        }
        warrant_fault::hit(warrant_fault::FaultPoint::AfterInvoke);
        if effect == Effect::Commit
            && let Err(e) = &answer
            && e.kind.may_have_happened()
        {
            // INVARIANT (no effect lost, none repeated): the provider may have performed it.
            // It is never recorded as failed (a retry would repeat it) and never dropped.
            let stage = if e.kind == SurfaceErrorKind::AnswerLost {
                DoubtStage::AnswerLost
            } else {
                DoubtStage::SentNoAnswer
            };
            let args_digest = self
                .state
                .call(call)
                .and_then(|r| r.executed.as_ref())
                .map(|a| canon::digest(a))
                .unwrap_or_default();
            let (_, cause) = call_fault(&tool, e);
            let provider = step_of(&self.spec, i)?.provider.clone();
            self.stage(EventKind::CallInDoubt {
                call,
                provider,
                tool: tool.clone(),
                args_digest,
                reason: format!(
                    "`{tool}` was sent and {} ({}): the provider may have performed it",
                    if stage == DoubtStage::AnswerLost {
                        "its answer was lost"
                    } else {
                        "no answer came"
                    },
                    e.message
                ),
                cause: Some(cause),
                stage: Some(stage),
            })?;
            return Ok(());
        }
        self.record_result(i, call, &tool, answer)
    }

    /// The surface's answer to `invocation`, within the call bound.
    async fn invoked(
        &mut self,
        surface: &Arc<dyn warrant_core::ports::Surface>,
        invocation: Invocation,
    ) -> Result<CallOutput, SurfaceError> {
        let call = invocation.call();
        match self.bounded(Bound::Call, surface.invoke(invocation)).await {
            Ok(answer) => answer,
            Err(cut) => {
                if matches!(cut, Cut::Cancelled(_)) {
                    surface.cancel(call);
                }
                Err(self.cut(&cut))
            }
        }
    }

    pub(super) fn record_result(
        &mut self,
        i: usize,
        call: CallId,
        tool: &str,
        answer: Result<CallOutput, SurfaceError>,
    ) -> Result<(), EngineError> {
        match answer {
            Ok(CallOutput {
                output,
                is_error: false,
            }) => {
                let output = Arc::new(output);
                self.finish_call(call, CallStatus::Ok, Some(output.clone()), None)?;
                self.lift(i, call, tool, &output)?;
            }
            Ok(CallOutput {
                output,
                is_error: true,
            }) => {
                let fault = Fault::new(
                    Code::ProviderError,
                    Layer::Provider,
                    format!("`{tool}` failed: {}", error_message(&self.state, &output)),
                );
                self.finish_call(
                    call,
                    CallStatus::ProviderError,
                    Some(Arc::new(output)),
                    Some(fault),
                )?;
            }
            Err(e) => {
                let (status, fault) = call_fault(tool, &e);
                self.finish_call(call, status, e.output.map(Arc::new), Some(fault))?;
            }
        }
        Ok(())
    }

    pub(super) fn finish_call(
        &mut self,
        call: CallId,
        status: CallStatus,
        output: Option<Arc<Value>>,
        fault: Option<Fault>,
    ) -> Result<(), EngineError> {
        self.stage(EventKind::CallFinished {
            call,
            status,
            ruled_args_digest: None,
            narrowed: Vec::new(),
            narrowed_args: None,
            output,
            fault,
        })?;
        Ok(())
    }

    /// Ends a call refused before dispatch, recording what an authority ruled on, if it did.
    pub(super) fn refuse_call(
        &mut self,
        call: CallId,
        refusal: Refusal,
    ) -> Result<(), EngineError> {
        self.stage(EventKind::CallFinished {
            call,
            status: refusal.status,
            ruled_args_digest: refusal.ruled.map(String::from),
            narrowed: refusal.narrowed,
            narrowed_args: refusal.narrowed_args,
            output: None,
            fault: Some(refusal.fault),
        })?;
        Ok(())
    }
}

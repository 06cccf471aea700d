//! Fault codes: the closed list of what can go wrong, each with the layer it is usually
//! attributed to and one line a person can read (`warrant explain CODE`).
//!
//! The log stores a fault's code as its text (`Fault::code`), so a log written by a newer build
//! with a code this one does not know still reads; every fault this build records is made from
//! a [`Code`], never from a free string.

use std::fmt;
use std::str::FromStr;

use crate::event::Layer;

macro_rules! codes {
    ($($variant:ident = $text:literal, $layer:ident, $explain:literal;)*) => {
        /// A stable fault code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code {
            $(
                #[doc = $explain]
                $variant,
            )*
        }

        impl Code {
            /// Every code, in the order `warrant explain` lists them.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The code as the log writes it, e.g. `policy_denied`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }

            /// The layer a fault with this code is attributed to when nothing more specific is
            /// known.
            pub fn layer(self) -> Layer {
                match self {
                    $(Code::$variant => Layer::$layer,)*
                }
            }

            /// One line a person can read.
            pub fn explain(self) -> &'static str {
                match self {
                    $(Code::$variant => $explain,)*
                }
            }
        }

        impl FromStr for Code {
            type Err = String;
            fn from_str(s: &str) -> Result<Code, String> {
                match s {
                    $($text => Ok(Code::$variant),)*
                    other => Err(format!("no fault code `{other}` (`warrant explain` lists them)")),
                }
            }
        }
    };
}

codes! {
    // The decider's choices.
    UnknownTool = "unknown_tool", Model,
        "the decider named a tool the step's provider does not offer";
    UnknownHandle = "unknown_handle", Model,
        "the decider used a handle that was never issued in this step";
    HandleConsumed = "handle_consumed", Model,
        "the decider reused a handle an earlier dispatched call already consumed";
    HandleExpired = "handle_expired", Model,
        "the decider used a handle older than `limits.handle_ttl_ms`";
    HandleMismatch = "handle_mismatch", Model,
        "the decider used a handle issued for another tool";
    StaleHandle = "stale_handle", Model,
        "the decider used a handle from an observation that is no longer current";
    ToolNotAllowed = "tool_not_allowed", Model,
        "the decider named a tool the step does not allow";
    InvalidArguments = "invalid_arguments", Model,
        "the arguments do not match the tool's input schema, or set a value only the host may set";
    UnknownCarried = "unknown_carried", Model,
        "an argument claims a carried value the run never carried";
    CarriedValueMismatch = "carried_value_mismatch", Model,
        "an argument bound to a carried value differs from the recorded evidence";
    Declined = "declined", Model,
        "the decider declined to continue the step";
    NoCommit = "no_commit", Model,
        "the step must commit, but the decider never attempted a commit";
    DoneWithoutEvidence = "done_without_evidence", Model,
        "the decider declared the step done, but no call in it succeeded";
    OutputNotPublished = "output_not_published", Model,
        "the decider declared the step done before the tool that publishes an output succeeded";
    InvalidPlan = "invalid_plan", Model,
        "the decider's plan grants a step or a tool the spec does not allow, or it planned when no plan was asked (or did not when one was)";
    InvalidWait = "invalid_wait", Model,
        "the decider (or the step) asked to wait past the longest wait (366 days), or in a child run, which its parent drives and which cannot sleep";
    InvalidQuestion = "invalid_question", Model,
        "the decider asked a question whose answer schema does not compile, or asked in a child run (its parent drives it; only the root asks)";
    ScriptExhausted = "script_exhausted", Model,
        "the script has no more decisions for this step";
    UnreadableAnswer = "unreadable_answer", Model,
        "the model's answer could not be read as the protocol describes it";
    ModelError = "model_error", Model,
        "the model's endpoint answered with an error in place of an answer";
    TruncatedOutput = "truncated_output", Model,
        "the model hit its output token limit before finishing its answer";
    EmptyOutput = "empty_output", Model,
        "the model answered with neither a tool call nor text";
    ModelStopped = "model_stopped", Model,
        "the model stopped for a reason other than a tool call or an answer";
    Unreachable = "unreachable", Model,
        "the model's endpoint could not be reached (after retries)";
    HttpStatus = "http_status", Model,
        "the model's endpoint answered with an error status (after retries)";
    InvalidHeader = "invalid_header", Model,
        "a header of the model request holds a value that cannot be sent";
    StreamIncomplete = "stream_incomplete", Model,
        "the model's streamed answer ended before it was complete";
    StreamBroken = "stream_broken", Model,
        "the model's streamed answer broke off before its end";
    // The spec as written.
    ToolNotOffered = "tool_not_offered", Spec,
        "the step allows a tool its provider does not offer: the spec names the wrong tool";
    GrantArgUnknown = "grant_arg_unknown", Spec,
        "a grant or plan constrains an argument the tool does not take: a misspelt name that would leave the meant argument open";
    PublishPathMissing = "publish_path_missing", Spec,
        "the publishing tool succeeded but its result has nothing at the spec's `publishes` path";
    // Sequencing.
    StaleObservation = "stale_observation", Orchestration,
        "the provider changed between the observation and the dispatch: observe again";
    StepUnfinished = "step_unfinished", Orchestration,
        "the step had not finished when the run ended";
    StepNotRun = "step_not_run", Orchestration,
        "the step never ran";
    ChildNotAttained = "child_not_attained", Orchestration,
        "a child run the step delegated to did not attain its objective (its own attribution is inside)";
    ChildNotStarted = "child_not_started", Orchestration,
        "a child run could not be started: its decider or providers could not be prepared, or the parent had nothing left to give it";
    ReturnMissing = "return_missing", Orchestration,
        "a child attained but carries no value for an output it must return";
    // The provider.
    ProviderError = "provider_error", Provider,
        "the provider received the call and reported it failed";
    Unavailable = "unavailable", Provider,
        "the provider could not be reached: nothing was sent";
    AnswerLost = "answer_lost", Provider,
        "the call was sent and its answer was lost (the connection dropped, the server died)";
    Timeout = "timeout", Provider,
        "the provider gave no answer within `limits.call_timeout_ms`";
    Deadline = "deadline", Provider,
        "the provider gave no answer before the run's deadline";
    FreshnessTimeout = "freshness_timeout", Provider,
        "the provider did not say in time whether the observation is still current: nothing was sent";
    SchemaUnusable = "schema_unusable", Provider,
        "the tool's input schema cannot be compiled: the tool is never called";
    NotPerformed = "not_performed", Provider,
        "an operator reconciled a call in doubt: the effect did not happen";
    // Authority.
    PolicyDenied = "policy_denied", Policy,
        "an authority denied the call: the provider was not called";
    PolicyIndeterminate = "policy_indeterminate", Policy,
        "an authority could not rule (an evaluation error, missing data): the call is stopped";
    PolicyTimeout = "policy_timeout", Policy,
        "the authority gave no verdict in time: the call is stopped";
    ApprovalRequired = "approval_required", Policy,
        "an authority asks for a person's approval of this call";
    ApprovalDenied = "approval_denied", Policy,
        "a person denied the approval: the same effect stays denied for the rest of the run";
    ApprovalExpired = "approval_expired", Policy,
        "the approval request expired unanswered";
    DeniedAtProvider = "denied_at_provider", Policy,
        "the provider's own authorizer refused the call before anything was sent";
    Halted = "halted", Policy,
        "an interceptor suppressed the call";
    ExecutionControlBlock = "execution_control_block", Policy,
        "the required execution control blocked the commit";
    ExecutionControlIndeterminate = "execution_control_indeterminate", Policy,
        "the required execution control gave no allow (no answer, an error, none configured)";
    // Warrant itself.
    Cancelled = "cancelled", Runtime,
        "an operator cancelled the run";
    DeadlineExceeded = "deadline_exceeded", Runtime,
        "the run's deadline came while the decider was deciding";
    ApprovalUnrecorded = "approval_unrecorded", Runtime,
        "an approval request could not be recorded";
    NoSpec = "no_spec", Runtime,
        "the log holds no spec";
    ReplayDiverged = "replay_diverged", Runtime,
        "a replay asked for a decision the log does not hold at this point";
    ReplayGap = "replay_gap", Runtime,
        "a replay found no recorded answer where the run needs one";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_precision_loss,
        reason = "tests"
    )]

    use super::Code;

    #[test]
    fn every_code_reads_back_and_is_explained() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "{code} listed twice");
            assert_eq!(code.as_str().parse::<Code>().unwrap(), *code);
            assert!(!code.explain().is_empty());
        }
        assert!("no_such_code".parse::<Code>().is_err());
    }
}

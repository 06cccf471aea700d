//! Warrant's application layer: what every front door does — the `warrant` command today, a
//! server, a worker or an embedder next — so that each drives the very same path. Reading a
//! spec (bounded, paths resolved), building deciders (and rebuilding the one a run recorded),
//! reaching providers, starting and re-entering runs, cancelling, answering, reconciling, and
//! the queries over a store (runs, one run, approvals) with one status derivation.
//!
//! It never prints: results are typed rows that serialise for `--json` and that a front door
//! renders as it likes. An error keeps its kind ([`AppError::kind`]): the input was at fault,
//! the thing asked about is not there, the state does not allow it, who asks may not, what it
//! needs cannot be reached now, or something failed on the way — so a front door maps it to
//! an exit code or an HTTP status in one place, never by guessing from the call site.

pub mod grants;
mod load;
mod operator;
mod ops;
mod providers;
pub mod quota;
mod rows;
pub mod schedule;
mod session;
pub mod supervise;
pub mod webhooks;
pub mod worker;

pub use load::{Deciders, load_spec, parse_spec, read_text};
pub use operator::{
    Catalog, ModelEntry, PROVIDERS_VERSION, ProvidersFile, Registry, SecretSource, confine,
    confine_decider, inline_spec,
};
pub use ops::{
    Answers, App, Cancelled, Elsewhere, InDoubt, LOCAL_TENANT, Lane, PendingQuestion, Prepared,
    Reconciled, RunOptions, check_policies, check_policy_files, validate,
};
pub use providers::{
    check_rule_tools, connect, connect_on, connect_with, grant_problems, missing_tools,
    observe_all, start_bound,
};
pub use quota::{Exceeded, Meter, Quota, TenantUse};
pub use rows::{ApprovalRow, CallRow, DoubtRow, LastEvent, RunView, StepRow, Waiting};
pub use session::GoneClient;
pub use supervise::{Counters, Driving, Observer, Supervisor};
pub use warrant_surfaces::Secrets;

/// Largest spec, model table or policy file read (a spec is a page, not a database).
pub const DOCUMENT_BYTES_MAX: u64 = 4 << 20;
/// Largest script read.
pub const SCRIPT_BYTES_MAX: u64 = 16 << 20;

/// Why an operation did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The input is at fault (a spec, a flag, an answer): nothing was run or written.
    #[error("{0}")]
    Invalid(String),
    /// What was asked about is not there (a run, an approval request): nothing was written.
    #[error("{0}")]
    NotFound(String),
    /// The state does not allow it (a request answered already, a call not in doubt, another
    /// writer first): nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// What it needs cannot be reached now (the store): trying again later may succeed.
    #[error("{0}")]
    Unavailable(String),
    /// Something failed on the way (a provider, a log this build cannot read).
    #[error("{0}")]
    Failed(String),
    /// Who asks may not do this (an approver the run's rules do not permit): nothing was
    /// written.
    #[error("{0}")]
    Forbidden(String),
    /// Another process drives the run (it holds the run's lease): nothing was done here.
    #[error("{0}")]
    Held(String),
    /// The run stopped interrupted (a provider that stopped could not be started again):
    /// nothing is lost, and `resume` carries it on.
    #[error("{0}")]
    Interrupted(String),
}

/// What kind of error an [`AppError`] is: what the caller can do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Fix the input.
    Invalid,
    /// Ask about something that is there.
    NotFound,
    /// Look again: the state moved (another process drives the run, it was answered).
    Conflict,
    /// Try again later.
    Unavailable,
    /// Ask someone who may.
    Forbidden,
    /// Something failed: read the message.
    Failed,
}

impl From<warrant_engine::EngineError> for AppError {
    /// An engine's error, by what the caller can do about it. While a run is driven, a
    /// refusal or another writer first is a failure of the drive (events may have been
    /// written before it): only an operator's input is refused as a conflict
    /// ([`AppError::input_refused`]).
    fn from(e: warrant_engine::EngineError) -> AppError {
        use warrant_core::store::StoreError;
        use warrant_engine::EngineError;
        match e {
            EngineError::Held { .. } => AppError::Held(e.to_string()),
            EngineError::Interrupted { .. } => AppError::Interrupted(e.to_string()),
            EngineError::Forbidden(m) => AppError::Forbidden(m),
            EngineError::Store(s @ StoreError::Io(_)) => s.into(),
            EngineError::UnknownRun(_) => AppError::NotFound(e.to_string()),
            other => AppError::Failed(other.to_string()),
        }
    }
}

impl From<warrant_core::store::StoreError> for AppError {
    /// A store's error: another writer first is a conflict, anything else the store being
    /// out of reach.
    fn from(e: warrant_core::store::StoreError) -> AppError {
        use warrant_core::store::StoreError;
        match e {
            StoreError::Conflict { .. } | StoreError::Fenced { .. } => {
                AppError::Conflict(e.to_string())
            }
            StoreError::Io(_) => AppError::Unavailable(e.to_string()),
        }
    }
}

impl AppError {
    /// An engine's refusal of an operator's input (an answer, a reconciliation): the run's
    /// state did not allow it, or another writer went first — nothing was written.
    pub(crate) fn input_refused(e: warrant_engine::EngineError) -> AppError {
        use warrant_core::store::StoreError;
        use warrant_engine::EngineError;
        match e {
            EngineError::Answer(m) | EngineError::Refused(m) => AppError::Conflict(m),
            EngineError::Unfit(m) => AppError::Invalid(m),
            EngineError::Store(s @ (StoreError::Conflict { .. } | StoreError::Fenced { .. })) => {
                s.into()
            }
            other => other.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AppError::Invalid(_) => ErrorKind::Invalid,
            AppError::NotFound(_) => ErrorKind::NotFound,
            AppError::Conflict(_) | AppError::Held(_) => ErrorKind::Conflict,
            AppError::Unavailable(_) | AppError::Interrupted(_) => ErrorKind::Unavailable,
            AppError::Forbidden(_) => ErrorKind::Forbidden,
            AppError::Failed(_) => ErrorKind::Failed,
        }
    }

    /// The same error, of the same kind, with its message rewritten by `f`.
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> AppError {
        match self {
            AppError::Invalid(m) => AppError::Invalid(f(m)),
            AppError::NotFound(m) => AppError::NotFound(f(m)),
            AppError::Conflict(m) => AppError::Conflict(f(m)),
            AppError::Unavailable(m) => AppError::Unavailable(f(m)),
            AppError::Failed(m) => AppError::Failed(f(m)),
            AppError::Forbidden(m) => AppError::Forbidden(f(m)),
            AppError::Held(m) => AppError::Held(f(m)),
            AppError::Interrupted(m) => AppError::Interrupted(f(m)),
        }
    }

    pub(crate) fn invalid(e: impl std::fmt::Display) -> AppError {
        AppError::Invalid(e.to_string())
    }

    pub(crate) fn failed(e: impl std::fmt::Display) -> AppError {
        AppError::Failed(e.to_string())
    }
}

/// What an operation returns.
pub type Result<T, E = AppError> = std::result::Result<T, E>;

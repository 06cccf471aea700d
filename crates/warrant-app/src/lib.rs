//! Warrant's application layer: what every front door does — the `warrant` command today, a
//! server, a worker or an embedder next — so that each drives the very same path. Reading a
//! spec (bounded, paths resolved), building deciders (and rebuilding the one a run recorded),
//! reaching providers, starting and re-entering runs, cancelling, answering, reconciling, and
//! the queries over a store (runs, one run, approvals) with one status derivation.
//!
//! It never prints: results are typed rows that serialise for `--json` and that a front door
//! renders as it likes. Errors say whether the input was at fault ([`AppError::Invalid`]:
//! nothing was run or written), who asked may not ([`AppError::Forbidden`]), or something
//! failed on the way ([`AppError::Failed`]).

mod load;
mod operator;
mod ops;
mod providers;
pub mod quota;
mod rows;
mod session;

pub use load::{Deciders, load_spec, parse_spec, read_text};
pub use operator::{
    Catalog, MODEL_KIND, ModelEntry, PROVIDERS_VERSION, ProvidersFile, Registry, SecretSource,
    confine, confine_decider, inline_spec,
};
pub use ops::{
    App, Cancelled, Prepared, Reconciled, RunOptions, check_policies, check_policy_files, validate,
};
pub use providers::{
    check_rule_tools, connect, connect_with, grant_problems, missing_tools, observe_all,
    start_bound,
};
pub use quota::{Exceeded, Meter, Quota, TenantUse};
pub use rows::{
    ApprovalRow, CallRow, DoubtRow, LastEvent, RunView, StepRow, Waiting, approval_status_name,
};
pub use session::{CLIENT_KIND, GoneClient, is_session};
pub use warrant_surfaces::Secrets;

/// Largest spec, model table or policy file read (a spec is a page, not a database).
pub const DOCUMENT_BYTES_MAX: u64 = 4 << 20;
/// Largest script read.
pub const SCRIPT_BYTES_MAX: u64 = 16 << 20;

/// Why an operation did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The input is at fault (a spec, a flag, a run id, an answer): nothing was run or written.
    #[error("{0}")]
    Invalid(String),
    /// Something failed on the way (a provider, the store, a log this build cannot read).
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

impl From<warrant_engine::EngineError> for AppError {
    /// An engine's error, by what the caller can do about it.
    fn from(e: warrant_engine::EngineError) -> AppError {
        use warrant_engine::EngineError;
        match e {
            EngineError::Held { .. } => AppError::Held(e.to_string()),
            EngineError::Interrupted { .. } => AppError::Interrupted(e.to_string()),
            EngineError::Forbidden(m) => AppError::Forbidden(m),
            other => AppError::Failed(other.to_string()),
        }
    }
}

impl AppError {
    pub(crate) fn invalid(e: impl std::fmt::Display) -> AppError {
        AppError::Invalid(e.to_string())
    }

    pub(crate) fn failed(e: impl std::fmt::Display) -> AppError {
        AppError::Failed(e.to_string())
    }
}

/// What an operation returns.
pub type Result<T, E = AppError> = std::result::Result<T, E>;

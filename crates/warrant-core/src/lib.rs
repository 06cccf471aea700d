//! Warrant's core: the vocabulary of DESIGN.md as types, the `warrant/v1` spec and its
//! validation, the typed event log and the fold that turns it into run state, the terminal
//! predicate, argument provenance, the bounded projection, the run report, and the ports
//! (traits) that adapters implement.
//!
//! ARCHITECTURE INVARIANT: this crate does no IO, spawns nothing and has no async runtime.
//! Time and ids arrive through the [`ports::Clock`] and [`ports::IdGen`] ports; everything an
//! adapter does comes back as data.

pub mod canon;
pub mod check;
pub mod codes;
pub mod compare;
pub mod effects;
pub mod event;
pub mod fold;
pub mod ids;
pub mod metrics;
pub mod notice;
pub mod num;
pub mod ports;
pub mod projection;
pub mod provenance;
pub mod report;
pub mod schedule;
pub mod scope;
pub mod spec;
pub mod standing;
pub mod status;
pub mod store;
pub mod text;
pub mod timer;
pub mod validate;

pub use codes::Code;
pub use event::{Event, EventKind, Layer, Outcome};
pub use fold::RunState;
pub use ids::{CallId, HandleId, RunId, StepId};
pub use spec::Spec;
pub use status::{ApprovalState, DeciderKind, DeciderRef, RunKind, RunStatus};

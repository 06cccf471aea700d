//! The words every front door shares about a run: its status, an approval's, what kind of run
//! it is, and the decider it names. Each is a type with its wire name in one place: a store
//! writes `name()`, a reader parses it back, a front door shows it — and no other code spells
//! the words (`crates/warrant-core/tests/codebase.rs` checks).

use std::fmt;
use std::str::FromStr;

use crate::event::{DeciderIdentity, Outcome};

/// Where a run stands. The log and the runs index hold `running`, `waiting`, `ready` or an
/// outcome's name ([`crate::fold::status_after`]); `queued` and `interrupted` are `running`
/// runs no process drives, as a reader shows them (`warrant_engine::lease::shown_status`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A process drives it (or did, until its lease lapses).
    #[default]
    Running,
    /// Recorded, never taken up: a fleet's server queued it for a worker.
    Queued,
    /// Running, but no process drives it (its process died): resuming it carries it on.
    Interrupted,
    /// Waiting for a person: an effect in doubt, a call held for approval, a child waiting.
    Waiting,
    /// A person answered: resuming carries it on.
    Ready,
    /// Asleep until a time (a timer): the store holds it, no process; whichever process
    /// drives runs then wakes it.
    Sleeping,
    /// Ended: the objective was attained.
    Attained,
    /// Ended: the objective was not attained.
    NotAttained,
    /// Ended: a layer failed.
    Failed,
    /// Ended: an operator cancelled it.
    Cancelled,
    /// Ended: a budget ran out.
    Exhausted,
    /// Ended: a gateway session's client left.
    Closed,
}

impl RunStatus {
    /// Every status, in the order a person reads them.
    pub const ALL: [RunStatus; 12] = [
        RunStatus::Running,
        RunStatus::Queued,
        RunStatus::Interrupted,
        RunStatus::Waiting,
        RunStatus::Ready,
        RunStatus::Sleeping,
        RunStatus::Attained,
        RunStatus::NotAttained,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Exhausted,
        RunStatus::Closed,
    ];

    /// The statuses a store holds (the others are derived from `running` and the lease).
    pub const STORED: [RunStatus; 10] = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Ready,
        RunStatus::Sleeping,
        RunStatus::Attained,
        RunStatus::NotAttained,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Exhausted,
        RunStatus::Closed,
    ];

    /// The statuses of runs that have not ended, as a store holds them.
    pub const LIVE_STORED: [RunStatus; 4] = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Ready,
        RunStatus::Sleeping,
    ];

    /// Its wire name: the one spelling, in events, stores, JSON and on a terminal.
    pub const fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Queued => "queued",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Waiting => "waiting",
            RunStatus::Ready => "ready",
            RunStatus::Sleeping => "sleeping",
            RunStatus::Attained => "attained",
            RunStatus::NotAttained => "not_attained",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Exhausted => "exhausted",
            RunStatus::Closed => "closed",
        }
    }

    /// The same as [`RunStatus::name`].
    pub const fn as_str(self) -> &'static str {
        self.name()
    }

    /// The status of a run that ended with `outcome`.
    pub const fn ended(outcome: &Outcome) -> RunStatus {
        match outcome {
            Outcome::Attained => RunStatus::Attained,
            Outcome::NotAttained { .. } => RunStatus::NotAttained,
            Outcome::Failed { .. } => RunStatus::Failed,
            Outcome::Cancelled { .. } => RunStatus::Cancelled,
            Outcome::Exhausted { .. } => RunStatus::Exhausted,
            Outcome::Closed { .. } => RunStatus::Closed,
        }
    }

    /// Whether the run has not ended.
    pub const fn is_live(self) -> bool {
        matches!(
            self,
            RunStatus::Running
                | RunStatus::Queued
                | RunStatus::Interrupted
                | RunStatus::Waiting
                | RunStatus::Ready
                | RunStatus::Sleeping
        )
    }

    /// Whether resuming carries the run on (as a reader shows it: a person answered, or no
    /// process drives it).
    pub const fn is_resumable(self) -> bool {
        matches!(
            self,
            RunStatus::Ready | RunStatus::Queued | RunStatus::Interrupted
        )
    }

    /// Whether a store holds it (`queued` and `interrupted` are derived).
    pub const fn is_stored(self) -> bool {
        !matches!(self, RunStatus::Queued | RunStatus::Interrupted)
    }
}

/// A word that names no status (what a flag, a query or a store row said).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no {what} `{given}` (the {what}es: {known})")]
pub struct UnknownName {
    what: &'static str,
    given: String,
    known: String,
}

impl UnknownName {
    fn new<'a>(what: &'static str, given: &str, known: impl Iterator<Item = &'a str>) -> Self {
        UnknownName {
            what,
            given: crate::text::echo(given).into_owned(),
            known: known.collect::<Vec<_>>().join(", "),
        }
    }
}

impl FromStr for RunStatus {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<RunStatus, UnknownName> {
        RunStatus::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| UnknownName::new("status", s, RunStatus::ALL.iter().map(|r| r.name())))
    }
}

/// Where an approval request stands, by name (the fold's [`crate::fold::ApprovalStatus`]
/// carries the details).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Nobody has answered it (enough people, for one that needs several).
    Pending,
    /// Approved.
    Approved,
    /// Denied.
    Denied,
    /// Unanswered past its time.
    Expired,
    /// The run ended before anyone answered.
    Withdrawn,
}

impl ApprovalState {
    /// Every state.
    pub const ALL: [ApprovalState; 5] = [
        ApprovalState::Pending,
        ApprovalState::Approved,
        ApprovalState::Denied,
        ApprovalState::Expired,
        ApprovalState::Withdrawn,
    ];

    /// Its wire name.
    pub const fn name(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied => "denied",
            ApprovalState::Expired => "expired",
            ApprovalState::Withdrawn => "withdrawn",
        }
    }
}

/// A word of the vocabulary: shown as its wire name (padded like any text in a table), and
/// equal to that name.
macro_rules! wire_word {
    ($word:ty) => {
        impl fmt::Display for $word {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.name())
            }
        }

        impl PartialEq<str> for $word {
            fn eq(&self, other: &str) -> bool {
                self.name() == other
            }
        }

        impl PartialEq<&str> for $word {
            fn eq(&self, other: &&str) -> bool {
                self.name() == *other
            }
        }
    };
}

wire_word!(RunStatus);
wire_word!(ApprovalState);

/// What kind of run it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// A run a decider drives (a script, a model).
    Run,
    /// A gateway session: an outside MCP client's calls, carried through the Bridge.
    Session,
}

impl RunKind {
    /// The kind of a run decided by `decider` (`kind:name`, as a run summary shows it).
    pub fn of_decider(decider: &str) -> RunKind {
        match DeciderRef::parse(decider).kind {
            DeciderKind::Client => RunKind::Session,
            _ => RunKind::Run,
        }
    }
}

/// The kinds of decider a reference names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeciderKind {
    /// `scripted:PATH`: a script of decisions.
    Scripted,
    /// `model:NAME`: a model the operator registered.
    Model,
    /// `mcp-client:NAME`: an outside MCP client, through a gateway session.
    Client,
    /// Anything else: a live provider (`openai`, `anthropic`, ...), `replay`, `bench`.
    Other(String),
}

impl DeciderKind {
    /// Its wire name.
    pub fn name(&self) -> &str {
        match self {
            DeciderKind::Scripted => "scripted",
            DeciderKind::Model => "model",
            DeciderKind::Client => "mcp-client",
            DeciderKind::Other(kind) => kind,
        }
    }

    fn parse(kind: &str) -> DeciderKind {
        match kind {
            "scripted" => DeciderKind::Scripted,
            "model" => DeciderKind::Model,
            "mcp-client" => DeciderKind::Client,
            other => DeciderKind::Other(other.to_owned()),
        }
    }
}

/// A decider as a spec, a flag or a run summary names it: `kind:argument` (a script's path, a
/// model, a client's name). Parsed here and shown here, nowhere else.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeciderRef {
    /// What kind of decider.
    pub kind: DeciderKind,
    /// What follows the first `:` (empty when nothing does).
    pub arg: String,
}

impl DeciderRef {
    /// Reads `kind:argument` (the argument may hold further `:`). Text with no `:` names no
    /// kind this build knows: it is [`DeciderKind::Other`], whatever it says.
    pub fn parse(text: &str) -> DeciderRef {
        match text.split_once(':') {
            Some((kind, arg)) => DeciderRef {
                kind: DeciderKind::parse(kind),
                arg: arg.to_owned(),
            },
            None => DeciderRef {
                kind: DeciderKind::Other(text.to_owned()),
                arg: String::new(),
            },
        }
    }

    /// A reference of `kind` to `arg`.
    pub fn new(kind: DeciderKind, arg: impl Into<String>) -> DeciderRef {
        DeciderRef {
            kind,
            arg: arg.into(),
        }
    }

    /// `scripted:PATH`.
    pub fn scripted(path: impl fmt::Display) -> DeciderRef {
        DeciderRef::new(DeciderKind::Scripted, path.to_string())
    }

    /// The reference to the decider a run recorded.
    pub fn recorded(identity: &DeciderIdentity) -> DeciderRef {
        DeciderRef::new(DeciderKind::parse(&identity.kind), identity.name.clone())
    }
}

impl fmt::Display for DeciderRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.name(), self.arg)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn every_status_reads_back_from_its_name_and_an_unknown_one_lists_them() {
        for s in RunStatus::ALL {
            assert_eq!(s.name().parse::<RunStatus>().unwrap(), s);
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
            assert_eq!(s.is_stored(), RunStatus::STORED.contains(&s));
        }
        let e = "runing".parse::<RunStatus>().unwrap_err().to_string();
        assert!(
            e.contains("`runing`") && e.contains("not_attained, failed"),
            "{e}"
        );
        assert!(RunStatus::LIVE_STORED.iter().all(|s| s.is_live()));
        assert!(!RunStatus::Closed.is_live() && RunStatus::Queued.is_resumable());
    }

    #[test]
    fn an_outcome_names_its_status() {
        let o = Outcome::Attained;
        assert_eq!(RunStatus::ended(&o).name(), o.name());
    }

    #[test]
    fn a_decider_reference_reads_and_shows_the_same() {
        for text in [
            "scripted:a/b.json",
            "model:m",
            "mcp-client:x:y",
            "openai:gpt?t=1",
            "bench",
        ] {
            let r = DeciderRef::parse(text);
            let shown = r.to_string();
            assert_eq!(shown.trim_end_matches(':'), text);
        }
        assert_eq!(RunKind::of_decider("mcp-client:claude"), RunKind::Session);
        assert_eq!(RunKind::of_decider("mcp-clientx:claude"), RunKind::Run);
        assert_eq!(RunKind::of_decider("scripted:mcp-client:x"), RunKind::Run);
        // No `:`, no kind: not a script with an empty path, not a session.
        assert_eq!(RunKind::of_decider("mcp-client"), RunKind::Run);
        assert_eq!(
            DeciderRef::parse("scripted").kind,
            DeciderKind::Other("scripted".into())
        );
        // A status pads like the word it is, in a table.
        assert_eq!(format!("[{:<9}]", RunStatus::Ready), "[ready    ]");
    }
}

//! The log consistency check: what every run's log must satisfy, whoever wrote it.

use crate::event::Event;
use crate::fold::{FoldError, RunState};

/// Checks a whole log: gapless sequence from 1, `run_started` first, nothing after
/// `run_finished`, every call started exactly once and finished at most once (exactly once
/// when the run has ended), no provider result without a dispatch intent, carried values
/// lifted only from successful results; a call left unfinished by a finished run must be
/// recorded in doubt. Returns the folded state.
pub fn check_log<'a>(events: impl IntoIterator<Item = &'a Event>) -> Result<RunState, FoldError> {
    let mut state = RunState::default();
    let mut last: Option<&Event> = None;
    for e in events {
        state.apply(e)?;
        last = Some(e);
    }
    if state.outcome.is_some()
        && let Some(c) = state
            .calls
            .iter()
            .find(|c| c.status.is_none() && !c.in_doubt)
    {
        let seq = last.map_or(0, |e| e.seq);
        return Err(FoldError {
            seq,
            kind: "run_finished",
            message: format!("call {} started but never finished", c.id),
        });
    }
    Ok(state)
}

//! Gateway sessions as the application layer knows them: a run whose decider was an outside
//! MCP client (`mcp-client:<name>`). The client cannot be rebuilt: a session re-entered after
//! its gateway stopped is closed at once by [`GoneClient`].

use warrant_core::event::DeciderIdentity;
use warrant_core::ports::{BoxFuture, CancelRequest, DecideError, Decided, Decider};
use warrant_core::projection::Projection;

/// The client of a session re-entered by another process (or after a crash): gone. The run
/// ends `closed` at its next step; it decides nothing.
#[derive(Debug)]
pub struct GoneClient {
    identity: DeciderIdentity,
}

impl GoneClient {
    /// The gone client that recorded `identity`.
    pub fn new(identity: DeciderIdentity) -> GoneClient {
        GoneClient { identity }
    }
}

impl Decider for GoneClient {
    fn identity(&self) -> DeciderIdentity {
        self.identity.clone()
    }

    fn decide(&self, _projection: Projection) -> BoxFuture<'_, Result<Decided, DecideError>> {
        Box::pin(std::future::ready(Err(DecideError::new(
            warrant_core::codes::Code::Cancelled,
            "the session's client is gone",
        ))))
    }

    fn closed(&self) -> Option<CancelRequest> {
        Some(CancelRequest {
            by: "gateway".to_owned(),
            reason: "the session's client is gone (the process serving it stopped): the session ends here, nothing it asked for is repeated".to_owned(),
            close: true,
        })
    }
}

//! Several providers joined into one surface: the tools of every member offered together,
//! each named `<member>.<tool>`, so a step can act on more than one provider.
//!
//! The joined version is the members' versions in order, separated by `|`: a handle is
//! current exactly while every member's observation it came from is. A call goes to the
//! member its name says, with the member's own tool name and version; recovery, lookups and
//! cancellations are the member's.

use std::sync::Arc;

use warrant_core::event::ActionRecord;
use warrant_core::ids::{CallId, HandleId};
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Recovery, Surface, SurfaceError,
};

/// Members, in the order the spec names them.
pub struct JoinedSurface {
    members: Vec<(String, Arc<dyn Surface>)>,
}

impl JoinedSurface {
    /// Joins `members` (name, surface).
    pub fn new(members: Vec<(String, Arc<dyn Surface>)>) -> JoinedSurface {
        JoinedSurface { members }
    }

    /// The member a joined tool name belongs to (its position and surface), and the member's
    /// own tool name.
    fn route<'s, 'a>(&'s self, tool: &'a str) -> Option<(usize, &'s Arc<dyn Surface>, &'a str)> {
        let (member, inner) = tool.split_once('.')?;
        let (i, (_, surface)) = self
            .members
            .iter()
            .enumerate()
            .find(|(_, (n, _))| n == member)?;
        Some((i, surface, inner))
    }

    /// The member's part of a joined version.
    fn part<'a>(&self, version: &'a str, i: usize) -> Option<&'a str> {
        let parts: Vec<&str> = version.split('|').collect();
        if parts.len() != self.members.len() {
            return None;
        }
        parts.get(i).copied()
    }

    /// The member a call goes to, and the call as the member must see it.
    fn for_member(
        &self,
        call: Invocation,
    ) -> Result<(&Arc<dyn Surface>, Invocation), SurfaceError> {
        let (i, member, inner) = self.route(call.tool()).ok_or_else(|| {
            SurfaceError::invalid(format!(
                "`{}` is not `<member>.<tool>` of this join",
                call.tool()
            ))
        })?;
        let version = self.part(call.version(), i).unwrap_or_default();
        Ok((member, call.for_member(inner, version)))
    }

    async fn observe_all(&self) -> Result<Observation, SurfaceError> {
        let mut versions = Vec::with_capacity(self.members.len());
        let mut actions: Vec<ActionRecord> = Vec::new();
        for (name, member) in &self.members {
            let seen = member.observe().await.map_err(|e| SurfaceError {
                message: format!("member `{name}`: {}", e.message),
                ..e
            })?;
            if seen.version.contains('|') {
                return Err(SurfaceError::rejected(format!(
                    "member `{name}` has a version with `|`, which a join cannot carry"
                )));
            }
            versions.push(seen.version);
            actions.extend(seen.actions.iter().map(|a| ActionRecord {
                name: format!("{name}.{}", a.name),
                ..a.clone()
            }));
        }
        Ok(Observation {
            version: versions.join("|"),
            actions: actions.into(),
            page: None,
        })
    }

    async fn current(&self, version: &str) -> bool {
        for (i, (_, member)) in self.members.iter().enumerate() {
            let Some(part) = self.part(version, i) else {
                return false;
            };
            if !member.is_current(part).await {
                return false;
            }
        }
        true
    }
}

impl Surface for JoinedSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        Box::pin(self.observe_all())
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        match self.for_member(call) {
            Ok((member, call)) => member.invoke(call),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(self.current(version))
    }

    /// Starts again every member that stopped (a running one has nothing to do); the first
    /// that cannot be started is the join's error. Shutting down is each member's own: a join
    /// only shares their connections.
    fn revive(&self) -> BoxFuture<'_, warrant_core::ports::Restart> {
        Box::pin(async move {
            let mut attempts = 0;
            for (name, member) in &self.members {
                let restart = member.revive().await;
                attempts += restart.attempts;
                if let Some(mut e) = restart.error {
                    e.message = format!("`{name}`: {}", e.message);
                    return warrant_core::ports::Restart {
                        attempts,
                        error: Some(e),
                    };
                }
            }
            warrant_core::ports::Restart {
                attempts,
                error: None,
            }
        })
    }

    fn retire(&self, handles: &[HandleId]) {
        for (_, member) in &self.members {
            member.retire(handles);
        }
    }

    fn cancel(&self, call: CallId) {
        for (_, member) in &self.members {
            member.cancel(call);
        }
    }

    /// What the member the call went to kept of it (the others kept nothing).
    fn asked(
        &self,
        run: &warrant_core::ids::RunId,
        call: CallId,
    ) -> Vec<warrant_core::ports::Asked> {
        self.members
            .iter()
            .flat_map(|(_, member)| member.asked(run, call))
            .collect()
    }

    fn on_change(&self, changed: Arc<dyn Fn() + Send + Sync>) {
        for (_, member) in &self.members {
            member.on_change(changed.clone());
        }
    }

    fn unsupported(&self) -> Vec<String> {
        self.members
            .iter()
            .flat_map(|(name, m)| {
                m.unsupported()
                    .into_iter()
                    .map(move |u| format!("{name}.{u}"))
            })
            .collect()
    }

    fn recovery(&self, tool: &str) -> Recovery {
        match self.route(tool) {
            Some((_, member, inner)) => member.recovery(inner),
            None => Recovery::InDoubt,
        }
    }

    fn lookup(&self, call: Invocation) -> BoxFuture<'_, Result<Option<CallOutput>, SurfaceError>> {
        match self.for_member(call) {
            Ok((member, call)) => member.lookup(call),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use warrant_core::event::Effect;
    use warrant_core::ids::{CallId, RunId};
    use warrant_core::ports::{Invocation, Surface};

    use super::JoinedSurface;
    use crate::ReferenceSurface;
    use crate::demo::{Cafe, Gallery};

    fn joined() -> (JoinedSurface, Arc<Cafe>) {
        let cafe = Arc::new(Cafe::default());
        let members: Vec<(String, Arc<dyn Surface>)> = vec![
            ("cafe".into(), Arc::new(ReferenceSurface::new(cafe.clone()))),
            (
                "gallery".into(),
                Arc::new(ReferenceSurface::new(Arc::new(Gallery))),
            ),
        ];
        (JoinedSurface::new(members), cafe)
    }

    /// A member whose provider is down: the join passes its error on with its kind (nothing
    /// was sent), naming the member.
    #[tokio::test]
    async fn a_members_failure_keeps_its_kind() {
        struct Down;
        impl crate::Provider for Down {
            fn actions(&self) -> Vec<crate::ActionSpec> {
                vec![crate::ActionSpec {
                    name: "t".into(),
                    effect: Effect::Commit,
                    description: String::new(),
                    input_schema: json!({"type": "object"}),
                }]
            }
            fn state_version(&self) -> u64 {
                0
            }
            fn call(
                &self,
                _: &str,
                _: &serde_json::Value,
                _: &str,
            ) -> Result<serde_json::Value, crate::ProviderError> {
                Err(crate::ProviderError::Unavailable("down".into()))
            }
        }
        let members: Vec<(String, Arc<dyn Surface>)> =
            vec![("d".into(), Arc::new(ReferenceSurface::new(Arc::new(Down))))];
        let j = JoinedSurface::new(members);
        let seen = j.observe().await.unwrap();
        let err = j
            .invoke(Invocation::testing(
                RunId("r".into()),
                CallId(1),
                "d.t",
                json!({}),
                Effect::Commit,
                seen.version,
            ))
            .await
            .unwrap_err();
        assert_eq!(err.kind, warrant_core::ports::SurfaceErrorKind::NotSent);
        let bad = j
            .invoke(Invocation::testing(
                RunId("r".into()),
                CallId(2),
                "nobody.t",
                json!({}),
                Effect::Commit,
                String::new(),
            ))
            .await
            .unwrap_err();
        assert_eq!(bad.kind, warrant_core::ports::SurfaceErrorKind::Invalid);
    }

    #[tokio::test]
    async fn members_tools_are_offered_together_and_calls_reach_their_member() {
        let (j, cafe) = joined();
        let seen = j.observe().await.unwrap();
        let names: Vec<&str> = seen.actions.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cafe.read_menu",
                "cafe.order_latte",
                "gallery.check_design_drift"
            ]
        );
        let out = j
            .invoke(Invocation::testing(
                RunId("r".into()),
                CallId(1),
                "cafe.order_latte",
                json!({"size": "small"}),
                Effect::Commit,
                seen.version.clone(),
            ))
            .await
            .unwrap();
        assert_eq!(out.output["size"], "small");
        assert_eq!(cafe.orders().len(), 1);
        // The cafe's state moved: a handle from before is stale, though the gallery's is not.
        assert!(!j.is_current(&seen.version).await);
        let again = j.observe().await.unwrap();
        assert!(j.is_current(&again.version).await);
        assert!(!j.is_current("one-part-only").await);
    }
}

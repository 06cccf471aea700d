//! A child's process group: ended as a whole (a stdio MCP server and what it started, a
//! browser and its renderers), at once when dropped, so nothing a provider started outlives it.

/// How long a process group has to exit on its own, and again after SIGTERM.
#[cfg_attr(
    not(feature = "mcp"),
    allow(dead_code, reason = "only a stdio MCP server is asked to end in order")
)]
pub(crate) const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(1500);

/// How often a process group is looked at while it is given time to exit.
pub(crate) const EXIT_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The process group a child leads. Dropped, it kills whatever of the group is still there
/// (the child, and anything it started), at once and without waiting on a runtime: a run that
/// ends, a handshake that fails or a process that shuts down leaves nothing behind.
#[derive(Debug)]
pub(crate) struct ProcessGroup(nix::unistd::Pid);

impl ProcessGroup {
    pub(crate) fn of(pid: u32) -> ProcessGroup {
        ProcessGroup(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(0)))
    }

    /// The group's id (its leader's pid).
    #[cfg(feature = "webmcp")]
    pub(crate) fn pid(&self) -> u32 {
        u32::try_from(self.0.as_raw()).unwrap_or(0)
    }

    /// Whether any process of the group is still there (an exited one not yet reaped
    /// counts).
    pub(crate) fn alive(&self) -> bool {
        self.0.as_raw() > 0 && nix::sys::signal::killpg(self.0, None).is_ok()
    }

    /// Whether the group's leader has exited (gone, or exited and not yet reaped).
    #[cfg_attr(
        not(feature = "mcp"),
        allow(dead_code, reason = "only a stdio MCP server is asked to end in order")
    )]
    pub(crate) fn leader_exited(&self) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.0)) else {
            return true;
        };
        // `pid (name) STATE ...`: the name may hold anything, so the state follows its last
        // parenthesis.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| matches!(state, 'Z' | 'X'))
    }

    /// Waits up to `grace` for the group to be gone; says whether it is.
    #[cfg_attr(
        not(feature = "mcp"),
        allow(dead_code, reason = "only a stdio MCP server is asked to end in order")
    )]
    pub(crate) async fn gone_within(&self, grace: std::time::Duration) -> bool {
        let until = tokio::time::Instant::now() + grace;
        while self.alive() {
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
        true
    }

    /// The end of a child asked to exit (a stdio server whose input was closed, MCP's
    /// order): a wait, then SIGTERM and another wait, then SIGKILL — to every process of the
    /// group.
    #[cfg_attr(
        not(feature = "mcp"),
        allow(dead_code, reason = "only a stdio MCP server is asked to end in order")
    )]
    pub(crate) async fn end(&self) {
        if self.gone_within(EXIT_GRACE).await {
            return;
        }
        let _ = nix::sys::signal::killpg(self.0, nix::sys::signal::Signal::SIGTERM);
        if !self.gone_within(EXIT_GRACE).await {
            let _ = nix::sys::signal::killpg(self.0, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // A group that still has a member cannot have had its id reused: it is this child's.
        if self.0.as_raw() > 0 && nix::sys::signal::killpg(self.0, None).is_ok() {
            let _ = nix::sys::signal::killpg(self.0, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

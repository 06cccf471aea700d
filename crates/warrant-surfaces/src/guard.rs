//! The guard a stdio server runs under, so it ends with the process that started it, also
//! when that process is killed outright (SIGKILL leaves it no time to end anything).
//!
//! A front door that starts servers ([`guard_servers_with`]) starts each one as
//! `GUARD... PARENT -- PROGRAM ARGS...`: the guard (Warrant's own binary, `warrant
//! __guard`) leads the server's process group, starts the server in it with its own standard
//! streams, and waits. When the server exits, the guard exits with its code. When its parent
//! is no longer `PARENT` (it died, and the guard was handed to another), it ends the group as
//! MCP says: SIGTERM, a wait, then SIGKILL. It reads and writes nothing of the server's
//! streams.

use std::ffi::OsString;
use std::sync::OnceLock;
use std::time::Duration;

/// The program (and its first arguments) stdio servers are started under, when set.
static GUARD: OnceLock<Vec<OsString>> = OnceLock::new();

/// How often the guard looks at its server and its parent.
const LOOK: Duration = Duration::from_millis(100);

/// How long the group has to end after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(1500);

/// Starts every stdio server from now on under `guard` (a program and its first arguments;
/// the CLI gives its own binary and `__guard`). Set once; later calls change nothing.
pub fn guard_servers_with(guard: Vec<OsString>) {
    let _ = GUARD.set(guard);
}

/// `program args` as it is to be started: under the guard when one is set.
pub(crate) fn guarded(program: &str, args: &[String]) -> (OsString, Vec<OsString>) {
    match GUARD.get().and_then(|g| g.split_first()) {
        Some((guard, first)) => {
            let mut all: Vec<OsString> = first.to_vec();
            all.push(std::process::id().to_string().into());
            all.push("--".into());
            all.push(program.into());
            all.extend(args.iter().map(OsString::from));
            (guard.clone(), all)
        }
        None => (program.into(), args.iter().map(OsString::from).collect()),
    }
}

/// The guard itself: `args` are `PARENT -- PROGRAM ARGS...`. Returns the exit code.
pub fn guard_main(args: &[OsString]) -> i32 {
    let (parent, command) = match args {
        [parent, dashes, command @ ..] if dashes == "--" && !command.is_empty() => {
            (parent.to_str().and_then(|p| p.parse::<u32>().ok()), command)
        }
        _ => (None, args),
    };
    let (Some(parent), Some((program, rest))) = (parent, command.split_first()) else {
        eprintln!("usage: warrant __guard PARENT_PID -- PROGRAM [ARGS...]");
        return 2;
    };
    let mut child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("cannot start `{}`: {e}", program.to_string_lossy());
            return 127;
        }
    };
    // Only the server holds the pipes to Warrant now: when it dies, Warrant's writes fail at
    // once and its reads end, instead of waiting for the guard to notice.
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = nix::unistd::dup2_stdin(&null);
        let _ = nix::unistd::dup2_stdout(&null);
    }
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return exit_code(status),
            Ok(None) => {}
            Err(_) => return 1,
        }
        if std::os::unix::process::parent_id() != parent {
            end_group(&mut child);
            return 1;
        }
        std::thread::sleep(LOOK);
    }
}

/// The code a guard exits with for its server's status (128 + the signal that ended it).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Ends the guard's own process group (the server and whatever it started): SIGTERM to each
/// of them, up to [`TERM_GRACE`] for them to go, then SIGKILL to the whole group, which ends
/// the guard too.
fn end_group(child: &mut std::process::Child) {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::{Pid, getpgid, getpgrp, getpid};
    let (group, me) = (getpgrp(), getpid());
    // The others of the group, by their ids in /proc (the guard itself would die of SIGTERM
    // before it could send SIGKILL).
    let others = || -> Vec<Pid> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|d| d.file_name().to_str()?.parse::<i32>().ok())
            .map(Pid::from_raw)
            .filter(|&pid| pid != me && getpgid(Some(pid)) == Ok(group))
            .collect()
    };
    for pid in others() {
        let _ = kill(pid, Signal::SIGTERM);
    }
    let mut waited = Duration::ZERO;
    while waited < TERM_GRACE {
        // Reaped, the server no longer counts.
        let _ = child.try_wait();
        if others().is_empty() {
            break;
        }
        std::thread::sleep(LOOK);
        waited += LOOK;
    }
    let _ = killpg(group, Signal::SIGKILL);
}

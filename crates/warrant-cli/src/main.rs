//! `warrant`: run governable agent trajectories, inspect their evidence, compare deciders.

// Stdout goes through `out!`/`outln!`, which end quietly on a closed pipe; `println!` panics.
#![deny(clippy::print_stdout)]

/// Writes to stdout; a closed pipe (`warrant events RUN | head`) ends the program quietly
/// instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(&format!($($arg)*))
    };
}

/// `out!` with a newline.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::write_stdout(&format!("{}\n", format!($($arg)*)))
    };
}

/// Writes to stderr, sanitised like stdout, ignoring a closed stream.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::write_stderr(&format!("{}\n", format!($($arg)*)))
    };
}

mod bench;
mod cli;
mod commands;
mod progress;
mod store;
mod version;

use std::process::ExitCode;

/// mimalloc rather than the system allocator: a step allocates and frees many small values
/// (events, JSON, projections), and glibc's malloc spent about 40 % of a benchmark step's CPU
/// in its own bookkeeping (`bench/profile` shows where a step's time goes). Built without
/// transparent huge pages (`no_thp`): a huge page is zeroed whole on first touch, and on a
/// virtual machine that returns free memory to its host each one is a host fault too, which
/// made a benchmark step cost 2-3x more CPU whenever the memory it grew into was fresh.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser as _;

/// Exit codes, documented in `--help` and the README.
pub mod exit {
    /// The run attained its objective (or the command succeeded).
    pub const ATTAINED: u8 = 0;
    /// The run ended not attained, failed, cancelled or exhausted; or a check failed.
    pub const NOT_ATTAINED: u8 = 1;
    /// Invalid input or usage: nothing was run or written.
    pub const INVALID: u8 = 2;
    /// The run is waiting (an approval or a reconciliation).
    pub const WAITING: u8 = 3;
    /// Another process drives the run: nothing was done here.
    pub const DRIVEN_ELSEWHERE: u8 = 4;
    /// The run stopped interrupted (a provider could not be started again): nothing is lost;
    /// `warrant resume RUN` carries it on.
    pub const INTERRUPTED: u8 = 5;
}

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl Failure {
    /// Invalid input or usage (exit 2).
    pub fn invalid(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: exit::INVALID,
            error: error.into(),
        }
    }
    /// A failure with its own exit code (see [`exit`]).
    pub fn with_code(code: u8, error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code,
            error: error.into(),
        }
    }
    /// Anything else that stops the command (exit 1).
    pub fn failed(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: exit::NOT_ATTAINED,
            error: error.into(),
        }
    }
}

/// Writes `text` to stdout, sanitised: whatever a model, a tool or a user wrote can hold
/// escape sequences, and none reaches the terminal as one. On a closed pipe the reader is
/// gone: stop without an error.
pub fn write_stdout(text: &str) {
    use std::io::Write as _;
    let text = warrant_core::text::sanitize(text);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(std::io::stderr().lock(), "error: writing to stdout: {e}");
        std::process::exit(i32::from(exit::NOT_ATTAINED));
    }
}

/// Writes `text` to stderr, sanitised; a closed stderr is ignored.
pub fn write_stderr(text: &str) {
    use std::io::Write as _;
    let text = warrant_core::text::sanitize(text);
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// What `--json` prints for a command that failed: `{"error": {"exit_code", "message"}}`.
fn print_json_error(code: u8, message: &str) {
    let error = serde_json::json!({"error": {"exit_code": code, "message": message}});
    write_stdout(&format!("{error}\n"));
}

/// What the user gave, as text, for [`warrant_core::text::bound_echoes`]: the command line's
/// arguments and the store named in the environment.
#[expect(
    clippy::disallowed_methods,
    reason = "the CLI owns its environment: `WARRANT_STORE` is what the user gave as `--store`"
)]
fn given(args: &[std::ffi::OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .chain(std::env::var("WARRANT_STORE").ok())
        .collect()
}

fn main() -> ExitCode {
    // `warrant __guard PARENT -- PROGRAM ARGS...`: the guard a stdio MCP server runs under
    // (not a command for people: Warrant starts it).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "__guard") {
        let code = warrant_surfaces::guard::guard_main(args.get(2..).unwrap_or_default());
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // Every stdio server this process starts runs under that guard, so none outlives it.
    if let Ok(me) = std::env::current_exe() {
        warrant_surfaces::guard::guard_servers_with(vec![me.into(), "__guard".into()]);
    }
    // `--json` (before any `--`) always prints a JSON value: an error too.
    let json = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json");
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout; usage errors to stderr, exit 2. Either way what
            // the user typed is shown, never obeyed.
            let text = e.render().to_string();
            if e.use_stderr() {
                let text = warrant_core::text::bound_echoes(&text, &given(&args));
                write_stderr(&text);
                if json {
                    print_json_error(exit::INVALID, text.trim_end());
                }
                return ExitCode::from(exit::INVALID);
            }
            write_stdout(&text);
            return ExitCode::from(exit::ATTAINED);
        }
    };
    // Two async threads, or what `bench --threads` asks for (one: a current-thread runtime,
    // the store's writer on a thread of its own).
    let threads = match &cli.command {
        cli::Command::Bench(args) => args.threads,
        _ => 2,
    };
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads as usize);
        b
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::NOT_ATTAINED);
        }
    };
    let ended = runtime.block_on(commands::dispatch(cli));
    for warning in store::failed_copies() {
        errln!("{warning}");
    }
    match ended {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            // What the user gave is shown back cut to a bound, however long it was.
            let whole = format!("{:#}", f.error);
            let message = warrant_core::text::bound_echoes(&whole, &given(&args));
            errln!("error: {message}");
            if json {
                print_json_error(f.code, &message);
            }
            ExitCode::from(f.code)
        }
    }
}

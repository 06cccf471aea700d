//! The server's own logs: `tracing` events on stderr, one line each, as text or JSON, filtered
//! by `--log` / `WARRANT_LOG` (`info` by default; e.g. `debug` for every request answered, or
//! `warrant_server=debug,warn`). They say what the server did; the event log stays the record
//! of what runs did.

use std::io::Write as _;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `2026-12-01T18:00:00.000Z  INFO warrant_server::runner: run started run=... spec=...`
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

/// The filter when none is given: this program's `info`, and only the warnings of the MCP SDK
/// (whose `info` lines, a few for every provider process started and stopped, would drown a
/// worker's log).
pub const DEFAULT_FILTER: &str = "info,rmcp=warn";

/// Installs the logs for this process: `filter` in `--log`'s syntax (`LEVEL` or
/// `TARGET=LEVEL,...`). A filter that does not parse is an error naming it.
pub fn init(format: LogFormat, filter: Option<&str>) -> Result<(), String> {
    let text = filter.unwrap_or(DEFAULT_FILTER);
    let targets: Targets = text.parse().map_err(|e| {
        format!(
            "--log `{text}` is not a log filter ({e}): write a level (`info`) or `target=level,...`"
        )
    })?;
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(Stderr);
    let registry = tracing_subscriber::registry().with(targets);
    let installed = match format {
        LogFormat::Text => registry.with(fmt).try_init(),
        LogFormat::Json => registry.with(fmt.json()).try_init(),
    };
    installed.map_err(|e| format!("cannot install the logs: {e}"))
}

/// Stderr, one event a line: what a model or a provider wrote may be in a field, so control
/// characters are escaped and a newline inside an event cannot start a forged line.
struct Stderr;

/// The line being written for one event.
struct Line(Vec<u8>);

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line(Vec::with_capacity(256))
    }
}

impl std::io::Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        let line = one_line(&text);
        if !line.is_empty() {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
}

/// `text` as one sanitised line ending in a newline (inner newlines written `\n`).
fn one_line(text: &str) -> String {
    let body = text.trim_end_matches('\n');
    if body.is_empty() {
        return String::new();
    }
    let body = crate::hidden::redact(body);
    let mut line = warrant_core::text::sanitize(&body).replace('\n', "\\n");
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn an_event_is_one_line_with_nothing_a_terminal_obeys() {
        assert_eq!(one_line("run ended\n"), "run ended\n");
        assert_eq!(
            one_line("error=boom\n2026 INFO forged\x1b[2J\n"),
            "error=boom\\n2026 INFO forged\\u001b[2J\n"
        );
        assert_eq!(one_line(""), "");
    }
}

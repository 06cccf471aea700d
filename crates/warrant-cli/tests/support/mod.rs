//! What the `warrant` binary's test files share.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]
#![allow(dead_code, reason = "each test file uses part of it")]

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fresh directory and the path of a store file in it (created by the first command that
/// writes).
pub fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    (dir, store)
}

/// Runs `warrant ARGS` in the repository's root against `store`.
pub fn warrant(store: &Path, args: &[&str]) -> std::process::Output {
    warrant_in(&root(), store, args)
}

/// Runs `warrant ARGS` in `cwd` against `store`.
pub fn warrant_in(cwd: &Path, store: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(cwd)
        .env("WARRANT_STORE", store)
        .env_remove("WARRANT_FAULT")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs `warrant ARGS` in the repository's root with `input` on its standard input.
pub fn warrant_with_stdin(store: &Path, args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", store)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Stdout parsed as one JSON document.
pub fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

/// Runs the pay-rent example with its transfer held for approval: the run waits (exit 3).
/// Returns its `--json` summary (`run_id`, `approvals`, ...).
pub fn ask_transfer(store: &Path) -> serde_json::Value {
    let run = warrant(
        store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--ask-tool",
            "transfer",
            "--json",
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(3), "waiting: {}", stderr(&run));
    json(&run)
}

/// A `warrant serve` process, killed when dropped.
pub struct Served {
    /// The process.
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `warrant serve` on a free loopback port over `store`, reading specs from `specs`,
/// with `extra` arguments and, when given, the fault point `fault`; returns once it said
/// where it listens.
pub fn start_server(store: &Path, specs: &Path, extra: &[&str], fault: Option<&str>) -> Served {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"));
    cmd.current_dir(root())
        .env("WARRANT_STORE", store)
        .args(["serve", "--listen", "127.0.0.1:0", "--specs"])
        .arg(specs)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    match fault {
        Some(f) => cmd.env("WARRANT_FAULT", f),
        None => cmd.env_remove("WARRANT_FAULT"),
    };
    served(cmd.spawn().unwrap())
}

/// A spawned `warrant serve` (stdout piped), once it said where it listens.
pub fn served(mut child: std::process::Child) -> Served {
    use std::io::BufRead as _;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Served { child, base }
}

/// The JSON body of a GET of `url`.
pub async fn get_json(url: &str) -> serde_json::Value {
    warrant_http::client()
        .get(url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The complete Server-Sent Events frames at the start of `buf` (removed from it), each as
/// its id and its JSON data.
pub fn sse_frames(buf: &mut String) -> Vec<(u64, serde_json::Value)> {
    let mut out = Vec::new();
    while let Some(end) = buf.find("\n\n") {
        let frame: String = buf.drain(..end + 2).collect();
        let id = frame
            .lines()
            .find_map(|l| l.strip_prefix("id: "))
            .map(|s| s.parse::<u64>().unwrap());
        let data = frame
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap());
        if let (Some(id), Some(data)) = (id, data) {
            out.push((id, data));
        }
    }
    out
}

/// The processes whose command line has `marker` as one of its words (this machine's
/// /proc): each as its id and command line.
pub fn lingering(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|w| w == marker.as_bytes()) {
            found.push(format!(
                "{} {}",
                entry.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

/// Checks one answer of `warrant serve` against its OpenAPI document (`doc`): the route and
/// method are documented, the status is one the operation lists (a problem may be any, as
/// `default`), the content type is one it lists for that status, and a JSON body is valid
/// against the listed schema. What a generated client relies on, checked on every answer a
/// test sees.
pub fn conforms(
    doc: &serde_json::Value,
    method: &str,
    path: &str,
    status: u16,
    content_type: &str,
    body: &serde_json::Value,
) {
    let paths = doc["paths"].as_object().unwrap();
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let found = paths.iter().find(|(t, _)| {
        let want: Vec<&str> = t.split('/').collect();
        want.len() == segments.len()
            && want
                .iter()
                .zip(&segments)
                .all(|(w, s)| w.starts_with('{') || w == s)
    });
    // A path or method the API does not have is a problem of its own (404, 405).
    let (template, ops) = match found {
        Some(f) => f,
        None if status == 404 => return,
        None => panic!("{method} {path}: answered {status} on no documented path"),
    };
    let op = match ops.get(method.to_ascii_lowercase()) {
        Some(op) => op,
        None if status == 405 => return,
        None => panic!("{method} {template}: answered {status}, not documented"),
    };
    let responses = op["responses"].as_object().unwrap();
    let answer = match responses.get(&status.to_string()) {
        Some(a) => a,
        None if status >= 400 => responses
            .get("default")
            .unwrap_or_else(|| panic!("{method} {template}: no default response")),
        None => panic!(
            "{method} {template}: answered {status}, documented {:?}",
            responses.keys().collect::<Vec<_>>()
        ),
    };
    let kind = content_type.split(';').next().unwrap_or("").trim();
    let Some(schema) = answer["content"].get(kind).map(|c| &c["schema"]) else {
        panic!(
            "{method} {template} {status}: content type `{kind}` not documented ({})",
            answer["content"]
        );
    };
    if kind.ends_with("json") {
        let wrapped = serde_json::json!({"allOf": [schema], "components": doc["components"]});
        let validator = jsonschema::validator_for(&wrapped)
            .unwrap_or_else(|e| panic!("{method} {template}: the schema does not compile: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .take(5)
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {template} {status}: the body does not match its schema: {errors:?}\n{body}"
        );
    }
}

/// Now, in milliseconds since the epoch (the machine's clock, as the binary's).
#[allow(
    clippy::disallowed_methods,
    reason = "a test reads the clock the binary it drives reads"
)]
pub fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A run the CLI left waiting on a call in doubt: killed after the ledger wrote its entry,
/// before the answer was recorded, then resumed (it waits for a person to say what happened).
/// Needs the `fault-injection` feature.
pub fn left_in_doubt(store: &Path, dir: &Path) -> String {
    let spec = format!(
        "version: warrant/v1\nid: ledger\nobjective: Write an entry.\ndecider: scripted:ledger-script.yaml\n\
         providers:\n  plain: {{reference: ledger, config: {{file: {}, keys: false}}}}\n\
         steps:\n  - id: write\n    provider: plain\n    tools: [count_entries, append_entry]\n    commit: required\n",
        dir.join("plain.jsonl").display()
    );
    std::fs::write(dir.join("ledger.yaml"), spec).unwrap();
    std::fs::write(
        dir.join("ledger-script.yaml"),
        "steps:\n  write:\n    - call: count_entries\n    - call: append_entry\n      args: {entry: one}\n    - done: written\n",
    )
    .unwrap();
    let cli = |args: &[&str], fault: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"));
        cmd.current_dir(dir).env("WARRANT_STORE", store).args(args);
        match fault {
            Some(f) => cmd.env("WARRANT_FAULT", f),
            None => cmd.env_remove("WARRANT_FAULT"),
        };
        cmd.output().unwrap()
    };
    let killed = cli(&["run", "ledger.yaml", "-q"], Some("after-invoke:2"));
    assert_eq!(killed.status.code(), None, "the fault kills the run");
    let waiting = cli(&["resume", "last", "-q"], None);
    assert_eq!(waiting.status.code(), Some(3), "{waiting:?}");
    let runs: serde_json::Value =
        serde_json::from_slice(&cli(&["runs", "--json"], None).stdout).unwrap();
    runs[0]["run_id"].as_str().unwrap().to_owned()
}

/// The `/metrics` page the front door at `base` (`http://HOST:PORT`) answers.
pub async fn metrics_page(base: &str) -> String {
    get_text(format!("{base}/metrics")).await
}

/// [`get_text`], from a test that has no runtime of its own.
pub fn get_text_blocking(url: impl reqwest::IntoUrl) -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(get_text(url))
}

/// The text body of a GET of `url`.
pub async fn get_text(url: impl reqwest::IntoUrl) -> String {
    warrant_http::client()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

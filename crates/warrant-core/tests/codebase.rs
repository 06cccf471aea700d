//! Checks over the repository's own text: the vocabulary is spelled only by the types that own
//! it, and `docs/ARCHITECTURE.md` cites only files, types, functions and tests that exist.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use warrant_core::{ApprovalState, RunStatus};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir`, skipping build output, dependencies and version control.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(
                name.as_ref(),
                "target" | "node_modules" | ".git" | ".venv" | "__pycache__"
            ) {
                files(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

/// The product code of a source file: what comes before its test module.
fn product_code(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i])
}

/// Product source files of every crate (a crate's `tests/` and `benches/` are not product).
fn product_sources() -> Vec<(String, String)> {
    let root = root();
    let mut all = Vec::new();
    files(&root.join("crates"), &mut all);
    all.into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            rel.contains("/src/").then_some(rel)
        })
        .map(|rel| {
            let text = std::fs::read_to_string(root.join(&rel)).unwrap();
            (rel, text)
        })
        .collect()
}

/// Words of other vocabularies that happen to be spelled like a status, where they are
/// spelled: (file, literal, why).
const OTHER_VOCABULARIES: &[(&str, &str, &str)] = &[
    (
        "crates/warrant-cli/src/cli.rs",
        "waiting",
        "the `--waiting` flag of `warrant bench`, named where another flag conflicts with it",
    ),
    (
        "crates/warrant-core/src/report.rs",
        "pending",
        "a step's status",
    ),
    (
        "crates/warrant-core/src/report.rs",
        "running",
        "a step's status",
    ),
    (
        "crates/warrant-core/src/report.rs",
        "attained",
        "a step's status and a judgment's requirement",
    ),
    (
        "crates/warrant-core/src/report.rs",
        "not_attained",
        "a step's status",
    ),
    (
        "crates/warrant-core/src/report.rs",
        "closed",
        "a step's status",
    ),
    (
        "crates/warrant-core/src/fold/judge.rs",
        "attained",
        "a judgment's requirement",
    ),
    (
        "crates/warrant-core/src/codes.rs",
        "cancelled",
        "an error code",
    ),
    (
        "crates/warrant-core/src/event.rs",
        "cancelled",
        "a call's status",
    ),
    (
        "crates/warrant-server/src/problem.rs",
        "failed",
        "a problem type",
    ),
    (
        "crates/warrant-cli/src/bench.rs",
        "waiting",
        "a JSON field of the bench's decider",
    ),
    (
        "crates/warrant-core/src/notice.rs",
        "pending",
        "a notice's delivery state",
    ),
    (
        "crates/warrant-core/src/notice.rs",
        "failed",
        "a notice's delivery state",
    ),
    (
        "crates/warrant-core/src/schedule.rs",
        "queued",
        "a schedule's tick state",
    ),
    (
        "crates/warrant-core/src/schedule.rs",
        "failed",
        "a schedule's tick state",
    ),
    (
        "crates/warrant-store/src/contract.rs",
        "*",
        "the store contract suite: tests, compiled for other crates' tests",
    ),
];

#[test]
fn no_status_or_decider_kind_is_spelled_outside_the_type_that_owns_it() {
    let words: HashSet<&str> = RunStatus::ALL
        .iter()
        .map(|s| s.name())
        .chain(ApprovalState::ALL.iter().map(|s| s.name()))
        .chain(["scripted", "mcp-client"])
        .collect();
    let prefixes = ["scripted:", "model:", "mcp-client:"];
    let mut found = Vec::new();
    for (file, text) in product_sources() {
        if file == "crates/warrant-core/src/status.rs" {
            continue;
        }
        for (n, line) in product_code(&text).lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            for literal in line.split('"').skip(1).step_by(2) {
                let owned_elsewhere = OTHER_VOCABULARIES
                    .iter()
                    .any(|(f, w, _)| *f == file && (*w == literal || *w == "*"));
                if owned_elsewhere {
                    continue;
                }
                if words.contains(literal) || prefixes.iter().any(|p| literal.starts_with(p)) {
                    found.push(format!("{file}:{}: \"{literal}\"", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "spell these with RunStatus, ApprovalState or DeciderRef (warrant_core::status):\n{}",
        found.join("\n")
    );
}

/// What `docs/ARCHITECTURE.md` may cite: the repository's files, and the identifiers and
/// function names of its Rust code.
struct Citable {
    files: Vec<String>,
    idents: HashSet<String>,
    fns: HashSet<String>,
}

impl Citable {
    fn read() -> Citable {
        let root = root();
        let mut all = Vec::new();
        files(&root, &mut all);
        let files: Vec<String> = all
            .iter()
            .filter_map(|p| p.strip_prefix(&root).ok())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .collect();
        let (mut idents, mut fns) = (HashSet::new(), HashSet::new());
        for f in files
            .iter()
            .filter(|f| f.starts_with("crates/") && f.ends_with(".rs"))
        {
            let text = std::fs::read_to_string(root.join(f)).unwrap();
            let words: Vec<&str> = text
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            for pair in words.windows(2) {
                if let ["fn", name] = pair {
                    fns.insert((*name).to_owned());
                }
            }
            idents.extend(words.into_iter().map(str::to_owned));
        }
        Citable { files, idents, fns }
    }

    /// Why `token` (a code span of the document) names nothing that exists, if it does not.
    fn missing(&self, token: &str) -> Option<&'static str> {
        const EXTENSIONS: [&str; 14] = [
            ".rs", ".md", ".js", ".ts", ".py", ".yaml", ".yml", ".toml", ".sql", ".sh", ".json",
            ".html", ".css", ".mjs",
        ];
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if token.contains('/') && !token.contains(' ') {
            if let Some(dir) = token.strip_suffix('/') {
                let found = self
                    .files
                    .iter()
                    .any(|f| f.starts_with(token) || f.contains(&format!("/{dir}/")));
                return (!found).then_some("no such directory");
            }
            if EXTENSIONS.iter().any(|e| token.ends_with(e)) {
                let found = self
                    .files
                    .iter()
                    .any(|f| f == token || f.ends_with(&format!("/{token}")));
                return (!found).then_some("no such file");
            }
            return None;
        }
        if token.ends_with("()") || (token.contains("::") && !token.contains(['{', ' ', '<'])) {
            let last = token
                .trim_end_matches("()")
                .rsplit("::")
                .next()
                .unwrap_or_default();
            if last.is_empty() || !last.chars().all(ident) {
                return None;
            }
            return (!self.idents.contains(last)).then_some("no such name in the code");
        }
        let camel = token.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && token.chars().any(|c| c.is_ascii_lowercase())
            && token.chars().all(ident);
        if camel {
            return (!self.idents.contains(token)).then_some("no such type or name in the code");
        }
        let long_snake = token.matches('_').count() >= 4
            && token
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if long_snake {
            return (!self.fns.contains(token)).then_some("no such function or test");
        }
        None
    }
}

#[test]
fn every_file_type_function_and_test_the_architecture_cites_exists() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let citable = Citable::read();
    let mut fenced = false;
    let mut wrong = Vec::new();
    for (n, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for token in line.split('`').skip(1).step_by(2) {
            if let Some(why) = citable.missing(token) {
                wrong.push(format!("line {}: `{token}`: {why}", n + 1));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md cites what is not there:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checks_find_what_is_missing() {
    let citable = Citable::read();
    assert_eq!(citable.missing("crates/warrant-core/src/status.rs"), None);
    assert_eq!(citable.missing("run/bridge.rs"), None);
    assert!(
        citable
            .missing("crates/warrant-engine/src/run.rs")
            .is_some()
    );
    // Names spelled here only in pieces, so that this file does not make them exist.
    let never = |parts: &[&str], sep: &str| parts.join(sep);
    let gone = format!("Run::{}()", never(&["answer", "or", "flush"], "_"));
    assert!(citable.missing(&gone).is_some());
    assert_eq!(citable.missing("RunState::status()"), None);
    assert!(
        citable
            .missing(&never(&["RunState", "OfMind"], ""))
            .is_some()
    );
    let test = never(&["a", "test", "never", "written", "here"], "_");
    assert!(citable.missing(&test).is_some());
    assert_eq!(
        citable.missing("every_file_type_function_and_test_the_architecture_cites_exists"),
        None
    );
    assert_eq!(product_code("a\n#[cfg(test)]\nmod tests {}"), "a\n");
}

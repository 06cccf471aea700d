//! Architecture tests: properties of the source tree itself.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::path::{Path, PathBuf};

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// INVARIANT (one path): in the product's sources, only the Bridge (`warrant-engine/src/run.rs`)
/// calls a surface's `invoke` or `lookup`. Test code may wrap surfaces; product code may not go
/// around the Bridge. A new caller makes this test fail.
#[test]
fn only_the_bridge_calls_a_surface() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_sources(&src, &mut files);
        }
    }
    assert!(files.len() > 20, "the scan found the sources");
    let mut callers = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Code after `#[cfg(test)]` is a unit-test module.
        let product = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in product.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains(".invoke(") || code.contains(".lookup(") {
                callers.push(format!("{}:{}", file.display(), n + 1));
            }
        }
    }
    let outside: Vec<&String> = callers
        .iter()
        .filter(|c| !c.contains("warrant-engine/src/run.rs:"))
        .collect();
    assert!(
        outside.is_empty(),
        "surface calls outside the Bridge: {outside:?}"
    );
    assert!(!callers.is_empty(), "the Bridge's own calls were found");
}

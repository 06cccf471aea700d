//! Names this build, so runs recorded by different builds can be told apart (`warrant
//! --version`, `run_started.build`, the report): the git commit (short, `-dirty` when tracked
//! files had changes, `unknown` outside git or without git), the day (UTC; `SOURCE_DATE_EPOCH`
//! when set, for reproducible builds) and warrant-cli's cargo features. Only std: no crate.
//!
//! It runs again when the commit can have changed — git's `HEAD`, the branch's ref (or
//! `packed-refs`) and the index — and when `SOURCE_DATE_EPOCH` changes, not at every build.
//! Only paths that exist are named: cargo takes a missing one as changed at every build. So
//! `-dirty` and the date are as they were when it last ran: an edit not yet seen by git's
//! index (`git add`, a commit) does not run it again.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let dir = PathBuf::from(env("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".to_owned()));
    let commit = match git(&dir, &["rev-parse", "--short", "HEAD"]) {
        Some(hash) => {
            for path in watched(&dir) {
                println!("cargo::rerun-if-changed={}", path.display());
            }
            let dirty = git(&dir, &["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|changes| !changes.is_empty());
            if dirty { format!("{hash}-dirty") } else { hash }
        }
        None => "unknown".to_owned(),
    };
    let date = day(build_time());
    let features = features();
    let version = env("CARGO_PKG_VERSION").unwrap_or_default();
    let shown = if features.is_empty() {
        "none".to_owned()
    } else {
        features.join(", ")
    };
    println!("cargo::rustc-env=WARRANT_BUILD_COMMIT={commit}");
    println!("cargo::rustc-env=WARRANT_BUILD_DATE={date}");
    println!(
        "cargo::rustc-env=WARRANT_BUILD_FEATURES={}",
        features.join(",")
    );
    // What `--version` prints after the name: `BuildInfo`'s `Display`, which a test compares.
    println!(
        "cargo::rustc-env=WARRANT_BUILD_VERSION={version} (commit {commit}, built {date}, features: {shown})"
    );
}

#[expect(
    clippy::disallowed_methods,
    reason = "a build script's inputs are the variables cargo sets for it"
)]
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `git ARGS` in `dir`: its output, trimmed, when git is there and succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The files whose change can change the commit or its dirtiness, those that exist: `HEAD`,
/// the branch's ref (loose, or else `packed-refs`) and the index (a worktree's own ones).
fn watched(dir: &Path) -> Vec<PathBuf> {
    let path = |name: &str| {
        git(dir, &["rev-parse", "--git-path", name])
            .map(|p| dir.join(p))
            .filter(|p| p.exists())
    };
    let mut out: Vec<PathBuf> = ["HEAD", "index"].iter().filter_map(|n| path(n)).collect();
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        out.extend(path(&branch).or_else(|| path("packed-refs")));
    }
    out
}

/// When it was built, in seconds since the epoch: `SOURCE_DATE_EPOCH` when set, else now.
fn build_time() -> u64 {
    if let Some(set) = env("SOURCE_DATE_EPOCH") {
        match set.trim().parse::<u64>() {
            Ok(seconds) => return seconds,
            Err(_) => println!(
                "cargo::warning=SOURCE_DATE_EPOCH `{set}` is not a number of seconds: the build is dated now"
            ),
        }
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "a build script dates the build; it runs before any Clock exists"
    )]
    let now = std::time::SystemTime::now();
    now.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `seconds` since the epoch as a UTC day, `YYYY-MM-DD` (Howard Hinnant's `civil_from_days`).
fn day(seconds: u64) -> String {
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// warrant-cli's cargo features in this build, sorted (`default` is not one: it only turns
/// others on). Cargo names each `CARGO_FEATURE_<NAME>`, upper case with `-` as `_`;
/// warrant-cli's features are spelt with `-`.
fn features() -> Vec<String> {
    let mut out: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| {
            let name = k.to_str()?.strip_prefix("CARGO_FEATURE_")?.to_owned();
            (name != "DEFAULT").then(|| name.to_lowercase().replace('_', "-"))
        })
        .collect();
    out.sort();
    out
}

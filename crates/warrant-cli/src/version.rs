//! Which build this is, as `build.rs` found it: the version, the git commit, the build date
//! and the cargo features. `warrant --version` prints it; every run this program starts
//! records it in its `run_started` (`App::with_build`), and its report shows it.

use warrant_core::event::BuildInfo;

/// What `warrant --version` prints after the name:
/// `0.1.0 (commit 1a2b3c4, built 2026-03-01, features: otlp, postgres)`.
pub const LONG: &str = env!("WARRANT_BUILD_VERSION");

/// This build.
pub fn info() -> BuildInfo {
    BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: env!("WARRANT_BUILD_COMMIT").to_owned(),
        date: env!("WARRANT_BUILD_DATE").to_owned(),
        features: env!("WARRANT_BUILD_FEATURES")
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_is_the_build_a_run_records() {
        assert_eq!(info().to_string(), LONG);
    }

    #[test]
    fn the_features_are_the_ones_compiled_in() {
        let features = info().features;
        for (name, on) in [
            ("postgres", cfg!(feature = "postgres")),
            ("fault-injection", cfg!(feature = "fault-injection")),
            ("otlp", cfg!(feature = "otlp")),
        ] {
            assert_eq!(
                features.iter().any(|f| f == name),
                on,
                "{name}: {features:?}"
            );
        }
    }
}

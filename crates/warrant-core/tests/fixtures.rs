//! Logs written by an earlier build stay readable by every later one: the fixtures under
//! `tests/fixtures/` were recorded with `warrant events RUN --json` and are never rewritten.
//! A log a newer build wrote (a field this build does not know, an event type it does not know)
//! reads too: the unknown field is ignored, the unknown event is kept and reported.

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

use std::sync::Arc;

use serde_json::Value;
use warrant_core::check::check_log;
use warrant_core::event::{CallStatus, Event, decode, encode};
use warrant_core::ids::CallId;
use warrant_core::report::RunReport;
use warrant_core::{Outcome, RunState};

fn fixture(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn events(lines: &[String]) -> Vec<Arc<Event>> {
    lines
        .iter()
        .map(|l| Arc::new(decode(l).unwrap_or_else(|e| panic!("{e}: {l}"))))
        .collect()
}

#[test]
fn every_recorded_log_still_folds_checks_and_reports() {
    // The approved rent was paid, and the resent ledger entry written, by `warrant resume` in
    // new processes: their providers were started again, and the report says so.
    for (name, outcome, warnings) in [
        ("cafe-gallery.jsonl", "attained", &[][..]),
        (
            "pay-rent-approved.jsonl",
            "attained",
            &["event 12: the run was re-entered by a process that started its providers again"][..],
        ),
        (
            "ledger-resent.jsonl",
            "attained",
            &[
                "event 11: the run was re-entered by a process that started its providers again",
                "event 14: the run was re-entered by a process that started its providers again",
            ][..],
        ),
    ] {
        let log = events(&fixture(name));
        let state = check_log(log.iter().map(|e| &**e)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(state.outcome().map(Outcome::name), Some(outcome), "{name}");
        let report = RunReport::from_events(&log).unwrap();
        assert_eq!(
            report.warnings.len(),
            warnings.len(),
            "{name}: {:?}",
            report.warnings
        );
        for (got, want) in report.warnings.iter().zip(warnings) {
            assert!(got.starts_with(want), "{name}: {got}");
        }
        assert!(!report.render().is_empty());
        // What this build writes for what it read is what was recorded: no field was lost.
        for (line, event) in fixture(name).iter().zip(&log) {
            let stored: Value = serde_json::from_str(line).unwrap();
            let mut again: Value = serde_json::from_str(&encode(event)).unwrap();
            for k in ["position", "run_id"] {
                again[k] = stored[k].clone();
            }
            assert_eq!(again, stored, "{name}: event {} changed", event.seq);
        }
    }
}

#[test]
fn the_resent_ledger_call_reads_as_it_happened() {
    let log = events(&fixture("ledger-resent.jsonl"));
    let state = RunState::from_events(log.iter().map(|e| &**e)).unwrap();
    let c2 = state.call(CallId(2)).unwrap();
    assert_eq!(c2.status, Some(CallStatus::NotPerformed));
    assert_eq!(c2.resent_by, Some(CallId(3)));
    assert_eq!(state.call(CallId(3)).unwrap().status, Some(CallStatus::Ok));
    assert_eq!(state.resumes(), 2);
}

#[test]
fn a_log_from_a_newer_build_reads_with_what_it_cannot_show_named() {
    let mut lines = fixture("cafe-gallery.jsonl");
    // A field this build does not know, inside the frozen spec and on an event.
    let mut first: Value = serde_json::from_str(&lines[0]).unwrap();
    first["spec"]["steps"][0]["priority"] = Value::from(3);
    first["spec"]["limits"]["gpu_seconds_max"] = Value::from(9);
    first["trace_id"] = Value::from("abc");
    lines[0] = first.to_string();
    // An event type this build does not know, in the middle of the log.
    let at = 4;
    let mut shifted: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        if i == at {
            shifted.push(
                serde_json::json!({"seq": at + 1, "at_ms": v["at_ms"], "type": "budget_checked", "left": 7})
                    .to_string(),
            );
        }
        if i >= at {
            v["seq"] = Value::from(v["seq"].as_u64().unwrap() + 1);
        }
        shifted.push(v.to_string());
    }
    let log = events(&shifted);
    let state = RunState::from_events(log.iter().map(|e| &**e)).unwrap();
    assert_eq!(state.outcome(), Some(&Outcome::Attained));
    assert_eq!(state.unrecognized(), vec![(5, "budget_checked".to_owned())]);
    let report = RunReport::from_events(&log).unwrap();
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains("`budget_checked`"),
        "{:?}",
        report.warnings
    );
    assert!(report.render().contains("warning  event 5"));
    // An unknown event is written back exactly as it was read.
    assert_eq!(
        serde_json::from_str::<Value>(&encode(&log[4])).unwrap()["left"],
        7
    );
    // What does not decode at all is still an error, naming why.
    assert!(decode(r#"{"seq":1,"at_ms":1,"type":"run_finished"}"#).is_err());
    assert!(decode("not json").is_err());
}

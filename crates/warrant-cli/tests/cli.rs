//! The `warrant` binary: commands, exit codes, and invalid input that writes nothing.

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

mod support;

use support::*;

use serde_json::Value;

#[test]
fn the_cafe_gallery_example_runs_end_to_end_and_its_evidence_can_be_inspected() {
    let (_dir, store) = scratch();
    let run = warrant(
        &store,
        &["run", "examples/cafe-gallery/spec.yaml", "--json"],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let out = json(&run);
    assert_eq!(out["outcome"], "attained");
    assert_eq!(
        out["route_key"],
        "cafe/read:read_menu -> cafe/commit:order_latte -> gallery/read:check_design_drift"
    );
    let id = out["run_id"].as_str().unwrap().to_owned();
    // Progress went to stderr, data to stdout.
    assert!(
        stderr(&run).contains("step order attained"),
        "{}",
        stderr(&run)
    );

    let runs = warrant(&store, &["runs", "--json"]);
    assert_eq!(json(&runs)[0]["run_id"], id.as_str());
    let show = warrant(&store, &["show", &id[..10]]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(stdout(&show).contains("attained"));
    let events = warrant(&store, &["events", &id, "--json"]);
    let lines: Vec<Value> = stdout(&events)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "run_started");
    assert_eq!(lines.last().unwrap()["type"], "run_finished");
    assert!(
        lines
            .iter()
            .enumerate()
            .all(|(i, l)| l["seq"] == i as u64 + 1)
    );
    let report = warrant(&store, &["report", "last", "--json"]);
    assert_eq!(report.status.code(), Some(0));
    let report = json(&report);
    assert_eq!(report["format"], "warrant.run-report/1");
    // One row per requirement: `order` must commit and be attained, `drift` be attained.
    assert_eq!(report["terminal"].as_array().unwrap().len(), 3);
    let replay = warrant(&store, &["replay", &id, "--verify"]);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
    assert!(stdout(&replay).contains("identical"));
    // Following a finished run prints it and ends.
    let follow = warrant(&store, &["events", &id, "--follow", "--from", "20"]);
    assert_eq!(follow.status.code(), Some(0));
    assert!(stdout(&follow).contains("run_finished"));
}

/// `warrant --version` tells builds apart: the version, the git commit it was built from
/// (short, `-dirty` with uncommitted changes, `unknown` outside git), the day it was built and
/// the cargo features compiled in.
#[test]
fn the_version_names_the_commit_the_day_and_the_features() {
    let (_dir, store) = scratch();
    let out = warrant(&store, &["--version"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = stdout(&out);
    let build = parse_version(&line);
    assert_eq!(build.version, env!("CARGO_PKG_VERSION"), "{line}");
    let hash = build.commit.strip_suffix("-dirty").unwrap_or(&build.commit);
    assert!(
        hash == "unknown" || (hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "{line}"
    );
    let d: Vec<&str> = build.date.split('-').collect();
    assert!(
        d.len() == 3
            && [4, 2, 2]
                .iter()
                .zip(&d)
                .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_digit())),
        "{line}"
    );
    for (feature, on) in [
        ("postgres", cfg!(feature = "postgres")),
        ("fault-injection", cfg!(feature = "fault-injection")),
        ("otlp", cfg!(feature = "otlp")),
    ] {
        assert_eq!(
            build.features.iter().any(|f| f == feature),
            on,
            "{feature}: {line}"
        );
    }
    assert!(!store.exists(), "--version writes nothing");
}

#[test]
fn completions_and_the_manual_page_are_generated_from_the_commands() {
    let (dir, store) = scratch();
    let bash = warrant(&store, &["completions", "bash"]);
    assert_eq!(bash.status.code(), Some(0), "{}", stderr(&bash));
    let script = stdout(&bash);
    assert!(
        script.contains("_warrant()") && script.contains("complete -F"),
        "{script}"
    );
    // Every command is offered, and a command's own options.
    for word in [
        "run",
        "serve",
        "worker",
        "gateway",
        "approve",
        "reconcile",
        "--max-runs",
    ] {
        assert!(script.contains(word), "{word}");
    }
    let zsh = stdout(&warrant(&store, &["completions", "zsh"]));
    assert!(zsh.starts_with("#compdef warrant"), "{zsh}");
    let refused = warrant(&store, &["completions", "tcsh"]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );

    let man = stdout(&warrant(&store, &["man"]));
    assert!(man.contains(".TH warrant"), "{man}");
    assert!(
        man.contains("governable") || man.contains("Warrant"),
        "{man}"
    );
    let pages = dir.path().join("man");
    let wrote = warrant(&store, &["man", "--dir", pages.to_str().unwrap()]);
    assert_eq!(wrote.status.code(), Some(0), "{}", stderr(&wrote));
    for page in [
        "warrant.1",
        "warrant-run.1",
        "warrant-serve.1",
        "warrant-worker.1",
    ] {
        let text = std::fs::read_to_string(pages.join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    assert!(!store.exists(), "neither writes the store");
}

/// The parts of `warrant 0.1.0 (commit 1a2b3c4, built 2026-03-01, features: a, b)`.
fn parse_version(line: &str) -> warrant_core::event::BuildInfo {
    let rest = line
        .trim_end()
        .strip_prefix("warrant ")
        .unwrap_or_else(|| panic!("not `warrant VERSION (...)`: {line}"));
    let (version, rest) = rest.split_once(" (commit ").unwrap();
    let (commit, rest) = rest.split_once(", built ").unwrap();
    let (date, rest) = rest.split_once(", features: ").unwrap();
    let features = rest.strip_suffix(')').unwrap();
    warrant_core::event::BuildInfo {
        version: version.to_owned(),
        commit: commit.to_owned(),
        date: date.to_owned(),
        features: match features {
            "none" => Vec::new(),
            f => f.split(", ").map(str::to_owned).collect(),
        },
    }
}

/// A run records the build that started it in `run_started`; its report shows it; its replay
/// is identical.
#[test]
fn a_run_records_the_build_that_started_it() {
    let (_dir, store) = scratch();
    let build = parse_version(&stdout(&warrant(&store, &["--version"])));
    let run = warrant(
        &store,
        &["run", "examples/cafe-gallery/spec.yaml", "--json"],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let id = json(&run)["run_id"].as_str().unwrap().to_owned();
    let events = stdout(&warrant(&store, &["events", &id, "--json"]));
    let started: Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "run_started");
    let recorded: warrant_core::event::BuildInfo =
        serde_json::from_value(started["build"].clone()).unwrap();
    assert_eq!(recorded, build);
    let report = json(&warrant(&store, &["report", &id, "--json"]));
    assert_eq!(report["build"], started["build"]);
    let text = stdout(&warrant(&store, &["report", &id]));
    assert!(text.contains(&format!("build    {build}\n")), "{text}");
    let replay = warrant(&store, &["replay", &id, "--verify"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    assert!(stdout(&replay).contains("identical"));
}

/// A SQLite store an earlier build wrote is read as it is by read commands, upgraded by the
/// first command that writes to it (which says so first), and keeps every event;
/// `store migrate` says what it did.
#[test]
fn an_older_sqlite_store_is_upgraded_by_the_first_write_and_says_so() {
    let (_dir, store) = scratch();
    let created = warrant(&store, &["store", "migrate"]);
    assert!(
        stdout(&created).contains("created (schema 7)"),
        "{}",
        stdout(&created)
    );
    let first = warrant(
        &store,
        &["run", "examples/cafe-gallery/spec.yaml", "--json"],
    );
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let id = json(&first)["run_id"].as_str().unwrap().to_owned();
    let events = |store: &std::path::Path| stdout(&warrant(store, &["events", &id, "--json"]));
    let before = events(&store);
    warrant_store::contract::as_sqlite_schema_4(&store, true);

    let listed = warrant(&store, &["runs"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert!(
        !stderr(&listed).contains("upgrading"),
        "{}",
        stderr(&listed)
    );
    assert_eq!(events(&store), before);
    assert_eq!(
        warrant_store::SqliteStore::schema_of(&store).unwrap(),
        Some(4)
    );

    let second = warrant(&store, &["run", "examples/cafe-gallery/spec.yaml"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("from schema 4 to 7"),
        "{}",
        stderr(&second)
    );
    assert_eq!(
        warrant_store::SqliteStore::schema_of(&store).unwrap(),
        Some(7)
    );
    assert_eq!(events(&store), before);
    let again = warrant(&store, &["store", "migrate"]);
    assert!(
        stdout(&again).contains("schema 7, up to date"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn a_run_that_is_not_attained_exits_1_and_says_why() {
    let (_dir, store) = scratch();
    let run = warrant(
        &store,
        &[
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--decider",
            "scripted:examples/cafe-gallery/decline.yaml",
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(1));
    assert!(stdout(&run).contains("not_attained"));
    assert!(stdout(&run).contains("[model]"));
    assert!(
        stderr(&run).is_empty(),
        "--quiet shows no progress: {}",
        stderr(&run)
    );
    let denied = warrant(
        &store,
        &[
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--deny-tool",
            "order_latte",
            "--json",
            "-q",
        ],
    );
    assert_eq!(denied.status.code(), Some(1));
    assert_eq!(
        json(&denied)["outcome_detail"]["missing"][0]["fault"]["layer"],
        "policy"
    );
}

#[test]
fn invalid_input_exits_2_and_leaves_the_store_untouched() {
    let (dir, store) = scratch();
    // No store yet: an invalid spec must not create one.
    let bad = dir.path().join("bad.yaml");
    let spec = std::fs::read_to_string(root().join("examples/cafe-gallery/spec.yaml")).unwrap();
    std::fs::write(&bad, spec.replace("provider: gallery", "provider: museum")).unwrap();
    let out = warrant(&store, &["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.yaml:24: steps[1].provider: unknown provider `museum`"),
        "{}",
        stderr(&out)
    );
    assert!(!store.exists(), "an invalid spec created the store");

    // With a store holding a run: every kind of invalid input leaves it byte for byte as it was.
    assert_eq!(
        warrant(&store, &["run", "examples/cafe-gallery/spec.yaml", "-q"])
            .status
            .code(),
        Some(0)
    );
    let before = std::fs::read(&store).unwrap();
    let cases: Vec<(String, Vec<String>)> = vec![
        (spec.replace("id: drift", "id: order"), vec![]),
        (spec.replace("after: [order]", "after: [drift]"), vec![]),
        (
            spec.replace("color: order.color", "color: order.flavor"),
            vec![],
        ),
        (
            spec.replace("tools: [check_design_drift]", "tools: [paint]"),
            vec![],
        ),
        (
            spec.clone(),
            vec!["--decider".into(), "oracle:delphi".into()],
        ),
        (
            spec.clone(),
            vec!["--decider".into(), "scripted:/nonexistent.yaml".into()],
        ),
    ];
    for (i, (text, extra)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("case{i}.yaml"));
        std::fs::write(&path, text).unwrap();
        let mut args = vec!["run".to_owned(), path.to_str().unwrap().to_owned()];
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = warrant(&store, &args);
        assert_eq!(out.status.code(), Some(2), "case {i}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("error: "),
            "case {i}: {}",
            stderr(&out)
        );
        let validate = warrant(&store, &["validate", path.to_str().unwrap()]);
        if i < 4 {
            assert_eq!(validate.status.code(), Some(2), "case {i}");
        }
    }
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "invalid input changed the store"
    );
    assert_eq!(
        json(&warrant(&store, &["runs", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn usage_errors_and_missing_things_exit_2() {
    let (_dir, store) = scratch();
    assert_eq!(warrant(&store, &["run"]).status.code(), Some(2));
    assert_eq!(warrant(&store, &["frobnicate"]).status.code(), Some(2));
    let runs = warrant(&store, &["runs"]);
    assert_eq!(runs.status.code(), Some(2));
    assert!(stderr(&runs).contains("no store at"), "{}", stderr(&runs));
    assert!(!store.exists());
    assert_eq!(
        warrant(&store, &["run", "examples/cafe-gallery/spec.yaml", "-q"])
            .status
            .code(),
        Some(0)
    );
    let missing = warrant(&store, &["report", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no run `nope`"));
    assert_eq!(
        warrant(&store, &["bench", "--steps", "0"]).status.code(),
        Some(2)
    );
}

#[test]
fn help_documents_the_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let help = warrant(&dir.path().join("w.db"), &["--help"]);
    let text = stdout(&help);
    for line in [
        "0  the run attained",
        "1  the run ended not attained",
        "2  invalid input",
        "3  the run is waiting",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
}

#[test]
fn validate_and_schema_describe_the_formats() {
    let (_dir, store) = scratch();
    let ok = warrant(&store, &["validate", "examples/cafe-gallery/spec.yaml"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(stdout(&ok).starts_with("ok: `cafe-gallery`"));
    for which in ["spec", "report", "events"] {
        let s = json(&warrant(&store, &["schema", which]));
        assert!(
            s["$schema"].as_str().unwrap().contains("json-schema.org"),
            "{which}"
        );
    }
    let spec_schema = json(&warrant(&store, &["schema", "spec"]));
    assert!(spec_schema["properties"]["steps"].is_object());
    assert!(!store.exists(), "validate and schema write nothing");
}

#[test]
fn compare_runs_one_spec_through_several_deciders() {
    let (_dir, store) = scratch();
    let out = warrant(
        &store,
        &[
            "compare",
            "examples/cafe-gallery/spec.yaml",
            "--decider",
            "scripted:examples/cafe-gallery/script.yaml",
            "--decider",
            "scripted:examples/cafe-gallery/direct.yaml",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cmp = json(&out);
    assert_eq!(cmp["path_difference"], true);
    assert_eq!(cmp["terminal_difference"], false);
    assert_eq!(cmp["conformance_difference"], false);
    assert_eq!(cmp["routes"].as_array().unwrap().len(), 2);
    let text = warrant(
        &store,
        &[
            "compare",
            "examples/cafe-gallery/spec.yaml",
            "--decider",
            "scripted:examples/cafe-gallery/script.yaml",
            "--decider",
            "scripted:examples/cafe-gallery/decline.yaml",
        ],
    );
    assert_eq!(text.status.code(), Some(1));
    assert!(
        stdout(&text).contains("attributed  model (no_commit)"),
        "{}",
        stdout(&text)
    );
    assert!(stdout(&text).contains("terminal difference: yes"));
}

#[test]
fn bench_prints_one_json_line_per_cell() {
    let (dir, store) = scratch();
    for durable in [false, true] {
        let mut args = vec!["bench", "--steps", "5", "--runs", "3", "--repeat", "1"];
        if durable {
            args.push("--durable");
        }
        let out = warrant(&store, &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let line = json(&out);
        assert_eq!(line["peer"], "warrant");
        assert_eq!(line["tool_calls"], 15);
        assert_eq!(line["durable"], durable);
        for key in [
            "wall_s",
            "steps_per_s",
            "per_step_us",
            "cpu_per_step_us",
            "peak_rss_mb",
        ] {
            assert!(line[key].is_number(), "{key}");
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "the durable bench removes its file");
}

/// `bench/compare` with the binary under test, in a scratch directory.
fn compare(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/compare"))
        .args(["--warrant", env!("CARGO_BIN_EXE_warrant")])
        .args(args)
        .env("WARRANT_STORE", dir.join("w.db"))
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn bench_compare_takes_turns_and_shows_each_sides_median_and_the_rounds_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let out = compare(dir.path(), &["--cells", "2x1", "--rounds", "2"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    // Each round of each cell says so, both sides run in it; rounds go round by round, every
    // cell in each, so a cell's rounds are spread over the session rather than back to back.
    let order = [
        "round 1/2: memory 2x1",
        "round 1/2: durable 2x1",
        "round 2/2: memory 2x1",
        "round 2/2: durable 2x1",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|round| {
            err.find(round)
                .unwrap_or_else(|| panic!("no `{round}` in {err}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{err}");
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(
        lines[0].ends_with("| Warrant ÷ bare steps/s | rounds' ratios |"),
        "{table}"
    );
    for (line, mode) in [(lines[2], "memory"), (lines[3], "durable (fsync)")] {
        assert!(line.starts_with(&format!("| {mode} | 2 | 1 | ")), "{table}");
        // The rounds' ratios: a range of two positive ratios, least first.
        let range = line.trim_end_matches(" |").rsplit("| ").next().unwrap();
        let (low, high) = range.trim_end_matches('x').split_once('–').unwrap();
        let (low, high): (f64, f64) = (low.parse().unwrap(), high.parse().unwrap());
        assert!(0.0 < low && low <= high, "{table}");
    }
    // One round keeps the table as it was; no round at all is refused.
    let once = compare(dir.path(), &["--cells", "2x1"]);
    assert!(once.status.success());
    assert!(String::from_utf8_lossy(&once.stdout).starts_with(
        "| mode | K | R | CPU µs/step Warrant / bare | steps/s Warrant / bare | Warrant ÷ bare steps/s |\n"
    ));
    let none = compare(dir.path(), &["--rounds", "0"]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("--rounds must be at least 1"));
}

#[test]
fn an_asked_transfer_waits_for_approval_and_goes_through_once_approved() {
    let (_dir, store) = scratch();
    let out = ask_transfer(&store);
    assert_eq!(out["outcome"], "waiting");
    let request = out["approvals"][0]["request"].as_str().unwrap().to_owned();
    let listed = json(&warrant(&store, &["approvals", "--json"]));
    assert_eq!(listed[0]["request"], request.as_str());
    assert_eq!(listed[0]["args"]["amount"], 950);
    assert!(listed[0]["provenance"].is_array());
    let approve = warrant(&store, &["approve", &request, "--as", "alice"]);
    assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
    let again = warrant(&store, &["approve", &request]);
    assert!(
        stdout(&again).contains("already approved"),
        "{}",
        stdout(&again)
    );
    let denied = warrant(&store, &["deny", &request, "--reason", "changed my mind"]);
    assert_eq!(
        denied.status.code(),
        Some(2),
        "a different answer is refused"
    );
    let resumed = warrant(&store, &["resume", "last", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stdout(&resumed));
    let replay = warrant(&store, &["replay", "last", "--verify"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    let late = warrant(&store, &["approve", &request]);
    assert_eq!(late.status.code(), Some(2));
    assert!(
        stderr(&late).contains("which ended attained"),
        "{}",
        stderr(&late)
    );
}

#[test]
fn a_denied_transfer_is_stopped_by_policy() {
    let (_dir, store) = scratch();
    let request = ask_transfer(&store)["approvals"][0]["request"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        warrant(&store, &["deny", &request, "--reason", "wrong account"])
            .status
            .code(),
        Some(0)
    );
    let resumed = warrant(&store, &["resume", "last", "--json", "-q"]);
    assert_eq!(resumed.status.code(), Some(1));
    let out = json(&resumed);
    assert_eq!(
        out["outcome_detail"]["missing"][0]["fault"]["code"],
        "approval_denied"
    );
}

#[test]
fn approvals_can_be_answered_in_place() {
    let (_dir, store) = scratch();
    let args = [
        "run",
        "examples/pay-rent/spec.yaml",
        "--ask-tool",
        "transfer",
        "--prompt",
        "--json",
        "-q",
    ];
    let yes = warrant_with_stdin(&store, &args, "y\n");
    assert_eq!(yes.status.code(), Some(0), "{}", stderr(&yes));
    assert!(
        stderr(&yes).contains("`transfer` on bank"),
        "the request was shown: {}",
        stderr(&yes)
    );
    assert!(
        stderr(&yes).contains("/amount"),
        "with the provenance of each argument: {}",
        stderr(&yes)
    );
    let no = warrant_with_stdin(&store, &args, "n\nwrong account\n");
    assert_eq!(no.status.code(), Some(1));
    assert_eq!(
        json(&no)["outcome_detail"]["missing"][0]["fault"]["code"],
        "approval_denied"
    );
    // Leaving it waiting, or no terminal at all: the run waits durably.
    let wait = warrant_with_stdin(&store, &args, "w\n");
    assert_eq!(wait.status.code(), Some(3));
    let piped = warrant_with_stdin(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--ask-tool",
            "transfer",
            "-q",
        ],
        "y\n",
    );
    assert_eq!(
        piped.status.code(),
        Some(3),
        "no terminal, no --prompt: no prompt"
    );
}

/// A prompt waiting for its person also watches the store: an answer given in another shell
/// meanwhile ends the wait (the run goes on with it), with nothing typed here.
#[test]
fn a_prompt_sees_an_answer_given_elsewhere() {
    let (_dir, store) = scratch();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(root())
        .env("WARRANT_STORE", &store)
        .args([
            "run",
            "examples/pay-rent/spec.yaml",
            "--ask-tool",
            "transfer",
            "--prompt",
            "--json",
            "-q",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its standard input stays open and silent while another shell answers.
    let typing = run.stdin.take().unwrap();
    let mut request = None;
    for _ in 0..400 {
        let pending = json(&warrant(&store, &["approvals", "--json"]));
        if let Some(r) = pending[0]["request"].as_str() {
            request = Some(r.to_owned());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let request = request.expect("the run asks for an approval");
    let approved = warrant(&store, &["approve", &request]);
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    let out = run.wait_with_output().unwrap();
    drop(typing);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("approved elsewhere; that answer stands"),
        "{}",
        stderr(&out)
    );
    assert_eq!(json(&out)["outcome"], "attained");
}

#[test]
fn a_required_execution_control_that_cannot_be_reached_stops_commits() {
    let (_dir, store) = scratch();
    // Nothing listens on port 9 of loopback: the control is unreachable, so every commit stops.
    let run = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--execution-control",
            "http://127.0.0.1:9/decide",
            "--json",
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let out = json(&run);
    assert_eq!(
        out["outcome_detail"]["missing"][0]["fault"]["code"],
        "execution_control_indeterminate"
    );
    let bad = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--execution-control",
            "ftp://x",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        warrant(&store, &["replay", "last", "--verify"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn runs_are_listed_by_status_spec_and_number() {
    let (_dir, store) = scratch();
    let waiting = ask_transfer(&store);
    assert_eq!(waiting["outcome"], "waiting");
    let done = warrant(
        &store,
        &["run", "examples/cafe-gallery/spec.yaml", "-q", "--json"],
    );
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        let out = warrant(&store, &all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        json(&out)
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&[]).len(), 2);
    assert_eq!(ids(&["--status", "waiting"]), vec!["waiting"]);
    assert_eq!(ids(&["--status", "attained"]), vec!["attained"]);
    assert_eq!(ids(&["--limit", "1"]).len(), 1);
    assert!(ids(&["--spec", "no-such-spec"]).is_empty());
    let bad = warrant(&store, &["runs", "--status", "snoozing"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("no status `snoozing`"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn the_untrusted_input_profile_asks_and_the_request_says_why() {
    let (_dir, store) = scratch();
    let run = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--profile",
            "untrusted-input",
            "--no-prompt",
            "-q",
            "--json",
        ],
    );
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    let listed = warrant(&store, &["approvals"]);
    let text = stdout(&listed);
    assert!(text.contains("untrusted-input profile"), "{text}");
    assert!(
        text.contains("the decider had read output of bank"),
        "{text}"
    );
    let bad = warrant(
        &store,
        &["run", "examples/pay-rent/spec.yaml", "--profile", "lenient"],
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_specs_typed_inputs_are_checked_before_anything_starts_and_labelled_input() {
    let (_dir, store) = scratch();
    let spec = root().join("examples/pay-to/spec.yaml");
    let spec = spec.to_str().unwrap();
    // Values that do not meet the schemas, one the spec does not take, and none at all:
    // refused before anything is written, each input named.
    let bad = warrant(
        &store,
        &[
            "run",
            spec,
            "--input",
            "to=nope",
            "--input",
            "amount=5000",
            "--input",
            "x=1",
        ],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    for said in [
        "inputs.to",
        "inputs.amount",
        "inputs.x: the spec takes no input `x`",
    ] {
        assert!(stderr(&bad).contains(said), "{said}: {}", stderr(&bad));
    }
    let none = warrant(&store, &["run", spec]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("inputs.to: the spec needs a value for it"),
        "{}",
        stderr(&none)
    );
    assert!(!store.exists(), "a refused start wrote the store");
    // Given as the schemas ask: the run carries them, and the transfer's arguments that hold
    // them are labelled `input` — what the step's grant admits.
    let ok = warrant(
        &store,
        &[
            "run",
            spec,
            "--input",
            "to=DE89370400440532013000",
            "--input",
            "amount=950",
            "--json",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let report = json(&warrant(&store, &["report", "last", "--json"]));
    let labels = report["steps"][0]["calls"][0]["provenance"].to_string();
    for label in [
        r#"{"pointer":"/amount","source":"input","name":"amount"}"#,
        r#"{"pointer":"/to","source":"input","name":"to"}"#,
    ] {
        assert!(labels.contains(label), "{label} not in {labels}");
    }
    assert_eq!(report["carried"][0]["name"], "input.amount", "{report}");
    assert_eq!(report["carried"][0]["value"], 950, "{report}");
}

#[test]
fn a_provider_that_never_finishes_its_handshake_is_bounded_by_what_is_left_of_the_deadline() {
    let (dir, store) = scratch();
    // A "server" that never answers: the run may not wait for it past its deadline, however
    // long a call may take.
    std::fs::write(
        dir.path().join("spec.yaml"),
        "version: warrant/v1\nid: mute\nobjective: o\ndecider: scripted:s.yaml\n\
         providers: {mute: {mcp: {command: [sleep, '5']}}}\n\
         steps: [{id: a, provider: mute, tools: [t]}]\n\
         limits: {deadline_ms: 700, call_timeout_ms: 30000}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("s.yaml"), "steps:\n  a:\n    - done: x\n").unwrap();
    let out = warrant(
        &store,
        &["run", dir.path().join("spec.yaml").to_str().unwrap()],
    );
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(
            "provider `mute`: the MCP server did not complete the MCP handshake: check what it printed"
        ) && stderr(&out).contains("within 700 ms"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_person_who_takes_longer_than_the_deadline_to_approve_spends_none_of_it() {
    let (_dir, store) = scratch();
    // The cafe asks before it orders; the run may drive for one second in all.
    let run = warrant(
        &store,
        &[
            "run",
            "examples/cafe-gallery/spec.yaml",
            "--ask-tool",
            "order_latte",
            "--deadline-ms",
            "1000",
            "--no-prompt",
            "--json",
        ],
    );
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    let request = json(&run)["approvals"][0]["request"]
        .as_str()
        .unwrap()
        .to_owned();
    // The person answers after the whole deadline has gone by.
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let approved = warrant(&store, &["approve", &request]);
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    let resumed = warrant(&store, &["resume", "last", "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(
        json(&resumed)["outcome"],
        "attained",
        "{}",
        stdout(&resumed)
    );
    let shown = stdout(&warrant(&store, &["show", "last"]));
    let waited: u64 = shown
        .lines()
        .find_map(|l| l.strip_prefix("time     "))
        .and_then(|t| t.split(" ms driving, ").nth(1))
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no waiting time in {shown}"));
    assert!(waited >= 1_500, "{shown}");
}

/// A plan made before anything is read is approved once, from the command line, as a whole:
/// `warrant approve REQ --scope plan`; the run then goes on under it.
#[test]
fn a_plan_is_approved_once_with_scope_plan_and_the_run_goes_on_under_it() {
    let (dir, store) = scratch();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let spec = std::fs::read_to_string(root.join("examples/pay-rent/spec.yaml"))
        .unwrap()
        .replace(
            "decider: scripted:script.yaml\n",
            "decider: scripted:script.yaml\nplan_first: true\nprofile: untrusted-input\n",
        );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "plan:\n  pay:\n    tools:\n      balance: {}\n      transfer: {to: {from: [objective]}, amount: {max: 950}}\nsteps:\n  pay:\n    - call: balance\n    - call: transfer\n      args: {to: DE89370400440532013000, amount: 950, memo: rent}\n    - done: rent paid\n",
    )
    .unwrap();
    let spec_path = dir.path().join("spec.yaml");
    let run = warrant(
        &store,
        &["run", spec_path.to_str().unwrap(), "--json", "-q"],
    );
    assert_eq!(run.status.code(), Some(3), "waiting: {}", stderr(&run));
    let out = json(&run);
    let request = out["approvals"][0]["request"].as_str().unwrap().to_owned();
    let listed = json(&warrant(&store, &["approvals", "--json"]));
    assert_eq!(listed[0]["proposed_scope"], "plan", "{listed}");
    assert!(
        listed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("step `pay`: balance, transfer (amount at most 950; to from objective)"),
        "{listed}"
    );
    let approve = warrant(&store, &["approve", &request, "--scope", "plan"]);
    assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
    let resumed = warrant(&store, &["resume", "last", "-q"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stdout(&resumed));
    let replay = warrant(&store, &["replay", "last", "--verify"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
}

/// A run that waits for a person has failed nothing: its report says each requirement not met
/// yet waits for an approval, with no fault blamed on a layer.
#[test]
fn a_waiting_runs_unmet_requirements_wait_for_approval_and_blame_no_layer() {
    let (_dir, store) = scratch();
    let waiting = ask_transfer(&store);
    let run = waiting["run_id"].as_str().unwrap();
    let report = json(&warrant(&store, &["report", run, "--json"]));
    let rows = report["terminal"].as_array().unwrap();
    assert!(!rows.is_empty(), "{report}");
    for row in rows {
        assert_eq!(row["satisfied"], false, "{row}");
        assert_eq!(row["waiting"], "approval", "{row}");
        assert!(row.get("fault").is_none(), "{row}");
    }
    let text = stdout(&warrant(&store, &["report", run]));
    assert!(text.contains("(waiting: approval)"), "{text}");
    assert!(!text.contains("orchestration"), "{text}");
}

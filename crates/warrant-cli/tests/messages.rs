//! Messages as a new user meets them (issue 41, item 6): each says what is wrong and where
//! (the file, the run, the field), never panics, and exits with the code its case has.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::path::Path;

use support::*;

fn spec_path(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

/// Runs `python3 -c SCRIPT FILE` (the tests change stores outside Warrant with it).
fn python(script: &str, file: &Path) {
    let status = std::process::Command::new("python3")
        .args(["-c", script, file.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn assert_says(out: &std::process::Output, code: i32, words: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in words {
        assert!(err.contains(w), "`{w}` not in: {err}");
    }
}

#[test]
fn an_overlong_argument_is_shown_back_cut_to_a_bound() {
    let (_dir, store) = scratch();
    let ran = warrant(&store, &["run", &spec_path("pay-rent/spec.yaml"), "-q"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    // (An argument is at most 128 KiB on Linux.)
    let long = format!("r{}", "x".repeat(100_000));
    let input = format!("{long}=1");
    let store_arg = format!("--store={long}");
    for args in [
        vec!["show", long.as_str()],
        vec!["report", long.as_str()],
        vec!["approve", long.as_str()],
        vec!["run", long.as_str()],
        vec!["runs", "--status", long.as_str()],
        vec!["explain", long.as_str()],
        vec!["run", "x.yaml", "--input", long.as_str()],
        vec![
            "run",
            &spec_path("pay-rent/spec.yaml"),
            "--input",
            input.as_str(),
        ],
        vec!["run", "x.yaml", "--decisions-max", long.as_str()],
        vec![long.as_str()],
        vec![store_arg.as_str(), "runs"],
    ] {
        let out = warrant(&store, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}", &err[..err.len().min(500)]);
        assert!(
            err.len() < 1_500,
            "{:?}: {} bytes: {}",
            &args[..1],
            err.len(),
            &err[..500]
        );
        assert!(err.contains("characters cut]"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_store_that_cannot_be_opened_says_which_file_and_why() {
    let (dir, _) = scratch();
    // A folder that does not exist, to read.
    let gone = dir.path().join("gone").join("w.db");
    assert_says(
        &warrant(&gone, &["runs"]),
        2,
        &[
            &format!("no store at `{}`", gone.display()),
            &format!(
                "the folder `{}` does not exist",
                dir.path().join("gone").display()
            ),
        ],
    );
    // A folder that is a file, to write.
    std::fs::write(dir.path().join("plain"), "x").unwrap();
    let under = dir.path().join("plain").join("w.db");
    assert_says(
        &warrant(&under, &["run", &spec_path("pay-rent/spec.yaml"), "-q"]),
        2,
        &[&format!(
            "cannot create the folder `{}` of the store `{}`",
            dir.path().join("plain").display(),
            under.display()
        )],
    );
    // A folder that cannot be written (only where the permission holds: not as root).
    use std::os::unix::fs::PermissionsExt as _;
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let as_root = std::fs::write(locked.join("probe"), "").is_ok();
    if !as_root {
        let store = locked.join("w.db");
        assert_says(
            &warrant(&store, &["run", &spec_path("pay-rent/spec.yaml"), "-q"]),
            2,
            &[
                &format!("cannot open the store `{}`", store.display()),
                &format!("it cannot be created in `{}`", locked.display()),
                "ermission denied",
            ],
        );
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_store_that_is_a_directory_is_named_as_one() {
    let (dir, _) = scratch();
    let folder = dir.path();
    let said = format!(
        "`{}` is a directory, not a store file: name a file, e.g. `{}`",
        folder.display(),
        folder.join("warrant.db").display()
    );
    for args in [
        vec!["runs"],
        vec!["show", "last"],
        vec!["run", "examples/pay-rent/spec.yaml", "-q"],
    ] {
        assert_says(&warrant(folder, &args), 2, &[&said]);
    }
}

#[test]
fn a_damaged_store_is_named_with_the_run_and_what_to_do() {
    let (_dir, store) = scratch();
    let ran = warrant(
        &store,
        &["run", &spec_path("pay-rent/spec.yaml"), "--json", "-q"],
    );
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let run = json(&ran)["run_id"].as_str().unwrap().to_owned();
    // The page the log's table begins at, overwritten: the runs' index still reads.
    python(
        "import sqlite3,sys\n\
         p=sys.argv[1]; c=sqlite3.connect(p)\n\
         root=c.execute(\"select rootpage from sqlite_master where name='events'\").fetchone()[0]\n\
         size=c.execute('pragma page_size').fetchone()[0]\n\
         c.execute('pragma wal_checkpoint(TRUNCATE)'); c.close()\n\
         f=open(p,'r+b'); f.seek((root-1)*size); f.write(b'\\xff'*size); f.close()",
        &store,
    );
    for args in [["show", "last"], ["report", "last"], ["events", "last"]] {
        assert_says(
            &warrant(&store, &args),
            1,
            &[
                &format!("reading run `{run}`"),
                &format!("`{}` is damaged", store.display()),
                "database disk image is malformed",
                "restore the store from a backup",
            ],
        );
    }
}

#[test]
fn an_empty_run_id_is_refused_by_every_command_that_takes_one() {
    let (_dir, store) = scratch();
    let ran = warrant(&store, &["run", &spec_path("pay-rent/spec.yaml"), "-q"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    for args in [
        vec!["show", ""],
        vec!["events", ""],
        vec!["report", ""],
        vec!["replay", ""],
        vec!["resume", ""],
        vec!["cancel", ""],
        vec!["reconcile", "", "c1", "--happened"],
        vec!["approvals", "--run", ""],
        vec!["show", " "],
    ] {
        assert_says(&warrant(&store, &args), 2, &["the run id is empty"]);
    }
    for args in [
        vec!["approve", ""],
        vec!["approve", "x-a"],
        vec!["deny", "", "--reason", "r"],
    ] {
        assert_says(
            &warrant(&store, &args),
            2,
            &["is not an approval request id", "`last-a1`"],
        );
    }
}

#[test]
fn a_numeric_flag_shows_the_range_it_accepts() {
    let (_dir, store) = scratch();
    let spec = spec_path("pay-rent/spec.yaml");
    for (args, range) in [
        (
            vec!["run", &spec, "--decisions-max", "99999999999"],
            "1..=4294967295",
        ),
        (vec!["run", &spec, "--decisions-max", "0"], "1..=4294967295"),
        (vec!["run", &spec, "--calls-max", "0"], "1..=4294967295"),
        (
            vec!["run", &spec, "--deadline-ms", "0"],
            "1..=18446744073709551615",
        ),
        (
            vec!["run", &spec, "--call-timeout-ms", "0"],
            "1..=18446744073709551615",
        ),
        (
            vec!["run", &spec, "--wait-max-ms", "0"],
            "1..=18446744073709551615",
        ),
        (
            vec!["run", &spec, "--tokens-max", "0"],
            "1..=18446744073709551615",
        ),
        (
            vec!["run", &spec, "--cost-micro-usd-max", "0"],
            "1..=18446744073709551615",
        ),
        (vec!["bench", "--steps", "0"], "1..=4294967295"),
        (vec!["bench", "--runs", "0"], "1..=4294967295"),
        (vec!["bench", "--workers", "0"], "1..=4294967295"),
        (vec!["bench", "--children", "0"], "1..=4294967295"),
        (vec!["serve", "--max-runs", "0"], "1..=18446744073709551615"),
        (
            vec!["serve", "--client-timeout", "0"],
            "1..=18446744073709551615",
        ),
        (
            vec!["worker", "--max-runs", "0"],
            "1..=18446744073709551615",
        ),
    ] {
        let out = warrant(&store, &args);
        assert_says(&out, 2, &[range]);
        assert!(!stderr(&out).contains("0.."), "{args:?}: {}", stderr(&out));
    }
    assert!(!store.exists(), "nothing was written");
}

#[test]
fn an_mcp_server_that_never_speaks_mcp_is_told_as_one_that_did_not_finish_its_handshake() {
    let (dir, store) = scratch();
    std::fs::write(
        dir.path().join("spec.yaml"),
        "version: warrant/v1\nid: garbage\nobjective: o\ndecider: scripted:s.yaml\n\
         providers: {noisy: {mcp: {command: [sh, -c, 'echo this is not JSON-RPC; sleep 5']}}}\n\
         steps: [{id: a, provider: noisy, tools: [t]}]\n\
         limits: {deadline_ms: 700}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("s.yaml"), "steps:\n  a:\n    - done: x\n").unwrap();
    let started = std::time::Instant::now();
    let out = warrant(
        &store,
        &["run", dir.path().join("spec.yaml").to_str().unwrap(), "-q"],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("provider `noisy`: the MCP server did not complete the MCP handshake")
            && err.contains("check what it printed")
            && err.contains("within 700 ms"),
        "{err}"
    );
}

#[test]
fn a_log_with_a_deleted_event_row_says_which_events_are_missing() {
    let (_dir, store) = scratch();
    let ran = warrant(
        &store,
        &["run", &spec_path("pay-rent/spec.yaml"), "--json", "-q"],
    );
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let run = json(&ran)["run_id"].as_str().unwrap().to_owned();
    // The second row of the run's log (its events 2 to 1+n) deleted, outside Warrant.
    let deleted = tempfile::NamedTempFile::new().unwrap();
    python(
        &format!(
            "import sqlite3,sys\n\
             c=sqlite3.connect(sys.argv[1])\n\
             seq,n=c.execute(\"select seq, n_events from events where run_id='{run}' order by seq limit 1 offset 1\").fetchone()\n\
             c.execute('delete from events where run_id=? and seq=?', ('{run}', seq)); c.commit()\n\
             open('{}','w').write(str(seq)+' '+str(seq+n-1))",
            deleted.path().display()
        ),
        &store,
    );
    let range = std::fs::read_to_string(deleted.path()).unwrap();
    let (from, to) = range.split_once(' ').unwrap();
    let missing = if from == to {
        format!("event {from}")
    } else {
        format!("events {from} to {to}")
    };
    for args in [["show", "last"], ["report", "last"], ["resume", "last"]] {
        let out = warrant(&store, &args);
        assert_says(
            &out,
            1,
            &[&format!(
                "run `{run}`'s log is missing {missing} (the store was changed outside Warrant)"
            )],
        );
    }
    // Its last row deleted too: the log's end is missing, not the run.
    python(
        &format!(
            "import sqlite3,sys\n\
             c=sqlite3.connect(sys.argv[1])\n\
             c.execute(\"delete from events where run_id='{run}' and seq=(select max(seq) from events where run_id='{run}')\"); c.commit()"
        ),
        &store,
    );
    assert_says(
        &warrant(&store, &["show", "last"]),
        1,
        &[&format!("run `{run}`'s log is missing events {from} to ")],
    );
}

#[test]
fn an_empty_store_file_is_a_new_store_for_every_command() {
    let (_dir, store) = scratch();
    std::fs::write(&store, "").unwrap();
    let runs = warrant(&store, &["runs"]);
    assert_says(&runs, 0, &["no runs yet in"]);
    assert_says(&warrant(&store, &["show", "last"]), 2, &["no runs yet"]);
    assert_says(&warrant(&store, &["approvals"]), 0, &[]);
    assert_eq!(
        std::fs::metadata(&store).unwrap().len(),
        0,
        "reading wrote nothing"
    );
    let ran = warrant(&store, &["run", &spec_path("pay-rent/spec.yaml"), "-q"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let runs = warrant(&store, &["runs"]);
    assert_eq!(runs.status.code(), Some(0), "{}", stderr(&runs));
    assert_eq!(stdout(&runs).lines().count(), 1, "{}", stdout(&runs));
    assert_says(&warrant(&store, &["show", "last"]), 0, &[]);
}

#[test]
fn an_approval_request_takes_last_and_a_prefix_as_its_run() {
    let (_dir, store) = scratch();
    let waiting = ask_transfer(&store);
    let run = waiting["run_id"].as_str().unwrap().to_owned();
    let approve = warrant(&store, &["approve", "last-a1"]);
    assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
    assert!(
        stdout(&approve).contains(&format!("{run}-a1 approved")),
        "{}",
        stdout(&approve)
    );
    // A prefix, for a request already answered: it names the request in full.
    let again = warrant(
        &store,
        &["deny", &format!("{}-a1", &run[..12]), "--reason", "r"],
    );
    assert!(
        stdout(&again).contains(&format!("{run}-a1 was already")) || stderr(&again).contains(&run),
        "{}{}",
        stdout(&again),
        stderr(&again)
    );
    assert_says(
        &warrant(&store, &["approve", "last"]),
        2,
        &["`last` is not an approval request id", "`last-a1`"],
    );
}

/// A tree of `depth` runs below the root, each delegating to the next, inline.
fn nested(depth: u32) -> serde_json::Value {
    if depth == 0 {
        return serde_json::json!({
            "version": "warrant/v1", "id": "leaf", "objective": "o",
            "providers": {"cafe": {"reference": "cafe"}},
            "steps": [{"id": "s", "provider": "cafe", "tools": ["read_menu"]}]
        });
    }
    serde_json::json!({
        "version": "warrant/v1", "id": format!("n{depth}"), "objective": "o", "providers": {},
        "steps": [{"id": "s", "required": true,
                   "delegate": {"children": [{"spec": nested(depth - 1)}]}}]
    })
}

#[test]
fn validate_refuses_a_delegation_tree_deeper_than_the_limit_naming_the_child() {
    let (dir, store) = scratch();
    let deepest = warrant_core::spec::DEPTH_MAX;
    let write = |name: &str, depth: u32| {
        let path = dir.path().join(name);
        std::fs::write(&path, nested(depth).to_string()).unwrap();
        path.display().to_string()
    };
    let ok = write("ok.json", deepest);
    let out = warrant(&store, &["validate", &ok]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let deep = write("deep.json", deepest + 1);
    let child = "steps[0].delegate.children[0]";
    let mut path = vec![child; deepest as usize + 1].join(".spec.");
    path.insert_str(0, &format!("{deep}: "));
    assert_says(
        &warrant(&store, &["validate", &deep]),
        2,
        &[
            &format!("{path}: this child would be a run at depth {}", deepest + 1),
            &format!("at most {deepest} deep"),
        ],
    );
}

#[test]
fn validate_with_connect_refuses_a_default_script_calling_a_tool_the_provider_lacks() {
    let (dir, store) = scratch();
    for f in ["spec.yaml", "script.yaml"] {
        std::fs::copy(root().join("examples/pay-rent").join(f), dir.path().join(f)).unwrap();
    }
    let script = dir.path().join("script.yaml");
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(
        &script,
        text.replace("call: transfer", "call: wire_everything"),
    )
    .unwrap();
    let spec = dir.path().join("spec.yaml").display().to_string();
    assert_says(
        &warrant(&store, &["validate", &spec, "--connect"]),
        2,
        &[
            &format!("{spec}: steps[0] (`pay`)"),
            &format!("script `{}`", script.display()),
            "calls `wire_everything` (its steps.pay[1]), which `bank` does not offer",
        ],
    );
}

#[test]
fn validate_refuses_limits_of_zero_with_file_field_and_line() {
    let (dir, store) = scratch();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "version: warrant/v1\nid: zeros\nobjective: o\n\
         providers:\n  fs:\n    mcp: {command: [x], output_bytes_max: 0}\n\
         \x20 api:\n    openapi: {document: d.json, output_bytes_max: 0, operations_max: 0}\n\
         steps:\n  - id: a\n    provider: fs\n    tools: [t]\n    decisions_max: 0\n\
         limits:\n  calls_max: 0\n  tokens_max: 0\n",
    )
    .unwrap();
    let shown = spec.display().to_string();
    assert_says(
        &warrant(&store, &["validate", &shown]),
        2,
        &[
            &format!("{shown}:6: providers.fs.mcp.output_bytes_max: must be at least 1"),
            &format!("{shown}:8: providers.api.openapi.output_bytes_max: must be at least 1"),
            "providers.api.openapi.operations_max: must be at least 1",
            &format!("{shown}:13: steps[0].decisions_max: must be at least 1"),
            &format!("{shown}:15: limits.calls_max: must be at least 1"),
            "limits.tokens_max: must be at least 1",
        ],
    );
}

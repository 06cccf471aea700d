//! Delegation through the binary: the README's example, a child's ask answered where the
//! parent's are, the tree re-entered by any of its ids, cancellation across the tree, replay of
//! every run of a tree, and the loader's refusal of a child that could do more than its parent.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod support;

use support::{scratch, warrant, warrant_in};

const EXAMPLE: &str = "examples/delegation/spec.yaml";

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The ids of the runs in the store, newest first.
fn run_ids(store: &std::path::Path) -> Vec<String> {
    let out = warrant(store, &["runs", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    runs.as_array()
        .or_else(|| runs["runs"].as_array())
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_delegation_example_attains_and_its_report_names_the_children() {
    let (_dir, store) = scratch();
    let out = warrant(&store, &["run", "-q", EXAMPLE]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("children"), "{stdout}");
    // What the research child returned is carried in the parent with the child's lineage.
    let ids = run_ids(&store);
    let root = ids.iter().find(|id| !id.contains('.')).unwrap().clone();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(
        stdout.contains(&format!(
            "research.milk = \"oat\"  <- {root}.1:menu/c1 read_menu"
        )),
        "{stdout}"
    );
    let report = warrant(&store, &["report", "last", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["children"].as_array().unwrap().len(), 2);
    assert_eq!(report["children"][0]["outcome"]["outcome"], "attained");
    let child = warrant(&store, &["report", &format!("{root}.2"), "--json"]);
    let child: serde_json::Value = serde_json::from_slice(&child.stdout).unwrap();
    assert_eq!(child["parent"]["run"], root.as_str());
    assert_eq!(child["parent"]["depth"], 1);
    // Replay verifies the parent and each child, each from its own log.
    let replay = warrant(&store, &["replay", "--verify", "last"]);
    let (stdout, _) = text(&replay);
    assert_eq!(replay.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.matches("identical to the log").count(),
        3,
        "{stdout}"
    );
}

#[test]
fn a_childs_ask_is_answered_where_the_parents_are_and_the_tree_goes_on() {
    let (_dir, store) = scratch();
    let out = warrant(
        &store,
        &["run", "-q", EXAMPLE, "--ask-tool", "check_design_drift"],
    );
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    let ids = run_ids(&store);
    let root = ids.iter().find(|id| !id.contains('.')).unwrap().clone();
    // Listed under its tree, naming the child that asked, its arguments and provenance.
    let listed = warrant(&store, &["approvals"]);
    let (stdout, _) = text(&listed);
    assert!(stdout.contains(&format!("tree {root}:")), "{stdout}");
    assert!(
        stdout.contains(&format!("asked by child {root}.2 (of {root}, step drift)")),
        "{stdout}"
    );
    assert!(
        stdout.contains("/color   <- carried value `input.color`"),
        "{stdout}"
    );
    // The parent's own listing routes the child's ask up.
    let of_parent = warrant(&store, &["approvals", "--run", &root, "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&of_parent.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    let request = rows[0]["request"].as_str().unwrap().to_owned();
    assert_eq!(rows[0]["parent"], root.as_str());
    assert_eq!(
        warrant(&store, &["runs", "--status", "waiting", "--json"])
            .status
            .code(),
        Some(0)
    );
    let approve = warrant(&store, &["approve", &request]);
    assert_eq!(approve.status.code(), Some(0), "{:?}", text(&approve));
    // Resuming by the child's id carries the whole tree on.
    let resumed = warrant(&store, &["resume", "-q", &format!("{root}.2")]);
    let (stdout, stderr) = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{stdout}{stderr}");
    let show = warrant(&store, &["show", &root]);
    let (stdout, _) = text(&show);
    assert!(stdout.contains("status   attained"), "{stdout}");
}

#[test]
fn cancelling_a_waiting_parent_cancels_its_children() {
    let (_dir, store) = scratch();
    let out = warrant(
        &store,
        &["run", "-q", EXAMPLE, "--ask-tool", "check_design_drift"],
    );
    assert_eq!(out.status.code(), Some(3));
    let ids = run_ids(&store);
    let root = ids.iter().find(|id| !id.contains('.')).unwrap().clone();
    let cancel = warrant(&store, &["cancel", &root, "--reason", "changed my mind"]);
    assert_eq!(cancel.status.code(), Some(0), "{:?}", text(&cancel));
    for id in [root.clone(), format!("{root}.2")] {
        let show = warrant(&store, &["show", &id]);
        let (stdout, _) = text(&show);
        assert!(stdout.contains("status   cancelled"), "{id}: {stdout}");
    }
    let listed = warrant(&store, &["approvals"]);
    assert!(text(&listed).1.contains("no pending approval requests"));
}

#[test]
fn a_child_that_could_do_more_than_its_parent_is_refused_before_anything_runs() {
    let (dir, store) = scratch();
    let d = dir.path();
    std::fs::write(
        d.join("child.yaml"),
        "version: warrant/v1
id: child
objective: Order.
decider: scripted:child-script.yaml
providers:
  cafe: {reference: cafe}
steps:
  - id: buy
    provider: cafe
    tools: [read_menu, order_latte]
",
    )
    .unwrap();
    std::fs::write(
        d.join("child-script.yaml"),
        "steps:\n  buy:\n    - done: x\n",
    )
    .unwrap();
    std::fs::write(
        d.join("parent.yaml"),
        "version: warrant/v1
id: parent
objective: Read, and delegate.
providers:
  cafe: {reference: cafe}
steps:
  - id: look
    provider: cafe
    tools: [read_menu]
  - id: work
    delegate:
      children:
        - spec: child.yaml
          share: [cafe]
          inputs:
            what: {value: latte}
          returns:
            thing: buy.nothing
",
    )
    .unwrap();
    let out = warrant_in(d, &store, &["validate", "parent.yaml"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    for needle in [
        "`order_latte` on `cafe` is beyond what the delegation allows the child",
        "the child spec declares no input `what`",
        "`buy.nothing` is not an output the child spec publishes",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(!store.exists(), "nothing was written");
}

#[test]
fn a_child_whose_script_changed_is_not_re_entered_until_it_is_put_back() {
    let (dir, store) = scratch();
    let d = dir.path();
    for f in [
        "spec.yaml",
        "script.yaml",
        "research.yaml",
        "research-script.yaml",
        "check.yaml",
        "check-script.yaml",
    ] {
        std::fs::copy(
            support::root().join("examples/delegation").join(f),
            d.join(f),
        )
        .unwrap();
    }
    let out = warrant_in(
        d,
        &store,
        &["run", "-q", "spec.yaml", "--ask-tool", "check_design_drift"],
    );
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    let rows = warrant_in(d, &store, &["approvals", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&rows.stdout).unwrap();
    let request = rows[0]["request"].as_str().unwrap().to_owned();
    assert_eq!(
        warrant_in(d, &store, &["approve", &request]).status.code(),
        Some(0)
    );
    let script = std::fs::read_to_string(d.join("check-script.yaml")).unwrap();
    std::fs::write(
        d.join("check-script.yaml"),
        script.replace("within", "near"),
    )
    .unwrap();
    let refused = warrant_in(d, &store, &["resume", "-q", "last"]);
    let (stdout, stderr) = text(&refused);
    assert_ne!(refused.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("cannot be re-entered")
            && stderr.contains("not configured as when the run started"),
        "{stderr}"
    );
    std::fs::write(d.join("check-script.yaml"), script).unwrap();
    let resumed = warrant_in(d, &store, &["resume", "-q", "last"]);
    let (stdout, stderr) = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{stdout}{stderr}");
}

//! Standing grants through the binary: "always allow this" on an approval keeps a grant for
//! the same tool and arguments; the next run's same call is approved at once by it (the log
//! names the grant, and replays identically); a revoked grant covers nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

mod support;

use serde_json::Value;
use support::*;

fn events(store: &std::path::Path, run: &str) -> Vec<Value> {
    stdout(&warrant(store, &["events", run, "--json"]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn always_allowing_an_approval_lets_the_next_same_call_through_until_revoked() {
    let (_dir, store) = scratch();
    let first = ask_transfer(&store);
    let request = first["approvals"][0]["request"]
        .as_str()
        .unwrap()
        .to_owned();
    let always = warrant(&store, &["approve", &request, "--always", "--as", "bob"]);
    assert_eq!(always.status.code(), Some(0), "{}", stderr(&always));
    let said = stdout(&always);
    assert!(
        said.contains(&format!("{request} approved by bob")),
        "{said}"
    );
    assert!(said.contains("standing grant g"), "{said}");
    let listed = json(&warrant(&store, &["grants", "list", "--json"]));
    let grant = listed[0].clone();
    assert_eq!(grant["tool"], "transfer");
    assert_eq!(grant["by"], "bob");
    assert_eq!(grant["args"]["amount"]["one_of"][0], 950);
    let id = grant["id"].as_str().unwrap().to_owned();

    // The same call in a new run: approved at once by the grant, the run attains.
    let second = warrant(
        &store,
        &[
            "run",
            "examples/pay-rent/spec.yaml",
            "--ask-tool",
            "transfer",
            "--json",
            "-q",
        ],
    );
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let run = json(&second)["run_id"].as_str().unwrap().to_owned();
    let log = events(&store, &run);
    let granted = log
        .iter()
        .find(|e| e["type"] == "approval_granted")
        .expect("the grant answered");
    assert_eq!(granted["grant"]["id"], id.as_str());
    let consumed = log
        .iter()
        .find(|e| e["type"] == "approval_consumed")
        .unwrap();
    assert_eq!(consumed["grant"], id.as_str());
    let replayed = warrant(&store, &["replay", &run, "--verify"]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stdout(&replayed));
    let shown = stdout(&warrant(&store, &["events", &run]));
    assert!(
        shown.contains(&format!("approved by standing grant {id}")),
        "{shown}"
    );

    // Revoked: the next run asks again.
    let revoked = warrant(&store, &["grants", "revoke", &id, "--as", "bob"]);
    assert!(
        stdout(&revoked).contains("revoked standing grant"),
        "{}",
        stdout(&revoked)
    );
    assert!(
        json(&warrant(&store, &["grants", "list", "--json"]))
            .as_array()
            .unwrap()
            .is_empty()
    );
    let all = json(&warrant(&store, &["grants", "list", "--all", "--json"]));
    assert_eq!(all[0]["revoked"]["by"], "bob");
    ask_transfer(&store);
}

#[test]
fn a_grant_given_by_hand_is_checked_and_covers_only_within_its_constraints() {
    let (_dir, store) = scratch();
    // A bound that constrains nothing, or runs backwards, is refused, naming the argument.
    let bad = warrant(
        &store,
        &[
            "grants",
            "add",
            "--provider",
            "bank",
            "--tool",
            "transfer",
            "--one-of",
            "to=[]",
        ],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("args.to: constrains nothing"),
        "{}",
        stderr(&bad)
    );
    // At most 100: the example's 950 is outside it, and still asked about.
    let small = warrant(
        &store,
        &[
            "grants",
            "add",
            "--provider",
            "bank",
            "--tool",
            "transfer",
            "--at-most",
            "amount=100",
            "--until",
            "+1d",
        ],
    );
    assert_eq!(small.status.code(), Some(0), "{}", stderr(&small));
    assert!(
        stdout(&small).contains("where amount <= 100"),
        "{}",
        stdout(&small)
    );
    ask_transfer(&store);
}

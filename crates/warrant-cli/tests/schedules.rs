//! `warrant schedules`: a schedule of a catalog spec started by `warrant serve` at its ticks —
//! on a SQLite file, a backfill of missed ticks run as its catch-up says, paused and resumed;
//! on PostgreSQL, two servers of a fleet, one killed right after it claimed a tick: every
//! tick ran exactly once.

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
use std::time::Duration;

use serde_json::Value;
use support::*;

const MINUTE: u64 = 60_000;

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
}

/// The schedule's ticks (`warrant schedules ticks ID --json`).
fn ticks(store: &Path, id: &str) -> Vec<Value> {
    json(&warrant(
        store,
        &["schedules", "ticks", id, "--limit", "0", "--json"],
    ))
    .as_array()
    .unwrap()
    .clone()
}

/// The runs of the store (`warrant runs --json`), by id.
fn runs(store: &Path) -> Vec<Value> {
    json(&warrant(store, &["runs", "--json"]))
        .as_array()
        .unwrap()
        .clone()
}

/// Waits (bounded) until `done` holds of the ticks.
fn until_ticks(store: &Path, id: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut last = Vec::new();
    for _ in 0..600 {
        last = ticks(store, id);
        if done(&last) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the ticks of `{id}` never {what}: {last:#?}");
}

/// Each tick that started has its own run, in the store, of the schedule's spec; no run of
/// the spec is not a tick's.
fn each_tick_ran_once(store: &Path, ticks: &[Value]) {
    let mut run_ids: Vec<&str> = ticks
        .iter()
        .map(|t| {
            assert_eq!(t["state"], "started", "{t}");
            t["run_id"].as_str().unwrap()
        })
        .collect();
    run_ids.sort_unstable();
    let n = run_ids.len();
    run_ids.dedup();
    assert_eq!(run_ids.len(), n, "two ticks share a run: {ticks:#?}");
    let mut in_store: Vec<String> = runs(store)
        .iter()
        .filter(|r| r["spec_id"] == "pay-rent")
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect();
    in_store.sort_unstable();
    assert_eq!(
        in_store, run_ids,
        "the store's runs are not the ticks' runs"
    );
}

#[test]
fn a_backfill_runs_each_missed_tick_once_and_a_paused_schedule_starts_nothing() {
    let (_dir, store) = scratch();
    ok(&warrant(
        &store,
        &["specs", "add", "examples/pay-rent/spec.yaml"],
    ));
    // A bad expression, zone or spec is refused, naming what is wrong; nothing is kept.
    for (args, says) in [
        (
            vec!["--cron", "61 * * * *"],
            "--cron: minute: 61 is outside 0-59",
        ),
        (
            vec!["--cron", "* * * * *", "--tz", "Mars/Olympus"],
            "Mars/Olympus",
        ),
    ] {
        let mut all = vec!["schedules", "add", "bad", "--spec", "pay-rent"];
        all.extend(args);
        let out = warrant(&store, &all);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    let out = warrant(
        &store,
        &[
            "schedules",
            "add",
            "bad",
            "--spec",
            "nothing",
            "--cron",
            "* * * * *",
        ],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nothing"), "{}", stderr(&out));
    // Every minute, counted from three and a half minutes ago, every missed tick run, each
    // once the one before has ended.
    let from = (now_ms() - 3 * MINUTE - MINUTE / 2).to_string();
    let added = ok(&warrant(
        &store,
        &[
            "schedules",
            "add",
            "minutely",
            "--spec",
            "pay-rent",
            "--cron",
            "* * * * *",
            "--tz",
            "Europe/Berlin",
            "--catch-up",
            "all",
            "--overlap",
            "queue",
            "--from",
            &from,
        ],
    ));
    assert!(
        added.contains("added schedule `minutely`: next tick"),
        "{added}"
    );
    let listed = json(&warrant(&store, &["schedules", "list", "--json"]));
    assert_eq!(listed[0]["id"], "minutely");
    assert_eq!(listed[0]["cron"], "* * * * *");
    assert!(listed[0]["next_tick_ms"].as_u64().unwrap() > now_ms());
    assert!(listed[0]["last_tick"].is_null());

    let server = start_server(&store, &root().join("examples"), &[], None);
    let started = until_ticks(&store, "minutely", "started their runs", |t| {
        t.len() >= 3 && t.iter().all(|t| t["state"] == "started")
    });
    // Three or four ticks (a minute may turn meanwhile), each its own run.
    assert!((3..=5).contains(&started.len()), "{started:#?}");
    for t in &started {
        let run = t["run_id"].as_str().unwrap();
        let shown = json(&warrant(&store, &["show", run, "--json"]));
        assert_eq!(shown["spec"]["id"], "pay-rent", "{shown}");
    }
    // Through the API: listed with its last tick, and paused by an operator; its ticks
    // start nothing more.
    let api = |method: &str, path: &str| -> Value {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let client = warrant_http::client();
                let url = format!("{}{path}", server.base);
                let r = match method {
                    "get" => client.get(&url),
                    _ => client.post(&url),
                }
                .send()
                .await
                .unwrap();
                let status = r.status().as_u16();
                let kind = r.headers()["content-type"].to_str().unwrap().to_owned();
                let body: Value = r.json().await.unwrap();
                let doc: Value = client
                    .get(format!("{}/v1/openapi.json", server.base))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                conforms(&doc, method, path, status, &kind, &body);
                assert_eq!(status, 200, "{body}");
                body
            })
    };
    let listed = api("get", "/v1/schedules");
    assert_eq!(listed[0]["id"], "minutely");
    assert_eq!(listed[0]["overlap"], "queue");
    assert_eq!(listed[0]["last_tick"]["state"], "started");
    let paused = api("post", "/v1/schedules/minutely/pause");
    assert_eq!(paused["paused"], true);
    assert!(paused.get("next_tick_ms").is_none(), "{paused}");
    let listed = json(&warrant(&store, &["schedules", "list", "--json"]));
    assert_eq!(listed[0]["paused"], true);
    assert!(listed[0]["next_tick_ms"].is_null());
    drop(server);
    let now = ticks(&store, "minutely");
    each_tick_ran_once(&store, &now);
    let resumed = ok(&warrant(&store, &["schedules", "resume", "minutely"]));
    assert!(
        resumed.contains("resumed schedule `minutely`: next tick"),
        "{resumed}"
    );
    let text = ok(&warrant(&store, &["schedules", "ticks", "minutely"]));
    assert_eq!(text.lines().count(), now.len(), "{text}");
    assert!(ok(&warrant(&store, &["schedules", "remove", "minutely"])).contains("removed"));
    assert!(ticks(&store, "minutely").is_empty());
}

#[test]
fn two_servers_of_a_fleet_run_each_tick_once_though_one_dies_right_after_claiming_one() {
    let url = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(warrant_store::contract::postgres_scratch("schedules"));
    let at = Path::new(&url);
    ok(&warrant(at, &["store", "migrate"]));
    ok(&warrant(
        at,
        &["specs", "add", "examples/pay-rent/spec.yaml"],
    ));
    // Five missed ticks, the oldest more than the start grace ago; no worker drives their
    // runs, so each tick cancels the one before (overlap: cancel) and starts its own.
    let from = (now_ms() - 5 * MINUTE - MINUTE / 2).to_string();
    ok(&warrant(
        at,
        &[
            "schedules",
            "add",
            "minutely",
            "--spec",
            "pay-rent",
            "--cron",
            "* * * * *",
            "--catch-up",
            "all",
            "--overlap",
            "cancel",
            "--from",
            &from,
        ],
    ));
    let specs = root().join("examples");
    // The first server dies right after its first claim, before the run starts.
    let mut dying = start_server(at, &specs, &[], Some("after-tick-claim"));
    let status = dying.child.wait().unwrap();
    assert!(
        !status.success(),
        "the server was to die at the fault point"
    );
    let claimed = ticks(at, "minutely");
    assert_eq!(claimed.len(), 1, "{claimed:#?}");
    let orphan = claimed[0]["run_id"].as_str().unwrap().to_owned();
    assert!(
        runs(at).iter().all(|r| r["run_id"] != orphan.as_str()),
        "the claimed tick's run had not started"
    );
    // Two servers go on: the claimed tick's run is started under its id, the rest once each.
    let (_a, _b) = (
        start_server(at, &specs, &[], None),
        start_server(at, &specs, &[], None),
    );
    let done = until_ticks(at, "minutely", "all started", |t| {
        t.len() >= 5
            && t.iter().all(|t| t["state"] == "started")
            && t.iter().all(|t| {
                let run = t["run_id"].as_str().unwrap_or_default();
                runs(at).iter().any(|r| r["run_id"] == run)
            })
    });
    assert!(done.iter().any(|t| t["run_id"] == orphan.as_str()));
    each_tick_ran_once(at, &done);
}

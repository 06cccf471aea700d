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

/// Over HTTP: a grant given for the tenant lets a run's held call through at once; listed,
/// then revoked; each answer is one the API document promises.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_given_over_http_covers_the_tenants_runs_until_revoked() {
    let (_dir, store) = scratch();
    let server = start_server(&store, &root().join("examples"), &[], None);
    let client = warrant_http::client();
    let doc: Value = client
        .get(format!("{}/v1/openapi.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let call = |method: &'static str, path: String, body: Option<Value>| {
        let (client, doc, base) = (client.clone(), doc.clone(), server.base.clone());
        async move {
            let url = format!("{base}{path}");
            let req = match method {
                "get" => client.get(&url),
                _ => client.post(&url).json(&body.unwrap_or(Value::Null)),
            };
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let kind = r.headers()["content-type"].to_str().unwrap().to_owned();
            let v: Value = r.json().await.unwrap();
            conforms(
                &doc,
                method,
                path.split('?').next().unwrap(),
                status,
                &kind,
                &v,
            );
            (status, v)
        }
    };
    let (status, grant) = call(
        "post",
        "/v1/grants".into(),
        Some(serde_json::json!({
            "provider": "bank", "tool": "transfer",
            "args": {"amount": {"max": 1000}, "to": {"one_of": ["DE89370400440532013000"]}},
            "note": "rent"
        })),
    )
    .await;
    assert_eq!(status, 201, "{grant}");
    let id = grant["id"].as_str().unwrap().to_owned();
    assert_eq!(grant["tenant"], "local");
    // A bad grant is refused, naming what is wrong.
    let (status, problem) = call(
        "post",
        "/v1/grants".into(),
        Some(serde_json::json!({"provider": "bank", "tool": "", "args": {}})),
    )
    .await;
    assert_eq!(status, 422, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("`tool` is empty"),
        "{problem}"
    );
    // A run whose transfer is held for approval: the grant answers it at once.
    let (status, started) = call(
        "post",
        "/v1/runs".into(),
        Some(serde_json::json!({"spec_path": "pay-rent/spec.yaml", "ask_tools": ["transfer"]})),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    let run = started["run_id"].as_str().unwrap().to_owned();
    let mut status_now = String::new();
    for _ in 0..200 {
        let (_, v) = call("get", format!("/v1/runs/{run}"), None).await;
        status_now = v["status"].as_str().unwrap().to_owned();
        if status_now == "attained" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status_now, "attained");
    let (_, listed) = call("get", "/v1/grants".into(), None).await;
    assert_eq!(listed[0]["id"], id.as_str());
    let (status, revoked) = call("post", format!("/v1/grants/{id}/revoke"), None).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["revoked"]["by"], "local/local");
    let (_, live) = call("get", "/v1/grants".into(), None).await;
    assert!(live.as_array().unwrap().is_empty(), "{live}");
    let (_, all) = call("get", "/v1/grants?all=true".into(), None).await;
    assert_eq!(all.as_array().unwrap().len(), 1);
    let (status, _) = call("post", "/v1/grants/g-none/revoke".into(), None).await;
    assert_eq!(status, 404);
}

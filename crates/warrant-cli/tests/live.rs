//! Live model deciders against a loopback server that answers with recorded wire payloads
//! (server-sent events delivered chunk by chunk, error statuses, streams cut or stalled), and
//! records every request. No network: the deciders' base URLs point at the loopback server.
//! Request bodies are compared with the snapshots in `tests/live/` (set `WARRANT_BLESS=1` to
//! rewrite them after a deliberate change, then review the diff).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One canned answer.
#[derive(Clone, Debug)]
struct Canned {
    status: u16,
    headers: Vec<(&'static str, String)>,
    /// Written one at a time, flushed, with `gap_ms` between them.
    chunks: Vec<String>,
    gap_ms: u64,
    /// After the chunks: keep the connection open this long before closing.
    hang_ms: u64,
}

impl Canned {
    fn ok(chunks: Vec<String>) -> Canned {
        Canned {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            chunks,
            gap_ms: 2,
            hang_ms: 0,
        }
    }

    fn status(status: u16, body: Value) -> Canned {
        Canned {
            status,
            headers: vec![("content-type", "application/json".into())],
            chunks: vec![body.to_string()],
            gap_ms: 0,
            hang_ms: 0,
        }
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

struct Stub {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// Serves `answers` in order, one per request; then 500s.
fn stub(answers: Vec<Canned>) -> Stub {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut answers = answers.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = read_request(&mut stream) else {
                continue;
            };
            log.lock().unwrap().push(request);
            let answer = answers.next().unwrap_or_else(|| {
                Canned::status(500, json!({"error": {"message": "no more canned answers"}}))
            });
            let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", answer.status);
            for (k, v) in &answer.headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            if stream.write_all(head.as_bytes()).is_err() {
                continue;
            }
            for chunk in &answer.chunks {
                if stream.write_all(chunk.as_bytes()).is_err() || stream.flush().is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(answer.gap_ms));
            }
            std::thread::sleep(Duration::from_millis(answer.hang_ms));
        }
    });
    Stub { url, seen }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
            if k == "content-length" {
                length = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        line: line.trim_end().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// `data: {json}` events.
fn sse(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

/// `event: name` + `data: {json}` events (Anthropic's shape).
fn named(events: &[(&str, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(n, e)| format!("event: {n}\ndata: {e}\n\n"))
        .collect()
}

const SECRET: &str = "sk-test-0123456789-SECRET";

const SPEC: &str = "\
version: warrant/v1
id: menu
objective: Read the cafe's menu and report the milks it offers.
providers:
  cafe: {reference: cafe}
steps:
  - id: menu
    provider: cafe
    tools: [read_menu]
    required: true
limits: {decisions_max: 6, deadline_ms: 20000}
";

struct Ran {
    code: Option<i32>,
    summary: Value,
    stderr: String,
    events: String,
    dir: tempfile::TempDir,
}

/// `warrant ARGS` in `dir`, with the keys and base URLs of `stub`.
/// `warrant` in `dir`, on the store there, with no key and no base URL.
fn offline(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_warrant"));
    cmd.current_dir(dir).env("WARRANT_STORE", dir.join("w.db"));
    cmd
}

/// `warrant` in `dir`, with every provider's key and base URL at `stub`.
fn online(dir: &Path, stub: &Stub) -> Command {
    let mut cmd = offline(dir);
    for provider in ["OPENAI", "ANTHROPIC", "GEMINI"] {
        cmd.env(format!("{provider}_API_KEY"), SECRET)
            .env(format!("{provider}_BASE_URL"), &stub.url);
    }
    cmd
}

/// `warrant ARGS` in `dir`, with the keys and base URLs of `stub`.
fn warrant(dir: &Path, stub: &Stub, args: &[&str]) -> std::process::Output {
    online(dir, stub).args(args).output().unwrap()
}

/// Runs `spec` with `decider`, its provider's base URL at `stub`.
fn run_with(stub: &Stub, decider: &str, spec: &str) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let out = online(dir.path(), stub)
        .args(["run", "spec.yaml", "--decider", decider, "--json", "-q"])
        .output()
        .unwrap();
    let events = offline(dir.path())
        .args(["events", "last", "--json"])
        .output()
        .unwrap();
    Ran {
        code: out.status.code(),
        summary: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        events: String::from_utf8_lossy(&events.stdout).into_owned(),
        dir,
    }
}

fn run(stub: &Stub, decider: &str) -> Ran {
    run_with(stub, decider, SPEC)
}

impl Ran {
    fn events(&self) -> Vec<Value> {
        self.events
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    fn replays(&self) {
        // Offline: no key, no endpoint.
        let out = offline(self.dir.path())
            .args(["replay", "last", "--verify"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "replay: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    /// The secret appears in no event and nowhere on the terminal.
    fn kept_the_secret(&self) {
        assert!(!self.events.contains(SECRET), "the key reached the log");
        assert!(!self.stderr.contains(SECRET), "the key reached stderr");
        assert!(!self.summary.to_string().contains(SECRET));
    }
}

/// Compares `body` with the snapshot `name`, or writes it under `WARRANT_BLESS=1`.
fn snapshot(name: &str, body: &Value) {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/live")
        .join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(body).unwrap() + "\n";
    if std::env::var_os("WARRANT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot {}: run with WARRANT_BLESS=1", path.display()));
    assert_eq!(
        text,
        want,
        "the request body differs from {}",
        path.display()
    );
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

// ---- OpenAI Chat Completions ----

fn chat_call(id: &str, name: &str, args: &str) -> Vec<String> {
    let (head, tail) = args.split_at(args.len() / 2);
    sse(&[
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": head}}]}, "finish_reason": null}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}, "finish_reason": null}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 412, "completion_tokens": 18, "total_tokens": 430, "prompt_tokens_details": {"cached_tokens": 128}, "completion_tokens_details": {"reasoning_tokens": 0}}}),
    ])
    .into_iter()
    .chain(["data: [DONE]\n\n".to_owned()])
    .collect()
}

fn chat_done(summary: &str) -> Vec<String> {
    chat_call(
        "call_done",
        "warrant_done",
        &json!({"summary": summary}).to_string(),
    )
}

#[test]
fn openai_chat_tool_call_then_done_attains_and_sends_exactly_what_was_asked() {
    let s = stub(vec![
        Canned::ok(chat_call("call_1", "read_menu", "{}")),
        Canned::ok(chat_done("the menu lists whole, oat, soy and almond")),
    ]);
    let r = run(&s, "openai:gpt-4.1?max_output_tokens=800");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.summary["outcome"], "attained");
    assert_eq!(r.summary["route_key"], "cafe/read:read_menu");
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].line, "POST /chat/completions HTTP/1.1");
    assert_eq!(
        header(&seen[0], "authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    // The first request whole; the second carries the call paired with its result.
    snapshot("openai-chat-first", &seen[0].body);
    let messages = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "c1");
    assert!(messages[3]["content"].as_str().unwrap().contains("almond"));
    // Usage from the stream's last chunk, priced from the table.
    let decided = r.of("decided");
    assert_eq!(decided[0]["usage"]["input_tokens"], 412);
    assert_eq!(decided[0]["usage"]["cached_tokens"], 128);
    // (412-128)*2 + 128*0.5 + 18*8 micro-USD.
    assert_eq!(decided[0]["usage"]["cost_micro_usd"], 568 + 64 + 144);
    // The report sums the decisions' usage as evidence: the run's, its step's, and as text.
    let report = offline(r.dir.path())
        .args(["report", "last", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let usage = &report["usage"];
    assert_eq!(usage["decisions"], 2, "{usage}");
    assert_eq!(usage["input_tokens"], 824);
    assert_eq!(usage["output_tokens"], 36);
    assert_eq!(usage["cached_tokens"], 256);
    assert_eq!(usage["cost_micro_usd"], 2 * 776);
    assert!(usage.get("unpriced").is_none(), "{usage}");
    assert_eq!(report["steps"][0]["usage"], *usage);
    let text = offline(r.dir.path())
        .args(["report", "last"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(
            "usage    860 tokens (824 in, 36 out, 256 cached) over 2 decisions, $0.001552\n"
        ),
        "{text}"
    );
    let shown = offline(r.dir.path())
        .args(["show", "last"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("usage    860 tokens"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
    r.kept_the_secret();
    r.replays();
}

#[test]
fn a_live_model_asks_the_person_and_its_next_request_carries_their_answer() {
    let ask = json!({
        "prompt": "Which milk do you want reported first?",
        "schema": {"type": "string", "enum": ["oat", "soy"]}
    })
    .to_string();
    let s = stub(vec![
        Canned::ok(chat_call("call_ask", "warrant_ask", &ask)),
        Canned::ok(chat_call("call_1", "read_menu", "{}")),
        Canned::ok(chat_done("oat first, then whole, soy and almond")),
    ]);
    let r = run(&s, "openai:gpt-4.1");
    // It waits for the person, with the question the model asked.
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert_eq!(r.summary["outcome"], "waiting");
    assert_eq!(
        r.summary["question"]["prompt"],
        "Which milk do you want reported first?"
    );
    let q = r.summary["question"]["id"].as_str().unwrap().to_owned();
    // The tool was offered, described as a question to the person.
    let offered = seen_tools(&s.seen.lock().unwrap()[0].body);
    assert!(offered.contains(&"warrant_ask".to_owned()), "{offered:?}");
    // Outside its schema, the answer is refused; inside, it is recorded.
    let bad = warrant(r.dir.path(), &s, &["answer", &q, "--text", "almond"]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let good = warrant(r.dir.path(), &s, &["answer", &q, "--text", "oat"]);
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    let resumed = warrant(r.dir.path(), &s, &["resume", "last", "--json", "-q"]);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    // The next request tells the model the person's answer, as theirs.
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let system = seen[1].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("The person's answers to your questions")
            && system.contains(&format!(
                "{q} \"Which milk do you want reported first?\": \"oat\""
            )),
        "{system}"
    );
    r.replays();
}

/// The names of the tools a Chat Completions request offers.
fn seen_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn openai_chat_parallel_tool_calls_run_one_at_a_time_in_order_and_say_so() {
    let two = sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_menu", "arguments": "{}"}},
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_menu", "arguments": "{}"}}
        ]}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 400, "completion_tokens": 30}}),
    ]);
    let s = stub(vec![
        Canned::ok(
            two.into_iter()
                .chain(["data: [DONE]\n\n".to_owned()])
                .collect(),
        ),
        Canned::ok(chat_done("read it twice")),
    ]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.summary["route_key"],
        "cafe/read:read_menu -> cafe/read:read_menu"
    );
    // Two model requests for three decisions: the second call came from the first answer.
    assert_eq!(s.seen.lock().unwrap().len(), 2);
    let decided = r.of("decided");
    assert_eq!(decided.len(), 3);
    assert_eq!(
        decided[1]["exchange"]["parallel"],
        json!({"answer_of_decision": 1, "call": 2, "of": 2})
    );
    r.replays();
}

#[test]
fn openai_chat_refusal_is_a_decline_and_the_step_is_not_attained() {
    let refusal = sse(&[
        json!({"choices": [{"index": 0, "delta": {"refusal": "I can't help with "}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"refusal": "that."}, "finish_reason": "stop"}]}),
    ]);
    let s = stub(vec![Canned::ok(refusal)]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let decided = r.of("decided");
    assert_eq!(decided[0]["decision"], "decline");
    // This stream reported no usage: none is recorded (not zeros nobody reported).
    assert!(decided[0].get("usage").is_none(), "{}", decided[0]);
    assert!(
        decided[0]["reason"]
            .as_str()
            .unwrap()
            .contains("I can't help with that.")
    );
}

#[test]
fn empty_output_length_stop_and_malformed_arguments_are_model_errors_not_crashes() {
    // Empty: neither a call nor text.
    let empty = sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]}),
    ]);
    let s = stub(vec![Canned::ok(empty)]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let failed = r.of("decide_failed");
    assert_eq!(failed[0]["fault"]["code"], "empty_output");
    assert_eq!(failed[0]["fault"]["layer"], "model");
    r.replays();

    // Length: cut at the output cap.
    let cut = sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": "The menu has"}, "finish_reason": "length"}]}),
    ]);
    let s = stub(vec![Canned::ok(cut)]);
    let r = run(&s, "openai:gpt-4.1?max_output_tokens=5");
    let failed = r.of("decide_failed");
    assert_eq!(failed[0]["fault"]["code"], "truncated_output");
    assert_eq!(s.seen.lock().unwrap()[0].body["max_completion_tokens"], 5);

    // Malformed arguments: refused by the Bridge, fed back, and the model recovers.
    let s = stub(vec![
        Canned::ok(chat_call("call_1", "read_menu", "{\"oops\": ")),
        Canned::ok(chat_call("call_2", "read_menu", "{}")),
        Canned::ok(chat_done("read")),
    ]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let finished = r.of("call_finished");
    assert_eq!(finished[0]["status"], "rejected");
    assert_eq!(finished[0]["fault"]["layer"], "model");
    let second = &s.seen.lock().unwrap()[1].body;
    let fed_back = second["messages"][3]["content"].as_str().unwrap();
    assert!(fed_back.contains("rejected"), "{fed_back}");
}

#[test]
fn rate_limits_and_server_errors_are_retried_with_each_attempt_recorded() {
    let s = stub(vec![
        Canned {
            headers: vec![
                ("content-type", "application/json".into()),
                ("retry-after", "1".into()),
            ],
            ..Canned::status(
                429,
                json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
            )
        },
        Canned::status(
            500,
            json!({"error": {"message": "The server had an error"}}),
        ),
        Canned::ok(chat_call("call_1", "read_menu", "{}")),
        Canned::ok(chat_done("done")),
    ]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let attempts = r.of("decided")[0]["exchange"]["attempts"].clone();
    let statuses: Vec<u64> = attempts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [429, 500, 200]);
    assert_eq!(attempts[0]["retry_in_ms"], 1000, "retry-after honoured");

    // A 400 is not retried: the decision fails at once, naming the status.
    let s = stub(vec![Canned::status(
        400,
        json!({"error": {"message": "Invalid schema for function"}}),
    )]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(s.seen.lock().unwrap().len(), 1);
    let failed = r.of("decide_failed");
    assert_eq!(failed[0]["fault"]["code"], "http_status");
    assert!(
        failed[0]["fault"]["message"]
            .as_str()
            .unwrap()
            .contains("400")
    );
    r.kept_the_secret();
}

#[test]
fn a_stream_cut_mid_way_ends_the_decision_with_a_reason_and_a_stalled_one_meets_the_deadline() {
    let mut cut = chat_call("call_1", "read_menu", "{\"a\": 1}");
    cut.truncate(2);
    let s = stub(vec![Canned::ok(cut)]);
    let r = run(&s, "openai:gpt-4.1");
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(
        r.of("decide_failed")[0]["fault"]["code"],
        "stream_incomplete"
    );
    r.replays();

    let mut slow = Canned::ok(chat_call("call_1", "read_menu", "{}"));
    slow.chunks.truncate(1);
    slow.hang_ms = 8000;
    let s = stub(vec![slow]);
    let spec = SPEC.replace("deadline_ms: 20000", "deadline_ms: 1500");
    let r = run_with(&s, "openai:gpt-4.1", &spec);
    assert_eq!(r.summary["outcome"], "exhausted", "{}", r.stderr);
    assert_eq!(
        r.of("decide_failed")[0]["fault"]["code"],
        "deadline_exceeded"
    );
    r.replays();
}

#[test]
fn what_a_model_cannot_express_or_a_missing_key_is_refused_before_any_request() {
    let s = stub(vec![]);
    let r = run(&s, "openai:gpt-4.1?reasoning=high");
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("no reasoning control"), "{}", r.stderr);
    let r = run(
        &s,
        "anthropic:claude-sonnet-4-5?max_output_tokens=2000&reasoning=4000",
    );
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("below max_output_tokens"), "{}", r.stderr);
    let r = run(&s, "openai:gpt-unknown");
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("not in the model table"), "{}", r.stderr);
    assert!(s.seen.lock().unwrap().is_empty(), "nothing was sent");

    // A missing key: refused before the store is touched.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env("WARRANT_STORE", dir.path().join("w.db"))
        .args([
            "run",
            "spec.yaml",
            "--decider",
            "anthropic:claude-sonnet-4-5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(!dir.path().join("w.db").exists(), "nothing was written");
}

// ---- Anthropic Messages ----

fn anthropic_call(id: &str, name: &str, args: &str, thinking: bool) -> Vec<String> {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": 380, "cache_read_input_tokens": 0, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if thinking {
        events.extend([
            ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The menu tool answers this."}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxS"}})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ]);
        index = 1;
    }
    let (head, tail) = args.split_at(args.len() / 2);
    events.extend([
        ("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})),
        ("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": head}})),
        ("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": tail}})),
        ("content_block_stop", json!({"type": "content_block_stop", "index": index})),
        ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}})),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    named(&events)
}

#[test]
fn anthropic_thinking_travels_back_with_its_call_and_the_request_is_exact() {
    let s = stub(vec![
        Canned::ok(anthropic_call("toolu_01", "read_menu", "{}", true)),
        Canned::ok(anthropic_call(
            "toolu_02",
            "warrant_done",
            "{\"summary\": \"four milks\"}",
            true,
        )),
    ]);
    let r = run(
        &s,
        "anthropic:claude-sonnet-4-5?max_output_tokens=4000&reasoning=2048",
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen[0].line, "POST /messages HTTP/1.1");
    assert_eq!(header(&seen[0], "x-api-key"), Some(SECRET));
    assert_eq!(header(&seen[0], "anthropic-version"), Some("2023-06-01"));
    snapshot("anthropic-first", &seen[0].body);
    // The signed thinking block precedes the tool_use it led to.
    let assistant = &seen[1].body["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], "thinking");
    assert_eq!(
        assistant[0]["signature"],
        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxS"
    );
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(
        seen[1].body["messages"][2]["content"][0]["tool_use_id"],
        "c1"
    );
    let usage = &r.of("decided")[0]["usage"];
    assert_eq!(usage["output_tokens"], 42);
    r.kept_the_secret();
    r.replays();
}

#[test]
fn anthropic_refusal_and_error_event_map_cleanly() {
    let refusal = named(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 0}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let s = stub(vec![Canned::ok(refusal)]);
    let r = run(&s, "anthropic:claude-sonnet-4-5");
    assert_eq!(r.of("decided")[0]["decision"], "decline");
    // Sent without thinking: max_tokens only, no budget nobody asked for.
    let body = &s.seen.lock().unwrap()[0].body;
    assert_eq!(body["max_tokens"], 1024);
    assert!(body.get("thinking").is_none());

    let overloaded = named(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
        ),
        (
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ]);
    let s = stub(vec![Canned::ok(overloaded)]);
    let r = run(&s, "anthropic:claude-sonnet-4-5");
    let failed = r.of("decide_failed");
    assert_eq!(failed[0]["fault"]["code"], "model_error");
    assert!(
        failed[0]["fault"]["message"]
            .as_str()
            .unwrap()
            .contains("Overloaded")
    );
}

// ---- Gemini ----

fn gemini_chunks(parts: Vec<Value>, finish: &str) -> Vec<String> {
    let last = parts.len().saturating_sub(1);
    let mut out: Vec<Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let mut c = json!({"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]});
            if i == last {
                c["candidates"][0]["finishReason"] = json!(finish);
                c["usageMetadata"] = json!({"promptTokenCount": 300, "candidatesTokenCount": 20, "thoughtsTokenCount": 64, "totalTokenCount": 384});
            }
            c
        })
        .collect();
    if out.is_empty() {
        out.push(json!({"candidates": [{"finishReason": finish}]}));
    }
    sse(&out)
}

#[test]
fn gemini_function_calls_thinking_budget_and_length_stop() {
    let s = stub(vec![
        Canned::ok(gemini_chunks(
            vec![
                json!({"text": "Reading the menu.", "thought": true}),
                json!({"functionCall": {"name": "read_menu", "args": {}}, "thoughtSignature": "CiQBVKhc7sig"}),
            ],
            "STOP",
        )),
        Canned::ok(gemini_chunks(
            vec![
                json!({"functionCall": {"name": "warrant_done", "args": {"summary": "four milks"}}}),
            ],
            "STOP",
        )),
    ]);
    let r = run(
        &s,
        "gemini:gemini-2.5-flash?max_output_tokens=2000&reasoning=512",
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].line,
        "POST /models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1"
    );
    assert_eq!(header(&seen[0], "x-goog-api-key"), Some(SECRET));
    snapshot("gemini-first", &seen[0].body);
    let contents = seen[1].body["contents"].as_array().unwrap();
    assert_eq!(contents[1]["parts"][0]["functionCall"]["name"], "read_menu");
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "CiQBVKhc7sig");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["name"],
        "read_menu"
    );
    let usage = &r.of("decided")[0]["usage"];
    assert_eq!(usage["reasoning_tokens"], 64);
    assert_eq!(usage["output_tokens"], 84);
    r.kept_the_secret();
    r.replays();

    let s = stub(vec![Canned::ok(gemini_chunks(
        vec![json!({"text": "The menu"})],
        "MAX_TOKENS",
    ))]);
    let r = run(&s, "gemini:gemini-2.5-flash");
    assert_eq!(
        r.of("decide_failed")[0]["fault"]["code"],
        "truncated_output"
    );
}

// ---- OpenAI Responses ----

fn responses_done(output: Vec<Value>, status: &str) -> Vec<String> {
    let response = json!({"id": "resp_1", "object": "response", "status": status, "output": output,
        "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null },
        "usage": {"input_tokens": 500, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 90, "output_tokens_details": {"reasoning_tokens": 64}}});
    let kind = if status == "completed" {
        "response.completed"
    } else {
        "response.incomplete"
    };
    named(&[
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}}),
        ),
        (kind, json!({"type": kind, "response": response})),
    ])
}

#[test]
fn openai_responses_reasoning_effort_function_calls_and_usage() {
    let s = stub(vec![
        Canned::ok(responses_done(
            vec![
                json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABo-encrypted"}),
                json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_menu", "arguments": "{}"}),
            ],
            "completed",
        )),
        Canned::ok(responses_done(
            vec![
                json!({"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "warrant_done", "arguments": "{\"summary\":\"four milks\"}"}),
            ],
            "completed",
        )),
    ]);
    let r = run(&s, "openai:o4-mini?max_output_tokens=3000&reasoning=low");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen[0].line, "POST /responses HTTP/1.1");
    snapshot("openai-responses-first", &seen[0].body);
    let input = seen[1].body["input"].as_array().unwrap();
    // Nothing stored at OpenAI: the encrypted reasoning comes back before the call it led to.
    assert_eq!(
        seen[0].body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"], "gAAAAABo-encrypted");
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["call_id"], input[2]["call_id"]);
    assert_eq!(r.of("decided")[0]["usage"]["reasoning_tokens"], 64);
    r.replays();

    let s = stub(vec![Canned::ok(responses_done(vec![], "incomplete"))]);
    let r = run(&s, "openai:o4-mini");
    assert_eq!(
        r.of("decide_failed")[0]["fault"]["code"],
        "truncated_output"
    );
}

// ---- OpenAI-compatible servers, and comparing two live configurations ----

#[test]
fn an_openai_compatible_server_gets_max_tokens_and_two_live_routes_compare() {
    let s = stub(vec![
        Canned::ok(chat_call("call_1", "read_menu", "{}")),
        Canned::ok(chat_done("four milks")),
        Canned::ok(chat_done("nothing to do")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let compatible = format!("openai-compatible:smollm2@{}", s.url);
    let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(dir.path())
        .env("WARRANT_STORE", dir.path().join("w.db"))
        .env("OPENAI_API_KEY", SECRET)
        .env("OPENAI_BASE_URL", &s.url)
        .args([
            "compare",
            "spec.yaml",
            "--decider",
            &compatible,
            "--decider",
            "openai:gpt-4.1-mini",
            "--json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let compared: Value = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{text}\n{}", String::from_utf8_lossy(&out.stderr)));
    let seen = s.seen.lock().unwrap().clone();
    // The compatible server: `max_tokens`, no key sent (none was named).
    assert_eq!(seen[0].body["max_tokens"], 1024);
    assert!(seen[0].body.get("max_completion_tokens").is_none());
    assert_eq!(header(&seen[0], "authorization"), None);
    // OpenAI proper: `max_completion_tokens`, with the key.
    assert_eq!(seen[2].body["max_completion_tokens"], 1024);
    assert!(header(&seen[2], "authorization").is_some());
    let routes = compared["routes"]
        .as_array()
        .unwrap_or_else(|| panic!("{compared}"));
    assert_eq!(routes.len(), 2, "{compared}");
    // Each route's spending: the compatible server's model has no price in the table, so its
    // decisions are counted as unpriced, not as free.
    assert_eq!(routes[0]["usage"]["decisions"], 2, "{compared}");
    assert_eq!(routes[0]["usage"]["input_tokens"], 824);
    assert_eq!(routes[0]["usage"]["unpriced"], 2);
    assert_eq!(routes[0]["usage"]["cost_micro_usd"], 0);
    assert_eq!(routes[1]["usage"]["decisions"], 1);
    // (412-128)*0.4 + 128*0.1 + 18*1.6 micro-USD, rounded.
    assert_eq!(routes[1]["usage"]["cost_micro_usd"], 155);
    assert!(routes[1]["usage"].get("unpriced").is_none());
    assert!(!text.contains(SECRET));
}

// ---- The same failures across all four protocols ----

/// Per protocol: a decider, an answer that is cut mid-way, an empty answer, a length stop, and
/// an answer with two tool calls.
type Protocol = (
    &'static str,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
);

fn protocols() -> Vec<Protocol> {
    let chat_two = sse(&[json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "a", "type": "function", "function": {"name": "read_menu", "arguments": "{}"}},
        {"index": 1, "id": "b", "type": "function", "function": {"name": "read_menu", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]})]);
    let anthropic_two = named(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "read_menu", "input": {}}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t2", "name": "read_menu", "input": {}}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let anthropic_empty = named(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 0}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let anthropic_length = named(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The menu"}}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let mut anthropic_cut = anthropic_call("t1", "read_menu", "{}", false);
    anthropic_cut.truncate(3);
    let mut chat_cut = chat_call("c", "read_menu", "{\"a\": 1}");
    chat_cut.truncate(2);
    let gemini_two = gemini_chunks(
        vec![
            json!({"functionCall": {"name": "read_menu", "args": {}}}),
            json!({"functionCall": {"name": "read_menu", "args": {}}}),
        ],
        "STOP",
    );
    let mut gemini_cut = gemini_chunks(
        vec![
            json!({"text": "Reading"}),
            json!({"functionCall": {"name": "read_menu", "args": {}}}),
        ],
        "STOP",
    );
    gemini_cut.truncate(1);
    let responses_two = responses_done(
        vec![
            json!({"type": "function_call", "call_id": "a", "name": "read_menu", "arguments": "{}"}),
            json!({"type": "function_call", "call_id": "b", "name": "read_menu", "arguments": "{}"}),
        ],
        "completed",
    );
    let mut responses_cut = responses_two.clone();
    responses_cut.truncate(2);
    vec![
        (
            "openai:gpt-4.1",
            chat_cut,
            sse(&[json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})]),
            sse(&[
                json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "length"}]}),
            ]),
            chat_two,
        ),
        (
            "anthropic:claude-sonnet-4-5",
            anthropic_cut,
            anthropic_empty,
            anthropic_length,
            anthropic_two,
        ),
        (
            "gemini:gemini-2.5-flash",
            gemini_cut,
            gemini_chunks(vec![], "STOP"),
            gemini_chunks(vec![json!({"text": "x"})], "MAX_TOKENS"),
            gemini_two,
        ),
        (
            "openai:o4-mini",
            responses_cut,
            responses_done(vec![], "completed"),
            responses_done(vec![], "incomplete"),
            responses_two,
        ),
    ]
}

#[test]
fn every_protocol_maps_a_cut_stream_an_empty_answer_a_length_stop_and_parallel_calls() {
    for (decider, cut, empty, length, two) in protocols() {
        for (answer, code) in [
            (cut, "stream_incomplete"),
            (empty, "empty_output"),
            (length, "truncated_output"),
        ] {
            let s = stub(vec![Canned::ok(answer)]);
            let r = run(&s, decider);
            let failed = r.of("decide_failed");
            assert_eq!(failed.len(), 1, "{decider}: {}", r.events);
            assert_eq!(failed[0]["fault"]["code"], code, "{decider}");
            assert_eq!(failed[0]["fault"]["layer"], "model", "{decider}");
            assert_eq!(r.summary["outcome"], "failed", "{decider}");
            r.replays();
        }
        // Two calls in one answer: both run, in order, then the model is asked again.
        // (One attempt per ask: the stub has no third answer, and its 500 is not retried.)
        let s = stub(vec![Canned::ok(two)]);
        let r = run(&s, &format!("{decider}?attempts=1"));
        let calls = r.of("call_finished");
        assert_eq!(calls.len(), 2, "{decider}: {}", r.events);
        assert!(calls.iter().all(|c| c["status"] == "ok"), "{decider}");
        assert_eq!(
            s.seen.lock().unwrap().len(),
            2,
            "{decider}: asked again after both"
        );
    }
}

#[test]
fn an_unstreamed_answer_is_read_by_the_same_mapper() {
    let completion = json!({"id": "chatcmpl-2", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_menu", "arguments": "{}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}});
    let done = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Four milks."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 120, "completion_tokens": 4}});
    let s = stub(vec![
        Canned::status(200, completion),
        Canned::status(200, done),
    ]);
    let r = run(&s, "openai:gpt-4.1?stream=false");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(s.seen.lock().unwrap()[0].body.get("stream").is_none());
    let decided = r.of("decided");
    assert_eq!(decided[1]["decision"], "done");
    assert_eq!(decided[1]["summary"], "Four milks.");
    r.replays();
}

#[test]
fn a_live_run_waiting_for_approval_resumes_with_the_same_decider_configuration() {
    let s = stub(vec![
        Canned::ok(chat_call("call_1", "read_menu", "{}")),
        Canned::ok(chat_done("four milks")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let decider = "openai:gpt-4.1?max_output_tokens=700";
    let run = warrant(
        dir.path(),
        &s,
        &[
            "run",
            "spec.yaml",
            "--decider",
            decider,
            "--ask-tool",
            "read_menu",
            "--json",
            "-q",
        ],
    );
    assert_eq!(
        run.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    let request = out["approvals"][0]["request"].as_str().unwrap().to_owned();
    let approve = warrant(dir.path(), &s, &["approve", &request, "--as", "alice"]);
    assert_eq!(approve.status.code(), Some(0));
    // The decider is rebuilt from the run's record (model and options), not from flags.
    let resumed = warrant(dir.path(), &s, &["resume", "last", "--json", "-q"]);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].body["max_completion_tokens"], 700);
}

#[test]
fn live_usage_counts_against_the_token_budget_and_a_failed_request_keeps_its_exchange() {
    let s = stub(vec![Canned::ok(chat_call("call_1", "read_menu", "{}"))]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let run = warrant(
        dir.path(),
        &s,
        &[
            "run",
            "spec.yaml",
            "--decider",
            "openai:gpt-4.1",
            "--tokens-max",
            "100",
            "--json",
            "-q",
        ],
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(out["outcome"], "exhausted", "{out}");
    assert!(out.to_string().contains("tokens_max"), "{out}");

    let s = stub(vec![Canned::status(
        401,
        json!({"error": {"message": "Incorrect API key provided"}}),
    )]);
    let r = run_with(&s, "openai:gpt-4.1", SPEC);
    let failed = &r.of("decide_failed")[0];
    assert_eq!(failed["exchange"]["attempts"][0]["status"], 401);
    assert_eq!(failed["exchange"]["request"]["model"], "gpt-4.1");
    r.kept_the_secret();
    r.replays();
}

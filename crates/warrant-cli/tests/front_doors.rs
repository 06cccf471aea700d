//! The front doors under attack: every role against every endpoint of `warrant serve`, with
//! inline specs and requests that name programs, files, addresses, environment variables,
//! headers, model endpoints and keys; paths that climb, are absolute or lead out through a
//! link; a tenant reaching for another's runs; forged tokens. Each case asserts that it was
//! refused with a status and words naming the reason, that nothing ran (no canary file),
//! nothing was fetched (a sentinel listener saw no connection), nothing was written (no run
//! recorded), and that the answer leaks no server path or secret. The same inline specs are
//! checked through the CLI (`warrant validate --as-author`), and every case is sent again to a
//! fleet's server on PostgreSQL with a worker beside it: refused the same, nothing queued.
//!
//! `cargo test -p warrant-cli --test front_doors -- --nocapture` prints the table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Served, metrics_page, root, served, stderr, stdout};

/// A secret in the server's environment, never named by the operator for anyone.
const SERVER_SECRET: &str = "sv-hunter2-9f3a71";
/// A secret the operator declared (`secrets:`), for a registered provider only.
const BOOK_KEY: &str = "bk-sekret-77b1c2";
/// What a file outside the catalog holds.
const OUTSIDE: &str = "TOPSECRET-outside-0c1d";

/// Everything one suite needs on disk.
struct Ground {
    _dir: tempfile::TempDir,
    work: PathBuf,
    canary: PathBuf,
    sentinel: Sentinel,
}

/// A loopback listener that counts every connection made to it: nothing may reach it.
struct Sentinel {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Sentinel {
    fn start() -> Sentinel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = hits.clone();
        // Lives as long as the test process; it only counts.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                seen.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Sentinel { port, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const BOOK_SPEC: &str = "version: warrant/v1
id: book
objective: Write one entry in the book.
decider: scripted:script.yaml
providers:
  book: {registered: book}
steps:
  - id: write
    provider: book
    tools: [append_entry]
    commit: required
";

const BOOK_SCRIPT: &str =
    "steps:\n  write:\n    - call: append_entry\n      args: {entry: paid}\n    - done: written\n";

const ALLOW_ALL: &str = "@id(\"allow\")\npermit(principal, action, resource);\n";

fn ground() -> Ground {
    let dir = tempfile::tempdir().unwrap();
    let work = std::fs::canonicalize(dir.path()).unwrap();
    let specs = work.join("specs");
    let outside = work.join("outside");
    let canary = work.join("canary");
    std::fs::create_dir_all(&canary).unwrap();
    write(&specs.join("book/spec.yaml"), BOOK_SPEC);
    write(&specs.join("book/script.yaml"), BOOK_SCRIPT);
    write(&specs.join("scripts/book.yaml"), BOOK_SCRIPT);
    write(&specs.join("policies/allow.cedar"), ALLOW_ALL);
    write(
        &specs.join("two/spec.yaml"),
        &format!("{BOOK_SPEC}policy: [two.cedar]\n"),
    );
    write(&specs.join("two/script.yaml"), BOOK_SCRIPT);
    write(
        &specs.join("typed/spec.yaml"),
        &BOOK_SPEC.replace(
            "steps:\n",
            "inputs:\n  entry: {type: string, maxLength: 20}\nsteps:\n",
        ),
    );
    write(&specs.join("typed/script.yaml"), BOOK_SCRIPT);
    write(
        &specs.join("two/two.cedar"),
        "@id(\"writes-need-two\")\n@approval(\"the book takes two people's word\")\n@approvals(\"2\")\npermit (principal, action == Warrant::Action::\"commit\", resource);\n",
    );
    write(&outside.join("secret.txt"), OUTSIDE);
    write(
        &outside.join("secret.cedar"),
        &format!("// {OUTSIDE}\n{ALLOW_ALL}"),
    );
    write(
        &outside.join("script.yaml"),
        &format!("# {OUTSIDE}\n{BOOK_SCRIPT}"),
    );
    write(
        &outside.join("spec.yaml"),
        &format!(
            "# {OUTSIDE}\n{}",
            BOOK_SPEC.replace("{registered: book}", "{reference: cafe}")
        ),
    );
    std::os::unix::fs::symlink(&outside, specs.join("out")).unwrap();
    write(
        &work.join("providers.yaml"),
        "version: warrant/providers/v1
secrets:
  BOOK_KEY: {env: BOOK_KEY}
providers:
  book: {reference: ledger, config: {file: book.jsonl}, trust: trusted}
models:
  fast: {decider: 'scripted:specs/scripts/book.yaml'}
",
    );
    let digest = |t: &str| warrant_server::token_digest(t);
    write(
        &work.join("principals.yaml"),
        &format!(
            "principals:
  - {{token: 'sha256:{}', tenant: acme, user: rita, roles: [runner]}}
  - {{token: 'sha256:{}', tenant: acme, user: abe, roles: [author]}}
  - {{token: 'sha256:{}', tenant: acme, user: vic, roles: [viewer]}}
  - {{token: 'sha256:{}', tenant: acme, user: ann, roles: [approver]}}
  - {{token: 'sha256:{}', tenant: acme, user: ops, roles: [operator]}}
  - {{token: 'sha256:{}', tenant: globex, user: eve, roles: [operator]}}
  - {{token: 'sha256:{}', tenant: acme, user: gone, roles: [operator]}}
  - {{token: 'sha256:{}', tenant: acme, user: sam, roles: [runner, approver]}}
  - {{token: 'sha256:{}', tenant: acme, user: bea, roles: [approver]}}
  - {{token: 'sha256:{}', tenant: capped, user: cap, roles: [runner]}}
  - {{token: 'sha256:{}', tenant: holding, user: hal, roles: [runner]}}
  - {{token: 'sha256:{}', tenant: spender, user: spe, roles: [runner]}}
tenants:
  capped: {{quotas: {{runs_started: 1, window_ms: 600000}}}}
  holding: {{quotas: {{runs_held: 1}}}}
  spender: {{quotas: {{calls: 1, window_ms: 600000}}}}
",
            digest("t-runner"),
            digest("t-author"),
            digest("t-viewer"),
            digest("t-approver"),
            digest("t-op"),
            digest("t-other"),
            digest("t-gone"),
            digest("t-self"),
            digest("t-approver2"),
            digest("t-capped"),
            digest("t-holding"),
            digest("t-spender"),
        ),
    );
    Ground {
        _dir: dir,
        work,
        canary,
        sentinel: Sentinel::start(),
    }
}

impl Ground {
    /// Starts `warrant serve` over `store` (a file or a `postgres://` URL).
    fn serve(&self, store: &str) -> Served {
        let child = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(&self.work)
            .env("WARRANT_STORE", store)
            .env("SERVER_SECRET", SERVER_SECRET)
            .env("BOOK_KEY", BOOK_KEY)
            .env_remove("WARRANT_FAULT")
            .args([
                "--providers",
                "providers.yaml",
                "serve",
                "--listen",
                "127.0.0.1:0",
            ])
            .args(["--specs", "specs", "--principals", "principals.yaml"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        served(child)
    }

    /// What no answer may contain.
    fn forbidden_words(&self) -> Vec<String> {
        let mut words = vec![
            self.work.display().to_string(),
            root().canonicalize().unwrap().display().to_string(),
            SERVER_SECRET.to_owned(),
            BOOK_KEY.to_owned(),
            OUTSIDE.to_owned(),
            "root:x:0".to_owned(),
        ];
        if let Ok(home) = std::env::var("HOME")
            && home.len() > 1
        {
            words.push(home);
        }
        words
    }

    /// Files something wrote where only an attack would.
    fn canaries(&self) -> Vec<String> {
        let mut found: Vec<String> = std::fs::read_dir(&self.canary)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        found
    }
}

/// A `warrant worker`, stopped when dropped (also when an assertion fails first).
struct Worker(std::process::Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One request and what it must get.
struct Case {
    class: &'static str,
    name: String,
    token: Option<&'static str>,
    method: &'static str,
    /// The path under the server's address; `{run}`, `{req}` are filled in.
    path: &'static str,
    body: Option<Value>,
    status: u16,
    /// Words the answer must contain (the reason).
    says: Vec<&'static str>,
    /// An inline spec an author sent: checked through the CLI too.
    inline: Option<String>,
}

fn spec_with(providers: &str, extra: &str) -> String {
    format!(
        "version: warrant/v1\nid: attack\nobjective: Do the task.\ndecider: scripted:scripts/book.yaml\n{extra}providers:\n{providers}steps:\n  - id: write\n    provider: book\n    tools: [append_entry]\n"
    )
}

fn inline(class: &'static str, name: &str, text: String, says: &'static str) -> Case {
    Case {
        class,
        name: name.to_owned(),
        token: Some("t-author"),
        method: "POST",
        path: "/v1/runs",
        body: Some(json!({ "spec": text })),
        status: 422,
        says: vec![says],
        inline: Some(text),
    }
}

fn start(
    class: &'static str,
    name: &str,
    token: &'static str,
    body: Value,
    status: u16,
    says: &'static str,
) -> Case {
    Case {
        class,
        name: name.to_owned(),
        token: Some(token),
        method: "POST",
        path: "/v1/runs",
        body: Some(body),
        status,
        says: vec![says],
        inline: None,
    }
}

/// A request other than a start: `(method, path, body)`.
type Req = (&'static str, &'static str, Option<Value>);

fn other(
    class: &'static str,
    name: &str,
    token: Option<&'static str>,
    (method, path, body): Req,
    status: u16,
    says: &'static str,
) -> Case {
    Case {
        class,
        name: name.to_owned(),
        token,
        method,
        path,
        body,
        status,
        says: vec![says],
        inline: None,
    }
}

fn cases(g: &Ground) -> Vec<Case> {
    let book = "  book: {registered: book}\n";
    let canary = |n: &str| g.canary.join(n).display().to_string();
    let sentinel = |p: &str| g.sentinel.url(p);
    let mut out = vec![
        // Programs: a caller names one, through every field that could start one.
        inline(
            "program",
            "mcp command",
            spec_with(
                &format!(
                    "{book}  sh: {{mcp: {{command: [sh, -c, 'touch {}']}}}}\n",
                    canary("mcp")
                ),
                "",
            ),
            "providers.sh.mcp",
        ),
        inline(
            "program",
            "mcp command with a working directory",
            spec_with(
                &format!("{book}  sh: {{mcp: {{command: [./run.sh], cwd: /tmp}}}}\n"),
                "",
            ),
            "providers.sh.mcp",
        ),
        inline(
            "program",
            "mcp command in a child spec",
            format!(
                "version: warrant/v1\nid: parent\nobjective: o\ndecider: scripted:scripts/book.yaml\nproviders:\n{book}steps:\n  - id: write\n    delegate:\n      children:\n        - spec:\n            version: warrant/v1\n            id: child\n            objective: o\n            decider: scripted:scripts/book.yaml\n            providers:\n              sh: {{mcp: {{command: [sh, -c, 'touch {}']}}}}\n            steps: [{{id: write, provider: sh, tools: [x]}}]\n",
                canary("child")
            ),
            "children[0].spec.providers.sh.mcp",
        ),
        inline(
            "program",
            "a ledger file of its own",
            spec_with(
                &format!(
                    "{book}  mine: {{reference: ledger, config: {{file: {}}}}}\n",
                    canary("ledger")
                ),
                "",
            ),
            "providers.mine.config",
        ),
        inline(
            "program",
            "a registered name and a program at once",
            spec_with(
                &format!(
                    "  book: {{registered: book, mcp: {{command: [sh, -c, 'touch {}']}}}}\n",
                    canary("both")
                ),
                "",
            ),
            "not several",
        ),
        start(
            "program",
            "a runner's inline spec",
            "t-runner",
            json!({"spec": spec_with(&format!("{book}  sh: {{mcp: {{command: [sh, -c, 'touch {}']}}}}\n", canary("runner")), "")}),
            403,
            "author",
        ),
        start(
            "program",
            "a viewer's inline spec",
            "t-viewer",
            json!({"spec": spec_with(&format!("{book}  sh: {{mcp: {{command: [sh, -c, 'touch {}']}}}}\n", canary("viewer")), "")}),
            403,
            "author",
        ),
        // Files: absolute, climbing, and out through a link, in every path-valued field.
        inline(
            "file",
            "policy absolute",
            spec_with(book, "policy: [/etc/passwd]\n"),
            "policy[0]",
        ),
        inline(
            "file",
            "policy climbing",
            spec_with(book, "policy: [../outside/secret.cedar]\n"),
            "policy[0]",
        ),
        inline(
            "file",
            "policy through a link",
            spec_with(book, "policy: [out/secret.cedar]\n"),
            "leads out",
        ),
        inline(
            "file",
            "policy climbing from inside",
            spec_with(book, "policy: [policies/../../outside/secret.cedar]\n"),
            "policy[0]",
        ),
        inline(
            "file",
            "openapi document file",
            spec_with(
                &format!("{book}  api: {{openapi: {{document: /etc/passwd}}}}\n"),
                "",
            ),
            "providers.api.openapi",
        ),
        inline(
            "file",
            "script absolute",
            spec_with(book, "").replace("scripted:scripts/book.yaml", "scripted:/etc/passwd"),
            "decider",
        ),
        inline(
            "file",
            "script climbing",
            spec_with(book, "").replace(
                "scripted:scripts/book.yaml",
                "scripted:../outside/script.yaml",
            ),
            "decider",
        ),
        inline(
            "file",
            "script through a link",
            spec_with(book, "").replace("scripted:scripts/book.yaml", "scripted:out/script.yaml"),
            "leads out",
        ),
        inline(
            "file",
            "child spec file",
            format!(
                "version: warrant/v1\nid: parent\nobjective: o\nproviders:\n{book}steps:\n  - id: write\n    delegate:\n      children:\n        - spec: ../outside/spec.yaml\n          decider: scripted:scripts/book.yaml\n"
            ),
            "children[0].spec",
        ),
        inline(
            "file",
            "child script absolute",
            format!(
                "version: warrant/v1\nid: parent\nobjective: o\nproviders:\n{book}steps:\n  - id: write\n    delegate:\n      children:\n        - spec: {{version: warrant/v1, id: c, objective: o, providers: {{book: {{registered: book}}}}, steps: [{{id: write, provider: book, tools: [append_entry]}}]}}\n          decider: scripted:/etc/passwd\n"
            ),
            "children[0].decider",
        ),
        inline(
            "file",
            "child policy absolute",
            format!(
                "version: warrant/v1\nid: parent\nobjective: o\nproviders:\n{book}steps:\n  - id: write\n    delegate:\n      children:\n        - spec: {{version: warrant/v1, id: c, objective: o, decider: 'scripted:scripts/book.yaml', providers: {{book: {{registered: book}}}}, steps: [{{id: write, provider: book, tools: [append_entry]}}]}}\n          policy: [/etc/passwd]\n"
            ),
            "children[0].policy[0]",
        ),
        start(
            "file",
            "spec_path climbing",
            "t-runner",
            json!({"spec_path": "../outside/spec.yaml"}),
            422,
            "spec_path",
        ),
        start(
            "file",
            "spec_path absolute",
            "t-runner",
            json!({"spec_path": "/etc/passwd"}),
            422,
            "spec_path",
        ),
        start(
            "file",
            "spec_path through a link",
            "t-runner",
            json!({"spec_path": "out/spec.yaml"}),
            422,
            "leads out",
        ),
        start(
            "file",
            "request policy absolute",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "policies": ["/etc/passwd"]}),
            422,
            "policies[0]",
        ),
        start(
            "file",
            "request policy through a link",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "policies": ["out/secret.cedar"]}),
            422,
            "leads out",
        ),
        start(
            "file",
            "request script climbing",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "decider": "scripted:../outside/script.yaml"}),
            422,
            "decider",
        ),
        start(
            "file",
            "request script through a link",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "decider": "scripted:out/script.yaml"}),
            422,
            "leads out",
        ),
        // Addresses: nothing the server reaches on a caller's word.
        inline(
            "address",
            "mcp url on loopback",
            spec_with(
                &format!("{book}  web: {{mcp: {{url: '{}'}}}}\n", sentinel("/mcp")),
                "",
            ),
            "providers.web.mcp",
        ),
        inline(
            "address",
            "mcp url to the metadata service",
            spec_with(
                &format!("{book}  web: {{mcp: {{url: 'http://169.254.169.254/latest'}}}}\n"),
                "",
            ),
            "providers.web.mcp",
        ),
        inline(
            "address",
            "openapi document url",
            spec_with(
                &format!(
                    "{book}  api: {{openapi: {{document: '{}'}}}}\n",
                    sentinel("/openapi.json")
                ),
                "",
            ),
            "providers.api.openapi",
        ),
        inline(
            "address",
            "openapi base url",
            spec_with(
                &format!(
                    "{book}  api: {{openapi: {{document: doc.json, base_url: '{}'}}}}\n",
                    sentinel("/")
                ),
                "",
            ),
            "providers.api.openapi",
        ),
        inline(
            "address",
            "execution control url",
            spec_with(
                book,
                &format!("execution_control: {{url: '{}'}}\n", sentinel("/control")),
            ),
            "execution_control.url",
        ),
        inline(
            "address",
            "a model server of its own",
            spec_with(book, "").replace(
                "scripted:scripts/book.yaml",
                &format!("'openai-compatible:m@{}'", sentinel("/v1")),
            ),
            "decider",
        ),
        start(
            "address",
            "request decider at a model server of its own",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "decider": format!("openai-compatible:m@{}", sentinel("/v1"))}),
            422,
            "decider",
        ),
        // The server's environment: never a caller's to pass on.
        inline(
            "environment",
            "mcp env from the server's",
            spec_with(
                &format!("{book}  sh: {{mcp: {{command: [env], env: {{X: $SERVER_SECRET}}}}}}\n"),
                "",
            ),
            "providers.sh.mcp",
        ),
        inline(
            "environment",
            "mcp header from the server's",
            spec_with(
                &format!(
                    "{book}  web: {{mcp: {{url: '{}', headers: {{Authorization: 'Bearer ${{SERVER_SECRET}}'}}}}}}\n",
                    sentinel("/mcp")
                ),
                "",
            ),
            "providers.web.mcp",
        ),
        inline(
            "environment",
            "openapi header from the server's",
            spec_with(
                &format!(
                    "{book}  api: {{openapi: {{document: '{}', headers: {{X-Key: '${{BOOK_KEY}}'}}}}}}\n",
                    sentinel("/doc")
                ),
                "",
            ),
            "providers.api.openapi",
        ),
        // Model endpoints and keys: only the models the operator registered.
        inline(
            "model key",
            "the server's key to an address of the caller's",
            spec_with(book, "").replace(
                "scripted:scripts/book.yaml",
                &format!("'openai:gpt-4.1?base_url={}'", sentinel("/v1")),
            ),
            "decider",
        ),
        inline(
            "model key",
            "a key from the server's environment",
            spec_with(book, "").replace(
                "scripted:scripts/book.yaml",
                &format!(
                    "'openai-compatible:m@{}?key_env=SERVER_SECRET'",
                    sentinel("/v1")
                ),
            ),
            "decider",
        ),
        inline(
            "model key",
            "a live model on the operator's key",
            spec_with(book, "").replace(
                "scripted:scripts/book.yaml",
                "'anthropic:claude-sonnet-4-5'",
            ),
            "decider",
        ),
        inline(
            "model key",
            "an unregistered model",
            spec_with(book, "").replace("scripted:scripts/book.yaml", "model:nope"),
            "registered no model",
        ),
        start(
            "model key",
            "request decider on the operator's key",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "decider": "openai:gpt-4.1"}),
            422,
            "decider",
        ),
        start(
            "model key",
            "request decider with the server's key",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "decider": format!("openai-compatible:m@{}?key_env=SERVER_SECRET", sentinel("/v1"))}),
            422,
            "decider",
        ),
        // Trust and the registry: a caller narrows, never widens.
        inline(
            "registry",
            "trusting an in-process provider",
            spec_with(
                &format!("{book}  cafe: {{reference: cafe, trust: trusted}}\n"),
                "",
            ),
            "providers.cafe.trust",
        ),
        inline(
            "registry",
            "trusting a registered provider",
            spec_with("  book: {registered: book, trust: trusted}\n", ""),
            "providers.book.trust",
        ),
        inline(
            "registry",
            "an unregistered provider",
            spec_with("  book: {registered: nope}\n", ""),
            "registered no provider",
        ),
        inline(
            "registry",
            "a forged pin",
            spec_with("  book: {registered: book, pin: 'sha256:00'}\n", ""),
            "pin",
        ),
        inline(
            "registry",
            "settings on a registered provider",
            spec_with("  book: {registered: book, config: {file: /tmp/x}}\n", ""),
            "config",
        ),
        // Roles: every start refused to a role that may not start.
        start(
            "role",
            "a viewer starts",
            "t-viewer",
            json!({"spec_path": "book/spec.yaml"}),
            403,
            "runner",
        ),
        start(
            "role",
            "an approver starts",
            "t-approver",
            json!({"spec_path": "book/spec.yaml"}),
            403,
            "runner",
        ),
        start(
            "role",
            "a runner's harmless inline spec",
            "t-runner",
            json!({"spec": spec_with(book, "")}),
            403,
            "author",
        ),
        other(
            "role",
            "a runner cancels",
            Some("t-runner"),
            ("POST", "/v1/runs/{run}/cancel", None),
            403,
            "operator",
        ),
        other(
            "role",
            "a runner reconciles",
            Some("t-runner"),
            (
                "POST",
                "/v1/runs/{run}/calls/c1/reconcile",
                Some(json!({"happened": true})),
            ),
            403,
            "operator",
        ),
        other(
            "role",
            "a viewer approves",
            Some("t-viewer"),
            (
                "POST",
                "/v1/approvals/{req}/approve",
                Some(json!({"args_digest": "{digest}"})),
            ),
            403,
            "approver",
        ),
        other(
            "role",
            "a runner approves",
            Some("t-runner"),
            (
                "POST",
                "/v1/approvals/{req}/approve",
                Some(json!({"args_digest": "{digest}"})),
            ),
            403,
            "approver",
        ),
        // Who may approve: never the run's starter here; two people where two are asked for.
        other(
            "approver",
            "a runner approves its own run",
            Some("t-self"),
            (
                "POST",
                "/v1/approvals/{selfreq}/approve",
                Some(json!({"args_digest": "{selfdigest}"})),
            ),
            403,
            "other than its starter",
        ),
        other(
            "approver",
            "one approver twice where two are required",
            Some("t-approver"),
            (
                "POST",
                "/v1/approvals/{tworeq}/approve",
                Some(json!({"args_digest": "{twodigest}"})),
            ),
            409,
            "2 different people",
        ),
        other(
            "approver",
            "another tenant's approver completes two",
            Some("t-other"),
            (
                "POST",
                "/v1/approvals/{tworeq}/approve",
                Some(json!({"args_digest": "{twodigest}"})),
            ),
            404,
            "no",
        ),
        // A catalog spec's typed inputs: checked before anything starts.
        start(
            "input",
            "a value the schema refuses",
            "t-runner",
            json!({"spec_path": "typed/spec.yaml", "inputs": {"entry": 5}}),
            422,
            "inputs.entry",
        ),
        start(
            "input",
            "a value too long",
            "t-runner",
            json!({"spec_path": "typed/spec.yaml", "inputs": {"entry": "x".repeat(21)}}),
            422,
            "inputs.entry",
        ),
        start(
            "input",
            "an input the spec does not take",
            "t-runner",
            json!({"spec_path": "typed/spec.yaml", "inputs": {"entry": "ok", "path": "/etc/passwd"}}),
            422,
            "takes no input `path`",
        ),
        start(
            "input",
            "no value for an input",
            "t-runner",
            json!({"spec_path": "typed/spec.yaml"}),
            422,
            "needs a value",
        ),
        // The catalog in the store: only what the operator added, and not once retired.
        start(
            "catalog",
            "a spec id the catalog does not hold",
            "t-runner",
            json!({"spec_id": "../book"}),
            422,
            "the catalog has no spec",
        ),
        start(
            "catalog",
            "a version without a spec id",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "spec_digest": "sha256:00"}),
            422,
            "`spec_digest` goes with `spec_id`",
        ),
        start(
            "catalog",
            "a spec id and a path at once",
            "t-runner",
            json!({"spec_path": "book/spec.yaml", "spec_id": "book"}),
            422,
            "give one of",
        ),
        // Quotas: a tenant past one is told which, and when to try again.
        start(
            "quota",
            "a tenant past its runs started",
            "t-capped",
            json!({"spec_path": "book/spec.yaml"}),
            429,
            "quota of 1 runs started",
        ),
        start(
            "quota",
            "a tenant past its runs held",
            "t-holding",
            json!({"spec_path": "book/spec.yaml"}),
            429,
            "quota of 1 runs held",
        ),
        start(
            "quota",
            "a tenant past its calls",
            "t-spender",
            json!({"spec_path": "book/spec.yaml"}),
            429,
            "quota of 1 calls",
        ),
        // Another tenant's ids, everywhere: as if they did not exist.
        other(
            "tenant",
            "reads a run",
            Some("t-other"),
            ("GET", "/v1/runs/{run}", None),
            404,
            "no run",
        ),
        other(
            "tenant",
            "reads a report",
            Some("t-other"),
            ("GET", "/v1/runs/{run}/report", None),
            404,
            "no run",
        ),
        other(
            "tenant",
            "reads events",
            Some("t-other"),
            ("GET", "/v1/runs/{run}/events", None),
            404,
            "no run",
        ),
        other(
            "tenant",
            "cancels",
            Some("t-other"),
            ("POST", "/v1/runs/{run}/cancel", None),
            404,
            "no run",
        ),
        other(
            "tenant",
            "resumes",
            Some("t-other"),
            ("POST", "/v1/runs/{run}/resume", None),
            404,
            "no run",
        ),
        other(
            "tenant",
            "reconciles",
            Some("t-other"),
            (
                "POST",
                "/v1/runs/{run}/calls/c1/reconcile",
                Some(json!({"happened": true})),
            ),
            404,
            "no run",
        ),
        other(
            "tenant",
            "approves",
            Some("t-other"),
            (
                "POST",
                "/v1/approvals/{req}/approve",
                Some(json!({"args_digest": "{digest}"})),
            ),
            404,
            "no",
        ),
        other(
            "tenant",
            "denies",
            Some("t-other"),
            (
                "POST",
                "/v1/approvals/{req}/deny",
                Some(json!({"args_digest": "{digest}", "reason": "mine now"})),
            ),
            404,
            "no",
        ),
        // Tokens.
        other(
            "token",
            "a forged token",
            Some("t-forged"),
            ("GET", "/v1/runs", None),
            401,
            "not known",
        ),
        other(
            "token",
            "no token",
            None,
            ("GET", "/v1/runs", None),
            401,
            "token",
        ),
        other(
            "token",
            "a forged token starts",
            Some("t-forged"),
            (
                "POST",
                "/v1/runs",
                Some(json!({"spec_path": "book/spec.yaml"})),
            ),
            401,
            "not known",
        ),
        other(
            "token",
            "a removed principal's token",
            Some("t-gone"),
            ("GET", "/v1/runs", None),
            401,
            "not known",
        ),
    ];
    // What a removed principal's token could do before: nothing, once removed (below).
    out.retain(|c| !c.name.is_empty());
    out
}

/// The status and text of one request.
async fn send(base: &str, case: &Case, fill: &BTreeMap<&str, String>) -> (StatusCode, String) {
    let mut path = case.path.to_owned();
    for (k, v) in fill {
        path = path.replace(&format!("{{{k}}}"), v);
    }
    let client = warrant_http::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let url = format!("{base}{path}");
    let mut req = match case.method {
        "GET" => client.get(url),
        _ => client.post(url),
    };
    if let Some(t) = case.token {
        req = req.bearer_auth(t);
    }
    if let Some(body) = &case.body {
        let mut text = body.to_string();
        for (k, v) in fill {
            text = text.replace(&format!("{{{k}}}"), v);
        }
        req = req.header("content-type", "application/json").body(text);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    (status, r.text().await.unwrap())
}

/// How many runs each tenant sees.
async fn runs_seen(base: &str) -> (usize, usize) {
    let count = |token: &'static str| {
        let url = format!("{base}/v1/runs?limit=500");
        async move {
            let v: Value = warrant_http::client()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["runs"].as_array().unwrap().len()
        }
    };
    (count("t-op").await, count("t-other").await)
}

async fn post_json(base: &str, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
    let r = warrant_http::client()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let s = r.status();
    (s, r.json().await.unwrap_or(Value::Null))
}

async fn get_json(base: &str, token: &str, path: &str) -> Value {
    warrant_http::client()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until `run` (of acme) has status `want`.
async fn until_status(base: &str, run: &str, want: &str) -> Value {
    until_status_as(base, "t-op", run, want).await
}

/// Waits until `run`, seen as `token`, has status `want`.
async fn until_status_as(base: &str, token: &str, run: &str, want: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        last = get_json(base, token, &format!("/v1/runs/{run}")).await;
        if last["status"] == want {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run} never became `{want}`: {last}");
}

/// Runs of acme that wait for approvals, what the cross-tenant and approver cases reach for:
/// one a runner started; one a runner who is also an approver started; one whose writes need
/// two people, one of whom approved already. The values the cases' paths and bodies name,
/// and the three runs.
async fn waiting_runs(base: &str) -> (BTreeMap<&'static str, String>, [String; 3]) {
    let ask = json!({"spec_path": "book/spec.yaml", "ask_tools": ["append_entry"]});
    let (run, request, digest) = waiting_run(base, "t-runner", &ask).await;
    let (self_run, self_req, self_digest) = waiting_run(base, "t-self", &ask).await;
    let two = json!({"spec_path": "two/spec.yaml"});
    let (two_run, two_req, two_digest) = waiting_run(base, "t-runner", &two).await;
    let (s, v) = post_json(
        base,
        "t-approver",
        &format!("/v1/approvals/{two_req}/approve"),
        json!({"args_digest": two_digest}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let fill = [
        ("run", run.clone()),
        ("req", request),
        ("digest", digest),
        ("selfreq", self_req),
        ("selfdigest", self_digest),
        ("tworeq", two_req),
        ("twodigest", two_digest),
    ]
    .into_iter()
    .collect();
    (fill, [run, self_run, two_run])
}

/// Starts a run with `body` as `token` and waits until it waits for an approval: the run,
/// the request and the digest of its arguments.
async fn waiting_run(base: &str, token: &str, body: &Value) -> (String, String, String) {
    let (s, v) = post_json(base, token, "/v1/runs", body.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let run = v["run_id"].as_str().unwrap().to_owned();
    until_status(base, &run, "waiting").await;
    let asked = get_json(base, "t-op", &format!("/v1/approvals?run={run}")).await;
    let field = |k: &str| asked[0][k].as_str().unwrap_or_default().to_owned();
    let (request, digest) = (field("request"), field("args_digest"));
    assert!(!request.is_empty(), "{asked}");
    (run, request, digest)
}

/// Uses up the quotas of the capped tenants: one run started (it attains), one held (it
/// waits for an approval).
async fn prime_quotas(base: &str) {
    let with_key = || {
        warrant_http::client()
            .post(format!("{base}/v1/runs"))
            .bearer_auth("t-capped")
            .header("idempotency-key", "cap-1")
            .json(&json!({"spec_path": "book/spec.yaml"}))
    };
    let r = with_key().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let capped: Value = r.json().await.unwrap();
    until_status_as(
        base,
        "t-capped",
        capped["run_id"].as_str().unwrap(),
        "attained",
    )
    .await;
    // One run of the spender: its one call (a worker's, on a fleet) is all it may make.
    let (s, v) = post_json(
        base,
        "t-spender",
        "/v1/runs",
        json!({"spec_path": "book/spec.yaml"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    until_status_as(base, "t-spender", v["run_id"].as_str().unwrap(), "attained").await;
    let (s, v) = post_json(
        base,
        "t-holding",
        "/v1/runs",
        json!({"spec_path": "book/spec.yaml", "ask_tools": ["append_entry"]}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    // A refusal says when to try again, in seconds.
    let r = warrant_http::client()
        .post(format!("{base}/v1/runs"))
        .bearer_auth("t-capped")
        .json(&json!({"spec_path": "book/spec.yaml"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=600).contains(&retry), "{retry}");
    // A retry of the request that started its run is answered with that run, at quota or
    // not: it starts nothing.
    let r = with_key().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let again: Value = r.json().await.unwrap();
    assert_eq!(again["run_id"], capped["run_id"], "{again}");
}

/// How many events `run` has.
async fn events_of(base: &str, run: &str) -> usize {
    get_json(base, "t-op", &format!("/v1/runs/{run}/events?from=1")).await["events"]
        .as_array()
        .unwrap()
        .len()
}

/// A tally of one class.
#[derive(Default)]
struct Tally {
    cases: usize,
    refused: usize,
}

/// Every case against the server at `base`; what got through, as lines.
async fn attack(
    g: &Ground,
    base: &str,
    fill: &BTreeMap<&str, String>,
    table: &mut BTreeMap<&'static str, Tally>,
) -> Vec<String> {
    let forbidden = g.forbidden_words();
    let mut through = Vec::new();
    for case in cases(g) {
        let before_runs = runs_seen(base).await;
        let before_canaries = g.canaries();
        let before_hits = g.sentinel.hits.load(Ordering::SeqCst);
        let (status, text) = send(base, &case, fill).await;
        let mut wrong = Vec::new();
        if status.as_u16() != case.status {
            wrong.push(format!("answered {status}, not {}", case.status));
        }
        for w in &case.says {
            if !text.contains(w) {
                wrong.push(format!("does not say `{w}`"));
            }
        }
        for w in &forbidden {
            if text.contains(w.as_str()) {
                wrong.push(format!("leaks `{w}`"));
            }
        }
        if g.canaries() != before_canaries {
            wrong.push(format!("ran something: {:?}", g.canaries()));
        }
        if g.sentinel.hits.load(Ordering::SeqCst) != before_hits {
            wrong.push("fetched something".to_owned());
        }
        if runs_seen(base).await != before_runs {
            wrong.push("recorded a run".to_owned());
        }
        let tally = table.entry(case.class).or_default();
        tally.cases += 1;
        if wrong.is_empty() {
            tally.refused += 1;
        } else {
            through.push(format!(
                "[{}] {}: {} ({text})",
                case.class,
                case.name,
                wrong.join("; ")
            ));
        }
    }
    through
}

fn print_table(title: &str, table: &BTreeMap<&'static str, Tally>) -> usize {
    eprintln!(
        "\n{title}\n  {:<14} {:>6} {:>22}",
        "class", "cases", "refused as expected"
    );
    let mut total = 0;
    for (class, t) in table {
        eprintln!("  {class:<14} {:>6} {:>22}", t.cases, t.refused);
        total += t.cases;
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_front_door_refuses_what_only_the_operator_may_configure() {
    let g = ground();
    let store = g.work.join("w.db").display().to_string();
    let server = g.serve(&store);
    let base = server.base.clone();

    // What is allowed works: the operator's catalog for a runner, an author's spec over a
    // registered provider (and a registered model), each run to its end.
    let (s, v) = post_json(
        &base,
        "t-runner",
        "/v1/runs",
        json!({"spec_path": "book/spec.yaml"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    until_status(&base, v["run_id"].as_str().unwrap(), "attained").await;
    let mine = spec_with("  book: {registered: book}\n", "");
    let (s, v) = post_json(&base, "t-author", "/v1/runs", json!({"spec": mine})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let authored = until_status(&base, v["run_id"].as_str().unwrap(), "attained").await;
    let (s, v) = post_json(
        &base,
        "t-author",
        "/v1/runs",
        json!({"spec": mine.replace("scripted:scripts/book.yaml", "model:fast")}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    until_status(&base, v["run_id"].as_str().unwrap(), "attained").await;
    let book = std::fs::read_to_string(g.work.join("book.jsonl")).unwrap();
    assert_eq!(book.lines().count(), 3, "{book}");
    // The run names the operator's provider and its pin, never its settings.
    let started = get_json(
        &base,
        "t-author",
        &format!(
            "/v1/runs/{}/events?from=1",
            authored["run_id"].as_str().unwrap()
        ),
    )
    .await;
    let first = started["events"][0].to_string();
    assert!(
        first.contains("\"registered\":\"book\"") && first.contains("\"pin\":\"sha256:"),
        "{first}"
    );
    assert!(
        !first.contains("book.jsonl"),
        "the operator's settings leaked: {first}"
    );

    let (fill, waiting) = waiting_runs(&base).await;
    let mut events_before = Vec::new();
    for r in &waiting {
        events_before.push(events_of(&base, r).await);
    }

    prime_quotas(&base).await;
    // The removed principal: gone from the file, its token stops working.
    let principals = std::fs::read_to_string(g.work.join("principals.yaml")).unwrap();
    let kept: String = principals
        .lines()
        .filter(|l| !l.contains("user: gone"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(g.work.join("principals.yaml"), kept).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let mut table = BTreeMap::new();
    let through = attack(&g, &base, &fill, &mut table).await;
    let total = print_table("front doors: warrant serve (SQLite)", &table);
    assert!(total >= 60, "only {total} cases");
    // Nothing any case did reached the waiting runs' logs.
    let mut events_after = Vec::new();
    for r in &waiting {
        events_after.push(events_of(&base, r).await);
    }
    assert_eq!(
        events_before, events_after,
        "a refused request wrote to a run"
    );
    assert!(
        through.is_empty(),
        "{} case(s) got through:\n{}",
        through.len(),
        through.join("\n")
    );
    // Each tenant's use, and what its quotas refused, in `/metrics`.
    let metrics = metrics_page(&base).await;
    for line in [
        "warrant_tenant_runs_started{tenant=\"capped\"} 1",
        "warrant_tenant_runs_held{tenant=\"holding\"} 1",
        "warrant_tenant_quota_refusals_total{tenant=\"capped\",quota=\"runs started\"} 2",
        "warrant_tenant_quota_refusals_total{tenant=\"holding\",quota=\"runs held\"} 1",
    ] {
        assert!(metrics.contains(line), "no `{line}` in:\n{metrics}");
    }
    assert!(
        metrics.contains("warrant_tenant_calls{tenant=\"acme\"}"),
        "{metrics}"
    );
    // The same approver through the CLI is not a second person either.
    let again = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .current_dir(&g.work)
        .env("WARRANT_STORE", &store)
        .args(["approve", &fill["tworeq"], "--as", "acme/ann"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("2 different people"),
        "{}",
        stderr(&again)
    );
    let written = std::fs::read_to_string(g.work.join("book.jsonl")).unwrap();
    assert_eq!(
        written.lines().count(),
        5,
        "one approval of two wrote: {written}"
    );
    // The second person completes it, and another person approves the self-started run:
    // each writes once, under the rule each answer records.
    let (s, v) = post_json(
        &base,
        "t-approver2",
        &format!("/v1/approvals/{}/approve", fill["tworeq"]),
        json!({"args_digest": fill["twodigest"]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    until_status(&base, &waiting[2], "attained").await;
    let (s, v) = post_json(
        &base,
        "t-approver",
        &format!("/v1/approvals/{}/approve", fill["selfreq"]),
        json!({"args_digest": fill["selfdigest"]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    until_status(&base, &waiting[1], "attained").await;
    let written = std::fs::read_to_string(g.work.join("book.jsonl")).unwrap();
    assert_eq!(written.lines().count(), 7, "{written}");
    let answers = get_json(
        &base,
        "t-op",
        &format!("/v1/runs/{}/events?from=1", waiting[2]),
    )
    .await;
    let rules: Vec<String> = answers["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "approval_resolved")
        .map(|e| format!("{} {}", e["by"], e["rule"]))
        .collect();
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert!(
        rules[0].contains("acme/ann") && rules[1].contains("acme/bea"),
        "{rules:?}"
    );

    // The CLI holds the same inline specs to the same rules: exit 2, the same reason, nothing
    // run or fetched.
    let mut cli_through = Vec::new();
    let mut cli_cases = 0;
    for case in cases(&g) {
        let Some(text) = &case.inline else {
            continue;
        };
        cli_cases += 1;
        let file = g.work.join("attack.yaml");
        std::fs::write(&file, text).unwrap();
        let before = (g.canaries(), g.sentinel.hits.load(Ordering::SeqCst));
        let out = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(&g.work)
            .env("WARRANT_STORE", &store)
            .env("BOOK_KEY", BOOK_KEY)
            .args([
                "--providers",
                "providers.yaml",
                "validate",
                "--as-author",
                "--specs",
                "specs",
                "attack.yaml",
            ])
            .output()
            .unwrap();
        let said = stderr(&out);
        if out.status.code() != Some(2)
            || !case.says.iter().all(|w| said.contains(w))
            || (g.canaries(), g.sentinel.hits.load(Ordering::SeqCst)) != before
        {
            cli_through.push(format!(
                "{}: exit {:?}: {said}{}",
                case.name,
                out.status.code(),
                stdout(&out)
            ));
        }
    }
    eprintln!(
        "  CLI (`validate --as-author`): {cli_cases} inline specs, {} refused as expected",
        cli_cases - cli_through.len()
    );
    assert!(
        cli_through.is_empty(),
        "through the CLI:\n{}",
        cli_through.join("\n")
    );
    drop(server);

    // A fleet: a server on PostgreSQL queues, a worker drives. Every start is refused the
    // same and nothing is queued for the worker.
    let url = tokio::task::spawn_blocking(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(warrant_store::contract::postgres_scratch("doors"))
    })
    .await
    .unwrap();
    let fleet = g.serve(&url);
    let worker = Worker(
        Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(&g.work)
            .env("WARRANT_STORE", &url)
            .env("BOOK_KEY", BOOK_KEY)
            .env_remove("WARRANT_FAULT")
            .args(["--providers", "providers.yaml", "worker", "--name", "doors"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let (s, v) = post_json(&fleet.base, "t-author", "/v1/runs", json!({"spec": mine})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    until_status(&fleet.base, v["run_id"].as_str().unwrap(), "attained").await;
    prime_quotas(&fleet.base).await;
    // The operator's catalog in the fleet's store: added by command, started by id, and no
    // longer once retired.
    let specs = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_warrant"))
            .current_dir(&g.work)
            .env("WARRANT_STORE", &url)
            .arg("specs")
            .args(args)
            .output()
            .unwrap()
    };
    let added = specs(&["add", "specs/book/spec.yaml", "--as", "ops"]);
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(
        stdout(&added).contains("added `book` version sha256:"),
        "{}",
        stdout(&added)
    );
    let listed = get_json(&fleet.base, "t-runner", "/v1/specs").await;
    assert_eq!(listed[0]["id"], "book", "{listed}");
    let (s, v) = post_json(
        &fleet.base,
        "t-runner",
        "/v1/runs",
        json!({"spec_id": "book"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    until_status(&fleet.base, v["run_id"].as_str().unwrap(), "attained").await;
    let retired = specs(&["retire", "book"]);
    assert!(retired.status.success(), "{}", stderr(&retired));
    let (s, v) = post_json(
        &fleet.base,
        "t-runner",
        "/v1/runs",
        json!({"spec_id": "book"}),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("retired"), "{v}");
    let mut fleet_table = BTreeMap::new();
    let (fleet_fill, fleet_waiting) = waiting_runs(&fleet.base).await;
    let fleet_through = attack(&g, &fleet.base, &fleet_fill, &mut fleet_table).await;
    for r in &fleet_waiting {
        assert_eq!(
            get_json(&fleet.base, "t-op", &format!("/v1/runs/{r}")).await["status"],
            "waiting",
            "a refused request moved {r}"
        );
    }
    print_table(
        "front doors: a fleet (PostgreSQL server and worker)",
        &fleet_table,
    );
    drop(worker);
    assert!(
        fleet_through.is_empty(),
        "through the fleet:\n{}",
        fleet_through.join("\n")
    );
    let book = std::fs::read_to_string(g.work.join("book.jsonl")).unwrap();
    assert_eq!(
        book.lines().count(),
        11,
        "only the allowed runs wrote: {book}"
    );
}

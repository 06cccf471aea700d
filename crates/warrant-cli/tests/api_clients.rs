//! Clients generated from `warrant serve`'s OpenAPI document, as a user of the API would make
//! them: openapi-python-client and @hey-api/openapi-ts (installed by `.ci/api-clients`) each
//! generate a client into a scratch folder from the document the server answers, with no
//! warning, and each drives a scenario through it (`clients/scenarios/generated.{py,ts}`):
//! create with an idempotency key (201, then 200 with the same run), follow the events,
//! approve with the digest shown (another digest is a typed 409 problem), fetch the report.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "tests"
)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{root, scratch, start_server};

/// The cached virtualenv's programs (`.ci/api-clients`), or WARRANT_API_PYTHON's.
fn python_generator() -> (PathBuf, PathBuf) {
    let bin = match std::env::var("WARRANT_API_PYTHON") {
        Ok(p) => PathBuf::from(p).parent().unwrap().to_owned(),
        Err(_) => std::env::var("WARRANT_CACHE")
            .map_or_else(
                |_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/warrant"),
                PathBuf::from,
            )
            .join("api-clients-0.29.1/bin"),
    };
    let generator = bin.join("openapi-python-client");
    assert!(
        generator.exists(),
        "install the client generators first: .ci/api-clients (./test does)"
    );
    (bin.join("python"), generator)
}

fn node_tool(name: &str) -> PathBuf {
    let tool = root()
        .join("clients/typescript/node_modules/.bin")
        .join(name);
    assert!(
        tool.exists(),
        "install the client generators first: .ci/api-clients (./test does)"
    );
    tool
}

/// Runs `cmd`: its output, the test failing with both streams when it fails.
fn ran(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

/// The server's document, as a client generator would fetch it.
fn document(base: &str, dir: &Path) -> PathBuf {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = runtime.block_on(async {
        reqwest::get(format!("{base}/v1/openapi.json"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let path = dir.join("openapi.json");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn clients_generated_from_the_api_document_drive_a_run_to_its_end() {
    let (dir, store) = scratch();
    let server = start_server(&store, &root().join("examples"), &[], None);
    let doc = document(&server.base, dir.path());

    // Python: generated with no warning, then the scenario.
    let (python, generator) = python_generator();
    let config = dir.path().join("generator.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    let made = ran(
        Command::new(&generator)
            .current_dir(dir.path())
            .args(["generate", "--meta", "none", "--output-path", "warrant_api"])
            .arg("--path")
            .arg(&doc)
            .arg("--config")
            .arg(&config),
        "openapi-python-client",
    );
    assert!(
        !made.contains("Warning") && !made.contains("Unable"),
        "the Python generator could not map all of the document:\n{made}"
    );
    let said = ran(
        Command::new(&python)
            .env("PYTHONPATH", dir.path())
            .arg(root().join("clients/scenarios/generated.py"))
            .args([&server.base, "pay-rent/spec.yaml"]),
        "the Python scenario",
    );
    assert!(said.contains("attained"), "{said}");

    // TypeScript: generated, compiled strictly with the scenario, run by Node.js.
    let ts = dir.path().join("ts");
    std::fs::create_dir(&ts).unwrap();
    ran(
        Command::new(node_tool("openapi-ts"))
            .current_dir(&ts)
            .arg("-i")
            .arg(&doc)
            .args(["-o", "gen"]),
        "openapi-ts",
    );
    std::fs::copy(
        root().join("clients/scenarios/generated.ts"),
        ts.join("scenario.ts"),
    )
    .unwrap();
    std::fs::write(
        ts.join("tsconfig.json"),
        r#"{"compilerOptions": {"target": "ES2022", "module": "CommonJS",
            "moduleResolution": "Node10", "strict": true, "outDir": "out", "types": [],
            "lib": ["ES2022", "DOM", "DOM.Iterable"]}, "files": ["scenario.ts"]}"#,
    )
    .unwrap();
    ran(
        Command::new(node_tool("tsc"))
            .current_dir(&ts)
            .args(["-p", "tsconfig.json"]),
        "tsc",
    );
    let said = ran(
        Command::new("node")
            .arg(ts.join("out/scenario.js"))
            .args([&server.base, "pay-rent/spec.yaml"]),
        "the TypeScript scenario",
    );
    assert!(said.contains("attained"), "{said}");
}

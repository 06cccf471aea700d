//! Clients generated from `warrant serve`'s OpenAPI document, as a user of the API would make
//! them: openapi-python-client and @hey-api/openapi-ts (installed by `.ci/api-clients`) each
//! generate a client into a scratch folder from the document the server answers, with no
//! warning, and each drives a scenario through it (`clients/scenarios/generated.{py,ts}`):
//! create with an idempotency key (201, then 200 with the same run), follow the events,
//! approve with the digest shown (another digest is a typed 409 problem), fetch the report.
//!
//! Then the client libraries (`clients/python`, `clients/typescript`): their generated parts
//! are what the generators make of the document today, each is packaged the ordinary way (a
//! wheel, an npm tarball), installed from that package into a scratch folder, and its own
//! tests and README example run against a live server.

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

use serde_json::{Value, json};
use support::{root, scratch, start_server};
use warrant_core::canon::{canonical_json, digest};

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
    let text = support::get_text_blocking(format!("{base}/v1/openapi.json"));
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

/// Generates the Python client from the released document into `out`.
fn generate_python(out: &Path, dir: &Path) -> String {
    let (_, generator) = python_generator();
    let config = dir.join("generator.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    ran(
        Command::new(&generator)
            .current_dir(out.parent().unwrap())
            .args(["generate", "--meta", "none", "--output-path"])
            .arg(out.file_name().unwrap())
            .arg("--path")
            .arg(root().join("docs/api/openapi-v1.json"))
            .arg("--config")
            .arg(&config),
        "openapi-python-client",
    )
}

/// Every file under `dir`, by its path relative to it (caches left out).
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == "__pycache__") {
                continue;
            }
            if path.is_dir() {
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(dir).unwrap().to_owned(), bytes);
            }
        }
    }
    out
}

/// `a` and `b` hold the same files; else which differ, and how to make them again.
fn same_tree(made: &Path, committed: &Path, again: &str) {
    let (made, committed) = (tree(made), tree(committed));
    let differ: Vec<_> = made
        .keys()
        .chain(committed.keys())
        .filter(|k| made.get(*k) != committed.get(*k))
        .collect();
    assert!(
        differ.is_empty(),
        "the generated client is not what the generator makes of docs/api/openapi-v1.json \
         ({differ:?}); make it again: {again}"
    );
}

/// Copies `from` into `to`, leaving out `skip`'s names.
fn copy_tree(from: &Path, to: &Path, skip: &[&str]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        if path.is_dir() {
            copy_tree(&path, &to.join(name), skip);
        } else {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
}

/// Values whose canonical form and digest the clients must compute as the server does: the
/// number layouts, escapes and key orders where a client's own JSON writer differs.
fn digest_vectors(dir: &Path) -> PathBuf {
    let texts = [
        r#"{"to":"DE89370400440532013000","amount":950,"currency":"EUR"}"#,
        r#"{"b":[1.5,2.0,-0.0,0.1,100.0,1e16,1e15,1.5e-7,0.0001,0.00001,123456789.125,1e300]}"#,
        r#"{"big":18446744073709551615,"bigger":18446744073709551616,"neg":-9223372036854775808}"#,
        r#"{"ctl":"a\u0001b\n\t\"\\ \u007f \u2028","é":1,"z":2,"Z":3,"":0}"#,
        r#"{"emoji":"😀","keys":{"😀":1,"￿":2,"a":3}}"#,
        r#"[{"nested":{"deep":[[],{},null,true,false]}},"x",-1,0]"#,
        r#"{"exp":1E2,"frac":10.50,"small":5e-324,"round":0.30000000000000004}"#,
    ];
    let vectors: Vec<Value> = texts
        .iter()
        .map(|t| {
            let v: Value = serde_json::from_str(t).unwrap();
            json!({"json": t, "canonical": canonical_json(&v), "digest": digest(&v)})
        })
        .collect();
    let path = dir.join("digests.json");
    std::fs::write(&path, serde_json::to_vec(&vectors).unwrap()).unwrap();
    path
}

#[test]
fn the_client_libraries_pass_their_own_tests_against_a_live_server() {
    let (dir, store) = scratch();
    let dir = dir.path();
    let server = start_server(&store, &root().join("examples"), &[], None);
    let clients = root().join("clients");

    // The document the generated parts come from is the one the server answers.
    let served: Value =
        serde_json::from_str(&std::fs::read_to_string(document(&server.base, dir)).unwrap())
            .unwrap();
    let released: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/api/openapi-v1.json")).unwrap(),
    )
    .unwrap();
    assert!(
        served == released,
        "docs/api/openapi-v1.json is not the document the server answers: write it again \
         (clients/generate) and the clients with it"
    );
    let made = dir.join("py-gen/_api");
    std::fs::create_dir_all(made.parent().unwrap()).unwrap();
    generate_python(&made, dir);
    same_tree(
        &made,
        &clients.join("python/src/warrant_client/_api"),
        "clients/generate",
    );
    let made = dir.join("ts-gen");
    ran(
        Command::new(node_tool("openapi-ts"))
            .arg("-i")
            .arg(root().join("docs/api/openapi-v1.json"))
            .arg("-o")
            .arg(&made),
        "openapi-ts",
    );
    same_tree(
        &made,
        &clients.join("typescript/src/gen"),
        "clients/generate",
    );

    let vectors = digest_vectors(dir);
    let (python, _) = python_generator();

    // Python: a wheel built from the sources, installed, its tests run from the installed copy.
    let source = dir.join("py-src");
    copy_tree(
        &clients.join("python"),
        &source,
        &["__pycache__", "build", "dist"],
    );
    ran(
        Command::new(&python)
            .args(["-m", "pip", "wheel", "--no-deps", "--no-build-isolation"])
            .args(["--disable-pip-version-check", "--quiet", "-w"])
            .arg(dir.join("wheels"))
            .arg(&source),
        "building the wheel",
    );
    let wheel = std::fs::read_dir(dir.join("wheels"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
    assert!(
        wheel
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("warrant_client-0.1.0-py3-none-any"),
        "{wheel:?}"
    );
    let site = dir.join("site");
    ran(
        Command::new(&python)
            .args(["-m", "pip", "install", "--no-deps", "--quiet"])
            .args(["--disable-pip-version-check", "--target"])
            .arg(&site)
            .arg(&wheel),
        "installing the wheel",
    );
    let said = ran(
        Command::new(&python)
            .current_dir(dir)
            .env("PYTHONPATH", &site)
            .env("WARRANT_URL", &server.base)
            .env("WARRANT_DIGESTS", &vectors)
            .args(["-m", "unittest", "discover", "-v", "-s"])
            .arg(clients.join("python/tests")),
        "the Python client's tests",
    );
    assert!(said.contains("OK") && said.contains(": attained"), "{said}");

    // TypeScript: compiled, packed, installed from the tarball, its tests and example run.
    let source = dir.join("ts-src");
    copy_tree(
        &clients.join("typescript"),
        &source,
        &["node_modules", "dist"],
    );
    std::os::unix::fs::symlink(
        clients.join("typescript/node_modules"),
        source.join("node_modules"),
    )
    .unwrap();
    ran(
        Command::new(node_tool("tsc"))
            .current_dir(&source)
            .args(["-p", "tsconfig.json"]),
        "tsc",
    );
    ran(
        Command::new("npm")
            .current_dir(&source)
            .args(["pack", "--silent", "--pack-destination"])
            .arg(dir),
        "npm pack",
    );
    let tarball = dir.join("warrant-client-0.1.0.tgz");
    assert!(
        tarball.exists(),
        "npm pack made no warrant-client-0.1.0.tgz"
    );
    let app = dir.join("ts-app");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(
        app.join("package.json"),
        r#"{"name": "app", "private": true}"#,
    )
    .unwrap();
    ran(
        Command::new("npm")
            .current_dir(&app)
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--silent",
            ])
            .arg(&tarball),
        "installing the tarball",
    );
    std::fs::copy(
        clients.join("typescript/test/client.test.cjs"),
        app.join("client.test.cjs"),
    )
    .unwrap();
    let said = ran(
        Command::new("node")
            .current_dir(&app)
            .env("WARRANT_URL", &server.base)
            .env("WARRANT_DIGESTS", &vectors)
            .args(["--test", "client.test.cjs"]),
        "the TypeScript client's tests",
    );
    assert!(
        said.contains("# pass 5") && said.contains("# fail 0"),
        "{said}"
    );
    std::fs::copy(
        clients.join("typescript/examples/approve.ts"),
        app.join("approve.ts"),
    )
    .unwrap();
    std::fs::write(
        app.join("tsconfig.json"),
        r#"{"compilerOptions": {"target": "ES2022", "module": "CommonJS",
            "moduleResolution": "Node10", "strict": true, "types": [],
            "lib": ["ES2022", "DOM", "DOM.Iterable"]}, "files": ["approve.ts"]}"#,
    )
    .unwrap();
    ran(
        Command::new(node_tool("tsc"))
            .current_dir(&app)
            .args(["-p", "tsconfig.json"]),
        "compiling the TypeScript example against the package",
    );
    let said = ran(
        Command::new("node")
            .current_dir(&app)
            .arg("approve.js")
            .arg(&server.base),
        "the TypeScript example",
    );
    assert!(
        said.contains("asks:") && said.trim_end().ends_with(": attained"),
        "{said}"
    );
    eprintln!("{said}");
}

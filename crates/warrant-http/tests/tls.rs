//! A real TLS handshake through a client made here: a loopback HTTPS server (Python's `ssl`,
//! a certificate from a test CA made with `openssl`) is reached when the CA is trusted, and
//! refused when it is not — the ring provider verifies, it does not only connect.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A test CA and a certificate it signed for `localhost` and 127.0.0.1.
fn certificates(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=test ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// An HTTPS server on loopback answering every GET with `hello over tls`; its port.
struct Server(Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dir: &Path) -> Server {
    const SCRIPT: &str = r#"
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello over tls"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain("server.pem", "server.key")
s.socket = c.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the server prints its port");
    Server(child, port)
}

#[tokio::test]
async fn a_client_made_here_speaks_tls_and_verifies_the_server() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let server = serve(dir.path());
    let url = format!("https://localhost:{}/", server.1);

    let ca =
        reqwest::Certificate::from_pem(&std::fs::read(dir.path().join("ca.pem")).unwrap()).unwrap();
    let trusting = warrant_http::builder()
        .tls_certs_only([ca])
        .build()
        .unwrap();
    let answer = trusting.get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "hello over tls");

    // The same server, its CA not trusted: the handshake is refused.
    let err = warrant_http::client().get(&url).send().await.unwrap_err();
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(&err);
    while let Some(e) = source {
        chain.push_str(&format!("{e}; "));
        source = e.source();
    }
    assert!(
        chain.to_lowercase().contains("certificate"),
        "refused for its certificate: {chain}"
    );
}

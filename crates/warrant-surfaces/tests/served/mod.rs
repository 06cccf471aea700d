//! Pages served on loopback for the WebMCP tests.

use std::collections::BTreeMap;
use std::io::{BufRead as _, Read as _, Write as _};
use std::net::TcpListener;

/// Serves `files` (path → HTML or script) on a loopback port, on a thread, until the test
/// ends: the base URL.
pub fn serve(files: BTreeMap<&'static str, &'static str>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
            // The rest of the request's head.
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                    break;
                }
            }
            let (status, kind, body) = match files.get(path.as_str()) {
                Some(body) if path.ends_with(".js") => ("200 OK", "text/javascript", *body),
                Some(body) => ("200 OK", "text/html", *body),
                None => ("404 Not Found", "text/plain", "nothing here"),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.read(&mut [0; 0]);
        }
    });
    base
}

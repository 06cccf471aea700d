//! Canonical JSON and digests: the same value always gives the same bytes and the same digest,
//! whatever the order its object keys arrived in.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Writes `value` as compact JSON with object keys sorted, recursively.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push(b'{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(*k, out);
                out.push(b':');
                if let Some(v) = map.get(*k) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        other => write_scalar(other, out),
    }
}

/// A string or scalar as compact JSON. Writing to memory cannot fail, and these have no map
/// keys that could fail to serialize.
fn write_scalar(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// `text` cut to its first `max` bytes (at a character boundary) and marked, for a record that
/// must stay bounded: `{"truncated": true, "bytes": <whole length>, "head": <the cut>}`.
pub fn truncated(text: &str, max: usize) -> Value {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    serde_json::json!({"truncated": true, "bytes": text.len(), "head": &text[..end]})
}

/// `sha256:<hex>` of the canonical form of `value`.
pub fn digest(value: &Value) -> String {
    digest_bytes(canonical_json(value).as_bytes())
}

/// `sha256:<hex>` of raw bytes.
pub fn digest_bytes(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 2 * sum.len());
    out.push_str("sha256:");
    for b in sum {
        for nibble in [b >> 4, b & 0xf] {
            out.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    out
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "tests"
)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_digest() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,2],"x":"s"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&json!({"a": 1})));
    }

    #[test]
    fn the_canonical_form_escapes_as_json_and_the_digest_is_sha256_in_lower_hex() {
        let v = json!({"b": {}, "a\n\"é": ["x\u{1}", 1.5, -3, null, true]});
        let text = r#"{"a\n\"é":["x\u0001",1.5,-3,null,true],"b":{}}"#;
        assert_eq!(canonical_json(&v), text);
        assert_eq!(
            digest(&v),
            "sha256:195e26281c1730f2f3518d13b7e968e59fc0343b56da0990954a16ca6b7aae42"
        );
        assert_eq!(
            digest_bytes(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

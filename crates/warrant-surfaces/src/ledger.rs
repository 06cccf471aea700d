//! The `ledger` reference provider: each effect is one line appended (and fsynced) to a file
//! outside Warrant's store, so a crash test can count exactly which effects happened.
//!
//! Config: `{file: PATH, keys: true|false}`. With `keys: true` (the default) a repeated
//! idempotency key returns the first result and appends nothing; with `keys: false` every call
//! appends, so Warrant must never repeat a lost one.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use warrant_core::event::Effect;

use crate::reference::{ActionSpec, Provider, ProviderError};

/// A file-backed ledger.
pub struct Ledger {
    file: PathBuf,
    keys: bool,
    /// Shared by every ledger of this process on the same file: each run has its own
    /// instance, and runs in one process (a server's) append at the same time.
    lock: Arc<Mutex<()>>,
    appended: AtomicU64,
}

/// The lock of `file`, one per file in this process.
fn file_lock(file: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let key = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let locks = LOCKS.get_or_init(|| Mutex::new(HashMap::new()));
    match locks.lock() {
        Ok(mut m) => m.entry(key).or_default().clone(),
        // A poisoned table: this ledger gets a lock of its own.
        Err(_) => Arc::default(),
    }
}

/// One line of a ledger file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The idempotency key of the intent that caused it.
    pub key: String,
    /// What was written.
    pub entry: String,
    /// 1-based position in the file.
    pub position: u64,
}

impl Ledger {
    /// A ledger from a spec's `config`.
    pub fn from_config(config: Option<&Value>) -> Result<Ledger, String> {
        let config = config.ok_or("the ledger needs `config: {file: PATH}`")?;
        let file = config
            .get("file")
            .and_then(Value::as_str)
            .ok_or("the ledger's `config.file` must be a path")?;
        let keys = match config.get("keys") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("the ledger's `config.keys` must be true or false".into()),
        };
        Ok(Ledger {
            lock: file_lock(Path::new(file)),
            file: PathBuf::from(file),
            keys,
            appended: AtomicU64::new(0),
        })
    }

    /// Every entry in a ledger file; lines that do not parse (a torn last write) are skipped.
    pub fn read(file: &std::path::Path) -> std::io::Result<Vec<Entry>> {
        let f = match std::fs::File::open(file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut entries = Vec::new();
        for line in BufReader::new(f).lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line?) else {
                continue;
            };
            entries.push(Entry {
                key: v
                    .get("key")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                entry: v
                    .get("entry")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                position: v
                    .get("position")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
            });
        }
        Ok(entries)
    }

    fn unavailable(e: std::io::Error) -> ProviderError {
        ProviderError::Unavailable(format!("ledger file: {e}"))
    }
}

/// Whether `f` is not empty and does not end with a newline.
fn torn_tail(f: &mut std::fs::File) -> std::io::Result<bool> {
    if f.metadata()?.len() == 0 {
        return Ok(false);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last != *b"\n")
}

impl Provider for Ledger {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![
            ActionSpec {
                name: "append_entry".into(),
                effect: Effect::Commit,
                description: "Append an entry to the ledger.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"entry": {"type": "string", "maxLength": 200}},
                    "required": ["entry"],
                    "additionalProperties": false
                }),
            },
            ActionSpec {
                name: "count_entries".into(),
                effect: Effect::Read,
                description: "Count the ledger's entries.".into(),
                input_schema: json!({"type": "object", "additionalProperties": false}),
            },
        ]
    }

    fn state_version(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }

    fn accepts_idempotency_keys(&self) -> bool {
        self.keys
    }

    fn call(&self, action: &str, args: &Value, key: &str) -> Result<Value, ProviderError> {
        let _guard = self
            .lock
            .lock()
            .map_err(|_| ProviderError::Unavailable("ledger lock poisoned".into()))?;
        // Processes sharing the file (a fleet's workers) take turns too: a keyed append looks
        // for its key and appends under one lock, so a key is never written twice.
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.file)
            .map_err(Ledger::unavailable)?;
        file.lock().map_err(Ledger::unavailable)?;
        let entries = Ledger::read(&self.file).map_err(Ledger::unavailable)?;
        match action {
            "count_entries" => Ok(json!({"entries": entries.len()})),
            "append_entry" => {
                let entry = args
                    .get("entry")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if self.keys
                    && let Some(first) = entries.iter().find(|e| e.key == key)
                {
                    return Ok(json!({"entry": first.entry, "position": first.position}));
                }
                let position = entries.len() as u64 + 1;
                let line = json!({"key": key, "entry": entry, "position": position});
                let mut f = file;
                // One write of a whole line (an appender elsewhere cannot land inside it),
                // after a newline when a crash left the last line torn: the torn line stays
                // unreadable, this one does not join it.
                let mut text = String::new();
                if torn_tail(&mut f).map_err(Ledger::unavailable)? {
                    text.push('\n');
                }
                text.push_str(&line.to_string());
                text.push('\n');
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(Ledger::unavailable)?;
                self.appended.fetch_add(1, Ordering::AcqRel);
                Ok(json!({"entry": entry, "position": position}))
            }
            other => Err(ProviderError::Failed(format!(
                "the ledger has no action `{other}`"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(file: &Path) -> Ledger {
        Ledger::from_config(Some(&json!({"file": file.to_str().unwrap(), "keys": true}))).unwrap()
    }

    #[test]
    fn ledgers_of_many_runs_on_one_file_lose_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("l.jsonl");
        std::thread::scope(|s| {
            for t in 0..8 {
                let file = file.clone();
                s.spawn(move || {
                    let l = ledger(&file);
                    for i in 0..25 {
                        l.call("append_entry", &json!({"entry": "x"}), &format!("k{t}-{i}"))
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(Ledger::read(&file).unwrap().len(), 200);
    }

    #[test]
    fn an_entry_after_a_torn_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("l.jsonl");
        std::fs::write(&file, "{\"key\": \"a\", \"entry\": \"x\", \"posi").unwrap();
        ledger(&file)
            .call("append_entry", &json!({"entry": "y"}), "b")
            .unwrap();
        let keys: Vec<String> = Ledger::read(&file)
            .unwrap()
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, ["b"]);
    }
}

//! Work shared across an engine's runs that depends only on immutable inputs: compiled
//! argument schemas and spec digests. Keyed by the address of the `Arc` they came from; the
//! `Arc` is kept so the address cannot be reused. Bounded: past the limit the cache is cleared.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use warrant_core::Spec;

/// Most entries of each kind.
const ENTRIES_MAX: usize = 1024;

/// A compiled schema, or why it cannot be compiled.
pub(crate) type Compiled = Result<Arc<jsonschema::Validator>, String>;

#[derive(Default)]
pub(crate) struct Shared {
    validators: Mutex<HashMap<usize, (Arc<Value>, Compiled)>>,
    spec_hashes: Mutex<HashMap<usize, (Arc<Spec>, String)>>,
}

impl Shared {
    /// The compiled validator of `schema`. A schema that does not compile is unusable: the
    /// error is kept and every call to the action is refused (fail closed).
    pub(crate) fn validator(&self, schema: &Arc<Value>) -> Compiled {
        let key = Arc::as_ptr(schema) as usize;
        if let Ok(map) = self.validators.lock()
            && let Some((_, v)) = map.get(&key)
        {
            return v.clone();
        }
        let compiled = jsonschema::validator_for(schema)
            .map(Arc::new)
            .map_err(|e| e.to_string());
        if let Ok(mut map) = self.validators.lock() {
            if map.len() >= ENTRIES_MAX {
                map.clear();
            }
            map.insert(key, (schema.clone(), compiled.clone()));
        }
        compiled
    }

    /// The digest of `spec`.
    pub(crate) fn spec_hash(&self, spec: &Arc<Spec>) -> String {
        let key = Arc::as_ptr(spec) as usize;
        if let Ok(map) = self.spec_hashes.lock()
            && let Some((_, h)) = map.get(&key)
        {
            return h.clone();
        }
        let hash = spec.hash();
        if let Ok(mut map) = self.spec_hashes.lock() {
            if map.len() >= ENTRIES_MAX {
                map.clear();
            }
            map.insert(key, (spec.clone(), hash.clone()));
        }
        hash
    }
}

//! Work shared across an engine's runs that depends only on immutable inputs: compiled
//! argument schemas, spec digests and objectives prepared for provenance matching. Keyed by
//! the address of the `Arc` they came from; the `Arc` is kept so the address cannot be
//! reused. Bounded: past the limit the cache is cleared.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use warrant_core::Spec;
use warrant_core::provenance::Objective;

/// Most entries of each kind.
const ENTRIES_MAX: usize = 1024;

/// A compiled schema, or why it cannot be compiled.
pub(crate) type Compiled = Result<Arc<jsonschema::Validator>, String>;

/// What was made of each input, by the input's address (the input kept, so it stays).
type Memo<K, T> = Mutex<HashMap<usize, (Arc<K>, T)>>;

#[derive(Default)]
pub(crate) struct Shared {
    validators: Memo<Value, Compiled>,
    spec_hashes: Memo<Spec, String>,
    objectives: Memo<Spec, Arc<Objective>>,
}

/// What `map` holds for `input`, computed by `make` the first time.
fn memo<K, T: Clone>(map: &Memo<K, T>, input: &Arc<K>, make: impl FnOnce(&K) -> T) -> T {
    let key = Arc::as_ptr(input) as usize;
    if let Ok(map) = map.lock()
        && let Some((_, v)) = map.get(&key)
    {
        return v.clone();
    }
    let value = make(input);
    if let Ok(mut map) = map.lock() {
        if map.len() >= ENTRIES_MAX {
            map.clear();
        }
        map.insert(key, (input.clone(), value.clone()));
    }
    value
}

impl Shared {
    /// The compiled validator of `schema`. A schema that does not compile is unusable: the
    /// error is kept and every call to the action is refused (fail closed).
    pub(crate) fn validator(&self, schema: &Arc<Value>) -> Compiled {
        memo(&self.validators, schema, |schema| {
            jsonschema::validator_for(schema)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
    }

    /// The digest of `spec`.
    pub(crate) fn spec_hash(&self, spec: &Arc<Spec>) -> String {
        memo(&self.spec_hashes, spec, Spec::hash)
    }

    /// `spec`'s objective, prepared for provenance matching.
    pub(crate) fn objective(&self, spec: &Arc<Spec>) -> Arc<Objective> {
        memo(&self.objectives, spec, |s| {
            Arc::new(Objective::new(&s.objective))
        })
    }
}

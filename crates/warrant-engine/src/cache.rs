//! Work shared across an engine's runs that depends only on immutable inputs: compiled
//! argument schemas, spec digests and objectives prepared for provenance matching. Keyed by
//! the address of the `Arc` they came from; the `Arc` is kept so the address cannot be
//! reused. Bounded: past the limit the cache is cleared. A spec read again for each run (a new
//! `Arc`, the same content) is matched to the last one by content, exactly.

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
    /// The last spec digested, as serde writes it, and its digest.
    last_spec: Last<Vec<u8>, String>,
    /// The last objective prepared, and its text.
    last_objective: Last<String, Arc<Objective>>,
}

/// What was made last, and the content it was made from.
type Last<C, T> = Mutex<Option<(C, T)>>;

/// What `last` holds when it was made from `content`; otherwise made by `make` and kept as the
/// last.
fn by_content<C: PartialEq, T: Clone>(
    last: &Last<C, T>,
    content: C,
    make: impl FnOnce() -> T,
) -> T {
    if let Ok(last) = last.lock()
        && let Some((seen, made)) = &*last
        && *seen == content
    {
        return made.clone();
    }
    let made = make();
    if let Ok(mut last) = last.lock() {
        *last = Some((content, made.clone()));
    }
    made
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

    /// The digest of `spec`. A spec with the same content as the last one digested (byte for
    /// byte as serde writes it: `-0.0` is not `0.0` here, though `==` says it is) has its
    /// digest without building and hashing its canonical form again.
    pub(crate) fn spec_hash(&self, spec: &Arc<Spec>) -> String {
        memo(&self.spec_hashes, spec, |s| match serde_json::to_vec(s) {
            Ok(written) => by_content(&self.last_spec, written, || s.hash()),
            Err(_) => s.hash(),
        })
    }

    /// `spec`'s objective, prepared for provenance matching (once for each text in a row).
    pub(crate) fn objective(&self, spec: &Arc<Spec>) -> Arc<Objective> {
        memo(&self.objectives, spec, |s| {
            by_content(&self.last_objective, s.objective.clone(), || {
                Arc::new(Objective::new(&s.objective))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use warrant_core::Spec;
    use warrant_core::spec::Format;
    use warrant_surfaces::ReferenceCatalog;

    use super::Shared;

    fn cafe() -> Spec {
        warrant_core::validate::load(
            include_str!("../../../examples/cafe-gallery/spec.yaml"),
            Format::Yaml,
            "spec.yaml",
            &ReferenceCatalog::default(),
        )
        .expect("the example spec loads")
    }

    /// `config` of the spec's first provider set to `value`.
    fn configured(value: serde_json::Value) -> Arc<Spec> {
        let mut spec = cafe();
        let provider = spec.providers.values_mut().next().expect("a provider");
        provider.config = Some(value);
        Arc::new(spec)
    }

    #[test]
    fn a_spec_read_again_has_the_digest_of_its_content_and_a_spec_unlike_it_its_own() {
        let shared = Shared::default();
        let first = configured(json!({"limit": 0.0}));
        let again = configured(json!({"limit": 0.0}));
        assert!(!Arc::ptr_eq(&first, &again));
        assert_eq!(shared.spec_hash(&first), first.hash());
        assert_eq!(shared.spec_hash(&again), first.hash());
        // Equal by `==`, written differently: digested on its own.
        let negative = configured(json!({"limit": -0.0}));
        assert_eq!(*negative, *first);
        assert_ne!(negative.hash(), first.hash());
        assert_eq!(shared.spec_hash(&negative), negative.hash());
        // And the earlier content, after another: its own digest still.
        let third = configured(json!({"limit": 0.0}));
        assert_eq!(shared.spec_hash(&third), first.hash());
    }

    #[test]
    fn an_objective_is_prepared_from_its_own_text() {
        let shared = Shared::default();
        let first = Arc::new(cafe());
        let again = Arc::new(cafe());
        assert!(Arc::ptr_eq(
            &shared.objective(&first),
            &shared.objective(&again)
        ));
        let mut other = cafe();
        other.objective = format!("{} Also 42 things.", other.objective);
        let other = Arc::new(other);
        let prepared = shared.objective(&other);
        assert!(!Arc::ptr_eq(&prepared, &shared.objective(&first)));
        // The first text read again after another: not the other's objective.
        let third = Arc::new(cafe());
        assert!(!Arc::ptr_eq(&shared.objective(&third), &prepared));
    }
}

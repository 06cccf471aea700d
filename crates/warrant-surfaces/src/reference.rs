//! The reference surface: in-process providers behind the Surface port.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use warrant_core::event::{ActionRecord, Effect};
use warrant_core::ports::{
    BoxFuture, CallOutput, Invocation, Observation, Recovery, Surface, SurfaceError,
};
use warrant_core::spec::ProviderSpec;
use warrant_core::validate::ProviderCatalog;
use warrant_core::{canon, num};

/// One action a provider offers.
#[derive(Clone, Debug)]
pub struct ActionSpec {
    /// The tool name.
    pub name: String,
    /// Read or commit.
    pub effect: Effect,
    /// For the decider.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
}

/// A provider's failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderError {
    /// The operation ran and failed (out of stock, not found...): reported as an error result.
    Failed(String),
    /// The provider could not be reached or is broken.
    Unavailable(String),
}

/// An in-process provider. Implement this to add your own provider in Rust; register it with
/// [`ReferenceCatalog::register`] and name it in a spec as `reference: <name>`.
///
/// Calls arrive only through Warrant's Bridge, already validated against `input_schema`.
pub trait Provider: Send + Sync {
    /// The actions offered.
    fn actions(&self) -> Vec<ActionSpec>;
    /// Changes whenever any action's name, effect or schema changes.
    fn schema_version(&self) -> u64 {
        0
    }
    /// Changes whenever the provider's state changes; older handles become stale.
    fn state_version(&self) -> u64;
    /// Runs one action. `idempotency_key` is stable for one intent: a provider that accepts
    /// keys returns the first result again for a repeated key instead of repeating the effect.
    fn call(
        &self,
        action: &str,
        args: &Value,
        idempotency_key: &str,
    ) -> Result<Value, ProviderError>;
    /// Whether a repeated idempotency key returns the first result instead of repeating the
    /// effect. When true, Warrant re-invokes a commit whose outcome was lost in a crash.
    fn accepts_idempotency_keys(&self) -> bool {
        false
    }
    /// Whether repeating `action` with the same arguments is harmless. In-process providers are
    /// trusted to say so.
    fn idempotent(&self, _action: &str) -> bool {
        false
    }
}

/// The actions of one schema version, with the short digest that names it.
type ActionCache = Option<(u64, Arc<[ActionRecord]>, String)>;

/// A [`Provider`] behind the Surface port.
pub struct ReferenceSurface {
    provider: Arc<dyn Provider>,
    cache: Mutex<ActionCache>,
}

impl ReferenceSurface {
    /// Wraps a provider.
    pub fn new(provider: Arc<dyn Provider>) -> ReferenceSurface {
        ReferenceSurface {
            provider,
            cache: Mutex::new(None),
        }
    }

    /// `f` of the actions of the provider's current schema and the short digest that names
    /// them (computed once per schema version).
    fn with_actions<R>(&self, f: impl FnOnce(&Arc<[ActionRecord]>, &str) -> R) -> R {
        let schema_version = self.provider.schema_version();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, actions, digest)) = cache.as_ref()
            && *v == schema_version
        {
            return f(actions, digest);
        }
        let actions: Arc<[ActionRecord]> = self
            .provider
            .actions()
            .into_iter()
            .map(|a| ActionRecord {
                name: a.name,
                effect: a.effect,
                description: a.description,
                input_schema: Arc::new(a.input_schema),
                hints: None,
                origin: None,
            })
            .collect();
        let listing: Vec<Value> = actions
            .iter()
            .map(|a| serde_json::json!([a.name, a.effect.to_string(), &*a.input_schema]))
            .collect();
        let digest = canon::digest(&Value::Array(listing));
        let short = digest.trim_start_matches("sha256:")[..12].to_owned();
        let answer = f(&actions, &short);
        *cache = Some((schema_version, actions, short));
        answer
    }
}

/// Whether `version` is `<schema>.<state>`, exactly as `observe` writes it.
fn names_version(version: &str, schema: &str, state: u64) -> bool {
    version
        .strip_prefix(schema)
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|n| n == num::decimal(state, &mut [0; 20]))
}

impl Surface for ReferenceSurface {
    fn observe(&self) -> BoxFuture<'_, Result<Observation, SurfaceError>> {
        let state = self.provider.state_version();
        let observation = self.with_actions(|actions, schema| {
            let mut buf = [0; 20];
            let digits = num::decimal(state, &mut buf);
            let mut version = String::with_capacity(schema.len() + 1 + digits.len());
            version.push_str(schema);
            version.push('.');
            version.push_str(digits);
            Observation {
                version,
                actions: actions.clone(),
                page: None,
            }
        });
        Box::pin(std::future::ready(Ok(observation)))
    }

    fn invoke(&self, call: Invocation) -> BoxFuture<'_, Result<CallOutput, SurfaceError>> {
        let result = match self
            .provider
            .call(call.tool(), call.args(), call.idempotency_key())
        {
            Ok(output) => Ok(CallOutput {
                output,
                is_error: false,
            }),
            Err(ProviderError::Failed(message)) => Ok(CallOutput {
                output: serde_json::json!({ "error": message }),
                is_error: true,
            }),
            Err(ProviderError::Unavailable(message)) => Err(SurfaceError::not_sent(message)),
        };
        Box::pin(std::future::ready(result))
    }

    fn is_current<'a>(&'a self, version: &'a str) -> BoxFuture<'a, bool> {
        let state = self.provider.state_version();
        let current = self.with_actions(|_, schema| names_version(version, schema, state));
        Box::pin(std::future::ready(current))
    }

    fn recovery(&self, tool: &str) -> Recovery {
        if self.provider.accepts_idempotency_keys() || self.provider.idempotent(tool) {
            Recovery::Reinvoke
        } else {
            Recovery::InDoubt
        }
    }
}

type Factory = Arc<dyn Fn(Option<&Value>) -> Result<Arc<dyn Provider>, String> + Send + Sync>;

/// The reference providers a process knows by name: the demo providers plus any an embedder
/// registers. Each run gets fresh provider instances.
#[derive(Clone)]
pub struct ReferenceCatalog {
    factories: BTreeMap<String, Factory>,
    /// Per provider, the keys of its `config` that hold file paths.
    paths: BTreeMap<String, Vec<String>>,
}

impl Default for ReferenceCatalog {
    fn default() -> Self {
        Self::with_demo_providers()
    }
}

impl ReferenceCatalog {
    /// A catalog with no providers.
    pub fn empty() -> ReferenceCatalog {
        ReferenceCatalog {
            factories: BTreeMap::new(),
            paths: BTreeMap::new(),
        }
    }

    /// A catalog with `cafe`, `gallery`, `bakery`, `bank`, the benchmark's `bench`, and `ledger` (a
    /// provider whose effects are lines in a file, for crash tests).
    pub fn with_demo_providers() -> ReferenceCatalog {
        let mut c = ReferenceCatalog::empty();
        c.register("cafe", || Arc::new(crate::demo::Cafe::default()));
        c.register("gallery", || Arc::new(crate::demo::Gallery));
        c.register("bakery", || Arc::new(crate::demo::Bakery::default()));
        c.register("bench", || Arc::new(crate::demo::StepTool::default()));
        c.register("bank", || Arc::new(crate::demo::Bank::default()));
        c.register("mail", || Arc::new(crate::demo::Mailbox::default()));
        c.register_configured("ledger", |config| {
            crate::ledger::Ledger::from_config(config).map(|l| Arc::new(l) as Arc<dyn Provider>)
        });
        c.declare_paths("ledger", &["file"]);
        c
    }

    /// Registers a provider under `name`; `make` is called once per run.
    pub fn register(
        &mut self,
        name: &str,
        make: impl Fn() -> Arc<dyn Provider> + Send + Sync + 'static,
    ) {
        self.factories
            .insert(name.to_owned(), Arc::new(move |_| Ok(make())));
    }

    /// Registers a provider that reads the spec's `config` for it; `make` says what is wrong
    /// with a config it cannot use.
    pub fn register_configured(
        &mut self,
        name: &str,
        make: impl Fn(Option<&Value>) -> Result<Arc<dyn Provider>, String> + Send + Sync + 'static,
    ) {
        self.factories.insert(name.to_owned(), Arc::new(make));
    }

    /// Says which keys of the `config` of the provider registered as `name` hold file paths:
    /// a relative one is resolved against the spec's folder when the spec is read.
    pub fn declare_paths(&mut self, name: &str, keys: &[&str]) {
        self.paths.insert(
            name.to_owned(),
            keys.iter().map(|k| (*k).to_owned()).collect(),
        );
    }

    /// A fresh instance of the provider registered as `name`, configured with `config`.
    /// `Ok(None)` when no provider has that name.
    pub fn make(
        &self,
        name: &str,
        config: Option<&Value>,
    ) -> Result<Option<Arc<dyn Provider>>, String> {
        self.factories.get(name).map(|f| f(config)).transpose()
    }

    /// Fresh surfaces for every provider of `spec`, by the names the spec uses.
    pub fn surfaces(
        &self,
        spec: &warrant_core::Spec,
    ) -> Result<std::collections::HashMap<String, Arc<dyn Surface>>, String> {
        let mut out: std::collections::HashMap<String, Arc<dyn Surface>> =
            std::collections::HashMap::new();
        for (name, provider) in &spec.providers {
            let reference = provider
                .reference
                .as_deref()
                .ok_or_else(|| format!("provider `{name}` is not a reference provider"))?;
            let p = self
                .make(reference, provider.config.as_ref())
                .map_err(|e| format!("provider `{name}`: {e}"))?
                .ok_or_else(|| format!("unknown reference provider `{reference}`"))?;
            out.insert(name.clone(), Arc::new(ReferenceSurface::new(p)));
        }
        Ok(out)
    }

    /// The names registered.
    pub fn names(&self) -> Vec<&str> {
        self.factories.keys().map(String::as_str).collect()
    }
}

impl ProviderCatalog for ReferenceCatalog {
    fn path_settings(&self, provider: &ProviderSpec) -> Vec<String> {
        provider
            .reference
            .as_ref()
            .and_then(|r| self.paths.get(r))
            .cloned()
            .unwrap_or_default()
    }

    fn tools(&self, _name: &str, provider: &ProviderSpec) -> Result<Option<Vec<String>>, String> {
        let ways = [
            provider.reference.is_some(),
            provider.mcp.is_some(),
            provider.openapi.is_some(),
            provider.webmcp.is_some(),
            !provider.join.is_empty(),
            provider.registered.is_some(),
        ];
        if ways.iter().filter(|w| **w).count() > 1 {
            return Err(
                "give one of `reference`, `mcp`, `openapi`, `webmcp`, `join` or `registered`, \
                 not several"
                    .to_owned(),
            );
        }
        if provider.registered.is_some() {
            if provider.config.is_some() {
                return Err(
                    "a registered provider's settings are the operator's: drop `config`".to_owned(),
                );
            }
            // The operator's definition is looked up, and its tools observed, when it runs.
            return Ok(None);
        }
        if provider.pin.is_some() {
            return Err("`pin` goes with `registered` only (Warrant writes it)".to_owned());
        }
        if !provider.join.is_empty() {
            if provider.trust.is_some() {
                return Err("a join's trust comes from its members: drop `trust`".to_owned());
            }
            // Its tools are its members', known when they are.
            return Ok(None);
        }
        if let Some(mcp) = &provider.mcp {
            match (mcp.command.is_empty(), &mcp.url) {
                (true, None) => {
                    return Err(
                        "`mcp` needs `command` (a program to start) or `url` (an endpoint)"
                            .to_owned(),
                    );
                }
                (false, Some(_)) => {
                    return Err("give one of `mcp.command` or `mcp.url`, not both".to_owned());
                }
                (true, Some(url))
                    if !url.starts_with("http://") && !url.starts_with("https://") =>
                {
                    return Err(format!("`mcp.url` `{url}` is not an http(s) URL"));
                }
                _ => {}
            }
            if !mcp.headers.is_empty() && mcp.url.is_none() {
                return Err("`mcp.headers` apply to `url` only".to_owned());
            }
            // An MCP server's tools are known only once it runs.
            return Ok(None);
        }
        if let Some(api) = &provider.openapi {
            if api.document.is_empty() {
                return Err("`openapi.document` needs a file or a URL".to_owned());
            }
            if api.operations_max == Some(0) {
                return Err("`openapi.operations_max` must be at least 1".to_owned());
            }
            // The operations are known once the document is read.
            return Ok(None);
        }
        if let Some(page) = &provider.webmcp {
            if !page.url.starts_with("http://") && !page.url.starts_with("https://") {
                return Err(format!("`webmcp.url` `{}` is not an http(s) URL", page.url));
            }
            if let Some(browser) = &page.browser
                && !browser.starts_with("ws://")
            {
                return Err(format!(
                    "`webmcp.browser` `{browser}` is not a DevTools endpoint (`ws://...`)"
                ));
            }
            // A page's tools are known once it is open.
            return Ok(None);
        }
        let Some(reference) = &provider.reference else {
            return Err("say how the provider is reached: `reference: <name>`, \
                 `mcp: {command: [...]}`, `mcp: {url: ...}`, `openapi: {document: ...}`, \
                 `webmcp: {url: ...}`, `join: [...]` or `registered: <name>`"
                .to_owned());
        };
        match self.make(reference, provider.config.as_ref())? {
            Some(p) => Ok(Some(p.actions().into_iter().map(|a| a.name).collect())),
            None => Err(format!(
                "unknown reference provider `{reference}` (this build knows: {})",
                self.names().join(", ")
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_version_observe_wrote_is_current() {
        let cafe = Arc::new(crate::demo::Cafe::default());
        let surface = ReferenceSurface::new(cafe.clone());
        let seen = surface.observe().await.unwrap().version;
        assert!(surface.is_current(&seen).await);
        let (schema, state) = seen.split_once('.').unwrap();
        for other in [
            format!("{schema}.0{state}"),
            format!("{schema}.+{state}"),
            format!("{schema}.{state}0"),
            format!("{schema}{state}"),
            format!("x{schema}.{state}"),
            schema.to_owned(),
            String::new(),
        ] {
            assert!(!surface.is_current(&other).await, "{other}");
        }
        cafe.call("order_latte", &serde_json::json!({"size": "small"}), "k")
            .unwrap();
        assert!(!surface.is_current(&seen).await);
        let now = surface.observe().await.unwrap().version;
        assert_ne!(now, seen);
        assert!(surface.is_current(&now).await);
    }
}

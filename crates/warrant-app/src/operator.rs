//! What the operator configured for the people who call a front door — the one rule every
//! front door obeys: a caller narrows what the operator configured, never widens it.
//!
//! - [`Catalog`]: the specs folder (`--specs`). A file named by a caller is a relative path
//!   that stays inside it after every symbolic link is followed.
//! - [`Registry`]: the providers file (`--providers`): MCP servers, OpenAPI services,
//!   in-process providers with settings, and model endpoints, each with the secrets the
//!   operator pairs with it. A spec names a registered provider as `registered: NAME` and a
//!   registered model as the decider `model:NAME`; it never sees their settings.
//! - [`confine`]: what an inline spec (one a caller wrote) may say. It names no program,
//!   working directory, file outside the catalog, URL, environment variable, header, model
//!   endpoint or key of its own; every refusal names the field and echoes no server path.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use warrant_core::spec::{ChildSpec, ProviderSpec, Trust};
use warrant_core::{DeciderKind, DeciderRef, Spec, canon, validate};
use warrant_surfaces::{ReferenceCatalog, Secrets};

use crate::{AppError, DOCUMENT_BYTES_MAX, Result};

/// The only providers file version this build reads.
pub const PROVIDERS_VERSION: &str = "warrant/providers/v1";

/// Largest secret file read.
const SECRET_BYTES_MAX: u64 = 64 << 10;

/// The operator's specs folder.
#[derive(Clone, Debug)]
pub struct Catalog {
    root: PathBuf,
}

impl Catalog {
    /// The folder `dir`, which must exist (kept as its canonical path).
    pub fn open(dir: &Path) -> Result<Catalog> {
        let root = std::fs::canonicalize(dir)
            .map_err(|e| AppError::invalid(format!("--specs `{}`: {e}", dir.display())))?;
        if !root.is_dir() {
            return Err(AppError::invalid(format!(
                "--specs `{}` is not a folder",
                dir.display()
            )));
        }
        Ok(Catalog { root })
    }

    /// Its canonical path (the server's own: never shown to a caller).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file or folder `relative` names inside the catalog, as its canonical path. Refused
    /// (naming `what` and the path as given, never the server's) when it is empty, absolute,
    /// climbs with `..`, does not exist, or leads out of the catalog through a link.
    pub fn file(&self, relative: &str, what: &str) -> Result<PathBuf> {
        let p = Path::new(relative);
        if relative.is_empty()
            || relative.contains('\0')
            || p.components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(AppError::invalid(format!(
                "{what} `{relative}`: give a path inside the operator's specs folder, relative \
                 and without `..`"
            )));
        }
        let real = std::fs::canonicalize(self.root.join(p))
            .map_err(|_| AppError::invalid(format!("{what} `{relative}`: no such file")))?;
        if !real.starts_with(&self.root) {
            return Err(AppError::invalid(format!(
                "{what} `{relative}`: it leads out of the operator's specs folder"
            )));
        }
        Ok(real)
    }

    /// A spec in the catalog, read and validated; errors name it by its path in the catalog.
    pub fn load(&self, relative: &str) -> Result<(Spec, PathBuf)> {
        let path = self.file(relative, "spec")?;
        let spec = crate::load_spec(&path).map_err(|e| self.hide(e))?;
        Ok((spec, path))
    }

    /// `e` with the catalog's own path taken out of its words.
    pub fn hide(&self, e: AppError) -> AppError {
        let hidden = |t: String| {
            let root = format!("{}/", self.root.display());
            t.replace(&root, "")
                .replace(&*self.root.to_string_lossy(), ".")
        };
        e.map_message(hidden)
    }
}

/// Where a secret's value is read from.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretSource {
    /// An environment variable of the process that reads the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// A file (relative to the providers file), its text trimmed of the line end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A model endpoint the operator registered: a live decider with the key paired with it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The decider, as `warrant run --decider` takes it (`openai:gpt-4.1-mini`,
    /// `openai-compatible:llama@http://127.0.0.1:8080/v1?max_output_tokens=800`, or a script
    /// `scripted:PATH` relative to the providers file).
    pub decider: String,
    /// The secret holding its API key: sent only to this decider's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The providers file (`--providers FILE`).
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvidersFile {
    /// Always `warrant/providers/v1`.
    pub version: String,
    /// The secrets, by the name settings use (`${NAME}` in an MCP server's `env` or a
    /// header), each read from an environment variable or a file by the process that reads
    /// this file.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretSource>,
    /// The providers, by the name specs register them with (`registered: NAME`), written as
    /// a spec's providers are.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSpec>,
    /// The model endpoints, by the name specs use (`decider: model:NAME`).
    #[serde(default)]
    pub models: BTreeMap<String, ModelEntry>,
}

/// A provider or model the operator registered, with the digest of its definition.
#[derive(Clone, Debug)]
struct Entry<T> {
    definition: T,
    digest: String,
}

/// What the operator registered. Empty without a providers file: no spec may then name a
/// registered provider or model.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    providers: BTreeMap<String, Entry<ProviderSpec>>,
    models: BTreeMap<String, Entry<ModelEntry>>,
    secrets: Arc<Secrets>,
    /// The providers file's folder (the server's own path: never shown to a caller).
    folder: Option<PathBuf>,
}

impl Registry {
    /// The providers file `path`, checked now: every provider entry, every secret read (a
    /// missing one is an error naming it), every model's key a declared secret.
    pub fn load(path: &Path) -> Result<Registry> {
        let shown = path.display().to_string();
        let text = crate::read_text(path, DOCUMENT_BYTES_MAX, "providers file")?;
        let file: ProvidersFile = warrant_core::spec::parse_document(
            &text,
            warrant_core::spec::Format::of_path(&shown),
            &shown,
        )
        .map_err(AppError::invalid)?;
        let folder = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(f) => std::path::absolute(f),
            None => std::env::current_dir(),
        }
        .map_err(|e| AppError::invalid(format!("{shown}: cannot resolve its folder: {e}")))?;
        Registry::from_file(file, &folder, &shown)
    }

    fn from_file(file: ProvidersFile, folder: &Path, shown: &str) -> Result<Registry> {
        let bad =
            |field: String, why: String| AppError::invalid(format!("{shown}: {field}: {why}"));
        if file.version != PROVIDERS_VERSION {
            return Err(bad(
                "version".into(),
                format!(
                    "`{}` (this build reads `{PROVIDERS_VERSION}`)",
                    file.version
                ),
            ));
        }
        let mut secrets = BTreeMap::new();
        for (name, source) in &file.secrets {
            let field = format!("secrets.{name}");
            if name.is_empty()
                || name.starts_with(|c: char| c.is_ascii_digit())
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(bad(
                    field,
                    "a secret's name is letters, digits and `_`, not starting with a digit".into(),
                ));
            }
            let value = match (&source.env, &source.file) {
                (Some(var), None) => read_env(var).ok_or_else(|| {
                    bad(
                        field.clone(),
                        format!("environment variable `{var}` is not set"),
                    )
                })?,
                (None, Some(f)) => {
                    let p = folder.join(f);
                    crate::read_text(&p, SECRET_BYTES_MAX, "secret file")
                        .map_err(|e| bad(field.clone(), e.to_string()))?
                        .trim_end_matches(['\r', '\n'])
                        .to_owned()
                }
                _ => return Err(bad(field, "give one of `env` or `file`".into())),
            };
            if value.is_empty() {
                return Err(bad(field, "is empty".into()));
            }
            secrets.insert(name.clone(), value);
        }
        let secrets = Arc::new(Secrets::new(secrets));
        let catalog = ReferenceCatalog::default();
        // Relative paths in the entries resolve against the file's folder, as a spec's do.
        let mut holder = Spec {
            version: warrant_core::spec::SPEC_VERSION.into(),
            id: "providers".into(),
            objective: String::new(),
            decider: None,
            providers: file.providers.clone(),
            policy: Vec::new(),
            execution_control: None,
            profile: None,
            plan_first: false,
            inputs: warrant_core::spec::Inputs::default(),
            steps: Vec::new(),
            limits: warrant_core::spec::Limits::default(),
        };
        validate::normalise_paths(&mut holder, folder, &catalog);
        let mut providers = BTreeMap::new();
        for (name, p) in holder.providers {
            let field = format!("providers.{name}");
            use warrant_core::validate::ProviderCatalog as _;
            if p.registered.is_some() || p.pin.is_some() || !p.join.is_empty() {
                return Err(bad(
                    field,
                    "an operator's provider is a program, an endpoint or an in-process provider \
                     (`mcp`, `openapi`, `reference`), not `registered`, `pin` or `join`"
                        .into(),
                ));
            }
            catalog
                .tools(&name, &p)
                .map_err(|e| bad(field.clone(), e))?;
            for (k, v) in p
                .mcp
                .iter()
                .flat_map(|m| m.env.iter().chain(&m.headers))
                .chain(p.openapi.iter().flat_map(|o| o.headers.iter()))
            {
                secrets
                    .expand(v)
                    .map_err(|e| bad(format!("{field} (`{k}`)"), e))?;
            }
            let digest = canon::digest(&serde_json::to_value(&p).unwrap_or_default());
            providers.insert(
                name,
                Entry {
                    definition: p,
                    digest,
                },
            );
        }
        let mut models = BTreeMap::new();
        for (name, m) in file.models {
            let field = format!("models.{name}");
            let mut m = m;
            let named = DeciderRef::parse(&m.decider);
            if named.kind == DeciderKind::Scripted {
                if Path::new(&named.arg).is_relative() {
                    m.decider = DeciderRef::scripted(folder.join(&named.arg).display()).to_string();
                }
            } else if !warrant_deciders::live::is_live(named.kind.name()) {
                return Err(bad(
                    format!("{field}.decider"),
                    format!("`{}` is not a decider this build knows", m.decider),
                ));
            }
            if let Some(key) = &m.key
                && secrets.get(key).is_none()
            {
                return Err(bad(
                    format!("{field}.key"),
                    format!("`{key}` is not one of the secrets this file declares"),
                ));
            }
            let digest = canon::digest(&serde_json::json!({"decider": m.decider, "key": m.key}));
            models.insert(
                name,
                Entry {
                    definition: m,
                    digest,
                },
            );
        }
        Ok(Registry {
            providers,
            models,
            secrets,
            folder: Some(folder.to_owned()),
        })
    }

    /// The operator's secrets.
    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// The names of the registered providers.
    pub fn provider_names(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// The names of the registered models.
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }

    /// The providers file's folder, if there is a file.
    pub fn folder(&self) -> Option<&Path> {
        self.folder.as_deref()
    }

    fn known(&self) -> String {
        list(self.provider_names())
    }

    /// Settles every registered provider of `spec` (and of the children it holds inline) for
    /// a new run: an unknown name is refused; its trust is the operator's unless the spec
    /// narrows it to `untrusted`; its definition's digest is pinned, so the run is re-entered
    /// only over the same definition.
    pub fn pin(&self, spec: &mut Spec) -> Result<()> {
        for (name, p) in &mut spec.providers {
            let Some(registered) = p.registered.clone() else {
                continue;
            };
            let entry = self.providers.get(&registered).ok_or_else(|| {
                AppError::invalid(format!(
                    "providers.{name}.registered: the operator registered no provider \
                     `{registered}` (registered: {})",
                    self.known()
                ))
            })?;
            if p.trust != Some(Trust::Untrusted) {
                p.trust = entry.definition.trust;
            }
            p.pin = Some(entry.digest.clone());
        }
        for child in children_mut(spec) {
            self.pin(child)?;
        }
        Ok(())
    }

    /// `spec` as it is connected: every registered provider replaced by the operator's
    /// definition (marked `registered`, so its settings read only the operator's secrets,
    /// with the spec's trust). Refused when a definition is gone or is not the one pinned.
    pub fn definitions(&self, spec: &Spec) -> Result<Spec> {
        let mut out = spec.clone();
        for (name, p) in &mut out.providers {
            let Some(registered) = p.registered.clone() else {
                continue;
            };
            let entry = self.providers.get(&registered).ok_or_else(|| {
                AppError::invalid(format!(
                    "provider `{name}` is the operator's `{registered}`, which this process's \
                     providers file does not register (`--providers FILE`; registered: {})",
                    self.known()
                ))
            })?;
            if let Some(pin) = &p.pin
                && *pin != entry.digest
            {
                return Err(AppError::invalid(format!(
                    "provider `{name}`: the operator's `{registered}` has changed since the run \
                     started ({pin} then, {} now): not acting over another definition",
                    entry.digest
                )));
            }
            let trust = p.trust;
            *p = ProviderSpec {
                registered: Some(registered),
                trust,
                ..entry.definition.clone()
            };
        }
        Ok(out)
    }

    /// The registered model `name` as a decider (its key, if any, sent only to its endpoint).
    pub fn model(
        &self,
        name: &str,
        deciders: &crate::Deciders,
        spec: &Spec,
    ) -> Result<Box<dyn warrant_core::ports::Decider>> {
        let entry = self.models.get(name).ok_or_else(|| {
            AppError::invalid(format!(
                "decider `model:{name}`: the operator registered no model `{name}` (registered: {})",
                list(self.model_names())
            ))
        })?;
        let m = &entry.definition;
        let named = DeciderRef::parse(&m.decider);
        let inner: Box<dyn warrant_core::ports::Decider> = if named.kind == DeciderKind::Scripted {
            deciders.load(&m.decider, None, spec)?
        } else {
            let key = m.key.as_deref().and_then(|k| self.secrets.get(k));
            Box::new(
                warrant_deciders::live::LiveDecider::parse_keyed(
                    &named,
                    &deciders.model_table()?,
                    key,
                )
                .map_err(|e| AppError::invalid(format!("decider `model:{name}`: {e}")))?,
            )
        };
        Ok(Box::new(RegisteredModel {
            identity: warrant_core::event::DeciderIdentity {
                kind: DeciderKind::Model.name().to_owned(),
                name: name.to_owned(),
                digest: Some(entry.digest.clone()),
            },
            inner,
        }))
    }
}

/// A model the operator registered, known to the run's log by the name it was registered
/// under and the digest of its definition, never by its endpoint or key.
struct RegisteredModel {
    identity: warrant_core::event::DeciderIdentity,
    inner: Box<dyn warrant_core::ports::Decider>,
}

impl warrant_core::ports::Decider for RegisteredModel {
    fn identity(&self) -> warrant_core::event::DeciderIdentity {
        self.identity.clone()
    }

    fn decide(
        &self,
        projection: warrant_core::projection::Projection,
    ) -> warrant_core::ports::BoxFuture<
        '_,
        std::result::Result<warrant_core::ports::Decided, warrant_core::ports::DecideError>,
    > {
        self.inner.decide(projection)
    }

    fn closed(&self) -> Option<warrant_core::ports::CancelRequest> {
        self.inner.closed()
    }

    fn tells_outside(&self) -> bool {
        self.inner.tells_outside()
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the providers file names the environment variables its secrets are read from"
)]
fn read_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The child specs `spec` holds inline.
fn children_mut(spec: &mut Spec) -> impl Iterator<Item = &mut Spec> {
    spec.steps
        .iter_mut()
        .filter_map(|s| s.delegate.as_mut())
        .flat_map(|d| d.children.iter_mut())
        .filter_map(|c| match &mut c.spec {
            ChildSpec::Inline(inline) => Some(&mut **inline),
            ChildSpec::Path(_) => None,
        })
}

/// An inline spec a caller wrote, read and validated (`spec` names it in errors), held to
/// what a caller may say ([`confine`]) and its registered providers pinned — all before
/// anything is started, read, fetched or written.
pub fn inline_spec(
    text: &str,
    format: warrant_core::spec::Format,
    catalog: Option<&Catalog>,
    registry: &Registry,
) -> Result<Spec> {
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > DOCUMENT_BYTES_MAX {
        return Err(AppError::invalid(format!(
            "the spec is over {} MiB: too large to be one",
            DOCUMENT_BYTES_MAX >> 20
        )));
    }
    let mut spec = validate::load(text, format, "spec", &ReferenceCatalog::default())
        .map_err(AppError::invalid)?;
    confine(&mut spec, catalog, registry)?;
    registry.pin(&mut spec)?;
    Ok(spec)
}

/// Holds an inline spec (one a caller wrote) to what a caller may say, before anything is
/// started, read, fetched or written: every refusal is listed, each naming its field. Files
/// it may name (a script, a policy) must be inside `catalog`; they are rewritten to their
/// canonical paths there.
pub fn confine(spec: &mut Spec, catalog: Option<&Catalog>, registry: &Registry) -> Result<()> {
    let mut refusals = Vec::new();
    confine_at(spec, "", catalog, registry, &mut refusals);
    if refusals.is_empty() {
        return Ok(());
    }
    Err(AppError::invalid(format!(
        "this spec asks for what only the operator may configure:\n  {}",
        refusals.join("\n  ")
    )))
}

fn confine_at(
    spec: &mut Spec,
    at: &str,
    catalog: Option<&Catalog>,
    registry: &Registry,
    refusals: &mut Vec<String>,
) {
    if let Some(d) = spec.decider.clone() {
        match confine_decider(&d, catalog, registry) {
            Ok(d) => spec.decider = Some(d),
            Err(e) => refusals.push(format!("{at}decider: {e}")),
        }
    }
    for (i, p) in spec.policy.iter_mut().enumerate() {
        match confine_file(p, catalog, "policy") {
            Ok(real) => *p = real,
            Err(e) => refusals.push(format!("{at}policy[{i}]: {e}")),
        }
    }
    if let Some(c) = &spec.execution_control
        && c.url.is_some()
    {
        refusals.push(format!(
            "{at}execution_control.url: a caller may not name an address for the server to \
             reach (an execution control with no `url` stops every commit)"
        ));
    }
    for (name, p) in &spec.providers {
        let field = format!("{at}providers.{name}");
        let mut say = |what: &str, why: &str| refusals.push(format!("{field}.{what}: {why}"));
        if p.mcp.is_some() {
            say(
                "mcp",
                "a caller may not name a program or an endpoint: use a provider the operator \
                 registered (`registered: NAME`)",
            );
        }
        if p.webmcp.is_some() {
            say(
                "webmcp",
                "a caller may not name a page or a browser for the server to open: use a \
                 provider the operator registered (`registered: NAME`)",
            );
        }
        if p.openapi.is_some() {
            say(
                "openapi",
                "a caller may not name a document or an endpoint: use a provider the operator \
                 registered (`registered: NAME`)",
            );
        }
        if p.config.is_some() {
            say(
                "config",
                "a caller may not give a provider settings (files, addresses): use a provider \
                 the operator registered (`registered: NAME`)",
            );
        }
        if p.pin.is_some() {
            say("pin", "Warrant writes it when the run starts");
        }
        if p.trust == Some(Trust::Trusted) {
            say(
                "trust",
                "only the operator may trust a provider's output; a spec may narrow it to \
                 `untrusted`",
            );
        }
        if let Some(r) = &p.registered
            && !registry.providers.contains_key(r)
        {
            say(
                "registered",
                &format!(
                    "the operator registered no provider `{r}` (registered: {})",
                    registry.known()
                ),
            );
        }
    }
    for step in &mut spec.steps {
        let sid = step.id.0.clone();
        for (k, child) in step
            .delegate
            .iter_mut()
            .flat_map(|d| d.children.iter_mut())
            .enumerate()
        {
            let field = format!("{at}steps.{sid}.delegate.children[{k}]");
            if let Some(d) = child.decider.clone() {
                match confine_decider(&d, catalog, registry) {
                    Ok(d) => child.decider = Some(d),
                    Err(e) => refusals.push(format!("{field}.decider: {e}")),
                }
            }
            for (i, p) in child.policy.iter_mut().enumerate() {
                match confine_file(p, catalog, "policy") {
                    Ok(real) => *p = real,
                    Err(e) => refusals.push(format!("{field}.policy[{i}]: {e}")),
                }
            }
            match &mut child.spec {
                ChildSpec::Path(_) => refusals.push(format!(
                    "{field}.spec: a caller may not name a spec file: write the child spec inline"
                )),
                ChildSpec::Inline(inline) => {
                    confine_at(
                        inline,
                        &format!("{field}.spec."),
                        catalog,
                        registry,
                        refusals,
                    );
                }
            }
        }
    }
}

/// A decider a caller named: a model the operator registered (`model:NAME`), or a script in
/// the catalog (`scripted:PATH`, rewritten to its canonical path). Nothing else: a live
/// decider named by a caller would send the operator's key wherever the caller says.
pub fn confine_decider(
    text: &str,
    catalog: Option<&Catalog>,
    registry: &Registry,
) -> Result<String> {
    let named = DeciderRef::parse(text);
    match (&named.kind, named.arg.as_str()) {
        (DeciderKind::Model, name) => {
            if registry.models.contains_key(name) {
                Ok(text.to_owned())
            } else {
                Err(AppError::invalid(format!(
                    "the operator registered no model `{name}` (registered: {})",
                    list(registry.model_names())
                )))
            }
        }
        (DeciderKind::Scripted, path) => {
            Ok(DeciderRef::scripted(confine_file(path, catalog, "script")?).to_string())
        }
        _ => Err(AppError::invalid(format!(
            "`{text}`: a caller names a model the operator registered (`model:NAME`; registered: \
             {}) or a script in the operator's specs folder (`scripted:PATH`), never a model \
             endpoint or key of its own",
            list(registry.model_names())
        ))),
    }
}

fn confine_file(relative: &str, catalog: Option<&Catalog>, what: &str) -> Result<String> {
    let catalog = catalog.ok_or_else(|| {
        AppError::invalid(format!(
            "{what} `{relative}`: this server has no specs folder to read it from"
        ))
    })?;
    Ok(catalog.file(relative, what)?.display().to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
mod tests {
    use super::*;

    fn inline(text: &str) -> Spec {
        validate::load(
            text,
            warrant_core::spec::Format::Yaml,
            "spec",
            &ReferenceCatalog::default(),
        )
        .unwrap()
    }

    #[test]
    fn an_inline_spec_may_name_no_program_file_address_or_key() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let registry = Registry::default();
        let mut spec = inline(
            "version: warrant/v1\nid: x\nobjective: o\n\
             decider: 'openai-compatible:m@http://169.254.169.254/v1?key_env=OPENAI_API_KEY'\n\
             policy: [/etc/passwd]\n\
             execution_control: {url: 'http://127.0.0.1:9/'}\n\
             providers:\n  \
               sh: {mcp: {command: [sh, -c, id]}}\n  \
               api: {openapi: {document: /etc/shadow}}\n  \
               book: {reference: ledger, config: {file: /tmp/x}}\n  \
               cafe: {reference: cafe, trust: trusted}\n\
             steps: [{id: a, provider: cafe, tools: [read_menu]}]\n",
        );
        let e = confine(&mut spec, Some(&catalog), &registry)
            .unwrap_err()
            .to_string();
        for field in [
            "decider:",
            "policy[0]:",
            "execution_control.url:",
            "providers.sh.mcp:",
            "providers.api.openapi:",
            "providers.book.config:",
            "providers.cafe.trust:",
        ] {
            assert!(e.contains(field), "{field} not refused in:\n{e}");
        }
        assert!(!e.contains(&*dir.path().to_string_lossy()), "{e}");
    }

    #[test]
    fn a_catalog_path_that_climbs_or_links_out_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("secret.cedar"),
            "permit(principal, action, resource);",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ok.cedar"),
            "permit(principal, action, resource);",
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        assert!(catalog.file("ok.cedar", "policy").is_ok());
        for bad in ["../x", "/etc/passwd", "out/secret.cedar", "", "a/../../b"] {
            let e = catalog.file(bad, "policy").unwrap_err().to_string();
            assert!(!e.contains(&*outside.path().to_string_lossy()), "{e}");
            assert!(!e.contains(&*dir.path().to_string_lossy()), "{e}");
        }
    }
}

//! Reading what a person gives: spec files, scripts, model tables; and building deciders.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warrant_core::event::DeciderIdentity;
use warrant_core::ports::Decider;
use warrant_core::spec::Format;
use warrant_core::{DeciderKind, DeciderRef, Spec, validate};
use warrant_deciders::live::models::Table;
use warrant_deciders::{Script, ScriptedDecider};
use warrant_surfaces::ReferenceCatalog;

use crate::operator::Registry;
use crate::{AppError, DOCUMENT_BYTES_MAX, Result, SCRIPT_BYTES_MAX};

/// The text of `path`, at most `max` bytes of UTF-8: a larger file (or an endless one, like
/// `/dev/zero`) is refused by name, never read whole.
pub fn read_text(path: &Path, max: u64, what: &str) -> Result<String> {
    use std::io::Read as _;
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| AppError::invalid(format!("cannot read {what} `{shown}`: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| AppError::invalid(format!("cannot read {what} `{shown}`: {e}")))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max {
        return Err(AppError::invalid(format!(
            "{what} `{shown}` is over {} MiB: too large to be one",
            max >> 20
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| AppError::invalid(format!("{what} `{shown}` is not UTF-8 text")))
}

/// Reads and validates a spec file. Errors name the file, field and line. Every relative path
/// in it is resolved against its folder and frozen as an absolute path, so the run means the
/// same thing from any working directory, and when it is resumed from another.
pub fn load_spec(path: &Path) -> Result<Spec> {
    load_at_depth(path, 0)
}

fn load_at_depth(path: &Path, depth: u32) -> Result<Spec> {
    let shown = path.display().to_string();
    let text = read_text(path, DOCUMENT_BYTES_MAX, "spec")?;
    let base = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(folder) => std::path::absolute(folder),
        None => std::env::current_dir(),
    }
    .map_err(|e| AppError::invalid(format!("{shown}: cannot resolve its folder: {e}")))?;
    parse_at_depth(&text, Format::of_path(&shown), &shown, &base, depth)
}

/// Validates a spec given as text (named `shown` in errors), resolving its relative paths
/// against `base` and freezing them, as [`load_spec`] does for a file in `base`.
pub fn parse_spec(text: &str, format: Format, shown: &str, base: &Path) -> Result<Spec> {
    parse_at_depth(text, format, shown, base, 0)
}

fn parse_at_depth(
    text: &str,
    format: Format,
    shown: &str,
    base: &Path,
    depth: u32,
) -> Result<Spec> {
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > DOCUMENT_BYTES_MAX {
        return Err(AppError::invalid(format!(
            "{shown} is over {} MiB: too large to be one",
            DOCUMENT_BYTES_MAX >> 20
        )));
    }
    let catalog = ReferenceCatalog::default();
    let mut spec = validate::load(text, format, shown, &catalog).map_err(AppError::invalid)?;
    validate::normalise_paths(&mut spec, base, &catalog);
    if freeze_children(&mut spec, shown, depth)? {
        // The children are inline now: check each against its delegation.
        validate::check(&spec, shown, &catalog).map_err(AppError::invalid)?;
    }
    Ok(spec)
}

/// Reads the spec file of every child a step delegates to and freezes it inline, so the
/// parent's spec (and its digest, and its log) holds its whole tree. Whether any was read.
fn freeze_children(spec: &mut Spec, shown: &str, depth: u32) -> Result<bool> {
    let mut read = false;
    for step in &mut spec.steps {
        let id = step.id.clone();
        for (k, child) in step
            .delegate
            .iter_mut()
            .flat_map(|d| d.children.iter_mut())
            .enumerate()
        {
            let warrant_core::spec::ChildSpec::Path(path) = &child.spec else {
                continue;
            };
            if depth + 1 > warrant_core::spec::DEPTH_MAX {
                return Err(AppError::invalid(format!(
                    "{shown}: steps.{id}.delegate.children[{k}]: delegations nest deeper than {} runs (a spec that delegates to itself?)",
                    warrant_core::spec::DEPTH_MAX
                )));
            }
            let inline = load_at_depth(Path::new(path), depth + 1).map_err(|e| {
                AppError::invalid(format!(
                    "{shown}: steps.{id}.delegate.children[{k}].spec: {e}"
                ))
            })?;
            child.spec = warrant_core::spec::ChildSpec::Inline(Box::new(inline));
            read = true;
        }
    }
    Ok(read)
}

/// Reads the script `arg` names (relative to `base`, else the working directory), checking
/// that every step it has decisions for is a step of `spec`: the file as shown, and the script.
fn script(arg: &str, base: Option<&Path>, spec: &Spec) -> Result<(String, Script)> {
    if arg.is_empty() {
        return Err(AppError::invalid(
            "`scripted` needs a path: `scripted:PATH`",
        ));
    }
    let path = match base {
        Some(dir) if Path::new(arg).is_relative() => dir.join(arg),
        _ => PathBuf::from(arg),
    };
    // Recorded as an absolute path: a resume works from any folder.
    let path = std::path::absolute(&path).unwrap_or(path);
    let shown = path.display().to_string();
    let text = read_text(&path, SCRIPT_BYTES_MAX, "script")?;
    let script =
        Script::parse(&text, Format::of_path(&shown), &shown).map_err(AppError::invalid)?;
    let unknown: Vec<String> = script
        .steps()
        .filter(|s| spec.steps.iter().all(|st| &*st.id.0 != *s))
        .map(|s| format!("`{s}`"))
        .collect();
    if !unknown.is_empty() {
        return Err(AppError::invalid(format!(
            "{shown}: steps: the spec has no step {}",
            unknown.join(", ")
        )));
    }
    Ok((shown, script))
}

/// Builds deciders: scripted ones from files, live ones with the model table (built in, with
/// the user's file applied).
#[derive(Clone, Debug, Default)]
pub struct Deciders {
    models: Option<PathBuf>,
    /// The models the operator registered (`model:NAME`).
    registry: Arc<Registry>,
}

impl Deciders {
    /// Live deciders read the model table with the overrides in `models`, if given.
    pub fn new(models: Option<PathBuf>) -> Deciders {
        Deciders {
            models,
            registry: Arc::default(),
        }
    }

    /// The same, with the operator's registered providers and models.
    pub fn with_registry(mut self, registry: Arc<Registry>) -> Deciders {
        self.registry = registry;
        self
    }

    /// The operator's registered providers and models (empty without a providers file).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The model capability table: built in, with the user's file applied.
    pub fn model_table(&self) -> Result<Table> {
        let table = Table::builtin()
            .map_err(|e| AppError::failed(format!("the built-in model table: {e}")))?;
        match &self.models {
            None => Ok(table),
            Some(path) => {
                let shown = path.display().to_string();
                let text = read_text(path, DOCUMENT_BYTES_MAX, "model table")?;
                table
                    .with_overrides(&text, &shown)
                    .map_err(AppError::invalid)
            }
        }
    }

    /// The script of `spec`'s default decider, when it is `scripted:PATH`: the file as shown
    /// and the script.
    pub fn default_script(
        &self,
        spec: &Spec,
        spec_path: &Path,
    ) -> Result<Option<(String, Script)>> {
        match spec.decider.as_deref().map(DeciderRef::parse) {
            Some(DeciderRef {
                kind: DeciderKind::Scripted,
                arg,
            }) => script(&arg, spec_path.parent(), spec).map(Some),
            _ => Ok(None),
        }
    }

    /// The model table file given, if any.
    pub fn models(&self) -> Option<&Path> {
        self.models.as_deref()
    }

    /// Builds a decider from `kind:argument`. A relative script path is resolved against
    /// `base` (a spec's folder for its default decider), else the working directory.
    pub fn load(&self, text: &str, base: Option<&Path>, spec: &Spec) -> Result<Box<dyn Decider>> {
        let named = DeciderRef::parse(text);
        match &named.kind {
            DeciderKind::Scripted => {
                let (shown, script) = script(&named.arg, base, spec)?;
                Ok(Box::new(ScriptedDecider::new(script, &shown)))
            }
            DeciderKind::Other(live) if warrant_deciders::live::is_live(live) => {
                let decider =
                    warrant_deciders::live::LiveDecider::parse(&named, &self.model_table()?)
                        .map_err(|e| AppError::invalid(format!("decider `{text}`: {e}")))?;
                Ok(Box::new(decider))
            }
            DeciderKind::Model => self.registry.model(&named.arg, self, spec),
            other => Err(AppError::invalid(format!(
                "unknown decider `{}` (this build knows: scripted:PATH, openai:MODEL, \
                 anthropic:MODEL, gemini:MODEL, openai-compatible:MODEL@BASE_URL, and \
                 model:NAME for a model the operator registered)",
                other.name()
            ))),
        }
    }

    /// The decider a spec names as its default, resolved against the spec's folder.
    pub fn default_for(&self, spec: &Spec, spec_path: &Path) -> Result<Box<dyn Decider>> {
        let Some(d) = spec.decider.as_deref() else {
            return Err(AppError::invalid(format!(
                "`{}` names no default decider: pass `--decider scripted:PATH`",
                spec_path.display()
            )));
        };
        self.load(d, spec_path.parent(), spec)
    }

    /// The decider recorded in a run's log, built again. It must be configured as it was (a
    /// script unchanged): its decisions would otherwise not be the ones recorded.
    pub fn recorded(&self, identity: &DeciderIdentity, spec: &Spec) -> Result<Box<dyn Decider>> {
        let named = DeciderRef::recorded(identity);
        let decider = match &named.kind {
            DeciderKind::Scripted => self.load(&named.to_string(), None, spec)?,
            DeciderKind::Other(live) if warrant_deciders::live::is_live(live) => {
                self.load(&named.to_string(), None, spec)?
            }
            DeciderKind::Model => self.registry.model(&named.arg, self, spec)?,
            // A gateway session's client is gone with the process that served it: re-entered,
            // the session ends (`closed`), its calls in doubt reported, none repeated.
            DeciderKind::Client => Box::new(crate::GoneClient::new(identity.clone())),
            DeciderKind::Other(_) => {
                return Err(AppError::invalid(format!(
                    "this build cannot resume a run decided by `{named}`"
                )));
            }
        };
        if decider.identity().digest != identity.digest {
            return Err(AppError::invalid(format!(
                "the decider `{named}` is not configured as when the run started: its decisions would not be the ones recorded"
            )));
        }
        Ok(decider)
    }
}

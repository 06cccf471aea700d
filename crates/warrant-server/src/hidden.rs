//! What a server never tells a caller: its own paths (the specs folder, the providers file's
//! folder, its working directory, its home) and the operator's secret values. Every problem
//! detail the API answers, and every log line, passes through [`hide`]; it is the last line of
//! defence behind errors written not to name such things in the first place.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, RwLock};

use warrant_app::Secrets;

/// Paths with what to show instead, longest first; and the secrets.
#[derive(Default)]
struct Hidden {
    paths: Vec<(String, &'static str)>,
    secrets: Vec<Arc<Secrets>>,
}

/// Process-wide: a problem is turned into a response where no server state is at hand. Only
/// ever added to (several servers in one process hide what each of them would).
static HIDDEN: RwLock<Option<Hidden>> = RwLock::new(None);

/// Hides `path` (shown as `shown` instead) and `secrets` from now on.
pub(crate) fn register(paths: &[(&Path, &'static str)], secrets: Option<&Arc<Secrets>>) {
    let Ok(mut guard) = HIDDEN.write() else {
        return;
    };
    let hidden = guard.get_or_insert_with(Hidden::default);
    for (path, shown) in paths {
        let text = path.display().to_string();
        // `/` alone would hide every slash.
        if text.len() > 1 && !hidden.paths.iter().any(|(p, _)| *p == text) {
            hidden.paths.push((text, shown));
        }
    }
    hidden
        .paths
        .sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    if let Some(s) = secrets
        && !s.is_empty()
    {
        hidden.secrets.push(s.clone());
    }
}

/// `text` with every registered server path and secret value replaced: what a caller is told.
pub(crate) fn hide(text: &str) -> Cow<'_, str> {
    hide_with(text, true)
}

/// `text` with every secret value replaced: what an operator's log shows (paths are its own).
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    hide_with(text, false)
}

fn hide_with(text: &str, paths: bool) -> Cow<'_, str> {
    let Ok(guard) = HIDDEN.read() else {
        return Cow::Borrowed(text);
    };
    let Some(hidden) = guard.as_ref() else {
        return Cow::Borrowed(text);
    };
    let mut out = Cow::Borrowed(text);
    for secrets in &hidden.secrets {
        if let Cow::Owned(o) = secrets.redact(&out) {
            out = Cow::Owned(o);
        }
    }
    if paths {
        for (path, shown) in &hidden.paths {
            if out.contains(path.as_str()) {
                out = Cow::Owned(out.replace(path.as_str(), shown));
            }
        }
    }
    out
}

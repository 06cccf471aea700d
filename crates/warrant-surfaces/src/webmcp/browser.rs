//! The browser the WebMCP surface drives: a headless Chromium Warrant starts (one per process,
//! shared by every page it opens, ended with the last of them), or one that runs already and
//! is attached to by its DevTools endpoint.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};

use super::cdp::Cdp;
use crate::group::ProcessGroup;

/// The flags Warrant starts Chromium with. `WebMCPTesting` gives pages
/// `document.modelContext.registerTool` and the DevTools protocol its `WebMCP` domain.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--enable-features=WebMCPTesting",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// The programs looked for on `PATH`, in order, when `WARRANT_CHROMIUM` names none.
const CHROMIUM_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
];

/// Longest line of Chromium's stderr read while looking for its DevTools endpoint.
const STDERR_LINE_MAX: u64 = 4096;

/// A browser and the DevTools connection to it.
pub(crate) struct Browser {
    pub(crate) cdp: Cdp,
    /// `Chrome/<version>`, as it says.
    pub(crate) product: String,
    /// The browser Warrant started: its process group and profile, both ended with it.
    started: Option<(ProcessGroup, PathBuf)>,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some((group, profile)) = self.started.take() {
            // Killed at once; its profile goes once nothing of it can write there (a moment:
            // this runs once, when the last page of the process closes).
            let pid = group.pid();
            drop(group);
            let gone = crate::group::ProcessGroup::of(pid);
            for _ in 0..100 {
                if !gone.alive() {
                    break;
                }
                std::thread::sleep(crate::group::EXIT_POLL);
            }
            std::mem::forget(gone);
            let _ = std::fs::remove_dir_all(profile);
        }
    }
}

/// The browsers this process uses, by DevTools endpoint (`None`: the one it started), while
/// any page uses them.
static BROWSERS: tokio::sync::Mutex<Option<HashMap<Option<String>, Weak<Browser>>>> =
    tokio::sync::Mutex::const_new(None);

impl Browser {
    /// The browser at `endpoint`, or the one this process starts, started or reached within
    /// `limit` if no page of this process uses it now.
    pub(crate) async fn shared(
        endpoint: Option<&str>,
        limit: Duration,
    ) -> Result<Arc<Browser>, String> {
        let mut browsers = BROWSERS.lock().await;
        let known = browsers.get_or_insert_with(HashMap::new);
        let key = endpoint.map(str::to_owned);
        // A browser whose connection ended (it crashed, or was closed) is not used again:
        // the next page gets a new one, the pages still holding the old one are gone.
        if let Some(b) = known
            .get(&key)
            .and_then(Weak::upgrade)
            .filter(|b| !b.cdp.is_closed())
        {
            return Ok(b);
        }
        // Started, and its connection read, on the browsers' own runtime: a browser outlives
        // the runtime of whichever caller started it (an embedder's, a test's).
        let endpoint_owned = endpoint.map(str::to_owned);
        let started = background()?.spawn(async move {
            match endpoint_owned {
                Some(url) => Browser::attach(&url).await,
                None => Browser::start().await,
            }
        });
        let browser = tokio::time::timeout(limit, started)
            .await
            .map_err(|_| format!("the browser did not start within {} ms", limit.as_millis()))?
            .map_err(|e| format!("starting the browser failed: {e}"))??;
        let browser = Arc::new(browser);
        known.retain(|_, w| w.strong_count() > 0);
        known.insert(key, Arc::downgrade(&browser));
        Ok(browser)
    }

    /// Attaches to the browser at DevTools endpoint `url`.
    async fn attach(url: &str) -> Result<Browser, String> {
        let cdp = Cdp::connect(url).await?;
        let product = checked_version(&cdp).await?;
        Ok(Browser {
            cdp,
            product,
            started: None,
        })
    }

    /// Starts a headless Chromium with a profile of its own, in its own process group.
    async fn start() -> Result<Browser, String> {
        let program = chromium()?;
        remove_orphaned_profiles(&std::env::temp_dir());
        let profile = std::env::temp_dir().join(format!(
            "{PROFILE_PREFIX}{}-{}",
            std::process::id(),
            PROFILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        // Its own temporary files go in the profile too, and go with it.
        let tmp = profile.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| {
            format!(
                "cannot make a browser profile at {}: {e}",
                profile.display()
            )
        })?;
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push("about:blank".to_owned());
        // Under the guard where a front door set one: the browser then ends with Warrant,
        // also when Warrant is killed outright.
        let (started, args) = crate::guard::guarded(&program.to_string_lossy(), &args);
        let mut command = tokio::process::Command::new(started);
        command
            .args(args)
            .env("TMPDIR", &tmp)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let group = child.id().map(ProcessGroup::of);
        let Some(stderr) = child.stderr.take() else {
            return Err("the browser's stderr was not captured".to_owned());
        };
        let mut lines = tokio::io::BufReader::new(stderr);
        let mut line = String::new();
        let endpoint = loop {
            line.clear();
            let n = (&mut lines)
                .take(STDERR_LINE_MAX)
                .read_line(&mut line)
                .await
                .map_err(|e| format!("cannot read the browser's output: {e}"))?;
            if n == 0 {
                return Err(format!(
                    "{} exited before it opened its DevTools endpoint (is it Chromium, with \
                     `--remote-debugging-port`?)",
                    program.display()
                ));
            }
            if let Some(at) = line.find("ws://") {
                break line.get(at..).unwrap_or_default().trim().to_owned();
            }
        };
        // Whatever else it says is drained, so it never blocks on a full pipe; it ends with it.
        #[expect(
            clippy::disallowed_methods,
            reason = "the browser's owner drains what it writes on stderr"
        )]
        tokio::spawn(async move {
            let mut sink = tokio::io::sink();
            let _ = tokio::io::copy(&mut lines, &mut sink).await;
            let _ = child.wait().await;
        });
        let cdp = Cdp::connect(&endpoint).await?;
        let product = checked_version(&cdp).await?;
        Ok(Browser {
            cdp,
            product,
            started: group.map(|g| (g, profile)),
        })
    }
}

/// The runtime the browsers' connections and processes live on: one thread of its own, for
/// the life of the process.
fn background() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("warrant-browser")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the browsers' thread: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// What every profile's directory is named after: `warrant-chromium-<pid>-<n>`.
const PROFILE_PREFIX: &str = "warrant-chromium-";

/// Removes the profiles in `dir` of Warrant processes that are gone (killed outright: their
/// guard ended the browser, nobody removed its profile). A profile of a process id that runs
/// now is left alone, whoever runs it.
fn remove_orphaned_profiles(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROFILE_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Profiles made by this process so far.
static PROFILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The Chromium to start: `WARRANT_CHROMIUM`, else the first of [`CHROMIUM_NAMES`] on `PATH`.
#[expect(
    clippy::disallowed_methods,
    reason = "the WebMCP surface reads which browser to start from Warrant's environment"
)]
fn chromium() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var("WARRANT_CHROMIUM") {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in CHROMIUM_NAMES {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "no Chromium found (looked for {} on PATH): install it (Debian: `apt-get install \
         chromium`) or name it in WARRANT_CHROMIUM",
        CHROMIUM_NAMES.join(", ")
    ))
}

/// The browser's product (`Chrome/156...`), read to know it answers the protocol.
async fn checked_version(cdp: &Cdp) -> Result<String, String> {
    let version = cdp.call("Browser.getVersion", json!({}), None).await?;
    Ok(version
        .get("product")
        .and_then(Value::as_str)
        .unwrap_or("an unknown browser")
        .to_owned())
}

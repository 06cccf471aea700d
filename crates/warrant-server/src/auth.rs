//! Who is asking: bearer tokens (kept as SHA-256 digests, never in clear) mapped to principals
//! — a tenant, a user and roles — read from the `--principals` file, which is read again when
//! it changes, so a removed principal's token stops working without a restart.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Deserialize;

use crate::problem::Problem;

/// Largest principals file read.
const PRINCIPALS_BYTES_MAX: u64 = 4 << 20;

/// What a principal may do. Every role may read its tenant's runs and approvals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads runs, events, reports and approvals.
    Viewer,
    /// Starts runs of the operator's catalog (`spec_path`).
    Runner,
    /// Starts runs of specs it writes itself (inline), over the providers and models the
    /// operator registered, and nothing else.
    Author,
    /// Answers approval requests.
    Approver,
    /// Cancels, resumes and reconciles runs; may do everything the others may.
    Operator,
}

impl Role {
    /// The role's name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Runner => "runner",
            Role::Author => "author",
            Role::Approver => "approver",
            Role::Operator => "operator",
        }
    }
}

/// Who is asking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Whose runs it sees: only its tenant's.
    pub tenant: String,
    /// Who it is; control actions are recorded under this name.
    pub user: String,
    /// What it may do.
    pub roles: BTreeSet<Role>,
}

impl Principal {
    /// The single local principal of a server started without a principals file: every role,
    /// tenant `local` (the CLI's default tenant, so both see the same runs).
    pub fn local() -> Principal {
        Principal {
            tenant: "local".to_owned(),
            user: "local".to_owned(),
            roles: [
                Role::Viewer,
                Role::Runner,
                Role::Author,
                Role::Approver,
                Role::Operator,
            ]
            .into_iter()
            .collect(),
        }
    }

    /// Whether it may act as `role` (an operator may do everything).
    pub fn may(&self, role: Role) -> bool {
        role == Role::Viewer || self.roles.contains(&role) || self.roles.contains(&Role::Operator)
    }

    /// `Ok` when it may act as `role`, else a 403 that names the role.
    pub fn require(&self, role: Role) -> Result<(), Problem> {
        if self.may(role) {
            Ok(())
        } else {
            Err(Problem::forbidden(format!(
                "`{}` may not do this: it needs the `{}` role",
                self.user,
                role.name()
            )))
        }
    }

    /// The name the run's log records for its control actions: `tenant/user`.
    pub fn by(&self) -> String {
        format!("{}/{}", self.tenant, self.user)
    }
}

/// The SHA-256 digest of a token, in hex: what a principals file holds (after `sha256:`).
pub fn token_digest(token: &str) -> String {
    let digest = warrant_core::canon::digest_bytes(token.as_bytes());
    digest.trim_start_matches("sha256:").to_owned()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    principals: Vec<Entry>,
    /// What the operator sets per tenant.
    #[serde(default)]
    tenants: BTreeMap<String, TenantEntry>,
}

/// What the operator sets for one tenant.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantEntry {
    /// Cedar policy files or folders (relative to the principals file) every run of the
    /// tenant obeys, besides the server's floor and its own rules.
    #[serde(default)]
    policy: Vec<String>,
    /// What the tenant may use: runs started, calls and tokens per window, runs held.
    #[serde(default)]
    quotas: Option<warrant_app::Quota>,
}

/// What the operator set for one tenant, read with the principals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tenant {
    /// Its part of the policy floor.
    pub floor: Vec<PathBuf>,
    /// Its quotas.
    pub quota: Option<warrant_app::Quota>,
}

/// The tenants entry that holds for every tenant the file does not name.
pub const EVERY_TENANT: &str = "*";

/// A principals file as read: principals by token digest, and tenants by name.
#[derive(Default)]
pub struct Table {
    principals: HashMap<String, Principal>,
    tenants: BTreeMap<String, Tenant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// `sha256:<hex>` of the bearer token.
    token: String,
    tenant: String,
    user: String,
    roles: BTreeSet<Role>,
}

/// The principals a server knows.
pub enum Principals {
    /// No file: one local principal, loopback only, no token asked.
    Local,
    /// From a file, by token digest; read again when the file changes.
    File {
        /// The file.
        path: PathBuf,
        /// What it held when last read, and when it was modified then.
        cache: Mutex<(Option<SystemTime>, Table)>,
    },
}

impl Principals {
    /// The principals of `path`, checked now: a file that does not parse is refused at start.
    pub fn from_file(path: &Path) -> Result<Principals, String> {
        let (modified, table) = read(path)?;
        Ok(Principals::File {
            path: path.to_owned(),
            cache: Mutex::new((modified, table)),
        })
    }

    /// Whether tokens are asked for.
    pub fn required(&self) -> bool {
        matches!(self, Principals::File { .. })
    }

    /// The principal `token` stands for. Without a file, everyone is the local principal.
    pub fn authenticate(&self, token: Option<&str>) -> Result<Principal, Problem> {
        let Principals::File { path, cache } = self else {
            return Ok(Principal::local());
        };
        let Some(token) = token else {
            return Err(Problem::unauthorized("a bearer token is needed"));
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let mut cache = cache
            .lock()
            .map_err(|_| Problem::internal("the principals table is unavailable"))?;
        if modified != cache.0 {
            // Changed (or gone): read again. A file that no longer parses admits nobody.
            *cache = read(path).unwrap_or((modified, Table::default()));
        }
        cache
            .1
            .principals
            .get(&token_digest(token))
            .cloned()
            .ok_or_else(|| Problem::unauthorized("this token is not known"))
    }
}

impl Principals {
    /// What the operator set for `tenant` (nothing without a file, or for a tenant it does
    /// not name).
    pub fn tenant(&self, tenant: &str) -> Tenant {
        let Principals::File { cache, .. } = self else {
            return Tenant::default();
        };
        cache
            .lock()
            .ok()
            .and_then(|c| {
                c.1.tenants
                    .get(tenant)
                    .or_else(|| c.1.tenants.get(EVERY_TENANT))
                    .cloned()
            })
            .unwrap_or_default()
    }
}

fn read(path: &Path) -> Result<(Option<SystemTime>, Table), String> {
    let shown = path.display();
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let text = warrant_app::read_text(path, PRINCIPALS_BYTES_MAX, "principals file")
        .map_err(|e| e.to_string())?;
    let file: File = serde_saphyr::from_str(&text).map_err(|e| format!("{shown}: {e}"))?;
    let mut table = HashMap::new();
    for (i, e) in file.principals.into_iter().enumerate() {
        let Some(digest) = e.token.strip_prefix("sha256:") else {
            return Err(format!(
                "{shown}: principals[{i}].token: write the token's digest, `sha256:<hex>` \
                 (`warrant serve --hash-token TOKEN` prints it), never the token itself"
            ));
        };
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "{shown}: principals[{i}].token: `sha256:` takes 64 hex digits"
            ));
        }
        if e.tenant.is_empty() || e.user.is_empty() {
            return Err(format!(
                "{shown}: principals[{i}]: `tenant` and `user` must not be empty"
            ));
        }
        let principal = Principal {
            tenant: e.tenant,
            user: e.user,
            roles: e.roles,
        };
        if table
            .insert(digest.to_ascii_lowercase(), principal)
            .is_some()
        {
            return Err(format!(
                "{shown}: principals[{i}]: the same token is given twice"
            ));
        }
    }
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tenants = BTreeMap::new();
    for (name, t) in file.tenants {
        let floor: Vec<PathBuf> = t.policy.iter().map(|p| folder.join(p)).collect();
        warrant_app::check_policy_files(&floor, &format!("{shown}: tenants.{name}.policy"))
            .map_err(|e| e.to_string())?;
        if let Some(q) = &t.quotas {
            q.check()
                .map_err(|e| format!("{shown}: tenants.{name}.quotas: {e}"))?;
        }
        tenants.insert(
            name,
            Tenant {
                floor,
                quota: t.quotas,
            },
        );
    }
    Ok((
        modified,
        Table {
            principals: table,
            tenants,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_known_by_its_digest_and_forgotten_when_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("principals.yaml");
        let write = |body: &str| std::fs::write(&path, body).unwrap();
        write(&format!(
            "principals:\n  - {{token: 'sha256:{}', tenant: acme, user: ann, roles: [approver]}}\n",
            token_digest("secret-ann")
        ));
        let p = Principals::from_file(&path).unwrap();
        let ann = p.authenticate(Some("secret-ann")).unwrap();
        assert_eq!((ann.tenant.as_str(), ann.user.as_str()), ("acme", "ann"));
        assert!(ann.may(Role::Approver) && !ann.may(Role::Operator) && ann.may(Role::Viewer));
        assert_eq!(p.authenticate(Some("guess")).unwrap_err().status, 401);
        assert_eq!(p.authenticate(None).unwrap_err().status, 401);
        // Removed: the file is read again, and the token no longer works.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write("principals: []\n");
        let f = std::fs::File::options().append(true).open(&path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(p.authenticate(Some("secret-ann")).unwrap_err().status, 401);
    }

    #[test]
    fn a_token_written_in_clear_is_refused_with_the_way_to_write_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yaml");
        std::fs::write(
            &path,
            "principals:\n  - {token: hunter2, tenant: a, user: b, roles: [viewer]}\n",
        )
        .unwrap();
        let Err(e) = Principals::from_file(&path) else {
            panic!("accepted a token in clear");
        };
        assert!(
            e.contains("principals[0].token") && e.contains("sha256:"),
            "{e}"
        );
    }
}

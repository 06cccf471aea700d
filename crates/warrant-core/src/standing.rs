//! Standing grants: a person's "always allow this" — a provider's tool, with constraints on
//! its arguments, for a principal (or a whole tenant), until it expires or is revoked. When the
//! authority asks about a call that a live grant covers (and the approve policies let the grant
//! answer), the engine answers the request with it at once (`approval_granted`, with the grant
//! as it was), and the call goes on; the run's log so says which grant let it through, and a
//! replay reproduces the decision from that record.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provenance::ArgLabel;
use crate::spec::ArgConstraint;

/// A standing grant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StandingGrant {
    /// Its id (`g-...`), unique in the store.
    pub id: String,
    /// The tenant whose runs it covers.
    pub tenant: String,
    /// The user whose runs it covers; absent: every user of the tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The provider.
    pub provider: String,
    /// The tool.
    pub tool: String,
    /// Argument (top-level name) to what its value must be: one of some values (`one_of`, a
    /// single value for "equal to"), a number within bounds (`min`, `max`), or from where it may
    /// come (`from`: `objective`, `input`, `carried`, `trusted_output`, `decider`). An argument
    /// it does not name may be anything.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, ArgConstraint>,
    /// Who gave it (`tenant/user`).
    pub by: String,
    /// When (ms since the epoch).
    pub created_at_ms: u64,
    /// From this time on it covers nothing (ms since the epoch); absent: until revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// Why it was given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Revoked: by whom and when; it covers nothing since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revoked>,
}

/// A grant's revocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Revoked {
    /// Who revoked it.
    pub by: String,
    /// When (ms since the epoch).
    pub at_ms: u64,
}

/// A call asked about, as a grant is matched against it.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// The run's principal's tenant.
    pub tenant: &'a str,
    /// The run's principal's user.
    pub user: &'a str,
    /// The provider.
    pub provider: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The arguments to execute.
    pub args: &'a Value,
    /// Where each of their leaves came from.
    pub labels: &'a [ArgLabel],
    /// The providers the run trusts.
    pub trusted: &'a BTreeSet<String>,
    /// The run's time now (ms since the epoch).
    pub at_ms: u64,
}

impl StandingGrant {
    /// Whether it covers anything at `at_ms`: not revoked, not expired.
    pub fn live(&self, at_ms: u64) -> bool {
        self.revoked.is_none() && self.expires_at_ms.is_none_or(|e| at_ms < e)
    }

    /// Whether it covers `asked`, or why not.
    pub fn covers(&self, asked: &Asked<'_>) -> Result<(), String> {
        if self.tenant != asked.tenant || self.user.as_deref().is_some_and(|u| u != asked.user) {
            return Err(format!("grant `{}` is another principal's", self.id));
        }
        if self.provider != asked.provider || self.tool != asked.tool {
            return Err(format!(
                "grant `{}` is for `{}` on {}",
                self.id, self.tool, self.provider
            ));
        }
        if let Some(r) = &self.revoked {
            return Err(format!("grant `{}` was revoked by {}", self.id, r.by));
        }
        if !self.live(asked.at_ms) {
            return Err(format!("grant `{}` has expired", self.id));
        }
        crate::scope::admits(&self.args, asked.args, asked.labels, asked.trusted)
            .map_err(|why| format!("grant `{}`: {why}", self.id))
    }

    /// What is wrong with it as given, if anything: each problem naming its field.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (field, value) in [
            ("tenant", &self.tenant),
            ("provider", &self.provider),
            ("tool", &self.tool),
        ] {
            if value.is_empty() {
                out.push(format!("`{field}` is empty"));
            }
        }
        for (arg, c) in &self.args {
            if c.from.is_empty() && c.one_of.is_empty() && c.min.is_none() && c.max.is_none() {
                out.push(format!("args.{arg}: constrains nothing"));
            }
            if let (Some(min), Some(max)) = (c.min, c.max)
                && min > max
            {
                out.push(format!("args.{arg}: `min` {min} is above `max` {max}"));
            }
        }
        if self.expires_at_ms.is_some_and(|e| e <= self.created_at_ms) {
            out.push("`expires_at_ms` is not after its creation".into());
        }
        out
    }

    /// A line a person reads: what it allows, for whom, until when.
    pub fn describe(&self) -> String {
        let mut constraints: Vec<String> = Vec::new();
        for (arg, c) in &self.args {
            if let [only] = c.one_of.as_slice() {
                constraints.push(format!("{arg} = {only}"));
            } else if !c.one_of.is_empty() {
                let values: Vec<String> = c.one_of.iter().map(ToString::to_string).collect();
                constraints.push(format!("{arg} in [{}]", values.join(", ")));
            }
            if let Some(m) = c.min {
                constraints.push(format!("{arg} >= {m}"));
            }
            if let Some(m) = c.max {
                constraints.push(format!("{arg} <= {m}"));
            }
            if !c.from.is_empty() {
                let from: Vec<String> = c.from.iter().map(ToString::to_string).collect();
                constraints.push(format!("{arg} from {}", from.join(" or ")));
            }
        }
        let whom = self.user.as_ref().map_or_else(
            || format!("anyone of {}", self.tenant),
            |u| format!("{}/{u}", self.tenant),
        );
        format!(
            "`{}` on {} for {whom}{}",
            self.tool,
            self.provider,
            if constraints.is_empty() {
                String::new()
            } else {
                format!(" where {}", constraints.join(", "))
            }
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn grant() -> StandingGrant {
        StandingGrant {
            id: "g-1".into(),
            tenant: "acme".into(),
            user: Some("ann".into()),
            provider: "bank".into(),
            tool: "transfer".into(),
            args: [
                (
                    "to".to_owned(),
                    ArgConstraint {
                        one_of: vec![json!("DE89370400440532013000")],
                        ..ArgConstraint::default()
                    },
                ),
                (
                    "amount".to_owned(),
                    ArgConstraint {
                        max: Some(100.0),
                        ..ArgConstraint::default()
                    },
                ),
            ]
            .into_iter()
            .collect(),
            by: "acme/bob".into(),
            created_at_ms: 10,
            expires_at_ms: Some(1_000),
            note: String::new(),
            revoked: None,
        }
    }

    #[test]
    fn a_grant_covers_its_principals_tool_within_its_constraints_while_live() {
        let trusted = BTreeSet::new();
        let args = json!({"to": "DE89370400440532013000", "amount": 50, "memo": "rent"});
        let asked = Asked {
            tenant: "acme",
            user: "ann",
            provider: "bank",
            tool: "transfer",
            args: &args,
            labels: &[],
            trusted: &trusted,
            at_ms: 500,
        };
        let g = grant();
        g.covers(&asked).unwrap();
        let too_much = json!({"to": "DE89370400440532013000", "amount": 500});
        let elsewhere = json!({"to": "FR76", "amount": 5});
        for (args, says) in [(&too_much, "amount"), (&elsewhere, "`to`")] {
            let err = g.covers(&Asked { args, ..asked }).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
        assert!(
            g.covers(&Asked {
                user: "eve",
                ..asked
            })
            .is_err()
        );
        assert!(
            g.covers(&Asked {
                tool: "close",
                ..asked
            })
            .is_err()
        );
        assert!(
            g.covers(&Asked {
                at_ms: 1_000,
                ..asked
            })
            .unwrap_err()
            .contains("expired")
        );
        let revoked = StandingGrant {
            revoked: Some(Revoked {
                by: "acme/bob".into(),
                at_ms: 20,
            }),
            ..grant()
        };
        assert!(revoked.covers(&asked).unwrap_err().contains("revoked"));
        // For a whole tenant: any of its users.
        let tenant_wide = StandingGrant {
            user: None,
            ..grant()
        };
        tenant_wide
            .covers(&Asked {
                user: "eve",
                ..asked
            })
            .unwrap();
        assert!(
            tenant_wide
                .covers(&Asked {
                    tenant: "other",
                    ..asked
                })
                .is_err()
        );
        assert_eq!(
            g.describe(),
            "`transfer` on bank for acme/ann where amount <= 100, to = \"DE89370400440532013000\""
        );
    }
}

//! Comparing runs of one frozen spec through several deciders, or on several lanes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::Layer;
use crate::report::RunReport;

/// One decider's route through the spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RouteSummary {
    /// The decider.
    pub decider: String,
    /// Where its in-process providers were reached (`reference`, `browser`), when the
    /// comparison is across lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// The run.
    pub run_id: String,
    /// The route key.
    pub route_key: String,
    /// The outcome's name.
    pub outcome: String,
    /// Whether the run conforms.
    pub conformant: bool,
    /// The layer blamed, when it did not attain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Layer>,
    /// The first failure's code, when it did not attain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution_code: Option<String>,
    /// Decisions taken.
    #[serde(default)]
    pub decisions: u32,
    /// Tokens and cost its decisions reported (its children's included in the totals).
    #[serde(default)]
    pub usage: crate::report::UsageReport,
}

/// The comparison of several routes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Comparison {
    /// `warrant.compare/1`.
    pub format: String,
    /// The spec.
    pub spec_id: String,
    /// Its digest: every route ran the same frozen spec.
    pub spec_hash: String,
    /// One per decider, in the order given.
    pub routes: Vec<RouteSummary>,
    /// The routes differ.
    pub path_difference: bool,
    /// The outcomes differ.
    pub terminal_difference: bool,
    /// Conformance differs.
    pub conformance_difference: bool,
}

impl Comparison {
    /// Compares the reports of runs of one spec.
    pub fn of(reports: &[RunReport]) -> Comparison {
        let routes: Vec<RouteSummary> = reports
            .iter()
            .map(|r| {
                let outcome = r.outcome.as_ref();
                let layer = outcome.and_then(|o| o.layer());
                let code = match outcome {
                    Some(crate::event::Outcome::NotAttained { missing }) => {
                        missing.first().map(|m| m.fault.code.clone())
                    }
                    Some(crate::event::Outcome::Failed { fault }) => Some(fault.code.clone()),
                    _ => None,
                };
                RouteSummary {
                    decider: r.decider.to_string(),
                    lane: None,
                    run_id: r.run_id.0.clone(),
                    route_key: r.route_key.clone(),
                    outcome: outcome
                        .map_or(crate::status::RunStatus::Running.name(), |o| o.name())
                        .to_owned(),
                    conformant: r.conformant,
                    attribution: layer,
                    attribution_code: code,
                    decisions: r.timings.decisions,
                    usage: r.usage.clone(),
                }
            })
            .collect();
        let differs = |f: &dyn Fn(&RouteSummary) -> String| {
            routes
                .windows(2)
                .any(|w| matches!(w, [a, b] if f(a) != f(b)))
        };
        Comparison {
            format: "warrant.compare/1".into(),
            spec_id: reports
                .first()
                .map(|r| r.spec.id.clone())
                .unwrap_or_default(),
            spec_hash: reports
                .first()
                .map(|r| r.spec.hash.clone())
                .unwrap_or_default(),
            path_difference: differs(&|r| r.route_key.clone()),
            terminal_difference: differs(&|r| r.outcome.clone()),
            conformance_difference: differs(&|r| r.conformant.to_string()),
            routes,
        }
    }

    /// The comparison for people.
    pub fn render(&self) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let mut out = format!("spec {} ({})\n", self.spec_id, self.spec_hash);
        for r in &self.routes {
            let lane = r
                .lane
                .as_ref()
                .map(|l| format!(" on the {l} lane"))
                .unwrap_or_default();
            out.push_str(&format!(
                "{}{lane}\n  path        {}\n  terminal    {}\n  conformant  {}\n",
                r.decider,
                r.route_key,
                r.outcome,
                if r.conformant { "PASS" } else { "FAIL" }
            ));
            if let (Some(layer), Some(code)) = (r.attribution, &r.attribution_code) {
                out.push_str(&format!("  attributed  {layer} ({code})\n"));
            }
            out.push_str(&format!(
                "  decisions   {}\n  usage       {}\n",
                r.decisions,
                r.usage.text(&r.decider)
            ));
            out.push_str(&format!("  run         {}\n", r.run_id));
        }
        out.push_str(&format!(
            "path difference: {} · terminal difference: {} · conformance difference: {}\n",
            yes(self.path_difference),
            yes(self.terminal_difference),
            yes(self.conformance_difference)
        ));
        out
    }
}

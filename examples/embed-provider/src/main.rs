//! Embedding Warrant in a Rust program with a provider of your own.
//!
//! A `Thermostat` provider offers a read (`read_temperature`) and a commit (`set_target`).
//! Warrant mediates every call: the decider below proposes, the Bridge checks the arguments
//! against the schema and the authority, records the intent, calls the provider, and judges
//! from the evidence whether the objective was reached.
//!
//! Run it with `cargo run -p embed-provider`.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use serde_json::{Value, json};
use warrant_core::event::{Effect, Outcome};
use warrant_core::spec::Format;
use warrant_core::validate;
use warrant_deciders::{Script, ScriptedDecider};
use warrant_engine::Engine;
use warrant_store::MemoryStore;
use warrant_surfaces::{ActionSpec, Provider, ProviderError, ReferenceCatalog};

/// A thermostat with one piece of state.
#[derive(Default)]
struct Thermostat {
    target_c: AtomicI64,
    version: AtomicU64,
}

impl Provider for Thermostat {
    fn actions(&self) -> Vec<ActionSpec> {
        vec![
            ActionSpec {
                name: "read_temperature".into(),
                effect: Effect::Read,
                description: "Read the room temperature and the current target.".into(),
                input_schema: json!({"type": "object", "additionalProperties": false}),
            },
            ActionSpec {
                name: "set_target".into(),
                effect: Effect::Commit,
                description: "Set the target temperature in degrees Celsius.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"celsius": {"type": "integer", "minimum": 16, "maximum": 26}},
                    "required": ["celsius"],
                    "additionalProperties": false
                }),
            },
        ]
    }

    fn state_version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    fn call(
        &self,
        action: &str,
        args: &Value,
        _idempotency_key: &str,
    ) -> Result<Value, ProviderError> {
        match action {
            "read_temperature" => {
                Ok(json!({"room_c": 19, "target_c": self.target_c.load(Ordering::Acquire)}))
            }
            "set_target" => {
                let c = args["celsius"]
                    .as_i64()
                    .ok_or_else(|| ProviderError::Failed("no `celsius`".into()))?;
                self.target_c.store(c, Ordering::Release);
                self.version.fetch_add(1, Ordering::AcqRel);
                Ok(json!({"target_c": c}))
            }
            other => Err(ProviderError::Failed(format!("no action `{other}`"))),
        }
    }
}

const SPEC: &str = "
version: warrant/v1
id: warm-room
objective: Make the room warmer by setting the thermostat to 21 degrees.
providers:
  home: {reference: thermostat}
steps:
  - id: heat
    provider: home
    tools: [read_temperature, set_target]
    commit: required
    publishes:
      target: {from: set_target, path: /target_c}
";

// The second call proposes 40 degrees: the schema allows at most 26, so Warrant rejects it
// before the thermostat sees it, and the decider's next projection shows why.
const SCRIPT: &str = "
steps:
  heat:
    - call: read_temperature
    - call: set_target
      args: {celsius: 40}
    - call: set_target
      args: {celsius: 21}
    - done: the target is 21
";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let thermostat = Arc::new(Thermostat::default());
    let mut catalog = ReferenceCatalog::empty();
    let t = thermostat.clone();
    catalog.register("thermostat", move || t.clone());

    let spec = Arc::new(validate::load(
        SPEC,
        Format::Yaml,
        "warm-room.yaml",
        &catalog,
    )?);
    let decider = ScriptedDecider::new(
        Script::parse(SCRIPT, Format::Yaml, "script.yaml")?,
        "inline",
    );
    let surfaces = catalog.surfaces(&spec)?;
    let engine = Engine::new(Arc::new(MemoryStore::new()));

    let result = engine.run(spec, &decider, &surfaces).await?;
    let report = warrant_core::report::RunReport::from_state(&result.state);
    print!("{}", report.render());
    println!(
        "thermostat target is now {} C",
        thermostat.target_c.load(Ordering::Acquire)
    );
    if result.outcome != Some(Outcome::Attained) {
        return Err(format!("not attained: {:?}", result.outcome).into());
    }
    Ok(())
}

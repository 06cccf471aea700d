//! Deciders: the scripted decider (decisions from a file) and, with the `live` feature, live
//! models (OpenAI, Anthropic, Gemini, OpenAI-compatible servers). Replaying a log's decisions is
//! part of `warrant_engine::replay`.

#[cfg(feature = "live")]
pub mod live;
pub mod scripted;

pub use scripted::{Script, ScriptError, ScriptedDecider};

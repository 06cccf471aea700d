//! Deciders: the scripted decider (decisions from a file). Replaying a log's decisions is
//! part of `warrant_engine::replay`.

pub mod scripted;

pub use scripted::{Script, ScriptError, ScriptedDecider};

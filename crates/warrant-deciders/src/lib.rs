//! Deciders: the scripted decider (decisions from a file) and the replay decider (decisions
//! from a recorded log).

pub mod replay;
pub mod scripted;

pub use replay::ReplayDecider;
pub use scripted::{Script, ScriptError, ScriptedDecider};

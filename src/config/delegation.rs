//! `[delegation]`: how far the `delegate` tool may go. A sub-task runs as a child agent loop
//! inside the turn; these caps bound how many run at once, how deep they may nest, and what
//! each may spend (all of it also counted against the conversation's and user's budgets).

use serde::Deserialize;

use crate::agent::DelegationLimits;

/// `[delegation]`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct DelegationConfig {
    /// Sub-tasks of one `delegate` call running at once; the rest wait for a slot.
    pub max_parallel: usize,
    /// Levels of delegation below the conversation's agent: 1 lets it delegate but its
    /// sub-tasks may not delegate further.
    pub max_depth: usize,
    /// LLM tokens one sub-task may use before it is stopped (its failure is its result).
    pub child_max_tokens: u64,
    /// Tool runs one sub-task may make; calls past it are refused.
    pub child_max_tool_runs: usize,
    /// LLM round-trips one sub-task may make.
    pub child_max_iterations: usize,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        let limits = DelegationLimits::default();
        Self {
            max_parallel: limits.max_parallel,
            max_depth: limits.max_depth,
            child_max_tokens: limits.child_max_tokens,
            child_max_tool_runs: limits.child_max_tool_runs,
            child_max_iterations: limits.child_max_iterations,
        }
    }
}

impl DelegationConfig {
    /// The limits as the agent loop takes them.
    pub fn limits(&self) -> DelegationLimits {
        DelegationLimits {
            max_parallel: self.max_parallel,
            max_depth: self.max_depth,
            child_max_tokens: self.child_max_tokens,
            child_max_tool_runs: self.child_max_tool_runs,
            child_max_iterations: self.child_max_iterations,
        }
    }

    /// What is wrong with these values, by key.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (key, value) in [
            ("max_parallel", self.max_parallel as u64),
            ("max_depth", self.max_depth as u64),
            ("child_max_tokens", self.child_max_tokens),
            ("child_max_tool_runs", self.child_max_tool_runs as u64),
            ("child_max_iterations", self.child_max_iterations as u64),
        ] {
            if value == 0 {
                out.push((format!("delegation.{key}"), "must be at least 1".into()));
            }
        }
        out
    }
}

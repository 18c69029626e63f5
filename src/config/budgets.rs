//! `[budgets]`: daily limits (UTC calendar days) on what one conversation, and one user on
//! one channel, may spend. `0` means no limit (the default for every key).

use serde::Deserialize;

/// `[budgets]`.
#[derive(Debug, Clone, Copy, Deserialize, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetsConfig {
    /// LLM tokens (input + output) one conversation may use per day.
    pub conversation_tokens_per_day: u64,
    /// Tool runs one conversation may make per day.
    pub conversation_tool_runs_per_day: u64,
    /// LLM tokens one user may use per day, across their conversations on one channel.
    pub user_tokens_per_day: u64,
    /// Tool runs one user may make per day, across their conversations on one channel.
    pub user_tool_runs_per_day: u64,
}

impl BudgetsConfig {
    /// Whether any limit is set (otherwise usage is still counted, never enforced).
    pub fn any(&self) -> bool {
        *self != Self::default()
    }
}

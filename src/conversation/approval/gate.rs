//! The policy as the agent loop's gate: each call is judged with the conversation's "always
//! allow" rules added, and the typed [`Decision`] goes back to the loop as it is.

use std::sync::Arc;

use crate::agent::Gate;
use crate::policy::{Decision, Policy};
use crate::provider::ToolCall;

/// The policy with one conversation's "always allow" rules.
pub(in crate::conversation) struct PolicyGate {
    /// The compiled `[policy]`.
    pub policy: Arc<Policy>,
    /// Patterns granted in this conversation through "Always allow".
    pub extra_allow: Vec<String>,
}

#[async_trait::async_trait]
impl Gate for PolicyGate {
    async fn check(&self, call: &ToolCall, read_only: bool) -> Decision {
        self.policy
            .evaluate(&call.name, &call.args, read_only, &self.extra_allow)
    }
}

//! The policy as the agent loop's gate: each call is judged with the conversation's "always
//! allow" rules added, and the typed [`Decision`] goes back to the loop as it is. The one
//! thing it remembers within its turn: the hosts the browser was let open, so a page's
//! host asks once per turn, not at every `open`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use switchboard_channel::ConversationKey;
use tokio::sync::OnceCell;

use crate::agent::Gate;
use crate::policy::{Decision, Policy, Verdict};
use crate::provider::{ChatMessage, ToolCall};
use crate::store::Store;

/// The policy with one conversation's "always allow" rules, read from the store when the
/// turn's first tool call is judged: most turns call no tool, and a read before the model
/// call would delay every answer's first words.
pub(in crate::conversation) struct PolicyGate {
    /// The compiled `[policy]`.
    policy: Arc<Policy>,
    /// Where the conversation's rules are kept.
    store: Arc<dyn Store>,
    key: ConversationKey,
    /// Patterns granted in this conversation through "Always allow", once read.
    extra_allow: OnceCell<Vec<String>>,
    /// Hosts the browser was allowed to open in this turn.
    opened: Mutex<HashSet<String>>,
}

impl PolicyGate {
    pub fn new(policy: Arc<Policy>, store: Arc<dyn Store>, key: ConversationKey) -> Self {
        let extra_allow = OnceCell::new();
        Self {
            policy,
            store,
            key,
            extra_allow,
            opened: Mutex::new(HashSet::new()),
        }
    }

    /// `decision` for a browser `open` of a host already opened in this turn: what the
    /// mode would ask again is allowed (a rule's verdict stands).
    fn remember_browser_host(&self, call: &ToolCall, decision: Decision) -> Decision {
        let Some(host) = opened_host(call) else {
            return decision;
        };
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        let decision = if decision.verdict == Verdict::Ask
            && decision.rule.is_none()
            && opened.contains(&host)
        {
            Decision::by_mode(
                Verdict::Allow,
                format!("{host} was opened earlier in this turn"),
            )
        } else {
            decision
        };
        if decision.verdict == Verdict::Allow {
            opened.insert(host);
        }
        decision
    }
}

/// The host (lowercased) of a browser `open` call's URL; `None` for any other call.
fn opened_host(call: &ToolCall) -> Option<String> {
    if call.name != crate::tools::BROWSER_TOOL || call.args["action"] != "open" {
        return None;
    }
    let url = reqwest::Url::parse(call.args["url"].as_str()?).ok()?;
    url.host_str().map(str::to_ascii_lowercase)
}

#[async_trait::async_trait]
impl Gate for PolicyGate {
    async fn check(&self, call: &ToolCall, read_only: bool) -> Decision {
        let read = || self.store.allow_rules(&self.key);
        let extra = match self.extra_allow.get_or_try_init(read).await {
            Ok(rules) => rules.as_slice(),
            // Judged by the policy alone, which is never more permissive; the next call
            // reads again.
            Err(err) => {
                tracing::warn!(key = %self.key, error = %err, "could not read the conversation's \"always allow\" rules");
                &[]
            }
        };
        let decision = self
            .policy
            .evaluate(&call.name, &call.args, read_only, extra);
        self.remember_browser_host(call, decision)
    }

    /// The hosts whose pages opened before the turn waited (their results start with the
    /// page's `url:`), and the host of an approved `open`, count as opened in this turn.
    fn resumed(&self, turn: &[ChatMessage], approved: Option<&ToolCall>) {
        let loaded = |call: &&ToolCall| {
            turn.iter().any(|m| {
                m.tool_call_id.as_deref() == Some(call.id.as_str()) && m.content.starts_with("url:")
            })
        };
        let earlier = turn.iter().flat_map(|m| &m.tool_calls).filter(loaded);
        let hosts = earlier.chain(approved).filter_map(opened_host);
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        opened.extend(hosts);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::PolicyConfig;

    fn npm_install() -> ToolCall {
        let args = json!({ "command": "npm install" });
        ToolCall {
            id: "c1".into(),
            name: "shell".into(),
            args,
        }
    }

    fn open(id: &str, url: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: crate::tools::BROWSER_TOOL.into(),
            args: json!({"action": "open", "url": url}),
        }
    }

    #[tokio::test]
    async fn a_resumed_turn_remembers_the_hosts_it_opened_and_the_one_approved() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::connect(&format!("sqlite://{}/g.db", dir.path().display()))
            .await
            .unwrap();
        let key = ConversationKey::new("slack", "D1");
        let policy = Arc::new(Policy::new(&PolicyConfig::default()).unwrap());
        let gate = PolicyGate::new(policy, store, key);
        let (a, b, c) = (
            open("1", "http://A.test/x"),
            open("2", "http://b.test/"),
            open("3", "http://c.test/"),
        );
        assert_eq!(gate.check(&a, false).await.verdict, Verdict::Ask);
        // Before it waited, the turn opened a.test and failed to open c.test; b.test was
        // just approved.
        let mut asked = ChatMessage::new(crate::provider::Role::Assistant, "");
        asked.tool_calls = vec![a.clone(), c.clone()];
        let turn = [
            asked,
            ChatMessage::tool_result("1", "url: http://a.test/x\ntitle: A\n\nhello"),
            ChatMessage::tool_result("3", "error: the page did not load"),
        ];
        gate.resumed(&turn, Some(&b));
        let again = |url: &str| open("9", url);
        assert_eq!(
            gate.check(&again("http://a.test/y"), false).await.verdict,
            Verdict::Allow
        );
        assert_eq!(
            gate.check(&again("http://b.test/z"), false).await.verdict,
            Verdict::Allow
        );
        assert_eq!(
            gate.check(&again("http://c.test/"), false).await.verdict,
            Verdict::Ask
        );
    }

    #[tokio::test]
    async fn the_rules_are_read_when_a_call_is_judged_and_a_failed_read_only_asks() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/g.db", dir.path().display());
        let store = crate::store::connect(&url).await.unwrap();
        let key = ConversationKey::new("slack", "D1");
        let policy = Arc::new(Policy::new(&PolicyConfig::default()).unwrap());
        let gate = PolicyGate::new(Arc::clone(&policy), Arc::clone(&store), key.clone());
        // Granted after the turn's agent was built, before its first call: it counts.
        store
            .add_allow_rule(&key, "shell(npm install)", "U1", 1)
            .await
            .unwrap();
        let decided = gate.check(&npm_install(), false).await;
        assert_eq!(decided.verdict, Verdict::Allow, "{decided:?}");

        // A store that cannot answer leaves the policy alone to judge, which asks.
        let failing = PolicyGate::new(policy, Arc::clone(&store), key.clone());
        let raw = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query("DROP TABLE allow_rules")
            .execute(&raw)
            .await
            .unwrap();
        let decided = failing.check(&npm_install(), false).await;
        assert_eq!(decided.verdict, Verdict::Ask, "{decided:?}");
        // The first gate read its rules once and keeps them for its turn.
        assert_eq!(
            gate.check(&npm_install(), false).await.verdict,
            Verdict::Allow
        );
    }
}

//! Closed by default, end to end on the Telegram and Slack stand-ins with the example
//! config's own channel settings (only the credentials and API URL swapped for the
//! stand-ins'): a stranger's DM gets a pairing code and no LLM call, `switchboard access
//! allow` (the library function the binary calls, on the same database) lets them in, a
//! restart keeps it; in a group the requester's own press on a mutating call is refused
//! privately and an approver's press runs it once.

mod check;
mod slack;
mod telegram;

use switchboard::access::cli::{AccessAction, apply};
use switchboard::store::Store;

use crate::app::example_table;

/// The pairing code in the bot's reply (`switchboard access allow <channel> <code>`).
fn code_in(reply: &str, channel: &str) -> String {
    let marker = format!("switchboard access allow {channel} ");
    let at = reply.find(&marker).expect("the reply names the command") + marker.len();
    reply[at..].chars().take(8).collect()
}

/// What the operator's `switchboard access allow <channel> <code>` does.
async fn allow(store: &dyn Store, channel: &str, code: &str) -> String {
    let action = AccessAction::Allow {
        channel: channel.into(),
        code: code.into(),
    };
    let now = switchboard::clock::Clock::wall().now_ms();
    apply(store, &action, now)
        .await
        .expect("the grant is stored")
}

/// How many times the shell tool ran, from the audit log.
async fn shell_runs(store: &dyn Store) -> usize {
    let entries = store.audit(None, 50).await.expect("audit reads");
    entries
        .iter()
        .filter(|e| e.tool == "shell" && e.status == "ok")
        .count()
}

#[test]
fn the_example_tables_ship_closed() {
    for name in ["telegram", "slack", "discord"] {
        let table = example_table(name, &[]);
        assert!(table.contains("dm_policy = \"pairing\""), "{name}: {table}");
        assert!(
            table.contains("group_policy = \"allowlist\""),
            "{name}: {table}"
        );
        assert!(
            !table.contains("[\"*\"]\n"),
            "{name} lets anyone in: {table}"
        );
    }
}

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

/// The example config's `[channels.<name>]` table, with `replace`d keys set to new values
/// and every other line kept as shipped.
pub(crate) fn example_table(name: &str, replace: &[(&str, String)]) -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/switchboard.example.toml"
    );
    let example = std::fs::read_to_string(path).expect("the example config exists");
    let start = example
        .find(&format!("[channels.{name}]"))
        .expect("the example config has the table");
    let rest = &example[start..];
    let end = rest[1..].find("\n[").map_or(rest.len(), |i| i + 1);
    let mut table = String::new();
    for line in rest[..end].lines() {
        let key = line.split('=').next().unwrap_or_default().trim();
        match replace.iter().find(|(k, _)| *k == key) {
            Some((k, v)) => table.push_str(&format!("{k} = {v}\n")),
            None => table.push_str(&format!("{line}\n")),
        }
    }
    table
}

/// `text` as a TOML string.
pub(crate) fn quoted(text: &str) -> String {
    format!("{text:?}")
}

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

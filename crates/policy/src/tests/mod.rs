//! Table tests of the policy engine: shell structure and bypass shapes, rules, modes,
//! circuit breakers and "always allow" round trips.

mod breakers;
mod browser;
mod bypasses;
mod mcp;
mod modes;
mod narrowest;
mod peers;
mod rules;
mod shell;

use serde_json::json;

use super::{Decision, Mode, Policy, PolicyConfig, Verdict};

/// A policy in `mode` with the given rule lists.
fn policy(mode: Mode, deny: &[&str], ask: &[&str], allow: &[&str]) -> Policy {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
    let config = PolicyConfig {
        mode,
        deny: owned(deny),
        ask: owned(ask),
        allow: owned(allow),
        ..PolicyConfig::default()
    };
    Policy::new(&config).expect("test patterns are valid")
}

/// One shell call with no per-conversation rules.
fn shell(policy: &Policy, command: &str) -> Decision {
    policy.evaluate("shell", &json!({ "command": command }), false, &[])
}

/// Runs a table of `(command, expected verdict)` against `policy`; reports every mismatch at once.
fn check_table(policy: &Policy, table: &[(&str, Verdict)]) {
    let failures: Vec<String> = table
        .iter()
        .filter_map(|(command, expected)| {
            let got = shell(policy, command);
            (got.verdict != *expected)
                .then(|| format!("{command:?}: expected {expected:?}, got {got:?}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

//! Each mode's default for calls no rule matches.

use serde_json::json;

use super::{check_table, policy, shell};
use crate::{Mode, Verdict, Verdict::*};

/// `(mode, tool, read_only declaration, expected)` for tools other than the shell.
const TOOL_DEFAULTS: &[(Mode, &str, bool, Verdict)] = &[
    (Mode::ReadOnly, "file_read", true, Allow),
    (Mode::ReadOnly, "file_write", false, Deny),
    (Mode::Manual, "file_read", true, Allow),
    (Mode::Manual, "file_write", false, Ask),
    (Mode::Guarded, "http_fetch", true, Allow),
    (Mode::Guarded, "file_edit", false, Ask),
    (Mode::Autonomous, "file_write", false, Allow),
    (Mode::Autonomous, "file_read", true, Allow),
];

#[test]
fn tools_other_than_the_shell_follow_their_read_only_declaration() {
    for &(mode, tool, read_only, expected) in TOOL_DEFAULTS {
        let decision =
            policy(mode, &[], &[], &[]).evaluate(tool, &json!({"path": "a.txt"}), read_only, &[]);
        assert_eq!(decision.verdict, expected, "{mode:?} {tool}: {decision:?}");
    }
}

#[test]
fn read_only_mode_allows_looking_and_refuses_everything_else() {
    check_table(
        &policy(Mode::ReadOnly, &[], &[], &[]),
        &[
            ("ls -la", Allow),
            (super::shell::HARDENED_LOG, Allow),
            ("git log -3", Deny),
            ("npm install", Deny),
            ("ls > listing.txt", Deny),
            ("cat a | tee b", Deny),
            ("rm -rf /", Deny),
            ("sudo ls", Deny),
        ],
    );
}

#[test]
fn manual_mode_asks_for_every_shell_command() {
    check_table(
        &policy(Mode::Manual, &[], &[], &[]),
        &[
            ("ls", Ask),
            ("git status", Ask),
            ("npm install", Ask),
            ("sudo x", Ask),
        ],
    );
}

#[test]
fn autonomous_mode_allows_what_no_rule_denies() {
    check_table(
        &policy(Mode::Autonomous, &["shell(git push*)"], &[], &[]),
        &[
            ("npm install && npm test", Allow),
            ("git push origin main", Deny),
            ("sudo x", Ask),
        ],
    );
}

#[test]
fn the_mode_default_names_the_mode_and_the_command() {
    let decision = shell(&policy(Mode::Guarded, &[], &[], &[]), "npm install");
    assert_eq!(
        decision.reason,
        "mode guarded: `npm install` is not read-only"
    );
    let decision = shell(&policy(Mode::ReadOnly, &[], &[], &[]), "npm install");
    assert_eq!(
        decision.reason,
        "mode read_only: `npm install` is not read-only"
    );
    let decision = shell(&policy(Mode::Guarded, &[], &[], &[]), "ls -la");
    assert_eq!(decision.reason, "mode guarded: `ls -la` is read-only");
}

#[test]
fn a_long_command_is_shortened_in_the_reason() {
    let long = format!("npm run {}", "x".repeat(200));
    let decision = shell(&policy(Mode::Guarded, &[], &[], &[]), &long);
    assert!(decision.reason.chars().count() < 130, "{}", decision.reason);
    assert!(decision.reason.contains('…'));
}

#[test]
fn the_config_section_defaults_to_guarded_with_a_five_minute_timeout() {
    let config: crate::PolicyConfig = toml::from_str("").unwrap();
    assert_eq!(config.mode, Mode::Guarded);
    assert_eq!(config.approval_timeout_secs, 300);
    let config: crate::PolicyConfig = toml::from_str(
        "mode = \"read_only\"\ndeny = [\"shell(sudo *)\"]\n[approvers]\ntelegram = [\"42\"]",
    )
    .unwrap();
    assert_eq!(config.mode, Mode::ReadOnly);
    assert_eq!(config.approvers["telegram"], ["42"]);
    assert!(toml::from_str::<crate::PolicyConfig>("mood = \"guarded\"").is_err());
}

//! Rules: globs, list order, specifiers for file and fetch tools, per-conversation rules.

use serde_json::json;

use super::{check_table, policy, shell};
use crate::{Mode, Policy, PolicyConfig, Verdict::*, validate_pattern};

#[test]
fn a_glob_rule_allows_its_commands_and_no_others() {
    let guarded = policy(
        Mode::Guarded,
        &[],
        &[],
        &["shell(npm run test *)", "shell(cargo build)"],
    );
    check_table(
        &guarded,
        &[
            ("npm run test unit", Allow),
            ("npm run test unit --watch", Allow),
            ("npm run build", Ask),
            ("npm run test", Ask),
            ("cargo build", Allow),
            ("timeout 600 cargo build", Allow),
            ("cargo build --release", Ask),
            ("npm run test unit && npm publish", Ask),
            ("npm run test unit; rm -rf ~", Ask),
        ],
    );
}

#[test]
fn deny_beats_allow_and_ask_beats_allow_whatever_the_specificity() {
    let rules = policy(
        Mode::Autonomous,
        &["shell(git push *)"],
        &["shell(npm *)"],
        &["shell(git *)", "shell(npm run test *)"],
    );
    check_table(
        &rules,
        &[
            ("git push origin main", Deny),
            ("git pull", Allow),
            ("npm run test unit", Ask),
            ("npm ci", Ask),
        ],
    );
    assert_eq!(
        shell(&rules, "npm run test x").reason,
        "ask rule shell(npm *)"
    );
}

#[test]
fn rules_match_each_simple_command_wherever_it_hides() {
    let rules = policy(
        Mode::Autonomous,
        &["shell(curl *)", "shell(rm *)", "shell(bash *)"],
        &[],
        &[],
    );
    check_table(
        &rules,
        &[
            ("echo $(curl x)", Deny),
            ("timeout 5 rm x", Deny),
            ("sh -c 'rm x'", Deny),
            ("bash -c ls", Deny),
            ("ls | xargs rm -f", Deny),
            ("echo 'curl x'", Allow),
        ],
    );
}

#[test]
fn a_deny_rule_beats_a_circuit_breaker_but_an_allow_rule_does_not() {
    let rules = policy(
        Mode::Guarded,
        &["shell(sudo *)"],
        &[],
        &["shell(rm *)", "shell"],
    );
    check_table(
        &rules,
        &[
            ("sudo ls", Deny),
            ("rm -rf /", Ask),
            ("rm -rf build", Allow),
            ("npm ci", Allow),
        ],
    );
}

#[test]
fn rules_beat_the_mode_default() {
    let rules = policy(Mode::ReadOnly, &["shell(ls *)"], &[], &["shell(npm test)"]);
    check_table(
        &rules,
        &[("npm test", Allow), ("ls -la", Deny), ("npm ci", Deny)],
    );
}

#[test]
fn file_rules_match_the_normalised_path() {
    let rules = policy(
        Mode::Guarded,
        &["file_write(**/.env)"],
        &[],
        &["file_write(src/**)", "file_edit(*.md)"],
    );
    let call = |tool: &str, path: &str| {
        rules
            .evaluate(tool, &json!({"path": path, "content": ""}), false, &[])
            .verdict
    };
    assert_eq!(call("file_write", "src/a/b.rs"), Allow);
    assert_eq!(call("file_write", "./src/main.rs"), Allow);
    assert_eq!(call("file_write", "src/../../etc/passwd"), Ask);
    assert_eq!(call("file_write", "docs/a.md"), Ask);
    assert_eq!(call("file_write", "src/config/.env"), Deny);
    assert_eq!(call("file_edit", "README.md"), Allow);
    assert_eq!(call("file_edit", "docs/README.md"), Ask);
    assert_eq!(call("file_read", "src/a.rs"), Ask);
}

#[test]
fn http_fetch_rules_match_the_host() {
    let rules = policy(
        Mode::Guarded,
        &["http_fetch(domain:*.evil.com)"],
        &[],
        &["http_fetch(domain:example.com)"],
    );
    let fetch = |url: &str| {
        rules
            .evaluate("http_fetch", &json!({ "url": url }), false, &[])
            .verdict
    };
    assert_eq!(fetch("https://example.com/page"), Allow);
    assert_eq!(fetch("https://EXAMPLE.com:8443/x"), Allow);
    assert_eq!(fetch("https://sub.example.com/"), Ask);
    assert_eq!(fetch("https://a.evil.com/"), Deny);
    assert_eq!(fetch("https://a.b.evil.com/"), Deny);
    assert_eq!(fetch("https://evil.com/"), Ask);
    assert_eq!(fetch("not a url"), Ask);
}

#[test]
fn a_bare_tool_rule_matches_every_call_of_that_tool_only() {
    let rules = policy(Mode::Autonomous, &[], &["http_fetch"], &[]);
    let fetch = rules.evaluate(
        "http_fetch",
        &json!({"url": "https://example.com"}),
        true,
        &[],
    );
    assert_eq!(
        (fetch.verdict, fetch.reason.as_str()),
        (Ask, "ask rule http_fetch")
    );
    assert_eq!(
        rules
            .evaluate("file_read", &json!({"path": "a"}), true, &[])
            .verdict,
        Allow
    );
}

#[test]
fn conversation_rules_allow_after_ask_rules_and_never_over_deny_rules() {
    let rules = policy(
        Mode::Guarded,
        &["shell(npm publish)"],
        &["shell(npm ci)"],
        &[],
    );
    let extra = [
        "shell(npm install)".to_string(),
        "shell(npm ci)".into(),
        "shell(npm publish)".into(),
        "shell((".into(),
    ];
    let run =
        |command: &str| rules.evaluate("shell", &json!({ "command": command }), false, &extra);
    assert_eq!(run("npm install").verdict, Allow);
    assert_eq!(
        run("npm install").reason,
        "always-allow rule shell(npm install)"
    );
    assert_eq!(run("npm ci").verdict, Ask);
    assert_eq!(run("npm publish").verdict, Deny);
    assert_eq!(run("npm test").verdict, Ask);
    assert_eq!(shell(&rules, "npm install").verdict, Ask);
    let write = rules.evaluate(
        "file_write",
        &json!({"path": "a.txt"}),
        false,
        &["file_write(a.txt)".into()],
    );
    assert_eq!(write.verdict, Allow);
}

#[test]
fn malformed_patterns_are_errors_that_name_them() {
    for bad in [
        "shell(",
        "shell()",
        "(ls)",
        "shell([)",
        "bad name(x)",
        "http_fetch(domain:)",
        "shell({a)",
        "",
    ] {
        let err = validate_pattern(bad).expect_err(bad);
        assert!(err.contains(&format!("`{}`", bad.trim())), "{bad:?}: {err}");
    }
    let config = PolicyConfig {
        deny: vec!["shell(sudo *)".into(), "shell([)".into()],
        ..PolicyConfig::default()
    };
    let err = Policy::new(&config).expect_err("bad pattern");
    assert!(
        err.starts_with("policy.deny[1]: invalid policy pattern `shell([)`"),
        "{err}"
    );
}

#[test]
fn well_formed_patterns_validate() {
    for good in [
        "shell",
        "shell(git status)",
        "shell(npm run test *)",
        "file_write(src/**)",
        "http_fetch(domain:*.example.com)",
        "shell(echo $(date))",
        "mcp.tool-x_1",
    ] {
        assert_eq!(validate_pattern(good), Ok(()), "{good}");
    }
}

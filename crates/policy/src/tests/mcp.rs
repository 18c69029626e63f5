//! MCP tools: they ask unless an allow rule names them, in every mode, whatever the tool
//! says about itself; `mcp(server__tool)` and `mcp(server__*)` name them.

use serde_json::json;

use super::policy;
use crate::{Mode, Verdict::*, narrowest_rule, validate_pattern};

#[test]
fn an_mcp_tool_asks_in_every_mode_even_when_it_claims_to_be_read_only() {
    for mode in [Mode::Manual, Mode::Guarded, Mode::Autonomous] {
        let p = policy(mode, &[], &[], &[]);
        let d = p.evaluate("github__list_issues", &json!({}), true, &[]);
        assert_eq!(d.verdict, Ask, "{mode}: {d:?}");
        assert!(d.reason.contains("marks it read-only"), "{}", d.reason);
    }
    let read_only = policy(Mode::ReadOnly, &[], &[], &[]);
    let d = read_only.evaluate("github__list_issues", &json!({}), true, &[]);
    assert_eq!(d.verdict, Deny);
}

#[test]
fn mcp_rules_name_one_tool_or_a_whole_server() {
    let p = policy(
        Mode::Guarded,
        &["mcp(github__delete_*)"],
        &["mcp(github__create_issue)"],
        &["mcp(github__*)", "mcp(calendar__list)"],
    );
    let verdict = |tool: &str| p.evaluate(tool, &json!({"path": "x"}), false, &[]).verdict;
    assert_eq!(verdict("github__list_issues"), Allow);
    assert_eq!(verdict("github__create_issue"), Ask);
    assert_eq!(verdict("github__delete_repo"), Deny);
    assert_eq!(verdict("calendar__list"), Allow);
    assert_eq!(verdict("calendar__add"), Ask);
    // An `mcp(...)` rule never names a built-in tool.
    let everything = policy(Mode::Guarded, &[], &[], &["mcp(*)"]);
    let shell = everything.evaluate("shell", &json!({"command": "rm -rf x"}), false, &[]);
    assert_eq!(shell.verdict, Ask);
    let file = everything.evaluate("file_write", &json!({"path": "a"}), false, &[]);
    assert_eq!(file.verdict, Ask);
}

#[test]
fn always_allow_for_an_mcp_tool_is_its_mcp_rule() {
    let rule = narrowest_rule("github__create_issue", &json!({"path": "a/b"}));
    assert_eq!(rule, "mcp(github__create_issue)");
    assert!(validate_pattern(&rule).is_ok());
    let p = policy(Mode::Guarded, &[], &[], &[]);
    let d = p.evaluate("github__create_issue", &json!({}), false, &[rule]);
    assert_eq!(d.verdict, Allow);
    assert!(validate_pattern("mcp()").is_err());
}

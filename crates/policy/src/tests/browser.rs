//! The browser tool: `browser(HOST)` rules over an `open` call's host, a new host asking in
//! guarded mode, and a password field asking in every mode.

use serde_json::{Value, json};

use super::{Mode, Policy, Verdict, policy};

fn browse(policy: &Policy, args: Value) -> Verdict {
    policy.evaluate("browser", &args, false, &[]).verdict
}

fn open(url: &str) -> Value {
    json!({"action": "open", "url": url})
}

#[test]
fn opening_a_page_asks_in_guarded_mode_and_acting_on_it_does_not() {
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    assert_eq!(browse(&guarded, open("https://example.com/")), Verdict::Ask);
    for action in ["read", "click", "scroll", "back", "screenshot"] {
        let args = json!({"action": action, "ref": 1});
        assert_eq!(browse(&guarded, args), Verdict::Allow, "{action}");
    }
    let read_only = policy(Mode::ReadOnly, &[], &[], &[]);
    assert_eq!(
        browse(&read_only, open("https://example.com/")),
        Verdict::Allow
    );
    assert_eq!(
        browse(&read_only, json!({"action": "click", "ref": 1})),
        Verdict::Deny
    );
}

#[test]
fn browser_host_rules_allow_ask_or_deny_by_the_host_of_the_url() {
    let rules = policy(
        Mode::Guarded,
        &["browser(*.evil.test)"],
        &["browser(bank.test)"],
        &["browser(docs.rs)", "browser(*.example.com)"],
    );
    assert_eq!(browse(&rules, open("https://docs.rs/x")), Verdict::Allow);
    assert_eq!(
        browse(&rules, open("https://a.EXAMPLE.com/")),
        Verdict::Allow
    );
    assert_eq!(browse(&rules, open("https://bank.test/")), Verdict::Ask);
    assert_eq!(browse(&rules, open("http://x.evil.test/")), Verdict::Deny);
    assert_eq!(browse(&rules, open("https://other.test/")), Verdict::Ask);
    let autonomous = policy(Mode::Autonomous, &["browser(*.evil.test)"], &[], &[]);
    assert_eq!(
        browse(&autonomous, open("http://x.evil.test/")),
        Verdict::Deny
    );
    assert_eq!(
        browse(&autonomous, open("https://other.test/")),
        Verdict::Allow
    );
}

#[test]
fn typing_into_a_password_field_asks_in_every_mode_even_when_allowed() {
    let password = json!({"action": "type", "ref": 2, "text": "x", "password": true});
    for mode in [Mode::Autonomous, Mode::Guarded] {
        let allowing = policy(mode, &[], &[], &["browser"]);
        assert_eq!(browse(&allowing, password.clone()), Verdict::Ask, "{mode}");
    }
    let denying = policy(Mode::Autonomous, &["browser"], &[], &[]);
    assert_eq!(browse(&denying, password), Verdict::Deny);
}

//! "Always allow" round trips: the narrowest rule allows exactly the call it came from.

use serde_json::{Value, json};

use super::policy;
use crate::{Mode, Verdict, narrowest_rule, validate_pattern};

/// The verdict for `command` in guarded mode with `rule` as the only conversation rule.
fn with_rule(rule: &str, command: &str) -> Verdict {
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    guarded
        .evaluate(
            "shell",
            &json!({ "command": command }),
            false,
            &[rule.to_string()],
        )
        .verdict
}

/// `(command, its narrowest rule, other commands that rule must not allow)`.
const ROUND_TRIPS: &[(&str, &str, &[&str])] = &[
    (
        "npm run build",
        "shell(npm run build)",
        &["npm run build --prod", "npm run test", "npm run"],
    ),
    (
        "timeout 60 cargo build",
        "shell(cargo build)",
        &["cargo build --release"],
    ),
    ("rm *.tmp", "shell(rm [*].tmp)", &["rm a.tmp", "rm *.tmp x"]),
    (
        "touch '[a]?'",
        "shell(touch [[]a][?])",
        &["touch a", "touch [a]x"],
    ),
    (
        "cargo build && cargo test",
        "shell({cargo build,cargo test})",
        &["cargo build && npm publish", "cargo bench"],
    ),
    (
        "echo a,b > f && touch x",
        "shell({echo a[,]b > f,touch x})",
        &["echo a > f", "touch b"],
    ),
    (
        "awk '{print $1}' in > out",
        "shell(awk [{]print $1[}] in > out)",
        &["awk '{print $2}' in > out"],
    ),
    (
        "touch $(date +%s)",
        "shell({date +%s,touch $(date +%s)})",
        &["touch $(id)", "date"],
    ),
    (
        "python3 <<EOF\nprint(1)\nEOF",
        "shell(python3 << EOF\nprint(1)\n)",
        &["python3 <<EOF\nprint(2)\nEOF"],
    ),
    (
        "npm test 2>&1 | tee log",
        "shell({npm test 2>&1,tee log})",
        &["npm test | tee other"],
    ),
];

#[test]
fn the_narrowest_shell_rule_is_the_exact_normalised_command() {
    for (command, rule, _) in ROUND_TRIPS {
        assert_eq!(
            narrowest_rule("shell", &json!({ "command": command })),
            *rule,
            "{command:?}"
        );
        assert_eq!(validate_pattern(rule), Ok(()), "{rule}");
    }
}

#[test]
fn the_narrowest_shell_rule_allows_its_call_and_not_a_different_one() {
    for (command, rule, others) in ROUND_TRIPS {
        assert_eq!(
            with_rule(rule, command),
            Verdict::Allow,
            "{rule} should allow {command:?}"
        );
        for other in *others {
            assert_eq!(
                with_rule(rule, other),
                Verdict::Ask,
                "{rule} should not allow {other:?}"
            );
        }
    }
}

#[test]
fn the_narrowest_rule_never_silences_a_circuit_breaker() {
    let rule = narrowest_rule("shell", &json!({"command": "sudo ls"}));
    assert_eq!(rule, "shell(sudo ls)");
    assert_eq!(with_rule(&rule, "sudo ls"), Verdict::Ask);
}

#[test]
fn a_carrier_is_left_out_of_the_rule_since_its_inner_commands_are_judged() {
    let rule = narrowest_rule("shell", &json!({"command": "bash -c 'npm ci'"}));
    assert_eq!(rule, "shell(npm ci)");
    assert_eq!(with_rule(&rule, "bash -c 'npm ci'"), Verdict::Allow);
}

#[test]
fn narrowest_rules_for_other_tools_use_the_path_or_host() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "file_write",
            json!({"path": "./src/a.rs", "content": ""}),
            "file_write(src/a.rs)",
        ),
        (
            "file_write",
            json!({"path": "src/*.rs"}),
            "file_write(src/[*].rs)",
        ),
        (
            "http_fetch",
            json!({"url": "https://Docs.Example.com/a?b"}),
            "http_fetch(domain:docs.example.com)",
        ),
        ("memory_store", json!({"text": "x"}), "memory_store"),
    ];
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    for (tool, args, expected) in cases {
        let rule = narrowest_rule(tool, args);
        assert_eq!(rule, *expected);
        let decision = guarded.evaluate(tool, args, false, &[rule]);
        assert_eq!(decision.verdict, Verdict::Allow, "{tool} {args}");
    }
    let rule = narrowest_rule("file_write", &json!({"path": "src/a.rs"}));
    assert_eq!(
        guarded
            .evaluate("file_write", &json!({"path": "src/b.rs"}), false, &[rule])
            .verdict,
        Verdict::Ask
    );
    let rule = narrowest_rule("http_fetch", &json!({"url": "https://example.com/"}));
    let sub = json!({"url": "https://sub.example.com/"});
    assert_eq!(
        guarded.evaluate("http_fetch", &sub, false, &[rule]).verdict,
        Verdict::Ask
    );
}

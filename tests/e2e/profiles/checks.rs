//! `switchboard check` on profile references: an unknown profile, provider or tool is an
//! error naming the file, the line and the key.

use std::process::Command;

const BAD: &str = r#"[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "llama3"

[agents.family]
provider = "locall"
fallback = ["local", "nowhere"]
tools = ["shell", "teleport"]

[channels.web]
kind = "web"
agent = "famly"
"#;

fn check(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("check")
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (out.status.code(), text)
}

#[test]
fn check_names_file_line_and_key_of_an_unknown_profile_provider_and_tool() {
    let (code, out) = check(BAD);
    assert_eq!(code, Some(1), "{out}");
    for expected in [
        "bad.toml:7:1: key `agents.family.provider`: unknown provider \"locall\"",
        "bad.toml:8:1: key `agents.family.fallback`: unknown provider \"nowhere\"",
        "bad.toml:9:1: key `agents.family.tools`: unknown tool \"teleport\"",
        "bad.toml:13:1: key `channels.web.agent`: unknown agent profile \"famly\"",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}

#[test]
fn a_chat_routed_to_an_unknown_profile_is_named_by_its_chat_key() {
    let text = "[agents.coder]\nmodels = [\"m\"]\n\n[channels.web]\nkind = \"web\"\nagent = \"coder\"\n\n[channels.web.chats.\"family-42\"]\nagent = \"family\"\n";
    let err = switchboard::config::parse(text, "bad.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bad.toml:9:1: key `channels.web.chats.family-42.agent`: unknown agent profile \"family\""),
        "{err}"
    );
    let good = text.replace("\"family\"", "\"coder\"");
    let config = switchboard::config::parse(&good, "good.toml", &[]).unwrap();
    assert_eq!(config.routing.agent_for("web", "family-42"), "coder");
    assert_eq!(config.routing.agent_for("web", "other"), "coder");
    assert_eq!(config.routing.agent_for("slack", "other"), "default");
}

#[test]
fn a_channel_table_keeps_refusing_unknown_keys_beside_its_agent() {
    let text = "[channels.web]\nkind = \"web\"\nagent = \"default\"\npathh = \"/x\"\n";
    let err = switchboard::config::parse(text, "bad.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("pathh") && err.contains("bad.toml:"), "{err}");
}

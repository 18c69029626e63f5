//! `switchboard check --probe` starts each MCP server once through the sandbox and lists its
//! tools; a server that cannot start is named with the reason.

use switchboard_standins::{FakeLlm, Reply};

use super::{everything_server, everything_table};

#[tokio::test]
async fn check_probe_lists_each_mcp_servers_tools_and_names_the_one_that_fails() {
    let Some(entry) = everything_server() else {
        return;
    };
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("pong"));
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[gateway]\ndata_dir = \"{}\"\n[provider]\nkind = \"openai\"\nbase_url = \"{}\"\n\
         api_key = \"test-key-not-real\"\n{}\
         [mcp.servers.gone]\nurl = \"http://127.0.0.1:9/mcp\"\ntimeout_secs = 3\n",
        dir.path().display(),
        llm.openai_url(),
        everything_table(&entry),
    );
    let file = dir.path().join("probe.toml");
    std::fs::write(&file, text).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["check", "--probe", "--config"])
        .arg(&file)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("probe mcp server everything: ok"),
        "{stdout}"
    );
    assert!(
        stdout.contains("everything__echo (read-only hint)"),
        "{stdout}"
    );
    assert!(stdout.contains("probe mcp server gone: FAILED"), "{stdout}");
    assert_ne!(out.status.code(), Some(0), "{stdout}");
}

#[test]
fn a_bad_mcp_server_table_is_reported_with_file_line_and_key() {
    let text = "[mcp.servers.gh]\nurl = \"ftp://nope\"\ntimeout_secs = 0\n";
    let err = switchboard::config::parse(text, "my.toml", &[]).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("my.toml:2:1: key `mcp.servers.gh.url`"),
        "{msg}"
    );
    assert!(
        msg.contains("my.toml:3:1: key `mcp.servers.gh.timeout_secs`"),
        "{msg}"
    );
    let unknown = switchboard::config::parse("[mcp.servers.x]\ncomand = \"a\"\n", "my.toml", &[]);
    let msg = unknown.unwrap_err().to_string();
    assert!(
        msg.contains("my.toml:2:1: key `mcp.servers.x.comand`"),
        "{msg}"
    );
}

#[test]
fn a_server_whose_script_is_missing_is_warned_about_by_check_and_explained_by_its_probe() {
    if !std::path::Path::new(super::NODE).is_file() {
        eprintln!("SKIPPED: {} is not installed", super::NODE);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[gateway]\ndata_dir = \"{}\"\n[mcp.servers.gone]\ncommand = \"{}\"\n\
         args = [\"/nonexistent/server.js\"]\ntimeout_secs = 10\n",
        dir.path().display(),
        super::NODE,
    );
    let file = dir.path().join("probe.toml");
    std::fs::write(&file, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["check", "--probe", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warning: mcp.servers.gone.args: /nonexistent/server.js does not exist"),
        "{stdout}"
    );
    assert!(stdout.contains("probe mcp server gone: FAILED"), "{stdout}");
    assert!(
        stdout.contains("its stderr ended with:") && stdout.contains("Cannot find module"),
        "the cause, not only the symptom: {stdout}"
    );
}

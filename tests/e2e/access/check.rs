//! The access settings through the real binary: `check` names the line an old open config
//! must add and warns about risky ones; `switchboard access` works on the gateway's database.

use std::process::Command;

use switchboard::store::{self, AccessRole, PairingRequest};

/// Run the binary's subcommand `args[0]` with `--config <file with text>` and the rest of
/// `args`; exit code, stdout, stderr.
fn switchboard(text: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg(args[0])
        .arg("--config")
        .arg(&file)
        .args(&args[1..])
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn an_old_config_letting_everyone_in_fails_check_naming_the_line_to_add() {
    let old = "[channels.tg]\nkind = \"telegram\"\ntoken = \"\"\nallowed_users = [\"*\"]\n";
    let (code, _, stderr) = switchboard(old, &["check"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("old.toml:4:1: key `channels.tg.allowed_users`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("add the line `dm_policy = \"open\"`"),
        "{stderr}"
    );
    let fixed = format!("{old}dm_policy = \"open\"\n[tools]\nenabled = [\"shell\"]\n");
    let (code, stdout, stderr) = switchboard(&fixed, &["check"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("warning: channels.tg: dm_policy = \"open\""),
        "{stdout}"
    );
}

#[tokio::test]
async fn the_access_subcommands_list_and_allow_a_waiting_person_in_the_gateways_database() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("gw.db").display());
    let db = store::connect(&url).await.unwrap();
    let now = switchboard::clock::Clock::wall().now_ms();
    let waiting = PairingRequest {
        channel: "tg".into(),
        user_id: "3003".into(),
        user_name: Some("@mallory".into()),
        code: "QRST2345".into(),
        created_at: now,
        expires_at: now + 3_600_000,
    };
    db.request_pairing(&waiting, 3).await.unwrap();
    let config = format!("[gateway]\ndatabase_url = \"{url}\"\n");
    let (_, pending, _) = switchboard(&config, &["access", "pending"]);
    assert!(
        pending.contains("tg  QRST2345  3003 (@mallory)"),
        "{pending}"
    );
    let (code, allowed, stderr) = switchboard(&config, &["access", "allow", "tg", "qrst2345"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(allowed.starts_with("allowed 3003"), "{allowed}");
    assert!(db.has_grant("tg", "3003", AccessRole::User).await.unwrap());
    let (_, listed, _) = switchboard(&config, &["access", "list"]);
    assert!(listed.contains("tg  3003 (@mallory)  user"), "{listed}");
}

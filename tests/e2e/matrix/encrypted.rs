//! An encrypted direct room: the bot reads and answers end-to-end encrypted messages, and
//! still does after a restart (its device and keys kept in the data directory).

use std::os::unix::fs::PermissionsExt;

use switchboard_standins::Reply;

use super::{dm, synapse, wait_bot};

#[tokio::test]
async fn an_encrypted_dm_is_answered_encrypted_before_and_after_a_restart() {
    let Some(hs) = synapse() else { return };
    let mut t = dm(&hs, true, |_| String::new()).await;
    assert!(t.room.is_encrypted().await.unwrap());
    let me = t.bot.account.id.clone();
    t.app.llm.push(Reply::text("A secret answer."));
    t.alice.say(&t.room, "a secret question").await;
    let seen = wait_bot(&t.room, &me, |s| {
        s.iter().any(|m| m.text == "A secret answer.")
    })
    .await;
    assert!(
        seen.iter().all(|m| m.encrypted),
        "sent encrypted: {seen:#?}"
    );
    let request = t.app.llm.requests().last().unwrap().to_string();
    assert!(
        request.contains("a secret question"),
        "the bot read the decrypted text"
    );

    t.app.restart().await;
    t.app.llm.push(Reply::text("Still secret."));
    t.alice.say(&t.room, "after the restart").await;
    let seen = wait_bot(&t.room, &me, |s| {
        s.iter().any(|m| m.text == "Still secret.")
    })
    .await;
    assert!(seen.iter().all(|m| m.encrypted));
    // One device across the restart (the session was restored, not a new login), and its
    // access token readable by the gateway's user only.
    let devices = t
        .alice
        .client
        .encryption()
        .get_user_devices(&me)
        .await
        .unwrap();
    assert_eq!(devices.devices().count(), 1);
    let session = t
        .app
        .config
        .gateway
        .data_dir
        .join("matrix/matrix/session.json");
    let mode = std::fs::metadata(&session).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", session.display());
}

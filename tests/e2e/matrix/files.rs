//! Files in an encrypted direct room: one the person attaches is downloaded and decrypted
//! after the event is stored, saved in the workspace and described to the model; one the
//! agent sends is uploaded encrypted and arrives byte for byte.

use matrix_sdk::attachment::AttachmentConfig;
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::room::MediaSource;
use serde_json::{Value, json};
use switchboard_standins::Reply;

use super::{dm, synapse, wait_bot};
use crate::attach::{binary_bytes, request_text};

#[tokio::test]
async fn a_file_attached_in_an_encrypted_room_reaches_the_model_and_one_sent_back_arrives_intact() {
    let Some(hs) = synapse() else { return };
    let t = dm(&hs, true, |_| {
        "[tools]\nenabled = [\"send_file\", \"file_read\"]\n[policy]\nmode = \"autonomous\"\n"
            .to_owned()
    })
    .await;
    let me = t.bot.account.id.clone();
    let bytes = binary_bytes();
    t.app.llm.push(Reply::text("Got your file."));
    t.room
        .send_attachment(
            "figures.bin",
            &mime::APPLICATION_OCTET_STREAM,
            bytes.clone(),
            AttachmentConfig::new(),
        )
        .await
        .unwrap();
    wait_bot(&t.room, &me, |s| {
        s.iter().any(|m| m.text == "Got your file.")
    })
    .await;
    let described = request_text(&t.app.llm.requests(), 0);
    let path = described
        .split_whitespace()
        .find(|w| w.contains("inbox/") && w.contains("figures.bin"))
        .map(|w| {
            w.trim_matches(|c: char| {
                !c.is_ascii_alphanumeric()
                    && c != '/'
                    && c != '.'
                    && c != '-'
                    && c != '_'
                    && c != '$'
            })
        })
        .unwrap_or_else(|| panic!("described with its path: {described}"))
        .to_owned();

    t.app
        .llm
        .push(Reply::tool_call(
            "send_file",
            json!({ "path": path, "caption": "Back to you" }),
        ))
        .push(Reply::text("Sent."));
    t.alice.say(&t.room, "send it back").await;
    wait_bot(&t.room, &me, |s| s.iter().any(|m| m.text == "Sent.")).await;
    let mut options = matrix_sdk::room::MessagesOptions::backward();
    options.limit = 50u32.into();
    let page = t.room.messages(options).await.unwrap();
    let file: Value = page
        .chunk
        .iter()
        .filter_map(|e| e.raw().deserialize_as::<Value>().ok())
        .find(|e| e["sender"] == me.as_str() && e["content"]["msgtype"] == "m.file")
        .expect("the bot posted a file");
    let content = &file["content"];
    assert!(
        content.get("file").is_some(),
        "uploaded encrypted: {content}"
    );
    let source = MediaSource::Encrypted(Box::new(
        serde_json::from_value(content["file"].clone()).unwrap(),
    ));
    let got = t
        .alice
        .client
        .media()
        .get_media_content(
            &MediaRequestParameters {
                source,
                format: MediaFormat::File,
            },
            false,
        )
        .await
        .unwrap();
    assert_eq!(got, bytes, "every byte arrived");
}

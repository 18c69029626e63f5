//! Webhook messages of every kind the channel reads, in Meta's shapes, to events.

use serde_json::json;
use switchboard_channel::{AttachmentKind, ChannelEvent};

use super::{Person, Triage, normalise, person};
use crate::payload::{Contact, Message};

fn message(value: serde_json::Value) -> Message {
    serde_json::from_value(value).unwrap()
}

fn contacts(value: serde_json::Value) -> Vec<Contact> {
    serde_json::from_value(value).unwrap()
}

fn someone() -> Person {
    Person {
        chat: "16505551234".into(),
        user: "16505551234".into(),
        name: Some("Sheena".into()),
    }
}

fn deliver(value: serde_json::Value) -> ChannelEvent {
    match normalise("wa", &someone(), message(value), None) {
        Triage::Deliver(event) => *event,
        Triage::Ignore(reason) => panic!("ignored: {reason}"),
    }
}

fn inbound(value: serde_json::Value) -> switchboard_channel::Inbound {
    match deliver(value) {
        ChannelEvent::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    }
}

#[test]
fn a_text_message_is_keyed_by_the_number_and_its_wamid() {
    let m = inbound(
        json!({"from": "16505551234", "id": "wamid.A1", "timestamp": "1749416383",
        "type": "text", "text": {"body": "Does it come in another color?"}}),
    );
    assert_eq!(
        (m.key.channel.as_str(), m.key.chat.as_str()),
        ("wa", "16505551234")
    );
    assert_eq!(m.event_id, "wamid.A1");
    assert_eq!(m.text, "Does it come in another color?");
    assert!(m.place.is_direct());
}

#[test]
fn media_become_attachments_with_their_captions() {
    let voice = inbound(json!({"id": "wamid.V", "type": "audio",
        "audio": {"id": "MEDIA1", "mime_type": "audio/ogg; codecs=opus", "voice": true}}));
    assert_eq!(voice.attachments[0].kind, AttachmentKind::Voice);
    assert_eq!(voice.attachments[0].id, "MEDIA1");
    let image = inbound(json!({"id": "wamid.I", "type": "image",
        "image": {"id": "MEDIA2", "mime_type": "image/jpeg", "caption": "look"}}));
    assert_eq!(
        (image.text.as_str(), image.attachments[0].kind),
        ("look", AttachmentKind::Photo)
    );
    let sticker = inbound(json!({"id": "wamid.S", "type": "sticker",
        "sticker": {"id": "MEDIA3", "mime_type": "image/webp"}}));
    assert_eq!(sticker.attachments[0].kind, AttachmentKind::Photo);
    let doc = inbound(json!({"id": "wamid.D", "type": "document",
        "document": {"id": "MEDIA4", "filename": "report.pdf", "mime_type": "application/pdf"}}));
    assert_eq!(doc.attachments[0].name, "report.pdf");
}

#[test]
fn locations_contacts_and_reactions_are_written_out() {
    let here = inbound(json!({"id": "wamid.L", "type": "location",
        "location": {"latitude": 52.52, "longitude": 13.405, "name": "Alexanderplatz"}}));
    assert!(
        here.text.contains("Alexanderplatz") && here.text.contains("52.520000"),
        "{}",
        here.text
    );
    let card = inbound(json!({"id": "wamid.C", "type": "contacts",
        "contacts": [{"name": {"formatted_name": "Bob B"}, "phones": [{"phone": "+1 555 0100"}]}]}));
    assert_eq!(card.text, "👤 Contact: Bob B +1 555 0100");
    let reaction = inbound(json!({"id": "wamid.R", "type": "reaction",
        "reaction": {"message_id": "wamid.OURS", "emoji": "👍"}}));
    assert!(reaction.text.contains("👍"));
    let removed = normalise(
        "wa",
        &someone(),
        message(json!({"id": "wamid.R2", "type": "reaction",
        "reaction": {"message_id": "wamid.OURS"}})),
        None,
    );
    assert!(matches!(removed, Triage::Ignore(_)));
}

#[test]
fn button_and_list_replies_are_presses_of_our_payload() {
    for (kind, field) in [
        ("button_reply", "button_reply"),
        ("list_reply", "list_reply"),
    ] {
        let event = deliver(json!({"id": "wamid.P", "type": "interactive",
            "context": {"from": "15550783881", "id": "wamid.PROMPT"},
            "interactive": {"type": kind, field: {"id": "approve:42", "title": "Approve once"}}}));
        let ChannelEvent::Button(press) = event else {
            panic!("not a press")
        };
        assert_eq!(press.payload, "approve:42");
        assert_eq!(press.message.unwrap().id, "wamid.PROMPT");
    }
}

#[test]
fn unknown_kinds_are_ignored() {
    let odd = normalise(
        "wa",
        &someone(),
        message(json!({"id": "wamid.U", "type": "unsupported"})),
        None,
    );
    assert!(matches!(odd, Triage::Ignore(_)));
}

#[test]
fn a_person_is_their_number_unless_only_their_user_id_is_allowed() {
    let msg = message(
        json!({"from": "16505551234", "id": "wamid.1", "type": "text", "text": {"body": "hi"}}),
    );
    let both =
        contacts(json!([{"wa_id": "16505551234", "user_id": "US.1349", "profile": {"name": "S"}}]));
    let p = person(&msg, &both, &[]).unwrap();
    assert_eq!(
        (p.chat.as_str(), p.user.as_str()),
        ("16505551234", "16505551234")
    );
    let p = person(&msg, &both, &["US.1349".into()]).unwrap();
    assert_eq!(p.user, "US.1349");
    let hidden = message(
        json!({"from_user_id": "US.1349", "id": "wamid.2", "type": "text", "text": {"body": "hi"}}),
    );
    let only_id = contacts(json!([{"user_id": "US.1349"}]));
    let p = person(&hidden, &only_id, &["16505551234".into()]).unwrap();
    assert_eq!((p.chat.as_str(), p.user.as_str()), ("US.1349", "US.1349"));
    assert!(person(&message(json!({"id": "wamid.3", "type": "text"})), &[], &[]).is_none());
}

#[test]
fn a_reply_to_a_remembered_message_quotes_its_start() {
    let reply = message(
        json!({"id": "wamid.Q", "type": "text", "context": {"id": "wamid.OURS"},
        "text": {"body": "yes, that one"}}),
    );
    let Triage::Deliver(event) =
        normalise("wa", &someone(), reply, Some("Shall I book\nthe 9:00?"))
    else {
        panic!("ignored")
    };
    let ChannelEvent::Message(m) = *event else {
        panic!("not a message")
    };
    assert_eq!(m.text, "> Shall I book\n> the 9:00?\n\nyes, that one");
}

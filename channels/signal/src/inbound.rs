//! One signal-cli envelope → at most one `ChannelEvent`. A DM is its sender's conversation and
//! a group is one conversation. In groups, with `require_mention_in_groups`, only a mention
//! of the bot (a U+FFFC in the text with a range in UTF-16 units naming the account) or a
//! reply to it counts. A reaction to a prompt, or a reply naming one of its choices, is a
//! button press. A quote comes in as a quoted line above the text; files as references
//! fetched later through the daemon. Edits of a person's own message and deletes are
//! remembered, not turns; typing, receipts and sync messages are dropped.

use serde_json::Value;
use switchboard_channel::choices::{self, Choice};
use switchboard_channel::{
    Attachment, AttachmentKind, ButtonPress, ChannelEvent, ConversationKey, Inbound, MessageRef,
    Place, UserRef,
};

use crate::shared::{GROUP, Shared};
use crate::style::utf16_range;

/// The placeholder Signal puts in a text where a mention is shown.
const MENTION: char = '\u{fffc}';

/// What to do with one envelope.
#[derive(Debug)]
pub(crate) enum Triage {
    /// Hand this event to the sink.
    Deliver(Box<ChannelEvent>),
    /// Nothing to store, for this reason (logged at debug).
    Skip(&'static str),
}

/// Who wrote an envelope, and where.
struct Origin {
    user: UserRef,
    key: ConversationKey,
    place: Place,
    event_id: String,
}

impl Shared {
    /// Read one event of the stream (`{"envelope": …, "account": …}`).
    pub(crate) fn read(&self, event: &Value) -> Triage {
        let event = if event["params"].is_object() {
            &event["params"]
        } else {
            event
        };
        let event = if event["result"].is_object() {
            &event["result"]
        } else {
            event
        };
        let envelope = &event["envelope"];
        let number = envelope["sourceNumber"]
            .as_str()
            .or(envelope["source"].as_str());
        let uuid = envelope["sourceUuid"].as_str();
        if number.is_some_and(|n| self.is_bot(n)) || uuid.is_some_and(|u| self.is_bot(u)) {
            return Triage::Skip("the bot's own message");
        }
        let Some(timestamp) = envelope["timestamp"].as_u64() else {
            return Triage::Skip("an envelope without a timestamp");
        };
        let Some(id) = self.user_id(number, uuid) else {
            return Triage::Skip("an envelope without a sender");
        };
        let user = UserRef {
            id: id.clone(),
            name: envelope["sourceName"]
                .as_str()
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
        };
        if envelope["editMessage"].is_object() {
            return self.edit(&id, &envelope["editMessage"]);
        }
        let data = &envelope["dataMessage"];
        if !data.is_object() {
            return Triage::Skip(match () {
                () if envelope["typingMessage"].is_object() => "a typing indicator",
                () if envelope["receiptMessage"].is_object() => "a receipt",
                () if envelope["syncMessage"].is_object() => "a sync message from another device",
                () => "an envelope without a message",
            });
        }
        let (key, place) = match data["groupInfo"]["groupId"].as_str() {
            Some(group) => (
                ConversationKey::new(&self.name, format!("{GROUP}{group}")),
                Place::group(group),
            ),
            None => (ConversationKey::new(&self.name, &id), Place::Direct),
        };
        let origin = Origin {
            event_id: format!("{id}:{timestamp}"),
            user,
            key,
            place,
        };
        self.data(origin, data)
    }

    fn data(&self, origin: Origin, data: &Value) -> Triage {
        if data["groupInfo"]["type"] == "UPDATE" {
            return Triage::Skip("a group update");
        }
        if data["reaction"].is_object() {
            return self.reaction(origin, &data["reaction"]);
        }
        if let Some(target) = data["remoteDelete"]["timestamp"].as_u64() {
            self.forget(&format!("{}:{target}", origin.user.id));
            return Triage::Skip("a delete of an earlier message");
        }
        let quote = &data["quote"];
        let replied_to_bot = quote.is_object()
            && [
                &quote["authorNumber"],
                &quote["authorUuid"],
                &quote["author"],
            ]
            .iter()
            .any(|a| a.as_str().is_some_and(|a| self.is_bot(a)));
        let (text, mentioned) = self.without_mentions(data);
        if replied_to_bot
            && let Some(prompt) = quote["id"].as_u64()
            && let Some(offered) = self.prompts.get(prompt)
            && let Some(choice) = choices::by_reply(&offered, &text)
        {
            return press(origin, choice, prompt);
        }
        let in_group = !origin.place.is_direct();
        if in_group && self.config.require_mention_in_groups && !mentioned && !replied_to_bot {
            return Triage::Skip("a group message that neither mentions nor replies to the bot");
        }
        let attachments = self.attachments(&origin.key, data);
        if text.trim().is_empty() && attachments.is_empty() {
            return Triage::Skip("a message without text or files");
        }
        self.remember(&origin.event_id, &text);
        let text = with_quote(quote, &text, replied_to_bot, self);
        Triage::Deliver(Box::new(ChannelEvent::Message(Inbound {
            key: origin.key,
            event_id: origin.event_id,
            user: origin.user,
            text,
            place: origin.place,
            attachments,
        })))
    }

    /// A reaction to one of the bot's prompts with one of its choices is a press.
    fn reaction(&self, origin: Origin, reaction: &Value) -> Triage {
        if reaction["isRemove"] == true {
            return Triage::Skip("a reaction taken back");
        }
        let to_bot = [
            &reaction["targetAuthorNumber"],
            &reaction["targetAuthorUuid"],
            &reaction["targetAuthor"],
        ]
        .iter()
        .any(|a| a.as_str().is_some_and(|a| self.is_bot(a)));
        let Some(target) = reaction["targetSentTimestamp"].as_u64().filter(|_| to_bot) else {
            return Triage::Skip("a reaction to someone else's message");
        };
        let Some(offered) = self.prompts.get(target) else {
            return Triage::Skip("a reaction to a message that offers no choices");
        };
        match choices::by_reaction(&offered, reaction["emoji"].as_str().unwrap_or_default()) {
            Some(choice) => press(origin, choice, target),
            None => Triage::Skip("a reaction that is none of the offered choices"),
        }
    }

    /// An edit of a person's own message: its new text replaces the remembered one (what a
    /// later quote of it shows); the turn it started is not asked again.
    fn edit(&self, sender: &str, edit: &Value) -> Triage {
        if let Some(target) = edit["targetSentTimestamp"].as_u64()
            && let Some(text) = edit["dataMessage"]["message"].as_str()
        {
            self.remember(&format!("{sender}:{target}"), text);
        }
        Triage::Skip("an edit of an earlier message")
    }

    /// The text with each mention's placeholder replaced by `@name` (the bot's own removed),
    /// and whether the bot was among them.
    fn without_mentions(&self, data: &Value) -> (String, bool) {
        let mut text = data["message"].as_str().unwrap_or_default().to_owned();
        let mut mentions: Vec<&Value> = data["mentions"]
            .as_array()
            .map(|m| m.iter().collect())
            .unwrap_or_default();
        // From the end, so earlier ranges keep their offsets.
        mentions.sort_by_key(|m| std::cmp::Reverse(m["start"].as_u64().unwrap_or(0)));
        let mut mentioned = false;
        for m in mentions {
            let is_bot = [&m["number"], &m["uuid"]]
                .iter()
                .any(|a| a.as_str().is_some_and(|a| self.is_bot(a)));
            mentioned |= is_bot;
            let (Some(start), Some(len)) = (m["start"].as_u64(), m["length"].as_u64()) else {
                continue;
            };
            let Some(range) = utf16_range(&text, start as usize, len as usize) else {
                continue;
            };
            if !text[range.clone()].contains(MENTION) {
                continue;
            }
            let name = m["name"]
                .as_str()
                .or(m["number"].as_str())
                .unwrap_or("someone");
            let with = if is_bot {
                String::new()
            } else {
                format!("@{name}")
            };
            text.replace_range(range, &with);
        }
        // A removed mention leaves two spaces (or one at the start); line breaks stay.
        while text.contains("  ") {
            text = text.replace("  ", " ");
        }
        (text.trim().to_owned(), mentioned)
    }

    fn attachments(&self, key: &ConversationKey, data: &Value) -> Vec<Attachment> {
        let Some(list) = data["attachments"].as_array() else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|a| {
                let id = a["id"].as_str()?;
                let mime = a["contentType"].as_str().map(str::to_owned);
                let kind = match mime.as_deref() {
                    Some(m) if m.starts_with("image/") => AttachmentKind::Photo,
                    Some(m) if m.starts_with("audio/") && a["filename"].is_null() => {
                        AttachmentKind::Voice
                    }
                    Some(m) if m.starts_with("audio/") => AttachmentKind::Audio,
                    _ => AttachmentKind::Document,
                };
                Some(Attachment {
                    kind,
                    id: format!("{}|{id}", key.chat),
                    url: None,
                    name: a["filename"].as_str().unwrap_or(id).to_owned(),
                    mime,
                    size: a["size"].as_u64(),
                })
            })
            .collect()
    }
}

fn press(origin: Origin, choice: &Choice, prompt: u64) -> Triage {
    Triage::Deliver(Box::new(ChannelEvent::Button(ButtonPress {
        key: origin.key,
        event_id: origin.event_id,
        user: origin.user,
        payload: choice.payload.clone(),
        message: Some(MessageRef::new(prompt.to_string())),
        reply_token: None,
        place: origin.place,
    })))
}

/// The text with the message it quotes above it, as a quoted line (the bot's own messages
/// are already in the conversation's history and are not repeated).
fn with_quote(quote: &Value, text: &str, to_bot: bool, shared: &Shared) -> String {
    if !quote.is_object() || to_bot {
        return text.to_owned();
    }
    let author = quote["authorNumber"]
        .as_str()
        .or(quote["authorUuid"].as_str())
        .unwrap_or_default();
    let remembered = quote["id"]
        .as_u64()
        .and_then(|id| shared.recalled(&format!("{author}:{id}")));
    let quoted = remembered
        .or_else(|| quote["text"].as_str().map(str::to_owned))
        .unwrap_or_default();
    if quoted.trim().is_empty() {
        return text.to_owned();
    }
    let quoted: Vec<String> = quoted.lines().map(|l| format!("> {l}")).collect();
    format!("{}\n\n{text}", quoted.join("\n"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchboard_channel::Button;

    use super::*;
    use crate::config::SignalConfig;

    const BOT: &str = "+15550100000";
    const ALICE: &str = "+15550200001";

    fn shared(dir: &std::path::Path) -> Shared {
        Shared::for_tests(SignalConfig::new(BOT), dir)
    }

    fn envelope(data: Value) -> Value {
        json!({ "account": BOT, "envelope": { "sourceNumber": ALICE, "sourceUuid": "00000000-0000-4000-8000-000000000001",
            "sourceName": "Alice", "timestamp": 1000, "dataMessage": data } })
    }

    fn message(triage: Triage) -> Inbound {
        match triage {
            Triage::Deliver(event) => match *event {
                ChannelEvent::Message(m) => m,
                other => panic!("not a message: {other:?}"),
            },
            Triage::Skip(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn a_mention_after_an_emoji_is_found_by_its_utf16_range_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(dir.path());
        // "🎉 " is three UTF-16 units: the placeholder starts at 3.
        let data = json!({ "message": "🎉 \u{fffc} hi \u{fffc}!", "timestamp": 1000,
            "groupInfo": { "groupId": "R3JvdXA=", "type": "DELIVER" },
            "mentions": [ { "start": 3, "length": 1, "number": BOT },
                          { "start": 8, "length": 1, "number": "+15550200002", "name": "Bob" } ] });
        let m = message(s.read(&envelope(data)));
        assert_eq!(m.text, "🎉 hi @Bob!");
        assert_eq!(m.key.chat, "group.R3JvdXA=");
        assert_eq!(m.event_id, format!("{ALICE}:1000"));
        assert!(!m.place.is_direct());
    }

    #[test]
    fn a_mention_or_a_quote_naming_the_bot_by_its_aci_alone_counts_once_the_aci_is_known() {
        const BOT_ACI: &str = "00000000-0000-4000-8000-00000000b07a";
        let dir = tempfile::tempdir().unwrap();
        let s = shared(dir.path());
        let group = json!({ "groupId": "R3JvdXA=", "type": "DELIVER" });
        let mention = json!({ "message": "\u{fffc} hi", "groupInfo": group,
            "mentions": [ { "start": 0, "length": 1, "uuid": BOT_ACI } ] });
        let reply = json!({ "message": "and then?", "groupInfo": group,
            "quote": { "id": 7, "authorUuid": BOT_ACI, "text": "…" } });
        assert!(matches!(
            s.read(&envelope(mention.clone())),
            Triage::Skip(_)
        ));
        s.set_aci(BOT_ACI);
        assert_eq!(message(s.read(&envelope(mention))).text, "hi");
        assert_eq!(message(s.read(&envelope(reply))).key.chat, "group.R3JvdXA=");
    }

    #[test]
    fn group_chatter_without_a_mention_is_skipped_and_a_dm_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(dir.path());
        let chatter = json!({ "message": "lunch?", "groupInfo": { "groupId": "R3JvdXA=", "type": "DELIVER" } });
        assert!(matches!(s.read(&envelope(chatter)), Triage::Skip(_)));
        let dm = message(s.read(&envelope(json!({ "message": "hello" }))));
        assert_eq!((dm.key.chat.as_str(), dm.text.as_str()), (ALICE, "hello"));
    }

    #[test]
    fn a_reaction_or_a_reply_to_a_prompt_presses_its_choice_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(dir.path());
        let buttons: Vec<Button> = ["Approve once", "Always allow", "Deny"]
            .iter()
            .map(|l| Button {
                label: (*l).into(),
                payload: format!("p:{l}"),
            })
            .collect();
        s.prompts.insert(555, choices::choices(&buttons));
        let react = |emoji: &str, target: u64| json!({ "reaction": { "emoji": emoji, "targetAuthorNumber": BOT, "targetSentTimestamp": target, "isRemove": false } });
        let Triage::Deliver(event) = s.read(&envelope(react("❌", 555))) else {
            panic!("no press")
        };
        assert!(matches!(*event, ChannelEvent::Button(ref b) if b.payload == "p:Deny"));
        assert!(matches!(
            s.read(&envelope(react("👍", 555))),
            Triage::Skip(_)
        ));
        assert!(matches!(
            s.read(&envelope(react("❌", 556))),
            Triage::Skip(_)
        ));
        let reply = json!({ "message": "always", "quote": { "id": 555, "authorNumber": BOT, "text": "…" } });
        let Triage::Deliver(event) = s.read(&envelope(reply)) else {
            panic!("no press")
        };
        assert!(matches!(*event, ChannelEvent::Button(ref b) if b.payload == "p:Always allow"));
    }

    #[test]
    fn edits_deletes_typing_receipts_and_the_bots_own_messages_are_no_turns() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(dir.path());
        let mut edit = envelope(Value::Null);
        edit["envelope"]["editMessage"] =
            json!({ "targetSentTimestamp": 900, "dataMessage": { "message": "fixed" } });
        assert!(matches!(s.read(&edit), Triage::Skip(_)));
        assert_eq!(
            s.recalled(&format!("{ALICE}:900")).as_deref(),
            Some("fixed")
        );
        assert!(matches!(
            s.read(&envelope(json!({ "remoteDelete": { "timestamp": 900 } }))),
            Triage::Skip(_)
        ));
        assert_eq!(s.recalled(&format!("{ALICE}:900")), None);
        for kind in ["typingMessage", "receiptMessage", "syncMessage"] {
            let mut e = envelope(Value::Null);
            e["envelope"][kind] = json!({});
            assert!(matches!(s.read(&e), Triage::Skip(_)), "{kind}");
        }
        let mut own = envelope(json!({ "message": "echo" }));
        own["envelope"]["sourceNumber"] = json!(BOT);
        assert!(matches!(s.read(&own), Triage::Skip(_)));
    }
}

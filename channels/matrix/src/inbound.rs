//! Inbound edge: one timeline event from `/sync` (already decrypted by the SDK in an
//! encrypted room) becomes at most one `ChannelEvent`, or is skipped. A message is the
//! person's text and files; a reaction to one of the bot's prompts, or a reply naming one of
//! its choices, is a button press. In rooms with more people only what mentions the bot,
//! replies to it, or goes on in a thread it answers in is delivered.
//!
//! Events are read from their JSON rather than the SDK's typed events: a bot needs a dozen
//! fields, and reading them by name keeps unknown message types a skip, never an error.

use matrix_sdk::Room;
use matrix_sdk::ruma::EventId;
use serde_json::Value;
use switchboard_channel::{
    Attachment, AttachmentKind, ButtonPress, ChannelEvent, ConversationKey, EventSink, Inbound,
    MessageRef, Place, UserRef,
};

use crate::choices::{self, Choice, FIELD};
use crate::client::Client;

/// What becomes of one timeline event.
#[derive(Debug)]
pub(crate) enum Triage {
    Deliver(Box<ChannelEvent>),
    Skip(&'static str),
}

/// Reads one room's events for one sync batch.
pub(crate) struct Reader<'a> {
    pub(crate) client: &'a Client,
    pub(crate) sink: &'a dyn EventSink,
    pub(crate) room: &'a Room,
    pub(crate) place: Place,
}

impl Reader<'_> {
    pub(crate) async fn read(&self, event: &Value) -> Triage {
        let Some(sender) = event["sender"].as_str() else {
            return Triage::Skip("an event without a sender");
        };
        if sender == self.client.user_id.as_str() {
            return Triage::Skip("the bot's own event");
        }
        let Some(event_id) = event["event_id"].as_str() else {
            return Triage::Skip("an event without an id");
        };
        match event["type"].as_str() {
            Some("m.room.message") => self.message(event, event_id, sender).await,
            Some("m.reaction") => self.reaction(event, event_id, sender).await,
            Some("m.room.encrypted") => {
                tracing::warn!(channel = %self.client.name, room = %self.room.room_id(), event_id, "could not decrypt a message (the sender's device did not share its key with the bot's)");
                Triage::Skip("a message the bot cannot decrypt")
            }
            _ => Triage::Skip("an event kind the gateway does not handle"),
        }
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one message event read in the order Matrix nests it: relation, thread, reply, mentions, body"
    )]
    async fn message(&self, event: &Value, event_id: &str, sender: &str) -> Triage {
        let content = &event["content"];
        let relates = &content["m.relates_to"];
        if relates["rel_type"] == "m.replace" {
            return Triage::Skip("an edit of an earlier message");
        }
        let msgtype = content["msgtype"].as_str().unwrap_or_default();
        if msgtype == "m.notice" {
            return Triage::Skip("a notice (bots write notices)");
        }
        let thread = (relates["rel_type"] == "m.thread")
            .then(|| relates["event_id"].as_str())
            .flatten();
        // In a thread, a reply that only falls back to the latest message is no reply.
        let replied = relates["m.in_reply_to"]["event_id"]
            .as_str()
            .filter(|_| relates["is_falling_back"] != true);
        let body = strip_reply_fallback(content["body"].as_str().unwrap_or_default(), replied);
        let attachments = attachment(content, event_id)
            .into_iter()
            .collect::<Vec<_>>();
        let text = if attachments.is_empty() {
            match msgtype {
                "m.text" | "m.emote" => body.trim().to_owned(),
                _ => return Triage::Skip("a message type the gateway does not handle"),
            }
        } else {
            caption(content).unwrap_or_default()
        };
        if text.is_empty() && attachments.is_empty() {
            return Triage::Skip("a message without text");
        }
        let mut key = ConversationKey::new(&self.client.name, self.room.room_id().as_str());
        if let Some(root) = thread {
            key = key.in_thread(root);
        }
        let mut to_bot = false;
        if let Some(replied) = replied.and_then(|id| EventId::parse(id).ok())
            && let Some((offered, prompt_key)) = self.bot_message(&replied).await
        {
            to_bot = true;
            if let Some(choice) = choices::by_reply(&offered, &text) {
                return self
                    .press(prompt_key, event_id, sender, choice, &replied)
                    .await;
            }
        }
        let addressed = self.place.is_direct()
            || !self.client.config.require_mention_in_groups
            || self
                .client
                .config
                .always_on_rooms
                .iter()
                .any(|r| r == self.room.room_id().as_str())
            || to_bot
            || self.mentions_bot(content, &body)
            || (thread.is_some() && self.sink.knows_conversation(&key).await.unwrap_or(false));
        if !addressed {
            return Triage::Skip("a room message not addressed to the bot");
        }
        Triage::Deliver(Box::new(ChannelEvent::Message(Inbound {
            key,
            event_id: event_id.to_owned(),
            user: self.user(sender).await,
            text,
            place: self.place.clone(),
            attachments,
        })))
    }

    async fn reaction(&self, event: &Value, event_id: &str, sender: &str) -> Triage {
        let relates = &event["content"]["m.relates_to"];
        let (Some("m.annotation"), Some(target), Some(key)) = (
            relates["rel_type"].as_str(),
            relates["event_id"]
                .as_str()
                .and_then(|id| EventId::parse(id).ok()),
            relates["key"].as_str(),
        ) else {
            return Triage::Skip("a reaction without a target");
        };
        let Some((prompt, prompt_key)) = self
            .bot_message(&target)
            .await
            .filter(|(offered, _)| !offered.is_empty())
        else {
            return Triage::Skip("a reaction to a message that offers no choices");
        };
        match choices::by_reaction(&prompt, key) {
            Some(choice) => {
                self.press(prompt_key, event_id, sender, choice, &target)
                    .await
            }
            None => Triage::Skip("a reaction that is none of the offered choices"),
        }
    }

    async fn press(
        &self,
        key: ConversationKey,
        event_id: &str,
        sender: &str,
        choice: &Choice,
        prompt: &EventId,
    ) -> Triage {
        Triage::Deliver(Box::new(ChannelEvent::Button(ButtonPress {
            key,
            event_id: event_id.to_owned(),
            user: self.user(sender).await,
            payload: choice.payload.clone(),
            message: Some(MessageRef::new(prompt.as_str())),
            reply_token: None,
            place: self.place.clone(),
        })))
    }

    /// When `target` is the bot's own message: the choices it offers (often none) and its
    /// conversation, from memory or read back from the room (after a restart).
    async fn bot_message(&self, target: &EventId) -> Option<(Vec<Choice>, ConversationKey)> {
        let room_key = ConversationKey::new(&self.client.name, self.room.room_id().as_str());
        if let Some(known) = self.client.with_prompts(|p| p.get(target.as_str())) {
            let key = match known.thread {
                Some(thread) => room_key.in_thread(thread),
                None => room_key,
            };
            return Some((known.choices, key));
        }
        let fetched = match self.room.event(target, None).await {
            Ok(fetched) => fetched,
            Err(err) => {
                tracing::debug!(channel = %self.client.name, %target, error = %err, "could not fetch the event a reaction or reply points at");
                return None;
            }
        };
        let event: Value = fetched.raw().deserialize_as().ok()?;
        if event["sender"].as_str() != Some(self.client.user_id.as_str()) {
            return None;
        }
        let content = &event["content"];
        let offered: Vec<Choice> =
            serde_json::from_value(content[FIELD].clone()).unwrap_or_default();
        let relates = &content["m.relates_to"];
        let key = match (relates["rel_type"] == "m.thread")
            .then(|| relates["event_id"].as_str())
            .flatten()
        {
            Some(thread) => room_key.in_thread(thread),
            None => room_key,
        };
        Some((offered, key))
    }

    fn mentions_bot(&self, content: &Value, body: &str) -> bool {
        let me = self.client.user_id.as_str();
        let listed = content["m.mentions"]["user_ids"]
            .as_array()
            .is_some_and(|ids| ids.iter().any(|id| id == me));
        let linked = content["formatted_body"]
            .as_str()
            .is_some_and(|html| html.contains(&format!("matrix.to/#/{me}")));
        let local = self.client.user_id.localpart().to_lowercase();
        let lower = body.to_lowercase();
        listed
            || linked
            || lower.contains(&me.to_lowercase())
            || lower.starts_with(&format!("{local}:"))
            || lower.starts_with(&format!("{local},"))
    }

    async fn user(&self, sender: &str) -> UserRef {
        let name = match sender.try_into() {
            Ok(id) => self
                .room
                .get_member_no_sync(id)
                .await
                .ok()
                .flatten()
                .and_then(|m| m.display_name().map(str::to_owned)),
            Err(_) => None,
        };
        UserRef {
            id: sender.to_owned(),
            name,
        }
    }
}

/// Old clients quote the message they answer (`> <@a:b> text` lines, then a blank line)
/// before the reply itself; the quote is not what the person wrote now.
fn strip_reply_fallback(body: &str, replied: Option<&str>) -> String {
    if replied.is_none() || !body.starts_with("> ") {
        return body.to_owned();
    }
    let mut lines = body.lines();
    for line in lines.by_ref() {
        if !line.starts_with('>') {
            break;
        }
    }
    lines.collect::<Vec<_>>().join("\n")
}

/// A file message's attachment. Its `id` is what `download` needs: the `mxc://` URI of a
/// plain file, or the JSON of an encrypted one's `file` (URI, key and hashes), which the SDK
/// decrypts with.
fn attachment(content: &Value, event_id: &str) -> Option<Attachment> {
    let kind = match content["msgtype"].as_str()? {
        "m.image" => AttachmentKind::Photo,
        "m.audio" if content.get("org.matrix.msc3245.voice").is_some() => AttachmentKind::Voice,
        "m.audio" => AttachmentKind::Audio,
        "m.file" | "m.video" => AttachmentKind::Document,
        _ => return None,
    };
    let id = match (content["url"].as_str(), content.get("file")) {
        (Some(url), _) => url.to_owned(),
        (None, Some(file)) if file.is_object() => file.to_string(),
        _ => return None,
    };
    let name = content["filename"]
        .as_str()
        .or_else(|| content["body"].as_str())
        .filter(|n| !n.trim().is_empty())
        .map_or_else(|| format!("{}-{event_id}", kind.as_str()), str::to_owned);
    Some(Attachment {
        kind,
        id,
        url: None,
        name,
        mime: content["info"]["mimetype"].as_str().map(str::to_owned),
        size: content["info"]["size"].as_u64(),
    })
}

/// The text sent with a file: `body` when a separate `filename` names the file.
fn caption(content: &Value) -> Option<String> {
    let filename = content["filename"].as_str()?;
    let body = content["body"].as_str()?.trim();
    (body != filename && !body.is_empty()).then(|| body.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_quoted_reply_fallback_is_dropped() {
        let body = "> <@alice:example.org> earlier\n> more\n\nnow this";
        assert_eq!(strip_reply_fallback(body, Some("$e")), "now this");
        assert_eq!(strip_reply_fallback(body, None), body);
        assert_eq!(strip_reply_fallback("plain", Some("$e")), "plain");
    }

    #[test]
    fn plain_and_encrypted_files_carry_what_download_needs() {
        let plain = json!({"msgtype": "m.file", "body": "notes.csv", "url": "mxc://hs/abc",
                           "info": {"mimetype": "text/csv", "size": 12}});
        let a = attachment(&plain, "$e").unwrap();
        assert_eq!(
            (a.kind, a.id.as_str(), a.name.as_str()),
            (AttachmentKind::Document, "mxc://hs/abc", "notes.csv")
        );
        assert_eq!((a.mime.as_deref(), a.size), (Some("text/csv"), Some(12)));
        let encrypted = json!({"msgtype": "m.image", "body": "cat.png", "filename": "cat.png",
                               "file": {"url": "mxc://hs/def", "key": {"k": "x"}}});
        let a = attachment(&encrypted, "$e").unwrap();
        assert_eq!(a.kind, AttachmentKind::Photo);
        assert!(a.id.starts_with('{') && a.id.contains("mxc://hs/def"));
        let voice = json!({"msgtype": "m.audio", "body": "", "url": "mxc://hs/v",
                           "org.matrix.msc3245.voice": {}});
        let a = attachment(&voice, "$v").unwrap();
        assert_eq!(
            (a.kind, a.name.as_str()),
            (AttachmentKind::Voice, "voice-$v")
        );
        assert!(attachment(&json!({"msgtype": "m.text", "body": "hi"}), "$e").is_none());
    }

    #[test]
    fn a_caption_is_the_body_only_when_a_filename_is_separate() {
        assert_eq!(
            caption(&json!({"body": "look at this", "filename": "a.png"})).as_deref(),
            Some("look at this")
        );
        assert_eq!(
            caption(&json!({"body": "a.png", "filename": "a.png"})),
            None
        );
        assert_eq!(caption(&json!({"body": "a.png"})), None);
    }
}

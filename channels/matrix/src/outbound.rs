//! Outbound: messages as `m.text` with the markdown as `body` and its HTML rendering as
//! `formatted_body`; a streamed answer grows by `m.replace` edits; deletes are redactions;
//! files go through the SDK's attachment upload (encrypted in encrypted rooms). Every
//! message sets an empty `m.mentions`, so nothing the model writes pings anyone.

use matrix_sdk::attachment::{AttachmentConfig, AttachmentInfo, BaseAudioInfo};
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::api::client::relations::get_relating_events_with_rel_type;
use matrix_sdk::ruma::events::relation::RelationType;
use matrix_sdk::ruma::events::room::{EncryptedFile, MediaSource};
use matrix_sdk::ruma::{EventId, OwnedMxcUri};
use serde_json::{Value, json};
use switchboard_channel::{
    Attachment, ChannelError, ConversationKey, FileError, MessageRef, Outbound, OutboundFile,
    Target, VoiceNote, human_size, render,
};

use crate::choices::{self, Choice, FIELD};
use crate::client::{Client, Prompt};
use crate::errors::from_sdk;

impl Client {
    pub(crate) async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let room = self.room(key).await?;
        let offered = choices::choices(&msg.buttons);
        let mut content = message(&msg.text, &offered);
        in_thread(&mut content, key);
        let sent = room
            .send_raw("m.room.message", content)
            .await
            .map_err(|e| from_sdk(&e))?;
        let id = sent.event_id.to_string();
        // Remembered with or without choices, so an edit knows what it replaces.
        let reactions = self.react(&room, &sent.event_id, &offered).await;
        self.with_prompts(|p| {
            p.insert(
                id.clone(),
                Prompt {
                    thread: key.thread.clone(),
                    choices: offered,
                    reactions,
                },
            );
        });
        Ok(MessageRef::new(id))
    }

    /// A notice to `to` about `about` (a prompt): what a platform with private answers shows
    /// only to them. Matrix has none, so it is a reply in a thread under the prompt (or in
    /// the prompt's own thread), addressed so it reaches them and stays out of the room.
    pub(crate) async fn notice(
        &self,
        key: &ConversationKey,
        about: Option<&str>,
        to: &str,
        text: &str,
    ) -> Result<(), ChannelError> {
        let room = self.room(key).await?;
        let mut content = json!({
            "msgtype": "m.notice",
            "body": format!("{to}: {text}"),
            "format": "org.matrix.custom.html",
            "formatted_body": render(&format!("{to}: {text}"), Target::MatrixHtml),
            "m.mentions": { "user_ids": [to] },
        });
        match (&key.thread, about) {
            (None, Some(prompt)) => in_thread(&mut content, &key.clone().in_thread(prompt)),
            _ => in_thread(&mut content, key),
        }
        room.send_raw("m.room.message", content)
            .await
            .map(|_| ())
            .map_err(|e| from_sdk(&e))
    }

    pub(crate) async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        let room = self.room(key).await?;
        let target = parse_event_id(&msg_ref.id)?;
        let offered = choices::choices(&msg.buttons);
        let new_content = message(&msg.text, &offered);
        // Clients that know edits show `m.new_content`; the rest show the fallback body.
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {}", new_content["body"].as_str().unwrap_or_default()),
            "m.mentions": {},
            "m.new_content": new_content,
            "m.relates_to": { "rel_type": "m.replace", "event_id": target },
        });
        room.send_raw("m.room.message", content)
            .await
            .map_err(|e| from_sdk(&e))?;
        let before = match self.with_prompts(|p| p.get(&msg_ref.id)) {
            Some(before) => before,
            // Posted before a restart: its reactions are read back once.
            None => Prompt {
                thread: key.thread.clone(),
                choices: Vec::new(),
                reactions: self.own_reactions(&room, &target).await,
            },
        };
        // After a restart the old choices are unknown, but reactions are only ever put
        // under choices: with none offered now, they go.
        let unchanged =
            offered == before.choices && (!offered.is_empty() || before.reactions.is_empty());
        let reactions = if unchanged {
            before.reactions
        } else {
            // The choices changed (or went): so go the bot's reactions that offered them.
            for reaction in before
                .reactions
                .iter()
                .filter_map(|r| EventId::parse(r).ok())
            {
                if let Err(err) = room.redact(&reaction, None, None).await {
                    tracing::debug!(channel = %self.name, error = %err, "could not remove the bot's reaction");
                }
            }
            self.react(&room, &target, &offered).await
        };
        self.with_prompts(|p| {
            p.insert(
                msg_ref.id.clone(),
                Prompt {
                    thread: key.thread.clone(),
                    choices: offered,
                    reactions,
                },
            );
        });
        Ok(())
    }

    pub(crate) async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        let room = self.room(key).await?;
        let target = parse_event_id(&msg_ref.id)?;
        room.redact(&target, None, None)
            .await
            .map(|_| ())
            .map_err(|e| crate::errors::from_http(&e))
    }

    pub(crate) async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        let room = self.room(key).await?;
        room.typing_notice(true).await.map_err(|e| from_sdk(&e))
    }

    /// The ids of the reactions the bot put under `target` (an empty list when it cannot
    /// tell: its reactions then stay).
    async fn own_reactions(&self, room: &matrix_sdk::Room, target: &EventId) -> Vec<String> {
        let request = get_relating_events_with_rel_type::v1::Request::new(
            room.room_id().to_owned(),
            target.to_owned(),
            RelationType::Annotation,
        );
        let Ok(sdk) = self.sdk().await else {
            return Vec::new();
        };
        match sdk.send(request).await {
            Ok(response) => response
                .chunk
                .iter()
                .filter_map(|raw| raw.deserialize_as::<Value>().ok())
                .filter(|event| event["sender"] == self.user_id.as_str())
                .filter_map(|event| event["event_id"].as_str().map(str::to_owned))
                .collect(),
            Err(err) => {
                tracing::debug!(channel = %self.name, error = %err, "could not read the bot's reactions");
                Vec::new()
            }
        }
    }

    /// Put each choice's emoji under `target` so the person presses with one tap. Best
    /// effort: a reaction that fails leaves the choice in the text line.
    async fn react(
        &self,
        room: &matrix_sdk::Room,
        target: &EventId,
        offered: &[Choice],
    ) -> Vec<String> {
        let mut ids = Vec::new();
        for choice in offered {
            let content = json!({
                "m.relates_to": { "rel_type": "m.annotation", "event_id": target, "key": choice.key },
            });
            match room.send_raw("m.reaction", content).await {
                Ok(sent) => ids.push(sent.event_id.to_string()),
                Err(err) => {
                    tracing::debug!(channel = %self.name, error = %err, "could not add a choice's reaction");
                }
            }
        }
        ids
    }

    pub(crate) async fn download(
        &self,
        file: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, FileError> {
        if let Some(size) = file.size.filter(|s| *s > max_bytes) {
            tracing::debug!(channel = %self.name, file = %file.name, size, "a Matrix file over the limit");
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        let source = if file.id.starts_with("mxc://") {
            MediaSource::Plain(OwnedMxcUri::from(file.id.as_str()))
        } else {
            let encrypted: EncryptedFile = serde_json::from_str(&file.id)
                .map_err(|e| FileError::Gone(format!("unreadable file reference: {e}")))?;
            MediaSource::Encrypted(Box::new(encrypted))
        };
        let sdk = self
            .sdk()
            .await
            .map_err(|e| FileError::Transient(e.to_string()))?;
        let request = MediaRequestParameters {
            source,
            format: MediaFormat::File,
        };
        let bytes = sdk
            .media()
            .get_media_content(&request, false)
            .await
            .map_err(|e| FileError::Transient(format!("downloading {}: {e}", file.name)))?;
        if bytes.len() as u64 > max_bytes {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        tracing::debug!(channel = %self.name, file = %file.name, size = %human_size(bytes.len() as u64), "downloaded a Matrix file");
        Ok(bytes)
    }

    pub(crate) async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        let room = self
            .room(key)
            .await
            .map_err(|e| FileError::Fatal(e.to_string()))?;
        let mime: mime::Mime = file
            .mime
            .as_deref()
            .and_then(|m| m.parse().ok())
            .unwrap_or(mime::APPLICATION_OCTET_STREAM);
        let caption = (!file.caption.trim().is_empty()).then(|| file.caption.clone());
        let sent = room
            .send_attachment(
                &file.name,
                &mime,
                file.bytes.clone(),
                AttachmentConfig::new().caption(caption),
            )
            .await
            .map_err(|e| FileError::Transient(format!("uploading {}: {e}", file.name)))?;
        Ok(MessageRef::new(sent.event_id.to_string()))
    }

    /// Post `voice` in `key` as a voice message: `m.audio` with the voice flag
    /// (`org.matrix.msc3245.voice`), its duration and waveform (`org.matrix.msc1767.audio`,
    /// values up to 1024), encrypted like any attachment in an encrypted room.
    pub(crate) async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        let room = self
            .room(key)
            .await
            .map_err(|e| FileError::Fatal(e.to_string()))?;
        let mime: mime::Mime = VoiceNote::MIME
            .parse()
            .map_err(|e| FileError::Fatal(format!("{e}")))?;
        let info = AttachmentInfo::Voice {
            audio_info: BaseAudioInfo {
                duration: Some(std::time::Duration::from_millis(voice.duration_ms)),
                size: matrix_sdk::ruma::UInt::new(voice.bytes.len() as u64),
            },
            waveform: Some(voice.waveform.iter().map(|v| u16::from(*v) * 4).collect()),
        };
        let sent = room
            .send_attachment(
                VoiceNote::NAME,
                &mime,
                voice.bytes.clone(),
                AttachmentConfig::new().info(info),
            )
            .await
            .map_err(|e| FileError::Transient(format!("uploading the voice note: {e}")))?;
        Ok(MessageRef::new(sent.event_id.to_string()))
    }
}

/// A message's content: the markdown as `body`, its HTML as `formatted_body`, and the
/// choices (with their line under the text) when it offers any.
fn message(markdown: &str, offered: &[Choice]) -> Value {
    let text = if offered.is_empty() {
        markdown.to_owned()
    } else {
        format!("{markdown}\n\n{}", choices::hint(offered))
    };
    let mut content = json!({
        "msgtype": "m.text",
        "body": text,
        "format": "org.matrix.custom.html",
        "formatted_body": render(&text, Target::MatrixHtml),
        "m.mentions": {},
    });
    if !offered.is_empty() {
        content[FIELD] = json!(offered);
    }
    content
}

/// Put `content` in `key`'s thread, when it has one.
fn in_thread(content: &mut Value, key: &ConversationKey) {
    if let Some(thread) = &key.thread {
        content["m.relates_to"] = json!({
            "rel_type": "m.thread",
            "event_id": thread,
            "is_falling_back": true,
            "m.in_reply_to": { "event_id": thread },
        });
    }
}

fn parse_event_id(id: &str) -> Result<matrix_sdk::ruma::OwnedEventId, ChannelError> {
    EventId::parse(id).map_err(|_| ChannelError::NotFound(format!("{id} is not a Matrix event id")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_channel::Button;

    #[test]
    fn a_message_carries_markdown_html_no_mentions_and_its_choices() {
        let plain = message("**hi** @room", &[]);
        assert_eq!(plain["body"], "**hi** @room");
        assert!(
            plain["formatted_body"]
                .as_str()
                .unwrap()
                .contains("<strong>hi</strong>")
        );
        assert_eq!(plain["m.mentions"], json!({}));
        assert!(plain.get(FIELD).is_none());
        let offered = choices::choices(&[Button {
            label: "Deny".into(),
            payload: "ap:x:d".into(),
        }]);
        let prompt = message("Run it?", &offered);
        assert!(
            prompt["body"]
                .as_str()
                .unwrap()
                .ends_with("React with ❌ Deny — or reply with one.")
        );
        assert_eq!(prompt[FIELD][0]["payload"], "ap:x:d");
    }

    #[test]
    fn raw_html_from_the_model_is_text() {
        let content = message("<img src=x onerror=alert(1)>", &[]);
        assert!(!content["formatted_body"].as_str().unwrap().contains("<img"));
    }
}

//! What a test makes "happen" on the fake Telegram: users, their messages (private, group,
//! forum topic, replies, captions) and button clicks, built as the Bot API's JSON updates.

use serde_json::{Value, json};

use super::{FAKE_BOT_ID, FAKE_BOT_USERNAME};

/// A Telegram account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeUser {
    /// Numeric user id.
    pub id: u64,
    /// Username without `@`, if the account has one.
    pub username: Option<String>,
    /// First name.
    pub first_name: String,
    /// Whether the account is a bot.
    pub is_bot: bool,
}

impl FakeUser {
    /// A person with a username.
    pub fn human(id: u64, username: &str) -> Self {
        Self {
            id,
            username: Some(username.to_owned()),
            first_name: username.to_owned(),
            is_bot: false,
        }
    }

    /// A person without a username.
    pub fn anonymous(id: u64, first_name: &str) -> Self {
        Self {
            id,
            username: None,
            first_name: first_name.to_owned(),
            is_bot: false,
        }
    }

    /// Some other bot.
    pub fn bot(id: u64, username: &str) -> Self {
        Self {
            is_bot: true,
            ..Self::human(id, username)
        }
    }

    /// The bot the fake serves (`getMe`).
    pub fn the_bot() -> Self {
        Self::bot(FAKE_BOT_ID, FAKE_BOT_USERNAME)
    }

    /// The Bot API `User` object.
    pub fn to_json(&self) -> Value {
        let mut user =
            json!({ "id": self.id, "is_bot": self.is_bot, "first_name": self.first_name });
        if let Some(username) = &self.username {
            user["username"] = json!(username);
        }
        user
    }
}

/// Where a message is posted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatSpec {
    /// The one-to-one chat with the sender (chat id = user id).
    Private,
    /// A basic group.
    Group(i64),
    /// A supergroup; `forum` when it has topics.
    Supergroup {
        /// Chat id (`-100…`).
        id: i64,
        /// Whether topics are on.
        forum: bool,
    },
}

/// A message a user sends, built step by step.
#[derive(Clone, Debug)]
pub struct UserMessage {
    /// Who sends it.
    pub from: FakeUser,
    /// Where.
    pub chat: ChatSpec,
    /// Text (or caption).
    pub text: String,
    /// Send `text` as a photo caption instead of a text message.
    pub as_caption: bool,
    /// Forum topic id and the account that created the topic.
    pub topic: Option<(i32, FakeUser)>,
    /// The message replied to: its id and author.
    pub reply_to: Option<(i32, FakeUser)>,
    /// A file sent with it: the message field (`document`, `voice`, `photo`, `audio`) and
    /// its Bot API object; `text` becomes the caption.
    pub media: Option<(String, Value)>,
}

impl UserMessage {
    /// `from` writes `text` to the bot in private.
    pub fn private(from: FakeUser, text: &str) -> Self {
        Self {
            from,
            chat: ChatSpec::Private,
            text: text.to_owned(),
            as_caption: false,
            topic: None,
            reply_to: None,
            media: None,
        }
    }

    /// `from` writes `text` in the supergroup `chat_id` (no topics).
    pub fn group(chat_id: i64, from: FakeUser, text: &str) -> Self {
        Self {
            chat: ChatSpec::Supergroup {
                id: chat_id,
                forum: false,
            },
            ..Self::private(from, text)
        }
    }

    /// `from` writes `text` in the basic group `chat_id`.
    pub fn basic_group(chat_id: i64, from: FakeUser, text: &str) -> Self {
        Self {
            chat: ChatSpec::Group(chat_id),
            ..Self::private(from, text)
        }
    }

    /// Post it in forum topic `topic_id` (a topic the sender created).
    pub fn in_topic(self, topic_id: i32) -> Self {
        let creator = self.from.clone();
        self.in_topic_created_by(topic_id, creator)
    }

    /// Post it in forum topic `topic_id`, created by `creator`.
    pub fn in_topic_created_by(mut self, topic_id: i32, creator: FakeUser) -> Self {
        if let ChatSpec::Supergroup { forum, .. } = &mut self.chat {
            *forum = true;
        }
        self.topic = Some((topic_id, creator));
        self
    }

    /// Reply to the bot's message `message_id`.
    pub fn replying_to_bot(self, message_id: i32) -> Self {
        self.replying_to(message_id, FakeUser::the_bot())
    }

    /// Reply to message `message_id` written by `author`.
    pub fn replying_to(mut self, message_id: i32, author: FakeUser) -> Self {
        self.reply_to = Some((message_id, author));
        self
    }

    /// Send the text as a photo caption.
    pub fn with_photo(mut self) -> Self {
        self.as_caption = true;
        self
    }

    /// Attach the document `file_id` (from [`FakeTelegram::add_file`]) named `name`.
    ///
    /// [`FakeTelegram::add_file`]: super::FakeTelegram::add_file
    pub fn with_document(mut self, file_id: &str, name: &str, mime: &str, size: usize) -> Self {
        let doc = json!({ "file_id": file_id, "file_unique_id": format!("u-{file_id}"),
            "file_name": name, "mime_type": mime, "file_size": size });
        self.media = Some(("document".into(), doc));
        self
    }

    /// Attach the voice note `file_id` (OGG/Opus, as Telegram records them).
    pub fn with_voice(mut self, file_id: &str, size: usize) -> Self {
        let voice = json!({ "file_id": file_id, "file_unique_id": format!("u-{file_id}"),
            "duration": 3, "mime_type": "audio/ogg", "file_size": size });
        self.media = Some(("voice".into(), voice));
        self
    }

    /// Attach the photo `file_id` (two sizes, as Telegram sends; the larger is this file).
    pub fn with_photo_file(mut self, file_id: &str, size: usize) -> Self {
        let photo = json!([
            { "file_id": format!("{file_id}-thumb"), "file_unique_id": "thumb", "width": 90, "height": 90, "file_size": 100 },
            { "file_id": file_id, "file_unique_id": format!("u-{file_id}"), "width": 640, "height": 480, "file_size": size },
        ]);
        self.media = Some(("photo".into(), photo));
        self
    }

    /// The chat id this message lands in.
    pub fn chat_id(&self) -> i64 {
        match self.chat {
            ChatSpec::Private => i64::try_from(self.from.id).expect("user id fits i64"),
            ChatSpec::Group(id) | ChatSpec::Supergroup { id, .. } => id,
        }
    }

    /// The Bot API `Chat` object.
    pub fn chat_json(&self) -> Value {
        match &self.chat {
            ChatSpec::Private => {
                let mut chat = json!({ "id": self.chat_id(), "type": "private", "first_name": self.from.first_name });
                if let Some(username) = &self.from.username {
                    chat["username"] = json!(username);
                }
                chat
            }
            ChatSpec::Group(id) => json!({ "id": id, "type": "group", "title": "Test group" }),
            ChatSpec::Supergroup { id, forum } => {
                json!({ "id": id, "type": "supergroup", "title": "Test supergroup", "is_forum": forum })
            }
        }
    }

    /// The Bot API `Message` object, with id `message_id`.
    pub fn to_json(&self, message_id: i32) -> Value {
        let chat = self.chat_json();
        let mut msg = json!({
            "message_id": message_id,
            "date": unix_now(),
            "chat": chat,
            "from": self.from.to_json(),
        });
        if let Some((field, object)) = &self.media {
            msg[field.as_str()] = object.clone();
            if !self.text.is_empty() {
                msg["caption"] = json!(self.text);
            }
        } else if self.as_caption {
            msg["caption"] = json!(self.text);
            msg["photo"] = json!([{
                "file_id": "photo-file", "file_unique_id": "photo-unique",
                "width": 90, "height": 90, "file_size": 1024,
            }]);
        } else {
            msg["text"] = json!(self.text);
        }
        if let Some((topic, creator)) = &self.topic {
            msg["message_thread_id"] = json!(topic);
            msg["is_topic_message"] = json!(true);
            // In a topic, a message that replies to nothing "replies" to the topic's first
            // (service) message, as Telegram does.
            msg["reply_to_message"] = json!({
                "message_id": topic, "date": unix_now(), "chat": chat,
                "from": creator.to_json(), "message_thread_id": topic,
                "forum_topic_created": { "name": "Test topic", "icon_color": 7_322_096 },
            });
        }
        if let Some((parent, author)) = &self.reply_to {
            let mut reply = json!({
                "message_id": parent, "date": unix_now(), "chat": chat,
                "from": author.to_json(), "text": "an earlier message",
            });
            if let Some((topic, _)) = &self.topic {
                reply["message_thread_id"] = json!(topic);
                reply["is_topic_message"] = json!(true);
            }
            msg["reply_to_message"] = reply;
        }
        msg
    }
}

/// A press of an inline button under one of the bot's messages.
#[derive(Clone, Debug)]
pub struct Click {
    /// Who pressed.
    pub from: FakeUser,
    /// Chat of the message carrying the button.
    pub chat_id: i64,
    /// That message's id.
    pub message_id: i32,
    /// Its forum topic, if any.
    pub thread_id: Option<i32>,
    /// The button's `callback_data`.
    pub data: String,
}

impl Click {
    /// `from` presses the button with `data` under message `message` the bot sent.
    pub fn on(message: &super::FakeMessage, from: FakeUser, data: &str) -> Self {
        Self {
            from,
            chat_id: message.chat_id,
            message_id: message.message_id,
            thread_id: message.thread_id,
            data: data.to_owned(),
        }
    }

    /// The Bot API `CallbackQuery` object with id `query_id`.
    pub fn to_json(&self, query_id: &str) -> Value {
        let chat = if self.chat_id > 0 {
            json!({ "id": self.chat_id, "type": "private", "first_name": self.from.first_name })
        } else {
            json!({ "id": self.chat_id, "type": "supergroup", "title": "Test supergroup",
                    "is_forum": self.thread_id.is_some() })
        };
        let mut message = json!({
            "message_id": self.message_id, "date": unix_now(), "chat": chat,
            "from": FakeUser::the_bot().to_json(), "text": "a message with buttons",
        });
        if let Some(thread) = self.thread_id {
            message["message_thread_id"] = json!(thread);
            message["is_topic_message"] = json!(true);
        }
        json!({
            "id": query_id, "from": self.from.to_json(), "message": message,
            "chat_instance": format!("instance{}", self.chat_id.unsigned_abs()), "data": self.data,
        })
    }
}

/// Seconds since the Unix epoch, as Telegram dates are.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

//! Discord JSON shapes the fake sends and answers with: users, messages, component
//! interactions and READY, with the fields serenity 0.12 requires present.

use serde_json::{Value, json};

use super::{FAKE_APPLICATION_ID, FAKE_BOT_ID};

/// The timestamp on every fake message.
pub const TIMESTAMP: &str = "2024-05-01T12:00:00.000000+00:00";
/// The `type` of a reply message (0 is a plain message).
pub const INLINE_REPLY: u8 = 19;

/// A Discord user as messages and interactions carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeUser {
    /// Snowflake id.
    pub id: String,
    /// Username.
    pub username: String,
    /// Display name, if set.
    pub global_name: Option<String>,
    /// Whether the account is a bot.
    pub bot: bool,
}

impl FakeUser {
    /// A human user.
    pub fn new(id: &str, username: &str) -> Self {
        Self {
            id: id.to_owned(),
            username: username.to_owned(),
            global_name: None,
            bot: false,
        }
    }

    /// Another bot account.
    pub fn other_bot(id: &str, username: &str) -> Self {
        Self {
            bot: true,
            ..Self::new(id, username)
        }
    }

    /// The fake's own bot ([`FAKE_BOT_ID`]).
    pub fn the_bot() -> Self {
        Self::other_bot(FAKE_BOT_ID, "switchboard")
    }

    /// The user object.
    pub fn json(&self) -> Value {
        let mut user = json!({
            "id": self.id, "username": self.username, "discriminator": "0",
            "global_name": self.global_name, "avatar": null, "public_flags": 0,
        });
        if self.bot {
            user["bot"] = json!(true);
        }
        user
    }
}

/// A message a user writes, to be dispatched as MESSAGE_CREATE.
#[derive(Clone, Debug)]
pub struct IncomingMessage {
    /// The channel (DM channel, guild text channel or thread).
    pub channel_id: String,
    /// The guild, for guild channels and threads.
    pub guild_id: Option<String>,
    /// Who wrote it.
    pub author: FakeUser,
    /// The raw text, mentions included (`<@id>`).
    pub content: String,
    /// Users the text mentions.
    pub mentions: Vec<FakeUser>,
    /// The message it replies to: its id and author.
    pub reply_to: Option<(String, FakeUser)>,
    /// Message type (0 plain, 19 reply, others are system messages).
    pub kind: u8,
    /// Set on messages posted through a webhook.
    pub webhook_id: Option<String>,
    /// The author's server nickname.
    pub nick: Option<String>,
    /// Attachment objects (from `FakeDiscord::add_file`).
    pub attachments: Vec<Value>,
}

impl IncomingMessage {
    /// A direct message in DM channel `channel_id`.
    pub fn dm(channel_id: &str, author: &FakeUser, content: &str) -> Self {
        Self {
            channel_id: channel_id.to_owned(),
            guild_id: None,
            author: author.clone(),
            content: content.to_owned(),
            mentions: Vec::new(),
            reply_to: None,
            kind: 0,
            webhook_id: None,
            nick: None,
            attachments: Vec::new(),
        }
    }

    /// A message in a guild channel (or thread) `channel_id`.
    pub fn guild(guild_id: &str, channel_id: &str, author: &FakeUser, content: &str) -> Self {
        Self {
            guild_id: Some(guild_id.to_owned()),
            ..Self::dm(channel_id, author, content)
        }
    }

    /// Mention the bot the way the client does: `<@BOT>` in front of the text.
    pub fn mentioning_bot(mut self) -> Self {
        self.content = format!("<@{FAKE_BOT_ID}> {}", self.content);
        self.mentions.push(FakeUser::the_bot());
        self
    }

    /// Attach a file (an attachment object from `FakeDiscord::add_file`).
    pub fn with_attachment(mut self, attachment: Value) -> Self {
        self.attachments.push(attachment);
        self
    }

    /// Reply to message `message_id` written by `author`.
    pub fn replying_to(mut self, message_id: &str, author: &FakeUser) -> Self {
        self.reply_to = Some((message_id.to_owned(), author.clone()));
        self.kind = INLINE_REPLY;
        self
    }

    /// The MESSAGE_CREATE `d` for this message with id `id`.
    pub fn json(&self, id: &str) -> Value {
        let mut msg = message_json(
            id,
            &self.channel_id,
            self.guild_id.as_deref(),
            &self.author,
            &self.content,
        );
        msg["type"] = json!(self.kind);
        msg["mentions"] = Value::Array(self.mentions.iter().map(FakeUser::json).collect());
        msg["attachments"] = Value::Array(self.attachments.clone());
        if let Some(webhook) = &self.webhook_id {
            msg["webhook_id"] = json!(webhook);
        }
        if self.guild_id.is_some() {
            msg["member"] = json!({
                "nick": self.nick, "roles": [], "joined_at": TIMESTAMP, "deaf": false, "mute": false, "flags": 0,
            });
        }
        if let Some((replied, author)) = &self.reply_to {
            // Discord leaves guild_id off the referenced message.
            msg["referenced_message"] =
                message_json(replied, &self.channel_id, None, author, "earlier");
            msg["message_reference"] = json!({
                "type": 0, "message_id": replied, "channel_id": self.channel_id, "guild_id": self.guild_id,
            });
        }
        msg
    }
}

/// A message object with every field serenity requires.
pub fn message_json(
    id: &str,
    channel_id: &str,
    guild_id: Option<&str>,
    author: &FakeUser,
    content: &str,
) -> Value {
    let mut msg = json!({
        "id": id, "channel_id": channel_id, "author": author.json(), "content": content,
        "timestamp": TIMESTAMP, "edited_timestamp": null, "tts": false, "mention_everyone": false,
        "mentions": [], "mention_roles": [], "attachments": [], "embeds": [], "pinned": false,
        "type": 0, "flags": 0, "components": [],
    });
    if let Some(guild) = guild_id {
        msg["guild_id"] = json!(guild);
    }
    msg
}

/// A press of a button on a message the bot posted, to be dispatched as INTERACTION_CREATE.
#[derive(Clone, Debug)]
pub struct ButtonClick {
    /// The channel the message is in.
    pub channel_id: String,
    /// The guild, when the channel is in one.
    pub guild_id: Option<String>,
    /// Who pressed.
    pub user: FakeUser,
    /// The button's `custom_id`.
    pub custom_id: String,
    /// The message carrying the button.
    pub message_id: String,
    /// Component type: 2 for a button, 3 for a string select.
    pub component_type: u8,
}

impl ButtonClick {
    /// `user` presses the button `custom_id` on message `message_id` in `channel_id`.
    pub fn new(channel_id: &str, user: &FakeUser, custom_id: &str, message_id: &str) -> Self {
        Self {
            channel_id: channel_id.to_owned(),
            guild_id: None,
            user: user.clone(),
            custom_id: custom_id.to_owned(),
            message_id: message_id.to_owned(),
            component_type: 2,
        }
    }

    /// The same press in a guild channel.
    pub fn in_guild(mut self, guild_id: &str) -> Self {
        self.guild_id = Some(guild_id.to_owned());
        self
    }

    /// The INTERACTION_CREATE `d`, with `message` the pressed message object.
    pub fn json(&self, id: &str, token: &str, message: Value) -> Value {
        let mut data = json!({"custom_id": self.custom_id, "component_type": self.component_type});
        if self.component_type == 3 {
            data["values"] = json!([]);
        }
        let mut interaction = json!({
            "id": id, "application_id": FAKE_APPLICATION_ID, "type": 3, "data": data,
            "channel_id": self.channel_id, "channel": {"id": self.channel_id, "type": 0},
            "token": token, "version": 1, "message": message, "app_permissions": "0",
            "locale": "en-US", "entitlements": [], "authorizing_integration_owners": {"0": "0"},
            "attachment_size_limit": 10_485_760,
        });
        match &self.guild_id {
            Some(guild) => {
                interaction["guild_id"] = json!(guild);
                interaction["guild_locale"] = json!("en-US");
                interaction["context"] = json!(0);
                interaction["member"] = json!({
                    "user": self.user.json(), "nick": null, "roles": [], "joined_at": TIMESTAMP,
                    "deaf": false, "mute": false, "flags": 0, "pending": false, "permissions": "0",
                });
            }
            None => {
                interaction["user"] = self.user.json();
                interaction["context"] = json!(1);
            }
        }
        interaction
    }
}

/// The READY `d` for a new session.
pub fn ready_json(session_id: &str, resume_gateway_url: &str) -> Value {
    let mut user = FakeUser::the_bot().json();
    user["verified"] = json!(true);
    user["mfa_enabled"] = json!(false);
    user["flags"] = json!(0);
    json!({
        "v": 10, "user": user, "guilds": [], "session_id": session_id,
        "resume_gateway_url": resume_gateway_url, "shard": [0, 1],
        "application": {"id": FAKE_APPLICATION_ID, "flags": 0},
        "private_channels": [], "relationships": [], "geo_ordered_rtc_regions": [],
    })
}

//! Meta's webhook JSON as types: the `whatsapp_business_account` notification, its
//! `messages` changes (messages, contacts, statuses, errors) and the message kinds the
//! channel reads. Unknown fields are ignored, as Meta adds them freely; unknown message
//! kinds parse (their `type` is kept) and are answered with a note.

use serde::Deserialize;
use serde_json::Value;

/// One webhook POST.
#[derive(Deserialize, Debug)]
pub(crate) struct Notification {
    /// `whatsapp_business_account` for every WhatsApp webhook.
    pub object: String,
    #[serde(default)]
    pub entry: Vec<Entry>,
}

/// One WhatsApp Business Account's changes.
#[derive(Deserialize, Debug)]
pub(crate) struct Entry {
    #[serde(default)]
    pub changes: Vec<Change>,
}

/// One change: `field` names what changed; only `messages` concerns the channel.
#[derive(Deserialize, Debug)]
pub(crate) struct Change {
    pub field: String,
    #[serde(default)]
    pub value: Value,
}

/// The value of a `messages` change.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct MessagesValue {
    pub metadata: Metadata,
    #[serde(default)]
    pub contacts: Vec<Contact>,
    #[serde(default)]
    pub messages: Vec<Message>,
    #[serde(default)]
    pub statuses: Vec<Status>,
    #[serde(default)]
    pub errors: Vec<ApiError>,
}

/// Which business number the change is for.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Metadata {
    pub phone_number_id: String,
}

/// A person who wrote: their phone number (`wa_id`, when they show one) and their
/// business-scoped user id (`user_id`).
#[derive(Deserialize, Debug, Default, Clone)]
pub(crate) struct Contact {
    #[serde(default)]
    pub wa_id: Option<String>,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub profile: Option<Profile>,
}

/// A person's profile as WhatsApp shows it.
#[derive(Deserialize, Debug, Default, Clone)]
pub(crate) struct Profile {
    #[serde(default)]
    pub name: Option<String>,
}

/// One incoming message.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Message {
    /// The sender's phone number, absent for someone who shows only a username.
    #[serde(default)]
    pub from: Option<String>,
    /// The sender's business-scoped user id.
    #[serde(default)]
    pub from_user_id: Option<String>,
    /// `wamid.…`: unique per message, the same on a redelivery.
    pub id: String,
    /// Unix seconds, as a string.
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub context: Option<Context>,
    #[serde(default)]
    pub text: Option<Text>,
    #[serde(default)]
    pub image: Option<Media>,
    #[serde(default)]
    pub sticker: Option<Media>,
    #[serde(default)]
    pub audio: Option<Media>,
    #[serde(default)]
    pub video: Option<Media>,
    #[serde(default)]
    pub document: Option<Media>,
    #[serde(default)]
    pub location: Option<Location>,
    #[serde(default)]
    pub contacts: Option<Vec<SharedContact>>,
    #[serde(default)]
    pub reaction: Option<Reaction>,
    #[serde(default)]
    pub interactive: Option<Interactive>,
    /// A quick-reply button of a template.
    #[serde(default)]
    pub button: Option<TemplateButton>,
}

/// The message a reply answers.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Context {
    #[serde(default)]
    pub id: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct Text {
    #[serde(default)]
    pub body: String,
}

/// A media message: fetched later through its id.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Media {
    pub id: String,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub filename: Option<String>,
    /// An audio message recorded in the app (a voice note).
    #[serde(default)]
    pub voice: bool,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct Location {
    pub latitude: f64,
    pub longitude: f64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub address: Option<String>,
}

/// A contact card someone shared.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct SharedContact {
    #[serde(default)]
    pub name: Option<SharedName>,
    #[serde(default)]
    pub phones: Vec<SharedPhone>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct SharedName {
    #[serde(default)]
    pub formatted_name: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct SharedPhone {
    #[serde(default)]
    pub phone: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct Reaction {
    /// Empty when a reaction is taken away.
    #[serde(default)]
    pub emoji: Option<String>,
}

/// A reply to an interactive message: a reply button or a list row.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Interactive {
    #[serde(default)]
    pub button_reply: Option<Reply>,
    #[serde(default)]
    pub list_reply: Option<Reply>,
}

/// The button or row pressed: our own id (its title is only what the person saw).
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Reply {
    pub id: String,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct TemplateButton {
    #[serde(default)]
    pub payload: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

/// What happened to a message the business sent.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Status {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub recipient_id: Option<String>,
    #[serde(default)]
    pub errors: Vec<ApiError>,
}

/// An error as Meta reports it, in webhooks and in API answers.
#[derive(Deserialize, Debug, Default, Clone)]
pub(crate) struct ApiError {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error_data: Option<ErrorData>,
}

#[derive(Deserialize, Debug, Default, Clone)]
pub(crate) struct ErrorData {
    #[serde(default)]
    pub details: Option<String>,
}

impl ApiError {
    /// The most telling text Meta gave: the details, else the message or title.
    pub fn detail(&self) -> String {
        let details = self.error_data.as_ref().and_then(|d| d.details.clone());
        details
            .or_else(|| self.message.clone())
            .or_else(|| self.title.clone())
            .unwrap_or_default()
    }
}

//! What Meta's webhook sender posts: `whatsapp_business_account` notifications with one
//! `messages` change (metadata, contacts, messages or statuses), serialised once and signed
//! over those exact bytes with the app secret (`X-Hub-Signature-256: sha256=<hex>`).

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::FAKE_PHONE_NUMBER_ID;

/// `sha256=<hex>` of `body` under `secret`, as Meta signs.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// One message a person sends, as it appears in the webhook's `messages` array.
#[derive(Clone, Debug)]
pub struct WebhookMessage {
    /// The sender's number (`wa_id`); `None` for someone showing only a username.
    pub from: Option<String>,
    /// The sender's business-scoped user id.
    pub user_id: Option<String>,
    /// The `wamid`.
    pub id: String,
    /// Unix seconds.
    pub timestamp: u64,
    /// The message object's kind-specific part, e.g. `{"type":"text","text":{…}}`.
    pub content: Value,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl WebhookMessage {
    /// A text message from `from`, sent now.
    pub fn text(from: &str, id: &str, body: &str) -> Self {
        Self::of(from, id, json!({"type": "text", "text": {"body": body}}))
    }

    /// A message of any kind from `from`, sent now.
    pub fn of(from: &str, id: &str, content: Value) -> Self {
        Self {
            from: Some(from.to_owned()),
            user_id: Some(format!("US.{from}0")),
            id: id.to_owned(),
            timestamp: now(),
            content,
        }
    }

    /// A voice note recorded in the app, media `media_id`.
    pub fn voice(from: &str, id: &str, media_id: &str) -> Self {
        Self::of(
            from,
            id,
            json!({"type": "audio",
            "audio": {"id": media_id, "mime_type": "audio/ogg; codecs=opus", "sha256": "x", "voice": true}}),
        )
    }

    /// A photo, media `media_id`, with `caption`.
    pub fn image(from: &str, id: &str, media_id: &str, caption: &str) -> Self {
        Self::of(
            from,
            id,
            json!({"type": "image",
            "image": {"id": media_id, "mime_type": "image/jpeg", "sha256": "x", "caption": caption}}),
        )
    }

    /// A reply-button press on our message `context_id`, with the button's `payload` id.
    pub fn button_reply(
        from: &str,
        id: &str,
        context_id: &str,
        payload: &str,
        title: &str,
    ) -> Self {
        Self::of(
            from,
            id,
            json!({"type": "interactive",
            "context": {"from": FAKE_PHONE_NUMBER_ID, "id": context_id},
            "interactive": {"type": "button_reply", "button_reply": {"id": payload, "title": title}}}),
        )
    }

    /// Sent `secs` seconds ago.
    pub fn ago(mut self, secs: u64) -> Self {
        self.timestamp = now().saturating_sub(secs);
        self
    }

    fn to_json(&self) -> Value {
        let mut m = json!({"id": self.id, "timestamp": self.timestamp.to_string()});
        if let Some(from) = &self.from {
            m["from"] = json!(from);
        }
        if let Some(user_id) = &self.user_id {
            m["from_user_id"] = json!(user_id);
        }
        for (k, v) in self.content.as_object().into_iter().flatten() {
            m[k] = v.clone();
        }
        m
    }

    fn contact(&self) -> Value {
        let mut c = json!({"profile": {"name": "Test Person"}});
        if let Some(from) = &self.from {
            c["wa_id"] = json!(from);
        }
        if let Some(user_id) = &self.user_id {
            c["user_id"] = json!(user_id);
        }
        c
    }
}

/// One webhook POST body.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The JSON Meta would send.
    pub body: Value,
}

impl Notification {
    /// Messages to business number `phone_number_id`.
    pub fn messages(phone_number_id: &str, messages: &[WebhookMessage]) -> Self {
        let contacts: Vec<Value> = messages.iter().map(WebhookMessage::contact).collect();
        let list: Vec<Value> = messages.iter().map(WebhookMessage::to_json).collect();
        Self::change(
            phone_number_id,
            json!({"contacts": contacts, "messages": list}),
        )
    }

    /// One message to the default number.
    pub fn message(message: &WebhookMessage) -> Self {
        Self::messages(FAKE_PHONE_NUMBER_ID, std::slice::from_ref(message))
    }

    /// A `failed` delivery status of our message `id` to `to`, with WhatsApp error `code`.
    pub fn failed_status(phone_number_id: &str, id: &str, to: &str, code: i64) -> Self {
        Self::change(
            phone_number_id,
            json!({"statuses": [{
            "id": id, "status": "failed", "timestamp": now().to_string(), "recipient_id": to,
            "errors": [{"code": code, "title": "Message failed", "message": "Message failed",
                "error_data": {"details": "stand-in failure"}}]}]}),
        )
    }

    fn change(phone_number_id: &str, mut value: Value) -> Self {
        value["messaging_product"] = json!("whatsapp");
        value["metadata"] =
            json!({"display_phone_number": "15550783881", "phone_number_id": phone_number_id});
        Self {
            body: json!({"object": "whatsapp_business_account", "entry": [{
                "id": "102290129340398",
                "changes": [{"value": value, "field": "messages"}]}]}),
        }
    }

    /// POST it to `url` signed with `secret`; the status the gateway answers.
    pub async fn post(&self, url: &str, secret: &str) -> u16 {
        let bytes = serde_json::to_vec(&self.body).expect("json");
        let signature = sign(secret, &bytes);
        reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("x-hub-signature-256", signature)
            .body(bytes)
            .send()
            .await
            .expect("the gateway answers")
            .status()
            .as_u16()
    }
}

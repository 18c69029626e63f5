//! One webhook message → one `ChannelEvent`: who wrote (their number, else their
//! business-scoped user id), the text (a caption, a location or a shared contact written
//! out), media as attachment references (fetched after the event is stored), and button or
//! list replies as presses. Reactions arrive as a short line; kinds the gateway cannot read
//! are acknowledged and dropped with a log line.

use switchboard_channel::{
    Attachment, AttachmentKind, ButtonPress, ChannelEvent, ConversationKey, Inbound, MessageRef,
    Place, UserRef,
};

use crate::payload::{Contact, Location, Message};

/// What the webhook does with one message.
#[derive(Debug)]
pub(crate) enum Triage {
    /// Hand it to the sink.
    Deliver(Box<ChannelEvent>),
    /// Acknowledge it without storing it.
    Ignore(&'static str),
}

/// Who wrote a message, as the gateway keys them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Person {
    /// The conversation: their phone number as WhatsApp writes it (digits, no `+`), which
    /// messages can be sent to; their business-scoped user id when they show no number.
    pub chat: String,
    /// The id the access decision sees: the user id when `allowed_users` names it, else
    /// the number when there is one, else the user id.
    pub user: String,
    pub name: Option<String>,
}

/// The person behind `msg`, from the message and the change's `contacts`; `None` when the
/// webhook names nobody (nothing to answer).
pub(crate) fn person(msg: &Message, contacts: &[Contact], allowed: &[String]) -> Option<Person> {
    let contact = contacts.iter().find(|c| {
        (c.wa_id.is_some() && c.wa_id == msg.from)
            || (c.user_id.is_some() && c.user_id == msg.from_user_id)
    });
    let contact = contact.or(contacts.first().filter(|_| contacts.len() == 1));
    let number = msg
        .from
        .clone()
        .or_else(|| contact.and_then(|c| c.wa_id.clone()))
        .filter(|n| !n.is_empty());
    let user_id = msg
        .from_user_id
        .clone()
        .or_else(|| contact.and_then(|c| c.user_id.clone()))
        .filter(|u| !u.is_empty());
    let chat = number.clone().or_else(|| user_id.clone())?;
    let user = match (&user_id, &number) {
        (Some(id), _) if allowed.contains(id) => id.clone(),
        (_, Some(number)) => number.clone(),
        (Some(id), None) => id.clone(),
        (None, None) => return None,
    };
    let name = contact.and_then(|c| c.profile.as_ref()?.name.clone());
    Some(Person { chat, user, name })
}

/// `msg` from `person` as an event of channel `name`; `quoted` is the start of our message
/// it replies to, when it replies to one still remembered.
pub(crate) fn normalise(name: &str, person: &Person, msg: Message, quoted: Option<&str>) -> Triage {
    let key = ConversationKey::new(name, &person.chat);
    let user = UserRef {
        id: person.user.clone(),
        name: person.name.clone(),
    };
    if let Some(reply) = msg
        .interactive
        .as_ref()
        .and_then(|i| i.button_reply.as_ref().or(i.list_reply.as_ref()))
    {
        return Triage::Deliver(Box::new(ChannelEvent::Button(ButtonPress {
            key,
            event_id: msg.id.clone(),
            user,
            payload: reply.id.clone(),
            message: msg
                .context
                .as_ref()
                .and_then(|c| c.id.clone())
                .map(MessageRef::new),
            reply_token: None,
            place: Place::Direct,
        })));
    }
    let (text, attachments) = match content(&msg) {
        Ok(content) => content,
        Err(reason) => return Triage::Ignore(reason),
    };
    let text = match quoted {
        Some(quote) => format!("{}\n\n{text}", quote_lines(quote)),
        None => text,
    };
    Triage::Deliver(Box::new(ChannelEvent::Message(Inbound {
        key,
        event_id: msg.id,
        user,
        text,
        place: Place::Direct,
        attachments,
    })))
}

/// The text and attachments of a message that is not a button press.
fn content(msg: &Message) -> Result<(String, Vec<Attachment>), &'static str> {
    let text = |t: String| (t, Vec::new());
    let found = match msg.kind.as_str() {
        "text" => msg.text.as_ref().map(|t| text(t.body.clone())),
        "image" | "sticker" | "audio" | "video" | "document" => media_content(msg),
        "location" => msg.location.as_ref().map(|l| text(location_text(l))),
        "contacts" => msg
            .contacts
            .as_ref()
            .map(|cards| text(contacts_text(cards))),
        "reaction" => match msg.reaction.as_ref().and_then(|r| r.emoji.clone()) {
            Some(emoji) if !emoji.is_empty() => {
                Some(text(format!("(reacted {emoji} to an earlier message)")))
            }
            _ => return Err("a reaction taken away"),
        },
        "button" => msg
            .button
            .as_ref()
            .and_then(|b| b.text.clone().or(b.payload.clone()))
            .map(text),
        _ => return Err("a message kind the gateway cannot read"),
    };
    found.ok_or("a message without its content")
}

/// A media message's caption and its attachment reference.
fn media_content(msg: &Message) -> Option<(String, Vec<Attachment>)> {
    let (m, kind, fallback) = match msg.kind.as_str() {
        "image" => (msg.image.as_ref()?, AttachmentKind::Photo, "image.jpg"),
        // A sticker is a picture (WebP); the model sees it as one.
        "sticker" => (msg.sticker.as_ref()?, AttachmentKind::Photo, "sticker.webp"),
        "audio" => match msg.audio.as_ref()? {
            m if m.voice => (m, AttachmentKind::Voice, "voice.ogg"),
            m => (m, AttachmentKind::Audio, "audio.ogg"),
        },
        "video" => (msg.video.as_ref()?, AttachmentKind::Document, "video.mp4"),
        _ => (msg.document.as_ref()?, AttachmentKind::Document, "document"),
    };
    let attachment = Attachment {
        kind,
        id: m.id.clone(),
        url: None,
        name: m.filename.clone().unwrap_or_else(|| fallback.to_owned()),
        mime: m.mime_type.clone(),
        size: None,
    };
    Some((m.caption.clone().unwrap_or_default(), vec![attachment]))
}

/// A shared location written out: its name and address when given, and its coordinates.
fn location_text(l: &Location) -> String {
    let place = [l.name.as_deref(), l.address.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
    let at = format!("{:.6}, {:.6}", l.latitude, l.longitude);
    if place.is_empty() {
        format!("📍 Location: {at}")
    } else {
        format!("📍 Location: {place} ({at})")
    }
}

/// `quote` as a markdown quote: each line behind `> `.
fn quote_lines(quote: &str) -> String {
    let lines: Vec<String> = quote.lines().map(|l| format!("> {l}")).collect();
    lines.join("\n")
}

/// Shared contact cards written out: one line per card, name then numbers.
fn contacts_text(cards: &[crate::payload::SharedContact]) -> String {
    let lines: Vec<String> = cards
        .iter()
        .map(|card| {
            let name = card
                .name
                .as_ref()
                .and_then(|n| n.formatted_name.clone())
                .unwrap_or_else(|| "(no name)".into());
            let phones: Vec<&str> = card
                .phones
                .iter()
                .filter_map(|p| p.phone.as_deref())
                .collect();
            format!("👤 Contact: {name} {}", phones.join(", "))
                .trim_end()
                .to_owned()
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests;

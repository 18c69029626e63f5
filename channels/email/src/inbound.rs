//! One fetched mail → what to do with it: skip it (a loop risk, an unauthenticated sender,
//! a sender over their hourly limit, not a mail at all) or deliver it as a `ChannelEvent` —
//! a message in its thread's conversation, or an approval decided by a reply's first line.
//! Attachments are saved in the channel's folder before the event is delivered, so the
//! core's later download never needs the mailbox.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use switchboard_channel::{
    Attachment, AttachmentKind, ButtonPress, ChannelEvent, ConversationKey, Inbound, MessageRef,
    Place, UserRef,
};
use tokio::time::Instant;

use crate::auth::Verifier;
use crate::message::{self, Mail};
use crate::state::State;

/// What the receive loop does with one mail.
#[derive(Debug)]
pub(crate) enum Triage {
    /// Store this event.
    Deliver(Box<ChannelEvent>),
    /// Leave it unanswered (marked read all the same); the reason is logged.
    Skip(String),
}

/// The per-sender hourly limit.
pub(crate) struct RateLimit {
    per_hour: u32,
    seen: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateLimit {
    pub(crate) fn new(per_hour: u32) -> Self {
        Self {
            per_hour,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `sender` may have one more mail answered now (and count it when so).
    pub(crate) fn admit(&self, sender: &str) -> bool {
        let now = Instant::now();
        let hour = Duration::from_secs(3600);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let times = seen.entry(sender.to_owned()).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= hour)
        {
            times.pop_front();
        }
        if times.len() >= self.per_hour as usize {
            return false;
        }
        times.push_back(now);
        true
    }
}

/// Why `mail` must not be answered, if it must not: anything automatic, from a list, a
/// bounce, or the bot's own (RFC 3834 §2).
pub(crate) fn loop_risk(mail: &Mail, own: &str) -> Option<String> {
    let from = mail.from.as_deref().unwrap_or_default();
    if from == own {
        return Some("the bot's own address".into());
    }
    if let Some(auto) = mail
        .auto_submitted
        .as_deref()
        .filter(|a| a.split(';').next().map(str::trim) != Some("no"))
    {
        return Some(format!("Auto-Submitted: {auto}"));
    }
    if let Some(p) = mail
        .precedence
        .as_deref()
        .filter(|p| ["bulk", "list", "junk"].contains(p))
    {
        return Some(format!("Precedence: {p}"));
    }
    if mail.from_list {
        return Some("a mailing list (List-Id)".into());
    }
    let local = from.split('@').next().unwrap_or_default();
    if ["mailer-daemon", "postmaster"].contains(&local) || mail.return_path.as_deref() == Some("") {
        return Some("a bounce (mailer-daemon, postmaster or an empty Return-Path)".into());
    }
    None
}

/// What turns mails into events for one channel.
pub(crate) struct Reader<'a> {
    pub(crate) channel: &'a str,
    pub(crate) own: &'a str,
    pub(crate) state: &'a State,
    pub(crate) verifier: &'a Verifier,
    pub(crate) limit: &'a RateLimit,
    pub(crate) max_attachment_bytes: u64,
}

impl Reader<'_> {
    /// Triage one raw mail.
    pub(crate) async fn read(&self, raw: &[u8]) -> Triage {
        let Some(mail) = message::parse(raw) else {
            return Triage::Skip("not a mail".into());
        };
        let Some(from) = mail.from.clone() else {
            return Triage::Skip("no From address".into());
        };
        if let Err(why) = self.admit(raw, &mail, &from).await {
            return Triage::Skip(why);
        }
        let event_id = mail
            .message_id
            .clone()
            .unwrap_or_else(|| format!("sha256:{}", hex(&digest(raw))));
        let root = self.root(&mail, &from, &event_id);
        let key = ConversationKey::new(self.channel, &from).in_thread(&root);
        if let Err(err) = self.state.received(
            &thread_key(&key),
            &from,
            &mail.subject,
            &event_id,
            &mail.references,
        ) {
            return Triage::Skip(format!("the thread could not be saved: {err}"));
        }
        let user = UserRef {
            id: from.clone(),
            name: mail.from_name.clone(),
        };
        if let Some(press) = self.decision(&mail, &key, &event_id, &user) {
            return Triage::Deliver(Box::new(ChannelEvent::Button(press)));
        }
        let text = if root == event_id && !mail.subject.is_empty() {
            format!(
                "Subject: {}\n\n{}",
                mail.subject,
                message::trimmed(&mail.body)
            )
        } else {
            message::trimmed(&mail.body)
        };
        Triage::Deliver(Box::new(ChannelEvent::Message(Inbound {
            key,
            event_id,
            user,
            text,
            place: Place::Direct,
            attachments: self.attachments(&mail),
        })))
    }

    /// `Ok` when the mail may be answered: no loop risk, an authenticated sender (a refusal
    /// is logged with the rule and the reason), within the sender's hourly limit.
    async fn admit(&self, raw: &[u8], mail: &Mail, from: &str) -> Result<(), String> {
        if let Some(why) = loop_risk(mail, self.own) {
            return Err(format!("no answer to {why}"));
        }
        if let Err(reason) = self.verifier.check(raw, from).await {
            tracing::warn!(
                channel = %self.channel,
                rule = self.verifier.rule(),
                from = %from,
                reason = %reason,
                "refused a mail whose sender is not authenticated; it gets no answer"
            );
            return Err(format!("sender not authenticated: {reason}"));
        }
        if !self.limit.admit(from) {
            return Err(format!("{from} is over the hourly mail limit"));
        }
        Ok(())
    }

    /// The thread a mail belongs to: the root of the first id it names that the bot knows
    /// (its own mail, or a thread it keeps), else the oldest id it names, else itself.
    fn root(&self, mail: &Mail, from: &str, own_id: &str) -> String {
        let named = mail.references.iter().chain(&mail.in_reply_to);
        for id in named.clone() {
            if let Some(key) = self.state.root_of_sent(id) {
                return key
                    .rsplit_once('|')
                    .map_or(key.clone(), |(_, r)| r.to_owned());
            }
            let key = ConversationKey::new(self.channel, from).in_thread(id.as_str());
            if self.state.thread(&thread_key(&key)).is_some() {
                return id.clone();
            }
        }
        named
            .into_iter()
            .next()
            .cloned()
            .unwrap_or_else(|| own_id.to_owned())
    }

    /// A reply to an approval prompt whose first line names a choice, as its press.
    fn decision(
        &self,
        mail: &Mail,
        key: &ConversationKey,
        event_id: &str,
        user: &UserRef,
    ) -> Option<ButtonPress> {
        let (prompt, choices) = mail
            .in_reply_to
            .iter()
            .chain(mail.references.iter().rev())
            .find_map(|id| Some((id.clone(), self.state.prompt(id)?)))?;
        let first = message::trimmed(&mail.body)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())?
            .to_lowercase();
        let word = first
            .split_whitespace()
            .next()?
            .trim_matches(|c: char| !c.is_alphanumeric());
        let choice = choices.iter().find(|c| {
            let label = c.label.to_lowercase();
            label.split_whitespace().next() == Some(word) || label == first
        })?;
        Some(ButtonPress {
            key: key.clone(),
            event_id: event_id.to_owned(),
            user: user.clone(),
            payload: choice.payload.clone(),
            message: Some(MessageRef::new(prompt)),
            reply_token: None,
            place: Place::Direct,
        })
    }

    /// The mail's files, saved by content hash; one over the limit is referenced with its
    /// size (the core tells the person it was too large) but not kept.
    fn attachments(&self, mail: &Mail) -> Vec<Attachment> {
        mail.parts
            .iter()
            .filter_map(|part| {
                let id = hex(&digest(&part.bytes));
                let size = part.bytes.len() as u64;
                if size <= self.max_attachment_bytes {
                    let path = self.state.files().join(&id);
                    if let Err(err) = std::fs::write(&path, &part.bytes) {
                        tracing::warn!(channel = %self.channel, error = %err, "could not keep an attachment");
                        return None;
                    }
                }
                let image = part.mime.as_deref().is_some_and(|m| m.starts_with("image/"));
                Some(Attachment {
                    kind: if image {
                        AttachmentKind::Photo
                    } else {
                        AttachmentKind::Document
                    },
                    id,
                    url: None,
                    name: part.name.clone(),
                    mime: part.mime.clone(),
                    size: Some(size),
                })
            })
            .collect()
    }
}

/// The state's name for a conversation's thread.
pub(crate) fn thread_key(key: &ConversationKey) -> String {
    format!("{}|{}", key.chat, key.thread.as_deref().unwrap_or_default())
}

pub(crate) fn digest(bytes: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .to_vec()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(headers: &str) -> Mail {
        let raw = format!("From: alice@people.test\r\n{headers}Subject: s\r\n\r\nhi\r\n");
        message::parse(raw.as_bytes()).unwrap()
    }

    #[test]
    fn automatic_list_and_bounce_mail_and_the_bots_own_are_loop_risks() {
        let own = "bot@bot.test";
        for headers in [
            "Auto-Submitted: auto-replied\r\n",
            "Auto-Submitted: auto-generated\r\n",
            "Precedence: bulk\r\n",
            "Precedence: junk\r\n",
            "List-Id: <team.lists.example>\r\n",
            "Return-Path: <>\r\n",
        ] {
            assert!(loop_risk(&mail(headers), own).is_some(), "{headers}");
        }
        assert!(loop_risk(&mail("Auto-Submitted: no\r\n"), own).is_none());
        assert!(loop_risk(&mail(""), own).is_none());
        assert!(loop_risk(&mail(""), "alice@people.test").is_some());
        let bounce = message::parse(b"From: MAILER-DAEMON@bot.test\r\n\r\nx").unwrap();
        assert!(loop_risk(&bounce, own).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn the_hourly_limit_counts_per_sender_and_frees_up_after_an_hour() {
        let limit = RateLimit::new(2);
        assert!(limit.admit("a@p.test") && limit.admit("a@p.test"));
        assert!(!limit.admit("a@p.test"));
        assert!(limit.admit("b@p.test"));
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(limit.admit("a@p.test"));
    }
}

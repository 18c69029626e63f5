//! One open tab: a WebSocket that first receives its session's messages (`sync`), then
//! every change, and whose `message`/`button` frames are checked (size, rate, known button,
//! files uploaded by this session),
//! recorded, stored through the sink and only then acknowledged. A frame that breaks the
//! rules closes the socket with 1008/1009 and a reason the page shows.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket};
use futures::{SinkExt, StreamExt};
use switchboard_channel::{
    Attachment, ButtonPress, ChannelEvent, ConversationKey, EventSink, Inbound, MessageRef, UserRef,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::files::FileLink;
use crate::hub::Hub;
use crate::protocol::{self, ClientFrame, Role, ServerFrame, Violation};
use crate::session::Message;

/// Close code when the gateway shuts down; the page reconnects to its successor.
const CLOSE_GOING_AWAY: u16 = 1001;
/// The reason a refused button press shows.
const STALE_BUTTON: &str = "This button is no longer active.";
/// The reason a message naming an unknown upload shows.
const FILE_GONE: &str = "An attached file is no longer available; attach it again.";

/// Serve one upgraded socket of session `session` until either side closes it.
pub(crate) async fn run(
    hub: Arc<Hub>,
    sink: Arc<dyn EventSink>,
    session: String,
    shutdown: CancellationToken,
    socket: WebSocket,
) {
    let mut attached = hub.attach(&session).await;
    let (mut out, mut incoming) = socket.split();
    let mut conn = Conn {
        hub: Arc::clone(&hub),
        sink,
        session: session.clone(),
        refusals: 0,
    };
    let close = loop {
        let text = tokio::select! {
            queued = attached.rx.recv() => match queued {
                Some(text) => text,
                None => break Some(Violation::try_again("session closed")),
            },
            () = attached.evicted.cancelled() => break Some(Violation::try_again("too far behind; reconnect")),
            () = shutdown.cancelled() => break Some(Violation { code: CLOSE_GOING_AWAY, reason: "gateway restarting".into() }),
            frame = incoming.next() => match frame {
                Some(Ok(WsMessage::Text(text))) => match conn.handle(text.as_str()).await {
                    Ok(reply) => reply,
                    Err(violation) => break Some(violation),
                },
                Some(Ok(WsMessage::Binary(_))) => {
                    break Some(Violation::policy("bad frame: binary frames are not accepted"));
                }
                Some(Ok(WsMessage::Close(_)) | Err(_)) | None => break None,
                Some(Ok(_)) => continue, // ping and pong are answered by the library
            },
        };
        if out.send(WsMessage::Text(text.into())).await.is_err() {
            break None;
        }
    };
    hub.detach(&session, attached.socket);
    if let Some(violation) = close {
        tracing::debug!(channel = %hub.name, code = violation.code, reason = %violation.reason, "closing a web chat socket");
        let frame = CloseFrame {
            code: violation.code,
            reason: protocol::truncate(&violation.reason, 120).into(),
        };
        let _ = out.send(WsMessage::Close(Some(frame))).await;
    }
    let _ = out.close().await;
}

/// What the session's state said about one client frame.
enum Triage {
    /// First time: recorded, to be stored.
    Fresh,
    /// Handled before (a resend after reconnect): store again (the inbox drops it), ack.
    Resend,
    /// Over the per-minute budget; room again after this long.
    Limited(std::time::Duration),
    /// A press of a button the session does not show.
    UnknownButton,
}

/// One socket's side of the conversation.
struct Conn {
    hub: Arc<Hub>,
    sink: Arc<dyn EventSink>,
    session: String,
    /// Frames refused in a row for the rate limit; a client that keeps going is cut off.
    refusals: u32,
}

fn refused(id: &str, reason: &str) -> String {
    ServerFrame::Refused { id, reason }.to_json()
}

impl Conn {
    /// Handle one text frame; `Ok` holds the reply for this socket (`ack` or `refused`).
    async fn handle(&mut self, text: &str) -> Result<String, Violation> {
        let frame = protocol::parse(text, self.hub.config.max_message_chars)?;
        let (id, verdict, event) = match frame {
            ClientFrame::Message { id, text, files }
                if text.trim().is_empty() && files.is_empty() =>
            {
                return Ok(refused(&id, "Empty message."));
            }
            ClientFrame::Message { id, text, files } => {
                let Some((attachments, links)) = self.files(&files).await else {
                    return Ok(refused(&id, FILE_GONE));
                };
                let verdict = self.record_message(&id, &text, links).await;
                let event = ChannelEvent::Message(Inbound {
                    key: self.key(),
                    event_id: self.event_id(&id),
                    user: self.user(),
                    text,
                    place: switchboard_channel::Place::Direct,
                    attachments,
                });
                (id, verdict, event)
            }
            ClientFrame::Button {
                id,
                message,
                payload,
            } => {
                let verdict = self.record_press(&id, &message, &payload).await;
                let event = ChannelEvent::Button(ButtonPress {
                    key: self.key(),
                    event_id: self.event_id(&id),
                    user: self.user(),
                    payload,
                    message: Some(MessageRef::new(message)),
                    reply_token: None,
                    place: switchboard_channel::Place::Direct,
                });
                (id, verdict, event)
            }
        };
        match verdict {
            Triage::Limited(wait) => self.refuse_for_rate(&id, wait),
            Triage::UnknownButton => Ok(refused(&id, STALE_BUTTON)),
            Triage::Fresh | Triage::Resend => {
                self.refusals = 0;
                self.store(event, &id).await
            }
        }
    }

    /// Hand the event to the sink; only a stored event is acknowledged.
    async fn store(&self, event: ChannelEvent, id: &str) -> Result<String, Violation> {
        if let Err(bad) = event.check_ids() {
            tracing::warn!(channel = %self.hub.name, reason = %bad, "refused a web chat frame with a bad id");
            return Ok(refused(id, "Bad id."));
        }
        if let Err(e) = self.sink.deliver(event).await {
            tracing::error!(channel = %self.hub.name, error = %e, "could not store a web chat message; the page will resend it");
            return Err(Violation::try_again(
                "could not store the message; it will be resent",
            ));
        }
        Ok(ServerFrame::Ack { id }.to_json())
    }

    /// The attachments (for the core) and links (for the transcript) of uploaded files
    /// `ids`; `None` when one is not this session's stored file.
    async fn files(&self, ids: &[String]) -> Option<(Vec<Attachment>, Vec<FileLink>)> {
        let mut found = (Vec::new(), Vec::new());
        if ids.is_empty() {
            return Some(found);
        }
        let files = self.hub.files.as_ref()?;
        for id in ids {
            let meta = files.meta(id).await.filter(|m| m.session == self.session)?;
            found.0.push(meta.attachment(id));
            found.1.push(FileLink {
                id: id.clone(),
                name: meta.name,
                size: meta.size,
                voice_ms: None,
            });
        }
        Some(found)
    }

    /// Count, remember and show a typed message (or start a new conversation).
    async fn record_message(&self, id: &str, text: &str, files: Vec<FileLink>) -> Triage {
        let config = &self.hub.config;
        let (per_minute, keep, max_chars) = (
            config.max_messages_per_minute,
            config.history_messages,
            config.max_message_chars,
        );
        let new_conversation = is_new_command(text);
        let message = Message::new(format!("u-{id}"), Role::User, text.to_owned(), Vec::new())
            .with_files(files);
        self.hub
            .with(&self.session, |s| {
                if let Err(wait) = s.admit(Instant::now(), per_minute) {
                    return Triage::Limited(wait);
                }
                if s.seen(id) {
                    return Triage::Resend;
                }
                s.remember(id);
                if new_conversation {
                    s.clear(max_chars);
                } else {
                    s.push(message, keep);
                }
                Triage::Fresh
            })
            .await
    }

    /// Count and remember a button press of a button the session shows.
    async fn record_press(&self, id: &str, message: &str, payload: &str) -> Triage {
        let per_minute = self.hub.config.max_messages_per_minute;
        self.hub
            .with(&self.session, |s| {
                if let Err(wait) = s.admit(Instant::now(), per_minute) {
                    return Triage::Limited(wait);
                }
                if s.seen(id) {
                    return Triage::Resend;
                }
                if !s.has_button(message, payload) {
                    return Triage::UnknownButton;
                }
                s.remember(id);
                Triage::Fresh
            })
            .await
    }

    /// Refuse a frame over the rate limit; a client that ignores a full minute's worth of
    /// refusals is closed with 1008.
    fn refuse_for_rate(
        &mut self,
        id: &str,
        wait: std::time::Duration,
    ) -> Result<String, Violation> {
        let per_minute = self.hub.config.max_messages_per_minute;
        self.refusals += 1;
        if self.refusals > per_minute {
            return Err(Violation::policy(format!(
                "rate limit exceeded: at most {per_minute} messages a minute"
            )));
        }
        let reason = format!(
            "Slow down: at most {per_minute} messages a minute. Try again in {} s.",
            wait.as_secs().max(1)
        );
        Ok(refused(id, &reason))
    }

    fn key(&self) -> ConversationKey {
        ConversationKey::new(self.hub.name.clone(), self.session.clone())
    }

    /// Namespaced by session, so one browser cannot pre-empt another's ids.
    fn event_id(&self, id: &str) -> String {
        format!("{}:{id}", self.session)
    }

    fn user(&self) -> UserRef {
        UserRef {
            id: self.session.clone(),
            name: None,
        }
    }
}

/// Whether `text` asks the core for a new conversation (`/new`, `/reset`, any case, with an
/// optional `@bot` suffix), after which the page starts from an empty transcript.
fn is_new_command(text: &str) -> bool {
    let Some(word) = text.split_whitespace().next() else {
        return false;
    };
    let Some(command) = word.strip_prefix('/') else {
        return false;
    };
    let name = command.split('@').next().unwrap_or_default();
    name.eq_ignore_ascii_case("new") || name.eq_ignore_ascii_case("reset")
}

#[cfg(test)]
mod tests {
    use super::is_new_command;

    #[test]
    fn new_and_reset_start_a_new_conversation_and_nothing_else_does() {
        for text in ["/new", " /NEW@bot ", "/reset please"] {
            assert!(is_new_command(text), "{text}");
        }
        for text in ["new", "/news", "/stop", "", "tell me /new"] {
            assert!(!is_new_command(text), "{text}");
        }
    }
}

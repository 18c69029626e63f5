//! One browser session's state: its transcript (the last N messages, already rendered), the
//! sockets of its open tabs, the ids of frames it sent recently and its rate window. Pure
//! state under the hub's lock: nothing here awaits.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_channel::Button;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::files::FileLink;
use crate::html;
use crate::protocol::{MessageView, Role, ServerFrame};

/// Client frame ids remembered per session to recognise resends after a reconnect.
const SEEN_IDS: usize = 256;
/// The window `max_messages_per_minute` counts over.
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// One message of a transcript. The text is kept (and saved) as written; the HTML is derived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Message {
    pub(crate) id: String,
    pub(crate) role: Role,
    pub(crate) text: String,
    #[serde(default)]
    pub(crate) buttons: Vec<Button>,
    #[serde(default)]
    pub(crate) notice: Option<String>,
    /// Files that came with the message (a person's uploads, a file the agent sent), shown
    /// as download links under its text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) files: Vec<FileLink>,
    #[serde(skip)]
    pub(crate) html: String,
}

impl Message {
    /// A message with its HTML rendered.
    pub(crate) fn new(id: String, role: Role, text: String, buttons: Vec<Button>) -> Self {
        let mut message = Self {
            id,
            role,
            text,
            buttons,
            notice: None,
            files: Vec::new(),
            html: String::new(),
        };
        message.rerender();
        message
    }

    /// The message with download links to `files` under its text.
    pub(crate) fn with_files(mut self, files: Vec<FileLink>) -> Self {
        self.files = files;
        self.rerender();
        self
    }

    /// Derive the HTML from the text (after loading, or after an edit).
    pub(crate) fn rerender(&mut self) {
        self.html = match self.role {
            Role::User if self.text.is_empty() => String::new(),
            Role::User => html::user_html(&self.text),
            Role::Bot => html::bot_html(&self.text),
        };
        self.html.push_str(&html::files_html(&self.files));
    }

    pub(crate) fn view(&self) -> MessageView<'_> {
        MessageView {
            id: &self.id,
            role: self.role,
            html: &self.html,
            buttons: &self.buttons,
            notice: self.notice.as_deref(),
        }
    }
}

/// The sending half of one open socket.
pub(crate) struct Socket {
    pub(crate) id: u64,
    pub(crate) tx: mpsc::Sender<String>,
    /// Cancelled when the socket cannot keep up; its task closes it and the tab resyncs.
    pub(crate) evicted: CancellationToken,
}

/// One browser session.
pub(crate) struct Session {
    pub(crate) messages: VecDeque<Message>,
    pub(crate) sockets: Vec<Socket>,
    seen: VecDeque<String>,
    sent_at: VecDeque<Instant>,
    /// Changed since it was last saved.
    pub(crate) dirty: bool,
    /// A save is already scheduled.
    pub(crate) flush_scheduled: bool,
    pub(crate) last_active: Instant,
    /// The saved file's modification time as of this process's last load or save of it.
    pub(crate) on_disk: Option<std::time::SystemTime>,
}

impl Session {
    /// A session holding `messages` (loaded from disk, or none).
    pub(crate) fn new(messages: Vec<Message>) -> Self {
        Self {
            messages: messages.into(),
            sockets: Vec::new(),
            seen: VecDeque::new(),
            sent_at: VecDeque::new(),
            dirty: false,
            flush_scheduled: false,
            last_active: Instant::now(),
            on_disk: None,
        }
    }

    /// The frame every new socket starts with.
    pub(crate) fn sync_frame(&self, max_message_chars: usize) -> String {
        ServerFrame::Sync {
            messages: self.messages.iter().map(Message::view).collect(),
            max_message_chars,
        }
        .to_json()
    }

    /// Send `frame` to every open socket; one that is full is evicted (it will resync).
    pub(crate) fn broadcast(&mut self, frame: &str) {
        self.sockets.retain(|socket| {
            let ok = socket.tx.try_send(frame.to_owned()).is_ok();
            if !ok {
                socket.evicted.cancel();
            }
            ok
        });
    }

    fn touched(&mut self) {
        self.dirty = true;
        self.last_active = Instant::now();
    }

    /// Append `message` (dropping the oldest past `keep`) and tell every tab.
    pub(crate) fn push(&mut self, message: Message, keep: usize) {
        let frame = ServerFrame::Send {
            message: message.view(),
        }
        .to_json();
        self.messages.push_back(message);
        while self.messages.len() > keep {
            self.messages.pop_front();
        }
        self.touched();
        self.broadcast(&frame);
    }

    /// Apply `change` to message `id` and tell every tab; false when there is no such message.
    pub(crate) fn update(&mut self, id: &str, change: impl FnOnce(&mut Message)) -> bool {
        let Some(message) = self.messages.iter_mut().find(|m| m.id == id) else {
            return false;
        };
        change(message);
        message.rerender();
        let frame = ServerFrame::Edit {
            message: message.view(),
        }
        .to_json();
        self.touched();
        self.broadcast(&frame);
        true
    }

    /// Remove message `id` and tell every tab; false when there is no such message.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        let before = self.messages.len();
        self.messages.retain(|m| m.id != id);
        if self.messages.len() == before {
            return false;
        }
        self.touched();
        self.broadcast(&ServerFrame::Delete { id }.to_json());
        true
    }

    /// Forget the transcript (a new conversation) and tell every tab.
    pub(crate) fn clear(&mut self, max_message_chars: usize) {
        self.messages.clear();
        self.touched();
        let frame = self.sync_frame(max_message_chars);
        self.broadcast(&frame);
    }

    /// Whether message `id` carries a button with `payload`.
    pub(crate) fn has_button(&self, id: &str, payload: &str) -> bool {
        self.messages
            .iter()
            .any(|m| m.id == id && m.buttons.iter().any(|b| b.payload == payload))
    }

    /// Whether a frame with this client id was handled before (a resend).
    pub(crate) fn seen(&self, id: &str) -> bool {
        self.seen.iter().any(|s| s == id)
    }

    /// Remember a handled client frame id.
    pub(crate) fn remember(&mut self, id: &str) {
        self.seen.push_back(id.to_owned());
        while self.seen.len() > SEEN_IDS {
            self.seen.pop_front();
        }
    }

    /// Count one frame against the per-minute budget, or say how long until there is room.
    pub(crate) fn admit(&mut self, now: Instant, per_minute: u32) -> Result<(), Duration> {
        while self
            .sent_at
            .front()
            .is_some_and(|t| now.duration_since(*t) >= RATE_WINDOW)
        {
            self.sent_at.pop_front();
        }
        if self.sent_at.len() >= per_minute as usize {
            let oldest = self.sent_at.front().copied().unwrap_or(now);
            return Err(RATE_WINDOW.saturating_sub(now.duration_since(oldest)));
        }
        self.sent_at.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot(id: &str, text: &str) -> Message {
        Message::new(id.into(), Role::Bot, text.into(), Vec::new())
    }

    fn with_socket(session: &mut Session, capacity: usize) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel(capacity);
        session.sockets.push(Socket {
            id: 1,
            tx,
            evicted: CancellationToken::new(),
        });
        rx
    }

    #[tokio::test]
    async fn push_keeps_only_the_last_messages_and_tells_every_socket() {
        let mut session = Session::new(Vec::new());
        let mut rx = with_socket(&mut session, 8);
        for i in 0..4 {
            session.push(bot(&format!("m{i}"), "hi"), 3);
        }
        let ids: Vec<_> = session.messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["m1", "m2", "m3"]);
        let first: serde_json::Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(first["type"], "send");
        assert_eq!(first["message"]["html"], "<p>hi</p>");
        assert!(session.dirty);
    }

    #[tokio::test]
    async fn edits_rerender_and_unknown_ids_are_reported() {
        let mut session = Session::new(vec![bot("m1", "a")]);
        assert!(session.update("m1", |m| m.text = "**b**".into()));
        assert_eq!(session.messages[0].html, "<p><strong>b</strong></p>");
        assert!(!session.update("nope", |_| {}));
        assert!(!session.remove("nope"));
        assert!(session.remove("m1") && session.messages.is_empty());
    }

    #[tokio::test]
    async fn a_socket_that_cannot_keep_up_is_evicted() {
        let mut session = Session::new(Vec::new());
        let _rx = with_socket(&mut session, 1);
        let token = session.sockets[0].evicted.clone();
        session.push(bot("m1", "a"), 10);
        assert_eq!(session.sockets.len(), 1);
        session.push(bot("m2", "b"), 10);
        assert!(session.sockets.is_empty() && token.is_cancelled());
    }

    #[test]
    fn the_rate_window_refuses_past_the_limit_and_recovers_after_a_minute() {
        let mut session = Session::new(Vec::new());
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(session.admit(start, 3), Ok(()));
        }
        let later = start + Duration::from_secs(20);
        assert_eq!(session.admit(later, 3), Err(Duration::from_secs(40)));
        assert_eq!(session.admit(start + RATE_WINDOW, 3), Ok(()));
    }

    #[test]
    fn seen_ids_are_remembered_up_to_a_cap() {
        let mut session = Session::new(Vec::new());
        session.remember("first");
        assert!(session.seen("first") && !session.seen("other"));
        for i in 0..SEEN_IDS {
            session.remember(&i.to_string());
        }
        assert!(!session.seen("first"));
    }

    #[test]
    fn buttons_are_found_only_on_their_own_message() {
        let button = Button {
            label: "Yes".into(),
            payload: "yes".into(),
        };
        let message = Message::new("m1".into(), Role::Bot, "ok?".into(), vec![button]);
        let session = Session::new(vec![message, bot("m2", "x")]);
        assert!(session.has_button("m1", "yes"));
        assert!(!session.has_button("m2", "yes") && !session.has_button("m1", "no"));
    }

    #[test]
    fn saved_messages_round_trip_without_their_html() {
        let message = bot("m1", "**x**");
        let json = serde_json::to_string(&message).unwrap();
        assert!(!json.contains("strong"), "{json}");
        let mut back: Message = serde_json::from_str(&json).unwrap();
        back.rerender();
        assert_eq!(back, message);
    }
}

//! `FakeChannel`: an in-process `Channel` that records every send, edit and delete with its
//! time, lets a test inject events through the real inbox, and can fail on demand
//! (including 429s when edits come faster than its rate allows).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Button, ButtonPress, Channel, ChannelError, ChannelEvent, ConversationKey, Delivery, EventSink,
    Inbound, Limits, MessageRef, Outbound, SinkError, UserRef,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the channel was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A new message.
    Send,
    /// An edit of an earlier message.
    Edit,
    /// A deletion.
    Delete,
    /// A typing indicator.
    Typing,
    /// An answer to a button press.
    AnswerButton,
}

/// One recorded call.
#[derive(Clone, Debug)]
pub struct Call {
    /// Which operation.
    pub op: Op,
    /// Conversation it targeted.
    pub key: ConversationKey,
    /// Message id (assigned for sends).
    pub msg_id: String,
    /// Text sent (empty for typing/deletes).
    pub text: String,
    /// When it happened (tokio time, so paused-time tests see virtual time).
    pub at: Instant,
    /// Whether the channel refused it (the refusal is recorded too).
    pub refused: bool,
    /// Buttons attached (sends and edits).
    pub buttons: Vec<Button>,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    failures: VecDeque<ChannelError>,
    /// The gateway's sink, and the runtime the gateway started this channel on.
    sink: Option<(Arc<dyn EventSink>, tokio::runtime::Handle)>,
    last_write: Option<Instant>,
}

/// The fake channel.
pub struct FakeChannel {
    name: String,
    limits: Limits,
    /// When set, a send/edit sooner than this after the previous one gets a 429.
    enforce_interval: Option<Duration>,
    inner: Mutex<Inner>,
    next_id: AtomicU64,
    next_event: AtomicU64,
}

impl FakeChannel {
    /// A channel named `name` with default limits.
    pub fn new(name: &str) -> Arc<Self> {
        Self::with_limits(
            name,
            Limits {
                min_edit_interval: Duration::ZERO,
                ..Limits::default()
            },
            None,
        )
    }

    /// A channel with explicit limits; with `enforce_interval`, writes closer together than
    /// that are refused with `RateLimited`.
    pub fn with_limits(
        name: &str,
        limits: Limits,
        enforce_interval: Option<Duration>,
    ) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            limits,
            enforce_interval,
            inner: Mutex::new(Inner::default()),
            next_id: AtomicU64::new(1),
            next_event: AtomicU64::new(1),
        })
    }

    /// Make the next sends/edits fail with these errors, in order.
    pub fn fail_next(&self, errors: impl IntoIterator<Item = ChannelError>) {
        self.inner.lock().unwrap().failures.extend(errors);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.inner.lock().unwrap().calls.clone()
    }

    /// Sends, edits and deletes (not typing) so far.
    pub fn writes(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| matches!(c.op, Op::Send | Op::Edit | Op::Delete))
            .collect()
    }

    /// The current text of every message the bot posted in `key` and did not delete, in
    /// posting order.
    pub fn transcript(&self, key: &ConversationKey) -> Vec<String> {
        let mut messages: Vec<(String, String)> = Vec::new();
        for call in self
            .calls()
            .into_iter()
            .filter(|c| &c.key == key && !c.refused)
        {
            match call.op {
                Op::Send => messages.push((call.msg_id, call.text)),
                Op::Edit => {
                    if let Some(m) = messages.iter_mut().find(|(id, _)| *id == call.msg_id) {
                        m.1 = call.text;
                    }
                }
                Op::Delete => messages.retain(|(id, _)| *id != call.msg_id),
                Op::Typing | Op::AnswerButton => {}
            }
        }
        messages.into_iter().map(|(_, text)| text).collect()
    }

    /// Deliver a text message from `user` into the gateway's inbox, with a fresh event id.
    pub async fn say(
        &self,
        key: &ConversationKey,
        user: &str,
        text: &str,
    ) -> Result<Delivery, SinkError> {
        let id = self.next_event.fetch_add(1, Ordering::SeqCst);
        self.say_with_id(key, user, text, &format!("{}-{id}", self.name))
            .await
    }

    /// Deliver a text message with a given platform event id (to test redeliveries).
    pub async fn say_with_id(
        &self,
        key: &ConversationKey,
        user: &str,
        text: &str,
        event_id: &str,
    ) -> Result<Delivery, SinkError> {
        self.inject(ChannelEvent::Message(Inbound {
            key: key.clone(),
            event_id: event_id.to_owned(),
            user: UserRef {
                id: user.to_owned(),
                name: None,
            },
            text: text.to_owned(),
            place: switchboard_channel::Place::Direct,
            attachments: Vec::new(),
        }))
        .await
    }

    /// Press a button with `payload` as `user`, with a fresh event id.
    pub async fn press(
        &self,
        key: &ConversationKey,
        user: &str,
        payload: &str,
    ) -> Result<Delivery, SinkError> {
        let id = self.next_event.fetch_add(1, Ordering::SeqCst);
        self.inject(ChannelEvent::Button(ButtonPress {
            key: key.clone(),
            event_id: format!("{}-press-{id}", self.name),
            user: UserRef {
                id: user.to_owned(),
                name: None,
            },
            payload: payload.to_owned(),
            message: None,
            reply_token: None,
            place: switchboard_channel::Place::Direct,
        }))
        .await
    }

    /// The buttons of the newest message that has any, in `key`.
    pub fn last_buttons(&self, key: &ConversationKey) -> Vec<Button> {
        self.calls()
            .into_iter()
            .rev()
            .find(|c| &c.key == key && !c.buttons.is_empty())
            .map(|c| c.buttons)
            .unwrap_or_default()
    }

    /// Answers given to button presses, in order.
    pub fn button_answers(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| c.op == Op::AnswerButton)
            .map(|c| c.text)
            .collect()
    }

    /// Deliver any event. Panics if the gateway has not started the channel.
    ///
    /// Delivered on the gateway's own runtime, as a platform's request would be: what the
    /// delivery starts (the conversation's actor) then lives and dies with that gateway, so
    /// a test that kills a gateway's runtime (`kill -9`, in process) kills its turns too,
    /// instead of leaving them running on the test's runtime beside the restarted one.
    pub async fn inject(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        let (sink, gateway) = self
            .inner
            .lock()
            .unwrap()
            .sink
            .clone()
            .expect("channel not started by the gateway");
        match gateway
            .spawn(async move { sink.deliver(event).await })
            .await
        {
            Ok(delivered) => delivered,
            Err(gone) => Err(SinkError(format!("the gateway is gone: {gone}"))),
        }
    }

    /// Wait (up to `within`) until `done` holds for the recorded calls, and return them;
    /// panic naming `what` and the calls so far otherwise.
    pub async fn wait_until(
        &self,
        within: Duration,
        what: &str,
        done: impl Fn(&[Call]) -> bool,
    ) -> Vec<Call> {
        crate::eventually(within, what, async || {
            let calls = self.calls();
            if done(&calls) { Ok(calls) } else { Err(calls) }
        })
        .await
    }

    fn record(
        &self,
        op: Op,
        key: &ConversationKey,
        msg_id: String,
        text: &str,
    ) -> Result<String, ChannelError> {
        self.record_with(op, key, msg_id, text, Vec::new())
    }

    fn record_with(
        &self,
        op: Op,
        key: &ConversationKey,
        msg_id: String,
        text: &str,
        buttons: Vec<Button>,
    ) -> Result<String, ChannelError> {
        let mut inner = self.inner.lock().unwrap();
        let now = Instant::now();
        let mut refusal = None;
        if matches!(op, Op::Send | Op::Edit) {
            refusal = inner.failures.pop_front();
            if refusal.is_none()
                && let (Some(min), Some(last)) = (self.enforce_interval, inner.last_write)
                && now < last + min
            {
                refusal = Some(ChannelError::RateLimited {
                    retry_after: last + min - now,
                });
            }
            if refusal.is_none()
                && self.limits.length_unit.measure(text) > self.limits.max_message_len
            {
                refusal = Some(ChannelError::TooLong);
            }
            if refusal.is_none() {
                inner.last_write = Some(now);
            }
        }
        inner.calls.push(Call {
            op,
            key: key.clone(),
            msg_id: msg_id.clone(),
            text: text.to_owned(),
            at: now,
            refused: refusal.is_some(),
            buttons,
        });
        match refusal {
            Some(err) => Err(err),
            None => Ok(msg_id),
        }
    }
}

#[async_trait]
impl Channel for FakeChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn limits(&self) -> Limits {
        self.limits.clone()
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let runtime = tokio::runtime::Handle::current();
        self.inner.lock().unwrap().sink = Some((sink, runtime));
        shutdown.cancelled().await;
        Ok(())
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst).to_string();
        self.record_with(Op::Send, key, id, &msg.text, msg.buttons.clone())
            .map(MessageRef::new)
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        self.record_with(
            Op::Edit,
            key,
            msg_ref.id.clone(),
            &msg.text,
            msg.buttons.clone(),
        )
        .map(drop)
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        self.record(Op::Delete, key, msg_ref.id.clone(), "")
            .map(drop)
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        self.record(Op::Typing, key, String::new(), "").map(drop)
    }

    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.record(Op::AnswerButton, &press.key, press.event_id.clone(), text)
            .map(drop)
    }
}

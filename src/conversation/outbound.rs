//! The outbound path: every text the conversation layer sends (streamed answers, approval
//! prompts, notices) leaves through [`Outbox`], which owns the channels, the per-chat
//! governor, the scrubber and the draft pacing, so no caller can post around them. The
//! channels themselves stay private to this module: the rest of the core names a chat's
//! channel by an opaque [`Route`], which can be written through nothing but [`Outbox`].
//! Before the conversation core exists, the gateway holds its channels as [`Channels`], which
//! can start them, read their health and name them, but neither send nor edit.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_channel::{
    AnswerDelivery, Attachment, Button, ButtonPress, Channel, ChannelError, ConversationKey,
    EventSink, FileError, Health, Limits, MessageRef,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::draft::{Draft, DraftOutcome, DraftSettings, PostedHook};
use crate::governor::Governor;
use crate::scrub::Scrubber;
use crate::tools::FilePoster;
use crate::voice::Speaker;

/// One configured channel as the core sees it: it can tell its limits, and every write to
/// it goes through [`Outbox`] (the handle inside is private to this module).
#[derive(Clone)]
pub struct Route(Arc<dyn Channel>);

impl Route {
    /// The channel's limits in `key` (message length, buttons, edit pacing).
    pub fn limits_for(&self, key: &ConversationKey) -> Limits {
        self.0.limits_for(key)
    }

    /// Whether this process reaches `key`'s chat directly ([`Channel::reaches`]).
    pub fn reaches(&self, key: &ConversationKey) -> bool {
        self.0.reaches(key)
    }
}

/// Attachments are fetched through the route: a read, nothing is posted.
#[async_trait::async_trait]
impl crate::attach::Source for Route {
    fn max_attachment_bytes(&self) -> u64 {
        self.0.max_attachment_bytes()
    }

    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        self.0.download(file, max_bytes).await
    }
}

/// Every configured channel, from the moment the gateway is given one: it can start their
/// receive loops, report their health and names, and become the [`Outbox`]; nothing here
/// sends or edits, so no caller outside this module can post around the outbound path.
#[derive(Clone, Default)]
pub struct Channels(Vec<Arc<dyn Channel>>);

impl Channels {
    /// Add a channel instance.
    pub fn add(&mut self, channel: Arc<dyn Channel>) {
        self.0.push(channel);
    }

    /// The instance names, in the order the channels were added.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|c| c.name()).collect()
    }

    /// Each channel's messages refused for good, by reason, for `/metrics`.
    pub fn undelivered(&self) -> Vec<(String, &'static str, u64)> {
        self.0
            .iter()
            .flat_map(|c| {
                let name = c.name().to_owned();
                c.undelivered()
                    .into_iter()
                    .map(move |(reason, n)| (name.clone(), reason, n))
            })
            .collect()
    }

    /// Each channel's name and health, for `/readyz`.
    pub fn health(&self) -> Vec<(String, Health)> {
        self.0
            .iter()
            .map(|c| (c.name().to_owned(), c.health()))
            .collect()
    }

    /// Start every channel's receive loop on `background` (each stops on a child of
    /// `shutdown`, handing events to `sink`); returns their HTTP routes (webhooks, pages,
    /// and apart from those the upload routes that keep their own body limit).
    pub fn start_all(
        &self,
        sink: &Arc<dyn EventSink>,
        background: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> ChannelRoutes {
        let mut routes = ChannelRoutes::default();
        for channel in &self.0 {
            routes.limited.extend(channel.routes(Arc::clone(sink)));
            routes
                .uploads
                .extend(channel.upload_routes(Arc::clone(sink)));
            let (channel, sink, stop) = (
                Arc::clone(channel),
                Arc::clone(sink),
                shutdown.child_token(),
            );
            background.spawn(async move {
                if let Err(err) = channel.start(sink, stop).await {
                    tracing::error!(channel = channel.name(), error = %err, "channel stopped");
                }
            });
        }
        routes
    }
}

/// The HTTP routes the channels mount on the shared server.
#[derive(Default)]
pub struct ChannelRoutes {
    /// Webhooks and pages, under the gateway's request-body limit.
    pub limited: Vec<axum::Router>,
    /// Upload routes, each enforcing its own limit instead (see `Channel::upload_routes`).
    pub uploads: Vec<axum::Router>,
}

impl From<Vec<Arc<dyn Channel>>> for Channels {
    fn from(channels: Vec<Arc<dyn Channel>>) -> Self {
        Self(channels)
    }
}

/// Channels plus what every message to them passes through.
pub struct Outbox {
    /// Channels by instance name.
    channels: HashMap<String, Arc<dyn Channel>>,
    /// Per-chat send/edit budgets, shared by every draft in a chat.
    governor: Arc<Governor>,
    /// Redacts credentials from everything posted.
    scrubber: Arc<Scrubber>,
    /// Draft pacing.
    draft: DraftSettings,
    /// Speaks answers as voice notes (`[voice]`), when configured.
    speaker: Option<Arc<Speaker>>,
}

impl Outbox {
    /// The outbound path over `channels`.
    pub fn new(
        channels: &Channels,
        governor: Arc<Governor>,
        scrubber: Arc<Scrubber>,
        draft: DraftSettings,
    ) -> Self {
        Self {
            channels: channels
                .0
                .iter()
                .map(|c| (c.name().to_owned(), Arc::clone(c)))
                .collect(),
            governor,
            scrubber,
            draft,
            speaker: None,
        }
    }

    /// This outbound path, speaking answers through `speaker` when a turn asks it to.
    #[must_use]
    pub fn with_voice(mut self, speaker: Option<Arc<Speaker>>) -> Self {
        self.speaker = speaker;
        self
    }

    /// Whether answers can be spoken here (`[voice]` is configured).
    pub fn speaks(&self) -> bool {
        self.speaker.is_some()
    }

    /// The route to the channel instance named `name`, if configured.
    pub fn route(&self, name: &str) -> Option<Route> {
        self.channels.get(name).map(|c| Route(Arc::clone(c)))
    }

    /// Show the typing indicator in `key` (best effort).
    pub async fn typing(&self, route: &Route, key: &ConversationKey) {
        let _ = route.0.typing(key).await;
    }

    /// A conversation in `key` retired: what the outbound path kept for its chat goes if it
    /// no longer matters (see [`Governor::forget_if_quiet`]).
    pub fn retired(&self, key: &ConversationKey) {
        self.governor.forget_if_quiet(key);
    }

    /// The scrubber outbound text and stored history pass through.
    pub fn scrubber(&self) -> &Arc<Scrubber> {
        &self.scrubber
    }

    /// A live draft in `key`, scrubbed and governed. `posted` earlier messages are edited
    /// instead of sent again (a turn resumed after a restart); `hook` learns of new ones.
    pub fn draft(
        &self,
        route: &Route,
        key: &ConversationKey,
        posted: Vec<MessageRef>,
        hook: Option<PostedHook>,
    ) -> Draft {
        Draft::new(Arc::clone(&route.0), key.clone(), self.draft, posted, hook)
            .scrubbed(Arc::clone(&self.scrubber))
            .governed(Arc::clone(&self.governor))
    }

    /// Post one complete message (with `buttons`, if any) in `key`.
    pub async fn post(
        &self,
        route: &Route,
        key: &ConversationKey,
        text: &str,
        buttons: Vec<Button>,
    ) -> Result<DraftOutcome, ChannelError> {
        self.draft(route, key, Vec::new(), None)
            .with_buttons(buttons)
            .finish(text)
            .await
    }

    /// Replace the text of a message posted earlier (an approval prompt once decided): the
    /// edit is scrubbed and waits for the chat's budget like any other write. On a platform
    /// that cannot edit (`Limits::delivery` is not `Edits`) the message stays as posted and
    /// nothing is sent: its callers tell the outcome in the chat as well.
    pub async fn edit(
        &self,
        route: &Route,
        key: &ConversationKey,
        message: &MessageRef,
        text: &str,
    ) -> Result<(), ChannelError> {
        let limits = route.limits_for(key);
        if !matches!(limits.delivery, AnswerDelivery::Edits { .. }) {
            return Ok(());
        }
        let text = self.scrubber.scrub(text).into_owned();
        self.governor.take(key, &limits).await;
        route
            .0
            .edit(key, message, &switchboard_channel::Outbound::text(text))
            .await
    }

    /// Tell the user something short: on the pressed button when there is one (a toast, not
    /// a new message), otherwise as a message in the chat; scrubbed either way. Best effort:
    /// a failure is logged.
    pub async fn notice(
        &self,
        route: &Route,
        key: &ConversationKey,
        press: Option<&ButtonPress>,
        text: &str,
    ) {
        let sent = match press {
            Some(press) => {
                let text = self.scrubber.scrub(text);
                route.0.answer_button(press, &text).await
            }
            None => self.post(route, key, text, Vec::new()).await.map(|_| ()),
        };
        if let Err(err) = sent {
            tracing::warn!(%key, error = %err, "could not deliver a notice");
        }
    }

    /// Answer a button press so only the person who pressed it sees the answer (a refused
    /// approval), scrubbed; the prompt and its buttons stay for the right person.
    pub async fn answer_privately(
        &self,
        route: &Route,
        press: &ButtonPress,
        text: &str,
    ) -> Result<(), ChannelError> {
        let text = self.scrubber.scrub(text);
        route.0.answer_privately(press, &text).await
    }
}

impl Outbox {
    /// Speak `answer` (markdown, sent as text already) in `key` as a voice note: scrubbed
    /// before the engine sees it, made speakable, encoded, and posted within the chat's
    /// budget. Returns the characters spoken, or `None` when nothing was posted: no
    /// `[voice]`, nothing to say, a channel without voice notes, or a failure, which is
    /// logged once as a WARN and leaves the text answer as it is.
    pub async fn speak(&self, route: &Route, key: &ConversationKey, answer: &str) -> Option<u64> {
        let speaker = self.speaker.as_ref()?;
        let text = speaker.speakable(&self.scrubber.scrub(answer));
        if text.is_empty() {
            return None;
        }
        let note = match speaker.speak(&text).await {
            Ok(note) => note,
            Err(err) => {
                tracing::warn!(%key, error = %err, "the answer was not spoken; it went out as text");
                return None;
            }
        };
        self.governor.take(key, &route.limits_for(key)).await;
        match route.0.send_voice(key, &note).await {
            Ok(_) => Some(text.chars().count() as u64),
            Err(FileError::Unsupported) => {
                tracing::debug!(%key, "this channel takes no voice notes; the answer went as text");
                None
            }
            Err(err) => {
                tracing::warn!(%key, error = %err, "the voice note was not delivered; the answer went out as text");
                None
            }
        }
    }

    /// A poster of files into `key` on `route`'s channel.
    pub fn file_poster(&self, route: &Route, key: &ConversationKey) -> FilePoster {
        FilePoster::new(
            Arc::clone(&route.0),
            Arc::clone(&self.governor),
            Arc::clone(&self.scrubber),
            key.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchboard_channel::UserRef;
    use switchboard_standins::FakeChannel;

    use super::*;

    const SECRET: &str = "configured-secret-value";

    fn outbound(fake: &Arc<FakeChannel>) -> Outbox {
        let channel: Arc<dyn Channel> = fake.clone();
        let draft = DraftSettings {
            chunk_min_chars: 1,
            min_interval: Duration::ZERO,
            first_send_hold: Duration::ZERO,
        };
        let scrubber = Arc::new(Scrubber::new([SECRET]));
        let channels = Channels::from(vec![channel]);
        Outbox::new(&channels, Arc::new(Governor::new()), scrubber, draft)
    }

    #[tokio::test]
    async fn an_edit_on_a_platform_without_edits_sends_nothing() {
        let limits = Limits {
            delivery: switchboard_channel::AnswerDelivery::Whole,
            ..Limits::default()
        };
        let fake = FakeChannel::with_limits("fake", limits, None);
        let out = outbound(&fake);
        let key = ConversationKey::new("fake", "c1");
        let route = out.route("fake").expect("configured");
        let posted = out.post(&route, &key, "prompt", Vec::new()).await.unwrap();
        out.edit(&route, &key, &posted.messages[0], "decided")
            .await
            .unwrap();
        assert_eq!(
            fake.transcript(&key),
            ["prompt"],
            "the message stays as posted"
        );
    }

    #[tokio::test]
    async fn the_channel_handle_starts_names_and_reports_health_without_sending() {
        let fake = FakeChannel::new("fake");
        let mut channels = Channels::default();
        channels.add(fake.clone());
        assert_eq!(channels.names(), ["fake"]);
        let health = channels.health();
        assert_eq!(health.len(), 1);
        assert_eq!(health[0].0, "fake");
        let sink: Arc<dyn EventSink> = switchboard_standins::RecordingSink::new();
        let (background, shutdown) = (TaskTracker::new(), CancellationToken::new());
        channels.start_all(&sink, &background, &shutdown);
        shutdown.cancel();
        background.close();
        tokio::time::timeout(Duration::from_secs(5), background.wait())
            .await
            .expect("the receive loop stops on shutdown");
        assert!(fake.calls().is_empty(), "starting sends nothing");
    }

    #[tokio::test]
    async fn posts_edits_notices_and_button_answers_are_all_scrubbed() {
        let fake = FakeChannel::new("fake");
        let out = outbound(&fake);
        let key = ConversationKey::new("fake", "c1");
        let route = out.route("fake").expect("configured");
        let text = format!("the key is {SECRET}");
        let posted = out.post(&route, &key, &text, Vec::new()).await.unwrap();
        out.edit(&route, &key, &posted.messages[0], &text)
            .await
            .unwrap();
        out.notice(&route, &key, None, &text).await;
        let press = ButtonPress {
            key: key.clone(),
            event_id: "p1".into(),
            user: UserRef {
                id: "alice".into(),
                name: None,
            },
            payload: "x".into(),
            message: None,
            reply_token: None,
            place: switchboard_channel::Place::Direct,
        };
        out.notice(&route, &key, Some(&press), &text).await;
        out.answer_privately(&route, &press, &text).await.unwrap();
        let calls = fake.calls();
        assert_eq!(calls.len(), 5, "{calls:#?}");
        for call in calls {
            assert!(!call.text.contains(SECRET), "{call:?}");
            assert!(call.text.contains("conf*[REDACTED]"), "{call:?}");
        }
        assert!(out.route("elsewhere").is_none());
    }
}

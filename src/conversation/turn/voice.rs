//! Speech in a turn: whether this answer is spoken (the conversation's `/voice` rule, else its
//! profile's, applied to whether the person sent a voice note), speaking it after the text
//! went out, and `/voice` itself.

use super::Turn;
use crate::budget::Meter;
use crate::command::VoiceSwitch;
use crate::config::VoiceRule;

impl Turn<'_> {
    /// Speak `answer` (already sent as text) when the rule says so, counting what was spoken
    /// on `meter` so it is stored with the turn's completion.
    pub(super) async fn speak(&self, answer: &str, spoken_to: bool, meter: Option<&mut Meter>) {
        if !self.rule().await.speaks(spoken_to) {
            return;
        }
        let out = &self.deps.outbound;
        if let Some(chars) = out.speak(self.channel, self.key(), answer).await {
            tracing::info!(chars, "answer spoken");
            if let Some(meter) = meter {
                meter.add_spoken(chars);
            }
        }
    }

    /// This conversation's voice rule: its own, else its profile's; off without `[voice]`.
    async fn rule(&self) -> VoiceRule {
        if !self.deps.outbound.speaks() {
            return VoiceRule::Off;
        }
        let profile = self.active.settings().voice;
        match self.deps.store.voice_choice(self.key()).await {
            Ok(own) => own.unwrap_or(profile),
            Err(err) => {
                tracing::warn!(error = %err, "could not read the conversation's voice rule; the profile's applies");
                profile
            }
        }
    }

    /// `/voice`: show the rule, or set this conversation's own (`auto` removes it).
    pub(super) async fn voice_command(
        &self,
        switch: Option<VoiceSwitch>,
    ) -> anyhow::Result<String> {
        if !self.deps.outbound.speaks() {
            return Ok("🔇 Voice answers are not set up on this gateway (`[voice]`).".into());
        }
        let own = match switch {
            None => return Ok(describe(self.rule().await)),
            Some(VoiceSwitch::On) => Some(VoiceRule::Always),
            Some(VoiceSwitch::Off) => Some(VoiceRule::Off),
            Some(VoiceSwitch::Auto) => None,
        };
        let store = self.deps.store.as_ref();
        store.set_voice(self.key(), own, self.now()).await?;
        Ok(describe(self.rule().await))
    }
}

/// The line `/voice` answers with.
fn describe(rule: VoiceRule) -> String {
    match rule {
        VoiceRule::Off => "🔇 Voice answers are off here.".into(),
        VoiceRule::WhenSpokenTo => {
            "🎙 I answer voice notes with a voice note (and the text) here.".into()
        }
        VoiceRule::Always => "🔊 I answer with a voice note (and the text) here.".into(),
    }
}

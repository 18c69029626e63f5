//! The profile and model of one live conversation: resolved when its actor starts, read by
//! every turn, changed by `/model` (which also stores the choice, so a restart or another
//! replica resolves the same model).

use std::sync::{Arc, Mutex};

use switchboard_channel::ConversationKey;

use super::TurnSettings;
use super::{Profile, Profiles};
use crate::provider::Provider;
use crate::store::{ModelChoice, ProfileStore, StoreError};

/// One conversation's profile and the model it uses now.
pub struct Active {
    /// The profile the config routes the conversation to.
    profile: Arc<Profile>,
    /// The model in use; a std mutex, since it is only read or replaced, never held
    /// across an await.
    model: Mutex<String>,
}

impl Profiles {
    /// Resolve `key`'s profile and its stored `/model` choice (ignored when made under
    /// another profile or for a model the profile no longer allows). A store failure is
    /// logged and the profile's default model is used. A profile of one model has no choice
    /// to read: every conversation's actor would otherwise wait on a read before its first
    /// turn for an answer known in advance.
    pub async fn activate(&self, store: &dyn ProfileStore, key: &ConversationKey) -> Active {
        let profile = self.for_key(key);
        let stored = match profile.models().len() {
            0 | 1 => Ok(None),
            _ => store.model_choice(key).await,
        };
        let chosen = match stored {
            Ok(choice) => choice,
            Err(err) => {
                tracing::warn!(%key, error = %err, "could not read the conversation's model; using the profile's default");
                None
            }
        };
        let model = chosen
            .filter(|c| c.profile == profile.name && profile.allows(&c.model))
            .map(|c| c.model)
            .or_else(|| profile.models().first().cloned())
            .unwrap_or_default();
        tracing::debug!(%key, profile = %profile.name, %model, "conversation profile resolved");
        Active {
            profile,
            model: Mutex::new(model),
        }
    }
}

impl Active {
    /// The profile, shared (a sub-task without a profile of its own runs under it).
    pub fn shared_profile(&self) -> Arc<Profile> {
        Arc::clone(&self.profile)
    }

    /// An active `profile` on `model` (no stored choice read).
    pub fn new(profile: Arc<Profile>, model: String) -> Self {
        Self {
            profile,
            model: Mutex::new(model),
        }
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The turn settings.
    pub fn settings(&self) -> &TurnSettings {
        &self.profile.settings
    }

    /// The model in use.
    pub fn model(&self) -> String {
        self.model.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The provider chain of the model in use.
    pub fn provider(&self) -> Arc<dyn Provider> {
        self.profile.provider(&self.model())
    }

    /// `/model` (list the models) or `/model <name>` (switch to it and store the choice):
    /// the reply for the chat.
    pub async fn model_command(
        &self,
        store: &dyn ProfileStore,
        key: &ConversationKey,
        wanted: Option<&str>,
        now_ms: i64,
    ) -> Result<String, StoreError> {
        let current = self.model();
        let Some(wanted) = wanted else {
            return Ok(self.list(&current));
        };
        if !self.profile.allows(wanted) {
            let allowed = self.profile.models().join("`, `");
            return Ok(format!(
                "`{wanted}` is not a model of this conversation. Choose one of: `{allowed}`."
            ));
        }
        let choice = ModelChoice {
            profile: self.profile.name.clone(),
            model: wanted.to_owned(),
        };
        store.set_model(key, &choice, now_ms).await?;
        if let Ok(mut model) = self.model.lock() {
            wanted.clone_into(&mut model);
        }
        tracing::info!(%key, profile = %self.profile.name, from = %current, to = %wanted, "model switched by /model");
        Ok(format!("🔀 Switched to `{wanted}`."))
    }

    /// The models this conversation may use, the one in use marked.
    fn list(&self, current: &str) -> String {
        let lines: Vec<String> = self
            .profile
            .models()
            .iter()
            .map(|m| match m == current {
                true => format!("• `{m}` (in use)"),
                false => format!("• `{m}`"),
            })
            .collect();
        format!(
            "Models for this conversation:\n{}\n\n`/model <name>` switches.",
            lines.join("\n")
        )
    }
}

//! The profile half of the store: the model each conversation chose with `/model` and the
//! voice rule it set with `/voice`, so each choice survives restarts and is seen by every
//! replica.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::ConversationKey;

use super::StoreError;
use super::backend::{Backend, SqlStore};
use crate::config::VoiceRule;

/// A conversation's `/model` choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// The agent profile it was made under.
    pub profile: String,
    /// The model chosen.
    pub model: String,
}

/// Where `/model` choices are kept.
#[async_trait]
pub trait ProfileStore: Send + Sync {
    /// Keep `choice` as `key`'s model (replacing an earlier one).
    async fn set_model(
        &self,
        key: &ConversationKey,
        choice: &ModelChoice,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// `key`'s choice, if it made one.
    async fn model_choice(&self, key: &ConversationKey) -> Result<Option<ModelChoice>, StoreError>;

    /// Keep `rule` as `key`'s voice rule, or with `None` go back to its profile's.
    async fn set_voice(
        &self,
        key: &ConversationKey,
        rule: Option<VoiceRule>,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// `key`'s own voice rule, if it set one.
    async fn voice_choice(&self, key: &ConversationKey) -> Result<Option<VoiceRule>, StoreError>;
}

#[async_trait]
impl<DB> ProfileStore for SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<i64>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<String>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn set_model(
        &self,
        key: &ConversationKey,
        choice: &ModelChoice,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO conversation_models (conversation_key, profile, model, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (conversation_key) DO UPDATE SET \
             profile = excluded.profile, model = excluded.model, updated_at = excluded.updated_at",
        )
        .bind(key.to_string())
        .bind(choice.profile.as_str())
        .bind(choice.model.as_str())
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn model_choice(&self, key: &ConversationKey) -> Result<Option<ModelChoice>, StoreError> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT profile, model FROM conversation_models WHERE conversation_key = $1",
        )
        .bind(key.to_string())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(profile, model)| ModelChoice { profile, model }))
    }

    async fn set_voice(
        &self,
        key: &ConversationKey,
        rule: Option<VoiceRule>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let query = match rule {
            Some(rule) => sqlx::query(
                "INSERT INTO conversation_voice (conversation_key, rule, updated_at) \
                 VALUES ($1, $2, $3) ON CONFLICT (conversation_key) DO UPDATE SET \
                 rule = excluded.rule, updated_at = excluded.updated_at",
            )
            .bind(key.to_string())
            .bind(rule.as_str())
            .bind(now_ms),
            None => sqlx::query("DELETE FROM conversation_voice WHERE conversation_key = $1")
                .bind(key.to_string()),
        };
        query.execute(&self.pool).await?;
        Ok(())
    }

    async fn voice_choice(&self, key: &ConversationKey) -> Result<Option<VoiceRule>, StoreError> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT rule FROM conversation_voice WHERE conversation_key = $1")
                .bind(key.to_string())
                .fetch_optional(&self.pool)
                .await?;
        row.map(|(rule,)| {
            rule.parse()
                .map_err(|e: String| StoreError::Corrupt(format!("conversation_voice.rule: {e}")))
        })
        .transpose()
    }
}

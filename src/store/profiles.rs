//! The profile half of the store: the model each conversation chose with `/model`, so the
//! choice survives restarts and is seen by every replica.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::ConversationKey;

use super::StoreError;
use super::backend::{Backend, SqlStore};

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
}

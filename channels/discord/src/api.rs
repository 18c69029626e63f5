//! Discord REST client: the outbound end of the channel (messages, typing, interaction
//! answers, the token check at start-up). One JSON call per method with the bot token; every
//! failure is classified into a `ChannelError` (see `errors`) and logged once here.
//!
//! Why not serenity's `Http` for these: with its rate limiter on it retries 429s internally
//! (the core's per-chat governor must see them), and with it off its error type drops the
//! `retry_after` a 429 carries. serenity still runs the gateway; this client shares its
//! connection pool.

use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;
use switchboard_channel::ChannelError;

use crate::errors::Failure;

/// The fields of a user object the channel reads (`GET /users/@me`).
#[derive(Deserialize, Debug, Clone)]
pub struct CurrentUser {
    /// The bot's user id.
    pub id: String,
    /// The bot's username.
    pub username: String,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

#[derive(Deserialize)]
struct Fetched {
    #[serde(default)]
    content: String,
}

#[derive(Deserialize)]
struct ChannelInfo {
    #[serde(rename = "type")]
    kind: u8,
    parent_id: Option<String>,
}

/// Channel types that are threads (announcement, public, private).
const THREAD_TYPES: [u8; 3] = [10, 11, 12];

/// A REST client for one bot token.
pub struct RestApi {
    pub(crate) http: reqwest::Client,
    /// `<api_url>/api/v10`.
    pub(crate) base: String,
    /// `Bot <token>`.
    pub(crate) auth: String,
    /// The instance name, for log lines that say which setting to check.
    name: String,
}

impl RestApi {
    /// A client for `api_url` (e.g. `https://discord.com`) with `token`.
    pub fn new(name: &str, api_url: &str, token: &str, http: reqwest::Client) -> Self {
        Self {
            http,
            base: format!("{}/api/v10", api_url.trim_end_matches('/')),
            auth: format!("Bot {}", token.trim()),
            name: name.to_owned(),
        }
    }

    /// The HTTP client to build with: rustls, bounded connect and request times.
    pub fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default()
    }

    /// `GET /users/@me`: proves the token and names the bot.
    pub async fn current_user(&self) -> Result<CurrentUser, ChannelError> {
        let reply = self.call(Method::GET, "/users/@me", None).await?;
        parse(reply, "GET /users/@me")
    }

    /// `POST /channels/{id}/messages`; the new message's id.
    pub async fn create_message(
        &self,
        channel: &str,
        body: &Value,
    ) -> Result<String, ChannelError> {
        let path = format!("/channels/{}/messages", id(channel)?);
        let reply = self.call(Method::POST, &path, Some(body)).await?;
        parse::<Created>(reply, "create message").map(|m| m.id)
    }

    /// `PATCH /channels/{id}/messages/{id}`.
    pub async fn edit_message(
        &self,
        channel: &str,
        message: &str,
        body: &Value,
    ) -> Result<(), ChannelError> {
        let path = format!("/channels/{}/messages/{}", id(channel)?, id(message)?);
        self.call(Method::PATCH, &path, Some(body)).await.map(drop)
    }

    /// The text of a message (`GET /channels/{id}/messages/{id}`).
    pub async fn message_content(
        &self,
        channel: &str,
        message: &str,
    ) -> Result<String, ChannelError> {
        let path = format!("/channels/{}/messages/{}", id(channel)?, id(message)?);
        let reply = self.call(Method::GET, &path, None).await?;
        parse::<Fetched>(reply, "GET /channels/{id}/messages/{id}").map(|m| m.content)
    }

    /// `DELETE /channels/{id}/messages/{id}`.
    pub async fn delete_message(&self, channel: &str, message: &str) -> Result<(), ChannelError> {
        let path = format!("/channels/{}/messages/{}", id(channel)?, id(message)?);
        self.call(Method::DELETE, &path, None).await.map(drop)
    }

    /// `POST /channels/{id}/typing`.
    pub async fn typing(&self, channel: &str) -> Result<(), ChannelError> {
        let path = format!("/channels/{}/typing", id(channel)?);
        self.call(Method::POST, &path, None).await.map(drop)
    }

    /// The parent channel of `channel` when it is a thread (`GET /channels/{id}`).
    pub async fn thread_parent(&self, channel: &str) -> Result<Option<String>, ChannelError> {
        let path = format!("/channels/{}", id(channel)?);
        let reply = self.call(Method::GET, &path, None).await?;
        let info: ChannelInfo = parse(reply, "GET /channels/{id}")?;
        Ok(info.parent_id.filter(|_| THREAD_TYPES.contains(&info.kind)))
    }

    /// `POST /interactions/{id}/{token}/callback`: the one initial answer to an interaction.
    pub async fn interaction_callback(
        &self,
        interaction: &str,
        token: &str,
        body: &Value,
    ) -> Result<(), ChannelError> {
        let path = format!(
            "/interactions/{}/{}/callback",
            id(interaction)?,
            token_part(token)?
        );
        self.call(Method::POST, &path, Some(body)).await.map(drop)
    }

    /// `PATCH /webhooks/{app}/{token}/messages/@original`: edit the message an acknowledged
    /// interaction belongs to.
    pub async fn edit_original(
        &self,
        application: &str,
        token: &str,
        body: &Value,
    ) -> Result<(), ChannelError> {
        let path = format!(
            "/webhooks/{}/{}/messages/@original",
            id(application)?,
            token_part(token)?
        );
        self.call(Method::PATCH, &path, Some(body)).await.map(drop)
    }

    /// `POST /webhooks/{app}/{token}`: a follow-up message to an acknowledged interaction.
    pub async fn followup(
        &self,
        application: &str,
        token: &str,
        body: &Value,
    ) -> Result<(), ChannelError> {
        let path = format!("/webhooks/{}/{}", id(application)?, token_part(token)?);
        self.call(Method::POST, &path, Some(body)).await.map(drop)
    }

    /// One call; `Ok` with the JSON reply (`Null` for 204), or the classified failure.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ChannelError> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .header(reqwest::header::AUTHORIZATION, &self.auth);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| {
            ChannelError::Transient(format!("{method} {}: {}", route(path), e.without_url()))
        })?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.map_err(|e| {
            ChannelError::Transient(format!("reading the reply: {}", e.without_url()))
        })?;
        if status.is_success() {
            return Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
        }
        let failure = Failure::new(status, &headers, &bytes);
        self.log(&method, path, &failure);
        Err(failure.classify())
    }

    /// Log a failure once, naming the setting to check when retrying cannot help.
    fn log(&self, method: &Method, path: &str, failure: &Failure) {
        let (name, route, error) = (&self.name, route(path), failure.describe());
        match failure.status.as_u16() {
            401 => tracing::error!(
                channel = %name, %method, route, %error,
                "Discord refused the bot token; check token in [channels.{name}]"
            ),
            403 => tracing::error!(
                channel = %name, %method, route, %error,
                "Discord refused access; give the bot View Channels, Send Messages, Send Messages \
                 in Threads and Read Message History there, or check allowed_channels in [channels.{name}]"
            ),
            429 => {
                tracing::debug!(channel = %name, %method, route, %error, "Discord rate limited a call")
            }
            _ => tracing::warn!(channel = %name, %method, route, %error, "Discord call failed"),
        }
    }
}

fn parse<T: for<'de> Deserialize<'de>>(reply: Value, what: &str) -> Result<T, ChannelError> {
    serde_json::from_value(reply)
        .map_err(|e| ChannelError::Transient(format!("{what} answered unexpected JSON: {e}")))
}

/// A snowflake id for a URL path; anything else would let a bad key rewrite the route.
fn id(value: &str) -> Result<&str, ChannelError> {
    if !value.is_empty() && value.len() <= 20 && value.bytes().all(|b| b.is_ascii_digit()) {
        Ok(value)
    } else {
        Err(ChannelError::Fatal(format!(
            "{value:?} is not a Discord id"
        )))
    }
}

/// An interaction token for a URL path: URL-safe characters only.
fn token_part(value: &str) -> Result<&str, ChannelError> {
    let safe = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if !value.is_empty() && value.bytes().all(safe) {
        Ok(value)
    } else {
        Err(ChannelError::Fatal("malformed interaction token".into()))
    }
}

/// The path with interaction and webhook tokens cut off, for logs.
fn route(path: &str) -> String {
    let mut parts: Vec<&str> = path.split('/').collect();
    if matches!(parts.get(1), Some(&"interactions" | &"webhooks")) && parts.len() > 3 {
        parts[3] = "{token}";
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_snowflakes_and_url_safe_tokens_reach_a_path() {
        assert_eq!(id("123456789012345678").unwrap(), "123456789012345678");
        for bad in ["", "12/../34", "abc", "123?x=1", "123456789012345678901"] {
            assert!(id(bad).is_err(), "{bad:?}");
        }
        assert!(token_part("aW50ZXJhY3Rpb24.abc-_9").is_ok());
        assert!(token_part("a/b").is_err() && token_part("").is_err());
    }

    #[test]
    fn logged_routes_never_show_an_interaction_token() {
        assert_eq!(
            route("/interactions/1/secret-ish/callback"),
            "/interactions/1/{token}/callback"
        );
        assert_eq!(
            route("/webhooks/2/secret-ish/messages/@original"),
            "/webhooks/2/{token}/messages/@original"
        );
        assert_eq!(route("/channels/3/messages"), "/channels/3/messages");
    }
}

//! `[channels.<name>] kind = "whatsapp"`: the settings type the core deserialises straight
//! from the config file (`${VAR}` resolved; secrets as [`Secret`], never in `Debug`), its
//! checks (each naming its key), the webhook path, and building the channel.

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, is_http_url};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, HttpRoute, Secret,
    SettingsError, Site,
};

/// Meta's Graph API, at the version this channel speaks.
pub const DEFAULT_API_URL: &str = "https://graph.facebook.com/v23.0";

/// The template a message outside the 24-hour window goes out as: an approved template
/// whose body has one parameter, `{{1}}`, which takes the message's text.
#[derive(Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReminderTemplate {
    /// The template's name as approved in WhatsApp Manager.
    pub name: String,
    /// Its language code (`en`, `en_US`, `de`).
    pub language: String,
}

/// Configuration of one WhatsApp business number.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct WhatsAppConfig {
    /// The business number's id (not the number itself), from the app's WhatsApp
    /// "API Setup" page; webhooks for it carry it as `metadata.phone_number_id`.
    #[serde(default, deserialize_with = "expanded")]
    pub phone_number_id: String,
    /// A system user's permanent access token with `whatsapp_business_messaging`; sent as
    /// `Authorization: Bearer`. Unset skips the channel.
    #[serde(default)]
    pub access_token: Secret,
    /// The app secret (App settings → Basic); verifies every webhook's
    /// `X-Hub-Signature-256`.
    #[serde(default)]
    pub app_secret: Secret,
    /// The token typed into the app's webhook settings; Meta echoes it in the `GET`
    /// verification handshake.
    #[serde(default)]
    pub verify_token: Secret,
    /// Graph API base URL, with its version; a test stand-in or proxy can replace it.
    #[serde(default = "default_api_url", deserialize_with = "expanded")]
    pub api_url: String,
    /// Where Meta posts webhooks; several numbers of one app may share one path (the
    /// default is `/whatsapp/<name>`).
    #[serde(default)]
    pub webhook_path: Option<String>,
    /// People let in besides those granted with `switchboard access`: E.164 numbers
    /// (`+15551234567`, compared without the `+` as WhatsApp writes them) or business-scoped
    /// user ids (`US.13491208655302741918`); `["*"]` only with `dm_policy = "open"`.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Largest attachment (bytes) the gateway downloads; larger ones get a refusal line.
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
    /// The template for messages outside the 24-hour customer-service window; without one
    /// such a message is recorded as undeliverable.
    #[serde(default)]
    pub reminder_template: Option<ReminderTemplate>,
}

fn default_max_attachment_bytes() -> u64 {
    switchboard_channel::DEFAULT_MAX_ATTACHMENT_BYTES
}

fn default_api_url() -> String {
    DEFAULT_API_URL.to_owned()
}

impl WhatsAppConfig {
    /// A configuration with the defaults for everything but the number and the secrets.
    pub fn new(
        phone_number_id: impl Into<String>,
        access_token: impl Into<String>,
        app_secret: impl Into<String>,
    ) -> Self {
        Self {
            phone_number_id: phone_number_id.into(),
            access_token: Secret::new(access_token),
            app_secret: Secret::new(app_secret),
            verify_token: Secret::new("verify"),
            api_url: default_api_url(),
            webhook_path: None,
            allowed_users: Vec::new(),
            dm_policy: None,
            max_attachment_bytes: default_max_attachment_bytes(),
            reminder_template: None,
        }
    }

    /// The webhook path of channel `name`.
    pub fn path(&self, name: &str) -> String {
        self.webhook_path
            .clone()
            .unwrap_or_else(|| format!("/whatsapp/{name}"))
    }

    fn credential_problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if !self.access_token.is_set() {
            return errors;
        }
        if self.phone_number_id.is_empty()
            || !self.phone_number_id.bytes().all(|b| b.is_ascii_digit())
        {
            errors.push(SettingsError::new(
                "phone_number_id",
                "must be the number's id from the app's API Setup page (digits), not the phone number",
            ));
        }
        if !self.app_secret.is_set() {
            errors.push(SettingsError::new(
                "app_secret",
                "is required with access_token, to verify that webhooks come from Meta",
            ));
        }
        if !self.verify_token.is_set() {
            errors.push(SettingsError::new(
                "verify_token",
                "is required with access_token: Meta sends it when the webhook is registered",
            ));
        }
        errors
    }

    fn shape_problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if !is_http_url(&self.api_url) {
            errors.push(SettingsError::new("api_url", "must be an http(s) URL"));
        }
        if let Some(path) = &self.webhook_path
            && (!path.starts_with('/') || path.contains(char::is_whitespace))
        {
            errors.push(SettingsError::new(
                "webhook_path",
                "must be a path starting with /",
            ));
        }
        if let Some(bad) = self
            .allowed_users
            .iter()
            .find(|u| *u != "*" && person_id(u).is_none())
        {
            errors.push(SettingsError::new(
                "allowed_users",
                format!(
                    "entry {bad:?} is neither an E.164 number (+15551234567) nor a \
                     business-scoped user id (US.13491208655302741918)"
                ),
            ));
        }
        if let Some(t) = &self.reminder_template
            && (t.name.trim().is_empty() || t.language.trim().is_empty())
        {
            errors.push(SettingsError::new(
                "reminder_template",
                "needs a name and a language, as approved in WhatsApp Manager",
            ));
        }
        if self.max_attachment_bytes == 0 {
            errors.push(SettingsError::new(
                "max_attachment_bytes",
                "must be above 0",
            ));
        }
        errors
    }
}

/// `entry` as the id WhatsApp writes: an E.164 number without its `+` (spaces and dashes
/// dropped), or a business-scoped user id as it is; `None` when it is neither.
pub(crate) fn person_id(entry: &str) -> Option<String> {
    let entry = entry.trim();
    let digits: String = entry
        .strip_prefix('+')
        .unwrap_or(entry)
        .chars()
        .filter(|c| !matches!(c, ' ' | '-'))
        .collect();
    if (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(digits);
    }
    let (country, rest) = entry.split_once('.')?;
    let valid = country.len() == 2
        && country.bytes().all(|b| b.is_ascii_uppercase())
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.');
    valid.then(|| entry.to_owned())
}

impl ChannelSettings for WhatsAppConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        let mut errors = self.credential_problems();
        errors.extend(self.shape_problems());
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        collect(errors)
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.access_token, &self.app_secret, &self.verify_token]
    }

    fn missing_credential(&self) -> Option<&'static str> {
        (!self.access_token.is_set()).then_some("access_token")
    }

    fn http_routes(&self, name: &str) -> Vec<HttpRoute> {
        let key = self.webhook_path.as_ref().map(|_| "webhook_path");
        vec![HttpRoute {
            key,
            path: self.path(name),
            shared: true,
        }]
    }

    fn access(&self) -> AccessRules {
        AccessRules {
            dm_policy: self.dm_policy.unwrap_or_default(),
            // WhatsApp's Cloud API has no groups: every conversation is one person's.
            group_policy: GroupPolicy::Disabled,
            allowed_users: self
                .allowed_users
                .iter()
                .map(|u| person_id(u).unwrap_or_else(|| u.clone()))
                .collect(),
            allowed_groups: Vec::new(),
            operator_only: false,
        }
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        Ok(Arc::new(crate::WhatsAppChannel::new(
            site.name,
            self.clone(),
        )))
    }
}

/// Shows everything but the secrets, so a config can be logged.
impl fmt::Debug for WhatsAppConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WhatsAppConfig")
            .field("phone_number_id", &self.phone_number_id)
            .field("access_token", &self.access_token)
            .field("app_secret", &self.app_secret)
            .field("verify_token", &self.verify_token)
            .field("api_url", &self.api_url)
            .field("webhook_path", &self.webhook_path)
            .field("allowed_users", &self.allowed_users)
            .field("dm_policy", &self.dm_policy)
            .field("reminder_template", &self.reminder_template)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site<'static> {
        Site {
            name: "wa",
            listen: None,
            data_dir: std::path::Path::new("data"),
            redactor: None,
            launcher: None,
        }
    }

    fn keys(config: &WhatsAppConfig) -> Vec<&'static str> {
        config
            .validate(&site())
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.key)
            .collect()
    }

    #[test]
    fn missing_optional_keys_take_their_defaults() {
        let config: WhatsAppConfig = serde_json::from_value(serde_json::json!({
            "phone_number_id": "1065",
            "access_token": "test-access-token",
            "app_secret": "test-app-secret",
            "verify_token": "test-verify",
        }))
        .unwrap();
        assert_eq!(config.api_url, DEFAULT_API_URL);
        assert_eq!(config.path("wa"), "/whatsapp/wa");
        assert!(config.reminder_template.is_none());
        assert!(keys(&config).is_empty());
    }

    #[test]
    fn each_mistake_names_its_key() {
        let mut config = WhatsAppConfig::new("+1 555 0100", "t", "");
        config.verify_token = Secret::new("");
        config.api_url = "graph.facebook.com".into();
        config.webhook_path = Some("whatsapp".into());
        config.allowed_users = vec!["alice".into()];
        config.reminder_template = Some(ReminderTemplate {
            name: String::new(),
            language: "en".into(),
        });
        config.max_attachment_bytes = 0;
        assert_eq!(
            keys(&config),
            [
                "phone_number_id",
                "app_secret",
                "verify_token",
                "api_url",
                "webhook_path",
                "allowed_users",
                "reminder_template",
                "max_attachment_bytes",
            ]
        );
        let unset = WhatsAppConfig::new("", "", "");
        assert_eq!(unset.missing_credential(), Some("access_token"));
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_value::<WhatsAppConfig>(serde_json::json!({
            "access_token": "t",
            "app_secert": "typo",
        }))
        .unwrap_err();
        assert!(err.to_string().contains("app_secert"), "{err}");
    }

    #[test]
    fn e164_entries_are_compared_without_the_plus_and_user_ids_as_written() {
        let mut config = WhatsAppConfig::new("1065", "t", "s");
        config.allowed_users = vec!["+1 555-010-0999".into(), "US.13491208655302741918".into()];
        let rules = config.access();
        assert!(rules.lists_user("15550100999"));
        assert!(rules.lists_user("US.13491208655302741918"));
        assert!(!rules.lists_user("+15550100999"));
        assert_eq!(rules.group_policy, GroupPolicy::Disabled);
    }

    #[test]
    fn debug_output_never_shows_the_secrets() {
        let config = WhatsAppConfig::new("1065", "test-access-token", "test-app-secret");
        let shown = format!("{config:?}");
        assert!(!shown.contains("test-access-token") && !shown.contains("test-app-secret"));
    }
}

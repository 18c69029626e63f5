//! The web chat as the core builds it: [`ChannelSettings`] for [`WebConfig`]. The core checks
//! the settings, learns the secrets to scrub, the routes the chat will mount and who it lets
//! in, then builds the [`WebChannel`] with its files under `<data_dir>/web/<name>` and the
//! core's redactor. At the top of the crate: it names the routes and the channel, which are
//! built from everything below.

use std::sync::Arc;

use switchboard_channel::settings::collect;
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, HttpRoute, Secret, SettingsError, Site,
};

use crate::channel::WebChannel;
use crate::config::WebConfig;
use crate::routes;

impl ChannelSettings for WebConfig {
    /// No token rule here: without a token, [`ChannelSettings::build`] gives the channel a
    /// generated one (under `data_dir`), so only a public chat is ever open.
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        collect(self.problems(None))
    }

    /// Whoever reaches the page is let in by the web chat's own gate: the access token,
    /// configured or generated (on loopback too: a loopback peer may be a sandboxed tool or
    /// a proxy on this host). The token admits only the operator, so the person in the chat
    /// may approve their own tool calls. Without a token but with `public_hosts`, anyone who
    /// reaches those names is let in: the chat is open, and only approvers may approve.
    fn access(&self) -> AccessRules {
        if self.answers_anyone() {
            AccessRules::open()
        } else {
            AccessRules::operator_only()
        }
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.access_token, &self.generated_token]
    }

    fn http_routes(&self, _name: &str) -> Vec<HttpRoute> {
        routes::paths(&self.base())
            .into_iter()
            .map(|path| HttpRoute {
                shared: false,
                key: Some("path"),
                path,
            })
            .collect()
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        let listen = site
            .listen
            .ok_or("gateway.listen is not an address like 127.0.0.1:8080")?;
        let config = Self {
            history_dir: Some(site.data_dir.join("web").join(site.name)),
            redactor: site.redactor.cloned().unwrap_or_default(),
            token_file: self.generated_token_path(site),
            ..self.clone()
        };
        Ok(Arc::new(WebChannel::new(site.name, config, listen)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chat_is_the_operators_unless_it_answers_public_names_without_a_token() {
        assert_eq!(WebConfig::default().access(), AccessRules::operator_only());
        let public = WebConfig {
            public_hosts: vec!["chat.example.com".into()],
            ..WebConfig::default()
        };
        assert_eq!(public.access(), AccessRules::open());
        let behind_a_token = WebConfig {
            access_token: "s3cret".into(),
            ..public
        };
        assert_eq!(behind_a_token.access(), AccessRules::operator_only());
    }

    #[test]
    fn the_routes_are_the_page_its_assets_and_the_socket() {
        let config = WebConfig {
            path: "/chat".into(),
            ..WebConfig::default()
        };
        let paths: Vec<_> = config
            .http_routes("web")
            .into_iter()
            .map(|r| r.path)
            .collect();
        assert_eq!(
            paths,
            [
                "/chat/",
                "/chat/app.js",
                "/chat/app.css",
                "/chat/ws",
                "/chat/upload",
                "/chat/files/{id}",
                "/chat/favicon.svg",
                "/chat/icons.js",
                "/chat"
            ]
        );
    }
}

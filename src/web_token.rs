//! The web chat's generated access token, as the operator meets it. At start-up
//! ([`prepare`]) each web channel without an `access_token` (loopback included; only a
//! public chat has none) gets its token read from (or first written to)
//! `<data_dir>/web/<name>.token`, so the scrubber knows it and the log can say where to get
//! the link; the log never holds the token itself, and the link of a token made now goes to
//! the terminal only (`crate::cli`). `switchboard web-token` ([`run`]) prints the link, and
//! `--rotate` writes a new token, which a running gateway honours at its next request (the
//! channel re-checks the file; see `switchboard_web::token`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use switchboard_channel::{Secret, Site, TokenFileError};
use switchboard_web::WebConfig;
use switchboard_web::token::token_file;

use crate::config::{ChannelConfig, Config, ConfigArgs};

/// How the log and the docs name the command, with its Docker form.
pub const HOW_TO_GET_THE_LINK: &str = "print the link with `switchboard web-token` (in Docker: \
                                       `docker compose exec switchboard switchboard web-token`)";

/// `switchboard web-token` options.
#[derive(Debug, Args)]
pub struct WebTokenArgs {
    /// Only this web channel (`[channels.<name>]`); default every one.
    #[arg(long)]
    pub channel: Option<String>,
    /// Replace the generated token: a running gateway takes the new one at once, and links
    /// and browser cookies with the old one stop working.
    #[arg(long)]
    pub rotate: bool,
    /// Start of the printed link instead of http://<listen address>, e.g.
    /// https://chat.example.com when a proxy serves the chat.
    #[arg(long)]
    pub origin: Option<String>,
}

/// What start-up has to say about the web chats' generated tokens.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Log lines, one per channel with a generated token: where it is kept and the command
    /// that prints its link. Never the token.
    pub lines: Vec<String>,
    /// The links (token included) of tokens made at this start: for the operator's
    /// terminal only, never the log.
    pub fresh_links: Vec<String>,
}

/// Give every web channel that needs one its generated token (made now at first start) and
/// list it among the config's secrets; returns the log lines to write, one per channel, and
/// the links of the tokens made now.
pub fn prepare(config: &mut Config) -> Result<Prepared, TokenFileError> {
    let listen = config.gateway.listen.parse::<SocketAddr>().ok();
    let data_dir = config.gateway.data_dir.clone();
    let mut prepared = Prepared::default();
    for (name, channel) in &mut config.channels {
        let ChannelConfig::Web(web) = channel else {
            continue;
        };
        let Some(path) = web.generated_token_path(&site(name, listen, &data_dir)) else {
            continue;
        };
        let (token, made) = token_file(path.clone()).load_or_create()?;
        if made && let Some(listen) = listen {
            let link = link(&default_origin(listen), web, Some(&token));
            prepared
                .fresh_links
                .push(format!("web chat `{name}`: {link}"));
        }
        web.generated_token = Secret::new(token);
        let origin = if made {
            "generated now"
        } else {
            "generated at first start"
        };
        prepared.lines.push(format!(
            "web chat `{name}`: no access_token is set, so it opens only with its token \
             ({origin}, stored in {}); {HOW_TO_GET_THE_LINK}",
            path.display()
        ));
    }
    Ok(prepared)
}

/// `switchboard web-token`: one link per web channel on stdout, notes on stderr. The config
/// gives the listen address, the data directory and the web channels.
pub fn run(config: &ConfigArgs, args: WebTokenArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let listen: SocketAddr = config
        .gateway
        .listen
        .parse()
        .with_context(|| format!("gateway.listen = {}", &*config.gateway.listen))?;
    let webs: Vec<(&String, &WebConfig)> = config
        .channels
        .iter()
        .filter_map(|(name, channel)| match channel {
            ChannelConfig::Web(web) => Some((name, web)),
            _ => None,
        })
        .filter(|(name, _)| args.channel.as_ref().is_none_or(|wanted| wanted == *name))
        .collect();
    if webs.is_empty() {
        match &args.channel {
            Some(name) => bail!("no web channel named `{name}` in the config"),
            None => {
                bail!("the config has no web channel (a [channels.<name>] with kind = \"web\")")
            }
        }
    }
    let origin = args
        .origin
        .clone()
        .unwrap_or_else(|| default_origin(listen));
    for (name, web) in webs {
        let site = site(name, Some(listen), &config.gateway.data_dir);
        let token = token_for(name, web, &site, args.rotate)?;
        println!("{}", link(&origin, web, token.as_deref()));
    }
    if args.origin.is_none() && listen.ip().is_unspecified() {
        eprintln!(
            "Replace <host> with the address you reach the gateway at (localhost when Docker \
             maps the port on this machine), or pass --origin."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The token of channel `name` (rotated first when asked), or `None` when it needs none.
fn token_for(
    name: &str,
    web: &WebConfig,
    site: &Site<'_>,
    rotate: bool,
) -> anyhow::Result<Option<String>> {
    if let Some(token) = web.access_token.expose() {
        if rotate {
            bail!(
                "channels.{name}.access_token is set in the config (e.g. SWITCHBOARD_WEB_TOKEN), \
                 and a configured token always wins: change it there"
            );
        }
        return Ok(Some(token.to_owned()));
    }
    let Some(path) = web.generated_token_path(site) else {
        if rotate {
            bail!(
                "the web chat `{name}` has no token to rotate: it is a public chat \
                 (public_hosts without an access_token)"
            );
        }
        eprintln!(
            "web chat `{name}` is a public chat (public_hosts without an access_token) and \
             opens without a token"
        );
        return Ok(None);
    };
    let file = token_file(path);
    let token = if rotate {
        let token = file.rotate()?;
        eprintln!(
            "web chat `{name}`: new token stored in {}; the old one no longer opens the chat",
            file.path().display()
        );
        token
    } else {
        file.load_or_create()?.0
    };
    Ok(Some(token))
}

/// `http://<listen address>`, with a `<host>` placeholder for a wildcard address.
fn default_origin(listen: SocketAddr) -> String {
    let port = listen.port();
    match listen.ip() {
        ip if ip.is_unspecified() => format!("http://<host>:{port}"),
        _ => format!("http://{listen}"),
    }
}

/// The chat's link: the origin, the page's path and the token (percent-encoded).
fn link(origin: &str, web: &WebConfig, token: Option<&str>) -> String {
    let origin = origin.trim_end_matches('/');
    let path = web.page_path();
    match token {
        Some(token) => format!(
            "{origin}{path}?token={}",
            utf8_percent_encode(token, NON_ALPHANUMERIC)
        ),
        None => format!("{origin}{path}"),
    }
}

fn site<'a>(name: &'a str, listen: Option<SocketAddr>, data_dir: &'a PathBuf) -> Site<'a> {
    Site {
        name,
        listen,
        data_dir,
        redactor: None,
        launcher: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_makes_the_token_a_secret_and_its_log_line_names_the_command_not_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[gateway]\nlisten = \"0.0.0.0:8080\"\ndata_dir = \"{}\"\n\
             [channels.web]\nkind = \"web\"\n[channels.local]\nkind = \"web\"\n\
             path = \"/local\"\naccess_token = \"configured-token-1\"\n",
            dir.path().display()
        );
        let mut config = crate::config::parse(&text, "t.toml", &[]).unwrap();
        let Prepared { lines, fresh_links } = prepare(&mut config).unwrap();
        let stored = dir.path().join("web/web.token");
        let token = std::fs::read_to_string(&stored).unwrap().trim().to_owned();
        assert_eq!(
            lines.len(),
            1,
            "only the channel without a token: {lines:?}"
        );
        assert!(lines[0].contains("generated now") && lines[0].contains(HOW_TO_GET_THE_LINK));
        assert!(!lines[0].contains(&token));
        assert_eq!(
            fresh_links,
            [format!("web chat `web`: http://<host>:8080/?token={token}")],
            "the terminal gets the new token's link"
        );
        assert!(
            config.secret_values().contains(&token),
            "the scrubber redacts it"
        );
        assert!(
            config
                .scrubber()
                .scrub(&format!("t={token}"))
                .find(&token)
                .is_none()
        );
        let again = prepare(&mut config).unwrap();
        assert!(
            again.lines[0].contains("generated at first start"),
            "{again:?}"
        );
        assert!(
            again.fresh_links.is_empty(),
            "only a token made now: {again:?}"
        );
    }

    #[test]
    fn a_web_chat_on_loopback_gets_a_generated_token_and_only_a_public_chat_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[gateway]\nlisten = \"127.0.0.1:8080\"\ndata_dir = \"{}\"\n\
             [channels.web]\nkind = \"web\"\n[channels.public]\nkind = \"web\"\n\
             path = \"/public\"\npublic_hosts = [\"chat.example.com\"]\n",
            dir.path().display()
        );
        let mut config = crate::config::parse(&text, "t.toml", &[]).unwrap();
        let prepared = prepare(&mut config).unwrap();
        let token = std::fs::read_to_string(dir.path().join("web/web.token")).unwrap();
        assert_eq!(prepared.lines.len(), 1, "{prepared:?}");
        assert_eq!(
            prepared.fresh_links,
            [format!(
                "web chat `web`: http://127.0.0.1:8080/?token={}",
                token.trim()
            )]
        );
        assert!(!dir.path().join("web/public.token").exists());
    }

    #[test]
    fn a_wildcard_address_gets_a_placeholder_host_and_the_token_is_encoded() {
        let web = WebConfig {
            path: "/chat".into(),
            ..WebConfig::default()
        };
        let origin = default_origin("0.0.0.0:8080".parse().unwrap());
        assert_eq!(
            link(&origin, &web, Some("a b&c")),
            "http://<host>:8080/chat/?token=a%20b%26c"
        );
        let origin = default_origin("[::1]:9000".parse().unwrap());
        assert_eq!(link(&origin, &web, None), "http://[::1]:9000/chat/");
        assert_eq!(
            link(
                "https://chat.example.com/",
                &WebConfig::default(),
                Some("t")
            ),
            "https://chat.example.com/?token=t"
        );
    }
}

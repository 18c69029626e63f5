//! The tokens a start prepares and how it tells the operator about them. A token made at this
//! start opens the web chat or the dashboard, and the person at the terminal gets its link
//! without running a second command. The links go to stderr, and only when it is a terminal:
//! never through the log, which others may collect; the log names the commands that print
//! them again.

use std::io::IsTerminal;

use crate::config::Config;

/// What start-up says about the generated tokens.
pub(super) struct Tokens {
    /// Log lines: where each token is kept and the command that prints its link.
    lines: Vec<String>,
    /// The links (token included) of tokens made at this start.
    fresh: Vec<String>,
}

impl Tokens {
    /// Read (or make) the web chats' and the dashboard's tokens into `config`, so the
    /// scrubber knows them.
    pub(super) fn prepare(config: &mut Config) -> anyhow::Result<Self> {
        let mut tokens = Self {
            lines: Vec::new(),
            fresh: Vec::new(),
        };
        #[cfg(feature = "web")]
        {
            let web = crate::web_token::prepare(config)?;
            tokens.lines.extend(web.lines);
            tokens.fresh.extend(web.fresh_links);
        }
        let admin = crate::admin::token::prepare(config)?;
        tokens.lines.extend(crate::admin::token::start_line(config));
        tokens
            .fresh
            .extend(admin.map(|link| format!("dashboard: {link}")));
        Ok(tokens)
    }

    /// Log the lines (once logging is set up), and show the fresh links on a terminal.
    pub(super) fn announce(self) {
        for line in &self.lines {
            tracing::info!("{line}");
        }
        show(&self.fresh);
    }
}

/// Write `links` (each with its token) to stderr when it is a terminal.
fn show(links: &[String]) {
    if links.is_empty() || !std::io::stderr().is_terminal() {
        return;
    }
    eprintln!(
        "\nOpen Switchboard with these links (made at this first start; `switchboard \
         web-token` and `switchboard admin-token` print them again):"
    );
    for link in links {
        eprintln!("  {link}");
    }
    eprintln!();
}

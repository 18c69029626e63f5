//! The links a first start shows its operator. A token made at this start opens the web
//! chat or the dashboard, and the person at the terminal gets its link without running a
//! second command. The links go to stderr, and only when it is a terminal: never through
//! the log, which others may collect; the log names the commands that print them again.

use std::io::IsTerminal;

/// Write `links` (each with its token) to stderr when it is a terminal.
pub(super) fn show(links: &[String]) {
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

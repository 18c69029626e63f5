//! Chat commands the gateway answers itself instead of passing them to the model.

/// A recognised chat command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Cancel the running turn.
    Stop,
    /// Forget this conversation's history.
    New,
    /// Explain the commands.
    Help,
    /// Forget this conversation's long-term memory.
    Forget,
    /// Approve a pending action by id (for channels without buttons).
    Approve(String),
    /// Deny a pending action by id.
    Deny(String),
}

impl Command {
    /// Parse `/stop`, `/new`, `/help`, `/approve <id>`, `/deny <id>` (also `/cmd@botname`,
    /// any case, surrounding spaces).
    pub fn parse(text: &str) -> Option<Self> {
        let mut words = text.split_whitespace();
        let word = words.next()?.strip_prefix('/')?;
        let name = word
            .split('@')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let id = || words.clone().next().map(str::to_owned);
        match name.as_str() {
            "stop" => Some(Self::Stop),
            "new" | "reset" => Some(Self::New),
            "help" | "start" => Some(Self::Help),
            "forget" => Some(Self::Forget),
            "approve" => id().map(Self::Approve),
            "deny" => id().map(Self::Deny),
            _ => None,
        }
    }

    /// The gateway's reply to a command that needs nothing but a reply.
    pub fn reply(&self) -> &'static str {
        match self {
            Self::Stop => "⏹ Stopped.",
            Self::New => "🆕 Started a new conversation — I've forgotten what we said before.",
            Self::Forget => "🧹 Forgot what I remembered from this conversation.",
            Self::Help | Self::Approve(_) | Self::Deny(_) => HELP,
        }
    }
}

const HELP: &str = "I'm an assistant. Write to me in plain language.\n\n\
Commands:\n\
• `/stop` — stop what I'm doing\n\
• `/new` — start a fresh conversation\n\
• `/forget` — forget what I remembered here\n\
• `/approve <id>` / `/deny <id>` — answer an approval request\n\
• `/help` — this message";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_recognised_with_bot_suffix_and_case() {
        assert_eq!(Command::parse("/stop"), Some(Command::Stop));
        assert_eq!(Command::parse("  /NEW@my_bot  "), Some(Command::New));
        assert_eq!(Command::parse("/help me"), Some(Command::Help));
        assert_eq!(
            Command::parse("/approve ab12cd"),
            Some(Command::Approve("ab12cd".into()))
        );
        assert_eq!(
            Command::parse("/deny@bot ab12cd"),
            Some(Command::Deny("ab12cd".into()))
        );
    }

    #[test]
    fn ordinary_text_and_unknown_commands_are_not_commands() {
        assert_eq!(Command::parse("stop"), None);
        assert_eq!(Command::parse("/stopwatch"), None);
        assert_eq!(Command::parse(""), None);
        assert_eq!(Command::parse("/approve"), None, "an id is required");
    }
}

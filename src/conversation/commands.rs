//! Chat commands the gateway answers itself instead of passing them to the model.

/// A recognised chat command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Cancel the running turn.
    Stop,
    /// Forget this conversation's history.
    New,
    /// Explain the commands.
    Help,
}

impl Command {
    /// Parse `/stop`, `/new`, `/help` (also `/stop@botname`, any case, surrounding spaces).
    pub fn parse(text: &str) -> Option<Self> {
        let word = text.split_whitespace().next()?;
        let word = word.strip_prefix('/')?;
        let name = word
            .split('@')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match name.as_str() {
            "stop" => Some(Self::Stop),
            "new" | "reset" => Some(Self::New),
            "help" | "start" => Some(Self::Help),
            _ => None,
        }
    }

    /// The gateway's reply.
    pub fn reply(self) -> &'static str {
        match self {
            Self::Stop => "⏹ Stopped.",
            Self::New => "🆕 Started a new conversation — I've forgotten what we said before.",
            Self::Help => HELP,
        }
    }
}

const HELP: &str = "I'm an assistant. Write to me in plain language.\n\n\
Commands:\n\
• `/stop` — stop what I'm doing\n\
• `/new` — start a fresh conversation\n\
• `/help` — this message";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_recognised_with_bot_suffix_and_case() {
        assert_eq!(Command::parse("/stop"), Some(Command::Stop));
        assert_eq!(Command::parse("  /NEW@my_bot  "), Some(Command::New));
        assert_eq!(Command::parse("/help me"), Some(Command::Help));
    }

    #[test]
    fn ordinary_text_and_unknown_commands_are_not_commands() {
        assert_eq!(Command::parse("stop"), None);
        assert_eq!(Command::parse("/stopwatch"), None);
        assert_eq!(Command::parse(""), None);
    }
}

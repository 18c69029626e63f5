//! `/rewind [N]` and the rewind buttons: a checkpoint's button carries its number as
//! `rw:<N>`, with one `Display`/`FromStr` round trip like every button payload.

use std::fmt;
use std::str::FromStr;

/// A checkpoint's button under the `/rewind` list: restores checkpoint `number`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RewindButton {
    /// The checkpoint to go back to.
    pub number: i64,
}

impl fmt::Display for RewindButton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rw:{}", self.number)
    }
}

impl FromStr for RewindButton {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        let number = s.strip_prefix("rw:").ok_or(())?;
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        number.parse().map(|number| Self { number }).map_err(|_| ())
    }
}

/// The checkpoint `/rewind` names: `None` (the list) when the word is missing or not a
/// number (`#3` is read as 3).
pub(super) fn argument(word: Option<&str>) -> Option<i64> {
    word?
        .trim_start_matches('#')
        .parse()
        .ok()
        .filter(|n: &i64| *n >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewind_button_round_trips_and_refuses_other_payloads() {
        for number in [0, 7, 123_456_789] {
            let b = RewindButton { number };
            let text = b.to_string();
            assert!(text.len() <= 64);
            assert_eq!(text.parse::<RewindButton>(), Ok(b));
        }
        for bad in [
            "",
            "rw:",
            "rw:-1",
            "rw:+1",
            "rw:1:2",
            "rw:x",
            "go",
            "rw:99999999999999999999",
        ] {
            assert!(bad.parse::<RewindButton>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rewind_commands_wait_their_turn_like_messages() {
        use super::super::{Command, Intent};
        use crate::ids::InboxKind;
        assert_eq!(Command::parse("/rewind"), Some(Command::Rewind(None)));
        assert_eq!(
            Command::parse("/rewind@bot 2"),
            Some(Command::Rewind(Some(2)))
        );
        let kind = Intent::Command(Command::Rewind(Some(2))).kind();
        assert_eq!(kind, InboxKind::Message, "never while a turn runs");
    }

    #[test]
    fn the_rewind_argument_is_a_checkpoint_number_or_nothing() {
        assert_eq!(argument(None), None);
        assert_eq!(argument(Some("3")), Some(3));
        assert_eq!(argument(Some("#3")), Some(3));
        assert_eq!(argument(Some("-1")), None);
        assert_eq!(argument(Some("three")), None);
    }
}

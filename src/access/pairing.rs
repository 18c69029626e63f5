//! Pairing codes: short, unambiguous to read aloud, alive for an hour, a few per channel.

use rand::Rng;

/// How long a pairing code works.
pub const PAIRING_TTL_MS: i64 = 60 * 60 * 1000;

/// How many people may wait on one channel; later strangers get no code until one expires
/// or is approved (so a flood of strangers cannot fill the table).
pub const MAX_PENDING_PER_CHANNEL: i64 = 3;

/// Letters and digits without look-alikes (no 0/O, 1/I/L).
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// A fresh code of 8 characters from [`ALPHABET`].
pub fn pairing_code() -> String {
    let mut rng = rand::thread_rng();
    (0..8)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}

/// The one reply a stranger gets: what to tell the operator, and nothing about the bot.
pub fn pairing_reply(channel: &str, code: &str) -> String {
    format!(
        "I don't know you yet. Your pairing code is {code} (valid for 1 hour). \
         Ask the bot's operator to run:\n`switchboard access allow {channel} {code}`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_eight_characters_without_look_alikes() {
        for _ in 0..50 {
            let code = pairing_code();
            assert_eq!(code.len(), 8);
            assert!(code.bytes().all(|b| ALPHABET.contains(&b)), "{code}");
        }
    }

    #[test]
    fn the_reply_names_the_command_the_operator_runs() {
        let reply = pairing_reply("telegram", "ABCD2345");
        assert!(
            reply.contains("switchboard access allow telegram ABCD2345"),
            "{reply}"
        );
    }
}

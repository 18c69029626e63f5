//! Streaming holdback: while an answer is still growing, its tail may be the first half of a
//! credential that the scrubber only recognises once it is complete. [`Holdback`] finds the
//! earliest position from which the text could still complete into a match (a configured
//! secret, a token shape, a `key = value` credential, a PEM block) and shows only what comes
//! before it; the held tail is decided by later text or by the final answer, which is
//! scrubbed whole.

use std::cell::Cell;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input};

use super::{FIXED, KEY_VALUE, KEY_VALUE_RE, PEM, PEM_RE, SHAPE_RES, SHAPES, Scrubber};

/// What the text from one position on can still become.
#[derive(Debug, PartialEq, Eq)]
enum Fate {
    /// No credential starts here, whatever follows.
    Dead,
    /// A credential starts here and is already complete: the scrubber redacts it.
    Matched,
    /// It could still become a credential: hold it back.
    Open,
}

/// One automaton over every scrubber pattern, anchored at the position under test, built on
/// the first streamed draft and shared by every scrubber.
static PREFIXES: LazyLock<DFA> = LazyLock::new(prefix_automaton);

thread_local! {
    /// This thread's working memory for [`PREFIXES`], kept between calls: a fresh one
    /// allocates its tables and builds every state it visits again, on every draft update,
    /// which under load is a visible share of the gateway's CPU.
    /// It holds only automaton states, never text, and is bounded by the automaton's cache
    /// capacity. Boxed, so the thread-local itself is one pointer.
    static CACHE: Cell<Option<Box<Cache>>> = const { Cell::new(None) };
}

/// Word boundaries are dropped and classes are ASCII, so the automaton holds back at least
/// what the scrubber could later match.
fn prefix_automaton() -> DFA {
    let mut patterns: Vec<String> = vec![KEY_VALUE.to_owned(), PEM.to_owned()];
    patterns.extend(SHAPES.iter().map(|p| p.replace(r"\b", "")));
    DFA::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .thompson(thompson::Config::new().utf8(false))
        .build_many(&patterns)
        .expect("scrub patterns compile as a lazy DFA")
}

impl Scrubber {
    /// Where a credential could start in `text` at or after `from` and still be incomplete:
    /// the byte offset of the earliest such position, or `text.len()` when there is none.
    fn first_open(&self, text: &str, from: usize) -> usize {
        let mut cache = CACHE
            .take()
            .unwrap_or_else(|| Box::new(PREFIXES.create_cache()));
        let open = (from..text.len())
            .filter(|&i| text.is_char_boundary(i))
            .find(|&i| self.fate(&mut cache, text, i) == Fate::Open)
            .unwrap_or(text.len());
        CACHE.set(Some(cache));
        open
    }

    /// What `text[i..]` can still become.
    fn fate(&self, cache: &mut Cache, text: &str, i: usize) -> Fate {
        let rest = &text[i..];
        if self
            .values
            .iter()
            .any(|v| v.len() > rest.len() && v.starts_with(rest))
        {
            return Fate::Open;
        }
        let dfa = &*PREFIXES;
        let input = Input::new(text).range(i..).anchored(Anchored::Yes);
        // A cache that gave up is treated as "could still match": holding back is safe.
        let Ok(mut state) = dfa.start_state_forward(cache, &input) else {
            return Fate::Open;
        };
        for &byte in rest.as_bytes() {
            match dfa.next_state(cache, state, byte) {
                Ok(next) if next.is_match() => return Fate::Matched,
                Ok(next) if next.is_dead() => return Fate::Dead,
                Ok(next) => state = next,
                Err(_) => return Fate::Open,
            }
        }
        match dfa.next_eoi_state(cache, state) {
            Ok(end) if end.is_match() => Fate::Matched,
            _ => Fate::Open,
        }
    }

    /// The start of a credential the scrubber would redact in `text` that begins before
    /// `cut` and ends after it: cutting there would show its head unredacted.
    fn straddling(&self, text: &str, cut: usize) -> Option<usize> {
        let exact = self.exact.as_ref().filter(|e| e.is_match(text));
        if exact.is_none() && !FIXED.is_match(text) {
            return None;
        }
        let straddles = |m: regex::Match<'_>| (m.start() < cut && m.end() > cut).then(|| m.start());
        let mut starts: Vec<usize> = Vec::new();
        if let Some(exact) = exact {
            starts.extend(exact.find_iter(text).filter_map(straddles));
        }
        starts.extend(PEM_RE.find_iter(text).filter_map(straddles));
        starts.extend(KEY_VALUE_RE.find_iter(text).filter_map(straddles));
        for shape in SHAPE_RES.iter() {
            starts.extend(shape.find_iter(text).filter_map(straddles));
        }
        starts.into_iter().min()
    }
}

/// The holdback state of one growing text (a streamed answer). Positions found undecidable
/// once are not scanned again: a credential that could not start there never will.
#[derive(Debug, Default)]
pub struct Holdback {
    /// Every position before this one is decided (no credential, or a complete one).
    decided: AtomicUsize,
}

impl Holdback {
    /// The part of `text` that may be shown while more may follow; `text` only ever grows
    /// between calls (a shorter one starts the scan over).
    pub fn settled<'a>(&self, scrubber: &Scrubber, text: &'a str) -> &'a str {
        let mut from = self.decided.load(Ordering::Relaxed);
        if from > text.len() || !text.is_char_boundary(from) {
            from = 0;
        }
        let open = scrubber.first_open(text, from);
        self.decided.store(open, Ordering::Relaxed);
        let mut cut = open;
        while let Some(start) = scrubber.straddling(text, cut) {
            cut = start;
        }
        &text[..cut]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "hunter2-configured-secret";

    /// Every draft a text streamed `step` bytes at a time would show, scrubbed.
    fn drafts(scrubber: &Scrubber, text: &str, step: usize) -> Vec<String> {
        let hold = Holdback::default();
        let mut shown = Vec::new();
        let mut end = 0;
        while end < text.len() {
            end = (end + step).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let visible = hold.settled(scrubber, &text[..end]);
            shown.push(scrubber.scrub(visible).into_owned());
        }
        shown
    }

    /// No draft shows more than the first 6 characters of `secret`.
    fn assert_never_more_than_six(shown: &[String], secret: &str) {
        for n in 7..=secret.len() {
            let head = &secret[..n];
            for draft in shown {
                assert!(!draft.contains(head), "{head:?} shown in {draft:?}");
            }
        }
    }

    #[test]
    fn a_configured_secret_streamed_two_characters_at_a_time_never_shows_more_than_six() {
        let scrubber = Scrubber::new([SECRET]);
        let text = format!("The password is {SECRET} and that is all.");
        let shown = drafts(&scrubber, &text, 2);
        assert_never_more_than_six(&shown, SECRET);
        assert!(shown.last().unwrap().ends_with("that is all."));
    }

    #[test]
    fn token_shapes_not_in_the_config_are_held_back_until_complete() {
        let scrubber = Scrubber::default();
        for token in [
            "sk-proj-TESTONLYabcdefghijklmnopqrstuv",
            "xoxb-9999999999-TESTONLYfakefake",
            "ghp_TESTONLYabcdefghijklmnopqrstuvwxyz0123",
            "AKIAABCDEFGHIJKLMNOP",
            "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            let text = format!("here: {token} done");
            for step in [1, 2, 3] {
                assert_never_more_than_six(&drafts(&scrubber, &text, step), token);
            }
        }
    }

    #[test]
    fn a_credential_after_a_key_is_held_until_it_reaches_the_redacted_length() {
        let scrubber = Scrubber::default();
        let shown = drafts(&scrubber, "config: password=abcdefghijk ok", 1);
        assert_never_more_than_six(&shown, "abcdefghijk");
        let pem =
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowSECRETBODY\n-----END RSA PRIVATE KEY-----";
        let shown = drafts(&scrubber, &format!("key:\n{pem}\n"), 2);
        assert_never_more_than_six(&shown, "MIIEowSECRETBODY");
    }

    #[test]
    fn ordinary_text_is_released_as_soon_as_it_cannot_become_a_credential() {
        let scrubber = Scrubber::new([SECRET]);
        let hold = Holdback::default();
        assert_eq!(hold.settled(&scrubber, "Hello, world."), "Hello, world.");
        assert_eq!(
            hold.settled(&scrubber, "Hello, world. The sk-"),
            "Hello, world. The "
        );
        assert_eq!(
            hold.settled(&scrubber, "Hello, world. The sk-1 "),
            "Hello, world. The sk-1 "
        );
        assert_eq!(
            hold.settled(&scrubber, "Hello, world. The sk-1 hun"),
            "Hello, world. The sk-1 "
        );
    }

    #[test]
    fn a_cut_never_falls_inside_a_credential_the_scrubber_would_redact() {
        // The secret's tail could start a Discord-shaped token, which stays open.
        let secret = "abcdefghMNOPQRSTUVWXYZabcdefghijkl";
        let scrubber = Scrubber::new([secret]);
        let shown = drafts(&scrubber, &format!("x {secret}"), 2);
        assert_never_more_than_six(&shown, secret);
    }
}

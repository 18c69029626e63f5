//! Credential scrubbing: every text that leaves a tool (into history, the audit log, chat) and
//! every log line passes through one `Scrubber`, which redacts `key = value` credentials,
//! well-known token shapes and the exact values of the secrets in the loaded config.

mod holdback;

use std::borrow::Cow;
use std::sync::{LazyLock, Mutex};

use regex::{Captures, Regex, RegexSet};

pub use holdback::Holdback;

/// What a redacted value becomes: its first 4 characters, then this.
pub const REDACTED: &str = "*[REDACTED]";

/// `key: value` / `key=value` pairs whose key names a credential (the seed design's pattern).
const KEY_VALUE: &str = r#"(?i)(token|api[_-]?key|password|secret|user[_-]?key|bearer|credential)["']?\s*[:=]\s*(?:"([^"]{8,})"|'([^']{8,})'|([a-zA-Z0-9_\-\.]{8,}))"#;

/// Token shapes recognised without a key in front of them.
const SHAPES: &[&str] = &[
    // OpenAI / Anthropic keys.
    r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{20,}",
    // Slack tokens.
    r"\bxox[abpr]-[A-Za-z0-9\-]{10,}",
    // Telegram bot tokens.
    // (`[0-9]`, not `\d`: tokens are ASCII, and Unicode `\d` under a repetition compiled to a
    // large automaton that cost milliseconds of every start.)
    r"\b[0-9]{6,}:[A-Za-z0-9_\-]{30,}",
    // Discord bot tokens.
    r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}",
    // GitHub tokens.
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",
    // AWS access key ids.
    r"\bAKIA[0-9A-Z]{16}\b",
    // Authorization headers.
    r"(?i)\bbearer\s+[A-Za-z0-9\-\._~\+/]{8,}=*",
];

/// PEM private key blocks, replaced whole.
const PEM: &str = r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----";

/// Which fixed patterns occur at all (index 0 `KEY_VALUE`, 1 `PEM`, then `SHAPES`). The fixed
/// patterns are compiled once per process, on first use, and shared by every scrubber: a
/// gateway builds several (logs, channels, turns), and compiling them was most of a cold start.
static FIXED: LazyLock<RegexSet> = LazyLock::new(|| {
    let mut patterns: Vec<&str> = vec![KEY_VALUE, PEM];
    patterns.extend(SHAPES);
    RegexSet::new(&patterns).expect("scrub patterns compile")
});
/// The rewriting forms of the fixed patterns, compiled only once text needs rewriting.
static KEY_VALUE_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(KEY_VALUE).expect("compiles"));
static PEM_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(PEM).expect("compiles"));
static SHAPE_RES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    SHAPES
        .iter()
        .map(|p| Regex::new(p).expect("compiles"))
        .collect()
});

/// The alternation of `values`, compiled once per set of values: a gateway builds a scrubber
/// from the same config in several places at start (logs, channels, the dashboard, turns),
/// and each compile of a config's secrets (every value in each of its encodings) cost as much
/// as a quarter of a start. A `Regex` clone shares the compiled program.
fn exact_alternation(values: &[String]) -> Regex {
    static LAST: Mutex<Option<(Vec<String>, Regex)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((seen, regex)) = last.as_ref()
        && seen.as_slice() == values
    {
        return regex.clone();
    }
    let alternation: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
    let regex = Regex::new(&alternation.join("|")).expect("escaped literals compile");
    *last = Some((values.to_vec(), regex.clone()));
    regex
}

/// A scrubber for one set of configured secrets. Cheap to build and to clone (the fixed
/// patterns are shared); scrubbing clean text allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// Exact configured secret values, longest first, as one alternation.
    exact: Option<Regex>,
    /// The same values, for the streaming holdback's prefix test.
    values: Vec<String>,
}

impl Scrubber {
    /// A scrubber that also redacts these exact values (values shorter than 4 characters are
    /// ignored: they would redact ordinary words).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut values: Vec<String> = secrets
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .filter(|s| s.chars().count() >= 4)
            .flat_map(|s| encoded_forms(&s))
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        let exact = (!values.is_empty()).then(|| exact_alternation(&values));
        Self { exact, values }
    }

    /// `text` with every credential redacted; borrowed unchanged when there is none.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let hits = FIXED.matches(text);
        let exact = self.exact.as_ref().filter(|e| e.is_match(text));
        if !hits.matched_any() && exact.is_none() {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        // Exact values first: a configured secret may not match any generic shape.
        if let Some(exact) = exact {
            out = exact
                .replace_all(&out, |c: &Captures| redact(&c[0]))
                .into_owned();
        }
        if hits.matched(1) {
            out = PEM_RE
                .replace_all(&out, "[REDACTED PRIVATE KEY]")
                .into_owned();
        }
        if hits.matched(0) {
            out = KEY_VALUE_RE
                .replace_all(&out, |c: &Captures| {
                    let value = c.get(2).or(c.get(3)).or(c.get(4)).expect("one value group");
                    let whole = c.get(0).expect("match");
                    let head = &whole.as_str()[..value.start() - whole.start()];
                    let tail = &whole.as_str()[value.end() - whole.start()..];
                    format!("{head}{}{tail}", redact(value.as_str()))
                })
                .into_owned();
        }
        for (i, shape) in SHAPE_RES.iter().enumerate() {
            if hits.matched(2 + i) {
                out = shape
                    .replace_all(&out, |c: &Captures| redact(&c[0]))
                    .into_owned();
            }
        }
        Cow::Owned(out)
    }

    /// `value` with every string in it scrubbed (tool-call arguments for history, audit and
    /// approvals).
    pub fn scrub_json(&self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.scrub(s).into_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.scrub_json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.scrub_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Scrub in place.
    pub fn scrub_string(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.scrub(text) {
            *text = clean;
        }
    }
}

/// What RFC 3986 percent-encoding escapes (it leaves the unreserved marks; some encoders
/// escape those too, so both forms are patterns).
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `value` and the forms it travels in: base64 (standard and URL-safe, unpadded) and
/// percent-encoded.
fn encoded_forms(value: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let mut forms = vec![
        value.to_owned(),
        STANDARD_NO_PAD.encode(value),
        URL_SAFE_NO_PAD.encode(value),
        utf8_percent_encode(value, NON_ALPHANUMERIC).to_string(),
        utf8_percent_encode(value, UNRESERVED).to_string(),
    ];
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        forms.extend(base64_inside(value.as_bytes(), |b| engine.encode(b)));
    }
    forms.sort();
    forms.dedup();
    forms
}

/// The base64 characters that encode `value` wherever it starts inside a longer encoded text
/// (`user:secret` in HTTP Basic auth starts the secret at byte 5): for each of the three byte
/// offsets, the characters that depend on the secret's bytes alone, without the first ones
/// that share bits with what precedes it and the last one that shares bits with what follows.
/// Short values are left out: their inner characters are too few to be a safe pattern.
fn base64_inside(value: &[u8], encode: impl Fn(&[u8]) -> String) -> Vec<String> {
    const MIN_INNER_CHARS: usize = 8;
    (0..3)
        .filter_map(|offset| {
            let mut padded = vec![0u8; offset];
            padded.extend_from_slice(value);
            let text = encode(&padded);
            // Characters 0..skip carry bits of the filler bytes; the last one may carry bits
            // of whatever follows the secret.
            let skip = (offset * 8).div_ceil(6);
            let end = text.len() - usize::from(padded.len() % 3 != 0);
            let inner = text.get(skip..end)?;
            (inner.len() >= MIN_INNER_CHARS).then(|| inner.to_owned())
        })
        .collect()
}

/// First 4 characters (UTF-8 safe) and the marker. Already-redacted text stays as it is.
fn redact(value: &str) -> String {
    if value.ends_with(REDACTED) {
        return value.to_owned();
    }
    let head: String = value.chars().take(4).collect();
    format!("{head}{REDACTED}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrub(text: &str) -> String {
        Scrubber::new(["hunter2-configured-secret"])
            .scrub(text)
            .into_owned()
    }

    #[test]
    fn scrubbers_of_other_secrets_never_share_an_alternation() {
        let alpha = || Scrubber::new(["alpha-secret-value"]);
        let first = alpha();
        let beta = Scrubber::new(["beta-secret-value"]);
        let again = alpha();
        for s in [&first, &again] {
            assert!(s.scrub("x alpha-secret-value y").contains(REDACTED));
            assert_eq!(s.scrub("x beta-secret-value y"), "x beta-secret-value y");
        }
        assert!(beta.scrub("x beta-secret-value y").contains(REDACTED));
        assert_eq!(
            beta.scrub("x alpha-secret-value y"),
            "x alpha-secret-value y"
        );
    }

    #[test]
    fn key_value_credentials_keep_their_first_four_characters() {
        assert_eq!(
            scrub("api_key=abcdefgh12345"),
            format!("api_key=abcd{REDACTED}")
        );
        assert_eq!(
            scrub(r#"{"password": "correct horse battery"}"#),
            format!(r#"{{"password": "corr{REDACTED}"}}"#)
        );
        assert_eq!(
            scrub("TOKEN: 'zyxwvuts9876'"),
            format!("TOKEN: 'zyxw{REDACTED}'")
        );
    }

    #[test]
    fn token_shapes_are_redacted_without_a_key() {
        let cases = [
            "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "xoxb-1234567890-abcdefghij",
            "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "AKIAABCDEFGHIJKLMNOP",
        ];
        for token in cases {
            let out = scrub(&format!("found {token} here"));
            assert!(!out.contains(token), "{token} survived: {out}");
            assert!(out.contains(REDACTED), "{out}");
        }
        let header = scrub("Authorization: Bearer abc.def-ghi_jkl");
        assert!(!header.contains("def-ghi_jkl"), "{header}");
    }

    #[test]
    fn pem_private_keys_are_removed_whole() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----";
        let out = scrub(&format!("key:\n{pem}\nend"));
        assert_eq!(out, "key:\n[REDACTED PRIVATE KEY]\nend");
    }

    #[test]
    fn configured_secret_values_are_redacted_wherever_they_appear() {
        let out = scrub("the value is hunter2-configured-secret, ok");
        assert_eq!(out, format!("the value is hunt{REDACTED}, ok"));
    }

    #[test]
    fn base64_and_url_encoded_forms_of_a_configured_secret_are_redacted() {
        let scrubber = Scrubber::new(["p@ss:word/secret", ""]);
        for form in ["cEBzczp3b3JkL3NlY3JldA", "p%40ss%3Aword%2Fsecret"] {
            let out = scrubber.scrub(&format!("auth {form} end")).into_owned();
            assert!(!out.contains(form), "{out}");
        }
        assert!(matches!(
            scrubber.scrub("an empty value matches nothing"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_configured_secret_is_redacted_inside_a_longer_base64_text_at_any_offset() {
        use base64::Engine as _;
        use base64::engine::general_purpose::STANDARD;
        let secret = "hunter2-correct-horse-battery";
        let scrubber = Scrubber::new([secret]);
        for prefix in ["", "a", "ab", "alice:", "Basic credentials for bob:"] {
            let encoded = STANDARD.encode(format!("{prefix}{secret} and more"));
            let out = scrubber.scrub(&encoded).into_owned();
            // Base64 of the secret's middle must not survive at the offset it sits at.
            let inner = STANDARD.encode(format!("{prefix}{secret}"));
            let keep = inner.len() - 8;
            assert!(
                !out.contains(&inner[keep - 12..keep]),
                "{prefix:?}: {encoded} -> {out}"
            );
            assert!(out.contains(REDACTED), "{prefix:?}: {out}");
        }
    }

    #[test]
    fn clean_text_is_borrowed_and_unicode_is_safe() {
        let s = Scrubber::default();
        assert!(matches!(s.scrub("nothing to see"), Cow::Borrowed(_)));
        let out = s.scrub(r#"password="ñññññññññ""#);
        assert_eq!(out, format!(r#"password="ññññ{REDACTED}""#));
    }

    #[test]
    fn scrubbing_twice_changes_nothing_more() {
        let once = scrub("token=abcdefghijkl and sk-abcdefghijklmnopqrstuvwxyz");
        assert_eq!(scrub(&once), once);
    }
}

//! `${VAR}` expansion for config strings, done while deserializing so a missing variable is
//! reported by the TOML parser with the file, line, column and key it belongs to. The core's
//! own keys and every channel crate's keys go through these same types and functions.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, de};

/// Expand `${VAR}` and `${VAR:-default}` references in `raw` from `lookup`.
///
/// `$$` is a literal `$`. A variable that is unset (and has no default) is an error naming it.
pub fn expand(raw: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in {raw:?}"))?;
            let (name, default) = match body[..end].split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (&body[..end], None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("bad variable name {name:?} in ${{…}}"));
            }
            match (lookup(name), default) {
                (Some(value), None) => out.push_str(&value),
                (Some(value), Some(_)) if !value.is_empty() => out.push_str(&value),
                (_, Some(default)) => out.push_str(default),
                (None, None) => return Err(format!("environment variable {name} is not set")),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Deserialize a string key with `${VAR}` references resolved (`#[serde(deserialize_with)]`),
/// for settings that keep a plain `String`.
pub fn expanded<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    EnvString::deserialize(d).map(|s| s.0)
}

/// [`expanded`] for an optional key (use with `#[serde(default)]`).
pub fn expanded_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    EnvString::deserialize(d).map(|s| Some(s.0))
}

/// A config string with `${VAR}` references resolved from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvString(pub String);

impl<'de> Deserialize<'de> for EnvString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        expand(&raw, env_lookup)
            .map(EnvString)
            .map_err(de::Error::custom)
    }
}

impl std::ops::Deref for EnvString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// A credential from the config: resolved like [`EnvString`], but never printed.
///
/// `Debug` shows `[REDACTED]`; the only way to the value is [`Secret::expose`], so every
/// place that uses a secret is easy to find.
#[derive(Clone, Default)]
pub struct Secret(Option<SecretString>);

impl Secret {
    /// Wrap a value (tests, programmatic config).
    pub fn new(value: impl Into<String>) -> Self {
        let value: String = value.into();
        Self((!value.is_empty()).then(|| SecretString::from(value)))
    }

    /// The value, or `None` when it was empty or absent (e.g. `${TOKEN:-}` with no TOKEN).
    pub fn expose(&self) -> Option<&str> {
        self.0.as_ref().map(ExposeSecret::expose_secret)
    }

    /// Whether a non-empty value is set.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_set() {
            "[REDACTED]"
        } else {
            "[unset]"
        })
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        EnvString::deserialize(d).map(|s| Secret::new(s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("abc".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn references_are_replaced_and_literals_kept() {
        assert_eq!(expand("x-${TOKEN}-y", vars).unwrap(), "x-abc-y");
        assert_eq!(
            expand("cost $5 and $$HOME", vars).unwrap(),
            "cost $5 and $HOME"
        );
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(expand("${MISSING:-dflt}", vars).unwrap(), "dflt");
        assert_eq!(expand("${EMPTY:-dflt}", vars).unwrap(), "dflt");
        assert_eq!(expand("${MISSING:-}", vars).unwrap(), "");
    }

    #[test]
    fn a_missing_variable_is_an_error_naming_it() {
        let err = expand("${NOPE}", vars).unwrap_err();
        assert!(err.contains("NOPE"), "{err}");
        assert!(expand("${UNCLOSED", vars).is_err());
        assert!(expand("${bad name}", vars).is_err());
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let secret = Secret::new("hunter2-very-secret");
        assert_eq!(format!("{secret:?}"), "[REDACTED]");
        assert_eq!(secret.expose(), Some("hunter2-very-secret"));
        assert!(!Secret::new("").is_set());
    }
}

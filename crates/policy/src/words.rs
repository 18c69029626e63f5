//! Word-level shell reading for the policy gate: finds the `$(…)` and backtick substitutions
//! hidden inside one word, unquotes a word into the text the shell would pass on, and names
//! the variable an assignment word sets and the program a path names (its basename).

/// A word, a substitution or a here-document whose end the scanner could not find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unparsable;

/// The source text of every `$(…)` and backtick substitution in `raw`, outermost first.
///
/// Single quotes (and `$'…'`) hide substitutions; double quotes do not. `quotes` is false for
/// here-document bodies, where quote characters are ordinary text.
pub(crate) fn substitutions(raw: &str, quotes: bool) -> Result<Vec<String>, Unparsable> {
    let chars: Vec<char> = raw.chars().collect();
    let mut found = Vec::new();
    let mut in_double = false;
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        match rest {
            ['\\', ..] => i += 2,
            ['$', '\'', ..] if quotes && !in_double => i = skip_ansi_c(&chars, i + 2)?,
            ['\'', ..] if quotes && !in_double => i = skip_single(&chars, i + 1)?,
            ['"', ..] if quotes => {
                in_double = !in_double;
                i += 1;
            }
            // Arithmetic `$((…))` runs nothing itself; substitutions inside it are still found.
            ['$', '(', '(', ..] if arithmetic(&chars, i) => i += 3,
            ['$', '(', ..] => {
                let close = matching_paren(&chars, i + 2)?;
                found.push(chars[i + 2..close].iter().collect());
                i = close + 1;
            }
            ['`', ..] => {
                let close = closing_backtick(&chars, i + 1)?;
                found.push(unescape_backticks(&chars[i + 1..close]));
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    Ok(found)
}

/// Whether the `$((` at `at` is arithmetic: as in bash, only when the `)` matching its second
/// `(` is followed at once by `)`. Otherwise (`$((touch x) )`) it is a command substitution
/// whose script starts with a subshell. An unclosed one is read as the latter, and rejected.
fn arithmetic(chars: &[char], at: usize) -> bool {
    match matching_paren(chars, at + 3) {
        Ok(close) => chars.get(close + 1) == Some(&')'),
        Err(Unparsable) => false,
    }
}

/// Index just past the `'` closing a single-quoted run that starts at `from`.
fn skip_single(chars: &[char], from: usize) -> Result<usize, Unparsable> {
    let len = chars[from..]
        .iter()
        .position(|&c| c == '\'')
        .ok_or(Unparsable)?;
    Ok(from + len + 1)
}

/// Index just past the `'` closing a `$'…'` run (backslash escapes inside) that starts at `from`.
fn skip_ansi_c(chars: &[char], from: usize) -> Result<usize, Unparsable> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '\'' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err(Unparsable)
}

/// Index of the `)` that closes a `$(` whose text starts at `from`.
fn matching_paren(chars: &[char], from: usize) -> Result<usize, Unparsable> {
    let mut depth = 0usize;
    let mut in_double = false;
    let mut i = from;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('\\', _) => i += 2,
            ('\'', _) if !in_double => i = skip_single(chars, i + 1)?,
            ('"', _) => {
                in_double = !in_double;
                i += 1;
            }
            ('$', Some('(')) => i = matching_paren(chars, i + 2)? + 1,
            ('`', _) => i = closing_backtick(chars, i + 1)? + 1,
            ('(', _) if !in_double => {
                depth += 1;
                i += 1;
            }
            (')', _) if !in_double => {
                if depth == 0 {
                    return Ok(i);
                }
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    Err(Unparsable)
}

/// Index of the unescaped backtick closing one that opened just before `from`.
fn closing_backtick(chars: &[char], from: usize) -> Result<usize, Unparsable> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '`' => return Ok(i),
            _ => i += 1,
        }
    }
    Err(Unparsable)
}

/// Inside backticks, `\``, `\\` and `\$` stand for the character itself.
fn unescape_backticks(chars: &[char]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i..] {
            ['\\', c @ ('`' | '\\' | '$'), ..] => {
                out.push(c);
                i += 2;
            }
            [c, ..] => {
                out.push(c);
                i += 1;
            }
            [] => break,
        }
    }
    out
}

/// The text the shell passes on for one word: quotes removed, escapes applied, `$'…'` decoded.
/// Expansions (`$X`, `$(…)`, globs) stay as written.
pub(crate) fn unquote(raw: &str) -> String {
    let decoded = decode_ansi_c_quotes(raw);
    match shlex::split(&decoded) {
        Some(parts) if parts.len() == 1 => parts.into_iter().next().unwrap_or_default(),
        Some(parts) if !parts.is_empty() => parts.join(" "),
        _ => raw.to_string(),
    }
}

/// Rewrites each `$'…'` outside other quotes as the single-quoted text it decodes to, and
/// `$"…"` as `"…"`, so that shlex can finish the job (`$'\x72m'` is `rm`).
fn decode_ansi_c_quotes(raw: &str) -> String {
    if !raw.contains("$'") && !raw.contains("$\"") {
        return raw.to_string();
    }
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::new();
    let mut in_double = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i..] {
            ['\\', c, ..] => {
                out.extend(['\\', c]);
                i += 2;
            }
            ['$', '\'', ..] if !in_double => {
                let (text, next) = decode_ansi_c(&chars, i + 2);
                out.push('\'');
                out.push_str(&text.replace('\'', "'\\''"));
                out.push('\'');
                i = next;
            }
            ['$', '"', ..] if !in_double => i += 1,
            ['\'', ..] if !in_double => {
                let end = skip_single(&chars, i + 1).unwrap_or(chars.len());
                out.extend(&chars[i..end]);
                i = end;
            }
            [c, ..] => {
                in_double ^= c == '"';
                out.push(c);
                i += 1;
            }
            [] => break,
        }
    }
    out
}

/// Decodes the body of `$'…'` starting at `from`; returns the text and the index past the `'`.
fn decode_ansi_c(chars: &[char], from: usize) -> (String, usize) {
    let mut out = String::new();
    let mut i = from;
    while i < chars.len() {
        match chars[i..] {
            ['\'', ..] => return (out, i + 1),
            ['\\', c, ..] => {
                let (decoded, used) = ansi_c_escape(c, &chars[i + 2..]);
                out.extend(decoded);
                i += 2 + used;
            }
            [c, ..] => {
                out.push(c);
                i += 1;
            }
            [] => break,
        }
    }
    (out, chars.len())
}

/// One `\c…` escape of `$'…'`: the character(s) it stands for and how many chars after `c` it used.
fn ansi_c_escape(c: char, after: &[char]) -> (Option<char>, usize) {
    let simple = match c {
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        'e' | 'E' => Some('\x1b'),
        'f' => Some('\x0c'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\x0b'),
        '\\' | '\'' | '"' | '?' => Some(c),
        _ => None,
    };
    if simple.is_some() {
        return (simple, 0);
    }
    let (radix, max, skip_first) = match c {
        '0'..='7' => (8, 3, false),
        'x' => (16, 2, true),
        'u' => (16, 4, true),
        'U' => (16, 8, true),
        'c' => return (after.first().map(|x| ((*x as u8) & 0x1f) as char), 1),
        _ => return (Some(c), 0),
    };
    let digits: String = if skip_first {
        after
            .iter()
            .take(max)
            .take_while(|d| d.is_digit(radix))
            .collect()
    } else {
        std::iter::once(c)
            .chain(after.iter().copied())
            .take(max)
            .take_while(|d| d.is_digit(radix))
            .collect()
    };
    let used = if skip_first {
        digits.len()
    } else {
        digits.len() - 1
    };
    let value = u32::from_str_radix(&digits, radix)
        .ok()
        .and_then(char::from_u32);
    (value, used)
}

/// The variable a leading `NAME=value` (or `NAME+=value`, `NAME[i]=value`) word assigns, if it is one.
pub(crate) fn assignment_name(raw: &str) -> Option<&str> {
    let eq = raw.find('=')?;
    let name = raw[..eq].trim_end_matches('+');
    let name = name.split_once('[').map_or(name, |(n, _)| n);
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// The last path component, so `/usr/bin/env` is recognised as `env`.
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_are_found_in_double_quotes_but_not_single_quotes() {
        let found = substitutions(r#""a $(rm -rf ~) b" '$(no)' `sudo x`"#, true).unwrap();
        assert_eq!(found, ["rm -rf ~", "sudo x"]);
    }

    #[test]
    fn nested_and_arithmetic_substitutions_are_found() {
        assert_eq!(
            substitutions("$(echo $(id)) $((1 + $(wc -l)))", true).unwrap(),
            ["echo $(id)", "wc -l"]
        );
        assert_eq!(substitutions("$(echo ')')", true).unwrap(), ["echo ')'"]);
    }

    #[test]
    fn here_document_bodies_treat_quotes_as_text() {
        assert_eq!(
            substitutions("it's $(sudo x)\n", false).unwrap(),
            ["sudo x"]
        );
    }

    #[test]
    fn dollar_double_paren_without_double_close_is_a_command_substitution() {
        assert_eq!(
            substitutions("ls $((touch x) )", true).unwrap(),
            ["(touch x) "]
        );
        assert!(substitutions("$((1 + (2 * 3)))", true).unwrap().is_empty());
    }

    #[test]
    fn an_unclosed_substitution_is_unparsable() {
        assert_eq!(substitutions("$(ls", true), Err(Unparsable));
        assert_eq!(substitutions("`ls", true), Err(Unparsable));
    }

    #[test]
    fn unquote_removes_quotes_and_escapes() {
        assert_eq!(unquote(r#""rm""#), "rm");
        assert_eq!(unquote(r"r\m"), "rm");
        assert_eq!(unquote("r''m"), "rm");
        assert_eq!(unquote(r#""$(rm -rf ~)""#), "$(rm -rf ~)");
        assert_eq!(unquote("a\\ b"), "a b");
    }

    #[test]
    fn ansi_c_quotes_are_decoded() {
        assert_eq!(unquote(r"$'\x72m'"), "rm");
        assert_eq!(unquote(r"$'\162m'"), "rm");
        assert_eq!(unquote(r"$'it\'s'"), "it's");
        assert_eq!(unquote(r#"$"rm""#), "rm");
    }

    #[test]
    fn assignments_are_recognised_by_their_unquoted_name() {
        assert_eq!(assignment_name("FOO=1"), Some("FOO"));
        assert_eq!(assignment_name("a_b+=x"), Some("a_b"));
        assert_eq!(assignment_name("arr[2]=x"), Some("arr"));
        assert_eq!(assignment_name("\"FOO\"=1"), None);
        assert_eq!(assignment_name("--opt=1"), None);
        assert_eq!(assignment_name("1x=1"), None);
    }
}

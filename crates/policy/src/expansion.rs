//! What bash does to a word besides removing its quotes, as far as the policy gate must know:
//! whether a word expands into something the analyzer cannot read (brace, parameter, command
//! and arithmetic expansion, globs that can yield an option or a program name), and the brace
//! expansion of a word, so deny rules can be matched against the words bash would run.
//!
//! The gate compares words; bash runs the words these expansions make. A word the gate cannot
//! read is therefore never read-only, an allow rule grants it only when it spells it out, and
//! deny rules and circuit breakers treat it as matching wherever it could (see `Part::unread`,
//! and `unread` for what such a command may run).

/// Most words one brace expansion may yield before the rest is dropped (deny views only: a
/// line this large still asks, because its words are unread).
const MAX_BRACE_WORDS: usize = 256;

/// Longest `{a..z}` sequence expanded.
const MAX_SEQUENCE: i64 = 64;

/// Whether bash turns `raw` (a word as written, quotes and all) into words other than its
/// unquoted text. `program` is whether it stands where the command name is read: there any
/// glob could find a program; elsewhere only one in the first path component can (`*.txt`
/// can yield `-delete.txt` or `awk`; `./*.txt` and `src/*` cannot yield either).
pub(crate) fn unread(raw: &str, program: bool) -> bool {
    let scan = Scan::of(raw);
    scan.dollar || scan.backtick || scan.braces || (scan.glob && (program || scan.glob_first))
}

/// What one pass over a word found outside the quotes that disable it.
#[derive(Debug, Default)]
struct Scan {
    /// `$name`, `${…}`, `$(…)`, `$((…))`, `$1`, `$@`, … (also inside double quotes).
    dollar: bool,
    /// A backtick substitution (also inside double quotes).
    backtick: bool,
    /// An unquoted `{…,…}` or `{x..y}`.
    braces: bool,
    /// An unquoted `*`, `?` or `[…]`.
    glob: bool,
    /// A glob before the first unquoted `/`.
    glob_first: bool,
}

impl Scan {
    fn of(raw: &str) -> Self {
        let chars: Vec<char> = raw.chars().collect();
        let mut scan = Self::default();
        let mut quote = Quote::None;
        let mut slash_seen = false;
        // Unquoted `{` positions still open, and whether each has a top-level `,` or `..`.
        let mut open: Vec<bool> = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match (quote, c) {
                (Quote::Single, '\'') | (Quote::AnsiC, '\'') | (Quote::Double, '"') => {
                    quote = Quote::None;
                }
                (Quote::Single, _) => {}
                (Quote::AnsiC, '\\') => i += 1,
                (Quote::AnsiC, _) => {}
                (_, '\\') => i += 1,
                (_, '`') => scan.backtick = true,
                (_, '$') if starts_expansion(next, quote) => scan.dollar = true,
                (Quote::None, '$') if next == Some('\'') => {
                    quote = Quote::AnsiC;
                    i += 1;
                }
                (Quote::None, '\'') => quote = Quote::Single,
                (Quote::None, '"') => quote = Quote::Double,
                (Quote::Double, _) => {}
                (Quote::None, '/') => slash_seen = true,
                // `~name` is another user's home, looked up at run time (`~` and `~/x` are
                // read: the workspace's home, outside the workspace for the breakers).
                (Quote::None, '~') if i == 0 && next.is_some_and(|n| n.is_alphanumeric()) => {
                    scan.dollar = true;
                }
                (Quote::None, '*' | '?') => scan.note_glob(slash_seen),
                (Quote::None, '[') if chars[i + 1..].contains(&']') => scan.note_glob(slash_seen),
                (Quote::None, '{') => open.push(false),
                (Quote::None, ',') => {
                    if let Some(top) = open.last_mut() {
                        *top = true;
                    }
                }
                (Quote::None, '.') if next == Some('.') => {
                    if let Some(top) = open.last_mut() {
                        *top = true;
                    }
                }
                (Quote::None, '}') => {
                    if open.pop() == Some(true) {
                        scan.braces = true;
                    }
                }
                (Quote::None, _) => {}
            }
            i += 1;
        }
        scan
    }

    fn note_glob(&mut self, slash_seen: bool) {
        self.glob = true;
        self.glob_first |= !slash_seen;
    }
}

/// The quoting in force at one character of a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    /// `$'…'`, where backslashes escape.
    AnsiC,
    Double,
}

/// Whether a `$` followed by `next` starts an expansion (`$'…'` and `$"…"` outside double
/// quotes are quoting, and a `$` before a space or at the end is itself).
fn starts_expansion(next: Option<char>, quote: Quote) -> bool {
    match next {
        Some(c) if c.is_ascii_alphanumeric() => true,
        Some('_' | '{' | '(' | '@' | '*' | '#' | '?' | '-' | '$' | '!') => true,
        Some('"') => quote == Quote::Double,
        _ => false,
    }
}

/// The words bash's brace expansion makes of `raw`, quotes kept as written (`a{b,c}d` →
/// `abd acd`; `{1..3}` → `1 2 3`), at most [`MAX_BRACE_WORDS`]. Braces inside quotes or after
/// a backslash stay as they are; a word without an expansion is returned alone.
pub(crate) fn brace_expand(raw: &str) -> Vec<String> {
    let chars: Vec<char> = raw.chars().collect();
    let mut out = Vec::new();
    expand_into(&chars, &mut out);
    out.truncate(MAX_BRACE_WORDS);
    out
}

fn expand_into(chars: &[char], out: &mut Vec<String>) {
    if out.len() >= MAX_BRACE_WORDS {
        return;
    }
    let Some((open, commas, close)) = first_brace(chars) else {
        out.push(chars.iter().collect());
        return;
    };
    let prefix = &chars[..open];
    let suffix = &chars[close + 1..];
    let body = &chars[open + 1..close];
    let alternatives: Vec<Vec<char>> = if commas.is_empty() {
        sequence(&body.iter().collect::<String>())
            .into_iter()
            .map(|s| s.chars().collect())
            .collect()
    } else {
        let mut bounds = vec![open];
        bounds.extend(&commas);
        bounds.push(close);
        bounds
            .windows(2)
            .map(|w| chars[w[0] + 1..w[1]].to_vec())
            .collect()
    };
    for alternative in alternatives {
        let word: Vec<char> = [prefix, &alternative, suffix].concat();
        expand_into(&word, out);
    }
}

/// The leftmost outermost unquoted `{…}` that expands, as bash expands it first: its `{`, its
/// top-level commas, its `}`. One that does not expand (`{}`, `{a}`) is skipped.
fn first_brace(chars: &[char]) -> Option<(usize, Vec<usize>, usize)> {
    let mut quote = Quote::None;
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut found: Vec<(usize, Vec<usize>, usize)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match (quote, chars[i]) {
            (Quote::Single, '\'') | (Quote::AnsiC, '\'') | (Quote::Double, '"') => {
                quote = Quote::None;
            }
            (Quote::Single, _) => {}
            (Quote::AnsiC | Quote::Double | Quote::None, '\\') => i += 1,
            (Quote::AnsiC | Quote::Double, _) => {}
            (Quote::None, '$') if chars.get(i + 1) == Some(&'\'') => {
                quote = Quote::AnsiC;
                i += 1;
            }
            // `${…}` is parameter expansion, not a brace.
            (Quote::None, '$') if chars.get(i + 1) == Some(&'{') => {
                stack.push((usize::MAX, Vec::new()));
                i += 1;
            }
            (Quote::None, '\'') => quote = Quote::Single,
            (Quote::None, '"') => quote = Quote::Double,
            (Quote::None, '{') => stack.push((i, Vec::new())),
            (Quote::None, ',') => {
                if let Some((_, commas)) = stack.last_mut() {
                    commas.push(i);
                }
            }
            (Quote::None, '}') => {
                if let Some((open, commas)) = stack.pop() {
                    let in_parameter = stack.iter().any(|(o, _)| *o == usize::MAX);
                    if open != usize::MAX && !in_parameter {
                        let body: String = chars[open + 1..i].iter().collect();
                        if !commas.is_empty() || sequence(&body).len() > 1 {
                            found.push((open, commas, i));
                        }
                    }
                }
            }
            (Quote::None, _) => {}
        }
        i += 1;
    }
    // Inner braces close first; the outermost of them is the one bash expands first.
    let enclosed =
        |(o, _, c): &(usize, Vec<usize>, usize)| found.iter().any(|(fo, _, fc)| fo < o && c < fc);
    let outer = found
        .iter()
        .filter(|b| !enclosed(b))
        .min_by_key(|(o, _, _)| *o)?;
    Some(outer.clone())
}

/// `x..y` or `x..y..step` over integers or single letters; anything else is no sequence.
fn sequence(body: &str) -> Vec<String> {
    let parts: Vec<&str> = body.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, 1),
        [a, b, s] => match s.parse::<i64>() {
            Ok(s) if s != 0 => (*a, *b, s.abs()),
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let numbers = (from.parse::<i64>(), to.parse::<i64>());
    if let (Ok(a), Ok(b)) = numbers {
        return walk(a, b, step).map(|n| n.to_string()).collect();
    }
    let letters = (single_ascii_letter(from), single_ascii_letter(to));
    if let (Some(a), Some(b)) = letters {
        return walk(i64::from(a), i64::from(b), step)
            .filter_map(|n| u8::try_from(n).ok().map(|b| char::from(b).to_string()))
            .collect();
    }
    Vec::new()
}

fn walk(a: i64, b: i64, step: i64) -> impl Iterator<Item = i64> {
    let up = a <= b;
    (0..MAX_SEQUENCE)
        .map(move |k| if up { a + k * step } else { a - k * step })
        .take_while(move |n| if up { *n <= b } else { *n >= b })
}

fn single_ascii_letter(text: &str) -> Option<u8> {
    match text.as_bytes() {
        [b] if b.is_ascii_alphabetic() => Some(*b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions_bash_performs_make_a_word_unread() {
        for word in [
            "{-exec,touch,pd2,\\;}",
            "-exec$u",
            "-fprint${IFS}p8",
            "$(echo -delete)",
            "`id`",
            "\"$x\"",
            "-e\"$u\"xec",
            "$((1+1))",
            "a{b..d}",
            "*.txt",
            "?",
            "[-]delete",
            "a*",
            "~root",
        ] {
            assert!(unread(word, false), "{word} should be unread");
        }
    }

    #[test]
    fn quoted_and_plain_words_and_globs_behind_a_slash_are_read() {
        for word in [
            "plain",
            "'$x'",
            "'{a,b}'",
            "\"{a,b}\"",
            "\\{a,b\\}",
            "{}",
            "{a}",
            "./*.txt",
            "src/*",
            "'*'",
            "\\*",
            "$'\\x72m'",
            "a$",
            "[",
            "-name",
            "100$ cost",
            "~",
            "~/x",
        ] {
            assert!(!unread(word, false), "{word} should be read");
        }
    }

    #[test]
    fn any_glob_in_the_command_name_is_unread() {
        assert!(unread("/bin/r?", true));
        assert!(!unread("/bin/r?", false));
    }

    #[test]
    fn braces_expand_as_bash_expands_them() {
        assert_eq!(
            brace_expand("{-exec,touch,pd2,\\;}"),
            ["-exec", "touch", "pd2", "\\;"]
        );
        assert_eq!(brace_expand("r{m,}"), ["rm", "r"]);
        assert_eq!(
            brace_expand("a{b,c{1..3}}d"),
            ["abd", "ac1d", "ac2d", "ac3d"]
        );
        assert_eq!(brace_expand("{a..c}"), ["a", "b", "c"]);
        assert_eq!(brace_expand("{5..1..2}"), ["5", "3", "1"]);
        assert_eq!(brace_expand("'{a,b}'"), ["'{a,b}'"]);
        assert_eq!(brace_expand("${a,b}"), ["${a,b}"]);
        assert_eq!(brace_expand("{}"), ["{}"]);
        assert_eq!(brace_expand("x{a}y"), ["x{a}y"]);
    }

    #[test]
    fn a_huge_brace_expansion_is_cut() {
        let word = "{a,b}".repeat(20);
        assert_eq!(brace_expand(&word).len(), MAX_BRACE_WORDS);
    }
}

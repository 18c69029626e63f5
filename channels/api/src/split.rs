//! The limit-aware splitter: cuts a long markdown answer into messages that each fit a
//! platform's limit, at paragraph or line boundaries where possible, and never leaves a code
//! fence open across a cut (it is closed at the end of one part and reopened in the next).

use serde::{Deserialize, Serialize};

/// How a platform counts message length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LengthUnit {
    /// Unicode scalar values (Discord, Slack).
    Chars,
    /// UTF-16 code units (Telegram).
    Utf16,
}

impl LengthUnit {
    /// Length of `s` in this unit.
    pub fn measure(self, s: &str) -> usize {
        match self {
            Self::Chars => s.chars().count(),
            Self::Utf16 => s.encode_utf16().count(),
        }
    }

    fn of_char(self, c: char) -> usize {
        match self {
            Self::Chars => 1,
            Self::Utf16 => c.len_utf16(),
        }
    }
}

/// Below this budget fences are not reopened: there is no room for them to help.
const MIN_FENCED_BUDGET: usize = 24;

/// Split `text` into parts of at most `max` units each.
///
/// Cuts prefer a blank line, then a line break, then a space, each only when it keeps the
/// part at least half full; otherwise the cut is hard (on a character boundary). A part that
/// ends inside a fenced code block gets a closing fence, and the next part reopens it with the
/// same info string, so every part renders on its own.
pub fn split_message(text: &str, max: usize, unit: LengthUnit) -> Vec<String> {
    let max = max.max(1);
    if unit.measure(text) <= max {
        return vec![text.to_owned()];
    }
    let mut parts = Vec::new();
    let mut rest = text;
    let mut open: Option<Fence> = None;
    while !rest.is_empty() {
        let prefix = open.as_ref().map(Fence::reopen).unwrap_or_default();
        if unit.measure(&prefix) + unit.measure(rest) <= max {
            parts.push(format!("{prefix}{rest}"));
            break;
        }
        let fenced = max >= MIN_FENCED_BUDGET;
        let reserve = if fenced { 4 } else { 0 }; // "\n```"
        let budget = max.saturating_sub(unit.measure(&prefix) + reserve).max(1);
        let cut = cut_point(rest, budget, unit);
        let (chunk, tail) = rest.split_at(cut);
        let state = if fenced {
            fence_state(open.clone(), chunk)
        } else {
            None
        };
        let mut part = format!("{prefix}{}", chunk.trim_end_matches([' ', '\n']));
        if let Some(fence) = &state {
            part.push('\n');
            part.push_str(&fence.marker);
        }
        if !part.trim().is_empty() {
            parts.push(part);
        }
        rest = tail.trim_start_matches(['\n', ' ']);
        open = state;
    }
    parts
}

/// The end of `text` that fits in `max` units, marked with a leading ellipsis when cut.
///
/// A draft that outgrows the platform limit while it streams shows its newest text; the
/// final answer is split properly with [`split_message`].
pub fn fit_tail(text: &str, max: usize, unit: LengthUnit) -> String {
    if unit.measure(text) <= max {
        return text.to_owned();
    }
    let budget = max.saturating_sub(2); // "…\n"
    let mut used = 0;
    let mut start = text.len();
    for (idx, c) in text.char_indices().rev() {
        used += unit.of_char(c);
        if used > budget {
            break;
        }
        start = idx;
    }
    format!("…\n{}", &text[start..])
}

/// Byte index to cut `s` at so that `s[..idx]` is at most `budget` units.
fn cut_point(s: &str, budget: usize, unit: LengthUnit) -> usize {
    let mut used = 0;
    let mut hard = s.len();
    for (idx, c) in s.char_indices() {
        used += unit.of_char(c);
        if used > budget {
            hard = idx;
            break;
        }
    }
    if hard == 0 {
        // One character wider than the budget: take it anyway so we always progress.
        return s.chars().next().map_or(s.len(), char::len_utf8);
    }
    let window = &s[..hard];
    let half = hard / 2;
    for sep in ["\n\n", "\n", " "] {
        if let Some(pos) = window.rfind(sep).filter(|&p| p >= half && p > 0) {
            return pos;
        }
    }
    hard
}

/// An open fenced code block: its marker (```` ``` ```` or `~~~`) and info string.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fence {
    marker: String,
    info: String,
}

impl Fence {
    fn reopen(&self) -> String {
        format!("{}{}\n", self.marker, self.info)
    }
}

/// Whether a code fence is open after `chunk`, given the state before it.
fn fence_state(mut open: Option<Fence>, chunk: &str) -> Option<Fence> {
    for line in chunk.lines() {
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let marker_char = match trimmed.chars().next() {
            Some(c @ ('`' | '~')) => c,
            _ => continue,
        };
        let run = trimmed.chars().take_while(|&c| c == marker_char).count();
        if run < 3 {
            continue;
        }
        let rest = &trimmed[run..];
        open = match open {
            Some(fence)
                if fence.marker.starts_with(marker_char)
                    && run >= fence.marker.len()
                    && rest.trim().is_empty() =>
            {
                None
            }
            Some(fence) => Some(fence),
            None => Some(Fence {
                marker: trimmed[..run].to_owned(),
                info: rest.trim().to_owned(),
            }),
        };
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences_balanced(part: &str) -> bool {
        fence_state(None, part).is_none()
    }

    #[test]
    fn short_text_is_one_part() {
        assert_eq!(split_message("hello", 10, LengthUnit::Chars), vec!["hello"]);
    }

    #[test]
    fn splits_at_paragraph_boundary_when_it_keeps_parts_half_full() {
        let text = format!("{}\n\n{}", "a".repeat(60), "b".repeat(60));
        let parts = split_message(&text, 100, LengthUnit::Chars);
        assert_eq!(parts, vec!["a".repeat(60), "b".repeat(60)]);
    }

    #[test]
    fn every_part_fits_and_no_text_is_lost() {
        let text = "word ".repeat(1000);
        let parts = split_message(&text, 97, LengthUnit::Chars);
        assert!(parts.iter().all(|p| p.chars().count() <= 97));
        let words: usize = parts.iter().map(|p| p.split_whitespace().count()).sum();
        assert_eq!(words, 1000);
    }

    #[test]
    fn code_fence_is_closed_and_reopened_across_a_cut() {
        let code: String = (0..200).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Intro\n\n```rust\n{code}```\n\nOutro");
        let parts = split_message(&text, 500, LengthUnit::Chars);
        assert!(parts.len() > 2);
        for part in &parts {
            assert!(part.chars().count() <= 500, "part too long: {}", part.len());
            assert!(fences_balanced(part), "unbalanced fence in {part:?}");
        }
        assert!(parts[1].starts_with("```rust\n"));
        let lines: usize = parts
            .iter()
            .map(|p| p.lines().filter(|l| l.starts_with("let x")).count())
            .sum();
        assert_eq!(lines, 200);
    }

    #[test]
    fn utf16_measure_counts_emoji_as_two_units() {
        let text = "😀".repeat(10);
        let parts = split_message(&text, 5, LengthUnit::Utf16);
        assert!(parts.iter().all(|p| LengthUnit::Utf16.measure(p) <= 5));
        assert_eq!(parts.concat(), text);
    }

    #[test]
    fn a_long_unbroken_word_is_cut_hard() {
        let text = "x".repeat(250);
        let parts = split_message(&text, 100, LengthUnit::Chars);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts.concat(), text);
    }

    #[test]
    fn fit_tail_keeps_the_newest_text_within_the_limit() {
        let text = format!("{}END", "a".repeat(100));
        let tail = fit_tail(&text, 20, LengthUnit::Chars);
        assert!(tail.chars().count() <= 20);
        assert!(tail.starts_with('…') && tail.ends_with("END"));
        assert_eq!(fit_tail("short", 20, LengthUnit::Chars), "short");
    }

    #[test]
    fn tilde_fences_are_tracked_too() {
        let body = "line\n".repeat(100);
        let text = format!("~~~\n{body}~~~");
        for part in split_message(&text, 120, LengthUnit::Chars) {
            assert!(fences_balanced(&part), "{part:?}");
        }
    }
}

//! A rough reading of a line the parser rejected, good only for finding the programs it names:
//! split at every operator, bracket and substitution mark, quotes and escapes dropped, and
//! since where a command starts is unknown, every word may start one (`coproc curl x` holds
//! `curl x`). The line still asks; this lets a deny rule refuse it.

use super::Scan;
use crate::command::{Word, strip_wrappers};
use crate::part::{Analysis, Part};

/// Characters that may end one command and start another, in some reading of the line.
const SEPARATORS: &[char] = &[';', '&', '|', '\n', '(', ')', '`', '{', '}', '$', '!'];

/// Longest run of words read as one command; a deny pattern needs no more to match its start.
const MAX_WORDS: usize = 64;

/// Most runs read from one line, so a huge unreadable line costs bounded time. Past it the line
/// simply asks, which an approver sees.
const MAX_RUNS: usize = 4096;

/// Every run of words in `command` that may be a command, from each word to the end of its
/// segment (at most [`MAX_WORDS`]), wrappers stripped.
pub(crate) fn rough(command: &str) -> Vec<Part> {
    let mut analysis = Analysis::default();
    let mut scan = Scan::new(&mut analysis, 0);
    for segment in command.split(SEPARATORS) {
        // A comma may part brace alternatives (`{-exec,touch,x}`): every piece may be a word.
        let words: Vec<String> = segment
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(|w| w.replace(['\'', '"', '\\'], ""))
            .filter(|w| !w.is_empty() && !w.starts_with(['<', '>']))
            .collect();
        let room = MAX_RUNS.saturating_sub(scan.created.len());
        for start in 0..words.len().min(room) {
            let end = words.len().min(start + MAX_WORDS);
            let suffix = words[start..end].iter().cloned().map(Word::plain).collect();
            scan.add_part(strip_wrappers(suffix), Vec::new());
        }
    }
    analysis.parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_of_an_unreadable_line_may_start_a_command() {
        let texts: Vec<String> = rough("ls && \\curl x 'open; case y in a) \"/bin/rm\" z;; esac")
            .into_iter()
            .map(|p| p.text)
            .collect();
        let expected = [
            "ls",
            "curl x open",
            "x open",
            "open",
            "case y in a",
            "y in a",
            "in a",
            "a",
            "/bin/rm z",
            "z",
            "esac",
        ];
        assert_eq!(texts, expected);
    }

    #[test]
    fn a_huge_unreadable_line_is_read_in_bounded_time() {
        let line = format!("{} 'open", "word ".repeat(200_000));
        let parts = rough(&line);
        assert_eq!(parts.len(), MAX_RUNS);
        assert!(parts.iter().all(|p| p.words.len() <= MAX_WORDS));
    }
}

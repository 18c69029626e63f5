//! A rough reading of a line the parser rejected, good only for finding the programs it names:
//! split at every operator, bracket and substitution mark, quotes and escapes dropped, and
//! since where a command starts is unknown, every word may start one (`coproc curl x` holds
//! `curl x`). The line still asks; this lets a deny rule refuse it.

use super::Scan;
use crate::policy::command::{Word, strip_wrappers};
use crate::policy::part::{Analysis, Part};

/// Characters that may end one command and start another, in some reading of the line.
const SEPARATORS: &[char] = &[';', '&', '|', '\n', '(', ')', '`', '{', '}', '$', '!'];

/// Every run of words in `command` that may be a command, from each word to the end of its
/// segment, wrappers stripped.
pub(crate) fn rough(command: &str) -> Vec<Part> {
    let mut analysis = Analysis::default();
    let mut scan = Scan::new(&mut analysis, 0);
    for segment in command.split(SEPARATORS) {
        let words: Vec<String> = segment
            .split_whitespace()
            .map(|w| w.replace(['\'', '"', '\\'], ""))
            .filter(|w| !w.is_empty() && !w.starts_with(['<', '>']))
            .collect();
        for start in 0..words.len() {
            let suffix = words[start..].iter().cloned().map(Word::plain).collect();
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
}

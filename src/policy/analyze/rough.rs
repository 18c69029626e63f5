//! A rough reading of a line the parser rejected, good only for finding the programs it names:
//! split at every operator, bracket and substitution mark, quotes and escapes dropped. The
//! line still asks; this lets a deny rule refuse it.

use super::Scan;
use crate::policy::command::{Word, strip_wrappers};
use crate::policy::part::{Analysis, Part};

/// Characters that may end one command and start another, in some reading of the line.
const SEPARATORS: &[char] = &[';', '&', '|', '\n', '(', ')', '`', '{', '}', '$', '!'];

/// Every command-like run of words in `command`, wrappers stripped.
pub(crate) fn rough(command: &str) -> Vec<Part> {
    let mut analysis = Analysis::default();
    let mut scan = Scan::new(&mut analysis, 0);
    for segment in command.split(SEPARATORS) {
        let words: Vec<Word> = segment
            .split_whitespace()
            .map(|w| w.replace(['\'', '"', '\\'], ""))
            .filter(|w| !w.is_empty() && !w.starts_with(['<', '>']))
            .map(Word::plain)
            .collect();
        let stripped = strip_wrappers(words);
        if !stripped.words.is_empty() {
            scan.add_part(stripped, Vec::new());
        }
    }
    analysis.parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_an_unreadable_line() {
        let programs: Vec<String> =
            rough("ls && \\curl x 'open; case y in a) \"/bin/rm\" z;; esac")
                .into_iter()
                .filter_map(|p| p.words.first().cloned())
                .collect();
        assert_eq!(programs, ["ls", "curl", "case", "/bin/rm", "esac"]);
    }
}

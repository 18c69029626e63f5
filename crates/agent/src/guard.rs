//! Keeps prompt-guided tool-call syntax and `<think>` sections out of the live draft while a
//! response streams: text that could be the start of a call marker is held back until it is
//! clear, and everything from a call marker on is withheld (the parser reads it at the end).

/// Markers after which the rest of a response is withheld.
const CALL_MARKERS: &[&str] = &["<tool_call", "<invoke", "<function_calls", "```tool_call"];
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Filters one response's text deltas.
#[derive(Debug, Default)]
pub struct DraftGuard {
    /// Text not yet released (it might start a marker).
    pending: String,
    /// Inside `<think>…`.
    thinking: bool,
    /// A call marker was seen: nothing more is released.
    withheld: bool,
    known: Vec<String>,
}

impl DraftGuard {
    /// A guard that also watches for GLM-style `name\n{` calls of `known_tools`.
    pub fn new(known_tools: &[&str]) -> Self {
        Self {
            known: known_tools.iter().map(|s| s.to_string()).collect(),
            ..Self::default()
        }
    }

    /// Feed a delta; returns the text that is safe to show now.
    pub fn push(&mut self, delta: &str) -> String {
        if self.withheld {
            return String::new();
        }
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            if self.thinking {
                match self.pending.find(THINK_CLOSE) {
                    Some(end) => {
                        self.pending.drain(..end + THINK_CLOSE.len());
                        self.thinking = false;
                    }
                    None => return out,
                }
            }
            let think = self.pending.find(THINK_OPEN);
            let call = self.call_start();
            match (think, call) {
                (Some(t), c) if c.is_none_or(|c| t < c) => {
                    out.push_str(&self.pending[..t]);
                    self.pending.drain(..t + THINK_OPEN.len());
                    self.thinking = true;
                }
                (_, Some(c)) => {
                    out.push_str(&self.pending[..c]);
                    self.pending.clear();
                    self.withheld = true;
                    return out;
                }
                (None, None) => break,
                (Some(_), None) => unreachable!("covered by the first arm"),
            }
        }
        let keep = self.possible_marker_suffix();
        let release = self.pending.len() - keep;
        out.push_str(&self.pending[..release]);
        self.pending.drain(..release);
        out
    }

    /// The stream ended: release what was held back as harmless.
    pub fn finish(&mut self) -> String {
        if self.withheld || self.thinking {
            return String::new();
        }
        std::mem::take(&mut self.pending)
    }

    fn call_start(&self) -> Option<usize> {
        let tagged = CALL_MARKERS
            .iter()
            .filter_map(|m| self.pending.find(m))
            .min();
        let glm = self.known.iter().filter_map(|name| {
            let pat = format!("{name}\n{{");
            self.pending
                .match_indices(&pat)
                .map(|(i, _)| i)
                .find(|&i| i == 0 || self.pending.as_bytes()[i - 1] == b'\n')
        });
        tagged.into_iter().chain(glm).min()
    }

    /// Length of the longest suffix of `pending` that could grow into a marker.
    fn possible_marker_suffix(&self) -> usize {
        let mut candidates: Vec<String> = CALL_MARKERS.iter().map(|m| m.to_string()).collect();
        candidates.push(THINK_OPEN.to_owned());
        candidates.extend(self.known.iter().map(|n| format!("\n{n}\n{{")));
        let mut best = 0;
        for marker in &candidates {
            for len in (1..marker.len()).rev() {
                if len <= best {
                    break;
                }
                if marker.is_char_boundary(len) && self.pending.ends_with(&marker[..len]) {
                    best = len;
                    break;
                }
            }
        }
        // A last line that is a whole or partial tool name may be a GLM call in the making.
        if let Some(line_start) = self.pending.rfind('\n').map(|i| i + 1).or(Some(0)) {
            let line = &self.pending[line_start..];
            if !line.is_empty()
                && self
                    .known
                    .iter()
                    .any(|n| n.starts_with(line) || line == format!("{n}\n"))
            {
                best = best.max(self.pending.len() - line_start);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(guard: &mut DraftGuard, text: &str, step: usize) -> String {
        let chars: Vec<char> = text.chars().collect();
        let mut out: String = chars
            .chunks(step)
            .map(|c| guard.push(&c.iter().collect::<String>()))
            .collect();
        out.push_str(&guard.finish());
        out
    }

    #[test]
    fn call_syntax_never_reaches_the_draft_whatever_the_chunking() {
        let cases = [
            "Let me check.\n<tool_call>{\"name\":\"shell\"}</tool_call>",
            "Checking.\n<function_calls><invoke name=\"shell\"></invoke></function_calls>",
            "Sure:\n```tool_call\n{}\n```",
            "Running:\nshell\n{\"command\": \"ls\"}",
        ];
        for text in cases {
            for step in [1, 2, 3, 7, 100] {
                let shown = stream(&mut DraftGuard::new(&["shell"]), text, step);
                assert!(
                    !shown.contains('<') && !shown.contains("```") && !shown.contains('{'),
                    "{text:?} step {step}: {shown:?}"
                );
                assert!(!shown.is_empty());
            }
        }
    }

    #[test]
    fn think_sections_are_hidden_and_the_answer_after_them_shown() {
        for step in [1, 4, 50] {
            let shown = stream(
                &mut DraftGuard::new(&[]),
                "<think>plan</think>Hello <b>there</b>",
                step,
            );
            assert_eq!(shown, "Hello <b>there</b>", "step {step}");
        }
    }

    #[test]
    fn ordinary_text_passes_through_unchanged() {
        let text = "A < B and x << y, then shell out.\nshells are fun";
        assert_eq!(stream(&mut DraftGuard::new(&["shell"]), text, 3), text);
    }
}

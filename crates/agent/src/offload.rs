//! Output offloading: a tool result larger than a threshold is written whole to a file in
//! the conversation's workspace, and the model (hence the history) gets only its head, its
//! tail, its size and the file's path, so nothing stored in history is unbounded. The model
//! reads more with `file_read` line ranges.

use crate::workspace::WorkspaceDir;

/// Default size above which a tool's output is offloaded.
pub const DEFAULT_OFFLOAD_BYTES: usize = 16 * 1024;
/// Bytes of the output's beginning kept in the model's copy.
const HEAD_BYTES: usize = 8 * 1024;
/// Bytes of the output's end kept in the model's copy.
const TAIL_BYTES: usize = 4 * 1024;
/// Directory (inside the workspace) offloaded outputs are written to.
pub const OUTPUT_DIR: &str = "tool-output";

/// Where and from what size tool output is offloaded.
#[derive(Debug, Clone)]
pub struct Offload {
    /// The conversation's workspace (written through its directory handle).
    pub dir: WorkspaceDir,
    /// Outputs longer than this many bytes are offloaded.
    pub threshold: usize,
}

impl Offload {
    /// `output` as the model should see it: unchanged when small, else a preview of a file
    /// holding it whole (written now). `tool` names the file, with a random part so that
    /// providers reusing call ids across turns never overwrite an earlier output; a
    /// `file_read` result is only cut (its source is already a file the model can read in
    /// smaller ranges).
    pub fn apply(&self, tool: &str, output: String) -> String {
        if output.len() <= self.threshold {
            return output;
        }
        let (head, tail) = (
            HEAD_BYTES.min(self.threshold / 2),
            TAIL_BYTES.min(self.threshold / 4),
        );
        let lines = output.lines().count();
        if tool == "file_read" {
            let note = format!(
                "[{} bytes, {lines} lines: too large to show whole; read a smaller line range (start_line, end_line)]",
                output.len()
            );
            return preview(&output, &note, head, tail);
        }
        let unique = uuid::Uuid::new_v4().simple().to_string();
        let rel = format!("{OUTPUT_DIR}/{}-{}.txt", clean(tool), &unique[..12]);
        let note = match self.dir.write_file(&rel, output.as_bytes()) {
            Ok(()) => format!(
                "[large output: {} bytes, {lines} lines, saved in full to `{rel}`; only its first and last lines are shown. Read other lines with file_read (path \"{rel}\", start_line, end_line).]",
                output.len()
            ),
            Err(err) => {
                tracing::warn!(error = %err, path = %rel, "could not offload a large tool output");
                format!(
                    "[large output: {} bytes, {lines} lines; only its first and last lines are kept (saving it in full failed: {err})]",
                    output.len()
                )
            }
        };
        preview(&output, &note, head, tail)
    }
}

/// `note`, the output's first lines (within `head_max` bytes), a marker naming the lines left
/// out, and its last lines (within `tail_max` bytes).
fn preview(output: &str, note: &str, head_max: usize, tail_max: usize) -> String {
    let head = head_lines(output, head_max);
    let tail = tail_lines(&output[head.len()..], tail_max);
    let first_hidden = head.lines().count() + 1;
    let omitted_end = output.len() - tail.len();
    let last_hidden = output[..omitted_end].lines().count();
    let whole_lines = head.ends_with('\n') && output.as_bytes()[omitted_end - 1] == b'\n';
    let marker = if whole_lines {
        format!("[… lines {first_hidden}–{last_hidden} not shown …]")
    } else {
        format!("[… {} bytes not shown …]", omitted_end - head.len())
    };
    let sep = if head.ends_with('\n') { "" } else { "\n" };
    format!("{note}\n{head}{sep}{marker}\n{tail}")
}

/// The longest run of whole lines from the start within `max` bytes (or, when the first line
/// alone is longer, its first `max` bytes).
fn head_lines(text: &str, max: usize) -> &str {
    let window = &text[..floor(text, max.min(text.len()))];
    match window.rfind('\n') {
        Some(i) => &text[..=i],
        None => window,
    }
}

/// The longest run of whole lines at the end within `max` bytes (or the last `max` bytes).
fn tail_lines(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let window = &text[start..];
    match window.find('\n') {
        Some(i) if i + 1 < window.len() => &window[i + 1..],
        _ => window,
    }
}

fn floor(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A file-name part made only of `[A-Za-z0-9_-]`.
fn clean(part: &str) -> String {
    let s: String = part
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(40)
        .collect();
    if s.is_empty() { "call".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offload(dir: &tempfile::TempDir) -> Offload {
        Offload {
            dir: WorkspaceDir::new(dir.path().to_path_buf(), None),
            threshold: DEFAULT_OFFLOAD_BYTES,
        }
    }

    #[test]
    fn small_output_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(offload(&dir).apply("shell", "hi\n".into()), "hi\n");
    }

    #[test]
    fn a_megabyte_becomes_a_bounded_preview_and_a_file_with_all_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=150_000).map(|i| format!("{i}\n")).collect();
        let shown = offload(&dir).apply("shell", text.clone());
        assert!(shown.len() < 14 * 1024, "{}", shown.len());
        let at = shown.find("tool-output/shell-").expect("the path is named");
        let path = &shown[at..at + shown[at..].find('`').unwrap()];
        assert!(shown.contains("\n1\n2\n") && shown.ends_with("149999\n150000\n"));
        let numbers_shown = shown.lines().filter(|l| l.parse::<u32>().is_ok()).count();
        assert!(shown.contains("[… lines "), "{shown}");
        assert!(numbers_shown > 100 && numbers_shown < 5000);
        let saved = std::fs::read_to_string(dir.path().join(path));
        assert_eq!(saved.unwrap(), text);
    }

    #[test]
    fn one_huge_line_and_multibyte_text_are_cut_safely() {
        let dir = tempfile::tempdir().unwrap();
        let text = "é".repeat(100_000);
        let shown = offload(&dir).apply("http_fetch", text);
        assert!(shown.len() < 14 * 1024);
        assert!(shown.contains("bytes not shown"));
        let read = offload(&dir).apply("file_read", "z\n".repeat(50_000));
        assert!(read.contains("smaller line range") && read.len() < 14 * 1024);
        let saved = std::fs::read_dir(dir.path().join(OUTPUT_DIR))
            .unwrap()
            .count();
        assert_eq!(saved, 1, "only the fetch was saved");
    }
}

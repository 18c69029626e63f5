//! File tools confined to the conversation's workspace: `file_read` (with line ranges),
//! `file_write`, `file_edit` (one exact, unique replacement) and `file_list`. Every access
//! goes through the workspace's directory handle ([`WorkspaceDir`]). An absolute path inside
//! one of the read-only roots (a skill's verified copy) is read through that root's handle
//! instead; writing there is refused.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::WorkspaceDir;
use crate::agent::{Tool, ToolResult};

/// Largest file `file_read` returns whole.
const MAX_READ_BYTES: usize = 256 * 1024;
/// Largest file `file_read` and `file_edit` load at all.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most entries `file_list` shows.
const MAX_LIST: usize = 1000;

/// Which file operation a [`FileTool`] performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Read a file (optionally a line range).
    Read,
    /// Create or overwrite a file.
    Write,
    /// Replace one exact occurrence of a string.
    Edit,
    /// List a directory.
    List,
}

/// One file tool bound to one workspace.
pub struct FileTool {
    op: FileOp,
    workspace: WorkspaceDir,
    /// Directories readable by absolute path, never written (the profile's skills).
    read_only: Vec<WorkspaceDir>,
}

impl FileTool {
    /// A tool doing `op` inside `workspace`.
    pub fn new(op: FileOp, workspace: WorkspaceDir) -> Self {
        Self {
            op,
            workspace,
            read_only: Vec::new(),
        }
    }

    /// Also read files by absolute path under each of `roots`.
    pub fn with_read_only(mut self, roots: Vec<WorkspaceDir>) -> Self {
        self.read_only = roots;
        self
    }

    /// The directory `rel` names and the path inside it: a read-only root for an absolute
    /// path under one, else the workspace. `Err` for a write under a read-only root.
    fn target(&self, rel: &str) -> Result<(WorkspaceDir, String), String> {
        let path = std::path::Path::new(rel);
        let root = self.read_only.iter().find(|r| path.starts_with(r.path()));
        match (root, self.op) {
            (None, _) => Ok((self.workspace.clone(), rel.to_owned())),
            (Some(_), FileOp::Write | FileOp::Edit) => Err(
                "a skill's files are read-only; copy the file into the workspace to change it"
                    .into(),
            ),
            (Some(root), FileOp::Read | FileOp::List) => {
                let inner = path.strip_prefix(root.path()).unwrap_or(path);
                let inner = inner.to_str().filter(|s| !s.is_empty()).unwrap_or(".");
                Ok((root.clone(), inner.to_owned()))
            }
        }
    }
}

#[async_trait]
impl Tool for FileTool {
    fn name(&self) -> &str {
        match self.op {
            FileOp::Read => "file_read",
            FileOp::Write => "file_write",
            FileOp::Edit => "file_edit",
            FileOp::List => "file_list",
        }
    }

    fn description(&self) -> &str {
        match self.op {
            FileOp::Read => {
                "Read a text file in the workspace, optionally only lines start_line..=end_line (1-based)."
            }
            FileOp::Write => "Create or overwrite a text file in the workspace.",
            FileOp::Edit => {
                "Replace the exact text `old` with `new` in a workspace file; `old` must occur exactly once."
            }
            FileOp::List => "List a directory of the workspace (default: its root).",
        }
    }

    fn parameters_schema(&self) -> Value {
        let path = json!({"type": "string", "description": "Path relative to the workspace."});
        match self.op {
            FileOp::Read => {
                json!({"type": "object", "properties": {"path": path, "start_line": {"type": "integer", "minimum": 1}, "end_line": {"type": "integer", "minimum": 1}}, "required": ["path"], "additionalProperties": false})
            }
            FileOp::Write => {
                json!({"type": "object", "properties": {"path": path, "content": {"type": "string"}}, "required": ["path", "content"], "additionalProperties": false})
            }
            FileOp::Edit => {
                json!({"type": "object", "properties": {"path": path, "old": {"type": "string", "minLength": 1}, "new": {"type": "string"}}, "required": ["path", "old", "new"], "additionalProperties": false})
            }
            FileOp::List => {
                json!({"type": "object", "properties": {"path": path}, "additionalProperties": false})
            }
        }
    }

    fn read_only(&self) -> bool {
        matches!(self.op, FileOp::Read | FileOp::List)
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let shown = args["path"].as_str().unwrap_or(".").to_owned();
        let (ws, rel) = match self.target(&shown) {
            Ok(target) => target,
            Err(err) => return ToolResult::err(format!("{shown}: {err}")),
        };
        let op = self.op;
        let run = move || {
            match op {
                FileOp::Read => read(
                    &ws,
                    &rel,
                    args["start_line"].as_u64(),
                    args["end_line"].as_u64(),
                ),
                FileOp::Write => write(&ws, &rel, args["content"].as_str().unwrap_or_default()),
                FileOp::Edit => edit(
                    &ws,
                    &rel,
                    args["old"].as_str().unwrap_or_default(),
                    args["new"].as_str().unwrap_or_default(),
                ),
                FileOp::List => list(&ws, &rel),
            }
            .unwrap_or_else(|e| ToolResult::err(format!("{shown}: {e}")))
        };
        tokio::task::spawn_blocking(run)
            .await
            .unwrap_or_else(|e| ToolResult::err(format!("the file tool failed: {e}")))
    }
}

fn read(
    ws: &WorkspaceDir,
    rel: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<ToolResult, String> {
    let bytes = ws.read_file(rel, MAX_FILE_BYTES)?;
    if bytes.contains(&0) {
        return Ok(ToolResult::err("binary file; not shown"));
    }
    let text = String::from_utf8_lossy(&bytes);
    let (start, end) = (start.unwrap_or(1).max(1) as usize, end.map(|e| e as usize));
    let mut out: String = text
        .lines()
        .enumerate()
        .filter(|(i, _)| *i >= start - 1 && end.is_none_or(|e| *i < e))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    if out.len() > MAX_READ_BYTES {
        let mut cut = MAX_READ_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("\n[output truncated: read a line range]");
    }
    Ok(ToolResult::ok(out))
}

fn write(ws: &WorkspaceDir, rel: &str, content: &str) -> Result<ToolResult, String> {
    ws.write_file(rel, content.as_bytes())?;
    Ok(ToolResult::ok(format!("wrote {} bytes", content.len())))
}

fn edit(ws: &WorkspaceDir, rel: &str, old: &str, new: &str) -> Result<ToolResult, String> {
    let bytes = ws.read_file(rel, MAX_FILE_BYTES)?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
    match text.matches(old).count() {
        1 => {
            ws.write_file(rel, text.replacen(old, new, 1).as_bytes())?;
            Ok(ToolResult::ok("replaced 1 occurrence"))
        }
        0 => Ok(ToolResult::err(
            "`old` was not found (0 matches); read the file and copy the text exactly",
        )),
        n => Ok(ToolResult::err(format!(
            "`old` occurs {n} times; include more surrounding text so it matches exactly once"
        ))),
    }
}

fn list(ws: &WorkspaceDir, rel: &str) -> Result<ToolResult, String> {
    let mut names = ws.list_dir(rel)?;
    let total = names.len();
    names.truncate(MAX_LIST);
    let mut out = names.join("\n");
    if total > MAX_LIST {
        out.push_str(&format!("\n… and {} more", total - MAX_LIST));
    }
    Ok(ToolResult::ok(if out.is_empty() {
        "(empty)".into()
    } else {
        out
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(op: FileOp, dir: &tempfile::TempDir) -> FileTool {
        FileTool::new(op, WorkspaceDir::new(dir.path().to_path_buf(), None))
    }

    #[tokio::test]
    async fn write_then_read_a_line_range() {
        let dir = tempfile::tempdir().unwrap();
        let w = tool(FileOp::Write, &dir)
            .execute(json!({"path": "notes/a.txt", "content": "one\ntwo\nthree\n"}))
            .await;
        assert!(w.success, "{w:?}");
        let r = tool(FileOp::Read, &dir)
            .execute(json!({"path": "notes/a.txt", "start_line": 2, "end_line": 3}))
            .await;
        assert_eq!(r.output, "two\nthree\n");
        let l = tool(FileOp::List, &dir).execute(json!({})).await;
        assert_eq!(l.output, "notes/");
    }

    #[tokio::test]
    async fn edit_needs_exactly_one_match_and_names_the_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a b a").unwrap();
        let edit = tool(FileOp::Edit, &dir);
        assert!(
            edit.execute(json!({"path": "f", "old": "a", "new": "x"}))
                .await
                .error
                .unwrap()
                .contains("2 times")
        );
        assert!(
            edit.execute(json!({"path": "f", "old": "zzz", "new": "x"}))
                .await
                .error
                .unwrap()
                .contains("0 matches")
        );
        assert!(
            edit.execute(json!({"path": "f", "old": "b", "new": "c"}))
                .await
                .success
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f")).unwrap(),
            "a c a"
        );
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let r = tool(FileOp::Read, &dir)
            .execute(json!({"path": "../../etc/passwd"}))
            .await;
        assert!(!r.success && r.error.unwrap().contains(".."));
        let w = tool(FileOp::Write, &dir)
            .execute(json!({"path": "/tmp/x", "content": ""}))
            .await;
        assert!(!w.success);
    }
}

use std::path::Path;

use serde_json::json;

use super::blobs::Blobs;
use super::restore::restore;
use super::snapshot::{Manifest, snapshot};
use super::*;

fn blob_count(blobs: &Path) -> usize {
    std::fs::read_dir(blobs).map_or(0, |d| d.count())
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        args,
    }
}

#[test]
fn writes_edits_and_shell_commands_that_are_not_read_only_change_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let service = Checkpoints::new(CheckpointsConfig::default(), dir.path(), Clock::wall());
    let changes = |name: &str, args: Value, read_only: bool| {
        service.changes_workspace(&call(name, args), read_only)
    };
    assert!(changes("file_write", json!({"path": "a"}), false));
    assert!(changes("file_edit", json!({"path": "a"}), false));
    assert!(changes("shell", json!({"command": "echo hi > a"}), false));
    assert!(changes("shell", json!({"command": "npm install"}), false));
    assert!(!changes(
        "shell",
        json!({"command": "ls -la && cat a"}),
        false
    ));
    assert!(!changes("file_read", json!({"path": "a"}), true));
    assert!(
        !changes("todo", json!({}), false),
        "the plan is not in the workspace"
    );
}

#[test]
fn a_snapshot_stores_only_changed_files_and_a_restore_puts_an_earlier_one_back() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/keep.txt"), "unchanged").unwrap();
    std::fs::write(ws.join("notes.txt"), "v1").unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (first, taken) = snapshot(&ws, &blobs, None, 1 << 20).unwrap();
    assert_eq!(taken.copied, 2);
    std::fs::write(ws.join("notes.txt"), "v2, longer").unwrap();
    std::fs::write(ws.join("new.txt"), "new").unwrap();
    std::fs::create_dir(ws.join("made")).unwrap();
    let (second, taken) = snapshot(&ws, &blobs, Some(&first), 1 << 20).unwrap();
    assert_eq!(
        taken.copied, 2,
        "only the edited and the new file are stored"
    );
    assert_eq!(blob_count(&dir.path().join("blobs")), 4);
    assert_eq!(second.files["src/keep.txt"], first.files["src/keep.txt"]);

    let done = restore(&ws, None, &first, &blobs).unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "v1");
    assert_eq!(
        std::fs::read_to_string(ws.join("src/keep.txt")).unwrap(),
        "unchanged"
    );
    assert!(!ws.join("new.txt").exists() && !ws.join("made").exists());
    assert_eq!(done.written, 1, "the untouched file is not rewritten");
    // And forward again, from blobs alone.
    restore(&ws, None, &second, &blobs).unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("new.txt")).unwrap(), "new");
}

#[test]
fn a_symlink_out_of_the_workspace_is_neither_followed_nor_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, outside) = (dir.path().join("ws"), dir.path().join("outside"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), "outside").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), ws.join("s")).unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (manifest, _) = snapshot(&ws, &blobs, None, 1 << 20).unwrap();
    assert!(manifest.files.is_empty(), "{manifest:?}");
    assert!(manifest.skipped["out"].contains("symlink"));
    assert_eq!(blob_count(&dir.path().join("blobs")), 0);

    // A checkpoint had a real file `s`; now `s` links outside: the link is replaced.
    std::fs::remove_file(ws.join("s")).unwrap();
    std::fs::write(ws.join("s"), "mine").unwrap();
    let (with_file, _) = snapshot(&ws, &blobs, None, 1 << 20).unwrap();
    std::fs::remove_file(ws.join("s")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), ws.join("s")).unwrap();
    restore(&ws, None, &with_file, &blobs).unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).unwrap(),
        "outside"
    );
    assert_eq!(std::fs::read_to_string(ws.join("s")).unwrap(), "mine");
    assert!(
        outside.join("secret").exists(),
        "nothing outside is removed"
    );
}

#[test]
fn a_file_over_the_cap_is_skipped_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("big.bin"), vec![7u8; 100]).unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (manifest, _) = snapshot(&ws, &blobs, None, 50).unwrap();
    assert!(manifest.skipped["big.bin"].contains("larger"));
    std::fs::write(ws.join("big.bin"), vec![8u8; 100]).unwrap();
    restore(&ws, None, &manifest, &blobs).unwrap();
    assert_eq!(std::fs::read(ws.join("big.bin")).unwrap(), vec![8u8; 100]);
}

#[test]
fn an_old_unchanged_file_is_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a"), "a").unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (mut first, _) = snapshot(&ws, &blobs, None, 1 << 20).unwrap();
    // As if taken long after the file's last change, and with a hash no file has: reused
    // without reading, the hash stays.
    first.taken_at_ns += 10_000_000_000;
    let entry = first.files.get_mut("a").unwrap();
    let real = std::mem::replace(&mut entry.hash, "0".repeat(64));
    let stored = dir.path().join("blobs");
    std::fs::copy(stored.join(&real), stored.join("0".repeat(64))).unwrap();
    let (second, taken) = snapshot(&ws, &blobs, Some(&first), 1 << 20).unwrap();
    assert_eq!(taken.copied, 0);
    assert_eq!(second.files["a"].hash, "0".repeat(64));
}

#[test]
fn stored_bytes_count_each_content_once() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a"), "12345").unwrap();
    std::fs::write(ws.join("b"), "12345").unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (m, _) = snapshot(&ws, &blobs, None, 1 << 20).unwrap();
    assert_eq!(stored_bytes(&[m.clone(), m]), 5);
    assert_eq!(stored_bytes(&[Manifest::default()]), 0);
}

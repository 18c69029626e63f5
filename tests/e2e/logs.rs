//! Logs fit where they go: a gateway whose stderr is a file or a pipe (not a terminal)
//! writes plain lines, without colour escapes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn a_gateway_logging_to_a_pipe_writes_no_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gw.toml");
    let text = format!(
        "[gateway]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         database_url = \"sqlite://{}/gw.db\"\n",
        dir.path().display(),
        dir.path().display()
    );
    std::fs::write(&file, text).unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    run.args(["run", "--config"])
        .arg(&file)
        .env_remove("NO_COLOR");
    let log = start_up_log(run).join("\n");
    assert!(log.contains("gateway ready"), "{log}");
    assert!(
        !log.contains('\x1b'),
        "escape sequences in a piped log: {log:?}"
    );
}

/// The real binary run by `command` until it logs "gateway ready" (or 200 lines), then
/// stopped: its start-up log lines from stderr.
pub(crate) fn start_up_log(mut command: Command) -> Vec<String> {
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let ready = line.contains("gateway ready");
        lines.push(line);
        if ready || lines.len() > 200 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    lines
}

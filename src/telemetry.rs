//! Logging set-up: `tracing` to stderr, pretty or JSON, filtered by `RUST_LOG`. Every
//! formatted line passes through the scrubber before it is written, so a credential that
//! slips into a log field never reaches the log. Pretty lines are coloured only when stderr
//! is a terminal (and `NO_COLOR` is unset): a file, `docker logs` or journald gets plain
//! text, and a collector wants `log_format = "json"`, one object per line.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::LogFormat;
use crate::scrub::Scrubber;

/// Makes one [`ScrubbedLine`] per log event.
#[derive(Clone)]
pub struct ScrubbingWriter(Arc<Scrubber>);

impl ScrubbingWriter {
    /// Writes to stderr through `scrubber`.
    pub fn new(scrubber: Arc<Scrubber>) -> Self {
        Self(scrubber)
    }
}

/// Buffers one formatted event and writes it, scrubbed, when dropped.
pub struct ScrubbedLine {
    buf: Vec<u8>,
    scrubber: Arc<Scrubber>,
}

impl Write for ScrubbedLine {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ScrubbedLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buf);
        let clean = self.scrubber.scrub(&text);
        let _ = std::io::stderr().lock().write_all(clean.as_bytes());
    }
}

impl<'a> MakeWriter<'a> for ScrubbingWriter {
    type Writer = ScrubbedLine;

    fn make_writer(&'a self) -> Self::Writer {
        ScrubbedLine {
            buf: Vec::with_capacity(256),
            scrubber: Arc::clone(&self.0),
        }
    }
}

/// The log filter when `RUST_LOG` is unset: the gateway's own lines from `info`, the Matrix
/// SDK's from `warn` (its `info` narrates every sync and login step), and none of its key-backup
/// warnings (the bot keeps its keys in its own store and uses no server-side backup).
const DEFAULT_FILTER: &str = "info,matrix_sdk=warn,matrix_sdk_base=warn,matrix_sdk_crypto=warn,\
                              matrix_sdk_sqlite=warn,matrix_sdk_crypto::backups=error";

/// Install the global subscriber (once; later calls are ignored).
pub fn init(format: LogFormat, scrubber: Arc<Scrubber>) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let ansi = colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(ScrubbingWriter::new(scrubber));
    let _ = match format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Whether log lines carry colour escapes: only for a person at a terminal, and not when
/// they set `NO_COLOR` to a non-empty value (<https://no-color.org>).
fn colour(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_filter_parses_and_keeps_the_sdk_to_warnings() {
        let filter = EnvFilter::try_new(DEFAULT_FILTER).expect("every directive parses");
        let shown = filter.to_string();
        assert!(
            shown.contains("matrix_sdk=warn") && shown.contains("info"),
            "{shown}"
        );
    }

    #[test]
    fn only_a_terminal_without_no_color_gets_colour() {
        assert!(colour(true, None));
        assert!(
            colour(true, Some("".as_ref())),
            "an empty NO_COLOR counts as unset"
        );
        assert!(!colour(true, Some("1".as_ref())));
        assert!(
            !colour(false, None),
            "a file, a pipe or journald gets plain text"
        );
    }
}

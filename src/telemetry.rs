//! Logging set-up: `tracing` to stderr, pretty or JSON, filtered by `RUST_LOG`. Every
//! formatted line passes through the scrubber before it is written, so a credential that
//! slips into a log field never reaches the log.

use std::io::Write;
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

/// Install the global subscriber (once; later calls are ignored).
pub fn init(format: LogFormat, scrubber: Arc<Scrubber>) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ScrubbingWriter::new(scrubber));
    let _ = match format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

//! The event stream (SPEC section 5): one JSON object per line, to stdout or `--output`.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::Value;

/// Where stream events go.
pub struct EventStream {
    out: Box<dyn Write>,
}

impl EventStream {
    /// Writes to stdout.
    pub fn stdout() -> EventStream {
        EventStream { out: Box::new(BufWriter::new(std::io::stdout())) }
    }

    /// Writes to a file (created or truncated).
    pub fn file(path: &Path) -> std::io::Result<EventStream> {
        Ok(EventStream { out: Box::new(BufWriter::new(std::fs::File::create(path)?)) })
    }

    /// Collects nothing (for tests and benchmarks).
    pub fn sink() -> EventStream {
        EventStream { out: Box::new(std::io::sink()) }
    }

    /// Writes into a caller's buffer.
    pub fn writer(w: Box<dyn Write>) -> EventStream {
        EventStream { out: w }
    }

    /// Emits one event. A failed write (a closed pipe) is logged once and otherwise ignored.
    pub fn emit(&mut self, event: &Value) {
        if let Err(e) = serde_json::to_writer(&mut self.out, event)
            .and_then(|_| self.out.write_all(b"\n").map_err(serde_json::Error::io))
        {
            log::debug!("event stream write failed: {e}");
        }
    }

    /// Flushes buffered events.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

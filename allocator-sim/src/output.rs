//! The event stream (SPEC section 5): one JSON object per line, to stdout or `--output`.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::Value;

/// Where stream events go.
pub struct EventStream {
    out: Box<dyn Write>,
    enabled: bool,
}

impl EventStream {
    /// Writes to stdout.
    pub fn stdout() -> EventStream {
        EventStream { out: Box::new(BufWriter::new(std::io::stdout())), enabled: true }
    }

    /// Writes to a file (created or truncated). `/dev/null` is recognised and costs nothing.
    pub fn file(path: &Path) -> std::io::Result<EventStream> {
        if path == Path::new("/dev/null") {
            return Ok(EventStream::sink());
        }
        Ok(EventStream {
            out: Box::new(BufWriter::new(std::fs::File::create(path)?)),
            enabled: true,
        })
    }

    /// Collects nothing, without even formatting the events (for tests and benchmarks).
    pub fn sink() -> EventStream {
        EventStream { out: Box::new(std::io::sink()), enabled: false }
    }

    /// Writes into a caller's buffer.
    pub fn writer(w: Box<dyn Write>) -> EventStream {
        EventStream { out: w, enabled: true }
    }

    /// `false` when events go nowhere (callers may skip building them).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Emits one event. A failed write (a closed pipe) is logged once and otherwise ignored.
    pub fn emit(&mut self, event: &Value) {
        if !self.enabled {
            return;
        }
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

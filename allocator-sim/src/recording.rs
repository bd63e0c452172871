//! Recording (SPEC section 6.3): what a live master applied, written as it happens as a
//! scenario (SPEC section 4.1) that `allocator-master --scenario FILE` replays.
//!
//! The master's [journal](allocator_host::master::journal) puts the commands its clients
//! applied in order, with the clock between them, and hands each entry to the [`Recorder`],
//! which writes the scenario file (the configuration first) with the scenario printer
//! ([`crate::allocator_scenario::print`]).

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::allocator_scenario::Op;
use crate::allocator_scenario::print::{command_to_json, op_to_json};
use allocator_host::master::journal::{Entry, Sink};

/// Writes a scenario of what a live master applied (SPEC section 6.3), one event per line.
/// The file is a complete scenario after every event: each write ends with the closing `]}`,
/// which the next event overwrites, so a master killed at any moment (a second SIGTERM, a
/// crash) leaves valid JSON of everything recorded so far. As the master's journal [`Sink`] it
/// writes the journal's entries, the time between commands as `advance` events.
pub struct Recorder {
    out: File,
    events: usize,
}

/// What closes the scenario after the last event.
const CLOSING: &str = "\n]}\n";

impl Recorder {
    /// Creates `path` and writes the scenario's `config` (as the live master runs with it).
    pub fn create(path: &Path, config: &Map<String, Value>) -> std::io::Result<Recorder> {
        let mut out = File::create(path)?;
        let config = serde_json::to_string(config).map_err(std::io::Error::other)?;
        write!(
            out,
            "{{\"description\": \"recorded by allocator-master serve\",\n \"config\": {config},\n \"events\": [{CLOSING}"
        )?;
        Ok(Recorder { out, events: 0 })
    }

    /// Writes one event; a command no scenario event carries is left out.
    pub fn write(&mut self, op: &Op) -> std::io::Result<()> {
        match op_to_json(op) {
            Some(event) => self.write_json(&event),
            None => Ok(()),
        }
    }

    fn write_json(&mut self, event: &Value) -> std::io::Result<()> {
        let sep = if self.events == 0 { "\n  " } else { ",\n  " };
        // One write of the event and the closing, over the previous closing.
        self.out.seek(SeekFrom::End(-(CLOSING.len() as i64)))?;
        self.out.write_all(format!("{sep}{event}{CLOSING}").as_bytes())?;
        self.events += 1;
        Ok(())
    }

    /// Ends the recording: the file already closes the scenario; this makes it durable.
    pub fn finish(self) -> std::io::Result<()> {
        self.out.sync_all()
    }
}

impl Sink for Recorder {
    fn write(&mut self, entry: &Entry) -> std::io::Result<()> {
        let event = match entry {
            Entry::Advance(seconds) => Some(json!({"op": "advance", "seconds": seconds})),
            Entry::Command(command) => command_to_json(command),
            Entry::Note(note) => note.get::<Op>().and_then(op_to_json),
        };
        event.map_or(Ok(()), |e| self.write_json(&e))
    }

    fn finish(self: Box<Self>) -> std::io::Result<()> {
        Recorder::finish(*self)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::Recorder;
    use crate::allocator_scenario::{AllocatorScenario, Op};
    use crate::scenario::Document;
    use allocator_host::master::{Command, Journal};

    #[test]
    fn a_recording_is_a_scenario_with_the_time_as_advances() {
        let dir = std::env::temp_dir().join(format!("recording-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rec.json");
        let config: Map<String, Value> =
            json!({"allocation_interval": 1.0}).as_object().unwrap().clone();
        let mut journal = Journal::default();
        journal.record_to(Box::new(Recorder::create(&path, &config).unwrap()));
        journal.applied(0.0, Command::Pause);
        // A complete scenario already, as if the master had been killed here.
        let doc = Document::read(&path).unwrap();
        assert_eq!(AllocatorScenario::parse(&doc).unwrap().events.len(), 1);
        journal.applied(2.5, Command::Resume);
        journal.finish_recording(4.0).unwrap();
        let doc = Document::read(&path).unwrap();
        let ops: Vec<Op> =
            AllocatorScenario::parse(&doc).unwrap().events.into_iter().map(|(_, op)| op).collect();
        assert_eq!(
            ops,
            vec![
                Op::Command(Command::Pause),
                Op::Advance(2.5),
                Op::Command(Command::Resume),
                Op::Advance(1.5)
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

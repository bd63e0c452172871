//! The journal: the commands a master applied, in order, with the clock between them.
//!
//! [`Master::apply`](super::Master::apply) notes every command a client applies (not the
//! [derived](super::Origin::Derived) ones, which a replay makes again by itself), each at the
//! virtual time it was applied; the time between them becomes [`Entry::Advance`]. A client
//! that keeps more than the commands it applies puts its own record among them as a [`Note`]
//! ([`Master::apply_noted`](super::Master::apply_noted), [`Master::note`](super::Master::note)):
//! the master never reads one; the client's replay turns it back into what it did. Kept in memory it is what a plan
//! replays ([`Journal::keep`]); handed to a [`Sink`] it is written as it happens (`serve
//! --record` writes a scenario). Replaying the entries from the same set-up makes the same
//! offers.
//!
//! Two rules make that hold, each written once, in the master: an answer to an offer is
//! journaled as the `recover_resources` of its declined part with the answer's filter (what a
//! framework does not give back stays allocated to it, in the replay as live), and a task that
//! finishes at the instant of a periodic run — which the master applies before the run — is
//! journaled [`BEFORE_RUN`] seconds earlier.

use super::command::Command;
pub use super::note::Note;

/// One entry of the journal.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// The virtual clock moved on by this many seconds.
    Advance(f64),
    /// A command was applied (boxed: an entry is as small as an advance).
    Command(Box<Command>),
    /// A client's own record of what it did at this point, in its own type.
    Note(Note),
}

/// Where a journal writes its entries as they happen (`serve --record`).
pub trait Sink: Send {
    /// Writes one entry; an error stops the recording (the master goes on).
    fn write(&mut self, entry: &Entry) -> std::io::Result<()>;
    /// Ends the recording.
    fn finish(self: Box<Self>) -> std::io::Result<()>;
}

/// How far before the allocation run of the same instant [`Journal::applied_before_run`]
/// places a command: less than the master's time resolution for task ends (a microsecond),
/// more than its tolerance for "the same instant" (a nanosecond).
pub const BEFORE_RUN: f64 = 1e-7;

/// How many entries [`Journal::keep`] keeps by default (a plan replays all of them; about
/// 200 bytes each).
pub const KEEP_LIMIT: usize = 1_000_000;

/// The journal of one master. See the [module documentation](self).
#[derive(Default)]
pub struct Journal {
    /// The virtual time the journal has reached.
    time: f64,
    kept: Option<Vec<Entry>>,
    /// At most this many entries are kept; past it, none are ([`entries`](Self::entries)
    /// says so), so that a long-lived master's memory stays bounded.
    limit: usize,
    /// When the limit was passed.
    overflowed_at: Option<f64>,
    sink: Option<Box<dyn Sink>>,
    /// Why the recording stopped before the end, when a write failed.
    sink_failed: Option<String>,
}

impl Journal {
    /// Keeps every entry from now on in memory (for [`entries`](Self::entries)), up to
    /// `limit` entries.
    pub fn keep(&mut self, limit: usize) {
        self.kept.get_or_insert_with(Vec::new);
        self.limit = limit;
    }

    /// Writes every entry from now on to `sink`.
    pub fn record_to(&mut self, sink: Box<dyn Sink>) {
        self.sink = Some(sink);
    }

    /// Whether entries are kept or written at all.
    pub fn is_on(&self) -> bool {
        self.kept.is_some() || self.sink.is_some()
    }

    /// The entries kept so far, with the clock advanced to `now`; `Err` says why there are
    /// none (never kept, or more than the limit).
    pub fn entries(&self, now: f64) -> Result<Vec<Entry>, String> {
        if let Some(t) = self.overflowed_at {
            return Err(format!(
                "this master applied more than {} events (the limit was passed at {t:.3} s of virtual time), and a plan replays all of them; plans are off",
                self.limit
            ));
        }
        let mut entries = self.kept.clone().ok_or("this master keeps no history to plan from")?;
        if now > self.time {
            entries.push(Entry::Advance(now - self.time));
        }
        Ok(entries)
    }

    /// `command` was applied at virtual time `now`.
    pub fn applied(&mut self, now: f64, command: Command) {
        self.note_at(now, Entry::Command(Box::new(command)));
    }

    /// A client noted `note` at virtual time `now`.
    pub fn noted(&mut self, now: f64, note: Note) {
        self.note_at(now, Entry::Note(note));
    }

    /// `command` was applied at virtual time `now`, before the periodic allocation run of
    /// that instant (a task that ended then).
    pub fn applied_before_run(&mut self, now: f64, command: Command) {
        self.note_at(now - BEFORE_RUN, Entry::Command(Box::new(command)));
    }

    fn note_at(&mut self, t: f64, entry: Entry) {
        if !self.is_on() {
            return;
        }
        if t > self.time {
            self.note(Entry::Advance(t - self.time));
            self.time = t;
        }
        self.note(entry);
    }

    fn note(&mut self, entry: Entry) {
        if let Some(sink) = &mut self.sink
            && let Err(e) = sink.write(&entry)
        {
            log::error!("the recording stopped: {e}");
            self.sink = None;
            self.sink_failed = Some(format!("at {:.3} s of virtual time: {e}", self.time));
        }
        if let Some(kept) = &mut self.kept {
            if kept.len() < self.limit {
                kept.push(entry);
            } else {
                log::warn!("more than {} events applied: plans are off from now on", self.limit);
                self.kept = None;
                self.overflowed_at = Some(self.time);
            }
        }
    }

    /// Ends the recording (if any) with the clock advanced to `now`, where the master stopped.
    /// `Err` when this fails, or when a write failed earlier and the recording stopped then
    /// (the file holds what was recorded before it, as a complete scenario).
    pub fn finish_recording(&mut self, now: f64) -> std::io::Result<()> {
        if let Some(failure) = self.sink_failed.take() {
            return Err(std::io::Error::other(format!("the recording stopped {failure}")));
        }
        let Some(mut sink) = self.sink.take() else { return Ok(()) };
        if now > self.time {
            sink.write(&Entry::Advance(now - self.time))?;
        }
        sink.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{BEFORE_RUN, Command, Entry, Journal, Note};

    fn cmd(e: &Entry) -> Option<&Command> {
        match e {
            Entry::Command(c) => Some(c.as_ref()),
            Entry::Advance(_) | Entry::Note(_) => None,
        }
    }

    #[test]
    fn a_note_keeps_its_place_and_its_value_among_the_commands() {
        let mut journal = Journal::default();
        journal.keep(10);
        journal.applied(1.0, Command::Pause);
        let note = Note::new(String::from("a client's own record"));
        journal.noted(2.0, note.clone());
        journal.applied(2.0, Command::Resume);
        let entries = journal.entries(2.0).unwrap();
        assert_eq!(
            entries,
            vec![
                Entry::Advance(1.0),
                Entry::Command(Box::new(Command::Pause)),
                Entry::Advance(1.0),
                Entry::Note(note),
                Entry::Command(Box::new(Command::Resume))
            ]
        );
        let Entry::Note(kept) = &entries[3] else { unreachable!() };
        assert_eq!(kept.get::<String>().map(String::as_str), Some("a client's own record"));
        assert_eq!(kept.get::<u32>(), None, "a note is read only as its own type");
    }

    #[test]
    fn a_command_before_the_run_of_its_instant_is_placed_just_before_it() {
        let mut journal = Journal::default();
        journal.keep(10);
        journal.applied_before_run(3.0, Command::Pause);
        journal.applied(3.0, Command::Resume);
        assert_eq!(
            journal.entries(3.0).unwrap(),
            vec![
                Entry::Advance(3.0 - BEFORE_RUN),
                Entry::Command(Box::new(Command::Pause)),
                Entry::Advance(3.0 - (3.0 - BEFORE_RUN)),
                Entry::Command(Box::new(Command::Resume))
            ]
        );
    }

    #[test]
    fn a_command_before_the_run_after_others_of_its_instant_keeps_their_order() {
        let mut journal = Journal::default();
        journal.keep(10);
        journal.applied(2.0, Command::Pause);
        journal.applied_before_run(2.0, Command::Resume);
        let entries = journal.entries(2.0).unwrap();
        assert_eq!(entries[0], Entry::Advance(2.0));
        let commands: Vec<_> = entries.iter().filter_map(cmd).collect();
        assert_eq!(commands, [&Command::Pause, &Command::Resume]);
    }

    #[test]
    fn nothing_is_kept_unless_asked() {
        let mut journal = Journal::default();
        journal.applied(1.0, Command::Pause);
        assert!(journal.entries(1.0).is_err());
    }

    #[test]
    fn past_its_limit_the_journal_keeps_nothing_and_says_why() {
        let mut journal = Journal::default();
        journal.keep(2);
        journal.applied(0.0, Command::Pause);
        journal.applied(0.0, Command::Resume);
        assert_eq!(
            journal.entries(0.0).unwrap(),
            vec![
                Entry::Command(Box::new(Command::Pause)),
                Entry::Command(Box::new(Command::Resume))
            ]
        );
        journal.applied(1.0, Command::Pause);
        let why = journal.entries(1.0).unwrap_err();
        assert!(why.contains("more than 2 events"), "{why}");
        assert!(!journal.is_on(), "nothing is kept any more");
    }
}

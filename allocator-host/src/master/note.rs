//! A client's own record in the master's journal ([`Note`]): kept in order among the commands,
//! never read by the master.

use std::any::Any;
use std::sync::Arc;

/// A client's record in the journal: a value of the client's own type, shared, that the
/// master keeps in order among the commands and never reads. Two notes are equal when they
/// are the same value (the same allocation).
#[derive(Clone)]
pub struct Note(Arc<dyn Any + Send + Sync>);

impl Note {
    /// A note holding `value`.
    pub fn new<T: Any + Send + Sync>(value: T) -> Note {
        Note(Arc::new(value))
    }

    /// The value, when it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Note(..)")
    }
}

impl PartialEq for Note {
    fn eq(&self, other: &Note) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

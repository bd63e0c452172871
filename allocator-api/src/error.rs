//! The error type that crosses the module boundary.

use std::fmt;

use abi_stable::StableAbi;
use abi_stable::std_types::RString;

/// What kind of failure a [`ModuleError`] reports. A `u8` newtype rather than an enum so that
/// later versions can add kinds without breaking the layout.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ErrorKind(pub u8);

impl ErrorKind {
    /// The module refused a request it understood (an invalid operation, an unknown client,
    /// a duplicate add). The module's state is unchanged and it stays usable.
    pub const REJECTED: ErrorKind = ErrorKind(0);
    /// The module failed internally; the host should treat it as faulty.
    pub const FAILED: ErrorKind = ErrorKind(1);
    /// The module panicked. The export helpers caught the panic at the boundary; the instance
    /// is poisoned and answers every later call with [`ErrorKind::POISONED`].
    pub const PANICKED: ErrorKind = ErrorKind(2);
    /// The instance panicked earlier and refuses to run again.
    pub const POISONED: ErrorKind = ErrorKind(3);
    /// The module does not implement this call.
    pub const UNSUPPORTED: ErrorKind = ErrorKind(4);

    /// A short lower-case name (`rejected`, `panicked`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::REJECTED => "rejected",
            ErrorKind::FAILED => "failed",
            ErrorKind::PANICKED => "panicked",
            ErrorKind::POISONED => "poisoned",
            ErrorKind::UNSUPPORTED => "unsupported",
            _ => "unknown error",
        }
    }
}

/// An error returned by a module (or made from a panic caught at the boundary).
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ModuleError {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// A human-readable message, shown to the operator as is.
    pub message: RString,
}

impl ModuleError {
    /// A request the module refuses; its state is unchanged.
    pub fn rejected(message: impl fmt::Display) -> ModuleError {
        ModuleError { kind: ErrorKind::REJECTED, message: message.to_string().into() }
    }

    /// An internal failure.
    pub fn failed(message: impl fmt::Display) -> ModuleError {
        ModuleError { kind: ErrorKind::FAILED, message: message.to_string().into() }
    }

    /// A call the module does not implement.
    pub fn unsupported(call: &str) -> ModuleError {
        ModuleError {
            kind: ErrorKind::UNSUPPORTED,
            message: format!("{call} is not supported by this module").into(),
        }
    }

    /// `true` for errors that mean the module can no longer be trusted (failed, panicked,
    /// poisoned), as opposed to a refused request.
    pub fn is_fault(&self) -> bool {
        matches!(self.kind, ErrorKind::FAILED | ErrorKind::PANICKED | ErrorKind::POISONED)
    }
}

impl fmt::Display for ModuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::REJECTED | ErrorKind::UNSUPPORTED => f.write_str(&self.message),
            kind => write!(f, "{}: {}", kind.name(), self.message),
        }
    }
}

impl std::error::Error for ModuleError {}

/// The result type of every module call.
pub type Result<T, E = ModuleError> = std::result::Result<T, E>;

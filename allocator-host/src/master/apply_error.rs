//! [`ApplyError`]: why [`Master::apply`](super::Master::apply) did not apply a command.

/// Why a command was not applied, told apart so that a client answers each as it should
/// (`serve`: `400` for [`Invalid`](Self::Invalid) and [`Refused`](Self::Refused), `500` and
/// a stop for [`Stopped`](Self::Stopped)). In every case but
/// [`Answer`](Self::Answer) the master's records are unchanged and nothing is journaled. The
/// message is one line, naming what and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The command is malformed or does not fit the cluster: a bad role name, an unknown or
    /// duplicate agent or framework, resources that do not fit. The client should not send
    /// it again as it is.
    #[error("{0}")]
    Invalid(String),
    /// The allocator (built-in or module) refused or failed a call the command needed, and
    /// the failure policy did not replace it.
    #[error("{0}")]
    Refused(String),
    /// The allocator module does not implement a call the command needed
    /// (`ErrorKind::UNSUPPORTED`: a module that takes no quota, say). Not a fault and not the
    /// command's: every master mode warns, naming the call and the module, and goes on.
    #[error("{0}")]
    Unsupported(String),
    /// The master has stopped after a module fault under the `stop` failure policy; it
    /// applies nothing any more. The message is the fault.
    #[error("{0}")]
    Stopped(String),
    /// The command was applied, but a client's answer to its events failed (a simulated
    /// framework's launch the allocator refused): only wirings that deliver events after
    /// each command ([`Apply`](super::Apply) implementations other than the master) give
    /// it.
    #[error("{0}")]
    Answer(String),
}

impl ApplyError {
    /// The one-line message.
    pub fn message(&self) -> &str {
        match self {
            ApplyError::Invalid(m)
            | ApplyError::Refused(m)
            | ApplyError::Unsupported(m)
            | ApplyError::Stopped(m)
            | ApplyError::Answer(m) => m,
        }
    }
}

/// For callers that report every error as a line of text.
impl From<ApplyError> for String {
    fn from(e: ApplyError) -> String {
        e.message().to_owned()
    }
}

//! What an allocator says about its last allocation run when asked
//! ([`Allocator::explain`](crate::Allocator::explain), ABI 3): the subject asked about and
//! the entries it answers with.
//!
//! The host appends a module's entries to its own account (what the master's records show,
//! refuse filters, the sorters' keys) after checking them: at most
//! [`MAX_EXPLAIN_ENTRIES`] entries, texts and codes of bounded length, codes either one this
//! crate lists ([`ExplainEntry::KNOWN_CODES`]) or prefixed `module:`.

use abi_stable::StableAbi;
use abi_stable::std_types::{RString, RVec, Tuple2};

use crate::ids::FrameworkId;

/// The most entries the host keeps from one `explain` call.
pub const MAX_EXPLAIN_ENTRIES: usize = 64;
/// The longest text (or code) the host keeps, in bytes; longer ones are cut.
pub const MAX_EXPLAIN_TEXT: usize = 1024;

/// What is asked about: a role, or a framework (under its roles).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct ExplainSubject {
    /// [`ExplainSubject::ROLE`] or [`ExplainSubject::FRAMEWORK`].
    pub kind: u8,
    /// The role (for a role; empty for a framework).
    pub role: RString,
    /// The framework (for a framework; ignored for a role).
    pub framework: FrameworkId,
}

impl ExplainSubject {
    /// The subject is a role.
    pub const ROLE: u8 = 0;
    /// The subject is a framework.
    pub const FRAMEWORK: u8 = 1;

    /// A role as subject.
    pub fn role(role: &str) -> ExplainSubject {
        ExplainSubject { kind: ExplainSubject::ROLE, role: role.into(), framework: FrameworkId(0) }
    }

    /// A framework as subject.
    pub fn framework(framework: FrameworkId) -> ExplainSubject {
        ExplainSubject { kind: ExplainSubject::FRAMEWORK, role: RString::new(), framework }
    }
}

/// One reason, as an allocator gives it: a short code, a sentence, and named numbers.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct ExplainEntry {
    /// One of [`ExplainEntry::KNOWN_CODES`], or a code of the module's own prefixed
    /// `module:`.
    pub code: RString,
    /// What happened, in one sentence a person reads.
    pub text: RString,
    /// Numbers behind it, by name (`wanted`, `fit`, `agents`, …).
    pub numbers: RVec<Tuple2<RString, f64>>,
}

impl ExplainEntry {
    /// The codes every allocator may use without a prefix.
    pub const KNOWN_CODES: &'static [&'static str] = &[
        // A request waits: not enough room on the agents it may use.
        "request_waiting",
        // A gang waits: fewer members fit than it needs at once.
        "gang_waiting",
        // A request was placed in the last run.
        "request_placed",
        // The role or framework was skipped for a quota limit.
        "quota",
        // The role or framework was skipped for a refuse filter.
        "filtered",
        // Nothing to say about the subject.
        "nothing",
    ];

    /// An entry with `code`, `text` and `numbers`.
    pub fn new(code: &str, text: impl Into<String>, numbers: &[(&str, f64)]) -> ExplainEntry {
        ExplainEntry {
            code: code.into(),
            text: text.into().into(),
            numbers: numbers.iter().map(|(n, v)| Tuple2((*n).into(), *v)).collect(),
        }
    }

    /// Whether the code is one the host accepts: known, or `module:` and a name.
    pub fn code_accepted(&self) -> bool {
        let code = self.code.as_str();
        ExplainEntry::KNOWN_CODES.contains(&code)
            || code.strip_prefix("module:").is_some_and(|rest| !rest.is_empty())
    }
}

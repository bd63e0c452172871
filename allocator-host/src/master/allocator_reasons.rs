//! The allocator's own reasons about its last run ([`Allocator::explain`], ABI 3), checked
//! before the host's account shows them: at most [`MAX_EXPLAIN_ENTRIES`] entries, codes the
//! API lists or `module:`-prefixed, texts and codes cut at [`MAX_EXPLAIN_TEXT`] bytes, numbers
//! finite. A module that fails the call, or answers nothing usable, adds nothing (a failure is
//! logged); explaining never counts as a module fault.
//!
//! [`Allocator::explain`]: allocator_api::Allocator::explain

use allocator_api::explain::{MAX_EXPLAIN_ENTRIES, MAX_EXPLAIN_TEXT};
use allocator_api::{ExplainEntry, ExplainSubject, RVec};

use super::Master;

impl Master<'_> {
    /// What the allocator says about `subject` (a role or a framework), checked.
    pub fn allocator_reasons(&self, subject: &ExplainSubject) -> Vec<ExplainEntry> {
        let mut out = RVec::new();
        if let Err(e) = self.engine.allocator().explain(subject, &mut out) {
            log::warn!("allocator '{}' could not explain: {e}", self.setup.allocator);
            return Vec::new();
        }
        let before = out.len();
        let kept: Vec<ExplainEntry> = out
            .into_iter()
            .filter(ExplainEntry::code_accepted)
            .take(MAX_EXPLAIN_ENTRIES)
            .map(checked)
            .collect();
        if kept.len() < before.min(MAX_EXPLAIN_ENTRIES) {
            log::warn!(
                "allocator '{}' explained with codes it may not use; those entries are left out",
                self.setup.allocator
            );
        }
        kept
    }
}

/// An entry with its texts cut to size and its non-finite numbers dropped.
fn checked(mut e: ExplainEntry) -> ExplainEntry {
    e.code = cut(e.code.as_str()).into();
    e.text = cut(e.text.as_str()).into();
    e.numbers.retain(|n| n.1.is_finite());
    e.numbers.truncate(MAX_EXPLAIN_ENTRIES);
    for n in e.numbers.iter_mut() {
        n.0 = cut(n.0.as_str()).into();
    }
    e
}

/// `s` cut to at most [`MAX_EXPLAIN_TEXT`] bytes, on a character boundary.
fn cut(s: &str) -> &str {
    if s.len() <= MAX_EXPLAIN_TEXT {
        return s;
    }
    let mut end = MAX_EXPLAIN_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_EXPLAIN_TEXT);
        let e = checked(ExplainEntry::new("nothing", long, &[("x", f64::NAN), ("y", 1.0)]));
        assert!(e.text.len() <= MAX_EXPLAIN_TEXT);
        assert_eq!(e.numbers.len(), 1, "the NaN is dropped");
    }

    #[test]
    fn codes_are_known_or_prefixed() {
        assert!(ExplainEntry::new("gang_waiting", "", &[]).code_accepted());
        assert!(ExplainEntry::new("module:mine", "", &[]).code_accepted());
        assert!(!ExplainEntry::new("mine", "", &[]).code_accepted());
        assert!(!ExplainEntry::new("module:", "", &[]).code_accepted());
    }
}

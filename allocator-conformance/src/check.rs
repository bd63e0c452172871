//! One check's verdict, and the report `allocator-master conformance` prints.

/// The result of one check.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What is checked, as the report names it ("respects refuse filters").
    pub name: &'static str,
    /// `None` when it passed, else why it failed: what the module did, and for a rule of the
    /// "Who does what" table, the rule and where the docs state it.
    pub failure: Option<String>,
    /// Set when the check does not apply: the module does not implement an optional call (it
    /// answers `unsupported`, which the host turns into a refusal, so the books still agree).
    pub skipped: Option<String>,
}

impl Check {
    /// A check that passed when `failure` is `None`.
    pub fn new(name: &'static str, failure: Option<String>) -> Check {
        Check { name, failure, skipped: None }
    }

    /// Whether it passed or was skipped (nothing failed).
    pub fn ok(&self) -> bool {
        self.failure.is_none()
    }

    /// This check with its failure, if any, followed by the rule it breaks and the section of
    /// `docs/authoring.md` that states it.
    pub(crate) fn citing(mut self, rule: &str) -> Check {
        if let Some(f) = &mut self.failure {
            *f = format!("{f} — {rule} (docs/authoring.md, \"Who does what\")");
        }
        self
    }
}

/// The counts of a list of checks: passed, failed, skipped.
pub fn counts(checks: &[Check]) -> (usize, usize, usize) {
    let failed = checks.iter().filter(|c| c.failure.is_some()).count();
    let skipped = checks.iter().filter(|c| c.failure.is_none() && c.skipped.is_some()).count();
    (checks.len() - failed - skipped, failed, skipped)
}

/// The report of `checks` on `subject`, as `allocator-master conformance` prints it: one line
/// per check (`PASS`, `FAIL` with why, `SKIP` with why), then the counts
/// (`15 passed, 0 failed`, with `, N skipped` when some were).
pub fn render(subject: &str, checks: &[Check]) -> String {
    let mut text = format!("conformance of {subject}:\n");
    for c in checks {
        let line = match (&c.failure, &c.skipped) {
            (Some(why), _) => format!("  FAIL  {}: {why}", c.name),
            (None, Some(why)) => {
                format!("  SKIP  {}: {}", c.name, why.rsplit(": ").next().unwrap_or(why))
            }
            (None, None) => format!("  PASS  {}", c.name),
        };
        text.push_str(&line);
        text.push('\n');
    }
    let (passed, failed, skipped) = counts(checks);
    if skipped > 0 {
        text.push_str(&format!("{passed} passed, {failed} failed, {skipped} skipped\n"));
    } else {
        text.push_str(&format!("{passed} passed, {failed} failed\n"));
    }
    text
}

/// Prints [`render`]'s report on stdout; returns whether no check failed.
pub fn report(subject: &str, checks: &[Check]) -> bool {
    print!("{}", render(subject, checks));
    checks.iter().all(Check::ok)
}

/// Panics with every failure when a check failed, after printing the report (seen with
/// `cargo test -- --nocapture`): what a module's `cargo test` calls.
pub fn assert_all_pass(subject: &str, checks: &[Check]) {
    if !report(subject, checks) {
        let failures: Vec<String> = checks
            .iter()
            .filter_map(|c| c.failure.as_ref().map(|why| format!("{}: {why}", c.name)))
            .collect();
        panic!("{subject} fails conformance:\n{}", failures.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_counts_skips_only_when_there_are_some() {
        let pass = Check::new("a", None);
        let fail = Check::new("b", Some("why".into()));
        let skip = Check { name: "c", failure: None, skipped: Some("x: refuses it".into()) };
        assert!(render("s", &[pass.clone(), fail.clone()]).ends_with("1 passed, 1 failed\n"));
        let text = render("s", &[pass, fail, skip]);
        assert!(text.contains("  SKIP  c: refuses it\n"), "{text}");
        assert!(text.ends_with("1 passed, 1 failed, 1 skipped\n"), "{text}");
    }

    #[test]
    fn a_citation_follows_the_failure_and_leaves_a_pass_alone() {
        let failed = Check::new("a", Some("it did X".into())).citing("rule R");
        assert_eq!(
            failed.failure.as_deref(),
            Some("it did X — rule R (docs/authoring.md, \"Who does what\")")
        );
        assert_eq!(Check::new("a", None).citing("rule R").failure, None);
    }
}

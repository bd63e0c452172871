//! Role names: the one place their rules live.
//!
//! Mesos's rules (`roles::validate`): a role is `*` (the default role) or one or more segments
//! separated by `/`; no segment is empty, `.`, `..` or `*`; no segment starts with `-`; and no
//! character is whitespace or a control character (NUL included). Every place that accepts a
//! role (resource text, scenarios, quota, weights, framework roles, sorter clients) calls
//! [`validate`].

/// Why a role name was refused. Its `Display` is one line naming the role and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid role {role:?}: {reason}")]
pub struct RoleError {
    /// The role as given.
    pub role: String,
    /// The rule it breaks.
    pub reason: &'static str,
}

impl RoleError {
    /// The refusal as Mesos's master words it to a framework: `Role '<role>' is invalid:
    /// <rule>` (control characters in the name escaped).
    pub fn mesos_message(&self) -> String {
        format!("Role '{}' is invalid: {}", self.role.escape_debug(), self.reason)
    }
}

/// Checks `role` against Mesos's role-name rules (see the [module documentation](self)).
///
/// ```
/// use allocator_api::roles::validate;
/// assert!(validate("*").is_ok());
/// assert!(validate("eng/ml").is_ok());
/// assert!(validate("eng/../ops").is_err());
/// assert!(validate("-x").is_err());
/// ```
pub fn validate(role: &str) -> Result<(), RoleError> {
    let fail = |reason| Err(RoleError { role: role.to_owned(), reason });
    if role == "*" {
        return Ok(());
    }
    if role.is_empty() {
        return fail("a role name cannot be empty");
    }
    if role.starts_with('-') {
        return fail("a role name cannot start with '-'");
    }
    if role.chars().any(char::is_control) {
        return fail("a role name cannot contain control characters");
    }
    if role.chars().any(char::is_whitespace) {
        return fail("a role name cannot contain whitespace");
    }
    for segment in role.split('/') {
        match segment {
            "" => return fail("a role path cannot have an empty segment ('/' only separates)"),
            "." | ".." => return fail("a role path cannot have a '.' or '..' segment"),
            "*" => return fail("'*' cannot be a segment of a nested role"),
            s if s.starts_with('-') => return fail("a role path segment cannot start with '-'"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn mesos_role_names_are_accepted() {
        for ok in ["*", "r1", "eng", "eng/ml", "a/b/c", "a.b", "a-b", "x..y", "a/.b"] {
            assert!(validate(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn empty_dot_and_dotdot_segments_are_refused() {
        for bad in ["", "/a", "a/", "a//b", ".", "..", "a/./b", "a/..", "../etc"] {
            assert!(validate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_segment_starting_with_a_dash_is_refused() {
        for bad in ["-x", "a/-b", "a/b/-"] {
            assert!(validate(bad).is_err(), "{bad}");
        }
        assert!(validate("a-b/c-").is_ok());
    }

    #[test]
    fn the_mesos_message_names_the_role_and_escapes_control_characters() {
        let e = validate("a\nb").unwrap_err();
        assert_eq!(
            e.mesos_message(),
            "Role 'a\\nb' is invalid: a role name cannot contain control characters"
        );
    }

    #[test]
    fn control_characters_and_whitespace_are_refused() {
        for bad in ["a\0b", "r\u{7}", "a b", "a\tb", "a\nb", "a\u{7f}"] {
            let e = validate(bad).unwrap_err();
            assert!(e.to_string().starts_with("invalid role "), "{e}");
        }
    }

    #[test]
    fn a_leading_dash_is_refused() {
        assert_eq!(validate("-r").unwrap_err().reason, "a role name cannot start with '-'");
    }
}

//! Names for the integer handles in a module's messages: a module knows frameworks and agents
//! only by handle (`framework#3`), the host knows their names and adds them when it reports.

/// Rewrites every `framework#N` and `agent#N` in `message` (how handles display) as
/// `framework 'name' (#N)` when `name_of(kind, N)` knows the name; other text is kept as is.
pub fn name_handles(message: &str, name_of: impl Fn(&str, u32) -> Option<String>) -> String {
    let mut out = String::with_capacity(message.len() + 16);
    let mut rest = message;
    while let Some(hash) = rest.find('#') {
        let before = &rest[..hash];
        let digits = rest[hash + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let kind = ["framework", "agent"].into_iter().find(|k| {
            before.ends_with(k)
                && !before[..before.len() - k.len()]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        let number = rest[hash + 1..hash + 1 + digits].parse::<u32>().ok();
        match (kind, number.and_then(|n| kind.and_then(|k| name_of(k, n)).map(|name| (n, name)))) {
            (Some(kind), Some((n, name))) => {
                out.push_str(&before[..before.len() - kind.len()]);
                out.push_str(&format!("{kind} '{name}' (#{n})"));
            }
            _ => {
                out.push_str(before);
                out.push('#');
                out.push_str(&rest[hash + 1..hash + 1 + digits]);
            }
        }
        rest = &rest[hash + 1 + digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::name_handles;

    fn names(kind: &str, n: u32) -> Option<String> {
        match (kind, n) {
            ("framework", 1) => Some("f1".into()),
            ("agent", 0) => Some("a1".into()),
            _ => None,
        }
    }

    #[test]
    fn module_errors_name_the_handles_the_host_knows() {
        assert_eq!(
            name_handles("recover_resources: framework#1 holds cpus:1 on agent#0", names),
            "recover_resources: framework 'f1' (#1) holds cpus:1 on agent 'a1' (#0)"
        );
    }

    #[test]
    fn unknown_handles_and_other_hashes_are_kept() {
        let text = "framework#7 on agent#0#; client#1, subagent#0, issue #3, agent#";
        assert_eq!(
            name_handles(text, names),
            "framework#7 on agent 'a1' (#0)#; client#1, subagent#0, issue #3, agent#"
        );
    }
}

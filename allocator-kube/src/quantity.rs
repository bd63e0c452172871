//! Kubernetes quantities (`500m`, `2Gi`, `1.5`, `1e3`) as numbers, and the unit each resource
//! is kept in here: cpus in cores, `mem` and `disk` in MiB (as Mesos), everything else in
//! its own unit.

/// The value of a Kubernetes quantity in its base unit (`500m` → 0.5, `2Gi` → 2147483648).
/// `None` for text that is not a quantity.
pub fn parse(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || ((*c == '+' || *c == '-') && *i == 0)))
        .map_or(text.len(), |(i, _)| i);
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exp if exp.starts_with(['e', 'E']) => 10f64.powi(exp[1..].parse().ok()?),
        _ => return None,
    };
    let value = number * scale;
    value.is_finite().then_some(value)
}

/// Bytes in a MiB: memory and ephemeral storage are kept in MiB, as Mesos keeps them.
pub const MIB: f64 = 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn every_suffix_kind_parses() {
        assert_eq!(parse("500m"), Some(0.5));
        assert_eq!(parse("2"), Some(2.0));
        assert_eq!(parse("1.5"), Some(1.5));
        assert_eq!(parse("2Gi"), Some(2.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(parse("128Mi"), Some(128.0 * 1024.0 * 1024.0));
        assert_eq!(parse("1G"), Some(1e9));
        assert_eq!(parse("1e3"), Some(1000.0));
        assert_eq!(parse("110"), Some(110.0));
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("1Zi"), None);
    }
}

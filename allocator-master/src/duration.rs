//! Mesos's duration format for every time-valued flag: a plain decimal number in the flag's
//! own unit (seconds, or milliseconds for a `_ms` flag), or a number with one of Mesos's units
//! (`500ms`, `1secs`, `2mins`; stout's `Duration::parse`).

/// Mesos's duration units and their length in seconds.
const UNITS: [(&str, f64); 8] = [
    ("ns", 1e-9),
    ("us", 1e-6),
    ("ms", 1e-3),
    ("secs", 1.0),
    ("mins", 60.0),
    ("hrs", 3600.0),
    ("days", 86_400.0),
    ("weeks", 604_800.0),
];

/// `text` in seconds: a number of seconds, or a Mesos duration.
pub fn seconds(text: &str) -> Result<f64, String> {
    parse(text, 1.0)
}

/// `text` in milliseconds: a number of milliseconds, or a Mesos duration.
pub fn millis(text: &str) -> Result<f64, String> {
    parse(text, 1e-3).map(|s| s * 1e3)
}

/// `text` in seconds, where a plain number is in units of `plain` seconds.
fn parse(text: &str, plain: f64) -> Result<f64, String> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.trim().parse().map_err(|_| {
        format!("invalid duration '{text}': expected a number, or a number and a unit (1secs, 500ms, 2mins)")
    })?;
    let scale = if unit.is_empty() {
        plain
    } else {
        UNITS.iter().find(|(u, _)| *u == unit).map(|(_, s)| *s).ok_or_else(|| {
            format!(
                "invalid duration '{text}': unknown unit '{unit}' (a number, or one of ns, us, ms, secs, mins, hrs, days, weeks, as in 1secs or 500ms)"
            )
        })?
    };
    if !value.is_finite() {
        return Err(format!("invalid duration '{text}': not a finite number"));
    }
    Ok(value * scale)
}

/// `seconds` in Mesos's format, as `GET_FLAGS` and `/flags` show a duration (`1secs`,
/// `500ms`, `2mins`): the largest unit that keeps an exact (to 1e-9) decimal number.
pub fn format_seconds(seconds: f64) -> String {
    for (unit, scale) in UNITS.iter().rev() {
        let v = seconds / scale;
        if v.abs() >= 1.0 && (v - v.round()).abs() < 1e-9 {
            return format!("{}{unit}", v.round());
        }
    }
    if seconds == 0.0 { "0secs".into() } else { format!("{seconds}secs") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_number_is_in_the_flags_own_unit() {
        assert_eq!(seconds("1.5"), Ok(1.5));
        assert_eq!(millis("250"), Ok(250.0));
    }

    #[test]
    fn mesos_units_are_accepted_wherever_a_time_is() {
        assert_eq!(seconds("1secs"), Ok(1.0));
        assert_eq!(seconds("500ms"), Ok(0.5));
        assert_eq!(seconds("2mins"), Ok(120.0));
        assert_eq!(seconds("1.5hrs"), Ok(5400.0));
        assert_eq!(millis("2secs"), Ok(2000.0));
        assert_eq!(seconds("1weeks"), Ok(604_800.0));
    }

    #[test]
    fn an_unknown_unit_or_a_non_number_is_one_clear_error() {
        let e = seconds("1sec").unwrap_err();
        assert!(e.contains("unknown unit 'sec'") && e.contains("secs"), "{e}");
        assert!(seconds("fast").unwrap_err().contains("expected a number"));
        assert!(seconds("infsecs").is_err());
    }

    #[test]
    fn durations_print_as_mesos_prints_them() {
        assert_eq!(format_seconds(1.0), "1secs");
        assert_eq!(format_seconds(0.5), "500ms");
        assert_eq!(format_seconds(120.0), "2mins");
        assert_eq!(format_seconds(15.0), "15secs");
        assert_eq!(format_seconds(0.0), "0secs");
        assert_eq!(seconds(&format_seconds(0.25)), Ok(0.25));
    }
}

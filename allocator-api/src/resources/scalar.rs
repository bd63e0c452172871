//! Fixed-point scalars with Mesos's precision (three decimal places).

use std::fmt;

use abi_stable::StableAbi;

/// A non-negative-by-convention decimal with exactly three decimal places, stored as thousandths.
///
/// Mesos stores scalars as `double` and rounds every result to three decimal places, so that
/// `0.1 + 0.2 == 0.3`. Storing thousandths in an `i64` gives the same observable results without
/// any rounding drift: addition and subtraction are exact.
///
/// Contract: values parsed from text are never negative; arithmetic on [`Resources`](super::Resources)
/// saturates at zero. The type itself allows negative values so that callers can compute signed
/// differences, but such values never appear inside a `Resources`.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Scalar(i64);

impl Scalar {
    /// Zero.
    pub const ZERO: Scalar = Scalar(0);
    /// The largest representable scalar.
    pub const MAX: Scalar = Scalar(i64::MAX);

    /// A scalar from a count of thousandths (`from_millis(1500)` is `1.5`).
    pub const fn from_millis(millis: i64) -> Scalar {
        Scalar(millis)
    }

    /// A whole number (`from_units(3)` is `3`). Saturates on overflow.
    pub const fn from_units(units: i64) -> Scalar {
        Scalar(units.saturating_mul(1000))
    }

    /// The value in thousandths.
    pub const fn millis(self) -> i64 {
        self.0
    }

    /// Rounds `value` to three decimal places, as Mesos does. Returns `None` for NaN, infinities
    /// and values outside the representable range.
    pub fn from_f64(value: f64) -> Option<Scalar> {
        if !value.is_finite() {
            return None;
        }
        let millis = (value * 1000.0).round();
        if millis.abs() >= 9.0e18 {
            return None;
        }
        Some(Scalar(millis as i64))
    }

    /// The value as a `f64` (exact for every value below 2^53 thousandths).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// `true` when the value is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `true` when the value is strictly positive.
    pub const fn is_positive(self) -> bool {
        self.0 > 0
    }

    /// Addition that saturates at the representable bounds.
    pub const fn saturating_add(self, other: Scalar) -> Scalar {
        Scalar(self.0.saturating_add(other.0))
    }

    /// Subtraction that never goes below zero (the rule for resource quantities).
    pub const fn saturating_sub(self, other: Scalar) -> Scalar {
        let d = self.0.saturating_sub(other.0);
        if d < 0 { Scalar(0) } else { Scalar(d) }
    }

    /// Parses a decimal in plain notation (`12`, `0.5`, `.25`, `3.`), rounding to three decimal
    /// places (half away from zero). Returns a message on failure; negative numbers, exponents,
    /// NaN and values that overflow are rejected.
    pub fn parse_decimal(text: &str) -> Result<Scalar, &'static str> {
        let bytes = text.as_bytes();
        if bytes.is_empty() {
            return Err("expected a number");
        }
        if bytes[0] == b'-' {
            return Err("negative scalars are not allowed");
        }
        let body = text.strip_prefix('+').unwrap_or(text);
        let (int_part, frac_part) = match body.split_once('.') {
            Some((i, f)) => (i, f),
            None => (body, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err("expected a number");
        }
        if !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
        {
            return Err("expected a decimal number");
        }
        let mut units: i64 = 0;
        for b in int_part.bytes() {
            units = units
                .checked_mul(10)
                .and_then(|u| u.checked_add(i64::from(b - b'0')))
                .ok_or("number too large")?;
        }
        let mut frac: i64 = 0;
        let digits = frac_part.as_bytes();
        for i in 0..3 {
            frac = frac * 10 + digits.get(i).map_or(0, |b| i64::from(b - b'0'));
        }
        if digits.get(3).is_some_and(|b| *b >= b'5') {
            frac += 1;
        }
        units
            .checked_mul(1000)
            .and_then(|m| m.checked_add(frac))
            .filter(|m| *m < i64::MAX / 4)
            .map(Scalar)
            .ok_or("number too large")
    }
}

impl fmt::Display for Scalar {
    /// Prints the shortest decimal form: `2`, `0.5`, `1.125`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let (units, frac) = (abs / 1000, abs % 1000);
        if frac == 0 {
            write!(f, "{sign}{units}")
        } else {
            let digits = format!("{frac:03}");
            write!(f, "{sign}{units}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl std::ops::Add for Scalar {
    type Output = Scalar;
    fn add(self, rhs: Scalar) -> Scalar {
        self.saturating_add(rhs)
    }
}

impl std::ops::AddAssign for Scalar {
    fn add_assign(&mut self, rhs: Scalar) {
        *self = self.saturating_add(rhs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_sum_is_exact_at_mesos_precision() {
        let a = Scalar::parse_decimal("0.1").unwrap();
        let b = Scalar::parse_decimal("0.2").unwrap();
        assert_eq!(a + b, Scalar::parse_decimal("0.3").unwrap());
    }

    #[test]
    fn parse_rounds_to_three_places() {
        assert_eq!(Scalar::parse_decimal("1.0005").unwrap().millis(), 1001);
        assert_eq!(Scalar::parse_decimal("1.0004").unwrap().millis(), 1000);
        assert_eq!(Scalar::parse_decimal(".25").unwrap().millis(), 250);
    }

    #[test]
    fn parse_rejects_bad_numbers() {
        for bad in ["", "-1", "1e3", "NaN", "inf", "1.2.3", ".", "99999999999999999999"] {
            assert!(Scalar::parse_decimal(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display_is_shortest_form() {
        assert_eq!(Scalar::from_millis(2000).to_string(), "2");
        assert_eq!(Scalar::from_millis(500).to_string(), "0.5");
        assert_eq!(Scalar::from_millis(1).to_string(), "0.001");
        assert_eq!(Scalar::from_millis(-1250).to_string(), "-1.25");
    }

    #[test]
    fn from_f64_rounds_and_rejects_nan() {
        assert_eq!(Scalar::from_f64(0.1 + 0.2), Some(Scalar::from_millis(300)));
        assert_eq!(Scalar::from_f64(f64::NAN), None);
    }
}

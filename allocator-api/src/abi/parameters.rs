//! Manifest parameters as a module's factory receives them: [`Parameter`] crosses the boundary
//! (in both ABIs' factory signatures, so its layout is frozen with ABI 1), [`Parameters`] is the
//! module side's view of them.

use abi_stable::StableAbi;
use abi_stable::std_types::RString;

/// A manifest parameter (`{"key": …, "value": …}`).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// The key.
    pub key: RString,
    /// The value.
    pub value: RString,
}

/// The manifest parameters of a module, as its factory receives them.
#[derive(Copy, Clone, Debug)]
pub struct Parameters<'a>(pub &'a [Parameter]);

impl<'a> Parameters<'a> {
    /// The value of the last parameter named `key`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().rev().find(|p| p.key == key).map(|p| p.value.as_str())
    }

    /// The value of `key` parsed as `T`, or `default` when absent. The error names the key and
    /// the value.
    pub fn parse_or<T: std::str::FromStr>(
        &self,
        key: &str,
        default: T,
    ) -> std::result::Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e| format!("parameter '{key}' = '{v}': {e}")),
        }
    }

    /// Every parameter, in manifest order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.0.iter().map(|p| (p.key.as_str(), p.value.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_parse_with_named_errors() {
        let ps = [Parameter { key: "threshold".into(), value: "x".into() }];
        let p = Parameters(&ps);
        assert_eq!(p.get("threshold"), Some("x"));
        let e = p.parse_or::<f64>("threshold", 1.0).unwrap_err();
        assert!(e.starts_with("parameter 'threshold' = 'x': "), "{e}");
        assert_eq!(p.parse_or::<f64>("other", 1.5), Ok(1.5));
    }
}

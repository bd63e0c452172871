//! Messages of `mesos.proto` shared by both APIs: ids, values, attributes, labels, times,
//! filters, and [`Bytes`] for protobuf `bytes` fields.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name {
            /// The id's text.
            pub value: String,
        }

        impl $name {
            /// The id with text `value`.
            pub fn new(value: impl Into<String>) -> $name {
                $name { value: value.into() }
            }
        }
    };
}

id_type!(
    /// `FrameworkID`.
    FrameworkId
);
id_type!(
    /// `OfferID` (also the id of an inverse offer).
    OfferId
);
id_type!(
    /// `AgentID`.
    AgentId
);
id_type!(
    /// `TaskID`.
    TaskId
);
id_type!(
    /// `ExecutorID`.
    ExecutorId
);
id_type!(
    /// `OperationID`.
    OperationId
);

/// A protobuf `bytes` field: base64 text in JSON (standard alphabet, padded).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({})", base64_encode(&self.0))
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64_encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let text = String::deserialize(d)?;
        base64_decode(&text).map(Bytes).map_err(serde::de::Error::custom)
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `data` as padded base64 (RFC 4648's standard alphabet).
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for group in data.chunks(3) {
        let b = [group[0], *group.get(1).unwrap_or(&0), *group.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(BASE64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes base64 text (standard or URL-safe alphabet, padding optional); `Err` names the
/// first bad character.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, c) in text.trim_end_matches('=').chars().enumerate() {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' | '-' => 62,
            '/' | '_' => 63,
            _ => return Err(format!("not base64: character {c:?} at {i}")),
        };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 {
        return Err("not base64: truncated".into());
    }
    Ok(out)
}

/// A protobuf `int64`: a number in JSON; text (the strict protobuf mapping) is accepted.
fn de_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Number(i64),
        Float(f64),
        Text(String),
    }
    match Int::deserialize(d)? {
        Int::Number(n) => Ok(n),
        Int::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
        Int::Float(f) => Err(serde::de::Error::custom(format!("{f} is not an integer"))),
        Int::Text(t) => t.trim().parse().map_err(serde::de::Error::custom),
    }
}

/// `TimeInfo`: a point in time, in nanoseconds since the epoch.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TimeInfo {
    /// Nanoseconds since the Unix epoch.
    #[serde(deserialize_with = "de_i64")]
    pub nanoseconds: i64,
}

impl TimeInfo {
    /// The time `seconds` after the epoch.
    pub fn from_secs(seconds: f64) -> TimeInfo {
        TimeInfo { nanoseconds: (seconds * 1e9).round() as i64 }
    }

    /// Seconds since the epoch.
    pub fn as_secs(self) -> f64 {
        self.nanoseconds as f64 / 1e9
    }
}

/// `DurationInfo`: a duration in nanoseconds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DurationInfo {
    /// Nanoseconds.
    #[serde(deserialize_with = "de_i64")]
    pub nanoseconds: i64,
}

impl DurationInfo {
    /// A duration of `seconds`.
    pub fn from_secs(seconds: f64) -> DurationInfo {
        DurationInfo { nanoseconds: (seconds * 1e9).round() as i64 }
    }

    /// The duration in seconds.
    pub fn as_secs(self) -> f64 {
        self.nanoseconds as f64 / 1e9
    }
}

/// `Unavailability`: when an agent is scheduled to be unavailable (maintenance).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Unavailability {
    /// Start of the unavailability.
    pub start: TimeInfo,
    /// How long; absent means indefinitely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<DurationInfo>,
}

/// `MachineID`: a machine by hostname and/or IP (maintenance schedules).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MachineId {
    /// The machine's hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The machine's IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
}

/// `Value.Type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ValueType {
    /// A decimal (`scalar`).
    Scalar,
    /// Integer ranges (`ranges`).
    Ranges,
    /// A set of strings (`set`).
    Set,
    /// Text (`text`; attributes only).
    Text,
}

/// `Value.Scalar`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct ScalarValue {
    /// The amount.
    pub value: f64,
}

/// `Value.Range`: an inclusive range.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RangeValue {
    /// First value.
    #[serde(deserialize_with = "de_u64")]
    pub begin: u64,
    /// Last value (inclusive).
    #[serde(deserialize_with = "de_u64")]
    pub end: u64,
}

/// A protobuf `uint64`: a number in JSON; text is accepted.
fn de_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = de_i64(d)?;
    u64::try_from(n).map_err(|_| serde::de::Error::custom(format!("{n} is negative")))
}

/// `Value.Ranges`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RangesValue {
    /// The ranges.
    #[serde(default)]
    pub range: Vec<RangeValue>,
}

/// `Value.Set`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct SetValue {
    /// The items.
    #[serde(default)]
    pub item: Vec<String>,
}

/// `Value.Text`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct TextValue {
    /// The text.
    pub value: String,
}

/// `Attribute`: a named value describing an agent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Attribute {
    /// The attribute's name.
    pub name: String,
    /// Which of the value fields is set.
    #[serde(rename = "type")]
    pub kind: ValueType,
    /// The value of a `SCALAR` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalar: Option<ScalarValue>,
    /// The value of a `RANGES` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranges: Option<RangesValue>,
    /// The value of a `SET` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<SetValue>,
    /// The value of a `TEXT` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextValue>,
}

impl Attribute {
    /// A `TEXT` attribute.
    pub fn text(name: &str, value: &str) -> Attribute {
        Attribute {
            name: name.to_owned(),
            kind: ValueType::Text,
            scalar: None,
            ranges: None,
            set: None,
            text: Some(TextValue { value: value.to_owned() }),
        }
    }
}

/// `Label`: a key and an optional value.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Label {
    /// The key.
    pub key: String,
    /// The value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `Labels`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Labels {
    /// The labels, in order.
    #[serde(default)]
    pub labels: Vec<Label>,
}

impl Labels {
    /// The value of the first label with key `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|l| l.key == key).and_then(|l| l.value.as_deref())
    }
}

/// `Filters`: how long declined or unused resources are not offered again to the framework.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct Filters {
    /// Seconds; absent means [`Filters::DEFAULT_REFUSE_SECONDS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refuse_seconds: Option<f64>,
}

impl Filters {
    /// Mesos's default `refuse_seconds` (5).
    pub const DEFAULT_REFUSE_SECONDS: f64 = 5.0;

    /// The filter's duration in seconds, the default filled in.
    pub fn refuse_seconds(filters: Option<&Filters>) -> f64 {
        filters.and_then(|f| f.refuse_seconds).unwrap_or(Filters::DEFAULT_REFUSE_SECONDS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length_and_matches_rfc_4648() {
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
        for n in 0..40u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37).wrapping_add(200)).collect();
            assert_eq!(base64_decode(&base64_encode(&data)).unwrap(), data);
        }
    }

    #[test]
    fn base64_decoding_refuses_foreign_characters() {
        assert!(base64_decode("Zm9v!").unwrap_err().contains("'!'"));
    }

    #[test]
    fn a_uuid_field_is_base64_text_in_json() {
        let b = Bytes(vec![0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"3q2+7w==\"");
        assert_eq!(serde_json::from_str::<Bytes>("\"3q2+7w==\"").unwrap(), b);
    }

    #[test]
    fn int64_fields_accept_numbers_and_text() {
        let t: TimeInfo = serde_json::from_str(r#"{"nanoseconds": 1500000000}"#).unwrap();
        assert_eq!(t.as_secs(), 1.5);
        let t: TimeInfo = serde_json::from_str(r#"{"nanoseconds": "2000000000"}"#).unwrap();
        assert_eq!(t, TimeInfo::from_secs(2.0));
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"nanoseconds":2000000000}"#);
    }

    #[test]
    fn filters_default_to_five_seconds() {
        let f: Filters = serde_json::from_str("{}").unwrap();
        assert_eq!(Filters::refuse_seconds(Some(&f)), 5.0);
        assert_eq!(Filters::refuse_seconds(None), 5.0);
        let f: Filters = serde_json::from_str(r#"{"refuse_seconds": 0.5}"#).unwrap();
        assert_eq!(Filters::refuse_seconds(Some(&f)), 0.5);
    }

    #[test]
    fn ids_are_objects_with_a_value() {
        let id: FrameworkId = serde_json::from_str(r#"{"value": "f-1"}"#).unwrap();
        assert_eq!(id, FrameworkId::new("f-1"));
        assert_eq!(serde_json::to_string(&AgentId::new("a")).unwrap(), r#"{"value":"a"}"#);
    }

    #[test]
    fn labels_are_looked_up_by_key() {
        let l: Labels = serde_json::from_str(
            r#"{"labels": [{"key": "k"}, {"key": "duration", "value": "3"}]}"#,
        )
        .unwrap();
        assert_eq!(l.get("duration"), Some("3"));
        assert_eq!(l.get("k"), None);
    }
}

//! Reading scenario files (SPEC section 4): the shared JSON plumbing with errors that name the
//! event index and field.

use std::fmt;
use std::path::Path;

use allocator_api::{Quantities, Resources};
use serde_json::{Map, Value};

/// A scenario that cannot be read or parsed. Displays as one line naming the file, the event
/// index, the op and the field.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The scenario file (or `<inline>`).
    pub file: String,
    /// Where in the scenario: `event 3 (add)`, `config`, …
    pub location: String,
    /// The field concerned, if any.
    pub field: Option<String>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scenario '{}': {}", self.file, self.location)?;
        if let Some(field) = &self.field {
            write!(f, ", field '{field}'")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// A loaded scenario document.
#[derive(Debug)]
pub struct Document {
    /// The file name, for messages.
    pub file: String,
    /// The top-level object.
    pub root: Map<String, Value>,
}

impl Document {
    /// Reads and parses a scenario file.
    pub fn read(path: &Path) -> Result<Document, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            location: "file".into(),
            field: None,
            message: format!("cannot read: {e}"),
        })?;
        Document::parse(&text, &file)
    }

    /// Parses scenario text.
    pub fn parse(text: &str, file: &str) -> Result<Document, ScenarioError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ScenarioError {
            file: file.to_owned(),
            location: "JSON".into(),
            field: None,
            message: e.to_string(),
        })?;
        let Value::Object(root) = value else {
            return Err(ScenarioError {
                file: file.to_owned(),
                location: "top level".into(),
                field: None,
                message: "expected a JSON object".into(),
            });
        };
        Ok(Document { file: file.to_owned(), root })
    }

    /// `true` for a sorter scenario (it has a `sorter` key).
    pub fn is_sorter_scenario(&self) -> bool {
        self.root.contains_key("sorter")
    }

    /// An error at the top level.
    pub fn error(&self, field: Option<&str>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.clone(),
            location: "top level".into(),
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    /// Rejects top-level keys outside `allowed`.
    pub fn check_keys(&self, allowed: &[&str]) -> Result<(), ScenarioError> {
        for key in self.root.keys() {
            if !allowed.contains(&key.as_str()) {
                return Err(self.error(
                    Some(key),
                    format!("unknown key (expected one of: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The `config` object (empty when absent).
    pub fn config(&self) -> Result<Fields<'_>, ScenarioError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let obj = match self.root.get("config") {
            None => EMPTY.get_or_init(Map::new),
            Some(Value::Object(o)) => o,
            Some(_) => return Err(self.error(Some("config"), "expected an object")),
        };
        Ok(Fields { file: &self.file, location: "config".into(), obj })
    }

    /// The events, each with its index and op.
    pub fn events(&self) -> Result<Vec<Fields<'_>>, ScenarioError> {
        let Some(Value::Array(events)) = self.root.get("events") else {
            return Err(self.error(Some("events"), "expected a list of events"));
        };
        events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let Value::Object(obj) = e else {
                    return Err(ScenarioError {
                        file: self.file.clone(),
                        location: format!("event {i}"),
                        field: None,
                        message: "expected an object".into(),
                    });
                };
                let op = match obj.get("op") {
                    Some(Value::String(s)) => s.as_str(),
                    _ => {
                        return Err(ScenarioError {
                            file: self.file.clone(),
                            location: format!("event {i}"),
                            field: Some("op".into()),
                            message: "missing or not a string".into(),
                        });
                    }
                };
                Ok(Fields { file: &self.file, location: format!("event {i} ({op})"), obj })
            })
            .collect()
    }
}

/// Typed access to the fields of one JSON object, with errors naming the field.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    file: &'a str,
    /// `event 3 (add)`, `config`, …
    pub location: String,
    /// The object.
    pub obj: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// An error about `field`.
    pub fn error(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_owned(),
            location: self.location.clone(),
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// The op (events only).
    pub fn op(&self) -> &'a str {
        self.obj.get("op").and_then(Value::as_str).unwrap_or("")
    }

    /// Rejects fields outside `allowed` (and `op`).
    pub fn check_keys(&self, allowed: &[&str]) -> Result<(), ScenarioError> {
        for key in self.obj.keys() {
            if key != "op" && !allowed.contains(&key.as_str()) {
                return Err(
                    self.error(key, format!("unknown field (expected: {})", allowed.join(", ")))
                );
            }
        }
        Ok(())
    }

    /// The raw value of `field`, if present and not null.
    pub fn get(&self, field: &str) -> Option<&'a Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    /// A required string.
    pub fn str(&self, field: &str) -> Result<&'a str, ScenarioError> {
        match self.get(field) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(self.error(field, "expected a string")),
            None => Err(self.error(field, "missing")),
        }
    }

    /// An optional string.
    pub fn opt_str(&self, field: &str) -> Result<Option<&'a str>, ScenarioError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.error(field, "expected a string")),
        }
    }

    /// A required finite number.
    pub fn f64(&self, field: &str) -> Result<f64, ScenarioError> {
        self.opt_f64(field)?.ok_or_else(|| self.error(field, "missing"))
    }

    /// An optional finite number.
    pub fn opt_f64(&self, field: &str) -> Result<Option<f64>, ScenarioError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(self.error(field, "number out of range")),
            },
            Some(_) => Err(self.error(field, "expected a number")),
        }
    }

    /// An optional non-negative integer.
    pub fn opt_u64(&self, field: &str) -> Result<Option<u64>, ScenarioError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.error(field, "expected a non-negative integer")),
            Some(_) => Err(self.error(field, "expected a non-negative integer")),
        }
    }

    /// An optional boolean.
    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, ScenarioError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.error(field, "expected true or false")),
        }
    }

    /// An optional list of strings.
    pub fn opt_str_list(&self, field: &str) -> Result<Option<Vec<&'a str>>, ScenarioError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.error(field, "expected a list of strings")))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.error(field, "expected a list of strings")),
        }
    }

    /// A required resources string (SPEC section 3).
    pub fn resources(&self, field: &str) -> Result<Resources, ScenarioError> {
        self.str(field)?
            .parse()
            .map_err(|e: allocator_api::resources::ParseError| self.error(field, e.to_string()))
    }

    /// A required quantity string.
    pub fn quantities(&self, field: &str) -> Result<Quantities, ScenarioError> {
        Quantities::parse(self.str(field)?).map_err(|e| self.error(field, e.to_string()))
    }

    /// An optional object.
    pub fn opt_object(&self, field: &str) -> Result<Option<&'a Map<String, Value>>, ScenarioError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(_) => Err(self.error(field, "expected an object")),
        }
    }
}

//! The resource text parser (SPEC section 3).

use std::fmt;

use abi_stable::std_types::{RString, RVec};

use super::ranges::{self, Range};
use super::{Resource, ResourceFlags, Resources, Scalar, Value};

/// A resource or quantity string that does not follow the grammar.
///
/// Its `Display` quotes the whole string and names the byte position of the problem:
/// `invalid resources "cpus:x": expected a decimal number at position 5`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The string that was parsed.
    pub input: String,
    /// Byte offset of the problem in `input`.
    pub position: usize,
    /// What was wrong.
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(input: &str, position: usize, message: &str) -> ParseError {
        ParseError { input: input.to_owned(), position, message: message.to_owned() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid resources {:?}: {} at position {}",
            self.input, self.message, self.position
        )
    }
}

impl std::error::Error for ParseError {}

/// Splits on `;`, yielding each non-blank entry with its byte offset.
pub(crate) fn split_entries(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    text.split(';').filter_map(move |entry| {
        let start = offset;
        offset += entry.len() + 1;
        (!entry.trim().is_empty()).then_some((start, entry))
    })
}

const SPECIAL: &str = "()[]{}:;,";

/// A cursor over one entry, with positions relative to the whole input.
struct Cursor<'a> {
    input: &'a str,
    entry: &'a str,
    base: usize,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, at: usize, msg: &str) -> ParseError {
        ParseError::new(self.input, self.base + at, msg)
    }

    fn skip_ws(&mut self) {
        let rest = &self.entry[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<u8> {
        self.entry.as_bytes().get(self.pos).copied()
    }

    /// Reads up to (not including) `close`, returning the trimmed text and its start.
    fn delimited(&mut self, close: u8, what: &str) -> Result<(usize, &'a str), ParseError> {
        let open_at = self.pos;
        self.pos += 1;
        let rest = &self.entry[self.pos..];
        let Some(len) = rest.bytes().position(|b| b == close) else {
            return Err(self.err(open_at, &format!("unclosed {what}")));
        };
        let inner = &rest[..len];
        let start = self.pos;
        self.pos += len + 1;
        Ok((start, inner))
    }
}

/// Checks a word of the resource text (a resource name, volume id or set item): not empty, and
/// no whitespace, control character or delimiter of the text (`()[]{}:;,`). Returns the byte
/// offset of the first bad character and the reason.
pub(crate) fn check_text_word(word: &str) -> Result<(), (usize, &'static str)> {
    if word.is_empty() {
        return Err((0, "is empty"));
    }
    if let Some(p) = word.find(char::is_control) {
        return Err((p, "contains a control character"));
    }
    if let Some(p) = word.find(|c: char| c.is_whitespace() || SPECIAL.contains(c)) {
        return Err((p, "contains whitespace or a delimiter of the resource text ()[]{}:;,"));
    }
    Ok(())
}

fn check_word(cur: &Cursor<'_>, at: usize, word: &str, what: &str) -> Result<(), ParseError> {
    check_text_word(word).map_err(|(p, why)| cur.err(at + p, &format!("{what} {why}")))
}

fn parse_entry(input: &str, base: usize, entry: &str) -> Result<Resource, ParseError> {
    let mut cur = Cursor { input, entry, base, pos: 0 };
    cur.skip_ws();
    let name_start = cur.pos;
    let name_len = entry[name_start..]
        .find(|c: char| "([{:".contains(c))
        .ok_or_else(|| cur.err(entry.len(), "expected ':' and a value"))?;
    let name = entry[name_start..name_start + name_len].trim_end();
    check_word(&cur, name_start, name, "resource name")?;
    cur.pos = name_start + name_len;

    let mut reservation = RString::new();
    let mut volume = RString::new();
    let mut flags = ResourceFlags::NONE;
    if cur.peek() == Some(b'(') {
        let (at, role) = cur.delimited(b')', "role")?;
        let role = role.trim();
        if let Err(e) = crate::roles::validate(role) {
            return Err(cur.err(at, e.reason));
        }
        if role != "*" {
            reservation = role.into();
        }
        cur.skip_ws();
    }
    if cur.peek() == Some(b'[') {
        let (at, vol) = cur.delimited(b']', "volume id")?;
        let vol = vol.trim();
        check_word(&cur, at, vol, "volume id")?;
        volume = vol.into();
        cur.skip_ws();
    }
    if cur.peek() == Some(b'{') {
        let (at, list) = cur.delimited(b'}', "flag list")?;
        let mut off = 0;
        for flag in list.split(',') {
            let f = match flag.trim() {
                "revocable" => ResourceFlags::REVOCABLE,
                "shared" => ResourceFlags::SHARED,
                "dynamic" => ResourceFlags::DYNAMIC,
                _ => {
                    return Err(
                        cur.err(at + off, "unknown flag (expected revocable, shared or dynamic)")
                    );
                }
            };
            flags = flags.with(f);
            off += flag.len() + 1;
        }
        cur.skip_ws();
    }
    if cur.peek() != Some(b':') {
        return Err(cur.err(cur.pos, "expected ':'"));
    }
    if flags.has(ResourceFlags::DYNAMIC) && reservation.is_empty() {
        return Err(cur.err(name_start, "a dynamic reservation needs a role"));
    }
    if flags.has(ResourceFlags::SHARED) && volume.is_empty() {
        return Err(cur.err(name_start, "only persistent volumes can be shared"));
    }
    cur.pos += 1;
    cur.skip_ws();
    let value_at = cur.pos;
    let text = entry[value_at..].trim_end();
    let value = match text.as_bytes().first() {
        Some(b'[') => parse_ranges(&cur, value_at, text)?,
        Some(b'{') => parse_set(&cur, value_at, text)?,
        _ => Value::Scalar(Scalar::parse_decimal(text).map_err(|m| cur.err(value_at, m))?),
    };
    Ok(Resource {
        name: name.into(),
        reservation: reservation.into(),
        volume: volume.into(),
        flags,
        value,
    })
}

fn parse_ranges(cur: &Cursor<'_>, at: usize, text: &str) -> Result<Value, ParseError> {
    let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else {
        return Err(cur.err(at, "expected ranges like [1-10,20-30]"));
    };
    let mut list = Vec::new();
    let mut off = at + 1;
    for part in inner.split(',') {
        let p = part.trim();
        if p.is_empty() && inner.trim().is_empty() {
            break;
        }
        let bad = || cur.err(off, "expected a range like 31000-32000");
        let (b, e) = p.split_once('-').ok_or_else(bad)?;
        let begin: u64 = b.trim().parse().map_err(|_| bad())?;
        let end: u64 = e.trim().parse().map_err(|_| bad())?;
        if begin > end {
            return Err(cur.err(off, "range begins after it ends"));
        }
        list.push(Range { begin, end });
        off += part.len() + 1;
    }
    Ok(Value::Ranges(ranges::normalize(list)))
}

fn parse_set(cur: &Cursor<'_>, at: usize, text: &str) -> Result<Value, ParseError> {
    let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return Err(cur.err(at, "expected a set like {a,b}"));
    };
    let mut items: Vec<RString> = Vec::new();
    if !inner.trim().is_empty() {
        let mut off = at + 1;
        for part in inner.split(',') {
            let item = part.trim();
            check_word(cur, off, item, "set item")?;
            items.push(item.into());
            off += part.len() + 1;
        }
    }
    items.sort();
    items.dedup();
    Ok(Value::Set(RVec::from(items)))
}

/// Parses SPEC section 3 text into canonical [`Resources`].
pub(crate) fn parse_resources(text: &str) -> Result<Resources, ParseError> {
    let mut out = Resources::new();
    let mut kinds: Vec<(super::Name, u8)> = Vec::new();
    for (start, entry) in split_entries(text) {
        let r = parse_entry(text, start, entry)?;
        let kind = r.value.kind();
        match kinds.iter().find(|(n, _)| *n == r.name) {
            Some((_, k)) if *k != kind => {
                let name_at = start + (entry.len() - entry.trim_start().len());
                return Err(ParseError::new(text, name_at, "resource used with two value types"));
            }
            Some(_) => {}
            None => kinds.push((r.name, kind)),
        }
        out.add_resource(r);
    }
    Ok(out)
}

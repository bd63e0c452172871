//! RecordIO, the framing of Mesos's event streams: each record is its length in bytes as
//! decimal text, a newline, then the record (`<length>\n<json>`).

/// `record` framed: `<len>\n<record>`.
pub fn encode(record: &[u8]) -> Vec<u8> {
    let mut out = format!("{}\n", record.len()).into_bytes();
    out.extend_from_slice(record);
    out
}

/// Why a RecordIO stream cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordIoError {
    /// The length prefix is not a decimal number (or is too long to be one).
    #[error("malformed RecordIO length {0:?}")]
    BadLength(String),
    /// A record is larger than the decoder accepts.
    #[error("a RecordIO record of {0} bytes is over the limit of {1}")]
    TooLarge(usize, usize),
}

/// An incremental decoder: feed it bytes as they arrive, take out whole records.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    max_record: Option<usize>,
}

impl Decoder {
    /// A decoder that refuses records over `max_record` bytes.
    pub fn with_limit(max_record: usize) -> Decoder {
        Decoder { buf: Vec::new(), max_record: Some(max_record) }
    }

    /// Appends `data` and returns every record now complete, in order. After an `Err` the
    /// stream cannot be decoded further.
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, RecordIoError> {
        self.buf.extend_from_slice(data);
        let mut records = Vec::new();
        let mut pos = 0;
        while let Some(nl) = self.buf[pos..].iter().position(|&b| b == b'\n') {
            let text = String::from_utf8_lossy(&self.buf[pos..pos + nl]).into_owned();
            let len: usize = match text.trim() {
                t if !t.is_empty() && t.len() <= 19 && t.bytes().all(|b| b.is_ascii_digit()) => {
                    t.parse().map_err(|_| RecordIoError::BadLength(text.clone()))?
                }
                _ => return Err(RecordIoError::BadLength(text)),
            };
            if let Some(max) = self.max_record.filter(|m| len > *m) {
                return Err(RecordIoError::TooLarge(len, max));
            }
            let start = pos + nl + 1;
            if self.buf.len() < start + len {
                break;
            }
            records.push(self.buf[start..start + len].to_vec());
            pos = start + len;
        }
        if pos == 0 && self.buf.len() > 20 && !self.buf[..21].contains(&b'\n') {
            let text = String::from_utf8_lossy(&self.buf[..21]).into_owned();
            return Err(RecordIoError::BadLength(text));
        }
        self.buf.drain(..pos);
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_its_byte_length_a_newline_and_itself() {
        assert_eq!(encode(br#"{"type":"HEARTBEAT"}"#), b"20\n{\"type\":\"HEARTBEAT\"}".to_vec());
        assert_eq!(encode("é".as_bytes()), b"2\n\xc3\xa9".to_vec());
    }

    #[test]
    fn records_split_anywhere_are_decoded_whole_and_in_order() {
        let mut wire = encode(b"first");
        wire.extend(encode(b""));
        wire.extend(encode(b"{\"a\":1}"));
        for split in 0..wire.len() {
            let mut d = Decoder::default();
            let mut got = d.feed(&wire[..split]).unwrap();
            got.extend(d.feed(&wire[split..]).unwrap());
            assert_eq!(got, vec![b"first".to_vec(), Vec::new(), b"{\"a\":1}".to_vec()], "{split}");
        }
    }

    #[test]
    fn a_length_that_is_not_a_number_is_refused() {
        assert!(matches!(Decoder::default().feed(b"x1\nabc"), Err(RecordIoError::BadLength(_))));
        assert!(matches!(Decoder::default().feed(&[b'9'; 40]), Err(RecordIoError::BadLength(_))));
    }

    #[test]
    fn a_record_over_the_limit_is_refused_before_it_arrives() {
        assert_eq!(Decoder::with_limit(10).feed(b"11\n"), Err(RecordIoError::TooLarge(11, 10)));
    }
}

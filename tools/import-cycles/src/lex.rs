//! A tokenizer just good enough to find paths: comments are dropped, string, character and
//! byte literals become one opaque token each (a string keeps its text for `#[path = "…"]`),
//! lifetimes and numbers become [`Tok::Other`].

/// One token of a Rust source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier or keyword; `true` when it was written as a raw identifier (`r#name`),
    /// whose text here has no `r#`.
    Ident(String, bool),
    /// A string literal of any kind (plain, raw, byte, C), with its text between the quotes
    /// as written (escapes are not processed).
    Str(String),
    /// `::`.
    PathSep,
    /// Any other single punctuation character.
    Punct(char),
    /// A number, a character or byte literal, or a lifetime.
    Other,
}

/// A token and the 1-based line it starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) line: usize,
}

impl Token {
    /// Whether this is the plain (not raw) identifier or keyword `word`.
    pub(crate) fn is_keyword(&self, word: &str) -> bool {
        matches!(&self.tok, Tok::Ident(name, false) if name == word)
    }

    /// Whether this is the punctuation character `c`.
    pub(crate) fn is_punct(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    out: Vec<Token>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// Moves one character on, counting lines.
    fn bump(&mut self) {
        if self.peek(0) == Some('\n') {
            self.line += 1;
        }
        self.pos += 1;
    }

    fn push(&mut self, tok: Tok, line: usize) {
        self.out.push(Token { tok, line });
    }

    fn line_comment(&mut self) {
        while let Some(c) = self.peek(0) {
            if c == '\n' {
                break;
            }
            self.bump();
        }
    }

    /// A block comment, nested ones included; the opening `/*` is at the cursor.
    fn block_comment(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            if c == '/' && self.peek(1) == Some('*') {
                depth += 1;
                self.bump();
                self.bump();
            } else if c == '*' && self.peek(1) == Some('/') {
                depth -= 1;
                self.bump();
                self.bump();
                if depth == 0 {
                    return;
                }
            } else {
                self.bump();
            }
        }
    }

    /// A quoted string with escapes; the cursor is on the opening `"`.
    fn string(&mut self, line: usize) {
        self.bump();
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => {
                    self.bump();
                    self.bump();
                }
                '"' => break,
                _ => self.bump(),
            }
        }
        let text: String = self.chars[start..self.pos.min(self.chars.len())].iter().collect();
        self.bump();
        self.push(Tok::Str(text), line);
    }

    /// A raw string; the cursor is on the first `#` or on the `"`, and `hashes` `#`s follow.
    fn raw_string(&mut self, hashes: usize, line: usize) {
        for _ in 0..hashes {
            self.bump();
        }
        self.bump(); // the opening quote
        let start = self.pos;
        while self.pos < self.chars.len() {
            if self.peek(0) == Some('"') && (1..=hashes).all(|k| self.peek(k) == Some('#')) {
                let text: String = self.chars[start..self.pos].iter().collect();
                for _ in 0..=hashes {
                    self.bump();
                }
                self.push(Tok::Str(text), line);
                return;
            }
            self.bump();
        }
        let text: String = self.chars[start..].iter().collect();
        self.push(Tok::Str(text), line);
    }

    /// A character literal or a lifetime (or loop label); the cursor is on the `'`.
    fn quote(&mut self, line: usize) {
        if self.peek(1) == Some('\\') {
            // An escaped character literal: `'\n'`, `'\''`, `'\u{1F600}'`.
            self.bump();
            self.bump();
            self.bump();
            while let Some(c) = self.peek(0) {
                self.bump();
                if c == '\'' {
                    break;
                }
            }
        } else if self.peek(2) == Some('\'') {
            // `'x'`
            self.bump();
            self.bump();
            self.bump();
        } else {
            // A lifetime: `'a`, `'static`, or a label.
            self.bump();
            while self.peek(0).is_some_and(is_ident_continue) {
                self.bump();
            }
        }
        self.push(Tok::Other, line);
    }

    /// An identifier, a keyword, a raw identifier, or a prefixed literal (`b"…"`, `r#"…"#`,
    /// `b'x'`, `c"…"`); the cursor is on the first character.
    fn word(&mut self, line: usize) {
        let start = self.pos;
        while self.peek(0).is_some_and(is_ident_continue) {
            self.bump();
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        match (word.as_str(), self.peek(0)) {
            ("b" | "c", Some('"')) => return self.string(line),
            ("r" | "br" | "cr", Some('"')) => return self.raw_string(0, line),
            ("b", Some('\'')) => return self.quote(line),
            ("r" | "br" | "cr", Some('#')) => {
                let mut hashes = 0;
                while self.peek(hashes) == Some('#') {
                    hashes += 1;
                }
                if self.peek(hashes) == Some('"') {
                    return self.raw_string(hashes, line);
                }
                if word == "r" && hashes == 1 && self.peek(1).is_some_and(is_ident_start) {
                    self.bump();
                    let start = self.pos;
                    while self.peek(0).is_some_and(is_ident_continue) {
                        self.bump();
                    }
                    let name: String = self.chars[start..self.pos].iter().collect();
                    return self.push(Tok::Ident(name, true), line);
                }
            }
            _ => {}
        }
        self.push(Tok::Ident(word, false), line);
    }

    fn run(mut self) -> Vec<Token> {
        while let Some(c) = self.peek(0) {
            let line = self.line;
            match c {
                c if c.is_whitespace() => self.bump(),
                '/' if self.peek(1) == Some('/') => self.line_comment(),
                '/' if self.peek(1) == Some('*') => self.block_comment(),
                '"' => self.string(line),
                '\'' => self.quote(line),
                c if is_ident_start(c) => self.word(line),
                c if c.is_ascii_digit() => {
                    while self.peek(0).is_some_and(is_ident_continue) {
                        self.bump();
                    }
                    self.push(Tok::Other, line);
                }
                ':' if self.peek(1) == Some(':') => {
                    self.bump();
                    self.bump();
                    self.push(Tok::PathSep, line);
                }
                c => {
                    self.bump();
                    self.push(Tok::Punct(c), line);
                }
            }
        }
        self.out
    }
}

/// Splits `source` into tokens, without comments.
pub(crate) fn tokenize(source: &str) -> Vec<Token> {
    Lexer { chars: source.chars().collect(), pos: 0, line: 1, out: Vec::new() }.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<String> {
        tokenize(source)
            .into_iter()
            .filter_map(|t| match t.tok {
                Tok::Ident(name, _) => Some(name),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_and_literals_hide_their_contents() {
        let source = r####"
            // crate::a
            /* crate::b /* nested crate::c */ crate::d */
            /// crate::e
            let s = "crate::f \" crate::g";
            let r = r#"crate::h " crate::i"#;
            let b = b"crate::j";
            let br = br##"crate::k"#crate::l"##;
            let c = '"'; let d = '\''; let e = b'"'; let u = '\u{22}';
            keep
        "####;
        assert_eq!(
            idents(source),
            [
                "let", "s", "let", "r", "let", "b", "let", "br", "let", "c", "let", "d", "let",
                "e", "let", "u", "keep"
            ]
        );
    }

    #[test]
    fn lifetimes_raw_identifiers_and_lines() {
        let tokens = tokenize("fn f<'a>(x: &'a r#type)\n::x");
        assert!(tokens.iter().any(|t| t.tok == Tok::Ident("type".into(), true)));
        assert_eq!(tokens.last().unwrap().line, 2);
        assert_eq!(tokens[tokens.len() - 2].tok, Tok::PathSep);
    }
}

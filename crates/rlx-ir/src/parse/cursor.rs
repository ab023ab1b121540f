//! The lexical layer of the textual-IR parser: a cursor over the text that
//! reads words, numbers, strings and punctuation, and reports where it is.

use super::ParseError;

/// A position in the text plus the primitive readers.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

/// How a token is described in an error: the rest of its line, shortened.
fn describe(rest: &str) -> String {
    match rest.chars().next() {
        None => "end of input".into(),
        Some('\n') => "end of line".into(),
        Some(_) => {
            let line = rest.lines().next().unwrap_or("");
            let short: String = line.chars().take(24).collect();
            format!("`{short}`")
        }
    }
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor { text, pos: 0 }
    }

    /// The byte offset of the cursor.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// An error at byte offset `at` saying what was expected there.
    pub(crate) fn error_at(&self, at: usize, expected: impl Into<String>) -> ParseError {
        // Point at the token, not the spaces before it.
        let tail = &self.text[at..];
        let at = at + tail.len() - tail.trim_start_matches([' ', '\t']).len();
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ParseError::Syntax {
            line,
            column,
            expected: expected.into(),
            found: describe(&self.text[at..]),
        }
    }

    /// An error at the cursor.
    pub(crate) fn error(&self, expected: impl Into<String>) -> ParseError {
        self.error_at(self.pos, expected)
    }

    /// Skips spaces and tabs (never line breaks: they end statements).
    pub(crate) fn skip_spaces(&mut self) {
        let n = self.rest().len() - self.rest().trim_start_matches([' ', '\t']).len();
        self.pos += n;
    }

    /// The next character after spaces, not consumed.
    pub(crate) fn peek(&mut self) -> Option<char> {
        self.skip_spaces();
        self.rest().chars().next()
    }

    /// Consumes `token` (after spaces) if it is next.
    pub(crate) fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    /// Consumes `token` or fails naming it.
    pub(crate) fn expect(&mut self, token: &str) -> Result<(), ParseError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(format!("`{token}`")))
        }
    }

    /// Consumes `ch` if it is the very next character (no spaces skipped).
    pub(crate) fn eat_raw(&mut self, ch: char) -> bool {
        if self.rest().starts_with(ch) {
            self.pos += ch.len_utf8();
            true
        } else {
            false
        }
    }

    /// Consumes one line break (after spaces).
    pub(crate) fn newline(&mut self) -> Result<(), ParseError> {
        if self.eat("\r\n") || self.eat("\n") {
            Ok(())
        } else {
            Err(self.error("end of line"))
        }
    }

    /// Skips blank lines and `#` comment lines (the statistics
    /// `inspect_mir` appends); true at the end of the text.
    pub(crate) fn skip_blank_and_comments(&mut self) -> bool {
        loop {
            self.pos += self.rest().len() - self.rest().trim_start().len();
            if !self.rest().starts_with('#') {
                return self.rest().is_empty();
            }
            self.rest_of_line();
        }
    }

    /// Reads characters while `keep` holds.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        self.skip_spaces();
        let rest = self.rest();
        let n = rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    /// A mnemonic-like word: letters, digits, `_`, `.` and `+`.
    pub(crate) fn word(&mut self, what: &str) -> Result<&'a str, ParseError> {
        let at = self.pos;
        let w = self.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+'));
        if w.is_empty() {
            self.pos = at;
            return Err(self.error(what));
        }
        Ok(w)
    }

    /// A raw number token (digits, signs, `.`, exponents, `inf`, `NaN`).
    pub(crate) fn number_token(&mut self) -> &'a str {
        self.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))
    }

    /// An unsigned integer.
    pub(crate) fn usize(&mut self, what: &str) -> Result<usize, ParseError> {
        self.skip_spaces();
        let at = self.pos;
        let t = self.take_while(|c| c.is_ascii_digit());
        t.parse().map_err(|_| {
            self.error_at(
                at,
                format!("{what} (an unsigned integer that fits in usize)"),
            )
        })
    }

    /// A signed 64-bit integer.
    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, ParseError> {
        self.skip_spaces();
        let at = self.pos;
        let t = self.take_while(|c| c.is_ascii_digit() || c == '-');
        t.parse()
            .map_err(|_| self.error_at(at, format!("{what} (an integer that fits in i64)")))
    }

    /// A float as Rust prints it (`1.5`, `1e-5`, `-0`, `inf`, `NaN`).
    pub(crate) fn f64(&mut self, what: &str) -> Result<f64, ParseError> {
        self.skip_spaces();
        let at = self.pos;
        let t = self.number_token();
        t.parse()
            .map_err(|_| self.error_at(at, format!("{what} (a number)")))
    }

    /// `true` or `false`.
    pub(crate) fn bool(&mut self, what: &str) -> Result<bool, ParseError> {
        if self.eat("true") {
            Ok(true)
        } else if self.eat("false") {
            Ok(false)
        } else {
            Err(self.error(format!("{what} (`true` or `false`)")))
        }
    }

    /// A string as Rust's `{:?}` writes it: quoted, with `\"`, `\\`, `\n`,
    /// `\r`, `\t`, `\0`, `\'` and `\u{..}` escapes.
    pub(crate) fn string(&mut self, what: &str) -> Result<String, ParseError> {
        self.skip_spaces();
        let start = self.pos;
        if !self.rest().starts_with('"') {
            return Err(self.error(format!("{what} (a quoted string)")));
        }
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\n' => break,
                '\\' => {
                    let esc_at = start + i;
                    let bad = |s: &Self| s.error_at(esc_at, "a string escape");
                    match chars.next().map(|p| p.1) {
                        Some('"') => out.push('"'),
                        Some('\\') => out.push('\\'),
                        Some('\'') => out.push('\''),
                        Some('n') => out.push('\n'),
                        Some('r') => out.push('\r'),
                        Some('t') => out.push('\t'),
                        Some('0') => out.push('\0'),
                        Some('u') => {
                            if chars.next().map(|p| p.1) != Some('{') {
                                return Err(bad(self));
                            }
                            let mut hex = String::new();
                            for (_, h) in chars.by_ref() {
                                if h == '}' {
                                    break;
                                }
                                hex.push(h);
                            }
                            let c = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or_else(|| bad(self))?;
                            out.push(c);
                        }
                        _ => return Err(bad(self)),
                    }
                }
                c => out.push(c),
            }
        }
        Err(self.error_at(start, format!("{what} (a string closed on its line)")))
    }

    /// The rest of the line (not the line break), consumed.
    pub(crate) fn rest_of_line(&mut self) -> &'a str {
        let rest = self.rest();
        let n = rest.find(['\n', '\r']).unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    /// `[item, item, ...]` with `item` read by `read`.
    pub(crate) fn list<T>(
        &mut self,
        mut read: impl FnMut(&mut Self) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        self.expect("[")?;
        let mut out = Vec::new();
        if self.eat("]") {
            return Ok(out);
        }
        loop {
            out.push(read(self)?);
            if self.eat("]") {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }
}

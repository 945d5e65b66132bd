//! Tokens of the text format.

use crate::ast::Span;
use crate::syntax::ParseError;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier (letters, digits, `_`; not starting with a digit).
    Ident(String),
    /// An integer literal.
    Int(i64),
    /// A float literal, as written.
    Float(String),
    /// Punctuation or operator.
    Sym(&'static str),
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token is described in "expected ..., found ..." messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(s) => format!("`{s}`"),
            Tok::Sym(s) => format!("`{s}`"),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// A token with its span.
#[derive(Clone, Debug)]
pub struct Token {
    /// Kind.
    pub tok: Tok,
    /// Where.
    pub span: Span,
}

const SYMS: [&str; 31] = [
    "=>", "->", "..", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", ",", ":", "=", ".", "$", "@", "+", "-",
    "*", "/", "%", "<", ">", "!", "\\", "{", "}", ";",
];

/// Splits `src` into tokens; comments (`//` to the end of the line) are skipped.
pub fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[start..i].to_string()), span: Span { start, end: i } });
            continue;
        }
        if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let mut is_float = false;
            // After `.` a number is a tuple component (`t.0.1`), never a float; a fraction needs a
            // digit after the dot, so that `1..8` still lexes.
            let after_dot = matches!(out.last(), Some(Token { tok: Tok::Sym("."), .. }));
            if !after_dot && i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                is_float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if !after_dot && i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text = &src[start..i];
            let span = Span { start, end: i };
            let tok = if is_float {
                Tok::Float(text.to_string())
            } else {
                Tok::Int(text.parse().map_err(|_| ParseError::new(span, format!("integer `{text}` is too large")))?)
            };
            out.push(Token { tok, span });
            continue;
        }
        match SYMS.iter().find(|s| src[i..].starts_with(**s)) {
            Some(s) => {
                i += s.len();
                out.push(Token { tok: Tok::Sym(s), span: Span { start, end: i } });
            }
            None => {
                let ch = src[i..].chars().next().unwrap_or('?');
                let span = Span { start, end: i + ch.len_utf8() };
                return Err(ParseError::new(span, format!("unexpected character `{}`", ch.escape_debug())));
            }
        }
    }
    out.push(Token { tok: Tok::Eof, span: Span { start: src.len(), end: src.len() } });
    Ok(out)
}

//! The text format: lexer, parser, macro expansion and elaboration to the node arena, and the
//! canonical printer. The format is documented in `docs/language.md`.

mod elab;
mod lexer;
mod parser;
mod printer;
mod surface;

pub use printer::print;

use crate::ast::{Program, Span};
use surface::StaticKind;

/// A syntax or name-resolution error, with the span it points at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// Where.
    pub span: Span,
    /// What went wrong, e.g. "expected `)`, found `,`".
    pub message: String,
    /// Extra help (the signature of the primitive involved, ...).
    pub notes: Vec<String>,
}

impl ParseError {
    pub(crate) fn new(span: Span, message: impl Into<String>) -> Self {
        ParseError { span, message: message.into(), notes: Vec::new() }
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Self {
        let note = note.into();
        if !note.is_empty() && !self.notes.contains(&note) {
            self.notes.push(note);
        }
        self
    }
}

/// Words that cannot name anything.
pub(crate) const KEYWORDS: [&str; 8] = ["def", "size", "fun", "let", "in", "o", "true", "false"];

/// Parses a whole file into a program (unchecked; see [`crate::check`]).
pub fn parse(src: &str) -> Result<Program, ParseError> {
    let toks = lexer::lex(src)?;
    let file = parser::Parser::new(&toks).file()?;
    elab::elaborate(&file)
}

/// The macros `mapND2`, `zipND3`, ...: base name and dimension count.
pub(crate) fn macro_parts(name: &str) -> Option<(&str, usize)> {
    for base in ["mapND", "zipND", "joinND", "slideND", "padND", "padClampND"] {
        if let Some(rest) = name.strip_prefix(base) {
            if let Ok(n @ 1..=4) = rest.parse::<usize>() {
                return Some((base, n));
            }
        }
    }
    None
}

/// Static arguments of a primitive or macro, or `None` when `name` is not one.
pub(crate) fn prim_statics(name: &str) -> Option<Vec<StaticKind>> {
    use StaticKind::*;
    if let Some((base, n)) = macro_parts(name) {
        return Some(match base {
            "slideND" => vec![Size; 2 * n],
            "padND" => vec![Size, Size, Lit],
            "padClampND" => vec![Size, Size],
            _ => vec![],
        });
    }
    if crate::ast::BinOp::ALL.iter().any(|o| o.name() == name) || crate::ast::UnOp::ALL.iter().any(|o| o.name() == name)
    {
        return Some(vec![]);
    }
    Some(match name {
        "map" | "mapSeq" | "mapVec" | "reduce" | "reduceSeq" | "zip" | "join" | "transpose" | "toGlobal"
        | "toLocal" | "toPrivate" | "asScalar" | "select" | "f32" | "i32" => vec![],
        "mapGlb" | "mapWrg" | "mapLcl" | "get" => vec![Int],
        "split" | "at" | "asVector" | "vectorFromScalar" => vec![Size],
        "slide" | "padClamp" => vec![Size, Size],
        "pad" => vec![Size, Size, Lit],
        _ => return None,
    })
}

/// True for the primitives and macros that accept a `@label`.
pub(crate) fn is_map_name(name: &str) -> bool {
    matches!(name, "map" | "mapSeq" | "mapVec" | "mapGlb" | "mapWrg" | "mapLcl") || name.starts_with("mapND")
}

/// A one-line signature of a primitive, shown with errors about its use.
pub(crate) fn signature_note(name: &str) -> String {
    let sig = match macro_parts(name).map(|(b, _)| b).unwrap_or(name) {
        "map" | "mapSeq" | "mapVec" => "map(f, xs): [T]n -> [U]n  for f: T -> U",
        "mapGlb" | "mapWrg" | "mapLcl" => "mapGlb(d, f, xs) with d in 0..2: [T]n -> [U]n  for f: T -> U",
        "reduce" | "reduceSeq" => "reduce(f, init, xs): [T]n -> A  for init: A, f: A -> T -> A",
        "zip" => "zip(a, b, ...): [T]n, [U]n, ... -> [(T, U, ...)]n",
        "split" => "split(m, xs): [T]n -> [[T]m](n/m)",
        "join" => "join(xs): [[T]m]n -> [T](n*m)",
        "transpose" => "transpose(xs): [[T]m]n -> [[T]n]m",
        "slide" => "slide(size, step, xs): [T]n -> [[T]size]((n-size)/step+1)",
        "pad" => "pad(left, right, value, xs): [T]n -> [T](left+n+right)",
        "padClamp" => "padClamp(left, right, xs): [T]n -> [T](left+n+right)",
        "at" => "at(i, xs): [T]n -> T",
        "get" => "get(i, t) or t.i: (T0, T1, ...) -> Ti",
        "asVector" => "asVector(w, xs): [f32]n -> [f32xw](n/w)",
        "asScalar" => "asScalar(xs): [f32xw]n -> [f32](n*w)",
        "vectorFromScalar" => "vectorFromScalar(w, x): f32 -> f32xw  (every lane is x)",
        "toGlobal" => "toGlobal(e): T -> T  where e is a map or reduce",
        "toLocal" => "toLocal(e): T -> T  where e is a map or reduce",
        "toPrivate" => "toPrivate(e): T -> T  where e is a map or reduce",
        "mapND" => "mapNDk(f, xs): applies f at depth k",
        "zipND" => "zipNDk(a, b, ...): zips k dimensions",
        "joinND" => "joinNDk(xs): flattens the k outer dimensions",
        "slideND" => "slideNDk(size1, step1, ..., sizek, stepk, xs): k-dimensional sliding windows",
        "padND" => "padNDk(left, right, value, xs): pads the k outer dimensions",
        "padClampND" => "padClampNDk(left, right, xs): pads the k outer dimensions by clamping",
        _ => return String::new(),
    };
    format!("signature: {sig}")
}

#[cfg(test)]
mod tests;

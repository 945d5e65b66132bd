//! Rendering of errors against their source: `file:line:col`, the line, a caret, and notes.

use crate::ast::Span;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::NoColor, Config};

/// An error that points into the source.
pub trait Diagnose {
    /// Where, if the error has a place in the source.
    fn span(&self) -> Option<Span>;
    /// What went wrong.
    fn message(&self) -> String;
    /// Extra help lines.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Diagnose for crate::syntax::ParseError {
    fn span(&self) -> Option<Span> {
        Some(self.span)
    }
    fn message(&self) -> String {
        self.message.clone()
    }
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

impl Diagnose for crate::check::TypeError {
    fn span(&self) -> Option<Span> {
        (self.span != Span::default()).then_some(self.span)
    }
    fn message(&self) -> String {
        self.message.clone()
    }
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

/// Renders an error as text (no colours): `error: ...`, then `┌─ file:line:col`, the source
/// line and a caret under the span, then the notes.
pub fn render(file_name: &str, source: &str, err: &dyn Diagnose) -> String {
    let file = SimpleFile::new(file_name, source);
    let mut d = Diagnostic::error().with_message(err.message());
    if let Some(sp) = err.span() {
        let start = sp.start.min(source.len());
        let end = sp.end.clamp(start, source.len());
        d = d.with_labels(vec![Label::primary((), start..end)]);
    }
    d = d.with_notes(err.notes());
    let mut out = NoColor::new(Vec::new());
    let config = Config::default();
    if term::emit(&mut out, &config, &file, &d).is_err() {
        return format!("error: {}", err.message());
    }
    String::from_utf8_lossy(&out.into_inner()).into_owned()
}

/// `line:col` (1-based) of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |i| offset - i - 1) + 1;
    (line, col)
}

impl Diagnose for crate::interp::EvalError {
    fn span(&self) -> Option<Span> {
        crate::interp::EvalError::span(self)
    }
    fn message(&self) -> String {
        self.to_string()
    }
}

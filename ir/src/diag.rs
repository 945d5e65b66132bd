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
    render_as(Diagnostic::error(), file_name, source, err)
}

/// [`render`] of something that is not an error: `warning: ...`.
pub fn render_warning(file_name: &str, source: &str, w: &dyn Diagnose) -> String {
    render_as(Diagnostic::warning(), file_name, source, w)
}

fn render_as(d: Diagnostic<()>, file_name: &str, source: &str, err: &dyn Diagnose) -> String {
    let file = SimpleFile::new(file_name, source);
    let mut d = d.with_message(err.message());
    let mut notes = Vec::new();
    if let Some(sp) = err.span() {
        let start = floor_char(source, sp.start.min(source.len()));
        let end = floor_char(source, sp.end.clamp(start, source.len()));
        let first = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let last = source[end..].find('\n').map_or(source.len(), |i| end + i);
        match last - first <= MAX_SHOWN {
            true => d = d.with_labels(vec![Label::primary((), start..end)]),
            false => notes.push(excerpt(file_name, source, start, end)),
        }
    }
    notes.extend(err.notes());
    d = d.with_notes(notes);
    let mut out = NoColor::new(Vec::new());
    let config = Config::default();
    if term::emit(&mut out, &config, &file, &d).is_err() {
        let what = if d.severity == codespan_reporting::diagnostic::Severity::Error { "error" } else { "warning" };
        return format!("{what}: {}", err.message());
    }
    String::from_utf8_lossy(&out.into_inner()).into_owned()
}

/// The most source text shown under an error: a span on longer lines (a program generated on
/// one line) is shown by [`excerpt`], not echoed whole.
const MAX_SHOWN: usize = 2000;

/// The largest char boundary of `s` at or before `i`.
fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where a span on a long line is, and up to 60 characters either side of its start with a
/// caret under it.
fn excerpt(file_name: &str, source: &str, start: usize, end: usize) -> String {
    const SIDE: usize = 60;
    let (line, col) = line_col(source, start);
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..].find('\n').map_or(source.len(), |i| start + i);
    let from = floor_char(source, start.saturating_sub(SIDE).max(line_start));
    let to = floor_char(source, (start + SIDE).min(line_end));
    let before = if from > line_start { "..." } else { "" };
    let after = if to < line_end { "..." } else { "" };
    let shown = &source[from..to];
    let pad = before.len() + source[from..start].chars().count();
    let marks = source[start..floor_char(source, end.min(to))].chars().count().max(1);
    format!(
        "at {file_name}:{line}:{col} (the line is too long to show whole):\n{before}{shown}{after}\n{}{}",
        " ".repeat(pad),
        "^".repeat(marks)
    )
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

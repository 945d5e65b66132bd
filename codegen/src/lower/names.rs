//! C names: every buffer and loop variable of a kernel gets a distinct identifier that is no
//! keyword or built-in of OpenCL C or CUDA, derived from the program's names (parameters,
//! binders, map labels).

use super::Lower;
use mapsat_ir::ast::MapKind;

/// Keywords and built-ins a name must not take (reserved in [`Lower`]'s name set from the start).
pub(super) const RESERVED: &[&str] = &[
    "int", "float", "double", "char", "void", "bool", "for", "if", "else", "while", "do", "return", "const",
    "restrict", "kernel", "global", "local", "private", "constant", "half", "long", "short", "unsigned", "signed",
    "struct", "union", "switch", "case", "break", "continue", "default", "sizeof", "static", "inline", "auto", "goto",
    "enum", "extern", "register", "typedef", "volatile", "min", "max", "clamp", "exp", "log",
];

/// A C identifier for `s`: other characters become `_`, a leading digit gets a `v`, and the
/// name of a built-in function a `_kernel` suffix.
pub(super) fn sanitize(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'v');
    }
    // A kernel named like a built-in function of OpenCL C or CUDA (`dot`) does not build.
    const BUILTINS: [&str; 16] = [
        "dot",
        "cross",
        "length",
        "distance",
        "normalize",
        "min",
        "max",
        "clamp",
        "mix",
        "step",
        "sign",
        "abs",
        "exp",
        "log",
        "sqrt",
        "pow",
    ];
    if BUILTINS.contains(&out.as_str()) {
        out.push_str("_kernel");
    }
    out
}

/// The display name of a map: `mapGlb(0)@A`, `mapSeq@B`.
pub(super) fn map_name(kind: MapKind, label: &str) -> String {
    match kind.dim() {
        Some(d) => format!("{}({d})@{label}", kind.name()),
        None => format!("{}@{label}", kind.name()),
    }
}

impl Lower<'_> {
    /// A fresh C name based on `base`, distinct from every name given out so far.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut k = 1;
        while self.names.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }
}

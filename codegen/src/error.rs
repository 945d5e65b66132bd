//! Errors of code generation.

use mapsat_ir::ast::Span;
use mapsat_ir::check::TypeError;
use mapsat_ir::diag::Diagnose;

/// Why a program cannot be lowered to a kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodegenErrorKind {
    /// The program does not type-check at the given sizes.
    #[error("{0}")]
    Type(TypeError),
    /// A size variable has no value.
    #[error("size `{0}` has no value: give it with --size {0}=VALUE")]
    MissingSize(String),
    /// A vector width written as a size variable has a value that is no vector width.
    #[error("{0}")]
    Width(String),
    /// A `map` or `reduce` that is still abstract.
    #[error("`{map}` is not mapped: {reason}")]
    Unmapped {
        /// The map, as `map@A`.
        map: String,
        /// What to do.
        reason: String,
    },
    /// `toLocal` without an enclosing `mapWrg`, or in a place where it would be shared wrongly.
    #[error("`toLocal` around `{map}` {reason}")]
    LocalMemory {
        /// The map or reduce it wraps.
        map: String,
        /// What is wrong.
        reason: String,
    },
    /// The maps do not fit one launch configuration.
    #[error("inconsistent launch shape at `{map}`: {reason}")]
    Launch {
        /// The map.
        map: String,
        /// What is wrong.
        reason: String,
    },
    /// A barrier would be needed inside a loop not all threads of a work group run equally often.
    #[error("`{map}` writes memory that other threads read next, so a barrier must follow it, but it is inside `{loop_}`, whose trip count differs between the threads of a work group ({reason}); choose a local size that divides its extent")]
    DivergentBarrier {
        /// The writing map.
        map: String,
        /// The divergent loop.
        loop_: String,
        /// Trip counts.
        reason: String,
    },
    /// Threads of different work groups communicate within one kernel.
    #[error("`{writer}` writes a global buffer that is read again by other work groups in the same kernel; that needs a grid-wide synchronization (split the program into two kernels)")]
    GridSync {
        /// The writing map.
        writer: String,
    },
    /// Every thread of a launched dimension writes the same elements of a global temporary.
    #[error("`{writer}` writes `{buffer}`, a global buffer read again in the kernel, in every thread of dimension {dim} alike (no parallel map of that dimension around it): the threads would write the same elements at once, a data race; map it over that dimension too")]
    RacyWrite {
        /// The innermost loop around the write.
        writer: String,
        /// The buffer.
        buffer: String,
        /// The dimension.
        dim: u8,
    },
    /// A work-group size given for a kernel without a parallel map (one work item runs it).
    #[error("the kernel has no parallel map, so one work item runs it: it takes no work-group size (local size {0:?} given)")]
    OneWorkItem(Vec<i64>),
    /// A work-group size with work items in a dimension no parallel map uses.
    #[error("local size {local:?} has {items} work items in dimension {dim}, which no parallel map uses (each would compute the same values)")]
    IdleDimension {
        /// The work-group size given.
        local: Vec<i64>,
        /// The dimension.
        dim: usize,
        /// Its work items.
        items: i64,
    },
    /// A construct this code generator does not support yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The launch shape exceeds the target's limits (CUDA's grid and block dimensions, a
    /// device profile's work-item sizes).
    #[error("the launch does not fit the target: {0}")]
    LaunchLimit(String),
    /// A bug in the code generator (reported, never a panic).
    #[error("internal error in code generation: {0}")]
    Internal(String),
}

/// A code generation error with the source span it points at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct CodegenError {
    /// What went wrong.
    pub kind: CodegenErrorKind,
    /// Where, if known.
    pub span: Option<Span>,
}

impl CodegenError {
    /// An error at a span.
    pub fn new(kind: CodegenErrorKind, span: Option<Span>) -> Self {
        CodegenError { kind, span }
    }
}

impl From<CodegenErrorKind> for CodegenError {
    fn from(kind: CodegenErrorKind) -> Self {
        CodegenError { kind, span: None }
    }
}

impl Diagnose for CodegenError {
    fn span(&self) -> Option<Span> {
        match &self.kind {
            CodegenErrorKind::Type(t) => (t.span != Span::default()).then_some(t.span),
            _ => self.span.filter(|s| *s != Span::default()),
        }
    }
    fn message(&self) -> String {
        match &self.kind {
            CodegenErrorKind::Type(t) => t.message.clone(),
            k => k.to_string(),
        }
    }
    fn notes(&self) -> Vec<String> {
        match &self.kind {
            CodegenErrorKind::Type(t) => t.notes.clone(),
            _ => Vec::new(),
        }
    }
}

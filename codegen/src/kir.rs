//! The kernel IR shared by the OpenCL and CUDA printers: buffers, statements and expressions
//! with every size a constant and every index simplified.

use crate::index::Index;
use mapsat_ir::ast::{BinOp, Lit, UnOp};
use mapsat_ir::ScalarKind;
use serde::{Deserialize, Serialize};

/// Handle of a buffer in [`Kernel::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufId(pub usize);

/// Handle of a loop variable: its name is in [`Kernel::vars`], indices refer to it by handle
/// ([`crate::index::Atom::Var`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarId(pub u32);

impl VarId {
    /// Position in [`Kernel::vars`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// `v<n>`: how a variable prints without the kernel's names.
impl std::fmt::Display for VarId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// Handle of a barrier slot: a place where lowering may need a barrier, decided once the whole
/// kernel is lowered (see [`Stmt::BarrierSlot`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotId(pub usize);

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    /// Global memory (a kernel argument).
    Global,
    /// Local / shared memory of a work group.
    Local,
    /// Private memory of a thread (registers).
    Private,
}

/// What a buffer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A program parameter (read only), by position.
    Input,
    /// The program's result.
    Output,
    /// Intermediate storage.
    Temp,
}

/// A buffer: a program parameter, the result, or an allocation.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// C name.
    pub name: String,
    /// Address space.
    pub space: Space,
    /// What it is for.
    pub role: Role,
    /// Scalar kind of the elements.
    pub kind: ScalarKind,
    /// Vector width of an element (1 for scalars).
    pub width: u32,
    /// Array lengths, outermost first (empty for a single value).
    pub dims: Vec<i64>,
    /// Program parameter index for inputs.
    pub param: Option<usize>,
    /// Passed by value (a scalar parameter).
    pub by_value: bool,
}

impl Buffer {
    /// Number of elements (saturating: the checker bounds every value at 2^62 bytes, and a
    /// count beyond that is refused by [`crate::lower`], never wrapped).
    pub fn elems(&self) -> i64 {
        self.dims.iter().fold(1i64, |a, d| a.saturating_mul(*d))
    }

    /// Number of scalars (saturating).
    pub fn scalars(&self) -> i64 {
        self.elems().saturating_mul(self.width as i64)
    }

    /// Size in bytes (saturating).
    pub fn bytes(&self) -> u64 {
        (self.scalars().max(0) as u64).saturating_mul(self.kind.bytes())
    }

    /// Global and local buffers are arrays of scalars (vectors are loaded with `vloadN`);
    /// private ones hold their element type directly.
    pub fn scalar_layout(&self) -> bool {
        self.space != Space::Private
    }
}

/// A read or written memory location.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The buffer.
    pub buf: BufId,
    /// Element index (in scalars for global/local buffers, in elements for private ones).
    pub index: Index,
    /// Number of consecutive scalars accessed as one vector (1: a scalar or a whole element).
    pub width: u32,
    /// A single lane of a private vector element.
    pub lane: Option<u32>,
}

/// A value expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Lit),
    /// A scalar broadcast to every lane of a vector of this width.
    Splat(Box<Expr>, u32),
    /// An integer index used as a value.
    Int(Index),
    /// A memory read.
    Load(Place),
    /// A binary operator of the IR.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// A unary function of the IR.
    Un(UnOp, Box<Expr>),
    /// `c ? a : b`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Conversion.
    Cast(ScalarKind, Box<Expr>),
    /// One lane of a vector value.
    Lane(Box<Expr>, u32),
    /// A vector from its lanes.
    Vector(ScalarKind, Vec<Expr>),
    /// `lo <= e && e < hi`, for `pad`; `i64::MIN` / `i64::MAX` leave that side untested.
    InRange(Index, i64, i64),
}

/// How a loop over a map's indices is executed by the threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    /// `for (v = 0; v < n; v++)`.
    Seq,
    /// Unrolled lanes of `mapVec`.
    Vec,
    /// Over global ids.
    Global(u8),
    /// Over work-group ids.
    Group(u8),
    /// Over local ids.
    Local(u8),
}

/// How many iterations each thread runs, known from the launch shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trips {
    /// A stride loop.
    Loop,
    /// Exactly one iteration per thread: no loop.
    One,
    /// At most one: `if (v < n)`.
    AtMostOne,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `// text`.
    Comment(String),
    /// A private variable or array, with an optional initial value (variables only).
    Decl(BufId, Option<Expr>),
    /// A memory write.
    Store(Place, Expr),
    /// A loop.
    Loop {
        /// Loop variable.
        var: VarId,
        /// How its indices are distributed.
        kind: LoopKind,
        /// Number of indices.
        extent: i64,
        /// Stride between a thread's indices (number of threads in that dimension, or 1).
        stride: i64,
        /// Shape of the per-thread iteration.
        trips: Trips,
        /// What it came from (`mapGlb@A`).
        origin: String,
        /// The body.
        body: Vec<Stmt>,
    },
    /// `{ ... }`: a scope of its own (an unrolled iteration that declares names).
    Block(Vec<Stmt>),
    /// A place where a barrier may be needed (after a `mapLcl` loop that wrote shared memory):
    /// lowering turns it into a [`Stmt::Barrier`] if a later read needs one and drops it
    /// otherwise, so a finished kernel has none (the verifier checks it; the printers refuse it).
    BarrierSlot(SlotId),
    /// A work-group barrier with a local (false) or global (true) memory fence.
    Barrier {
        /// Fence global memory too.
        global: bool,
        /// Why it is there.
        reason: String,
    },
}

/// How a map of the program was lowered (see [`Kernel::maps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapLowering {
    /// A loop of this kind.
    Loop(LoopKind),
    /// A view: an unmapped map of a layout function, no loop.
    View,
}

/// Launch configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Number of dimensions used (1 to 3).
    pub dims: u32,
    /// Global size per dimension (total threads).
    pub global: [i64; 3],
    /// Work-group size per dimension.
    pub local: [i64; 3],
}

/// A lowered kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Entry point name.
    pub name: String,
    /// All buffers; kernel arguments are those in [`Kernel::args`].
    pub buffers: Vec<Buffer>,
    /// Kernel arguments in order (inputs, output, global temporaries).
    pub args: Vec<BufId>,
    /// Local-memory buffers, declared at kernel scope.
    pub locals: Vec<BufId>,
    /// The body.
    pub body: Vec<Stmt>,
    /// Names of the loop variables, by [`VarId`] (distinct C identifiers).
    pub vars: Vec<String>,
    /// The loop variables declared as 64-bit integers (those whose values can exceed
    /// 2^31 - 1); the others are `int`. Set by [`crate::width::assign`], with the widening of
    /// the index expressions ([`crate::index::Atom::Wide`]).
    pub wide_vars: std::collections::BTreeSet<VarId>,
    /// How each map of the program was lowered, by label, in the order first lowered; each
    /// pair once (a layout map is lowered at each access that reaches it). A map fused into
    /// another has disappeared from the program and is not listed.
    pub maps: Vec<(String, MapLowering)>,
    /// Launch configuration.
    pub launch: Launch,
    /// Floating-point operations of one run (each scalar op of a user function, times its trips).
    pub flops: u64,
    /// Size values the kernel was specialized for, sorted by name.
    pub sizes: mapsat_ir::Sizes,
}

impl Kernel {
    /// A buffer.
    pub fn buf(&self, id: BufId) -> &Buffer {
        &self.buffers[id.0]
    }

    /// The name of a loop variable (`v<n>` for a handle without one).
    pub fn var_name(&self, v: VarId) -> std::borrow::Cow<'_, str> {
        match self.vars.get(v.index()) {
            Some(n) => n.as_str().into(),
            None => v.to_string().into(),
        }
    }

    /// The variables of the loops of the body.
    pub fn loop_vars(&self) -> std::collections::BTreeSet<VarId> {
        struct Vars(std::collections::BTreeSet<VarId>);
        impl crate::visit::Visit for Vars {
            fn visit_stmt(&mut self, s: &Stmt) {
                if let Stmt::Loop { var, .. } = s {
                    self.0.insert(*var);
                }
                crate::visit::walk_stmt(self, s);
            }
        }
        let mut v = Vars(Default::default());
        crate::visit::Visit::visit_stmts(&mut v, &self.body);
        v.0
    }

    /// Total bytes of global (arguments), local (per work group) and private (per thread,
    /// arrays and variables) memory.
    pub fn memory(&self) -> MemoryTotals {
        let mut m = MemoryTotals::default();
        for b in &self.buffers {
            if b.by_value {
                continue;
            }
            match b.space {
                Space::Global => m.global_bytes = m.global_bytes.saturating_add(b.bytes()),
                Space::Local => m.local_bytes = m.local_bytes.saturating_add(b.bytes()),
                Space::Private => m.private_bytes = m.private_bytes.saturating_add(b.bytes()),
            }
        }
        m
    }
}

/// Bytes per address space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryTotals {
    /// Global memory: inputs, output and temporaries.
    pub global_bytes: u64,
    /// Local memory per work group.
    pub local_bytes: u64,
    /// Private memory per thread (upper bound: every private allocation counted once).
    pub private_bytes: u64,
}

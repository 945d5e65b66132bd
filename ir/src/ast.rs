//! The program representation: an arena of nodes, children before parents.
//!
//! Variables bound by lambdas and `let` are de Bruijn indices ([`Node::Var`]), program
//! parameters are positions ([`Node::Param`]), and every primitive is a constant
//! ([`Node::Prim`]) applied with curried [`Node::App`]. A program is therefore a term of a small
//! combinator language: converting it to an egg `RecExpr` (which also stores children before
//! parents) is one linear pass, and two alpha-equivalent programs have equal node arenas.
//!
//! Names of binders and source spans are kept beside the nodes ([`Meta`]): they are for people
//! and error messages, and are not part of a program's identity.

use crate::size::Size;
use crate::types::{ScalarKind, Type};
use std::fmt;

/// Index of a node in [`Program::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A byte range in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// A literal scalar. Floats are stored as bits so that nodes are `Eq`, `Ord` and `Hash`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lit {
    /// An `f32`, as its IEEE bits.
    F32(u32),
    /// An `i32`.
    I32(i32),
    /// A `bool`.
    Bool(bool),
}

impl Lit {
    /// An `f32` literal.
    pub fn f32(x: f32) -> Lit {
        Lit::F32(x.to_bits())
    }

    /// The literal's type.
    pub fn kind(self) -> ScalarKind {
        match self {
            Lit::F32(_) => ScalarKind::F32,
            Lit::I32(_) => ScalarKind::I32,
            Lit::Bool(_) => ScalarKind::Bool,
        }
    }
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Lit::F32(bits) => {
                let x = f32::from_bits(bits);
                if x.is_finite() && x == x.trunc() && x.abs() < 1e15 {
                    write!(f, "{x:.1}")
                } else {
                    // `{:?}` prints the shortest text that parses back to the same bits.
                    write!(f, "{x:?}")
                }
            }
            Lit::I32(x) => write!(f, "{x}"),
            Lit::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// How a `map` is executed. `Abstract` is the high-level `map`, whose mapping is still to be
/// chosen; all kinds have the same meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MapKind {
    /// `map`: not yet mapped.
    Abstract,
    /// `mapSeq`: a sequential loop in one thread.
    Seq,
    /// `mapGlb(d)`: over global thread ids in dimension `d`.
    Glb(u8),
    /// `mapWrg(d)`: over work-group ids in dimension `d`.
    Wrg(u8),
    /// `mapLcl(d)`: over local thread ids in dimension `d`.
    Lcl(u8),
    /// `mapVec`: over the lanes of a vector.
    Vec,
}

impl MapKind {
    /// The primitive's name in the text format (dimension excluded).
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Abstract => "map",
            MapKind::Seq => "mapSeq",
            MapKind::Glb(_) => "mapGlb",
            MapKind::Wrg(_) => "mapWrg",
            MapKind::Lcl(_) => "mapLcl",
            MapKind::Vec => "mapVec",
        }
    }

    /// The dimension of a parallel map.
    pub fn dim(self) -> Option<u8> {
        match self {
            MapKind::Glb(d) | MapKind::Wrg(d) | MapKind::Lcl(d) => Some(d),
            _ => None,
        }
    }
}

/// How `pad` fills the new elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PadMode {
    /// With a constant scalar (every scalar of a padded element).
    Constant(Lit),
    /// With the nearest element of the input.
    Clamp,
}

/// Address spaces a value can be written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressSpace {
    /// Global memory, visible to all threads.
    Global,
    /// Local (shared) memory of a work group.
    Local,
    /// Private memory (registers) of a thread.
    Private,
}

impl AddressSpace {
    /// The primitive placing a value in this address space.
    pub fn prim_name(self) -> &'static str {
        match self {
            AddressSpace::Global => "toGlobal",
            AddressSpace::Local => "toLocal",
            AddressSpace::Private => "toPrivate",
        }
    }
}

/// Binary scalar operators (also element-wise on vectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    /// All operators.
    pub const ALL: [BinOp; 15] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Mod,
        BinOp::Min,
        BinOp::Max,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::And,
        BinOp::Or,
    ];

    /// The operator's name as a function (`add`, `min`, ...).
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Mod => "mod",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }

    /// The infix symbol and its precedence (higher binds tighter), if the operator has one.
    pub fn infix(self) -> Option<(&'static str, u8)> {
        Some(match self {
            BinOp::Or => ("||", 1),
            BinOp::And => ("&&", 2),
            BinOp::Eq => ("==", 3),
            BinOp::Ne => ("!=", 3),
            BinOp::Lt => ("<", 3),
            BinOp::Le => ("<=", 3),
            BinOp::Gt => (">", 3),
            BinOp::Ge => (">=", 3),
            BinOp::Add => ("+", 4),
            BinOp::Sub => ("-", 4),
            BinOp::Mul => ("*", 5),
            BinOp::Div => ("/", 5),
            BinOp::Mod => ("%", 5),
            BinOp::Min | BinOp::Max => return None,
        })
    }

    /// True for `< <= > >= == !=`.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
    }

    /// True for `&&` and `||`.
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
}

/// Unary scalar functions (also element-wise on vectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum UnOp {
    Neg,
    Not,
    Abs,
    Exp,
    Log,
    Sqrt,
    Sin,
    Cos,
    Tanh,
    Floor,
}

impl UnOp {
    /// All operators.
    pub const ALL: [UnOp; 10] = [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Exp,
        UnOp::Log,
        UnOp::Sqrt,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tanh,
        UnOp::Floor,
    ];

    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
            UnOp::Exp => "exp",
            UnOp::Log => "log",
            UnOp::Sqrt => "sqrt",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tanh => "tanh",
            UnOp::Floor => "floor",
        }
    }

    /// True for functions defined on floats only.
    pub fn float_only(self) -> bool {
        matches!(self, UnOp::Exp | UnOp::Log | UnOp::Sqrt | UnOp::Sin | UnOp::Cos | UnOp::Tanh | UnOp::Floor)
    }
}

/// The width of a vector primitive: its number of lanes, written as a literal (`asVector(4, xs)`)
/// or as a size variable (`asVector(vw, xs)`, a tunable size like a tile size). `lanes` is the
/// variable's value at the program's defaults; [`crate::widths::specialize`] sets it at other
/// sizes, and every stage that takes sizes does so first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Width {
    /// The number of lanes (2, 3, 4, 8 or 16).
    pub lanes: u32,
    /// The size variable it was written as, if any.
    pub var: Option<String>,
}

impl Width {
    /// A literal width.
    pub fn lit(lanes: u32) -> Width {
        Width { lanes, var: None }
    }
}

/// A primitive. Static parameters (sizes, dimensions, labels) are part of the primitive; its
/// data and function arguments are given with [`Node::App`], one at a time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Prim {
    /// `map@label(f, xs)` and its low-level forms: `[T]n -> [U]n` for `f: T -> U`.
    Map {
        /// How it is executed.
        kind: MapKind,
        /// The map's stable name, unique in a program.
        label: String,
    },
    /// `reduce(f, init, xs)`: `A -> [T]n -> A` for `f: A -> T -> A`; `seq` for `reduceSeq`.
    Reduce {
        /// True for the low-level `reduceSeq`.
        seq: bool,
    },
    /// `zip(a1, ..., ak)`: arrays of one length to an array of k-tuples.
    Zip(u32),
    /// `split(m, xs)`: `[T]n -> [[T]m](n/m)`.
    Split(Size),
    /// `join(xs)`: `[[T]m]n -> [T](n*m)`.
    Join,
    /// `transpose(xs)`: `[[T]m]n -> [[T]n]m`.
    Transpose,
    /// `slide(size, step, xs)`: `[T]n -> [[T]size]((n-size)/step+1)`.
    Slide(Size, Size),
    /// `pad(l, r, v, xs)` / `padClamp(l, r, xs)`: `[T]n -> [T](l+n+r)`.
    Pad(Size, Size, PadMode),
    /// `at(i, xs)`: the element at a static index.
    At(Size),
    /// `get(i, t)` (written `t.i`): a tuple component.
    Get(u32),
    /// `(a, b, ...)`: a k-tuple.
    Tuple(u32),
    /// `toGlobal(e)`, `toLocal(e)`, `toPrivate(e)`: the map or reduce `e` writes there.
    To(AddressSpace),
    /// `asVector(w, xs)`: `[S]n -> [Sxw](n/w)`.
    AsVector(Width),
    /// `asScalar(xs)`: `[Sxw]n -> [S](n*w)`.
    AsScalar,
    /// `vectorFromScalar(w, x)`: `S -> Sxw`, the vector whose `w` lanes are all `x` (RISE's
    /// primitive of that name): how a scalar meets a vector in an arithmetic operation.
    VectorFromScalar(Width),
    /// A binary operator.
    Bin(BinOp),
    /// A unary function.
    Un(UnOp),
    /// `select(c, a, b)`.
    Select,
    /// `f32(x)`, `i32(x)`: conversion.
    Cast(ScalarKind),
}

impl Prim {
    /// Number of data and function arguments (after the static parameters).
    pub fn arity(&self) -> usize {
        match self {
            Prim::Map { .. } => 2,
            Prim::Reduce { .. } | Prim::Select => 3,
            Prim::Zip(k) | Prim::Tuple(k) => *k as usize,
            Prim::Bin(_) => 2,
            Prim::Split(_)
            | Prim::Join
            | Prim::Transpose
            | Prim::Slide(..)
            | Prim::Pad(..)
            | Prim::At(_)
            | Prim::Get(_)
            | Prim::To(_)
            | Prim::AsVector(_)
            | Prim::AsScalar
            | Prim::VectorFromScalar(_)
            | Prim::Un(_)
            | Prim::Cast(_) => 1,
        }
    }

    /// True for the *layout* primitives: those that only select or rearrange the elements of
    /// their arguments, computing no scalar and writing no memory: `split`, `join`,
    /// `transpose`, `slide`, `pad`/`padClamp` (the fill value is a literal of the primitive),
    /// `zip`, tuples (a tuple of values), `get`, `at` (a static index), `asVector` and
    /// `asScalar`. Not: `map` (a map is a layout map when its function applies only layout
    /// primitives and layout maps), `reduce`, `toGlobal`/`toLocal`/`toPrivate` (a copy into
    /// memory) and the scalar operations (`+`, `exp`, `select`, conversions...).
    ///
    /// The one classification its users share: the constraint analysis (a map whose function
    /// performs only these is a layout map: a view, given no mapping), code generation (such a
    /// map, left unmapped, is lowered as a view) and the interpreter (such a function is
    /// applied to a whole array at once; it also does so through `toX`, which changes no value).
    pub fn is_layout(&self) -> bool {
        match self {
            Prim::Split(_)
            | Prim::Join
            | Prim::Transpose
            | Prim::Slide(..)
            | Prim::Pad(..)
            | Prim::Zip(_)
            | Prim::Tuple(_)
            | Prim::Get(_)
            | Prim::At(_)
            | Prim::AsVector(_)
            | Prim::AsScalar => true,
            Prim::Map { .. }
            | Prim::Reduce { .. }
            | Prim::To(_)
            | Prim::Bin(_)
            | Prim::Un(_)
            | Prim::Select
            | Prim::VectorFromScalar(_)
            | Prim::Cast(_) => false,
        }
    }

    /// The name in the text format.
    pub fn name(&self) -> &'static str {
        match self {
            Prim::Map { kind, .. } => kind.name(),
            Prim::Reduce { seq: false } => "reduce",
            Prim::Reduce { seq: true } => "reduceSeq",
            Prim::Zip(_) => "zip",
            Prim::Split(_) => "split",
            Prim::Join => "join",
            Prim::Transpose => "transpose",
            Prim::Slide(..) => "slide",
            Prim::Pad(_, _, PadMode::Constant(_)) => "pad",
            Prim::Pad(_, _, PadMode::Clamp) => "padClamp",
            Prim::At(_) => "at",
            Prim::Get(_) => "get",
            Prim::Tuple(_) => "tuple",
            Prim::To(a) => a.prim_name(),
            Prim::AsVector(_) => "asVector",
            Prim::AsScalar => "asScalar",
            Prim::VectorFromScalar(_) => "vectorFromScalar",
            Prim::Bin(op) => op.name(),
            Prim::Un(op) => op.name(),
            Prim::Select => "select",
            Prim::Cast(k) => k.name(),
        }
    }
}

/// A node of the program.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Node {
    /// The program's parameter at this position.
    Param(u32),
    /// A variable: de Bruijn index of the enclosing binder (0 = innermost lambda or `let`).
    Var(u32),
    /// A literal.
    Lit(Lit),
    /// A primitive, not yet applied.
    Prim(Prim),
    /// Application of a function to one argument.
    App(NodeId, NodeId),
    /// A one-parameter lambda, with an optional annotation of its parameter's type.
    Lam(NodeId, Option<Type>),
    /// `let x = value in body`: `body` sees `x` as `Var(0)`.
    Let(NodeId, NodeId),
}

impl Node {
    /// Children in order.
    pub fn children(&self) -> Vec<NodeId> {
        match self {
            Node::App(a, b) | Node::Let(a, b) => vec![*a, *b],
            Node::Lam(b, _) => vec![*b],
            Node::Param(_) | Node::Var(_) | Node::Lit(_) | Node::Prim(_) => vec![],
        }
    }
}

/// Information for people about a node: where it came from and how its binder was named.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Source span (empty for generated nodes).
    pub span: Span,
    /// Name of the variable a `Lam` or `Let` binds.
    pub binder: Option<String>,
}

/// A size variable of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeVar {
    /// Its name.
    pub name: String,
    /// Smallest value (at least 1 unless said otherwise).
    pub min: i64,
    /// Largest value, if bounded.
    pub max: Option<i64>,
    /// Value used when the user gives none.
    pub default: Option<i64>,
}

/// A parameter of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: Type,
}

/// A whole program: one function of typed array parameters.
#[derive(Clone, Debug)]
pub struct Program {
    /// Name of the function.
    pub name: String,
    /// Size variables, in declaration order.
    pub sizes: Vec<SizeVar>,
    /// Parameters.
    pub params: Vec<Param>,
    /// Declared result type, if any.
    pub ret: Option<Type>,
    /// The nodes, children before parents.
    pub nodes: Vec<Node>,
    /// Names and spans, one per node.
    pub meta: Vec<Meta>,
    /// The body.
    pub root: NodeId,
}

impl PartialEq for Program {
    /// Programs are equal when they are the same up to binder names and source positions.
    fn eq(&self, other: &Program) -> bool {
        self.name == other.name
            && self.sizes == other.sizes
            && self.params == other.params
            && self.ret == other.ret
            && self.nodes == other.nodes
            && self.root == other.root
    }
}

/// Why a node arena is not a well-formed program: what [`Program::validate`] finds in a
/// hand-built or corrupted arena. The parser and every pass build well-formed ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// The root is not a node of the arena.
    #[error("the root, node {}, is not in the arena of {len} node(s)", .root.0)]
    RootOutOfRange {
        /// The root.
        root: NodeId,
        /// The arena's length.
        len: usize,
    },
    /// A node refers to a node that does not come before it (or is not in the arena).
    #[error("node {} refers to node {}, which does not come before it (children before parents)", .parent.0, .child.0)]
    ChildNotBefore {
        /// The node.
        parent: NodeId,
        /// Its child.
        child: NodeId,
    },
    /// A parameter reference past the program's parameters.
    #[error("node {} is parameter number {index}, but the program has {count} parameter(s)", .node.0)]
    ParamOutOfRange {
        /// The `Param` node.
        node: NodeId,
        /// Its index.
        index: u32,
        /// The number of parameters.
        count: usize,
    },
    /// A de Bruijn variable with no binder around it (on some path from the root).
    #[error("node {} is variable {index} (a de Bruijn index) under {depth} binder(s): it is unbound", .node.0)]
    UnboundVar {
        /// The `Var` node.
        node: NodeId,
        /// Its de Bruijn index.
        index: u32,
        /// The binders (`fun`, `let`) around it on that path.
        depth: u32,
    },
}

impl Malformed {
    /// The node the problem is at, if it is in the arena.
    pub fn node(&self) -> Option<NodeId> {
        match *self {
            Malformed::RootOutOfRange { .. } => None,
            Malformed::ChildNotBefore { parent: node, .. }
            | Malformed::ParamOutOfRange { node, .. }
            | Malformed::UnboundVar { node, .. } => Some(node),
        }
    }
}

impl Program {
    /// Checks the arena's invariants, which everything else assumes: every child comes before
    /// its parent (so a program is acyclic and converts to an egg `RecExpr` in one pass), the
    /// root is a node, parameter indices are in range, and every de Bruijn variable reachable
    /// from the root is bound. Linear in the arena's size, shared nodes included; never panics.
    /// [`crate::check::check`] starts with it.
    pub fn validate(&self) -> Result<(), Malformed> {
        let len = self.nodes.len();
        if self.root.index() >= len {
            return Err(Malformed::RootOutOfRange { root: self.root, len });
        }
        // How many binders a node needs around it: one more than its largest free de Bruijn
        // index (0: closed). Children come first, so one pass from the start computes it.
        let mut need = vec![0u64; len];
        for (k, node) in self.nodes.iter().enumerate() {
            let id = NodeId(k as u32);
            for c in node.children() {
                if c.index() >= k {
                    return Err(Malformed::ChildNotBefore { parent: id, child: c });
                }
            }
            need[k] = match *node {
                Node::Var(i) => u64::from(i) + 1,
                Node::Param(i) if i as usize >= self.params.len() => {
                    return Err(Malformed::ParamOutOfRange { node: id, index: i, count: self.params.len() })
                }
                Node::Param(_) | Node::Lit(_) | Node::Prim(_) => 0,
                Node::Lam(b, _) => need[b.index()].saturating_sub(1),
                Node::Let(v, b) => need[v.index()].max(need[b.index()].saturating_sub(1)),
                Node::App(f, a) => need[f.index()].max(need[a.index()]),
            };
        }
        // An unbound variable: follow from the root a child that needs more binders than it
        // has, down to the variable.
        let (mut id, mut depth) = (self.root, 0u64);
        while need[id.index()] > depth {
            match *self.node(id) {
                Node::Var(index) => {
                    return Err(Malformed::UnboundVar { node: id, index, depth: depth as u32 });
                }
                Node::Lam(b, _) => (id, depth) = (b, depth + 1),
                Node::Let(v, _) if need[v.index()] > depth => id = v,
                Node::Let(_, b) => (id, depth) = (b, depth + 1),
                Node::App(f, _) if need[f.index()] > depth => id = f,
                Node::App(_, a) => id = a,
                Node::Param(_) | Node::Lit(_) | Node::Prim(_) => break,
            }
        }
        Ok(())
    }

    /// The node at `id`.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The source span of `id`.
    pub fn span(&self, id: NodeId) -> Span {
        self.meta.get(id.index()).map(|m| m.span).unwrap_or_default()
    }

    /// Adds a node and returns its handle.
    pub fn push(&mut self, node: Node, meta: Meta) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        self.meta.push(meta);
        id
    }

    /// Splits an application spine `f a1 ... an` into `f` and `[a1, ..., an]`.
    pub fn spine(&self, mut id: NodeId) -> (NodeId, Vec<NodeId>) {
        let mut args = Vec::new();
        while let Node::App(f, a) = self.node(id) {
            args.push(*a);
            id = *f;
        }
        args.reverse();
        (id, args)
    }

    /// The labels of all maps, in source order (pre-order from the root).
    pub fn map_labels(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.preorder(self.root, &mut |_, n| {
            if let Node::Prim(Prim::Map { label, .. }) = n {
                out.push(label.clone());
            }
        });
        out
    }

    /// Visits the nodes reachable from `id` in pre-order, spines left to right.
    pub fn preorder(&self, id: NodeId, visit: &mut dyn FnMut(NodeId, &Node)) {
        let mut stack = vec![id];
        while let Some(id) = stack.pop() {
            let node = self.node(id);
            visit(id, node);
            for c in node.children().into_iter().rev() {
                stack.push(c);
            }
        }
    }
}

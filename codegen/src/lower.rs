//! Lowering of a checked, fully mapped program to the kernel IR.
//!
//! Values are *views* (Lift's view system): a parameter or an allocated buffer seen through
//! `split`, `join`, `transpose`, `slide`, `pad`, `zip`, `get`, `asVector`, `asScalar` and the
//! indexing done by maps. A view is turned into a memory access only when a scalar is needed:
//! [`Lower::resolve`] walks it with a stack of array indices and a stack of tuple components,
//! building the flat index with the simplifying constructors of [`crate::index`]. Writes go
//! through *output views*: the destination of `join(e)` is `split` of the destination, and so on,
//! so a map nested in layout primitives writes straight into its final place. An unlabelled
//! `map` whose function only reorganizes data (the maps inside `padND2`, `slideND2`, `zipND3`,
//! or `map(join)`) is a view too: element `i` is `f(xs[i])`, lowered when an access reaches it;
//! written to, it passes its destination through the inverse of `f` (`join`/`split`/
//! `transpose`/`asVector`/`asScalar` chains).
//!
//! Memory: `toGlobal`/`toLocal`/`toPrivate` allocate a buffer of the wrapped map's type. An
//! allocation inside parallel loops gets one copy per iteration of those loops that share the
//! address space (global: all parallel loops; local: `mapLcl` loops), indexed by their variables.
//! A map without annotation writes into its destination; without one, into a fresh buffer:
//! private inside a thread, local inside a work group, global otherwise.
//!
//! Barriers: after the outermost `mapLcl` loop that wrote a local (or global temporary) buffer,
//! a slot is left; the first later read of that buffer turns the slot into a barrier. Loops of a
//! work group that run more than once and communicate through local memory end with a barrier
//! too (the next iteration overwrites what slower threads may still read).

use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::index::{Index, Ranges};
use crate::kir::*;
use crate::Options;
use mapsat_ir::ast::{AddressSpace, MapKind, Node, NodeId, PadMode, Prim, Span};
use mapsat_ir::check::TypeInfo;
use mapsat_ir::{Program, ScalarKind, Sizes, Type};
use std::collections::{BTreeMap, BTreeSet, HashMap};

type R<T> = Result<T, CodegenError>;

/// A value during lowering.
#[derive(Clone, Debug)]
enum View {
    Mem(BufId),
    Access(Box<View>, Index),
    Split(i64, Box<View>),
    Join(i64, Box<View>),
    Transpose(Box<View>),
    Slide(i64, Box<View>),
    Pad {
        left: i64,
        len: i64,
        mode: PadMode,
        inner: Box<View>,
    },
    Zip(Vec<View>),
    Tuple(Vec<View>),
    Get(u32, Box<View>),
    AsVector(u32, Box<View>),
    AsScalar(u32, Box<View>),
    /// `map(f, inner)` with a layout-only `f` (no computation), read lazily: element `i` is
    /// `f(inner[i])`, lowered when an access reaches it, in the environment `f` was defined in.
    MapF {
        f: NodeId,
        env: Vec<View>,
        inner: Box<View>,
    },
    /// The destination of `xs` in `map(f, xs)` written to `inner`, for an invertible layout `f`:
    /// element `i` of `xs` goes to `inv(inner[i])`.
    MapInv {
        inv: Vec<InvOp>,
        inner: Box<View>,
    },
    Value(Expr),
}

/// One step of the inverse of a layout function, applied to a destination view.
#[derive(Clone, Debug)]
enum InvOp {
    Split(i64),
    Join(i64),
    Transpose,
    AsVector(u32),
    AsScalar(u32),
}

impl InvOp {
    fn apply(&self, v: View) -> View {
        match self {
            InvOp::Split(m) => View::Split(*m, Box::new(v)),
            InvOp::Join(m) => View::Join(*m, Box::new(v)),
            InvOp::Transpose => View::Transpose(Box::new(v)),
            InvOp::AsVector(w) => View::AsVector(*w, Box::new(v)),
            InvOp::AsScalar(w) => View::AsScalar(*w, Box::new(v)),
        }
    }
}

impl View {
    fn at(self, i: Index) -> View {
        View::Access(Box::new(self), i)
    }

    /// The buffer at the bottom of an output view.
    fn base(&self) -> Option<BufId> {
        match self {
            View::Mem(b) => Some(*b),
            View::Access(v, _)
            | View::Split(_, v)
            | View::Join(_, v)
            | View::Transpose(v)
            | View::Slide(_, v)
            | View::Get(_, v)
            | View::AsVector(_, v)
            | View::AsScalar(_, v) => v.base(),
            View::Pad { inner, .. } | View::MapF { inner, .. } | View::MapInv { inner, .. } => inner.base(),
            _ => None,
        }
    }
}

/// The result of lowering an expression.
struct Out {
    view: View,
    /// True when the value was written to the destination that was passed in.
    written: bool,
}

impl Out {
    fn view(view: View) -> R<Out> {
        Ok(Out { view, written: false })
    }
}

/// An argument of a primitive: a node still to lower, or a value already lowered.
#[derive(Clone)]
enum Arg {
    Node(NodeId),
    View(View),
}

#[derive(Default)]
struct St {
    idx: Vec<Index>,
    tup: Vec<u32>,
    vec: u32,
    lane: Option<Index>,
}

enum Resolved {
    Place(Place),
    Value(Expr),
}

struct LoopCtx {
    kind: LoopKind,
    origin: String,
    var: String,
    extent: i64,
    /// Why threads of a work group run this loop a different number of times.
    divergent: Option<String>,
}

struct Slot {
    writer: String,
    global: bool,
    divergent: Option<(String, String)>,
    active: bool,
}

enum Dirty {
    Slot(usize),
    Grid(String),
}

/// The lowering state.
pub(crate) struct Lower<'a> {
    p: &'a Program,
    info: TypeInfo,
    bufs: Vec<Buffer>,
    /// Loop depth at which each buffer was allocated.
    alloc_depth: Vec<usize>,
    args: Vec<BufId>,
    locals: Vec<BufId>,
    params: Vec<Option<BufId>>,
    ranges: Ranges,
    env: Vec<View>,
    loops: Vec<LoopCtx>,
    blocks: Vec<Vec<Stmt>>,
    names: BTreeSet<String>,
    launch: Launch,
    flops: u64,
    mult: u64,
    slots: Vec<Slot>,
    dirty: BTreeMap<BufId, Dirty>,
    /// Shared buffers written inside the current outermost parallel loop.
    written: BTreeSet<BufId>,
    /// Every size variable's value.
    sizes: Sizes,
    /// The same values as sizes, for substitution into the program's size expressions.
    subst: HashMap<String, mapsat_ir::Size>,
}

const RESERVED: &[&str] = &[
    "int", "float", "double", "char", "void", "bool", "for", "if", "else", "while", "do", "return", "const",
    "restrict", "kernel", "global", "local", "private", "constant", "half", "long", "short", "unsigned", "signed",
    "struct", "union", "switch", "case", "break", "continue", "default", "sizeof", "static", "inline", "auto", "goto",
    "enum", "extern", "register", "typedef", "volatile", "min", "max", "clamp", "exp", "log",
];

fn sanitize(s: &str) -> String {
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

fn elem_of(t: &Type) -> R<(ScalarKind, u32)> {
    match t {
        Type::Scalar(k) => Ok((*k, 1)),
        Type::Vector(k, w) => Ok((*k, *w)),
        Type::Tuple(_) => Err(K::Unsupported(format!("values of tuple type {t} in memory")).into()),
        _ => Err(K::Internal(format!("not an element type: {t}")).into()),
    }
}

fn konst(s: &mapsat_ir::Size) -> R<i64> {
    s.as_const().ok_or_else(|| match s.vars().first() {
        Some(v) => K::MissingSize(v.clone()).into(),
        None => K::Internal(format!("size {s} is not a constant")).into(),
    })
}

/// Array lengths (outermost first) and the element of a type.
fn dims_of(t: &Type) -> R<(Vec<i64>, Type)> {
    let (dims, elem) = t.dims();
    Ok((dims.into_iter().map(konst).collect::<R<_>>()?, elem.clone()))
}

fn array_len(t: &Type) -> R<(i64, Type)> {
    match t {
        Type::Array(e, n) => Ok((konst(n)?, (**e).clone())),
        _ => Err(K::Internal(format!("expected an array type, found {t}")).into()),
    }
}

/// Argument types and result of a function type.
fn signature(t: &Type) -> (Vec<Type>, Type) {
    let mut args = Vec::new();
    let mut t = t;
    while let Type::Fun(a, r) = t {
        args.push((**a).clone());
        t = r;
    }
    (args, t.clone())
}

fn strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * dims[k + 1];
    }
    s
}

/// The maps of a program with their extents: used to compute the launch shape.
struct MapInfo {
    kind: MapKind,
    name: String,
    extent: i64,
    span: Span,
}

fn map_name(kind: MapKind, label: &str) -> String {
    match kind.dim() {
        Some(d) => format!("{}({d})@{label}", kind.name()),
        None => format!("{}@{label}", kind.name()),
    }
}

fn collect_maps(p: &Program, info: &TypeInfo) -> R<Vec<MapInfo>> {
    let mut out = Vec::new();
    for (i, n) in p.nodes.iter().enumerate() {
        if let Node::Prim(Prim::Map { kind, label }) = n {
            let Some(t) = info.of(NodeId(i as u32)) else { continue };
            let (args, _) = signature(t);
            let Some(xs) = args.get(1) else { continue };
            let (extent, _) = array_len(xs)?;
            out.push(MapInfo { kind: *kind, name: map_name(*kind, label), extent, span: p.span(NodeId(i as u32)) });
        }
    }
    Ok(out)
}

fn launch_err(m: &MapInfo, reason: String) -> CodegenError {
    CodegenError::new(K::Launch { map: m.name.clone(), reason }, Some(m.span))
}

/// The launch shape from the map extents and the caller's local size.
#[allow(clippy::needless_range_loop)]
fn launch_shape(maps: &[MapInfo], local: Option<&[i64]>, max_group: Option<i64>) -> R<Launch> {
    let glb: Vec<&MapInfo> = maps.iter().filter(|m| matches!(m.kind, MapKind::Glb(_))).collect();
    let grp: Vec<&MapInfo> = maps.iter().filter(|m| matches!(m.kind, MapKind::Wrg(_) | MapKind::Lcl(_))).collect();
    if let (Some(g), Some(w)) = (glb.first(), grp.first()) {
        return Err(launch_err(
            w,
            format!("the kernel also uses `{}`; mapGlb and mapWrg/mapLcl cannot share one launch", g.name),
        ));
    }
    for m in maps {
        if m.kind.dim().is_some_and(|d| d > 2) {
            return Err(launch_err(m, "dimensions are 0, 1 and 2".into()));
        }
    }
    if let Some(l) = local {
        if l.is_empty() || l.len() > 3 || l.iter().any(|&x| x <= 0) {
            return Err(CodegenError::new(
                K::Launch { map: "kernel".into(), reason: format!("bad local size {l:?}: 1 to 3 positive numbers") },
                None,
            ));
        }
        if let Some(max) = max_group.filter(|&m| l.iter().product::<i64>() > m) {
            return Err(CodegenError::new(
                K::Launch {
                    map: "kernel".into(),
                    reason: format!("local size {l:?} has more than {max} work items (the target's limit)"),
                },
                None,
            ));
        }
    }
    let used = maps.iter().filter_map(|m| m.kind.dim()).map(|d| d as u32 + 1).max().unwrap_or(1);
    let max_ext = |pred: &dyn Fn(MapKind) -> bool| -> [i64; 3] {
        let mut e = [1i64; 3];
        for m in maps.iter().filter(|m| pred(m.kind)) {
            if let Some(d) = m.kind.dim() {
                e[d as usize] = e[d as usize].max(m.extent);
            }
        }
        e
    };
    let mut global = [1i64; 3];
    let mut loc = [1i64; 3];
    if !grp.is_empty() {
        let groups = max_ext(&|k| matches!(k, MapKind::Wrg(_)));
        let lcl = max_ext(&|k| matches!(k, MapKind::Lcl(_)));
        if let Some(m) = grp.iter().find(|m| matches!(m.kind, MapKind::Lcl(_))) {
            if !grp.iter().any(|w| matches!(w.kind, MapKind::Wrg(_))) {
                return Err(launch_err(m, "mapLcl needs an enclosing mapWrg".into()));
            }
        }
        match local {
            Some(l) => {
                for d in 0..3 {
                    loc[d] = l.get(d).copied().unwrap_or(1);
                }
            }
            None => {
                let mut budget = 256i64;
                for d in 0..3 {
                    loc[d] = largest_divisor_at_most(lcl[d], budget);
                    budget /= loc[d];
                }
            }
        }
        for d in 0..3 {
            global[d] = groups[d] * loc[d];
        }
    } else if !glb.is_empty() {
        let ext = max_ext(&|k| matches!(k, MapKind::Glb(_)));
        for d in 0..3 {
            loc[d] = match local {
                Some(l) => l.get(d).copied().unwrap_or(1),
                None if d == 0 => largest_divisor_at_most(ext[0], 64).max(if ext[0] > 64 { 1 } else { ext[0] }),
                None => 1,
            };
            // Round up: the extra threads skip the stride loop.
            global[d] = (ext[d] + loc[d] - 1) / loc[d] * loc[d];
        }
    }
    Ok(Launch { dims: used.max(local.map_or(1, |l| l.len() as u32)), global, local: loc })
}

fn largest_divisor_at_most(n: i64, cap: i64) -> i64 {
    (1..=cap.min(n).max(1)).rev().find(|d| n % d == 0).unwrap_or(1)
}

impl<'a> Lower<'a> {
    pub(crate) fn run(p: &'a Program, opts: &Options) -> R<Kernel> {
        let sizes = p.resolve_sizes(&opts.sizes).map_err(|e| CodegenError::from(K::MissingSize(e.0)))?;
        let info = mapsat_ir::check::check_with_sizes(p, &sizes).map_err(|e| CodegenError::from(K::Type(e)))?;
        let maps = collect_maps(p, &info)?;
        let launch = launch_shape(&maps, opts.local.as_deref(), opts.max_work_group_size)?;
        let subst: HashMap<String, mapsat_ir::Size> = p
            .sizes
            .iter()
            .filter_map(|v| Some((v.name.clone(), mapsat_ir::Size::constant(sizes.get(&v.name)?))))
            .collect();
        let mut lw = Lower {
            p,
            info,
            bufs: Vec::new(),
            alloc_depth: Vec::new(),
            args: Vec::new(),
            locals: Vec::new(),
            params: Vec::new(),
            ranges: Ranges::default(),
            env: Vec::new(),
            loops: Vec::new(),
            blocks: vec![Vec::new()],
            names: RESERVED.iter().map(|s| s.to_string()).collect(),
            launch,
            flops: 0,
            mult: 1,
            slots: Vec::new(),
            dirty: BTreeMap::new(),
            written: BTreeSet::new(),
            sizes,
            subst,
        };
        for (i, q) in p.params.iter().enumerate() {
            let t = q.ty.substitute(&lw.subst);
            let (dims, elem) = dims_of(&t)?;
            let (kind, width) = match elem {
                Type::Scalar(k) => (k, 1),
                _ => return Err(K::Unsupported(format!("parameter `{}` of type {t}", q.name)).into()),
            };
            let name = lw.fresh(&q.name);
            let by_value = dims.is_empty();
            let id = lw.add_buf(Buffer {
                name,
                space: Space::Global,
                role: Role::Input,
                kind,
                width,
                dims,
                param: Some(i),
                by_value,
            });
            lw.args.push(id);
            lw.params.push(Some(id));
        }
        let result = lw.info.result.clone();
        let (dims, elem) = dims_of(&result)?;
        let (kind, width) = elem_of(&elem)?;
        let name = lw.fresh("out");
        let out = lw.add_buf(Buffer {
            name,
            space: Space::Global,
            role: Role::Output,
            kind,
            width,
            dims,
            param: None,
            by_value: false,
        });
        lw.args.push(out);
        let r = lw.gen(p.root, Vec::new(), Some(View::Mem(out)))?;
        if !r.written {
            lw.copy(&r.view, &View::Mem(out), &result)?;
        }
        let body = lw.blocks.pop().unwrap_or_default();
        let body = lw.finish_slots(body);
        let mut args = lw.args.clone();
        // Inputs, then the output, then temporaries (already in that order but for temps made early).
        args.sort_by_key(|b| match lw.bufs[b.0].role {
            Role::Input => 0,
            Role::Output => 1,
            Role::Temp => 2,
        });
        Ok(Kernel {
            name: sanitize(&p.name),
            buffers: lw.bufs,
            args,
            locals: lw.locals,
            body,
            launch: lw.launch,
            flops: lw.flops,
            sizes: lw.sizes,
        })
    }

    fn add_buf(&mut self, b: Buffer) -> BufId {
        self.bufs.push(b);
        self.alloc_depth.push(self.loops.len());
        BufId(self.bufs.len() - 1)
    }

    fn fresh(&mut self, base: &str) -> String {
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

    fn emit(&mut self, s: Stmt) {
        if let Some(b) = self.blocks.last_mut() {
            b.push(s);
        }
    }

    fn ty(&self, id: NodeId) -> R<Type> {
        self.info.of(id).cloned().ok_or_else(|| K::Internal(format!("node {} has no type", id.0)).into())
    }

    fn span(&self, id: NodeId) -> Option<Span> {
        Some(self.p.span(id))
    }

    // ----- expressions -----

    fn gen(&mut self, e: NodeId, extra: Vec<View>, dest: Option<View>) -> R<Out> {
        let (head, nargs) = self.p.spine(e);
        let mut args: Vec<Arg> = nargs.into_iter().map(Arg::Node).collect();
        args.extend(extra.into_iter().map(Arg::View));
        match self.p.node(head).clone() {
            Node::Param(i) => {
                let b = self.params.get(i as usize).copied().flatten();
                match b {
                    Some(b) if args.is_empty() => Out::view(View::Mem(b)),
                    _ => Err(K::Internal(format!("bad use of parameter {i}")).into()),
                }
            }
            Node::Var(k) => {
                let k = k as usize;
                match self.env.len().checked_sub(k + 1).and_then(|i| self.env.get(i)) {
                    Some(v) if args.is_empty() => Out::view(v.clone()),
                    _ => Err(K::Internal(format!("bad variable {k}")).into()),
                }
            }
            Node::Lit(l) => Out::view(View::Value(Expr::Lit(l))),
            Node::Lam(body, _) => {
                let mut vals = Vec::new();
                for a in &args {
                    vals.push(self.data(a)?);
                }
                if vals.is_empty() {
                    return Err(CodegenError::new(
                        K::Unsupported("a function used as a value".into()),
                        self.span(head),
                    ));
                }
                let first = vals.remove(0);
                self.env.push(first);
                let r = self.gen(body, vals, dest);
                self.env.pop();
                r
            }
            Node::Let(v, b) => {
                let mut vals = Vec::new();
                for a in &args {
                    vals.push(self.data(a)?);
                }
                let val = self.gen(v, Vec::new(), None)?.view;
                let vt = self.ty(v)?;
                let binder = self.p.meta.get(head.index()).and_then(|m| m.binder.clone()).unwrap_or_else(|| "t".into());
                let val = self.materialize(val, &vt, &binder)?;
                self.env.push(val);
                let r = self.gen(b, vals, dest);
                self.env.pop();
                r
            }
            Node::Prim(prim) => self.prim(head, &prim, args, dest),
            Node::App(..) => Err(K::Internal("spine head is an application".into()).into()),
        }
    }

    /// A scalar `let` becomes a private variable, so that it is computed once.
    fn materialize(&mut self, v: View, t: &Type, name: &str) -> R<View> {
        match (&v, t) {
            (View::Value(Expr::Lit(_)), _) => Ok(v),
            (View::Value(e), Type::Scalar(_) | Type::Vector(..)) => {
                let (kind, width) = elem_of(t)?;
                let name = self.fresh(name);
                let id = self.add_buf(Buffer {
                    name,
                    space: Space::Private,
                    role: Role::Temp,
                    kind,
                    width,
                    dims: vec![],
                    param: None,
                    by_value: false,
                });
                self.emit(Stmt::Decl(id, Some(e.clone())));
                Ok(View::Mem(id))
            }
            _ => Ok(v),
        }
    }

    fn data(&mut self, a: &Arg) -> R<View> {
        match a {
            Arg::Node(n) => Ok(self.gen(*n, Vec::new(), None)?.view),
            Arg::View(v) => Ok(v.clone()),
        }
    }

    fn gen_arg(&mut self, a: &Arg, dest: Option<View>) -> R<Out> {
        match a {
            Arg::Node(n) => self.gen(*n, Vec::new(), dest),
            Arg::View(v) => Out::view(v.clone()),
        }
    }

    fn apply(&mut self, f: &Arg, args: Vec<View>, dest: Option<View>) -> R<Out> {
        match f {
            Arg::Node(n) => self.gen(*n, args, dest),
            Arg::View(_) => Err(K::Internal("a value used as a function".into()).into()),
        }
    }

    fn read(&mut self, v: &View) -> R<Expr> {
        let mut st = St { vec: 1, ..St::default() };
        match self.resolve(v, &mut st, false)? {
            Resolved::Place(p) => Ok(Expr::Load(p)),
            Resolved::Value(e) => Ok(e),
        }
    }

    fn count_flops(&mut self, t: &Type) {
        let w = match t {
            Type::Scalar(ScalarKind::F32) => 1,
            Type::Vector(ScalarKind::F32, w) => *w as u64,
            _ => 0,
        };
        self.flops = self.flops.saturating_add(self.mult.saturating_mul(w));
    }

    fn prim(&mut self, head: NodeId, prim: &Prim, args: Vec<Arg>, dest: Option<View>) -> R<Out> {
        if args.len() != prim.arity() {
            return Err(K::Internal(format!("`{}` with {} arguments", prim.name(), args.len())).into());
        }
        let (arg_tys, res) = signature(&self.ty(head)?);
        let arg_ty = |k: usize| -> R<Type> {
            arg_tys
                .get(k)
                .cloned()
                .ok_or_else(|| K::Internal(format!("missing argument type of `{}`", prim.name())).into())
        };
        match prim {
            Prim::Map { kind, label } => self.map(head, *kind, label, &args[0], &args[1], &arg_ty(1)?, &res, dest),
            Prim::Reduce { seq } => {
                if !*seq {
                    return Err(CodegenError::new(
                        K::Unmapped { map: "reduce".into(), reason: "use reduceSeq".into() },
                        self.span(head),
                    ));
                }
                self.reduce(&args[0], &args[1], &args[2], &arg_ty(2)?, &res, dest)
            }
            Prim::Zip(_) => {
                let mut vs = Vec::new();
                for a in &args {
                    vs.push(self.data(a)?);
                }
                Out::view(View::Zip(vs))
            }
            Prim::Tuple(_) => {
                let mut vs = Vec::new();
                for a in &args {
                    vs.push(self.data(a)?);
                }
                Out::view(View::Tuple(vs))
            }
            Prim::Split(_) => {
                let (_, inner) = array_len(&res)?;
                let (m, _) = array_len(&inner)?;
                let o = self.gen_arg(&args[0], dest.map(|d| View::Join(m, Box::new(d))))?;
                Ok(Out { view: View::Split(m, Box::new(o.view)), written: o.written })
            }
            Prim::Join => {
                let (_, inner) = array_len(&arg_ty(0)?)?;
                let (m, _) = array_len(&inner)?;
                let o = self.gen_arg(&args[0], dest.map(|d| View::Split(m, Box::new(d))))?;
                Ok(Out { view: View::Join(m, Box::new(o.view)), written: o.written })
            }
            Prim::Transpose => {
                let o = self.gen_arg(&args[0], dest.map(|d| View::Transpose(Box::new(d))))?;
                Ok(Out { view: View::Transpose(Box::new(o.view)), written: o.written })
            }
            Prim::AsVector(w) => {
                let o = self.gen_arg(&args[0], dest.map(|d| View::AsScalar(*w, Box::new(d))))?;
                Ok(Out { view: View::AsVector(*w, Box::new(o.view)), written: o.written })
            }
            Prim::AsScalar => {
                let (_, el) = array_len(&arg_ty(0)?)?;
                let Type::Vector(_, w) = el else { return Err(K::Internal("asScalar of non-vectors".into()).into()) };
                let o = self.gen_arg(&args[0], dest.map(|d| View::AsVector(w, Box::new(d))))?;
                Ok(Out { view: View::AsScalar(w, Box::new(o.view)), written: o.written })
            }
            Prim::Slide(_, step) => {
                let v = self.data(&args[0])?;
                Out::view(View::Slide(konst(&self.concrete(step))?, Box::new(v)))
            }
            Prim::Pad(l, _, mode) => {
                let (len, _) = array_len(&arg_ty(0)?)?;
                let v = self.data(&args[0])?;
                Out::view(View::Pad { left: konst(&self.concrete(l))?, len, mode: *mode, inner: Box::new(v) })
            }
            Prim::At(i) => {
                let v = self.data(&args[0])?;
                Out::view(v.at(Index::constant(konst(&self.concrete(i))?)))
            }
            Prim::Get(i) => {
                let v = self.data(&args[0])?;
                Out::view(View::Get(*i, Box::new(v)))
            }
            Prim::To(space) => self.to(head, *space, &args[0], dest),
            Prim::Bin(op) => {
                let a = self.data(&args[0])?;
                let b = self.data(&args[1])?;
                let (a, b) = (self.read(&a)?, self.read(&b)?);
                if !op.is_comparison() && !op.is_logical() {
                    self.count_flops(&res);
                }
                Out::view(View::Value(Expr::Bin(*op, Box::new(a), Box::new(b))))
            }
            Prim::Un(op) => {
                let a = self.data(&args[0])?;
                let a = self.read(&a)?;
                self.count_flops(&res);
                Out::view(View::Value(Expr::Un(*op, Box::new(a))))
            }
            Prim::Select => {
                let mut es = Vec::new();
                for a in &args {
                    let v = self.data(a)?;
                    es.push(self.read(&v)?);
                }
                let c = es.remove(0);
                let a = es.remove(0);
                let b = es.remove(0);
                Out::view(View::Value(Expr::Select(Box::new(c), Box::new(a), Box::new(b))))
            }
            Prim::Cast(k) => {
                let a = self.data(&args[0])?;
                let a = self.read(&a)?;
                Out::view(View::Value(Expr::Cast(*k, Box::new(a))))
            }
        }
    }

    /// Sizes in primitives are written with variables; the checker substituted them in types only.
    fn concrete(&self, s: &mapsat_ir::Size) -> mapsat_ir::Size {
        s.substitute(&self.subst)
    }

    fn label_of(&self, a: &Arg) -> String {
        if let Arg::Node(n) = a {
            let (head, _) = self.p.spine(*n);
            match self.p.node(head) {
                Node::Prim(Prim::Map { kind, label }) => return map_name(*kind, label),
                Node::Prim(p) => return p.name().to_string(),
                _ => {}
            }
        }
        "expression".into()
    }

    fn to(&mut self, head: NodeId, space: AddressSpace, a: &Arg, dest: Option<View>) -> R<Out> {
        let what = self.label_of(a);
        let space = match space {
            AddressSpace::Global => Space::Global,
            AddressSpace::Local => Space::Local,
            AddressSpace::Private => Space::Private,
        };
        if space == Space::Local
            && !self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_) | LoopKind::Global(_)))
        {
            return Err(CodegenError::new(
                K::LocalMemory {
                    map: what,
                    reason: "is outside any mapWrg or mapGlb: local memory belongs to a work group".into(),
                },
                self.span(head),
            ));
        }
        if space == Space::Local && !self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_))) {
            // Inside a mapGlb the buffer is each work item's own scratch space: a parallel map
            // writing it would spread one work item's buffer over several.
            if let Some(inner) = self.parallel_map_in(a) {
                return Err(CodegenError::new(
                    K::LocalMemory {
                        map: what,
                        reason: format!(
                            "is inside a mapGlb, where local memory is each work item's own scratch space, but \
                             `{inner}` writes it in parallel"
                        ),
                    },
                    self.span(head),
                ));
            }
        }
        if let Some(d) = &dest {
            if d.base().is_some_and(|b| self.bufs[b.0].space == space) {
                return self.gen_arg(a, dest);
            }
        }
        let is_reduce =
            matches!(a, Arg::Node(n) if matches!(self.p.node(self.p.spine(*n).0), Node::Prim(Prim::Reduce { .. })));
        if space == Space::Private && is_reduce {
            // The accumulator already is a private variable.
            let o = self.gen_arg(a, None)?;
            return Out::view(o.view);
        }
        let t = match a {
            Arg::Node(n) => self.ty(*n)?,
            Arg::View(_) => return Err(K::Internal("toX of a value".into()).into()),
        };
        let label = what.split('@').nth(1).unwrap_or("r").to_string();
        let v = self.alloc(space, &t, &label)?;
        let o = self.gen_arg(a, Some(v.clone()))?;
        if !o.written {
            self.copy(&o.view, &v, &t)?;
        }
        Out::view(v)
    }

    /// The first parallel map (mapGlb, mapWrg, mapLcl) in an argument's expression.
    fn parallel_map_in(&self, a: &Arg) -> Option<String> {
        let Arg::Node(n) = a else { return None };
        let mut stack = vec![*n];
        while let Some(n) = stack.pop() {
            let node = self.p.node(n);
            if let Node::Prim(Prim::Map { kind: kind @ (MapKind::Glb(_) | MapKind::Wrg(_) | MapKind::Lcl(_)), label }) =
                node
            {
                return Some(map_name(*kind, label));
            }
            stack.extend(node.children());
        }
        None
    }

    /// A new buffer for a value of type `t`, with one copy per iteration of the enclosing parallel
    /// loops that share `space`. Local memory inside a `mapGlb` (only a kernel without work
    /// groups has one) gets one copy per work item of the implicit work group, indexed by the
    /// local id `g % local` (the global size is a multiple of the local size): the work item's
    /// own scratch space.
    fn alloc(&mut self, space: Space, t: &Type, label: &str) -> R<View> {
        let (dims, elem) = dims_of(t)?;
        let (kind, width) = elem_of(&elem)?;
        let copies: Vec<(Index, i64)> = self
            .loops
            .iter()
            .filter_map(|l| match (space, l.kind) {
                (Space::Global, LoopKind::Global(_) | LoopKind::Group(_) | LoopKind::Local(_))
                | (Space::Local, LoopKind::Local(_)) => Some((Index::var(&l.var), l.extent)),
                (Space::Local, LoopKind::Global(d)) => {
                    let ls = self.launch.local[d as usize];
                    Some((Index::var(&l.var).rem(ls, &self.ranges), ls))
                }
                _ => None,
            })
            .collect();
        let mut all = copies.iter().map(|c| c.1).collect::<Vec<_>>();
        all.extend(dims);
        let prefix = match space {
            Space::Global => "tmp",
            Space::Local => "sh",
            Space::Private => {
                if all.is_empty() {
                    "v"
                } else {
                    "p"
                }
            }
        };
        let name = self.fresh(&format!("{prefix}_{label}"));
        let id = self.add_buf(Buffer {
            name,
            space,
            role: Role::Temp,
            kind,
            width,
            dims: all,
            param: None,
            by_value: false,
        });
        match space {
            Space::Global => self.args.push(id),
            Space::Local => self.locals.push(id),
            Space::Private => self.emit(Stmt::Decl(id, None)),
        }
        let mut v = View::Mem(id);
        for (ix, _) in copies {
            v = v.at(ix);
        }
        Ok(v)
    }

    /// Default destination of a map without one.
    fn default_space(&self, kind: MapKind) -> Space {
        let in_thread = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Global(_) | LoopKind::Local(_)));
        let in_group = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_)));
        match kind {
            MapKind::Glb(_) | MapKind::Wrg(_) => Space::Global,
            MapKind::Lcl(_) => Space::Local,
            _ if in_thread => Space::Private,
            _ if in_group => Space::Local,
            _ => Space::Global,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        head: NodeId,
        kind: MapKind,
        label: &str,
        f: &Arg,
        xs: &Arg,
        xs_ty: &Type,
        res: &Type,
        dest: Option<View>,
    ) -> R<Out> {
        let name = map_name(kind, label);
        let span = self.span(head);
        if kind == MapKind::Abstract && self.layout_only(f) {
            return self.layout_map(f, xs, dest);
        }
        if kind == MapKind::Abstract {
            return Err(CodegenError::new(
                K::Unmapped {
                    map: name,
                    reason: "choose mapSeq, mapGlb(d), mapWrg(d), mapLcl(d) or mapVec before code generation".into(),
                },
                span,
            ));
        }
        self.check_nesting(kind, &name, span)?;
        let xs_v = self.data(xs)?;
        let (extent, _) = array_len(xs_ty)?;
        let (_, out_elem) = array_len(res)?;
        let (out, written) = match dest {
            Some(d) => (d, true),
            None => {
                let space = self.default_space(kind);
                (self.alloc(space, res, label)?, false)
            }
        };
        let (lkind, stride) = match kind {
            MapKind::Glb(d) => (LoopKind::Global(d), self.launch.global[d as usize]),
            MapKind::Wrg(d) => (LoopKind::Group(d), self.launch.global[d as usize] / self.launch.local[d as usize]),
            MapKind::Lcl(d) => (LoopKind::Local(d), self.launch.local[d as usize]),
            MapKind::Vec => (LoopKind::Vec, 1),
            _ => (LoopKind::Seq, 1),
        };
        let trips = if matches!(lkind, LoopKind::Seq | LoopKind::Vec) {
            Trips::Loop
        } else if stride == extent {
            Trips::One
        } else if stride > extent {
            Trips::AtMostOne
        } else {
            Trips::Loop
        };
        let divergent = match (lkind, trips) {
            (LoopKind::Local(_) | LoopKind::Global(_), Trips::AtMostOne) => {
                Some(format!("{extent} iterations over {stride} threads"))
            }
            (LoopKind::Local(_) | LoopKind::Global(_), Trips::Loop) if extent % stride != 0 => {
                Some(format!("{extent} iterations over {stride} threads"))
            }
            _ => None,
        };
        let binder = match f {
            Arg::Node(n) => match self.p.node(*n) {
                Node::Lam(..) => self.p.meta.get(n.index()).and_then(|m| m.binder.clone()),
                _ => None,
            },
            _ => None,
        };
        let base = match (lkind, &binder) {
            (_, Some(b)) => format!("i_{b}"),
            (LoopKind::Global(d), None) => format!("g{d}"),
            (LoopKind::Group(d), None) => format!("wg{d}"),
            (LoopKind::Local(d), None) => format!("l{d}"),
            _ => "i".into(),
        };
        let var = self.fresh(&base);
        self.ranges.set(&var, 0, extent - 1);
        let parallel = !matches!(lkind, LoopKind::Seq | LoopKind::Vec);
        let saved_written = if parallel { Some(std::mem::take(&mut self.written)) } else { None };
        let slots_before = self.slots.len();
        self.loops.push(LoopCtx { kind: lkind, origin: name.clone(), var: var.clone(), extent, divergent });
        self.blocks.push(Vec::new());
        let saved_mult = self.mult;
        self.mult = self.mult.saturating_mul(extent as u64);
        let elem = xs_v.at(Index::var(&var));
        let d = out.clone().at(Index::var(&var));
        let r = self.apply(f, vec![elem], Some(d.clone()));
        let r = match r {
            Ok(o) if !o.written => self.copy(&o.view, &d, &out_elem),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        self.mult = saved_mult;
        let mut body = self.blocks.pop().unwrap_or_default();
        let ctx = self.loops.pop();
        r?;
        // Work-group loops that run again reuse local memory other threads may still read.
        // Only barriers this loop's own body needs (a slot opened inside it and read inside it):
        // reading, inside the loop, what was written before it needs no barrier at its end.
        let slots_after = self.slots.iter().skip(slots_before).any(|s| s.active);
        let in_group =
            self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_))) || matches!(lkind, LoopKind::Group(_));
        let in_lcl = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Local(_)));
        if slots_after && in_group && !in_lcl && trips == Trips::Loop && extent > 1 {
            if let Some(reason) = self.divergence() {
                return Err(CodegenError::new(
                    K::DivergentBarrier { map: name.clone(), loop_: reason.0, reason: reason.1 },
                    span,
                ));
            }
            body.push(Stmt::Barrier {
                global: false,
                reason: format!("before the next iteration of {name} overwrites shared memory"),
            });
        }
        self.emit(Stmt::Loop { var, kind: lkind, extent, stride, trips, origin: name.clone(), body });
        if let Some(saved) = saved_written {
            // Shared buffers this loop's threads wrote, allocated outside it, are read by other
            // threads next: after a mapLcl a barrier (if a read follows), after a mapGlb or
            // mapWrg nothing can synchronize.
            let inner = std::mem::replace(&mut self.written, saved);
            let depth = self.loops.len();
            for b in inner {
                if self.alloc_depth[b.0] > depth {
                    continue; // allocated per iteration: private to the thread or group
                }
                self.written.insert(b);
                match lkind {
                    LoopKind::Local(_) => {
                        let global = self.bufs[b.0].space == Space::Global;
                        let slot = self.slots.len();
                        self.slots.push(Slot {
                            writer: name.clone(),
                            global,
                            divergent: self.divergence(),
                            active: false,
                        });
                        self.emit(Stmt::Comment(format!("\u{0}slot {slot}")));
                        self.dirty.insert(b, Dirty::Slot(slot));
                    }
                    LoopKind::Global(_) | LoopKind::Group(_) if self.bufs[b.0].role == Role::Temp => {
                        self.dirty.insert(b, Dirty::Grid(name.clone()));
                    }
                    _ => {}
                }
            }
        }
        drop(ctx);
        Ok(Out { view: out, written })
    }

    /// True when `f` only reorganizes data (layout primitives, projections, nested layout maps):
    /// `map(f, xs)` is then a view, with nothing to compute or to map onto threads.
    fn layout_only(&self, f: &Arg) -> bool {
        let Arg::Node(n) = f else { return false };
        let mut todo = vec![*n];
        while let Some(n) = todo.pop() {
            match self.p.node(n) {
                Node::Var(_) | Node::Param(_) => {}
                Node::Lam(b, _) => todo.push(*b),
                Node::App(a, b) => todo.extend([*a, *b]),
                Node::Prim(
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
                    | Prim::AsScalar
                    | Prim::Map { kind: MapKind::Abstract, .. },
                ) => {}
                _ => return false,
            }
        }
        true
    }

    /// `map(f, xs)` with a layout-only `f`: a lazy view of `xs`. With a destination, `xs` writes
    /// through the inverse of `f` when `f` is invertible (`join`, `split`, `transpose`, ...).
    fn layout_map(&mut self, f: &Arg, xs: &Arg, dest: Option<View>) -> R<Out> {
        let Arg::Node(fnode) = f else { return Err(K::Internal("layout map of a value".into()).into()) };
        let inv = match &dest {
            Some(_) => self.inverse(*fnode)?,
            None => None,
        };
        let o = match (inv, dest) {
            (Some(inv), Some(d)) => self.gen_arg(xs, Some(View::MapInv { inv, inner: Box::new(d) }))?,
            _ => self.gen_arg(xs, None)?,
        };
        Ok(Out { view: View::MapF { f: *fnode, env: self.env.clone(), inner: Box::new(o.view) }, written: o.written })
    }

    /// The inverse of a layout function made of `join`, `split`, `transpose`, `asVector` and
    /// `asScalar` steps (a bare primitive or a lambda applying a chain of them to its parameter),
    /// as steps applied to a destination; `None` when it has no such inverse.
    fn inverse(&self, f: NodeId) -> R<Option<Vec<InvOp>>> {
        let mut ops = Vec::new();
        let mut cur = match self.p.node(f) {
            Node::Lam(b, _) => *b,
            _ => {
                return Ok(self.inverse_step(f)?.map(|op| vec![op]));
            }
        };
        loop {
            match self.p.node(cur) {
                Node::Var(0) => return Ok(Some(ops)),
                Node::App(g, x) => match self.inverse_step(*g)? {
                    Some(op) => {
                        ops.push(op);
                        cur = *x;
                    }
                    None => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
    }

    fn inverse_step(&self, g: NodeId) -> R<Option<InvOp>> {
        let Node::Prim(prim) = self.p.node(g) else { return Ok(None) };
        let (args, res) = signature(&self.ty(g)?);
        let Some(arg) = args.first() else { return Ok(None) };
        Ok(match prim {
            Prim::Join => Some(InvOp::Split(array_len(&array_len(arg)?.1)?.0)),
            Prim::Split(_) => Some(InvOp::Join(array_len(&array_len(&res)?.1)?.0)),
            Prim::Transpose => Some(InvOp::Transpose),
            Prim::AsVector(w) => Some(InvOp::AsScalar(*w)),
            Prim::AsScalar => match array_len(arg)?.1 {
                Type::Vector(_, w) => Some(InvOp::AsVector(w)),
                _ => None,
            },
            _ => None,
        })
    }

    /// The first enclosing loop whose trip count differs between threads of a work group.
    fn divergence(&self) -> Option<(String, String)> {
        self.loops.iter().find_map(|l| l.divergent.as_ref().map(|r| (l.origin.clone(), r.clone())))
    }

    fn check_nesting(&self, kind: MapKind, name: &str, span: Option<Span>) -> R<()> {
        let err = |reason: String| CodegenError::new(K::Launch { map: name.to_string(), reason }, span);
        for l in &self.loops {
            match (kind, l.kind) {
                (MapKind::Glb(a), LoopKind::Global(b))
                | (MapKind::Wrg(a), LoopKind::Group(b))
                | (MapKind::Lcl(a), LoopKind::Local(b))
                    if a == b =>
                {
                    return Err(err(format!("dimension {a} is already used by the enclosing `{}`", l.origin)))
                }
                (MapKind::Wrg(_), LoopKind::Local(_) | LoopKind::Global(_) | LoopKind::Seq | LoopKind::Vec)
                | (MapKind::Glb(_), LoopKind::Local(_) | LoopKind::Seq | LoopKind::Vec) => {
                    return Err(err(format!("it is nested in `{}`, which already runs in one thread", l.origin)))
                }
                (MapKind::Lcl(_), LoopKind::Global(_) | LoopKind::Seq | LoopKind::Vec)
                    if !matches!(l.kind, LoopKind::Seq) =>
                {
                    return Err(err(format!("it is nested in `{}`", l.origin)))
                }
                (MapKind::Glb(_), LoopKind::Group(_)) => {
                    return Err(err(format!("it is nested in the work-group map `{}`", l.origin)))
                }
                _ => {}
            }
        }
        if matches!(kind, MapKind::Lcl(_)) {
            if !self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_))) {
                return Err(err("mapLcl must be nested in a mapWrg".into()));
            }
            if let Some(l) = self.loops.iter().find(|l| matches!(l.kind, LoopKind::Seq | LoopKind::Vec)) {
                if self.loops.iter().any(|o| matches!(o.kind, LoopKind::Local(_))) {
                    return Err(err(format!("it is nested in the sequential `{}` inside a mapLcl", l.origin)));
                }
            }
        }
        Ok(())
    }

    fn reduce(&mut self, f: &Arg, init: &Arg, xs: &Arg, xs_ty: &Type, acc_ty: &Type, dest: Option<View>) -> R<Out> {
        let init_v = self.data(init)?;
        let xs_v = self.data(xs)?;
        let (extent, _) = array_len(xs_ty)?;
        let (dims, elem) = dims_of(acc_ty)?;
        let (kind, width) = elem_of(&elem)?;
        let name = self.fresh("acc");
        let acc = self.add_buf(Buffer {
            name,
            space: Space::Private,
            role: Role::Temp,
            kind,
            width,
            dims,
            param: None,
            by_value: false,
        });
        let accv = View::Mem(acc);
        if matches!(acc_ty, Type::Array(..)) {
            self.emit(Stmt::Decl(acc, None));
            self.copy(&init_v, &accv, acc_ty)?;
        } else {
            let e = self.read(&init_v)?;
            self.emit(Stmt::Decl(acc, Some(e)));
        }
        let var = self.fresh("i");
        self.ranges.set(&var, 0, extent - 1);
        self.loops.push(LoopCtx {
            kind: LoopKind::Seq,
            origin: "reduceSeq".into(),
            var: var.clone(),
            extent,
            divergent: None,
        });
        self.blocks.push(Vec::new());
        let saved_mult = self.mult;
        self.mult = self.mult.saturating_mul(extent as u64);
        let elem = xs_v.at(Index::var(&var));
        let r = self.apply(f, vec![accv.clone(), elem], Some(accv.clone()));
        let r = match r {
            Ok(o) if !o.written => self.copy(&o.view, &accv, acc_ty),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        self.mult = saved_mult;
        let body = self.blocks.pop().unwrap_or_default();
        self.loops.pop();
        r?;
        self.emit(Stmt::Loop {
            var,
            kind: LoopKind::Seq,
            extent,
            stride: 1,
            trips: Trips::Loop,
            origin: "reduceSeq".into(),
            body,
        });
        match dest {
            Some(d) => {
                self.copy(&accv, &d, acc_ty)?;
                Ok(Out { view: d, written: true })
            }
            None => Out::view(accv),
        }
    }

    /// Writes the value `src` of type `t` to `dst`, element by element.
    fn copy(&mut self, src: &View, dst: &View, t: &Type) -> R<()> {
        match t {
            Type::Scalar(_) | Type::Vector(..) => {
                let value = self.read(src)?;
                let mut st = St { vec: 1, ..St::default() };
                match self.resolve(dst, &mut st, true)? {
                    Resolved::Place(p) => {
                        self.note_write(p.buf);
                        self.emit(Stmt::Store(p, value));
                        Ok(())
                    }
                    Resolved::Value(_) => Err(K::Internal("write to a computed value".into()).into()),
                }
            }
            Type::Array(e, n) => {
                let n = konst(n)?;
                let var = self.fresh("c");
                self.ranges.set(&var, 0, n - 1);
                self.loops.push(LoopCtx {
                    kind: LoopKind::Seq,
                    origin: "copy".into(),
                    var: var.clone(),
                    extent: n,
                    divergent: None,
                });
                self.blocks.push(Vec::new());
                let r = self.copy(&src.clone().at(Index::var(&var)), &dst.clone().at(Index::var(&var)), e);
                let body = self.blocks.pop().unwrap_or_default();
                self.loops.pop();
                r?;
                self.emit(Stmt::Loop {
                    var,
                    kind: LoopKind::Seq,
                    extent: n,
                    stride: 1,
                    trips: Trips::Loop,
                    origin: "copy".into(),
                    body,
                });
                Ok(())
            }
            Type::Tuple(_) => Err(K::Unsupported(format!("storing a tuple of type {t}")).into()),
            Type::Fun(..) => Err(K::Unsupported("storing a function".into()).into()),
        }
    }

    fn note_write(&mut self, b: BufId) {
        let buf = &self.bufs[b.0];
        if buf.space != Space::Private && buf.role != Role::Input {
            self.written.insert(b);
        }
    }

    fn on_read(&mut self, b: BufId) -> R<()> {
        match self.dirty.remove(&b) {
            Some(Dirty::Slot(s)) => {
                let slot = &mut self.slots[s];
                if let Some((loop_, reason)) = &slot.divergent {
                    return Err(K::DivergentBarrier {
                        map: slot.writer.clone(),
                        loop_: loop_.clone(),
                        reason: reason.clone(),
                    }
                    .into());
                }
                slot.active = true;
                // One barrier serves every buffer the same loop wrote.
                self.dirty.retain(|_, d| !matches!(d, Dirty::Slot(x) if *x == s));
                Ok(())
            }
            Some(Dirty::Grid(writer)) => Err(K::GridSync { writer }.into()),
            None => Ok(()),
        }
    }

    fn pop(&self, st: &mut St) -> R<Index> {
        st.idx.pop().ok_or_else(|| K::Internal("view indexed with too few indices".into()).into())
    }

    fn resolve(&mut self, v: &View, st: &mut St, write: bool) -> R<Resolved> {
        match v {
            View::Mem(b) => {
                let buf = self.bufs[b.0].clone();
                if st.idx.len() != buf.dims.len() || !st.tup.is_empty() {
                    return Err(K::Internal(format!("access to `{}` with {} indices", buf.name, st.idx.len())).into());
                }
                let mut flat = Index::constant(0);
                for s in strides(&buf.dims) {
                    let i = self.pop(st)?;
                    flat = flat.add(&i.scale(s));
                }
                if !write {
                    self.on_read(*b)?;
                }
                let w = buf.width;
                let place = |index: Index, width: u32, lane: Option<u32>| Place { buf: *b, index, width, lane };
                if buf.scalar_layout() {
                    let base = flat.scale(w as i64);
                    match (st.vec, &st.lane) {
                        (1, None) => Ok(Resolved::Place(place(base, w, None))),
                        (1, Some(l)) => Ok(Resolved::Place(place(base.add(l), 1, None))),
                        (v, None) if w == 1 => Ok(Resolved::Place(place(base, v, None))),
                        _ => Err(K::Unsupported("asVector of vectors".into()).into()),
                    }
                } else {
                    match (st.vec, &st.lane) {
                        (1, None) => Ok(Resolved::Place(place(flat, w, None))),
                        (1, Some(l)) => match l.as_const() {
                            Some(c) => Ok(Resolved::Place(place(flat, 1, Some(c as u32)))),
                            None => {
                                // A lane chosen at run time: select among the lanes it can be.
                                let (lo, hi) = self.ranges.of(l);
                                if write || lo < 0 || hi >= w as i64 {
                                    return Err(K::Unsupported(format!(
                                        "a lane of private `{}` chosen at run time",
                                        buf.name
                                    ))
                                    .into());
                                }
                                let lane = |c: i64| Expr::Load(place(flat.clone(), 1, Some(c as u32)));
                                let mut e = lane(hi);
                                for c in (lo..hi).rev() {
                                    e = Expr::Select(
                                        Box::new(Expr::InRange(l.clone(), c, c + 1)),
                                        Box::new(lane(c)),
                                        Box::new(e),
                                    );
                                }
                                Ok(Resolved::Value(e))
                            }
                        },
                        (v, None) if w == 1 && !write => Ok(Resolved::Value(Expr::Vector(
                            buf.kind,
                            (0..v as i64).map(|k| Expr::Load(place(flat.plus(k), 1, None))).collect(),
                        ))),
                        _ => Err(K::Unsupported(format!("vector access to private `{}`", buf.name)).into()),
                    }
                }
            }
            View::Access(inner, i) => {
                st.idx.push(i.clone());
                self.resolve(inner, st, write)
            }
            View::Split(m, inner) => {
                let i = self.pop(st)?;
                let j = self.pop(st)?;
                st.idx.push(i.scale(*m).add(&j));
                self.resolve(inner, st, write)
            }
            View::Join(m, inner) => {
                let k = self.pop(st)?;
                st.idx.push(k.rem(*m, &self.ranges));
                st.idx.push(k.div(*m, &self.ranges));
                self.resolve(inner, st, write)
            }
            View::Transpose(inner) => {
                let i = self.pop(st)?;
                let j = self.pop(st)?;
                st.idx.push(i);
                st.idx.push(j);
                self.resolve(inner, st, write)
            }
            View::Slide(step, inner) => {
                if write {
                    return Err(K::Unsupported("writing through slide".into()).into());
                }
                let i = self.pop(st)?;
                let j = self.pop(st)?;
                st.idx.push(i.scale(*step).add(&j));
                self.resolve(inner, st, write)
            }
            View::Pad { left, len, mode, inner } => {
                if write {
                    return Err(K::Unsupported("writing through pad".into()).into());
                }
                let i = self.pop(st)?;
                let k = i.plus(-left);
                match mode {
                    PadMode::Clamp => {
                        st.idx.push(k.clamp_to(0, len - 1, &self.ranges));
                        self.resolve(inner, st, write)
                    }
                    PadMode::Constant(c) => {
                        let (lo, hi) = self.ranges.of(&k);
                        let fill = if st.vec > 1 { Expr::Splat(*c, st.vec) } else { Expr::Lit(*c) };
                        if lo >= 0 && hi < *len {
                            st.idx.push(k);
                            return self.resolve(inner, st, write);
                        }
                        if hi < 0 || lo >= *len {
                            return Ok(Resolved::Value(fill));
                        }
                        st.idx.push(k.clone());
                        let e = match self.resolve(inner, st, write)? {
                            Resolved::Place(p) => Expr::Load(p),
                            Resolved::Value(e) => e,
                        };
                        Ok(Resolved::Value(Expr::Select(
                            Box::new(Expr::InRange(k, 0, *len)),
                            Box::new(e),
                            Box::new(fill),
                        )))
                    }
                }
            }
            View::Zip(vs) => {
                let i = self.pop(st)?;
                let k = st.tup.pop().ok_or_else(|| {
                    CodegenError::from(K::Unsupported("a whole tuple of arrays used as a value".into()))
                })?;
                st.idx.push(i);
                let v = vs.get(k as usize).ok_or_else(|| CodegenError::from(K::Internal("zip component".into())))?;
                self.resolve(v, st, write)
            }
            View::Tuple(vs) => {
                let k = st
                    .tup
                    .pop()
                    .ok_or_else(|| CodegenError::from(K::Unsupported("a whole tuple used as a value".into())))?;
                let v = vs.get(k as usize).ok_or_else(|| CodegenError::from(K::Internal("tuple component".into())))?;
                self.resolve(v, st, write)
            }
            View::Get(k, inner) => {
                st.tup.push(*k);
                self.resolve(inner, st, write)
            }
            View::AsVector(w, inner) => {
                let i = self.pop(st)?;
                if st.vec != 1 || st.lane.is_some() {
                    return Err(K::Unsupported("nested asVector".into()).into());
                }
                st.idx.push(i.scale(*w as i64));
                st.vec = *w;
                self.resolve(inner, st, write)
            }
            View::AsScalar(w, inner) => {
                let k = self.pop(st)?;
                let w = *w as i64;
                if st.vec > 1 {
                    if st.vec as i64 == w && k.rem(w, &self.ranges).as_const() == Some(0) {
                        st.idx.push(k.div(w, &self.ranges));
                        st.vec = 1;
                        return self.resolve(inner, st, write);
                    }
                    return Err(K::Unsupported("asVector of asScalar with another width".into()).into());
                }
                if st.lane.is_some() {
                    return Err(K::Unsupported("nested asScalar".into()).into());
                }
                st.idx.push(k.div(w, &self.ranges));
                st.lane = Some(k.rem(w, &self.ranges));
                self.resolve(inner, st, write)
            }
            View::MapF { f, env, inner } => {
                let i = self.pop(st)?;
                let saved = std::mem::replace(&mut self.env, env.clone());
                let r = self.gen(*f, vec![inner.clone().at(i)], None);
                self.env = saved;
                let v = r?.view;
                self.resolve(&v, st, write)
            }
            View::MapInv { inv, inner } => {
                let i = self.pop(st)?;
                let mut v = inner.clone().at(i);
                for op in inv {
                    v = op.apply(v);
                }
                self.resolve(&v, st, write)
            }
            View::Value(e) => {
                if write {
                    return Err(K::Internal("write to a computed value".into()).into());
                }
                if !st.idx.is_empty() || !st.tup.is_empty() {
                    return Err(K::Internal("indexing a scalar".into()).into());
                }
                match st.lane.take() {
                    None => Ok(Resolved::Value(e.clone())),
                    Some(l) => match l.as_const() {
                        Some(c) => Ok(Resolved::Value(Expr::Lane(Box::new(e.clone()), c as u32))),
                        None => Err(K::Unsupported("a vector lane chosen at run time".into()).into()),
                    },
                }
            }
        }
    }

    /// Turns barrier slots into barriers where a read needed them, and drops the others.
    fn finish_slots(&self, body: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in body {
            match s {
                Stmt::Comment(c) if c.starts_with('\u{0}') => {
                    let slot = c.trim_start_matches("\u{0}slot ").parse::<usize>().ok().and_then(|i| self.slots.get(i));
                    if let Some(slot) = slot.filter(|s| s.active) {
                        out.push(Stmt::Barrier {
                            global: slot.global,
                            reason: format!("other threads read what {} wrote", slot.writer),
                        });
                    }
                }
                Stmt::Loop { var, kind, extent, stride, trips, origin, body } => {
                    out.push(Stmt::Loop { var, kind, extent, stride, trips, origin, body: self.finish_slots(body) })
                }
                s => out.push(s),
            }
        }
        out
    }
}

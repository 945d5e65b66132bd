//! Fast paths for scalar functions.
//!
//! A function whose body only combines scalars (operators, `select`, casts, tuple building and
//! projection, `let`, captured scalars and literals) is compiled to a small expression tree
//! ([`KExpr`]). `map` then evaluates it once over whole columns (one tight loop per operator,
//! no per-element allocation), and `reduce` folds with it element by element without going
//! through the general evaluator. Anything else falls back to the general path.

use super::eval::Interp;
use super::scalar;
use super::value::{Array, Buffer, Func, Scalar, Tree, Value, View};
use crate::ast::{BinOp, Node, NodeId, Prim, UnOp};
use crate::types::ScalarKind;
use std::borrow::Cow;
use std::sync::Arc;

/// An expression over input scalars (`In`), earlier `let` values (`Slot`) and constants.
#[derive(Clone, Debug)]
pub(crate) enum KExpr {
    In(usize),
    Slot(usize),
    Const(Scalar),
    Bin(BinOp, Box<KExpr>, Box<KExpr>),
    Un(UnOp, Box<KExpr>),
    Cast(ScalarKind, Box<KExpr>),
    Select(Box<(KExpr, KExpr, KExpr)>),
}

/// A compiled value: a scalar expression or a tuple of them.
#[derive(Clone, Debug)]
enum KVal {
    E(KExpr),
    Tup(Vec<KVal>),
}

/// A compiled function: `let` values to compute first, in order, then the result.
struct Kernel {
    lets: Vec<KExpr>,
    out: KVal,
}

/// Largest function body (in nodes) worth compiling.
const BUDGET: usize = 4096;

struct Compiler<'c, 'a> {
    it: &'c Interp<'a>,
    /// The environment the function was created in.
    outer: &'c [Value],
    /// Compiled values of the binders inside the function, innermost last.
    kenv: Vec<KVal>,
    lets: Vec<KExpr>,
    budget: usize,
}

fn from_value(v: &Value) -> Option<KVal> {
    match v {
        Value::Scalar(s) => Some(KVal::E(KExpr::Const(*s))),
        Value::Tuple(vs) => Some(KVal::Tup(vs.iter().map(from_value).collect::<Option<_>>()?)),
        _ => None,
    }
}

/// True when evaluating `e` may divide (which may fail), not counting `let` values.
fn has_div(e: &KExpr) -> bool {
    match e {
        KExpr::In(_) | KExpr::Slot(_) | KExpr::Const(_) => false,
        KExpr::Bin(op, a, b) => matches!(op, BinOp::Div | BinOp::Mod) || has_div(a) || has_div(b),
        KExpr::Un(_, a) | KExpr::Cast(_, a) => has_div(a),
        KExpr::Select(s) => has_div(&s.0) || has_div(&s.1) || has_div(&s.2),
    }
}

/// `select(c, a, b)`; `None` when `a` or `b` may fail: only the selected one is evaluated, as
/// C's `?:`, and a column evaluates both.
fn select_expr(c: KExpr, a: KExpr, b: KExpr) -> Option<KExpr> {
    if has_div(&a) || has_div(&b) {
        return None;
    }
    Some(KExpr::Select(Box::new((c, a, b))))
}

/// `a op b`; `None` for `&&`/`||` whose right side may fail (C would skip it).
fn bin_expr(op: BinOp, a: KExpr, b: KExpr) -> Option<KExpr> {
    if matches!(op, BinOp::And | BinOp::Or) && has_div(&b) {
        return None;
    }
    Some(KExpr::Bin(op, Box::new(a), Box::new(b)))
}

impl Compiler<'_, '_> {
    fn node(&self, id: NodeId) -> Option<&Node> {
        self.it.prog.nodes.get(id.index())
    }

    fn compile(&mut self, id: NodeId) -> Option<KVal> {
        self.budget = self.budget.checked_sub(1)?;
        match self.node(id)? {
            Node::Var(k) => {
                let k = *k as usize;
                if k < self.kenv.len() {
                    Some(self.kenv[self.kenv.len() - 1 - k].clone())
                } else {
                    let j = k - self.kenv.len();
                    from_value(self.outer.get(self.outer.len().checked_sub(1 + j)?)?)
                }
            }
            Node::Param(i) => from_value(self.it.params.get(*i as usize)?),
            Node::Lit(l) => Some(KVal::E(KExpr::Const(Scalar::from_lit(*l)))),
            Node::Let(v, b) => {
                let (v, b) = (*v, *b);
                let x = self.compile(v)?;
                let x = self.share(x);
                self.kenv.push(x);
                let r = self.compile(b);
                self.kenv.pop();
                r
            }
            Node::App(..) => {
                let (head, args) = self.it.prog.spine(id);
                match self.node(head)? {
                    Node::Prim(p) if args.len() == p.arity() => self.prim(p.clone(), &args),
                    Node::Lam(..) => {
                        // A lambda applied in place: bind its arguments.
                        let mut vals = Vec::with_capacity(args.len());
                        for a in &args {
                            let x = self.compile(*a)?;
                            vals.push(self.share(x));
                        }
                        let depth = self.kenv.len();
                        let mut node = head;
                        for v in vals {
                            match self.node(node)? {
                                Node::Lam(b, _) => {
                                    node = *b;
                                    self.kenv.push(v);
                                }
                                _ => return None,
                            }
                        }
                        let r = self.compile(node);
                        self.kenv.truncate(depth);
                        r
                    }
                    _ => None,
                }
            }
            Node::Prim(_) | Node::Lam(..) => None,
        }
    }

    /// The value outside the function that `id` names, through projections: a captured
    /// variable or a parameter, or a field of one (`p.0` where `p` pairs a scalar with an
    /// array: the scalar compiles although the whole pair does not).
    fn outer(&self, id: NodeId) -> Option<&Value> {
        match self.node(id)? {
            Node::Var(k) => {
                let j = (*k as usize).checked_sub(self.kenv.len())?;
                self.outer.get(self.outer.len().checked_sub(1 + j)?)
            }
            Node::Param(i) => self.it.params.get(*i as usize),
            Node::App(..) => match self.it.prog.spine(id) {
                (head, args) if args.len() == 1 => match (self.node(head)?, self.outer(args[0])?) {
                    (Node::Prim(Prim::Get(i)), Value::Tuple(vs)) => vs.get(*i as usize),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// Gives a computed value a slot, so that its uses do not compute it again.
    fn share(&mut self, x: KVal) -> KVal {
        match x {
            KVal::E(e @ (KExpr::In(_) | KExpr::Slot(_) | KExpr::Const(_))) => KVal::E(e),
            KVal::E(e) => {
                self.lets.push(e);
                KVal::E(KExpr::Slot(self.lets.len() - 1))
            }
            KVal::Tup(vs) => KVal::Tup(vs.into_iter().map(|v| self.share(v)).collect()),
        }
    }

    fn expr(&mut self, id: NodeId) -> Option<KExpr> {
        match self.compile(id)? {
            KVal::E(e) => Some(e),
            KVal::Tup(_) => None,
        }
    }

    fn prim(&mut self, p: Prim, args: &[NodeId]) -> Option<KVal> {
        let e = match p {
            Prim::Bin(op) => {
                let a = self.expr(args[0])?;
                let b = self.expr(args[1])?;
                bin_expr(op, a, b)?
            }
            Prim::Un(op) => KExpr::Un(op, Box::new(self.expr(args[0])?)),
            Prim::Cast(k) => KExpr::Cast(k, Box::new(self.expr(args[0])?)),
            Prim::Select => {
                let c = self.expr(args[0])?;
                let a = self.expr(args[1])?;
                let b = self.expr(args[2])?;
                select_expr(c, a, b)?
            }
            Prim::Get(i) => {
                if let Some(Value::Tuple(vs)) = self.outer(args[0]) {
                    return from_value(vs.get(i as usize)?);
                }
                return match self.compile(args[0])? {
                    KVal::Tup(vs) => vs.get(i as usize).cloned(),
                    KVal::E(_) => None,
                };
            }
            Prim::Tuple(_) => {
                let mut vs = Vec::with_capacity(args.len());
                for a in args {
                    vs.push(self.compile(*a)?);
                }
                return Some(KVal::Tup(vs));
            }
            Prim::To(_) => return self.compile(args[0]),
            _ => return None,
        };
        Some(KVal::E(e))
    }
}

/// Compiles `f` applied to arguments of the given structures.
fn compile_func(it: &Interp<'_>, f: &Value, params: Vec<KVal>) -> Option<Kernel> {
    let Value::Func(func) = f else { return None };
    match &**func {
        Func::Closure { lam, env } => {
            let mut c = Compiler { it, outer: env, kenv: Vec::new(), lets: Vec::new(), budget: BUDGET };
            let mut node = *lam;
            for p in params {
                match c.node(node)? {
                    Node::Lam(b, _) => {
                        node = *b;
                        c.kenv.push(p);
                    }
                    _ => return None,
                }
            }
            let out = c.compile(node)?;
            Some(Kernel { lets: c.lets, out })
        }
        Func::Partial { prim, args } => {
            let Some(Node::Prim(p)) = it.prog.nodes.get(prim.index()) else { return None };
            if args.len() + params.len() != p.arity() {
                return None;
            }
            let mut vals: Vec<KVal> = args.iter().map(from_value).collect::<Option<_>>()?;
            vals.extend(params);
            let e = |v: &KVal| match v {
                KVal::E(e) => Some(e.clone()),
                KVal::Tup(_) => None,
            };
            let out = match p {
                Prim::Bin(op) => KVal::E(bin_expr(*op, e(&vals[0])?, e(&vals[1])?)?),
                Prim::Un(op) => KVal::E(KExpr::Un(*op, Box::new(e(&vals[0])?))),
                Prim::Cast(k) => KVal::E(KExpr::Cast(*k, Box::new(e(&vals[0])?))),
                Prim::Select => KVal::E(select_expr(e(&vals[0])?, e(&vals[1])?, e(&vals[2])?)?),
                Prim::Get(i) => match &vals[0] {
                    KVal::Tup(vs) => vs.get(*i as usize)?.clone(),
                    KVal::E(_) => return None,
                },
                Prim::To(_) => vals[0].clone(),
                _ => return None,
            };
            Some(Kernel { lets: Vec::new(), out })
        }
    }
}

/// The element structure of a one-dimensional array of scalars or tuples of scalars, as
/// inputs numbered from `next`, with the views holding them.
fn elem_inputs<'v>(arr: &'v Array, next: &mut usize) -> Option<(KVal, Vec<&'v View>)> {
    fn walk<'v>(t: &'v Tree, next: &mut usize, leaves: &mut Vec<&'v View>) -> Option<KVal> {
        match t {
            Tree::Leaf(v) if !v.vec && v.dims.len() == 1 => {
                leaves.push(v);
                *next += 1;
                Some(KVal::E(KExpr::In(*next - 1)))
            }
            Tree::Tuple(ts) => Some(KVal::Tup(ts.iter().map(|t| walk(t, next, leaves)).collect::<Option<_>>()?)),
            _ => None,
        }
    }
    if arr.dims.len() != 1 {
        return None;
    }
    let mut leaves = Vec::new();
    let kv = walk(&arr.tree, next, &mut leaves)?;
    Some((kv, leaves))
}

/// Column of values for a vectorized evaluation: one value for all, or one per element.
#[derive(Debug)]
enum Col<'a> {
    C(Scalar),
    F(Cow<'a, [f32]>),
    I(Cow<'a, [i32]>),
    B(Cow<'a, [bool]>),
}

/// A borrowed column or a constant.
#[derive(Clone, Copy)]
enum Src<'s, T> {
    S(&'s [T]),
    C(T),
}

impl<T: Copy> Src<'_, T> {
    #[inline]
    fn get(&self, i: usize) -> T {
        match self {
            Src::S(s) => s[i],
            Src::C(c) => *c,
        }
    }
}

/// `f` over two columns of `n` values; an error, not an abort, when the result's memory
/// cannot be had.
#[inline]
fn map2<T: Copy, U: Copy, O>(x: Src<'_, T>, y: Src<'_, U>, n: usize, f: impl Fn(T, U) -> O) -> Result<Vec<O>, String> {
    match (x, y) {
        (Src::S(a), Src::S(b)) => owned(n, a.iter().zip(b).map(|(p, q)| f(*p, *q))),
        (Src::S(a), Src::C(c)) => owned(n, a.iter().map(|p| f(*p, c))),
        (Src::C(c), Src::S(b)) => owned(n, b.iter().map(|q| f(c, *q))),
        (Src::C(c), Src::C(d)) => owned(n, (0..n).map(|_| f(c, d))),
    }
}

/// The `n` values of `it` ([`super::try_collect`]), with its error as a message.
fn owned<T>(n: usize, it: impl Iterator<Item = T>) -> Result<Vec<T>, String> {
    super::try_collect(n, it).map_err(|e| e.to_string())
}

impl<'a> Col<'a> {
    fn column(v: &'a View) -> Col<'a> {
        let d = v.dims[0];
        fn take<T: Copy>(b: &[T], off: usize, len: usize, stride: usize) -> Cow<'_, [T]> {
            if len == 0 {
                Cow::Borrowed(&[])
            } else if stride == 1 || len == 1 {
                Cow::Borrowed(&b[off..off + len])
            } else {
                Cow::Owned((0..len).map(|i| b[off + i * stride]).collect())
            }
        }
        match &*v.buf {
            Buffer::F32(b) => Col::F(take(b, v.off, d.len, d.stride)),
            Buffer::I32(b) => Col::I(take(b, v.off, d.len, d.stride)),
            Buffer::Bool(b) => Col::B(take(b, v.off, d.len, d.stride)),
        }
    }

    fn borrow(&self) -> Col<'_> {
        match self {
            Col::C(s) => Col::C(*s),
            Col::F(c) => Col::F(Cow::Borrowed(c)),
            Col::I(c) => Col::I(Cow::Borrowed(c)),
            Col::B(c) => Col::B(Cow::Borrowed(c)),
        }
    }

    fn into_static(self) -> Col<'static> {
        match self {
            Col::C(s) => Col::C(s),
            Col::F(c) => Col::F(Cow::Owned(c.into_owned())),
            Col::I(c) => Col::I(Cow::Owned(c.into_owned())),
            Col::B(c) => Col::B(Cow::Owned(c.into_owned())),
        }
    }

    fn get(&self, i: usize) -> Scalar {
        match self {
            Col::C(s) => *s,
            Col::F(c) => Scalar::F32(c[i]),
            Col::I(c) => Scalar::I32(c[i]),
            Col::B(c) => Scalar::Bool(c[i]),
        }
    }

    fn f32s(&self) -> Option<Src<'_, f32>> {
        match self {
            Col::C(Scalar::F32(x)) => Some(Src::C(*x)),
            Col::F(c) => Some(Src::S(c)),
            _ => None,
        }
    }

    fn i32s(&self) -> Option<Src<'_, i32>> {
        match self {
            Col::C(Scalar::I32(x)) => Some(Src::C(*x)),
            Col::I(c) => Some(Src::S(c)),
            _ => None,
        }
    }

    fn from_scalars(v: Vec<Scalar>) -> Result<Col<'static>, String> {
        let mismatch = || "values of different types in one array".to_string();
        Ok(match v.first() {
            None | Some(Scalar::F32(_)) => Col::F(Cow::Owned(
                v.iter()
                    .map(|s| if let Scalar::F32(x) = s { Some(*x) } else { None })
                    .collect::<Option<_>>()
                    .ok_or_else(mismatch)?,
            )),
            Some(Scalar::I32(_)) => Col::I(Cow::Owned(
                v.iter()
                    .map(|s| if let Scalar::I32(x) = s { Some(*x) } else { None })
                    .collect::<Option<_>>()
                    .ok_or_else(mismatch)?,
            )),
            Some(Scalar::Bool(_)) => Col::B(Cow::Owned(
                v.iter()
                    .map(|s| if let Scalar::Bool(x) = s { Some(*x) } else { None })
                    .collect::<Option<_>>()
                    .ok_or_else(mismatch)?,
            )),
        })
    }

    fn into_buffer(self, n: usize) -> Buffer {
        match self {
            Col::C(Scalar::F32(x)) => Buffer::F32(vec![x; n]),
            Col::C(Scalar::I32(x)) => Buffer::I32(vec![x; n]),
            Col::C(Scalar::Bool(x)) => Buffer::Bool(vec![x; n]),
            Col::F(c) => Buffer::F32(c.into_owned()),
            Col::I(c) => Buffer::I32(c.into_owned()),
            Col::B(c) => Buffer::Bool(c.into_owned()),
        }
    }
}

fn generic<'a>(n: usize, f: impl Fn(usize) -> Result<Scalar, String>) -> Result<Col<'a>, String> {
    Col::from_scalars((0..n).map(f).collect::<Result<_, _>>()?)
}

fn vbin<'a>(op: BinOp, a: Col<'_>, b: Col<'_>, n: usize) -> Result<Col<'a>, String> {
    if let (Col::C(x), Col::C(y)) = (&a, &b) {
        return Ok(Col::C(scalar::bin(op, *x, *y)?));
    }
    if let (Some(x), Some(y)) = (a.f32s(), b.f32s()) {
        let v = match op {
            BinOp::Add => map2(x, y, n, |p, q| p + q)?,
            BinOp::Sub => map2(x, y, n, |p, q| p - q)?,
            BinOp::Mul => map2(x, y, n, |p, q| p * q)?,
            BinOp::Div => map2(x, y, n, |p, q| p / q)?,
            _ => {
                if let Some(f) = scalar::f32_arith(op) {
                    map2(x, y, n, f)?
                } else if let Some(f) = scalar::compare::<f32>(op) {
                    return Ok(Col::B(Cow::Owned(map2(x, y, n, |p, q| f(&p, &q))?)));
                } else {
                    return generic(n, |i| scalar::bin(op, a.get(i), b.get(i)));
                }
            }
        };
        return Ok(Col::F(Cow::Owned(v)));
    }
    if let (Some(x), Some(y)) = (a.i32s(), b.i32s()) {
        let v = match op {
            BinOp::Add => map2(x, y, n, i32::wrapping_add)?,
            BinOp::Sub => map2(x, y, n, i32::wrapping_sub)?,
            BinOp::Mul => map2(x, y, n, i32::wrapping_mul)?,
            BinOp::Div | BinOp::Mod => {
                if (0..n).any(|i| y.get(i) == 0) {
                    scalar::i32_div(op, 1, 0)?;
                }
                if op == BinOp::Div {
                    map2(x, y, n, i32::wrapping_div)?
                } else {
                    map2(x, y, n, i32::wrapping_rem)?
                }
            }
            _ => {
                if let Some(f) = scalar::i32_arith(op) {
                    map2(x, y, n, f)?
                } else if let Some(f) = scalar::compare::<i32>(op) {
                    return Ok(Col::B(Cow::Owned(map2(x, y, n, |p, q| f(&p, &q))?)));
                } else {
                    return generic(n, |i| scalar::bin(op, a.get(i), b.get(i)));
                }
            }
        };
        return Ok(Col::I(Cow::Owned(v)));
    }
    generic(n, |i| scalar::bin(op, a.get(i), b.get(i)))
}

fn vun<'a>(op: UnOp, a: Col<'_>, n: usize) -> Result<Col<'a>, String> {
    match (&a, scalar::f32_un(op)) {
        (Col::C(x), _) => Ok(Col::C(scalar::un(op, *x)?)),
        (Col::F(c), Some(f)) => Ok(Col::F(Cow::Owned(owned(c.len(), c.iter().map(|x| f(*x)))?))),
        _ => generic(n, |i| scalar::un(op, a.get(i))),
    }
}

fn vcast<'a>(k: ScalarKind, a: Col<'a>, n: usize) -> Result<Col<'a>, String> {
    Ok(match (k, a) {
        (_, Col::C(x)) => Col::C(scalar::cast(k, x)),
        (ScalarKind::F32, a @ Col::F(_)) | (ScalarKind::I32, a @ Col::I(_)) | (ScalarKind::Bool, a @ Col::B(_)) => a,
        (ScalarKind::F32, Col::I(c)) => Col::F(Cow::Owned(owned(c.len(), c.iter().map(|x| *x as f32))?)),
        (ScalarKind::I32, Col::F(c)) => Col::I(Cow::Owned(owned(c.len(), c.iter().map(|x| *x as i32))?)),
        (_, a) => generic(n, |i| Ok(scalar::cast(k, a.get(i))))?,
    })
}

fn vselect<'a>(c: Col<'_>, a: Col<'a>, b: Col<'a>, n: usize) -> Result<Col<'a>, String> {
    match c {
        Col::C(Scalar::Bool(c)) => {
            if let (Col::C(x), Col::C(y)) = (&a, &b) {
                scalar::select_scalar(c, *x, *y)?;
            } else if (0..n.min(1)).any(|i| a.get(i).kind() != b.get(i).kind()) {
                scalar::select_scalar(c, a.get(0), b.get(0))?;
            }
            Ok(if c { a } else { b })
        }
        c => generic(n, |i| match c.get(i) {
            Scalar::Bool(ci) => scalar::select_scalar(ci, a.get(i), b.get(i)),
            s => Err(format!("select expects a bool condition, found {}", s.kind().name())),
        }),
    }
}

fn veval<'a>(e: &KExpr, ins: &'a [Col<'a>], slots: &'a [Col<'static>], n: usize) -> Result<Col<'a>, String> {
    const INTERNAL: &str = "internal error: bad kernel input";
    Ok(match e {
        KExpr::In(i) => ins.get(*i).ok_or(INTERNAL)?.borrow(),
        KExpr::Slot(i) => slots.get(*i).ok_or(INTERNAL)?.borrow(),
        KExpr::Const(s) => Col::C(*s),
        KExpr::Bin(op, a, b) => vbin(*op, veval(a, ins, slots, n)?, veval(b, ins, slots, n)?, n)?,
        KExpr::Un(op, a) => vun(*op, veval(a, ins, slots, n)?, n)?,
        KExpr::Cast(k, a) => vcast(*k, veval(a, ins, slots, n)?, n)?,
        KExpr::Select(s) => {
            vselect(veval(&s.0, ins, slots, n)?, veval(&s.1, ins, slots, n)?, veval(&s.2, ins, slots, n)?, n)?
        }
    })
}

fn seval(e: &KExpr, ins: &[Scalar], slots: &[Scalar]) -> Result<Scalar, String> {
    const INTERNAL: &str = "internal error: bad kernel input";
    Ok(match e {
        KExpr::In(i) => *ins.get(*i).ok_or(INTERNAL)?,
        KExpr::Slot(i) => *slots.get(*i).ok_or(INTERNAL)?,
        KExpr::Const(s) => *s,
        KExpr::Bin(op, a, b) => {
            let x = seval(a, ins, slots)?;
            match (op, x) {
                (BinOp::And, Scalar::Bool(false)) | (BinOp::Or, Scalar::Bool(true)) => x,
                _ => scalar::bin(*op, x, seval(b, ins, slots)?)?,
            }
        }
        KExpr::Un(op, a) => scalar::un(*op, seval(a, ins, slots)?)?,
        KExpr::Cast(k, a) => scalar::cast(*k, seval(a, ins, slots)?),
        KExpr::Select(s) => match seval(&s.0, ins, slots)? {
            Scalar::Bool(c) => seval(if c { &s.1 } else { &s.2 }, ins, slots)?,
            c => return Err(format!("select expects a bool condition, found {}", c.kind().name())),
        },
    })
}

/// `map(f, xs)` by evaluating `f` over whole columns, when `f` is a scalar function and `xs`
/// holds scalars or tuples of scalars.
pub(crate) fn try_map(it: &Interp<'_>, f: &Value, arr: &Array) -> Result<Option<Value>, String> {
    let mut next = 0;
    let Some((kv, leaves)) = elem_inputs(arr, &mut next) else { return Ok(None) };
    let Some(k) = compile_func(it, f, vec![kv]) else { return Ok(None) };
    let n = arr.len();
    let ins: Vec<Col<'_>> = leaves.iter().map(|v| Col::column(v)).collect();
    let mut slots: Vec<Col<'static>> = Vec::with_capacity(k.lets.len());
    for l in &k.lets {
        let c = veval(l, &ins, &slots, n)?.into_static();
        slots.push(c);
    }
    fn build(kv: &KVal, ins: &[Col<'_>], slots: &[Col<'static>], n: usize) -> Result<Tree, String> {
        Ok(match kv {
            KVal::E(e) => Tree::Leaf(View::contiguous(veval(e, ins, slots, n)?.into_buffer(n), &[n], false)),
            KVal::Tup(vs) => Tree::Tuple(vs.iter().map(|v| build(v, ins, slots, n)).collect::<Result<_, _>>()?),
        })
    }
    let tree = build(&k.out, &ins, &slots, n)?;
    Ok(Some(Value::Array(Arc::new(Array { dims: vec![n], tree }))))
}

/// True when `e` reads input `i`, directly or through `let` values.
fn uses_input(e: &KExpr, i: usize, lets: &[KExpr]) -> bool {
    match e {
        KExpr::In(j) => *j == i,
        KExpr::Slot(j) => match lets.get(*j) {
            Some(l) => uses_input(l, i, lets),
            None => true,
        },
        KExpr::Const(_) => false,
        KExpr::Bin(_, a, b) => uses_input(a, i, lets) || uses_input(b, i, lets),
        KExpr::Un(_, a) | KExpr::Cast(_, a) => uses_input(a, i, lets),
        KExpr::Select(s) => uses_input(&s.0, i, lets) || uses_input(&s.1, i, lets) || uses_input(&s.2, i, lets),
    }
}

/// A fold `acc = acc op g(x)` with one scalar accumulator (input 0) that `g` does not read:
/// `g` runs over whole columns, then a tight loop folds them in order.
fn fold_column(k: &Kernel, leaves: &[&View], init: Scalar, n: usize) -> Result<Option<Scalar>, String> {
    let KVal::E(KExpr::Bin(op, lhs, rhs)) = &k.out else { return Ok(None) };
    let acc_first = matches!(**lhs, KExpr::In(0));
    let g = if acc_first {
        rhs
    } else if matches!(**rhs, KExpr::In(0)) && matches!(op, BinOp::Add | BinOp::Mul) {
        // IEEE addition and multiplication are commutative.
        lhs
    } else {
        return Ok(None);
    };
    if uses_input(g, 0, &k.lets) || k.lets.iter().any(|l| uses_input(l, 0, &k.lets)) {
        return Ok(None);
    }
    let mut ins: Vec<Col<'_>> = vec![Col::C(init)];
    ins.extend(leaves.iter().map(|v| Col::column(v)));
    let mut slots: Vec<Col<'static>> = Vec::with_capacity(k.lets.len());
    for l in &k.lets {
        let c = veval(l, &ins, &slots, n)?.into_static();
        slots.push(c);
    }
    let col = veval(g, &ins, &slots, n)?;
    Ok(Some(match (&col, init, op) {
        (Col::F(c), Scalar::F32(mut acc), BinOp::Add) => {
            for x in c.iter() {
                acc += *x;
            }
            Scalar::F32(acc)
        }
        (Col::F(c), Scalar::F32(mut acc), BinOp::Mul) => {
            for x in c.iter() {
                acc *= *x;
            }
            Scalar::F32(acc)
        }
        (Col::I(c), Scalar::I32(acc), BinOp::Add) => Scalar::I32(c.iter().fold(acc, |a, x| a.wrapping_add(*x))),
        _ => {
            let mut acc = init;
            for i in 0..n {
                acc = scalar::bin(*op, acc, col.get(i))?;
            }
            acc
        }
    }))
}

/// Folds a binary operator over a one-dimensional view of scalars.
fn fold_leaf(op: BinOp, init: Scalar, v: &View) -> Result<Scalar, String> {
    let d = v.dims[0];
    if d.len == 0 {
        return Ok(init);
    }
    let span = v.off..v.off + (d.len - 1) * d.stride + 1;
    match (&*v.buf, init, op) {
        (Buffer::F32(b), Scalar::F32(mut acc), BinOp::Add) => {
            for x in b[span].iter().step_by(d.stride.max(1)) {
                acc += *x;
            }
            Ok(Scalar::F32(acc))
        }
        (Buffer::F32(b), Scalar::F32(mut acc), BinOp::Mul) => {
            for x in b[span].iter().step_by(d.stride.max(1)) {
                acc *= *x;
            }
            Ok(Scalar::F32(acc))
        }
        (Buffer::F32(b), Scalar::F32(acc), BinOp::Max) => {
            Ok(Scalar::F32(b[span].iter().step_by(d.stride.max(1)).fold(acc, |a, x| a.max(*x))))
        }
        (Buffer::F32(b), Scalar::F32(acc), BinOp::Min) => {
            Ok(Scalar::F32(b[span].iter().step_by(d.stride.max(1)).fold(acc, |a, x| a.min(*x))))
        }
        (Buffer::I32(b), Scalar::I32(acc), BinOp::Add) => {
            Ok(Scalar::I32(b[span].iter().step_by(d.stride.max(1)).fold(acc, |a, x| a.wrapping_add(*x))))
        }
        _ => {
            let mut acc = init;
            for i in 0..d.len {
                acc = scalar::bin(op, acc, v.buf.get(v.off + i * d.stride))?;
            }
            Ok(acc)
        }
    }
}

/// `reduce(f, init, xs)` without the general evaluator, when `f` is a scalar function, `init`
/// a scalar or tuple of scalars and `xs` holds scalars or tuples of scalars.
pub(crate) fn try_reduce(it: &Interp<'_>, f: &Value, init: &Value, arr: &Array) -> Result<Option<Value>, String> {
    // A bare operator over scalars: a tight loop.
    if let (Value::Func(func), Value::Scalar(s0), Tree::Leaf(v)) = (f, init, &arr.tree) {
        if let Func::Partial { prim, args } = &**func {
            if let (true, Some(Node::Prim(Prim::Bin(op)))) = (args.is_empty(), it.prog.nodes.get(prim.index())) {
                if arr.dims.len() == 1 && !v.vec && v.dims.len() == 1 {
                    return fold_leaf(*op, *s0, v).map(|s| Some(Value::Scalar(s)));
                }
            }
        }
    }
    fn acc_inputs(v: &Value, next: &mut usize, vals: &mut Vec<Scalar>) -> Option<KVal> {
        match v {
            Value::Scalar(s) => {
                vals.push(*s);
                *next += 1;
                Some(KVal::E(KExpr::In(*next - 1)))
            }
            Value::Tuple(vs) => Some(KVal::Tup(vs.iter().map(|c| acc_inputs(c, next, vals)).collect::<Option<_>>()?)),
            _ => None,
        }
    }
    let mut next = 0;
    let mut ins = Vec::new();
    let Some(acc) = acc_inputs(init, &mut next, &mut ins) else { return Ok(None) };
    let a = next;
    let Some((ekv, leaves)) = elem_inputs(arr, &mut next) else { return Ok(None) };
    let Some(k) = compile_func(it, f, vec![acc.clone(), ekv]) else { return Ok(None) };
    // The result must have the accumulator's structure.
    fn flat<'k>(acc: &KVal, out: &'k KVal, res: &mut Vec<&'k KExpr>) -> bool {
        match (acc, out) {
            (KVal::E(_), KVal::E(e)) => {
                res.push(e);
                true
            }
            (KVal::Tup(xs), KVal::Tup(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| flat(x, y, res)),
            _ => false,
        }
    }
    let mut outs = Vec::with_capacity(a);
    if !flat(&acc, &k.out, &mut outs) {
        return Ok(None);
    }
    if let Some(v) = fold_column(&k, &leaves, ins[0], arr.len())? {
        return Ok(Some(Value::Scalar(v)));
    }
    ins.resize(next, Scalar::Bool(false));
    let mut slots = Vec::with_capacity(k.lets.len());
    let mut tmp = vec![Scalar::Bool(false); a];
    for i in 0..arr.len() {
        for (j, v) in leaves.iter().enumerate() {
            ins[a + j] = v.buf.get(v.off + i * v.dims[0].stride);
        }
        slots.clear();
        for l in &k.lets {
            let s = seval(l, &ins, &slots)?;
            slots.push(s);
        }
        for (t, o) in tmp.iter_mut().zip(&outs) {
            *t = seval(o, &ins, &slots)?;
        }
        ins[..a].copy_from_slice(&tmp);
    }
    fn rebuild(acc: &KVal, ins: &[Scalar]) -> Value {
        match acc {
            KVal::E(KExpr::In(i)) => Value::Scalar(ins[*i]),
            KVal::Tup(vs) => Value::Tuple(vs.iter().map(|v| rebuild(v, ins)).collect()),
            // Accumulator structures only hold inputs.
            KVal::E(_) => Value::Scalar(Scalar::Bool(false)),
        }
    }
    Ok(Some(rebuild(&acc, &ins)))
}

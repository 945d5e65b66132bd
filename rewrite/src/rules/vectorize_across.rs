//! Vectorization across a map over the columns of a matrix: `w` columns computed at once, one in
//! each lane of a vector (outer-loop vectorization, Halide's `vectorize` of an outer variable;
//! the inner step of a GEMM micro-kernel, `examples/matmul_outer.lift`).
//!
//! [`super::vectorize::VectorizeMap`] vectorizes a map over scalars, whose function becomes
//! lane-wise; here each element is a whole column, and the function's body is lifted: every
//! value computed from the column becomes a vector of `w` lanes (lane `j` the value for column
//! `j` of the group), the others stay scalars and are broadcast (`vectorFromScalar`) where they
//! meet a vector.

use super::vectorize::{lane_bin, lane_un, numeric, width};
use super::{derived, Build, Ctx, Rule};
use crate::binders;
use crate::infer::{self, Ty};
use crate::lang::Lift;
use egg::{Id, RecExpr};
use mapsat_ir::ast::{Prim, Width};
use mapsat_ir::{Size, Type};
use std::collections::BTreeMap;

/// The vector width [`VectorizeAcross`] tries (where it divides the number of columns), as the
/// value at the sizes of the new tunable width when there is one; else 2 lanes, a literal width
/// (the tunable width's default, 4, would not divide the columns).
pub const WIDTH: u32 = 4;

/// `vectorize-across`:
///
/// ```text
/// map@B(fun(col => body), transpose(b))
///   =>  asScalar(map@B_v(fun(vcol => body_v), transpose(map@B_r(fun(r => asVector(w, r)), b))))
/// ```
///
/// The columns may also be zipped with arrays of one value per column, `zip(transpose(b), c)`
/// with `c: [S]N` (a bias): each is read `w` values at a time beside them, `asVector(w, c)`,
/// and `vcol` is then a tuple of vectors.
///
/// Conditions: `b: [[S]N]K` with `S` numeric and `w` ([`WIDTH`], else 2) dividing `N` (at the given sizes), and `b`
/// not only a transpose (its rows would be strided); the
/// map's results are numeric scalars; and `body` lifts to `body_v`, where `vcol: [Sxw]K` holds
/// the columns `j*w .. j*w+w-1` of `b`, one in each lane. Lifting retypes every value that
/// depends on `vcol` from scalars to vectors (through `zip`, tuples, `map`, `reduce`, `split`,
/// `join`, `transpose`, `slide` and lane-wise arithmetic and unary functions), and broadcasts a
/// scalar that meets a vector (`x + vectorFromScalar(w, a)`; a reduction's initial value when
/// its accumulator becomes a vector). It fails on anything not lane-wise on a vector:
/// comparisons, logic, `select`, conversions, `pad`, the `toX` staging primitives, and a
/// program that has vectors already.
///
/// Sound because lane `j` of every lifted value is the value the original body computes for
/// column `j` of the group (by induction over the body: lane-wise operators compute on lane `j`
/// from lane `j` of their operands, a broadcast scalar is the same in every lane, and the
/// structural primitives move whole vectors as they moved scalars); `transpose(map(asVector(w),
/// b))` groups the columns of `b` `w` at a time in order, and `asScalar` concatenates the
/// groups' lanes back into the `N` results.
pub struct VectorizeAcross;

impl Rule for VectorizeAcross {
    fn name(&self) -> &'static str {
        "vectorize-across"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let scalars = cx.data(c).ty.array().is_some_and(|(e, _)| numeric(e).is_some());
        if !scalars {
            return Vec::new();
        }
        let maps = cx.maps(c).into_iter();
        maps.filter_map(|(label, g, ys)| vectorize_across(cx, &label, g, ys, &BTreeMap::new())).collect()
    }
}

/// The right-hand side of [`VectorizeAcross`] for `map@label(g, ys)`, `g` read in the forms
/// `forms` ([`Ctx::repr_with`]); `None` when a condition fails.
pub fn vectorize_across(cx: &Ctx, label: &str, g: Id, ys: Id, forms: &BTreeMap<Id, Lift>) -> Option<Build> {
    let calls = cx.calls(ys);
    let (w, columns, vcol) = [WIDTH, 2].into_iter().find_map(|lanes| {
        let w = width(cx, lanes);
        let (columns, vcol) = calls.iter().find_map(|(p, a)| match p {
            Prim::Transpose => vector_transpose(cx, label, a[0], &w),
            Prim::Zip(k) => vector_zip(cx, label, *k, a, &w),
            _ => None,
        })?;
        Some((w, columns, vcol))
    })?;
    let g_v = lift_function(&cx.repr_with(g, forms), &vcol, &w, &cx.eg.analysis.params)?;
    let map = Build::map(&derived(label, "_v"), Build::Expr(g_v), columns);
    Some(Build::call(Prim::AsScalar, vec![map]))
}

/// The columns `transpose(b)` read `w` at a time, `transpose(map@label_r(fun(r => asVector(w,
/// r)), b))`, and the type of its elements, `[Sxw]K`; `None` where the conditions on `b` fail
/// ([`VectorizeAcross`]).
fn vector_transpose(cx: &Ctx, label: &str, b: Id, w: &Width) -> Option<(Build, Type)> {
    // Its rows are read as vectors: not where every form of `b` is a transpose (rows a column
    // apart in memory, which code generation does not read as vectors).
    let is_transpose = |c: Id| cx.eg[c].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Transpose)));
    if cx.eg[b].nodes.iter().all(|n| matches!(n, Lift::App([f, _]) if is_transpose(*f))) {
        return None;
    }
    let (row, k) = cx.data(b).ty.array().map(|(e, n)| (e.clone(), n.clone()))?;
    let (s, n) = row.as_array()?;
    let kind = numeric(s)?;
    divides(cx, n, w)?;
    let as_vector = Build::lam(Build::call(Prim::AsVector(w.clone()), vec![Build::var(0, Some(row.clone()))]));
    let columns = Build::call(Prim::Transpose, vec![Build::map(&derived(label, "_r"), as_vector, Build::Class(b))]);
    Some((columns, Type::array(Type::Vector(kind, w.lanes), k)))
}

/// `zip(transpose(b), c, ..)`, the columns of `b` zipped with arrays of one numeric value per
/// column (a bias), read `w` at a time: the transpose as in [`vector_transpose`], each other
/// array as `asVector(w, c)`, the elements tuples of vectors.
fn vector_zip(cx: &Ctx, label: &str, k: u32, args: &[Id], w: &Width) -> Option<(Build, Type)> {
    let (mut parts, mut tys, mut matrices) = (Vec::new(), Vec::new(), 0);
    for &a in args {
        let transposed = cx.calls(a).into_iter().find_map(|(p, x)| (p == Prim::Transpose).then_some(x[0]));
        if let Some((columns, ty)) = transposed.and_then(|b| vector_transpose(cx, label, b, w)) {
            matrices += 1;
            parts.push(columns);
            tys.push(ty);
            continue;
        }
        let (s, n) = cx.data(a).ty.array()?;
        let kind = numeric(s)?;
        divides(cx, n, w)?;
        parts.push(Build::call(Prim::AsVector(w.clone()), vec![Build::Class(a)]));
        tys.push(Type::Vector(kind, w.lanes));
    }
    let zip = Build::call(Prim::Zip(k), parts);
    (matrices == 1).then_some((zip, Type::Tuple(tys)))
}

/// `Some` when `w` lanes divide `n` at the given sizes.
fn divides(cx: &Ctx, n: &Size, w: &Width) -> Option<()> {
    n.eval(&cx.params.sizes).is_some_and(|n| n % i64::from(w.lanes) == 0).then_some(())
}

/// `fun(col => body)` lifted to `fun(vcol => body_v)` with `vcol` of type `vcol_ty`, its result a
/// numeric vector (a scalar result that does not depend on the column is broadcast); `None`
/// when the body does not lift ([`VectorizeAcross`]).
pub fn lift_function(g: &RecExpr<Lift>, vcol_ty: &Type, w: &Width, params: &[Type]) -> Option<RecExpr<Lift>> {
    // A fused map's function applied in the body (`reduce-map-fusion`) is a redex: reduced first.
    let g = &binders::reduce_lambdas(g);
    let root = Id::from(g.as_ref().len().checked_sub(1)?);
    let Lift::Lam(ann, [body]) = &g[root] else { return None };
    let mut l = Lifter { src: g, out: RecExpr::default(), w, params };
    let mut env = vec![vcol_ty.clone()];
    let b = l.term(*body, &mut env)?;
    let b = match b.ty.known()? {
        Type::Vector(..) => b,
        t if numeric(t).is_some() => l.broadcast(b)?,
        _ => return None,
    };
    let lam = l.out.add(Lift::Lam(ann.as_ref().map(|_| vcol_ty.clone()), [b.id]));
    Some(binders::subterm(&l.out, lam))
}

/// A lifted term: its root in the output and its type there.
struct Val {
    id: Id,
    ty: Ty,
}

impl Val {
    /// True when the value is (or holds) vectors: it depends on the column.
    fn vector(&self) -> bool {
        self.ty.known().is_some_and(has_vector)
    }
}

/// True when `t` is or holds a vector type.
fn has_vector(t: &Type) -> bool {
    match t {
        Type::Vector(..) => true,
        Type::Array(e, _) => has_vector(e),
        Type::Tuple(ts) => ts.iter().any(has_vector),
        Type::Fun(a, r) => has_vector(a) || has_vector(r),
        Type::Scalar(_) => false,
    }
}

/// Lifts the terms of `src` into `out` (see [`VectorizeAcross`]). The environment holds the
/// types of the binders inside the lifted function, innermost last; a variable bound outside it
/// keeps its type.
struct Lifter<'a> {
    src: &'a RecExpr<Lift>,
    out: RecExpr<Lift>,
    w: &'a Width,
    params: &'a [Type],
}

impl Lifter<'_> {
    fn leaf(&mut self, n: Lift, ty: Ty) -> Option<Val> {
        Some(Val { id: self.out.add(n), ty })
    }

    fn term(&mut self, id: Id, env: &mut Vec<Type>) -> Option<Val> {
        match &self.src[id] {
            Lift::Var(i, t) => {
                let k = *i as usize;
                let ty = match k < env.len() {
                    true => env[env.len() - 1 - k].clone(),
                    false => t.clone()?,
                };
                self.leaf(Lift::Var(*i, Some(ty.clone())), Ty::Known(ty))
            }
            Lift::Lit(l) => self.leaf(Lift::Lit(*l), infer::lit(*l)),
            Lift::Param(i) => {
                let ty = self.params.get(*i as usize)?.clone();
                self.leaf(Lift::Param(*i), Ty::Known(ty))
            }
            Lift::Prim(p) if !vector_prim(p) => self.leaf(Lift::Prim(p.clone()), infer::prim(p)),
            Lift::App(_) => self.call(id, env),
            Lift::Prim(_) | Lift::Lam(..) | Lift::Let(_) => None,
        }
    }

    /// A saturated primitive application.
    fn call(&mut self, id: Id, env: &mut Vec<Type>) -> Option<Val> {
        let mut args = Vec::new();
        let mut head = id;
        while let Lift::App([f, a]) = &self.src[head] {
            args.push(*a);
            head = *f;
        }
        args.reverse();
        let Lift::Prim(p) = &self.src[head] else { return None };
        if args.len() != p.arity() || vector_prim(p) {
            return None;
        }
        match p {
            Prim::Map { .. } => self.map(p, args[0], args[1], env),
            Prim::Reduce { .. } => self.reduce(p, args, env),
            _ => {
                let mut vals = args.iter().map(|a| self.term(*a, env)).collect::<Option<Vec<_>>>()?;
                if vals.iter().any(Val::vector) {
                    if !lane_prim(p) {
                        return None;
                    }
                    if matches!(p, Prim::Bin(_)) {
                        vals = vals.into_iter().map(|v| self.broadcast(v)).collect::<Option<_>>()?;
                    }
                }
                self.apply(p, vals)
            }
        }
    }

    /// `p(args)`, typed.
    fn apply(&mut self, p: &Prim, args: Vec<Val>) -> Option<Val> {
        let mut f = Val { id: self.out.add(Lift::Prim(p.clone())), ty: infer::prim(p) };
        for a in args {
            let ty = infer::apply(&f.ty, &a.ty);
            f = Val { id: self.out.add(Lift::app(f.id, a.id)), ty };
        }
        f.ty.known()?;
        Some(f)
    }

    /// A numeric scalar as a vector of `w` equal lanes; a vector as it is.
    fn broadcast(&mut self, v: Val) -> Option<Val> {
        match v.ty.known()? {
            Type::Vector(..) => Some(v),
            Type::Scalar(_) => self.apply(&Prim::VectorFromScalar(self.w.clone()), vec![v]),
            _ => None,
        }
    }

    /// `map(f, xs)`: a lambda's parameter takes the (lifted) element type of `xs`.
    fn map(&mut self, p: &Prim, f: Id, xs: Id, env: &mut Vec<Type>) -> Option<Val> {
        let xs = self.term(xs, env)?;
        let elem = xs.ty.array()?.0.clone();
        let f = match &self.src[f] {
            Lift::Lam(ann, [body]) => self.lambda(ann.is_some(), *body, vec![elem], env)?,
            _ if has_vector(&elem) => return None,
            _ => self.term(f, env)?,
        };
        self.apply(p, vec![f, xs])
    }

    /// `fun(x1 => .. fun(xk => body))` with parameters of types `params`, lifted.
    fn lambda(&mut self, annotated: bool, body: Id, params: Vec<Type>, env: &mut Vec<Type>) -> Option<Val> {
        let depth = env.len();
        env.extend(params.iter().cloned());
        let b = self.term(body, env);
        env.truncate(depth);
        let mut f = b?;
        for t in params.iter().rev() {
            let ty = infer::lam(Some(t), &f.ty);
            f = Val { id: self.out.add(Lift::Lam(annotated.then(|| t.clone()), [f.id])), ty };
        }
        Some(f)
    }

    /// `reduce(op, init, xs)`: the accumulator becomes a vector (its initial value broadcast)
    /// when the lifted operator returns one.
    fn reduce(&mut self, p: &Prim, args: Vec<Id>, env: &mut Vec<Type>) -> Option<Val> {
        let xs = self.term(args[2], env)?;
        let elem = xs.ty.array()?.0.clone();
        let mut init = self.term(args[1], env)?;
        for _ in 0..2 {
            let acc = init.ty.known()?.clone();
            let (op, result) = match &self.src[args[0]] {
                Lift::Lam(a1, [inner]) => {
                    let Lift::Lam(_, [body]) = &self.src[*inner] else { return None };
                    let op = self.lambda(a1.is_some(), *body, vec![acc.clone(), elem.clone()], env)?;
                    let result = match op.ty.known() {
                        Some(Type::Fun(_, r)) => match &**r {
                            Type::Fun(_, r) => (**r).clone(),
                            _ => return None,
                        },
                        _ => return None,
                    };
                    (op, result)
                }
                Lift::Prim(Prim::Bin(o)) if lane_bin(*o) => (self.term(args[0], env)?, elem.clone()),
                _ => return None,
            };
            if result == acc {
                return self.apply(p, vec![op, init, xs]);
            }
            if !matches!(acc, Type::Scalar(_)) {
                return None;
            }
            init = self.broadcast(init)?;
        }
        None
    }
}

/// The primitives that make or take vectors: a body that has them is not lifted.
fn vector_prim(p: &Prim) -> bool {
    matches!(p, Prim::AsVector(_) | Prim::AsScalar | Prim::VectorFromScalar(_))
}

/// The primitives that apply to vectors as to scalars: lane-wise arithmetic and unary
/// functions, and those that only move values (tuples, arrays).
fn lane_prim(p: &Prim) -> bool {
    match p {
        Prim::Bin(op) => lane_bin(*op),
        Prim::Un(op) => lane_un(*op),
        Prim::Get(_) | Prim::Tuple(_) | Prim::Zip(_) | Prim::Split(_) | Prim::Join | Prim::Transpose => true,
        Prim::Slide(..) | Prim::At(_) => true,
        _ => false,
    }
}

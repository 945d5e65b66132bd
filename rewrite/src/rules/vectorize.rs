//! Vectorization: `asVector`/`asScalar` (Lift's `vectorize` and `vectorizeMapZip`, and the
//! simplifications `asScalar∘asVector = id`).
//!
//! A map over scalars becomes a map over short vectors whose function is the same function
//! applied lane-wise. The IR applies lane-wise exactly the arithmetic of two operands of one
//! vector type and the unary functions (the checker refuses a scalar mixed with a vector, a
//! comparison of vectors, a conversion of a vector and a `select` on vectors), so
//! [`VectorizeMap`] only rewrites functions built from those: no literal (there is no vector
//! literal), no free variable (it would be a scalar), no comparison, no conversion.

use super::{derived, Build, Ctx, Rule};
use crate::lang::Lift;
use egg::{Id, RecExpr};
use mapsat_ir::ast::{BinOp, Prim, UnOp, Width};
use mapsat_ir::{ScalarKind, Type};

/// Vector widths [`VectorizeMap`] tries (each only where it divides the length), as the value at
/// the sizes of the new tunable width (`Params::vector_width`) when there is one.
pub const WIDTHS: [u32; 1] = [4];

/// `vectorize-map`:
///
/// ```text
/// map@A(f, xs)            =>  asScalar(map@A_v(f_v, asVector(w, xs)))
/// map@A(f, zip(a1, .., ak))  =>  asScalar(map@A_v(f_v, zip(asVector(w, a1), .., asVector(w, ak))))
/// ```
///
/// Conditions: the elements of `xs` are numeric scalars (`f32`, `i32`), or, for the zip form,
/// tuples of them; `xs` (each `ai`) is not a `pad` (see `padded`); the map's results are numeric scalars; `w` ([`WIDTHS`]) divides the length
/// at the given sizes (as split-join decides it); and `f` is lane-wise: a unary function
/// (`neg`, `abs`, `exp`...), or a lambda whose body applies only arithmetic operators
/// (`+ - * / %`, `min`, `max`), unary functions and tuple components (`p.0`) to its parameter.
/// `f_v` is `f` with its parameter's type `S` (or `(S1, .., Sk)`) replaced by `Sxw`
/// (`(S1xw, .., Skxw)`).
///
/// Sound because `asVector(w, xs)` groups `xs` into consecutive runs of `w` in order (with
/// `zip` of equal-length arrays, `zip` of the runs is the runs of the `zip`), a lane-wise `f_v`
/// computes on lane `i` what `f` computes on the `i`-th element of the run, and `asScalar`
/// concatenates the runs back. A function with a literal (`x * 2.0`) is not rewritten: the
/// IR has no vector literal, and the checker refuses a scalar operand next to a vector.
pub struct VectorizeMap;

impl Rule for VectorizeMap {
    fn name(&self) -> &'static str {
        "vectorize-map"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        if !numeric_array(cx, c) {
            return out;
        }
        for (label, f, xs) in cx.maps(c) {
            let (Some(len), Some(elem)) = (cx.length(xs), cx.elem(xs)) else { continue };
            for w in WIDTHS.into_iter().filter(|w| len % i64::from(*w) == 0) {
                let Some((input, to)) = vector_input(cx, xs, &elem, w) else { continue };
                let Some(fv) = lanewise(cx, f, &elem, &to) else { continue };
                let map = Build::map(&derived(&label, "_v"), fv, input);
                out.push(Build::call(Prim::AsScalar, vec![map]));
            }
        }
        out
    }
}

/// True when class `c` is an array of numeric scalars.
fn numeric_array(cx: &Ctx, c: Id) -> bool {
    cx.data(c).ty.array().is_some_and(|(e, _)| numeric(e).is_some())
}

/// The kind of a numeric scalar type.
pub fn numeric(t: &Type) -> Option<ScalarKind> {
    match t {
        Type::Scalar(k) if *k != ScalarKind::Bool => Some(*k),
        _ => None,
    }
}

/// `asVector(w, xs)` for an array of scalars, `zip(asVector(w, a1), ..)` for a zip of arrays of
/// scalars, and the new element type.
fn vector_input(cx: &Ctx, xs: Id, elem: &Type, w: u32) -> Option<(Build, Type)> {
    let width = width(cx, w);
    let vec = |a: Id| Build::call(Prim::AsVector(width.clone()), vec![Build::Class(a)]);
    if let Some(k) = numeric(elem) {
        return (!padded(cx, xs)).then(|| (vec(xs), Type::Vector(k, w)));
    }
    let Type::Tuple(ts) = elem else { return None };
    let kinds: Vec<ScalarKind> = ts.iter().map(numeric).collect::<Option<_>>()?;
    let args = cx.calls(xs).into_iter().find_map(|(p, a)| matches!(p, Prim::Zip(_)).then_some(a))?;
    if args.iter().any(|a| padded(cx, *a)) {
        return None;
    }
    let ty = Type::Tuple(kinds.iter().map(|k| Type::Vector(*k, w)).collect());
    Some((Build::call(Prim::Zip(args.len() as u32), args.into_iter().map(vec).collect()), ty))
}

/// The width of `w` lanes a rule writes: the new tunable width where there is one and its value
/// at the sizes is `w`, else the literal `w`.
pub fn width(cx: &Ctx, w: u32) -> Width {
    let var = cx.params.vector_width.clone().filter(|v| cx.params.sizes.get(v) == Some(i64::from(w)));
    Width { lanes: w, var }
}

/// True when class `c` is a `pad` or `padClamp` of an array. The rule leaves maps over a pad
/// alone: a vector whose lanes straddle a bound of the pad (`asVector(4, pad(1, 3, 0.0, xs))`)
/// is read lane by lane, each lane tested on its own (code generation gathers it), so
/// vectorizing such a map gains no vector loads.
fn padded(cx: &Ctx, c: Id) -> bool {
    cx.calls(c).iter().any(|(p, _)| matches!(p, Prim::Pad(..)))
}

/// `f` applied lane-wise to elements of type `to` instead of `from` ([`VectorizeMap`]'s
/// condition), on its smallest representative; `None` when it is not lane-wise.
fn lanewise(cx: &Ctx, f: Id, from: &Type, to: &Type) -> Option<Build> {
    let e = cx.repr(f);
    let nodes = e.as_ref();
    match nodes.last()? {
        Lift::Prim(Prim::Un(op)) if lane_un(*op) => return Some(Build::Class(f)),
        Lift::Lam(..) => {}
        _ => return None,
    }
    let last = nodes.len() - 1;
    let mut out = RecExpr::default();
    for (i, n) in nodes.iter().enumerate() {
        let n = match n {
            Lift::Lam(ann, b) if i == last => Lift::Lam(retype(ann.as_ref(), from, to)?, *b),
            Lift::Var(0, Some(t)) if t == from => Lift::Var(0, Some(to.clone())),
            Lift::App(_) => n.clone(),
            Lift::Prim(Prim::Bin(op)) if lane_bin(*op) => n.clone(),
            Lift::Prim(Prim::Un(op)) if lane_un(*op) => n.clone(),
            Lift::Prim(Prim::Get(_)) if matches!(from, Type::Tuple(_)) => n.clone(),
            _ => return None,
        };
        out.add(n);
    }
    Some(Build::Expr(out))
}

/// A lambda's annotation with `from` replaced by `to` (`None` inside: another annotation).
fn retype(ann: Option<&Type>, from: &Type, to: &Type) -> Option<Option<Type>> {
    match ann {
        None => Some(None),
        Some(t) if t == from => Some(Some(to.clone())),
        Some(_) => None,
    }
}

/// Binary operators the IR applies lane-wise to two vectors of one type, with a vector result.
pub fn lane_bin(op: BinOp) -> bool {
    !op.is_comparison() && !op.is_logical()
}

/// Unary functions the IR applies lane-wise to numeric vectors.
pub fn lane_un(op: UnOp) -> bool {
    op != UnOp::Not
}

/// `asscalar-asvector`:
///
/// ```text
/// asScalar(asVector(w, xs))  =>  xs
/// ```
///
/// Always sound: `asVector` groups `xs` into runs of `w` in order (the checker has seen that
/// `w` divides its length), and `asScalar` concatenates them back.
pub struct AsScalarAsVector;

impl Rule for AsScalarAsVector {
    fn name(&self) -> &'static str {
        "asscalar-asvector"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (p, a) in cx.calls(c) {
            if p != Prim::AsScalar {
                continue;
            }
            for (q, b) in cx.calls(a[0]) {
                if matches!(q, Prim::AsVector(_)) {
                    out.push(Build::Class(b[0]));
                }
            }
        }
        out
    }
}

/// `asvector-asscalar`:
///
/// ```text
/// asVector(w, asScalar(ys))  =>  ys      where ys: [Sxw]n (vectors of the same width w)
/// ```
///
/// Sound under its condition: `asScalar` concatenates the vectors of `ys`, and `asVector(w)`
/// cuts the result into runs of `w`, which are those vectors again. With another width it
/// would regroup the lanes, and is not applied.
pub struct AsVectorAsScalar;

impl Rule for AsVectorAsScalar {
    fn name(&self) -> &'static str {
        "asvector-asscalar"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (p, a) in cx.calls(c) {
            let Prim::AsVector(w) = p else { continue };
            for (q, b) in cx.calls(a[0]) {
                let same = matches!(cx.elem(b[0]), Some(Type::Vector(_, v)) if v == w.lanes);
                if q == Prim::AsScalar && same {
                    out.push(Build::Class(b[0]));
                }
            }
        }
        out
    }
}

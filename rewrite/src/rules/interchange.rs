//! Interchange of nested maps through transposes, of a map and the reductions under it, and
//! the rules that enable and clean them up (η-reduction and η-expansion).

use super::{Build, Ctx, Rule};
use crate::binders;
use crate::lang::Lift;
use egg::{Id, RecExpr};
use mapsat_ir::ast::Prim;
use mapsat_ir::Type;
use std::collections::BTreeMap;

/// `map-interchange`:
///
/// ```text
/// map@A(map@B(f), xs)  =>  transpose(map@B(map@A(f), transpose(xs)))
/// ```
///
/// Sound for any `f` and any two-dimensional `xs`: both sides have `f(xs[i][j])` at `[i][j]`.
/// The loop over rows (`A`) becomes the inner one. Also matches the eta-expanded form
/// `map@A(fun(row => map@B(f, row)), xs)` when `row` is not free in `f` (which then moves out of
/// the binder).
pub struct MapInterchange;

impl Rule for MapInterchange {
    fn name(&self) -> &'static str {
        "map-interchange"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (outer, g, xs) in cx.maps(c) {
            let two_d = cx.elem(xs).is_some_and(|e| e.as_array().is_some());
            if !two_d {
                continue;
            }
            for (inner, f) in inner_maps(cx, g) {
                let swapped =
                    Build::call(Prim::Map { kind: mapsat_ir::ast::MapKind::Abstract, label: outer.clone() }, vec![f]);
                let t = Build::call(Prim::Transpose, vec![Build::Class(xs)]);
                out.push(Build::call(Prim::Transpose, vec![Build::map(&inner, swapped, t)]));
            }
        }
        out
    }
}

/// The inner maps of a map's function `g`: `map@B(f)` itself, or `fun(row => map@B(f, row))`
/// with `row` not free in `f` (then `f` moved out of the binder).
fn inner_maps(cx: &Ctx, g: Id) -> Vec<(String, Build)> {
    let mut out: Vec<(String, Build)> = cx.partial_maps(g).into_iter().map(|(l, f)| (l, Build::Class(f))).collect();
    for body in cx.lambdas(g) {
        for (label, f, row) in cx.maps(body) {
            let is_row = cx.eg[row].nodes.iter().any(|m| matches!(m, Lift::Var(0, _)));
            if is_row && !cx.data(f).free.contains(&0) {
                out.extend(cx.shifted(f, -1).map(|f| (label, f)));
            }
        }
    }
    out
}

/// `transpose-transpose`:
///
/// ```text
/// transpose(transpose(xs))  =>  xs
/// ```
///
/// Sound for every two-dimensional `xs`.
pub struct TransposeTranspose;

impl Rule for TransposeTranspose {
    fn name(&self) -> &'static str {
        "transpose-transpose"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (p, a) in cx.calls(c) {
            if p != Prim::Transpose {
                continue;
            }
            for (q, b) in cx.calls(a[0]) {
                if q == Prim::Transpose {
                    out.push(Build::Class(b[0]));
                }
            }
        }
        out
    }
}

/// `eta`:
///
/// ```text
/// fun(x => F(x))  =>  F
/// ```
///
/// Sound when `x` is not free in `F` (may-free analysis; `F` is moved out of the binder, its
/// free variables lowered by one). Exposes point-free maps (`map@B(f)`) to interchange.
///
/// Not when `F` is a primitive or a partial application of one (`fun(x => transpose(x))`,
/// `fun(x => map@B(f, x))`): such a class is polymorphic (used at several types, e.g. the inner
/// map of a split-join on chunks of 2 and of 4), and merging a lambda into it would give the
/// lambda's variable, typed for one use, to the others (sound as a function, but it breaks the
/// one-type-per-class analysis). [`MapInterchange`] matches the lambda form itself instead.
pub struct Eta;

impl Rule for Eta {
    fn name(&self) -> &'static str {
        "eta"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for body in cx.lambdas(c) {
            for n in &cx.eg[body].nodes {
                let Lift::App([f, x]) = n else { continue };
                let is_x = cx.eg[*x].nodes.iter().any(|m| matches!(m, Lift::Var(0, _)));
                let polymorphic = matches!(cx.data(*f).ty, crate::infer::Ty::Partial(..));
                if is_x && !polymorphic && !cx.data(*f).free.contains(&0) {
                    out.extend(cx.shifted(*f, -1));
                }
            }
        }
        out
    }
}

/// `eta-expand`:
///
/// ```text
/// map@L(F, xs)  =>  map@L(fun(x => F(x)), xs)
/// ```
///
/// Always sound (η): `F` is moved under the new binder `x` (its free variables shifted by one).
/// Only where `F` is not a lambda already (which would stack lambdas without end). A step of the
/// macros ([`super::sequence`]), which need the element of a split as a variable (the tile of
/// `tile-map-map`, the block of `register-block`); not in the main phase, where it would expand
/// every map.
pub struct EtaExpand;

impl Rule for EtaExpand {
    fn name(&self) -> &'static str {
        "eta-expand"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, f, xs) in cx.maps(c) {
            if cx.lambdas(f).is_empty() {
                out.extend(eta_expand(cx, &label, f, xs, &BTreeMap::new()));
            }
        }
        out
    }
}

/// The right-hand side of [`EtaExpand`] for `map@label(f, xs)`, `f` moved under the binder in
/// the forms `forms` ([`Ctx::repr_with`]; none: its smallest term).
pub fn eta_expand(cx: &Ctx, label: &str, f: Id, xs: Id, forms: &BTreeMap<Id, Lift>) -> Option<Build> {
    let f1 = cx.shifted_with(f, 1, forms)?;
    let x = Build::var(0, cx.elem(xs));
    Some(Build::map(label, Build::lam(Build::app(f1, x)), Build::Class(xs)))
}

/// `map-map-interchange`:
///
/// ```text
/// map@A(fun(x => map@B(G, ys)), xs)  =>  transpose(map@B(fun(y => map@A(fun(x => G(y)), xs)), ys))
/// ```
///
/// Sound when `x` is not free in `ys` (may-free analysis; `ys` is then the same array for every
/// `x` and moves out of the binder): both sides have `G(ys[j])` computed with `x = xs[i]` at
/// `[i][j]` (Lift's `mapMapInterchange`, RISE's `transposeAroundMapMapF` for an inner map over
/// an array of its own; [`MapInterchange`] is the case of an inner map over `x` itself). `G`
/// moves under `y`, just outside `x` (its free variables other than `x` shifted by one), `xs`
/// under `y`. A step of `tile-map-map`; not in the main phase (it would interchange every nest
/// of matmul, and then back).
pub struct MapMapInterchange;

impl Rule for MapMapInterchange {
    fn name(&self) -> &'static str {
        "map-map-interchange"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (a, f, xs) in cx.maps(c) {
            for body in cx.lambdas(f) {
                for (b, g, ys) in cx.maps(body) {
                    if !cx.data(ys).free.contains(&0) {
                        out.extend(map_map_interchange(cx, (&a, xs), (&b, g, ys)));
                    }
                }
            }
        }
        out
    }
}

/// The right-hand side of [`MapMapInterchange`] for the outer map `map@a(fun(x => ...), xs)`
/// and the inner `map@b(g, ys)` under `x`.
pub fn map_map_interchange(cx: &Ctx, (a, xs): (&str, Id), (b, g, ys): (&str, Id, Id)) -> Option<Build> {
    // Under y, x: g moved under y, y is variable 1.
    let g1 = cx.shifted_from(g, 1, 1)?;
    let row = Build::lam(Build::app(g1, Build::var(1, cx.elem(ys))));
    let rows = Build::map(a, row, cx.shifted(xs, 1)?);
    Some(Build::call(Prim::Transpose, vec![Build::map(b, Build::lam(rows), cx.shifted(ys, -1)?)]))
}

/// `map-reduce-interchange`:
///
/// ```text
/// map@L(fun(col => reduce(h, z, zip(r, col))), xs)
///   =>  reduce(fun(acc, p => map@L_a(fun(q => h(q.0, (p.0, q.1))), zip(acc, p.1))),
///         map@L_z(fun(c => z), xs),
///         zip(r, transpose(xs)))
/// map@L(fun(col => reduce(h, z, zip(col, r))), xs)
///   =>  reduce(fun(acc, p => map@L_a(fun(q => h(q.0, (q.1, p.1))), zip(acc, p.0))),
///         map@L_z(fun(c => z), xs),
///         zip(transpose(xs), r))
/// ```
///
/// Sound when `col` is not free in `h`, `z` and `r` (may-free analysis): the columns of `xs`
/// are reduced in lockstep, after step `k` the accumulator's `j`-th element is the fold of `h`
/// from `z` over `(r[i], xs[j][i])` (or `(xs[j][i], r[i])`) for `i <= k`, which is what the
/// `j`-th column's own reduction computes (Lift's `mapReduceInterchange`, `map(reduce) =>
/// reduce(map) . transpose`; RISE's `liftReduceSeq`). `r[k]` is read once per step instead of
/// once per column. `h` is applied by β-reduction when it is a two-parameter lambda, and the
/// components of the pair it is given are then read directly (`(a, b).0 => a`); a lambda
/// applied in its body (a fused map's function) is β-reduced too. The step of `register-block`
/// on a block of columns; not in the main phase (on a whole matrix its accumulator is a row of
/// it).
pub struct MapReduceInterchange;

impl Rule for MapReduceInterchange {
    fn name(&self) -> &'static str {
        "map-reduce-interchange"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, g, xs) in cx.maps(c) {
            for fold in column_reductions(cx, g) {
                out.extend(map_reduce_interchange(cx, &label, fold, xs));
            }
        }
        out
    }
}

/// A map's function that reduces its element (`col`) zipped with another array `r`:
/// `fun(col => reduce(h, z, zip(r, col)))`, or `zip(col, r)` when `col_first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnFold {
    /// The reduction's operator.
    pub h: Id,
    /// Its initial value.
    pub z: Id,
    /// The array zipped with the column.
    pub r: Id,
    /// True for `zip(col, r)`.
    pub col_first: bool,
    /// True when a component of the element is zipped (`zip(r, col.0)`), not the element.
    pub part: bool,
}

/// The column reductions of a map's function `g` ([`ColumnFold`]) with `col` not free in `h`,
/// `z` and `r`.
pub fn column_reductions(cx: &Ctx, g: Id) -> Vec<ColumnFold> {
    column_reduction_forms(cx, g).into_iter().map(|(fold, _)| fold).collect()
}

/// A column reduction and the nodes of its form (for [`Ctx::repr_with`]).
pub type ColumnReduction = (ColumnFold, BTreeMap<Id, Lift>);

/// [`column_reductions`], each with the nodes of its form: the lambda, the reduction and the zip.
pub fn column_reduction_forms(cx: &Ctx, g: Id) -> Vec<ColumnReduction> {
    cx.lambdas(g).into_iter().flat_map(|body| column_reductions_at(cx, g, body, body, false)).collect()
}

/// The column reductions at class `red` in the body `body` of map function `g` (the body
/// itself, or the reduction under an epilogue, [`super::epilogue`]), each with the nodes of its
/// form. With `parts`, the column zipped may also be a component of the map's element
/// (`zip(r, col.0)`, the element `col` a tuple such as a column and its bias).
pub fn column_reductions_at(cx: &Ctx, g: Id, body: Id, red: Id, parts: bool) -> Vec<ColumnReduction> {
    let mut out = Vec::new();
    let uses_col = |c: Id| cx.data(c).free.contains(&0);
    for (h, z, xs) in cx.reduces(red) {
        if uses_col(h) || uses_col(z) {
            continue;
        }
        for (p, args) in cx.calls(xs) {
            if p != Prim::Zip(2) {
                continue;
            }
            for col_first in [false, true] {
                let (col, r) = if col_first { (args[0], args[1]) } else { (args[1], args[0]) };
                let whole = cx.is_var0(col);
                let part =
                    parts && cx.calls(col).into_iter().any(|(p, a)| matches!(p, Prim::Get(_)) && cx.is_var0(a[0]));
                if (whole || part) && !uses_col(r) {
                    let nodes =
                        [(g, cx.lam_node(g, body)), (red, cx.app_node(red, xs)), (xs, cx.app_node(xs, args[1]))];
                    let forms = nodes.into_iter().filter_map(|(c, n)| Some((c, n?))).collect();
                    out.push((ColumnFold { h, z, r, col_first, part: !whole }, forms));
                }
            }
        }
    }
    out
}

/// The right-hand side of [`MapReduceInterchange`] for `map@label(fun(col => reduce(h, z,
/// zip(r, col))), xs)` or its `zip(col, r)` form (`h`, `z` and `r` classes under `col`).
pub fn map_reduce_interchange(cx: &Ctx, label: &str, fold: ColumnFold, xs: Id) -> Option<Build> {
    let ColumnFold { h, z, r, col_first, part } = fold;
    if part {
        return None;
    }
    let (col, n) = cx.data(xs).ty.array()?;
    let acc = cx.data(z).ty.known()?.clone();
    let r_elem = cx.elem(r)?;
    let col_elem = col.as_array()?.0.clone();
    let map = |suffix: &str, f: Build, xs: Build| Build::map(&format!("{label}{suffix}"), f, xs);
    // Under c: z (col is not free in it, and c stands where col stood).
    let init = map("_z", Build::lam(Build::Class(z)), Build::Class(xs));
    let accs = Type::array(acc.clone(), n.clone());
    let cols = Type::array(col_elem.clone(), n.clone());
    let (p_ty, cols_at) = match col_first {
        false => (Type::Tuple(vec![r_elem, cols]), 1),
        true => (Type::Tuple(vec![cols, r_elem]), 0),
    };
    let q_ty = Type::Tuple(vec![acc, col_elem]);
    // Under acc, p, q: `h(q.0, (p.0, q.1))` (`h(q.0, (q.1, p.1))`), h moved from under col to
    // under three binders.
    let step = Build::Expr(step(&binders::shift(&cx.repr(h), 2, 0)?, &p_ty, &q_ty, col_first));
    let acc_p = Build::call(
        Prim::Zip(2),
        vec![Build::var(1, Some(accs)), Build::call(Prim::Get(cols_at), vec![Build::var(0, Some(p_ty))])],
    );
    let f = Build::lam(Build::lam(map("_a", Build::lam(step), acc_p)));
    let (r, t) = (cx.shifted(r, -1)?, Build::call(Prim::Transpose, vec![Build::Class(xs)]));
    let pairs = Build::call(Prim::Zip(2), if col_first { vec![t, r] } else { vec![r, t] });
    Some(Build::call(Prim::Reduce { seq: false }, vec![f, init, pairs]))
}

/// `h(q.0, (p.0, q.1))` (`h(q.0, (q.1, p.1))` when `col_first`) under `acc, p, q` (`h` already
/// moved there), β-reduced when `h` is a two-parameter lambda, with the pair's components read
/// directly.
fn step(h: &RecExpr<Lift>, p_ty: &Type, q_ty: &Type, col_first: bool) -> RecExpr<Lift> {
    let mut a = RecExpr::default();
    get(&mut a, 0, 0, q_ty);
    let mut b = RecExpr::default();
    let (first, second) = match col_first {
        false => (get(&mut b, 0, 1, p_ty), get(&mut b, 1, 0, q_ty)),
        true => (get(&mut b, 1, 0, q_ty), get(&mut b, 1, 1, p_ty)),
    };
    let tuple = b.add(Lift::Prim(Prim::Tuple(2)));
    let t = b.add(Lift::app(tuple, first));
    b.add(Lift::app(t, second));
    project(&binders::reduce_lambdas(&project(&binders::apply2(h, &a, &b))))
}

/// Adds `v<k>.i` (variable `k` of type `ty`, component `i`) to `e`.
fn get(e: &mut RecExpr<Lift>, i: u32, k: u32, ty: &Type) -> Id {
    let g = e.add(Lift::Prim(Prim::Get(i)));
    let v = e.add(Lift::Var(k, Some(ty.clone())));
    e.add(Lift::app(g, v))
}

/// `e` with every component of a pair built in place read directly: `(a, b).0 => a`,
/// `(a, b).1 => b` (sound for any `a` and `b`: the interpreter evaluates both, and neither has
/// effects).
fn project(e: &RecExpr<Lift>) -> RecExpr<Lift> {
    binders::rebuild_nodes(e, |out, n| component(out, &n).unwrap_or_else(|| out.add(n)))
}

/// For `get(i)(tuple(a)(b))` in `out`, the component (`a` or `b`).
fn component(out: &RecExpr<Lift>, n: &Lift) -> Option<Id> {
    let Lift::App([g, t]) = n else { return None };
    let Lift::Prim(Prim::Get(i)) = &out[*g] else { return None };
    let Lift::App([ta, b]) = &out[*t] else { return None };
    let Lift::App([tuple, a]) = &out[*ta] else { return None };
    if out[*tuple] != Lift::Prim(Prim::Tuple(2)) {
        return None;
    }
    match i {
        0 => Some(*a),
        1 => Some(*b),
        _ => None,
    }
}

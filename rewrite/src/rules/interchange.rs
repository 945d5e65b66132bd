//! Interchange of nested maps through transposes, and the rules that enable and clean it up.

use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::Prim;

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

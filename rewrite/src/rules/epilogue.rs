//! Epilogues: a function applied to a reduction's result inside a map's function, such as the
//! `relu` or the scaling after a dot product (`max(0.0, reduce(add, 0.0, ..))`). The blocking
//! macros (`outer-product`) reduce a block of outputs together; an epilogue is split off the
//! reduction first (map fission), so that the block's accumulators are reduced as without it and
//! the epilogue is then applied to each of them.
//!
//! ```text
//! map@A(fun(x => E[reduce(h, z, xs)]), ys)
//!   =>  map@A_e(fun(r => E[r]), map@A(fun(x => reduce(h, z, xs)), ys))
//! ```
//!
//! Sound when `x` is not free in `E` (map fission, [`super::fusion::MapFission`], with the
//! reduction's result abstracted): both sides apply `E` to each element's reduction, and `E`'s
//! other operands (literals, parameters, sizes, variables bound outside the map) mean the same
//! under `fun(r => ..)` as under `fun(x => ..)`: both bind one variable at the same place.
//!
//! Over the columns of a matrix product, before the outer product moves the map over the
//! columns outside the one over the rows, the epilogue may also use the column (a bias per
//! column, `max(0.0, dot + col.1)`): [`column_folds`] with `at_column`. The outer product lifts
//! the column's whole function to vectors, and once the columns are bound outside the rows the
//! epilogue uses no variable of the map it is split off.

use super::interchange::{column_reductions_at, ColumnFold};
use super::{Build, Ctx};
use crate::lang::Lift;
use egg::Id;
use std::collections::BTreeMap;

/// How many applications deep an epilogue may reach (`max(0.0, r * a + b)` is 6).
const DEPTH: usize = 8;

/// A map function's body read as an epilogue applied to a reduction.
#[derive(Clone, Debug)]
pub struct Epilogue {
    /// `E[r]`: the body with the reduction replaced by variable 0 (`None` when the body is the
    /// reduction itself).
    pub apply: Option<Build>,
    /// The reduction's class.
    pub reduction: Id,
    /// The nodes of the path from the body to the reduction (for [`Ctx::repr_with`]).
    pub forms: BTreeMap<Id, Lift>,
}

/// The ways to read class `body` (under a map's binder, variable 0) as an epilogue applied to a
/// reduction (the body itself first when it is a reduction): at most one path per reduction,
/// through applications whose other operands do not use variable 0, or with `at_column` do not
/// use variable 1 (the row, when the map is over the columns under it).
pub fn epilogues(cx: &Ctx, body: Id, at_column: bool) -> Vec<Epilogue> {
    let mut out = Vec::new();
    if !cx.reduces(body).is_empty() {
        out.push(Epilogue { apply: None, reduction: body, forms: BTreeMap::new() });
    }
    let unbound = u32::from(at_column);
    if let Some(e) = peel(cx, body, DEPTH, &|c| !cx.data(c).free.contains(&unbound)) {
        out.push(e);
    }
    out
}

/// The column reductions of map function `g` ([`ColumnFold`]), as its body or under an
/// epilogue, each with its epilogue and the nodes of its form (the epilogue's path included).
/// With `at_column` the map is over the columns of a matrix product, under the row: the fold
/// may zip a component of the column, and the epilogue use the column ([`epilogues`]).
pub fn column_folds(cx: &Ctx, g: Id, at_column: bool) -> Vec<(Epilogue, ColumnFold, BTreeMap<Id, Lift>)> {
    let mut out = Vec::new();
    for body in cx.lambdas(g) {
        for e in epilogues(cx, body, at_column) {
            for (fold, mut forms) in column_reductions_at(cx, g, body, e.reduction, at_column) {
                forms.extend(e.forms.clone());
                out.push((e.clone(), fold, forms));
            }
        }
    }
    out
}

/// The first path from class `c` down to a reduction through applications whose other
/// operand is `ok` (not `c` itself).
fn peel(cx: &Ctx, c: Id, depth: usize, ok: &dyn Fn(Id) -> bool) -> Option<Epilogue> {
    if depth == 0 {
        return None;
    }
    for n in &cx.eg[c].nodes {
        let Lift::App([f, a]) = n else { continue };
        for (inner, other, arg_side) in [(*a, *f, true), (*f, *a, false)] {
            if !ok(other) || cx.eg.find(inner) == cx.eg.find(c) {
                continue;
            }
            let found = match cx.reduces(inner).is_empty() {
                false => Some(Epilogue { apply: None, reduction: inner, forms: BTreeMap::new() }),
                true => peel(cx, inner, depth - 1, ok),
            };
            let Some(mut e) = found else { continue };
            let ty = cx.data(e.reduction).ty.known().cloned();
            let hole = e.apply.take().unwrap_or_else(|| Build::var(0, ty));
            e.apply = Some(match arg_side {
                true => Build::app(Build::Class(other), hole),
                false => Build::app(hole, Build::Class(other)),
            });
            e.forms.insert(c, n.clone());
            return Some(e);
        }
    }
    None
}

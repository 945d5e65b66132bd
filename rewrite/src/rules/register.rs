//! Register blocking: a block of a map's outputs computed in one pass of their reduction
//! (Lift's `apply1DRegisterBlocking`: split-join, then the map-reduce interchange), as a
//! sequence of primitive rules ([`super::sequence`]).
//!
//! ```text
//! map@B(fun(col => reduce(h, z, zip(r, col))), ys)
//!   split-join (B by n)       =>  join(map@B(map@B_i(fun(col => reduce(h, z, zip(r, col)))), split(n, ys)))
//!   eta-expand (that map@B)   =>  join(map@B(fun(blk => map@B_i(fun(col => reduce(h, z, zip(r, col))), blk)), split(n, ys)))
//!   map-reduce-interchange (B_i):
//!     join(map@B(fun(blk =>
//!       reduce(fun(acc, p => map@B_i_a(fun(q => h(q.0, (p.0, q.1))), zip(acc, p.1))),
//!         map@B_i_z(fun(c => z), blk),
//!         zip(r, transpose(blk)))),
//!       split(n, ys)))
//! ```
//!
//! Each step is the primitive rule's own rewrite function applied to the class the step before
//! made, its term merged with that class.

use super::epilogue::column_folds;
use super::interchange::{column_reduction_forms, column_reductions, map_reduce_interchange, ColumnFold};
use super::sequence::{Sequence, Start, Steps};
use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::Size;
use std::collections::BTreeMap;

/// `register-block`:
///
/// ```text
/// map@B(fun(col => reduce(h, z, zip(r, col))), ys)
///   =>  join(map@B(fun(blk =>
///         reduce(fun(acc, p => map@B_i_a(fun(q => h(q.0, (p.0, q.1))), zip(acc, p.1))),
///           map@B_i_z(fun(c => z), blk),
///           zip(r, transpose(blk)))),
///         split(n, ys)))
/// ```
///
/// The sequence `split-join`, `eta-expand`, `map-reduce-interchange` (module doc). Sound when
/// `col` is not free in `h`, `z` and `r` (may-free analysis) and `n` divides the length of `ys`
/// (the map's new tile size if it has one, else a split factor): the conditions of its steps.
/// Each block `blk` of `n` columns is reduced in lockstep, the accumulator an array of `n`
/// values, which `toPrivate` keeps in registers ([`crate::staging::stage_private`]); `r[k]` is
/// read once per block instead of once per column. `h` is applied by β-reduction when it is a
/// two-parameter lambda ([`super::interchange::MapReduceInterchange`]).
pub struct RegisterBlock;

impl Rule for RegisterBlock {
    fn name(&self) -> &'static str {
        "register-block"
    }

    fn search(&self, _: &Ctx, _: Id) -> Vec<Build> {
        Vec::new()
    }

    fn sequence(&self) -> Option<&dyn Sequence> {
        Some(self)
    }
}

impl Sequence for RegisterBlock {
    fn steps(&self) -> &'static [&'static str] {
        &["split-join", "eta-expand", "map-reduce-interchange"]
    }

    fn starts(&self, cx: &Ctx, c: Id) -> Vec<Start> {
        let mut out = Vec::new();
        for (label, g, ys) in cx.maps(c) {
            let (Some(len), Some(col)) = (cx.length(ys), cx.elem(ys)) else { continue };
            // The accumulator's and the pair's types are known (as the interchange needs them).
            let typed = |(fold, _): &(ColumnFold, _)| {
                cx.data(fold.z).ty.known().is_some() && cx.elem(fold.r).is_some() && col.as_array().is_some()
            };
            let Some((_, forms)) = column_reduction_forms(cx, g).into_iter().find(typed) else { continue };
            for n in cx.map_factors(&label, len) {
                let labels = vec![label.clone()];
                out.push(Start { ids: vec![g, ys], labels, sizes: vec![n], forms: forms.clone() });
            }
        }
        out
    }

    fn run(&self, s: &mut Steps, c: Id, start: &Start) -> Option<()> {
        let ([g, ys], [label], [n]) = (&start.ids[..], &start.labels[..], &start.sizes[..]) else { return None };
        register_block(s, c, (label, *g, *ys), n, &start.forms)
    }
}

/// The steps of [`RegisterBlock`] at class `c`, the map `map@label(g, ys)` blocked by `n`, `g`
/// moved under the block in its matched `forms`.
pub fn register_block(
    s: &mut Steps,
    c: Id,
    (label, g, ys): (&str, Id, Id),
    n: &Size,
    forms: &BTreeMap<Id, Lift>,
) -> Option<()> {
    // split-join on the map, and eta-expand: the block as a variable.
    let block = s.split_and_expand(c, (label, g, ys), n, forms)?;
    // map-reduce-interchange on the map over the block's columns.
    let cx = s.cx();
    let inner = format!("{label}_i");
    let (l, g1, blk) = cx.maps(block).into_iter().find(|(l, ..)| *l == inner)?;
    if let Some(swapped) =
        column_reductions(&cx, g1).into_iter().find_map(|fold| map_reduce_interchange(&cx, &l, fold, blk))
    {
        drop(cx);
        s.step("map-reduce-interchange", block, &swapped);
        return Some(());
    }
    // An epilogue after the reduction: split off first (map fission), applied to each result.
    let (apply, red, fold) =
        column_folds(&cx, g1, false).into_iter().find_map(|(e, fold, _)| Some((e.apply?, e.reduction, fold)))?;
    drop(cx);
    let reduced = Build::map(&l, Build::lam(Build::Class(red)), Build::Class(blk));
    s.step("map-fission", block, &Build::map(&format!("{l}_e"), Build::lam(apply), reduced.clone()));
    let reduced = s.add(&reduced);
    let swapped = map_reduce_interchange(&s.cx(), &l, fold, blk)?;
    s.step("map-reduce-interchange", reduced, &swapped);
    Some(())
}

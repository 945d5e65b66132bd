//! The outer-product form of a matrix product: a block of rows times a vector of columns, its
//! accumulators in registers (a GEMM micro-kernel, `examples/matmul_outer.lift`), as a sequence
//! of primitive rules ([`super::sequence`]).
//!
//! ```text
//! map@A(fun(row => map@B(fun(col => reduce(h, z, zip(row, col))), transpose(b))), xs)
//!   vectorize-across (B)      =>  map@A(fun(row => asScalar(map@B_v(fun(vcol => reduce(h_v, z_v, zip(row, vcol))), VB))), xs)
//!                                   where VB = transpose(map@B_r(fun(r => asVector(w, r)), b))
//!   map-fission (asScalar)    =>  map@A(asScalar, map@A_f(fun(row => map@B_v(g_v, VB)), xs))
//!   map-map-interchange       =>  map@A(asScalar, transpose(map@B_v(fun(vcol =>
//!                                   map@A_f(fun(row => g_v(vcol)), xs)), VB)))
//!   beta (g_v(vcol))          =>  ... map@A_f(fun(row => reduce(h_v, z_v, zip(row, vcol))), xs) ...
//!   register-block (A_f by n) =>  map@A(asScalar, transpose(map@B_v(fun(vcol =>
//!                                   join(map@A_f(fun(blk =>
//!                                     reduce(fun(acc, p => map@A_f_i_a(fun(q => h_v(q.0, (q.1, p.1))), zip(acc, p.0))),
//!                                       map@A_f_i_z(fun(c => z_v), blk),
//!                                       zip(transpose(blk), vcol))),
//!                                     split(n, xs)))), VB)))
//! ```
//!
//! Each block of `n` rows and vector of `w` columns is one work item's tile of the result: each
//! step of the reduction loads one vector of `b` and uses it `n` times, and each value of a row
//! `w` times (broadcast), with `n` vector accumulators. On pocl (AVX-512) the hand-written form
//! runs at 440 GFLOP/s where the best rewritten matmul without it ran at 194 (`tune_quality`'s
//! section 4).

use super::epilogue::column_folds;
use super::interchange::map_map_interchange;
use super::register::register_block;
use super::sequence::{Sequence, Start, Steps};
use super::vectorize_across::vectorize_across;
use super::{derived, fusion, Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::Prim;

/// `outer-product`:
///
/// ```text
/// map@A(fun(row => map@B(fun(col => reduce(h, z, zip(row, col))), transpose(b))), xs)
///   =>  map@A(asScalar, transpose(map@B_v(fun(vcol =>
///         join(map@A_f(fun(blk =>
///           reduce(fun(acc, p => map@A_f_i_a(fun(q => h_v(q.0, (q.1, p.1))), zip(acc, p.0))),
///             map@A_f_i_z(fun(c => z_v), blk),
///             zip(transpose(blk), vcol))),
///           split(n, xs)))),
///         transpose(map@B_r(fun(r => asVector(w, r)), b)))))
/// ```
///
/// The sequence `vectorize-across`, `map-fission`, `map-map-interchange`, `beta`, and
/// `register-block`'s steps `split-join`, `eta-expand`, `map-reduce-interchange` (module doc). Only on maps `A` that have a new tile size ([`crate::tiles`]), by that size `n`, as
/// `tile-map-map`. Sound under the conditions of its steps, checked here so that it does not
/// stop half-way: `row` not free in `transpose(b)` (the interchange), `h` and `z` use neither
/// `col` nor `row` (both map-reduce interchanges: `row` is the column of the second), `n`
/// divides the length of `xs` and `w` the columns of `b`, and the column's function lifts to
/// vector lanes (`vectorize-across`).
pub struct OuterProduct;

impl Rule for OuterProduct {
    fn name(&self) -> &'static str {
        "outer-product"
    }

    fn search(&self, _: &Ctx, _: Id) -> Vec<Build> {
        Vec::new()
    }

    fn sequence(&self) -> Option<&dyn Sequence> {
        Some(self)
    }
}

impl Sequence for OuterProduct {
    fn steps(&self) -> &'static [&'static str] {
        &[
            "vectorize-across",
            "map-fission",
            "map-map-interchange",
            "beta",
            "split-join",
            "eta-expand",
            "map-reduce-interchange",
        ]
    }

    fn starts(&self, cx: &Ctx, c: Id) -> Vec<Start> {
        let mut out = Vec::new();
        for (a, f, xs) in cx.maps(c) {
            let (Some(len), Some(row)) = (cx.length(xs), cx.elem(xs)) else { continue };
            if !cx.params.tiles.contains_key(&a) || crate::infer::Ty::rank_of(&row) + 2 > cx.params.max_rank {
                continue;
            }
            for body in cx.lambdas(f) {
                for (b, g, ys) in cx.maps(body) {
                    if cx.data(ys).free.contains(&0) {
                        continue;
                    }
                    // Under `col`: `row` is variable 1.
                    let uses_row = |k: Id| cx.data(k).free.contains(&1);
                    let with_row = |k: Id| cx.eg[k].nodes.iter().any(|n| matches!(n, Lift::Var(1, _)));
                    for (_, fold, forms) in column_folds(cx, g, true) {
                        let fits = !fold.col_first && with_row(fold.r) && !uses_row(fold.h) && !uses_row(fold.z);
                        if !fits || vectorize_across(cx, &b, g, ys, &forms).is_none() {
                            continue;
                        }
                        for n in cx.map_factors(&a, len) {
                            let (labels, sizes) = (vec![a.clone(), b.clone()], vec![n]);
                            out.push(Start { ids: vec![g, ys, body, xs], labels, sizes, forms: forms.clone() });
                        }
                    }
                }
            }
        }
        out
    }

    fn run(&self, s: &mut Steps, c: Id, start: &Start) -> Option<()> {
        let ([g, ys, body, xs], [a, b], [n]) = (&start.ids[..], &start.labels[..], &start.sizes[..]) else {
            return None;
        };
        // vectorize-across on the map over the columns (under `row`).
        let vectorized = vectorize_across(&s.cx(), b, *g, *ys, &start.forms)?;
        s.step("vectorize-across", *body, &vectorized);
        let columns = vectorized.args()[0];
        let [g_v, vb] = columns.args()[..] else { return None };
        let (columns, g_v, vb) = (s.add(columns), s.add(g_v), s.add(vb));
        // map-fission: asScalar out of the map over the rows.
        let as_scalar = s.add(&Build::prim(Prim::AsScalar));
        let fissioned = fusion::map_fission(&s.cx(), a, as_scalar, columns, *xs)?;
        s.step("map-fission", c, &fissioned);
        let rows = s.add(fissioned.args()[1]);
        // map-map-interchange: the vectors of columns outside the rows.
        let a_f = format!("{a}_f");
        let swapped = map_map_interchange(&s.cx(), (&a_f, *xs), (&derived(b, "_v"), g_v, vb))?;
        s.step("map-map-interchange", rows, &swapped);
        // beta: the column's function applied to the vector of columns, under the row.
        let inner_rows = swapped.args()[0].args()[0].body()?;
        let row_fn = inner_rows.args()[0];
        let Build::Node(Lift::App(_), applied) = row_fn.body()? else { return None };
        let (app, f_v, vcol) = (s.add(row_fn.body()?), s.add(&applied[0]), s.add(&applied[1]));
        let cx = s.cx();
        let reduced = cx.beta(*cx.lambdas(f_v).first()?, vcol)?;
        drop(cx);
        s.step("beta", app, &reduced);
        // register-block: a block of rows reduced together, one vector accumulator each.
        let (inner_rows, row_fn, rows_in) = (s.add(inner_rows), s.add(row_fn), s.add(inner_rows.args()[1]));
        let (_, _, forms) = column_folds(&s.cx(), row_fn, false).into_iter().find(|(_, fold, _)| fold.col_first)?;
        register_block(s, inner_rows, (&a_f, row_fn, rows_in), n, &forms)
    }
}

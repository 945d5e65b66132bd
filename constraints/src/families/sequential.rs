//! Families 8 and 9: the codes that run within one thread, sequential fusion and vectorization.

use super::{Gen, Out};
use crate::expr::Expr;
use crate::space::Family;
use crate::Code;

/// (8) Perfectly nested maps are not both sequential. A heuristic of the paper, on by default
/// (`Options::fusion`): both sequential computes what the inner map fused (`F`) computes, with
/// one more loop, so it only prunes redundant mappings.
pub(super) fn seq_fusion(g: &Gen, out: &mut Out) {
    for i in 0..g.len() {
        if let (Some(p), true) = (g.parents[i], g.info(i).perfectly_nested) {
            out.push(
                Family::SeqFusion,
                &[p, i],
                format!(
                    "map {} is perfectly nested in map {}: they are not both sequential (fuse them: {}=F)",
                    g.label(i),
                    g.label(p),
                    g.label(i)
                ),
                Expr::negate(Expr::And(vec![Expr::code_is(p, Code::Seq), Expr::code_is(i, Code::Seq)])),
            );
        }
    }
}

/// (9) `V` only for the maps the analysis found vectorizable: innermost, over scalars, with
/// contiguous accesses and a length that is a multiple of the vector width. `V` stands for
/// vector loads and stores of consecutive elements; elsewhere code generation can only lower
/// `mapVec` as a sequential loop (`tuner/tests/completeness.rs`), and the mapping would
/// promise a vectorization it does not get.
pub(super) fn vectorization(g: &Gen, out: &mut Out) {
    for i in 0..g.len() {
        if let Some(why) = &g.info(i).unvectorizable {
            out.push(
                Family::Vectorization,
                &[i],
                format!("map {} cannot be vectorized (V): {why}", g.label(i)),
                Expr::negate(Expr::code_is(i, Code::Vec)),
            );
        }
    }
}

//! Stage inlining: a `let` (a kernel boundary when its value is written by `toGlobal`) replaced
//! by its value wherever the body reads it.

use super::transpose_stage::transposed_copy;
use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::Prim;

/// `let-inline`:
///
/// ```text
/// let x = toX(e) in body  =>  body[x := e]
/// let x = e in body       =>  body[x := e]
/// ```
///
/// Sound in a pure language: `toX` only says where a value is kept, not what it is. With the
/// map rules (`map-fusion`, `slide-map`, `pad-map`, interchange) the producer `e` can then be
/// computed where the consumer reads it, in the consumer's kernel: Halide's inline, against the
/// `toGlobal` boundary's compute_root. Computed on representatives ([`crate::binders::beta`]).
///
/// A copy of a transpose (`map(fun(r => map(fun(x => x), r)), transpose(w))`, as
/// [`super::transpose_stage`] and `examples/conv_outer.lift` store weights) is not inlined: it
/// computes nothing, and exists so that its consumer reads rows where it would read columns.
/// Nor is a reduction (`let lo = toGlobal(reduce(min, .., join(img)))`): its consumer reads
/// its one result everywhere, and inlined, every element of the consumer would reduce the
/// whole input again (Halide never inlines a reduction either).
pub struct LetInline;

/// True when class `c` is a reduction.
fn reduction(cx: &Ctx, c: Id) -> bool {
    cx.calls(c).iter().any(|(p, _)| matches!(p, Prim::Reduce { .. }))
}

impl Rule for LetInline {
    fn name(&self) -> &'static str {
        "let-inline"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for n in &cx.eg[c].nodes {
            let Lift::Let([v, body]) = n else { continue };
            // The value without its `toX`: a `toX` inside the body would keep the array in one
            // kernel, computed before it is read, which a single launch can only run sequentially.
            let stored: Vec<Id> =
                cx.calls(*v).into_iter().filter(|(p, _)| matches!(p, Prim::To(_))).map(|(_, a)| a[0]).collect();
            let values = if stored.is_empty() { vec![*v] } else { stored };
            for value in values.into_iter().filter(|&value| !transposed_copy(cx, value) && !reduction(cx, value)) {
                out.extend(cx.beta(*body, value));
            }
        }
        out
    }
}

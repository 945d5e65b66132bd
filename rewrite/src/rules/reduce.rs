//! Reductions: fusion with a map, partial reduction.

use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::{BinOp, Lit, Prim};

/// `reduce-map-fusion`:
///
/// ```text
/// reduce(op, init, map@A(f, xs))  =>  reduce(fun(acc => fun(x => op(acc, f(x)))), init, xs)
/// ```
///
/// Always sound: a left fold of `op` over `f` applied to each element is the left fold of the
/// fused operator. `op` and `f` move under two new binders (shifted by two).
pub struct ReduceMapFusion;

impl Rule for ReduceMapFusion {
    fn name(&self) -> &'static str {
        "reduce-map-fusion"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (op, init, ys) in cx.reduces(c) {
            for (_, f, xs) in cx.maps(ys) {
                let (Some(op2), Some(f2)) = (cx.shifted(op, 2), cx.shifted(f, 2)) else { continue };
                let acc = Build::var(1, cx.data(init).ty.known().cloned());
                let x = Build::var(0, cx.elem(xs));
                let body = Build::app(Build::app(op2, acc), Build::app(f2, x));
                let g = Build::lam(Build::lam(body));
                out.push(Build::call(Prim::Reduce { seq: false }, vec![g, Build::Class(init), Build::Class(xs)]));
            }
        }
        out
    }
}

/// `partial-reduce`:
///
/// ```text
/// reduce(op, init, xs)  =>  reduce(op, init, map@R<n>(reduce(op, init), split(n, xs)))
/// ```
///
/// Sound when `op` is associative with `init` as its identity (`add` with `0`, `mul` with `1`;
/// exact for integers, up to rounding for floats), or associative and idempotent (`min`, `max`,
/// `and`, `or`, with any `init`: [`monoid`]), and `n` divides the length of `xs`: each chunk
/// is reduced from the identity, then the partial results are reduced. `n` is each constant
/// factor that divides, and the reduction's new tile size of that length if any
/// ([`crate::tiles`]: `tK` for matmul's dot products, tuned later); by that tile size, over a
/// map, also with the map fused into each chunk's reduction ([`mapped_chunks`]) and with it
/// mapped over each chunk ([`unfused_chunks`], `examples/matmul_tiled.lift`'s form). The new map's
/// label is `R<n>` (a function of the match, so that saturation terminates; extraction makes labels
/// unique in a variant). Not applied to a reduction over a chunk of that tile size (`tK`
/// elements): splitting it again only adds a third level of sums, and over the unfused chunks
/// it feeds `map-fission` without end (each fission a new label).
pub struct PartialReduce;

impl Rule for PartialReduce {
    fn name(&self) -> &'static str {
        "partial-reduce"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (op, init, xs) in cx.reduces(c) {
            if !monoid(cx, op, init) {
                continue;
            }
            let Some(len) = cx.length(xs) else { continue };
            // A chunk of a reduction split by its tile size: not split again.
            let symbolic = cx.data(xs).ty.array().map(|(_, n)| n.clone());
            if symbolic.is_some_and(|n| cx.params.reduction_tiles.values().any(|t| *t == n)) {
                continue;
            }
            let tile = cx
                .params
                .reduction_tiles
                .get(&len)
                .filter(|t| t.eval(&cx.params.sizes).is_some_and(|n| n > 1 && n < len && len % n == 0));
            for n in cx.factors(len).into_iter().chain(tile.cloned()) {
                let partial = Build::call(Prim::Reduce { seq: false }, vec![Build::Class(op), Build::Class(init)]);
                let split = Build::call(Prim::Split(n.clone()), vec![Build::Class(xs)]);
                let chunks = Build::map(&format!("R{n}"), partial, split);
                out.push(Build::call(Prim::Reduce { seq: false }, vec![Build::Class(op), Build::Class(init), chunks]));
                if tile == Some(&n) {
                    out.extend(mapped_chunks(cx, op, init, xs, &n));
                }
            }
        }
        out
    }
}

/// With `xs` a map `map@L(f, ys)`, the chunks of `partial-reduce` each reduced with `f` fused
/// into the operator (as `reduce-map-fusion` does):
///
/// ```text
/// reduce(op, init, map@R<n>(fun(chunk =>
///   reduce(fun(acc => fun(x => op(acc, f(x)))), init, chunk)), split(n, ys)))
/// ```
///
/// the dot products of `examples/matmul_tiled.lift` split by `tK`; the same as
/// `split(n, map@L(f, ys))` reduced chunk by chunk. Fused, the chunk's function has no map for
/// `map-fission` to take apart again. `op`, `init` and `f` move under the new binders.
fn mapped_chunks(cx: &Ctx, op: Id, init: Id, xs: Id, n: &mapsat_ir::Size) -> Vec<Build> {
    let mut out = Vec::new();
    for (label, f, ys) in cx.maps(xs) {
        // Under chunk, acc, x: op and f by three, init by one.
        let (Some(op3), Some(init1), Some(f3)) = (cx.shifted(op, 3), cx.shifted(init, 1), cx.shifted(f, 3)) else {
            continue;
        };
        let acc = Build::var(1, cx.data(init).ty.known().cloned());
        let x = Build::var(0, cx.elem(ys));
        let g = Build::lam(Build::lam(Build::app(Build::app(op3, acc), Build::app(f3, x))));
        let chunk = Build::var(0, cx.elem(ys).map(|e| mapsat_ir::Type::array(e, n.clone())));
        let sum = Build::call(Prim::Reduce { seq: false }, vec![g, init1, chunk]);
        let split = Build::call(Prim::Split(n.clone()), vec![Build::Class(ys)]);
        let chunks = Build::map(&format!("R{n}"), Build::lam(sum), split);
        out.push(Build::call(Prim::Reduce { seq: false }, vec![Build::Class(op), Build::Class(init), chunks]));
        // Unfused: each chunk's products mapped, then summed (`examples/matmul_tiled.lift`).
        out.extend(unfused_chunks(cx, op, init, label, f, ys, n));
    }
    out
}

/// The chunks of [`mapped_chunks`] with `f` mapped over each chunk rather than fused into the
/// operator, `map@L` keeping its label:
///
/// ```text
/// reduce(op, init, map@R<n>(fun(chunk => reduce(op, init, map@L(f, chunk))), split(n, ys)))
/// ```
///
/// the form of `examples/matmul_tiled.lift`'s dot products (`map@E` over chunks of `tK`, each
/// summing the products of `map@F`). The same as `partial-reduce` of `reduce(op, init,
/// map@L(f, ys))` followed by `split(n, map(f, ys)) = map(map(f), split(n, ys))` and
/// `map-fusion` of the chunk's reduction with its map. `op`, `init` and `f` move under `chunk`
/// (shifted by one).
fn unfused_chunks(cx: &Ctx, op: Id, init: Id, label: String, f: Id, ys: Id, n: &mapsat_ir::Size) -> Option<Build> {
    let (op1, init1, f1) = (cx.shifted(op, 1)?, cx.shifted(init, 1)?, cx.shifted(f, 1)?);
    let chunk = Build::var(0, cx.elem(ys).map(|e| mapsat_ir::Type::array(e, n.clone())));
    let products = Build::map(&label, f1, chunk);
    let sum = Build::call(Prim::Reduce { seq: false }, vec![op1, init1, products]);
    let split = Build::call(Prim::Split(n.clone()), vec![Build::Class(ys)]);
    let chunks = Build::map(&format!("R{n}"), Build::lam(sum), split);
    Some(Build::call(Prim::Reduce { seq: false }, vec![Build::Class(op), Build::Class(init), chunks]))
}

/// True when `op` is `add` with `init` zero, or `mul` with `init` one, or an idempotent one
/// (`min`, `max`, `and`, `or`) with any `init`: each chunk's reduction then starts from `init`
/// and so does the reduction of the partial results, and taking `init` in more than once
/// changes nothing (`max(i, max(i, a), max(i, b)) = max(i, a, b)`).
fn monoid(cx: &Ctx, op: Id, init: Id) -> bool {
    let has = |c: Id, want: &dyn Fn(&Lift) -> bool| cx.eg[c].nodes.iter().any(want);
    let lit = |c: Id, v: f32| {
        has(c, &|n| match n {
            Lift::Lit(Lit::F32(b)) => f32::from_bits(*b) == v,
            Lift::Lit(Lit::I32(i)) => *i as f32 == v,
            _ => false,
        })
    };
    let is_op = |o: BinOp| has(op, &|n| *n == Lift::Prim(Prim::Bin(o)));
    (is_op(BinOp::Add) && lit(init, 0.0))
        || (is_op(BinOp::Mul) && lit(init, 1.0))
        || [BinOp::Min, BinOp::Max, BinOp::And, BinOp::Or].into_iter().any(is_op)
}

//! Extraction seeds per kind of variant: vectorized (`asVector`, from `vectorize-map`), tiled
//! (a slide with a symbolic step, from `slide-tiling`), 2-D tiled (`map(join)` putting blocks
//! back, from `tile-map-map`) and register-blocked (a reduction over an array accumulator, from
//! `register-block`).
//!
//! The static cost does not favour these forms, and they often exist only below unfused or
//! fissioned forms that the best term does not go through, out of reach of the neighbour search
//! in [`crate::extract`]. Each seed forces one such node and a shortest path from the root to
//! its class (`compute_at::reached`), so that the term goes through it; the rest of the
//! term is the best.

use crate::analysis::LiftGraph;
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::Prim;
use std::collections::BTreeMap;

/// At most this many seeds of each kind.
const PER_KIND: usize = 8;

/// Forced choices (class to node) giving terms that go through a node of each kind: at most
/// `PER_KIND` of each, in order of class id (deterministic).
pub fn seeds(eg: &LiftGraph, root: Id) -> Vec<BTreeMap<Id, Lift>> {
    let root = eg.find(root);
    let mut classes: Vec<Id> = eg.classes().map(|c| c.id).collect();
    classes.sort();
    let mut out = Vec::new();
    let kinds: [Kind; 4] = [head(vectorized), head(tile_slide), Box::new(blocks_joined), head(array_reduce)];
    for is_kind in kinds {
        let mut n = 0;
        for &c in &classes {
            for node in eg[c].nodes.iter().filter(|node| is_kind(eg, node)) {
                if n >= PER_KIND {
                    break;
                }
                let Some(forced) = crate::compute_at::reached(eg, root, c, BTreeMap::from([(c, node.clone())])) else {
                    continue;
                };
                out.push(forced);
                n += 1;
            }
        }
    }
    out
}

/// A kind of node: whether a node of the e-graph is of it.
type Kind = Box<dyn Fn(&LiftGraph, &Lift) -> bool>;

/// The kind of the applications `f(x)` whose function class `f` is of the kind.
fn head(is_kind: fn(&LiftGraph, Id) -> bool) -> Kind {
    Box::new(move |eg, node| matches!(node, Lift::App([f, _]) if is_kind(eg, eg.find(*f))))
}

/// True when class `f` holds `asScalar` (the head of a vectorized map, `asScalar(map(f_v, asVector(..)))`).
fn vectorized(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::AsScalar)))
}

/// True when class `f` holds a slide with a symbolic step (a tile slide of `slide-tiling`).
fn tile_slide(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Slide(_, s)) if s.as_const().is_none()))
}

/// True for `map(join, transpose(..))` (a 2-D tiling's blocks put back as rows).
fn blocks_joined(eg: &LiftGraph, node: &Lift) -> bool {
    let has = |c: Id, p: &dyn Fn(&Prim) -> bool| eg[c].nodes.iter().any(|n| matches!(n, Lift::Prim(q) if p(q)));
    let Lift::App([f, x]) = node else { return false };
    let map_join = eg[*f].nodes.iter().any(|n| match n {
        Lift::App([m, j]) => has(*m, &|p| matches!(p, Prim::Map { .. })) && has(*j, &|p| *p == Prim::Join),
        _ => false,
    });
    let transposed = eg[*x].nodes.iter().any(|n| matches!(n, Lift::App([t, _]) if has(*t, &|p| *p == Prim::Transpose)));
    map_join && transposed
}

/// True when class `f` holds `reduce(h, init)` with an array `init` (a register block's
/// accumulators).
fn array_reduce(eg: &LiftGraph, f: Id) -> bool {
    let is_reduce = |c: Id| {
        eg[c].nodes.iter().any(|n| match n {
            Lift::App([r, _]) => eg[*r].nodes.iter().any(|m| matches!(m, Lift::Prim(Prim::Reduce { .. }))),
            _ => false,
        })
    };
    eg[f].nodes.iter().any(|n| match n {
        Lift::App([rh, init]) => is_reduce(*rh) && eg[*init].data.ty.array().is_some(),
        _ => false,
    })
}

//! Extraction seeds per kind of variant: vectorized (`asVector`, from `vectorize-map`),
//! tiled (a slide with a symbolic step, from `slide-tiling`) and tiled in two dimensions (tile
//! slides of rows of tile slides, from `slide2d-tiling`).
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

/// Forced choices (class to node) giving terms that go through a vectorized map, a tile
/// slide or a 2-D tile slide: at most `PER_KIND` of each, in order of class id (deterministic).
pub fn seeds(eg: &LiftGraph, root: Id) -> Vec<BTreeMap<Id, Lift>> {
    let root = eg.find(root);
    let mut classes: Vec<Id> = eg.classes().map(|c| c.id).collect();
    classes.sort();
    let mut out = Vec::new();
    for is_kind in [vectorized as fn(&LiftGraph, &Lift) -> bool, tile_slide, tile_slide_2d] {
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

/// True for an application `f(x)` whose function class satisfies `is_kind`.
fn applies(eg: &LiftGraph, node: &Lift, is_kind: fn(&LiftGraph, Id) -> bool) -> bool {
    matches!(node, Lift::App([f, _]) if is_kind(eg, eg.find(*f)))
}

/// True for `asScalar(..)` (the head of a vectorized map, `asScalar(map(f_v, asVector(..)))`).
fn vectorized(eg: &LiftGraph, node: &Lift) -> bool {
    applies(eg, node, |eg, f| eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::AsScalar))))
}

/// True for a tile slide's application (`slide-tiling`).
fn tile_slide(eg: &LiftGraph, node: &Lift) -> bool {
    applies(eg, node, has_tile_slide)
}

/// True for `slide(u + n - 1, u, map(slide(v + m - 1, v), xs))`: the 2-D tiles of
/// `slide2d-tiling`.
pub(crate) fn tile_slide_2d(eg: &LiftGraph, node: &Lift) -> bool {
    let Lift::App([_, rows]) = node else { return false };
    let tiled_rows = |n: &Lift| match n {
        Lift::App([f, _]) => {
            eg[*f].nodes.iter().any(|g| matches!(g, Lift::App([m, s]) if is_map(eg, *m) && has_tile_slide(eg, *s)))
        }
        _ => false,
    };
    tile_slide(eg, node) && eg[*rows].nodes.iter().any(tiled_rows)
}

/// True when class `m` holds a map primitive.
fn is_map(eg: &LiftGraph, m: Id) -> bool {
    eg[m].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Map { .. })))
}

/// True when class `f` holds a slide with a symbolic step (a tile slide).
fn has_tile_slide(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Slide(_, s)) if s.as_const().is_none()))
}

//! Extraction seeds per kind of variant: vectorized (`asVector`, from `vectorize-map`) and
//! tiled (a slide with a symbolic step, from `slide-tiling`).
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

/// Forced choices (class to node) giving terms that go through a vectorized map or a tile
/// slide: at most `PER_KIND` of each, in order of class id (deterministic).
pub fn seeds(eg: &LiftGraph, root: Id) -> Vec<BTreeMap<Id, Lift>> {
    let root = eg.find(root);
    let mut classes: Vec<Id> = eg.classes().map(|c| c.id).collect();
    classes.sort();
    let mut out = Vec::new();
    for is_kind in [vectorized as fn(&LiftGraph, Id) -> bool, tile_slide] {
        let mut n = 0;
        for &c in &classes {
            for node in eg[c].nodes.iter().filter(|node| applies(eg, node, is_kind)) {
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

/// True for an application `f(x)` whose function class is of the kind.
fn applies(eg: &LiftGraph, node: &Lift, is_kind: fn(&LiftGraph, Id) -> bool) -> bool {
    matches!(node, Lift::App([f, _]) if is_kind(eg, eg.find(*f)))
}

/// True when class `f` holds `asScalar` (the head of a vectorized map, `asScalar(map(f_v, asVector(..)))`).
fn vectorized(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::AsScalar)))
}

/// True when class `f` holds a slide with a symbolic step (a tile slide of `slide-tiling`).
fn tile_slide(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Slide(_, s)) if s.as_const().is_none()))
}

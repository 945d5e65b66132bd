//! Extraction choices for the 2-D tiled form of a stencil as `slide2d-tiling` builds it: a map
//! over the tiles whose function maps over each tile's windows,
//! `map@A(map@B(fun(t => map@A_i(map@B_i(f), windows(t)))), map@T(transpose, tiles))`.
//!
//! A seed forcing only the tile slide ([`crate::kinds`]) leaves every other class to the static
//! cost, which prefers the windows of every tile computed by a map nest of their own (fission)
//! and the function applied in another: a form whose tile, once staged in local memory, is not
//! read by the work group that wrote it. These choices force the rule's own structure, from the
//! map over the tiles down to the windows of one tile, so that local staging
//! ([`crate::staging::stage_local`]) has the tile the work group reads.
//!
//! Each place is offered a second time with the map in the function of one window split into
//! groups (`join(map@B(map@B_i(g), split(s, xs)))`, from `split-join`), when the e-graph holds
//! that form: a convolution's output channels computed in groups of `s` per window (the
//! hand-tiled `examples/conv_blocked.lift` without its register blocking).

use crate::analysis::LiftGraph;
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::{MapKind, Prim};
use std::collections::BTreeMap;

/// At most this many forced choices.
const LIMIT: usize = 8;

/// Forced choices (class to node) giving terms in the 2-D tiled form, one per place in the
/// e-graph (at most 8), each with a shortest path from the root, and one with all of them.
pub fn choices(eg: &LiftGraph, root: Id) -> Vec<BTreeMap<Id, Lift>> {
    let mut classes: Vec<Id> = eg.classes().map(|c| c.id).collect();
    classes.sort();
    let mut out = Vec::new();
    for c in classes {
        if let Some((forced, per_window)) = place(eg, c) {
            let grouped = grouped(eg, &forced, per_window);
            for f in std::iter::once(forced).chain(grouped) {
                out.extend(crate::compute_at::reached(eg, root, c, f));
            }
        }
        if out.len() >= LIMIT {
            break;
        }
    }
    // Every place at once (each stage of a pipeline tiled); the first place's choice wins where
    // two paths cross.
    if out.len() > 1 {
        let mut all = BTreeMap::new();
        for forced in &out {
            for (c, n) in forced {
                all.entry(*c).or_insert_with(|| n.clone());
            }
        }
        out.push(all);
    }
    out
}

/// The forced nodes of the 2-D tiled form in class `c`, if it holds one, and the class of the
/// map over one row of a tile's windows (`map@B_i(f)`).
fn place(eg: &LiftGraph, c: Id) -> Option<(BTreeMap<Id, Lift>, Id)> {
    let mut forced = BTreeMap::new();
    let (g, data) = force_map(eg, &mut forced, c, |_| true)?;
    let lam = force(eg, &mut forced, g, |n| partial_map(eg, n))?;
    let body = force(eg, &mut forced, lam, |n| if let Lift::Lam(_, [b]) = n { Some(*b) } else { None })?;
    let (per_window, windows) = force_map(eg, &mut forced, body, |_| true)?;
    force_map(eg, &mut forced, windows, |f| transposes(eg, f))?;
    let (_, tiles) = force_map(eg, &mut forced, data, |f| transposes(eg, f))?;
    let tile_slide = eg[tiles].nodes.iter().find(|n| crate::kinds::tile_slide_2d(eg, n))?;
    forced.insert(tiles, tile_slide.clone());
    Some((forced, per_window))
}

/// `forced` with, in the function `f` of one window (`per_window` is `map@B_i(f)`), a map
/// split into groups forced: `fun(w => join(map@G(g, split(s, xs))))`; `None` when `f` has no
/// such form.
fn grouped(eg: &LiftGraph, forced: &BTreeMap<Id, Lift>, per_window: Id) -> Option<BTreeMap<Id, Lift>> {
    let mut forced = forced.clone();
    let f = force(eg, &mut forced, per_window, |n| partial_map(eg, n))?;
    let body = force(eg, &mut forced, f, |n| if let Lift::Lam(_, [b]) = n { Some(*b) } else { None })?;
    let joined = force(eg, &mut forced, body, |n| applied_prim(eg, n, |p| matches!(p, Prim::Join)))?;
    let (_, groups) = force_map(eg, &mut forced, joined, |_| true)?;
    force(eg, &mut forced, groups, |n| applied_prim(eg, n, |p| matches!(p, Prim::Split(_))))?;
    Some(forced)
}

/// The argument of a node `p(x)` whose function class holds a primitive `p` that `is` accepts.
fn applied_prim(eg: &LiftGraph, node: &Lift, is: impl Fn(&Prim) -> bool) -> Option<Id> {
    let Lift::App([p, x]) = node else { return None };
    eg[*p].nodes.iter().any(|n| matches!(n, Lift::Prim(q) if is(q))).then_some(*x)
}

/// Forces in class `c` the first node that `pick` accepts; returns what `pick` returned.
fn force(eg: &LiftGraph, forced: &mut BTreeMap<Id, Lift>, c: Id, pick: impl Fn(&Lift) -> Option<Id>) -> Option<Id> {
    let c = eg.find(c);
    let (node, next) = eg[c].nodes.iter().find_map(|n| pick(n).map(|x| (n.clone(), x)))?;
    forced.insert(c, node);
    Some(eg.find(next))
}

/// Forces in class `c` a map `map@L(f, xs)` whose function class `f` satisfies `fits`, and its
/// partial application `map@L(f)`; returns `(f, xs)`.
fn force_map(eg: &LiftGraph, forced: &mut BTreeMap<Id, Lift>, c: Id, fits: impl Fn(Id) -> bool) -> Option<(Id, Id)> {
    let c = eg.find(c);
    for node in &eg[c].nodes {
        let Lift::App([mf, xs]) = node else { continue };
        let mf = eg.find(*mf);
        let Some(partial) = eg[mf].nodes.iter().find(|n| partial_map(eg, n).is_some_and(|f| fits(eg.find(f)))) else {
            continue;
        };
        let f = partial_map(eg, partial)?;
        forced.insert(c, node.clone());
        forced.insert(mf, partial.clone());
        return Some((eg.find(f), eg.find(*xs)));
    }
    None
}

/// `f` for a node `map@L(f)` (abstract map applied to its function only).
fn partial_map(eg: &LiftGraph, node: &Lift) -> Option<Id> {
    let Lift::App([m, f]) = node else { return None };
    let is_map = eg[*m].nodes.iter().any(|p| matches!(p, Lift::Prim(Prim::Map { kind: MapKind::Abstract, .. })));
    is_map.then_some(*f)
}

/// True when class `f` holds `transpose`.
fn transposes(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Transpose)))
}

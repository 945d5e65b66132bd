//! Extraction choices for Halide's `compute_at`: terms in which a stencil's windows, inside a
//! function (a tile of `slide-tiling`), read a producer computed once over the whole tile,
//! `map@B_i(g, slide(n, s, map@A(h, t)))`, rather than fused into each window.
//!
//! The static cost charges that producer as an intermediate array (written and read back), so
//! the cheapest extraction and its diverse neighbours pick the fused, per-window form; local
//! staging ([`crate::staging::stage_local`]) needs the unfused one. These choices force it, with
//! the nodes on a shortest path from the root to it, so that the term reaches it.

use crate::analysis::LiftGraph;
use crate::lang::Lift;
use egg::{Id, Language as _};
use mapsat_ir::ast::{MapKind, Prim};
use std::collections::{BTreeMap, VecDeque};

/// At most this many forced choices.
const LIMIT: usize = 16;

/// Forced choices (class to node) giving terms with a producer computed per function call and
/// read through a slide, one set per such place in the e-graph (at most 16).
pub fn choices(eg: &LiftGraph, root: Id) -> Vec<BTreeMap<Id, Lift>> {
    let mut out = Vec::new();
    for class in eg.classes() {
        for target in places(eg, class.id) {
            out.extend(reached(eg, root, class.id, target));
            if out.len() >= LIMIT {
                return out;
            }
        }
    }
    out
}

/// The applications of the abstract map in class `c`: `(node, xs)` for `map@L(f, xs)`.
fn map_apps(eg: &LiftGraph, c: Id) -> Vec<(&Lift, Id)> {
    let is_map = |f: Id| {
        eg[f].nodes.iter().any(|n| match n {
            Lift::App([m, _]) => {
                eg[*m].nodes.iter().any(|p| matches!(p, Lift::Prim(Prim::Map { kind: MapKind::Abstract, .. })))
            }
            _ => false,
        })
    };
    eg[c]
        .nodes
        .iter()
        .filter_map(|n| match n {
            Lift::App([f, xs]) if is_map(*f) => Some((n, eg.find(*xs))),
            _ => None,
        })
        .collect()
}

/// Forced nodes for `map@B(g, slide(n, s, map@A(h, t)))` in class `c`, where the producer uses
/// a bound variable (it is computed per call of an enclosing function) and computes.
fn places(eg: &LiftGraph, c: Id) -> Vec<BTreeMap<Id, Lift>> {
    let mut out = Vec::new();
    for (consumer, w) in map_apps(eg, c) {
        for slide in &eg[w].nodes {
            let Lift::App([s, y]) = slide else { continue };
            if !eg[*s].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Slide(..)))) {
                continue;
            }
            let y = eg.find(*y);
            if eg[y].data.closed() || y == c || w == c {
                continue;
            }
            for (producer, _) in map_apps(eg, y) {
                let forced = BTreeMap::from([(c, consumer.clone()), (w, slide.clone()), (y, producer.clone())]);
                out.push(forced);
            }
        }
    }
    out
}

/// The forced choices `target` (in class `at`) with the nodes of a shortest path from the
/// root to `at`, so that the extracted term reaches them; `None` when `at` is unreachable.
pub(crate) fn reached(eg: &LiftGraph, root: Id, at: Id, mut target: BTreeMap<Id, Lift>) -> Option<BTreeMap<Id, Lift>> {
    for (c, n) in path(eg, eg.find(root), at)? {
        target.entry(c).or_insert(n);
    }
    Some(target)
}

/// The nodes on a shortest path from class `from` to class `to` (each class on it with the node
/// whose child leads on), if `to` is reachable.
fn path(eg: &LiftGraph, from: Id, to: Id) -> Option<Vec<(Id, Lift)>> {
    let mut prev: BTreeMap<Id, (Id, Lift)> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = std::collections::BTreeSet::from([from]);
    while let Some(c) = queue.pop_front() {
        if c == to {
            let mut out = Vec::new();
            let mut cur = to;
            while let Some((p, n)) = prev.get(&cur) {
                out.push((*p, n.clone()));
                cur = *p;
            }
            return Some(out);
        }
        for n in &eg[c].nodes {
            for &ch in n.children() {
                let ch = eg.find(ch);
                if seen.insert(ch) {
                    prev.insert(ch, (c, n.clone()));
                    queue.push_back(ch);
                }
            }
        }
    }
    None
}

//! Extraction seeds per kind of variant: vectorized (`asVector`, from `vectorize-map`), tiled
//! (a slide with a symbolic step, from `slide-tiling`), tiled in two dimensions (tile slides of
//! rows of tile slides, from `slide2d-tiling`), 2-D tiled map nests (`map(join)` putting blocks
//! back, from `tile-map-map`), the same with its reductions split by a tunable size (from
//! `partial-reduce`: matmul's dot products split by `tK`) and register-blocked (a reduction
//! over an array accumulator, from `register-block`; over an array of vectors, from
//! `outer-product`). The 2-D tiled map nests with their panels
//! staged in local memory (kinds `T2L` and `T2KL` of [`crate::extract`]) need no seed: they are
//! made from the extracted `T2` and `T2K` variants by [`crate::staging::stage_panels`].
//!
//! The static cost does not favour these forms, and they often exist only below unfused or
//! fissioned forms that the best term does not go through, out of reach of the neighbour search
//! in [`crate::extract`]. Each seed forces one such node and a shortest path from the root to
//! its class (`compute_at::reached`), so that the term goes through it; the rest of the
//! term is the best. Below a 2-D tiling or a register block, the smallest term rather than the
//! best: the static cost prefers fissioned forms of the nest (a map of zips read by a map of
//! reductions), which are no longer the tiled nest the macro made; for the split kind, the
//! smallest term but with each reduction split by a tunable size where its class holds one,
//! its chunks mapped each on their own where their class holds that form.

use crate::analysis::LiftGraph;
use crate::analysis::Meta;
use crate::lang::Lift;
use egg::{AstSize, Extractor, Id, Language as _};
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
    let smallest = Extractor::new(eg, AstSize);
    let kinds: [(Kind, Below); 7] = [
        (head(vectorized), Below::Best),
        (head(tile_slide), Below::Best),
        (Box::new(|eg, c, node| tile_slide_2d(eg, node).then(|| BTreeMap::from([(c, node.clone())]))), Below::Best),
        (Box::new(blocks_joined), Below::Smallest),
        (Box::new(blocks_joined), Below::SmallestSplit),
        (head(array_reduce), Below::Smallest),
        (head(vector_array_reduce), Below::Smallest),
    ];
    for (is_kind, below_it) in kinds {
        let mut n = 0;
        for &c in &classes {
            for mut target in eg[c].nodes.iter().filter_map(|node| is_kind(eg, c, node)) {
                if n >= PER_KIND {
                    break;
                }
                if below_it != Below::Best {
                    let split = below_it == Below::SmallestSplit;
                    let pattern: Vec<Lift> = target.values().cloned().collect();
                    for node in pattern {
                        node.for_each(|ch| below(eg, &smallest, split, eg.find(ch), &mut target));
                    }
                    if split && !target.values().any(|n| split_reduce(eg, n)) {
                        continue;
                    }
                }
                let Some(forced) = crate::compute_at::reached(eg, root, c, target) else {
                    continue;
                };
                out.push(forced);
                n += 1;
            }
        }
    }
    out
}

/// What a seed forces below the node of its kind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Below {
    /// Nothing: the best term.
    Best,
    /// The smallest term.
    Smallest,
    /// The smallest term, with each reduction split by a tunable size where its class holds
    /// one ([`split_reduce`]).
    SmallestSplit,
}

/// Forces the smallest term of class `c` (each class of it not forced yet); with `split`, a
/// reduction split by a tunable size ([`split_reduce`]) in place of the smallest node of a class
/// that holds one.
fn below(
    eg: &LiftGraph,
    smallest: &Extractor<AstSize, Lift, Meta>,
    split: bool,
    c: Id,
    forced: &mut BTreeMap<Id, Lift>,
) {
    if forced.contains_key(&c) {
        return;
    }
    // A reduction split by a tunable size, its chunks mapped each on their own where the
    // classes have that form (`map(fun(chunk => ..), split(n, xs))`, as
    // `examples/matmul_tiled.lift`).
    // Of the split reductions, the first whose chunks have that form (a class may hold both
    // `map(fun(chunk => ..), split(n, xs))` and `map(reduce(..), split(n, map(f, xs)))` in
    // classes of their own).
    let splits: Vec<&Lift> =
        if split { eg[c].nodes.iter().filter(|n| split_reduce(eg, n)).collect() } else { Vec::new() };
    let with_chunks = splits.iter().find(|n| !force_chunks(eg, n, &mut forced.clone()).is_empty());
    let node = match with_chunks.or(splits.first()) {
        Some(n) => {
            forced.insert(c, (*n).clone());
            for chunk_node in force_chunks(eg, n, forced) {
                chunk_node.for_each(|ch| below(eg, smallest, split, eg.find(ch), forced));
            }
            (*n).clone()
        }
        None => smallest.find_best_node(c).clone(),
    };
    forced.insert(c, node.clone());
    node.for_each(|ch| below(eg, smallest, split, eg.find(ch), forced));
}

/// For `reduce(op, init, chunks)`, forces in `chunks` a map of a lambda over a tunable split
/// (`map(fun(chunk => ..), split(n, xs))`), if its class holds one; returns the nodes forced.
fn force_chunks(eg: &LiftGraph, node: &Lift, forced: &mut BTreeMap<Id, Lift>) -> Vec<Lift> {
    let Lift::App([_, chunks]) = node else { return Vec::new() };
    let chunks = eg.find(*chunks);
    for n in &eg[chunks].nodes {
        let Lift::App([mf, xs]) = n else { continue };
        if !tunable_split(eg, *xs) {
            continue;
        }
        for m in &eg[*mf].nodes {
            let Lift::App([mp, f]) = m else { continue };
            let Some(lam) = eg[*f].nodes.iter().find(|l| matches!(l, Lift::Lam(..))) else { continue };
            if has(eg, *mp, &is_map) {
                forced.insert(chunks, n.clone());
                forced.insert(eg.find(*mf), m.clone());
                forced.insert(eg.find(*f), lam.clone());
                return vec![n.clone(), m.clone(), lam.clone()];
            }
        }
    }
    Vec::new()
}

/// True when class `c` holds `split(n, xs)` with a symbolic `n`.
fn tunable_split(eg: &LiftGraph, c: Id) -> bool {
    eg[c].nodes.iter().any(
        |n| matches!(n, Lift::App([s, _]) if has(eg, *s, &|p| matches!(p, Prim::Split(n) if n.as_const().is_none()))),
    )
}

/// True for `reduce(op, init, map(f, split(n, xs)))` with a binary operator `op` and a symbolic `n`: a reduction split by
/// a tunable size (`partial-reduce` by a reduction's new tile size, [`crate::tiles`]).
fn split_reduce(eg: &LiftGraph, node: &Lift) -> bool {
    let Lift::App([r, chunks]) = node else { return false };
    // `r` is `reduce(op, init)` with `op` a binary operator (`partial-reduce` keeps the monoid's).
    let is_op = |op: Id| has(eg, op, &|p| matches!(p, Prim::Bin(_)));
    let reduce2 = eg[*r].nodes.iter().any(|n| match n {
        Lift::App([r1, _]) => eg[*r1].nodes.iter().any(
            |m| matches!(m, Lift::App([p, op]) if is_op(*op) && has(eg, *p, &|p| matches!(p, Prim::Reduce { .. }))),
        ),
        _ => false,
    });
    let mapped_split = eg[*chunks].nodes.iter().any(|n| match n {
        Lift::App([mf, xs]) => {
            tunable_split(eg, *xs)
                && eg[*mf].nodes.iter().any(|m| matches!(m, Lift::App([m, _]) if has(eg, *m, &is_map)))
        }
        _ => false,
    });
    reduce2 && mapped_split
}

/// A kind of node: for a node of class `c` of the kind, the nodes to force (`c` to it, and
/// the classes of the pattern below it to theirs).
type Kind = Box<dyn Fn(&LiftGraph, Id, &Lift) -> Option<BTreeMap<Id, Lift>>>;

/// The kind of the applications `f(x)` whose function class `f` is of the kind.
fn head(is_kind: fn(&LiftGraph, Id) -> bool) -> Kind {
    Box::new(move |eg, c, node| match node {
        Lift::App([f, _]) if is_kind(eg, eg.find(*f)) => Some(BTreeMap::from([(c, node.clone())])),
        _ => None,
    })
}

/// True when class `f` holds `asScalar` (the head of a vectorized map, `asScalar(map(f_v, asVector(..)))`).
fn vectorized(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::AsScalar)))
}

/// True when class `f` holds a slide with a symbolic step (a tile slide of `slide-tiling`).
fn tile_slide(eg: &LiftGraph, f: Id) -> bool {
    eg[f].nodes.iter().any(|n| matches!(n, Lift::Prim(Prim::Slide(_, s)) if s.as_const().is_none()))
}

/// True for `slide(u + n - 1, u, map(slide(v + m - 1, v), xs))`: the 2-D tiles of
/// `slide2d-tiling`.
pub(crate) fn tile_slide_2d(eg: &LiftGraph, node: &Lift) -> bool {
    let Lift::App([f, rows]) = node else { return false };
    let tiled_rows = |n: &Lift| match n {
        Lift::App([f, _]) => {
            eg[*f].nodes.iter().any(|g| matches!(g, Lift::App([m, s]) if has(eg, *m, &is_map) && tile_slide(eg, *s)))
        }
        _ => false,
    };
    tile_slide(eg, eg.find(*f)) && eg[*rows].nodes.iter().any(tiled_rows)
}

/// `map(join, transpose(map(f, split(n, ys))))` (a 2-D tiling's blocks put back as rows): the
/// node and those of the pattern below it. The blocks' class also holds the steps' forms
/// before the interchange (`tile-map-map` is a sequence of rules), and other rules' transposes:
/// each transpose and each map in it is tried.
fn blocks_joined(eg: &LiftGraph, c: Id, node: &Lift) -> Option<BTreeMap<Id, Lift>> {
    let Lift::App([f, x]) = node else { return None };
    let mut out = BTreeMap::from([(c, node.clone())]);
    let [_, join] = applied(eg, eg.find(*f), &is_map, &mut out)?;
    has(eg, join, &|p| *p == Prim::Join).then_some(())?;
    let x = eg.find(*x);
    let is_map_app = |m: &Lift| matches!(m, Lift::App([m, _]) if has(eg, *m, &is_map));
    let transposed = eg[x].nodes.iter().filter_map(|t| match t {
        Lift::App([p, blocks]) if has(eg, *p, &|p| *p == Prim::Transpose) => Some((t, eg.find(*blocks))),
        _ => None,
    });
    for (t, blocks) in transposed {
        for m in &eg[blocks].nodes {
            let Lift::App([mf, xs]) = m else { continue };
            if !eg[*mf].nodes.iter().any(is_map_app) {
                continue;
            }
            let mut out = out.clone();
            out.insert(x, t.clone());
            out.insert(blocks, m.clone());
            let found = applied(eg, eg.find(*mf), &is_map, &mut out)
                .and_then(|_| applied(eg, eg.find(*xs), &|p| matches!(p, Prim::Split(_)), &mut out));
            if found.is_some() {
                return Some(out);
            }
        }
    }
    None
}

/// True for an abstract map primitive.
fn is_map(p: &Prim) -> bool {
    matches!(p, Prim::Map { .. })
}

/// True when class `c` holds a primitive `want` accepts.
fn has(eg: &LiftGraph, c: Id, want: &dyn Fn(&Prim) -> bool) -> bool {
    eg[c].nodes.iter().any(|n| matches!(n, Lift::Prim(p) if want(p)))
}

/// The children `[f, x]` of an application `p(x)` in class `c` with `p` a primitive `want`
/// accepts, recorded in `out`.
fn applied(eg: &LiftGraph, c: Id, want: &dyn Fn(&Prim) -> bool, out: &mut BTreeMap<Id, Lift>) -> Option<[Id; 2]> {
    find(eg, c, out, &|eg, n| matches!(n, Lift::App([p, _]) if has(eg, *p, want)))
}

/// The children of the first application in class `c` that `want` accepts, recorded in `out`.
fn find(
    eg: &LiftGraph,
    c: Id,
    out: &mut BTreeMap<Id, Lift>,
    want: &dyn Fn(&LiftGraph, &Lift) -> bool,
) -> Option<[Id; 2]> {
    let node = eg[c].nodes.iter().find(|n| want(eg, n))?;
    let Lift::App([a, b]) = node else { return None };
    out.insert(c, node.clone());
    Some([eg.find(*a), eg.find(*b)])
}

/// True when class `f` holds `reduce(h, init)` with an array `init` (a register block's
/// accumulators).
fn array_reduce(eg: &LiftGraph, f: Id) -> bool {
    reduce_from(eg, f, |t| t.array().is_some())
}

/// True when class `f` holds `reduce(h, init)` with an array of vectors `init` (the
/// accumulators of an outer product, [`crate::rules::outer`]): a kind of its own, as the
/// register blocks of other forms would fill [`PER_KIND`] first.
fn vector_array_reduce(eg: &LiftGraph, f: Id) -> bool {
    reduce_from(eg, f, |t| t.array().is_some_and(|(e, _)| matches!(e, mapsat_ir::Type::Vector(..))))
}

/// True when class `f` holds `reduce(h, init)` with an `init` whose type `want` accepts.
fn reduce_from(eg: &LiftGraph, f: Id, want: impl Fn(&crate::infer::Ty) -> bool) -> bool {
    let is_reduce = |c: Id| {
        eg[c].nodes.iter().any(|n| match n {
            Lift::App([r, _]) => eg[*r].nodes.iter().any(|m| matches!(m, Lift::Prim(Prim::Reduce { .. }))),
            _ => false,
        })
    };
    eg[f].nodes.iter().any(|n| match n {
        Lift::App([rh, init]) => is_reduce(*rh) && want(&eg[*init].data.ty),
        _ => false,
    })
}

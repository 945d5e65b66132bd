//! Macros as sequences of primitive rules (Lift's macro rules: `tileMapMap`,
//! `apply1DRegisterBlocking`).
//!
//! A macro matches once on the saturation's snapshot ([`Sequence::starts`]), then, when the
//! matches are applied, runs its steps in order on the e-graph ([`Sequence::run`]): each step
//! calls one primitive rule's own rewrite function (the function its `search` calls: one
//! definition of each right-hand side) on the class the step before made, adds the term and
//! merges it with that class. Every merge is one primitive rewrite, so the macro is sound when
//! its primitives are (each is property-tested, `tests/tiling_props.rs`), and the intermediate
//! terms stay in the e-graph. The saturation report counts each step that changed the e-graph
//! under its primitive's name, and each sequence that did under the macro's.
//!
//! A macro rather than the primitives alone: the derivation multiplies terms when every rule
//! runs everywhere (split-join by every factor of every map, interchange of every nest), and on
//! matmul the node budget is spent before it completes (research notes §0, E4/E5); the macro
//! takes the one path.

use super::interchange::eta_expand;
use super::split_join::split_join;
use super::{Build, Ctx, Params};
use crate::analysis::LiftGraph;
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::Size;
use std::collections::BTreeMap;

/// Where a macro starts: the classes, labels and sizes of its match on the snapshot.
#[derive(Clone, Debug)]
pub struct Start {
    /// Matched classes (ids of the snapshot; still valid, as merged classes keep them).
    pub ids: Vec<Id>,
    /// Matched map labels.
    pub labels: Vec<String>,
    /// Chosen split sizes.
    pub sizes: Vec<Size>,
    /// The matched forms of classes a step moves under a binder ([`Ctx::repr_with`]): moved on
    /// their smallest terms, the next step would not find the form it matches where that is not
    /// the smallest (matmul's fused dot product).
    pub forms: BTreeMap<Id, Lift>,
}

/// A macro rule: a fixed sequence of primitive rules.
pub trait Sequence {
    /// The primitive rules it applies, by name, in order.
    fn steps(&self) -> &'static [&'static str];
    /// Its matches at class `c` (the conditions of the whole sequence checked here, so that it
    /// does not stop half-way).
    fn starts(&self, cx: &Ctx, c: Id) -> Vec<Start>;
    /// Applies its steps from class `c`; `None` when a step found no match (the steps before it
    /// stay: each is an equality on its own).
    fn run(&self, s: &mut Steps, c: Id, start: &Start) -> Option<()>;
}

/// The e-graph a sequence runs on, and the steps it applied.
pub struct Steps<'a> {
    eg: &'a mut LiftGraph,
    params: &'a Params,
    /// Each step applied: its rule's name and whether it changed the e-graph.
    pub applied: Vec<(&'static str, bool)>,
}

impl<'a> Steps<'a> {
    /// Steps on `eg`.
    pub fn new(eg: &'a mut LiftGraph, params: &'a Params) -> Steps<'a> {
        Steps { eg, params, applied: Vec::new() }
    }

    /// The context a step's rewrite function reads (the e-graph rebuilt first, so that the
    /// analysis of the terms added so far is up to date).
    pub fn cx(&mut self) -> Ctx<'_> {
        self.eg.rebuild();
        Ctx::new(self.eg, self.params)
    }

    /// Adds a term (or finds it) and returns its class.
    pub fn add(&mut self, b: &Build) -> Id {
        b.add(self.eg)
    }

    /// One step: `b`, the right-hand side of rule `rule` at class `class`, added and merged
    /// with it. Returns the class of `b`.
    pub fn step(&mut self, rule: &'static str, class: Id, b: &Build) -> Id {
        let id = b.add(self.eg);
        let changed = self.eg.union(class, id);
        self.applied.push((rule, changed));
        id
    }

    /// The first two steps of both macros, at class `c`, the map `map@label(f, xs)`:
    /// split-join by `n`, then eta-expand of the map over the tiles, so that the tile is a
    /// variable (`f` moved under it in its matched `forms`). Returns the class of the new
    /// lambda's body: the map over one tile.
    pub fn split_and_expand(
        &mut self,
        c: Id,
        (label, f, xs): (&str, Id, Id),
        n: &Size,
        forms: &BTreeMap<Id, Lift>,
    ) -> Option<Id> {
        let split = split_join(label, Build::Class(f), Build::Class(xs), n.clone());
        self.step("split-join", c, &split);
        let tiles = split.args()[0];
        let [tile_fn, tile_split] = tiles.args()[..] else { return None };
        let (tiles, tile_fn, tile_split) = (self.add(tiles), self.add(tile_fn), self.add(tile_split));
        let expanded = eta_expand(&self.cx(), label, tile_fn, tile_split, forms)?;
        self.step("eta-expand", tiles, &expanded);
        Some(self.add(expanded.args()[0].body()?))
    }
}

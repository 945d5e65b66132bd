//! Tiling macros: 2-D tiling of a map nest (Lift's `tileMapMap`) as a sequence of primitive
//! rules ([`super::sequence`]).
//!
//! ```text
//! map@A(fun(row => map@B(g, ys)), xs)
//!   split-join (A by tA)          =>  join(map@A(map@A_i(fun(row => map@B(g, ys))), split(tA, xs)))
//!   eta-expand (that map@A)       =>  join(map@A(fun(rowTile => map@A_i(fun(row => map@B(g, ys)), rowTile)), split(tA, xs)))
//!   split-join (B by tB)          =>  ... map@A_i(fun(row => join(map@B(map@B_i(g), split(tB, ys)))), rowTile) ...
//!   map-fission (join out of A_i) =>  ... map@A_i(join, map@A_i_f(fun(row => map@B(map@B_i(g), split(tB, ys))), rowTile)) ...
//!   map-map-interchange (A_i_f, B):
//!     join(map@A(fun(rowTile =>
//!       map@A_i(join, transpose(map@B(fun(colTile =>
//!         map@A_i_f(fun(row => map@B_i(g, colTile)), rowTile)),
//!         split(tB, ys))))),
//!       split(tA, xs)))
//! ```
//!
//! Each step is the primitive rule's own rewrite function applied to the class the step before
//! made, its term merged with that class (so each step is sound as its rule is: split-join when
//! the size divides the length, η always, fission when `row` is not free in `join`, the
//! interchange when `row` is not free in `split(tB, ys)`). In Lift's derivation the interchange
//! also comes after both split-joins; η-expansion and fission are implicit there (Lift's maps
//! take lambdas, and `join` is moved out by `mapFission`).

use super::sequence::{Sequence, Start, Steps};
use super::split_join::split_join;
use super::{fusion, interchange, Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::Prim;
use mapsat_ir::Size;
use std::collections::BTreeMap;

/// `tile-map-map`:
///
/// ```text
/// map@A(fun(row => map@B(g, ys)), xs)
///   =>  join(map@A(fun(rowTile =>
///         map@A_i(join, transpose(map@B(fun(colTile =>
///           map@A_i_f(fun(row => map@B_i(g, colTile)), rowTile)),
///           split(tB, ys))))),
///         split(tA, xs)))
/// ```
///
/// The sequence `split-join`, `eta-expand`, `split-join`, `map-fission`, `map-map-interchange`
/// (module doc). Only on maps that have a new tile size ([`crate::tiles`]: the maps of the input,
/// and those rules make keeping their label), by that size: the nest of the input is tiled, not
/// each of the fissioned, split and fused forms of it (on matmul, constant factors on every form
/// made 196 applications and a cheapest tiled variant over a fissioned nest).
///
/// Sound when `row` is not free in `ys` (may-free analysis) and `tA` divides the length of
/// `xs`, `tB` that of `ys` (at the given sizes): the conditions of its steps. Both sides have
/// `g(xs[i])(ys[j])` at `[i][j]`: the tile pair `(i / tA, j / tB)` computes the block
/// `[[_]tB]tA`, the map over column tiles gives `[[[_]tB]tA](N/tB)`, `transpose` then
/// `map(join)` makes it the `tA` rows of length `N`, and `join` puts the row tiles back in order.
pub struct TileMapMap;

impl Rule for TileMapMap {
    fn name(&self) -> &'static str {
        "tile-map-map"
    }

    fn search(&self, _: &Ctx, _: Id) -> Vec<Build> {
        Vec::new()
    }

    fn sequence(&self) -> Option<&dyn Sequence> {
        Some(self)
    }
}

impl Sequence for TileMapMap {
    fn steps(&self) -> &'static [&'static str] {
        &["split-join", "eta-expand", "split-join", "map-fission", "map-map-interchange"]
    }

    fn starts(&self, cx: &Ctx, c: Id) -> Vec<Start> {
        let mut out = Vec::new();
        for (a, f, xs) in cx.maps(c) {
            let (Some(len_a), Some(row)) = (cx.length(xs), cx.elem(xs)) else { continue };
            if crate::infer::Ty::rank_of(&row) + 2 > cx.params.max_rank {
                continue;
            }
            for body in cx.lambdas(f) {
                for (b, g, ys) in cx.maps(body) {
                    if cx.data(ys).free.contains(&0) {
                        continue;
                    }
                    let Some(len_b) = cx.length(ys) else { continue };
                    let forms = nest_forms(cx, (f, body), (g, ys));
                    for tm in tile(cx, &a, len_a) {
                        for tn in tile(cx, &b, len_b) {
                            let (labels, sizes) = (vec![a.clone(), b.clone()], vec![tm.clone(), tn.clone()]);
                            out.push(Start { ids: vec![f, xs], labels, sizes, forms: forms.clone() });
                        }
                    }
                }
            }
        }
        out
    }

    fn run(&self, s: &mut Steps, c: Id, start: &Start) -> Option<()> {
        let ([f, xs], [a, b], [tm, tn]) = (&start.ids[..], &start.labels[..], &start.sizes[..]) else { return None };
        // split-join on the outer map, and eta-expand: the row tile as a variable.
        let rows = s.split_and_expand(c, (a, *f, *xs), tm, &start.forms)?;
        // split-join on the inner map (under `row`).
        let cx = s.cx();
        let (a_i, row_fn, row_tile) = cx.maps(rows).into_iter().find(|(l, ..)| *l == format!("{a}_i"))?;
        let inner = |body: Id| {
            let maps = cx.maps(body).into_iter();
            maps.filter(|(l, _, ys)| l == b && !cx.data(*ys).free.contains(&0)).map(|(_, g, ys)| (body, g, ys)).next()
        };
        let (row_body, g, ys) = cx.lambdas(row_fn).into_iter().find_map(inner)?;
        drop(cx);
        let inner = split_join(b, Build::Class(g), Build::Class(ys), tn.clone());
        s.step("split-join", row_body, &inner);
        let col_tiles = inner.args()[0];
        let [col_fn, col_split] = col_tiles.args()[..] else { return None };
        let (col_tiles, col_fn, col_split) = (s.add(col_tiles), s.add(col_fn), s.add(col_split));
        // map-fission: the join out of the map over the rows of a tile.
        let join = s.add(&Build::prim(Prim::Join));
        let fissioned = fusion::map_fission(&s.cx(), &a_i, join, col_tiles, row_tile)?;
        s.step("map-fission", rows, &fissioned);
        let blocks = fissioned.args()[1];
        let a_f = format!("{a_i}_f");
        let blocks = s.add(blocks);
        // map-map-interchange: the column tiles outside the rows of a tile.
        let swapped = interchange::map_map_interchange(&s.cx(), (&a_f, row_tile), (b, col_fn, col_split))?;
        s.step("map-map-interchange", blocks, &swapped);
        Some(())
    }
}

/// The nodes of the nest's form `fun(row => map@B(g, ys))` (class `f`, its body `body`), kept
/// when eta-expansion moves it under the row tile ([`Ctx::repr_with`]).
fn nest_forms(cx: &Ctx, (f, body): (Id, Id), (g, ys): (Id, Id)) -> BTreeMap<Id, Lift> {
    let mut out = BTreeMap::new();
    out.extend(cx.lam_node(f, body).map(|n| (f, n)));
    if let Some(n @ Lift::App([map_g, _])) = cx.app_node(body, ys) {
        out.extend(cx.app_node(map_g, g).map(|m| (map_g, m)));
        out.insert(body, n);
    }
    out
}

/// The new tile size of the map labelled `label`, if it has one and it divides `len`.
fn tile(cx: &Ctx, label: &str, len: i64) -> Vec<Size> {
    match cx.params.tiles.contains_key(label) {
        true => cx.map_factors(label, len),
        false => Vec::new(),
    }
}

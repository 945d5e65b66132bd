//! Tiling macros: 2-D tiling of a map nest (Lift's `tileMapMap`) in one rewrite.
//!
//! The primitive derivation (split-join on both maps, interchange of the tile loop with the row
//! loop, transposes cancelled) takes a chain of rewrites that multiply terms; on matmul the node
//! budget is spent before it completes (research notes §0, E4/E5). The macro rule adds the goal
//! directly; its soundness is property-tested against the interpreter (`tests/tiling_props.rs`).

use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::{MapKind, Prim};
use mapsat_ir::{Size, Type};

/// `tile-map-map`:
///
/// ```text
/// map@A(fun(row => map@B(g, ys)), xs)
///   =>  join(map@A(fun(rowTile =>
///         map@A_j(join, transpose(map@B(fun(colTile =>
///           map@A_i(fun(row => map@B_i(g, colTile)), rowTile)),
///           split(tN, ys))))),
///         split(tM, xs)))
/// ```
///
/// Only on maps that have a new tile size ([`crate::tiles`]: the maps of the input, and those
/// rules make keeping their label), by that size: the nest of the input is tiled, not each of
/// the fissioned, split and fused forms of it (on matmul, constant factors on every form made
/// 196 applications and a cheapest tiled variant over a fissioned nest).
///
/// Sound when `row` is not free in `ys` (may-free analysis; `ys` is then the same term under
/// `rowTile`) and `tM` divides the length of `xs`, `tN` that of `ys` (at the given sizes). Both sides have `g(xs[i])(ys[j])` at
/// `[i][j]`: the tile pair `(i / tM, j / tN)` computes the block `[[_]tN]tM`, the map over column
/// tiles gives `[[[_]tN]tM](N/tN)`, `transpose` then `map(join)` makes it the `tM` rows of length
/// `N`, and `join` puts the row tiles back in order. `g` moves under `colTile` and `rowTile`
/// (its free variables other than `row` shifted by two).
pub struct TileMapMap;

impl Rule for TileMapMap {
    fn name(&self) -> &'static str {
        "tile-map-map"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
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
                    let (Some(len_b), Some(col)) = (cx.length(ys), cx.elem(ys)) else { continue };
                    let Some(g2) = shifted_under(cx, g, 2) else { continue };
                    for tm in tile(cx, &a, len_a) {
                        for tn in tile(cx, &b, len_b) {
                            let tiles = Tiles { a: &a, b: &b, row: &row, col: &col, tm: &tm, tn: &tn };
                            out.push(tiles.build(g2.clone(), xs, ys));
                        }
                    }
                }
            }
        }
        out
    }
}

/// The new tile size of the map labelled `label`, if it has one and it divides `len`.
fn tile(cx: &Ctx, label: &str, len: i64) -> Vec<Size> {
    match cx.params.tiles.contains_key(label) {
        true => cx.map_factors(label, len),
        false => Vec::new(),
    }
}

/// Class `g` (in the context of a binder, whose variable 0 it may use) moved under `d` more
/// binders placed just outside that variable: its other free variables shifted by `d`.
fn shifted_under(cx: &Ctx, g: Id, d: i64) -> Option<Build> {
    if cx.data(g).free.iter().all(|&k| k == 0) {
        return Some(Build::Class(g));
    }
    let (_, e) = cx.repr.find_best(g);
    crate::binders::shift(&e, d, 1).map(Build::Expr)
}

/// The parts of one 2-D tiling.
struct Tiles<'a> {
    a: &'a str,
    b: &'a str,
    row: &'a Type,
    col: &'a Type,
    tm: &'a Size,
    tn: &'a Size,
}

impl Tiles<'_> {
    /// The right-hand side of [`TileMapMap`] for `g` already moved under the two tile binders.
    fn build(&self, g: Build, xs: Id, ys: Id) -> Build {
        let row_tile = Some(Type::array(self.row.clone(), self.tm.clone()));
        let col_tile = Some(Type::array(self.col.clone(), self.tn.clone()));
        let map = |label: String, f: Build| Build::call(abstract_map(label), vec![f]);
        // Under rowTile, colTile, row: colTile is variable 1.
        let cols = Build::app(map(format!("{}_i", self.b), g), Build::var(1, col_tile));
        // Under rowTile, colTile: rowTile is variable 1.
        let block = Build::app(map(format!("{}_i", self.a), Build::lam(cols)), Build::var(1, row_tile));
        let col_tiles = Build::call(Prim::Split(self.tn.clone()), vec![Build::Class(ys)]);
        let blocks = Build::map(self.b, Build::lam(block), col_tiles);
        let rows =
            Build::map(&format!("{}_j", self.a), Build::prim(Prim::Join), Build::call(Prim::Transpose, vec![blocks]));
        let row_tiles = Build::call(Prim::Split(self.tm.clone()), vec![Build::Class(xs)]);
        Build::call(Prim::Join, vec![Build::map(self.a, Build::lam(rows), row_tiles)])
    }
}

/// The abstract map primitive labelled `label`.
fn abstract_map(label: String) -> Prim {
    Prim::Map { kind: MapKind::Abstract, label }
}

/// True when class `c` is variable 0.
pub(super) fn is_var0(cx: &Ctx, c: Id) -> bool {
    cx.eg[c].nodes.iter().any(|n| matches!(n, Lift::Var(0, _)))
}

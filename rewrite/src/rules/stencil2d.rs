//! Two-dimensional overlapped tiling of a 2-D stencil (Lift's `tileStencils` in two dimensions,
//! Hagedorn et al., CGO'18).
//!
//! `slideND2`, `padClampND2` and `mapND2` are macros of the text format, expanded by the parser
//! into the 1-D primitives (`mapsat_ir::syntax`): the 2-D windows
//! `slideND2(n, 1, m, 1, xs)` are `map(transpose, slide(n, 1, map(slide(m, 1), xs)))` and
//! `mapND2@A(f, ws)` is `map@A_0(map@A_1(f), ws)`. The e-graph holds that expansion, so no
//! rule has to unfold the macros: the rule below matches it.

use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::{MapKind, Prim};
use mapsat_ir::{Size, Type};

/// `slide2d-tiling`:
///
/// ```text
/// map@A(map@B(f), map@T(transpose, slide(n, 1, map@S(slide(m, 1), xs))))
///   =>  map@S(join, join(map@T(transpose,
///         map@A(map@B(fun(t => map@A_i(map@B_i(f),
///                                map@T(transpose, slide(n, 1, map@S(slide(m, 1), t))))),
///           map@T(transpose, slide(u + n - 1, u, map@S(slide(v + m - 1, v), xs)))))))
/// ```
///
/// `u` and `v` are the new tile sizes of maps `A` and `B` ([`crate::tiles`]), size variables
/// (a tile slide's symbolic step must tile its input; see `mapsat_ir::check`). Sound when `u`
/// divides the number of window rows `H` and `v` the number of window columns `W` (at the
/// given sizes; the checker refuses the other values): tile `(i, j)` is the block
/// `xs[i*u .. i*u + u + n - 1)[j*v .. j*v + v + m - 1)`, whose `u x v` windows of `n x m` are
/// windows `(i*u + a, j*v + b)` of `xs`. The tiles' results `R[i][j][a][b]` are put back in
/// order by `map(transpose)` (`[i][a][j][b]`), `join` (`[i*u + a][j][b]`) and `map(join)`
/// (`[i*u + a][j*v + b]`). Unit steps only. `f` moves under the new binder `t`: shifted. Each
/// tile reads its halo again; local staging copies the tile to local memory once per work
/// group ([`crate::staging::stage_local`]).
///
/// When `xs` is a 2-D producer, `map@P(map@Q(h), zs)` (a stage inlined into its consumer by the
/// stage phase, its padding moved inside by `pad-map`), the rule also gives the form that
/// computes the producer over each tile (Halide's `compute_at`):
///
/// ```text
///   =>  ... map@A(map@B(fun(t => map@A_i(map@B_i(f),
///                         map@T(transpose, slide(n, 1, map@S(slide(m, 1), map@Q_t(map@Q_ti(h), t))))))),
///           map@T(transpose, slide(u + n - 1, u, map@S(slide(v + m - 1, v), zs)))) ...
/// ```
///
/// Sound for the same reason: a tile of `map(map(h), zs)` is `map(map(h))` of the same tile of
/// `zs`. A clamped border is sound too: `pad-map` made it part of `zs` (the windows of the
/// clamped input at clamped positions), so a halo outside the image computes the border's copy.
/// Both producer labels derive from `Q`, the map that computes (`P` may be a layout map's), so
/// that the stage choice names the producer ([`crate::stage_choice`]); staged, the producer is
/// computed into local memory once per tile and `B`'s windows read it there.
pub struct Slide2dTiling;

/// The parts of a matched 2-D window construction.
struct Windows2d {
    transpose: String,
    rows: Size,
    slide_map: String,
    cols: Size,
    xs: Id,
    elem: Type,
}

impl Slide2dTiling {
    /// The 2-D unit-step windows `map@T(transpose, slide(n, 1, map@S(slide(m, 1), xs)))` in `ws`.
    fn windows(cx: &Ctx, ws: Id) -> Vec<Windows2d> {
        let mut out = Vec::new();
        for (transpose, g, slid) in cx.maps(ws) {
            if !prims(cx, g).any(|p| matches!(p, Prim::Transpose)) {
                continue;
            }
            for (p, a) in cx.calls(slid) {
                let Prim::Slide(rows, step) = p else { continue };
                if step.as_const() != Some(1) {
                    continue;
                }
                for (slide_map, h, xs) in cx.maps(a[0]) {
                    for q in prims(cx, h) {
                        let Prim::Slide(cols, step) = q.clone() else { continue };
                        let elem = cx.elem(xs).and_then(|r| r.as_array().map(|(e, _)| e.clone()));
                        if let (Some(1), Some(elem)) = (step.as_const(), elem) {
                            let (transpose, rows, slide_map) = (transpose.clone(), rows.clone(), slide_map.clone());
                            out.push(Windows2d { transpose, rows, slide_map, cols, xs, elem });
                        }
                    }
                }
            }
        }
        out
    }
}

impl Windows2d {
    /// The windows of `arr` built as the matched ones are (with other sizes and steps).
    fn of(&self, (rows, row_step): (Size, Size), (cols, col_step): (Size, Size), arr: Build) -> Build {
        let cols = Build::map(&self.slide_map, Build::prim(Prim::Slide(cols, col_step)), arr);
        Build::map(&self.transpose, Build::prim(Prim::Transpose), Build::call(Prim::Slide(rows, row_step), vec![cols]))
    }
}

impl Slide2dTiling {
    /// The right-hand side: `tiles` (of `u x v` windows each, with their halo) mapped by a
    /// function reading the windows `windows` of its tile (the variable 0), with `f` already
    /// shifted under the tile's binder.
    fn tiled(win: &Windows2d, (a, b): (&str, &str), f: Build, tiles: Build, windows: Build) -> Build {
        let per_window = Build::call(map_prim(&super::derived(b, "_i")), vec![f]);
        let per_tile = Build::lam(Build::map(&super::derived(a, "_i"), per_window, windows));
        let results = Build::map(a, Build::call(map_prim(b), vec![per_tile]), tiles);
        let rows = Build::map(&win.transpose, Build::prim(Prim::Transpose), results);
        Build::map(&win.slide_map, Build::prim(Prim::Join), Build::call(Prim::Join, vec![rows]))
    }

    /// The 2-D producers `map@P(map@Q(h), zs)` in class `xs` (the array whose windows the
    /// stencil reads), for tiles of `rows x cols` elements: computed over each tile of `zs` in
    /// the tiled form (Halide's `compute_at`), rather than read from `xs`.
    fn producers(cx: &Ctx, xs: Id, rows: &Size, cols: &Size) -> Vec<Producer> {
        let mut out = Vec::new();
        for (_, g, zs) in cx.maps(xs) {
            let Some(elem) = cx.elem(zs).and_then(|r| r.as_array().map(|(e, _)| e.clone())) else { continue };
            for (q, h) in cx.partial_maps(g) {
                let Some(h) = cx.shifted(h, 1) else { continue };
                let tile = Type::array(Type::array(elem.clone(), cols.clone()), rows.clone());
                // Both labels derived from the computing map's (`p` may be a layout map's label).
                let (outer, inner) = (super::derived(&q, "_t"), super::derived(&q, "_ti"));
                out.push(Producer { outer, inner, h, xs: zs, tile });
            }
        }
        out
    }
}

/// A producer of a stencil's input computed per tile ([`Slide2dTiling::producers`]).
struct Producer {
    outer: String,
    inner: String,
    /// Its function, shifted under the tile's binder.
    h: Build,
    /// Its input.
    xs: Id,
    /// The type of one tile of its input.
    tile: Type,
}

impl Producer {
    /// The producer over the tile (the variable 0).
    fn over_tile(&self) -> Build {
        let t = Build::var(0, Some(self.tile.clone()));
        Build::map(&self.outer, Build::call(map_prim(&self.inner), vec![self.h.clone()]), t)
    }
}

/// A unit-step window of `n`: `(n, 1)`.
fn unit(n: &Size) -> (Size, Size) {
    (n.clone(), Size::constant(1))
}

/// The abstract map primitive labelled `label`.
fn map_prim(label: &str) -> Prim {
    Prim::Map { kind: MapKind::Abstract, label: label.to_string() }
}

impl Rule for Slide2dTiling {
    fn name(&self) -> &'static str {
        "slide2d-tiling"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        let symbolic = |s: &Size| s.as_const().is_none();
        for (a, g, ws) in cx.maps(c) {
            let Some((h, w)) = grid(cx, ws) else { continue };
            for (b, f) in cx.partial_maps(g) {
                let Some(f1) = cx.shifted(f, 1) else { continue };
                for win in Self::windows(cx, ws) {
                    for u in cx.map_factors(&a, h).into_iter().filter(symbolic) {
                        for v in cx.map_factors(&b, w).into_iter().filter(symbolic) {
                            let tile_rows = (u.add(&win.rows).sub(&Size::constant(1)), u.clone());
                            let tile_cols = (v.add(&win.cols).sub(&Size::constant(1)), v.clone());
                            for producer in Self::producers(cx, win.xs, &tile_rows.0, &tile_cols.0) {
                                let tiles = win.of(tile_rows.clone(), tile_cols.clone(), Build::Class(producer.xs));
                                let windows = win.of(unit(&win.rows), unit(&win.cols), producer.over_tile());
                                out.push(Self::tiled(&win, (&a, &b), f1.clone(), tiles, windows));
                            }
                            let tiles = win.of(tile_rows.clone(), tile_cols.clone(), Build::Class(win.xs));
                            let tile = Type::array(Type::array(win.elem.clone(), tile_cols.0.clone()), tile_rows.0);
                            let windows = win.of(unit(&win.rows), unit(&win.cols), Build::var(0, Some(tile)));
                            out.push(Self::tiled(&win, (&a, &b), f1.clone(), tiles, windows));
                        }
                    }
                }
            }
        }
        out
    }
}

/// The primitives (unapplied) of class `c`.
fn prims<'a>(cx: &'a Ctx, c: Id) -> impl Iterator<Item = &'a Prim> {
    cx.eg[c].nodes.iter().filter_map(|n| if let Lift::Prim(p) = n { Some(p) } else { None })
}

/// The concrete numbers of rows and columns of a 2-D array class.
fn grid(cx: &Ctx, c: Id) -> Option<(i64, i64)> {
    let (row, h) = cx.data(c).ty.array()?;
    let (_, w) = row.as_array()?;
    Some((h.eval(&cx.params.sizes)?, w.eval(&cx.params.sizes)?))
}

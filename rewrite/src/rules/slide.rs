//! Sliding windows and padding: moving a map through them, so that a stencil can read a
//! producer's values computed in its own windows (recomputed per window) instead of from an
//! array the producer wrote; and overlapped tiling of a stencil's windows.

use super::{Build, Ctx, Rule};
use egg::Id;
use mapsat_ir::ast::{MapKind, PadMode, Prim};
use mapsat_ir::{Size, Type};

/// `slide-map`:
///
/// ```text
/// slide(n, s, map@A(f, xs))  =>  map@A_w(map@A(f), slide(n, s, xs))
/// ```
///
/// Always sound: window `i` of the mapped array is `f` applied to each element of window `i` of
/// `xs`. The right side computes `f` once per window element, so a value shared by `n / s`
/// windows is computed that many times (Halide's inline choice); which is faster is for the
/// tuner. `f` stays in the same binder context: no shift.
pub struct SlideMap;

impl Rule for SlideMap {
    fn name(&self) -> &'static str {
        "slide-map"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (p, a) in cx.calls(c) {
            let Prim::Slide(..) = p else { continue };
            for (label, f, xs) in cx.maps(a[0]) {
                let per_window =
                    Build::call(Prim::Map { kind: MapKind::Abstract, label: label.clone() }, vec![Build::Class(f)]);
                let windows = Build::call(p.clone(), vec![Build::Class(xs)]);
                out.push(Build::map(&super::derived(&label, "_w"), per_window, windows));
            }
        }
        out
    }
}

/// `pad-map`:
///
/// ```text
/// padClamp(l, r, map@A(f, xs))  =>  map@A(f, padClamp(l, r, xs))
/// ```
///
/// Sound for clamping: every added element is a copy of the first or last element, and `f` of
/// a copy is a copy of `f` of it. Not for a constant pad (`f(c)` need not be `c`).
pub struct PadMap;

impl Rule for PadMap {
    fn name(&self) -> &'static str {
        "pad-map"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (p, a) in cx.calls(c) {
            let Prim::Pad(_, _, PadMode::Clamp) = p else { continue };
            for (label, f, xs) in cx.maps(a[0]) {
                out.push(Build::map(&label, Build::Class(f), Build::call(p.clone(), vec![Build::Class(xs)])));
            }
        }
        out
    }
}

/// `slide-tiling` (overlapped tiling of a stencil, Lift's `tileStencils`):
///
/// ```text
/// map@A(f, slide(n, 1, xs))
///   =>  join(map@A(fun(t => map@A_i(f, slide(n, 1, t))), slide(u + n - 1, u, xs)))
/// ```
///
/// `u` is the map's new tile size ([`crate::tiles`]) or one of the program's tunable sizes: a
/// size variable, never a constant (a slide with a symbolic step must tile its input, which
/// gives the checker the exact division `u * (m - n + 1)/u = m - n + 1`; see
/// `mapsat_ir::check`). Sound when `u` divides the number of windows `m - n + 1` (at the
/// given sizes; the checker refuses the other values of `u`): tile `k` holds `xs[k*u ..
/// k*u + u + n - 1)`, whose `u` windows of `n` are windows `k*u .. k*u + u` of `xs`, and `join`
/// puts the tiles' results back in order. Only for unit steps (windows with a larger step would
/// need the tile step to be a multiple of it). `f` moves under the new binder `t`: shifted.
/// Each tile reads its halo of `n - 1` elements again; what it computes from them once per
/// tile is what local staging keeps ([`crate::staging::stage_local`]).
pub struct SlideTiling;

impl Rule for SlideTiling {
    fn name(&self) -> &'static str {
        "slide-tiling"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, f, ws) in cx.maps(c) {
            let Some(len) = cx.length(ws) else { continue };
            for (p, a) in cx.calls(ws) {
                let Prim::Slide(n, step) = &p else { continue };
                let (Some(elem), Some(f1)) = (cx.elem(a[0]), cx.shifted(f, 1)) else { continue };
                if step.as_const() != Some(1) {
                    continue;
                }
                for u in cx.map_factors(&label, len).into_iter().filter(|u| u.as_const().is_none()) {
                    let width = u.add(n).sub(&Size::constant(1));
                    let tile = Build::var(0, Some(Type::array(elem.clone(), width.clone())));
                    let windows = Build::call(p.clone(), vec![tile]);
                    let body = Build::map(&super::derived(&label, "_i"), f1.clone(), windows);
                    let tiles = Build::call(Prim::Slide(width, u), vec![Build::Class(a[0])]);
                    out.push(Build::call(Prim::Join, vec![Build::map(&label, Build::lam(body), tiles)]));
                }
            }
        }
        out
    }
}

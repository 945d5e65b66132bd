//! Sliding windows and padding: moving a map through them, so that a stencil can read a
//! producer's values computed in its own windows (recomputed per window) instead of from an
//! array the producer wrote.

use super::{Build, Ctx, Rule};
use egg::Id;
use mapsat_ir::ast::{MapKind, PadMode, Prim};

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

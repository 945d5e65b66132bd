//! Split-join: tiling a map.

use super::{Build, Ctx, Rule};
use crate::infer::Ty;
use egg::Id;
use mapsat_ir::ast::{MapKind, Prim};
use mapsat_ir::Size;

/// `split-join`:
///
/// ```text
/// map@L(f, xs)  =>  join(map@L(map@L_i(f), split(n, xs)))
/// ```
///
/// `n` is the map's new tile size if it has one ([`crate::tiles`]), else a constant or one of
/// the program's tunable sizes. Sound when `n` divides the length of
/// `xs` (at the given sizes): `split n` then cuts `xs` into
/// whole chunks, the inner map applies `f` to every element of each chunk in order, and `join`
/// concatenates the chunks back. Only `1 < n < length`, and only while the new array's rank stays
/// within the limit (this stops towers of splits). `f` stays in the same binder context: no shift.
/// On a map written by `toX(...)` too: extraction keeps a map form under the `toX`
/// ([`crate::extract`]), the tiled form serves where the class is read elsewhere.
pub struct SplitJoin;

impl Rule for SplitJoin {
    fn name(&self) -> &'static str {
        "split-join"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, f, xs) in cx.maps(c) {
            let (Some(len), Some(elem)) = (cx.length(xs), cx.elem(xs)) else { continue };
            if Ty::rank_of(&elem) + 2 > cx.params.max_rank {
                continue;
            }
            for n in cx.map_factors(&label, len) {
                out.push(split_join(&label, Build::Class(f), Build::Class(xs), n));
            }
        }
        out
    }
}

/// The right-hand side of [`SplitJoin`] for `map@label(f, xs)` split by `n`:
/// `join(map@label(map@label_i(f), split(n, xs)))`.
pub fn split_join(label: &str, f: Build, xs: Build, n: Size) -> Build {
    let inner = Build::call(Prim::Map { kind: MapKind::Abstract, label: format!("{label}_i") }, vec![f]);
    let split = Build::call(Prim::Split(n), vec![xs]);
    Build::call(Prim::Join, vec![Build::map(label, inner, split)])
}

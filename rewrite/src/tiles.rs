//! New tunable tile sizes: one size variable per map of the input, for the tuner to search.
//!
//! Split-join with a constant factor fixes a tile size; with a size variable declared with a
//! range (`size tA in 1..64 = 4`), the tuner chooses it (it keeps the values at which the variant
//! type-checks, i.e. those that divide). Each abstract map of the input gets one, named `t` and
//! its label, with the largest constant split factor that divides its length as the default
//! (rules decide divisibility at that default). The inner map of a 2-D map (`map@A(map@B(f), xs)`,
//! `mapND2`'s expansion) gets one too, over the rows of `xs`, for 2-D tiling (`slide2d-tiling`).
//! Each reduction of the input gets one as well, named `t` and the size variable of its length
//! (`tK` for matmul's dot products over `K`): `partial-reduce` splits reductions of that length
//! by it (the `split(tK, ..)` of `examples/matmul_tiled.lift`).
//!
//! The vectorization rule gets one too, a vector width `vw` (2 to 16, 4 by default): it writes
//! `asVector(vw, ..)` instead of `asVector(4, ..)`, so that the tuner chooses the width for the
//! device (`mapsat_ir::widths`).

use mapsat_ir::ast::{MapKind, Node, Prim, SizeVar};
use mapsat_ir::check::TypeInfo;
use mapsat_ir::{Program, Sizes};
use std::collections::BTreeSet;

/// A new tile size and the map it tiles.
#[derive(Clone, Debug)]
pub struct Tile {
    /// The map's label (for a reduction's: the size variable of its length, or `R`).
    pub label: String,
    /// The size variable, as the variants declare it.
    pub size: SizeVar,
    /// For a reduction's tile size: the length of the reductions it splits (`None` for a map's).
    pub reduction: Option<i64>,
}

/// The new tile sizes of `p`'s abstract maps and reductions (in source order; none for one whose
/// length has no divisor among `factors`), named unlike `p`'s sizes and parameters and the
/// `reserved` names.
pub fn new_tile_sizes(p: &Program, info: &TypeInfo, sizes: &Sizes, factors: &[i64], reserved: &[String]) -> Vec<Tile> {
    let mut taken: BTreeSet<String> = p.sizes.iter().map(|v| v.name.clone()).collect();
    taken.extend(p.params.iter().map(|q| q.name.clone()));
    taken.extend(reserved.iter().cloned());
    let mut out = Vec::new();
    // Lengths of the reductions given a tile size: one per length.
    let mut reduced = BTreeSet::new();
    for (k, node) in p.nodes.iter().enumerate() {
        let Node::App(f, xs) = node else { continue };
        let (head, args) = p.spine(*f);
        if let (Node::Prim(Prim::Reduce { .. }), 2) = (p.node(head), args.len()) {
            out.extend(reduction(info.of(*xs), sizes, factors, &mut reduced, &mut taken));
            continue;
        }
        let Node::Prim(Prim::Map { kind: MapKind::Abstract, label }) = p.node(head) else { continue };
        if args.len() != 1 || info.types.get(k).and_then(Option::as_ref).is_none() {
            continue;
        }
        let Some((row, len)) = info.of(*xs).and_then(|t| t.as_array()) else { continue };
        out.extend(tile(label, len.eval(sizes), factors, &mut taken));
        // The inner map of a 2-D map, `map@A(map@B(f), xs)`, tiles the rows of `xs`.
        let (inner, inner_args) = p.spine(args[0]);
        if let (Node::Prim(Prim::Map { kind: MapKind::Abstract, label }), 1) = (p.node(inner), inner_args.len()) {
            let width = row.as_array().and_then(|(_, w)| w.eval(sizes));
            out.extend(tile(label, width, factors, &mut taken));
        }
    }
    out
}

/// The tile size of the map labelled `label` over `len` elements, named `t` and its label (not
/// in `taken`), with [`default_tile`] as its default; `None` when `len` has no such divisor.
fn tile(label: &str, len: Option<i64>, factors: &[i64], taken: &mut BTreeSet<String>) -> Option<Tile> {
    let len = len?;
    let n = default_tile(len, factors)?;
    let base = format!("t{label}");
    let name = (0..).map(|i| if i == 0 { base.clone() } else { format!("{base}_{i}") }).find(|c| !taken.contains(c))?;
    taken.insert(name.clone());
    Some(Tile {
        label: label.to_string(),
        size: SizeVar { name, min: 1, max: Some(len), default: Some(n) },
        reduction: None,
    })
}

/// A tile size's default: the largest factor that divides `len` (and is less), or else, for a
/// length no factor divides (49 rows of a 7x7 image, 27), its largest divisor up to the largest
/// factor and at most [`LARGEST_FALLBACK`] (7, 9); `None` for a prime length.
fn default_tile(len: i64, factors: &[i64]) -> Option<i64> {
    let divides = |n: &i64| *n > 1 && *n < len && len % n == 0;
    let largest = factors.iter().copied().max()?.min(LARGEST_FALLBACK);
    factors.iter().copied().filter(divides).max().or_else(|| (2..=largest).rev().find(divides))
}

/// The largest divisor [`default_tile`] tries where no factor divides (a factor of `i64::MAX`
/// would otherwise be a search without end).
const LARGEST_FALLBACK: i64 = 64;

/// The tile size of a reduction over `xs` (of type `ty`), named `t` and the size variable of its
/// length (`tR` for another length); `None` when the length is not known, no factor divides it,
/// or a reduction of that length (in `reduced`) has one already.
fn reduction(
    ty: Option<&mapsat_ir::Type>,
    sizes: &Sizes,
    factors: &[i64],
    reduced: &mut BTreeSet<i64>,
    taken: &mut BTreeSet<String>,
) -> Option<Tile> {
    let (_, len) = ty?.as_array()?;
    let vars = len.vars();
    let label = match vars.as_slice() {
        [v] if *len == mapsat_ir::Size::var(v) => v.clone(),
        _ => "R".to_string(),
    };
    let n = len.eval(sizes)?;
    if reduced.contains(&n) {
        return None;
    }
    let mut t = tile(&label, Some(n), factors, taken)?;
    t.reduction = Some(n);
    reduced.insert(n);
    Some(t)
}

/// The new vector width: `vw`, or the first of `vw_1`, `vw_2`... that is not in `taken`.
pub fn new_vector_width(taken: &BTreeSet<String>) -> SizeVar {
    let name = (0..)
        .map(|i| if i == 0 { "vw".to_string() } else { format!("vw_{i}") })
        .find(|c| !taken.contains(c))
        .unwrap_or_default();
    SizeVar { name, min: 2, max: Some(16), default: Some(4) }
}

/// Declares in `p` the new tile sizes and the vector width it uses ([`Program::used_sizes`]).
pub fn declare_used(p: &mut Program, tiles: &[Tile], width: Option<&SizeVar>) {
    let used = p.used_sizes();
    for size in tiles.iter().map(|t| &t.size).chain(width) {
        if used.contains(&size.name) && !p.sizes.iter().any(|v| v.name == size.name) {
            p.sizes.push(size.clone());
        }
    }
}

/// Makes the sizes at which `p` was checked its defaults: a variant checked at `H = 512`
/// declares `size H = 512`, so that its tile sizes (whose defaults and ranges come from those
/// sizes) are valid at its own defaults.
pub fn pin_defaults(p: &mut Program, sizes: &Sizes) {
    for v in &mut p.sizes {
        if let Some(value) = sizes.get(&v.name) {
            v.default = Some(value);
        }
    }
}

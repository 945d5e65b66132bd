//! The stage choice a variant makes for each producer of the input program: Halide's inline,
//! compute_at and compute_root, read back from the variant's text.
//!
//! A producer is a `let x = toM(e) in ...` of the input (a kernel boundary when `M` is global).
//! Its maps keep their labels through the rules, or get labels derived from them (`A` becomes
//! `A_f`, `A_w`, `A_2`, ...). In a variant, the producer is
//!
//! - **global** (compute_root): some `toGlobal(e')` computes it, that is `e'`'s outermost map
//!   (the first in pre-order) carries one of its labels or a label derived from one;
//! - **local** (compute_at a work group, with the halo its consumer's windows need): the same
//!   with `toLocal`;
//! - **private**: the same with `toPrivate`;
//! - **inline**: none of these; its values are recomputed where its consumer reads them.
//!
//! The first such `toM` in pre-order from the root decides.

use mapsat_ir::ast::{AddressSpace, Node, NodeId, Prim, Program};

pub use mapsat_ir::choice::{describe, Choice, StageChoice};

/// The choice `variant` makes for each producer of `input`, in the input's order (empty for
/// an input without `let x = toM(..)`).
///
/// A producer whose maps all fused away (a `let s = toGlobal(reduce(..))` whose map was fused
/// into the reduction) has no label left, and one that had none (a plain reduction, which a
/// variant may split into a map of partial sums) has no label to follow: each is found by its
/// binder, kept as a `let` of the same name.
pub fn of(input: &Program, variant: &Program) -> Vec<StageChoice> {
    let staged = staged(variant);
    let by_name = producers(variant);
    producers(input)
        .into_iter()
        .map(|(binder, _, labels)| {
            let by_label = staged.iter().find(|(_, outer)| labels.iter().any(|l| derives(outer, l))).map(|(s, _)| *s);
            let by_binder = || {
                let named = by_name.iter().find(|(b, _, l)| *b == binder && (l.is_empty() || labels.is_empty()));
                named.map(|(_, space, _)| *space)
            };
            let choice = by_label.or_else(by_binder).map_or(Choice::Inline, Choice::of);
            StageChoice { binder, choice }
        })
        .collect()
}

/// What `p` computes into memory: for each `toM(e)` in pre-order, the choice it makes (private,
/// local or global) and the label of `e`'s outermost map.
pub fn stagings(p: &Program) -> Vec<(Choice, String)> {
    staged(p).into_iter().map(|(space, label)| (Choice::of(space), label)).collect()
}

/// True when `label` is `base` or derived from it (`base_...`).
fn derives(label: &str, base: &str) -> bool {
    label.strip_prefix(base).is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
}

/// The `let x = toM(e)` of `p` in pre-order: `x`, `M` and the labels of `e`'s maps.
fn producers(p: &Program) -> Vec<(String, AddressSpace, Vec<String>)> {
    preorder(p, p.root)
        .into_iter()
        .filter_map(|id| match p.node(id) {
            Node::Let(value, _) => {
                let (space, e) = to_space(p, *value)?;
                let binder = p.meta[id.index()].binder.clone().unwrap_or_else(|| "_".into());
                Some((binder, space, labels(p, e)))
            }
            _ => None,
        })
        .collect()
}

/// Every `toM(e)` of `p` in pre-order: `M` and the label of `e`'s outermost map. Not a copy
/// of a parameter stored transposed (`transpose-stage`'s, whose labels derive from those of
/// the map reading it, which may be a producer's): it computes no producer.
fn staged(p: &Program) -> Vec<(AddressSpace, String)> {
    preorder(p, p.root)
        .into_iter()
        .filter_map(|id| {
            let (space, e) = to_space(p, id)?;
            (!transposed_parameter(p, e)).then_some(())?;
            Some((space, labels(p, e).into_iter().next()?))
        })
        .collect()
}

/// True when `e` is `map(fun(r => map(fun(x => x), r)), transpose(w))` for a parameter `w`,
/// or that with `map(fun(x => x))` for the row's function.
fn transposed_parameter(p: &Program, e: NodeId) -> bool {
    let map_of = |id: NodeId| match p.spine(id) {
        (head, args) if matches!(p.node(head), Node::Prim(Prim::Map { .. })) && args.len() == 2 => {
            Some((args[0], args[1]))
        }
        _ => None,
    };
    let body = |f: NodeId| match p.node(f) {
        Node::Lam(b, _) => Some(*b),
        _ => None,
    };
    let Some((f, xs)) = map_of(e) else { return false };
    let transposed = matches!(p.spine(xs), (t, a) if matches!(p.node(t), Node::Prim(Prim::Transpose))
        && a.len() == 1 && matches!(p.node(a[0]), Node::Param(_)));
    let identity = |g: NodeId| body(g).is_some_and(|x| matches!(p.node(x), Node::Var(0)));
    let copies_rows = match p.spine(f) {
        (m, a) if matches!(p.node(m), Node::Prim(Prim::Map { .. })) && a.len() == 1 => identity(a[0]),
        _ => body(f).and_then(map_of).is_some_and(|(g, r)| matches!(p.node(r), Node::Var(0)) && identity(g)),
    };
    transposed && copies_rows
}

/// `(M, e)` when `id` is `toM(e)`.
fn to_space(p: &Program, id: NodeId) -> Option<(AddressSpace, NodeId)> {
    match p.node(id) {
        Node::App(f, e) => match p.node(*f) {
            Node::Prim(Prim::To(space)) => Some((*space, *e)),
            _ => None,
        },
        _ => None,
    }
}

/// The labels of the maps under `id`, in pre-order.
fn labels(p: &Program, id: NodeId) -> Vec<String> {
    let mut out = Vec::new();
    p.preorder(id, &mut |_, n| {
        if let Node::Prim(Prim::Map { label, .. }) = n {
            out.push(label.clone());
        }
    });
    out
}

/// The nodes under `id` in pre-order (a function before its argument).
fn preorder(p: &Program, id: NodeId) -> Vec<NodeId> {
    let mut out = Vec::new();
    p.preorder(id, &mut |n, _| out.push(n));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &str = "size H = 16, W = 16
def sharpen(img: [[f32]W]H, amount: f32) : [[f32]W]H =
  let h = toGlobal(map@A(fun(row =>
            map@B(fun(w => reduce(add, 0.0, w) / 3.0), slide(3, 1, padClamp(1, 1, row)))), img)) in
  let v = toGlobal(map@C(fun(col =>
            map@D(fun(w => reduce(add, 0.0, w) / 3.0), slide(3, 1, padClamp(1, 1, col)))), transpose(h))) in
  map@E(fun(rows => map@F(fun(p => p.0 + amount * (p.0 - p.1)), zip(rows.0, rows.1))), zip(img, transpose(v)))";

    fn choices(variant: &str) -> String {
        let input = mapsat_ir::parse(INPUT).unwrap();
        describe(&of(&input, &mapsat_ir::parse(variant).unwrap()))
    }

    /// A copy of weights stored transposed for a consumer whose labels are a producer's
    /// (`transpose-stage`) does not make that producer global.
    #[test]
    fn a_transposed_copy_of_a_parameter_is_no_producer() {
        let input = mapsat_ir::parse(
            "size N = 4
def f(x: [f32]N, w: [[f32]N]N) =
  let h = toGlobal(map@A(fun(v => v * 2.0), x)) in
  map@B(fun(c => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(h, c)))), w)",
        )
        .unwrap();
        for copy in ["map@A_tc(fun(v => v))", "fun(r => map@A_tc(fun(v => v), r))"] {
            let variant = mapsat_ir::parse(&format!(
                "size N = 4
def f(x: [f32]N, w: [[f32]N]N) =
  let t = toGlobal(map@A_t({copy}, transpose(w))) in
  map@B(fun(c => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(map@A(fun(v => v * 2.0), x), c)))), transpose(t))"
            ))
            .unwrap();
            assert_eq!(describe(&of(&input, &variant)), "h inline", "{copy}");
        }
        assert_eq!(describe(&of(&input, &input)), "h global");
    }

    #[test]
    fn the_input_materializes_what_it_writes_to_global_memory() {
        assert_eq!(choices(INPUT), "h global, v global");
    }

    /// `mapsat rewrite examples/sharpen.lift`'s variant 0: `h`'s maps are recomputed inside
    /// `v`'s kernel (its `A_f` is not the outermost map of any `toM`), and the `let` kept for
    /// `v` (still named `h`: binders are named by class) computes `v`'s map `C`.
    #[test]
    fn a_producer_recomputed_in_its_consumer_is_inline() {
        let v = "size H = 16, W = 16
def sharpen(img: [[f32]W]H, amount: f32) : [[f32]W]H =
  let h = toGlobal(map@C(map@D(fun(x => reduce(fun(x1, x2 => x1 + reduce(add, 0.0, x2) / 3.0), 0.0, x) / 3.0)),
    map@C_f(fun(x => slide(3, 1, padClamp(1, 1, x))),
      transpose(map@A_f(fun(x => slide(3, 1, padClamp(1, 1, x))), img))))) in
  map@E(map@F(fun(p => p.0 + amount * (p.0 - p.1))), map@E_f(fun(x => zip(x.0, x.1)), zip(img, transpose(h))))";
        assert_eq!(choices(v), "h inline, v global");
    }

    /// Variant 4 of the same: each tile of `v`'s windows stages the `h` values it needs (halo
    /// included) in local memory; the map computing them carries `h`'s label `A`.
    #[test]
    fn a_producer_computed_into_local_memory_per_tile_is_local() {
        let v = "size H = 16, W = 16
size tD in 1..16 = 8
def sharpen(img: [[f32]W]H, amount: f32) : [[f32]W]H =
  let h = toGlobal(map@C(fun(x => join(map@D(fun(x1 => map@D_i(fun(w => reduce(add, 0.0, w) / 3.0), slide(3, 1, x1))),
      slide(tD + 2, tD, toLocal(map@A(fun(w => reduce(add, 0.0, w) / 3.0), padClamp(1, 1, x))))))),
    transpose(map@A_f(fun(x => slide(3, 1, padClamp(1, 1, x))), img)))) in
  map@E(map@F(fun(p => p.0 + amount * (p.0 - p.1))), map@E_f(fun(x => zip(x.0, x.1)), zip(img, transpose(h))))";
        assert_eq!(choices(v), "h local, v global");
    }

    /// A norm whose producer's map was fused into its reduction: no label of it is left, but
    /// the `let s = toGlobal(..)` is kept: global, not inline.
    #[test]
    fn a_producer_without_a_map_left_is_found_by_its_binder() {
        let input = mapsat_ir::parse(
            "size N = 13
def norm(x: [f32]N) : [f32]N =
  let s = toGlobal(reduce(add, 0.0, map@A(fun(v => v * v), x))) in map@B(fun(v => v / sqrt(s)), x)",
        )
        .unwrap();
        let fused = "size N = 13
def norm(x: [f32]N) : [f32]N =
  let s = toGlobal(reduce(fun(a, v => a + v * v), 0.0, x)) in map@B(fun(v => v / sqrt(s)), x)";
        assert_eq!(describe(&of(&input, &mapsat_ir::parse(fused).unwrap())), "s global");
        let inlined = "size N = 13
def norm(x: [f32]N) : [f32]N =
  map@B(fun(v => v / sqrt(reduce(fun(a, v => a + v * v), 0.0, x))), x)";
        assert_eq!(describe(&of(&input, &mapsat_ir::parse(inlined).unwrap())), "s inline");
    }

    /// A plain reduction (no map, so no label) that a variant splits into a map of partial sums
    /// is still the producer `s`, kept in global memory (it was called inline).
    #[test]
    fn a_producer_without_a_map_in_the_input_is_found_by_its_binder() {
        let input = "size N = 64
def sm(x: [f32]N) : [f32]N =
  let s = toGlobal(reduce(add, 0.0, x)) in map@A(fun(v => v / s), x)";
        let input = mapsat_ir::parse(input).unwrap();
        let split = "size N = 64
def sm(x: [f32]N) : [f32]N =
  let s = toGlobal(reduce(add, 0.0, map@R16(reduce(add, 0.0), split(16, x)))) in map@A(fun(v => v / s), x)";
        assert_eq!(describe(&of(&input, &mapsat_ir::parse(split).unwrap())), "s global");
        let inlined = "size N = 64
def sm(x: [f32]N) : [f32]N =
  map@A(fun(v => v / reduce(add, 0.0, map@R16(reduce(add, 0.0), split(16, x)))), x)";
        assert_eq!(describe(&of(&input, &mapsat_ir::parse(inlined).unwrap())), "s inline");
    }

    #[test]
    fn stagings_name_the_memory_and_the_map_computed_into_it() {
        let p = mapsat_ir::parse(
            "size N = 8\ndef f(xs: [f32]N) : [f32]N =
  let y = toGlobal(map@A(fun(x => x * 2.0), xs)) in
  map@B(fun(x => x + 1.0), toLocal(join(map@C(fun(x => x), split(2, y)))))",
        )
        .unwrap();
        assert_eq!(stagings(&p), [(Choice::Global, "A".to_string()), (Choice::Local, "C".to_string())]);
    }

    #[test]
    fn a_label_derives_only_from_its_own_prefix() {
        assert!(derives("A", "A"));
        assert!(derives("A_f_2", "A"));
        assert!(!derives("AB", "A"));
        assert!(!derives("B_f", "A"));
    }

    #[test]
    fn a_program_without_producers_has_no_choices() {
        let p = mapsat_ir::parse("size N = 8\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => x * 2.0), xs)").unwrap();
        assert!(of(&p, &p).is_empty());
    }
}

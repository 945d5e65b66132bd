//! Property tests of the tiling macros (`tile-map-map`, `register-block`, `outer-product`) and of each primitive
//! rule they are sequences of (`split-join`, `eta-expand`, `map-fission`,
//! `map-map-interchange`, `map-reduce-interchange`): the variants they give, rewritten at the
//! default sizes with symbolic tile sizes, compute what the input computes at random valid sizes
//! (tile sizes that divide the lengths), on random inputs.

mod common;

use mapsat_ir::{Program, Sizes};
use mapsat_rewrite::{rewrite, Budget, Options, Variant};
use proptest::prelude::*;
use std::sync::OnceLock;

/// Matrix multiplication (the dot product under the column map uses the row).
const MATMUL: &str = "size M = 8, K = 4, N = 8\ndef mm(a: [[f32]K]M, b: [[f32]N]K) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(col => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))), a)";

/// A map nest whose inner function uses the outer row twice and a non-zero initial value, with
/// an accumulator that is not a plain sum.
const ROWS: &str = "size M = 8, K = 3, N = 8\ndef f(a: [[f32]K]M, b: [[f32]K]N) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(col => reduce(fun(acc, p => acc * 0.5 + p.0 - exp(p.1) * at(0, row)), 1.0, zip(row, col))), b)), a)";

/// The variants of `src` after `rules` that `keep` selects (at least one).
fn variants(src: &str, rules: &[&str], iterations: usize, keep: fn(&str) -> bool) -> (Program, Vec<Variant>) {
    let p = mapsat_ir::parse(src).unwrap();
    let out = rewrite(&p, &common::only(rules, iterations)).unwrap();
    assert_eq!(out.rejected, 0, "{rules:?}: ill-typed terms in the e-graph");
    let kept: Vec<Variant> = out.variants.into_iter().filter(|v| keep(&mapsat_ir::print(&v.program))).collect();
    assert!(!kept.is_empty(), "{src}: no variant of the kind");
    (p, kept)
}

/// The printed program without white space.
fn flat(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// True for a 2-D tiled program (`map(join, transpose(...))` puts the blocks back).
fn tiled_2d(text: &str) -> bool {
    let t = flat(text);
    t.contains("split(tA,a)") && t.contains("split(tB,") && t.contains("join,transpose(")
}

/// True for a register-blocked program (a reduction over an array accumulator of a block,
/// started by the interchange's `map@B_i_z`).
fn blocked(text: &str) -> bool {
    let t = flat(text);
    t.contains("map@B_i_z(fun(") && t.contains("split(tB,")
}

fn tiled_matmul() -> &'static (Program, Vec<Variant>) {
    static V: OnceLock<(Program, Vec<Variant>)> = OnceLock::new();
    V.get_or_init(|| variants(MATMUL, &["tile-map-map"], 1, tiled_2d))
}

fn tiled_rows() -> &'static (Program, Vec<Variant>) {
    static V: OnceLock<(Program, Vec<Variant>)> = OnceLock::new();
    V.get_or_init(|| variants(ROWS, &["tile-map-map"], 1, tiled_2d))
}

fn blocked_matmul() -> &'static (Program, Vec<Variant>) {
    static V: OnceLock<(Program, Vec<Variant>)> = OnceLock::new();
    V.get_or_init(|| variants(MATMUL, &["register-block", "reduce-map-fusion"], 2, blocked))
}

/// True for an outer product: vectors of columns (`asVector`) times blocks of rows of `a`
/// (`split(tA, a)`), one vector accumulator per row of the block, in private memory.
fn outer(text: &str) -> bool {
    let t = flat(text);
    t.contains("asVector(vw,") && t.contains("split(tA,a)") && t.contains("_i_z(fun(") && t.contains("toPrivate(")
}

fn outer_matmul() -> &'static (Program, Vec<Variant>) {
    static V: OnceLock<(Program, Vec<Variant>)> = OnceLock::new();
    V.get_or_init(|| variants(MATMUL, &["outer-product", "reduce-map-fusion"], 2, outer))
}

fn blocked_rows() -> &'static (Program, Vec<Variant>) {
    static V: OnceLock<(Program, Vec<Variant>)> = OnceLock::new();
    V.get_or_init(|| variants(ROWS, &["register-block"], 1, blocked))
}

/// True for a variant that splits by tile sizes only (a constant split, of a tile, holds at
/// the default sizes only).
fn symbolic_splits(text: &str) -> bool {
    !flat(text).contains("split(") || !(0..10).any(|d| flat(text).contains(&format!("split({d}")))
}

/// The primitive steps of the macros, each with the rules run before it that make its match (as
/// the steps before it in the macro do), on matmul and on `ROWS`: `(rules, iterations, text)`,
/// the primitive first, and a text some variant of one of the two then has (its right-hand
/// side; matmul's whole-row `map-reduce-interchange` is not among its variants, `ROWS`'s is).
const STEPS: [(&[&str], usize, &str); 6] = [
    (&["split-join"], 2, "split(tA,"),
    (&["eta-expand", "split-join"], 2, "_i(fun("),
    (&["map-fission", "split-join"], 2, "_f(fun("),
    (&["map-map-interchange"], 1, "transpose(map@B(fun("),
    (&["map-map-interchange", "split-join"], 2, "transpose(map@B("),
    (&["map-reduce-interchange", "reduce-map-fusion"], 2, "map@B_z(fun("),
];

/// The variants of each step of [`STEPS`] on matmul and `ROWS` (the primitive applied in each).
fn steps() -> &'static Vec<(Program, Vec<Variant>)> {
    static V: OnceLock<Vec<(Program, Vec<Variant>)>> = OnceLock::new();
    V.get_or_init(|| {
        let mut out = Vec::new();
        for (rules, iterations, text) in STEPS {
            let mut has = false;
            for src in [MATMUL, ROWS] {
                let p = mapsat_ir::parse(src).unwrap();
                let opts = Options {
                    budget: Budget { iterations, ..Budget::default() },
                    rules: Some(rules.iter().map(|r| r.to_string()).collect()),
                    variants: 32,
                    ..Options::default()
                };
                let got = rewrite(&p, &opts).unwrap();
                assert_eq!(got.rejected, 0, "{rules:?}: ill-typed terms in the e-graph");
                assert!(got.report.applied[rules[0]] > 0, "{rules:?} on {src}: not applied");
                let kept: Vec<Variant> =
                    got.variants.into_iter().filter(|v| symbolic_splits(&mapsat_ir::print(&v.program))).collect();
                has |= kept.iter().any(|v| flat(&mapsat_ir::print(&v.program)).contains(text));
                out.push((p, kept));
            }
            assert!(has, "{rules:?}: no variant with {text}");
        }
        out
    })
}

/// Checks every variant against the input at `sizes`.
fn check(pv: &(Program, Vec<Variant>), sizes: &Sizes) -> Result<(), TestCaseError> {
    for v in &pv.1 {
        common::same_function(&pv.0, &v.program, sizes).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn tiling_2d_keeps_the_function(tm in 1i64..5, rows in 1i64..4, tn in 1i64..5, cols in 1i64..4, k in 1i64..6) {
        let sizes = Sizes::new().with("M", tm * rows).with("N", tn * cols).with("K", k).with("tA", tm).with("tB", tn);
        check(tiled_matmul(), &sizes)?;
        check(tiled_rows(), &sizes)?;
    }

    #[test]
    fn each_step_of_the_macros_keeps_the_function(tm in 1i64..5, rows in 1i64..4, tn in 1i64..5, cols in 1i64..4, tk in 1i64..4, ks in 1i64..3) {
        // `tC`: the split of matmul's dot product (split-join on map@C).
        let sizes = Sizes::new().with("M", tm * rows).with("N", tn * cols).with("K", tk * ks);
        let sizes = sizes.with("tA", tm).with("tB", tn).with("tC", tk);
        for pv in steps() {
            check(pv, &sizes)?;
        }
    }

    #[test]
    fn the_outer_product_keeps_the_function(tm in 1i64..5, rows in 1i64..4, w in prop::sample::select(vec![2i64, 4, 8]), cols in 1i64..4, k in 1i64..6) {
        let sizes = Sizes::new().with("M", tm * rows).with("N", w * cols).with("K", k).with("tA", tm).with("vw", w);
        check(outer_matmul(), &sizes)?;
    }

    #[test]
    fn register_blocking_keeps_the_function(m in 1i64..5, rn in 1i64..5, blocks in 1i64..4, k in 1i64..6) {
        let sizes = Sizes::new().with("M", m).with("N", rn * blocks).with("K", k).with("tB", rn);
        check(blocked_matmul(), &sizes)?;
        check(blocked_rows(), &sizes)?;
    }
}

/// How often `rule`, run alone for `iterations` on `src`, applied.
fn applications(src: &str, rule: &str, iterations: usize) -> usize {
    let p = mapsat_ir::parse(src).unwrap();
    rewrite(&p, &common::only(&[rule], iterations)).unwrap().report.applied[rule]
}

#[test]
fn tiling_needs_an_inner_array_free_of_the_row() {
    // The inner map runs over the row itself: no 2-D tiling.
    let src =
        "size M = 8, N = 8\ndef f(a: [[f32]N]M) : [[f32]N]M = map@A(fun(row => map@B(fun(x => x * 2.0), row)), a)";
    assert_eq!(applications(src, "tile-map-map", 2), 0);
}

#[test]
fn register_blocking_needs_a_reduction_free_of_the_column() {
    // The initial value depends on the column: blocks cannot share one accumulator start.
    let src = "size M = 4, K = 4, N = 8\ndef f(a: [[f32]K]M, b: [[f32]K]N) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(col => reduce(fun(acc, p => acc + p.0 * p.1), at(0, col), zip(row, col))), b)), a)";
    assert_eq!(applications(src, "register-block", 2), 0);
}

#[test]
fn map_map_interchange_needs_an_inner_array_free_of_the_row() {
    // The inner map runs over the row itself (`map-interchange`'s case, not this one's).
    let src =
        "size M = 8, N = 8\ndef f(a: [[f32]N]M) : [[f32]N]M = map@A(fun(row => map@B(fun(x => x * 2.0), row)), a)";
    assert_eq!(applications(src, "map-map-interchange", 2), 0);
}

#[test]
fn eta_expand_leaves_lambdas_alone() {
    // Every map's function is a lambda already: nothing to expand (no tower of lambdas).
    assert_eq!(applications(MATMUL, "eta-expand", 3), 0);
}

//! `partial-reduce` by a reduction's new tile size over a map of products (a dot product): the
//! chunks reduced with the map fused into the operator, and unfused (each chunk's products
//! mapped, then summed: `examples/matmul_tiled.lift`'s form), at random sizes; every variant
//! computes what the input computes.

mod common;

use mapsat_ir::Sizes;
use mapsat_rewrite::{rewrite, Budget, Options};
use proptest::prelude::*;

const DOT: &str =
    "size N = 16\ndef dot(x: [f32]N, y: [f32]N) : f32 = reduce(add, 0.0, map@A(fun(p => p.0 * p.1), zip(x, y)))";

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn chunks_fused_and_unfused_keep_the_function(chunks in 2i64..6, tile in 2i64..6) {
        let p = mapsat_ir::parse(DOT).unwrap();
        let sizes = Sizes::new().with("N", chunks * tile);
        let opts = Options {
            sizes: sizes.clone(),
            budget: Budget { iterations: 2, ..Budget::default() },
            variants: 32,
            split_factors: vec![tile],
            rules: Some(vec!["partial-reduce".to_string()]),
            ..Options::default()
        };
        let out = rewrite(&p, &opts).unwrap();
        prop_assert_eq!(out.rejected, 0);
        let texts: Vec<String> =
            out.variants.iter().map(|v| mapsat_ir::print(&v.program).split_whitespace().collect()).collect();
        let unfused = texts.iter().any(|t| t.contains("map@RtN(fun(x1=>reduce(add,0.0,map@A(fun(p=>p.0*p.1),x1))),split(tN,zip(x,y)))"));
        let fused = texts.iter().any(|t| t.contains("map@RtN(fun(x1=>reduce(fun(x2,x3=>"));
        prop_assert!(unfused && fused, "{:#?}", texts);
        for v in &out.variants {
            common::same_function(&p, &v.program, &sizes).unwrap();
            let tiles: Vec<String> = v.program.sizes.iter().filter(|s| s.max.is_some()).map(|s| s.name.clone()).collect();
            for t in tiles {
                let at = Sizes::new().with("N", chunks * tile).with(&t, tile);
                common::same_function(&p, &v.program, &at).unwrap();
            }
        }
    }
}

/// A chunk of the tile size is not split again (a third level of sums), and with every rule
/// the dot product saturates: over the unfused chunks, a split again fed `map-fission` without
/// end.
#[test]
fn chunks_of_the_tile_size_are_not_split_again() {
    let p = mapsat_ir::parse(DOT).unwrap();
    let opts = Options {
        split_factors: vec![2, 4],
        rules: Some(vec!["partial-reduce".to_string()]),
        variants: 32,
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    for v in &out.variants {
        let text: String = mapsat_ir::print(&v.program).split_whitespace().collect();
        // A chunk `x1` (of `tN` elements), or its products, split.
        for n in [2, 4] {
            for chunk in ["x1", "map@A(fun(p=>p.0*p.1),x1)"] {
                assert!(!text.contains(&format!("split({n},{chunk})")), "{text}");
            }
        }
    }
    let all = rewrite(&p, &Options { split_factors: vec![2, 4], ..Options::default() }).unwrap();
    assert_eq!(all.report.stop, mapsat_rewrite::StopReason::Saturated);
}

/// An idempotent operator (`max`, `min`) is split into partial reductions with any initial
/// value, even one inside the values' range: each chunk and the partial results start from it,
/// which changes nothing. `sub` is not associative and is never split.
#[test]
fn idempotent_operators_are_split_from_any_initial_value() {
    for (src, splits) in [
        ("size N = 24\ndef f(x: [f32]N) : f32 = reduce(max, 0.25, x)", true),
        ("size N = 24\ndef f(x: [i32]N) : i32 = reduce(min, 3, x)", true),
        ("size N = 24\ndef f(x: [f32]N) : f32 = reduce(max, 0.0 - 1e30, map@A(fun(v => v * v), x))", true),
        ("size N = 24\ndef f(x: [f32]N) : f32 = reduce(sub, 0.0, x)", false),
    ] {
        let p = mapsat_ir::parse(src).unwrap();
        let opts = Options {
            split_factors: vec![4, 6],
            rules: Some(vec!["partial-reduce".to_string()]),
            variants: 8,
            ..Options::default()
        };
        let out = rewrite(&p, &opts).unwrap();
        let split = out.variants.iter().any(|v| mapsat_ir::print(&v.program).contains("split(4"));
        assert_eq!(split, splits, "{src}");
        for v in &out.variants {
            common::same_function(&p, &v.program, &Sizes::new()).unwrap();
        }
    }
}

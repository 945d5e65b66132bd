//! Property test of overlapped tiling (`slide-tiling`) and local staging: the tiled variants of
//! a stencil over a producer, rewritten once, compute what the input computes at random valid
//! sizes (every tile step `tB` that divides the length `N`), on random inputs.

mod common;

use mapsat_ir::Sizes;
use mapsat_rewrite::{rewrite, Budget, Options, Variant};
use proptest::prelude::*;
use std::sync::OnceLock;

/// A 3-tap stencil over a point-wise producer, with a clamped border.
const STENCIL: &str = "size N = 16\ndef f(xs: [f32]N) : [f32]N =\n  map@B(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, map@A(fun(x => x * 2.0 + exp(x)), xs))))";

/// The input and its variants that use the tile step `tB` (tiled, the producer recomputed per
/// window, per tile, or staged in local memory per tile).
fn tiled() -> &'static (mapsat_ir::Program, Vec<Variant>) {
    static TILED: OnceLock<(mapsat_ir::Program, Vec<Variant>)> = OnceLock::new();
    TILED.get_or_init(|| {
        let p = mapsat_ir::parse(STENCIL).unwrap();
        let opts = Options {
            split_factors: vec![2, 4],
            budget: Budget { iterations: 4, ..Budget::default() },
            rules: Some(["slide-tiling", "pad-map", "slide-map", "map-fusion", "beta"].map(String::from).to_vec()),
            variants: 64,
            ..Options::default()
        };
        let out = rewrite(&p, &opts).unwrap();
        let tiled: Vec<Variant> = out.variants.into_iter().filter(|v| v.signature.contains("W[tB]")).collect();
        assert!(tiled.iter().any(|v| v.signature.contains('L')), "no locally staged variant");
        (p, tiled)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn tiled_stencils_keep_the_function(tiles in 1i64..6, step in 1i64..9) {
        let (p, variants) = tiled();
        let sizes = Sizes::new().with("N", tiles * step).with("tB", step);
        for v in variants {
            common::same_function(p, &v.program, &sizes).map_err(TestCaseError::fail)?;
        }
    }
}

//! Issue #9, 2-D: a producer computed per 2-D tile of its consumer (Halide's `compute_at` a
//! work group). `slide2d-tiling` of a stencil whose windows read a 2-D map `map@P(map@Q(h), zs)`
//! also tiles `zs` and computes the producer over each tile (`map@Q_t(map@Q_ti(h), t)`), which
//! `staging::stage_local` puts in local memory; the variants compute what the input computes at
//! random valid sizes, and jacobi2d's default variants include one with `u1` local.

mod common;

use mapsat_ir::Sizes;
use mapsat_rewrite::{rewrite, stage_choice, staging, Budget, Options, Variant};
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;

/// A 2x3 stencil `B` over the 3x2 windows of a 2-D producer `A` (asymmetric windows, read by
/// position, so that a swap of rows and columns changes the result), already inlined.
const INLINED: &str = "size H = 8, W = 12\ndef f(img: [[f32]W]H) : [[f32]W]H =
  mapND2@B(fun(w => at(0, at(0, w)) + 2.0 * at(2, at(1, w)) - 3.0 * at(1, at(0, w))),
    slideND2(2, 1, 3, 1, mapND2@A(fun(v => at(0, at(0, v)) - 5.0 * at(1, at(2, v)) + at(1, at(0, v))),
      slideND2(3, 1, 2, 1, padClamp(1, 2, map(padClamp(2, 1), img))))))";

/// The variants of `INLINED` tiled over `B` only by `slide2d-tiling` alone (not also over `A`,
/// whose tile sizes divide `A`'s length at the default sizes only).
fn inlined() -> &'static (mapsat_ir::Program, Vec<Variant>) {
    static TILED: OnceLock<(mapsat_ir::Program, Vec<Variant>)> = OnceLock::new();
    TILED.get_or_init(|| {
        let p = mapsat_ir::parse(INLINED).unwrap();
        let out = common::slide2d_alone(&p, 1);
        let tiled = out
            .variants
            .into_iter()
            .filter(|v| v.signature.contains("W[tB_0]") && !v.signature.contains("tA_"))
            .collect();
        (p, tiled)
    })
}

/// The text of a program without white space.
fn flat(p: &mapsat_ir::Program) -> String {
    mapsat_ir::print(p).split_whitespace().collect()
}

#[test]
fn the_producer_is_computed_per_tile_and_staged_in_local_memory() {
    let (p, variants) = inlined();
    let signatures: Vec<&String> = variants.iter().map(|v| &v.signature).collect();
    let at: Vec<&Variant> = variants.iter().filter(|v| flat(&v.program).contains("map@A_1_t(map@A_1_ti(")).collect();
    assert!(!at.is_empty(), "{signatures:?}");
    // The producer over the tile `x`, in local memory, read by the rows' windows of `B`.
    let local = "map@m2_2(slide(3,1),toLocal(map@A_1_t(map@A_1_ti(";
    let staged: Vec<&Variant> = at.iter().copied().filter(|v| flat(&v.program).contains(local)).collect();
    assert!(!staged.is_empty(), "{signatures:?}");
    for v in staged {
        assert_eq!(stage_choice::stagings(&v.program)[0], (stage_choice::Choice::Local, "A_1_t".to_string()));
        let sizes = Sizes::new().with("tB_0", 4).with("tB_1", 3);
        common::same_function(p, &v.program, &sizes).unwrap();
    }
}

#[test]
fn a_layout_map_over_the_producer_is_not_staged() {
    let (_, variants) = inlined();
    for v in variants {
        let Some(staged) = staging::stage_local(&v.program) else { continue };
        let text = flat(&staged);
        assert!(!text.contains("toLocal(map@m2_2(slide"), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Every variant tiled over `B`, with the producer per tile or not, staged or not, computes
    /// what the input computes, with its clamped borders.
    #[test]
    fn tiles_computing_their_producer_keep_the_function(rows in 1i64..5, th in 1i64..6, cols in 1i64..5, tw in 1i64..6) {
        let (p, variants) = inlined();
        prop_assert!(!variants.is_empty());
        let sizes = Sizes::new().with("H", rows * th).with("W", cols * tw).with("tB_0", th).with("tB_1", tw);
        for v in variants {
            common::same_function(p, &v.program, &sizes).map_err(TestCaseError::fail)?;
            if let Some(staged) = staging::stage_local(&v.program) {
                common::same_function(p, &staged, &sizes).map_err(TestCaseError::fail)?;
            }
        }
    }

    /// jacobi2d's variant with `u1` computed per tile of `B` in local memory keeps the function,
    /// the clamped border of `u1` included (`u1`'s values at a tile's halo outside the image).
    #[test]
    fn jacobi2d_with_u1_local_keeps_the_function(rows in 1i64..5, th in 1i64..6, cols in 1i64..5, tw in 1i64..6) {
        let (p, v) = jacobi2d_local();
        let sizes = Sizes::new().with("H", rows * th).with("W", cols * tw).with("tB_0", th).with("tB_1", tw);
        common::same_function(p, v, &sizes).map_err(TestCaseError::fail)?;
    }
}

/// jacobi2d and its default rewrite's variant (of 8) that computes `u1` in local memory, with
/// time enough for the stage phase to reach its node budget on a loaded machine.
fn jacobi2d_local() -> &'static (mapsat_ir::Program, mapsat_ir::Program) {
    static LOCAL: OnceLock<(mapsat_ir::Program, mapsat_ir::Program)> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let examples = common::examples();
        let (_, p) = examples.into_iter().find(|(f, _)| f == "jacobi2d.lift").unwrap();
        let opts =
            Options { budget: Budget { time: Duration::from_secs(120), ..Budget::default() }, ..Options::default() };
        let out = rewrite(&p, &opts).unwrap();
        let local = out.variants.iter().find(|v| {
            stage_choice::of(&p, &v.program).iter().any(|c| c.binder == "u1" && c.choice == stage_choice::Choice::Local)
        });
        let sigs: Vec<&String> = out.variants.iter().map(|v| &v.signature).collect();
        let v = local.unwrap_or_else(|| panic!("no variant with u1 local among {sigs:?}"));
        let text = flat(&v.program);
        assert!(text.contains("toLocal(map@A_1_t(map@A_1_ti("), "{text}");
        assert!(!text.contains("toGlobal"), "{text}");
        (p, v.program.clone())
    })
}

#[test]
fn jacobi2d_offers_u1_computed_per_tile_in_local_memory() {
    let (p, v) = jacobi2d_local();
    assert!(flat(v).contains("slide(tB_0+2,tB_0,"), "{}", mapsat_ir::print(v));
    common::same_function(p, v, &Sizes::new()).unwrap();
}

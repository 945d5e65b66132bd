//! Two-dimensional overlapped tiling (`slide2d-tiling`) and the local copy of each tile
//! (`staging::stage_local`): the tiled variants of a 2-D stencil compute what the input
//! computes at random valid sizes (tile steps `tA_0`, `tA_1` that divide the image's height and
//! width), on random inputs; tile steps that do not divide are refused by the checker.

mod common;

use mapsat_ir::Sizes;
use mapsat_rewrite::Variant;
use proptest::prelude::*;
use std::sync::OnceLock;

/// `examples/blur2d.lift`: a 3x3 box blur with clamped borders.
const BLUR2D: &str = "size H = 16, W = 16\ndef blur2d(img: [[f32]W]H) : [[f32]W]H =
  mapND2@A(fun(win => reduce(add, 0.0, join(win)) / 9.0), slideND2(3, 1, 3, 1, padClampND2(1, 1, img)))";

/// A 2x3 stencil whose window reads its elements by position (rows and columns not swapped).
const ASYM: &str = "size H = 8, W = 12\ndef f(img: [[f32]W]H) : [[f32]W]H =
  mapND2@A(fun(w => at(0, at(0, w)) + 2.0 * at(2, at(1, w)) - 3.0 * at(1, at(0, w))),
    slideND2(2, 1, 3, 1, padClamp(0, 1, map(padClamp(1, 1), img))))";

/// `slide2d-tiling` alone on `src`: how many times it applied, and the variants.
fn tile(src: &str) -> (usize, Vec<Variant>) {
    let out = common::slide2d_alone(&mapsat_ir::parse(src).unwrap(), 2);
    (out.report.applied["slide2d-tiling"], out.variants)
}

/// The variants of `src` with its 2-D tiling, after `slide2d-tiling` alone.
fn tiled(src: &str) -> (mapsat_ir::Program, Vec<Variant>) {
    let p = mapsat_ir::parse(src).unwrap();
    let (applied, variants) = tile(src);
    assert!(applied > 0);
    let tiled: Vec<Variant> = variants.into_iter().filter(|v| v.signature.contains("W[tA_0]")).collect();
    (p, tiled)
}

fn blur2d() -> &'static (mapsat_ir::Program, Vec<Variant>) {
    static TILED: OnceLock<(mapsat_ir::Program, Vec<Variant>)> = OnceLock::new();
    TILED.get_or_init(|| tiled(BLUR2D))
}

#[test]
fn both_dimensions_are_tiled_by_new_tunable_sizes() {
    let (_, variants) = blur2d();
    assert!(!variants.is_empty());
    for v in variants {
        let text = mapsat_ir::print(&v.program);
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("slide( tA_0 + 2, tA_0, map@m2_3(slide(tA_1 + 2, tA_1),"), "{text}");
        for name in ["tA_0", "tA_1"] {
            let decl = v.program.sizes.iter().find(|s| s.name == name).expect("tile size declared");
            assert_eq!((decl.min, decl.max, decl.default), (1, Some(16), Some(4)), "{name}");
        }
    }
}

#[test]
fn the_tiles_are_copied_to_local_memory_by_the_staged_variant() {
    let (p, variants) = blur2d();
    let staged: Vec<&Variant> = variants.iter().filter(|v| v.signature.contains('L')).collect();
    assert!(!staged.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in staged {
        let text = mapsat_ir::print(&v.program);
        assert!(text.contains("map@m2_2(slide(3, 1), toLocal(map@copy1(map@copy2(fun(x1 => x1)), x)))"), "{text}");
        common::same_function(p, &v.program, &Sizes::new().with("tA_0", 8).with("tA_1", 2)).unwrap();
    }
}

#[test]
fn tile_steps_that_do_not_divide_are_refused() {
    let (p, variants) = blur2d();
    for v in variants {
        let sizes = Sizes::new().with("H", 12).with("W", 12).with("tA_0", 5).with("tA_1", 4);
        assert!(common::same_function(p, &v.program, &sizes).unwrap_err().contains("does not tile"));
    }
}

#[test]
fn only_unit_steps_and_dividing_tiles_are_tiled() {
    // Windows with a step of 2: a tile step would have to be a multiple of it.
    let strided = "size H = 8, W = 8\ndef f(img: [[f32]W]H) =
  mapND2@A(fun(w => reduce(add, 0.0, join(w))), slideND2(3, 2, 3, 2, padClampND2(1, 2, img)))";
    assert_eq!(tile(strided).0, 0);
    // 7 rows of windows: no tile size divides them.
    let prime = "size H = 7, W = 8\ndef f(img: [[f32]W]H) : [[f32]W]H =
  mapND2@A(fun(w => reduce(add, 0.0, join(w))), slideND2(3, 1, 3, 1, padClampND2(1, 1, img)))";
    assert_eq!(tile(prime).0, 0);
}

fn asym() -> &'static (mapsat_ir::Program, Vec<Variant>) {
    static TILED: OnceLock<(mapsat_ir::Program, Vec<Variant>)> = OnceLock::new();
    TILED.get_or_init(|| tiled(ASYM))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn tiled_blurs_keep_the_function(rows in 1i64..5, th in 1i64..6, cols in 1i64..5, tw in 1i64..6) {
        let (p, variants) = blur2d();
        let sizes = Sizes::new().with("H", rows * th).with("W", cols * tw).with("tA_0", th).with("tA_1", tw);
        for v in variants {
            common::same_function(p, &v.program, &sizes).map_err(TestCaseError::fail)?;
        }
    }

    /// A 2 x 3 window read by position: rows and columns are not swapped by the tiling.
    #[test]
    fn tiled_asymmetric_windows_keep_the_function(rows in 1i64..5, th in 1i64..6, cols in 1i64..5, tw in 1i64..6) {
        let (p, variants) = asym();
        prop_assert!(!variants.is_empty());
        let sizes = Sizes::new().with("H", rows * th).with("W", cols * tw).with("tA_0", th).with("tA_1", tw);
        for v in variants {
            common::same_function(p, &v.program, &sizes).map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn each_stage_of_jacobi2d_is_tiled() {
    let examples = common::examples();
    let (_, p) = examples.iter().find(|(f, _)| f == "jacobi2d.lift").unwrap();
    let (_, variants) = tiled(&mapsat_ir::print(p));
    assert!(!variants.is_empty());
    for v in &variants {
        common::same_function(p, &v.program, &Sizes::new()).unwrap();
    }
}

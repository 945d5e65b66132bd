//! Issue #10: the direct convolution (`examples/conv.lift`) reaches the structure of the
//! hand-tiled `examples/conv_blocked.lift` (without its register blocking): 2-D spatial tiles
//! (`slide2d-tiling`) whose input tile with its halo is copied to local memory, the output
//! channels of each window in groups of a tunable size (`split-join`), the partial sums in
//! private memory. That variant is among the 16 extracted, and computes what the input
//! computes at random valid sizes (tile steps dividing the image, group size dividing the
//! output channels), on random inputs.

mod common;

use mapsat_ir::Sizes;
use mapsat_rewrite::{rewrite, Budget, Options, Variant};
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;

/// The input program and its tiled, staged and grouped variant.
fn conv() -> &'static (mapsat_ir::Program, Variant) {
    static CONV: OnceLock<(mapsat_ir::Program, Variant)> = OnceLock::new();
    CONV.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/conv.lift");
        let p = mapsat_ir::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        // As `mapsat rewrite` does, with a time limit a loaded machine does not reach.
        let budget = Budget { time: Duration::from_secs(300), ..Budget::default() };
        let out = rewrite(&p, &Options { variants: 16, budget, ..Options::default() }).unwrap();
        assert_eq!(out.rejected, 0, "ill-typed terms in the e-graph");
        let signatures: Vec<&String> = out.variants.iter().map(|v| &v.signature).collect();
        let grouped = out.variants.iter().find(|v| {
            let s = &v.signature;
            s.contains("W[tA_0]") && s.contains("W[tA_1]") && s.contains("S[tB]") && s.contains('L') && s.contains('P')
        });
        let grouped = grouped.unwrap_or_else(|| panic!("no tiled, staged and grouped variant: {signatures:?}"));
        (p, grouped.clone())
    })
}

#[test]
fn the_tile_is_staged_and_the_channels_grouped_with_private_sums() {
    let (_, v) = conv();
    let text = mapsat_ir::print(&v.program);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // The tile with its halo, copied to local memory, then cut into the windows of its pixels.
    assert!(flat.contains("slide( kerH, 1, map@m4_2(slide(kerW, 1), toLocal(map@copy1(map@copy2("), "{text}");
    assert!(flat.contains("slide( kerH + tA_0 - 1, tA_0, map@m4_3(slide(kerW + tA_1 - 1, tA_1),"), "{text}");
    // Per window, the output channels in groups of tB, each sum in private memory.
    assert!(flat.contains("split(tB, ks)"), "{text}");
    assert!(flat.contains("toPrivate( reduce("), "{text}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn the_tiled_grouped_conv_keeps_the_function(
        rows in 1i64..4, th in 1i64..5, cols in 1i64..4, tw in 1i64..5, groups in 1i64..4, tb in 1i64..4, chs in 1i64..4,
    ) {
        let (p, v) = conv();
        let sizes = Sizes::new()
            .with("inH", rows * th)
            .with("inW", cols * tw)
            .with("inChs", chs)
            .with("outChs", groups * tb)
            .with("tA_0", th)
            .with("tA_1", tw)
            .with("tB", tb);
        common::same_function(p, &v.program, &sizes).map_err(TestCaseError::fail)?;
    }
}

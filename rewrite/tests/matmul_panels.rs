//! Issue #10: the 2-D tiled matmul with its panels staged in local memory (kinds `T2L` and
//! `T2KL`, `staging::stage_panels`): per block of tA x tB outputs, the block's rows of `a` and
//! columns of `b` copied to local memory once (`let aLocal = toLocal(map@copy1(map@copy2(fun(x
//! => x)), rowTile)) in ..`), the block's dot products read from the copies, as the hand-written
//! `examples/matmul_lowlevel.lift`. Both are among matmul's default variants and compute what
//! the input computes at random valid sizes (tile sizes dividing M, N and K), on random inputs.

mod common;

use mapsat_ir::Sizes;
use mapsat_rewrite::{rewrite, Budget, Options, Variant};
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;

/// The input program, its staged 2-D tiled variant and the same with its dot products split
/// by `tK`.
fn matmul() -> &'static (mapsat_ir::Program, Variant, Variant) {
    static MATMUL: OnceLock<(mapsat_ir::Program, Variant, Variant)> = OnceLock::new();
    MATMUL.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/matmul.lift");
        let p = mapsat_ir::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        // The default variants, with a time limit a loaded machine does not reach.
        let budget = Budget { time: Duration::from_secs(300), ..Budget::default() };
        let out = rewrite(&p, &Options { budget, ..Options::default() }).unwrap();
        assert_eq!(out.rejected, 0, "ill-typed terms in the e-graph");
        let staged = |split: bool| {
            let found = out.variants.iter().find(|v| {
                let t: String = mapsat_ir::print(&v.program).split_whitespace().collect();
                t.contains("letaLocal=toLocal(map@copy1(map@copy2(fun(")
                    && t.contains("letbLocal=toLocal(map@copy3(map@copy4(fun(")
                    && t.contains("split(tB,transpose(b))")
                    && t.contains("split(tA,a)")
                    && t.contains("split(tK,zip(") == split
            });
            let signatures: Vec<&String> = out.variants.iter().map(|v| &v.signature).collect();
            found.unwrap_or_else(|| panic!("no staged 2-D tiled variant (split: {split}): {signatures:?}")).clone()
        };
        (p, staged(false), staged(true))
    })
}

#[test]
fn the_blocks_read_their_panels_from_local_memory() {
    let (_, v, vk) = matmul();
    for v in [v, vk] {
        let text = mapsat_ir::print(&v.program);
        let flat: String = text.split_whitespace().collect();
        // The copies are made once per block (in the function of the block's map B), and the
        // rows and columns of the block are those of the copies.
        assert!(flat.contains("map@B(fun(x1=>letaLocal=toLocal(map@copy1(map@copy2(fun(x2=>x2)),x))in"), "{text}");
        assert!(flat.contains("letbLocal=toLocal(map@copy3(map@copy4(fun(x2=>x2)),x1))in"), "{text}");
        assert!(flat.contains(",bLocal)),aLocal))"), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn the_staged_tiled_matmul_keeps_the_function(
        rows in 1i64..4, ta in 1i64..5, cols in 1i64..4, tb in 1i64..5, chunks in 1i64..4, tk in 1i64..5,
    ) {
        let (p, v, vk) = matmul();
        let sizes = Sizes::new()
            .with("M", rows * ta)
            .with("N", cols * tb)
            .with("K", chunks * tk)
            .with("tA", ta)
            .with("tB", tb)
            .with("tK", tk);
        common::same_function(p, &v.program, &sizes).map_err(TestCaseError::fail)?;
        common::same_function(p, &vk.program, &sizes).map_err(TestCaseError::fail)?;
    }
}

/// Among the examples, only the hand-tiled matmul has panels to stage, and its staged form
/// computes what it computes; the hand-staged `matmul_lowlevel.lift` is left alone.
#[test]
fn only_2d_tiled_map_nests_have_panels() {
    for (name, p) in common::examples() {
        let staged = mapsat_rewrite::staging::stage_panels(&p);
        assert_eq!(staged.is_some(), name == "matmul_tiled.lift", "{name}");
        if let Some(s) = staged {
            let text = mapsat_ir::print(&s);
            assert!(text.contains("let aLocal = toLocal(map@copy1(map@copy2(fun("), "{text}");
            for (ta, tb, tk) in [(4, 4, 4), (2, 8, 16), (1, 2, 8)] {
                let sizes = Sizes::new().with("tM", ta).with("tN", tb).with("tK", tk);
                common::same_function(&p, &s, &sizes).unwrap();
            }
        }
    }
}

//! Every extracted variant of every example is the same function as the example.

mod common;

use mapsat_rewrite::{rewrite, Budget, Options};

/// Rewrites one example and checks every variant against it.
fn check_example(file: &str) {
    let examples = common::examples();
    let (name, p) = examples.iter().find(|(f, _)| f == file).unwrap_or_else(|| panic!("no example {file}"));
    // A smaller node budget than the default keeps the test fast; the variants are as varied.
    let opts = Options { budget: Budget { nodes: 6_000, ..Budget::default() }, ..Options::default() };
    let out = rewrite(p, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!out.variants.is_empty(), "{name}: no variant");
    assert_eq!(out.rejected, 0, "{name}: ill-typed terms in the e-graph");
    for v in &out.variants {
        common::same_function(p, &v.program, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        // A transpose of a transpose is the same variant as without, with two more views.
        let flat: String = mapsat_ir::print(&v.program).chars().filter(|c| !c.is_whitespace()).collect();
        assert!(!flat.contains("transpose(transpose("), "{name}: {}", mapsat_ir::print(&v.program));
    }
}

macro_rules! examples {
    ($($test:ident: $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_example($file);
            }
        )*

        #[test]
        fn every_example_is_tested() {
            let tested = [$($file),*];
            for (name, _) in common::examples() {
                assert!(tested.contains(&name.as_str()), "add {name} to the list");
            }
        }
    };
}

examples! {
    blur2d: "blur2d.lift",
    conv: "conv.lift",
    conv_blocked: "conv_blocked.lift",
    conv_hwio: "conv_hwio.lift",
    conv_windows: "conv_windows.lift",
    conv_outer: "conv_outer.lift",
    dot: "dot.lift",
    listing1: "listing1.lift",
    linear: "linear.lift",
    mlp: "mlp.lift",
    listing3: "listing3.lift",
    matmul: "matmul.lift",
    matmul_lowlevel: "matmul_lowlevel.lift",
    matmul_outer: "matmul_outer.lift",
    matmul_tiled: "matmul_tiled.lift",
    jacobi2d: "jacobi2d.lift",
    sepblur: "sepblur.lift",
    sharpen: "sharpen.lift",
    stencil1d: "stencil1d.lift",
    sum: "sum.lift",
    sum_partial: "sum_partial.lift",
}

#[test]
fn staging_wraps_nested_reductions_only() {
    let examples = common::examples();
    let get = |n: &str| examples.iter().find(|(f, _)| f == n).map(|(_, p)| p.clone()).unwrap();
    // dot's reduction is the whole program, not a partial result: nothing to stage.
    assert!(mapsat_rewrite::staging::stage_private(&get("dot.lift")).is_none());
    // matmul's reduction is each output element's sum: staged once, same function.
    let p = get("matmul.lift");
    let staged = mapsat_rewrite::staging::stage_private(&p).unwrap();
    assert_eq!(mapsat_ir::print(&staged).matches("toPrivate(").count(), 1);
    common::same_function(&p, &staged, &Default::default()).unwrap();
    // Already placed reductions are left alone.
    assert!(mapsat_rewrite::staging::stage_private(&staged).is_none());
}

#[test]
fn variants_are_deterministic() {
    let examples = common::examples();
    let p = &examples.iter().find(|(f, _)| f == "matmul.lift").unwrap().1;
    let opts = Options { budget: Budget { nodes: 3_000, ..Budget::default() }, ..Options::default() };
    let texts = || -> Vec<String> {
        rewrite(p, &opts).unwrap().variants.iter().map(|v| mapsat_ir::print(&v.program)).collect()
    };
    assert_eq!(texts(), texts());
}

//! Every extracted variant of every example is the same function as the example.

mod common;

use mapsat_rewrite::{rewrite, Options};

#[test]
fn every_variant_of_every_example_computes_the_same() {
    for (name, p) in common::examples() {
        let out = rewrite(&p, &Options::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!(
            "{name}: {} nodes, {} classes, {} iterations, {}, {:?}, extract {:?}, {} variants",
            out.report.nodes,
            out.report.classes,
            out.report.iterations,
            out.report.stop.name(),
            out.report.time,
            out.extract_time,
            out.variants.len()
        );
        assert!(!out.variants.is_empty(), "{name}: no variant");
        assert_eq!(out.rejected, 0, "{name}: ill-typed terms in the e-graph");
        for v in &out.variants {
            eprintln!("  {} {}", v.cost, v.signature);
            common::same_function(&p, &v.program, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
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

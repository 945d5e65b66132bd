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

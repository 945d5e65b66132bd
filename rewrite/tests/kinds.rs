//! Extraction reaches the variants of each kind the e-graph holds (`kinds.rs`): vectorized
//! where `vectorize-map` applies (among 32: a vectorized variant competes as one more tiling),
//! tiled and locally staged where `slide-tiling` applies (among the default K), each the same
//! function as the input.

mod common;

use mapsat_rewrite::{rewrite, Budget, Options, Variant};

/// `k` variants of one example (a smaller node budget than the default, as `variants.rs`).
fn variants_of(file: &str, k: usize) -> (mapsat_ir::Program, Vec<Variant>) {
    let examples = common::examples();
    let (_, p) = examples.iter().find(|(f, _)| f == file).unwrap_or_else(|| panic!("no example {file}"));
    let opts = Options { budget: Budget { nodes: 6_000, ..Budget::default() }, variants: k, ..Options::default() };
    let out = rewrite(p, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
    (p.clone(), out.variants)
}

/// How many of `variants` show the kind, each checked against `p`.
fn checked_of_kind(p: &mapsat_ir::Program, variants: &[Variant], kind: impl Fn(&Variant) -> bool) -> usize {
    let of_kind: Vec<&Variant> = variants.iter().filter(|v| kind(v)).collect();
    for v in &of_kind {
        common::same_function(p, &v.program, &Default::default()).unwrap_or_else(|e| panic!("{}: {e}", p.name));
    }
    of_kind.len()
}

/// True for a vectorized variant.
fn vectorized(v: &Variant) -> bool {
    v.signature.contains("V[4]")
}

#[test]
fn matmul_has_a_vectorized_variant() {
    let (p, variants) = variants_of("matmul.lift", 32);
    assert!(checked_of_kind(&p, &variants, vectorized) > 0);
}

#[test]
fn listing1_has_a_vectorized_variant() {
    let (p, variants) = variants_of("listing1.lift", 32);
    assert!(checked_of_kind(&p, &variants, vectorized) > 0);
}

#[test]
fn sharpen_has_a_tiled_and_a_locally_staged_variant() {
    let (p, variants) = variants_of("sharpen.lift", mapsat_rewrite::VARIANTS);
    assert!(checked_of_kind(&p, &variants, |v| v.signature.contains("W[")) > 0);
    assert!(checked_of_kind(&p, &variants, |v| mapsat_ir::print(&v.program).contains("toLocal(")) > 0);
}

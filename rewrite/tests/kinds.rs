//! Extraction reaches the variants of each kind the e-graph holds (`kinds.rs`): vectorized
//! where `vectorize-map` applies (among 32: a vectorized variant competes as one more tiling),
//! tiled and locally staged where `slide-tiling` applies (among the default K), each the same
//! function as the input.

mod common;

use mapsat_ir::Sizes;
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

/// The default K variants of one example at the default budgets (as `mapsat rewrite`).
fn default_variants_of(file: &str) -> (mapsat_ir::Program, Vec<Variant>) {
    let examples = common::examples();
    let (_, p) = examples.iter().find(|(f, _)| f == file).unwrap_or_else(|| panic!("no example {file}"));
    (p.clone(), rewrite(p, &Options::default()).unwrap_or_else(|e| panic!("{file}: {e}")).variants)
}

/// True for a variant with `n` tile slides whose 2-D tiles are copied to local memory.
fn tiled_2d_and_staged(n: usize) -> impl Fn(&Variant) -> bool {
    move |v| {
        let text = mapsat_ir::print(&v.program);
        v.signature.matches("W[").count() == n
            && text.matches("(fun(x").count() > 0
            && text.contains("toLocal(map@copy")
    }
}

#[test]
fn blur2d_has_a_2d_tiled_and_locally_staged_variant() {
    let (p, variants) = default_variants_of("blur2d.lift");
    assert!(checked_of_kind(&p, &variants, tiled_2d_and_staged(2)) > 0);
    // Valid at every tile size that divides the image, not only the defaults.
    let v = variants.iter().find(|v| tiled_2d_and_staged(2)(v)).unwrap();
    for (th, tw) in [(1, 16), (2, 4), (16, 8)] {
        let sizes = mapsat_ir::Sizes::new().with("tA_0", th).with("tA_1", tw);
        common::same_function(&p, &v.program, &sizes).unwrap();
    }
}

#[test]
fn jacobi2d_has_both_stages_2d_tiled_and_locally_staged() {
    let (p, variants) = default_variants_of("jacobi2d.lift");
    assert!(checked_of_kind(&p, &variants, tiled_2d_and_staged(4)) > 0);
}

#[test]
fn matmul_has_a_2d_tiled_and_a_register_blocked_variant_among_16() {
    let (p, variants) = variants_of("matmul.lift", 16);
    // The printed program without white space.
    let text = |v: &Variant| mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
    // Blocks of tA x tB outputs put back in place by `map(join, transpose(..))`, both tile sizes
    // declared as tunable.
    let tiled_2d = |v: &Variant| {
        let t = text(v);
        t.contains("split(tA,a)") && t.contains("split(tB,transpose(b))") && t.contains("(join,transpose(map@B(")
    };
    assert!(
        checked_of_kind(&p, &variants, tiled_2d) > 0,
        "{:?}",
        variants.iter().map(|v| &v.signature).collect::<Vec<_>>()
    );
    // Each work item's block of tB outputs accumulated in a private array over k.
    let blocked = |v: &Variant| text(v).contains("toPrivate(reduce(") && text(v).contains("map@B_i_z(");
    assert!(checked_of_kind(&p, &variants, blocked) > 0);
    for v in variants.iter().filter(|v| tiled_2d(v) || blocked(v)) {
        let declared: Vec<&str> = v.program.sizes.iter().filter(|s| s.max.is_some()).map(|s| s.name.as_str()).collect();
        assert!(declared.contains(&"tB"), "{}", text(v));
        for t in [1, 2, 4, 8] {
            let sizes = mapsat_ir::Sizes::new().with("tA", t).with("tB", t);
            common::same_function(&p, &v.program, &sizes).unwrap();
        }
    }
}

/// Matmul's 16 variants include the 2-D tiled one of `examples/matmul_tiled.lift`: blocks of
/// tA x tB outputs put back by `map(join, transpose(..))`, each dot product split into chunks
/// of a tunable `tK` (declared with a range) whose sums are added; the same function as the
/// input at several tile sizes.
#[test]
fn matmul_has_a_2d_tiled_variant_with_its_dot_products_split_among_16() {
    let (p, variants) = variants_of("matmul.lift", 16);
    let text = |v: &Variant| mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
    let split_k = |v: &Variant| {
        let t = text(v);
        t.contains("split(tA,a)")
            && t.contains("split(tB,transpose(b))")
            && t.contains("(join,transpose(map@B(")
            && t.contains("reduce(add,0.0,map@RtK(fun(")
            && t.contains("split(tK,zip(")
            // The same with its panels in local memory is a kind of its own (`matmul_panels.rs`).
            && !t.contains("toLocal(")
    };
    assert_eq!(
        checked_of_kind(&p, &variants, split_k),
        1,
        "{:?}",
        variants.iter().map(|v| &v.signature).collect::<Vec<_>>()
    );
    let v = variants.iter().find(|v| split_k(v)).unwrap();
    let tunable: Vec<&str> = v.program.sizes.iter().filter(|s| s.max.is_some()).map(|s| s.name.as_str()).collect();
    for t in ["tA", "tB", "tK"] {
        assert!(tunable.contains(&t), "{t} not declared: {}", text(v));
    }
    for (ta, tb, tk) in [(1, 1, 1), (2, 4, 2), (4, 2, 4), (8, 8, 8), (2, 2, 16)] {
        let sizes = mapsat_ir::Sizes::new().with("tA", ta).with("tB", tb).with("tK", tk);
        common::same_function(&p, &v.program, &sizes).unwrap_or_else(|e| panic!("{ta} {tb} {tk}: {e}"));
    }
}

/// Issue #10: matmul's default variants include `examples/matmul_tiled.lift` itself, up to the
/// renaming of labels and sizes: blocks of tA x tB outputs put back by `map(join,
/// transpose(..))`, each dot product a sum over chunks of a tunable `tK` of the sums of each
/// chunk's products (`map@E(fun(chunk => reduce(add, 0.0, map@F(..), chunk)), split(tK, ..))`);
/// at the default sizes and at 256 x 256 x 256 (more split factors divide).
#[test]
fn matmul_default_variants_include_matmul_tiled() {
    let (p, _) = default_variants_of("matmul.lift");
    let examples = common::examples();
    let (_, tiled) = examples.iter().find(|(f, _)| f == "matmul_tiled.lift").unwrap();
    let want = common::up_to_renaming(tiled);
    assert_ne!(common::up_to_renaming(&p), want);
    for sizes in [Sizes::new(), Sizes::new().with("M", 256).with("K", 256).with("N", 256)] {
        let variants = rewrite(&p, &Options { sizes, ..Options::default() }).unwrap().variants;
        has_matmul_tiled(&p, &variants, &want);
    }
}

/// Checks that one of `variants` is the program `want` (up to renaming) and computes what `p`
/// computes.
fn has_matmul_tiled(p: &mapsat_ir::Program, variants: &[Variant], want: &str) {
    let same: Vec<&Variant> = variants.iter().filter(|v| common::up_to_renaming(&v.program) == want).collect();
    assert_eq!(
        same.len(),
        1,
        "want {want}\namong\n{}",
        variants.iter().map(|v| common::up_to_renaming(&v.program)).collect::<Vec<_>>().join("\n")
    );
    let tiles = Sizes::new().with("tA", 4).with("tB", 2).with("tK", 8);
    common::same_function(p, &same[0].program, &tiles).unwrap();
}

/// Matmul's default variants (as `mapsat rewrite` gives them) include the outer product of
/// `examples/matmul_outer.lift` (`outer-product`): vectors of `vw` columns of `b` times blocks
/// of `tA` rows of `a`, one vector accumulator per row in private memory; the same function as
/// the input at several block sizes and widths.
#[test]
fn matmul_has_an_outer_product_variant_among_the_default_ones() {
    let (p, variants) = default_variants_of("matmul.lift");
    let text = |v: &Variant| mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
    let outer = |v: &Variant| {
        let t = text(v);
        t.contains("transpose(map@B_r(fun(x=>asVector(vw,x)),b))")
            && t.contains("split(tA,a)")
            && t.contains("toPrivate(reduce(")
    };
    let found: Vec<&Variant> = variants.iter().filter(|v| outer(v)).collect();
    assert!(!found.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in found {
        for (t, w) in [(1, 2), (2, 4), (8, 8), (4, 8)] {
            let sizes = Sizes::new().with("tA", t).with("vw", w);
            common::same_function(&p, &v.program, &sizes).unwrap();
        }
    }
}

/// `examples/conv_windows.lift` (a convolution as windows times the columns of its HWIO
/// weights) computes what `examples/conv_hwio.lift` computes, and its default variants include
/// the outer product (`outer-product` on the windows and the weight columns), the same function
/// at several block sizes and widths.
#[test]
fn the_windowed_conv_has_an_outer_product_variant_among_the_default_ones() {
    let examples = common::examples();
    let get = |f: &str| examples.iter().find(|(n, _)| n == f).unwrap().1.clone();
    let (p, hwio) = (get("conv_windows.lift"), get("conv_hwio.lift"));
    let sizes = Sizes::new().with("inH", 4).with("inW", 4).with("inChs", 3).with("outChs", 16);
    common::same_function(&hwio, &p, &sizes).unwrap();
    let (_, variants) = default_variants_of("conv_windows.lift");
    let text = |v: &Variant| mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
    let outer = |v: &Variant| {
        let t = text(v);
        t.contains("asVector(vw,x)),join(join(ks)))") && t.contains("split(tA,") && t.contains("toPrivate(reduce(")
    };
    let found: Vec<&Variant> = variants.iter().filter(|v| outer(v)).collect();
    assert!(!found.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in found {
        for (t, w) in [(1, 2), (4, 4), (16, 8), (64, 8)] {
            common::same_function(&p, &v.program, &Sizes::new().with("tA", t).with("vw", w)).unwrap();
        }
    }
}

/// `examples/conv.lift` (the paper's convolution: OHWI weights, a dot product over 3-D windows
/// with `joinND3(zipND3(..))`): a default variant stores the flattened filters transposed in a
/// kernel of their own (`conv-windows`) and computes the outer product of the flattened windows
/// with their columns (`conv_outer.lift`'s form, by hand), the same function at several block
/// sizes and widths.
#[test]
fn the_ohwi_conv_has_an_outer_product_variant_among_the_default_ones() {
    let (p, variants) = default_variants_of("conv.lift");
    let outer = |v: &&Variant| {
        let t = mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
        t.contains("toGlobal(map@B_t(map@B_tc(fun(x=>x)),transpose(map@B_j(fun(x=>join(join(x))),ks))))")
            && t.contains("split(tA_1,map@A_1_j(fun(x2=>join(join(x2))),join(")
            && t.contains("toPrivate(reduce(")
    };
    let found: Vec<&Variant> = variants.iter().filter(outer).collect();
    assert!(!found.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in found {
        for (t, w) in [(1, 2), (2, 2), (8, 2)] {
            common::same_function(&p, &v.program, &Sizes::new().with("tA_1", t).with("vw", w)).unwrap();
        }
        let sizes = Sizes::new().with("inH", 3).with("inW", 6).with("inChs", 2).with("outChs", 8).with("kerH", 1);
        common::same_function(&p, &v.program, &sizes.with("tA_1", 3).with("vw", 4)).unwrap();
    }
}

/// `conv-windows` on a 1-D convolution (one map over windows of `[[f32]C]3`, `zipND2`), and with
/// the filter first in the zip (`zipND2(k, win)`, the pairs' order kept) and a max instead of a
/// sum: the rewritten program computes the same function.
#[test]
fn conv_windows_rewrites_one_dimensional_and_filter_first_convolutions() {
    for (zipped, op) in [("zipND2(win, k)", "add"), ("zipND2(k, win)", "max")] {
        let src = format!(
            "size W = 12, C = 3, O = 4
def conv1d(xs: [[f32]C]W, ks: [[[f32]C]3]O) : [[f32]O](W - 2) =
  map@A(fun(win => map@B(fun(k => reduce({op}, 0.0, map@C(fun(p => p.0 - 2.0 * p.1), joinND2({zipped})))), ks)),
    slide(3, 1, xs))"
        );
        let p = checked(&src);
        let opts = Options { rules: Some(vec!["conv-windows".into()]), ..Options::default() };
        let out = rewrite(&p, &opts).unwrap();
        assert_eq!(out.report.applied["conv-windows"], 1, "{src}");
        let staged: Vec<&Variant> = out.variants.iter().filter(|v| mapsat_ir::stages::count(&v.program) == 2).collect();
        assert!(!staged.is_empty(), "{:?}", out.variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
        for (v, w) in staged.iter().flat_map(|v| [(v, 12), (v, 7)]) {
            common::same_function(&p, &v.program, &Sizes::new().with("W", w)).unwrap();
        }
    }
}

/// `examples/sum.lift` is a plain reduction: no map, nothing to map. Its variants are partial
/// sums with a map over the chunks (`sum_partial.lift`'s form), which `mapsat tune --variants`
/// can map; the fused forms without a map (`reduce` of `reduce`s) are left out.
#[test]
fn a_plain_reductions_variants_have_a_map() {
    let (p, variants) = default_variants_of("sum.lift");
    assert!(!variants.is_empty());
    for v in &variants {
        assert!(
            v.program.nodes.iter().any(|n| matches!(n, mapsat_ir::Node::Prim(mapsat_ir::Prim::Map { .. }))),
            "{}",
            v.signature
        );
        common::same_function(&p, &v.program, &Sizes::new()).unwrap();
    }
}

/// `src` parsed and type-checked (a panic with the source when it is not).
fn checked(src: &str) -> mapsat_ir::Program {
    let p = mapsat_ir::parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    mapsat_ir::check::check(&p).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    p
}

/// A matmul followed by an epilogue on each result (a `relu`, a scale and shift, both, and a
/// scale by a parameter): the default variants include the outer product with the epilogue
/// split off each block's reduction and applied to its accumulators (`map@.._e`), the same
/// function as the input at several block sizes and widths.
#[test]
fn matmul_with_an_epilogue_has_an_outer_product_variant() {
    let dot = "reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))";
    let matmul = |params: &str, epilogue: &str| {
        let body = epilogue.replace("DOT", dot);
        let src = format!(
            "size M = 8, K = 16, N = 16
def mm(a: [[f32]K]M, b: [[f32]N]K{params}) : [[f32]N]M =
  map@A(fun(row => map@B(fun(col => {body}), transpose(b))), a)"
        );
        checked(&src)
    };
    for (params, epilogue) in [
        ("", "max(0.0, DOT)"),
        ("", "DOT * 0.5 + 1.0"),
        ("", "max(0.0, 2.0 * DOT - 1.0)"),
        (", alpha: f32", "alpha * exp(DOT)"),
    ] {
        let p = matmul(params, epilogue);
        let variants = rewrite(&p, &Options::default()).unwrap().variants;
        let text = |v: &Variant| mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
        let outer = |v: &Variant| {
            let t = text(v);
            t.contains("asVector(vw,x)),b))") && t.contains("_e(fun(") && t.contains("toPrivate(reduce(")
        };
        let found: Vec<&Variant> = variants.iter().filter(|v| outer(v)).collect();
        assert!(!found.is_empty(), "{epilogue}: {:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
        for v in found {
            for (t, w) in [(1, 2), (2, 4), (8, 16)] {
                common::same_function(&p, &v.program, &Sizes::new().with("tA", t).with("vw", w)).unwrap();
            }
        }
    }
}

/// A fully-connected layer: a matmul with a bias per output column and a `relu`
/// (`max(0.0, dot + cb.1)` over `zip(transpose(b), bias)`). The outer product reads the bias
/// `vw` columns at a time (`asVector(vw, bias)`) beside the vectors of columns and applies the
/// epilogue to each block's accumulators; the same function as the input at several block sizes
/// and widths. An epilogue that uses the row (`dot + row[0]`) is not split off the rows.
#[test]
fn matmul_with_a_bias_per_column_has_an_outer_product_variant() {
    let layer = |epilogue: &str| {
        let src = format!(
            "size M = 8, K = 16, N = 16
def fc(a: [[f32]K]M, b: [[f32]N]K, bias: [f32]N) : [[f32]N]M =
  map@A(fun(row => map@B(fun(cb =>
    {}), zip(transpose(b), bias))), a)",
            epilogue.replace("DOT", "reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, cb.0)))")
        );
        checked(&src)
    };
    let outer = |v: &Variant| {
        let t = mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
        t.contains("asVector(vw,bias)") && t.contains("_e(fun(") && t.contains("toPrivate(reduce(")
    };
    for epilogue in ["max(0.0, DOT + cb.1)", "cb.1 * DOT", "DOT + cb.1"] {
        let p = layer(epilogue);
        let variants = rewrite(&p, &Options::default()).unwrap().variants;
        let found: Vec<&Variant> = variants.iter().filter(|v| outer(v)).collect();
        assert!(!found.is_empty(), "{epilogue}: {:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
        for v in found {
            for (t, w) in [(1, 2), (2, 4), (8, 16)] {
                common::same_function(&p, &v.program, &Sizes::new().with("tA", t).with("vw", w)).unwrap();
            }
        }
    }
    let uses_row = rewrite(&layer("DOT + at(0, row) + cb.1"), &Options::default()).unwrap().variants;
    assert!(!uses_row.iter().any(outer), "{:?}", uses_row.iter().map(|v| &v.signature).collect::<Vec<_>>());
}

/// A matmul whose columns are not a multiple of the tunable width's default (4 lanes): the
/// outer product reads them 2 at a time (a literal width) where 2 divides them, and not at all
/// where nothing does; the same function as the input at several block sizes.
#[test]
fn outer_product_of_columns_not_a_multiple_of_four_reads_two_lanes() {
    let matmul = |n: u32| {
        let src = format!(
            "size M = 8, K = 16, N = {n}
def mm(a: [[f32]K]M, b: [[f32]N]K) : [[f32]N]M =
  map@A(fun(row => map@B(fun(col =>
    max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col))))), transpose(b))), a)"
        );
        checked(&src)
    };
    let outer = |v: &Variant, lanes: &str| {
        let t = mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
        t.contains(&format!("asVector({lanes},x)),b))")) && t.contains("toPrivate(reduce(")
    };
    let p = matmul(10);
    let variants = rewrite(&p, &Options::default()).unwrap().variants;
    let found: Vec<&Variant> = variants.iter().filter(|v| outer(v, "2")).collect();
    assert!(!found.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in found {
        for t in [1, 2, 8] {
            common::same_function(&p, &v.program, &Sizes::new().with("tA", t)).unwrap();
        }
    }
    let odd = rewrite(&matmul(7), &Options::default()).unwrap().variants;
    assert!(
        !odd.iter().any(|v| outer(v, "2") || outer(v, "vw")),
        "{:?}",
        odd.iter().map(|v| &v.signature).collect::<Vec<_>>()
    );
}

/// A matmul whose rows no power of two divides (49, the pixels of a 7x7 image): the tile size
/// of its rows defaults to a divisor of theirs (7), so it still gets the outer product; the same
/// function as the input at the divisors of 49.
#[test]
fn outer_product_of_rows_no_power_of_two_divides() {
    let src = "size M = 49, K = 16, N = 16
def mm(a: [[f32]K]M, b: [[f32]N]K) : [[f32]N]M =
  map@A(fun(row => map@B(fun(col =>
    reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))), a)";
    let p = checked(src);
    let variants = rewrite(&p, &Options::default()).unwrap().variants;
    let outer = |v: &&Variant| {
        let t = mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
        t.contains("sizetAin1..49=7") && t.contains("split(tA,a)") && t.contains("toPrivate(reduce(")
    };
    let found: Vec<&Variant> = variants.iter().filter(outer).collect();
    assert!(!found.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in found {
        for t in [1, 7, 49] {
            common::same_function(&p, &v.program, &Sizes::new().with("tA", t)).unwrap();
        }
    }
}

/// A fully-connected layer with its weights in PyTorch's layout, one row per output
/// (`w: [[f32]K]N`), with and without a bias (on either side of the zip): a variant stores them transposed by a kernel of
/// their own (`let x = toGlobal(..transpose(w))`, `transpose-stage`) and computes the outer
/// product on that copy; the same function as the input at several sizes. A map over the rows
/// of a parameter that is no dot product with a row (a sum of each row) gets no such stage.
#[test]
fn linear_layer_stores_its_weights_transposed_for_the_outer_product() {
    let dot = "reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, COL)))";
    let layer = |columns: &str, body: &str, params: &str| {
        let src = format!(
            "size M = 8, K = 16, N = 16
def linear(a: [[f32]K]M, w: [[f32]K]N{params}) : [[f32]N]M =
  map@A(fun(row => map@B(fun(cb => {body}), {columns})), a)"
        );
        checked(&src)
    };
    let staged_outer = |v: &Variant| {
        let t = mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
        t.contains("=toGlobal(map@") && t.contains("asVector(vw,") && t.contains("toPrivate(reduce(")
    };
    let relu = format!("max(0.0, {})", dot.replace("COL", "cb"));
    let biased = format!("max(0.0, {} + cb.1)", dot.replace("COL", "cb.0"));
    let swapped = format!("max(0.0, {} + cb.0)", dot.replace("COL", "cb.1"));
    for p in [
        layer("w", &relu, ""),
        layer("zip(w, bias)", &biased, ", bias: [f32]N"),
        layer("zip(bias, w)", &swapped, ", bias: [f32]N"),
    ] {
        let variants = rewrite(&p, &Options::default()).unwrap().variants;
        let found: Vec<&Variant> = variants.iter().filter(|v| staged_outer(v)).collect();
        assert!(!found.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
        for v in found {
            for (m, k, n, t) in [(8, 16, 16, 2), (3, 5, 12, 3), (1, 1, 4, 1)] {
                let sizes = Sizes::new().with("M", m).with("K", k).with("N", n).with("tA", t).with("vw", 4);
                common::same_function(&p, &v.program, &sizes).unwrap();
            }
        }
    }
    let sums = mapsat_ir::parse(
        "size M = 8, K = 16, N = 16
def f(a: [[f32]K]M, w: [[f32]K]N) : [[f32]N]M =
  map@A(fun(row => map@B(fun(r => reduce(add, 0.0, r) * at(0, row)), w)), a)",
    )
    .unwrap();
    let variants = rewrite(&sums, &Options::default()).unwrap().variants;
    let staged = |v: &Variant| mapsat_ir::print(&v.program).contains("toGlobal(");
    assert!(!variants.iter().any(staged), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
}

/// Two layers in one kernel, both weights in PyTorch's layout: `transpose-stage` stores each
/// alone and both at once (two copies, one kernel each, before the product's), every one the
/// same function as the input.
#[test]
fn two_layers_have_both_weights_stored_transposed() {
    let p = checked(
        "size M = 4, K = 8, H = 8, N = 4
def mlp(x: [[f32]K]M, w1: [[f32]K]H, w2: [[f32]H]N) : [[f32]N]M =
  map@A(fun(row =>
    let h = map@B(fun(w => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, w))))), w1) in
    map@D(fun(w => reduce(add, 0.0, map@F(fun(p => p.0 * p.1), zip(h, w)))), w2)), x)",
    );
    // The dot products' maps fused into their reductions first (what the rule reads).
    let rules = Some(vec!["transpose-stage".into(), "reduce-map-fusion".into()]);
    let variants = rewrite(&p, &Options { rules, variants: 8, ..Options::default() }).unwrap().variants;
    let copies = |v: &Variant| mapsat_ir::print(&v.program).matches("toGlobal(").count();
    let counts: Vec<usize> = variants.iter().map(copies).collect();
    assert!(counts.contains(&1) && counts.contains(&2), "{counts:?}");
    let sizes = Sizes::new().with("M", 3).with("K", 5).with("H", 6).with("N", 2);
    for v in &variants {
        common::same_function(&p, &v.program, &sizes).unwrap();
    }
    let both = variants.iter().find(|v| copies(v) == 2).unwrap();
    assert_eq!(mapsat_ir::stages::count(&both.program), 3, "{}", mapsat_ir::print(&both.program));
}

/// A program whose body is a producer's `let h = ..`: the copy of weights `transpose-stage`
/// adds there binds another value, and is not named `h` (the kernel it makes was named as the
/// producer's, and the variant's stage choices said `h` was computed).
#[test]
fn a_transposed_copy_is_not_named_as_the_producer_before_it() {
    let p = checked(
        "size M = 4, K = 8, N = 4
def f(x: [[f32]K]M, w: [[f32]K]N) : [[f32]N]M =
  let h = toGlobal(map@A(fun(r => map@G(fun(v => v * 2.0), r)), x)) in
  map@B(fun(row => map@D(fun(c => reduce(add, 0.0, map@F(fun(p => p.0 * p.1), zip(row, c)))), w)), h)",
    );
    let rules = ["transpose-stage", "reduce-map-fusion", "let-inline", "map-fusion", "beta"];
    let opts = Options { rules: Some(rules.map(String::from).to_vec()), variants: 16, ..Options::default() };
    let variants = rewrite(&p, &opts).unwrap().variants;
    let copies: Vec<&Variant> =
        variants.iter().filter(|v| mapsat_ir::print(&v.program).contains("transpose(w)")).collect();
    assert!(!copies.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in copies {
        let names: Vec<String> =
            mapsat_ir::stages::split(&v.program).unwrap().iter().map(|s| s.program.name.clone()).collect();
        assert!(names.iter().filter(|n| n.ends_with("_h")).count() <= 1, "{names:?}\n{}", mapsat_ir::print(&v.program));
        // `h` is global exactly when a kernel of its own computes it.
        let h_global = v.stages.iter().any(|s| s.binder == "h" && s.choice == mapsat_ir::choice::Choice::Global);
        let h_kernel = names.iter().any(|n| n.ends_with("_h"));
        assert_eq!(h_global, h_kernel, "{names:?}: {:?}", v.stages);
    }
}

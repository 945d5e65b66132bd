//! Every rule, alone, on small programs where it applies: all variants in the e-graph after it
//! ran (both sides, and their combinations) compute what the input computes, at several sizes.
//! And the negative cases: a split that does not divide, a move that would capture a variable.

mod common;

use mapsat_ir::{Program, Sizes};
use mapsat_rewrite::{rewrite, Budget, Options};

/// Runs only `rules` for `iterations` at `sizes` and checks every variant (up to 32) against the
/// input. Returns how many times the first rule applied.
fn run(src: &str, rules: &[&str], iterations: usize, sizes: &Sizes, factors: &[i64]) -> usize {
    run_with(src, rules, iterations, sizes, factors, true)
}

/// [`run`], with or without new tunable tile sizes.
fn run_with(src: &str, rules: &[&str], iterations: usize, sizes: &Sizes, factors: &[i64], tiles: bool) -> usize {
    let p: Program = mapsat_ir::parse(src).unwrap();
    let opts = Options {
        sizes: sizes.clone(),
        budget: Budget { iterations, ..Budget::default() },
        variants: 32,
        split_factors: factors.to_vec(),
        new_tile_sizes: tiles,
        rules: Some(rules.iter().map(|r| r.to_string()).collect()),
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    assert!(!out.variants.is_empty());
    assert_eq!(out.rejected, 0, "{rules:?}: ill-typed terms in the e-graph");
    for v in &out.variants {
        common::same_function(&p, &v.program, sizes).unwrap_or_else(|e| panic!("{rules:?} at {sizes:?}: {e}"));
    }
    out.report.applied[rules[0]]
}

/// Sizes `name = v` for each v.
fn at(name: &str, values: &[i64]) -> Vec<Sizes> {
    values.iter().map(|v| Sizes::new().with(name, *v)).collect()
}

const MAP2: &str =
    "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => exp(x * 0.5)), map@B(fun(x => x + 1.0), xs))";
const DOT: &str =
    "size N = 16\ndef dot(x: [f32]N, y: [f32]N) : f32 = reduce(add, 0.0, map@A(fun(p => p.0 * p.1), zip(x, y)))";
const SUM: &str = "size N = 16\ndef sum(xs: [f32]N) : f32 = reduce(add, 0.0, xs)";
const PROD: &str = "size N = 8\ndef prod(xs: [i32]N) : i32 = reduce(mul, 1, xs)";
/// Inner maps whose functions use the outer row (a free variable inside the inner lambda).
const ROWS: &str = "size M = 4, N = 8\ndef f(m: [[f32]N]M) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(x => exp(at(0, row) * x)), map@C(fun(y => y + at(1, row)), row))), m)";

#[test]
fn split_join_keeps_the_function() {
    for s in at("N", &[8, 12, 24]) {
        assert!(run(MAP2, &["split-join"], 2, &s, &[2, 4]) > 0);
    }
    for s in at("N", &[4, 8]) {
        assert!(run(ROWS, &["split-join"], 2, &s.with("M", 6), &[2, 3]) > 0);
    }
}

#[test]
fn map_fusion_keeps_the_function() {
    for s in at("N", &[3, 16]) {
        assert!(run(MAP2, &["map-fusion"], 2, &s, &[]) > 0);
    }
    // The inner functions use `row`: fusing them shifts it under the new binder.
    for s in at("N", &[2, 5]) {
        assert!(run(ROWS, &["map-fusion"], 2, &s.with("M", 3), &[]) > 0);
    }
}

#[test]
fn map_fission_keeps_the_function() {
    for s in at("N", &[3, 16]) {
        assert!(run(MAP2, &["map-fission"], 3, &s, &[]) > 0);
        assert!(run(ROWS, &["map-fission"], 3, &s.with("M", 2), &[]) > 0);
    }
}

#[test]
fn beta_keeps_the_function() {
    for s in at("N", &[3, 16]) {
        assert!(run(MAP2, &["beta", "map-fusion"], 3, &s, &[]) > 0);
        assert!(run(ROWS, &["beta", "map-fusion"], 3, &s.with("M", 2), &[]) > 0);
    }
}

#[test]
fn reduce_map_fusion_keeps_the_function() {
    for s in at("N", &[1, 7, 16]) {
        assert!(run(DOT, &["reduce-map-fusion"], 2, &s, &[]) > 0);
    }
}

#[test]
fn partial_reduce_keeps_the_function() {
    for s in at("N", &[8, 12, 32]) {
        assert!(run(SUM, &["partial-reduce"], 2, &s, &[2, 4]) > 0);
        assert!(run(DOT, &["partial-reduce", "reduce-map-fusion", "split-join"], 3, &s, &[2, 4]) > 0);
    }
    for s in at("N", &[4, 6]) {
        assert!(run(PROD, &["partial-reduce"], 2, &s, &[2]) > 0);
    }
}

#[test]
fn a_split_that_does_not_divide_is_not_applied() {
    let n12 = Sizes::new().with("N", 12);
    assert_eq!(run_with(SUM, &["partial-reduce"], 3, &n12, &[8, 5], false), 0);
    assert_eq!(run_with(MAP2, &["split-join"], 3, &n12, &[8, 5], false), 0);
    // A factor as large as the length is no split either.
    assert_eq!(run_with(SUM, &["partial-reduce"], 3, &n12, &[12], false), 0);
    // A new tile size is split by where no factor divides: its default is a divisor up to the
    // largest factor (6), and the variants keep the function at N = 12 (checked by `run`).
    assert!(run(SUM, &["partial-reduce"], 3, &n12, &[8, 5]) > 0);
    assert!(run(MAP2, &["split-join"], 3, &n12, &[8, 5]) > 0);
    assert_eq!(run(SUM, &["partial-reduce"], 3, &Sizes::new().with("N", 13), &[8, 5]), 0);
    // The largest factor bounds that search only up to 64: `i64::MAX` is no search without end.
    assert_eq!(run(SUM, &["partial-reduce"], 3, &Sizes::new().with("N", 13), &[i64::MAX]), 0);
    assert!(run(SUM, &["partial-reduce"], 3, &Sizes::new().with("N", 2 * 67), &[i64::MAX]) > 0);
}

#[test]
fn partial_reduce_needs_the_identity() {
    let src = "size N = 16\ndef f(xs: [f32]N) : f32 = reduce(add, 1.0, xs)";
    assert_eq!(run(src, &["partial-reduce"], 2, &Sizes::new(), &[2, 4]), 0);
    let src = "size N = 16\ndef f(xs: [f32]N) : f32 = reduce(sub, 0.0, xs)";
    assert_eq!(run(src, &["partial-reduce"], 2, &Sizes::new(), &[2, 4]), 0);
}

#[test]
fn fission_does_not_move_a_term_out_of_the_binder_it_uses() {
    // `add(x)` uses x: it cannot leave `fun(x => ...)`; `exp(x)`'s argument is x itself.
    let src = "size N = 8\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => x + exp(x)), xs)";
    assert_eq!(run(src, &["map-fission"], 3, &Sizes::new(), &[]), 0);
}

#[test]
fn unknown_rule_is_an_error() {
    let p = mapsat_ir::parse(SUM).unwrap();
    let opts = Options { rules: Some(vec!["no-such-rule".into()]), ..Options::default() };
    let e = rewrite(&p, &opts).unwrap_err();
    assert!(e.to_string().contains("no rule `no-such-rule`"), "{e}");
}

/// A two-dimensional map, point-free and eta-expanded.
const MAT: &str = "size M = 4, N = 6\ndef f(m: [[f32]N]M) : [[f32]N]M = map@A(map@B(fun(x => x * 2.0 + 1.0)), m)";
const MAT_ETA: &str =
    "size M = 4, N = 6\ndef f(m: [[f32]N]M) : [[f32]N]M = map@A(fun(row => map@B(fun(x => exp(x)), row)), m)";

#[test]
fn map_interchange_keeps_the_function() {
    for s in [Sizes::new(), Sizes::new().with("M", 1).with("N", 5)] {
        assert!(run(MAT, &["map-interchange"], 2, &s, &[]) > 0);
        assert!(run(MAT, &["map-interchange", "transpose-transpose"], 3, &s, &[]) > 0);
        assert!(run(MAT_ETA, &["map-interchange"], 2, &s, &[]) > 0);
    }
}

#[test]
fn transpose_transpose_keeps_the_function() {
    let src = "size M = 3, N = 5\ndef f(m: [[f32]N]M) : [[f32]N]M = transpose(transpose(m))";
    assert!(run(src, &["transpose-transpose"], 2, &Sizes::new(), &[]) > 0);
}

#[test]
fn eta_keeps_the_function() {
    // `fun(y => g(y))` with `g` a lambda (monomorphic) is `g`.
    let src = "size N = 4\ndef f(xs: [f32]N) : [f32]N = map@A(fun(y => (fun(x => x * 2.0))(y)), xs)";
    assert!(run(src, &["eta"], 2, &Sizes::new(), &[]) > 0);
    // Under the outer binder, `g` uses the outer variable `row` only: eta moves it out with that
    // variable lowered.
    let src = "size M = 3, N = 4\ndef f(m: [[f32]N]M) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(x => (fun(y => y * at(0, row)))(x)), row)), m)";
    assert!(run(src, &["eta"], 2, &Sizes::new(), &[]) > 0);
}

#[test]
fn eta_leaves_polymorphic_functions_alone() {
    // `fun(x => exp(x))` is `exp`, but `exp`'s class is used at every type.
    let src = "size N = 4\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => exp(x)), xs)";
    assert_eq!(run(src, &["eta"], 2, &Sizes::new(), &[]), 0);
}

#[test]
fn eta_does_not_capture() {
    // `mul(x)` uses x: `fun(x => x * x)` is not an eta redex.
    let src = "size N = 4\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => x * x), xs)";
    assert_eq!(run(src, &["eta"], 2, &Sizes::new(), &[]), 0);
}

#[test]
fn tunable_sizes_are_split_factors() {
    // `t` is tunable (a range, in no parameter's type): a split by `t` is tried where its value
    // divides the length, and the variant keeps `t` symbolic for the tuner.
    let src = "size N = 16, t in 1..16 = 4\ndef sum(xs: [f32]N) : f32 = reduce(add, 0.0, xs)";
    let p = mapsat_ir::parse(src).unwrap();
    assert_eq!(mapsat_rewrite::tunable(&p), ["t"]);
    for t in [2, 4, 8] {
        let sizes = Sizes::new().with("t", t);
        assert!(run(src, &["partial-reduce"], 2, &sizes, &[]) > 0, "t = {t}");
    }
    let opts = Options { split_factors: vec![], ..Options::default() };
    let out = rewrite(&p, &opts).unwrap();
    assert!(out.variants.iter().any(|v| mapsat_ir::print(&v.program).contains("split(t, xs)")));
    // At t = 3 it does not divide: not applied.
    assert_eq!(run(src, &["partial-reduce"], 2, &Sizes::new().with("t", 3), &[]), 0);
}

#[test]
fn a_placed_map_stays_a_map() {
    // `toLocal(...)` must wrap a map: split-join (whose result is a `join`) and interchange
    // (a `transpose`) leave the placed map alone; every candidate still checks.
    let src = "size M = 4, N = 8\ndef f(m: [[f32]N]M) : [[f32]N]M =\n  map@A(fun(s => toLocal(map@B(fun(x => x + 1.0), s))), m)";
    let applied = run(src, &["split-join", "map-interchange"], 3, &Sizes::new(), &[2, 4]);
    assert!(applied > 0, "the outer map A is still split");
    let p = mapsat_ir::parse(src).unwrap();
    let opts = Options {
        rules: Some(vec!["split-join".into(), "map-interchange".into()]),
        split_factors: vec![2, 4],
        variants: 32,
        ..Options::default()
    };
    for v in rewrite(&p, &opts).unwrap().variants {
        assert!(mapsat_ir::print(&v.program).contains("toLocal(map@B("), "{}", mapsat_ir::print(&v.program));
    }
}

#[test]
fn the_term_budget_bounds_what_rules_add() {
    let p = mapsat_ir::parse(MAP2).unwrap();
    let opts = Options {
        budget: Budget { term: 3, ..Budget::default() },
        rules: Some(vec!["split-join".into()]),
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    assert_eq!(out.report.applied["split-join"], 0);
    assert_eq!(out.report.stop, mapsat_rewrite::StopReason::Saturated);
}

#[test]
fn new_tile_sizes_are_declared_and_any_divisor_works() {
    // Map A gets a new tunable size `tA` (default: the largest factor dividing its length); the
    // variants that split by it declare it, and every value of it that divides gives the input's
    // function, as the tuner will try.
    let p = mapsat_ir::parse(MAP2).unwrap();
    let opts = Options {
        split_factors: vec![2, 4],
        rules: Some(vec!["split-join".into()]),
        variants: 32,
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    let tiled: Vec<_> = out.variants.iter().filter(|v| mapsat_ir::print(&v.program).contains("split(tA,")).collect();
    assert!(!tiled.is_empty());
    for v in tiled {
        let decl = v.program.sizes.iter().find(|s| s.name == "tA").expect("tA declared");
        assert_eq!((decl.min, decl.max, decl.default), (1, Some(16), Some(4)));
        for t in [1, 2, 4, 8, 16] {
            common::same_function(&p, &v.program, &Sizes::new().with("tA", t)).unwrap();
        }
    }
    // Without new tile sizes, only the constants.
    let opts = Options { new_tile_sizes: false, ..opts };
    let out = rewrite(&p, &opts).unwrap();
    assert!(out.variants.iter().all(|v| v.program.sizes.len() == 1));
}

/// A 3-tap stencil over a point-wise producer.
const STENCIL: &str = "size N = 16\ndef f(xs: [f32]N) : [f32]N =\n  map@B(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, map@A(fun(x => x * 2.0 + exp(x)), xs))))";
/// The same with the producer kept in global memory (a kernel boundary).
const STAGED: &str = "size N = 16\ndef f(xs: [f32]N) : [f32]N =\n  let h = toGlobal(map@A(fun(x => x * 2.0 + exp(x)), xs)) in\n  map@B(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, h)))";

#[test]
fn pad_map_keeps_the_function() {
    for s in at("N", &[1, 5, 16]) {
        assert!(run(STENCIL, &["pad-map"], 2, &s, &[]) > 0);
    }
    // A constant pad is not moved: exp(0) is not 0.
    let src = "size N = 8\ndef f(xs: [f32]N) : [f32](N + 2) = pad(1, 1, 0.0, map@A(fun(x => exp(x)), xs))";
    assert_eq!(run(src, &["pad-map"], 2, &Sizes::new().with("N", 6), &[]), 0);
}

#[test]
fn slide_map_keeps_the_function() {
    for s in at("N", &[1, 5, 16]) {
        assert!(run(STENCIL, &["slide-map", "pad-map"], 3, &s, &[]) > 0);
        // With the windows' map fused into the stencil: each window recomputes its producer.
        assert!(run(STENCIL, &["slide-map", "pad-map", "map-fusion", "reduce-map-fusion", "beta"], 4, &s, &[]) > 0);
    }
    let src = "size N = 12\ndef f(xs: [f32]N) : [[f32]3]((N - 3)/2 + 1) = slide(3, 2, map@A(fun(x => x - 1.0), xs))";
    assert!(run(src, &["slide-map"], 2, &Sizes::new(), &[]) > 0);
}

#[test]
fn let_inline_keeps_the_function() {
    for s in at("N", &[1, 7, 16]) {
        assert!(run(STAGED, &["let-inline"], 2, &s, &[]) > 0);
        assert!(run(STAGED, &["let-inline", "pad-map", "slide-map", "map-fusion", "beta"], 5, &s, &[]) > 0);
    }
    // The value is read twice, under a binder: both reads get it, shifted.
    let src = "size M = 3, N = 4\ndef f(m: [[f32]N]M) : [[f32]N]M =\n  let t = map@A(fun(r => map@B(fun(x => x * 3.0), r)), m) in\n  map@C(fun(p => map@D(fun(q => q.0 + q.1), zip(p.0, p.1))), zip(t, t))";
    assert!(run(src, &["let-inline"], 2, &Sizes::new(), &[]) > 0);
}

#[test]
fn inlining_a_stage_gives_one_kernel_that_recomputes_it() {
    let p = mapsat_ir::parse(STAGED).unwrap();
    assert_eq!(mapsat_ir::stages::count(&p), 2);
    let opts = Options {
        rules: Some(["let-inline", "pad-map", "slide-map", "map-fusion", "beta"].map(String::from).to_vec()),
        variants: 32,
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    let inlined: Vec<_> = out.variants.iter().filter(|v| mapsat_ir::stages::count(&v.program) == 1).collect();
    assert!(!inlined.is_empty(), "no variant without the kernel boundary");
    for v in inlined {
        common::same_function(&p, &v.program, &Sizes::new()).unwrap();
    }
}

#[test]
fn guided_saturation_inlines_a_two_dimensional_stage() {
    // The separable blur's horizontal pass, read through a transpose by the vertical one: the
    // stage phase moves it into the vertical pass, each output computing its 3 x 3 window.
    let (_, p) = common::examples().into_iter().find(|(n, _)| n == "sepblur.lift").unwrap();
    let out = rewrite(&p, &Options::default()).unwrap();
    assert_eq!(
        out.phases.iter().map(|ph| ph.name.as_str()).collect::<Vec<_>>(),
        ["stages", "tiles2d", "rules", "vectorize"]
    );
    let inlined: Vec<_> = out
        .variants
        .iter()
        .filter(|v| v.intermediates == 0 && !mapsat_ir::print(&v.program).contains("toGlobal"))
        .collect();
    assert!(!inlined.is_empty(), "{:?}", out.variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in inlined {
        common::same_function(&p, &v.program, &Sizes::new()).unwrap();
    }
    // The stage is still offered kept in global memory.
    assert!(out.variants.iter().any(|v| mapsat_ir::stages::count(&v.program) == 2));
}

/// The static cost's count of intermediate arrays of the program's first variant with
/// saturation off (the program itself).
fn intermediates(src: &str) -> usize {
    let p = mapsat_ir::parse(src).unwrap();
    let opts = Options { budget: Budget { iterations: 0, ..Budget::default() }, ..Options::default() };
    rewrite(&p, &opts).unwrap().variants[0].intermediates
}

#[test]
fn intermediate_arrays_are_counted_where_they_are_read_back() {
    // A map's result read by another map: one; fused: none.
    assert_eq!(intermediates(MAP2), 1);
    assert_eq!(intermediates("size N = 4\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => exp(x * 0.5 + 1.0)), xs)"), 0);
    // Read through a view (slide, pad), still one; a map that only rearranges is a view itself.
    assert_eq!(intermediates(STENCIL), 1);
    let views = "size N = 8\ndef f(xs: [f32]N) : [f32]N =\n  map@B(fun(w => reduce(add, 0.0, w)), map@A(fun(w => w), slide(3, 1, padClamp(1, 1, xs))))";
    assert_eq!(intermediates(views), 0);
    // Kept on purpose by a kernel boundary: not counted.
    assert_eq!(intermediates(STAGED), 0);
    // A reduction over a map's result.
    assert_eq!(intermediates(DOT), 1);
}

/// A 3-tap stencil with a zero boundary (`examples/stencil1d.lift`).
const STENCIL1D: &str = "size N = 16\ndef f(xs: [f32]N) : [f32]N =\n  map@A(fun(w => 0.25 * at(0, w) + 0.5 * at(1, w) + 0.25 * at(2, w)), slide(3, 1, pad(1, 1, 0.0, xs)))";

#[test]
fn slide_tiling_keeps_the_function() {
    for s in at("N", &[4, 12, 16]) {
        assert!(run(STENCIL1D, &["slide-tiling"], 2, &s, &[2, 4]) > 0);
        // Tiles over a producer: moved into each tile (slide-map) and fused, computed per tile.
        assert!(run(STENCIL, &["slide-tiling", "pad-map", "slide-map", "map-fusion", "beta"], 4, &s, &[2, 4]) > 0);
    }
    // A window step other than 1 is not tiled; nor is a map without a tile size.
    let src = "size N = 12\ndef f(xs: [f32]N) : [f32]((N - 3)/3 + 1) = map@A(fun(w => at(0, w)), slide(3, 3, xs))";
    assert_eq!(run(src, &["slide-tiling"], 2, &Sizes::new(), &[2]), 0);
    assert_eq!(run(STENCIL1D, &["slide-tiling"], 2, &Sizes::new(), &[]), 0);
}

/// The tiled variants of `src` (tile slides by the new tile size `tA` or `tB`).
fn tiled(src: &str, rules: &[&str], iterations: usize) -> Vec<mapsat_rewrite::Variant> {
    let p = mapsat_ir::parse(src).unwrap();
    let opts = Options {
        split_factors: vec![2, 4],
        budget: Budget { iterations, ..Budget::default() },
        rules: Some(rules.iter().map(|r| r.to_string()).collect()),
        variants: 64,
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    out.variants.into_iter().filter(|v| v.signature.contains("W[t")).collect()
}

#[test]
fn tile_steps_are_tunable_and_refused_where_they_do_not_tile() {
    let p = mapsat_ir::parse(STENCIL1D).unwrap();
    let variants = tiled(STENCIL1D, &["slide-tiling"], 2);
    assert!(!variants.is_empty());
    for v in variants {
        assert!(mapsat_ir::print(&v.program).contains("slide(tA + 2, tA,"), "{}", mapsat_ir::print(&v.program));
        let decl = v.program.sizes.iter().find(|s| s.name == "tA").expect("tA declared");
        assert_eq!((decl.min, decl.max, decl.default), (1, Some(16), Some(4)));
        for t in 1..=16 {
            let s = Sizes::new().with("tA", t);
            match 16 % t {
                0 => common::same_function(&p, &v.program, &s).unwrap(),
                _ => assert!(common::same_function(&p, &v.program, &s).unwrap_err().contains("does not tile")),
            }
        }
    }
}

#[test]
fn local_staging_computes_the_producer_once_per_tile() {
    // Tiled, the producer moved into the tiles and fused: each tile computes `map@A` over its
    // tile with halo, staged in local memory, and its windows read it there.
    let p = mapsat_ir::parse(STENCIL).unwrap();
    let variants = tiled(STENCIL, &["slide-tiling", "pad-map", "slide-map", "map-fusion", "beta"], 4);
    let local: Vec<_> = variants.iter().filter(|v| mapsat_ir::print(&v.program).contains("toLocal(map")).collect();
    assert!(!local.is_empty(), "{:?}", variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in local {
        let text = mapsat_ir::print(&v.program);
        assert!(text.contains("slide(3, 1, toLocal(map"), "{text}");
        for t in [1, 2, 4, 8, 16] {
            common::same_function(&p, &v.program, &Sizes::new().with("tB", t)).unwrap();
        }
    }
}

#[test]
fn every_rule_together_offers_the_locally_staged_stencil() {
    // The cheapest extractions fuse the producer into each window; the compute_at choices
    // ([`mapsat_rewrite::compute_at`]) still give the form that stages it per tile.
    let p = mapsat_ir::parse(STENCIL).unwrap();
    let out = rewrite(&p, &Options { variants: 16, ..Options::default() }).unwrap();
    let local: Vec<_> = out.variants.iter().filter(|v| mapsat_ir::print(&v.program).contains("toLocal(")).collect();
    assert!(!local.is_empty(), "{:?}", out.variants.iter().map(|v| &v.signature).collect::<Vec<_>>());
    for v in local {
        assert!(v.signature.contains("LMW[tB]"), "{}", v.signature);
        for t in [1, 2, 4, 8, 16] {
            common::same_function(&p, &v.program, &Sizes::new().with("tB", t)).unwrap();
        }
    }
}

/// `count` random lengths `4*k + rem` with `1 <= k <= 16` (seeded, so failures reproduce).
fn random_lengths(seed: u64, count: usize, rem: i64) -> Vec<Sizes> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count).map(|_| Sizes::new().with("N", 4 * rng.gen_range(1..=16i64) + rem)).collect()
}

/// Runs `rules` on `src` at `sizes`, checks every variant against the input (as [`run`] does),
/// and returns how many variants use `asVector`.
fn vectorized(src: &str, rules: &[&str], sizes: &Sizes) -> usize {
    let p: Program = mapsat_ir::parse(src).unwrap();
    let opts = Options {
        sizes: sizes.clone(),
        budget: Budget { iterations: 3, ..Budget::default() },
        variants: 32,
        rules: Some(rules.iter().map(|r| r.to_string()).collect()),
        ..Options::default()
    };
    let out = rewrite(&p, &opts).unwrap();
    assert_eq!(out.rejected, 0, "{rules:?}: ill-typed terms in the e-graph");
    for v in &out.variants {
        common::same_function(&p, &v.program, sizes).unwrap_or_else(|e| panic!("{rules:?} at {sizes:?}: {e}"));
    }
    out.variants.iter().filter(|v| mapsat_ir::print(&v.program).contains("asVector")).count()
}

/// Element-wise maps `vectorize-map` rewrites: a lambda over `f32`, over `i32`, a unary
/// function alone, the zip forms of two and three arrays.
const LANEWISE: [&str; 5] = [
    "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => exp(x) * x - abs(x) / (x * x + x)), xs)",
    "size N = 16\ndef f(xs: [i32]N) : [i32]N = map@A(fun(x => max(x * x, x) - min(x, neg(x))), xs)",
    "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(neg, xs)",
    "size N = 16\ndef dot(x: [f32]N, y: [f32]N) : f32 = reduce(add, 0.0, map@A(fun(p => p.0 * p.1), zip(x, y)))",
    "size N = 16\ndef f(a: [f32]N, b: [f32]N, c: [f32]N) : [f32]N = map@A(fun(t => min(t.0, t.1) + t.2 * t.0), zip(a, b, c))",
];

#[test]
fn vectorize_map_keeps_the_function() {
    for (k, src) in LANEWISE.iter().enumerate() {
        for s in random_lengths(k as u64, 4, 0) {
            assert!(vectorized(src, &["vectorize-map"], &s) > 0, "not vectorized at {s:?}: {src}");
        }
    }
}

#[test]
fn vectorizing_two_maps_and_removing_the_pair_between_them_keeps_the_function() {
    let src = "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => exp(x)), map@B(fun(x => x * x), xs))";
    for s in random_lengths(7, 4, 0) {
        assert!(vectorized(src, &["vectorize-map", "asvector-asscalar"], &s) > 0);
        // Between the two vectorized maps: `asVector(4, asScalar(map@B_v(..)))`.
        assert!(run(src, &["asvector-asscalar", "vectorize-map"], 3, &s, &[]) > 0);
    }
}

#[test]
fn as_vector_of_as_scalar_keeps_the_function() {
    let src = "size N = 16\ndef f(xs: [f32]N) = map@A(fun(v => v * v), asVector(4, asScalar(asVector(4, xs))))";
    for s in random_lengths(8, 3, 0) {
        assert!(run(src, &["asvector-asscalar"], 2, &s, &[]) > 0);
    }
    // Another width would regroup the lanes: not applied.
    let src = "size N = 16\ndef f(xs: [f32]N) = map@A(fun(v => v * v), asVector(2, asScalar(asVector(4, xs))))";
    assert_eq!(run(src, &["asvector-asscalar"], 2, &Sizes::new(), &[]), 0);
}

#[test]
fn as_scalar_of_as_vector_keeps_the_function() {
    let src = "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => x + x), asScalar(asVector(4, xs)))";
    for s in random_lengths(9, 3, 0) {
        assert!(run(src, &["asscalar-asvector"], 2, &s, &[]) > 0);
    }
}

#[test]
fn vectorize_map_needs_a_multiple_of_the_width() {
    for (k, src) in LANEWISE.iter().enumerate() {
        for rem in 1..4 {
            for s in random_lengths(k as u64, 2, rem) {
                assert_eq!(run(src, &["vectorize-map"], 2, &s, &[]), 0, "{src} at {s:?}");
            }
        }
    }
}

#[test]
fn vectorize_map_only_rewrites_lane_wise_maps_over_scalars() {
    let refused = [
        // Elements that are vectors, arrays, tuples not made by zip.
        "size N = 16\ndef f(xs: [f32]N) = map@A(fun(v => v + v), asVector(4, xs))",
        "size M = 4, N = 16\ndef f(m: [[f32]N]M) : [[f32]N]M = map@A(fun(r => r), m)",
        "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(p => p.0 + p.1), map@B(fun(x => (x, x)), xs))",
        // A literal (no vector literal), a comparison, a conversion, a free variable.
        "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => x * 2.0), xs)",
        "size N = 16\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => select(x < x * x, x, x * x)), xs)",
        "size N = 16\ndef f(xs: [i32]N) : [f32]N = map@A(fun(x => f32(x + x)), xs)",
        "size M = 4, N = 16\ndef f(m: [[f32]N]M) : [[f32]N]M = map@A(fun(r => map@B(fun(x => x * at(0, r)), r)), m)",
        // A pad (lanes straddling its bounds are read one by one: the rule leaves it alone).
        "size N = 16\ndef f(xs: [f32]N) = map@A(fun(x => x * x), pad(1, 3, 0.0, xs))",
        "size N = 16\ndef f(xs: [f32]N, ys: [f32]N) = map@A(fun(p => p.0 * p.1), zip(padClamp(2, 2, xs), padClamp(2, 2, ys)))",
        // Results that are not numeric scalars.
        "size N = 16\ndef f(xs: [f32]N) = map@A(fun(x => x < x), xs)",
    ];
    for src in refused {
        assert_eq!(run(src, &["vectorize-map"], 2, &Sizes::new(), &[]), 0, "{src}");
    }
}

/// Maps over the columns of a matrix (`transpose(b)`) that `vectorize-across` rewrites: matmul's
/// dot products (a row of `a` free in the column's function, broadcast), column sums (a
/// reduction of the column itself), a column's function of an inner map, a literal and a
/// unary function, a zip with a vector parameter and tuples, integers.
const COLUMNS: [&str; 6] = [
    "size M = 4, K = 8, N = 16\ndef f(a: [[f32]K]M, b: [[f32]N]K) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(col => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))), a)",
    "size K = 8, N = 16\ndef f(b: [[f32]N]K) : [f32]N = map@B(fun(col => reduce(add, 0.0, col)), transpose(b))",
    "size K = 8, N = 16\ndef f(b: [[f32]N]K) : [f32]N = map@B(fun(col => reduce(add, 1.5, map@C(fun(x => x * x + 1.0), col))), transpose(b))",
    "size K = 8, N = 16\ndef f(b: [[f32]N]K) : [f32]N = map@B(fun(col => exp(reduce(fun(acc, x => max(acc, x)), 0.0 - 1000.0, col)) * 0.5), transpose(b))",
    "size K = 8, N = 16\ndef f(b: [[f32]N]K, v: [f32]K) : [f32]N = map@B(fun(col => reduce(fun(acc, p => acc + p.0 * p.1 - p.1), 0.0, zip(col, v))), transpose(b))",
    "size K = 8, N = 16\ndef f(b: [[i32]N]K) : [i32]N = map@B(fun(col => reduce(fun(acc, x => acc * 3 + x), 7, col)), transpose(b))",
];

#[test]
fn vectorize_across_keeps_the_function() {
    for (k, src) in COLUMNS.iter().enumerate() {
        // A multiple of 4 columns, and one of 2 only (read 2 lanes at a time).
        for s in random_lengths(20 + k as u64, 2, 0).into_iter().chain(random_lengths(40 + k as u64, 1, 2)) {
            let s = s.with("K", 3);
            assert!(run(src, &["vectorize-across"], 2, &s, &[]) > 0, "not vectorized at {s:?}: {src}");
            assert!(vectorized(src, &["vectorize-across"], &s) > 0, "no vectorized variant at {s:?}: {src}");
        }
    }
}

#[test]
fn vectorize_across_needs_a_multiple_of_the_width_and_a_lane_wise_function() {
    for (k, src) in COLUMNS.iter().enumerate() {
        // Odd numbers of columns: neither 4 nor 2 lanes divide them.
        for s in random_lengths(30 + k as u64, 2, 1 + 2 * (k as i64 % 2)) {
            assert_eq!(run(src, &["vectorize-across"], 2, &s, &[]), 0, "{src} at {s:?}");
        }
    }
    let refused = [
        // A comparison, a conversion, a result that is not a scalar, a map that is not over a
        // transpose.
        "size K = 8, N = 16\ndef f(b: [[f32]N]K) : [f32]N = map@B(fun(col => reduce(fun(acc, x => select(x < acc, x, acc)), 0.0, col)), transpose(b))",
        "size K = 8, N = 16\ndef f(b: [[i32]N]K) : [f32]N = map@B(fun(col => f32(reduce(add, 0, col))), transpose(b))",
        "size K = 8, N = 16\ndef f(b: [[f32]N]K) : [[f32]K]N = map@B(fun(col => map@C(fun(x => x * x), col)), transpose(b))",
        "size K = 8, N = 16\ndef f(b: [[f32]K]N) : [f32]N = map@B(fun(col => reduce(add, 0.0, col)), b)",
    ];
    for src in refused {
        assert_eq!(run(src, &["vectorize-across"], 2, &Sizes::new(), &[]), 0, "{src}");
    }
    // Columns of a transpose: the rows read as vectors would be strided in memory. (No variant
    // is extracted: the input transposes a transpose.)
    let src = "size K = 8, N = 16\ndef f(a: [[f32]K]N) : [f32]N = map@B(fun(col => reduce(add, 0.0, col)), transpose(transpose(a)))";
    let p = mapsat_ir::parse(src).unwrap();
    let out = rewrite(&p, &common::only(&["vectorize-across"], 2)).unwrap();
    assert_eq!(out.report.applied["vectorize-across"], 0);
}

#[test]
fn map_reduce_interchange_keeps_the_function_with_the_column_on_either_side_of_the_zip() {
    // A fold that is not symmetric in the pair's components, and a non-zero initial value.
    let sources = [
        "size K = 8, N = 6\ndef f(m: [[f32]K]N, v: [f32]K) : [f32]N = map@B(fun(col => reduce(fun(acc, p => acc * 0.5 + p.0 - p.1 * p.1), 1.0, zip(v, col))), m)",
        "size K = 8, N = 6\ndef f(m: [[f32]K]N, v: [f32]K) : [f32]N = map@B(fun(col => reduce(fun(acc, p => acc * 0.5 + p.0 - p.1 * p.1), 1.0, zip(col, v))), m)",
    ];
    for src in sources {
        for (k, n) in [(1, 1), (3, 2), (8, 6)] {
            let s = Sizes::new().with("K", k).with("N", n);
            assert!(run(src, &["map-reduce-interchange"], 1, &s, &[]) > 0, "{src} at {s:?}");
        }
    }
}

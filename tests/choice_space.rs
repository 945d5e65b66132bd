//! Stage choices as variables of one space (issue #9, `mapsat::choices`), differentially: for
//! the example pipelines with producers and generated 2- to 4-stage pipelines, the choice
//! space built from the input and its rewrite variants is checked against each alternative's
//! own kernel spaces (their own solvers, `Space::is_valid` and `Space::count`):
//!
//! - every sample of the choice space is valid in its own alternative's spaces;
//! - samples of each alternative's own spaces, combined, are valid in the choice space under
//!   that alternative's choice;
//! - the choice space's count is the sum over the alternatives of the product of their
//!   kernels' counts (where those are exact);
//! - a mapping valid under one choice that another choice's kernels read (the same labels) is
//!   refused under the other exactly when its own spaces refuse it, with an explanation that
//!   names the stage choice.

use mapsat::ir::{self, Program, Sizes};
use mapsat::rewrite::Options as RewriteOptions;
use mapsat_constraints::{ChoiceSpace, Count, Options, Point};

/// A deterministic generator (64-bit LCG): the tests must not depend on a random crate.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// One stage reading `prev` (and the input `xs`).
fn stage(g: &mut Lcg, prev: &str) -> String {
    match g.below(3) {
        0 => format!("map(fun(x => x * {}.5 + 1.0), {prev})", g.below(3)),
        1 => format!("map(fun(p => p.0 + p.1), zip(xs, {prev}))"),
        _ => format!("map(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, {prev})))"),
    }
}

/// A pipeline of 2 to 4 stages over `xs: [f32]N`, each producer materialized in global memory.
fn pipeline(seed: u64) -> String {
    let mut g = Lcg(seed);
    let stages = 2 + g.below(3);
    let (mut body, mut prev) = (String::new(), "xs".to_string());
    for k in 0..stages - 1 {
        body += &format!("  let y{k} = toGlobal({}) in\n", stage(&mut g, &prev));
        prev = format!("y{k}");
    }
    body += &format!("  {}\n", stage(&mut g, &prev));
    format!("size N = 32\ndef pipe{seed}(xs: [f32]N) =\n{body}")
}

fn choice_space(text: &str) -> ChoiceSpace {
    let p: Program = ir::parse(text).unwrap_or_else(|e| panic!("{text}\n{e:?}"));
    ir::check::check(&p).unwrap_or_else(|e| panic!("{text}\n{}", e.message));
    let opts = RewriteOptions { sizes: p.resolve_sizes(&Sizes::new()).unwrap(), ..RewriteOptions::default() };
    let candidates = mapsat::variants::candidates(&p, 6, &opts).expect("variants");
    let built = mapsat::choices::choice_space(candidates.list, &Sizes::new(), &Options::default()).expect("space");
    built.space
}

fn exact(c: Count) -> Option<u64> {
    match c {
        Count::Exact(n) => Some(n),
        Count::Estimate { .. } => None,
    }
}

/// Is `p` valid by its alternative's own spaces?
fn valid_alone(s: &ChoiceSpace, p: &Point) -> bool {
    let a = &s.alternatives()[p.alternative];
    a.kernels.iter().zip(&p.mappings).all(|(k, m)| k.is_valid(m).unwrap())
}

/// What [`check`] could check.
#[derive(Default)]
struct Checked {
    /// Cross-choice mappings refused.
    refused: usize,
    /// Spaces whose counts were compared.
    counted: usize,
}

/// The four checks of the module documentation.
fn check(name: &str, s: &ChoiceSpace, out: &mut Checked) {
    let samples = s.sample(16, 3).unwrap();
    assert!(!samples.is_empty(), "{name}: no sample");
    for p in &samples {
        assert!(valid_alone(s, p), "{name}: {} {} is invalid in its own spaces", s.describe(p.alternative), s.show(p));
    }
    // Each alternative with a valid point (every kernel has a mapping) is sampled.
    let sampled: std::collections::BTreeSet<usize> = samples.iter().map(|p| p.alternative).collect();
    let feasible: std::collections::BTreeSet<usize> = (0..s.alternatives().len())
        .filter(|&k| s.alternatives()[k].kernels.iter().all(|sp| !sp.sample(1, 0).unwrap().is_empty()))
        .collect();
    assert_eq!(sampled, feasible, "{name}: samples miss a choice");
    let mut products = Vec::new();
    for (k, a) in s.alternatives().iter().enumerate() {
        let own: Vec<Vec<_>> = a.kernels.iter().map(|sp| sp.sample(4, 1).unwrap()).collect();
        let rounds = if own.iter().any(Vec::is_empty) { 0 } else { own.iter().map(Vec::len).max().unwrap_or(0) };
        for r in 0..rounds {
            let p = Point { alternative: k, mappings: own.iter().map(|ms| ms[r % ms.len()].clone()).collect() };
            assert!(s.is_valid(&p).unwrap(), "{name}: {} {} refused in the choice space", s.describe(k), s.show(&p));
        }
        products.push(a.kernels.iter().map(|sp| exact(sp.count(0).unwrap())).product::<Option<u64>>());
    }
    if let (Some(by_solver), Some(sum)) =
        (s.count_models(50_000).unwrap(), products.iter().copied().sum::<Option<u64>>())
    {
        assert_eq!(by_solver.iter().sum::<u64>(), sum, "{name}: counts {by_solver:?} vs {products:?}");
        let total = mapsat_constraints::total(&s.count(0).unwrap());
        assert_eq!(exact(total), Some(sum), "{name}");
        out.counted += 1;
    }
    for p in &samples {
        for b in (0..s.alternatives().len()).filter(|&b| b != p.alternative) {
            let Ok(mappings) = s.parse_mapping(b, &s.show(p)) else { continue };
            let q = Point { alternative: b, mappings };
            let e = s.explain(&q).unwrap();
            assert_eq!(e.valid, valid_alone(s, &q), "{name}: {} under {}", s.show(p), s.describe(b));
            if !e.valid {
                assert_eq!(e.stage, s.describe(b));
                assert!(e.stage.starts_with("stage "), "{}", e.stage);
                assert!(e.kernels.iter().any(|k| !k.valid), "{name}: no kernel says why");
                out.refused += 1;
            }
        }
    }
}

#[test]
fn the_example_pipelines_choice_spaces_agree_with_their_alternatives_spaces() {
    let mut checked = Checked::default();
    for file in ["sepblur", "sharpen", "jacobi2d"] {
        let text = std::fs::read_to_string(format!("{}/examples/{file}.lift", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let s = choice_space(&text);
        assert!(s.alternatives().len() >= 2, "{file}: a single stage choice");
        check(file, &s, &mut checked);
        eprintln!("{file}: {} alternatives", s.alternatives().len());
    }
    eprintln!("{} cross-choice mappings refused, {} counts compared", checked.refused, checked.counted);
    assert!(checked.refused > 0 && checked.counted == 3);
}

#[test]
fn generated_pipelines_choice_spaces_agree_with_their_alternatives_spaces() {
    let (mut alternatives, mut checked) = (0, Checked::default());
    for seed in 0..6 {
        let text = pipeline(seed);
        let s = choice_space(&text);
        alternatives += s.alternatives().len();
        check(&format!("pipe{seed}\n{text}"), &s, &mut checked);
        eprintln!("pipe{seed}: {} alternatives", s.alternatives().len());
    }
    eprintln!("{} cross-choice mappings refused, {} counts compared", checked.refused, checked.counted);
    assert!(alternatives > 6, "the rewrites offered no other stage choice");
    assert!(checked.refused > 0 && checked.counted > 0);
}

//! Stage choices as variables of one space ([`ChoiceSpace`]), on a two-stage pipeline written
//! three ways: its producer `A` materialized in global memory (two kernels), staged in local
//! memory per work group, or inlined into its consumer. Each check has an oracle outside the
//! one solver: the alternatives' own spaces ([`Space::is_valid`], [`Space::count`]).

use mapsat_constraints::{Alternative, ChoiceSpace, Count, Options, Point, Space};
use mapsat_ir::choice::Choice;

const GLOBAL: &str = "size N = 32
def f(xs: [f32]N) =
  let y = toGlobal(map@A(fun(x => x * 2.0), xs)) in
  join(map@B(fun(c => map@C(fun(x => x + 1.0), c)), split(8, y)))";

const LOCAL: &str = "size N = 32
def f(xs: [f32]N) =
  join(map@B(fun(c => map@C(fun(x => x + 1.0), toLocal(map@A(fun(x => x * 2.0), c)))), split(8, xs)))";

const INLINE: &str = "size N = 32
def f(xs: [f32]N) =
  join(map@B(fun(c => map@C(fun(x => x * 2.0 + 1.0), c)), split(8, xs)))";

fn kernels(text: &str) -> Vec<Space> {
    let p = mapsat_ir::parse(text).expect("parses");
    mapsat_ir::check::check(&p).expect("checks");
    let stages = mapsat_ir::stages::split(&p).expect("stages");
    stages.iter().map(|s| Space::generate(&s.program, Options::default()).expect("space")).collect()
}

fn space() -> ChoiceSpace {
    let alternatives = [(Choice::Global, GLOBAL), (Choice::Local, LOCAL), (Choice::Inline, INLINE)]
        .into_iter()
        .map(|(c, text)| Alternative { choices: vec![c], kernels: kernels(text) })
        .collect();
    ChoiceSpace::new(vec!["y".into()], alternatives).expect("choice space")
}

fn exact(c: Count) -> u64 {
    match c {
        Count::Exact(n) => n,
        c => panic!("not exact: {c}"),
    }
}

#[test]
fn the_edge_offers_each_alternatives_choice() {
    let s = space();
    assert_eq!(s.domain(0), [Choice::Inline, Choice::Local, Choice::Global]);
    assert_eq!(s.describe(1), "stage y = local");
    assert_eq!(s.alternative_of(&[("y".into(), Choice::Inline)]).unwrap(), 2);
    let e = s.alternative_of(&[("y".into(), Choice::Private)]).unwrap_err().to_string();
    assert!(e.contains("stage y = private is not offered"), "{e}");
}

#[test]
fn the_count_is_the_sum_of_the_alternatives_products_of_kernel_counts() {
    let s = space();
    let by_solver = s.count_models(100_000).unwrap().expect("small enough");
    for (k, a) in s.alternatives().iter().enumerate() {
        let product: u64 = a.kernels.iter().map(|sp| exact(sp.count(0).unwrap())).product();
        assert_eq!(by_solver[k], product, "{}", s.describe(k));
        assert!(product > 0);
        eprintln!("{}: {product}", s.describe(k));
    }
    let counts = s.count(0).unwrap();
    assert_eq!(exact(mapsat_constraints::total(&counts)), by_solver.iter().sum::<u64>());
}

#[test]
fn samples_cover_every_choice_and_are_valid_in_their_own_spaces() {
    let s = space();
    let samples = s.sample(12, 7).unwrap();
    assert_eq!(samples.len(), 12);
    assert_eq!(samples, s.sample(12, 7).unwrap(), "seeded");
    for k in 0..3 {
        assert!(samples.iter().any(|p| p.alternative == k), "no sample of {}", s.describe(k));
    }
    for p in &samples {
        let a = &s.alternatives()[p.alternative];
        for (sp, m) in a.kernels.iter().zip(&p.mappings) {
            assert!(sp.is_valid(m).unwrap(), "{}: {}", s.describe(p.alternative), s.show(p));
        }
    }
}

#[test]
fn a_mapping_valid_with_the_producer_in_global_memory_is_refused_with_it_in_local_memory() {
    let s = space();
    let global = s.parse_mapping(0, "A=G0,B=G0,C=S").unwrap();
    assert!(s.is_valid(&Point { alternative: 0, mappings: global }).unwrap());
    let local = Point { alternative: 1, mappings: s.parse_mapping(1, "A=G0,B=G0,C=S").unwrap() };
    let e = s.explain(&local).unwrap();
    assert!(!e.valid);
    assert_eq!(e.stage, "stage y = local");
    assert!(e.kernels.iter().any(|k| !k.valid && !k.violated.is_empty()));
    assert!(!s.is_valid(&local).unwrap());
}

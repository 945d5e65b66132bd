//! Brute force against the solver on small programs: every assignment of the 12 codes to every
//! map, checked by evaluation (each constraint stated in words) and by the enumeration with Z3.

use mapsat_constraints::{Code, Count, Mapping, Options, Space};
use std::collections::HashSet;
use std::ops::ControlFlow;

/// Every `z3_every`-th assignment (and every undecided one) is also explained by Z3.
fn brute_with(src: &str, options: Options, z3_every: usize) -> (usize, usize) {
    let p = mapsat_ir::parse(src).unwrap();
    let s = Space::generate(&p, options).unwrap();
    let mut solver_set = HashSet::new();
    s.enumerate(None, |m| {
        assert!(solver_set.insert(m.clone()), "duplicate {}", s.show(m));
        ControlFlow::Continue(())
    })
    .unwrap();
    let n = s.len();
    let total = Code::ALL.len().pow(n as u32);
    let mut valid = 0;
    for k in 0..total {
        let mut k2 = k;
        let codes = (0..n)
            .map(|_| {
                let c = Code::ALL[k2 % Code::ALL.len()];
                k2 /= Code::ALL.len();
                c
            })
            .collect();
        let m = Mapping { codes };
        // Rejected assignments fail a stated rule (evaluation names it); accepted ones are what
        // the solver enumerates. Undecided ones (tuning parameters) and every `z3_every`-th go to Z3.
        let (violated, undecided) = s.evaluate(&m).unwrap();
        let ok = if (undecided && violated.is_empty()) || k % z3_every == 0 {
            let e = s.explain(&m).unwrap();
            assert_eq!(e.valid, e.violated.is_empty(), "{}", s.show(&m));
            if !undecided || !violated.is_empty() {
                assert_eq!(e.valid, violated.is_empty(), "{}", s.show(&m));
            }
            e.valid
        } else {
            violated.is_empty()
        };
        assert_eq!(ok, solver_set.contains(&m), "disagreement on {}", s.show(&m));
        if ok {
            valid += 1;
        }
    }
    // The count agrees with the enumeration, and Knuth's estimate (what large spaces get) with
    // both, within four standard errors.
    let n = solver_set.len() as f64;
    assert_eq!(s.count(0).unwrap(), Count::Exact(n as u64));
    let Count::Estimate { value, std_error, .. } = s.estimate(1).unwrap() else { panic!("not an estimate") };
    assert!((value - n).abs() <= 4.0 * std_error + 0.5, "{n} valid, estimated {value} ± {std_error}");
    (valid, solver_set.len())
}

fn brute(src: &str, options: Options) -> (usize, usize) {
    brute_with(src, options, 97)
}

#[test]
fn listing3_brute_force() {
    let src = "
size n = 64, s0 = 16, s1 = 4
def f(X: [f32]n, y: f32, z: f32) =
  join o map@A(map@B(fun(a => a + z)) o join o map@C(fun(c => toLocal(map@D(fun(a => a * y), c)))) o split(s1)) o split(s0) $ X
";
    let (brute, solver) = brute(src, Options::default());
    assert_eq!(brute, solver);
    assert!(brute > 0);
}

#[test]
fn nested_private_brute_force() {
    let src = "
size n = 16, m = 8
def g(x: [[f32]m]n) = map@A(fun(r => toPrivate(map@B(fun(a => a + 1.0), r))), x)
";
    let (brute, solver) = brute(src, Options::default());
    assert_eq!(brute, solver);
    assert!(brute > 0);
}

#[test]
fn fused_chain_brute_force() {
    // Three perfectly nested maps: effective codes through two levels of fusion.
    let src = "
size n = 8, m = 4, k = 4
def h(x: [[[f32]k]m]n) = map@A(fun(p => map@B(fun(r => map@C(fun(a => a * 2.0), r)), p)), x)
";
    let (brute, solver) = brute(src, Options::default());
    assert_eq!(brute, solver);
    assert!(brute > 0);
}

#[test]
fn device_limits_brute_force() {
    // A barrier inside a local loop (tuning parameters) and the Mali's work-group limits.
    let src = "
size n = 64, s0 = 16, s1 = 4
def f(X: [f32]n, y: f32, z: f32) =
  join o map@A(map@B(fun(a => a + z)) o join o map@C(fun(c => toLocal(map@D(fun(a => a * y), c)))) o split(s1)) o split(s0) $ X
";
    let profile = mapsat_ir::profile::Profile::load("mali-g72-mp12").unwrap();
    let (brute, solver) = brute(src, Options { profile: Some(profile), ..Options::default() });
    assert_eq!(brute, solver);
    assert!(brute > 0);
}

#[test]
fn listing1_brute_force() {
    // The paper's Listing 1 (`examples/listing1.lift`): 12^5 assignments.
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/listing1.lift")).unwrap();
    let (brute, solver) = brute_with(&src, Options::default(), 4999);
    assert_eq!(brute, solver);
    assert_eq!(brute, 42);
}

#[test]
fn symmetry_breaking_brute_force() {
    // Family 13's "some earlier map uses dimension d - 1" is read by evaluation (a scan of the
    // earlier maps) and by Z3 (auxiliary Booleans): both agree on every assignment, and the
    // valid ones are the canonical forms of the unbroken space's mappings.
    let src = "
size n = 8, m = 4, k = 4
def h(x: [[[f32]k]m]n) = map@A(fun(p => map@B(fun(r => map@C(fun(a => a * 2.0), r)), p)), x)
";
    let options = Options { symmetry_breaking: true, ..Options::default() };
    let (brute, solver) = brute_with(src, options, 7);
    assert_eq!(brute, solver);
    let plain = Space::generate(&mapsat_ir::parse(src).unwrap(), Options::default()).unwrap();
    assert_eq!(plain.count_classes().unwrap(), Some(brute as u64));
    assert!(brute > 0);
}

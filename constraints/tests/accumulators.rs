//! `toPrivate(reduce(f, init, xs))` keeps the accumulator in private memory: the maps that write
//! it (heading `init` and the body of `f`) run within one thread (family 1). Without this the
//! space accepted them as `mapLcl`, which code generation refused or computed wrongly. The same
//! holds without `toPrivate`: code generation keeps every accumulator in private memory (a
//! `mapLcl` writing an unplaced one gave wrong results on pocl, found on matmul's
//! register-blocked variants).

use mapsat_constraints::{Family, Options, Space};

const BLOCKED: &str = "size N = 8, B = 4, K = 6
def f(xs: [[f32]K]N, ws: [[f32]K]B) =
  map@O(fun(x =>
    toPrivate(reduce(fun(acc, p => map@A(fun(q => q.0 + p.0 * q.1), zip(acc, p.1))),
      map@Z(fun(k => 0.0), ws),
      zip(x, transpose(ws))))),
    xs)";

/// The maps of the private-scope constraints (family 1), in order.
fn private_scoped(space: &Space) -> Vec<&str> {
    let scoped = space.constraints().iter().filter(|c| c.family == Family::PrivateScope);
    scoped.flat_map(|c| space.labels_of(&c.maps)).collect()
}

#[test]
fn maps_writing_a_private_accumulator_stay_in_one_thread() {
    let p = mapsat_ir::parse(BLOCKED).unwrap();
    let space = Space::generate(&p, Options::default()).unwrap();
    assert_eq!(private_scoped(&space), ["Z", "A"]);
    for bad in ["O=W0,A=L0,Z=S", "O=W0,A=S,Z=L0", "O=G0,A=G1,Z=S"] {
        let e = space.explain(&space.parse_mapping(bad).unwrap()).unwrap();
        assert!(!e.valid && e.violated.iter().any(|c| c.family == Family::PrivateScope), "{bad}");
    }
    assert!(space.explain(&space.parse_mapping("O=G0,A=S,Z=S").unwrap()).unwrap().valid);
}

#[test]
fn an_unplaced_array_accumulator_is_private_too() {
    let p = mapsat_ir::parse(&BLOCKED.replace("toPrivate(reduce(", "(reduce(")).unwrap();
    let space = Space::generate(&p, Options::default()).unwrap();
    assert_eq!(private_scoped(&space), ["Z", "A"]);
    let e = space.explain(&space.parse_mapping("O=W0,A=L0,Z=L0").unwrap()).unwrap();
    assert!(!e.valid);
    assert!(space.explain(&space.parse_mapping("O=G0,A=S,Z=S").unwrap()).unwrap().valid);
}

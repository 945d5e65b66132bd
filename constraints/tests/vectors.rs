//! Arrays of vectors (`asVector`/`asScalar`): the analysis follows the buffer dimensions through
//! them. Before, their views were unknown, so a vectorized map's output read back by a
//! reduction in the same kernel had no synchronizability constraint (family 10): the space
//! accepted `A_v=G0` for the vectorized dot product, which code generation refused ("needs a
//! grid-wide synchronization").

use mapsat_constraints::{Family, Options, Space};

/// The dot product as `mapsat rewrite` vectorizes it.
const DOT_V: &str = "size N = 64
def dot(x: [f32]N, y: [f32]N) : f32 =
  reduce(add, 0.0, asScalar(map@A_v(fun(p => p.0 * p.1), zip(asVector(4, x), asVector(4, y)))))";

/// An element-wise map, vectorized.
const EW_V: &str = "size N = 64
def ew(x: [f32]N, y: [f32]N) : [f32]N =
  asScalar(map@A_v(fun(p => p.0 * p.1 + p.0), zip(asVector(4, x), asVector(4, y))))";

fn space(src: &str) -> Space {
    let p = mapsat_ir::parse(src).unwrap();
    mapsat_ir::check::check(&p).unwrap();
    Space::generate(&p, Options::default()).unwrap()
}

fn violated(s: &Space, mapping: &str) -> Vec<Family> {
    let m = s.parse_mapping(mapping).unwrap();
    let e = s.explain(&m).unwrap();
    assert_eq!(s.is_valid(&m).unwrap(), e.valid, "{mapping}");
    e.violated.iter().map(|c| c.family).collect()
}

#[test]
fn a_vectorized_map_read_back_by_a_reduction_is_not_global() {
    let s = space(DOT_V);
    assert!(violated(&s, "A_v=G0").contains(&Family::Sync));
    assert!(violated(&s, "A_v=S").is_empty());
}

#[test]
fn a_map_over_vectors_is_parallel_or_sequential_but_not_vectorized_again() {
    let s = space(EW_V);
    for ok in ["A_v=G0", "A_v=S"] {
        assert!(violated(&s, ok).is_empty(), "{ok}");
    }
    assert_eq!(violated(&s, "A_v=V"), [Family::Vectorization]);
    let why = s.explain(&s.parse_mapping("A_v=V").unwrap()).unwrap().violated[0].text.clone();
    assert!(why.contains("not scalars"), "{why}");
}

#[test]
fn vectors_of_a_column_are_refused() {
    // The rows of `transpose(m)` are columns of `m`: their elements are N apart, and code
    // generation loads a vector from consecutive addresses (it computed wrong results here).
    let src = "size M = 8, N = 16
def tv(m: [[f32]N]M) = map@D(fun(r => asScalar(map@E_v(fun(v => v * v), asVector(4, r)))), transpose(m))";
    let p = mapsat_ir::parse(src).unwrap();
    let Err(e) = Space::generate(&p, Options::default()) else { panic!("accepted") };
    assert!(e.to_string().contains("asVector(4) of an array whose consecutive elements are 16 apart"), "{e}");
    // The same on rows is accepted; so are vectors after a pad (strides unknown, as in
    // conv_vec.lift), which this check does not decide (an aligned pad runs correctly).
    let rows = src.replace("transpose(m)", "m");
    assert!(Space::generate(&mapsat_ir::parse(&rows).unwrap(), Options::default()).is_ok());
    let padded = "size N = 16
def f(x: [f32]N) = asScalar(map@A_v(fun(v => v * v), asVector(4, pad(4, 4, 0.0, x))))";
    assert!(Space::generate(&mapsat_ir::parse(padded).unwrap(), Options::default()).is_ok());
}

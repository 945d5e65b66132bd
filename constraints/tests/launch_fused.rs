//! Family 12's rule against a `mapLcl` under a sequential map inside another `mapLcl` does not
//! apply to a map fused (`F`) into a `mapLcl`: it is that loop, not one nested in it. The
//! completeness test found `A=S,B=L0,C=F` rejected (once code generation lowered `mapLcl`
//! without `mapWrg`), although it runs correctly.

use mapsat_constraints::{Family, Options, Space};

#[test]
fn a_map_fused_into_a_local_map_is_not_a_nested_local_map() {
    let p = mapsat_ir::parse(
        "size n = 4, m = 4, k = 8
def h(x: [[[f32]k]m]n) = map@A(fun(p => map@B(fun(r => map@C(fun(a => a * 2.0 + 1.0), r)), p)), x)",
    )
    .expect("parse");
    let space = Space::generate(&p, Options { fusion: false, ..Options::default() }).expect("space");
    let fused = space.parse_mapping("A=S,B=L0,C=F").expect("mapping");
    let e = space.explain(&fused).expect("explain");
    assert!(e.violated.iter().all(|c| c.family != Family::Launch), "{:?}", e.violated);
    // A separate mapLcl under a sequential map under a mapLcl is still rejected.
    let nested = space.parse_mapping("A=L0,B=S,C=L1").expect("mapping");
    let e = space.explain(&nested).expect("explain");
    assert!(e.violated.iter().any(|c| c.family == Family::Launch), "{:?}", e.violated);
}

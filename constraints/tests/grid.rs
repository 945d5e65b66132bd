//! A device profile's limit on the work groups of a dimension (CUDA's grid: 65,535 blocks in y
//! and z, the `h100` profile's `max_groups`): the space offered `mapWrg(1)` over 70,000
//! iterations, which code generation then refused for CUDA (a tester's `explain --target h100`).

use mapsat_constraints::{Family, Options, Space};
use mapsat_ir::profile::Profile;

fn listing1_on_h100(i: i64) -> Space {
    let src = std::fs::read_to_string(format!("{}/../examples/listing1.lift", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let p = mapsat_ir::parse(&src).expect("parse");
    let profile = Profile::builtin("h100").expect("h100");
    let sizes = mapsat_ir::Sizes::new().with("I", i);
    Space::generate(&p, Options { profile: Some(profile), sizes, ..Options::default() }).expect("space")
}

fn refused_for_groups(space: &Space, mapping: &str) -> bool {
    let e = space.explain(&space.parse_mapping(mapping).expect("mapping")).expect("explain");
    assert_eq!(e.valid, e.violated.is_empty(), "{:?}", e.violated);
    e.violated.iter().any(|c| c.family == Family::DeviceLimits && c.text.contains("work groups"))
}

#[test]
fn work_groups_beyond_the_grid_are_not_offered() {
    let big = listing1_on_h100(70_000);
    // One group per iteration of A: 70,000 in y or z is beyond CUDA's grid, in x it is not.
    assert!(refused_for_groups(&big, "A=W1,B=L1,C=S,D=L1,E=S"));
    assert!(refused_for_groups(&big, "A=W2,B=L2,C=S,D=L2,E=S"));
    assert!(!refused_for_groups(&big, "A=W0,B=L0,C=S,D=L0,E=S"));
    // A global map in y is not bound by the space: its kernel has no local map, so the space's
    // local sizes are not its work group; code generation's default one brings 70,000 in y
    // under the grid (`mapsat-tuner`'s `tests/grid.rs` launches every valid mapping).
    assert!(!refused_for_groups(&big, "A=G1,B=G0,C=S,D=G0,E=S"));
    assert!(!refused_for_groups(&big, "A=G0,B=G1,C=S,D=G1,E=S"));
    // At 65,535 iterations every one of them fits.
    let fits = listing1_on_h100(65_535);
    for m in ["A=W1,B=L1,C=S,D=L1,E=S", "A=W2,B=L2,C=S,D=L2,E=S", "A=G1,B=G0,C=S,D=G0,E=S"] {
        assert!(!refused_for_groups(&fits, m), "{m}");
    }
}

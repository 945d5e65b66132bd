//! Every valid mapping of a space under a profile with a grid limit (the `h100` profile's
//! `max_groups`, CUDA's 65,535 blocks in y and z) lowers to a launch CUDA accepts, as code
//! generation computes and checks it: the space once offered `mapWrg(1)` over 70,000
//! iterations, which code generation refused.

use mapsat_constraints::{Options, Space};
use mapsat_ir::profile::Profile;

#[test]
fn valid_mappings_launch_within_cudas_grid() {
    let src = std::fs::read_to_string(format!("{}/../examples/listing1.lift", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let p = mapsat_ir::parse(&src).expect("parse");
    let profile = Profile::builtin("h100").expect("h100");
    let sizes = mapsat_ir::Sizes::new().with("I", 70_000);
    let space =
        Space::generate(&p, Options { profile: Some(profile.clone()), sizes: sizes.clone(), ..Options::default() })
            .expect("space");
    let mappings = space.first(u64::MAX).expect("enumerates");
    assert!(!mappings.is_empty());
    for m in &mappings {
        let local = space.suggested_local_size(m).expect("local sizes");
        let q = space.apply(&p, m).expect("applies");
        let opts = mapsat_codegen::Options::for_profile(sizes.clone(), local, &profile);
        let k = mapsat_codegen::lower(&q, &opts).unwrap_or_else(|e| panic!("{}: {e}", space.show(m)));
        mapsat_codegen::limits::check_cuda(&k.launch).unwrap_or_else(|e| panic!("{}: {e}", space.show(m)));
    }
}

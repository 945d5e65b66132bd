//! The space's local-memory limit against code generation's: under a device profile with
//! little local memory, every mapping the space accepts for an example (each stage of one with
//! kernel boundaries) lowers within that memory. A mapping whose kernel would need more (a
//! `mapLcl`'s result, or that of a `mapSeq` a work group computes together, kept in local
//! memory) is refused by the space, with a constraint naming the map, not accepted and then
//! refused by code generation (or, without a profile in `run`, aborted by the OpenCL driver).

use mapsat_constraints::{Error as SpaceError, Options, Space};
use mapsat_ir::profile::Profile;
use std::path::Path;

/// A device with `bytes` of local memory, else pocl's CPU device.
fn small(bytes: u64) -> Profile {
    let mut p = Profile::builtin("pocl-cpu").expect("pocl-cpu profile");
    p.local_mem_bytes = bytes;
    p
}

#[test]
fn every_accepted_mapping_fits_in_the_local_memory() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("examples").flatten().map(|e| e.path()).collect();
    files.sort();
    let (mut checked, mut failures) = (0, Vec::new());
    for bytes in [64, 256, 1024] {
        let profile = small(bytes);
        for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "lift")) {
            let whole = mapsat_ir::parse(&std::fs::read_to_string(f).expect("read")).expect("parse");
            for stage in mapsat_ir::stages::split(&whole).expect("stages") {
                let p = stage.program;
                let sizes = p.default_sizes();
                let options = Options { profile: Some(profile.clone()), sizes: sizes.clone(), ..Options::default() };
                let space = match Space::generate(&p, options) {
                    Ok(s) => s,
                    Err(SpaceError::NoMaps) => continue,
                    Err(e) => panic!("{}: {e}", p.name),
                };
                for m in space.sample(40, 7).expect("sample") {
                    let shown = space.show(&m).to_string();
                    let q = space.apply(&p, &m).expect("apply");
                    let local = space.explain(&m).expect("explain").local_sizes;
                    let local = if space.local_size_count() > 0 { local } else { None };
                    let opts = mapsat_codegen::Options::for_profile(sizes.clone(), local, &profile);
                    checked += 1;
                    if let Err(e) = mapsat_codegen::lower(&q, &opts) {
                        failures.push(format!("{} {shown} at {bytes} B: {e}", p.name));
                    }
                }
            }
        }
    }
    eprintln!("{checked} mappings lowered, {} refused", failures.len());
    assert!(checked > 100, "{checked}");
    assert!(failures.is_empty(), "{} refused:\n{}", failures.len(), failures.join("\n"));
}

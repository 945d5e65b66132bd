//! Soundness of the mapping space, end to end: for every example of `examples/` (every stage of
//! one with kernel boundaries, `mapsat_ir::stages`, as a program of its own), valid mappings
//! sampled by the constraint solver are applied to the program (`Space::apply`: kinds set, `F`
//! fused into its outer map), lowered to OpenCL, run on the first OpenCL device (pocl in CI) at
//! two size sets and compared with the interpreter on the original program. Every mapping the
//! solver accepts must lower and compute the right result.
//!
//! The space is generated for the `pocl-cpu` profile, at each size set (the constraints are
//! evaluated at a program's default sizes): a sampled mapping runs at the size sets where it is
//! valid, and when the space has tuning parameters (local sizes) with the work-group size the
//! solver chose with the mapping at those sizes.
//!
//! Samples per example: `MAPSAT_SOUNDNESS_SAMPLES` (default 3, for the everyday run;
//! `scripts/test.sh`, and so CI, sets 50). Without an OpenCL platform the device runs are
//! skipped with a message (applying and lowering are still checked), unless
//! `MAPSAT_REQUIRE_OPENCL=1`.

mod common;

use common::opencl_present;
use mapsat_constraints::{Error as SpaceError, Options, Space};
use mapsat_ir::Sizes;
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};
use std::path::Path;

/// The second size set of each example (the first is its defaults). Divisibility is kept as at
/// the defaults, where the constraints are evaluated (split factors, vector width 4).
fn second_sizes(name: &str) -> Option<&'static [(&'static str, i64)]> {
    Some(match name {
        "blur2d" => &[("H", 8), ("W", 12)],
        "conv" => &[("inH", 6), ("inW", 10), ("inChs", 3), ("outChs", 4)],
        "conv_blocked" => &[("inH", 6), ("inW", 9), ("inChs", 3), ("outChs", 6), ("tH", 3), ("tW", 3), ("oB", 3)],
        "conv_hwio" => &[("inH", 6), ("inW", 9), ("inChs", 3), ("outChs", 32), ("tH", 3), ("tW", 3)],
        "conv_outer" => &[("inH", 6), ("inW", 9), ("inChs", 3), ("outChs", 32), ("tH", 3), ("tW", 3)],
        "conv_windows" => &[("inH", 5), ("inW", 7), ("inChs", 3), ("outChs", 5)],
        "dot" => &[("N", 128)],
        "listing1" => &[("I", 2), ("J", 4), ("K", 8)],
        "listing3" => &[("n", 128)],
        "matmul" => &[("M", 4), ("K", 8), ("N", 12)],
        "linear" => &[("M", 5), ("K", 7), ("N", 12)],
        "mlp" => &[("M", 5), ("K", 7), ("H", 12), ("N", 6)],
        "matmul_lowlevel" => &[("M", 16), ("K", 8), ("N", 8)],
        "matmul_outer" => &[("M", 12), ("K", 5), ("N", 32), ("tM", 3)],
        "matmul_tiled" => &[("M", 16), ("K", 8), ("N", 12)],
        "sepblur" => &[("H", 7), ("W", 5)],
        "sharpen" => &[("H", 9), ("W", 6)],
        "jacobi2d" => &[("H", 5), ("W", 11)],
        "stencil1d" => &[("N", 32)],
        "sum_partial" => &[("N", 128)],
        _ => return None,
    })
}

fn samples() -> usize {
    std::env::var("MAPSAT_SOUNDNESS_SAMPLES").ok().and_then(|s| s.parse().ok()).unwrap_or(3)
}

#[test]
fn sampled_mappings_run_correctly() {
    let device = opencl_present();
    let n = samples();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("examples").flatten().map(|e| e.path()).collect();
    files.sort();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut not_valid_at = 0;
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "lift")) {
        let example = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let whole = mapsat_ir::parse(&std::fs::read_to_string(f).expect("read")).expect("parse");
        // A program with kernel boundaries is mapped one kernel (stage) at a time.
        for stage in mapsat_ir::stages::split(&whole).expect("stages") {
            let p = stage.program;
            let name = if p.name == whole.name { example.clone() } else { format!("{example}/{}", p.name) };
            // The pocl CPU device's limits (family 11): work-group size, local memory.
            let profile = mapsat_ir::profile::Profile::builtin("pocl-cpu").expect("pocl-cpu profile");
            let max_group = profile.max_work_group_size as i64;
            let space = match Space::generate(&p, Options { profile: Some(profile), ..Options::default() }) {
                Ok(s) => s,
                // sum.lift has no map: nothing to map, nothing to check.
                Err(SpaceError::NoMaps) => {
                    eprintln!("{name}: no map, skipped");
                    continue;
                }
                Err(e) => panic!("{name}: {e}"),
            };
            let extra =
                second_sizes(&example).unwrap_or_else(|| panic!("{example}: add its second size set to this test"));
            let mut size_sets = vec![Sizes::new()];
            if !extra.is_empty() {
                size_sets.push(extra.iter().map(|(k, v)| (k.to_string(), *v)).collect());
            }
            // Inputs and the interpreter's result on the original program, once per size set, and
            // the space at those sizes (the constraints are evaluated at a program's default sizes:
            // a mapping, and the local sizes chosen with it, are valid for the sizes they were
            // checked at).
            let mut cases = Vec::new();
            for (k, given) in size_sets.iter().enumerate() {
                let sizes = p.resolve_sizes(given).expect("sizes");
                let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 11 + k as u64).expect("inputs");
                let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
                let options =
                    Options { profile: space.options().profile.clone(), sizes: sizes.clone(), ..Options::default() };
                let space_at = Space::generate(&p, options).expect("space at these sizes");
                cases.push((sizes, inputs, want, space_at));
            }
            let mappings = space.sample(n, 2024).expect("sample");
            assert!(!mappings.is_empty(), "{name}: no valid mapping");
            eprintln!("{name}: {} sampled mappings", mappings.len());
            for m in &mappings {
                let shown = space.show(m).to_string();
                let q = match space.apply(&p, m) {
                    Ok(q) => q,
                    Err(e) => {
                        failures.push(format!("{name} {shown}: apply: {e}"));
                        continue;
                    }
                };
                // At concrete sizes: after a fusion the symbolic checker cannot always simplify
                // `(a*b)/b` back to `a` when `b` is a polynomial (conv's `inW - kerW + 3`).
                if let Err(e) = mapsat_ir::check::check_with_sizes(&q, &cases[0].0) {
                    failures.push(format!("{name} {shown}: the mapped program does not type-check: {}", e.message));
                    continue;
                }
                for (sizes, inputs, want, space_at) in &cases {
                    // The work-group size: the tuning parameters the solver chose at these sizes (they
                    // divide the lengths of the mapLcl loops a barrier lies in), else codegen's
                    // default. A mapping valid at the default sizes may not be at others.
                    let e = space_at.explain(m).expect("explain");
                    if !e.valid {
                        not_valid_at += 1;
                        continue;
                    }
                    let local = if space_at.local_size_count() > 0 { e.local_sizes } else { None };
                    checked += 1;
                    let opts = mapsat_codegen::Options {
                        sizes: sizes.clone(),
                        local: local.clone(),
                        max_work_group_size: Some(max_group),
                        ..Default::default()
                    };
                    if let Err(e) = mapsat_codegen::lower(&q, &opts) {
                        failures.push(format!("{name} {shown} {sizes:?}: codegen: {e}"));
                        continue;
                    }
                    if !device {
                        continue;
                    }
                    let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
                    match measure::run(&q, sizes, local.clone(), inputs, DeviceSpec::OpenCl(0, 0), &cfg) {
                        Ok(r) => {
                            let c = r.output.compare(want, 1e-3, 1e-4);
                            if !c.ok {
                                failures.push(format!(
                                    "{name} {shown} {sizes:?}: {} mismatches, first {:?}",
                                    c.mismatches, c.first_mismatch
                                ));
                            }
                        }
                        Err(e) => failures.push(format!("{name} {shown} {sizes:?}: {e}")),
                    }
                }
            }
        }
    }
    eprintln!(
        "{checked} runs, {} failures ({not_valid_at} mapping/size pairs skipped: not valid at those sizes)",
        failures.len()
    );
    assert!(checked > 0);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The valid mappings of the paper's Table 1 on Listing 1 (`examples/listing1.lift`, whose
/// buffer is `toLocal`), run with codegen's default work-group size. M1 (A=G0, the rest
/// sequential) keeps the buffer in local memory as each work item's own scratch space: four
/// work items share a work group here, so a buffer shared between them would race.
#[test]
fn table1_mappings_run_correctly() {
    let device = opencl_present();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/listing1.lift");
    let p = mapsat_ir::parse(&std::fs::read_to_string(path).expect("read")).expect("parse");
    let fused = Space::generate(&p, Options::default()).expect("space");
    let unfused = Space::generate(&p, Options { fusion: false, ..Options::default() }).expect("space");
    let table = [
        (&unfused, "A=G0,B=S,C=S,D=S,E=S"),
        (&fused, "A=G0,B=S,C=F,D=S,E=F"),
        (&fused, "A=W0,B=L0,C=S,D=L0,E=S"),
        (&fused, "A=W0,B=L0,C=V,D=S,E=L0"),
    ];
    for given in [vec![], vec![("I", 8), ("J", 4), ("K", 8)], vec![("I", 128), ("J", 4), ("K", 8)]] {
        let given: Sizes = given.into_iter().collect();
        let sizes = p.resolve_sizes(&given).expect("sizes");
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 5).expect("inputs");
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        for (space, text) in table {
            let m = space.parse_mapping(text).expect("mapping");
            assert!(space.explain(&m).expect("explain").valid, "{text}");
            let q = space.apply(&p, &m).expect("apply");
            let opts = mapsat_codegen::Options { sizes: sizes.clone(), ..Default::default() };
            let kernel = mapsat_codegen::lower(&q, &opts).unwrap_or_else(|e| panic!("{text}: {e}"));
            if text.starts_with("A=G0") {
                // One slice of the local buffer per work item of the work group (pocl runs the
                // work items of a group one after the other, so only the layout shows this).
                let ls = kernel.launch.local[0];
                assert!(ls > 1, "{text}: {:?}", kernel.launch);
                let (j, k) = (sizes["J"], sizes["K"]);
                let dims: Vec<Vec<i64>> = kernel.locals.iter().map(|&b| kernel.buf(b).dims.clone()).collect();
                assert!(
                    dims.len() == 1 && dims[0][0] == ls && dims[0].iter().product::<i64>() == ls * j * k,
                    "{text}: {dims:?}"
                );
                let src = mapsat_codegen::print(&kernel, mapsat_codegen::Dialect::OpenCl).expect("print");
                assert!(
                    sizes["I"] == ls || src.contains(&format!("% {ls}")),
                    "{text}: the slice is not indexed by the local id:\n{src}"
                );
            }
            if !device {
                continue;
            }
            let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
            let r = measure::run(&q, &sizes, None, &inputs, DeviceSpec::OpenCl(0, 0), &cfg).expect("run");
            let c = r.output.compare(&want, 1e-4, 1e-5);
            assert!(c.ok, "{text} {sizes:?}: {} mismatches, first {:?}", c.mismatches, c.first_mismatch);
        }
    }
}

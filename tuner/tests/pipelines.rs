//! Generated multi-stage pipelines (issue #9's differential test, first part): random 1-D
//! pipelines of 2 to 5 stages (point-wise maps, zips with the input, 3-tap sums over sliding
//! windows, neighbour reads), each stage's result kept in a default buffer or materialized with
//! `toGlobal`. For every program, mappings the space accepts (up to [`PER_PROGRAM`], sampled
//! at random) are applied, lowered and run on the first OpenCL device (pocl in CI) against
//! the interpreter: "the space says valid" must imply "code generation lowers it, and it
//! computes the right result". The counts are printed (`--no-capture`).

mod common;

use common::{opencl_present, Rng};
use mapsat_constraints::{Options, Space};
use mapsat_ir::Sizes;
use mapsat_tuner::measure::{self, DeviceSpec, MappedStage, RunConfig};

const PROGRAMS: u64 = 16;
const PER_PROGRAM: usize = 8;

/// One stage reading `prev` (and the input `xs`).
fn stage(g: &mut Rng, prev: &str) -> String {
    match g.below(4) {
        0 => format!("map(fun(x => x * {}.5 + 1.0), {prev})", g.below(3)),
        1 => format!("map(fun(p => p.0 + p.1), zip(xs, {prev}))"),
        2 => format!("map(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, {prev})))"),
        _ => format!("map(fun(p => p.0 * at(0, p.1)), zip({prev}, slide(2, 1, padClamp(1, 0, {prev}))))"),
    }
}

/// A pipeline of 2 to 5 stages over `xs: [f32]N`.
fn pipeline(seed: u64) -> String {
    let mut g = Rng(seed);
    let stages = 2 + g.below(4);
    let mut body = String::new();
    let mut prev = "xs".to_string();
    for k in 0..stages - 1 {
        let s = stage(&mut g, &prev);
        let s = if g.below(2) == 0 { format!("toGlobal({s})") } else { s };
        body += &format!("  let y{k} = {s} in\n");
        prev = format!("y{k}");
    }
    body += &format!("  {}\n", stage(&mut g, &prev));
    format!("size N = 32\ndef pipe{seed}(xs: [f32]N) =\n{body}")
}

#[test]
fn valid_mappings_of_generated_pipelines_lower_and_run_correctly() {
    let device = opencl_present();
    let profile = mapsat_ir::profile::Profile::builtin("pocl-cpu").expect("pocl-cpu profile");
    let (mut checked, mut parallel, mut failures) = (0, 0, Vec::new());
    for seed in 0..PROGRAMS {
        let text = pipeline(seed);
        let p = mapsat_ir::parse(&text).unwrap_or_else(|e| panic!("{text}\n{e:?}"));
        mapsat_ir::check::check(&p).unwrap_or_else(|e| panic!("{text}\n{}", e.message));
        let sizes = p.resolve_sizes(&Sizes::new()).expect("sizes");
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, seed).expect("inputs");
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        let options = Options { profile: Some(profile.clone()), ..Options::default() };
        let space = Space::generate(&p, options).expect("space");
        for m in space.sample(PER_PROGRAM, seed).expect("sample") {
            let shown = format!("pipe{seed} {}", space.show(&m));
            let e = space.explain(&m).expect("explain");
            let local = if space.local_size_count() > 0 { e.local_sizes } else { None };
            let q = match space.apply(&p, &m) {
                Ok(q) => q,
                Err(e) => {
                    failures.push(format!("{shown}: apply: {e}"));
                    continue;
                }
            };
            checked += 1;
            parallel += is_parallel(&m) as usize;
            let opts = mapsat_codegen::Options {
                sizes: sizes.clone(),
                local: local.clone(),
                max_work_group_size: Some(profile.max_work_group_size as i64),
                ..Default::default()
            };
            if let Err(e) = mapsat_codegen::lower(&q, &opts) {
                failures.push(format!("{shown}: the space accepts it, code generation refuses it: {e}\n{text}"));
                continue;
            }
            if !device {
                continue;
            }
            let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
            match measure::run(&q, &sizes, local, &inputs, DeviceSpec::OpenCl(0, 0), &cfg) {
                Ok(r) => {
                    let c = r.output.compare(&want, 1e-3, 1e-4);
                    if !c.ok {
                        failures.push(format!("{shown}: {} wrong elements\n{text}", c.mismatches));
                    }
                }
                Err(e) => failures.push(format!("{shown}: run: {e}")),
            }
        }
    }
    eprintln!("{PROGRAMS} pipelines: {checked} valid mappings lowered and run, {parallel} of them parallel");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(parallel > 0, "no parallel mapping in any pipeline");
}

/// A mapping with a parallel map.
fn is_parallel(m: &mapsat_constraints::Mapping) -> bool {
    m.codes.iter().any(|c| c.map_kind().is_some_and(|k| k.dim().is_some()))
}

/// The same pipelines cut at their kernel boundaries (`mapsat_ir::stages`): each stage's
/// sampled mappings, combined, run as a sequence of kernels that computes the whole program.
#[test]
fn staged_pipelines_run_correctly_as_kernel_sequences() {
    let device = opencl_present();
    let profile = mapsat_ir::profile::Profile::builtin("pocl-cpu").expect("pocl-cpu profile");
    let (mut sequences, mut kernels, mut parallel, mut failures) = (0, 0, 0, Vec::new());
    for seed in 0..PROGRAMS {
        let text = pipeline(seed);
        let p = mapsat_ir::parse(&text).expect("parses");
        let split = mapsat_ir::stages::split(&p).expect("stages");
        let sizes = p.resolve_sizes(&Sizes::new()).expect("sizes");
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, seed).expect("inputs");
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        // Per stage: its sampled valid mappings, applied, with their work-group sizes.
        let mut choices = Vec::new();
        for s in &split {
            let options = Options { profile: Some(profile.clone()), ..Options::default() };
            let space = Space::generate(&s.program, options).expect("space");
            // A stage that is one step (no `let` of its own, whose neighbour reads would need
            // the intermediate staged or recomputed) has a parallel mapping.
            let one_step = !s.program.nodes.iter().any(|n| matches!(n, mapsat_ir::Node::Let(..)));
            if one_step && !space.sample(64, seed).expect("sample").iter().any(is_parallel) {
                failures.push(format!("pipe{seed} {}: no parallel mapping\n{text}", s.program.name));
            }
            let mut mapped = Vec::new();
            for m in space.sample(PER_PROGRAM / 2, seed).expect("sample") {
                let e = space.explain(&m).expect("explain");
                let local = if space.local_size_count() > 0 { e.local_sizes } else { None };
                let q = space.apply(&s.program, &m).expect("applies");
                parallel += is_parallel(&m) as usize;
                mapped.push(MappedStage { program: q, inputs: s.inputs.clone(), local });
            }
            kernels += mapped.len();
            choices.push(mapped);
        }
        let rounds = choices.iter().map(Vec::len).max().unwrap_or(0);
        for r in 0..rounds {
            let seq: Vec<MappedStage> = choices
                .iter()
                .map(|c| {
                    let m = &c[r % c.len()];
                    MappedStage { program: m.program.clone(), inputs: m.inputs.clone(), local: m.local.clone() }
                })
                .collect();
            for s in &seq {
                let opts =
                    mapsat_codegen::Options { sizes: sizes.clone(), local: s.local.clone(), ..Default::default() };
                if let Err(e) = mapsat_codegen::lower(&s.program, &opts) {
                    failures.push(format!(
                        "pipe{seed} {}: the space accepts it, code generation refuses it: {e}",
                        s.program.name
                    ));
                }
            }
            sequences += 1;
            if !device {
                continue;
            }
            let cfg = RunConfig { warmup: 0, runs: 1, check: true, ..RunConfig::default() };
            match measure::run_stages(&seq, &sizes, &inputs, DeviceSpec::OpenCl(0, 0), &cfg) {
                Ok(reports) => {
                    let bad = reports.iter().filter(|r| r.check.as_ref().is_some_and(|c| !c.ok)).count();
                    let last = reports.last().expect("a kernel").output.compare(&want, 1e-3, 1e-4);
                    if bad > 0 || !last.ok {
                        failures.push(format!(
                            "pipe{seed} round {r}: {bad} wrong kernels, {} wrong elements\n{text}",
                            last.mismatches
                        ));
                    }
                }
                Err(e) => failures.push(format!("pipe{seed} round {r}: {e}")),
            }
        }
    }
    eprintln!("{PROGRAMS} pipelines cut into kernels: {kernels} kernel mappings ({parallel} parallel), {sequences} sequences run");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

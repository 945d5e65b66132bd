//! `emit` and `run` of a program with kernel boundaries (`let x = toGlobal(...) in` at the top
//! of its body, [`ir::stages`]): one kernel per stage, launched in order. Each stage is mapped
//! (its part of `--mapping`, or the kinds written in it) and checked like a program of its own.

use super::kernels::Mapped;
use super::{CliResult, Failure, Source};
use mapsat::ir::{self, stages, stages::Stage, Program, Sizes};
use mapsat::local::Locals;
use mapsat_codegen::{Dialect, Manifest};
use mapsat_tuner::measure::{self, DeviceSpec, MappedStage, RunConfig};
use mapsat_tuner::tune::report::fmt_gflops;
use std::path::Path;

pub(super) fn split_mapping(
    mapping: &str,
    labels: &[Vec<String>],
    maps: &dyn Fn() -> Vec<String>,
) -> CliResult<Vec<String>> {
    mapsat::stages::split_mapping(mapping, labels, maps).map_err(super::mapping::failure)
}

/// Each stage mapped as `how` says ([`mapsat::stages::map`]), with its work-group size; the
/// warnings of hand-mapped stages go to stderr.
fn mapped(
    src: &Source,
    split: Vec<Stage>,
    sizes: &Sizes,
    how: &Mapped,
    local: &Locals,
    default_profile: impl FnOnce() -> Option<ir::profile::Profile>,
) -> CliResult<Vec<MappedStage>> {
    let names: Vec<&str> = split.iter().map(|s| s.program.name.as_str()).collect();
    local.check_kernels(&names)?;
    let profile = match how.profile {
        Some(name) => Some(ir::profile::Profile::load(name).map_err(|e| Failure::Usage(e.to_string()))?),
        None => default_profile(),
    };
    let render = |e: &dyn ir::diag::Diagnose| ir::diag::render(&src.name, &src.text, e);
    let m = mapsat::stages::map(split, sizes, how.mapping, profile, local, &render).map_err(super::mapping::failure)?;
    for w in &m.warnings {
        eprint!("{w}");
    }
    Ok(m.stages)
}

/// A failure, said to be in stage `name`.
fn in_stage(name: &str, e: Failure) -> Failure {
    match e {
        Failure::Rejected(m) => Failure::Rejected(format!("in the kernel of stage `{name}`:\n{m}")),
        Failure::Usage(m) => Failure::Usage(format!("in the kernel of stage `{name}`: {m}")),
    }
}

/// `mapsat emit` of a program with kernel boundaries: a kernel and manifest per stage, and
/// `NAME.pipeline.json` with the order of the kernels and where each one's inputs come from.
pub(super) fn emit(
    src: &Source,
    p: &Program,
    sizes: &Sizes,
    how: &Mapped,
    dialect: Dialect,
    local: &Locals,
    out: &Path,
) -> CliResult<()> {
    let split = stages::split_at(p, sizes).map_err(|e| src.reject(&e))?;
    let stages = mapped(src, split, sizes, how, local, || mapsat::mapping::default_profile(dialect))?;
    let mut emitted = Vec::new();
    for s in &stages {
        let opts = how.codegen_options(sizes.clone(), s.local.clone())?;
        let (code, manifest) = mapsat_codegen::emit(&s.program, &opts, dialect)
            .map_err(|e| in_stage(&s.program.name, src.reject_codegen(&e)))?;
        emitted.push((code, manifest));
    }
    let manifests: Vec<&Manifest> = emitted.iter().map(|(_, m)| m).collect();
    let pipeline = mapsat::stages::pipeline_json(p, &stages, &manifests);
    let global_bytes = pipeline["global_bytes"].as_u64().unwrap_or_default();
    super::create_dir(out)?;
    let ppath = out.join(format!("{}.pipeline.json", p.name));
    let input = Path::new(&src.name);
    super::keep_inputs(&ppath, &[input])?;
    for (_, m) in &emitted {
        super::keep_inputs(&out.join(&m.source), &[input])?;
        super::keep_inputs(&out.join(format!("{}.json", m.entry)), &[input])?;
    }
    super::write(&ppath, &(serde_json::to_string_pretty(&pipeline).unwrap_or_default() + "\n"))?;
    for (code, m) in &emitted {
        let (kpath, mpath) = (out.join(&m.source), out.join(format!("{}.json", m.entry)));
        super::write(&kpath, code)?;
        super::write(&mpath, &(m.to_json() + "\n"))?;
        let l = &m.launch;
        outln!("wrote {} and {}: launch global {:?}, local {:?}", kpath.display(), mpath.display(), l.global, l.local);
    }
    outln!(
        "wrote {}: {} kernels, launched in this order; global memory {global_bytes} B in all (inputs, each kernel's result and temporaries)",
        ppath.display(),
        emitted.len()
    );
    Ok(())
}

/// `mapsat run` of a program with kernel boundaries: the kernels run in order, each checked
/// (with `--check`) against the interpreter on its inputs, and the last one's result against
/// the interpreter on the whole program.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    src: &Source,
    p: &Program,
    sizes: &Sizes,
    how: &Mapped,
    device: DeviceSpec,
    local: &Locals,
    inputs: &[ir::interp::Tensor],
    cfg: &RunConfig,
) -> CliResult<ir::interp::Tensor> {
    let split = stages::split_at(p, sizes).map_err(|e| src.reject(&e))?;
    let stages = mapped(src, split, sizes, how, local, || measure::opencl_profile(device).ok())?;
    for s in &stages {
        if let Some(e) = how.refused_under_profile(&s.program, sizes, s.local.clone(), device.dialect())? {
            return Err(in_stage(&s.program.name, src.reject_codegen(&e)));
        }
    }
    let reports = measure::run_stages(&stages, sizes, inputs, device, cfg).map_err(|e| match e {
        measure::MeasureError::CodegenIn { kernel, error } => in_stage(&kernel, src.reject_codegen(&error)),
        e => Failure::Rejected(format!("error: {e}")),
    })?;
    let Some(last) = reports.last() else {
        return Err(Failure::Rejected("error: internal error: a program of no kernel (please report it)".into()));
    };
    outln!("device: {}", last.device);
    let (mut total, mut flops) = (0.0, 0);
    for (s, r) in stages.iter().zip(&reports) {
        let rate = fmt_gflops(r.gflops());
        outln!("kernel {}: {:.4} ms (median of {}), {rate}", s.program.name, r.median_ms, cfg.runs);
        total += r.median_ms;
        flops += r.flops;
        if let Some(c) = r.check.as_ref().filter(|c| !c.ok) {
            return Err(Failure::Rejected(format!(
                "error: the kernel of stage `{}` computes something else than the interpreter in {} elements",
                s.program.name, c.mismatches
            )));
        }
    }
    outln!("time: {total:.4} ms ({} kernels); {}", reports.len(), fmt_gflops(measure::gflops(flops, total)));
    if cfg.check {
        let want = ir::interp::eval(p, sizes, inputs).map_err(|e| Failure::Rejected(format!("error: {e}")))?;
        let c = last.output.compare(&want, cfg.rtol, cfg.atol);
        if !c.ok {
            return Err(Failure::Rejected(format!(
                "error: the kernels' result differs from the interpreter's in {} elements",
                c.mismatches
            )));
        }
        outln!("check: ok (max abs diff {:.3e})", c.max_abs_diff);
    }
    Ok(last.output.clone())
}

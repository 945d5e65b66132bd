//! `emit` and `run` of a program with kernel boundaries (`let x = toGlobal(...) in` at the top
//! of its body, [`ir::stages`]): one kernel per stage, launched in order. Each stage is mapped
//! (its part of `--mapping`, or the kinds written in it) and checked like a program of its own.

use super::kernels::Mapped;
use super::local::Locals;
use super::{CliResult, Failure, Source};
use mapsat::ir::{self, stages, stages::Stage, Program, Sizes};
use mapsat_codegen::kir::{Role, Space};
use mapsat_codegen::{Dialect, Manifest};
use mapsat_tuner::measure::{self, DeviceSpec, MappedStage, RunConfig};
use mapsat_tuner::tune::report::fmt_gflops;
use std::path::Path;

/// The parts of `mapping` (`A=G0,B=S,...`) that name maps of each kernel, given each kernel's
/// map labels; a part naming a map of no kernel is an error.
pub(super) fn split_mapping(mapping: &str, labels: &[Vec<String>]) -> CliResult<Vec<String>> {
    let mut out = vec![Vec::new(); labels.len()];
    for part in mapping.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let label = part.split_once('=').map_or(part, |(l, _)| l).trim();
        let Some(k) = labels.iter().position(|ls| ls.iter().any(|l| l == label)) else {
            let known: Vec<&str> = labels.iter().flatten().map(String::as_str).collect();
            return Err(Failure::Usage(format!(
                "unknown map `{label}` in the mapping (the maps are: {})",
                known.join(", ")
            )));
        };
        out[k].push(part);
    }
    Ok(out.into_iter().map(|parts| parts.join(",")).collect())
}

/// Each stage mapped as `how` says, with its work-group size.
fn mapped(
    src: &Source,
    stages: Vec<Stage>,
    sizes: &Sizes,
    how: &Mapped,
    local: &Locals,
    default_profile: impl Fn() -> Option<ir::profile::Profile>,
) -> CliResult<Vec<MappedStage>> {
    let parts = match how.mapping {
        Some(m) => {
            let labels: Vec<Vec<String>> = stages.iter().map(|s| s.program.map_labels()).collect();
            split_mapping(m, &labels)?.into_iter().map(Some).collect()
        }
        None => vec![None; stages.len()],
    };
    let names: Vec<&str> = stages.iter().map(|s| s.program.name.as_str()).collect();
    local.check_kernels(&names)?;
    let mut out = Vec::with_capacity(stages.len());
    for (s, part) in stages.into_iter().zip(parts) {
        let name = s.program.name.clone();
        let how = Mapped { mapping: part.as_deref(), profile: how.profile };
        let (program, local) =
            how.program(s.program, sizes, local.of(&name), &default_profile).map_err(|e| in_stage(&name, e))?;
        ir::check::check(&program).map_err(|e| src.reject(&e))?;
        out.push(MappedStage { program, inputs: s.inputs, local });
    }
    Ok(out)
}

/// A failure, said to be in stage `name`.
fn in_stage(name: &str, e: Failure) -> Failure {
    match e {
        Failure::Rejected(m) => Failure::Rejected(format!("in the kernel of stage `{name}`:\n{m}")),
        Failure::Usage(m) => Failure::Usage(format!("in the kernel of stage `{name}`: {m}")),
    }
}

/// How a stage's parameter is fed, for the pipeline file: `param:NAME` or `stage:ENTRY`.
fn source_name(i: stages::Input, p: &Program, stages: &[MappedStage]) -> String {
    match i {
        stages::Input::Param(j) => format!("param:{}", p.params[j as usize].name),
        stages::Input::Stage(k) => format!("stage:{}", stages[k].program.name),
    }
}

/// The global memory the kernels use together: the program's inputs (once, however many
/// kernels read them), and each kernel's result and temporaries (a result read by later kernels
/// is their input, counted once).
fn global_bytes<'a>(stages: &[MappedStage], manifests: impl Iterator<Item = &'a Manifest>) -> u64 {
    let mut params = std::collections::BTreeMap::new();
    let mut own = 0;
    for (s, m) in stages.iter().zip(manifests) {
        for b in m.buffers.iter().filter(|b| b.space == Space::Global) {
            match (b.role, b.param.map(|i| s.inputs[i])) {
                (Role::Input, Some(stages::Input::Param(j))) => {
                    params.insert(j, b.bytes);
                }
                (Role::Input, _) => {}
                _ => own += b.bytes,
            }
        }
    }
    own + params.values().sum::<u64>()
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
    let global_bytes = global_bytes(&stages, emitted.iter().map(|(_, m)| m));
    let pipeline = serde_json::json!({
        "program": p.name,
        "global_bytes": global_bytes,
        "kernels": stages.iter().zip(&emitted).map(|(s, (_, m))| serde_json::json!({
            "entry": m.entry,
            "manifest": format!("{}.json", m.entry),
            "inputs": s.inputs.iter().map(|&i| source_name(i, p, &stages)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
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
) -> CliResult<()> {
    let split = stages::split_at(p, sizes).map_err(|e| src.reject(&e))?;
    let stages = mapped(src, split, sizes, how, local, || measure::opencl_profile(device).ok())?;
    let reports = measure::run_stages(&stages, sizes, inputs, device, cfg).map_err(|e| match e {
        measure::MeasureError::Codegen(c) => src.reject_codegen(&c),
        e => Failure::Rejected(format!("error: {e}")),
    })?;
    let Some(last) = reports.last() else { return Ok(()) };
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
    Ok(())
}

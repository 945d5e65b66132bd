//! `mapsat emit`, `mapsat run` and `mapsat devices`: code generation, measurement and device
//! limits.

use super::{all_sizes, load_inputs, CliResult, Failure, SizeArgs, Source};
use mapsat::ir;
use mapsat_codegen::{Dialect, Options};
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};
use std::path::Path;

/// Parses `--local 64,4,1`.
pub(super) fn parse_local(s: Option<&str>) -> CliResult<Option<Vec<i64>>> {
    let Some(s) = s else { return Ok(None) };
    let v: Result<Vec<i64>, _> = s.split(',').map(|x| x.trim().parse::<i64>()).collect();
    match v {
        Ok(v) if !v.is_empty() && v.len() <= 3 && v.iter().all(|x| *x > 0) => Ok(Some(v)),
        _ => Err(Failure::Usage(format!("--local expects 1 to 3 positive numbers like 64,4,1, got `{s}`"))),
    }
}

pub(super) fn emit(file: &Path, sizes: &SizeArgs, target: &str, local: Option<&str>, out: &Path) -> CliResult<()> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = all_sizes(&p, sizes)?;
    let dialect = Dialect::parse(target)
        .ok_or_else(|| Failure::Usage(format!("--target must be opencl or cuda, not `{target}`")))?;
    let opts = Options { sizes, local: parse_local(local)?, ..Options::default() };
    let (code, manifest) = mapsat_codegen::emit(&p, &opts, dialect).map_err(|e| src.reject(&e))?;
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::Rejected(format!("error: cannot create {}: {e}", out.display())))?;
    let kpath = out.join(&manifest.source);
    let mpath = out.join(format!("{}.json", manifest.entry));
    let json = manifest.to_json();
    for (path, text) in [(&kpath, code), (&mpath, json + "\n")] {
        std::fs::write(path, text)
            .map_err(|e| Failure::Rejected(format!("error: cannot write {}: {e}", path.display())))?;
    }
    let l = &manifest.launch;
    outln!("wrote {} and {}", kpath.display(), mpath.display());
    outln!(
        "launch: global {:?}, local {:?}; memory: global {} B, local {} B, private {} B/thread",
        l.global,
        l.local,
        manifest.memory.global_bytes,
        manifest.memory.local_bytes,
        manifest.memory.private_bytes
    );
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    file: &Path,
    sizes: &SizeArgs,
    device: &str,
    local: Option<&str>,
    inputs: &[String],
    seed: u64,
    check: bool,
    runs: usize,
) -> CliResult<()> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = all_sizes(&p, sizes)?;
    let device: DeviceSpec = device.parse().map_err(|e: measure::MeasureError| Failure::Usage(e.to_string()))?;
    let tensors = load_inputs(&src, &p, &sizes, inputs, Some(seed))?;
    let cfg = RunConfig { check, runs: runs.max(1), ..RunConfig::default() };
    let r = measure::run(&p, &sizes, parse_local(local)?, &tensors, device, &cfg).map_err(|e| match e {
        measure::MeasureError::Codegen(c) => src.reject(&c),
        e => Failure::Rejected(format!("error: {e}")),
    })?;
    outln!("device: {}", r.device);
    outln!("time: {:.4} ms (median of {}, min {:.4} ms); {:.2} GFLOP/s", r.median_ms, cfg.runs, r.min_ms, r.gflops());
    if let Some(c) = &r.check {
        if c.ok {
            outln!("check: ok (max abs diff {:.3e})", c.max_abs_diff);
        } else {
            let first =
                c.first_mismatch.map(|(i, g, w)| format!("; first at {i}: got {g}, expected {w}")).unwrap_or_default();
            return Err(Failure::Rejected(format!(
                "error: the kernel's result differs from the interpreter's in {} elements{first}",
                c.mismatches
            )));
        }
    }
    Ok(())
}

/// `mapsat devices`: the list of devices, or with `--profile DEVICE` that OpenCL device's limits
/// as a profile file on stdout.
pub(super) fn devices(profile: Option<&str>) -> CliResult<()> {
    let Some(spec) = profile else {
        for line in measure::list_devices() {
            outln!("{line}");
        }
        return Ok(());
    };
    let device = match spec.parse::<DeviceSpec>() {
        Ok(d @ DeviceSpec::OpenCl(..)) => d,
        _ => {
            return Err(Failure::Usage(format!(
                "--profile expects an OpenCL device, opencl:PLATFORM:DEVICE (e.g. opencl:0:0; see `mapsat devices`), not `{spec}`"
            )))
        }
    };
    let rejected = |e: measure::MeasureError| Failure::Rejected(format!("error: {e}"));
    let p = measure::opencl_profile(device).map_err(rejected)?;
    let text = measure::opencl_profile_toml(&p, device).map_err(rejected)?;
    outln!("{}", text.trim_end());
    Ok(())
}

//! `mapsat emit`, `mapsat run`, `mapsat devices` and `mapsat calibrate`: code generation,
//! measurement, device limits and rates.

use super::{checked_sizes, load_inputs, CliResult, Failure, SizeArgs, Source};
use mapsat::ir;
use mapsat::ir::profile::Profile;
use mapsat::local::Locals;
use mapsat_codegen::{Dialect, Options};
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};
use std::path::Path;

/// How the program to emit or run is mapped: written mapped, or mapped by `--mapping`.
pub(super) struct Mapped<'a> {
    pub(super) mapping: Option<&'a str>,
    pub(super) profile: Option<&'a str>,
}

impl Mapped<'_> {
    /// Code generation's options: the sizes, the work-group size, and the limits of the
    /// `--profile` when one is given.
    pub(super) fn codegen_options(&self, sizes: ir::Sizes, local: Option<Vec<i64>>) -> CliResult<Options> {
        let profile = match self.profile {
            Some(name) => Some(Profile::load(name).map_err(|e| Failure::Usage(e.to_string()))?),
            None => None,
        };
        Ok(Options::for_target(sizes, local, profile.as_ref()))
    }

    /// What code generation refuses of `p` under the `--profile`'s limits, when one is given:
    /// `run` lowers under the device's own limits, and ran a kernel that `emit` refused under
    /// the profile (a work group larger than it allows).
    pub(super) fn refused_under_profile(
        &self,
        p: &ir::Program,
        sizes: &ir::Sizes,
        local: Option<Vec<i64>>,
        dialect: Dialect,
    ) -> CliResult<Option<mapsat_codegen::CodegenError>> {
        if self.profile.is_none() {
            return Ok(None);
        }
        let opts = self.codegen_options(sizes.clone(), local)?;
        Ok(mapsat_codegen::emit(p, &opts, dialect).err())
    }

    /// The program to lower and its work-group size; `default_profile` gives the device limits
    /// of the mapping's space when no `--profile` is given.
    pub(super) fn program(
        &self,
        p: ir::Program,
        sizes: &ir::Sizes,
        local: Option<Vec<i64>>,
        default_profile: impl FnOnce() -> Option<Profile>,
    ) -> CliResult<(ir::Program, Option<Vec<i64>>)> {
        let profile = match self.profile {
            Some(name) => Some(Profile::load(name).map_err(|e| Failure::Usage(e.to_string()))?),
            None => default_profile(),
        };
        let prepared =
            mapsat::mapping::prepare(p, sizes, self.mapping, profile, local).map_err(super::mapping::failure)?;
        if let Some(w) = prepared.warning {
            eprint!("{w}");
        }
        Ok((prepared.program, prepared.local))
    }
}

pub(super) fn emit(
    file: &Path,
    sizes: &SizeArgs,
    how: Mapped,
    target: &str,
    local: &Locals,
    out: &Path,
) -> CliResult<()> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = checked_sizes(&src, &p, sizes)?;
    let dialect = Dialect::parse(target)
        .ok_or_else(|| Failure::Usage(format!("--target must be opencl or cuda, not `{target}`")))?;
    if ir::stages::count(&p) > 1 {
        return super::stages::emit(&src, &p, &sizes, &how, dialect, local, out);
    }
    local.check_kernels(&[&p.name])?;
    let local = local.of(&p.name);
    let (p, local) = how.program(p, &sizes, local, || mapsat::mapping::default_profile(dialect))?;
    let opts = how.codegen_options(sizes, local)?;
    let (code, manifest) = mapsat_codegen::emit(&p, &opts, dialect).map_err(|e| src.reject_codegen(&e))?;
    super::create_dir(out)?;
    let kpath = out.join(&manifest.source);
    let mpath = out.join(format!("{}.json", manifest.entry));
    for f in [&kpath, &mpath] {
        super::keep_inputs(f, &[file])?;
    }
    super::write(&kpath, &code)?;
    super::write(&mpath, &(manifest.to_json() + "\n"))?;
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
    how: Mapped,
    device: &str,
    local: &Locals,
    inputs: &[String],
    seed: u64,
    cfg: &RunConfig,
) -> CliResult<ir::interp::Tensor> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = checked_sizes(&src, &p, sizes)?;
    let device: DeviceSpec = device.parse().map_err(|e: measure::MeasureError| Failure::Usage(e.to_string()))?;
    if cfg.runs == 0 {
        return Err(Failure::Usage("--runs must be at least 1".into()));
    }
    let tensors = load_inputs(&src, &p, &sizes, inputs, Some(seed))?;
    if ir::stages::count(&p) > 1 {
        return super::stages::run(&src, &p, &sizes, &how, device, local, &tensors, cfg);
    }
    local.check_kernels(&[&p.name])?;
    let local = local.of(&p.name);
    let (p, local) = how.program(p, &sizes, local, || measure::opencl_profile(device).ok())?;
    if let Some(e) = how.refused_under_profile(&p, &sizes, local.clone(), device.dialect())? {
        return Err(src.reject_codegen(&e));
    }
    let r = measure::run(&p, &sizes, local, &tensors, device, cfg).map_err(|e| match e {
        measure::MeasureError::Codegen(c) => src.reject_codegen(&c),
        e => Failure::Rejected(format!("error: {e}")),
    })?;
    outln!("device: {}", r.device);
    let rate = mapsat_tuner::tune::report::fmt_gflops(r.gflops());
    outln!("time: {:.4} ms (median of {}, min {:.4} ms); {rate}", r.median_ms, cfg.runs, r.min_ms);
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
    Ok(r.output)
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

/// `mapsat calibrate`: the device's rates measured with micro-kernels, added to a profile (the
/// device's own limits, or `--target`), written as TOML.
pub(super) fn calibrate(device: &str, target: Option<&str>, output: Option<&Path>) -> CliResult<()> {
    let spec: DeviceSpec = device.parse().map_err(|e: measure::MeasureError| Failure::Usage(e.to_string()))?;
    let rejected = |e: measure::MeasureError| Failure::Rejected(format!("error: {e}"));
    let mut profile = match (target, spec) {
        (Some(t), _) => Profile::load(t).map_err(|e| Failure::Usage(e.to_string()))?,
        (None, DeviceSpec::OpenCl(..)) => measure::opencl_profile(spec).map_err(rejected)?,
        (None, DeviceSpec::Cuda(_)) => {
            mapsat_tuner::measure::cuda_driver().map_err(rejected)?;
            return Err(Failure::Usage("give the CUDA device's limits with --target (built-in: h100)".into()));
        }
    };
    // Where it goes is checked before the device is measured.
    if let Some(path) = output {
        let folder = path.parent().filter(|f| !f.as_os_str().is_empty());
        let why = match ir::files::check_writable(path) {
            Err(e) => Some(e.to_string()),
            Ok(()) if folder.is_some_and(|f| !f.is_dir()) => Some("its folder does not exist".into()),
            Ok(()) => None,
        };
        if let Some(why) = why {
            return Err(Failure::Rejected(format!("error: cannot write {}: {why}", path.display())));
        }
    }
    profile.rates = Some(mapsat_tuner::calibrate::calibrate(spec, &profile).map_err(rejected)?);
    let header = format!(
        "Device profile of {spec} ({}), with rates measured by `mapsat calibrate --device {spec}`.",
        profile.description
    );
    let text = profile
        .to_toml(&header, &mapsat_tuner::calibrate::notes())
        .map_err(|e| Failure::Rejected(format!("error: {e}")))?;
    match output {
        Some(path) => {
            if let Some(t) = target.map(Path::new).filter(|t| t.is_file()) {
                super::keep_inputs(path, &[t])?;
            }
            ir::files::write(path, &text)
                .map_err(|e| Failure::Rejected(format!("error: cannot write {}: {e}", path.display())))?;
            let r = profile.rates.as_ref().expect("rates were just measured");
            outln!(
                "wrote {}: {:.1} GFLOP/s, {:.1} GB/s, launch {:.1} us",
                path.display(),
                r.gflops,
                r.bandwidth_gbs,
                r.launch_us
            );
        }
        None => outln!("{}", text.trim_end()),
    }
    Ok(())
}

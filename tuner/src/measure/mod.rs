//! Running generated kernels on devices and checking them against the interpreter.
//!
//! - [`device`]: device names (`opencl:P:D`, `cuda:N`) and the list of devices;
//! - [`session`]: an open device that builds each kernel source once and runs it on inputs;
//! - `bind`: the host data of a kernel's arguments (inputs, poisoned output and temporaries);
//! - `opencl`, `cuda`: the runtimes, both loaded at run time (`opencl3` through the ICD loader,
//!   `cudarc` with NVRTC), so that mapsat builds and runs where neither is installed;
//! - [`profile`]: a real OpenCL device's limits as a device profile.
//!
//! [`run`] is the one-shot path of `mapsat run`: generate, open the device, run, time with
//! device events (warm-up, then the median of N runs), and compare with the interpreter
//! ([`mapsat_ir::interp::Tensor::compare`]).

#![allow(unsafe_code)]

mod bind;
mod cuda;
pub mod device;
pub mod memory;
mod opencl;
pub mod profile;
pub mod session;

pub use device::{cache_bytes, is_cpu, list_devices, DeviceSpec};
pub use profile::{
    opencl_profile, opencl_profile_toml, CPU_PRIVATE_GROUP_BYTES, CPU_PRIVATE_MEM_BYTES, GPU_PRIVATE_MEM_BYTES,
};
pub use session::{DeviceRun, Session};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mapsat_codegen::{CodegenError, Manifest, Options};
use mapsat_ir::interp::{self, Comparison, EvalError, Tensor};
use mapsat_ir::profile::ProfileError;
use mapsat_ir::{Program, Sizes};

/// Why a run failed (a failed comparison is not an error: see [`Comparison`]).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// Code generation refused the program.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// Code generation refused a kernel of a program of several ([`MeasureError::in_kernel`]).
    #[error("kernel `{kernel}`: {error}")]
    CodegenIn {
        /// The kernel's name.
        kernel: String,
        /// Why.
        error: CodegenError,
    },
    /// The device name could not be parsed or does not exist.
    #[error("{0}")]
    Device(String),
    /// The OpenCL runtime failed.
    #[error("OpenCL: {0}")]
    OpenCl(String),
    /// The kernel did not compile; the compiler's log follows.
    #[error("the kernel did not build:\n{log}")]
    Build {
        /// Build log.
        log: String,
    },
    /// CUDA is not available or failed.
    #[error("CUDA: {0}")]
    Cuda(String),
    /// Inputs do not fit the program.
    #[error("{0}")]
    Input(String),
    /// The caller stopped the run ([`RunConfig::cancel`]).
    #[error("the run was stopped before it ended")]
    Cancelled,
    /// The interpreter failed.
    #[error("interpreter: {0}")]
    Interp(#[from] EvalError),
    /// Host memory for the kernel's arguments could not be had.
    #[error("{0}")]
    HostMemory(EvalError),
    /// A device's figures do not make a valid profile.
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

type R<T> = Result<T, MeasureError>;

impl MeasureError {
    /// The error of the kernel `name` of a program of several: its message names the kernel
    /// (code generation's errors point into the source, the interpreter's are the program's).
    pub fn in_kernel(self, name: &str) -> MeasureError {
        let named = |m: String| format!("kernel `{name}`: {m}");
        match self {
            MeasureError::Device(m) => MeasureError::Device(named(m)),
            MeasureError::OpenCl(m) => MeasureError::OpenCl(named(m)),
            MeasureError::Cuda(m) => MeasureError::Cuda(named(m)),
            MeasureError::Input(m) => MeasureError::Input(named(m)),
            MeasureError::Codegen(error) => MeasureError::CodegenIn { kernel: name.to_string(), error },
            e => e,
        }
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Untimed runs first (the first run, whose output is checked, counts as one).
    pub warmup: usize,
    /// Timed runs (the median is reported).
    pub runs: usize,
    /// Compare with the interpreter.
    pub check: bool,
    /// Relative tolerance of the comparison.
    pub rtol: f64,
    /// Absolute tolerance of the comparison.
    pub atol: f64,
    /// Build OpenCL kernels with [`mapsat_codegen::REASSOCIATE`].
    pub reassociate: bool,
    /// Set from another thread, it stops the run before its next launch, kernel or check
    /// ([`MeasureError::Cancelled`]): a caller that stopped waiting (a timeout, Ctrl-C) leaves
    /// no launches going on in the background. A launch under way cannot be stopped.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig { warmup: 1, runs: 5, check: true, rtol: 1e-3, atol: 1e-4, reassociate: false, cancel: None }
    }
}

impl RunConfig {
    /// [`MeasureError::Cancelled`] once [`RunConfig::cancel`] is set.
    fn go_on(&self) -> R<()> {
        match &self.cancel {
            Some(c) if c.load(Ordering::Relaxed) => Err(MeasureError::Cancelled),
            _ => Ok(()),
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Device description.
    pub device: String,
    /// Median kernel time in milliseconds (device events).
    pub median_ms: f64,
    /// Fastest run in milliseconds.
    pub min_ms: f64,
    /// Floating-point operations of one run.
    pub flops: u64,
    /// Comparison with the interpreter, if asked for.
    pub check: Option<Comparison>,
    /// The device's result.
    pub output: Tensor,
    /// Launch shape used.
    pub manifest: Manifest,
}

impl RunReport {
    /// GFLOP/s at the median time.
    pub fn gflops(&self) -> f64 {
        gflops(self.flops, self.median_ms)
    }
}

/// `Ok` when the CUDA driver can be loaded: said before what else a CUDA device needs (its
/// profile) is asked for.
pub fn cuda_driver() -> R<()> {
    cuda::probe().map_err(MeasureError::Cuda)
}

/// GFLOP/s of `flops` operations in `ms` milliseconds (0 for a zero time).
pub fn gflops(flops: u64, ms: f64) -> f64 {
    if ms > 0.0 {
        flops as f64 / (ms * 1e6)
    } else {
        0.0
    }
}

/// The median of some times (0 for none).
pub fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The shape of the program's result at these sizes.
pub fn result_shape(p: &Program, sizes: &Sizes) -> R<Vec<usize>> {
    let info = mapsat_ir::check::check_with_sizes(p, sizes)
        .map_err(|e| MeasureError::Input(format!("the program does not type-check: {}", e.message)))?;
    Ok(interp::concrete_shape(&info.result, sizes)?.1)
}

/// Generates, runs and (optionally) checks a program on a device.
pub fn run(
    p: &Program,
    sizes: &Sizes,
    local: Option<Vec<i64>>,
    inputs: &[Tensor],
    device: DeviceSpec,
    cfg: &RunConfig,
) -> R<RunReport> {
    let sizes = p.resolve_sizes(sizes).map_err(|e| MeasureError::Input(e.to_string()))?;
    // The device's limits on a work group's private memory (a CPU device's: pocl's worker
    // stack) and local memory, from its profile: beyond either the kernel would crash this
    // process (pocl aborted launching one beyond its local memory), so code generation
    // refuses it.
    let profile = opencl_profile(device).ok();
    let max_private_group_bytes = profile.as_ref().and_then(|p| p.private_group_bytes);
    let max_local_bytes = profile.as_ref().map(|p| p.local_mem_bytes);
    let opts = Options { sizes: sizes.clone(), local, max_private_group_bytes, max_local_bytes, ..Options::default() };
    let (src, mut manifest) = mapsat_codegen::emit(p, &opts, device.dialect())?;
    manifest.build_options = mapsat_codegen::build_options(device.dialect(), cfg.reassociate);
    interp::check_inputs(p, &sizes, inputs).map_err(|e| MeasureError::Input(e.to_string()))?;
    let shape = result_shape(p, &sizes)?;
    // A device buffer holds at least one value (OpenCL refused an empty one with
    // CL_INVALID_BUFFER_SIZE).
    let empty = |s: &[usize]| s.contains(&0);
    if let Some(q) = p.params.iter().zip(inputs).find(|(_, t)| empty(&t.shape)).map(|(q, _)| q) {
        return Err(MeasureError::Input(format!(
            "input `{}` has no elements: a kernel over an empty array is not launched (`mapsat eval` evaluates the program)",
            q.name
        )));
    }
    if empty(&shape) {
        return Err(MeasureError::Input(
            "the result has no elements: a kernel that writes an empty array is not launched (`mapsat eval` evaluates the program)".into(),
        ));
    }
    let mut session = Session::open(device)?;
    cfg.go_on()?;
    let r = session.run(&src, &manifest, inputs, shape, cfg)?;
    let check = if cfg.check {
        cfg.go_on()?;
        let want = interp::eval(p, &sizes, inputs)?;
        Some(r.output.compare(&want, cfg.rtol, cfg.atol))
    } else {
        None
    };
    let min_ms = r.times_ms.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(RunReport {
        device: session.name().to_string(),
        median_ms: median(&r.times_ms),
        min_ms: if min_ms.is_finite() { min_ms } else { 0.0 },
        flops: manifest.flops,
        check,
        output: r.output,
        manifest,
    })
}

/// The remaining warm-up launches (the first, checked one counts as warm-up), then the timed
/// launches' times in milliseconds.
fn timed_runs(cfg: &RunConfig, mut launch: impl FnMut() -> R<f64>) -> R<Vec<f64>> {
    for _ in 1..cfg.warmup {
        cfg.go_on()?;
        launch()?;
    }
    (0..cfg.runs.max(1)).map(|_| cfg.go_on().and_then(|_| launch())).collect()
}

/// One stage of a program cut at its kernel boundaries ([`mapsat_ir::stages`]), mapped: the
/// program to lower, where its parameters come from, and its work-group size.
pub struct MappedStage {
    /// The stage, mapped (or hand-mapped).
    pub program: Program,
    /// The source of each parameter.
    pub inputs: Vec<mapsat_ir::stages::Input>,
    /// Its work-group size (`None`: code generation's default).
    pub local: Option<Vec<i64>>,
}

/// Runs the stages of a program in order on one device, each kernel on the program's `inputs`
/// and the results of the stages before it (as the device computed them), each timed and,
/// with `cfg.check`, checked against the interpreter on the same inputs. The last report's
/// output is the program's result.
pub fn run_stages(
    stages: &[MappedStage],
    sizes: &Sizes,
    inputs: &[Tensor],
    device: DeviceSpec,
    cfg: &RunConfig,
) -> R<Vec<RunReport>> {
    let mut reports: Vec<RunReport> = Vec::with_capacity(stages.len());
    let params = stages.iter().flat_map(|s| &s.inputs).filter_map(|i| match i {
        mapsat_ir::stages::Input::Param(j) => Some(*j as usize + 1),
        mapsat_ir::stages::Input::Stage(_) => None,
    });
    if let Some(n) = params.max().filter(|n| *n > inputs.len()) {
        return Err(MeasureError::Input(format!("the kernels read {n} inputs, {} given", inputs.len())));
    }
    for s in stages {
        cfg.go_on()?;
        let args: Vec<Tensor> = {
            let results: Vec<&Tensor> = reports.iter().map(|r| &r.output).collect();
            let params: Vec<&Tensor> = inputs.iter().collect();
            s.inputs.iter().map(|&i| (*mapsat_ir::stages::input(i, &params, &results)).clone()).collect()
        };
        reports.push(
            run(&s.program, sizes, s.local.clone(), &args, device, cfg).map_err(|e| e.in_kernel(&s.program.name))?,
        );
    }
    Ok(reports)
}

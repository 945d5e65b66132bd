//! Running generated kernels on devices and checking them against the interpreter.

#![allow(unsafe_code)]

use mapsat_codegen::kir::Role;
use mapsat_codegen::{CodegenError, Dialect, Manifest, Options};
use mapsat_ir::interp::{self, EvalError, Tensor, TensorData};
use mapsat_ir::profile::{Profile, ProfileError};
use mapsat_ir::{Program, ScalarKind, Sizes};
use std::fmt;

/// Why a run failed (a failed comparison is not an error: see [`Check`]).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// Code generation refused the program.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
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
    /// The interpreter failed.
    #[error("interpreter: {0}")]
    Interp(#[from] EvalError),
    /// A device's figures do not make a valid profile.
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

type R<T> = Result<T, MeasureError>;

/// A device name: `opencl:P:D` or `cuda:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// Platform and device index of the OpenCL ICD loader.
    OpenCl(usize, usize),
    /// CUDA device ordinal.
    Cuda(usize),
}

impl std::str::FromStr for DeviceSpec {
    type Err = MeasureError;
    fn from_str(s: &str) -> R<DeviceSpec> {
        let bad = || {
            MeasureError::Device(format!("bad device `{s}`: use opencl:PLATFORM:DEVICE (e.g. opencl:0:0) or cuda:N"))
        };
        let parts: Vec<&str> = s.split(':').collect();
        let num = |x: &str| x.parse::<usize>().map_err(|_| bad());
        match parts.as_slice() {
            ["opencl", p, d] => Ok(DeviceSpec::OpenCl(num(p)?, num(d)?)),
            ["opencl"] => Ok(DeviceSpec::OpenCl(0, 0)),
            ["cuda", n] => Ok(DeviceSpec::Cuda(num(n)?)),
            ["cuda"] => Ok(DeviceSpec::Cuda(0)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::OpenCl(p, d) => write!(f, "opencl:{p}:{d}"),
            DeviceSpec::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Untimed runs first.
    pub warmup: usize,
    /// Timed runs (the median is reported).
    pub runs: usize,
    /// Compare with the interpreter.
    pub check: bool,
    /// Relative tolerance of the comparison.
    pub rtol: f64,
    /// Absolute tolerance of the comparison.
    pub atol: f64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig { warmup: 1, runs: 5, check: true, rtol: 1e-3, atol: 1e-4 }
    }
}

/// Result of comparing the device's output with the interpreter's.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// Within tolerance everywhere.
    pub ok: bool,
    /// Largest absolute difference (NaN counts as infinite).
    pub max_abs_diff: f64,
    /// Number of elements out of tolerance (poisoned elements the kernel did not write included).
    pub mismatches: usize,
    /// First element out of tolerance: index, device value, expected value.
    pub first_mismatch: Option<(usize, f64, f64)>,
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
    pub check: Option<Check>,
    /// The device's result.
    pub output: Tensor,
    /// Launch shape used.
    pub manifest: Manifest,
}

impl RunReport {
    /// GFLOP/s at the median time.
    pub fn gflops(&self) -> f64 {
        if self.median_ms > 0.0 {
            self.flops as f64 / (self.median_ms * 1e6)
        } else {
            0.0
        }
    }
}

/// Host data of one kernel argument.
enum Host {
    F32(Vec<f32>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

fn host_of(t: &Tensor) -> Host {
    match &t.data {
        TensorData::F32(v) => Host::F32(v.clone()),
        TensorData::I32(v) => Host::I32(v.clone()),
        TensorData::Bool(v) => Host::U8(v.iter().map(|b| *b as u8).collect()),
    }
}

fn poison(kind: ScalarKind, n: usize) -> Host {
    match kind {
        ScalarKind::F32 => Host::F32(vec![f32::NAN; n]),
        ScalarKind::I32 => Host::I32(vec![i32::MIN + 7; n]),
        ScalarKind::Bool => Host::U8(vec![0xAB; n]),
    }
}

/// Compares a device result with the expected one.
pub fn compare(got: &Tensor, want: &Tensor, rtol: f64, atol: f64) -> Check {
    let (g, w): (Vec<f64>, Vec<f64>) = match (&got.data, &want.data) {
        (TensorData::F32(a), TensorData::F32(b)) => {
            (a.iter().map(|x| *x as f64).collect(), b.iter().map(|x| *x as f64).collect())
        }
        (TensorData::I32(a), TensorData::I32(b)) => {
            (a.iter().map(|x| *x as f64).collect(), b.iter().map(|x| *x as f64).collect())
        }
        (TensorData::Bool(a), TensorData::Bool(b)) => {
            (a.iter().map(|x| *x as u8 as f64).collect(), b.iter().map(|x| *x as u8 as f64).collect())
        }
        _ => return Check { ok: false, max_abs_diff: f64::INFINITY, mismatches: got.data.len(), first_mismatch: None },
    };
    let mut c = Check { ok: g.len() == w.len(), max_abs_diff: 0.0, mismatches: 0, first_mismatch: None };
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let d = if a.is_nan() != b.is_nan() {
            f64::INFINITY
        } else if a.is_nan() {
            0.0
        } else {
            (a - b).abs()
        };
        c.max_abs_diff = c.max_abs_diff.max(d);
        if d > atol + rtol * b.abs() {
            c.mismatches += 1;
            c.first_mismatch.get_or_insert((i, *a, *b));
        }
    }
    c.ok &= c.mismatches == 0;
    c
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
    let opts = Options { sizes: sizes.clone(), local, ..Options::default() };
    let dialect = match device {
        DeviceSpec::OpenCl(..) => Dialect::OpenCl,
        DeviceSpec::Cuda(_) => Dialect::Cuda,
    };
    let (src, manifest) = mapsat_codegen::emit(p, &opts, dialect)?;
    if inputs.len() != p.params.len() {
        return Err(MeasureError::Input(format!("{} inputs for {} parameters", inputs.len(), p.params.len())));
    }
    let info = mapsat_ir::check::check_with_sizes(p, &sizes)
        .map_err(|e| MeasureError::Input(format!("the program does not type-check: {}", e.message)))?;
    let (_, out_shape) = interp::concrete_shape(&info.result, &sizes)?;
    // Arguments in kernel order.
    let mut args: Vec<Arg> = Vec::new();
    let mut out_arg = 0;
    let mut by_arg: Vec<&mapsat_codegen::BufferInfo> = manifest.buffers.iter().filter(|b| b.arg.is_some()).collect();
    by_arg.sort_by_key(|b| b.arg);
    for b in &by_arg {
        let a = match (b.role, b.param) {
            (Role::Input, Some(i)) => {
                let t = &inputs[i];
                if t.data.len() as i64 != b.len {
                    return Err(MeasureError::Input(format!(
                        "input `{}` has {} elements, the kernel expects {}",
                        p.params[i].name,
                        t.data.len(),
                        b.len
                    )));
                }
                if b.by_value {
                    Arg::Value(host_of(t))
                } else {
                    Arg::Buffer(host_of(t))
                }
            }
            (Role::Output, _) => {
                out_arg = args.len();
                Arg::Buffer(poison(b.elem, b.len as usize))
            }
            _ => Arg::Buffer(poison(b.elem, b.len.max(1) as usize)),
        };
        args.push(a);
    }
    let (device_name, times, out) = match device {
        DeviceSpec::OpenCl(pi, di) => opencl::run(pi, di, &src, &manifest, &mut args, out_arg, cfg)?,
        DeviceSpec::Cuda(n) => cuda::run(n, &src, &manifest, &mut args, out_arg, cfg)?,
    };
    let output = match out {
        Host::F32(v) => Tensor::f32(out_shape, v),
        Host::I32(v) => Tensor::i32(out_shape, v),
        Host::U8(v) => Tensor::bool(out_shape, v.into_iter().map(|x| x != 0).collect()),
    };
    let check = if cfg.check {
        let want = interp::eval(p, &sizes, inputs)?;
        Some(compare(&output, &want, cfg.rtol, cfg.atol))
    } else {
        None
    };
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median_ms = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let min_ms = sorted.first().copied().unwrap_or(0.0);
    Ok(RunReport { device: device_name, median_ms, min_ms, flops: manifest.flops, check, output, manifest })
}

/// The remaining warm-up launches (the first, checked one counts as warm-up), then the timed
/// launches' times in milliseconds.
fn timed_runs(cfg: &RunConfig, mut launch: impl FnMut() -> R<f64>) -> R<Vec<f64>> {
    for _ in 1..cfg.warmup {
        launch()?;
    }
    (0..cfg.runs.max(1)).map(|_| launch()).collect()
}

enum Arg {
    Buffer(Host),
    Value(Host),
}

/// One line per device, or a line saying why a runtime is missing.
pub fn list_devices() -> Vec<String> {
    let mut out = opencl::list();
    out.extend(cuda::list());
    out
}

/// Private memory per work item assumed for an OpenCL CPU device (`CL_DEVICE_TYPE_CPU`):
/// 64 KiB, the work-item stack of pocl's CPU drivers, where private arrays live (the figure of
/// the shipped `pocl-cpu` profile). OpenCL has no query for it: a conservative choice by mapsat.
pub const CPU_PRIVATE_MEM_BYTES: u64 = 64 * 1024;

/// Private memory per work item assumed for any other OpenCL device (GPUs, accelerators):
/// 255 32-bit registers, the most a thread may use on NVIDIA GPUs and more than Mali or AMD
/// grant, times 4 bytes. OpenCL has no query for it: a conservative choice by mapsat; register
/// spilling makes it a soft limit.
pub const GPU_PRIVATE_MEM_BYTES: u64 = 255 * 4;

/// The limits of a real OpenCL device (`opencl:PLATFORM:DEVICE`) as a device profile, read
/// with `clGetDeviceInfo`:
///
/// - `name`: a slug of `CL_DEVICE_NAME` (lower case, runs of other characters as `-`);
/// - `description`: `CL_DEVICE_NAME (CL_PLATFORM_NAME, driver CL_DRIVER_VERSION)`;
/// - `compute_units`: `CL_DEVICE_MAX_COMPUTE_UNITS`;
/// - `max_work_group_size`: `CL_DEVICE_MAX_WORK_GROUP_SIZE`;
/// - `max_work_item_sizes`: `CL_DEVICE_MAX_WORK_ITEM_SIZES`, the first three, padded with 1;
/// - `max_dims`: `CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS`, clamped to 1..=3;
/// - `local_mem_bytes`: `CL_DEVICE_LOCAL_MEM_SIZE`;
/// - `private_mem_bytes`: not an OpenCL figure (no query exists): [`CPU_PRIVATE_MEM_BYTES`]
///   when `CL_DEVICE_TYPE` includes `CL_DEVICE_TYPE_CPU`, else [`GPU_PRIVATE_MEM_BYTES`];
/// - `vector_width`: `CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT` (at least 1).
///
/// A CUDA device, a missing OpenCL runtime, platform or device, or figures that make no valid
/// profile are errors. [`opencl_profile_toml`] writes the result with these sources as comments.
pub fn opencl_profile(device: DeviceSpec) -> R<Profile> {
    match device {
        DeviceSpec::OpenCl(pi, di) => opencl::profile(pi, di),
        DeviceSpec::Cuda(_) => {
            Err(MeasureError::Device(format!("`{device}`: device profiles are read from OpenCL devices only")))
        }
    }
}

/// A profile read by [`opencl_profile`] from `device` as a TOML file for `--target`, with a
/// header naming the device and the OpenCL query behind each figure as a comment above it.
pub fn opencl_profile_toml(profile: &Profile, device: DeviceSpec) -> R<String> {
    let header = format!(
        "Device profile of the OpenCL device {device}, written by `mapsat devices --profile {device}`.\n\
         Each figure is what clGetDeviceInfo (clGetPlatformInfo for the platform name) returns for\n\
         the query named above it, except private_mem_bytes: OpenCL cannot report it."
    );
    let private = format!(
        "OpenCL has no query for private memory per work item: a conservative choice by mapsat,\n\
         {CPU_PRIVATE_MEM_BYTES} (64 KiB, pocl's work-item stack) for a CL_DEVICE_TYPE_CPU device, {GPU_PRIVATE_MEM_BYTES} (255 32-bit\n\
         registers x 4 bytes, the per-thread maximum on NVIDIA GPUs) for any other. Approximate:\n\
         register spilling makes it a soft limit."
    );
    let notes = [
        ("name", "A slug of CL_DEVICE_NAME."),
        ("description", "CL_DEVICE_NAME (CL_PLATFORM_NAME, driver CL_DRIVER_VERSION)."),
        ("compute_units", "CL_DEVICE_MAX_COMPUTE_UNITS."),
        ("max_work_group_size", "CL_DEVICE_MAX_WORK_GROUP_SIZE."),
        ("max_work_item_sizes", "CL_DEVICE_MAX_WORK_ITEM_SIZES (the first three, padded with 1)."),
        ("max_dims", "CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS (clamped to 1..=3)."),
        ("local_mem_bytes", "CL_DEVICE_LOCAL_MEM_SIZE."),
        ("private_mem_bytes", private.as_str()),
        ("vector_width", "CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT."),
    ];
    Ok(profile.to_toml(&header, &notes)?)
}

/// A profile name from a device name: lower-case ASCII letters and digits, every other run of
/// characters one `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "opencl-device".to_string()
    } else {
        out
    }
}

/// A string from an OpenCL query on one line: runs of whitespace (and NULs) as one space.
fn one_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '\0').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

mod opencl {
    use super::*;
    use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
    use opencl3::context::Context;
    use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU};
    use opencl3::kernel::{ExecuteKernel, Kernel};
    use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
    use opencl3::platform::{get_platforms, Platform};
    use opencl3::program::Program as ClProgram;
    use opencl3::types::{cl_float, cl_int, cl_uchar, CL_BLOCKING};
    use std::ptr;

    fn e(x: impl fmt::Display) -> MeasureError {
        MeasureError::OpenCl(x.to_string())
    }

    /// Some OpenCL implementations (pocl) crash when initialized from several threads at once:
    /// every use of the runtime holds this lock.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn lock() -> std::sync::MutexGuard<'static, ()> {
        LOCK.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn list() -> Vec<String> {
        let _guard = lock();
        let platforms = match std::panic::catch_unwind(get_platforms) {
            Ok(Ok(p)) => p,
            Ok(Err(err)) => return vec![format!("opencl: no platform ({err})")],
            Err(_) => return vec!["opencl: the OpenCL ICD loader (libOpenCL.so.1) is missing".into()],
        };
        if platforms.is_empty() {
            return vec!["opencl: no platform".into()];
        }
        let mut out = Vec::new();
        for (pi, p) in platforms.iter().enumerate() {
            let pname = p.name().unwrap_or_default();
            let ids = p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
            for (di, id) in ids.into_iter().enumerate() {
                let d = Device::new(id);
                out.push(format!(
                    "opencl:{pi}:{di}  {} ({pname}); {} compute units, max work group {}, local memory {} KiB, global memory {} MiB",
                    d.name().unwrap_or_default(),
                    d.max_compute_units().unwrap_or(0),
                    d.max_work_group_size().unwrap_or(0),
                    d.local_mem_size().unwrap_or(0) / 1024,
                    d.global_mem_size().unwrap_or(0) / (1024 * 1024),
                ));
            }
        }
        out
    }

    /// Platform `pi` and its device `di`; the caller holds the lock.
    fn find(pi: usize, di: usize) -> R<(Platform, Device)> {
        let platforms = match std::panic::catch_unwind(get_platforms) {
            Ok(r) => r.map_err(|err| {
                MeasureError::OpenCl(format!("no platform found ({err}); is an OpenCL driver such as pocl installed?"))
            })?,
            Err(_) => return Err(MeasureError::OpenCl("the OpenCL ICD loader (libOpenCL.so.1) is missing".into())),
        };
        let count = platforms.len();
        let p = platforms.into_iter().nth(pi).ok_or_else(|| {
            MeasureError::Device(format!("no OpenCL platform {pi} ({count} found; `mapsat devices` lists them)"))
        })?;
        let ids = p.get_devices(CL_DEVICE_TYPE_ALL).map_err(e)?;
        let id = *ids.get(di).ok_or_else(|| {
            MeasureError::Device(format!(
                "no device {di} on OpenCL platform {pi} ({} found; `mapsat devices` lists them)",
                ids.len()
            ))
        })?;
        Ok((p, Device::new(id)))
    }

    pub(super) fn profile(pi: usize, di: usize) -> R<Profile> {
        let _guard = lock();
        let (p, d) = find(pi, di)?;
        let dev_name = one_line(&d.name().map_err(e)?);
        let description = format!(
            "{dev_name} ({}, driver {})",
            one_line(&p.name().map_err(e)?),
            one_line(&d.driver_version().map_err(e)?)
        );
        let item_sizes = d.max_work_item_sizes().map_err(e)?;
        let mut max_work_item_sizes = [1u64; 3];
        for (slot, size) in max_work_item_sizes.iter_mut().zip(&item_sizes) {
            *slot = *size as u64;
        }
        let private_mem_bytes = if d.dev_type().map_err(e)? & CL_DEVICE_TYPE_CPU != 0 {
            CPU_PRIVATE_MEM_BYTES
        } else {
            GPU_PRIVATE_MEM_BYTES
        };
        let profile = Profile {
            name: slug(&dev_name),
            description,
            compute_units: d.max_compute_units().map_err(e)?,
            max_work_group_size: d.max_work_group_size().map_err(e)? as u64,
            max_work_item_sizes,
            max_dims: d.max_work_item_dimensions().map_err(e)?.clamp(1, 3),
            local_mem_bytes: d.local_mem_size().map_err(e)?,
            private_mem_bytes,
            vector_width: d.max_preferred_vector_width_float().map_err(e)?.max(1),
        };
        profile.validate(&format!("read from opencl:{pi}:{di}"))?;
        Ok(profile)
    }

    enum DevBuf {
        F32(Buffer<cl_float>),
        I32(Buffer<cl_int>),
        U8(Buffer<cl_uchar>),
    }

    pub(super) fn run(
        pi: usize,
        di: usize,
        src: &str,
        m: &Manifest,
        args: &mut [Arg],
        out_arg: usize,
        cfg: &RunConfig,
    ) -> R<(String, Vec<f64>, Host)> {
        let _guard = lock();
        let (p, device) = find(pi, di)?;
        let name = format!("{} ({})", device.name().unwrap_or_default(), p.name().unwrap_or_default());
        let context = Context::from_device(&device).map_err(e)?;
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE).map_err(e)?;
        let program = ClProgram::create_and_build_from_source(&context, src, "")
            .map_err(|log| MeasureError::Build { log: log.to_string() })?;
        let kernel = Kernel::create(&program, &m.entry).map_err(e)?;
        let mut bufs: Vec<Option<DevBuf>> = Vec::new();
        for a in args.iter() {
            let b = match a {
                Arg::Buffer(h) => Some(match h {
                    Host::F32(v) => {
                        let mut b = unsafe {
                            Buffer::<cl_float>::create(&context, CL_MEM_READ_WRITE, v.len(), ptr::null_mut())
                        }
                        .map_err(e)?;
                        unsafe { queue.enqueue_write_buffer(&mut b, CL_BLOCKING, 0, v, &[]) }.map_err(e)?;
                        DevBuf::F32(b)
                    }
                    Host::I32(v) => {
                        let mut b =
                            unsafe { Buffer::<cl_int>::create(&context, CL_MEM_READ_WRITE, v.len(), ptr::null_mut()) }
                                .map_err(e)?;
                        unsafe { queue.enqueue_write_buffer(&mut b, CL_BLOCKING, 0, v, &[]) }.map_err(e)?;
                        DevBuf::I32(b)
                    }
                    Host::U8(v) => {
                        let mut b = unsafe {
                            Buffer::<cl_uchar>::create(&context, CL_MEM_READ_WRITE, v.len(), ptr::null_mut())
                        }
                        .map_err(e)?;
                        unsafe { queue.enqueue_write_buffer(&mut b, CL_BLOCKING, 0, v, &[]) }.map_err(e)?;
                        DevBuf::U8(b)
                    }
                }),
                Arg::Value(_) => None,
            };
            bufs.push(b);
        }
        let dims = m.launch.dims as usize;
        let global: Vec<usize> = m.launch.global[..dims].iter().map(|x| *x as usize).collect();
        let local: Vec<usize> = m.launch.local[..dims].iter().map(|x| *x as usize).collect();
        let launch = || -> R<f64> {
            let mut ek = ExecuteKernel::new(&kernel);
            for (a, b) in args.iter().zip(&bufs) {
                unsafe {
                    match (a, b) {
                        (_, Some(DevBuf::F32(b))) => ek.set_arg(b),
                        (_, Some(DevBuf::I32(b))) => ek.set_arg(b),
                        (_, Some(DevBuf::U8(b))) => ek.set_arg(b),
                        (Arg::Value(Host::F32(v)), None) => ek.set_arg(&v[0]),
                        (Arg::Value(Host::I32(v)), None) => ek.set_arg(&v[0]),
                        (Arg::Value(Host::U8(v)), None) => ek.set_arg(&v[0]),
                        (Arg::Buffer(_), None) => return Err(MeasureError::OpenCl("missing buffer".into())),
                    };
                }
            }
            let ev = unsafe { ek.set_global_work_sizes(&global).set_local_work_sizes(&local).enqueue_nd_range(&queue) }
                .map_err(e)?;
            ev.wait().map_err(e)?;
            let t0 = ev.profiling_command_start().map_err(e)?;
            let t1 = ev.profiling_command_end().map_err(e)?;
            Ok(t1.saturating_sub(t0) as f64 / 1e6)
        };
        // The first run writes into the poisoned output: that is the result checked.
        launch()?;
        let out = match (&args[out_arg], &bufs[out_arg]) {
            (Arg::Buffer(Host::F32(v)), Some(DevBuf::F32(b))) => {
                let mut h = vec![0f32; v.len()];
                unsafe { queue.enqueue_read_buffer(b, CL_BLOCKING, 0, &mut h, &[]) }.map_err(e)?;
                Host::F32(h)
            }
            (Arg::Buffer(Host::I32(v)), Some(DevBuf::I32(b))) => {
                let mut h = vec![0i32; v.len()];
                unsafe { queue.enqueue_read_buffer(b, CL_BLOCKING, 0, &mut h, &[]) }.map_err(e)?;
                Host::I32(h)
            }
            (Arg::Buffer(Host::U8(v)), Some(DevBuf::U8(b))) => {
                let mut h = vec![0u8; v.len()];
                unsafe { queue.enqueue_read_buffer(b, CL_BLOCKING, 0, &mut h, &[]) }.map_err(e)?;
                Host::U8(h)
            }
            _ => return Err(MeasureError::OpenCl("output buffer missing".into())),
        };
        Ok((name, timed_runs(cfg, launch)?, out))
    }
}

mod cuda {
    use super::*;
    use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
    use std::sync::Arc;

    fn e(x: impl fmt::Debug) -> MeasureError {
        MeasureError::Cuda(format!("{x:?}"))
    }

    /// Checks that the CUDA driver library can be loaded, before cudarc (which panics otherwise).
    pub(super) fn probe() -> Result<(), String> {
        match unsafe { libloading::Library::new("libcuda.so.1") } {
            Ok(_) => Ok(()),
            Err(err) => Err(format!("no CUDA driver (libcuda.so.1 cannot be loaded: {err})")),
        }
    }

    fn context(n: usize) -> R<Arc<CudaContext>> {
        probe().map_err(MeasureError::Cuda)?;
        match std::panic::catch_unwind(|| CudaContext::new(n)) {
            Ok(r) => r.map_err(e),
            Err(_) => Err(MeasureError::Cuda("the CUDA driver could not be initialized".into())),
        }
    }

    pub(super) fn list() -> Vec<String> {
        if let Err(msg) = probe() {
            return vec![format!("cuda: {msg}")];
        }
        let count = match std::panic::catch_unwind(CudaContext::device_count) {
            Ok(Ok(c)) => c,
            Ok(Err(err)) => return vec![format!("cuda: {err:?}")],
            Err(_) => return vec!["cuda: the CUDA driver could not be initialized".into()],
        };
        let mut out = Vec::new();
        for i in 0..count.max(0) as usize {
            match context(i) {
                Ok(ctx) => {
                    use cudarc::driver::sys::CUdevice_attribute as A;
                    let at = |a| ctx.attribute(a).unwrap_or(0);
                    out.push(format!(
                        "cuda:{i}  {}; {} SMs, max block {}, shared memory per block {} KiB",
                        ctx.name().unwrap_or_default(),
                        at(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                        at(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                        at(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK) / 1024,
                    ));
                }
                Err(err) => out.push(format!("cuda:{i}  {err}")),
            }
        }
        if out.is_empty() {
            out.push("cuda: driver present, no device".into());
        }
        out
    }

    pub(super) fn run(
        n: usize,
        src: &str,
        m: &Manifest,
        args: &mut [Arg],
        out_arg: usize,
        cfg: &RunConfig,
    ) -> R<(String, Vec<f64>, Host)> {
        let ctx = context(n)?;
        let name = ctx.name().unwrap_or_else(|_| format!("cuda:{n}"));
        let ptx = match std::panic::catch_unwind(|| cudarc::nvrtc::compile_ptx(src)) {
            Ok(r) => r.map_err(|err| MeasureError::Build { log: format!("{err:?}") })?,
            Err(_) => return Err(MeasureError::Cuda("NVRTC (libnvrtc) could not be loaded".into())),
        };
        let module = ctx.load_module(ptx).map_err(e)?;
        let func = module.load_function(&m.entry).map_err(e)?;
        let stream = ctx.default_stream();
        enum D {
            F32(cudarc::driver::CudaSlice<f32>),
            I32(cudarc::driver::CudaSlice<i32>),
            U8(cudarc::driver::CudaSlice<u8>),
        }
        let mut bufs: Vec<Option<D>> = Vec::new();
        for a in args.iter() {
            bufs.push(match a {
                Arg::Buffer(Host::F32(v)) => Some(D::F32(stream.clone_htod(v).map_err(e)?)),
                Arg::Buffer(Host::I32(v)) => Some(D::I32(stream.clone_htod(v).map_err(e)?)),
                Arg::Buffer(Host::U8(v)) => Some(D::U8(stream.clone_htod(v).map_err(e)?)),
                Arg::Value(_) => None,
            });
        }
        let l = &m.launch;
        let lc = LaunchConfig {
            grid_dim: (
                (l.global[0] / l.local[0]) as u32,
                (l.global[1] / l.local[1]) as u32,
                (l.global[2] / l.local[2]) as u32,
            ),
            block_dim: (l.local[0] as u32, l.local[1] as u32, l.local[2] as u32),
            shared_mem_bytes: 0,
        };
        let t0 = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(e)?;
        let t1 = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(e)?;
        let launch = || -> R<f64> {
            let mut b = stream.launch_builder(&func);
            for (a, d) in args.iter().zip(&bufs) {
                match (a, d) {
                    (_, Some(D::F32(x))) => b.arg(x),
                    (_, Some(D::I32(x))) => b.arg(x),
                    (_, Some(D::U8(x))) => b.arg(x),
                    (Arg::Value(Host::F32(v)), None) => b.arg(&v[0]),
                    (Arg::Value(Host::I32(v)), None) => b.arg(&v[0]),
                    (Arg::Value(Host::U8(v)), None) => b.arg(&v[0]),
                    (Arg::Buffer(_), None) => return Err(MeasureError::Cuda("missing buffer".into())),
                };
            }
            t0.record(&stream).map_err(e)?;
            unsafe { b.launch(lc) }.map_err(e)?;
            t1.record(&stream).map_err(e)?;
            t1.synchronize().map_err(e)?;
            Ok(t0.elapsed_ms(&t1).map_err(e)? as f64)
        };
        launch()?;
        let out = match &bufs[out_arg] {
            Some(D::F32(x)) => Host::F32(stream.clone_dtoh(x).map_err(e)?),
            Some(D::I32(x)) => Host::I32(stream.clone_dtoh(x).map_err(e)?),
            Some(D::U8(x)) => Host::U8(stream.clone_dtoh(x).map_err(e)?),
            None => return Err(MeasureError::Cuda("output buffer missing".into())),
        };
        Ok((name, timed_runs(cfg, launch)?, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_of_device_names() {
        assert_eq!(slug("cpu-haswell-Intel(R) Xeon(R) CPU @ 2.20GHz"), "cpu-haswell-intel-r-xeon-r-cpu-2-20ghz");
        assert_eq!(slug("  Mali-G72  "), "mali-g72");
        assert_eq!(slug("()"), "opencl-device");
    }

    #[test]
    fn query_strings_on_one_line() {
        assert_eq!(one_line(" a\n b\tc \0"), "a b c");
    }

    #[test]
    fn cuda_devices_have_no_opencl_profile() {
        assert!(matches!(opencl_profile(DeviceSpec::Cuda(0)), Err(MeasureError::Device(_))));
    }
}

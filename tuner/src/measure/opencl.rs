//! The OpenCL runtime through `opencl3` (the ICD loader is opened at run time, so mapsat runs
//! where no OpenCL is installed and says so).

use super::bind::{Arg, Bound, Host};
use super::memory::DeviceMemory;
use super::{timed_runs, MeasureError, RunConfig, R};
use mapsat_codegen::Manifest;
use mapsat_ir::profile::Profile;
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU};
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::platform::{get_platforms, Platform};
use opencl3::program::Program as ClProgram;
use opencl3::types::{cl_float, cl_int, cl_uchar, CL_BLOCKING};
use std::collections::HashMap;
use std::fmt;
use std::ptr;
use std::time::Instant;

fn e(x: impl fmt::Display) -> MeasureError {
    MeasureError::OpenCl(x.to_string())
}

/// Some OpenCL implementations (pocl) crash when initialized from several threads at once:
/// every use of the runtime holds this lock.
static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// pocl's CPU device leaves the threads that run work groups unpinned unless `POCL_AFFINITY`
/// is 1. On the 2-core machines here both threads then often share one core, and a parallel
/// kernel runs at one thread's speed in some runs and not in others (a tiled matmul at 256^3,
/// six runs each: 0.71 ms unpinned every time, 0.36 ms pinned every time; a Jacobi step at
/// 2048^2: 1.14 to 2.85 ms unpinned, 1.13 to 1.21 ms pinned). mapsat pins them, for steady
/// measurements, unless the environment sets the variable itself. pocl reads it when it
/// starts, so it is set before the first call into the runtime.
fn pin_pocl_threads() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("POCL_AFFINITY").is_none() {
            std::env::set_var("POCL_AFFINITY", "1");
        }
    });
}

fn platforms() -> R<Vec<Platform>> {
    pin_pocl_threads();
    match std::panic::catch_unwind(get_platforms) {
        Ok(r) => r.map_err(|err| {
            MeasureError::OpenCl(format!("no platform found ({err}); is an OpenCL driver such as pocl installed?"))
        }),
        Err(_) => Err(MeasureError::OpenCl("the OpenCL ICD loader (libOpenCL.so.1) is missing".into())),
    }
}

pub(super) fn list() -> Vec<String> {
    let _guard = lock();
    let platforms = match platforms() {
        Ok(p) if p.is_empty() => return vec!["opencl: no platform".into()],
        Ok(p) => p,
        Err(err) => return vec![format!("opencl: {err}")],
    };
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
    let platforms = platforms()?;
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

/// The figures of [`super::profile::opencl_profile`], read with `clGetDeviceInfo`.
pub(super) fn profile(pi: usize, di: usize) -> R<Profile> {
    use super::profile::{one_line, slug, CPU_PRIVATE_GROUP_BYTES, CPU_PRIVATE_MEM_BYTES, GPU_PRIVATE_MEM_BYTES};
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
    let cpu = d.dev_type().map_err(e)? & CL_DEVICE_TYPE_CPU != 0;
    let profile = Profile {
        name: slug(&dev_name),
        description,
        compute_units: d.max_compute_units().map_err(e)?,
        max_work_group_size: d.max_work_group_size().map_err(e)? as u64,
        max_work_item_sizes,
        max_dims: d.max_work_item_dimensions().map_err(e)?.clamp(1, 3),
        local_mem_bytes: d.local_mem_size().map_err(e)?,
        private_mem_bytes: if cpu { CPU_PRIVATE_MEM_BYTES } else { GPU_PRIVATE_MEM_BYTES },
        private_group_bytes: cpu.then_some(CPU_PRIVATE_GROUP_BYTES),
        max_groups: None,
        vector_width: d.max_preferred_vector_width_float().map_err(e)?.max(1),
        address_bits: d.address_bits().map_err(e)?,
        rates: None,
    };
    profile.validate(&format!("read from opencl:{pi}:{di}"))?;
    Ok(profile)
}

/// Is the device a CPU (`CL_DEVICE_TYPE_CPU`)?
pub(super) fn is_cpu(pi: usize, di: usize) -> R<bool> {
    let _guard = lock();
    let (_, d) = find(pi, di)?;
    Ok(d.dev_type().map_err(e)? & CL_DEVICE_TYPE_CPU != 0)
}

/// `CL_DEVICE_GLOBAL_MEM_CACHE_SIZE` of the device.
pub(super) fn cache_bytes(pi: usize, di: usize) -> R<u64> {
    let _guard = lock();
    let (_, d) = find(pi, di)?;
    d.global_mem_cache_size().map_err(e)
}

enum DevBuf {
    F32(Buffer<cl_float>),
    I32(Buffer<cl_int>),
    U8(Buffer<cl_uchar>),
}

/// A context and profiling queue on one device, and the programs built on it (by build options
/// and source).
pub(super) struct Session {
    pub(super) name: String,
    device: Device,
    context: Context,
    queue: CommandQueue,
    programs: HashMap<(String, String), ClProgram>,
}

impl Session {
    pub(super) fn open(pi: usize, di: usize) -> R<Session> {
        let _guard = lock();
        let (p, device) = find(pi, di)?;
        let name = format!("{} ({})", device.name().unwrap_or_default(), p.name().unwrap_or_default());
        let context = Context::from_device(&device).map_err(e)?;
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE).map_err(e)?;
        Ok(Session { name, device, context, queue, programs: HashMap::new() })
    }

    /// The device's global memory and largest allocation.
    pub(super) fn memory(&self) -> R<DeviceMemory> {
        Ok(DeviceMemory {
            global: self.device.global_mem_size().map_err(e)?,
            max_alloc: self.device.max_mem_alloc_size().map_err(e)?,
            names: ["CL_DEVICE_GLOBAL_MEM_SIZE", "CL_DEVICE_MAX_MEM_ALLOC_SIZE"],
            host: self.device.dev_type().map_err(e)? & CL_DEVICE_TYPE_CPU != 0,
        })
    }

    /// Builds `src` with `options` once (later calls reuse the program); the time spent
    /// building, in ms.
    fn build(&mut self, src: &str, options: &str) -> R<f64> {
        let key = (options.to_string(), src.to_string());
        if self.programs.contains_key(&key) {
            return Ok(0.0);
        }
        let t = Instant::now();
        let program = ClProgram::create_and_build_from_source(&self.context, src, options)
            .map_err(|log| MeasureError::Build { log: log.to_string() })?;
        self.programs.insert(key, program);
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }

    fn upload(&self, args: &[Arg]) -> R<Vec<Option<DevBuf>>> {
        let mut bufs = Vec::with_capacity(args.len());
        for a in args {
            let Arg::Buffer(h) = a else {
                bufs.push(None);
                continue;
            };
            bufs.push(Some(match h {
                Host::F32(v) => DevBuf::F32(self.buffer(v)?),
                Host::I32(v) => DevBuf::I32(self.buffer(v)?),
                Host::U8(v) => DevBuf::U8(self.buffer(v)?),
            }));
        }
        Ok(bufs)
    }

    fn buffer<T>(&self, v: &[T]) -> R<Buffer<T>> {
        let mut b =
            unsafe { Buffer::<T>::create(&self.context, CL_MEM_READ_WRITE, v.len(), ptr::null_mut()) }.map_err(e)?;
        unsafe { self.queue.enqueue_write_buffer(&mut b, CL_BLOCKING, 0, v, &[]) }.map_err(e)?;
        Ok(b)
    }

    fn download(&self, b: &DevBuf) -> R<Host> {
        Ok(match b {
            DevBuf::F32(b) => Host::F32(self.read(b)?),
            DevBuf::I32(b) => Host::I32(self.read(b)?),
            DevBuf::U8(b) => Host::U8(self.read(b)?),
        })
    }

    fn read<T: Default + Clone>(&self, b: &Buffer<T>) -> R<Vec<T>> {
        let n = b.size().map_err(e)? / std::mem::size_of::<T>();
        let mut h = mapsat_ir::interp::try_filled(T::default(), n).map_err(MeasureError::HostMemory)?;
        unsafe { self.queue.enqueue_read_buffer(b, CL_BLOCKING, 0, &mut h, &[]) }.map_err(e)?;
        Ok(h)
    }

    /// Refuses a work group larger than the device runs this kernel with (in work items, or along
    /// one dimension), with the limits, where the launch would fail with
    /// `CL_INVALID_WORK_GROUP_SIZE`.
    fn check_work_group(&self, kernel: &Kernel, local: &[usize]) -> R<()> {
        let items: usize = local.iter().product();
        let most = kernel.get_work_group_size(self.device.id()).map_err(e)?;
        if items > most {
            return Err(MeasureError::Device(format!(
                "the work group {local:?} has {items} work items; the device runs this kernel with at most {most} (CL_KERNEL_WORK_GROUP_SIZE)"
            )));
        }
        let dims = self.device.max_work_item_sizes().map_err(e)?;
        if let Some((d, (l, m))) = local.iter().zip(&dims).enumerate().find(|(_, (l, m))| l > m) {
            return Err(MeasureError::Device(format!(
                "the work group {local:?} has {l} work items along dimension {d}; the device's limit is {m} (CL_DEVICE_MAX_WORK_ITEM_SIZES)"
            )));
        }
        Ok(())
    }

    /// Builds (once), uploads, launches: the first launch's output, the timed launches' times in
    /// ms, and the build time in ms.
    pub(super) fn run(&mut self, src: &str, m: &Manifest, bound: &Bound, cfg: &RunConfig) -> R<(Host, Vec<f64>, f64)> {
        let _guard = lock();
        let build_ms = self.build(src, &m.build_options)?;
        let key = (m.build_options.clone(), src.to_string());
        let kernel = Kernel::create(&self.programs[&key], &m.entry).map_err(e)?;
        let bufs = self.upload(&bound.args)?;
        let dims = m.launch.dims as usize;
        let global: Vec<usize> = m.launch.global[..dims].iter().map(|x| *x as usize).collect();
        let local: Vec<usize> = m.launch.local[..dims].iter().map(|x| *x as usize).collect();
        self.check_work_group(&kernel, &local)?;
        let launch = || -> R<f64> {
            let mut ek = ExecuteKernel::new(&kernel);
            for (a, b) in bound.args.iter().zip(&bufs) {
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
            let ev =
                unsafe { ek.set_global_work_sizes(&global).set_local_work_sizes(&local).enqueue_nd_range(&self.queue) }
                    .map_err(e)?;
            ev.wait().map_err(e)?;
            let t0 = ev.profiling_command_start().map_err(e)?;
            let t1 = ev.profiling_command_end().map_err(e)?;
            Ok(t1.saturating_sub(t0) as f64 / 1e6)
        };
        // The first run writes into the poisoned output: that is the result checked.
        launch()?;
        let out = match &bufs[bound.out_arg] {
            Some(b) => self.download(b)?,
            None => return Err(MeasureError::OpenCl("output buffer missing".into())),
        };
        Ok((out, timed_runs(cfg, launch)?, build_ms))
    }
}

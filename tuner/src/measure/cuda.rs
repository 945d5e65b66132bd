//! The CUDA runtime through `cudarc` with NVRTC, both loaded at run time (cudarc panics where
//! the driver is missing, so the library is probed first and panics are caught).

use super::bind::{Arg, Bound, Host};
use super::memory::DeviceMemory;
use super::{timed_runs, MeasureError, RunConfig, R};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use mapsat_codegen::Manifest;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

fn e(x: impl fmt::Debug) -> MeasureError {
    MeasureError::Cuda(format!("{x:?}"))
}

/// Checks that the CUDA driver library can be loaded, before cudarc (which panics otherwise).
pub(super) fn probe() -> Result<(), String> {
    #[allow(unsafe_code)]
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

/// The L2 cache size of device `n`.
pub(super) fn cache_bytes(n: usize) -> Result<u64, MeasureError> {
    let ctx = context(n)?;
    let bytes = ctx
        .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .map_err(|err| MeasureError::Cuda(format!("{err:?}")))?;
    Ok(u64::try_from(bytes).unwrap_or(0))
}

enum D {
    F32(CudaSlice<f32>),
    I32(CudaSlice<i32>),
    U8(CudaSlice<u8>),
}

/// A context and stream on one device, and the modules compiled on it (by source).
pub(super) struct Session {
    pub(super) name: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    modules: HashMap<String, Arc<CudaModule>>,
}

impl Session {
    pub(super) fn open(n: usize) -> R<Session> {
        let ctx = context(n)?;
        let name = ctx.name().unwrap_or_else(|_| format!("cuda:{n}"));
        let stream = ctx.default_stream();
        Ok(Session { name, ctx, stream, modules: HashMap::new() })
    }

    /// The device's free memory, as global memory and largest allocation.
    pub(super) fn memory(&self) -> R<DeviceMemory> {
        let (free, _total) = self.ctx.mem_get_info().map_err(e)?;
        let names = ["the device's free memory, cuMemGetInfo"; 2];
        Ok(DeviceMemory { global: free as u64, max_alloc: free as u64, names, host: false })
    }

    /// Compiles `src` with NVRTC once; the compile time in ms.
    fn build(&mut self, src: &str) -> R<f64> {
        if self.modules.contains_key(src) {
            return Ok(0.0);
        }
        let t = Instant::now();
        let ptx = match std::panic::catch_unwind(|| cudarc::nvrtc::compile_ptx(src)) {
            Ok(r) => r.map_err(|err| MeasureError::Build { log: format!("{err:?}") })?,
            Err(_) => return Err(MeasureError::Cuda("NVRTC (libnvrtc) could not be loaded".into())),
        };
        let module = self.ctx.load_module(ptx).map_err(e)?;
        self.modules.insert(src.to_string(), module);
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }

    fn upload(&self, args: &[Arg]) -> R<Vec<Option<D>>> {
        args.iter()
            .map(|a| {
                Ok(match a {
                    Arg::Buffer(Host::F32(v)) => Some(D::F32(self.stream.clone_htod(v).map_err(e)?)),
                    Arg::Buffer(Host::I32(v)) => Some(D::I32(self.stream.clone_htod(v).map_err(e)?)),
                    Arg::Buffer(Host::U8(v)) => Some(D::U8(self.stream.clone_htod(v).map_err(e)?)),
                    Arg::Value(_) => None,
                })
            })
            .collect()
    }

    fn launch_config(m: &Manifest) -> LaunchConfig {
        let l = &m.launch;
        let groups = |d: usize| (l.global[d] / l.local[d]) as u32;
        LaunchConfig {
            grid_dim: (groups(0), groups(1), groups(2)),
            block_dim: (l.local[0] as u32, l.local[1] as u32, l.local[2] as u32),
            shared_mem_bytes: 0,
        }
    }

    /// Compiles (once), uploads, launches: the first launch's output, the timed launches' times
    /// in ms, and the compile time in ms.
    pub(super) fn run(&mut self, src: &str, m: &Manifest, bound: &Bound, cfg: &RunConfig) -> R<(Host, Vec<f64>, f64)> {
        let build_ms = self.build(src)?;
        let func: CudaFunction = self.modules[src].load_function(&m.entry).map_err(e)?;
        let bufs = self.upload(&bound.args)?;
        let lc = Session::launch_config(m);
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (t0, t1) = (self.ctx.new_event(flags).map_err(e)?, self.ctx.new_event(flags).map_err(e)?);
        let launch = || -> R<f64> {
            let mut b = self.stream.launch_builder(&func);
            for (a, d) in bound.args.iter().zip(&bufs) {
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
            t0.record(&self.stream).map_err(e)?;
            #[allow(unsafe_code)]
            unsafe { b.launch(lc) }.map_err(e)?;
            t1.record(&self.stream).map_err(e)?;
            t1.synchronize().map_err(e)?;
            Ok(t0.elapsed_ms(&t1).map_err(e)? as f64)
        };
        launch()?;
        let out = match &bufs[bound.out_arg] {
            Some(D::F32(x)) => Host::F32(self.stream.clone_dtoh(x).map_err(e)?),
            Some(D::I32(x)) => Host::I32(self.stream.clone_dtoh(x).map_err(e)?),
            Some(D::U8(x)) => Host::U8(self.stream.clone_dtoh(x).map_err(e)?),
            None => return Err(MeasureError::Cuda("output buffer missing".into())),
        };
        Ok((out, timed_runs(cfg, launch)?, build_ms))
    }
}

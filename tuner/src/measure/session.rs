//! A session on one device: the runtime's context and queue are made once, and each kernel
//! source is built once however often it runs (building dominates a run on pocl).

use super::bind::bind;
use super::{cuda, opencl, DeviceSpec, MeasureError, RunConfig, R};
use mapsat_codegen::Manifest;
use mapsat_ir::interp::Tensor;

/// What one kernel run on a device gave.
#[derive(Clone, Debug)]
pub struct DeviceRun {
    /// The first launch's result (written over a poisoned output buffer).
    pub output: Tensor,
    /// Times of the timed launches in milliseconds, in launch order.
    pub times_ms: Vec<f64>,
    /// Time spent building the kernel in milliseconds (0 when it was built before).
    pub build_ms: f64,
}

enum Runtime {
    OpenCl(opencl::Session),
    Cuda(cuda::Session),
}

/// An open device: see the module documentation.
pub struct Session {
    device: DeviceSpec,
    rt: Runtime,
}

impl Session {
    /// Opens a device (an error names what is missing: runtime, platform, device).
    pub fn open(device: DeviceSpec) -> R<Session> {
        let rt = match device {
            DeviceSpec::OpenCl(p, d) => Runtime::OpenCl(opencl::Session::open(p, d)?),
            DeviceSpec::Cuda(n) => Runtime::Cuda(cuda::Session::open(n)?),
        };
        Ok(Session { device, rt })
    }

    /// The device.
    pub fn device(&self) -> DeviceSpec {
        self.device
    }

    /// The device's description (its name and platform).
    pub fn name(&self) -> &str {
        match &self.rt {
            Runtime::OpenCl(s) => &s.name,
            Runtime::Cuda(s) => &s.name,
        }
    }

    /// Runs a kernel (`src` in the device's dialect, described by `m`) on `inputs` (in program
    /// parameter order): a first launch whose output is returned as a tensor of `out_shape`,
    /// then `cfg.warmup - 1` untimed and `cfg.runs` timed launches. `cfg.check` is not used here.
    pub fn run(
        &mut self,
        src: &str,
        m: &Manifest,
        inputs: &[Tensor],
        out_shape: Vec<usize>,
        cfg: &RunConfig,
    ) -> R<DeviceRun> {
        if m.target != self.device.dialect() {
            return Err(MeasureError::Device(format!("a {} kernel cannot run on {}", m.target.name(), self.device)));
        }
        let device = match &self.rt {
            Runtime::OpenCl(s) => s.memory()?,
            Runtime::Cuda(s) => s.memory()?,
        };
        super::memory::check(m, device, super::memory::host_available())?;
        let bound = bind(m, inputs)?;
        let (out, times_ms, build_ms) = match &mut self.rt {
            Runtime::OpenCl(s) => s.run(src, m, &bound, cfg)?,
            Runtime::Cuda(s) => s.run(src, m, &bound, cfg)?,
        };
        let n: usize = out_shape.iter().product();
        let output = out.into_tensor(out_shape);
        if output.data.len() != n {
            return Err(MeasureError::Input(format!(
                "the output has {} elements, its shape {:?} has {n}",
                output.data.len(),
                output.shape
            )));
        }
        Ok(DeviceRun { output, times_ms, build_ms })
    }
}

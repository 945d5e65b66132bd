//! Device names on the command line (`opencl:P:D`, `cuda:N`) and the list of devices.

use super::{cuda, opencl, MeasureError};
use std::fmt;

/// A device name: `opencl:P:D` or `cuda:N` (`opencl:P` is device 0 of platform P, `opencl`
/// and `cuda` the first device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    /// Platform and device index of the OpenCL ICD loader.
    OpenCl(usize, usize),
    /// CUDA device ordinal.
    Cuda(usize),
}

impl DeviceSpec {
    /// The kernel language the device runs.
    pub fn dialect(self) -> mapsat_codegen::Dialect {
        match self {
            DeviceSpec::OpenCl(..) => mapsat_codegen::Dialect::OpenCl,
            DeviceSpec::Cuda(_) => mapsat_codegen::Dialect::Cuda,
        }
    }
}

impl std::str::FromStr for DeviceSpec {
    type Err = MeasureError;
    fn from_str(s: &str) -> Result<DeviceSpec, MeasureError> {
        let bad = || {
            MeasureError::Device(format!("bad device `{s}`: use opencl:PLATFORM:DEVICE (e.g. opencl:0:0) or cuda:N"))
        };
        let parts: Vec<&str> = s.split(':').collect();
        let num = |x: &str| x.parse::<usize>().map_err(|_| bad());
        match parts.as_slice() {
            ["opencl", p, d] => Ok(DeviceSpec::OpenCl(num(p)?, num(d)?)),
            ["opencl", p] => Ok(DeviceSpec::OpenCl(num(p)?, 0)),
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

/// Is the device a CPU (an OpenCL CPU device; CUDA devices are not)?
pub fn is_cpu(device: DeviceSpec) -> Result<bool, MeasureError> {
    match device {
        DeviceSpec::OpenCl(p, d) => opencl::is_cpu(p, d),
        DeviceSpec::Cuda(_) => Ok(false),
    }
}

/// Bytes of the cache in front of the device's global memory: `CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`
/// for OpenCL, the L2 size for CUDA.
pub fn cache_bytes(device: DeviceSpec) -> Result<u64, MeasureError> {
    match device {
        DeviceSpec::OpenCl(p, d) => opencl::cache_bytes(p, d),
        DeviceSpec::Cuda(n) => cuda::cache_bytes(n),
    }
}

/// One line per device, or a line saying why a runtime is missing.
pub fn list_devices() -> Vec<String> {
    let mut out = opencl::list();
    out.extend(cuda::list());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_round_trip() {
        for s in ["opencl:0:0", "opencl:2:1", "cuda:0", "cuda:3"] {
            assert_eq!(s.parse::<DeviceSpec>().unwrap().to_string(), s);
        }
        assert_eq!("opencl".parse::<DeviceSpec>().unwrap(), DeviceSpec::OpenCl(0, 0));
        assert_eq!("opencl:1".parse::<DeviceSpec>().unwrap(), DeviceSpec::OpenCl(1, 0));
        for bad in ["gpu", "opencl:x:0", "cuda:-1", "opencl:0:0:0"] {
            assert!(bad.parse::<DeviceSpec>().is_err(), "{bad}");
        }
    }
}

//! The device profile a tune maps and scores under.

use crate::error::Error;
use crate::ir::profile::Profile;
use mapsat_tuner::measure::{self, DeviceSpec};

/// The profile of `device`: the profile file or built-in name `target` when given, else an
/// OpenCL device's own limits (a CPU device's with pocl's rates); a CUDA device needs `target`.
pub fn tune_profile(target: Option<&str>, device: DeviceSpec) -> Result<Profile, Error> {
    let rejected = |e: measure::MeasureError| Error::Rejected(format!("error: {e}"));
    if let Some(t) = target {
        return Profile::load(t).map_err(|e| Error::Usage(e.to_string()));
    }
    match device {
        DeviceSpec::OpenCl(..) => {
            let mut p = measure::opencl_profile(device).map_err(rejected)?;
            if p.private_mem_bytes == measure::CPU_PRIVATE_MEM_BYTES {
                p.rates = Profile::builtin("pocl-cpu").and_then(|b| b.rates);
            }
            Ok(p)
        }
        DeviceSpec::Cuda(_) => {
            measure::cuda_driver().map_err(rejected)?;
            Err(Error::Usage(
                "give the CUDA device's profile with --target (built-in: h100), or a file from `mapsat calibrate`"
                    .into(),
            ))
        }
    }
}

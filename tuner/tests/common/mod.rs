//! Shared by the tuner's integration tests.

use mapsat_tuner::measure;

/// Is there an OpenCL device `opencl:0:0` (pocl in CI)? Without one the device runs are skipped
/// with a message, unless `MAPSAT_REQUIRE_OPENCL` is set (CI sets it), which makes it a failure.
pub fn opencl_present() -> bool {
    let devices = measure::list_devices();
    let present = devices.iter().any(|d| d.starts_with("opencl:0:0"));
    if !present {
        assert!(std::env::var("MAPSAT_REQUIRE_OPENCL").is_err(), "no OpenCL device: {devices:?}");
        eprintln!("device runs skipped: no OpenCL device ({devices:?})");
    }
    present
}

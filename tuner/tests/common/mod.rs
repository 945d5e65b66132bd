//! Shared by the tuner's integration tests.
#![allow(dead_code)]

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

/// A small deterministic generator (SplitMix64), so that generated programs are the same
/// everywhere.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }

    /// One of `xs` (not empty).
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize].clone()
    }
}

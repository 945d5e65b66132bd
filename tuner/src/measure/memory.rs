//! A kernel's buffers against the memory there is, before any is allocated: a device buffer
//! larger than the device allocates at once, buffers beyond its global memory, or host copies
//! beyond the memory this machine has available are refused with the figures. Allocated
//! anyway, they failed late (`CL_INVALID_BUFFER_SIZE` after gigabytes of host copies were
//! written) or got this process killed by the system for want of memory.

use super::{MeasureError, R};
use mapsat_codegen::kir::Space;
use mapsat_codegen::Manifest;

/// A device's memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Global memory in all (OpenCL's `CL_DEVICE_GLOBAL_MEM_SIZE`; CUDA's free memory).
    pub global: u64,
    /// The largest buffer allocated at once (`CL_DEVICE_MAX_MEM_ALLOC_SIZE`).
    pub max_alloc: u64,
    /// What the two are called, for messages.
    pub names: [&'static str; 2],
    /// The device's memory is this machine's (a CPU device, pocl's).
    pub host: bool,
}

/// How many times its buffers' bytes a run holds in this machine's memory: the inputs as given,
/// the copies bound to the kernel's arguments (outputs and temporaries poisoned), the result
/// read back, and for a CPU device the device's own buffers (measured with pocl: 2.1 to 3.9
/// times; a GPU's runs hold about 2).
fn host_factor(device: DeviceMemory) -> u64 {
    if device.host {
        4
    } else {
        2
    }
}

/// Refuses `m`'s global buffers when one is larger than `device.max_alloc`, when together they
/// exceed `device.global`, or when what a run holds of them in this machine's memory
/// ([`host_factor`]) exceeds `host_available` bytes (none: not known).
pub fn check(m: &Manifest, device: DeviceMemory, host_available: Option<u64>) -> R<()> {
    let global = m.buffers.iter().filter(|b| b.space == Space::Global && !b.by_value);
    let mut total: u64 = 0;
    for b in global {
        if b.bytes > device.max_alloc {
            return Err(MeasureError::Input(format!(
                "buffer `{}` of {} elements needs {} B; the device allocates at most {} B at once ({}): give smaller sizes",
                b.name, b.len, b.bytes, device.max_alloc, device.names[1]
            )));
        }
        total = total.saturating_add(b.bytes);
    }
    if total > device.global {
        return Err(MeasureError::Input(format!(
            "the kernel's buffers need {total} B in all; the device has {} B of global memory ({}): give smaller sizes",
            device.global, device.names[0]
        )));
    }
    let held = total.saturating_mul(host_factor(device));
    match host_available {
        Some(h) if held > h => Err(MeasureError::Input(format!(
            "the kernel's buffers need {total} B in all; a run holds about {held} B of them in this machine's memory (copies{}), which has {h} B available: give smaller sizes",
            if device.host { ", and the CPU device's own buffers" } else { "" }
        ))),
        _ => Ok(()),
    }
}

/// The memory this machine has available (Linux's `MemAvailable`), if known.
pub fn host_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapsat_codegen::kir::Role;
    use mapsat_codegen::BufferInfo;
    use mapsat_ir::ScalarKind;

    fn manifest(buffers: &[(&str, u64)]) -> Manifest {
        let p = mapsat_ir::parse("size N = 4\ndef f(x: [f32]N) : [f32]N = mapGlb(0, fun(v => v), x)").unwrap();
        let mut sizes = mapsat_ir::Sizes::new();
        sizes.insert("N", 4);
        let opts = mapsat_codegen::Options { sizes, ..Default::default() };
        let (_, mut m) = mapsat_codegen::emit(&p, &opts, mapsat_codegen::Dialect::OpenCl).expect("a kernel");
        m.buffers = buffers
            .iter()
            .map(|(name, bytes)| BufferInfo {
                name: name.to_string(),
                role: Role::Temp,
                space: Space::Global,
                elem: ScalarKind::F32,
                len: (*bytes / 4) as i64,
                bytes: *bytes,
                arg: Some(0),
                param: None,
                by_value: false,
            })
            .collect();
        m
    }

    const DEVICE: DeviceMemory = DeviceMemory { global: 1000, max_alloc: 400, names: ["g", "a"], host: false };

    #[test]
    fn buffers_within_the_limits_pass() {
        assert!(check(&manifest(&[("a", 400), ("b", 400), ("c", 200)]), DEVICE, Some(2000)).is_ok());
        assert!(check(&manifest(&[("a", 400)]), DEVICE, None).is_ok());
    }

    #[test]
    fn a_buffer_or_buffers_beyond_the_limits_are_refused_with_the_figures() {
        let one = check(&manifest(&[("tmp_A", 404)]), DEVICE, None).unwrap_err().to_string();
        assert!(one.contains("`tmp_A` of 101 elements needs 404 B") && one.contains("at most 400 B"), "{one}");
        let all = check(&manifest(&[("a", 400), ("b", 400), ("c", 204)]), DEVICE, None).unwrap_err().to_string();
        assert!(all.contains("need 1004 B in all") && all.contains("1000 B of global memory"), "{all}");
        // A run holds twice the buffers in this machine's memory, four times on a CPU device.
        assert!(check(&manifest(&[("a", 300)]), DEVICE, Some(600)).is_ok());
        let host = check(&manifest(&[("a", 300)]), DEVICE, Some(599)).unwrap_err().to_string();
        assert!(host.contains("about 600 B of them") && host.contains("599 B available"), "{host}");
        let cpu = DeviceMemory { host: true, ..DEVICE };
        assert!(check(&manifest(&[("a", 300)]), cpu, Some(1199)).unwrap_err().to_string().contains("CPU device"));
        // Sizes near u64's end do not wrap.
        let huge = DeviceMemory { global: u64::MAX - 1, max_alloc: u64::MAX, names: ["g", "a"], host: false };
        assert!(check(&manifest(&[("a", u64::MAX), ("b", u64::MAX)]), huge, None).is_err());
    }
}

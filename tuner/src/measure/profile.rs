//! A real device's limits as a device profile (`mapsat devices --profile`).

use super::{opencl, DeviceSpec, MeasureError, R};
use mapsat_ir::profile::Profile;

/// Private memory per work item assumed for an OpenCL CPU device (`CL_DEVICE_TYPE_CPU`):
/// 64 KiB, the work-item stack of pocl's CPU drivers, where private arrays live (the figure of
/// the shipped `pocl-cpu` profile). OpenCL has no query for it: a conservative choice by mapsat.
pub const CPU_PRIVATE_MEM_BYTES: u64 = 64 * 1024;

/// Private memory of a whole work group assumed for a CPU OpenCL device (pocl: a work group's
/// private variables live in its worker thread's stack, 8 MiB by default): half that stack, a
/// bound chosen by mapsat (see `ir/profiles/pocl-cpu.toml`).
pub const CPU_PRIVATE_GROUP_BYTES: u64 = 4 * 1024 * 1024;

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
/// - `vector_width`: `CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT` (at least 1);
/// - `address_bits`: `CL_DEVICE_ADDRESS_BITS`.
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
    let group = format!(
        "Not an OpenCL figure either (only for a CL_DEVICE_TYPE_CPU device): pocl keeps a work group's\n\
         private variables in its worker thread's stack (8 MiB by default); half that, {CPU_PRIVATE_GROUP_BYTES}."
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
        ("private_group_bytes", group.as_str()),
        ("vector_width", "CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT."),
        ("address_bits", "CL_DEVICE_ADDRESS_BITS."),
    ];
    Ok(profile.to_toml(&header, &notes)?)
}

/// A profile name from a device name: lower-case ASCII letters and digits, every other run of
/// characters one `-`.
pub(super) fn slug(name: &str) -> String {
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
pub(super) fn one_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '\0').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
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

//! Reads the limits of the pocl CPU device as a device profile (`measure::opencl_profile`) and
//! checks them against figures obtained independently of mapsat: `clinfo --raw` when clinfo is
//! installed, else the shipped `ir/profiles/pocl-cpu.toml` (read with clinfo on pocl 3.1).
//!
//! Without a pocl device the test is skipped with a message, unless `MAPSAT_REQUIRE_OPENCL=1`
//! (CI sets it) makes that a failure.

use mapsat_ir::profile::Profile;
use mapsat_tuner::measure::{self, DeviceSpec, CPU_PRIVATE_MEM_BYTES};
use std::process::Command;

/// The first pocl device, from `measure::list_devices` (lines `opencl:P:D  NAME (PLATFORM); ...`;
/// pocl's platform is "Portable Computing Language").
fn pocl_device() -> Option<DeviceSpec> {
    let devices = measure::list_devices();
    let found = devices
        .iter()
        .filter(|l| l.starts_with("opencl:") && l.contains("(Portable Computing Language)"))
        .find_map(|l| l.split_whitespace().next()?.parse().ok());
    if found.is_none() {
        assert!(std::env::var("MAPSAT_REQUIRE_OPENCL").is_err(), "no pocl OpenCL device: {devices:?}");
        eprintln!("skipped: no pocl OpenCL device ({devices:?})");
    }
    found
}

/// The values clinfo reports for `device`, as `(property, value)` from `clinfo --raw -d P:D`
/// (lines `[PLATFORM/D]  CL_PROPERTY  VALUE`); `None` when clinfo is missing or fails.
fn clinfo(device: DeviceSpec) -> Option<Vec<(String, String)>> {
    let DeviceSpec::OpenCl(p, d) = device else { return None };
    let out = Command::new("clinfo").args(["--raw", "-d", &format!("{p}:{d}")]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let props: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace().skip(1);
            let key = words.next()?;
            key.starts_with("CL_").then(|| (key.to_string(), words.collect::<Vec<_>>().join(" ")))
        })
        .collect();
    (!props.is_empty()).then_some(props)
}

fn number(props: &[(String, String)], key: &str) -> u64 {
    let (_, v) = props.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("clinfo has no {key}"));
    v.parse().unwrap_or_else(|_| panic!("clinfo {key} = `{v}` is not a number"))
}

#[test]
fn pocl_profile_matches_independent_figures() {
    let Some(device) = pocl_device() else { return };
    let p = measure::opencl_profile(device).expect("profile of the pocl device");

    // The written file reads back to the same profile and names its sources.
    let text = measure::opencl_profile_toml(&p, device).expect("to TOML");
    assert_eq!(Profile::from_toml(&text, "written").expect("reads back"), p, "{text}");
    for query in [
        "CL_DEVICE_MAX_COMPUTE_UNITS",
        "CL_DEVICE_MAX_WORK_GROUP_SIZE",
        "CL_DEVICE_MAX_WORK_ITEM_SIZES",
        "CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS",
        "CL_DEVICE_LOCAL_MEM_SIZE",
        "CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT",
        "CL_DEVICE_ADDRESS_BITS",
    ] {
        assert!(text.lines().any(|l| l.starts_with('#') && l.contains(query)), "no comment citing {query}:\n{text}");
    }

    // pocl's devices are CPUs: three dimensions, and mapsat's CPU choice of private memory.
    assert_eq!(p.max_dims, 3);
    assert_eq!(p.private_mem_bytes, CPU_PRIVATE_MEM_BYTES);
    assert!(p.description.contains("Portable Computing Language"), "{}", p.description);

    match clinfo(device) {
        Some(props) => {
            eprintln!("comparing with clinfo --raw");
            assert_eq!(p.max_work_group_size, number(&props, "CL_DEVICE_MAX_WORK_GROUP_SIZE"));
            assert_eq!(p.local_mem_bytes, number(&props, "CL_DEVICE_LOCAL_MEM_SIZE"));
            assert_eq!(u64::from(p.compute_units), number(&props, "CL_DEVICE_MAX_COMPUTE_UNITS"));
            assert_eq!(u64::from(p.max_dims), number(&props, "CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS"));
            assert_eq!(u64::from(p.vector_width), number(&props, "CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT"));
            assert_eq!(u64::from(p.address_bits), number(&props, "CL_DEVICE_ADDRESS_BITS"));
            let (_, sizes) = props.iter().find(|(k, _)| k == "CL_DEVICE_MAX_WORK_ITEM_SIZES").expect("item sizes");
            let sizes: Vec<u64> = sizes.split_whitespace().map(|s| s.parse().expect("item size")).collect();
            assert_eq!(p.max_work_item_sizes.to_vec(), sizes);
        }
        None => {
            eprintln!("clinfo is not installed: comparing with ir/profiles/pocl-cpu.toml");
            let shipped = Profile::builtin("pocl-cpu").expect("shipped pocl-cpu profile");
            assert_eq!(p.max_work_group_size, shipped.max_work_group_size);
            assert_eq!(p.max_work_item_sizes, shipped.max_work_item_sizes);
            assert_eq!(p.address_bits, shipped.address_bits);
            // pocl sizes local memory from the CPU's cache (the shipped 1 MiB was read on another
            // machine; a 512 KiB-L2 machine reads 512 KiB): only the OpenCL minimum is portable.
            assert!(p.local_mem_bytes >= 32 * 1024, "local memory {} below OpenCL's 32 KiB", p.local_mem_bytes);
        }
    }
}

#[test]
fn missing_devices_are_errors_not_panics() {
    // With or without OpenCL: platform 99 does not exist.
    let err = measure::opencl_profile(DeviceSpec::OpenCl(99, 0)).expect_err("no such platform");
    assert!(err.to_string().contains("platform"), "{err}");
    assert!(measure::opencl_profile(DeviceSpec::Cuda(0)).is_err());
}

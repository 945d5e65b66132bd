//! `mapsat devices --profile DEVICE`: the limits of an OpenCL device as a profile file.

mod common;

use common::mapsat;
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_device_specs_are_usage_errors() {
    for spec in ["gpu", "opencl:x:0", "opencl:0:0:0", "cuda:0"] {
        let out = mapsat(&["devices", "--profile", spec]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains("opencl:PLATFORM:DEVICE"), "{spec}: {err}");
        assert!(out.stdout.is_empty(), "{spec}");
        assert!(!err.contains("panicked"), "{spec}: {err}");
    }
}

#[test]
fn missing_devices_are_rejected() {
    // Exit 1 with a message, with or without an OpenCL runtime.
    let out = mapsat(&["devices", "--profile", "opencl:99:0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_written_profile_is_a_target() {
    let list = String::from_utf8_lossy(&mapsat(&["devices"]).stdout).into_owned();
    if !list.lines().any(|l| l.starts_with("opencl:0:0")) {
        assert!(std::env::var("MAPSAT_REQUIRE_OPENCL").is_err(), "no OpenCL device: {list}");
        eprintln!("skipped: no OpenCL device ({list})");
        return;
    }
    let out = mapsat(&["devices", "--profile", "opencl:0:0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(text.starts_with("# "), "{text}");
    let dir = std::env::temp_dir().join(format!("mapsat-devices-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("mydev.toml");
    std::fs::write(&file, &text).expect("write profile");
    let out = mapsat(&["space", "examples/dot.lift", "--target", file.to_str().expect("path")]);
    let _ = std::fs::remove_dir_all(&dir);
    let name = text.lines().find_map(|l| l.strip_prefix("name = ")).expect("a name line");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "the written profile was not accepted: {}\n{text}", stderr(&out));
    assert!(stdout.contains(&format!("target: {}", name.trim_matches('"'))), "{stdout}");
}

/// On a machine without a CUDA driver, `tune` and `calibrate` on `cuda:0` say so first, as
/// `run` does (they asked for a `--target` profile, and only with one said there is no driver).
#[test]
fn a_missing_cuda_driver_is_said_before_a_profile_is_asked_for() {
    let devices = String::from_utf8_lossy(&mapsat(&["devices"]).stdout).into_owned();
    if !devices.contains("no CUDA driver") {
        eprintln!("skipped: this machine has a CUDA driver");
        return;
    }
    let dir = std::env::temp_dir().join(format!("mapsat-no-cuda-{}", std::process::id()));
    let (out_dir, toml) = (dir.join("t"), dir.join("c.toml"));
    for args in [
        vec!["tune", "examples/dot.lift", "--device", "cuda:0", "--trials", "2", "-o", out_dir.to_str().unwrap()],
        vec!["calibrate", "--device", "cuda:0", "-o", toml.to_str().unwrap()],
    ] {
        let out = mapsat(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("no CUDA driver") && !err.contains("--target"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

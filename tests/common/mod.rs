//! Shared by the end-to-end tests of the `mapsat` binary (each test file uses some of it).
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root, where the tests run `mapsat`.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `mapsat ARGS` from the repository root.
pub fn mapsat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mapsat")).args(args).current_dir(root()).output().expect("run mapsat")
}

/// Standard output, then standard error.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A fresh scratch folder, `mapsat-PREFIX-NAME-PID` in the temporary folder.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mapsat-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Is there an OpenCL device `opencl:0:0` (pocl in CI)? Without one the tests that run kernels
/// are skipped with a message, unless `MAPSAT_REQUIRE_OPENCL` is set (CI), which makes it a
/// failure.
pub fn opencl() -> bool {
    let out = mapsat(&["devices"]);
    let present = String::from_utf8_lossy(&out.stdout).lines().any(|l| l.starts_with("opencl:0:0"));
    if !present {
        assert!(std::env::var("MAPSAT_REQUIRE_OPENCL").is_err(), "no OpenCL device:\n{}", text(&out));
        eprintln!("skipped: no OpenCL device");
    }
    present
}

/// A JSON file (a report, a manifest, a summary).
pub fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The trial records of a tuning log (not its header or the confirming re-measurements).
pub fn trials(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).expect("log");
    let lines = text.lines().map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"));
    lines.filter(|v| v["kind"] == "trial").collect()
}

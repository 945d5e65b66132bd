//! Syntax- and type-checks every blessed OpenCL kernel (`tests/out/opencl/*.cl` at the
//! repository root) with clang's OpenCL C 1.2 front end: the pocl `run` tests compile the
//! kernels they run, but kernels emitted only at sizes too large to run (the 64-bit ones of
//! `tests/filetests/kernels/wide_*.lift`) are compiled nowhere else.
//!
//! Without `clang-14` on the PATH the test is skipped with a message, unless
//! `MAPSAT_REQUIRE_CLANG=1` (CI sets it) makes that a failure.

use std::path::Path;
use std::process::Command;

fn clang() -> Option<&'static str> {
    let ok = Command::new("clang-14").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("MAPSAT_REQUIRE_CLANG").map_or(true, |v| v != "1"),
            "clang-14 is missing but MAPSAT_REQUIRE_CLANG=1"
        );
        eprintln!("skipped: clang-14 not found (install the Debian package clang-14)");
        return None;
    }
    Some("clang-14")
}

/// The kernel of a blessed file: the text before its `// manifest:` comment.
fn check(clang: &str, file: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let kernel = text.split("\n// manifest:").next().unwrap_or_default();
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("kernel.cl");
    let path = std::env::temp_dir().join(format!("mapsat-{}-{name}", std::process::id()));
    std::fs::write(&path, kernel).map_err(|e| format!("{}: {e}", path.display()))?;
    let out = Command::new(clang)
        .args(["-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header", "-fsyntax-only"])
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let out = out.map_err(|e| format!("{}: {e}", file.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}:\n{}", file.display(), String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn blessed_opencl_kernels_compile_with_clang() {
    let Some(clang) = clang() else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/out/opencl");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("tests/out/opencl").flatten().map(|e| e.path()).collect();
    files.retain(|f| f.extension().is_some_and(|e| e == "cl"));
    files.sort();
    assert!(files.iter().any(|f| f.ends_with("wide_clamp.cl")), "the 64-bit kernels are blessed");
    let failures: Vec<String> = files.iter().filter_map(|f| check(clang, f).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn clang_rejects_an_ambiguous_clamp() {
    // The check is not vacuous: a 64-bit clamp with int bounds is ambiguous in OpenCL C.
    let Some(clang) = clang() else { return };
    let path = std::env::temp_dir().join(format!("mapsat-ambiguous-{}.cl", std::process::id()));
    let src = "__kernel void k(__global float* out) { long i = get_global_id(0); out[clamp(i, 0, 9)] = 1.0f; }\n";
    std::fs::write(&path, src).expect("write");
    let r = check(clang, &path);
    let _ = std::fs::remove_file(&path);
    assert!(r.is_err_and(|e| e.contains("ambiguous")));
}

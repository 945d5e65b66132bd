//! Syntax- and type-checks every blessed CUDA kernel (`tests/out/cuda/*.cu` at the repository
//! root, written by the file tests of `tests/filetests/kernels/`) with clang's CUDA
//! front end, so that CUDA output is compiled even where there is no GPU (see
//! `../shared/GPU.md`): `clang-14 -x cuda -nocudainc` with `tests/cuda_shim.h` standing in for
//! the CUDA headers.
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

fn check(clang: &str, file: &Path) -> Result<(), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let out = Command::new(clang)
        .args(["-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "--cuda-device-only"])
        .arg("-include")
        .arg(dir.join("cuda_shim.h"))
        .args(["-fsyntax-only", "-Werror=implicit-function-declaration"])
        .arg(file)
        .output()
        .map_err(|e| format!("{}: {e}", file.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}:\n{}", file.display(), String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn blessed_cuda_kernels_compile_with_clang() {
    let Some(clang) = clang() else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/out/cuda");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("tests/out/cuda").flatten().map(|e| e.path()).collect();
    files.retain(|f| f.extension().is_some_and(|e| e == "cu"));
    files.sort();
    assert!(files.len() >= 10, "too few blessed kernels: {}", files.len());
    let failures: Vec<String> = files.iter().filter_map(|f| check(clang, f).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn clang_rejects_a_broken_kernel() {
    // The check is not vacuous: an undeclared name fails.
    let Some(clang) = clang() else { return };
    let path = std::env::temp_dir().join(format!("mapsat-broken-{}.cu", std::process::id()));
    std::fs::write(&path, "extern \"C\" __global__ void k(float* out) { out[threadIdx.x] = undeclared; }\n")
        .expect("write");
    let r = check(clang, &path);
    let _ = std::fs::remove_file(&path);
    assert!(r.is_err_and(|e| e.contains("undeclared")));
}

//! Issue #10 end to end: `mapsat rewrite` offers the 2-D stencils (`examples/blur2d.lift`, and
//! each stage of `examples/jacobi2d.lift`) tiled in two dimensions with each tile copied to
//! local memory; the mapping of tiles over work groups and of the copy and the windows over
//! local ids is valid, and its kernels run on the OpenCL device equal to the interpreter at
//! several image and tile sizes.

mod common;

use common::{mapsat, opencl, scratch, text};

/// The text of the variant of `file` that `mapsat rewrite` writes with `tile_slides` tile slides
/// and its tiles copied to local memory.
fn tiled_and_staged(file: &str, tile_slides: usize) -> (std::path::PathBuf, String) {
    let dir = scratch("stencil2d", &file.replace(['/', '.'], "_"));
    let out = mapsat(&["rewrite", file, "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for k in 0..8 {
        let path = dir.join(format!("variant_{k:02}.lift"));
        let Ok(t) = std::fs::read_to_string(&path) else { break };
        let structure = t.lines().next().unwrap_or_default();
        if structure.matches("W[").count() == tile_slides && t.contains("toLocal(map@copy") {
            return (path, t);
        }
    }
    panic!("{file}: no variant tiled in two dimensions and staged among 8:\n{}", text(&out));
}

/// Checks that `mapping` is valid for the variant and, with an OpenCL device, that it runs equal
/// to the interpreter at each of `sizes`.
fn maps_and_runs(path: &std::path::Path, mapping: &str, sizes: &[&str]) {
    let v = path.to_str().unwrap();
    let out = mapsat(&["explain", v, "--mapping", mapping]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("needs a barrier between map copy"), "{}", text(&out));
    if !opencl() {
        return;
    }
    for s in sizes {
        let out = mapsat(&["run", v, "--size", s, "--mapping", mapping, "--check", "--runs", "1"]);
        assert_eq!(out.status.code(), Some(0), "{s}: {}", text(&out));
        assert!(text(&out).contains("check: ok"), "{s}: {}", text(&out));
    }
}

#[test]
fn blur2d_tiled_and_staged_runs_with_tiles_over_work_groups() {
    let (path, t) = tiled_and_staged("examples/blur2d.lift", 2);
    assert!(t.contains("slide(tA_1 + 2, tA_1)"), "{t}");
    let mapping = "A_0=W1,A_1=W0,copy1=L1,copy2=L0,A_0_i=L1,A_1_i=L0";
    maps_and_runs(&path, mapping, &["H=16,W=16", "H=24,W=40,tA_0=8,tA_1=5", "H=20,W=12,tA_0=2,tA_1=6"]);
    // A tile step that does not divide the image is refused, not run.
    let out = mapsat(&["run", path.to_str().unwrap(), "--size", "H=20,W=12,tA_0=3", "--mapping", mapping]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[test]
fn jacobi2d_stages_tiled_and_staged_run_as_two_kernels() {
    let (path, _) = tiled_and_staged("examples/jacobi2d.lift", 4);
    let a = "A_0=W1,A_1=W0,copy1=L1,copy2=L0,A_0_i=L1,A_1_i=L0";
    let b = "B_0=W1,B_1=W0,copy3=L1,copy4=L0,B_0_i=L1,B_1_i=L0";
    maps_and_runs(&path, &format!("{a},{b}"), &["H=16,W=16", "H=24,W=40,tA_0=8,tA_1=5,tB_0=4,tB_1=10"]);
}

/// Issue #9 in two dimensions: among jacobi2d's default 8 variants, one computes `u1` per tile of
/// `B` into local memory (`stages u1 local`); with the tiles over work groups and `u1`'s tile and
/// `B`'s windows over local ids it runs as one kernel equal to the interpreter.
#[test]
fn jacobi2d_u1_computed_per_tile_in_local_memory_runs_with_tiles_over_work_groups() {
    let dir = scratch("stencil2d", "jacobi2d_u1_local");
    // Time enough for the stage phase to reach its node budget on a loaded machine.
    let out = mapsat(&["rewrite", "examples/jacobi2d.lift", "--time-limit", "120", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = text(&out);
    let line = stdout.lines().find(|l| l.ends_with("stages u1 local")).unwrap_or_else(|| panic!("{stdout}"));
    let path = dir.join(line.split(':').next().unwrap());
    let t = std::fs::read_to_string(&path).unwrap();
    assert!(!t.contains("toGlobal") && t.contains("toLocal("), "{t}");
    let v = path.to_str().unwrap();
    let mapping = "B_0=W1,B_1=W0,A_1_t=L1,A_1_ti=L0,B_0_i=L1,B_1_i=L0";
    let out = mapsat(&["explain", v, "--mapping", mapping]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("needs a barrier between map A_1_t and its readers"), "{}", text(&out));
    if !opencl() {
        return;
    }
    for s in ["H=16,W=16", "H=24,W=40,tB_0=4,tB_1=10", "H=20,W=12,tB_0=2,tB_1=6", "H=3,W=5,tB_0=1,tB_1=5"] {
        let out = mapsat(&["run", v, "--size", s, "--mapping", mapping, "--check", "--runs", "1"]);
        assert_eq!(out.status.code(), Some(0), "{s}: {}", text(&out));
        assert!(text(&out).contains("check: ok"), "{s}: {}", text(&out));
    }
}

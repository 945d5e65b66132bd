//! Issue #10 end to end for matmul: `mapsat rewrite examples/matmul.lift` offers among its
//! default variants the 2-D tiled matmul with its panels in local memory (each block's rows of
//! `a` and columns of `b` copied once per work group, `let aLocal = toLocal(map@copy1(..))`),
//! its dot products split by `tK` as in `examples/matmul_tiled.lift`. With the blocks over work
//! groups and the copies and the block's outputs over local ids, it runs on the OpenCL device
//! equal to the interpreter, at several sizes and tile sizes.

mod common;

use common::{mapsat, opencl, scratch, text};

/// Blocks over work groups (rows of blocks on dimension 1), the copies and the block's rows and
/// columns over local ids 1 and 0; each work item sums its dot product chunk by chunk.
const ROWS_ON_1: &str = "A=W1,B=W0,copy1=L1,copy2=L0,copy3=L1,copy4=L0,A_i_f=L1,B_i=L0,RtK=S,C=S";

/// The same with the dimensions swapped.
const ROWS_ON_0: &str = "A=W0,B=W1,copy1=L0,copy2=L1,copy3=L0,copy4=L1,A_i_f=L0,B_i=L1,RtK=S,C=S";

/// The path of the staged, 2-D tiled, `tK`-split variant among the default variants of matmul.
fn staged_variant() -> std::path::PathBuf {
    let dir = scratch("matmul-panels", "matmul");
    let out = mapsat(&["rewrite", "examples/matmul.lift", "--time-limit", "300", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for k in 0..mapsat::rewrite::VARIANTS {
        let path = dir.join(format!("variant_{k:02}.lift"));
        let Ok(t) = std::fs::read_to_string(&path) else { break };
        let t: String = t.split_whitespace().collect();
        if t.contains("letaLocal=toLocal(map@copy1(") && t.contains("split(tK,zip(") && t.contains("split(tA,a)") {
            return path;
        }
    }
    panic!("matmul: no 2-D tiled variant with its panels in local memory among the default:\n{}", text(&out));
}

#[test]
fn matmul_with_panels_in_local_memory_runs_with_blocks_over_work_groups() {
    let path = staged_variant();
    let v = path.to_str().unwrap();
    for mapping in [ROWS_ON_1, ROWS_ON_0] {
        let out = mapsat(&["explain", v, "--mapping", mapping]);
        assert_eq!(out.status.code(), Some(0), "{mapping}: {}", text(&out));
        assert!(text(&out).contains("map copy1 computes into local memory"), "{}", text(&out));
        assert!(text(&out).contains("map copy3 computes into local memory"), "{}", text(&out));
        if !opencl() {
            continue;
        }
        for s in ["M=8", "M=24,K=32,N=16,tA=8,tB=4,tK=4", "M=12,K=12,N=20,tA=3,tB=5,tK=6"] {
            let out = mapsat(&["run", v, "--size", s, "--mapping", mapping, "--check", "--runs", "1"]);
            assert_eq!(out.status.code(), Some(0), "{mapping} at {s}: {}", text(&out));
            assert!(text(&out).contains("check: ok"), "{mapping} at {s}: {}", text(&out));
        }
    }
}

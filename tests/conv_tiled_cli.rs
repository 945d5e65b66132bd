//! Issue #10 end to end for the direct convolution: `mapsat rewrite examples/conv.lift` offers
//! the structure of the hand-tiled `examples/conv_blocked.lift` without its register blocking
//! (spatial tiles whose input tile with its halo is copied to local memory, the output channels
//! of each pixel in groups of `tB`, the partial sums in private memory). The variant computes
//! what the input computes (interpreter), and with the tiles over work groups and the copy and
//! the pixels over local ids it runs on the OpenCL device equal to the interpreter.

mod common;

use common::{mapsat, opencl, root, scratch, text};
use mapsat::ir::{self, interp, Sizes};

/// Tiles over work groups, the tile's copy and its pixels over local ids; the groups of output
/// channels and the channels of a group sequential in each work item (fused: one loop).
const MAPPING: &str = "A_0=W1,A_1=W0,copy1=L1,copy2=L0,A_0_i=L1,A_1_i=L0,B=S,B_i=F";

/// Tiles over work groups (dimensions 2 and 1), the tile's copy over local ids; the rows of a
/// tile's pixels and the groups of output channels over local ids, each work item computing one
/// group of one row of pixels (what `mapsat tune` found fastest at 28 x 28, 32 to 32).
const GROUPS_OVER_LOCAL_IDS: &str = "A_0=W2,A_1=W1,copy1=L2,copy2=L1,A_0_i=L1,A_1_i=F,B=L2,B_i=F";

/// The path and text of the tiled, staged and grouped variant among the 16 of `conv.lift`.
fn grouped_variant() -> (std::path::PathBuf, String) {
    let dir = scratch("conv-tiled", "conv");
    let out = mapsat(&[
        "rewrite",
        "examples/conv.lift",
        "--variants",
        "16",
        "--time-limit",
        "300",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for k in 0..16 {
        let path = dir.join(format!("variant_{k:02}.lift"));
        let Ok(t) = std::fs::read_to_string(&path) else { break };
        let structure = t.lines().next().unwrap_or_default();
        let tiled = structure.contains("W[tA_0]") && structure.contains("W[tA_1]");
        if tiled && t.contains("split(tB, ks)") && t.contains("toLocal(map@copy") && t.contains("toPrivate(") {
            return (path, t);
        }
    }
    panic!("conv: no variant tiled, staged in local memory and grouped among 16:\n{}", text(&out));
}

/// Checks that the variant `v` computes what `examples/conv.lift` computes at `sizes`.
fn same_as_input(v: &str, sizes: &Sizes) {
    let input = ir::parse(&std::fs::read_to_string(root().join("examples/conv.lift")).unwrap()).unwrap();
    let variant = ir::parse(v).unwrap();
    let sizes = variant.resolve_sizes(&input.resolve_sizes(sizes).unwrap()).unwrap();
    let inputs = interp::random_inputs(&input, &sizes, 5).unwrap();
    let want = interp::eval(&input, &sizes, &inputs).unwrap();
    let got = interp::eval(&variant, &sizes, &inputs).unwrap();
    assert!(got.allclose(&want, 1e-4, 1e-4), "{sizes:?}\n{v}");
}

#[test]
fn conv_tiled_staged_and_grouped_runs_with_tiles_over_work_groups() {
    let (path, t) = grouped_variant();
    let sizes = [
        Sizes::new(),
        Sizes::new().with("inH", 12).with("inW", 10).with("outChs", 6).with("tA_0", 3).with("tA_1", 5).with("tB", 3),
    ];
    for s in &sizes {
        same_as_input(&t, s);
    }
    let v = path.to_str().unwrap();
    for mapping in [MAPPING, GROUPS_OVER_LOCAL_IDS] {
        let out = mapsat(&["explain", v, "--mapping", mapping]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(text(&out).contains("needs a barrier between map copy1"), "{}", text(&out));
        if !opencl() {
            continue;
        }
        for s in ["inH=8", "inH=12,inW=10,tA_0=3,tA_1=5,tB=3", "inH=16,inW=16,inChs=8,outChs=4,tA_0=8,tA_1=2,tB=4"] {
            let out = mapsat(&["run", v, "--size", s, "--mapping", mapping, "--check", "--runs", "1"]);
            assert_eq!(out.status.code(), Some(0), "{mapping} at {s}: {}", text(&out));
            assert!(text(&out).contains("check: ok"), "{mapping} at {s}: {}", text(&out));
        }
    }
}

/// With the tiles over work-group dimensions 1 and 0 and the pixels over local ids 1 and 0, the
/// groups of channels over local dimension 2 are refused: the constraint space (Mogers et al.'s
/// rules) wants every local dimension used to be a work-group dimension too, and every thread
/// of the work group to take part in the tile's copy (`copy1`, `copy2` use two).
#[test]
fn conv_channel_groups_over_a_third_local_dimension_are_refused() {
    let (path, _) = grouped_variant();
    let mapping = MAPPING.replace("B=S,B_i=F", "B=L2,B_i=S");
    let out = mapsat(&["explain", path.to_str().unwrap(), "--mapping", &mapping]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("every local dimension used must also be a work-group dimension"), "{}", text(&out));
}

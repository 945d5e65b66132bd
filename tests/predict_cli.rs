//! `mapsat predict`: both models' predictions for one candidate, per kernel for a program of
//! several kernels, and a clear refusal of an invalid mapping. No device is needed.

mod common;

use common::{mapsat, text};

#[test]
fn a_candidate_gets_the_analytical_terms_and_no_learned_score_without_a_model() {
    let out = mapsat(&["predict", "examples/matmul_tiled.lift", "--mapping", "A=G1,B=G0,C=S,D=S,E=S,F=S"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("analytical: ") && t.contains("compute ") && t.contains("occupancy "), "{t}");
    assert!(t.contains("learned: no model"), "{t}");
}

/// `examples/sepblur.lift` is two kernels (its `toGlobal` stage): each kernel is predicted with
/// its maps' part of the mapping, and the times add up (it was refused as one invalid kernel).
#[test]
fn a_program_of_several_kernels_is_predicted_kernel_by_kernel() {
    let mapping = ["predict", "examples/sepblur.lift", "--mapping", "A=G1,B=G0,C=G1,D=G0"];
    let out = mapsat(&mapping);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("kernel 1 of 2: sepblur_0_h") && t.contains("kernel 2 of 2: sepblur"), "{t}");
    assert_eq!(t.matches("analytical: ").count(), 2, "{t}");
    assert!(t.contains("analytical, all 2 kernels in sequence: "), "{t}");
    // Each kernel's work group, as `tune` prints them (`--local KERNEL:X,Y`), or one for all.
    let out = mapsat(&[&mapping[..], &["--local", "sepblur_0_h:4,4", "--local", "sepblur:8,2"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("local [4, 4, 1]") && t.contains("local [8, 2, 1]"), "{t}");
    let out = mapsat(&[&mapping[..], &["--local", "4,4"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = mapsat(&[&mapping[..], &["--local", "nosuch:4,4"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn an_invalid_mapping_is_refused_with_its_reason() {
    // Exit 1, as `explain` and `run` refuse it: the mapping is well formed, but not valid.
    let out = mapsat(&["predict", "examples/matmul_tiled.lift", "--mapping", "A=G0,B=G0,C=S,D=S,E=S,F=S"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("the candidate is not valid: maps A and B are nested"), "{}", text(&out));
}

/// A program, or a kernel of several, without a map that computes has one candidate, the empty
/// mapping (one work item runs it), and it is predicted as any other (it was refused: "nothing
/// to tune"); a mapping that names a map is refused.
#[test]
fn a_kernel_without_a_map_is_predicted_as_its_empty_mapping() {
    let dir = std::env::temp_dir().join(format!("mapsat-predict-no-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sum = dir.join("sum.lift");
    std::fs::write(&sum, "size N = 64\ndef sum(xs: [f32]N) : f32 = reduce(add, 0.0, xs)\n").unwrap();
    let pipe = dir.join("pipe.lift");
    let pipeline = "size N = 64\ndef pipe(x: [f32]N) : f32 =\n  let s = toGlobal(map@A(fun(a => a * 2.0), x)) in\n  reduce(add, 0.0, s)\n";
    std::fs::write(&pipe, pipeline).unwrap();
    let out = mapsat(&["predict", sum.to_str().unwrap(), "--mapping", ""]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(text(&out).matches("analytical: ").count(), 1, "{}", text(&out));
    let out = mapsat(&["predict", pipe.to_str().unwrap(), "--mapping", "A=G0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("analytical, all 2 kernels in sequence: "), "{}", text(&out));
    let out = mapsat(&["predict", sum.to_str().unwrap(), "--mapping", "A=G0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("the program has no map, so its only mapping is the empty one"), "{}", text(&out));
    // A mistake in the mapping is not blamed on the sizes (it said "not valid at its sizes").
    assert!(!text(&out).contains("not valid at its sizes"), "{}", text(&out));
    // A mapping wrong in the second kernel prints nothing of the first (it printed the
    // first kernel's prediction, then failed).
    let views = dir.join("views.lift");
    let program = "size N = 8\ndef v(xs: [[f32]N]N) : f32 =\n  let y = toGlobal(map@A(fun(r => map@B(fun(v => v + 1.0), r)), xs)) in\n  reduce(add, 0.0, join(join(join(slideND2(3, 1, 3, 1, y)))))\n";
    std::fs::write(&views, program).unwrap();
    let out = mapsat(&["predict", views.to_str().unwrap(), "--mapping", "A=G1,B=G0,m1=S"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    let says = "in the kernel of stage `v`: map `m1` only rearranges data (a view)";
    assert!(text(&out).contains(says), "{}", text(&out));
    std::fs::remove_dir_all(dir).ok();
}

/// The work-group size given for every kernel goes to those with a parallel map, as in `run`
/// (`predict` refused a pipeline with a reduction stage), and is refused when none has one; one
/// given by name for a kernel in one work item is refused.
#[test]
fn a_work_group_size_for_every_kernel_skips_the_kernels_in_one_work_item() {
    let dir = common::scratch("predict", "shared-local");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("k.lift");
    let program = "size N = 16\ndef f(x: [f32]N) =\n  let a = toGlobal(map@A(fun(v => v * 2.0), x)) in\n  \
                   let b = toGlobal(reduce(add, 0.0, a)) in\n  map@C(fun(v => v + b), a)\n";
    std::fs::write(&file, program).unwrap();
    let predict = |mapping: &str, local: &str| {
        mapsat(&["predict", file.to_str().unwrap(), "--mapping", mapping, "--local", local])
    };
    let out = predict("A=G0,C=S", "4");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("launch global [16, 1, 1], local [4, 1, 1]"), "{}", text(&out));
    let out = predict("A=S,C=S", "4");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("given for every kernel fits none"), "{}", text(&out));
    let out = predict("A=G0,C=S", "f_1_b:4");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("in the kernel of stage `f_1_b`") && text(&out).contains("no parallel map"),
        "{}",
        text(&out)
    );
    std::fs::remove_dir_all(dir).ok();
}

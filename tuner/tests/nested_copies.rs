//! A map whose function returns a view of what it computes that cannot be written through
//! (`fun(r => pad(1, 1, 0.0, map@B(g, r)))`, a `slide`, a `padClamp` behind a `let`) is
//! computed, then copied by the threads of the map's iteration. Every valid mapping of such a
//! program lowers (code generation is the oracle): the space offered `A=G0,B=G1`, whose copy
//! reads what other work groups wrote, and code generation refused it. And each runs right on
//! pocl (the interpreter is the oracle): with `A=W1` every thread of a work group copied the
//! whole padded image, and pocl wrote zeros for a row of it; with `A=S,B=S` pocl read garbage
//! back from a `restrict` temporary (testers).

#[path = "common/mod.rs"]
mod common;

use mapsat_constraints::{Code, Mapping, Options, Space};
use mapsat_ir::profile::Profile;
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};

const PROGRAMS: [&str; 7] = [
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) = map@A(fun(row => pad(1, 1, 0.0, map@B(fun(v => v * 2.0), row))), x)",
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) = map@A(fun(row => slide(3, 1, map@B(fun(v => v * 2.0), row))), x)",
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) =
       map@A(fun(row => let t = map@B(fun(v => v + 1.0), row) in padClamp(1, 1, t)), x)",
    "size K = 2, N = 4, M = 6\ndef f(x: [[[f32]M]N]K) =
       map@A(fun(img => padClampND2(1, 1, map@B(fun(r => map@C(fun(v => v * v), r)), img))), x)",
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) =
       map@A(fun(row => pad(1, 0, 0.0, map@B(fun(w => reduce(add, 0.0, w)), slide(2, 1, row)))), x)",
    "size B = 2, H = 3, W = 4\ndef f(x: [[[f32]W]H]B) =
       map@A(fun(img => padND2(1, 1, 0.0, mapND2@C(fun(v => v * 2.0), img))), x)",
    "size H = 4, W = 5\ndef f(x: [[f32]W]H) = map@A(fun(row => padClamp(2, 1, map@B(fun(v => v * v), row))), x)",
];

fn space(p: &mapsat_ir::Program) -> Space {
    let profile = Profile::builtin("pocl-cpu").expect("pocl-cpu");
    Space::generate(p, Options { profile: Some(profile), ..Options::default() }).expect("space")
}

#[test]
fn every_valid_mapping_of_a_copied_function_result_lowers() {
    let profile = Profile::builtin("pocl-cpu").expect("pocl-cpu");
    for src in PROGRAMS {
        let p = mapsat_ir::parse(src).expect("parse");
        let space = space(&p);
        let mappings = space.first(u64::MAX).expect("enumerates");
        // Some parallel mapping is left: each row's copy in its own thread or work group.
        assert!(mappings.len() > 1, "{src}: {} mappings", mappings.len());
        for m in &mappings {
            let local = space.suggested_local_size(m).expect("local sizes");
            let q = space.apply(&p, m).expect("applies");
            let opts = mapsat_codegen::Options::for_profile(p.default_sizes(), local, &profile);
            mapsat_codegen::lower(&q, &opts).unwrap_or_else(|e| panic!("{src}\n{}: {e}", space.show(m)));
        }
    }
}

#[test]
fn every_valid_mapping_of_a_copied_function_result_runs_right() {
    if !common::opencl_present() {
        return;
    }
    for src in PROGRAMS {
        let p = mapsat_ir::parse(src).expect("parse");
        let space = space(&p);
        let sizes = p.default_sizes();
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 3).expect("inputs");
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
        let mappings = space.first(u64::MAX).expect("enumerates");
        // One thread, and a work group per row or image in dimension 1 (the copies the testers
        // saw go wrong; each kernel takes pocl about a second to build here).
        let one_thread = |m: &Mapping| m.codes.iter().all(|c| matches!(c, Code::Seq | Code::Fused | Code::Vec));
        let tried: Vec<&Mapping> = mappings.iter().filter(|m| one_thread(m) || m.codes[0] == Code::Wrg(1)).collect();
        assert!(tried.len() >= 2, "{src}");
        for m in tried {
            let local = space.suggested_local_size(m).expect("local sizes");
            let q = space.apply(&p, m).expect("applies");
            let r = measure::run(&q, &sizes, local, &inputs, DeviceSpec::OpenCl(0, 0), &cfg)
                .unwrap_or_else(|e| panic!("{src}\n{}: {e}", space.show(m)));
            let c = r.output.compare(&want, 1e-4, 1e-5);
            assert!(c.ok, "{src}\n{}: {} mismatches, first {:?}", space.show(m), c.mismatches, c.first_mismatch);
        }
    }
}

#[test]
fn a_copy_reading_what_other_work_groups_wrote_is_refused() {
    let p = mapsat_ir::parse(PROGRAMS[0]).expect("parse");
    let space = space(&p);
    let m = space.parse_mapping("A=G0,B=G1").expect("mapping");
    let e = space.explain(&m).expect("explain");
    assert!(!e.valid);
    assert!(e.violated.iter().any(|v| v.family == mapsat_constraints::Family::Sync), "{e:?}");
}

/// A program that only picks elements of its input (a strided subsample, a component of a zip)
/// computes nothing: its outermost maps write the result, each thread its own elements, and
/// nothing is copied from what other threads wrote. The space kept only the one-thread
/// mapping (`the program's result, computed by F, is copied out by every thread`), and in 2-D
/// refused `E=G0,F=G1` for a barrier no kernel has (a tester's finding). Every valid mapping
/// runs right on pocl.
#[test]
fn a_program_that_only_picks_elements_runs_in_parallel() {
    let programs = [
        ("size N = 13\ndef f(xs: [f32]N) = map@F(fun(w => at(0, w)), slide(1, 2, xs))", 4),
        (
            "size H = 7, W = 5\ndef f(v: [[f32]W]H) =
            map@E(fun(r => map@F(fun(w => at(0, w)), slide(1, 2, at(0, r)))), slide(1, 2, v))",
            13,
        ),
        ("size N = 13\ndef f(a: [f32]N, b: [f32]N) = map@F(fun(p => p.0), zip(a, b))", 4),
    ];
    let present = common::opencl_present();
    for (src, count) in programs {
        let p = mapsat_ir::parse(src).expect("parse");
        let space = space(&p);
        let mappings = space.first(u64::MAX).expect("enumerates");
        assert_eq!(mappings.len(), count, "{src}");
        let sizes = p.default_sizes();
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 3).expect("inputs");
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        for m in mappings.iter().filter(|_| present) {
            let local = space.suggested_local_size(m).expect("local sizes");
            let q = space.apply(&p, m).expect("applies");
            let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
            let r = measure::run(&q, &sizes, local, &inputs, DeviceSpec::OpenCl(0, 0), &cfg)
                .unwrap_or_else(|e| panic!("{src}\n{}: {e}", space.show(m)));
            assert!(r.output.compare(&want, 0.0, 0.0).ok, "{src}\n{}", space.show(m));
        }
    }
}

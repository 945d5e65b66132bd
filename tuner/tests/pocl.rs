//! Measurement on the first OpenCL device (pocl in CI): the comparison, device names, and the
//! VGG-size convolution against the interpreter. The mapped programs of the file tests
//! (`tests/filetests/kernels/`, their `// test: run` lines) are run on the device by the
//! file-test runner, `tests/filetests.rs` at the repository root.
//!
//! Without any OpenCL platform the device runs are skipped with a message, unless
//! `MAPSAT_REQUIRE_OPENCL=1` (CI sets it) makes that a failure.

mod common;

use common::opencl_present;
use mapsat_ir::Sizes;
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};
use std::path::Path;

#[test]
fn unwritten_output_is_caught() {
    // A kernel that writes nothing: the poisoned output must not pass the check.
    let got = mapsat_ir::interp::Tensor::f32(vec![3], vec![1.0, f32::NAN, 3.0]);
    let want = mapsat_ir::interp::Tensor::f32(vec![3], vec![1.0, 2.0, 3.0]);
    let c = got.compare(&want, 1e-3, 1e-4);
    assert!(!c.ok);
    assert_eq!(c.mismatches, 1);
    assert_eq!(c.first_mismatch.map(|m| m.0), Some(1));
}

#[test]
fn device_names() {
    assert_eq!("opencl:1:2".parse::<DeviceSpec>().ok(), Some(DeviceSpec::OpenCl(1, 2)));
    assert_eq!("cuda:0".parse::<DeviceSpec>().ok(), Some(DeviceSpec::Cuda(0)));
    assert!("gpu".parse::<DeviceSpec>().is_err());
}

#[test]
fn devices_report_missing_cuda_cleanly() {
    // Never panics; here (no libcuda) it says so in one line.
    let lines = measure::list_devices();
    assert!(lines.iter().any(|l| l.starts_with("cuda")), "{lines:?}");
}

#[test]
fn conv_at_vgg_size_matches_interpreter() {
    // The VGG-16 layer of the issue: input 56x56x128, 128 kernels 3x3x128, pad 1 -> 56x56x128,
    // with the register-blocked mapping (tests/filetests/kernels/conv_reg.lift). The oracle is
    // the interpreter on the high-level program examples/conv.lift (the same function, and the
    // interpreter's fast path: about 2 s here), not on the mapped program itself.
    if !opencl_present() {
        return;
    }
    let read = |rel: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        mapsat_ir::parse(&std::fs::read_to_string(path).expect("read")).expect("parse")
    };
    let mapped = read("../tests/filetests/kernels/conv_reg.lift");
    let reference = read("../examples/conv.lift");
    let vgg = [("inH", 56), ("inW", 56), ("inChs", 128), ("outChs", 128), ("kerH", 3), ("kerW", 3)];
    let given: Sizes = vgg.into_iter().collect();
    let sizes = mapped.resolve_sizes(&given).expect("sizes").with("oB", 4);
    let inputs = mapsat_ir::interp::random_inputs(&reference, &given, 7).expect("inputs");
    let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
    let r = measure::run(&mapped, &sizes, Some(vec![32, 4, 1]), &inputs, DeviceSpec::OpenCl(0, 0), &cfg).expect("run");
    let want = mapsat_ir::interp::eval(&reference, &given, &inputs).expect("interpreter");
    let c = r.output.compare(&want, 1e-3, 1e-4);
    assert!(c.ok, "{} mismatches, first {:?}, max abs diff {}", c.mismatches, c.first_mismatch, c.max_abs_diff);
}

/// A vector read of a column (a row of a `transpose`: its lanes a row apart in memory) is a
/// gather, lane by lane, not a `vload4` of four consecutive floats. The space refuses such
/// programs (`constraints/tests/vectors.rs`); code generation must still never emit a wrong
/// kernel for one it is given.
#[test]
fn a_vector_of_a_column_is_gathered() {
    let src = "size M = 8, N = 8\ndef f(m: [[f32]N]M) =\n  \
               mapGlb@D(0, fun(r => asScalar(mapSeq@E(fun(x => x * x + x), asVector(4, r)))), transpose(m))";
    let p = mapsat_ir::parse(src).expect("parse");
    let (source, _) =
        mapsat_codegen::emit(&p, &mapsat_codegen::Options::default(), mapsat_codegen::Dialect::OpenCl).expect("emit");
    assert!(!source.contains("vload4"), "{source}");
    if !opencl_present() {
        return;
    }
    let sizes = p.default_sizes();
    let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 5).expect("inputs");
    let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
    let r = measure::run(&p, &sizes, None, &inputs, DeviceSpec::OpenCl(0, 0), &cfg).expect("run");
    let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
    let c = r.output.compare(&want, 1e-3, 1e-4);
    assert!(c.ok, "{} mismatches, first {:?}", c.mismatches, c.first_mismatch);
}

/// A reduction whose accumulator is a tuple (a sum and a maximum; a sum and a sum of products
/// that reads the old sum) keeps one private variable per part, each step computing every part
/// from the old values before storing any. Code generation refused such accumulators while
/// the space called their mappings valid (a tester). Every valid mapping lowers and runs right.
#[test]
fn a_tuple_accumulator_keeps_a_variable_per_part() {
    let programs = [
        "size N = 12\ndef am(xs: [f32]N) : f32 =\n  \
         let t = reduce(fun(acc, x => (acc.0 + x, max(acc.1, x))), (0.0, -1e30), map@A(fun(x => x * 2.0), xs)) in t.0 - t.1",
        "size N = 16, M = 8\ndef mv(x: [[f32]N]M) : [f32]M =\n  \
         map@A(fun(row => let t = reduce(fun(acc, v => (acc.0 + v, acc.1 + acc.0 * v)), (0.0, 0.0), row) in t.1 / (t.0 + 100.0)), x)",
    ];
    let present = opencl_present();
    for src in programs {
        let p = mapsat_ir::parse(src).expect("parse");
        let space = mapsat_constraints::Space::generate(&p, mapsat_constraints::Options::default()).expect("space");
        let sizes = p.default_sizes();
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 11).expect("inputs");
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        for m in space.sample(8, 0).expect("samples") {
            let q = space.apply(&p, &m).expect("applies");
            let opts = mapsat_codegen::Options { sizes: sizes.clone(), ..mapsat_codegen::Options::default() };
            let (source, _) = mapsat_codegen::emit(&q, &opts, mapsat_codegen::Dialect::OpenCl)
                .unwrap_or_else(|e| panic!("{src}\n{}: {e}", space.show(&m)));
            assert!(source.contains("acc_1"), "{source}");
            if present {
                let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
                let r = measure::run(&q, &sizes, None, &inputs, DeviceSpec::OpenCl(0, 0), &cfg).expect("run");
                let c = r.output.compare(&want, 1e-4, 1e-5);
                assert!(c.ok, "{src}\n{}: {} mismatches, first {:?}", space.show(&m), c.mismatches, c.first_mismatch);
            }
        }
    }
}

/// A kernel named like one of OpenCL C's built-in functions (`upsample` is an integer one) is
/// renamed: pocl refused the kernel with CL_INVALID_KERNEL_NAME (a tester's finding).
#[test]
fn a_kernel_named_like_a_built_in_function_runs() {
    let present = opencl_present();
    for name in ["upsample", "rotate", "popcount", "shuffle", "hadd", "mul24", "clz", "nan", "prefetch", "bitselect"] {
        let src = format!("size N = 8\ndef {name}(x: [f32]N) : [f32]N = mapGlb(0)(fun(v => v + 1.0), x)");
        let p = mapsat_ir::parse(&src).expect("parse");
        let sizes = p.default_sizes();
        let opts = mapsat_codegen::Options { sizes: sizes.clone(), ..mapsat_codegen::Options::default() };
        let (source, manifest) = mapsat_codegen::emit(&p, &opts, mapsat_codegen::Dialect::OpenCl).expect("emits");
        assert_ne!(manifest.entry, name, "{source}");
        if present {
            let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 1).expect("inputs");
            let r = measure::run(&p, &sizes, None, &inputs, DeviceSpec::OpenCl(0, 0), &RunConfig::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(r.check.is_some_and(|c| c.ok), "{name}");
        }
    }
}

/// `select` of tuples is one select per part: an argmax written the natural way, with the
/// space's mappings, runs as the interpreter computes (code generation refused it).
#[test]
fn a_select_of_tuples_selects_each_part() {
    let src = "size M = 5, N = 13\ndef argmax(xs: [[f32]N]M, idx: [i32]N) : [i32]M =\n  \
               map@A(fun(row => reduce(fun(acc, p => select(p.0 > acc.0, p, acc)), (-1e30, -1), zip(row, idx)).1), xs)";
    let p = mapsat_ir::parse(src).expect("parse");
    let space = mapsat_constraints::Space::generate(&p, mapsat_constraints::Options::default()).expect("space");
    let sizes = p.default_sizes();
    let mut inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 5).expect("inputs");
    inputs[1] = mapsat_ir::interp::Tensor::i32(vec![13], (0..13).collect());
    let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
    let present = opencl_present();
    for m in space.sample(4, 0).expect("samples") {
        let q = space.apply(&p, &m).expect("applies");
        let opts = mapsat_codegen::Options { sizes: sizes.clone(), ..mapsat_codegen::Options::default() };
        let (source, _) = mapsat_codegen::emit(&q, &opts, mapsat_codegen::Dialect::OpenCl)
            .unwrap_or_else(|e| panic!("{}: {e}", space.show(&m)));
        assert!(source.matches(" ? ").count() >= 2, "{source}");
        if present {
            let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
            let r = measure::run(&q, &sizes, None, &inputs, DeviceSpec::OpenCl(0, 0), &cfg).expect("run");
            let c = r.output.compare(&want, 0.0, 0.0);
            assert!(c.ok, "{}: {} mismatches, first {:?}", space.show(&m), c.mismatches, c.first_mismatch);
        }
    }
}

/// A kernel whose local buffers (here one code generation stages for a `mapLcl` map's result)
/// exceed the device's local memory is refused before it is launched: pocl aborted the process
/// (a tester's finding); at half the size it runs.
#[test]
fn a_kernel_beyond_the_local_memory_is_refused_not_launched() {
    if !opencl_present() {
        return;
    }
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/listing3.lift")).unwrap();
    let p = mapsat_ir::parse(&src).expect("parse");
    let space_opts = |n: i64| mapsat_constraints::Options {
        sizes: Sizes::new().with("n", n).with("s0", n).with("s1", 4),
        ..mapsat_constraints::Options::default()
    };
    let local = measure::opencl_profile(DeviceSpec::OpenCl(0, 0)).expect("profile").local_mem_bytes as i64;
    for (n, fits) in [(local / 8, true), (local / 2, false)] {
        let o = space_opts(n);
        let sizes = o.sizes.clone();
        let space = mapsat_constraints::Space::generate(&p, o).expect("space");
        let q = space.apply(&p, &space.parse_mapping("A=W0,C=L0,D=S,B=L0").expect("mapping")).expect("applies");
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 1).expect("inputs");
        let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
        match measure::run(&q, &sizes, None, &inputs, DeviceSpec::OpenCl(0, 0), &cfg) {
            Ok(_) => assert!(fits, "n = {n}: ran"),
            Err(e) => {
                assert!(!fits, "n = {n}: {e}");
                assert!(e.to_string().contains("bytes of local memory per work group"), "{e}");
            }
        }
    }
}

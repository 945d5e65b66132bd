//! Runs every program of `codegen/tests/filetests` on the first OpenCL device (pocl in CI) at
//! each size set its `// run:` lines give, and compares with the interpreter.
//!
//! Without any OpenCL platform the test is skipped with a message, unless
//! `MAPSAT_REQUIRE_OPENCL=1` (CI sets it) makes that a failure.

mod common;

use common::opencl_present;
use mapsat_ir::Sizes;
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};
use std::path::Path;

struct Run {
    sizes: Sizes,
    local: Option<Vec<i64>>,
}

fn runs(text: &str) -> Vec<Run> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("// run:") else { continue };
        let mut run = Run { sizes: Sizes::new(), local: None };
        for word in rest.split_whitespace() {
            if let Some(l) = word.strip_prefix("local=") {
                run.local = Some(l.split(',').map(|x| x.parse().expect("local size")).collect());
            } else {
                for kv in word.split(',') {
                    let (k, v) = kv.split_once('=').expect("NAME=VALUE");
                    run.sizes.insert(k, v.parse().expect("size value"));
                }
            }
        }
        out.push(run);
    }
    out
}

#[test]
fn filetests_match_interpreter_on_opencl() {
    if !opencl_present() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../codegen/tests/filetests");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("filetests").flatten().map(|e| e.path()).collect();
    files.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "lift")) {
        let text = std::fs::read_to_string(f).expect("read");
        let p = mapsat_ir::parse(&text).expect("parse");
        for (k, run) in runs(&text).into_iter().enumerate() {
            count += 1;
            let sizes = p.resolve_sizes(&run.sizes).expect("sizes");
            let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 42 + k as u64).expect("inputs");
            let cfg = RunConfig { warmup: 0, runs: 1, ..RunConfig::default() };
            let name = format!("{} {:?} local={:?}", f.display(), run.sizes, run.local);
            match measure::run(&p, &sizes, run.local.clone(), &inputs, DeviceSpec::OpenCl(0, 0), &cfg) {
                Ok(r) => {
                    let c = r.check.expect("checked");
                    if !c.ok {
                        failures.push(format!("{name}: {} mismatches, first {:?}", c.mismatches, c.first_mismatch));
                    }
                }
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(count >= 10, "too few runs: {count}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

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
    // with the register-blocked mapping (codegen/tests/filetests/conv_reg.lift). The oracle is
    // the interpreter on the high-level program examples/conv.lift (the same function, and the
    // interpreter's fast path: about 2 s here), not on the mapped program itself.
    if !opencl_present() {
        return;
    }
    let read = |rel: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        mapsat_ir::parse(&std::fs::read_to_string(path).expect("read")).expect("parse")
    };
    let mapped = read("../codegen/tests/filetests/conv_reg.lift");
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

//! The facade as Rust research code uses it ([`mapsat::Source`], [`mapsat::tuning`]), checked
//! against hand-computed results: a separable blur of two kernels and a matrix product.

mod common;

use mapsat::ir::interp::Tensor;
use mapsat::ir::Sizes;
use mapsat::local::Locals;
use mapsat::tuner::measure::RunConfig;
use mapsat::tuner::tune::{Silent, TuneOptions};
use mapsat::tuning::{best_sequence, Tuning};
use mapsat::{Error, Source};
use std::path::Path;

fn sizes(pairs: &[(&str, i64)]) -> Sizes {
    let mut s = Sizes::new();
    for (k, v) in pairs {
        s.insert(*k, *v);
    }
    s
}

fn example(name: &str) -> Source {
    Source::read(&common::root().join("examples").join(name)).expect("an example program")
}

/// The 3x3 box blur of `img` (`h` rows of `w`) with edges clamped, one 3-tap mean after the
/// other as `sepblur.lift` computes it.
fn box_blur(img: &[f32], h: usize, w: usize) -> Vec<f32> {
    let at = |r: isize, c: isize| img[r.clamp(0, h as isize - 1) as usize * w + c.clamp(0, w as isize - 1) as usize];
    let row = |r: isize, c: isize| (at(r, c - 1) + at(r, c) + at(r, c + 1)) / 3.0;
    let mut out = Vec::with_capacity(h * w);
    for r in 0..h as isize {
        for c in 0..w as isize {
            let rows = |r: isize| row(r.clamp(0, h as isize - 1), c);
            out.push((rows(r - 1) + rows(r) + rows(r + 1)) / 3.0);
        }
    }
    out
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "element {i}: {g} against {w}");
    }
}

#[test]
fn errors_name_the_file_and_the_size() {
    let e = Source::new("bad.lift", "def f(x: [f32]N) : [f32]N = map(fun(v => v +), x)").unwrap_err();
    assert!(matches!(&e, Error::Rejected(m) if m.contains("bad.lift:1:")), "{e}");
    let src = example("sepblur.lift");
    let e = src.sizes(&sizes(&[("Q", 4)])).unwrap_err();
    assert!(matches!(&e, Error::Usage(m) if m.contains("no size variable `Q`") && m.contains("H, W")), "{e}");
    let e = src.explain("A=G0,Z=S", &Sizes::new(), None).unwrap_err();
    assert!(e.to_string().contains("unknown map `Z`"), "{e}");
}

#[test]
fn a_program_of_two_kernels_is_counted_sampled_and_explained_kernel_by_kernel() {
    let src = example("sepblur.lift");
    let given = sizes(&[("H", 12), ("W", 20)]);
    let spaces = src.spaces(&given, None).unwrap();
    let names: Vec<&str> = spaces.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["sepblur_0_h", "sepblur"]);
    let each: Vec<u64> = spaces
        .iter()
        .map(|k| match k.space.count(0).unwrap() {
            mapsat::constraints::Count::Exact(n) => n,
            other => panic!("{other:?}"),
        })
        .collect();
    let count = src.count(&given, None).unwrap();
    assert!(count.exact);
    assert_eq!(count.value, (each[0] * each[1]) as f64);
    let sampled = src.sample(&given, 5, 3, None).unwrap();
    assert_eq!(sampled.len(), 5);
    for m in &sampled {
        assert!(src.explain(m, &given, None).unwrap().is_empty(), "{m}");
    }
    let broken = src.explain("A=L0,B=L0,C=G0,D=S", &given, None).unwrap();
    assert!(
        !broken.is_empty() && broken.iter().all(|v| v.starts_with("in the kernel of stage `sepblur_0_h`")),
        "{broken:?}"
    );
}

#[test]
fn bad_calls_are_errors_not_panics() {
    let src = example("matmul.lift");
    let given = sizes(&[("M", 2), ("K", 3), ("N", 2)]);
    let one = [Tensor::f32(vec![2, 3], vec![1.0; 6])];
    let cfg = RunConfig::default();
    let device = "opencl:0:0".parse().unwrap();
    let e = src.run(&given, &one, device, Some("A=G0,B=G1,C=S"), &Locals::default(), &cfg).err().unwrap();
    assert!(e.to_string().contains("takes 2 inputs, got 1"), "{e}");
    let blur = example("sepblur.lift");
    let e = blur.run(&Sizes::new(), &[], device, Some("A=G1,B=G0,C=G1,D=G0"), &Locals::default(), &cfg);
    assert!(e.err().unwrap().to_string().contains("takes 1 input, got 0"));
    // A chain of 1,500 additions, on a thread with the usual 2 MiB of stack.
    let text = format!("def f(x: f32) : f32 = x{}", " + 1.0".repeat(1500));
    let parsed = std::thread::spawn(move || Source::new("chain.lift", text).map(|s| s.program().params.len()));
    assert_eq!(parsed.join().unwrap().unwrap(), 1);
}

#[test]
fn sizes_are_read_off_the_inputs() {
    let src = example("matmul.lift");
    let a = Tensor::f32(vec![3, 5], vec![0.0; 15]);
    let b = Tensor::f32(vec![5, 2], vec![0.0; 10]);
    assert_eq!(src.sizes_of(&[a.clone(), b]).unwrap(), sizes(&[("M", 3), ("K", 5), ("N", 2)]));
    let e = src.sizes_of(&[a.clone(), Tensor::f32(vec![4, 2], vec![0.0; 8])]).unwrap_err();
    assert!(e.to_string().contains("size `K` is 5 by an earlier input, 4 by `b`"), "{e}");
    // An input of another rank gives no sizes: it is refused (it gave M=3, K=4, N=6).
    let e = src.sizes_of(&[Tensor::f32(vec![3, 4, 5], vec![0.0; 60]), a]).unwrap_err();
    assert!(e.to_string().contains("parameter `a` expects an array of 2 dimension(s)"), "{e}");
}

#[test]
fn a_program_without_a_map_has_the_empty_mapping() {
    let src = Source::new("sum.lift", "size N = 4\ndef sum(xs: [f32]N) : f32 = reduce(add, 0.0, xs)").unwrap();
    assert_eq!(src.count(&Sizes::new(), None).unwrap(), mapsat::source::MappingCount { value: 1.0, exact: true });
    assert_eq!(src.sample(&Sizes::new(), 3, 0, None).unwrap(), [""]);
    assert!(src.explain("", &Sizes::new(), None).unwrap().is_empty());
    let e = src.explain("A=G0", &Sizes::new(), None).unwrap_err();
    assert!(e.to_string().contains("unknown map `A`"), "{e}");
    // Emitted (and run) as `explain` reads a mapping: `,` is the empty one, `A=G0` names no map.
    let opencl = mapsat::codegen::Dialect::OpenCl;
    for m in [None, Some(""), Some(",")] {
        let e = src.emit(&Sizes::new(), m, opencl, &Locals::default(), None).unwrap();
        assert!(e.kernels[0].0.contains("__kernel"), "{m:?}");
    }
    let e = src.emit(&Sizes::new(), Some("A=G0"), opencl, &Locals::default(), None).err().unwrap();
    assert!(e.to_string().contains("the program has no map, so its only mapping is the empty one"), "{e}");
    // A map that only rearranges (a view) is named as such, not as unknown.
    let views = "size H = 5, W = 7\ndef v(img: [[f32]W]H) : f32 = reduce(add, 0.0, join(join(join(slideND2(3, 1, 3, 1, img)))))";
    let v = Source::new("v.lift", views).unwrap();
    let e = v.explain("m1=S", &Sizes::new(), None).unwrap_err();
    assert!(e.to_string().contains("map `m1` only rearranges data (a view)"), "{e}");
    assert!(v.explain(",", &Sizes::new(), None).unwrap().is_empty());
    if common::opencl() {
        let xs = Tensor::f32(vec![4], vec![1.0, 2.0, 3.5, -0.5]);
        let cfg = RunConfig { runs: 1, ..RunConfig::default() };
        let runs = src.run(&Sizes::new(), &[xs], "opencl:0:0".parse().unwrap(), Some(","), &Locals::default(), &cfg);
        assert_eq!(runs.unwrap()[0].report.output.as_f32().unwrap(), [6.0]);
    }
}

/// A run whose caller gave up (`RunConfig::cancel` set: Python's `run` past its timeout)
/// launches nothing more: it is an error, not a result.
#[test]
fn a_cancelled_run_stops_before_its_next_launch() {
    if !common::opencl() {
        return;
    }
    let src = example("sepblur.lift");
    let given = sizes(&[("H", 8), ("W", 8)]);
    let inputs = [Tensor::f32(vec![8, 8], vec![1.0; 64])];
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let cfg = RunConfig { runs: 1000, cancel: Some(cancel), ..RunConfig::default() };
    let e = src.run(&given, &inputs, "opencl:0:0".parse().unwrap(), None, &Locals::default(), &cfg).err().unwrap();
    assert!(e.to_string().contains("the run was stopped before it ended"), "{e}");
}

#[test]
fn explained_under_a_profile_a_mapping_code_generation_refuses_is_not_valid() {
    let dir = common::scratch("library", "tiny");
    let pocl = std::fs::read_to_string(common::root().join("ir/profiles/pocl-cpu.toml")).unwrap();
    std::fs::write(dir.join("tiny.toml"), pocl.replace("local_mem_bytes = 524288", "local_mem_bytes = 16")).unwrap();
    let tiny = mapsat::ir::profile::Profile::load(dir.join("tiny.toml").to_str().unwrap()).unwrap();
    let src = example("conv.lift");
    // A work group's 36 results of map C are kept in local memory: 144 bytes.
    let m = "A_0=W0,A_1=S,B=S,C=L0";
    assert_eq!(src.explain(m, &Sizes::new(), None).unwrap(), Vec::<String>::new());
    let v = src.explain(m, &Sizes::new(), Some(&tiny)).unwrap();
    assert!(v.len() == 1 && v[0].contains("144 bytes of local memory per work group"), "{v:?}");
    assert_eq!(src.explain("A_0=G0,A_1=S,B=S,C=S", &Sizes::new(), Some(&tiny)).unwrap(), Vec::<String>::new());
}

#[test]
fn explained_under_cudas_grid_a_tall_image_agrees_with_code_generation() {
    // A tall image mapped over y (G1) or z (G2): CUDA's grid has 65,535 blocks there (a tester).
    let src = Source::new("tall.lift", "size H = 16, W = 16\ndef tall(img: [[f32]W]H) : [[f32]W]H = map@A(fun(row => map@B(fun(x => x * 2.0), row)), img)").unwrap();
    let h100 = mapsat::ir::profile::Profile::builtin("h100").unwrap();
    let at = |h: i64| sizes(&[("H", h), ("W", 1)]);
    let cuda = mapsat::codegen::Dialect::Cuda;
    let cases = [
        (200_000, "A=G1,B=G0"),
        (20_000_000, "A=G1,B=G0"),
        (100_000_000, "A=G1,B=G0"),
        (10_000_000, "A=G2,B=G1"),
        (100_000, "A=G2,B=G1"),
    ];
    for (h, m) in cases {
        let explained = src.explain(m, &at(h), Some(&h100)).unwrap();
        let emitted = src.emit(&at(h), Some(m), cuda, &Locals::default(), None);
        assert_eq!(explained.is_empty(), emitted.is_ok(), "{m} at H={h}: {explained:?}");
    }
    // 20 million rows fit in groups of 1,024 work items (the default work group took one, and
    // was refused); 100 million do not.
    assert!(src.explain("A=G1,B=G0", &at(20_000_000), Some(&h100)).unwrap().is_empty());
    assert!(!src.explain("A=G1,B=G0", &at(100_000_000), Some(&h100)).unwrap().is_empty());
}

#[test]
fn sampled_mappings_of_a_blur_run_as_the_hand_computed_blur() {
    if !common::opencl() {
        return;
    }
    let src = example("sepblur.lift");
    let (h, w) = (13, 22);
    let given = sizes(&[("H", h as i64), ("W", w as i64)]);
    let img: Vec<f32> = (0..h * w).map(|i| ((i * 37) % 101) as f32 / 7.0).collect();
    let want = box_blur(&img, h, w);
    let inputs = [Tensor::f32(vec![h, w], img)];
    let cfg = RunConfig { runs: 1, check: true, ..RunConfig::default() };
    for m in src.sample(&given, 4, 11, None).unwrap() {
        let runs = src.run(&given, &inputs, "opencl:0:0".parse().unwrap(), Some(&m), &Locals::default(), &cfg).unwrap();
        assert_eq!(runs.len(), 2, "{m}");
        close(runs[1].report.output.as_f32().unwrap(), &want);
    }
    let e = src.emit(&given, Some("A=G0,B=S,C=G0,D=S"), mapsat::codegen::Dialect::Cuda, &Locals::default(), None);
    let e = e.unwrap();
    assert_eq!(e.kernels.len(), 2);
    assert!(e.kernels[0].0.contains("__global__"), "{}", e.kernels[0].0);
    assert_eq!(e.pipeline.unwrap()["kernels"][1]["inputs"][0], "stage:sepblur_0_h");
    let bad = Locals { all: None, by_kernel: [("blur".to_string(), vec![4])].into() };
    let e = src.run(&given, &inputs, "opencl:0:0".parse().unwrap(), None, &bad, &cfg).err().unwrap();
    assert!(e.to_string().contains("kernel `blur`, which the program does not have"), "{e}");
}

#[test]
fn a_tuned_matrix_product_runs_as_the_hand_computed_product() {
    if !common::opencl() {
        return;
    }
    let src = example("matmul.lift");
    let (m, k, n) = (6, 10, 7);
    let given = sizes(&[("M", m as i64), ("K", k as i64), ("N", n as i64)]);
    let out = common::scratch("library", "tune");
    let opts = TuneOptions { trials: 6, random_trials: 3, batch: 3, ..TuneOptions::default() };
    let worker = vec![env!("CARGO_BIN_EXE_mapsat").into(), "worker".into()];
    let how = Tuning {
        device: "opencl:0:0".parse().unwrap(),
        target: None,
        opts: &opts,
        prior_file: None,
        resume: false,
        worker,
    };
    // A typo in a size's name, a tune into the program's own folder, a prior model with
    // resume: refused before anything is measured.
    let e = src.tune(&sizes(&[("m", 6)]), &how, &out, &mut Silent).err().unwrap();
    assert!(e.to_string().contains("no size variable `m`"), "{e}");
    let e = src.tune(&given, &how, Path::new(""), &mut Silent).err().unwrap();
    assert!(e.to_string().contains("the output folder is an empty path"), "{e}");
    let copy = out.join("matmul.lift");
    std::fs::write(&copy, src.text()).unwrap();
    let e = Source::read(&copy).unwrap().tune(&given, &how, &out, &mut Silent).err().unwrap();
    assert!(e.to_string().contains("matmul.lift would overwrite the input program"), "{e}");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), src.text());
    std::fs::remove_file(&copy).unwrap();
    let kernels = src.tune(&given, &how, &out, &mut Silent).unwrap();
    assert_eq!(kernels.len(), 1);
    assert!(out.join("tune.jsonl").exists() && out.join("report.json").exists());
    let best = best_sequence(kernels.iter().map(|k| &k.summary)).expect("a correct candidate");
    assert!(best.ms > 0.0 && best.gflops > 0.0, "{best:?}");
    let a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.5).collect();
    let want: Vec<f32> = (0..m * n).map(|ij| (0..k).map(|x| a[ij / n * k + x] * b[x * n + ij % n]).sum()).collect();
    let inputs = [Tensor::f32(vec![m, k], a), Tensor::f32(vec![k, n], b)];
    let cfg = RunConfig { runs: 1, check: true, ..RunConfig::default() };
    let runs = src.run(&best.sizes(&given), &inputs, how.device, Some(&best.mapping), &best.locals(), &cfg).unwrap();
    close(runs[0].report.output.as_f32().unwrap(), &want);
    let model = kernels[0].model.as_deref().expect("a learned model");
    let prior = TuneOptions { prior: Some(mapsat::tuning::load_model(model).unwrap()), ..TuneOptions::default() };
    // A tune that would write its model over the prior's file is refused.
    let over = Tuning { opts: &prior, prior_file: Some(model), worker: how.worker.clone(), ..how };
    let e = src.tune(&given, &over, &out, &mut Silent).err().unwrap();
    assert!(e.to_string().contains("would overwrite the prior model"), "{e}");
    let resumed = Tuning { opts: &prior, resume: true, ..how };
    let e = src.tune(&given, &resumed, &out, &mut Silent).err().unwrap();
    assert!(e.to_string().contains("resume continues one"), "{e}");
}

/// A worker that begins a tune of its own instead of serving measurements (a program that
/// does not hand its worker argument to `serve_worker`) is refused at once, and the tune says
/// why; before, each worker started another, each waiting for the next.
#[test]
fn a_worker_that_tunes_instead_of_serving_is_refused_at_once() {
    if !common::opencl() {
        return;
    }
    let src = example("matmul.lift");
    let out = common::scratch("library", "worker-tunes");
    let opts = TuneOptions { trials: 2, random_trials: 0, batch: 2, ..TuneOptions::default() };
    let nested = out.join("nested");
    let worker = ["tune", "examples/matmul.lift", "--trials", "2", "-o", nested.to_str().unwrap()];
    let mut command = vec![env!("CARGO_BIN_EXE_mapsat").into()];
    command.extend(worker.iter().map(Into::into));
    let how = Tuning { worker: command, ..Tuning::new("opencl:0:0".parse().unwrap(), &opts).unwrap() };
    let start = std::time::Instant::now();
    let e = src.tune(&Sizes::new(), &how, &out, &mut Silent).err().expect("refused");
    assert!(e.to_string().contains("began a tune of its own"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(60), "{:?}", start.elapsed());
    assert!(!nested.join("tune.jsonl").exists());
}

//! The evidence of issue #8, measured on pocl (`opencl:0:0`), written as a Markdown report on
//! standard output. Run `bash scripts/bench.sh` (it installs numpy in a venv for the baseline)
//! or `cargo bench --bench tune_quality`; it takes about half an hour on 2 cores.
//!
//! 1. **Guided against random.** For the tunable convs (`examples/conv_blocked.lift` and the
//!    outer-product `examples/conv_hwio.lift`, whose vector width is tuned too, 28x28,
//!    32 -> 32), the rewrite stage's tiled conv (`mapsat rewrite examples/conv.lift`, its variant
//!    with tiles in local memory, output channels in groups and private sums, same sizes) and
//!    the matmuls (`examples/matmul_tiled.lift` and the outer-product
//!    `examples/matmul_outer.lift`, 256^3), with several seeds: a
//!    64-trial model-guided tune, and 320 random valid trials (5x as many) of the same space.
//!    The best kernels of both phases are measured again at the end, interleaved; the best
//!    GFLOP/s compared are those confirmed times. The median valid candidate is the median of the random trials,
//!    measured again with them, compared with the guided search's best measured again (the same round).
//! 2. **Model accuracy.** On the conv's random trials (held-out data for every model): Spearman's
//!    rank correlation with the measured speed of the analytical model, of the learned model in
//!    5-fold cross-validation (trained on the other folds), and of the learned model trained on
//!    another layer (the conv at 14x14, 64 -> 64: transfer).
//! 3. **Against numpy.** 64-trial tunes of the conv at 56x56, 64 -> 64 against numpy's im2col and
//!    OpenBLAS GEMM on the same machine, with the same weight layout (`scripts/numpy_conv.py`;
//!    skipped without numpy), and against that GEMM alone (im2col left out of the time): the
//!    tunable conv with OHWI weights (`examples/conv_blocked.lift`), the outer-product one with
//!    OHWI weights transposed by a first kernel (`examples/conv_outer.lift`, both kernels' time)
//!    and with HWIO weights (`examples/conv_hwio.lift`). Then the matmuls at 256^3
//!    (`examples/matmul_tiled.lift`, and the outer-product `examples/matmul_outer.lift`) against
//!    numpy's `a @ b` (`scripts/numpy_matmul.py`).
//! 4. **Rewrite variants against the untransformed program** (issue #10). `mapsat tune
//!    --variants K` (K = 7: conv's outer product, `conv-windows`, is the fourth) of the
//!    untiled matmul (`examples/matmul.lift`, 256^3) and conv (`examples/conv.lift`, 28x28,
//!    32 -> 32; and `examples/conv_windows.lift`, the same conv as windows times the columns
//!    of HWIO weights), and a fully-connected layer with a bias and a relu, its weights in
//!    PyTorch's layout (`examples/linear.lift`, 256^3), and two such layers with a relu between
//!    them (`examples/mlp.lift`, 256^3; its variants include each kernel rewritten and tuned on
//!    its own, the fastest candidates joined), 32 guided trials per variant: variant 0 is the
//!    untransformed program tuned with the same trials (the variants' best kernels are ranked
//!    after being measured again together). The two best kernels (the input's and the best
//!    variant's) are then run again back to back (`mapsat run --check --reassociate
//!    --runs 50`), so that a loaded machine favours neither; the speedup is their time ratio.
//!
//! `MAPSAT_QUALITY_SEEDS` sets the seeds (default `1,2,3`), `MAPSAT_QUALITY_SECTIONS` the sections
//! to run (default `1,2,3,4`), `MAPSAT_QUALITY_VARIANTS` the K of section 4 (default 7),
//! `MAPSAT_QUALITY_PROGRAMS` the programs of section 4 (their names' first words, `mlp,linear`;
//! default all), `MAPSAT_PYTHON` the Python with numpy.
#![allow(missing_docs)]

use mapsat_codegen::Dialect;
use mapsat_ir::profile::Profile;
use mapsat_ir::Sizes;
use mapsat_tuner::tune::log::{Phase, Trial};
use mapsat_tuner::tune::model::{spearman, CostModel, Learned, TrainingSet};
use mapsat_tuner::tune::task::Task;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `mapsat tune` and returns its output folder.
fn tune(name: &str, file: &str, sizes: &str, extra: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mapsat-quality-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut args = vec!["tune", file, "--size", sizes, "-o", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    eprintln!("mapsat {}", args.join(" "));
    let out = Command::new(env!("CARGO_BIN_EXE_mapsat")).args(&args).current_dir(root()).output().expect("mapsat");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

fn report(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).expect("report")).expect("JSON")
}

/// The best time of a tune in ms: its kernel's, or the sum of its kernels' for a pipeline
/// (`NAME.pipeline.json`).
fn best_ms(dir: &Path) -> f64 {
    let pipeline = std::fs::read_dir(dir)
        .expect("tune output")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pipeline.json"));
    let json = match pipeline {
        Some(p) => serde_json::from_str(&std::fs::read_to_string(p).expect("pipeline")).expect("JSON"),
        None => report(dir),
    };
    json["best_ms"].as_f64().expect("best_ms")
}

fn trials(dir: &Path, phase: Phase) -> Vec<Trial> {
    let text = std::fs::read_to_string(dir.join("tune.jsonl")).expect("log");
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "trial")
        .filter_map(|v| serde_json::from_value::<Trial>(v).ok())
        .filter(|t| t.phase == phase && t.ok() && t.reused.is_none())
        .collect()
}

/// The rewrite stage's tiled conv (`mapsat rewrite examples/conv.lift` at `sizes`): the variant
/// with its spatial tiles and their halo in local memory, output channels in groups of `tB` and
/// private sums (kind E2SP), with its tile sizes `tA_0`, `tA_1` and `tB` to tune.
fn rewritten_conv(sizes: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("mapsat-quality-conv-rewrite");
    let _ = std::fs::remove_dir_all(&dir);
    let args = ["rewrite", "examples/conv.lift", "--size", sizes, "-o", dir.to_str().unwrap()];
    let out = Command::new(env!("CARGO_BIN_EXE_mapsat")).args(args).current_dir(root()).output().expect("mapsat");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let staged = |t: &str| {
        let t: String = t.split_whitespace().collect();
        t.contains("toLocal(map@copy") && t.contains("split(tB,ks)") && t.contains("toPrivate(")
    };
    (0..16)
        .map(|k| dir.join(format!("variant_{k:02}.lift")))
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| staged(&t)))
        .expect("conv: a variant with tiles in local memory, output channels in groups and private sums")
}

/// The guided search's best time over the median valid candidate's, both as measured again
/// together after the search (`confirmed` and `median_confirmed` in `report.json`).
fn guided_over_median(r: &Value) -> Option<f64> {
    let median = r["median_confirmed"]["median_ms"].as_f64()?;
    let guided = r["confirmed"].as_array()?.iter().filter(|c| c["phase"] == "guided");
    let best = guided.filter_map(|c| c["median_ms"].as_f64()).filter(|ms| *ms > 0.0).min_by(f64::total_cmp)?;
    Some(median / best)
}

fn guided_against_random(seeds: &[u64]) {
    println!("## 1. A 64-trial guided tune against 320 random valid trials (pocl)\n");
    println!("| program | seed | guided best GFLOP/s | random (5x trials) best | guided / random | median valid | guided / median |");
    println!("|---|---|---|---|---|---|---|");
    let conv_sizes = "inH=28,inW=28,inChs=32,outChs=32";
    let tiled = rewritten_conv(conv_sizes);
    let programs = [
        ("conv_blocked 28x28 32->32", "examples/conv_blocked.lift", conv_sizes),
        ("conv_hwio 28x28 32->32", "examples/conv_hwio.lift", conv_sizes),
        ("conv rewritten (E2SP) 28x28 32->32", tiled.to_str().expect("path"), conv_sizes),
        ("matmul_tiled 256^3", "examples/matmul_tiled.lift", "M=256,K=256,N=256"),
        ("matmul_outer 256^3", "examples/matmul_outer.lift", "M=256,K=256,N=256"),
    ];
    for (name, file, sizes) in programs {
        let (mut to_random, mut to_median) = (Vec::new(), Vec::new());
        for &seed in seeds {
            let s = seed.to_string();
            let dir = tune(
                &format!("{}-{seed}", name.split(' ').take(2).collect::<Vec<_>>().join("-")),
                file,
                sizes,
                &["--trials", "64", "--random-trials", "320", "--seed", &s],
            );
            let r = report(&dir);
            let (g, rnd, med) = (
                r["guided_best_gflops"].as_f64().unwrap_or(0.0),
                r["random_best_gflops"].as_f64().unwrap_or(0.0),
                r["median_valid_gflops"].as_f64().unwrap_or(0.0),
            );
            // Against the median in the round it was measured in: the guided search's best
            // measured again with the median valid candidate, or else both in the search.
            let to_med = guided_over_median(&r)
                .unwrap_or_else(|| trials(&dir, Phase::Guided).iter().map(|t| t.gflops).fold(0.0, f64::max) / med);
            to_random.push(g / rnd);
            to_median.push(to_med);
            println!("| {name} | {seed} | {g:.2} | {rnd:.2} | {:.2} | {med:.2} | {to_med:.1}x |", g / rnd);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        println!("| {name} | mean | | | {:.2} | | {:.1}x |", mean(&to_random), mean(&to_median));
    }
    println!();
}

/// Feature rows and fastest-launch times of trials, rebuilt as candidates of `task`.
fn rows(task: &Task, ts: &[Trial]) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let (mut rows, mut times, mut predicted) = (Vec::new(), Vec::new(), Vec::new());
    for t in ts {
        if let Ok(b) = task.rebuild(t) {
            rows.push(b.features);
            times.push(t.rank_ms());
            predicted.push(b.prediction.total_ms);
        }
    }
    (rows, times, predicted)
}

/// The conv's task as `mapsat tune` builds it (sums reassociated).
fn conv_task(sizes: &[(&str, i64)]) -> Task {
    let src = std::fs::read_to_string(root().join("examples/conv_blocked.lift")).expect("conv_blocked");
    let p = mapsat_ir::parse(&src).expect("parses");
    let given: Sizes = sizes.iter().copied().collect();
    Task::new(p, &given, Profile::builtin("pocl-cpu").expect("profile"), Dialect::OpenCl, true, 0)
        .expect("task")
        .reassociating()
}

fn model_accuracy() {
    println!("## 2. Rank correlation with measured speed (conv_blocked 28x28 32->32, random valid trials)\n");
    let here = tune(
        "acc-28",
        "examples/conv_blocked.lift",
        "inH=28,inW=28,inChs=32,outChs=32",
        &["--trials", "1", "--random-trials", "320", "--seed", "11"],
    );
    let other = tune(
        "acc-14",
        "examples/conv_blocked.lift",
        "inH=14,inW=14,inChs=64,outChs=64",
        &["--trials", "1", "--random-trials", "240", "--seed", "12"],
    );
    let task = conv_task(&[("inH", 28), ("inW", 28), ("inChs", 32), ("outChs", 32)]);
    let (x, t, pred) = rows(&task, &trials(&here, Phase::Random));
    let speed: Vec<f64> = t.iter().map(|t| -t).collect();
    let analytic = spearman(&pred.iter().map(|p| -p).collect::<Vec<_>>(), &speed);
    // 5-fold cross-validation: every candidate scored by a model that never saw it.
    let mut held = Vec::new();
    for k in 0..5 {
        let (mut train, mut test) = (TrainingSet::default(), (Vec::new(), Vec::new()));
        let (mut rows_k, mut times_k) = (Vec::new(), Vec::new());
        for i in 0..x.len() {
            if i % 5 == k {
                test.0.push(x[i].clone());
                test.1.push(speed[i]);
            } else {
                rows_k.push(x[i].clone());
                times_k.push(Some(t[i]));
            }
        }
        train.add_group(rows_k, &times_k);
        let m = Learned::fit(train).expect("trains");
        held.push(spearman(&m.score(&test.0), &test.1));
    }
    let held_mean = held.iter().sum::<f64>() / held.len() as f64;
    let other_task = conv_task(&[("inH", 14), ("inW", 14), ("inChs", 64), ("outChs", 64)]);
    let (ox, ot, _) = rows(&other_task, &trials(&other, Phase::Random));
    let mut train = TrainingSet::default();
    train.add_group(ox, &ot.iter().map(|t| Some(*t)).collect::<Vec<_>>());
    let transfer = spearman(&Learned::fit(train).expect("trains").score(&x), &speed);
    println!("| model | trained on | Spearman (n = {}) |\n|---|---|---|", x.len());
    println!("| analytical | nothing (zero-shot) | {analytic:.3} |");
    println!(
        "| learned | the other 4/5 of these trials (5 folds: {}) | {held_mean:.3} |",
        held.iter().map(|h| format!("{h:.2}")).collect::<Vec<_>>().join(", ")
    );
    println!("| learned | {} trials of another layer (14x14, 64 -> 64) | {transfer:.3} |\n", ot.len());
}

fn against_numpy() {
    println!("## 3. Tuned kernels against numpy (OpenBLAS), same machine\n");
    let python = std::env::var("MAPSAT_PYTHON").unwrap_or_else(|_| "python3".into());
    let numpy = |args: &[&str]| -> Option<f64> {
        let out = Command::new(&python).args(args).current_dir(root()).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().parse().ok()).flatten()
    };
    // GFLOP/s of the best kernel, or of the best kernels of a pipeline one after the other.
    let ours = |name: &str, file: &str, sizes: &str, flops: f64| -> f64 {
        let dir = tune(name, file, sizes, &["--trials", "64", "--random-trials", "0", "--seed", "1"]);
        flops / best_ms(&dir) / 1e6
    };
    let no_numpy = format!("skipped: {python} has no numpy (run scripts/bench.sh)");
    println!("Conv 56x56, 64 -> 64, against numpy's im2col + GEMM with the same weight layout, and against that GEMM alone (im2col left out of the time):\n");
    println!("| program (weights) | mapsat tune, 64 trials (confirmed best) | numpy im2col + GEMM | ratio | numpy GEMM alone | ratio |");
    println!("|---|---|---|---|---|---|");
    let conv = ["scripts/numpy_conv.py", "56", "56", "64", "64"];
    let convs = [
        ("conv_blocked (OHWI)", "examples/conv_blocked.lift", None),
        ("conv_outer, 2 kernels (OHWI)", "examples/conv_outer.lift", None),
        ("conv_hwio (HWIO)", "examples/conv_hwio.lift", Some("--hwio")),
    ];
    let conv_flops = 2.0 * 56.0 * 56.0 * 64.0 * 64.0 * 9.0;
    for (name, file, layout) in convs {
        let short = name.split([' ', ',']).next().unwrap_or(name);
        let g = ours(&format!("numpy-{short}"), file, "inH=56,inW=56,inChs=64,outChs=64", conv_flops);
        let args: Vec<&str> = conv.iter().copied().chain(layout).collect();
        let gemm_only: Vec<&str> = args.iter().copied().chain(["--gemm-only"]).collect();
        match (numpy(&args), numpy(&gemm_only)) {
            (Some(c), Some(m)) => println!("| {name} | {g:.2} | {c:.2} | {:.2}x | {m:.2} | {:.2}x |", g / c, g / m),
            _ => println!("| {name} | {g:.2} | {no_numpy} | | | |"),
        }
    }
    println!("\nMatmul 256^3 against numpy's `a @ b`:\n");
    println!("| program | mapsat tune, 64 trials (confirmed best) | numpy `a @ b` | ratio |\n|---|---|---|---|");
    for (name, file) in [("matmul_tiled", "examples/matmul_tiled.lift"), ("matmul_outer", "examples/matmul_outer.lift")]
    {
        let g = ours(&format!("numpy-{name}"), file, "M=256,K=256,N=256", 2.0 * 256f64.powi(3));
        match numpy(&["scripts/numpy_matmul.py", "256", "256", "256"]) {
            Some(m) => println!("| {name} | {g:.2} | {m:.2} | {:.2}x |", g / m),
            None => println!("| {name} | {g:.2} | {no_numpy} | |"),
        }
    }
    println!();
}

/// Runs a tuned kernel's mapped program again with its work group, checked: its median time
/// in ms and GFLOP/s.
fn rerun(lift: &Path, local: &str) -> (f64, f64) {
    let mut args = vec!["run", lift.to_str().unwrap(), "--check", "--reassociate", "--runs", "50"];
    if !local.is_empty() {
        args.extend(["--local", local]);
    }
    eprintln!("mapsat {}", args.join(" "));
    let out = Command::new(env!("CARGO_BIN_EXE_mapsat")).args(args).current_dir(root()).output().expect("mapsat");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("check: ok"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // `time: 1.2345 ms (median of 50, min 1.2000 ms); 12.34 GFLOP/s`
    let line = text.lines().find(|l| l.starts_with("time: ")).expect("a time line");
    let ms = line["time: ".len()..].split(' ').next().and_then(|x| x.parse().ok()).expect("ms");
    let gflops =
        line.rsplit("; ").next().and_then(|x| x.split(' ').next()).and_then(|x| x.parse().ok()).expect("GFLOP/s");
    (ms, gflops)
}

/// [`rerun`] of each kernel of a variant of `variants.json` (tuned in `dir`), in order: their
/// time in ms and GFLOP/s together.
fn rerun_all(dir: &Path, v: &Value) -> (f64, f64) {
    let kernels = v["kernels"].as_array().expect("kernels");
    let (mut ms, mut mflop) = (0.0, 0.0);
    for (k, lift) in kernels.iter().enumerate() {
        let l = v["work_groups"][k].as_array().expect("a work group");
        let local = l.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
        let (t, g) = rerun(&dir.join(lift.as_str().expect("a kernel")), &local);
        ms += t;
        mflop += g * t;
    }
    (ms, mflop / ms)
}

fn variants_against_input(k: &str) {
    println!("## 4. The best of K = {k} rewrite variants against the untransformed program (32 trials each, pocl)\n");
    println!("| program | untransformed (variant 0): tune GFLOP/s | best variant | its tune GFLOP/s | run again: untransformed | run again: best variant | speedup (time) |");
    println!("|---|---|---|---|---|---|---|");
    let programs = [
        ("matmul 256^3", "examples/matmul.lift", "M=256,K=256,N=256"),
        ("conv 28x28 32->32", "examples/conv.lift", "inH=28,inW=28,inChs=32,outChs=32"),
        ("conv_windows 28x28 32->32", "examples/conv_windows.lift", "inH=28,inW=28,inChs=32,outChs=32"),
        ("linear 256^3", "examples/linear.lift", "M=256,K=256,N=256"),
        ("mlp 256^3", "examples/mlp.lift", "M=256,K=256,H=256,N=256"),
    ];
    let only = std::env::var("MAPSAT_QUALITY_PROGRAMS").unwrap_or_default();
    let chosen = |name: &str| only.is_empty() || only.split(',').any(|o| name.starts_with(o.trim()));
    for (name, file, sizes) in programs.into_iter().filter(|(name, ..)| chosen(name)) {
        let tag = format!("variants-{}", name.split(' ').next().unwrap());
        let dir = tune(&tag, file, sizes, &["--variants", k, "--trials", "32", "--random-trials", "0", "--seed", "1"]);
        let s: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("variants.json")).expect("variants.json"))
                .expect("JSON");
        let w = s["best"].as_u64().expect("a winner") as usize;
        let (v0, vw) = (&s["variants"][0], &s["variants"][w]);
        let (t0, g0) = rerun_all(&dir, v0);
        let (tw, gw) = if w == 0 { (t0, g0) } else { rerun_all(&dir, vw) };
        println!(
            "| {name} | {:.2} | {w}: `{}` | {:.2} | {g0:.2} GFLOP/s, {t0:.3} ms | {gw:.2} GFLOP/s, {tw:.3} ms | {:.2}x |",
            v0["best_gflops"].as_f64().unwrap_or(0.0),
            vw["signature"].as_str().unwrap_or(""),
            vw["best_gflops"].as_f64().unwrap_or(0.0),
            t0 / tw
        );
    }
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only when benched.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let seeds: Vec<u64> = std::env::var("MAPSAT_QUALITY_SEEDS")
        .unwrap_or_else(|_| "1,2,3".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let sections = std::env::var("MAPSAT_QUALITY_SECTIONS").unwrap_or_else(|_| "1,2,3,4".into());
    let run = |n: &str| sections.split(',').any(|s| s.trim() == n);
    println!("# mapsat tune: evidence on pocl\n");
    if run("1") {
        guided_against_random(&seeds);
    }
    if run("2") {
        model_accuracy();
    }
    if run("3") {
        against_numpy();
    }
    if run("4") {
        variants_against_input(&std::env::var("MAPSAT_QUALITY_VARIANTS").unwrap_or_else(|_| "7".into()));
    }
}

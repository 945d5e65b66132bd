//! End-to-end tests of `mapsat tune --variants K` on pocl: the input and its rewrite variants
//! tuned one by one into their own folders, the summary naming the fastest, whose kernel is
//! checked again by `mapsat run --check`; a program of several kernels, each kernel also
//! rewritten on its own; resumption per variant; bad usage.
//!
//! Without an OpenCL device the tests that measure are skipped with a message, unless
//! `MAPSAT_REQUIRE_OPENCL=1` (CI), which makes that a failure.

mod common;

use common::{mapsat, opencl, root, scratch, text, trials};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const MATMUL: &str = "examples/matmul.lift";

/// The program of a written `.lift` file, in canonical form.
fn canonical(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    mapsat::ir::print(&mapsat::ir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}")))
}

#[test]
fn variants_are_tuned_one_by_one_and_the_fastest_kernel_wins() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune-variants", "matmul");
    let args = |extra: &[&str]| -> Vec<String> {
        let base = ["tune", MATMUL, "--size", "M=16,K=16,N=16", "--variants", "3", "--trials", "4", "--batch", "4"];
        let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        v.extend(["--random-trials", "0", "--runs", "1", "-o", dir.to_str().unwrap()].map(String::from));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |extra: &[&str]| mapsat(&args(extra).iter().map(String::as_str).collect::<Vec<_>>());
    let out = run(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("variants.json")).unwrap()).unwrap();
    let variants = summary["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 3, "{summary}");
    // Variant 0 is the input program itself; the others are other programs.
    assert_eq!(variants[0]["description"], "the input program");
    let programs: Vec<String> = (0..3).map(|n| canonical(&dir.join(format!("variant_{n:02}/variant.lift")))).collect();
    assert_eq!(programs[0], canonical(&root().join(MATMUL)));
    assert!(programs[1] != programs[0] && programs[2] != programs[0] && programs[1] != programs[2]);
    // Each was tuned in its own folder with its own trials.
    for (n, v) in variants.iter().enumerate() {
        let vdir = dir.join(format!("variant_{n:02}"));
        assert_eq!(v["dir"], format!("variant_{n:02}"));
        let ts = trials(&vdir.join("tune.jsonl"));
        assert_eq!(ts.iter().filter(|t| t["phase"] == "guided").count(), 4, "variant {n}");
        let report: Value = serde_json::from_str(&std::fs::read_to_string(vdir.join("report.json")).unwrap()).unwrap();
        assert_eq!(report["best_ms"], v["tune_ms"], "variant {n}");
        assert!(v["best_gflops"].as_f64().unwrap() > 0.0, "{v}");
        // The best kernels of all variants were measured again together, and ranked so.
        assert_eq!(v["measured_again"], true, "{v}");
        assert!(v["signature"].is_string());
    }
    // Every variant's GFLOP/s counts the input program's operations (a variant that computes
    // some values twice counted its own, and looked faster than a faster one): 2 M K N.
    assert_eq!(summary["gflops_of"], "the input program's operations", "{summary}");
    for v in variants {
        let mflop = v["best_gflops"].as_f64().unwrap() * v["best_ms"].as_f64().unwrap();
        assert!((mflop - 2.0 * 16.0 * 16.0 * 16.0 / 1e6).abs() < 1e-9, "{v}");
    }
    // The winner is the fastest variant measured again, and the only one marked.
    assert_eq!(summary["ranked_by"], "the best kernels measured again together");
    let w = summary["best"].as_u64().expect("a winner") as usize;
    let ms = |v: &Value| v["best_ms"].as_f64().unwrap();
    assert!(variants.iter().all(|v| ms(v) >= ms(&variants[w])), "{summary}");
    assert_eq!(variants.iter().filter(|v| v["best"] == true).count(), 1);
    assert_eq!(summary["best_ms"], variants[w]["best_ms"]);
    let speedup = summary["speedup_over_input"].as_f64().unwrap();
    assert!((speedup - ms(&variants[0]) / ms(&variants[w])).abs() < 1e-9 && speedup >= 1.0, "{summary}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("best: variant {w}, ")), "{stdout}");
    // The winning kernel's mapped program runs on its own and agrees with the interpreter.
    let kernels = variants[w]["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    let lift = dir.join(kernels[0].as_str().unwrap());
    let local: Vec<String> =
        variants[w]["work_groups"][0].as_array().unwrap().iter().map(|x| x.as_i64().unwrap().to_string()).collect();
    let local = local.join(",");
    let mut args = vec!["run", lift.to_str().unwrap(), "--check", "--runs", "1", "--reassociate"];
    if !local.is_empty() {
        args.extend(["--local", &local]);
    }
    let check = mapsat(&args);
    assert!(check.status.success() && text(&check).contains("check: ok"), "{}", text(&check));
    // The logs are per variant: a second tune refuses them without --resume, and with it
    // measures nothing again.
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("--resume"), "{}", text(&again));
    let resumed = run(&["--resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    for n in 0..3 {
        let ts = trials(&dir.join(format!("variant_{n:02}/tune.jsonl")));
        assert_eq!(ts.iter().filter(|t| t["phase"] == "guided").count(), 4, "variant {n} after --resume");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_variant_options_are_usage_errors() {
    let dir = scratch("tune-variants", "bad");
    let out_dir = dir.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--variants", "0"], "--variants must be at least 1"),
        (&["--variants", "2", "--rewrite-time-limit", "1e20"], "--rewrite-time-limit 1e20 is too large"),
        (&["--variants", "2", "--log", "x.jsonl"], "each variant keeps its log"),
        (&["--variants", "2", "--rewrite-time-limit", "0"], "--rewrite-time-limit must be a positive"),
    ];
    for (args, msg) in cases {
        let out = mapsat(&[&["tune", MATMUL, "-o", out_dir][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(msg), "{args:?}: {}", text(&out));
        assert!(!text(&out).contains("panicked"), "{args:?}: {}", text(&out));
    }
    assert!(!dir.join("variants.json").exists());
}

#[test]
fn a_program_of_several_kernels_has_its_variants_tuned_kernel_by_kernel() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune-variants", "sepblur");
    let base = ["tune", "examples/sepblur.lift", "--variants", "2", "--trials", "2", "--batch", "2"];
    let out = mapsat(&[&base[..], &["--random-trials", "0", "--runs", "1", "-o", dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("variants.json")).unwrap()).unwrap();
    let variants = summary["variants"].as_array().expect("variants");
    // The input, a variant, and (unless it is one of those) the program of each kernel's
    // fastest candidate when rewritten on its own.
    assert!(matches!(variants.len(), 2 | 3), "{summary}");
    assert_eq!(summary["kernels_on_their_own"].as_array().map(Vec::len), Some(2), "{summary}");
    for (n, v) in variants.iter().take(2).enumerate() {
        // One log per kernel of each variant, and one best kernel per stage: two for the input,
        // one for the rewrite stage's best variant (the horizontal pass inlined into the
        // vertical one).
        let kernels = v["kernels"].as_array().unwrap_or_else(|| panic!("variant {n}: {v}"));
        assert_eq!(kernels.len(), 2 - n, "{v}");
        for k in kernels {
            let lift = dir.join(k.as_str().unwrap());
            assert!(lift.parent().unwrap().join("tune.jsonl").is_file(), "{}", lift.display());
        }
    }
    // With a sequence of kernels among them, the variants keep their tunes' times (not
    // measured again together).
    assert_eq!(summary["ranked_by"], "each tune's best time");
    let w = summary["best"].as_u64().expect("a winner") as usize;
    let ms = |v: &Value| v["best_ms"].as_f64().unwrap();
    assert!(variants.iter().all(|v| ms(v) >= ms(&variants[w])), "{summary}");
    // Each program of several kernels has its whole-program command printed, the joined one
    // too (it had none; a tester), and each runs and checks.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let whole: Vec<&str> =
        stdout.lines().filter_map(|l| l.strip_prefix("run the whole program again: mapsat ")).collect();
    assert_eq!(whole.len(), if variants.len() == 3 { 2 } else { 1 }, "{stdout}");
    for cmd in whole {
        let run = mapsat(&[cmd.split_whitespace().collect::<Vec<_>>(), vec!["--runs", "1"]].concat());
        assert!(run.status.success() && text(&run).contains("check: ok"), "{cmd}\n{}", text(&run));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two fully-connected layers with a relu between, the weights in PyTorch's layout: a program
/// of two kernels.
const MLP: &str = "size M = 8, K = 16, H = 8, N = 8
def mlp(x: [[f32]K]M, w1: [[f32]K]H, w2: [[f32]H]N) : [[f32]N]M =
  let h = toGlobal(map@A(fun(r => map@B(fun(w => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(r, w))))), w1)), x)) in
  map@D(fun(r => map@E(fun(w => reduce(add, 0.0, map@F(fun(p => p.0 * p.1), zip(r, w)))), w2)), h)
";

#[test]
fn each_kernel_of_a_program_is_also_rewritten_on_its_own_and_the_fastest_of_each_joined() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune-variants", "mlp");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mlp.lift");
    std::fs::write(&file, MLP).unwrap();
    let out_dir = dir.join("out");
    let args = ["tune", file.to_str().unwrap(), "--variants", "3", "--trials", "3", "--batch", "3"];
    let out = mapsat(&[&args[..], &["--random-trials", "0", "--runs", "1", "-o", out_dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("variants.json")).unwrap()).unwrap();
    // Each kernel's candidates, tuned in their own folders; the fastest of each is the chosen.
    let kernels = summary["kernels_on_their_own"].as_array().expect("kernels");
    let names: Vec<&str> = kernels.iter().map(|k| k["kernel"].as_str().unwrap()).collect();
    assert_eq!(names, ["mlp_0_h", "mlp"]);
    let mut chosen = Vec::new();
    for k in kernels {
        let cs = k["candidates"].as_array().unwrap();
        assert_eq!(cs.len(), 3, "{k}");
        assert_eq!(cs[0]["description"], "the input program");
        for c in cs {
            assert!(out_dir.join(c["dir"].as_str().unwrap()).join("variant.lift").is_file(), "{c}");
        }
        let ms = |c: &Value| c["best_ms"].as_f64().unwrap_or(f64::INFINITY);
        let f = k["fastest"].as_u64().expect("a correct candidate") as usize;
        assert!(cs.iter().all(|c| ms(c) >= ms(&cs[f])), "{k}");
        chosen.push(f);
    }
    // The choice is recorded; resumed, the recorded one is joined (measured again, another
    // candidate could be the fastest), and nothing is measured twice. Recorded here as the
    // kernels' last candidates (rewrite variants), so that the joined program is a new one.
    let record = out_dir.join("kernels/joined.json");
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(recorded["choice"], serde_json::json!(chosen));
    let joined_in = |summary: &Value| -> Option<Value> {
        let variants = summary["variants"].as_array().unwrap();
        variants
            .iter()
            .find(|v| v["description"].as_str().unwrap().starts_with("each kernel rewritten on its own"))
            .cloned()
    };
    if joined_in(&summary).is_none() {
        // The fastest of each joined is a program tuned already (the input, or a variant).
        assert!(text(&out).contains("a program tuned already"), "{}", text(&out));
    }
    let logs: Vec<PathBuf> = walk(&out_dir).into_iter().filter(|p| p.ends_with("tune.jsonl")).collect();
    let before: Vec<usize> = logs.iter().map(|l| trials(l).len()).collect();
    let chosen = [2, 2];
    let mut other = recorded.clone();
    other["choice"] = serde_json::json!(chosen);
    std::fs::write(&record, other.to_string()).unwrap();
    let resume = ["--random-trials", "0", "--runs", "1", "--resume", "-o", out_dir.to_str().unwrap()];
    let out = mapsat(&[&args[..], &resume].concat());
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(logs.iter().map(|l| trials(l).len()).collect::<Vec<_>>(), before);
    assert!(text(&out).contains("kernels/mlp_0_h/variant_02, kernels/mlp/variant_02"), "{}", text(&out));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("variants.json")).unwrap()).unwrap();
    let kernels = summary["kernels_on_their_own"].as_array().expect("kernels");
    let joined = joined_in(&summary).expect("the joined variant");
    // Its time is the sum of the chosen candidates' (tuned on their own, not again).
    let ms = |k: usize, c: usize| kernels[k]["candidates"][c]["best_ms"].as_f64().unwrap();
    let sum = ms(0, chosen[0]) + ms(1, chosen[1]);
    assert!((joined["best_ms"].as_f64().unwrap() - sum).abs() < 1e-9, "{joined} {sum}");
    // The same function as the input, by the interpreter, at the sizes its file declares.
    let parse = |t: &str| mapsat::ir::parse(t).unwrap_or_else(|e| panic!("{e}\n{t}"));
    let p = parse(MLP);
    let lift = std::fs::read_to_string(out_dir.join(joined["program"].as_str().unwrap())).unwrap();
    let q = parse(&lift);
    let sizes = q.resolve_sizes(&mapsat::ir::Sizes::new()).unwrap();
    let inputs = mapsat::ir::interp::random_inputs(&p, &sizes, 3).unwrap();
    let want = mapsat::ir::interp::eval(&p, &sizes, &inputs).unwrap();
    assert!(mapsat::ir::interp::eval(&q, &sizes, &inputs).unwrap().compare(&want, 1e-4, 1e-4).ok, "{lift}");
    // Its kernels are those of the chosen candidates, in order, each runnable as written.
    let count = |k: usize, c: usize| {
        let dir = out_dir.join(kernels[k]["candidates"][c]["dir"].as_str().unwrap());
        mapsat::ir::stages::count(&parse(&std::fs::read_to_string(dir.join("variant.lift")).unwrap()))
    };
    let files = joined["kernels"].as_array().unwrap();
    assert_eq!(files.len(), count(0, chosen[0]) + count(1, chosen[1]), "{joined}");
    for (f, local) in files.iter().zip(joined["work_groups"].as_array().unwrap()) {
        let local: Vec<String> = local.as_array().unwrap().iter().map(|v| v.to_string()).collect();
        let file = out_dir.join(f.as_str().unwrap());
        let mut run = vec!["run", file.to_str().unwrap(), "--check", "--runs", "1", "--reassociate"];
        let local = local.join(",");
        if !local.is_empty() {
            run.extend(["--local", &local]);
        }
        let out = mapsat(&run);
        assert!(out.status.success() && text(&out).contains("check: ok"), "{run:?}: {}", text(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mapsat tune SRC --variants 2` with a few trials, into `out_dir`.
fn tune_two_variants(src: &Path, out_dir: &Path) -> std::process::Output {
    let args = ["tune", src.to_str().unwrap(), "--variants", "2", "--trials", "2", "--random-trials", "1"];
    mapsat(&[&args[..], &["--runs", "1", "-o", out_dir.to_str().unwrap()]].concat())
}

/// A program written to `file` in a scratch folder `name`, tuned with [`tune_two_variants`]
/// into its `out/`, which must succeed: the output, the program's path, `out/` and
/// `variants.json`.
fn tune_two_variants_of(name: &str, file: &str, program: &str) -> (std::process::Output, PathBuf, PathBuf, Value) {
    let dir = scratch("tune-variants", name);
    let src = dir.join(file);
    std::fs::write(&src, program).unwrap();
    let out_dir = dir.join("out");
    let out = tune_two_variants(&src, &out_dir);
    assert!(out.status.success(), "{}", text(&out));
    let summary = serde_json::from_str(&std::fs::read_to_string(out_dir.join("variants.json")).unwrap()).unwrap();
    (out, src, out_dir, summary)
}

/// A program named `variant`: its tuned kernel's mapped program is `variant.lift`, so each
/// variant's program is kept as `variant_program.lift` beside it (the kernel was written over
/// it, and `variants.json` named one file as both).
#[test]
fn a_program_named_variant_keeps_each_variants_program() {
    if !opencl() {
        return;
    }
    let program = "size N = 16\ndef variant(xs: [f32]N) : [f32]N = map@A(fun(x => x * 2.0), xs)\n";
    let (_, src, out_dir, summary) = tune_two_variants_of("named-variant", "variant.lift", program);
    let v0 = &summary["variants"][0];
    assert_eq!(v0["program"], "variant_00/variant_program.lift", "{summary}");
    let program = std::fs::read_to_string(out_dir.join("variant_00/variant_program.lift")).unwrap();
    assert!(program.contains("map@A(") && !program.contains("mapGlb"), "the input program:\n{program}");
    assert_eq!(canonical(&out_dir.join("variant_00/variant_program.lift")), canonical(&src));
    let kernel = std::fs::read_to_string(out_dir.join("variant_00/variant.lift")).unwrap();
    assert!(kernel.starts_with("// The fastest kernel mapsat tune found"), "{kernel}");
}

/// A plain reduction kept as a kernel (`let s = toGlobal(reduce(..))`, no map: the input runs
/// it in one work item, tuned as its one mapping), and the kernel rewritten on its own too.
/// When the fastest candidates of the kernels join into a new program (the split sum is not
/// always faster than the input's on two cores), the stage is global (it said "stages s
/// inline"; `mapsat::variants`' unit test checks that join whatever the times).
#[test]
fn a_reduction_kernel_split_on_its_own_stays_a_global_stage() {
    if !opencl() {
        return;
    }
    let program = "size N = 64\ndef sm(x: [f32]N) : [f32]N =\n  let s = toGlobal(reduce(add, 0.0, x)) in map@A(fun(v => v / s), x)\n";
    let (out, src, out_dir, summary) = tune_two_variants_of("sum-stage", "sm.lift", program);
    // The input's kernel without a map is said to run in one work item, without the hint to
    // tune rewrite variants: this run does.
    assert!(text(&out).contains("note: kernel `sm_0_s` has nothing to map"), "{}", text(&out));
    assert!(summary["variants"][0]["best_ms"].as_f64().is_some(), "the input is tuned: {summary}");
    assert!(!text(&out).contains("--variants K"), "{}", text(&out));
    let joined = summary["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["description"].as_str().is_some_and(|d| d.starts_with("each kernel rewritten on its own")));
    match joined {
        Some(joined) => assert_eq!(joined["stages"]["s"], "global", "{summary}"),
        None => assert!(text(&out).contains("the kernels' fastest candidates joined are a program tuned already")),
    }
    // Every candidate of the kernel on its own is tuned, the kernel as it is, without a map,
    // too (it was refused).
    let own = summary["kernels_on_their_own"].as_array().unwrap().iter().find(|k| k["kernel"] == "sm_0_s");
    let own = own.unwrap_or_else(|| panic!("kernel sm_0_s on its own: {summary}"));
    let candidates = own["candidates"].as_array().unwrap();
    assert!(candidates.len() > 1 && candidates.iter().all(|c| c["best_ms"].as_f64().is_some()), "{own}");
    // Tuned again into the same folder without --resume: refused before any variant is, the
    // summary kept (each variant's tune refused its log, then a summary of none was written).
    let before = std::fs::read_to_string(out_dir.join("variants.json")).unwrap();
    let again = tune_two_variants(&src, &out_dir);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("continue it with --resume, or choose another -o"), "{}", text(&again));
    assert!(!text(&again).contains("variant 0 of"), "nothing is tuned first: {}", text(&again));
    assert_eq!(std::fs::read_to_string(out_dir.join("variants.json")).unwrap(), before);
}

/// A plain sum has nothing to map, so the input cannot be tuned; its reason is given without
/// the hint to tune rewrite variants (which the run does: one splits it into partial sums).
#[test]
fn a_sum_with_nothing_to_map_is_tuned_through_its_variants() {
    if !opencl() {
        return;
    }
    let program = "size N = 256\ndef sum(xs: [f32]N) = reduce(add, 0.0, xs)\n";
    let (out, _, _, summary) = tune_two_variants_of("plain-sum", "sum.lift", program);
    assert!(text(&out).contains("nothing to map; it runs in one work item"), "{}", text(&out));
    assert!(!text(&out).contains("--variants K"), "{}", text(&out));
    assert!(summary["best"].as_u64().is_some_and(|w| w > 0), "{summary}");
}

/// An input in a variant's folder (`DIR/variant_00/variant.lift`, where variant 0's program is
/// written, or `DIR/variant_01/scale.lift`, where variant 1's kernel is), or at
/// `DIR/variants.json`: the tune stops before any variant is tuned, and the input is kept (it
/// was written over, or refused only when that variant's turn came).
#[test]
fn a_variant_program_is_never_written_over_the_input() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune-variants", "input-inside");
    let program = "// my notes\nsize N = 16\ndef scale(xs: [f32]N) : [f32]N = map@A(fun(x => x * 2.0), xs)\n";
    for (place, says) in [
        ("variant_00/variant.lift", "which this tune writes"),
        ("variant_01/scale.lift", "which this tune writes"),
        ("variants.json", "would overwrite the input"),
    ] {
        let src = dir.join(place);
        std::fs::create_dir_all(src.parent().unwrap()).unwrap();
        std::fs::write(&src, program).unwrap();
        let out = tune_two_variants(&src, &dir);
        assert_eq!(out.status.code(), Some(1), "{place}: {}", text(&out));
        assert!(text(&out).contains(says), "{place}: {}", text(&out));
        assert!(!text(&out).contains("variant 0 of"), "{place}: nothing is tuned first: {}", text(&out));
        assert_eq!(std::fs::read_to_string(&src).unwrap(), program);
        std::fs::remove_file(&src).unwrap();
    }
}

/// A prior model (`--model`) in a folder the variants' tunes write, where variant 0's own model
/// goes: the tune stops before any variant is tuned, the model is kept and an earlier
/// `variants.json` is not written over (each variant's tune was refused in turn, then the
/// summary of none was written).
#[test]
fn a_prior_model_in_a_variants_folder_stops_the_tune_first() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune-variants", "model-inside");
    let src = dir.join("scale.lift");
    std::fs::write(&src, "size N = 16\ndef scale(xs: [f32]N) : [f32]N = map@A(fun(x => x * 2.0), xs)\n").unwrap();
    let out_dir = dir.join("out");
    let model = out_dir.join("variant_00/tune.jsonl.model.json");
    std::fs::create_dir_all(model.parent().unwrap()).unwrap();
    std::fs::write(&model, "a model, byte for byte").unwrap();
    std::fs::write(out_dir.join("variants.json"), "an earlier summary").unwrap();
    let args = ["tune", src.to_str().unwrap(), "--variants", "2", "--trials", "2", "--model"];
    let out = mapsat(&[&args[..], &[model.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("the prior model (--model)"), "{}", text(&out));
    assert!(text(&out).contains("which this tune writes"), "{}", text(&out));
    assert!(!text(&out).contains("variant 0 of"), "nothing is tuned first: {}", text(&out));
    assert_eq!(std::fs::read_to_string(&model).unwrap(), "a model, byte for byte");
    assert_eq!(std::fs::read_to_string(out_dir.join("variants.json")).unwrap(), "an earlier summary");
}

/// Every `run it again` command a tune of variants prints runs and checks, the whole-program
/// one of a variant whose kernels differ from the input's too: a fully-connected layer with a
/// bias, one of whose variants stores the weights transposed by a kernel of its own. That
/// command named the input file, whose one kernel has no `lp_0_x1` to take its `--local`
/// (a tester).
#[test]
fn every_printed_run_command_of_a_variant_runs() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune-variants", "rerun");
    let file = dir.join("lp.lift");
    std::fs::write(
        &file,
        "size M = 3, K = 11, N = 13\ndef lp(x: [[f32]K]M, w: [[f32]K]N, bias: [f32]N) : [[f32]N]M =\n  \
         map@A(fun(row => map@B(fun(wb => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, wb.0))) + wb.1)), zip(w, bias))), x)\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let args = ["tune", file.to_str().unwrap(), "--variants", "3", "--trials", "2", "--batch", "2"];
    let out = mapsat(&[&args[..], &["--random-trials", "0", "--runs", "1", "-o", out_dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let again: Vec<&str> = stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix("run it again: mapsat ").or_else(|| l.strip_prefix("run the whole program again: mapsat "))
        })
        .collect();
    // A whole program of two kernels, run from the variant's own file.
    let input = file.to_str().unwrap();
    assert!(again.iter().any(|c| c.contains("variant.lift") && c.contains(":1") && !c.contains(input)), "{stdout}");
    for cmd in again {
        let run = mapsat(&[cmd.split_whitespace().collect::<Vec<_>>(), vec!["--runs", "1"]].concat());
        assert!(run.status.success() && text(&run).contains("check: ok"), "{cmd}\n{}", text(&run));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

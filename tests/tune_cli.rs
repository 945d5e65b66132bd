//! End-to-end tests of `mapsat tune` on pocl: a whole tune whose best kernel is checked again by
//! `mapsat run --check` (the interpreter is the oracle), the log and its resumption after
//! `kill -9`, a hanging and a crashing measurement, and bad input.
//!
//! Without an OpenCL device the tests that measure are skipped with a message, unless
//! `MAPSAT_REQUIRE_OPENCL=1` (CI), which makes that a failure.

mod common;

use common::{json, mapsat, opencl, root, scratch, text, trials};
use serde_json::Value;
use std::collections::HashSet;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn phase<'a>(ts: &'a [Value], p: &str) -> Vec<&'a Value> {
    ts.iter().filter(|t| t["phase"] == p).collect()
}

const CONV: &str = "examples/conv_blocked.lift";

#[test]
fn a_tune_finds_a_correct_kernel_and_reports_it() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "whole");
    let out_dir = dir.to_str().unwrap();
    let out =
        mapsat(&["tune", CONV, "--trials", "8", "--batch", "4", "--random-trials", "4", "--runs", "2", "-o", out_dir]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("best: ") && stdout.contains("GFLOP/s"), "{stdout}");
    // Every trial was measured once, correct, and logged.
    let ts = trials(&dir.join("tune.jsonl"));
    let guided = phase(&ts, "guided");
    assert_eq!(guided.len(), 8);
    assert_eq!(phase(&ts, "random").len(), 4);
    let kernels: HashSet<&str> = guided.iter().map(|t| t["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels.len(), 8, "a kernel was measured twice");
    assert!(ts.iter().all(|t| t["status"] == "ok"), "{ts:?}");
    // The report names the best kernel, and the plot and model were written.
    let report: Value = json(&dir.join("report.json"));
    assert_best_is_confirmed(&report, &ts);
    // Research code reads it back as the summary it was written from.
    let back: mapsat_tuner::tune::report::Summary = serde_json::from_value(report.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), report);
    // The median valid candidate is one random trial (of an even number, the slower of the
    // middle two): its time and its GFLOP/s. It was measured again with the best kernels, and
    // the best's speedup over it is the ratio of those times (both from one round: a noisy
    // search time of the best made it 0.1x).
    let random = phase(&ts, "random");
    let mut by_time: Vec<f64> = random.iter().map(|t| t["median_ms"].as_f64().unwrap()).collect();
    by_time.sort_by(f64::total_cmp);
    assert_eq!(report["median_valid_ms"].as_f64().unwrap(), by_time[2], "{report}");
    let median = random.iter().find(|t| t["median_ms"] == report["median_valid_ms"]).expect("the median's trial");
    assert_eq!(median["gflops"], report["median_valid_gflops"], "{report}");
    let again = &report["median_confirmed"];
    assert_eq!(again["kernel"], median["kernel"], "{report}");
    let speedup = again["median_ms"].as_f64().unwrap() / report["best_ms"].as_f64().unwrap();
    assert!((report["speedup_over_median"].as_f64().unwrap() - speedup).abs() < 1e-9, "{report}");
    assert!(stdout.contains("both measured again together after the search"), "{stdout}");
    assert!(std::fs::read_to_string(dir.join("progress.svg")).unwrap().starts_with("<svg"));
    assert!(dir.join("tune.jsonl.model.json").is_file());
    assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("## Model accuracy"));
    // The best kernel's program runs again, on its own, and agrees with the interpreter. Its
    // header quotes the report's time (the confirmed one), not its time in the search.
    let lift = dir.join("conv_blocked.lift");
    let header = std::fs::read_to_string(&lift).unwrap();
    let quoted = format!(
        "{}, {:.2} GFLOP/s.",
        mapsat_tuner::tune::report::fmt_ms(report["best_ms"].as_f64().unwrap()),
        report["best_gflops"].as_f64().unwrap()
    );
    assert!(header.lines().next().unwrap().ends_with(&quoted), "{quoted}\n{header}");
    let run = mapsat(&["run", lift.to_str().unwrap(), "--check", "--runs", "1"]);
    assert!(run.status.success() && text(&run).contains("check: ok"), "{}", text(&run));
    // It was built letting the compiler reassociate sums, and says so; so is `run --reassociate`.
    let manifest: Value = json(&dir.join("conv_blocked.json"));
    assert_eq!(manifest["build_options"], "-cl-unsafe-math-optimizations");
    // The command printed to run it again, as it was measured (its work group, the option).
    let again = stdout.lines().find_map(|l| l.strip_prefix("run it again: mapsat ")).expect("a run command");
    let local: Vec<String> =
        report["best"]["local"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap().to_string()).collect();
    assert!(again.contains(&format!("--local {} --reassociate", local.join(","))), "{again}\n{report}");
    let run = mapsat(&[again.split_whitespace().collect::<Vec<_>>(), vec!["--runs", "1"]].concat());
    assert!(run.status.success() && text(&run).contains("check: ok"), "{}", text(&run));
    // A later tune of another program starts from the saved model.
    let other = scratch("tune", "transfer");
    let model = dir.join("tune.jsonl.model.json");
    let args = ["tune", "examples/matmul_tiled.lift", "--trials", "4", "--batch", "4", "--random-trials", "0"];
    // A tune into the folder of the model it starts from is refused; the model is kept.
    let before = std::fs::read(&model).unwrap();
    let out = mapsat(&[&args[..], &["--model", model.to_str().unwrap(), "-o", dir.to_str().unwrap()]].concat());
    assert!(!out.status.success() && text(&out).contains("would overwrite the prior model"), "{}", text(&out));
    assert_eq!(std::fs::read(&model).unwrap(), before);
    let out = mapsat(
        &[
            &args[..],
            &["--runs", "1", "--strict-math", "--model", model.to_str().unwrap(), "-o", other.to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", text(&out));
    // No random trials: no median to compare with, and it says so (not "0.0x").
    assert!(text(&out).contains("no random valid trial to compare with"), "{}", text(&out));
    let manifest = std::fs::read_to_string(other.join("matmul_tiled.json")).unwrap();
    assert!(!manifest.contains("build_options"), "--strict-math builds without options: {manifest}");
    let t = trials(&other.join("tune.jsonl"));
    assert!(t.iter().all(|t| t["learned_score"].is_number()), "the prior model ranked the first batch: {t:?}");
}

/// The best's speedup over the median valid candidate is the ratio of their times; where their
/// tunable sizes give them different numbers of operations (the tiled matmul's partial sums in
/// chunks of `tK`), their GFLOP/s differ by another ratio, and the summary says why (a tester
/// read "71.23 GFLOP/s; the median: 13.52 GFLOP/s (7.0x)" as a mistake).
#[test]
fn a_median_of_other_tile_sizes_is_compared_by_time() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "ops");
    let args = ["tune", "examples/matmul_tiled.lift", "--size", "M=16,K=16,N=16", "--trials", "4", "--batch", "4"];
    let out = mapsat(&[&args[..], &["--random-trials", "8", "--runs", "1", "-o", dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report: Value = json(&dir.join("report.json"));
    let f = |k: &str| report[k].as_f64().unwrap();
    let median = &report["median_confirmed"];
    let (median_ms, median_gflops) = (median["median_ms"].as_f64().unwrap(), median["gflops"].as_f64().unwrap());
    assert!((f("speedup_over_median") - median_ms / f("best_ms")).abs() < 1e-9, "{report}");
    assert!(stdout.contains(&format!("({:.1}x less time, both measured again", f("speedup_over_median"))), "{stdout}");
    let (best_ops, median_ops) = (f("best_gflops") * f("best_ms"), median_gflops * median_ms);
    let differ = (best_ops - median_ops).abs() > 0.005 * best_ops.max(median_ops);
    let note = "their tunable sizes give them different numbers of operations";
    assert_eq!(stdout.contains(note), differ, "{best_ops} and {median_ops} MFLOP\n{stdout}");
}

/// An `i32` program has no floating-point operations (0 GFLOP/s at every candidate): its best
/// is compared with the median valid candidate by their times, and the summary says so (it
/// said "no random valid trial to compare with" beside the random trials' best).
#[test]
fn an_integer_program_is_compared_with_the_median_by_time() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "i32");
    let src = dir.join("imm.lift");
    std::fs::write(
        &src,
        "size M = 6, K = 5, N = 16
def mm(a: [[i32]K]M, b: [[i32]N]K) : [[i32]N]M =
  map@A(fun(row => map@B(fun(col => max(0, reduce(add, 0, map@C(fun(p => p.0 * p.1), zip(row, col))))), transpose(b))), a)",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let args = ["tune", src.to_str().unwrap(), "--trials", "4", "--batch", "4", "--random-trials", "4", "--runs", "1"];
    let out = mapsat(&[&args[..], &["-o", out_dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("no floating-point operations; the median valid candidate: "), "{stdout}");
    assert!(!stdout.contains("no random valid trial"), "{stdout}");
    let report: Value = json(&out_dir.join("report.json"));
    assert!(report["median_valid_ms"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["speedup_over_median"].as_f64().unwrap() > 0.0, "{report}");
    // Every figure is a time: no "0.00 GFLOP/s" in the summary, the report or the plot.
    assert!(!stdout.contains("GFLOP/s"), "{stdout}");
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    let best = md.lines().find(|l| l.starts_with("**Best kernel:**")).unwrap();
    assert!(!best.contains("GFLOP/s") && best.contains("no floating-point operations"), "{best}");
    assert!(md.contains("Best of the guided search: ") && !md.contains("Best of the guided search: 0.00"), "{md}");
    let svg = std::fs::read_to_string(out_dir.join("progress.svg")).unwrap();
    assert!(svg.contains("best time so far (us)") && !svg.contains("GFLOP/s"), "the plot's axis");
    assert!(!md.contains("| 0.00 |"), "a table's GFLOP/s column:\n{md}");
    let lift = std::fs::read_to_string(out_dir.join("mm.lift")).unwrap();
    assert!(lift.lines().next().unwrap().ends_with("no floating-point operations."), "{lift}");
    // Without tunable sizes the header says so (it left an empty field).
    assert!(lift.lines().nth(1).unwrap().contains("; tunable sizes none; work group"), "{lift}");
    assert!(md.contains("- tunable sizes: none\n"), "{md}");
    let run = mapsat(&["run", out_dir.join("mm.lift").to_str().unwrap(), "--check", "--runs", "1"]);
    assert!(text(&run).contains("; no floating-point operations") && !text(&run).contains("GFLOP/s"), "{}", text(&run));
}

/// A tune without random trials has no median to compare with, and no best of random sampling:
/// "none", not "0.00 GFLOP/s".
#[test]
fn a_tune_without_random_trials_says_so() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "no-random");
    let args = ["tune", "examples/matmul.lift", "--size", "M=8,K=8,N=8", "--trials", "3", "--random-trials", "0"];
    let out = mapsat(&[&args[..], &["--runs", "1", "-o", dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("no random valid trial to compare with"), "{stdout}");
    assert!(stdout.contains("best of random valid sampling: none"), "{stdout}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("best of random valid sampling: none") && !md.contains("of 0 random"), "{md}");
}

#[test]
fn a_killed_tune_resumes_without_losing_or_repeating_a_record() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "resume");
    let log = dir.join("tune.jsonl");
    let args = |extra: &[&str]| -> Vec<String> {
        let base = ["tune", CONV, "--trials", "12", "--batch", "4", "--random-trials", "4", "--runs", "2"];
        let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        v.extend(["-o".into(), dir.to_str().unwrap().into()]);
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_mapsat"))
        .args(args(&[]))
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the tune");
    // Kill it (SIGKILL: no chance to clean up) once a few records are written.
    let start = Instant::now();
    while std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0) < 6 {
        assert!(start.elapsed() < Duration::from_secs(300), "the tune wrote no records");
        assert!(child.try_wait().unwrap().is_none(), "the tune ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill -9");
    child.wait().unwrap();
    let before = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = before.lines().filter(|l| l.ends_with('}')).collect();
    // Without --resume the log is not overwritten.
    let again = mapsat(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("--resume"), "{}", text(&again));
    let resumed = mapsat(&args(&["--resume"]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(resumed.status.success(), "{}", text(&resumed));
    let after = std::fs::read_to_string(&log).unwrap();
    // Every complete record written before the kill is still there, in order.
    for (a, b) in kept.iter().zip(after.lines()) {
        assert_eq!(a, &b);
    }
    let ts = trials(&log);
    let guided = phase(&ts, "guided");
    assert_eq!(guided.len(), 12);
    assert_eq!(phase(&ts, "random").len(), 4);
    let numbers: Vec<u64> = guided.iter().map(|t| t["trial"].as_u64().unwrap()).collect();
    assert_eq!(numbers, (0..12).collect::<Vec<_>>());
    // Nothing was measured twice: guided kernels are distinct, and a random trial that drew a
    // guided kernel reuses its measurement.
    let kernels: HashSet<&str> = guided.iter().map(|t| t["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels.len(), 12);
    for t in phase(&ts, "random") {
        assert_eq!(kernels.contains(t["kernel"].as_str().unwrap()), t["reused"].is_number(), "{t}");
    }
    // The best is chosen among every record, those before the kill included.
    let report: Value = json(&dir.join("report.json"));
    assert_best_is_confirmed(&report, &ts);
}

/// A tune stopped in its random phase and resumed draws the random candidates the whole tune
/// draws, in its order: each replayed draw is made apart from the draws before it only (it
/// was made apart from all of them, and the later ones moved up a place).
#[test]
fn a_tune_resumed_in_its_random_phase_draws_what_it_would_have_drawn() {
    if !opencl() {
        return;
    }
    let (whole, cut) = (scratch("tune", "random-whole"), scratch("tune", "random-cut"));
    let args = |dir: &std::path::Path, extra: &[&str]| -> Vec<String> {
        let base = ["tune", "examples/matmul.lift", "--trials", "4", "--random-trials", "7", "--runs", "1", "-o"];
        let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        v.push(dir.to_str().unwrap().into());
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |v: Vec<String>| mapsat(&v.iter().map(String::as_str).collect::<Vec<_>>());
    let out = run(args(&whole, &[]));
    assert!(out.status.success(), "{}", text(&out));
    let kernels = |dir: &std::path::Path| -> Vec<String> {
        phase(&trials(&dir.join("tune.jsonl")), "random").iter().map(|t| t["kernel"].to_string()).collect()
    };
    let drawn = kernels(&whole);
    assert_eq!(drawn.len(), 7);
    // The log as a kill after the second random record leaves it.
    let log = std::fs::read_to_string(whole.join("tune.jsonl")).unwrap();
    let mut seen = 0;
    let kept: Vec<&str> = log
        .lines()
        .take_while(|l| {
            seen += usize::from(l.contains("\"phase\":\"random\""));
            seen <= 2
        })
        .collect();
    std::fs::create_dir_all(&cut).unwrap();
    std::fs::write(cut.join("tune.jsonl"), kept.join("\n") + "\n").unwrap();
    let out = run(args(&cut, &["--resume"]));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(kernels(&cut), drawn);
}

/// The report's best kernel is the fastest of those measured again at the end of each phase,
/// which are the best trials of their phase; its time is their confirmed time.
fn assert_best_is_confirmed(report: &Value, ts: &[Value]) {
    let confirmed = report["confirmed"].as_array().expect("confirmed kernels");
    assert!(confirmed.len() >= 2, "{report}");
    let fastest = &confirmed[0];
    assert!(confirmed.iter().all(|c| c["median_ms"].as_f64() >= fastest["median_ms"].as_f64()));
    assert_eq!(report["best"]["kernel"], fastest["kernel"]);
    assert_eq!(report["best_ms"], fastest["median_ms"]);
    for phase in ["guided", "random"] {
        // The phase's best trial (by its fastest launch) is among its confirmed kernels.
        let ok = ts.iter().filter(|t| t["phase"] == phase && t["status"] == "ok");
        let Some(best) = ok.min_by(|a, b| a["min_ms"].as_f64().unwrap().total_cmp(&b["min_ms"].as_f64().unwrap()))
        else {
            continue;
        };
        assert!(confirmed.iter().any(|c| c["kernel"] == best["kernel"] && c["phase"] == phase), "{phase}: {report}");
    }
}

#[test]
fn a_hanging_or_crashing_measurement_is_recorded_and_the_tune_goes_on() {
    if !opencl() {
        return;
    }
    for (fault, status) in [("hang@2", "timeout"), ("crash@3", "crash")] {
        let dir = scratch("tune", status);
        let args = ["tune", "examples/matmul_tiled.lift", "--trials", "5", "--batch", "5", "--random-trials", "0"];
        let start = Instant::now();
        let out = mapsat(
            &[&args[..], &["--runs", "1", "--timeout", "4", "--inject-fault", fault, "-o", dir.to_str().unwrap()]]
                .concat(),
        );
        assert!(out.status.success(), "{fault}: {}", text(&out));
        assert!(start.elapsed() < Duration::from_secs(120), "{fault}: took {:?}", start.elapsed());
        let ts = trials(&dir.join("tune.jsonl"));
        assert_eq!(ts.len(), 5, "{fault}");
        let failed: Vec<&Value> = ts.iter().filter(|t| t["status"] != "ok").collect();
        assert_eq!(failed.len(), 1, "{fault}: {ts:?}");
        assert_eq!(failed[0]["status"], status, "{fault}");
        // The other kernels were measured by a new worker.
        let report: Value = json(&dir.join("report.json"));
        assert_eq!(report["worker_restarts"], 1, "{fault}");
        assert_ne!(report["best"]["status"], status);
    }
}

#[test]
fn a_tune_in_which_no_candidate_ran_correctly_fails() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "none-ran");
    let args = ["tune", "examples/matmul_tiled.lift", "--trials", "1", "--batch", "1", "--random-trials", "0"];
    let out = mapsat(&[&args[..], &["--runs", "1", "--inject-fault", "crash@1", "-o", dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("error: no candidate ran correctly"), "{}", text(&out));
    // The log and the report are written all the same, and say how the candidates failed.
    let t = &trials(&dir.join("tune.jsonl"))[0];
    assert_eq!(t["status"], "crash");
    let why = t["reason"].as_str().unwrap();
    assert!(!why.is_empty() && text(&out).contains(&format!("1 crash, e.g. {why}")), "{}", text(&out));
    let report: Value = json(&dir.join("report.json"));
    assert_eq!(report["failures"], serde_json::json!([{"status": "crash", "count": 1, "example": why}]));
    assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains(&format!("- 1 crash, e.g. {why}")));
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let dir = scratch("tune", "bad");
    let out_dir = dir.to_str().unwrap();
    let tune = |extra: &[&str]| mapsat(&[&["tune", CONV, "-o", out_dir][..], extra].concat());
    let cases: [(&[&str], i32, &str); 6] = [
        (&["--trials", "0"], 2, "--trials must be at least 1"),
        (&["--timeout", "1e20"], 2, "--timeout 1e20 is too large"),
        (&["--device", "gpu"], 2, "bad device `gpu`"),
        (&["--device", "opencl:7:0"], 1, "no OpenCL platform 7"),
        (&["--timeout", "0"], 2, "--timeout must be a positive"),
        (&["--target", "no-such-profile"], 2, "unknown device profile"),
    ];
    for (args, code, msg) in cases {
        let out = tune(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(msg), "{args:?}: {}", text(&out));
        assert!(!text(&out).contains("panicked"), "{args:?}: {}", text(&out));
    }
    let garbage = dir.join("garbage.toml");
    std::fs::write(&garbage, "name = 3\n[[[").unwrap();
    let out = tune(&["--target", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("invalid profile"), "{}", text(&out));
    // A program with no valid mapping: its only tile size never divides its length.
    let prog = dir.join("nodivide.lift");
    std::fs::write(
        &prog,
        "size N = 10, s in 3..3 = 3\ndef f(xs: [f32]N) = join(map(map(fun(x => x * 2.0)), split(s, xs)))\n",
    )
    .unwrap();
    let out = mapsat(&["tune", prog.to_str().unwrap(), "--target", "pocl-cpu", "-o", out_dir]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no valid mapping"), "{}", text(&out));
    // It names the values tried, not only the default's reason.
    assert!(text(&out).contains("none at the points of its tunable sizes tried (s in {3})"), "{}", text(&out));
    // A parameter no kernel takes (a vector not in an array): said before any candidate (every
    // candidate was refused by code generation, and the report blamed the space).
    let vp = dir.join("vector_param.lift");
    std::fs::write(&vp, "size N = 16\ndef vp(x: [f32x4]N, w: f32x4) = map@A(fun(v => v * w), x)\n").unwrap();
    let out = mapsat(&["tune", vp.to_str().unwrap(), "--target", "pocl-cpu", "-o", out_dir]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("declare `w: [f32x4]1`"), "{}", text(&out));
    // A program with nothing to map: it runs in one work item, and rewrite variants may map it.
    let sum = dir.join("sum.lift");
    std::fs::write(&sum, "size N = 64\ndef f(xs: [f32]N) = reduce(add, 0.0, xs)\n").unwrap();
    let out = mapsat(&["tune", sum.to_str().unwrap(), "--target", "pocl-cpu", "-o", out_dir]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("nothing to tune: "), "{}", text(&out));
    assert!(text(&out).contains("nothing to map; it runs in one work item"), "{}", text(&out));
    assert!(text(&out).contains("`mapsat tune --variants K` also tunes rewrite variants"), "{}", text(&out));
    // Its only mapping, the empty one, is valid (`space` gives it): not "no valid mapping".
    assert!(!text(&out).contains("no valid mapping"), "{}", text(&out));
    // A program its sizes do not type (a split of 10 by 4, no tunable size): the program's
    // error, not the mappings'.
    let split = dir.join("split.lift");
    let text_of_split = "size N = 10\ndef f(xs: [f32]N) = join(map@A(map@B(fun(x => x + 1.0)), split(4, xs)))\n";
    std::fs::write(&split, text_of_split).unwrap();
    let out = mapsat(&["tune", split.to_str().unwrap(), "--target", "pocl-cpu", "-o", out_dir]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("error: at N=10: split factor 4 does not divide the length 10"), "{}", text(&out));
    assert!(!text(&out).contains("no valid mapping"), "{}", text(&out));
    // A result too large for the interpreter that checks every candidate: said so, not "no
    // mapping satisfies the constraints" (`mapsat space` finds valid mappings).
    let size = ["--size", "H=100000,W=100000"];
    let huge = dir.join("huge.lift");
    std::fs::write(&huge, "size H = 4, W = 4\ndef f(a: [[f32]W]H) = mapND2@A(fun(x => x * 2.0), a)\n").unwrap();
    let out = mapsat(&[&["tune", huge.to_str().unwrap(), "--target", "pocl-cpu", "-o", out_dir][..], &size].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("too large for the interpreter"), "{}", text(&out));
    assert!(!text(&out).contains("no mapping satisfies"), "{}", text(&out));
    assert!(!text(&out).contains("no valid mapping"), "{}", text(&out));
    // A division by an input that the random inputs make 0: said to come from them.
    let divide = dir.join("divide.lift");
    std::fs::write(&divide, "size N = 64\ndef f(a: [i32]N, b: [i32]N) = map@A(fun(p => p.0 / p.1), zip(a, b))\n")
        .unwrap();
    let out = mapsat(&["tune", divide.to_str().unwrap(), "--target", "pocl-cpu", "-o", out_dir]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("on random inputs (seed 0"), "{}", text(&out));
    assert!(text(&out).contains("division by zero"), "{}", text(&out));
}

#[test]
fn a_log_of_another_program_or_version_is_refused() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "foreign");
    let log = dir.join("log.jsonl");
    let (log_s, out_dir) = (log.to_str().unwrap(), dir.to_str().unwrap());
    let base = ["--trials", "2", "--batch", "2", "--random-trials", "0", "--runs", "1", "--log", log_s, "-o", out_dir];
    let out = mapsat(&[&["tune", "examples/matmul_tiled.lift"][..], &base].concat());
    assert!(out.status.success(), "{}", text(&out));
    let out = mapsat(&[&["tune", CONV][..], &base, &["--resume"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("written for another task"), "{}", text(&out));
    // The same program at other sizes is another task too.
    let out = mapsat(&[&["tune", "examples/matmul_tiled.lift", "--size", "M=16"][..], &base, &["--resume"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // The program edited, its name and sizes kept: said so (it named the same task twice).
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let edited = dir.join("src").join("matmul_tiled.lift");
    let src = std::fs::read_to_string("examples/matmul_tiled.lift").unwrap();
    std::fs::write(&edited, src.replacen("p.0 * p.1", "p.1 * p.0", 1)).unwrap();
    let out = mapsat(&[&["tune", edited.to_str().unwrap()][..], &base, &["--resume"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("another version of program `matmul_tiled`"), "{}", text(&out));
    // The same program with other options: those are named, not the text.
    for option in ["--strict-math", "--no-fusion"] {
        let out = mapsat(&[&["tune", "examples/matmul_tiled.lift", option][..], &base, &["--resume"]].concat());
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains("with other options (the program's text is the same"), "{}", text(&out));
    }
    // A log of another format version.
    let text_now = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text_now.replacen("\"format\":1", "\"format\":99", 1)).unwrap();
    let out = mapsat(&[&["tune", "examples/matmul_tiled.lift"][..], &base, &["--resume"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("format 99"), "{}", text(&out));
    // Not a log at all.
    std::fs::write(&log, "hello\n").unwrap();
    let out = mapsat(&[&["tune", "examples/matmul_tiled.lift"][..], &base, &["--resume"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("not a mapsat tuning log"), "{}", text(&out));
}

#[test]
fn a_tuned_vector_width_is_the_one_of_the_best_kernel_and_its_program() {
    if !opencl() {
        return;
    }
    // matmul_outer's vector width `vw` is tuned like its tile size: every width that divides N
    // is a candidate, and the best kernel, its manifest and its mapped program agree on one.
    let dir = scratch("tune", "width");
    let out_dir = dir.to_str().unwrap();
    let size = "M=8,K=8,N=48";
    let out = mapsat(&[
        "tune",
        "examples/matmul_outer.lift",
        "--size",
        size,
        "--trials",
        "12",
        "--batch",
        "4",
        "--random-trials",
        "8",
        "--runs",
        "1",
        "-o",
        out_dir,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let ts = trials(&dir.join("tune.jsonl"));
    let widths: HashSet<i64> = ts.iter().map(|t| t["tuning"]["vw"].as_i64().unwrap()).collect();
    assert!(widths.len() > 1 && widths.iter().all(|w| [2, 3, 4, 8, 16].contains(w)), "{widths:?}");
    assert!(widths.iter().all(|w| 48 % w == 0), "{widths:?}");
    let report: Value = json(&dir.join("report.json"));
    let vw = report["best"]["tuning"]["vw"].as_i64().unwrap();
    let lift = std::fs::read_to_string(dir.join("matmul_outer.lift")).unwrap();
    assert!(lift.contains(&format!("vw in 2..16 = {vw}")), "{lift}");
    let source = std::fs::read_to_string(dir.join("matmul_outer.cl")).unwrap();
    assert!(source.contains(&format!("float{vw}")), "vw = {vw}:\n{source}");
    // The mapped program runs again at its width, and agrees with the interpreter.
    let lift = dir.join("matmul_outer.lift");
    let run = mapsat(&["run", lift.to_str().unwrap(), "--check", "--runs", "1"]);
    assert!(run.status.success() && text(&run).contains("check: ok"), "{}", text(&run));
}

/// `--resume` of a tune killed before it wrote its log (a pipeline's later kernel that had not
/// started) starts the tune instead of failing on the missing log.
#[test]
fn resuming_a_tune_that_never_started_starts_it() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "resume-unstarted");
    let d = dir.to_str().unwrap();
    let out = mapsat(&["tune", "examples/dot.lift", "--trials", "2", "--random-trials", "1", "--resume", "-o", d]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(trials(&dir.join("tune.jsonl")).len(), 3, "{}", text(&out));
}

/// A second tune into the folder a tune is writing, resumed or not, of variants or not, is
/// refused at once (it interleaved its records with the first's, or went on to the next
/// variant and wrote the summary over the first's).
#[test]
fn a_second_tune_into_a_busy_folder_is_refused() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "busy");
    let d = dir.to_str().unwrap();
    let base = ["tune", "examples/matmul.lift", "--size", "M=64,K=64,N=64", "--trials", "40", "--runs", "50", "-o", d];
    let mut first = Command::new(env!("CARGO_BIN_EXE_mapsat"))
        .args(base)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the tune");
    let start = Instant::now();
    while !dir.join("tune.jsonl").exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "the tune wrote no log");
        assert!(first.try_wait().unwrap().is_none(), "the tune ended too soon");
        std::thread::sleep(Duration::from_millis(20));
    }
    for extra in [&["--resume"][..], &[], &["--variants", "2", "--resume"]] {
        let out = mapsat(&[&base[..], extra].concat());
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", text(&out));
        assert!(text(&out).contains(&format!("another tune is writing into {d}")), "{extra:?}: {}", text(&out));
    }
    assert!(first.try_wait().unwrap().is_none(), "the first tune was running all along");
    first.kill().unwrap();
    first.wait().unwrap();
}

/// A folder where the report goes, or a file where the measured inputs' folder goes, is told
/// before any measurement (after the whole tune, before).
#[test]
fn an_output_that_cannot_be_written_is_told_before_measuring() {
    let dir = scratch("tune", "blocked");
    for (blocker, want) in [("report.md", "report.md: a folder, not a file"), ("data", "data: a file, not a folder")] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        match blocker {
            "data" => std::fs::write(dir.join(blocker), "").unwrap(),
            _ => std::fs::create_dir_all(dir.join(blocker)).unwrap(),
        }
        let out = mapsat(&["tune", "examples/dot.lift", "--trials", "2", "-o", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(want), "{}", text(&out));
        assert!(!dir.join("tune.jsonl").exists(), "nothing was measured");
    }
}

/// A tune whose output folder holds the input program under the name of the mapped program it
/// writes (`-o .` beside `dot.lift`), or whose log is named as a file of the report: nothing
/// is overwritten, and the error says so, naming the file in the way, before any measurement
/// (it said so after the tune, naming the same path twice).
#[test]
fn a_tune_never_overwrites_its_input_or_its_log() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "keep");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("dot.lift");
    let original = std::fs::read_to_string(root().join("examples/dot.lift")).unwrap();
    std::fs::write(&src, &original).unwrap();
    let base = ["tune", src.to_str().unwrap(), "--trials", "2", "--batch", "2", "--random-trials", "0", "--runs", "1"];
    let out = mapsat(&[&base[..], &["-o", dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("nothing is tuned: "), "{}", text(&out));
    assert!(text(&out).contains("dot.lift would overwrite the input program"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&src).unwrap(), original);
    assert!(!dir.join("tune.jsonl").exists(), "nothing was measured");
    // The same through a folder not made yet (`nosuch/..`), and for the files beside the
    // report: the learned model, the measured inputs in `data/`.
    let through = dir.join("nosuch").join("..");
    let out = mapsat(&[&base[..], &["-o", through.to_str().unwrap()]].concat());
    assert!(text(&out).contains("would overwrite the input program"), "{}", text(&out));
    assert!(!dir.join("nosuch").exists() && !dir.join("tune.jsonl").exists(), "nothing was made or measured");
    // `dot` is an OpenCL built-in: the kernel is `dot_kernel`, in `dot_kernel.cl` (the check
    // guarded `dot.cl`, which the tune never writes, and the tune wrote over the program).
    for (place, says) in [
        ("tune.jsonl.model.json", "would overwrite the input program"),
        ("data/xs.lift", "which the tune writes"),
        ("dot_kernel.cl", "would overwrite the input program"),
        ("dot_kernel.json", "would overwrite the input program"),
    ] {
        let other = dir.join("beside");
        let input = other.join(place);
        std::fs::create_dir_all(input.parent().unwrap()).unwrap();
        std::fs::write(&input, &original).unwrap();
        let args = ["tune", input.to_str().unwrap(), "--trials", "2", "--random-trials", "0", "-o"];
        let out = mapsat(&[&args[..], &[other.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(1), "{place}: {}", text(&out));
        assert!(text(&out).contains(says), "{place}: {}", text(&out));
        assert_eq!(std::fs::read_to_string(&input).unwrap(), original, "{place}");
        std::fs::remove_dir_all(&other).unwrap();
    }
    // In a pipeline, before its first kernel is tuned.
    let stages = dir.join("p");
    std::fs::create_dir_all(stages.join("p")).unwrap();
    let pipeline = stages.join("p").join("p.lift");
    let two = "size N = 8\ndef p(x: [f32]N) =\n  let h = toGlobal(map@A(fun(v => v * 2.0), x)) in\n  map@B(fun(v => v + 1.0), h)\n";
    std::fs::write(&pipeline, two).unwrap();
    let args = ["tune", pipeline.to_str().unwrap(), "--trials", "2", "--random-trials", "0", "-o"];
    let out = mapsat(&[&args[..], &[stages.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("p.lift would overwrite the input program"), "{}", text(&out));
    assert!(!stages.join("p_0_h").exists(), "no kernel was tuned first");
    assert_eq!(std::fs::read_to_string(&pipeline).unwrap(), two);
    // A program named `report`: its kernel's manifest is not the tune's report.
    let named = dir.join("named");
    std::fs::create_dir_all(&named).unwrap();
    let report = named.join("report.lift");
    std::fs::write(&report, original.replace("def dot(", "def report(")).unwrap();
    let args =
        ["tune", report.to_str().unwrap(), "--trials", "2", "--batch", "2", "--random-trials", "0", "--runs", "1"];
    let out = mapsat(&[&args[..], &["-o", named.join("out").to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let manifest: Value = json(&named.join("out/report_kernel.json"));
    assert_eq!(manifest["entry"], "report");
    let summary: Value = json(&named.join("out/report.json"));
    assert!(summary["best_ms"].as_f64().unwrap() > 0.0);
    // A log named as a file of the report is kept.
    let clash = dir.join("clash");
    let log = clash.join("report.json");
    let out = mapsat(&[&base[..], &["--log", log.to_str().unwrap(), "-o", clash.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("report.json would overwrite the log"), "{}", text(&out));
    assert!(!log.exists(), "nothing was measured");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tile sizes that divide prime and odd sizes are a few points of the grid of their values
/// (8 of 1,000 for matmul_tiled at 3x5x7): found and searched, not missed by random draws
/// (the tune was refused, "no valid mapping", or ran fewer trials than asked).
#[test]
fn sparse_valid_tile_sizes_are_found_and_searched() {
    if !opencl() {
        return;
    }
    let dir = scratch("tune", "sparse");
    let args = ["tune", "examples/matmul_tiled.lift", "--size", "M=3,N=5,K=7", "--trials", "8", "--batch", "4"];
    let rest = ["--random-trials", "2", "--runs", "1", "--seed", "0", "-o", dir.to_str().unwrap()];
    let out = mapsat(&[&args[..], &rest].concat());
    assert!(out.status.success(), "{}", text(&out));
    let ts = trials(&dir.join("tune.jsonl"));
    assert_eq!(phase(&ts, "guided").len(), 8, "{}", text(&out));
    assert_eq!(phase(&ts, "random").len(), 2, "{}", text(&out));
    for t in &ts {
        let tuning = &t["tuning"];
        for (size, n) in [("tM", 3), ("tN", 5), ("tK", 7)] {
            let v = tuning[size].as_i64().unwrap_or(1);
            assert_eq!(n % v, 0, "{t}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program without a map whose partial sums have a tunable tile size: the size is tuned
/// with the empty mapping (one work item runs it), and the best kernel runs again and passes
/// its check (it was refused: "nothing to tune", though the same kernel in a program of
/// several was tuned).
#[test]
fn a_program_without_a_map_is_tuned_in_its_tunable_sizes() {
    if !opencl() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mapsat-tune-sumt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("sumt.lift");
    let program = "size N = 1000, t in 1..64 = 4\ndef sumt(xs: [f32]N) : f32 =\n  reduce(fun(a, c => a + reduce(add, 0.0, c)), 0.0, split(t, xs))\n";
    std::fs::write(&src, program).unwrap();
    let out_dir = dir.join("out");
    let args = ["tune", src.to_str().unwrap(), "--trials", "4", "--random-trials", "0", "--runs", "1", "-o"];
    let out = mapsat(&[&args[..], &[out_dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap()).unwrap();
    let t = report["best"]["tuning"]["t"].as_i64().unwrap_or_else(|| panic!("a tuned t: {report}"));
    assert_eq!(1000 % t, 0, "t divides N: {t}");
    assert_eq!(report["best"]["mapping"], "", "{report}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // The empty mapping said in words (it printed "mapping " and nothing).
    assert!(stdout.contains("  mapping the empty one (no map: one work item runs the kernel)\n"), "{stdout}");
    let run = stdout.lines().find_map(|l| l.strip_prefix("run it again: mapsat ")).expect(&stdout);
    let again = mapsat(&run.split_whitespace().collect::<Vec<_>>());
    assert_eq!(again.status.code(), Some(0), "{run}: {}", text(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("check: ok"), "{}", text(&again));
    std::fs::remove_dir_all(dir).ok();
}

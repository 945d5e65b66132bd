//! Programs with kernel boundaries through the command line (`mapsat_ir::stages`): the
//! separable blur of `examples/sepblur.lift` runs as two kernels, each mapped, emitted, run,
//! checked and tuned on its own.

mod common;

use common::{mapsat, opencl};
use mapsat_tuner::tune::report::fmt_ms;
use std::path::PathBuf;

const SEPBLUR: &str = "examples/sepblur.lift";

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mapsat-stages-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

/// A fresh temporary folder `name` holding the program `text` as `file`.
fn program_in(name: &str, file: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = temp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(file);
    std::fs::write(&src, text).unwrap();
    (dir, src)
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[test]
fn emit_writes_a_kernel_per_stage_and_the_order() {
    let dir = temp("emit");
    let out = mapsat(&["emit", SEPBLUR, "--mapping", "A=G1,B=G0,C=G1,D=G0", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pipeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sepblur.pipeline.json")).unwrap()).unwrap();
    // The image, the horizontal pass's result and the output: 3 times 16 x 16 floats.
    assert_eq!(pipeline["global_bytes"], 3 * 16 * 16 * 4);
    let kernels = pipeline["kernels"].as_array().unwrap();
    let entries: Vec<&str> = kernels.iter().map(|k| k["entry"].as_str().unwrap()).collect();
    assert_eq!(entries, ["sepblur_0_h", "sepblur"]);
    assert_eq!(kernels[0]["inputs"], serde_json::json!(["param:img"]));
    assert_eq!(kernels[1]["inputs"], serde_json::json!(["stage:sepblur_0_h"]));
    for e in entries {
        let cl = std::fs::read_to_string(dir.join(format!("{e}.cl"))).unwrap();
        assert!(cl.contains(&format!("void {e}(")) && cl.contains("get_global_id(1)"), "{cl}");
        assert!(dir.join(format!("{e}.json")).exists());
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_mapping_is_checked_in_the_space_of_each_kernel() {
    // Within the vertical pass's own kernel, a work group cannot stand inside a sequential map.
    let out = mapsat(&["emit", SEPBLUR, "--mapping", "A=G0,B=S,C=S,D=W0", "-o", temp("bad").to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("in the kernel of stage `sepblur`") && stderr.contains("not valid"), "{stderr}");
    let out = mapsat(&["emit", SEPBLUR, "--mapping", "A=G0,B=S,C=G0,D=S,Z=S", "-o", temp("z").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown map `Z`"), "{}", text(&out.stderr));
    let out = mapsat(&["emit", SEPBLUR, "--mapping", "A=G0,B=S,C=G0", "-o", temp("missing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("does not give a code for: D"), "{}", text(&out.stderr));
}

#[test]
fn run_checks_every_kernel_and_the_whole_program() {
    if !opencl() {
        return;
    }
    for mapping in ["A=S,B=S,C=S,D=S", "A=G1,B=G0,C=G1,D=G0", "A=W0,B=L0,C=G0,D=S"] {
        let out = mapsat(&["run", SEPBLUR, "--size", "H=24,W=40", "--mapping", mapping, "--check"]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{mapping}: {stdout}{}", text(&out.stderr));
        assert!(stdout.contains("kernel sepblur_0_h:") && stdout.contains("kernel sepblur:"), "{stdout}");
        assert!(stdout.contains("(2 kernels)") && stdout.contains("check: ok"), "{stdout}");
    }
}

#[test]
fn each_kernel_takes_its_own_work_group() {
    let dir = temp("locals");
    let d = dir.to_str().unwrap();
    let args = ["emit", SEPBLUR, "--size", "H=24,W=40", "--mapping", "A=W0,B=L0,C=W0,D=L0", "-o", d];
    let out = mapsat(&[&args[..], &["--local", "sepblur_0_h:8", "--local", "4"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let launch = |entry: &str| -> serde_json::Value {
        let m = std::fs::read_to_string(dir.join(format!("{entry}.json"))).unwrap();
        serde_json::from_str::<serde_json::Value>(&m).unwrap()["launch"]["local"].clone()
    };
    // The horizontal pass's rows of 40 in groups of 8, the vertical pass's columns of 24 in 4s.
    assert_eq!(launch("sepblur_0_h")[0], 8);
    assert_eq!(launch("sepblur")[0], 4);
    let out = mapsat(&[&args[..], &["--local", "blur:8"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("kernel `blur`, which the program does not have"), "{}", text(&out.stderr));
    if opencl() {
        let out = mapsat(&[
            "run",
            SEPBLUR,
            "--size",
            "H=24,W=40",
            "--mapping",
            "A=W0,B=L0,C=W0,D=L0",
            "--check",
            "--local",
            "sepblur:6",
            "--local",
            "sepblur_0_h:5",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A kernel that runs in one work item (no parallel map) takes no work-group size: one given
/// for it is refused, naming the kernel, and one given for every kernel applies to the others
/// (it was dropped silently in both cases).
#[test]
fn a_kernel_in_one_work_item_takes_no_work_group_size() {
    let (dir, src) = program_in(
        "one-item-local",
        "p.lift",
        "size N = 16
def f(x: [f32]N) =
  let s = toGlobal(map@A(fun(a => a * 2.0), x)) in
  reduce(add, 0.0, s)",
    );
    let (f, o) = (src.to_str().unwrap(), dir.join("o"));
    let emit_with = |args: &[&str]| mapsat(&[&["emit", f, "-o", o.to_str().unwrap()][..], args].concat());
    let emit = |local: &str| emit_with(&["--mapping", "A=G0", "--local", local]);
    let out = emit("4");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("f_0_s.json: launch global [16, 1, 1], local [4, 1, 1]"),
        "{}",
        text(&out.stdout)
    );
    let out = emit("f:4");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let e = text(&out.stderr);
    assert!(e.contains("in the kernel of stage `f`") && e.contains("no parallel map, so one work item runs it"), "{e}");
    // A program of one such kernel, and a pipeline whose every kernel is one.
    let reduce = dir.join("r.lift");
    std::fs::write(&reduce, "size N = 16\ndef r(x: [f32]N) = reduce(add, 0.0, x)").unwrap();
    let out = mapsat(&["emit", reduce.to_str().unwrap(), "--local", "4", "-o", o.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("it takes no work-group size (local size [4] given)"), "{}", text(&out.stderr));
    let out = emit_with(&["--mapping", "A=S", "--local", "4"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("given for every kernel fits none"), "{}", text(&out.stderr));
    if opencl() {
        let out = mapsat(&["run", f, "--mapping", "A=G0", "--local", "f:4", "--check"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
        assert!(text(&out.stderr).contains("in the kernel of stage `f`"), "{}", text(&out.stderr));
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn tune_tunes_each_kernel() {
    if !opencl() {
        return;
    }
    let dir = temp("tune");
    let d = dir.to_str().unwrap();
    let args = ["tune", SEPBLUR, "--size", "H=32,W=32", "--trials", "6", "--random-trials", "3", "--batch", "3"];
    let out = mapsat(&[&args[..], &["--runs", "2", "-o", d]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("kernel 1 of 2: sepblur_0_h") && stdout.contains("kernel 2 of 2: sepblur"), "{stdout}");
    assert!(stdout.contains("program sepblur: 2 kernels"), "{stdout}");
    for k in ["sepblur_0_h", "sepblur"] {
        assert!(dir.join(k).join("tune.jsonl").exists() && dir.join(k).join(format!("{k}.lift")).exists());
    }
    let pipeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sepblur.pipeline.json")).unwrap()).unwrap();
    let kernels = pipeline["kernels"].as_array().unwrap();
    assert_eq!(kernels.iter().map(|k| k["kernel"].as_str().unwrap()).collect::<Vec<_>>(), ["sepblur_0_h", "sepblur"]);
    let sum: f64 = kernels.iter().map(|k| k["best_ms"].as_f64().unwrap()).sum();
    assert!((pipeline["best_ms"].as_f64().unwrap() - sum).abs() < 1e-9, "{pipeline}");
    // The kernels' median valid candidates in sequence: each as its best is compared with,
    // measured again with it (it summed their search times).
    let medians: f64 = ["sepblur_0_h", "sepblur"]
        .iter()
        .map(|k| {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join(k).join("report.json")).unwrap()).unwrap();
            r["median_confirmed"]["median_ms"].as_f64().unwrap()
        })
        .sum();
    let line = format!("the median valid candidates of the kernels, in sequence: {}", fmt_ms(medians));
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    // Each tuned kernel, run with its work group, computes its stage.
    for k in kernels {
        let local: Vec<String> = k["local"].as_array().unwrap().iter().map(|x| x.to_string()).collect();
        // The path is relative to the output folder.
        let lift = dir.join(k["lift"].as_str().unwrap());
        let mut args = vec!["run", lift.to_str().unwrap(), "--check", "--reassociate"];
        let local = local.join(",");
        if !local.is_empty() {
            args.extend(["--local", &local]);
        }
        let out = mapsat(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
    }
    // The combined mapping of the best kernels runs and computes the program.
    let mapping = stdout.lines().filter_map(|l| l.trim().strip_prefix("mapping ")).next_back().map(str::to_string);
    let mapping = mapping.filter(|m| m.contains("A=") && m.contains("C=")).expect("a combined mapping line");
    let mut args = vec!["run", SEPBLUR, "--size", "H=32,W=32", "--mapping", &mapping, "--check", "--reassociate"];
    // With each kernel's own work group, as the tune prints them.
    let groups = stdout.lines().filter_map(|l| l.trim().strip_prefix("work groups ")).next_back().unwrap_or("");
    args.extend(groups.split_whitespace());
    let out = mapsat(&args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
    // The last line printed runs the whole program as it was tuned: at its sizes, with the
    // combined mapping and every kernel's work group.
    let again = stdout
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("run the whole program again: mapsat "))
        .expect("a run command");
    assert!(again.contains(&format!("--mapping {mapping} --size H=32,W=32")) && again.contains(groups), "{again}");
    let out = mapsat(&[again.split_whitespace().collect::<Vec<_>>(), vec!["--runs", "1"]].concat());
    assert!(out.status.success() && text(&out.stdout).contains("check: ok"), "{again}: {}", text(&out.stderr));
    let out = mapsat(&["tune", SEPBLUR, "--log", "x.jsonl", "-o", d]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn space_and_explain_work_kernel_by_kernel() {
    // As one kernel, the vertical pass would read rows other work groups wrote: only the
    // sequential mapping would be valid. Cut at the boundary, each kernel has parallel ones.
    let out = mapsat(&["space", SEPBLUR, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernels = v["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2);
    assert_eq!(kernels[0]["kernel"], "sepblur_0_h");
    assert_eq!(kernels[1]["maps"], serde_json::json!(["C", "D"]));
    for k in kernels {
        assert!(k["count"].as_u64().unwrap() > 1, "{k}");
        assert!(k["samples"].as_array().unwrap().iter().any(|m| m.as_str().unwrap().contains('G')), "{k}");
    }
    let out = mapsat(&["explain", SEPBLUR, "--mapping", "A=G1,B=G0,C=G1,D=G0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with(
            "valid (2 kernels, launched in order)\nkernel sepblur_0_h (`h` is materialized in global memory: a kernel boundary):\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("\nkernel sepblur:\n"), "{stdout}");
    let out = mapsat(&["explain", SEPBLUR, "--mapping", "A=G1,B=G0,C=S,D=W0"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("in the kernel of stage `sepblur`: invalid"), "{stderr}");
    assert!(!stderr.contains("sepblur_0_h"), "{stderr}");
}

/// Issue #9: `explain` names where a kernel computes a producer (here, each work group's tile
/// into local memory).
#[test]
fn explain_names_a_producer_staged_in_local_memory() {
    let dir = temp("local");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tile.lift");
    std::fs::write(
        &file,
        "size N = 64\ndef f(xs: [f32]N) : [f32]N =
  join(map@W(fun(t => map@B(fun(x => x + 1.0), toLocal(map@C(fun(x => x * 2.0), t)))), split(16, xs)))\n",
    )
    .unwrap();
    let out = mapsat(&["explain", file.to_str().unwrap(), "--mapping", "W=W0,B=L0,C=L0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("valid\n  map C computes into local memory (per work group, read by its work items)\n"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_rewrite_stage_offers_the_blur_inlined_in_one_kernel() {
    // Inlined into the vertical pass (each output computing its 3 x 3 window), the blur is one
    // kernel with parallel mappings, which run correctly.
    let dir = temp("inline");
    let out = mapsat(&["rewrite", SEPBLUR, "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let one_kernel: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "lift"))
        .filter(|f| !std::fs::read_to_string(f).unwrap().contains("toGlobal"))
        .collect();
    assert!(!one_kernel.is_empty(), "no variant without the kernel boundary");
    let mut parallel = 0;
    for f in &one_kernel {
        let out = mapsat(&["space", f.to_str().unwrap(), "--sample", "50"]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
        let Some(mapping) = stdout.lines().map(str::trim).find(|l| l.contains("=G") && !l.contains(' ')) else {
            continue;
        };
        parallel += 1;
        if opencl() {
            let args = ["run", f.to_str().unwrap(), "--size", "H=24,W=40", "--mapping", mapping, "--check"];
            let out = mapsat(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
        }
    }
    assert!(parallel > 0, "no one-kernel variant has a parallel mapping");
    std::fs::remove_dir_all(dir).ok();
}

/// A pipeline whose first kernel has no correct candidate (its stage selects between arrays,
/// which code generation refuses): the tune fails (exit 1) and says which kernel has no best;
/// the pipeline file gives that kernel no program or work group, and the other kernel its own
/// (they were shifted by one kernel).
#[test]
fn a_kernel_without_a_best_keeps_its_place_in_the_pipeline_file() {
    if !opencl() {
        return;
    }
    let (dir, src) = program_in(
        "no-best",
        "selpipe.lift",
        "size N = 8, M = 4
def f(x: [[f32]M]N, c: [f32]N) : [[f32]M]N =
  let y = toGlobal(map@A(fun(p => select(p.1 > 0.0, p.0, map@B(fun(v => 0.0 - v), p.0))), zip(x, c))) in
  map@C(fun(r => map@D(fun(v => v * 2.0), r)), y)",
    );
    let out =
        mapsat(&["tune", src.to_str().unwrap(), "--trials", "3", "--random-trials", "1", "-o", dir.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("no correct kernel for f_0_y"), "{stdout}");
    let pipeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("f.pipeline.json")).unwrap()).unwrap();
    let kernels = pipeline["kernels"].as_array().unwrap();
    assert_eq!(kernels[0]["kernel"], "f_0_y");
    assert!(kernels[0]["lift"].is_null() && kernels[0]["local"].is_null() && kernels[0]["best_ms"].is_null());
    assert_eq!(kernels[1]["kernel"], "f");
    assert!(kernels[1]["lift"].as_str().unwrap().ends_with("f.lift"), "{pipeline}");
    assert!(pipeline["best_ms"].is_null());
    std::fs::remove_dir_all(dir).ok();
}

/// A kernel boundary whose value is an array of vectors of a tunable width: the consumer's
/// parameter has the width given (`--size vw=8`), not the default's, in `run` and in `tune`
/// (where the width is fixed, not tuned, as both kernels must agree on it).
#[test]
fn a_boundary_of_vectors_has_the_width_given() {
    let (dir, src) = program_in(
        "vector-boundary",
        "vs.lift",
        "size N = 16, vw in 2..16 = 4
def f(x: [f32]N) =
  let a = toGlobal(map@A(fun(v => v * v), asVector(vw, x))) in
  map@C(fun(p => p + 1.0), asScalar(a))",
    );
    let f = src.to_str().unwrap();
    let out = mapsat(&["space", f, "--size", "vw=8"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    if !opencl() {
        return;
    }
    for vw in ["4", "8"] {
        let out = mapsat(&["run", f, "--size", &format!("vw={vw}"), "--mapping", "A=G0,C=G0", "--check"]);
        assert_eq!(out.status.code(), Some(0), "vw={vw}: {}{}", text(&out.stdout), text(&out.stderr));
    }
    let d = dir.join("t");
    let out =
        mapsat(&["tune", f, "--size", "vw=8", "--trials", "3", "--random-trials", "1", "-o", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let consumer = std::fs::read_to_string(d.join("f").join("f.lift")).unwrap();
    assert!(consumer.contains("[f32x8]"), "{consumer}");
    std::fs::remove_dir_all(dir).ok();
}

/// A pipeline whose vector width only its last kernel uses (the outer product on weights a
/// first kernel stored transposed, as the rewrite stage makes it): the width is tuned with that
/// kernel, as in a program of one kernel (it was fixed at its default, 4 lanes, for every
/// pipeline), and not with the first, which declares it and does not use it.
#[test]
fn a_width_only_the_last_kernel_uses_is_tuned() {
    let (dir, src) = program_in(
        "last-width",
        "lw.lift",
        "size N = 48, vw in 2..16 = 4
def f(x: [f32]N) =
  let a = toGlobal(map@A(fun(v => v * 2.0), x)) in
  asScalar(map@C(fun(v => v + vectorFromScalar(vw, 1.0)), asVector(vw, a)))",
    );
    if !opencl() {
        return;
    }
    let d = dir.join("t");
    let args = ["tune", src.to_str().unwrap(), "--trials", "12", "--random-trials", "8", "--runs", "1"];
    let out = mapsat(&[&args[..], &["-o", d.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let log = std::fs::read_to_string(d.join("f").join("tune.jsonl")).unwrap();
    let widths: std::collections::BTreeSet<i64> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["tuning"]["vw"].as_i64())
        .collect();
    assert!(widths.len() > 1 && widths.iter().all(|w| 48 % w == 0), "{widths:?}\n{log}");
    // The first kernel declares the width and does not use it: not tuned there.
    let producer = std::fs::read_to_string(d.join("f_0_a").join("tune.jsonl")).unwrap();
    let tuned_there = producer
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|r| !r["tuning"]["vw"].is_null());
    assert!(!tuned_there, "{producer}");
    std::fs::remove_dir_all(dir).ok();
}

/// The values a tune's log tried of the tunable size `var`.
fn tuned_values(log: &std::path::Path, var: &str) -> std::collections::BTreeSet<i64> {
    let log = std::fs::read_to_string(log).unwrap();
    let records = log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    records.filter_map(|r| r["tuning"][var].as_i64()).collect()
}

/// The widths in a tune's log, by kernel.
fn tuned_widths(log: &std::path::Path) -> std::collections::BTreeSet<i64> {
    tuned_values(log, "vw")
}

/// A width only a first kernel uses, whose result holds no vectors (a sum of squares of each
/// row, read as vectors): tuned with that kernel (it was fixed at its default for every kernel
/// but the last). One that a boundary carries as vectors stays fixed: both kernels read it.
#[test]
fn a_width_one_kernel_alone_uses_is_tuned_with_it() {
    let dir = temp("first-width");
    std::fs::create_dir_all(&dir).unwrap();
    let programs = [
        (
            "own",
            "size M = 16, K = 64, vw in 2..16 = 4
def f(xs: [[f32]K]M) : [f32]M =
  let a = toGlobal(map@A(fun(row => reduce(add, 0.0, asScalar(map@B(fun(v => v * v), asVector(vw, row))))), xs)) in
  map@C(fun(v => v + 1.0), a)",
        ),
        (
            "carried",
            "size N = 48, vw in 2..16 = 4
def f(x: [f32]N) : [f32]N =
  let a = toGlobal(map@A(fun(v => v * vectorFromScalar(vw, 2.0)), asVector(vw, x))) in
  asScalar(map@C(fun(v => v + vectorFromScalar(vw, 1.0)), a))",
        ),
    ];
    if !opencl() {
        return;
    }
    for (name, text_) in programs {
        let src = dir.join(format!("{name}.lift"));
        std::fs::write(&src, text_).unwrap();
        let d = dir.join(name);
        let args = ["tune", src.to_str().unwrap(), "--trials", "12", "--random-trials", "8", "--runs", "1"];
        let out = mapsat(&[&args[..], &["-o", d.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
        let first = tuned_widths(&d.join("f_0_a").join("tune.jsonl"));
        match name {
            "own" => assert!(first.len() > 1, "{first:?}"),
            _ => assert!(first.is_empty() && tuned_widths(&d.join("f").join("tune.jsonl")).is_empty()),
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A tile size in a boundary's type (the first kernel's result, chunks of `t`, read by the
/// second as its input): both kernels must use one value, so it is fixed at its default and
/// given in the command that runs the whole program. The first kernel tuned it on its own (its
/// input's type does not hold it), and the run command left it out, so that the program ran at
/// another tile size than the tuned kernel's.
#[test]
fn a_tile_size_two_kernels_share_is_fixed_and_given_to_the_run() {
    let (dir, src) = program_in(
        "shared-tile",
        "pt.lift",
        "size N = 256, t in 1..64 = 4
def pt(xs: [f32]N) : [f32]N =
  let h = toGlobal(map@A(fun(c => map@B(fun(x => x * 2.0), c)), split(t, xs))) in
  join(map@C(fun(c => map@D(fun(x => x + 1.0), c)), split(t, join(h))))",
    );
    if !opencl() {
        return;
    }
    let d = dir.join("t");
    let args = ["tune", src.to_str().unwrap(), "--trials", "12", "--random-trials", "4", "--runs", "1"];
    let out = mapsat(&[&args[..], &["-o", d.to_str().unwrap()]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for kernel in ["pt_0_h", "pt"] {
        let tried = tuned_values(&d.join(kernel).join("tune.jsonl"), "t");
        assert!(tried.is_empty(), "{kernel}: {tried:?}");
    }
    let run = stdout.lines().find_map(|l| l.strip_prefix("run the whole program again: ")).expect(&stdout);
    assert!(run.contains("--size t=4"), "{run}");
    std::fs::remove_dir_all(dir).ok();
}

/// A tile size only the second kernel uses is tuned with it, and the sequence's summary, the
/// pipeline file and the command that runs the whole program give its value (the command
/// left it out, so that the program ran at the default tile size, not the tuned one; a
/// tester's finding). The command, run, passes its check.
#[test]
fn a_tile_size_one_kernel_tunes_is_given_to_the_run() {
    let (dir, src) = program_in(
        "own-tile",
        "t7.lift",
        "size N = 48, t in 1..48 = 4
def t7(x: [f32]N) : [f32]N =
  let h = toGlobal(map@A(fun(c => map@A2(fun(v => v * 2.0), c)), split(8, x))) in
  join(map@B(map@B2(fun(v => v + 1.0)), split(t, join(h))))",
    );
    if !opencl() {
        return;
    }
    let d = dir.join("t");
    let args = ["tune", src.to_str().unwrap(), "--trials", "12", "--random-trials", "2", "--runs", "1"];
    let out = mapsat(&[&args[..], &["-o", d.to_str().unwrap()]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let pipeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("t7.pipeline.json")).unwrap()).unwrap();
    let t = pipeline["kernels"][1]["tuning"]["t"].as_i64().expect("the second kernel's tuned t");
    assert!(stdout.contains(&format!("  tunable sizes t={t}\n")), "{stdout}");
    let run = stdout.lines().find_map(|l| l.strip_prefix("run the whole program again: mapsat ")).expect(&stdout);
    assert!(run.contains(&format!("--size t={t} ")), "{run}");
    let out = mapsat(&run.split_whitespace().collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{run}\n{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("check: ok"), "{}", text(&out.stdout));
    std::fs::remove_dir_all(dir).ok();
}

/// A kernel with no map, only a reduction (a norm's sum of squares as a stage of its own, as
/// the rewrite stage fuses it): its reductions run in one work item, with the empty mapping,
/// so the pipeline runs with a mapping of its other kernel's maps (it was refused: "nothing to
/// map"). So does a plain reduction given without a mapping.
#[test]
fn a_kernel_without_a_map_runs_in_one_work_item() {
    let (dir, src) = program_in(
        "no-map",
        "norm.lift",
        "size N = 13
def norm(x: [f32]N) : [f32]N =
  let s = toGlobal(reduce(fun(a, v => a + v * v), 0.0, x)) in map@B(fun(v => v / sqrt(s)), x)",
    );
    let f = src.to_str().unwrap();
    let out = mapsat(&["emit", f, "--mapping", "B=G0", "-o", dir.join("e").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    if opencl() {
        for (file, mapping) in [(f, Some("B=G0")), ("examples/sum.lift", Some("")), ("examples/sum.lift", None)] {
            let mut args = vec!["run", file, "--check"];
            args.extend(mapping.iter().flat_map(|m| ["--mapping", m]));
            let out = mapsat(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
            assert!(text(&out.stdout).contains("check: ok"), "{}", text(&out.stdout));
        }
    }
    // A mapping naming a map it does not have is still refused.
    let out = mapsat(&["run", "examples/sum.lift", "--mapping", "A=G0"]);
    assert_ne!(out.status.code(), Some(0));
    std::fs::remove_dir_all(dir).ok();
}

/// A program without a map (a plain sum): `space` and `explain` give its only mapping, the
/// empty one, as the library does (they refused the program), and a mapping naming a map is
/// refused for want of one.
#[test]
fn space_and_explain_of_a_program_without_a_map() {
    let out = mapsat(&["space", "examples/sum.lift"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("nothing to map: the kernel runs in one work item"), "{}", text(&out.stdout));
    let out = mapsat(&["space", "examples/sum.lift", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&json["count"], &json["samples"]), (&serde_json::json!(1), &serde_json::json!([""])), "{json}");
    let out = mapsat(&["explain", "examples/sum.lift", "--mapping", ""]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("nothing to map: the kernel runs in one work item"), "{}", text(&out.stdout));
    let out = mapsat(&["explain", "examples/sum.lift", "--mapping", "A=G0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the program has no map, so its only mapping is the empty one"),
        "{}",
        text(&out.stderr)
    );
    // Its maps that only rearrange (views) are named as such by explain, emit and run (they
    // were "unknown", the program having "no map"); `,` is the empty mapping.
    let (dir, src) = program_in(
        "no-map-views",
        "v.lift",
        "size H = 5, W = 7\ndef v(img: [[f32]W]H) : f32 = reduce(add, 0.0, join(join(join(slideND2(3, 1, 3, 1, img)))))\n",
    );
    let (f, o) = (src.to_str().unwrap(), dir.join("o"));
    for cmd in [vec!["explain", f], vec!["emit", f, "-o", o.to_str().unwrap()], vec!["run", f]] {
        let out = mapsat(&[&cmd[..], &["--mapping", "m1=S"]].concat());
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", text(&out.stderr));
        let says = "map `m1` only rearranges data (a view): it has no loop and takes no mapping";
        assert!(text(&out.stderr).contains(says), "{cmd:?}: {}", text(&out.stderr));
    }
    let out = mapsat(&["run", f, "--mapping", ",", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // An unknown label is told with the maps, not the views: none in a program of kernels
    // without a map, A and B beside a view (the views were listed as maps, in two orders).
    let none = "size N = 16\ndef m(xs: [[f32]N]N) : f32 =\n  let y = toGlobal(reduce(add, 0.0, join(xs))) in\n  reduce(add, y, join(join(join(slideND2(3, 1, 3, 1, xs)))))\n";
    let beside = "size N = 8\ndef b(xs: [[f32]N]N) : f32 =\n  let y = toGlobal(map@A(fun(r => map@B(fun(v => v + 1.0), r)), xs)) in\n  reduce(add, 0.0, join(join(join(slideND2(3, 1, 3, 1, y)))))\n";
    for (file, program, mapping, says) in [
        (
            "m.lift",
            none,
            "A=S",
            "unknown map `A` in the mapping: the program has no map, so its only mapping is the empty one",
        ),
        ("b.lift", beside, "A=G1,B=G0,Z=S", "unknown map `Z` in the mapping (the maps are: A, B)"),
    ] {
        let (_, src) = program_in("no-map-views", file, program);
        for cmd in ["explain", "run", "predict"] {
            let out = mapsat(&[cmd, src.to_str().unwrap(), "--mapping", mapping]);
            assert_eq!(out.status.code(), Some(2), "{cmd} {file}: {}", text(&out.stderr));
            assert!(text(&out.stderr).contains(says), "{cmd} {file}: {}", text(&out.stderr));
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A pipeline whose last kernel only reduces: `space` and `explain` say it has nothing to map
/// (one work item) and go on with the other kernel (they refused the whole program), and
/// `tune` says so, then tunes that kernel as its one mapping, the empty one, and the other as
/// usual (it refused the whole program); the command it prints runs the whole program and
/// passes its check.
#[test]
fn space_explain_and_tune_of_a_pipeline_with_a_kernel_without_a_map() {
    let (dir, src) = program_in(
        "no-map-space",
        "p.lift",
        "size N = 16
def f(x: [f32]N) =
  let s = toGlobal(map@A(fun(a => a * 2.0), x)) in
  reduce(add, 0.0, s)",
    );
    let f = src.to_str().unwrap();
    let out = mapsat(&["space", f]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("nothing to map: the kernel runs in one work item"), "{}", text(&out.stdout));
    // Its JSON has every key a kernel with maps has (the canonical count and the layout maps
    // were missing).
    let out = mapsat(&["space", f, "--json", "--canonical"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let [with, without] = [&json["kernels"][0], &json["kernels"][1]];
    assert_eq!(without["nothing_to_map"], true, "{json}");
    assert_eq!((&without["count"], &without["count_canonical"]), (&1.into(), &1.into()), "{json}");
    assert_eq!(without["samples"], serde_json::json!([""]), "{json}");
    assert_eq!(with["nothing_to_map"], false, "{json}");
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(with), keys(without), "{json}");
    let out = mapsat(&["explain", f, "--mapping", "A=G0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("kernel f: nothing to map (one work item)"), "{}", text(&out.stdout));
    let t = dir.join("t");
    let out = mapsat(&["tune", f, "--trials", "3", "--random-trials", "1", "--runs", "1", "-o", t.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let note = "note: kernel `f` has nothing to map, only reductions or rearrangements of data: one work item runs it";
    assert!(stdout.contains(note), "{stdout}");
    assert!(stdout.contains("`mapsat tune --variants K` also tunes rewrite variants"), "{stdout}");
    let pipeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("f.pipeline.json")).unwrap()).unwrap();
    assert_eq!(pipeline["kernels"][1]["kernel"], "f", "{pipeline}");
    assert_eq!(pipeline["kernels"][1]["mapping"], "", "{pipeline}");
    assert!(pipeline["best_ms"].as_f64().is_some(), "{pipeline}");
    let run = stdout.lines().find_map(|l| l.strip_prefix("run the whole program again: mapsat ")).expect(&stdout);
    let out = mapsat(&run.split_whitespace().collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{run}\n{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("check: ok"), "{}", text(&out.stdout));
    // No kernel with a map, one with a tunable size: every kernel is named, and the command
    // runs without a mapping (it printed `--mapping` without a value).
    let program = "size N = 96, t in 1..96 = 4
def q(x: [f32]N) : f32 =
  let s = toGlobal(reduce(fun(a, c => a + reduce(add, 0.0, c)), 0.0, split(t, x))) in
  let m = toGlobal(reduce(fun(a, v => max(a, v)), -1e30, x)) in
  s / m";
    let (_, all) = program_in("no-map-space", "q.lift", program);
    let t = dir.join("tq");
    let (all, t) = (all.to_str().unwrap(), t.to_str().unwrap());
    let out = mapsat(&["tune", all, "--trials", "3", "--random-trials", "0", "--runs", "1", "-o", t]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("note: kernels `q_0_s`, `q_1_m`, `q` have nothing to map"), "{stdout}");
    let run = stdout.lines().find_map(|l| l.strip_prefix("run the whole program again: mapsat ")).expect(&stdout);
    assert!(!run.contains("--mapping") && run.contains("--size "), "{run}");
    let out = mapsat(&run.split_whitespace().collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{run}\n{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("check: ok"), "{}", text(&out.stdout));
    // Nor a tunable size: nothing to choose, as for a program of one kernel.
    let (_, none) = program_in("no-map-space", "r.lift", &program.replace(", t in 1..96 = 4", ", t = 4"));
    let out = mapsat(&["tune", none.to_str().unwrap(), "--trials", "2", "-o", dir.join("tr").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let says = "nothing to tune: no kernel has a map or a tunable size; each runs in one work item";
    assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    std::fs::remove_dir_all(dir).ok();
}

/// A kernel of several whose buffer the device cannot hold is refused before anything is
/// allocated, and the refusal names the kernel (pocl with its memory limited to 1 GB, so that
/// the test does not depend on this machine's memory).
#[test]
fn a_kernel_of_several_too_large_for_the_device_is_named() {
    let devices = mapsat(&["devices"]);
    if !opencl() || !text(&devices.stdout).contains("Portable Computing Language") {
        return;
    }
    let (dir, src) = program_in(
        "too-large",
        "big.lift",
        "size N = 4, P = 300000000
def big(x: [f32]N) : f32 =
  let y = toGlobal(map@A(fun(v => v * 2.0), pad(0, P, 0.0, x))) in
  reduce(add, 0.0, y)",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mapsat"))
        .args(["run", src.to_str().unwrap(), "--mapping", "A=G0"])
        .env("POCL_MEMORY_LIMIT", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = text(&out.stderr);
    assert!(e.contains("kernel `big_0_y`: buffer `out` of 300000004 elements needs 1200000016 B"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}

/// A kernel whose one candidate is over a device limit after lowering (8 MB of private memory
/// in its one work item, under pocl-cpu's 4 MiB): the tune says why, on screen and in the
/// report (it gave only the count, "4096 over a device limit"), and the sequence has no best.
#[test]
fn a_kernel_over_a_device_limit_is_told_with_the_reason() {
    if !opencl() {
        return;
    }
    let (dir, src) = program_in(
        "over-limit",
        "lastrow.lift",
        "size H = 5, W = 7
def lastrow(img: [[f32]W]H) : [f32]W =
  let l = toGlobal(reduce(fun(acc, row => row), at(0, img), img)) in
  map@A(fun(v => v + 1.0), l)",
    );
    let t = dir.join("t");
    let (f, t) = (src.to_str().unwrap(), t.to_str().unwrap());
    let args = ["tune", f, "--target", "pocl-cpu", "--size", "W=2000000,H=2", "--trials", "2", "--random-trials", "0"];
    let out = mapsat(&[&args[..], &["--runs", "1", "-o", t]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let why = "over a device limit after lowering, e.g. the empty mapping: the launch does not fit the target: \
               a work group of 1 work items (local size [1, 1, 1]) holds 8000000 bytes of private memory";
    assert!(stdout.contains(why), "{stdout}");
    assert!(stdout.contains("no correct kernel for lastrow_0_l: the sequence has no best"), "{stdout}");
    let report = std::fs::read_to_string(dir.join("t/lastrow_0_l/report.md")).unwrap();
    assert!(report.contains("- the empty mapping: the launch does not fit the target"), "{report}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_kernel_boundary_nothing_reads_is_warned_about_and_not_launched() {
    // `d` is computed and stored, and nothing reads it: dead code, as a compiler takes it.
    let (dir, src) = program_in(
        "dead",
        "dead.lift",
        "size N = 37
def f(xs: [f32]N) : [f32]N =
  let a = toGlobal(map@A(fun(x => x * 2.0), xs)) in
  let d = toGlobal(map@D(fun(x => x * 3.0), a)) in
  map@B(fun(x => x + 1.0), a)",
    );
    let file = src.to_str().unwrap();
    let out = mapsat(&["check", file]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("maps: A B\n"), "{stdout}");
    assert!(
        stderr.contains("warning: `d` is not used by the program's result: its kernel is not launched")
            && stderr.contains("dead.lift:4:3")
    );
    // `fmt` prints the program as written.
    assert!(text(&mapsat(&["fmt", file]).stdout).contains("let d = toGlobal"));
    let o = dir.join("out");
    let out = mapsat(&["emit", file, "--mapping", "A=G0,B=G0", "-o", o.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pipeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("f.pipeline.json")).unwrap()).unwrap();
    let entries: Vec<&str> =
        pipeline["kernels"].as_array().unwrap().iter().map(|k| k["entry"].as_str().unwrap()).collect();
    assert_eq!(entries, ["f_0_a", "f"]);
    // Its map takes no code.
    let out = mapsat(&["explain", file, "--mapping", "A=G0,B=G0,D=G0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown map `D` in the mapping (the maps are: A, B)"), "{}", text(&out.stderr));
    if opencl() {
        let out = mapsat(&["run", file, "--mapping", "A=G0,B=S", "--check"]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
        assert!(stdout.contains("(2 kernels)") && stdout.contains("check: ok"), "{stdout}");
    }
    std::fs::remove_dir_all(dir).ok();
}

//! End-to-end tests of the `mapsat` binary that are not file-shaped. The programs that must be
//! rejected, with their messages and locations, are the file tests of
//! `tests/filetests/errors/` (run by `tests/filetests.rs`).

mod common;

use common::{mapsat, opencl, root};
use std::path::PathBuf;
use std::process::{Command, Output};

#[test]
fn rendered_diagnostic_shape() {
    let out = mapsat(&["check", "tests/filetests/errors/zip_lengths.lift"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = "\
error: zip of arrays of different lengths: argument 1 has length N, argument 2 has length M
  ┌─ tests/filetests/errors/zip_lengths.lift:9:56
  │
9 │ def f(a: [f32]N, b: [f32]M) = map(fun(p => p.0 + p.1), zip(a, b))
  │                                                        ^^^^^^^^^
";
    assert!(stderr.starts_with(expected), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(mapsat(&["check"]).status.code(), Some(2));
    assert_eq!(mapsat(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(mapsat(&["eval", "examples/conv.lift", "--size", "inH"]).status.code(), Some(2));
    assert_eq!(mapsat(&["eval", "examples/conv.lift", "--input", "nosuch=a.npy"]).status.code(), Some(2));
    let twice = mapsat(&["eval", "examples/dot.lift", "--input", "x=a.npy", "--input", "x=b.npy"]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("--input gives parameter `x` twice"));
    assert_eq!(mapsat(&["--help"]).status.code(), Some(0));
}

#[test]
fn a_size_given_twice_or_too_large_is_refused_saying_so() {
    let out = mapsat(&["eval", "examples/dot.lift", "--random", "1", "--size", "N=4,N=5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--size N is given twice (4 and 5)"));
    let out = mapsat(&["eval", "examples/dot.lift", "--random", "1", "--size", "N=99999999999999999999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is too large"));
    // 2^63 - 1, what an overflowed size saturates to: too large, not a type "mismatch" between
    // two equal types, and a usage error as 2^63 is (it exited with 1, a tester's finding).
    let out = mapsat(&["check", "examples/dot.lift", "--size", "N=9223372036854775807"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`9223372036854775807` is too large (sizes are at most 2^63 - 2)"), "{stderr}");
}

/// A program refused at the sizes given says which tunable sizes took their defaults: a
/// rewrite variant's tile `tA = 4` does not tile N = 6, and the message named only the step 4
/// (a tester). A size the user gave, or one in a parameter's type, is not named.
#[test]
fn an_error_at_the_sizes_given_names_the_defaulted_tile_sizes() {
    let file = temp_program(
        "tile-default",
        "size N = 12, tA in 1..12 = 4\ndef f(xs: [f32]N) : [f32]N = join(map@A(map@B(fun(x => x * 2.0)), split(tA, xs)))\n",
    );
    let f = file.to_str().unwrap();
    let dir = file.with_extension("out");
    let d = dir.to_str().unwrap();
    let commands: [&[&str]; 5] =
        [&["check"], &["eval", "--random", "1"], &["emit", "-o", d], &["space"], &["rewrite", "-o", d]];
    for args in commands {
        let cmd = args[0];
        let out = mapsat(&[args, &[f, "--size", "N=6"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert!(stderr.contains("note: at the default of the tunable size(s) tA = 4"), "{cmd}: {stderr}");
    }
    let out = mapsat(&["check", f, "--size", "N=6,tA=4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("note: at the default"), "{stderr}");
    // A defaulted size the erring expression does not name is not blamed: `tA = 5`, given,
    // does not tile 21; `vw` took its default (a tester).
    let file = temp_program(
        "tile-given",
        "size M = 8, tA in 1..8 = 2, vw in 2..8 = 4\ndef f(a: [f32]M) : [f32]M = \
         join(map@A(fun(t => asScalar(map@B(fun(v => v * vectorFromScalar(vw, 2.0)), asVector(vw, t)))), split(tA, a)))\n",
    );
    let f = file.to_str().unwrap();
    let out = mapsat(&["check", f, "--size", "M=21,tA=5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("split factor 5 does not divide") && !stderr.contains("note:"), "{stderr}");
    let out = mapsat(&["check", f, "--size", "M=20,tA=10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("note: at the default of the tunable size(s) vw = 4"), "{stderr}");
}

/// `run` takes the device profile as `--target` too, the name `space`, `explain` and `tune`
/// give it (`run --target pocl-cpu` was a usage error suggesting `-- --target`).
#[test]
fn run_takes_the_profile_as_target_too() {
    let args = ["run", "examples/listing1.lift", "--mapping", "A=G0,B=S,C=S,D=S,E=S", "--runs", "1"];
    let out = mapsat(&[&args[..], &["--target", "pocl-cpu"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("unexpected argument"), "{err}");
    let out = mapsat(&[&args[..], &["--target", "no-such-profile"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_byte_order_mark_before_the_program_is_ignored() {
    let text = std::fs::read_to_string("examples/dot.lift").unwrap();
    let file = temp_program("bom", &format!("\u{feff}{text}"));
    let out = mapsat(&["check", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn missing_file_is_rejected() {
    let out = mapsat(&["check", "no/such/file.lift"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such/file.lift"));
}

/// Empty arrays and zero sizes: no kernel is emitted or launched (`emit` wrote one at a size
/// of 0 that `eval` refused; `run` failed with a bare CL_INVALID_BUFFER_SIZE).
#[test]
fn zero_sizes_and_empty_arrays_make_no_kernel() {
    let dir = std::env::temp_dir().join(format!("mapsat-zero-{}", std::process::id()));
    let out = mapsat(&[
        "emit",
        "tests/filetests/errors/size_zero_in_range.lift",
        "--mapping",
        "A=G0",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("need every size positive"));
    assert!(!dir.exists());
    if opencl() {
        let out = mapsat(&["run", "tests/filetests/errors/empty_array_run.lift", "--device", "opencl:0:0"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("input `xs` has no elements"));
    }
}

/// A kernel that runs far too long is given up after `--timeout` with an error: `run` waited
/// for 2 * 10^12 iterations (a tester's finding).
#[test]
fn a_run_past_its_timeout_is_an_error() {
    if !opencl() {
        return;
    }
    let file = temp_program(
        "hang.lift",
        "def f(xs: [f32]10) = reduce(add, 0.0, pad(1000000000000, 1000000000000, 0.0, xs))\n",
    );
    let out = mapsat(&["run", file.to_str().unwrap(), "--runs", "1", "--timeout", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not finish within 2 s (--timeout)"));
}

/// A file that is no program text: endless (`/dev/zero` was read until memory ran out, a
/// tester's finding) or not UTF-8.
#[test]
fn an_endless_or_binary_file_is_rejected() {
    // A device that never ends is not read: it is not a regular file.
    if std::path::Path::new("/dev/zero").exists() {
        let out = mapsat(&["check", "/dev/zero"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    }
    let large = std::env::temp_dir().join(format!("mapsat-large-{}.lift", std::process::id()));
    std::fs::write(&large, vec![b' '; (16 << 20) + 1]).unwrap();
    let out = mapsat(&["check", large.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is larger than 16 MiB"));
    let _ = std::fs::remove_file(large);
    let path = std::env::temp_dir().join(format!("mapsat-binary-{}.lift", std::process::id()));
    std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    let out = mapsat(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8 text"));
    let _ = std::fs::remove_file(path);
}

/// A program generated on one line (400 KB) with an error in the middle: the error says where
/// and shows the text around it, not the whole line.
#[test]
fn an_error_on_a_very_long_line_is_shown_in_an_excerpt() {
    let body = format!("{}z", "v + ".repeat(1000));
    let text = format!("size N = 4\ndef f(x: [f32]N) : [f32]N = {}map(fun(v => {body}), x)", " ".repeat(400_000));
    let path = std::env::temp_dir().join(format!("mapsat-long-line-{}.lift", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let out = mapsat(&["check", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let col = text.rfind('z').unwrap() - text.find('\n').unwrap();
    assert!(
        stderr.contains("unknown name `z`") && stderr.contains(&format!(":2:{col} (the line is too long")),
        "{stderr}"
    );
    assert!(stderr.contains("v + v + z), x)") && stderr.len() < 2_000, "{} bytes", stderr.len());
    let _ = std::fs::remove_file(path);
}

#[test]
fn check_prints_type_and_labels() {
    let out = mapsat(&["check", "examples/listing3.lift", "--size", "n=64,s0=16,s1=4"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "f(X: [f32]n, y: f32, z: f32) : [f32]n");
    assert_eq!(lines[1], "f(X: [f32]64, y: f32, z: f32) : [f32]64");
    assert_eq!(lines[2], "maps: A B C D");
}

#[test]
fn fmt_is_a_fixed_point() {
    let dir = std::env::temp_dir().join(format!("mapsat-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for entry in std::fs::read_dir(root().join("examples")).expect("examples") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "lift") {
            continue;
        }
        let once = mapsat(&["fmt", path.to_str().expect("utf-8")]);
        assert_eq!(once.status.code(), Some(0), "{}", String::from_utf8_lossy(&once.stderr));
        let tmp = dir.join(path.file_name().expect("name"));
        std::fs::write(&tmp, &once.stdout).expect("write");
        let twice = mapsat(&["fmt", tmp.to_str().expect("utf-8")]);
        assert_eq!(once.stdout, twice.stdout, "{}", path.display());
    }
}

#[test]
fn closed_stdout_is_not_a_panic() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mapsat"))
        .args(["fmt", "examples/conv.lift"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take()); // like `mapsat fmt ... | head -0`
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

fn mapsat_env(args: &[&str], key: &str, value: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mapsat"))
        .args(args)
        .env(key, value)
        .current_dir(root())
        .output()
        .expect("run mapsat")
}

/// The interpreter's memory budget is checked before anything is allocated: `eval` and `run`
/// at 2^31 scalars exit 1 with a sentence (they once aborted with exit 134), which says it is
/// host memory (`run`'s named the interpreter, which a run without `--check` does not use).
#[test]
fn inputs_beyond_the_memory_budget_are_refused() {
    let file = "tests/filetests/errors/eval_too_large.lift";
    let budget = "4294967296"; // 4 GiB: 2^31 f32 inputs and as many results need 16 GiB
    for args in
        [vec!["eval", file, "--random", "1", "--size", "N=2147483648"], vec!["run", file, "--size", "N=2147483648"]]
    {
        let out = mapsat_env(&args, "MAPSAT_INTERP_MEMORY", budget);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "the inputs and the result need 17179869184 bytes of host memory, more than the 4294967296 bytes mapsat may use"
            ),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
    }
    // Within the budget it runs.
    let out = mapsat_env(&["eval", file, "--random", "1"], "MAPSAT_INTERP_MEMORY", "128");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = mapsat_env(&["eval", file, "--random", "1"], "MAPSAT_INTERP_MEMORY", "127");
    assert_eq!(out.status.code(), Some(1));
    // A budget that is not a number of bytes is refused, not ignored (a tester's `abc`).
    for bad in ["abc", "-5", "0", "100000000000000000000000"] {
        let out = mapsat_env(&["eval", file, "--random", "1"], "MAPSAT_INTERP_MEMORY", bad);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad}: {stderr}");
        assert!(
            stderr.contains(&format!("MAPSAT_INTERP_MEMORY must be a positive number of bytes, got `{bad}`")),
            "{stderr}"
        );
    }
}

/// Host memory that cannot be had beyond an address-space limit (`ulimit -v`, which the budget
/// does not see) is an error, not an abort (exit 134: `vec!` of the kernel's output, of random
/// inputs). The budget is set high so that it is not what refuses.
#[test]
fn host_memory_beyond_an_address_space_limit_is_an_error() {
    if !common::opencl() {
        return;
    }
    let file = "tests/filetests/errors/eval_too_large.lift";
    // Ten inputs, 4 GB of output.
    let padded =
        temp_program("big-output", "def big(x: [f32]10) = map@A(fun(v => v + 1.0), pad(0, 1000000000, 0.0, x))\n");
    let padded = padded.to_str().unwrap();
    let script = "ulimit -v 3000000 && exec \"$0\" \"$@\"";
    for args in [
        &["run", file, "--size", "N=1000000000", "--runs", "1"][..],
        &["eval", file, "--random", "1", "--size", "N=1000000000"],
        &["run", padded, "--mapping", "A=G0", "--runs", "1"],
    ] {
        let out = Command::new("sh")
            .args([&["-c", script, env!("CARGO_BIN_EXE_mapsat")][..], args].concat())
            .env("MAPSAT_INTERP_MEMORY", "100000000000")
            .current_dir(root())
            .output()
            .expect("run mapsat");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot allocate") && stderr.contains("bytes"), "{args:?}: {stderr}");
    }
}

/// `emit --profile` checks the local size against the profile's limits, given or chosen.
#[test]
fn emit_checks_the_profiles_work_group_limits() {
    let dir = std::env::temp_dir().join(format!("mapsat-limits-{}", std::process::id()));
    let out_dir = dir.to_str().expect("utf-8 path");
    let file = "tests/filetests/kernels/wide_index.lift";
    let args = ["emit", file, "--size", "H=100,W=64", "--local", "1,512", "-o", out_dir];
    assert_eq!(mapsat(&args).status.code(), Some(0), "no profile: not checked here");
    let out = mapsat(&[&args[..], &["--profile", "mali-g72-mp12"]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("local size [1, 512] has more than 384 work items"), "{stderr}");
    let out = mapsat(&["emit", file, "--size", "H=100,W=64", "--local", "1,128", "--profile", "h100", "-o", out_dir]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // `run` under the profile refuses the same (it ran the kernel under the device's limits),
    // for a program of several kernels too, naming the kernel.
    if common::opencl() {
        let run = ["run", file, "--size", "H=100,W=64", "--local", "1,512", "--runs", "1", "--target", "mali-g72-mp12"];
        let out = mapsat(&run);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("local size [1, 512] has more than 384 work items"), "{stderr}");
        let sepblur = ["run", "examples/sepblur.lift", "--mapping", "A=G1,B=G0,C=G1,D=G0", "--runs", "1"];
        let out = mapsat(&[&sepblur[..], &["--local", "sepblur:1,512", "--target", "mali-g72-mp12"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("in the kernel of stage `sepblur`") && stderr.contains("384 work items"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run` with a work group beyond what the device runs the kernel with is refused with the
/// limit, not with the runtime's `CL_INVALID_WORK_GROUP_SIZE`.
#[test]
fn run_refuses_a_work_group_beyond_the_devices_limit() {
    if !common::opencl() {
        return;
    }
    let file = temp_program("wide-group", "size N = 8192\ndef f(x: [f32]N) : [f32]N = map@A(fun(v => v + 1.0), x)\n");
    let out = mapsat(&["run", file.to_str().unwrap(), "--mapping", "A=G0", "--local", "8192", "--runs", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the work group [8192] has 8192 work items; the device runs this kernel with at most"),
        "{stderr}"
    );
    assert!(!stderr.contains("CL_INVALID"), "{stderr}");
}

/// A work group whose private memory would overflow pocl's worker stack (it crashed the process
/// with SIGSEGV) is refused with the figures: `emit --profile pocl-cpu`, and `run` on a CPU
/// device without a profile. The same kernel with a smaller work group runs.
#[test]
fn a_work_group_beyond_the_cpus_private_memory_is_refused_not_run() {
    let dir = std::env::temp_dir().join(format!("mapsat-private-{}", std::process::id()));
    let out_dir = dir.to_str().expect("utf-8 path");
    let common = [
        "examples/conv_hwio.lift",
        "--size",
        "inH=56,inW=56,inChs=64,outChs=64,tH=7,tW=7",
        "--mapping",
        "TY=G1,TX=G0,O=S,Z=S,A=S",
    ];
    let emit = |local: &str| {
        mapsat(&[&["emit"][..], &common, &["--local", local, "--profile", "pocl-cpu", "-o", out_dir]].concat())
    };
    let out = emit("128,16");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("holds 12845056 bytes of private memory (6272 per work item)"), "{stderr}");
    assert_eq!(emit("16,16").status.code(), Some(0));
    if common::opencl() {
        let out = mapsat(&[&["run"][..], &common, &["--local", "128,16", "--runs", "1"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("private_group_bytes"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `emit --profile` refuses a global size beyond the range of a 32-bit device's `size_t`
/// (the profile's `address_bits`), naming the dimension and the limit; 64-bit devices take it.
#[test]
fn emit_checks_the_profiles_address_bits() {
    let dir = std::env::temp_dir().join(format!("mapsat-address-bits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let pocl = std::fs::read_to_string("ir/profiles/pocl-cpu.toml").expect("pocl-cpu profile");
    let narrow = dir.join("narrow.toml");
    std::fs::write(&narrow, pocl.replace("address_bits = 64", "address_bits = 32")).expect("write profile");
    let out_dir = dir.join("out");
    let (out_dir, narrow) = (out_dir.to_str().expect("utf-8 path"), narrow.to_str().expect("utf-8 path"));
    let file = "tests/filetests/kernels/wide_pad.lift";
    let args = ["emit", file, "--size", "N=8589934592", "-o", out_dir];
    let out = mapsat(&[&args[..], &["--profile", narrow]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "global size 8589934656 in dimension 0, a device with 32-bit addresses allows at most 4294967295"
        ),
        "{stderr}"
    );
    let out = mapsat(&[&args[..], &["--profile", "pocl-cpu"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = mapsat(&["emit", file, "--size", "N=4294967000", "--profile", narrow, "-o", out_dir]);
    assert_eq!(out.status.code(), Some(0), "below 2^32: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `text` to a fresh file in the temporary directory and returns its path.
fn temp_program(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mapsat-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write program");
    path
}

/// Flat sums and `let` chains are chains, not nesting: a 2,000-term sum and a 2,000-step chain
/// go through every command that walks the tree (no stack overflow), one term more is refused
/// with a sentence, and real nesting keeps its limit of 200.
#[test]
fn long_chains_are_not_nesting() {
    let sum = |n: usize| vec!["x"; n].join(" + ");
    let flat = format!("size N = 64\ndef f(xs: [f32]N) = mapGlb@A(0, fun(x => {}), xs)\n", sum(2001));
    let lets: String = (0..1999)
        .map(|i| format!("let a{i} = {} + 1.0 in\n", if i == 0 { "x".into() } else { format!("a{}", i - 1) }))
        .collect();
    let chain = format!("size N = 64\ndef f(xs: [f32]N) = mapGlb@A(0, fun(x =>\n{lets}a1998), xs)\n");
    let out_dir = std::env::temp_dir().join(format!("mapsat-deep-out-{}", std::process::id()));
    for (name, text) in [("flat.lift", flat), ("chain.lift", chain)] {
        let path = temp_program(name, &text);
        let file = path.to_str().expect("utf-8 path");
        for args in [
            vec!["check", file],
            vec!["fmt", file],
            vec!["eval", file, "--random", "1"],
            vec!["explain", file, "--mapping", "A=G0"],
            vec!["emit", file, "-o", out_dir.to_str().expect("utf-8 path")],
        ] {
            let out = mapsat(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let too_long = temp_program("too_long.lift", &format!("def f(x: f32) = {}\n", sum(2002)));
    let out = mapsat(&["check", too_long.to_str().expect("utf-8 path")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("a chain of more than 2000 links"), "{stderr}");
    let nested = format!("def f(x: f32) = {}x{}\n", "(".repeat(201), ")".repeat(201));
    let out = mapsat(&["check", temp_program("nested.lift", &nested).to_str().expect("utf-8 path")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nesting deeper than 200 levels"));
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// `run --runs 0` is refused (it once ran once, silently).
#[test]
fn zero_runs_are_refused() {
    let out = mapsat(&["run", "tests/filetests/kernels/scal.lift", "--runs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--runs must be at least 1"));
}

/// An intermediate beyond the interpreter's budget is refused before it is allocated, at the
/// map that builds it: small inputs and a scalar result, a 256 MiB outer product between them.
#[test]
fn intermediates_beyond_the_memory_budget_are_refused() {
    let src = "size N = 8192\ndef f(a: [f32]N, b: [f32]N) =\n  reduce(add, 0.0, join(map(fun(x => map(fun(y => x * y), b)), a)))\n";
    let file = temp_program("outer.lift", src);
    let args = ["eval", file.to_str().expect("utf-8 path"), "--random", "1"];
    let out = mapsat_env(&args, "MAPSAT_INTERP_MEMORY", "100000000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("an intermediate array of 268435456 bytes exceeds the 100000000 bytes the interpreter may use"),
        "{stderr}"
    );
    assert!(stderr.contains("outer.lift:3:25"), "points at the map: {stderr}");
    let out = mapsat_env(&args, "MAPSAT_INTERP_MEMORY", "1000000000");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `run` refuses an input of another element type or shape before the kernel runs, with or
/// without `--check` (without, only the number of values was compared, and an `i32` file was
/// read as `f32` bits).
#[test]
fn run_refuses_an_input_of_another_type_or_shape() {
    let dir = std::env::temp_dir().join(format!("mapsat-input-kind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let program = temp_program("scale_input.lift", "size N = 6\ndef scale(x: [f32]N) = map@A(fun(v => v * 2.0), x)");
    let wrong = [
        ("i32.npy", mapsat_ir::interp::Tensor::i32(vec![6], vec![1; 6]), "expects shape [6] (f32), got [6] (i32)"),
        ("f32_6x1.npy", mapsat_ir::interp::Tensor::f32(vec![6, 1], vec![1.0; 6]), "got [6, 1] (f32)"),
    ];
    for (name, t, message) in wrong {
        let path = dir.join(name);
        mapsat_ir::interp::write_npy(&path, &t).expect("write npy");
        let input = format!("x={}", path.display());
        for check in [false, true] {
            let mut args =
                vec!["run", program.to_str().unwrap(), "--mapping", "A=G0", "--input", &input, "--runs", "1"];
            args.extend(check.then_some("--check"));
            let out = mapsat(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(stderr.contains(message), "{stderr}");
            assert!(out.stdout.is_empty(), "nothing was timed: {}", String::from_utf8_lossy(&out.stdout));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// No command writes its output over an input: `eval -o` over the program or an `--input`
/// file, `rewrite -o DIR` over a program in DIR (variant 0 in canonical form replaced it); and
/// `-o` naming a file where a folder is expected says so.
#[test]
fn outputs_never_overwrite_inputs() {
    let dir = common::scratch("cli", "overwrite");
    let program = "// my notes\nsize N = 8\ndef f(xs: [f32]N) = map(fun(x => x * 2.0), xs)\n";
    let src = dir.join("variant_00.lift");
    std::fs::write(&src, program).unwrap();
    let s = src.to_str().unwrap();
    let npy = dir.join("xs.npy");
    let out = mapsat(&["eval", s, "--random", "1", "-o", npy.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let npy_bytes = std::fs::read(&npy).unwrap();
    let input = format!("xs={}", npy.display());
    for target in [s, npy.to_str().unwrap()] {
        let out = mapsat(&["eval", s, "--input", &input, "-o", target]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("would overwrite the input"), "{stderr}");
    }
    // `emit` over its program: a kernel's source or manifest, a pipeline's sequence.
    let kernel = "size N = 8\ndef id(xs: [f32]N) = map@A(fun(x => x * 2.0), xs)\n";
    let pipeline = "size N = 8\ndef p(xs: [f32]N) =\n  let h = toGlobal(map@A(fun(x => x * 2.0), xs)) in\n  map@B(fun(x => x + 1.0), h)\n";
    for (name, text, mapping) in [
        ("id.cl", kernel, "A=G0"),
        ("id.json", kernel, "A=G0"),
        ("p.pipeline.json", pipeline, "A=G0,B=G0"),
        ("p_0_h.cl", pipeline, "A=G0,B=G0"),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let out = mapsat(&["emit", f.to_str().unwrap(), "--mapping", mapping, "-o", dir.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("would overwrite the input"), "{name}: {stderr}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), text, "{name}");
    }
    // A hard link to an input is that input.
    let link = dir.join("link.npy");
    std::fs::hard_link(&npy, &link).unwrap();
    let out = mapsat(&["eval", s, "--input", &input, "-o", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let out = mapsat(&["rewrite", s, "--variants", "2", "-o", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("would overwrite the input"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&src).unwrap(), program);
    assert_eq!(std::fs::read(&npy).unwrap(), npy_bytes);
    let out = mapsat(&["rewrite", s, "--variants", "2", "-o", s]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is a file, not a folder"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `run` or `emit` of a program of high-level maps without `--mapping` says how to map it.
#[test]
fn an_unmapped_program_is_told_how_to_get_a_mapping() {
    for cmd in [&["run", "examples/matmul.lift"][..], &["emit", "examples/matmul.lift", "-o", "/nonexistent"]] {
        let out = mapsat(cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("`map@A` is not mapped"), "{stderr}");
        assert!(stderr.contains("is mapped with `--mapping"), "{stderr}");
        assert!(stderr.contains("`mapsat tune examples/matmul.lift`"), "{stderr}");
    }
}

/// `emit --target cuda --mapping` without `--profile` maps under CUDA's limits: the space's
/// work group has at most 64 threads in z (it suggested all 100, and CUDA refused the launch);
/// 50, which runs the 100 iterations in two rounds as 64 would, with no thread idle.
#[test]
fn a_cuda_emit_of_a_mapping_gets_a_block_cuda_launches() {
    let dir = common::scratch("cli", "cuda-z");
    let f = dir.join("m6.lift");
    std::fs::write(
        &f,
        "size H = 8, W = 100, C = 4\ndef m6(x: [[[f32]C]W]H) =\n  map@A(fun(row => map@B(fun(v => reduce(add, 0.0, map@D(fun(a => a * a), v))), row)), x)\n",
    )
    .unwrap();
    let out = mapsat(&[
        "emit",
        f.to_str().unwrap(),
        "--target",
        "cuda",
        "--mapping",
        "A=W2,B=L2,D=S",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("local [1, 1, 50]"), "{stdout}");
}

/// `run -o` writes the device's result: for one kernel and for the last of several, what
/// `eval -o` writes from the same random inputs (the same seed), here exactly (no sum is
/// reassociated). It is not written over the program or an input.
#[test]
fn run_writes_the_devices_result() {
    if !opencl() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mapsat-run-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, mapping) in [("examples/sepblur.lift", "A=G1,B=G0,C=G1,D=G0"), ("examples/matmul.lift", "A=G0,B=G1,C=S")]
    {
        let (got, want) = (dir.join("got.npy"), dir.join("want.npy"));
        let out = mapsat(&["run", file, "--mapping", mapping, "--seed", "5", "-o", got.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", common::text(&out));
        let out = mapsat(&["eval", file, "--random", "5", "-o", want.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", common::text(&out));
        let (got, want) = (mapsat::ir::interp::read_npy(&got).unwrap(), mapsat::ir::interp::read_npy(&want).unwrap());
        assert_eq!(got.shape, want.shape, "{file}");
        assert!(got.compare(&want, 1e-6, 1e-6).ok, "{file}");
    }
    let out = mapsat(&["run", "examples/dot.lift", "--mapping", "A=S", "-o", "examples/dot.lift"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(common::text(&out).contains("would overwrite the input"), "{}", common::text(&out));
    std::fs::remove_dir_all(&dir).ok();
}

/// `fmt` prints what reads back: a chain of 200 `o` links, printed as 200 nested calls, nests
/// deeper than the parser reads, and is refused (it printed a program `check` refused).
#[test]
fn fmt_refuses_a_canonical_form_that_would_not_read_back() {
    let dir = std::env::temp_dir().join(format!("mapsat-fmt-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (links, code) in [(150, 0), (200, 1)] {
        let file = dir.join(format!("c{links}.lift"));
        let chain = vec!["map(neg)"; links].join(" o ");
        std::fs::write(&file, format!("size N = 4\ndef f(x: [f32]N) = {chain} $ x\n")).unwrap();
        let out = mapsat(&["fmt", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(code), "{links}: {}", common::text(&out));
        if code == 0 {
            let back = dir.join("back.lift");
            std::fs::write(&back, &out.stdout).unwrap();
            assert_eq!(mapsat(&["check", back.to_str().unwrap()]).status.code(), Some(0));
        } else {
            assert!(common::text(&out).contains("no canonical form that reads back"), "{}", common::text(&out));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

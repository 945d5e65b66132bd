//! End-to-end tests of the `mapsat` binary.
//!
//! `tests/errors/*.lift` are programs that must be rejected. Each starts with comment headers:
//! `// run: eval --random 1` (the subcommand and flags; `check` by default), `// exit: 2` (1 by
//! default), `// error: TEXT` (a substring of the message) and `// at: LINE:COL` (where the
//! caret points, rendered as `FILE:LINE:COL`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn mapsat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mapsat")).args(args).current_dir(root()).output().expect("run mapsat")
}

fn header<'a>(src: &'a str, key: &str) -> Option<&'a str> {
    src.lines().map_while(|l| l.strip_prefix("// ")).find_map(|l| l.strip_prefix(key).map(str::trim))
}

fn check_rejected(path: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let rel = path.strip_prefix(root()).expect("under the root").to_string_lossy().into_owned();
    let run = header(&src, "run:").unwrap_or("check");
    let mut args: Vec<&str> = run.split_whitespace().collect();
    args.insert(1, &rel);
    let exit: i32 = header(&src, "exit:").map_or(1, |e| e.parse().expect("exit code"));
    let out = mapsat(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut problems = Vec::new();
    if out.status.code() != Some(exit) {
        problems.push(format!("exit code {:?}, expected {exit}", out.status.code()));
    }
    if let Some(msg) = header(&src, "error:") {
        if !stderr.contains(msg) {
            problems.push(format!("message does not contain `{msg}`"));
        }
    }
    if let Some(at) = header(&src, "at:") {
        if !stderr.contains(&format!("{rel}:{at}")) {
            problems.push(format!("no `{rel}:{at}` location"));
        }
        if !stderr.contains('^') {
            problems.push("no caret".to_string());
        }
    }
    if stderr.contains("panicked") {
        problems.push("panicked".to_string());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{rel}: {}\n--- stderr:\n{stderr}", problems.join("; ")))
    }
}

#[test]
fn rejected_programs_have_precise_messages() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("tests/errors"))
        .expect("tests/errors")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "lift"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "at least 15 rejected programs");
    let failures: Vec<String> = files.iter().filter_map(|f| check_rejected(f).err()).collect();
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}

#[test]
fn rendered_diagnostic_shape() {
    let out = mapsat(&["check", "tests/errors/zip_lengths.lift"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = "\
error: zip of arrays of different lengths: argument 1 has length N, argument 2 has length M
  ┌─ tests/errors/zip_lengths.lift:3:56
  │
3 │ def f(a: [f32]N, b: [f32]M) = map(fun(p => p.0 + p.1), zip(a, b))
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
    assert_eq!(mapsat(&["--help"]).status.code(), Some(0));
}

#[test]
fn missing_file_is_rejected() {
    let out = mapsat(&["check", "no/such/file.lift"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such/file.lift"));
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

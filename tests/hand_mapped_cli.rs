//! `emit` and `run` on hand-mapped programs: the mapping written in the program is read back
//! into codes and checked by the space of the program it maps before code generation, as
//! `--mapping` is (one truth for validity). The kernel file tests check the other direction:
//! every hand-mapped kernel there is accepted by the space (`tests/filetests.rs`).

mod common;

use common::{mapsat, opencl};
use std::path::PathBuf;

/// A file with `text` in a fresh temporary folder named after the test.
fn program(name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("mapsat-hand-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("{name}.lift"));
    std::fs::write(&file, text).expect("write program");
    (dir, file)
}

/// Each work item writes its element to private memory (`mapLcl` A), then reads its
/// neighbour's (`mapLcl` B over a sliding window): private memory is not shared, so the kernel
/// would read what no one wrote. Before the read-back, `emit` accepted it and `run --check`
/// found 60 of 64 elements wrong.
const PRIVATE_ACROSS_ITEMS: &str = "size N = 64
def privslide(xs: [f32]N) =
  join(mapWrg@W(0, fun(chunk =>
    let p = toPrivate(mapLcl@A(0, fun(x => x * 2.0), chunk)) in
    mapLcl@B(0, fun(w => reduceSeq(fun(a, v => a + v), 0.0, w)), slide(2, 1, padClamp(0, 1, p)))),
    split(16, xs)))
";

#[test]
fn private_memory_read_across_work_items_is_refused() {
    let (dir, file) = program("private", PRIVATE_ACROSS_ITEMS);
    let f = file.to_str().unwrap();
    let out_dir = dir.join("out");
    for args in [
        vec!["emit", f, "--target", "opencl", "-o", out_dir.to_str().unwrap()],
        vec!["run", f, "--device", "opencl:0:0", "--check"],
    ] {
        let out = mapsat(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("the mapping is not valid at N=64"), "{stderr}");
        assert!(stderr.contains("[1 (private memory scoping)] maps A"), "{stderr}");
        assert!(stderr.contains("read back: W=W0,A=L0,B=L0"), "{stderr}");
    }
    assert!(!out_dir.exists(), "nothing is written for a refused program");
    std::fs::remove_dir_all(dir).ok();
}

/// The same computation with the private buffer written and read within one thread (a
/// `mapGlb` per chunk, A and B sequential in it): valid, emitted without a word on stderr, and
/// its kernel computes what the interpreter computes.
#[test]
fn private_memory_within_one_thread_is_emitted_and_runs() {
    let text = PRIVATE_ACROSS_ITEMS
        .replace("mapWrg@W(0", "mapGlb@W(0")
        .replace("mapLcl@A(0,", "mapSeq@A(")
        .replace("mapLcl@B(0,", "mapSeq@B(");
    let (dir, file) = program("private_own", &text);
    let f = file.to_str().unwrap();
    let out = mapsat(&["emit", f, "--target", "opencl", "-o", dir.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    if opencl() {
        let out = mapsat(&["run", f, "--device", "opencl:0:0", "--check"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("check: ok"), "{stdout}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A mapping that breaks only the space's preferences (here rule 4: `mapLcl(1)` without a
/// `mapWrg(1)`, one work group in that dimension) runs correctly and is emitted as written,
/// with a warning that names the rule.
#[test]
fn a_mapping_against_the_spaces_preferences_is_emitted_with_a_warning() {
    let dir = std::env::temp_dir().join(format!("mapsat-hand-pref-{}", std::process::id()));
    let out =
        mapsat(&["emit", "tests/filetests/kernels/listing1.lift", "--target", "opencl", "-o", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.starts_with("warning: lowered as written"), "{stderr}");
    assert!(stderr.contains("[4 (local thread indexing dimensionality"), "{stderr}");
    assert!(dir.join("listing1.cl").exists());
    std::fs::remove_dir_all(dir).ok();
}

/// Such a mapping takes a `--local` of its own, its default launch included, checked against
/// the space's other constraints on local sizes (every one was refused, the list of valid ones
/// empty): one that does not divide its `mapLcl(0)` loops of 16 (3, no barrier inside them)
/// too, and one above them is refused, naming the rule.
#[test]
fn a_mapping_against_the_spaces_preferences_takes_a_local_size() {
    let dir = std::env::temp_dir().join(format!("mapsat-hand-pref-local-{}", std::process::id()));
    let (f, d) = ("tests/filetests/kernels/lcl2d.lift", dir.to_str().unwrap());
    for local in ["16,4", "8,2", "3,4"] {
        let out = mapsat(&["emit", f, "--local", local, "--target", "opencl", "-o", d]);
        assert_eq!(out.status.code(), Some(0), "{local}: {}", String::from_utf8_lossy(&out.stderr));
        if opencl() {
            let out = mapsat(&["run", f, "--local", local, "--check"]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && stdout.contains("check: ok"), "{local}: {stdout}");
        }
    }
    let out = mapsat(&["emit", f, "--local", "40,4", "--target", "opencl", "-o", d]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--local [40, 4] is not valid"), "{stderr}");
    assert!(stderr.contains("at most the length of the longest mapLcl(0) loop"), "{stderr}");
    std::fs::remove_dir_all(dir).ok();
}

/// Each thread writes its block of a global temporary transposed (`transpose` of a tile of
/// its own) and reads it back through another `transpose`: its own elements, in another order
/// (the write's and the read's indices split a loop variable `x` into `x / 4` and `x % 4`). The
/// space admits every such mapping; code generation refused them as needing a grid-wide
/// synchronization (a rewrite variant of listing3, found by a tester). Every valid mapping now
/// runs and agrees with the interpreter.
#[test]
fn a_block_written_transposed_and_read_back_transposed_needs_no_grid_synchronization() {
    if !opencl() {
        return;
    }
    let programs = [
        "size n = 64, s0 = 16, s1 = 4
def f(X: [f32]n, y: f32, z: f32) : [f32]n =
  join(map@A(map@B(fun(a => a + z)),
    map@A_f(fun(x => join(transpose(x))),
      map@P(fun(x => transpose(map@C(map@D(fun(a => a * y)), split(s1, x)))), split(s0, X)))))",
        // A tile of a tile, written transposed: `(4x + y) / 8 + ((2x + y / 2) % 4) * 4 + ...`.
        "size n = 64, s0 = 16, s1 = 4, tB in 1..16 = 8
def f(X: [f32]n, y: f32, z: f32) : [f32]n =
  join(map@A(fun(x => join(transpose(join(map@B_i(map@B_i_i(map@B(fun(a => a + z))), x))))),
    map@P(fun(x => split(2, transpose(split(tB, join(map@C(map@D(fun(a => a * y)), split(s1, x))))))), split(s0, X))))",
    ];
    for (k, text) in programs.into_iter().enumerate() {
        let (dir, file) = program(&format!("transposed_block_{k}"), text);
        let f = file.to_str().unwrap();
        let out = mapsat(&["space", f, "--sample", "200"]);
        assert!(out.status.success());
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        // The mappings with both global (those refused), at most 12.
        let global = |m: &&str| m.starts_with("P=G") && m.contains(",A=G");
        let mappings: Vec<&str> =
            stdout.lines().map(str::trim).filter(|l| l.starts_with("P=")).filter(global).collect();
        assert!(mappings.iter().any(|m| m.starts_with("P=G0") && m.contains("A=G0")), "{stdout}");
        for m in mappings.into_iter().take(12) {
            let run = mapsat(&["run", f, "--mapping", m, "--check", "--runs", "1"]);
            let text = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
            assert!(run.status.success() && text.contains("check: ok"), "{m}: {text}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A transposed copy whose inner map is fused, stored through a `split`, as `mapsat tune`
/// writes the copy kernel of a `transpose-stage` variant: `emit` and `run --check` take it
/// (they refused it as having "no map that computes anything").
#[test]
fn a_fused_copy_stored_through_a_split_runs() {
    let text = "size H = 5, W = 3
def copyt(a: [[f32]W]H) : [[f32]H]W =
  split(H, mapGlb@R(0, fun(x => x), join(transpose(a))))
";
    let (dir, file) = program("fused_copy", text);
    let f = file.to_str().unwrap();
    let out = mapsat(&["emit", f, "--target", "opencl", "-o", dir.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    if opencl() {
        let out = mapsat(&["run", f, "--device", "opencl:0:0", "--check"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("check: ok"), "{stdout}");
    }
    std::fs::remove_dir_all(dir).ok();
}

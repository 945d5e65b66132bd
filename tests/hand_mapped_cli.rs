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
/// the local sizes valid under the space's other constraints (every one was refused, the list
/// of valid ones empty); one that does not divide its `mapLcl` loops is still refused.
#[test]
fn a_mapping_against_the_spaces_preferences_takes_a_local_size() {
    let dir = std::env::temp_dir().join(format!("mapsat-hand-pref-local-{}", std::process::id()));
    let (f, d) = ("tests/filetests/kernels/lcl2d.lift", dir.to_str().unwrap());
    for local in ["16,4", "8,2"] {
        let out = mapsat(&["emit", f, "--local", local, "--target", "opencl", "-o", d]);
        assert_eq!(out.status.code(), Some(0), "{local}: {}", String::from_utf8_lossy(&out.stderr));
        if opencl() {
            let out = mapsat(&["run", f, "--local", local, "--check"]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && stdout.contains("check: ok"), "{local}: {stdout}");
        }
    }
    let out = mapsat(&["emit", f, "--local", "3,4", "--target", "opencl", "-o", d]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--local [3, 4] is not valid") && stderr.contains("[4, 2, 1]"), "{stderr}");
    std::fs::remove_dir_all(dir).ok();
}

//! The reference interpreter against numpy: every fixture directory `tests/fixtures/<dir>/`
//! (written by `tests/fixtures/make_fixtures.py`) holds one `<param>.npy` per parameter of an
//! example, `expected.npy` and `sizes.txt`; evaluating the example on those inputs must give
//! the expected result up to f32 rounding.
//!
//! The example of a directory is `examples/<dir>.lift` when it exists, otherwise the directory's
//! name without its last `_suffix` (`conv_b` -> `examples/conv.lift`).

use mapsat_ir::interp::{eval, read_npy, Tensor};
use mapsat_ir::{check, parse, stages, Program};
use std::path::{Path, PathBuf};

const RTOL: f64 = 1e-4;
const ATOL: f64 = 1e-5;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("tests/fixtures"))
        .expect("tests/fixtures exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.join("expected.npy").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The example a fixture directory belongs to, and whether the directory holds its defaults.
fn example_of(dir: &Path) -> (String, bool) {
    let name = dir.file_name().and_then(|n| n.to_str()).expect("UTF-8 directory name").to_string();
    if root().join("examples").join(format!("{name}.lift")).is_file() {
        return (name, true);
    }
    let base = name.rsplit_once('_').map(|(b, _)| b.to_string()).unwrap_or_else(|| name.clone());
    assert!(
        root().join("examples").join(format!("{base}.lift")).is_file(),
        "fixture {name}: neither examples/{name}.lift nor examples/{base}.lift exists"
    );
    (base, false)
}

/// `sizes.txt`: `name=value` pairs separated by white space.
fn read_sizes(dir: &Path) -> Vec<(String, i64)> {
    let path = dir.join("sizes.txt");
    let Ok(text) = std::fs::read_to_string(&path) else { return Vec::new() };
    text.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("{}: bad entry `{kv}`", path.display()));
            let v = v.parse().unwrap_or_else(|_| panic!("{}: bad value in `{kv}`", path.display()));
            (k.to_string(), v)
        })
        .collect()
}

fn load_example(name: &str) -> Program {
    let path = root().join("examples").join(format!("{name}.lift"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&src).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message))
}

/// Evaluates one fixture; `Err` describes the mismatch.
fn run_fixture(dir: &Path) -> Result<(), String> {
    let fixture = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
    let (example, is_default) = example_of(dir);
    let p = load_example(&example);
    let mut sizes = p.default_sizes();
    for (k, v) in read_sizes(dir) {
        if !p.sizes.iter().any(|s| s.name == k) {
            return Err(format!("{fixture}: sizes.txt sets `{k}`, which examples/{example}.lift does not declare"));
        }
        if is_default && sizes.get(&k) != Some(v) {
            return Err(format!(
                "{fixture}: sizes.txt has {k}={v} but the default in examples/{example}.lift is {:?}: \
                 regenerate the fixtures or fix the default",
                sizes.get(&k)
            ));
        }
        sizes.insert(k, v);
    }
    check::check_with_sizes(&p, &sizes).map_err(|e| format!("{fixture}: type error: {}", e.message))?;
    let mut inputs = Vec::new();
    for param in &p.params {
        let path = dir.join(format!("{}.npy", param.name));
        inputs.push(read_npy(&path).map_err(|e| format!("{fixture}: {e}"))?);
    }
    let expected: Tensor = read_npy(&dir.join("expected.npy")).map_err(|e| format!("{fixture}: {e}"))?;
    let got = eval(&p, &sizes, &inputs).map_err(|e| format!("{fixture}: evaluation failed: {e}"))?;
    if got.shape != expected.shape {
        return Err(format!("{fixture}: result has shape {:?}, expected {:?}", got.shape, expected.shape));
    }
    if !got.allclose(&expected, RTOL, ATOL) {
        return Err(format!(
            "{fixture}: result differs from numpy (max abs diff {:?}, rtol {RTOL}, atol {ATOL})",
            got.max_abs_diff(&expected)
        ));
    }
    // Cut at its kernel boundaries, the program's stages, run in order, compute the same.
    let split = stages::split(&p).map_err(|e| format!("{fixture}: stages: {}", e.message))?;
    let staged = stages::eval(&split, &sizes, &inputs).map_err(|e| format!("{fixture}: stages: {e}"))?;
    if !staged.allclose(&expected, RTOL, ATOL) {
        return Err(format!("{fixture}: its {} stages, run in order, differ from numpy", split.len()));
    }
    Ok(())
}

#[test]
fn every_example_has_a_fixture() {
    let dirs = fixture_dirs();
    for entry in std::fs::read_dir(root().join("examples")).expect("examples/ exists") {
        let path = entry.expect("readable directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("lift") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("UTF-8 file name");
        assert!(
            dirs.iter().any(|d| d.file_name().and_then(|n| n.to_str()) == Some(stem)),
            "examples/{stem}.lift has no fixture at its default sizes (tests/fixtures/{stem}/): \
             add it to tests/fixtures/make_fixtures.py"
        );
    }
}

#[test]
fn examples_match_numpy() {
    let dirs = fixture_dirs();
    assert!(!dirs.is_empty(), "no fixtures: run tests/fixtures/make_fixtures.py");
    let failures: Vec<String> = dirs.iter().filter_map(|d| run_fixture(d).err()).collect();
    assert!(failures.is_empty(), "{} of {} fixtures failed:\n{}", failures.len(), dirs.len(), failures.join("\n"));
}

//! Every `examples/*.lift` parses, prints in canonical form and parses back to the same
//! program, type-checks, and carries the map labels its header comment describes.

use mapsat_ir::{check, parse, print, Program};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// All examples, as (file stem, source), sorted by name.
fn examples() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(examples_dir()).expect("examples/ exists") {
        let path = entry.expect("readable directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("lift") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("UTF-8 file name").to_string();
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((stem, src));
    }
    out.sort();
    out
}

fn parse_example(name: &str, src: &str) -> Program {
    parse(src).unwrap_or_else(|e| {
        let line = src[..e.span.start.min(src.len())].lines().count().max(1);
        panic!("examples/{name}.lift:{line}: {} {:?}", e.message, e.notes)
    })
}

/// The labels written by hand (`map@A`, and `A_0`, `A_1` from `mapND2@A`), i.e. all labels but
/// the generated `m1`, `m2`, ...
fn user_labels(p: &Program) -> BTreeSet<String> {
    p.map_labels()
        .into_iter()
        .filter(|l| !(l.len() > 1 && l.starts_with('m') && l[1..].chars().all(|c| c.is_ascii_digit())))
        .collect()
}

/// The map labels each example is expected to carry (exactly, generated ones aside).
const EXPECTED_LABELS: &[(&str, &[&str])] = &[
    ("blur2d", &["A_0", "A_1"]),
    ("conv", &["A_0", "A_1", "B", "C"]),
    ("dot", &["A"]),
    ("listing1", &["A", "B", "C", "D", "E"]),
    ("listing3", &["A", "B", "C", "D"]),
    ("matmul", &["A", "B", "C"]),
    ("linear", &["A", "B", "C"]),
    ("mlp", &["A", "B", "C", "D", "E", "F"]),
    ("matmul_lowlevel", &["A", "B", "C", "D", "E", "F", "G", "H", "I"]),
    ("matmul_tiled", &["A", "B", "C", "D", "E", "F"]),
    ("stencil1d", &["A"]),
    ("conv_blocked", &["TY", "TX", "Y", "X", "O", "A", "Z"]),
    ("conv_hwio", &["TY", "TX", "O", "A", "Z"]),
    ("conv_windows", &["A", "B", "C"]),
    ("conv_outer", &["R", "Q", "TY", "TX", "O", "A", "Z"]),
    ("matmul_outer", &["A", "B", "C", "Z"]),
    ("sepblur", &["A", "B", "C", "D"]),
    ("sharpen", &["A", "B", "C", "D", "E", "F"]),
    ("jacobi2d", &["A_0", "A_1", "B_0", "B_1"]),
    ("sum", &[]),
    ("sum_partial", &["A"]),
];

#[test]
fn all_expected_examples_exist() {
    let names: BTreeSet<String> = examples().into_iter().map(|(n, _)| n).collect();
    for (name, _) in EXPECTED_LABELS {
        assert!(names.contains(*name), "examples/{name}.lift is missing");
    }
    for name in &names {
        assert!(
            EXPECTED_LABELS.iter().any(|(n, _)| n == name),
            "examples/{name}.lift has no expected labels in this test: add it to EXPECTED_LABELS"
        );
    }
}

#[test]
fn examples_round_trip() {
    for (name, src) in examples() {
        let p = parse_example(&name, &src);
        let text = print(&p);
        let q = parse(&text).unwrap_or_else(|e| panic!("{name}: the printed form does not parse: {e:?}\n{text}"));
        assert_eq!(p, q, "{name}: printing and reparsing changed the program:\n{text}");
        // The canonical form is a fixed point of printing.
        assert_eq!(print(&q), text, "{name}: the canonical form is not stable");
    }
}

#[test]
fn examples_have_their_labels() {
    for (name, src) in examples() {
        let p = parse_example(&name, &src);
        let all = p.map_labels();
        let unique: BTreeSet<&String> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "{name}: map labels are not unique: {all:?}");
        let expected = EXPECTED_LABELS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l).unwrap_or(&[]);
        let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(user_labels(&p), expected, "{name}: labels {all:?}");
    }
}

#[test]
fn paper_listings_have_the_paper_labels() {
    let src = std::fs::read_to_string(examples_dir().join("listing3.lift")).expect("listing3.lift");
    let p = parse_example("listing3", &src);
    assert_eq!(p.map_labels(), ["A", "B", "C", "D"], "Listing 3 has exactly the maps A-D, in this order");
    let src = std::fs::read_to_string(examples_dir().join("listing1.lift")).expect("listing1.lift");
    let p = parse_example("listing1", &src);
    assert_eq!(p.map_labels(), ["A", "B", "C", "D", "E"], "Listing 1 has exactly the loops A-E, in this order");
}

#[test]
fn examples_have_defaults_for_every_size() {
    for (name, src) in examples() {
        let p = parse_example(&name, &src);
        assert!(src.starts_with("//"), "{name}: the file should start with a header comment");
        for s in &p.sizes {
            assert!(s.default.is_some(), "{name}: size `{}` has no default value", s.name);
        }
    }
}

#[test]
fn examples_type_check() {
    for (name, src) in examples() {
        let p = parse_example(&name, &src);
        let info = check::check(&p).unwrap_or_else(|e| panic!("{name}: {} {:?}", e.message, e.notes));
        let sizes = p.default_sizes().into_iter().collect();
        let concrete =
            check::check_with_sizes(&p, &sizes).unwrap_or_else(|e| panic!("{name} (default sizes): {}", e.message));
        assert!(p.ret.is_some(), "{name}: declare the result type");
        let _ = (info.result, concrete.result);
    }
}

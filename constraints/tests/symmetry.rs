//! Counting up to a renaming of dimensions: the classes are the distinct canonical forms of the
//! enumerated mappings, and a renaming of a valid mapping's dimensions stays in its class.

use mapsat_constraints::{Code, Count, Mapping, Options, Space};
use std::collections::HashSet;

fn space(file: &str) -> Space {
    let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    let p = mapsat_ir::parse(&std::fs::read_to_string(&path).expect("example")).expect("parses");
    Space::generate(&p, Options::default()).expect("space")
}

/// `m` with dimensions `a` and `b` swapped everywhere.
fn swap(m: &Mapping, a: u8, b: u8) -> Mapping {
    let s = |d: u8| {
        if d == a {
            b
        } else if d == b {
            a
        } else {
            d
        }
    };
    let codes = m
        .codes
        .iter()
        .map(|&c| match c {
            Code::Lcl(d) => Code::Lcl(s(d)),
            Code::Wrg(d) => Code::Wrg(s(d)),
            Code::Glb(d) => Code::Glb(s(d)),
            c => c,
        })
        .collect();
    Mapping { codes }
}

#[test]
fn classes_are_canonical_forms_of_the_enumeration() {
    for (file, classes_expected) in [("listing1.lift", 14), ("conv.lift", 12), ("matmul.lift", 5)] {
        let s = space(file);
        let (count, classes) = s.count_both(0).expect("count");
        let Count::Exact(n) = count else { panic!("{file}: estimate") };
        let all = s.first(n).expect("enumerate");
        let canon: HashSet<Mapping> = all.iter().map(Mapping::canonical).collect();
        assert_eq!(classes, Some(canon.len() as u64), "{file}");
        assert_eq!(classes, Some(classes_expected), "{file}");
        assert_eq!(s.count_classes().expect("classes"), classes);
        // Swapping two dimensions keeps a mapping in its class.
        for m in &all {
            for (a, b) in [(0, 1), (0, 2), (1, 2)] {
                assert_eq!(swap(m, a, b).canonical(), m.canonical(), "{file}: {}", s.show(m));
            }
        }
    }
    // Listing 1's valid mappings use one parallel dimension, any of three: 42 = 3 x 14.
    assert_eq!(space("listing1.lift").count(0).expect("count"), Count::Exact(42));
}

fn space_with(file: &str, options: Options) -> Space {
    let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    let p = mapsat_ir::parse(&std::fs::read_to_string(&path).expect("example")).expect("parses");
    Space::generate(&p, options).expect("space")
}

/// Every valid mapping of a space (exact: the spaces here are small).
fn all(s: &Space, file: &str) -> Vec<Mapping> {
    let Count::Exact(n) = s.count(0).expect("count") else { panic!("{file}: estimate") };
    let all = s.first(n + 1).expect("enumerate");
    assert_eq!(all.len() as u64, n, "{file}");
    all
}

/// With symmetry breaking, the search finds exactly the canonical forms of the unbroken space's
/// mappings (the independent oracle: `Mapping::canonical` over the full enumeration), so its
/// count is the count up to renaming; every mapping it finds is canonical and valid without it.
#[test]
fn symmetry_breaking_keeps_one_mapping_per_class() {
    let files = ["listing1.lift", "conv.lift", "matmul.lift", "matmul_tiled.lift", "jacobi2d.lift", "blur2d.lift"];
    for file in files {
        let plain = space(file);
        let broken = space_with(file, Options { symmetry_breaking: true, ..Options::default() });
        assert!(plain.dimensions_interchangeable(), "{file}");
        let classes: HashSet<Mapping> = all(&plain, file).iter().map(Mapping::canonical).collect();
        let found = all(&broken, file);
        for m in &found {
            assert_eq!(&m.canonical(), m, "{file}: {} is not canonical", broken.show(m));
            assert!(plain.is_valid(m).expect("check"), "{file}: {} invalid without breaking", plain.show(m));
        }
        let found: HashSet<Mapping> = found.into_iter().collect();
        assert_eq!(found, classes, "{file}");
        assert_eq!(plain.count_classes().expect("classes"), Some(found.len() as u64), "{file}");
    }
}

/// A non-canonical mapping is rejected by family 13, with the map named.
#[test]
fn symmetry_breaking_explains_a_renamed_mapping() {
    let broken = space_with("listing1.lift", Options { symmetry_breaking: true, ..Options::default() });
    let plain = space("listing1.lift");
    let m = all(&plain, "listing1.lift").into_iter().find(|m| m.canonical() != *m).expect("a renamed mapping");
    let e = broken.explain(&m).expect("explain");
    assert!(!e.valid);
    assert!(e.violated.iter().all(|c| c.family == mapsat_constraints::Family::Canonical), "{:?}", e.violated);
    assert!(e.violated.iter().any(|c| c.text.contains("symmetry breaking: map")), "{:?}", e.violated);
    assert!(plain.explain(&m).expect("explain").valid);
}

/// With a device whose dimensions differ (the H100 profile: local size at most 64 in `z`),
/// renaming is not a symmetry: the broken search still finds only canonical mappings that are
/// valid without it, and at most one per class (a class whose canonical member breaks a limit
/// that another member keeps is lost, so its count may be lower than the count up to renaming).
#[test]
fn symmetry_breaking_on_a_device_with_unequal_dimensions_finds_canonical_valid_mappings() {
    let profile = mapsat_ir::profile::Profile::builtin("h100").expect("h100 profile");
    for file in ["listing1.lift", "matmul_tiled.lift", "jacobi2d.lift"] {
        let options = Options { profile: Some(profile.clone()), ..Options::default() };
        let plain = space_with(file, options.clone());
        let broken = space_with(file, Options { symmetry_breaking: true, ..options });
        assert!(!plain.dimensions_interchangeable(), "{file}");
        let classes: HashSet<Mapping> = all(&plain, file).iter().map(Mapping::canonical).collect();
        for m in all(&broken, file) {
            assert_eq!(m.canonical(), m, "{file}");
            assert!(plain.is_valid(&m).expect("check"), "{file}: {}", plain.show(&m));
            assert!(classes.contains(&m), "{file}");
        }
    }
}

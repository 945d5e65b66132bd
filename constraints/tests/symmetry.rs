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

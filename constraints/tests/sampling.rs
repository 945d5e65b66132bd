//! Sampling: samples never repeat, are all valid, never exceed the space, and a request larger
//! than the space returns the whole space and says it is exhausted.

use mapsat_constraints::{Count, Mapping, Options, Space};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::collections::HashSet;
use std::ops::ControlFlow;

fn space(file: &str) -> Space {
    let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("example");
    let p = mapsat_ir::parse(&text).expect("parses");
    Space::generate(&p, Options::default()).expect("space")
}

/// The example spaces with every valid mapping: small (2), medium (42, 49), larger (174).
fn spaces() -> Vec<(Space, HashSet<Mapping>)> {
    ["dot.lift", "listing1.lift", "conv.lift", "matmul_lowlevel.lift"]
        .into_iter()
        .map(|f| {
            let s = space(f);
            let Count::Exact(n) = s.count(0).expect("count") else { panic!("{f}: not an exact count") };
            let all: HashSet<Mapping> = s.first(n).expect("enumerate").into_iter().collect();
            assert_eq!(all.len() as u64, n);
            (s, all)
        })
        .collect()
}

/// Random requests (0 to 400 samples, any seed) on every example space: exactly
/// min(n, count) samples, distinct, each a valid mapping (one of the enumeration's), and
/// `exhausted` exactly when n covers the space.
#[test]
fn samples_are_distinct_valid_and_within_the_space() {
    let spaces = spaces();
    let mut runner = TestRunner::new(ProptestConfig::with_cases(16));
    let strategy = (0usize..spaces.len(), 0usize..400, any::<u64>());
    runner
        .run(&strategy, |(which, n, seed)| {
            let (s, all) = &spaces[which];
            let count = all.len();
            let mut got = Vec::new();
            let stats = s
                .sample_each(n, seed, |m| {
                    got.push(m.clone());
                    ControlFlow::Continue(())
                })
                .expect("sample");
            prop_assert_eq!(stats.produced, got.len());
            prop_assert_eq!(got.len(), n.min(count), "n = {}, count = {}", n, count);
            prop_assert_eq!(got.iter().collect::<HashSet<_>>().len(), got.len(), "a sample repeats");
            prop_assert_eq!(stats.exhausted, n >= count);
            for m in &got {
                prop_assert!(all.contains(m), "{} is not a valid mapping", s.show(m));
            }
            prop_assert_eq!(s.sample(n, seed).expect("sample"), got, "sample and sample_each agree");
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn streaming_stops_when_asked() {
    let s = space("listing1.lift");
    let mut got = 0;
    let stats = s
        .sample_each(100, 1, |_| {
            got += 1;
            if got == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .expect("sample");
    assert_eq!((got, stats.produced), (3, 3));
}

#[test]
fn a_sample_of_nearly_the_whole_space_is_complete() {
    // Found by the property above: 248 of 264 mappings asked, and the random descents alone
    // found 244 distinct ones; the rest come from the enumeration of the space.
    let spaces = spaces();
    let (s, all) = &spaces[3];
    assert_eq!(all.len(), 264);
    let got = s.sample(248, 11_816_304_669_710_080_948).expect("sample");
    assert_eq!(got.len(), 248);
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), 248);
    assert!(got.iter().all(|m| all.contains(m)));
}

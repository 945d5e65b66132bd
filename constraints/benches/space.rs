//! The speed targets of the mapping space on the tiled convolution (`constraints/tests/programs/conv_tiled.lift`,
//! 103 maps): constraint generation (target < 100 ms), the first valid mapping (< 1 s), and
//! the stream of distinct mappings (target >= 1,000 per second over the first 10,000).
//!
//! `cargo bench -p mapsat-constraints --bench space`
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use mapsat_constraints::{Options, Space};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Duration;

fn program() -> mapsat_ir::Program {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/conv_tiled.lift");
    mapsat_ir::parse(&std::fs::read_to_string(path).expect("read")).expect("parse")
}

fn bench(c: &mut Criterion) {
    let p = program();
    let mut g = c.benchmark_group("conv_tiled");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function("generate", |b| b.iter(|| Space::generate(&p, Options::default()).expect("space")));
    let space = Space::generate(&p, Options::default()).expect("space");
    g.bench_function("first_mapping", |b| b.iter(|| space.first(1).expect("first")));
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("stream_10000", |b| {
        b.iter(|| {
            let mut n = 0u64;
            space
                .enumerate(Some(10_000), |_| {
                    n += 1;
                    ControlFlow::Continue(())
                })
                .expect("enumerate");
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

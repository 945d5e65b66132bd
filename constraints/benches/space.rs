//! Speed of the mapping space: constraint generation, the first valid mapping, and the stream
//! of distinct mappings (the first 10,000, or the whole space when smaller; criterion reports
//! it in mappings per second).
//!
//! - `conv_tiled`: the tiled convolution (`constraints/tests/programs/conv_tiled.lift`, 103
//!   maps), with the speed targets: generation < 100 ms, first mapping < 1 s, a stream of at
//!   least 1,000 mappings per second.
//! - `chain7`, `listing1`, `conv`, `matmul_tiled`: small programs.
//!
//! Before measuring, each program's size is printed: maps, constraint instances, and the Z3
//! checks its stream makes (what the search spends besides evaluation).
//!
//! `cargo bench -p mapsat-constraints --bench space [-- FILTER]`
//!
//! Figures (November 2026, 2-core machine, quiet: load average under 2): `conv_tiled`
//! generation 4.0-4.1 ms, first mapping 63-65 ms, **stream 95-100 ms for 10,000 mappings:
//! 100,000-105,000 mappings/s** (36,000/s before incremental evaluation, 10,000/s before the
//! search evaluated each map's constraints smallest first). Under load (average about 5, other
//! builds running) the same code gave 60,000/s against 25,500/s for the search before
//! incremental evaluation, measured back to back. Per-thread CPU time, less sensitive to the
//! load: a stream of 10,000 mappings takes 92-100 ms (was 185-195 ms), of which 52-58 ms is
//! the search's setup (the Z3 solver and its first model, as in the first mapping); the steady
//! state past the setup is about 250,000 mappings/s (was 75,000/s), and about 320,000/s over a
//! stream of 60,000. One Z3 check for 10,000 mappings.
//!
//! Nearly every code tried is refuted (about 60 per mapping, each by one constraint, the one
//! that last refuted that code there), and an accepted code re-checks all of its map's
//! constraints, chain-wide rules (families 12, 11, 7) included: those made 90% of the
//! evaluation. The witness's constraint values are now kept as circuits
//! (`src/incremental/`): a patch re-evaluates only the nodes that depend on the changed map,
//! a subtree that reads one code is a table, and a connective updates counts of its deciding
//! and undecided children, so a chain-wide rule costs a few nodes. The setup is now over half
//! of a 10,000-mapping stream; a cheaper first model would change the enumeration order (the
//! order fingerprint of `tests/conv_tiled.rs`).
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mapsat_constraints::{Options, Space};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Duration;

/// Mappings streamed per measurement.
const STREAM: u64 = 10_000;

/// The small programs: a chain of seven maps, and (smaller variants of) Listing 1, the direct
/// convolution and the tiled matrix multiplication of `examples/`.
const PROGRAMS: [(&str, &str); 4] = [
    (
        "chain7",
        "size n = 8, m = 8, k = 8
def big(x: [[[f32]k]m]n) =
  map@A(fun(p => map@B(fun(r => map@C(fun(a => a + 1.0), r)), map@D(fun(r => map@E(fun(a => a * 2.0), r)),
    map@F(fun(r => map@G(fun(a => a - 1.0), r)), p)))), x)",
    ),
    (
        "listing1",
        "size I = 4, J = 8, K = 8
def listing1(input: [[[f32]K]J]I) =
  map@A(fun(plane =>
    let buf = toLocal(map@B(fun(row => map@C(fun(x => x * 2.0 + 1.0), row)), plane)) in
    map@D(fun(col => map@E(fun(x => x * x), col)), transpose(buf))), input)",
    ),
    (
        "conv",
        "size inH = 8, inW = 8, inChs = 4, outChs = 6, kerH = 3, kerW = 3
def conv(inp: [[[f32]inChs]inW]inH, ks: [[[[f32]inChs]kerW]kerH]outChs) =
  mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)),
    slideND2(kerH, 1, kerW, 1, padND2(1, 1, 0.0, inp)))",
    ),
    (
        "matmul_tiled",
        "size M = 8, K = 16, N = 8, tM = 4, tN = 4, tK = 4
def matmul_tiled(a: [[f32]K]M, b: [[f32]N]K) =
  join(map@A(fun(rowTile =>
    map(join, transpose(map@B(fun(colTile =>
      map@C(fun(row => map@D(fun(col => reduce(add, 0.0,
            map@E(fun(chunk => reduce(add, 0.0, map@F(fun(p => p.0 * p.1), chunk))), split(tK, zip(row, col))))),
          colTile)), rowTile)), split(tN, transpose(b)))))), split(tM, a)))",
    ),
];

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("read")
}

/// Streams up to [`STREAM`] mappings; returns how many, and the Z3 checks made.
fn stream(space: &Space) -> (u64, u64) {
    let stats = space.enumerate(Some(STREAM), |_| ControlFlow::Continue(())).expect("enumerate");
    (stats.produced, stats.z3_checks)
}

/// Generation, first mapping and stream of one program, `stream_secs` measuring the stream.
fn program(c: &mut Criterion, name: &str, src: &str, stream_secs: u64) {
    let p = mapsat_ir::parse(src).expect("parse");
    let space = Space::generate(&p, Options::default()).expect("space");
    let (produced, checks) = stream(&space);
    eprintln!(
        "{name}: {} maps, {} constraints; a stream of {produced} mappings makes {checks} Z3 checks",
        space.len(),
        space.constraints().len()
    );
    let mut g = c.benchmark_group(name);
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function("generate", |b| b.iter(|| Space::generate(&p, Options::default()).expect("space")));
    g.bench_function("first_mapping", |b| b.iter(|| space.first(1).expect("first")));
    g.throughput(Throughput::Elements(produced)).measurement_time(Duration::from_secs(stream_secs));
    g.bench_function(format!("stream_{STREAM}"), |b| b.iter(|| stream(&space)));
    g.finish();
}

fn bench(c: &mut Criterion) {
    program(c, "conv_tiled", &read("tests/programs/conv_tiled.lift"), 30);
    for (name, src) in PROGRAMS {
        program(c, name, src, 10);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

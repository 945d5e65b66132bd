//! Throughput of the streaming enumerator and of generation (prints numbers; no timed
//! assertions). Run with
//! `cargo test -p mapsat-constraints --release --test rate -- --ignored --nocapture`.

use mapsat_constraints::{Options, Space};
use std::ops::ControlFlow;
use std::time::Instant;

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

#[test]
#[ignore]
fn enumeration_rate() {
    let tiled =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/conv_tiled.lift")).unwrap();
    for (name, src) in PROGRAMS.into_iter().chain([("conv_tiled", tiled.as_str())]) {
        let p = mapsat_ir::parse(src).unwrap();
        let t = Instant::now();
        let s = Space::generate(&p, Options::default()).unwrap();
        let gen = t.elapsed();
        let t = Instant::now();
        let first = s.first(1).unwrap();
        let first_t = t.elapsed();
        let t = Instant::now();
        let mut n = 0u64;
        let stats = s
            .enumerate(Some(10_000), |_| {
                n += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
        let el = t.elapsed().as_secs_f64();
        println!(
            "{name}: {} maps, {} constraints, generation {:.2} ms, first mapping {:.2} ms ({}), \
             {} mappings in {:.3} s = {:.0}/s ({} Z3 checks, complete: {})",
            s.len(),
            s.constraints().len(),
            gen.as_secs_f64() * 1e3,
            first_t.as_secs_f64() * 1e3,
            first.first().map(|m| s.show(m).to_string()).unwrap_or_default(),
            stats.produced,
            el,
            stats.produced as f64 / el,
            stats.z3_checks,
            stats.complete
        );
    }
}

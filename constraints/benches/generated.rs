//! Scaling of the mapping space with the number of maps, on generated programs: constraint
//! generation plus the first valid mapping, for programs of 10, 100 (and, with
//! `MAPSAT_BENCH_MAPS=10,100,1000`, 1,000) maps in four shapes:
//!
//! - `chain`: a `let` chain of 1-D element-wise maps, each reading the previous one's result;
//! - `pipeline`: a `let` chain of 2-D element-wise stages (two maps each, nested);
//! - `nest`: maps nested in one another (at most 100 deep: the text format nests 200 levels);
//! - `tree`: a balanced binary tree of maps over zips of two subtrees.
//!
//! Before criterion measures, each shape is timed once per size and the growth exponent k of
//! time ~ maps^k is fitted (least squares in log-log) and printed: the goal is 1,000
//! maps in under a second, growing near-linearly (k near 1).
//!
//! `cargo bench -p mapsat-constraints --bench generated [-- FILTER]`
//!
//! Figures (2-core shared machine, `MAPSAT_BENCH_MAPS=10,100,1000`, the fit's one-shot times,
//! November 2026): chain 0.011 / 0.039 / 0.69 s (k = 0.90), pipeline 0.006 / 0.038 / 0.66 s
//! (k = 1.02), tree 0.008 / 0.029 / 0.53 s (k = 0.90), nest 0.008 / 0.126 s for 10 / 100
//! (k = 1.21; 0.96 s and k = 1.93 before rules 3 and 6 were given to Z3 in linear size,
//! `src/nesting.rs`). `mapsat space` (count, then 5 samples) on a 60-deep nest of maps over
//! `[..[f32]2..]`: 5.2 s (37 s before the prefix check of every constraint on a map, the
//! remembered effective codes, Z3's SAT solver, the renamed nogoods and the linear rules 3 and
//! 6); on the pipeline of 80 two-map stages (160 maps): 0.9 s (27 s before).
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use mapsat_constraints::{Options, Space};
use std::time::{Duration, Instant};

const F: &str = "fun(v => v * 2.0 + 1.0)";

/// `n` 1-D maps in a `let` chain.
fn chain(n: usize) -> String {
    let mut s = String::from("size N = 64\ndef f(x: [f32]N) =\n");
    let mut prev = "x".to_string();
    for i in 0..n {
        s += &format!("  let a{i} = map@M{i}({F}, {prev}) in\n");
        prev = format!("a{i}");
    }
    s + &format!("  {prev}\n")
}

/// `n / 2` stages of two nested maps over a 2-D array, in a `let` chain.
fn pipeline(n: usize) -> String {
    let mut s = String::from("size N = 64, M = 32\ndef f(x: [[f32]M]N) =\n");
    let mut prev = "x".to_string();
    for i in 0..n / 2 {
        s += &format!("  let a{i} = map@S{i}(map@T{i}({F}), {prev}) in\n");
        prev = format!("a{i}");
    }
    s + &format!("  {prev}\n")
}

/// `n` maps nested in one another over an `n`-dimensional array: 2 elements in the outer 10
/// dimensions, 1 in the others (2^100 elements would exceed what mapsat handles).
fn nest(n: usize) -> String {
    let ty = (0..n).fold("f32".to_string(), |t, i| format!("[{t}]{}", if n - i <= 10 { "N" } else { "O" }));
    let inner = (1..n).rev().fold(F.to_string(), |b, i| format!("map@M{i}({b})"));
    format!("size N = 2, O = 1\ndef f(x: {ty}) = map@M0({inner}, x)\n")
}

/// A balanced tree of `n` maps: each map adds the two components of a zip of its subtrees.
fn tree(n: usize) -> String {
    fn node(n: usize, next: &mut usize, lets: &mut String) -> String {
        if n == 0 {
            return "x".into();
        }
        let left = node((n - 1) / 2, next, lets);
        let right = node(n - 1 - (n - 1) / 2, next, lets);
        let i = *next;
        *next += 1;
        *lets += &format!("  let t{i} = map@M{i}(fun(p => p.0 + p.1), zip({left}, {right})) in\n");
        format!("t{i}")
    }
    let mut lets = String::new();
    let root = node(n, &mut 0, &mut lets);
    format!("size N = 64\ndef f(x: [f32]N) =\n{lets}  {root}\n")
}

type Shape = (&'static str, fn(usize) -> String, usize);

/// Every shape with the largest number of maps it can be written with.
const SHAPES: [Shape; 4] =
    [("chain", chain, 100_000), ("pipeline", pipeline, 100_000), ("nest", nest, 100), ("tree", tree, 100_000)];

fn sizes() -> Vec<usize> {
    std::env::var("MAPSAT_BENCH_MAPS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100])
}

/// Generation and the first mapping of one program.
fn generate_and_first(p: &mapsat_ir::Program) -> usize {
    let space = Space::generate(p, Options::default()).expect("space");
    space.first(1).expect("first").len()
}

fn parse(src: &str) -> mapsat_ir::Program {
    mapsat_ir::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Times each shape once per size and prints the fitted growth exponent.
fn fit() {
    for (name, make, max) in SHAPES {
        let mut points = Vec::new();
        for n in sizes().into_iter().filter(|&n| n <= max) {
            let p = parse(&make(n));
            let t = Instant::now();
            let found = generate_and_first(&p);
            let secs = t.elapsed().as_secs_f64();
            let maps = Space::generate(&p, Options::default()).expect("space").len();
            eprintln!("{name} {n}: {maps} maps take part, generation + first mapping {secs:.3} s ({found} found)");
            points.push(((maps.max(1) as f64).ln(), secs.max(1e-9).ln()));
        }
        if points.len() >= 2 {
            let m = points.len() as f64;
            let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
            let (mx, my) = (sx / m, sy / m);
            let num: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
            let den: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
            eprintln!("{name}: time ~ maps^{:.2}", num / den);
        }
    }
}

fn bench(c: &mut Criterion) {
    fit();
    for (name, make, max) in SHAPES {
        let mut g = c.benchmark_group(name);
        g.sample_size(10).measurement_time(Duration::from_secs(5));
        for n in sizes().into_iter().filter(|&n| n <= max.min(100)) {
            let p = parse(&make(n));
            g.bench_function(format!("generate_first_{n}"), |b| b.iter(|| generate_and_first(&p)));
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

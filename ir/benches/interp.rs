//! Speed of the front end and of the reference interpreter: the bundled convolution at the
//! example's default size and at a VGG-16 layer size (56x56x128 -> 128 channels, 3x3, pad 1),
//! and 512x512 matrix products written high-level and with a fused reducer. The interpreter is
//! the oracle for kernels that large, so it must stay well under a minute. (Their correctness
//! against nested loops is tested in `ir/src/interp/tests.rs`.)
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use criterion::{criterion_group, criterion_main, Criterion};
use mapsat_ir::{check, interp, parse};

fn conv_source() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/conv.lift")).expect("examples/conv.lift")
}

fn front_end(c: &mut Criterion) {
    let src = conv_source();
    c.bench_function("parse+check conv.lift", |b| {
        b.iter(|| {
            let p = parse(&src).expect("parses");
            check::check(&p).expect("checks")
        })
    });
}

fn eval_conv(c: &mut Criterion) {
    let p = parse(&conv_source()).expect("parses");
    let mut group = c.benchmark_group("eval conv");
    group.sample_size(10);
    for (name, extra) in [
        ("default 8x8x4->6", vec![]),
        ("VGG 56x56x128->128", vec![("inH", 56), ("inW", 56), ("inChs", 128), ("outChs", 128)]),
    ] {
        let mut sizes = p.default_sizes();
        for (k, v) in extra {
            sizes.insert(k.to_string(), v);
        }
        let inputs = interp::random_inputs(&p, &sizes, 1).expect("inputs");
        group.bench_function(name, |b| b.iter(|| interp::eval(&p, &sizes, &inputs).expect("evaluates")));
    }
    group.finish();
}

fn eval_matmul(c: &mut Criterion) {
    let mut group = c.benchmark_group("eval matmul 512^3");
    group.sample_size(10);
    for (name, body) in [
        ("map+reduce", "reduce(add, 0.0, map(fun(p => p.0 * p.1), zip(row, col)))"),
        ("reduceSeq", "reduceSeq(fun(acc, p => acc + p.0 * p.1), 0.0, zip(row, col))"),
    ] {
        let src = format!(
            "size N = 512\ndef mm(a: [[f32]N]N, b: [[f32]N]N) = map(fun(row => map(fun(col => {body}), transpose(b))), a)"
        );
        let p = parse(&src).expect("parses");
        let sizes = p.default_sizes();
        let inputs = interp::random_inputs(&p, &sizes, 1).expect("inputs");
        group.bench_function(name, |b| b.iter(|| interp::eval(&p, &sizes, &inputs).expect("evaluates")));
    }
    group.finish();
}

criterion_group!(benches, front_end, eval_conv, eval_matmul);
criterion_main!(benches);

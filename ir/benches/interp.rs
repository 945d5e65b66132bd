//! Speed of the front end and of the reference interpreter on the bundled convolution, at the
//! example's default size and at a VGG-16 layer size (56x56x128 -> 128 channels, 3x3, pad 1):
//! the interpreter is the oracle for kernels that large, so it must stay well under a minute.
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

criterion_group!(benches, front_end, eval_conv);
criterion_main!(benches);

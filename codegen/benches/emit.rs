//! Speed of lowering plus printing (OpenCL and CUDA) for the largest mapped programs: the
//! fully mapped example `examples/matmul_lowlevel.lift` and the work-group convolution
//! `tests/filetests/kernels/conv_lcl.lift` at the VGG-16 layer size (56x56x128 -> 128, 3x3, pad 1).
//! The target: well under 50 ms.
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use criterion::{criterion_group, criterion_main, Criterion};
use mapsat_codegen::{emit, Dialect, Options};

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))).expect(rel)
}

fn lower_and_print(c: &mut Criterion) {
    let programs = [
        ("matmul_lowlevel.lift", read("../examples/matmul_lowlevel.lift"), vec![]),
        (
            "conv_lcl.lift VGG 56x56x128->128",
            read("../tests/filetests/kernels/conv_lcl.lift"),
            vec![("inH", 56), ("inW", 56), ("inChs", 128), ("outChs", 128), ("tH", 4), ("tW", 8)],
        ),
    ];
    for (name, src, sizes) in programs {
        let p = mapsat_ir::parse(&src).expect("parses");
        let opts =
            Options { sizes: sizes.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), ..Options::default() };
        c.bench_function(&format!("lower+print {name}"), |b| {
            b.iter(|| {
                let cl = emit(&p, &opts, Dialect::OpenCl).expect("emits OpenCL");
                let cu = emit(&p, &opts, Dialect::Cuda).expect("emits CUDA");
                (cl, cu)
            })
        });
    }
}

criterion_group!(benches, lower_and_print);
criterion_main!(benches);

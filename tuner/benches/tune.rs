//! Speed of the tuner's inner loop, on one core:
//!
//! - **building candidates**: apply the mapping, lower, print, count, predict (analytical) and
//!   compute the features, for random valid candidates of the tunable convolution
//!   (`examples/conv_blocked.lift` at 28x28, 32 -> 32 channels, pocl-cpu profile), of the
//!   outer-product one whose vector width is tuned (`examples/conv_hwio.lift`: each build
//!   specializes the width) and of the tiled matmul at 256^3. Target (issue #8): at least 1,000
//!   candidates/s.
//! - **learned-model prediction**: scoring candidates' feature vectors with a model trained on
//!   512 measured candidates. Target: at least 50,000 candidates/s.
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mapsat_codegen::Dialect;
use mapsat_ir::profile::Profile;
use mapsat_ir::Sizes;
use mapsat_tuner::tune::features::NAMES;
use mapsat_tuner::tune::model::{CostModel, Learned, TrainingSet};
use mapsat_tuner::tune::task::{Candidate, Task};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// The allocator of the `mapsat` binary (src/main.rs), so that this measures what it runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn task(file: &str, sizes: &[(&str, i64)]) -> Task {
    let src = std::fs::read_to_string(format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"))).expect(file);
    let p = mapsat_ir::parse(&src).expect("parses");
    let given: Sizes = sizes.iter().copied().collect();
    let profile = Profile::builtin("pocl-cpu").expect("pocl-cpu");
    Task::new(p, &given, profile, Dialect::OpenCl, true, 1).expect("task")
}

fn building(c: &mut Criterion) {
    let tasks = [
        (
            "conv_blocked 28x28 32->32",
            task("conv_blocked.lift", &[("inH", 28), ("inW", 28), ("inChs", 32), ("outChs", 32)]),
        ),
        ("conv_hwio 28x28 32->32", task("conv_hwio.lift", &[("inH", 28), ("inW", 28), ("inChs", 32), ("outChs", 32)])),
        ("matmul_tiled 256^3", task("matmul_tiled.lift", &[("M", 256), ("K", 256), ("N", 256)])),
    ];
    let mut group = c.benchmark_group("build candidates");
    for (name, t) in &tasks {
        let mut rng = StdRng::seed_from_u64(7);
        // Candidates drawn (and their spaces generated) before timing: the loop builds them.
        let cands: Vec<Candidate> = (0..200).filter_map(|_| t.random_candidate(&mut rng)).collect();
        group.throughput(Throughput::Elements(cands.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| cands.iter().filter(|c| t.build(c).is_ok()).count());
        });
    }
    group.finish();
}

fn prediction(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(3);
    let mut row = || -> Vec<f64> { (0..NAMES.len()).map(|_| rng.gen_range(0.0..8.0)).collect() };
    let mut data = TrainingSet::default();
    for _ in 0..8 {
        let rows: Vec<Vec<f64>> = (0..64).map(|_| row()).collect();
        let times: Vec<Option<f64>> = rows.iter().map(|r| Some((r[0] - r[3] + r[7] * 0.5).exp())).collect();
        data.add_group(rows, &times);
    }
    let model = Learned::fit(data).expect("trains");
    let rows: Vec<Vec<f64>> = (0..10_000).map(|_| row()).collect();
    let mut group = c.benchmark_group("learned model");
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.bench_function("predict 10,000 candidates", |b| b.iter(|| model.score(&rows)));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = building, prediction
}
criterion_main!(benches);

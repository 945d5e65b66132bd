//! mapsat from Rust research code: a program of two kernels (a separable blur) loaded, its
//! mapping space counted and sampled, a bad mapping explained, each sampled mapping run on an
//! OpenCL device and checked against the interpreter, and the program tuned.
//!
//!     cargo run --release --example library [-- opencl:0:0]
//!
//! The tuner measures every candidate in a child process: here this program itself, started
//! with the argument `worker` (the `mapsat` program's own is `mapsat worker`).

use mapsat::ir::{interp, Sizes};
use mapsat::local::Locals;
use mapsat::tuner::measure::RunConfig;
use mapsat::tuner::tune::{Silent, TuneOptions};
use mapsat::tuning::{best_sequence, Tuning};
use mapsat::Source;
use std::path::Path;

fn main() {
    if let Err(e) = run() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("worker") {
        return Ok(mapsat::tuning::serve_worker()?);
    }
    let device = args.get(1).map_or("opencl:0:0", String::as_str).parse()?;
    let src = Source::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sepblur.lift"))?;
    let mut given = Sizes::new();
    given.insert("H", 64);
    given.insert("W", 48);

    // The space: the product of the two kernels' spaces; a few valid mappings.
    let count = src.count(&given, None)?;
    println!("{} valid mappings{}", count.value, if count.exact { "" } else { " (estimated)" });
    println!("a mapping that breaks the rules: {:?}", src.explain("A=L0,B=L0,C=G1,D=G0", &given, None)?);

    // Each sampled mapping run and checked against the interpreter.
    let sizes = src.sizes(&given)?;
    let inputs = interp::random_inputs(src.program(), &sizes, 7)?;
    let cfg = RunConfig { check: true, ..RunConfig::default() };
    for mapping in src.sample(&given, 4, 1, None)? {
        let runs = src.run(&given, &inputs, device, Some(&mapping), &Locals::default(), &cfg)?;
        let ms: f64 = runs.iter().map(|k| k.report.median_ms).sum();
        println!("{mapping}: {ms:.3} ms over {} kernels, checked", runs.len());
    }

    // A short tune, kernel by kernel, into a scratch folder.
    // Its worker is this program, started with the argument `worker` (above).
    let opts = TuneOptions { trials: 8, random_trials: 4, ..TuneOptions::default() };
    let how = Tuning::new(device, &opts)?;
    let out = std::env::temp_dir().join("mapsat-library-example");
    let _ = std::fs::remove_dir_all(&out); // a new tune: its logs are started, not continued
    let kernels = src.tune(&given, &how, &out, &mut Silent)?;
    let Some(best) = best_sequence(kernels.iter().map(|k| &k.summary)) else {
        println!("no kernel sequence was correct");
        return Ok(());
    };
    println!("tuned: {} at {:.3} ms, work groups {:?} (in {})", best.mapping, best.ms, best.local, out.display());

    // The best sequence run again, as it was measured (built with reassociation).
    let cfg = RunConfig { check: true, reassociate: true, ..RunConfig::default() };
    let runs = src.run(&best.sizes(&given), &inputs, device, Some(&best.mapping), &best.locals(), &cfg)?;
    println!("run again: {:.3} ms, checked", runs.iter().map(|k| k.report.median_ms).sum::<f64>());
    Ok(())
}

//! Figures of the rewrite stage on the examples: e-graph size, saturation and extraction time,
//! with the default budgets and K = 16 variants. `cargo bench -p mapsat-rewrite --bench saturate`
//! prints one line per example (peak memory is the process's high-water mark so far, read from
//! `/proc/self/status`, so it only grows from line to line).
//!
//! Then stage inlining, guided against unguided: for each image pipeline, with the stage phase
//! first ([`mapsat_rewrite::phases`]), without it at the default budgets, and without it at a
//! larger budget, how many of the 16 variants compute every stage where it is read (no
//! `toGlobal`, no intermediate array read back).
//!
//! Figures (2-core shared machine, November 2026): default budgets, K = 16, conv 20k e-nodes
//! in 0.31 s + 0.99 s extraction, 170 MiB; matmul_tiled extraction 0.97 s; at 100k nodes matmul
//! 4.8 s and 493 MiB, conv 4.1 s and 553 MiB. Stage inlining of the separable blur: guided
//! 0.79 s (20k nodes), 8 of 16 variants inlined; unguided at the default budgets 0 of 16; unguided
//! with 16 iterations and 100k nodes 11.3 s (37.6k nodes), 8 of 16. Sharpen and Jacobi: 0 in
//! every setting (fusion keeps making new lambdas; their phases reach the node limit).

use mapsat_rewrite::{rewrite, Budget, Options};
use std::time::Instant;

const EXAMPLES: [&str; 6] = ["dot", "sum", "blur2d", "matmul", "matmul_tiled", "conv"];

fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    println!("example        nodes  classes iter stop             saturate  extract(K=16) variants peak");
    println!("default budgets:");
    for name in EXAMPLES {
        run(name, Budget::default());
    }
    println!("larger budget (100k nodes, 12 iterations, 60 s):");
    for name in ["matmul", "conv"] {
        let budget =
            Budget { nodes: 100_000, iterations: 12, time: std::time::Duration::from_secs(60), ..Budget::default() };
        run(name, budget);
    }
    println!("stage inlining: variants that are one kernel with no intermediate array, of 16");
    let large =
        Budget { nodes: 100_000, iterations: 16, time: std::time::Duration::from_secs(60), ..Budget::default() };
    for name in ["sepblur", "sharpen", "jacobi2d"] {
        inline(name, "guided", true, Budget::default());
        inline(name, "unguided", false, Budget::default());
        inline(name, "unguided, 16 iter", false, large.clone());
    }
}

fn inline(name: &str, how: &str, guided: bool, budget: Budget) {
    let p = example(name);
    let out = rewrite(&p, &Options { variants: 16, budget, guided, ..Options::default() }).expect("rewrites");
    let r = &out.report;
    let inlined = out
        .variants
        .iter()
        .filter(|v| v.intermediates == 0 && !mapsat_ir::print(&v.program).contains("toGlobal"))
        .count();
    println!(
        "{name:<9} {how:<18} {:>6} nodes {:>3} iter {:<15} {:>7.3}s  inlined {inlined}",
        r.nodes,
        r.iterations,
        r.stop.name(),
        r.time.as_secs_f64()
    );
}

fn example(name: &str) -> mapsat_ir::Program {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let text = std::fs::read_to_string(format!("{dir}/{name}.lift")).expect("example");
    mapsat_ir::parse(&text).expect("parses")
}

fn run(name: &str, budget: Budget) {
    let p = example(name);
    let start = Instant::now();
    let out = rewrite(&p, &Options { variants: 16, budget, ..Options::default() }).expect("rewrites");
    let total = start.elapsed();
    let r = &out.report;
    println!(
        "{name:<14} {:>6} {:>8} {:>4} {:<16} {:>7.3}s {:>9.3}s {:>8} {:>6.0} MiB (total {:.3}s)",
        r.nodes,
        r.classes,
        r.iterations,
        r.stop.name(),
        r.time.as_secs_f64(),
        out.extract_time.as_secs_f64(),
        out.variants.len(),
        peak_mib().unwrap_or(f64::NAN),
        total.as_secs_f64()
    );
}

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
//! Then the structures issue #10 asks for (matmul 2-D tiled and register-blocked, blur2d's 2-D
//! tiles staged in local memory, conv's tiles in local memory with output channels in groups and
//! private sums): which of the 16 variants has each, with guided and unguided saturation.
//!
//! Figures (2-core shared machine, 24 November 2026, load about 2.5): default budgets, K = 16,
//! conv 19k e-nodes in 0.63 s + 1.05 s extraction, 202 MiB; matmul 16.7k in 0.24 s + 0.24 s;
//! blur2d 19k in 0.43 s + 0.30 s; matmul_tiled extraction 0.75 s; at 100k nodes matmul 6.5 s and
//! 751 MiB, conv 10.8 s and 1.37 GiB. Every target is reached both guided and unguided at the
//! default budgets (the tiling macros reach them in one application each): matmul tiled
//! variant 2, register-blocked variant 1, blur2d variant 3, conv variant 5.
//!
//! With the macros as sequences of primitive rules (25 November 2026, load about 1.5): matmul
//! 19.0k e-nodes in 0.21 s + 0.14 s, conv 17.0k in 0.22 s + 0.64 s, at 100k nodes matmul 3.2 s,
//! conv 8.8 s and 1.50 GiB (21.9 s when every iteration ran each macro's steps again, each step
//! with its own rebuild and context; a start already run is now skipped). Targets: matmul tiled
//! variant 2, register-blocked variant 1, blur2d variant 3, conv variant 4, guided and unguided.
//! Quiet (load under 0.5), after matmul_tiled.lift's chunk form and the panels staged in local
//! joined the variants: conv 19.0k e-nodes in 0.21 s + 1.02 s extraction, 186 MiB; matmul 19.0k
//! in 0.24 s + 0.17 s; at 100k nodes matmul 3.4 s + 1.2 s (452 MiB), conv 2.8 s + 2.1 s (539
//! MiB). Matmul: 2-D tiled variant 2, panels in local variant 3, matmul_tiled.lift's form
//! variant 4, register-blocked variant 1, guided and unguided. Stage inlining of the separable
//! blur: guided 0.39 s, 14 of 16 variants inlined; unguided 2 of 16, and 0 with 16 iterations and
//! 100k nodes (4.4 s). Sharpen and Jacobi: 0 by this count in every setting (their inlined
//! variants keep an intermediate array).

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
    println!("targets of issue #10 among the 16 variants, guided (phases) and unguided (one phase of every rule):");
    for (name, target, reached) in TARGETS {
        for (how, guided) in [("guided", true), ("unguided", false)] {
            target_reached(name, target, reached, how, guided);
        }
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

/// An example, a structure and how to recognize it in a variant's text without white space.
type Target = (&'static str, &'static str, fn(&str) -> bool);

/// The structures issue #10 asks the rewrite stage to reach, each recognized in a variant's text
/// without white space.
const TARGETS: [Target; 6] = [
    ("matmul", "2-D tiled (tile-map-map)", |t| t.contains("split(tA,a)") && t.contains("(join,transpose(map@B(")),
    ("matmul", "matmul_tiled.lift's form (tK chunks)", |t| {
        t.contains("split(tA,a)")
            && t.contains("=>reduce(add,0.0,map@C(fun(p=>p.0*p.1),")
            && t.contains("split(tK,zip(")
    }),
    ("matmul", "2-D tiled, panels in local", |t| {
        t.contains("split(tA,a)") && t.contains("letaLocal=toLocal(map@copy1(")
    }),
    ("matmul", "register-blocked", |t| t.contains("toPrivate(reduce(") && t.contains("map@B_i_z(")),
    ("blur2d", "2-D tiles staged in local", |t| t.contains("tA_0,map@") && t.contains("toLocal(map@copy")),
    ("conv", "tiles in local, tB groups, private sums", |t| {
        t.contains("tA_0,map@")
            && t.contains("toLocal(map@copy")
            && t.contains("split(tB,ks)")
            && t.contains("toPrivate(")
    }),
];

fn target_reached(name: &str, target: &str, reached: fn(&str) -> bool, how: &str, guided: bool) {
    let p = example(name);
    let start = Instant::now();
    let out = rewrite(&p, &Options { variants: 16, guided, ..Options::default() }).expect("rewrites");
    let total = start.elapsed();
    let flat = |v: &mapsat_rewrite::Variant| mapsat_ir::print(&v.program).split_whitespace().collect::<String>();
    let at = out.variants.iter().position(|v| reached(&flat(v)));
    let r = &out.report;
    println!(
        "{name:<7} {target:<40} {how:<9} {:>6} nodes {:>7.3}s total  {}",
        r.nodes,
        total.as_secs_f64(),
        at.map_or("not reached".to_string(), |k| format!("variant {k}"))
    );
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

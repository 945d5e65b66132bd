//! The count estimator's error bars hold: on spaces small enough to count exactly, the true
//! count lies within two standard errors of the (stratified) Knuth estimate for at least 95% of
//! seeds, with the default number of probes. About 30 s: in the `ci` profile only (see
//! `.config/nextest.toml`).

use mapsat_constraints::{Count, Options, Space};

const SEEDS: u64 = 100;

fn space(file: &str) -> Space {
    let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    let p = mapsat_ir::parse(&std::fs::read_to_string(path).expect("example")).expect("parses");
    Space::generate(&p, Options::default()).expect("space")
}

#[test]
fn true_count_within_two_standard_errors_in_95_percent_of_seeds() {
    let mut report = Vec::new();
    for file in ["listing1.lift", "conv.lift", "matmul_lowlevel.lift", "matmul_tiled.lift", "conv_blocked.lift"] {
        let s = space(file);
        let Count::Exact(n) = s.count(0).expect("count") else { panic!("{file}: not exact") };
        let inside = (0..SEEDS)
            .filter(|&seed| match s.estimate(seed).expect("estimate") {
                Count::Estimate { value, std_error, .. } => (value - n as f64).abs() <= 2.0 * std_error,
                Count::Exact(m) => m == n,
            })
            .count();
        report.push(format!("{file}: {n} mappings, inside +-2 SE in {inside} of {SEEDS} seeds"));
        assert!(inside as u64 >= SEEDS * 95 / 100, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}

//! `mapsat space` and `mapsat explain`: the parallel-mapping space of a program (Z3 constraints).

use super::{CliResult, Failure, Source};
use mapsat::ir;
use mapsat_constraints::{self as mc, Count, Options, Space};
use std::path::Path;

fn load(file: &Path, target: Option<&str>, no_fusion: bool) -> CliResult<Space> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let profile = match target {
        Some(t) => Some(ir::profile::Profile::load(t).map_err(|e| Failure::Usage(e.to_string()))?),
        None => None,
    };
    Space::generate(&p, Options { fusion: !no_fusion, profile, ..Options::default() })
        .map_err(|e| Failure::Rejected(format!("error: {e}")))
}

fn solver(e: mc::Error) -> Failure {
    Failure::Rejected(format!("error: {e}"))
}

fn json_str(s: &str) -> String {
    mc::json_string(s)
}

/// `mapsat space FILE [--target P] [--json] [--sample N --seed S] [--random-baseline N]`.
#[allow(clippy::too_many_arguments)]
pub fn space(
    file: &Path,
    target: Option<&str>,
    json: bool,
    sample: Option<usize>,
    seed: u64,
    baseline: Option<u64>,
    no_fusion: bool,
) -> CliResult<()> {
    let s = load(file, target, no_fusion)?;
    let t = std::time::Instant::now();
    let count = s.count(seed).map_err(solver)?;
    let count_ms = t.elapsed().as_secs_f64() * 1e3;
    let samples = s.sample(sample.unwrap_or(5), seed).map_err(solver)?;
    let base = match baseline {
        Some(n) if n > 0 => Some((s.random_baseline(n, seed).map_err(solver)?, n)),
        _ => None,
    };
    let counts = s.counts();
    if json {
        let mut out = String::from("{\n");
        out += &format!("  \"maps\": [{}],\n", s.labels.iter().map(|l| json_str(l)).collect::<Vec<_>>().join(", "));
        out += &format!(
            "  \"layout_maps\": [{}],\n",
            s.layout_maps.iter().map(|l| json_str(l)).collect::<Vec<_>>().join(", ")
        );
        out += &format!(
            "  \"families\": {{{}}},\n",
            counts.iter().map(|(f, n)| format!("{}: {n}", json_str(f.name()))).collect::<Vec<_>>().join(", ")
        );
        out += &match count {
            Count::Exact(n) => format!("  \"count\": {n},\n  \"count_exact\": true,\n"),
            Count::Estimate { value, .. } => format!("  \"count\": {value},\n  \"count_exact\": false,\n"),
        };
        out += &format!(
            "  \"samples\": [{}]",
            samples.iter().map(|m| json_str(&s.show(m).to_string())).collect::<Vec<_>>().join(", ")
        );
        if let Some((v, n)) = base {
            out += &format!(",\n  \"random_baseline\": {{\"draws\": {n}, \"valid\": {v}}}");
        }
        out += "\n}";
        println!("{out}");
        return Ok(());
    }
    println!("maps: {}", s.labels.join(" "));
    if !s.layout_maps.is_empty() {
        println!("layout maps (views, not mapped): {}", s.layout_maps.join(" "));
    }
    if let Some(p) = &s.options.profile {
        println!("target: {} ({})", p.name, p.description);
    }
    println!("constraint instances ({} in all):", s.constraints.len());
    for (f, n) in &counts {
        println!("  {:>3}  {f}", n);
    }
    println!("valid mappings: {count} ({count_ms:.1} ms)");
    if let Some((v, n)) = base {
        println!("random baseline: {v} of {n} uniformly random assignments are valid ({:.3e})", v as f64 / n as f64);
    }
    println!("samples:");
    for m in &samples {
        println!("  {}", s.show(m));
    }
    Ok(())
}

/// `mapsat explain FILE --mapping "A=W0,..."`: exit 0 and "valid", or 1 and the violations.
pub fn explain(file: &Path, mapping: &str, target: Option<&str>, no_fusion: bool) -> CliResult<()> {
    let s = load(file, target, no_fusion)?;
    let m = s.parse_mapping(mapping).map_err(|e| Failure::Usage(e.to_string()))?;
    let e = s.explain(&m).map_err(solver)?;
    if e.valid {
        println!("valid");
        for b in &e.barriers {
            println!("  needs a barrier between map {} and its readers {}", b.writer, b.readers.join(", "));
        }
        if e.barriers.is_empty() {
            println!("  no barrier needed");
        }
        if let Some(ls) = &e.local_sizes {
            println!("  local sizes (a valid choice): {ls:?}");
        }
        return Ok(());
    }
    let mut msg = format!("invalid: {} violated constraint(s)\n", e.violated.len());
    for c in &e.violated {
        msg += &format!("  [{}] maps {}: {}\n", c.family, c.maps.join(", "), c.text);
    }
    Err(Failure::Rejected(msg))
}

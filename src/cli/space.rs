//! `mapsat space` and `mapsat explain`: the parallel-mapping space of a program (Z3 constraints).

use super::{checked_sizes, CliResult, Failure, SizeArgs, Source};
use mapsat::ir;
use mapsat::rewrite::stage_choice::{self, Choice};
use mapsat_constraints::{self as mc, Count, Options, Space};
use std::ops::ControlFlow;
use std::path::Path;

/// How the space is generated: the device profile, the sizes (`--size`, then the file's
/// defaults) and the fusion heuristic.
pub struct How<'a> {
    /// `--target`.
    pub target: Option<&'a str>,
    /// `--size`.
    pub sizes: &'a SizeArgs,
    /// `--no-fusion`.
    pub no_fusion: bool,
    /// `--canonical`: also the space with symmetry breaking.
    pub canonical: bool,
}

/// One kernel's space, and with `--canonical` its space with symmetry breaking.
struct Kernel {
    /// The stage's name, for a program of several kernels.
    name: Option<String>,
    /// Empty ([`Space::is_empty`]) for a kernel with nothing to map (it only reduces or
    /// rearranges): it runs in one work item, with the empty mapping.
    space: Space,
    canonical: Option<Space>,
    /// The `let` whose value the kernel computes (a kernel boundary), if any.
    binder: Option<String>,
    /// What the kernel computes into memory (`toM`): the memory and the map's label.
    stagings: Vec<(Choice, String)>,
    /// The kernel: the program, or its stage.
    program: ir::Program,
    /// The profile the space was generated under (`--target`), and the sizes.
    profile: Option<ir::profile::Profile>,
    sizes: ir::Sizes,
}

/// The space of each kernel of the program: one, unnamed, for a program without kernel
/// boundaries; else one per stage (`ir::stages`), with the stage's name.
fn load(file: &Path, how: &How) -> CliResult<Vec<Kernel>> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = checked_sizes(&src, &p, how.sizes)?;
    let profile = match how.target {
        Some(t) => Some(ir::profile::Profile::load(t).map_err(|e| Failure::Usage(e.to_string()))?),
        None => None,
    };
    let staged = ir::stages::count(&p) > 1;
    let mut out = Vec::new();
    for stage in ir::stages::split_at(&p, &sizes).map_err(|e| src.reject(&e))? {
        // A kernel without a map has the empty space: its only mapping, the empty one.
        let options = Options {
            fusion: !how.no_fusion,
            profile: profile.clone(),
            sizes: sizes.clone(),
            empty_without_maps: true,
            ..Options::default()
        };
        let name = staged.then(|| stage.program.name.clone());
        let rejected = |e: mc::Error| match &name {
            Some(n) => Failure::Rejected(format!("error: in the kernel of stage `{n}`: {e}")),
            None => Failure::Rejected(format!("error: {e}")),
        };
        let stagings = stage_choice::stagings(&stage.program);
        let space = Space::generate(&stage.program, options.clone()).map_err(rejected)?;
        let canonical = match how.canonical {
            true => {
                let options = Options { symmetry_breaking: true, ..options };
                Some(Space::generate(&stage.program, options).map_err(rejected)?)
            }
            false => None,
        };
        let (program, profile, sizes) = (stage.program, profile.clone(), sizes.clone());
        out.push(Kernel { name, space, canonical, binder: stage.binder, stagings, program, profile, sizes });
    }
    Ok(out)
}

fn solver(e: mc::Error) -> Failure {
    Failure::Rejected(format!("error: {e}"))
}

/// `mapsat space FILE [--target P] [--size N=V] [--json] [--sample N --seed S] [--random-baseline N]`.
pub fn space(
    file: &Path,
    how: &How,
    json: bool,
    sample: Option<usize>,
    seed: u64,
    baseline: Option<u64>,
) -> CliResult<()> {
    let spaces = load(file, how)?;
    let mut values = Vec::new();
    for (k, kernel) in spaces.iter().enumerate() {
        if let (Some(name), false) = (&kernel.name, json) {
            outln!("kernel {} of {}: {name}", k + 1, spaces.len());
        }
        if let Some(mut v) = one_space(kernel, json, sample, seed, baseline)? {
            if let Some(name) = &kernel.name {
                v["kernel"] = serde_json::json!(name);
            }
            values.push(v);
        }
    }
    match (json, values.len()) {
        (false, _) => {}
        (true, 1) => outln!("{}", serde_json::to_string_pretty(&values[0]).expect("JSON values serialize")),
        (true, _) => {
            let all = serde_json::json!({ "kernels": values });
            outln!("{}", serde_json::to_string_pretty(&all).expect("JSON values serialize"))
        }
    }
    Ok(())
}

/// One kernel's space: printed as text, or returned as JSON. With `--canonical`, samples come
/// from the space with symmetry breaking.
fn one_space(
    kernel: &Kernel,
    json: bool,
    sample: Option<usize>,
    seed: u64,
    baseline: Option<u64>,
) -> CliResult<Option<serde_json::Value>> {
    let s = &kernel.space;
    if s.is_empty() && !json {
        outln!("nothing to map: the kernel runs in one work item (its only mapping, the empty one)");
        return Ok(None);
    }
    let t = std::time::Instant::now();
    let (count, classes) = s.count_both(seed).map_err(solver)?;
    let count_ms = t.elapsed().as_secs_f64() * 1e3;
    let canonical = match &kernel.canonical {
        Some(c) => {
            let t = std::time::Instant::now();
            let n = c.count(seed).map_err(solver)?;
            Some((n, t.elapsed().as_secs_f64() * 1e3))
        }
        None => None,
    };
    let sampled_space = kernel.canonical.as_ref().unwrap_or(s);
    let base = match baseline {
        Some(n) if n > 0 => Some((s.random_baseline(n, seed).map_err(solver)?, n)),
        _ => None,
    };
    let asked = sample.unwrap_or(5);
    let mut value = None;
    let sampled = if json {
        let mut samples = Vec::new();
        let sampled = sampled_space
            .sample_each(asked, seed, |m| {
                samples.push(s.show(m).to_string());
                ControlFlow::Continue(())
            })
            .map_err(solver)?;
        let mut v = to_json(s, (count, classes), &samples, base);
        v["nothing_to_map"] = serde_json::json!(s.is_empty());
        if let Some((n, _)) = canonical {
            add_canonical_json(&mut v, s, n);
        }
        value = Some(v);
        sampled
    } else {
        print_text(s, (count, classes), count_ms, base);
        if let Some((n, ms)) = canonical {
            print_canonical(s, n, ms);
        }
        outln!("samples:");
        // Streamed: each sample is printed as soon as it is found.
        sampled_space
            .sample_each(asked, seed, |m| {
                outln!("  {}", s.show(m));
                ControlFlow::Continue(())
            })
            .map_err(solver)?
    };
    if sample.is_some() && sampled.produced < asked {
        let why = if sampled.exhausted {
            "the space has no more valid mappings".to_string()
        } else {
            format!("sampling gave up after {} random descents, and the space may hold more", sampled.descents)
        };
        eprintln!("note: {} distinct mappings sampled of the {asked} asked: {why}", sampled.produced);
    }
    Ok(value)
}

fn to_json(
    s: &Space,
    (count, classes): (Count, Option<u64>),
    samples: &[String],
    base: Option<(u64, u64)>,
) -> serde_json::Value {
    let counts = s.counts();
    let (count, exact, std_error) = count_parts(count);
    let families: serde_json::Map<String, serde_json::Value> =
        counts.iter().map(|(f, n)| (f.name().to_string(), serde_json::json!(n))).collect();
    let mut out = serde_json::json!({
        "maps": s.labels(),
        "layout_maps": s.layout_maps(),
        "families": families,
        "count": count,
        "count_exact": exact,
        "count_std_error": std_error,
        "count_up_to_dimension_renaming": classes,
        "samples": samples,
    });
    if let Some((v, n)) = base {
        out["random_baseline"] = serde_json::json!({ "draws": n, "valid": v });
    }
    out
}

/// A count as JSON: its value, whether it is exact, and the standard error of an estimate.
pub(super) fn count_parts(n: Count) -> (serde_json::Value, bool, f64) {
    match n {
        Count::Exact(n) => (serde_json::json!(n), true, 0.0),
        Count::Estimate { value, std_error, .. } => (serde_json::json!(value), false, std_error),
    }
}

/// The count of the space with symmetry breaking, in the JSON of [`to_json`].
fn add_canonical_json(v: &mut serde_json::Value, s: &Space, n: Count) {
    let (count, exact, std_error) = count_parts(n);
    v["count_canonical"] = count;
    v["count_canonical_exact"] = serde_json::json!(exact);
    v["count_canonical_std_error"] = serde_json::json!(std_error);
    v["dimensions_interchangeable"] = serde_json::json!(s.dimensions_interchangeable());
}

/// The count of the space with symmetry breaking, and what it means for this target.
fn print_canonical(s: &Space, n: Count, ms: f64) {
    outln!("canonical mappings (symmetry breaking in the search, one per renaming class): {n} ({ms:.1} ms)");
    if !s.dimensions_interchangeable() {
        outln!(
            "  note: the target's work-item limits differ by dimension, so renaming is not a symmetry: \
             a class whose canonical mapping breaks a limit is not counted"
        );
    }
}

fn print_text(s: &Space, (count, classes): (Count, Option<u64>), count_ms: f64, base: Option<(u64, u64)>) {
    outln!("maps: {}", s.labels().join(" "));
    if !s.layout_maps().is_empty() {
        outln!("layout maps (views, not mapped): {}", s.layout_maps().join(" "));
    }
    if let Some(p) = &s.options().profile {
        outln!("target: {} ({})", p.name, p.description);
    }
    outln!("constraint instances ({} in all):", s.constraints().len());
    for (f, n) in &s.counts() {
        outln!("  {:>3}  {f}", n);
    }
    outln!("valid mappings: {count} ({count_ms:.1} ms)");
    if let Some(c) = classes {
        outln!("up to renaming of dimensions (G0 <-> G1 ...): {c}");
    }
    if let Some((v, n)) = base {
        outln!("random baseline: {v} of {n} uniformly random assignments are valid ({:.3e})", v as f64 / n as f64);
    }
}

/// `mapsat explain FILE --mapping "A=W0,..."`: exit 0 and "valid", or 1 and the violations.
/// For a program of several kernels, the mapping's parts are explained in each kernel's space.
pub fn explain(file: &Path, mapping: &str, how: &How) -> CliResult<()> {
    let spaces = load(file, how)?;
    let labels: Vec<Vec<String>> = spaces.iter().map(|k| mapsat::stages::space_labels(&k.space)).collect();
    let maps = || spaces.iter().flat_map(|k| k.space.labels().to_vec()).collect();
    // One kernel's mapping is its own (its errors name no kernel), unless it has nothing to
    // map: then only the empty mapping is its.
    let parts = match spaces.len() == 1 && !spaces[0].space.is_empty() {
        true => vec![mapping.to_string()],
        false => super::stages::split_mapping(mapping, &labels, &maps)?,
    };
    let mut report = Vec::new();
    let mut invalid = Vec::new();
    for (Kernel { name, space: s, binder, stagings, program, profile, sizes, .. }, part) in spaces.iter().zip(&parts) {
        let m = s.parse_mapping(part).map_err(|e| Failure::Usage(in_kernel(name, e.to_string())))?;
        if s.is_empty() {
            report.push(match name {
                Some(n) => format!("kernel {n}: nothing to map (one work item)"),
                None => "nothing to map: the kernel runs in one work item (its only mapping, the empty one)".into(),
            });
            continue;
        }
        let e = s.explain(&m).map_err(solver)?;
        if !e.valid {
            invalid.push(in_kernel(name, super::mapping::violations(s, &e)));
            continue;
        }
        if let Some(q) = profile {
            if let Some(r) = mapsat::mapping::refused_by_codegen(s, program, &m, sizes, e.local_sizes.clone(), q) {
                invalid.push(in_kernel(name, format!("invalid: valid in the mapping space, but {r}\n")));
                continue;
            }
        }
        match (name, binder) {
            (Some(name), Some(b)) => {
                report.push(format!("kernel {name} (`{b}` is materialized in global memory: a kernel boundary):"))
            }
            (Some(name), None) => report.push(format!("kernel {name}:")),
            _ => {}
        }
        for (choice, label) in stagings {
            report.push(format!("  map {label} computes into {} memory ({})", choice.name(), scope(*choice)));
        }
        for b in &e.barriers {
            let readers = s.labels_of(&b.readers);
            report.push(match readers.is_empty() {
                true => {
                    format!("  needs a barrier after map {}: other work items read what it writes", s.label(b.writer))
                }
                false => format!(
                    "  needs a barrier between map {} and its readers {}",
                    s.label(b.writer),
                    readers.join(", ")
                ),
            });
        }
        if e.barriers.is_empty() {
            report.push("  no barrier needed".into());
        }
        if let Some(ls) = &e.local_sizes {
            report.push(format!("  local sizes (a valid choice): {ls:?}"));
        } else {
            report.push("  local sizes: code generation's default (the space has none to choose)".into());
        }
    }
    if !invalid.is_empty() {
        return Err(Failure::Rejected(invalid.concat()));
    }
    match spaces.len() {
        1 => outln!("valid"),
        n => outln!("valid ({n} kernels, launched in order)"),
    }
    for line in report {
        outln!("{line}");
    }
    Ok(())
}

/// Who shares what a map computes into memory of this kind.
fn scope(choice: Choice) -> &'static str {
    match choice {
        Choice::Private => "per work item",
        Choice::Local => "per work group, read by its work items",
        Choice::Global | Choice::Inline => "read by the whole kernel",
    }
}

/// `text`, said to be about the kernel `name` when the program has several.
fn in_kernel(name: &Option<String>, text: String) -> String {
    match name {
        Some(n) => format!("in the kernel of stage `{n}`: {text}"),
        None => text,
    }
}

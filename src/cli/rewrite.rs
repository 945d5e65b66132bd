//! `mapsat rewrite`: equality saturation, K diverse variants written as `.lift` files.

use super::{checked_sizes, CliResult, Failure, SizeArgs, Source};
use mapsat::ir;
use mapsat::rewrite::{self as rw, Budget, Options, Outcome};
use std::path::Path;

/// The command's arguments.
#[derive(clap::Args)]
pub struct RewriteArgs {
    /// The IR file.
    file: std::path::PathBuf,
    #[command(flatten)]
    sizes: SizeArgs,
    /// How many variants to write (the best by static cost first, then diverse ones).
    #[arg(long, default_value_t = rw::VARIANTS, value_name = "K")]
    variants: usize,
    /// Stop saturating once the e-graph has more e-nodes.
    #[arg(long, default_value_t = rw::saturate::NODE_LIMIT, value_name = "N")]
    node_limit: usize,
    /// Stop saturating after this many iterations.
    #[arg(long, default_value_t = rw::saturate::ITER_LIMIT, value_name = "N")]
    iter_limit: usize,
    /// Stop saturating after this many seconds (the saturation only: extracting the variants
    /// afterwards, a bounded search over candidate terms, takes its own time).
    #[arg(long, default_value_t = rw::saturate::TIME_LIMIT.as_secs_f64(), value_name = "S")]
    time_limit: f64,
    /// Split factors to try (each only where it divides the length at the sizes); the program's
    /// tunable sizes are tried too.
    #[arg(long = "split", value_delimiter = ',', value_name = "N,...")]
    split: Vec<i64>,
    /// Do not declare new tunable tile sizes (one per map); split by the constants only.
    #[arg(long)]
    no_new_tiles: bool,
    /// Saturate with every rule from the start, without the stage phase that first inlines a
    /// program's `let`-bound stages into their consumers.
    #[arg(long)]
    unguided: bool,
    /// Output directory (created if missing).
    #[arg(long, short, value_name = "DIR")]
    output: std::path::PathBuf,
}

/// `mapsat rewrite FILE [--variants K] [--size ...] [--node-limit N] [--iter-limit N]
/// [--time-limit S] [--split N,...] -o DIR`.
pub fn rewrite(a: &RewriteArgs) -> CliResult<()> {
    if a.variants == 0 {
        return Err(Failure::Usage("--variants must be at least 1".into()));
    }
    let time = super::seconds("--time-limit", a.time_limit)?;
    if let Some(bad) = a.split.iter().find(|n| **n < 2) {
        return Err(Failure::Usage(format!("--split factors must be at least 2, got {bad}")));
    }
    let src = Source::read(&a.file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = checked_sizes(&src, &p, &a.sizes)?;
    let opts = Options {
        sizes: sizes.clone(),
        budget: Budget { nodes: a.node_limit, iterations: a.iter_limit, time, ..Budget::default() },
        variants: a.variants,
        split_factors: if a.split.is_empty() { rw::SPLIT_FACTORS.to_vec() } else { a.split.clone() },
        new_tile_sizes: !a.no_new_tiles,
        guided: !a.unguided,
        ..Options::default()
    };
    let mut out = rw::rewrite(&p, &opts).map_err(|e| Failure::Rejected(format!("error: {e}")))?;
    let without_maps = mapsat::variants::kernels_without_maps(&p, &sizes);
    let found = out.variants.len();
    out.variants.retain(|v| match mapsat::variants::unmappable(&v.program, &sizes, without_maps) {
        Some(why) => {
            eprintln!("left out a variant ({}): {why}", v.signature);
            false
        }
        None => true,
    });
    let kernels = ir::stages::count(&p);
    if out.variants.is_empty() && without_maps < kernels {
        return Err(Failure::Rejected(format!("error: no variant to write: the {found} found are left out (above)")));
    }
    if out.variants.is_empty() {
        return Err(Failure::Rejected(format!(
            "error: no variant to write: {} has no map to rewrite or to map (it runs in one work item: `mapsat run {}`)",
            a.file.display(),
            a.file.display()
        )));
    }
    let files = write(&a.output, &a.file, &out)?;
    let mut summary = summary(&a.file, &sizes, &opts, &out, &files);
    summary["tunable_split_sizes"] = serde_json::json!(rw::tunable(&p));
    let text = serde_json::to_string_pretty(&summary).map_err(|e| Failure::Rejected(format!("error: {e}")))?;
    let path = a.output.join("summary.json");
    ir::files::write(&path, text + "\n")
        .map_err(|e| Failure::Rejected(format!("error: cannot write {}: {e}", path.display())))?;
    let r = &out.report;
    outln!(
        "{} e-nodes, {} e-classes, {} iterations, stopped: {}, {:.3} s; {} variants in {}",
        r.nodes,
        r.classes,
        r.iterations,
        r.stop.name(),
        r.time.as_secs_f64(),
        files.len(),
        a.output.display()
    );
    if out.phases.len() > 1 {
        for ph in &out.phases {
            let r = &ph.report;
            outln!("  phase {}: {} iterations, stopped: {}, {} e-nodes", ph.name, r.iterations, r.stop.name(), r.nodes);
        }
    }
    for (f, v) in files.iter().zip(&out.variants) {
        let stages = rw::stage_choice::describe(&v.stages);
        let stages = if stages.is_empty() { stages } else { format!("; stages {stages}") };
        outln!("{f}: cost {}, {}{stages}", v.cost, v.signature);
    }
    Ok(())
}

/// Each producer's stage choice, `{"h": "inline", "v": "global"}`.
pub(super) fn stages_json(stages: &[rw::stage_choice::StageChoice]) -> serde_json::Value {
    stages
        .iter()
        .map(|s| (s.binder.clone(), serde_json::json!(s.choice.name())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Writes each variant as `variant_NN.lift`; returns the file names.
fn write(dir: &Path, input: &Path, out: &Outcome) -> CliResult<Vec<String>> {
    super::create_dir(dir)?;
    let names: Vec<String> = (0..out.variants.len()).map(|k| format!("variant_{k:02}.lift")).collect();
    for name in names.iter().chain(std::iter::once(&"summary.json".to_string())) {
        super::keep_inputs(&dir.join(name), &[input])?;
    }
    let mut files = Vec::new();
    for (k, v) in out.variants.iter().enumerate() {
        let name = names[k].clone();
        let text = format!(
            "// Variant {k} of {} (mapsat rewrite): static cost {}, structure {}.\n{}",
            input.display(),
            v.cost,
            v.signature,
            ir::print(&v.program)
        );
        let path = dir.join(&name);
        ir::files::write(&path, text)
            .map_err(|e| Failure::Rejected(format!("error: cannot write {}: {e}", path.display())))?;
        files.push(name);
    }
    Ok(files)
}

fn summary(input: &Path, sizes: &ir::Sizes, opts: &Options, out: &Outcome, files: &[String]) -> serde_json::Value {
    let r = &out.report;
    let rules: serde_json::Map<String, serde_json::Value> =
        r.applied.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect();
    let sizes: serde_json::Map<String, serde_json::Value> =
        sizes.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
    serde_json::json!({
        "input": input.display().to_string(),
        "sizes": sizes,
        "budget": {
            "nodes": opts.budget.nodes,
            "iterations": opts.budget.iterations,
            "time_s": opts.budget.time.as_secs_f64(),
            "term": opts.budget.term,
        },
        "split_factors": opts.split_factors,
        "new_tile_sizes": opts.new_tile_sizes,
        "nodes": r.nodes,
        "classes": r.classes,
        "iterations": r.iterations,
        "stop_reason": r.stop.name(),
        "saturation_s": r.time.as_secs_f64(),
        "extraction_s": out.extract_time.as_secs_f64(),
        "rules": rules,
        "phases": out.phases.iter().map(|ph| serde_json::json!({
            "name": ph.name,
            "iterations": ph.report.iterations,
            "stop_reason": ph.report.stop.name(),
            "nodes": ph.report.nodes,
            "classes": ph.report.classes,
            "saturation_s": ph.report.time.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "guided": opts.guided,
        "rejected_candidates": out.rejected,
        "variants": files.iter().zip(&out.variants).map(|(f, v)| serde_json::json!({
            "file": f,
            "cost": v.cost,
            "signature": v.signature,
            "intermediates": v.intermediates,
            "kernels": ir::stages::count(&v.program),
            "stages": stages_json(&v.stages),
        })).collect::<Vec<_>>(),
    })
}

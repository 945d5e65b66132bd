//! `mapsat space FILE --variants K` and `mapsat explain FILE --stages EDGE=CHOICE`: the stage
//! choices of a program (inline, local, global per producer) as variables of one mapping space
//! (`mapsat::choices`), over the input and its rewrite variants.

use super::space::{count_parts, How};
use super::{checked_sizes, given_sizes, CliResult, Failure, Source};
use mapsat::choices::Choices;
use mapsat::ir::{self, choice::Choice};
use mapsat::rewrite::Options as RewriteOptions;
use mapsat_constraints::{self as mc, Options, Point};
use std::path::Path;

/// The choice space of the input and up to `k - 1` of its rewrite variants.
fn load(file: &Path, how: &How, k: usize) -> CliResult<Choices> {
    if k == 0 {
        return Err(Failure::Usage("--variants must be at least 1".into()));
    }
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let given = given_sizes(&p, how.sizes)?;
    let sizes = checked_sizes(&src, &p, how.sizes)?;
    let profile = match how.target {
        Some(t) => Some(ir::profile::Profile::load(t).map_err(|e| Failure::Usage(e.to_string()))?),
        None => None,
    };
    let opts = RewriteOptions { sizes, ..RewriteOptions::default() };
    // One program: the input alone, without rewriting it.
    let found = match k {
        1 => vec![mapsat::variants::the_input(&p)],
        _ => mapsat::variants::candidates(&p, k, &opts).map_err(|e| Failure::Rejected(format!("error: {e}")))?.list,
    };
    let options = Options { fusion: !how.no_fusion, profile, ..Options::default() };
    mapsat::choices::choice_space(found, &given, &options).map_err(solver)
}

fn solver(e: mc::Error) -> Failure {
    Failure::Rejected(format!("error: {e}"))
}

/// `mapsat space FILE --variants K [--json] [--sample N --seed S]`: each stage variable with
/// its domain, each choice with its program, kernels and count, the total, and samples.
pub fn space(file: &Path, how: &How, k: usize, json: bool, sample: Option<usize>, seed: u64) -> CliResult<()> {
    let c = load(file, how, k)?;
    if json {
        let v = to_json(&c, sample, seed)?;
        outln!("{}", serde_json::to_string_pretty(&v).expect("JSON values serialize"));
        return Ok(());
    }
    let s = &c.space;
    let programs = c.programs.len() + c.left_out.len();
    outln!("stage choices: {} of the {programs} programs (the input and its rewrite variants)", s.alternatives().len());
    for (candidate, why) in &c.left_out {
        outln!("  left out: {}: {why}", candidate.description);
    }
    outln!("stage variables:");
    for (e, edge) in s.edges().iter().enumerate() {
        let domain: Vec<&str> = s.domain(e).into_iter().map(Choice::name).collect();
        outln!("  stage({edge}) in {{{}}}", domain.join(", "));
    }
    if s.edges().is_empty() {
        outln!("  none: the program has no producer (`let x = toM(..)`)");
    }
    let t = std::time::Instant::now();
    let counts = s.count(seed).map_err(solver)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    for (k, (a, n)) in s.alternatives().iter().zip(&counts).enumerate() {
        outln!("{}: {n} mappings ({})", s.describe(k), c.programs[k].description);
        let kernels: Vec<String> = a.kernels.iter().map(|sp| sp.labels().join(" ")).collect();
        outln!("  kernels' maps: {}", kernels.join(" | "));
    }
    outln!("valid (stage choice, mapping) pairs: {} ({ms:.1} ms)", mc::total(&counts));
    outln!("samples:");
    for p in samples(s, sample, seed)? {
        outln!("  {}: {}", s.describe(p.alternative), s.show(&p));
    }
    Ok(())
}

/// `asked` (6 by default) distinct samples, or all there are, saying so on stderr.
fn samples(s: &mc::ChoiceSpace, asked: Option<usize>, seed: u64) -> CliResult<Vec<mc::Point>> {
    let asked = asked.unwrap_or(6);
    let out = s.sample(asked, seed).map_err(solver)?;
    if out.len() < asked {
        eprintln!(
            "note: {} distinct (stage choice, mapping) pairs sampled of the {asked} asked: the space has no more",
            out.len()
        );
    }
    Ok(out)
}

/// What [`space`] prints, as JSON.
fn to_json(c: &Choices, sample: Option<usize>, seed: u64) -> CliResult<serde_json::Value> {
    let s = &c.space;
    // An alternative's choices as `{"h": "local", ...}`.
    let stages = |k: usize| -> serde_json::Map<String, serde_json::Value> {
        let choices = &s.alternatives()[k].choices;
        s.edges().iter().zip(choices).map(|(e, ch)| (e.clone(), serde_json::json!(ch.name()))).collect()
    };
    let edges: Vec<serde_json::Value> = (0..s.edges().len())
        .map(|e| {
            let domain: Vec<&str> = s.domain(e).into_iter().map(Choice::name).collect();
            serde_json::json!({ "edge": s.edges()[e], "domain": domain })
        })
        .collect();
    let counts = s.count(seed).map_err(solver)?;
    let choices: Vec<serde_json::Value> = s
        .alternatives()
        .iter()
        .zip(&counts)
        .enumerate()
        .map(|(k, (a, n))| {
            let (count, exact, std_error) = count_parts(*n);
            let kernels: Vec<&[String]> = a.kernels.iter().map(|sp| sp.labels()).collect();
            serde_json::json!({
                "stages": stages(k),
                "program": c.programs[k].description,
                "kernels": kernels,
                "count": count,
                "count_exact": exact,
                "count_std_error": std_error,
            })
        })
        .collect();
    let (total, exact, std_error) = count_parts(mc::total(&counts));
    let samples: Vec<serde_json::Value> = samples(s, sample, seed)?
        .iter()
        .map(|p| serde_json::json!({ "stages": stages(p.alternative), "mapping": s.show(p) }))
        .collect();
    let left_out: Vec<serde_json::Value> = c
        .left_out
        .iter()
        .map(|(candidate, why)| serde_json::json!({ "program": candidate.description, "why": why }))
        .collect();
    Ok(serde_json::json!({
        "edges": edges,
        "choices": choices,
        "count": total,
        "count_exact": exact,
        "count_std_error": std_error,
        "samples": samples,
        "left_out": left_out,
    }))
}

/// `EDGE=CHOICE,...` (`h=local,v=global`), each edge given once.
fn parse_stages(text: &str) -> CliResult<Vec<(String, Choice)>> {
    let given = parse_choices(text)?;
    for (i, (edge, _)) in given.iter().enumerate() {
        if given[..i].iter().any(|(e, _)| e == edge) {
            return Err(Failure::Usage(format!("--stages: stage `{edge}` is given twice")));
        }
    }
    Ok(given)
}

fn parse_choices(text: &str) -> CliResult<Vec<(String, Choice)>> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (edge, choice) = part
                .split_once('=')
                .ok_or_else(|| Failure::Usage(format!("--stages expects EDGE=CHOICE, got `{part}`")))?;
            let c = Choice::parse(choice.trim()).ok_or_else(|| {
                Failure::Usage(format!(
                    "`{}` is not a stage choice: use inline, private, local or global",
                    choice.trim()
                ))
            })?;
            Ok((edge.trim().to_string(), c))
        })
        .collect()
}

/// `mapsat explain FILE --stages h=local --mapping ...`: exit 0 and "valid under stage h =
/// local", or 1 and why not (a choice not offered, maps the choice's kernels do not have, or
/// the violated constraints of each kernel), always naming the stage choice.
pub fn explain(file: &Path, mapping: &str, stages: &str, how: &How, k: usize) -> CliResult<()> {
    let given = parse_stages(stages)?;
    let c = load(file, how, k)?;
    let s = &c.space;
    let alternative = s.alternative_of(&given).map_err(solver)?;
    let stage = s.describe(alternative);
    let under = |e: String| Failure::Rejected(format!("invalid under {stage}: {e}"));
    let mappings = s.parse_mapping(alternative, mapping).map_err(|e| under(e.to_string()))?;
    let point = Point { alternative, mappings };
    let e = s.explain(&point).map_err(solver)?;
    let kernels = &s.alternatives()[alternative].kernels;
    if !e.valid {
        let why: Vec<String> = kernels
            .iter()
            .zip(&e.kernels)
            .filter(|(_, x)| !x.valid)
            .map(|(sp, x)| super::mapping::violations(sp, x))
            .collect();
        return Err(under(why.concat()));
    }
    // Under a profile, code generation may still refuse a kernel's valid mapping (the local
    // memory it keeps for a work group's results, the launch): as `explain` without --stages.
    let program = &c.programs[alternative].program;
    let stages = ir::stages::split(program).map_err(|e| Failure::Rejected(format!("error: {}", e.message)))?;
    let refused: Vec<String> = kernels
        .iter()
        .zip(&stages)
        .zip(point.mappings.iter().zip(&e.kernels))
        .filter_map(|((sp, k), (m, x))| {
            let q = sp.options().profile.as_ref()?;
            let r =
                mapsat::mapping::refused_by_codegen(sp, &k.program, m, &sp.options().sizes, x.local_sizes.clone(), q)?;
            Some(format!("kernel {}: valid in the mapping space, but {r}\n", k.program.name))
        })
        .collect();
    if !refused.is_empty() {
        return Err(under(refused.concat()));
    }
    outln!("valid under {stage} ({})", c.programs[alternative].description);
    Ok(())
}

//! `mapsat tune --variants K`: the input program and K - 1 variants of it from the rewrite stage
//! (`mapsat::variants`), each tuned as one program in `DIR/variant_NN/`, and the fastest
//! correct kernel over all of them. Each tune's best time was measured in its own tune; so that
//! a change of load between tunes does not choose the winner, the best kernels of all variants
//! are then measured again together, interleaved ([`confirm`]), and ranked by those times. For
//! a program of several kernels, each kernel is also rewritten and tuned on its own, and the
//! fastest candidate of each joined into one more variant ([`per_kernel`]). The summary is on
//! standard output and in `DIR/variants.json`.

use super::{rejected, tune_program, TuneArgs, Tuned};
use crate::cli::{checked_sizes, CliResult, Failure, Source};
use mapsat::ir::profile::Profile;
use mapsat::ir::{self, Program, Sizes};
use mapsat::rewrite::{self as rw, Budget, Options};
use mapsat_tuner::measure::{self, DeviceSpec};
use mapsat_tuner::tune::report::{fmt_gflops, fmt_ms};
use std::path::{Path, PathBuf};

/// One variant's outcome.
struct Outcome {
    candidate: mapsat::variants::Candidate,
    dir: String,
    /// The tune's best, or why it failed.
    tuned: Result<Tuned, String>,
    /// Its best kernel measured again with the others' (milliseconds, GFLOP/s).
    confirmed: Option<(f64, f64)>,
}

/// Rounds of the measurement of the variants' best kernels together.
const ROUNDS: usize = 3;

/// Tunes the input and its variants (see the module documentation).
pub(super) fn tune_variants(
    a: &TuneArgs,
    src: &Source,
    p: Program,
    given: &Sizes,
    device: DeviceSpec,
    profile: Profile,
    k: usize,
) -> CliResult<()> {
    let sizes = checked_sizes(src, &p, &a.sizes)?;
    let opts = Options {
        sizes: sizes.clone(),
        budget: Budget {
            nodes: a.rewrite_node_limit,
            time: crate::cli::seconds("--rewrite-time-limit", a.rewrite_time_limit)?,
            ..Budget::default()
        },
        ..Options::default()
    };
    let found = mapsat::variants::candidates(&p, k, &opts).map_err(rejected)?;
    let r = &found.report;
    outln!(
        "rewrite: {} e-nodes, {} e-classes, {} iterations, stopped: {}, {:.3} s; {}",
        r.nodes,
        r.classes,
        r.iterations,
        r.stop.name(),
        r.time.as_secs_f64(),
        match found.list.len() {
            1 => "only the input program to tune (no variant)".to_string(),
            2 => "2 programs to tune (the input and 1 variant)".to_string(),
            n => format!("{n} programs to tune (the input and {} variants)", n - 1),
        }
    );
    let total = found.list.len();
    // Before any tune: no variant's folder, nor the summary, is where the input is.
    super::super::keep_inputs(&a.output.join("variants.json"), &super::input_files(a, src))?;
    let dirs: Vec<PathBuf> = (0..=total).map(|n| a.output.join(format!("variant_{n:02}"))).collect();
    let dirs = [dirs, vec![a.output.join("kernels")]].concat();
    super::not_inside(a, src, &dirs)?;
    super::hold_output(&a.output)?;
    // Each variant's tune would refuse its log, then the summary of none be written: say so first.
    if let Some(log) = dirs.iter().find_map(|d| a_log_in(d, 3)).filter(|_| !a.resume) {
        return Err(Failure::Rejected(format!(
            "error: nothing is tuned: {} exists, from an earlier tune of variants into {}: continue it with --resume, \
             or choose another -o",
            log.display(),
            a.output.display()
        )));
    }
    let mut outcomes = Vec::with_capacity(total);
    for (n, c) in found.list.into_iter().enumerate() {
        outln!("variant {n} of {}: {}, structure {}", total, c.description, c.signature);
        outcomes.push(tune_candidate(a, format!("variant_{n:02}"), c, false, given, device, &profile)?);
    }
    let mut kernels = Vec::new();
    if let Some(o) = per_kernel(a, &p, k, &sizes, &opts, &outcomes, (given, device, &profile), &mut kernels)? {
        outcomes.push(o);
    }
    confirm(a, device, &mut outcomes);
    report(a, &sizes, &found.report, &outcomes, kernels)
}

/// A tune's log (`tune.jsonl`) in `dir` or in its folders down to `depth` levels, if there is
/// one (a variant's own, or a kernel's of a variant of several kernels).
fn a_log_in(dir: &Path, depth: usize) -> Option<PathBuf> {
    let log = dir.join("tune.jsonl");
    if log.exists() {
        return Some(log);
    }
    let entries = std::fs::read_dir(dir).ok().filter(|_| depth > 0)?;
    entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).find_map(|e| a_log_in(&e.path(), depth - 1))
}

/// The name of a variant's program file in its folder: `variant.lift`, or for a program named
/// `variant`, whose tuned kernel's mapped program takes that name, `variant_program.lift`.
fn program_file(p: &Program) -> &'static str {
    if p.name == "variant" {
        "variant_program.lift"
    } else {
        "variant.lift"
    }
}

/// Tunes one candidate program in `DIR/dir/` (its text in [`program_file`] there), a `kernel`
/// of a program of several or a whole program.
fn tune_candidate(
    a: &TuneArgs,
    dir: String,
    c: mapsat::variants::Candidate,
    kernel: bool,
    given: &Sizes,
    device: DeviceSpec,
    profile: &Profile,
) -> CliResult<Outcome> {
    let out = a.output.join(&dir);
    let text = format!(
        "// {dir} of {}: {}, structure {}.\n{}",
        a.file.display(),
        c.description,
        c.signature,
        ir::print(&c.program)
    );
    super::super::create_dir(&out)?;
    let file = out.join(program_file(&c.program));
    super::super::write(&file, &text)?;
    // The program as its file has it (binder names as printed: its kernels' names).
    let program = ir::parse(&text).unwrap_or_else(|_| c.program.clone());
    let vsrc = Source { name: file.display().to_string(), text };
    let tuned = match tune_program(a, &vsrc, program, kernel, given, device, profile.clone(), &out, None) {
        Ok(t) => Ok(t),
        // Bad usage is the same for every variant: stop.
        Err(Failure::Usage(m)) => return Err(Failure::Usage(m)),
        Err(Failure::Rejected(m)) => {
            eprintln!("{dir}: {}", m.trim_end());
            Err(m.trim_end().to_string())
        }
    };
    Ok(Outcome { candidate: c, dir, tuned, confirmed: None })
}

/// For a program of several kernels, one more variant: each kernel rewritten on its own
/// ([`mapsat::variants::kernels`]), its candidates tuned in `DIR/kernels/KERNEL/variant_NN/`,
/// and the fastest correct one of each kernel joined into one program. The kernels' times do
/// not depend on each other's choices, so that sequence is the fastest of those candidates:
/// the variant is those candidates' tuned kernels, its time the sum of theirs (not tuned
/// again). `None` for a program of one kernel, when a kernel has no correct candidate, or when
/// the joined program is one of the `tuned` ones. Each kernel's candidates and their times are
/// added to `summary` (for `variants.json`).
#[allow(clippy::too_many_arguments)]
fn per_kernel(
    a: &TuneArgs,
    p: &Program,
    k: usize,
    sizes: &Sizes,
    opts: &Options,
    tuned: &[Outcome],
    (given, device, profile): (&Sizes, DeviceSpec, &Profile),
    summary: &mut Vec<serde_json::Value>,
) -> CliResult<Option<Outcome>> {
    if ir::stages::count(p) < 2 || k < 2 {
        return Ok(None);
    }
    let kernels = mapsat::variants::kernels(p, k, opts).map_err(rejected)?;
    // The sizes several kernels use are held at their defaults, as in a tune of the whole
    // program: each kernel tuned alone would choose its own value, and the joined program
    // runs at one.
    let fixed = mapsat::stages::tuning_sizes(p, given);
    let mut all = Vec::with_capacity(kernels.len());
    for kernel in &kernels {
        let outcomes = tune_kernel(a, kernel, (&fixed, device, profile))?;
        let entries: Vec<serde_json::Value> = outcomes.iter().map(brief).collect();
        let name = &kernel.stage.program.name;
        summary.push(serde_json::json!({ "kernel": name, "candidates": entries, "fastest": best(&outcomes) }));
        all.push(outcomes);
    }
    let Some(choice) = choose(a, &kernels, &all)? else {
        let without: Vec<&str> = kernels
            .iter()
            .zip(&all)
            .filter(|(_, o)| best(o).is_none())
            .map(|(k, _)| k.stage.program.name.as_str())
            .collect();
        outln!(
            "no program of kernels rewritten on their own: no candidate of kernel {} could be tuned and ran correctly (see above)",
            without.join(", ")
        );
        return Ok(None);
    };
    let mut program = match mapsat::variants::join(p, &kernels, &choice, sizes) {
        Ok(q) => q,
        Err(e) => {
            outln!("the kernels' fastest candidates do not join into one program ({e})");
            return Ok(None);
        }
    };
    rw::tiles::pin_defaults(&mut program, sizes);
    let text = ir::print(&program);
    if tuned.iter().any(|o| ir::print(&o.candidate.program) == text) {
        outln!("the kernels' fastest candidates joined are a program tuned already");
        return Ok(None);
    }
    let parts: Vec<&Outcome> = all.iter().zip(&choice).map(|(o, c)| &o[*c]).collect();
    let chosen: Vec<String> = parts.iter().map(|o| o.dir.clone()).collect();
    let candidate = mapsat::variants::Candidate {
        signature: rw::extract::signature(&program),
        cost: None,
        description: format!("each kernel rewritten on its own, the fastest of each ({})", chosen.join(", ")),
        stages: rw::stage_choice::of(p, &program),
        program,
    };
    let dir = format!("variant_{:02}", tuned.len());
    outln!("{dir}: {}, structure {}", candidate.description, candidate.signature);
    let note = format!(
        "{dir} of {}: {}, structure {}; its kernels were tuned in those folders",
        a.file.display(),
        candidate.description,
        candidate.signature
    );
    super::super::create_dir(&a.output.join(&dir))?;
    let file = a.output.join(&dir).join(program_file(&candidate.program));
    super::super::write(&file, &format!("// {note}.\n{text}"))?;
    let tuned = assembled(&parts).ok_or_else(|| "a chosen candidate has no tuned kernel".to_string());
    if let Ok(t) = &tuned {
        if let Some(cmd) = joined_run_command(a, &file, &candidate.program, t, given, device) {
            outln!("run the whole program again: {cmd}");
        }
    }
    Ok(Some(Outcome { candidate, dir, tuned, confirmed: None }))
}

/// The `mapsat run` command that runs and checks the joined program `q` (in `file`) as its
/// kernels were tuned: the combined mapping, the tune's sizes, each kernel's work group.
fn joined_run_command(
    a: &TuneArgs,
    file: &std::path::Path,
    q: &Program,
    t: &Tuned,
    given: &Sizes,
    device: DeviceSpec,
) -> Option<String> {
    let names: Vec<String> = ir::stages::split(q).ok()?.into_iter().map(|s| s.program.name).collect();
    let locals: Vec<(&str, &[i64])> = names.iter().zip(&t.locals).map(|(n, l)| (n.as_str(), &l[..])).collect();
    let sizes = t.tuning.or(given);
    Some(super::whole_run_command(a, file, &t.mapping, &sizes, &locals, device.dialect()))
}

/// The candidate of each kernel to join: the fastest correct one (`None` when a kernel has
/// none), recorded in `DIR/kernels/joined.json`; resumed, the recorded ones (measured again,
/// another could be the fastest).
fn choose(a: &TuneArgs, kernels: &[mapsat::variants::Kernel], all: &[Vec<Outcome>]) -> CliResult<Option<Vec<usize>>> {
    let Some(found) = all.iter().map(|o| best(o)).collect::<Option<Vec<usize>>>() else { return Ok(None) };
    let names: Vec<&str> = kernels.iter().map(|k| k.stage.program.name.as_str()).collect();
    let record = a.output.join("kernels").join("joined.json");
    let recorded = a.resume.then(|| recorded_choice(&record, &names)).flatten();
    let fits = |c: &Vec<usize>| c.iter().zip(all).all(|(i, o)| o.get(*i).is_some_and(|o| time(o).is_some()));
    let choice = recorded.filter(fits).unwrap_or(found);
    let json = serde_json::json!({ "kernels": names, "choice": choice });
    super::super::write(&record, &(json.to_string() + "\n"))?;
    Ok(Some(choice))
}

/// The tuned kernels of `parts` (one candidate per kernel, in order) as one program's: their
/// times summed (each measured again with its kernel's other candidates where that ran).
fn assembled(parts: &[&Outcome]) -> Option<Tuned> {
    let (mut ms, mut mflop) = (0.0, 0.0);
    let mut out = Tuned {
        device: String::new(),
        best_ms: None,
        gflops: 0.0,
        mapping: String::new(),
        lifts: Vec::new(),
        locals: Vec::new(),
        tuning: Sizes::new(),
    };
    let mut mappings = Vec::new();
    for o in parts {
        let t = o.tuned.as_ref().ok()?;
        let (m, g) = o.confirmed.unwrap_or((t.best_ms?, t.gflops));
        ms += m;
        mflop += g * m;
        mappings.push(t.mapping.clone());
        out.device = t.device.clone();
        out.lifts.extend(t.lifts.iter().cloned());
        out.locals.extend(t.locals.iter().cloned());
        out.tuning = out.tuning.or(&t.tuning);
    }
    out.best_ms = (ms > 0.0).then_some(ms);
    out.gflops = if ms > 0.0 { mflop / ms } else { 0.0 };
    out.mapping = mappings.join(",");
    Some(out)
}

/// Measures the best kernel of every variant again, in this process, interleaved: `ROUNDS`
/// rounds of twice `--runs` launches each, checked against the interpreter in the first round;
/// a variant's time is the median of its rounds' medians. Only when every tuned variant is one
/// kernel (a program of several kernels keeps its tunes' times, and so do all the others).
fn confirm(a: &TuneArgs, device: DeviceSpec, outcomes: &mut [Outcome]) {
    let tuned: Vec<usize> =
        (0..outcomes.len()).filter(|i| outcomes[*i].tuned.as_ref().is_ok_and(|t| t.best_ms.is_some())).collect();
    if tuned.len() < 2 || tuned.iter().any(|i| outcomes[*i].tuned.as_ref().is_ok_and(|t| t.lifts.len() != 1)) {
        return;
    }
    let mut kernels = Vec::new();
    for &i in &tuned {
        let Ok(t) = &outcomes[i].tuned else { return };
        let loaded = std::fs::read_to_string(&t.lifts[0]).map_err(|e| e.to_string()).and_then(|text| {
            let p = ir::parse(&text).map_err(|e| e.to_string())?;
            let sizes = p.resolve_sizes(&Sizes::new()).map_err(|e| e.to_string())?;
            let inputs = ir::interp::random_inputs(&p, &sizes, 1).map_err(|e| e.to_string())?;
            Ok((p, sizes, inputs))
        });
        match loaded {
            Ok(k) => kernels.push((i, k, t.locals[0].clone(), Vec::new())),
            Err(e) => {
                eprintln!("variant {i}: its best kernel cannot be measured again ({e}); ranking by the tunes' times");
                return;
            }
        }
    }
    eprintln!("measuring the best kernels of the {} variants again, together", kernels.len());
    for round in 0..ROUNDS {
        for (i, (p, sizes, inputs), local, times) in kernels.iter_mut() {
            let cfg = measure::RunConfig {
                runs: a.runs.max(1) * 2,
                check: round == 0,
                reassociate: !a.strict_math,
                ..Default::default()
            };
            // No work group: code generation's (a kernel without work-group dimensions).
            let local = (!local.is_empty()).then(|| local.clone());
            match measure::run(p, sizes, local, inputs, device, &cfg) {
                Ok(r) if !matches!(&r.check, Some(c) if !c.ok) => times.push((r.median_ms, r.flops)),
                Ok(_) => eprintln!("variant {i}: its best kernel is wrong when measured again"),
                Err(e) => eprintln!("variant {i}: its best kernel failed when measured again: {e}"),
            }
        }
    }
    if kernels.iter().any(|k| k.3.len() != ROUNDS) {
        eprintln!("ranking the variants by their tunes' times");
        return;
    }
    for (i, _, _, times) in kernels {
        let ms = measure::median(&times.iter().map(|t| t.0).collect::<Vec<_>>());
        outcomes[i].confirmed = Some((ms, measure::gflops(times[0].1, ms)));
    }
}

/// A variant's structure, and its stage choices when the input has producers.
fn named(c: &mapsat::variants::Candidate) -> String {
    match c.stages.is_empty() {
        true => c.signature.clone(),
        false => format!("{} (stages {})", c.signature, rw::stage_choice::describe(&c.stages)),
    }
}

/// A variant's time: measured again with the others' when that ran, else its tune's best.
fn time(o: &Outcome) -> Option<f64> {
    o.confirmed.map(|c| c.0).or_else(|| o.tuned.as_ref().ok().and_then(|t| t.best_ms))
}

/// The index of the fastest variant with a correct kernel.
fn best(outcomes: &[Outcome]) -> Option<usize> {
    (0..outcomes.len()).filter(|i| time(&outcomes[*i]).is_some()).min_by(|i, j| {
        time(&outcomes[*i]).unwrap_or(f64::INFINITY).total_cmp(&time(&outcomes[*j]).unwrap_or(f64::INFINITY))
    })
}

/// Tunes each candidate of one kernel on its own, in `DIR/kernels/KERNEL/variant_NN/`, their
/// best kernels then measured again together.
fn tune_kernel(
    a: &TuneArgs,
    kernel: &mapsat::variants::Kernel,
    (given, device, profile): (&Sizes, DeviceSpec, &Profile),
) -> CliResult<Vec<Outcome>> {
    let name = &kernel.stage.program.name;
    let total = kernel.candidates.list.len();
    let mut outcomes = Vec::with_capacity(total);
    for (n, c) in kernel.candidates.list.iter().enumerate() {
        outln!("kernel {name} on its own, candidate {n} of {total}: {}, structure {}", c.description, c.signature);
        let dir = format!("kernels/{name}/variant_{n:02}");
        outcomes.push(tune_candidate(a, dir, c.clone(), true, given, device, profile)?);
    }
    confirm(a, device, &mut outcomes);
    Ok(outcomes)
}

/// The candidates an earlier tune of these kernels joined (`DIR/kernels/joined.json`), if it
/// recorded them.
fn recorded_choice(path: &Path, names: &[&str]) -> Option<Vec<usize>> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let same = v["kernels"].as_array()?.iter().map(|n| n.as_str()).eq(names.iter().map(|n| Some(*n)));
    let choice: Option<Vec<usize>> = v["choice"].as_array()?.iter().map(|c| Some(c.as_u64()? as usize)).collect();
    choice.filter(|c| same && c.len() == names.len())
}

/// A kernel's candidate in `variants.json`: where it was tuned, what it is, its time.
fn brief(o: &Outcome) -> serde_json::Value {
    serde_json::json!({
        "dir": o.dir,
        "description": o.candidate.description,
        "signature": o.candidate.signature,
        "best_ms": time(o),
        "measured_again": o.confirmed.is_some(),
    })
}

/// The summary on standard output and in `DIR/variants.json` (with each kernel's candidates
/// on their own, `kernels_on_their_own`, for a program of several kernels).
fn report(
    a: &TuneArgs,
    sizes: &Sizes,
    rewrite: &rw::Report,
    outcomes: &[Outcome],
    kernels: Vec<serde_json::Value>,
) -> CliResult<()> {
    let winner = best(outcomes);
    let again = outcomes.iter().any(|o| o.confirmed.is_some());
    let device = outcomes.iter().find_map(|o| o.tuned.as_ref().ok().map(|t| t.device.clone())).unwrap_or_default();
    let input = input_mflop(outcomes);
    let counted = match input {
        Some(m) if m < 1.0 => format!("; GFLOP/s count the input program's {:.0} FLOP for every variant", m * 1e6),
        Some(m) => format!("; GFLOP/s count the input program's {m:.3} MFLOP for every variant"),
        None => String::new(),
    };
    let on = if device.is_empty() { String::new() } else { format!(" on {device}") };
    outln!("variants{on} ({} guided and {} random trials each{counted}):", a.trials, a.random_trials);
    let entries: Vec<_> = outcomes.iter().enumerate().map(|(n, o)| entry(a, n, o, winner == Some(n), input)).collect();
    let mut summary = serde_json::json!({
        "input": a.file.display().to_string(),
        "sizes": sizes,
        "device": device,
        "trials_per_variant": a.trials,
        "random_trials_per_variant": a.random_trials,
        "rewrite": {
            "node_limit": a.rewrite_node_limit,
            "time_limit_s": a.rewrite_time_limit,
            "nodes": rewrite.nodes,
            "classes": rewrite.classes,
            "iterations": rewrite.iterations,
            "stop_reason": rewrite.stop.name(),
            "saturation_s": rewrite.time.as_secs_f64(),
        },
        "variants": entries,
        "kernels_on_their_own": kernels,
        "gflops_of": if input.is_some() { "the input program's operations" } else { "each variant's own operations" },
        "ranked_by": if again { "the best kernels measured again together" } else { "each tune's best time" },
        "best": winner,
    });
    if let Some(w) = winner {
        report_winner(&mut summary, outcomes, w, input);
    }
    let path = a.output.join("variants.json");
    let text = serde_json::to_string_pretty(&summary).map_err(rejected)? + "\n";
    super::super::write(&path, &text)?;
    outln!("wrote {}", path.display());
    let why = match outcomes.iter().any(|o| o.tuned.is_ok()) {
        true => "no variant has a kernel that ran correctly",
        false => "no variant could be tuned",
    };
    match winner {
        Some(_) => Ok(()),
        None => Err(Failure::Rejected(format!("error: {why} (see {})", path.display()))),
    }
}

/// The floating-point operations, in MFLOP, that every variant's GFLOP/s counts: the input
/// program's (variant 0's kernels), so that a variant that computes some values more than
/// once does not look faster than one that does not; `None` when the input has no correct
/// kernel (each variant's own count is used then) or no floating-point operations.
fn input_mflop(outcomes: &[Outcome]) -> Option<f64> {
    let t = outcomes.first()?.tuned.as_ref().ok()?;
    Some(t.gflops * t.best_ms?).filter(|m| *m > 0.0)
}

/// The GFLOP/s of a time `ms`: the input's operations over it where known, else `own`.
fn rate(input: Option<f64>, ms: f64, own: f64) -> f64 {
    input.map_or(own, |m| m / ms)
}

/// Variant `n`'s line on standard output and its entry in `variants.json` (GFLOP/s of the
/// `input`'s MFLOP, see [`input_mflop`]).
fn entry(a: &TuneArgs, n: usize, o: &Outcome, best: bool, input: Option<f64>) -> serde_json::Value {
    let c = &o.candidate;
    let mark = if best { " <- best" } else { "" };
    let rel = |p: &Path| p.strip_prefix(&a.output).unwrap_or(p).display().to_string();
    let mut e = serde_json::json!({
        "variant": n,
        "dir": o.dir,
        "program": format!("{}/{}", o.dir, program_file(&c.program)),
        "description": c.description,
        "signature": c.signature,
        "static_cost": c.cost,
        "stages": crate::cli::rewrite::stages_json(&c.stages),
        "best": best,
    });
    match &o.tuned {
        Ok(Tuned { best_ms: Some(ms), gflops, mapping, lifts, locals, .. }) => {
            let again = match o.confirmed {
                Some((ms, g)) => format!("; measured again: {}, {}", fmt_ms(ms), fmt_gflops(rate(input, ms, g))),
                None => String::new(),
            };
            let tune_gflops = rate(input, *ms, *gflops);
            outln!("  variant {n} {}: tune {}, {}{again}{mark}", named(c), fmt_ms(*ms), fmt_gflops(tune_gflops));
            e["tune_ms"] = serde_json::json!(ms);
            e["tune_gflops"] = serde_json::json!(tune_gflops);
            let (ms, g) = o.confirmed.unwrap_or((*ms, *gflops));
            e["best_ms"] = serde_json::json!(ms);
            e["best_gflops"] = serde_json::json!(rate(input, ms, g));
            e["measured_again"] = serde_json::json!(o.confirmed.is_some());
            e["mapping"] = serde_json::json!(mapping);
            e["kernels"] = serde_json::json!(lifts.iter().map(|p| rel(p)).collect::<Vec<_>>());
            e["work_groups"] = serde_json::json!(locals);
        }
        Ok(_) => {
            outln!("  variant {n} {}: no candidate ran correctly", named(c));
            e["error"] = serde_json::json!("no candidate ran correctly");
        }
        Err(m) => {
            outln!("  variant {n} {}: not tuned ({})", named(c), m.lines().next().unwrap_or(""));
            e["error"] = serde_json::json!(m);
        }
    }
    e
}

/// The winner `w`'s time and speedup over the input in `summary`, and its line and kernels on
/// standard output.
fn report_winner(summary: &mut serde_json::Value, outcomes: &[Outcome], w: usize, input: Option<f64>) {
    let Ok(t) = &outcomes[w].tuned else { return };
    let (ms, gflops) = outcomes[w].confirmed.unwrap_or((t.best_ms.unwrap_or(0.0), t.gflops));
    let gflops = rate(input, ms, gflops);
    summary["best_ms"] = serde_json::json!(ms);
    summary["best_gflops"] = serde_json::json!(gflops);
    let speedup = outcomes.first().and_then(time).map(|i| i / ms);
    summary["speedup_over_input"] = serde_json::json!(speedup);
    let over = match (speedup, outcomes.first().map(|o| &o.tuned)) {
        (Some(s), _) => format!("{s:.2}x the input program's best"),
        (None, Some(Err(_))) => "the input program could not be tuned (see above)".into(),
        (None, _) => "the input program has no correct kernel".into(),
    };
    outln!("best: variant {w}, {}, {} ({over})", fmt_ms(ms), fmt_gflops(gflops));
    for (l, local) in t.lifts.iter().zip(&t.locals) {
        let local = super::local_flag(None, local).map(|f| format!(" {f}")).unwrap_or_default();
        outln!("  kernel {} (mapsat run FILE --reassociate{local})", l.display());
    }
}

//! `mapsat tune`, `mapsat predict` and the hidden `mapsat worker`: the optimizer on the command
//! line.

use super::{given_sizes, CliResult, Failure, SizeArgs, Source};
use indicatif::{ProgressBar, ProgressStyle};
use mapsat::ir::profile::Profile;
use mapsat::ir::stages;
use mapsat::rewrite as rw;
use mapsat::tuning::{KernelTune, Tuning};
use mapsat_codegen::Dialect;
use mapsat_constraints::Code;
use mapsat_tuner::measure::{self, DeviceSpec};
use mapsat_tuner::tune::log::{Phase, Trial};
use mapsat_tuner::tune::model::Learned;
use mapsat_tuner::tune::task::{Candidate, Task};
use mapsat_tuner::tune::worker::Fault;
use mapsat_tuner::tune::{self, Progress, TuneError, TuneOptions};
use std::path::{Path, PathBuf};

mod variants;

/// What `mapsat tune` takes (see `mapsat tune --help`).
#[derive(clap::Args)]
pub struct TuneArgs {
    /// The IR file (high level: its maps are mapped by the tuner).
    file: PathBuf,
    #[command(flatten)]
    sizes: SizeArgs,
    /// `opencl:PLATFORM:DEVICE` or `cuda:N` (see `mapsat devices`).
    #[arg(long, default_value = "opencl:0:0")]
    device: String,
    /// Device profile (built-in name or TOML file); default: the OpenCL device's own limits.
    #[arg(long, value_name = "PROFILE")]
    target: Option<String>,
    /// Candidates measured by the model-guided search (per variant with --variants).
    #[arg(long, default_value_t = 64)]
    trials: usize,
    /// Candidates measured by random valid sampling, the baseline of the report (0: none; per
    /// variant with --variants).
    #[arg(long = "random-trials", default_value_t = 32)]
    random_trials: usize,
    /// Candidates per batch (the learned model is retrained after each; the first batch is
    /// ranked by the analytical model).
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// Timed runs per kernel (the median is its time).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Longest wait for one kernel's build and runs, in seconds (`inf`: no limit).
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Tune K programs: the input (variant 0) and K - 1 variants of it from the rewrite stage
    /// (`mapsat rewrite`), each with its own tunable sizes (new tile sizes included) and its own
    /// --trials and --random-trials, in DIR/variant_NN/ (log, report, best kernel); the fastest
    /// correct kernel over all of them wins (DIR/variants.json).
    #[arg(long, value_name = "K")]
    variants: Option<usize>,
    /// With --variants: stop saturating once the e-graph has more e-nodes.
    #[arg(long, default_value_t = rw::saturate::NODE_LIMIT, value_name = "N")]
    rewrite_node_limit: usize,
    /// With --variants: stop saturating after this many seconds (a time limit reached may change
    /// the variants between runs; --resume then refuses the logs of changed ones).
    #[arg(long, default_value_t = rw::saturate::TIME_LIMIT.as_secs_f64(), value_name = "S")]
    rewrite_time_limit: f64,
    /// The tuning log (JSON lines); default: DIR/tune.jsonl (DIR/variant_NN/tune.jsonl with
    /// --variants).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Continue the log of an interrupted tune (each variant's log with --variants).
    #[arg(long)]
    resume: bool,
    /// A model saved by an earlier tune (`LOG.model.json`): ranks the first batch and joins
    /// its training data to this tune's.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Turn off the sequential map fusion heuristic (rule 8).
    #[arg(long)]
    no_fusion: bool,
    /// Build OpenCL kernels without `-cl-unsafe-math-optimizations`: no reassociation of
    /// floating-point sums (slower: the device compiler cannot vectorize them).
    #[arg(long)]
    strict_math: bool,
    /// Output folder: the best kernel, the report and the plot.
    #[arg(long, short, value_name = "DIR")]
    output: PathBuf,
    /// Tests only: the worker simulates a fault on one measurement (`hang@3`, `crash@5`).
    #[arg(long, hide = true, value_name = "FAULT@N")]
    inject_fault: Option<String>,
}

/// What `mapsat predict` takes.
#[derive(clap::Args)]
pub struct PredictArgs {
    /// The IR file (high level).
    file: PathBuf,
    #[command(flatten)]
    sizes: SizeArgs,
    /// The mapping, `A=W0,B=L0,...`.
    #[arg(long, value_name = "LABEL=CODE,...")]
    mapping: String,
    /// Work-group size, e.g. `64,4,1` (default: code generation's, or the space's local sizes);
    /// for a program of several kernels `KERNEL:X,Y,Z` gives one kernel its own, as `tune`
    /// prints them (repeat the flag).
    #[arg(long, value_name = "[KERNEL:]X,Y,Z")]
    local: Vec<String>,
    /// Device profile (built-in name or TOML file).
    #[arg(long, value_name = "PROFILE", default_value = "pocl-cpu")]
    target: String,
    /// A learned model saved by a tune (`LOG.model.json`).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Turn off the sequential map fusion heuristic (rule 8).
    #[arg(long)]
    no_fusion: bool,
    /// As for `mapsat tune`: kernels built without reassociation of floating-point sums.
    #[arg(long)]
    strict_math: bool,
}

/// Said where a kernel has nothing to map, in a tune without `--variants`.
const VARIANTS_HINT: &str = "; `mapsat tune --variants K` also tunes rewrite variants, such as a reduction \
     split into partial ones mapped in parallel where a tile size divides its length";

fn rejected(e: impl std::fmt::Display) -> Failure {
    Failure::Rejected(format!("error: {e}"))
}

fn tune_error(e: TuneError) -> Failure {
    match e {
        TuneError::Options(m) => Failure::Usage(m),
        e => rejected(e),
    }
}

/// The device profile: `--target`, else the OpenCL device's own limits (with the rates of the
/// built-in `pocl-cpu` profile for a CPU device, whose rates were measured on a like machine).
fn profile_for(target: Option<&str>, device: DeviceSpec) -> CliResult<Profile> {
    mapsat::target::tune_profile(target, device).map_err(super::mapping::failure)
}

fn parse_fault(s: &str) -> CliResult<(Fault, u64)> {
    let bad = || Failure::Usage(format!("--inject-fault expects hang@N or crash@N, not `{s}`"));
    let (kind, n) = s.split_once('@').ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    match kind {
        "hang" => Ok((Fault::Hang, n)),
        "crash" => Ok((Fault::Crash, n)),
        _ => Err(bad()),
    }
}

/// A progress bar per phase on standard error (hidden when it is not a terminal), and notes.
struct Bar {
    bar: Option<ProgressBar>,
}

impl Progress for Bar {
    fn phase(&mut self, phase: Phase, total: usize, done: usize) {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
        let name = match phase {
            Phase::Guided => "guided search",
            Phase::Random => "random valid sampling",
        };
        let bar = ProgressBar::new(total as u64).with_position(done as u64);
        let style = ProgressStyle::with_template("{prefix:>22} [{bar:30}] {pos}/{len} trials, {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name);
        self.bar = Some(bar);
    }

    fn trial(&mut self, t: &Trial, best: f64, failures: usize) {
        if let Some(b) = &self.bar {
            b.set_position(t.trial + 1);
            b.set_message(format!("best {best:.2} GFLOP/s, {failures} failed"));
        }
    }

    fn note(&mut self, message: &str) {
        match &self.bar {
            Some(b) => b.println(message),
            None => eprintln!("{message}"),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
    }
}

/// `mapsat tune`. A program with kernel boundaries (`mapsat::ir::stages`) is tuned one
/// kernel at a time: each stage's time does not depend on the others' choices, so the fastest
/// sequence is the fastest kernel of each stage. With `--variants K`, K programs (the input and
/// its rewrite variants) are tuned so, each in its own folder, and the fastest wins.
pub fn tune(a: &TuneArgs) -> CliResult<()> {
    if a.variants == Some(0) {
        return Err(Failure::Usage("--variants must be at least 1".into()));
    }
    if a.variants.is_some() && a.log.is_some() {
        return Err(Failure::Usage(
            "--log: with --variants each variant keeps its log, DIR/variant_NN/tune.jsonl".into(),
        ));
    }
    super::seconds("--rewrite-time-limit", a.rewrite_time_limit)?;
    let src = Source::read(&a.file)?;
    let p = src.parse()?;
    mapsat::ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let given = given_sizes(&p, &a.sizes)?;
    let device: DeviceSpec = a.device.parse().map_err(|e: measure::MeasureError| Failure::Usage(e.to_string()))?;
    super::seconds("--timeout", a.timeout)?;
    if a.resume && a.model.is_some() {
        return Err(Failure::Usage("--model starts a tune from a prior model; --resume continues one".into()));
    }
    let profile = profile_for(a.target.as_deref(), device)?;
    super::not_a_file(&a.output)?;
    match a.variants {
        None => {
            let tuned = tune_program(a, &src, p, false, &given, device, profile, &a.output, a.log.clone())?;
            match tuned.best_ms {
                Some(_) => Ok(()),
                None => Err(Failure::Rejected(format!(
                    "error: no candidate ran correctly: each was refused by code generation, failed or gave a wrong result (see the report in {})",
                    a.output.display()
                ))),
            }
        }
        Some(k) => variants::tune_variants(a, &src, p, &given, device, profile, k),
    }
}

/// The best of one program's tune: its time (the sum of its kernels' for a program of several
/// kernels), GFLOP/s, mapping, and the mapped `.lift` file of each kernel.
pub(super) struct Tuned {
    /// The device's description.
    pub device: String,
    /// The program's best time in milliseconds (`None`: no correct kernel).
    pub best_ms: Option<f64>,
    /// Its GFLOP/s (by the kernels' own flop counts).
    pub gflops: f64,
    /// The mapping of each kernel, comma-separated.
    pub mapping: String,
    /// The best kernel's mapped program, one per kernel.
    pub lifts: Vec<PathBuf>,
    /// The best kernel's work group, one per kernel (`mapsat run --local`).
    pub locals: Vec<Vec<i64>>,
    /// The tunable sizes of the best kernels, of every kernel (`mapsat run --size`).
    pub tuning: mapsat::ir::Sizes,
}

/// Tunes one program into `out`: one kernel, or one kernel at a time (see [`tune`]). A
/// `kernel` of a program of several (a kernel's candidate in `tune --variants`) without a map
/// is tuned as its one mapping, as in the program ([`Task::with_a_choice`] is not asked of it).
#[allow(clippy::too_many_arguments)]
pub(super) fn tune_program(
    a: &TuneArgs,
    src: &Source,
    p: mapsat::ir::Program,
    kernel: bool,
    given: &mapsat::ir::Sizes,
    device: DeviceSpec,
    profile: Profile,
    out: &Path,
    log: Option<PathBuf>,
) -> CliResult<Tuned> {
    if stages::count(&p) == 1 {
        let log = log.unwrap_or_else(|| out.join("tune.jsonl"));
        check_outputs(a, src, &p.name, device.dialect(), out, &log)?;
        hold_output(&a.output)?;
        let (task, k) = tune_one(a, src, p, kernel, given, device, profile, out, &log)?;
        summarize(&task, &k, &a.device);
        return Ok(tuned(&[k.summary], &[k.written]));
    }
    if log.is_some() {
        return Err(Failure::Usage(
            "--log: a program of several kernels keeps one log per kernel, DIR/KERNEL/tune.jsonl".into(),
        ));
    }
    // The vector widths shared by kernels, or in a boundary's type, and the tunable sizes
    // several kernels use are fixed (not tuned), and said so.
    let fixed = mapsat::stages::tuning_sizes(&p, given);
    let held: Vec<String> = fixed.iter().filter(|(k, _)| !given.contains(k)).map(|(k, v)| format!("{k}={v}")).collect();
    if !held.is_empty() {
        outln!("sizes several kernels use, held at their defaults (not tuned): {}", held.join(", "));
    }
    let given = &fixed;
    let split = stages::split_at(&p, given).map_err(|e| src.reject(&e))?;
    if mapsat::tuning::nothing_to_tune(&split, given) {
        let variants = if a.variants.is_none() { VARIANTS_HINT } else { "" };
        return Err(rejected(format!("{}{variants}", mapsat::tuning::NOTHING_TO_TUNE)));
    }
    let mapless = mapsat::stages::without_maps(&split, given);
    if !mapless.is_empty() {
        let variants = if a.variants.is_none() { VARIANTS_HINT } else { "" };
        let (kernels, has, runs, its, it) = match &mapless[..] {
            [one] => (format!("kernel `{one}`"), "has", "runs it", "its", "it"),
            more => (format!("kernels `{}`", more.join("`, `")), "have", "runs each", "their", "them"),
        };
        outln!(
            "note: {kernels} {has} nothing to map, only reductions or rearrangements of data: one work item {runs}, \
             and only {its} tunable sizes, if any, are tuned; leave out {its} kernel boundary (`toGlobal`) or \
             give {it} a map to run in parallel{variants}"
        );
    }
    for s in &split {
        let dir = out.join(&s.program.name);
        check_outputs(a, src, &s.program.name, device.dialect(), &dir, &dir.join("tune.jsonl"))?;
        not_inside(a, src, &[dir])?;
    }
    let pipeline = mapsat::tuning::pipeline_file(&p.name, out);
    super::keep_inputs(&pipeline, &input_files(a, src))?;
    mapsat::ir::files::check_writable(&pipeline)
        .map_err(|e| rejected(format!("cannot write {}: {e}", pipeline.display())))?;
    hold_output(&a.output)?;
    let n = split.len();
    let mut summaries = Vec::with_capacity(n);
    let mut files = Vec::with_capacity(n);
    for (k, s) in split.into_iter().enumerate() {
        let name = s.program.name.clone();
        outln!("kernel {} of {n}: {name}", k + 1);
        let dir = out.join(&name);
        let log = dir.join("tune.jsonl");
        let (task, k) = tune_one(a, src, s.program, true, given, device, profile.clone(), &dir, &log)?;
        summarize(&task, &k, &a.device);
        summaries.push(k.summary);
        files.push(k.written);
    }
    summarize_stages(&p, &summaries);
    let best = tuned(&summaries, &files);
    write_pipeline(&p, out, &summaries, &files)?;
    if let Some(cmd) = pipeline_run_command(a, Path::new(&src.name), given, device.dialect(), &summaries) {
        outln!("run the whole program again: {cmd}");
    }
    Ok(best)
}

/// `DIR/NAME.pipeline.json` ([`mapsat::tuning::pipeline_json`]).
fn write_pipeline(
    p: &mapsat::ir::Program,
    out: &Path,
    kernels: &[tune::report::Summary],
    files: &[Vec<PathBuf>],
) -> CliResult<()> {
    let each: Vec<(&tune::report::Summary, &[PathBuf])> = kernels.iter().zip(files).map(|(s, f)| (s, &f[..])).collect();
    let json = mapsat::tuning::pipeline_json(&p.name, &each, out);
    let path = mapsat::tuning::pipeline_file(&p.name, out);
    super::write(&path, &(serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"))?;
    outln!("wrote {}", path.display());
    Ok(())
}

/// The best of a program from its kernels' summaries and files written.
fn tuned(kernels: &[tune::report::Summary], written: &[Vec<PathBuf>]) -> Tuned {
    let lifts: Vec<PathBuf> = written.iter().filter_map(|w| mapsat::tuning::mapped_lift(w)).collect();
    let best = mapsat::tuning::best_sequence(kernels).filter(|b| lifts.len() == kernels.len() && b.ms > 0.0);
    Tuned {
        device: kernels.last().map(|s| s.device.clone()).unwrap_or_default(),
        best_ms: best.as_ref().map(|b| b.ms),
        gflops: best.as_ref().map_or(0.0, |b| b.gflops),
        mapping: best.as_ref().map(|b| b.mapping.clone()).unwrap_or_default(),
        lifts,
        locals: best.as_ref().map(|b| b.local.iter().map(|(_, l)| l.clone()).collect()).unwrap_or_default(),
        tuning: best.map(|b| b.tuning).unwrap_or_default(),
    }
}

/// A tune's input files: the program given, the one its text was read from (a variant's own
/// program in `tune --variants`), and the prior model (`--model`), each with what it is.
fn inputs<'a>(a: &'a TuneArgs, src: &'a Source) -> Vec<(&'a Path, &'static str)> {
    let mut inputs = vec![(a.file.as_path(), "the input program"), (Path::new(&src.name), "the input program")];
    inputs.extend(a.model.as_deref().map(|m| (m, "the prior model (--model)")));
    inputs
}

/// The paths of a tune's input files ([`inputs`]).
pub(super) fn input_files<'a>(a: &'a TuneArgs, src: &'a Source) -> Vec<&'a Path> {
    inputs(a, src).into_iter().map(|(f, _)| f).collect()
}

/// The files a tune never writes over: its inputs and the log.
fn kept<'a>(a: &'a TuneArgs, src: &'a Source, log: &'a Path) -> Vec<(&'a Path, &'static str)> {
    let mut kept = inputs(a, src);
    kept.push((log, "the log"));
    kept
}

/// The lock this process holds on the output folder of its tune ([`hold_output`]).
static OUTPUT_LOCK: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// Locks the output folder `dir` (made if need be) for the rest of the process, once its
/// outputs are checked and before anything is measured: a second tune into the same folder,
/// resumed or not, is refused at once (each kernel's or variant's log is locked too, but a
/// second tune went on to the next one, and wrote the reports over the first's). The lock is
/// released when the process ends, a kill included.
fn hold_output(dir: &Path) -> CliResult<()> {
    if OUTPUT_LOCK.get().is_some() {
        return Ok(());
    }
    super::create_dir(dir)?;
    let cannot = |e: std::io::Error| rejected(format!("cannot lock {}: {e}", dir.display()));
    let folder = std::fs::File::open(dir).map_err(cannot)?;
    if !mapsat::ir::files::try_lock(&folder).map_err(cannot)? {
        return Err(rejected(format!(
            "another tune is writing into {}: wait for it to end, or choose another -o",
            dir.display()
        )));
    }
    let _ = OUTPUT_LOCK.set(folder);
    Ok(())
}

/// Refuses, before any measurement, a tune whose output files for the program (or kernel)
/// `name` in `out` (the kernel's files, the report, the learned model beside the log `log`, the
/// inputs in `out/data/`) would overwrite the input program, the prior model or the log
/// ([`tune::report::check_outputs`]).
fn check_outputs(a: &TuneArgs, src: &Source, name: &str, dialect: Dialect, out: &Path, log: &Path) -> CliResult<()> {
    tune::report::check_outputs(name, dialect, out, log, &inputs(a, src))
        .map_err(|e| rejected(format!("nothing is tuned: {e} (choose another -o or --log)")))
}

/// Refuses, before any measurement, a tune that writes into a folder holding the input program
/// or the prior model (a kernel's or variant's folder, the measured inputs' `data/`).
pub(super) fn not_inside(a: &TuneArgs, src: &Source, dirs: &[PathBuf]) -> CliResult<()> {
    for d in dirs {
        if let Some((f, what)) = inputs(a, src).into_iter().find(|(f, _)| tune::report::inside(f, d)) {
            return Err(rejected(format!(
                "nothing is tuned: {what} {} is in {}, which this tune writes (choose another -o)",
                f.display(),
                d.display()
            )));
        }
    }
    Ok(())
}

/// Tunes one kernel's program into `out`, logging to `log` ([`mapsat::tuning::tune_task`]):
/// the task and what the tune wrote (never over the input, `a.file`, the program's own file,
/// `src`, the log or the prior model). A kernel of `several` without a map is tuned as its one
/// mapping ([`Task::with_a_choice`] is not asked of it).
#[allow(clippy::too_many_arguments)]
fn tune_one(
    a: &TuneArgs,
    src: &Source,
    p: mapsat::ir::Program,
    several: bool,
    given: &mapsat::ir::Sizes,
    device: DeviceSpec,
    profile: Profile,
    out: &Path,
    log: &Path,
) -> CliResult<(Task, KernelTune)> {
    let prior = a.model.as_deref().map(Learned::load).transpose().map_err(rejected)?;
    let fault = a.inject_fault.as_deref().map(parse_fault).transpose()?;
    let task = Task::new(p, given, profile, device.dialect(), !a.no_fusion, a.seed);
    let task = task.and_then(|t| if several { Ok(t) } else { t.with_a_choice() }).map_err(|e| match e {
        TuneError::NoMaps(_) if a.variants.is_none() => rejected(format!("{e}{VARIANTS_HINT}")),
        e => tune_error(e),
    })?;
    let task = if a.strict_math { task } else { task.reassociating() };
    let opts = TuneOptions {
        trials: a.trials,
        random_trials: a.random_trials,
        batch: a.batch,
        seed: a.seed,
        runs: a.runs,
        timeout: super::seconds("--timeout", a.timeout)?,
        prior,
        fault,
        ..TuneOptions::default()
    };
    let how = Tuning { prior_file: a.model.as_deref(), resume: a.resume, ..Tuning::new(device, &opts)? };
    let tuned = mapsat::tuning::tune_task(&task, &how, out, log, &kept(a, src, log), &mut Bar { bar: None });
    Ok((task, tuned.map_err(tune_error)?))
}

/// The whole program's figures from its kernels' tunes: the sequence's time is the sum of its
/// kernels' times.
fn summarize_stages(p: &mapsat::ir::Program, kernels: &[tune::report::Summary]) {
    let best_ms: f64 = kernels.iter().map(|s| s.best_ms).sum();
    let median_ms: f64 = kernels.iter().map(|s| s.median_compared_ms()).sum();
    outln!("program {}: {} kernels, launched in order (each tuned kernel in DIR/KERNEL/)", p.name, kernels.len());
    let failed: Vec<&str> = kernels.iter().filter(|s| s.best.is_none()).map(|s| s.program.as_str()).collect();
    let Some(best) = mapsat::tuning::best_sequence(kernels).filter(|_| failed.is_empty()) else {
        outln!("  no correct kernel for {}: the sequence has no best", failed.join(", "));
        return;
    };
    match kernels.iter().all(|s| s.median_valid_ms > 0.0) {
        true => outln!(
            "  best sequence: {}; the median valid candidates of the kernels, in sequence: {}",
            tune::report::fmt_ms(best_ms),
            tune::report::fmt_ms(median_ms)
        ),
        false => outln!("  best sequence: {}", tune::report::fmt_ms(best_ms)),
    }
    outln!("  mapping {}", tune::report::shown_mapping(&best.mapping));
    let locals: Vec<String> = best.local.iter().filter_map(|(k, l)| local_flag(Some(k), l)).collect();
    if !locals.is_empty() {
        outln!("  work groups {}", locals.join(" "));
    }
    if !best.tuning.is_empty() {
        outln!("  tunable sizes {}", best.tuning);
    }
}

/// The `mapsat run` command that runs and checks a tuned pipeline as it was measured: the
/// program's `file` (the input, or the variant's own file with `--variants`, whose kernels may
/// differ) at the tune's sizes, each kernel's mapping and work group; `None` when a kernel has
/// no best.
fn pipeline_run_command(
    a: &TuneArgs,
    file: &Path,
    given: &mapsat::ir::Sizes,
    dialect: Dialect,
    kernels: &[tune::report::Summary],
) -> Option<String> {
    let best = mapsat::tuning::best_sequence(kernels)?;
    let locals: Vec<(&str, &[i64])> = best.local.iter().map(|(k, l)| (k.as_str(), &l[..])).collect();
    Some(whole_run_command(a, file, &best.mapping, &best.tuning.or(given), &locals, dialect))
}

/// `mapsat run FILE --mapping M [--size ..] [--local KERNEL:X,Y,Z ..] [--reassociate] --check`
/// for a program of several kernels: the combined `mapping` (none when no kernel has a map:
/// each runs in one work item, as with the empty mapping), the sizes `given`, each kernel's
/// work group.
fn whole_run_command(
    a: &TuneArgs,
    file: &Path,
    mapping: &str,
    given: &mapsat::ir::Sizes,
    locals: &[(&str, &[i64])],
    dialect: Dialect,
) -> String {
    let sizes: Vec<String> = given.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut args: Vec<String> = (!mapping.is_empty()).then(|| format!("--mapping {mapping}")).into_iter().collect();
    if !sizes.is_empty() {
        args.push(format!("--size {}", sizes.join(",")));
    }
    args.extend(locals.iter().filter_map(|(k, l)| local_flag(Some(k), l)));
    let reassociate = !mapsat_codegen::build_options(dialect, !a.strict_math).is_empty();
    run_command(file, &a.device, &args, reassociate)
}

/// One kernel's tune on standard output: its best (or how its candidates failed), the files
/// written and the command that runs its best kernel again.
fn summarize(task: &Task, k: &KernelTune, device: &str) {
    let (s, written) = (&k.summary, &k.written);
    outln!("device: {}", s.device);
    match &s.best {
        Some(b) => {
            outln!(
                "best: {}, {}; {}",
                tune::report::fmt_ms(s.best_ms),
                tune::report::fmt_gflops(s.best_gflops),
                s.against_median()
            );
            outln!("  mapping {}", tune::report::shown_mapping(&b.mapping));
            if !b.tuning.is_empty() {
                outln!("  tunable sizes {}", b.tuning);
            }
            match b.local.is_empty() {
                true => outln!("  work group: code generation's default (the space has no local sizes)"),
                false => outln!("  work group {:?}", b.local),
            }
        }
        None => {
            outln!("no candidate ran correctly (see the report)");
            for f in &s.failures {
                outln!("  {} {}, e.g. {}", f.count, f.status, f.example.lines().next().unwrap_or(""));
            }
            // Refused by code generation although the space accepts them: say why here.
            if let Some(e) = s.invalid_examples.first() {
                outln!("  {} candidate build(s) over a device limit after lowering, e.g. {e}", s.rejected_invalid);
            }
            if let Some(e) = s.codegen_examples.first() {
                outln!("  code generation refused {} candidate(s), e.g. {e}", s.rejected_codegen);
            }
        }
    }
    outln!("{} ({} and {} trials)", s.phases(), s.trials(Phase::Guided), s.trials(Phase::Random));
    for p in written {
        outln!("wrote {}", p.display());
    }
    if let Some(m) = &k.model {
        outln!("wrote {} (the learned model, for --model)", m.display());
    }
    if let (Some(b), Some(lift)) = (&s.best, mapsat::tuning::mapped_lift(written)) {
        let reassociate = !mapsat_codegen::build_options(task.dialect, task.reassociate).is_empty();
        let local: Vec<String> = local_flag(None, &b.local).into_iter().collect();
        outln!("run it again: {}", run_command(&lift, device, &local, reassociate));
    }
}

/// The `mapsat run` command that runs and checks `file` as it was tuned and measured: `args`
/// (its mapping, sizes, work groups) and the build option, which a tuned kernel's mapped
/// program records only in a comment.
fn run_command(file: &Path, device: &str, args: &[String], reassociate: bool) -> String {
    let mut cmd = format!("mapsat run {} --device {device}", file.display());
    for a in args {
        cmd += &format!(" {a}");
    }
    if reassociate {
        cmd += " --reassociate";
    }
    cmd + " --check"
}

/// `--local X,Y,Z` (`--local KERNEL:X,Y,Z` for one kernel of a pipeline); `None` for a kernel
/// without local sizes (code generation's default).
fn local_flag(kernel: Option<&str>, local: &[i64]) -> Option<String> {
    let sizes: Vec<String> = local.iter().map(i64::to_string).collect();
    let kernel = kernel.map(|k| format!("{k}:")).unwrap_or_default();
    (!local.is_empty()).then(|| format!("--local {kernel}{}", sizes.join(",")))
}

/// `mapsat predict`.
pub fn predict(a: &PredictArgs) -> CliResult<()> {
    let src = Source::read(&a.file)?;
    let p = src.parse()?;
    mapsat::ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let given = given_sizes(&p, &a.sizes)?;
    let profile = Profile::load(&a.target).map_err(|e| Failure::Usage(e.to_string()))?;
    let model = a.model.as_deref().map(Learned::load).transpose().map_err(rejected)?;
    let locals = mapsat::local::Locals::parse(&a.local)?;
    // Every tunable size is fixed by its default or --size: one point.
    let mut fixed = given.clone();
    for v in &p.sizes {
        if let (false, Some(d)) = (fixed.contains(&v.name), v.default) {
            fixed.insert(v.name.clone(), d);
        }
    }
    if stages::count(&p) == 1 {
        locals.check_kernels(&[p.name.as_str()])?;
        let local = Local { size: locals.of(&p.name), shared: false };
        let (b, score) = predict_kernel(a, p, &fixed, profile, model.as_ref(), &a.mapping, local)?;
        print_prediction(&b, score);
        return Ok(());
    }
    // A program of several kernels: each kernel with its maps' part of the mapping, as `tune`
    // tunes them one at a time; the analytical times add up. Every kernel's candidate is built
    // before any is printed: a mapping wrong in one kernel prints nothing.
    let split = stages::split_at(&p, &fixed).map_err(|e| src.reject(&e))?;
    let names: Vec<&str> = split.iter().map(|s| s.program.name.as_str()).collect();
    locals.check_kernels(&names)?;
    let labels: Vec<Vec<String>> = split.iter().map(|s| s.program.map_labels()).collect();
    let maps = || split.iter().flat_map(|s| mapsat::stages::maps_of(&s.program, &fixed)).collect();
    let parts = super::stages::split_mapping(&a.mapping, &labels, &maps)?;
    let mut predicted = Vec::with_capacity(split.len());
    for (s, part) in split.into_iter().zip(parts) {
        let name = s.program.name.clone();
        // The size given for every kernel is not one for a kernel in one work item, as in `run`.
        let local = Local { size: locals.of(&name), shared: locals.shared(&name) };
        let in_stage = |e: Failure| match e {
            Failure::Usage(m) => Failure::Usage(format!("in the kernel of stage `{name}`: {m}")),
            Failure::Rejected(m) => Failure::Rejected(format!("in the kernel of stage `{name}`: {m}")),
        };
        let kernel = predict_kernel(a, s.program, &fixed, profile.clone(), model.as_ref(), &part, local);
        predicted.push((name.clone(), kernel.map_err(in_stage)?));
    }
    let parallel = |b: &tune::task::Built| b.candidate.codes.iter().any(Code::is_parallel);
    locals.check_taken(predicted.iter().any(|(_, (b, _))| parallel(b)))?;
    let n = predicted.len();
    for (k, (name, (b, score))) in predicted.iter().enumerate() {
        outln!("kernel {} of {n}: {name}", k + 1);
        print_prediction(b, *score);
    }
    let total: f64 = predicted.iter().map(|(_, (b, _))| b.prediction.total_ms).sum();
    outln!("analytical, all {n} kernels in sequence: {}", tune::report::fmt_ms(total));
    Ok(())
}

/// A kernel's work-group size, and whether it is the one given for every kernel of several
/// (which a kernel in one work item does not take).
struct Local {
    size: Option<Vec<i64>>,
    shared: bool,
}

/// Both models' predictions for one kernel's candidate: the candidate built, and the learned
/// model's score.
fn predict_kernel(
    a: &PredictArgs,
    p: mapsat::ir::Program,
    fixed: &mapsat::ir::Sizes,
    profile: Profile,
    model: Option<&Learned>,
    mapping: &str,
    local: Local,
) -> CliResult<(tune::task::Built, Option<f64>)> {
    let dialect = mapsat_codegen::Dialect::OpenCl;
    let task = Task::new(p, fixed, profile, dialect, !a.no_fusion, 0).map_err(tune_error)?;
    let task = if a.strict_math { task } else { task.reassociating() };
    // The mapping's own mistakes (an unknown map, a view, a missing code) are not the sizes'.
    let codes = task.parse_mapping(&task.first_point, mapping).map_err(|e| match e {
        tune::task::Rejection::Invalid(m) | tune::task::Rejection::Codegen(m) => Failure::Usage(m),
    })?;
    let parallel = codes.iter().any(Code::is_parallel);
    let local = if local.shared && !parallel { None } else { local.size };
    let c = Candidate { tuning: task.first_point.clone(), codes, local: local.unwrap_or_default() };
    let c = task.complete_local(c);
    tune::predict(&task, &c, model).map_err(tune_error)
}

/// Prints a kernel's predictions ([`predict_kernel`]).
fn print_prediction(b: &tune::task::Built, score: Option<f64>) {
    let r = &b.prediction;
    let fmt = tune::report::fmt_ms;
    outln!("kernel {} (launch global {:?}, local {:?})", b.hash, b.manifest.launch.global, b.manifest.launch.local);
    outln!(
        "analytical: {} (compute {}, global memory {}, local memory {}, barriers {}, launch {}, work groups {}; lanes busy {:.2}, tail {:.2}, occupancy {:.2})",
        fmt(r.total_ms),
        fmt(r.compute_ms),
        fmt(r.global_ms),
        fmt(r.local_ms),
        fmt(r.barrier_ms),
        fmt(r.launch_ms),
        fmt(r.groups_ms),
        r.lane_util,
        r.tail,
        r.occupancy
    );
    match score {
        Some(s) => {
            outln!("learned: score {s:.4} (higher is predicted faster; only the order of scores means something)")
        }
        None => outln!("learned: no model (give --model FILE, written beside a tuning log as LOG.model.json)"),
    }
}

/// `mapsat worker`: the measurement worker (see `mapsat_tuner::tune::worker`).
pub fn worker() -> CliResult<()> {
    Ok(mapsat::tuning::serve_worker()?)
}

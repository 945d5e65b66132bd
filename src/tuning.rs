//! A program tuned from research code ([`Source::tune`]): kernel by kernel for a program of
//! several, each kernel's log, report, plot and best kernel in a folder of its own, and the
//! best sequence put together from each kernel's best.

use crate::error::Error;
use crate::ir::{Program, Sizes};
use crate::local::Locals;
use crate::source::Source;
use mapsat_codegen::Manifest;
use mapsat_tuner::measure::DeviceSpec;
use mapsat_tuner::tune::{self, model::Learned, report::Summary, task::Task, Files, Progress, TuneOptions};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

type R<T> = Result<T, Error>;

/// How a tune runs.
pub struct Tuning<'a> {
    /// The device measured on.
    pub device: DeviceSpec,
    /// The profile file or built-in name the space and the models use (none: the OpenCL
    /// device's own limits, [`crate::target::tune_profile`]).
    pub target: Option<&'a str>,
    /// Trials, seed, timeouts, a prior learned model.
    pub opts: &'a TuneOptions,
    /// The file the prior model (`opts.prior`) was read from, which the tune never writes over.
    pub prior_file: Option<&'a Path>,
    /// Continue the logs in the output folder instead of starting them.
    pub resume: bool,
    /// The command of the measurement worker, a process that calls [`serve_worker`] (the
    /// `mapsat` program's is `mapsat worker`).
    pub worker: Vec<OsString>,
}

impl<'a> Tuning<'a> {
    /// A tune on `device` with `opts`, under the device's own limits, starting its logs, whose
    /// worker is this program started with the argument `worker` (which must then call
    /// [`serve_worker`], as `examples/library.rs` does).
    pub fn new(device: DeviceSpec, opts: &'a TuneOptions) -> R<Tuning<'a>> {
        let exe = std::env::current_exe()
            .map_err(|e| Error::Rejected(format!("error: cannot find this program, the tune's worker: {e}")))?;
        Ok(Tuning {
            device,
            target: None,
            opts,
            prior_file: None,
            resume: false,
            worker: vec![exe.into(), "worker".into()],
        })
    }
}

/// One kernel's tune.
pub struct KernelTune {
    /// Its summary (`report.json`).
    pub summary: Summary,
    /// The best kernel's source and manifest, when a candidate was correct.
    pub best: Option<(String, Manifest)>,
    /// The folder of its files.
    pub dir: PathBuf,
    /// The files written there: the best kernel, its manifest and mapped program, the report
    /// and plot.
    pub written: Vec<PathBuf>,
    /// The learned model it saved beside its log (`tune.jsonl.model.json`), which a later
    /// tune can start from ([`TuneOptions::prior`], [`load_model`]); none when no model was
    /// trained (no candidate of its guided search ran correctly).
    pub model: Option<PathBuf>,
}

/// The best sequence of a program of several kernels: each kernel's best.
#[derive(Clone, Debug, PartialEq)]
pub struct Best {
    /// The mapping of the whole program.
    pub mapping: String,
    /// Each kernel's work group, by kernel name.
    pub local: Vec<(String, Vec<i64>)>,
    /// The tunable sizes chosen (each kernel's are its own: the sizes kernels share are
    /// fixed, [`crate::stages::tuning_sizes`]).
    pub tuning: Sizes,
    /// The sequence's time in ms: the sum of the kernels'.
    pub ms: f64,
    /// Its GFLOP/s.
    pub gflops: f64,
}

impl Source {
    /// Tunes the program at `given` as `how` says into `out` (a program of several kernels:
    /// each kernel into `out/KERNEL`, in launch order), with `progress` told of each
    /// measurement and asked whether to stop. A tune whose files would overwrite the program's
    /// file ([`Source::name`]) is refused before it measures anything.
    pub fn tune(
        &self,
        given: &Sizes,
        how: &Tuning,
        out: &Path,
        progress: &mut (dyn Progress + Send),
    ) -> R<Vec<KernelTune>> {
        crate::limits::deep(|| {
            // Not checked at the tunable sizes' defaults (`Source::sizes`): the tune searches
            // them, and a default that does not divide a given size is not one it measures.
            given.iter().try_for_each(|(name, _)| crate::source::size_named(self.program(), name))?;
            if out.as_os_str().is_empty() {
                return Err(Error::Usage("the output folder is an empty path: name one (`.` for this one)".into()));
            }
            if how.resume && how.opts.prior.is_some() {
                return Err(Error::Usage("a prior model starts a tune; resume continues one: give one of them".into()));
            }
            let profile = crate::target::tune_profile(how.target, how.device)?;
            let p = self.program();
            if crate::ir::stages::count(p) == 1 {
                self.keep_input(&p.name, how, out)?;
                return Ok(vec![tune_kernel(p.clone(), given, profile, how, false, out, progress)?]);
            }
            let given = crate::stages::tuning_sizes(p, given);
            let split = self.kernels(&given)?;
            if nothing_to_tune(&split, &given) {
                return Err(Error::Rejected(format!("error: {NOTHING_TO_TUNE}")));
            }
            for s in &split {
                self.keep_input(&s.program.name, how, &out.join(&s.program.name))?;
            }
            let pipeline = pipeline_file(&p.name, out);
            self.keep_away(std::slice::from_ref(&pipeline), how)?;
            let mut kernels = Vec::new();
            for s in split {
                let dir = out.join(&s.program.name);
                kernels.push(tune_kernel(s.program, &given, profile.clone(), how, true, &dir, progress)?);
            }
            let each: Vec<(&Summary, &[PathBuf])> = kernels.iter().map(|k| (&k.summary, &k.written[..])).collect();
            let json = pipeline_json(&p.name, &each, out);
            crate::ir::files::write(&pipeline, serde_json::to_string_pretty(&json).unwrap_or_default() + "\n")
                .map_err(|e| Error::Rejected(format!("error: cannot write {}: {e}", pipeline.display())))?;
            Ok(kernels)
        })
    }

    /// Refuses a tune of the kernel `name` into `out` whose files (the kernel, the report, the
    /// log and its model, the inputs in `out/data/`) would overwrite the program's file or the
    /// prior model's ([`tune::report::check_outputs`]).
    fn keep_input(&self, name: &str, how: &Tuning, out: &Path) -> R<()> {
        let log = out.join("tune.jsonl");
        tune::report::check_outputs(name, how.device.dialect(), out, &log, &self.inputs(how))
            .map_err(|e| refused(e.to_string()))
    }

    /// Refuses a tune that would write one of `files` over the program's file or the prior
    /// model's.
    fn keep_away(&self, files: &[PathBuf], how: &Tuning) -> R<()> {
        tune::report::keep_away(files, &self.inputs(how)).map_err(|e| refused(e.to_string()))
    }

    /// A tune's input files: the program's and the prior model's, each with what it is.
    fn inputs<'a>(&'a self, how: &Tuning<'a>) -> Vec<(&'a Path, &'static str)> {
        let mut inputs = vec![(Path::new(self.name()), "the input program")];
        inputs.extend(how.prior_file.map(|m| (m, "the prior model")));
        inputs
    }
}

/// Why a program of several kernels for which [`nothing_to_tune`] holds is not tuned.
pub const NOTHING_TO_TUNE: &str =
    "nothing to tune: no kernel has a map or a tunable size; each runs in one work item (`mapsat run`)";

/// Whether the kernels of a program (`split` at the sizes `given`) leave nothing to choose: no
/// kernel has a map or a tunable size, so each has one candidate, the empty mapping.
pub fn nothing_to_tune(split: &[crate::ir::stages::Stage], given: &Sizes) -> bool {
    split.iter().all(|s| {
        crate::mapping::no_maps(&s.program, &given.or(&s.program.default_sizes()))
            && tune::params::tunables(&s.program, given, &Sizes::new()).is_empty()
    })
}

/// A tune refused before it measured anything, for `why`.
fn refused(why: String) -> Error {
    Error::Rejected(format!("error: nothing is tuned: {why} (choose another output folder)"))
}

/// Tunes one kernel into `out`: its log (`tune.jsonl`), the learned model beside it, the
/// report, plot and best kernel. A kernel of `several` without a map is tuned as its one
/// mapping ([`Task::with_a_choice`] is not asked of it).
fn tune_kernel(
    program: Program,
    given: &Sizes,
    profile: crate::ir::profile::Profile,
    how: &Tuning,
    several: bool,
    out: &Path,
    progress: &mut (dyn Progress + Send),
) -> R<KernelTune> {
    let failed = |e: tune::TuneError| Error::Rejected(format!("error: {e}"));
    let task = Task::new(program, given, profile, how.device.dialect(), true, how.opts.seed).map_err(failed)?;
    let task = if several { task } else { task.with_a_choice().map_err(failed)? };
    let task = task.reassociating();
    tune_task(&task, how, out, &out.join("tune.jsonl"), &[], progress).map_err(failed)
}

/// Tunes `task` into `out`, logging to `log`: the learned model beside the log
/// (`LOG.model.json`), the report, plot and best kernel in `out`, the measured inputs in
/// `out/data/`; none of the files written replaces one of `kept` (each named with what it is).
pub fn tune_task(
    task: &Task,
    how: &Tuning,
    out: &Path,
    log: &Path,
    kept: &[(&Path, &str)],
    progress: &mut (dyn Progress + Send),
) -> Result<KernelTune, tune::TuneError> {
    for dir in [out, log.parent().unwrap_or(out)].into_iter().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| tune::TuneError::Io(format!("cannot create {}: {e}", dir.display())))?;
    }
    let files =
        Files { log: log.to_path_buf(), resume: how.resume, work: out.join("data"), worker: how.worker.clone() };
    let result = tune::tune(task, how.device, how.opts, &files, progress)?;
    let written = tune::report::write(task, &result, out, kept)?;
    let model = match &result.model {
        Some(m) => {
            let path = PathBuf::from(format!("{}.model.json", log.display()));
            m.save(&path)?;
            Some(path)
        }
        None => None,
    };
    let best = result.best.as_ref().map(|b| (b.source.clone(), b.manifest.clone()));
    Ok(KernelTune { summary: Summary::of(task, &result), best, dir: out.to_path_buf(), written, model })
}

/// The pipeline file of the program `program`'s kernels tuned into `out` (`NAME.pipeline.json`,
/// [`pipeline_file`]): each kernel (its summary and the files its tune wrote) in launch order,
/// with its best time, mapping, work group, tunable sizes and mapped program (relative to
/// `out`; `mapsat run FILE --local ... --check` reproduces it), and the sequence's time (null
/// unless every kernel has a best).
pub fn pipeline_json(program: &str, kernels: &[(&Summary, &[PathBuf])], out: &Path) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = kernels
        .iter()
        .map(|(s, written)| {
            // A kernel without a best has no mapped program (not the next kernel's).
            let lift = s.best.as_ref().and_then(|_| mapped_lift(written));
            serde_json::json!({
                "kernel": s.program,
                "best_ms": s.best.as_ref().map(|_| s.best_ms),
                "mapping": s.best.as_ref().map(|b| b.mapping.clone()),
                "local": s.best.as_ref().map(|b| b.local.clone()),
                "tuning": s.best.as_ref().map(|b| b.tuning.clone()),
                "lift": lift.map(|l| l.strip_prefix(out).unwrap_or(&l).display().to_string()),
            })
        })
        .collect();
    let all_mapped = kernels.iter().all(|(_, w)| mapped_lift(w).is_some());
    let best = best_sequence(kernels.iter().map(|(s, _)| *s)).filter(|b| all_mapped && b.ms > 0.0);
    serde_json::json!({ "program": program, "best_ms": best.map(|b| b.ms), "kernels": entries })
}

/// The mapped program among the files a kernel's tune wrote ([`KernelTune::written`]).
pub fn mapped_lift(written: &[PathBuf]) -> Option<PathBuf> {
    written.iter().find(|p| p.extension().is_some_and(|e| e == "lift")).cloned()
}

/// The pipeline file of the program `program` tuned into `out`: `out/NAME.pipeline.json`.
pub fn pipeline_file(program: &str, out: &Path) -> PathBuf {
    out.join(format!("{program}.pipeline.json"))
}

/// The best sequence of the kernels' tunes `kernels` (in launch order); none when a kernel
/// has no correct candidate.
pub fn best_sequence<'a>(kernels: impl IntoIterator<Item = &'a Summary>) -> Option<Best> {
    let kernels: Vec<&Summary> = kernels.into_iter().collect();
    let bests: Vec<_> = kernels.iter().map(|s| s.best.as_ref()).collect::<Option<_>>()?;
    let mapping: Vec<&str> = bests.iter().map(|b| b.mapping.as_str()).filter(|m| !m.is_empty()).collect();
    let ms: f64 = kernels.iter().map(|s| s.best_ms).sum();
    // Each kernel's flops are its GFLOP/s times its time (MFLOP).
    let mflop: f64 = kernels.iter().map(|s| s.best_gflops * s.best_ms).sum();
    Some(Best {
        mapping: mapping.join(","),
        local: kernels.iter().zip(&bests).map(|(s, b)| (s.program.clone(), b.local.clone())).collect(),
        tuning: bests.iter().fold(Sizes::new(), |all, b| all.or(&b.tuning)),
        ms,
        gflops: if ms > 0.0 { mflop / ms } else { 0.0 },
    })
}

impl Best {
    /// The work groups to run the sequence with ([`Source::run`]): each kernel's, by name
    /// (code generation's default where a kernel's is empty).
    pub fn locals(&self) -> Locals {
        let chosen = self.local.iter().filter(|(_, l)| !l.is_empty());
        Locals { all: None, by_kernel: chosen.map(|(k, l)| (k.clone(), l.clone())).collect() }
    }

    /// The sizes to run the sequence at: the tune's `given` sizes with the tunable sizes chosen.
    pub fn sizes(&self, given: &Sizes) -> Sizes {
        self.tuning.or(given)
    }
}

/// A learned model saved by a tune ([`KernelTune::model`]), to start another from
/// ([`TuneOptions::prior`]).
pub fn load_model(path: &Path) -> R<Learned> {
    Learned::load(path).map_err(|e| Error::Rejected(format!("error: {e}")))
}

/// Serves the tuner's measurement worker on this process's stdin and stdout: what
/// [`Tuning::worker`]'s command runs.
pub fn serve_worker() -> R<()> {
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    tune::worker::serve(stdin.lock(), stdout.lock()).map_err(|e| Error::Rejected(format!("error: {e}")))
}

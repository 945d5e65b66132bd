//! `mapsat tune`: from a program to the fastest valid kernel found on a device.
//!
//! - [`task`]: the program at its problem sizes, its tunable sizes ([`params`]), one mapping
//!   space per point of them, and candidates built into kernels;
//! - [`stats`], [`analytic`], [`features`], [`model`]: what a kernel does, the analytical model's
//!   predicted time, the learned model's features, and the models behind [`model::CostModel`]
//!   (the learned model's trees flattened for prediction in [`forest`]);
//! - [`search`]: the batches of the guided search and the random baseline;
//! - [`worker`]: measurement in a child process, with a timeout;
//! - [`log`]: the JSON-lines log that `--resume` continues;
//! - [`report`]: the best kernel, the report and the plot written at the end.
//!
//! [`tune`] runs a whole tune; [`predict`] scores one candidate with both models.

pub mod analytic;
pub mod features;
pub mod forest;
pub mod log;
pub mod model;
pub mod params;
pub mod report;
pub mod search;
pub mod stats;
pub mod task;
pub mod worker;

use crate::measure::DeviceSpec;
pub use log::Phase;
use log::{Header, Log, LogError, Trial, LOG_FORMAT};
use mapsat_ir::interp;
use model::{Learned, ModelError};
use search::{Done, Rejections, Search};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use task::{Built, Task};
use worker::{Fault, Measurer, Setup};

/// Why a tune could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The program, or a candidate of it, is not valid at its sizes.
    #[error("{0}")]
    Program(String),
    /// No point of the tunable sizes has a valid mapping.
    #[error("the program has no valid mapping: {0}")]
    NoValidMapping(String),
    /// The program has no map to give a mapping to (the message says at which sizes): it runs
    /// in one work item, which `mapsat run` does, or a rewrite variant may have maps.
    #[error("nothing to tune: {0}; it runs in one work item (`mapsat run`)")]
    NoMaps(String),
    /// The options make no tune (a budget of 0, ...).
    #[error("{0}")]
    Options(String),
    /// The device cannot be used.
    #[error("{0}")]
    Device(String),
    /// The log cannot be written or continued.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A model cannot be trained, read or written.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An output file cannot be written.
    #[error("{0}")]
    Io(String),
    /// The caller stopped the tune ([`Progress::cancelled`]); the log keeps what was measured.
    #[error("the tune was stopped")]
    Cancelled,
}

/// How to tune. Budgets are explicit. AutoTVM measures batches of 64 over thousands of trials;
/// the default here is 16, so that the learned model chooses three of the four batches of a
/// 64-trial tune. 5 % of each batch is random, as in AutoTVM.
#[derive(Clone)]
pub struct TuneOptions {
    /// Candidates measured by the guided search.
    pub trials: usize,
    /// Candidates measured by random valid sampling (the baseline of the report and plot).
    pub random_trials: usize,
    /// Candidates per batch (the model is retrained after each).
    pub batch: usize,
    /// Share of each batch chosen at random.
    pub epsilon: f64,
    /// Random valid candidates built per batch for the model to choose from (1024: on the
    /// tiled matmul, 256 often held none of the few fast kernels; on pocl here, building the
    /// pools took 2 s of a 24 s matmul tune, 3 s of a 98 s conv tune).
    pub pool: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Untimed launches per kernel (the checked first launch counts as one).
    pub warmup: usize,
    /// Timed launches per kernel (their median is the kernel's time).
    pub runs: usize,
    /// Best kernels of each phase (this many by their fastest launch and as many again by their
    /// median) measured again at the end of the tune, those of both phases together
    /// (interleaved, twice, with twice the timed launches each) and with the median valid
    /// candidate, ranked by the median of all those launches: single measurements are noisy,
    /// the best of many noisy ones is often a lucky one, and a shared machine's speed drifts
    /// between the phases.
    pub confirm: usize,
    /// Longest wait for one kernel's measurement (build included).
    pub timeout: Duration,
    /// Tolerances of the comparison with the interpreter.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// A model from an earlier tune (transfer): it ranks the first batch, and its training
    /// data join this tune's.
    pub prior: Option<Learned>,
    /// Tests only: the worker simulates this fault on the measurement of this number (from 1,
    /// counted over this run).
    pub fault: Option<(Fault, u64)>,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            trials: 64,
            random_trials: 32,
            batch: 16,
            epsilon: 0.05,
            pool: 1024,
            seed: 0,
            warmup: 1,
            runs: 10,
            confirm: 5,
            timeout: Duration::from_secs(60),
            rtol: 1e-3,
            atol: 1e-4,
            prior: None,
            fault: None,
        }
    }
}

/// Where a tune reports as it goes (the CLI draws a progress bar; libraries stay silent).
pub trait Progress {
    /// A phase begins: `total` trials, `done` of them already in the log.
    fn phase(&mut self, phase: Phase, total: usize, done: usize);
    /// A trial was measured; the best GFLOP/s so far in its phase, failures so far.
    fn trial(&mut self, t: &Trial, best_gflops: f64, failures: usize);
    /// Something worth a line.
    fn note(&mut self, message: &str);
    /// True when the tune should stop (its caller gave up on it): checked before each
    /// measurement, the tune then ends with [`TuneError::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn phase(&mut self, _: Phase, _: usize, _: usize) {}
    fn trial(&mut self, _: &Trial, _: f64, _: usize) {}
    fn note(&mut self, _: &str) {}
}

/// How well the models ranked one batch before it was measured (Spearman's rank correlation
/// of their scores with the measured speed).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BatchAccuracy {
    /// The batch.
    pub batch: u64,
    /// Its candidates that ran correctly.
    pub measured: usize,
    /// The analytical model's correlation.
    pub analytic_spearman: f64,
    /// The learned model's, when it chose the batch.
    pub learned_spearman: Option<f64>,
}

/// Where the time went, in seconds.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// The whole tune.
    pub total_s: f64,
    /// Choosing candidates (building, scoring, training), measurement excluded.
    pub search_s: f64,
    /// Of which building candidates (apply, lower, print, features).
    pub build_s: f64,
    /// Measuring (worker round trips).
    pub measure_s: f64,
    /// Of which the device compiler, as the worker reported it.
    pub compile_s: f64,
}

/// A kernel re-measured at the end of the tune ([`TuneOptions::confirm`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Confirmed {
    /// Its phase.
    pub phase: Phase,
    /// The trial that measured it first.
    pub trial: u64,
    /// Hash of its source.
    pub kernel: String,
    /// The median of every confirming launch, in ms.
    pub median_ms: f64,
    /// GFLOP/s at that time.
    pub gflops: f64,
    /// Launches the median is of.
    pub launches: usize,
}

/// What a tune found.
pub struct TuneResult {
    /// The task.
    pub task_hash: String,
    /// The device's description.
    pub device_name: String,
    /// The guided search's trials, in order.
    pub guided: Vec<Trial>,
    /// The random baseline's trials, in order.
    pub random: Vec<Trial>,
    /// The confirmed best kernels of each phase (and the median valid candidate), fastest first.
    pub confirmed: Vec<Confirmed>,
    /// The fastest correct kernel of either phase (confirmed, when confirmation ran).
    pub best: Option<Built>,
    /// Its trial.
    pub best_trial: Option<Trial>,
    /// The model accuracy per batch.
    pub accuracy: Vec<BatchAccuracy>,
    /// Where the time went.
    pub timing: Timing,
    /// Candidates built but not measured.
    pub rejections: Rejections,
    /// Workers started again after a timeout or a crash.
    pub restarts: u64,
    /// The learned model at the end (saved beside the log).
    pub model: Option<Learned>,
}

/// Where a tune writes and how it measures.
pub struct Files {
    /// The tuning log.
    pub log: PathBuf,
    /// Continue the log instead of starting one.
    pub resume: bool,
    /// A folder for the inputs and the expected output the worker reads.
    pub work: PathBuf,
    /// The worker command (program and arguments): `mapsat worker`.
    pub worker: Vec<OsString>,
}

/// Tunes `task` on `device` (see the module documentation).
pub fn tune(
    task: &Task,
    device: DeviceSpec,
    opts: &TuneOptions,
    files: &Files,
    progress: &mut dyn Progress,
) -> Result<TuneResult, TuneError> {
    if std::env::var_os(worker::WORKER_ENV).is_some() {
        return Err(TuneError::Options(
            "this process was started as a tune's measurement worker, but began a tune of its own: \
             a program that tunes must serve measurements when started as its worker (the `mapsat` program: \
             `mapsat worker`; a program of your own: mapsat::tuning::serve_worker, see examples/library.rs)"
                .into(),
        ));
    }
    if opts.trials == 0 {
        return Err(TuneError::Options("--trials must be at least 1".into()));
    }
    if opts.batch == 0 || opts.runs == 0 {
        return Err(TuneError::Options("the batch size and the number of timed runs must be at least 1".into()));
    }
    let start = Instant::now();
    let setup = write_inputs(task, device, &files.work, opts)?;
    let mut measurer = Measurer::new(files.worker.clone(), setup, opts.timeout);
    let device_name = measurer.start().map_err(TuneError::Device)?;
    let header = Header {
        format: LOG_FORMAT,
        mapsat: env!("CARGO_PKG_VERSION").to_string(),
        task: task.hash.clone(),
        program: task.program.name.clone(),
        sizes: task.problem.clone(),
        device: device.to_string(),
        profile: task.profile.name.clone(),
        text: Some(task.text_hash()),
        seed: Some(opts.seed),
    };
    // Resuming a tune killed before it wrote its log (a later kernel of a pipeline that had
    // not started) starts it.
    let started = files.log.metadata().is_ok_and(|m| m.len() > 0);
    let (mut log, old) = match files.resume && started {
        true => Log::resume(&files.log, &header)?,
        false => (Log::create(&files.log, &header)?, Vec::new()),
    };
    let mut run = Run {
        search: Search::new(task, opts),
        log: &mut log,
        measurer: &mut measurer,
        progress,
        measure_s: 0.0,
        compile_s: 0.0,
        count: 0,
        confirmed: Vec::new(),
    };
    run.restore(old)?;
    run.guided()?;
    run.random()?;
    run.confirm()?;
    let Run { search, measure_s, compile_s, confirmed, .. } = run;
    let total_s = start.elapsed().as_secs_f64();
    let timing = Timing { total_s, search_s: total_s - measure_s, build_s: search.build_s, measure_s, compile_s };
    finish(search, confirmed, device_name, timing, measurer.restarts())
}

/// Writes random inputs and the interpreter's result for them; the worker's setup.
fn write_inputs(task: &Task, device: DeviceSpec, dir: &Path, opts: &TuneOptions) -> Result<Setup, TuneError> {
    let io = |e: String| TuneError::Io(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(e.to_string()))?;
    let sizes = task.sizes_at(&task.reference_point());
    let inputs = interp::random_inputs(&task.program, &sizes, opts.seed).map_err(|e| io(e.to_string()))?;
    let expected = interp::eval(&task.program, &sizes, &inputs).map_err(|e| {
        TuneError::Program(format!(
            "every kernel is checked against the interpreter on random inputs (seed {}: f32 in [-1, 1), i32 from -10 to 10, zeros included), and on these the program fails: {e}",
            opts.seed
        ))
    })?;
    let mut paths = Vec::new();
    for (q, t) in task.program.params.iter().zip(&inputs) {
        let path = dir.join(format!("input_{}.npy", q.name));
        interp::write_npy(&path, t).map_err(|e| io(e.to_string()))?;
        paths.push(path);
    }
    let expected_path = dir.join("expected.npy");
    interp::write_npy(&expected_path, &expected).map_err(|e| io(e.to_string()))?;
    Ok(Setup { device: device.to_string(), inputs: paths, expected: expected_path, rtol: opts.rtol, atol: opts.atol })
}

struct Run<'a, 'b> {
    search: Search<'a>,
    log: &'b mut Log,
    measurer: &'b mut Measurer,
    progress: &'b mut dyn Progress,
    measure_s: f64,
    compile_s: f64,
    count: u64,
    confirmed: Vec<Confirmed>,
}

impl Run<'_, '_> {
    /// The best kernels of `phase`, one per kernel: `opts.confirm` by their fastest launch, then
    /// as many more by their median.
    fn best_of(&self, phase: Phase) -> Vec<Trial> {
        let trials: Vec<&Trial> = match phase {
            Phase::Guided => self.search.guided.iter().map(|d| &d.trial).collect(),
            Phase::Random => self.search.random.iter().collect(),
        };
        let ok: Vec<&Trial> = trials.into_iter().filter(|t| t.ok()).collect();
        let n = self.search.opts.confirm;
        // The fastest by their fastest launch, and by their median: one noisy trial decides
        // neither alone.
        let mut best: Vec<Trial> = Vec::new();
        for key in [Trial::rank_ms as fn(&Trial) -> f64, |t: &Trial| t.median_ms] {
            let mut order = ok.clone();
            order.sort_by(|a, b| key(a).total_cmp(&key(b)));
            let before = best.len();
            for t in order {
                if best.len() < before + n && !best.iter().any(|b| b.kernel == t.kernel) {
                    best.push(t.clone());
                }
            }
        }
        best
    }

    /// Measures the best kernels of both phases again, together (see [`TuneOptions::confirm`]),
    /// with the median valid candidate ([`median_valid`]) that the best is compared with:
    /// interleaved, so that the guided search and random sampling are compared under the same
    /// conditions (times on a shared machine drift between phases).
    fn confirm(&mut self) -> Result<(), TuneError> {
        let opts = self.search.opts;
        let mut best: Vec<Trial> = [Phase::Guided, Phase::Random].into_iter().flat_map(|p| self.best_of(p)).collect();
        if best.len() < 2 {
            return Ok(());
        }
        if let Some(m) = median_valid(&self.search.random).filter(|m| !best.iter().any(|b| b.kernel == m.kernel)) {
            best.push(m.clone());
        }
        if self.progress.cancelled() {
            return Err(TuneError::Cancelled);
        }
        let task = self.search.task;
        // One measurement per distinct kernel and round: a kernel both phases found counts for both.
        let mut kernels: Vec<(String, Built)> = Vec::new();
        for t in &best {
            if !kernels.iter().any(|(k, _)| *k == t.kernel) {
                let b = task.rebuild(t).map_err(|e| TuneError::Program(format!("trial {}: {e}", t.trial)))?;
                kernels.push((t.kernel.clone(), b));
            }
        }
        self.progress.note(&format!("measuring the {} best kernels of the two phases again", kernels.len()));
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); kernels.len()];
        for _ in 0..2 {
            for (i, (_, b)) in kernels.iter().enumerate() {
                let start = Instant::now();
                let o = self
                    .measurer
                    .measure(&b.source, &b.manifest, opts.warmup, opts.runs * 2, None)
                    .map_err(TuneError::Device)?;
                self.measure_s += start.elapsed().as_secs_f64();
                if o.status == worker::Status::Ok {
                    times[i].extend(o.times_ms);
                }
            }
        }
        for t in &best {
            let Some(i) = kernels.iter().position(|(k, _)| *k == t.kernel) else { continue };
            if times[i].is_empty() {
                continue;
            }
            let c = log::Confirmation {
                phase: t.phase,
                trial: t.trial,
                kernel: t.kernel.clone(),
                times_ms: times[i].clone(),
            };
            self.log.confirm(&c)?;
            let median_ms = crate::measure::median(&times[i]);
            self.confirmed.push(Confirmed {
                phase: t.phase,
                trial: t.trial,
                kernel: t.kernel.clone(),
                median_ms,
                gflops: crate::measure::gflops(kernels[i].1.manifest.flops, median_ms),
                launches: times[i].len(),
            });
        }
        Ok(())
    }

    /// Takes back the trials of a resumed log (rebuilding the guided ones for their features).
    fn restore(&mut self, old: Vec<Trial>) -> Result<(), TuneError> {
        for t in old {
            match t.phase {
                Phase::Random => self.search.random.push(t),
                Phase::Guided => {
                    let built = self.search.task.rebuild(&t).map_err(|e| {
                        TuneError::Program(format!(
                            "guided trial {} of the resumed log cannot be rebuilt for this program (a record of another program or version?): {e}",
                            t.trial
                        ))
                    })?;
                    // The kernel it records is the one its candidate builds: measured again
                    // otherwise (a log another mapsat wrote, or an edited one).
                    if built.hash != t.kernel {
                        return Err(TuneError::Program(format!(
                            "guided trial {} of the resumed log records kernel {}, but its candidate builds kernel {} \
                             (a log written by another version of mapsat, or edited): tune into a new log",
                            t.trial, t.kernel, built.hash
                        )));
                    }
                    let candidate = built.candidate.clone();
                    self.search.guided.push(Done { trial: t, candidate, features: built.features });
                }
            }
        }
        Ok(())
    }

    fn measure(
        &mut self,
        b: &Built,
        phase: Phase,
        trial: u64,
        batch: u64,
        learned: Option<f64>,
    ) -> Result<Trial, TuneError> {
        if self.progress.cancelled() {
            return Err(TuneError::Cancelled);
        }
        self.count += 1;
        let opts = self.search.opts;
        let fault = opts.fault.filter(|(_, n)| *n == self.count).map(|(f, _)| f);
        let t = Instant::now();
        let o =
            self.measurer.measure(&b.source, &b.manifest, opts.warmup, opts.runs, fault).map_err(TuneError::Device)?;
        self.measure_s += t.elapsed().as_secs_f64();
        self.compile_s += o.build_ms / 1e3;
        // Stopped while it ran (Ctrl-C reaches the worker too, which then dies): not recorded,
        // so that a resumed tune measures it.
        if self.progress.cancelled() {
            return Err(TuneError::Cancelled);
        }
        let ok = o.status == worker::Status::Ok;
        let median_ms = if ok { crate::measure::median(&o.times_ms) } else { 0.0 };
        let min_ms = if ok { o.times_ms.iter().copied().fold(f64::INFINITY, f64::min) } else { 0.0 };
        let trial = Trial {
            trial,
            phase,
            batch,
            tuning: b.candidate.tuning.clone(),
            mapping: b.mapping.clone(),
            local: b.candidate.local.clone(),
            kernel: b.hash.clone(),
            status: o.status,
            reason: o.message,
            times_ms: o.times_ms,
            median_ms,
            min_ms,
            gflops: crate::measure::gflops(b.manifest.flops, median_ms),
            build_ms: o.build_ms,
            predicted_ms: b.prediction.total_ms,
            learned_score: learned,
            reused: None,
        };
        self.log.append(&trial)?;
        Ok(trial)
    }

    /// Reports the trial just recorded in its phase.
    fn report(&mut self, t: &Trial) {
        let trials: Vec<&Trial> = match t.phase {
            Phase::Guided => self.search.guided.iter().map(|d| &d.trial).collect(),
            Phase::Random => self.search.random.iter().collect(),
        };
        let best = trials.iter().filter(|t| t.ok()).map(|t| t.gflops).fold(0.0, f64::max);
        let failures = trials.iter().filter(|t| !t.ok()).count();
        self.progress.trial(t, best, failures);
    }

    fn guided(&mut self) -> Result<(), TuneError> {
        let opts = self.search.opts;
        self.progress.phase(Phase::Guided, opts.trials, self.search.guided.len());
        while self.search.guided.len() < opts.trials {
            let b = (self.search.guided.len() / opts.batch) as u64;
            let start = b as usize * opts.batch;
            let n = opts.batch.min(opts.trials - start);
            self.search.model = None;
            if b > 0 {
                self.search.retrain(b, self.progress);
            } else if let Some(prior) = &opts.prior {
                self.search.model = Learned::fit(prior.data.clone()).ok();
            }
            let chosen = self.search.batch(b, n);
            let measured: Vec<String> = self.search.guided.iter().map(|d| d.trial.kernel.clone()).collect();
            let todo: Vec<_> = chosen.into_iter().filter(|(x, _)| !measured.contains(&x.hash)).collect();
            if todo.is_empty() {
                self.progress.note("every valid candidate the search can reach is measured: stopping early");
                break;
            }
            for (built, learned) in todo {
                if self.search.guided.len() >= start + n {
                    break;
                }
                let no = self.search.guided.len() as u64;
                let t = self.measure(&built, Phase::Guided, no, b, learned)?;
                self.search.guided.push(Done {
                    trial: t.clone(),
                    candidate: built.candidate,
                    features: built.features,
                });
                self.report(&t);
            }
            // A batch cut short by an exhausted pool still counts as done.
            if self.search.guided.len() < start + n {
                self.search.score_batch(b);
                break;
            }
            self.search.score_batch(b);
        }
        let b = self.search.guided.iter().map(|d| d.trial.batch + 1).max().unwrap_or(0);
        self.search.retrain(b, self.progress);
        Ok(())
    }

    fn random(&mut self) -> Result<(), TuneError> {
        let opts = self.search.opts;
        if opts.random_trials == 0 {
            return Ok(());
        }
        self.progress.phase(Phase::Random, opts.random_trials, self.search.random.len());
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(opts.seed.wrapping_add(0x5EED));
        // Replay the draws of the trials already in the log, each drawn apart from those
        // before it, as it was.
        let mut drawn = std::collections::HashSet::new();
        for k in 0..self.search.random.len() {
            self.search.random_candidate(&mut rng, &drawn);
            drawn.insert(self.search.random[k].kernel.clone());
        }
        while self.search.random.len() < opts.random_trials {
            let Some(b) = self.search.random_candidate(&mut rng, &drawn) else {
                self.progress.note("random sampling found no new valid candidate: stopping early");
                break;
            };
            let no = self.search.random.len() as u64;
            drawn.insert(b.hash.clone());
            let t = match self.search.guided_of(&b.hash).cloned() {
                Some(g) => {
                    let t = Trial {
                        trial: no,
                        phase: Phase::Random,
                        batch: 0,
                        reused: Some(g.trial),
                        learned_score: None,
                        ..g
                    };
                    self.log.append(&t)?;
                    t
                }
                None => self.measure(&b, Phase::Random, no, 0, None)?,
            };
            self.search.random.push(t.clone());
            self.report(&t);
        }
        Ok(())
    }
}

/// The median correct candidate of random valid sampling by time (of an even number, the
/// slower of the middle two): what the best kernel is compared with.
pub fn median_valid(random: &[Trial]) -> Option<&Trial> {
    let mut valid: Vec<&Trial> = random.iter().filter(|t| t.ok()).collect();
    valid.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
    valid.get(valid.len() / 2).copied()
}

/// The result from the search's state: the best correct kernel (by its confirmed time when it
/// has one, else by its trial's), rebuilt.
fn finish(
    search: Search,
    mut confirmed: Vec<Confirmed>,
    device_name: String,
    timing: Timing,
    restarts: u64,
) -> Result<TuneResult, TuneError> {
    confirmed.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
    let guided: Vec<Trial> = search.guided.iter().map(|d| d.trial.clone()).collect();
    let all = || guided.iter().chain(&search.random);
    let best_trial = match confirmed.first() {
        Some(c) => all().find(|t| t.kernel == c.kernel && t.phase == c.phase && t.trial == c.trial).cloned(),
        None => all().filter(|t| t.ok()).min_by(|a, b| a.rank_ms().total_cmp(&b.rank_ms())).cloned(),
    };
    let task = search.task;
    let best = match &best_trial {
        Some(t) => Some(task.rebuild(t).map_err(|e| TuneError::Program(format!("trial {}: {e}", t.trial)))?),
        None => None,
    };
    Ok(TuneResult {
        task_hash: task.hash.clone(),
        device_name,
        guided,
        random: search.random,
        confirmed,
        best,
        best_trial,
        accuracy: search.accuracy,
        timing,
        rejections: search.rejections,
        restarts,
        model: search.model,
    })
}

/// Both models' view of one candidate: the analytical prediction and, with a model, its score.
pub fn predict(task: &Task, c: &task::Candidate, model: Option<&Learned>) -> Result<(Built, Option<f64>), TuneError> {
    let built = task.build(c).map_err(|e| match e {
        task::Rejection::Invalid(m) => TuneError::Program(format!("the candidate is not valid: {m}")),
        task::Rejection::Codegen(m) => TuneError::Program(format!("code generation refused the candidate: {m}")),
    })?;
    let score = model.map(|m| model::CostModel::score(m, std::slice::from_ref(&built.features))[0]);
    Ok((built, score))
}

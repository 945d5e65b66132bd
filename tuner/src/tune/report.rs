//! What a tune leaves in its output folder: the best kernel (source, manifest, and the mapped
//! program as `.lift` with its sizes as defaults, so that `mapsat run` reproduces it), a report
//! in Markdown and JSON (the best candidates, the median valid candidate, where the time went,
//! the models' accuracy), and an SVG plot of the best GFLOP/s so far (the best time, for a
//! program without floating-point operations) against trials for the guided search and for
//! random valid sampling.

use super::log::{Phase, Trial};
use super::task::Task;
use super::worker::Status;
use super::{BatchAccuracy, Confirmed, Timing, TuneError, TuneResult};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Trials listed in the report.
const TOP: usize = 10;

/// The summary of a tune (the JSON report).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// The program's name.
    pub program: String,
    /// The task hash (as in the log).
    pub task: String,
    /// The device.
    pub device: String,
    /// The problem sizes.
    pub sizes: mapsat_ir::Sizes,
    /// The fastest correct kernel's first trial.
    pub best: Option<Trial>,
    /// Its time: the median of its confirming launches when it was measured again, else its
    /// trial's.
    pub best_ms: f64,
    /// GFLOP/s at that time.
    pub best_gflops: f64,
    /// The best of the guided search, in GFLOP/s (confirmed).
    pub guided_best_gflops: f64,
    /// The best of random valid sampling, in GFLOP/s (confirmed).
    pub random_best_gflops: f64,
    /// The best time of the guided search, in ms (confirmed; 0 without a correct trial).
    pub guided_best_ms: f64,
    /// The best time of random valid sampling, in ms (confirmed; 0 without a correct trial).
    pub random_best_ms: f64,
    /// The best kernels of both phases measured again at the end, fastest first.
    pub confirmed: Vec<Confirmed>,
    /// The median correct candidate of random valid sampling by time, its GFLOP/s.
    pub median_valid_gflops: f64,
    /// Its time in ms (0 without random valid trials): what a program without floating-point
    /// operations (an `i32` one, 0 GFLOP/s at every candidate) is compared by.
    pub median_valid_ms: f64,
    /// The median valid candidate measured again with the best kernels (interleaved), when
    /// confirmation ran.
    pub median_confirmed: Option<Confirmed>,
    /// The best kernel's speed over the median valid candidate's (the ratio of their times):
    /// both as measured again together when they were ([`Summary::median_confirmed`]), else both
    /// as measured during the search.
    pub speedup_over_median: f64,
    /// The fastest trials of both phases.
    pub top: Vec<Trial>,
    /// Trials per phase and status.
    pub counts: BTreeMap<String, usize>,
    /// Where the time went.
    pub timing: Timing,
    /// The models' accuracy per batch.
    pub accuracy: Vec<BatchAccuracy>,
    /// Candidates built but not measured: invalid after lowering, refused by code generation.
    pub rejected_invalid: u64,
    /// Refused by code generation although the space accepts them.
    pub rejected_codegen: u64,
    /// Some of code generation's messages for them.
    pub codegen_examples: Vec<String>,
    /// Some of the reasons candidates were over a device limit after lowering (none in reports
    /// written before they were kept).
    #[serde(default)]
    pub invalid_examples: Vec<String>,
    /// Workers started again after a timeout or a crash.
    pub worker_restarts: u64,
    /// The measured trials that failed, by status (`wrong`, `build`, `invalid`, ...): how many,
    /// and the first one's reason (none in reports written before it was).
    #[serde(default)]
    pub failures: Vec<Failures>,
}

/// Measured trials that failed the same way.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Failures {
    /// Their status's name.
    pub status: String,
    /// How many.
    pub count: usize,
    /// The first one's reason.
    pub example: String,
}

/// The failed trials of `trials`, by status in order of first appearance.
fn failures<'a>(trials: impl Iterator<Item = &'a Trial>) -> Vec<Failures> {
    let mut out: Vec<Failures> = Vec::new();
    for t in trials.filter(|t| t.status != Status::Ok) {
        match out.iter_mut().find(|f| f.status == t.status.name()) {
            Some(f) => f.count += 1,
            None => out.push(Failures { status: t.status.name().into(), count: 1, example: t.reason.clone() }),
        }
    }
    out
}

/// The best GFLOP/s of a phase: its confirmed best when confirmation ran, else its best trial.
fn best_gflops_of(ts: &[Trial], confirmed: &[Confirmed], phase: Phase) -> f64 {
    let confirmed = confirmed.iter().filter(|c| c.phase == phase).map(|c| c.gflops).fold(0.0, f64::max);
    if confirmed > 0.0 {
        return confirmed;
    }
    ts.iter().filter(|t| t.ok()).map(|t| t.gflops).fold(0.0, f64::max)
}

/// The best time of a phase in ms: its confirmed best when confirmation ran, else its best
/// trial's (0 without a correct trial).
fn best_ms_of(ts: &[Trial], confirmed: &[Confirmed], phase: Phase) -> f64 {
    let fastest = |ms: &mut dyn Iterator<Item = f64>| ms.filter(|m| *m > 0.0).min_by(f64::total_cmp);
    let confirmed = fastest(&mut confirmed.iter().filter(|c| c.phase == phase).map(|c| c.median_ms));
    confirmed.or_else(|| fastest(&mut ts.iter().filter(|t| t.ok()).map(|t| t.median_ms))).unwrap_or(0.0)
}

impl Summary {
    /// The summary of a tune's result.
    pub fn of(task: &Task, r: &TuneResult) -> Summary {
        let mut all: Vec<Trial> =
            r.guided.iter().chain(&r.random).filter(|t| t.ok() && t.reused.is_none()).cloned().collect();
        all.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
        // The median valid candidate by time (one candidate: its time and its GFLOP/s).
        let median = super::median_valid(&r.random);
        let (median_valid_ms, median_valid) = median.map_or((0.0, 0.0), |t| (t.median_ms, t.gflops));
        let median_confirmed = median.and_then(|m| r.confirmed.iter().find(|c| c.kernel == m.kernel)).cloned();
        let best = r.best_trial.clone();
        let confirmed = best.as_ref().and_then(|b| r.confirmed.iter().find(|c| c.kernel == b.kernel));
        let (best_ms, best_gflops) = match (confirmed, &best) {
            (Some(c), _) => (c.median_ms, c.gflops),
            (None, Some(b)) => (b.median_ms, b.gflops),
            _ => (0.0, 0.0),
        };
        let mut counts = BTreeMap::new();
        for t in r.guided.iter().chain(&r.random) {
            *counts.entry(format!("{} {}", t.phase.name(), t.status.name())).or_insert(0) += 1;
        }
        Summary {
            program: task.program.name.clone(),
            task: r.task_hash.clone(),
            device: r.device_name.clone(),
            sizes: task.problem.clone(),
            speedup_over_median: match (&best, confirmed, &median_confirmed) {
                (Some(_), Some(b), Some(m)) if b.median_ms > 0.0 => m.median_ms / b.median_ms,
                (Some(b), _, _) if median_valid_ms > 0.0 && b.median_ms > 0.0 => median_valid_ms / b.median_ms,
                _ => 0.0,
            },
            median_confirmed,
            best,
            best_ms,
            best_gflops,
            guided_best_gflops: best_gflops_of(&r.guided, &r.confirmed, Phase::Guided),
            random_best_gflops: best_gflops_of(&r.random, &r.confirmed, Phase::Random),
            guided_best_ms: best_ms_of(&r.guided, &r.confirmed, Phase::Guided),
            random_best_ms: best_ms_of(&r.random, &r.confirmed, Phase::Random),
            confirmed: r.confirmed.clone(),
            median_valid_gflops: median_valid,
            median_valid_ms,
            top: all.into_iter().take(TOP).collect(),
            counts,
            timing: r.timing.clone(),
            accuracy: r.accuracy.clone(),
            rejected_invalid: r.rejections.invalid,
            rejected_codegen: r.rejections.codegen,
            codegen_examples: r.rejections.codegen_examples.clone(),
            invalid_examples: r.rejections.invalid_examples.clone(),
            worker_restarts: r.restarts,
            failures: failures(r.guided.iter().chain(&r.random)),
        }
    }

    /// The report in Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# mapsat tune: `{}` on {}\n", self.program, self.device);
        let _ = writeln!(s, "Problem sizes: `{}`; task `{}`.\n", self.sizes, self.task);
        self.best_section(&mut s);
        self.confirmed_section(&mut s);
        self.top_section(&mut s);
        self.work_section(&mut s);
        self.accuracy_section(&mut s);
        s
    }

    fn best_section(&self, s: &mut String) {
        let Some(b) = &self.best else {
            let _ = writeln!(s, "**No candidate ran correctly.**\n");
            for f in &self.failures {
                let _ = writeln!(s, "- {} {}, e.g. {}", f.count, f.status, f.example.replace('\n', " "));
            }
            let _ = writeln!(s);
            return;
        };
        let random = self.trials(Phase::Random);
        let over =
            if self.median_valid_ms > 0.0 { format!(", of {random} random valid trials") } else { String::new() };
        let _ = writeln!(
            s,
            "**Best kernel:** {}, {} ({} trial {}); {}{over}.\n",
            fmt_ms(self.best_ms),
            fmt_gflops(self.best_gflops),
            b.phase.name(),
            b.trial,
            self.against_median(),
        );
        let _ = writeln!(
            s,
            "- mapping: {}\n- tunable sizes: {}\n- work group: `{:?}`\n",
            match b.mapping.is_empty() {
                true => shown_mapping(&b.mapping).to_string(),
                false => format!("`{}`", b.mapping),
            },
            tunables(&b.tuning),
            b.local
        );
        let _ = writeln!(s, "{}.\n", self.phases().replacen("best", "Best", 1));
    }

    /// True when the program computes floating-point operations (GFLOP/s mean something); an
    /// `i32` program's candidates are compared by their times.
    pub fn has_flops(&self) -> bool {
        self.best_gflops > 0.0 || self.top.iter().any(|t| t.gflops > 0.0)
    }

    /// The best kernel against the median valid candidate: its figure, the ratio of their
    /// times, and where both were measured.
    pub fn against_median(&self) -> String {
        let figure = |gflops, ms| self.figure(gflops, ms);
        match (&self.median_confirmed, &self.best) {
            (Some(m), Some(_)) if self.speedup_over_median > 0.0 => format!(
                "the median valid candidate: {} ({:.1}x less time, both measured again together after the search{})",
                figure(m.gflops, m.median_ms),
                self.speedup_over_median,
                self.other_operations(m.gflops, m.median_ms)
            ),
            (_, Some(b)) if self.median_valid_ms > 0.0 => format!(
                "the median valid candidate: {} ({:.1}x less time, the best at {} in the same search{})",
                figure(self.median_valid_gflops, self.median_valid_ms),
                self.speedup_over_median,
                figure(b.gflops, b.median_ms),
                self.other_operations(self.median_valid_gflops, self.median_valid_ms)
            ),
            _ => "no random valid trial to compare with".to_string(),
        }
    }

    /// A note when a kernel of `gflops` at `ms` counts other floating-point operations than the
    /// best (its tunable sizes, a partial reduction's chunks, change the count), so that the
    /// ratio of their GFLOP/s is not the ratio of their times.
    fn other_operations(&self, gflops: f64, ms: f64) -> &'static str {
        let (best, other) = (self.best_gflops * self.best_ms, gflops * ms);
        match self.has_flops() && (best - other).abs() > 0.005 * best.max(other) {
            true => "; their tunable sizes give them different numbers of operations",
            false => "",
        }
    }

    /// A table's GFLOP/s cell: `-` for a program without floating-point operations.
    fn rate_cell(&self, gflops: f64) -> String {
        if self.has_flops() {
            format!("{gflops:.2}")
        } else {
            "-".to_string()
        }
    }

    /// The median valid candidate's time as the best is compared with: measured again with it
    /// when it was, else from the search (0 without random valid trials).
    pub fn median_compared_ms(&self) -> f64 {
        self.median_confirmed.as_ref().map_or(self.median_valid_ms, |m| m.median_ms)
    }

    /// A kernel's figure: its GFLOP/s, or its time for a program without floating-point
    /// operations.
    fn figure(&self, gflops: f64, ms: f64) -> String {
        match self.has_flops() {
            true => format!("{gflops:.2} GFLOP/s"),
            false => fmt_ms(ms),
        }
    }

    /// The trials measured in `phase`, whatever their status.
    pub fn trials(&self, phase: Phase) -> usize {
        let prefix = format!("{} ", phase.name());
        self.counts.iter().filter(|(k, _)| k.starts_with(&prefix)).map(|(_, v)| v).sum()
    }

    /// The best of each phase: GFLOP/s, or times for a program without floating-point operations.
    pub fn phases(&self) -> String {
        let best = |gflops: f64, ms: f64| if ms > 0.0 { self.figure(gflops, ms) } else { "none".to_string() };
        format!(
            "best of the guided search: {}; best of random valid sampling: {}",
            best(self.guided_best_gflops, self.guided_best_ms),
            best(self.random_best_gflops, self.random_best_ms)
        )
    }

    fn confirmed_section(&self, s: &mut String) {
        if self.confirmed.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "## Best kernels measured again\n\nThe best kernels of both phases, and the median valid \
             candidate, were measured again at the end, together (interleaved); these medians rank them.\n\n| phase | trial | time | GFLOP/s | launches |\n|---|---|---|---|---|"
        );
        for c in &self.confirmed {
            let (phase, time, rate) = (c.phase.name(), fmt_ms(c.median_ms), self.rate_cell(c.gflops));
            let _ = writeln!(s, "| {phase} | {} | {time} | {rate} | {} |", c.trial, c.launches);
        }
        let _ = writeln!(s);
    }

    fn top_section(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "## Fastest candidates\n\n| time | GFLOP/s | predicted | phase | mapping | tunables | work group |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|");
        for t in &self.top {
            let (time, predicted) = (fmt_ms(t.median_ms), fmt_ms(t.predicted_ms));
            let _ = writeln!(
                s,
                "| {time} | {} | {predicted} | {} | `{}` | `{}` | `{:?}` |",
                self.rate_cell(t.gflops),
                t.phase.name(),
                t.mapping,
                t.tuning,
                t.local
            );
        }
    }

    fn work_section(&self, s: &mut String) {
        let _ = writeln!(s, "\n## Trials\n");
        for (k, v) in &self.counts {
            let _ = writeln!(s, "- {k}: {v}");
        }
        let t = &self.timing;
        let _ = writeln!(
            s,
            "\n## Time\n\n- total {:.1} s; search {:.1} s (building candidates {:.1} s); measuring {:.1} s (device compiler {:.1} s)",
            t.total_s, t.search_s, t.build_s, t.measure_s, t.compile_s
        );
        let _ = writeln!(
            s,
            "- candidates not measured: {} over a device limit after lowering, {} refused by code generation; {} worker restarts",
            self.rejected_invalid, self.rejected_codegen, self.worker_restarts
        );
        if !self.invalid_examples.is_empty() {
            let _ = writeln!(s, "\nCandidates over a device limit after lowering, e.g.:\n");
            for e in &self.invalid_examples {
                let _ = writeln!(s, "- {}", e.replace('\n', " "));
            }
        }
        if !self.codegen_examples.is_empty() {
            let _ = writeln!(s, "\nCode generation refused candidates the space accepts (the two disagree), e.g.:\n");
            for e in &self.codegen_examples {
                let _ = writeln!(s, "- {}", e.replace('\n', " "));
            }
        }
    }

    fn accuracy_section(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "\n## Model accuracy (Spearman's rho of score and measured speed, per batch, before measuring)\n"
        );
        let _ = writeln!(s, "| batch | correct runs | analytical | learned |\n|---|---|---|---|");
        for a in &self.accuracy {
            let learned = a.learned_spearman.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
            let _ = writeln!(s, "| {} | {} | {:.3} | {learned} |", a.batch, a.measured, a.analytic_spearman);
        }
    }
}

/// Best GFLOP/s so far after each trial (0 before the first correct one), as the corners of a
/// step function; with `flops` false (a program without floating-point operations), the best
/// time so far in microseconds instead, from the first correct trial on.
fn best_so_far(ts: &[Trial], flops: bool) -> Vec<(usize, f64)> {
    let value = |t: &Trial| if flops { t.gflops } else { t.median_ms * 1e3 };
    let better = |v: f64, best: Option<f64>| best.is_none_or(|b| if flops { v > b } else { v < b });
    let mut best: Option<f64> = flops.then_some(0.0);
    let mut out = Vec::new();
    for (i, t) in ts.iter().enumerate() {
        if t.ok() && better(value(t), best) {
            if let Some(b) = best {
                out.push((i + 1, b));
            }
            best = Some(value(t));
        }
        if let Some(b) = best {
            out.push((i + 1, b));
        }
    }
    out
}

/// A rate in GFLOP/s as text, or "no floating-point operations" for a kernel without any (an
/// `i32` or `bool` one, whose rate is 0).
pub fn fmt_gflops(gflops: f64) -> String {
    if gflops > 0.0 {
        format!("{gflops:.2} GFLOP/s")
    } else {
        "no floating-point operations".to_string()
    }
}

/// A candidate's tunable sizes, quoted, or "none" for a program without any.
fn tunables(t: &mapsat_ir::Sizes) -> String {
    if t.is_empty() {
        "none".to_string()
    } else {
        format!("`{t}`")
    }
}

/// A time in milliseconds with a unit that keeps 3 significant digits.
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.3} s", ms / 1e3)
    } else if ms >= 1.0 {
        format!("{ms:.3} ms")
    } else if ms >= 1e-3 {
        format!("{:.3} us", ms * 1e3)
    } else {
        format!("{:.0} ns", ms * 1e6)
    }
}

/// The plot of best GFLOP/s so far against trials, as SVG text; of the best time so far for a
/// program without floating-point operations.
pub fn plot(guided: &[Trial], random: &[Trial], title: &str) -> Result<String, String> {
    let flops = guided.iter().chain(random).any(|t| t.ok() && t.gflops > 0.0);
    let (g, r) = (best_so_far(guided, flops), best_so_far(random, flops));
    let y_desc = if flops { "best GFLOP/s so far" } else { "best time so far (us)" };
    let max_x = guided.len().max(random.len()).max(1);
    let max_y = g.iter().chain(&r).map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0usize..max_x, 0.0..max_y)
            .map_err(|e| e.to_string())?;
        chart.configure_mesh().x_desc("trials").y_desc(y_desc).draw().map_err(|e| e.to_string())?;
        for (points, color, name) in [(&g, BLUE, "model-guided search"), (&r, RED, "random valid sampling")] {
            if points.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// True when `a` and `b` name one file, existing or to be written: the same path once links
/// are resolved as far as the folders exist (`out/sub/../x.lift` and `x.lift` are one file
/// before `out` is made), or one file under two names (a hard link).
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
        #[cfg(not(unix))]
        let _ = (x, y);
    }
    matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

/// Whether the file or folder `p` is inside the folder `dir` (or is it), as [`same_file`]
/// resolves paths.
pub fn inside(p: &Path, dir: &Path) -> bool {
    matches!((resolved(p), resolved(dir)), (Some(x), Some(y)) if x.starts_with(&y))
}

/// A path made absolute, with its links resolved component by component as far as they
/// exist, and `.` and `..` taken away where they do not.
fn resolved(p: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let abs = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().ok()?.join(p) };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
        if let Ok(real) = out.canonicalize() {
            out = real;
        }
    }
    Some(out)
}

/// The files [`write`] writes into `dir` for a program `name` tuned in `dialect` (the kernel's
/// source, manifest and mapped program, the report and the plot).
pub fn outputs(name: &str, dialect: mapsat_codegen::Dialect, dir: &Path) -> Vec<PathBuf> {
    // The kernel's files are named by its entry point (`dot_kernel.cl` for `dot`), the mapped
    // program by the program.
    let entry = mapsat_codegen::entry_name(name);
    let kernel = [format!("{entry}.{}", dialect.extension()), manifest_file(&entry), format!("{name}.lift")];
    let report = ["report.md", "report.json", "progress.svg"].map(String::from);
    kernel.into_iter().chain(report).map(|f| dir.join(f)).collect()
}

/// The manifest file of the kernel `entry`: `ENTRY.json`, or for a kernel named `report`,
/// `report_kernel.json`, beside the tune's `report.json`.
fn manifest_file(entry: &str) -> String {
    match entry {
        "report" => "report_kernel.json".to_string(),
        entry => format!("{entry}.json"),
    }
}

/// Refuses output files of which one is a file to `keep` (its path and what it is: "the input
/// program", "the log"), naming both; checked before a tune ([`outputs`]) and again before
/// [`write`].
pub fn keep_away(files: &[PathBuf], keep: &[(&Path, &str)]) -> Result<(), TuneError> {
    for p in files {
        if let Some((k, what)) = keep.iter().find(|(k, _)| same_file(p, k)) {
            let named = if p == k { String::new() } else { format!(" ({})", k.display()) };
            return Err(TuneError::Io(format!("{} would overwrite {what}{named}", p.display())));
        }
    }
    Ok(())
}

/// A mapping as the reports show it: the empty one said in words (a kernel without a map).
pub fn shown_mapping(mapping: &str) -> &str {
    match mapping.is_empty() {
        true => "the empty one (no map: one work item runs the kernel)",
        false => mapping,
    }
}

/// Refuses, before anything is measured, a tune of the kernel `name` into `out` logging to
/// `log` whose files ([`outputs`], the log's model) would replace one of `inputs` (each named
/// with what it is: the program, a prior model) or the log, or cannot be written (a folder or
/// a FIFO stands there), whose log would replace one of `inputs`, or whose measured inputs'
/// folder (`out/data/`) holds one of `inputs` or is a file.
pub fn check_outputs(
    name: &str,
    dialect: mapsat_codegen::Dialect,
    out: &Path,
    log: &Path,
    inputs: &[(&Path, &str)],
) -> Result<(), TuneError> {
    let mut files = outputs(name, dialect, out);
    files.push(PathBuf::from(format!("{}.model.json", log.display())));
    let mut kept = inputs.to_vec();
    kept.push((log, "the log"));
    keep_away(&files, &kept)?;
    keep_away(&[log.to_path_buf()], inputs)?;
    // What stands where an output goes (a folder, a FIFO) is told before measuring, not after.
    for f in &files {
        mapsat_ir::files::check_writable(f).map_err(|e| TuneError::Io(format!("cannot write {}: {e}", f.display())))?;
    }
    let data = out.join("data");
    if data.exists() && !data.is_dir() {
        return Err(TuneError::Io(format!("cannot write in {}: a file, not a folder", data.display())));
    }
    match inputs.iter().find(|(f, _)| inside(f, &data)) {
        Some((f, what)) => {
            Err(TuneError::Io(format!("{what} {} is in {}, which the tune writes", f.display(), data.display())))
        }
        None => Ok(()),
    }
}

/// Writes the output folder (see the module documentation); the paths written. Nothing is
/// written when one of them is one of the files to `keep` ([`keep_away`]): an error names it.
pub fn write(task: &Task, r: &TuneResult, dir: &Path, keep: &[(&Path, &str)]) -> Result<Vec<PathBuf>, TuneError> {
    let io = |p: &Path, e: String| TuneError::Io(format!("cannot write {}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e.to_string()))?;
    let summary = Summary::of(task, r);
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    if let (Some(b), Some(t)) = (&r.best, &r.best_trial) {
        files.push((dir.join(&b.manifest.source), b.source.clone()));
        files.push((
            dir.join(manifest_file(&b.manifest.entry)),
            serde_json::to_string_pretty(&b.manifest).unwrap_or_default() + "\n",
        ));
        let q = task.mapped_program(&b.candidate).map_err(|e| TuneError::Program(e.to_string()))?;
        let header = format!(
            "// The fastest kernel mapsat tune found for `{}` on {}: {}, {}.\n// Mapping {}; tunable sizes {}; work group {}.\n",
            task.program.name,
            r.device_name,
            fmt_ms(summary.best_ms),
            fmt_gflops(summary.best_gflops),
            shown_mapping(&t.mapping),
            tunables(&t.tuning),
            match t.local.is_empty() {
                true => "code generation's default".to_string(),
                false => format!("{:?}", t.local),
            }
        );
        let built_with = match b.manifest.build_options.as_str() {
            "" => String::new(),
            o => format!("// Built with `{o}` (`mapsat run --reassociate`).\n"),
        };
        files.push((dir.join(format!("{}.lift", task.program.name)), header + &built_with + &mapsat_ir::print(&q)));
    }
    files.push((dir.join("report.md"), summary.markdown()));
    files.push((dir.join("report.json"), serde_json::to_string_pretty(&summary).unwrap_or_default() + "\n"));
    let title = format!("{} on {}", task.program.name, r.device_name.split(" (").next().unwrap_or(""));
    let svg = plot(&r.guided, &r.random, &title).map_err(|e| io(&dir.join("progress.svg"), e))?;
    files.push((dir.join("progress.svg"), svg));
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    keep_away(&paths, keep).map_err(|e| {
        TuneError::Io(format!(
            "the report is not written: {e} (the log keeps every measurement: another output folder with `--log` naming this log and `--resume` writes the report without measuring again)"
        ))
    })?;
    let mut out = Vec::new();
    for (p, text) in files {
        mapsat_ir::files::write(&p, text).map_err(|e| io(&p, e.to_string()))?;
        out.push(p);
    }
    Ok(out)
}

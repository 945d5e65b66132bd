//! What a tune leaves in its output folder: the best kernel (source, manifest, and the mapped
//! program as `.lift` with its sizes as defaults, so that `mapsat run` reproduces it), a report
//! in Markdown and JSON (the best candidates, the median valid candidate, where the time went,
//! the models' accuracy), and an SVG plot of the best GFLOP/s so far against trials for the
//! guided search and for random valid sampling.

use super::log::{Phase, Trial};
use super::task::Task;
use super::{BatchAccuracy, Confirmed, Timing, TuneError, TuneResult};
use plotters::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Trials listed in the report.
const TOP: usize = 10;

/// The summary of a tune (the JSON report).
#[derive(Clone, Debug, Serialize)]
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
    /// The best kernels of both phases measured again at the end, fastest first.
    pub confirmed: Vec<Confirmed>,
    /// The median correct candidate of random valid sampling by time, its GFLOP/s.
    pub median_valid_gflops: f64,
    /// Its time in ms (0 without random valid trials): what a program without floating-point
    /// operations (an `i32` one, 0 GFLOP/s at every candidate) is compared by.
    pub median_valid_ms: f64,
    /// The best kernel's speed over the median valid candidate's (the ratio of their times), both
    /// as measured during the search (the best's confirmed time is from another round, possibly
    /// under another load).
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
    /// Workers started again after a timeout or a crash.
    pub worker_restarts: u64,
}

/// The best GFLOP/s of a phase: its confirmed best when confirmation ran, else its best trial.
fn best_gflops_of(ts: &[Trial], confirmed: &[Confirmed], phase: Phase) -> f64 {
    let confirmed = confirmed.iter().filter(|c| c.phase == phase).map(|c| c.gflops).fold(0.0, f64::max);
    if confirmed > 0.0 {
        return confirmed;
    }
    ts.iter().filter(|t| t.ok()).map(|t| t.gflops).fold(0.0, f64::max)
}

impl Summary {
    /// The summary of a tune's result.
    pub fn of(task: &Task, r: &TuneResult) -> Summary {
        let mut all: Vec<Trial> =
            r.guided.iter().chain(&r.random).filter(|t| t.ok() && t.reused.is_none()).cloned().collect();
        all.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
        // The median valid candidate by time (one candidate: its time and its GFLOP/s).
        let mut valid: Vec<&Trial> = r.random.iter().filter(|t| t.ok()).collect();
        valid.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
        let (median_valid_ms, median_valid) =
            valid.get(valid.len() / 2).map_or((0.0, 0.0), |t| (t.median_ms, t.gflops));
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
            speedup_over_median: match &best {
                Some(b) if median_valid_ms > 0.0 && b.median_ms > 0.0 => median_valid_ms / b.median_ms,
                _ => 0.0,
            },
            best,
            best_ms,
            best_gflops,
            guided_best_gflops: best_gflops_of(&r.guided, &r.confirmed, Phase::Guided),
            random_best_gflops: best_gflops_of(&r.random, &r.confirmed, Phase::Random),
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
            worker_restarts: r.restarts,
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
            return;
        };
        let random = self.counts.iter().filter(|(k, _)| k.starts_with("random")).map(|(_, v)| v).sum::<usize>();
        let median = match (self.median_valid_gflops > 0.0, self.median_valid_ms > 0.0) {
            (true, _) => format!(
                "{:.1}x the median valid candidate during the search ({:.2} GFLOP/s there, {:.2} GFLOP/s over {random} random valid trials)",
                self.speedup_over_median, b.gflops, self.median_valid_gflops,
            ),
            (false, true) => format!(
                "{:.1}x the median valid candidate during the search ({} there, {} over {random} random valid trials)",
                self.speedup_over_median,
                fmt_ms(b.median_ms),
                fmt_ms(self.median_valid_ms),
            ),
            _ => "no random valid trial to compare with".to_string(),
        };
        let _ = writeln!(
            s,
            "**Best kernel:** {}, {:.2} GFLOP/s ({} trial {}), {median}.\n",
            fmt_ms(self.best_ms),
            self.best_gflops,
            b.phase.name(),
            b.trial,
        );
        let _ =
            writeln!(s, "- mapping: `{}`\n- tunable sizes: `{}`\n- work group: `{:?}`\n", b.mapping, b.tuning, b.local);
        let _ = writeln!(
            s,
            "Best of the guided search: {:.2} GFLOP/s; best of random valid sampling: {:.2} GFLOP/s.\n",
            self.guided_best_gflops, self.random_best_gflops
        );
    }

    fn confirmed_section(&self, s: &mut String) {
        if self.confirmed.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "## Best kernels measured again\n\nThe best kernels of both phases were measured again at the \
             end, together (interleaved); these medians rank them.\n\n| phase | trial | time | GFLOP/s | launches |\n|---|---|---|---|---|"
        );
        for c in &self.confirmed {
            let (phase, time) = (c.phase.name(), fmt_ms(c.median_ms));
            let _ = writeln!(s, "| {phase} | {} | {time} | {:.2} | {} |", c.trial, c.gflops, c.launches);
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
                "| {time} | {:.2} | {predicted} | {} | `{}` | `{}` | `{:?}` |",
                t.gflops,
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
/// step function.
fn best_so_far(ts: &[Trial]) -> Vec<(usize, f64)> {
    let mut best = 0.0f64;
    let mut out = Vec::new();
    for (i, t) in ts.iter().enumerate() {
        if t.ok() && t.gflops > best {
            out.push((i + 1, best));
            best = t.gflops;
        }
        out.push((i + 1, best));
    }
    out
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

/// The plot of best GFLOP/s so far against trials, as SVG text.
pub fn plot(guided: &[Trial], random: &[Trial], title: &str) -> Result<String, String> {
    let (g, r) = (best_so_far(guided), best_so_far(random));
    let max_x = g.len().max(r.len()).max(1);
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
        chart.configure_mesh().x_desc("trials").y_desc("best GFLOP/s so far").draw().map_err(|e| e.to_string())?;
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

/// True when `a` and `b` name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Writes the output folder (see the module documentation); the paths written. Nothing is
/// written when one of them is one of the files to `keep` (the input program, the log): an
/// error names it.
pub fn write(task: &Task, r: &TuneResult, dir: &Path, keep: &[&Path]) -> Result<Vec<PathBuf>, TuneError> {
    let io = |p: &Path, e: String| TuneError::Io(format!("cannot write {}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e.to_string()))?;
    let summary = Summary::of(task, r);
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    if let (Some(b), Some(t)) = (&r.best, &r.best_trial) {
        files.push((dir.join(&b.manifest.source), b.source.clone()));
        // A kernel named `report` keeps its manifest beside the tune's `report.json`.
        let manifest = match b.manifest.entry.as_str() {
            "report" => "report_kernel.json".to_string(),
            entry => format!("{entry}.json"),
        };
        files.push((dir.join(manifest), serde_json::to_string_pretty(&b.manifest).unwrap_or_default() + "\n"));
        let q = task.mapped_program(&b.candidate).map_err(|e| TuneError::Program(e.to_string()))?;
        let header = format!(
            "// The fastest kernel mapsat tune found for `{}` on {}: {}, {:.2} GFLOP/s.\n// Mapping {}; tunable sizes `{}`; work group {:?}.\n",
            task.program.name,
            r.device_name,
            fmt_ms(summary.best_ms),
            summary.best_gflops,
            t.mapping,
            t.tuning,
            t.local
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
    if let Some((p, k)) = files.iter().find_map(|(p, _)| keep.iter().find(|k| same_file(p, k)).map(|k| (p, k))) {
        return Err(TuneError::Io(format!(
            "the report is not written: {} would overwrite {} (the log keeps every measurement: another output folder with `--log` naming this log and `--resume` writes the report without measuring again)",
            p.display(),
            k.display()
        )));
    }
    let mut out = Vec::new();
    for (p, text) in files {
        std::fs::write(&p, text).map_err(|e| io(&p, e.to_string()))?;
        out.push(p);
    }
    Ok(out)
}

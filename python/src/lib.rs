//! `mapsat._mapsat`: the Rust half of mapsat's Python package (the other half,
//! `python/mapsat/__init__.py`, turns numpy arrays and keyword arguments into what this takes).
//!
//! Every call runs on a thread of its own with the command line's stack (the passes over a
//! program recurse along its tree) and without the GIL, so that Python threads go on.

use mapsat::codegen::{self, Dialect};
use mapsat::ir::interp::{self, Tensor, TensorData};
use mapsat::ir::{self, diag, profile::Profile, Program, Sizes};
use mapsat::limits::MAX_SOURCE_BYTES;
mod stages;

use mapsat::ir::stages::Stage;
use mapsat::tuner::measure::{self, DeviceSpec, MappedStage, RunConfig};
use mapsat::tuner::tune::{self, task::Task, Files, TuneOptions};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{IntoPyArray, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pyo3::create_exception!(mapsat, Error, PyException, "A program, mapping, input or device mapsat refuses.");

type R<T> = Result<T, String>;

fn err(msg: impl std::fmt::Display) -> PyErr {
    Error::new_err(pythonic(msg.to_string().trim_end()))
}

/// A message of the stages, which name the command line's flags, in Python's words: `--size
/// N=VALUE` is `sizes={"N": VALUE}`, `--local`, `--target`, `--trials` and `--resume` are
/// keyword arguments, and a log is in the `out` folder.
fn pythonic(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find("--size ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "--size ".len()..];
        let end = after.find(|c: char| c.is_whitespace() || c == ',' || c == ')').unwrap_or(after.len());
        match after[..end].split_once('=') {
            Some((name, value)) => out.push_str(&format!("sizes={{\"{name}\": {value}}}")),
            None => out.push_str(&format!("sizes={{\"{}\": ...}}", &after[..end])),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out.replace("--local ", "local=")
        .replace("--target", "target=")
        .replace("--trials", "trials")
        .replace("--resume", "resume=True")
        .replace("another --log", "another out folder")
}

/// Runs `f` without the GIL on a thread with the passes' stack
/// ([`mapsat::limits::spawn_deep`]), waiting for it in steps so that Ctrl-C
/// (`KeyboardInterrupt`) and `limit` end the wait; the thread then goes on to its end in the
/// background (a kernel cannot be stopped), its result dropped.
fn deep<T: Send + 'static>(
    py: Python<'_>,
    limit: Option<Duration>,
    f: impl FnOnce() -> R<T> + Send + 'static,
) -> PyResult<T> {
    deep_with(py, limit, &Arc::new(AtomicBool::new(false)), f)
}

/// [`deep`], setting `given_up` when the wait ends early (Ctrl-C, `limit`), so that work that
/// looks at it (a tune, between measurements) stops.
fn deep_with<T: Send + 'static>(
    py: Python<'_>,
    limit: Option<Duration>,
    given_up: &Arc<AtomicBool>,
    f: impl FnOnce() -> R<T> + Send + 'static,
) -> PyResult<T> {
    let r = wait(py, limit, f);
    if r.is_err() {
        given_up.store(true, Ordering::Relaxed);
    }
    r
}

fn wait<T: Send + 'static>(
    py: Python<'_>,
    limit: Option<Duration>,
    f: impl FnOnce() -> R<T> + Send + 'static,
) -> PyResult<T> {
    let mut rx = mapsat::limits::spawn_deep(f).map_err(err)?;
    let start = Instant::now();
    loop {
        let (r, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
        rx = back;
        match r {
            Ok(r) => return r.map_err(err),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(err("internal error: mapsat panicked (please report it)"))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                py.check_signals()?;
                if let Some(l) = limit.filter(|l| start.elapsed() > *l) {
                    return Err(err(format!(
                        "error: did not finish within {} s (timeout): the kernel hangs or is far too large",
                        l.as_secs_f64()
                    )));
                }
            }
        }
    }
}

/// A program of mapsat's IR, parsed and type-checked.
#[pyclass(frozen, name = "Program", module = "mapsat._mapsat")]
#[derive(Clone)]
struct PyProgram {
    name: Arc<str>,
    text: Arc<str>,
    program: Arc<Program>,
}

fn render(p: &PyProgram, e: &dyn diag::Diagnose) -> String {
    diag::render(&p.name, &p.text, e)
}

fn to_sizes(given: BTreeMap<String, i64>) -> Sizes {
    let mut s = Sizes::new();
    for (k, v) in given {
        s.insert(k, v);
    }
    s
}

fn from_sizes(s: &Sizes) -> BTreeMap<String, i64> {
    s.iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl PyProgram {
    /// Every size: `given` (each a size of the program), the others at their defaults, with the
    /// program type-checked at them.
    fn sizes(&self, given: &Sizes) -> R<Sizes> {
        if let Some((name, _)) = given.iter().find(|(n, _)| !self.program.sizes.iter().any(|v| v.name == *n)) {
            let known: Vec<&str> = self.program.sizes.iter().map(|v| v.name.as_str()).collect();
            return Err(format!("the program has no size variable `{name}` (it has: {})", known.join(", ")));
        }
        let sizes = self.program.resolve_sizes(given).map_err(|e| e.to_string())?;
        ir::check::check_with_sizes(&self.program, &sizes).map_err(|e| render(self, &e))?;
        Ok(sizes)
    }

    /// Its kernels at `sizes` (one, or one per stage: `ir::stages`).
    fn split(&self, sizes: &Sizes) -> R<Vec<Stage>> {
        ir::stages::split_at(&self.program, sizes).map_err(|e| render(self, &e))
    }

    /// Its kernels mapped by `mapping` (or as written), each with its work-group size.
    fn mapped(
        &self,
        sizes: &Sizes,
        mapping: Option<&str>,
        profile: Option<Profile>,
        local: &Locals,
    ) -> R<Vec<MappedStage>> {
        let split = self.split(sizes)?;
        local.check(&split)?;
        let r = |e: &dyn diag::Diagnose| render(self, e);
        let m = mapsat::stages::map(split, sizes, mapping, profile, &|name| local.of(name), &r)
            .map_err(|e| e.to_string())?;
        Ok(m.stages)
    }
}

/// The work-group sizes given: one for every kernel, and one by kernel name.
struct Locals {
    all: Option<Vec<i64>>,
    by_kernel: BTreeMap<String, Vec<i64>>,
}

impl Locals {
    /// Refuses a size named for a kernel the program does not have.
    fn check(&self, split: &[Stage]) -> R<()> {
        let names: Vec<&str> = split.iter().map(|s| s.program.name.as_str()).collect();
        match self.by_kernel.keys().find(|k| !names.contains(&k.as_str())) {
            Some(k) => Err(format!(
                "local names kernel `{k}`, which the program does not have (its kernels: {})",
                names.join(", ")
            )),
            None => Ok(()),
        }
    }

    /// The work-group size of kernel `name`: its own, else the one for all, else none.
    fn of(&self, name: &str) -> Option<Vec<i64>> {
        self.by_kernel.get(name).or(self.all.as_ref()).cloned()
    }
}

fn profile(name: Option<&str>) -> R<Option<Profile>> {
    name.map(|n| Profile::load(n).map_err(|e| e.to_string())).transpose()
}

fn device(spec: &str) -> R<DeviceSpec> {
    spec.parse().map_err(|e: measure::MeasureError| e.to_string())
}

fn dialect(name: &str) -> R<Dialect> {
    Dialect::parse(name).ok_or_else(|| format!("target must be opencl or cuda, not `{name}`"))
}

/// [`mapsat::limits::seconds`].
fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    mapsat::limits::seconds(what, s).map_err(err)
}

/// A numpy array of f32, i32 or bool (the Python half converts other dtypes) as a tensor.
fn tensor(a: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    fn of<T: numpy::Element + Copy>(a: &Bound<'_, PyAny>) -> Option<(Vec<usize>, Vec<T>)> {
        let a: PyReadonlyArrayDyn<'_, T> = a.extract().ok()?;
        Some((a.shape().to_vec(), a.as_array().iter().copied().collect()))
    }
    let t = if let Some((s, v)) = of::<f32>(a) {
        Tensor::f32(s, v)
    } else if let Some((s, v)) = of::<i32>(a) {
        Tensor::i32(s, v)
    } else if let Some((s, v)) = of::<bool>(a) {
        Tensor::bool(s, v)
    } else {
        return Err(err("an input must be a numpy array of float32, int32 or bool"));
    };
    Ok(t)
}

fn array<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = IxDyn(&t.shape);
    let bad = |e: numpy::ndarray::ShapeError| err(format!("internal error: {e}"));
    Ok(match t.data {
        TensorData::F32(v) => ArrayD::from_shape_vec(shape, v).map_err(bad)?.into_pyarray(py).into_any(),
        TensorData::I32(v) => ArrayD::from_shape_vec(shape, v).map_err(bad)?.into_pyarray(py).into_any(),
        TensorData::Bool(v) => ArrayD::from_shape_vec(shape, v).map_err(bad)?.into_pyarray(py).into_any(),
    })
}

fn tensors(inputs: &[Bound<'_, PyAny>]) -> PyResult<Vec<Tensor>> {
    inputs.iter().map(tensor).collect()
}

#[pymethods]
impl PyProgram {
    /// Parses and type-checks `text`; `name` names it in error messages.
    #[new]
    fn new(py: Python<'_>, text: String, name: String) -> PyResult<Self> {
        let text = text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text);
        if text.len() as u64 > MAX_SOURCE_BYTES {
            return Err(err(format!("error: {name} is larger than {} MiB: not a program", MAX_SOURCE_BYTES >> 20)));
        }
        deep(py, None, move || {
            let r = |e: &dyn diag::Diagnose| diag::render(&name, &text, e);
            let program = ir::parse(&text).map_err(|e| r(&e))?;
            ir::check::check(&program).map_err(|e| r(&e))?;
            Ok(PyProgram { name: name.into(), text: text.into(), program: Arc::new(program) })
        })
    }

    /// The program's name (after `def`).
    #[getter]
    fn name(&self) -> String {
        self.program.name.clone()
    }

    /// The text it was parsed from, and the name it was given (what rebuilds it).
    fn source(&self) -> (String, String) {
        (self.text.to_string(), self.name.to_string())
    }

    /// The program in canonical form.
    fn __str__(&self) -> String {
        ir::print(&self.program)
    }

    /// Each parameter: its name and, for each dimension, the size variable it is when it is
    /// one (`None` for a length such as `N + 2`), and its scalar kind.
    fn params(&self) -> Vec<(String, Vec<Option<String>>, String)> {
        self.program.params.iter().map(|q| (q.name.clone(), dims(&q.ty), scalar(&q.ty))).collect()
    }

    /// The size variables and their defaults (`None`: none).
    fn size_defaults(&self) -> Vec<(String, Option<i64>)> {
        self.program.sizes.iter().map(|v| (v.name.clone(), v.default)).collect()
    }

    /// The labels of the program's maps, in order.
    fn maps(&self) -> Vec<String> {
        self.program.map_labels()
    }

    /// Every size at `given` (the others at their defaults), checked.
    fn resolve(&self, py: Python<'_>, given: BTreeMap<String, i64>) -> PyResult<BTreeMap<String, i64>> {
        let me = self.clone();
        deep(py, None, move || Ok(from_sizes(&me.sizes(&to_sizes(given))?)))
    }

    /// The type of the result at `given`.
    fn result_type(&self, py: Python<'_>, given: BTreeMap<String, i64>) -> PyResult<String> {
        let me = self.clone();
        deep(py, None, move || {
            let sizes = me.sizes(&to_sizes(given))?;
            let info = ir::check::check_with_sizes(&me.program, &sizes).map_err(|e| render(&me, &e))?;
            Ok(info.result.to_string())
        })
    }

    /// The interpreter's result on `inputs` (in parameter order) at `given`.
    fn eval<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<Bound<'py, PyAny>>,
        given: BTreeMap<String, i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let inputs = tensors(&inputs)?;
        let me = self.clone();
        let out = deep(py, None, move || {
            let sizes = me.sizes(&to_sizes(given))?;
            interp::eval(&me.program, &sizes, &inputs).map_err(|e| render(&me, &e))
        })?;
        array(py, out)
    }

    /// Up to `n` valid mappings sampled from the space at `given` under the profile `target`
    /// (of a program of several kernels: each kernel's samples, combined in turn).
    #[pyo3(signature = (given, n, seed, target=None))]
    fn sample(
        &self,
        py: Python<'_>,
        given: BTreeMap<String, i64>,
        n: usize,
        seed: u64,
        target: Option<String>,
    ) -> PyResult<Vec<String>> {
        let me = self.clone();
        deep(py, None, move || {
            let mut per = Vec::new();
            for (_, space) in me.spaces(&to_sizes(given), target.as_deref())? {
                per.push(match space {
                    Some(s) => {
                        s.sample(n, seed).map_err(|e| e.to_string())?.iter().map(|m| s.show(m).to_string()).collect()
                    }
                    None => vec![String::new()],
                });
            }
            Ok(stages::combine(&per, n))
        })
    }

    /// The number of valid mappings: `(value, exact)` (of a program of several kernels: the
    /// product of its kernels').
    #[pyo3(signature = (given, target=None))]
    fn count(&self, py: Python<'_>, given: BTreeMap<String, i64>, target: Option<String>) -> PyResult<(f64, bool)> {
        let me = self.clone();
        deep(py, None, move || {
            let (mut value, mut exact) = (1.0, true);
            for (_, space) in me.spaces(&to_sizes(given), target.as_deref())? {
                let Some(space) = space else { continue };
                match space.count(0).map_err(|e| e.to_string())? {
                    mapsat::constraints::Count::Exact(n) => value *= n as f64,
                    mapsat::constraints::Count::Estimate { value: v, .. } => (value, exact) = (value * v, false),
                }
            }
            Ok((value, exact))
        })
    }

    /// The constraints `mapping` violates at `given` (none: it is valid); of a program of
    /// several kernels, each kernel's part of it in that kernel's space.
    #[pyo3(signature = (mapping, given, target=None))]
    fn explain(
        &self,
        py: Python<'_>,
        mapping: String,
        given: BTreeMap<String, i64>,
        target: Option<String>,
    ) -> PyResult<Vec<String>> {
        let me = self.clone();
        deep(py, None, move || stages::explain(&me.spaces(&to_sizes(given), target.as_deref())?, &mapping))
    }

    /// The kernels of the program mapped by `mapping` (or as written), as JSON: each kernel's
    /// name, source and manifest (entry point, arguments, launch configuration), and for a
    /// program of several kernels the pipeline (`mapsat emit`'s `NAME.pipeline.json`).
    #[pyo3(signature = (given, mapping=None, target="opencl".to_string(), local=None, locals=BTreeMap::new(), profile=None))]
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        py: Python<'_>,
        given: BTreeMap<String, i64>,
        mapping: Option<String>,
        target: String,
        local: Option<Vec<i64>>,
        locals: BTreeMap<String, Vec<i64>>,
        profile: Option<String>,
    ) -> PyResult<String> {
        let me = self.clone();
        deep(py, None, move || {
            let sizes = me.sizes(&to_sizes(given))?;
            let dialect = dialect(&target)?;
            let profile = match profile.as_deref() {
                Some(_) => self::profile(profile.as_deref())?,
                None => mapsat::mapping::default_profile(dialect),
            };
            let local = Locals { all: local, by_kernel: locals };
            let mapped = me.mapped(&sizes, mapping.as_deref(), profile.clone(), &local)?;
            let several = mapped.len() > 1;
            let mut kernels = Vec::new();
            for s in &mapped {
                let opts = match &profile {
                    Some(q) => codegen::Options::for_profile(sizes.clone(), s.local.clone(), q),
                    None => codegen::Options { sizes: sizes.clone(), local: s.local.clone(), ..Default::default() },
                };
                let emitted = codegen::emit(&s.program, &opts, dialect);
                kernels.push(emitted.map_err(|e| stages::named(several, &s.program.name, render(&me, &e)))?);
            }
            let manifests: Vec<_> = kernels.iter().map(|(_, m)| m).collect();
            let pipeline = several.then(|| mapsat::stages::pipeline_json(&me.program, &mapped, &manifests));
            let kernels: Vec<_> = kernels
                .iter()
                .map(|(code, m)| {
                    let manifest: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap_or_default();
                    serde_json::json!({ "source": code, "manifest": manifest })
                })
                .collect();
            Ok(serde_json::json!({ "kernels": kernels, "pipeline": pipeline }).to_string())
        })
    }

    /// Runs the program's kernels in order on `device`: the device's result, the median and
    /// fastest times in ms (summed over the kernels), the device's name and each kernel's name
    /// and median time. With `check`, a result that differs from the interpreter's is an error.
    #[pyo3(signature = (inputs, given, device, mapping=None, local=None, locals=BTreeMap::new(), runs=5, check=true, timeout=600.0))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<Bound<'py, PyAny>>,
        given: BTreeMap<String, i64>,
        device: String,
        mapping: Option<String>,
        local: Option<Vec<i64>>,
        locals: BTreeMap<String, Vec<i64>>,
        runs: usize,
        check: bool,
        timeout: f64,
    ) -> PyResult<RunResult<'py>> {
        let inputs = tensors(&inputs)?;
        let me = self.clone();
        let limit = seconds("timeout", timeout)?;
        let local = Locals { all: local, by_kernel: locals };
        let r =
            deep(py, Some(limit), move || me.run_on(&inputs, given, &device, mapping.as_deref(), &local, runs, check))?;
        let median = r.iter().map(|(_, k)| k.median_ms).sum();
        let min = r.iter().map(|(_, k)| k.min_ms).sum();
        let times = r.iter().map(|(name, k)| (name.clone(), k.median_ms)).collect();
        let Some((_, last)) = r.into_iter().last() else { return Err(err("internal error: no kernel ran")) };
        Ok((array(py, last.output)?, median, min, last.device, times))
    }

    /// Tunes the program on `device` (see `mapsat tune`; a program of several kernels kernel
    /// by kernel, each in a folder of `out` named after it); returns the JSON summary of the
    /// tune (`mapsat tune`'s report.json), with the best kernel's source as `best_source` and
    /// its manifest as `best_manifest` (of a program of several kernels: each kernel's, in
    /// `kernels`).
    #[pyo3(signature = (given, device, out, target=None, trials=64, random_trials=32, seed=0, timeout_s=60.0, resume=false))]
    #[allow(clippy::too_many_arguments)]
    fn tune(
        &self,
        py: Python<'_>,
        given: BTreeMap<String, i64>,
        device: String,
        out: PathBuf,
        target: Option<String>,
        trials: usize,
        random_trials: usize,
        seed: u64,
        timeout_s: f64,
        resume: bool,
    ) -> PyResult<String> {
        let worker = worker_command(py)?;
        let timeout = seconds("timeout", timeout_s)?;
        let me = self.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let given_up = stop.clone();
        deep_with(py, None, &given_up, move || {
            let opts = TuneOptions { trials, random_trials, seed, timeout, ..TuneOptions::default() };
            let stop = Stop(stop);
            let how = Tuning { device: self::device(&device)?, opts: &opts, resume, stop: &stop };
            me.tune_in(to_sizes(given), target.as_deref(), &how, &out, worker)
        })
    }
}

/// `run`'s result: the output, the median and fastest times, the device, each kernel's time.
type RunResult<'py> = (Bound<'py, PyAny>, f64, f64, String, Vec<(String, f64)>);

impl PyProgram {
    /// The space of each kernel at `given` under the profile `target`, by kernel name; `None`
    /// for a kernel of a program of several that has no map (it runs in one work item).
    fn spaces(&self, given: &Sizes, target: Option<&str>) -> R<Vec<(String, Option<mapsat::constraints::Space>)>> {
        let sizes = self.sizes(given)?;
        let profile = profile(target)?;
        let split = self.split(&sizes)?;
        let several = split.len() > 1;
        let mut out = Vec::new();
        for s in split {
            let options =
                mapsat::constraints::Options { profile: profile.clone(), sizes: sizes.clone(), ..Default::default() };
            let name = s.program.name.clone();
            match mapsat::constraints::Space::generate(&s.program, options) {
                Ok(space) => out.push((name, Some(space))),
                Err(mapsat::constraints::Error::NoMaps) if several => out.push((name, None)),
                Err(e) => return Err(stages::named(several, &name, format!("error: {e}"))),
            }
        }
        Ok(out)
    }

    /// Each kernel's name and run (see [`PyProgram::run`]).
    #[allow(clippy::too_many_arguments)]
    fn run_on(
        &self,
        inputs: &[Tensor],
        given: BTreeMap<String, i64>,
        device_spec: &str,
        mapping: Option<&str>,
        local: &Locals,
        runs: usize,
        check: bool,
    ) -> R<Vec<(String, measure::RunReport)>> {
        let sizes = self.sizes(&to_sizes(given))?;
        let device = device(device_spec)?;
        if runs == 0 {
            return Err("runs must be at least 1".into());
        }
        let stages = self.mapped(&sizes, mapping, measure::opencl_profile(device).ok(), local)?;
        let cfg = RunConfig { runs, check, ..RunConfig::default() };
        let reports = measure::run_stages(&stages, &sizes, inputs, device, &cfg).map_err(|e| match e {
            measure::MeasureError::Codegen(c) => render(self, &c),
            e => format!("error: {e}"),
        })?;
        let several = stages.len() > 1;
        for (s, r) in stages.iter().zip(&reports) {
            if let Some(c) = r.check.as_ref().filter(|c| !c.ok) {
                let kernel = if several { format!("kernel of stage `{}`", s.program.name) } else { "kernel".into() };
                return Err(format!(
                    "error: the {kernel}'s result differs from the interpreter's in {} elements",
                    c.mismatches
                ));
            }
        }
        if let (true, true, Some(last)) = (check, several, reports.last()) {
            let want = interp::eval(&self.program, &sizes, inputs).map_err(|e| render(self, &e))?;
            let c = last.output.compare(&want, cfg.rtol, cfg.atol);
            if !c.ok {
                return Err(format!(
                    "error: the kernels' result differs from the interpreter's in {} elements",
                    c.mismatches
                ));
            }
        }
        Ok(stages.iter().map(|s| s.program.name.clone()).zip(reports).collect())
    }

    fn tune_in(
        &self,
        given: Sizes,
        target: Option<&str>,
        how: &Tuning,
        out: &std::path::Path,
        worker: Vec<std::ffi::OsString>,
    ) -> R<String> {
        let profile = mapsat::target::tune_profile(target, how.device).map_err(|e| e.to_string())?;
        if ir::stages::count(&self.program) == 1 {
            return tune_kernel((*self.program).clone(), &given, profile, how, out, worker);
        }
        let given = mapsat::stages::tuning_sizes(&self.program, &given);
        let split = self.split(&given)?;
        if let Some(name) = mapsat::stages::untunable(&split, &given) {
            return Err(format!(
                "error: kernel `{name}` has nothing to map (it only reduces or rearranges data), so there is nothing to tune in it; \
                 to tune the program, leave out its kernel boundary (`toGlobal`) or give that kernel a map"
            ));
        }
        let mut kernels = Vec::new();
        for s in split {
            let dir = out.join(&s.program.name);
            let json = tune_kernel(s.program, &given, profile.clone(), how, &dir, worker.clone())?;
            kernels.push(serde_json::from_str(&json).map_err(|e| e.to_string())?);
        }
        Ok(stages::tuned(&self.program.name, &given, kernels).to_string())
    }
}

/// How a tune runs: on which device, with which options, continuing a log or not, and when
/// to stop.
struct Tuning<'a> {
    device: DeviceSpec,
    opts: &'a TuneOptions,
    resume: bool,
    stop: &'a Stop,
}

/// A tune's progress, reported to no one; the tune stops when its caller gave up on it.
struct Stop(Arc<AtomicBool>);

impl tune::Progress for &Stop {
    fn phase(&mut self, _: tune::log::Phase, _: usize, _: usize) {}
    fn trial(&mut self, _: &tune::log::Trial, _: f64, _: usize) {}
    fn note(&mut self, _: &str) {}
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Tunes one kernel into `out` (its log, report, plot and best kernel); its summary as JSON
/// ([`PyProgram::tune`]).
fn tune_kernel(
    program: Program,
    given: &Sizes,
    profile: Profile,
    how: &Tuning,
    out: &std::path::Path,
    worker: Vec<std::ffi::OsString>,
) -> R<String> {
    let (device, opts) = (how.device, how.opts);
    let task = Task::new(program, given, profile, device.dialect(), true, opts.seed)
        .map_err(|e| e.to_string())?
        .reassociating();
    std::fs::create_dir_all(out).map_err(|e| format!("error: cannot create {}: {e}", out.display()))?;
    let files = Files { log: out.join("tune.jsonl"), resume: how.resume, work: out.join("data"), worker };
    let result = tune::tune(&task, device, opts, &files, &mut { how.stop }).map_err(|e| format!("error: {e}"))?;
    tune::report::write(&task, &result, out, &[]).map_err(|e| format!("error: {e}"))?;
    let summary = tune::report::Summary::of(&task, &result);
    let mut json = serde_json::to_value(&summary).map_err(|e| e.to_string())?;
    if let Some(best) = &result.best {
        json["best_source"] = best.source.clone().into();
        json["best_manifest"] = serde_json::from_str(&best.manifest.to_json()).unwrap_or_default();
    }
    Ok(json.to_string())
}

/// The dimensions of a parameter's type: each array length's size variable, when it is one.
fn dims(ty: &ir::Type) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut t = ty;
    while let Some((elem, len)) = t.as_array() {
        out.push(len.as_var().map(str::to_string));
        t = elem;
    }
    if let ir::Type::Vector(..) = t {
        out.push(None);
    }
    out
}

fn scalar(ty: &ir::Type) -> String {
    let mut t = ty;
    while let Some((elem, _)) = t.as_array() {
        t = elem;
    }
    match t {
        ir::Type::Scalar(k) | ir::Type::Vector(k, _) => k.name().to_string(),
        other => other.to_string(),
    }
}

/// The command of the tuner's measurement worker: this interpreter, serving from this module.
fn worker_command(py: Python<'_>) -> PyResult<Vec<std::ffi::OsString>> {
    let sys = py.import("sys")?;
    let exe: PathBuf = sys.getattr("executable")?.extract()?;
    Ok(vec![exe.into(), "-c".into(), "from mapsat import _mapsat; _mapsat._serve_worker()".into()])
}

/// The tuner's measurement worker on this process's stdin and stdout.
#[pyfunction]
fn _serve_worker(py: Python<'_>) -> PyResult<()> {
    deep(py, None, || {
        let stdin = std::io::stdin();
        let stdout = std::io::stdout();
        tune::worker::serve(stdin.lock(), stdout.lock()).map_err(|e| e.to_string())
    })
}

/// The OpenCL platforms and devices and the CUDA devices, one line each.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<String>> {
    deep(py, None, || Ok(measure::list_devices()))
}

#[pymodule]
fn _mapsat(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("MAX_SOURCE_BYTES", MAX_SOURCE_BYTES)?;
    m.add_class::<PyProgram>()?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(_serve_worker, m)?)?;
    Ok(())
}

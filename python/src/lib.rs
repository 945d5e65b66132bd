//! `mapsat._mapsat`: the Rust half of mapsat's Python package (the other half,
//! `python/mapsat/__init__.py`, turns numpy arrays and keyword arguments into what this takes).
//!
//! Every call runs on a thread of its own with the command line's stack (the passes over a
//! program recurse along its tree) and without the GIL, so that Python threads go on.

use mapsat::codegen::Dialect;
use mapsat::ir::interp::{Tensor, TensorData};
use mapsat::ir::{self, profile::Profile, Sizes};
use mapsat::limits::MAX_SOURCE_BYTES;
use mapsat::local::Locals;
use mapsat::tuner::measure::{self, DeviceSpec, RunConfig};
use mapsat::tuner::tune::{self, TuneOptions};
use mapsat::tuning::{KernelTune, Tuning};
use mapsat::Error::Usage;
use mapsat::Source;
mod stages;

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

type R<T> = Result<T, mapsat::Error>;

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
        let end = after.find(|c: char| c.is_whitespace() || matches!(c, ',' | ')' | '`')).unwrap_or(after.len());
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
            // A Ctrl-C that made the work fail (LLVM's handler in pocl's compiler removes the
            // build's temporary files, "the kernel did not build") is the interrupt.
            Ok(Err(e)) => {
                py.check_signals()?;
                return Err(err(e));
            }
            Ok(r) => return r.map_err(err),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(err("internal error: mapsat panicked (please report it)"))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                py.check_signals()?;
                if let Some(l) = limit.filter(|l| start.elapsed() > *l) {
                    return Err(err(format!(
                        "error: did not finish within {} s (timeout): the kernel hangs or is far too large, it is run \
                         too many times (`runs`), or it waited for other work of this process on the device",
                        l.as_secs_f64()
                    )));
                }
            }
        }
    }
}

/// A program of mapsat's IR, parsed and type-checked ([`mapsat::Source`]).
#[pyclass(frozen, name = "Program", module = "mapsat._mapsat")]
#[derive(Clone)]
struct PyProgram {
    src: Arc<Source>,
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

fn profile(name: Option<&str>) -> R<Option<Profile>> {
    name.map(|n| Profile::load(n).map_err(|e| Usage(e.to_string()))).transpose()
}

fn device(spec: &str) -> R<DeviceSpec> {
    spec.parse().map_err(|e: measure::MeasureError| Usage(e.to_string()))
}

fn dialect(name: &str) -> R<Dialect> {
    Dialect::parse(name).ok_or_else(|| Usage(format!("target must be opencl or cuda, not `{name}`")))
}

/// [`mapsat::limits::seconds`].
fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    mapsat::limits::seconds(what, s).map_err(err)
}

/// A numpy array of f32, i32 or bool (the Python half converts other dtypes) as a tensor.
fn tensor(a: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    /// The array's shape and a copy of its data (an error, not an abort, when the copy's
    /// memory cannot be had).
    fn of<T: numpy::Element + Copy>(a: &Bound<'_, PyAny>) -> Option<PyResult<(Vec<usize>, Vec<T>)>> {
        let a: PyReadonlyArrayDyn<'_, T> = a.extract().ok()?;
        let v = a.as_array();
        Some(mapsat::ir::interp::try_collect(v.len(), v.iter().copied()).map(|d| (a.shape().to_vec(), d)).map_err(err))
    }
    let t = if let Some(r) = of::<f32>(a) {
        r.map(|(s, v)| Tensor::f32(s, v))?
    } else if let Some(r) = of::<i32>(a) {
        r.map(|(s, v)| Tensor::i32(s, v))?
    } else if let Some(r) = of::<bool>(a) {
        r.map(|(s, v)| Tensor::bool(s, v))?
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
        deep(py, None, move || Ok(PyProgram { src: Arc::new(Source::new(name, text)?) }))
    }

    /// What is legal but likely a mistake in the program, each rendered against its source (a
    /// kernel boundary nothing reads, which is left out).
    fn warnings(&self) -> Vec<String> {
        self.src.warnings().to_vec()
    }

    /// The program's name (after `def`).
    #[getter]
    fn name(&self) -> String {
        self.src.program().name.clone()
    }

    /// The text it was parsed from, and the name it was given (what rebuilds it).
    fn source(&self) -> (String, String) {
        (self.src.text().to_string(), self.src.name().to_string())
    }

    /// The program in canonical form.
    fn __str__(&self) -> String {
        ir::print(self.src.program())
    }

    /// Each parameter: its name and, for each dimension, the size variable it is when it is
    /// one (`None` for a length such as `N + 2`), and its scalar kind.
    fn params(&self) -> Vec<(String, Vec<Option<String>>, String)> {
        self.src.program().params.iter().map(|q| (q.name.clone(), dims(&q.ty), scalar(&q.ty))).collect()
    }

    /// The size variables and their defaults (`None`: none).
    fn size_defaults(&self) -> Vec<(String, Option<i64>)> {
        self.src.program().sizes.iter().map(|v| (v.name.clone(), v.default)).collect()
    }

    /// The labels of the program's maps, in order.
    fn maps(&self) -> Vec<String> {
        self.src.program().map_labels()
    }

    /// Every size at `given` (the others at their defaults), checked.
    fn resolve(&self, py: Python<'_>, given: BTreeMap<String, i64>) -> PyResult<BTreeMap<String, i64>> {
        let src = self.src.clone();
        deep(py, None, move || Ok(from_sizes(&src.sizes(&to_sizes(given))?)))
    }

    /// The type of the result at `given`.
    fn result_type(&self, py: Python<'_>, given: BTreeMap<String, i64>) -> PyResult<String> {
        let src = self.src.clone();
        deep(py, None, move || Ok(src.result_type(&to_sizes(given))?.to_string()))
    }

    /// The interpreter's result on `inputs` (in parameter order) at `given`.
    fn eval<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<Bound<'py, PyAny>>,
        given: BTreeMap<String, i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let inputs = tensors(&inputs)?;
        let src = self.src.clone();
        let out = deep(py, None, move || src.eval(&to_sizes(given), &inputs))?;
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
        let src = self.src.clone();
        deep(py, None, move || src.sample(&to_sizes(given), n, seed, profile(target.as_deref())?.as_ref()))
    }

    /// The number of valid mappings: `(value, exact)` (of a program of several kernels: the
    /// product of its kernels').
    #[pyo3(signature = (given, target=None))]
    fn count(&self, py: Python<'_>, given: BTreeMap<String, i64>, target: Option<String>) -> PyResult<(f64, bool)> {
        let src = self.src.clone();
        deep(py, None, move || {
            let c = src.count(&to_sizes(given), profile(target.as_deref())?.as_ref())?;
            Ok((c.value, c.exact))
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
        let src = self.src.clone();
        deep(py, None, move || src.explain(&mapping, &to_sizes(given), profile(target.as_deref())?.as_ref()))
    }

    /// The kernels of the program mapped by `mapping` (or as written), as JSON: each kernel's
    /// source and manifest (entry point, arguments, launch configuration), and for a program
    /// of several kernels the pipeline (`mapsat emit`'s `NAME.pipeline.json`).
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
        let src = self.src.clone();
        deep(py, None, move || {
            let local = Locals { all: local, by_kernel: locals };
            let profile = self::profile(profile.as_deref())?;
            let e = src.emit(&to_sizes(given), mapping.as_deref(), dialect(&target)?, &local, profile)?;
            let kernels: Vec<_> = e
                .kernels
                .iter()
                .map(|(code, m)| {
                    let manifest: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap_or_default();
                    serde_json::json!({ "source": code, "manifest": manifest })
                })
                .collect();
            Ok(serde_json::json!({ "kernels": kernels, "pipeline": e.pipeline }).to_string())
        })
    }

    /// Runs the program's kernels in order on `device`: the device's result, the median and
    /// fastest times in ms (summed over the kernels), the device's name and each kernel's name
    /// and median time. With `check`, a result that differs from the interpreter's is an error.
    #[pyo3(signature = (inputs, given, device, mapping=None, local=None, locals=BTreeMap::new(), runs=5, check=true, timeout=600.0, reassociate=false))]
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
        reassociate: bool,
    ) -> PyResult<RunResult<'py>> {
        let inputs = tensors(&inputs)?;
        let src = self.src.clone();
        let limit = seconds("timeout", timeout)?;
        let local = Locals { all: local, by_kernel: locals };
        // A run given up on (timeout, Ctrl-C) stops launching: nothing goes on behind a later call.
        let given_up = Arc::new(AtomicBool::new(false));
        let cfg = RunConfig { runs, check, reassociate, cancel: Some(given_up.clone()), ..RunConfig::default() };
        let r = deep_with(py, Some(limit), &given_up, move || {
            src.run(&to_sizes(given), &inputs, self::device(&device)?, mapping.as_deref(), &local, &cfg)
        })?;
        let median = r.iter().map(|k| k.report.median_ms).sum();
        let min = r.iter().map(|k| k.report.min_ms).sum();
        let times = r.iter().map(|k| (k.name.clone(), k.report.median_ms)).collect();
        let Some(last) = r.into_iter().last() else { return Err(err("internal error: no kernel ran")) };
        Ok((array(py, last.report.output)?, median, min, last.report.device, times))
    }

    /// Tunes the program on `device` (see `mapsat tune`; a program of several kernels kernel
    /// by kernel, each in a folder of `out` named after it); returns the JSON summary of the
    /// tune (`mapsat tune`'s report.json), with the best kernel's source as `best_source` and
    /// its manifest as `best_manifest` (of a program of several kernels: each kernel's, in
    /// `kernels`).
    #[pyo3(signature = (given, device, out, target=None, trials=64, random_trials=32, seed=0, timeout_s=60.0, resume=false, batch=16, model=None))]
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
        batch: usize,
        model: Option<PathBuf>,
    ) -> PyResult<String> {
        let worker = worker_command(py)?;
        let timeout = seconds("timeout", timeout_s)?;
        if resume && model.is_some() {
            return Err(err("model starts a tune from a prior model; resume continues one"));
        }
        let src = self.src.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let given_up = stop.clone();
        deep_with(py, None, &given_up, move || {
            let prior = model.as_deref().map(mapsat::tuning::load_model).transpose()?;
            let opts = TuneOptions { trials, random_trials, seed, timeout, batch, prior, ..TuneOptions::default() };
            let device = self::device(&device)?;
            let how =
                Tuning { device, target: target.as_deref(), opts: &opts, prior_file: model.as_deref(), resume, worker };
            let given = to_sizes(given);
            let kernels = src.tune(&given, &how, &out, &mut &Stop(stop))?;
            let mut json: Vec<serde_json::Value> = kernels.iter().map(kernel_json).collect::<R<_>>()?;
            match json.len() {
                1 => Ok(json.remove(0).to_string()),
                _ => Ok(stages::tuned(
                    src.program(),
                    &mapsat::stages::tuning_sizes(src.program(), &given),
                    &kernels,
                    json,
                )
                .to_string()),
            }
        })
    }
}

/// `run`'s result: the output, the median and fastest times, the device, each kernel's time.
type RunResult<'py> = (Bound<'py, PyAny>, f64, f64, String, Vec<(String, f64)>);

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

/// A kernel's tune as JSON: its summary, with the best kernel's source as `best_source` and
/// its manifest as `best_manifest`.
fn kernel_json(k: &KernelTune) -> R<serde_json::Value> {
    let mut json = serde_json::to_value(&k.summary).map_err(|e| Usage(format!("internal error: {e}")))?;
    if let Some((source, manifest)) = &k.best {
        json["best_source"] = source.clone().into();
        json["best_manifest"] = serde_json::from_str(&manifest.to_json()).unwrap_or_default();
    }
    json["model"] = k.model.as_ref().map(|m| m.display().to_string()).into();
    Ok(json)
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
    deep(py, None, mapsat::tuning::serve_worker)
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

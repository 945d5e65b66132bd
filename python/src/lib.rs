//! `mapsat._mapsat`: the Rust half of mapsat's Python package (the other half,
//! `python/mapsat/__init__.py`, turns numpy arrays and keyword arguments into what this takes).
//!
//! Every call runs on a thread of its own with the command line's stack (the passes over a
//! program recurse along its tree) and without the GIL, so that Python threads go on.

use mapsat::codegen::{self, Dialect};
use mapsat::ir::interp::{self, Tensor, TensorData};
use mapsat::ir::{self, diag, profile::Profile, Program, Sizes};
use mapsat::limits::MAX_SOURCE_BYTES;
use mapsat::tuner::measure::{self, DeviceSpec, RunConfig};
use mapsat::tuner::tune::{self, task::Task, Files, TuneOptions};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{IntoPyArray, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pyo3::create_exception!(mapsat, Error, PyException, "A program, mapping, input or device mapsat refuses.");

type R<T> = Result<T, String>;

fn err(msg: impl std::fmt::Display) -> PyErr {
    Error::new_err(msg.to_string().trim_end().to_string())
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
    /// Refuses a program of several kernels, which only the command line maps, emits, runs and
    /// tunes.
    fn one_kernel(&self) -> R<()> {
        match ir::stages::count(&self.program) > 1 {
            true => Err(format!(
                "{}: a program of several kernels (`let x = toGlobal(..) in`) is mapped, emitted, run and tuned kernel by kernel by the command line (`mapsat space|explain|emit|run|tune`); from Python, give one kernel",
                self.name
            )),
            false => Ok(()),
        }
    }

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

    /// The program mapped by `mapping` (or as written), and its work-group size.
    fn prepared(
        &self,
        sizes: &Sizes,
        mapping: Option<&str>,
        profile: Option<Profile>,
        local: Option<Vec<i64>>,
    ) -> R<(Program, Option<Vec<i64>>)> {
        self.one_kernel()?;
        let p = mapsat::mapping::prepare((*self.program).clone(), sizes, mapping, profile, local)
            .map_err(|e| e.to_string())?;
        Ok((p.program, p.local))
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

    /// Up to `n` valid mappings sampled from the space at `given` under the profile `target`.
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
            let space = me.space(&to_sizes(given), target.as_deref())?;
            let ms = space.sample(n, seed).map_err(|e| e.to_string())?;
            Ok(ms.iter().map(|m| space.show(m).to_string()).collect())
        })
    }

    /// The number of valid mappings: `(value, exact)`.
    #[pyo3(signature = (given, target=None))]
    fn count(&self, py: Python<'_>, given: BTreeMap<String, i64>, target: Option<String>) -> PyResult<(f64, bool)> {
        let me = self.clone();
        deep(py, None, move || {
            let space = me.space(&to_sizes(given), target.as_deref())?;
            Ok(match space.count(0).map_err(|e| e.to_string())? {
                mapsat::constraints::Count::Exact(n) => (n as f64, true),
                mapsat::constraints::Count::Estimate { value, .. } => (value, false),
            })
        })
    }

    /// The constraints `mapping` violates at `given` (none: it is valid).
    #[pyo3(signature = (mapping, given, target=None))]
    fn explain(
        &self,
        py: Python<'_>,
        mapping: String,
        given: BTreeMap<String, i64>,
        target: Option<String>,
    ) -> PyResult<Vec<String>> {
        let me = self.clone();
        deep(py, None, move || {
            let space = me.space(&to_sizes(given), target.as_deref())?;
            let m = space.parse_mapping(&mapping).map_err(|e| e.to_string())?;
            let e = space.explain(&m).map_err(|e| e.to_string())?;
            Ok(e.violated.iter().map(|c| mapsat::mapping::describe(&space, c)).collect())
        })
    }

    /// The kernel of the program mapped by `mapping` (or as written): its source and its
    /// manifest (JSON: entry point, arguments, launch configuration).
    #[pyo3(signature = (given, mapping=None, target="opencl".to_string(), local=None, profile=None))]
    fn emit(
        &self,
        py: Python<'_>,
        given: BTreeMap<String, i64>,
        mapping: Option<String>,
        target: String,
        local: Option<Vec<i64>>,
        profile: Option<String>,
    ) -> PyResult<(String, String)> {
        let me = self.clone();
        deep(py, None, move || {
            let sizes = me.sizes(&to_sizes(given))?;
            let dialect = dialect(&target)?;
            let profile = match profile.as_deref() {
                Some(_) => self::profile(profile.as_deref())?,
                None => mapsat::mapping::default_profile(dialect),
            };
            let (p, local) = me.prepared(&sizes, mapping.as_deref(), profile.clone(), local)?;
            let opts = match &profile {
                Some(q) => codegen::Options::for_profile(sizes, local, q),
                None => codegen::Options { sizes, local, ..codegen::Options::default() },
            };
            let (code, manifest) = codegen::emit(&p, &opts, dialect).map_err(|e| render(&me, &e))?;
            Ok((code, manifest.to_json()))
        })
    }

    /// Runs the program's kernel on `device`: the device's result, the median and fastest
    /// times in ms, and the device's name. With `check`, a result that differs from the
    /// interpreter's is an error.
    #[pyo3(signature = (inputs, given, device, mapping=None, local=None, runs=5, check=true, timeout=600.0))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<Bound<'py, PyAny>>,
        given: BTreeMap<String, i64>,
        device: String,
        mapping: Option<String>,
        local: Option<Vec<i64>>,
        runs: usize,
        check: bool,
        timeout: f64,
    ) -> PyResult<(Bound<'py, PyAny>, f64, f64, String)> {
        let inputs = tensors(&inputs)?;
        let me = self.clone();
        let limit = seconds("timeout", timeout)?;
        let r =
            deep(py, Some(limit), move || me.run_on(&inputs, given, &device, mapping.as_deref(), local, runs, check))?;
        Ok((array(py, r.output)?, r.median_ms, r.min_ms, r.device))
    }

    /// Tunes the program on `device` (see `mapsat tune`); returns the JSON summary of the tune
    /// (`mapsat tune`'s report.json), with the best kernel's source as `best_source` and its
    /// manifest as `best_manifest`.
    #[pyo3(signature = (given, device, out, target=None, trials=64, random_trials=32, seed=0, timeout_s=60.0))]
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
    ) -> PyResult<String> {
        let worker = worker_command(py)?;
        let timeout = seconds("timeout", timeout_s)?;
        let me = self.clone();
        deep(py, None, move || {
            let opts = TuneOptions { trials, random_trials, seed, timeout, ..TuneOptions::default() };
            me.tune_in(to_sizes(given), &device, target.as_deref(), &opts, &out, worker)
        })
    }
}

impl PyProgram {
    fn space(&self, given: &Sizes, target: Option<&str>) -> R<mapsat::constraints::Space> {
        self.one_kernel()?;
        let sizes = self.sizes(given)?;
        let options = mapsat::constraints::Options { profile: profile(target)?, sizes, ..Default::default() };
        mapsat::constraints::Space::generate(&self.program, options).map_err(|e| format!("error: {e}"))
    }

    #[allow(clippy::too_many_arguments)]
    fn run_on(
        &self,
        inputs: &[Tensor],
        given: BTreeMap<String, i64>,
        device_spec: &str,
        mapping: Option<&str>,
        local: Option<Vec<i64>>,
        runs: usize,
        check: bool,
    ) -> R<measure::RunReport> {
        let sizes = self.sizes(&to_sizes(given))?;
        let device = device(device_spec)?;
        if runs == 0 {
            return Err("runs must be at least 1".into());
        }
        let (p, local) = self.prepared(&sizes, mapping, measure::opencl_profile(device).ok(), local)?;
        let cfg = RunConfig { runs, check, ..RunConfig::default() };
        let r = measure::run(&p, &sizes, local, inputs, device, &cfg).map_err(|e| match e {
            measure::MeasureError::Codegen(c) => render(self, &c),
            e => format!("error: {e}"),
        })?;
        match &r.check {
            Some(c) if !c.ok => {
                Err(format!("error: the kernel's result differs from the interpreter's in {} elements", c.mismatches))
            }
            _ => Ok(r),
        }
    }

    fn tune_in(
        &self,
        given: Sizes,
        device_spec: &str,
        target: Option<&str>,
        opts: &TuneOptions,
        out: &std::path::Path,
        worker: Vec<std::ffi::OsString>,
    ) -> R<String> {
        self.one_kernel()?;
        let device = device(device_spec)?;
        let profile = mapsat::target::tune_profile(target, device).map_err(|e| e.to_string())?;
        let task = Task::new((*self.program).clone(), &given, profile, device.dialect(), true, opts.seed)
            .map_err(|e| e.to_string())?
            .reassociating();
        std::fs::create_dir_all(out).map_err(|e| format!("error: cannot create {}: {e}", out.display()))?;
        let files = Files { log: out.join("tune.jsonl"), resume: false, work: out.join("data"), worker };
        let result = tune::tune(&task, device, opts, &files, &mut tune::Silent).map_err(|e| format!("error: {e}"))?;
        tune::report::write(&task, &result, out, &[]).map_err(|e| format!("error: {e}"))?;
        let summary = tune::report::Summary::of(&task, &result);
        let mut json = serde_json::to_value(&summary).map_err(|e| e.to_string())?;
        if let Some(best) = &result.best {
            json["best_source"] = best.source.clone().into();
            json["best_manifest"] = serde_json::from_str(&best.manifest.to_json()).unwrap_or_default();
        }
        Ok(json.to_string())
    }
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

//! Measurement in a child process, so that a kernel that hangs, or crashes the driver, is
//! recorded as such and the tune goes on.
//!
//! The parent ([`Measurer`]) starts the worker (`mapsat worker`, a hidden subcommand that calls
//! [`serve`]) and talks to it in JSON lines: first a [`Setup`] (the device, the input and
//! expected-output `.npy` files, the tolerances), answered by `Ready` once the device is open
//! and the files are loaded; then one [`Job`] per kernel (source, manifest, runs), answered by
//! its [`Outcome`]. The worker builds each kernel, runs it once on the inputs, compares the
//! result with the expected output (the interpreter's, computed once by the parent), then
//! times the warm-up and timed launches. The parent waits for each answer at most the
//! timeout: past it the worker is killed, the job recorded as [`Status::Timeout`], and a new
//! worker started for the next job; a worker that dies is recorded as [`Status::Crash`].

use crate::measure::{self, DeviceSpec, RunConfig, Session};
use mapsat_codegen::Manifest;
use mapsat_ir::interp::{read_npy, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the worker needs before the first job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Setup {
    /// The device (`opencl:0:0`, `cuda:0`).
    pub device: String,
    /// One `.npy` file per program parameter, in order.
    pub inputs: Vec<PathBuf>,
    /// The expected result (`.npy`).
    pub expected: PathBuf,
    /// Relative tolerance of the comparison.
    pub rtol: f64,
    /// Absolute tolerance of the comparison.
    pub atol: f64,
}

/// A fault the worker simulates, for tests of the parent's handling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    /// Never answer (as a kernel that loops forever).
    Hang,
    /// Die without answering (as a driver crash).
    Crash,
}

/// One kernel to measure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// Echoed in the outcome.
    pub id: u64,
    /// Kernel source in the device's dialect.
    pub source: String,
    /// Its manifest (entry point, launch shape, buffers).
    pub manifest: Manifest,
    /// Untimed launches (the checked first launch counts as one).
    pub warmup: usize,
    /// Timed launches.
    pub runs: usize,
    /// A simulated fault (tests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

/// How a measurement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Built, ran, and computed the expected result.
    Ok,
    /// Ran but computed something else.
    Wrong,
    /// The device compiler refused the kernel.
    Build,
    /// The launch or a transfer failed.
    Run,
    /// No answer within the timeout (the worker was killed).
    Timeout,
    /// The worker died.
    Crash,
    /// Refused before measuring (over a device limit at these sizes).
    Invalid,
}

impl Status {
    /// The name used in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Wrong => "wrong",
            Status::Build => "build",
            Status::Run => "run",
            Status::Timeout => "timeout",
            Status::Crash => "crash",
            Status::Invalid => "invalid",
        }
    }
}

/// The answer to a [`Job`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The job's id.
    pub id: u64,
    /// How it ended.
    pub status: Status,
    /// Timed launches in ms.
    pub times_ms: Vec<f64>,
    /// Time spent building the kernel in ms.
    pub build_ms: f64,
    /// Largest difference from the expected result (infinite where a NaN meets a number: JSON
    /// has no infinity and writes `null`, read back as infinity).
    #[serde(deserialize_with = "infinite_if_null")]
    pub max_abs_diff: f64,
    /// Elements out of tolerance.
    pub mismatches: usize,
    /// Why it failed, in one line or a few.
    pub message: String,
}

/// A number written by `serde_json`, which writes an infinity (or NaN) as `null`: infinity.
fn infinite_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

impl Outcome {
    fn failed(id: u64, status: Status, message: String) -> Outcome {
        Outcome { id, status, times_ms: Vec::new(), build_ms: 0.0, max_abs_diff: 0.0, mismatches: 0, message }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Request {
    Setup(Setup),
    Job(Job),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Reply {
    Ready { device: String },
    Failed { message: String },
    Done(Outcome),
}

fn send(out: &mut impl Write, r: &Reply) -> Result<(), String> {
    let line = serde_json::to_string(r).map_err(|e| e.to_string())?;
    writeln!(out, "{line}").and_then(|_| out.flush()).map_err(|e| format!("cannot answer: {e}"))
}

struct Worker {
    session: Session,
    inputs: Vec<Tensor>,
    expected: Tensor,
    rtol: f64,
    atol: f64,
}

impl Worker {
    fn open(s: &Setup) -> Result<Worker, String> {
        let device: DeviceSpec = s.device.parse().map_err(|e: measure::MeasureError| e.to_string())?;
        let session = Session::open(device).map_err(|e| e.to_string())?;
        let inputs = s.inputs.iter().map(|p| read_npy(p).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        let expected = read_npy(&s.expected).map_err(|e| e.to_string())?;
        Ok(Worker { session, inputs, expected, rtol: s.rtol, atol: s.atol })
    }

    fn job(&mut self, j: &Job) -> Outcome {
        match j.fault {
            Some(Fault::Hang) => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            Some(Fault::Crash) => std::process::abort(),
            None => {}
        }
        let cfg = RunConfig {
            warmup: j.warmup,
            runs: j.runs.max(1),
            check: true,
            rtol: self.rtol,
            atol: self.atol,
            ..RunConfig::default()
        };
        let r = self.session.run(&j.source, &j.manifest, &self.inputs, self.expected.shape.clone(), &cfg);
        let r = match r {
            Ok(r) => r,
            Err(e @ measure::MeasureError::Build { .. }) => return Outcome::failed(j.id, Status::Build, e.to_string()),
            Err(e) => return Outcome::failed(j.id, Status::Run, e.to_string()),
        };
        let c = r.output.compare(&self.expected, self.rtol, self.atol);
        let (status, message) = if c.ok {
            (Status::Ok, String::new())
        } else {
            let first = c.first_mismatch.map(|(i, g, w)| format!("; first at {i}: got {g}, expected {w}"));
            (Status::Wrong, format!("{} elements differ{}", c.mismatches, first.unwrap_or_default()))
        };
        Outcome {
            id: j.id,
            status,
            times_ms: r.times_ms,
            build_ms: r.build_ms,
            max_abs_diff: c.max_abs_diff,
            mismatches: c.mismatches,
            message,
        }
    }
}

/// The worker's side: reads requests from `input`, answers on `output` (see the module
/// documentation). Returns when `input` ends; an error when the first request is not a setup
/// or an answer cannot be written.
pub fn serve(input: impl BufRead, mut output: impl Write) -> Result<(), String> {
    let mut lines = input.lines();
    let first = lines.next().ok_or("no setup request")?.map_err(|e| e.to_string())?;
    let setup = match serde_json::from_str(&first) {
        Ok(Request::Setup(s)) => s,
        _ => return Err("the first request must be a setup".into()),
    };
    let mut w = match Worker::open(&setup) {
        Ok(w) => w,
        Err(message) => return send(&mut output, &Reply::Failed { message }),
    };
    send(&mut output, &Reply::Ready { device: w.session.name().to_string() })?;
    for line in lines {
        let line = line.map_err(|e| e.to_string())?;
        let reply = match serde_json::from_str(&line) {
            Ok(Request::Job(j)) => Reply::Done(w.job(&j)),
            Ok(Request::Setup(_)) => Reply::Failed { message: "setup given twice".into() },
            Err(e) => Reply::Failed { message: format!("bad request: {e}") },
        };
        send(&mut output, &reply)?;
    }
    Ok(())
}

/// A running worker process.
struct Running {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The thread reading `stderr` from the worker's standard error.
    stderr_reader: std::thread::JoinHandle<()>,
}

/// How long a stopped worker's standard error is waited for, to its end.
const STDERR_DRAIN: Duration = Duration::from_secs(2);

impl Running {
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the worker, given [`STDERR_DRAIN`] to end by itself (a worker that died is still
    /// exiting); its exit status and the last lines it wrote to its standard error, read to
    /// the end within that time (the reader thread may not yet have read what it wrote just
    /// before it exited: a worker's message was lost in some runs).
    fn stop_with_tail(mut self) -> (String, String) {
        let until = Instant::now() + STDERR_DRAIN;
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
        while !self.stderr_reader.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let tail = self.stderr.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n")).unwrap_or_default();
        (status, if tail.is_empty() { String::new() } else { format!(": {tail}") })
    }
}

/// The parent's side: see the module documentation.
pub struct Measurer {
    command: Vec<OsString>,
    setup: Setup,
    timeout: Duration,
    running: Option<Running>,
    device_name: String,
    next_id: u64,
    restarts: u64,
}

/// Set in the worker's environment: a worker that begins a tune of its own instead of serving
/// measurements (a program whose worker argument was not handed to `serve`) is refused at
/// once ([`super::tune`]), not left to start another worker, and so on.
pub const WORKER_ENV: &str = "MAPSAT_TUNE_WORKER";

/// How long the worker may take to open the device and load the inputs.
const SETUP_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines of the worker's standard error kept for crash reports.
const STDERR_LINES: usize = 8;

impl Measurer {
    /// A measurer that runs `command` (program and arguments) as its worker; nothing starts
    /// until [`Measurer::start`].
    pub fn new(command: Vec<OsString>, setup: Setup, timeout: Duration) -> Measurer {
        Measurer { command, setup, timeout, running: None, device_name: String::new(), next_id: 0, restarts: 0 }
    }

    /// Starts the worker; the device's description, or why it cannot run there.
    pub fn start(&mut self) -> Result<String, String> {
        if let Some(r) = self.running.take() {
            r.stop();
        }
        let (program, args) = self.command.split_first().ok_or("no worker command")?;
        let mut child = Command::new(program)
            .args(args)
            .env(WORKER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the measurement worker {}: {e}", program.to_string_lossy()))?;
        let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err("the worker's pipes could not be opened".into()),
        };
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = Arc::clone(&tail);
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut t) = keep.lock() {
                    t.push_back(line);
                    if t.len() > STDERR_LINES {
                        t.pop_front();
                    }
                }
            }
        });
        let mut r = Running { child, stdin, replies, stderr: tail, stderr_reader };
        let request = serde_json::to_string(&Request::Setup(self.setup.clone())).map_err(|e| e.to_string())?;
        if writeln!(r.stdin, "{request}").and_then(|_| r.stdin.flush()).is_err() {
            return Err(format!("the measurement worker exited at once{}", r.stop_with_tail().1));
        }
        match r.replies.recv_timeout(SETUP_TIMEOUT) {
            Ok(line) => match serde_json::from_str(&line) {
                Ok(Reply::Ready { device }) => {
                    self.device_name = device.clone();
                    self.running = Some(r);
                    Ok(device)
                }
                Ok(Reply::Failed { message }) => {
                    r.stop();
                    Err(message)
                }
                _ => {
                    r.stop();
                    Err(format!("the measurement worker answered `{line}` to its setup"))
                }
            },
            Err(_) => Err(format!("the measurement worker did not start{}", r.stop_with_tail().1)),
        }
    }

    /// Workers started again after a timeout or a crash.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// The device's description (after [`Measurer::start`]).
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// Measures one kernel. Failures of the kernel are outcomes; an error means the worker
    /// cannot be (re)started, and measuring cannot go on.
    pub fn measure(
        &mut self,
        source: &str,
        manifest: &Manifest,
        warmup: usize,
        runs: usize,
        fault: Option<Fault>,
    ) -> Result<Outcome, String> {
        if self.running.is_none() {
            self.restarts += 1;
            self.start()?;
        }
        self.next_id += 1;
        let id = self.next_id;
        let job = Job { id, source: source.to_string(), manifest: manifest.clone(), warmup, runs, fault };
        let line = serde_json::to_string(&Request::Job(job)).map_err(|e| e.to_string())?;
        let Some(r) = self.running.as_mut() else { return Err("no worker".into()) };
        let started = Instant::now();
        if writeln!(r.stdin, "{line}").and_then(|_| r.stdin.flush()).is_err() {
            return Ok(self.lost(id, "the worker exited before the job was sent"));
        }
        loop {
            let left = self.timeout.saturating_sub(started.elapsed());
            let Some(r) = self.running.as_mut() else { return Err("no worker".into()) };
            match r.replies.recv_timeout(left) {
                Ok(line) => match serde_json::from_str(&line) {
                    Ok(Reply::Done(o)) if o.id == id => return Ok(o),
                    Ok(Reply::Failed { message }) => return Ok(Outcome::failed(id, Status::Run, message)),
                    // A line that is not an answer (a runtime printing on stdout): ignore it.
                    _ => continue,
                },
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(r) = self.running.take() {
                        r.stop();
                    }
                    let secs = self.timeout.as_secs_f64();
                    return Ok(Outcome::failed(id, Status::Timeout, format!("no answer within {secs:.1} s")));
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(self.lost(id, "the worker died")),
            }
        }
    }

    fn lost(&mut self, id: u64, what: &str) -> Outcome {
        let mut msg = what.to_string();
        if let Some(r) = self.running.take() {
            let (status, tail) = r.stop_with_tail();
            msg = format!("{what} ({status}){tail}");
        }
        Outcome::failed(id, Status::Crash, msg)
    }
}

impl Drop for Measurer {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wrong result with a NaN against a number differs by infinity, which JSON writes as
    /// `null`: the answer still reads back (it was dropped, and the job counted as a timeout).
    #[test]
    fn an_infinite_difference_goes_through_the_json_protocol() {
        let mut o = Outcome::failed(7, Status::Wrong, "differs".into());
        o.max_abs_diff = f64::INFINITY;
        let text = serde_json::to_string(&o).unwrap();
        assert!(text.contains("\"max_abs_diff\":null"), "{text}");
        let back: Outcome = serde_json::from_str(&text).unwrap();
        assert_eq!(back, o);
    }
}

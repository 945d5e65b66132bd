//! The tuning log: JSON lines, a [`Header`] first, then one [`Trial`] per measured candidate,
//! each written with one `write` and flushed, so that a tune killed at any point (`kill -9`)
//! loses no record it had written. [`Confirmation`] lines record the re-measurements of each
//! phase's best kernels at its end (they are measurements of kernels already in the log, not
//! new candidates). `--resume` reads the records back and continues: nothing
//! measured is measured again (records are keyed by a hash of the kernel's source, which holds
//! its sizes and launch shape). A last line cut short by the kill is dropped.
//!
//! A log belongs to one task: the header's program hash (the canonical program text, its
//! problem sizes and the space options), device and format must match to resume.

use super::worker::Status;
use mapsat_ir::Sizes;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The version of the log format; a log of another version is refused.
pub const LOG_FORMAT: u32 = 1;

/// The first line of a log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`LOG_FORMAT`].
    pub format: u32,
    /// The mapsat version that wrote it.
    pub mapsat: String,
    /// Hash of the task (program, problem sizes, options).
    pub task: String,
    /// The program's name.
    pub program: String,
    /// The problem sizes.
    pub sizes: Sizes,
    /// The device (`opencl:0:0`).
    pub device: String,
    /// The device profile's name.
    pub profile: String,
    /// Hash of the program's text alone (logs written before it have none): tells an edited
    /// program from other options (fusion, `--strict-math`, the profile's figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The search's seed (logs written before it have none): a resumed tune draws as the tune
    /// that wrote the log did only with its seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// Which search produced a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The model-guided search.
    Guided,
    /// Random valid sampling (the baseline).
    Random,
}

impl Phase {
    /// The name used in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Guided => "guided",
            Phase::Random => "random",
        }
    }
}

/// One measured candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Position in its phase (0-based).
    pub trial: u64,
    /// The search that chose it.
    pub phase: Phase,
    /// Batch of the guided search (0 for random trials).
    pub batch: u64,
    /// Values of the tunable sizes.
    pub tuning: Sizes,
    /// The mapping, `A=W0,B=L0,...`.
    pub mapping: String,
    /// Work-group size given to code generation (empty: its default).
    pub local: Vec<i64>,
    /// Hash of the kernel source.
    pub kernel: String,
    /// How the measurement ended.
    pub status: Status,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Timed launches in ms.
    pub times_ms: Vec<f64>,
    /// Their median in ms (0 when there are none): the kernel's time as reported.
    pub median_ms: f64,
    /// The fastest of them in ms (0 when there are none): what the search ranks by, as the
    /// launch least disturbed by other work on the machine.
    #[serde(default)]
    pub min_ms: f64,
    /// GFLOP/s at the median time.
    pub gflops: f64,
    /// Build time in ms.
    pub build_ms: f64,
    /// The analytical model's prediction in ms.
    pub predicted_ms: f64,
    /// The learned model's score when it chose the trial (higher: predicted faster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned_score: Option<f64>,
    /// The guided trial whose measurement a random trial reuses (the same kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused: Option<u64>,
}

impl Trial {
    /// True when the kernel ran and computed the expected result.
    pub fn ok(&self) -> bool {
        self.status == Status::Ok && self.median_ms > 0.0
    }

    /// The time the search ranks the trial by: its fastest launch (its median in logs that
    /// have no minimum).
    pub fn rank_ms(&self) -> f64 {
        if self.min_ms > 0.0 {
            self.min_ms
        } else {
            self.median_ms
        }
    }
}

/// A re-measurement of one of a phase's best kernels, at the phase's end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The phase whose best kernels were re-measured.
    pub phase: Phase,
    /// The trial of that phase that measured the kernel first.
    pub trial: u64,
    /// Hash of the kernel source.
    pub kernel: String,
    /// The timed launches of this re-measurement, in ms.
    pub times_ms: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Line {
    Header(Header),
    Trial(Trial),
    Confirmation(Confirmation),
}

/// Why a log cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Reading or writing failed.
    #[error("{path}: {message}")]
    Io {
        /// The log.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The file is not a mapsat tuning log of this version, or belongs to another task.
    #[error("{path}: {message}")]
    Foreign {
        /// The log.
        path: PathBuf,
        /// What does not match.
        message: String,
    },
}

/// An open log, appended to.
pub struct Log {
    file: File,
    path: PathBuf,
}

impl Log {
    /// Creates a new log; an existing non-empty file is refused (resume it, or choose another),
    /// and so is a path that is not a regular file (a FIFO, `/dev/null`: a log is read back).
    /// The log is locked for as long as it is open ([`lock`]).
    pub fn create(path: &Path, header: &Header) -> Result<Log, LogError> {
        let io = |e: std::io::Error| LogError::Io { path: path.to_path_buf(), message: e.to_string() };
        if path.is_dir() {
            return Err(LogError::Io { path: path.to_path_buf(), message: "a directory, not a log file".into() });
        }
        mapsat_ir::files::check_writable(path).map_err(io)?;
        if path.metadata().map(|m| m.len() > 0).unwrap_or(false) {
            return Err(LogError::Foreign {
                path: path.to_path_buf(),
                message: "the log exists: continue it with --resume, or give another --log".into(),
            });
        }
        let file = OpenOptions::new().create(true).write(true).truncate(false).open(path).map_err(io)?;
        lock(&file, path)?;
        file.set_len(0).map_err(io)?;
        let mut log = Log { file, path: path.to_path_buf() };
        log.write(&Line::Header(header.clone()))?;
        Ok(log)
    }

    /// Opens an existing log to continue it: its trials, after checking that its header is
    /// `header`'s task. A cut-off last line is removed.
    pub fn resume(path: &Path, header: &Header) -> Result<(Log, Vec<Trial>), LogError> {
        let io = |e: std::io::Error| LogError::Io { path: path.to_path_buf(), message: e.to_string() };
        let foreign = |m: String| LogError::Foreign { path: path.to_path_buf(), message: m };
        // A log is a regular file (a FIFO or device would block or never end); 4 GiB holds
        // millions of records.
        mapsat_ir::files::check_regular(path, 4 << 30).map_err(io)?;
        let mut file = OpenOptions::new().read(true).write(true).open(path).map_err(io)?;
        lock(&file, path)?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(|e| foreign(format!("not a tuning log ({e})")))?;
        let mut trials = Vec::new();
        let mut valid_len = 0;
        let mut lines = text.split_inclusive('\n').peekable();
        let first = lines.next().ok_or_else(|| foreign("the log is empty".into()))?;
        let found: Header = match serde_json::from_str(first.trim_end()) {
            Ok(Line::Header(h)) => h,
            _ => return Err(foreign("not a mapsat tuning log (its first line is no header)".into())),
        };
        check_header(&found, header).map_err(foreign)?;
        valid_len += first.len();
        // The line of each trial (phase, number): one recorded twice is refused.
        let mut seen: std::collections::HashMap<(Phase, u64), usize> = std::collections::HashMap::new();
        // The number of each search's next trial.
        let mut counts: std::collections::HashMap<Phase, u64> = std::collections::HashMap::new();
        let mut number = 1;
        while let Some(line) = lines.next() {
            number += 1;
            let last = lines.peek().is_none();
            match serde_json::from_str(line.trim_end()) {
                Ok(Line::Trial(t)) if line.ends_with('\n') => {
                    if let Some(before) = seen.insert((t.phase, t.trial), number) {
                        return Err(foreign(format!(
                            "line {number} records trial {} of the {} search again (line {before} did)",
                            t.trial,
                            t.phase.name()
                        )));
                    }
                    // Each search numbers its trials 0, 1, 2, ... in the order it writes them.
                    let next = counts.entry(t.phase).or_insert(0u64);
                    if t.trial != *next {
                        return Err(foreign(format!(
                            "line {number} records trial {} of the {} search where trial {next} comes next",
                            t.trial,
                            t.phase.name()
                        )));
                    }
                    *next += 1;
                    trials.push(t)
                }
                // Confirmations are redone at the end of each phase.
                Ok(Line::Confirmation(_)) if line.ends_with('\n') => {}
                // Cut off by a kill (one write per line, so without its newline): dropped.
                _ if last && !line.ends_with('\n') => break,
                _ => return Err(foreign(format!("line {number} is not a trial record"))),
            }
            valid_len += line.len();
        }
        file.set_len(valid_len as u64).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok((Log { file, path: path.to_path_buf() }, trials))
    }

    /// Appends a trial (one write, flushed).
    pub fn append(&mut self, t: &Trial) -> Result<(), LogError> {
        self.write(&Line::Trial(t.clone()))
    }

    /// Appends a confirmation (one write, flushed).
    pub fn confirm(&mut self, c: &Confirmation) -> Result<(), LogError> {
        self.write(&Line::Confirmation(c.clone()))
    }

    fn write(&mut self, line: &Line) -> Result<(), LogError> {
        let io = |m: String| LogError::Io { path: self.path.clone(), message: m };
        let mut text = serde_json::to_string(line).map_err(|e| io(e.to_string()))?;
        text.push('\n');
        self.file.write_all(text.as_bytes()).and_then(|_| self.file.flush()).map_err(|e| io(e.to_string()))
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Locks an open log for this process (released when it is closed, also by a kill), so that
/// a second tune into the same log, which would interleave its records with this one's, is
/// refused.
fn lock(file: &File, path: &Path) -> Result<(), LogError> {
    match mapsat_ir::files::try_lock(file) {
        Ok(true) => Ok(()),
        Ok(false) => Err(LogError::Foreign {
            path: path.to_path_buf(),
            message: "another tune is writing this log: wait for it to end, or tune into another folder".into(),
        }),
        Err(e) => Err(LogError::Io { path: path.to_path_buf(), message: e.to_string() }),
    }
}

fn check_header(found: &Header, want: &Header) -> Result<(), String> {
    if found.format != want.format {
        return Err(format!("the log has format {}, this mapsat writes format {}", found.format, want.format));
    }
    if found.program != want.program || found.sizes != want.sizes {
        return Err(format!(
            "the log was written for another task (program `{}` at {}), not `{}` at {}",
            found.program, found.sizes, want.program, want.sizes
        ));
    }
    if found.device != want.device || found.profile != want.profile {
        return Err(format!(
            "the log was written for device {} (profile {}), not {} (profile {})",
            found.device, found.profile, want.device, want.profile
        ));
    }
    if let (Some(a), Some(b)) = (found.seed, want.seed) {
        if a != b {
            return Err(format!("the log was written with --seed {a}, not {b}: resume it with --seed {a}"));
        }
    }
    if found.task == want.task {
        return Ok(());
    }
    match (&found.text, &want.text) {
        (Some(a), Some(b)) if a == b => Err(format!(
            "the log was written for program `{}` at {} with other options (the program's text is the same; \
             `--strict-math`, `--no-fusion` or the device profile's figures differ); resume with the options \
             of the tune that wrote it, or tune into a new log",
            found.program, found.sizes
        )),
        _ => Err(format!(
            "the log was written for another version of program `{}` at {} (its text differs: the task \
             hash is {}, this program's is {}); tune into a new log, or resume with the program the log was written for",
            found.program, found.sizes, found.task, want.task
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            format: LOG_FORMAT,
            mapsat: "test".into(),
            task: "abc".into(),
            program: "f".into(),
            sizes: Sizes::new().with("N", 4),
            device: "opencl:0:0".into(),
            profile: "pocl-cpu".into(),
            text: Some("t".into()),
            seed: Some(0),
        }
    }

    fn trial(n: u64) -> Trial {
        Trial {
            trial: n,
            phase: Phase::Guided,
            batch: 0,
            tuning: Sizes::new(),
            mapping: "A=G0".into(),
            local: vec![4],
            kernel: format!("k{n}"),
            status: Status::Ok,
            reason: String::new(),
            times_ms: vec![1.0],
            median_ms: 1.0,
            min_ms: 0.5,
            gflops: 2.0,
            build_ms: 3.0,
            predicted_ms: 1.5,
            learned_score: None,
            reused: None,
        }
    }

    #[test]
    fn a_cut_off_line_is_dropped_on_resume() {
        let dir = std::env::temp_dir().join(format!("mapsat-log-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let _ = std::fs::remove_file(&path);
        let mut log = Log::create(&path, &header()).unwrap();
        log.append(&trial(0)).unwrap();
        log.append(&trial(1)).unwrap();
        drop(log);
        assert!(Log::create(&path, &header()).is_err(), "an existing log is not overwritten");
        // A kill in the middle of a write.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"kind\":\"trial\",\"trial\":2,\"pha").unwrap();
        drop(f);
        let (mut log, trials) = Log::resume(&path, &header()).unwrap();
        assert_eq!(trials, vec![trial(0), trial(1)]);
        log.append(&trial(2)).unwrap();
        drop(log);
        let (_, trials) = Log::resume(&path, &header()).unwrap();
        assert_eq!(trials.len(), 3);
        // A trial recorded twice (a log edited by hand) is refused, naming both lines.
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&[serde_json::to_vec(&Line::Trial(trial(1))).unwrap(), b"\n".to_vec()].concat())
            .unwrap();
        let e = Log::resume(&path, &header()).err().expect("refused").to_string();
        assert!(e.contains("line 5 records trial 1 of the guided search again (line 3 did)"), "{e}");
        // Another task, another format, another file.
        let mut other = header();
        other.task = "xyz".into();
        assert!(matches!(Log::resume(&path, &other), Err(LogError::Foreign { .. })));
        other = header();
        other.format += 1;
        assert!(matches!(Log::resume(&path, &other), Err(LogError::Foreign { .. })));
        std::fs::write(dir.join("b.jsonl"), "{\"x\": 1}\n").unwrap();
        assert!(matches!(Log::resume(&dir.join("b.jsonl"), &header()), Err(LogError::Foreign { .. })));
        // A directory is no log (it was called an existing one).
        let e = Log::create(&dir, &header()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("a directory, not a log file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What a kill cannot leave is refused, not dropped or trusted: a complete last line that
    /// is no record (a kill leaves a line without its newline), trials out of order, a log of
    /// another seed, a log another tune has open, and a path that is no regular file.
    #[test]
    fn a_resumed_log_is_what_a_tune_wrote() {
        let dir = std::env::temp_dir().join(format!("mapsat-log-test2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let write = |lines: &[Line]| {
            let text: String = lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect();
            std::fs::write(&path, text).unwrap();
        };
        let head = || Line::Header(header());
        write(&[head(), Line::Trial(trial(0))]);
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + "garbage\n").unwrap();
        let e = Log::resume(&path, &header()).err().expect("refused").to_string();
        assert!(e.contains("line 3 is not a trial record"), "{e}");
        write(&[head(), Line::Trial(trial(0)), Line::Trial(trial(4))]);
        let e = Log::resume(&path, &header()).err().expect("refused").to_string();
        assert!(e.contains("line 3 records trial 4 of the guided search where trial 1 comes next"), "{e}");
        write(&[head(), Line::Trial(trial(0))]);
        let other = Header { seed: Some(7), ..header() };
        let e = Log::resume(&path, &other).err().expect("refused").to_string();
        assert!(e.contains("the log was written with --seed 0, not 7"), "{e}");
        // Open in one tune: a second is refused, resuming or not; closed, it resumes.
        let (log, _) = Log::resume(&path, &header()).unwrap();
        let e = Log::resume(&path, &header()).err().expect("refused").to_string();
        assert!(e.contains("another tune is writing this log"), "{e}");
        drop(log);
        assert!(Log::resume(&path, &header()).is_ok());
        let fresh = dir.join("b.jsonl");
        let log = Log::create(&fresh, &header()).unwrap();
        std::fs::write(&fresh, "").unwrap();
        let e = Log::create(&fresh, &header()).err().expect("refused").to_string();
        assert!(e.contains("another tune is writing this log"), "{e}");
        drop(log);
        let e = Log::create(Path::new("/dev/null"), &header()).err().expect("refused").to_string();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

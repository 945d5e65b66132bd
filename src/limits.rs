//! What the command line and the Python package share about running mapsat's passes: the
//! stack they run on, the largest program text, time limits in seconds.

use crate::error::Error;
use std::sync::mpsc;
use std::time::Duration;

/// The stack of the thread that runs a command: the passes over a program (parsing,
/// elaboration, checking, printing, lowering) recurse along its tree, whose depth the parser
/// bounds (200 levels of nesting, chains of 2,000 terms); this leaves room for the deepest
/// program it accepts, in debug builds too. Only the pages used are committed.
pub const STACK_SIZE: usize = 512 << 20;

/// The largest program text read (the largest example is a few KB): `/dev/zero`, or a data
/// file given by mistake, would otherwise be read until memory runs out.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// Runs `f` on a thread of its own with [`STACK_SIZE`] of stack; its result arrives on the
/// receiver (which disconnects without one if `f` panics). Whoever stops waiting leaves the
/// thread to its end: a kernel cannot be stopped.
pub fn spawn_deep<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<mpsc::Receiver<T>, Error> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(STACK_SIZE)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| Error::Rejected(format!("error: cannot start a thread: {e}")))?;
    Ok(rx)
}

/// A time limit given in seconds (`what` names it in errors): positive and at most what a
/// `Duration` holds.
pub fn seconds(what: &str, s: f64) -> Result<Duration, Error> {
    match Duration::try_from_secs_f64(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Err(_) if s.is_finite() && s > 0.0 => {
            Err(Error::Usage(format!("{what} {s:e} is too large (at most about 1.8e19 seconds)")))
        }
        // Positive, but less than a nanosecond.
        Ok(_) if s > 0.0 => Err(Error::Usage(format!("{what} {s:e} is too small (at least 1e-9 seconds)"))),
        _ => Err(Error::Usage(format!("{what} must be a positive number of seconds, got {s}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn time_limits_are_positive_and_said_briefly() {
        assert_eq!(seconds("--timeout", 1.5).unwrap().as_millis(), 1500);
        for (s, want) in [
            (0.0, "must be a positive number"),
            (-1.0, "must be a positive number"),
            (f64::NAN, "must be a positive number"),
            (1e300, "--timeout 1e300 is too large"),
            (1e-300, "--timeout 1e-300 is too small"),
        ] {
            let e = seconds("--timeout", s).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}

//! The facade's error: what the command line reports as a usage error (exit 2) or a rejected
//! input (exit 1), and Python raises as `mapsat.Error`.

/// Why an operation of the facade failed; the message is ready to print.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Something is not written right (a bad map label, code, profile name).
    #[error("{0}")]
    Usage(String),
    /// The input is refused (an invalid mapping, a program without a space, a missing device).
    #[error("{0}")]
    Rejected(String),
}

impl From<mapsat_tuner::measure::MeasureError> for Error {
    /// A device that is missing or refuses, or a device not written right (`opencl:0:0`,
    /// `cuda:0`), a kernel that fails, an input refused.
    fn from(e: mapsat_tuner::measure::MeasureError) -> Error {
        Error::Rejected(format!("error: {e}"))
    }
}

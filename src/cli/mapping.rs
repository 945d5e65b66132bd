//! `--mapping` on `emit` and `run`: [`mapsat::mapping`], its errors as the CLI's failures and
//! its warnings on stderr.

use super::Failure;
use mapsat::Error;

pub(super) use mapsat::mapping::violations;

/// The facade's error as the CLI's failure (exit 2 for usage, 1 for a rejected input).
pub(super) fn failure(e: Error) -> Failure {
    e.into()
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Usage(m) => Failure::Usage(m),
            Error::Rejected(m) => Failure::Rejected(m),
        }
    }
}

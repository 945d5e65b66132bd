//! Errors of the rewrite stage.

use mapsat_ir::check::TypeError;
use mapsat_ir::MissingSize;

/// Why a program could not be rewritten.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    /// The input program does not type-check (at the given sizes).
    #[error("the input program does not type-check: {0}")]
    Type(#[from] TypeError),
    /// A size variable has no value (neither given nor a default).
    #[error("{0}")]
    Size(#[from] MissingSize),
    /// The options are inconsistent.
    #[error("{0}")]
    Options(String),
}

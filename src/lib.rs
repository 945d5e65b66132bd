//! mapsat: an optimizer from a Lift-like functional IR to OpenCL and CUDA kernels.
//!
//! This facade re-exports the phases: [`ir`] (types, text format, checker, interpreter) and
//! [`rewrite`] (equality saturation, variants of a program).

pub use mapsat_ir as ir;
pub use mapsat_rewrite as rewrite;

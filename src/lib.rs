//! mapsat: an optimizer from a Lift-like functional IR to OpenCL and CUDA kernels.
//!
//! This facade re-exports the phases: [`ir`] (types, text format, checker, interpreter).

pub use mapsat_ir as ir;

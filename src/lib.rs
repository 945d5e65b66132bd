//! mapsat: an optimizer from a Lift-like functional IR to OpenCL and CUDA kernels.
//!
//! This facade re-exports the phases: [`ir`] (types, text format, checker, interpreter) and
//! [`rewrite`] (equality saturation, variants of a program), and [`variants`]: the programs that
//! `mapsat tune --variants K` tunes (the input and its rewrite variants), and [`choices`]: their
//! stage choices as variables of one mapping space.

pub use mapsat_ir as ir;
pub use mapsat_rewrite as rewrite;

pub mod choices;
pub mod variants;

//! mapsat: an optimizer from a Lift-like functional IR to OpenCL and CUDA kernels.
//!
//! Research code starts from [`Source`]: a program read or given as text, its sizes, the
//! interpreter's result, its kernels' mapping spaces (sampled, counted, a mapping explained),
//! its kernels emitted, run and checked, and tuned ([`tuning`]); `examples/library.rs` shows
//! it. [`local`]: work-group sizes, for every kernel or by kernel name.
//!
//! This facade re-exports the phases: [`ir`] (types, text format, checker, interpreter) and
//! [`rewrite`] (equality saturation, variants of a program), and [`variants`]: the programs that
//! `mapsat tune --variants K` tunes (the input and its rewrite variants), and [`choices`]: their
//! stage choices as variables of one mapping space, and [`mapping`]: a mapping given by hand,
//! checked by the space and applied, [`stages`]: a program of several kernels mapped kernel by kernel, [`target`]: the device profile a tune works under, and [`limits`]: the stack, the largest
//! program text and time limits the command line and Python share. The other stages are re-exported as [`constraints`],
//! [`codegen`] and [`tuner`], so that research code needs only this crate.

pub use mapsat_ir as ir;
pub use mapsat_rewrite as rewrite;

pub use mapsat_codegen as codegen;
pub use mapsat_constraints as constraints;
pub use mapsat_tuner as tuner;

pub mod choices;
pub mod error;
pub mod limits;
pub mod local;
pub mod mapping;
pub mod source;
pub mod stages;
pub mod target;
pub mod tuning;
pub mod variants;

pub use error::Error;
pub use source::Source;

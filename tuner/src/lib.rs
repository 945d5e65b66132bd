//! mapsat-tuner: cost models, search and measurement on real devices.
//!
//! This crate will score candidate mappings with analytical and learned cost models and measure the
//! best on OpenCL and CUDA devices. Nothing is implemented yet.

//! mapsat-tuner: cost models, search and measurement on real devices.
//!
//! [`measure`] runs generated kernels: OpenCL through `opencl3` on any platform the ICD loader
//! lists (pocl on the CPU in CI), CUDA through `cudarc` with NVRTC, both loaded at run time, so
//! that mapsat builds and runs where neither is installed. A run builds the kernel, uploads the
//! inputs, poisons the output, launches with the configuration codegen chose, times with device
//! events (warm-up, then the median of N runs), downloads and compares with the interpreter.
//! Cost models and search are still to come.

pub mod measure;

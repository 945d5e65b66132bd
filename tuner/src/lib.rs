//! mapsat-tuner: measurement on real devices, cost models and search.
//!
//! [`measure`] runs generated kernels: OpenCL through `opencl3` on any platform the ICD loader
//! lists (pocl on the CPU in CI), CUDA through `cudarc` with NVRTC, both loaded at run time, so
//! that mapsat builds and runs where neither is installed. A run builds the kernel, uploads the
//! inputs, poisons the output, launches with the configuration codegen chose, times with device
//! events (warm-up, then the median of N runs), downloads and compares with the interpreter.
//!
//! [`tune`] searches a program's candidates (tunable sizes, mappings from the constraint space,
//! work-group sizes) with an analytical and a learned cost model, measuring the chosen ones in
//! a worker process and logging every measurement.

pub mod calibrate;
pub mod measure;
pub mod tune;

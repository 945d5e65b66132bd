//! mapsat-codegen: lowering of fully mapped programs to OpenCL C and CUDA C.
//!
//! This crate will compute views (index expressions), allocate memory, place barriers and print
//! kernels for OpenCL and CUDA from one kernel IR. Nothing is implemented yet.

//! mapsat-rewrite: equality saturation over the mapsat IR.
//!
//! This crate will explore algorithmic and memory variants of a program with egg (tiling, fusion,
//! partial reductions, local/private staging, vectorization), every variant provably the same
//! function. Nothing is implemented yet: the IR's arena (`mapsat_ir::Program`) is laid out children
//! before parents with de Bruijn variables so that conversion to an egg `RecExpr` is one linear pass.

//! mapsat-constraints: the parallel-mapping space of a program as Z3 constraints.
//!
//! This crate will turn each `map` of a program (identified by its label, see `mapsat_ir`) into an
//! integer choice (sequential, fused, work-group, local, global, per dimension) and generate the
//! constraints that admit only valid parallel mappings. Nothing is implemented yet.

//! Type checker (in progress).

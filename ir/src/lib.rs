//! mapsat-ir: the IR of mapsat.
//!
//! Types with symbolic sizes ([`size`], [`types`]), programs as node arenas ([`ast`]), the text
//! format ([`syntax`]), the type checker ([`check`]) and the reference interpreter ([`interp`]),
//! which is the oracle every later stage is tested against.
//!
//! The language and every primitive's typing rule are documented in `docs/language.md`.

pub mod ast;
pub mod bounds;
pub mod size;
pub mod sizes;
pub mod syntax;
pub mod types;

pub use ast::{Node, NodeId, Prim, Program};
pub use size::Size;
pub use sizes::{MissingSize, Sizes};
pub use syntax::{parse, print, ParseError};
pub use types::{ScalarKind, Type};
pub mod check;
pub mod choice;
pub mod diag;
pub mod files;
pub mod interp;
pub mod profile;
pub mod stages;
pub mod widths;

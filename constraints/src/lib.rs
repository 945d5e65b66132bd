//! mapsat-constraints: the parallel-mapping space of a program as generated Z3 constraints,
//! after Mogers et al., "Mapping parallelism in a functional IR through constraint satisfaction"
//! (CC'22), section 4, and beyond it.
//!
//! Every `map` that writes memory gets one integer variable with the paper's encoding
//! ([`Code`]: 0 sequential, 1 fused with its outer map, 2 vectorized (mapsat's code), 10–12
//! local, 20–22 work group, 30–32 global, by dimension). [`Space::generate`] builds the map
//! nesting tree ([`analysis`]) and the constraint instances of thirteen families ([`Family`],
//! numbered 0–12): the domain (0), the paper's rules (1)–(8), and mapsat's vectorization (9),
//! synchronizability (10), device limits (11) and single launch shape (12); with
//! [`Options::symmetry_breaking`], a fourteenth (13) keeps one mapping per class of mappings
//! that differ by a renaming of dimensions (`Mapping::canonical`). Each map is named
//! by a [`MapId`] (its label is [`Space::label`]). A [`Space`] can then be enumerated (a stream
//! of distinct mappings), counted, sampled, and asked to [`Space::explain`] a mapping.
//! A [`ChoiceSpace`] adds the stage choices of a program's producers (inline, local, global)
//! as variables: the spaces of several programs computing the same function, one per choice,
//! in one solver.
//!
//! # What a map that "writes memory" is
//! A map is *concrete* (the paper's `ConcreteMaps`) when applying its function performs a
//! computation — a scalar operation, a literal, a `reduce`, a nested concrete map — or when it is
//! wrapped in `toGlobal`/`toLocal`/`toPrivate` (a copy). Other maps only rearrange data (the
//! maps of `zipND`, `slideND`, `padND`, `map(transpose)`): they are views, produce no loop, and
//! take no mapping; their labels are listed in [`Space::layout_maps`].
//!
//! # Approximations (see also each family's documentation)
//! - Strides, lengths and memory footprints are computed at the sizes of [`Options::sizes`]
//!   (the program's defaults for the others): a mapping is valid at the sizes it was checked at.
//! - Synchronizability compares, for each buffer dimension, the map writing it with the map
//!   reading it: a barrier is needed unless both are within one thread (S, V, or fused into
//!   such) or both are the same parallel code (not fused). Joined dimensions, and fused parallel
//!   maps, are treated conservatively (barrier needed).
//! - Barriers inside a `mapGlb` loop, or a fused parallel loop, are forbidden rather than
//!   analysed; inside a `mapLcl(d)` loop they need the local size `ls{d}` (a tuning variable)
//!   to divide its length.

pub mod analysis;
mod apply;
mod choices;
mod code;
mod encode;
mod expr;
mod families;
mod incremental;
mod local;
mod nesting;
pub mod readback;
mod solve;
mod space;
mod symmetry;

pub use apply::sequential;
pub use choices::{total, Alternative, ChoiceExplanation, ChoiceSpace, Point};
pub use code::Code;
pub use local::{DEFAULT_GROUP_BUDGET, MAX_LOCAL_SIZES};
pub use solve::{Barrier, Count, EnumStats, Explanation, Labelled, Mapping, Sampled};
pub use space::{BarrierSite, Constraint, Family, MapId, Options, Space};

/// Vector width assumed for vectorization (family 9): lengths must be multiples of it.
pub const VECTOR_WIDTH: i64 = 4;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program has no map that writes memory.
    #[error("the program has no map that computes anything: there is nothing to map")]
    NoMaps,
    /// A vector width written as a size variable has a value that is no vector width.
    #[error("{0}")]
    Width(String),
    /// The program reads vectors whose lanes are not consecutive in memory, which no mapping
    /// lowers correctly ([`analysis::Analysis::scattered_vectors`]).
    #[error("{0}: code generation reads and writes vectors at consecutive addresses only")]
    ScatteredVectors(String),
    /// The program keeps tuples in memory ([`analysis::Analysis::tuples_in_memory`]).
    #[error(
        "{0}: code generation keeps scalars and vectors only; compute the tuple inside the map that reads it (`fun(p => let t = (..) in ..)`), or, for a result of tuples, return its parts as separate programs"
    )]
    TuplesInMemory(String),
    /// The program has a map nested deeper than the analysis follows.
    #[error(
        "the program has a map nested more than {} levels deep (chains of compositions or calls nested in each other): too deep to analyse its maps",
        analysis::MAX_DEPTH
    )]
    TooDeep,
    /// A mapping names a map the program does not have.
    #[error("unknown map `{label}` in the mapping{}", the_maps_are(known))]
    UnknownMap {
        /// The label.
        label: String,
        /// The program's maps.
        known: String,
    },
    /// A mapping names a layout map.
    #[error("map `{0}` only rearranges data (a view): it has no loop and takes no mapping")]
    LayoutMap(String),
    /// A mapping gives a map twice.
    #[error("map `{0}` is given twice in the mapping")]
    DuplicateMap(String),
    /// A mapping does not have one code per map of the space.
    #[error("the mapping has {given} codes, but the space has {maps} maps")]
    MappingLength {
        /// Codes given.
        given: usize,
        /// Maps of the space.
        maps: usize,
    },
    /// A mapping leaves maps out.
    #[error("the mapping does not give a code for: {0}")]
    MissingMaps(String),
    /// A code is not one of S, F, V, L0..2, W0..2, G0..2.
    #[error("`{code}` (for map `{label}`) is not a code: use S, F, V, L0-L2, W0-W2 or G0-G2")]
    BadCode {
        /// The map.
        label: String,
        /// What was given.
        code: String,
    },
    /// A part of a mapping is not `LABEL=CODE`.
    #[error("`{0}` is not of the form LABEL=CODE")]
    MappingSyntax(String),
    /// A mapping could not be applied to the program (see [`Space::apply`]).
    #[error("cannot apply the mapping: {0}")]
    Apply(String),
    /// Stage choices that cannot be offered or chosen ([`ChoiceSpace`]).
    #[error("stage choices: {0}")]
    Choice(String),
    /// Z3 answered unknown (a timeout, usually).
    #[error("the solver gave up: {0}")]
    Solver(String),
}

/// The end of [`Error::UnknownMap`]'s message: the maps there are (`known`), or that there are
/// none.
fn the_maps_are(known: &str) -> String {
    match known.is_empty() {
        true => ": the program has no map, so its only mapping is the empty one".into(),
        false => format!(" (the maps are: {known})"),
    }
}

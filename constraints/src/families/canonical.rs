//! Family 13: symmetry breaking. Two mappings that differ by a renaming of the parallel
//! dimensions (`G0` <-> `G1` across the whole mapping, with the `W` and `L` codes of those
//! dimensions) compute the same thing with the launch's axes swapped. With
//! `Options::symmetry_breaking`, only the canonical member of each class is valid: the one whose
//! dimensions are numbered in the order the maps (in variable order) first use them, as
//! `Mapping::canonical` numbers them.
//!
//! A mapping is canonical exactly when every map using a dimension `d > 0` comes after some map
//! using `d - 1` (then each dimension is first used after the one before it). The rule is
//! stated with [`Expr::Before`], "some earlier map uses `d - 1`", which Z3 reads through one
//! auxiliary Boolean per map (the lex-leader constraint in linear size).

use super::{Gen, Out};
use crate::expr::{Expr, Term};
use crate::space::Family;
use crate::Code;

/// The codes that use dimension `d`: `mapLcl(d)`, `mapWrg(d)`, `mapGlb(d)`.
fn using(d: u8) -> Vec<i64> {
    vec![Code::Lcl(d).to_int(), Code::Wrg(d).to_int(), Code::Glb(d).to_int()]
}

/// (13) Map `i` uses dimension `d > 0` only after an earlier map used `d - 1`.
pub(super) fn dimension_order(g: &Gen, out: &mut Out) {
    for i in 0..g.len() {
        for d in 1..3u8 {
            out.push(
                Family::Canonical,
                &[i],
                format!(
                    "symmetry breaking: map {} uses dimension {d} only if a map before it uses dimension {}",
                    g.label(i),
                    d - 1
                ),
                Expr::implies(Expr::In(Term::Code(i), using(d)), Expr::Before(i, using(d - 1))),
            );
        }
    }
}

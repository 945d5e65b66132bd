//! The static cost of a term, for extraction before any device model:
//! - a node counts 1, a loop (a map whose function computes, a reduction) [`LOOP`];
//! - an array computed by a map and then read by another map or reduction counts
//!   [`INTERMEDIATE`] more: it is written to memory and read back, which fused forms avoid;
//! - a β-redex counts [`REDEX`] more.
//!
//! Layout primitives (views) pass an array on without writing it, and a map whose function only
//! rearranges (a layout map) computes nothing. Arrays written by `toX` or bound by `let` are
//! kept on purpose (a stage choice) and are not charged.

use crate::lang::Lift;
use egg::{CostFunction, Id, Language};
use mapsat_ir::ast::Prim;
use std::cmp::Ordering;

/// The extra cost of an intermediate array computed and read back in one term.
pub const INTERMEDIATE: usize = 16;
/// The extra cost of a β-redex (`(fun(x => body))(arg)`): the `beta` rule gives its reduced
/// form, which is what code generation and the mapping constraints read best.
pub const REDEX: usize = 32;

/// The static cost function (egg's bottom-up extractor uses it; [`StaticCost::of`] on a term).
pub struct StaticCost;

/// A term's cost, and what its parent needs to know to price itself.
#[derive(Clone, Debug)]
pub struct Cost {
    /// The cost.
    pub total: usize,
    /// How many intermediate arrays the term computes and reads back.
    pub intermediates: usize,
    head: Head,
    /// The term's value is (a view of) an array a map of the term computes.
    fresh: bool,
    /// The term computes something (a scalar operation or reduction somewhere in it).
    compute: bool,
}

/// The primitive at the head of a (partial) application, with its arguments so far.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Head {
    Map(u8),
    Reduce(u8),
    To,
    Layout,
    Lam,
    Other,
}

impl PartialEq for Cost {
    fn eq(&self, other: &Cost) -> bool {
        self.total == other.total
    }
}

impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Cost) -> Option<Ordering> {
        self.total.partial_cmp(&other.total)
    }
}

/// The weight of a loop: a map whose function computes, or a reduction (a map that only
/// rearranges is a view, no loop).
pub const LOOP: usize = 8;

/// The weight of one node alone: 1, or [`LOOP`] for a reduction (a map's weight depends on its
/// function, see [`StaticCost`]).
fn weight(n: &Lift) -> usize {
    match n {
        Lift::Prim(Prim::Reduce { .. }) => LOOP,
        _ => 1,
    }
}

impl StaticCost {
    /// The cost of a whole term.
    pub fn of(expr: &egg::RecExpr<Lift>) -> Cost {
        StaticCost.cost_rec(expr)
    }
}

fn leaf(n: &Lift) -> Cost {
    // A map computes what its function computes (added when it is applied to it).
    let (head, compute) = match n {
        Lift::Prim(Prim::Map { .. }) => (Head::Map(0), false),
        Lift::Prim(Prim::Reduce { .. }) => (Head::Reduce(0), true),
        Lift::Prim(Prim::To(_)) => (Head::To, false),
        Lift::Prim(p) if p.is_layout() => (Head::Layout, false),
        Lift::Prim(_) => (Head::Other, true),
        _ => (Head::Other, false),
    };
    Cost { total: weight(n), intermediates: 0, head, fresh: false, compute }
}

/// `f a`.
fn app(f: &Cost, a: &Cost) -> Cost {
    let total = 1 + f.total + a.total;
    let compute = f.compute || a.compute;
    let (head, fresh, read) = match f.head {
        // `map g`: `a` is the function.
        Head::Map(0) => (Head::Map(1), false, false),
        // `map g xs`: a new array when `g` computes; `xs` is read.
        Head::Map(_) => (Head::Other, f.compute, true),
        Head::Reduce(k) if k < 2 => (Head::Reduce(k + 1), false, false),
        Head::Reduce(_) => (Head::Other, false, true),
        Head::Layout => (Head::Layout, f.fresh || a.fresh, false),
        Head::To | Head::Lam | Head::Other => (Head::Other, false, false),
    };
    let looped = matches!(f.head, Head::Map(1)) && f.compute;
    let intermediate = read && a.fresh;
    let extra = if looped { LOOP - 1 } else { 0 }
        + if intermediate { INTERMEDIATE } else { 0 }
        + if f.head == Head::Lam { REDEX } else { 0 };
    let intermediates = f.intermediates + a.intermediates + usize::from(intermediate);
    Cost { total: total + extra, intermediates, head, fresh, compute }
}

impl CostFunction<Lift> for StaticCost {
    type Cost = Cost;

    fn cost<C: FnMut(Id) -> Cost>(&mut self, enode: &Lift, mut costs: C) -> Cost {
        match enode {
            Lift::App([f, a]) => app(&costs(*f), &costs(*a)),
            Lift::Lam(_, [b]) => {
                let b = costs(*b);
                Cost { total: 1 + b.total, head: Head::Lam, fresh: false, ..b }
            }
            Lift::Let([v, b]) => {
                let (v, b) = (costs(*v), costs(*b));
                let intermediates = v.intermediates + b.intermediates;
                let compute = v.compute || b.compute;
                Cost { total: 1 + v.total + b.total, intermediates, head: Head::Other, fresh: b.fresh, compute }
            }
            n => {
                debug_assert!(n.is_leaf());
                leaf(n)
            }
        }
    }
}

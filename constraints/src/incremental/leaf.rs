//! The leaves of a constraint's circuit: a subtree that reads one map's code (or effective code)
//! and constants only becomes one leaf, a table of its value at each code, so that `lo <= t <
//! hi` or `t ∈ set` costs one step; other comparisons are evaluated directly.

use super::{Values, FALSE, TRUE, UNKNOWN};
use crate::expr::{Expr, Term};
use crate::Code;

/// A leaf that is a table (others are evaluated directly, by [`direct`]): a predicate on one
/// term, `Code(var)` or (`eff`) `Eff(var)`, whose value at code `c` is bit `c` of `mask`, `none`
/// when the term is unassigned. (A term's value is always one of the codes of [`Code::ALL`]:
/// the variables' domains hold no other.)
pub(super) struct Table {
    pub var: usize,
    pub eff: bool,
    pub mask: u64,
    pub none: u8,
}

impl Table {
    /// The table of `e` when `e` reads one code term only; `None` otherwise.
    pub(super) fn of(e: &Expr) -> Option<Table> {
        let mut key = None;
        if !single_term(e, &mut key) {
            return None;
        }
        let (var, eff) = key?;
        let mut mask = 0u64;
        for c in Code::ALL.map(Code::to_int) {
            if at(e, Some(c)) == Some(true) {
                mask |= 1 << c;
            }
        }
        Some(Table { var, eff, mask, none: truth(at(e, None)) })
    }
}

fn truth(b: Option<bool>) -> u8 {
    match b {
        Some(false) => FALSE,
        Some(true) => TRUE,
        None => UNKNOWN,
    }
}

/// Does `e` read constants and at most one code term (left in `key` as `(var, eff)`)?
fn single_term(e: &Expr, key: &mut Option<(usize, bool)>) -> bool {
    let mut term = |t: &Term| {
        let k = match t {
            Term::Const(_) => return true,
            Term::Code(i) => (*i, false),
            Term::Eff(i) => (*i, true),
            Term::Ls(_) | Term::Mul(_) => return false,
        };
        *key.get_or_insert(k) == k
    };
    match e {
        Expr::Bool(_) => true,
        Expr::Eq(a, b) | Expr::Lt(a, b) => term(a) && term(b),
        Expr::In(a, _) => term(a),
        Expr::And(es) | Expr::Or(es) => es.iter().all(|e| single_term(e, key)),
        Expr::Not(e) => single_term(e, key),
        Expr::Before(..) => false,
    }
}

/// The value of `e` (read by [`single_term`]) when its one code term has value `v`: Kleene's
/// three-valued logic, as [`Env::eval`](crate::expr::Env::eval).
fn at(e: &Expr, v: Option<i64>) -> Option<bool> {
    let term = |t: &Term| match t {
        Term::Const(c) => Some(*c),
        _ => v,
    };
    match e {
        Expr::Bool(b) => Some(*b),
        Expr::Eq(a, b) => Some(term(a)? == term(b)?),
        Expr::Lt(a, b) => Some(term(a)? < term(b)?),
        Expr::In(a, set) => Some(set.contains(&term(a)?)),
        Expr::And(es) => kleene(es.iter().map(|e| at(e, v)), false),
        Expr::Or(es) => kleene(es.iter().map(|e| at(e, v)), true),
        Expr::Not(e) => at(e, v).map(|b| !b),
        Expr::Before(..) => None,
    }
}

/// A conjunction (`decisive` false) or disjunction (`decisive` true) of three-valued values.
fn kleene(vs: impl Iterator<Item = Option<bool>>, decisive: bool) -> Option<bool> {
    let mut unknown = false;
    for v in vs {
        match v {
            Some(b) if b == decisive => return Some(decisive),
            None => unknown = true,
            Some(_) => {}
        }
    }
    (!unknown).then_some(!decisive)
}

/// Effective code of variable `i`: its parent's when it is fused (code 1).
pub(super) fn effective(w: &Values, mut i: usize) -> Option<i64> {
    loop {
        match (w.codes[i], w.parents[i]) {
            (Some(1), Some(p)) => i = p,
            (c, _) => return c,
        }
    }
}

fn term(t: &Term, w: &Values) -> Option<i64> {
    match t {
        Term::Code(i) => w.codes[*i],
        Term::Eff(i) => effective(w, *i),
        Term::Ls(d) => w.ls.get(*d).copied().flatten(),
        Term::Const(c) => Some(*c),
        Term::Mul(ts) => ts.iter().try_fold(1i64, |acc, t| Some(acc.saturating_mul(term(t, w)?))),
    }
}

/// The value of a leaf evaluated directly.
pub(super) fn direct(e: &Expr, w: &Values) -> u8 {
    truth(three_valued(e, w))
}

/// Direct evaluation (Kleene's three-valued logic, as [`Env::eval`](crate::expr::Env::eval)).
fn three_valued(e: &Expr, w: &Values) -> Option<bool> {
    match e {
        Expr::Bool(b) => Some(*b),
        Expr::Eq(a, b) => Some(term(a, w)? == term(b, w)?),
        Expr::Lt(a, b) => Some(term(a, w)? < term(b, w)?),
        Expr::In(a, set) => Some(set.contains(&term(a, w)?)),
        Expr::Before(i, set) => kleene(w.codes[..*i].iter().map(|c| c.map(|c| set.contains(&c))), true),
        Expr::And(es) => kleene(es.iter().map(|e| three_valued(e, w)), false),
        Expr::Or(es) => kleene(es.iter().map(|e| three_valued(e, w)), true),
        Expr::Not(e) => three_valued(e, w).map(|b| !b),
    }
}

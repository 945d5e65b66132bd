//! A small language of constraints over map codes and tuning parameters: evaluated directly
//! (three-valued on partial assignments) and translated to Z3. Both readings agree by
//! construction; the tests check it by brute force.

use z3::ast::{Ast, Bool, Int};
use z3::Context;

/// An integer term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// The code of variable `i` (Table 2).
    Code(usize),
    /// The effective code of variable `i`: its parent's effective code when it is fused (1).
    Eff(usize),
    /// The local work-group size in dimension `d` (a tuning parameter).
    Ls(usize),
    /// A constant.
    Const(i64),
    /// A product.
    Mul(Vec<Term>),
}

/// A Boolean constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A constant.
    Bool(bool),
    /// `a = b`.
    Eq(Term, Term),
    /// `a < b`.
    Lt(Term, Term),
    /// `a ∈ set`.
    In(Term, Vec<i64>),
    /// Conjunction.
    And(Vec<Expr>),
    /// Disjunction.
    Or(Vec<Expr>),
    /// Negation.
    Not(Box<Expr>),
}

/// Shorthands.
impl Expr {
    /// `code(i) = v`.
    pub fn code_is(i: usize, v: i64) -> Expr {
        Expr::Eq(Term::Code(i), Term::Const(v))
    }
    /// `a ⇒ b`.
    pub fn implies(a: Expr, b: Expr) -> Expr {
        Expr::Or(vec![Expr::Not(Box::new(a)), b])
    }
    /// `¬a`.
    pub fn negate(a: Expr) -> Expr {
        Expr::Not(Box::new(a))
    }
    /// `lo <= t < hi`.
    pub fn between(t: Term, lo: i64, hi: i64) -> Expr {
        Expr::And(vec![Expr::negate(Expr::Lt(t.clone(), Term::Const(lo))), Expr::Lt(t, Term::Const(hi))])
    }

    /// Does the expression mention a tuning parameter?
    pub fn has_ls(&self) -> bool {
        fn t(x: &Term) -> bool {
            match x {
                Term::Ls(_) => true,
                Term::Mul(ts) => ts.iter().any(t),
                _ => false,
            }
        }
        match self {
            Expr::Bool(_) => false,
            Expr::Eq(a, b) | Expr::Lt(a, b) => t(a) || t(b),
            Expr::In(a, _) => t(a),
            Expr::And(es) | Expr::Or(es) => es.iter().any(Expr::has_ls),
            Expr::Not(e) => e.has_ls(),
        }
    }
}

/// Values for evaluation: codes (`None`: not assigned yet), parents of variables, tuning values.
pub struct Env<'a> {
    /// Code of each variable.
    pub codes: &'a [Option<i64>],
    /// Parent variable of each variable.
    pub parents: &'a [Option<usize>],
    /// Tuning values.
    pub ls: &'a [Option<i64>],
}

impl Env<'_> {
    fn term(&self, t: &Term) -> Option<i64> {
        match t {
            Term::Code(i) => self.codes[*i],
            Term::Eff(i) => {
                let c = self.codes[*i]?;
                match (c, self.parents[*i]) {
                    (1, Some(p)) => self.term(&Term::Eff(p)),
                    _ => Some(c),
                }
            }
            Term::Ls(d) => self.ls.get(*d).copied().flatten(),
            Term::Const(c) => Some(*c),
            Term::Mul(ts) => ts.iter().try_fold(1i64, |acc, t| Some(acc.saturating_mul(self.term(t)?))),
        }
    }

    /// Three-valued evaluation: `None` when unassigned variables decide.
    pub fn eval(&self, e: &Expr) -> Option<bool> {
        match e {
            Expr::Bool(b) => Some(*b),
            Expr::Eq(a, b) => Some(self.term(a)? == self.term(b)?),
            Expr::Lt(a, b) => Some(self.term(a)? < self.term(b)?),
            Expr::In(a, set) => Some(set.contains(&self.term(a)?)),
            Expr::And(es) => {
                let mut unknown = false;
                for e in es {
                    match self.eval(e) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                (!unknown).then_some(true)
            }
            Expr::Or(es) => {
                let mut unknown = false;
                for e in es {
                    match self.eval(e) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                (!unknown).then_some(false)
            }
            Expr::Not(e) => self.eval(e).map(|b| !b),
        }
    }
}

/// Z3 variables of a space in one context.
pub struct Z3Vars<'ctx> {
    /// One per map variable.
    pub codes: Vec<Int<'ctx>>,
    /// Effective codes (an `ite` chain through fused parents).
    pub effs: Vec<Int<'ctx>>,
    /// Tuning parameters.
    pub ls: Vec<Int<'ctx>>,
}

impl<'ctx> Z3Vars<'ctx> {
    /// Creates the variables; `parents[i] < i` must hold.
    pub fn new(ctx: &'ctx Context, n: usize, parents: &[Option<usize>], n_ls: usize) -> Z3Vars<'ctx> {
        let codes: Vec<Int> = (0..n).map(|i| Int::new_const(ctx, format!("c{i}"))).collect();
        let mut effs: Vec<Int> = Vec::with_capacity(n);
        let one = Int::from_i64(ctx, 1);
        for i in 0..n {
            let e = match parents[i] {
                Some(p) if p < i => codes[i]._eq(&one).ite(&effs[p], &codes[i]),
                _ => codes[i].clone(),
            };
            effs.push(e);
        }
        let ls = (0..n_ls).map(|d| Int::new_const(ctx, format!("ls{d}"))).collect();
        Z3Vars { codes, effs, ls }
    }

    fn term(&self, ctx: &'ctx Context, t: &Term) -> Int<'ctx> {
        match t {
            Term::Code(i) => self.codes[*i].clone(),
            Term::Eff(i) => self.effs[*i].clone(),
            Term::Ls(d) => self.ls[*d].clone(),
            Term::Const(c) => Int::from_i64(ctx, *c),
            Term::Mul(ts) => {
                let ts: Vec<Int> = ts.iter().map(|t| self.term(ctx, t)).collect();
                Int::mul(ctx, &ts.iter().collect::<Vec<_>>())
            }
        }
    }

    /// The Z3 form of an expression.
    pub fn expr(&self, ctx: &'ctx Context, e: &Expr) -> Bool<'ctx> {
        match e {
            Expr::Bool(b) => Bool::from_bool(ctx, *b),
            Expr::Eq(a, b) => self.term(ctx, a)._eq(&self.term(ctx, b)),
            Expr::Lt(a, b) => self.term(ctx, a).lt(&self.term(ctx, b)),
            Expr::In(a, set) => {
                let a = self.term(ctx, a);
                let eqs: Vec<Bool> = set.iter().map(|v| a._eq(&Int::from_i64(ctx, *v))).collect();
                Bool::or(ctx, &eqs.iter().collect::<Vec<_>>())
            }
            Expr::And(es) => {
                let es: Vec<Bool> = es.iter().map(|e| self.expr(ctx, e)).collect();
                Bool::and(ctx, &es.iter().collect::<Vec<_>>())
            }
            Expr::Or(es) => {
                let es: Vec<Bool> = es.iter().map(|e| self.expr(ctx, e)).collect();
                Bool::or(ctx, &es.iter().collect::<Vec<_>>())
            }
            Expr::Not(e) => self.expr(ctx, e).not(),
        }
    }
}

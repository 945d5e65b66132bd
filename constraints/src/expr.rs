//! A small language of constraints over map codes and tuning parameters: evaluated directly
//! (three-valued on partial assignments) and translated to Z3. Both readings agree by
//! construction; the tests check it by brute force.
//!
//! Every term has a finite domain (codes, local-size candidates, constants, their products), so
//! the Z3 form is propositional: one Boolean per (variable, value) with exactly one true, and
//! each comparison the disjunction of the value pairs that satisfy it. Z3 then decides the
//! space with its SAT core, much faster here than with integer arithmetic over `ite` chains.

use crate::Code;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::BTreeMap;
use z3::ast::{Ast, Bool};
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
    /// Some variable before variable `i` (`0..i`) has its code in the set. Z3 reads it through
    /// one auxiliary Boolean per variable and set ("seen before `i`"), defined from the one
    /// before it: a rule that looks at every earlier map is then linear in the number of maps.
    Before(usize, Vec<i64>),
}

// The levels of the code encoding (`code / 10`, see [`Code`]): the comparisons below name them.
/// First code of `mapLcl` (codes below run within one thread: S, F, V).
const LOCAL: i64 = 10;
/// First code of `mapWrg`.
const WORK_GROUP: i64 = 20;
/// First code of `mapGlb`.
const GLOBAL: i64 = 30;
/// Past the last code.
const END: i64 = 40;

/// Shorthands: the connectives, and the comparisons with the code encoding's levels by name.
/// `t` is a map's code ([`Term::Code`]) or its effective code ([`Term::Eff`]: through fusion).
impl Expr {
    /// `code(i) = c`.
    pub fn code_is(i: usize, c: Code) -> Expr {
        Expr::Eq(Term::Code(i), Term::Const(c.to_int()))
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

    /// Runs within one thread: S, F or V (`t < 10`).
    pub fn within_thread(t: Term) -> Expr {
        Expr::Lt(t, Term::Const(LOCAL))
    }
    /// Runs within one work group: within one thread, or `mapLcl` (`t < 20`); not `mapWrg` or
    /// `mapGlb`.
    pub fn within_group(t: Term) -> Expr {
        Expr::Lt(t, Term::Const(WORK_GROUP))
    }
    /// Not `mapGlb` (`t < 30`).
    pub fn not_global(t: Term) -> Expr {
        Expr::Lt(t, Term::Const(GLOBAL))
    }
    /// `mapLcl` in some dimension (`10 <= t < 20`).
    pub fn local(t: Term) -> Expr {
        Expr::between(t, LOCAL, WORK_GROUP)
    }
    /// `mapWrg` in some dimension (`20 <= t < 30`).
    pub fn work_group(t: Term) -> Expr {
        Expr::between(t, WORK_GROUP, GLOBAL)
    }
    /// `mapLcl` or `mapWrg` in some dimension: uses work-group or local ids (`10 <= t < 30`).
    pub fn grouped(t: Term) -> Expr {
        Expr::between(t, LOCAL, GLOBAL)
    }
    /// `mapGlb` in some dimension (`30 <= t < 40`).
    pub fn global(t: Term) -> Expr {
        Expr::between(t, GLOBAL, END)
    }
    /// Some map of `vars` has code `c`.
    pub fn any_code(vars: &[usize], c: Code) -> Expr {
        Expr::Or(vars.iter().map(|&i| Expr::code_is(i, c)).collect())
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
            Expr::Before(..) => false,
        }
    }
}

/// Values for evaluation: codes (`None`: not assigned yet), parents of variables, tuning values.
/// Effective codes ([`Term::Eff`]) are computed once per variable and remembered, so that a
/// constraint over the maps of a deep nest of fused maps costs one step per map, not one per
/// map and ancestor.
pub struct Env<'a> {
    /// Code of each variable.
    codes: &'a [Option<i64>],
    /// Parent variable of each variable.
    parents: &'a [Option<usize>],
    /// Tuning values.
    ls: &'a [Option<i64>],
    /// Effective code of each variable, once computed (allocated by the first [`Term::Eff`]:
    /// most evaluations in the search meet none).
    effs: OnceCell<Vec<Cell<Option<Option<i64>>>>>,
}

impl<'a> Env<'a> {
    /// Values to evaluate with.
    pub fn new(codes: &'a [Option<i64>], parents: &'a [Option<usize>], ls: &'a [Option<i64>]) -> Env<'a> {
        Env { codes, parents, ls, effs: OnceCell::new() }
    }

    fn eff(&self, i: usize) -> Option<i64> {
        let effs = self.effs.get_or_init(|| vec![Cell::new(None); self.codes.len()]);
        if let Some(known) = effs[i].get() {
            return known;
        }
        let e = match (self.codes[i], self.parents[i]) {
            (Some(1), Some(p)) => self.eff(p),
            (c, _) => c,
        };
        effs[i].set(Some(e));
        e
    }

    fn term(&self, t: &Term) -> Option<i64> {
        match t {
            Term::Code(i) => self.codes[*i],
            Term::Eff(i) => self.eff(*i),
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
            Expr::Before(i, set) => {
                let mut unknown = false;
                for c in &self.codes[..*i] {
                    match c {
                        Some(c) if set.contains(c) => return Some(true),
                        None => unknown = true,
                        Some(_) => {}
                    }
                }
                (!unknown).then_some(false)
            }
        }
    }
}

/// A finite-domain term in Z3: each value it can take with the condition under which it does
/// (the conditions are mutually exclusive).
pub type Cases<'ctx> = Vec<(i64, Bool<'ctx>)>;

/// The condition under which `cases` takes the value `v` (false when `v` is not among them).
pub(crate) fn case<'ctx>(ctx: &'ctx Context, cases: &Cases<'ctx>, v: i64) -> Bool<'ctx> {
    cases.iter().find(|(x, _)| *x == v).map_or_else(|| Bool::from_bool(ctx, false), |(_, b)| b.clone())
}

fn or<'ctx>(ctx: &'ctx Context, xs: &[Bool<'ctx>]) -> Bool<'ctx> {
    match xs {
        [] => Bool::from_bool(ctx, false),
        [x] => x.clone(),
        _ => Bool::or(ctx, &xs.iter().collect::<Vec<_>>()),
    }
}

fn and<'ctx>(ctx: &'ctx Context, xs: &[Bool<'ctx>]) -> Bool<'ctx> {
    match xs {
        [] => Bool::from_bool(ctx, true),
        [x] => x.clone(),
        _ => Bool::and(ctx, &xs.iter().collect::<Vec<_>>()),
    }
}

/// Merges cases with equal values.
fn merge<'ctx>(ctx: &'ctx Context, cases: impl IntoIterator<Item = (i64, Bool<'ctx>)>) -> Cases<'ctx> {
    let mut by: BTreeMap<i64, Vec<Bool<'ctx>>> = BTreeMap::new();
    for (v, c) in cases {
        by.entry(v).or_default().push(c);
    }
    by.into_iter().map(|(v, cs)| (v, or(ctx, &cs))).collect()
}

/// Z3 variables of a space in one context: one Boolean per value of each map variable and of
/// each tuning parameter.
pub struct Z3Vars<'ctx> {
    /// Each map variable's code, by value.
    pub codes: Vec<Cases<'ctx>>,
    /// Effective codes (through fused parents).
    pub effs: Vec<Cases<'ctx>>,
    /// Tuning parameters, by value.
    pub ls: Vec<Cases<'ctx>>,
    /// Exactly one value per variable and tuning parameter (to be asserted).
    pub domains: Vec<Bool<'ctx>>,
    /// Prefix of every Z3 name made for these variables, so that several spaces can share one
    /// context (Z3 identifies constants by name).
    pub prefix: String,
    /// The auxiliary Booleans of [`Expr::Before`], by set: the `i`-th is true when some
    /// variable before `i` has its code in the set.
    seen: RefCell<BTreeMap<Vec<i64>, Vec<Bool<'ctx>>>>,
    /// The definitions of the auxiliary Booleans made so far (to be asserted, untracked: they
    /// only name a value, and never conflict with anything).
    definitions: RefCell<Vec<Bool<'ctx>>>,
}

/// One Boolean per value, named `NAME=VALUE`; pushes onto `domains` that exactly one holds.
pub(crate) fn one_hot<'ctx>(
    ctx: &'ctx Context,
    name: &str,
    values: &[i64],
    domains: &mut Vec<Bool<'ctx>>,
) -> Cases<'ctx> {
    let cases: Cases = values.iter().map(|&v| (v, Bool::new_const(ctx, format!("{name}={v}")))).collect();
    let bools: Vec<Bool> = cases.iter().map(|(_, b)| b.clone()).collect();
    domains.push(or(ctx, &bools));
    for a in 0..bools.len() {
        for b in a + 1..bools.len() {
            domains.push(and(ctx, &[bools[a].clone(), bools[b].clone()]).not());
        }
    }
    cases
}

impl<'ctx> Z3Vars<'ctx> {
    /// Creates the variables over their domains, their names starting with `prefix`;
    /// `parents[i] < i` must hold.
    pub fn new(
        ctx: &'ctx Context,
        prefix: &str,
        domains: &[Vec<i64>],
        parents: &[Option<usize>],
        ls_domains: &[Vec<i64>],
    ) -> Z3Vars<'ctx> {
        let mut assert = Vec::new();
        let codes: Vec<Cases> = domains
            .iter()
            .enumerate()
            .map(|(i, dom)| one_hot(ctx, &format!("{prefix}c{i}"), dom, &mut assert))
            .collect();
        let mut effs: Vec<Cases> = Vec::with_capacity(codes.len());
        for (i, code) in codes.iter().enumerate() {
            let fused = code.iter().find(|(v, _)| *v == 1).map(|(_, b)| b.clone());
            let e = match (parents[i], fused) {
                (Some(p), Some(f)) if p < i => {
                    let own = code.iter().filter(|(v, _)| *v != 1).cloned();
                    let inherited: Vec<(i64, Bool)> =
                        effs[p].iter().map(|(v, c): &(i64, Bool)| (*v, and(ctx, &[f.clone(), c.clone()]))).collect();
                    merge(ctx, own.chain(inherited))
                }
                _ => code.clone(),
            };
            effs.push(e);
        }
        let ls = ls_domains
            .iter()
            .enumerate()
            .map(|(d, dom)| one_hot(ctx, &format!("{prefix}ls{d}"), dom, &mut assert))
            .collect();
        Z3Vars {
            codes,
            effs,
            ls,
            domains: assert,
            prefix: prefix.to_string(),
            seen: RefCell::default(),
            definitions: RefCell::default(),
        }
    }

    /// The definitions of the auxiliary Booleans made by [`Z3Vars::expr`] since the last call.
    pub fn take_definitions(&self) -> Vec<Bool<'ctx>> {
        std::mem::take(&mut *self.definitions.borrow_mut())
    }

    /// "Some variable before `i` has its code in `set`": `seen[0]` is false and `seen[k + 1]`
    /// is `seen[k]` or variable `k`'s code in the set, one definition per variable.
    fn before(&self, ctx: &'ctx Context, i: usize, set: &[i64]) -> Bool<'ctx> {
        let mut seen = self.seen.borrow_mut();
        let chain = seen.entry(set.to_vec()).or_insert_with(|| {
            let name = set.iter().map(i64::to_string).collect::<Vec<_>>().join("_");
            let mut chain = vec![Bool::from_bool(ctx, false)];
            let mut defs = self.definitions.borrow_mut();
            for (k, code) in self.codes.iter().enumerate() {
                let here: Vec<Bool> = code.iter().filter(|(v, _)| set.contains(v)).map(|(_, b)| b.clone()).collect();
                let next = Bool::new_const(ctx, format!("{}seen{{{name}}}<{}", self.prefix, k + 1));
                defs.push(next._eq(&or(ctx, &[chain[k].clone(), or(ctx, &here)])));
                chain.push(next);
            }
            chain
        });
        chain[i].clone()
    }

    fn term(&self, ctx: &'ctx Context, t: &Term) -> Cases<'ctx> {
        match t {
            Term::Code(i) => self.codes[*i].clone(),
            Term::Eff(i) => self.effs[*i].clone(),
            Term::Ls(d) => self.ls[*d].clone(),
            Term::Const(c) => vec![(*c, Bool::from_bool(ctx, true))],
            Term::Mul(ts) => ts.iter().fold(vec![(1, Bool::from_bool(ctx, true))], |acc, t| {
                let t = self.term(ctx, t);
                let mut out = Vec::new();
                for (a, ca) in &acc {
                    for (b, cb) in &t {
                        out.push((a.saturating_mul(*b), and(ctx, &[ca.clone(), cb.clone()])));
                    }
                }
                merge(ctx, out)
            }),
        }
    }

    fn compare(&self, ctx: &'ctx Context, a: &Term, b: &Term, rel: fn(i64, i64) -> bool) -> Bool<'ctx> {
        let (a, b) = (self.term(ctx, a), self.term(ctx, b));
        let mut alts = Vec::new();
        for (va, ca) in &a {
            let matching: Vec<Bool> = b.iter().filter(|(vb, _)| rel(*va, *vb)).map(|(_, cb)| cb.clone()).collect();
            if matching.len() == b.len() {
                alts.push(ca.clone());
            } else if !matching.is_empty() {
                alts.push(and(ctx, &[ca.clone(), or(ctx, &matching)]));
            }
        }
        or(ctx, &alts)
    }

    /// The Z3 form of an expression.
    pub fn expr(&self, ctx: &'ctx Context, e: &Expr) -> Bool<'ctx> {
        match e {
            Expr::Bool(b) => Bool::from_bool(ctx, *b),
            Expr::Eq(a, b) => self.compare(ctx, a, b, |x, y| x == y),
            Expr::Lt(a, b) => self.compare(ctx, a, b, |x, y| x < y),
            Expr::In(a, set) => {
                let alts: Vec<Bool> =
                    self.term(ctx, a).into_iter().filter(|(v, _)| set.contains(v)).map(|(_, c)| c).collect();
                or(ctx, &alts)
            }
            Expr::And(es) => and(ctx, &es.iter().map(|e| self.expr(ctx, e)).collect::<Vec<_>>()),
            Expr::Or(es) => or(ctx, &es.iter().map(|e| self.expr(ctx, e)).collect::<Vec<_>>()),
            Expr::Not(e) => self.expr(ctx, e).not(),
            Expr::Before(i, set) => self.before(ctx, *i, set),
        }
    }
}

//! Using the space with Z3: enumerate, count, sample, explain, random baseline.
//!
//! Enumeration, counting and sampling share one search (`Search`): a depth-first walk over
//! the map variables on one incremental Z3 solver that never enters a subtree without a valid
//! mapping, and that asks Z3 only where a known valid mapping (the witness) cannot be patched.
//! Evaluation and Z3 agree on every constraint (the tests check it by brute force).

use crate::expr::{Cases, Env, Expr, Term, Z3Vars};
use crate::incremental::{Circuits, Values, TRUE};
use crate::space::{Constraint, MapId, Space};
use crate::{Code, Error};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::ControlFlow;
use z3::ast::Bool;

/// Fewest random descents per stratum of [`Space::estimate`].
const PROBES_PER_STRATUM: usize = 8;
use z3::{Config, Context, SatResult, Solver};

/// A mapping: one code per variable of a [`Space`] (same order as [`Space::labels`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// The codes.
    pub codes: Vec<Code>,
}

impl std::ops::Index<MapId> for Mapping {
    type Output = Code;

    fn index(&self, id: MapId) -> &Code {
        &self.codes[id.index()]
    }
}

/// A mapping shown with its labels, as `A=W0,B=L0,...` ([`Space::show`]). Codes past the
/// space's maps, in a mapping of the wrong length, are shown with `?` for a label.
pub struct Labelled<'a>(&'a Space, &'a Mapping);

impl fmt::Display for Labelled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.1.codes.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{}={c}", self.0.labels.get(i).map_or("?", String::as_str))?;
        }
        Ok(())
    }
}

/// What [`Space::sample_each`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampled {
    /// Distinct mappings produced.
    pub produced: usize,
    /// True when they are every valid mapping of the space: a sample of fewer than asked is
    /// then the whole space; false with fewer than asked means the descents stopped finding
    /// new mappings (20n + 100 of them) in a space too large to enumerate (more than
    /// `Options::count_limit` mappings; a smaller one fills the sample from its enumeration).
    pub exhausted: bool,
    /// Random descents of the search tree made.
    pub descents: usize,
}

/// How many valid mappings there are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Count {
    /// Counted one by one.
    Exact(u64),
    /// Knuth's estimate of the search tree's leaves, from this many random probes.
    Estimate {
        /// The estimate.
        value: f64,
        /// Its standard error (of the mean over the probes).
        std_error: f64,
        /// Number of probes.
        probes: u32,
    },
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Count::Exact(n) => write!(f, "{n}"),
            // Beyond f64 (a chain of a thousand maps has some 10^400 mappings): said so.
            Count::Estimate { value, probes, .. } if !value.is_finite() => {
                write!(f, "more than 1e308 (estimate, {probes} probes)")
            }
            Count::Estimate { value, std_error, probes } if !std_error.is_finite() => {
                write!(f, "~{value:.3e} (estimate, {probes} probes; its error is beyond f64)")
            }
            Count::Estimate { value, std_error, probes } => {
                write!(f, "~{value:.3e} ± {std_error:.1e} (estimate, {probes} probes)")
            }
        }
    }
}

/// A barrier the mapping needs (labels: [`Space::label`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// Map writing the buffer.
    pub writer: MapId,
    /// Maps reading it.
    pub readers: Vec<MapId>,
}

/// The verdict on one mapping.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// True when every constraint holds.
    pub valid: bool,
    /// Every violated constraint.
    pub violated: Vec<Constraint>,
    /// Indices (in [`Space::constraints`]) of Z3's unsat core (empty when valid).
    pub core: Vec<usize>,
    /// Barriers the mapping needs (computed whether or not it is valid).
    pub barriers: Vec<Barrier>,
    /// Local sizes for a valid mapping, when the space has tuning parameters: the valid ones
    /// with the most work items ([`Space::suggested_local_size`]), else those Z3 chose.
    pub local_sizes: Option<Vec<i64>>,
}

/// Statistics of an enumeration.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnumStats {
    /// Mappings produced.
    pub produced: u64,
    /// Z3 checks made.
    pub z3_checks: u64,
    /// True when the whole space was enumerated.
    pub complete: bool,
}

struct Z3Ctx<'c> {
    solver: Solver<'c>,
    vars: Z3Vars<'c>,
    ctx: &'c Context,
    checks: u64,
    /// The constraint (index in [`Space::constraints`]) each tracking literal stands for, when
    /// the constraints are tracked (for unsat cores).
    tracked: HashMap<Bool<'c>, usize>,
}

/// Codes tried by one completion without Z3 before Z3 is asked instead (a completion that
/// succeeds mostly takes the witness's code at each map: a few hundred suffice, and a larger
/// budget only slows down the completions that fail, on a 60-deep nest most of the time).
const COMPLETION_BUDGET: u32 = 300;

/// Refutation hints kept per map ([`Search`]'s `hints`): one per code.
const HINT_SLOTS: usize = 12;

/// The hint slot of code `v` (distinct for the 12 codes; a hint only orders evaluations).
fn hint_slot(v: i64) -> usize {
    (v.rem_euclid(10) + 3 * (v.rem_euclid(40) / 10)) as usize % HINT_SLOTS
}

/// The permutations of the three dimensions, the identity first.
const PERMUTATIONS: [[u8; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];

/// Code `c` with its dimension `d` renamed to `p[d]`.
fn rename(c: i64, p: &[u8; 3]) -> i64 {
    match Code::from_int(c) {
        Some(Code::Lcl(d)) => Code::Lcl(p[d as usize % 3]).to_int(),
        Some(Code::Wrg(d)) => Code::Wrg(p[d as usize % 3]).to_int(),
        Some(Code::Glb(d)) => Code::Glb(p[d as usize % 3]).to_int(),
        _ => c,
    }
}

/// Values of variables (`None`: unassigned).
type Codes = Vec<Option<i64>>;

/// The value each one-hot variable has in a model.
fn values<'c>(model: &z3::Model<'c>, vars: &[Cases<'c>]) -> Result<Codes, Error> {
    vars.iter()
        .map(|cases| {
            cases
                .iter()
                .find(|(_, b)| model.eval(b, true).and_then(|x| x.as_bool()) == Some(true))
                .map(|(v, _)| Some(*v))
                .ok_or_else(|| Error::Solver("a model without a value for a variable".into()))
        })
        .collect()
}

impl<'c> Z3Ctx<'c> {
    fn new(space: &Space, ctx: &'c Context, track: bool) -> Z3Ctx<'c> {
        let solver = crate::encode::solver(ctx, space.options.timeout_ms);
        let how = crate::encode::How { prefix: "", guard: None, track };
        let crate::encode::Encoded { vars, tracked } = crate::encode::encode(space, ctx, &solver, &how);
        Z3Ctx { solver, vars, ctx, checks: 0, tracked }
    }

    /// The codes and local sizes of the last model (after a satisfiable check).
    fn model(&self) -> Result<(Codes, Codes), Error> {
        let model = self.solver.get_model().ok_or_else(|| Error::Solver("no model after sat".into()))?;
        Ok((values(&model, &self.vars.codes)?, values(&model, &self.vars.ls)?))
    }

    /// `code(i) = v` as a literal (false when `v` is not in the domain).
    fn eq(&self, i: usize, v: i64) -> Bool<'c> {
        crate::expr::case(self.ctx, &self.vars.codes[i], v)
    }

    fn check(&mut self) -> Result<bool, Error> {
        self.checks += 1;
        match self.solver.check() {
            SatResult::Sat => Ok(true),
            SatResult::Unsat => Ok(false),
            SatResult::Unknown => Err(Error::Solver(self.solver.get_reason_unknown().unwrap_or_default())),
        }
    }
}

/// Constraints indexed by the variables they depend on.
struct Index {
    /// Constraints whose last variable (in assignment order) is `i`: decided once `0..=i` are.
    by_last: Vec<Vec<usize>>,
    /// Constraints whose value can change when variable `i` changes (through `Eff`, a
    /// variable's ancestors count too).
    by_var: Vec<Vec<usize>>,
    /// Constraints on tuning parameters.
    with_ls: Vec<usize>,
    /// For each constraint without tuning parameters, its last variable (`None`: it has
    /// tuning parameters, or no variable).
    last: Vec<Option<usize>>,
}

fn term_vars(t: &Term, parents: &[Option<usize>], out: &mut Vec<usize>) {
    match t {
        Term::Code(i) => out.push(*i),
        Term::Eff(i) => {
            let mut at = Some(*i);
            while let Some(j) = at {
                out.push(j);
                at = parents[j];
            }
        }
        Term::Mul(ts) => ts.iter().for_each(|t| term_vars(t, parents, out)),
        Term::Ls(_) | Term::Const(_) => {}
    }
}

/// Pushes the variables `e` depends on (through `Eff`, a variable's ancestors too).
pub(crate) fn expr_vars(e: &Expr, parents: &[Option<usize>], out: &mut Vec<usize>) {
    match e {
        Expr::Bool(_) => {}
        Expr::Eq(a, b) | Expr::Lt(a, b) => {
            term_vars(a, parents, out);
            term_vars(b, parents, out);
        }
        Expr::In(a, _) => term_vars(a, parents, out),
        Expr::And(es) | Expr::Or(es) => es.iter().for_each(|e| expr_vars(e, parents, out)),
        Expr::Not(e) => expr_vars(e, parents, out),
        Expr::Before(i, _) => out.extend(0..*i),
    }
}

/// Number of nodes of an expression (its cost to evaluate).
fn expr_size(e: &Expr) -> usize {
    fn term(t: &Term) -> usize {
        match t {
            Term::Mul(ts) => 1 + ts.iter().map(term).sum::<usize>(),
            _ => 1,
        }
    }
    match e {
        Expr::Bool(_) => 1,
        Expr::Eq(a, b) | Expr::Lt(a, b) => 1 + term(a) + term(b),
        Expr::In(a, _) => 1 + term(a),
        Expr::And(es) | Expr::Or(es) => 1 + es.iter().map(expr_size).sum::<usize>(),
        Expr::Not(e) => 1 + expr_size(e),
        Expr::Before(i, _) => 1 + i,
    }
}

impl Index {
    fn new(space: &Space) -> Index {
        let mut by_last = vec![Vec::new(); space.len()];
        let mut by_var = vec![Vec::new(); space.len()];
        let mut last = vec![None; space.constraints.len()];
        for (k, c) in space.constraints.iter().enumerate() {
            let mut vars = Vec::new();
            expr_vars(&c.expr, &space.parents, &mut vars);
            vars.sort_unstable();
            vars.dedup();
            // Constraints without code variables hold in every witness (Z3 checked them).
            if let Some(&l) = vars.last() {
                by_last[l].push(k);
                last[k] = Some(l).filter(|_| !c.expr.has_ls());
            }
            for v in vars {
                by_var[v].push(k);
            }
        }
        // Smallest first: a refutation (most evaluations refute) then mostly costs a small one.
        let sizes: Vec<usize> = space.constraints.iter().map(|c| expr_size(&c.expr)).collect();
        for ks in &mut by_var {
            ks.sort_by_key(|&k| sizes[k]);
        }
        let with_ls = (0..space.constraints.len()).filter(|&k| space.constraints[k].expr.has_ls()).collect();
        Index { by_last, by_var, with_ls, last }
    }
}

/// The search shared by enumeration, counting and sampling: a depth-first walk over the map
/// variables (outer maps first) that never enters a subtree without a valid mapping.
///
/// It keeps a *witness*, a full valid assignment (codes and local sizes) that agrees with the
/// current prefix. Giving variable `i` a new value `v` is decided, cheapest first, by:
/// (1) the witness itself, when it has `v` there; (2) the witness patched with `v`,
/// re-evaluating only the constraints that depend on `i` (all others keep their value, so the
/// patch is valid when those hold), and of those only the parts that depend on `i`
/// ([`Circuits`]); (3) the constraints the prefix decides, and the learnt
/// nogoods, which refute it; (4) a bounded search for a completion without Z3; (5) Z3, asked
/// whether the prefix and `v` extend to a valid mapping: its model becomes the new witness, and
/// when it says no, the unsat core over the prefix becomes a nogood. Most steps end at (1) or
/// (2). The prefix is asserted in Z3 lazily, when a check needs it.
struct Search<'s, 'c> {
    space: &'s Space,
    z: Z3Ctx<'c>,
    idx: Index,
    /// The prefix being explored (`None` past it).
    assign: Vec<Option<i64>>,
    /// The witness's codes (always all `Some`).
    w_codes: Vec<Option<i64>>,
    /// The witness's local sizes.
    w_ls: Vec<Option<i64>>,
    /// Number of prefix variables asserted in Z3 (one scope each).
    pushed: usize,
    /// Learnt nogoods (sets of `(variable, code)` no valid mapping has), by their last variable.
    nogoods: Vec<Vec<Vec<(usize, i64)>>>,
    /// Local sizes left open (constraints on them undecided), for prefix evaluation.
    no_ls: Vec<Option<i64>>,
    /// True when every renaming of dimensions maps the space onto itself (interchangeable
    /// dimensions, no symmetry breaking): a nogood is then learnt with its renamings.
    symmetric: bool,
    /// For each variable and value (by [`hint_slot`]), the position in `idx.by_var` of the
    /// constraint that last refuted a patch, and of the one that last refuted a prefix: tried
    /// first next time (the same rule tends to refute the same map's value again), so a
    /// refutation costs one evaluation instead of a scan.
    hints: Vec<[(u32, u32); HINT_SLOTS]>,
    /// The constraints' values on the witness, evaluated incrementally by [`Search::patch`]
    /// (made by the first patch: a first mapping needs none).
    circuits: Option<Circuits>,
}

impl<'s, 'c> Search<'s, 'c> {
    /// A search over `space`, or `None` when the space is empty.
    fn new(space: &'s Space, ctx: &'c Context) -> Result<Option<Search<'s, 'c>>, Error> {
        let mut z = Z3Ctx::new(space, ctx, false);
        if !z.check()? {
            return Ok(None);
        }
        let (w_codes, w_ls) = z.model()?;
        let idx = Index::new(space);
        let n = space.len();
        Ok(Some(Search {
            circuits: None,
            space,
            z,
            idx,
            assign: vec![None; n],
            w_codes,
            w_ls,
            pushed: 0,
            nogoods: vec![Vec::new(); n],
            no_ls: vec![None; space.local_size_count()],
            symmetric: space.dimensions_interchangeable() && !space.options.symmetry_breaking,
            hints: vec![[(0, 0); HINT_SLOTS]; n],
        }))
    }

    /// Does a learnt nogood ending at variable `i` hold in `codes` (assigned up to `i`)?
    fn learnt_refutes(&self, i: usize, codes: &[Option<i64>]) -> bool {
        self.nogoods[i].iter().any(|ng| ng.iter().all(|&(x, c)| codes[x] == Some(c)))
    }

    /// Does the prefix `0..=i` violate a constraint on variable `i`? Three-valued evaluation
    /// decides some constraints before all their variables are assigned (a chain-wide rule
    /// broken by two maps of the prefix), so every constraint that depends on `i` is evaluated,
    /// not only those whose last variable it is. (The prefix `0..i` violated none.)
    fn prefix_violates(&mut self, i: usize) -> bool {
        let env = Env::new(&self.assign, &self.space.parents, &self.no_ls);
        let cs = &self.space.constraints;
        let by_var = &self.idx.by_var[i];
        let violated = |k: usize| env.eval(&cs[k].expr) == Some(false);
        let slot = hint_slot(self.assign[i].unwrap_or_default());
        if by_var.get(self.hints[i][slot].1 as usize).is_some_and(|&k| violated(k)) {
            return true;
        }
        match by_var.iter().position(|&k| violated(k)) {
            Some(p) => {
                self.hints[i][slot].1 = p as u32;
                true
            }
            None => false,
        }
    }

    /// Does the witness stay valid with `v` at `i`? If so, it is changed. If not, `Err(true)`
    /// when the constraint that fails is one the prefix `0..=i` decides (no tuning parameters,
    /// no later variable): the witness agrees with the prefix, so the prefix violates it too.
    /// The constraints are evaluated incrementally ([`Circuits`]), in the order of `by_var[i]`.
    fn patch(&mut self, i: usize, v: i64) -> Result<(), bool> {
        if self.circuits.is_none() {
            let exprs: Vec<&Expr> = self.space.constraints.iter().map(|c| &c.expr).collect();
            self.circuits = Some(Circuits::new(&exprs, &self.space.parents, &self.idx.by_var));
            self.witness_changed();
        }
        let old = self.w_codes[i].replace(v);
        let w = Values { codes: &self.w_codes, parents: &self.space.parents, ls: &self.w_ls };
        let Some(circuits) = self.circuits.as_mut() else { unreachable!("made above") };
        let mut fails = |p: usize| circuits.eval(i, p, &w) != TRUE;
        let n = self.idx.by_var[i].len();
        let hint = &mut self.hints[i][hint_slot(v)].0;
        let failed = match (*hint as usize) < n && fails(*hint as usize) {
            true => Some(*hint as usize),
            false => circuits.first_failing(i, &w).inspect(|&p| *hint = p as u32),
        };
        match failed {
            None => {
                circuits.commit(i);
                self.check_circuits(i);
                Ok(())
            }
            Some(p) => {
                self.w_codes[i] = old;
                Err(self.idx.last[self.idx.by_var[i][p]].is_some_and(|l| l <= i))
            }
        }
    }

    /// The witness changed wholesale: every constraint is evaluated on it again.
    fn witness_changed(&mut self) {
        if let Some(c) = self.circuits.as_mut() {
            c.rebuild(&Values { codes: &self.w_codes, parents: &self.space.parents, ls: &self.w_ls });
        }
    }

    /// In debug builds, checks the incremental values of the constraints on `i` against a full
    /// evaluation.
    fn check_circuits(&self, i: usize) {
        if let Some(circuits) = self.circuits.as_ref().filter(|_| cfg!(debug_assertions)) {
            let env = Env::new(&self.w_codes, &self.space.parents, &self.w_ls);
            for &k in &self.idx.by_var[i] {
                let want = match env.eval(&self.space.constraints[k].expr) {
                    Some(true) => TRUE,
                    Some(false) => 0,
                    None => 2,
                };
                debug_assert_eq!(circuits.root_value(k), want, "constraint {k} after a patch at {i}");
            }
        }
    }

    /// Completes the prefix `0..=i` without Z3: a depth-first search over the later variables,
    /// each trying the witness's code first, then the others, checking the constraints each
    /// decides (local sizes are the witness's) and the learnt nogoods, within a budget of
    /// [`COMPLETION_BUDGET`] tried codes. On success the completion (valid: every constraint was
    /// evaluated true) becomes the witness; on failure (no completion, or out of budget) Z3
    /// decides.
    fn complete_without_z3(&mut self, i: usize) -> bool {
        let env = Env::new(&self.assign, &self.space.parents, &self.w_ls);
        let cs = &self.space.constraints;
        // Constraints on local sizes decided by the prefix (undecided when it was checked).
        let prefix_ok = self.idx.with_ls.iter().all(|&k| env.eval(&cs[k].expr) != Some(false));
        if !prefix_ok {
            return false;
        }
        let mut cand = self.assign.clone();
        let mut budget = COMPLETION_BUDGET;
        if self.complete_from(i + 1, &mut cand, &mut budget) {
            let env = Env::new(&cand, &self.space.parents, &self.w_ls);
            if self.idx.with_ls.iter().all(|&k| env.eval(&cs[k].expr) == Some(true)) {
                self.w_codes = cand;
                self.witness_changed();
                return true;
            }
        }
        false
    }

    fn complete_from(&self, j: usize, cand: &mut Vec<Option<i64>>, budget: &mut u32) -> bool {
        if j == self.space.len() {
            return true;
        }
        let w = self.w_codes[j].unwrap_or_default();
        for v in std::iter::once(w).chain(self.space.domains[j].iter().copied().filter(|&v| v != w)) {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            cand[j] = Some(v);
            let env = Env::new(cand, &self.space.parents, &self.w_ls);
            let ok = self.idx.by_last[j].iter().all(|&k| env.eval(&self.space.constraints[k].expr) == Some(true))
                && !self.learnt_refutes(j, cand);
            if ok && self.complete_from(j + 1, cand, budget) {
                return true;
            }
        }
        cand[j] = None;
        false
    }

    /// Tries `v` for variable `i` (the prefix `0..i` assigned): true when the prefix with it
    /// extends to a valid mapping, and then the witness agrees with it. False leaves no trace.
    fn enter(&mut self, i: usize, v: i64) -> Result<bool, Error> {
        debug_assert!(self.assign[i].is_none());
        self.assign[i] = Some(v);
        let ok = self.extensible(i, v)?;
        if !ok {
            self.assign[i] = None;
        }
        Ok(ok)
    }

    fn extensible(&mut self, i: usize, v: i64) -> Result<bool, Error> {
        // A valid full assignment that agrees with the prefix proves it extensible, so the
        // cheaper tests go first.
        if self.w_codes[i] == Some(v) {
            return Ok(true);
        }
        match self.patch(i, v) {
            Ok(()) => return Ok(true),
            Err(true) => return Ok(false),
            Err(false) => {}
        }
        if self.prefix_violates(i) || self.learnt_refutes(i, &self.assign) {
            return Ok(false);
        }
        if self.complete_without_z3(i) {
            return Ok(true);
        }
        while self.pushed < i {
            let x = self.pushed;
            self.z.solver.push();
            self.z.solver.assert(&self.z.eq(x, self.assign[x].unwrap_or_default()));
            self.pushed += 1;
        }
        self.z.solver.push();
        self.z.solver.assert(&self.z.eq(i, v));
        if self.z.check()? {
            self.pushed += 1;
            (self.w_codes, self.w_ls) = self.z.model()?;
            self.witness_changed();
            return Ok(true);
        }
        // Learn why: the prefix values that cannot go together in any mapping (an unsat core
        // over the prefix, asked with the prefix as assumptions rather than assertions).
        self.z.solver.pop((self.pushed + 1) as u32);
        self.pushed = 0;
        let lits: Vec<Bool> = (0..=i).map(|x| self.z.eq(x, self.assign[x].unwrap_or_default())).collect();
        self.z.checks += 1;
        match self.z.solver.check_assumptions(&lits) {
            SatResult::Unsat => {
                let core = self.z.solver.get_unsat_core();
                let nogood: Vec<(usize, i64)> = (0..=i)
                    .filter(|&x| core.contains(&lits[x]))
                    .map(|x| (x, self.assign[x].unwrap_or_default()))
                    .collect();
                self.learn(nogood);
                Ok(false)
            }
            SatResult::Sat => Err(Error::Solver("a prefix was unsat, then sat".into())),
            SatResult::Unknown => Err(Error::Solver(self.z.solver.get_reason_unknown().unwrap_or_default())),
        }
    }

    /// Keeps a nogood, and when the space is symmetric its renamings of dimensions too (a
    /// renaming maps the mappings that extend a prefix onto those that extend the renamed
    /// prefix: none either way), which a search through several dimensions' subtrees would
    /// otherwise learn once each, from Z3.
    fn learn(&mut self, nogood: Vec<(usize, i64)>) {
        let Some(&(last, _)) = nogood.last() else { return };
        let renamings: &[[u8; 3]] = if self.symmetric { &PERMUTATIONS } else { &PERMUTATIONS[..1] };
        for p in renamings {
            let renamed: Vec<(usize, i64)> = nogood.iter().map(|&(x, c)| (x, rename(c, p))).collect();
            if !self.nogoods[last].contains(&renamed) {
                self.nogoods[last].push(renamed);
            }
        }
    }

    /// Undoes [`Search::enter`] of variable `i` (and of everything after it).
    fn leave(&mut self, i: usize) {
        if self.pushed > i {
            self.z.solver.pop((self.pushed - i) as u32);
            self.pushed = i;
        }
        self.assign[i..].iter_mut().for_each(|a| *a = None);
    }

    /// The mapping of a full prefix.
    fn mapping(&self) -> Mapping {
        Mapping { codes: self.assign.iter().map(|c| c.and_then(Code::from_int).unwrap_or(Code::Seq)).collect() }
    }

    /// The values of variable `i` worth trying, the witness's first (so that the first
    /// mapping is the first witness, found without search).
    /// (The witness's code is read once, before any is tried: trying codes changes it.)
    fn order(&self, i: usize) -> impl Iterator<Item = i64> + 's {
        let w = self.w_codes[i].unwrap_or_default();
        std::iter::once(w).chain(self.space.domains[i].iter().copied().filter(move |&v| v != w))
    }

    /// Depth-first enumeration from variable `i`; `produced` counts mappings, up to `limit`.
    fn run(
        &mut self,
        i: usize,
        produced: &mut u64,
        limit: u64,
        f: &mut dyn FnMut(&Mapping) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, Error> {
        if self.space.is_empty() {
            // No variable ([`crate::Options::empty_without_maps`]): one mapping, the empty one.
            *produced += 1;
            return Ok(f(&self.mapping()));
        }
        for v in self.order(i) {
            if !self.enter(i, v)? {
                continue;
            }
            let flow = if i + 1 == self.space.len() {
                *produced += 1;
                let flow = f(&self.mapping());
                if *produced >= limit {
                    ControlFlow::Break(())
                } else {
                    flow
                }
            } else {
                self.run(i + 1, produced, limit, f)?
            };
            self.leave(i);
            if flow.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The values variable `i` can take after the current prefix.
    fn feasible_values(&mut self, i: usize) -> Result<Vec<i64>, Error> {
        let mut out = Vec::new();
        for v in self.space.domains[i].clone() {
            if self.enter(i, v)? {
                out.push(v);
                self.leave(i);
            }
        }
        Ok(out)
    }
}

impl Space {
    /// Streams distinct valid mappings to `f` (at most `limit`) until `f` breaks; distinct by
    /// construction (a depth-first search, no blocking clauses).
    pub fn enumerate(
        &self,
        limit: Option<u64>,
        mut f: impl FnMut(&Mapping) -> ControlFlow<()>,
    ) -> Result<EnumStats, Error> {
        let ctx = Context::new(&Config::new());
        let Some(mut s) = Search::new(self, &ctx)? else {
            return Ok(EnumStats { produced: 0, z3_checks: 1, complete: true });
        };
        let mut produced = 0;
        let flow = s.run(0, &mut produced, limit.unwrap_or(u64::MAX), &mut f)?;
        Ok(EnumStats { produced, z3_checks: s.z.checks, complete: flow.is_continue() })
    }

    /// The first `n` valid mappings of the enumeration order.
    pub fn first(&self, n: u64) -> Result<Vec<Mapping>, Error> {
        let mut out = Vec::new();
        self.enumerate(Some(n), |m| {
            out.push(m.clone());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Counts the valid mappings: exactly by enumeration up to `options.count_limit`, else
    /// Knuth's estimate ([`Space::estimate`]).
    pub fn count(&self, seed: u64) -> Result<Count, Error> {
        let limit = self.options.count_limit;
        let stats = self.enumerate(Some(limit.saturating_add(1)), |_| ControlFlow::Continue(()))?;
        if stats.complete && stats.produced <= limit {
            return Ok(Count::Exact(stats.produced));
        }
        self.estimate(seed)
    }

    /// Knuth's estimate of the number of valid mappings, stratified: the search tree's top
    /// levels are enumerated into at most `options.probes / 8` feasible prefixes (strata),
    /// and each stratum's subtree is estimated by Knuth's random descents (the product of the
    /// number of feasible codes at each level below the prefix, an unbiased estimate of its
    /// leaves), at least 8 per stratum. The estimate is the sum over the strata, its standard
    /// error from the strata's sample variances. Stratifying removes the variance of the top
    /// levels' imbalance, the main reason a plain estimate's error bars did not hold. A tree
    /// small enough to enumerate whole into strata gives its count with a zero error.
    pub fn estimate(&self, seed: u64) -> Result<Count, Error> {
        let probes = self.options.probes.max(1) as usize;
        let ctx = Context::new(&Config::new());
        let Some(mut s) = Search::new(self, &ctx)? else {
            return Ok(Count::Exact(0));
        };
        let strata = self.strata(&mut s, (probes / PROBES_PER_STRATUM).max(1))?;
        if strata.first().is_some_and(|p| p.len() == self.len()) {
            // The strata are the whole tree: the estimate is exact.
            return Ok(Count::Estimate { value: strata.len() as f64, std_error: 0.0, probes: 0 });
        }
        let per = (probes / strata.len().max(1)).max(PROBES_PER_STRATUM);
        let mut rng = StdRng::seed_from_u64(seed);
        let (mut value, mut var) = (0.0, 0.0);
        for prefix in &strata {
            let mut products = Vec::with_capacity(per);
            for _ in 0..per {
                products.push(self.descent_product(&mut s, prefix, &mut rng)?);
            }
            let n = products.len() as f64;
            let mean = products.iter().sum::<f64>() / n;
            value += mean;
            var += products.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0) / n;
        }
        Ok(Count::Estimate { value, std_error: var.sqrt(), probes: (per * strata.len()) as u32 })
    }

    /// The feasible prefixes of the deepest level at which there are at most `max` of them.
    fn strata(&self, s: &mut Search<'_, '_>, max: usize) -> Result<Vec<Vec<i64>>, Error> {
        let mut strata: Vec<Vec<i64>> = vec![Vec::new()];
        for depth in 0..self.len() {
            let mut next = Vec::new();
            for prefix in &strata {
                self.enter_prefix(s, prefix)?;
                let values = s.feasible_values(depth)?;
                s.leave(0);
                next.extend(values.into_iter().map(|v| prefix.iter().copied().chain([v]).collect::<Vec<_>>()));
                if next.len() > max {
                    return Ok(strata);
                }
            }
            strata = next;
        }
        Ok(strata)
    }

    fn enter_prefix(&self, s: &mut Search<'_, '_>, prefix: &[i64]) -> Result<(), Error> {
        for (i, &v) in prefix.iter().enumerate() {
            if !s.enter(i, v)? {
                return Err(Error::Solver(format!("value {v} of map {} was feasible, then not", self.labels[i])));
            }
        }
        Ok(())
    }

    /// One of Knuth's random descents below `prefix`: the product of the number of feasible
    /// codes at each level.
    fn descent_product(&self, s: &mut Search<'_, '_>, prefix: &[i64], rng: &mut StdRng) -> Result<f64, Error> {
        self.enter_prefix(s, prefix)?;
        let mut product = 1.0;
        for i in prefix.len()..self.len() {
            let feasible = s.feasible_values(i)?;
            if feasible.is_empty() {
                // Cannot happen (the search never enters a subtree without a mapping), but a
                // zero is the honest contribution of a dead end.
                product = 0.0;
                break;
            }
            product *= feasible.len() as f64;
            let v = feasible[rng.gen_range(0..feasible.len())];
            if !s.enter(i, v)? {
                return Err(Error::Solver(format!("value {v} of map {} was feasible, then not", self.labels[i])));
            }
        }
        s.leave(0);
        Ok(product)
    }

    /// `n` distinct valid mappings spread over the space: each is a random descent of the search
    /// tree (a uniformly random feasible code for each map in turn), so samples are independent
    /// of each other rather than neighbours of one solution. Fewer than `n` only when the space
    /// has fewer mappings, or when 20n + 100 descents found no new one ([`Space::sample_each`]
    /// says which).
    pub fn sample(&self, n: usize, seed: u64) -> Result<Vec<Mapping>, Error> {
        let mut out = Vec::new();
        self.sample_each(n, seed, |m| {
            out.push(m.clone());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Streams the samples of [`Space::sample`] to `f` as they are found, until `f` breaks.
    ///
    /// A space with at most `n` mappings (at most `options.count_limit`) is found out first by
    /// a bounded enumeration: sampling then stops as soon as every mapping has been produced
    /// (the descents first, then, in a seeded random order, those they missed), so its time
    /// does not grow with `n`. Samples never repeat.
    pub fn sample_each(
        &self,
        n: usize,
        seed: u64,
        mut f: impl FnMut(&Mapping) -> ControlFlow<()>,
    ) -> Result<Sampled, Error> {
        let mut all = self.all_if_at_most(n)?;
        let target = all.as_ref().map_or(n, |a| a.len().min(n));
        let ctx = Context::new(&Config::new());
        let Some(mut s) = Search::new(self, &ctx)? else {
            return Ok(Sampled { produced: 0, exhausted: true, descents: 0 });
        };
        let mut rng = StdRng::seed_from_u64(seed);
        let mut seen = HashSet::new();
        let mut attempts = 0;
        while seen.len() < target && attempts < 20 * target + 100 {
            attempts += 1;
            let m = self.descend(&mut s, &mut rng)?;
            if seen.insert(m.clone()) && f(&m).is_break() {
                return Ok(Sampled { produced: seen.len(), exhausted: false, descents: attempts });
            }
        }
        if all.is_none() && seen.len() < target {
            // The descents missed some mappings (they are not uniform): when the space is small
            // enough to enumerate, the rest come from the enumeration.
            all = self.all_if_at_most(usize::try_from(self.options.count_limit).unwrap_or(usize::MAX))?;
        }
        if let Some(mut rest) = all {
            let exhausted = rest.len() <= n;
            rest.retain(|m| !seen.contains(m));
            rest.shuffle(&mut rng);
            for m in rest.into_iter().take(target - seen.len().min(target)) {
                seen.insert(m.clone());
                if f(&m).is_break() {
                    return Ok(Sampled { produced: seen.len(), exhausted: false, descents: attempts });
                }
            }
            return Ok(Sampled { produced: seen.len(), exhausted, descents: attempts });
        }
        Ok(Sampled { produced: seen.len(), exhausted: false, descents: attempts })
    }

    /// Every valid mapping when there are at most `n` of them (and at most
    /// `options.count_limit`), found by a bounded enumeration; `None` when there are more.
    fn all_if_at_most(&self, n: usize) -> Result<Option<Vec<Mapping>>, Error> {
        let limit = (n as u64).min(self.options.count_limit);
        let mut all = Vec::new();
        let stats = self.enumerate(Some(limit.saturating_add(1)), |m| {
            all.push(m.clone());
            ControlFlow::Continue(())
        })?;
        Ok((stats.complete && stats.produced <= limit).then_some(all))
    }

    /// One random descent of the search tree: a uniformly random feasible code for each map.
    fn descend(&self, s: &mut Search<'_, '_>, rng: &mut StdRng) -> Result<Mapping, Error> {
        for i in 0..self.len() {
            let mut vals = self.domains[i].clone();
            vals.shuffle(rng);
            let mut chosen = false;
            for v in vals {
                if s.enter(i, v)? {
                    chosen = true;
                    break;
                }
            }
            if !chosen {
                return Err(Error::Solver(format!("no feasible code for map {} on a feasible path", self.labels[i])));
            }
        }
        let m = s.mapping();
        s.leave(0);
        Ok(m)
    }

    /// Parses `A=W0,B=L0,...`: every map that writes memory must be given exactly once.
    pub fn parse_mapping(&self, text: &str) -> Result<Mapping, Error> {
        let mut codes: Vec<Option<Code>> = vec![None; self.len()];
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (label, code) = part.split_once('=').ok_or_else(|| Error::MappingSyntax(part.to_string()))?;
            let (label, code) = (label.trim(), code.trim());
            let Some(i) = self.labels.iter().position(|l| l == label) else {
                if self.layout_maps.iter().any(|l| l == label) {
                    return Err(Error::LayoutMap(label.to_string()));
                }
                return Err(Error::UnknownMap { label: label.to_string(), known: self.labels.join(", ") });
            };
            let c =
                Code::parse(code).ok_or_else(|| Error::BadCode { label: label.to_string(), code: code.to_string() })?;
            if codes[i].replace(c).is_some() {
                return Err(Error::DuplicateMap(label.to_string()));
            }
        }
        let missing: Vec<String> =
            codes.iter().enumerate().filter(|(_, c)| c.is_none()).map(|(i, _)| self.labels[i].clone()).collect();
        if !missing.is_empty() {
            return Err(Error::MissingMaps(missing.join(", ")));
        }
        Ok(Mapping { codes: codes.into_iter().flatten().collect() })
    }

    /// Shows a mapping as `A=W0,B=L0,...`.
    pub fn show<'a>(&'a self, m: &'a Mapping) -> Labelled<'a> {
        Labelled(self, m)
    }

    /// Explains a mapping: valid, or every violated constraint (by evaluation, and Z3's unsat
    /// core over tracked assertions for the constraints on tuning parameters). A mapping that
    /// does not have one code per map is an error.
    pub fn explain(&self, m: &Mapping) -> Result<Explanation, Error> {
        self.check_codes(m)?;
        let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
        let no_ls: Vec<Option<i64>> = vec![None; self.local_size_count()];
        let env = Env::new(&codes, &self.parents, &no_ls);
        let mut violated: Vec<usize> =
            (0..self.constraints.len()).filter(|&k| env.eval(&self.constraints[k].expr) == Some(false)).collect();
        let barriers = self
            .barriers
            .iter()
            .filter(|b| env.eval(&b.needed) == Some(true))
            .map(|b| Barrier { writer: b.writer, readers: b.readers.clone() })
            .collect();
        let ctx = Context::new(&Config::new());
        let mut z = Z3Ctx::new(self, &ctx, true);
        // A code outside its domain has no literal: evaluation already reports it (family 0).
        let assumptions: Vec<Bool> = (0..self.len())
            .filter(|&i| self.domains[i].contains(&m.codes[i].to_int()))
            .map(|i| z.eq(i, m.codes[i].to_int()))
            .collect();
        z.checks += 1;
        let (core, local_sizes) = match z.solver.check_assumptions(&assumptions) {
            SatResult::Sat => {
                let ls: Vec<i64> = z.model()?.1.into_iter().flatten().collect();
                let lcl = m.codes.iter().any(|c| matches!(c, Code::Lcl(_)));
                let ls = match self.suggested_local_size(m)? {
                    Some(best) => best,
                    None if lcl => ls,
                    // Not the kernel's work group: code generation chooses a mapGlb kernel's.
                    None => Vec::new(),
                };
                (vec![], Some(ls).filter(|v| !v.is_empty()))
            }
            SatResult::Unsat => {
                let core: Vec<usize> =
                    z.solver.get_unsat_core().iter().filter_map(|b| z.tracked.get(b).copied()).collect();
                (core, None)
            }
            SatResult::Unknown => return Err(Error::Solver(z.solver.get_reason_unknown().unwrap_or_default())),
        };
        for &k in &core {
            if !violated.contains(&k) && self.constraints[k].expr.has_ls() {
                violated.push(k);
            }
        }
        let valid = violated.is_empty() && core.is_empty();
        if !valid && violated.is_empty() {
            violated = core.clone();
        }
        Ok(Explanation {
            valid,
            violated: violated.into_iter().map(|k| self.constraints[k].clone()).collect(),
            core,
            barriers,
            local_sizes,
        })
    }

    /// Draws `n` uniformly random assignments (each map any of the 12 codes) and returns how
    /// many are valid.
    pub fn random_baseline(&self, n: u64, seed: u64) -> Result<u64, Error> {
        let mut rng = StdRng::seed_from_u64(seed);
        let no_ls: Vec<Option<i64>> = vec![None; self.local_size_count()];
        let mut valid = 0;
        for _ in 0..n {
            let m = Mapping { codes: (0..self.len()).map(|_| Code::ALL[rng.gen_range(0..Code::ALL.len())]).collect() };
            let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
            let env = Env::new(&codes, &self.parents, &no_ls);
            let verdicts: Vec<Option<bool>> = self.constraints.iter().map(|c| env.eval(&c.expr)).collect();
            if verdicts.contains(&Some(false)) {
                continue;
            }
            if verdicts.contains(&None) {
                if self.explain(&m)?.valid {
                    valid += 1;
                }
            } else {
                valid += 1;
            }
        }
        Ok(valid)
    }

    /// Evaluates every constraint on a full assignment without Z3: the violated ones, and
    /// whether some constraint was left undecided (it involves tuning parameters). A mapping
    /// that does not have one code per map is an error.
    pub fn evaluate(&self, m: &Mapping) -> Result<(Vec<&Constraint>, bool), Error> {
        self.check_codes(m)?;
        let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
        let no_ls: Vec<Option<i64>> = vec![None; self.local_size_count()];
        let env = Env::new(&codes, &self.parents, &no_ls);
        let mut undecided = false;
        let mut violated = Vec::new();
        for c in &self.constraints {
            match env.eval(&c.expr) {
                Some(false) => violated.push(c),
                None => undecided = true,
                Some(true) => {}
            }
        }
        Ok((violated, undecided))
    }

    /// Is a full assignment valid? (Z3 on the codes; for tests and research code.) A mapping
    /// that does not have one code per map is an error.
    pub fn is_valid(&self, m: &Mapping) -> Result<bool, Error> {
        self.check_codes(m)?;
        let ctx = Context::new(&Config::new());
        let mut z = Z3Ctx::new(self, &ctx, false);
        for (i, c) in m.codes.iter().enumerate() {
            z.solver.assert(&z.eq(i, c.to_int()));
        }
        z.check()
    }
}

#[cfg(test)]
mod tests {
    use super::Count;

    /// An estimate beyond f64 (a chain of 1,200 maps) is said so, not printed `~inf ± NaN`.
    #[test]
    fn counts_beyond_f64_are_said_so() {
        let shown = |value: f64, std_error: f64| Count::Estimate { value, std_error, probes: 9 }.to_string();
        assert_eq!(shown(f64::INFINITY, f64::NAN), "more than 1e308 (estimate, 9 probes)");
        assert_eq!(shown(2e300, f64::INFINITY), "~2.000e300 (estimate, 9 probes; its error is beyond f64)");
        assert_eq!(shown(1500.0, 12.0), "~1.500e3 ± 1.2e1 (estimate, 9 probes)");
        assert_eq!(Count::Exact(42).to_string(), "42");
    }
}

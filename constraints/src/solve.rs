//! Using the space with Z3: enumerate, count, sample, explain, random baseline.
//!
//! Enumeration is a depth-first search over the map variables (outer maps first) on one
//! incremental Z3 solver: each prefix of the assignment is pushed, and Z3 is asked whether it
//! can still be completed, so the search never enters a subtree without solutions. Constraints
//! are also evaluated directly on the prefix (three-valued) to cut before calling Z3, and a full
//! assignment is accepted by evaluation when the space has no tuning parameters (evaluation and
//! Z3 agree on full assignments; the tests check it by brute force).

use crate::expr::{Env, Expr, Z3Vars};
use crate::space::{Constraint, Space};
use crate::{Code, Error};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::fmt;
use std::ops::ControlFlow;
use z3::ast::{Ast, Bool, Int};
use z3::{Config, Context, SatResult, Solver};

/// A mapping: one code per variable of a [`Space`] (same order as [`Space::labels`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// The codes.
    pub codes: Vec<Code>,
}

/// A mapping shown with its labels.
pub struct Labelled<'a>(pub &'a Space, pub &'a Mapping);

impl fmt::Display for Labelled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.1.codes.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{}={c}", self.0.labels[i])?;
        }
        Ok(())
    }
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
        /// Number of probes.
        probes: u32,
    },
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Count::Exact(n) => write!(f, "{n}"),
            Count::Estimate { value, probes } => write!(f, "~{value:.3e} (estimate, {probes} probes)"),
        }
    }
}

/// A barrier the mapping needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// Map writing the buffer.
    pub writer: String,
    /// Maps reading it.
    pub readers: Vec<String>,
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
    /// Local sizes Z3 chose, when the space has tuning parameters and the mapping is valid.
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
}

impl<'c> Z3Ctx<'c> {
    fn new(space: &Space, ctx: &'c Context, track: bool) -> Z3Ctx<'c> {
        let solver = Solver::new(ctx);
        if space.options.timeout_ms > 0 {
            let mut p = z3::Params::new(ctx);
            p.set_u32("timeout", space.options.timeout_ms.min(u32::MAX as u64) as u32);
            solver.set_params(&p);
        }
        let vars = Z3Vars::new(ctx, space.len(), &space.parents, space.n_ls);
        for (i, c) in space.constraints.iter().enumerate() {
            let e = vars.expr(ctx, &c.expr);
            if track {
                solver.assert_and_track(&e, &Bool::new_const(ctx, format!("k{i}")));
            } else {
                solver.assert(&e);
            }
        }
        Z3Ctx { solver, vars, ctx, checks: 0 }
    }

    fn eq(&self, i: usize, v: i64) -> Bool<'c> {
        self.vars.codes[i]._eq(&Int::from_i64(self.ctx, v))
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

/// Constraints grouped by the last variable they mention (evaluation order).
struct Index {
    by_last: Vec<Vec<usize>>,
}

fn last_var(e: &Expr) -> Option<usize> {
    use crate::expr::Term;
    fn t(x: &Term) -> Option<usize> {
        match x {
            Term::Code(i) | Term::Eff(i) => Some(*i),
            Term::Mul(ts) => ts.iter().filter_map(t).max(),
            _ => None,
        }
    }
    match e {
        Expr::Bool(_) => None,
        Expr::Eq(a, b) | Expr::Lt(a, b) => t(a).max(t(b)),
        Expr::In(a, _) => t(a),
        Expr::And(es) | Expr::Or(es) => es.iter().filter_map(last_var).max(),
        Expr::Not(e) => last_var(e),
    }
}

impl Index {
    fn new(space: &Space) -> Index {
        let mut by_last = vec![Vec::new(); space.len()];
        // Constraints without code variables are decided by Z3's first check.
        for (k, c) in space.constraints.iter().enumerate() {
            if let Some(i) = last_var(&c.expr) {
                by_last[i].push(k);
            }
        }
        Index { by_last }
    }
}

struct Dfs<'s, 'c> {
    space: &'s Space,
    z: Z3Ctx<'c>,
    idx: Index,
    assign: Vec<Option<i64>>,
    produced: u64,
    limit: u64,
}

impl Dfs<'_, '_> {
    /// Does the prefix (variables `0..=i` assigned) pass every constraint decided at `i`?
    fn locally_ok(&self, i: usize) -> bool {
        let no_ls: Vec<Option<i64>> = vec![None; self.space.n_ls];
        let env = Env { codes: &self.assign, parents: &self.space.parents, ls: &no_ls };
        self.idx.by_last[i].iter().all(|&k| env.eval(&self.space.constraints[k].expr) != Some(false))
    }

    fn run(&mut self, i: usize, f: &mut dyn FnMut(&Mapping) -> ControlFlow<()>) -> Result<ControlFlow<()>, Error> {
        let n = self.space.len();
        for v in self.space.domains[i].clone() {
            self.assign[i] = Some(v);
            if !self.locally_ok(i) {
                continue;
            }
            let last = i + 1 == n;
            let ok = if last && self.space.n_ls == 0 {
                true
            } else {
                self.z.solver.push();
                self.z.solver.assert(&self.z.eq(i, v));
                let sat = self.z.check()?;
                if !sat {
                    self.z.solver.pop(1);
                }
                sat
            };
            if !ok {
                continue;
            }
            let flow = if last {
                self.produced += 1;
                let m = Mapping {
                    codes: self.assign.iter().map(|c| c.and_then(Code::from_int).unwrap_or(Code::Seq)).collect(),
                };
                let mut fl = f(&m);
                if self.produced >= self.limit {
                    fl = ControlFlow::Break(());
                }
                fl
            } else {
                self.run(i + 1, f)?
            };
            if !(last && self.space.n_ls == 0) {
                self.z.solver.pop(1);
            }
            if flow.is_break() {
                self.assign[i] = None;
                return Ok(ControlFlow::Break(()));
            }
        }
        self.assign[i] = None;
        Ok(ControlFlow::Continue(()))
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
        let mut z = Z3Ctx::new(self, &ctx, false);
        if !z.check()? {
            return Ok(EnumStats { produced: 0, z3_checks: z.checks, complete: true });
        }
        let idx = Index::new(self);
        let mut dfs =
            Dfs { space: self, z, idx, assign: vec![None; self.len()], produced: 0, limit: limit.unwrap_or(u64::MAX) };
        let flow = dfs.run(0, &mut f)?;
        Ok(EnumStats { produced: dfs.produced, z3_checks: dfs.z.checks, complete: flow.is_continue() })
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

    /// Counts the valid mappings: exactly up to `options.count_limit`, else Knuth's estimate.
    pub fn count(&self, seed: u64) -> Result<Count, Error> {
        let limit = self.options.count_limit;
        let stats = self.enumerate(Some(limit.saturating_add(1)), |_| ControlFlow::Continue(()))?;
        if stats.complete && stats.produced <= limit {
            return Ok(Count::Exact(stats.produced));
        }
        let probes = self.options.probes.max(1);
        let ctx = Context::new(&Config::new());
        let mut z = Z3Ctx::new(self, &ctx, false);
        let mut idx = Index::new(self);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut total = 0.0;
        for _ in 0..probes {
            let mut dfs = Dfs { space: self, z, idx, assign: vec![None; self.len()], produced: 0, limit: 0 };
            let mut product = 1.0;
            let mut depth = 0;
            for i in 0..self.len() {
                let feasible = dfs.feasible_values(i)?;
                if feasible.is_empty() {
                    product = 0.0;
                    break;
                }
                product *= feasible.len() as f64;
                let v = feasible[rng.gen_range(0..feasible.len())];
                dfs.assign[i] = Some(v);
                dfs.z.solver.push();
                dfs.z.solver.assert(&dfs.z.eq(i, v));
                depth += 1;
            }
            dfs.z.solver.pop(depth);
            total += product;
            z = dfs.z;
            idx = dfs.idx;
        }
        Ok(Count::Estimate { value: total / probes as f64, probes })
    }

    /// `n` distinct valid mappings spread over the space: each is a random descent of the search
    /// tree (a uniformly random feasible code for each map in turn, Z3 checking feasibility), so
    /// samples are independent of each other rather than neighbours of one solution.
    pub fn sample(&self, n: usize, seed: u64) -> Result<Vec<Mapping>, Error> {
        let ctx = Context::new(&Config::new());
        let z = Z3Ctx::new(self, &ctx, false);
        let idx = Index::new(self);
        let mut dfs = Dfs { space: self, z, idx, assign: vec![None; self.len()], produced: 0, limit: 0 };
        if !dfs.z.check()? {
            return Ok(vec![]);
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut attempts = 0;
        while out.len() < n && attempts < 20 * n + 100 {
            attempts += 1;
            let mut depth = 0;
            let mut ok = true;
            for i in 0..self.len() {
                let mut vals = self.domains[i].clone();
                vals.shuffle(&mut rng);
                let mut chosen = None;
                for v in vals {
                    dfs.assign[i] = Some(v);
                    if !dfs.locally_ok(i) {
                        continue;
                    }
                    dfs.z.solver.push();
                    dfs.z.solver.assert(&dfs.z.eq(i, v));
                    if dfs.z.check()? {
                        chosen = Some(v);
                        depth += 1;
                        break;
                    }
                    dfs.z.solver.pop(1);
                }
                if chosen.is_none() {
                    ok = false;
                    break;
                }
            }
            dfs.z.solver.pop(depth);
            if ok {
                let m = Mapping {
                    codes: dfs.assign.iter().map(|c| c.and_then(Code::from_int).unwrap_or(Code::Seq)).collect(),
                };
                if seen.insert(m.clone()) {
                    out.push(m);
                }
            }
            dfs.assign.iter_mut().for_each(|a| *a = None);
        }
        Ok(out)
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
    /// core over tracked assertions for the constraints on tuning parameters).
    pub fn explain(&self, m: &Mapping) -> Result<Explanation, Error> {
        let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
        let no_ls: Vec<Option<i64>> = vec![None; self.n_ls];
        let env = Env { codes: &codes, parents: &self.parents, ls: &no_ls };
        let mut violated: Vec<usize> =
            (0..self.constraints.len()).filter(|&k| env.eval(&self.constraints[k].expr) == Some(false)).collect();
        let barriers = self
            .barriers
            .iter()
            .filter(|b| env.eval(&b.needed) == Some(true))
            .map(|b| Barrier { writer: b.writer.clone(), readers: b.readers.clone() })
            .collect();
        let ctx = Context::new(&Config::new());
        let mut z = Z3Ctx::new(self, &ctx, true);
        let assumptions: Vec<Bool> = (0..self.len()).map(|i| z.eq(i, m.codes[i].to_int())).collect();
        z.checks += 1;
        let (core, local_sizes) = match z.solver.check_assumptions(&assumptions) {
            SatResult::Sat => {
                let model = z.solver.get_model();
                let ls = model.map(|md| {
                    z.vars.ls.iter().map(|l| md.eval(l, true).and_then(|v| v.as_i64()).unwrap_or(1)).collect()
                });
                (vec![], ls.filter(|v: &Vec<i64>| !v.is_empty()))
            }
            SatResult::Unsat => {
                let core: Vec<usize> = z
                    .solver
                    .get_unsat_core()
                    .iter()
                    .filter_map(|b| b.to_string().strip_prefix('k').and_then(|s| s.parse().ok()))
                    .collect();
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
        let no_ls: Vec<Option<i64>> = vec![None; self.n_ls];
        let mut valid = 0;
        for _ in 0..n {
            let m = Mapping { codes: (0..self.len()).map(|_| Code::ALL[rng.gen_range(0..Code::ALL.len())]).collect() };
            let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
            let env = Env { codes: &codes, parents: &self.parents, ls: &no_ls };
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
    /// whether some constraint was left undecided (it involves tuning parameters).
    pub fn evaluate(&self, m: &Mapping) -> (Vec<&Constraint>, bool) {
        let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
        let no_ls: Vec<Option<i64>> = vec![None; self.n_ls];
        let env = Env { codes: &codes, parents: &self.parents, ls: &no_ls };
        let mut undecided = false;
        let mut violated = Vec::new();
        for c in &self.constraints {
            match env.eval(&c.expr) {
                Some(false) => violated.push(c),
                None => undecided = true,
                Some(true) => {}
            }
        }
        (violated, undecided)
    }

    /// Is a full assignment valid? (Z3 on the codes; for tests and research code.)
    pub fn is_valid(&self, m: &Mapping) -> Result<bool, Error> {
        let ctx = Context::new(&Config::new());
        let mut z = Z3Ctx::new(self, &ctx, false);
        for (i, c) in m.codes.iter().enumerate() {
            z.solver.assert(&z.eq(i, c.to_int()));
        }
        z.check()
    }
}

impl Dfs<'_, '_> {
    fn feasible_values(&mut self, i: usize) -> Result<Vec<i64>, Error> {
        let mut out = Vec::new();
        for v in self.space.domains[i].clone() {
            self.assign[i] = Some(v);
            if !self.locally_ok(i) {
                continue;
            }
            self.z.solver.push();
            self.z.solver.assert(&self.z.eq(i, v));
            if self.z.check()? {
                out.push(v);
            }
            self.z.solver.pop(1);
        }
        self.assign[i] = None;
        Ok(out)
    }
}

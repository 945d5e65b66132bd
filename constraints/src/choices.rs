//! Stage choices as variables of the space (issue #9): for each producer–consumer edge of a
//! program (a `let x = toM(e) in ...`), whether the producer is inlined (recomputed in its
//! consumer), staged in private or local memory, or materialized in global memory (a kernel
//! boundary): Halide's inline, compute_at and compute_root.
//!
//! A [`ChoiceSpace`] is built from *alternatives*: programs computing the same function, each
//! with its choice per edge and the [`Space`] of each of its kernels (a program runs all its
//! kernels, so a point of the space is an alternative with one mapping per kernel). Z3 reads
//! it in one solver:
//!
//! - one one-hot variable per edge over the choices offered for it (`stage(h) ∈ {inline,
//!   local, global}`), and one selector per alternative, true exactly when the edges take the
//!   alternative's choices; one selector holds, so the edges form one of the offered
//!   alternatives;
//! - each alternative's kernels encoded as their own spaces are ([`crate::encode`]), with
//!   names prefixed `a{alternative}k{kernel}.` and every constraint guarded by the selector;
//!   the variables of the alternatives not selected are pinned to one value, so that each
//!   (choice, mapping) is one model and counts add up exactly.
//!
//! Two alternatives with the same choices would make a choice name two programs: they are
//! refused ([`ChoiceSpace::new`]); the caller keeps one per choice.

use crate::encode::{self, Encoded};
use crate::expr::{case, one_hot, Cases};
use crate::solve::{Count, Explanation, Mapping};
use crate::space::Space;
use crate::Error;
use mapsat_ir::choice::Choice;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::HashSet;
use z3::ast::{Ast, Bool};
use z3::{Config, Context, SatResult, Solver};

/// One program of a [`ChoiceSpace`]: its choice for each edge and its kernels' spaces.
pub struct Alternative {
    /// The choice for each edge, in the order of [`ChoiceSpace::edges`].
    pub choices: Vec<Choice>,
    /// The space of each of its kernels, in launch order.
    pub kernels: Vec<Space>,
}

/// A point of a [`ChoiceSpace`]: an alternative (so a choice for every edge) and a mapping of
/// each of its kernels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Point {
    /// The alternative (index in [`ChoiceSpace::alternatives`]).
    pub alternative: usize,
    /// One mapping per kernel of the alternative.
    pub mappings: Vec<Mapping>,
}

/// The verdict on a point.
#[derive(Clone, Debug)]
pub struct ChoiceExplanation {
    /// The stage choice, `stage h = local, stage v = global` ([`ChoiceSpace::describe`]).
    pub stage: String,
    /// True when every kernel's mapping is valid under this choice (the one solver's verdict).
    pub valid: bool,
    /// Each kernel's explanation in its own space (the violated constraints by family).
    pub kernels: Vec<Explanation>,
}

/// The stage choices of a program's edges and the mappings under each (module documentation).
pub struct ChoiceSpace {
    edges: Vec<String>,
    alternatives: Vec<Alternative>,
    /// Most models the solver counts one by one ([`ChoiceSpace::count`]).
    count_limit: u64,
}

/// The one solver of a choice space.
struct Encoding<'c> {
    solver: Solver<'c>,
    /// Each edge's choice, by index in [`Choice::ALL`].
    edges: Vec<Cases<'c>>,
    /// Each alternative's selector.
    selectors: Vec<Bool<'c>>,
    /// Each alternative's kernels.
    kernels: Vec<Vec<Encoded<'c>>>,
}

/// The index of a choice in [`Choice::ALL`], its value in Z3.
fn value(c: Choice) -> i64 {
    Choice::ALL.iter().position(|&x| x == c).unwrap_or(0) as i64
}

impl ChoiceSpace {
    /// The space of `alternatives` over `edges` (the producers' names). Refused when an
    /// alternative does not give one choice per edge, when two give the same choices, or when
    /// there is none.
    pub fn new(edges: Vec<String>, alternatives: Vec<Alternative>) -> Result<ChoiceSpace, Error> {
        if alternatives.is_empty() {
            return Err(Error::Choice("no alternative to choose from".into()));
        }
        let mut seen = HashSet::new();
        for a in &alternatives {
            if a.choices.len() != edges.len() {
                return Err(Error::Choice(format!("{} choices for {} edges", a.choices.len(), edges.len())));
            }
            if !seen.insert(a.choices.clone()) {
                return Err(Error::Choice(format!("two alternatives choose {}", describe(&edges, &a.choices))));
            }
        }
        let count_limit = alternatives.iter().flat_map(|a| &a.kernels).map(|s| s.options().count_limit).max();
        Ok(ChoiceSpace { edges, alternatives, count_limit: count_limit.unwrap_or(100_000) })
    }

    /// The edges (the producers' `let` names).
    pub fn edges(&self) -> &[String] {
        &self.edges
    }

    /// The alternatives.
    pub fn alternatives(&self) -> &[Alternative] {
        &self.alternatives
    }

    /// The choices offered for edge `e`, in [`Choice::ALL`]'s order.
    pub fn domain(&self, e: usize) -> Vec<Choice> {
        Choice::ALL.into_iter().filter(|c| self.alternatives.iter().any(|a| a.choices[e] == *c)).collect()
    }

    /// Alternative `k`'s choice in words: `stage h = local, stage v = global`.
    pub fn describe(&self, k: usize) -> String {
        describe(&self.edges, &self.alternatives[k].choices)
    }

    /// The one alternative that makes the given choices (edges not given may take any choice).
    pub fn alternative_of(&self, given: &[(String, Choice)]) -> Result<usize, Error> {
        for (edge, _) in given {
            if !self.edges.contains(edge) {
                return Err(Error::Choice(match self.edges.is_empty() {
                    true => format!(
                        "no producer `{edge}`: the program has none (no `let {edge} = toM(..)`) whose stage to choose"
                    ),
                    false => format!("no producer `{edge}` (the producers are: {})", self.edges.join(", ")),
                }));
            }
        }
        let matches: Vec<usize> = (0..self.alternatives.len())
            .filter(|&k| {
                given.iter().all(|(edge, c)| {
                    self.edges.iter().position(|e| e == edge).is_some_and(|i| self.alternatives[k].choices[i] == *c)
                })
            })
            .collect();
        let asked = given.iter().map(|(e, c)| format!("stage {e} = {c}")).collect::<Vec<_>>().join(", ");
        match matches.as_slice() {
            [k] => Ok(*k),
            [] => Err(Error::Choice(format!("{asked} is not offered (offered: {})", self.offered()))),
            _ => Err(Error::Choice(format!("{asked} leaves several choices open (offered: {})", self.offered()))),
        }
    }

    /// Every offered choice, `stage h = inline | stage h = local`.
    fn offered(&self) -> String {
        (0..self.alternatives.len()).map(|k| self.describe(k)).collect::<Vec<_>>().join(" | ")
    }

    /// Alternative `k`'s mappings as `A=G0,B=S,...` (every kernel's maps; labels are unique
    /// across a program's kernels).
    pub fn show(&self, p: &Point) -> String {
        let kernels = &self.alternatives[p.alternative].kernels;
        let parts: Vec<String> = kernels.iter().zip(&p.mappings).map(|(s, m)| s.show(m).to_string()).collect();
        parts.join(",")
    }

    /// Parses `A=G0,B=S,...` as a mapping of each kernel of alternative `k`: each part goes to
    /// the kernel that has its map, and every map of every kernel must be given.
    pub fn parse_mapping(&self, k: usize, text: &str) -> Result<Vec<Mapping>, Error> {
        let kernels = &self.alternatives[k].kernels;
        let mut parts = vec![Vec::new(); kernels.len()];
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let label = part.split_once('=').map_or(part, |(l, _)| l).trim();
            let has = |s: &Space| s.labels().iter().chain(s.layout_maps()).any(|l| l == label);
            let Some(j) = kernels.iter().position(has) else {
                let known: Vec<&str> = kernels.iter().flat_map(|s| s.labels()).map(String::as_str).collect();
                return Err(Error::UnknownMap { label: label.to_string(), known: known.join(", ") });
            };
            parts[j].push(part);
        }
        kernels.iter().zip(parts).map(|(s, p)| s.parse_mapping(&p.join(","))).collect()
    }

    fn check_point(&self, p: &Point) -> Result<(), Error> {
        let Some(a) = self.alternatives.get(p.alternative) else {
            return Err(Error::Choice(format!("no alternative {}", p.alternative)));
        };
        if a.kernels.len() != p.mappings.len() {
            let n = p.mappings.len();
            return Err(Error::Choice(format!(
                "{n} mappings for the {} kernels of {}",
                a.kernels.len(),
                self.describe(p.alternative)
            )));
        }
        a.kernels.iter().zip(&p.mappings).try_for_each(|(s, m)| s.check_len(m.codes.len()))
    }

    /// Is the point valid? (The one solver, assuming its alternative's stage choices and its
    /// codes.)
    pub fn is_valid(&self, p: &Point) -> Result<bool, Error> {
        self.check_point(p)?;
        let ctx = Context::new(&Config::new());
        let z = self.encoding(&ctx);
        let assumptions = z.literals(&ctx, &self.alternatives[p.alternative].choices, p);
        z.check(&assumptions)
    }

    /// The verdict on a point: valid or not under its stage choice (the one solver), with each
    /// kernel's explanation in its own space (the violated constraints, by family).
    pub fn explain(&self, p: &Point) -> Result<ChoiceExplanation, Error> {
        let valid = self.is_valid(p)?;
        let kernels = &self.alternatives[p.alternative].kernels;
        let kernels = kernels.iter().zip(&p.mappings).map(|(s, m)| s.explain(m)).collect::<Result<_, _>>()?;
        Ok(ChoiceExplanation { stage: self.describe(p.alternative), valid, kernels })
    }
}

/// `stage h = local, stage v = global`.
fn describe(edges: &[String], choices: &[Choice]) -> String {
    if edges.is_empty() {
        return "no stage choice (the program has no producer)".into();
    }
    edges.iter().zip(choices).map(|(e, c)| format!("stage {e} = {c}")).collect::<Vec<_>>().join(", ")
}

/// `code(i) = v` in a kernel's encoding (false when `v` is not in the domain).
fn code<'c>(ctx: &'c Context, k: &Encoded<'c>, i: usize, v: i64) -> Bool<'c> {
    case(ctx, &k.vars.codes[i], v)
}

impl<'c> Encoding<'c> {
    fn check(&self, assumptions: &[Bool<'c>]) -> Result<bool, Error> {
        match self.solver.check_assumptions(assumptions) {
            SatResult::Sat => Ok(true),
            SatResult::Unsat => Ok(false),
            SatResult::Unknown => Err(Error::Solver(self.solver.get_reason_unknown().unwrap_or_default())),
        }
    }

    /// The point of the last model.
    fn point(&self) -> Result<Point, Error> {
        let model = self.solver.get_model().ok_or_else(|| Error::Solver("no model after sat".into()))?;
        let is_true = |b: &Bool<'c>| model.eval(b, true).and_then(|x| x.as_bool()) == Some(true);
        let alternative = self
            .selectors
            .iter()
            .position(is_true)
            .ok_or_else(|| Error::Solver("a model without an alternative".into()))?;
        let mut mappings = Vec::new();
        for k in &self.kernels[alternative] {
            let codes: Option<Vec<crate::Code>> = k
                .vars
                .codes
                .iter()
                .map(|cases| cases.iter().find(|(_, b)| is_true(b)).and_then(|(v, _)| crate::Code::from_int(*v)))
                .collect();
            let codes = codes.ok_or_else(|| Error::Solver("a model without a code for a map".into()))?;
            mappings.push(Mapping { codes });
        }
        Ok(Point { alternative, mappings })
    }

    /// `p`'s stage choices (`choices`, one per edge) and codes, as literals.
    fn literals(&self, ctx: &'c Context, choices: &[Choice], p: &Point) -> Vec<Bool<'c>> {
        let mut out: Vec<Bool<'c>> =
            choices.iter().zip(&self.edges).map(|(c, cases)| case(ctx, cases, value(*c))).collect();
        for (k, m) in self.kernels[p.alternative].iter().zip(&p.mappings) {
            out.extend(m.codes.iter().enumerate().map(|(i, c)| code(ctx, k, i, c.to_int())));
        }
        out
    }
}

impl ChoiceSpace {
    /// The one solver: edges, selectors and every alternative's kernels under its selector.
    fn encoding<'c>(&self, ctx: &'c Context) -> Encoding<'c> {
        let timeout = self.alternatives.iter().flat_map(|a| &a.kernels).map(|s| s.options().timeout_ms).max();
        let solver = encode::solver(ctx, timeout.unwrap_or(0));
        let mut domains = Vec::new();
        let edges: Vec<Cases<'c>> = (0..self.edges.len())
            .map(|e| {
                let values: Vec<i64> = self.domain(e).into_iter().map(value).collect();
                one_hot(ctx, &format!("stage({})", self.edges[e]), &values, &mut domains)
            })
            .collect();
        let indices: Vec<i64> = (0..self.alternatives.len() as i64).collect();
        let selectors: Vec<Bool<'c>> =
            one_hot(ctx, "alternative", &indices, &mut domains).into_iter().map(|(_, b)| b).collect();
        for d in &domains {
            solver.assert(d);
        }
        let mut kernels = Vec::new();
        for (k, a) in self.alternatives.iter().enumerate() {
            let chosen: Vec<Bool<'c>> =
                a.choices.iter().zip(&edges).map(|(c, cases)| case(ctx, cases, value(*c))).collect();
            let all = Bool::and(ctx, &chosen.iter().collect::<Vec<_>>());
            solver.assert(&selectors[k]._eq(&all));
            let spaces = a.kernels.iter().enumerate().map(|(j, s)| {
                let prefix = format!("a{k}k{j}.");
                encode::encode(
                    s,
                    ctx,
                    &solver,
                    &encode::How { prefix: &prefix, guard: Some(&selectors[k]), track: false },
                )
            });
            kernels.push(spaces.collect());
        }
        Encoding { solver, edges, selectors, kernels }
    }
}

impl ChoiceSpace {
    /// Counts the points of each alternative. Each alternative's count is first the product of
    /// its kernels' counts ([`Space::count`], an estimate where a kernel's is); when these are
    /// exact and at most the kernels' `count_limit` in all, the points are then counted one by
    /// one in the one solver ([`ChoiceSpace::count_models`]), and those counts are returned.
    /// The total is their sum ([`total`]).
    pub fn count(&self, seed: u64) -> Result<Vec<Count>, Error> {
        let products: Vec<Count> =
            (0..self.alternatives.len()).map(|k| self.count_product(k, seed)).collect::<Result<_, _>>()?;
        let small = matches!(total(&products), Count::Exact(n) if n <= self.count_limit);
        if small {
            if let Some(exact) = self.count_models(self.count_limit)? {
                return Ok(exact.into_iter().map(Count::Exact).collect());
            }
        }
        Ok(products)
    }

    /// The number of models of each alternative in the one solver, when there are at most
    /// `limit` in all (`None` otherwise).
    pub fn count_models(&self, limit: u64) -> Result<Option<Vec<u64>>, Error> {
        let ctx = Context::new(&Config::new());
        let z = self.encoding(&ctx);
        let mut counts = vec![0u64; self.alternatives.len()];
        let mut total = 0;
        while z.check(&[])? {
            if total == limit {
                return Ok(None);
            }
            let p = z.point()?;
            let literals = z.literals(&ctx, &self.alternatives[p.alternative].choices, &p);
            z.solver.assert(&Bool::and(&ctx, &literals.iter().collect::<Vec<_>>()).not());
            counts[p.alternative] += 1;
            total += 1;
        }
        Ok(Some(counts))
    }

    /// Alternative `k`'s count as the product of its kernels' counts.
    fn count_product(&self, k: usize, seed: u64) -> Result<Count, Error> {
        let (mut value, mut rel2, mut exact, mut probes) = (1.0f64, 0.0f64, true, 0u32);
        for s in &self.alternatives[k].kernels {
            match s.count(seed)? {
                Count::Exact(n) => value *= n as f64,
                Count::Estimate { value: v, std_error, probes: p } => {
                    exact = false;
                    value *= v;
                    rel2 += if v > 0.0 { (std_error / v).powi(2) } else { 0.0 };
                    probes += p;
                }
            }
        }
        Ok(match exact {
            true => Count::Exact(value as u64),
            false => Count::Estimate { value, std_error: value * rel2.sqrt(), probes },
        })
    }

    /// `n` distinct valid points, spread over the alternatives: they take turns, in a seeded
    /// random order, and each draw is a random descent in the one solver under the
    /// alternative's selector (a random feasible code for each map of each kernel in turn).
    /// When an alternative's descents stop finding new points (20 repeats in a row), the
    /// points not drawn yet are enumerated: fewer than `n` only when the space has fewer.
    pub fn sample(&self, n: usize, seed: u64) -> Result<Vec<Point>, Error> {
        let ctx = Context::new(&Config::new());
        let z = self.encoding(&ctx);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..self.alternatives.len()).collect();
        order.shuffle(&mut rng);
        let mut misses = vec![0; order.len()];
        let (mut out, mut seen) = (Vec::new(), HashSet::new());
        while out.len() < n && misses.iter().any(|&m| m < MISSES) {
            for &k in &order {
                if out.len() >= n || misses[k] >= MISSES {
                    continue;
                }
                match self.descend(&ctx, &z, k, &mut rng)? {
                    Some(p) if seen.insert(p.clone()) => {
                        misses[k] = 0;
                        out.push(p);
                    }
                    Some(_) => misses[k] += 1,
                    None => misses[k] = MISSES,
                }
            }
        }
        // Past the descents, the points none drew, one by one, each found blocked: fewer
        // than `n` points are then the whole space.
        let block = |p: &Point| {
            let literals = z.literals(&ctx, &self.alternatives[p.alternative].choices, p);
            z.solver.assert(&Bool::and(&ctx, &literals.iter().collect::<Vec<_>>()).not());
        };
        if out.len() < n {
            out.iter().for_each(block);
            while out.len() < n && z.check(&[])? {
                let p = z.point()?;
                block(&p);
                if seen.insert(p.clone()) {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }

    /// A random descent under alternative `k`'s selector (`None`: it has no valid point).
    fn descend<'c>(
        &self,
        ctx: &'c Context,
        z: &Encoding<'c>,
        k: usize,
        rng: &mut StdRng,
    ) -> Result<Option<Point>, Error> {
        let mut assumed = vec![z.selectors[k].clone()];
        if !z.check(&assumed)? {
            return Ok(None);
        }
        let mut mappings = Vec::new();
        for (j, s) in self.alternatives[k].kernels.iter().enumerate() {
            let mut codes = Vec::with_capacity(s.len());
            for i in 0..s.len() {
                let mut values: Vec<i64> = z.kernels[k][j].vars.codes[i].iter().map(|(v, _)| *v).collect();
                values.shuffle(rng);
                let mut chosen = None;
                for v in values {
                    assumed.push(code(ctx, &z.kernels[k][j], i, v));
                    if z.check(&assumed)? {
                        chosen = crate::Code::from_int(v);
                        break;
                    }
                    assumed.pop();
                }
                let c = chosen.ok_or_else(|| Error::Solver("no feasible code on a feasible path".into()))?;
                codes.push(c);
            }
            mappings.push(Mapping { codes });
        }
        Ok(Some(Point { alternative: k, mappings }))
    }
}

/// Repeats in a row after which sampling gives an alternative up.
const MISSES: usize = 20;

/// The sum of counts (an estimate when one of them is).
pub fn total(counts: &[Count]) -> Count {
    let (mut value, mut var, mut exact, mut probes) = (0.0f64, 0.0f64, 0u64, 0u32);
    let mut all_exact = true;
    for c in counts {
        match *c {
            Count::Exact(n) => {
                exact += n;
                value += n as f64;
            }
            Count::Estimate { value: v, std_error, probes: p } => {
                all_exact = false;
                value += v;
                var += std_error * std_error;
                probes += p;
            }
        }
    }
    match all_exact {
        true => Count::Exact(exact),
        false => Count::Estimate { value, std_error: var.sqrt(), probes },
    }
}

//! A space's constraints asserted into a Z3 solver: the one encoding that [`crate::Space`]'s
//! own search and explanations use, and that [`crate::ChoiceSpace`] uses once per alternative
//! in one solver.
//!
//! With a guard `g`, every constraint is asserted as `g => C`, and where `g` is false each
//! variable is pinned to the first value of its domain: a model then has one assignment of the
//! space's variables when `g` is false, so models of several guarded spaces in one solver are
//! counted exactly. The variables' names start with a prefix, distinct per space sharing a
//! context.

use crate::expr::{Cases, Z3Vars};
use crate::space::Space;
use std::collections::HashMap;
use z3::ast::Bool;
use z3::{Context, Solver};

/// A space encoded in a solver.
pub(crate) struct Encoded<'c> {
    /// Its variables.
    pub vars: Z3Vars<'c>,
    /// The constraint (index in [`Space::constraints`]) each tracking literal stands for, when
    /// the constraints are tracked (for unsat cores).
    pub tracked: HashMap<Bool<'c>, usize>,
}

/// How to encode a space.
pub(crate) struct How<'a, 'c> {
    /// Prefix of the Z3 names.
    pub prefix: &'a str,
    /// Assert the constraints under this condition (and pin the variables outside it).
    pub guard: Option<&'a Bool<'c>>,
    /// Track each constraint by a literal (for unsat cores).
    pub track: bool,
}

/// A solver for the encoding, with a timeout in milliseconds (0: none).
pub(crate) fn solver(ctx: &Context, timeout_ms: u64) -> Solver<'_> {
    // The encoding is propositional (`crate::expr`): Z3's incremental SAT solver (the
    // QF_FD logic) decides it, with push/pop and assumptions, several times faster than its
    // general SMT core.
    let solver = Solver::new_for_logic(ctx, "QF_FD").unwrap_or_else(|| Solver::new(ctx));
    let mut p = z3::Params::new(ctx);
    if timeout_ms > 0 {
        p.set_u32("timeout", timeout_ms.min(u32::MAX as u64) as u32);
    }
    // Smaller unsat cores make nogoods that cut more of the search.
    p.set_bool("core.minimize", true);
    solver.set_params(&p);
    solver
}

/// Asserts `space`'s constraints into `solver` as `how` says.
pub(crate) fn encode<'c>(space: &Space, ctx: &'c Context, solver: &Solver<'c>, how: &How<'_, 'c>) -> Encoded<'c> {
    let guarded = |e: &Bool<'c>| match how.guard {
        Some(g) => g.implies(e),
        None => e.clone(),
    };
    let vars = Z3Vars::new(ctx, how.prefix, &space.domains, &space.parents, &space.ls_domains);
    for d in &vars.domains {
        solver.assert(&guarded(d));
    }
    if let Some(g) = how.guard {
        pin(solver, &g.not(), vars.codes.iter().chain(&vars.ls));
    }
    let mut tracked = HashMap::new();
    // Without tracking (no unsat core over the instances is asked for), rules 3 and 6 are
    // given in linear size; `explain` gives each pair, so that its core names them.
    let linear = match how.track {
        true => crate::nesting::Linear { rules: Vec::new(), definitions: Vec::new(), assertions: Vec::new() },
        false => crate::nesting::linear(ctx, &vars, &space.constraints, space.len()),
    };
    for d in &linear.definitions {
        solver.assert(d);
    }
    for a in &linear.assertions {
        solver.assert(&guarded(a));
    }
    for (i, c) in space.constraints.iter().enumerate() {
        if c.pair.is_some_and(|(rule, ..)| linear.rules.contains(&rule)) {
            continue;
        }
        let e = guarded(&vars.expr(ctx, &c.expr));
        if how.track {
            let literal = Bool::new_const(ctx, format!("{}k{i}", how.prefix));
            solver.assert_and_track(&e, &literal);
            tracked.insert(literal, i);
        } else {
            solver.assert(&e);
        }
    }
    // Definitions only name a value: they hold whether or not the guard does.
    for d in vars.take_definitions() {
        solver.assert(&d);
    }
    Encoded { vars, tracked }
}

/// Under `when`, each one-hot variable takes the first value of its domain.
fn pin<'c, 'v>(solver: &Solver<'c>, when: &Bool<'c>, vars: impl Iterator<Item = &'v Cases<'c>>)
where
    'c: 'v,
{
    for cases in vars {
        for (k, (_, b)) in cases.iter().enumerate() {
            let fixed = if k == 0 { b.clone() } else { b.not() };
            solver.assert(&when.implies(&fixed));
        }
    }
}

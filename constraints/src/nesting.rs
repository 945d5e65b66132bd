//! Rules 3 and 6 in linear size, for Z3. Both are stated for every pair of an outer map and a
//! map nested in it (one instance per pair, which `explain` names): on a nest of depth `n`
//! that is `n(n-1)/2` instances of each. Z3 reads them instead through one prefix variable
//! per map and code, "some map around this one has code `v`", defined from the nearest outer
//! map's: `seen(v, j) = seen(v, p) or code(p) = v` with `p` the nearest map around `j`. Then
//! rule 3 is `code(j) = v => not seen(v, j)` for each parallel code `v`, and rule 6 is
//! `code(j) = mapWrg(d) => not seen(mapLcl(d), j)`: linear in the number of maps.
//!
//! The two readings are equivalent when the pairs are exactly the (ancestor, descendant) pairs
//! of a tree, which [`tree`] checks from the instances themselves; otherwise the pairs are
//! given to Z3 one by one, as generated.

use crate::expr::Z3Vars;
use crate::space::{Constraint, PairRule};
use crate::Code;
use z3::ast::{Ast, Bool};
use z3::Context;

/// The linear reading of the pair rules that have one: the rules it covers (their pair
/// instances need not be given to Z3) and what to assert instead.
pub(crate) struct Linear<'c> {
    /// The rules read linearly.
    pub rules: Vec<PairRule>,
    /// The definitions of their prefix variables (they only name a value).
    pub definitions: Vec<Bool<'c>>,
    /// Their constraints.
    pub assertions: Vec<Bool<'c>>,
}

/// The nearest outer map of each variable, when the pairs of `rule` are exactly the
/// (ancestor, descendant) pairs of the tree this defines; `None` otherwise.
fn tree(constraints: &[Constraint], rule: PairRule, n: usize) -> Option<Vec<Option<usize>>> {
    let mut outer: Vec<Vec<usize>> = vec![Vec::new(); n];
    for c in constraints {
        match c.pair {
            Some((r, o, i)) if r == rule && o < i && i < n => outer[i].push(o),
            Some((r, ..)) if r == rule => return None,
            _ => {}
        }
    }
    outer.iter_mut().for_each(|v| {
        v.sort_unstable();
        v.dedup();
    });
    let parent: Vec<Option<usize>> = outer.iter().map(|v| v.last().copied()).collect();
    for (i, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            let mut expected = outer[p].clone();
            expected.push(p);
            if expected != outer[i] {
                return None;
            }
        }
    }
    Some(parent)
}

/// `code(i) = v` (false when `v` is not in `i`'s domain).
fn is<'c>(ctx: &'c Context, vars: &Z3Vars<'c>, i: usize, v: i64) -> Bool<'c> {
    crate::expr::case(ctx, &vars.codes[i], v)
}

/// "Some map around each variable has code `v`", with the definitions that make it so.
fn seen<'c>(
    ctx: &'c Context,
    vars: &Z3Vars<'c>,
    parent: &[Option<usize>],
    v: i64,
    out: &mut Vec<Bool<'c>>,
) -> Vec<Bool<'c>> {
    let mut seen: Vec<Bool<'c>> = Vec::with_capacity(parent.len());
    for (j, p) in parent.iter().enumerate() {
        let s = match *p {
            Some(p) => {
                let s = Bool::new_const(ctx, format!("{}around{j}={v}", vars.prefix));
                out.push(s._eq(&Bool::or(ctx, &[&seen[p], &is(ctx, vars, p, v)])));
                s
            }
            None => Bool::from_bool(ctx, false),
        };
        seen.push(s);
    }
    seen
}

/// The linear reading of rules 3 and 6, for those whose pairs form a tree.
pub(crate) fn linear<'c>(ctx: &'c Context, vars: &Z3Vars<'c>, constraints: &[Constraint], n: usize) -> Linear<'c> {
    let mut out = Linear { rules: Vec::new(), definitions: Vec::new(), assertions: Vec::new() };
    if let Some(parent) = tree(constraints, PairRule::Duplicate, n) {
        let parallel = Code::ALL.iter().map(|c| c.to_int()).filter(|&v| v >= Code::Lcl(0).to_int());
        for v in parallel {
            let seen = seen(ctx, vars, &parent, v, &mut out.definitions);
            for (j, s) in seen.iter().enumerate().filter(|(j, _)| parent[*j].is_some()) {
                out.assertions.push(is(ctx, vars, j, v).implies(&s.not()));
            }
        }
        out.rules.push(PairRule::Duplicate);
    }
    if let Some(parent) = tree(constraints, PairRule::Hierarchy, n) {
        for d in 0..3u8 {
            let seen = seen(ctx, vars, &parent, Code::Lcl(d).to_int(), &mut out.definitions);
            for (j, s) in seen.iter().enumerate().filter(|(j, _)| parent[*j].is_some()) {
                out.assertions.push(is(ctx, vars, j, Code::Wrg(d).to_int()).implies(&s.not()));
            }
        }
        out.rules.push(PairRule::Hierarchy);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tree;
    use crate::expr::Expr;
    use crate::space::{Constraint, Family, MapId, PairRule};

    fn pairs(ps: &[(usize, usize)]) -> Vec<Constraint> {
        ps.iter()
            .map(|&(o, i)| Constraint {
                family: Family::Duplicate,
                maps: vec![MapId(o), MapId(i)],
                text: String::new(),
                expr: Expr::Bool(true),
                pair: Some((PairRule::Duplicate, o, i)),
                search_only: false,
            })
            .collect()
    }

    #[test]
    fn the_pairs_of_a_nesting_tree_give_its_parents() {
        // 0 around 1 around 2; 0 around 3.
        let t = tree(&pairs(&[(0, 1), (0, 2), (1, 2), (0, 3)]), PairRule::Duplicate, 4);
        assert_eq!(t, Some(vec![None, Some(0), Some(1), Some(0)]));
        assert_eq!(tree(&pairs(&[]), PairRule::Hierarchy, 2), Some(vec![None, None]));
    }

    #[test]
    fn pairs_that_are_not_a_nesting_tree_are_refused() {
        // 2 is under 1 but not under 1's outer map 0: no prefix variable says "around 2".
        assert_eq!(tree(&pairs(&[(0, 1), (1, 2)]), PairRule::Duplicate, 3), None);
        // An outer map after its inner one.
        assert_eq!(tree(&pairs(&[(2, 1)]), PairRule::Duplicate, 3), None);
    }
}

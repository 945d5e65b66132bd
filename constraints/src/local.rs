//! The local sizes (tuning parameters `ls0..ls2`) that are valid with a mapping, without Z3:
//! what a tuner searches besides the codes.

use crate::expr::Env;
use crate::{Constraint, Error, Mapping, Space};

/// Most local-size vectors [`Space::local_sizes`] returns.
pub const MAX_LOCAL_SIZES: usize = 4096;

/// Most work items [`Space::suggested_local_size`] proposes without a device profile (code
/// generation's default budget).
pub const DEFAULT_GROUP_BUDGET: i64 = 256;

impl Space {
    /// Every vector of local sizes that makes `m` valid, in increasing order (empty when the
    /// codes alone already violate a constraint). A space without tuning parameters has one
    /// answer, `[]`: the local size is code generation's choice. At most [`MAX_LOCAL_SIZES`]
    /// vectors are returned.
    pub fn local_sizes(&self, m: &Mapping) -> Result<Vec<Vec<i64>>, Error> {
        self.check_codes(m)?;
        let codes: Vec<Option<i64>> = m.codes.iter().map(|c| Some(c.to_int())).collect();
        let unset: Vec<Option<i64>> = vec![None; self.local_size_count()];
        let env = Env::new(&codes, &self.parents, &unset);
        // Constraints on the codes alone first: they rule out every local size at once.
        let (with_ls, without): (Vec<_>, Vec<_>) = self.constraints.iter().partition(|c| c.expr.has_ls());
        if without.iter().any(|c| env.eval(&c.expr) == Some(false)) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut ls = vec![1i64; self.local_size_count()];
        self.local_sizes_from(0, &mut ls, &codes, &with_ls, &mut out);
        Ok(out)
    }

    /// The constraints on the local sizes that a work-group size `ls` given by hand breaks with
    /// `m` (none: it is valid): all but the candidate values, which only keep the search small
    /// (3 threads for loops of 10 and 8 run as well as 2 or 4; [`crate::Constraint`]'s
    /// `search_only`), and, for a mapping `written` by hand, but the space's preferences
    /// ([`crate::Family::is_preference`]).
    pub fn local_size_violations(&self, m: &Mapping, ls: &[i64], written: bool) -> Result<Vec<&Constraint>, Error> {
        let (codes, values) = self.assignment(m, ls)?;
        let env = Env::new(&codes, &self.parents, &values);
        Ok(self
            .constraints
            .iter()
            .filter(|c| c.expr.has_ls() && !c.search_only && !(written && c.family.is_preference()))
            .filter(|c| env.eval(&c.expr) != Some(true))
            .collect())
    }

    /// The valid local sizes of `m` whose `mapLcl` loops run in the fewest rounds (the sum over
    /// the loops of `ceil(length / ls{d})`), with at most the profile's `max_work_group_size`
    /// work items or [`DEFAULT_GROUP_BUDGET`] without a profile, and in each dimension at most
    /// the longest `mapLcl` loop of that dimension (else the smallest valid one). Of as many
    /// rounds: the one dividing the most loops (no idle threads in a last round), then the one
    /// with the most work items, then the largest in dimension 0, then 1. A tile copied with
    /// its halo (10 iterations) and computed (8) gets 10; 100 iterations under CUDA's 64
    /// threads in z get 50 (two rounds, as 64 would take). `None` when there is none (or the
    /// space has no tuning parameters, or the mapping no `mapLcl` map).
    /// This is what `explain` and `emit --mapping` propose when no local size is given, instead
    /// of the smallest valid one.
    pub fn suggested_local_size(&self, m: &Mapping) -> Result<Option<Vec<i64>>, Error> {
        // Without a mapLcl map the local sizes are not the kernel's work group: code
        // generation chooses that one (a mapGlb kernel's).
        if self.local_size_count() == 0 || !m.codes.iter().any(|c| matches!(c, crate::Code::Lcl(_))) {
            return Ok(None);
        }
        let budget = self.options().profile.as_ref().map_or(DEFAULT_GROUP_BUDGET, |p| p.max_work_group_size as i64);
        // The lengths of the mapLcl loops of each dimension.
        let mut lengths = vec![Vec::new(); self.local_size_count()];
        for (i, c) in m.codes.iter().enumerate() {
            if let (crate::Code::Lcl(d), Some(n)) = (c, self.analysis.maps[self.vars[i]].extent) {
                if let Some(l) = lengths.get_mut(*d as usize) {
                    l.push(n);
                }
            }
        }
        // No more threads in a dimension than its longest mapLcl loop has iterations.
        let fits = |l: &Vec<i64>| l.iter().zip(&lengths).all(|(x, ns)| *x <= ns.iter().copied().max().unwrap_or(1));
        let over_loops = |l: &Vec<i64>, f: &dyn Fn(i64, i64) -> i64| -> i64 {
            l.iter().zip(&lengths).map(|(x, ns)| ns.iter().map(|n| f(*n, *x)).sum::<i64>()).sum()
        };
        let rounds = |l: &Vec<i64>| over_loops(l, &|n, x| (n + x - 1) / x);
        let divided = |l: &Vec<i64>| over_loops(l, &|n, x| i64::from(n % x == 0));
        let items = |l: &Vec<i64>| l.iter().try_fold(1i64, |a, &x| a.checked_mul(x)).unwrap_or(i64::MAX);
        let all = self.local_sizes(m)?;
        let best = all
            .iter()
            .filter(|l| items(l) <= budget && fits(l))
            .min_by_key(|l| (rounds(l), -divided(l), -items(l), std::cmp::Reverse(l.to_vec())))
            .or_else(|| all.first());
        Ok(best.cloned())
    }

    /// Is `m` valid with the local sizes `ls` (as many as [`Space::local_size_count`])? Every
    /// constraint is evaluated once: the check [`Space::local_sizes`] makes for each vector.
    pub fn valid_with_local_sizes(&self, m: &Mapping, ls: &[i64]) -> Result<bool, Error> {
        let (codes, values) = self.assignment(m, ls)?;
        let env = Env::new(&codes, &self.parents, &values);
        Ok(self.constraints.iter().all(|c| env.eval(&c.expr) == Some(true)))
    }

    /// The codes of `m` and the local sizes `ls` as the values of the space's variables
    /// (refused unless `ls` has one value per local size).
    #[allow(clippy::type_complexity)]
    fn assignment(&self, m: &Mapping, ls: &[i64]) -> Result<(Vec<Option<i64>>, Vec<Option<i64>>), Error> {
        self.check_codes(m)?;
        if ls.len() != self.local_size_count() {
            return Err(Error::Apply(format!("{} local sizes for a space with {}", ls.len(), self.local_size_count())));
        }
        let codes = m.codes.iter().map(|c| Some(c.to_int())).collect();
        Ok((codes, ls.iter().map(|v| Some(*v)).collect()))
    }

    fn local_sizes_from(
        &self,
        d: usize,
        ls: &mut Vec<i64>,
        codes: &[Option<i64>],
        with_ls: &[&crate::Constraint],
        out: &mut Vec<Vec<i64>>,
    ) {
        if out.len() >= MAX_LOCAL_SIZES {
            return;
        }
        if d == ls.len() {
            let values: Vec<Option<i64>> = ls.iter().map(|v| Some(*v)).collect();
            let env = Env::new(codes, &self.parents, &values);
            if with_ls.iter().all(|c| env.eval(&c.expr) == Some(true)) {
                out.push(ls.clone());
            }
            return;
        }
        for &v in &self.ls_domains[d] {
            ls[d] = v;
            self.local_sizes_from(d + 1, ls, codes, with_ls, out);
        }
        ls[d] = 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::{Options, Space};

    #[test]
    fn local_sizes_divide_the_local_maps() {
        // A mapLcl(0) of length 16 inside a mapWrg(0): ls0 divides 16, ls1 = ls2 = 1.
        let p =
            mapsat_ir::parse("size N = 64\ndef f(xs: [f32]N) = join(map@A(map@B(fun(x => x * 2.0)), split(16, xs)))")
                .unwrap();
        let profile = mapsat_ir::profile::Profile::builtin("pocl-cpu");
        let space = Space::generate(&p, Options { profile, ..Options::default() }).unwrap();
        let m = space.parse_mapping("A=W0,B=L0").unwrap();
        let all = space.local_sizes(&m).unwrap();
        let firsts: Vec<i64> = all.iter().map(|l| l[0]).collect();
        assert_eq!(firsts, vec![1, 2, 4, 8, 16]);
        assert!(all.iter().all(|l| l[1] == 1 && l[2] == 1));
        // Every answer is valid by Z3 too, and by the one-vector check.
        assert!(space.explain(&m).unwrap().valid);
        assert!(all.iter().all(|l| space.valid_with_local_sizes(&m, l).unwrap()));
        assert!(!space.valid_with_local_sizes(&m, &[3, 1, 1]).unwrap());
        assert!(space.valid_with_local_sizes(&m, &[1, 1]).is_err());
        // A mapping that is invalid whatever the local size has none.
        let bad = space.parse_mapping("A=L0,B=W0").unwrap();
        assert!(space.local_sizes(&bad).unwrap().is_empty());
        // The proposal is the valid size with the most work items within 256, not [1, ...].
        let best = space.suggested_local_size(&m).unwrap().unwrap();
        assert_eq!(best, vec![16, 1, 1]);
        assert_eq!(space.explain(&m).unwrap().local_sizes, Some(best));
    }
}

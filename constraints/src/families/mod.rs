//! Constraint generation: one function per family (or per rule of a family), grouped by topic.
//!
//! Each rule is stated over the map variables of a [`Gen`] (indices `0..n`, outer maps before
//! inner ones) with the shorthands of [`Expr`] that name the levels of the code encoding
//! (`within_thread`, `local`, `work_group`, `global`, ...). A comment above each rule says why
//! it is there: what would go wrong in the generated kernel without it, or, for the rules that
//! only prune redundant mappings, that they do nothing else.
//!
//! - [`domain`]: family 0, the codes a map may take at all.
//! - [`memory`]: families 1 and 2, private and local memory scoping.
//! - [`indexing`]: families 3–7, how maps share out the thread indices.
//! - [`launch`]: family 12, one launch shape per kernel.
//! - [`sequential`]: families 8 and 9, sequential fusion and vectorization.
//! - [`sync`]: family 10, synchronizability (barriers).
//! - [`device`]: family 11, device limits and the local-size tuning parameters.
//! - [`canonical`]: family 13, symmetry breaking (only with `Options::symmetry_breaking`).

mod canonical;
mod device;
mod domain;
mod indexing;
mod launch;
mod memory;
mod sequential;
mod sync;

use crate::analysis::{Analysis, MapIdx, MapInfo};
use crate::expr::Expr;
use crate::space::{BarrierSite, Constraint, Family, MapId, Options, PairRule};

/// What generation produces besides the analysis.
pub(crate) struct Generated {
    /// Every constraint instance.
    pub constraints: Vec<Constraint>,
    /// The codes each variable may take.
    pub domains: Vec<Vec<i64>>,
    /// Where barriers may be needed.
    pub barriers: Vec<BarrierSite>,
    /// Candidate values of each local-size tuning parameter (none when none is needed).
    pub ls_domains: Vec<Vec<i64>>,
}

/// Generates every family, in the order of [`Family::ALL`] except that rules 4 and 5 alternate
/// chain by chain and the launch shape (12) comes after rule 7. The order is the order of the assertions given to Z3, which decides
/// the models it finds and so the order of the enumeration: changing it changes which
/// mappings come first (not which are valid).
pub(crate) fn generate(g: &Gen) -> Generated {
    let mut out = Out::default();
    let out = &mut out;
    let domains = domain::domains(g, out);
    memory::private_scope(g, out);
    memory::local_scope(g, out);
    indexing::duplicate(g, out);
    indexing::global_apart_from_groups(g, out);
    indexing::local_and_group_dims(g, out);
    indexing::local_hierarchy(g, out);
    indexing::exhaustive(g, out);
    launch::one_launch(g, out);
    if g.options.fusion {
        sequential::seq_fusion(g, out);
    }
    sequential::vectorization(g, out);
    let sync = sync::synchronizability(g, out);
    let ls_domains = device::device_limits(g, out, sync.needs_local_sizes);
    if g.options.symmetry_breaking {
        canonical::dimension_order(g, out);
    }
    Generated { constraints: std::mem::take(&mut out.0), domains, barriers: sync.barriers, ls_domains }
}

/// The generator's context: the analysis and the map variables.
pub(crate) struct Gen<'a> {
    /// The program analysis.
    a: &'a Analysis,
    /// The options.
    options: &'a Options,
    /// The analysis index of each variable's map.
    vars: &'a [MapIdx],
    /// Label of each variable.
    labels: &'a [String],
    /// Parent variable of each variable.
    parents: &'a [Option<usize>],
    /// The map nesting chains, as variables.
    chains: Vec<Vec<usize>>,
}

impl<'a> Gen<'a> {
    /// A generator for the variables `vars` (concrete maps of `a`, outer before inner).
    pub(crate) fn new(
        a: &'a Analysis,
        options: &'a Options,
        vars: &'a [MapIdx],
        labels: &'a [String],
        parents: &'a [Option<usize>],
    ) -> Gen<'a> {
        let mut g = Gen { a, options, vars, labels, parents, chains: Vec::new() };
        g.chains = a.chains().into_iter().map(|c| g.as_vars(&c)).collect();
        g
    }

    /// The largest local size any dimension can take: the profile's largest work-item size,
    /// or 1,024 without a profile (`device.rs`'s local-size candidates).
    fn max_local(&self) -> i64 {
        let max_item = self.options.profile.as_ref().map_or([1024; 3], |p| p.max_work_item_sizes);
        max_item.iter().copied().max().unwrap_or(1024) as i64
    }

    /// The divisors of `n` a local size can take (at most [`Gen::max_local`]), increasing.
    fn local_divisors(&self, n: i64) -> Vec<i64> {
        divisors_up_to(n, self.max_local())
    }

    /// The variable of an analysed map, if it has one (it writes memory).
    fn var_of(&self, m: MapIdx) -> Option<usize> {
        self.vars.iter().position(|&v| v == m)
    }

    /// The variables among analysed maps, in their order.
    fn as_vars(&self, maps: &[MapIdx]) -> Vec<usize> {
        maps.iter().filter_map(|&m| self.var_of(m)).collect()
    }

    /// Every variable with its analysed map.
    fn vars(&self) -> impl Iterator<Item = (usize, MapIdx)> + 'a {
        self.vars.iter().copied().enumerate()
    }

    /// Number of variables.
    fn len(&self) -> usize {
        self.vars.len()
    }

    /// What the analysis knows about variable `i`'s map.
    fn info(&self, i: usize) -> &'a MapInfo {
        &self.a.maps[self.vars[i]]
    }

    /// The variables nested (directly or not) in variable `i` (`NestedMaps`).
    fn nested(&self, i: usize) -> Vec<usize> {
        self.as_vars(&self.a.nested_maps(self.vars[i]))
    }

    /// The variables around variable `i`, outermost first (`OuterMaps`).
    fn outer(&self, i: usize) -> Vec<usize> {
        self.as_vars(&self.a.outer_maps(self.vars[i]))
    }

    /// The variables whose loops were running when the analysed map `m` ran, outermost first.
    fn context(&self, m: MapIdx) -> Vec<usize> {
        self.as_vars(&self.a.maps[m].context)
    }

    /// Label of variable `i`.
    fn label(&self, i: usize) -> &'a str {
        &self.labels[i]
    }

    /// `A, B, C`.
    fn names(&self, vars: &[usize]) -> String {
        vars.iter().map(|&i| self.label(i)).collect::<Vec<_>>().join(", ")
    }

    /// `(A, B, C)`.
    fn chain_name(&self, chain: &[usize]) -> String {
        format!("({})", self.names(chain))
    }
}

/// The constraints generated so far.
#[derive(Default)]
struct Out(Vec<Constraint>);

impl Out {
    /// Adds a constraint on the variables `maps` (listed once each, in order).
    fn push(&mut self, family: Family, maps: &[usize], text: String, expr: Expr) {
        let mut ids: Vec<MapId> = Vec::new();
        for &i in maps {
            if !ids.contains(&MapId(i)) {
                ids.push(MapId(i));
            }
        }
        self.0.push(Constraint { family, maps: ids, text, expr, pair: None, search_only: false });
    }

    /// Adds a restriction of the search that is not one of validity ([`Constraint::search_only`]).
    fn push_search_only(&mut self, family: Family, text: String, expr: Expr) {
        self.push(family, &[], text, expr);
        if let Some(c) = self.0.last_mut() {
            c.search_only = true;
        }
    }

    /// Adds a constraint of a rule stated for the pair of nested maps `outer`, `inner`.
    fn push_pair(&mut self, rule: PairRule, family: Family, (outer, inner): (usize, usize), text: String, expr: Expr) {
        self.push(family, &[outer, inner], text, expr);
        if let Some(c) = self.0.last_mut() {
            c.pair = Some((rule, outer, inner));
        }
    }
}

/// The divisors of `n` up to `cap`, increasing: local sizes never exceed a device's work-item
/// limit, and trying every number up to a length of 2^40 would not end.
fn divisors_up_to(n: i64, cap: i64) -> Vec<i64> {
    (1..=n.min(cap)).filter(|d| n % d == 0).collect()
}

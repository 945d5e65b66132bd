//! Constraint generation: the paper's rules (1)–(8) and mapsat's families 9–11, each instance
//! tagged with its family and the maps it involves.

use crate::analysis::{Analysis, MapIdx, Reader, Writer};
use crate::expr::{Expr, Term};
use crate::{Code, Error};
use mapsat_ir::ast::AddressSpace;
use mapsat_ir::profile::Profile;
use mapsat_ir::{Program, Sizes};
use std::fmt;

/// A family of constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// 0: the codes a map may take at all (fusion only when perfectly nested).
    Domain,
    /// 1: maps touching private memory are not parallel (rule 1).
    PrivateScope,
    /// 2: maps touching local memory are local or sequential, under work groups (rule 2), or
    /// (mapsat) run within one work item of a `mapGlb` around the buffer.
    LocalScope,
    /// 3: nested maps are not parallel in the same domain and dimension (rule 3).
    Duplicate,
    /// 4: a local dimension used in a chain is also a work-group dimension of it (rule 4).
    LocalDims,
    /// 5: a work-group dimension used in a chain is also a local dimension of it (rule 5).
    WrgDims,
    /// 6: no `mapWrg(d)` nested in a `mapLcl(d)` (rule 6).
    LocalHierarchy,
    /// 7: every chain uses the same dimensions of each domain (rule 7; stated against the
    /// first chain, which is equivalent to the paper's pairwise form).
    Exhaustive,
    /// 8: perfectly nested maps are not both sequential (rule 8, a heuristic; optional).
    SeqFusion,
    /// 9: vectorization only of innermost maps with contiguous accesses.
    Vectorization,
    /// 10: synchronizability (barriers).
    Sync,
    /// 11: device limits.
    DeviceLimits,
    /// 12: one launch shape for the whole program (mapsat's code generator emits one kernel):
    /// no `mapGlb` together with `mapWrg`/`mapLcl`, work-group and global maps outermost, and no
    /// `mapLcl` under a sequential map that is itself under or over a `mapLcl`.
    Launch,
}

impl Family {
    /// Every family, in order.
    pub const ALL: [Family; 13] = [
        Family::Domain,
        Family::PrivateScope,
        Family::LocalScope,
        Family::Duplicate,
        Family::LocalDims,
        Family::WrgDims,
        Family::LocalHierarchy,
        Family::Exhaustive,
        Family::SeqFusion,
        Family::Vectorization,
        Family::Sync,
        Family::DeviceLimits,
        Family::Launch,
    ];

    /// The family's number (0 for the domain).
    pub fn number(self) -> u32 {
        Family::ALL.iter().position(|f| *f == self).unwrap_or(0) as u32
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Domain => "domain",
            Family::PrivateScope => "private memory scoping",
            Family::LocalScope => "local memory scoping",
            Family::Duplicate => "duplicate scheduling",
            Family::LocalDims => "local thread indexing dimensionality (local => work group)",
            Family::WrgDims => "local thread indexing dimensionality (work group => local)",
            Family::LocalHierarchy => "local indexing hierarchy",
            Family::Exhaustive => "exhaustive thread indexing",
            Family::SeqFusion => "sequential map fusion",
            Family::Vectorization => "vectorization",
            Family::Sync => "synchronizability",
            Family::DeviceLimits => "device limits",
            Family::Launch => "single launch shape",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.number(), self.name())
    }
}

/// One constraint instance.
#[derive(Clone, Debug)]
pub struct Constraint {
    /// Its family.
    pub family: Family,
    /// Labels of the maps it involves.
    pub maps: Vec<String>,
    /// What it requires, in words.
    pub text: String,
    /// The predicate.
    pub expr: Expr,
}

/// A place where a barrier may be needed: a buffer written by one map nest and read by others.
#[derive(Clone, Debug)]
pub struct BarrierSite {
    /// Label of the map writing the buffer (outermost).
    pub writer: String,
    /// Labels of the maps reading it.
    pub readers: Vec<String>,
    /// The buffer's address space.
    pub space: AddressSpace,
    /// True when threads read elements other threads wrote: a barrier is needed.
    pub needed: Expr,
}

/// Generation options. Budgets are explicit, with defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// Rule 8 (sequential map fusion heuristic); on by default as in the paper.
    pub fusion: bool,
    /// The target device, for family 11 (none: no device limits).
    pub profile: Option<Profile>,
    /// Largest number of mappings counted exactly before estimating.
    pub count_limit: u64,
    /// Z3 timeout per check, in milliseconds (0: none).
    pub timeout_ms: u64,
    /// Random descents of the search tree for Knuth's estimate, when the count is not exact.
    pub probes: u32,
    /// The sizes the constraints are evaluated at (lengths, strides, memory footprints, local
    /// size candidates); the program's defaults fill the sizes not given.
    pub sizes: Sizes,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fusion: true,
            profile: None,
            count_limit: 10_000,
            timeout_ms: 10_000,
            probes: 50,
            sizes: Sizes::new(),
        }
    }
}

/// The parallel-mapping space of a program: one variable per map that writes memory, and the
/// constraints on them.
#[derive(Clone, Debug)]
pub struct Space {
    /// The program analysis.
    pub analysis: Analysis,
    /// The analysis index of each variable's map (concrete maps, outer before inner).
    pub vars: Vec<MapIdx>,
    /// Label of each variable.
    pub labels: Vec<String>,
    /// Labels of the layout maps (views: no loop, not mapped).
    pub layout_maps: Vec<String>,
    /// Parent variable of each variable.
    pub parents: Vec<Option<usize>>,
    /// Codes each variable may take (the domain, also stated as family-0 constraints).
    pub domains: Vec<Vec<i64>>,
    /// Number of tuning parameters (local sizes `ls0..`), 0 when none is needed.
    pub n_ls: usize,
    /// Candidate values of each tuning parameter.
    pub ls_domains: Vec<Vec<i64>>,
    /// Every constraint instance.
    pub constraints: Vec<Constraint>,
    /// Where barriers may be needed.
    pub barriers: Vec<BarrierSite>,
    /// The options used.
    pub options: Options,
}

fn divisors(n: i64) -> Vec<i64> {
    (1..=n).filter(|d| n % d == 0).collect()
}

impl Space {
    /// Generates the space of a program (which should have passed the type checker).
    pub fn generate(p: &Program, options: Options) -> Result<Space, Error> {
        let analysis = Analysis::at(p, &options.sizes);
        let vars = analysis.concrete_maps();
        if vars.is_empty() {
            return Err(Error::NoMaps);
        }
        let var_of = |m: MapIdx| vars.iter().position(|&v| v == m);
        let labels: Vec<String> = vars.iter().map(|&m| analysis.maps[m].label.clone()).collect();
        let layout_maps =
            analysis.maps.iter().filter(|m| !m.concrete && !m.label.is_empty()).map(|m| m.label.clone()).collect();
        let parents: Vec<Option<usize>> = vars.iter().map(|&m| analysis.maps[m].parent.and_then(var_of)).collect();
        let mut g = Gen { a: &analysis, vars: &vars, labels: &labels, out: Vec::new() };

        // Domains.
        let mut domains = Vec::new();
        for (i, &m) in vars.iter().enumerate() {
            let info = &analysis.maps[m];
            let mut dom: Vec<i64> = Code::ALL.iter().map(|c| c.to_int()).collect();
            if !(info.perfectly_nested && parents[i].is_some()) {
                dom.retain(|&c| c != 1);
                let why = if parents[i].is_none() {
                    "it has no outer map"
                } else {
                    "it is not perfectly nested in its outer map"
                };
                g.push(
                    Family::Domain,
                    &[i],
                    format!("map {} cannot be fused (F): {why}", labels[i]),
                    Expr::negate(Expr::code_is(i, 1)),
                );
            }
            domains.push(dom);
        }
        let chains: Vec<Vec<usize>> =
            analysis.chains().into_iter().map(|c| c.into_iter().filter_map(var_of).collect()).collect();
        let used =
            |chain: &[usize], base: i64, d: i64| Expr::Or(chain.iter().map(|&i| Expr::code_is(i, base + d)).collect());

        // (1) Private memory scoping.
        for (i, &m) in vars.iter().enumerate() {
            if analysis.uses_space(m, AddressSpace::Private) {
                g.push(
                    Family::PrivateScope,
                    &[i],
                    format!("map {} accesses private memory: it must run within one thread (S, F or V)", labels[i]),
                    Expr::Lt(Term::Code(i), Term::Const(10)),
                );
            }
        }
        // (2) Local memory scoping.
        for (i, &m) in vars.iter().enumerate() {
            if !analysis.uses_space(m, AddressSpace::Local) {
                continue;
            }
            for chain in chains.iter().filter(|c| c.contains(&i)) {
                let pos = chain.iter().position(|&x| x == i).unwrap_or(0);
                let outer = &chain[..pos];
                let mut parts = vec![
                    Expr::Lt(Term::Code(i), Term::Const(20)),
                    Expr::Or(outer.iter().map(|&o| Expr::between(Term::Eff(o), 20, 30)).collect()),
                ];
                for w in 0..3 {
                    let mut alts: Vec<Expr> = outer.iter().map(|&o| Expr::code_is(o, 20 + w)).collect();
                    alts.push(Expr::negate(used(chain, 20, w)));
                    parts.push(Expr::Or(alts));
                }
                // mapsat: or every access is within one work item of a mapGlb around the buffer
                // (the paper's rule is vacuous without work groups; code generation gives each
                // work item its own slice of the buffer, so only the work item's own accesses are
                // safe).
                let scratch = Expr::And(
                    std::iter::once(Expr::Lt(Term::Eff(i), Term::Const(10)))
                        .chain(analysis.buffers_used(m, AddressSpace::Local).into_iter().map(|b| {
                            let ctx = &analysis.maps[analysis.buffers[b].top].context;
                            Expr::Or(
                                ctx.iter()
                                    .filter_map(|&c| var_of(c))
                                    .map(|o| Expr::between(Term::Eff(o), 30, 40))
                                    .collect(),
                            )
                        }))
                        .collect(),
                );
                let mut maps = vec![i];
                maps.extend(outer.iter().copied());
                g.push(
                    Family::LocalScope,
                    &maps,
                    format!(
                        "map {} accesses local memory: it must be local or sequential, inside a mapWrg, and \
                         every work-group dimension of its chain ({}) must be used by a map outside it (local memory is not \
                         shared between work groups: out-of-scope reads); or, as a work item's own scratch space, run \
                         within one work item (S, F or V) of a mapGlb around the buffer",
                        labels[i],
                        chain.iter().map(|&x| labels[x].as_str()).collect::<Vec<_>>().join(", ")
                    ),
                    Expr::Or(vec![Expr::And(parts), scratch]),
                );
            }
        }
        // (3) Duplicate scheduling.
        for (i, &m) in vars.iter().enumerate() {
            for inner in analysis.nested_maps(m).into_iter().filter_map(var_of) {
                g.push(
                    Family::Duplicate,
                    &[i, inner],
                    format!(
                        "maps {} and {} are nested: they cannot be parallel in the same domain and dimension",
                        labels[i], labels[inner]
                    ),
                    Expr::Or(vec![
                        Expr::Lt(Term::Code(i), Term::Const(10)),
                        Expr::negate(Expr::Eq(Term::Code(i), Term::Code(inner))),
                    ]),
                );
            }
        }
        // mapsat: one dimension is not split between the global domain and the group domains.
        for chain in &chains {
            let parts = (0..3)
                .map(|d| {
                    Expr::negate(Expr::And(vec![
                        used(chain, 30, d),
                        Expr::Or(vec![used(chain, 20, d), used(chain, 10, d)]),
                    ]))
                })
                .collect();
            g.push(
                Family::Duplicate,
                chain,
                format!(
                    "chain {}: a dimension used by mapGlb cannot also be used by mapWrg or mapLcl",
                    g.chain_name(chain)
                ),
                Expr::And(parts),
            );
        }
        // (4), (5) Local thread indexing dimensionality.
        for chain in &chains {
            let l2w = (0..3).map(|d| Expr::implies(used(chain, 10, d), used(chain, 20, d))).collect();
            g.push(
                Family::LocalDims,
                chain,
                format!(
                    "chain {}: every local dimension used must also be a work-group dimension",
                    g.chain_name(chain)
                ),
                Expr::And(l2w),
            );
            let w2l = (0..3).map(|d| Expr::implies(used(chain, 20, d), used(chain, 10, d))).collect();
            g.push(
                Family::WrgDims,
                chain,
                format!(
                    "chain {}: every work-group dimension used must also be a local dimension",
                    g.chain_name(chain)
                ),
                Expr::And(w2l),
            );
        }
        // (6) Local indexing hierarchy.
        for (i, &m) in vars.iter().enumerate() {
            for inner in analysis.nested_maps(m).into_iter().filter_map(var_of) {
                let bad =
                    (0..3).map(|d| Expr::And(vec![Expr::code_is(i, 10 + d), Expr::code_is(inner, 20 + d)])).collect();
                g.push(
                    Family::LocalHierarchy,
                    &[i, inner],
                    format!("map {} is nested in map {}: no mapWrg(d) inside a mapLcl(d)", labels[inner], labels[i]),
                    Expr::negate(Expr::Or(bad)),
                );
            }
        }
        // (7) Exhaustive thread indexing: the paper states it for each pair of chains; "uses the
        // same dimensions" is an equivalence, so comparing every chain with the first says the
        // same with one instance per chain and domain instead of one per pair (114 instead of
        // 2,223 on the tiled convolution), which makes every use of the space faster.
        if let Some((first, rest)) = chains.split_first() {
            for chain in rest {
                for (base, dom) in [(10, "local"), (20, "work-group"), (30, "global")] {
                    let same = (0..3)
                        .map(|d| {
                            let (ua, ub) = (used(first, base, d), used(chain, base, d));
                            Expr::And(vec![Expr::implies(ua.clone(), ub.clone()), Expr::implies(ub, ua)])
                        })
                        .collect();
                    let mut maps = first.clone();
                    maps.extend(chain.iter().copied());
                    g.push(
                        Family::Exhaustive,
                        &maps,
                        format!(
                            "chains {} and {} must use the same {dom} dimensions",
                            g.chain_name(first),
                            g.chain_name(chain)
                        ),
                        Expr::And(same),
                    );
                }
            }
        }
        // (12) One launch shape (the code generator's restrictions, see `Family::Launch`).
        let all: Vec<usize> = (0..vars.len()).collect();
        g.push(
            Family::Launch,
            &all,
            "one kernel uses either global thread ids (mapGlb) or work-group and local ids (mapWrg, mapLcl), \
             not both"
                .to_string(),
            Expr::negate(Expr::And(vec![
                Expr::Or(all.iter().map(|&i| Expr::between(Term::Eff(i), 30, 40)).collect()),
                Expr::Or(all.iter().map(|&i| Expr::between(Term::Eff(i), 10, 30)).collect()),
            ])),
        );
        for (i, &m) in vars.iter().enumerate() {
            let outer: Vec<usize> = analysis.outer_maps(m).into_iter().filter_map(var_of).collect();
            if outer.is_empty() {
                continue;
            }
            let names = outer.iter().map(|&o| labels[o].as_str()).collect::<Vec<_>>().join(", ");
            let mut maps = outer.clone();
            maps.push(i);
            g.push(
                Family::Launch,
                &maps,
                format!(
                    "map {} is nested in {names}: a mapWrg or mapGlb is not nested in a sequential, vectorized or \
                     local map (it would run in one thread)",
                    labels[i]
                ),
                Expr::negate(Expr::And(vec![
                    Expr::negate(Expr::Lt(Term::Eff(i), Term::Const(20))),
                    Expr::Or(outer.iter().map(|&o| Expr::Lt(Term::Eff(o), Term::Const(20))).collect()),
                ])),
            );
            if outer.len() >= 2 {
                g.push(
                    Family::Launch,
                    &maps,
                    format!(
                        "map {} is nested in {names}: no mapLcl nested in a sequential map in a work group whose \
                         threads already run an outer mapLcl",
                        labels[i]
                    ),
                    Expr::negate(Expr::And(vec![
                        Expr::between(Term::Eff(i), 10, 20),
                        Expr::Or(outer.iter().map(|&o| Expr::Lt(Term::Eff(o), Term::Const(10))).collect()),
                        Expr::Or(outer.iter().map(|&o| Expr::between(Term::Eff(o), 10, 20)).collect()),
                    ])),
                );
            }
        }
        // (8) Sequential map fusion.
        if options.fusion {
            for (i, &m) in vars.iter().enumerate() {
                if let (Some(p), true) = (parents[i], analysis.maps[m].perfectly_nested) {
                    g.push(
                        Family::SeqFusion,
                        &[p, i],
                        format!(
                            "map {} is perfectly nested in map {}: they are not both sequential (fuse them: {}=F)",
                            labels[i], labels[p], labels[i]
                        ),
                        Expr::negate(Expr::And(vec![Expr::code_is(p, 0), Expr::code_is(i, 0)])),
                    );
                }
            }
        }
        // (9) Vectorization.
        for (i, &m) in vars.iter().enumerate() {
            if let Some(why) = &analysis.maps[m].unvectorizable {
                g.push(
                    Family::Vectorization,
                    &[i],
                    format!("map {} cannot be vectorized (V): {why}", labels[i]),
                    Expr::negate(Expr::code_is(i, 2)),
                );
            }
        }
        // (10) Synchronizability.
        let mut barriers = Vec::new();
        let mut need_ls = options.profile.is_some();
        let mut divisibility = Vec::new();
        for b in &analysis.buffers {
            let Some(top) = var_of(b.top) else { continue };
            let mut mismatch = Vec::new();
            let mut cross = Vec::new();
            let mut involved = vec![top];
            let mut readers = Vec::new();
            for (k, r) in &b.reads {
                let w: Vec<usize> = match &b.writers[*k] {
                    Writer::Thread => vec![],
                    Writer::Maps(ws) => ws.iter().filter_map(|&x| var_of(x)).collect(),
                };
                let r = match r {
                    Reader::Thread => None,
                    Reader::Map(q) => var_of(*q),
                };
                if w.is_empty() && r.is_none() {
                    continue;
                }
                involved.extend(w.iter().copied());
                if let Some(r) = r {
                    involved.push(r);
                    if !readers.contains(&labels[r]) {
                        readers.push(labels[r].clone());
                    }
                }
                let seq = |i: usize| Expr::Lt(Term::Eff(i), Term::Const(10));
                let matched = match (w.as_slice(), r) {
                    ([w], Some(r)) => Expr::Or(vec![
                        Expr::And(vec![seq(*w), seq(r)]),
                        Expr::And(vec![
                            Expr::Eq(Term::Eff(*w), Term::Eff(r)),
                            Expr::negate(seq(*w)),
                            Expr::negate(Expr::code_is(*w, 1)),
                            Expr::negate(Expr::code_is(r, 1)),
                        ]),
                    ]),
                    (ws, r) => Expr::And(ws.iter().copied().chain(r).map(seq).collect()),
                };
                let wide = Expr::Or(
                    w.iter().copied().chain(r).map(|i| Expr::negate(Expr::Lt(Term::Eff(i), Term::Const(20)))).collect(),
                );
                cross.push(Expr::And(vec![Expr::negate(matched.clone()), wide]));
                mismatch.push(Expr::negate(matched));
            }
            if mismatch.is_empty() {
                continue;
            }
            involved.sort_unstable();
            involved.dedup();
            let space = b.space();
            let space_name = match space {
                AddressSpace::Global => "global",
                AddressSpace::Local => "local",
                AddressSpace::Private => "private",
            };
            let needed = Expr::Or(mismatch);
            g.push(
                Family::Sync,
                &involved,
                format!(
                    "the {space_name} buffer written by map {} is read by {}: threads must not read elements \
                     written by threads of other work groups (cannot synchronize: OpenCL has no global barrier)",
                    labels[top],
                    if readers.is_empty() {
                        "a sequential reader".to_string()
                    } else {
                        format!("map {}", readers.join(", "))
                    }
                ),
                Expr::negate(Expr::Or(cross)),
            );
            let ctx: Vec<usize> = analysis.maps[b.top].context.iter().filter_map(|&c| var_of(c)).collect();
            if !ctx.is_empty() {
                let mut parts = Vec::new();
                for &o in &ctx {
                    parts.push(Expr::Lt(Term::Eff(o), Term::Const(30)));
                    parts.push(Expr::negate(Expr::And(vec![
                        Expr::code_is(o, 1),
                        Expr::negate(Expr::Lt(Term::Eff(o), Term::Const(10))),
                    ])));
                    for d in 0..3 {
                        let ok = match analysis.maps[vars[o]].extent {
                            Some(n) => Expr::In(Term::Ls(d as usize), divisors(n)),
                            None => Expr::Bool(false),
                        };
                        parts.push(Expr::implies(Expr::code_is(o, 10 + d), ok));
                        need_ls = true;
                    }
                }
                let mut maps = involved.clone();
                maps.extend(ctx.iter().copied());
                maps.sort_unstable();
                maps.dedup();
                divisibility.push((
                    maps,
                    format!(
                        "the barrier after map {} lies inside the loops of {}: every thread must run them the same \
                         number of times (no mapGlb or fused parallel loop around it; a mapLcl(d) around it needs a \
                         local size ls{{d}} that divides its length)",
                        labels[top],
                        ctx.iter().map(|&x| labels[x].as_str()).collect::<Vec<_>>().join(", ")
                    ),
                    Expr::implies(needed.clone(), Expr::And(parts)),
                ));
            }
            barriers.push(BarrierSite { writer: labels[top].clone(), readers, space, needed });
        }
        for (maps, text, e) in divisibility {
            g.push(Family::Sync, &maps, text, e);
        }
        // (11) Device limits and tuning parameters.
        let n_ls = if need_ls { 3 } else { 0 };
        let mut ls_domains = Vec::new();
        if n_ls > 0 {
            let max_item = options.profile.as_ref().map(|p| p.max_work_item_sizes).unwrap_or([1024; 3]);
            for (d, &max_d) in max_item.iter().enumerate() {
                let mut cand: Vec<i64> = Vec::new();
                for (i, &m) in vars.iter().enumerate() {
                    let _ = i;
                    if let Some(n) = analysis.maps[m].extent {
                        cand.extend(divisors(n));
                    }
                }
                let mut p2 = 1;
                while p2 <= max_d as i64 {
                    cand.push(p2);
                    p2 *= 2;
                }
                cand.retain(|&v| v >= 1 && v <= max_d as i64);
                cand.sort_unstable();
                cand.dedup();
                ls_domains.push(cand.clone());
                g.push(
                    Family::DeviceLimits,
                    &[],
                    format!("local size ls{d} is a candidate value at most {max_d}"),
                    Expr::In(Term::Ls(d), cand),
                );
                let users: Vec<Expr> = (0..vars.len()).map(|i| Expr::code_is(i, 10 + d as i64)).collect();
                g.push(
                    Family::DeviceLimits,
                    &[],
                    format!("local size ls{d} is 1 unless a map is mapLcl({d})"),
                    Expr::Or(vec![Expr::Or(users), Expr::Eq(Term::Ls(d), Term::Const(1))]),
                );
            }
        }
        if let Some(prof) = &options.profile {
            if n_ls > 0 {
                g.push(
                    Family::DeviceLimits,
                    &[],
                    format!("work-group size ls0*ls1*ls2 at most {} ({})", prof.max_work_group_size, prof.name),
                    Expr::negate(Expr::Lt(
                        Term::Const(prof.max_work_group_size as i64),
                        Term::Mul(vec![Term::Ls(0), Term::Ls(1), Term::Ls(2)]),
                    )),
                );
                for (i, &m) in vars.iter().enumerate() {
                    if let Some(n) = analysis.maps[m].extent {
                        let parts = (0..3)
                            .map(|d| {
                                Expr::implies(Expr::code_is(i, 10 + d), Expr::In(Term::Ls(d as usize), divisors(n)))
                            })
                            .collect();
                        g.push(
                            Family::DeviceLimits,
                            &[i],
                            format!("map {} of length {n} as mapLcl(d): the local size ls{{d}} divides {n}", labels[i]),
                            Expr::And(parts),
                        );
                    }
                }
            }
            if prof.max_dims < 3 {
                for (i, label) in labels.iter().enumerate() {
                    let bad = Code::ALL
                        .iter()
                        .filter(
                            |c| matches!(c, Code::Lcl(d) | Code::Wrg(d) | Code::Glb(d) if *d as u32 >= prof.max_dims),
                        )
                        .map(|c| c.to_int())
                        .collect();
                    g.push(
                        Family::DeviceLimits,
                        &[i],
                        format!("map {label}: {} has {} NDRange dimensions", prof.name, prof.max_dims),
                        Expr::negate(Expr::In(Term::Code(i), bad)),
                    );
                }
            }
            let local: Vec<_> =
                analysis.buffers.iter().filter(|b| !b.merged && b.space() == AddressSpace::Local).collect();
            if !local.is_empty() {
                let total: Option<i64> = local.iter().map(|b| b.bytes).sum();
                let maps: Vec<usize> = local.iter().filter_map(|b| var_of(b.top)).collect();
                if let Some(t) = total {
                    g.push(
                        Family::DeviceLimits,
                        &maps,
                        format!(
                            "local memory: the toLocal buffers take {t} bytes at these sizes; {} has {} per work group",
                            prof.name, prof.local_mem_bytes
                        ),
                        Expr::Bool(t <= prof.local_mem_bytes as i64),
                    );
                }
            }
            let private: Vec<_> =
                analysis.buffers.iter().filter(|b| !b.merged && b.space() == AddressSpace::Private).collect();
            if let Some(t) = private.iter().map(|b| b.bytes).sum::<Option<i64>>().filter(|_| !private.is_empty()) {
                let maps: Vec<usize> = private.iter().filter_map(|b| var_of(b.top)).collect();
                g.push(
                    Family::DeviceLimits,
                    &maps,
                    format!(
                        "private memory: the toPrivate buffers take {t} bytes per thread at these sizes; {} has {}",
                        prof.name, prof.private_mem_bytes
                    ),
                    Expr::Bool(t <= prof.private_mem_bytes as i64),
                );
            }
        }
        let constraints = g.out;
        Ok(Space {
            analysis,
            vars,
            labels,
            layout_maps,
            parents,
            domains,
            n_ls,
            ls_domains,
            constraints,
            barriers,
            options,
        })
    }

    /// Number of constraint instances of each family (families without instances omitted).
    pub fn counts(&self) -> Vec<(Family, usize)> {
        Family::ALL
            .iter()
            .map(|&f| (f, self.constraints.iter().filter(|c| c.family == f).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Number of variables (maps to map).
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// True when there is no map to map (never, for a generated space).
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

struct Gen<'a> {
    #[allow(dead_code)]
    a: &'a Analysis,
    #[allow(dead_code)]
    vars: &'a [MapIdx],
    labels: &'a [String],
    out: Vec<Constraint>,
}

impl Gen<'_> {
    fn push(&mut self, family: Family, maps: &[usize], text: String, expr: Expr) {
        let mut names: Vec<String> = Vec::new();
        for &i in maps {
            if !names.contains(&self.labels[i]) {
                names.push(self.labels[i].clone());
            }
        }
        self.out.push(Constraint { family, maps: names, text, expr });
    }

    fn chain_name(&self, chain: &[usize]) -> String {
        format!("({})", chain.iter().map(|&i| self.labels[i].as_str()).collect::<Vec<_>>().join(", "))
    }
}

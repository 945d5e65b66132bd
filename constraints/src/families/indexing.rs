//! Families 3–7: how nested maps share out the thread indices of one NDRange. A parallel map
//! iterates over a thread index (`get_local_id(d)`, `get_group_id(d)`, `get_global_id(d)`):
//! these rules keep two maps of a chain from iterating over the same index, and keep the
//! chains of a kernel in agreement about which indices exist.

use super::{Gen, Out};
use crate::expr::{Expr, Term};
use crate::space::{Family, PairRule};
use crate::Code;

/// (3) Nested maps are not parallel in the same domain and dimension. Both would iterate over
/// the same thread index: in each of the outer map's iterations a thread would run only the
/// inner iteration at its own index (a diagonal) instead of all of them.
pub(super) fn duplicate(g: &Gen, out: &mut Out) {
    for i in 0..g.len() {
        for inner in g.nested(i) {
            out.push_pair(
                PairRule::Duplicate,
                Family::Duplicate,
                (i, inner),
                format!(
                    "maps {} and {} are nested: they cannot be parallel in the same domain and dimension",
                    g.label(i),
                    g.label(inner)
                ),
                Expr::Or(vec![
                    Expr::within_thread(Term::Code(i)),
                    Expr::negate(Expr::Eq(Term::Code(i), Term::Code(inner))),
                ]),
            );
        }
    }
}

/// (3, mapsat) A dimension used by a `mapGlb` of a chain is not also used by a `mapWrg` or
/// `mapLcl` of it. The global index of dimension `d` is made of the group and local indices of
/// `d`: the maps would iterate over overlapping thread indices, each seeing only part of its
/// iterations.
pub(super) fn global_apart_from_groups(g: &Gen, out: &mut Out) {
    for chain in &g.chains {
        let parts = (0..3)
            .map(|d| {
                Expr::negate(Expr::And(vec![
                    Expr::any_code(chain, Code::Glb(d)),
                    Expr::Or(vec![Expr::any_code(chain, Code::Wrg(d)), Expr::any_code(chain, Code::Lcl(d))]),
                ]))
            })
            .collect();
        out.push(
            Family::Duplicate,
            chain,
            format!(
                "chain {}: a dimension used by mapGlb cannot also be used by mapWrg or mapLcl",
                g.chain_name(chain)
            ),
            Expr::And(parts),
        );
    }
}

/// (4), (5) In each chain, `mapLcl(d)` and `mapWrg(d)` come in pairs. Not needed for correct
/// results (`tuner/tests/completeness.rs` runs such mappings correctly: a dimension with only
/// one of them launches one work group, or one thread per group): the paper's rules, which
/// rule out idle or repeated threads.
pub(super) fn local_and_group_dims(g: &Gen, out: &mut Out) {
    for chain in &g.chains {
        let l2w = (0..3)
            .map(|d| Expr::implies(Expr::any_code(chain, Code::Lcl(d)), Expr::any_code(chain, Code::Wrg(d))))
            .collect();
        out.push(
            Family::LocalDims,
            chain,
            format!("chain {}: every local dimension used must also be a work-group dimension", g.chain_name(chain)),
            Expr::And(l2w),
        );
        let w2l = (0..3)
            .map(|d| Expr::implies(Expr::any_code(chain, Code::Wrg(d)), Expr::any_code(chain, Code::Lcl(d))))
            .collect();
        out.push(
            Family::WrgDims,
            chain,
            format!("chain {}: every work-group dimension used must also be a local dimension", g.chain_name(chain)),
            Expr::And(w2l),
        );
    }
}

/// (6) No `mapWrg(d)` nested in a `mapLcl(d)`: the paper's hierarchy rule. The group index
/// selects a work group and the local index a work item inside it, so a work-group loop goes
/// outside the local loop of its dimension. (Family 12 rejects every `mapWrg` under a local
/// or sequential map as well: mapsat's code generator puts work-group loops outermost.)
pub(super) fn local_hierarchy(g: &Gen, out: &mut Out) {
    for i in 0..g.len() {
        for inner in g.nested(i) {
            let bad = (0..3)
                .map(|d| Expr::And(vec![Expr::code_is(i, Code::Lcl(d)), Expr::code_is(inner, Code::Wrg(d))]))
                .collect();
            out.push_pair(
                PairRule::Hierarchy,
                Family::LocalHierarchy,
                (i, inner),
                format!("map {} is nested in map {}: no mapWrg(d) inside a mapLcl(d)", g.label(inner), g.label(i)),
                Expr::negate(Expr::Or(bad)),
            );
        }
    }
}

/// (7) Every chain uses the same dimensions of each domain. All chains of a kernel run in the
/// same NDRange: a chain that uses fewer dimensions runs in every thread of the others
/// dimensions (a correct result, `tuner/tests/completeness.rs`, but repeated work).
///
/// The paper states it for each pair of chains; "uses the same dimensions" is an equivalence,
/// so comparing every chain with the first says the same with one instance per chain and
/// domain instead of one per pair (114 instead of 2,223 on the tiled convolution), which makes
/// every use of the space faster.
pub(super) fn exhaustive(g: &Gen, out: &mut Out) {
    let Some((first, rest)) = g.chains.split_first() else { return };
    let domains = [(Code::Lcl as fn(u8) -> Code, "local"), (Code::Wrg, "work-group"), (Code::Glb, "global")];
    for chain in rest {
        for (code, dom) in domains {
            let same = (0..3)
                .map(|d| {
                    let (ua, ub) = (Expr::any_code(first, code(d)), Expr::any_code(chain, code(d)));
                    Expr::And(vec![Expr::implies(ua.clone(), ub.clone()), Expr::implies(ub, ua)])
                })
                .collect();
            let mut maps = first.clone();
            maps.extend(chain.iter().copied());
            out.push(
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

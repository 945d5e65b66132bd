//! Clean-up passes on the kernel IR after lowering, before printing.
//!
//! - **Loop splitting** ([`crate::split`]): a sequential loop indexed through a chain of
//!   divisions and remainders of its variable becomes a loop nest without them.
//! - **One-iteration loops** (`mapSeq` / `mapVec` / copies over arrays of length 1) are elided:
//!   the variable is bound to 0 and the body spliced into the enclosing block.
//! - **Indices** are rebuilt through the simplifying constructors of [`crate::index`] with the
//!   ranges of the enclosing loops and the values of unrolled variables; `pad` guards that are
//!   then always true (or false) are folded away.
//! - **Register promotion**: a private array of at most [`MAX_REG_ELEMS`] elements whose every
//!   access has an index depending only on variables of short sequential loops (at most
//!   [`MAX_UNROLL`] iterations, no barrier inside) has those loops unrolled; once every index is
//!   a constant, the array becomes one scalar variable per element (`acc[2]` is `acc_2`), so
//!   the device compiler keeps it in registers instead of (local or stack) memory.

use crate::index::{Index, Ranges};
use crate::kir::*;
use crate::visit::{walk_expr_mut, walk_stmt, walk_stmts_mut, Visit, VisitMut};
use mapsat_ir::ast::Lit;
use std::collections::{BTreeMap, BTreeSet};

/// Largest private array turned into scalars.
pub const MAX_REG_ELEMS: i64 = 16;
/// Longest loop unrolled to make private indices static.
pub const MAX_UNROLL: i64 = 16;
/// Largest product of the trip counts of the unrolled loops an access of the array is indexed by.
const MAX_UNROLL_PRODUCT: i64 = 64;

/// Runs the passes.
pub(crate) fn optimize(mut k: Kernel) -> Kernel {
    crate::split::split_loops(&mut k);
    let body = std::mem::take(&mut k.body);
    let candidates = register_candidates(&k, &body);
    let unroll: BTreeSet<VarId> = candidates.values().flatten().copied().collect();
    let mut ranges = Ranges::default();
    let body = transform(body, &BTreeMap::new(), &mut ranges, &unroll);
    k.body = body;
    let ids: Vec<BufId> = candidates.keys().copied().collect();
    for id in ids {
        scalarize(&mut k, id);
    }
    k
}

/// Facts about a loop variable.
struct LoopFacts {
    unrollable: bool,
    extent: i64,
}

/// The facts of every loop variable.
struct Loops(BTreeMap<VarId, LoopFacts>);

impl Visit for Loops {
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Loop { var, kind, extent, stride, trips, body, .. } = s {
            let unrollable = matches!(kind, LoopKind::Seq | LoopKind::Vec)
                && *trips == Trips::Loop
                && *stride == 1
                && *extent <= MAX_UNROLL
                && !has_barrier(body);
            self.0.insert(*var, LoopFacts { unrollable, extent: *extent });
        }
        walk_stmt(self, s);
    }
}

fn has_barrier(stmts: &[Stmt]) -> bool {
    struct Found(bool);
    impl Visit for Found {
        fn visit_stmt(&mut self, s: &Stmt) {
            self.0 |= matches!(s, Stmt::Barrier { .. });
            walk_stmt(self, s);
        }
    }
    let mut f = Found(false);
    f.visit_stmts(stmts);
    f.0
}

/// Every place and declaration of every buffer, in statement order.
#[derive(Default)]
struct Uses {
    places: BTreeMap<BufId, Vec<Index>>,
    decls: BTreeMap<BufId, Vec<bool>>,
}

impl Visit for Uses {
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Decl(b, init) = s {
            self.decls.entry(*b).or_default().push(init.is_some());
        }
        walk_stmt(self, s);
    }

    fn visit_place(&mut self, p: &Place) {
        self.places.entry(p.buf).or_default().push(p.index.clone());
    }
}

/// Private arrays that can become registers, with the loop variables to unroll for each.
fn register_candidates(k: &Kernel, body: &[Stmt]) -> BTreeMap<BufId, BTreeSet<VarId>> {
    let mut loops = Loops(BTreeMap::new());
    loops.visit_stmts(body);
    let loops = loops.0;
    let mut uses = Uses::default();
    uses.visit_stmts(body);
    let mut out = BTreeMap::new();
    for (i, b) in k.buffers.iter().enumerate() {
        let id = BufId(i);
        if b.space != Space::Private || b.by_value || b.dims.is_empty() || b.elems() > MAX_REG_ELEMS {
            continue;
        }
        // Declared exactly once, without an initial value.
        if uses.decls.get(&id).map(|d| d.as_slice()) != Some(&[false]) {
            continue;
        }
        let mut vars = BTreeSet::new();
        // Copies of one access once its loops are unrolled.
        let mut copies = 1i64;
        for idx in uses.places.get(&id).into_iter().flatten() {
            let mut mine = BTreeSet::new();
            idx.vars(&mut mine);
            let product = mine.iter().filter_map(|v| loops.get(v)).fold(1i64, |p, l| p.saturating_mul(l.extent));
            copies = copies.max(product);
            vars.extend(mine);
        }
        let ok = vars.iter().all(|v| loops.get(v).is_some_and(|l| l.unrollable));
        if ok && copies <= MAX_UNROLL_PRODUCT {
            out.insert(id, vars);
        }
    }
    out
}

/// True when printing `stmts` in a block declares a name in that block's scope.
fn declares(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| matches!(s, Stmt::Decl(..) | Stmt::Loop { trips: Trips::One | Trips::AtMostOne, .. }))
}

/// Values of the unrolled loop variables.
type Env = BTreeMap<VarId, i64>;

fn lookup(env: &Env) -> impl Fn(VarId) -> Option<Index> + '_ {
    |v| env.get(&v).map(|c| Index::constant(*c))
}

fn transform(stmts: Vec<Stmt>, env: &Env, ranges: &mut Ranges, unroll: &BTreeSet<VarId>) -> Vec<Stmt> {
    let mut out = Vec::new();
    for s in stmts {
        match s {
            Stmt::Loop { var, kind, extent, stride, trips, origin, body } => {
                let seq = matches!(kind, LoopKind::Seq | LoopKind::Vec) && trips == Trips::Loop && stride == 1;
                if seq && (extent == 1 || unroll.contains(&var)) {
                    let copies = extent.max(0);
                    let wrap = copies > 1 && declares(&body);
                    out.push(Stmt::Comment(if copies == 1 {
                        format!("{origin}: one iteration")
                    } else {
                        format!("{origin}: unrolled ({copies} iterations)")
                    }));
                    for i in 0..copies {
                        let mut env = env.clone();
                        env.insert(var, i);
                        ranges.set(var, i, i);
                        let b = transform(body.clone(), &env, ranges, unroll);
                        if wrap {
                            out.push(Stmt::Block(b));
                        } else {
                            out.extend(b);
                        }
                    }
                    continue;
                }
                ranges.set(var, 0, extent - 1);
                let body = transform(body, env, ranges, unroll);
                out.push(Stmt::Loop { var, kind, extent, stride, trips, origin, body });
            }
            Stmt::Block(b) => out.push(Stmt::Block(transform(b, env, ranges, unroll))),
            mut s @ (Stmt::Decl(..) | Stmt::Store(..)) => {
                Rebuild { env, ranges }.visit_stmt_mut(&mut s);
                out.push(s);
            }
            s @ (Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. }) => out.push(s),
        }
    }
    out
}

/// Rebuilds the indices of what it visits with the values of the unrolled variables and the
/// ranges of the enclosing loops, and folds the `pad` guards (and their selects) that become
/// constant.
struct Rebuild<'a> {
    env: &'a Env,
    ranges: &'a Ranges,
}

impl VisitMut for Rebuild<'_> {
    fn visit_index_mut(&mut self, i: &mut Index) {
        *i = i.rebuild(&lookup(self.env), self.ranges);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        walk_expr_mut(self, e);
        match e {
            Expr::InRange(i, lo, hi) => {
                let (a, b) = self.ranges.of(i);
                if a >= *lo && b < *hi {
                    *e = Expr::Lit(Lit::Bool(true));
                } else if b < *lo || a >= *hi {
                    *e = Expr::Lit(Lit::Bool(false));
                } else {
                    // Only the bound that can fail is tested.
                    if a >= *lo {
                        *lo = i64::MIN;
                    }
                    if b < *hi {
                        *hi = i64::MAX;
                    }
                }
            }
            Expr::Select(c, a, b) => {
                if let Expr::Lit(Lit::Bool(t)) = **c {
                    let arm = if t { a } else { b };
                    let chosen = std::mem::replace(&mut **arm, Expr::Lit(Lit::Bool(t)));
                    *e = chosen;
                }
            }
            _ => {}
        }
    }
}

/// Replaces private array `id` by one scalar per element when every index is a constant in
/// bounds (after unrolling); leaves it as it is otherwise.
fn scalarize(k: &mut Kernel, id: BufId) {
    let mut uses = Uses::default();
    uses.visit_stmts(&k.body);
    let n = k.buf(id).elems();
    let all_static =
        uses.places.get(&id).into_iter().flatten().all(|i| i.as_const().is_some_and(|c| (0..n).contains(&c)));
    if !all_static {
        return;
    }
    let mut names: BTreeSet<String> =
        k.buffers.iter().enumerate().filter(|(i, _)| *i != id.0).map(|(_, b)| b.name.clone()).collect();
    names.extend(k.loop_vars().into_iter().map(|v| k.var_name(v).into_owned()));
    let base = k.buf(id).name.clone();
    let mut ids = Vec::new();
    for e in 0..n {
        // One element keeps its name: the array becomes a plain variable.
        let mut name = if n == 1 { base.clone() } else { format!("{base}_{e}") };
        let mut j = 1;
        while names.contains(&name) {
            name = format!("{base}_{e}_{j}");
            j += 1;
        }
        names.insert(name.clone());
        let mut b = k.buf(id).clone();
        b.name = name;
        b.dims = Vec::new();
        if e == 0 {
            k.buffers[id.0] = b;
            ids.push(id);
        } else {
            k.buffers.push(b);
            ids.push(BufId(k.buffers.len() - 1));
        }
    }
    Scalarize { id, ids: &ids }.visit_stmts_mut(&mut k.body);
}

/// Array `id` replaced by its scalars `ids`: each access by the scalar of its (constant) index,
/// its declaration by theirs.
struct Scalarize<'a> {
    id: BufId,
    ids: &'a [BufId],
}

impl VisitMut for Scalarize<'_> {
    fn visit_stmts_mut(&mut self, stmts: &mut Vec<Stmt>) {
        walk_stmts_mut(self, stmts);
        let (id, ids) = (self.id, self.ids);
        *stmts = std::mem::take(stmts)
            .into_iter()
            .flat_map(|s| match s {
                Stmt::Decl(b, None) if b == id => ids.iter().map(|i| Stmt::Decl(*i, None)).collect(),
                s => vec![s],
            })
            .collect();
    }

    fn visit_place_mut(&mut self, p: &mut Place) {
        if p.buf == self.id {
            let e = p.index.as_const().unwrap_or(0).clamp(0, self.ids.len() as i64 - 1) as usize;
            p.buf = self.ids[e];
            p.index = Index::constant(0);
        }
    }
}

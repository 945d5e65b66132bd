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

fn collect_loops(stmts: &[Stmt], out: &mut BTreeMap<VarId, LoopFacts>) {
    for s in stmts {
        if let Stmt::Loop { var, kind, extent, stride, trips, body, .. } = s {
            let unrollable = matches!(kind, LoopKind::Seq | LoopKind::Vec)
                && *trips == Trips::Loop
                && *stride == 1
                && *extent <= MAX_UNROLL
                && !has_barrier(body);
            out.insert(*var, LoopFacts { unrollable, extent: *extent });
            collect_loops(body, out);
        } else if let Stmt::Block(b) = s {
            collect_loops(b, out);
        }
    }
}

fn has_barrier(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Barrier { .. } => true,
        Stmt::Loop { body, .. } | Stmt::Block(body) => has_barrier(body),
        _ => false,
    })
}

/// Every place and declaration of every buffer, in statement order.
#[derive(Default)]
struct Uses {
    places: BTreeMap<BufId, Vec<Index>>,
    decls: BTreeMap<BufId, Vec<bool>>,
}

impl Uses {
    fn place(&mut self, p: &Place) {
        self.places.entry(p.buf).or_default().push(p.index.clone());
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Load(p) => self.place(p),
            Expr::Bin(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Expr::Un(_, a) | Expr::Cast(_, a) | Expr::Lane(a, _) => self.expr(a),
            Expr::Select(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            Expr::Vector(_, es) => es.iter().for_each(|e| self.expr(e)),
            Expr::Lit(_) | Expr::Splat(..) | Expr::Int(_) | Expr::InRange(..) => {}
        }
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Decl(b, init) => {
                    self.decls.entry(*b).or_default().push(init.is_some());
                    if let Some(e) = init {
                        self.expr(e);
                    }
                }
                Stmt::Store(p, e) => {
                    self.place(p);
                    self.expr(e);
                }
                Stmt::Loop { body, .. } | Stmt::Block(body) => self.stmts(body),
                Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. } => {}
            }
        }
    }
}

/// Private arrays that can become registers, with the loop variables to unroll for each.
fn register_candidates(k: &Kernel, body: &[Stmt]) -> BTreeMap<BufId, BTreeSet<VarId>> {
    let mut loops = BTreeMap::new();
    collect_loops(body, &mut loops);
    let mut uses = Uses::default();
    uses.stmts(body);
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
            Stmt::Decl(b, init) => out.push(Stmt::Decl(b, init.map(|e| expr(e, env, ranges)))),
            Stmt::Store(p, e) => {
                let p = place(p, env, ranges);
                out.push(Stmt::Store(p, expr(e, env, ranges)));
            }
            s @ (Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. }) => out.push(s),
        }
    }
    out
}

fn place(p: Place, env: &Env, ranges: &Ranges) -> Place {
    Place { index: p.index.rebuild(&lookup(env), ranges), ..p }
}

fn expr(e: Expr, env: &Env, ranges: &Ranges) -> Expr {
    let bx = |e: Box<Expr>| Box::new(expr(*e, env, ranges));
    match e {
        Expr::Int(i) => Expr::Int(i.rebuild(&lookup(env), ranges)),
        Expr::Load(p) => Expr::Load(place(p, env, ranges)),
        Expr::Bin(op, a, b) => Expr::Bin(op, bx(a), bx(b)),
        Expr::Un(op, a) => Expr::Un(op, bx(a)),
        Expr::Cast(k, a) => Expr::Cast(k, bx(a)),
        Expr::Lane(a, l) => Expr::Lane(bx(a), l),
        Expr::Vector(k, es) => Expr::Vector(k, es.into_iter().map(|e| expr(e, env, ranges)).collect()),
        Expr::Select(c, a, b) => match expr(*c, env, ranges) {
            Expr::Lit(mapsat_ir::ast::Lit::Bool(true)) => expr(*a, env, ranges),
            Expr::Lit(mapsat_ir::ast::Lit::Bool(false)) => expr(*b, env, ranges),
            c => Expr::Select(Box::new(c), bx(a), bx(b)),
        },
        Expr::InRange(i, lo, hi) => {
            let i = i.rebuild(&lookup(env), ranges);
            let (a, b) = ranges.of(&i);
            if a >= lo && b < hi {
                Expr::Lit(mapsat_ir::ast::Lit::Bool(true))
            } else if b < lo || a >= hi {
                Expr::Lit(mapsat_ir::ast::Lit::Bool(false))
            } else {
                // Only the bound that can fail is tested.
                let lo = if a >= lo { i64::MIN } else { lo };
                let hi = if b < hi { i64::MAX } else { hi };
                Expr::InRange(i, lo, hi)
            }
        }
        e @ (Expr::Lit(_) | Expr::Splat(..)) => e,
    }
}

/// Replaces private array `id` by one scalar per element when every index is a constant in
/// bounds (after unrolling); leaves it as it is otherwise.
fn scalarize(k: &mut Kernel, id: BufId) {
    let mut uses = Uses::default();
    uses.stmts(&k.body);
    let n = k.buf(id).elems();
    let all_static =
        uses.places.get(&id).into_iter().flatten().all(|i| i.as_const().is_some_and(|c| (0..n).contains(&c)));
    if !all_static {
        return;
    }
    let mut names: BTreeSet<String> =
        k.buffers.iter().enumerate().filter(|(i, _)| *i != id.0).map(|(_, b)| b.name.clone()).collect();
    loop_vars(&k.body, &k.vars, &mut names);
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
    let body = std::mem::take(&mut k.body);
    k.body = rewrite(body, id, &ids);
}

/// The names of the variables of the loops in `stmts`.
fn loop_vars(stmts: &[Stmt], vars: &[String], out: &mut BTreeSet<String>) {
    for s in stmts {
        match s {
            Stmt::Loop { var, body, .. } => {
                out.insert(vars.get(var.index()).cloned().unwrap_or_else(|| var.to_string()));
                loop_vars(body, vars, out);
            }
            Stmt::Block(b) => loop_vars(b, vars, out),
            _ => {}
        }
    }
}

fn rewrite_place(p: Place, id: BufId, ids: &[BufId]) -> Place {
    if p.buf != id {
        return p;
    }
    let e = p.index.as_const().unwrap_or(0).clamp(0, ids.len() as i64 - 1) as usize;
    Place { buf: ids[e], index: Index::constant(0), ..p }
}

fn rewrite_expr(e: Expr, id: BufId, ids: &[BufId]) -> Expr {
    let bx = |e: Box<Expr>| Box::new(rewrite_expr(*e, id, ids));
    match e {
        Expr::Load(p) => Expr::Load(rewrite_place(p, id, ids)),
        Expr::Bin(op, a, b) => Expr::Bin(op, bx(a), bx(b)),
        Expr::Un(op, a) => Expr::Un(op, bx(a)),
        Expr::Cast(k, a) => Expr::Cast(k, bx(a)),
        Expr::Lane(a, l) => Expr::Lane(bx(a), l),
        Expr::Select(c, a, b) => Expr::Select(bx(c), bx(a), bx(b)),
        Expr::Vector(k, es) => Expr::Vector(k, es.into_iter().map(|e| rewrite_expr(e, id, ids)).collect()),
        e @ (Expr::Lit(_) | Expr::Splat(..) | Expr::Int(_) | Expr::InRange(..)) => e,
    }
}

fn rewrite(stmts: Vec<Stmt>, id: BufId, ids: &[BufId]) -> Vec<Stmt> {
    let mut out = Vec::new();
    for s in stmts {
        match s {
            Stmt::Decl(b, None) if b == id => out.extend(ids.iter().map(|i| Stmt::Decl(*i, None))),
            Stmt::Decl(b, init) => out.push(Stmt::Decl(b, init.map(|e| rewrite_expr(e, id, ids)))),
            Stmt::Store(p, e) => out.push(Stmt::Store(rewrite_place(p, id, ids), rewrite_expr(e, id, ids))),
            Stmt::Loop { var, kind, extent, stride, trips, origin, body } => {
                out.push(Stmt::Loop { var, kind, extent, stride, trips, origin, body: rewrite(body, id, ids) })
            }
            Stmt::Block(b) => out.push(Stmt::Block(rewrite(b, id, ids))),
            s @ (Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. }) => out.push(s),
        }
    }
    out
}

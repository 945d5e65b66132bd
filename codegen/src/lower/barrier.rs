//! Barriers: after the outermost `mapLcl` loop that wrote a local (or global temporary) buffer,
//! a slot is left; the first later read of that buffer turns the slot into a barrier
//! ([`Lower::finish_slots`]). Loops of a work group that run more than once and communicate
//! through local memory end with a barrier too (the next iteration overwrites what slower
//! threads may still read). A barrier inside a loop whose trip count differs between the
//! threads of a work group is refused, and so is communication between work groups (a buffer
//! written by a `mapGlb` or `mapWrg` and read again in the same kernel), unless every thread
//! reads back only what it wrote itself ([`GridWrite`]).

use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::index::{Atom, Index};
use crate::kir::*;
use mapsat_ir::ast::Span;
use std::collections::{BTreeMap, BTreeSet};

/// A place where a barrier may be needed: after a `mapLcl` loop that wrote shared memory.
pub(super) struct Slot {
    /// The loop that wrote.
    writer: String,
    /// A global buffer was written (the barrier fences global memory too).
    global: bool,
    /// The first enclosing loop whose trip count differs between threads, and why.
    divergent: Option<(String, String)>,
    /// A later read needs the barrier.
    pub(super) active: bool,
}

/// Why reading a buffer needs synchronization first.
pub(super) enum Dirty {
    /// The barrier of this slot.
    Slot(SlotId),
    /// All threads of the grid (refused), unless each thread reads only what it wrote.
    Grid(GridWrite),
}

/// What the threads of a `mapGlb` or `mapWrg` loop wrote into a global temporary. No barrier
/// reaches across work groups, so another thread's element cannot be read later in the same
/// kernel; the elements a thread wrote itself can, when the reading loop hands out its indices
/// to the threads as the writing loop did (same kind, extent and stride) and reads at the
/// indices written (the same index expressions in the reading loop's variable).
pub(super) struct GridWrite {
    /// The map that wrote.
    writer: String,
    /// The writing loop's distribution of indices over threads, and its variable.
    kind: LoopKind,
    extent: i64,
    stride: i64,
    var: VarId,
    /// Every place it wrote the buffer at.
    writes: Vec<TempWrite>,
    /// The barrier slot after the `mapLcl` loop inside it that wrote the buffer, if any: what a
    /// read by the same work group needs.
    slot: Option<SlotId>,
}

/// A write of a global temporary: the flat index, the vector width, the variables of the
/// sequential loops around it (iterations of the writing thread's own), and the parallel loops
/// around it (kind, extent, stride, variable: which thread wrote).
pub(super) struct TempWrite {
    at: Index,
    vec: u32,
    own: BTreeSet<VarId>,
    par: Vec<(LoopKind, i64, i64, VarId)>,
}

/// The largest block of a thread whose indices [`Lower::covers`] counts one by one.
const ENUMERATED_BLOCK: i64 = 1 << 14;

/// `e` as `c * var + rest`, `rest` free of `var`; `None` when `var` appears otherwise (in a
/// division, a remainder or a clamp) or not at all.
fn split_var(e: &Index, var: VarId) -> Option<(i64, Index)> {
    let c = e.terms.iter().find(|(a, _)| *a == Atom::Var(var)).map(|(_, c)| *c)?;
    let rest =
        Index { terms: e.terms.iter().filter(|(a, _)| *a != Atom::Var(var)).cloned().collect(), constant: e.constant };
    (!rest.mentions(var)).then_some((c, rest))
}

/// A parallel loop just lowered: how it distributed its indices, and its variable.
pub(super) struct ParallelLoop<'a> {
    pub(super) kind: LoopKind,
    pub(super) origin: &'a str,
    pub(super) var: VarId,
    pub(super) extent: i64,
    pub(super) stride: i64,
}

impl Lower<'_> {
    /// The first enclosing loop whose trip count differs between threads of a work group.
    pub(super) fn divergence(&self) -> Option<(String, String)> {
        self.loops.iter().find_map(|l| l.divergent.as_ref().map(|r| (l.origin.clone(), r.clone())))
    }

    /// A read of buffer `b` at `(flat index, vector width)`: the barrier its last writer left a
    /// slot for becomes needed; a read of what other threads of the grid wrote is refused.
    pub(super) fn on_read(&mut self, b: BufId, at: (&Index, u32)) -> R<()> {
        if let Some(Dirty::Grid(g)) = self.dirty.get(&b) {
            if self.reads_own_write(g, at) {
                return Ok(());
            }
            return match g.slot.filter(|_| self.reads_own_group(g, at) || self.reads_own_nested_block(g, at, true)) {
                Some(s) => self.activate(s),
                None => Err(K::GridSync { writer: g.writer.clone() }.into()),
            };
        }
        match self.dirty.remove(&b) {
            Some(Dirty::Slot(s)) => {
                self.activate(s)?;
                // One barrier serves every buffer the same loop wrote.
                self.dirty.retain(|_, d| !matches!(d, Dirty::Slot(x) if *x == s));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The barrier of slot `s` becomes needed (refused when it would lie in a loop whose trip
    /// count differs between the threads of a work group).
    fn activate(&mut self, s: SlotId) -> R<()> {
        let slot = &mut self.slots[s.0];
        if let Some((loop_, reason)) = &slot.divergent {
            return Err(
                K::DivergentBarrier { map: slot.writer.clone(), loop_: loop_.clone(), reason: reason.clone() }.into()
            );
        }
        slot.active = true;
        Ok(())
    }

    /// A `mapWrg` nest wrote the buffer, each work group for its index `g` only in the block
    /// `c*g .. c*g + c` (every write is `c*g + u`, `u` in `0..c`, by its local threads), and the
    /// read, in a work-group loop handing out its indices alike, is `c*g + v` with `v` in `0..c`:
    /// an element the reading work group wrote itself, which the barrier after the local
    /// loop that wrote it makes visible (a row written by a work group and read back, neighbours
    /// included, by the same work group).
    fn reads_own_group(&self, g: &GridWrite, (flat, vec): (&Index, u32)) -> bool {
        let groups = |w: &TempWrite| -> Vec<(LoopKind, i64, i64, VarId)> {
            w.par.iter().copied().filter(|p| matches!(p.0, LoopKind::Group(_))).collect()
        };
        let Some(first) = g.writes.first() else { return false };
        let [(kind, extent, stride, _)] = groups(first)[..] else { return false };
        let same = |l: &&super::LoopCtx| l.kind == kind && l.extent == extent && l.stride == stride;
        let Some(reader) = self.loops.iter().find(same) else { return false };
        let Some((c, v)) = split_var(flat, reader.var) else { return false };
        let within = |u: &Index, width: u32| {
            let (lo, hi) = self.ranges.of(u);
            c > 0 && lo >= 0 && hi + i64::from(width) <= c
        };
        within(&v, vec)
            && g.writes.iter().all(|w| {
                let one = groups(w);
                one.len() == 1
                    && (one[0].0, one[0].1, one[0].2) == (kind, extent, stride)
                    && split_var(&w.at, one[0].3).is_some_and(|(cw, u)| cw == c && within(&u, w.vec))
            })
    }

    /// The read at `at` is, in every thread, of an element that thread wrote in `g`'s loop:
    /// at the same index, or in a block of elements the thread wrote whole.
    fn reads_own_write(&self, g: &GridWrite, (flat, vec): (&Index, u32)) -> bool {
        let same = |l: &&super::LoopCtx| l.kind == g.kind && l.extent == g.extent && l.stride == g.stride;
        let Some(reader) = self.loops.iter().find(same) else { return false };
        let mine = Index::var(reader.var);
        let own = |w: &TempWrite| w.vec == vec && w.at.subst(g.var, &mine, &self.ranges) == *flat;
        !g.writes.is_empty()
            && (g.writes.iter().all(own)
                || g.writes.iter().all(|w| self.reads_same_element(w, flat, vec))
                || self.reads_own_block(g, reader.var, flat, vec)
                || self.reads_own_nested_block(g, (flat, vec), false))
    }

    /// [`Lower::reads_own_block`] for a nest of parallel loops: every parallel loop around the
    /// writes that identifies the writer has a reading loop that hands out its indices alike,
    /// and in the reading loops' variables the writer wrote the whole block `p .. p + c`
    /// (every write is `p + u`, `u` in `0..c`, one write's `u` running over all of `0..c`),
    /// where `p`, the part of the index in the writer's parallel variables, gives each writer a
    /// block of its own (the block and those variables' strides are a mixed-radix number); the
    /// read is `p + v` with `v .. v + vec` in `0..c`, in any order.
    ///
    /// The writer is a thread (`by_group` false: every parallel loop identifies it, `u` runs
    /// over its own sequential loops; the blocks of register accumulators one thread of a 2-D
    /// grid wrote, read back to apply an epilogue), or a work group (`by_group`: its work-group
    /// loops identify it, `u` runs over its local threads' ids too, and the read needs the
    /// barrier after the writing `mapLcl` loop; a tile read back transposed).
    fn reads_own_nested_block(&self, g: &GridWrite, (flat, vec): (&Index, u32), by_group: bool) -> bool {
        let identifies = |k: LoopKind| !by_group || matches!(k, LoopKind::Group(_));
        let ids = |w: &TempWrite| w.par.iter().copied().filter(|p| identifies(p.0)).collect::<Vec<_>>();
        let shape = |w: &TempWrite| ids(w).iter().map(|p| (p.0, p.1, p.2)).collect::<Vec<_>>();
        let Some(first) = g.writes.first() else { return false };
        let mut subst = BTreeMap::new();
        for (kind, extent, stride, var) in ids(first) {
            let same = |l: &&super::LoopCtx| l.kind == kind && l.extent == extent && l.stride == stride;
            let Some(reader) = self.loops.iter().find(same) else { return false };
            subst.insert(var, reader.var);
        }
        if subst.is_empty() {
            return false;
        }
        let readers: BTreeSet<VarId> = subst.values().copied().collect();
        // An index as its part in the reading loops' variables and the rest.
        let parallel = |e: &Index| -> (Index, Index) {
            let (p, u) = e.terms.iter().cloned().partition(|(a, _)| matches!(a, Atom::Var(v) if readers.contains(v)));
            (Index { terms: p, constant: 0 }, Index { terms: u, constant: e.constant })
        };
        let (p, v) = parallel(flat);
        let mut blocks = Vec::new();
        for w in &g.writes {
            // The writer's own variables: its sequential loops, and a group's local ids.
            let mut own = w.own.clone();
            if by_group {
                own.extend(w.par.iter().filter(|p| matches!(p.0, LoopKind::Local(_))).map(|p| p.3));
            }
            let at = w.at.rebuild(&|x| subst.get(&x).map(|r| Index::var(*r)), &self.ranges);
            let (pw, u) = parallel(&at);
            let mine = u.terms.iter().all(|(a, _)| matches!(a, Atom::Var(x) if own.contains(x)));
            if shape(w) != shape(first) || pw != p || !mine {
                return false;
            }
            blocks.push((u, TempWrite { at: w.at.clone(), vec: w.vec, own, par: Vec::new() }));
        }
        let Some(c) = blocks.iter().find_map(|(u, w)| self.block_extent(u, w)) else { return false };
        let within = |u: &Index, width: u32| {
            let (lo, hi) = self.ranges.of(u);
            lo >= 0 && hi + i64::from(width) <= c
        };
        within(&v, vec) && blocks.iter().all(|(u, w)| within(u, w.vec)) && self.disjoint_blocks(&p, c)
    }

    /// The extent `c` of the block `u` (with the write's vector lanes) covers, when it takes
    /// every value of `0..c` exactly once over the write's own sequential loops ([`Lower::covers`]).
    fn block_extent(&self, u: &Index, w: &TempWrite) -> Option<i64> {
        let c = u.terms.iter().try_fold(i64::from(w.vec), |acc, (a, _)| {
            let (lo, hi) = self.ranges.atom(a);
            (lo == 0).then(|| acc.saturating_mul(hi + 1))
        })?;
        self.covers(u, w, c).then_some(c)
    }

    /// The parallel part `p` of an index gives each thread its own block of `c`: with the block
    /// as the lowest digit, `p`'s variables are the next digits of a mixed-radix number.
    fn disjoint_blocks(&self, p: &Index, c: i64) -> bool {
        let mut digits: Vec<(i64, i64)> = p.terms.iter().map(|(a, k)| (*k, self.ranges.atom(a).1 + 1)).collect();
        digits.sort_unstable();
        let mut next = c;
        for (coef, extent) in digits {
            if coef != next {
                return false;
            }
            next = coef.saturating_mul(extent);
        }
        p.constant == 0
    }

    /// The read is of the element `w` wrote, by the same thread: every parallel loop around
    /// the write has a reading loop that hands out its indices alike (a nest of `mapGlb` or of
    /// `mapWrg`/`mapLcl` written and read in the same shape), and the write's index in the
    /// reading loops' variables is the read's.
    fn reads_same_element(&self, w: &TempWrite, flat: &Index, vec: u32) -> bool {
        let mut subst = BTreeMap::new();
        for &(kind, extent, stride, var) in &w.par {
            let same = |l: &&super::LoopCtx| l.kind == kind && l.extent == extent && l.stride == stride;
            let Some(reader) = self.loops.iter().find(same) else { return false };
            subst.insert(var, Index::var(reader.var));
        }
        !w.par.is_empty() && w.vec == vec && w.at.rebuild(&|v| subst.get(&v).cloned(), &self.ranges) == *flat
    }

    /// A `mapGlb` thread wrote, for its index `i`, the whole block `c*i .. c*i + c` and nothing
    /// else (every write is `c*i + u`, `u` in `0..c`, and one write's `u` runs over all of
    /// `0..c` in the thread's own sequential loops), and the read, in the reading loop's
    /// variable `i`, is `c*i + v` with `v .. v + vec` in `0..c`: a row written by one thread and
    /// then read (reduced, or its neighbours within the row) by the same thread.
    fn reads_own_block(&self, g: &GridWrite, reader: VarId, flat: &Index, vec: u32) -> bool {
        if !matches!(g.kind, LoopKind::Global(_)) {
            return false;
        }
        let Some((c, v)) = split_var(flat, reader) else { return false };
        let within = |u: &Index, width: u32| {
            let (lo, hi) = self.ranges.of(u);
            c > 0 && lo >= 0 && hi + i64::from(width) <= c
        };
        let blocks: Option<Vec<(Index, &TempWrite)>> = g
            .writes
            .iter()
            .map(|w| split_var(&w.at, g.var).filter(|(cw, u)| *cw == c && within(u, w.vec)).map(|(_, u)| (u, w)))
            .collect();
        let Some(blocks) = blocks else { return false };
        within(&v, vec) && blocks.iter().any(|(u, w)| self.covers(u, w, c))
    }

    /// `u` (with the write's vector lanes) takes every value of `0..c` exactly once over the
    /// write's own sequential loops: a mixed-radix number of them, or, for a block of at most
    /// [`ENUMERATED_BLOCK`] elements, any index of them that does, counted one by one (a
    /// block written transposed: `x / 4 + (x % 4) * 4`, a tile of a tile).
    fn covers(&self, u: &Index, w: &TempWrite, c: i64) -> bool {
        let mut digits = vec![(1i64, i64::from(w.vec))];
        for (a, coef) in &u.terms {
            let Atom::Var(x) = a else { return self.covers_counted(u, w, c) };
            let (lo, hi) = self.ranges.atom(a);
            if !w.own.contains(x) || lo != 0 {
                return false;
            }
            digits.push((*coef, hi + 1));
        }
        digits.sort_unstable();
        let mut next = 1i64;
        for (coef, extent) in digits {
            if coef != next {
                return false;
            }
            next = coef.saturating_mul(extent);
        }
        u.constant == 0 && next == c
    }

    /// [`Lower::covers`] by counting: every value of the write's own loop variables in `u`
    /// (each over `0..n`), the lanes `u .. u + vec` of each, hit every element of `0..c` once.
    fn covers_counted(&self, u: &Index, w: &TempWrite, c: i64) -> bool {
        let mut vars = BTreeSet::new();
        u.vars(&mut vars);
        let extents: Option<Vec<(VarId, i64)>> = vars
            .iter()
            .map(|x| match self.ranges.get(*x) {
                Some((0, hi)) if w.own.contains(x) => Some((*x, hi + 1)),
                _ => None,
            })
            .collect();
        let Some(extents) = extents else { return false };
        let count = extents.iter().try_fold(i64::from(w.vec), |n, (_, e)| n.checked_mul(*e));
        if count != Some(c) || c > ENUMERATED_BLOCK {
            return false;
        }
        let mut hit = vec![false; c as usize];
        let mut values: BTreeMap<VarId, i64> = extents.iter().map(|(x, _)| (*x, 0)).collect();
        loop {
            let at = u.eval(&|x| values.get(&x).copied().unwrap_or(0));
            for lane in 0..i64::from(w.vec) {
                match usize::try_from(at + lane).ok().and_then(|i| hit.get_mut(i)) {
                    Some(h) if !*h => *h = true,
                    _ => return false,
                }
            }
            // The next values, as a mixed-radix counter; done when it wraps around.
            let mut carry = true;
            for (x, e) in &extents {
                let v = values.get_mut(x).expect("a variable of u");
                *v += 1;
                if *v < *e {
                    carry = false;
                    break;
                }
                *v = 0;
            }
            if carry {
                return true;
            }
        }
    }

    /// A write of buffer `b` at `(flat index, vector width)`, remembered for global temporaries
    /// (see [`GridWrite`]). A write of a global temporary that the threads of some launched
    /// dimension all make (no parallel loop of that dimension around it) is refused: they would
    /// all write the same elements at once, a data race.
    pub(super) fn on_write(&mut self, b: BufId, (flat, vec): (&Index, u32)) -> R<()> {
        let buf = &self.bufs[b.0];
        if buf.role == Role::Temp && buf.space == Space::Global {
            if let Some(d) = self.redundant_dimension() {
                let writer = self.loops.last().map_or("a sequential map".to_string(), |l| l.origin.clone());
                return Err(K::RacyWrite { writer, buffer: buf.name.clone(), dim: d }.into());
            }
            let own =
                self.loops.iter().filter(|l| matches!(l.kind, LoopKind::Seq | LoopKind::Vec)).map(|l| l.var).collect();
            let par = self
                .loops
                .iter()
                .filter(|l| !matches!(l.kind, LoopKind::Seq | LoopKind::Vec))
                .map(|l| (l.kind, l.extent, l.stride, l.var))
                .collect();
            self.temp_writes.entry(b).or_default().push(TempWrite { at: flat.clone(), vec, own, par });
        }
        Ok(())
    }

    /// A dimension of the launch whose threads all run the current code alike: more than one
    /// thread in it, and no loop around that hands out its global ids, or its group ids (when
    /// there are several groups) and its local ids (when there are several work items).
    fn redundant_dimension(&self) -> Option<u8> {
        let has = |k: LoopKind| self.loops.iter().any(|l| l.kind == k);
        (0..3u8).find(|&d| {
            let (global, local) = (self.launch.global[d as usize], self.launch.local[d as usize]);
            let groups = global / local.max(1);
            let spread = has(LoopKind::Global(d))
                || ((groups <= 1 || has(LoopKind::Group(d))) && (local <= 1 || has(LoopKind::Local(d))));
            global > 1 && !spread
        })
    }

    /// Work-group loops that run again reuse local memory other threads may still read: the
    /// loop `ctx` (just closed, its body `body`) ends with a barrier when a barrier its own body
    /// needs (a slot opened after `slots_before` and read inside it) shows that it communicates.
    /// Reading, inside the loop, what was written before it needs no barrier at its end.
    pub(super) fn iteration_barrier(
        &self,
        ctx: &super::LoopCtx,
        body: &mut Vec<Stmt>,
        slots_before: usize,
        span: Option<Span>,
    ) -> R<()> {
        let slots_after = self.slots.iter().skip(slots_before).any(|s| s.active);
        let in_group =
            self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_))) || matches!(ctx.kind, LoopKind::Group(_));
        let in_lcl = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Local(_)));
        if slots_after && in_group && !in_lcl && ctx.trips == Trips::Loop && ctx.extent > 1 {
            if let Some(reason) = self.divergence() {
                return Err(CodegenError::new(
                    K::DivergentBarrier { map: ctx.origin.clone(), loop_: reason.0, reason: reason.1 },
                    span,
                ));
            }
            body.push(Stmt::Barrier {
                global: false,
                reason: format!("before the next iteration of {} overwrites shared memory", ctx.origin),
            });
        }
        Ok(())
    }

    /// After a parallel loop (`kind`, from `origin`): shared buffers its threads wrote,
    /// allocated outside it, are read by other threads next. After a `mapLcl` a slot is left for
    /// a barrier (needed if a read follows); after a `mapGlb` or `mapWrg` nothing can
    /// synchronize, so a later read of a temporary is refused. `outer` is what the enclosing
    /// parallel loop had written before this one.
    pub(super) fn after_parallel_loop(&mut self, l: ParallelLoop, outer: BTreeSet<BufId>) {
        let ParallelLoop { kind, origin, .. } = l;
        let inner = std::mem::replace(&mut self.written, outer);
        let depth = self.loops.len();
        for b in inner {
            if self.alloc_depth[b.0] > depth {
                continue; // allocated per iteration: private to the thread or group
            }
            self.written.insert(b);
            match kind {
                LoopKind::Local(_) => {
                    let global = self.bufs[b.0].space == Space::Global;
                    let slot = SlotId(self.slots.len());
                    self.slots.push(Slot {
                        writer: origin.to_string(),
                        global,
                        divergent: self.divergence(),
                        active: false,
                    });
                    self.emit(Stmt::BarrierSlot(slot));
                    self.dirty.insert(b, Dirty::Slot(slot));
                }
                LoopKind::Global(_) | LoopKind::Group(_) if self.bufs[b.0].role == Role::Temp => {
                    let mut writes = self.temp_writes.remove(&b).unwrap_or_default();
                    // The writes of a nest were handed to its inner parallel loop's record; a
                    // mapLcl inside left a barrier slot.
                    let slot = match self.dirty.remove(&b) {
                        Some(Dirty::Grid(inner)) => {
                            writes.extend(inner.writes);
                            inner.slot
                        }
                        Some(Dirty::Slot(s)) => Some(s),
                        None => None,
                    };
                    let (writer, extent, stride, var) = (origin.to_string(), l.extent, l.stride, l.var);
                    self.dirty.insert(b, Dirty::Grid(GridWrite { writer, kind, extent, stride, var, writes, slot }));
                }
                _ => {}
            }
        }
    }

    /// Turns barrier slots into barriers where a read needed them, and drops the others.
    pub(super) fn finish_slots(&self, body: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in body {
            match s {
                Stmt::BarrierSlot(slot) => {
                    if let Some(slot) = self.slots.get(slot.0).filter(|s| s.active) {
                        out.push(Stmt::Barrier {
                            global: slot.global,
                            reason: format!("other threads read what {} wrote", slot.writer),
                        });
                    }
                }
                Stmt::Loop { var, kind, extent, stride, trips, origin, body } => {
                    out.push(Stmt::Loop { var, kind, extent, stride, trips, origin, body: self.finish_slots(body) })
                }
                Stmt::Block(b) => out.push(Stmt::Block(self.finish_slots(b))),
                s => out.push(s),
            }
        }
        out
    }
}

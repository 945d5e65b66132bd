//! Barriers: after the outermost `mapLcl` loop that wrote a local (or global temporary) buffer,
//! a slot is left; the first later read of that buffer turns the slot into a barrier
//! ([`Lower::finish_slots`]). Loops of a work group that run more than once and communicate
//! through local memory end with a barrier too (the next iteration overwrites what slower
//! threads may still read). A barrier inside a loop whose trip count differs between the
//! threads of a work group is refused, and so is communication between work groups (a buffer
//! written by a `mapGlb` or `mapWrg` and read again in the same kernel).

use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::kir::*;
use mapsat_ir::ast::Span;
use std::collections::BTreeSet;

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
    /// All threads of the grid (refused): the named map wrote it.
    Grid(String),
}

impl Lower<'_> {
    /// The first enclosing loop whose trip count differs between threads of a work group.
    pub(super) fn divergence(&self) -> Option<(String, String)> {
        self.loops.iter().find_map(|l| l.divergent.as_ref().map(|r| (l.origin.clone(), r.clone())))
    }

    /// A read of buffer `b`: the barrier its last writer left a slot for becomes needed.
    pub(super) fn on_read(&mut self, b: BufId) -> R<()> {
        match self.dirty.remove(&b) {
            Some(Dirty::Slot(s)) => {
                let slot = &mut self.slots[s.0];
                if let Some((loop_, reason)) = &slot.divergent {
                    return Err(K::DivergentBarrier {
                        map: slot.writer.clone(),
                        loop_: loop_.clone(),
                        reason: reason.clone(),
                    }
                    .into());
                }
                slot.active = true;
                // One barrier serves every buffer the same loop wrote.
                self.dirty.retain(|_, d| !matches!(d, Dirty::Slot(x) if *x == s));
                Ok(())
            }
            Some(Dirty::Grid(writer)) => Err(K::GridSync { writer }.into()),
            None => Ok(()),
        }
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
    pub(super) fn after_parallel_loop(&mut self, kind: LoopKind, origin: &str, outer: BTreeSet<BufId>) {
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
                    self.dirty.insert(b, Dirty::Grid(origin.to_string()));
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

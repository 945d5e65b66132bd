//! Index width: whether a kernel's index arithmetic can leave 32 bits.
//!
//! Indices, loop variables and thread ids are printed as `int` when every value they can take
//! fits in 32 bits, which is the fast case on GPUs, and as 64-bit integers (`long` in OpenCL,
//! `long long` in CUDA) otherwise. A kernel needs 64 bits when a buffer holds more than
//! 2^31 − 1 scalars, a loop's or the launch's extent (plus a stride) exceeds it, or an index
//! expression (or one of its parts: a quotient, a remainder, a clamp, a `pad` bound) can, given
//! the ranges of the loop variables. The checker bounds every value at 2^62 bytes
//! ([`mapsat_ir::bounds`]), so 64 bits always suffice.

use crate::index::{Atom, Index, Ranges};
use crate::kir::{Expr, Kernel, Place, Stmt};

const MAX: i64 = i32::MAX as i64;

/// True when some index of `k` can exceed the range of a 32-bit `int`.
pub fn needs_64bit_indices(k: &Kernel) -> bool {
    let large = |v: i64| v.unsigned_abs() > MAX as u64;
    if k.buffers.iter().any(|b| large(b.elems().saturating_mul(i64::from(b.width))))
        || k.launch.global.iter().chain(&k.launch.local).any(|&g| large(g))
    {
        return true;
    }
    let mut w = Walk { ranges: Ranges::default(), wide: false };
    w.stmts(&k.body);
    w.wide
}

struct Walk {
    ranges: Ranges,
    wide: bool,
}

impl Walk {
    fn stmts(&mut self, ss: &[Stmt]) {
        for s in ss {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Decl(_, Some(e)) => self.expr(e),
            Stmt::Store(p, e) => {
                self.place(p);
                self.expr(e);
            }
            Stmt::Loop { var, extent, stride, body, .. } => {
                // The variable itself reaches extent - 1 + stride (its last increment, or a
                // thread id beyond the extent that skips the body); in the body it is below
                // the extent.
                if extent.saturating_add(*stride).saturating_sub(1) > MAX {
                    self.wide = true;
                }
                self.ranges.set(*var, 0, extent.saturating_sub(1).max(0));
                self.stmts(body);
            }
            Stmt::Block(b) => self.stmts(b),
            Stmt::Decl(_, None) | Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. } => {}
        }
    }

    fn place(&mut self, p: &Place) {
        self.index(&p.index);
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Lit(_) | Expr::Splat(..) => {}
            Expr::Int(i) => self.index(i),
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
            Expr::InRange(i, lo, hi) => {
                self.index(i);
                for b in [*lo, *hi] {
                    if b != i64::MIN && b != i64::MAX && b.unsigned_abs() > MAX as u64 {
                        self.wide = true;
                    }
                }
            }
        }
    }

    /// Marks the kernel wide when the index, any partial sum of it or any part can leave 32 bits.
    fn index(&mut self, i: &Index) {
        let (lo, hi) = self.ranges.of(i);
        let mut wide = lo < -MAX - 1 || hi > MAX || i.constant.unsigned_abs() > MAX as u64;
        for (a, c) in &i.terms {
            let (alo, ahi) = self.ranges.atom(a);
            let big = |x: i64| x.saturating_mul(*c).unsigned_abs() > MAX as u64;
            wide |= big(alo) || big(ahi) || c.unsigned_abs() > MAX as u64;
            match a {
                Atom::Var(_) => {}
                Atom::Div(e, m) | Atom::Rem(e, m) => {
                    wide |= m.unsigned_abs() > MAX as u64;
                    self.index(e);
                }
                Atom::Clamp(e, lo, hi) => {
                    wide |= lo.unsigned_abs() > MAX as u64 || hi.unsigned_abs() > MAX as u64;
                    self.index(e);
                }
            }
        }
        self.wide |= wide;
    }
}

//! Index width: which loop variables and which parts of the index expressions are computed in
//! 64 bits.
//!
//! 32-bit `int` arithmetic is the fast case on GPUs, so everything is `int` unless a value can
//! exceed the range of an `int`; then exactly that value is computed in 64 bits (`long` in
//! OpenCL, `long long` in CUDA):
//!
//! - a **loop variable** (or thread id) is declared 64-bit when its own range needs it: it
//!   reaches its extent - 1 plus its stride (its last increment, or a thread id beyond the
//!   extent that skips the body);
//! - in an **index expression**, a term `a * c` whose product can leave 32 bits, given the
//!   ranges of the loop variables, has its atom converted first ([`Atom::Wide`]: `(long)a * c`,
//!   since C multiplies two `int`s in 32 bits before any assignment could widen the result);
//!   when a sum of terms can (C adds them left to right, in [`Index::print_order`]), the first
//!   term is converted, which makes every addition after it 64-bit; the parts of a quotient, a
//!   remainder or a clamp follow the same rules, and a clamp whose bounds do not fit an `int`
//!   gets a 64-bit operand (`clamp` takes operands of one type).
//!
//! So a `[50000][50000]` array mapped 2-D keeps `int` row and column ids and computes only
//! `(long)row * 50000 + col` in 64 bits. The checker bounds every value at 2^62 bytes
//! ([`mapsat_ir::bounds`]), so 64 bits always suffice. The verifier checks the result
//! independently ([`crate::verify`]: no `int` part of an index can leave 32 bits).

use crate::index::{fits_int, fits_int_range, Atom, Index, Ranges};
use crate::kir::{Kernel, Stmt, VarId};
use crate::visit::{walk_stmt, Visit, VisitMut};
use std::collections::BTreeSet;

/// Decides the width of every loop variable ([`Kernel::wide_vars`]) and widens the index
/// expressions of `k` where a value can leave 32 bits. Run once, after the clean-up passes
/// (simplification drops the widening marks).
pub fn assign(k: &mut Kernel) {
    let mut loops = Loops::default();
    loops.visit_stmts(&k.body);
    let mut w = Widen { ranges: loops.ranges, wide: loops.wide, names: k.vars.clone() };
    w.visit_stmts_mut(&mut k.body);
    k.wide_vars = w.wide;
}

/// The range of each loop variable in its body, and the variables whose own values need 64 bits.
#[derive(Default)]
struct Loops {
    ranges: Ranges,
    wide: BTreeSet<VarId>,
}

impl Visit for Loops {
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Loop { var, extent, stride, .. } = s {
            if !fits_int(extent.saturating_add(*stride).saturating_sub(1)) {
                self.wide.insert(*var);
            }
            // A variable bound by several loops (never nested) takes the widest range.
            let hi = extent.saturating_sub(1).max(0);
            let hi = self.ranges.get(*var).map_or(hi, |(_, h)| h.max(hi));
            self.ranges.set(*var, 0, hi);
        }
        walk_stmt(self, s);
    }
}

/// The widening of indices, with the ranges, widths and names of the kernel's variables.
struct Widen {
    ranges: Ranges,
    wide: BTreeSet<VarId>,
    names: Vec<String>,
}

impl VisitMut for Widen {
    fn visit_index_mut(&mut self, i: &mut Index) {
        *i = self.index(i);
    }
}

impl Widen {
    fn is_wide(&self, v: VarId) -> bool {
        self.wide.contains(&v)
    }

    /// `i` with its terms widened where a product or a partial sum can leave 32 bits.
    fn index(&self, i: &Index) -> Index {
        let terms = i.terms.iter().map(|(a, c)| (self.term(a, *c), *c)).collect();
        let mut out = Index { terms, constant: i.constant };
        if self.sum_overflows(&out) {
            self.widen_first(&mut out);
        }
        out
    }

    /// Atom `a` with its parts widened, itself converted when `a * c` can leave 32 bits.
    fn term(&self, a: &Atom, c: i64) -> Atom {
        let a = match a {
            Atom::Var(_) | Atom::Wide(_) => a.clone(),
            Atom::Div(e, m) => Atom::Div(Box::new(self.index(e)), *m),
            Atom::Rem(e, m) => Atom::Rem(Box::new(self.index(e)), *m),
            Atom::Clamp(e, lo, hi) => {
                let mut e = self.index(e);
                if !fits_int_range(*lo, *hi) && !e.is_long(&|v| self.is_wide(v)) {
                    self.widen_first(&mut e);
                }
                Atom::Clamp(Box::new(e), *lo, *hi)
            }
        };
        let (lo, hi) = self.ranges.atom(&a);
        let fits = fits_int(c) && fits_int(lo.saturating_mul(c)) && fits_int(hi.saturating_mul(c));
        if fits || a.is_long(&|v| self.is_wide(v)) {
            a
        } else {
            Atom::Wide(Box::new(a))
        }
    }

    /// True when a sum C computes in 32 bits (the first terms, in print order, all `int`) can
    /// leave them: after the second term, a later one, or the constant.
    fn sum_overflows(&self, i: &Index) -> bool {
        let wide = |v| self.is_wide(v);
        let (mut lo, mut hi, mut long) = (0i64, 0i64, false);
        let order = i.print_order(&self.names);
        let constant = (!order.is_empty() && i.constant != 0).then_some((None, i.constant));
        let parts = order.iter().map(|(a, c)| (Some(a), *c)).chain(constant);
        for (n, (a, c)) in parts.enumerate() {
            let (x, y) = match a {
                Some(a) => {
                    long |= a.is_long(&wide);
                    let (alo, ahi) = self.ranges.atom(a);
                    (alo.saturating_mul(c), ahi.saturating_mul(c))
                }
                None => {
                    long |= !fits_int(c);
                    (c, c)
                }
            };
            lo = lo.saturating_add(x.min(y));
            hi = hi.saturating_add(x.max(y));
            if n > 0 && !long && !fits_int_range(lo, hi) {
                return true;
            }
        }
        false
    }

    /// Converts the first term C computes (if not 64-bit already), so that the sum is 64-bit.
    fn widen_first(&self, i: &mut Index) {
        let Some(first) = i.print_order(&self.names).first().map(|(a, _)| a.clone()) else { return };
        if first.is_long(&|v| self.is_wide(v)) {
            return;
        }
        if let Some(t) = i.terms.iter_mut().find(|(a, _)| *a == first) {
            t.0 = Atom::Wide(Box::new(first));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Spelling;
    use crate::kir::{LoopKind, Trips};

    const ROW: VarId = VarId(0);
    const COL: VarId = VarId(1);

    fn names() -> Vec<String> {
        vec!["row".into(), "col".into()]
    }

    /// A widener for `row` in `0..rows`, `col` in `0..cols`, both 32-bit.
    fn widen(rows: i64, cols: i64) -> Widen {
        let mut ranges = Ranges::default();
        ranges.set(ROW, 0, rows - 1);
        ranges.set(COL, 0, cols - 1);
        Widen { ranges, wide: BTreeSet::new(), names: names() }
    }

    fn show(i: &Index) -> String {
        i.render(&Spelling::plain(&names()))
    }

    fn flat(cols: i64) -> Index {
        Index::var(ROW).scale(cols).add(&Index::var(COL))
    }

    #[test]
    fn only_the_product_that_overflows_is_widened() {
        assert_eq!(show(&widen(50_000, 50_000).index(&flat(50_000))), "(long)row * 50000 + col");
        assert_eq!(show(&widen(1000, 1000).index(&flat(1000))), "row * 1000 + col");
    }

    #[test]
    fn a_sum_that_overflows_widens_its_first_term() {
        // Each term fits, their sum does not: the first term printed is converted.
        let w = widen(1 << 30, 1 << 30);
        assert_eq!(show(&w.index(&Index::var(ROW).scale(2).add(&Index::var(COL)))), "(long)row * 2 + col");
        assert_eq!(
            show(&w.index(&Index::var(ROW).add(&Index::var(COL)).plus(1 << 30))),
            "(long)col + row + 1073741824"
        );
    }

    #[test]
    fn parts_of_quotients_and_clamps_are_widened() {
        let w = widen(50_000, 50_000);
        let big = flat(50_000);
        let q = Index { terms: vec![(Atom::Div(Box::new(big.clone()), 7), 1)], constant: 0 };
        assert_eq!(show(&w.index(&q)), "((long)row * 50000 + col) / 7");
        // Bounds beyond 32 bits make the clamped operand 64-bit.
        let c = Index { terms: vec![(Atom::Clamp(Box::new(Index::var(COL)), 0, 1 << 40), 1)], constant: 0 };
        assert_eq!(show(&w.index(&c)), "clamp((long)col, 0, 1099511627776)");
        // A quotient that fits, scaled beyond 32 bits, is converted as a whole.
        let q = Index { terms: vec![(Atom::Div(Box::new(Index::var(COL)), 2), 1 << 20)], constant: 0 };
        assert_eq!(show(&w.index(&q)), "(long)(col / 2) * 1048576");
    }

    /// The value of `i` as C computes it, term by term in print order, or `None` when a part
    /// computed as an `int` overflows (`row`, `col` 32-bit).
    fn c_value(i: &Index, env: &[i64; 2]) -> Option<(i64, bool)> {
        let mut acc: Option<(i64, bool)> = None;
        let names = names();
        let parts = i.print_order(&names).into_iter().map(|(a, c)| (Some(a), *c));
        let constant = (i.constant != 0 || i.terms.is_empty()).then_some((None, i.constant));
        for (a, c) in parts.chain(constant) {
            let term = match a {
                Some(a) => {
                    let (x, long) = c_atom(a, env)?;
                    c_op(x.checked_mul(c)?, long || !fits_int(c))?
                }
                None => (c, !fits_int(c)),
            };
            acc = Some(match acc {
                None => term,
                Some((s, long)) => c_op(s.checked_add(term.0)?, long || term.1)?,
            });
        }
        acc
    }

    /// A result of C type `long` (true) or `int`, `None` when an `int` overflows.
    fn c_op(x: i64, long: bool) -> Option<(i64, bool)> {
        (long || fits_int(x)).then_some((x, long))
    }

    fn c_atom(a: &Atom, env: &[i64; 2]) -> Option<(i64, bool)> {
        match a {
            Atom::Var(v) => Some((env[v.index()], false)),
            Atom::Div(e, m) => c_value(e, env).and_then(|(x, long)| c_op(x / m, long || !fits_int(*m))),
            Atom::Rem(e, m) => c_value(e, env).and_then(|(x, long)| c_op(x % m, long || !fits_int(*m))),
            Atom::Clamp(e, lo, hi) => c_value(e, env).map(|(x, long)| (x.clamp(*lo, *hi), long)),
            Atom::Wide(a) => c_atom(a, env).map(|(x, _)| (x, true)),
        }
    }

    /// An index of the shapes views build: scaled variables, a quotient or remainder of a
    /// scaled sum, a clamp, with coefficients and constants up to 2^20 (products up to 2^40).
    fn index() -> impl proptest::strategy::Strategy<Value = Index> {
        use proptest::prelude::*;
        let coef = (0u32..=20, any::<u32>()).prop_map(|(b, r)| 1 + (i64::from(r) % (1i64 << b)));
        let var = prop_oneof![Just(ROW), Just(COL)].prop_map(Index::var);
        let lin = (var.clone(), coef.clone(), var, coef.clone(), coef.clone())
            .prop_map(|(a, x, b, y, k)| a.scale(x).add(&b.scale(y)).plus(k));
        let atom = prop_oneof![
            lin.clone().prop_map(|i| i),
            (lin.clone(), coef.clone())
                .prop_map(|(i, m)| Index { terms: vec![(Atom::Div(Box::new(i), m + 1), 1)], constant: 0 }),
            (lin.clone(), coef.clone())
                .prop_map(|(i, m)| Index { terms: vec![(Atom::Rem(Box::new(i), m + 1), 1)], constant: 0 }),
            (lin, coef.clone())
                .prop_map(|(i, hi)| Index { terms: vec![(Atom::Clamp(Box::new(i), 0, hi), 1)], constant: 0 }),
        ];
        (atom.clone(), coef.clone(), atom, coef, -1000i64..1000)
            .prop_map(|(a, x, b, y, k)| a.scale(x).add(&b.scale(y)).plus(k))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Widened, C computes the index without an `int` overflow and with its exact value,
        /// at the corners of the ranges and at points inside (values below 2^62: the checker's
        /// bound on what an index can reach).
        #[test]
        fn widened_indices_never_overflow(i in index(), rows in 1i64..(1 << 31), cols in 1i64..(1 << 31), p in 0.0f64..1.0) {
            let w = widen(rows, cols);
            let wide = w.index(&i);
            let inside = [(rows as f64 * p) as i64 % rows, (cols as f64 * p) as i64 % cols];
            for env in [[0, 0], [rows - 1, cols - 1], [0, cols - 1], [rows - 1, 0], inside] {
                let exact = i.eval(&|v| env[v.index()]);
                let (lo, hi) = w.ranges.of(&i);
                if lo.unsigned_abs() >= 1 << 62 || hi.unsigned_abs() >= 1 << 62 {
                    continue;
                }
                let c = c_value(&wide, &env);
                proptest::prop_assert_eq!(c.map(|c| c.0), Some(exact), "{} at {:?}", show(&wide), env);
            }
        }
    }

    #[test]
    fn variables_are_wide_only_when_their_own_range_needs_it() {
        let lp = |var, extent, stride, body| Stmt::Loop {
            var,
            kind: LoopKind::Global(0),
            extent,
            stride,
            trips: if stride >= extent { Trips::AtMostOne } else { Trips::Loop },
            origin: String::new(),
            body,
        };
        let mut l = Loops::default();
        l.visit_stmts(&[lp(ROW, 50_000, 50_000, vec![lp(COL, i32::MAX as i64, 2, vec![])])]);
        assert_eq!(l.wide.into_iter().collect::<Vec<_>>(), [COL]);
        assert_eq!(l.ranges.get(ROW), Some((0, 49_999)));
    }
}

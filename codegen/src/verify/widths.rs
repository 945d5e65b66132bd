//! The verifier's check of index widths, run once [`crate::width`] has chosen them: C's typing
//! rules restated over the kernel IR as it is printed, and every part that C computes as a
//! 32-bit `int` bounded with the ranges of the enclosing loops.
//!
//! An `int` is a loop variable not in [`Kernel::wide_vars`], a product of `int` operands, a
//! sum (left to right, in [`Index::print_order`]) of `int` terms and an `int` constant, a
//! quotient, remainder or clamp of an `int` operand by `int` constants; a conversion
//! ([`Atom::Wide`]), a 64-bit variable or a literal beyond 32 bits makes the part that contains
//! it 64-bit. A loop variable of type `int` must hold its extent - 1 plus its stride.

use super::{VerifierError, VerifierErrors};
use crate::index::{fits_int, fits_int_range, Atom, Index, Ranges, Spelling};
use crate::kir::{Kernel, Stmt};
use crate::visit::{walk_stmt, Visit};

/// Checks that no `int` variable or `int` part of an index of `k` can leave 32 bits.
pub fn verify_widths(k: &Kernel) -> Result<(), VerifierErrors> {
    let mut c = Check { k, ranges: Ranges::default(), path: vec!["body".into()], errors: Vec::new() };
    c.visit_stmts(&k.body);
    if c.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifierErrors(c.errors))
    }
}

struct Check<'k> {
    k: &'k Kernel,
    ranges: Ranges,
    /// The enclosing loops.
    path: Vec<String>,
    errors: Vec<VerifierError>,
}

/// The first part of an index that C computes in 32 bits and can leave them.
type Overflow = String;

impl Visit for Check<'_> {
    fn visit_stmt(&mut self, s: &Stmt) {
        let Stmt::Loop { var, extent, stride, origin, .. } = s else {
            return walk_stmt(self, s);
        };
        let name = self.k.var_name(*var).into_owned();
        let top = extent.saturating_add(*stride).saturating_sub(1);
        if !self.k.wide_vars.contains(var) && !fits_int(top) {
            self.error(format!("the int variable `{name}` reaches {top} (extent {extent}, stride {stride})"));
        }
        self.path.push(format!("loop {name} ({origin})"));
        self.ranges.set(*var, 0, extent.saturating_sub(1));
        walk_stmt(self, s);
        self.path.pop();
    }

    fn visit_index(&mut self, i: &Index) {
        if let Err(part) = self.index(i) {
            let shown = i.render(&Spelling::plain(&self.k.vars));
            self.error(format!("in the index {shown}, {part} is an int that can exceed 32 bits"));
        }
    }
}

impl Check<'_> {
    fn error(&mut self, message: String) {
        self.errors.push(VerifierError { location: self.path.join(" / "), message });
    }

    fn show(&self, a: &Atom) -> String {
        Index { terms: vec![(a.clone(), 1)], constant: 0 }.render(&Spelling::plain(&self.k.vars))
    }

    /// Whether C computes `i` in 64 bits, or the `int` part that can overflow.
    fn index(&self, i: &Index) -> Result<bool, Overflow> {
        let (mut lo, mut hi, mut long) = (0i64, 0i64, false);
        let order = i.print_order(&self.k.vars);
        for (n, (a, c)) in order.iter().enumerate() {
            let atom_long = self.atom(a)?;
            let (alo, ahi) = self.ranges.atom(a);
            let (x, y) = (alo.saturating_mul(*c), ahi.saturating_mul(*c));
            if !atom_long && fits_int(*c) && !fits_int_range(x, y) {
                return Err(format!("the product {} * {c}", self.show(a)));
            }
            long |= atom_long || !fits_int(*c);
            lo = lo.saturating_add(x.min(y));
            hi = hi.saturating_add(x.max(y));
            if n > 0 && !long && !fits_int_range(lo, hi) {
                return Err(format!("the sum of its first {} terms", n + 1));
            }
        }
        long |= !fits_int(i.constant);
        let (lo, hi) = (lo.saturating_add(i.constant), hi.saturating_add(i.constant));
        if !order.is_empty() && !long && !fits_int_range(lo, hi) {
            return Err("the sum with its constant".into());
        }
        Ok(long)
    }

    /// Whether C computes `a` in 64 bits, or the `int` part that can overflow.
    fn atom(&self, a: &Atom) -> Result<bool, Overflow> {
        match a {
            Atom::Var(v) => {
                let long = self.k.wide_vars.contains(v);
                let (lo, hi) = self.ranges.atom(a);
                if !long && !fits_int_range(lo, hi) {
                    return Err(format!("the variable {}", self.show(a)));
                }
                Ok(long)
            }
            Atom::Div(e, m) | Atom::Rem(e, m) => Ok(self.index(e)? || !fits_int(*m)),
            Atom::Clamp(e, lo, hi) => {
                let long = self.index(e)?;
                if !long && !fits_int_range(*lo, *hi) {
                    return Err(format!("the operand of {}, whose bounds are 64-bit,", self.show(a)));
                }
                Ok(long)
            }
            Atom::Wide(a) => self.atom(a).map(|_| true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::VarId;
    use mapsat_ir::Sizes;

    /// `out[r][c] = x[r][c] + 1` over an `h` x `w` grid, one thread per element.
    fn grid(h: i64, w: i64) -> Kernel {
        let p = mapsat_ir::parse(
            "size H = 16, W = 16\ndef f(x: [[f32]W]H) = mapGlb@A(1, mapGlb@B(0, fun(v => v + 1.0)), x)",
        )
        .expect("parses");
        let opts = crate::Options { sizes: Sizes::new().with("H", h).with("W", w), ..Default::default() };
        crate::lower(&p, &opts).expect("lowers")
    }

    fn errors(k: &Kernel) -> Vec<String> {
        verify_widths(k).err().map(|e| e.0.iter().map(|e| e.to_string()).collect()).unwrap_or_default()
    }

    #[test]
    fn chosen_widths_pass() {
        assert_eq!(errors(&grid(50_000, 50_000)), Vec::<String>::new());
        assert_eq!(errors(&grid(1, 3_000_000_000)), Vec::<String>::new());
        assert_eq!(errors(&grid(1000, 1000)), Vec::<String>::new());
    }

    /// Every index of `k` with its widening marks dropped.
    fn narrowed(mut k: Kernel) -> Kernel {
        struct Narrow;
        impl crate::visit::VisitMut for Narrow {
            fn visit_index_mut(&mut self, i: &mut Index) {
                *i = i.rebuild(&|_| None, &Ranges::default());
            }
        }
        crate::visit::VisitMut::visit_stmts_mut(&mut Narrow, &mut k.body);
        k
    }

    #[test]
    fn narrow_products_and_variables_are_refused() {
        let errs = errors(&narrowed(grid(50_000, 50_000)));
        assert!(errs.iter().any(|e| e.contains("the product g1 * 50000 is an int")), "{errs:?}");
        let mut k = grid(1, 3_000_000_000);
        k.wide_vars.clear();
        let errs = errors(&k);
        assert!(errs.iter().any(|e| e.contains("the int variable `i_v` reaches")), "{errs:?}");
        let mut k = grid(2, 2);
        k.wide_vars.insert(VarId(0));
        assert_eq!(errors(&k), Vec::<String>::new(), "64 bits where 32 suffice are not wrong");
    }
}

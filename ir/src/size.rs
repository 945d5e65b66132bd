//! Symbolic size expressions in a canonical form.
//!
//! A [`Size`] is an integer polynomial whose atoms are size variables and the non-polynomial
//! operations (`/`, `%`, `min`, `max`) over canonical sub-expressions. Every constructor
//! simplifies, so two sizes that are equal by construction compare equal with `==`, and the
//! printed form parses back to the same value.
//!
//! Division is floor division and `%` is the matching modulo (`a % b = a - b * (a / b)`); a
//! division by zero has no value. Simplification never changes the value of an expression
//! wherever the original has one (property-tested).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A non-polynomial atom of a size expression.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A size variable.
    Var(String),
    /// Floor division.
    Div(Size, Size),
    /// Modulo matching floor division.
    Mod(Size, Size),
    /// Minimum.
    Min(Size, Size),
    /// Maximum.
    Max(Size, Size),
}

/// A product of atoms with their powers (empty: the constant monomial 1).
type Monomial = BTreeMap<Atom, u32>;

/// A symbolic integer size in canonical form: a sum of monomials with non-zero coefficients.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size {
    terms: BTreeMap<Monomial, i64>,
}

/// `a / b` when monomial `b` divides monomial `a`.
fn monomial_quotient(a: &Monomial, b: &Monomial) -> Option<Monomial> {
    let mut out = a.clone();
    for (atom, p) in b {
        let e = out.get_mut(atom).filter(|e| **e >= *p)?;
        *e -= p;
        if *e == 0 {
            out.remove(atom);
        }
    }
    Some(out)
}

/// Graded lexicographic order of monomials: the total degree first, then the exponents from
/// the largest atom down. A monomial order (a total order that multiplication preserves),
/// unlike the order of the maps themselves, so that long division by a polynomial finds every
/// exact quotient: `(a*b + a + b + 1) / (a + 1)` is `b + 1` whichever of the atoms is larger.
fn grlex(a: &Monomial, b: &Monomial) -> std::cmp::Ordering {
    let degree = |m: &Monomial| m.values().map(|&p| u64::from(p)).sum::<u64>();
    degree(a).cmp(&degree(b)).then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

/// Known bounds of size variables, used to simplify `min`, `max`, `/` and `%`.
///
/// Unless told otherwise, every size variable is at least 1.
#[derive(Clone, Debug, Default)]
pub struct Ranges {
    bounds: HashMap<String, (i64, Option<i64>)>,
}

impl Ranges {
    /// Sets the inclusive bounds of a variable.
    pub fn set(&mut self, var: &str, lo: i64, hi: Option<i64>) {
        self.bounds.insert(var.to_string(), (lo, hi));
    }

    fn of(&self, var: &str) -> (Option<i64>, Option<i64>) {
        match self.bounds.get(var) {
            Some(&(lo, hi)) => (Some(lo), hi),
            None => (Some(1), None),
        }
    }
}

fn floor_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q })
}

fn floor_mod(a: i64, b: i64) -> Option<i64> {
    Some(a - b.checked_mul(floor_div(a, b)?)?)
}

impl Size {
    /// The constant `c`.
    pub fn constant(c: i64) -> Size {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Monomial::new(), c);
        }
        Size { terms }
    }

    /// The size variable `name`.
    pub fn var(name: &str) -> Size {
        Size::atom(Atom::Var(name.to_string()))
    }

    fn atom(a: Atom) -> Size {
        let mut m = Monomial::new();
        m.insert(a, 1);
        let mut terms = BTreeMap::new();
        terms.insert(m, 1);
        Size { terms }
    }

    /// The value of a constant size.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Monomial::new()).copied(),
            _ => None,
        }
    }

    /// The variable, if this size is exactly one variable.
    pub fn as_var(&self) -> Option<&str> {
        let (m, &c) = self.terms.iter().next()?;
        if self.terms.len() != 1 || c != 1 || m.len() != 1 {
            return None;
        }
        match m.iter().next()? {
            (Atom::Var(v), 1) => Some(v),
            _ => None,
        }
    }

    /// Sum.
    pub fn add(&self, other: &Size) -> Size {
        let mut terms = self.terms.clone();
        for (m, c) in &other.terms {
            let e = terms.entry(m.clone()).or_insert(0);
            // Saturating, and sticky: a size too large for 64 bits stays too large (and is
            // refused by the checker's bounds, `check::check_with_sizes`) instead of wrapping
            // to a small one, or cancelling against another (N^4 - N^3 at N = 2^21 is not 0).
            *e = match overflowed(*e) || overflowed(*c) {
                true => i64::MAX,
                false => e.saturating_add(*c),
            };
            if *e == 0 {
                terms.remove(m);
            }
        }
        Size { terms }
    }

    /// Difference.
    pub fn sub(&self, other: &Size) -> Size {
        self.add(&other.scale(-1))
    }

    fn scale(&self, k: i64) -> Size {
        if k == 0 {
            return Size::default();
        }
        Size { terms: self.terms.iter().map(|(m, c)| (m.clone(), c.saturating_mul(k))).collect() }
    }

    /// Product.
    pub fn mul(&self, other: &Size) -> Size {
        let mut out = Size::default();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                let mut m = m1.clone();
                for (a, p) in m2 {
                    *m.entry(a.clone()).or_insert(0) += p;
                }
                let mut t = BTreeMap::new();
                t.insert(m, c1.saturating_mul(*c2));
                out = out.add(&Size { terms: t });
            }
        }
        out
    }

    /// If `self` is a single monomial with coefficient, returns it.
    fn as_monomial(&self) -> Option<(&Monomial, i64)> {
        if self.terms.len() == 1 {
            self.terms.iter().next().map(|(m, c)| (m, *c))
        } else {
            None
        }
    }

    /// `q` with `self = d * q` exactly: long division by the leading monomial of `d` in graded
    /// lexicographic order ([`grlex`]), at most a few steps per term of `self`. Division by one
    /// polynomial in a monomial order leaves no remainder exactly when it divides; the quotient
    /// found is also checked by multiplying back.
    fn exact_quotient(&self, d: &Size) -> Option<Size> {
        let leading = |s: &Size| s.terms.iter().max_by(|a, b| grlex(a.0, b.0)).map(|(m, c)| (m.clone(), *c));
        let (dm, dc) = leading(d)?;
        let (mut q, mut r) = (Size::default(), self.clone());
        for _ in 0..=4 * self.terms.len() {
            let Some((rm, rc)) = leading(&r) else {
                return (q.mul(d) == *self).then_some(q);
            };
            if rc % dc != 0 {
                return None;
            }
            let t = Size { terms: BTreeMap::from([(monomial_quotient(&rm, &dm)?, rc / dc)]) };
            q = q.add(&t);
            r = r.sub(&t.mul(d));
        }
        None
    }

    /// Splits `self` into `d * q + r` where every term of `d * q` is syntactically divisible by
    /// the monomial divisor `d` (coefficient included).
    fn split_divisible(&self, dm: &Monomial, dc: i64) -> (Size, Size) {
        let mut q = Size::default();
        let mut r = Size::default();
        for (m, &c) in &self.terms {
            let divisible = c % dc == 0 && dm.iter().all(|(a, p)| m.get(a).is_some_and(|mp| mp >= p));
            let mut t = BTreeMap::new();
            if divisible {
                let mut mq = m.clone();
                for (a, p) in dm {
                    let e = mq.get_mut(a).expect("checked above");
                    *e -= p;
                    if *e == 0 {
                        mq.remove(a);
                    }
                }
                t.insert(mq, c / dc);
                q = q.add(&Size { terms: t });
            } else {
                t.insert(m.clone(), c);
                r = r.add(&Size { terms: t });
            }
        }
        (q, r)
    }

    /// Floor division, simplified with the default ranges.
    pub fn div(&self, other: &Size) -> Size {
        self.div_in(other, &Ranges::default())
    }

    /// Floor division, simplified with the given ranges.
    pub fn div_in(&self, other: &Size, ranges: &Ranges) -> Size {
        if let (Some(a), Some(b)) = (self.as_const(), other.as_const()) {
            if let Some(q) = floor_div(a, b) {
                return Size::constant(q);
            }
        }
        if other.as_const() == Some(1) {
            return self.clone();
        }
        if let Some((dm, dc)) = other.as_monomial() {
            // (d*q + r) / d = q + r / d, exact for floor division with d != 0.
            let (q, r) = self.split_divisible(dm, dc);
            if !q.terms.is_empty() {
                return q.add(&r.div_in(other, ranges));
            }
        }
        if other.terms.len() > 1 {
            // (d*q) / d = q for a polynomial divisor: a 2-D map flattened into one dimension
            // has `(H'*W') / W'` rows (expanded), which must read as `H'`.
            if let Some(q) = self.exact_quotient(other) {
                return q;
            }
        }
        if let (Some((lo, hi)), Some((dlo, _))) = (self.bounds(ranges), other.bounds(ranges)) {
            if lo >= 0 && dlo > 0 && hi.is_some_and(|h| h < dlo) {
                return Size::default();
            }
        }
        if self.terms.is_empty() {
            return Size::default();
        }
        Size::atom(Atom::Div(self.clone(), other.clone()))
    }

    /// Floor modulo, simplified with the default ranges.
    pub fn rem(&self, other: &Size) -> Size {
        self.rem_in(other, &Ranges::default())
    }

    /// Floor modulo, simplified with the given ranges.
    pub fn rem_in(&self, other: &Size, ranges: &Ranges) -> Size {
        if let (Some(a), Some(b)) = (self.as_const(), other.as_const()) {
            if let Some(r) = floor_mod(a, b) {
                return Size::constant(r);
            }
        }
        if other.as_const().is_some_and(|c| c == 1 || c == -1) {
            return Size::default();
        }
        if let Some((dm, dc)) = other.as_monomial() {
            // (d*q + r) % d = r % d.
            let (q, r) = self.split_divisible(dm, dc);
            if !q.terms.is_empty() {
                return r.rem_in(other, ranges);
            }
        }
        if let (Some((lo, hi)), Some((dlo, _))) = (self.bounds(ranges), other.bounds(ranges)) {
            if lo >= 0 && dlo > 0 && hi.is_some_and(|h| h < dlo) {
                return self.clone();
            }
        }
        if self.terms.is_empty() {
            return Size::default();
        }
        Size::atom(Atom::Mod(self.clone(), other.clone()))
    }

    /// Minimum, simplified with the default ranges.
    pub fn minimum(&self, other: &Size) -> Size {
        self.minimum_in(other, &Ranges::default())
    }

    /// Minimum, simplified with the given ranges.
    pub fn minimum_in(&self, other: &Size, ranges: &Ranges) -> Size {
        match self.compare(other, ranges) {
            Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal) => self.clone(),
            Some(std::cmp::Ordering::Greater) => other.clone(),
            None => {
                let (a, b) = if self <= other { (self, other) } else { (other, self) };
                Size::atom(Atom::Min(a.clone(), b.clone()))
            }
        }
    }

    /// Maximum, simplified with the default ranges.
    pub fn maximum(&self, other: &Size) -> Size {
        self.maximum_in(other, &Ranges::default())
    }

    /// Maximum, simplified with the given ranges.
    pub fn maximum_in(&self, other: &Size, ranges: &Ranges) -> Size {
        match self.compare(other, ranges) {
            Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal) => self.clone(),
            Some(std::cmp::Ordering::Less) => other.clone(),
            None => {
                let (a, b) = if self <= other { (self, other) } else { (other, self) };
                Size::atom(Atom::Max(a.clone(), b.clone()))
            }
        }
    }

    /// Compares two sizes when their difference has a known sign everywhere.
    fn compare(&self, other: &Size, ranges: &Ranges) -> Option<std::cmp::Ordering> {
        let (lo, hi) = interval_poly(&self.sub(other), ranges);
        if lo == Some(0) && hi == Some(0) {
            Some(std::cmp::Ordering::Equal)
        } else if lo.is_some_and(|l| l >= 0) {
            // lo >= 0 means self >= other; report Greater unless provably equal.
            Some(std::cmp::Ordering::Greater)
        } else if hi.is_some_and(|h| h <= 0) {
            Some(std::cmp::Ordering::Less)
        } else {
            None
        }
    }

    /// Lower and (maybe) upper bounds, when a lower bound is known.
    fn bounds(&self, ranges: &Ranges) -> Option<(i64, Option<i64>)> {
        let (lo, hi) = interval_poly(self, ranges);
        Some((lo?, hi))
    }

    /// Cancels `(x/y)*y` to `x` for the divisions `x/y` listed as exact (where `y` is known to
    /// divide `x`, e.g. because the program splits an array of length `x` into chunks of `y`).
    pub fn cancel_exact(&self, exact: &[(Size, Size)]) -> Size {
        if exact.is_empty() {
            return self.clone();
        }
        let mut cur = self.clone();
        for _ in 0..8 {
            let mut out = Size::default();
            for (m, &c) in &cur.terms {
                let mut term = Size { terms: BTreeMap::from([(m.clone(), c)]) };
                for a in m.keys() {
                    let Atom::Div(x, y) = a else { continue };
                    if !exact.iter().any(|(ex, ey)| ex == x && ey == y) {
                        continue;
                    }
                    let Some((ym, yc)) = y.as_monomial() else { continue };
                    let mut rest = m.clone();
                    let p = rest.get_mut(a).expect("a is in m");
                    *p -= 1;
                    if *p == 0 {
                        rest.remove(a);
                    }
                    let rest = Size { terms: BTreeMap::from([(rest, c)]) };
                    let (q, r) = rest.split_divisible(ym, yc);
                    if r.terms.is_empty() {
                        term = q.mul(x);
                        break;
                    }
                }
                out = out.add(&term);
            }
            if out == cur {
                break;
            }
            cur = out;
        }
        cur
    }

    /// The same value with each division by a positive constant, `(x + k)/d`, written with its
    /// constant `k` reduced to `0 <= k < d`: `(x + r)/d + q` for `k = q*d + r` (exact for floor
    /// division). Two ways of writing one size then compare equal: `(N - 1)/2 + 1` and
    /// `(N + 1)/2`, a stride-2 output length. Not the canonical form sizes print in.
    pub fn with_offsets_reduced(&self) -> Size {
        let mut out = Size::default();
        for (m, &c) in &self.terms {
            let mut term = Size::constant(c);
            for (a, &p) in m {
                let f = match a {
                    Atom::Div(x, y) => Size::offset_reduced_div(x, y),
                    a => Size::atom(a.clone()),
                };
                for _ in 0..p {
                    term = term.mul(&f);
                }
            }
            out = out.add(&term);
        }
        out
    }

    /// `x/y` as [`Size::with_offsets_reduced`] writes it.
    fn offset_reduced_div(x: &Size, y: &Size) -> Size {
        let whole = Size::atom(Atom::Div(x.clone(), y.clone()));
        let Some(d) = y.as_const().filter(|d| *d > 0) else { return whole };
        let k = x.terms.get(&Monomial::new()).copied().unwrap_or(0);
        match floor_div(k, d) {
            Some(q) if q != 0 => x.sub(&Size::constant(q * d)).div(y).add(&Size::constant(q)),
            _ => whole,
        }
    }

    /// The divisions `x/y` that are atoms of this size's own terms (not those nested inside
    /// another atom), in order: the facts [`Size::cancel_exact`] takes when such a division is
    /// known to be exact.
    pub fn divisions(&self) -> Vec<(Size, Size)> {
        let mut out: Vec<(Size, Size)> = Vec::new();
        for m in self.terms.keys() {
            for a in m.keys() {
                if let Atom::Div(x, y) = a {
                    if !out.iter().any(|(ox, oy)| ox == x && oy == y) {
                        out.push((x.clone(), y.clone()));
                    }
                }
            }
        }
        out
    }

    /// The exact divisions a tile count `span / step + 1` brings, where `step` divides `span`:
    /// the divisions by `step` among the count's own terms that `span` does not already have
    /// (a division by `step` inside the span itself, such as an input length `(n - 1)/step`,
    /// is not made exact by the tiling).
    pub fn tile_divisions(count: &Size, span: &Size, step: &Size) -> Vec<(Size, Size)> {
        let given = span.divisions();
        count.divisions().into_iter().filter(|d| &d.1 == step && !given.contains(d)).collect()
    }

    /// Substitutes values for variables and simplifies; unknown variables stay symbolic.
    pub fn substitute(&self, values: &HashMap<String, Size>) -> Size {
        let mut out = Size::default();
        for (m, c) in &self.terms {
            let mut t = Size::constant(*c);
            for (a, p) in m {
                let v = match a {
                    Atom::Var(name) => values.get(name).cloned().unwrap_or_else(|| Size::var(name)),
                    Atom::Div(x, y) => x.substitute(values).div(&y.substitute(values)),
                    Atom::Mod(x, y) => x.substitute(values).rem(&y.substitute(values)),
                    Atom::Min(x, y) => x.substitute(values).minimum(&y.substitute(values)),
                    Atom::Max(x, y) => x.substitute(values).maximum(&y.substitute(values)),
                };
                for _ in 0..*p {
                    t = t.mul(&v);
                }
            }
            out = out.add(&t);
        }
        out
    }

    /// Evaluates with concrete values; `None` on a missing variable, a division by zero or
    /// an overflow.
    pub fn eval(&self, values: &crate::Sizes) -> Option<i64> {
        let mut sum: i64 = 0;
        for (m, c) in &self.terms {
            let mut t = *c;
            for (a, p) in m {
                let v = match a {
                    Atom::Var(name) => values.get(name)?,
                    Atom::Div(x, y) => floor_div(x.eval(values)?, y.eval(values)?)?,
                    Atom::Mod(x, y) => floor_mod(x.eval(values)?, y.eval(values)?)?,
                    Atom::Min(x, y) => x.eval(values)?.min(y.eval(values)?),
                    Atom::Max(x, y) => x.eval(values)?.max(y.eval(values)?),
                };
                for _ in 0..*p {
                    t = t.checked_mul(v)?;
                }
            }
            sum = sum.checked_add(t)?;
        }
        Some(sum)
    }

    /// True when some division or modulo in this size divides by the constant 0 (`4 / (1 / 0)`,
    /// or `N / (M - 4)` at `M = 4`): such a size has no value.
    pub fn divides_by_zero(&self) -> bool {
        self.terms.keys().flat_map(|m| m.keys()).any(|a| match a {
            Atom::Div(x, y) | Atom::Mod(x, y) => y.as_const() == Some(0) || x.divides_by_zero() || y.divides_by_zero(),
            Atom::Min(x, y) | Atom::Max(x, y) => x.divides_by_zero() || y.divides_by_zero(),
            Atom::Var(_) => false,
        })
    }

    /// True when a coefficient of this size saturated by an overflow (`4 + (2^63 - 2)`): it
    /// has no value in 64 bits.
    pub fn overflows(&self) -> bool {
        self.terms.iter().any(|(m, c)| {
            overflowed(*c)
                || m.keys().any(|a| match a {
                    Atom::Div(x, y) | Atom::Mod(x, y) | Atom::Min(x, y) | Atom::Max(x, y) => {
                        x.overflows() || y.overflows()
                    }
                    Atom::Var(_) => false,
                })
        })
    }

    /// The size variables this size mentions, in order.
    pub fn vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_vars(&self, out: &mut Vec<String>) {
        for m in self.terms.keys() {
            for a in m.keys() {
                match a {
                    Atom::Var(v) => out.push(v.clone()),
                    Atom::Div(x, y) | Atom::Mod(x, y) | Atom::Min(x, y) | Atom::Max(x, y) => {
                        x.collect_vars(out);
                        y.collect_vars(out);
                    }
                }
            }
        }
    }

    /// True when the printed form needs no parentheses after `]` in an array type.
    pub fn is_simple(&self) -> bool {
        self.as_const().is_some_and(|c| c >= 0) || self.as_var().is_some()
    }
}

/// True for a coefficient saturated by an overflow (either sign).
fn overflowed(c: i64) -> bool {
    c == i64::MAX || c <= -i64::MAX
}

fn interval_mul(a: (Option<i64>, Option<i64>), b: (Option<i64>, Option<i64>)) -> (Option<i64>, Option<i64>) {
    // Only the non-negative case is needed to be precise; otherwise give up on bounds.
    match (a, b) {
        ((Some(alo), ahi), (Some(blo), bhi)) if alo >= 0 && blo >= 0 => {
            let hi = match (ahi, bhi) {
                (Some(x), Some(y)) => x.checked_mul(y),
                _ => None,
            };
            (alo.checked_mul(blo), hi)
        }
        _ => (None, None),
    }
}

fn interval_poly(s: &Size, ranges: &Ranges) -> (Option<i64>, Option<i64>) {
    let mut lo = Some(0i64);
    let mut hi = Some(0i64);
    for (m, &c) in &s.terms {
        let mut t = (Some(1i64), Some(1i64));
        for (a, &p) in m {
            let v = interval_atom(a, ranges);
            for _ in 0..p {
                t = interval_mul(t, v);
            }
        }
        let (tlo, thi) = if c >= 0 {
            (t.0.and_then(|x| x.checked_mul(c)), t.1.and_then(|x| x.checked_mul(c)))
        } else {
            (t.1.and_then(|x| x.checked_mul(c)), t.0.and_then(|x| x.checked_mul(c)))
        };
        lo = lo.zip(tlo).and_then(|(x, y)| x.checked_add(y));
        hi = hi.zip(thi).and_then(|(x, y)| x.checked_add(y));
    }
    (lo, hi)
}

fn interval_atom(a: &Atom, ranges: &Ranges) -> (Option<i64>, Option<i64>) {
    match a {
        Atom::Var(v) => ranges.of(v),
        Atom::Div(x, y) => {
            let (xl, xh) = interval_poly(x, ranges);
            let (yl, _) = interval_poly(y, ranges);
            match (xl, yl) {
                (Some(xl), Some(yl)) if xl >= 0 && yl >= 1 => (Some(0), xh),
                _ => (None, None),
            }
        }
        Atom::Mod(x, y) => {
            let (xl, _) = interval_poly(x, ranges);
            let (yl, yh) = interval_poly(y, ranges);
            match (xl, yl) {
                (Some(xl), Some(yl)) if xl >= 0 && yl >= 1 => (Some(0), yh.map(|h| h - 1)),
                _ => (None, None),
            }
        }
        Atom::Min(x, y) => {
            let (a, b) = (interval_poly(x, ranges), interval_poly(y, ranges));
            let lo = a.0.zip(b.0).map(|(p, q)| p.min(q));
            let hi = match (a.1, b.1) {
                (Some(p), Some(q)) => Some(p.min(q)),
                (Some(p), None) | (None, Some(p)) => Some(p),
                _ => None,
            };
            (lo, hi)
        }
        Atom::Max(x, y) => {
            let (a, b) = (interval_poly(x, ranges), interval_poly(y, ranges));
            let lo = match (a.0, b.0) {
                (Some(p), Some(q)) => Some(p.max(q)),
                (Some(p), None) | (None, Some(p)) => Some(p),
                _ => None,
            };
            (lo, a.1.zip(b.1).map(|(p, q)| p.max(q)))
        }
    }
}

impl From<i64> for Size {
    fn from(c: i64) -> Size {
        Size::constant(c)
    }
}

/// Prints `s`, in parentheses unless it is a constant or a variable.
struct Operand<'a>(&'a Size);

impl fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_simple() {
            write!(f, "{}", self.0)
        } else {
            write!(f, "({})", self.0)
        }
    }
}

fn fmt_atom(a: &Atom, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match a {
        Atom::Var(v) => write!(f, "{v}"),
        Atom::Div(x, y) => write!(f, "{}/{}", Operand(x), Operand(y)),
        Atom::Mod(x, y) => write!(f, "{}%{}", Operand(x), Operand(y)),
        Atom::Min(x, y) => write!(f, "min({x}, {y})"),
        Atom::Max(x, y) => write!(f, "max({x}, {y})"),
    }
}

impl fmt::Display for Size {
    /// Prints terms from the highest degree down, constants last: `2*N*M + N - 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return write!(f, "0");
        }
        let mut terms: Vec<(&Monomial, &i64)> = self.terms.iter().collect();
        terms.sort_by_key(|(m, c)| (std::cmp::Reverse(m.values().sum::<u32>()), **c < 0));
        for (i, (m, &c)) in terms.into_iter().enumerate() {
            let (neg, mag) = (c < 0, c.unsigned_abs());
            match (i, neg) {
                (0, true) => write!(f, "-")?,
                (0, false) => {}
                (_, true) => write!(f, " - ")?,
                (_, false) => write!(f, " + ")?,
            }
            if m.is_empty() {
                write!(f, "{mag}")?;
                continue;
            }
            if mag != 1 {
                write!(f, "{mag}*")?;
            }
            // `/` and `%` bind like `*`, so inside a product they need parentheses.
            // A leading `-` binds tighter than `/` too: `-(x/y)` is not `-x/y`.
            let alone = mag == 1 && !(i == 0 && neg) && m.len() == 1 && m.values().all(|p| *p == 1);
            let mut first = true;
            for (a, p) in m {
                for _ in 0..*p {
                    if !first {
                        write!(f, "*")?;
                    }
                    first = false;
                    let paren = !alone && matches!(a, Atom::Div(..) | Atom::Mod(..));
                    if paren {
                        write!(f, "(")?;
                    }
                    fmt_atom(a, f)?;
                    if paren {
                        write!(f, ")")?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n() -> Size {
        Size::var("N")
    }

    /// Values too large for 64 bits stay too large: `N^4 - N^3 + 2` at `N = 2^21` does not
    /// cancel to 2 (each power saturated), nor wraps.
    #[test]
    fn an_overflowed_size_stays_too_large() {
        let e = n().mul(&n()).mul(&n()).mul(&n()).sub(&n().mul(&n()).mul(&n())).add(&Size::constant(2));
        let values = HashMap::from([("N".to_string(), Size::constant(1 << 21))]);
        assert_eq!(e.substitute(&values).as_const(), Some(i64::MAX));
        let small = HashMap::from([("N".to_string(), Size::constant(3))]);
        assert_eq!(e.substitute(&small).as_const(), Some(81 - 27 + 2));
        assert_eq!(Size::constant(i64::MAX).sub(&Size::constant(i64::MAX)).as_const(), Some(i64::MAX));
    }

    /// A 2-D map flattened into one dimension: its `H' * W'` elements (expanded) split by `W'`
    /// give `H'` rows; a numerator the divisor does not divide stays a division.
    #[test]
    fn a_product_divided_by_one_of_its_factors_is_the_other() {
        let v = Size::var;
        let rows = v("inH").sub(&v("kerH")).add(&Size::constant(3));
        let cols = v("inW").sub(&v("kerW")).add(&Size::constant(3));
        assert_eq!(rows.mul(&cols).div(&cols), rows);
        let off = rows.mul(&cols).add(&Size::constant(1));
        assert_eq!(off.div(&cols), Size::atom(Atom::Div(off.clone(), cols.clone())));
        assert_eq!(rows.div(&cols), Size::atom(Atom::Div(rows.clone(), cols.clone())));
    }

    #[test]
    fn split_then_join_is_identity() {
        let four = Size::constant(4);
        let outer = n().div(&four);
        assert_eq!(outer.mul(&four), outer.mul(&four));
        // (N*4)/4 = N
        assert_eq!(n().mul(&four).div(&four), n());
        // (4*N + 3)/4 = N + 3/4 = N
        assert_eq!(n().mul(&four).add(&Size::constant(3)).div(&four), n());
    }

    #[test]
    fn slide_window_count() {
        // (N + 2 - 3)/1 + 1 = N
        let padded = n().add(&Size::constant(2));
        let windows = padded.sub(&Size::constant(3)).div(&Size::constant(1)).add(&Size::constant(1));
        assert_eq!(windows, n());
        assert_eq!(windows.to_string(), "N");
    }

    #[test]
    fn printing() {
        let s = n().mul(&Size::var("M")).scale(2).add(&n()).sub(&Size::constant(1));
        assert_eq!(s.to_string(), "2*M*N + N - 1");
        assert_eq!(n().div(&Size::constant(4)).to_string(), "N/4");
        assert_eq!(n().div(&Size::constant(4)).mul(&Size::var("M")).to_string(), "M*(N/4)");
        assert_eq!(n().sub(&Size::constant(1)).div(&Size::constant(4)).to_string(), "(N - 1)/4");
    }

    #[test]
    fn min_max_with_ranges() {
        let mut r = Ranges::default();
        r.set("N", 1, Some(8));
        assert_eq!(n().minimum_in(&Size::constant(16), &r), n());
        assert_eq!(n().maximum_in(&Size::constant(0), &r), n());
        assert_eq!(n().rem_in(&Size::constant(16), &r), n());
        assert_eq!(n().div_in(&Size::constant(16), &r), Size::constant(0));
        // min is commutative in canonical form
        assert_eq!(n().minimum(&Size::var("M")), Size::var("M").minimum(&n()));
    }

    #[test]
    fn exact_division_cancels() {
        let (s0, s1) = (Size::var("s0"), Size::var("s1"));
        let t = s1.mul(&n().div(&s0)).mul(&s0.div(&s1));
        let exact = [(n(), s0.clone()), (s0.clone(), s1.clone())];
        assert_eq!(t.cancel_exact(&exact), n());
        assert_eq!(t.cancel_exact(&exact[..1]), t, "not cancelled without the fact");
    }

    /// A product of two sums divided by one of them, whichever atom orders first: the rows of
    /// a padded, strided 2-D window flattened and split again (a tester's stride-2 conv).
    #[test]
    fn a_product_of_sums_divided_by_one_of_them() {
        let two = Size::constant(2);
        let one = Size::constant(1);
        for (x, y) in [("W", "H"), ("H", "W")] {
            let a = Size::var(x).sub(&Size::constant(3)).div(&two);
            let b = Size::var(y).sub(&one).div(&two);
            let rows = a.add(&one).mul(&b.add(&one));
            assert_eq!(rows.div(&a.add(&one)), b.add(&one), "{rows}");
            assert_eq!(rows.div(&b.add(&one)), a.add(&one), "{rows}");
            // Not exact: left as a division.
            let off = rows.add(&one).div(&a.add(&one));
            assert!(off.to_string().contains('/'), "{off}");
        }
        // Squares and higher powers.
        let (n, m) = (Size::var("N"), Size::var("M"));
        let p = n.add(&m).mul(&n.add(&m)).mul(&n.sub(&one));
        assert_eq!(p.div(&n.add(&m)), n.add(&m).mul(&n.sub(&one)));
        assert_eq!(p.div(&n.sub(&one)), n.add(&m).mul(&n.add(&m)));
    }

    #[test]
    fn floor_semantics() {
        assert_eq!(Size::constant(-7).div(&Size::constant(2)), Size::constant(-4));
        assert_eq!(Size::constant(-7).rem(&Size::constant(2)), Size::constant(1));
        let v = crate::Sizes::new().with("N", 5);
        assert_eq!(n().div(&Size::constant(0)).eval(&v), None);
    }
}

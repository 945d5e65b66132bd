//! Integer index expressions: linear combinations of atoms with constant coefficients, simplified
//! with the value ranges of loop variables (Lift's arithmetic expressions, restricted to what
//! views produce once every size is a constant).
//!
//! Simplification happens in the constructors: `(i * 16 + j) / 16` is `i` when `j` lies in
//! `0..16`, `(i * 16 + j) % 16` is `j`, and `(k / m) * m + k % m` is `k`. Indices are never
//! negative where they are divided, so C's truncating division agrees with the floor division
//! the rules assume; where that cannot be shown, the division is kept as it is.

use crate::kir::VarId;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// An indivisible part of an index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A loop variable of the kernel.
    Var(VarId),
    /// `e / m`.
    Div(Box<Index>, i64),
    /// `e % m`.
    Rem(Box<Index>, i64),
    /// `clamp(e, lo, hi)`.
    Clamp(Box<Index>, i64, i64),
    /// The atom converted to a 64-bit integer before it is used (`(long)a`), so that C computes
    /// its product and the sums after it in 64 bits. Only [`crate::width`] makes it, once every
    /// index is simplified: it has the atom's value and range, and the simplifying
    /// constructors drop it ([`Index::rebuild`]).
    Wide(Box<Atom>),
}

/// How an index is spelled in a kernel: the names and widths of the variables, the 64-bit
/// integer type and `clamp`, which differ between OpenCL and CUDA.
pub struct Spelling<'a> {
    /// Names of the variables by [`VarId`] (a variable without one is `v<n>`).
    pub names: &'a [String],
    /// The 64-bit integer type (`long`, `long long`).
    pub long: &'a str,
    /// True for a variable declared with the 64-bit type.
    pub wide: &'a dyn Fn(VarId) -> bool,
    /// `clamp(e, lo, hi)`, told whether `e` is a 64-bit expression.
    pub clamp: &'a dyn Fn(&str, i64, i64, bool) -> String,
}

fn no_wide_vars(_: VarId) -> bool {
    false
}

fn plain_clamp(e: &str, lo: i64, hi: i64, _: bool) -> String {
    format!("clamp({e}, {lo}, {hi})")
}

impl<'a> Spelling<'a> {
    /// `clamp(e, lo, hi)`, `long`, every variable 32-bit: for messages and tests.
    pub fn plain(names: &'a [String]) -> Spelling<'a> {
        Spelling { names, long: "long", wide: &no_wide_vars, clamp: &plain_clamp }
    }
}

/// `Σ coef * atom + constant`, terms sorted by atom, no zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Index {
    /// The terms.
    pub terms: Vec<(Atom, i64)>,
    /// The constant.
    pub constant: i64,
}

/// Known inclusive value ranges of variables.
#[derive(Clone, Debug, Default)]
pub struct Ranges {
    vars: BTreeMap<VarId, (i64, i64)>,
}

impl Ranges {
    /// Records that `var` lies in `lo..=hi`.
    pub fn set(&mut self, var: VarId, lo: i64, hi: i64) {
        self.vars.insert(var, (lo, hi));
    }

    /// The range recorded for `var`, if any.
    pub fn get(&self, var: VarId) -> Option<(i64, i64)> {
        self.vars.get(&var).copied()
    }

    /// The range of an atom.
    pub fn atom(&self, a: &Atom) -> (i64, i64) {
        match a {
            Atom::Var(v) => self.vars.get(v).copied().unwrap_or((i64::MIN / 4, i64::MAX / 4)),
            Atom::Div(e, m) => {
                // Truncating division, as printed, is monotonic.
                let (lo, hi) = self.of(e);
                (lo / m, hi / m)
            }
            Atom::Rem(e, m) => {
                let (lo, hi) = self.of(e);
                if lo >= 0 && lo.div_euclid(*m) == hi.div_euclid(*m) {
                    (lo.rem_euclid(*m), hi.rem_euclid(*m))
                } else if lo >= 0 {
                    (0, m - 1)
                } else {
                    (-(m - 1), m - 1)
                }
            }
            Atom::Clamp(_, lo, hi) => (*lo, *hi),
            Atom::Wide(a) => self.atom(a),
        }
    }

    /// The range of an index (interval arithmetic).
    pub fn of(&self, e: &Index) -> (i64, i64) {
        let (mut lo, mut hi) = (e.constant, e.constant);
        for (a, c) in &e.terms {
            let (alo, ahi) = self.atom(a);
            let (x, y) = (alo.saturating_mul(*c), ahi.saturating_mul(*c));
            lo = lo.saturating_add(x.min(y));
            hi = hi.saturating_add(x.max(y));
        }
        (lo, hi)
    }
}

impl Index {
    /// A constant.
    pub fn constant(c: i64) -> Index {
        Index { terms: Vec::new(), constant: c }
    }

    /// A variable.
    pub fn var(v: VarId) -> Index {
        Index::atom(Atom::Var(v))
    }

    fn atom(a: Atom) -> Index {
        Index { terms: vec![(a, 1)], constant: 0 }
    }

    /// The value, if constant.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The only term of an index without constant, with its coefficient.
    fn single(&self) -> Option<(&Atom, i64)> {
        match self.terms.as_slice() {
            [(a, c)] if self.constant == 0 => Some((a, *c)),
            _ => None,
        }
    }

    /// `self + other`.
    pub fn add(&self, other: &Index) -> Index {
        let mut map: BTreeMap<Atom, i64> = BTreeMap::new();
        for (a, c) in self.terms.iter().chain(&other.terms) {
            *map.entry(a.clone()).or_insert(0) += c;
        }
        let mut out = Index { terms: Vec::new(), constant: self.constant + other.constant };
        // (k / m) * (c * m) + (k % m) * c  ==  k * c
        let rems: Vec<(Atom, i64)> =
            map.iter().filter(|(a, _)| matches!(a, Atom::Rem(..))).map(|(a, c)| (a.clone(), *c)).collect();
        let mut extra = Index::constant(0);
        for (rem, c) in rems {
            let Atom::Rem(k, m) = &rem else { continue };
            let mut partners = vec![Atom::Div(k.clone(), *m)];
            // `(e / a) / m` is kept as `e / (a * m)`.
            if let Some((Atom::Div(e, a), 1)) = k.single() {
                if let Some(am) = a.checked_mul(*m) {
                    partners.push(Atom::Div(e.clone(), am));
                }
            }
            for div in partners {
                if c != 0 && map.contains_key(&rem) && map.get(&div) == Some(&(c * m)) {
                    map.remove(&div);
                    map.remove(&rem);
                    extra = extra.add(&k.scale(c));
                }
            }
        }
        out.terms = map.into_iter().filter(|(_, c)| *c != 0).collect();
        if extra.terms.is_empty() && extra.constant == 0 {
            out
        } else {
            out.add(&extra)
        }
    }

    /// `self + c`.
    pub fn plus(&self, c: i64) -> Index {
        self.add(&Index::constant(c))
    }

    /// `self * c`.
    pub fn scale(&self, c: i64) -> Index {
        if c == 0 {
            return Index::constant(0);
        }
        Index { terms: self.terms.iter().map(|(a, k)| (a.clone(), k * c)).collect(), constant: self.constant * c }
    }

    /// `self - other`.
    pub fn sub(&self, other: &Index) -> Index {
        self.add(&other.scale(-1))
    }

    /// Splits into the part whose coefficients are multiples of `m` (divided by `m`) and the rest.
    fn split_by(&self, m: i64) -> (Index, Index) {
        let mut q = Index::constant(self.constant.div_euclid(m));
        let mut r = Index::constant(self.constant.rem_euclid(m));
        for (a, c) in &self.terms {
            if c % m == 0 {
                q.terms.push((a.clone(), c / m));
            } else {
                r.terms.push((a.clone(), *c));
            }
        }
        (q, r)
    }

    /// `self / m` when `self` is itself a single quotient or remainder that folds with `m`
    /// (`self` non-negative, `m > 1`).
    fn div_nested(&self, m: i64, ranges: &Ranges) -> Option<Index> {
        // (e / a + c) / m == (e + c * a) / (a * m) for e + c * a >= 0.
        if let [(Atom::Div(e, a), 1)] = self.terms.as_slice() {
            if let (Some(am), Some(ca)) = (a.checked_mul(m), self.constant.checked_mul(*a)) {
                let inner = e.plus(ca);
                if *a > 0 && ranges.of(e).0 >= 0 && ranges.of(&inner).0 >= 0 {
                    return Some(inner.div(am, ranges));
                }
            }
        }
        // (e % (m * b)) / m == (e / m) % b: one canonical form for both.
        if let Some((Atom::Rem(e, a), 1)) = self.single() {
            if *a % m == 0 && ranges.of(e).0 >= 0 {
                return Some(e.div(m, ranges).rem(a / m, ranges));
            }
        }
        None
    }

    /// `self / m` (floor division of a non-negative index by a positive constant).
    pub fn div(&self, m: i64, ranges: &Ranges) -> Index {
        if m == 1 {
            return self.clone();
        }
        let (lo, hi) = ranges.of(self);
        if lo >= 0 && lo.div_euclid(m) == hi.div_euclid(m) {
            return Index::constant(lo.div_euclid(m));
        }
        if lo < 0 || m <= 0 {
            return Index::atom(Atom::Div(Box::new(self.clone()), m));
        }
        if let Some(e) = self.div_nested(m, ranges) {
            return e;
        }
        let (q, r) = self.split_by(m);
        let (rlo, rhi) = ranges.of(&r);
        if rlo >= 0 && rhi < m {
            return q;
        }
        if rlo >= 0 {
            // floor((q*m + r) / m) = q + floor(r / m) for r >= 0
            let d = r.div_nested(m, ranges).unwrap_or_else(|| Index::atom(Atom::Div(Box::new(r), m)));
            return q.add(&d);
        }
        Index::atom(Atom::Div(Box::new(self.clone()), m))
    }

    /// `self % m` (of a non-negative index by a positive constant).
    pub fn rem(&self, m: i64, ranges: &Ranges) -> Index {
        if m == 1 {
            return Index::constant(0);
        }
        let (lo, hi) = ranges.of(self);
        if lo < 0 || m <= 0 {
            return Index::atom(Atom::Rem(Box::new(self.clone()), m));
        }
        // All values in one period: e % m == e - m * (lo / m).
        if lo.div_euclid(m) == hi.div_euclid(m) {
            return self.plus(-m * lo.div_euclid(m));
        }
        // (e % (m * b)) % m == e % m.
        if let Some((Atom::Rem(e, a), 1)) = self.single() {
            if *a % m == 0 && ranges.of(e).0 >= 0 {
                return e.rem(m, ranges);
            }
        }
        let (_, r) = self.split_by(m);
        let (rlo, rhi) = ranges.of(&r);
        if rlo >= 0 && rhi < m {
            return r;
        }
        if rlo >= 0 {
            return Index::atom(Atom::Rem(Box::new(r), m));
        }
        Index::atom(Atom::Rem(Box::new(self.clone()), m))
    }

    /// `clamp(self, lo, hi)`.
    pub fn clamp_to(&self, lo: i64, hi: i64, ranges: &Ranges) -> Index {
        let (a, b) = ranges.of(self);
        if a >= lo && b <= hi {
            self.clone()
        } else if b <= lo {
            Index::constant(lo)
        } else if a >= hi {
            Index::constant(hi)
        } else {
            Index::atom(Atom::Clamp(Box::new(self.clone()), lo, hi))
        }
    }

    /// The variables the index mentions.
    pub fn vars(&self, out: &mut BTreeSet<VarId>) {
        for (a, _) in &self.terms {
            match a {
                Atom::Var(v) => {
                    out.insert(*v);
                }
                Atom::Div(e, _) | Atom::Rem(e, _) | Atom::Clamp(e, _, _) => e.vars(out),
                Atom::Wide(a) => Index::atom((**a).clone()).vars(out),
            }
        }
    }

    /// True when the index mentions `var`.
    pub fn mentions(&self, var: VarId) -> bool {
        self.terms.iter().any(|(a, _)| match a {
            Atom::Var(v) => *v == var,
            Atom::Div(e, _) | Atom::Rem(e, _) | Atom::Clamp(e, _, _) => e.mentions(var),
            Atom::Wide(a) => Index::atom((**a).clone()).mentions(var),
        })
    }

    /// The index with `var` replaced by `value`, simplified again with `ranges`.
    pub fn subst(&self, var: VarId, value: &Index, ranges: &Ranges) -> Index {
        self.rebuild(&|v| (v == var).then(|| value.clone()), ranges)
    }

    /// The index rebuilt through the simplifying constructors (with `ranges`, which may know
    /// more than when it was built), variables replaced where `f` gives a value. Widening
    /// marks ([`Atom::Wide`]) are dropped.
    pub fn rebuild(&self, f: &dyn Fn(VarId) -> Option<Index>, ranges: &Ranges) -> Index {
        let mut out = Index::constant(self.constant);
        for (a, c) in &self.terms {
            out = out.add(&rebuild_atom(a, f, ranges).scale(*c));
        }
        out
    }

    /// The value for the variable values `env` gives (absent ones are 0), with C's
    /// truncating `/` and `%`, as the kernel computes it.
    pub fn eval(&self, env: &dyn Fn(VarId) -> i64) -> i64 {
        let mut v = self.constant;
        for (a, c) in &self.terms {
            let x = match a {
                Atom::Var(v) => env(*v),
                Atom::Div(e, m) => e.eval(env).wrapping_div(*m),
                Atom::Rem(e, m) => e.eval(env).wrapping_rem(*m),
                Atom::Clamp(e, lo, hi) => e.eval(env).clamp(*lo, *hi),
                Atom::Wide(a) => Index::atom((**a).clone()).eval(env),
            };
            v = v.wrapping_add(x.wrapping_mul(*c));
        }
        v
    }

    /// The terms in the order they are printed (and so added, left to right, by C): larger
    /// coefficients first (`i * 64 + j` rather than `j + i * 64`), the others in the order of
    /// their variables' names, so that the text does not depend on the order the variables
    /// were made in.
    pub fn print_order(&self, names: &[String]) -> Vec<&(Atom, i64)> {
        let mut terms: Vec<&(Atom, i64)> = self.terms.iter().collect();
        terms.sort_by(|x, y| y.1.abs().cmp(&x.1.abs()).then_with(|| cmp_atoms(&x.0, &y.0, names)));
        terms
    }

    /// True when C computes the index as a 64-bit integer: some atom is 64-bit (a 64-bit
    /// variable, a widened atom, or one with such a part) or the constant does not fit an `int`
    /// (C gives such a literal a 64-bit type).
    pub fn is_long(&self, wide: &dyn Fn(VarId) -> bool) -> bool {
        !fits_int(self.constant) || self.terms.iter().any(|(a, _)| a.is_long(wide))
    }

    /// Prints the terms in [`Index::print_order`], spelled as `s` says.
    pub fn render(&self, s: &Spelling<'_>) -> String {
        let mut out = String::new();
        for (a, c) in self.print_order(s.names) {
            let atom = a.render(s);
            let needs_paren = matches!(a, Atom::Div(..) | Atom::Rem(..)) && c.abs() != 1;
            let atom = if needs_paren { format!("({atom})") } else { atom };
            let mag = if c.abs() == 1 { atom } else { format!("{atom} * {}", c.abs()) };
            if out.is_empty() {
                if *c < 0 {
                    out.push('-');
                }
                out.push_str(&mag);
            } else {
                out.push_str(if *c < 0 { " - " } else { " + " });
                out.push_str(&mag);
            }
        }
        if out.is_empty() {
            return self.constant.to_string();
        }
        match self.constant.cmp(&0) {
            Ordering::Greater => out.push_str(&format!(" + {}", self.constant)),
            Ordering::Less => out.push_str(&format!(" - {}", -self.constant)),
            Ordering::Equal => {}
        }
        out
    }

    /// True when printing needs parentheses inside a product or quotient.
    pub fn is_compound(&self) -> bool {
        !(self.terms.is_empty() || (self.terms.len() == 1 && self.constant == 0 && self.terms[0].1 == 1))
    }
}

/// True when `x` fits C's 32-bit `int`.
pub fn fits_int(x: i64) -> bool {
    i32::try_from(x).is_ok()
}

/// True when every value in `lo..=hi` fits C's 32-bit `int`.
pub fn fits_int_range(lo: i64, hi: i64) -> bool {
    fits_int(lo) && fits_int(hi)
}

impl Atom {
    /// True when C computes the atom as a 64-bit integer (see [`Index::is_long`]).
    pub fn is_long(&self, wide: &dyn Fn(VarId) -> bool) -> bool {
        match self {
            Atom::Var(v) => wide(*v),
            Atom::Div(e, m) | Atom::Rem(e, m) => !fits_int(*m) || e.is_long(wide),
            Atom::Clamp(e, ..) => e.is_long(wide),
            Atom::Wide(_) => true,
        }
    }

    fn render(&self, s: &Spelling<'_>) -> String {
        match self {
            Atom::Var(v) => var_name(s.names, *v),
            Atom::Div(e, m) => format!("{} / {m}", paren(e, s)),
            Atom::Rem(e, m) => format!("{} % {m}", paren(e, s)),
            Atom::Clamp(e, lo, hi) => (s.clamp)(&e.render(s), *lo, *hi, e.is_long(s.wide)),
            Atom::Wide(a) => match **a {
                Atom::Div(..) | Atom::Rem(..) => format!("({})({})", s.long, a.render(s)),
                _ => format!("({}){}", s.long, a.render(s)),
            },
        }
    }
}

fn rebuild_atom(a: &Atom, f: &dyn Fn(VarId) -> Option<Index>, ranges: &Ranges) -> Index {
    match a {
        Atom::Var(v) => f(*v).unwrap_or_else(|| Index::var(*v)),
        Atom::Div(e, m) => e.rebuild(f, ranges).div(*m, ranges),
        Atom::Rem(e, m) => e.rebuild(f, ranges).rem(*m, ranges),
        Atom::Clamp(e, lo, hi) => e.rebuild(f, ranges).clamp_to(*lo, *hi, ranges),
        Atom::Wide(a) => rebuild_atom(a, f, ranges),
    }
}

fn paren(e: &Index, s: &Spelling<'_>) -> String {
    if e.is_compound() {
        format!("({})", e.render(s))
    } else {
        e.render(s)
    }
}

/// The name of variable `v` in `names`, or `v<n>`.
fn var_name(names: &[String], v: VarId) -> String {
    names.get(v.index()).cloned().unwrap_or_else(|| v.to_string())
}

/// The order of two atoms with variables compared by name (otherwise as `Atom`'s derived order:
/// variables, quotients, remainders, clamps; then their operands). A widened atom sorts as the
/// atom itself, so widening never changes the order of the terms.
fn cmp_atoms(a: &Atom, b: &Atom, names: &[String]) -> Ordering {
    let rank = |a: &Atom| match a {
        Atom::Var(_) => 0,
        Atom::Div(..) => 1,
        Atom::Rem(..) => 2,
        Atom::Clamp(..) => 3,
        Atom::Wide(_) => 4,
    };
    match (a, b) {
        (Atom::Wide(x), y) => cmp_atoms(x, y, names),
        (x, Atom::Wide(y)) => cmp_atoms(x, y, names),
        (Atom::Var(x), Atom::Var(y)) => var_name(names, *x).cmp(&var_name(names, *y)),
        (Atom::Div(e, m), Atom::Div(f, n)) | (Atom::Rem(e, m), Atom::Rem(f, n)) => {
            cmp_indices(e, f, names).then(m.cmp(n))
        }
        (Atom::Clamp(e, lo, hi), Atom::Clamp(f, lo2, hi2)) => {
            cmp_indices(e, f, names).then(lo.cmp(lo2)).then(hi.cmp(hi2))
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// The order of two indices with variables compared by name: terms (in that order), then the
/// constant.
fn cmp_indices(x: &Index, y: &Index, names: &[String]) -> Ordering {
    let sorted = |i: &Index| {
        let mut t: Vec<(Atom, i64)> = i.terms.clone();
        t.sort_by(|p, q| cmp_atoms(&p.0, &q.0, names));
        t
    };
    let (tx, ty) = (sorted(x), sorted(y));
    for (p, q) in tx.iter().zip(&ty) {
        let o = cmp_atoms(&p.0, &q.0, names).then(p.1.cmp(&q.1));
        if o != Ordering::Equal {
            return o;
        }
    }
    tx.len().cmp(&ty.len()).then(x.constant.cmp(&y.constant))
}

/// Variables print as `v<n>` (their names are the kernel's: see [`Index::render`]).
impl fmt::Display for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.render(&Spelling::plain(&[])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: VarId = VarId(0);
    const J: VarId = VarId(1);
    const K: VarId = VarId(2);

    /// Printed with the variables named `i`, `j`, `k`.
    fn show(e: &Index) -> String {
        let names = ["i", "j", "k"].map(String::from);
        e.render(&Spelling::plain(&names))
    }

    fn r() -> Ranges {
        let mut r = Ranges::default();
        r.set(I, 0, 7);
        r.set(J, 0, 15);
        r.set(K, 0, 127);
        r
    }

    #[test]
    fn split_then_join_cancels() {
        let r = r();
        let i = Index::var(I);
        let j = Index::var(J);
        let flat = i.scale(16).add(&j);
        assert_eq!(flat.div(16, &r), i);
        assert_eq!(flat.rem(16, &r), j);
        let k = Index::var(K);
        let back = k.div(16, &r).scale(16).add(&k.rem(16, &r));
        assert_eq!(back, k);
        assert_eq!(show(&k.div(16, &r)), "k / 16");
        assert_eq!(show(&Index::var(I).scale(1).plus(0).div(1, &r)), "i");
    }

    fn r36() -> Ranges {
        let mut r = Ranges::default();
        r.set(I, 0, 35);
        r.set(J, 0, 3);
        r.set(K, 16, 31);
        r
    }

    #[test]
    fn nested_divisions_fold() {
        let r = r36();
        let i = Index::var(I);
        assert_eq!(show(&i.div(4, &r).div(3, &r)), "i / 12");
        assert_eq!(show(&i.div(4, &r).plus(1).div(3, &r)), "(i + 4) / 12");
        assert_eq!(show(&i.div(2, &r).div(2, &r).div(3, &r)), "i / 12");
        // (i % 12) / 4 and (i / 4) % 3 are one canonical form.
        assert_eq!(show(&i.rem(12, &r).div(4, &r)), "i / 4 % 3");
        assert_eq!(i.rem(12, &r).div(4, &r), i.div(4, &r).rem(3, &r));
        assert_eq!(show(&i.rem(12, &r).rem(4, &r)), "i % 4");
        // Digits of i in base (3, 4) put back together.
        let back = i.div(12, &r).scale(12).add(&i.div(4, &r).rem(3, &r).scale(4)).add(&i.rem(4, &r));
        assert_eq!(back, i);
        let back = i.div(4, &r).div(3, &r).scale(12).add(&i.div(4, &r).rem(3, &r).scale(4)).add(&i.rem(4, &r));
        assert_eq!(show(&back), "i");
    }

    #[test]
    fn ranges_decide() {
        let r = r36();
        let k = Index::var(K);
        // k in 16..=31 lies in one period of 16.
        assert_eq!(show(&k.rem(16, &r)), "k - 16");
        assert_eq!(show(&k.div(16, &r)), "1");
        assert_eq!(show(&k.div(8, &r)), "k / 8");
        let j = Index::var(J);
        assert_eq!(show(&j.rem(12, &r).div(4, &r)), "0");
        assert_eq!(show(&j.scale(1).plus(0)), "j");
        assert_eq!(show(&Index::var(I).scale(4).add(&j).div(4, &r)), "i");
        assert_eq!(show(&Index::var(I).scale(4).add(&j).plus(2).rem(4, &r)), "(j + 2) % 4");
    }

    #[test]
    fn substitution_resimplifies() {
        let r = r36();
        let i = Index::var(I);
        let j = Index::var(J);
        let e = i.scale(4).add(&j).plus(-2).div(4, &r);
        assert_eq!(show(&e), "(i * 4 + j - 2) / 4");
        let mut r2 = r.clone();
        r2.set(J, 3, 3);
        assert_eq!(show(&e.subst(J, &Index::constant(3), &r2)), "i");
        assert_eq!(show(&i.rem(12, &r).subst(I, &Index::constant(29), &r)), "5");
        let mut vars = std::collections::BTreeSet::new();
        e.vars(&mut vars);
        assert_eq!(vars.into_iter().collect::<Vec<_>>(), [I, J]);
        assert!(e.mentions(J) && !e.mentions(K));
    }

    /// An index built by hand, evaluated with C semantics as the reference.
    #[derive(Clone, Debug)]
    enum T {
        Var(usize),
        Const(i64),
        Add(Box<T>, Box<T>),
        Sub(Box<T>, Box<T>),
        Scale(Box<T>, i64),
        Div(Box<T>, i64),
        Rem(Box<T>, i64),
        Clamp(Box<T>, i64, i64),
    }

    /// The variables `a`, `b`, `c` of the generated indices.
    const VARS: [VarId; 3] = [VarId(0), VarId(1), VarId(2)];

    impl T {
        fn eval(&self, env: &[i64]) -> i64 {
            match self {
                T::Var(v) => env[*v],
                T::Const(c) => *c,
                T::Add(x, y) => x.eval(env) + y.eval(env),
                T::Sub(x, y) => x.eval(env) - y.eval(env),
                T::Scale(x, c) => x.eval(env) * c,
                T::Div(x, m) => x.eval(env) / m,
                T::Rem(x, m) => x.eval(env) % m,
                T::Clamp(x, lo, hi) => x.eval(env).clamp(*lo, *hi),
            }
        }

        fn build(&self, r: &Ranges) -> Index {
            match self {
                T::Var(v) => Index::var(VARS[*v]),
                T::Const(c) => Index::constant(*c),
                T::Add(x, y) => x.build(r).add(&y.build(r)),
                T::Sub(x, y) => x.build(r).sub(&y.build(r)),
                T::Scale(x, c) => x.build(r).scale(*c),
                T::Div(x, m) => x.build(r).div(*m, r),
                T::Rem(x, m) => x.build(r).rem(*m, r),
                T::Clamp(x, lo, hi) => x.build(r).clamp_to(*lo, *hi, r),
            }
        }
    }

    fn tree() -> impl proptest::strategy::Strategy<Value = T> {
        use proptest::prelude::*;
        let leaf = prop_oneof![3 => (0usize..3).prop_map(T::Var), 1 => (0i64..20).prop_map(T::Const)];
        // Small trees, mostly of the shapes views build (scaled sums, nested quotients and
        // remainders); differences and clamps less often.
        leaf.prop_recursive(4, 12, 2, |inner| {
            prop_oneof![
                3 => (inner.clone(), inner.clone()).prop_map(|(x, y)| T::Add(Box::new(x), Box::new(y))),
                1 => (inner.clone(), inner.clone()).prop_map(|(x, y)| T::Sub(Box::new(x), Box::new(y))),
                2 => (inner.clone(), 1i64..6).prop_map(|(x, c)| T::Scale(Box::new(x), c)),
                3 => (inner.clone(), 1i64..7).prop_map(|(x, m)| T::Div(Box::new(x), m)),
                3 => (inner.clone(), 1i64..7).prop_map(|(x, m)| T::Rem(Box::new(x), m)),
                1 => (inner, 0i64..8, 0i64..8).prop_map(|(x, a, b)| T::Clamp(Box::new(x), a.min(b), a.max(b))),
            ]
        })
    }

    fn ranges_of(n: &[i64; 3]) -> Ranges {
        let mut r = Ranges::default();
        for (v, n) in VARS.iter().zip(n) {
            r.set(*v, 0, n - 1);
        }
        r
    }

    /// Every variable assignment in range.
    fn envs(n: &[i64; 3]) -> impl Iterator<Item = Vec<i64>> + '_ {
        (0..n[0]).flat_map(move |a| (0..n[1]).flat_map(move |b| (0..n[2]).map(move |c| vec![a, b, c])))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Simplification keeps the value (as C computes it) for every variable value in range.
        #[test]
        fn simplification_keeps_value(t in tree(), n in [1i64..14, 1i64..14, 1i64..14]) {
            let r = ranges_of(&n);
            let e = t.build(&r);
            for env in envs(&n) {
                let lookup = |v: VarId| VARS.iter().position(|x| *x == v).map_or(0, |k| env[k]);
                proptest::prop_assert_eq!(e.eval(&lookup), t.eval(&env), "{} at {:?}", e, env);
            }
        }

        /// Substituting a value for a variable (as unrolling does) and simplifying again with
        /// the variable's range narrowed to that value keeps the value too.
        #[test]
        fn substitution_keeps_value(t in tree(), n in [1i64..14, 1i64..14, 1i64..14], pick in 0i64..14) {
            let r = ranges_of(&n);
            let e = t.build(&r);
            let a = pick % n[0];
            let mut r2 = r.clone();
            r2.set(VARS[0], a, a);
            let s = e.subst(VARS[0], &Index::constant(a), &r2);
            proptest::prop_assert!(!s.mentions(VARS[0]), "{}", s);
            for env in envs(&n).filter(|env| env[0] == a) {
                let lookup = |v: VarId| VARS.iter().position(|x| *x == v).map_or(0, |k| env[k]);
                proptest::prop_assert_eq!(s.eval(&lookup), t.eval(&env), "{} -> {} at {:?}", e, s, env);
            }
        }
    }

    #[test]
    fn clamp_and_print() {
        let r = r();
        let e = Index::var(I).plus(-1);
        assert_eq!(show(&e.clamp_to(0, 7, &r)), "clamp(i - 1, 0, 7)");
        assert_eq!(show(&Index::var(I).clamp_to(0, 7, &r)), "i");
        assert_eq!(show(&Index::var(K).plus(3).div(4, &r).scale(2)), "((k + 3) / 4) * 2");
    }
}

//! Integer index expressions: linear combinations of atoms with constant coefficients, simplified
//! with the value ranges of loop variables (Lift's arithmetic expressions, restricted to what
//! views produce once every size is a constant).
//!
//! Simplification happens in the constructors: `(i * 16 + j) / 16` is `i` when `j` lies in
//! `0..16`, `(i * 16 + j) % 16` is `j`, and `(k / m) * m + k % m` is `k`. Indices are never
//! negative where they are divided, so C's truncating division agrees with the floor division
//! the rules assume; where that cannot be shown, the division is kept as it is.

use std::collections::BTreeMap;
use std::fmt;

/// An indivisible part of an index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A loop or let variable of the kernel.
    Var(String),
    /// `e / m`.
    Div(Box<Index>, i64),
    /// `e % m`.
    Rem(Box<Index>, i64),
    /// `clamp(e, lo, hi)`.
    Clamp(Box<Index>, i64, i64),
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
    vars: BTreeMap<String, (i64, i64)>,
}

impl Ranges {
    /// Records that `var` lies in `lo..=hi`.
    pub fn set(&mut self, var: &str, lo: i64, hi: i64) {
        self.vars.insert(var.to_string(), (lo, hi));
    }

    /// The range of an atom.
    pub fn atom(&self, a: &Atom) -> (i64, i64) {
        match a {
            Atom::Var(v) => self.vars.get(v).copied().unwrap_or((i64::MIN / 4, i64::MAX / 4)),
            Atom::Div(e, m) => {
                let (lo, hi) = self.of(e);
                (lo.div_euclid(*m), hi.div_euclid(*m))
            }
            Atom::Rem(e, m) => {
                let (lo, _) = self.of(e);
                if lo >= 0 {
                    (0, m - 1)
                } else {
                    (-(m - 1), m - 1)
                }
            }
            Atom::Clamp(_, lo, hi) => (*lo, *hi),
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
    pub fn var(name: &str) -> Index {
        Index::atom(Atom::Var(name.to_string()))
    }

    fn atom(a: Atom) -> Index {
        Index { terms: vec![(a, 1)], constant: 0 }
    }

    /// The value, if constant.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
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
            let div = Atom::Div(k.clone(), *m);
            if c != 0 && map.get(&div) == Some(&(c * m)) {
                map.remove(&div);
                map.remove(&rem);
                extra = extra.add(&k.scale(c));
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

    /// `self / m` (floor division of a non-negative index by a positive constant).
    pub fn div(&self, m: i64, ranges: &Ranges) -> Index {
        if m == 1 {
            return self.clone();
        }
        let (lo, hi) = ranges.of(self);
        if lo >= 0 && hi < m {
            return Index::constant(0);
        }
        if lo < 0 {
            return Index::atom(Atom::Div(Box::new(self.clone()), m));
        }
        let (q, r) = self.split_by(m);
        let (rlo, rhi) = ranges.of(&r);
        if rlo >= 0 && rhi < m {
            return q;
        }
        if rlo >= 0 {
            // floor((q*m + r) / m) = q + floor(r / m) for r >= 0
            return q.add(&Index::atom(Atom::Div(Box::new(r), m)));
        }
        Index::atom(Atom::Div(Box::new(self.clone()), m))
    }

    /// `self % m` (of a non-negative index by a positive constant).
    pub fn rem(&self, m: i64, ranges: &Ranges) -> Index {
        if m == 1 {
            return Index::constant(0);
        }
        let (lo, _) = ranges.of(self);
        if lo < 0 {
            return Index::atom(Atom::Rem(Box::new(self.clone()), m));
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

    /// Prints with `clamp` written by the caller (it differs between OpenCL and CUDA).
    pub fn render(&self, clamp: &dyn Fn(&str, i64, i64) -> String) -> String {
        let mut terms: Vec<&(Atom, i64)> = self.terms.iter().collect();
        // Larger strides first: `i * 64 + j` rather than `j + i * 64`.
        terms.sort_by(|x, y| y.1.abs().cmp(&x.1.abs()).then_with(|| x.0.cmp(&y.0)));
        let mut s = String::new();
        for (a, c) in terms {
            let atom = match a {
                Atom::Var(v) => v.clone(),
                Atom::Div(e, m) => format!("{} / {m}", paren(e, clamp)),
                Atom::Rem(e, m) => format!("{} % {m}", paren(e, clamp)),
                Atom::Clamp(e, lo, hi) => clamp(&e.render(clamp), *lo, *hi),
            };
            let needs_paren = matches!(a, Atom::Div(..) | Atom::Rem(..)) && c.abs() != 1;
            let atom = if needs_paren { format!("({atom})") } else { atom };
            let mag = if c.abs() == 1 { atom } else { format!("{atom} * {}", c.abs()) };
            if s.is_empty() {
                if *c < 0 {
                    s.push('-');
                }
                s.push_str(&mag);
            } else {
                s.push_str(if *c < 0 { " - " } else { " + " });
                s.push_str(&mag);
            }
        }
        if s.is_empty() {
            return self.constant.to_string();
        }
        match self.constant.cmp(&0) {
            std::cmp::Ordering::Greater => s.push_str(&format!(" + {}", self.constant)),
            std::cmp::Ordering::Less => s.push_str(&format!(" - {}", -self.constant)),
            std::cmp::Ordering::Equal => {}
        }
        s
    }

    /// True when printing needs parentheses inside a product or quotient.
    pub fn is_compound(&self) -> bool {
        !(self.terms.is_empty() || (self.terms.len() == 1 && self.constant == 0 && self.terms[0].1 == 1))
    }
}

fn paren(e: &Index, clamp: &dyn Fn(&str, i64, i64) -> String) -> String {
    if e.is_compound() {
        format!("({})", e.render(clamp))
    } else {
        e.render(clamp)
    }
}

impl fmt::Display for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.render(&|e, lo, hi| format!("clamp({e}, {lo}, {hi})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Ranges {
        let mut r = Ranges::default();
        r.set("i", 0, 7);
        r.set("j", 0, 15);
        r.set("k", 0, 127);
        r
    }

    #[test]
    fn split_then_join_cancels() {
        let r = r();
        let i = Index::var("i");
        let j = Index::var("j");
        let flat = i.scale(16).add(&j);
        assert_eq!(flat.div(16, &r), i);
        assert_eq!(flat.rem(16, &r), j);
        let k = Index::var("k");
        let back = k.div(16, &r).scale(16).add(&k.rem(16, &r));
        assert_eq!(back, k);
        assert_eq!(k.div(16, &r).to_string(), "k / 16");
        assert_eq!(Index::var("i").scale(1).plus(0).div(1, &r).to_string(), "i");
    }

    #[test]
    fn clamp_and_print() {
        let r = r();
        let e = Index::var("i").plus(-1);
        assert_eq!(e.clamp_to(0, 7, &r).to_string(), "clamp(i - 1, 0, 7)");
        assert_eq!(Index::var("i").clamp_to(0, 7, &r).to_string(), "i");
        assert_eq!(Index::var("k").plus(3).div(4, &r).scale(2).to_string(), "((k + 3) / 4) * 2");
    }
}

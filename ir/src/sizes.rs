//! Concrete values of size variables: the one representation every stage passes around.
//!
//! A program's sizes are symbolic ([`crate::Size`]); running, checking at given sizes, lowering
//! and tuning need values for them. [`Sizes`] maps size-variable names to values, ordered by
//! name (printing and hashing are deterministic), and serializes as a JSON/TOML table.

use crate::ast::Program;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Values of size variables, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sizes(BTreeMap<String, i64>);

/// A size variable has neither a given value nor a default.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("size `{0}` has no default value: give --size {0}=VALUE")]
pub struct MissingSize(pub String);

impl Sizes {
    /// No values.
    pub fn new() -> Sizes {
        Sizes::default()
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.get(name).copied()
    }

    /// Sets `name` to `value`, returning the old value.
    pub fn insert(&mut self, name: impl Into<String>, value: i64) -> Option<i64> {
        self.0.insert(name.into(), value)
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<i64> {
        self.0.remove(name)
    }

    /// These values with `name` set to `value`.
    pub fn with(mut self, name: impl Into<String>, value: i64) -> Sizes {
        self.insert(name, value);
        self
    }

    /// True when `name` has a value.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The values, ordered by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there is no value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These values, then `other`'s for the names these lack.
    pub fn or(&self, other: &Sizes) -> Sizes {
        let mut out = self.clone();
        for (k, v) in other.iter() {
            if !out.contains(k) {
                out.insert(k, v);
            }
        }
        out
    }
}

impl std::ops::Index<&str> for Sizes {
    type Output = i64;

    /// The value of a size that must have one (panics otherwise, like a map's index).
    fn index(&self, name: &str) -> &i64 {
        match self.0.get(name) {
            Some(v) => v,
            None => panic!("size `{name}` has no value"),
        }
    }
}

impl<K: Into<String>> FromIterator<(K, i64)> for Sizes {
    fn from_iter<I: IntoIterator<Item = (K, i64)>>(iter: I) -> Sizes {
        Sizes(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl<'a> IntoIterator for &'a Sizes {
    type Item = (&'a str, i64);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, i64)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl fmt::Display for Sizes {
    /// `N=64,M=8`, ordered by name (the `--size` flag's syntax).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

impl Program {
    /// The size variables the program uses: in its parameters' and result's types, and in the
    /// nodes reachable from its body (splits, slides, pads, `at`, vector widths, annotations).
    /// A stage of a pipeline declares every size of its program, and uses some
    /// ([`crate::stages`]).
    pub fn used_sizes(&self) -> std::collections::BTreeSet<String> {
        use crate::ast::{Node, Prim};
        let mut out: std::collections::BTreeSet<String> = self.params.iter().flat_map(|q| q.ty.size_vars()).collect();
        out.extend(self.ret.iter().flat_map(|t| t.size_vars()));
        if self.root.index() >= self.nodes.len() {
            return out;
        }
        self.preorder(self.root, &mut |_, n| match n {
            Node::Prim(Prim::Split(a) | Prim::At(a)) => out.extend(a.vars()),
            Node::Prim(Prim::Slide(a, b) | Prim::Pad(a, b, _)) => out.extend(a.vars().into_iter().chain(b.vars())),
            Node::Prim(Prim::AsVector(w) | Prim::VectorFromScalar(w)) => out.extend(w.var.clone()),
            Node::Lam(_, Some(t)) => out.extend(t.size_vars()),
            _ => {}
        });
        out
    }

    /// Values of the size variables that have defaults.
    pub fn default_sizes(&self) -> Sizes {
        self.sizes.iter().filter_map(|s| Some((s.name.clone(), s.default?))).collect()
    }

    /// Every size variable's value: `given` first, then the program's defaults. Values of names
    /// the program does not declare are kept.
    pub fn resolve_sizes(&self, given: &Sizes) -> Result<Sizes, MissingSize> {
        let mut out = given.clone();
        for v in &self.sizes {
            if !out.contains(&v.name) {
                out.insert(v.name.clone(), v.default.ok_or_else(|| MissingSize(v.name.clone()))?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_values_come_before_defaults() {
        let p = crate::parse("size N = 4, M = 2\ndef f(x: [[f32]M]N) = x").unwrap();
        let s = p.resolve_sizes(&Sizes::new().with("N", 7)).unwrap();
        assert_eq!(s.to_string(), "M=2,N=7");
        assert_eq!(s["N"], 7);
        let q = crate::parse("def f(x: [f32]N) = x").unwrap();
        assert_eq!(q.resolve_sizes(&Sizes::new()), Err(MissingSize("N".into())));
    }

    #[test]
    fn used_sizes_are_those_of_the_types_and_the_reachable_nodes() {
        let p = crate::parse(
            "size N = 8, t in 1..8 = 2, u in 1..8 = 4, vw in 2..16 = 4
def f(x: [f32]N) = join(map(fun(v: [f32]t => v), split(t, x)))",
        )
        .unwrap();
        let used: Vec<String> = p.used_sizes().into_iter().collect();
        assert_eq!(used, ["N", "t"]);
    }

    #[test]
    fn serializes_as_a_table() {
        let s: Sizes = [("b", 2), ("a", 1)].into_iter().collect();
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"a":1,"b":2}"#);
        assert_eq!(s.or(&Sizes::new().with("c", 3).with("a", 9)).to_string(), "a=1,b=2,c=3");
    }
}

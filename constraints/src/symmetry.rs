//! Interchangeable dimensions: two mappings that differ only by a renaming of the parallel
//! dimensions (`G0` <-> `G1` across the whole mapping, with the `W` and `L` codes of those
//! dimensions) compute the same thing with the launch's axes swapped. The space counts them
//! apart (they differ in coalescing and device limits); [`Space::count_classes`] also counts
//! them as one, by canonical form: dimensions renamed in the order the maps first use them.
//! That needs the whole enumeration; for spaces too large for it, [`crate::Options::symmetry_breaking`]
//! breaks the symmetry in the search itself (family 13): the space then holds only canonical
//! mappings, and its count (exact or estimated) is the count up to renaming, when
//! [`Space::dimensions_interchangeable`].

use crate::{Code, Count, Error, Mapping, Space};
use std::collections::HashSet;
use std::ops::ControlFlow;

fn dim(c: Code) -> Option<u8> {
    match c {
        Code::Lcl(d) | Code::Wrg(d) | Code::Glb(d) => Some(d),
        Code::Seq | Code::Fused | Code::Vec => None,
    }
}

fn with_dim(c: Code, d: u8) -> Code {
    match c {
        Code::Lcl(_) => Code::Lcl(d),
        Code::Wrg(_) => Code::Wrg(d),
        Code::Glb(_) => Code::Glb(d),
        c => c,
    }
}

impl Mapping {
    /// This mapping with its parallel dimensions renamed in the order the maps (in the space's
    /// order) first use them: the first dimension used becomes 0, the next new one 1, then 2.
    /// Two mappings that differ only by a renaming of dimensions have the same canonical form.
    pub fn canonical(&self) -> Mapping {
        let mut rename: [Option<u8>; 3] = [None; 3];
        let mut next = 0u8;
        let codes = self
            .codes
            .iter()
            .map(|&c| match dim(c) {
                Some(d) => {
                    let slot = &mut rename[d as usize % 3];
                    let new = *slot.get_or_insert_with(|| {
                        next += 1;
                        next - 1
                    });
                    with_dim(c, new)
                }
                None => c,
            })
            .collect();
        Mapping { codes }
    }
}

impl Space {
    /// The number of valid mappings counted up to a renaming of dimensions (distinct
    /// [`Mapping::canonical`] forms), when the space has at most `options.count_limit`
    /// mappings (`None` otherwise: the enumeration it needs would not end in the budget).
    pub fn count_classes(&self) -> Result<Option<u64>, Error> {
        Ok(self.count_both(0)?.1)
    }

    /// [`Space::count`] and [`Space::count_classes`] from one enumeration: the count (exact, or
    /// Knuth's estimate beyond `options.count_limit`) and, when exact, the count up to a
    /// renaming of dimensions.
    pub fn count_both(&self, seed: u64) -> Result<(Count, Option<u64>), Error> {
        let limit = self.options.count_limit;
        let mut classes = HashSet::new();
        let stats = self.enumerate(Some(limit.saturating_add(1)), |m| {
            classes.insert(m.canonical());
            ControlFlow::Continue(())
        })?;
        if stats.complete && stats.produced <= limit {
            return Ok((Count::Exact(stats.produced), Some(classes.len() as u64)));
        }
        Ok((self.estimate(seed)?, None))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Code, Mapping};

    #[test]
    fn canonical_renames_dimensions_in_order_of_first_use() {
        let m = Mapping { codes: vec![Code::Glb(1), Code::Seq, Code::Glb(0), Code::Wrg(1)] };
        let c = m.canonical();
        assert_eq!(c.codes, vec![Code::Glb(0), Code::Seq, Code::Glb(1), Code::Wrg(0)]);
        assert_eq!(c.canonical(), c, "idempotent");
        let swapped = Mapping { codes: vec![Code::Glb(0), Code::Seq, Code::Glb(1), Code::Wrg(0)] };
        assert_eq!(swapped.canonical(), c);
        let third = Mapping { codes: vec![Code::Lcl(2), Code::Vec] };
        assert_eq!(third.canonical().codes, vec![Code::Lcl(0), Code::Vec]);
    }
}

//! The mapping written in a hand-mapped program, read back into codes, so that the space
//! decides whether a program written with `mapGlb`/`mapWrg`/`mapLcl`/`mapSeq`/`mapVec` is valid
//! before code generation lowers it: one truth for validity.
//!
//! A hand-mapped program is read as the high-level program it maps ([`unmapped`]: every map
//! kind made `map`, `reduceSeq` made `reduce`, labels and everything else kept) together with
//! one code per map of that program's space ([`Space::written_mapping`]). Fusion (`F`) is a
//! program transformation, so a hand-written fused loop is read as the map it is; its codes are
//! never `F`.

use crate::{Code, Error, Mapping, Space};
use mapsat_ir::ast::{MapKind, Node, Prim};
use mapsat_ir::Program;

/// `p` with every map kind made `map` (abstract) and every `reduceSeq` made `reduce`: the
/// high-level program whose space a hand mapping of `p` is checked in.
pub fn unmapped(p: &Program) -> Program {
    let mut q = p.clone();
    for n in &mut q.nodes {
        match n {
            Node::Prim(Prim::Map { kind, .. }) => *kind = MapKind::Abstract,
            Node::Prim(Prim::Reduce { seq }) => *seq = false,
            _ => {}
        }
    }
    q
}

/// True when some map of `p` has a low-level kind (`mapSeq`, `mapGlb`, ...).
pub fn is_hand_mapped(p: &Program) -> bool {
    p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::Map { kind, .. }) if *kind != MapKind::Abstract))
}

/// The code a map kind stands for.
fn code_of(kind: MapKind) -> Option<Code> {
    Some(match kind {
        MapKind::Abstract => return None,
        MapKind::Seq => Code::Seq,
        MapKind::Vec => Code::Vec,
        MapKind::Lcl(d) => Code::Lcl(d),
        MapKind::Wrg(d) => Code::Wrg(d),
        MapKind::Glb(d) => Code::Glb(d),
    })
}

impl Space {
    /// The mapping written in `mapped`, a hand-mapped form of this space's program (the space
    /// is generated from [`unmapped`]`(mapped)`): the code of each map's kind. A map of the
    /// space that is left abstract, or missing from `mapped`, is an error naming it.
    pub fn written_mapping(&self, mapped: &Program) -> Result<Mapping, Error> {
        let kind_of = |label: &str| {
            mapped.nodes.iter().find_map(|n| match n {
                Node::Prim(Prim::Map { kind, label: l }) if l == label => Some(*kind),
                _ => None,
            })
        };
        let mut codes = Vec::with_capacity(self.labels.len());
        let mut missing = Vec::new();
        for label in &self.labels {
            match kind_of(label).and_then(code_of) {
                Some(c) => codes.push(c),
                None => missing.push(label.clone()),
            }
        }
        if !missing.is_empty() {
            return Err(Error::MissingMaps(format!(
                "{} (a hand-mapped program gives every map that computes a low-level kind)",
                missing.join(", ")
            )));
        }
        Ok(Mapping { codes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    fn space_of(mapped: &Program) -> Space {
        Space::generate(&unmapped(mapped), Options::default()).unwrap()
    }

    #[test]
    fn reads_back_the_kinds_of_a_hand_mapped_listing1() {
        let src = "size I = 4, J = 8, K = 16
def f(input: [[[f32]K]J]I) =
  mapWrg@A(0, fun(slab =>
    let buf = toLocal(mapLcl@B(1, mapLcl@C(0, fun(x => x * 2.0 + 1.0)), slab)) in
    mapLcl@D(1, mapLcl@E(0, fun(x => x * x)), transpose(buf))),
    input)";
        let p = mapsat_ir::parse(src).unwrap();
        assert!(is_hand_mapped(&p));
        let space = space_of(&p);
        let m = space.written_mapping(&p).unwrap();
        assert_eq!(space.show(&m).to_string(), "A=W0,B=L1,C=L0,D=L1,E=L0");
        // One work group in dimension 1 (mapLcl(1), no mapWrg(1)): only rule 4, a preference.
        let e = space.explain(&m).unwrap();
        assert!(!e.valid);
        assert!(e.violated.iter().all(|c| c.family == crate::Family::LocalDims), "{:?}", e.violated);
    }

    #[test]
    fn an_abstract_map_is_named() {
        let src = "size N = 8
def f(xs: [[f32]N]N) = mapGlb@A(0, map@B(fun(x => x + 1.0)), xs)";
        let p = mapsat_ir::parse(src).unwrap();
        let space = space_of(&p);
        let e = space.written_mapping(&p).unwrap_err().to_string();
        assert!(e.contains('B'), "{e}");
        assert!(!is_hand_mapped(&unmapped(&p)));
    }
}

//! The encoding of a map's parallelization choice (Table 2 of Mogers et al., extended).

use std::fmt;

/// How one map is executed. The integer encoding is the paper's Table 2 with vectorization added
/// as code 2: `code / 10` is the level (0 within one thread, 1 local, 2 work group, 3 global) and
/// `code % 10` the dimension of a parallel map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// `S`, 0: `mapSeq`.
    Seq,
    /// `F`, 1: fused with the outer map (`map(map(f))` becomes `split o map(f) o join`).
    Fused,
    /// `V`, 2: `mapVec`, over the lanes of a vector (a sequential level; mapsat's extension).
    Vec,
    /// `L0..L2`, 10–12: `mapLcl(d)`.
    Lcl(u8),
    /// `W0..W2`, 20–22: `mapWrg(d)`.
    Wrg(u8),
    /// `G0..G2`, 30–32: `mapGlb(d)`.
    Glb(u8),
}

impl Code {
    /// Every code, in increasing encoding.
    pub const ALL: [Code; 12] = [
        Code::Seq,
        Code::Fused,
        Code::Vec,
        Code::Lcl(0),
        Code::Lcl(1),
        Code::Lcl(2),
        Code::Wrg(0),
        Code::Wrg(1),
        Code::Wrg(2),
        Code::Glb(0),
        Code::Glb(1),
        Code::Glb(2),
    ];

    /// The integer encoding.
    pub fn to_int(self) -> i64 {
        match self {
            Code::Seq => 0,
            Code::Fused => 1,
            Code::Vec => 2,
            Code::Lcl(d) => 10 + d as i64,
            Code::Wrg(d) => 20 + d as i64,
            Code::Glb(d) => 30 + d as i64,
        }
    }

    /// The code of an integer, if it is one.
    pub fn from_int(v: i64) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.to_int() == v)
    }

    /// Whether the code maps over work items or work groups (`L`, `W`, `G`): a kernel without
    /// such a map runs in one work item.
    pub fn is_parallel(&self) -> bool {
        matches!(self, Code::Lcl(_) | Code::Wrg(_) | Code::Glb(_))
    }

    /// Parses `S`, `F`, `V`, `L0`..`G2` (case-insensitive).
    pub fn parse(s: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.to_string().eq_ignore_ascii_case(s.trim()))
    }

    /// The matching `MapKind` of the IR, for a code that is not `Fused`.
    pub fn map_kind(self) -> Option<mapsat_ir::ast::MapKind> {
        use mapsat_ir::ast::MapKind;
        Some(match self {
            Code::Seq => MapKind::Seq,
            Code::Fused => return None,
            Code::Vec => MapKind::Vec,
            Code::Lcl(d) => MapKind::Lcl(d),
            Code::Wrg(d) => MapKind::Wrg(d),
            Code::Glb(d) => MapKind::Glb(d),
        })
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Code::Seq => write!(f, "S"),
            Code::Fused => write!(f, "F"),
            Code::Vec => write!(f, "V"),
            Code::Lcl(d) => write!(f, "L{d}"),
            Code::Wrg(d) => write!(f, "W{d}"),
            Code::Glb(d) => write!(f, "G{d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for c in Code::ALL {
            assert_eq!(Code::from_int(c.to_int()), Some(c));
            assert_eq!(Code::parse(&c.to_string()), Some(c));
        }
        assert_eq!(Code::parse("w1"), Some(Code::Wrg(1)));
        assert_eq!(Code::parse("X"), None);
    }
}

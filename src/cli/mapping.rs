//! `--mapping` on `emit` and `run`: a high-level program mapped by the user, checked by the
//! space first (a mapping the space rejects is refused with its explanation).

use super::{CliResult, Failure};
use mapsat::ir::{profile::Profile, Program, Sizes};
use mapsat_constraints::{readback, Code, Constraint, Explanation, Mapping, Options, Space};

/// The violated constraints of an explanation, one per line.
pub(super) fn violations(space: &Space, e: &Explanation) -> String {
    let mut msg = format!("invalid: {} violated constraint(s)\n", e.violated.len());
    for c in &e.violated {
        msg += &format!("  [{}] maps {}: {}\n", c.family, space.labels_of(&c.maps).join(", "), c.text);
    }
    msg
}

/// `p` with `mapping` applied at `sizes`, and the work-group size to use: `local`, else the
/// space's choice when the mapping has `mapLcl` maps (in each dimension at most its longest
/// `mapLcl` loop), else code generation's default. A program without a map takes the empty
/// mapping: its reductions run in one work item.
pub(super) fn apply(
    p: &Program,
    sizes: &Sizes,
    mapping: &str,
    profile: Option<Profile>,
    local: Option<Vec<i64>>,
) -> CliResult<(Program, Option<Vec<i64>>)> {
    let options = Options { profile, sizes: sizes.clone(), ..Options::default() };
    let space = match Space::generate(p, options) {
        // Nothing to map (a kernel that only reduces): one work item runs it, the empty mapping.
        Err(mapsat_constraints::Error::NoMaps) if mapping.trim().is_empty() => {
            return Ok((mapsat_constraints::sequential(p), local));
        }
        s => s.map_err(rejected)?,
    };
    let m = space.parse_mapping(mapping).map_err(|e| Failure::Usage(e.to_string()))?;
    let suggested = check(&space, &m, sizes, local.as_deref(), false)?;
    let q = space.apply(p, &m).map_err(rejected)?;
    Ok((q, local.or(suggested)))
}

/// A program given without a mapping: itself, except that one without a map that computes
/// (a plain reduction) runs in one work item ([`mapsat_constraints::sequential`]), as with the
/// empty mapping.
pub(super) fn unmapped(p: Program, sizes: &Sizes) -> Program {
    let reduces = p.nodes.iter().any(|n| matches!(n, mapsat::ir::Node::Prim(mapsat::ir::Prim::Reduce { seq: false })));
    match reduces && no_maps(&p, sizes) {
        true => mapsat_constraints::sequential(&p),
        false => p,
    }
}

/// True when `p`'s space is [`mapsat_constraints::Error::NoMaps`].
pub(super) fn no_maps(p: &Program, sizes: &Sizes) -> bool {
    let options = Options { sizes: sizes.clone(), ..Options::default() };
    matches!(Space::generate(p, options), Err(mapsat_constraints::Error::NoMaps))
}

/// A hand-mapped program (`mapGlb`, `mapLcl`, ... written in it) checked by the space of the
/// program it maps, as `--mapping` is: its mapping is read back into codes, and one the space
/// rejects is refused with its explanation. The work-group size stays the user's (`local`) or
/// code generation's default.
pub(super) fn check_written(
    p: &Program,
    sizes: &Sizes,
    profile: Option<Profile>,
    local: Option<&[i64]>,
) -> CliResult<()> {
    let space = space_of(&readback::unmapped(p), sizes, profile)?;
    let m = space.written_mapping(p).map_err(rejected)?;
    check(&space, &m, sizes, local, true).map(|_| ()).map_err(|e| match e {
        Failure::Rejected(msg) => {
            Failure::Rejected(format!("{msg}(the mapping written in the program, read back: {})\n", space.show(&m)))
        }
        usage => usage,
    })
}

fn rejected(e: mapsat_constraints::Error) -> Failure {
    Failure::Rejected(format!("error: {e}"))
}

fn space_of(p: &Program, sizes: &Sizes, profile: Option<Profile>) -> CliResult<Space> {
    Space::generate(p, Options { profile, sizes: sizes.clone(), ..Options::default() }).map_err(rejected)
}

/// Checks `m` in `space`: the mapping is valid at `sizes` (by hand, `written`, it may violate
/// the space's preferences, [`Family::is_preference`], with a warning), and `local`, when given
/// with `mapLcl` maps, is one of the space's local sizes for it. Returns the space's choice of
/// a work-group size when the mapping has `mapLcl` maps.
fn check(
    space: &Space,
    m: &Mapping,
    sizes: &Sizes,
    local: Option<&[i64]>,
    written: bool,
) -> CliResult<Option<Vec<i64>>> {
    let e = space.explain(m).map_err(rejected)?;
    let refused = |c: &&Constraint| !(written && c.family.is_preference());
    if e.violated.iter().any(|c| refused(&c)) {
        return Err(Failure::Rejected(format!(
            "error: the mapping is not valid at {sizes}\n{}",
            violations(space, &e)
        )));
    }
    if !e.violated.is_empty() {
        eprint!(
            "warning: lowered as written, although the space leaves this mapping out of its search (its rules against idle or repeated threads and unfused sequential nests; they are not needed for a correct result)\n{}",
            violations(space, &e).trim_start_matches("invalid: ")
        );
    }
    let has_lcl = m.codes.iter().any(|c| matches!(c, Code::Lcl(_)));
    if let (Some(l), true) = (local, has_lcl && space.local_size_count() > 0) {
        let mut padded = l.to_vec();
        padded.resize(space.local_size_count(), 1);
        let broken = space.local_size_violations(m, &padded, written).map_err(rejected)?;
        if !broken.is_empty() {
            let mut msg = format!("error: --local {l:?} is not valid with this mapping:\n");
            for c in broken {
                msg += &format!("  [{}] {}\n", c.family, c.text);
            }
            if let Some(s) = &e.local_sizes {
                msg += &format!("the space proposes {s:?}\n");
            }
            return Err(Failure::Rejected(msg));
        }
    }
    Ok(if has_lcl { e.local_sizes } else { None })
}

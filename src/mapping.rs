//! A high-level program mapped by hand (`--mapping "A=G0,B=S"` on the command line, `mapping=`
//! from Python): the mapping is checked by the space first, and one the space rejects is
//! refused with every constraint it violates.

use crate::error::Error;
use crate::ir::{profile::Profile, Node, Prim, Program, Sizes};
use mapsat_constraints::{readback, Code, Constraint, Explanation, Mapping, Options, Space};

/// A mapping or work-group size not written right is [`Error::Usage`]; an invalid one, or a
/// program without a space, [`Error::Rejected`].
type R<T> = Result<T, Error>;

/// A mapping that passed the space's check.
pub struct Checked {
    /// The space's choice of a work-group size when the mapping has `mapLcl` maps.
    pub local: Option<Vec<i64>>,
    /// Preferences a hand-written mapping breaks (lowered as written, with this warning).
    pub warning: Option<String>,
}

/// The violated constraints of an explanation, one per line.
pub fn violations(space: &Space, e: &Explanation) -> String {
    let mut msg = format!("invalid: {} violated constraint(s)\n", e.violated.len());
    for c in &e.violated {
        msg += &format!("  {}\n", describe(space, c));
    }
    msg
}

/// A constraint as `[family] maps A, B: text`, or `[family] text` for one of no map's (a
/// work-group size's limit).
pub fn describe(space: &Space, c: &Constraint) -> String {
    match c.maps.is_empty() {
        true => format!("[{}] {}", c.family, c.text),
        false => format!("[{}] maps {}: {}", c.family, space.labels_of(&c.maps).join(", "), c.text),
    }
}

/// A program ready to lower: mapped, with its work-group size.
pub struct Prepared {
    /// The mapped program.
    pub program: Program,
    /// The work-group size to give code generation (`None`: its default).
    pub local: Option<Vec<i64>>,
    /// Preferences a hand-mapped program breaks ([`Checked::warning`]).
    pub warning: Option<String>,
}

/// The program to lower and its work-group size: `p` mapped by `mapping` ([`apply`]), else a
/// hand-mapped `p` checked as written ([`check_written`]), else `p` as it is ([`unmapped`]).
pub fn prepare(
    p: Program,
    sizes: &Sizes,
    mapping: Option<&str>,
    profile: Option<Profile>,
    local: Option<Vec<i64>>,
) -> R<Prepared> {
    match mapping {
        Some(mapping) => {
            let (program, local) = apply(&p, sizes, mapping, profile, local)?;
            Ok(Prepared { program, local, warning: None })
        }
        None if readback::is_hand_mapped(&p) => {
            let warning = check_written(&p, sizes, profile, local.as_deref())?.warning;
            Ok(Prepared { program: p, local, warning })
        }
        None => Ok(Prepared { program: unmapped(p, sizes), local, warning: None }),
    }
}

/// The device limits under which a program is mapped for `dialect` when no device or profile
/// is named: none for OpenCL (a device is not known), CUDA's for CUDA (those of the built-in
/// `h100` profile: blocks of at most 1,024 threads, 64 in z), so that the space's work group
/// is one CUDA launches.
pub fn default_profile(dialect: mapsat_codegen::Dialect) -> Option<Profile> {
    match dialect {
        mapsat_codegen::Dialect::OpenCl => None,
        mapsat_codegen::Dialect::Cuda => Profile::builtin("h100"),
    }
}

/// `p` with `mapping` applied at `sizes`, and the work-group size to use: `local`, else the
/// space's choice when the mapping has `mapLcl` maps (in each dimension at most its longest
/// `mapLcl` loop), else code generation's default. A program without a map takes the empty
/// mapping: its reductions run in one work item.
pub fn apply(
    p: &Program,
    sizes: &Sizes,
    mapping: &str,
    profile: Option<Profile>,
    local: Option<Vec<i64>>,
) -> R<(Program, Option<Vec<i64>>)> {
    // Nothing to map (a kernel that only reduces) is the empty space: its only mapping, the
    // empty one, runs it in one work item.
    let options = Options { profile, sizes: sizes.clone(), empty_without_maps: true, ..Options::default() };
    let space = Space::generate(p, options).map_err(rejected)?;
    let m = space.parse_mapping(mapping).map_err(|e| Error::Usage(e.to_string()))?;
    let suggested = check(&space, &m, sizes, local.as_deref(), false)?.local;
    let q = space.apply(p, &m).map_err(rejected)?;
    Ok((q, local.or(suggested)))
}

/// Whether one work item runs `p`: it has no parallel map (`mapGlb`, `mapWrg`, `mapLcl`).
pub fn in_one_work_item(p: &Program) -> bool {
    !p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::Map { kind, .. }) if kind.dim().is_some()))
}

/// A program given without a mapping: itself, except that one without a map that computes
/// (a plain reduction) runs in one work item ([`mapsat_constraints::sequential`]), as with the
/// empty mapping.
pub fn unmapped(p: Program, sizes: &Sizes) -> Program {
    let reduces = p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::Reduce { seq: false })));
    match reduces && no_maps(&p, sizes) {
        true => mapsat_constraints::sequential(&p),
        false => p,
    }
}

/// True when `p`'s space is [`mapsat_constraints::Error::NoMaps`].
pub fn no_maps(p: &Program, sizes: &Sizes) -> bool {
    let options = Options { sizes: sizes.clone(), ..Options::default() };
    matches!(Space::generate(p, options), Err(mapsat_constraints::Error::NoMaps))
}

/// A hand-mapped program (`mapGlb`, `mapLcl`, ... written in it) checked by the space of the
/// program it maps, as a given mapping is: its mapping is read back into codes, and one the
/// space rejects is refused with its explanation. The work-group size stays the user's
/// (`local`) or code generation's default.
pub fn check_written(p: &Program, sizes: &Sizes, profile: Option<Profile>, local: Option<&[i64]>) -> R<Checked> {
    let options = Options { profile, sizes: sizes.clone(), ..Options::default() };
    let space = Space::generate(&readback::unmapped(p), options).map_err(rejected)?;
    let m = space.written_mapping(p).map_err(rejected)?;
    check(&space, &m, sizes, local, true).map_err(|e| match e {
        Error::Rejected(msg) => {
            Error::Rejected(format!("{msg}(the mapping written in the program, read back: {})\n", space.show(&m)))
        }
        usage => usage,
    })
}

/// Why code generation refuses `p` mapped by `m`, a mapping valid in `p`'s `space`, at `sizes`
/// under `profile`'s limits with the work-group size `local`: the memory it keeps per work
/// group or work item, or its launch, beyond them. The space counts only the buffers a program
/// stages with `toLocal` against the profile's local memory; code generation also keeps in
/// local memory what a work group's maps compute together. None: it lowers.
pub fn refused_by_codegen(
    space: &Space,
    p: &Program,
    m: &Mapping,
    sizes: &Sizes,
    local: Option<Vec<i64>>,
    profile: &Profile,
) -> Option<String> {
    let q = space.apply(p, m).ok()?;
    let opts = mapsat_codegen::Options::for_profile(sizes.clone(), local, profile);
    let e = mapsat_codegen::emit(&q, &opts, mapsat_codegen::Dialect::OpenCl).err()?;
    Some(format!("code generation refuses this mapping at these sizes (profile `{}`): {}", profile.name, e.kind))
}

fn rejected(e: mapsat_constraints::Error) -> Error {
    Error::Rejected(format!("error: {e}"))
}

/// Checks `m` in `space`: the mapping is valid at `sizes` (by hand, `written`, it may violate
/// the space's preferences, [`mapsat_constraints::Family::is_preference`], with a warning),
/// and `local`, when given with `mapLcl` maps, keeps every rule on work-group sizes.
fn check(space: &Space, m: &Mapping, sizes: &Sizes, local: Option<&[i64]>, written: bool) -> R<Checked> {
    let e = space.explain(m).map_err(rejected)?;
    let refused = |c: &&Constraint| !(written && c.family.is_preference());
    if e.violated.iter().any(|c| refused(&c)) {
        return Err(Error::Rejected(format!("error: the mapping is not valid at {sizes}\n{}", violations(space, &e))));
    }
    let warning = (!e.violated.is_empty()).then(|| {
        format!(
            "warning: lowered as written, although the space leaves this mapping out of its search (its rules against idle or repeated threads and unfused sequential nests; they are not needed for a correct result)\n{}",
            violations(space, &e).trim_start_matches("invalid: ")
        )
    });
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
            return Err(Error::Rejected(msg));
        }
    }
    Ok(Checked { local: if has_lcl { e.local_sizes } else { None }, warning })
}

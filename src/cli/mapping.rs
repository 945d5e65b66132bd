//! `--mapping` on `emit` and `run`: a high-level program mapped by the user, checked by the
//! space first (a mapping the space rejects is refused with its explanation).

use super::{CliResult, Failure};
use mapsat::ir::{profile::Profile, Program, Sizes};
use mapsat_constraints::{Code, Explanation, Options, Space};

/// The violated constraints of an explanation, one per line.
pub(super) fn violations(space: &Space, e: &Explanation) -> String {
    let mut msg = format!("invalid: {} violated constraint(s)\n", e.violated.len());
    for c in &e.violated {
        msg += &format!("  [{}] maps {}: {}\n", c.family, space.labels_of(&c.maps).join(", "), c.text);
    }
    msg
}

/// `p` with `mapping` applied at `sizes`, and the work-group size to use: `local`, else the
/// space's choice when the mapping has `mapLcl` maps (their loops must be divisible by it),
/// else code generation's default.
pub(super) fn apply(
    p: &Program,
    sizes: &Sizes,
    mapping: &str,
    profile: Option<Profile>,
    local: Option<Vec<i64>>,
) -> CliResult<(Program, Option<Vec<i64>>)> {
    let rejected = |e: mapsat_constraints::Error| Failure::Rejected(format!("error: {e}"));
    let space =
        Space::generate(p, Options { profile, sizes: sizes.clone(), ..Options::default() }).map_err(rejected)?;
    let m = space.parse_mapping(mapping).map_err(|e| Failure::Usage(e.to_string()))?;
    let e = space.explain(&m).map_err(rejected)?;
    if !e.valid {
        return Err(Failure::Rejected(format!(
            "error: the mapping is not valid at {sizes}\n{}",
            violations(&space, &e)
        )));
    }
    let has_lcl = m.codes.iter().any(|c| matches!(c, Code::Lcl(_)));
    if let (Some(l), true) = (&local, has_lcl && space.local_size_count() > 0) {
        let mut padded = l.clone();
        padded.resize(space.local_size_count(), 1);
        let valid = space.local_sizes(&m).map_err(rejected)?;
        if !valid.contains(&padded) {
            let some: Vec<String> = valid.iter().take(8).map(|v| format!("{v:?}")).collect();
            return Err(Failure::Rejected(format!(
                "error: --local {l:?} is not valid with this mapping (its mapLcl loops must be divisible by it); valid ones include {}",
                some.join(", ")
            )));
        }
    }
    let q = space.apply(p, &m).map_err(rejected)?;
    let local = local.or(if has_lcl { e.local_sizes } else { None });
    Ok((q, local))
}

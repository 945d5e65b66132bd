//! The candidates of `mapsat tune --variants K`: the input program itself (variant 0) and the
//! rewrite stage's variants of it, each the same function ([`crate::rewrite`]).
//!
//! Only the choice of candidates lives here; the CLI tunes each one with the tuner and keeps
//! the fastest correct kernel (the tuner does not depend on the rewrite stage).

use crate::ir::{self, Program};
use crate::rewrite::stage_choice::{self, StageChoice};
use crate::rewrite::{self, Options, Report, RewriteError};

/// One program to tune.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The program (checked at the sizes; it may declare new tunable tile sizes).
    pub program: Program,
    /// Its structural signature (as `mapsat rewrite` prints it).
    pub signature: String,
    /// Its static cost by the rewrite stage's estimate (`None` for the input program).
    pub cost: Option<usize>,
    /// Where it came from, in words.
    pub description: String,
    /// Where it computes each producer of the input (`let x = toM(..)`): inline, in private,
    /// local or global memory.
    pub stages: Vec<StageChoice>,
}

/// The candidates and what saturation did.
#[derive(Clone, Debug)]
pub struct Candidates {
    /// The input program first, then up to `k - 1` rewrite variants distinct from it, the best
    /// by static cost first.
    pub list: Vec<Candidate>,
    /// The saturation report.
    pub report: Report,
}

/// Why no mapping of `p` can become a kernel at `sizes`, if none can: a kernel of it reads or
/// writes vectors whose lanes are not consecutive in memory (`asVector` of a column of a
/// `transpose`, which the rewrite stage cannot tell from the layout), refused by the space at
/// every mapping; or a kernel's space is empty at its default tile sizes (a tile staged in
/// local memory whose kernel also reads the whole result back: no work group can). A variant
/// like that is left out (it took a place among the K).
pub fn unmappable(p: &Program, sizes: &ir::Sizes) -> Option<String> {
    let stages = ir::stages::split_at(p, sizes).ok()?;
    stages.iter().find_map(|s| {
        let options = mapsat_constraints::Options { sizes: sizes.or(&s.program.default_sizes()), ..Default::default() };
        match mapsat_constraints::Space::generate(&s.program, options) {
            Err(e @ mapsat_constraints::Error::ScatteredVectors(_)) => Some(e.to_string()),
            Ok(space) if space.first(1).is_ok_and(|m| m.is_empty()) => {
                Some(format!("kernel `{}` has no valid mapping at its default sizes", s.program.name))
            }
            _ => None,
        }
    })
}

/// The input program and up to `k - 1` of its variants (`opts.variants` is set to `k`); a
/// variant printed exactly as the input is dropped. Deterministic under a node or iteration
/// budget (a time budget that stops saturation early may change the variants).
pub fn candidates(p: &Program, k: usize, opts: &Options) -> Result<Candidates, RewriteError> {
    let input = ir::print(p);
    let mut list = vec![Candidate {
        program: p.clone(),
        signature: rewrite::extract::signature(p),
        cost: None,
        description: "the input program".into(),
        stages: stage_choice::of(p, p),
    }];
    let opts = Options { variants: k.max(1), ..opts.clone() };
    let out = rewrite::rewrite(p, &opts)?;
    for (n, v) in out.variants.into_iter().enumerate() {
        if list.len() >= k {
            break;
        }
        if ir::print(&v.program) == input || unmappable(&v.program, &opts.sizes).is_some() {
            continue;
        }
        let described = match v.stages.is_empty() {
            true => String::new(),
            false => format!("; stages {}", stage_choice::describe(&v.stages)),
        };
        list.push(Candidate {
            description: format!("rewrite variant {n} (static cost {}{described})", v.cost),
            stages: v.stages,
            program: v.program,
            signature: v.signature,
            cost: Some(v.cost),
        });
    }
    Ok(Candidates { list, report: out.report })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOT: &str = "size N = 64\ndef dot(a: [f32]N, b: [f32]N) : f32 =\n  reduce(add, 0.0, map@A(fun(p => p.0 * p.1), zip(a, b)))\n";

    #[test]
    fn the_input_is_variant_0_and_the_others_differ_from_it() {
        let p = ir::parse(DOT).unwrap();
        let c = candidates(&p, 4, &Options::default()).unwrap();
        assert_eq!(c.list.len(), 4);
        assert_eq!(ir::print(&c.list[0].program), ir::print(&p));
        assert!(c.list[0].cost.is_none());
        let texts: Vec<String> = c.list.iter().map(|c| ir::print(&c.program)).collect();
        for (i, t) in texts.iter().enumerate() {
            assert!(!texts[..i].contains(t), "variant {i} repeats an earlier one:\n{t}");
        }
        assert!(c.list[1..].iter().all(|c| c.cost.is_some()));
    }

    #[test]
    fn one_variant_is_the_input_alone() {
        let p = ir::parse(DOT).unwrap();
        let c = candidates(&p, 1, &Options::default()).unwrap();
        assert_eq!(c.list.len(), 1);
        assert_eq!(c.list[0].description, "the input program");
    }
}

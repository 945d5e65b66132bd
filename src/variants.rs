//! The candidates of `mapsat tune --variants K`: the input program itself (variant 0) and the
//! rewrite stage's variants of it, each the same function ([`crate::rewrite`]).
//!
//! Only the choice of candidates lives here; the CLI tunes each one with the tuner and keeps
//! the fastest correct kernel (the tuner does not depend on the rewrite stage).

use crate::ir::{self, Program};
use crate::rewrite::stage_choice::{self, StageChoice};
use crate::rewrite::{self, Options, Report, RewriteError};
use mapsat_constraints::Mapping;
use std::collections::BTreeSet;

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
/// local memory whose kernel also reads the whole result back: no work group can); or more of
/// its kernels than `without_maps` (the input's, [`kernels_without_maps`]) have no map left
/// (their maps fused into a reduction: one work item runs such a kernel), or all of them do.
/// A variant like that is left out (it took a place among the K).
pub fn unmappable(p: &Program, sizes: &ir::Sizes, without_maps: usize) -> Option<String> {
    let stages = ir::stages::split_at(p, sizes).ok()?;
    let mut mapless = 0;
    stages.iter().find_map(|s| match space(&s.program, sizes) {
        Err(e @ mapsat_constraints::Error::ScatteredVectors(_)) => Some(e.to_string()),
        Ok(space) => match space.first(4) {
            Ok(ms) if ms.is_empty() => {
                Some(format!("kernel `{}` has no valid mapping at its default sizes", s.program.name))
            }
            Ok(ms) => unsupported(&space, &s.program, &ms, sizes),
            Err(_) => None,
        },
        Err(mapsat_constraints::Error::NoMaps) => {
            mapless += 1;
            (mapless > without_maps || mapless == stages.len())
                .then(|| format!("kernel `{}` has no map left", s.program.name))
        }
        _ => None,
    })
}

/// Why code generation refuses kernel `p` under every one of the mappings `ms` (the first few
/// of its `space`) as a construct kernels do not have (an array of tuples stored, where a
/// rewrite split a map from the projection it ends with), if it does.
fn unsupported(space: &mapsat_constraints::Space, p: &Program, ms: &[Mapping], sizes: &ir::Sizes) -> Option<String> {
    let opts = mapsat_codegen::Options { sizes: sizes.or(&p.default_sizes()), ..Default::default() };
    let mut why = None;
    for m in ms {
        match mapsat_codegen::lower(&space.apply(p, m).ok()?, &opts) {
            Err(e) if matches!(e.kind, mapsat_codegen::CodegenErrorKind::Unsupported(_)) => why = Some(e.kind),
            _ => return None,
        }
    }
    why.map(|kind| format!("code generation refuses kernel `{}`: {kind}", p.name))
}

/// How many kernels of `p` have no map (a plain reduction: one work item runs it).
pub fn kernels_without_maps(p: &Program, sizes: &ir::Sizes) -> usize {
    let Ok(stages) = ir::stages::split_at(p, sizes) else { return 0 };
    stages.iter().filter(|s| matches!(space(&s.program, sizes), Err(mapsat_constraints::Error::NoMaps))).count()
}

/// The mapping space of kernel `p` at `sizes` (its defaults for the others).
fn space(p: &Program, sizes: &ir::Sizes) -> Result<mapsat_constraints::Space, mapsat_constraints::Error> {
    let options = mapsat_constraints::Options { sizes: sizes.or(&p.default_sizes()), ..Default::default() };
    mapsat_constraints::Space::generate(p, options)
}

/// The input program and up to `k - 1` of its variants (`opts.variants` is set to `k`); a
/// variant printed exactly as the input is dropped. Deterministic under a node or iteration
/// budget (a time budget that stops saturation early may change the variants).
pub fn candidates(p: &Program, k: usize, opts: &Options) -> Result<Candidates, RewriteError> {
    let input = ir::print(p);
    let mut list = vec![the_input(p)];
    let opts = Options { variants: k.max(1), ..opts.clone() };
    let out = rewrite::rewrite(p, &opts)?;
    let without_maps = kernels_without_maps(p, &opts.sizes);
    for (n, v) in out.variants.into_iter().enumerate() {
        if list.len() >= k {
            break;
        }
        if ir::print(&v.program) == input || unmappable(&v.program, &opts.sizes, without_maps).is_some() {
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

/// The input program as a candidate, the first of [`candidates`].
pub fn the_input(p: &Program) -> Candidate {
    Candidate {
        program: p.clone(),
        signature: rewrite::extract::signature(p),
        cost: None,
        description: "the input program".into(),
        stages: stage_choice::of(p, p),
    }
}

/// One kernel of a program with kernel boundaries, rewritten on its own.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The kernel as a stage of the input (`ir::stages::split`).
    pub stage: ir::stages::Stage,
    /// Its candidates: the kernel as it is (first), then its variants.
    pub candidates: Candidates,
}

/// For a program of several kernels: each kernel's candidates ([`candidates`] of the stage's
/// program alone, up to `k`), the new sizes and map labels of each kernel's variants named
/// apart from the others', so that any choice of one candidate per kernel joins into one
/// program ([`join`]), with one mapping of the whole. Each kernel alone gets the whole
/// saturation budget, where the program's rewrite shares it among all of them and their
/// fusions.
pub fn kernels(p: &Program, k: usize, opts: &Options) -> Result<Vec<Kernel>, RewriteError> {
    let mut reserved = opts.reserved.clone();
    let stages = ir::stages::split(p)?;
    // The labels of the input's kernels, and of the candidates of those before.
    let mut taken: BTreeSet<String> = stages.iter().flat_map(|s| s.program.map_labels()).collect();
    let mut out = Vec::new();
    for stage in stages {
        let opts = Options { reserved: reserved.clone(), ..opts.clone() };
        let mut candidates = candidates(&stage.program, k, &opts)?;
        reserved.extend(candidates.list.iter().flat_map(|c| c.program.sizes.iter().map(|v| v.name.clone())));
        let own: BTreeSet<String> = stage.program.map_labels().into_iter().collect();
        let others: BTreeSet<String> = taken.difference(&own).cloned().collect();
        let suffix = stage.binder.clone().unwrap_or_else(|| "out".into());
        for c in &mut candidates.list {
            rename_labels(&mut c.program, &others, &suffix);
            taken.extend(c.program.map_labels());
        }
        out.push(Kernel { stage, candidates });
    }
    Ok(out)
}

/// Renames the maps of `p` labelled as one of `others` (another kernel's) to `LABEL_SUFFIX`
/// (a number added while that is taken too).
fn rename_labels(p: &mut Program, others: &BTreeSet<String>, suffix: &str) {
    let mut used: BTreeSet<String> = others.iter().cloned().chain(p.map_labels()).collect();
    let mut renamed = std::collections::BTreeMap::new();
    for label in p.map_labels().into_iter().filter(|l| others.contains(l)) {
        let base = format!("{label}_{suffix}");
        let fresh =
            std::iter::once(base.clone()).chain((2..).map(|i| format!("{base}{i}"))).find(|l| !used.contains(l));
        if let Some(fresh) = fresh {
            used.insert(fresh.clone());
            renamed.insert(label, fresh);
        }
    }
    for n in &mut p.nodes {
        if let ir::ast::Node::Prim(ir::ast::Prim::Map { label, .. }) = n {
            if let Some(new) = renamed.get(label) {
                *label = new.clone();
            }
        }
    }
}

/// The program `p` with kernel `i` replaced by its candidate `choice[i]`, checked at `sizes`.
pub fn join(p: &Program, kernels: &[Kernel], choice: &[usize], sizes: &ir::Sizes) -> Result<Program, String> {
    let stages: Vec<ir::stages::Stage> = kernels.iter().map(|k| k.stage.clone()).collect();
    let programs: Vec<Program> = kernels
        .iter()
        .zip(choice)
        .map(|(k, c)| k.candidates.list.get(*c).map(|c| c.program.clone()).ok_or("no such candidate"))
        .collect::<Result<_, _>>()?;
    let q = ir::stages::join(p, &stages, &programs)?;
    ir::check::check(&q).map_err(|e| e.message.clone())?;
    ir::check::check_with_sizes(&q, &sizes.or(&q.default_sizes())).map_err(|e| e.message.clone())?;
    Ok(q)
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

    /// Two fully-connected layers, weights in PyTorch's layout, with a relu between.
    const MLP: &str = "size M = 4, K = 8, H = 8, N = 4
def mlp(x: [[f32]K]M, w1: [[f32]K]H, w2: [[f32]H]N) =
  let h = toGlobal(map@A(fun(r => map@B(fun(w => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(r, w))))), w1)), x)) in
  map@D(fun(r => map@E(fun(w => reduce(add, 0.0, map@F(fun(p => p.0 * p.1), zip(r, w)))), w2)), h)\n";

    #[test]
    fn every_choice_of_one_candidate_per_kernel_joins_into_the_same_function() {
        let p = ir::parse(MLP).unwrap();
        let sizes = p.resolve_sizes(&ir::Sizes::new()).unwrap();
        let opts = Options { sizes: sizes.clone(), ..Options::default() };
        let kernels = kernels(&p, 4, &opts).unwrap();
        assert_eq!(kernels.len(), 2);
        // The kernels' new sizes are named apart.
        let new = |k: &Kernel| -> std::collections::BTreeSet<String> {
            let declared = k.candidates.list.iter().flat_map(|c| c.program.sizes.iter().map(|v| v.name.clone()));
            declared.filter(|n| !p.sizes.iter().any(|v| &v.name == n)).collect()
        };
        assert!(!new(&kernels[0]).is_empty() && new(&kernels[0]).is_disjoint(&new(&kernels[1])));
        let inputs = ir::interp::random_inputs(&p, &sizes, 7).unwrap();
        let want = ir::interp::eval(&p, &sizes, &inputs).unwrap();
        let (n0, n1) = (kernels[0].candidates.list.len(), kernels[1].candidates.list.len());
        assert!(n0 > 1 && n1 > 1);
        for i in 0..n0 {
            for j in 0..n1 {
                let q = join(&p, &kernels, &[i, j], &sizes).unwrap_or_else(|e| panic!("{i}, {j}: {e}"));
                let at = sizes.or(&q.default_sizes());
                let got = ir::interp::eval(&q, &at, &inputs).unwrap();
                assert!(got.compare(&want, 1e-4, 1e-4).ok, "{i}, {j}:\n{}", ir::print(&q));
                assert_eq!(
                    ir::stages::count(&q),
                    ir::stages::count(&kernels[0].candidates.list[i].program)
                        + ir::stages::count(&kernels[1].candidates.list[j].program)
                );
            }
        }
        // The kernels as written join into the input.
        assert_eq!(ir::print(&join(&p, &kernels, &[0, 0], &sizes).unwrap()), ir::print(&p));
    }

    /// Two kernels rewritten on their own both split their reduction into partial ones with a
    /// new map of one label (`R4`): the second kernel's is named apart (`R4_hi`), so that every
    /// joined program parses back, with one label per map, and computes the input's function.
    #[test]
    fn the_new_maps_of_kernels_rewritten_on_their_own_are_named_apart() {
        let src = "size N = 64
def stretch(x: [f32]N) : [f32]N =
  let lo = toGlobal(reduce(min, 1e30, x)) in
  let hi = toGlobal(reduce(max, 0.0 - 1e30, x)) in
  map@A(fun(v => (v - lo) / (hi - lo)), x)";
        let p = ir::parse(src).unwrap();
        let sizes = p.resolve_sizes(&ir::Sizes::new()).unwrap();
        let kernels = kernels(&p, 3, &Options { sizes: sizes.clone(), ..Options::default() }).unwrap();
        let labels = |k: usize, c: usize| kernels[k].candidates.list[c].program.map_labels();
        assert!(labels(0, 1).iter().any(|l| l.starts_with('R')), "{:?}", labels(0, 1));
        assert!(labels(1, 1).iter().all(|l| !labels(0, 1).contains(l)), "{:?} {:?}", labels(0, 1), labels(1, 1));
        let inputs = ir::interp::random_inputs(&p, &sizes, 3).unwrap();
        let want = ir::interp::eval(&p, &sizes, &inputs).unwrap();
        for i in 0..kernels[0].candidates.list.len() {
            for j in 0..kernels[1].candidates.list.len() {
                let q = join(&p, &kernels, &[i, j, 0], &sizes).unwrap();
                let text = ir::print(&q);
                let back = ir::parse(&text).unwrap_or_else(|e| panic!("{i}, {j}: {}\n{text}", e.message));
                let got = ir::interp::eval(&back, &sizes.or(&q.default_sizes()), &inputs).unwrap();
                assert!(got.compare(&want, 0.0, 0.0).ok, "{text}");
            }
        }
    }

    /// A plain reduction kept as a kernel, split into partial sums on its own, stays a kernel
    /// when joined: the stage is global (`tune --variants` said "stages s inline").
    #[test]
    fn a_reduction_kernel_split_on_its_own_joins_as_a_global_stage() {
        let src = "size N = 64\ndef sm(x: [f32]N) : [f32]N =\n  let s = toGlobal(reduce(add, 0.0, x)) in map@A(fun(v => v / s), x)\n";
        let p = ir::parse(src).unwrap();
        let sizes = p.resolve_sizes(&ir::Sizes::new()).unwrap();
        let kernels = kernels(&p, 2, &Options { sizes: sizes.clone(), ..Options::default() }).unwrap();
        assert_eq!(kernels[0].stage.program.name, "sm_0_s");
        let split =
            kernels[0].candidates.list.iter().position(|c| ir::stages::count(&c.program) == 1 && c.signature != "R");
        let split = split.unwrap_or_else(|| panic!("no split candidate of the sum"));
        let q = join(&p, &kernels, &[split, 0], &sizes).unwrap();
        let s = stage_choice::of(&p, &q).into_iter().find(|c| c.binder == "s").expect("the stage s");
        assert_eq!(s.choice, stage_choice::Choice::Global, "{}", ir::print(&q));
    }

    #[test]
    fn a_variant_with_a_kernel_without_maps_is_left_out() {
        // The rewrite may fuse the first kernel's only map into its reduction.
        let src = "size H = 7, W = 5
def gnorm(img: [[f32]W]H) : [[f32]W]H =
  let m = toGlobal(reduce(max, -1e30, map@A(fun(r => reduce(max, -1e30, r)), img))) in
  mapND2@B(fun(v => v / m), img)\n";
        let p = ir::parse(src).unwrap();
        let sizes = p.resolve_sizes(&ir::Sizes::new()).unwrap();
        let c = candidates(&p, 8, &Options { sizes: sizes.clone(), ..Options::default() }).unwrap();
        assert!(c.list.len() > 1);
        for v in &c.list {
            for s in ir::stages::split_at(&v.program, &sizes).unwrap() {
                let options =
                    mapsat_constraints::Options { sizes: sizes.or(&s.program.default_sizes()), ..Default::default() };
                let space = mapsat_constraints::Space::generate(&s.program, options);
                assert!(!matches!(space, Err(mapsat_constraints::Error::NoMaps)), "{}", ir::print(&v.program));
            }
        }
    }
}

//! A program of several kernels (`let x = toGlobal(..) in` at the top of its body,
//! [`ir::stages`](crate::ir::stages)) mapped, emitted and tuned kernel by kernel: what the
//! command line and Python share. A mapping of the whole program (`A=G0,B=S,C=G0`) is cut into
//! each kernel's part by the maps it names.

use crate::error::Error;
use crate::ir::stages::{self, Input, Stage};
use crate::ir::{diag, profile::Profile, Program, Sizes, Type};
use crate::local::Locals;
use mapsat_codegen::kir::{Role, Space};
use mapsat_codegen::Manifest;
use mapsat_tuner::measure::MappedStage;
use std::collections::BTreeSet;

type R<T> = Result<T, Error>;

/// The parts of `mapping` (`A=G0,B=S,...`) that name maps of each kernel, given each kernel's
/// labels (its maps and its views: what a mapping may name); a part naming a map of no kernel
/// is an error, which lists the maps that take a code (`maps`, asked only then).
pub fn split_mapping(mapping: &str, labels: &[Vec<String>], maps: &dyn Fn() -> Vec<String>) -> R<Vec<String>> {
    let mut out = vec![Vec::new(); labels.len()];
    for part in mapping.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let label = part.split_once('=').map_or(part, |(l, _)| l).trim();
        let Some(k) = labels.iter().position(|ls| ls.iter().any(|l| l == label)) else {
            let known = maps();
            return Err(Error::Usage(match known.is_empty() {
                true => format!("unknown map `{label}` in the mapping: the program has no map, so its only mapping is the empty one"),
                false => format!("unknown map `{label}` in the mapping (the maps are: {})", known.join(", ")),
            }));
        };
        out[k].push(part);
    }
    Ok(out.into_iter().map(|parts| parts.join(",")).collect())
}

/// The labels a mapping of `space`'s kernel may name: its maps and the maps that only
/// rearrange (layout maps, views).
pub fn space_labels(space: &mapsat_constraints::Space) -> Vec<String> {
    space.labels().iter().chain(space.layout_maps()).cloned().collect()
}

/// The maps of a kernel that take a code at `sizes`, as its space (without a device's limits)
/// tells them from its views; every label, where the program has no space.
pub fn maps_of(p: &Program, sizes: &Sizes) -> Vec<String> {
    let sizes = sizes.or(&p.default_sizes());
    let options = mapsat_constraints::Options { sizes, empty_without_maps: true, ..Default::default() };
    match mapsat_constraints::Space::generate(p, options) {
        Ok(space) => space.labels().to_vec(),
        Err(_) => p.map_labels(),
    }
}

/// `e`, said to be in the kernel of stage `name`.
pub fn in_stage(name: &str, e: Error) -> Error {
    match e {
        Error::Rejected(m) => Error::Rejected(format!("in the kernel of stage `{name}`:\n{m}")),
        Error::Usage(m) => Error::Usage(format!("in the kernel of stage `{name}`: {m}")),
    }
}

/// `e`, said to be in the kernel of stage `name` when the program has `several`.
pub fn named(several: bool, name: &str, e: Error) -> Error {
    match several {
        true => in_stage(name, e),
        false => e,
    }
}

/// Stages mapped by hand, and the preferences their mappings break ([`crate::mapping::Prepared`]).
pub struct Mapped {
    /// Each stage, mapped, with its work-group size.
    pub stages: Vec<MappedStage>,
    /// The warnings of the hand-mapped stages, in order.
    pub warnings: Vec<String>,
}

/// Each stage mapped by its part of `mapping` ([`crate::mapping::prepare`]; without one, as
/// written), with the work-group size `local` gives for its kernel's name, and type-checked
/// (`render` renders an error of the program). An error names its stage when there are
/// several.
pub fn map(
    split: Vec<Stage>,
    sizes: &Sizes,
    mapping: Option<&str>,
    profile: Option<Profile>,
    locals: &Locals,
    render: &dyn Fn(&dyn diag::Diagnose) -> String,
) -> R<Mapped> {
    let several = split.len() > 1;
    let parts = match mapping {
        Some(m) if !several => vec![Some(m.to_string())],
        Some(m) => {
            let labels: Vec<Vec<String>> = split.iter().map(|s| s.program.map_labels()).collect();
            let maps = || split.iter().flat_map(|s| maps_of(&s.program, sizes)).collect();
            split_mapping(m, &labels, &maps)?.into_iter().map(Some).collect()
        }
        None => vec![None; split.len()],
    };
    let mut out = Mapped { stages: Vec::with_capacity(split.len()), warnings: Vec::new() };
    for (s, part) in split.into_iter().zip(parts) {
        let name = s.program.name.clone();
        let local = locals.of(&name);
        let prepared = crate::mapping::prepare(s.program, sizes, part.as_deref(), profile.clone(), local)
            .map_err(|e| named(several, &name, e))?;
        crate::ir::check::check(&prepared.program).map_err(|e| Error::Rejected(render(&e)))?;
        out.warnings.extend(prepared.warning);
        out.stages.push(MappedStage { program: prepared.program, inputs: s.inputs, local: prepared.local });
    }
    if several {
        shared_local_size(&mut out.stages, locals)?;
    }
    Ok(out)
}

/// The work-group size given for every kernel of several is not one for a kernel that runs in
/// one work item (code generation refuses a size given for it by name); it must be one for
/// some kernel.
fn shared_local_size(stages: &mut [MappedStage], locals: &Locals) -> R<()> {
    let mut taken = false;
    for s in stages.iter_mut().filter(|s| locals.shared(&s.program.name)) {
        match crate::mapping::in_one_work_item(&s.program) {
            true => s.local = None,
            false => taken = true,
        }
    }
    locals.check_taken(taken)
}

/// The global memory the kernels use together: the program's inputs (once, however many
/// kernels read them), and each kernel's result and temporaries (a result read by later kernels
/// is their input, counted once).
pub fn global_bytes<'a>(stages: &[MappedStage], manifests: impl Iterator<Item = &'a Manifest>) -> u64 {
    let mut params = std::collections::BTreeMap::new();
    let mut own = 0;
    for (s, m) in stages.iter().zip(manifests) {
        for b in m.buffers.iter().filter(|b| b.space == Space::Global) {
            match (b.role, b.param.map(|i| s.inputs[i])) {
                (Role::Input, Some(Input::Param(j))) => {
                    params.insert(j, b.bytes);
                }
                (Role::Input, _) => {}
                _ => own += b.bytes,
            }
        }
    }
    own + params.values().sum::<u64>()
}

/// How a stage's parameter is fed: `param:NAME` or `stage:ENTRY`.
fn source_name(i: Input, p: &Program, stages: &[MappedStage]) -> String {
    match i {
        Input::Param(j) => format!("param:{}", p.params[j as usize].name),
        Input::Stage(k) => format!("stage:{}", stages[k].program.name),
    }
}

/// The pipeline file of `p`'s emitted kernels (`NAME.pipeline.json`): the kernels in launch
/// order, each with its manifest's file and where its inputs come from, and the global memory
/// they use together.
pub fn pipeline_json(p: &Program, stages: &[MappedStage], manifests: &[&Manifest]) -> serde_json::Value {
    serde_json::json!({
        "program": p.name,
        "global_bytes": global_bytes(stages, manifests.iter().copied()),
        "kernels": stages.iter().zip(manifests).map(|(s, m)| serde_json::json!({
            "entry": m.entry,
            "manifest": format!("{}.json", m.entry),
            "inputs": s.inputs.iter().map(|&i| source_name(i, p, stages)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// The vector widths (`asVector(vw, ..)`) that several of the kernels `all` use, or that a
/// kernel uses whose result, read by a later one, holds vectors (their lanes are the width).
fn shared_widths(all: &[Stage]) -> BTreeSet<String> {
    let used: Vec<_> = all.iter().map(|s| crate::ir::widths::vars(&s.program)).collect();
    fn vectors(t: &Type) -> bool {
        match t {
            Type::Vector(..) => true,
            Type::Array(e, _) => vectors(e),
            Type::Tuple(ts) => ts.iter().any(vectors),
            _ => false,
        }
    }
    let carries = |k: usize| {
        all.iter().any(|s| s.inputs.iter().zip(&s.program.params).any(|(i, q)| *i == Input::Stage(k) && vectors(&q.ty)))
    };
    let mut out = BTreeSet::new();
    for (k, vars) in used.iter().enumerate() {
        let carried = carries(k);
        let shared = |v: &&String| used.iter().enumerate().any(|(j, o)| j != k && o.contains(*v));
        out.extend(vars.iter().filter(|v| carried || shared(v)).cloned());
    }
    out
}

/// The sizes several of the kernels `all` use: a tile size in the type of a boundary (the
/// result of one kernel, read by the next), or one two kernels split by. Each kernel tuned on
/// its own would choose its own value, and no one value would run the program.
fn shared_sizes(all: &[Stage]) -> BTreeSet<String> {
    let used: Vec<_> = all.iter().map(|s| s.program.used_sizes()).collect();
    let mut out = BTreeSet::new();
    for (k, vars) in used.iter().enumerate() {
        out.extend(vars.iter().filter(|v| used[k + 1..].iter().any(|o| o.contains(*v))).cloned());
    }
    out
}

/// The sizes at which the kernels of `p` are tuned one at a time: `given`, and the sizes the
/// kernels share, at their defaults where not given: the vector widths several kernels use or
/// a boundary's type holds, and the tunable sizes (with a range) several kernels use. A size
/// one kernel alone uses is tuned with it.
pub fn tuning_sizes(p: &Program, given: &Sizes) -> Sizes {
    let (widths, shared) = match stages::split(p) {
        Ok(all) => (shared_widths(&all), shared_sizes(&all)),
        Err(_) => (crate::ir::widths::vars(p), p.used_sizes()),
    };
    let mut out = given.clone();
    for v in &p.sizes {
        let fixed = widths.contains(&v.name) || (v.max.is_some() && shared.contains(&v.name));
        if let (true, false, Some(d)) = (fixed, out.contains(&v.name), v.default) {
            out.insert(v.name.clone(), d);
        }
    }
    out
}

/// The names of the kernels of `split` without a map: one work item runs each, and a tune
/// says so before it tunes any kernel.
pub fn without_maps<'a>(split: &'a [Stage], given: &Sizes) -> Vec<&'a str> {
    split
        .iter()
        .filter(|s| crate::mapping::no_maps(&s.program, &given.or(&s.program.default_sizes())))
        .map(|s| s.program.name.as_str())
        .collect()
}

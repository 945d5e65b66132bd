//! A program as research code holds it: its text and name (for error messages), parsed and
//! type-checked, with what the command line does to a program as methods. Its sizes are
//! resolved and checked, the interpreter evaluates it, each kernel's mapping space is sampled,
//! counted and explains a mapping, and its kernels are mapped, emitted, run and checked on a
//! device, and tuned. A program of several kernels (`let x = toGlobal(..) in`) is handled
//! kernel by kernel, with a mapping of the whole program ([`crate::stages`]). The Python
//! package is a layer over this; `examples/library.rs` uses it from Rust.

use crate::error::Error;
use crate::ir::interp::{self, Tensor};
use crate::ir::stages::Stage;
use crate::ir::{self, diag, profile::Profile, Program, Sizes};
use crate::local::Locals;
use crate::stages::named;
use mapsat_codegen::{self as codegen, Dialect, Manifest};
use mapsat_constraints::{self as constraints, Space};
use mapsat_tuner::measure::{self, DeviceSpec, MappedStage, RunConfig, RunReport};
use std::path::Path;

type R<T> = Result<T, Error>;

/// A program, parsed and type-checked, with its text and name.
#[derive(Clone, Debug)]
pub struct Source {
    name: String,
    text: String,
    program: Program,
    warnings: Vec<String>,
}

/// One kernel's mapping space.
pub struct KernelSpace {
    /// The kernel's name (the program's, or its stage's).
    pub name: String,
    /// The kernel: the program, or its stage.
    pub program: Program,
    /// Its space; empty ([`Space::is_empty`]: no variable, its layout maps' labels only) for a
    /// kernel with no map that computes (a plain reduction, or a kernel of several that only
    /// rearranges): it runs in one work item, with its only mapping, the empty one.
    pub space: Space,
}

/// The number of valid mappings of a program: the product of its kernels'.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MappingCount {
    /// The number (an estimate when not `exact`).
    pub value: f64,
    /// Counted one by one in every kernel.
    pub exact: bool,
}

/// A program's kernels, emitted.
pub struct Emitted {
    /// Each kernel's source and manifest (entry point, arguments, launch configuration), in
    /// launch order.
    pub kernels: Vec<(String, Manifest)>,
    /// For a program of several kernels, the pipeline file ([`crate::stages::pipeline_json`]).
    pub pipeline: Option<serde_json::Value>,
    /// The warnings of hand-mapped kernels.
    pub warnings: Vec<String>,
}

/// One kernel's run.
pub struct KernelRun {
    /// The kernel's name.
    pub name: String,
    /// Its time, result and check against the interpreter.
    pub report: RunReport,
}

impl Source {
    /// Parses and type-checks `text`; `name` (a file name) names it in error messages. A byte
    /// order mark is not part of the program; a text larger than
    /// [`crate::limits::MAX_SOURCE_BYTES`] is refused. A kernel boundary nothing reads is left
    /// out ([`ir::stages::without_dead`]; [`Source::warnings`] tells it).
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> R<Source> {
        let (name, mut text): (String, String) = (name.into(), text.into());
        crate::limits::deep(move || {
            if let Some(rest) = text.strip_prefix('\u{feff}') {
                text = rest.to_string();
            }
            if text.len() as u64 > crate::limits::MAX_SOURCE_BYTES {
                let mib = crate::limits::MAX_SOURCE_BYTES >> 20;
                return Err(Error::Rejected(format!("error: {name} is larger than {mib} MiB: not a program")));
            }
            let render = |e: &dyn diag::Diagnose| Error::Rejected(diag::render(&name, &text, e));
            let written = ir::parse(&text).map_err(|e| render(&e))?;
            ir::check::check(&written).map_err(|e| render(&e))?;
            let (program, dead) = ir::stages::without_dead(&written);
            let warnings = dead.iter().map(|d| diag::render_warning(&name, &text, d)).collect();
            Ok(Source { name, text, program, warnings })
        })
    }

    /// The program in the file at `path` ([`Source::new`], named by the path).
    pub fn read(path: &Path) -> R<Source> {
        let name = path.display().to_string();
        Source::new(name, read_text(path)?)
    }

    /// What is legal but likely a mistake in the program, rendered against its source: each
    /// kernel boundary nothing reads ([`ir::stages::dead`]), which is left out.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The name it was given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// An error in the program, with its file, line and column and a caret.
    pub fn render(&self, e: &dyn diag::Diagnose) -> String {
        diag::render(&self.name, &self.text, e)
    }

    fn rejected(&self, e: &dyn diag::Diagnose) -> Error {
        Error::Rejected(self.render(e).trim_end().to_string())
    }

    /// An error of the program at the sizes `given` (the others at their defaults), with the
    /// note of [`defaulted_note`].
    fn rejected_at(&self, e: &dyn diag::Diagnose, given: &Sizes) -> Error {
        let text = self.render(e);
        match defaulted_note(&self.text, &self.program, given, e.span()) {
            Some(note) => Error::Rejected(format!("{}\n{note}", text.trim_end())),
            None => Error::Rejected(text.trim_end().to_string()),
        }
    }

    /// Every size: `given` (each a size of the program), the others at their defaults, with the
    /// program type-checked at them.
    pub fn sizes(&self, given: &Sizes) -> R<Sizes> {
        crate::limits::deep(|| {
            given.iter().try_for_each(|(name, _)| size_named(&self.program, name))?;
            let sizes = self.program.resolve_sizes(given).map_err(|e| Error::Usage(e.to_string()))?;
            ir::check::check_with_sizes(&self.program, &sizes).map_err(|e| self.rejected_at(&e, given))?;
            Ok(sizes)
        })
    }

    /// The sizes the shapes of `inputs` (in parameter order) give: each dimension of a
    /// parameter whose length is a size variable (`[f32]N`) gives that size. An input of
    /// another rank than its parameter's type, and two inputs that give one size different
    /// values, are refused; the others are left to [`Source::sizes`].
    pub fn sizes_of(&self, inputs: &[Tensor]) -> R<Sizes> {
        let mut out = Sizes::new();
        for (q, t) in self.program.params.iter().zip(inputs) {
            let (dims, elem) = q.ty.dims();
            let rank = dims.len() + usize::from(matches!(elem, ir::Type::Vector(..)));
            if t.shape.len() != rank {
                return Err(Error::Usage(format!(
                    "parameter `{}` expects an array of {rank} dimension(s) (type `{}`), got shape {:?}",
                    q.name, q.ty, t.shape
                )));
            }
            let mut ty = &q.ty;
            for &n in &t.shape {
                let Some((elem, len)) = ty.as_array() else { break };
                if let Some(v) = len.as_var() {
                    match out.get(v) {
                        Some(w) if w != n as i64 => {
                            let p = &q.name;
                            return Err(Error::Usage(format!("size `{v}` is {w} by an earlier input, {n} by `{p}`")));
                        }
                        _ => {
                            out.insert(v, n as i64);
                        }
                    }
                }
                ty = elem;
            }
        }
        Ok(out)
    }

    /// The type of its result at `given`.
    pub fn result_type(&self, given: &Sizes) -> R<ir::Type> {
        crate::limits::deep(|| {
            let sizes = self.sizes(given)?;
            let info = ir::check::check_with_sizes(&self.program, &sizes).map_err(|e| self.rejected(&e))?;
            Ok(info.result)
        })
    }

    /// The interpreter's result on `inputs` (in parameter order) at `given`.
    pub fn eval(&self, given: &Sizes, inputs: &[Tensor]) -> R<Tensor> {
        crate::limits::deep(|| {
            let sizes = self.sizes(given)?;
            interp::eval(&self.program, &sizes, inputs).map_err(|e| self.rejected(&e))
        })
    }

    /// Its kernels at `sizes` (one, or one per stage: [`ir::stages`]).
    pub fn kernels(&self, sizes: &Sizes) -> R<Vec<Stage>> {
        crate::limits::deep(|| ir::stages::split_at(&self.program, sizes).map_err(|e| self.rejected(&e)))
    }

    /// The mapping space of each kernel at `given` under `profile`'s limits (none: no device's).
    pub fn spaces(&self, given: &Sizes, profile: Option<&Profile>) -> R<Vec<KernelSpace>> {
        crate::limits::deep(|| {
            let sizes = self.sizes(given)?;
            let split = self.kernels(&sizes)?;
            let several = split.len() > 1;
            let mut out = Vec::new();
            for s in split {
                let options = constraints::Options {
                    profile: profile.cloned(),
                    sizes: sizes.clone(),
                    empty_without_maps: true,
                    ..Default::default()
                };
                let name = s.program.name.clone();
                let space = Space::generate(&s.program, options)
                    .map_err(|e| named(several, &name, Error::Rejected(format!("error: {e}"))))?;
                out.push(KernelSpace { name, program: s.program, space });
            }
            Ok(out)
        })
    }

    /// Up to `n` valid mappings of the whole program at `given` under `profile`, sampled with
    /// `seed`: the `i`-th takes each kernel's `i`-th sample (its first again when it has fewer).
    /// None when a kernel has no valid mapping.
    pub fn sample(&self, given: &Sizes, n: usize, seed: u64, profile: Option<&Profile>) -> R<Vec<String>> {
        crate::limits::deep(|| {
            let mut per = Vec::new();
            for k in self.spaces(given, profile)? {
                let s = k.space;
                let sampled = s.sample(n, seed).map_err(|e| Error::Rejected(format!("error: {e}")))?;
                per.push(sampled.iter().map(|m| s.show(m).to_string()).collect());
            }
            Ok(combine(&per, n))
        })
    }

    /// The number of valid mappings at `given` under `profile`.
    pub fn count(&self, given: &Sizes, profile: Option<&Profile>) -> R<MappingCount> {
        crate::limits::deep(|| {
            let mut total = MappingCount { value: 1.0, exact: true };
            for k in self.spaces(given, profile)? {
                match k.space.count(0).map_err(|e| Error::Rejected(format!("error: {e}")))? {
                    constraints::Count::Exact(n) => total.value *= n as f64,
                    constraints::Count::Estimate { value, .. } => {
                        total = MappingCount { value: total.value * value, exact: false }
                    }
                }
            }
            Ok(total)
        })
    }

    /// The constraints `mapping` (of the whole program) violates at `given` under `profile`,
    /// one line each; none: it is valid. With a profile, a mapping valid in a kernel's space
    /// that code generation refuses under it ([`crate::mapping::refused_by_codegen`]) has that
    /// reason as its line. Each is said to be about its kernel when there are several.
    pub fn explain(&self, mapping: &str, given: &Sizes, profile: Option<&Profile>) -> R<Vec<String>> {
        crate::limits::deep(|| {
            let spaces = self.spaces(given, profile)?;
            let sizes = self.sizes(given)?;
            let several = spaces.len() > 1;
            let parts = match several || spaces.first().is_some_and(|k| k.space.is_empty()) {
                false => vec![mapping.to_string()],
                true => {
                    let labels: Vec<Vec<String>> =
                        spaces.iter().map(|k| crate::stages::space_labels(&k.space)).collect();
                    let maps = || spaces.iter().flat_map(|k| k.space.labels().to_vec()).collect();
                    crate::stages::split_mapping(mapping, &labels, &maps)?
                }
            };
            let mut out = Vec::new();
            for (k, part) in spaces.iter().zip(&parts) {
                let space = &k.space;
                let usage = |e: constraints::Error| named(several, &k.name, Error::Usage(e.to_string()));
                let m = space.parse_mapping(part).map_err(usage)?;
                if space.is_empty() {
                    continue;
                }
                let e = space.explain(&m).map_err(|e| named(several, &k.name, Error::Rejected(e.to_string())))?;
                let text = |c| stage_text(several, &k.name, crate::mapping::describe(space, c));
                out.extend(e.violated.iter().map(text));
                if let (true, Some(q)) = (e.violated.is_empty(), profile) {
                    let refused = crate::mapping::refused_by_codegen(space, &k.program, &m, &sizes, e.local_sizes, q);
                    out.extend(refused.map(|r| stage_text(several, &k.name, r)));
                }
            }
            Ok(out)
        })
    }

    /// Its kernels at `sizes`, mapped by `mapping` (of the whole program; without one, as
    /// written), each with its work-group size from `local` (else the space's choice), checked
    /// under `profile` ([`crate::stages::map`]).
    pub fn map(
        &self,
        sizes: &Sizes,
        mapping: Option<&str>,
        profile: Option<Profile>,
        local: &Locals,
    ) -> R<crate::stages::Mapped> {
        crate::limits::deep(|| {
            let split = self.kernels(sizes)?;
            let names: Vec<&str> = split.iter().map(|s| s.program.name.as_str()).collect();
            local.check_kernels(&names)?;
            let render = |e: &dyn diag::Diagnose| self.render(e);
            crate::stages::map(split, sizes, mapping, profile, local, &render)
        })
    }

    /// Its kernels at `given` mapped by `mapping` ([`Source::map`]), emitted for `dialect`
    /// under `profile` (none: [`crate::mapping::default_profile`]).
    pub fn emit(
        &self,
        given: &Sizes,
        mapping: Option<&str>,
        dialect: Dialect,
        local: &Locals,
        profile: Option<Profile>,
    ) -> R<Emitted> {
        crate::limits::deep(|| {
            let sizes = self.sizes(given)?;
            let profile = profile.or_else(|| crate::mapping::default_profile(dialect));
            let mapped = self.map(&sizes, mapping, profile.clone(), local)?;
            let several = mapped.stages.len() > 1;
            let mut kernels = Vec::new();
            for s in &mapped.stages {
                let opts = codegen::Options::for_target(sizes.clone(), s.local.clone(), profile.as_ref());
                let emitted = codegen::emit(&s.program, &opts, dialect);
                kernels.push(emitted.map_err(|e| named(several, &s.program.name, self.rejected(&e)))?);
            }
            let manifests: Vec<&Manifest> = kernels.iter().map(|(_, m)| m).collect();
            let pipeline = several.then(|| crate::stages::pipeline_json(&self.program, &mapped.stages, &manifests));
            Ok(Emitted { kernels, pipeline, warnings: mapped.warnings })
        })
    }

    /// Runs its kernels at `given`, mapped by `mapping` ([`Source::map`], under `device`'s
    /// limits), in order on `device`, each on `inputs` and the results of the kernels before
    /// it. With `cfg.check`, a kernel whose result differs from the interpreter's is an error,
    /// and so is a program of several whose last result differs from the interpreter's result
    /// of the whole program. The last kernel's output is the program's result.
    pub fn run(
        &self,
        given: &Sizes,
        inputs: &[Tensor],
        device: DeviceSpec,
        mapping: Option<&str>,
        local: &Locals,
        cfg: &RunConfig,
    ) -> R<Vec<KernelRun>> {
        crate::limits::deep(|| {
            let sizes = self.sizes(given)?;
            if cfg.runs == 0 {
                return Err(Error::Usage("runs must be at least 1".into()));
            }
            interp::check_inputs(&self.program, &sizes, inputs).map_err(|e| self.rejected(&e))?;
            let stages = self.map(&sizes, mapping, measure::opencl_profile(device).ok(), local)?.stages;
            let reports = measure::run_stages(&stages, &sizes, inputs, device, cfg).map_err(|e| match e {
                measure::MeasureError::CodegenIn { kernel, error } => {
                    Error::Rejected(format!("in the kernel of stage `{kernel}`:\n{}", self.render(&error).trim_end()))
                }
                e => Error::Rejected(format!("error: {e}")),
            })?;
            if cfg.check {
                self.check_runs(&stages, &reports, &sizes, inputs, cfg)?;
            }
            let names = stages.iter().map(|s| s.program.name.clone());
            Ok(names.zip(reports).map(|(name, report)| KernelRun { name, report }).collect())
        })
    }

    /// Refuses runs whose results differ from the interpreter's: each kernel's, and the last
    /// one's from the whole program's.
    fn check_runs(
        &self,
        stages: &[MappedStage],
        reports: &[RunReport],
        sizes: &Sizes,
        inputs: &[Tensor],
        cfg: &RunConfig,
    ) -> R<()> {
        let several = stages.len() > 1;
        for (s, r) in stages.iter().zip(reports) {
            if let Some(c) = r.check.as_ref().filter(|c| !c.ok) {
                let kernel = if several { format!("kernel of stage `{}`", s.program.name) } else { "kernel".into() };
                let n = c.mismatches;
                return Err(Error::Rejected(format!(
                    "error: the {kernel}'s result differs from the interpreter's in {n} elements"
                )));
            }
        }
        if let (true, Some(last)) = (several, reports.last()) {
            let want = interp::eval(&self.program, sizes, inputs).map_err(|e| self.rejected(&e))?;
            let c = last.output.compare(&want, cfg.rtol, cfg.atol);
            if !c.ok {
                let n = c.mismatches;
                return Err(Error::Rejected(format!(
                    "error: the kernels' result differs from the interpreter's in {n} elements"
                )));
            }
        }
        Ok(())
    }
}

/// Refuses a size `name` that is not one of `p`'s size variables, naming those it has.
pub fn size_named(p: &Program, name: &str) -> R<()> {
    if p.sizes.iter().any(|v| v.name == name) {
        return Ok(());
    }
    let known: Vec<&str> = p.sizes.iter().map(|v| v.name.as_str()).collect();
    Err(Error::Usage(format!("the program has no size variable `{name}` (it has: {})", known.join(", "))))
}

/// The note for an error at `span` of `p` (whose text is `text`) at the sizes `given`, the
/// others at their defaults: the tunable sizes (those `tune` searches,
/// [`mapsat_tuner::tune::params::tunables`]) that took their defaults, when the erring call
/// names them; `None` when none did. A variant's tile size fits its own sizes, not
/// necessarily those given (`slide step 4 does not tile the input` said nothing of `tA`).
pub fn defaulted_note(text: &str, p: &Program, given: &Sizes, span: Option<ir::ast::Span>) -> Option<String> {
    let defaults = p.default_sizes();
    let at = span.and_then(|s| call_text(text, s));
    let named = |name: &str| at.is_none_or(|t| t.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == name));
    let defaulted: Vec<String> = mapsat_tuner::tune::params::tunables(p, given, &Sizes::new())
        .into_iter()
        .filter(|t| named(&t.name))
        .filter_map(|t| defaults.get(&t.name).map(|d| format!("{} = {d}", t.name)))
        .collect();
    (!defaulted.is_empty()).then(|| {
        format!(
            "note: at the default of the tunable size(s) {}; give another with `--size NAME=VALUE`",
            defaulted.join(", ")
        )
    })
}

/// The text of the call at `span` (`split(tA, a)` for the span of `split`): the span, and its
/// arguments when a parenthesis follows it.
fn call_text(text: &str, span: ir::ast::Span) -> Option<&str> {
    let rest = text.get(span.start..)?;
    let name = span.end.checked_sub(span.start)?;
    let open = name + rest.get(name..)?.len() - rest.get(name..)?.trim_start().len();
    if !rest.get(open..)?.starts_with('(') {
        return rest.get(..name);
    }
    let mut depth = 0;
    for (i, c) in rest.char_indices().skip_while(|(i, _)| *i < open) {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth == 0 {
            return rest.get(..=i);
        }
    }
    Some(rest)
}

/// The text of the file at `path`: UTF-8 of at most [`crate::limits::MAX_SOURCE_BYTES`] (a
/// larger file is refused without reading it all), without a byte order mark.
pub fn read_text(path: &Path) -> R<String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| Error::Rejected(format!("error: cannot read {}: {e}", path.display()));
    // A folder, a FIFO (whose read would block) or a device (`/dev/zero` never ends) is refused
    // unread; the size is checked below, as the file is read.
    ir::files::check_regular(path, u64::MAX).map_err(cannot)?;
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(crate::limits::MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > crate::limits::MAX_SOURCE_BYTES {
        let mib = crate::limits::MAX_SOURCE_BYTES >> 20;
        return Err(Error::Rejected(format!("error: {} is larger than {mib} MiB: not a program", path.display())));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| cannot(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not UTF-8 text ({e})"))))?;
    // A byte order mark (editors on Windows write one) is not part of the program.
    Ok(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text))
}

/// `msg`, said to be about the kernel of stage `name` when the program has several.
fn stage_text(several: bool, name: &str, msg: String) -> String {
    match several {
        true => format!("in the kernel of stage `{name}`: {msg}"),
        false => msg,
    }
}

/// Up to `n` mappings of the whole program from each kernel's samples `per`: the `i`-th
/// takes each kernel's `i`-th sample (its first again when it has fewer). None when a kernel
/// has no valid mapping.
fn combine(per: &[Vec<String>], n: usize) -> Vec<String> {
    if per.iter().any(Vec::is_empty) {
        return Vec::new();
    }
    let most = per.iter().map(Vec::len).max().unwrap_or(0).min(n);
    let one = |i: usize| {
        let parts = per.iter().map(|v| v[i % v.len()].as_str()).filter(|m| !m.is_empty());
        parts.collect::<Vec<_>>().join(",")
    };
    (0..most).map(one).collect()
}

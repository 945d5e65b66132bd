//! Subcommands of the `mapsat` binary. Exit codes: 0 success, 1 the input was rejected (with a
//! message), 2 bad usage.

/// `println!` for command output: a closed pipe (`mapsat ... | head`) ends the program quietly
/// instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($t)*).is_err() {
            std::process::exit(0);
        }
    }};
}

mod choices;
mod kernels;
mod mapping;
mod rewrite;
mod space;
mod stages;
mod tune;

use clap::{Parser, Subcommand};
use mapsat::ir::{self, diag, interp, Program, Sizes};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "mapsat", version, about = "From a Lift-like functional IR to fast OpenCL and CUDA kernels")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct SizeArgs {
    /// Size variable values, `N=64` (repeat the flag or separate with commas).
    #[arg(long = "size", value_name = "NAME=VALUE", value_delimiter = ',')]
    sizes: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Type-check a program and print its type and its map labels.
    Check {
        /// The IR file.
        file: PathBuf,
        #[command(flatten)]
        sizes: SizeArgs,
    },
    /// Print a program in canonical form.
    Fmt {
        /// The IR file.
        file: PathBuf,
    },
    /// Evaluate a program with the reference interpreter.
    Eval {
        /// The IR file.
        file: PathBuf,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Input for a parameter, `x=a.npy` (repeatable).
        #[arg(long = "input", value_name = "PARAM=FILE")]
        inputs: Vec<String>,
        /// Random data from this seed for parameters without `--input`.
        #[arg(long, value_name = "SEED")]
        random: Option<u64>,
        /// Write the result to this `.npy` file.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Generate an OpenCL or CUDA kernel and its JSON manifest.
    Emit {
        /// The IR file (fully mapped, or high level with --mapping).
        file: PathBuf,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Map a high-level program: `A=G0,B=S,...` (refused with its explanation if invalid).
        #[arg(long, value_name = "LABEL=CODE,...")]
        mapping: Option<String>,
        /// Device profile for the mapping's device limits (built-in name or TOML file).
        #[arg(long, value_name = "PROFILE")]
        profile: Option<String>,
        /// `opencl` or `cuda`.
        #[arg(long, default_value = "opencl")]
        target: String,
        /// Work-group size, e.g. `64,4,1` (default: from the map extents); for one kernel of a
        /// program with several, `KERNEL:X,Y,Z` (repeatable).
        #[arg(long, value_name = "[KERNEL:]X,Y,Z")]
        local: Vec<String>,
        /// Output directory.
        #[arg(long, short, value_name = "DIR")]
        output: PathBuf,
    },
    /// Run a kernel on a device, time it and check it against the interpreter.
    Run {
        /// The IR file (fully mapped, or high level with --mapping).
        file: PathBuf,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Map a high-level program: `A=G0,B=S,...` (refused with its explanation if invalid).
        #[arg(long, value_name = "LABEL=CODE,...")]
        mapping: Option<String>,
        /// Device profile for the mapping's device limits (default: the OpenCL device's own);
        /// also `--target`, as `space`, `explain` and `tune` name it.
        #[arg(long, alias = "target", value_name = "PROFILE")]
        profile: Option<String>,
        /// `opencl:PLATFORM:DEVICE` or `cuda:N` (see `mapsat devices`).
        #[arg(long, default_value = "opencl:0:0")]
        device: String,
        /// Work-group size, e.g. `64,4,1`; for one kernel of a program with several,
        /// `KERNEL:X,Y,Z` (repeatable).
        #[arg(long, value_name = "[KERNEL:]X,Y,Z")]
        local: Vec<String>,
        /// Input for a parameter, `x=a.npy` (repeatable); others are random.
        #[arg(long = "input", value_name = "PARAM=FILE")]
        inputs: Vec<String>,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Compare with the interpreter (exit code 1 on a mismatch).
        #[arg(long)]
        check: bool,
        /// Timed runs (the median is printed).
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// Let the OpenCL compiler reassociate floating-point arithmetic (as `mapsat tune`
        /// does by default; the manifest of a tuned kernel says so in `build_options`).
        #[arg(long)]
        reassociate: bool,
        /// Longest wait for the whole run in seconds (build, launches, check): a kernel that
        /// hangs or is far too large is given up with an error (exit 1); `inf`: no limit.
        #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
        timeout: f64,
        /// Write the device's result (the last kernel's, for several) to this `.npy` file.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Equality saturation: write K diverse variants of a program (each the same function).
    Rewrite(Box<rewrite::RewriteArgs>),
    /// Search mappings, tunable sizes and work-group sizes for the fastest valid kernel.
    Tune(Box<tune::TuneArgs>),
    /// Both cost models' predictions for one candidate.
    Predict(tune::PredictArgs),
    /// Measure a device's rates (bandwidth, arithmetic, cache, launch) into a device profile.
    Calibrate {
        /// `opencl:PLATFORM:DEVICE` or `cuda:N`.
        #[arg(long, default_value = "opencl:0:0")]
        device: String,
        /// The profile to add the rates to (default: the OpenCL device's limits).
        #[arg(long, value_name = "PROFILE")]
        target: Option<String>,
        /// Write the profile here (default: standard output).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// The measurement worker of `mapsat tune` (reads jobs on standard input).
    #[command(hide = true)]
    Worker,
    /// List OpenCL and CUDA devices, or say why a runtime is missing.
    Devices {
        /// Print the limits of this OpenCL device (`opencl:PLATFORM:DEVICE`) as a device profile
        /// (TOML, for `--target FILE`) instead of the list.
        #[arg(long, value_name = "DEVICE")]
        profile: Option<String>,
    },
    /// The parallel-mapping space: maps, constraint instances per family, count, samples.
    Space {
        /// The IR file.
        file: PathBuf,
        /// Device profile (built-in name or TOML file) for the device-limit constraints.
        #[arg(long, value_name = "PROFILE")]
        target: Option<String>,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Number of distinct valid mappings to sample.
        #[arg(long, value_name = "N")]
        sample: Option<usize>,
        /// Seed of the sampling, estimate and baseline.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Also draw N uniformly random assignments and report the fraction that is valid (at
        /// most 10,000,000: each draw is a check of every constraint).
        #[arg(long = "random-baseline", value_name = "N", value_parser = clap::value_parser!(u64).range(..=10_000_000))]
        random_baseline: Option<u64>,
        /// Turn off the sequential map fusion heuristic (rule 8).
        #[arg(long)]
        no_fusion: bool,
        /// Also search with symmetry breaking (family 13: only canonical mappings, one per
        /// class of mappings that differ by a renaming of dimensions): count them, and sample
        /// from them.
        #[arg(long)]
        canonical: bool,
        /// Stage choices as variables: one space over the input and K - 1 of its rewrite
        /// variants (one per distinct choice of inline, local or global for each producer):
        /// each stage variable's domain, each choice's count, the total, and samples (with
        /// --json, as JSON).
        #[arg(long, value_name = "K", conflicts_with_all = ["random_baseline", "canonical"])]
        variants: Option<usize>,
    },
    /// Check one mapping: exit 0 and "valid", or 1 and every violated constraint.
    Explain {
        /// The IR file.
        file: PathBuf,
        /// The mapping, `A=W0,B=L0,C=S,D=L0,E=V` (codes S, F, V, L0-2, W0-2, G0-2).
        #[arg(long, value_name = "LABEL=CODE,...")]
        mapping: String,
        /// Device profile (built-in name or TOML file).
        #[arg(long, value_name = "PROFILE")]
        target: Option<String>,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Turn off the sequential map fusion heuristic (rule 8).
        #[arg(long)]
        no_fusion: bool,
        /// Explain the mapping under this stage choice, `h=local,v=global` (inline, private,
        /// local or global per producer; producers left out may take any choice that leaves one
        /// program): the mapping is of that program's maps (see `mapsat space --variants`).
        #[arg(long, value_name = "EDGE=CHOICE,...")]
        stages: Option<String>,
        /// With --stages: the choices are those of the input and K - 1 of its rewrite variants.
        #[arg(long, value_name = "K", requires = "stages", default_value_t = mapsat::rewrite::VARIANTS)]
        variants: usize,
    },
}

/// Why a command failed, and so its exit code.
#[derive(Debug)]
enum Failure {
    /// The input was rejected: message already rendered.
    Rejected(String),
    /// Bad usage.
    Usage(String),
}

type CliResult<T> = Result<T, Failure>;

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let r = match cli.command {
        Command::Check { file, sizes } => check(&file, &sizes),
        Command::Fmt { file } => fmt(&file),
        Command::Emit { file, sizes, mapping, profile, target, local, output } => {
            let how = kernels::Mapped { mapping: mapping.as_deref(), profile: profile.as_deref() };
            mapsat::local::Locals::parse(&local)
                .map_err(mapping::failure)
                .and_then(|l| kernels::emit(&file, &sizes, how, &target, &l, &output))
        }
        Command::Run {
            file,
            sizes,
            mapping,
            profile,
            device,
            local,
            inputs,
            seed,
            check,
            runs,
            reassociate,
            timeout,
            output,
        } => seconds("--timeout", timeout).and_then(|limit| {
            within(limit, move || {
                let how = kernels::Mapped { mapping: mapping.as_deref(), profile: profile.as_deref() };
                let cfg = mapsat_tuner::measure::RunConfig { check, runs, reassociate, ..Default::default() };
                if let Some(out) = &output {
                    keep_read(out, &file, &inputs)?;
                }
                let l = mapsat::local::Locals::parse(&local).map_err(mapping::failure)?;
                let result = kernels::run(&file, &sizes, how, &device, &l, &inputs, seed, &cfg)?;
                output.map_or(Ok(()), |out| write_npy(&out, &result))
            })
        }),
        Command::Rewrite(args) => rewrite::rewrite(&args),
        Command::Tune(args) => tune::tune(&args),
        Command::Predict(args) => tune::predict(&args),
        Command::Calibrate { device, target, output } => {
            kernels::calibrate(&device, target.as_deref(), output.as_deref())
        }
        Command::Worker => tune::worker(),
        Command::Devices { profile } => kernels::devices(profile.as_deref()),
        Command::Space { file, target, sizes, json, sample, seed, random_baseline, no_fusion, canonical, variants } => {
            let how = space::How { target: target.as_deref(), sizes: &sizes, no_fusion, canonical };
            match variants {
                Some(k) => choices::space(&file, &how, k, json, sample, seed),
                None => space::space(&file, &how, json, sample, seed, random_baseline),
            }
        }
        Command::Explain { file, mapping, target, sizes, no_fusion, stages, variants } => {
            let how = space::How { target: target.as_deref(), sizes: &sizes, no_fusion, canonical: false };
            match stages {
                Some(stages) => choices::explain(&file, &mapping, &stages, &how, variants),
                None => space::explain(&file, &mapping, &how),
            }
        }
        Command::Eval { file, sizes, inputs, random, output } => {
            eval(&file, &sizes, &inputs, random, output.as_deref())
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Rejected(msg)) => {
            eprint!("{msg}");
            if !msg.ends_with('\n') {
                eprintln!();
            }
            ExitCode::from(1)
        }
        Err(Failure::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

/// A source file, kept for error messages.
struct Source {
    name: String,
    text: String,
}

impl Source {
    fn read(path: &Path) -> CliResult<Source> {
        Ok(Source { name: path.display().to_string(), text: mapsat::source::read_text(path)? })
    }

    fn reject(&self, e: &dyn diag::Diagnose) -> Failure {
        Failure::Rejected(diag::render(&self.name, &self.text, e))
    }

    /// An error of `p` at the sizes `given` by the user (the others at their defaults), with
    /// [`mapsat::source::defaulted_note`].
    fn reject_at(&self, e: &dyn diag::Diagnose, p: &ir::Program, given: &Sizes) -> Failure {
        let text = diag::render(&self.name, &self.text, e);
        match mapsat::source::defaulted_note(&self.text, p, given, e.span()) {
            Some(note) => Failure::Rejected(format!("{}\n{note}", text.trim_end())),
            None => Failure::Rejected(text),
        }
    }

    /// A code generation error; one about a map that is not mapped says how a program of
    /// high-level maps gets a mapping.
    fn reject_codegen(&self, e: &mapsat_codegen::CodegenError) -> Failure {
        let text = diag::render(&self.name, &self.text, e);
        match e.kind {
            mapsat_codegen::CodegenErrorKind::Unmapped { .. } => Failure::Rejected(format!(
                "{}\nnote: a program of high-level maps is mapped with `--mapping \"A=G0,B=S,...\"` (its valid mappings: \
                 `mapsat space {}`), or tuned with `mapsat tune {}`",
                text.trim_end(),
                self.name,
                self.name
            )),
            _ => Failure::Rejected(text),
        }
    }

    /// The program, without its kernel boundaries that nothing reads
    /// ([`ir::stages::without_dead`]), each told as a warning on stderr.
    fn parse(&self) -> CliResult<Program> {
        let (p, dead) = ir::stages::without_dead(&self.parse_as_written()?);
        for d in &dead {
            eprint!("{}", diag::render_warning(&self.name, &self.text, d));
        }
        Ok(p)
    }

    /// The program as it is written.
    fn parse_as_written(&self) -> CliResult<Program> {
        ir::parse(&self.text).map_err(|e| self.reject(&e))
    }
}

/// `f`'s result, or an error when it takes longer than `limit`: `f` runs on a thread of its
/// own ([`mapsat::limits::spawn_deep`]), which a kernel that never returns leaves behind, and
/// the process ends with the command.
fn within(limit: std::time::Duration, f: impl FnOnce() -> CliResult<()> + Send + 'static) -> CliResult<()> {
    let rx = mapsat::limits::spawn_deep(f).map_err(mapping::failure)?;
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Failure::Rejected(format!(
            "error: the run did not finish within {} s (--timeout): the kernel hangs or is far too large",
            limit.as_secs_f64()
        ))),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err(Failure::Rejected("error: internal error: the run stopped without a result (please report it)".into()))
        }
    }
}

/// [`mapsat::limits::seconds`] for the flag `flag`.
fn seconds(flag: &str, s: f64) -> CliResult<std::time::Duration> {
    mapsat::limits::seconds(flag, s).map_err(mapping::failure)
}

/// Refuses an output folder (`-o`) that is a file.
fn not_a_file(path: &Path) -> CliResult<()> {
    match path.exists() && !path.is_dir() {
        true => Err(Failure::Rejected(format!(
            "error: {} is a file, not a folder (-o names the output folder)",
            path.display()
        ))),
        false => Ok(()),
    }
}

/// Creates an output folder (`-o`); a file there is refused by name.
fn create_dir(path: &Path) -> CliResult<()> {
    not_a_file(path)?;
    std::fs::create_dir_all(path)
        .map_err(|e| Failure::Rejected(format!("error: cannot create {}: {e}", path.display())))
}

/// Refuses to write the output file `out` over one of the command's `inputs` (the same file,
/// whatever the path says: [`mapsat_tuner::tune::report::keep_away`]), naming both.
fn keep_inputs(out: &Path, inputs: &[&Path]) -> CliResult<()> {
    let keep: Vec<(&Path, &str)> = inputs.iter().map(|i| (*i, "the input")).collect();
    mapsat_tuner::tune::report::keep_away(&[out.to_path_buf()], &keep)
        .map_err(|e| Failure::Rejected(format!("error: nothing is written: {e} (choose another output)")))
}

/// Writes an output file.
fn write(path: &Path, text: &str) -> CliResult<()> {
    ir::files::write(path, text).map_err(|e| Failure::Rejected(format!("error: cannot write {}: {e}", path.display())))
}

/// Size values from the flags, checked against the program's size variables.
fn given_sizes(p: &Program, args: &SizeArgs) -> CliResult<Sizes> {
    let mut out = Sizes::new();
    for s in &args.sizes {
        let (name, value) =
            s.split_once('=').ok_or_else(|| Failure::Usage(format!("--size expects NAME=VALUE, got `{s}`")))?;
        let name = name.trim();
        mapsat::source::size_named(p, name)?;
        let v: i64 = value.trim().parse().map_err(|e: std::num::ParseIntError| {
            let why = match e.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                    "is too large (sizes are at most 2^63 - 2)"
                }
                _ => "is not an integer",
            };
            Failure::Usage(format!("--size {name}: `{value}` {why}"))
        })?;
        // 2^63 - 1 is what an overflowed size saturates to: as much a usage error as 2^63.
        if v == i64::MAX {
            return Err(Failure::Usage(format!("--size {name}: `{value}` is too large (sizes are at most 2^63 - 2)")));
        }
        if let Some(before) = out.get(name) {
            return Err(Failure::Usage(format!("--size {name} is given twice ({before} and {v})")));
        }
        out.insert(name, v);
    }
    Ok(out)
}

/// Every size variable's value, flags first, then the file's defaults, with `p` type-checked
/// at them (its error naming the tunable sizes that took their defaults, [`Source::reject_at`]).
fn checked_sizes(src: &Source, p: &Program, args: &SizeArgs) -> CliResult<Sizes> {
    let given = given_sizes(p, args)?;
    let sizes = p.resolve_sizes(&given).map_err(|e| Failure::Usage(e.to_string()))?;
    ir::check::check_with_sizes(p, &sizes).map_err(|e| src.reject_at(&e, p, &given))?;
    Ok(sizes)
}

fn signature(p: &Program, result: &ir::Type, subst: Option<&Sizes>) -> String {
    let s: HashMap<String, ir::Size> =
        subst.map(|m| m.iter().map(|(k, v)| (k.to_string(), ir::Size::constant(v))).collect()).unwrap_or_default();
    let params: Vec<String> = p.params.iter().map(|q| format!("{}: {}", q.name, q.ty.substitute(&s))).collect();
    format!("{}({}) : {}", p.name, params.join(", "), result)
}

fn check(file: &Path, args: &SizeArgs) -> CliResult<()> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    let info = ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let given = given_sizes(&p, args)?;
    // The program is also checked at its sizes: those given, the others at their defaults (as
    // `eval` and `emit` take them; a size without a default stays symbolic). Without `--size`,
    // at its defaults: a split the defaults do not divide is refused here, not when it runs.
    let sizes = given.or(&p.default_sizes());
    // Without `--size`, the error is the defaults' (the symbolic check passed); with it, the
    // defaulted tile sizes the erring call names are noted (`reject_at`), not every default.
    let at_defaults = |f: Failure| match f {
        Failure::Rejected(m) if given.is_empty() && !m.contains("\nnote: at the default") => {
            let at: Vec<String> = sizes.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            Failure::Rejected(format!(
                "{}\nnote: at the program's default sizes {}; give others with `--size NAME=VALUE`",
                m.trim_end(),
                at.join(", ")
            ))
        }
        f => f,
    };
    let concrete = match sizes.is_empty() {
        true => None,
        false => Some(ir::check::check_with_sizes(&p, &sizes).map_err(|e| at_defaults(src.reject_at(&e, &p, &given)))?),
    };
    outln!("{}", signature(&p, &info.result, None));
    if let Some(info) = concrete.filter(|_| !given.is_empty()) {
        outln!("{}", signature(&p, &info.result, Some(&sizes)));
    }
    let labels = p.map_labels();
    if !labels.is_empty() {
        outln!("maps: {}", labels.join(" "));
    }
    Ok(())
}

fn fmt(file: &Path) -> CliResult<()> {
    let src = Source::read(file)?;
    let p = src.parse_as_written()?;
    let text = ir::print(&p);
    // A long `o` chain is printed as nested calls, which may nest deeper than the parser reads.
    if let Err(e) = ir::parse(&text) {
        return Err(Failure::Rejected(format!(
            "error: the program has no canonical form that reads back ({}): keep it as it is written",
            e.message
        )));
    }
    outln!("{}", text.trim_end());
    Ok(())
}

fn eval(file: &Path, args: &SizeArgs, inputs: &[String], random: Option<u64>, output: Option<&Path>) -> CliResult<()> {
    let src = Source::read(file)?;
    let p = src.parse()?;
    ir::check::check(&p).map_err(|e| src.reject(&e))?;
    let sizes = checked_sizes(&src, &p, args)?;

    if let Some(out) = output {
        keep_read(out, file, inputs)?;
    }
    let tensors = load_inputs(&src, &p, &sizes, inputs, random)?;
    let result = interp::eval(&p, &sizes, &tensors).map_err(|e| src.reject(&e))?;
    outln!("{}", summary(&result));
    if let Some(out) = output {
        write_npy(out, &result)?;
    }
    Ok(())
}

/// Refuses to write the output `out` over the program `file` or an input file (`--input
/// x=a.npy`).
fn keep_read(out: &Path, file: &Path, inputs: &[String]) -> CliResult<()> {
    let given: Vec<PathBuf> = inputs.iter().filter_map(|s| s.split_once('=').map(|(_, f)| f.into())).collect();
    let read: Vec<&Path> = std::iter::once(file).chain(given.iter().map(PathBuf::as_path)).collect();
    keep_inputs(out, &read)?;
    ir::files::check_writable(out).map_err(|e| Failure::Rejected(format!("error: cannot write {}: {e}", out.display())))
}

/// Writes a result as a `.npy` file.
fn write_npy(out: &Path, t: &interp::Tensor) -> CliResult<()> {
    interp::write_npy(out, t).map_err(|e| Failure::Rejected(format!("error: {e}")))
}

/// The program's inputs in parameter order: `--input PARAM=FILE` files, else random data from
/// `random` (a seed), else a usage error naming the parameter.
fn load_inputs(
    src: &Source,
    p: &Program,
    sizes: &Sizes,
    inputs: &[String],
    random: Option<u64>,
) -> CliResult<Vec<interp::Tensor>> {
    let mut files: HashMap<String, PathBuf> = HashMap::new();
    for s in inputs {
        let (name, path) =
            s.split_once('=').ok_or_else(|| Failure::Usage(format!("--input expects PARAM=FILE, got `{s}`")))?;
        if !p.params.iter().any(|q| q.name == name) {
            return Err(Failure::Usage(format!("the program has no parameter `{name}`")));
        }
        if files.insert(name.to_string(), PathBuf::from(path)).is_some() {
            return Err(Failure::Usage(format!("--input gives parameter `{name}` twice")));
        }
    }
    let mut random_data: Vec<Option<interp::Tensor>> = match random {
        Some(seed) => {
            interp::random_inputs(p, sizes, seed).map_err(|e| src.reject(&e))?.into_iter().map(Some).collect()
        }
        None => Vec::new(),
    };
    let mut tensors = Vec::new();
    for (i, q) in p.params.iter().enumerate() {
        let t = match (files.get(&q.name), random_data.get_mut(i).and_then(Option::take)) {
            (Some(path), _) => interp::read_npy(path).map_err(|e| Failure::Rejected(format!("error: {e}")))?,
            (None, Some(r)) => r,
            (None, None) => {
                return Err(Failure::Usage(format!(
                    "no input for parameter `{0}`: give --input {0}=FILE.npy or --random SEED",
                    q.name
                )));
            }
        };
        tensors.push(t);
    }
    Ok(tensors)
}

/// Shape, the first values and the sum of a result.
fn summary(t: &interp::Tensor) -> String {
    let (kind, first, sum): (&str, Vec<String>, String) = match &t.data {
        interp::TensorData::F32(v) => (
            "f32",
            v.iter().take(6).map(|x| format!("{x:.6}")).collect(),
            format!("{:.6}", v.iter().map(|x| *x as f64).sum::<f64>()),
        ),
        interp::TensorData::I32(v) => (
            "i32",
            v.iter().take(6).map(|x| x.to_string()).collect(),
            v.iter().map(|x| *x as i64).sum::<i64>().to_string(),
        ),
        interp::TensorData::Bool(v) => {
            ("bool", v.iter().take(6).map(|x| x.to_string()).collect(), v.iter().filter(|x| **x).count().to_string())
        }
    };
    let n: usize = t.shape.iter().product();
    let more = if n > first.len() { ", ..." } else { "" };
    format!("result: {kind} {:?}\nvalues: [{}{more}]\nsum: {sum}", t.shape, first.join(", "))
}

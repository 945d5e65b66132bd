//! mapsat-codegen: lowering of fully mapped programs to OpenCL C and CUDA C.
//!
//! A program whose maps are all mapped (`mapSeq`, `mapGlb`, `mapWrg`, `mapLcl`, `mapVec`) and
//! whose reduces are `reduceSeq` is lowered, at concrete sizes, to one kernel IR ([`kir`]):
//! buffers with their address spaces and sizes, loops, stores, barriers and simplified index
//! expressions ([`index`]). Two printers share it ([`print`](mod@print), as naga's back ends
//! share naga's IR): OpenCL C and CUDA C differ only in spelling.
//!
//! ```
//! let p = mapsat_ir::parse("size N = 1024\ndef scal(xs: [f32]N, a: f32) = mapGlb(0, fun(x => x * a), xs)").unwrap();
//! let k = mapsat_codegen::lower(&p, &mapsat_codegen::Options::default()).unwrap();
//! let src = mapsat_codegen::print(&k, mapsat_codegen::Dialect::OpenCl).unwrap();
//! assert!(src.contains("out[i_x] = xs[i_x] * a;"));
//! ```
//!
//! How lowering works (views, memory, barriers, launch shape) is described in the documentation
//! of the private module `lower` (`src/lower/mod.rs` and one file per concept beside it); what
//! is printed for each loop kind in [`print`](mod@print).

pub mod error;
pub mod index;
pub mod kir;
pub mod limits;
mod lower;
mod opt;
pub mod print;
mod split;
pub mod verify;
pub mod visit;
pub mod width;

pub use error::{CodegenError, CodegenErrorKind};
pub use kir::Kernel;
pub use print::{print, Dialect};

use serde::{Deserialize, Serialize};

/// What the caller chooses.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Values of size variables (the program's defaults fill the others).
    pub sizes: mapsat_ir::Sizes,
    /// Work-group size per dimension, overriding the default derived from the map extents.
    pub local: Option<Vec<i64>>,
    /// The target's limit on work items per work group (a device profile's
    /// `max_work_group_size`): a larger `local` is refused. `None`: not checked here (the
    /// runtime refuses what the device cannot launch).
    pub max_work_group_size: Option<i64>,
    /// The target's limits on the work-group size per dimension (a device profile's
    /// `max_work_item_sizes`): a larger local size, given or chosen, is refused. `None`: not
    /// checked here.
    pub max_work_item_sizes: Option<[i64; 3]>,
    /// The bits of the target's `size_t` (a device profile's `address_bits`, OpenCL's
    /// `CL_DEVICE_ADDRESS_BITS`): a global size beyond its range in some dimension is refused.
    /// `None`: not checked here.
    pub address_bits: Option<u32>,
    /// The target's limit on the private memory of a work group, bytes per work item times work
    /// items (a device profile's `private_group_bytes`: pocl's worker stack): a kernel beyond it
    /// is refused. `None`: not checked here.
    pub max_private_group_bytes: Option<u64>,
    /// The target's local memory per work group (a device profile's `local_mem_bytes`): a
    /// kernel whose local buffers, the program's `toLocal` ones and those code generation
    /// stages itself, hold more is refused (pocl aborted the process launching one). `None`: not
    /// checked here.
    pub max_local_bytes: Option<u64>,
    /// The target's limits on the work groups of a launch per dimension (a device profile's
    /// `max_groups`: CUDA's grid): a launch with more is refused. `None`: not checked here.
    pub max_groups: Option<[u64; 3]>,
}

impl Options {
    /// [`Options::for_profile`] when there is a profile, else the sizes and work-group size
    /// without limits.
    pub fn for_target(
        sizes: mapsat_ir::Sizes,
        local: Option<Vec<i64>>,
        profile: Option<&mapsat_ir::profile::Profile>,
    ) -> Options {
        match profile {
            Some(p) => Options::for_profile(sizes, local, p),
            None => Options { sizes, local, ..Options::default() },
        }
    }

    /// Options at `sizes` with work-group size `local` and every limit of `profile` checked.
    pub fn for_profile(
        sizes: mapsat_ir::Sizes,
        local: Option<Vec<i64>>,
        profile: &mapsat_ir::profile::Profile,
    ) -> Options {
        Options {
            sizes,
            local,
            max_work_group_size: Some(profile.max_work_group_size as i64),
            max_work_item_sizes: Some(profile.max_work_item_sizes.map(|x| x as i64)),
            address_bits: Some(profile.address_bits),
            max_private_group_bytes: profile.private_group_bytes,
            max_local_bytes: Some(profile.local_mem_bytes),
            max_groups: profile.max_groups,
        }
    }
}

/// Lowers a program to the kernel IR at concrete sizes, then cleans it up (one-iteration loops
/// elided, indices simplified again, small private arrays promoted to registers) and decides
/// which variables and index parts are 64-bit ([`width`](mod@width)). In debug builds the
/// kernel is verified ([`verify`](mod@verify)) after each of the three steps.
pub fn lower(p: &mapsat_ir::Program, opts: &Options) -> Result<Kernel, CodegenError> {
    let k = lower_in_private(p, opts)?;
    if let Some(max) = opts.max_local_bytes {
        limits::check_local(k.memory().local_bytes, max)?;
    }
    Ok(k)
}

/// [`lower_at`], with a smaller default work group when the default one holds more private
/// memory than the target allows.
fn lower_in_private(p: &mapsat_ir::Program, opts: &Options) -> Result<Kernel, CodegenError> {
    let k = lower_at(p, opts)?;
    let Some(max) = opts.max_private_group_bytes else { return Ok(k) };
    match limits::check_private_group(k.memory().private_bytes, &k.launch.local, max) {
        Ok(()) => Ok(k),
        // The default work group holds too much private memory: a smaller one, if one fits.
        Err(e) if opts.local.is_none() => smaller_group(p, opts, &k, max).ok_or(e),
        Err(e) => Err(e),
    }
}

/// The kernel lowered again with its default work group halved (the largest dimension first)
/// until its private memory fits `max` bytes; `None` when none does or that launch is refused.
fn smaller_group(p: &mapsat_ir::Program, opts: &Options, k: &Kernel, max: u64) -> Option<Kernel> {
    let mut local = k.launch.local;
    let items = |l: &[i64; 3]| l.iter().map(|x| (*x).max(1) as u64).product::<u64>();
    while k.memory().private_bytes.checked_mul(items(&local)).is_none_or(|t| t > max) {
        let d = (0..3).filter(|&d| local[d] > 1).max_by_key(|&d| local[d])?;
        local[d] /= 2;
    }
    let smaller = lower_at(p, &Options { local: Some(local.to_vec()), ..opts.clone() }).ok()?;
    limits::check_private_group(smaller.memory().private_bytes, &smaller.launch.local, max).ok()?;
    Some(smaller)
}

/// [`lower`] without the check of the work group's private memory.
fn lower_at(p: &mapsat_ir::Program, opts: &Options) -> Result<Kernel, CodegenError> {
    let p = &*mapsat_ir::widths::specialize(p, &opts.sizes).map_err(CodegenErrorKind::Width)?;
    let k = lower::Lower::run(p, opts)?;
    verified(&k, "after lowering")?;
    let mut k = opt::optimize(k);
    verified(&k, "after the clean-up passes")?;
    width::assign(&mut k);
    verified(&k, "after the choice of index widths")?;
    if cfg!(debug_assertions) {
        verify::verify_widths(&k).map_err(|e| {
            CodegenErrorKind::Internal(format!("the index widths of `{}` fail verification: {e}", k.name))
        })?;
    }
    Ok(k)
}

/// In debug builds, an internal error when the kernel fails verification.
fn verified(k: &Kernel, when: &str) -> Result<(), CodegenError> {
    if cfg!(debug_assertions) {
        verify::verify(k).map_err(|e| {
            CodegenErrorKind::Internal(format!("the kernel IR of `{}` {when} fails verification: {e}", k.name))
        })?;
    }
    Ok(())
}

/// A buffer as the host sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BufferInfo {
    /// Name in the kernel.
    pub name: String,
    /// `input`, `output` or `temp`.
    pub role: kir::Role,
    /// Address space.
    pub space: kir::Space,
    /// Element scalar type (`f32`, `i32`, `bool` stored as one byte).
    pub elem: mapsat_ir::ScalarKind,
    /// Number of scalars.
    pub len: i64,
    /// Bytes.
    pub bytes: u64,
    /// Position of the kernel argument, if it is one.
    pub arg: Option<usize>,
    /// Position of the program parameter, for inputs.
    pub param: Option<usize>,
    /// Passed by value (scalar parameter).
    pub by_value: bool,
}

/// What a host needs to run a kernel: written next to the source as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Entry point.
    pub entry: String,
    /// The source's dialect (`opencl` or `cuda`).
    pub target: Dialect,
    /// Source file name.
    pub source: String,
    /// Size values the kernel is specialized for.
    pub sizes: mapsat_ir::Sizes,
    /// Launch shape.
    pub launch: kir::Launch,
    /// Buffers: kernel arguments first, in argument order, then local and private ones.
    pub buffers: Vec<BufferInfo>,
    /// Bytes per address space.
    pub memory: kir::MemoryTotals,
    /// Floating-point operations of one run.
    pub flops: u64,
    /// Options for the device compiler (OpenCL build options), empty by default; see
    /// [`REASSOCIATE`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub build_options: String,
}

/// OpenCL build options that let the device compiler reassociate floating-point arithmetic
/// (and ignore the sign of zero), so that it can vectorize sums: a kernel built with them may
/// round differently from the interpreter, within the tolerance every measured kernel is
/// checked with. Infinities and NaNs keep their meaning (no `-cl-finite-math-only`).
pub const REASSOCIATE: &str = "-cl-unsafe-math-optimizations";

/// The entry point of the kernel of the program named `program` (the manifest's `entry`, and
/// the name of its source and manifest files): the name, unless that is a built-in function of
/// OpenCL C or CUDA, a keyword or `main` (`dot` is `dot_kernel`), or has other characters.
pub fn entry_name(program: &str) -> String {
    lower::sanitize(program)
}

/// The build options of a kernel in dialect `d`: [`REASSOCIATE`] for OpenCL when sums may be
/// reassociated, none otherwise (CUDA kernels are built as they are).
pub fn build_options(d: Dialect, reassociate: bool) -> String {
    if reassociate && d == Dialect::OpenCl {
        REASSOCIATE.to_string()
    } else {
        String::new()
    }
}

impl Manifest {
    /// The manifest as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// The manifest of a kernel.
pub fn manifest(k: &Kernel, d: Dialect, source: &str) -> Manifest {
    let mut buffers = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let order = k.args.iter().copied().chain(k.locals.iter().copied()).chain((0..k.buffers.len()).map(kir::BufId));
    for id in order {
        if !seen.insert(id) {
            continue;
        }
        let b = k.buf(id);
        buffers.push(BufferInfo {
            name: b.name.clone(),
            role: b.role,
            space: b.space,
            elem: b.kind,
            len: b.scalars(),
            bytes: b.bytes(),
            arg: k.args.iter().position(|a| *a == id),
            param: b.param,
            by_value: b.by_value,
        });
    }
    Manifest {
        entry: k.name.clone(),
        target: d,
        source: source.to_string(),
        sizes: k.sizes.clone(),
        launch: k.launch.clone(),
        buffers,
        memory: k.memory(),
        flops: k.flops,
        build_options: String::new(),
    }
}

/// Refuses a program with a parameter no kernel can take (a vector not in an array, a tuple),
/// whatever its mapping and sizes, with the message [`emit`] gives.
pub fn check_params(p: &mapsat_ir::Program) -> Result<(), CodegenError> {
    for q in &p.params {
        let (dims, elem) = q.ty.dims();
        lower::param_element(&q.name, &q.ty, !dims.is_empty(), elem)?;
    }
    Ok(())
}

/// Lowers and prints in one step: the source and its manifest.
pub fn emit(p: &mapsat_ir::Program, opts: &Options, d: Dialect) -> Result<(String, Manifest), CodegenError> {
    let k = lower(p, opts)?;
    let src = print(&k, d)?;
    let m = manifest(&k, d, &format!("{}.{}", k.name, d.extension()));
    Ok((src, m))
}

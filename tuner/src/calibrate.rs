//! `mapsat calibrate`: a device's rates for the analytical model, measured with micro-kernels
//! written in the device's dialect and timed like any kernel (device events, median of runs):
//!
//! - **bandwidth**: a copy of `N` floats, one per work item (bytes read plus written / time);
//! - **arithmetic**: eight independent multiply-add chains per work item, in registers,
//!   written out without a loop so that a CPU driver can pack work items into vector lanes
//!   (2 × 8 × `R` operations per work item / time);
//! - **launch**: a kernel of one work item that stores one float (its whole time);
//! - **work groups**: `2^16` work items that each store one float, in groups of one and in
//!   groups of 256 (the difference per extra group);
//! - **cache**: `2^20` work items in groups of 256 that each read 256 floats of a buffer of
//!   `2^16` floats (256 KiB, which stays in the device's cache), the work items of a group
//!   reading consecutive floats, written out without a loop; the bandwidth is counted as the analytical model
//!   counts a kernel's traffic: lines moved by `simd_width`-wide groups of work items.
//!   The cache's size is the device's (`CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`, CUDA's L2 size).
//!   Where the compute unit's own cache levels are known (below), the buffer is 4 times the
//!   largest of them (at most half the cache), each work group reading its own 256 KiB window
//!   of it, so that the reads come from the shared cache and not from the compute unit's;
//! - **cache levels**: the same kernel on a buffer of half the first-level (then the
//!   second-level) cache of one compute unit, each work item reading it 256 times over.
//!   OpenCL and CUDA report no such sizes: a CPU device's are the host's (Linux sysfs,
//!   `/sys/devices/system/cpu/cpu0/cache`), a GPU's come from the base profile (its data
//!   sheet); a level of unknown size is not measured (0).
//!
//! A CPU device packs work items into vector lanes only where their code allows it
//! (`lock_step = false`): its lanes are the ratio of the arithmetic rate to that of the same
//! chains in a loop. A GPU's lanes and the line size come from the base profile (or its
//! vector width and 64 bytes).

use crate::measure::{self, DeviceSpec, MeasureError, RunConfig, Session};
use mapsat_codegen::kir::{Launch, MemoryTotals, Role, Space};
use mapsat_codegen::{BufferInfo, Dialect, Manifest};
use mapsat_ir::interp::Tensor;
use mapsat_ir::profile::{Profile, Rates};
use mapsat_ir::{ScalarKind, Sizes};

/// Floats copied by the bandwidth kernel (64 MiB per buffer).
const COPY_N: i64 = 1 << 24;
/// Work items of the arithmetic kernel.
const FMA_N: i64 = 1 << 20;
/// Steps of each multiply-add chain.
const FMA_R: i64 = 64;
/// Work items per work group.
const GROUP: i64 = 256;
/// Work items of the work-group kernels.
const GROUPS_N: i64 = 1 << 16;
/// Floats of the buffer the cache kernel reads (256 KiB).
const CACHED_N: i64 = 1 << 16;
/// Work items of the cache kernel.
const CACHE_ITEMS: i64 = 1 << 20;
/// Reads per work item of the cache kernel: [`CACHED_N`] over the work-group size.
const CACHE_READS: i64 = CACHED_N / GROUP;

fn source(d: Dialect, name: &str, params: &str, body: &str) -> String {
    match d {
        Dialect::OpenCl => format!(
            "kernel void {name}({}) {{\n  int i = get_global_id(0);\n{body}}}\n",
            params.replace("PTR", "global float*")
        ),
        Dialect::Cuda => format!(
            "extern \"C\" __global__ void {name}({}) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n{body}}}\n",
            params.replace("PTR", "float*")
        ),
    }
}

fn buffer(name: &str, role: Role, len: i64, arg: usize) -> BufferInfo {
    BufferInfo {
        name: name.into(),
        role,
        space: Space::Global,
        elem: ScalarKind::F32,
        len,
        bytes: len as u64 * 4,
        arg: Some(arg),
        param: (role == Role::Input).then_some(0),
        by_value: false,
    }
}

fn manifest(d: Dialect, entry: &str, n: i64, group: i64, input: Option<i64>, out_len: i64, flops: u64) -> Manifest {
    let mut buffers = Vec::new();
    if let Some(len) = input {
        buffers.push(buffer("x", Role::Input, len, 0));
    }
    buffers.push(buffer("out", Role::Output, out_len, buffers.len()));
    Manifest {
        entry: entry.into(),
        target: d,
        source: format!("{entry}.{}", d.extension()),
        sizes: Sizes::new(),
        launch: Launch { dims: 1, global: [n, 1, 1], local: [group, 1, 1] },
        memory: MemoryTotals::default(),
        buffers,
        flops,
        build_options: String::new(),
    }
}

/// The median time in ms of a micro-kernel.
fn time(s: &mut Session, src: &str, m: &Manifest, inputs: &[Tensor], out: usize) -> Result<f64, MeasureError> {
    let cfg = RunConfig { warmup: 2, runs: 9, check: false, ..RunConfig::default() };
    let r = s.run(src, m, inputs, vec![out], &cfg)?;
    Ok(measure::median(&r.times_ms))
}

/// Measures the rates of `device` (see the module documentation); lanes and line size from
/// `base`.
pub fn calibrate(device: DeviceSpec, base: &Profile) -> Result<Rates, MeasureError> {
    let d = device.dialect();
    let mut s = Session::open(device)?;
    let copy = source(d, "mapsat_copy", "const PTR x, PTR out", "  out[i] = x[i];\n");
    let x = Tensor::f32(vec![COPY_N as usize], vec![1.0; COPY_N as usize]);
    let m = manifest(d, "mapsat_copy", COPY_N, GROUP, Some(COPY_N), COPY_N, 0);
    let copy_ms = time(&mut s, &copy, &m, std::slice::from_ref(&x), COPY_N as usize)?;
    let step = "  a0 = a0 * 0.999f + 0.5f; a1 = a1 * 0.999f + 0.5f; a2 = a2 * 0.999f + 0.5f; a3 = a3 * 0.999f + 0.5f;\n  a4 = a4 * 0.999f + 0.5f; a5 = a5 * 0.999f + 0.5f; a6 = a6 * 0.999f + 0.5f; a7 = a7 * 0.999f + 0.5f;\n";
    let chains = |steps: &str| {
        format!(
            "  float x = (float)i * 1e-6f;\n  float a0 = x, a1 = x + 1.0f, a2 = x + 2.0f, a3 = x + 3.0f, a4 = x + 4.0f, a5 = x + 5.0f, a6 = x + 6.0f, a7 = x + 7.0f;\n{steps}  out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
        )
    };
    let fma = source(d, "mapsat_fma", "PTR out", &chains(&step.repeat(FMA_R as usize)));
    let flops = (FMA_N * FMA_R * 16) as u64;
    let m = manifest(d, "mapsat_fma", FMA_N, GROUP, None, FMA_N, flops);
    let fma_ms = time(&mut s, &fma, &m, &[], FMA_N as usize)?;
    // The same chains in a loop: a CPU driver cannot pack work items into vector lanes then.
    let fma_loop = source(
        d,
        "mapsat_fma_loop",
        "PTR out",
        &chains(&format!("  for (int r = 0; r < {FMA_R}; r++) {{\n{step}  }}\n")),
    );
    let m = manifest(d, "mapsat_fma_loop", FMA_N, GROUP, None, FMA_N, flops);
    let loop_ms = time(&mut s, &fma_loop, &m, &[], FMA_N as usize)?;
    let cpu = measure::is_cpu(device)?;
    let empty = source(d, "mapsat_empty", "PTR out", "  out[i] = 1.0f;\n");
    let m = manifest(d, "mapsat_empty", 1, 1, None, 1, 0);
    let launch_ms = time(&mut s, &empty, &m, &[], 1)?;
    let m = manifest(d, "mapsat_empty", GROUPS_N, 1, None, GROUPS_N, 0);
    let ones_ms = time(&mut s, &empty, &m, &[], GROUPS_N as usize)?;
    let m = manifest(d, "mapsat_empty", GROUPS_N, GROUP, None, GROUPS_N, 0);
    let full_ms = time(&mut s, &empty, &m, &[], GROUPS_N as usize)?;
    let group_us = ((ones_ms - full_ms) * 1e3 / (GROUPS_N - GROUPS_N / GROUP) as f64).max(0.0);
    let given = base.rates.clone();
    let levels = if cpu { host_cache_levels() } else { None };
    let (l1_bytes, l2_bytes) = levels.or_else(|| given.as_ref().map(|r| (r.l1_bytes, r.l2_bytes))).unwrap_or((0, 0));
    let cache_bytes = measure::cache_bytes(device)?;
    // The outer cache beyond the compute unit's own levels: a buffer 4 times the largest of
    // them (within the cache), else 256 KiB.
    let own = l1_bytes.max(l2_bytes);
    let outer_n = match own {
        0 => CACHED_N,
        _ => level_floats((8 * own).min(cache_bytes.max(2 * own))).unwrap_or(CACHED_N),
    };
    let cached_ms = time_cache_reads(&mut s, d, outer_n)?;
    // Each level with a buffer of half its size (the rest holds the stores and the stack).
    let mut level_ms = |bytes: u64| match level_floats(bytes) {
        Some(n) => time_cache_reads(&mut s, d, n).map(Some),
        None => Ok(None),
    };
    let (l1_ms, l2_ms) = (level_ms(l1_bytes)?, level_ms(l2_bytes)?);
    let line_bytes = given.as_ref().map_or(64, |r| r.line_bytes);
    let simd_width = if cpu {
        // The lanes a CPU driver gains by packing work items: the two rates' ratio, as a
        // power of two.
        let ratio = (loop_ms / fma_ms.max(1e-9)).clamp(1.0, 64.0);
        1 << ratio.log2().round() as u32
    } else {
        given.as_ref().map_or(base.vector_width.max(1), |r| r.simd_width)
    };
    // Lines moved as the model counts them: per group of `simd_width` work items reading
    // consecutive floats, the lines those floats span.
    let lines_per_group = (f64::from(simd_width) * 4.0 / f64::from(line_bytes)).ceil().max(1.0);
    let moved = (CACHE_ITEMS * CACHE_READS) as f64 / f64::from(simd_width) * lines_per_group * f64::from(line_bytes);
    Ok(Rates {
        gflops: flops as f64 / (fma_ms.max(1e-6) * 1e6),
        bandwidth_gbs: (2 * 4 * COPY_N) as f64 / (copy_ms.max(1e-6) * 1e6),
        launch_us: launch_ms * 1e3,
        simd_width,
        line_bytes,
        group_us,
        lock_step: !cpu,
        cache_bytes,
        cache_bandwidth_gbs: moved / (cached_ms.max(1e-6) * 1e6),
        l1_bytes,
        l1_bandwidth_gbs: l1_ms.map_or(0.0, |ms| moved / (ms.max(1e-6) * 1e6)),
        l2_bytes,
        l2_bandwidth_gbs: l2_ms.map_or(0.0, |ms| moved / (ms.max(1e-6) * 1e6)),
        // Not measured: the given profile's data-sheet figures, if any.
        cu_items: given.as_ref().map_or(0, |r| r.cu_items),
        cu_registers: given.as_ref().map_or(0, |r| r.cu_registers),
        cu_local_bytes: given.as_ref().map_or(0, |r| r.cu_local_bytes),
    })
}

/// Floats of the buffer that measures a cache level of `bytes`: the largest power of two in
/// half of it, at least a work group's ([`GROUP`]); `None` for an unknown level (0).
fn level_floats(bytes: u64) -> Option<i64> {
    let n = bytes / 2 / 4;
    (n >= GROUP as u64).then(|| 1i64 << n.ilog2())
}

/// The data-cache sizes of one core of the host (L1d and L2), from Linux's sysfs: a CPU
/// OpenCL device runs on the host. `None` where they cannot be read.
fn host_cache_levels() -> Option<(u64, u64)> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut levels = (0, 0);
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).map(|t| t.trim().to_string());
        let (Ok(level), Ok(kind), Ok(size)) = (read("level"), read("type"), read("size")) else { continue };
        let bytes = match size.strip_suffix('K') {
            Some(k) => k.parse::<u64>().ok().map(|k| k << 10),
            None => size.strip_suffix('M').and_then(|m| m.parse::<u64>().ok()).map(|m| m << 20),
        };
        match (level.as_str(), kind.as_str(), bytes) {
            ("1", "Data", Some(b)) => levels.0 = b,
            ("2", "Unified" | "Data", Some(b)) => levels.1 = b,
            _ => {}
        }
    }
    (levels.0 > 0).then_some(levels)
}

/// The cache kernel's time in ms (see the module documentation), reading a buffer of `n`
/// floats (a power of two, at least [`GROUP`]).
fn time_cache_reads(s: &mut Session, d: Dialect, n: i64) -> Result<f64, MeasureError> {
    let (lid, gid) = match d {
        Dialect::OpenCl => ("get_local_id(0)", "get_group_id(0)"),
        Dialect::Cuda => ("threadIdx.x", "blockIdx.x"),
    };
    let reads: String = (0..CACHE_READS).map(|r| format!("  acc += x[l + {}];\n", (r * GROUP) % n)).collect();
    let reads = reads.replace("x[l + ", "x[b + l + ");
    // Each group reads its own window of [`CACHED_N`] floats (all of a smaller buffer).
    let body = format!(
        "  int l = {lid};\n  int b = ((int){gid} * {CACHED_N}) & {};\n  float acc = 0.0f;\n{reads}  out[i] = acc;\n",
        n - 1
    );
    let src = source(d, "mapsat_cached", "const PTR x, PTR out", &body);
    let x = Tensor::f32(vec![n as usize], vec![1.0; n as usize]);
    let m = manifest(d, "mapsat_cached", CACHE_ITEMS, GROUP, Some(n), CACHE_ITEMS, 0);
    time(s, &src, &m, std::slice::from_ref(&x), CACHE_ITEMS as usize)
}

/// Notes for the profile file, naming how each rate was obtained.
pub fn notes() -> Vec<(&'static str, &'static str)> {
    vec![
        ("rates.gflops", "Measured by `mapsat calibrate`: 8 independent multiply-add chains of 64 steps per work item, written without a loop, 2^20 work items (median of 9 runs)."),
        ("rates.bandwidth_gbs", "Measured by `mapsat calibrate`: a copy of 2^24 floats, bytes read plus written (median of 9 runs)."),
        ("rates.launch_us", "Measured by `mapsat calibrate`: a kernel of one work item storing one float (median of 9 runs)."),
        ("rates.simd_width", "A CPU's: the arithmetic rate over that of the same chains in a loop (which keeps work items out of vector lanes), as a power of two, measured by `mapsat calibrate`. A GPU's: from the base profile (or its vector width)."),
        ("rates.line_bytes", "Not measured: from the base profile (or 64 bytes)."),
        ("rates.group_us", "Measured by `mapsat calibrate`: 2^16 work items storing one float each, in groups of 1 against groups of 256 (time per extra group)."),
        ("rates.cache_bytes", "CL_DEVICE_GLOBAL_MEM_CACHE_SIZE (OpenCL) or the L2 size (CUDA), read by `mapsat calibrate`."),
        ("rates.cache_bandwidth_gbs", "Measured by `mapsat calibrate`: 2^20 work items reading 256 floats each of a 256 KiB buffer, counted as the model counts lines (median of 9 runs)."),
        ("rates.l1_bytes", "The L1 data cache of one core (Linux sysfs, for a CPU device), else from the base profile."),
        ("rates.l1_bandwidth_gbs", "Measured by `mapsat calibrate`: 2^20 work items reading 256 floats each of a buffer of half the L1, counted as the model counts lines (median of 9 runs)."),
        ("rates.l2_bytes", "The L2 cache of one core (Linux sysfs, for a CPU device), else from the base profile."),
        ("rates.l2_bandwidth_gbs", "Measured by `mapsat calibrate`: as the L1's, with a buffer of half the L2 (median of 9 runs)."),
        ("rates.lock_step", "false for a CPU device (CL_DEVICE_TYPE_CPU): its compiler packs work items into vector lanes only where their accesses allow it."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_is_measured_on_the_largest_power_of_two_floats_in_half_of_it() {
        // 48 KiB: 6144 floats in half, 4096 the largest power of two.
        assert_eq!(level_floats(48 << 10), Some(4096));
        assert_eq!(level_floats(1 << 20), Some(1 << 17));
        // Unknown, or too small for a work group's reads.
        assert_eq!(level_floats(0), None);
        assert_eq!(level_floats(GROUP as u64 * 4), None);
    }
}

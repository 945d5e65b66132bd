//! `mapsat calibrate`: a device's rates for the analytical model, measured with micro-kernels
//! written in the device's dialect and timed like any kernel (device events, median of runs):
//!
//! - **bandwidth**: a copy of `N` floats, one per work item (bytes read plus written / time);
//! - **arithmetic**: eight independent multiply-add chains per work item, in registers
//!   (2 × 8 × `R` operations per work item / time);
//! - **launch**: a kernel of one work item that stores one float (its whole time).
//!
//! Lanes and line size are not measured: they come from the base profile (or its vector width
//! and 64 bytes).

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
/// Iterations of each multiply-add chain.
const FMA_R: i64 = 256;
/// Work items per work group.
const GROUP: i64 = 256;

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
    let copy = source(d, "copy", "const PTR x, PTR out", "  out[i] = x[i];\n");
    let x = Tensor::f32(vec![COPY_N as usize], vec![1.0; COPY_N as usize]);
    let m = manifest(d, "copy", COPY_N, GROUP, Some(COPY_N), COPY_N, 0);
    let copy_ms = time(&mut s, &copy, &m, std::slice::from_ref(&x), COPY_N as usize)?;
    let body = format!(
        "  float x = (float)i * 1e-6f;\n  float a0 = x, a1 = x + 1.0f, a2 = x + 2.0f, a3 = x + 3.0f, a4 = x + 4.0f, a5 = x + 5.0f, a6 = x + 6.0f, a7 = x + 7.0f;\n  for (int r = 0; r < {FMA_R}; r++) {{\n    a0 = a0 * 0.999f + 0.5f; a1 = a1 * 0.999f + 0.5f; a2 = a2 * 0.999f + 0.5f; a3 = a3 * 0.999f + 0.5f;\n    a4 = a4 * 0.999f + 0.5f; a5 = a5 * 0.999f + 0.5f; a6 = a6 * 0.999f + 0.5f; a7 = a7 * 0.999f + 0.5f;\n  }}\n  out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
    );
    let fma = source(d, "fma", "PTR out", &body);
    let flops = (FMA_N * FMA_R * 16) as u64;
    let m = manifest(d, "fma", FMA_N, GROUP, None, FMA_N, flops);
    let fma_ms = time(&mut s, &fma, &m, &[], FMA_N as usize)?;
    let empty = source(d, "empty", "PTR out", "  out[i] = 1.0f;\n");
    let m = manifest(d, "empty", 1, 1, None, 1, 0);
    let launch_ms = time(&mut s, &empty, &m, &[], 1)?;
    let given = base.rates.clone();
    Ok(Rates {
        gflops: flops as f64 / (fma_ms.max(1e-6) * 1e6),
        bandwidth_gbs: (2 * 4 * COPY_N) as f64 / (copy_ms.max(1e-6) * 1e6),
        launch_us: launch_ms * 1e3,
        simd_width: given.as_ref().map_or(base.vector_width.max(1), |r| r.simd_width),
        line_bytes: given.as_ref().map_or(64, |r| r.line_bytes),
    })
}

/// Notes for the profile file, naming how each rate was obtained.
pub fn notes() -> Vec<(&'static str, &'static str)> {
    vec![
        ("rates.gflops", "Measured by `mapsat calibrate`: 8 independent multiply-add chains of 256 steps per work item, 2^20 work items (median of 9 runs)."),
        ("rates.bandwidth_gbs", "Measured by `mapsat calibrate`: a copy of 2^24 floats, bytes read plus written (median of 9 runs)."),
        ("rates.launch_us", "Measured by `mapsat calibrate`: a kernel of one work item storing one float (median of 9 runs)."),
        ("rates.simd_width", "Not measured: from the base profile (or its vector width)."),
        ("rates.line_bytes", "Not measured: from the base profile (or 64 bytes)."),
    ]
}

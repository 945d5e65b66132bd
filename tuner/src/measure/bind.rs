//! Host data of a kernel's arguments: inputs in the manifest's argument order, the output and
//! temporaries poisoned (so that an element the kernel does not write shows up as a mismatch).

use super::MeasureError;
use mapsat_codegen::kir::Role;
use mapsat_codegen::Manifest;
use mapsat_ir::interp::{try_collect, try_filled, Tensor, TensorData};
use mapsat_ir::ScalarKind;

/// Scalars on the host, as the device stores them (`bool` as one byte).
#[derive(Clone, Debug)]
pub(crate) enum Host {
    F32(Vec<f32>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

impl Host {
    /// A copy of `t`'s data; the copies here and in [`Host::poison`] fail with an error when
    /// their memory cannot be had, where a plain allocation aborts the process.
    fn of(t: &Tensor) -> Result<Host, MeasureError> {
        let host = MeasureError::HostMemory;
        Ok(match &t.data {
            TensorData::F32(v) => Host::F32(try_collect(v.len(), v.iter().copied()).map_err(host)?),
            TensorData::I32(v) => Host::I32(try_collect(v.len(), v.iter().copied()).map_err(host)?),
            TensorData::Bool(v) => Host::U8(try_collect(v.len(), v.iter().map(|b| *b as u8)).map_err(host)?),
        })
    }

    /// `n` values that no kernel computes by chance.
    fn poison(kind: ScalarKind, n: usize) -> Result<Host, MeasureError> {
        let host = MeasureError::HostMemory;
        Ok(match kind {
            ScalarKind::F32 => Host::F32(try_filled(f32::NAN, n).map_err(host)?),
            ScalarKind::I32 => Host::I32(try_filled(i32::MIN + 7, n).map_err(host)?),
            ScalarKind::Bool => Host::U8(try_filled(0xAB, n).map_err(host)?),
        })
    }

    /// The data as a tensor of this shape.
    pub(crate) fn into_tensor(self, shape: Vec<usize>) -> Tensor {
        match self {
            Host::F32(v) => Tensor::f32(shape, v),
            Host::I32(v) => Tensor::i32(shape, v),
            Host::U8(v) => Tensor::bool(shape, v.into_iter().map(|x| x != 0).collect()),
        }
    }
}

/// One kernel argument.
pub(crate) enum Arg {
    /// A buffer, with its initial contents.
    Buffer(Host),
    /// A scalar passed by value (one element).
    Value(Host),
}

/// The arguments of one launch, in kernel order, and which one is the output.
pub(crate) struct Bound {
    pub(crate) args: Vec<Arg>,
    pub(crate) out_arg: usize,
}

/// Binds `inputs` (in program-parameter order) to the kernel arguments `m` describes.
pub(crate) fn bind(m: &Manifest, inputs: &[Tensor]) -> Result<Bound, MeasureError> {
    let mut by_arg: Vec<_> = m.buffers.iter().filter(|b| b.arg.is_some()).collect();
    by_arg.sort_by_key(|b| b.arg);
    let mut args = Vec::with_capacity(by_arg.len());
    let mut out_arg = None;
    for b in by_arg {
        let arg = match (b.role, b.param) {
            (Role::Input, Some(i)) => {
                let t = inputs.get(i).ok_or_else(|| {
                    MeasureError::Input(format!("{} inputs, the kernel reads parameter {i}", inputs.len()))
                })?;
                if t.data.len() as i64 != b.len {
                    return Err(MeasureError::Input(format!(
                        "input {i} (`{}`) has {} elements, the kernel expects {}",
                        b.name,
                        t.data.len(),
                        b.len
                    )));
                }
                if b.by_value {
                    Arg::Value(Host::of(t)?)
                } else {
                    Arg::Buffer(Host::of(t)?)
                }
            }
            (Role::Output, _) => {
                out_arg = Some(args.len());
                Arg::Buffer(Host::poison(b.elem, b.len as usize)?)
            }
            _ => Arg::Buffer(Host::poison(b.elem, b.len.max(1) as usize)?),
        };
        args.push(arg);
    }
    let out_arg = out_arg.ok_or_else(|| MeasureError::Input("the kernel has no output buffer".into()))?;
    Ok(Bound { args, out_arg })
}

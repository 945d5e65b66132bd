//! Reading and writing tensors as `.npy` files.

use super::value::MAX_ELEMS;
use super::{EvalError, Tensor, TensorData};
use npyz::{DType, NpyFile, Order, TypeChar, WriterBuilder};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

fn npy_err(path: &Path, message: impl Into<String>) -> EvalError {
    EvalError::Npy { path: path.display().to_string(), message: message.into() }
}

/// Reads a C-order `.npy` file of `f32` (`<f4`), `i32` (`<i4`) or `bool` (`|b1`) values, of any
/// rank (0-d included). Other dtypes and Fortran-order arrays are refused.
pub fn read_npy(path: &Path) -> Result<Tensor, EvalError> {
    let file = File::open(path).map_err(|e| npy_err(path, format!("cannot open: {e}")))?;
    let npy = NpyFile::new(BufReader::new(file)).map_err(|e| npy_err(path, format!("not a valid .npy file: {e}")))?;
    if npy.order() == Order::Fortran {
        return Err(npy_err(
            path,
            "Fortran-order (column-major) arrays are not supported; save a C-order array (numpy.ascontiguousarray)",
        ));
    }
    let shape = npy
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| npy_err(path, "dimension too large"))?;
    let numel = super::value::checked_numel(shape.iter().copied()).filter(|&n| n <= MAX_ELEMS);
    let Some(numel) = numel else {
        return Err(npy_err(path, format!("array of shape {shape:?} is too large")));
    };
    let dtype = npy.dtype();
    let unsupported =
        |what: String| npy_err(path, format!("unsupported dtype {what}: expected f32 ('<f4') or i32 ('<i4')"));
    let read = |e: std::io::Error| npy_err(path, format!("cannot read the data: {e}"));
    let data = match &dtype {
        DType::Plain(ts) => match (ts.type_char(), ts.size_field()) {
            (TypeChar::Float, 4) => TensorData::F32(values(npy, numel, read)?),
            (TypeChar::Int, 4) => TensorData::I32(values(npy, numel, read)?),
            (TypeChar::Bool, 1) => TensorData::Bool(values(npy, numel, read)?),
            _ => return Err(unsupported(format!("'{ts}'"))),
        },
        other => return Err(unsupported(other.descr())),
    };
    if data.len() != numel {
        return Err(npy_err(path, format!("the file holds {} values for shape {shape:?}", data.len())));
    }
    Ok(Tensor { shape, data })
}

/// The `n` values the file's header announces: their memory taken at once (an error when it
/// cannot be had; `into_vec` grew its vector and aborted the process when that failed), and at
/// most `n` of them read.
fn values<T: npyz::Deserialize, R: std::io::Read>(
    npy: NpyFile<R>,
    n: usize,
    read: impl Fn(std::io::Error) -> EvalError,
) -> Result<Vec<T>, EvalError> {
    let mut out = super::try_collect(n, std::iter::empty())?;
    let data = npy.data::<T>().map_err(|e| read(std::io::Error::other(e.to_string())))?;
    for x in data.take(n) {
        out.push(x.map_err(&read)?);
    }
    Ok(out)
}

/// Writes a tensor as a C-order `.npy` file: `<f4`, `<i4` or `|b1`.
pub fn write_npy(path: &Path, t: &Tensor) -> Result<(), EvalError> {
    let numel = super::value::checked_numel(t.shape.iter().copied());
    if numel != Some(t.data.len()) {
        return Err(npy_err(path, format!("the tensor holds {} values but its shape is {:?}", t.data.len(), t.shape)));
    }
    crate::files::check_writable(path).map_err(|e| npy_err(path, format!("cannot create: {e}")))?;
    let file = File::create(path).map_err(|e| npy_err(path, format!("cannot create: {e}")))?;
    let mut out = BufWriter::new(file);
    let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    let io = |e: std::io::Error| npy_err(path, format!("cannot write: {e}"));
    match &t.data {
        TensorData::F32(v) => {
            let mut w =
                npyz::WriteOptions::new().default_dtype().shape(&shape).writer(&mut out).begin_nd().map_err(io)?;
            w.extend(v.iter().copied()).map_err(io)?;
            w.finish().map_err(io)?;
        }
        TensorData::I32(v) => {
            let mut w =
                npyz::WriteOptions::new().default_dtype().shape(&shape).writer(&mut out).begin_nd().map_err(io)?;
            w.extend(v.iter().copied()).map_err(io)?;
            w.finish().map_err(io)?;
        }
        TensorData::Bool(v) => {
            let mut w =
                npyz::WriteOptions::new().default_dtype().shape(&shape).writer(&mut out).begin_nd().map_err(io)?;
            w.extend(v.iter().copied()).map_err(io)?;
            w.finish().map_err(io)?;
        }
    }
    out.flush().map_err(io)
}

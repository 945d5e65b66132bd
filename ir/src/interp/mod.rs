//! The reference interpreter: the oracle every later stage is tested against.
//!
//! [`eval`] runs a program on concrete inputs ([`Tensor`]s, row-major) for concrete values of
//! its size variables. Scalars follow C/OpenCL semantics: `f32` arithmetic is done in single
//! precision, `i32` addition, subtraction and multiplication wrap, `i32` division and remainder
//! truncate toward zero (division by zero is an error), `f32 % f32` is `fmod`, and conversions
//! to `i32` truncate toward zero. Every map kind (`map`, `mapGlb`, `mapSeq`, ...) means the
//! same, `toGlobal`/`toLocal`/`toPrivate` are the identity, and `reduce` is a left fold in
//! index order.
//!
//! Evaluation never panics on a program or its inputs: ill-typed programs give an
//! [`EvalError`] (with the span of the offending node for runtime errors).
//!
//! Design, for speed on big kernels: arrays are strided views over shared flat buffers, stored
//! as a struct of arrays, so `zip`, `split`, `slide`, `transpose`, `at` and most `join`s copy
//! nothing; `map` materializes its results into fresh buffers; a `map` or `reduce` whose
//! function only computes with scalars runs over whole columns without the general evaluator;
//! and a costly outer `map` is spread over the machine's cores (set `MAPSAT_INTERP_THREADS` to
//! limit them).

mod eval;
mod kernel;
mod lift;
mod memory;
mod npy;
mod scalar;
mod value;

#[cfg(test)]
mod tests;

pub use memory::{try_collect, try_filled};
pub use npy::{read_npy, write_npy};

use crate::ast::{Param, Program, Span};
use crate::types::{ScalarKind, Type};
use crate::Sizes;
use rand::{Rng, SeedableRng};
use std::fmt;
use value::{checked_numel, Array, Buffer, Scalar, Tree, Value, View, MAX_ELEMS};

/// An error of evaluation (or of reading and writing tensors).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A size variable of the program was given no value.
    #[error("no value given for size variable `{0}`")]
    MissingSize(String),
    /// A size variable was given a value below 1.
    #[error("size variable `{name}` must be positive, got {value}")]
    NonPositiveSize {
        /// The variable.
        name: String,
        /// Its value.
        value: i64,
    },
    /// The number of inputs differs from the number of parameters.
    #[error("the program takes {expected} input{}, got {got}", if *expected == 1 { "" } else { "s" })]
    InputCount {
        /// Number of parameters.
        expected: usize,
        /// Number of inputs given.
        got: usize,
    },
    /// An input's shape or element type differs from its parameter's type.
    #[error("parameter `{name}` expects shape {expected:?} ({expected_kind}), got {got:?} ({got_kind})")]
    InputShape {
        /// The parameter.
        name: String,
        /// Its shape, sizes substituted.
        expected: Vec<usize>,
        /// Its element type.
        expected_kind: String,
        /// The input's shape.
        got: Vec<usize>,
        /// The input's element type.
        got_kind: String,
    },
    /// A parameter or input that cannot be used (a tuple-typed parameter, a tensor whose data
    /// does not match its shape, ...).
    #[error("parameter `{name}`: {message}")]
    BadInput {
        /// The parameter.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A type that is not an array of scalars, or whose sizes cannot be evaluated.
    #[error("{0}")]
    Shape(String),
    /// An error while evaluating a node.
    #[error("{message}")]
    Runtime {
        /// What went wrong.
        message: String,
        /// The node's source span.
        span: Span,
    },
    /// The program's result holds tuples.
    #[error("cannot store tuples in a tensor: the program's result holds tuples")]
    TupleOutput,
    /// The program's result is a function.
    #[error("the program's result is a function, not data")]
    FunctionOutput,
    /// An `.npy` file could not be read or written.
    #[error("{path}: {message}")]
    Npy {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The inputs and the result need more host memory than the interpreter may use (a device
    /// run holds them in host memory too, and is refused with this error).
    #[error(
        "the inputs and the result need {need} bytes of host memory, more than the {budget} bytes mapsat may use \
         for them (half the available memory, or MAPSAT_INTERP_MEMORY)"
    )]
    OutOfMemory {
        /// Bytes of the inputs and the result.
        need: u64,
        /// Bytes the interpreter may use.
        budget: u64,
    },
    /// An allocation failed (beyond an address-space limit, `ulimit -v`, which the budget
    /// does not see): an error, where a plain allocation aborts the process.
    #[error("cannot allocate {0} bytes of host memory")]
    Alloc(u64),
    /// `MAPSAT_INTERP_MEMORY` is not a number of bytes.
    #[error("MAPSAT_INTERP_MEMORY must be a positive number of bytes, got `{0}`")]
    BadBudget(String),
    /// A bug of the interpreter.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EvalError {
    /// The source span the error points at, for runtime errors.
    pub fn span(&self) -> Option<Span> {
        match self {
            EvalError::Runtime { span, .. } => Some(*span),
            _ => None,
        }
    }
}

/// The scalars of a tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// 32-bit integers.
    I32(Vec<i32>),
    /// Booleans.
    Bool(Vec<bool>),
}

impl TensorData {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// True when there are no scalars.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn kind(&self) -> ScalarKind {
        match self {
            TensorData::F32(_) => ScalarKind::F32,
            TensorData::I32(_) => ScalarKind::I32,
            TensorData::Bool(_) => ScalarKind::Bool,
        }
    }

    fn get(&self, i: usize) -> Option<f64> {
        Some(match self {
            TensorData::F32(v) => f64::from(*v.get(i)?),
            TensorData::I32(v) => f64::from(*v.get(i)?),
            TensorData::Bool(v) => f64::from(u8::from(*v.get(i)?)),
        })
    }
}

/// A dense array of scalars, row-major (outermost dimension first). A scalar has shape `[]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Length of each dimension, outermost first.
    pub shape: Vec<usize>,
    /// The scalars; as many as the product of `shape`.
    pub data: TensorData,
}

impl Tensor {
    /// A tensor, checking that the data fits the shape.
    pub fn new(shape: Vec<usize>, data: TensorData) -> Result<Tensor, EvalError> {
        if checked_numel(shape.iter().copied()) != Some(data.len()) {
            return Err(EvalError::Shape(format!("{} values do not fill shape {shape:?}", data.len())));
        }
        Ok(Tensor { shape, data })
    }

    /// An `f32` tensor (the data's length is not checked here).
    pub fn f32(shape: Vec<usize>, data: Vec<f32>) -> Tensor {
        Tensor { shape, data: TensorData::F32(data) }
    }

    /// An `i32` tensor (the data's length is not checked here).
    pub fn i32(shape: Vec<usize>, data: Vec<i32>) -> Tensor {
        Tensor { shape, data: TensorData::I32(data) }
    }

    /// A `bool` tensor (the data's length is not checked here).
    pub fn bool(shape: Vec<usize>, data: Vec<bool>) -> Tensor {
        Tensor { shape, data: TensorData::Bool(data) }
    }

    /// The element type.
    pub fn kind(&self) -> ScalarKind {
        self.data.kind()
    }

    /// The scalars if they are `f32`.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match &self.data {
            TensorData::F32(v) => Some(v),
            _ => None,
        }
    }

    /// The scalars if they are `i32`.
    pub fn as_i32(&self) -> Option<&[i32]> {
        match &self.data {
            TensorData::I32(v) => Some(v),
            _ => None,
        }
    }

    /// The scalars if they are `bool`.
    pub fn as_bool(&self) -> Option<&[bool]> {
        match &self.data {
            TensorData::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// Compares with an expected tensor (`want`) element by element, as `numpy.isclose` does:
    /// `|a - b| <= atol + rtol * |b|`, bools counting as 0 and 1. The tolerances apply to `f32`
    /// only: `i32` and `bool` results must be equal (a kernel off by 7 in an `i32` is wrong,
    /// whatever the tolerance of floating-point sums). Two NaNs, or two equal infinities, are
    /// equal; a NaN against a number, or an infinity against anything else, differs by infinity,
    /// a mismatch whatever the tolerance. Tensors of different shapes or element
    /// types differ everywhere. A tolerance that is NaN, infinite or negative counts as 0.
    pub fn compare(&self, want: &Tensor, rtol: f64, atol: f64) -> Comparison {
        if self.shape != want.shape || self.kind() != want.kind() || self.data.len() != want.data.len() {
            let n = self.data.len().max(want.data.len());
            return Comparison { ok: false, max_abs_diff: f64::INFINITY, mismatches: n, first_mismatch: None };
        }
        // A tolerance that is no finite non-negative number (NaN would pass anything) is 0.
        let valid = |t: f64| if t.is_finite() && t >= 0.0 { t } else { 0.0 };
        let (rtol, atol) = match want.kind() {
            ScalarKind::F32 => (valid(rtol), valid(atol)),
            ScalarKind::I32 | ScalarKind::Bool => (0.0, 0.0),
        };
        let mut c = Comparison { ok: true, max_abs_diff: 0.0, mismatches: 0, first_mismatch: None };
        for i in 0..self.data.len() {
            let (Some(a), Some(b)) = (self.data.get(i), want.data.get(i)) else { continue };
            let d = if a == b || (a.is_nan() && b.is_nan()) {
                0.0
            } else if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
                f64::INFINITY
            } else {
                (a - b).abs()
            };
            c.max_abs_diff = c.max_abs_diff.max(d);
            // An infinite difference is a mismatch whatever the tolerance: relative to an
            // expected infinity, `rtol * |b|` would accept any value.
            if d.is_infinite() || d > atol + rtol * b.abs() {
                c.mismatches += 1;
                c.first_mismatch.get_or_insert((i, a, b));
            }
        }
        c.ok = c.mismatches == 0;
        c
    }

    /// Largest absolute difference between corresponding scalars (see [`Tensor::compare`]), or
    /// `None` when the shapes or element types differ.
    pub fn max_abs_diff(&self, other: &Tensor) -> Option<f64> {
        let same = self.shape == other.shape && self.kind() == other.kind() && self.data.len() == other.data.len();
        same.then(|| self.compare(other, 0.0, f64::INFINITY).max_abs_diff)
    }

    /// True when the shapes and element types agree and every pair of scalars satisfies
    /// `|a - b| <= atol + rtol * |b|` (like `numpy.allclose`; NaNs are equal to NaNs here).
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64) -> bool {
        self.compare(other, rtol, atol).ok
    }
}

/// The result of [`Tensor::compare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Within tolerance everywhere (and the same shape and element type).
    pub ok: bool,
    /// Largest absolute difference (NaN against a number counts as infinite).
    pub max_abs_diff: f64,
    /// Number of elements out of tolerance.
    pub mismatches: usize,
    /// First element out of tolerance: index, value, expected value.
    pub first_mismatch: Option<(usize, f64, f64)>,
}

impl fmt::Display for Tensor {
    /// A short description: element type and shape.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tensor of shape {:?}", self.kind().name(), self.shape)
    }
}

/// Checks that every node refers to nodes of the arena.
fn check_arena(p: &Program) -> Result<(), EvalError> {
    let n = p.nodes.len();
    let bad = p.root.index() >= n || p.nodes.iter().any(|node| node.children().iter().any(|c| c.index() >= n));
    if bad {
        return Err(EvalError::Internal("malformed program: a node refers to a node that does not exist".into()));
    }
    Ok(())
}

/// Checks that every size variable of `p` has a positive value.
fn check_sizes(p: &Program, sizes: &Sizes) -> Result<(), EvalError> {
    for s in &p.sizes {
        match sizes.get(&s.name) {
            None => return Err(EvalError::MissingSize(s.name.clone())),
            Some(v) if v <= 0 => return Err(EvalError::NonPositiveSize { name: s.name.clone(), value: v }),
            Some(_) => {}
        }
    }
    Ok(())
}

/// The element type and shape (outermost first) of an array-of-scalars type, for concrete
/// sizes. A scalar type has shape `[]`; a vector element (`f32x4`) adds an innermost dimension
/// of its width. Tuples and functions are refused.
pub fn concrete_shape(ty: &Type, sizes: &Sizes) -> Result<(ScalarKind, Vec<usize>), EvalError> {
    let (dims, elem) = ty.dims();
    let mut shape = Vec::with_capacity(dims.len() + 1);
    for d in dims {
        let v = match d.eval(sizes) {
            Some(v) => v,
            None => {
                return Err(match d.vars().into_iter().find(|v| !sizes.contains(v)) {
                    Some(v) => EvalError::MissingSize(v),
                    None => EvalError::Shape(format!("cannot evaluate the size `{d}` (division by zero or overflow)")),
                })
            }
        };
        let v = usize::try_from(v)
            .map_err(|_| EvalError::Shape(format!("the size `{d}` of type `{ty}` is negative ({v})")))?;
        shape.push(v);
    }
    let kind = match elem {
        Type::Scalar(k) => *k,
        Type::Vector(k, w) => {
            shape.push(*w as usize);
            *k
        }
        _ => return Err(EvalError::Shape(format!("type `{ty}` is not an array of scalars"))),
    };
    match checked_numel(shape.iter().copied()) {
        Some(n) if n <= MAX_ELEMS => Ok((kind, shape)),
        _ => Err(EvalError::Shape(format!(
            "type `{ty}` has shape {shape:?}, too large for the interpreter (limit {MAX_ELEMS} scalars)"
        ))),
    }
}

/// Checks `inputs` against the parameters of `p` at `sizes` (their number, each one's scalar
/// kind, shape and number of values), as [`eval`] does before it evaluates: for a caller that
/// hands them to a device.
pub fn check_inputs(p: &Program, sizes: &Sizes, inputs: &[Tensor]) -> Result<(), EvalError> {
    let p = &*crate::widths::specialize(p, sizes).map_err(EvalError::Shape)?;
    if inputs.len() != p.params.len() {
        return Err(EvalError::InputCount { expected: p.params.len(), got: inputs.len() });
    }
    p.params.iter().zip(inputs).try_for_each(|(q, t)| checked_input(q, t, sizes).map(|_| ()))
}

/// The shape of parameter `p` at `sizes`, which the input `t` has, with its scalar kind and
/// number of values (an error naming the parameter otherwise).
fn checked_input(p: &Param, t: &Tensor, sizes: &Sizes) -> Result<Vec<usize>, EvalError> {
    let bad = |message: String| EvalError::BadInput { name: p.name.clone(), message };
    let (kind, shape) = concrete_shape(&p.ty, sizes).map_err(|e| match e {
        EvalError::Shape(m) => bad(m),
        e => e,
    })?;
    if shape != t.shape || kind != t.kind() {
        return Err(EvalError::InputShape {
            name: p.name.clone(),
            expected: shape,
            expected_kind: kind.name().to_string(),
            got: t.shape.clone(),
            got_kind: t.kind().name().to_string(),
        });
    }
    if checked_numel(shape.iter().copied()) != Some(t.data.len()) {
        return Err(bad(format!("the tensor holds {} values but its shape is {:?}", t.data.len(), t.shape)));
    }
    Ok(shape)
}

/// The value of a parameter, checking the input against the parameter's type.
fn input_value(p: &Param, t: &Tensor, sizes: &Sizes) -> Result<Value, EvalError> {
    let shape = checked_input(p, t, sizes)?;
    // A copy that fails with an error, where `clone` aborts when the memory is not there.
    let buf = match &t.data {
        TensorData::F32(v) => Buffer::F32(try_collect(v.len(), v.iter().copied())?),
        TensorData::I32(v) => Buffer::I32(try_collect(v.len(), v.iter().copied())?),
        TensorData::Bool(v) => Buffer::Bool(try_collect(v.len(), v.iter().copied())?),
    };
    let vec = matches!(p.ty.dims().1, Type::Vector(..));
    let array_dims = shape.len() - usize::from(vec);
    let tree = Tree::Leaf(View::contiguous(buf, &shape, vec));
    Ok(if array_dims == 0 {
        tree.into_value()
    } else {
        Value::Array(std::sync::Arc::new(Array { dims: shape[..array_dims].to_vec(), tree }))
    })
}

/// The tensor holding a result value.
fn output_tensor(v: &Value) -> Result<Tensor, EvalError> {
    let scalars = |s: &[Scalar]| -> Result<TensorData, EvalError> {
        let mut b = Buffer::with_capacity(s.first().map_or(ScalarKind::F32, |s| s.kind()), s.len());
        for x in s {
            b.push(*x).map_err(EvalError::Internal)?;
        }
        Ok(buffer_data(b))
    };
    match v {
        Value::Scalar(s) => Ok(Tensor { shape: vec![], data: scalars(&[*s])? }),
        Value::Vector(l) => Ok(Tensor { shape: vec![l.len()], data: scalars(l)? }),
        Value::Tuple(_) => Err(EvalError::TupleOutput),
        Value::Func(_) => Err(EvalError::FunctionOutput),
        Value::Array(a) => match &a.tree {
            Tree::Leaf(view) => {
                let n = view.numel();
                if n > MAX_ELEMS {
                    return Err(EvalError::Shape(value::too_large(n)));
                }
                let mut b = Buffer::try_with_capacity(view.kind(), n).map_err(EvalError::Shape)?;
                view.append_to(&mut b).map_err(EvalError::Internal)?;
                Ok(Tensor { shape: view.lens(), data: buffer_data(b) })
            }
            // An empty array whose elements were never computed.
            Tree::Tuple(ts) if ts.is_empty() && a.dims.contains(&0) => {
                Ok(Tensor { shape: a.dims.clone(), data: TensorData::F32(Vec::new()) })
            }
            _ => Err(EvalError::TupleOutput),
        },
    }
}

fn buffer_data(b: Buffer) -> TensorData {
    match b {
        Buffer::F32(v) => TensorData::F32(v),
        Buffer::I32(v) => TensorData::I32(v),
        Buffer::Bool(v) => TensorData::Bool(v),
    }
}

fn thread_count() -> usize {
    if let Some(n) = std::env::var("MAPSAT_INTERP_THREADS").ok().and_then(|s| s.trim().parse::<usize>().ok()) {
        return n.clamp(1, 64);
    }
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(16)
}

/// Evaluates `p` on `inputs` (one per parameter, in order) with the given values of its size
/// variables (every size variable needs one: merge the defaults first, see
/// [`Program::default_sizes`]).
///
/// The result is a scalar (shape `[]`) or an array of scalars (nested arrays flatten row-major
/// into the shape); arrays of vectors get an innermost dimension of the vector width. A result
/// holding tuples is an error.
pub fn eval(p: &Program, sizes: &Sizes, inputs: &[Tensor]) -> Result<Tensor, EvalError> {
    check_sizes(p, sizes)?;
    let p = &*crate::widths::specialize(p, sizes).map_err(EvalError::Shape)?;
    check_arena(p)?;
    // The inputs exist already; the result's buffers are allocated fallibly (an error, not an
    // abort, when the memory cannot be had).
    memory::check(p, sizes, false)?;
    if inputs.len() != p.params.len() {
        return Err(EvalError::InputCount { expected: p.params.len(), got: inputs.len() });
    }
    let params =
        p.params.iter().zip(inputs).map(|(par, t)| input_value(par, t, sizes)).collect::<Result<Vec<_>, _>>()?;
    let threads = thread_count();
    let run = || -> Result<Tensor, EvalError> {
        let mut it = eval::Interp::new(p, sizes, &params, threads);
        let mut env = Vec::new();
        let v = it.eval(p.root, &mut env)?;
        output_tensor(&v)
    };
    let run = &run;
    // Deeply nested programs need a deep stack: evaluate on a thread that has one.
    std::thread::scope(|s| {
        match std::thread::Builder::new().name("mapsat-interp".into()).stack_size(eval::STACK_SIZE).spawn_scoped(s, run)
        {
            Ok(h) => h.join().unwrap_or_else(|_| Err(EvalError::Internal("the interpreter thread panicked".into()))),
            Err(_) => run(),
        }
    })
}

/// Random inputs for every parameter of `p`, reproducible from `seed`: `f32` uniform in
/// `[-1, 1)`, `i32` uniform in `[-10, 10]`, `bool` fair coin flips.
pub fn random_inputs(p: &Program, sizes: &Sizes, seed: u64) -> Result<Vec<Tensor>, EvalError> {
    check_sizes(p, sizes)?;
    memory::check(p, sizes, true)?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(p.params.len());
    for par in &p.params {
        let (kind, shape) = concrete_shape(&par.ty, sizes).map_err(|e| match e {
            EvalError::Shape(message) => EvalError::BadInput { name: par.name.clone(), message },
            e => e,
        })?;
        let n: usize = shape.iter().product();
        let data = match kind {
            ScalarKind::F32 => TensorData::F32(try_collect(n, (0..n).map(|_| rng.gen_range(-1.0f32..1.0)))?),
            ScalarKind::I32 => TensorData::I32(try_collect(n, (0..n).map(|_| rng.gen_range(-10i32..=10)))?),
            ScalarKind::Bool => TensorData::Bool(try_collect(n, (0..n).map(|_| rng.gen::<bool>()))?),
        };
        out.push(Tensor { shape, data });
    }
    Ok(out)
}

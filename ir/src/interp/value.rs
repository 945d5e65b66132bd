//! Runtime values of the interpreter.
//!
//! Arrays are stored as a *struct of arrays*: an [`Array`] is a tree ([`Tree`]) whose leaves are
//! strided views ([`View`]) over shared flat buffers of scalars. Every leaf starts with the
//! array's own dimensions; a zip is a tuple of the zipped arrays' trees, so zipping, splitting,
//! sliding, transposing and indexing never copy data. Joining copies only when the joined
//! dimensions of a leaf are not adjacent in memory, and `pad` materializes.

use crate::ast::{Lit, NodeId};
use crate::types::ScalarKind;
use std::sync::Arc;

/// Largest number of scalars the interpreter will allocate in one array.
pub(crate) const MAX_ELEMS: usize = 1 << 31;

/// A scalar value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    F32(f32),
    I32(i32),
    Bool(bool),
}

impl Scalar {
    pub(crate) fn kind(self) -> ScalarKind {
        match self {
            Scalar::F32(_) => ScalarKind::F32,
            Scalar::I32(_) => ScalarKind::I32,
            Scalar::Bool(_) => ScalarKind::Bool,
        }
    }

    pub(crate) fn from_lit(l: Lit) -> Scalar {
        match l {
            Lit::F32(b) => Scalar::F32(f32::from_bits(b)),
            Lit::I32(i) => Scalar::I32(i),
            Lit::Bool(b) => Scalar::Bool(b),
        }
    }
}

/// A flat buffer of scalars of one kind.
#[derive(Clone, Debug)]
pub(crate) enum Buffer {
    F32(Vec<f32>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
}

impl Buffer {
    pub(crate) fn with_capacity(kind: ScalarKind, n: usize) -> Buffer {
        match kind {
            ScalarKind::F32 => Buffer::F32(Vec::with_capacity(n)),
            ScalarKind::I32 => Buffer::I32(Vec::with_capacity(n)),
            ScalarKind::Bool => Buffer::Bool(Vec::with_capacity(n)),
        }
    }

    /// An empty buffer with room for `n` scalars, or an error (not an abort) when the memory
    /// cannot be had.
    pub(crate) fn try_with_capacity(kind: ScalarKind, n: usize) -> Result<Buffer, String> {
        super::memory::check_intermediate(n.saturating_mul(kind.bytes() as usize))?;
        fn reserve<T>(n: usize) -> Result<Vec<T>, String> {
            let mut v = Vec::new();
            v.try_reserve_exact(n).map_err(|_| format!("cannot allocate memory for an array of {n} scalars"))?;
            Ok(v)
        }
        Ok(match kind {
            ScalarKind::F32 => Buffer::F32(reserve(n)?),
            ScalarKind::I32 => Buffer::I32(reserve(n)?),
            ScalarKind::Bool => Buffer::Bool(reserve(n)?),
        })
    }

    pub(crate) fn kind(&self) -> ScalarKind {
        match self {
            Buffer::F32(_) => ScalarKind::F32,
            Buffer::I32(_) => ScalarKind::I32,
            Buffer::Bool(_) => ScalarKind::Bool,
        }
    }

    /// The scalar at `i` (which must be in bounds).
    pub(crate) fn get(&self, i: usize) -> Scalar {
        match self {
            Buffer::F32(v) => Scalar::F32(v[i]),
            Buffer::I32(v) => Scalar::I32(v[i]),
            Buffer::Bool(v) => Scalar::Bool(v[i]),
        }
    }

    pub(crate) fn push(&mut self, s: Scalar) -> Result<(), String> {
        match (self, s) {
            (Buffer::F32(v), Scalar::F32(x)) => v.push(x),
            (Buffer::I32(v), Scalar::I32(x)) => v.push(x),
            (Buffer::Bool(v), Scalar::Bool(x)) => v.push(x),
            (b, s) => {
                return Err(format!("array elements of different types: {} and {}", b.kind().name(), s.kind().name()))
            }
        }
        Ok(())
    }

    /// Appends `n` copies of `s`.
    pub(crate) fn fill(&mut self, s: Scalar, n: usize) -> Result<(), String> {
        match (self, s) {
            (Buffer::F32(v), Scalar::F32(x)) => v.resize(v.len() + n, x),
            (Buffer::I32(v), Scalar::I32(x)) => v.resize(v.len() + n, x),
            (Buffer::Bool(v), Scalar::Bool(x)) => v.resize(v.len() + n, x),
            (b, s) => {
                return Err(format!(
                    "cannot fill an array of {} with the {} value {}",
                    b.kind().name(),
                    s.kind().name(),
                    show(s)
                ))
            }
        }
        Ok(())
    }

    pub(crate) fn append(&mut self, other: Buffer) -> Result<(), String> {
        match (self, other) {
            (Buffer::F32(v), Buffer::F32(w)) => v.extend(w),
            (Buffer::I32(v), Buffer::I32(w)) => v.extend(w),
            (Buffer::Bool(v), Buffer::Bool(w)) => v.extend(w),
            (b, o) => {
                return Err(format!("array elements of different types: {} and {}", b.kind().name(), o.kind().name()))
            }
        }
        Ok(())
    }
}

/// A scalar as the text format writes it.
pub(crate) fn show(s: Scalar) -> String {
    match s {
        Scalar::F32(x) => format!("{x:?}"),
        Scalar::I32(x) => x.to_string(),
        Scalar::Bool(b) => b.to_string(),
    }
}

/// One dimension of a view: its length and the distance between consecutive elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dim {
    pub len: usize,
    pub stride: usize,
}

/// A strided view of a buffer. Every position the dimensions can address is in bounds.
#[derive(Clone, Debug)]
pub(crate) struct View {
    pub buf: Arc<Buffer>,
    pub off: usize,
    pub dims: Vec<Dim>,
    /// The last dimension holds the lanes of vectors rather than array elements.
    pub vec: bool,
}

/// Number of elements of a shape, if it does not overflow.
pub(crate) fn checked_numel(shape: impl IntoIterator<Item = usize>) -> Option<usize> {
    shape.into_iter().try_fold(1usize, |a, b| a.checked_mul(b))
}

/// Row-major dimensions of a contiguous shape.
pub(crate) fn contiguous_dims(shape: &[usize]) -> Vec<Dim> {
    let mut dims = vec![Dim { len: 0, stride: 1 }; shape.len()];
    let mut stride = 1usize;
    for (d, &len) in dims.iter_mut().zip(shape).rev() {
        *d = Dim { len, stride };
        stride = stride.saturating_mul(len.max(1));
    }
    dims
}

impl View {
    /// A view of a whole buffer, row-major with the given shape (whose product is its length).
    pub(crate) fn contiguous(buf: Buffer, shape: &[usize], vec: bool) -> View {
        View { buf: Arc::new(buf), off: 0, dims: contiguous_dims(shape), vec }
    }

    pub(crate) fn kind(&self) -> ScalarKind {
        self.buf.kind()
    }

    /// Number of array dimensions (lanes excluded).
    pub(crate) fn array_dims(&self) -> usize {
        self.dims.len() - usize::from(self.vec)
    }

    pub(crate) fn lens(&self) -> Vec<usize> {
        self.dims.iter().map(|d| d.len).collect()
    }

    /// Number of scalars (lanes included).
    pub(crate) fn numel(&self) -> usize {
        // Views only exist over allocated buffers, so this product is at most a buffer length
        // unless a dimension is empty.
        self.dims.iter().fold(1usize, |a, d| a.saturating_mul(d.len))
    }

    /// The sub-view at index `i` of the first dimension (`i` must be in bounds).
    pub(crate) fn index0(&self, i: usize) -> View {
        View {
            buf: self.buf.clone(),
            off: self.off + i * self.dims[0].stride,
            dims: self.dims[1..].to_vec(),
            vec: self.vec,
        }
    }

    /// The scalar of a view without dimensions.
    pub(crate) fn read(&self) -> Scalar {
        self.buf.get(self.off)
    }

    /// The dimensions with unit dimensions dropped and adjacent contiguous ones merged.
    fn simple_dims(&self) -> Vec<Dim> {
        let mut out: Vec<Dim> = Vec::with_capacity(self.dims.len());
        for &d in &self.dims {
            if d.len == 1 {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.stride == d.stride * d.len => {
                    *last = Dim { len: last.len * d.len, stride: d.stride }
                }
                _ => out.push(d),
            }
        }
        out
    }

    /// True when the elements are `buf[off .. off + numel]` in row-major order.
    pub(crate) fn is_contiguous(&self) -> bool {
        let s = self.simple_dims();
        s.is_empty() || (s.len() == 1 && s[0].stride == 1)
    }

    /// Appends the elements in row-major order.
    pub(crate) fn append_to(&self, out: &mut Buffer) -> Result<(), String> {
        if self.numel() == 0 {
            return Ok(());
        }
        let dims = self.simple_dims();
        match (&*self.buf, out) {
            (Buffer::F32(s), Buffer::F32(o)) => append_strided(s, self.off, &dims, o),
            (Buffer::I32(s), Buffer::I32(o)) => append_strided(s, self.off, &dims, o),
            (Buffer::Bool(s), Buffer::Bool(o)) => append_strided(s, self.off, &dims, o),
            (s, o) => {
                return Err(format!("array elements of different types: {} and {}", o.kind().name(), s.kind().name()))
            }
        }
        Ok(())
    }

    /// The same elements in a fresh contiguous buffer (or `self` when already contiguous).
    pub(crate) fn materialize(&self) -> Result<View, String> {
        if self.is_contiguous() {
            return Ok(View {
                buf: self.buf.clone(),
                off: self.off,
                dims: contiguous_dims(&self.lens()),
                vec: self.vec,
            });
        }
        let n = self.numel();
        if n > MAX_ELEMS {
            return Err(too_large(n));
        }
        let mut b = Buffer::try_with_capacity(self.kind(), n)?;
        self.append_to(&mut b)?;
        Ok(View::contiguous(b, &self.lens(), self.vec))
    }
}

pub(crate) fn too_large(n: usize) -> String {
    match n {
        usize::MAX => format!("array of more than 2^64 scalars is too large for the interpreter (limit {MAX_ELEMS})"),
        n => format!("array of {n} scalars is too large for the interpreter (limit {MAX_ELEMS})"),
    }
}

/// `n` scalars (`None`: more than a `usize` counts) when the interpreter holds that many.
fn within_limit(n: Option<usize>) -> Result<usize, String> {
    match n {
        Some(n) if n <= MAX_ELEMS => Ok(n),
        n => Err(too_large(n.unwrap_or(usize::MAX))),
    }
}

fn append_strided<T: Copy>(src: &[T], off: usize, dims: &[Dim], out: &mut Vec<T>) {
    match dims {
        [] => out.push(src[off]),
        [d] if d.stride == 1 => out.extend_from_slice(&src[off..off + d.len]),
        [d] => out.extend((0..d.len).map(|i| src[off + i * d.stride])),
        [d, rest @ ..] => {
            for i in 0..d.len {
                append_strided(src, off + i * d.stride, rest, out);
            }
        }
    }
}

/// The structure of an array's elements; all leaves start with the array's dimensions.
#[derive(Clone, Debug)]
pub(crate) enum Tree {
    /// Scalars (or vectors).
    Leaf(View),
    /// Tuples: one tree per component.
    Tuple(Vec<Tree>),
    /// A component that is itself an array, with its own dimensions (after the outer ones).
    Nested(Vec<usize>, Box<Tree>),
}

impl Tree {
    pub(crate) fn map_leaves(&self, f: &mut dyn FnMut(&View) -> Result<View, String>) -> Result<Tree, String> {
        Ok(match self {
            Tree::Leaf(v) => Tree::Leaf(f(v)?),
            Tree::Tuple(ts) => Tree::Tuple(ts.iter().map(|t| t.map_leaves(f)).collect::<Result<_, _>>()?),
            Tree::Nested(d, t) => Tree::Nested(d.clone(), Box::new(t.map_leaves(f)?)),
        })
    }

    /// Converts the tree of an element (no outer dimensions left) to a value.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Tree::Leaf(v) => {
                let ad = v.array_dims();
                if ad > 0 {
                    let dims = v.dims[..ad].iter().map(|d| d.len).collect();
                    Value::Array(Arc::new(Array { dims, tree: Tree::Leaf(v) }))
                } else if v.vec {
                    let w = v.dims[0];
                    Value::Vector((0..w.len).map(|i| v.buf.get(v.off + i * w.stride)).collect())
                } else {
                    Value::Scalar(v.read())
                }
            }
            Tree::Tuple(ts) => Value::Tuple(ts.into_iter().map(Tree::into_value).collect()),
            Tree::Nested(dims, t) => Value::Array(Arc::new(Array { dims, tree: *t })),
        }
    }
}

/// An array: its dimensions (at least one) and the storage of its scalars.
#[derive(Clone, Debug)]
pub(crate) struct Array {
    pub dims: Vec<usize>,
    pub tree: Tree,
}

/// How `pad` fills.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fill {
    Const(Scalar),
    Clamp,
}

/// Replaces dimensions `d .. d + k` of a view by `new`.
fn splice(v: &View, d: usize, k: usize, new: &[Dim]) -> View {
    let mut dims = Vec::with_capacity(v.dims.len() + new.len() - k);
    dims.extend_from_slice(&v.dims[..d]);
    dims.extend_from_slice(new);
    dims.extend_from_slice(&v.dims[d + k..]);
    View { buf: v.buf.clone(), off: v.off, dims, vec: v.vec }
}

/// Replaces array dimensions `d .. d + k` by `new`.
fn splice_dims(dims: &[usize], d: usize, k: usize, new: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(dims.len() + new.len() - k);
    out.extend_from_slice(&dims[..d]);
    out.extend_from_slice(new);
    out.extend_from_slice(&dims[d + k..]);
    out
}

/// Appends the elements of `v` padded along dimension `d` (the dimensions before `d` are
/// walked in order).
fn pad_leaf(v: &View, d: usize, l: usize, r: usize, fill: Fill, out: &mut Buffer) -> Result<(), String> {
    if d > 0 {
        for i in 0..v.dims[0].len {
            pad_leaf(&v.index0(i), d - 1, l, r, fill, out)?;
        }
        return Ok(());
    }
    let n = v.dims[0].len;
    let row = v.dims[1..].iter().map(|d| d.len).product();
    for i in 0..l + n + r {
        let j = i as i64 - l as i64;
        if (0..n as i64).contains(&j) {
            v.index0(j as usize).append_to(out)?;
        } else {
            match fill {
                Fill::Const(s) => out.fill(s, row)?,
                Fill::Clamp => v.index0(j.clamp(0, n as i64 - 1) as usize).append_to(out)?,
            }
        }
    }
    Ok(())
}

/// Structural operations act on the array dimension `d` (and `d + 1`): `d = 0` is the
/// primitive itself, `d > 0` the primitive mapped over the `d` outer dimensions.
impl Array {
    pub(crate) fn len(&self) -> usize {
        self.dims[0]
    }

    fn with(&self, dims: Vec<usize>, f: &mut dyn FnMut(&View) -> Result<View, String>) -> Result<Array, String> {
        Ok(Array { dims, tree: self.tree.map_leaves(f)? })
    }

    fn need_dims(&self, k: usize, what: &str) -> Result<(), String> {
        if self.dims.len() < k {
            return Err(if k >= 2 && self.dims.len() + 1 == k {
                format!("{what} expects an array of arrays, found an array of non-arrays")
            } else {
                format!("{what} expects an array, found a non-array")
            });
        }
        Ok(())
    }

    /// Element `i`.
    pub(crate) fn index(&self, i: usize) -> Result<Value, String> {
        let n = self.len();
        if i >= n {
            return Err(format!("index {i} is out of bounds for an array of length {n}"));
        }
        let tree = self.tree.map_leaves(&mut |v| Ok(v.index0(i)))?;
        Ok(if self.dims.len() > 1 {
            Value::Array(Arc::new(Array { dims: self.dims[1..].to_vec(), tree }))
        } else {
            tree.into_value()
        })
    }

    /// Element `i` along dimension `d > 0`.
    pub(crate) fn index_at(&self, d: usize, i: usize) -> Result<Array, String> {
        self.need_dims(d + 1, "at")?;
        let n = self.dims[d];
        if d == 0 || i >= n {
            return Err(format!("index {i} is out of bounds for an array of length {n}"));
        }
        let dims = splice_dims(&self.dims, d, 1, &[]);
        self.with(dims, &mut |v| {
            let mut w = splice(v, d, 1, &[]);
            w.off += i * v.dims[d].stride;
            Ok(w)
        })
    }

    pub(crate) fn split_at(&self, d: usize, m: i64) -> Result<Array, String> {
        self.need_dims(d + 1, "split")?;
        let n = self.dims[d];
        if m <= 0 {
            return Err(format!("split by {m}: the chunk size must be positive"));
        }
        let m = usize::try_from(m).map_err(|_| "split size too large".to_string())?;
        if n.checked_rem(m) != Some(0) {
            return Err(format!("split({m}) of an array of length {n}: {m} does not divide {n}"));
        }
        let dims = splice_dims(&self.dims, d, 1, &[n / m, m]);
        self.with(dims, &mut |v| {
            let s = v.dims[d].stride;
            Ok(splice(v, d, 1, &[Dim { len: n / m, stride: s * m }, Dim { len: m, stride: s }]))
        })
    }

    pub(crate) fn join_at(&self, d: usize) -> Result<Array, String> {
        self.need_dims(d + 2, "join")?;
        let len = self.dims[d].checked_mul(self.dims[d + 1]).ok_or_else(|| too_large(usize::MAX))?;
        let dims = splice_dims(&self.dims, d, 2, &[len]);
        self.with(dims, &mut |v| {
            let v = if mergeable(v.dims[d], v.dims[d + 1]).is_some() { v.clone() } else { v.materialize()? };
            let merged = mergeable(v.dims[d], v.dims[d + 1]).ok_or("internal error: join of a contiguous view")?;
            Ok(splice(&v, d, 2, &[merged]))
        })
    }

    pub(crate) fn transpose_at(&self, d: usize) -> Result<Array, String> {
        self.need_dims(d + 2, "transpose")?;
        let mut dims = self.dims.clone();
        dims.swap(d, d + 1);
        self.with(dims, &mut |v| {
            let mut v = v.clone();
            v.dims.swap(d, d + 1);
            Ok(v)
        })
    }

    pub(crate) fn slide_at(&self, d: usize, size: i64, step: i64) -> Result<Array, String> {
        self.need_dims(d + 1, "slide")?;
        if size <= 0 || step <= 0 {
            return Err(format!("slide({size}, {step}): window size and step must be positive"));
        }
        let n = self.dims[d];
        let (size, step) = (size as usize, step as usize);
        let count = if n < size { 0 } else { (n - size) / step + 1 };
        let dims = splice_dims(&self.dims, d, 1, &[count, size]);
        self.with(dims, &mut |v| {
            let s = v.dims[d].stride;
            Ok(splice(v, d, 1, &[Dim { len: count, stride: s.saturating_mul(step) }, Dim { len: size, stride: s }]))
        })
    }

    pub(crate) fn pad_at(&self, d: usize, l: i64, r: i64, fill: Fill) -> Result<Array, String> {
        self.need_dims(d + 1, "pad")?;
        if l < 0 || r < 0 {
            return Err(format!("pad({l}, {r}): padding amounts must not be negative"));
        }
        let n = self.dims[d];
        let (l, r) = (l as usize, r as usize);
        if matches!(fill, Fill::Clamp) && n == 0 && l + r > 0 {
            return Err("padClamp of an empty array".into());
        }
        let total = n.checked_add(l).and_then(|t| t.checked_add(r)).ok_or_else(|| too_large(usize::MAX))?;
        let dims = splice_dims(&self.dims, d, 1, &[total]);
        self.with(dims, &mut |v| {
            let mut shape = v.lens();
            shape[d] = total;
            let size = within_limit(checked_numel(shape.iter().copied()))?;
            let mut b = Buffer::try_with_capacity(v.kind(), size)?;
            pad_leaf(v, d, l, r, fill, &mut b)?;
            Ok(View::contiguous(b, &shape, v.vec))
        })
    }

    pub(crate) fn as_vector_at(&self, d: usize, w: u32) -> Result<Array, String> {
        let v = match &self.tree {
            Tree::Leaf(v) if self.dims.len() == d + 1 && !v.vec => v,
            _ => return Err("asVector expects an array of scalars".into()),
        };
        let (n, w) = (self.dims[d], w as usize);
        if n.checked_rem(w) != Some(0) {
            return Err(format!("asVector({w}) of an array of length {n}: {w} does not divide {n}"));
        }
        let s = v.dims[d].stride;
        let mut v = splice(v, d, 1, &[Dim { len: n / w, stride: s * w }, Dim { len: w, stride: s }]);
        v.vec = true;
        Ok(Array { dims: splice_dims(&self.dims, d, 1, &[n / w]), tree: Tree::Leaf(v) })
    }

    pub(crate) fn as_scalar_at(&self, d: usize) -> Result<Array, String> {
        let v = match &self.tree {
            Tree::Leaf(v) if self.dims.len() == d + 1 && v.vec => v,
            _ => return Err("asScalar expects an array of vectors".into()),
        };
        let v = if mergeable(v.dims[d], v.dims[d + 1]).is_some() { v.clone() } else { v.materialize()? };
        let merged = mergeable(v.dims[d], v.dims[d + 1]).ok_or("internal error: asScalar of a contiguous view")?;
        let mut v = splice(&v, d, 2, &[merged]);
        v.vec = false;
        Ok(Array { dims: splice_dims(&self.dims, d, 1, &[merged.len]), tree: Tree::Leaf(v) })
    }

    /// The component `i` of tuple elements at depth `d` (the array has exactly `d` dimensions).
    pub(crate) fn get_at(&self, d: usize, i: usize) -> Option<Array> {
        match &self.tree {
            Tree::Tuple(ts) if self.dims.len() == d => Some(match ts.get(i)? {
                Tree::Nested(inner, t) => {
                    let mut dims = self.dims.clone();
                    dims.extend_from_slice(inner);
                    Array { dims, tree: (**t).clone() }
                }
                t => Array { dims: self.dims.clone(), tree: t.clone() },
            }),
            _ => None,
        }
    }
}

/// Tuples of the elements at depth `d` of arrays that agree on their `d` outer dimensions:
/// `zip` is `tuple_at(1, ..)`.
pub(crate) fn tuple_at(d: usize, comps: &[&Array]) -> Result<Array, String> {
    let first = comps.first().ok_or("zip of no arrays")?;
    if first.dims.len() < d {
        return Err("zip expects arrays".into());
    }
    let dims = first.dims[..d].to_vec();
    let mut trees = Vec::with_capacity(comps.len());
    for c in comps {
        if c.dims.len() < d || c.dims[..d] != dims[..] {
            return Err(format!(
                "zip of arrays of different lengths {:?} and {:?}",
                &dims[..],
                &c.dims[..c.dims.len().min(d)]
            ));
        }
        trees.push(if c.dims.len() == d {
            c.tree.clone()
        } else {
            Tree::Nested(c.dims[d..].to_vec(), Box::new(c.tree.clone()))
        });
    }
    Ok(Array { dims, tree: Tree::Tuple(trees) })
}

/// The single dimension equivalent to `a` (outer) and `b` (inner), if there is one.
fn mergeable(a: Dim, b: Dim) -> Option<Dim> {
    let len = a.len * b.len;
    if len == 0 {
        Some(Dim { len, stride: 1 })
    } else if b.len == 1 {
        Some(Dim { len, stride: a.stride })
    } else if a.len == 1 || a.stride == b.stride * b.len {
        Some(Dim { len, stride: b.stride })
    } else {
        None
    }
}

/// A function value.
#[derive(Debug)]
pub(crate) enum Func {
    /// A lambda node with the environment it was created in.
    Closure { lam: NodeId, env: Vec<Value> },
    /// A primitive node applied to fewer arguments than its arity.
    Partial { prim: NodeId, args: Vec<Value> },
}

/// A value.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Scalar(Scalar),
    Vector(Arc<[Scalar]>),
    Tuple(Arc<[Value]>),
    Array(Arc<Array>),
    Func(Arc<Func>),
}

impl Value {
    /// True when tuples and closures nest more than `limit` levels deep in this value (arrays
    /// are not looked into: their structure is bounded by the program).
    pub(crate) fn nests_deeper_than(&self, limit: usize) -> bool {
        let Some(below) = limit.checked_sub(1) else { return true };
        match self {
            Value::Tuple(vs) => vs.iter().any(|v| v.nests_deeper_than(below)),
            Value::Func(f) => match &**f {
                Func::Closure { env, .. } => env.iter().any(|v| v.nests_deeper_than(below)),
                Func::Partial { args, .. } => args.iter().any(|v| v.nests_deeper_than(below)),
            },
            _ => false,
        }
    }

    /// "an f32", "a tuple", ... for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Value::Scalar(s) => match s.kind() {
                ScalarKind::F32 => "an f32".into(),
                ScalarKind::I32 => "an i32".into(),
                ScalarKind::Bool => "a bool".into(),
            },
            Value::Vector(l) => match l.first() {
                Some(s) => format!("a vector {}x{}", s.kind().name(), l.len()),
                None => "an empty vector".into(),
            },
            Value::Tuple(t) => format!("a {}-tuple", t.len()),
            Value::Array(a) => format!("an array of shape {:?}", a.dims),
            Value::Func(_) => "a function".into(),
        }
    }

    pub(crate) fn array(&self, what: &str) -> Result<&Arc<Array>, String> {
        match self {
            Value::Array(a) => Ok(a),
            v => Err(format!("{what} expects an array, found {}", v.describe())),
        }
    }
}

/// Builds the array `[r0, r1, ...]` from the results of a map, copying them into fresh buffers.
pub(crate) struct Collector {
    elem_dims: Option<Vec<usize>>,
    out: Out,
    count: usize,
}

enum Out {
    Leaf { buf: Buffer, dims: Vec<usize>, vec: bool },
    Tuple(Vec<Out>),
    Nested { dims: Vec<usize>, inner: Box<Out> },
}

const SHAPE_MISMATCH: &str = "the elements of an array have different types or shapes";

impl Collector {
    /// A collector for `n` elements shaped like `template`.
    pub(crate) fn new(template: &Value, n: usize) -> Result<Collector, String> {
        Ok(match template {
            Value::Array(a) => Collector { elem_dims: Some(a.dims.clone()), out: Out::of_tree(&a.tree, n)?, count: 0 },
            v => Collector { elem_dims: None, out: Out::of_value(v, n)?, count: 0 },
        })
    }

    pub(crate) fn push(&mut self, v: &Value) -> Result<(), String> {
        match (&self.elem_dims, v) {
            (Some(d), Value::Array(a)) if *d == a.dims => self.out.push_tree(&a.tree)?,
            (None, v) if !matches!(v, Value::Array(_)) => self.out.push_value(v)?,
            _ => return Err(SHAPE_MISMATCH.into()),
        }
        self.count += 1;
        Ok(())
    }

    pub(crate) fn append(&mut self, other: Collector) -> Result<(), String> {
        if self.elem_dims != other.elem_dims {
            return Err(SHAPE_MISMATCH.into());
        }
        self.out.append(other.out)?;
        self.count += other.count;
        Ok(())
    }

    pub(crate) fn finish(self) -> Value {
        let n = self.count;
        let mut dims = vec![n];
        dims.extend(self.elem_dims.unwrap_or_default());
        Value::Array(Arc::new(Array { dims, tree: self.out.finish(n) }))
    }
}

impl Out {
    fn leaf(kind: ScalarKind, dims: Vec<usize>, vec: bool, n: usize) -> Result<Out, String> {
        let size = checked_numel(dims.iter().copied().chain([n])).ok_or_else(|| too_large(usize::MAX))?;
        if size > MAX_ELEMS {
            return Err(too_large(size));
        }
        Ok(Out::Leaf { buf: Buffer::try_with_capacity(kind, size)?, dims, vec })
    }

    fn of_value(v: &Value, n: usize) -> Result<Out, String> {
        match v {
            Value::Scalar(s) => Out::leaf(s.kind(), vec![], false, n),
            Value::Vector(l) => match l.first() {
                Some(s) => Out::leaf(s.kind(), vec![l.len()], true, n),
                None => Err("empty vector".into()),
            },
            Value::Tuple(vs) => Ok(Out::Tuple(
                vs.iter()
                    .map(|c| match c {
                        Value::Array(a) => {
                            Ok(Out::Nested { dims: a.dims.clone(), inner: Box::new(Out::of_tree(&a.tree, n)?) })
                        }
                        c => Out::of_value(c, n),
                    })
                    .collect::<Result<_, String>>()?,
            )),
            Value::Array(a) => Out::of_tree(&a.tree, n),
            Value::Func(_) => Err("cannot make an array of functions".into()),
        }
    }

    fn of_tree(t: &Tree, n: usize) -> Result<Out, String> {
        match t {
            Tree::Leaf(v) => Out::leaf(v.kind(), v.lens(), v.vec, n),
            Tree::Tuple(ts) => Ok(Out::Tuple(ts.iter().map(|t| Out::of_tree(t, n)).collect::<Result<_, _>>()?)),
            Tree::Nested(d, t) => Ok(Out::Nested { dims: d.clone(), inner: Box::new(Out::of_tree(t, n)?) }),
        }
    }

    fn push_value(&mut self, v: &Value) -> Result<(), String> {
        match (self, v) {
            (Out::Leaf { buf, dims, vec: false }, Value::Scalar(s)) if dims.is_empty() => buf.push(*s),
            (Out::Leaf { buf, dims, vec: true }, Value::Vector(l)) if dims.len() == 1 && dims[0] == l.len() => {
                l.iter().try_for_each(|s| buf.push(*s))
            }
            (Out::Tuple(os), Value::Tuple(vs)) if os.len() == vs.len() => {
                os.iter_mut().zip(vs.iter()).try_for_each(|(o, c)| match (o, c) {
                    (Out::Nested { dims, inner }, Value::Array(a)) if *dims == a.dims => inner.push_tree(&a.tree),
                    (o, c) if !matches!(c, Value::Array(_)) => o.push_value(c),
                    _ => Err(SHAPE_MISMATCH.into()),
                })
            }
            _ => Err(SHAPE_MISMATCH.into()),
        }
    }

    fn push_tree(&mut self, t: &Tree) -> Result<(), String> {
        match (self, t) {
            (Out::Leaf { buf, dims, vec }, Tree::Leaf(v))
                if *vec == v.vec
                    && dims.len() == v.dims.len()
                    && dims.iter().zip(&v.dims).all(|(a, b)| *a == b.len) =>
            {
                v.append_to(buf)
            }
            (Out::Tuple(os), Tree::Tuple(ts)) if os.len() == ts.len() => {
                os.iter_mut().zip(ts).try_for_each(|(o, t)| o.push_tree(t))
            }
            (Out::Nested { dims, inner }, Tree::Nested(d, t)) if dims == d => inner.push_tree(t),
            _ => Err(SHAPE_MISMATCH.into()),
        }
    }

    fn append(&mut self, other: Out) -> Result<(), String> {
        match (self, other) {
            (Out::Leaf { buf, dims, vec }, Out::Leaf { buf: b, dims: d, vec: w }) if *dims == d && *vec == w => {
                buf.append(b)
            }
            (Out::Tuple(os), Out::Tuple(ps)) if os.len() == ps.len() => {
                os.iter_mut().zip(ps).try_for_each(|(o, p)| o.append(p))
            }
            (Out::Nested { dims, inner }, Out::Nested { dims: d, inner: i }) if *dims == d => inner.append(*i),
            _ => Err(SHAPE_MISMATCH.into()),
        }
    }

    fn finish(self, n: usize) -> Tree {
        match self {
            Out::Leaf { buf, dims, vec } => {
                let mut shape = vec![n];
                shape.extend(dims);
                Tree::Leaf(View::contiguous(buf, &shape, vec))
            }
            Out::Tuple(os) => Tree::Tuple(os.into_iter().map(|o| o.finish(n)).collect()),
            Out::Nested { dims, inner } => Tree::Nested(dims, Box::new(inner.finish(n))),
        }
    }
}

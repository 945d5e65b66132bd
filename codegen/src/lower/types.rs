//! Types at concrete sizes: array lengths, element kinds and function signatures as the
//! lowering needs them (every size a constant once the size variables are substituted).

use super::R;
use crate::error::CodegenErrorKind as K;
use mapsat_ir::{ScalarKind, Type};

/// The scalar kind and vector width of an element type.
pub(super) fn elem_of(t: &Type) -> R<(ScalarKind, u32)> {
    match t {
        Type::Scalar(k) => Ok((*k, 1)),
        Type::Vector(k, w) => Ok((*k, *w)),
        Type::Tuple(_) => Err(K::Unsupported(format!(
            "a value of tuple type {t} kept in a variable or buffer (a reduction's accumulator, a stored result): kernels keep scalars and vectors only"
        ))
        .into()),
        _ => Err(K::Internal(format!("not an element type: {t}")).into()),
    }
}

/// The value of a size that must be a constant.
pub(super) fn konst(s: &mapsat_ir::Size) -> R<i64> {
    s.as_const().ok_or_else(|| match s.vars().first() {
        Some(v) => K::MissingSize(v.clone()).into(),
        None => K::Internal(format!("size {s} is not a constant")).into(),
    })
}

/// Array lengths (outermost first) and the element of a type.
pub(super) fn dims_of(t: &Type) -> R<(Vec<i64>, Type)> {
    let (dims, elem) = t.dims();
    Ok((dims.into_iter().map(konst).collect::<R<_>>()?, elem.clone()))
}

/// The length and element type of an array type.
pub(super) fn array_len(t: &Type) -> R<(i64, Type)> {
    match t {
        Type::Array(e, n) => Ok((konst(n)?, (**e).clone())),
        _ => Err(K::Internal(format!("expected an array type, found {t}")).into()),
    }
}

/// Argument types and result of a function type.
pub(super) fn signature(t: &Type) -> (Vec<Type>, Type) {
    let mut args = Vec::new();
    let mut t = t;
    while let Type::Fun(a, r) = t {
        args.push((**a).clone());
        t = r;
    }
    (args, t.clone())
}

/// Row-major strides of an array of the given lengths, outermost first.
pub(super) fn strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * dims[k + 1];
    }
    s
}

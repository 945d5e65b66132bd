//! Scalar operators with C/OpenCL semantics, and their lane-wise extension to vectors.

use super::value::{Scalar, Value};
use crate::ast::{BinOp, UnOp};
use crate::types::ScalarKind;
use std::sync::Arc;

/// `a op b` on f32, for the operators whose result is an f32.
#[inline]
pub(crate) fn f32_arith(op: BinOp) -> Option<fn(f32, f32) -> f32> {
    Some(match op {
        BinOp::Add => |a, b| a + b,
        BinOp::Sub => |a, b| a - b,
        BinOp::Mul => |a, b| a * b,
        BinOp::Div => |a, b| a / b,
        // Rust's `%` on floats is C's `fmod`.
        BinOp::Mod => |a, b| a % b,
        BinOp::Min => f32::min,
        BinOp::Max => f32::max,
        _ => return None,
    })
}

/// `a op b` on i32 for the operators that cannot fail (wrapping, like the GPU).
#[inline]
pub(crate) fn i32_arith(op: BinOp) -> Option<fn(i32, i32) -> i32> {
    Some(match op {
        BinOp::Add => i32::wrapping_add,
        BinOp::Sub => i32::wrapping_sub,
        BinOp::Mul => i32::wrapping_mul,
        BinOp::Min => std::cmp::min,
        BinOp::Max => std::cmp::max,
        _ => return None,
    })
}

/// Comparison operators.
#[inline]
pub(crate) fn compare<T: PartialOrd>(op: BinOp) -> Option<fn(&T, &T) -> bool> {
    Some(match op {
        BinOp::Lt => T::lt,
        BinOp::Le => T::le,
        BinOp::Gt => T::gt,
        BinOp::Ge => T::ge,
        BinOp::Eq => T::eq,
        BinOp::Ne => T::ne,
        _ => return None,
    })
}

/// i32 division or remainder, truncating toward zero like C.
#[inline]
pub(crate) fn i32_div(op: BinOp, a: i32, b: i32) -> Result<i32, String> {
    if b == 0 {
        return Err(format!("integer {} by zero", if op == BinOp::Div { "division" } else { "remainder" }));
    }
    Ok(if op == BinOp::Div { a.wrapping_div(b) } else { a.wrapping_rem(b) })
}

/// `a op b` on scalars.
pub(crate) fn bin(op: BinOp, a: Scalar, b: Scalar) -> Result<Scalar, String> {
    use Scalar::*;
    Ok(match (a, b) {
        (F32(x), F32(y)) => {
            if let Some(f) = f32_arith(op) {
                F32(f(x, y))
            } else if let Some(f) = compare::<f32>(op) {
                Bool(f(&x, &y))
            } else {
                return Err(bad_bin(op, a, b));
            }
        }
        (I32(x), I32(y)) => {
            if let Some(f) = i32_arith(op) {
                I32(f(x, y))
            } else if let Some(f) = compare::<i32>(op) {
                Bool(f(&x, &y))
            } else if matches!(op, BinOp::Div | BinOp::Mod) {
                I32(i32_div(op, x, y)?)
            } else {
                return Err(bad_bin(op, a, b));
            }
        }
        (Bool(x), Bool(y)) => match op {
            BinOp::And => Bool(x && y),
            BinOp::Or => Bool(x || y),
            _ => match compare::<bool>(op) {
                Some(f) => Bool(f(&x, &y)),
                None => return Err(bad_bin(op, a, b)),
            },
        },
        _ => return Err(bad_bin(op, a, b)),
    })
}

fn bad_bin(op: BinOp, a: Scalar, b: Scalar) -> String {
    format!("`{}` is not defined on {} and {}", op.name(), a.kind().name(), b.kind().name())
}

/// f32 functions.
#[inline]
pub(crate) fn f32_un(op: UnOp) -> Option<fn(f32) -> f32> {
    Some(match op {
        UnOp::Neg => |x: f32| -x,
        UnOp::Abs => f32::abs,
        UnOp::Exp => f32::exp,
        UnOp::Log => f32::ln,
        UnOp::Sqrt => f32::sqrt,
        UnOp::Sin => f32::sin,
        UnOp::Cos => f32::cos,
        UnOp::Tanh => f32::tanh,
        UnOp::Floor => f32::floor,
        UnOp::Not => return None,
    })
}

/// `op a` on a scalar.
pub(crate) fn un(op: UnOp, a: Scalar) -> Result<Scalar, String> {
    Ok(match (op, a) {
        (_, Scalar::F32(x)) if f32_un(op).is_some() => Scalar::F32(f32_un(op).map_or(x, |f| f(x))),
        (UnOp::Neg, Scalar::I32(x)) => Scalar::I32(x.wrapping_neg()),
        (UnOp::Abs, Scalar::I32(x)) => Scalar::I32(x.wrapping_abs()),
        (UnOp::Not, Scalar::Bool(b)) => Scalar::Bool(!b),
        _ => return Err(format!("`{}` is not defined on {}", op.name(), a.kind().name())),
    })
}

/// Conversion with C semantics (f32 to i32 truncates toward zero; out of range saturates).
pub(crate) fn cast(k: ScalarKind, a: Scalar) -> Scalar {
    match (k, a) {
        (ScalarKind::F32, Scalar::F32(x)) => Scalar::F32(x),
        (ScalarKind::F32, Scalar::I32(x)) => Scalar::F32(x as f32),
        (ScalarKind::F32, Scalar::Bool(b)) => Scalar::F32(if b { 1.0 } else { 0.0 }),
        (ScalarKind::I32, Scalar::F32(x)) => Scalar::I32(x as i32),
        (ScalarKind::I32, Scalar::I32(x)) => Scalar::I32(x),
        (ScalarKind::I32, Scalar::Bool(b)) => Scalar::I32(i32::from(b)),
        (ScalarKind::Bool, Scalar::F32(x)) => Scalar::Bool(x != 0.0),
        (ScalarKind::Bool, Scalar::I32(x)) => Scalar::Bool(x != 0),
        (ScalarKind::Bool, Scalar::Bool(b)) => Scalar::Bool(b),
    }
}

/// Lanes of a scalar or vector operand: `None` for a scalar (broadcast).
fn lanes<'v>(v: &'v Value, what: &str) -> Result<Option<&'v [Scalar]>, String> {
    match v {
        Value::Scalar(_) => Ok(None),
        Value::Vector(l) => Ok(Some(l)),
        v => Err(format!("{what} expects scalars or vectors, found {}", v.describe())),
    }
}

fn lane(v: &Value, l: Option<&[Scalar]>, i: usize) -> Scalar {
    match (v, l) {
        (_, Some(l)) => l[i],
        (Value::Scalar(s), None) => *s,
        _ => Scalar::Bool(false),
    }
}

/// Width of the lane-wise operation over these operands (`None`: all scalars).
fn width(ls: &[Option<&[Scalar]>]) -> Result<Option<usize>, String> {
    let mut w = None;
    for l in ls.iter().flatten() {
        match w {
            None => w = Some(l.len()),
            Some(w) if w != l.len() => return Err(format!("vectors of different widths: {w} and {}", l.len())),
            _ => {}
        }
    }
    Ok(w)
}

/// Applies a scalar function lane-wise to scalar-or-vector operands.
fn lanewise(
    vs: &[&Value],
    what: &str,
    f: &mut dyn FnMut(&[Scalar]) -> Result<Scalar, String>,
) -> Result<Value, String> {
    let ls = vs.iter().map(|v| lanes(v, what)).collect::<Result<Vec<_>, _>>()?;
    let mut args = vec![Scalar::Bool(false); vs.len()];
    match width(&ls)? {
        None => {
            for (a, v) in args.iter_mut().zip(vs) {
                *a = lane(v, None, 0);
            }
            Ok(Value::Scalar(f(&args)?))
        }
        Some(w) => {
            let mut out = Vec::with_capacity(w);
            for i in 0..w {
                for ((a, v), l) in args.iter_mut().zip(vs).zip(&ls) {
                    *a = lane(v, *l, i);
                }
                out.push(f(&args)?);
            }
            Ok(Value::Vector(Arc::from(out)))
        }
    }
}

/// `a op b` on scalars or vectors (a scalar operand is broadcast).
pub(crate) fn bin_value(op: BinOp, a: &Value, b: &Value) -> Result<Value, String> {
    if let (Value::Scalar(x), Value::Scalar(y)) = (a, b) {
        return bin(op, *x, *y).map(Value::Scalar);
    }
    lanewise(&[a, b], op.name(), &mut |s| bin(op, s[0], s[1]))
}

/// `op a` on a scalar or vector.
pub(crate) fn un_value(op: UnOp, a: &Value) -> Result<Value, String> {
    if let Value::Scalar(x) = a {
        return un(op, *x).map(Value::Scalar);
    }
    lanewise(&[a], op.name(), &mut |s| un(op, s[0]))
}

/// Conversion of a scalar or vector.
pub(crate) fn cast_value(k: ScalarKind, a: &Value) -> Result<Value, String> {
    if let Value::Scalar(x) = a {
        return Ok(Value::Scalar(cast(k, *x)));
    }
    lanewise(&[a], k.name(), &mut |s| Ok(cast(k, s[0])))
}

/// `vectorFromScalar(w, x)`: `w` lanes of `x`.
pub(crate) fn vector_from_scalar(w: u32, x: &Value) -> Result<Value, String> {
    match x {
        Value::Scalar(s) => Ok(Value::Vector(std::iter::repeat_n(*s, w as usize).collect())),
        v => Err(format!("vectorFromScalar expects a scalar, found {}", v.describe())),
    }
}

/// `select(c, a, b)`: `a` where `c` holds, else `b`; lane-wise for a vector condition.
pub(crate) fn select_value(c: &Value, a: &Value, b: &Value) -> Result<Value, String> {
    match c {
        Value::Scalar(Scalar::Bool(c)) => match (a, b) {
            (Value::Scalar(x), Value::Scalar(y)) => select_scalar(*c, *x, *y).map(Value::Scalar),
            _ => Ok(if *c { a.clone() } else { b.clone() }),
        },
        Value::Vector(_) => lanewise(&[c, a, b], "select", &mut |s| match s[0] {
            Scalar::Bool(c) => select_scalar(c, s[1], s[2]),
            _ => Err("select expects a bool condition".into()),
        }),
        c => Err(format!("select expects a bool condition, found {}", c.describe())),
    }
}

pub(crate) fn select_scalar(c: bool, a: Scalar, b: Scalar) -> Result<Scalar, String> {
    if a.kind() != b.kind() {
        return Err(format!("select between {} and {}", a.kind().name(), b.kind().name()));
    }
    Ok(if c { a } else { b })
}

//! Bounds on concrete sizes: the largest value mapsat handles, checked once in the checker so
//! that every later product of sizes (buffer lengths, indices, launch sizes, byte counts) fits
//! in 64 bits.
//!
//! [`check::check_with_sizes`](crate::check::check_with_sizes) refuses a program in which a
//! value, at the given sizes, holds more than [`MAX_BYTES`] bytes. Below that bound, any
//! index into a value, any count of its scalars and any byte count are at most 2^62 and are
//! computed without overflow in `i64`; size arithmetic on constants saturates
//! ([`Size`](crate::Size)), so a product too large for 64 bits is refused here, never wrapped.

use crate::types::Type;

/// The largest number of bytes one value (an input, an intermediate, the result) may hold at
/// concrete sizes: 2^62 bytes.
pub const MAX_BYTES: i64 = 1 << 62;

/// A value holds more than [`MAX_BYTES`] bytes (or has a negative length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("more than 2^62 bytes")]
pub struct TooLarge;

/// The number of scalars and of bytes of one value of type `t`, when every length in it is a
/// constant; `Ok(None)` when some length is symbolic.
pub fn footprint(t: &Type) -> Result<Option<(i64, i64)>, TooLarge> {
    let r = match t {
        Type::Scalar(k) => (1, k.bytes() as i64),
        Type::Vector(k, w) => (i64::from(*w), i64::from(*w) * k.bytes() as i64),
        Type::Fun(..) => (0, 0),
        Type::Tuple(ts) => {
            let (mut n, mut b) = (0i64, 0i64);
            for t in ts {
                let Some((tn, tb)) = footprint(t)? else { return Ok(None) };
                n = n.checked_add(tn).ok_or(TooLarge)?;
                b = b.checked_add(tb).ok_or(TooLarge)?;
            }
            (n, b)
        }
        Type::Array(e, len) => {
            let Some(len) = len.as_const() else { return Ok(None) };
            let Some((en, eb)) = footprint(e)? else { return Ok(None) };
            if len < 0 {
                return Err(TooLarge);
            }
            (len.checked_mul(en).ok_or(TooLarge)?, len.checked_mul(eb).ok_or(TooLarge)?)
        }
    };
    if r.1 > MAX_BYTES {
        return Err(TooLarge);
    }
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Size;

    fn arr(e: Type, n: i64) -> Type {
        Type::array(e, Size::constant(n))
    }

    #[test]
    fn counts_scalars_and_bytes() {
        assert_eq!(footprint(&arr(arr(Type::F32, 3), 5)), Ok(Some((15, 60))));
        assert_eq!(footprint(&Type::Tuple(vec![Type::F32, Type::BOOL])), Ok(Some((2, 5))));
        assert_eq!(footprint(&Type::array(Type::F32, Size::var("N"))), Ok(None));
    }

    #[test]
    fn refuses_what_exceeds_the_bound() {
        assert_eq!(footprint(&arr(Type::F32, 1 << 60)), Ok(Some((1 << 60, 1 << 62))));
        assert_eq!(footprint(&arr(Type::F32, (1 << 60) + 1)), Err(TooLarge));
        assert_eq!(footprint(&arr(arr(Type::F32, 1 << 40), 1 << 40)), Err(TooLarge));
        assert_eq!(footprint(&arr(Type::F32, i64::MAX)), Err(TooLarge));
    }
}

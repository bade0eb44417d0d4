//! Numeric functions: abs, sign, ceil, floor, round, sqrt, pow, logarithms,
//! trigonometry.

use kith_common::{Error, Result, Value};

use kith_common::LogicalType as T;

use crate::arguments::{arg_f64, arg_i64, arity};
use crate::registry::{ScalarFunction, TypeRule};
use crate::signature::{check, Class::*};

const NUM_TO_DOUBLE: TypeRule = |n, a| {
    check(n, a, &[Num], 0)?;
    Ok(T::Double)
};

const TWO_NUM_TO_DOUBLE: TypeRule = |n, a| {
    check(n, a, &[Num, Num], 0)?;
    Ok(T::Double)
};

const CONSTANT: TypeRule = |n, a| {
    check(n, a, &[], 0)?;
    Ok(T::Double)
};

pub(crate) const FUNCTIONS: &[ScalarFunction] = &[
    ScalarFunction::strict(
        &["abs"],
        |n, a| {
            check(n, a, &[Num], 0)?;
            Ok(match &a[0] {
                t if t.is_integer() => T::Int64,
                T::Any => T::Any,
                _ => T::Double,
            })
        },
        abs,
    ),
    ScalarFunction::strict(
        &["sign"],
        |n, a| {
            check(n, a, &[Num], 0)?;
            Ok(T::Int64)
        },
        sign,
    ),
    ScalarFunction::strict(&["ceil"], NUM_TO_DOUBLE, |a| unary("ceil", a, f64::ceil)),
    ScalarFunction::strict(&["floor"], NUM_TO_DOUBLE, |a| unary("floor", a, f64::floor)),
    ScalarFunction::strict(
        &["round"],
        |n, a| {
            check(n, a, &[Num, Int], 1)?;
            Ok(T::Double)
        },
        round,
    ),
    ScalarFunction::strict(&["sqrt"], NUM_TO_DOUBLE, |a| unary("sqrt", a, f64::sqrt)),
    ScalarFunction::strict(&["ln"], NUM_TO_DOUBLE, |a| unary("ln", a, f64::ln)),
    ScalarFunction::strict(&["log"], NUM_TO_DOUBLE, |a| unary("log", a, f64::ln)),
    ScalarFunction::strict(&["log10"], NUM_TO_DOUBLE, |a| unary("log10", a, f64::log10)),
    ScalarFunction::strict(&["exp"], NUM_TO_DOUBLE, |a| unary("exp", a, f64::exp)),
    ScalarFunction::strict(&["sin"], NUM_TO_DOUBLE, |a| unary("sin", a, f64::sin)),
    ScalarFunction::strict(&["cos"], NUM_TO_DOUBLE, |a| unary("cos", a, f64::cos)),
    ScalarFunction::strict(&["tan"], NUM_TO_DOUBLE, |a| unary("tan", a, f64::tan)),
    ScalarFunction::strict(&["asin"], NUM_TO_DOUBLE, |a| unary("asin", a, f64::asin)),
    ScalarFunction::strict(&["acos"], NUM_TO_DOUBLE, |a| unary("acos", a, f64::acos)),
    ScalarFunction::strict(&["atan"], NUM_TO_DOUBLE, |a| unary("atan", a, f64::atan)),
    ScalarFunction::strict(&["degrees"], NUM_TO_DOUBLE, |a| {
        unary("degrees", a, f64::to_degrees)
    }),
    ScalarFunction::strict(&["radians"], NUM_TO_DOUBLE, |a| {
        unary("radians", a, f64::to_radians)
    }),
    ScalarFunction::strict(&["pow", "power"], TWO_NUM_TO_DOUBLE, |a| {
        binary("pow", a, f64::powf)
    }),
    ScalarFunction::strict(&["atan2"], TWO_NUM_TO_DOUBLE, |a| {
        binary("atan2", a, f64::atan2)
    }),
    ScalarFunction::strict(&["pi"], CONSTANT, |_| {
        Ok(Value::Double(std::f64::consts::PI))
    }),
    ScalarFunction::strict(&["e"], CONSTANT, |_| Ok(Value::Double(std::f64::consts::E))),
    ScalarFunction::strict(&["rand"], CONSTANT, |a| {
        arity("rand", a, 0, 0)?;
        Ok(Value::Double(rand_f64()))
    }),
];

/// A pseudo-random number in [0, 1): a per-thread xorshift generator seeded
/// from the clock and the thread (not for cryptographic use).
fn rand_f64() -> f64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, Hasher};
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            h.finish() | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

fn unary(name: &str, args: &[Value], f: fn(f64) -> f64) -> Result<Value> {
    arity(name, args, 1, 1)?;
    Ok(Value::Double(f(arg_f64(name, &args[0])?)))
}

fn binary(name: &str, args: &[Value], f: fn(f64, f64) -> f64) -> Result<Value> {
    arity(name, args, 2, 2)?;
    Ok(Value::Double(f(
        arg_f64(name, &args[0])?,
        arg_f64(name, &args[1])?,
    )))
}

fn abs(args: &[Value]) -> Result<Value> {
    arity("abs", args, 1, 1)?;
    match &args[0] {
        Value::Float(f) => Ok(Value::Double(f.abs() as f64)),
        Value::Double(f) => Ok(Value::Double(f.abs())),
        v => {
            let i = arg_i64("abs", v)?;
            i.checked_abs()
                .map(Value::Int64)
                .ok_or_else(|| Error::runtime("integer overflow in abs()"))
        }
    }
}

fn sign(args: &[Value]) -> Result<Value> {
    arity("sign", args, 1, 1)?;
    let f = arg_f64("sign", &args[0])?;
    Ok(Value::Int64(if f > 0.0 {
        1
    } else if f < 0.0 {
        -1
    } else {
        0
    }))
}

/// `round(x)` rounds half away from zero; `round(x, digits)` to `digits`
/// decimal places.
fn round(args: &[Value]) -> Result<Value> {
    arity("round", args, 1, 2)?;
    let x = arg_f64("round", &args[0])?;
    if args.len() == 1 {
        return Ok(Value::Double(x.round()));
    }
    let d = arg_i64("round", &args[1])?.clamp(-300, 300) as i32;
    let m = 10f64.powi(d);
    Ok(Value::Double((x * m).round() / m))
}

#[cfg(test)]
mod tests {
    use crate::call;
    use kith_common::Value;

    #[test]
    fn numeric_functions() {
        assert_eq!(call("abs", &[Value::Int32(-3)]).unwrap(), Value::Int64(3));
        assert_eq!(
            call("abs", &[Value::Double(-2.5)]).unwrap(),
            Value::Double(2.5)
        );
        assert!(call("abs", &[Value::Int64(i64::MIN)]).is_err());
        assert_eq!(
            call("ceil", &[Value::Double(1.2)]).unwrap(),
            Value::Double(2.0)
        );
        assert_eq!(
            call("floor", &[Value::Double(-1.2)]).unwrap(),
            Value::Double(-2.0)
        );
        assert_eq!(
            call("round", &[Value::Double(2.5)]).unwrap(),
            Value::Double(3.0)
        );
        assert_eq!(
            call("round", &[Value::Double(2.345), Value::Int64(2)]).unwrap(),
            Value::Double(2.35)
        );
        assert_eq!(
            call("sqrt", &[Value::Int64(16)]).unwrap(),
            Value::Double(4.0)
        );
        assert_eq!(call("sign", &[Value::Int64(-7)]).unwrap(), Value::Int64(-1));
        assert_eq!(
            call("pow", &[Value::Int64(2), Value::Int64(10)]).unwrap(),
            Value::Double(1024.0)
        );
        assert_eq!(
            call("log10", &[Value::Int64(1000)]).unwrap(),
            Value::Double(3.0)
        );
        assert_eq!(call("exp", &[Value::Int64(0)]).unwrap(), Value::Double(1.0));
        assert_eq!(call("sin", &[Value::Int64(0)]).unwrap(), Value::Double(0.0));
        assert_eq!(call("abs", &[Value::Null]).unwrap(), Value::Null);
    }
}

//! Numeric functions: abs, sign, ceil, floor, round, sqrt, pow, logarithms,
//! trigonometry.

use kith_common::{Error, Result, Value};

use super::{arg_f64, arg_i64, arity, ScalarFn};

pub(super) fn lookup(name: &str) -> Option<ScalarFn> {
    Some(match name {
        "abs" => abs,
        "sign" => sign,
        "ceil" => |a| unary("ceil", a, f64::ceil),
        "floor" => |a| unary("floor", a, f64::floor),
        "round" => round,
        "sqrt" => |a| unary("sqrt", a, f64::sqrt),
        "ln" => |a| unary("ln", a, f64::ln),
        "log" => |a| unary("log", a, f64::ln),
        "log10" => |a| unary("log10", a, f64::log10),
        "exp" => |a| unary("exp", a, f64::exp),
        "sin" => |a| unary("sin", a, f64::sin),
        "cos" => |a| unary("cos", a, f64::cos),
        "tan" => |a| unary("tan", a, f64::tan),
        "asin" => |a| unary("asin", a, f64::asin),
        "acos" => |a| unary("acos", a, f64::acos),
        "atan" => |a| unary("atan", a, f64::atan),
        "degrees" => |a| unary("degrees", a, f64::to_degrees),
        "radians" => |a| unary("radians", a, f64::to_radians),
        "pow" | "power" => |a| binary("pow", a, f64::powf),
        "atan2" => |a| binary("atan2", a, f64::atan2),
        "pi" => |_| Ok(Value::Double(std::f64::consts::PI)),
        "e" => |_| Ok(Value::Double(std::f64::consts::E)),
        "rand" => |a| {
            arity("rand", a, 0, 0)?;
            Ok(Value::Double(rand_f64()))
        },
        _ => return None,
    })
}

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
    use crate::function::call;
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

//! The scalar function library, by family. Every function takes its arguments
//! as [`Value`]s and returns one [`Value`]; the evaluator resolves the name once
//! (see [`lookup`]) and calls the function pointer per tuple. Argument and
//! result types follow `kith_planner::functions::scalar_type`.

use kith_common::{Error, Result, Value};

pub mod conversion;
pub mod graph;
pub mod list;
pub mod numeric;
pub mod string;
pub mod temporal;

/// A scalar function implementation.
pub type ScalarFn = fn(&[Value]) -> Result<Value>;

/// A resolved scalar function.
#[derive(Clone, Copy)]
pub struct ScalarFunction {
    pub func: ScalarFn,
    /// When true the evaluator returns NULL without calling `func` if any
    /// argument is NULL.
    pub propagate_nulls: bool,
}

/// Resolves a lower-case function name.
pub fn lookup(lower_name: &str) -> Option<ScalarFunction> {
    let strict = |func: ScalarFn| ScalarFunction {
        func,
        propagate_nulls: true,
    };
    numeric::lookup(lower_name)
        .or_else(|| string::lookup(lower_name))
        .or_else(|| temporal::lookup(lower_name))
        .or_else(|| list::lookup(lower_name))
        .map(strict)
        .or_else(|| conversion::lookup(lower_name))
        .or_else(|| graph::lookup(lower_name))
}

/// Calls function `lower_name` on `args` (slow path used by tests and
/// constant folding).
pub fn call(lower_name: &str, args: &[Value]) -> Result<Value> {
    let f = lookup(lower_name)
        .ok_or_else(|| Error::semantic(format!("unknown function '{lower_name}'")))?;
    if f.propagate_nulls && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    (f.func)(args)
}

pub(crate) fn arg_i64(name: &str, v: &Value) -> Result<i64> {
    v.as_i64().ok_or_else(|| {
        Error::runtime(format!(
            "{name}() expects an integer, got {}",
            v.logical_type()
        ))
    })
}

pub(crate) fn arg_f64(name: &str, v: &Value) -> Result<f64> {
    v.as_f64().ok_or_else(|| {
        Error::runtime(format!(
            "{name}() expects a number, got {}",
            v.logical_type()
        ))
    })
}

pub(crate) fn arg_str<'a>(name: &str, v: &'a Value) -> Result<&'a str> {
    v.as_str().ok_or_else(|| {
        Error::runtime(format!(
            "{name}() expects a STRING, got {}",
            v.logical_type()
        ))
    })
}

pub(crate) fn arity(name: &str, args: &[Value], min: usize, max: usize) -> Result<()> {
    if args.len() < min || args.len() > max {
        return Err(Error::runtime(format!(
            "{name}() got {} arguments",
            args.len()
        )));
    }
    Ok(())
}

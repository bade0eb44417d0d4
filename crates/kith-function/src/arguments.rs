//! Reading argument values at run time: arity and the value kinds a
//! function body expects (a type rule has checked what it could at compile time).

use kith_common::{Error, Result, Value};

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

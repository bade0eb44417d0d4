//! Python callables registered as procedures (`Database.register_procedure`):
//! the engine calls them from its worker threads, which take the GIL (a
//! query runs with the GIL released, so this cannot deadlock).

use kith::{LogicalType, Procedure, ProcedureColumn, ProcedureType, Value};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::convert::{py_to_value, Ctx};

/// A column `name` of type `ty`: a DDL type name (`INT64`, `STRING`, ...),
/// `NUMBER` (an integer or a float) or `ANY`.
fn column(name: String, ty: &str) -> PyResult<ProcedureColumn> {
    let t = match ty.trim().to_ascii_uppercase().as_str() {
        "ANY" => ProcedureType::Any,
        "NUMBER" => ProcedureType::Number,
        other => ProcedureType::Of(LogicalType::from_name(other).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown type '{ty}' for procedure column '{name}' (a DDL type name, NUMBER or ANY)"
            ))
        })?),
    };
    Ok(ProcedureColumn::new(name, t))
}

/// The procedure `name` calling `func` with the arguments as Python values;
/// `func` returns an iterable of rows (a tuple or list per row, or the
/// value itself when there is one output), or None for no rows.
pub(crate) fn python_procedure(
    name: String,
    inputs: Vec<(String, String)>,
    outputs: Vec<(String, String)>,
    func: PyObject,
) -> PyResult<Procedure> {
    let inputs = inputs
        .into_iter()
        .map(|(n, t)| column(n, &t))
        .collect::<PyResult<Vec<_>>>()?;
    let outputs = outputs
        .into_iter()
        .map(|(n, t)| column(n, &t))
        .collect::<PyResult<Vec<_>>>()?;
    let width = outputs.len();
    let label = name.clone();
    Ok(Procedure::new(
        name,
        inputs,
        outputs,
        move |args: &[Value]| {
            Python::with_gil(|py| call(py, &func, args, width))
                .map_err(|e| kith::Error::runtime(format!("procedure {label} raised: {e}")))
        },
    ))
}

fn call(
    py: Python<'_>,
    func: &PyObject,
    args: &[Value],
    width: usize,
) -> PyResult<Vec<Vec<Value>>> {
    let ctx = Ctx::new(py)?;
    let values = args
        .iter()
        .map(|v| ctx.value(py, v))
        .collect::<PyResult<Vec<_>>>()?;
    let result = func.call1(py, PyTuple::new(py, values)?)?;
    let result = result.bind(py);
    let mut rows = Vec::new();
    if result.is_none() {
        return Ok(rows);
    }
    for item in result.try_iter()? {
        let item = item?;
        let sequence = item.is_instance_of::<PyTuple>() || item.is_instance_of::<PyList>();
        let row = if width == 1 && !sequence {
            vec![py_to_value(&item)?]
        } else {
            item.try_iter()?
                .map(|x| py_to_value(&x?))
                .collect::<PyResult<Vec<_>>>()?
        };
        rows.push(row);
    }
    Ok(rows)
}

//! Engine values to Python objects (the row-at-a-time path).

use kith_common::temporal::civil_from_days;
use kith_common::{InternalId, NodeValue, RelValue, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;

const MICROS_PER_DAY: i64 = 86_400_000_000;
/// `date(1970, 1, 1).toordinal()`.
const EPOCH_ORDINAL: i64 = 719_163;

/// The `datetime` classes, looked up once per conversion batch.
pub(crate) struct Ctx<'py> {
    date: Bound<'py, PyAny>,
    datetime: Bound<'py, PyAny>,
    timedelta: Bound<'py, PyAny>,
}

impl<'py> Ctx<'py> {
    pub(crate) fn new(py: Python<'py>) -> PyResult<Ctx<'py>> {
        let m = py.import("datetime")?;
        Ok(Ctx {
            date: m.getattr("date")?,
            datetime: m.getattr("datetime")?,
            timedelta: m.getattr("timedelta")?,
        })
    }

    pub(crate) fn value(&self, py: Python<'py>, v: &Value) -> PyResult<PyObject> {
        Ok(match v {
            Value::Null => py.None(),
            Value::Bool(b) => b.into_py_any(py)?,
            Value::Int8(x) => x.into_py_any(py)?,
            Value::Int16(x) => x.into_py_any(py)?,
            Value::Int32(x) => x.into_py_any(py)?,
            Value::Int64(x) => x.into_py_any(py)?,
            Value::UInt8(x) => x.into_py_any(py)?,
            Value::UInt16(x) => x.into_py_any(py)?,
            Value::UInt32(x) => x.into_py_any(py)?,
            Value::UInt64(x) => x.into_py_any(py)?,
            Value::Float(x) => (*x as f64).into_py_any(py)?,
            Value::Double(x) => x.into_py_any(py)?,
            Value::String(s) => s.into_py_any(py)?,
            Value::Date(d) => self
                .date
                .call_method1("fromordinal", (d.0 as i64 + EPOCH_ORDINAL,))?
                .unbind(),
            Value::Timestamp(t) => {
                let days = t.0.div_euclid(MICROS_PER_DAY);
                let rem = t.0.rem_euclid(MICROS_PER_DAY);
                let (y, m, d) = civil_from_days(days);
                let secs = rem / 1_000_000;
                self.datetime
                    .call1((
                        y,
                        m,
                        d,
                        secs / 3600,
                        secs / 60 % 60,
                        secs % 60,
                        rem % 1_000_000,
                    ))?
                    .unbind()
            }
            Value::Interval(iv) => self
                .timedelta
                .call1((iv.months as i64 * 30 + iv.days as i64, 0, iv.micros))?
                .unbind(),
            // openCypher temporals go out as their ISO-8601 text for now
            // (Python's datetime types hold microseconds, not nanoseconds).
            Value::LocalTime(_)
            | Value::Time(_)
            | Value::LocalDateTime(_)
            | Value::DateTime(_)
            | Value::Duration(_) => v.to_string().into_py_any(py)?,
            Value::InternalId(id) => internal_id(py, *id)?,
            Value::List(items) => {
                let list = PyList::empty(py);
                for item in items {
                    list.append(self.value(py, item)?)?;
                }
                list.into_any().unbind()
            }
            Value::Struct(fields) => {
                let dict = PyDict::new(py);
                for (k, v) in fields {
                    dict.set_item(k, self.value(py, v)?)?;
                }
                dict.into_any().unbind()
            }
            Value::Map(entries) => {
                let dict = PyDict::new(py);
                for (k, v) in entries {
                    dict.set_item(self.value(py, k)?, self.value(py, v)?)?;
                }
                dict.into_any().unbind()
            }
            Value::Node(n) => self.node(py, n)?,
            Value::Rel(r) => self.rel(py, r)?,
            Value::Path(p) => {
                let dict = PyDict::new(py);
                let nodes = PyList::empty(py);
                for n in &p.nodes {
                    nodes.append(self.node(py, n)?)?;
                }
                let rels = PyList::empty(py);
                for r in &p.rels {
                    rels.append(self.rel(py, r)?)?;
                }
                dict.set_item("_nodes", nodes)?;
                dict.set_item("_rels", rels)?;
                dict.into_any().unbind()
            }
        })
    }

    fn node(&self, py: Python<'py>, n: &NodeValue) -> PyResult<PyObject> {
        let dict = PyDict::new(py);
        dict.set_item("_id", internal_id(py, n.id)?)?;
        dict.set_item("_label", &n.label)?;
        for (k, v) in &n.properties {
            dict.set_item(k, self.value(py, v)?)?;
        }
        Ok(dict.into_any().unbind())
    }

    fn rel(&self, py: Python<'py>, r: &RelValue) -> PyResult<PyObject> {
        let dict = PyDict::new(py);
        dict.set_item("_id", internal_id(py, r.id)?)?;
        dict.set_item("_label", &r.label)?;
        dict.set_item("_src", internal_id(py, r.src)?)?;
        dict.set_item("_dst", internal_id(py, r.dst)?)?;
        for (k, v) in &r.properties {
            dict.set_item(k, self.value(py, v)?)?;
        }
        Ok(dict.into_any().unbind())
    }

    /// Appends the node and rel values inside `v` (also inside paths and lists).
    pub(crate) fn collect_graph(
        &self,
        py: Python<'py>,
        v: &Value,
        nodes: &mut Vec<PyObject>,
        rels: &mut Vec<PyObject>,
    ) -> PyResult<()> {
        match v {
            Value::Node(n) => nodes.push(self.node(py, n)?),
            Value::Rel(r) => rels.push(self.rel(py, r)?),
            Value::Path(p) => {
                for n in &p.nodes {
                    nodes.push(self.node(py, n)?);
                }
                for r in &p.rels {
                    rels.push(self.rel(py, r)?);
                }
            }
            Value::List(items) => {
                for item in items {
                    self.collect_graph(py, item, nodes, rels)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// `{"offset": ..., "table": ...}`, as Kùzu users know it.
fn internal_id(py: Python<'_>, id: InternalId) -> PyResult<PyObject> {
    let dict = PyDict::new(py);
    dict.set_item("offset", id.offset())?;
    dict.set_item("table", id.table().0)?;
    Ok(dict.into_any().unbind())
}

/// A Python value as an engine value (for query parameters).
pub fn py_to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    use pyo3::exceptions::PyTypeError;
    use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple};
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: Python's bool is an int subclass.
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(i) => Ok(Value::Int64(i)),
            Err(_) => Ok(Value::UInt64(obj.extract::<u64>().map_err(|_| {
                PyTypeError::new_err("integer parameter out of range for INT64/UINT64")
            })?)),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Double(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::String(obj.extract()?));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj
            .try_iter()?
            .map(|item| py_to_value(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::List(items));
    }
    if let Ok(dict) = obj.downcast::<PyDict>() {
        let mut fields = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("map parameters need string keys"))?;
            fields.push((key, py_to_value(&v)?));
        }
        return Ok(Value::Struct(fields));
    }
    // datetime types through their attributes (the datetime C API is not
    // part of the stable ABI this module is built for).
    let datetime = obj.py().import("datetime")?;
    let epoch_days = |o: &Bound<'_, PyAny>| -> PyResult<i64> {
        Ok(kith_common::temporal::days_from_civil(
            o.getattr("year")?.extract()?,
            o.getattr("month")?.extract()?,
            o.getattr("day")?.extract()?,
        ))
    };
    if obj.is_instance(&datetime.getattr("datetime")?)? {
        let mut micros = epoch_days(obj)? * 86_400_000_000;
        micros += obj.getattr("hour")?.extract::<i64>()? * 3_600_000_000;
        micros += obj.getattr("minute")?.extract::<i64>()? * 60_000_000;
        micros += obj.getattr("second")?.extract::<i64>()? * 1_000_000;
        micros += obj.getattr("microsecond")?.extract::<i64>()?;
        let offset = obj.call_method0("utcoffset")?;
        if !offset.is_none() {
            let secs: f64 = offset.call_method0("total_seconds")?.extract()?;
            micros -= (secs * 1_000_000.0).round() as i64;
        }
        return Ok(Value::Timestamp(kith_common::Timestamp(micros)));
    }
    if obj.is_instance(&datetime.getattr("date")?)? {
        let days = i32::try_from(epoch_days(obj)?)
            .map_err(|_| PyTypeError::new_err("date parameter out of range"))?;
        return Ok(Value::Date(kith_common::Date(days)));
    }
    if obj.is_instance(&datetime.getattr("timedelta")?)? {
        let days: i32 = obj.getattr("days")?.extract()?;
        let secs: i64 = obj.getattr("seconds")?.extract()?;
        let micros: i64 = obj.getattr("microseconds")?.extract()?;
        return Ok(Value::Interval(kith_common::Interval {
            months: 0,
            days,
            micros: secs * 1_000_000 + micros,
        }));
    }
    Err(PyTypeError::new_err(format!(
        "unsupported parameter type: {}",
        obj.get_type().name()?
    )))
}

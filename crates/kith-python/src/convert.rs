//! Engine values to Python objects (the row-at-a-time path) and Python
//! parameters to engine values.
//!
//! Temporal values map onto the `datetime` module (which holds microseconds,
//! so nanoseconds are truncated):
//!
//! | engine           | Python                                                     |
//! |------------------|------------------------------------------------------------|
//! | DATE             | `date`                                                     |
//! | TIMESTAMP        | naive `datetime` (UTC)                                     |
//! | INTERVAL         | `timedelta` (a month counts 30 days)                       |
//! | LOCAL TIME       | naive `time`                                               |
//! | ZONED TIME       | `time` with `tzinfo=timezone(offset)`                      |
//! | LOCAL DATETIME   | naive `datetime`                                           |
//! | ZONED DATETIME   | aware `datetime`: `zoneinfo.ZoneInfo(name)` for a named    |
//! |                  | zone, else `timezone(offset)`                              |
//! | DURATION         | `timedelta` without months, else `kithdb.Duration`         |
//!
//! Values a `datetime` type cannot hold (years outside 1..=9999) raise
//! `kithdb.RuntimeError`; `get_as_arrow` still carries them.

use kith_common::temporal::{
    civil_from_days, days_from_civil, DateTime, Duration, LocalDateTime, LocalTime, Time, ZoneId,
    NANOS_PER_SEC,
};
use kith_common::{Date, InternalId, NodeValue, RelValue, Value};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyList, PyType};
use pyo3::IntoPyObjectExt;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The `datetime` classes, imported once per interpreter.
struct Classes {
    date: Py<PyAny>,
    datetime: Py<PyAny>,
    time: Py<PyAny>,
    timedelta: Py<PyAny>,
    timezone: Py<PyAny>,
}

static CLASSES: GILOnceCell<Classes> = GILOnceCell::new();
/// `zoneinfo.ZoneInfo`, or `None` where the module is missing.
static ZONEINFO: GILOnceCell<Option<Py<PyAny>>> = GILOnceCell::new();
/// `kithdb.Duration` (defined in Python, `python/kithdb/__init__.py`).
static DURATION: GILOnceCell<Py<PyType>> = GILOnceCell::new();
/// `kithdb.ParameterTypeError`, created when the module initialises.
pub(crate) static PARAMETER_TYPE_ERROR: GILOnceCell<Py<PyType>> = GILOnceCell::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("datetime")?;
        Ok::<_, PyErr>(Classes {
            date: m.getattr("date")?.unbind(),
            datetime: m.getattr("datetime")?.unbind(),
            time: m.getattr("time")?.unbind(),
            timedelta: m.getattr("timedelta")?.unbind(),
            timezone: m.getattr("timezone")?.unbind(),
        })
    })
}

fn duration_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    DURATION.import(py, "kithdb", "Duration")
}

/// A `kithdb.ParameterTypeError` (a subclass of both `kithdb.RuntimeError`
/// and `TypeError`) with `msg`.
pub(crate) fn parameter_error(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    match PARAMETER_TYPE_ERROR.get(py) {
        Some(t) => PyErr::from_type(t.bind(py).clone(), msg),
        None => crate::RuntimeError::new_err(msg),
    }
}

fn out_of_range(what: &str, v: &dyn std::fmt::Display) -> PyErr {
    crate::RuntimeError::new_err(format!(
        "{what} {v} is outside the range of Python's datetime types (years 1 to 9999); \
         get_as_arrow() returns it"
    ))
}

/// Whole seconds of a `timedelta` (its microseconds must be 0 when `exact`).
fn timedelta_seconds(td: &Bound<'_, PyAny>) -> PyResult<(i64, i64)> {
    let days: i64 = td.getattr("days")?.extract()?;
    let secs: i64 = td.getattr("seconds")?.extract()?;
    let micros: i64 = td.getattr("microseconds")?.extract()?;
    Ok((days * 86_400 + secs, micros))
}

/// The `datetime` classes, for one conversion batch.
pub(crate) struct Ctx<'py> {
    date: Bound<'py, PyAny>,
    datetime: Bound<'py, PyAny>,
    time: Bound<'py, PyAny>,
    timedelta: Bound<'py, PyAny>,
    timezone: Bound<'py, PyAny>,
}

impl<'py> Ctx<'py> {
    pub(crate) fn new(py: Python<'py>) -> PyResult<Ctx<'py>> {
        let c = classes(py)?;
        Ok(Ctx {
            date: c.date.bind(py).clone(),
            datetime: c.datetime.bind(py).clone(),
            time: c.time.bind(py).clone(),
            timedelta: c.timedelta.bind(py).clone(),
            timezone: c.timezone.bind(py).clone(),
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
            Value::Date(d) => {
                let (y, m, day) = d.ymd();
                if !(1..=9999).contains(&y) {
                    return Err(out_of_range("DATE", d));
                }
                self.date.call1((y, m, day))?.unbind()
            }
            Value::Timestamp(t) => {
                let days = t.0.div_euclid(MICROS_PER_DAY);
                let rem = t.0.rem_euclid(MICROS_PER_DAY);
                let (y, m, d) = civil_from_days(days);
                if !(1..=9999).contains(&y) {
                    return Err(out_of_range("TIMESTAMP", t));
                }
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
            Value::LocalTime(t) => self.local_time(*t)?.unbind(),
            Value::Time(t) => self.zoned_time(*t)?.unbind(),
            Value::LocalDateTime(t) => self.local_datetime(*t, None)?.unbind(),
            Value::DateTime(t) => self.zoned_datetime(py, t)?.unbind(),
            Value::Duration(d) => self.duration(py, d)?.unbind(),
            Value::InternalId(id) => internal_id(py, *id)?,
            Value::List(items) => match items.ints() {
                // A collected integer list converts without building values.
                Some(ints) => PyList::new(py, ints)?.into_any().unbind(),
                None => {
                    let list = PyList::empty(py);
                    for item in items.iter() {
                        list.append(self.value(py, item)?)?;
                    }
                    list.into_any().unbind()
                }
            },
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
                for n in p.nodes() {
                    nodes.append(self.node(py, n)?)?;
                }
                let rels = PyList::empty(py);
                for r in p.rels() {
                    rels.append(self.rel(py, r)?)?;
                }
                dict.set_item("_nodes", nodes)?;
                dict.set_item("_rels", rels)?;
                dict.into_any().unbind()
            }
        })
    }

    fn local_time(&self, t: LocalTime) -> PyResult<Bound<'py, PyAny>> {
        self.time
            .call1((t.hour(), t.minute(), t.second(), t.nanosecond() / 1000))
    }

    /// `datetime.timezone(timedelta(seconds=offset))`.
    fn fixed_zone(&self, offset: i32) -> PyResult<Bound<'py, PyAny>> {
        let delta = self.timedelta.call1((0, offset))?;
        self.timezone.call1((delta,))
    }

    fn zoned_time(&self, t: Time) -> PyResult<Bound<'py, PyAny>> {
        let tz = self.fixed_zone(t.offset)?;
        let lt = t.time;
        self.time.call1((
            lt.hour(),
            lt.minute(),
            lt.second(),
            lt.nanosecond() / 1000,
            tz,
        ))
    }

    fn local_datetime(
        &self,
        t: LocalDateTime,
        tz: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (y, m, d) = t.date.ymd();
        if !(1..=9999).contains(&y) {
            return Err(out_of_range("DATETIME", &t));
        }
        let lt = t.time;
        let fields = (
            y,
            m,
            d,
            lt.hour(),
            lt.minute(),
            lt.second(),
            lt.nanosecond() / 1000,
        );
        match tz {
            None => self.datetime.call1(fields),
            Some(tz) => {
                let (y, m, d, h, mi, s, us) = fields;
                self.datetime.call1((y, m, d, h, mi, s, us, tz))
            }
        }
    }

    /// An aware `datetime`: in its named zone (`zoneinfo`) when the value has
    /// one and Python's zone gives the same offset (`fold` picks the side of
    /// a DST overlap), else in the fixed offset.
    fn zoned_datetime(&self, py: Python<'py>, t: &DateTime) -> PyResult<Bound<'py, PyAny>> {
        if let Some(zone) = t.zone {
            if let Some(tz) = zoneinfo(py, zone) {
                let dt = self.local_datetime(t.local, Some(&tz))?;
                if utc_offset(&dt)? == Some(t.offset as i64) {
                    return Ok(dt);
                }
                let kwargs = PyDict::new(py);
                kwargs.set_item("fold", 1)?;
                let folded = dt.call_method("replace", (), Some(&kwargs))?;
                if utc_offset(&folded)? == Some(t.offset as i64) {
                    return Ok(folded);
                }
            }
        }
        let tz = self.fixed_zone(t.offset)?;
        self.local_datetime(t.local, Some(&tz))
    }

    /// `timedelta` when the duration has no months (nanoseconds truncated to
    /// microseconds) and fits one, else `kithdb.Duration`.
    fn duration(&self, py: Python<'py>, d: &Duration) -> PyResult<Bound<'py, PyAny>> {
        if d.months == 0 {
            if let Ok(td) = self
                .timedelta
                .call1((d.days, d.seconds, d.nanos as i64 / 1000))
            {
                return Ok(td);
            }
        }
        duration_class(py)?.call1((d.months, d.days, d.seconds, d.nanos))
    }

    fn node(&self, py: Python<'py>, n: &NodeValue) -> PyResult<PyObject> {
        let dict = PyDict::new(py);
        dict.set_item("_id", internal_id(py, n.id)?)?;
        dict.set_item("_label", &*n.label)?;
        for (k, v) in n.properties.iter() {
            dict.set_item(k, self.value(py, v)?)?;
        }
        Ok(dict.into_any().unbind())
    }

    fn rel(&self, py: Python<'py>, r: &RelValue) -> PyResult<PyObject> {
        let dict = PyDict::new(py);
        dict.set_item("_id", internal_id(py, r.id)?)?;
        dict.set_item("_label", &*r.label)?;
        dict.set_item("_src", internal_id(py, r.src)?)?;
        dict.set_item("_dst", internal_id(py, r.dst)?)?;
        for (k, v) in r.properties.iter() {
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
                for n in p.nodes() {
                    nodes.push(self.node(py, n)?);
                }
                for r in p.rels() {
                    rels.push(self.rel(py, r)?);
                }
            }
            Value::List(items) => {
                for item in items.iter() {
                    self.collect_graph(py, item, nodes, rels)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// `zoneinfo.ZoneInfo(zone)`, `None` where Python does not know the zone.
fn zoneinfo<'py>(py: Python<'py>, zone: ZoneId) -> Option<Bound<'py, PyAny>> {
    let class = ZONEINFO.get_or_init(py, || {
        py.import("zoneinfo")
            .and_then(|m| m.getattr("ZoneInfo"))
            .ok()
            .map(Bound::unbind)
    });
    class.as_ref()?.bind(py).call1((zone.name(),)).ok()
}

/// `dt.utcoffset()` in whole seconds (`None` for a naive value).
fn utc_offset(dt: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    let off = dt.call_method0("utcoffset")?;
    if off.is_none() {
        return Ok(None);
    }
    let (secs, micros) = timedelta_seconds(&off)?;
    Ok((micros == 0).then_some(secs))
}

/// `{"offset": ..., "table": ...}`, as Kùzu users know it.
fn internal_id(py: Python<'_>, id: InternalId) -> PyResult<PyObject> {
    let dict = PyDict::new(py);
    dict.set_item("offset", id.offset())?;
    dict.set_item("table", id.table().0)?;
    Ok(dict.into_any().unbind())
}

/// Days since the epoch of a `date` or `datetime`.
fn epoch_days(o: &Bound<'_, PyAny>) -> PyResult<i64> {
    Ok(days_from_civil(
        o.getattr("year")?.extract()?,
        o.getattr("month")?.extract()?,
        o.getattr("day")?.extract()?,
    ))
}

/// The clock fields of a `time` or `datetime` as nanoseconds since midnight.
fn clock_nanos(o: &Bound<'_, PyAny>) -> PyResult<i64> {
    let h: i64 = o.getattr("hour")?.extract()?;
    let m: i64 = o.getattr("minute")?.extract()?;
    let s: i64 = o.getattr("second")?.extract()?;
    let us: i64 = o.getattr("microsecond")?.extract()?;
    Ok(((h * 60 + m) * 60 + s) * NANOS_PER_SEC + us * 1000)
}

/// The UTC offset of an aware `datetime` or `time` in whole seconds; `None`
/// when it is naive (or, for a `time`, its zone needs a date to know it).
fn offset_seconds(obj: &Bound<'_, PyAny>) -> PyResult<Option<i32>> {
    let off = obj.call_method0("utcoffset")?;
    if off.is_none() {
        return Ok(None);
    }
    let (secs, micros) = timedelta_seconds(&off)?;
    if micros != 0 {
        return Err(parameter_error(
            obj.py(),
            "UTC offsets with fractions of a second are not supported",
        ));
    }
    i32::try_from(secs)
        .map(Some)
        .map_err(|_| parameter_error(obj.py(), "UTC offset out of range"))
}

/// The tz database name of a `tzinfo` (`zoneinfo.ZoneInfo.key`, pytz's
/// `zone`), when the engine knows it.
fn zone_name(tzinfo: &Bound<'_, PyAny>) -> Option<ZoneId> {
    ["key", "zone"].iter().find_map(|attr| {
        let name: String = tzinfo.getattr(*attr).ok()?.extract().ok()?;
        ZoneId::parse(&name)
    })
}

/// A Python value as an engine value (for query parameters).
///
/// `None`, bool, int (INT64, or UINT64 above its range), float, str, list and
/// tuple (LIST), dict with str keys (STRUCT), `date` (DATE), naive `datetime`
/// (TIMESTAMP), aware `datetime` (ZONED DATETIME, keeping a `zoneinfo` /
/// pytz zone name), naive `time` (LOCAL TIME), `time` with a fixed offset
/// (ZONED TIME), `timedelta` (INTERVAL) and `kithdb.Duration` (DURATION).
/// Anything else raises `kithdb.ParameterTypeError`.
pub fn py_to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple};
    let py = obj.py();
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
                parameter_error(py, "integer parameter out of range for INT64/UINT64")
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
        return Ok(Value::list(items));
    }
    if let Ok(dict) = obj.downcast::<PyDict>() {
        let mut fields = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let key: String = k
                .extract()
                .map_err(|_| parameter_error(py, "map parameters need string keys"))?;
            fields.push((key, py_to_value(&v)?));
        }
        return Ok(Value::Struct(fields));
    }
    // datetime types through their attributes (the datetime C API is not
    // part of the stable ABI this module is built for).
    let c = classes(py)?;
    if obj.is_instance(c.datetime.bind(py))? {
        let days = epoch_days(obj)?;
        let nanos = clock_nanos(obj)?;
        let Some(offset) = offset_seconds(obj)? else {
            return Ok(Value::Timestamp(kith_common::Timestamp(
                days * MICROS_PER_DAY + nanos / 1000,
            )));
        };
        let date = i32::try_from(days)
            .map(Date)
            .map_err(|_| parameter_error(py, "datetime parameter out of range"))?;
        let zone = zone_name(&obj.getattr("tzinfo")?);
        return Ok(Value::DateTime(DateTime {
            local: LocalDateTime {
                date,
                time: LocalTime(nanos),
            },
            offset,
            zone,
        }));
    }
    if obj.is_instance(c.date.bind(py))? {
        let days = i32::try_from(epoch_days(obj)?)
            .map_err(|_| parameter_error(py, "date parameter out of range"))?;
        return Ok(Value::Date(Date(days)));
    }
    if obj.is_instance(c.time.bind(py))? {
        let time = LocalTime(clock_nanos(obj)?);
        if obj.getattr("tzinfo")?.is_none() {
            return Ok(Value::LocalTime(time));
        }
        return match offset_seconds(obj)? {
            Some(offset) => Ok(Value::Time(Time { time, offset })),
            None => Err(parameter_error(
                py,
                "a datetime.time parameter needs a fixed UTC offset (a named zone's \
                 offset depends on the date): use datetime.timezone(timedelta(...))",
            )),
        };
    }
    if obj.is_instance(c.timedelta.bind(py))? {
        let days: i32 = obj.getattr("days")?.extract()?;
        let secs: i64 = obj.getattr("seconds")?.extract()?;
        let micros: i64 = obj.getattr("microseconds")?.extract()?;
        return Ok(Value::Interval(kith_common::Interval {
            months: 0,
            days,
            micros: secs * 1_000_000 + micros,
        }));
    }
    if let Ok(class) = duration_class(py) {
        if obj.is_instance(class)? {
            let int = |name: &str| -> PyResult<i64> { obj.getattr(name)?.extract() };
            let range = |_| parameter_error(py, "kithdb.Duration parameter out of range");
            let (months, days) = (int("months")?, int("days")?);
            let (seconds, nanos) = (int("seconds")?, int("nanoseconds")?);
            let total = seconds as i128 * NANOS_PER_SEC as i128 + nanos as i128;
            return Ok(Value::Duration(Duration {
                months: i32::try_from(months).map_err(range)?,
                days: i32::try_from(days).map_err(range)?,
                seconds: i64::try_from(total.div_euclid(NANOS_PER_SEC as i128)).map_err(range)?,
                nanos: total.rem_euclid(NANOS_PER_SEC as i128) as i32,
            }));
        }
    }
    Err(parameter_error(
        py,
        format!(
            "unsupported parameter type: {} (expected None, bool, int, float, str, list, \
             tuple, dict, datetime.date/datetime/time/timedelta or kithdb.Duration)",
            obj.get_type().name()?
        ),
    ))
}

//! `kithdb._kithdb`: the native part of the `kithdb` Python package.
//!
//! Thin PyO3 classes over the embedded facade ([`kith::Database`],
//! [`kith::Connection`], [`kith::QueryResult`]). The pure-Python package in
//! `python/kithdb` adds the DataFrame helpers and the public docstrings; this
//! module owns what must be fast or must run without the GIL:
//!
//! * statements run with the GIL released, so Python threads on separate
//!   connections run queries concurrently and `interrupt()` can reach them;
//! * engine errors become `kithdb.RuntimeError` (a subclass of Python's
//!   `RuntimeError`) carrying the engine's message;
//! * results convert to Arrow column by column from the engine's typed vectors
//!   (no per-value Python objects) and cross into pyarrow through the Arrow C
//!   data interface;
//! * `COPY T FROM df` imports the DataFrame's Arrow C stream zero-copy
//!   (`copy_source.rs`) and loads it with the engine's Arrow COPY.

use std::sync::{Arc, Mutex};

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::IntoPyObjectExt;

mod arrow;
mod convert;
mod copy_source;
mod procedure;

create_exception!(
    kithdb,
    RuntimeError,
    PyRuntimeError,
    "A KithDB error (syntax, binder, COPY, runtime, interrupt, ...), with the engine's message."
);

pub(crate) fn engine_err(e: kith::Error) -> PyErr {
    RuntimeError::new_err(e.to_string())
}

fn closed(what: &str) -> PyErr {
    RuntimeError::new_err(format!("{what} is closed"))
}

/// An open KithDB database (file path or `:memory:`).
#[pyclass(module = "kithdb._kithdb", name = "Database", frozen, subclass)]
pub struct PyDatabase {
    inner: Mutex<Option<Arc<kith::Database>>>,
    path: String,
    read_only: bool,
}

/// The (name, value) entries of an optional dict argument (None: none);
/// `not_dict` / `not_str` are the errors for a non-dict and a non-string key.
fn named_entries<'py>(
    obj: Option<&Bound<'py, PyAny>>,
    not_dict: &'static str,
    not_str: &'static str,
) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Vec::new());
    };
    let dict = obj
        .downcast::<pyo3::types::PyDict>()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(not_dict))?;
    dict.iter()
        .map(|(k, v)| {
            let name: String = k
                .extract()
                .map_err(|_| pyo3::exceptions::PyTypeError::new_err(not_str))?;
            Ok((name, v))
        })
        .collect()
}

#[pymethods]
impl PyDatabase {
    #[new]
    #[pyo3(signature = (path=None, buffer_pool_size=0, read_only=false, max_threads=0, writer_wait_ms=None))]
    fn new(
        py: Python<'_>,
        path: Option<std::path::PathBuf>,
        buffer_pool_size: u64,
        read_only: bool,
        max_threads: usize,
        writer_wait_ms: Option<u64>,
    ) -> PyResult<Self> {
        let path = match path {
            None => ":memory:".to_string(),
            Some(p) => p
                .to_str()
                .ok_or_else(|| RuntimeError::new_err("database path is not valid UTF-8"))?
                .to_string(),
        };
        let config = kith::Config {
            buffer_pool_bytes: (buffer_pool_size > 0).then_some(buffer_pool_size),
            max_threads: (max_threads > 0).then_some(max_threads),
            read_only,
            writer_wait: writer_wait_ms.map(std::time::Duration::from_millis),
        };
        let p = path.clone();
        let db = py
            .allow_threads(move || kith::Database::open(&p, config))
            .map_err(engine_err)?;
        Ok(PyDatabase {
            inner: Mutex::new(Some(Arc::new(db))),
            path,
            read_only,
        })
    }

    /// Closes the database; its storage is released once every connection on it is closed too.
    fn close(&self) {
        self.inner.lock().unwrap().take();
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    #[getter]
    fn is_closed(&self) -> bool {
        self.inner.lock().unwrap().is_none()
    }

    /// Worker threads of the database's shared pool.
    #[getter]
    fn max_threads(&self) -> PyResult<usize> {
        Ok(self.get()?.max_threads())
    }

    /// Registers `func` as procedure `name` for `CALL name(args) YIELD ...`:
    /// `inputs` and `outputs` are `(name, type)` pairs (DDL type names,
    /// `NUMBER` or `ANY`); `func` takes the arguments and returns an iterable
    /// of rows (tuples, or plain values when there is one output).
    #[pyo3(signature = (name, inputs, outputs, func))]
    fn register_procedure(
        &self,
        name: String,
        inputs: Vec<(String, String)>,
        outputs: Vec<(String, String)>,
        func: PyObject,
    ) -> PyResult<()> {
        let p = procedure::python_procedure(name, inputs, outputs, func)?;
        self.get()?.register_procedure(p);
        Ok(())
    }
}

impl PyDatabase {
    fn get(&self) -> PyResult<Arc<kith::Database>> {
        self.inner
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| closed("database"))
    }
}

/// A session on a database; runs statements.
#[pyclass(module = "kithdb._kithdb", name = "Connection", frozen, subclass)]
pub struct PyConnection {
    inner: Mutex<Option<Arc<kith::Connection>>>,
}

impl PyConnection {
    fn get(&self) -> PyResult<Arc<kith::Connection>> {
        self.inner
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| closed("connection"))
    }

    fn run(&self, py: Python<'_>, query: String) -> PyResult<kith::QueryResult> {
        let conn = self.get()?;
        py.allow_threads(move || conn.query(&query))
            .map_err(engine_err)
    }
}

#[pymethods]
impl PyConnection {
    #[new]
    #[pyo3(signature = (database, num_threads=None))]
    fn new(
        py: Python<'_>,
        database: &Bound<'_, PyDatabase>,
        num_threads: Option<i64>,
    ) -> PyResult<Self> {
        let db = database.get().get()?;
        let conn = PyConnection {
            inner: Mutex::new(Some(Arc::new(kith::Connection::new(&db)))),
        };
        if let Some(n) = num_threads {
            conn.run(py, format!("CALL threads={n}"))?;
        }
        Ok(conn)
    }

    /// Runs `query` (one or more `;`-separated statements) and returns the last one's result.
    ///
    /// `sources` maps the names that `COPY T FROM name` statements read to
    /// objects exporting an Arrow C stream (`__arrow_c_stream__`, e.g. a
    /// `pyarrow.Table`); the package's `Connection.execute` fills it from
    /// DataFrames in the parameters or the caller's variables.
    #[pyo3(signature = (query, parameters=None, sources=None))]
    fn execute(
        &self,
        py: Python<'_>,
        query: String,
        parameters: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyQueryResult> {
        let mut params: Vec<(String, kith::Value)> = Vec::new();
        for (name, v) in named_entries(
            parameters,
            "parameters must be a dict of name -> value",
            "parameter names must be strings",
        )? {
            params.push((name, convert::py_to_value(&v)?));
        }
        let mut arrow_sources = std::collections::HashMap::new();
        for (name, v) in named_entries(
            sources,
            "sources must be a dict of name -> Arrow stream exporter",
            "source names must be strings",
        )? {
            let source = copy_source::import_stream(&name, &v)?;
            arrow_sources.insert(name, Arc::new(source));
        }
        if !arrow_sources.is_empty() {
            let conn = self.get()?;
            // The batches are released inside the closure, without the GIL
            // held by this thread (pyarrow takes it where its buffers need it).
            let result = py
                .allow_threads(move || {
                    let refs: Vec<(&str, kith::Value)> = params
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.clone()))
                        .collect();
                    let r = conn.query_with_arrow(&query, &refs, &arrow_sources);
                    drop(arrow_sources);
                    r
                })
                .map_err(engine_err)?;
            return Ok(PyQueryResult::new(result));
        }
        if !params.is_empty() {
            let conn = self.get()?;
            let result = py
                .allow_threads(move || {
                    let refs: Vec<(&str, kith::Value)> = params
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.clone()))
                        .collect();
                    conn.query_with_params(&query, &refs)
                })
                .map_err(engine_err)?;
            return Ok(PyQueryResult::new(result));
        }
        let result = self.run(py, query)?;
        Ok(PyQueryResult::new(result))
    }

    /// Number of worker threads this connection's queries use (`CALL threads=N`).
    fn set_max_threads_for_exec(&self, py: Python<'_>, num_threads: i64) -> PyResult<()> {
        self.run(py, format!("CALL threads={num_threads}"))
            .map(|_| ())
    }

    /// Interrupts queries on this connection that run longer than `timeout_in_ms` (0: no timeout).
    fn set_query_timeout(&self, py: Python<'_>, timeout_in_ms: i64) -> PyResult<()> {
        self.run(py, format!("CALL timeout={timeout_in_ms}"))
            .map(|_| ())
    }

    /// Asks the statement running on this connection (in another thread) to stop.
    fn interrupt(&self) -> PyResult<()> {
        if let Some(c) = self.inner.lock().unwrap().as_ref() {
            c.interrupt();
        }
        Ok(())
    }

    /// Closes the connection (interrupting a running statement).
    fn close(&self) {
        if let Some(c) = self.inner.lock().unwrap().take() {
            c.interrupt();
        }
    }

    #[getter]
    fn is_closed(&self) -> bool {
        self.inner.lock().unwrap().is_none()
    }
}

/// The materialised result of one statement.
#[pyclass(module = "kithdb._kithdb", name = "QueryResult", frozen)]
pub struct PyQueryResult {
    result: Arc<kith::QueryResult>,
    /// (chunk index, row within chunk) of the next row `get_next` returns.
    cursor: Mutex<(usize, usize)>,
}

impl PyQueryResult {
    fn new(result: kith::QueryResult) -> Self {
        PyQueryResult {
            result: Arc::new(result),
            cursor: Mutex::new((0, 0)),
        }
    }

    /// Skips exhausted (or empty) chunks; true when a row is left.
    fn advance(&self, cursor: &mut (usize, usize)) -> bool {
        let chunks = self.result.chunks();
        while cursor.0 < chunks.len() && cursor.1 >= chunks[cursor.0].num_rows {
            *cursor = (cursor.0 + 1, 0);
        }
        cursor.0 < chunks.len()
    }

    fn next_row(&self, py: Python<'_>) -> PyResult<Option<Py<PyTuple>>> {
        let mut cursor = self.cursor.lock().unwrap();
        if !self.advance(&mut cursor) {
            return Ok(None);
        }
        let chunk = &self.result.chunks()[cursor.0];
        let pos = cursor.1;
        cursor.1 += 1;
        drop(cursor);
        let ctx = convert::Ctx::new(py)?;
        let mut items = Vec::with_capacity(chunk.columns.len());
        for col in &chunk.columns {
            items.push(ctx.value(py, &col.get_value(pos))?);
        }
        Ok(Some(PyTuple::new(py, items)?.unbind()))
    }
}

#[pymethods]
impl PyQueryResult {
    fn get_column_names(&self) -> Vec<String> {
        self.result.column_names().to_vec()
    }

    fn get_column_data_types(&self) -> Vec<String> {
        self.result
            .column_types()
            .iter()
            .map(|t| t.to_string())
            .collect()
    }

    fn get_num_tuples(&self) -> usize {
        self.result.num_rows()
    }

    fn __len__(&self) -> usize {
        self.result.num_rows()
    }

    fn has_next(&self) -> bool {
        let mut cursor = self.cursor.lock().unwrap();
        self.advance(&mut cursor)
    }

    fn get_next(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        self.next_row(py)?
            .ok_or_else(|| RuntimeError::new_err("no more rows in the query result"))
    }

    fn reset_iterator(&self) {
        *self.cursor.lock().unwrap() = (0, 0);
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyTuple>>> {
        self.next_row(py)
    }

    /// All remaining rows as a list of tuples.
    fn fetch_all(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let list = PyList::empty(py);
        while let Some(row) = self.next_row(py)? {
            list.append(row)?;
        }
        Ok(list.unbind())
    }

    /// One pyarrow Array per column (all rows, independent of the row cursor).
    fn _arrow_columns(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        arrow::columns_to_pyarrow(py, &self.result)
    }

    /// Every node and rel value in the result, as dicts, for graph exports.
    fn _graph_values(&self, py: Python<'_>) -> PyResult<(Vec<PyObject>, Vec<PyObject>)> {
        let ctx = convert::Ctx::new(py)?;
        let mut nodes = Vec::new();
        let mut rels = Vec::new();
        for row in self.result.rows() {
            for v in &row {
                ctx.collect_graph(py, v, &mut nodes, &mut rels)?;
            }
        }
        Ok((nodes, rels))
    }
}

/// The names that the `COPY T FROM name` statements of `query` read from
/// (empty when there are none or `query` does not parse).
#[pyfunction]
fn _copy_source_names(query: &str) -> Vec<String> {
    kith::copy_source_names(query)
}

/// The version of the native module.
#[pyfunction]
fn _version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _kithdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyDatabase>()?;
    m.add_class::<PyConnection>()?;
    m.add_class::<PyQueryResult>()?;
    m.add("RuntimeError", py.get_type::<RuntimeError>())?;
    // A bad parameter is both a kithdb error and a TypeError, so callers can
    // catch either; create_exception! takes one base, `type()` takes two.
    let bases = PyTuple::new(
        py,
        [
            py.get_type::<RuntimeError>().into_any(),
            py.get_type::<pyo3::exceptions::PyTypeError>().into_any(),
        ],
    )?;
    let attrs = pyo3::types::PyDict::new(py);
    attrs.set_item("__module__", "kithdb")?;
    attrs.set_item(
        "__doc__",
        "A query parameter of a type or value the engine cannot take.",
    )?;
    let parameter_error = py
        .import("builtins")?
        .getattr("type")?
        .call1(("ParameterTypeError", bases, attrs))?
        .downcast_into::<pyo3::types::PyType>()?;
    let _ = convert::PARAMETER_TYPE_ERROR.set(py, parameter_error.clone().unbind());
    m.add("ParameterTypeError", parameter_error)?;
    m.add_function(wrap_pyfunction!(_version, m)?)?;
    m.add_function(wrap_pyfunction!(_copy_source_names, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION").into_py_any(py)?)?;
    Ok(())
}

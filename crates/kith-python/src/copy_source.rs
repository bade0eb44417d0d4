//! `COPY T FROM df`: a Python object's Arrow C stream imported as record
//! batches, without per-value Python objects or copies.
//!
//! The package converts pandas and polars DataFrames to `pyarrow.Table`s (see
//! `python/kithdb/__init__.py`); here any object that implements the Arrow
//! PyCapsule protocol (`__arrow_c_stream__`) is read: the stream is moved out
//! of its capsule, every batch is imported (the buffers stay where the
//! producer allocated them and are released when the batches drop) and the
//! batches become a [`kith::ArrowSource`] named after the variable.

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::RecordBatchReader;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::RuntimeError;

const STREAM_CAPSULE: &str = "arrow_array_stream";

fn copy_error(name: &str, what: impl std::fmt::Display) -> PyErr {
    RuntimeError::new_err(format!("COPY FROM {name}: {what}"))
}

/// Reads every record batch of `obj`'s Arrow C stream.
pub(crate) fn import_stream(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<kith::ArrowSource> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(copy_error(
            name,
            format!(
                "a {} does not export Arrow data (expected a pandas or polars DataFrame or a pyarrow Table)",
                obj.get_type().name()?
            ),
        ));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule
        .downcast::<PyCapsule>()
        .map_err(|_| copy_error(name, "__arrow_c_stream__ did not return a capsule"))?;
    let capsule_name = capsule.name()?.and_then(|n| n.to_str().ok());
    if capsule_name != Some(STREAM_CAPSULE) {
        return Err(copy_error(
            name,
            format!("__arrow_c_stream__ returned a capsule named {capsule_name:?}, not '{STREAM_CAPSULE}'"),
        ));
    }
    let ptr = capsule.pointer() as *mut FFI_ArrowArrayStream;
    if ptr.is_null() {
        return Err(copy_error(name, "the Arrow stream capsule is empty"));
    }
    // SAFETY: a capsule named "arrow_array_stream" holds a valid, initialised
    // `struct ArrowArrayStream` (the Arrow PyCapsule protocol), and `capsule`
    // keeps it alive during this call. `from_raw` moves the stream out and
    // leaves a released (empty) one behind, so the capsule's destructor does
    // not release it a second time; the reader owns and releases it.
    let reader = unsafe { RecordBatchStreamReader::from_raw(ptr) }
        .map_err(|e| copy_error(name, format!("cannot import the Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| copy_error(name, format!("cannot read the Arrow stream: {e}")))?;
    kith::ArrowSource::new(name, schema, batches).map_err(crate::engine_err)
}

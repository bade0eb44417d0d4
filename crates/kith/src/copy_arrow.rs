//! `COPY T FROM name`: COPY from in-memory Arrow record batches that the host
//! binds to `name` (the Python package binds DataFrames and Arrow tables).
//!
//! The statement is parsed and bound like a file COPY (the binder resolves the
//! table and options), then [`kith_exec::copy::copy_from_arrow`] converts the
//! batches with the same code as Parquet row groups and loads them in one
//! write transaction: the same type checks, key checks, row-numbered errors
//! and all-or-nothing commit as `COPY T FROM 'file'`.

use std::collections::HashMap;
use std::sync::Arc;

use kith_common::{Error, ErrorKind, Result, Value};
use kith_parser::ast::{CopyDirection, CopySource, Ident, Statement};
use kith_planner::bound::BoundStatement;
use kith_sched::CancelToken;

pub use kith_exec::copy::{ArrowSource, RecordBatch, Schema, SchemaRef};

use crate::database::Connection;
use crate::result::QueryResult;

/// The name a `COPY T FROM name` statement reads from, if `stmt` is one.
fn variable_source(stmt: &Statement) -> Option<&Ident> {
    match stmt {
        Statement::Copy(c) => match &c.direction {
            CopyDirection::From {
                source: CopySource::Variable(v),
                ..
            } => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// The names that the statements of `text` COPY from (`COPY T FROM df` gives
/// `df`), in order and without repeats; empty when `text` does not parse (the
/// statement's own run reports that).
pub fn copy_source_names(text: &str) -> Vec<String> {
    let Ok(statements) = kith_parser::parse(text) else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for s in &statements {
        if let Some(v) = variable_source(s) {
            if !names.contains(&v.name) {
                names.push(v.name.clone());
            }
        }
    }
    names
}

/// Clears the connection's running token when the COPY ends.
struct Running<'a>(&'a Connection);
impl Drop for Running<'_> {
    fn drop(&mut self) {
        *self.0.running.lock() = None;
    }
}

impl Connection {
    /// Like [`Connection::query_with_params`], where each `COPY T FROM name`
    /// statement loads the record batches `sources[name]` (an error names an
    /// unbound `name`). Columns map by position, `from` and `to` first for rel
    /// tables, exactly as for CSV and Parquet files; rows are numbered from 1
    /// in error messages. Text without such a statement runs unchanged.
    pub fn query_with_arrow(
        &self,
        text: &str,
        params: &[(&str, Value)],
        sources: &HashMap<String, Arc<ArrowSource>>,
    ) -> Result<QueryResult> {
        let has_copy = kith_parser::parse(text)
            .map(|s| s.iter().any(|s| variable_source(s).is_some()))
            .unwrap_or(false);
        if !has_copy {
            return self.query_with_params(text, params);
        }
        // Run statement by statement, the in-memory COPYs here and the rest
        // through the ordinary path.
        let mut last = QueryResult::default();
        for piece in crate::split_statements(text) {
            let parsed = kith_parser::parse(piece).map_err(|e| e.with_source(piece))?;
            last = match parsed.as_slice() {
                [stmt] if variable_source(stmt).is_some() => {
                    crate::guard(|| self.copy_arrow(stmt, params, sources))
                        .map_err(|e| e.with_source(piece))?
                }
                _ => self.query_with_params(piece, params)?,
            };
        }
        Ok(last)
    }

    fn copy_arrow(
        &self,
        stmt: &Statement,
        params: &[(&str, Value)],
        sources: &HashMap<String, Arc<ArrowSource>>,
    ) -> Result<QueryResult> {
        let Some(var) = variable_source(stmt) else {
            return Err(Error::internal("not a COPY from a variable"));
        };
        let source = sources.get(&var.name).ok_or_else(|| {
            Error::at(
                ErrorKind::Semantic,
                var.span,
                format!(
                    "COPY source '{}' is not bound to a DataFrame or Arrow table",
                    var.name
                ),
            )
        })?;
        // Bind as a file COPY with no files: the binder resolves the table
        // and the options; the batches replace the files below.
        let mut as_files = stmt.clone();
        if let Statement::Copy(c) = &mut as_files {
            if let CopyDirection::From { source, .. } = &mut c.direction {
                *source = CopySource::Files(Vec::new());
            }
        }
        let storage = &self.db.storage;
        let snapshot = storage.snapshot()?;
        let params: HashMap<String, Value> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let procedures = kith_planner::procedure::Procedures::new();
        let bound = kith_planner::binder::bind_with_params(
            &snapshot.catalog,
            &procedures,
            &as_files,
            &params,
            Default::default(),
        )?;
        let BoundStatement::CopyFrom(copy) = bound else {
            return Err(Error::internal("COPY bound to another statement"));
        };
        let table = snapshot
            .catalog
            .table(copy.table)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        let settings = self.settings.lock().clone();
        let cancel = match settings.timeout {
            Some(t) => CancelToken::with_timeout(t),
            None => CancelToken::new(),
        };
        *self.running.lock() = Some(cancel.clone());
        let _running = Running(self);
        let progress = self.progress.clone().map(|cb| {
            Arc::new(move |done, total| cb(crate::Progress { done, total }))
                as kith_exec::copy::ProgressFn
        });
        let rows = kith_exec::copy::copy_from_arrow(
            storage,
            &self.db.sched,
            settings.threads,
            &cancel,
            &copy,
            Arc::clone(source),
            progress,
        )
        .map_err(|e| e.or_span(copy.span))?;
        Ok(crate::statement::message(format!(
            "{rows} tuples have been copied to the {table} table."
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use kith_common::Value;

    use super::{copy_source_names, ArrowSource};
    use crate::{Config, Connection, Database};

    #[test]
    fn source_names() {
        assert_eq!(copy_source_names("COPY T FROM df"), vec!["df"]);
        assert_eq!(
            copy_source_names("COPY T FROM a; COPY U FROM `b`; COPY T FROM a"),
            vec!["a", "b"]
        );
        assert!(copy_source_names("COPY T FROM 'x.csv'").is_empty());
        assert!(copy_source_names("RETURN 1").is_empty());
        assert!(copy_source_names("COPY T FROM").is_empty());
    }

    #[test]
    fn unbound_and_plain_statements() {
        let db = Database::open(":memory:", Config::default()).unwrap();
        let conn = Connection::new(&db);
        let sources: HashMap<String, Arc<ArrowSource>> = HashMap::new();
        let r = conn
            .query_with_arrow("RETURN 1 + 1 AS x", &[], &sources)
            .unwrap();
        assert_eq!(r.rows().next(), Some(vec![Value::Int64(2)]));
        conn.query("CREATE NODE TABLE T(id INT64, PRIMARY KEY(id))")
            .unwrap();
        let e = conn
            .query_with_arrow("COPY T FROM df", &[], &sources)
            .unwrap_err();
        assert!(e.to_string().contains("'df' is not bound"), "{e}");
    }

    use kith_io::arrow_source::arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
    use kith_io::arrow_source::arrow_schema::Field;

    fn source(name: &str, cols: Vec<(&str, ArrayRef)>, batches: usize) -> Arc<ArrowSource> {
        let fields: Vec<Field> = cols
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(super::Schema::new(fields));
        let arrays: Vec<ArrayRef> = cols.into_iter().map(|(_, a)| a).collect();
        let batch = super::RecordBatch::try_new(schema.clone(), arrays).unwrap();
        // Split into `batches` pieces to cross batch (and, with small
        // morsels, morsel) boundaries.
        let n = batch.num_rows();
        let step = n.div_ceil(batches.max(1)).max(1);
        let parts = (0..n)
            .step_by(step)
            .map(|o| batch.slice(o, step.min(n - o)))
            .collect();
        Arc::new(ArrowSource::new(name, schema, parts).unwrap())
    }

    fn count(conn: &Connection, q: &str) -> Value {
        conn.query(q).unwrap().rows().next().unwrap()[0].clone()
    }

    #[test]
    fn nodes_and_rels_from_batches_all_or_nothing() {
        let db = Database::open(":memory:", Config::default()).unwrap();
        let conn = Connection::new(&db);
        conn.query(
            "CREATE NODE TABLE P(id INT64, name STRING, score DOUBLE, PRIMARY KEY(id));
             CREATE REL TABLE K(FROM P TO P, w INT32)",
        )
        .unwrap();
        let n = 1000i64;
        let (people, knows) = people_and_knows(n);
        load_then_reload(&conn, n, &people, knows);
        // The batches are not held by the engine after the COPY.
        assert_eq!(Arc::strong_count(&people), 1);
        dangling_endpoint_loads_nothing(&conn);
        bad_values_load_nothing(&conn);
        assert_eq!(count(&conn, "MATCH (p:P) RETURN count(*)"), Value::Int64(n));
        assert_eq!(
            count(&conn, "MATCH ()-[k:K]->() RETURN count(*)"),
            Value::Int64(n)
        );
    }

    /// `n` people in three batches (every seventh has no name) and a ring of
    /// `n` KNOWS rels in two.
    fn people_and_knows(n: i64) -> (Arc<ArrowSource>, Arc<ArrowSource>) {
        let people = source(
            "people",
            vec![
                (
                    "id",
                    Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
                ),
                (
                    "name",
                    Arc::new(StringArray::from_iter(
                        (0..n).map(|i| (i % 7 != 0).then(|| format!("p{i}"))),
                    )) as ArrayRef,
                ),
                (
                    "score",
                    Arc::new(Float64Array::from_iter_values(
                        (0..n).map(|i| i as f64 / 2.0),
                    )) as ArrayRef,
                ),
            ],
            3,
        );
        let knows = source(
            "knows",
            vec![
                (
                    "from",
                    Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
                ),
                (
                    "to",
                    Arc::new(Int64Array::from_iter_values((0..n).map(|i| (i + 1) % n))) as ArrayRef,
                ),
                (
                    "w",
                    Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
                ),
            ],
            2,
        );
        (people, knows)
    }

    /// Loads `people` and `knows` and checks what landed; loading `people`
    /// again fails on a duplicate key.
    fn load_then_reload(
        conn: &Connection,
        n: i64,
        people: &Arc<ArrowSource>,
        knows: Arc<ArrowSource>,
    ) {
        let sources: HashMap<String, Arc<ArrowSource>> = [
            ("people".to_string(), people.clone()),
            ("knows".to_string(), knows),
        ]
        .into_iter()
        .collect();
        let r = conn
            .query_with_arrow("COPY P FROM people; COPY K FROM knows", &[], &sources)
            .unwrap();
        assert_eq!(
            r.rows().next().unwrap()[0],
            Value::String("1000 tuples have been copied to the K table.".into())
        );
        assert_eq!(count(conn, "MATCH (p:P) RETURN count(*)"), Value::Int64(n));
        assert_eq!(
            count(conn, "MATCH (p:P) WHERE p.name IS NULL RETURN count(*)"),
            Value::Int64((n + 6) / 7)
        );
        assert_eq!(
            count(
                conn,
                "MATCH (a:P)-[k:K]->(b:P) WHERE a.id = 999 RETURN b.id"
            ),
            Value::Int64(0)
        );
        assert_eq!(
            count(conn, "MATCH (p:P) WHERE p.id = 501 RETURN p.score"),
            Value::Double(250.5)
        );

        // A duplicate key (the same batches again) loads nothing.
        let e = conn
            .query_with_arrow("COPY P FROM people", &[], &sources)
            .unwrap_err()
            .to_string();
        assert!(e.contains("people:1: duplicate primary key 0"), "{e}");
        drop(sources);
    }

    /// A dangling endpoint in the last row loads nothing either.
    fn dangling_endpoint_loads_nothing(conn: &Connection) {
        let bad = source(
            "bad",
            vec![
                (
                    "from",
                    Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
                ),
                (
                    "to",
                    Arc::new(Int64Array::from(vec![2, 3, 5000])) as ArrayRef,
                ),
                ("w", Arc::new(Int64Array::from(vec![1, 1, 1])) as ArrayRef),
            ],
            1,
        );
        let sources: HashMap<String, Arc<ArrowSource>> =
            [("bad".to_string(), bad)].into_iter().collect();
        let e = conn
            .query_with_arrow("COPY K FROM bad", &[], &sources)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad:3: destination node with primary key 5000"),
            "{e}"
        );
    }

    /// A value out of range for INT32, a column count mismatch and an option
    /// each load nothing.
    fn bad_values_load_nothing(conn: &Connection) {
        let wide = source(
            "wide",
            vec![
                ("from", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
                ("to", Arc::new(Int64Array::from(vec![2])) as ArrayRef),
                (
                    "w",
                    Arc::new(Int64Array::from(vec![1i64 << 40])) as ArrayRef,
                ),
            ],
            1,
        );
        let sources: HashMap<String, Arc<ArrowSource>> =
            [("wide".to_string(), wide)].into_iter().collect();
        let e = conn
            .query_with_arrow("COPY K FROM wide", &[], &sources)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wide:1: column 3 (w): cannot convert"), "{e}");
        let e = conn
            .query_with_arrow("COPY P FROM wide", &[], &sources)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has 3 columns") || e.contains("cannot be loaded"),
            "{e}"
        );
        let e = conn
            .query_with_arrow("COPY P FROM wide (HEADER=true)", &[], &sources)
            .unwrap_err()
            .to_string();
        assert!(e.contains("takes no options"), "{e}");
    }
}

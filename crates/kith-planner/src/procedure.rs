//! Procedures an embedding application registers on a database and queries
//! call with `CALL name(args) YIELD ...`: a signature the binder checks
//! (argument count and types, output names) and a body the executor calls
//! once per input row. The built-in catalog calls (`show_tables()`,
//! `table_info()`) are not procedures of this kind: they read the snapshot
//! and are bound on their own.

use std::fmt;
use std::sync::Arc;

use kith_common::{Error, LogicalType, Result, Value};

/// The declared type of a procedure argument or output.
#[derive(Debug, Clone, PartialEq)]
pub enum ProcedureType {
    /// Any value.
    Any,
    /// An integer or a float (openCypher NUMBER).
    Number,
    /// Exactly this type; an INT64 argument is accepted for a DOUBLE input
    /// (and converted), as openCypher assigns INTEGER to FLOAT.
    Of(LogicalType),
}

impl ProcedureType {
    /// The logical type the binder gives a value of this type.
    pub fn logical_type(&self) -> LogicalType {
        match self {
            ProcedureType::Any => LogicalType::Any,
            ProcedureType::Number => LogicalType::Any,
            ProcedureType::Of(t) => t.clone(),
        }
    }

    /// Whether a value of type `ty` may be passed for this type (`Any`, the
    /// type of NULL and of parameters without a value, is checked on the
    /// value when the procedure is called).
    pub fn accepts_type(&self, ty: &LogicalType) -> bool {
        match (self, ty) {
            (ProcedureType::Any, _) | (_, LogicalType::Any) => true,
            (ProcedureType::Number, t) => t.is_numeric(),
            (ProcedureType::Of(want), t) => want == t || (is_float(want) && t.is_numeric()),
        }
    }

    /// `v` converted to this type, or `None` when it is not of it.
    fn convert(&self, v: &Value) -> Option<Value> {
        if v.is_null() {
            return Some(Value::Null);
        }
        match self {
            ProcedureType::Any => Some(v.clone()),
            ProcedureType::Number => v.logical_type().is_numeric().then(|| v.clone()),
            ProcedureType::Of(want) => {
                let t = v.logical_type();
                if &t == want {
                    Some(v.clone())
                } else if is_float(want) && t.is_numeric() {
                    v.as_f64().map(Value::Double)
                } else {
                    None
                }
            }
        }
    }
}

fn is_float(t: &LogicalType) -> bool {
    matches!(t, LogicalType::Float | LogicalType::Double)
}

impl fmt::Display for ProcedureType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcedureType::Any => f.write_str("ANY"),
            ProcedureType::Number => f.write_str("NUMBER"),
            ProcedureType::Of(t) => write!(f, "{t}"),
        }
    }
}

/// One named argument or output column of a procedure.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcedureColumn {
    pub name: String,
    pub ty: ProcedureType,
}

impl ProcedureColumn {
    pub fn new(name: impl Into<String>, ty: ProcedureType) -> ProcedureColumn {
        ProcedureColumn {
            name: name.into(),
            ty,
        }
    }
}

/// The body of a procedure: the argument values (converted to the declared
/// input types) to the output rows, each with one value per output column.
pub type ProcedureBody = dyn Fn(&[Value]) -> Result<Vec<Vec<Value>>> + Send + Sync;

/// A registered procedure.
pub struct Procedure {
    /// Qualified name as registered (`my.proc`); calls match it ignoring case.
    pub name: String,
    pub inputs: Vec<ProcedureColumn>,
    pub outputs: Vec<ProcedureColumn>,
    body: Box<ProcedureBody>,
}

impl fmt::Debug for Procedure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Procedure")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

impl Procedure {
    pub fn new(
        name: impl Into<String>,
        inputs: Vec<ProcedureColumn>,
        outputs: Vec<ProcedureColumn>,
        body: impl Fn(&[Value]) -> Result<Vec<Vec<Value>>> + Send + Sync + 'static,
    ) -> Procedure {
        Procedure {
            name: name.into(),
            inputs,
            outputs,
            body: Box::new(body),
        }
    }

    /// The type of one output row as the binder sees it.
    pub fn row_type(&self) -> LogicalType {
        LogicalType::Struct(
            self.outputs
                .iter()
                .map(|c| (c.name.clone(), c.ty.logical_type()))
                .collect(),
        )
    }

    /// Calls the body: checks and converts the arguments, and checks that
    /// every row it returns has one value of the declared type per output
    /// (converting integers for float outputs).
    pub fn call(&self, args: &[Value]) -> Result<Vec<Vec<Value>>> {
        if args.len() != self.inputs.len() {
            return Err(Error::semantic(format!(
                "procedure {} expects {} argument(s), got {}",
                self.name,
                self.inputs.len(),
                args.len()
            )));
        }
        let mut converted = Vec::with_capacity(args.len());
        for (v, input) in args.iter().zip(&self.inputs) {
            let c = input.ty.convert(v).ok_or_else(|| {
                Error::type_error(format!(
                    "argument '{}' of procedure {} expects {}, got {}",
                    input.name,
                    self.name,
                    input.ty,
                    v.logical_type()
                ))
            })?;
            converted.push(c);
        }
        let rows = (self.body)(&converted)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            if row.len() != self.outputs.len() {
                return Err(Error::runtime(format!(
                    "procedure {} returned a row of {} value(s) for {} output(s)",
                    self.name,
                    row.len(),
                    self.outputs.len()
                )));
            }
            let mut converted = Vec::with_capacity(row.len());
            for (v, c) in row.iter().zip(&self.outputs) {
                converted.push(c.ty.convert(v).ok_or_else(|| {
                    Error::runtime(format!(
                        "procedure {} returned {} for output '{}' of type {}",
                        self.name,
                        v.logical_type(),
                        c.name,
                        c.ty
                    ))
                })?);
            }
            out.push(converted);
        }
        Ok(out)
    }
}

/// A reference to a registered procedure inside a bound expression; two
/// references are equal when they name the same registration.
#[derive(Debug, Clone)]
pub struct ProcedureRef(pub Arc<Procedure>);

impl PartialEq for ProcedureRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The procedures registered on a database.
#[derive(Debug, Clone, Default)]
pub struct Procedures {
    list: Vec<Arc<Procedure>>,
}

impl Procedures {
    pub const fn new() -> Procedures {
        Procedures { list: Vec::new() }
    }

    /// Adds `p`, replacing a procedure of the same name.
    pub fn register(&mut self, p: Procedure) {
        self.list.retain(|q| !q.name.eq_ignore_ascii_case(&p.name));
        self.list.push(Arc::new(p));
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Procedure>> {
        self.list.iter().find(|p| p.name.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> Procedure {
        Procedure::new(
            "t.echo",
            vec![ProcedureColumn::new(
                "x",
                ProcedureType::Of(LogicalType::Double),
            )],
            vec![ProcedureColumn::new(
                "y",
                ProcedureType::Of(LogicalType::Double),
            )],
            |args| Ok(vec![args.to_vec()]),
        )
    }

    #[test]
    fn integers_convert_to_float_inputs_and_other_types_are_refused() {
        let p = echo();
        assert_eq!(
            p.call(&[Value::Int64(2)]).unwrap(),
            vec![vec![Value::Double(2.0)]]
        );
        assert_eq!(p.call(&[Value::Null]).unwrap(), vec![vec![Value::Null]]);
        let e = p.call(&[Value::Bool(true)]).unwrap_err();
        assert!(e.message.contains("expects DOUBLE"), "{e}");
        assert!(p.call(&[]).is_err());
    }

    #[test]
    fn rows_of_the_wrong_shape_are_errors() {
        let p = Procedure::new(
            "t.bad",
            Vec::new(),
            vec![ProcedureColumn::new("y", ProcedureType::Number)],
            |_| Ok(vec![vec![Value::String("no".into())], vec![]]),
        );
        assert!(p.call(&[]).is_err());
    }

    #[test]
    fn lookup_ignores_case_and_registering_again_replaces() {
        let mut ps = Procedures::new();
        ps.register(echo());
        ps.register(echo());
        assert!(ps.get("T.ECHO").is_some());
        assert_eq!(ps.list.len(), 1);
        assert!(ps.get("t.other").is_none());
        assert!(ProcedureType::Number.accepts_type(&LogicalType::Int64));
        assert!(!ProcedureType::Of(LogicalType::Int64).accepts_type(&LogicalType::Bool));
    }
}

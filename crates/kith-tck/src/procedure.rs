//! Procedures a scenario declares (`there exists a procedure
//! test.my.proc(in :: INTEGER?) :: (out :: STRING?):` with a table of
//! input and output values): registered on the scenario's database as a
//! procedure whose body returns the outputs of the rows whose inputs equal
//! the arguments.

use kith::{LogicalType, Procedure, ProcedureColumn, ProcedureType, Value};

use crate::value;

/// Builds the procedure a step declares from its text (after "there exists
/// a procedure ") and its table (a header row naming inputs then outputs,
/// then one row per result).
pub fn declared_procedure(signature: &str, table: &[Vec<String>]) -> Result<Procedure, String> {
    let signature = signature.trim().trim_end_matches(':').trim();
    let (name, rest) = signature
        .split_once('(')
        .ok_or_else(|| format!("no argument list in procedure signature {signature:?}"))?;
    let (inputs, rest) = rest
        .split_once(')')
        .ok_or_else(|| format!("unclosed argument list in {signature:?}"))?;
    let outputs = rest
        .trim()
        .strip_prefix("::")
        .map(str::trim)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("no output list in procedure signature {signature:?}"))?;
    let inputs = columns(inputs)?;
    let outputs = columns(outputs)?;
    let width = inputs.len() + outputs.len();
    let mut rows = Vec::new();
    let mut lines = table.iter().filter(|r| !r.iter().all(|c| c.is_empty()));
    if width > 0 {
        let header = lines.next().ok_or("a procedure table needs a header row")?;
        let expected: Vec<&str> = inputs
            .iter()
            .chain(&outputs)
            .map(|c| c.name.as_str())
            .collect();
        if header
            .iter()
            .map(String::as_str)
            .ne(expected.iter().copied())
        {
            return Err(format!(
                "procedure table header {header:?} does not list {expected:?}"
            ));
        }
    }
    for line in lines {
        if line.len() != width {
            return Err(format!(
                "procedure table row {line:?} has not {width} cells"
            ));
        }
        let mut row = Vec::with_capacity(width);
        for (cell, column) in line.iter().zip(inputs.iter().chain(&outputs)) {
            row.push(cell_value(cell, &column.ty)?);
        }
        rows.push(row);
    }
    let n_in = inputs.len();
    Ok(Procedure::new(name.trim(), inputs, outputs, move |args| {
        Ok(rows
            .iter()
            .filter(|r| r[..n_in] == *args)
            .map(|r| r[n_in..].to_vec())
            .collect())
    }))
}

/// `name :: TYPE?, ...` (the `?` marks a nullable type; every type here is).
fn columns(list: &str) -> Result<Vec<ProcedureColumn>, String> {
    let list = list.trim();
    if list.is_empty() {
        return Ok(Vec::new());
    }
    list.split(',')
        .map(|c| {
            let (name, ty) = c
                .split_once("::")
                .ok_or_else(|| format!("no type in procedure column {c:?}"))?;
            let ty = match ty.trim().trim_end_matches('?') {
                "ANY" => ProcedureType::Any,
                "NUMBER" => ProcedureType::Number,
                "INTEGER" => ProcedureType::Of(LogicalType::Int64),
                "FLOAT" => ProcedureType::Of(LogicalType::Double),
                "STRING" => ProcedureType::Of(LogicalType::String),
                "BOOLEAN" => ProcedureType::Of(LogicalType::Bool),
                other => return Err(format!("procedure column type {other} is not supported")),
            };
            Ok(ProcedureColumn::new(name.trim(), ty))
        })
        .collect()
}

fn cell_value(cell: &str, ty: &ProcedureType) -> Result<Value, String> {
    let v = match value::parse_value(cell)? {
        value::TckValue::Null => Value::Null,
        value::TckValue::Bool(b) => Value::Bool(b),
        value::TckValue::Int(i) => Value::Int64(i),
        value::TckValue::Float(f) => Value::Double(f),
        value::TckValue::String(s) => Value::String(s),
        other => return Err(format!("procedure table value {other:?} is not supported")),
    };
    // A FLOAT column holds floats: a call's integer argument is converted.
    Ok(match (ty, &v) {
        (ProcedureType::Of(LogicalType::Double), Value::Int64(i)) => Value::Double(*i as f64),
        _ => v,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn a_declared_procedure_returns_the_rows_matching_its_arguments() {
        let p = declared_procedure(
            "test.my.proc(name :: STRING?, id :: INTEGER?) :: (city :: STRING?, code :: INTEGER?):",
            &table(&[
                &["name", "id", "city", "code"],
                &["'Stefan'", "1", "'Berlin'", "49"],
                &["'Stefan'", "2", "'München'", "49"],
                &["'Petra'", "1", "'London'", "44"],
            ]),
        )
        .unwrap();
        assert_eq!(p.name, "test.my.proc");
        let rows = p
            .call(&[Value::String("Stefan".into()), Value::Int64(2)])
            .unwrap();
        assert_eq!(
            rows,
            vec![vec![Value::String("München".into()), Value::Int64(49)]]
        );
        assert!(p.call(&[Value::Null, Value::Int64(2)]).unwrap().is_empty());
    }

    #[test]
    fn void_procedures_and_bad_declarations() {
        let p = declared_procedure("test.doNothing() :: ():", &table(&[&[""]])).unwrap();
        assert!(p.inputs.is_empty() && p.outputs.is_empty());
        assert!(declared_procedure("test.x(a :: NODE?) :: ():", &[]).is_err());
        assert!(declared_procedure(
            "test.x(a :: INTEGER?) :: (b :: INTEGER?):",
            &table(&[&["b", "a"]])
        )
        .is_err());
    }
}

//! Rendering of query results: tables, CSV, JSON and JSON Lines.
//!
//! The renderers work over column names and an iterator of rows rather than a
//! `QueryResult`, so they can be tested with hand-built rows.

use std::collections::HashSet;
use std::io::{self, Write};

use comfy_table::{presets, ContentArrangement, Table, TableComponent};
use kith::{QueryResult, Value};
use serde_json::{Map, Number, Value as Json};

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A boxed table with a header row.
    Table,
    /// RFC 4180 CSV with a header row.
    Csv,
    /// One JSON array of objects per statement.
    Json,
    /// One JSON object per row.
    Jsonl,
}

/// How tables are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableStyle {
    /// Plain ASCII, no width limit: for pipes, files and scripts.
    Ascii,
    /// Box-drawing characters fitted to the terminal width.
    Terminal,
}

/// Prints one statement's result; silent results and results without columns
/// print nothing.
pub fn write_result(
    out: &mut dyn Write,
    format: Format,
    style: TableStyle,
    result: &QueryResult,
) -> io::Result<()> {
    if result.is_silent() || result.column_names().is_empty() {
        return Ok(());
    }
    write_rows(out, format, style, result.column_names(), result.rows())
}

/// Renders rows under the given column names in `format`.
pub fn write_rows(
    out: &mut dyn Write,
    format: Format,
    style: TableStyle,
    names: &[String],
    rows: impl Iterator<Item = Vec<Value>>,
) -> io::Result<()> {
    match format {
        Format::Table => write_table(out, style, names, rows),
        Format::Csv => write_csv(out, names, rows),
        Format::Json => write_json(out, names, rows),
        Format::Jsonl => write_jsonl(out, names, rows),
    }
}

/// A table with a header row of column names (NULL prints as an empty cell).
pub fn write_table(
    out: &mut dyn Write,
    style: TableStyle,
    names: &[String],
    rows: impl Iterator<Item = Vec<Value>>,
) -> io::Result<()> {
    let mut table = Table::new();
    match style {
        TableStyle::Ascii => {
            table
                .load_preset(presets::ASCII_FULL_CONDENSED)
                .set_style(TableComponent::MiddleHeaderIntersections, '+')
                .set_content_arrangement(ContentArrangement::Disabled);
        }
        TableStyle::Terminal => {
            table
                .load_preset(presets::UTF8_FULL_CONDENSED)
                .apply_modifier(comfy_table::modifiers::UTF8_ROUND_CORNERS)
                .set_content_arrangement(ContentArrangement::Dynamic);
            // A terminal that reports no usable width (some ptys report 0)
            // would squeeze every column to one character.
            if table.width().is_none_or(|w| w < 20) {
                table.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
    }
    table.set_header(names.iter().map(String::as_str));
    for row in rows {
        let mut cells: Vec<String> = row.iter().map(Value::to_string).collect();
        cells.resize(names.len(), String::new());
        table.add_row(cells);
    }
    writeln!(out, "{table}")
}

/// CSV with a header row. Fields containing the delimiter, a quote, CR or LF
/// are quoted with embedded quotes doubled; NULL is an empty field and an empty
/// string is `""`, so the two stay distinguishable.
pub fn write_csv(
    out: &mut dyn Write,
    names: &[String],
    rows: impl Iterator<Item = Vec<Value>>,
) -> io::Result<()> {
    let header: Vec<String> = names.iter().map(|n| csv_field(n)).collect();
    writeln!(out, "{}", header.join(","))?;
    for row in rows {
        let mut line = String::new();
        for i in 0..names.len() {
            if i > 0 {
                line.push(',');
            }
            match row.get(i) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => line.push_str("\"\""),
                Some(v) => line.push_str(&csv_field(&v.to_string())),
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// One CSV field, quoted when needed (RFC 4180).
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One JSON array of row objects, one row per line.
pub fn write_json(
    out: &mut dyn Write,
    names: &[String],
    rows: impl Iterator<Item = Vec<Value>>,
) -> io::Result<()> {
    let keys = unique_names(names);
    write!(out, "[")?;
    for (i, row) in rows.enumerate() {
        if i > 0 {
            writeln!(out, ",")?;
        }
        serde_json::to_writer(&mut *out, &row_object(&keys, row))?;
    }
    writeln!(out, "]")
}

/// One JSON object per row (JSON Lines).
pub fn write_jsonl(
    out: &mut dyn Write,
    names: &[String],
    rows: impl Iterator<Item = Vec<Value>>,
) -> io::Result<()> {
    let keys = unique_names(names);
    for row in rows {
        serde_json::to_writer(&mut *out, &row_object(&keys, row))?;
        writeln!(out)?;
    }
    Ok(())
}

/// Column names made unique for use as object keys: a repeated name gets a
/// `_2`, `_3`, ... suffix so no column is silently dropped.
pub fn unique_names(names: &[String]) -> Vec<String> {
    let mut seen: HashSet<String> = HashSet::new();
    names
        .iter()
        .map(|name| {
            let mut key = name.clone();
            let mut n = 2;
            while !seen.insert(key.clone()) {
                key = format!("{name}_{n}");
                n += 1;
            }
            key
        })
        .collect()
}

fn row_object(keys: &[String], row: Vec<Value>) -> Json {
    let mut values = row.into_iter();
    let mut obj = Map::new();
    for key in keys {
        let v = values.next().map(|v| to_json(&v)).unwrap_or(Json::Null);
        obj.insert(key.clone(), v);
    }
    Json::Object(obj)
}

/// A float as a JSON number; NaN and infinities (which JSON lacks) as strings.
fn float_json(v: f64) -> Json {
    match Number::from_f64(v) {
        Some(n) => Json::Number(n),
        None if v.is_nan() => Json::String("NaN".into()),
        None if v > 0.0 => Json::String("Infinity".into()),
        None => Json::String("-Infinity".into()),
    }
}

fn props_object(props: &[(String, Value)], obj: &mut Map<String, Json>) {
    for (k, v) in props {
        obj.insert(k.clone(), to_json(v));
    }
}

/// Maps a value to JSON: numbers stay numbers, lists become arrays, structs,
/// maps, nodes and relationships become objects, temporal values and internal
/// ids become their display strings.
pub fn to_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int8(v) => Json::from(*v),
        Value::Int16(v) => Json::from(*v),
        Value::Int32(v) => Json::from(*v),
        Value::Int64(v) => Json::from(*v),
        Value::UInt8(v) => Json::from(*v),
        Value::UInt16(v) => Json::from(*v),
        Value::UInt32(v) => Json::from(*v),
        Value::UInt64(v) => Json::from(*v),
        // Through the shortest decimal form, so 0.1f32 stays 0.1 rather than
        // 0.10000000149011612.
        Value::Float(v) => float_json(v.to_string().parse::<f64>().unwrap_or(f64::from(*v))),
        Value::Double(v) => float_json(*v),
        Value::String(s) => Json::String(s.clone()),
        Value::Date(_)
        | Value::Timestamp(_)
        | Value::Interval(_)
        | Value::LocalTime(_)
        | Value::Time(_)
        | Value::LocalDateTime(_)
        | Value::DateTime(_)
        | Value::Duration(_)
        | Value::InternalId(_) => Json::String(value.to_string()),
        Value::List(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Struct(fields) => {
            let mut obj = Map::new();
            props_object(fields, &mut obj);
            Json::Object(obj)
        }
        Value::Map(entries) => {
            let mut obj = Map::new();
            for (k, v) in entries {
                obj.insert(k.to_string(), to_json(v));
            }
            Json::Object(obj)
        }
        Value::Node(n) => {
            let mut obj = Map::new();
            obj.insert("_id".into(), Json::String(n.id.to_string()));
            obj.insert("_label".into(), Json::String(n.label.to_string()));
            props_object(&n.properties, &mut obj);
            Json::Object(obj)
        }
        Value::Rel(r) => {
            let mut obj = Map::new();
            obj.insert("_id".into(), Json::String(r.id.to_string()));
            obj.insert("_label".into(), Json::String(r.label.to_string()));
            obj.insert("_src".into(), Json::String(r.src.to_string()));
            obj.insert("_dst".into(), Json::String(r.dst.to_string()));
            props_object(&r.properties, &mut obj);
            Json::Object(obj)
        }
        Value::Path(p) => {
            let nodes = p
                .nodes()
                .map(|n| to_json(&Value::Node(n.clone())))
                .collect();
            let rels = p.rels().map(|r| to_json(&Value::Rel(r.clone()))).collect();
            let mut obj = Map::new();
            obj.insert("_nodes".into(), Json::Array(nodes));
            obj.insert("_rels".into(), Json::Array(rels));
            Json::Object(obj)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::{InternalId, NodeValue, RelValue, TableId};

    fn names(ns: &[&str]) -> Vec<String> {
        ns.iter().map(|s| s.to_string()).collect()
    }

    fn render(format: Format, ns: &[&str], rows: Vec<Vec<Value>>) -> String {
        let mut out = Vec::new();
        write_rows(
            &mut out,
            format,
            TableStyle::Ascii,
            &names(ns),
            rows.into_iter(),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn s(x: &str) -> Value {
        Value::String(x.to_string())
    }

    #[test]
    fn csv_quotes_per_rfc4180() {
        let out = render(
            Format::Csv,
            &["a", "b,c"],
            vec![
                vec![Value::Int64(1), s("plain")],
                vec![Value::Null, s("")],
                vec![s("has,comma"), s("say \"hi\"")],
                vec![s("line\nbreak"), s("cr\rhere")],
            ],
        );
        assert_eq!(
            out,
            "a,\"b,c\"\n1,plain\n,\"\"\n\"has,comma\",\"say \"\"hi\"\"\"\n\"line\nbreak\",\"cr\rhere\"\n"
        );
    }

    #[test]
    fn csv_short_rows_pad_with_empty_fields() {
        let out = render(Format::Csv, &["a", "b"], vec![vec![Value::Int32(7)]]);
        assert_eq!(out, "a,b\n7,\n");
    }

    #[test]
    fn csv_nested_values_use_display() {
        let out = render(
            Format::Csv,
            &["l"],
            vec![vec![Value::list(vec![Value::Int64(1), s("x")])]],
        );
        assert_eq!(out, "l\n\"[1,'x']\"\n");
    }

    #[test]
    fn json_maps_types_faithfully() {
        let out = render(
            Format::Json,
            &[
                "i", "d", "s", "b", "n", "l", "st", "nan", "inf", "ninf", "f",
            ],
            vec![vec![
                Value::Int64(-3),
                Value::Double(2.5),
                s("x\"y"),
                Value::Bool(true),
                Value::Null,
                Value::list(vec![Value::Int32(1), Value::Null]),
                Value::Struct(vec![("z".into(), Value::Int8(1)), ("a".into(), s("q"))]),
                Value::Double(f64::NAN),
                Value::Double(f64::INFINITY),
                Value::Double(f64::NEG_INFINITY),
                Value::Float(0.1),
            ]],
        );
        assert_eq!(
            out,
            "[{\"i\":-3,\"d\":2.5,\"s\":\"x\\\"y\",\"b\":true,\"n\":null,\"l\":[1,null],\
             \"st\":{\"z\":1,\"a\":\"q\"},\"nan\":\"NaN\",\"inf\":\"Infinity\",\
             \"ninf\":\"-Infinity\",\"f\":0.1}]\n"
        );
    }

    #[test]
    fn json_is_one_array_per_statement() {
        let out = render(
            Format::Json,
            &["a"],
            vec![vec![Value::Int64(1)], vec![Value::Int64(2)]],
        );
        let parsed: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed, serde_json::json!([{"a": 1}, {"a": 2}]));
        assert_eq!(render(Format::Json, &["a"], vec![]), "[]\n");
    }

    #[test]
    fn jsonl_one_object_per_row_and_duplicate_names_kept() {
        let out = render(
            Format::Jsonl,
            &["a", "a", "b"],
            vec![vec![Value::UInt64(u64::MAX), s("x"), Value::Double(1.0)]],
        );
        assert_eq!(
            out,
            "{\"a\":18446744073709551615,\"a_2\":\"x\",\"b\":1.0}\n"
        );
        assert_eq!(render(Format::Jsonl, &["a"], vec![]), "");
    }

    #[test]
    fn unique_names_avoid_collisions_with_existing_suffixes() {
        assert_eq!(
            unique_names(&names(&["a", "a_2", "a"])),
            names(&["a", "a_2", "a_3"])
        );
    }

    #[test]
    fn nodes_and_rels_become_objects() {
        let id = |t, o| InternalId::new(TableId(t), o);
        let node = Value::Node(std::sync::Arc::new(NodeValue {
            id: id(0, 5),
            label: "Person".into(),
            properties: vec![("name".into(), s("Ada")), ("age".into(), Value::Null)].into(),
        }));
        let rel = Value::Rel(std::sync::Arc::new(RelValue {
            id: id(1, 2),
            label: "Knows".into(),
            src: id(0, 5),
            dst: id(0, 6),
            properties: vec![("since".into(), Value::Int32(2020))].into(),
        }));
        assert_eq!(
            to_json(&node),
            serde_json::json!({"_id": "0:5", "_label": "Person", "name": "Ada", "age": null})
        );
        assert_eq!(
            to_json(&rel),
            serde_json::json!({"_id": "1:2", "_label": "Knows", "_src": "0:5", "_dst": "0:6", "since": 2020})
        );
        let map = Value::Map(vec![(s("k"), Value::Int64(1)), (Value::Int64(2), s("v"))]);
        assert_eq!(to_json(&map), serde_json::json!({"k": 1, "2": "v"}));
    }

    #[test]
    fn ascii_table_has_header_and_no_colour() {
        let out = render(
            Format::Table,
            &["name", "n"],
            vec![
                vec![s("Ada"), Value::Int64(3)],
                vec![Value::Null, Value::Int64(10)],
            ],
        );
        assert!(out.is_ascii(), "{out}");
        assert!(!out.contains('\u{1b}'), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[1].contains("name") && lines[1].contains(" n "),
            "{out}"
        );
        assert!(lines.iter().any(|l| l.contains("Ada") && l.contains('3')));
        assert!(lines.iter().any(|l| l.contains("10")));
    }

    #[test]
    fn table_with_no_rows_still_shows_header() {
        let out = render(Format::Table, &["only"], vec![]);
        assert!(out.contains("only"), "{out}");
    }
}

//! Canonical, comparable forms of query results: multisets, sets and lists
//! of rows, with doubles compared after rounding (sums in a different order
//! may differ in the last bits) and lists compared as multisets (the order
//! of `collect` and of pattern comprehensions is unspecified).

use std::collections::BTreeMap;

use kith::Value;

/// The rows of one successful statement.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// How two results are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Same rows in the same order.
    List,
    /// Same rows, each as often.
    Bag,
    /// Same distinct rows.
    Set,
}

fn fmt_double(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if v == 0.0 {
        // -0.0 = 0.0, and the engine groups them together: so do we.
        return "0.0".to_string();
    }
    format!("{:.*e}", digits - 1, v)
}

/// The canonical text of a value; `digits`: significant digits kept of a
/// double.
pub fn canon_value(v: &Value, digits: usize) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int8(x) => x.to_string(),
        Value::Int16(x) => x.to_string(),
        Value::Int32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::UInt8(x) => x.to_string(),
        Value::UInt16(x) => x.to_string(),
        Value::UInt32(x) => x.to_string(),
        Value::UInt64(x) => x.to_string(),
        Value::Float(x) => format!("f:{}", fmt_double(*x as f64, digits.min(6))),
        Value::Double(x) => format!("f:{}", fmt_double(*x, digits)),
        Value::String(s) => format!("{s:?}"),
        Value::List(items) => {
            let mut parts: Vec<String> = items.iter().map(|x| canon_value(x, digits)).collect();
            parts.sort();
            format!("[{}]", parts.join(", "))
        }
        Value::Struct(fields) => {
            let mut parts: Vec<String> = fields
                .iter()
                .map(|(k, x)| format!("{k}: {}", canon_value(x, digits)))
                .collect();
            parts.sort();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Map(entries) => {
            let mut parts: Vec<String> = entries
                .iter()
                .map(|(k, x)| format!("{}={}", canon_value(k, digits), canon_value(x, digits)))
                .collect();
            parts.sort();
            format!("map{{{}}}", parts.join(", "))
        }
        Value::Node(n) => format!(
            "(#{}:{} {})",
            n.id.0,
            n.label,
            canon_props(&n.properties, digits)
        ),
        Value::Rel(r) => format!(
            "[#{}:{} {}->{} {}]",
            r.id.0,
            r.label,
            r.src.0,
            r.dst.0,
            canon_props(&r.properties, digits)
        ),
        Value::Path(p) => {
            let mut s = String::from("<");
            for (i, n) in p.nodes().enumerate() {
                if i > 0 {
                    if let Some(r) = p.rel(i - 1) {
                        s.push_str(&format!(
                            "-[#{}:{} {}->{}]-",
                            r.id.0, r.label, r.src.0, r.dst.0
                        ));
                    }
                }
                s.push_str(&format!("(#{})", n.id.0));
            }
            s.push('>');
            s
        }
        other => format!("{other:?}"),
    }
}

fn canon_props(props: &[(String, Value)], digits: usize) -> String {
    let parts: Vec<String> = props
        .iter()
        .map(|(k, v)| format!("{k}: {}", canon_value(v, digits)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Significant digits of doubles in the exact comparison.
pub const FINE: usize = 12;
/// Significant digits in the tolerant second look.
pub const COARSE: usize = 6;

pub fn canon_row(row: &[Value], digits: usize) -> String {
    let parts: Vec<String> = row.iter().map(|v| canon_value(v, digits)).collect();
    parts.join(" | ")
}

fn canon_rows(rows: &[Vec<Value>], shape: Shape, digits: usize) -> Vec<String> {
    let mut out: Vec<String> = rows.iter().map(|r| canon_row(r, digits)).collect();
    match shape {
        Shape::List => {}
        Shape::Bag => out.sort(),
        Shape::Set => {
            out.sort();
            out.dedup();
        }
    }
    out
}

/// `None` when the results agree under `shape` (doubles within rounding);
/// otherwise a description of the difference.
pub fn compare(expected: &[Vec<Value>], actual: &[Vec<Value>], shape: Shape) -> Option<String> {
    let a = canon_rows(expected, shape, FINE);
    let b = canon_rows(actual, shape, FINE);
    if a == b {
        return None;
    }
    let ac = canon_rows(expected, shape, COARSE);
    let bc = canon_rows(actual, shape, COARSE);
    if ac == bc {
        return None;
    }
    Some(describe(&ac, &bc, shape))
}

fn describe(expected: &[String], actual: &[String], shape: Shape) -> String {
    const SHOW: usize = 8;
    let mut s = format!(
        "{} expected rows, {} actual rows ({:?} comparison)",
        expected.len(),
        actual.len(),
        shape
    );
    if shape == Shape::List {
        let mut a = expected.to_vec();
        let mut b = actual.to_vec();
        a.sort();
        b.sort();
        if a == b {
            s.push_str("; same rows, different order");
            if let Some(i) = (0..expected.len()).find(|i| expected[*i] != actual[*i]) {
                s.push_str(&format!(
                    "; first difference at row {i}: expected {} actual {}",
                    expected[i], actual[i]
                ));
            }
            return s;
        }
    }
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for r in expected {
        *counts.entry(r).or_default() += 1;
    }
    for r in actual {
        *counts.entry(r).or_default() -= 1;
    }
    let missing: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c > 0)
        .take(SHOW)
        .map(|(r, c)| format!("  {r}   (x{c})"))
        .collect();
    let extra: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c < 0)
        .take(SHOW)
        .map(|(r, c)| format!("  {r}   (x{})", -c))
        .collect();
    if !missing.is_empty() {
        s.push_str(&format!("\nmissing from actual:\n{}", missing.join("\n")));
    }
    if !extra.is_empty() {
        s.push_str(&format!("\nunexpected in actual:\n{}", extra.join("\n")));
    }
    s
}

/// The rows as text, for reports (at most `max` rows).
pub fn render(rows: &[Vec<Value>], max: usize) -> String {
    let mut out: Vec<String> = rows.iter().take(max).map(|r| canon_row(r, FINE)).collect();
    if rows.len() > max {
        out.push(format!("... ({} rows in all)", rows.len()));
    }
    if out.is_empty() {
        "(no rows)".to_string()
    } else {
        out.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i64) -> Value {
        Value::Int64(v)
    }

    #[test]
    fn bags_ignore_order_lists_do_not() {
        let a = vec![vec![int(1)], vec![int(2)]];
        let b = vec![vec![int(2)], vec![int(1)]];
        assert!(compare(&a, &b, Shape::Bag).is_none());
        assert!(compare(&a, &b, Shape::List).is_some());
    }

    #[test]
    fn bags_count_duplicates_sets_do_not() {
        let a = vec![vec![int(1)], vec![int(1)]];
        let b = vec![vec![int(1)]];
        assert!(compare(&a, &b, Shape::Bag).is_some());
        assert!(compare(&a, &b, Shape::Set).is_none());
    }

    #[test]
    fn doubles_compare_with_rounding_but_not_more() {
        let a = vec![vec![Value::Double(0.1 + 0.2)]];
        let b = vec![vec![Value::Double(0.3)]];
        assert!(compare(&a, &b, Shape::Bag).is_none());
        let c = vec![vec![Value::Double(0.31)]];
        assert!(compare(&a, &c, Shape::Bag).is_some());
        assert!(compare(
            &[vec![Value::Double(-0.0)]],
            &[vec![Value::Double(0.0)]],
            Shape::Bag
        )
        .is_none());
        assert_eq!(
            canon_value(&Value::Double(-0.0), FINE),
            canon_value(&Value::Double(0.0), FINE)
        );
    }

    #[test]
    fn null_differs_from_values_and_types_matter() {
        assert!(compare(&[vec![Value::Null]], &[vec![int(0)]], Shape::Bag).is_some());
        assert!(compare(&[vec![int(1)]], &[vec![Value::Double(1.0)]], Shape::Bag).is_some());
        assert!(compare(
            &[vec![Value::String("1".into())]],
            &[vec![int(1)]],
            Shape::Bag
        )
        .is_some());
    }

    #[test]
    fn lists_compare_as_multisets() {
        let a = vec![vec![Value::int_list(vec![1, 2, 2])]];
        let b = vec![vec![Value::int_list(vec![2, 1, 2])]];
        let c = vec![vec![Value::int_list(vec![1, 2])]];
        assert!(compare(&a, &b, Shape::List).is_none());
        assert!(compare(&a, &c, Shape::List).is_some());
    }

    #[test]
    fn describe_names_missing_and_extra_rows() {
        let d = compare(
            &[vec![int(1)], vec![int(2)]],
            &[vec![int(1)], vec![int(3)]],
            Shape::Bag,
        )
        .expect("differ");
        assert!(d.contains("missing from actual:\n  2"), "{d}");
        assert!(d.contains("unexpected in actual:\n  3"), "{d}");
    }
}

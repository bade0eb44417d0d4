//! Nodes and rels as values. The binder rewrites `RETURN n`, `collect(r)`,
//! `labels(n)`, `properties(r)`, ... into these internal calls, passing the
//! entity's id and its properties as (name literal, value) pairs, so building
//! the value is all that is left to do here.

use std::sync::Arc;

use kith_common::{Error, InternalId, NodeValue, PathValue, RelValue, Result, Value};

use kith_common::LogicalType as T;

use crate::registry::ScalarFunction;
use crate::signature::{check, Class::AnyT};

/// Internal functions: the binder types their calls itself (these rules
/// say the same for the record).
pub(crate) const FUNCTIONS: &[ScalarFunction] = &[
    // NULL properties belong in the value; a NULL id (an OPTIONAL MATCH
    // without a match) makes the whole value NULL.
    ScalarFunction::null_aware(&["_node"], |_, _| Ok(T::Node), node).internal(),
    ScalarFunction::null_aware(&["_rel"], |_, _| Ok(T::Rel), rel).internal(),
    ScalarFunction::null_aware(&["_properties"], |_, _| Ok(T::Any), properties).internal(),
    ScalarFunction::strict(&["_label"], |_, _| Ok(T::String), label).internal(),
    ScalarFunction::null_aware(&["_labels"], |_, _| Ok(list_of(T::String)), labels).internal(),
    ScalarFunction::null_aware(&["_label_text"], |_, _| Ok(T::String), label_text).internal(),
    ScalarFunction::null_aware(&["_has_labels"], |_, _| Ok(T::Bool), has_labels).internal(),
    ScalarFunction::null_aware(
        &["_live"],
        |_, a| Ok(a.get(1).cloned().unwrap_or(T::Any)),
        live,
    )
    .internal(),
    ScalarFunction::strict(&["_table_is"], |_, _| Ok(T::Bool), table_is).internal(),
    ScalarFunction::strict(&["_path"], |_, _| Ok(T::Path), path).internal(),
    // On values (a node or rel carried as a value, a path); the binder
    // rewrites calls on pattern variables into the internal ones above.
    ScalarFunction::strict(
        &["properties"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            match &a[0] {
                t @ (T::Struct(_) | T::Map(..)) => Ok(t.clone()),
                T::Node | T::Rel | T::Any => Ok(T::Any),
                t => Err(Error::type_error(format!(
                    "properties() expects a MAP, NODE or REL, got {t}"
                ))),
            }
        },
        value_properties,
    ),
    ScalarFunction::strict(
        &["id"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            expect(n, &a[0], "a NODE or REL", |t| {
                matches!(t, T::Node | T::Rel | T::InternalId)
            })?;
            Ok(T::InternalId)
        },
        id,
    ),
    ScalarFunction::strict(
        &["type"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            expect(n, &a[0], "a REL", |t| *t == T::Rel)?;
            Ok(T::String)
        },
        value_type,
    ),
    ScalarFunction::strict(
        &["labels"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            expect(n, &a[0], "a NODE", |t| *t == T::Node)?;
            Ok(list_of(T::String))
        },
        value_labels,
    ),
    ScalarFunction::strict(
        &["nodes"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            expect(n, &a[0], "a PATH", |t| *t == T::Path)?;
            Ok(list_of(T::Node))
        },
        path_nodes,
    ),
    ScalarFunction::strict(
        &["relationships", "rels"],
        |n, a| {
            check(n, a, &[AnyT], 0)?;
            expect(n, &a[0], "a PATH", |t| *t == T::Path)?;
            Ok(list_of(T::Rel))
        },
        path_rels,
    ),
];

fn list_of(t: T) -> T {
    T::List(Box::new(t))
}

/// A type error unless `t` is ANY or passes `ok`.
fn expect(name: &str, t: &T, what: &str, ok: fn(&T) -> bool) -> Result<()> {
    if *t == T::Any || ok(t) {
        return Ok(());
    }
    Err(Error::type_error(format!(
        "{name}() expects {what}, got {t}"
    )))
}

fn internal_id(what: &str, v: &Value) -> Result<Option<InternalId>> {
    match v {
        Value::Null => Ok(None),
        Value::InternalId(id) => Ok(Some(*id)),
        other => Err(Error::internal(format!(
            "{what} expects an internal id, got {}",
            other.logical_type()
        ))),
    }
}

/// `(name, value)` pairs from alternating arguments.
fn property_pairs(args: &[Value]) -> Result<Vec<(String, Value)>> {
    if !args.len().is_multiple_of(2) {
        return Err(Error::internal("property arguments must come in pairs"));
    }
    args.chunks_exact(2)
        .map(|pair| match &pair[0] {
            Value::String(name) => Ok((name.clone(), pair[1].clone())),
            other => Err(Error::internal(format!(
                "property name must be a STRING, got {}",
                other.logical_type()
            ))),
        })
        .collect()
}

/// The label argument of a constructor: the table's name, or the names of
/// the candidate tables indexed by table id.
fn label_arg(id: InternalId, v: Option<&Value>) -> Result<String> {
    match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(names @ Value::List(_)) => {
            match table_name(&[Value::InternalId(id), names.clone()])? {
                Value::String(s) => Ok(s),
                _ => Err(Error::internal("entity without a table name")),
            }
        }
        _ => Err(Error::internal("entity constructor without a label")),
    }
}

/// `_node(id, label, name1, value1, ...)`.
fn node(args: &[Value]) -> Result<Value> {
    let Some(first) = args.first() else {
        return Err(Error::internal("_node() without arguments"));
    };
    let Some(id) = internal_id("_node()", first)? else {
        return Ok(Value::Null);
    };
    Ok(Value::Node(Arc::new(NodeValue {
        id,
        label: label_arg(id, args.get(1))?.into(),
        properties: property_pairs(&args[2.min(args.len())..])?.into(),
    })))
}

/// `_rel(id, src, dst, label, name1, value1, ...)`.
fn rel(args: &[Value]) -> Result<Value> {
    if args.len() < 4 {
        return Err(Error::internal("_rel() needs id, endpoints and label"));
    }
    let (Some(id), Some(src), Some(dst)) = (
        internal_id("_rel()", &args[0])?,
        internal_id("_rel()", &args[1])?,
        internal_id("_rel()", &args[2])?,
    ) else {
        return Ok(Value::Null);
    };
    Ok(Value::Rel(Arc::new(RelValue {
        id,
        label: label_arg(id, args.get(3))?.into(),
        src,
        dst,
        properties: property_pairs(&args[4..])?.into(),
    })))
}

/// `_path(node, step, node, step, ...)`: a path from its entity values,
/// where a step is a rel or the path of a variable-length part between the
/// nodes around it (spliced in, reversed when it was walked from its far
/// end).
fn path(args: &[Value]) -> Result<Value> {
    let mut nodes: Vec<Arc<NodeValue>> = Vec::with_capacity(args.len() / 2 + 1);
    let mut rels = Vec::with_capacity(args.len() / 2);
    for (i, a) in args.iter().enumerate() {
        match (i % 2, a) {
            // After a spliced path, the node is its last one already.
            (0, Value::Node(n)) if i > 0 && matches!(args[i - 1], Value::Path(_)) => {
                if nodes.last().map(|l| l.id) != Some(n.id) {
                    return Err(Error::internal(format!(
                        "_path() element {i}: the path before it ends elsewhere"
                    )));
                }
            }
            (0, Value::Node(n)) => nodes.push(n.clone()),
            (1, Value::Rel(r)) => rels.push(r.clone()),
            (1, Value::Path(p)) => {
                let from = nodes.last().map(|n| n.id);
                let forward = p.first_node().map(|n| n.id) == from;
                let backward = p.last_node().map(|n| n.id) == from;
                if !(forward || backward) {
                    return Err(Error::internal(format!(
                        "_path() element {i}: the path does not touch the node before it"
                    )));
                }
                if forward {
                    nodes.extend(p.nodes().skip(1).cloned());
                    rels.extend(p.rels().cloned());
                } else {
                    nodes.extend(p.nodes().rev().skip(1).cloned());
                    rels.extend(p.rels().rev().cloned());
                }
            }
            (_, Value::Null) => return Ok(Value::Null),
            (_, other) => {
                return Err(Error::internal(format!(
                    "_path() element {i} is a {}",
                    other.logical_type()
                )))
            }
        }
    }
    let path = PathValue::new(nodes, rels)
        .ok_or_else(|| Error::internal("_path(): not one node more than rels"))?;
    Ok(Value::Path(Arc::new(path)))
}

/// `type(r)` of a rel value.
fn value_type(args: &[Value]) -> Result<Value> {
    match args {
        [Value::Rel(r)] => Ok(Value::String(r.label.to_string())),
        [other] => Err(Error::type_error(format!(
            "type() expects a REL, got {}",
            other.logical_type()
        ))),
        _ => Err(Error::runtime("type() takes 1 argument")),
    }
}

/// `labels(n)` of a node value (several labels are joined by ':').
fn value_labels(args: &[Value]) -> Result<Value> {
    match args {
        [Value::Node(n)] => Ok(Value::list(
            n.label
                .split(':')
                .filter(|l| !l.is_empty())
                .map(|l| Value::String(l.to_string()))
                .collect(),
        )),
        [other] => Err(Error::type_error(format!(
            "labels() expects a NODE, got {}",
            other.logical_type()
        ))),
        _ => Err(Error::runtime("labels() takes 1 argument")),
    }
}

/// `nodes(p)` of a path value.
fn path_nodes(args: &[Value]) -> Result<Value> {
    match args {
        [Value::Path(p)] => Ok(Value::list(
            p.nodes().map(|n| Value::Node(n.clone())).collect(),
        )),
        [other] => Err(Error::type_error(format!(
            "nodes() expects a PATH, got {}",
            other.logical_type()
        ))),
        _ => Err(Error::runtime("nodes() takes 1 argument")),
    }
}

/// `relationships(p)` of a path value.
fn path_rels(args: &[Value]) -> Result<Value> {
    match args {
        [Value::Path(p)] => Ok(Value::list(
            p.rels().map(|r| Value::Rel(r.clone())).collect(),
        )),
        [other] => Err(Error::type_error(format!(
            "relationships() expects a PATH, got {}",
            other.logical_type()
        ))),
        _ => Err(Error::runtime("relationships() takes 1 argument")),
    }
}

/// `_properties(id, name1, value1, ...)`: the properties as a struct.
fn properties(args: &[Value]) -> Result<Value> {
    let Some(first) = args.first() else {
        return Err(Error::internal("_properties() without arguments"));
    };
    if internal_id("_properties()", first)?.is_none() {
        return Ok(Value::Null);
    }
    Ok(Value::Struct(property_pairs(&args[1..])?))
}

/// `properties(x)` of a value: a map as it is, the properties of a node or
/// rel value (pattern variables are rewritten to `_properties` instead).
fn value_properties(args: &[Value]) -> Result<Value> {
    match args {
        [m @ (Value::Struct(_) | Value::Map(_))] => Ok(m.clone()),
        [Value::Node(n)] => Ok(Value::Struct(n.properties.to_vec())),
        [Value::Rel(r)] => Ok(Value::Struct(r.properties.to_vec())),
        [other] => Err(Error::type_error(format!(
            "properties() expects a MAP, NODE or REL, got {}",
            other.logical_type()
        ))),
        _ => Err(Error::runtime("properties() takes 1 argument")),
    }
}

/// The table name of an id: `names` is indexed by table id.
fn table_name(args: &[Value]) -> Result<Value> {
    let [id, Value::List(names)] = args else {
        return Err(Error::internal(
            "_label() expects an id and the table names",
        ));
    };
    let Some(id) = internal_id("_label()", id)? else {
        return Ok(Value::Null);
    };
    match names.get(id.table().0 as usize) {
        Some(v @ Value::String(_)) => Ok(v.clone()),
        _ => Err(Error::internal(format!(
            "no table name for id {id} in _label()"
        ))),
    }
}

fn label(args: &[Value]) -> Result<Value> {
    table_name(args)
}

/// `_labels(id, names [, hidden])`: a node's labels: the hidden label list
/// when the node has one (several labels, SET/REMOVE of labels), else its
/// table's label (none for the table of unlabelled nodes).
/// `_live(deleted, value)`: `value`, read from a node or rel the
/// statement's writes left; openCypher's EntityNotFound when they deleted it
/// (its id and type stay readable, its properties and labels do not).
fn live(args: &[Value]) -> Result<Value> {
    match args {
        [Value::Bool(true), _] => Err(Error::runtime(
            "EntityNotFound: a node or rel deleted by this statement has no properties or labels to read",
        )),
        [_, value] => Ok(value.clone()),
        _ => Err(Error::internal("_live takes a deleted flag and a value")),
    }
}

fn labels(args: &[Value]) -> Result<Value> {
    if args.first().is_none_or(Value::is_null) {
        return Ok(Value::Null);
    }
    if let Some(hidden @ Value::List(_)) = args.get(2) {
        return Ok(hidden.clone());
    }
    Ok(match table_name(&args[..2.min(args.len())])? {
        Value::Null => Value::Null,
        // The table of unlabelled nodes.
        Value::String(s) if s.is_empty() => Value::list(Vec::new()),
        v => Value::list(vec![v]),
    })
}

/// `_label_text(id, names, hidden)`: the labels joined by ':' (the label
/// of a node value).
fn label_text(args: &[Value]) -> Result<Value> {
    Ok(match labels(args)? {
        Value::List(l) => Value::String(
            l.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(":"),
        ),
        other => other,
    })
}

/// `_has_labels(id, names, hidden, l1, l2, ...)`: whether the node (or the
/// rel, by its type) carries every one of the labels; NULL for a NULL id.
fn has_labels(args: &[Value]) -> Result<Value> {
    if args.len() < 3 {
        return Err(Error::internal("_has_labels() needs id, names and hidden"));
    }
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let wants = &args[3..];
    // Per row: test the hidden list or the table's one label in place
    // (no label list is built).
    if let Value::List(have) = &args[2] {
        return Ok(Value::Bool(wants.iter().all(|w| have.contains(w))));
    }
    Ok(match table_name(&args[..2])? {
        Value::Null => Value::Null,
        // The table of unlabelled nodes.
        Value::String(s) if s.is_empty() => Value::Bool(wants.is_empty()),
        label => Value::Bool(wants.iter().all(|w| *w == label)),
    })
}

/// `_table_is(id, table)`: whether the id belongs to table number `table`.
fn table_is(args: &[Value]) -> Result<Value> {
    match args {
        [Value::InternalId(id), t] => Ok(Value::Bool(t.as_i64() == Some(i64::from(id.table().0)))),
        _ => Err(Error::internal(
            "_table_is() expects an id and a table number",
        )),
    }
}

fn id(args: &[Value]) -> Result<Value> {
    match args {
        [v @ Value::InternalId(_)] => Ok(v.clone()),
        // Entities carried as values (collected, unwound, coalesced).
        [Value::Node(n)] => Ok(Value::InternalId(n.id)),
        [Value::Rel(r)] => Ok(Value::InternalId(r.id)),
        _ => Err(Error::runtime("id() expects a node or rel")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::TableId;

    fn s(x: &str) -> Value {
        Value::String(x.to_string())
    }

    #[test]
    fn builds_nodes_and_rels_and_null_ids_give_null() {
        let id = Value::InternalId(InternalId::new(TableId(1), 7));
        let n = node(&[id.clone(), s("P"), s("name"), s("a"), s("age"), Value::Null]).unwrap();
        let Value::Node(n) = n else {
            panic!("not a node")
        };
        assert_eq!(&*n.label, "P");
        assert_eq!(
            n.properties.to_vec(),
            vec![("name".into(), s("a")), ("age".into(), Value::Null)]
        );
        assert_eq!(node(&[Value::Null, s("P")]).unwrap(), Value::Null);
        let r = rel(&[id.clone(), id.clone(), id.clone(), s("R")]).unwrap();
        assert!(matches!(r, Value::Rel(_)));
        assert_eq!(
            rel(&[id.clone(), Value::Null, id.clone(), s("R")]).unwrap(),
            Value::Null
        );
        assert!(node(&[id.clone(), s("P"), s("dangling")]).is_err());
    }

    #[test]
    fn labels_come_from_the_table_of_the_id() {
        let names = Value::list(vec![Value::Null, s("A"), s("B")]);
        let id = |t| Value::InternalId(InternalId::new(TableId(t), 0));
        assert_eq!(label(&[id(2), names.clone()]).unwrap(), s("B"));
        assert_eq!(
            labels(&[id(1), names.clone()]).unwrap(),
            Value::list(vec![s("A")])
        );
        assert!(label(&[id(0), names]).is_err());
    }
}
